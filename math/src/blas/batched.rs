//! cuBLAS's batched routines beyond GEMM and LU: `trsmBatched`,
//! `gemvBatched` / `gemvStridedBatched`, `geqrfBatched` and `gelsBatched`.
//!
//! One wire call carries the whole batch. Each matrix runs through the
//! single-matrix kernel (level 2/3 for trsm and gemv, the solver module's
//! LAPACK-style geqrf/ormqr for the QR routines); the pointer arrays are
//! read from device memory, and every matrix they name is bounds checked
//! as it is read.

use num_complex::Complex64 as C;
use rcud_proto::math::blas::{dtype, Operand, Scalar};

use super::elem::{dim, Elem};
use super::level2::{check_ld, gemv_typed};
use super::level3::{trmm, TriArgs};
use super::lu::{count, expired, int, pointers, solver_dtype};
use super::{
    one_of, Failure, INVALID_VALUE, LEFT, LOWER, NOT_SUPPORTED, OP_C, OP_N, OP_T, RIGHT, UNIT,
    UPPER,
};
use crate::solver::dense::{self, Op, Side};
use crate::solver::{write_ints, Place};
use crate::DeviceMemory;

/// The arguments of `trsmBatched` (as [`TriArgs`], with `a.ptr` and
/// `b.ptr` pointer arrays).
pub(crate) struct TrsmBatched {
    pub(crate) side: i32,
    pub(crate) uplo: i32,
    pub(crate) trans: i32,
    pub(crate) diag: i32,
    pub(crate) m: i64,
    pub(crate) n: i64,
    pub(crate) alpha: Scalar,
    pub(crate) a: Operand,
    pub(crate) b: Operand,
    pub(crate) batch: i64,
}

/// `trsmBatched`: trsm on every (A_i, B_i).
pub(crate) fn trsm_batched<T: Elem>(
    memory: &mut dyn DeviceMemory,
    t: TrsmBatched,
) -> Result<Vec<u8>, Failure> {
    let batch = count(t.batch)?;
    let one = |a: u64, b: u64| TriArgs {
        solve: true,
        side: t.side,
        uplo: t.uplo,
        trans: t.trans,
        diag: t.diag,
        m: t.m,
        n: t.n,
        alpha: t.alpha,
        a: Operand { ptr: a, ..t.a },
        b: Operand { ptr: b, ..t.b },
        c: Operand {
            ptr: 0,
            ld: 1,
            stride: 0,
        },
    };
    // The arguments are checked (and statuses given) before any pointer
    // array is read, as for an empty batch.
    one_of(t.side, &[LEFT, RIGHT])?;
    one_of(t.uplo, &[LOWER, UPPER])?;
    one_of(t.trans, &[OP_N, OP_T, OP_C])?;
    one_of(t.diag, &[0, UNIT])?;
    let (m, n) = (dim(t.m)?, dim(t.n)?);
    check_ld(t.a.ld, if t.side == LEFT { m } else { n })?;
    check_ld(t.b.ld, m)?;
    if batch == 0 || t.m == 0 || t.n == 0 {
        return Ok(Vec::new());
    }
    let a = pointers(memory, t.a.ptr, batch)?;
    let b = pointers(memory, t.b.ptr, batch)?;
    for (&a, &b) in a.iter().zip(&b) {
        expired(memory)?;
        trmm::<T>(memory, one(a, b))?;
    }
    Ok(Vec::new())
}

/// The arguments of `gemvBatched` / `gemvStridedBatched`.
pub(crate) struct GemvBatched {
    pub(crate) types: [u8; 3],
    pub(crate) trans: i32,
    pub(crate) m: i64,
    pub(crate) n: i64,
    pub(crate) alpha: Scalar,
    pub(crate) a: Operand,
    pub(crate) x: Operand,
    pub(crate) beta: Scalar,
    pub(crate) y: Operand,
    pub(crate) batch: i64,
    pub(crate) pointer_arrays: bool,
}

/// The address of item `i` of a strided batch of `size`-byte elements.
fn strided_at(o: Operand, i: usize, size: u64) -> Result<u64, Failure> {
    let offset = i128::from(o.stride)
        .checked_mul(i as i128)
        .and_then(|e| e.checked_mul(i128::from(size)))
        .ok_or(Failure::Status(INVALID_VALUE))?;
    u64::try_from(i128::from(o.ptr) + offset).map_err(|_| Failure::Status(INVALID_VALUE))
}

/// `gemvBatched` / `gemvStridedBatched`: gemv on every (A_i, x_i, y_i).
pub(crate) fn gemv_batched<T: Elem>(
    memory: &mut dyn DeviceMemory,
    g: GemvBatched,
) -> Result<Vec<u8>, Failure> {
    let batch = count(g.batch)?;
    let [in_dt, y_dt, _] = g.types;
    let one = |memory: &mut dyn DeviceMemory, a: u64, x: u64, y: u64, m: i64, n: i64| {
        gemv_typed::<T>(
            memory,
            g.types,
            g.trans,
            [m, n],
            (g.alpha, g.beta),
            [
                Operand { ptr: a, ..g.a },
                Operand { ptr: x, ..g.x },
                Operand { ptr: y, ..g.y },
            ],
        )
    };
    // The arguments alone (n taken as 0), before any array is read.
    one(memory, 0, 0, 0, g.m, g.n.min(0))?;
    if batch == 0 || g.m == 0 || g.n == 0 {
        return Ok(Vec::new());
    }
    let size = |dt: u8| dtype::size(dt).ok_or(Failure::Status(NOT_SUPPORTED));
    let (in_size, y_size) = (size(in_dt)?, size(y_dt)?);
    // Pointer arrays are read whole (their range bounds the batch); a
    // strided batch's addresses are computed item by item, so that a huge
    // count costs no memory and stops at the time limit.
    let arrays = if g.pointer_arrays {
        Some((
            pointers(memory, g.a.ptr, batch)?,
            pointers(memory, g.x.ptr, batch)?,
            pointers(memory, g.y.ptr, batch)?,
        ))
    } else {
        None
    };
    for i in 0..batch {
        expired(memory)?;
        let (a, x, y) = match &arrays {
            Some((a, x, y)) => (a[i], x[i], y[i]),
            None => (
                strided_at(g.a, i, in_size)?,
                strided_at(g.x, i, in_size)?,
                strided_at(g.y, i, y_size)?,
            ),
        };
        one(memory, a, x, y, g.m, g.n)?;
    }
    Ok(Vec::new())
}

