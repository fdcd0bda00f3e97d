//! The legacy API that programs still call: index sorting with its
//! permutation, identity permutations, Gather and Scatter (generic, but
//! what CuPy applies the permutation with), and the zero fill-in
//! incomplete factorizations ILU(0) (`csrilu02`) and IC(0) (`csric02`).

use std::collections::HashMap;

use rcud_proto::math::sparse::{Boost, DnVec, SpVec};

use super::values::{
    read_indices, read_values, write_indices, write_values, Complex, IndexType, ValueType,
};
use super::{dim, invalid, row_ranges, scalar, Failure};
use crate::{deadline, DeviceMemory};

/// What an info object (`csrilu02Info_t`, `csric02Info_t`) keeps between
/// calls: the kind, and the zero pivot its last analysis or factorization
/// found (zero-based).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Info {
    /// IC(0) rather than ILU(0).
    pub ic: bool,
    /// The first structural or numerical zero on the diagonal, if any.
    pub pivot: Option<usize>,
    /// The index base of the matrix it was found in.
    pub base: u8,
}

impl Info {
    /// The zero pivot as `cusparseX*02_zeroPivot` reports it: in the
    /// matrix's base, -1 for none.
    pub fn position(&self) -> i64 {
        self.pivot.map_or(-1, |p| p as i64 + i64::from(self.base))
    }
}

/// The info objects of one client context.
#[derive(Default)]
pub struct Infos {
    live: HashMap<u64, Info>,
    next: u64,
}

impl Infos {
    /// A new info object's id.
    pub fn create(&mut self, ic: bool) -> u64 {
        self.next += 1;
        self.live.insert(
            self.next,
            Info {
                ic,
                pivot: None,
                base: 0,
            },
        );
        self.next
    }

    /// Forgets `id`; INVALID_VALUE when unknown.
    pub fn destroy(&mut self, id: u64) -> Result<(), Failure> {
        self.live.remove(&id).map(|_| ()).ok_or_else(invalid)
    }

    /// The info `id` of kind `ic`, to update.
    pub fn get(&mut self, id: u64, ic: bool) -> Result<&mut Info, Failure> {
        self.live
            .get_mut(&id)
            .filter(|info| info.ic == ic)
            .ok_or_else(invalid)
    }
}

/// A non-negative `int` count.
fn count(v: i32) -> Result<usize, Failure> {
    dim(i64::from(v))
}

/// `p[0..n] = 0..n`.
pub fn identity_permutation(memory: &mut dyn DeviceMemory, n: i32, p: u64) -> Result<(), Failure> {
    let n = count(n)?;
    let identity: Vec<i64> = (0..n as i64).collect();
    write_indices(memory, p, &identity, IndexType::I32)
}

/// Applies `order` (new position -> old position) to the permutation at
/// `p` (none when 0): `p[k] = p_old[order[k]]`.
fn permute_p(memory: &mut dyn DeviceMemory, p: u64, order: &[usize]) -> Result<(), Failure> {
    if p == 0 {
        return Ok(());
    }
    let old = read_indices(memory, p, order.len() as i64, IndexType::I32)?;
    let new: Vec<i64> = order.iter().map(|&k| old[k]).collect();
    write_indices(memory, p, &new, IndexType::I32)
}

/// Sorts COO indices in place, stably, by (row, column) or (column, row).
/// cuSPARSE assumes no base and sorts signed values, so indices are not
/// checked against `m` and `n`.
#[allow(clippy::too_many_arguments)]
pub fn coo_sort(
    memory: &mut dyn DeviceMemory,
    by_row: bool,
    m: i32,
    n: i32,
    nnz: i32,
    rows: u64,
    cols: u64,
    p: u64,
) -> Result<(), Failure> {
    count(m)?;
    count(n)?;
    let nnz = count(nnz)?;
    let r = read_indices(memory, rows, nnz as i64, IndexType::I32)?;
    let c = read_indices(memory, cols, nnz as i64, IndexType::I32)?;
    let order = coo_order(&r, &c, by_row);
    let sorted_r: Vec<i64> = order.iter().map(|&k| r[k]).collect();
    let sorted_c: Vec<i64> = order.iter().map(|&k| c[k]).collect();
    write_indices(memory, rows, &sorted_r, IndexType::I32)?;
    write_indices(memory, cols, &sorted_c, IndexType::I32)?;
    permute_p(memory, p, &order)
}

/// The stable order (new position -> old position) of COO entries by
/// (row, column), or by (column, row).
pub fn coo_order(rows: &[i64], cols: &[i64], by_row: bool) -> Vec<usize> {
    let mut order: Vec<usize> = (0..rows.len()).collect();
    if by_row {
        order.sort_by_key(|&k| (rows[k], cols[k]));
    } else {
        order.sort_by_key(|&k| (cols[k], rows[k]));
    }
    order
}

