//! The general (non-symmetric, non-Hermitian) eigenvalue problem:
//! `cusolverDnXgeev`, LAPACK's geev.
//!
//! A is reduced to upper Hessenberg form by Householder reflections, then
//! to Schur form T = Zᴴ A Z by the shifted QR algorithm (Wilkinson shifts,
//! Givens rotations over the whole matrix so that T and Z come out as
//! well). Eigenvectors are those of the triangular T by back substitution
//! (right) or forward substitution (left), mapped back through Z, as
//! LAPACK's trevc does, and normalized as geev documents: Euclidean norm 1,
//! largest component real.
//!
//! Everything runs in complex double precision. A real matrix's spectrum
//! then comes out closed under conjugation only up to rounding, so
//! [`real_form`] pairs each eigenvalue with its conjugate and answers
//! LAPACK's real conventions: exact conjugate pairs, the one with positive
//! imaginary part first, and real eigenvectors, a pair's as the real and
//! imaginary parts of the first one's.

use num_complex::Complex64 as C;

use super::dense::Mat;
use crate::deadline;

/// Iterations allowed per eigenvalue, LAPACK's ITMAX factor.
const ITERATIONS_PER_EIGENVALUE: usize = 30;

/// Eigenvalues and, when asked for, eigenvectors (one per column, in the
/// eigenvalues' order).
#[derive(Debug, Clone)]
pub struct Eigen {
    /// The eigenvalues, in the order the Schur form gives them.
    pub values: Vec<C>,
    /// Right eigenvectors: A v = λ v.
    pub right: Option<Mat>,
    /// Left eigenvectors: uᴴ A = λ uᴴ.
    pub left: Option<Mat>,
}

/// geev: the eigenvalues of the square `a`, with right and left
/// eigenvectors when asked for. `Err(i)` is LAPACK's `info = i`: the QR
/// algorithm did not converge, and only the eigenvalues after the first
/// `i` would have.
pub fn geev(a: &Mat, left: bool, right: bool) -> Result<Eigen, usize> {
    let n = a.rows;
    if a.data
        .iter()
        .any(|z| !z.re.is_finite() || !z.im.is_finite())
    {
        return Err(n);
    }
    let mut h = a.clone();
    let mut z = hessenberg(&mut h);
    schur(&mut h, &mut z)?;
    let values = (0..n).map(|i| h[(i, i)]).collect();
    let norm = h.data.iter().map(|z| z.norm()).fold(0.0, f64::max);
    // Pivots of the substitutions are kept at least this far from zero, so
    // repeated eigenvalues give finite vectors (LAPACK's SMIN); never so
    // small that its square, which complex division forms, underflows.
    let smin = (norm * f64::EPSILON).max(f64::MIN_POSITIVE.sqrt());
    Ok(Eigen {
        values,
        right: right.then(|| right_vectors(&h, &z, smin)),
        left: left.then(|| left_vectors(&h, &z, smin)),
    })
}

/// Reduces `h` to upper Hessenberg form in place by Hermitian Householder
/// reflections P = I − 2 u uᴴ / uᴴu, and answers the unitary Q with
/// A = Q H Qᴴ.
fn hessenberg(h: &mut Mat) -> Mat {
    let n = h.rows;
    let mut q = Mat::identity(n);
    for k in 0..n.saturating_sub(2) {
        if deadline::passed() {
            break;
        }
        let x: Vec<C> = (k + 1..n).map(|i| h[(i, k)]).collect();
        let tail: f64 = x[1..].iter().map(|z| z.norm_sqr()).sum();
        if tail == 0.0 {
            continue;
        }
        let norm = (x[0].norm_sqr() + tail).sqrt();
        let phase = if x[0] == C::new(0.0, 0.0) {
            C::new(1.0, 0.0)
        } else {
            x[0] / x[0].norm()
        };
        let mut u = x;
        u[0] += phase * norm;
        let unorm: f64 = u.iter().map(|z| z.norm_sqr()).sum();
        let scale = 2.0 / unorm;
        // P from the left on rows k+1.., from the right on columns k+1..
        // of H and of Q.
        for j in 0..n {
            let dot: C = (0..u.len()).map(|i| u[i].conj() * h[(k + 1 + i, j)]).sum();
            let f = dot * scale;
            for (i, ui) in u.iter().enumerate() {
                h[(k + 1 + i, j)] -= ui * f;
            }
        }
        for m in [&mut *h, &mut q] {
            for i in 0..n {
                let dot: C = (0..u.len()).map(|j| m[(i, k + 1 + j)] * u[j]).sum();
                let f = dot * scale;
                for (j, uj) in u.iter().enumerate() {
                    m[(i, k + 1 + j)] -= f * uj.conj();
                }
            }
        }
        for i in k + 2..n {
            h[(i, k)] = C::new(0.0, 0.0);
        }
    }
    q
}

