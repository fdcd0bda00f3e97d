//! The computations, on matrices already read from device memory: plain
//! code over coordinate lists, in double precision.

use std::collections::{BTreeMap, BTreeSet};

use super::values::Complex;
use crate::deadline;

/// Entries of A between deadline checks in loops whose work per entry is
/// bounded by the operands' size (a row of B, a column of C).
const ENTRIES_PER_CHECK: usize = 256;

/// `cusparseOperation_t`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    /// `CUSPARSE_OPERATION_NON_TRANSPOSE`.
    None,
    /// `CUSPARSE_OPERATION_TRANSPOSE`.
    Transpose,
    /// `CUSPARSE_OPERATION_CONJUGATE_TRANSPOSE`.
    ConjugateTranspose,
}

impl Op {
    /// The operation with id `id`.
    pub fn from_cusparse(id: u8) -> Option<Self> {
        match id {
            0 => Some(Self::None),
            1 => Some(Self::Transpose),
            2 => Some(Self::ConjugateTranspose),
            _ => None,
        }
    }
}

/// A sparse matrix as its stored entries (zero-based, in storage order;
/// duplicates add up, as they do in every operation of cuSPARSE).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Triplets {
    /// Rows.
    pub rows: usize,
    /// Columns.
    pub cols: usize,
    /// `(row, column, value)`.
    pub entries: Vec<(usize, usize, Complex)>,
}

impl Triplets {
    /// `op(self)`.
    pub fn apply(mut self, op: Op) -> Self {
        match op {
            Op::None => self,
            Op::Transpose | Op::ConjugateTranspose => {
                for e in &mut self.entries {
                    *e = (e.1, e.0, if op == Op::Transpose { e.2 } else { e.2.conj() });
                }
                std::mem::swap(&mut self.rows, &mut self.cols);
                self
            }
        }
    }
}

/// A dense matrix, column-major with leading dimension `rows`.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Dense {
    /// Rows.
    pub rows: usize,
    /// Columns.
    pub cols: usize,
    /// `rows * cols` values, column after column.
    pub data: Vec<Complex>,
}

impl Dense {
    /// A `rows` x `cols` matrix of zeros.
    pub fn zeros(rows: usize, cols: usize) -> Self {
        Self {
            rows,
            cols,
            data: vec![Complex::ZERO; rows * cols],
        }
    }

    /// Entry `(i, j)`.
    pub fn at(&self, i: usize, j: usize) -> Complex {
        self.data[j * self.rows + i]
    }

    /// Entry `(i, j)`, to change.
    pub fn at_mut(&mut self, i: usize, j: usize) -> &mut Complex {
        &mut self.data[j * self.rows + i]
    }

    /// `op(self)`.
    pub fn apply(self, op: Op) -> Self {
        if op == Op::None {
            return self;
        }
        let mut t = Self::zeros(self.cols, self.rows);
        for j in 0..self.cols {
            for i in 0..self.rows {
                let v = self.at(i, j);
                *t.at_mut(j, i) = if op == Op::Transpose { v } else { v.conj() };
            }
        }
        t
    }
}

/// `y = alpha a x + beta y`; `y` is not read when `beta` is zero (it may
/// hold NaN), as in cuSPARSE.
pub fn spmv(a: &Triplets, x: &[Complex], alpha: Complex, beta: Complex, y: &mut [Complex]) {
    let mut ax = vec![Complex::ZERO; a.rows];
    for &(i, j, v) in &a.entries {
        ax[i] += v * x[j];
    }
    for (yi, axi) in y.iter_mut().zip(ax) {
        let old = if beta.is_zero() {
            Complex::ZERO
        } else {
            beta * *yi
        };
        *yi = alpha * axi + old;
    }
}

/// `c = alpha a b + beta c`; `c` is not read when `beta` is zero.
pub fn spmm(a: &Triplets, b: &Dense, alpha: Complex, beta: Complex, c: &mut Dense) {
    let mut ab = Dense::zeros(a.rows, b.cols);
    for (n, &(i, k, v)) in a.entries.iter().enumerate() {
        if n % ENTRIES_PER_CHECK == 0 && deadline::passed() {
            return;
        }
        for j in 0..b.cols {
            *ab.at_mut(i, j) += v * b.at(k, j);
        }
    }
    for (cij, abij) in c.data.iter_mut().zip(ab.data) {
        let old = if beta.is_zero() {
            Complex::ZERO
        } else {
            beta * *cij
        };
        *cij = alpha * abij + old;
    }
}

/// A CSR matrix, zero-based, columns sorted within each row.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Csr {
    /// `rows + 1` offsets.
    pub offsets: Vec<i64>,
    /// Column of each entry.
    pub columns: Vec<i64>,
    /// Value of each entry.
    pub values: Vec<Complex>,
}

/// The entries of `m` by row: (column, value).
fn rows_of(m: &Triplets) -> Vec<Vec<(usize, Complex)>> {
    let mut rows = vec![Vec::new(); m.rows];
    for &(i, j, v) in &m.entries {
        rows[i].push((j, v));
    }
    rows
}

