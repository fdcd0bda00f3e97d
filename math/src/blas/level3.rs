//! BLAS level 3 (and the BLAS-like extensions geam and dgmm).

use ndarray::linalg::general_mat_mul;
use ndarray::{ArrayView2, ArrayViewMut2, Axis, ShapeBuilder, Slice};
use rcud_proto::math::blas::{dtype, Operand, Scalar};
use rcud_proto::math::blaslt::epilogue;

use super::elem::{dim, load, mul, scalar, Elem, Matrix, Vector};
use super::level2::{check_ld, op_tri, solve_tri, sym_elem};
use super::{one_of, Failure, INVALID_VALUE, LEFT, LOWER, OP_C, OP_N, OP_T, RIGHT, UNIT, UPPER};
use crate::{deadline, DeviceMemory};

/// Multiply-adds of one panel of a GEMM: a fraction of a second, the
/// granularity at which a GEMM notices its deadline. The unit tests use
/// narrow panels so that their small products are split too.
const PANEL_WORK: usize = if cfg!(test) { 1 << 5 } else { 1 << 30 };

/// `c = alpha op(a) op(b) + beta c` with ndarray's GEMM. `beta = 0`
/// ignores `c`'s old values (NaN does not propagate), as in BLAS.
pub(crate) fn product<T: Elem>(
    alpha: T,
    a: &Matrix<T>,
    transa: i32,
    b: &Matrix<T>,
    transb: i32,
    beta: T,
    c: &mut Matrix<T>,
) {
    let mut cv = c.view_mut();
    if beta == T::zero() {
        cv.fill(T::zero());
    }
    let inner = if transa == OP_N { a.cols } else { a.rows };
    if alpha == T::zero() || inner == 0 {
        if beta != T::zero() {
            cv.mapv_inplace(|v| beta * v);
        }
        return;
    }
    let conj_a;
    let conj_b;
    let av = match transa {
        OP_N => a.view(),
        OP_T => a.view().reversed_axes(),
        _ => {
            conj_a = conjugated(a);
            conj_a.view().reversed_axes()
        }
    };
    let bv = match transb {
        OP_N => b.view(),
        OP_T => b.view().reversed_axes(),
        _ => {
            conj_b = conjugated(b);
            conj_b.view().reversed_axes()
        }
    };
    // Panels of C's columns: a GEMM's work grows faster than its operands,
    // so a large one stops at its deadline between panels.
    let (m, n) = cv.dim();
    let width = (PANEL_WORK / (m * inner).max(1)).max(1);
    for j0 in (0..n).step_by(width) {
        if deadline::passed() {
            return;
        }
        let cols = Slice::from(j0..(j0 + width).min(n));
        general_mat_mul(
            alpha,
            &av,
            &bv.slice_axis(Axis(1), cols),
            beta,
            &mut cv.slice_axis_mut(Axis(1), cols),
        );
    }
}

fn conjugated<T: Elem>(m: &Matrix<T>) -> Matrix<T> {
    let mut copy = m.clone();
    copy.conjugate();
    copy
}

/// The arguments of [`gemm`] (one [`Call::Gemm`](rcud_proto::math::blas::Call::Gemm)).
pub(crate) struct GemmArgs {
    pub(crate) types: [u8; 4],
    pub(crate) transa: i32,
    pub(crate) transb: i32,
    pub(crate) m: i64,
    pub(crate) n: i64,
    pub(crate) k: i64,
    pub(crate) alpha: Scalar,
    pub(crate) a: Operand,
    pub(crate) b: Operand,
    pub(crate) beta: Scalar,
    pub(crate) c: Operand,
    pub(crate) batch: i64,
    pub(crate) pointer_arrays: bool,
}

/// Where each matrix of a batch lies: in a device array of pointers, or
/// `stride` elements apart. Strided addresses are computed as they are
/// needed: a batch count is not bounded by any memory.
enum BatchPointers {
    Array(Vec<u64>),
    Strided { ptr: u64, stride_bytes: i64 },
}

