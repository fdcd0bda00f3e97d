//! The handle: create, destroy, stream, pointer mode; version and error
//! names.

use std::os::raw::{c_char, c_int, c_void};

use rcud_proto::math::sparse::Call;

use super::{
    call_sync, handle, insert, out, reply_i64, run, update, Handle, Object, INVALID_VALUE,
    NOT_INITIALIZED,
};

/// The cuSPARSE version rcud answers with: that of the headers the export
/// list was generated from (12.9.4).
const VERSION: (c_int, c_int, c_int) = (12, 9, 4);

#[no_mangle]
pub extern "C" fn cusparseCreate(handle_out: *mut *mut c_void) -> c_int {
    run(|| {
        if handle_out.is_null() {
            return Err(INVALID_VALUE);
        }
        // The handle's stream starts as the default stream (0).
        let reply = call_sync(0, &Call::Create {})?;
        let server = u64::try_from(reply_i64(&reply)?).map_err(|_| super::INTERNAL_ERROR)?;
        let key = insert(Object::Handle(Handle {
            server,
            stream: 0,
            pointer_mode: 0,
        }));
        out(handle_out, key as *mut c_void)
    })
}

#[no_mangle]
pub extern "C" fn cusparseDestroy(h: *mut c_void) -> c_int {
    run(|| {
        let handle = handle(h)?;
        call_sync(
            handle.stream,
            &Call::Destroy {
                handle: handle.server,
            },
        )?;
        super::remove(h, |o| matches!(o, Object::Handle(_))).map_err(|_| NOT_INITIALIZED)
    })
}

#[no_mangle]
pub extern "C" fn cusparseGetVersion(h: *mut c_void, version: *mut c_int) -> c_int {
    run(|| {
        handle(h)?;
        out(version, VERSION.0 * 1000 + VERSION.1 * 100 + VERSION.2)
    })
}

#[no_mangle]
pub extern "C" fn cusparseGetProperty(kind: c_int, value: *mut c_int) -> c_int {
    run(|| {
        // `libraryPropertyType`: MAJOR_VERSION, MINOR_VERSION, PATCH_LEVEL.
        let v = match kind {
            0 => VERSION.0,
            1 => VERSION.1,
            2 => VERSION.2,
            _ => return Err(INVALID_VALUE),
        };
        out(value, v)
    })
}

#[no_mangle]
pub extern "C" fn cusparseSetStream(h: *mut c_void, stream: *mut c_void) -> c_int {
    run(|| {
        handle(h)?;
        // A stream of another context or a destroyed one fails here, as it
        // would at the first launch in NVIDIA's library.
        super::super::stream_device(stream as u64).map_err(|_| INVALID_VALUE)?;
        update(h, |o| match o {
            Object::Handle(handle) => {
                handle.stream = stream as u64;
                Ok(())
            }
            _ => Err(NOT_INITIALIZED),
        })
    })
}

#[no_mangle]
pub extern "C" fn cusparseGetStream(h: *mut c_void, stream: *mut *mut c_void) -> c_int {
    run(|| out(stream, handle(h)?.stream as *mut c_void))
}

#[no_mangle]
pub extern "C" fn cusparseSetPointerMode(h: *mut c_void, mode: c_int) -> c_int {
    run(|| {
        handle(h)?;
        if !matches!(mode, 0 | 1) {
            return Err(INVALID_VALUE);
        }
        update(h, |o| match o {
            Object::Handle(handle) => {
                handle.pointer_mode = mode;
                Ok(())
            }
            _ => Err(NOT_INITIALIZED),
        })
    })
}

#[no_mangle]
pub extern "C" fn cusparseGetPointerMode(h: *mut c_void, mode: *mut c_int) -> c_int {
    run(|| out(mode, handle(h)?.pointer_mode))
}

/// `(name, description)` of each `cusparseStatus_t`, NUL-terminated.
fn status_text(status: c_int) -> (&'static [u8], &'static [u8]) {
    match status {
        0 => (b"CUSPARSE_STATUS_SUCCESS\0", b"success\0"),
        1 => (
            b"CUSPARSE_STATUS_NOT_INITIALIZED\0",
            b"initialization error\0",
        ),
        2 => (b"CUSPARSE_STATUS_ALLOC_FAILED\0", b"out of memory\0"),
        3 => (b"CUSPARSE_STATUS_INVALID_VALUE\0", b"invalid value\0"),
        4 => (
            b"CUSPARSE_STATUS_ARCH_MISMATCH\0",
            b"architecture mismatch\0",
        ),
        5 => (b"CUSPARSE_STATUS_MAPPING_ERROR\0", b"mapping error\0"),
        6 => (b"CUSPARSE_STATUS_EXECUTION_FAILED\0", b"execution failed\0"),
        7 => (
            b"CUSPARSE_STATUS_INTERNAL_ERROR\0",
            b"internal operation failed\0",
        ),
        8 => (
            b"CUSPARSE_STATUS_MATRIX_TYPE_NOT_SUPPORTED\0",
            b"matrix type not supported\0",
        ),
        9 => (b"CUSPARSE_STATUS_ZERO_PIVOT\0", b"zero pivot\0"),
        10 => (
            b"CUSPARSE_STATUS_NOT_SUPPORTED\0",
            b"operation not supported\0",
        ),
        11 => (
            b"CUSPARSE_STATUS_INSUFFICIENT_RESOURCES\0",
            b"insufficient resources\0",
        ),
        _ => (b"CUSPARSE_STATUS_UNKNOWN\0", b"unknown error\0"),
    }
}

#[no_mangle]
pub extern "C" fn cusparseGetErrorName(status: c_int) -> *const c_char {
    status_text(status).0.as_ptr().cast()
}

#[no_mangle]
pub extern "C" fn cusparseGetErrorString(status: c_int) -> *const c_char {
    status_text(status).1.as_ptr().cast()
}
