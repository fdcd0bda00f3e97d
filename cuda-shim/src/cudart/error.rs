//! Error state and error strings.

use std::collections::HashMap;
use std::ffi::{c_char, CStr, CString};
use std::sync::OnceLock;

use rcud_client::Runtime;
use rcud_proto::CudaError;

use crate::ffi::CudaErrorT;

const UNRECOGNIZED: &CStr = c"unrecognized error code";

/// NUL-terminated names and descriptions of every known error, built once and
/// kept for the life of the process (callers hold the returned pointers).
fn strings() -> &'static HashMap<u32, (CString, CString)> {
    static STRINGS: OnceLock<HashMap<u32, (CString, CString)>> = OnceLock::new();
    STRINGS.get_or_init(|| {
        (0..=10_000u32)
            .filter_map(|code| {
                let e = CudaError(code);
                let name = CString::new(e.name()?).ok()?;
                let desc = CString::new(e.description()?).ok()?;
                Some((code, (name, desc)))
            })
            .collect()
    })
}

#[no_mangle]
pub extern "C" fn cudaGetLastError() -> CudaErrorT {
    Runtime::global().take_last_error().0 as CudaErrorT
}

#[no_mangle]
pub extern "C" fn cudaPeekAtLastError() -> CudaErrorT {
    Runtime::global().peek_last_error().0 as CudaErrorT
}

#[no_mangle]
pub extern "C" fn cudaGetErrorName(error: CudaErrorT) -> *const c_char {
    match strings().get(&(error as u32)) {
        Some((name, _)) => name.as_ptr(),
        None => UNRECOGNIZED.as_ptr(),
    }
}

#[no_mangle]
pub extern "C" fn cudaGetErrorString(error: CudaErrorT) -> *const c_char {
    match strings().get(&(error as u32)) {
        Some((_, desc)) => desc.as_ptr(),
        None => UNRECOGNIZED.as_ptr(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(p: *const c_char) -> String {
        // SAFETY: the functions return pointers to static NUL-terminated strings.
        unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
    }

    #[test]
    fn names_and_strings() {
        let inval = CudaError::INVALID_VALUE.0 as CudaErrorT;
        assert_eq!(text(cudaGetErrorName(inval)), "cudaErrorInvalidValue");
        assert_eq!(text(cudaGetErrorString(inval)), "invalid argument");
        assert_eq!(text(cudaGetErrorName(0)), "cudaSuccess");
        assert_eq!(text(cudaGetErrorName(12345)), "unrecognized error code");
        assert_eq!(text(cudaGetErrorString(-1)), "unrecognized error code");
    }
}
