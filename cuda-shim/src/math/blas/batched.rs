//! cuBLAS's batched routines beyond GEMM and LU: `cublas<t>trsmBatched`,
//! `gemvBatched` and `gemvStridedBatched`, `geqrfBatched` and
//! `gelsBatched`. (The half and bfloat16 gemv forms, HSH, HSS, TST and
//! TSS, are declared for C++ only, and so are not in the export list
//! `scripts/gen-exports.py` reads from the C view of the headers; the wire
//! call and the server carry their types.)
//!
//! Arguments are checked here as cuBLAS checks them, pointer arrays and
//! strided batches against the application's allocations; each call is
//! one request for the whole batch. The server checks every matrix a
//! pointer array names as it reads it. `geqrfBatched` and `gelsBatched`
//! settle their host `info` (argument errors only) here.

use std::os::raw::{c_int, c_void};

use rcud_proto::math::blas::{dtype, Call, Operand};

use super::{
    both, diag_arg, fill_arg, handle, leading, nonnegative, op_arg, pointer_array, run, side_arg,
    strided, write_host, Handle, HandleState, INVALID_VALUE, NOT_SUPPORTED,
};

/// Checks and queues trsmBatched.
#[allow(clippy::too_many_arguments)]
fn trsm(
    s: &HandleState,
    dt: u8,
    (side, uplo, trans, diag): (c_int, c_int, c_int, c_int),
    (m, n): (i64, i64),
    alpha: *const c_void,
    (a, lda): (*const c_void, i64),
    (b, ldb): (*const c_void, i64),
    batch: i64,
) -> Result<(), c_int> {
    side_arg(side)?;
    fill_arg(uplo)?;
    op_arg(trans)?;
    diag_arg(diag)?;
    nonnegative(&[m, n, batch])?;
    let na = if side == 0 { m } else { n };
    let a = pointer_array(a, lda, na, batch)?;
    let b = pointer_array(b, ldb, m, batch)?;
    let alpha = match dt {
        dtype::R32F => s.scalar(alpha.cast::<f32>())?,
        dtype::R64F => s.scalar(alpha.cast::<f64>())?,
        dtype::C32F => s.scalar(alpha.cast::<[f32; 2]>())?,
        _ => s.scalar(alpha.cast::<[f64; 2]>())?,
    };
    if m == 0 || n == 0 || batch == 0 {
        return Ok(());
    }
    s.enqueue(&Call::TrsmBatched {
        handle: s.id(),
        dtype: dt,
        side,
        uplo,
        trans,
        diag,
        m,
        n,
        alpha,
        a,
        b,
        batch,
    })
}

macro_rules! trsm_batched {
    ($(fn $name:ident / $name64:ident ($t:ty, $dt:ident);)*) => {$(
        both! { fn $name / $name64 (h: Handle, side: c_int, uplo: c_int, trans: c_int, diag: c_int, m: Int, n: Int, alpha: *const $t, a: *const *const $t, lda: Int, b: *const *mut $t, ldb: Int, count: Int) {
            let s = handle(h)?;
            trsm(&s, dtype::$dt, (side, uplo, trans, diag), (m.into(), n.into()), alpha.cast(), (a.cast(), lda.into()), (b.cast(), ldb.into()), count.into())
        } }
    )*};
}

trsm_batched! {
    fn cublasStrsmBatched / cublasStrsmBatched_64 (f32, R32F);
    fn cublasDtrsmBatched / cublasDtrsmBatched_64 (f64, R64F);
    fn cublasCtrsmBatched / cublasCtrsmBatched_64 ([f32; 2], C32F);
    fn cublasZtrsmBatched / cublasZtrsmBatched_64 ([f64; 2], C64F);
}

/// How a gemv batch is laid out.
enum Layout {
    /// Device arrays of per-item pointers.
    Pointers,
    /// Element strides of A, x and y.
    Strided([i64; 3]),
}

/// The shape of a batched gemv.
struct Gemv {
    /// A and x, y, compute (and scalar) types.
    types: [u8; 3],
    trans: c_int,
    m: i64,
    n: i64,
    lda: i64,
    incx: i64,
    incy: i64,
    batch: i64,
}

