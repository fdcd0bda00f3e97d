//! Dense factorizations in LAPACK's storage conventions, on column-major
//! complex matrices in double precision.
//!
//! cuSOLVER's results are LAPACK's: getrf's packed unit-lower L and U with
//! its pivot sequence, geqrf's Householder vectors below the diagonal with
//! `tau`, eigenvectors and singular vectors in given layouts. The crates'
//! blocked representations do not map onto those, so the algorithms here
//! are the unblocked textbook ones (LAPACK's getf2, potf2, geqr2, orm2r) and
//! Jacobi's methods for the eigenvalue and singular value problems, which
//! are accurate to a few ulps of the matrix norm. Real matrices run through
//! the same code with zero imaginary parts: every operation then stays real.

use num_complex::Complex64 as C;

use crate::deadline;

/// A column-major matrix.
#[derive(Debug, Clone, PartialEq)]
pub struct Mat {
    /// Number of rows.
    pub rows: usize,
    /// Number of columns.
    pub cols: usize,
    /// Entries, column after column.
    pub data: Vec<C>,
}

impl Mat {
    /// The zero matrix.
    pub fn zeros(rows: usize, cols: usize) -> Self {
        Self {
            rows,
            cols,
            data: vec![C::new(0.0, 0.0); rows * cols],
        }
    }

    /// The identity matrix.
    pub fn identity(n: usize) -> Self {
        let mut m = Self::zeros(n, n);
        for i in 0..n {
            m[(i, i)] = C::new(1.0, 0.0);
        }
        m
    }

    pub(crate) fn swap_rows(&mut self, a: usize, b: usize) {
        if a != b {
            for j in 0..self.cols {
                self.data.swap(a + j * self.rows, b + j * self.rows);
            }
        }
    }

    fn col(&self, j: usize) -> &[C] {
        &self.data[j * self.rows..(j + 1) * self.rows]
    }
}

impl std::ops::Index<(usize, usize)> for Mat {
    type Output = C;
    fn index(&self, (i, j): (usize, usize)) -> &C {
        &self.data[i + j * self.rows]
    }
}

impl std::ops::IndexMut<(usize, usize)> for Mat {
    fn index_mut(&mut self, (i, j): (usize, usize)) -> &mut C {
        &mut self.data[i + j * self.rows]
    }
}

/// How a solve applies its matrix: `cublasOperation_t`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    /// A.
    N,
    /// Aᵀ.
    T,
    /// Aᴴ.
    C,
}

/// Which triangle holds a symmetric matrix: `cublasFillMode_t`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Uplo {
    /// The lower triangle.
    Lower,
    /// The upper triangle.
    Upper,
}

/// LAPACK's `cabs1`: |re| + |im|, what pivot searches compare.
fn abs1(z: C) -> f64 {
    z.re.abs() + z.im.abs()
}

/// LU with partial pivoting (LAPACK's getf2) in place: `a` becomes L (unit
/// diagonal, below) and U. Answers the 1-based pivot sequence (row `i` was
/// swapped with row `ipiv[i]`) and `info` (0, or the 1-based index of the
/// first exactly zero U(i,i)). Without `pivoting` no rows are swapped.
pub fn getrf(a: &mut Mat, pivoting: bool) -> (Vec<i32>, i32) {
    let (m, n) = (a.rows, a.cols);
    let k = m.min(n);
    let mut ipiv = Vec::with_capacity(k);
    let mut info = 0;
    for j in 0..k {
        if deadline::passed() {
            break;
        }
        let mut p = j;
        if pivoting {
            for i in j + 1..m {
                if abs1(a[(i, j)]) > abs1(a[(p, j)]) {
                    p = i;
                }
            }
        }
        ipiv.push(p as i32 + 1);
        let pivot = a[(p, j)];
        if pivot != C::new(0.0, 0.0) {
            a.swap_rows(j, p);
            let inv = pivot.inv();
            for i in j + 1..m {
                a[(i, j)] *= inv;
            }
        } else if info == 0 {
            info = j as i32 + 1;
        }
        for c in j + 1..n {
            let u = a[(j, c)];
            if u != C::new(0.0, 0.0) {
                for i in j + 1..m {
                    let l = a[(i, j)];
                    a[(i, c)] -= l * u;
                }
            }
        }
    }
    (ipiv, info)
}

