//! cuBLAS level 3: gemm (single, batched, strided-batched, the `Ex` forms
//! with FP16/BF16/FP32/FP64/complex types), symm/hemm, syrk/herk,
//! syr2k/her2k, syrkx/herkx, trmm, trsm, geam, dgmm (and their `_64`
//! forms).

use std::os::raw::{c_int, c_void};

use rcud_proto::math::blas::{dtype, Call, Operand, Scalar};

use super::{
    both, diag_arg, fill_arg, handle, is_zero, matrix, nonnegative, op_arg, pointer_array,
    side_arg, strided, vector_or_broadcast, Half, Handle, HandleState, HostValue, NOT_SUPPORTED,
};

/// How the operands of a GEMM are laid out.
#[derive(Clone, Copy)]
enum Batch {
    /// One product.
    Single,
    /// `count` products at the given element strides of A, B and C.
    Strided { count: i64, strides: [i64; 3] },
    /// `count` products named by device arrays of pointers.
    Pointers { count: i64 },
}

/// The shape of a GEMM call.
struct Gemm {
    types: [u8; 4],
    transa: c_int,
    transb: c_int,
    m: i64,
    n: i64,
    k: i64,
    lda: i64,
    ldb: i64,
    ldc: i64,
}

/// Checks and queues a GEMM of any form.
fn gemm(
    s: &HandleState,
    g: Gemm,
    alpha: Scalar,
    beta: Scalar,
    operands: (*const c_void, *const c_void, *const c_void),
    batch: Batch,
) -> Result<(), c_int> {
    match gemm_call(s, g, alpha, beta, operands, batch)? {
        Some(call) => s.enqueue(&call),
        None => Ok(()),
    }
}

/// Checks a GEMM of any form: its wire call, or None when there is
/// nothing to compute.
fn gemm_call(
    s: &HandleState,
    g: Gemm,
    alpha: Scalar,
    beta: Scalar,
    (a, b, c): (*const c_void, *const c_void, *const c_void),
    batch: Batch,
) -> Result<Option<Call>, c_int> {
    op_arg(g.transa)?;
    op_arg(g.transb)?;
    nonnegative(&[g.m, g.n, g.k])?;
    let [ta, tb, tc, _] = g.types;
    let size = |t: u8| dtype::size(t).ok_or(NOT_SUPPORTED).map(|s| s as usize);
    let (ar, ac) = if g.transa == 0 {
        (g.m, g.k)
    } else {
        (g.k, g.m)
    };
    let (br, bc) = if g.transb == 0 {
        (g.k, g.n)
    } else {
        (g.n, g.k)
    };
    // With alpha = 0 (or k = 0), A and B are not read and need not be valid.
    let ab_read = !is_zero(alpha) && g.k > 0;
    let (ar, ac, br, bc) = if ab_read {
        (ar, ac, br, bc)
    } else {
        (ar, 0, br, 0)
    };
    let (a, b, c, count, pointer_arrays) = match batch {
        Batch::Single => (
            matrix(a, ar, ac, g.lda, size(ta)?)?,
            matrix(b, br, bc, g.ldb, size(tb)?)?,
            matrix(c, g.m, g.n, g.ldc, size(tc)?)?,
            1,
            false,
        ),
        Batch::Strided { count, strides } => {
            nonnegative(&[count])?;
            (
                strided(a, ar, ac, g.lda, strides[0], count, size(ta)?)?,
                strided(b, br, bc, g.ldb, strides[1], count, size(tb)?)?,
                strided(c, g.m, g.n, g.ldc, strides[2], count, size(tc)?)?,
                count,
                false,
            )
        }
        Batch::Pointers { count } => {
            nonnegative(&[count])?;
            let used = |rows, ptr, ld| -> Result<Operand, c_int> {
                if ab_read {
                    pointer_array(ptr, ld, rows, count)
                } else {
                    super::leading(ld, rows)?;
                    Ok(Operand {
                        ptr: ptr as u64,
                        ld,
                        stride: 0,
                    })
                }
            };
            (
                used(ar, a, g.lda)?,
                used(br, b, g.ldb)?,
                pointer_array(c, g.ldc, g.m, count)?,
                count,
                true,
            )
        }
    };
    if g.m == 0 || g.n == 0 || count == 0 {
        return Ok(None);
    }
    Ok(Some(Call::Gemm {
        handle: s.id(),
        types: g.types,
        transa: g.transa,
        transb: g.transb,
        m: g.m,
        n: g.n,
        k: g.k,
        alpha,
        a,
        b,
        beta,
        c,
        batch: count,
        pointer_arrays,
    }))
}