/// A strided batch of vectors of `n` elements at increment `inc`, checked
/// as one range.
fn strided_vector(
    ptr: *const c_void,
    n: i64,
    inc: i64,
    stride: i64,
    batch: i64,
    size: usize,
) -> Result<Operand, c_int> {
    // The vector is a 1 x n matrix with leading dimension |inc|.
    let mut o = strided(ptr, 1, n, inc.unsigned_abs() as i64, stride, batch, size)?;
    o.ld = inc;
    Ok(o)
}

/// Checks and queues gemvBatched or gemvStridedBatched.
fn gemv(
    s: &HandleState,
    g: Gemv,
    (alpha, beta): (*const c_void, *const c_void),
    (a, x, y): (*const c_void, *const c_void, *const c_void),
    layout: Layout,
) -> Result<(), c_int> {
    op_arg(g.trans)?;
    nonnegative(&[g.m, g.n, g.batch])?;
    leading(g.lda, g.m)?;
    if g.incx == 0 || g.incy == 0 {
        return Err(INVALID_VALUE);
    }
    let size = |t: u8| dtype::size(t).ok_or(NOT_SUPPORTED).map(|s| s as usize);
    let (in_size, y_size) = (size(g.types[0])?, size(g.types[1])?);
    let (lx, ly) = if g.trans == 0 { (g.n, g.m) } else { (g.m, g.n) };
    let (a, x, y, pointer_arrays) = match layout {
        Layout::Pointers => {
            let vectors = |ptr, inc| -> Result<Operand, c_int> {
                let mut o = pointer_array(ptr, 1, 0, g.batch)?;
                o.ld = inc;
                Ok(o)
            };
            (
                pointer_array(a, g.lda, g.m, g.batch)?,
                vectors(x, g.incx)?,
                vectors(y, g.incy)?,
                true,
            )
        }
        Layout::Strided([sa, sx, sy]) => (
            strided(a, g.m, g.n, g.lda, sa, g.batch, in_size)?,
            strided_vector(x, lx, g.incx, sx, g.batch, in_size)?,
            strided_vector(y, ly, g.incy, sy, g.batch, y_size)?,
            false,
        ),
    };
    let scalar = |p: *const c_void| match g.types[2] {
        dtype::R32F => s.scalar(p.cast::<f32>()),
        dtype::R64F => s.scalar(p.cast::<f64>()),
        dtype::C32F => s.scalar(p.cast::<[f32; 2]>()),
        _ => s.scalar(p.cast::<[f64; 2]>()),
    };
    let (alpha, beta) = (scalar(alpha)?, scalar(beta)?);
    if g.m == 0 || g.n == 0 || g.batch == 0 {
        return Ok(());
    }
    s.enqueue(&Call::GemvBatched {
        handle: s.id(),
        types: g.types,
        trans: g.trans,
        m: g.m,
        n: g.n,
        alpha,
        a,
        x,
        beta,
        y,
        batch: g.batch,
        pointer_arrays,
    })
}

macro_rules! gemv_batched {
    ($(fn $name:ident / $name64:ident ($t:ty, $yt:ty, $s:ty, [$in:ident, $out:ident, $compute:ident]);)*) => {$(
        both! { fn $name / $name64 (h: Handle, trans: c_int, m: Int, n: Int, alpha: *const $s, a: *const *const $t, lda: Int, x: *const *const $t, incx: Int, beta: *const $s, y: *const *mut $yt, incy: Int, count: Int) {
            let s = handle(h)?;
            let g = Gemv { types: [dtype::$in, dtype::$out, dtype::$compute], trans, m: m.into(), n: n.into(), lda: lda.into(), incx: incx.into(), incy: incy.into(), batch: count.into() };
            gemv(&s, g, (alpha.cast(), beta.cast()), (a.cast(), x.cast(), y.cast()), Layout::Pointers)
        } }
    )*};
}

gemv_batched! {
    fn cublasSgemvBatched / cublasSgemvBatched_64 (f32, f32, f32, [R32F, R32F, R32F]);
    fn cublasDgemvBatched / cublasDgemvBatched_64 (f64, f64, f64, [R64F, R64F, R64F]);
    fn cublasCgemvBatched / cublasCgemvBatched_64 ([f32; 2], [f32; 2], [f32; 2], [C32F, C32F, C32F]);
    fn cublasZgemvBatched / cublasZgemvBatched_64 ([f64; 2], [f64; 2], [f64; 2], [C64F, C64F, C64F]);
}

