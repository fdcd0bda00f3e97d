//! Sparse LU with threshold partial pivoting (`csrluFactorHost`) and the
//! refactorization on a fixed pattern of cusolverRf.
//!
//! The factorization is left-looking (Gilbert–Peierls): column j of L and U
//! comes from a sparse triangular solve with the columns of L already made,
//! whose nonzero pattern is the set of rows reachable from A(:, j) in L's
//! graph, visited depth first so that the solve runs in topological order.
//! The cost is proportional to the flops, and L and U hold only their fill.
//!
//! The refactorization keeps the pattern of L + U from a previous LU and
//! recomputes its values row by row, without pivoting.

use num_complex::Complex64 as C;

use super::{Csr, Pattern, SpError};

const ZERO: C = C::new(0.0, 0.0);

/// A CSR matrix with zero-based, sorted column indices (one triangular
/// factor, or the bundle L - I + U).
#[derive(Debug, Clone, PartialEq)]
pub struct CsrFactor {
    /// Row offsets (n + 1).
    pub rowptr: Vec<usize>,
    /// Column indices.
    pub colind: Vec<usize>,
    /// Values.
    pub values: Vec<C>,
}

/// P A Qᵀ = L U of a square sparse matrix; Q is the identity (the
/// application orders the columns, as NVIDIA's sample does with symrcm or
/// symamd before factoring).
#[derive(Debug, Clone)]
pub struct SparseLu {
    n: usize,
    /// Row `perm[k]` of A is row k of P A.
    perm: Vec<usize>,
    /// L's strictly lower part by columns, rows in pivot order.
    l_ptr: Vec<usize>,
    l_idx: Vec<usize>,
    l_val: Vec<C>,
    /// U's strictly upper part by columns.
    u_ptr: Vec<usize>,
    u_idx: Vec<usize>,
    u_val: Vec<C>,
    /// U's diagonal: the pivots.
    diag: Vec<C>,
}

/// A's columns: for each column, (row, value) pairs.
fn columns(a: &Csr) -> Vec<Vec<(usize, C)>> {
    let p = &a.pattern;
    let mut cols = vec![Vec::new(); p.n];
    for i in 0..p.m {
        for k in p.rowptr[i]..p.rowptr[i + 1] {
            cols[p.colind[k]].push((i, a.values[k]));
        }
    }
    cols
}

