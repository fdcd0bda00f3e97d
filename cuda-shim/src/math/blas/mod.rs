//! cuBLAS (`libcublas.so.13`).

use std::os::raw::c_int;
use std::sync::atomic::AtomicBool;

/// `CUBLAS_STATUS_NOT_SUPPORTED`: what a function rcud does not implement returns.
pub(crate) const NOT_SUPPORTED: c_int = 15;

/// The body of every generated cuBLAS stub.
pub(crate) fn not_supported(name: &str, why: &str, logged: &AtomicBool) -> c_int {
    super::log_stub("cuBLAS", name, why, logged);
    NOT_SUPPORTED
}
