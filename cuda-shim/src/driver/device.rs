//! Devices and their primary contexts.

use std::os::raw::{c_char, c_int, c_uint};

use super::{device, initialized, out, rt, DriverError};

/// `CU_CTX_*` flags a primary context accepts: the scheduling mask,
/// `MAP_HOST`, `LMEM_RESIZE_TO_MAX`, `COREDUMP_ENABLE`, `USER_COREDUMP_ENABLE`
/// and `SYNC_MEMOPS`.
const PRIMARY_CTX_FLAGS: c_uint = 0x07 | 0x08 | 0x10 | 0x20 | 0x40 | 0x80;

driver_fn! { cuDeviceGetCount (count: *mut c_int) {
    initialized()?;
    let n = rt().device_count().map_err(|_| DriverError::NO_DEVICE)?;
    out(count, n as c_int)
} }

driver_fn! { cuDeviceGet (result: *mut c_int, ordinal: c_int) {
    out(result, device(ordinal)?)
} }

driver_fn! { cuDeviceGetName (name: *mut c_char, len: c_int, dev: c_int) {
    let props = rt().props(device(dev)?)?;
    if name.is_null() || len <= 0 {
        return Err(DriverError::INVALID_VALUE);
    }
    let bytes = props.name.as_bytes();
    let n = bytes.len().min(len as usize - 1);
    // SAFETY: the caller provides `len` writable bytes at `name`; n + 1 <= len.
    unsafe {
        std::ptr::copy_nonoverlapping(bytes.as_ptr(), name as *mut u8, n);
        *name.add(n) = 0;
    }
    Ok(())
} }

driver_fn! { [cuDeviceGetUuid, cuDeviceGetUuid_v2] (uuid: *mut [u8; 16], dev: c_int) {
    let props = rt().props(device(dev)?)?;
    out(uuid, props.uuid)
} }

driver_fn! { cuDeviceGetLuid (luid: *mut [u8; 8], mask: *mut c_uint, dev: c_int) {
    let props = rt().props(device(dev)?)?;
    out(luid, props.luid)?;
    out(mask, props.luid_device_node_mask)
} }

driver_fn! { cuDeviceTotalMem_v2 (bytes: *mut usize, dev: c_int) {
    let props = rt().props(device(dev)?)?;
    out(bytes, props.total_global_mem as usize)
} }

/// `CU_DEVICE_ATTRIBUTE_MAX` of the cuda.h the export list comes from.
const ATTRIBUTE_MAX: c_int = super::init::parse_version(env!("RCUD_DEVICE_ATTRIBUTE_MAX"));

// `CUdevice_attribute` values are `cudaDeviceAttr` values. The driver also
// has attributes the runtime's enum leaves out (its `Reserved` slots, and
// newer ones): a device that does not report one lacks the feature, 0.
driver_fn! { cuDeviceGetAttribute (value: *mut c_int, attr: c_int, dev: c_int) {
    let dev = device(dev)?;
    let v = match rt().attribute(attr, dev) {
        Err(rcud_proto::CudaError::INVALID_VALUE) if attr > 0 && attr < ATTRIBUTE_MAX => 0,
        other => other?,
    };
    out(value, v)
} }

driver_fn! { cuDeviceComputeCapability (major: *mut c_int, minor: *mut c_int, dev: c_int) {
    let props = rt().props(device(dev)?)?;
    out(major, props.major)?;
    out(minor, props.minor)
} }

/// `domain:bus:device.function` of device `dev`, as the driver writes it.
pub(crate) fn pci_bus_id(dev: c_int) -> Result<String, rcud_proto::CudaError> {
    let props = rt().props(dev)?;
    Ok(format!(
        "{:04x}:{:02x}:{:02x}.0",
        props.pci_domain_id, props.pci_bus_id, props.pci_device_id
    ))
}

driver_fn! { cuDeviceGetPCIBusId (bus_id: *mut c_char, len: c_int, dev: c_int) {
    let text = pci_bus_id(device(dev)?)? + "\0";
    if bus_id.is_null() || len <= 0 {
        return Err(DriverError::INVALID_VALUE);
    }
    let n = text.len().min(len as usize);
    // SAFETY: the caller provides `len` writable bytes; the last one written
    // is a NUL whenever the text fits.
    unsafe {
        std::ptr::copy_nonoverlapping(text.as_ptr(), bus_id as *mut u8, n);
        *bus_id.add(n - 1) = 0;
    }
    Ok(())
} }

