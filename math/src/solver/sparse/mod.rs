//! cuSOLVER's sparse API (`cusolverSp*`) on the CPU: orderings of a CSR
//! pattern (reverse Cuthill–McKee, minimum degree, nested dissection) and
//! direct solvers (LU with partial pivoting, Cholesky, Householder QR).
//!
//! The factorizations store the matrix as a band: the samples and most
//! programs reorder with reverse Cuthill–McKee first, which is what keeps
//! the band narrow. Fill of LU (pivoting widens U by the lower bandwidth),
//! Cholesky and QR stays inside the band, so no symbolic analysis is needed
//! beyond the bandwidths. A band that would exceed [`MAX_BAND_ELEMENTS`] is
//! refused ([`SpError::TooLarge`], cuSOLVER's `ALLOC_FAILED`).
//!
//! Values are complex doubles: S, D, C and Z all compute here, as the dense
//! solvers do.

mod band;
mod extra;
mod info;
mod lu;
mod order;
#[cfg(test)]
mod tests;

pub use band::{band_bytes, Band, Factor, Method};
pub use extra::{eigs, eigvsi, lsqvqr, matvec, symmdq, zfd, LeastSquares};
pub use info::Info;
pub use lu::{CsrFactor, PivotReport, Refactor, SparseLu, UnitDiagonal};
pub use order::{metisnd, symamd, symrcm};

use num_complex::Complex64 as C;

/// The most band elements (16 bytes each) a factorization may hold: 512 MiB.
pub const MAX_BAND_ELEMENTS: usize = 1 << 25;

/// Why a sparse call is refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum SpError {
    /// A malformed CSR (row offsets, column indices) or dimension.
    #[error("invalid CSR matrix: {0}")]
    Invalid(&'static str),
    /// The band the factorization needs is larger than [`MAX_BAND_ELEMENTS`].
    #[error("the band of the factorization exceeds the memory bound")]
    TooLarge,
}

/// A CSR pattern with zero-based indices, checked.
#[derive(Debug, Clone, PartialEq)]
pub struct Pattern {
    /// Rows.
    pub m: usize,
    /// Columns.
    pub n: usize,
    /// Row offsets (m + 1), zero-based.
    pub rowptr: Vec<usize>,
    /// Column indices, zero-based.
    pub colind: Vec<usize>,
}

impl Pattern {
    /// Bytes its arrays hold.
    pub fn bytes(&self) -> usize {
        (self.rowptr.len() + self.colind.len()) * std::mem::size_of::<usize>()
    }

    /// Checks and rebases a CSR pattern as the application passed it:
    /// `rowptr[0] == base`, non-decreasing offsets, `rowptr[m] - base ==
    /// nnz`, every column in `0..n`.
    pub fn new(
        m: i32,
        n: i32,
        nnz: i32,
        base: i32,
        rowptr: &[i32],
        colind: &[i32],
    ) -> Result<Self, SpError> {
        let m = usize::try_from(m).map_err(|_| SpError::Invalid("m"))?;
        let n = usize::try_from(n).map_err(|_| SpError::Invalid("n"))?;
        let nnz = usize::try_from(nnz).map_err(|_| SpError::Invalid("nnz"))?;
        if !(0..=1).contains(&base) || rowptr.len() != m + 1 || colind.len() < nnz {
            return Err(SpError::Invalid("sizes"));
        }
        let rebase = |v: i32| usize::try_from(i64::from(v) - i64::from(base)).ok();
        let mut offsets = Vec::with_capacity(m + 1);
        for &v in rowptr {
            let v = rebase(v).ok_or(SpError::Invalid("row offset"))?;
            if offsets.last().is_some_and(|&last| v < last) || v > nnz {
                return Err(SpError::Invalid("row offset"));
            }
            offsets.push(v);
        }
        if offsets.first() != Some(&0) || offsets.last() != Some(&nnz) {
            return Err(SpError::Invalid("row offsets do not span nnz"));
        }
        let mut cols = Vec::with_capacity(nnz);
        for &c in &colind[..nnz] {
            match rebase(c) {
                Some(c) if c < n => cols.push(c),
                _ => return Err(SpError::Invalid("column index")),
            }
        }
        Ok(Self {
            m,
            n,
            rowptr: offsets,
            colind: cols,
        })
    }

    /// Entries.
    pub fn nnz(&self) -> usize {
        self.colind.len()
    }

    /// The column indices of row `i`.
    pub fn row(&self, i: usize) -> &[usize] {
        &self.colind[self.rowptr[i]..self.rowptr[i + 1]]
    }

    /// Whether the pattern is structurally symmetric (square, and (j, i)
    /// present for every (i, j)).
    pub fn is_symmetric(&self) -> bool {
        if self.m != self.n {
            return false;
        }
        let mut rows: Vec<Vec<usize>> = (0..self.m).map(|i| self.row(i).to_vec()).collect();
        for row in &mut rows {
            row.sort_unstable();
        }
        (0..self.m).all(|i| {
            self.row(i)
                .iter()
                .all(|&j| rows[j].binary_search(&i).is_ok())
        })
    }

