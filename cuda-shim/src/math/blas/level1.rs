//! cuBLAS level 1: `cublas<t>axpy`, scal, dot/dotu/dotc, nrm2, asum,
//! amax/amin, copy, swap, rot, rotm (and their `_64` forms), rotg, rotmg.

use std::os::raw::{c_int, c_void};

use rcud_proto::math::blas::{dtype, level1, Call, Scalar};

use super::{
    both, handle, read_host, vector, vector_or_broadcast, write_host, Handle, HandleState,
    HostValue, INTERNAL_ERROR, INVALID_VALUE,
};

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

/// A device scalar argument of `size` bytes, checked.
fn device_ptr<T>(ptr: *const T) -> Result<u64, c_int> {
    let address = ptr as u64;
    if address == 0 || !crate::math::is_device_range(address, std::mem::size_of::<T>() as u64) {
        return Err(INVALID_VALUE);
    }
    Ok(address)
}

/// Runs a rotg/rotmg call: queued in device pointer mode; in host pointer
/// mode it waits for the answer (cuBLAS computes on the host there).
fn rot_construct(s: &HandleState, call: &Call) -> Result<Option<Vec<u8>>, c_int> {
    if s.device_mode() {
        return s.enqueue(call).map(|()| None);
    }
    if let Err(e) = crate::graph::capture::refuse_wait(s.stream_id()) {
        tracing::debug!("cuBLAS rotation to the host during stream capture: {e:?}");
        return Err(super::EXECUTION_FAILED);
    }
    s.call(call).map(Some)
}

/// rotg: `a`, `b` in; `a` = r, `b` = z (real types), `c`, `s` out.
fn rotg<T: HostValue + FromLe, R: FromLe>(
    h: Handle,
    dt: u8,
    a: *mut T,
    b: *mut T,
    c: *mut R,
    sine: *mut T,
) -> Result<(), c_int> {
    let s = handle(h)?;
    let (values, ptrs) = if s.device_mode() {
        let ptrs = [
            device_ptr(a)?,
            device_ptr(b)?,
            device_ptr(c)?,
            device_ptr(sine)?,
            0,
        ];
        ([0.0; 4], ptrs)
    } else {
        // Every output is checked before anything is written.
        if c.is_null() || sine.is_null() {
            return Err(INVALID_VALUE);
        }
        let (ar, ai) = read_host(a)?.parts();
        let (br, bi) = read_host(b)?.parts();
        ([ar, ai, br, bi], [0; 5])
    };
    let call = Call::Rotg {
        handle: s.id(),
        dtype: dt,
        modified: false,
        values,
        ptrs,
    };
    let Some(out) = rot_construct(&s, &call)? else {
        return Ok(());
    };
    let (t, r) = (std::mem::size_of::<T>(), std::mem::size_of::<R>());
    let piece = |at: usize, len: usize| out.get(at..at + len).ok_or(INTERNAL_ERROR);
    let decode_t = |at| T::from_le(piece(at, t)?).ok_or(INTERNAL_ERROR);
    write_host(a, decode_t(0)?)?;
    write_host(b, decode_t(t)?)?;
    write_host(c, R::from_le(piece(2 * t, r)?).ok_or(INTERNAL_ERROR)?)?;
    write_host(sine, decode_t(2 * t + r)?)
}

/// rotmg: `d1`, `d2`, `x1`, `y1` in; `d1`, `d2`, `x1` and `param` out.
fn rotmg<T: HostValue + FromLe>(
    h: Handle,
    dt: u8,
    d1: *mut T,
    d2: *mut T,
    x1: *mut T,
    y1: *const T,
    param: *mut T,
) -> Result<(), c_int> {
    let s = handle(h)?;
    let (values, ptrs) = if s.device_mode() {
        let param_ptr = param as u64;
        if param.is_null()
            || !crate::math::is_device_range(param_ptr, 5 * std::mem::size_of::<T>() as u64)
        {
            return Err(INVALID_VALUE);
        }
        let ptrs = [
            device_ptr(d1)?,
            device_ptr(d2)?,
            device_ptr(x1)?,
            device_ptr(y1)?,
            param_ptr,
        ];
        ([0.0; 4], ptrs)
    } else {
        if param.is_null() {
            return Err(INVALID_VALUE);
        }
        let v = |p: *const T| read_host(p).map(|v| v.parts().0);
        ([v(d1)?, v(d2)?, v(x1)?, v(y1)?], [0; 5])
    };
    let call = Call::Rotg {
        handle: s.id(),
        dtype: dt,
        modified: true,
        values,
        ptrs,
    };
    let Some(out) = rot_construct(&s, &call)? else {
        return Ok(());
    };
    let t = std::mem::size_of::<T>();
    let value = |i: usize| {
        out.get(i * t..(i + 1) * t)
            .and_then(T::from_le)
            .ok_or(INTERNAL_ERROR)
    };
    write_host(d1, value(0)?)?;
    write_host(d2, value(1)?)?;
    write_host(x1, value(2)?)?;
    // Only the entries the flag names are stored, as BLAS does.
    let flag = value(3)?.parts().0;
    let entries: &[usize] = if flag == -2.0 {
        &[0]
    } else if flag < 0.0 {
        &[0, 1, 2, 3, 4]
    } else if flag == 0.0 {
        &[0, 2, 3]
    } else {
        &[0, 1, 4]
    };
    for &i in entries {
        // `param` holds 5 values in host memory (cuBLAS's contract).
        write_host(param.wrapping_add(i), value(3 + i)?)?;
    }
    Ok(())
}

