//! cuBLAS (`libcublas.so.13`).
//!
//! A handle is a client-side record (its stream, pointer mode, math mode
//! and workspace) naming a handle on the server. Every BLAS call is checked
//! here first as cuBLAS checks before launching (handle, dimensions,
//! leading dimensions, operands inside the application's device
//! allocations), then queued on the handle's stream as one request. Scalars
//! in host pointer mode are read at call time and sent by value; in device
//! pointer mode the server reads them when the call runs. Results for host
//! memory (dot, nrm2, amax, ... in host pointer mode) wait for the answer,
//! as cuBLAS blocks there. cuBLASXt (`xt.rs`) runs its host-memory
//! level-3 routines through a handle of these.
#![allow(non_snake_case, unreachable_pub)]

mod batched;
mod level1;
mod level2;
mod level3;
mod lu;
mod xt;

use std::collections::HashMap;
use std::ffi::c_char;
use std::os::raw::{c_int, c_void};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use parking_lot::Mutex;
use rcud_proto::math::blas::{Call, Operand, Scalar};
use rcud_proto::math::Library;

/// `CUBLAS_STATUS_SUCCESS`.
pub(crate) const SUCCESS: c_int = 0;
/// `CUBLAS_STATUS_NOT_INITIALIZED`: NULL, unknown or destroyed handle.
pub(crate) const NOT_INITIALIZED: c_int = 1;
/// `CUBLAS_STATUS_INVALID_VALUE`.
pub(crate) const INVALID_VALUE: c_int = 7;
/// `CUBLAS_STATUS_MAPPING_ERROR`: a copy to or from the device failed.
pub(crate) const MAPPING_ERROR: c_int = 11;
/// `CUBLAS_STATUS_EXECUTION_FAILED`.
pub(crate) const EXECUTION_FAILED: c_int = 13;
/// `CUBLAS_STATUS_INTERNAL_ERROR`.
pub(crate) const INTERNAL_ERROR: c_int = 14;
/// `CUBLAS_STATUS_NOT_SUPPORTED`: what a function rcud does not implement returns.
pub(crate) const NOT_SUPPORTED: c_int = 15;

/// `CUBLAS_POINTER_MODE_HOST`.
const POINTER_MODE_HOST: c_int = 0;
/// `CUBLAS_POINTER_MODE_DEVICE`.
const POINTER_MODE_DEVICE: c_int = 1;

/// The version rcud's cuBLAS reports: that of the headers it follows
/// (cuBLAS 13.10.0, `CUBLAS_VERSION` 131000).
pub(crate) const VERSION: (c_int, c_int, c_int) = (13, 10, 0);

/// The body of every generated cuBLAS stub.
pub(crate) fn not_supported(name: &str, why: &str, logged: &AtomicBool) -> c_int {
    super::log_stub("cuBLAS", name, why, logged);
    NOT_SUPPORTED
}

/// `cublasHandle_t`.
pub(crate) type Handle = *mut c_void;

/// What the client keeps of a handle.
#[derive(Debug, Clone, Copy)]
pub(crate) struct HandleState {
    /// The server's id of the handle.
    id: u64,
    stream: u64,
    pointer_mode: c_int,
    math_mode: c_int,
    /// Device address and size of the user workspace (cuBLAS on the CPU
    /// needs none; kept for the checks and the getters).
    workspace: (u64, usize),
}

fn handles() -> &'static Mutex<HashMap<usize, HandleState>> {
    static HANDLES: std::sync::OnceLock<Mutex<HashMap<usize, HandleState>>> =
        std::sync::OnceLock::new();
    HANDLES.get_or_init(Default::default)
}

/// Runs an exported function's body: `Err(status)` and panics become the
/// status cuBLAS returns.
pub(crate) fn run(body: impl FnOnce() -> Result<(), c_int>) -> c_int {
    super::guard(INTERNAL_ERROR, || match body() {
        Ok(()) => SUCCESS,
        Err(status) => status,
    })
}