/// Solves op(A) X = B with getrf's factors of the n×n matrix A; `ipiv`
/// None when the factorization did not pivot.
pub fn getrs(op: Op, lu: &Mat, ipiv: Option<&[i32]>, b: &mut Mat) {
    let n = lu.rows;
    let swap = |b: &mut Mat, i: usize| {
        if let Some(p) = ipiv.and_then(|ipiv| ipiv.get(i)) {
            let p = (*p as usize).saturating_sub(1);
            if p < n {
                b.swap_rows(i, p);
            }
        }
    };
    let conj = |z: C| if op == Op::C { z.conj() } else { z };
    match op {
        Op::N => {
            for i in 0..n {
                swap(b, i);
            }
            for c in 0..b.cols {
                if deadline::passed() {
                    return;
                }
                // L y = b (unit diagonal), then U x = y.
                for j in 0..n {
                    let y = b[(j, c)];
                    for i in j + 1..n {
                        b[(i, c)] -= lu[(i, j)] * y;
                    }
                }
                for j in (0..n).rev() {
                    b[(j, c)] /= lu[(j, j)];
                    let x = b[(j, c)];
                    for i in 0..j {
                        b[(i, c)] -= lu[(i, j)] * x;
                    }
                }
            }
        }
        Op::T | Op::C => {
            for c in 0..b.cols {
                if deadline::passed() {
                    return;
                }
                // op(U) y = b, then op(L) z = y: both column-oriented dot products.
                for j in 0..n {
                    let mut s = b[(j, c)];
                    for i in 0..j {
                        s -= conj(lu[(i, j)]) * b[(i, c)];
                    }
                    b[(j, c)] = s / conj(lu[(j, j)]);
                }
                for j in (0..n).rev() {
                    let mut s = b[(j, c)];
                    for i in j + 1..n {
                        s -= conj(lu[(i, j)]) * b[(i, c)];
                    }
                    b[(j, c)] = s;
                }
            }
            for i in (0..n).rev() {
                swap(b, i);
            }
        }
    }
}

/// Cholesky (LAPACK's potf2) in place: A = L Lᴴ in the lower triangle or
/// A = Uᴴ U in the upper one; the other triangle is not touched. Answers
/// `info`: 0, or the order of the first leading minor that is not
/// positive definite (the factorization stops there, as LAPACK's).
pub fn potrf(uplo: Uplo, a: &mut Mat) -> i32 {
    let n = a.rows;
    // The factor is read as Lᴴ's entries: f(i, j) for i ≥ j is L(i, j) =
    // conj(U(j, i)).
    let get = |a: &Mat, i: usize, j: usize| match uplo {
        Uplo::Lower => a[(i, j)],
        Uplo::Upper => a[(j, i)].conj(),
    };
    for j in 0..n {
        if deadline::passed() {
            break;
        }
        let mut d = a[(j, j)].re;
        for k in 0..j {
            d -= get(a, j, k).norm_sqr();
        }
        if d.is_nan() || d <= 0.0 {
            a[(j, j)] = C::new(d, 0.0);
            return j as i32 + 1;
        }
        let djj = d.sqrt();
        a[(j, j)] = C::new(djj, 0.0);
        for i in j + 1..n {
            let mut s = get(a, i, j);
            for k in 0..j {
                s -= get(a, i, k) * get(a, j, k).conj();
            }
            let v = s / djj;
            match uplo {
                Uplo::Lower => a[(i, j)] = v,
                Uplo::Upper => a[(j, i)] = v.conj(),
            }
        }
    }
    0
}

/// Solves A X = B with potrf's factor of A.
pub fn potrs(uplo: Uplo, f: &Mat, b: &mut Mat) {
    let n = f.rows;
    let l = |i: usize, j: usize| match uplo {
        Uplo::Lower => f[(i, j)],
        Uplo::Upper => f[(j, i)].conj(),
    };
    for c in 0..b.cols {
        if deadline::passed() {
            return;
        }
        // L y = b, then Lᴴ x = y.
        for i in 0..n {
            let mut s = b[(i, c)];
            for k in 0..i {
                s -= l(i, k) * b[(k, c)];
            }
            b[(i, c)] = s / l(i, i);
        }
        for i in (0..n).rev() {
            let mut s = b[(i, c)];
            for k in i + 1..n {
                s -= l(k, i).conj() * b[(k, c)];
            }
            b[(i, c)] = s / l(i, i).conj();
        }
    }
}

