//! The runtime's library API (`cudaLibrary*`, `cudaGetKernel`): the
//! driver's libraries — modules loaded by the program itself — with the
//! runtime's error codes. One implementation: the client runtime's modules.

use std::ffi::{c_char, c_void, CStr};
use std::os::raw::{c_int, c_uint};

use rcud_client::Runtime;
use rcud_proto::CudaError;

use crate::ffi::{guard, write_out, CudaErrorT};

fn rt() -> &'static Runtime {
    Runtime::global()
}

fn name_of<'a>(name: *const c_char) -> Result<&'a str, CudaError> {
    if name.is_null() {
        return Err(CudaError::INVALID_VALUE);
    }
    // SAFETY: the API passes a NUL-terminated name that outlives the call.
    unsafe { CStr::from_ptr(name) }
        .to_str()
        .map_err(|_| CudaError::INVALID_VALUE)
}

fn load(library: *mut *mut c_void, bytes: &[u8]) -> Result<(), CudaError> {
    if library.is_null() {
        return Err(CudaError::INVALID_VALUE);
    }
    if rcud_fatbin::image::classify(bytes).is_none() {
        return Err(CudaError::INVALID_KERNEL_IMAGE);
    }
    let d = rt().current_device()?;
    write_out(library, rt().module_load(d, bytes)? as *mut c_void)
}

/// `cudaLibraryLoadData`: JIT and library options are accepted and not
/// needed (the emulated device interprets PTX; libraries load eagerly).
#[no_mangle]
pub extern "C" fn cudaLibraryLoadData(
    library: *mut *mut c_void,
    code: *const c_void,
    _jit_options: *mut c_int,
    _jit_values: *mut *mut c_void,
    _jit_count: c_uint,
    _options: *mut c_int,
    _values: *mut *mut c_void,
    _count: c_uint,
) -> CudaErrorT {
    guard(|| {
        let bytes =
            crate::driver::module::image_bytes(code).map_err(|_| CudaError::INVALID_VALUE)?;
        load(library, &bytes)
    })
}

#[no_mangle]
pub extern "C" fn cudaLibraryLoadFromFile(
    library: *mut *mut c_void,
    file: *const c_char,
    _jit_options: *mut c_int,
    _jit_values: *mut *mut c_void,
    _jit_count: c_uint,
    _options: *mut c_int,
    _values: *mut *mut c_void,
    _count: c_uint,
) -> CudaErrorT {
    guard(|| {
        let path = name_of(file)?;
        let bytes = std::fs::read(path).map_err(|e| {
            tracing::warn!("cannot read library file {path}: {e}");
            CudaError::FILE_NOT_FOUND
        })?;
        load(library, &bytes)
    })
}

#[no_mangle]
pub extern "C" fn cudaLibraryUnload(library: *mut c_void) -> CudaErrorT {
    guard(|| rt().module_unload(library as u64))
}

#[no_mangle]
pub extern "C" fn cudaLibraryGetKernel(
    kernel: *mut *mut c_void,
    library: *mut c_void,
    name: *const c_char,
) -> CudaErrorT {
    guard(|| {
        let name = name_of(name)?;
        if kernel.is_null() {
            return Err(CudaError::INVALID_VALUE);
        }
        let d = rt().current_device()?;
        write_out(
            kernel,
            rt().module_function(d, library as u64, name)? as *mut c_void,
        )
    })
}

/// A library's global `name`: its device address and size.
fn library_global(
    library: *mut c_void,
    name: *const c_char,
) -> Result<(usize, u64, u64), CudaError> {
    let name = name_of(name)?;
    let d = rt().current_device()?;
    let (p, size) = rt()
        .module_global(d, library as u64, name)
        .map_err(|e| match e {
            CudaError::INVALID_SYMBOL => CudaError::SYMBOL_NOT_FOUND,
            other => other,
        })?;
    Ok((d, p, size))
}

fn write_global(
    dptr: *mut *mut c_void,
    bytes: *mut usize,
    p: u64,
    size: u64,
) -> Result<(), CudaError> {
    if !dptr.is_null() {
        write_out(dptr, p as *mut c_void)?;
    }
    if !bytes.is_null() {
        write_out(bytes, size as usize)?;
    }
    Ok(())
}

#[no_mangle]
pub extern "C" fn cudaLibraryGetGlobal(
    dptr: *mut *mut c_void,
    bytes: *mut usize,
    library: *mut c_void,
    name: *const c_char,
) -> CudaErrorT {
    guard(|| {
        let (_, p, size) = library_global(library, name)?;
        write_global(dptr, bytes, p, size)
    })
}

/// A library's `__managed__` variable, mirrored on the host as managed
/// memory (the emulator keeps no mark of `.managed` globals, so the name
/// is trusted).
#[no_mangle]
pub extern "C" fn cudaLibraryGetManaged(
    dptr: *mut *mut c_void,
    bytes: *mut usize,
    library: *mut c_void,
    name: *const c_char,
) -> CudaErrorT {
    guard(|| {
        let (d, p, size) = library_global(library, name)?;
        super::managed::adopt_variables(d, &[(p, size)])?;
        write_global(dptr, bytes, p, size)
    })
}

#[no_mangle]
pub extern "C" fn cudaLibraryGetKernelCount(
    count: *mut c_uint,
    library: *mut c_void,
) -> CudaErrorT {
    guard(|| {
        let names = rt().module_kernel_names(library as u64)?;
        write_out(count, names.len() as c_uint)
    })
}

/// `cudaLibraryEnumerateKernels`: the first `capacity` kernels, in the
/// order the code defines them.
#[no_mangle]
pub extern "C" fn cudaLibraryEnumerateKernels(
    kernels: *mut *mut c_void,
    capacity: c_uint,
    library: *mut c_void,
) -> CudaErrorT {
    guard(|| {
        if kernels.is_null() {
            return Err(CudaError::INVALID_VALUE);
        }
        let d = rt().current_device()?;
        let names = rt().module_kernel_names(library as u64)?;
        for (i, name) in names.iter().take(capacity as usize).enumerate() {
            let k = rt().module_function(d, library as u64, name)?;
            // SAFETY: the caller's array holds `capacity` handles; `i` is
            // below it.
            write_out(unsafe { kernels.add(i) }, k as *mut c_void)?;
        }
        Ok(())
    })
}

/// `cudaGetKernel`: the kernel of a `__global__` function of the program;
/// the runtime already knows every kernel by its host stub.
#[no_mangle]
pub extern "C" fn cudaGetKernel(kernel: *mut *mut c_void, entry: *const c_void) -> CudaErrorT {
    guard(|| {
        if kernel.is_null() || entry.is_null() {
            return Err(CudaError::INVALID_VALUE);
        }
        rt().function_name(entry as u64)
            .map_err(|_| CudaError::INVALID_DEVICE_FUNCTION)?;
        write_out(kernel, entry as *mut c_void)
    })
}

#[no_mangle]
pub extern "C" fn cudaKernelSetAttributeForDevice(
    kernel: *mut c_void,
    attr: c_int,
    value: c_int,
    device: c_int,
) -> CudaErrorT {
    guard(|| {
        let previous = rt().current_device()?;
        rt().set_device(device)?;
        let result = super::launch::set_function_attribute(kernel, attr, value);
        rt().set_device(previous as c_int)?;
        result
    })
}