/// The state of handle `h`, or `NOT_INITIALIZED`.
pub(crate) fn handle(h: Handle) -> Result<HandleState, c_int> {
    handles()
        .lock()
        .get(&(h as usize))
        .copied()
        .ok_or(NOT_INITIALIZED)
}

fn update(h: Handle, f: impl FnOnce(&mut HandleState)) -> Result<(), c_int> {
    let mut table = handles().lock();
    let state = table.get_mut(&(h as usize)).ok_or(NOT_INITIALIZED)?;
    f(state);
    Ok(())
}

/// Reads a `T` the application passed by host pointer.
pub(crate) fn read_host<T: Copy>(ptr: *const T) -> Result<T, c_int> {
    if ptr.is_null() {
        return Err(INVALID_VALUE);
    }
    // SAFETY: cuBLAS's contract: in host pointer mode a scalar argument
    // points to a valid value of its type in host memory; NULL was rejected.
    Ok(unsafe { ptr.read_unaligned() })
}

/// Writes a result through a host pointer the application passed.
pub(crate) fn write_host<T>(ptr: *mut T, value: T) -> Result<(), c_int> {
    if ptr.is_null() {
        return Err(INVALID_VALUE);
    }
    // SAFETY: cuBLAS's contract: a host result pointer is valid for a write
    // of its type; NULL was rejected.
    unsafe { ptr.write_unaligned(value) };
    Ok(())
}

/// A scalar type the application passes: its value as real and imaginary
/// parts.
pub(crate) trait HostValue: Copy {
    fn parts(self) -> (f64, f64);
}

impl HostValue for f32 {
    fn parts(self) -> (f64, f64) {
        (f64::from(self), 0.0)
    }
}

impl HostValue for f64 {
    fn parts(self) -> (f64, f64) {
        (self, 0.0)
    }
}

impl HostValue for [f32; 2] {
    fn parts(self) -> (f64, f64) {
        (f64::from(self[0]), f64::from(self[1]))
    }
}

impl HostValue for [f64; 2] {
    fn parts(self) -> (f64, f64) {
        (self[0], self[1])
    }
}

/// An IEEE half (`__half`), the scalar type of `CUBLAS_COMPUTE_16F`.
#[derive(Clone, Copy)]
#[repr(transparent)]
pub(crate) struct Half(pub(crate) u16);

impl HostValue for Half {
    fn parts(self) -> (f64, f64) {
        let sign = if self.0 & 0x8000 != 0 { -1.0 } else { 1.0 };
        let exponent = i32::from((self.0 >> 10) & 0x1f);
        let mantissa = f64::from(self.0 & 0x3ff);
        let value = match exponent {
            0 => mantissa * 2f64.powi(-24),
            0x1f if mantissa == 0.0 => f64::INFINITY,
            0x1f => f64::NAN,
            e => (1.0 + mantissa / 1024.0) * 2f64.powi(e - 15),
        };
        (sign * value, 0.0)
    }
}

impl HandleState {
    /// A scalar argument: read now in host pointer mode, or its device
    /// address (checked) in device pointer mode.
    pub(crate) fn scalar<T: HostValue>(&self, ptr: *const T) -> Result<Scalar, c_int> {
        if self.pointer_mode == POINTER_MODE_DEVICE {
            let address = ptr as u64;
            if address == 0 || !super::is_device_range(address, std::mem::size_of::<T>() as u64) {
                return Err(INVALID_VALUE);
            }
            return Ok(Scalar::Device { ptr: address });
        }
        let (re, im) = read_host(ptr)?.parts();
        Ok(Scalar::Host { re, im })
    }

    /// Queues `call` on the handle's stream.
    pub(crate) fn enqueue(&self, call: &Call) -> Result<(), c_int> {
        super::enqueue(self.stream, Library::Blas, call).map_err(|e| {
            tracing::debug!("cuBLAS call could not be queued: {e:?}");
            EXECUTION_FAILED
        })
    }

