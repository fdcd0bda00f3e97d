//! Device management, versions and the profiler control calls.

use std::collections::HashMap;
use std::ffi::{c_char, c_void, CStr};
use std::os::raw::{c_int, c_uint};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;

use parking_lot::Mutex;

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
        rt().synchronize()
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

// ---- driver entry points ---------------------------------------------------------

/// `cudaEnableLegacyStream` and `cudaEnablePerThreadDefaultStream`.
const ENTRY_POINT_FLAGS: u64 = 0x3;

/// `cudaGetDriverEntryPointByVersion`: the driver function `symbol` names
/// for CUDA `version`, from the table `cuGetProcAddress` serves. A miss is
/// no error: the pointer is NULL and the status says why.
fn driver_entry_point(
    symbol: *const c_char,
    func: *mut *mut c_void,
    version: c_uint,
    flags: u64,
    status: *mut c_int,
) -> Result<(), CudaError> {
    if symbol.is_null() || func.is_null() || flags & !ENTRY_POINT_FLAGS != 0 {
        return Err(CudaError::INVALID_VALUE);
    }
    let version = c_int::try_from(version).map_err(|_| CudaError::INVALID_VALUE)?;
    if version > crate::driver::DRIVER_VERSION {
        return Err(CudaError::INVALID_VALUE);
    }
    // SAFETY: the API passes a NUL-terminated name.
    let name = unsafe { CStr::from_ptr(symbol) }
        .to_str()
        .map_err(|_| CudaError::INVALID_VALUE)?;
    let found = crate::driver::proc_lookup(name, version, flags);
    if !status.is_null() {
        write_out(status, found.err().unwrap_or(0))?;
    }
    write_out(
        func,
        found.map_or(std::ptr::null_mut(), |f| f as *mut c_void),
    )
}

with_ptsz! {
    /// For the runtime's own version.
    fn cudaGetDriverEntryPoint / cudaGetDriverEntryPoint_ptsz (symbol: *const c_char, func: *mut *mut c_void, flags: u64, status: *mut c_int) {
        driver_entry_point(symbol, func, RUNTIME_VERSION as c_uint, flags, status)
    }
}

with_ptsz! {
    fn cudaGetDriverEntryPointByVersion / cudaGetDriverEntryPointByVersion_ptsz (symbol: *const c_char, func: *mut *mut c_void, version: c_uint, flags: u64, status: *mut c_int) {
        driver_entry_point(symbol, func, version, flags, status)
    }
}

// ---- asynchronous notifications ---------------------------------------------------

/// Registered notification callbacks: handle -> (device, callback, data).
/// rcud raises no notification (they report the device's memory budget
/// being exceeded, which the remote devices do not track), but the
/// registrations are kept so that unregistering is checked as in CUDA.
type Notifications = HashMap<u64, (c_int, usize, usize)>;

fn notifications() -> &'static Mutex<Notifications> {
    static REGISTERED: OnceLock<Mutex<Notifications>> = OnceLock::new();
    REGISTERED.get_or_init(Default::default)
}

/// `cudaDeviceRegisterAsyncNotification`: a new handle.
pub(crate) fn register_notification(
    device: c_int,
    callback: usize,
    data: usize,
) -> Result<u64, CudaError> {
    rt().props(device).map_err(|_| CudaError::INVALID_DEVICE)?;
    if callback == 0 {
        return Err(CudaError::INVALID_VALUE);
    }
    static NEXT: AtomicU64 = AtomicU64::new(1);
    let handle = NEXT.fetch_add(1, Ordering::Relaxed);
    notifications()
        .lock()
        .insert(handle, (device, callback, data));
    Ok(handle)
}

/// `cudaDeviceUnregisterAsyncNotification`: the handle must be the
/// device's.
pub(crate) fn unregister_notification(device: c_int, handle: u64) -> Result<(), CudaError> {
    rt().props(device).map_err(|_| CudaError::INVALID_DEVICE)?;
    let mut all = notifications().lock();
    match all.get(&handle) {
        Some(&(d, _, _)) if d == device => {
            all.remove(&handle);
            Ok(())
        }
        _ => Err(CudaError::INVALID_VALUE),
    }
}

#[no_mangle]
pub extern "C" fn cudaDeviceRegisterAsyncNotification(
    device: c_int,
    callback: *mut c_void,
    data: *mut c_void,
    handle: *mut *mut c_void,
) -> CudaErrorT {
    guard(|| {
        if handle.is_null() {
            return Err(CudaError::INVALID_VALUE);
        }
        let h = register_notification(device, callback as usize, data as usize)?;
        write_out(handle, h as *mut c_void)
    })
}

#[no_mangle]
pub extern "C" fn cudaDeviceUnregisterAsyncNotification(
    device: c_int,
    handle: *mut c_void,
) -> CudaErrorT {
    guard(|| unregister_notification(device, handle as u64))
}

// ---- GPUDirect RDMA -----------------------------------------------------------------

/// `cudaFlushGPUDirectRDMAWritesTargetCurrentDevice` and the scopes
/// `ToOwner` and `ToAllDevices`.
const FLUSH_TARGET_CURRENT_DEVICE: c_int = 0;
const FLUSH_SCOPES: [c_int; 2] = [100, 200];
/// `cudaFlushGPUDirectRDMAWritesOptionHost`.
const FLUSH_OPTION_HOST: c_int = 1;

