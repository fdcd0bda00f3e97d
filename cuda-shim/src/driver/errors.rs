//! `cuGetErrorName` and `cuGetErrorString`.

use std::collections::HashMap;
use std::ffi::{CStr, CString};
use std::os::raw::{c_char, c_int};
use std::sync::OnceLock;

use rcud_proto::CudaError;

use super::{out, CuResult, DriverError};

include!(concat!(env!("OUT_DIR"), "/driver_errors.rs"));

/// Descriptions: the runtime's phrase where the runtime has the same code
/// under the same name, else the name in words.
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
                let runtime = CudaError(value as u32);
                let same = runtime.name().is_some_and(|n| {
                    n.trim_start_matches("cudaError").to_lowercase() == words.replace(' ', "")
                });
                let text = match runtime.description() {
                    Some(d) if same || value == 0 => d.to_string(),
                    _ => words,
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
            Some("invalid context")
        );
        assert_eq!(text(cuGetErrorName, 12345), None);
        assert_eq!(text(cuGetErrorString, -1), None);
    }
}
