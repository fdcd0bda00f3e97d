//! NVML (`libnvidia-ml.so.1`): what monitoring tools and frameworks ask of
//! the GPUs, answered for the remote GPUs of `RCUD_SERVERS`.
//!
//! Names, UUIDs, PCI identities, compute capability and compute mode come
//! from the device table the runtime builds when it connects (no context is
//! created on any GPU); memory in use, utilisation and the processes holding
//! a GPU come from the server at each call (`DeviceStatus`). See
//! docs/nvml.md for what each answer means.

#![allow(non_snake_case, unreachable_pub)]

use std::ffi::CStr;
use std::os::raw::{c_char, c_int, c_uint, c_ulonglong};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::OnceLock;

use rcud_client::Runtime;
use rcud_proto::ops::rep;

type NvmlReturn = c_int;

const SUCCESS: NvmlReturn = 0;
const ERROR_UNINITIALIZED: NvmlReturn = 1;
const ERROR_INVALID_ARGUMENT: NvmlReturn = 2;
const ERROR_NOT_SUPPORTED: NvmlReturn = 3;
const ERROR_NOT_FOUND: NvmlReturn = 6;
const ERROR_INSUFFICIENT_SIZE: NvmlReturn = 7;
const ERROR_DRIVER_NOT_LOADED: NvmlReturn = 9;
const ERROR_GPU_IS_LOST: NvmlReturn = 15;
const ERROR_ARGUMENT_VERSION_MISMATCH: NvmlReturn = 25;
const ERROR_UNKNOWN: NvmlReturn = 999;

/// `cudaDevAttrComputeMode`: CUDA numbers compute modes as NVML does.
const ATTR_COMPUTE_MODE: i32 = 20;
/// `gpuInstanceId` / `computeInstanceId` of a process on a GPU without MIG.
const NO_INSTANCE: c_uint = 0xFFFF_FFFF;

/// The body of every generated NVML stub.
pub(crate) fn not_supported(name: &str, why: &str, logged: &AtomicBool) -> c_int {
    crate::math::log_stub("NVML", name, why, logged);
    ERROR_NOT_SUPPORTED
}

/// `nvmlInit` calls not yet matched by `nvmlShutdown` (NVML counts them).
static INIT_COUNT: AtomicU32 = AtomicU32::new(0);

/// What an `nvmlDevice_t` points to: one per device, made at the first
/// `nvmlInit` and never freed, so handles stay valid after `nvmlShutdown`
/// as the real library's do.
#[repr(C)]
pub struct Device {
    index: c_uint,
}

fn handles() -> &'static [Device] {
    static HANDLES: OnceLock<Box<[Device]>> = OnceLock::new();
    HANDLES.get_or_init(|| {
        let count = Runtime::global().device_count().unwrap_or(0);
        (0..count as c_uint).map(|index| Device { index }).collect()
    })
}

/// Runs an NVML function: not before `nvmlInit`, and no panic into C.
fn guard(body: impl FnOnce() -> Result<(), NvmlReturn>) -> NvmlReturn {
    crate::ffi::init_logging();
    if INIT_COUNT.load(Ordering::Acquire) == 0 {
        return ERROR_UNINITIALIZED;
    }
    match catch_unwind(AssertUnwindSafe(body)) {
        Ok(Ok(())) => SUCCESS,
        Ok(Err(code)) => code,
        Err(_) => {
            eprintln!("rcud: internal error (panic) in NVML");
            ERROR_UNKNOWN
        }
    }
}

/// The device index behind a handle the application holds.
fn index_of(device: *const Device) -> Result<i32, NvmlReturn> {
    let all = handles();
    let index = all
        .iter()
        .position(|d| std::ptr::eq(d, device))
        .ok_or(ERROR_INVALID_ARGUMENT)?;
    i32::try_from(index).map_err(|_| ERROR_INVALID_ARGUMENT)
}

/// The properties of device `d`, as the client runtime has them.
fn props_of(d: i32) -> Result<&'static rcud_proto::DeviceProps, NvmlReturn> {
    Runtime::global()
        .props(d)
        .map_err(|_| ERROR_INVALID_ARGUMENT)
}