/// The number of entries of `a b`'s structural pattern, counted without
/// forming the product: two vectors of n entries have a product of n²,
/// which a client could name to exhaust the server's memory. Stops early
/// (with a count too small) at the deadline.
pub fn spgemm_nnz(a: &Triplets, b: &Triplets) -> usize {
    let b_rows = rows_of(b);
    let mut nnz = 0;
    let mut columns = BTreeSet::new();
    for row in rows_of(a) {
        columns.clear();
        for (k, _) in row {
            if deadline::passed() {
                return nnz;
            }
            columns.extend(b_rows[k].iter().map(|&(j, _)| j));
        }
        nnz += columns.len();
    }
    nnz
}

/// `alpha a b` in CSR, or None if it has more than `max_nnz` entries (the
/// room the caller has for it). Its pattern is structural: a product of
/// stored entries is stored even when it sums to zero, as in cuSPARSE's
/// SpGEMM.
pub fn spgemm(a: &Triplets, b: &Triplets, alpha: Complex, max_nnz: usize) -> Option<Csr> {
    let b_rows = rows_of(b);
    let mut c = Csr {
        offsets: vec![0],
        ..Csr::default()
    };
    for row in rows_of(a) {
        let mut acc: BTreeMap<usize, Complex> = BTreeMap::new();
        for (k, av) in row {
            if deadline::passed() {
                return Some(c);
            }
            for &(j, bv) in &b_rows[k] {
                *acc.entry(j).or_default() += av * bv;
            }
        }
        if c.columns.len() + acc.len() > max_nnz {
            return None;
        }
        for (j, v) in acc {
            c.columns.push(j as i64);
            c.values.push(alpha * v);
        }
        c.offsets.push(c.columns.len() as i64);
    }
    Some(c)
}

/// Solves `a y = alpha x` with the `lower` or upper triangle of the square
/// matrix `a` (entries of the other triangle are ignored); `unit`: the
/// diagonal is taken as ones and its stored entries are ignored.
pub fn triangular_solve(
    a: &Triplets,
    lower: bool,
    unit: bool,
    alpha: Complex,
    x: &[Complex],
) -> Vec<Complex> {
    let n = a.rows;
    let mut diagonal = vec![if unit { Complex::ONE } else { Complex::ZERO }; n];
    let mut off_diagonal: Vec<Vec<(usize, Complex)>> = vec![Vec::new(); n];
    for &(i, j, v) in &a.entries {
        if i == j {
            if !unit {
                diagonal[i] += v;
            }
        } else if (j < i) == lower {
            off_diagonal[i].push((j, v));
        }
    }
    let mut y = vec![Complex::ZERO; n];
    let order: Box<dyn Iterator<Item = usize>> = if lower {
        Box::new(0..n)
    } else {
        Box::new((0..n).rev())
    };
    for i in order {
        let mut sum = alpha * x[i];
        for &(j, v) in &off_diagonal[i] {
            sum = sum - v * y[j];
        }
        y[i] = sum / diagonal[i];
    }
    y
}

/// Offsets of `dim + 1` entries from zero-based major indices (row indices
/// for CSR) that lie in `0..dim`.
pub fn compress(major: &[usize], dim: usize) -> Vec<i64> {
    let mut offsets = vec![0i64; dim + 1];
    for &m in major {
        offsets[m + 1] += 1;
    }
    for i in 0..dim {
        offsets[i + 1] += offsets[i];
    }
    offsets
}

/// The entries of `a`, grouped by column in a stable order (by row within a
/// column when `a` is in row order): the CSC of a CSR matrix.
pub fn by_column(a: &Triplets) -> (Vec<i64>, Vec<i64>, Vec<Complex>) {
    let columns: Vec<usize> = a.entries.iter().map(|e| e.1).collect();
    let offsets = compress(&columns, a.cols);
    let mut next: Vec<usize> = offsets[..a.cols].iter().map(|&o| o as usize).collect();
    let mut rows = vec![0i64; a.entries.len()];
    let mut values = vec![Complex::ZERO; a.entries.len()];
    for &(i, j, v) in &a.entries {
        rows[next[j]] = i as i64;
        values[next[j]] = v;
        next[j] += 1;
    }
    (offsets, rows, values)
}

/// The dense form of `a`.
pub fn to_dense(a: &Triplets) -> Dense {
    let mut d = Dense::zeros(a.rows, a.cols);
    for &(i, j, v) in &a.entries {
        *d.at_mut(i, j) += v;
    }
    d
}

/// The nonzero entries of `d`, row after row (`by_rows`) or column after
/// column.
pub fn nonzeros(d: &Dense, by_rows: bool) -> Triplets {
    let mut entries = Vec::new();
    let (outer, inner) = if by_rows {
        (d.rows, d.cols)
    } else {
        (d.cols, d.rows)
    };
    for o in 0..outer {
        for n in 0..inner {
            let (i, j) = if by_rows { (o, n) } else { (n, o) };
            let v = d.at(i, j);
            if !v.is_zero() {
                entries.push((i, j, v));
            }
        }
    }
    Triplets {
        rows: d.rows,
        cols: d.cols,
        entries,
    }
}