macro_rules! gemm {
    ($(fn $name:ident / $name64:ident ($t:ty, $dt:ident);)*) => {$(
        both! { fn $name / $name64 (h: Handle, transa: c_int, transb: c_int, m: Int, n: Int, k: Int, alpha: *const $t, a: *const $t, lda: Int, b: *const $t, ldb: Int, beta: *const $t, c: *mut $t, ldc: Int) {
            let s = handle(h)?;
            let g = Gemm { types: [dtype::$dt; 4], transa, transb, m: m.into(), n: n.into(), k: k.into(), lda: lda.into(), ldb: ldb.into(), ldc: ldc.into() };
            gemm(&s, g, s.scalar(alpha)?, s.scalar(beta)?, (a.cast(), b.cast(), c.cast_const().cast()), Batch::Single)
        } }
    )*};
}

gemm! {
    fn cublasSgemm_v2 / cublasSgemm_v2_64 (f32, R32F);
    fn cublasDgemm_v2 / cublasDgemm_v2_64 (f64, R64F);
    fn cublasCgemm_v2 / cublasCgemm_v2_64 ([f32; 2], C32F);
    fn cublasZgemm_v2 / cublasZgemm_v2_64 ([f64; 2], C64F);
}

macro_rules! gemm_batched {
    ($(fn $name:ident / $name64:ident ($t:ty, $dt:ident);)*) => {$(
        both! { fn $name / $name64 (h: Handle, transa: c_int, transb: c_int, m: Int, n: Int, k: Int, alpha: *const $t, a: *const *const $t, lda: Int, b: *const *const $t, ldb: Int, beta: *const $t, c: *const *mut $t, ldc: Int, count: Int) {
            let s = handle(h)?;
            let g = Gemm { types: [dtype::$dt; 4], transa, transb, m: m.into(), n: n.into(), k: k.into(), lda: lda.into(), ldb: ldb.into(), ldc: ldc.into() };
            gemm(&s, g, s.scalar(alpha)?, s.scalar(beta)?, (a.cast(), b.cast(), c.cast()), Batch::Pointers { count: count.into() })
        } }
    )*};
}

gemm_batched! {
    fn cublasSgemmBatched / cublasSgemmBatched_64 (f32, R32F);
    fn cublasDgemmBatched / cublasDgemmBatched_64 (f64, R64F);
    fn cublasCgemmBatched / cublasCgemmBatched_64 ([f32; 2], C32F);
    fn cublasZgemmBatched / cublasZgemmBatched_64 ([f64; 2], C64F);
}

macro_rules! gemm_strided {
    ($(fn $name:ident / $name64:ident ($t:ty, $dt:ident);)*) => {$(
        both! { fn $name / $name64 (h: Handle, transa: c_int, transb: c_int, m: Int, n: Int, k: Int, alpha: *const $t, a: *const $t, lda: Int, stride_a: i64, b: *const $t, ldb: Int, stride_b: i64, beta: *const $t, c: *mut $t, ldc: Int, stride_c: i64, count: Int) {
            let s = handle(h)?;
            let g = Gemm { types: [dtype::$dt; 4], transa, transb, m: m.into(), n: n.into(), k: k.into(), lda: lda.into(), ldb: ldb.into(), ldc: ldc.into() };
            let batch = Batch::Strided { count: count.into(), strides: [stride_a, stride_b, stride_c] };
            gemm(&s, g, s.scalar(alpha)?, s.scalar(beta)?, (a.cast(), b.cast(), c.cast_const().cast()), batch)
        } }
    )*};
}