/// A plane rotation G = [[c, s], [−s̄, c]] (c real) with G [f; g] = [r; 0].
#[derive(Clone, Copy)]
struct Givens {
    c: f64,
    s: C,
}

impl Givens {
    fn zeroing(f: C, g: C) -> Self {
        let r = f.norm().hypot(g.norm());
        if r == 0.0 {
            Self {
                c: 1.0,
                s: C::new(0.0, 0.0),
            }
        } else if f.norm() == 0.0 {
            Self {
                c: 0.0,
                s: g.conj() / g.norm(),
            }
        } else {
            let c = f.norm() / r;
            Self {
                c,
                s: f / f.norm() * g.conj() / r,
            }
        }
    }

    /// Rows `k`, `k+1` of `m`, columns `cols`: G from the left.
    fn rows(self, m: &mut Mat, k: usize, cols: std::ops::Range<usize>) {
        for j in cols {
            let (x, y) = (m[(k, j)], m[(k + 1, j)]);
            m[(k, j)] = x * self.c + self.s * y;
            m[(k + 1, j)] = -self.s.conj() * x + y * self.c;
        }
    }

    /// Columns `k`, `k+1` of `m`, rows `rows`: Gᴴ from the right.
    fn cols(self, m: &mut Mat, k: usize, rows: std::ops::Range<usize>) {
        for i in rows {
            let (x, y) = (m[(i, k)], m[(i, k + 1)]);
            m[(i, k)] = x * self.c + y * self.s.conj();
            m[(i, k + 1)] = -x * self.s + y * self.c;
        }
    }
}

/// The shifted QR algorithm on the Hessenberg `h` (in place, to upper
/// triangular T), accumulating its rotations into `z`.
fn schur(h: &mut Mat, z: &mut Mat) -> Result<(), usize> {
    let n = h.rows;
    let zero = C::new(0.0, 0.0);
    let mut hi = n;
    let mut iterations = 0;
    while hi > 1 {
        // The active block is lo..hi: find where the subdiagonal is
        // negligible.
        let mut lo = hi - 1;
        while lo > 0 {
            let scale = h[(lo - 1, lo - 1)].norm() + h[(lo, lo)].norm();
            if h[(lo, lo - 1)].norm() <= f64::EPSILON * scale || h[(lo, lo - 1)] == zero {
                h[(lo, lo - 1)] = zero;
                break;
            }
            lo -= 1;
        }
        if lo == hi - 1 {
            hi -= 1;
            iterations = 0;
            continue;
        }
        iterations += 1;
        if iterations > ITERATIONS_PER_EIGENVALUE * n.max(10) || deadline::passed() {
            return Err(hi);
        }
        let shift = if iterations % 10 == 0 {
            // An exceptional shift breaks cycles the Wilkinson shift can
            // fall into.
            h[(hi - 1, hi - 1)] + C::new(0.75 * h[(hi - 1, hi - 2)].norm(), 0.0)
        } else {
            wilkinson(
                h[(hi - 2, hi - 2)],
                h[(hi - 2, hi - 1)],
                h[(hi - 1, hi - 2)],
                h[(hi - 1, hi - 1)],
            )
        };
        // One explicit QR step on the block: H − μI = QR, H ← RQ + μI,
        // with the rotations applied to whole rows and columns so that
        // the rest of T and Z follow.
        for i in lo..hi {
            h[(i, i)] -= shift;
        }
        let mut rotations = Vec::with_capacity(hi - lo - 1);
        for k in lo..hi - 1 {
            let g = Givens::zeroing(h[(k, k)], h[(k + 1, k)]);
            g.rows(h, k, k..n);
            h[(k + 1, k)] = zero;
            rotations.push(g);
        }
        for (k, g) in (lo..).zip(rotations) {
            g.cols(h, k, 0..(k + 2).min(hi));
            g.cols(z, k, 0..n);
        }
        for i in lo..hi {
            h[(i, i)] += shift;
        }
    }
    Ok(())
}

