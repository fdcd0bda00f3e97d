//! `cuGetErrorName` and `cuGetErrorString`.

use std::collections::HashMap;
use std::ffi::{CStr, CString};
use std::os::raw::{c_char, c_int};
use std::sync::OnceLock;

use rcud_proto::CudaError;

use super::{out, CuResult, DriverError};

include!(concat!(env!("OUT_DIR"), "/driver_errors.rs"));

/// Descriptions: the runtime's phrase for the same value (the runtime's
/// codes were laid out after the driver's, and NVIDIA's driver answers with
/// the same phrases: `CUDA_ERROR_NOT_FOUND` is "named symbol not found",
/// `CUDA_ERROR_INVALID_CONTEXT` "invalid device context"), else the name in
/// words. Programs match on them (CuPy's tests do).
fn descriptions() -> &'static HashMap<c_int, CString> {
    static TABLE: OnceLock<HashMap<c_int, CString>> = OnceLock::new();
    TABLE.get_or_init(|| {
        DRIVER_ERRORS
            .iter()
            .map(|&(value, name)| {
                let name = name.to_string_lossy();
                let words = name
                    .trim_start_matches("CUDA_ERROR_")
                    .trim_start_matches("CUDA_")
                    .replace('_', " ")
                    .to_lowercase();
                let text = match CudaError(value as u32).description() {
                    Some(d) => d.to_string(),
                    None => words,
                };
                (value, CString::new(text).unwrap_or_default())
            })
            .collect()
    })
}

fn name_of(error: c_int) -> Option<&'static CStr> {
    DRIVER_ERRORS
        .iter()
        .find(|&&(v, _)| v == error)
        .map(|&(_, n)| n)
}

#[no_mangle]
pub extern "C" fn cuGetErrorName(error: c_int, text: *mut *const c_char) -> CuResult {
    super::guard(|| match name_of(error) {
        Some(name) => out(text, name.as_ptr()),
        None => {
            out(text, std::ptr::null())?;
            Err(DriverError::INVALID_VALUE)
        }
    })
}

#[no_mangle]
pub extern "C" fn cuGetErrorString(error: c_int, text: *mut *const c_char) -> CuResult {
    super::guard(|| match descriptions().get(&error) {
        Some(s) => out(text, s.as_ptr()),
        None => {
            out(text, std::ptr::null())?;
            Err(DriverError::INVALID_VALUE)
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(f: extern "C" fn(c_int, *mut *const c_char) -> CuResult, e: c_int) -> Option<String> {
        let mut p = std::ptr::null();
        if f(e, &mut p) != 0 {
            assert!(p.is_null());
            return None;
        }
        // SAFETY: success leaves a static NUL-terminated string.
        Some(unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned())
    }

    #[test]
    fn names_and_strings() {
        assert_eq!(text(cuGetErrorName, 0).as_deref(), Some("CUDA_SUCCESS"));
        assert_eq!(
            text(cuGetErrorName, 201).as_deref(),
            Some("CUDA_ERROR_INVALID_CONTEXT")
        );
        assert_eq!(
            text(cuGetErrorName, 801).as_deref(),
            Some("CUDA_ERROR_NOT_SUPPORTED")
        );
        assert_eq!(text(cuGetErrorString, 2).as_deref(), Some("out of memory"));
        assert_eq!(
            text(cuGetErrorString, 201).as_deref(),
            Some("invalid device context")
        );
        assert_eq!(
            text(cuGetErrorString, 500).as_deref(),
            Some("named symbol not found")
        );
        assert_eq!(
            text(cuGetErrorString, 209).as_deref(),
            Some("no kernel image is available for execution on the device")
        );
        assert_eq!(text(cuGetErrorName, 12345), None);
        assert_eq!(text(cuGetErrorString, -1), None);
    }
}