/// `(domain, bus, device)` of a PCI bus id in one of the forms CUDA
/// accepts: `domain:bus:device.function`, `domain:bus:device`,
/// `bus:device.function` (hexadecimal; the function is not compared).
fn parse_pci_bus_id(text: &str) -> Option<(i32, i32, i32)> {
    let (rest, function) = match text.split_once('.') {
        Some((rest, f)) => (rest, Some(f)),
        None => (text, None),
    };
    let hex = |t: &str| {
        (!t.is_empty() && t.len() <= 8)
            .then(|| u32::from_str_radix(t, 16).ok())
            .flatten()
            .and_then(|v| i32::try_from(v).ok())
    };
    if let Some(f) = function {
        hex(f)?;
    }
    let parts: Vec<&str> = rest.split(':').collect();
    match (parts.as_slice(), function) {
        ([domain, bus, dev], _) => Some((hex(domain)?, hex(bus)?, hex(dev)?)),
        ([bus, dev], Some(_)) => Some((0, hex(bus)?, hex(dev)?)),
        _ => None,
    }
}

/// The first device with the PCI bus id `text` (devices of several servers
/// may share one).
pub(crate) fn device_by_pci_bus_id(text: &str) -> Result<c_int, DriverError> {
    let (domain, bus, dev) = parse_pci_bus_id(text).ok_or(DriverError::INVALID_VALUE)?;
    let count = rt().device_count().map_err(|_| DriverError::NO_DEVICE)?;
    for ordinal in 0..count as c_int {
        let p = rt().props(ordinal)?;
        if (p.pci_domain_id, p.pci_bus_id, p.pci_device_id) == (domain, bus, dev) {
            return Ok(ordinal);
        }
    }
    Err(DriverError::INVALID_DEVICE)
}

driver_fn! { cuDeviceGetByPCIBusId (dev: *mut c_int, bus_id: *const c_char) {
    initialized()?;
    let ordinal = device_by_pci_bus_id(super::c_str(bus_id)?)?;
    out(dev, ordinal)
} }

driver_fn! { cuDevicePrimaryCtxRetain (ctx: *mut u64, dev: c_int) {
    let handle = rt().primary_retain(device(dev)?)?;
    out(ctx, handle)
} }

driver_fn! { [cuDevicePrimaryCtxRelease, cuDevicePrimaryCtxRelease_v2] (dev: c_int) {
    Ok(rt().primary_release(device(dev)?)?)
} }

driver_fn! { [cuDevicePrimaryCtxReset, cuDevicePrimaryCtxReset_v2] (dev: c_int) {
    // Context-local storage stays: NVIDIA's runtime deletes its own entry
    // right after the reset.
    Ok(rt().primary_reset(device(dev)?)?)
} }

driver_fn! { cuDevicePrimaryCtxGetState (dev: c_int, flags: *mut c_uint, active: *mut c_int) {
    let (f, a) = rt().primary_state(device(dev)?)?;
    out(flags, f)?;
    out(active, a as c_int)
} }

driver_fn! { [cuDevicePrimaryCtxSetFlags, cuDevicePrimaryCtxSetFlags_v2] (dev: c_int, flags: c_uint) {
    let dev = device(dev)?;
    if flags & !PRIMARY_CTX_FLAGS != 0 || (flags & 0x07).count_ones() > 1 {
        return Err(DriverError::INVALID_VALUE);
    }
    Ok(rt().primary_set_flags(dev, flags)?)
} }

// ---- peers -------------------------------------------------------------------

// Remote GPUs cannot map each other's memory: copies between them go
// through the servers (`cuMemcpyPeer`), and peer access is never granted.
driver_fn! { cuDeviceCanAccessPeer (can: *mut c_int, dev: c_int, peer: c_int) {
    let can_access = rt().can_access_peer(device(dev)?, device(peer)?)?;
    out(can, c_int::from(can_access))
} }