impl BatchPointers {
    /// Reads the array of pointers at `op.ptr`, or notes the stride.
    fn new(
        memory: &dyn DeviceMemory,
        op: Operand,
        dtype: u8,
        batch: usize,
        pointer_arrays: bool,
    ) -> Result<Self, Failure> {
        if pointer_arrays {
            let bytes = memory.read(op.ptr, mul(batch, 8)? as u64)?;
            return Ok(Self::Array(
                bytes
                    .chunks_exact(8)
                    .map(|c| {
                        let mut a = [0; 8];
                        a.copy_from_slice(c);
                        u64::from_le_bytes(a)
                    })
                    .collect(),
            ));
        }
        let size = dtype::size(dtype).ok_or(Failure::Status(INVALID_VALUE))? as i64;
        let stride_bytes = op
            .stride
            .checked_mul(size)
            .ok_or(Failure::Status(INVALID_VALUE))?;
        Ok(Self::Strided {
            ptr: op.ptr,
            stride_bytes,
        })
    }

    /// The device address of matrix `i`.
    fn get(&self, i: usize) -> Result<u64, Failure> {
        match self {
            Self::Array(ptrs) => ptrs.get(i).copied().ok_or(Failure::Status(INVALID_VALUE)),
            Self::Strided { ptr, stride_bytes } => i64::try_from(i)
                .ok()
                .and_then(|i| i.checked_mul(*stride_bytes))
                .and_then(|off| (*ptr as i64).checked_add(off))
                .map(|p| p as u64)
                .ok_or(Failure::Status(INVALID_VALUE)),
        }
    }
}

/// Fails when the call has run out of time; asked between matrices.
fn check_time(memory: &dyn DeviceMemory) -> Result<(), Failure> {
    if memory.expired() {
        Err(Failure::Timeout)
    } else {
        Ok(())
    }
}

/// GEMM, single, strided-batched or batched, in compute type `T` (which
/// alpha and beta are stored in, or FP16 for `CUBLAS_COMPUTE_16F`).
pub(crate) fn gemm<T: Elem>(
    memory: &mut dyn DeviceMemory,
    g: GemmArgs,
) -> Result<Vec<u8>, Failure> {
    let [ta, tb, tc, ts] = g.types;
    let transa = one_of(g.transa, &[OP_N, OP_T, OP_C])?;
    let transb = one_of(g.transb, &[OP_N, OP_T, OP_C])?;
    let (m, n, k, batch) = (dim(g.m)?, dim(g.n)?, dim(g.k)?, dim(g.batch)?);
    let (ar, ac) = if transa == OP_N { (m, k) } else { (k, m) };
    let (br, bc) = if transb == OP_N { (k, n) } else { (n, k) };
    check_ld(g.a.ld, ar)?;
    check_ld(g.b.ld, br)?;
    check_ld(g.c.ld, m)?;
    let alpha: T = scalar(memory, g.alpha, ts)?;
    let beta: T = scalar(memory, g.beta, ts)?;
    if m == 0 || n == 0 || batch == 0 {
        return Ok(Vec::new());
    }
    let pa = BatchPointers::new(memory, g.a, ta, batch, g.pointer_arrays)?;
    let pb = BatchPointers::new(memory, g.b, tb, batch, g.pointer_arrays)?;
    let pc = BatchPointers::new(memory, g.c, tc, batch, g.pointer_arrays)?;
    let needs_ab = alpha != T::zero() && k > 0;
    for i in 0..batch {
        check_time(memory)?;
        let (a, b) = if needs_ab {
            (
                Matrix::<T>::read(memory, ta, pa.get(i)?, ar, ac, g.a.ld)?,
                Matrix::<T>::read(memory, tb, pb.get(i)?, br, bc, g.b.ld)?,
            )
        } else {
            (Matrix::zeros(ar, ac), Matrix::zeros(br, bc))
        };
        // With beta zero C is only written (cuBLAS does not read it: it
        // need not even hold numbers).
        let mut c = if beta == T::zero() {
            Matrix::zeros(m, n)
        } else {
            Matrix::<T>::read(memory, tc, pc.get(i)?, m, n, g.c.ld)?
        };
        product(alpha, &a, transa, &b, transb, beta, &mut c);
        c.write_to(memory, tc, pc.get(i)?, g.c.ld)?;
    }
    Ok(Vec::new())
}