impl SparseLu {
    /// Factors the square `a`. In each column the pivot is the diagonal
    /// entry when its magnitude is at least `threshold` times the largest
    /// candidate's (`threshold` 1: classic partial pivoting, 0: the
    /// diagonal whenever it is a candidate), else the largest. A column
    /// with no candidate (structurally singular) takes a zero pivot from
    /// a row not yet pivoted, so the factorization always completes and
    /// [`SparseLu::zero_pivot`] reports it.
    pub fn factor(a: &Csr, threshold: f64) -> Result<Self, SpError> {
        let n = a.pattern.n;
        if a.pattern.m != n {
            return Err(SpError::Invalid("not square"));
        }
        if a.values.len() != a.pattern.nnz() {
            return Err(SpError::Invalid("nnz"));
        }
        let threshold = if threshold.is_finite() {
            threshold.clamp(0.0, 1.0)
        } else {
            1.0
        };
        let cols = columns(a);
        const NONE: usize = usize::MAX;
        // pinv[row] = the step that pivoted it (NONE: not yet).
        let mut pinv = vec![NONE; n];
        let mut x = vec![ZERO; n];
        let mut mark = vec![NONE; n];
        let mut lu = Self {
            n,
            perm: vec![0; n],
            l_ptr: vec![0],
            l_idx: Vec::new(),
            l_val: Vec::new(),
            u_ptr: vec![0],
            u_idx: Vec::new(),
            u_val: Vec::new(),
            diag: vec![ZERO; n],
        };
        // L's columns with rows still as A's rows (converted at the end).
        let mut reach = Vec::new();
        let mut stack: Vec<(usize, usize)> = Vec::new();
        let mut next_free = 0;
        for (j, col) in cols.iter().enumerate() {
            // Depth-first reach of A(:, j)'s rows in L's graph, postorder.
            reach.clear();
            for &(start, _) in col {
                if mark[start] == j {
                    continue;
                }
                mark[start] = j;
                stack.push((start, 0));
                while let Some(&(node, next)) = stack.last() {
                    let k = pinv[node];
                    let child = if k == NONE {
                        None
                    } else {
                        lu.l_idx[lu.l_ptr[k]..lu.l_ptr[k + 1]].get(next).copied()
                    };
                    match child {
                        Some(child) => {
                            if let Some(top) = stack.last_mut() {
                                top.1 += 1;
                            }
                            if mark[child] != j {
                                mark[child] = j;
                                stack.push((child, 0));
                            }
                        }
                        None => {
                            stack.pop();
                            reach.push(node);
                        }
                    }
                }
            }
            for &(i, v) in col {
                x[i] += v;
            }
            // Triangular solve in topological order (reverse postorder).
            let mut best = (NONE, -1.0f64);
            for &i in reach.iter().rev() {
                let k = pinv[i];
                if k == NONE {
                    if x[i].norm() > best.1 {
                        best = (i, x[i].norm());
                    }
                    continue;
                }
                let xi = x[i];
                for t in lu.l_ptr[k]..lu.l_ptr[k + 1] {
                    x[lu.l_idx[t]] -= lu.l_val[t] * xi;
                }
            }
            let pivot_row = if best.0 == NONE {
                // No candidate: the first row not pivoted yet, pivot zero.
                while pinv[next_free] != NONE {
                    next_free += 1;
                }
                next_free
            } else if pinv[j] == NONE && mark[j] == j && x[j].norm() >= threshold * best.1 {
                j
            } else {
                best.0
            };
            let pivot = x[pivot_row];
            pinv[pivot_row] = j;
            lu.perm[j] = pivot_row;
            lu.diag[j] = pivot;
            for &i in reach.iter().rev() {
                let k = pinv[i];
                if i == pivot_row {
                } else if k != NONE && k < j {
                    lu.u_idx.push(k);
                    lu.u_val.push(x[i]);
                } else {
                    lu.l_idx.push(i);
                    lu.l_val
                        .push(if pivot == ZERO { ZERO } else { x[i] / pivot });
                }
                x[i] = ZERO;
            }
            x[pivot_row] = ZERO;
            lu.l_ptr.push(lu.l_idx.len());
            lu.u_ptr.push(lu.u_idx.len());
        }
        for row in &mut lu.l_idx {
            *row = pinv[*row];
        }
        Ok(lu)
    }

    /// Order.
    pub fn n(&self) -> usize {
        self.n
    }

    /// P as cuSOLVER gives it: row k of P A is row `p[k]` of A.
    pub fn p(&self) -> &[usize] {
        &self.perm
    }

    /// Entries of L (its unit diagonal not stored) and of U.
    pub fn nnz(&self) -> (usize, usize) {
        (self.l_idx.len(), self.u_idx.len() + self.n)
    }

    /// The first pivot whose magnitude is at most `tol`.
    pub fn zero_pivot(&self, tol: f64) -> Option<usize> {
        self.diag.iter().position(|d| d.norm() <= tol)
    }

    /// x from A x = b.
    pub fn solve(&self, b: &[C]) -> Vec<C> {
        let mut y: Vec<C> = self.perm.iter().map(|&i| b[i]).collect();
        for k in 0..self.n {
            let yk = y[k];
            for t in self.l_ptr[k]..self.l_ptr[k + 1] {
                y[self.l_idx[t]] -= self.l_val[t] * yk;
            }
        }
        for k in (0..self.n).rev() {
            y[k] /= self.diag[k];
            let yk = y[k];
            for t in self.u_ptr[k]..self.u_ptr[k + 1] {
                y[self.u_idx[t]] -= self.u_val[t] * yk;
            }
        }
        y
    }

    /// L (unit diagonal not stored) and U (with its diagonal) in CSR with
    /// sorted columns.
    pub fn extract(&self) -> (CsrFactor, CsrFactor) {
        let l = transpose(self.n, &self.l_ptr, &self.l_idx, &self.l_val, None);
        let u = transpose(
            self.n,
            &self.u_ptr,
            &self.u_idx,
            &self.u_val,
            Some(&self.diag),
        );
        (l, u)
    }
}