gemm_strided! {
    fn cublasSgemmStridedBatched / cublasSgemmStridedBatched_64 (f32, R32F);
    fn cublasDgemmStridedBatched / cublasDgemmStridedBatched_64 (f64, R64F);
    fn cublasCgemmStridedBatched / cublasCgemmStridedBatched_64 ([f32; 2], C32F);
    fn cublasZgemmStridedBatched / cublasZgemmStridedBatched_64 ([f64; 2], C64F);
}

/// The element types and scalar of a `cublasGemm*Ex` call: `types` for the
/// wire (A, B, C, compute), and alpha/beta read per the compute type.
fn ex_types(
    s: &HandleState,
    (ta, tb, tc): (c_int, c_int, c_int),
    compute: c_int,
    alpha: *const c_void,
    beta: *const c_void,
) -> Result<([u8; 4], Scalar, Scalar), c_int> {
    let known = |t: c_int| {
        u8::try_from(t)
            .ok()
            .filter(|&t| dtype::size(t).is_some())
            .ok_or(NOT_SUPPORTED)
    };
    let (ta, tb, tc) = (known(ta)?, known(tb)?, known(tc)?);
    let complex = dtype::is_complex(tc);
    if dtype::is_complex(ta) != complex || dtype::is_complex(tb) != complex {
        return Err(NOT_SUPPORTED);
    }
    fn read<T: HostValue>(
        s: &HandleState,
        a: *const c_void,
        b: *const c_void,
    ) -> Result<(Scalar, Scalar), c_int> {
        Ok((s.scalar(a.cast::<T>())?, s.scalar(b.cast::<T>())?))
    }
    // cublasComputeType_t: 16F (64, 65); 32F (68, 69) and its fast and
    // emulated forms (74, 75, 77, 78), computed here in full FP32; 64F
    // (70, 71, 79). Integer compute (72, 73) is not supported.
    let (compute, (alpha, beta)) = match (compute, complex) {
        (64 | 65, false) => (dtype::R16F, read::<Half>(s, alpha, beta)?),
        (68 | 69 | 74 | 75 | 77 | 78, false) => (dtype::R32F, read::<f32>(s, alpha, beta)?),
        (68 | 69 | 74 | 75 | 77 | 78, true) => (dtype::C32F, read::<[f32; 2]>(s, alpha, beta)?),
        (70 | 71 | 79, false) => (dtype::R64F, read::<f64>(s, alpha, beta)?),
        (70 | 71 | 79, true) => (dtype::C64F, read::<[f64; 2]>(s, alpha, beta)?),
        _ => return Err(NOT_SUPPORTED),
    };
    Ok(([ta, tb, tc, compute], alpha, beta))
}

both! {
    fn cublasGemmEx / cublasGemmEx_64 (h: Handle, transa: c_int, transb: c_int, m: Int, n: Int, k: Int, alpha: *const c_void, a: *const c_void, atype: c_int, lda: Int, b: *const c_void, btype: c_int, ldb: Int, beta: *const c_void, c: *mut c_void, ctype: c_int, ldc: Int, compute: c_int, _algo: c_int) {
        let s = handle(h)?;
        let (types, alpha, beta) = ex_types(&s, (atype, btype, ctype), compute, alpha, beta)?;
        let g = Gemm { types, transa, transb, m: m.into(), n: n.into(), k: k.into(), lda: lda.into(), ldb: ldb.into(), ldc: ldc.into() };
        gemm(&s, g, alpha, beta, (a, b, c.cast_const()), Batch::Single)
    }
}

both! {
    fn cublasGemmBatchedEx / cublasGemmBatchedEx_64 (h: Handle, transa: c_int, transb: c_int, m: Int, n: Int, k: Int, alpha: *const c_void, a: *const *const c_void, atype: c_int, lda: Int, b: *const *const c_void, btype: c_int, ldb: Int, beta: *const c_void, c: *const *mut c_void, ctype: c_int, ldc: Int, count: Int, compute: c_int, _algo: c_int) {
        let s = handle(h)?;
        let (types, alpha, beta) = ex_types(&s, (atype, btype, ctype), compute, alpha, beta)?;
        let g = Gemm { types, transa, transb, m: m.into(), n: n.into(), k: k.into(), lda: lda.into(), ldb: ldb.into(), ldc: ldc.into() };
        gemm(&s, g, alpha, beta, (a.cast(), b.cast(), c.cast()), Batch::Pointers { count: count.into() })
    }
}