    /// Runs `call` after the stream's queued work and answers its output.
    pub(crate) fn call(&self, call: &Call) -> Result<Vec<u8>, c_int> {
        match super::call(self.stream, Library::Blas, call) {
            Ok(reply) if reply.status == SUCCESS => Ok(reply.out),
            Ok(reply) => Err(reply.status),
            Err(e) => {
                tracing::debug!("cuBLAS call failed: {e:?}");
                Err(EXECUTION_FAILED)
            }
        }
    }

    /// Whether scalars and results are in device memory.
    pub(crate) fn device_mode(&self) -> bool {
        self.pointer_mode == POINTER_MODE_DEVICE
    }

    /// The handle's stream.
    pub(crate) fn stream_id(&self) -> u64 {
        self.stream
    }

    pub(crate) fn id(&self) -> u64 {
        self.id
    }

    /// Where a reduction's result goes: a checked device address in device
    /// pointer mode, 0 (the reply) in host pointer mode.
    pub(crate) fn result_target<T>(&self, ptr: *mut T) -> Result<u64, c_int> {
        if self.pointer_mode == POINTER_MODE_DEVICE {
            if ptr.is_null() || !super::is_device_range(ptr as u64, std::mem::size_of::<T>() as u64)
            {
                return Err(INVALID_VALUE);
            }
            return Ok(ptr as u64);
        }
        // cuBLAS computes, then fails to copy the result to NULL.
        if ptr.is_null() {
            return Err(MAPPING_ERROR);
        }
        Ok(0)
    }

    /// Runs a reduction: queued in device pointer mode; in host pointer
    /// mode waits and writes the answer (decoded by `decode`) to `result`,
    /// which a capturing stream refuses (cuBLAS's copy to the host fails
    /// there and invalidates the capture).
    pub(crate) fn reduce<T>(
        &self,
        call: &Call,
        result: *mut T,
        decode: impl FnOnce(&[u8]) -> Option<T>,
    ) -> Result<(), c_int> {
        if self.pointer_mode == POINTER_MODE_DEVICE {
            return self.enqueue(call);
        }
        if let Err(e) = crate::graph::capture::refuse_wait(self.stream) {
            tracing::debug!("cuBLAS reduction to the host during stream capture: {e:?}");
            return Err(EXECUTION_FAILED);
        }
        let out = self.call(call)?;
        write_host(result, decode(&out).ok_or(INTERNAL_ERROR)?)
    }
}

/// Whether a scalar is a host zero (its matrix need not be valid then).
pub(crate) fn is_zero(s: Scalar) -> bool {
    matches!(s, Scalar::Host { re, im } if re == 0.0 && im == 0.0)
}

/// Checks an enumeration argument: `cublasOperation_t` (N, T, C).
pub(crate) fn op_arg(v: c_int) -> Result<(), c_int> {
    enum_arg(v, 2)
}

/// `cublasFillMode_t` (lower, upper).
pub(crate) fn fill_arg(v: c_int) -> Result<(), c_int> {
    enum_arg(v, 1)
}

/// `cublasDiagType_t` (non-unit, unit).
pub(crate) fn diag_arg(v: c_int) -> Result<(), c_int> {
    enum_arg(v, 1)
}

/// `cublasSideMode_t` (left, right).
pub(crate) fn side_arg(v: c_int) -> Result<(), c_int> {
    enum_arg(v, 1)
}

fn enum_arg(v: c_int, max: c_int) -> Result<(), c_int> {
    if (0..=max).contains(&v) {
        Ok(())
    } else {
        Err(INVALID_VALUE)
    }
}

/// Checks that sizes are not negative.
pub(crate) fn nonnegative(values: &[i64]) -> Result<(), c_int> {
    if values.iter().any(|&v| v < 0) {
        return Err(INVALID_VALUE);
    }
    Ok(())
}