/// Sorts the minor indices of a CSR (or CSC) matrix within each row (or
/// column), stably; the offsets must be valid for `nnz` entries.
#[allow(clippy::too_many_arguments)]
pub fn compressed_sort(
    memory: &mut dyn DeviceMemory,
    major: i32,
    minor: i32,
    nnz: i32,
    base: u8,
    offsets: u64,
    indices: u64,
    p: u64,
) -> Result<(), Failure> {
    let major = count(major)?;
    count(minor)?;
    let nnz_count = count(nnz)?;
    if base > 1 {
        return Err(invalid());
    }
    let offsets = read_indices(memory, offsets, major as i64 + 1, IndexType::I32)?;
    let ranges = row_ranges(&offsets, i64::from(base), i64::from(nnz))?;
    let idx = read_indices(memory, indices, nnz_count as i64, IndexType::I32)?;
    let mut order: Vec<usize> = (0..nnz_count).collect();
    for range in ranges {
        order[range].sort_by_key(|&k| idx[k]);
    }
    let sorted: Vec<i64> = order.iter().map(|&k| idx[k]).collect();
    write_indices(memory, indices, &sorted, IndexType::I32)?;
    permute_p(memory, p, &order)
}

/// The zero-based positions a sparse vector's indices name in a dense
/// vector of `size` elements, checked.
fn positions(memory: &dyn DeviceMemory, x: &SpVec, size: i64) -> Result<Vec<usize>, Failure> {
    if x.size != size || x.nnz < 0 || x.nnz > x.size || x.base > 1 {
        return Err(invalid());
    }
    let ty = IndexType::from_cusparse(x.index_type)?;
    let base = i64::from(x.base);
    read_indices(memory, x.indices, x.nnz, ty)?
        .into_iter()
        .map(|i| {
            i.checked_sub(base)
                .filter(|&i| (0..size).contains(&i))
                .map(|i| i as usize)
                .ok_or_else(invalid)
        })
        .collect()
}

/// `x.values[k] = y[x.indices[k]]`.
pub fn gather(memory: &mut dyn DeviceMemory, y: &DnVec, x: &SpVec) -> Result<(), Failure> {
    let ty = ValueType::from_cuda(x.value_type)?;
    if ValueType::from_cuda(y.value_type)? != ty {
        return Err(invalid());
    }
    let at = positions(memory, x, y.size)?;
    let dense = read_values(memory, y.values, y.size, ty)?;
    let values: Vec<Complex> = at.iter().map(|&i| dense[i]).collect();
    write_values(memory, x.values, &values, ty)
}

/// `y[x.indices[k]] = x.values[k]` (the last one wins on a repeated index).
pub fn scatter(memory: &mut dyn DeviceMemory, x: &SpVec, y: &DnVec) -> Result<(), Failure> {
    let ty = ValueType::from_cuda(x.value_type)?;
    if ValueType::from_cuda(y.value_type)? != ty {
        return Err(invalid());
    }
    let at = positions(memory, x, y.size)?;
    let values = read_values(memory, x.values, x.nnz, ty)?;
    let mut dense = read_values(memory, y.values, y.size, ty)?;
    for (&i, &v) in at.iter().zip(&values) {
        dense[i] = v;
    }
    write_values(memory, y.values, &dense, ty)
}

/// A square CSR matrix's rows: (column, entry) sorted by column, with
/// the entry of the diagonal, if stored.
struct Rows {
    rows: Vec<Vec<(usize, usize)>>,
    diagonal: Vec<Option<usize>>,
}

impl Rows {
    /// Reads the pattern; columns must lie in `0..m` and not repeat
    /// within a row.
    fn read(
        memory: &dyn DeviceMemory,
        m: usize,
        nnz: i32,
        base: u8,
        offsets: u64,
        columns: u64,
    ) -> Result<Self, Failure> {
        let base = i64::from(base);
        let offsets = read_indices(memory, offsets, m as i64 + 1, IndexType::I32)?;
        let ranges = row_ranges(&offsets, base, i64::from(nnz))?;
        let cols = read_indices(memory, columns, i64::from(nnz), IndexType::I32)?;
        let mut rows = Vec::with_capacity(m);
        let mut diagonal = Vec::with_capacity(m);
        for (i, range) in ranges.into_iter().enumerate() {
            let mut row = Vec::with_capacity(range.len());
            for k in range {
                let j = cols[k]
                    .checked_sub(base)
                    .and_then(|j| usize::try_from(j).ok())
                    .filter(|&j| j < m)
                    .ok_or_else(invalid)?;
                row.push((j, k));
            }
            row.sort_unstable();
            if row.windows(2).any(|w| w[0].0 == w[1].0) {
                return Err(invalid());
            }
            diagonal.push(row.iter().find(|e| e.0 == i).map(|e| e.1));
            rows.push(row);
        }
        Ok(Self { rows, diagonal })
    }

    /// The first row without a stored diagonal entry.
    fn structural_zero(&self) -> Option<usize> {
        self.diagonal.iter().position(Option::is_none)
    }
}

/// A pivot boost, read: threshold and replacement.
struct Boosted {
    tol: f64,
    value: Complex,
}