/// CSR of a matrix given by columns (`diag`, when given, appended to each
/// column as its diagonal entry). Columns come out sorted because the
/// columns are walked in order.
fn transpose(n: usize, ptr: &[usize], idx: &[usize], val: &[C], diag: Option<&[C]>) -> CsrFactor {
    let mut counts = vec![0usize; n + 1];
    for &r in idx {
        counts[r + 1] += 1;
    }
    if diag.is_some() {
        for c in counts.iter_mut().skip(1) {
            *c += 1;
        }
    }
    for i in 0..n {
        counts[i + 1] += counts[i];
    }
    let total = counts[n];
    let mut next = counts.clone();
    let mut colind = vec![0; total];
    let mut values = vec![ZERO; total];
    for j in 0..n {
        let mut place = |r: usize, v: C| {
            colind[next[r]] = j;
            values[next[r]] = v;
            next[r] += 1;
        };
        for t in ptr[j]..ptr[j + 1] {
            place(idx[t], val[t]);
        }
        if let Some(d) = diag {
            place(j, d[j]);
        }
    }
    CsrFactor {
        rowptr: counts,
        colind,
        values,
    }
}

/// How an Rf object's L and U carry the unit diagonal
/// (`cusolverRfUnitDiagonal_t`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UnitDiagonal {
    /// L is unit, its diagonal stored (`STORED_L`).
    StoredL,
    /// U is unit, its diagonal stored (`STORED_U`).
    StoredU,
    /// L is unit, its diagonal not stored (`ASSUMED_L`).
    AssumedL,
    /// U is unit, its diagonal not stored (`ASSUMED_U`).
    AssumedU,
}

impl UnitDiagonal {
    /// From cuSOLVER's value.
    pub fn from_raw(value: i32) -> Option<Self> {
        Some(match value {
            0 => Self::StoredL,
            1 => Self::StoredU,
            2 => Self::AssumedL,
            3 => Self::AssumedU,
            _ => return None,
        })
    }

    fn unit_l(self) -> bool {
        matches!(self, Self::StoredL | Self::AssumedL)
    }

    fn stored(self) -> bool {
        matches!(self, Self::StoredL | Self::StoredU)
    }
}

/// The outcome of a refactorization's pivots.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct PivotReport {
    /// The first pivot at most `zero` in magnitude.
    pub zero_pivot: Option<usize>,
    /// Whether a pivot was replaced by `boost`.
    pub boosted: bool,
}

/// A cusolverRf object's numeric state: P, Q, A's pattern, and the bundle
/// M = L - I + U on the fixed pattern of the LU it was set up with.
#[derive(Debug, Clone)]
pub struct Refactor {
    n: usize,
    p: Vec<usize>,
    q: Vec<usize>,
    a: Pattern,
    a_values: Vec<C>,
    m: CsrFactor,
    /// Index of the diagonal entry of each row of M.
    m_diag: Vec<usize>,
    /// For each entry of A, the index in M of its entry of P A Qᵀ.
    a_to_m: Vec<usize>,
}

impl Refactor {
    /// Bytes the server holds for it.
    pub fn bytes(&self) -> usize {
        let word = std::mem::size_of::<usize>();
        (self.p.len() + self.q.len() + self.m_diag.len() + self.a_to_m.len()) * word
            + self.a.bytes()
            + self.a_values.len() * 16
            + (self.m.rowptr.len() + self.m.colind.len()) * word
            + self.m.values.len() * 16
    }