/// A dense column-major `C = A B` with the same GEMM as the emulated
/// device's cuBLAS uses, called directly (the baseline of `rcud bench
/// blas`). `a` is `m` x `k`, `b` `k` x `n`, `c` `m` x `n`.
///
/// # Panics
/// If a slice is shorter than its matrix.
pub fn gemm_direct<T: ndarray::LinalgScalar>(
    m: usize,
    n: usize,
    k: usize,
    a: &[T],
    b: &[T],
    c: &mut [T],
) {
    let av = ArrayView2::from_shape((m, k).f(), &a[..m * k]).expect("a is m x k");
    let bv = ArrayView2::from_shape((k, n).f(), &b[..k * n]).expect("b is k x n");
    let mut cv = ArrayViewMut2::from_shape((m, n).f(), &mut c[..m * n]).expect("c is m x n");
    general_mat_mul(T::one(), &av, &bv, T::zero(), &mut cv);
}

/// A dense `n` x `n` copy of symmetric/Hermitian `a`.
fn full_sym<T: Elem>(a: &Matrix<T>, hermitian: bool, uplo: i32) -> Matrix<T> {
    let n = a.rows;
    let mut full = Matrix::zeros(n, n);
    for j in 0..n {
        for i in 0..n {
            full.set(i, j, sym_elem(a, hermitian, uplo, i, j));
        }
    }
    full
}

#[allow(clippy::too_many_arguments)]
pub(crate) fn symm<T: Elem>(
    memory: &mut dyn DeviceMemory,
    hermitian: bool,
    side: i32,
    uplo: i32,
    m: i64,
    n: i64,
    alpha: Scalar,
    a: Operand,
    b: Operand,
    beta: Scalar,
    c: Operand,
) -> Result<Vec<u8>, Failure> {
    let side = one_of(side, &[LEFT, RIGHT])?;
    let uplo = one_of(uplo, &[LOWER, UPPER])?;
    let (m, n) = (dim(m)?, dim(n)?);
    let na = if side == LEFT { m } else { n };
    check_ld(a.ld, na)?;
    check_ld(b.ld, m)?;
    check_ld(c.ld, m)?;
    let dt = T::DTYPE;
    let alpha: T = scalar(memory, alpha, dt)?;
    let beta: T = scalar(memory, beta, dt)?;
    if m == 0 || n == 0 {
        return Ok(Vec::new());
    }
    let am = full_sym(
        &Matrix::<T>::read(memory, dt, a.ptr, na, na, a.ld)?,
        hermitian,
        uplo,
    );
    let bm = Matrix::<T>::read(memory, dt, b.ptr, m, n, b.ld)?;
    let mut cm = Matrix::<T>::read(memory, dt, c.ptr, m, n, c.ld)?;
    if side == LEFT {
        product(alpha, &am, OP_N, &bm, OP_N, beta, &mut cm);
    } else {
        product(alpha, &bm, OP_N, &am, OP_N, beta, &mut cm);
    }
    cm.write(memory, dt, c.ptr)?;
    Ok(Vec::new())
}

/// syrk (`C = alpha op(A) op(A)^T + beta C`) and herk (`op(A) op(A)^H`,
/// real alpha and beta), on the `uplo` triangle of `C` only.
#[allow(clippy::too_many_arguments)]
pub(crate) fn syrk<T: Elem>(
    memory: &mut dyn DeviceMemory,
    hermitian: bool,
    uplo: i32,
    trans: i32,
    n: i64,
    k: i64,
    alpha: Scalar,
    a: Operand,
    beta: Scalar,
    c: Operand,
) -> Result<Vec<u8>, Failure> {
    let uplo = one_of(uplo, &[LOWER, UPPER])?;
    let transposed = if hermitian {
        one_of(trans, &[OP_N, OP_C])?
    } else if T::DTYPE == dtype::C32F || T::DTYPE == dtype::C64F {
        one_of(trans, &[OP_N, OP_T])?
    } else {
        one_of(trans, &[OP_N, OP_T, OP_C])?
    } != OP_N;
    let (n, k) = (dim(n)?, dim(k)?);
    let (ar, ac) = if transposed { (k, n) } else { (n, k) };
    check_ld(a.ld, ar)?;
    check_ld(c.ld, n)?;
    let dt = T::DTYPE;
    let scalar_dt = if hermitian { T::REAL_DTYPE } else { dt };
    let alpha: T = scalar(memory, alpha, scalar_dt)?;
    let beta: T = scalar(memory, beta, scalar_dt)?;
    if n == 0 {
        return Ok(Vec::new());
    }
    let am = if k > 0 {
        Matrix::<T>::read(memory, dt, a.ptr, ar, ac, a.ld)?
    } else {
        Matrix::zeros(ar, ac)
    };
    let other = if hermitian { OP_C } else { OP_T };
    let mut p = Matrix::zeros(n, n);
    if transposed {
        product(alpha, &am, other, &am, OP_N, T::zero(), &mut p);
    } else {
        product(alpha, &am, OP_N, &am, other, T::zero(), &mut p);
    }
    let mut cm = Matrix::<T>::read(memory, dt, c.ptr, n, n, c.ld)?;
    for j in 0..n {
        let rows = if uplo == LOWER { j..n } else { 0..j + 1 };
        for i in rows {
            let old = if beta == T::zero() {
                T::zero()
            } else {
                beta * cm.get(i, j)
            };
            let mut v = p.get(i, j) + old;
            if hermitian && i == j {
                v = T::from_parts(v.re(), 0.0);
            }
            cm.set(i, j, v);
        }
    }
    cm.write(memory, dt, c.ptr)?;
    Ok(Vec::new())
}

