//! cuBLAS level 1: `cublas<t>axpy`, scal, dot/dotu/dotc, nrm2, asum,
//! amax/amin, copy, swap, rot (and their `_64` forms).

use std::os::raw::{c_int, c_void};

use rcud_proto::math::blas::{dtype, level1, Call, Scalar};

use super::{both, handle, vector, vector_or_broadcast, Handle, HandleState};

/// The scalar a call without one sends.
const NONE: Scalar = Scalar::Host { re: 0.0, im: 0.0 };

/// A value the server answers as little-endian bytes.
pub(super) trait FromLe: Sized {
    fn from_le(bytes: &[u8]) -> Option<Self>;
}

impl FromLe for f32 {
    fn from_le(bytes: &[u8]) -> Option<Self> {
        Some(f32::from_le_bytes(bytes.try_into().ok()?))
    }
}

impl FromLe for f64 {
    fn from_le(bytes: &[u8]) -> Option<Self> {
        Some(f64::from_le_bytes(bytes.try_into().ok()?))
    }
}

impl FromLe for [f32; 2] {
    fn from_le(bytes: &[u8]) -> Option<Self> {
        let (re, im) = bytes.split_at_checked(4)?;
        Some([f32::from_le(re)?, f32::from_le(im)?])
    }
}

impl FromLe for [f64; 2] {
    fn from_le(bytes: &[u8]) -> Option<Self> {
        let (re, im) = bytes.split_at_checked(8)?;
        Some([f64::from_le(re)?, f64::from_le(im)?])
    }
}

/// A vector operation that writes device memory: queued on the stream.
#[allow(clippy::too_many_arguments)]
fn update(
    s: &HandleState,
    op: u8,
    dt: u8,
    scalar_dt: u8,
    n: i64,
    x: (*const c_void, i64),
    y: Option<(*const c_void, i64)>,
    alpha: Scalar,
    beta: Scalar,
) -> Result<(), c_int> {
    let size = dtype::size(dt).unwrap_or(1) as usize;
    // axpy takes an increment of 0 for either vector (cuBLAS 13.1 answers
    // success); the other operations refuse it.
    let operand = if op == level1::AXPY {
        vector_or_broadcast
    } else {
        vector
    };
    let x = operand(x.0, n, x.1, size)?;
    let y = match y {
        Some((ptr, inc)) => operand(ptr, n, inc, size)?,
        None => x,
    };
    s.enqueue(&Call::Level1 {
        handle: s.id(),
        op,
        dtype: dt,
        scalar_dtype: scalar_dt,
        n,
        x,
        y,
        alpha,
        beta,
        result: 0,
    })
}

/// A reduction: its result goes to device memory (queued) or host memory
/// (waited for), by the pointer mode.
fn reduce<R: FromLe>(
    s: &HandleState,
    op: u8,
    dt: u8,
    n: i64,
    x: (*const c_void, i64),
    y: Option<(*const c_void, i64)>,
    result: *mut R,
) -> Result<(), c_int> {
    let size = dtype::size(dt).unwrap_or(1) as usize;
    let x = vector(x.0, n, x.1, size)?;
    let y = match y {
        Some((ptr, inc)) => vector(ptr, n, inc, size)?,
        None => x,
    };
    let call = Call::Level1 {
        handle: s.id(),
        op,
        dtype: dt,
        scalar_dtype: dt,
        n,
        x,
        y,
        alpha: NONE,
        beta: NONE,
        result: s.result_target(result)?,
    };
    s.reduce(&call, result, R::from_le)
}

macro_rules! axpy {
    ($(fn $name:ident / $name64:ident ($t:ty, $dt:ident);)*) => {$(
        both! { fn $name / $name64 (h: Handle, n: Int, alpha: *const $t, x: *const $t, incx: Int, y: *mut $t, incy: Int) {
            let s = handle(h)?;
            update(&s, level1::AXPY, dtype::$dt, dtype::$dt, n.into(), (x.cast(), incx.into()), Some((y.cast(), incy.into())), s.scalar(alpha)?, NONE)
        } }
    )*};
}

axpy! {
    fn cublasSaxpy_v2 / cublasSaxpy_v2_64 (f32, R32F);
    fn cublasDaxpy_v2 / cublasDaxpy_v2_64 (f64, R64F);
    fn cublasCaxpy_v2 / cublasCaxpy_v2_64 ([f32; 2], C32F);
    fn cublasZaxpy_v2 / cublasZaxpy_v2_64 ([f64; 2], C64F);
}

macro_rules! scal {
    ($(fn $name:ident / $name64:ident ($t:ty, $dt:ident, $s:ty, $sdt:ident);)*) => {$(
        both! { fn $name / $name64 (h: Handle, n: Int, alpha: *const $s, x: *mut $t, incx: Int) {
            let s = handle(h)?;
            // cuBLAS answers success for incx = 0; the reference BLAS
            // scales nothing then, and neither does rcud.
            if i64::from(incx) == 0 {
                return Ok(());
            }
            update(&s, level1::SCAL, dtype::$dt, dtype::$sdt, n.into(), (x.cast(), incx.into()), None, s.scalar(alpha)?, NONE)
        } }
    )*};
}