    /// `cusolverRfSetup*`: A (n×n), P and Q (checked permutations) with
    /// P A Qᵀ = L U, and L and U as the application gives them (`diag`
    /// says which is unit and whether its diagonal is stored). Every entry
    /// of P A Qᵀ must lie in the pattern of L + U.
    pub fn new(
        a: Csr,
        (p, q): (Vec<usize>, Vec<usize>),
        l: &Csr,
        u: &Csr,
        diag: UnitDiagonal,
    ) -> Result<Self, SpError> {
        let n = a.pattern.n;
        let square = |c: &Csr| c.pattern.m == n && c.pattern.n == n;
        if a.pattern.m != n || !square(l) || !square(u) || p.len() != n || q.len() != n {
            return Err(SpError::Invalid("dimensions"));
        }
        // M's rows: L's strictly lower and U's strictly upper entries, and
        // the diagonal; its values in the unit-L convention.
        let mut rows: Vec<Vec<(usize, C)>> = vec![Vec::new(); n];
        let mut pivots = vec![C::new(1.0, 0.0); n];
        let other = if diag.unit_l() { u } else { l };
        for (i, pivot) in pivots.iter_mut().enumerate() {
            for k in other.pattern.rowptr[i]..other.pattern.rowptr[i + 1] {
                if other.pattern.colind[k] == i {
                    *pivot = other.values[k];
                }
            }
        }
        for (mat, lower) in [(l, true), (u, false)] {
            for i in 0..n {
                for k in mat.pattern.rowptr[i]..mat.pattern.rowptr[i + 1] {
                    let j = mat.pattern.colind[k];
                    if (lower && j > i) || (!lower && j < i) {
                        return Err(SpError::Invalid("L or U is not triangular"));
                    }
                    if j == i {
                        continue;
                    }
                    let mut v = mat.values[k];
                    // Crout (unit U): L = L₁ D and U = D⁻¹ U₁; M holds L₁, D U.
                    if !diag.unit_l() {
                        if lower {
                            v /= pivots[j];
                        } else {
                            v *= pivots[i];
                        }
                    }
                    rows[i].push((j, v));
                }
            }
        }
        for (i, row) in rows.iter_mut().enumerate() {
            row.push((i, pivots[i]));
            row.sort_unstable_by_key(|&(j, _)| j);
            row.dedup_by_key(|&mut (j, _)| j);
        }
        let mut m = CsrFactor {
            rowptr: vec![0],
            colind: Vec::new(),
            values: Vec::new(),
        };
        let mut m_diag = Vec::with_capacity(n);
        for (i, row) in rows.into_iter().enumerate() {
            for (j, v) in row {
                if j == i {
                    m_diag.push(m.colind.len());
                }
                m.colind.push(j);
                m.values.push(v);
            }
            m.rowptr.push(m.colind.len());
        }
        let a_to_m = map_into(&a.pattern, &p, &q, &m)?;
        Ok(Self {
            n,
            p,
            q,
            a: a.pattern,
            a_values: a.values,
            m,
            m_diag,
            a_to_m,
        })
    }

    /// Order.
    pub fn n(&self) -> usize {
        self.n
    }

    /// A's pattern.
    pub fn a_pattern(&self) -> &Pattern {
        &self.a
    }

    /// `cusolverRfResetValues`: A's new values on the setup's pattern,
    /// with P and Q (which must be the setup's: the pattern of L + U
    /// depends on them).
    pub fn reset_values(
        &mut self,
        values: Vec<C>,
        p: &[usize],
        q: &[usize],
    ) -> Result<(), SpError> {
        if values.len() != self.a.nnz() {
            return Err(SpError::Invalid("nnz"));
        }
        if p != self.p || q != self.q {
            return Err(SpError::Invalid("P or Q differ from the setup's"));
        }
        self.a_values = values;
        Ok(())
    }

    /// A copy with A's `values` (the setup's pattern, P and Q): another
    /// member of a `cusolverRfBatchSetupHost` batch.
    pub fn with_values(&self, values: Vec<C>) -> Result<Self, SpError> {
        if values.len() != self.a.nnz() {
            return Err(SpError::Invalid("nnz"));
        }
        let mut other = self.clone();
        other.a_values = values;
        Ok(other)
    }

    /// `cusolverRfRefactor`: L and U of P A Qᵀ on the fixed pattern, no
    /// pivoting. A pivot of magnitude at most `zero` is reported and, when
    /// `boost` is positive, replaced by `boost`.
    pub fn refactor(&mut self, zero: f64, boost: f64) -> PivotReport {
        let m = &mut self.m;
        m.values.iter_mut().for_each(|v| *v = ZERO);
        for (k, &t) in self.a_to_m.iter().enumerate() {
            m.values[t] += self.a_values[k];
        }
        let mut report = PivotReport::default();
        let mut pos = vec![usize::MAX; self.n];
        for i in 0..self.n {
            // On the server a row's work grows with the fill: the call
            // stops at the device's deadline (and is discarded).
            if crate::deadline::passed() {
                return report;
            }
            let (start, end) = (m.rowptr[i], m.rowptr[i + 1]);
            for t in start..end {
                pos[m.colind[t]] = t;
            }
            for t in start..self.m_diag[i] {
                let k = m.colind[t];
                let pivot = m.values[self.m_diag[k]];
                let factor = if pivot == ZERO {
                    ZERO
                } else {
                    m.values[t] / pivot
                };
                m.values[t] = factor;
                for s in self.m_diag[k] + 1..m.rowptr[k + 1] {
                    let at = pos[m.colind[s]];
                    if at != usize::MAX {
                        let update = factor * m.values[s];
                        m.values[at] -= update;
                    }
                }
            }
            let d = self.m_diag[i];
            if m.values[d].norm() <= zero {
                report.zero_pivot.get_or_insert(i);
                if boost > 0.0 {
                    m.values[d] = C::new(boost, 0.0);
                    report.boosted = true;
                }
            }
            for t in start..end {
                pos[m.colind[t]] = usize::MAX;
            }
        }
        report
    }

