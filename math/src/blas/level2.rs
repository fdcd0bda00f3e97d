//! BLAS level 2: matrix-vector operations.

use rcud_proto::math::blas::{Operand, Scalar};

use super::elem::{dim, scalar, Elem, Matrix, Vector};
use super::{one_of, Failure, INVALID_VALUE, LOWER, OP_C, OP_N, OP_T, UNIT, UPPER};
use crate::DeviceMemory;

/// Checks a leading dimension against the rows it must cover (cuBLAS wants
/// `ld >= max(1, rows)`).
pub(crate) fn check_ld(ld: i64, rows: usize) -> Result<(), Failure> {
    if ld < 1 || (ld as u64) < rows as u64 {
        return Err(Failure::Status(INVALID_VALUE));
    }
    Ok(())
}

/// `(i, j)` of `op(A)` where `A` is triangular, stored in its `uplo`
/// triangle, with a unit diagonal if `diag` says so.
pub(crate) fn op_tri<T: Elem>(
    a: &Matrix<T>,
    uplo: i32,
    trans: i32,
    diag: i32,
    i: usize,
    j: usize,
) -> T {
    let (r, c) = if trans == OP_N { (i, j) } else { (j, i) };
    let v = if r == c && diag == UNIT {
        T::one()
    } else if (uplo == LOWER && r >= c) || (uplo == UPPER && r <= c) {
        a.get(r, c)
    } else {
        T::zero()
    };
    if trans == OP_C {
        v.conj()
    } else {
        v
    }
}

/// `(i, j)` of a symmetric or Hermitian `A` stored in its `uplo` triangle.
pub(crate) fn sym_elem<T: Elem>(
    a: &Matrix<T>,
    hermitian: bool,
    uplo: i32,
    i: usize,
    j: usize,
) -> T {
    let stored = (uplo == LOWER && i >= j) || (uplo == UPPER && i <= j);
    if i == j && hermitian {
        // The imaginary part of a Hermitian diagonal is taken as zero.
        return T::from_parts(a.get(i, i).re(), 0.0);
    }
    match (stored, hermitian) {
        (true, _) => a.get(i, j),
        (false, false) => a.get(j, i),
        (false, true) => a.get(j, i).conj(),
    }
}

#[allow(clippy::too_many_arguments)]
pub(crate) fn gemv<T: Elem>(
    memory: &mut dyn DeviceMemory,
    trans: i32,
    m: i64,
    n: i64,
    alpha: Scalar,
    a: Operand,
    x: Operand,
    beta: Scalar,
    y: Operand,
) -> Result<Vec<u8>, Failure> {
    let dt = T::DTYPE;
    gemv_typed::<T>(
        memory,
        [dt, dt, dt],
        trans,
        [m, n],
        (alpha, beta),
        [a, x, y],
    )
}

/// gemv with A and x of type `types[0]`, y of `types[1]`, computed (and
/// the scalars read) in `T` of type `types[2]`: the mixed-precision forms
/// of gemvBatched (HSH, HSS, TST, TSS) convert on load and round on store.
pub(crate) fn gemv_typed<T: Elem>(
    memory: &mut dyn DeviceMemory,
    types: [u8; 3],
    trans: i32,
    [m, n]: [i64; 2],
    (alpha, beta): (Scalar, Scalar),
    [a, x, y]: [Operand; 3],
) -> Result<Vec<u8>, Failure> {
    let trans = one_of(trans, &[OP_N, OP_T, OP_C])?;
    let (m, n) = (dim(m)?, dim(n)?);
    check_ld(a.ld, m)?;
    if x.ld == 0 || y.ld == 0 {
        return Err(Failure::Status(INVALID_VALUE));
    }
    let [in_dt, y_dt, dt] = types;
    let alpha: T = scalar(memory, alpha, dt)?;
    let beta: T = scalar(memory, beta, dt)?;
    let (len_x, len_y) = if trans == OP_N { (n, m) } else { (m, n) };
    if m == 0 || n == 0 {
        return Ok(Vec::new());
    }
    let a = Matrix::<T>::read(memory, in_dt, a.ptr, m, n, a.ld)?;
    let xv = Vector::<T>::read(memory, in_dt, x, len_x)?;
    let mut yv = Vector::<T>::read(memory, y_dt, y, len_y)?;
    for i in 0..len_y {
        let mut sum = T::zero();
        for j in 0..len_x {
            let aij = match trans {
                OP_N => a.get(i, j),
                OP_T => a.get(j, i),
                _ => a.get(j, i).conj(),
            };
            sum = sum + aij * xv.get(j);
        }
        // beta = 0 ignores y (NaN in y does not propagate), as in BLAS.
        let old = if beta == T::zero() {
            T::zero()
        } else {
            beta * yv.get(i)
        };
        yv.set(i, alpha * sum + old);
    }
    yv.write(memory, y_dt, y.ptr)?;
    Ok(Vec::new())
}