/// Writes `value` through an output pointer, or fails for NULL.
fn write_out<T>(ptr: *mut T, value: T) -> Result<(), NvmlReturn> {
    if ptr.is_null() {
        return Err(ERROR_INVALID_ARGUMENT);
    }
    // SAFETY: the application passes a pointer to a `T` it owns, as the
    // function's NVML signature requires; checked non-null above.
    unsafe { ptr.write(value) };
    Ok(())
}

/// Copies `text` and its NUL into a buffer of `length` bytes.
fn write_string(buffer: *mut c_char, length: c_uint, text: &str) -> Result<(), NvmlReturn> {
    if buffer.is_null() {
        return Err(ERROR_INVALID_ARGUMENT);
    }
    let bytes = text.as_bytes();
    if (length as usize) < bytes.len() + 1 {
        return Err(ERROR_INSUFFICIENT_SIZE);
    }
    // SAFETY: the application's buffer holds `length` bytes, at least
    // `bytes.len() + 1` (checked above), and does not overlap `text`.
    unsafe {
        std::ptr::copy_nonoverlapping(bytes.as_ptr(), buffer.cast::<u8>(), bytes.len());
        buffer.add(bytes.len()).write(0);
    }
    Ok(())
}

/// A NUL-terminated string argument.
fn read_string<'a>(text: *const c_char) -> Result<&'a str, NvmlReturn> {
    if text.is_null() {
        return Err(ERROR_INVALID_ARGUMENT);
    }
    // SAFETY: NVML takes a NUL-terminated string here; non-null checked.
    let text = unsafe { CStr::from_ptr(text) };
    text.to_str().map_err(|_| ERROR_INVALID_ARGUMENT)
}

/// The device's UUID as NVML spells it: `GPU-` and the 16 bytes in hex,
/// grouped 4-2-2-2-6.
fn uuid_text(uuid: &[u8; 16]) -> String {
    let hex: String = uuid.iter().map(|b| format!("{b:02x}")).collect();
    format!(
        "GPU-{}-{}-{}-{}-{}",
        &hex[0..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..32]
    )
}

/// (domain, bus, device) of device `d`.
fn pci_address(d: i32) -> Result<(u32, u32, u32), NvmlReturn> {
    let props = props_of(d)?;
    Ok((
        props.pci_domain_id as u32,
        props.pci_bus_id as u32,
        props.pci_device_id as u32,
    ))
}

/// Parses `domain:bus:device.function` (domain optional), in hex.
fn parse_bus_id(text: &str) -> Option<(u32, u32, u32)> {
    let (address, _function) = text.trim().split_once('.').unwrap_or((text.trim(), "0"));
    let parts: Vec<&str> = address.split(':').collect();
    let hex = |s: &str| u32::from_str_radix(s, 16).ok();
    match parts.as_slice() {
        [domain, bus, device] => Some((hex(domain)?, hex(bus)?, hex(device)?)),
        [bus, device] => Some((0, hex(bus)?, hex(device)?)),
        _ => None,
    }
}

/// The server's view of device `d`.
fn status(d: i32) -> Result<rep::DeviceStatus, NvmlReturn> {
    Runtime::global().device_status(d).map_err(|e| {
        tracing::warn!("NVML: the server of device {d} did not answer its status: {e}");
        ERROR_GPU_IS_LOST
    })
}

// ---- initialisation and system ------------------------------------------

fn init() -> NvmlReturn {
    crate::ffi::init_logging();
    match Runtime::global().device_count() {
        // No server reachable is NVML's "no driver": there is nothing to
        // manage.
        Err(_) => ERROR_DRIVER_NOT_LOADED,
        Ok(_) => {
            handles();
            INIT_COUNT.fetch_add(1, Ordering::AcqRel);
            SUCCESS
        }
    }
}

#[no_mangle]
pub extern "C" fn nvmlInit() -> NvmlReturn {
    init()
}

