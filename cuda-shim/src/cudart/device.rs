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

/// `cudaFuncCachePreferNone` .. `cudaFuncCachePreferEqual`.
const CACHE_CONFIGS: std::ops::RangeInclusive<c_int> = 0..=3;

static CACHE_CONFIG: std::sync::atomic::AtomicI32 = std::sync::atomic::AtomicI32::new(0);

/// The L1/shared split is a preference a remote device may ignore, as GPUs
/// with a fixed split do: kept and reported (the driver's
/// `cuCtxSetCacheConfig` too).
pub(crate) fn set_cache_config(config: c_int) -> Result<(), CudaError> {
    if !CACHE_CONFIGS.contains(&config) {
        return Err(CudaError::INVALID_VALUE);
    }
    CACHE_CONFIG.store(config, std::sync::atomic::Ordering::Relaxed);
    Ok(())
}

/// The preference last set.
pub(crate) fn cache_config() -> c_int {
    CACHE_CONFIG.load(std::sync::atomic::Ordering::Relaxed)
}

#[no_mangle]
pub extern "C" fn cudaDeviceSetCacheConfig(config: c_int) -> CudaErrorT {
    guard(|| {
        rt().current_device()?;
        set_cache_config(config)
    })
}

#[no_mangle]
pub extern "C" fn cudaDeviceGetCacheConfig(config: *mut c_int) -> CudaErrorT {
    guard(|| {
        rt().current_device()?;
        write_out(config, cache_config())
    })
}

/// `cudaSharedMemBankSizeFourByte`: the banks of every GPU since Maxwell.
const BANK_SIZE_FOUR_BYTES: c_int = 1;

#[no_mangle]
pub extern "C" fn cudaDeviceGetSharedMemConfig(config: *mut c_int) -> CudaErrorT {
    guard(|| {
        rt().current_device()?;
        write_out(config, BANK_SIZE_FOUR_BYTES)
    })
}

/// Bank sizes cannot change on current GPUs; any valid value is accepted.
#[no_mangle]
pub extern "C" fn cudaDeviceSetSharedMemConfig(config: c_int) -> CudaErrorT {
    guard(|| {
        rt().current_device()?;
        match config {
            0..=2 => Ok(()),
            _ => Err(CudaError::INVALID_VALUE),
        }
    })
}

#[no_mangle]
pub extern "C" fn cudaDeviceGetPCIBusId(
    out: *mut std::ffi::c_char,
    len: c_int,
    device: c_int,
) -> CudaErrorT {
    guard(|| {
        let id = crate::driver::device::pci_bus_id(device)?;
        if out.is_null() || len <= 0 {
            return Err(CudaError::INVALID_VALUE);
        }
        let n = id.len().min(len as usize - 1);
        // SAFETY: the caller's buffer holds `len` bytes; `n + 1 <= len`.
        unsafe {
            std::ptr::copy_nonoverlapping(id.as_ptr(), out as *mut u8, n);
            *out.add(n) = 0;
        }
        Ok(())
    })
}

#[no_mangle]
pub extern "C" fn cudaDeviceGetByPCIBusId(
    device: *mut c_int,
    id: *const std::ffi::c_char,
) -> CudaErrorT {
    guard(|| {
        if id.is_null() {
            return Err(CudaError::INVALID_VALUE);
        }
        // SAFETY: the API passes a NUL-terminated string.
        let text = unsafe { std::ffi::CStr::from_ptr(id) }
            .to_str()
            .map_err(|_| CudaError::INVALID_VALUE)?;
        let found =
            crate::driver::device::device_by_pci_bus_id(text).map_err(|e| CudaError(e.0 as u32))?;
        write_out(device, found)
    })
}

/// `cudaInitDevice`: the device's primary context with these flags, made
/// now (rcud connects on first use either way).
#[no_mangle]
pub extern "C" fn cudaInitDevice(device: c_int, device_flags: c_uint, flags: c_uint) -> CudaErrorT {
    guard(|| {
        // cudaInitDeviceFlagsAreValid (1) says the device flags apply.
        if flags & !1 != 0 {
            return Err(CudaError::INVALID_VALUE);
        }
        rt().props(device)?;
        if flags & 1 != 0 {
            rt().primary_set_flags(device, device_flags)?;
        }
        Ok(())
    })
}

/// `cudaSetValidDevices`: the devices the runtime may pick are checked; a
/// program choosing its device itself is not affected.
#[no_mangle]
pub extern "C" fn cudaSetValidDevices(devices: *mut c_int, len: c_int) -> CudaErrorT {
    guard(|| {
        if len < 0 || (len > 0 && devices.is_null()) {
            return Err(CudaError::INVALID_VALUE);
        }
        for i in 0..len as usize {
            // SAFETY: the caller's array holds `len` device ordinals.
            rt().props(unsafe { *devices.add(i) })?;
        }
        Ok(())
    })
}

/// No L2 lines persist on the emulated device: there is nothing to demote
/// once the device is known to exist.
#[no_mangle]
pub extern "C" fn cudaCtxResetPersistingL2Cache() -> CudaErrorT {
    guard(|| rt().current_device().map(|_| ()))
}