both! {
    fn cublasGemmStridedBatchedEx / cublasGemmStridedBatchedEx_64 (h: Handle, transa: c_int, transb: c_int, m: Int, n: Int, k: Int, alpha: *const c_void, a: *const c_void, atype: c_int, lda: Int, stride_a: i64, b: *const c_void, btype: c_int, ldb: Int, stride_b: i64, beta: *const c_void, c: *mut c_void, ctype: c_int, ldc: Int, stride_c: i64, count: Int, compute: c_int, _algo: c_int) {
        let s = handle(h)?;
        let (types, alpha, beta) = ex_types(&s, (atype, btype, ctype), compute, alpha, beta)?;
        let g = Gemm { types, transa, transb, m: m.into(), n: n.into(), k: k.into(), lda: lda.into(), ldb: ldb.into(), ldc: ldc.into() };
        let batch = Batch::Strided { count: count.into(), strides: [stride_a, stride_b, stride_c] };
        gemm(&s, g, alpha, beta, (a, b, c.cast_const()), batch)
    }
}

macro_rules! symm {
    ($(fn $name:ident / $name64:ident ($t:ty, $dt:ident, $hermitian:expr);)*) => {$(
        both! { fn $name / $name64 (h: Handle, side: c_int, uplo: c_int, m: Int, n: Int, alpha: *const $t, a: *const $t, lda: Int, b: *const $t, ldb: Int, beta: *const $t, c: *mut $t, ldc: Int) {
            let s = handle(h)?;
            side_arg(side)?;
            fill_arg(uplo)?;
            let (m, n) = (i64::from(m), i64::from(n));
            nonnegative(&[m, n])?;
            let size = std::mem::size_of::<$t>();
            let na = if side == 0 { m } else { n };
            s.enqueue(&Call::Symm {
                handle: s.id(),
                dtype: dtype::$dt,
                hermitian: $hermitian,
                side,
                uplo,
                m,
                n,
                alpha: s.scalar(alpha)?,
                a: matrix(a.cast(), na, na, lda.into(), size)?,
                b: matrix(b.cast(), m, n, ldb.into(), size)?,
                beta: s.scalar(beta)?,
                c: matrix(c.cast_const().cast(), m, n, ldc.into(), size)?,
            })
        } }
    )*};
}

symm! {
    fn cublasSsymm_v2 / cublasSsymm_v2_64 (f32, R32F, false);
    fn cublasDsymm_v2 / cublasDsymm_v2_64 (f64, R64F, false);
    fn cublasCsymm_v2 / cublasCsymm_v2_64 ([f32; 2], C32F, false);
    fn cublasZsymm_v2 / cublasZsymm_v2_64 ([f64; 2], C64F, false);
    fn cublasChemm_v2 / cublasChemm_v2_64 ([f32; 2], C32F, true);
    fn cublasZhemm_v2 / cublasZhemm_v2_64 ([f64; 2], C64F, true);
}

macro_rules! syrk {
    ($(fn $name:ident / $name64:ident ($t:ty, $dt:ident, $s:ty, $hermitian:expr);)*) => {$(
        both! { fn $name / $name64 (h: Handle, uplo: c_int, trans: c_int, n: Int, k: Int, alpha: *const $s, a: *const $t, lda: Int, beta: *const $s, c: *mut $t, ldc: Int) {
            let s = handle(h)?;
            fill_arg(uplo)?;
            op_arg(trans)?;
            // As syr2k: complex syrk takes N or T, herk N or C (the call is
            // queued, so the server's status would not reach the caller).
            if dtype::is_complex(dtype::$dt) && trans == if $hermitian { 1 } else { 2 } {
                return Err($crate::math::blas::INVALID_VALUE);
            }
            let (n, k) = (i64::from(n), i64::from(k));
            nonnegative(&[n, k])?;
            let size = std::mem::size_of::<$t>();
            let (ar, ac) = if trans == 0 { (n, k) } else { (k, n) };
            s.enqueue(&Call::Syrk {
                handle: s.id(),
                dtype: dtype::$dt,
                hermitian: $hermitian,
                uplo,
                trans,
                n,
                k,
                alpha: s.scalar(alpha)?,
                a: matrix(a.cast(), ar, ac, lda.into(), size)?,
                beta: s.scalar(beta)?,
                c: matrix(c.cast_const().cast(), n, n, ldc.into(), size)?,
            })
        } }
    )*};
}