#[no_mangle]
pub extern "C" fn nvmlInit_v2() -> NvmlReturn {
    init()
}

/// Flags only ask NVML to tolerate missing or broken GPUs, which rcud's
/// enumeration leaves out anyway.
#[no_mangle]
pub extern "C" fn nvmlInitWithFlags(_flags: c_uint) -> NvmlReturn {
    init()
}

#[no_mangle]
pub extern "C" fn nvmlShutdown() -> NvmlReturn {
    let decremented =
        INIT_COUNT.fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| n.checked_sub(1));
    match decremented {
        Ok(_) => SUCCESS,
        Err(_) => ERROR_UNINITIALIZED,
    }
}

#[no_mangle]
pub extern "C" fn nvmlErrorString(result: NvmlReturn) -> *const c_char {
    let text: &'static CStr = match result {
        0 => c"Success",
        1 => c"Uninitialized",
        2 => c"Invalid Argument",
        3 => c"Not Supported",
        4 => c"Insufficient Permissions",
        5 => c"Already Initialized",
        6 => c"Not Found",
        7 => c"Insufficient Size",
        8 => c"Insufficient External Power",
        9 => c"Driver Not Loaded",
        10 => c"Timeout",
        11 => c"Interrupt request issue",
        12 => c"NVML Shared Library Not Found",
        13 => c"Function Not Found",
        14 => c"Corrupted infoROM",
        15 => c"GPU is lost",
        16 => c"GPU requires restart",
        17 => c"The operating system has blocked the request.",
        18 => c"RM has detected an NVML/RM version mismatch.",
        19 => c"In use by another client",
        20 => c"Insufficient Memory",
        21 => c"No data",
        22 => c"Not supported with ECC enabled",
        23 => c"Insufficient resources",
        24 => c"Frequency not supported",
        25 => c"Argument version mismatch",
        26 => c"Deprecated",
        27 => c"Not ready",
        28 => c"GPU not found",
        29 => c"Invalid state",
        30 => c"Reset type not supported",
        _ => c"Unknown Error",
    };
    text.as_ptr()
}

/// The CUDA driver version of the first server (every device's server
/// reports one; a process sees one driver in CUDA).
fn cuda_driver_version(version: *mut c_int) -> NvmlReturn {
    guard(|| {
        let first = Runtime::global()
            .devices()
            .first()
            .ok_or(ERROR_DRIVER_NOT_LOADED)?;
        write_out(version, first.driver_version)
    })
}

#[no_mangle]
pub extern "C" fn nvmlSystemGetCudaDriverVersion(version: *mut c_int) -> NvmlReturn {
    cuda_driver_version(version)
}

#[no_mangle]
pub extern "C" fn nvmlSystemGetCudaDriverVersion_v2(version: *mut c_int) -> NvmlReturn {
    cuda_driver_version(version)
}

// ---- devices ------------------------------------------------------------

fn device_count(count: *mut c_uint) -> NvmlReturn {
    guard(|| write_out(count, handles().len() as c_uint))
}

#[no_mangle]
pub extern "C" fn nvmlDeviceGetCount(count: *mut c_uint) -> NvmlReturn {
    device_count(count)
}

#[no_mangle]
pub extern "C" fn nvmlDeviceGetCount_v2(count: *mut c_uint) -> NvmlReturn {
    device_count(count)
}

fn handle_by_index(index: c_uint, device: *mut *const Device) -> NvmlReturn {
    guard(|| {
        let handle = handles()
            .get(index as usize)
            .ok_or(ERROR_INVALID_ARGUMENT)?;
        write_out(device, handle as *const Device)
    })
}

#[no_mangle]
pub extern "C" fn nvmlDeviceGetHandleByIndex(
    index: c_uint,
    device: *mut *const Device,
) -> NvmlReturn {
    handle_by_index(index, device)
}

#[no_mangle]
pub extern "C" fn nvmlDeviceGetHandleByIndex_v2(
    index: c_uint,
    device: *mut *const Device,
) -> NvmlReturn {
    handle_by_index(index, device)
}