/// Checks a leading dimension (`ld >= max(1, rows)`).
pub(crate) fn leading(ld: i64, rows: i64) -> Result<(), c_int> {
    if ld < rows.max(1) {
        return Err(INVALID_VALUE);
    }
    Ok(())
}

/// Bytes a `rows` x `cols` matrix with leading dimension `ld` of `size`-byte
/// elements spans.
fn matrix_bytes(rows: i64, cols: i64, ld: i64, size: u64) -> Option<u64> {
    if rows == 0 || cols == 0 {
        return Some(0);
    }
    let elements = (ld as u64)
        .checked_mul(cols as u64 - 1)?
        .checked_add(rows as u64)?;
    elements.checked_mul(size)
}

/// A matrix operand, checked: leading dimension, and the range inside the
/// application's device allocations.
pub(crate) fn matrix(
    ptr: *const c_void,
    rows: i64,
    cols: i64,
    ld: i64,
    size: usize,
) -> Result<Operand, c_int> {
    leading(ld, rows)?;
    let bytes = matrix_bytes(rows, cols, ld, size as u64).ok_or(INVALID_VALUE)?;
    if bytes > 0 && !super::is_device_range(ptr as u64, bytes) {
        return Err(INVALID_VALUE);
    }
    Ok(Operand {
        ptr: ptr as u64,
        ld,
        stride: 0,
    })
}

/// A strided batch of `batch` matrices, checked as one range.
pub(crate) fn strided(
    ptr: *const c_void,
    rows: i64,
    cols: i64,
    ld: i64,
    stride: i64,
    batch: i64,
    size: usize,
) -> Result<Operand, c_int> {
    leading(ld, rows)?;
    let one = matrix_bytes(rows, cols, ld, size as u64).ok_or(INVALID_VALUE)?;
    if one > 0 && batch > 0 {
        let step = (stride.unsigned_abs())
            .checked_mul(size as u64)
            .ok_or(INVALID_VALUE)?;
        let reach = step.checked_mul(batch as u64 - 1).ok_or(INVALID_VALUE)?;
        // With a negative stride the batch runs downwards from `ptr`.
        let start = if stride < 0 {
            (ptr as u64).checked_sub(reach).ok_or(INVALID_VALUE)?
        } else {
            ptr as u64
        };
        if !super::is_device_range(start, reach.checked_add(one).ok_or(INVALID_VALUE)?) {
            return Err(INVALID_VALUE);
        }
    }
    Ok(Operand {
        ptr: ptr as u64,
        ld,
        stride,
    })
}

/// A device array of `batch` device pointers (batched GEMM), checked.
pub(crate) fn pointer_array(
    ptr: *const c_void,
    ld: i64,
    rows: i64,
    batch: i64,
) -> Result<Operand, c_int> {
    leading(ld, rows)?;
    if batch > 0 && !super::is_device_range(ptr as u64, batch as u64 * 8) {
        return Err(INVALID_VALUE);
    }
    Ok(Operand {
        ptr: ptr as u64,
        ld,
        stride: 0,
    })
}

/// A vector operand of `n` elements with increment `inc`, checked.
pub(crate) fn vector(ptr: *const c_void, n: i64, inc: i64, size: usize) -> Result<Operand, c_int> {
    if inc == 0 && n > 0 {
        return Err(INVALID_VALUE);
    }
    if n > 0 {
        let elements = (inc.unsigned_abs())
            .checked_mul(n as u64 - 1)
            .and_then(|e| e.checked_add(1))
            .and_then(|e| e.checked_mul(size as u64))
            .ok_or(INVALID_VALUE)?;
        if !super::is_device_range(ptr as u64, elements) {
            return Err(INVALID_VALUE);
        }
    }
    Ok(Operand {
        ptr: ptr as u64,
        ld: inc,
        stride: 0,
    })
}

