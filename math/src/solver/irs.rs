//! cuSOLVER's iterative-refinement solvers (IRS): `cusolverDn<t1><t2>gesv`,
//! `<t1><t2>gels` and their expert forms `cusolverDnIRSXgesv`/`IRSXgels`.
//!
//! A factorization in a low precision (`t2`: single, half, bfloat16 or
//! TF32) is refined until the solution has the backward error of the main
//! precision (`t1`), as LAPACK's `dsgesv` does. Here the factors are the
//! exact ones of A rounded to the lowest precision, themselves rounded to
//! it; their arithmetic is double. That keeps the error the low precision
//! brings, which is what decides how many refinement steps are needed
//! and whether refinement converges at all; the tensor cores' own rounding
//! inside a factorization is not modelled.
//!
//! Least squares (`gels`, m ≥ n) refines the augmented system
//! [I A; Aᴴ 0][r; x] = [b; 0] with the low-precision QR (Björck's method):
//! refining the normal equations' solution alone would converge to the
//! least-squares solution of the rounded A, not of A.
//!
//! The GMRES refinement solvers of the expert API run classical
//! refinement: both stop at the same tolerance, so the solution meets the
//! same bound; the iteration count may differ from NVIDIA's.

use num_complex::Complex64 as C;
use rcud_proto::math::solver::{
    Call, PREC_COMPLEX, PREC_R_16BF, PREC_R_16F, PREC_R_32F, PREC_R_TF32, REFINE_NONE,
};

use super::dense::{self, Mat, Op, Side};
use super::{size, write_ints, Place};
use crate::{DeviceMemory, MathError};

/// `niters` when an entry of A does not fit the lowest precision.
const OVERFLOW: i32 = -2;
/// `niters` when the lowest precision's factorization broke down (an
/// exactly zero pivot, or R singular).
const BREAKDOWN: i32 = -3;

/// The most refinement steps one solve runs, whatever the params ask:
/// each costs O(n²) and a history entry, and a client must not make the
/// server loop (and remember) billions of them.
const MAX_ITERS: usize = 10_000;

/// A floating-point format the factorization may be held in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Precision {
    /// IEEE double: no rounding.
    F64,
    /// IEEE single.
    F32,
    /// IEEE half.
    F16,
    /// bfloat16.
    Bf16,
    /// TF32: single's range, 10 explicit mantissa bits.
    Tf32,
}

impl Precision {
    /// From a `cusolverPrecType_t` (real or complex).
    pub fn from_prec_type(prec: i32) -> Precision {
        let real = if prec > PREC_R_TF32 {
            prec - PREC_COMPLEX
        } else {
            prec
        };
        match real {
            PREC_R_32F => Precision::F32,
            PREC_R_16F => Precision::F16,
            PREC_R_16BF => Precision::Bf16,
            PREC_R_TF32 => Precision::Tf32,
            _ => Precision::F64,
        }
    }

    /// The main precision of element type `dtype` (S, D, C, Z).
    pub fn of_dtype(dtype: u8) -> Precision {
        match dtype {
            0 | 2 => Precision::F32,
            _ => Precision::F64,
        }
    }

    /// The spacing of the format's numbers near 1 (machine epsilon).
    pub fn epsilon(self) -> f64 {
        match self {
            Precision::F64 => f64::EPSILON,
            Precision::F32 => f64::from(f32::EPSILON),
            Precision::F16 | Precision::Tf32 => 2f64.powi(-10),
            Precision::Bf16 => 2f64.powi(-7),
        }
    }