#[no_mangle]
pub extern "C" fn nvmlDeviceGetHandleByUUID(
    uuid: *const c_char,
    device: *mut *const Device,
) -> NvmlReturn {
    guard(|| {
        let wanted = read_string(uuid)?;
        let rt = Runtime::global();
        let found = handles()
            .iter()
            .find(|h| {
                rt.props(h.index as i32)
                    .is_ok_and(|p| uuid_text(&p.uuid).eq_ignore_ascii_case(wanted))
            })
            .ok_or(ERROR_NOT_FOUND)?;
        write_out(device, found as *const Device)
    })
}

fn handle_by_bus_id(bus_id: *const c_char, device: *mut *const Device) -> NvmlReturn {
    guard(|| {
        let wanted = parse_bus_id(read_string(bus_id)?).ok_or(ERROR_INVALID_ARGUMENT)?;
        let found = handles()
            .iter()
            .find(|h| pci_address(h.index as i32) == Ok(wanted))
            .ok_or(ERROR_NOT_FOUND)?;
        write_out(device, found as *const Device)
    })
}

#[no_mangle]
pub extern "C" fn nvmlDeviceGetHandleByPciBusId(
    bus_id: *const c_char,
    device: *mut *const Device,
) -> NvmlReturn {
    handle_by_bus_id(bus_id, device)
}

#[no_mangle]
pub extern "C" fn nvmlDeviceGetHandleByPciBusId_v2(
    bus_id: *const c_char,
    device: *mut *const Device,
) -> NvmlReturn {
    handle_by_bus_id(bus_id, device)
}

#[no_mangle]
pub extern "C" fn nvmlDeviceGetIndex(device: *const Device, index: *mut c_uint) -> NvmlReturn {
    guard(|| write_out(index, index_of(device)? as c_uint))
}

#[no_mangle]
pub extern "C" fn nvmlDeviceGetName(
    device: *const Device,
    name: *mut c_char,
    length: c_uint,
) -> NvmlReturn {
    guard(|| {
        let props = props_of(index_of(device)?)?;
        write_string(name, length, &props.name)
    })
}

#[no_mangle]
pub extern "C" fn nvmlDeviceGetUUID(
    device: *const Device,
    uuid: *mut c_char,
    length: c_uint,
) -> NvmlReturn {
    guard(|| {
        let props = props_of(index_of(device)?)?;
        write_string(uuid, length, &uuid_text(&props.uuid))
    })
}

#[no_mangle]
pub extern "C" fn nvmlDeviceGetCudaComputeCapability(
    device: *const Device,
    major: *mut c_int,
    minor: *mut c_int,
) -> NvmlReturn {
    guard(|| {
        let props = props_of(index_of(device)?)?;
        if major.is_null() || minor.is_null() {
            return Err(ERROR_INVALID_ARGUMENT);
        }
        write_out(major, props.major)?;
        write_out(minor, props.minor)
    })
}

#[no_mangle]
pub extern "C" fn nvmlDeviceGetComputeMode(device: *const Device, mode: *mut c_int) -> NvmlReturn {
    guard(|| {
        let value = Runtime::global()
            .attribute(ATTR_COMPUTE_MODE, index_of(device)?)
            .map_err(|_| ERROR_UNKNOWN)?;
        write_out(mode, value)
    })
}

/// `nvmlPciInfo_t` (the layout of `nvmlDeviceGetPciInfo_v3`).
#[repr(C)]
pub struct PciInfo {
    bus_id_legacy: [c_char; 16],
    domain: c_uint,
    bus: c_uint,
    device: c_uint,
    pci_device_id: c_uint,
    pci_sub_system_id: c_uint,
    bus_id: [c_char; 32],
}

fn c_array<const N: usize>(text: &str) -> [c_char; N] {
    let mut out = [0 as c_char; N];
    for (o, b) in out.iter_mut().zip(text.bytes().take(N - 1)) {
        *o = b as c_char;
    }
    out
}

