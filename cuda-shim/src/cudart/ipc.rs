//! CUDA IPC between processes of one client host that use the same server:
//! `cudaIpcGetMemHandle`, `cudaIpcOpenMemHandle`, `cudaIpcCloseMemHandle`,
//! and interprocess events (`cudaIpcGetEventHandle`, `cudaIpcOpenEventHandle`;
//! their shared state is on the client host, `rcud_client::runtime::ipc_events`).
//! The server shares the allocation's pages between the two processes'
//! agents (`rcud_server::ipc`); the handle is the server's.

use std::ffi::c_void;
use std::os::raw::c_uint;

use rcud_client::Runtime;
use rcud_proto::CudaError;

use crate::ffi::{guard, write_out, CudaErrorT};

/// `cudaIpcMemHandle_t` / `CUipcMemHandle`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct IpcMemHandle {
    reserved: [u8; 64],
}

/// `cudaIpcMemLazyEnablePeerAccess`, the one flag.
const LAZY_ENABLE_PEER_ACCESS: c_uint = 0x1;

fn rt() -> &'static Runtime {
    Runtime::global()
}

pub(crate) fn get_mem_handle(handle: *mut IpcMemHandle, ptr: u64) -> Result<(), CudaError> {
    if handle.is_null() || ptr == 0 {
        return Err(CudaError::INVALID_VALUE);
    }
    let reserved = rt().ipc_get_mem_handle(ptr)?;
    write_out(handle, IpcMemHandle { reserved })
}

pub(crate) fn open_mem_handle(handle: &IpcMemHandle, flags: c_uint) -> Result<u64, CudaError> {
    if flags & !LAZY_ENABLE_PEER_ACCESS != 0 {
        return Err(CudaError::INVALID_VALUE);
    }
    rt().ipc_open_mem_handle(&handle.reserved)
}

pub(crate) fn close_mem_handle(ptr: u64) -> Result<(), CudaError> {
    rt().ipc_close_mem_handle(ptr)
}

#[no_mangle]
pub extern "C" fn cudaIpcGetMemHandle(
    handle: *mut IpcMemHandle,
    dev_ptr: *mut c_void,
) -> CudaErrorT {
    guard(|| get_mem_handle(handle, dev_ptr as u64))
}

#[no_mangle]
pub extern "C" fn cudaIpcOpenMemHandle(
    dev_ptr: *mut *mut c_void,
    handle: IpcMemHandle,
    flags: c_uint,
) -> CudaErrorT {
    guard(|| {
        if dev_ptr.is_null() {
            return Err(CudaError::INVALID_VALUE);
        }
        let p = open_mem_handle(&handle, flags)?;
        write_out(dev_ptr, p as *mut c_void)
    })
}

#[no_mangle]
pub extern "C" fn cudaIpcCloseMemHandle(dev_ptr: *mut c_void) -> CudaErrorT {
    guard(|| close_mem_handle(dev_ptr as u64))
}

/// `cudaIpcEventHandle_t` / `CUipcEventHandle`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct IpcEventHandle {
    reserved: [u8; 64],
}

pub(crate) fn get_event_handle(handle: *mut IpcEventHandle, event: u64) -> Result<(), CudaError> {
    if handle.is_null() {
        return Err(CudaError::INVALID_VALUE);
    }
    let reserved = rt().ipc_get_event_handle(event)?;
    write_out(handle, IpcEventHandle { reserved })
}

pub(crate) fn open_event_handle(handle: &IpcEventHandle) -> Result<u64, CudaError> {
    rt().ipc_open_event_handle(&handle.reserved)
}

#[no_mangle]
pub extern "C" fn cudaIpcGetEventHandle(
    handle: *mut IpcEventHandle,
    event: *mut c_void,
) -> CudaErrorT {
    guard(|| get_event_handle(handle, event as u64))
}

#[no_mangle]
pub extern "C" fn cudaIpcOpenEventHandle(
    event: *mut *mut c_void,
    handle: IpcEventHandle,
) -> CudaErrorT {
    guard(|| {
        if event.is_null() {
            return Err(CudaError::INVALID_VALUE);
        }
        let e = open_event_handle(&handle)?;
        write_out(event, e as *mut c_void)
    })
}
