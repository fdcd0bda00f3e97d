//! cuSOLVER's batched and Jacobi routines: `potrfBatched`/`potrsBatched`
//! on matrices named by device arrays of pointers, and `syevj`/`gesvdj`
//! with their `*Batched` forms on matrices stored back to back (what
//! CuPy's batched `cholesky`, `eigh` and `svd` call).
//!
//! Each matrix runs through the kernels of [`super::dense`], which are
//! Jacobi's methods already: the results are what cuSOLVER's Jacobi
//! solvers converge to. They always converge to working precision, so a
//! `syevjInfo_t`'s tolerance and sweep limit change nothing here; the
//! eigenvalues are always sorted, which cuSOLVER allows whatever `sort`
//! says.

use num_complex::Complex64 as C;
use rcud_proto::math::solver::{element_size, real_size, Call};

use super::dense::{self, Mat};
use super::{decode, encode, size, uplo, write_ints, write_reals, Place};
use crate::{DeviceMemory, MathError};

/// Runs one of the calls of this module (already checked by
/// `Call::device_ranges`); None for another call.
pub(super) fn run(memory: &mut dyn DeviceMemory, call: &Call) -> Option<Result<(), MathError>> {
    Some(match *call {
        Call::PotrfBatched {
            dtype,
            uplo: u,
            n,
            a,
            lda,
            info,
            batch,
            ..
        } => potrf_batched(memory, dtype, u, size(n), a, lda, info, size(batch)),
        Call::PotrsBatched {
            dtype,
            uplo: u,
            n,
            a,
            lda,
            b,
            ldb,
            info,
            batch,
            ..
        } => potrs_batched(
            memory,
            dtype,
            u,
            size(n),
            (a, lda),
            (b, ldb),
            info,
            size(batch),
        ),
        Call::Syevj {
            dtype,
            jobz,
            uplo: u,
            n,
            a,
            lda,
            w,
            info,
            batch,
            ..
        } => syevj(
            memory,
            dtype,
            jobz == 1,
            u,
            size(n),
            (a, lda),
            w,
            info,
            size(batch),
        ),
        Call::Gesvdj {
            dtype,
            jobz,
            econ,
            m,
            n,
            a,
            lda,
            s,
            u,
            ldu,
            v,
            ldv,
            info,
            batch,
            batched,
            ..
        } => gesvdj(
            memory,
            Gesvdj {
                dtype,
                vectors: jobz == 1,
                econ: econ == 1 && batched == 0,
                m: size(m),
                n: size(n),
            },
            [(a, lda), (u, ldu), (v, ldv)],
            s,
            info,
            size(batch),
        ),
        _ => return None,
    })
}

/// Stops a batch that has run past the device's time limit.
fn check_time(memory: &dyn DeviceMemory) -> Result<(), MathError> {
    if memory.expired() {
        Err(MathError::Timeout)
    } else {
        Ok(())
    }
}

/// The `batch` device pointers of the array at `ptr`, each checked to
/// name an n×`cols` matrix of `dtype` with leading dimension `ld` inside
/// the client's allocations: nothing is written unless all are.
fn matrices(
    memory: &dyn DeviceMemory,
    ptr: u64,
    batch: usize,
    (rows, cols, ld, dtype): (usize, usize, i32, u8),
) -> Result<Vec<u64>, MathError> {
    if batch == 0 {
        return Ok(Vec::new());
    }
    let bytes = memory.read(ptr, batch as u64 * 8)?;
    let pointers: Vec<u64> = bytes
        .chunks_exact(8)
        .map(|c| u64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]))
        .collect();
    if rows > 0 && cols > 0 {
        let es = element_size(dtype).unwrap_or(8);
        let span = ((cols - 1) as u64 * size(ld) as u64 + rows as u64) * es;
        for &p in &pointers {
            memory.read(p, span)?;
        }
    }
    Ok(pointers)
}

#[allow(clippy::too_many_arguments)]
fn potrf_batched(
    memory: &mut dyn DeviceMemory,
    dtype: u8,
    u: i32,
    n: usize,
    a: u64,
    lda: i32,
    info: u64,
    batch: usize,
) -> Result<(), MathError> {
    let pointers = matrices(memory, a, batch, (n, n, lda, dtype))?;
    let mut infos = Vec::with_capacity(pointers.len());
    for &p in &pointers {
        check_time(memory)?;
        let place = Place::new(p, lda, dtype);
        let mut mat = place.read(memory, n, n)?;
        infos.push(dense::potrf(uplo(u), &mut mat));
        place.write(memory, &mat, n)?;
    }
    Ok(write_ints(memory, info, &infos)?)
}