    /// `x` rounded to the nearest number of the format (ties to even);
    /// infinite past its range.
    pub fn round_real(self, x: f64) -> f64 {
        match self {
            Precision::F64 => x,
            Precision::F32 => f64::from(x as f32),
            Precision::F16 => half::f16::from_f64(x).to_f64(),
            Precision::Bf16 => half::bf16::from_f64(x).to_f64(),
            Precision::Tf32 => {
                let bits = (x as f32).to_bits();
                if !(x as f32).is_finite() {
                    return f64::from(x as f32);
                }
                // Keep 10 of single's 23 mantissa bits, rounding to even.
                let dropped = 13;
                let half_ulp = (1u32 << (dropped - 1)) - 1 + ((bits >> dropped) & 1);
                let rounded = bits.wrapping_add(half_ulp) & !((1u32 << dropped) - 1);
                f64::from(f32::from_bits(rounded))
            }
        }
    }

    fn round(self, z: C) -> C {
        C::new(self.round_real(z.re), self.round_real(z.im))
    }

    fn round_mat(self, m: &Mat) -> Mat {
        Mat {
            rows: m.rows,
            cols: m.cols,
            data: m.data.iter().map(|&z| self.round(z)).collect(),
        }
    }
}

/// The `cusolverDnIRSParams_t` settings a solve runs with.
#[derive(Debug, Clone, Copy)]
pub struct Settings {
    /// The main precision: A, B and X.
    pub main: Precision,
    /// The precision the factors are held in.
    pub lowest: Precision,
    /// `false` for `CUSOLVER_IRS_REFINE_NONE`: factor and solve only.
    pub refine: bool,
    /// Refinement steps before giving up.
    pub max_iters: usize,
    /// The backward-error tolerance; `None`: √n times the main epsilon.
    pub tol: Option<f64>,
    /// Solve again in the main precision when refinement does not converge.
    pub fallback: bool,
}

/// What a solve produced.
#[derive(Debug, Clone)]
pub struct Solution {
    /// n×nrhs.
    pub x: Mat,
    /// cuSOLVER's `niters`: the refinement steps, or a negative reason.
    pub niters: i32,
    /// `d_info`: 0, or the 1-based index of an exactly zero pivot of the
    /// factorization the solution came from.
    pub info: i32,
    /// Pivots of the factorization used (gesv).
    pub ipiv: Vec<i32>,
    /// A's factors in the main precision, when the solve left them in A
    /// (refinement in the main precision itself, or the fallback); `None`
    /// leaves A as it was, as cuSOLVER does after a converged refinement.
    pub factors: Option<Mat>,
    /// The largest column's ‖B − A X‖∞ before the first step and after
    /// each.
    pub history: Vec<f64>,
}

/// The larger of two norms, NaN if either is: `f64::max` drops a NaN, and
/// a NaN residual would then pass for a converged one.
fn largest(a: f64, b: f64) -> f64 {
    if a.is_nan() || b.is_nan() {
        f64::NAN
    } else {
        a.max(b)
    }
}

/// ‖A‖∞: the largest row sum of absolute values.
fn norm_inf(a: &Mat) -> f64 {
    (0..a.rows)
        .map(|i| (0..a.cols).map(|j| a[(i, j)].norm()).sum::<f64>())
        .fold(0.0, largest)
}

fn column_max(m: &Mat, j: usize) -> f64 {
    (0..m.rows).map(|i| m[(i, j)].norm()).fold(0.0, largest)
}

/// B − A X, in double.
fn residual(a: &Mat, x: &Mat, b: &Mat) -> Mat {
    let mut r = b.clone();
    for c in 0..x.cols {
        for k in 0..a.cols {
            let xk = x[(k, c)];
            if xk == C::new(0.0, 0.0) {
                continue;
            }
            for i in 0..a.rows {
                r[(i, c)] -= a[(i, k)] * xk;
            }
        }
    }
    r
}

fn any_infinite(m: &Mat) -> bool {
    m.data
        .iter()
        .any(|z| !z.re.is_finite() || !z.im.is_finite())
}