syrk! {
    fn cublasSsyrk_v2 / cublasSsyrk_v2_64 (f32, R32F, f32, false);
    fn cublasDsyrk_v2 / cublasDsyrk_v2_64 (f64, R64F, f64, false);
    fn cublasCsyrk_v2 / cublasCsyrk_v2_64 ([f32; 2], C32F, [f32; 2], false);
    fn cublasZsyrk_v2 / cublasZsyrk_v2_64 ([f64; 2], C64F, [f64; 2], false);
    fn cublasCherk_v2 / cublasCherk_v2_64 ([f32; 2], C32F, f32, true);
    fn cublasZherk_v2 / cublasZherk_v2_64 ([f64; 2], C64F, f64, true);
}

macro_rules! syr2k {
    ($(fn $name:ident / $name64:ident ($t:ty, $dt:ident, $b:ty, $hermitian:expr, $x:expr);)*) => {$(
        both! { fn $name / $name64 (h: Handle, uplo: c_int, trans: c_int, n: Int, k: Int, alpha: *const $t, a: *const $t, lda: Int, b: *const $t, ldb: Int, beta: *const $b, c: *mut $t, ldc: Int) {
            let s = handle(h)?;
            fill_arg(uplo)?;
            op_arg(trans)?;
            // The complex symmetric forms take N or T, the Hermitian N or C
            // (checked here: the call is queued, its status not waited for).
            if dtype::is_complex(dtype::$dt) && trans == if $hermitian { 1 } else { 2 } {
                return Err($crate::math::blas::INVALID_VALUE);
            }
            let (n, k) = (i64::from(n), i64::from(k));
            nonnegative(&[n, k])?;
            let size = std::mem::size_of::<$t>();
            let (ar, ac) = if trans == 0 { (n, k) } else { (k, n) };
            s.enqueue(&Call::Syr2k {
                handle: s.id(),
                dtype: dtype::$dt,
                hermitian: $hermitian,
                x: $x,
                uplo,
                trans,
                n,
                k,
                alpha: s.scalar(alpha)?,
                a: matrix(a.cast(), ar, ac, lda.into(), size)?,
                b: matrix(b.cast(), ar, ac, ldb.into(), size)?,
                beta: s.scalar(beta)?,
                c: matrix(c.cast_const().cast(), n, n, ldc.into(), size)?,
            })
        } }
    )*};
}

syr2k! {
    fn cublasSsyr2k_v2 / cublasSsyr2k_v2_64 (f32, R32F, f32, false, false);
    fn cublasDsyr2k_v2 / cublasDsyr2k_v2_64 (f64, R64F, f64, false, false);
    fn cublasCsyr2k_v2 / cublasCsyr2k_v2_64 ([f32; 2], C32F, [f32; 2], false, false);
    fn cublasZsyr2k_v2 / cublasZsyr2k_v2_64 ([f64; 2], C64F, [f64; 2], false, false);
    fn cublasCher2k_v2 / cublasCher2k_v2_64 ([f32; 2], C32F, f32, true, false);
    fn cublasZher2k_v2 / cublasZher2k_v2_64 ([f64; 2], C64F, f64, true, false);
    fn cublasSsyrkx / cublasSsyrkx_64 (f32, R32F, f32, false, true);
    fn cublasDsyrkx / cublasDsyrkx_64 (f64, R64F, f64, false, true);
    fn cublasCsyrkx / cublasCsyrkx_64 ([f32; 2], C32F, [f32; 2], false, true);
    fn cublasZsyrkx / cublasZsyrkx_64 ([f64; 2], C64F, [f64; 2], false, true);
    fn cublasCherkx / cublasCherkx_64 ([f32; 2], C32F, f32, true, true);
    fn cublasZherkx / cublasZherkx_64 ([f64; 2], C64F, f64, true, true);
}