#[no_mangle]
pub extern "C" fn nvmlDeviceGetPciInfo_v3(device: *const Device, pci: *mut PciInfo) -> NvmlReturn {
    guard(|| {
        let d = index_of(device)?;
        let props = props_of(d)?;
        let (domain, bus, dev) = pci_address(d)?;
        write_out(
            pci,
            PciInfo {
                bus_id_legacy: c_array(&format!("{domain:04X}:{bus:02X}:{dev:02X}.0")),
                domain,
                bus,
                device: dev,
                pci_device_id: props.gpu_pci_device_id,
                pci_sub_system_id: props.gpu_pci_subsystem_id,
                bus_id: c_array(&format!("{domain:08X}:{bus:02X}:{dev:02X}.0")),
            },
        )
    })
}

/// `nvmlMemory_t`.
#[repr(C)]
pub struct Memory {
    total: c_ulonglong,
    free: c_ulonglong,
    used: c_ulonglong,
}

/// `nvmlMemory_v2_t`.
#[repr(C)]
pub struct MemoryV2 {
    version: c_uint,
    total: c_ulonglong,
    reserved: c_ulonglong,
    free: c_ulonglong,
    used: c_ulonglong,
}

/// `nvmlMemory_v2`: the struct's size and version 2 in the top byte.
const MEMORY_V2: c_uint = std::mem::size_of::<MemoryV2>() as c_uint | (2 << 24);

/// (total, used) of device `d`: the device's memory and what the server's
/// clients hold of it.
fn memory(device: *const Device) -> Result<(u64, u64), NvmlReturn> {
    let s = status(index_of(device)?)?;
    Ok((s.memory_total, s.memory_used.min(s.memory_total)))
}

#[no_mangle]
pub extern "C" fn nvmlDeviceGetMemoryInfo(device: *const Device, info: *mut Memory) -> NvmlReturn {
    guard(|| {
        if info.is_null() {
            return Err(ERROR_INVALID_ARGUMENT);
        }
        let (total, used) = memory(device)?;
        write_out(
            info,
            Memory {
                total,
                free: total - used,
                used,
            },
        )
    })
}

#[no_mangle]
pub extern "C" fn nvmlDeviceGetMemoryInfo_v2(
    device: *const Device,
    info: *mut MemoryV2,
) -> NvmlReturn {
    guard(|| {
        if info.is_null() {
            return Err(ERROR_INVALID_ARGUMENT);
        }
        // SAFETY: non-null, and the caller passes an `nvmlMemory_v2_t`
        // whose version field it set.
        let version = unsafe { (*info).version };
        if version != MEMORY_V2 {
            return Err(ERROR_ARGUMENT_VERSION_MISMATCH);
        }
        let (total, used) = memory(device)?;
        write_out(
            info,
            MemoryV2 {
                version,
                total,
                reserved: 0,
                free: total - used,
                used,
            },
        )
    })
}

/// `nvmlUtilization_t`.
#[repr(C)]
pub struct Utilization {
    gpu: c_uint,
    memory: c_uint,
}

#[no_mangle]
pub extern "C" fn nvmlDeviceGetUtilizationRates(
    device: *const Device,
    utilization: *mut Utilization,
) -> NvmlReturn {
    guard(|| {
        if utilization.is_null() {
            return Err(ERROR_INVALID_ARGUMENT);
        }
        let s = status(index_of(device)?)?;
        write_out(
            utilization,
            Utilization {
                gpu: s.utilisation_gpu,
                memory: s.utilisation_memory,
            },
        )
    })
}

/// `nvmlProcessInfo_v1_t`.
#[repr(C)]
pub struct ProcessInfoV1 {
    pid: c_uint,
    used_gpu_memory: c_ulonglong,
}

/// `nvmlProcessInfo_t` (= `nvmlProcessInfo_v2_t`).
#[repr(C)]
pub struct ProcessInfo {
    pid: c_uint,
    used_gpu_memory: c_ulonglong,
    gpu_instance_id: c_uint,
    compute_instance_id: c_uint,
}