/// `cudaDeviceFlushGPUDirectRDMAWrites`: not supported where the device
/// offers no way to flush (the emulated device has no GPUDirect RDMA);
/// otherwise nothing outside the server writes to a remote GPU's memory,
/// so there is nothing to flush.
pub(crate) fn flush_rdma_writes(target: c_int, scope: c_int) -> Result<(), CudaError> {
    if target != FLUSH_TARGET_CURRENT_DEVICE || !FLUSH_SCOPES.contains(&scope) {
        return Err(CudaError::INVALID_VALUE);
    }
    let device = rt().current_device()? as c_int;
    let options = rt().attribute(
        rcud_proto::DeviceAttr::GPU_DIRECT_RDMA_FLUSH_WRITES_OPTIONS.0,
        device,
    )?;
    if options & FLUSH_OPTION_HOST == 0 {
        return Err(CudaError::NOT_SUPPORTED);
    }
    Ok(())
}

#[no_mangle]
pub extern "C" fn cudaDeviceFlushGPUDirectRDMAWrites(target: c_int, scope: c_int) -> CudaErrorT {
    guard(|| flush_rdma_writes(target, scope))
}

// ---- atomics and NvSciSync -------------------------------------------------------------

/// `cudaAtomicOperationIntegerAdd` .. `FloatMax`.
const ATOMIC_OPERATIONS: std::ops::RangeInclusive<c_int> = 0..=12;

/// `cudaDeviceGetHostAtomicCapabilities` / `P2PAtomicCapabilities`: the
/// operations are checked; none is native over the link, since the host
/// (the client) and other GPUs cannot reach a remote GPU's memory.
pub(crate) fn atomic_capabilities(
    capabilities: *mut c_uint,
    operations: *const c_int,
    count: c_uint,
) -> Result<(), CudaError> {
    if capabilities.is_null() || operations.is_null() || count == 0 {
        return Err(CudaError::INVALID_VALUE);
    }
    // SAFETY: the API passes `count` operations and room for `count`
    // capabilities.
    let (ops, caps) = unsafe {
        (
            std::slice::from_raw_parts(operations, count as usize),
            std::slice::from_raw_parts_mut(capabilities, count as usize),
        )
    };
    if ops.iter().any(|op| !ATOMIC_OPERATIONS.contains(op)) {
        return Err(CudaError::INVALID_VALUE);
    }
    caps.fill(0);
    Ok(())
}

/// A device ordinal, checked.
fn checked_device(device: c_int) -> Result<(), CudaError> {
    rt().props(device)
        .map(|_| ())
        .map_err(|_| CudaError::INVALID_DEVICE)
}

#[no_mangle]
pub extern "C" fn cudaDeviceGetHostAtomicCapabilities(
    capabilities: *mut c_uint,
    operations: *const c_int,
    count: c_uint,
    device: c_int,
) -> CudaErrorT {
    guard(|| {
        checked_device(device)?;
        atomic_capabilities(capabilities, operations, count)
    })
}

/// Two distinct devices.
pub(crate) fn peer_pair(src: c_int, dst: c_int) -> Result<(), CudaError> {
    checked_device(src)?;
    checked_device(dst)?;
    if src == dst {
        return Err(CudaError::INVALID_DEVICE);
    }
    Ok(())
}

#[no_mangle]
pub extern "C" fn cudaDeviceGetP2PAtomicCapabilities(
    capabilities: *mut c_uint,
    operations: *const c_int,
    count: c_uint,
    src: c_int,
    dst: c_int,
) -> CudaErrorT {
    guard(|| {
        peer_pair(src, dst)?;
        atomic_capabilities(capabilities, operations, count)
    })
}

/// `cudaNvSciSyncAttrSignal` | `cudaNvSciSyncAttrWait`.
const NVSCISYNC_FLAGS: c_int = 0x3;

/// `cudaDeviceGetNvSciSyncAttributes`: NvSciSync exists on NVIDIA's Tegra
/// and DRIVE platforms only, not beside these remote devices.
pub(crate) fn nvscisync_attributes(
    list: *mut c_void,
    device: c_int,
    flags: c_int,
) -> Result<(), CudaError> {
    if list.is_null() || flags == 0 || flags & !NVSCISYNC_FLAGS != 0 {
        return Err(CudaError::INVALID_VALUE);
    }
    checked_device(device)?;
    Err(CudaError::NOT_SUPPORTED)
}

#[no_mangle]
pub extern "C" fn cudaDeviceGetNvSciSyncAttributes(
    list: *mut c_void,
    device: c_int,
    flags: c_int,
) -> CudaErrorT {
    guard(|| nvscisync_attributes(list, device, flags))
}

/// `cudaGetExportTable`: the driver's private tables, which NVIDIA's
/// runtime also hands out.
#[no_mangle]
pub extern "C" fn cudaGetExportTable(table: *mut *const c_void, id: *const [u8; 16]) -> CudaErrorT {
    guard(|| {
        if table.is_null() || id.is_null() {
            return Err(CudaError::INVALID_VALUE);
        }
        // SAFETY: the API passes a 16-byte UUID.
        let id = unsafe { id.read() };
        let found = crate::driver::export_table(&id).map_err(|_| CudaError::INVALID_VALUE)?;
        write_out(table, found)
    })
}