/// The arguments of [`syr2k`] (one `Call::Syr2k`).
pub(crate) struct Syr2kArgs {
    pub(crate) hermitian: bool,
    pub(crate) x: bool,
    pub(crate) uplo: i32,
    pub(crate) trans: i32,
    pub(crate) n: i64,
    pub(crate) k: i64,
    pub(crate) alpha: Scalar,
    pub(crate) a: Operand,
    pub(crate) b: Operand,
    pub(crate) beta: Scalar,
    pub(crate) c: Operand,
}

/// syr2k/her2k (`alpha op(A) op(B)^T + alpha op(B) op(A)^T + beta C`,
/// `^H` and `conj(alpha)` for her2k) and syrkx/herkx (the first product
/// only), on the `uplo` triangle of `C`.
pub(crate) fn syr2k<T: Elem>(
    memory: &mut dyn DeviceMemory,
    s: Syr2kArgs,
) -> Result<Vec<u8>, Failure> {
    let complex = dtype::is_complex(T::DTYPE);
    if s.hermitian && !complex {
        return Err(Failure::Status(INVALID_VALUE));
    }
    let uplo = one_of(s.uplo, &[LOWER, UPPER])?;
    // As syrk: the complex symmetric forms take N or T, the Hermitian N or C.
    let transposed = if s.hermitian {
        one_of(s.trans, &[OP_N, OP_C])?
    } else if complex {
        one_of(s.trans, &[OP_N, OP_T])?
    } else {
        one_of(s.trans, &[OP_N, OP_T, OP_C])?
    } != OP_N;
    let (n, k) = (dim(s.n)?, dim(s.k)?);
    let (ar, ac) = if transposed { (k, n) } else { (n, k) };
    check_ld(s.a.ld, ar)?;
    check_ld(s.b.ld, ar)?;
    check_ld(s.c.ld, n)?;
    let dt = T::DTYPE;
    let alpha: T = scalar(memory, s.alpha, dt)?;
    let beta: T = scalar(memory, s.beta, if s.hermitian { T::REAL_DTYPE } else { dt })?;
    if n == 0 {
        return Ok(Vec::new());
    }
    let read = |memory: &dyn DeviceMemory, m: Operand| {
        if k > 0 {
            Matrix::<T>::read(memory, dt, m.ptr, ar, ac, m.ld)
        } else {
            Ok(Matrix::zeros(ar, ac))
        }
    };
    let am = read(memory, s.a)?;
    let bm = read(memory, s.b)?;
    let other = if s.hermitian { OP_C } else { OP_T };
    let (first, second) = if transposed {
        (other, OP_N)
    } else {
        (OP_N, other)
    };
    let mut p = Matrix::zeros(n, n);
    product(alpha, &am, first, &bm, second, T::zero(), &mut p);
    if !s.x {
        let alpha2 = if s.hermitian { alpha.conj() } else { alpha };
        product(alpha2, &bm, first, &am, second, T::one(), &mut p);
    }
    let mut cm = Matrix::<T>::read(memory, dt, s.c.ptr, n, n, s.c.ld)?;
    for j in 0..n {
        let rows = if uplo == LOWER { j..n } else { 0..j + 1 };
        for i in rows {
            let old = if beta == T::zero() {
                T::zero()
            } else {
                beta * cm.get(i, j)
            };
            let mut v = p.get(i, j) + old;
            if s.hermitian && i == j {
                v = T::from_parts(v.re(), 0.0);
            }
            cm.set(i, j, v);
        }
    }
    cm.write(memory, dt, s.c.ptr)?;
    Ok(Vec::new())
}