#[allow(clippy::too_many_arguments)]
fn potrs_batched(
    memory: &mut dyn DeviceMemory,
    dtype: u8,
    u: i32,
    n: usize,
    (a, lda): (u64, i32),
    (b, ldb): (u64, i32),
    info: u64,
    batch: usize,
) -> Result<(), MathError> {
    let factors = matrices(memory, a, batch, (n, n, lda, dtype))?;
    let rhs = matrices(memory, b, batch, (n, 1, ldb, dtype))?;
    for (&f, &x) in factors.iter().zip(&rhs) {
        check_time(memory)?;
        let factor = Place::new(f, lda, dtype).read(memory, n, n)?;
        let place = Place::new(x, ldb, dtype);
        let mut solution = place.read(memory, n, 1)?;
        dense::potrs(uplo(u), &factor, &mut solution);
        place.write(memory, &solution, 1)?;
    }
    Ok(write_ints(memory, info, &[0])?)
}

/// Where matrix `i` of a strided batch starts.
fn nth(ptr: u64, i: usize, ld: i32, cols: usize, dtype: u8) -> u64 {
    let es = element_size(dtype).unwrap_or(8);
    ptr + (i * size(ld) * cols) as u64 * es
}

#[allow(clippy::too_many_arguments)]
fn syevj(
    memory: &mut dyn DeviceMemory,
    dtype: u8,
    vectors: bool,
    u: i32,
    n: usize,
    (a, lda): (u64, i32),
    w: u64,
    info: u64,
    batch: usize,
) -> Result<(), MathError> {
    let real = real_size(dtype).unwrap_or(8);
    let mut infos = Vec::with_capacity(batch);
    for i in 0..batch {
        check_time(memory)?;
        let place = Place::new(nth(a, i, lda, n, dtype), lda, dtype);
        let mat = place.read(memory, n, n)?;
        match dense::syevd(uplo(u), &mat, vectors) {
            Some((values, eigenvectors)) => {
                write_reals(memory, w + (i * n) as u64 * real, dtype, &values)?;
                if vectors {
                    place.write(memory, &eigenvectors, n)?;
                }
                infos.push(0);
            }
            // cuSOLVER's info n + 1: no convergence.
            None => infos.push(n as i32 + 1),
        }
    }
    Ok(write_ints(memory, info, &infos)?)
}

/// The shape of a `gesvdj` call.
#[derive(Clone, Copy)]
struct Gesvdj {
    dtype: u8,
    vectors: bool,
    /// Thin U (m×k) and V (n×k), k = min(m, n).
    econ: bool,
    m: usize,
    n: usize,
}

/// The conjugate transpose of `a`.
fn adjoint(a: &Mat) -> Mat {
    let mut t = Mat::zeros(a.cols, a.rows);
    for j in 0..a.cols {
        for i in 0..a.rows {
            t[(j, i)] = a[(i, j)].conj();
        }
    }
    t
}

/// A = U Σ Vᴴ of any shape: singular values (min(m, n), descending), U
/// and V with at least `u_cols` and `v_cols` columns (the short side's
/// are all computed anyway). None if Jacobi's method did not converge.
fn svd(a: &Mat, u_cols: usize, v_cols: usize) -> Option<(Vec<f64>, Mat, Mat)> {
    if a.rows >= a.cols {
        let svd = dense::gesvd(a, u_cols)?;
        Some((svd.s, svd.u, adjoint(&svd.vt)))
    } else {
        // Aᴴ = U' Σ V'ᴴ, so A = V' Σ U'ᴴ.
        let svd = dense::gesvd(&adjoint(a), v_cols)?;
        Some((svd.s, adjoint(&svd.vt), svd.u))
    }
}

fn gesvdj(
    memory: &mut dyn DeviceMemory,
    shape: Gesvdj,
    [(a, lda), (u, ldu), (v, ldv)]: [(u64, i32); 3],
    s: u64,
    info: u64,
    batch: usize,
) -> Result<(), MathError> {
    let Gesvdj {
        dtype,
        vectors,
        econ,
        m,
        n,
    } = shape;
    let k = m.min(n);
    let (ucols, vcols) = if econ { (k, k) } else { (m, n) };
    let real = real_size(dtype).unwrap_or(8);
    let mut infos = Vec::with_capacity(batch);
    for i in 0..batch {
        check_time(memory)?;
        let mat = Place::new(nth(a, i, lda, n, dtype), lda, dtype).read(memory, m, n)?;
        let wanted = |cols| if vectors { cols } else { 0 };
        let Some((values, left, right)) = svd(&mat, wanted(ucols), wanted(vcols)) else {
            infos.push(k as i32 + 1);
            continue;
        };
        write_reals(memory, s + (i * k) as u64 * real, dtype, &values)?;
        if vectors {
            Place::new(nth(u, i, ldu, ucols, dtype), ldu, dtype).write(memory, &left, ucols)?;
            Place::new(nth(v, i, ldv, vcols, dtype), ldv, dtype).write(memory, &right, vcols)?;
        }
        infos.push(0);
    }
    Ok(write_ints(memory, info, &infos)?)
}

