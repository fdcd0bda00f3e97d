//! cuSOLVER (`libcusolver.so.12`).

use std::os::raw::c_int;
use std::sync::atomic::AtomicBool;

/// `CUSOLVER_STATUS_NOT_SUPPORTED`: what a function rcud does not implement returns.
pub(crate) const NOT_SUPPORTED: c_int = 9;

/// The body of every generated cuSOLVER stub.
pub(crate) fn not_supported(name: &str, why: &str, logged: &AtomicBool) -> c_int {
    super::log_stub("cuSOLVER", name, why, logged);
    NOT_SUPPORTED
}