scal! {
    fn cublasSscal_v2 / cublasSscal_v2_64 (f32, R32F, f32, R32F);
    fn cublasDscal_v2 / cublasDscal_v2_64 (f64, R64F, f64, R64F);
    fn cublasCscal_v2 / cublasCscal_v2_64 ([f32; 2], C32F, [f32; 2], C32F);
    fn cublasZscal_v2 / cublasZscal_v2_64 ([f64; 2], C64F, [f64; 2], C64F);
    fn cublasCsscal_v2 / cublasCsscal_v2_64 ([f32; 2], C32F, f32, R32F);
    fn cublasZdscal_v2 / cublasZdscal_v2_64 ([f64; 2], C64F, f64, R64F);
}

macro_rules! dot {
    ($(fn $name:ident / $name64:ident ($t:ty, $dt:ident, $op:ident);)*) => {$(
        both! { fn $name / $name64 (h: Handle, n: Int, x: *const $t, incx: Int, y: *const $t, incy: Int, result: *mut $t) {
            let s = handle(h)?;
            reduce(&s, level1::$op, dtype::$dt, n.into(), (x.cast(), incx.into()), Some((y.cast(), incy.into())), result)
        } }
    )*};
}

dot! {
    fn cublasSdot_v2 / cublasSdot_v2_64 (f32, R32F, DOTU);
    fn cublasDdot_v2 / cublasDdot_v2_64 (f64, R64F, DOTU);
    fn cublasCdotu_v2 / cublasCdotu_v2_64 ([f32; 2], C32F, DOTU);
    fn cublasCdotc_v2 / cublasCdotc_v2_64 ([f32; 2], C32F, DOTC);
    fn cublasZdotu_v2 / cublasZdotu_v2_64 ([f64; 2], C64F, DOTU);
    fn cublasZdotc_v2 / cublasZdotc_v2_64 ([f64; 2], C64F, DOTC);
}

macro_rules! norm {
    ($(fn $name:ident / $name64:ident ($t:ty, $dt:ident, $r:ty, $op:ident);)*) => {$(
        both! { fn $name / $name64 (h: Handle, n: Int, x: *const $t, incx: Int, result: *mut $r) {
            let s = handle(h)?;
            reduce(&s, level1::$op, dtype::$dt, n.into(), (x.cast(), incx.into()), None, result)
        } }
    )*};
}

norm! {
    fn cublasSnrm2_v2 / cublasSnrm2_v2_64 (f32, R32F, f32, NRM2);
    fn cublasDnrm2_v2 / cublasDnrm2_v2_64 (f64, R64F, f64, NRM2);
    fn cublasScnrm2_v2 / cublasScnrm2_v2_64 ([f32; 2], C32F, f32, NRM2);
    fn cublasDznrm2_v2 / cublasDznrm2_v2_64 ([f64; 2], C64F, f64, NRM2);
    fn cublasSasum_v2 / cublasSasum_v2_64 (f32, R32F, f32, ASUM);
    fn cublasDasum_v2 / cublasDasum_v2_64 (f64, R64F, f64, ASUM);
    fn cublasScasum_v2 / cublasScasum_v2_64 ([f32; 2], C32F, f32, ASUM);
    fn cublasDzasum_v2 / cublasDzasum_v2_64 ([f64; 2], C64F, f64, ASUM);
}

/// `CUDA_R_32I`, `CUDA_R_64I`: an amax/amin index's integer type.
const R32I: u8 = 10;
const R64I: u8 = 24;

/// A result index, `int` or `int64_t` (the `_64` forms).
pub(super) trait Index: FromLe {
    const DTYPE: u8;
}

impl FromLe for c_int {
    fn from_le(bytes: &[u8]) -> Option<Self> {
        Some(c_int::from_le_bytes(bytes.try_into().ok()?))
    }
}

impl FromLe for i64 {
    fn from_le(bytes: &[u8]) -> Option<Self> {
        Some(i64::from_le_bytes(bytes.try_into().ok()?))
    }
}

impl Index for c_int {
    const DTYPE: u8 = R32I;
}

impl Index for i64 {
    const DTYPE: u8 = R64I;
}

/// amax/amin: the 1-based index, written as the application's integer type
/// (named to the server by `scalar_dtype`).
fn index<I: Index>(
    s: &HandleState,
    op: u8,
    dt: u8,
    n: i64,
    x: (*const c_void, i64),
    result: *mut I,
) -> Result<(), c_int> {
    let size = dtype::size(dt).unwrap_or(1) as usize;
    let x = vector(x.0, n, x.1, size)?;
    let call = Call::Level1 {
        handle: s.id(),
        op,
        dtype: dt,
        scalar_dtype: I::DTYPE,
        n,
        x,
        y: x,
        alpha: NONE,
        beta: NONE,
        result: s.result_target(result)?,
    };
    s.reduce(&call, result, I::from_le)
}