/// Solves A X = B (A n×n) by LU in `settings.lowest` refined to the main
/// precision.
pub fn gesv(a: &Mat, b: &Mat, settings: &Settings) -> Solution {
    let n = a.rows;
    let main = settings.main;
    let tol = settings
        .tol
        .unwrap_or_else(|| main.epsilon() * (n.max(1) as f64).sqrt());
    let mut history = Vec::new();
    let niters = match low_lu(a, settings.lowest) {
        Err(code) => code,
        Ok((lu, ipiv)) => {
            let (x, outcome) = refine_lu(a, b, (&lu, &ipiv), settings, tol, &mut history);
            if outcome >= 0 || !settings.fallback {
                let same = settings.lowest == main;
                return Solution {
                    x,
                    niters: outcome,
                    info: 0,
                    ipiv,
                    factors: (same && outcome >= 0).then_some(lu),
                    history,
                };
            }
            outcome
        }
    };
    // The main precision from scratch: cuSOLVER's fallback, also taken
    // when the low-precision factorization broke down.
    let mut lu = a.clone();
    let (ipiv, info) = dense::getrf(&mut lu, true);
    let lu = main.round_mat(&lu);
    let mut x = b.clone();
    if info == 0 {
        dense::getrs(Op::N, &lu, Some(&ipiv), &mut x);
    }
    Solution {
        x: main.round_mat(&x),
        niters,
        info,
        ipiv,
        factors: Some(lu),
        history,
    }
}

/// A's LU with partial pivoting from A rounded to `lowest`, the factors
/// rounded to it too; `Err(niters)` when A does not fit the format or a
/// pivot is exactly zero.
fn low_lu(a: &Mat, lowest: Precision) -> Result<(Mat, Vec<i32>), i32> {
    let mut lu = lowest.round_mat(a);
    if any_infinite(&lu) && !any_infinite(a) {
        return Err(OVERFLOW);
    }
    let (ipiv, info) = dense::getrf(&mut lu, true);
    if info != 0 {
        return Err(BREAKDOWN);
    }
    Ok((lowest.round_mat(&lu), ipiv))
}

/// Classical refinement with the factors `lu`: X and the step count
/// (negative: not converged in `max_iters`).
fn refine_lu(
    a: &Mat,
    b: &Mat,
    (lu, ipiv): (&Mat, &[i32]),
    settings: &Settings,
    tol: f64,
    history: &mut Vec<f64>,
) -> (Mat, i32) {
    let main = settings.main;
    let cte = norm_inf(a) * tol;
    let mut x = b.clone();
    dense::getrs(Op::N, lu, Some(ipiv), &mut x);
    let mut x = main.round_mat(&x);
    for step in 0..=settings.max_iters {
        if dense_deadline() {
            break;
        }
        let r = residual(a, &x, b);
        history.push((0..r.cols).map(|c| column_max(&r, c)).fold(0.0, largest));
        // LAPACK's dsgesv test: ‖r‖∞ ≤ ‖x‖∞ · ‖A‖∞ · tol, column by column.
        let converged = (0..x.cols).all(|c| column_max(&r, c) <= column_max(&x, c) * cte);
        if converged || !settings.refine {
            return (x, step as i32);
        }
        if step == settings.max_iters {
            break;
        }
        let mut d = r;
        dense::getrs(Op::N, lu, Some(ipiv), &mut d);
        for (xi, di) in x.data.iter_mut().zip(&d.data) {
            *xi = main.round(*xi + *di);
        }
        if any_infinite(&x) {
            return (x, BREAKDOWN);
        }
    }
    (x, -(settings.max_iters as i32))
}

fn dense_deadline() -> bool {
    crate::deadline::passed()
}

