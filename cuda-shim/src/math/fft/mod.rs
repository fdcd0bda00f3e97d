//! cuFFT (`libcufft.so.12`).

use std::os::raw::c_int;
use std::sync::atomic::AtomicBool;

/// `CUFFT_NOT_SUPPORTED`: what a function rcud does not implement returns.
pub(crate) const NOT_SUPPORTED: c_int = 16;

/// The body of every generated cuFFT stub.
pub(crate) fn not_supported(name: &str, why: &str, logged: &AtomicBool) -> c_int {
    super::log_stub("cuFFT", name, why, logged);
    NOT_SUPPORTED
}
