//! The CUDA driver API (`libcuda.so.1`) over the same client runtime as the
//! runtime API, so the two share devices, contexts, memory, streams, events
//! and modules. `build.rs` scans these files: a function defined here (with
//! `driver_fn!` or `pub extern "C" fn`) is not generated as a stub.
//!
//! Only the current (`_v2`, `_v3`...) variants of a function are written by
//! hand; the legacy ones with 32-bit device pointers stay stubs. The
//! per-thread-default-stream twins (`_ptds`, `_ptsz`) share their bodies:
//! the server runs a device's work in issue order, so the legacy default
//! stream's stronger ordering holds for them too.
// Exported C functions are `pub` by nature; their names follow CUDA's.
#![allow(non_snake_case, unreachable_pub)]

use std::os::raw::c_int;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, Ordering};

use rcud_client::Runtime;
use rcud_proto::CudaError;

/// Defines a driver function, or several that share one body:
/// `driver_fn! { name (args) { body } }` or
/// `driver_fn! { [name, twin] (args) { body } }`, where `body` returns
/// `Result<(), DriverError>`. `build.rs` reads the names from the first line.
macro_rules! driver_fn {
    ([$($name:ident),+] $args:tt $body:block) => {
        $(
            #[no_mangle]
            pub extern "C" fn $name $args -> crate::driver::CuResult {
                crate::driver::guard_named(stringify!($name), || $body)
            }
        )+
    };
    ($name:ident $args:tt $body:block) => {
        driver_fn! { [$name] $args $body }
    };
}

mod context;
pub(crate) mod device;
mod errors;
mod export_tables;
pub(crate) use export_tables::lookup as export_table;
mod graph;
mod init;
mod interop;

pub(crate) use init::{lookup as proc_lookup, DRIVER_VERSION};
mod launch;
mod legacy;
mod memory;
mod mempool;
pub(crate) mod module;
mod stream;
mod texref;
mod texture;
mod vmm;

/// `CUresult` as the C ABI returns it.
pub type CuResult = c_int;

/// A `CUresult` other than `CUDA_SUCCESS`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DriverError(pub c_int);

impl DriverError {
    pub const INVALID_VALUE: Self = Self(1);
    pub const NOT_INITIALIZED: Self = Self(3);
    pub const NO_DEVICE: Self = Self(100);
    pub const INVALID_DEVICE: Self = Self(101);
    pub const INVALID_IMAGE: Self = Self(200);
    pub const INVALID_CONTEXT: Self = Self(201);
    pub const FILE_NOT_FOUND: Self = Self(301);
    pub const INVALID_PTX: Self = Self(218);
    pub const INVALID_HANDLE: Self = Self(400);
    pub const NOT_FOUND: Self = Self(500);
    pub const NOT_SUPPORTED: Self = Self(801);
    pub const UNKNOWN: Self = Self(999);
}

/// The driver's code for a runtime error. Most values coincide (the
/// runtime's enum was laid out after the driver's); the runtime-only ones
/// below 100 mean a bad argument to the driver.
impl From<CudaError> for DriverError {
    fn from(e: CudaError) -> Self {
        let code = match e {
            CudaError::INVALID_SYMBOL => DriverError::NOT_FOUND.0,
            CudaError::INVALID_DEVICE_FUNCTION => DriverError::INVALID_HANDLE.0,
            CudaError::INITIALIZATION_ERROR => DriverError::NOT_INITIALIZED.0,
            CudaError::STARTUP_FAILURE => DriverError::UNKNOWN.0,
            CudaError::INCOMPATIBLE_DRIVER_CONTEXT => DriverError::INVALID_CONTEXT.0,
            // Same value, same meaning.
            e if [0, 2, 4, 34, 46].contains(&e.0) || e.0 >= 100 => e.0 as c_int,
            _ => DriverError::INVALID_VALUE.0,
        };
        DriverError(code)
    }
}

pub(crate) type DriverResult = Result<(), DriverError>;

fn rt() -> &'static Runtime {
    Runtime::global()
}

/// Set by `cuInit`: before it, every other call fails with
/// `CUDA_ERROR_NOT_INITIALIZED`, as in CUDA.
static INITIALIZED: AtomicBool = AtomicBool::new(false);

fn initialized() -> DriverResult {
    if INITIALIZED.load(Ordering::Acquire) {
        Ok(())
    } else {
        Err(DriverError::NOT_INITIALIZED)
    }
}