/// Householder QR's thin factors: Q (m×n, orthonormal columns) and R (n×n
/// upper triangular), or `None` when R has an exactly zero diagonal entry
/// (A rank deficient).
fn thin_qr(a: &Mat) -> (Mat, Mat, Option<usize>) {
    let (m, n) = (a.rows, a.cols);
    let mut qr = a.clone();
    let tau = dense::geqrf(&mut qr);
    let mut q = Mat::zeros(m, n);
    for j in 0..n {
        q[(j, j)] = C::new(1.0, 0.0);
    }
    dense::ormqr(Side::Left, Op::N, &qr, &tau, &mut q);
    let mut r = Mat::zeros(n, n);
    for j in 0..n {
        for i in 0..=j {
            r[(i, j)] = qr[(i, j)];
        }
    }
    let zero = (0..n).find(|&i| r[(i, i)] == C::new(0.0, 0.0));
    (q, r, zero)
}

/// Solves R y = c (R upper triangular) in place.
fn upper_solve(r: &Mat, c: &mut [C]) {
    for i in (0..r.rows).rev() {
        let mut s = c[i];
        for k in i + 1..r.cols {
            s -= r[(i, k)] * c[k];
        }
        c[i] = s / r[(i, i)];
    }
}

/// Solves Rᴴ y = c in place.
fn upper_adjoint_solve(r: &Mat, c: &mut [C]) {
    for i in 0..r.rows {
        let mut s = c[i];
        for k in 0..i {
            s -= r[(k, i)].conj() * c[k];
        }
        c[i] = s / r[(i, i)].conj();
    }
}

/// Qᴴ v for the thin Q.
fn q_adjoint(q: &Mat, v: &[C]) -> Vec<C> {
    (0..q.cols)
        .map(|j| (0..q.rows).map(|i| q[(i, j)].conj() * v[i]).sum())
        .collect()
}

/// Least squares min ‖A X − B‖ (A m×n, m ≥ n, full rank) by QR in
/// `settings.lowest` and refinement of the augmented system in the main
/// precision.
pub fn gels(a: &Mat, b: &Mat, settings: &Settings) -> Solution {
    let (m, n) = (a.rows, a.cols);
    let main = settings.main;
    let tol = settings
        .tol
        .unwrap_or_else(|| main.epsilon() * (n.max(1) as f64).sqrt());
    let same = settings.lowest == main;
    let low = settings.lowest.round_mat(a);
    let mut niters = OVERFLOW;
    let mut history = Vec::new();
    if !any_infinite(&low) || any_infinite(a) {
        let (q, r, zero) = thin_qr(&low);
        let (q, r) = (settings.lowest.round_mat(&q), settings.lowest.round_mat(&r));
        niters = BREAKDOWN;
        if zero.is_none() {
            let (x, outcome) = refine_least_squares(a, b, &q, &r, settings, tol, &mut history);
            if outcome >= 0 || !settings.fallback {
                let factors = (same && outcome >= 0).then(|| {
                    let mut qr = a.clone();
                    dense::geqrf(&mut qr);
                    main.round_mat(&qr)
                });
                return Solution {
                    x,
                    niters: outcome,
                    info: 0,
                    ipiv: Vec::new(),
                    factors,
                    history,
                };
            }
            niters = outcome;
        }
    }
    // The main precision from scratch: R x = Qᴴ b.
    let (q, r, zero) = thin_qr(a);
    let mut x = Mat::zeros(n, b.cols);
    if zero.is_none() {
        for c in 0..b.cols {
            let mut y = q_adjoint(&q, &b.data[c * m..(c + 1) * m]);
            upper_solve(&r, &mut y);
            for i in 0..n {
                x[(i, c)] = y[i];
            }
        }
    }
    let mut qr = a.clone();
    dense::geqrf(&mut qr);
    Solution {
        x: main.round_mat(&x),
        niters,
        info: zero.map_or(0, |i| i as i32 + 1),
        ipiv: Vec::new(),
        factors: Some(main.round_mat(&qr)),
        history,
    }
}

