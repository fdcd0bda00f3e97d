//! The error log of CUDA 12.9+ (`cudaLogs*`, `cuLogs*`). rcud's driver
//! keeps no log: what it would record, it says through `RCUD_LOG`
//! (tracing) instead. So the log stays empty: the iterator never moves, a
//! dump writes nothing, and registered callbacks are kept (for their
//! handles to be checked) but never called.

use std::collections::HashSet;
use std::ffi::{c_char, c_void, CStr};
use std::os::raw::c_uint;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;

use parking_lot::Mutex;
use rcud_proto::CudaError;

use crate::ffi::{guard, write_out, CudaErrorT};

/// The position past the last message: the log has none.
const LOG_END: c_uint = 0;

fn callbacks() -> &'static Mutex<HashSet<u64>> {
    static CALLBACKS: OnceLock<Mutex<HashSet<u64>>> = OnceLock::new();
    CALLBACKS.get_or_init(Default::default)
}

fn no_flags(flags: c_uint) -> Result<(), CudaError> {
    if flags != 0 {
        return Err(CudaError::INVALID_VALUE);
    }
    Ok(())
}

/// `cudaLogsRegisterCallback`: the handle output is optional.
pub(crate) fn register(callback: *mut c_void, handle: *mut *mut c_void) -> Result<(), CudaError> {
    if callback.is_null() {
        return Err(CudaError::INVALID_VALUE);
    }
    static NEXT: AtomicU64 = AtomicU64::new(1);
    let h = NEXT.fetch_add(1, Ordering::Relaxed);
    callbacks().lock().insert(h);
    if !handle.is_null() {
        write_out(handle, h as *mut c_void)?;
    }
    Ok(())
}

pub(crate) fn unregister(handle: *mut c_void) -> Result<(), CudaError> {
    if callbacks().lock().remove(&(handle as u64)) {
        Ok(())
    } else {
        Err(CudaError::INVALID_VALUE)
    }
}

pub(crate) fn current(iterator: *mut c_uint, flags: c_uint) -> Result<(), CudaError> {
    no_flags(flags)?;
    write_out(iterator, LOG_END)
}

/// Advances an optional iterator to the end of the (empty) log.
fn advance(iterator: *mut c_uint) -> Result<(), CudaError> {
    if !iterator.is_null() {
        write_out(iterator, LOG_END)?;
    }
    Ok(())
}

/// `cudaLogsDumpToFile`: the file is created (emptied), with no message.
pub(crate) fn dump_to_file(
    iterator: *mut c_uint,
    path: *const c_char,
    flags: c_uint,
) -> Result<(), CudaError> {
    no_flags(flags)?;
    if path.is_null() {
        return Err(CudaError::INVALID_VALUE);
    }
    // SAFETY: the API passes a NUL-terminated path.
    let path = unsafe { CStr::from_ptr(path) }
        .to_str()
        .map_err(|_| CudaError::INVALID_VALUE)?;
    std::fs::File::create(path).map_err(|e| {
        tracing::debug!("cudaLogsDumpToFile({path}): {e}");
        CudaError::INVALID_VALUE
    })?;
    advance(iterator)
}

/// `cudaLogsDumpToMemory`: no message, so 0 bytes and a terminating NUL.
pub(crate) fn dump_to_memory(
    iterator: *mut c_uint,
    buffer: *mut c_char,
    size: *mut usize,
    flags: c_uint,
) -> Result<(), CudaError> {
    no_flags(flags)?;
    if buffer.is_null() || size.is_null() {
        return Err(CudaError::INVALID_VALUE);
    }
    // SAFETY: the API passes a valid size.
    if unsafe { size.read() } > 0 {
        write_out(buffer, 0)?;
    }
    write_out(size, 0)?;
    advance(iterator)
}

#[no_mangle]
pub extern "C" fn cudaLogsRegisterCallback(
    callback: *mut c_void,
    _data: *mut c_void,
    handle: *mut *mut c_void,
) -> CudaErrorT {
    guard(|| register(callback, handle))
}

#[no_mangle]
pub extern "C" fn cudaLogsUnregisterCallback(handle: *mut c_void) -> CudaErrorT {
    guard(|| unregister(handle))
}

#[no_mangle]
pub extern "C" fn cudaLogsCurrent(iterator: *mut c_uint, flags: c_uint) -> CudaErrorT {
    guard(|| current(iterator, flags))
}

#[no_mangle]
pub extern "C" fn cudaLogsDumpToFile(
    iterator: *mut c_uint,
    path: *const c_char,
    flags: c_uint,
) -> CudaErrorT {
    guard(|| dump_to_file(iterator, path, flags))
}

#[no_mangle]
pub extern "C" fn cudaLogsDumpToMemory(
    iterator: *mut c_uint,
    buffer: *mut c_char,
    size: *mut usize,
    flags: c_uint,
) -> CudaErrorT {
    guard(|| dump_to_memory(iterator, buffer, size, flags))
}