macro_rules! gemv_strided {
    ($(fn $name:ident / $name64:ident ($t:ty, $yt:ty, $s:ty, [$in:ident, $out:ident, $compute:ident]);)*) => {$(
        both! { fn $name / $name64 (h: Handle, trans: c_int, m: Int, n: Int, alpha: *const $s, a: *const $t, lda: Int, stride_a: i64, x: *const $t, incx: Int, stride_x: i64, beta: *const $s, y: *mut $yt, incy: Int, stride_y: i64, count: Int) {
            let s = handle(h)?;
            let g = Gemv { types: [dtype::$in, dtype::$out, dtype::$compute], trans, m: m.into(), n: n.into(), lda: lda.into(), incx: incx.into(), incy: incy.into(), batch: count.into() };
            gemv(&s, g, (alpha.cast(), beta.cast()), (a.cast(), x.cast(), y.cast_const().cast()), Layout::Strided([stride_a, stride_x, stride_y]))
        } }
    )*};
}

gemv_strided! {
    fn cublasSgemvStridedBatched / cublasSgemvStridedBatched_64 (f32, f32, f32, [R32F, R32F, R32F]);
    fn cublasDgemvStridedBatched / cublasDgemvStridedBatched_64 (f64, f64, f64, [R64F, R64F, R64F]);
    fn cublasCgemvStridedBatched / cublasCgemvStridedBatched_64 ([f32; 2], [f32; 2], [f32; 2], [C32F, C32F, C32F]);
    fn cublasZgemvStridedBatched / cublasZgemvStridedBatched_64 ([f64; 2], [f64; 2], [f64; 2], [C64F, C64F, C64F]);
}

/// Writes the host `info` (minus the position of the first bad argument,
/// handle not counted) and answers the status for it.
fn settle(info: *mut c_int, bad: c_int, status: c_int) -> Result<(), c_int> {
    write_host(info, bad)?;
    if bad != 0 {
        return Err(status);
    }
    Ok(())
}

/// Checks and queues geqrfBatched.
#[allow(clippy::too_many_arguments)]
fn geqrf(
    h: Handle,
    dt: u8,
    m: c_int,
    n: c_int,
    a: *const c_void,
    lda: c_int,
    tau: *const c_void,
    info: *mut c_int,
    batch: c_int,
) -> Result<(), c_int> {
    let s = handle(h)?;
    if info.is_null() {
        return Err(INVALID_VALUE);
    }
    let (m, n, lda, batch) = (i64::from(m), i64::from(n), i64::from(lda), i64::from(batch));
    let bad = if m < 0 {
        -1
    } else if n < 0 {
        -2
    } else if a.is_null() && batch > 0 {
        -3
    } else if lda < m.max(1) {
        -4
    } else if tau.is_null() && batch > 0 {
        -5
    } else if batch < 0 {
        -7
    } else {
        0
    };
    settle(info, bad, INVALID_VALUE)?;
    let a = pointer_array(a, lda, m, batch)?;
    let tau = pointer_array(tau, 1, 0, batch)?;
    if m.min(n) == 0 || batch == 0 {
        return Ok(());
    }
    s.enqueue(&Call::GeqrfBatched {
        handle: s.id(),
        dtype: dt,
        m,
        n,
        a,
        tau: tau.ptr,
        batch,
    })
}

/// `cublas<t>geqrfBatched(handle, m, n, A[], lda, Tau[], info, batch)`,
/// two element types per line.
macro_rules! geqrf_exports {
    ($(fn $first:ident / $second:ident ($t1:ty, $dt1:ident, $t2:ty, $dt2:ident);)*) => {$(
        #[no_mangle]
        #[allow(clippy::too_many_arguments)]
        pub extern "C" fn $first(h: Handle, m: c_int, n: c_int, a: *const *mut $t1, lda: c_int, tau: *const *mut $t1, info: *mut c_int, batch: c_int) -> c_int {
            run(|| geqrf(h, dtype::$dt1, m, n, a.cast(), lda, tau.cast(), info, batch))
        }

        #[no_mangle]
        #[allow(clippy::too_many_arguments)]
        pub extern "C" fn $second(h: Handle, m: c_int, n: c_int, a: *const *mut $t2, lda: c_int, tau: *const *mut $t2, info: *mut c_int, batch: c_int) -> c_int {
            run(|| geqrf(h, dtype::$dt2, m, n, a.cast(), lda, tau.cast(), info, batch))
        }
    )*};
}