/// Checks and queues trmm (into `c`) or trsm (in place in `b`).
#[allow(clippy::too_many_arguments)]
fn triangular(
    s: &HandleState,
    dt: u8,
    solve: bool,
    (side, uplo, trans, diag): (c_int, c_int, c_int, c_int),
    (m, n): (i64, i64),
    alpha: Scalar,
    (a, lda): (*const c_void, i64),
    (b, ldb): (*const c_void, i64),
    (c, ldc): (*const c_void, i64),
) -> Result<(), c_int> {
    side_arg(side)?;
    fill_arg(uplo)?;
    op_arg(trans)?;
    diag_arg(diag)?;
    nonnegative(&[m, n])?;
    let size = dtype::size(dt).unwrap_or(1) as usize;
    let na = if side == 0 { m } else { n };
    let c = if solve {
        Operand {
            ptr: 0,
            ld: 1,
            stride: 0,
        }
    } else {
        matrix(c, m, n, ldc, size)?
    };
    s.enqueue(&Call::Trmm {
        handle: s.id(),
        dtype: dt,
        solve,
        side,
        uplo,
        trans,
        diag,
        m,
        n,
        alpha,
        a: matrix(a, na, na, lda, size)?,
        b: matrix(b, m, n, ldb, size)?,
        c,
    })
}

macro_rules! trmm {
    ($(fn $name:ident / $name64:ident ($t:ty, $dt:ident);)*) => {$(
        both! { fn $name / $name64 (h: Handle, side: c_int, uplo: c_int, trans: c_int, diag: c_int, m: Int, n: Int, alpha: *const $t, a: *const $t, lda: Int, b: *const $t, ldb: Int, c: *mut $t, ldc: Int) {
            let s = handle(h)?;
            triangular(&s, dtype::$dt, false, (side, uplo, trans, diag), (m.into(), n.into()), s.scalar(alpha)?, (a.cast(), lda.into()), (b.cast(), ldb.into()), (c.cast_const().cast(), ldc.into()))
        } }
    )*};
}

trmm! {
    fn cublasStrmm_v2 / cublasStrmm_v2_64 (f32, R32F);
    fn cublasDtrmm_v2 / cublasDtrmm_v2_64 (f64, R64F);
    fn cublasCtrmm_v2 / cublasCtrmm_v2_64 ([f32; 2], C32F);
    fn cublasZtrmm_v2 / cublasZtrmm_v2_64 ([f64; 2], C64F);
}

macro_rules! trsm {
    ($(fn $name:ident / $name64:ident ($t:ty, $dt:ident);)*) => {$(
        both! { fn $name / $name64 (h: Handle, side: c_int, uplo: c_int, trans: c_int, diag: c_int, m: Int, n: Int, alpha: *const $t, a: *const $t, lda: Int, b: *mut $t, ldb: Int) {
            let s = handle(h)?;
            triangular(&s, dtype::$dt, true, (side, uplo, trans, diag), (m.into(), n.into()), s.scalar(alpha)?, (a.cast(), lda.into()), (b.cast_const().cast(), ldb.into()), (std::ptr::null(), 1))
        } }
    )*};
}

trsm! {
    fn cublasStrsm_v2 / cublasStrsm_v2_64 (f32, R32F);
    fn cublasDtrsm_v2 / cublasDtrsm_v2_64 (f64, R64F);
    fn cublasCtrsm_v2 / cublasCtrsm_v2_64 ([f32; 2], C32F);
    fn cublasZtrsm_v2 / cublasZtrsm_v2_64 ([f64; 2], C64F);
}

