//! The rest of cuSOLVER's sparse host API: least squares with a
//! numerical rank (`csrlsqvqr`), the shift-inverse power method
//! (`csreigvsi`), counting eigenvalues in a box (`csreigs`) and the
//! zero-free diagonal (`csrzfd`).
//!
//! `csrlsqvqr` and `csreigs` work on a dense copy of A (column-pivoted QR,
//! the QR algorithm of `geev`), bounded like the bands by
//! [`MAX_BAND_ELEMENTS`]; `csreigvsi` factors A − μ₀I with the band LU.

use num_complex::Complex64 as C;

use super::{Csr, Factor, Method, Pattern, SpError, MAX_BAND_ELEMENTS};
use crate::deadline;
use crate::solver::dense::{geqrf, ormqr, Mat, Op, Side};
use crate::solver::geev::geev;

const ZERO: C = C::new(0.0, 0.0);

/// A dense copy of `a`, or [`SpError::TooLarge`] past the bound.
fn dense(a: &Csr) -> Result<Mat, SpError> {
    let p = &a.pattern;
    let len = p.m.checked_mul(p.n).ok_or(SpError::TooLarge)?;
    if len > MAX_BAND_ELEMENTS {
        return Err(SpError::TooLarge);
    }
    let mut d = Mat::zeros(p.m, p.n);
    for i in 0..p.m {
        for k in p.rowptr[i]..p.rowptr[i + 1] {
            d[(i, p.colind[k])] += a.values[k];
        }
    }
    Ok(d)
}

/// y = A x.
pub fn matvec(a: &Csr, x: &[C]) -> Vec<C> {
    let p = &a.pattern;
    (0..p.m)
        .map(|i| {
            (p.rowptr[i]..p.rowptr[i + 1])
                .map(|k| a.values[k] * x.get(p.colind[k]).copied().unwrap_or(ZERO))
                .sum()
        })
        .collect()
}

fn norm(x: &[C]) -> f64 {
    x.iter().map(|z| z.norm_sqr()).sum::<f64>().sqrt()
}

/// What `csrlsqvqr` answers.
#[derive(Debug, Clone, PartialEq)]
pub struct LeastSquares {
    /// The numerical rank: how many of R's diagonal entries exceed `tol`.
    pub rank: usize,
    /// The minimum-norm least-squares solution (pinv(A) b on the rank).
    pub x: Vec<C>,
    /// The column permutation: A Pᵀ = Q R, column k of A Pᵀ is column
    /// `p[k]` of A.
    pub p: Vec<usize>,
    /// ‖A x − b‖.
    pub min_norm: f64,
}