/// The runtime initializes the driver, as NVIDIA's does: a program that
/// made a runtime call may use the driver API without `cuInit`.
pub(crate) fn initialized_by_runtime() {
    if !INITIALIZED.load(Ordering::Relaxed) && rt().device_count().is_ok() {
        INITIALIZED.store(true, Ordering::Release);
    }
}

/// Runs the body of a driver function: sets up logging once, refuses calls
/// from inside a host function (`CUDA_ERROR_NOT_PERMITTED`), and turns a
/// panic into `CUDA_ERROR_UNKNOWN` instead of unwinding into C. Driver calls
/// leave the runtime's last error alone.
pub(crate) fn guard(body: impl FnOnce() -> DriverResult) -> CuResult {
    guard_named("a private driver table's function", body)
}

/// [`guard`] for the exported function `name`; a failure is logged with the
/// name (`RCUD_LOG=rcudart::driver=debug`).
pub(crate) fn guard_named(name: &str, body: impl FnOnce() -> DriverResult) -> CuResult {
    crate::ffi::init_logging();
    if rcud_client::session::in_host_function() {
        return CudaError::NOT_PERMITTED.0 as CuResult;
    }
    match catch_unwind(AssertUnwindSafe(body)) {
        Ok(Ok(())) => 0,
        Ok(Err(e)) => {
            tracing::debug!("{name} returns CUresult {}", e.0);
            e.0
        }
        Err(_) => {
            eprintln!("rcud: internal error (panic) in the CUDA driver library");
            DriverError::UNKNOWN.0
        }
    }
}

/// The body of every generated driver stub.
pub(crate) fn not_supported(name: &str, why: &str, logged: &AtomicBool) -> CuResult {
    crate::ffi::init_logging();
    if !logged.swap(true, Ordering::Relaxed) {
        tracing::warn!(target: "rcud::unimplemented", "{name} (CUDA driver API) is not supported by rcud: {why}");
    }
    DriverError::NOT_SUPPORTED.0
}

/// Writes `value` through an output pointer, or fails for NULL.
pub(crate) fn out<T>(ptr: *mut T, value: T) -> DriverResult {
    crate::ffi::write_out(ptr, value).map_err(|_| DriverError::INVALID_VALUE)
}

/// The current context's device, after the `cuInit` check.
fn context_device() -> Result<usize, DriverError> {
    initialized()?;
    Ok(rt().context_device()?)
}

/// A `CUdevice` ordinal, checked.
fn device(ordinal: c_int) -> Result<c_int, DriverError> {
    initialized()?;
    let count = rt()
        .device_count()
        .map_err(|_| DriverError::INVALID_DEVICE)?;
    if ordinal < 0 || ordinal as usize >= count {
        return Err(DriverError::INVALID_DEVICE);
    }
    Ok(ordinal)
}

/// A NUL-terminated C string argument.
fn c_str<'a>(p: *const std::os::raw::c_char) -> Result<&'a str, DriverError> {
    if p.is_null() {
        return Err(DriverError::INVALID_VALUE);
    }
    // SAFETY: the API contract makes name arguments NUL-terminated strings
    // that outlive the call.
    unsafe { std::ffi::CStr::from_ptr(p) }
        .to_str()
        .map_err(|_| DriverError::INVALID_VALUE)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runtime_errors_become_driver_codes() {
        let d = |e: CudaError| DriverError::from(e).0;
        assert_eq!(d(CudaError::MEMORY_ALLOCATION), 2);
        assert_eq!(d(CudaError::INVALID_CONFIGURATION), 1);
        assert_eq!(d(CudaError::INVALID_MEMCPY_DIRECTION), 1);
        assert_eq!(d(CudaError::INVALID_CONTEXT), 201);
        assert_eq!(d(CudaError::INVALID_KERNEL_IMAGE), 200);
        assert_eq!(d(CudaError::NO_KERNEL_IMAGE_FOR_DEVICE), 209);
        assert_eq!(d(CudaError::INVALID_RESOURCE_HANDLE), 400);
        assert_eq!(d(CudaError::INVALID_DEVICE_FUNCTION), 400);
        assert_eq!(d(CudaError::SYMBOL_NOT_FOUND), 500);
        assert_eq!(d(CudaError::ILLEGAL_ADDRESS), 700);
        assert_eq!(d(CudaError::NOT_SUPPORTED), 801);
        assert_eq!(d(CudaError::DEVICES_UNAVAILABLE), 46);
    }
}