macro_rules! geam {
    ($(fn $name:ident / $name64:ident ($t:ty, $dt:ident);)*) => {$(
        both! { fn $name / $name64 (h: Handle, transa: c_int, transb: c_int, m: Int, n: Int, alpha: *const $t, a: *const $t, lda: Int, beta: *const $t, b: *const $t, ldb: Int, c: *mut $t, ldc: Int) {
            let s = handle(h)?;
            op_arg(transa)?;
            op_arg(transb)?;
            let (m, n) = (i64::from(m), i64::from(n));
            nonnegative(&[m, n])?;
            let size = std::mem::size_of::<$t>();
            let (alpha, beta) = (s.scalar(alpha)?, s.scalar(beta)?);
            let shape = |t| if t == 0 { (m, n) } else { (n, m) };
            // A matrix whose scalar is a host zero is not read.
            let operand = |scalar, ptr: *const $t, t, ld: Int| {
                let (r, c) = shape(t);
                matrix(ptr.cast(), r, if is_zero(scalar) { 0 } else { c }, ld.into(), size)
            };
            s.enqueue(&Call::Geam {
                handle: s.id(),
                dtype: dtype::$dt,
                transa,
                transb,
                m,
                n,
                alpha,
                a: operand(alpha, a, transa, lda)?,
                beta,
                b: operand(beta, b, transb, ldb)?,
                c: matrix(c.cast_const().cast(), m, n, ldc.into(), size)?,
            })
        } }
    )*};
}

geam! {
    fn cublasSgeam / cublasSgeam_64 (f32, R32F);
    fn cublasDgeam / cublasDgeam_64 (f64, R64F);
    fn cublasCgeam / cublasCgeam_64 ([f32; 2], C32F);
    fn cublasZgeam / cublasZgeam_64 ([f64; 2], C64F);
}

macro_rules! dgmm {
    ($(fn $name:ident / $name64:ident ($t:ty, $dt:ident);)*) => {$(
        both! { fn $name / $name64 (h: Handle, mode: c_int, m: Int, n: Int, a: *const $t, lda: Int, x: *const $t, incx: Int, c: *mut $t, ldc: Int) {
            let s = handle(h)?;
            side_arg(mode)?;
            let (m, n) = (i64::from(m), i64::from(n));
            nonnegative(&[m, n])?;
            let size = std::mem::size_of::<$t>();
            let len = if mode == 0 { m } else { n };
            let incx = i64::from(incx);
            let x = vector_or_broadcast(x.cast(), len, incx, size)?;
            s.enqueue(&Call::Dgmm {
                handle: s.id(),
                dtype: dtype::$dt,
                side: mode,
                m,
                n,
                a: matrix(a.cast(), m, n, lda.into(), size)?,
                x,
                c: matrix(c.cast_const().cast(), m, n, ldc.into(), size)?,
            })
        } }
    )*};
}

dgmm! {
    fn cublasSdgmm / cublasSdgmm_64 (f32, R32F);
    fn cublasDdgmm / cublasDdgmm_64 (f64, R64F);
    fn cublasCdgmm / cublasCdgmm_64 ([f32; 2], C32F);
    fn cublasZdgmm / cublasZdgmm_64 ([f64; 2], C64F);
}

/// The arguments of a grouped GEMM: host arrays of `groups` entries (one
/// per group: operations, sizes, leading dimensions, `sizes` the products
/// in each group) and the device arrays of pointers of all products, group
/// after group.
struct Grouped<I> {
    trans: (*const c_int, *const c_int),
    mnk: (*const I, *const I, *const I),
    ld: (*const I, *const I, *const I),
    operands: (*const c_void, *const c_void, *const c_void),
    groups: i64,
    sizes: *const I,
}

/// Element `i` of a host array of the application's.
fn host_at<T: Copy>(array: *const T, i: usize) -> Result<T, c_int> {
    super::read_host(array.wrapping_add(i))
}