/// Björck's refinement of [I A; Aᴴ 0][r; x] = [b; 0], one column of B at a
/// time, with the factors Q R ≈ A. Answers X and the step count (negative:
/// not converged in `max_iters`).
fn refine_least_squares(
    a: &Mat,
    b: &Mat,
    q: &Mat,
    r: &Mat,
    settings: &Settings,
    tol: f64,
    history: &mut Vec<f64>,
) -> (Mat, i32) {
    let (m, n) = (a.rows, a.cols);
    let main = settings.main;
    let norm_a = norm_inf(a);
    let mut x = Mat::zeros(n, b.cols);
    let mut most_steps = 0i32;
    let mut converged = true;
    for c in 0..b.cols {
        let bc = &b.data[c * m..(c + 1) * m];
        let mut xc = vec![C::new(0.0, 0.0); n];
        let mut rc = vec![C::new(0.0, 0.0); m];
        let mut steps = None;
        for step in 0..=settings.max_iters + 1 {
            if dense_deadline() {
                break;
            }
            // f = b − r − A x, g = −Aᴴ r, in double.
            let mut f: Vec<C> = (0..m).map(|i| bc[i] - rc[i]).collect();
            for k in 0..n {
                for i in 0..m {
                    f[i] -= a[(i, k)] * xc[k];
                }
            }
            let g: Vec<C> = (0..n)
                .map(|k| -(0..m).map(|i| a[(i, k)].conj() * rc[i]).sum::<C>())
                .collect();
            let max = |v: &[C]| v.iter().map(|z| z.norm()).fold(0.0, largest);
            // Step 0 is the first solve from x = 0, r = 0.
            if step > 0 {
                if c == 0 {
                    history.push(max(&f));
                }
                let small_f = max(&f) <= tol * (norm_a * max(&xc) + max(&rc) + max(bc));
                let small_g = max(&g) <= tol * norm_a * max(&rc).max(f64::MIN_POSITIVE);
                if small_f && small_g || !settings.refine {
                    steps = Some(step as i32 - 1);
                    break;
                }
                if step > settings.max_iters {
                    break;
                }
            }
            // h = R⁻ᴴ g; dx = R⁻¹(Qᴴ f − h); dr = f − Q(Qᴴ f − h).
            let mut h = g;
            upper_adjoint_solve(r, &mut h);
            let qf = q_adjoint(q, &f);
            let mut t: Vec<C> = qf.iter().zip(&h).map(|(a, b)| a - b).collect();
            let mut dr = f;
            for (j, tj) in t.iter().enumerate() {
                for (i, d) in dr.iter_mut().enumerate() {
                    *d -= q[(i, j)] * tj;
                }
            }
            upper_solve(r, &mut t);
            let before = max(&xc);
            for (xk, dk) in xc.iter_mut().zip(&t) {
                *xk = main.round(*xk + *dk);
            }
            for (ri, di) in rc.iter_mut().zip(&dr) {
                *ri = main.round(*ri + *di);
            }
            // A correction below the main precision's rounding of x ends
            // the refinement: the backward error cannot get smaller.
            if step > 0 && max(&t) <= main.epsilon() * before {
                steps = Some(step as i32);
                break;
            }
            if xc.iter().any(|z| !z.re.is_finite() || !z.im.is_finite()) {
                break;
            }
        }
        for i in 0..n {
            x[(i, c)] = xc[i];
        }
        match steps {
            Some(s) => most_steps = most_steps.max(s),
            None => converged = false,
        }
    }
    if converged {
        (x, most_steps)
    } else {
        (x, -(settings.max_iters as i32))
    }
}