/// Householder QR (LAPACK's geqr2) in place: R on and above the diagonal,
/// the vectors v (v(i) = 1 implied) below it; answers tau. Q = H(1) ⋯ H(k)
/// with H(i) = I − tau(i) v vᴴ.
pub fn geqrf(a: &mut Mat) -> Vec<C> {
    let (m, n) = (a.rows, a.cols);
    let k = m.min(n);
    let mut tau = Vec::with_capacity(k);
    for j in 0..k {
        if deadline::passed() {
            break;
        }
        // LAPACK's larfg: beta = −sign(Re α)·‖(α, x)‖, tau = (beta − α)/beta,
        // v = x / (α − beta).
        let alpha = a[(j, j)];
        let xnorm = (j + 1..m).map(|i| a[(i, j)].norm_sqr()).sum::<f64>().sqrt();
        if xnorm == 0.0 && alpha.im == 0.0 {
            tau.push(C::new(0.0, 0.0));
            continue;
        }
        let norm = alpha.re.hypot(alpha.im).hypot(xnorm);
        let beta = if alpha.re >= 0.0 { -norm } else { norm };
        let t = C::new((beta - alpha.re) / beta, -alpha.im / beta);
        let scale = (alpha - beta).inv();
        for i in j + 1..m {
            a[(i, j)] *= scale;
        }
        a[(j, j)] = C::new(beta, 0.0);
        tau.push(t);
        // Hᴴ applied to the trailing columns.
        for c in j + 1..n {
            let mut w = a[(j, c)];
            for i in j + 1..m {
                w += a[(i, j)].conj() * a[(i, c)];
            }
            let w = w * t.conj();
            a[(j, c)] -= w;
            for i in j + 1..m {
                let v = a[(i, j)];
                a[(i, c)] -= v * w;
            }
        }
    }
    tau
}

/// Which side op(Q) multiplies C from: `cublasSideMode_t`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    /// op(Q) C.
    Left,
    /// C op(Q).
    Right,
}

/// Applies op(Q) of geqrf's k reflectors (columns of `qr`, `tau`) to `c`
/// (LAPACK's orm2r / unm2r). `Op::T` of a real Q is its transpose, which
/// equals Qᴴ.
pub fn ormqr(side: Side, op: Op, qr: &Mat, tau: &[C], c: &mut Mat) {
    let k = tau.len();
    let nq = qr.rows;
    let adjoint = op != Op::N;
    // Q = H(1)⋯H(k): Q C applies H(k) first, Qᴴ C H(1) first; C Q applies
    // H(1) first, C Qᴴ H(k) first.
    let forward = matches!((side, adjoint), (Side::Left, true) | (Side::Right, false));
    let order: Vec<usize> = if forward {
        (0..k).collect()
    } else {
        (0..k).rev().collect()
    };
    for i in order {
        if deadline::passed() {
            return;
        }
        let t = if adjoint { tau[i].conj() } else { tau[i] };
        if t == C::new(0.0, 0.0) {
            continue;
        }
        let v = |r: usize| {
            if r == i {
                C::new(1.0, 0.0)
            } else {
                qr[(r, i)]
            }
        };
        match side {
            Side::Left => {
                for col in 0..c.cols {
                    let mut w = C::new(0.0, 0.0);
                    for r in i..nq {
                        w += v(r).conj() * c[(r, col)];
                    }
                    let w = w * t;
                    for r in i..nq {
                        c[(r, col)] -= v(r) * w;
                    }
                }
            }
            Side::Right => {
                for row in 0..c.rows {
                    let mut w = C::new(0.0, 0.0);
                    for r in i..nq {
                        w += c[(row, r)] * v(r);
                    }
                    let w = w * t;
                    for r in i..nq {
                        c[(row, r)] -= w * v(r).conj();
                    }
                }
            }
        }
    }
}

/// Most sweeps Jacobi's methods run before they report no convergence.
const MAX_SWEEPS: usize = 100;

/// The unitary 2×2 rotation [[upp, upq], [uqp, uqq]] that zeroes the
/// off-diagonal entry `apq` of the Hermitian 2×2 [[app, apq], [conj(apq),
/// aqq]] under Uᴴ A U: the real Jacobi rotation after a phase that makes
/// `apq` real.
fn jacobi_rotation(app: f64, aqq: f64, apq: C) -> [C; 4] {
    let g = apq.norm();
    let phase = apq / g;
    let theta = (aqq - app) / (2.0 * g);
    let t = if theta == 0.0 {
        1.0
    } else {
        theta.signum() / (theta.abs() + theta.hypot(1.0))
    };
    let c = 1.0 / t.hypot(1.0);
    let s = t * c;
    [
        C::new(c, 0.0),
        C::new(s, 0.0),
        -phase.conj() * s,
        phase.conj() * c,
    ]
}