/// `cusolverSp?csrlsqvqrHost`: min ‖A x − b‖ for an m×n A (m ≥ n) by
/// Householder QR with column pivoting (LAPACK's geqp3 rule: the remaining
/// column of largest norm first). The rank is the number of |R(k,k)| above
/// `tol`; on a rank-deficient A, [R11 R12] is reduced once more (a QR of
/// its adjoint, as LAPACK's gelsy) so that x is the minimum-norm solution.
pub fn lsqvqr(a: &Csr, b: &[C], tol: f64) -> Result<LeastSquares, SpError> {
    let (m, n) = (a.pattern.m, a.pattern.n);
    if m < n {
        return Err(SpError::Invalid("m < n"));
    }
    if b.len() != m {
        return Err(SpError::Invalid("b"));
    }
    let mut r = dense(a)?;
    let mut p: Vec<usize> = (0..n).collect();
    let mut tau = Vec::with_capacity(n);
    let mut rank = 0;
    for k in 0..n {
        if deadline::passed() {
            break;
        }
        // Pivot: the remaining column of largest norm (rows k..m).
        let col_norm = |r: &Mat, j: usize| (k..m).map(|i| r[(i, j)].norm_sqr()).sum::<f64>();
        let best = (k..n)
            .max_by(|&i, &j| col_norm(&r, i).total_cmp(&col_norm(&r, j)).then(j.cmp(&i)))
            .unwrap_or(k);
        if best != k {
            for i in 0..m {
                r.data.swap(i + k * m, i + best * m);
            }
            p.swap(k, best);
        }
        if col_norm(&r, k).sqrt() <= tol {
            break;
        }
        // One Householder step on rows k..m, applied to columns k+1..n.
        let mut col = Mat::zeros(m - k, 1);
        for i in k..m {
            col[(i - k, 0)] = r[(i, k)];
        }
        let t = geqrf(&mut col);
        let mut rest = Mat::zeros(m - k, n - k - 1);
        for j in k + 1..n {
            for i in k..m {
                rest[(i - k, j - k - 1)] = r[(i, j)];
            }
        }
        ormqr(Side::Left, Op::C, &col, &t, &mut rest);
        for i in k..m {
            r[(i, k)] = col[(i - k, 0)];
            for j in k + 1..n {
                r[(i, j)] = rest[(i - k, j - k - 1)];
            }
        }
        if r[(k, k)].norm() <= tol {
            break;
        }
        tau.push(t.first().copied().unwrap_or(ZERO));
        rank = k + 1;
    }
    // c = Qᴴ b, applying the `rank` reflectors.
    let mut c = Mat::zeros(m, 1);
    c.data.copy_from_slice(b);
    let mut q = Mat::zeros(m, rank);
    for j in 0..rank {
        for i in j + 1..m {
            q[(i, j)] = r[(i, j)];
        }
    }
    ormqr(Side::Left, Op::C, &q, &tau, &mut c);
    // Minimum-norm y with [R11 R12] y = c(0..rank): [R11 R12]ᴴ = Z T,
    // Tᴴ w = c, y = Z [w; 0].
    let mut s = Mat::zeros(n, rank);
    for i in 0..rank {
        for j in i..n {
            s[(j, i)] = r[(i, j)].conj();
        }
    }
    let zt = geqrf(&mut s);
    let mut w = vec![ZERO; n];
    for i in 0..rank {
        let mut v = c[(i, 0)];
        for k in 0..i {
            v -= s[(k, i)].conj() * w[k];
        }
        w[i] = v / s[(i, i)].conj();
    }
    let mut y = Mat::zeros(n, 1);
    y.data.copy_from_slice(&w);
    ormqr(Side::Left, Op::N, &s, &zt, &mut y);
    let mut x = vec![ZERO; n];
    for (k, &j) in p.iter().enumerate() {
        x[j] = y[(k, 0)];
    }
    let ax = matvec(a, &x);
    let residual: Vec<C> = ax.iter().zip(b).map(|(u, v)| u - v).collect();
    Ok(LeastSquares {
        rank,
        min_norm: norm(&residual),
        x,
        p,
    })
}

/// `cusolverSp?csreigvsi(Host)`: the shift-inverse power method. From
/// x₀/‖x₀‖, each step solves (A − μ₀I) y = x and normalizes y into x, and
/// takes the Rayleigh quotient μ = xᴴAx; it stops after `maxite` steps or
/// once ‖Ax − μx‖ ≤ `eps`·|μ|. A − μ₀I is factored once by the band LU; a
/// shift that is itself an eigenvalue is moved by a relative 1e-10.
/// Answers μ and x.
pub fn eigvsi(a: &Csr, mu0: C, x0: &[C], maxite: i32, eps: f64) -> Result<(C, Vec<C>), SpError> {
    let n = a.pattern.n;
    if a.pattern.m != n {
        return Err(SpError::Invalid("not square"));
    }
    if maxite <= 0 {
        return Err(SpError::Invalid("maxite"));
    }
    if x0.len() != n {
        return Err(SpError::Invalid("x0"));
    }
    let x0_norm = norm(x0);
    if x0_norm == 0.0 || !x0_norm.is_finite() {
        return Err(SpError::Invalid("x0 is zero"));
    }
    let mut factor = Factor::new(a, Method::Lu, mu0)?;
    if factor.zero_pivot(0.0).is_some() {
        let scale = a.values.iter().map(|v| v.norm()).fold(mu0.norm(), f64::max);
        let shifted = mu0 + C::new(1e-10 * scale.max(f64::MIN_POSITIVE), 0.0);
        factor = Factor::new(a, Method::Lu, shifted)?;
        if factor.zero_pivot(0.0).is_some() {
            return Err(SpError::Invalid("A - mu0 I is singular"));
        }
    }
    let mut x: Vec<C> = x0.iter().map(|v| v / x0_norm).collect();
    let mut mu = mu0;
    for _ in 0..maxite {
        if deadline::passed() {
            break;
        }
        let y = factor.solve(&x);
        let size = norm(&y);
        if size == 0.0 || !size.is_finite() {
            break;
        }
        x = y.iter().map(|v| v / size).collect();
        let ax = matvec(a, &x);
        mu = x.iter().zip(&ax).map(|(u, v)| u.conj() * v).sum();
        let r: Vec<C> = ax.iter().zip(&x).map(|(u, v)| u - mu * v).collect();
        if norm(&r) <= eps * mu.norm() {
            break;
        }
    }
    Ok((mu, x))
}

