//! Device management, versions and the profiler control calls.

use std::os::raw::{c_int, c_uint};

use rcud_client::runtime::RUNTIME_VERSION;
use rcud_client::Runtime;
use rcud_proto::CudaError;

use crate::abi::device_prop::CudaDeviceProp;
use crate::ffi::{guard, write_out, CudaErrorT};

fn rt() -> &'static Runtime {
    Runtime::global()
}

/// `cudaGetDeviceCount`: the count is 0 when the call fails, as in CUDA.
#[no_mangle]
pub extern "C" fn cudaGetDeviceCount(count: *mut c_int) -> CudaErrorT {
    guard(|| match rt().device_count() {
        Ok(n) => write_out(count, n as c_int),
        Err(e) => {
            if !count.is_null() {
                write_out(count, 0)?;
            }
            Err(e)
        }
    })
}

#[no_mangle]
pub extern "C" fn cudaSetDevice(device: c_int) -> CudaErrorT {
    guard(|| rt().set_device(device))
}

#[no_mangle]
pub extern "C" fn cudaGetDevice(device: *mut c_int) -> CudaErrorT {
    guard(|| write_out(device, rt().current_device()? as c_int))
}

fn get_properties(prop: *mut CudaDeviceProp, device: c_int) -> CudaErrorT {
    guard(|| {
        let props = rt().props(device)?;
        write_out(prop, CudaDeviceProp::from_props(props))
    })
}

#[no_mangle]
pub extern "C" fn cudaGetDeviceProperties(prop: *mut CudaDeviceProp, device: c_int) -> CudaErrorT {
    get_properties(prop, device)
}

/// The name CUDA 12 headers used for `cudaGetDeviceProperties`.
#[no_mangle]
pub extern "C" fn cudaGetDeviceProperties_v2(
    prop: *mut CudaDeviceProp,
    device: c_int,
) -> CudaErrorT {
    get_properties(prop, device)
}

#[no_mangle]
pub extern "C" fn cudaDeviceGetAttribute(
    value: *mut c_int,
    attr: c_int,
    device: c_int,
) -> CudaErrorT {
    guard(|| write_out(value, rt().attribute(attr, device)?))
}

#[no_mangle]
pub extern "C" fn cudaRuntimeGetVersion(version: *mut c_int) -> CudaErrorT {
    guard(|| write_out(version, RUNTIME_VERSION))
}

/// The version `cuDriverGetVersion` reports, the driver API this library
/// implements; 0 when no server is reachable, as CUDA reports without a
/// driver.
#[no_mangle]
pub extern "C" fn cudaDriverGetVersion(version: *mut c_int) -> CudaErrorT {
    let reachable = rt().device_count().is_ok();
    guard(|| {
        write_out(
            version,
            if reachable {
                crate::driver::DRIVER_VERSION
            } else {
                0
            },
        )
    })
}

#[no_mangle]
pub extern "C" fn cudaChooseDevice(device: *mut c_int, prop: *const CudaDeviceProp) -> CudaErrorT {
    guard(|| {
        if prop.is_null() {
            return Err(CudaError::INVALID_VALUE);
        }
        // SAFETY: non-NULL, and the API requires it to point to a cudaDeviceProp.
        let (major, minor) = unsafe { ((*prop).major, (*prop).minor) };
        write_out(device, rt().choose_device(major, minor)?)
    })
}

#[no_mangle]
pub extern "C" fn cudaSetDeviceFlags(flags: c_uint) -> CudaErrorT {
    guard(|| rt().set_device_flags(flags))
}

#[no_mangle]
pub extern "C" fn cudaGetDeviceFlags(flags: *mut c_uint) -> CudaErrorT {
    guard(|| write_out(flags, rt().device_flags()?))
}

#[no_mangle]
pub extern "C" fn cudaDeviceSynchronize() -> CudaErrorT {
    guard(|| {
        crate::graph::capture::refuse_unsafe()?;
        rt().synchronize()?;
        super::managed::to_host_all();
        Ok(())
    })
}

#[no_mangle]
pub extern "C" fn cudaDeviceReset() -> CudaErrorT {
    guard(|| rt().reset())
}

/// No profiler is attached to a remote GPU: a successful no-op, as in CUDA.
#[no_mangle]
pub extern "C" fn cudaProfilerStart() -> CudaErrorT {
    guard(|| Ok(()))
}

/// See [`cudaProfilerStart`].
#[no_mangle]
pub extern "C" fn cudaProfilerStop() -> CudaErrorT {
    guard(|| Ok(()))
}

#[no_mangle]
pub extern "C" fn cudaDeviceSetLimit(limit: c_int, value: usize) -> CudaErrorT {
    guard(|| rt().device_set_limit(limit, value as u64))
}

#[no_mangle]
pub extern "C" fn cudaDeviceGetLimit(value: *mut usize, limit: c_int) -> CudaErrorT {
    guard(|| {
        if value.is_null() {
            return Err(CudaError::INVALID_VALUE);
        }
        write_out(value, rt().device_get_limit(limit)? as usize)
    })
}