/// Multiplies columns p and q of `a` by the 2×2 `u` from the right.
fn rotate_columns(a: &mut Mat, p: usize, q: usize, u: &[C; 4]) {
    for r in 0..a.rows {
        let (x, y) = (a[(r, p)], a[(r, q)]);
        a[(r, p)] = x * u[0] + y * u[2];
        a[(r, q)] = x * u[1] + y * u[3];
    }
}

/// Eigenvalues (ascending) and, with `vectors`, orthonormal eigenvectors
/// (columns) of the Hermitian matrix whose `uplo` triangle `a` holds, by
/// cyclic Jacobi rotations. Answers None if the off-diagonal part did not
/// vanish in [`MAX_SWEEPS`] sweeps.
pub fn syevd(uplo: Uplo, a: &Mat, vectors: bool) -> Option<(Vec<f64>, Mat)> {
    let n = a.rows;
    let mut h = Mat::zeros(n, n);
    for j in 0..n {
        for i in 0..n {
            let stored = match uplo {
                Uplo::Lower => i >= j,
                Uplo::Upper => i <= j,
            };
            h[(i, j)] = match (i == j, stored) {
                (true, _) => C::new(a[(i, i)].re, 0.0),
                (false, true) => a[(i, j)],
                (false, false) => a[(j, i)].conj(),
            };
        }
    }
    let mut v = Mat::identity(n);
    let norm = h.data.iter().map(|z| z.norm_sqr()).sum::<f64>().sqrt();
    let mut converged = false;
    for _ in 0..MAX_SWEEPS {
        let off = (0..n)
            .flat_map(|j| (0..n).filter(move |&i| i != j).map(move |i| (i, j)))
            .map(|(i, j)| h[(i, j)].norm_sqr())
            .sum::<f64>()
            .sqrt();
        if off <= f64::EPSILON * 1e-2 * norm || off == 0.0 || !off.is_finite() {
            converged = off.is_finite();
            break;
        }
        for p in 0..n {
            if deadline::passed() {
                return None;
            }
            for q in p + 1..n {
                let apq = h[(p, q)];
                if apq.norm() == 0.0 {
                    continue;
                }
                let u = jacobi_rotation(h[(p, p)].re, h[(q, q)].re, apq);
                rotate_columns(&mut h, p, q, &u);
                // Rows: Uᴴ H.
                for c in 0..n {
                    let (x, y) = (h[(p, c)], h[(q, c)]);
                    h[(p, c)] = u[0].conj() * x + u[2].conj() * y;
                    h[(q, c)] = u[1].conj() * x + u[3].conj() * y;
                }
                h[(p, q)] = C::new(0.0, 0.0);
                h[(q, p)] = C::new(0.0, 0.0);
                h[(p, p)].im = 0.0;
                h[(q, q)].im = 0.0;
                if vectors {
                    rotate_columns(&mut v, p, q, &u);
                }
            }
        }
    }
    if !converged {
        return None;
    }
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by(|&x, &y| h[(x, x)].re.total_cmp(&h[(y, y)].re));
    let w = order.iter().map(|&i| h[(i, i)].re).collect();
    let mut vecs = Mat::zeros(n, if vectors { n } else { 0 });
    if vectors {
        for (to, &from) in order.iter().enumerate() {
            vecs.data[to * n..(to + 1) * n].copy_from_slice(v.col(from));
        }
    }
    Some((w, vecs))
}

/// Completes `cols` (orthonormal columns of length m) with columns of the
/// identity made orthogonal to them, until there are `want`.
fn complete_orthonormal(cols: &mut Vec<Vec<C>>, m: usize, want: usize) {
    // A unit vector's part outside the span shrinks as columns are added,
    // and one pass with a fixed bar can run out of candidates (a 64×32
    // matrix's U lacked its last columns). Some e has at least
    // sqrt(missing / m) outside the span, so passes with lower bars always
    // complete the basis; the first bar keeps the best-conditioned ones.
    for bar in [0.5, 0.25, 0.1, 1e-2, 1e-4] {
        for e in 0..m {
            if cols.len() >= want || deadline::passed() {
                return;
            }
            add_unit_vector(cols, m, e, bar);
        }
    }
}