/// The eigenvalue of [[a, b], [c, d]] closer to d.
fn wilkinson(a: C, b: C, c: C, d: C) -> C {
    let half = (a - d) * 0.5;
    let root = (half * half + b * c).sqrt();
    // (a + d)/2 ± root, written around d.
    let (one, two) = (d + half + root, d + half - root);
    if (one - d).norm() <= (two - d).norm() {
        one
    } else {
        two
    }
}

fn pivot(d: C, smin: f64) -> C {
    if d.norm() < smin {
        C::new(smin, 0.0)
    } else {
        d
    }
}

/// Keeps a substitution's growing solution (a long chain of near-equal
/// eigenvalues multiplies it by 1/SMIN per step) from overflowing: only
/// its direction matters.
fn rescale(x: &mut [C], i: usize) {
    const BIG: f64 = 1e100;
    let size = x[i].norm();
    if size > BIG {
        for v in x.iter_mut() {
            *v /= size;
        }
    }
}

/// Right eigenvectors of A = Z T Zᴴ: T x = λ x by back substitution, then
/// v = Z x.
fn right_vectors(t: &Mat, z: &Mat, smin: f64) -> Mat {
    let n = t.rows;
    let mut out = Mat::zeros(n, n);
    for k in 0..n {
        if deadline::passed() {
            break;
        }
        let lambda = t[(k, k)];
        let mut x = vec![C::new(0.0, 0.0); k + 1];
        x[k] = C::new(1.0, 0.0);
        for i in (0..k).rev() {
            let sum: C = (i + 1..=k).map(|j| t[(i, j)] * x[j]).sum();
            x[i] = -sum / pivot(t[(i, i)] - lambda, smin);
            rescale(&mut x, i);
        }
        let v: Vec<C> = (0..n)
            .map(|i| (0..=k).map(|j| z[(i, j)] * x[j]).sum())
            .collect();
        store_normalized(&mut out, k, v);
    }
    out
}

/// Left eigenvectors: yᴴ T = λ yᴴ by forward substitution, then u = Z y.
fn left_vectors(t: &Mat, z: &Mat, smin: f64) -> Mat {
    let n = t.rows;
    let mut out = Mat::zeros(n, n);
    for k in 0..n {
        if deadline::passed() {
            break;
        }
        let lambda = t[(k, k)];
        // w = ȳ: wᵀ T = λ wᵀ.
        let mut w = vec![C::new(0.0, 0.0); n];
        w[k] = C::new(1.0, 0.0);
        for i in k + 1..n {
            let sum: C = (k..i).map(|j| w[j] * t[(j, i)]).sum();
            w[i] = -sum / pivot(t[(i, i)] - lambda, smin);
            rescale(&mut w, i);
        }
        let u: Vec<C> = (0..n)
            .map(|i| (k..n).map(|j| z[(i, j)] * w[j].conj()).sum())
            .collect();
        store_normalized(&mut out, k, u);
    }
    out
}

/// Scales `v` to Euclidean norm 1 with its largest component real and
/// positive, and stores it as column `k` of `out`.
fn store_normalized(out: &mut Mat, k: usize, mut v: Vec<C>) {
    normalize(&mut v);
    for (i, x) in v.into_iter().enumerate() {
        out[(i, k)] = x;
    }
}