geqrf_exports! {
    fn cublasSgeqrfBatched / cublasDgeqrfBatched (f32, R32F, f64, R64F);
    fn cublasCgeqrfBatched / cublasZgeqrfBatched ([f32; 2], C32F, [f64; 2], C64F);
}

/// The integer arguments of gelsBatched.
struct Gels {
    trans: c_int,
    m: c_int,
    n: c_int,
    nrhs: c_int,
    lda: c_int,
    ldc: c_int,
    batch: c_int,
}

/// Checks and queues gelsBatched: trans N and m >= n only, as cuBLAS.
fn gels(
    h: Handle,
    dt: u8,
    g: Gels,
    (a, c): (*const c_void, *const c_void),
    info: *mut c_int,
    dev_info: *mut c_int,
) -> Result<(), c_int> {
    let s = handle(h)?;
    if info.is_null() {
        return Err(INVALID_VALUE);
    }
    let [m, n, nrhs, lda, ldc, batch] = [g.m, g.n, g.nrhs, g.lda, g.ldc, g.batch].map(i64::from);
    let invalid = if op_arg(g.trans).is_err() {
        -1
    } else if m < 0 {
        -2
    } else if n < 0 {
        -3
    } else if nrhs < 0 {
        -4
    } else if a.is_null() && batch > 0 {
        -5
    } else if lda < m.max(1) {
        -6
    } else if c.is_null() && batch > 0 {
        -7
    } else if ldc < m.max(1) {
        -8
    } else if batch < 0 {
        -11
    } else {
        0
    };
    settle(info, invalid, INVALID_VALUE)?;
    // What cuBLAS does not implement: op(A) other than A, and m < n.
    let unsupported = if g.trans != 0 {
        -1
    } else if m < n {
        -2
    } else {
        0
    };
    settle(info, unsupported, NOT_SUPPORTED)?;
    let a = pointer_array(a, lda, m, batch)?;
    let c = pointer_array(c, ldc, m, batch)?;
    let dev_info = if dev_info.is_null() {
        0
    } else {
        let bytes = u64::try_from(batch).map_err(|_| INVALID_VALUE)? * 4;
        if bytes > 0 && !super::super::is_device_range(dev_info as u64, bytes) {
            return Err(INVALID_VALUE);
        }
        dev_info as u64
    };
    if batch == 0 {
        return Ok(());
    }
    s.enqueue(&Call::GelsBatched {
        handle: s.id(),
        dtype: dt,
        trans: g.trans,
        m,
        n,
        nrhs,
        a,
        c,
        dev_info,
        batch,
    })
}

/// `cublas<t>gelsBatched(handle, trans, m, n, nrhs, A[], lda, C[], ldc,
/// info, devInfoArray, batch)`, two element types per line.
macro_rules! gels_exports {
    ($(fn $first:ident / $second:ident ($t1:ty, $dt1:ident, $t2:ty, $dt2:ident);)*) => {$(
        #[no_mangle]
        #[allow(clippy::too_many_arguments)]
        pub extern "C" fn $first(h: Handle, trans: c_int, m: c_int, n: c_int, nrhs: c_int, a: *const *mut $t1, lda: c_int, c: *const *mut $t1, ldc: c_int, info: *mut c_int, dev_info: *mut c_int, batch: c_int) -> c_int {
            let g = Gels { trans, m, n, nrhs, lda, ldc, batch };
            run(|| gels(h, dtype::$dt1, g, (a.cast(), c.cast()), info, dev_info))
        }

        #[no_mangle]
        #[allow(clippy::too_many_arguments)]
        pub extern "C" fn $second(h: Handle, trans: c_int, m: c_int, n: c_int, nrhs: c_int, a: *const *mut $t2, lda: c_int, c: *const *mut $t2, ldc: c_int, info: *mut c_int, dev_info: *mut c_int, batch: c_int) -> c_int {
            let g = Gels { trans, m, n, nrhs, lda, ldc, batch };
            run(|| gels(h, dtype::$dt2, g, (a.cast(), c.cast()), info, dev_info))
        }
    )*};
}

gels_exports! {
    fn cublasSgelsBatched / cublasDgelsBatched (f32, R32F, f64, R64F);
    fn cublasCgelsBatched / cublasZgelsBatched ([f32; 2], C32F, [f64; 2], C64F);
}
