//! cuBLAS's batched LU routines: `getrfBatched`, `getrsBatched`,
//! `getriBatched` and `matinvBatched` (what CuPy's `det`, and its batched `inv` and `solve`,
//! call), on matrices named by device arrays of pointers.
//!
//! Each matrix runs through the LAPACK-style kernels of the solver module
//! ([`crate::solver::dense`]), in complex double precision, and is stored
//! back in its own type, so the results are cuSOLVER's `getrf`/`getrs`
//! applied matrix by matrix, in cuBLAS's conventions: pivots 1-based, `n`
//! per matrix back to back, one `info` per matrix.

use rcud_proto::math::blas::{dtype, Operand};

use super::level2::check_ld;
use super::{one_of, Failure, INVALID_VALUE, NOT_SUPPORTED, OP_C, OP_N, OP_T};
use crate::solver::dense::{self, Mat, Op};
use crate::solver::{read_ints, write_ints, Place};
use crate::DeviceMemory;

/// The solver module's element code (0 S, 1 D, 2 C, 3 Z) of cuBLAS type `dt`.
pub(super) fn solver_dtype(dt: u8) -> Result<u8, Failure> {
    Ok(match dt {
        dtype::R32F => 0,
        dtype::R64F => 1,
        dtype::C32F => 2,
        dtype::C64F => 3,
        _ => return Err(Failure::Status(NOT_SUPPORTED)),
    })
}

/// A dimension as cuBLAS's `int`.
pub(super) fn int(v: i64) -> Result<i32, Failure> {
    i32::try_from(v).map_err(|_| Failure::Status(INVALID_VALUE))
}

pub(super) fn count(v: i64) -> Result<usize, Failure> {
    usize::try_from(v).map_err(|_| Failure::Status(INVALID_VALUE))
}

/// The `batch` device pointers of the array at `ptr`.
pub(super) fn pointers(
    memory: &dyn DeviceMemory,
    ptr: u64,
    batch: usize,
) -> Result<Vec<u64>, Failure> {
    let len = (batch as u64)
        .checked_mul(8)
        .ok_or(Failure::Status(INVALID_VALUE))?;
    let bytes = memory.read(ptr, len)?;
    Ok(bytes
        .chunks_exact(8)
        .map(|c| u64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]))
        .collect())
}

pub(super) fn expired(memory: &dyn DeviceMemory) -> Result<(), Failure> {
    if memory.expired() {
        Err(Failure::Timeout)
    } else {
        Ok(())
    }
}

/// The checked shape shared by the three routines: (n, lda, solver dtype,
/// batch).
fn shape(dt: u8, n: i64, a: Operand, batch: i64) -> Result<(usize, i32, u8, usize), Failure> {
    let dt = solver_dtype(dt)?;
    let (n, batch) = (count(n)?, count(batch)?);
    check_ld(a.ld, n)?;
    Ok((n, int(a.ld)?, dt, batch))
}

/// `getrfBatched`.
pub(crate) fn getrf_batched(
    memory: &mut dyn DeviceMemory,
    dt: u8,
    n: i64,
    a: Operand,
    pivots: u64,
    info: u64,
    batch: i64,
) -> Result<Vec<u8>, Failure> {
    let (n, lda, dt, batch) = shape(dt, n, a, batch)?;
    if n == 0 || batch == 0 {
        return Ok(Vec::new());
    }
    let matrices = pointers(memory, a.ptr, batch)?;
    for (i, &ptr) in matrices.iter().enumerate() {
        expired(memory)?;
        let place = Place::new(ptr, lda, dt);
        let mut lu = place.read(memory, n, n)?;
        let (ipiv, status) = dense::getrf(&mut lu, pivots != 0);
        place.write(memory, &lu, n)?;
        if pivots != 0 {
            write_ints(memory, pivots + (i * n * 4) as u64, &ipiv)?;
        }
        write_ints(memory, info + (i * 4) as u64, &[status])?;
    }
    Ok(Vec::new())
}

/// The pivots of matrix `i` (none when the factorization did not pivot).
fn pivots_of(
    memory: &dyn DeviceMemory,
    pivots: u64,
    i: usize,
    n: usize,
) -> Result<Option<Vec<i32>>, Failure> {
    if pivots == 0 {
        return Ok(None);
    }
    Ok(Some(read_ints(memory, pivots + (i * n * 4) as u64, n)?))
}