/// `cusolverSp?csreigsHost`: how many eigenvalues of the square A lie in
/// the closed box `lower_left` ≤ λ ≤ `upper_right` (real and imaginary
/// parts each), counted with multiplicity. cuSOLVER estimates this count
/// by a contour integral; here the eigenvalues themselves are computed (the
/// QR algorithm of `geev` on a dense copy), so the count is exact up to
/// rounding of eigenvalues on the box's edges.
pub fn eigs(a: &Csr, lower_left: C, upper_right: C) -> Result<usize, SpError> {
    if a.pattern.m != a.pattern.n {
        return Err(SpError::Invalid("not square"));
    }
    if !(lower_left.re <= upper_right.re && lower_left.im <= upper_right.im) {
        return Err(SpError::Invalid("box corners"));
    }
    let d = dense(a)?;
    let eigen = geev(&d, false, false).map_err(|_| SpError::Invalid("no convergence"))?;
    Ok(eigen
        .values
        .iter()
        .filter(|l| {
            (lower_left.re..=upper_right.re).contains(&l.re)
                && (lower_left.im..=upper_right.im).contains(&l.im)
        })
        .count())
}

/// `cusolverSp?csrzfdHost`: a row permutation P with A(P, :) free of
/// zeros on its diagonal, by MC21's maximum transversal (a depth-first
/// search for an augmenting path from each column, after a cheap
/// assignment). Entries stored with the value 0 count as zeros. Answers
/// P (row `p[j]` of A becomes row j) and how many diagonal entries of
/// A(P, :) are nonzero: n unless A is structurally singular, when the
/// unmatched rows fill the unmatched positions in increasing order.
pub fn zfd(a: &Csr) -> Result<(Vec<usize>, usize), SpError> {
    let pat = &a.pattern;
    let n = pat.n;
    if pat.m != n {
        return Err(SpError::Invalid("not square"));
    }
    // The rows of each column whose value is nonzero.
    let mut cols: Vec<Vec<usize>> = vec![Vec::new(); n];
    for i in 0..n {
        for k in pat.rowptr[i]..pat.rowptr[i + 1] {
            if a.values[k] != ZERO {
                cols[pat.colind[k]].push(i);
            }
        }
    }
    for list in &mut cols {
        list.sort_unstable();
        list.dedup();
    }
    let mut row_of = vec![usize::MAX; n]; // column -> row
    let mut col_of = vec![usize::MAX; n]; // row -> column
    let mut visited = vec![usize::MAX; n]; // row -> the search that saw it
    for j in 0..n {
        if deadline::passed() {
            break;
        }
        // Cheap assignment.
        if let Some(&i) = cols[j].iter().find(|&&i| col_of[i] == usize::MAX) {
            row_of[j] = i;
            col_of[i] = j;
            continue;
        }
        // Depth-first search for an augmenting path: a stack of (column,
        // next candidate row), each column the match of a row seen above.
        let mut stack = vec![(j, 0usize)];
        let mut found = None;
        while let Some(&mut (c, ref mut next)) = stack.last_mut() {
            let Some(&i) = cols[c].get(*next) else {
                stack.pop();
                continue;
            };
            *next += 1;
            if visited[i] == j {
                continue;
            }
            visited[i] = j;
            if col_of[i] == usize::MAX {
                found = Some(i);
                break;
            }
            stack.push((col_of[i], 0));
        }
        if let Some(mut i) = found {
            // Flip the path: each column on the stack takes the row found
            // after it.
            while let Some((c, _)) = stack.pop() {
                let previous = row_of[c];
                row_of[c] = i;
                col_of[i] = c;
                if previous == usize::MAX {
                    break;
                }
                i = previous;
            }
        }
    }
    let numnz = row_of.iter().filter(|&&r| r != usize::MAX).count();
    let mut free = (0..n).filter(|&i| col_of[i] == usize::MAX);
    let p = row_of
        .into_iter()
        .map(|r| {
            if r == usize::MAX {
                free.next().unwrap_or(0)
            } else {
                r
            }
        })
        .collect();
    Ok((p, numnz))
}

/// `cusolverSpXcsrsymmdqHost`: minimum degree with a quotient graph.
/// rcud's minimum degree ([`super::symamd`]) keeps exact external degrees
/// on the elimination graph, which orders as the quotient graph does (the
/// quotient graph is a compact representation of the same graph), so both
/// functions share it.
pub fn symmdq(pattern: &Pattern) -> Vec<usize> {
    super::symamd(pattern)
}