/// The arguments of [`trmm`].
pub(crate) struct TriArgs {
    pub(crate) solve: bool,
    pub(crate) side: i32,
    pub(crate) uplo: i32,
    pub(crate) trans: i32,
    pub(crate) diag: i32,
    pub(crate) m: i64,
    pub(crate) n: i64,
    pub(crate) alpha: Scalar,
    pub(crate) a: Operand,
    pub(crate) b: Operand,
    pub(crate) c: Operand,
}

/// trmm (`C = alpha op(A) B` or `alpha B op(A)`) and trsm (`B = alpha
/// op(A)^-1 B` or `alpha B op(A)^-1`, with `solve`).
pub(crate) fn trmm<T: Elem>(memory: &mut dyn DeviceMemory, t: TriArgs) -> Result<Vec<u8>, Failure> {
    let side = one_of(t.side, &[LEFT, RIGHT])?;
    let uplo = one_of(t.uplo, &[LOWER, UPPER])?;
    let trans = one_of(t.trans, &[OP_N, OP_T, OP_C])?;
    let diag = one_of(t.diag, &[0, UNIT])?;
    let (m, n) = (dim(t.m)?, dim(t.n)?);
    let na = if side == LEFT { m } else { n };
    check_ld(t.a.ld, na)?;
    check_ld(t.b.ld, m)?;
    if !t.solve {
        check_ld(t.c.ld, m)?;
    }
    let dt = T::DTYPE;
    let alpha: T = scalar(memory, t.alpha, dt)?;
    if m == 0 || n == 0 {
        return Ok(Vec::new());
    }
    let am = Matrix::<T>::read(memory, dt, t.a.ptr, na, na, t.a.ld)?;
    let mut bm = Matrix::<T>::read(memory, dt, t.b.ptr, m, n, t.b.ld)?;
    let at = |i, j| op_tri(&am, uplo, trans, diag, i, j);
    if !t.solve {
        let mut op_a = Matrix::zeros(na, na);
        for j in 0..na {
            for i in 0..na {
                op_a.set(i, j, at(i, j));
            }
        }
        let mut cm = Matrix::<T>::read(memory, dt, t.c.ptr, m, n, t.c.ld)?;
        if side == LEFT {
            product(alpha, &op_a, OP_N, &bm, OP_N, T::zero(), &mut cm);
        } else {
            product(alpha, &bm, OP_N, &op_a, OP_N, T::zero(), &mut cm);
        }
        cm.write(memory, dt, t.c.ptr)?;
        return Ok(Vec::new());
    }
    let lower = (uplo == LOWER) == (trans == OP_N);
    if side == LEFT {
        // op(A) X = alpha B, one column of B at a time.
        for j in 0..n {
            if deadline::passed() {
                break;
            }
            let rhs: Vec<T> = (0..m).map(|i| alpha * bm.get(i, j)).collect();
            for (i, v) in solve_tri(m, lower, at, &rhs).into_iter().enumerate() {
                bm.set(i, j, v);
            }
        }
    } else {
        // X op(A) = alpha B: each row x of X solves op(A)^T x^T = b^T.
        for i in 0..m {
            if deadline::passed() {
                break;
            }
            let rhs: Vec<T> = (0..n).map(|j| alpha * bm.get(i, j)).collect();
            let transposed = |r, c| at(c, r);
            for (j, v) in solve_tri(n, !lower, transposed, &rhs)
                .into_iter()
                .enumerate()
            {
                bm.set(i, j, v);
            }
        }
    }
    bm.write(memory, dt, t.b.ptr)?;
    Ok(Vec::new())
}