/// `gesvdaStridedBatched`: the `rank` largest singular triplets of each
/// tall matrix, by the same one-sided Jacobi SVD (exact to working
/// precision, where cuSOLVER's is approximate). Answers each matrix's
/// ‖A − U S Vᴴ‖_F, computed from the factors as stored (in single
/// precision for S and C), for the host.
pub(super) fn gesvda(memory: &mut dyn DeviceMemory, call: &Call) -> Result<Vec<u8>, MathError> {
    let Call::Gesvda {
        dtype,
        jobz,
        rank,
        m,
        n,
        a,
        lda,
        stride_a,
        s,
        stride_s,
        u,
        ldu,
        stride_u,
        v,
        ldv,
        stride_v,
        info,
        batch,
        ..
    } = *call
    else {
        return Ok(Vec::new());
    };
    let (rank, m, n, batch) = (size(rank), size(m), size(n), size(batch));
    let es = element_size(dtype).unwrap_or(8);
    let real = real_size(dtype).unwrap_or(8);
    // Strides were checked non-negative and within the device ranges.
    let at = |ptr: u64, stride: i64, i: usize, each: u64| {
        ptr + (i as u64) * (stride.max(0) as u64) * each
    };
    let stored = |z: C| {
        let mut bytes = Vec::with_capacity(16);
        encode(dtype, z, &mut bytes);
        decode(dtype, &bytes)
    };
    let mut infos = Vec::with_capacity(batch);
    let mut residuals = Vec::with_capacity(batch * 8);
    for i in 0..batch {
        check_time(memory)?;
        let mat = Place::new(at(a, stride_a, i, es), lda, dtype).read(memory, m, n)?;
        let Some(svd) = dense::gesvd(&mat, rank) else {
            infos.push(n as i32 + 1);
            residuals.extend_from_slice(&f64::NAN.to_le_bytes());
            continue;
        };
        let values: Vec<f64> = svd.s[..rank]
            .iter()
            .map(|&x| stored(C::new(x, 0.0)).re)
            .collect();
        write_reals(memory, at(s, stride_s, i, real), dtype, &values)?;
        let mut left = svd.u;
        left.data.iter_mut().for_each(|z| *z = stored(*z));
        let mut right = Mat::zeros(n, rank);
        for k in 0..rank {
            for r in 0..n {
                right[(r, k)] = stored(svd.vt[(k, r)].conj());
            }
        }
        if jobz == 1 {
            Place::new(at(u, stride_u, i, es), ldu, dtype).write(memory, &left, rank)?;
            Place::new(at(v, stride_v, i, es), ldv, dtype).write(memory, &right, rank)?;
        }
        let mut residual = 0.0;
        for c in 0..n {
            for r in 0..m {
                let approx: C = (0..rank)
                    .map(|k| left[(r, k)] * values[k] * right[(c, k)].conj())
                    .sum();
                residual += (mat[(r, c)] - approx).norm_sqr();
            }
        }
        residuals.extend_from_slice(&residual.sqrt().to_le_bytes());
        infos.push(0);
    }
    write_ints(memory, info, &infos)?;
    Ok(residuals)
}

#[cfg(test)]
mod tests {
    use num_complex::Complex64 as C;

    use super::*;

    #[test]
    fn svd_of_a_wide_matrix_reconstructs_it() {
        let mut a = Mat::zeros(2, 3);
        for (i, x) in [1.0, 4.0, 2.0, 5.0, 3.0, 7.0].into_iter().enumerate() {
            a.data[i] = C::new(x, 0.0);
        }
        let (s, u, v) = svd(&a, 2, 3).expect("converges");
        assert_eq!((s.len(), u.rows, u.cols, v.rows, v.cols), (2, 2, 2, 3, 3));
        for i in 0..2 {
            for j in 0..3 {
                let x: C = (0..2).map(|l| u[(i, l)] * s[l] * v[(j, l)].conj()).sum();
                assert!((x - a[(i, j)]).norm() < 1e-12, "A[{i},{j}]");
            }
        }
        assert!(s[0] >= s[1]);
    }
}
