//! Helpers shared by every exported function: the panic guard, error
//! recording, logging set-up, and checked conversions of C arguments.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Once;

use rcud_client::Runtime;
use rcud_proto::CudaError;

/// `cudaError_t` as the C ABI returns it.
pub(crate) type CudaErrorT = std::os::raw::c_int;

/// Runs the body of an API function: sets up logging once, refuses calls
/// from inside a host function (`cudaErrorNotPermitted`), turns a panic into
/// `cudaErrorUnknown` instead of unwinding into C, and records a failure as
/// the thread's last error.
pub(crate) fn guard(body: impl FnOnce() -> Result<(), CudaError>) -> CudaErrorT {
    init_logging();
    // CUDA forbids CUDA calls in a host function; ours would wait on the
    // queue that runs it. Refused without touching the thread's last error,
    // which belongs to the code the function interrupted.
    if rcud_client::session::in_host_function() {
        return CudaError::NOT_PERMITTED.0 as CudaErrorT;
    }
    let result = catch_unwind(AssertUnwindSafe(body)).unwrap_or_else(|_| {
        eprintln!("rcud: internal error (panic) in the CUDA runtime library");
        Err(CudaError::UNKNOWN)
    });
    crate::driver::initialized_by_runtime();
    Runtime::record(result).0 as CudaErrorT
}

/// The body of every generated stub.
pub(crate) fn not_supported(name: &str, why: &str, logged: &AtomicBool) -> CudaErrorT {
    init_logging();
    if !logged.swap(true, Ordering::Relaxed) {
        tracing::warn!(target: "rcud::unimplemented", "{name} is not supported by rcud: {why}");
    }
    Runtime::record(Err(CudaError::NOT_SUPPORTED)).0 as CudaErrorT
}

/// Logs go to stderr, filtered by `RCUD_LOG` (e.g. `RCUD_LOG=warn` or
/// `RCUD_LOG=rcud=debug`); nothing is printed when it is unset.
pub(crate) fn init_logging() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        if let Ok(filter) = std::env::var("RCUD_LOG") {
            let _ = tracing_subscriber::fmt()
                .with_env_filter(tracing_subscriber::EnvFilter::new(filter))
                .with_writer(std::io::stderr)
                .try_init();
        }
    });
}

/// Writes `value` through an output pointer, or fails for NULL.
pub(crate) fn write_out<T>(ptr: *mut T, value: T) -> Result<(), CudaError> {
    if ptr.is_null() {
        return Err(CudaError::INVALID_VALUE);
    }
    // SAFETY: the CUDA API contract makes output pointers valid for writes of
    // their type; NULL was rejected above.
    unsafe { ptr.write(value) };
    Ok(())
}

/// A byte count from C that must fit a Rust slice.
pub(crate) fn byte_count(count: usize) -> Result<usize, CudaError> {
    if count > isize::MAX as usize {
        return Err(CudaError::INVALID_VALUE);
    }
    Ok(count)
}

extern "C" {
    /// glibc's `stdout` stream of the application.
    static mut stdout: *mut libc::FILE;
}

/// Writes device `printf` output to the application's C `stdout`, after what
/// the program itself printed there, as CUDA does.
pub(crate) fn write_stdout(bytes: &[u8]) {
    if bytes.is_empty() {
        return;
    }
    // SAFETY: `stdout` is glibc's stream for the process, valid while the
    // program runs; fwrite and fflush lock it internally.
    unsafe {
        let out = stdout;
        libc::fwrite(bytes.as_ptr() as *const libc::c_void, 1, bytes.len(), out);
        libc::fflush(out);
    }
}

/// The body of a generated stub of a function that returns nothing (legacy
/// cuBLAS): logs once.
pub(crate) fn stub_void(name: &str, why: &str, logged: &AtomicBool) {
    crate::math::log_stub("stub", name, why, logged);
}

/// The body of a generated stub of a function that returns a floating-point
/// or complex value (legacy cuBLAS): logs once and returns zero.
pub(crate) fn stub_float(name: &str, why: &str, logged: &AtomicBool) -> f64 {
    crate::math::log_stub("stub", name, why, logged);
    0.0
}

/// The body of a generated stub of a function that returns a pointer, a
/// size or a plain int: logs once and returns zero (NULL).
pub(crate) fn stub_value(name: &str, why: &str, logged: &AtomicBool) -> usize {
    crate::math::log_stub("stub", name, why, logged);
    0
}