/// geam: `C = alpha op(A) + beta op(B)`; C may be A or B (in place).
#[allow(clippy::too_many_arguments)]
pub(crate) fn geam<T: Elem>(
    memory: &mut dyn DeviceMemory,
    transa: i32,
    transb: i32,
    m: i64,
    n: i64,
    alpha: Scalar,
    a: Operand,
    beta: Scalar,
    b: Operand,
    c: Operand,
) -> Result<Vec<u8>, Failure> {
    let transa = one_of(transa, &[OP_N, OP_T, OP_C])?;
    let transb = one_of(transb, &[OP_N, OP_T, OP_C])?;
    let (m, n) = (dim(m)?, dim(n)?);
    let shape = |trans| if trans == OP_N { (m, n) } else { (n, m) };
    let ((ar, ac), (br, bc)) = (shape(transa), shape(transb));
    check_ld(a.ld, ar)?;
    check_ld(b.ld, br)?;
    check_ld(c.ld, m)?;
    let dt = T::DTYPE;
    let alpha: T = scalar(memory, alpha, dt)?;
    let beta: T = scalar(memory, beta, dt)?;
    if m == 0 || n == 0 {
        return Ok(Vec::new());
    }
    // A zero scalar leaves its matrix unread (it may be any pointer then).
    let read = |memory: &dyn DeviceMemory, s: T, op: Operand, r, c| {
        if s == T::zero() {
            Ok(Matrix::zeros(r, c))
        } else {
            Matrix::<T>::read(memory, dt, op.ptr, r, c, op.ld)
        }
    };
    let am = read(memory, alpha, a, ar, ac)?;
    let bm = read(memory, beta, b, br, bc)?;
    let elem = |mat: &Matrix<T>, trans, i, j| match trans {
        OP_N => mat.get(i, j),
        OP_T => mat.get(j, i),
        _ => mat.get(j, i).conj(),
    };
    let mut cm = Matrix::<T>::read(memory, dt, c.ptr, m, n, c.ld)?;
    for j in 0..n {
        for i in 0..m {
            let mut v = T::zero();
            if alpha != T::zero() {
                v = v + alpha * elem(&am, transa, i, j);
            }
            if beta != T::zero() {
                v = v + beta * elem(&bm, transb, i, j);
            }
            cm.set(i, j, v);
        }
    }
    cm.write(memory, dt, c.ptr)?;
    Ok(Vec::new())
}

/// dgmm: `C = A diag(x)` (side right) or `diag(x) A` (side left).
pub(crate) fn dgmm<T: Elem>(
    memory: &mut dyn DeviceMemory,
    side: i32,
    m: i64,
    n: i64,
    a: Operand,
    x: Operand,
    c: Operand,
) -> Result<Vec<u8>, Failure> {
    let side = one_of(side, &[LEFT, RIGHT])?;
    let (m, n) = (dim(m)?, dim(n)?);
    check_ld(a.ld, m)?;
    check_ld(c.ld, m)?;
    if m == 0 || n == 0 {
        return Ok(Vec::new());
    }
    let dt = T::DTYPE;
    let am = Matrix::<T>::read(memory, dt, a.ptr, m, n, a.ld)?;
    let len = if side == LEFT { m } else { n };
    // dgmm allows incx = 0 (one scalar for the whole diagonal).
    let xv: Vec<T> = if x.ld == 0 {
        let size = dtype::size(dt).ok_or(Failure::Status(INVALID_VALUE))?;
        let v = load::<T>(dt, memory.read(x.ptr, size)?)?;
        vec![v.first().copied().unwrap_or_else(T::zero); len]
    } else {
        let v = Vector::<T>::read(memory, dt, x, len)?;
        (0..len).map(|i| v.get(i)).collect()
    };
    let mut cm = Matrix::<T>::read(memory, dt, c.ptr, m, n, c.ld)?;
    for j in 0..n {
        for i in 0..m {
            let d = if side == LEFT { xv[i] } else { xv[j] };
            cm.set(i, j, am.get(i, j) * d);
        }
    }
    cm.write(memory, dt, c.ptr)?;
    Ok(Vec::new())
}

/// The arguments of [`matmul`] (one cuBLASLt
/// [`Call::Matmul`](rcud_proto::math::blaslt::Call::Matmul)).
pub(crate) struct MatmulArgs {
    pub(crate) gemm: GemmArgs,
    pub(crate) d: Operand,
    pub(crate) epilogue: i32,
    pub(crate) bias: u64,
    pub(crate) bias_stride: i64,
}

/// GELU, tanh approximation (as cuBLASLt's epilogue).
fn gelu(x: f64) -> f64 {
    const SQRT_2_OVER_PI: f64 = 0.797_884_560_802_865_4;
    0.5 * x * (1.0 + (SQRT_2_OVER_PI * (x + 0.044_715 * x * x * x)).tanh())
}