/// A packed triangle of an `n` x `n` matrix (`n (n + 1) / 2` elements),
/// checked.
pub(crate) fn packed(ptr: *const c_void, n: i64, size: usize) -> Result<Operand, c_int> {
    let elements = (n as u64)
        .checked_mul(n as u64 + 1)
        .map(|e| e / 2)
        .and_then(|e| e.checked_mul(size as u64))
        .ok_or(INVALID_VALUE)?;
    if elements > 0 && !super::is_device_range(ptr as u64, elements) {
        return Err(INVALID_VALUE);
    }
    Ok(Operand {
        ptr: ptr as u64,
        ld: 0,
        stride: 0,
    })
}

/// A vector operand where an increment of 0 is allowed: the one element
/// serves every index (cuBLAS's axpy takes it for `x` and `y`, dgmm for
/// `x`).
pub(crate) fn vector_or_broadcast(
    ptr: *const c_void,
    n: i64,
    inc: i64,
    size: usize,
) -> Result<Operand, c_int> {
    if inc != 0 {
        return vector(ptr, n, inc, size);
    }
    let mut one = vector(ptr, n.min(1), 1, size)?;
    one.ld = 0;
    Ok(one)
}

/// Exports `$name` with 32-bit sizes (`Int` = `int`) and `$name64` with
/// 64-bit sizes (`Int` = `int64_t`) from one body: cuBLAS's `_64` forms
/// are the same functions with wider integers. The modules are
/// `pub(crate)` so that cuBLASXt (`xt.rs`) calls the routines directly.
macro_rules! both {
    (fn $name:ident / $name64:ident ($($arg:ident : $ty:ty),* $(,)?) $body:block) => {
        #[allow(non_snake_case, unreachable_pub)]
        pub(crate) mod $name {
            #[allow(unused_imports)]
            use super::*;
            type Int = std::os::raw::c_int;
            #[no_mangle]
            // One body for both widths: `.into()` is the identity in `_64`.
            #[allow(clippy::too_many_arguments, clippy::useless_conversion)]
            pub extern "C" fn $name($($arg: $ty),*) -> std::os::raw::c_int {
                $crate::math::blas::run(|| $body)
            }
        }
        #[allow(non_snake_case, unreachable_pub)]
        pub(crate) mod $name64 {
            #[allow(unused_imports)]
            use super::*;
            type Int = i64;
            #[no_mangle]
            // One body for both widths: `.into()` is the identity in `_64`.
            #[allow(clippy::too_many_arguments, clippy::useless_conversion)]
            pub extern "C" fn $name64($($arg: $ty),*) -> std::os::raw::c_int {
                $crate::math::blas::run(|| $body)
            }
        }
    };
}
pub(crate) use both;

// ---- handles -------------------------------------------------------------

/// Next client-side handle value: non-null, pointer-sized, never reused.
static NEXT_HANDLE: AtomicUsize = AtomicUsize::new(0xb1a5_0000);

#[no_mangle]
pub extern "C" fn cublasCreate_v2(out: *mut Handle) -> c_int {
    run(|| {
        if out.is_null() {
            return Err(INVALID_VALUE);
        }
        let reply = super::call(0, Library::Blas, &Call::Create {}).map_err(|e| {
            tracing::debug!("cublasCreate: {e:?}");
            NOT_INITIALIZED
        })?;
        if reply.status != SUCCESS {
            return Err(reply.status);
        }
        let id = u64::from_le_bytes(reply.out.try_into().map_err(|_| INTERNAL_ERROR)?);
        let value = NEXT_HANDLE.fetch_add(0x10, Ordering::Relaxed);
        handles().lock().insert(
            value,
            HandleState {
                id,
                stream: 0,
                pointer_mode: POINTER_MODE_HOST,
                math_mode: 0,
                workspace: (0, 0),
            },
        );
        write_host(out, value as Handle)
    })
}