/// Adds the unit vector `e` made orthogonal to `cols`, normalized, if its
/// part outside their span is longer than `bar`.
fn add_unit_vector(cols: &mut Vec<Vec<C>>, m: usize, e: usize, bar: f64) {
    let mut x = vec![C::new(0.0, 0.0); m];
    x[e] = C::new(1.0, 0.0);
    // Two passes of Gram-Schmidt keep x orthogonal to working precision.
    for _ in 0..2 {
        for q in cols.iter() {
            let d: C = q.iter().zip(&x).map(|(q, x)| q.conj() * x).sum();
            for (x, q) in x.iter_mut().zip(q) {
                *x -= d * q;
            }
        }
    }
    let norm = x.iter().map(|z| z.norm_sqr()).sum::<f64>().sqrt();
    if norm > bar {
        cols.push(x.into_iter().map(|z| z / norm).collect());
    }
}

/// A singular value decomposition A = U Σ Vᴴ of an m×n matrix with m ≥ n.
#[derive(Debug, Clone)]
pub struct Svd {
    /// The n singular values, descending.
    pub s: Vec<f64>,
    /// The first left singular vectors, as many as asked for (m: all of U;
    /// n: its thin part).
    pub u: Mat,
    /// Vᴴ, n×n.
    pub vt: Mat,
}

/// The SVD of `a` (m ≥ n) by one-sided Jacobi rotations (Hestenes), which
/// orthogonalize A's columns: A V = U Σ, with the first `u_cols` (≤ m)
/// columns of U. Answers None if it did not converge in [`MAX_SWEEPS`]
/// sweeps.
///
/// U is built only as far as asked: all m columns of a tall matrix's U
/// would be m² entries for an input of m·n, which a request naming a
/// 10⁶×1 matrix turns into terabytes.
pub fn gesvd(a: &Mat, u_cols: usize) -> Option<Svd> {
    let (m, n) = (a.rows, a.cols);
    let mut w = a.clone();
    let mut v = Mat::identity(n);
    let mut converged = n < 2;
    if w.data
        .iter()
        .any(|z| !z.re.is_finite() || !z.im.is_finite())
    {
        return None;
    }
    // A column of a rank-deficient matrix shrinks to rounding noise, which
    // rotations would chase forever: below this squared length a column is
    // zero and pairs with it are done.
    let total: f64 = w.data.iter().map(|z| z.norm_sqr()).sum();
    let zero_column = f64::EPSILON * f64::EPSILON * total * m.max(1) as f64;
    for _ in 0..MAX_SWEEPS {
        let mut rotated = false;
        for p in 0..n {
            if deadline::passed() {
                return None;
            }
            for q in p + 1..n {
                let alpha: f64 = w.col(p).iter().map(|z| z.norm_sqr()).sum();
                let beta: f64 = w.col(q).iter().map(|z| z.norm_sqr()).sum();
                if alpha <= zero_column || beta <= zero_column {
                    continue;
                }
                let gamma: C = w
                    .col(p)
                    .iter()
                    .zip(w.col(q))
                    .map(|(x, y)| x.conj() * y)
                    .sum();
                if gamma.norm() <= f64::EPSILON * (alpha * beta).sqrt() || gamma.norm() == 0.0 {
                    continue;
                }
                rotated = true;
                let u = jacobi_rotation(alpha, beta, gamma);
                rotate_columns(&mut w, p, q, &u);
                rotate_columns(&mut v, p, q, &u);
            }
        }
        if !rotated {
            converged = true;
            break;
        }
    }
    if !converged {
        return None;
    }
    let norms: Vec<f64> = (0..n)
        .map(|j| w.col(j).iter().map(|z| z.norm_sqr()).sum::<f64>().sqrt())
        .collect();
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by(|&x, &y| norms[y].total_cmp(&norms[x]));
    let s: Vec<f64> = order.iter().map(|&j| norms[j]).collect();
    let largest = s.first().copied().unwrap_or(0.0);
    // Columns of a numerically zero singular value are noise: they are
    // replaced by a completion of the others.
    let negligible = largest * f64::EPSILON * m.max(n) as f64;
    let u_cols = u_cols.min(m);
    let mut ucols: Vec<Vec<C>> = Vec::with_capacity(u_cols);
    for &j in order.iter().take(u_cols) {
        if norms[j] <= negligible || norms[j] == 0.0 {
            break;
        }
        ucols.push(w.col(j).iter().map(|z| z / norms[j]).collect());
    }
    complete_orthonormal(&mut ucols, m, u_cols);
    let mut u = Mat::zeros(m, u_cols);
    for (j, col) in ucols.iter().enumerate().take(u_cols) {
        u.data[j * m..(j + 1) * m].copy_from_slice(col);
    }
    let mut vt = Mat::zeros(n, n);
    for (row, &j) in order.iter().enumerate() {
        for c in 0..n {
            vt[(row, c)] = v[(c, j)].conj();
        }
    }
    Some(Svd { s, u, vt })
}