impl Boosted {
    fn read(memory: &dyn DeviceMemory, b: &Boost, ty: ValueType) -> Result<Self, Failure> {
        Ok(Self {
            tol: scalar(memory, b.tol, ValueType::F64)?.re,
            value: scalar(memory, b.value, ty)?,
        })
    }
}

fn abs(v: Complex) -> f64 {
    v.re.hypot(v.im)
}

/// An ILU(0) or IC(0) call: with `analysis`, only the structural zero is
/// looked for; else the factors overwrite `values` in place. Answers the
/// first zero pivot (zero-based).
#[allow(clippy::too_many_arguments)]
pub fn factor0(
    memory: &mut dyn DeviceMemory,
    ic: bool,
    analysis: bool,
    m: i32,
    nnz: i32,
    base: u8,
    values: u64,
    offsets: u64,
    columns: u64,
    value_type: u8,
    boost: Option<&Boost>,
) -> Result<Option<usize>, Failure> {
    let m = count(m)?;
    count(nnz)?;
    if base > 1 {
        return Err(invalid());
    }
    let ty = ValueType::from_cuda(value_type)?;
    let pattern = Rows::read(memory, m, nnz, base, offsets, columns)?;
    if analysis {
        return Ok(pattern.structural_zero());
    }
    let mut v = read_values(memory, values, i64::from(nnz), ty)?;
    let boost = match boost {
        Some(b) if !ic => Some(Boosted::read(memory, b, ty)?),
        _ => None,
    };
    let pivot = if ic {
        ic0(&pattern, &mut v)
    } else {
        ilu0(&pattern, &mut v, boost.as_ref())
    };
    write_values(memory, values, &v, ty)?;
    Ok(pivot)
}

/// ILU(0) in place: `L` unit lower (its diagonal not stored), `U` upper,
/// on A's pattern. Row by row: each entry left of the diagonal is divided
/// by the pivot of its column, then its row's multiple is subtracted from
/// the entries of this row that row `k`'s pattern shares.
fn ilu0(a: &Rows, v: &mut [Complex], boost: Option<&Boosted>) -> Option<usize> {
    let mut pivot = None;
    let mut note = |i: usize| {
        if pivot.is_none() {
            pivot = Some(i);
        }
    };
    // Position of each column's entry in the current row (usize::MAX: none).
    let mut at = vec![usize::MAX; a.rows.len()];
    for (i, row) in a.rows.iter().enumerate() {
        if deadline::passed() {
            return None;
        }
        for &(j, k) in row {
            at[j] = k;
        }
        for &(kcol, kpos) in row.iter().take_while(|e| e.0 < i) {
            let d = a.diagonal[kcol].map_or(Complex::ZERO, |p| v[p]);
            v[kpos] = v[kpos] / d;
            let factor = v[kpos];
            for &(j, p) in a.rows[kcol].iter().filter(|e| e.0 > kcol) {
                if at[j] != usize::MAX {
                    v[at[j]] = v[at[j]] - factor * v[p];
                }
            }
        }
        match a.diagonal[i] {
            None => note(i),
            Some(p) => {
                if let Some(b) = boost {
                    if abs(v[p]) <= b.tol {
                        v[p] = b.value;
                    }
                }
                if v[p].is_zero() {
                    note(i);
                }
            }
        }
        for &(j, _) in row {
            at[j] = usize::MAX;
        }
    }
    pivot
}

/// IC(0) in place: `L` lower with A = L L^H on the lower triangle's
/// pattern; entries right of the diagonal are neither read nor written.
fn ic0(a: &Rows, v: &mut [Complex]) -> Option<usize> {
    let mut pivot = None;
    let mut at = vec![usize::MAX; a.rows.len()];
    for (i, row) in a.rows.iter().enumerate() {
        if deadline::passed() {
            return None;
        }
        let lower: Vec<(usize, usize)> = row.iter().copied().filter(|e| e.0 <= i).collect();
        for &(j, k) in &lower {
            at[j] = k;
        }
        for &(kcol, kpos) in lower.iter().take_while(|e| e.0 < i) {
            // l_ik = (a_ik - sum_{j<k} l_ij conj(l_kj)) / l_kk
            let mut s = v[kpos];
            for &(j, p) in a.rows[kcol].iter().take_while(|e| e.0 < kcol) {
                if at[j] != usize::MAX {
                    s = s - v[at[j]] * v[p].conj();
                }
            }
            let d = a.diagonal[kcol].map_or(Complex::ZERO, |p| v[p]);
            v[kpos] = s / d;
        }
        match a.diagonal[i] {
            None => {
                pivot.get_or_insert(i);
            }
            Some(p) => {
                let mut s = v[p].re;
                for &(_, q) in lower.iter().take_while(|e| e.0 < i) {
                    s -= abs(v[q]).powi(2);
                }
                if s == 0.0 {
                    pivot.get_or_insert(i);
                }
                v[p] = Complex::new(s.sqrt(), 0.0);
            }
        }
        for &(j, _) in &lower {
            at[j] = usize::MAX;
        }
    }
    pivot
}