driver_fn! { cuDeviceGetP2PAttribute (value: *mut c_int, _attribute: c_int, src: c_int, dst: c_int) {
    let (src, dst) = (device(src)?, device(dst)?);
    if src == dst {
        return Err(DriverError::INVALID_DEVICE);
    }
    // No link between them: no access, no atomics, no performance rank.
    out(value, 0)
} }

driver_fn! { cuCtxEnablePeerAccess (peer: u64, flags: c_uint) {
    let own = super::context_device()? as c_int;
    let other = rt().context_info(peer)?.device as c_int;
    if flags != 0 {
        return Err(DriverError::INVALID_VALUE);
    }
    match rt().can_access_peer(own, other)? {
        true => Ok(()),
        // CUDA_ERROR_PEER_ACCESS_UNSUPPORTED.
        false => Err(DriverError(217)),
    }
} }

driver_fn! { cuCtxDisablePeerAccess (peer: u64) {
    super::context_device()?;
    rt().context_info(peer)?;
    // CUDA_ERROR_PEER_ACCESS_NOT_ENABLED.
    Err(DriverError(705))
} }

// ---- notifications and GPUDirect RDMA ---------------------------------------------

driver_fn! { cuDeviceRegisterAsyncNotification (dev: c_int, callback: *mut std::ffi::c_void, data: *mut std::ffi::c_void, handle: *mut u64) {
    let dev = device(dev)?;
    if handle.is_null() {
        return Err(DriverError::INVALID_VALUE);
    }
    let h = crate::cudart::device::register_notification(dev, callback as usize, data as usize)?;
    out(handle, h)
} }

driver_fn! { cuDeviceUnregisterAsyncNotification (dev: c_int, handle: u64) {
    let dev = device(dev)?;
    Ok(crate::cudart::device::unregister_notification(dev, handle)?)
} }

driver_fn! { cuFlushGPUDirectRDMAWrites (target: c_int, scope: c_int) {
    super::context_device()?;
    Ok(crate::cudart::device::flush_rdma_writes(target, scope)?)
} }

driver_fn! { cuDeviceGetHostAtomicCapabilities (caps: *mut c_uint, ops: *const c_int, count: c_uint, dev: c_int) {
    let _ = device(dev)?;
    Ok(crate::cudart::device::atomic_capabilities(caps, ops, count)?)
} }

driver_fn! { cuDeviceGetP2PAtomicCapabilities (caps: *mut c_uint, ops: *const c_int, count: c_uint, src: c_int, dst: c_int) {
    let (src, dst) = (device(src)?, device(dst)?);
    crate::cudart::device::peer_pair(src, dst)?;
    Ok(crate::cudart::device::atomic_capabilities(caps, ops, count)?)
} }

driver_fn! { cuDeviceGetNvSciSyncAttributes (list: *mut std::ffi::c_void, dev: c_int, flags: c_int) {
    let dev = device(dev)?;
    Ok(crate::cudart::device::nvscisync_attributes(list, dev, flags)?)
} }

// ---- the profiler ----------------------------------------------------------------

// No profiler collects from the remote GPUs; starting and stopping it
// succeed, as they do on a GPU with no profiler attached.
driver_fn! { [cuProfilerStart, cuProfilerStop] () {
    super::context_device()?;
    Ok(())
} }

driver_fn! { cuProfilerInitialize (_config: *const std::os::raw::c_char, _output: *const std::os::raw::c_char, _mode: c_int) {
    initialized()?;
    Ok(())
} }

#[cfg(test)]
mod tests {
    use super::parse_pci_bus_id;

    #[test]
    fn pci_bus_ids_in_every_form_cuda_accepts() {
        assert_eq!(parse_pci_bus_id("0000:01:00.0"), Some((0, 1, 0)));
        assert_eq!(parse_pci_bus_id("0001:8a:1f"), Some((1, 0x8a, 0x1f)));
        assert_eq!(parse_pci_bus_id("3B:00.0"), Some((0, 0x3b, 0)));
        for bad in [
            "",
            "01:00",
            "x:01:00.0",
            "0000:01:00.",
            "1:2:3:4",
            "0000:01:00.0.1",
        ] {
            assert_eq!(parse_pci_bus_id(bad), None, "{bad}");
        }
    }
}