/// Runs a checked [`Call::Irs`]: reads A and B, solves, writes X, the
/// pivots, `d_info` and (when the solve left factors there) A. Answers
/// `niters` and, when asked, the residual history.
pub(super) fn run(memory: &mut dyn DeviceMemory, call: &Call) -> Result<Vec<u8>, MathError> {
    let Call::Irs {
        dtype,
        lowest,
        gels: least_squares,
        m,
        n,
        nrhs,
        a,
        lda,
        ipiv,
        b,
        ldb,
        x,
        ldx,
        info,
        refine,
        max_iters,
        tol,
        fallback,
        history,
        ..
    } = *call
    else {
        return Ok(Vec::new());
    };
    let (m, n, nrhs) = (size(m), size(n), size(nrhs));
    let settings = Settings {
        main: Precision::of_dtype(dtype),
        lowest: Precision::from_prec_type(lowest),
        refine: refine != REFINE_NONE,
        max_iters: size(max_iters).min(MAX_ITERS),
        tol: (tol > 0.0).then_some(tol),
        fallback: fallback != 0,
    };
    if n == 0 || nrhs == 0 {
        write_ints(memory, info, &[0])?;
        return Ok(answer(0, &[], history != 0));
    }
    let mat_a = Place::new(a, lda, dtype).read(memory, m, n)?;
    let mat_b = Place::new(b, ldb, dtype).read(memory, m, nrhs)?;
    let solution = if least_squares == 1 {
        gels(&mat_a, &mat_b, &settings)
    } else {
        gesv(&mat_a, &mat_b, &settings)
    };
    if memory.expired() || crate::deadline::passed() {
        return Err(MathError::Timeout);
    }
    if solution.info == 0 {
        Place::new(x, ldx, dtype).write(memory, &solution.x, nrhs)?;
    }
    if let Some(factors) = &solution.factors {
        Place::new(a, lda, dtype).write(memory, factors, n)?;
    }
    if ipiv != 0 && !solution.ipiv.is_empty() {
        write_ints(memory, ipiv, &solution.ipiv)?;
    }
    write_ints(memory, info, &[solution.info])?;
    Ok(answer(solution.niters, &solution.history, history != 0))
}