fn normalize(v: &mut [C]) {
    let norm = v.iter().map(|z| z.norm_sqr()).sum::<f64>().sqrt();
    if norm == 0.0 || !norm.is_finite() {
        return;
    }
    let Some(big) = (0..v.len()).max_by(|&a, &b| v[a].norm_sqr().total_cmp(&v[b].norm_sqr()))
    else {
        return;
    };
    let phase = v[big].conj() / v[big].norm() / norm;
    for x in v.iter_mut() {
        *x *= phase;
    }
    v[big].im = 0.0;
}

/// LAPACK's real form of a real matrix's eigensystem (see the module
/// comment): eigenvalues in order with each conjugate pair adjacent,
/// positive imaginary part first; real eigenvectors, a pair's columns j and
/// j+1 the real and imaginary parts of the vector of eigenvalue j.
#[derive(Debug, Clone)]
pub struct RealEigen {
    /// The eigenvalues.
    pub values: Vec<C>,
    /// Right eigenvectors in LAPACK's real storage.
    pub right: Option<Mat>,
    /// Left eigenvectors in LAPACK's real storage.
    pub left: Option<Mat>,
}

/// Pairs a real matrix's computed eigenvalues into exact conjugate pairs
/// and real eigenvalues, with real eigenvectors.
pub fn real_form(eigen: &Eigen) -> RealEigen {
    let n = eigen.values.len();
    let values = &eigen.values;
    let mut used = vec![false; n];
    // (position in the Schur order, its partner if a complex pair).
    let mut order: Vec<(usize, Option<usize>)> = Vec::with_capacity(n);
    for k in 0..n {
        if used[k] {
            continue;
        }
        used[k] = true;
        let im = values[k].im;
        let partner = (im != 0.0)
            .then(|| {
                (0..n)
                    .filter(|&p| !used[p] && values[p].im * im < 0.0)
                    .map(|p| (p, (values[p] - values[k].conj()).norm()))
                    .min_by(|a, b| a.1.total_cmp(&b.1))
            })
            .flatten()
            // A partner must be much closer to λ̄ than λ is to the real
            // axis; otherwise λ is a real eigenvalue that rounding moved
            // off it.
            .filter(|&(_, distance)| distance <= 0.5 * im.abs())
            .map(|(p, _)| p);
        if let Some(p) = partner {
            used[p] = true;
            let (pos, neg) = if im > 0.0 { (k, p) } else { (p, k) };
            order.push((pos, Some(neg)));
        } else {
            order.push((k, None));
        }
    }
    let mut out_values = Vec::with_capacity(n);
    for &(k, partner) in &order {
        match partner {
            None => out_values.push(C::new(values[k].re, 0.0)),
            Some(p) => {
                let re = 0.5 * (values[k].re + values[p].re);
                let im = 0.5 * (values[k].im.abs() + values[p].im.abs());
                out_values.push(C::new(re, im));
                out_values.push(C::new(re, -im));
            }
        }
    }
    let real_vectors = |vectors: &Mat| {
        let mut out = Mat::zeros(n, n);
        let mut col = 0;
        for &(k, partner) in &order {
            let v: Vec<C> = (0..n).map(|i| vectors[(i, k)]).collect();
            if partner.is_some() {
                for (i, x) in v.iter().enumerate() {
                    out[(i, col)] = C::new(x.re, 0.0);
                    out[(i, col + 1)] = C::new(x.im, 0.0);
                }
                col += 2;
            } else {
                // A real eigenvalue of a real matrix: the real part of any
                // of its eigenvectors is one too (or the imaginary part,
                // if that is all there is).
                let re_norm: f64 = v.iter().map(|x| x.re * x.re).sum();
                let im_norm: f64 = v.iter().map(|x| x.im * x.im).sum();
                let mut r: Vec<C> = v
                    .iter()
                    .map(|x| C::new(if re_norm >= im_norm { x.re } else { x.im }, 0.0))
                    .collect();
                normalize(&mut r);
                for (i, x) in r.into_iter().enumerate() {
                    out[(i, col)] = C::new(x.re, 0.0);
                }
                col += 1;
            }
        }
        out
    };
    RealEigen {
        values: out_values,
        right: eigen.right.as_ref().map(real_vectors),
        left: eigen.left.as_ref().map(real_vectors),
    }
}