#[no_mangle]
pub extern "C" fn cublasDestroy_v2(h: Handle) -> c_int {
    run(|| {
        let state = handles()
            .lock()
            .remove(&(h as usize))
            .ok_or(NOT_INITIALIZED)?;
        // Synchronous, as cuBLAS's destroy waits for the handle's work.
        state.call(&Call::Destroy { handle: state.id }).map(drop)
    })
}

#[no_mangle]
pub extern "C" fn cublasGetVersion_v2(_h: Handle, version: *mut c_int) -> c_int {
    run(|| write_host(version, VERSION.0 * 10000 + VERSION.1 * 100 + VERSION.2))
}

#[no_mangle]
pub extern "C" fn cublasGetVersion(version: *mut c_int) -> c_int {
    cublasGetVersion_v2(std::ptr::null_mut(), version)
}

#[no_mangle]
pub extern "C" fn cublasGetProperty(kind: c_int, value: *mut c_int) -> c_int {
    run(|| {
        // libraryPropertyType: MAJOR_VERSION, MINOR_VERSION, PATCH_LEVEL.
        let v = match kind {
            0 => VERSION.0,
            1 => VERSION.1,
            2 => VERSION.2,
            _ => return Err(INVALID_VALUE),
        };
        write_host(value, v)
    })
}

#[no_mangle]
pub extern "C" fn cublasSetStream_v2(h: Handle, stream: *mut c_void) -> c_int {
    run(|| {
        if stream as u64 > 2 && super::stream_device(stream as u64).is_err() {
            return Err(INVALID_VALUE);
        }
        // Setting a stream drops the user workspace, as cuBLAS documents.
        update(h, |s| {
            s.stream = stream as u64;
            s.workspace = (0, 0);
        })
    })
}

#[no_mangle]
pub extern "C" fn cublasGetStream_v2(h: Handle, stream: *mut *mut c_void) -> c_int {
    run(|| write_host(stream, handle(h)?.stream as *mut c_void))
}

#[no_mangle]
pub extern "C" fn cublasSetPointerMode_v2(h: Handle, mode: c_int) -> c_int {
    run(|| {
        if mode != POINTER_MODE_HOST && mode != POINTER_MODE_DEVICE {
            return Err(INVALID_VALUE);
        }
        update(h, |s| s.pointer_mode = mode)
    })
}

#[no_mangle]
pub extern "C" fn cublasGetPointerMode_v2(h: Handle, mode: *mut c_int) -> c_int {
    run(|| write_host(mode, handle(h)?.pointer_mode))
}

#[no_mangle]
pub extern "C" fn cublasSetMathMode(h: Handle, mode: c_int) -> c_int {
    run(|| {
        // cublasMath_t: DEFAULT 0, TENSOR_OP 1, PEDANTIC 2, TF32_TENSOR_OP 3,
        // FP32_EMULATED_BF16X9 4, optionally with the flag
        // DISALLOW_REDUCED_PRECISION_REDUCTION (16). The CPU computes every
        // mode at full FP32/FP64 precision.
        if !(0..=4).contains(&(mode & !16)) {
            return Err(INVALID_VALUE);
        }
        update(h, |s| s.math_mode = mode)
    })
}

#[no_mangle]
pub extern "C" fn cublasGetMathMode(h: Handle, mode: *mut c_int) -> c_int {
    run(|| write_host(mode, handle(h)?.math_mode))
}

#[no_mangle]
pub extern "C" fn cublasSetWorkspace_v2(h: Handle, workspace: *mut c_void, size: usize) -> c_int {
    run(|| {
        handle(h)?;
        // NVIDIA's documentation asks for 256-byte alignment, but cuBLAS
        // 13.1 accepts any pointer and size (seen on an H200: odd
        // addresses, NULL, host memory, a size beyond the allocation), and
        // so does rcud. The library computes without it here, so a bad
        // workspace cannot fault.
        update(h, |s| s.workspace = (workspace as u64, size))
    })
}