macro_rules! amax {
    ($(fn $name:ident / $name64:ident ($t:ty, $dt:ident, $op:ident);)*) => {$(
        both! { fn $name / $name64 (h: Handle, n: Int, x: *const $t, incx: Int, result: *mut Int) {
            let s = handle(h)?;
            index(&s, level1::$op, dtype::$dt, n.into(), (x.cast(), incx.into()), result)
        } }
    )*};
}

amax! {
    fn cublasIsamax_v2 / cublasIsamax_v2_64 (f32, R32F, AMAX);
    fn cublasIdamax_v2 / cublasIdamax_v2_64 (f64, R64F, AMAX);
    fn cublasIcamax_v2 / cublasIcamax_v2_64 ([f32; 2], C32F, AMAX);
    fn cublasIzamax_v2 / cublasIzamax_v2_64 ([f64; 2], C64F, AMAX);
    fn cublasIsamin_v2 / cublasIsamin_v2_64 (f32, R32F, AMIN);
    fn cublasIdamin_v2 / cublasIdamin_v2_64 (f64, R64F, AMIN);
    fn cublasIcamin_v2 / cublasIcamin_v2_64 ([f32; 2], C32F, AMIN);
    fn cublasIzamin_v2 / cublasIzamin_v2_64 ([f64; 2], C64F, AMIN);
}

macro_rules! pair {
    ($(fn $name:ident / $name64:ident ($t:ty, $dt:ident, $op:ident);)*) => {$(
        both! { fn $name / $name64 (h: Handle, n: Int, x: *mut $t, incx: Int, y: *mut $t, incy: Int) {
            let s = handle(h)?;
            update(&s, level1::$op, dtype::$dt, dtype::$dt, n.into(), (x.cast_const().cast(), incx.into()), Some((y.cast_const().cast(), incy.into())), NONE, NONE)
        } }
    )*};
}

pair! {
    fn cublasSswap_v2 / cublasSswap_v2_64 (f32, R32F, SWAP);
    fn cublasDswap_v2 / cublasDswap_v2_64 (f64, R64F, SWAP);
    fn cublasCswap_v2 / cublasCswap_v2_64 ([f32; 2], C32F, SWAP);
    fn cublasZswap_v2 / cublasZswap_v2_64 ([f64; 2], C64F, SWAP);
}

macro_rules! copy {
    ($(fn $name:ident / $name64:ident ($t:ty, $dt:ident);)*) => {$(
        both! { fn $name / $name64 (h: Handle, n: Int, x: *const $t, incx: Int, y: *mut $t, incy: Int) {
            let s = handle(h)?;
            update(&s, level1::COPY, dtype::$dt, dtype::$dt, n.into(), (x.cast(), incx.into()), Some((y.cast_const().cast(), incy.into())), NONE, NONE)
        } }
    )*};
}

copy! {
    fn cublasScopy_v2 / cublasScopy_v2_64 (f32, R32F);
    fn cublasDcopy_v2 / cublasDcopy_v2_64 (f64, R64F);
    fn cublasCcopy_v2 / cublasCcopy_v2_64 ([f32; 2], C32F);
    fn cublasZcopy_v2 / cublasZcopy_v2_64 ([f64; 2], C64F);
}

macro_rules! rot {
    ($(fn $name:ident / $name64:ident ($t:ty, $dt:ident, $c:ty, $s:ty, $sdt:ident);)*) => {$(
        both! { fn $name / $name64 (h: Handle, n: Int, x: *mut $t, incx: Int, y: *mut $t, incy: Int, c: *const $c, sine: *const $s) {
            let s = handle(h)?;
            update(&s, level1::ROT, dtype::$dt, dtype::$sdt, n.into(), (x.cast_const().cast(), incx.into()), Some((y.cast_const().cast(), incy.into())), s.scalar(c)?, s.scalar(sine)?)
        } }
    )*};
}

rot! {
    fn cublasSrot_v2 / cublasSrot_v2_64 (f32, R32F, f32, f32, R32F);
    fn cublasDrot_v2 / cublasDrot_v2_64 (f64, R64F, f64, f64, R64F);
    fn cublasCrot_v2 / cublasCrot_v2_64 ([f32; 2], C32F, f32, [f32; 2], C32F);
    fn cublasCsrot_v2 / cublasCsrot_v2_64 ([f32; 2], C32F, f32, f32, R32F);
    fn cublasZrot_v2 / cublasZrot_v2_64 ([f64; 2], C64F, f64, [f64; 2], C64F);
    fn cublasZdrot_v2 / cublasZdrot_v2_64 ([f64; 2], C64F, f64, f64, R64F);
}