/// The processes with a context on `device`, in the layout `make` builds;
/// NVML's protocol: too small a `count` gets the count needed and
/// `NVML_ERROR_INSUFFICIENT_SIZE`.
fn running_processes<T>(
    device: *const Device,
    count: *mut c_uint,
    infos: *mut T,
    make: impl Fn(&rcud_proto::ops::ProcessStatus) -> T,
) -> NvmlReturn {
    guard(|| {
        if count.is_null() {
            return Err(ERROR_INVALID_ARGUMENT);
        }
        let s = status(index_of(device)?)?;
        // SAFETY: non-null, and NVML's signature makes it the caller's
        // capacity, in entries.
        let capacity = unsafe { count.read() } as usize;
        write_out(count, s.processes.len() as c_uint)?;
        if s.processes.is_empty() {
            return Ok(());
        }
        if capacity < s.processes.len() || infos.is_null() {
            return Err(ERROR_INSUFFICIENT_SIZE);
        }
        for (i, p) in s.processes.iter().enumerate() {
            // SAFETY: `infos` holds `capacity` entries (the caller's
            // count), and `i` < processes ≤ capacity.
            unsafe { infos.add(i).write(make(p)) };
        }
        Ok(())
    })
}

fn process_v1(p: &rcud_proto::ops::ProcessStatus) -> ProcessInfoV1 {
    ProcessInfoV1 {
        pid: p.pid,
        used_gpu_memory: p.memory,
    }
}

fn process_v2(p: &rcud_proto::ops::ProcessStatus) -> ProcessInfo {
    ProcessInfo {
        pid: p.pid,
        used_gpu_memory: p.memory,
        gpu_instance_id: NO_INSTANCE,
        compute_instance_id: NO_INSTANCE,
    }
}

#[no_mangle]
pub extern "C" fn nvmlDeviceGetComputeRunningProcesses(
    device: *const Device,
    count: *mut c_uint,
    infos: *mut ProcessInfoV1,
) -> NvmlReturn {
    running_processes(device, count, infos, process_v1)
}

#[no_mangle]
pub extern "C" fn nvmlDeviceGetComputeRunningProcesses_v2(
    device: *const Device,
    count: *mut c_uint,
    infos: *mut ProcessInfo,
) -> NvmlReturn {
    running_processes(device, count, infos, process_v2)
}

#[no_mangle]
pub extern "C" fn nvmlDeviceGetComputeRunningProcesses_v3(
    device: *const Device,
    count: *mut c_uint,
    infos: *mut ProcessInfo,
) -> NvmlReturn {
    running_processes(device, count, infos, process_v2)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uuid_is_spelled_as_nvml_does() {
        let uuid = [
            0x5b, 0x7e, 0x1f, 0x02, 0xab, 0xcd, 0x12, 0x34, 0x56, 0x78, 0x9a, 0xbc, 0xde, 0xf0,
            0x01, 0x23,
        ];
        assert_eq!(uuid_text(&uuid), "GPU-5b7e1f02-abcd-1234-5678-9abcdef00123");
    }

    #[test]
    fn bus_ids_parse_with_and_without_domain() {
        assert_eq!(parse_bus_id("00000000:3B:00.0"), Some((0, 0x3b, 0)));
        assert_eq!(parse_bus_id("0001:3b:1f.0"), Some((1, 0x3b, 0x1f)));
        assert_eq!(parse_bus_id("3b:00.0"), Some((0, 0x3b, 0)));
        assert_eq!(parse_bus_id("GPU-1"), None);
    }

    #[test]
    fn struct_layouts_match_nvml_h() {
        assert_eq!(std::mem::size_of::<PciInfo>(), 16 + 5 * 4 + 32);
        assert_eq!(std::mem::size_of::<MemoryV2>(), 40);
        assert_eq!(std::mem::size_of::<ProcessInfoV1>(), 16);
        assert_eq!(std::mem::size_of::<ProcessInfo>(), 24);
        assert_eq!(MEMORY_V2, 40 | (2 << 24));
    }
}