#[allow(clippy::too_many_arguments)]
pub(crate) fn ger<T: Elem>(
    memory: &mut dyn DeviceMemory,
    conj: bool,
    m: i64,
    n: i64,
    alpha: Scalar,
    x: Operand,
    y: Operand,
    a: Operand,
) -> Result<Vec<u8>, Failure> {
    let (m, n) = (dim(m)?, dim(n)?);
    check_ld(a.ld, m)?;
    if x.ld == 0 || y.ld == 0 {
        return Err(Failure::Status(INVALID_VALUE));
    }
    let dt = T::DTYPE;
    let alpha: T = scalar(memory, alpha, dt)?;
    if m == 0 || n == 0 {
        return Ok(Vec::new());
    }
    let xv = Vector::<T>::read(memory, dt, x, m)?;
    let yv = Vector::<T>::read(memory, dt, y, n)?;
    let mut am = Matrix::<T>::read(memory, dt, a.ptr, m, n, a.ld)?;
    for j in 0..n {
        let yj = if conj { yv.get(j).conj() } else { yv.get(j) };
        for i in 0..m {
            am.set(i, j, am.get(i, j) + alpha * xv.get(i) * yj);
        }
    }
    am.write(memory, dt, a.ptr)?;
    Ok(Vec::new())
}

#[allow(clippy::too_many_arguments)]
pub(crate) fn symv<T: Elem>(
    memory: &mut dyn DeviceMemory,
    hermitian: bool,
    uplo: i32,
    n: i64,
    alpha: Scalar,
    a: Operand,
    x: Operand,
    beta: Scalar,
    y: Operand,
) -> Result<Vec<u8>, Failure> {
    let uplo = one_of(uplo, &[LOWER, UPPER])?;
    let n = dim(n)?;
    check_ld(a.ld, n)?;
    if x.ld == 0 || y.ld == 0 {
        return Err(Failure::Status(INVALID_VALUE));
    }
    let dt = T::DTYPE;
    let alpha: T = scalar(memory, alpha, dt)?;
    let beta: T = scalar(memory, beta, dt)?;
    if n == 0 {
        return Ok(Vec::new());
    }
    let am = Matrix::<T>::read(memory, dt, a.ptr, n, n, a.ld)?;
    let xv = Vector::<T>::read(memory, dt, x, n)?;
    let mut yv = Vector::<T>::read(memory, dt, y, n)?;
    for i in 0..n {
        let mut sum = T::zero();
        for j in 0..n {
            sum = sum + sym_elem(&am, hermitian, uplo, i, j) * xv.get(j);
        }
        let old = if beta == T::zero() {
            T::zero()
        } else {
            beta * yv.get(i)
        };
        yv.set(i, alpha * sum + old);
    }
    yv.write(memory, dt, y.ptr)?;
    Ok(Vec::new())
}

/// trmv (`x = op(A) x`) and trsv (`x = op(A)^-1 x`, with `solve`).
#[allow(clippy::too_many_arguments)]
pub(crate) fn trmv<T: Elem>(
    memory: &mut dyn DeviceMemory,
    solve: bool,
    uplo: i32,
    trans: i32,
    diag: i32,
    n: i64,
    a: Operand,
    x: Operand,
) -> Result<Vec<u8>, Failure> {
    let uplo = one_of(uplo, &[LOWER, UPPER])?;
    let trans = one_of(trans, &[OP_N, OP_T, OP_C])?;
    let diag = one_of(diag, &[0, UNIT])?;
    let n = dim(n)?;
    check_ld(a.ld, n)?;
    if x.ld == 0 {
        return Err(Failure::Status(INVALID_VALUE));
    }
    if n == 0 {
        return Ok(Vec::new());
    }
    let dt = T::DTYPE;
    let am = Matrix::<T>::read(memory, dt, a.ptr, n, n, a.ld)?;
    let mut xv = Vector::<T>::read(memory, dt, x, n)?;
    let old: Vec<T> = (0..n).map(|i| xv.get(i)).collect();
    let at = |i, j| op_tri(&am, uplo, trans, diag, i, j);
    if !solve {
        for i in 0..n {
            let sum = (0..n).fold(T::zero(), |s, j| s + at(i, j) * old[j]);
            xv.set(i, sum);
        }
    } else {
        let solved = solve_tri(n, (uplo == LOWER) == (trans == OP_N), at, &old);
        for (i, v) in solved.into_iter().enumerate() {
            xv.set(i, v);
        }
    }
    xv.write(memory, dt, x.ptr)?;
    Ok(Vec::new())
}

/// Solves `T x = b` for an `n` x `n` triangular `T` given by `at`, lower
/// (forward substitution) or upper (backward). A zero pivot gives inf/NaN,
/// as cuBLAS (which does not check for singularity) does.
// Substitution reads as the textbook formula with indices.
#[allow(clippy::needless_range_loop)]
pub(crate) fn solve_tri<T: Elem>(
    n: usize,
    lower: bool,
    at: impl Fn(usize, usize) -> T,
    b: &[T],
) -> Vec<T> {
    let mut x = b.to_vec();
    if lower {
        for i in 0..n {
            let mut v = x[i];
            for j in 0..i {
                v = v - at(i, j) * x[j];
            }
            x[i] = v / at(i, i);
        }
    } else {
        for i in (0..n).rev() {
            let mut v = x[i];
            for j in i + 1..n {
                v = v - at(i, j) * x[j];
            }
            x[i] = v / at(i, i);
        }
    }
    x
}