/// cuBLASLt's matmul: `D = epilogue(alpha op(A) op(B) + beta C)`, strided
/// batches, D with a layout of its own.
pub(crate) fn matmul<T: Elem>(
    memory: &mut dyn DeviceMemory,
    args: MatmulArgs,
) -> Result<Vec<u8>, Failure> {
    let g = &args.gemm;
    let [ta, tb, tc, ts] = g.types;
    let transa = one_of(g.transa, &[OP_N, OP_T, OP_C])?;
    let transb = one_of(g.transb, &[OP_N, OP_T, OP_C])?;
    let (m, n, k, batch) = (dim(g.m)?, dim(g.n)?, dim(g.k)?, dim(g.batch)?);
    let (ar, ac) = if transa == OP_N { (m, k) } else { (k, m) };
    let (br, bc) = if transb == OP_N { (k, n) } else { (n, k) };
    check_ld(g.a.ld, ar)?;
    check_ld(g.b.ld, br)?;
    check_ld(g.c.ld, m)?;
    check_ld(args.d.ld, m)?;
    let (with_bias, relu, gelu_on) = match args.epilogue {
        epilogue::DEFAULT => (false, false, false),
        epilogue::RELU => (false, true, false),
        epilogue::BIAS => (true, false, false),
        epilogue::RELU_BIAS => (true, true, false),
        epilogue::GELU => (false, false, true),
        epilogue::GELU_BIAS => (true, false, true),
        _ => return Err(Failure::Status(super::NOT_SUPPORTED)),
    };
    if args.epilogue != epilogue::DEFAULT && dtype::is_complex(tc) {
        return Err(Failure::Status(super::NOT_SUPPORTED));
    }
    let alpha: T = scalar(memory, g.alpha, ts)?;
    let beta: T = scalar(memory, g.beta, ts)?;
    if m == 0 || n == 0 || batch == 0 {
        return Ok(Vec::new());
    }
    let pa = BatchPointers::new(memory, g.a, ta, batch, false)?;
    let pb = BatchPointers::new(memory, g.b, tb, batch, false)?;
    let pc = BatchPointers::new(memory, g.c, tc, batch, false)?;
    let pd = BatchPointers::new(memory, args.d, tc, batch, false)?;
    let bias_at = Operand {
        ptr: args.bias,
        ld: 1,
        stride: args.bias_stride,
    };
    let pbias = BatchPointers::new(memory, bias_at, tc, batch, false)?;
    let needs_ab = alpha != T::zero() && k > 0;
    for i in 0..batch {
        check_time(memory)?;
        let (a, b) = if needs_ab {
            (
                Matrix::<T>::read(memory, ta, pa.get(i)?, ar, ac, g.a.ld)?,
                Matrix::<T>::read(memory, tb, pb.get(i)?, br, bc, g.b.ld)?,
            )
        } else {
            (Matrix::zeros(ar, ac), Matrix::zeros(br, bc))
        };
        let mut acc = Matrix::zeros(m, n);
        if beta != T::zero() {
            let c = Matrix::<T>::read(memory, tc, pc.get(i)?, m, n, g.c.ld)?;
            for j in 0..n {
                for r in 0..m {
                    acc.set(r, j, c.get(r, j));
                }
            }
        }
        product(alpha, &a, transa, &b, transb, beta, &mut acc);
        if args.epilogue != epilogue::DEFAULT {
            let bias = if with_bias {
                let size = dtype::size(tc).ok_or(Failure::Status(super::NOT_SUPPORTED))?;
                load::<T>(tc, memory.read(pbias.get(i)?, size * m as u64)?)?
            } else {
                Vec::new()
            };
            for j in 0..n {
                for r in 0..m {
                    let mut x = acc.get(r, j).re();
                    if let Some(b) = bias.get(r) {
                        x += b.re();
                    }
                    if relu {
                        x = x.max(0.0);
                    }
                    if gelu_on {
                        x = gelu(x);
                    }
                    acc.set(r, j, T::from_parts(x, 0.0));
                }
            }
        }
        acc.write_to(memory, tc, pd.get(i)?, args.d.ld)?;
    }
    Ok(Vec::new())
}