fn answer(niters: i32, history: &[f64], with_history: bool) -> Vec<u8> {
    let mut out = niters.to_le_bytes().to_vec();
    if with_history {
        for h in history {
            out.extend_from_slice(&h.to_le_bytes());
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A deterministic matrix of entries in [-0.5, 0.5) (complex when asked).
    fn random(rows: usize, cols: usize, seed: u64, complex: bool) -> Mat {
        let mut state = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let mut next = move || {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (state >> 11) as f64 / (1u64 << 53) as f64 - 0.5
        };
        let mut m = Mat::zeros(rows, cols);
        for z in &mut m.data {
            *z = C::new(next(), if complex { next() } else { 0.0 });
        }
        m
    }

    fn settings(main: Precision, lowest: Precision) -> Settings {
        Settings {
            main,
            lowest,
            refine: true,
            max_iters: 50,
            tol: None,
            fallback: true,
        }
    }

    fn product(a: &Mat, x: &Mat) -> Mat {
        let mut b = Mat::zeros(a.rows, x.cols);
        for c in 0..x.cols {
            for k in 0..a.cols {
                for i in 0..a.rows {
                    b[(i, c)] += a[(i, k)] * x[(k, c)];
                }
            }
        }
        b
    }

    fn max_error(x: &Mat, y: &Mat) -> f64 {
        x.data
            .iter()
            .zip(&y.data)
            .map(|(a, b)| (a - b).norm())
            .fold(0.0, f64::max)
    }

    /// A diagonally dominant n×n matrix: well conditioned.
    fn dominant(n: usize, seed: u64, complex: bool) -> Mat {
        let mut a = random(n, n, seed, complex);
        for i in 0..n {
            a[(i, i)] += C::new(n as f64, 0.0);
        }
        a
    }

    #[test]
    fn tf32_keeps_ten_mantissa_bits_rounding_to_even() {
        let t = Precision::Tf32;
        assert_eq!(t.round_real(1.0), 1.0);
        // 1 + 2⁻¹⁰ is representable; 1 + 2⁻¹¹ is a tie and goes to even (1).
        assert_eq!(t.round_real(1.0 + 2f64.powi(-10)), 1.0 + 2f64.powi(-10));
        assert_eq!(t.round_real(1.0 + 2f64.powi(-11)), 1.0);
        assert_eq!(
            t.round_real(1.0 + 3.0 * 2f64.powi(-11)),
            1.0 + 2.0 * 2f64.powi(-10)
        );
        assert_eq!(t.round_real(-3.0), -3.0);
        // Single's range, not half's.
        let big = t.round_real(1e30);
        assert!(big.is_finite() && ((big - 1e30) / 1e30).abs() <= 2f64.powi(-11));
        assert!(Precision::F16.round_real(1e5).is_infinite());
        assert_eq!(Precision::Bf16.round_real(1.0 + 2f64.powi(-8)), 1.0);
    }

    #[test]
    fn gesv_reaches_double_accuracy_from_every_lower_precision() {
        for complex in [false, true] {
            let a = dominant(24, 7, complex);
            let x_ref = random(24, 3, 8, complex);
            let b = product(&a, &x_ref);
            for lowest in [
                Precision::F64,
                Precision::F32,
                Precision::F16,
                Precision::Bf16,
                Precision::Tf32,
            ] {
                let s = gesv(&a, &b, &settings(Precision::F64, lowest));
                assert!(s.niters >= 0, "{lowest:?}: niters {}", s.niters);
                assert_eq!(s.info, 0);
                let err = max_error(&s.x, &x_ref);
                assert!(err < 1e-12, "{lowest:?} complex {complex}: error {err}");
                // Lower precisions need more steps than double's none.
                if lowest == Precision::F64 {
                    assert!(s.niters <= 1, "double needs no refinement: {}", s.niters);
                    assert!(s.factors.is_some(), "DDgesv leaves its LU in A");
                } else {
                    assert!(s.niters >= 1, "{lowest:?} refines");
                    assert!(s.factors.is_none(), "a converged IRS leaves A alone");
                }
                assert_eq!(s.history.len(), s.niters as usize + 1);
            }
        }
    }

    #[test]
    fn single_main_precision_solves_to_single_accuracy() {
        let a = dominant(16, 3, false);
        let x_ref = random(16, 1, 4, false);
        let b = Precision::F32.round_mat(&product(&a, &x_ref));
        let a = Precision::F32.round_mat(&a);
        let s = gesv(&a, &b, &settings(Precision::F32, Precision::F16));
        assert!(s.niters >= 1);
        assert!(max_error(&s.x, &x_ref) < 1e-5);
        // X is stored in single.
        assert!(s.x.data.iter().all(|z| f64::from(z.re as f32) == z.re));
    }

    #[test]
    fn an_entry_past_half_range_falls_back_to_the_main_precision() {
        let mut a = dominant(8, 11, false);
        a[(0, 0)] = C::new(1e6, 0.0);
        let x_ref = random(8, 1, 12, false);
        let b = product(&a, &x_ref);
        let s = gesv(&a, &b, &settings(Precision::F64, Precision::F16));
        assert_eq!(s.niters, OVERFLOW);
        assert!(max_error(&s.x, &x_ref) < 1e-12);
        assert!(s.factors.is_some(), "the fallback leaves its LU in A");
    }

    #[test]
    fn ill_conditioned_systems_stop_after_max_iters_and_fall_back() {
        // Hilbert's matrix: far beyond what bfloat16 factors can refine.
        let n = 8;
        let mut a = Mat::zeros(n, n);
        for i in 0..n {
            for j in 0..n {
                a[(i, j)] = C::new(1.0 / (i + j + 1) as f64, 0.0);
            }
        }
        let x_ref = random(n, 1, 5, false);
        let b = product(&a, &x_ref);
        let mut st = settings(Precision::F64, Precision::Bf16);
        st.max_iters = 10;
        let s = gesv(&a, &b, &st);
        assert!(s.niters < 0, "niters {}", s.niters);
        // The fallback's residual is double's.
        let r = residual(&a, &s.x, &b);
        assert!(column_max(&r, 0) < 1e-12);
        st.fallback = false;
        let s = gesv(&a, &b, &st);
        assert_eq!(s.niters, -10);
        assert!(s.factors.is_none());
    }

    #[test]
    fn a_singular_matrix_reports_its_zero_pivot() {
        let mut a = dominant(5, 2, false);
        for j in 0..5 {
            a[(3, j)] = C::new(0.0, 0.0);
        }
        let b = random(5, 1, 1, false);
        let s = gesv(&a, &b, &settings(Precision::F64, Precision::F32));
        assert!(s.info > 0, "info {}", s.info);
        assert!(s.niters < 0);
    }

    /// The least-squares solution by the normal equations in double
    /// (accurate enough for these well-conditioned matrices).
    fn normal_equations(a: &Mat, b: &Mat) -> Mat {
        let n = a.cols;
        let mut ata = Mat::zeros(n, n);
        let mut atb = Mat::zeros(n, b.cols);
        for i in 0..n {
            for j in 0..n {
                ata[(i, j)] = (0..a.rows).map(|k| a[(k, i)].conj() * a[(k, j)]).sum();
            }
            for c in 0..b.cols {
                atb[(i, c)] = (0..a.rows).map(|k| a[(k, i)].conj() * b[(k, c)]).sum();
            }
        }
        let (ipiv, info) = dense::getrf(&mut ata, true);
        assert_eq!(info, 0);
        dense::getrs(Op::N, &ata, Some(&ipiv), &mut atb);
        atb
    }

    #[test]
    fn gels_refines_to_the_least_squares_solution_of_a_itself() {
        for complex in [false, true] {
            let a = random(37, 32, 21, complex);
            let b = random(37, 2, 22, complex);
            let reference = normal_equations(&a, &b);
            let scale = reference.data.iter().map(|z| z.norm()).fold(0.0, f64::max);
            for lowest in [
                Precision::F64,
                Precision::F32,
                Precision::F16,
                Precision::Tf32,
            ] {
                let s = gels(&a, &b, &settings(Precision::F64, lowest));
                assert!(
                    s.niters >= 0,
                    "{lowest:?} complex {complex}: niters {}",
                    s.niters
                );
                let err = max_error(&s.x, &reference) / scale;
                assert!(
                    err < 1e-10,
                    "{lowest:?} complex {complex}: relative error {err}"
                );
                if lowest != Precision::F64 {
                    assert!(s.niters >= 2, "{lowest:?} refines: {}", s.niters);
                }
            }
        }
    }

    #[test]
    fn gels_of_a_rank_deficient_matrix_reports_it() {
        let mut a = random(6, 3, 1, false);
        for i in 0..6 {
            a[(i, 2)] = C::new(0.0, 0.0);
        }
        let b = random(6, 1, 2, false);
        let s = gels(&a, &b, &settings(Precision::F64, Precision::F32));
        assert!(s.niters < 0);
        assert_eq!(s.info, 3);
    }

    #[test]
    fn gels_in_single_precision_converges_from_every_lower_precision() {
        for complex in [false, true] {
            let a = Precision::F32.round_mat(&random(37, 32, 31, complex));
            let b = Precision::F32.round_mat(&random(37, 2, 32, complex));
            let reference = normal_equations(&a, &b);
            let scale = reference.data.iter().map(|z| z.norm()).fold(0.0, f64::max);
            for lowest in [
                Precision::F32,
                Precision::F16,
                Precision::Bf16,
                Precision::Tf32,
            ] {
                let s = gels(&a, &b, &settings(Precision::F32, lowest));
                let err = max_error(&s.x, &reference) / scale;
                assert!(
                    s.niters >= 0,
                    "{lowest:?} complex {complex}: niters {} error {err}",
                    s.niters
                );
                assert!(
                    err < 1e-5,
                    "{lowest:?} complex {complex}: relative error {err}"
                );
            }
        }
    }
}