/// `getrsBatched`.
#[allow(clippy::too_many_arguments)]
pub(crate) fn getrs_batched(
    memory: &mut dyn DeviceMemory,
    dt: u8,
    trans: i32,
    n: i64,
    nrhs: i64,
    a: Operand,
    pivots: u64,
    b: Operand,
    batch: i64,
) -> Result<Vec<u8>, Failure> {
    let op = match one_of(trans, &[OP_N, OP_T, OP_C])? {
        OP_N => Op::N,
        OP_T => Op::T,
        _ => Op::C,
    };
    let (n, lda, dt, batch) = shape(dt, n, a, batch)?;
    let nrhs = count(nrhs)?;
    check_ld(b.ld, n)?;
    let ldb = int(b.ld)?;
    if n == 0 || nrhs == 0 || batch == 0 {
        return Ok(Vec::new());
    }
    let factors = pointers(memory, a.ptr, batch)?;
    let rhs = pointers(memory, b.ptr, batch)?;
    for i in 0..batch {
        expired(memory)?;
        let lu = Place::new(factors[i], lda, dt).read(memory, n, n)?;
        let ipiv = pivots_of(memory, pivots, i, n)?;
        let place = Place::new(rhs[i], ldb, dt);
        let mut x = place.read(memory, n, nrhs)?;
        dense::getrs(op, &lu, ipiv.as_deref(), &mut x);
        place.write(memory, &x, nrhs)?;
    }
    Ok(Vec::new())
}

/// `getriBatched`.
#[allow(clippy::too_many_arguments)]
pub(crate) fn getri_batched(
    memory: &mut dyn DeviceMemory,
    dt: u8,
    n: i64,
    a: Operand,
    pivots: u64,
    c: Operand,
    info: u64,
    batch: i64,
) -> Result<Vec<u8>, Failure> {
    let (n, lda, dt, batch) = shape(dt, n, a, batch)?;
    check_ld(c.ld, n)?;
    let ldc = int(c.ld)?;
    if n == 0 || batch == 0 {
        return Ok(Vec::new());
    }
    let factors = pointers(memory, a.ptr, batch)?;
    let inverses = pointers(memory, c.ptr, batch)?;
    for i in 0..batch {
        expired(memory)?;
        let lu = Place::new(factors[i], lda, dt).read(memory, n, n)?;
        // A zero on U's diagonal: no inverse, and `info` says where. The
        // substitution still runs, as on a GPU: C_i gets the infinities and
        // NaNs of the divisions by zero, which is how callers such as
        // CuPy's `cond` see a singular matrix.
        let singular = (0..n).find(|&k| lu[(k, k)] == num_complex::Complex64::new(0.0, 0.0));
        let ipiv = pivots_of(memory, pivots, i, n)?;
        let mut inverse = Mat::identity(n);
        dense::getrs(Op::N, &lu, ipiv.as_deref(), &mut inverse);
        Place::new(inverses[i], ldc, dt).write(memory, &inverse, n)?;
        let status = singular.map_or(0, |k| k as i32 + 1);
        write_ints(memory, info + (i * 4) as u64, &[status])?;
    }
    Ok(Vec::new())
}

/// `matinvBatched`: getrf and getri in one, A_i read only; n ≤ 32.
pub(crate) fn matinv_batched(
    memory: &mut dyn DeviceMemory,
    dt: u8,
    n: i64,
    a: Operand,
    c: Operand,
    info: u64,
    batch: i64,
) -> Result<Vec<u8>, Failure> {
    if n > rcud_proto::math::blas::MATINV_MAX {
        return Err(Failure::Status(INVALID_VALUE));
    }
    let (n, lda, dt, batch) = shape(dt, n, a, batch)?;
    check_ld(c.ld, n)?;
    let ldc = int(c.ld)?;
    if n == 0 || batch == 0 {
        return Ok(Vec::new());
    }
    let matrices = pointers(memory, a.ptr, batch)?;
    let inverses = pointers(memory, c.ptr, batch)?;
    for i in 0..batch {
        expired(memory)?;
        let mut lu = Place::new(matrices[i], lda, dt).read(memory, n, n)?;
        let (ipiv, status) = dense::getrf(&mut lu, true);
        // As getriBatched: a singular matrix still gets the substitution's
        // infinities, and `info` names the zero pivot.
        let mut inverse = Mat::identity(n);
        dense::getrs(Op::N, &lu, Some(&ipiv), &mut inverse);
        Place::new(inverses[i], ldc, dt).write(memory, &inverse, n)?;
        write_ints(memory, info + (i * 4) as u64, &[status])?;
    }
    Ok(Vec::new())
}