    /// The adjacency of A + Aᵀ without the diagonal, sorted, deduplicated
    /// (square patterns).
    pub fn symmetric_graph(&self) -> Vec<Vec<usize>> {
        let mut adj = vec![Vec::new(); self.n.max(self.m)];
        for i in 0..self.m {
            for &j in self.row(i) {
                if i != j {
                    adj[i].push(j);
                    adj[j].push(i);
                }
            }
        }
        for list in &mut adj {
            list.sort_unstable();
            list.dedup();
        }
        adj
    }

    /// Half-bandwidth of the symmetric pattern: max |i - j| over entries.
    pub fn bandwidth(&self) -> usize {
        (0..self.m)
            .flat_map(|i| self.row(i).iter().map(move |&j| i.abs_diff(j)))
            .max()
            .unwrap_or(0)
    }
}

/// A CSR matrix: a pattern and its values.
#[derive(Debug, Clone, PartialEq)]
pub struct Csr {
    /// Its pattern.
    pub pattern: Pattern,
    /// One value per entry.
    pub values: Vec<C>,
}

impl Csr {
    /// The matrix whose rows are A's rows `p` and columns A's columns `q`,
    /// i.e. B(i, j) = A(p[i], q[j]) (`p`, `q` permutations of m and n).
    pub fn permuted(&self, p: &[usize], q: &[usize]) -> Csr {
        let pat = &self.pattern;
        let mut qinv = vec![0; pat.n];
        for (new, &old) in q.iter().enumerate() {
            qinv[old] = new;
        }
        let mut rowptr = vec![0];
        let mut colind = Vec::with_capacity(pat.nnz());
        let mut values = Vec::with_capacity(pat.nnz());
        for &old in p {
            for k in pat.rowptr[old]..pat.rowptr[old + 1] {
                colind.push(qinv[pat.colind[k]]);
                values.push(self.values[k]);
            }
            rowptr.push(colind.len());
        }
        Csr {
            pattern: Pattern {
                m: pat.m,
                n: pat.n,
                rowptr,
                colind,
            },
            values,
        }
    }
}

/// Checks that `p` is a permutation of `0..n` and answers it as indices.
pub fn permutation(p: &[i32], n: usize) -> Option<Vec<usize>> {
    if p.len() != n {
        return None;
    }
    let mut seen = vec![false; n];
    let mut out = Vec::with_capacity(n);
    for &v in p {
        let v = usize::try_from(v).ok().filter(|&v| v < n)?;
        if std::mem::replace(&mut seen[v], true) {
            return None;
        }
        out.push(v);
    }
    Some(out)
}

/// `cusolverSpXcsrpermHost`: B = A(p, q). Sorts B's column indices within
/// each row and answers, for each entry of B, the index of its entry in A
/// (`map`), so that the application can permute values as `B_val =
/// A_val(map)`. `p` and `q` are checked permutations.
pub fn csrperm(pattern: &Pattern, p: &[usize], q: &[usize]) -> (Pattern, Vec<usize>) {
    let mut qinv = vec![0; pattern.n];
    for (new, &old) in q.iter().enumerate() {
        qinv[old] = new;
    }
    let mut rowptr = vec![0];
    let mut entries = Vec::with_capacity(pattern.nnz());
    for &old in p {
        let start = entries.len();
        for k in pattern.rowptr[old]..pattern.rowptr[old + 1] {
            entries.push((qinv[pattern.colind[k]], k));
        }
        entries[start..].sort_unstable();
        rowptr.push(entries.len());
    }
    let (colind, map) = entries.into_iter().unzip();
    (
        Pattern {
            m: pattern.m,
            n: pattern.n,
            rowptr,
            colind,
        },
        map,
    )
}

/// Solves A x = b by `method` with the pattern reordered by reverse
/// Cuthill–McKee when `reorder` is nonzero (A is permuted symmetrically,
/// b and x accordingly). Answers x and the singularity: `None` when every
/// pivot is above `tol`, else the first index (of the possibly reordered
/// system) whose pivot is at most `tol`.
pub fn solve(
    a: &Csr,
    b: &[C],
    method: Method,
    tol: f64,
    reorder: bool,
) -> Result<(Vec<C>, Option<usize>), SpError> {
    let n = a.pattern.n;
    let order: Vec<usize> = if reorder {
        symrcm(&a.pattern)
    } else {
        (0..n).collect()
    };
    let permuted;
    let system = if reorder {
        permuted = a.permuted(&order, &order);
        &permuted
    } else {
        a
    };
    let factor = Factor::new(system, method, C::new(0.0, 0.0))?;
    if let Some(at) = factor.zero_pivot(tol) {
        return Ok((vec![C::new(0.0, 0.0); n], Some(at)));
    }
    let pb: Vec<C> = order.iter().map(|&i| b[i]).collect();
    let y = factor.solve(&pb);
    let mut x = vec![C::new(0.0, 0.0); n];
    for (k, &i) in order.iter().enumerate() {
        x[i] = y[k];
    }
    Ok((x, None))
}