/// The name and description of each `cublasStatus_t`.
fn status_text(status: c_int) -> (&'static [u8], &'static [u8]) {
    match status {
        0 => (b"CUBLAS_STATUS_SUCCESS\0", b"success\0"),
        1 => (
            b"CUBLAS_STATUS_NOT_INITIALIZED\0",
            b"the library was not initialized\0",
        ),
        3 => (
            b"CUBLAS_STATUS_ALLOC_FAILED\0",
            b"the resource allocation failed\0",
        ),
        7 => (
            b"CUBLAS_STATUS_INVALID_VALUE\0",
            b"an invalid numeric value was used as an argument\0",
        ),
        8 => (
            b"CUBLAS_STATUS_ARCH_MISMATCH\0",
            b"an absent device architectural feature is required\0",
        ),
        11 => (
            b"CUBLAS_STATUS_MAPPING_ERROR\0",
            b"an access to GPU memory space failed\0",
        ),
        13 => (
            b"CUBLAS_STATUS_EXECUTION_FAILED\0",
            b"the GPU program failed to execute\0",
        ),
        14 => (
            b"CUBLAS_STATUS_INTERNAL_ERROR\0",
            b"an internal operation failed\0",
        ),
        15 => (
            b"CUBLAS_STATUS_NOT_SUPPORTED\0",
            b"the functionality requested is not supported\0",
        ),
        16 => (
            b"CUBLAS_STATUS_LICENSE_ERROR\0",
            b"error detected trying to check the license\0",
        ),
        _ => (b"CUBLAS_STATUS_UNKNOWN\0", b"unknown status\0"),
    }
}

#[no_mangle]
pub extern "C" fn cublasGetStatusName(status: c_int) -> *const c_char {
    status_text(status).0.as_ptr().cast()
}

#[no_mangle]
pub extern "C" fn cublasGetStatusString(status: c_int) -> *const c_char {
    status_text(status).1.as_ptr().cast()
}

// ---- host <-> device copies ------------------------------------------------

/// A 2D copy of `count` rows of `width` bytes with pitches in bytes, through
/// the runtime's copies (`cudaMemcpyDefault` infers the direction).
fn copy2d(
    dst: *mut c_void,
    dpitch: u64,
    src: *const c_void,
    spitch: u64,
    width: u64,
    count: u64,
    stream: Option<*mut c_void>,
) -> Result<(), c_int> {
    const MEMCPY_DEFAULT: c_int = 4;
    if dst.is_null() || src.is_null() {
        return Err(INVALID_VALUE);
    }
    let size = |v: u64| usize::try_from(v).map_err(|_| INVALID_VALUE);
    crate::cudart::pitched::memcpy2d(
        dst,
        size(dpitch)?,
        src,
        size(spitch)?,
        size(width)?,
        size(count)?,
        MEMCPY_DEFAULT,
        stream,
    )
    .map_err(|e| {
        tracing::debug!("cuBLAS copy failed: {e:?}");
        MAPPING_ERROR
    })
}

/// cublasSetMatrix/GetMatrix (+Async, _64): `rows` x `cols` elements of
/// `size` bytes between column-major `src` (`lds`) and `dst` (`ldd`).
#[allow(clippy::too_many_arguments)]
fn copy_matrix(
    rows: i64,
    cols: i64,
    size: i64,
    src: *const c_void,
    lds: i64,
    dst: *mut c_void,
    ldd: i64,
    stream: Option<*mut c_void>,
) -> Result<(), c_int> {
    if rows < 0 || cols < 0 || size <= 0 || lds <= 0 || ldd <= 0 {
        return Err(INVALID_VALUE);
    }
    if rows == 0 || cols == 0 {
        return Ok(());
    }
    // cuBLAS hands a leading dimension below `rows` to its pitched copy,
    // which fails: a mapping error (cuBLAS 13.1 on an H200).
    if lds < rows || ldd < rows {
        return Err(MAPPING_ERROR);
    }
    let s = size as u64;
    copy2d(
        dst,
        ldd as u64 * s,
        src,
        lds as u64 * s,
        rows as u64 * s,
        cols as u64,
        stream,
    )
}

