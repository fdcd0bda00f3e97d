//! cuRAND (`libcurand.so.10`).

use std::os::raw::c_int;
use std::sync::atomic::AtomicBool;

/// `CURAND_STATUS_INTERNAL_ERROR`: what a function rcud does not implement returns.
pub(crate) const NOT_SUPPORTED: c_int = 999;

/// The body of every generated cuRAND stub.
pub(crate) fn not_supported(name: &str, why: &str, logged: &AtomicBool) -> c_int {
    super::log_stub("cuRAND", name, why, logged);
    NOT_SUPPORTED
}