/// Checks every group of a grouped GEMM, then queues each group as one
/// pointer-array GEMM (the pointer arrays at the group's offset). `scalars`
/// answers the types and the alpha and beta of group `i`.
fn grouped<I: Copy + Into<i64>>(
    s: &HandleState,
    g: Grouped<I>,
    scalars: impl Fn(usize) -> Result<([u8; 4], Scalar, Scalar), c_int>,
) -> Result<(), c_int> {
    nonnegative(&[g.groups])?;
    let groups = usize::try_from(g.groups).map_err(|_| super::INVALID_VALUE)?;
    let mut calls = Vec::new();
    let mut offset: u64 = 0;
    for i in 0..groups {
        let count: i64 = host_at(g.sizes, i)?.into();
        nonnegative(&[count])?;
        let (types, alpha, beta) = scalars(i)?;
        let gemm = Gemm {
            types,
            transa: host_at(g.trans.0, i)?,
            transb: host_at(g.trans.1, i)?,
            m: host_at(g.mnk.0, i)?.into(),
            n: host_at(g.mnk.1, i)?.into(),
            k: host_at(g.mnk.2, i)?.into(),
            lda: host_at(g.ld.0, i)?.into(),
            ldb: host_at(g.ld.1, i)?.into(),
            ldc: host_at(g.ld.2, i)?.into(),
        };
        let at = |p: *const c_void| (p as u64).wrapping_add(offset * 8) as *const c_void;
        let (a, b, c) = g.operands;
        let operands = (at(a), at(b), at(c));
        if let Some(call) = gemm_call(s, gemm, alpha, beta, operands, Batch::Pointers { count })? {
            calls.push(call);
        }
        offset = offset
            .checked_add(count as u64)
            .ok_or(super::INVALID_VALUE)?;
    }
    // Nothing is queued unless every group is valid.
    for call in &calls {
        s.enqueue(call)?;
    }
    Ok(())
}

macro_rules! gemm_grouped {
    ($(fn $name:ident / $name64:ident ($t:ty, $dt:ident);)*) => {$(
        both! { fn $name / $name64 (h: Handle, transa: *const c_int, transb: *const c_int, m: *const Int, n: *const Int, k: *const Int, alpha: *const $t, a: *const *const $t, lda: *const Int, b: *const *const $t, ldb: *const Int, beta: *const $t, c: *const *mut $t, ldc: *const Int, groups: Int, sizes: *const Int) {
            let s = handle(h)?;
            let g = Grouped { trans: (transa, transb), mnk: (m, n, k), ld: (lda, ldb, ldc), operands: (a.cast(), b.cast(), c.cast()), groups: groups.into(), sizes };
            grouped(&s, g, |i| Ok(([dtype::$dt; 4], s.scalar(alpha.wrapping_add(i))?, s.scalar(beta.wrapping_add(i))?)))
        } }
    )*};
}

gemm_grouped! {
    fn cublasSgemmGroupedBatched / cublasSgemmGroupedBatched_64 (f32, R32F);
    fn cublasDgemmGroupedBatched / cublasDgemmGroupedBatched_64 (f64, R64F);
}

both! {
    fn cublasGemmGroupedBatchedEx / cublasGemmGroupedBatchedEx_64 (h: Handle, transa: *const c_int, transb: *const c_int, m: *const Int, n: *const Int, k: *const Int, alpha: *const c_void, a: *const *const c_void, atype: c_int, lda: *const Int, b: *const *const c_void, btype: c_int, ldb: *const Int, beta: *const c_void, c: *const *mut c_void, ctype: c_int, ldc: *const Int, groups: Int, sizes: *const Int, compute: c_int) {
        let s = handle(h)?;
        let g = Grouped { trans: (transa, transb), mnk: (m, n, k), ld: (lda, ldb, ldc), operands: (a.cast(), b.cast(), c.cast()), groups: groups.into(), sizes };
        let types = (atype, btype, ctype);
        grouped(&s, g, |i| {
            // The scalars are arrays of the compute type's scalar, whose
            // size the first group's types give.
            let first = ex_types(&s, types, compute, alpha, beta)?;
            if i == 0 {
                return Ok(first);
            }
            let step = dtype::size(first.0[3]).ok_or(NOT_SUPPORTED)? as usize;
            let at = |p: *const c_void| p.cast::<u8>().wrapping_add(i * step).cast::<c_void>();
            ex_types(&s, types, compute, at(alpha), at(beta))
        })
    }
}