    /// `cusolverRfSolve`: x from A x = b, in place (`p`, `q` as given to
    /// the solve).
    pub fn solve(&self, xf: &mut [C], p: &[usize], q: &[usize]) {
        let m = &self.m;
        let mut y: Vec<C> = p.iter().map(|&i| xf[i]).collect();
        for i in 0..self.n {
            let mut s = y[i];
            for t in m.rowptr[i]..self.m_diag[i] {
                s -= m.values[t] * y[m.colind[t]];
            }
            y[i] = s;
        }
        for i in (0..self.n).rev() {
            let mut s = y[i];
            for t in self.m_diag[i] + 1..m.rowptr[i + 1] {
                s -= m.values[t] * y[m.colind[t]];
            }
            y[i] = s / m.values[self.m_diag[i]];
        }
        for (i, &j) in q.iter().enumerate() {
            xf[j] = y[i];
        }
    }

    /// Entries of M's strictly lower part (L's, without its diagonal).
    pub fn lower_nnz(&self) -> usize {
        (0..self.n).map(|i| self.m_diag[i] - self.m.rowptr[i]).sum()
    }

    /// The bundle M = L - I + U (unit L), as `ExtractBundledFactorsHost`
    /// answers it.
    pub fn bundled(&self) -> &CsrFactor {
        &self.m
    }

    /// L and U split as `diag` says.
    pub fn split(&self, diag: UnitDiagonal) -> (CsrFactor, CsrFactor) {
        let empty = || CsrFactor {
            rowptr: vec![0],
            colind: Vec::new(),
            values: Vec::new(),
        };
        let (mut l, mut u) = (empty(), empty());
        let one = C::new(1.0, 0.0);
        for i in 0..self.n {
            let d = self.m.values[self.m_diag[i]];
            for t in self.m.rowptr[i]..self.m.rowptr[i + 1] {
                let (j, v) = (self.m.colind[t], self.m.values[t]);
                let (target, value) = match (j.cmp(&i), diag.unit_l()) {
                    (std::cmp::Ordering::Less, true) => (&mut l, v),
                    (std::cmp::Ordering::Less, false) => {
                        (&mut l, v * self.m.values[self.m_diag[j]])
                    }
                    (std::cmp::Ordering::Greater, true) => (&mut u, v),
                    (std::cmp::Ordering::Greater, false) => {
                        (&mut u, if d == ZERO { ZERO } else { v / d })
                    }
                    (std::cmp::Ordering::Equal, unit_l) => {
                        let (unit, other) = if unit_l {
                            (&mut l, &mut u)
                        } else {
                            (&mut u, &mut l)
                        };
                        other.colind.push(j);
                        other.values.push(d);
                        if diag.stored() {
                            unit.colind.push(j);
                            unit.values.push(one);
                        }
                        continue;
                    }
                };
                target.colind.push(j);
                target.values.push(value);
            }
            l.rowptr.push(l.colind.len());
            u.rowptr.push(u.colind.len());
        }
        (l, u)
    }
}

/// For each entry (i, j) of A, the index in M of entry (pinv[i], qinv[j])
/// of P A Qᵀ; an entry outside M's pattern is refused.
fn map_into(a: &Pattern, p: &[usize], q: &[usize], m: &CsrFactor) -> Result<Vec<usize>, SpError> {
    let n = a.n;
    let mut pinv = vec![0; n];
    let mut qinv = vec![0; n];
    for (k, &i) in p.iter().enumerate() {
        pinv[i] = k;
    }
    for (k, &j) in q.iter().enumerate() {
        qinv[j] = k;
    }
    let mut map = Vec::with_capacity(a.nnz());
    for (i, &r) in pinv.iter().enumerate() {
        let row = &m.colind[m.rowptr[r]..m.rowptr[r + 1]];
        for &j in a.row(i) {
            let at = row
                .binary_search(&qinv[j])
                .map_err(|_| SpError::Invalid("an entry of P A Qᵀ lies outside L + U"))?;
            map.push(m.rowptr[r] + at);
        }
    }
    Ok(map)
}
