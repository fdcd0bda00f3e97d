//! Registration of device code, called by nvcc-generated start-up code in
//! every program, kernels or not. The fat binaries and the host-to-device
//! names of functions and variables are recorded; shipping them to the
//! server and launching kernels build on this table.

use std::ffi::{c_char, c_void, CStr};
use std::os::raw::c_int;

use parking_lot::Mutex;

/// What one `__cudaRegisterFatBinary` handle has registered.
#[derive(Debug, Default)]
struct Module {
    /// Address of the `__fatBinC_Wrapper_t` nvcc emitted.
    wrapper: usize,
    /// Host stub address -> device function name.
    functions: Vec<(usize, String)>,
    /// Host shadow address -> (device variable name, size).
    variables: Vec<(usize, String, usize)>,
}

/// The handle returned to nvcc's code is the address of a heap cell holding
/// the module's index; it is never dereferenced by the program.
static MODULES: Mutex<Vec<Option<Module>>> = Mutex::new(Vec::new());

fn handle_index(handle: *mut *mut c_void) -> Option<usize> {
    if handle.is_null() {
        return None;
    }
    // SAFETY: handles are only created by `__cudaRegisterFatBinary` below,
    // which stores the index in the cell, and stay valid until unregistered.
    Some(unsafe { *handle } as usize)
}

fn c_string(p: *const c_char) -> String {
    if p.is_null() {
        return String::new();
    }
    // SAFETY: nvcc passes NUL-terminated names that live as long as the program.
    unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
}

#[no_mangle]
pub extern "C" fn __cudaRegisterFatBinary(fat_cubin: *mut c_void) -> *mut *mut c_void {
    let mut modules = MODULES.lock();
    let index = modules.len();
    modules.push(Some(Module {
        wrapper: fat_cubin as usize,
        ..Module::default()
    }));
    tracing::debug!(index, "fat binary registered");
    Box::into_raw(Box::new(index as *mut c_void))
}

#[no_mangle]
pub extern "C" fn __cudaRegisterFatBinaryEnd(handle: *mut *mut c_void) {
    let Some(index) = handle_index(handle) else {
        return;
    };
    if let Some(Some(m)) = MODULES.lock().get(index) {
        tracing::debug!(
            index,
            wrapper = format_args!("{:#x}", m.wrapper),
            functions = m.functions.len(),
            variables = m.variables.len(),
            "fat binary registration complete"
        );
    }
}

#[no_mangle]
pub extern "C" fn __cudaUnregisterFatBinary(handle: *mut *mut c_void) {
    let Some(index) = handle_index(handle) else {
        return;
    };
    if let Some(slot) = MODULES.lock().get_mut(index) {
        *slot = None;
    }
    // SAFETY: created by Box::into_raw in __cudaRegisterFatBinary; nvcc's code
    // unregisters each handle once, at exit.
    drop(unsafe { Box::from_raw(handle) });
}

#[allow(clippy::too_many_arguments)]
#[no_mangle]
pub extern "C" fn __cudaRegisterFunction(
    handle: *mut *mut c_void,
    host_fun: *const c_char,
    _device_fun: *mut c_char,
    device_name: *const c_char,
    _thread_limit: c_int,
    _tid: *mut c_void,
    _bid: *mut c_void,
    _block_dim: *mut c_void,
    _grid_dim: *mut c_void,
    _warp_size: *mut c_int,
) {
    let Some(index) = handle_index(handle) else {
        return;
    };
    if let Some(Some(m)) = MODULES.lock().get_mut(index) {
        m.functions.push((host_fun as usize, c_string(device_name)));
    }
}

#[allow(clippy::too_many_arguments)]
#[no_mangle]
pub extern "C" fn __cudaRegisterVar(
    handle: *mut *mut c_void,
    host_var: *mut c_char,
    _device_address: *mut c_char,
    device_name: *const c_char,
    _ext: c_int,
    size: usize,
    _constant: c_int,
    _global: c_int,
) {
    let Some(index) = handle_index(handle) else {
        return;
    };
    if let Some(Some(m)) = MODULES.lock().get_mut(index) {
        m.variables
            .push((host_var as usize, c_string(device_name), size));
    }
}
