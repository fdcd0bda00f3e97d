//! cuSPARSE (`libcusparse.so.12`).

use std::os::raw::c_int;
use std::sync::atomic::AtomicBool;

/// `CUSPARSE_STATUS_NOT_SUPPORTED`: what a function rcud does not implement returns.
pub(crate) const NOT_SUPPORTED: c_int = 10;

/// The body of every generated cuSPARSE stub.
pub(crate) fn not_supported(name: &str, why: &str, logged: &AtomicBool) -> c_int {
    super::log_stub("cuSPARSE", name, why, logged);
    NOT_SUPPORTED
}