// rotg and rotmg have no `_64` forms; written out so that the export
// list's generator sees them.
#[no_mangle]
pub extern "C" fn cublasSrotg_v2(
    h: Handle,
    a: *mut f32,
    b: *mut f32,
    c: *mut f32,
    s: *mut f32,
) -> c_int {
    super::run(|| rotg(h, dtype::R32F, a, b, c, s))
}

#[no_mangle]
pub extern "C" fn cublasDrotg_v2(
    h: Handle,
    a: *mut f64,
    b: *mut f64,
    c: *mut f64,
    s: *mut f64,
) -> c_int {
    super::run(|| rotg(h, dtype::R64F, a, b, c, s))
}

#[no_mangle]
pub extern "C" fn cublasCrotg_v2(
    h: Handle,
    a: *mut [f32; 2],
    b: *mut [f32; 2],
    c: *mut f32,
    s: *mut [f32; 2],
) -> c_int {
    super::run(|| rotg(h, dtype::C32F, a, b, c, s))
}

#[no_mangle]
pub extern "C" fn cublasZrotg_v2(
    h: Handle,
    a: *mut [f64; 2],
    b: *mut [f64; 2],
    c: *mut f64,
    s: *mut [f64; 2],
) -> c_int {
    super::run(|| rotg(h, dtype::C64F, a, b, c, s))
}

#[no_mangle]
pub extern "C" fn cublasSrotmg_v2(
    h: Handle,
    d1: *mut f32,
    d2: *mut f32,
    x1: *mut f32,
    y1: *const f32,
    param: *mut f32,
) -> c_int {
    super::run(|| rotmg(h, dtype::R32F, d1, d2, x1, y1, param))
}

#[no_mangle]
pub extern "C" fn cublasDrotmg_v2(
    h: Handle,
    d1: *mut f64,
    d2: *mut f64,
    x1: *mut f64,
    y1: *const f64,
    param: *mut f64,
) -> c_int {
    super::run(|| rotmg(h, dtype::R64F, d1, d2, x1, y1, param))
}

/// rotm: the modified rotation `param` applied to `x` and `y`.
fn rotm<T: HostValue>(
    s: &HandleState,
    dt: u8,
    n: i64,
    (x, incx): (*const c_void, i64),
    (y, incy): (*const c_void, i64),
    param: *const T,
) -> Result<(), c_int> {
    let size = std::mem::size_of::<T>();
    let x = vector(x, n.max(0), incx, size)?;
    let y = vector(y, n.max(0), incy, size)?;
    let (values, param_ptr) = if s.device_mode() {
        let ptr = param as u64;
        if param.is_null() || !crate::math::is_device_range(ptr, 5 * size as u64) {
            return Err(INVALID_VALUE);
        }
        ([0.0; 5], ptr)
    } else {
        let mut v = [0.0; 5];
        for (i, slot) in v.iter_mut().enumerate() {
            // `param` points to 5 values in host memory in host pointer
            // mode (cuBLAS's contract); read_host rejects NULL.
            if param.is_null() {
                return Err(INVALID_VALUE);
            }
            *slot = read_host(param.wrapping_add(i))?.parts().0;
        }
        (v, 0)
    };
    s.enqueue(&Call::Rotm {
        handle: s.id(),
        dtype: dt,
        n,
        x,
        y,
        param: values,
        param_ptr,
    })
}

macro_rules! rotm {
    ($(fn $name:ident / $name64:ident ($t:ty, $dt:ident);)*) => {$(
        both! { fn $name / $name64 (h: Handle, n: Int, x: *mut $t, incx: Int, y: *mut $t, incy: Int, param: *const $t) {
            let s = handle(h)?;
            rotm(&s, dtype::$dt, n.into(), (x.cast_const().cast(), incx.into()), (y.cast_const().cast(), incy.into()), param)
        } }
    )*};
}

rotm! {
    fn cublasSrotm_v2 / cublasSrotm_v2_64 (f32, R32F);
    fn cublasDrotm_v2 / cublasDrotm_v2_64 (f64, R64F);
}