/// cublasSetVector/GetVector (+Async, _64): `n` elements of `size` bytes
/// from `src` (every `incs`-th) to `dst` (every `incd`-th).
fn copy_vector(
    n: i64,
    size: i64,
    src: *const c_void,
    incs: i64,
    dst: *mut c_void,
    incd: i64,
    stream: Option<*mut c_void>,
) -> Result<(), c_int> {
    if size <= 0 || incs <= 0 || incd <= 0 {
        return Err(INVALID_VALUE);
    }
    // A negative count reaches cuBLAS's copy, which fails (as cuBLAS 13.1
    // answers on an H200).
    if n < 0 {
        return Err(MAPPING_ERROR);
    }
    if n == 0 {
        return Ok(());
    }
    let s = size as u64;
    copy2d(
        dst,
        incd as u64 * s,
        src,
        incs as u64 * s,
        s,
        n as u64,
        stream,
    )
}

both! {
    fn cublasSetMatrix / cublasSetMatrix_64 (rows: Int, cols: Int, elem_size: Int, a: *const c_void, lda: Int, b: *mut c_void, ldb: Int) {
        copy_matrix(rows.into(), cols.into(), elem_size.into(), a, lda.into(), b, ldb.into(), None)
    }
}
both! {
    fn cublasGetMatrix / cublasGetMatrix_64 (rows: Int, cols: Int, elem_size: Int, a: *const c_void, lda: Int, b: *mut c_void, ldb: Int) {
        copy_matrix(rows.into(), cols.into(), elem_size.into(), a, lda.into(), b, ldb.into(), None)
    }
}
both! {
    fn cublasSetMatrixAsync / cublasSetMatrixAsync_64 (rows: Int, cols: Int, elem_size: Int, a: *const c_void, lda: Int, b: *mut c_void, ldb: Int, stream: *mut c_void) {
        copy_matrix(rows.into(), cols.into(), elem_size.into(), a, lda.into(), b, ldb.into(), Some(stream))
    }
}
both! {
    fn cublasGetMatrixAsync / cublasGetMatrixAsync_64 (rows: Int, cols: Int, elem_size: Int, a: *const c_void, lda: Int, b: *mut c_void, ldb: Int, stream: *mut c_void) {
        copy_matrix(rows.into(), cols.into(), elem_size.into(), a, lda.into(), b, ldb.into(), Some(stream))
    }
}
both! {
    fn cublasSetVector / cublasSetVector_64 (n: Int, elem_size: Int, x: *const c_void, incx: Int, y: *mut c_void, incy: Int) {
        copy_vector(n.into(), elem_size.into(), x, incx.into(), y, incy.into(), None)
    }
}
both! {
    fn cublasGetVector / cublasGetVector_64 (n: Int, elem_size: Int, x: *const c_void, incx: Int, y: *mut c_void, incy: Int) {
        copy_vector(n.into(), elem_size.into(), x, incx.into(), y, incy.into(), None)
    }
}
both! {
    fn cublasSetVectorAsync / cublasSetVectorAsync_64 (n: Int, elem_size: Int, x: *const c_void, incx: Int, y: *mut c_void, incy: Int, stream: *mut c_void) {
        copy_vector(n.into(), elem_size.into(), x, incx.into(), y, incy.into(), Some(stream))
    }
}
both! {
    fn cublasGetVectorAsync / cublasGetVectorAsync_64 (n: Int, elem_size: Int, x: *const c_void, incx: Int, y: *mut c_void, incy: Int, stream: *mut c_void) {
        copy_vector(n.into(), elem_size.into(), x, incx.into(), y, incy.into(), Some(stream))
    }
}