/// `geqrfBatched`: Householder QR of every A_i in place, tau_i at the
/// pointers of the `tau` array.
pub(crate) fn geqrf_batched(
    memory: &mut dyn DeviceMemory,
    dt: u8,
    m: i64,
    n: i64,
    a: Operand,
    tau: u64,
    batch: i64,
) -> Result<Vec<u8>, Failure> {
    let sdt = solver_dtype(dt)?;
    let (m, n, batch) = (count(m)?, count(n)?, count(batch)?);
    check_ld(a.ld, m)?;
    let lda = int(a.ld)?;
    let k = m.min(n);
    if k == 0 || batch == 0 {
        return Ok(Vec::new());
    }
    let matrices = pointers(memory, a.ptr, batch)?;
    let taus = pointers(memory, tau, batch)?;
    for (&ap, &tp) in matrices.iter().zip(&taus) {
        expired(memory)?;
        let place = Place::new(ap, lda, sdt);
        let mut qr = place.read(memory, m, n)?;
        let t = dense::geqrf(&mut qr);
        place.write(memory, &qr, n)?;
        write_column(memory, tp, sdt, &t)?;
    }
    Ok(Vec::new())
}

/// Writes `values` as one column of the solver type `sdt` at `ptr`.
fn write_column(
    memory: &mut dyn DeviceMemory,
    ptr: u64,
    sdt: u8,
    values: &[C],
) -> Result<(), Failure> {
    let column = dense::Mat {
        rows: values.len(),
        cols: 1,
        data: values.to_vec(),
    };
    let ld = int(values.len().max(1) as i64)?;
    Place::new(ptr, ld, sdt).write(memory, &column, 1)?;
    Ok(())
}

/// The arguments of `gelsBatched`.
pub(crate) struct GelsBatched {
    pub(crate) dtype: u8,
    pub(crate) trans: i32,
    pub(crate) m: i64,
    pub(crate) n: i64,
    pub(crate) nrhs: i64,
    pub(crate) a: Operand,
    pub(crate) c: Operand,
    pub(crate) dev_info: u64,
    pub(crate) batch: i64,
}

/// `gelsBatched`: min ‖A_i X − C_i‖ for full-rank m ≥ n, trans N (what
/// cuBLAS supports), by QR: A_i becomes its factorization, C_i Qᴴ C_i
/// with X_i in its first n rows (LAPACK's gels layout).
pub(crate) fn gels_batched(
    memory: &mut dyn DeviceMemory,
    g: GelsBatched,
) -> Result<Vec<u8>, Failure> {
    let sdt = solver_dtype(g.dtype)?;
    one_of(g.trans, &[0, 1, 2])?;
    let (m, n, nrhs, batch) = (count(g.m)?, count(g.n)?, count(g.nrhs)?, count(g.batch)?);
    check_ld(g.a.ld, m)?;
    check_ld(g.c.ld, m)?;
    if g.trans != OP_N || m < n {
        return Err(Failure::Status(NOT_SUPPORTED));
    }
    let (lda, ldc) = (int(g.a.ld)?, int(g.c.ld)?);
    if batch == 0 {
        return Ok(Vec::new());
    }
    let matrices = pointers(memory, g.a.ptr, batch)?;
    let rhs = pointers(memory, g.c.ptr, batch)?;
    for (i, (&ap, &cp)) in matrices.iter().zip(&rhs).enumerate() {
        expired(memory)?;
        let a_place = Place::new(ap, lda, sdt);
        let mut qr = a_place.read(memory, m, n)?;
        let tau = dense::geqrf(&mut qr);
        a_place.write(memory, &qr, n)?;
        // The first exactly zero diagonal element of R: A_i is rank
        // deficient and C_i is left as it was.
        let rank_info = (0..n)
            .find(|&j| qr[(j, j)] == C::new(0.0, 0.0))
            .map_or(0, |j| j as i32 + 1);
        if rank_info == 0 && nrhs > 0 {
            let c_place = Place::new(cp, ldc, sdt);
            let mut c = c_place.read(memory, m, nrhs)?;
            dense::ormqr(Side::Left, Op::C, &qr, &tau, &mut c);
            // R x = (Qᴴ c)[..n], by back substitution.
            for col in 0..nrhs {
                for r in (0..n).rev() {
                    let mut s = c[(r, col)];
                    for k in r + 1..n {
                        s -= qr[(r, k)] * c[(k, col)];
                    }
                    c[(r, col)] = s / qr[(r, r)];
                }
            }
            c_place.write(memory, &c, nrhs)?;
        }
        if g.dev_info != 0 {
            write_ints(memory, g.dev_info + (i * 4) as u64, &[rank_info])?;
        }
    }
    Ok(Vec::new())
}
