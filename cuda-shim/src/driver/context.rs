//! Contexts: creation, the per-thread current-context stack, and queries.

use std::os::raw::{c_int, c_uint};

use rcud_client::runtime::{STREAM_PRIORITY_GREATEST, STREAM_PRIORITY_LEAST};

use super::{context_device, device, initialized, out, rt, DriverError};

/// What `cuCtxGetApiVersion` reports for every context since CUDA 3.2.
const CONTEXT_API_VERSION: c_uint = 3020;

/// The handle of `ctx`, or of the current context when `ctx` is NULL, as
/// the query functions take it.
fn context_or_current(ctx: u64) -> Result<u64, DriverError> {
    initialized()?;
    match ctx {
        0 => rt().current_context().ok_or(DriverError::INVALID_CONTEXT),
        c => Ok(c),
    }
}

fn create(ctx: *mut u64, flags: c_uint, dev: c_int) -> Result<(), DriverError> {
    if ctx.is_null() {
        return Err(DriverError::INVALID_VALUE);
    }
    let handle = rt().context_create(device(dev)?, flags)?;
    out(ctx, handle)
}

// The pre-CUDA 3.2/4.0 names have the same signatures: programs built
// against old headers call them.
driver_fn! { [cuCtxCreate_v2, cuCtxCreate] (ctx: *mut u64, flags: c_uint, dev: c_int) {
    create(ctx, flags, dev)
} }

// CUDA 11.4's form: execution-affinity parameters are hints.
driver_fn! { cuCtxCreate_v3 (ctx: *mut u64, _params: *const std::ffi::c_void, _count: c_int, flags: c_uint, dev: c_int) {
    create(ctx, flags, dev)
} }

// CUDA 12.5's form: creation parameters (affinity, CIG) are hints here.
driver_fn! { cuCtxCreate_v4 (ctx: *mut u64, _params: *const std::ffi::c_void, flags: c_uint, dev: c_int) {
    create(ctx, flags, dev)
} }

driver_fn! { [cuCtxDestroy_v2, cuCtxDestroy] (ctx: u64) {
    initialized()?;
    rt().context_info(ctx)?;
    super::export_tables::context_gone(ctx);
    Ok(rt().context_destroy(ctx)?)
} }

driver_fn! { [cuCtxPushCurrent_v2, cuCtxPushCurrent] (ctx: u64) {
    initialized()?;
    Ok(rt().context_push(ctx)?)
} }

driver_fn! { [cuCtxPopCurrent_v2, cuCtxPopCurrent] (ctx: *mut u64) {
    initialized()?;
    let popped = rt().context_pop()?;
    if !ctx.is_null() {
        out(ctx, popped)?;
    }
    Ok(())
} }

driver_fn! { cuCtxSetCurrent (ctx: u64) {
    initialized()?;
    Ok(rt().context_set_current(ctx)?)
} }

driver_fn! { cuCtxGetCurrent (ctx: *mut u64) {
    initialized()?;
    out(ctx, rt().current_context().unwrap_or(0))
} }

driver_fn! { cuCtxGetDevice (dev: *mut c_int) {
    out(dev, context_device()? as c_int)
} }

driver_fn! { cuCtxGetDevice_v2 (dev: *mut c_int, ctx: u64) {
    let info = rt().context_info(context_or_current(ctx)?)?;
    out(dev, info.device as c_int)
} }

driver_fn! { cuCtxGetFlags (flags: *mut c_uint) {
    /// `CU_CTX_MAP_HOST`: contexts always map page-locked memory now, and
    /// NVIDIA's driver reports it (NVIDIA's static runtime builds
    /// `cudaGetDeviceFlags` on this call).
    const MAP_HOST: c_uint = 0x08;
    let info = rt().context_info(context_or_current(0)?)?;
    out(flags, info.flags | MAP_HOST)
} }

driver_fn! { cuCtxSetFlags (flags: c_uint) {
    let handle = context_or_current(0)?;
    let info = rt().context_info(handle)?;
    if info.primary {
        rt().primary_set_flags(info.device as c_int, flags)?;
    }
    Ok(())
} }

driver_fn! { cuCtxGetId (ctx: u64, id: *mut u64) {
    let info = rt().context_info(context_or_current(ctx)?)?;
    out(id, info.id)
} }

driver_fn! { cuCtxGetApiVersion (ctx: u64, version: *mut c_uint) {
    rt().context_info(context_or_current(ctx)?)?;
    out(version, CONTEXT_API_VERSION)
} }

driver_fn! { cuCtxSynchronize () {
    let d = context_device()?;
    crate::graph::capture::refuse_unsafe()?;
    Ok(rt().device_synchronize(d)?)
} }

driver_fn! { cuCtxSynchronize_v2 (ctx: u64) {
    crate::graph::capture::refuse_unsafe()?;
    let info = rt().context_info(context_or_current(ctx)?)?;
    Ok(rt().device_synchronize(info.device)?)
} }

driver_fn! { cuCtxGetStreamPriorityRange (least: *mut c_int, greatest: *mut c_int) {
    context_device()?;
    if !least.is_null() {
        out(least, STREAM_PRIORITY_LEAST)?;
    }
    if !greatest.is_null() {
        out(greatest, STREAM_PRIORITY_GREATEST)?;
    }
    Ok(())
} }

driver_fn! { cuCtxGetCacheConfig (config: *mut c_int) {
    context_device()?;
    out(config, crate::cudart::device::cache_config())
} }

// A preference the emulated device has no use for, kept and reported; real
// GPUs treat it as a hint too.
driver_fn! { cuCtxSetCacheConfig (config: c_int) {
    context_device()?;
    Ok(crate::cudart::device::set_cache_config(config)?)
} }

// Four-byte banks, those of every GPU since Maxwell; they cannot change.
driver_fn! { cuCtxGetSharedMemConfig (config: *mut c_int) {
    context_device()?;
    out(config, 1)
} }

driver_fn! { cuCtxSetSharedMemConfig (config: c_int) {
    context_device()?;
    if !(0..=2).contains(&config) {
        return Err(DriverError::INVALID_VALUE);
    }
    Ok(())
} }

// The runtime's limits: one implementation, in the client runtime.
driver_fn! { cuCtxGetLimit (value: *mut usize, limit: c_int) {
    context_device()?;
    out(value, rt().device_get_limit(limit)? as usize)
} }

driver_fn! { cuCtxSetLimit (limit: c_int, value: usize) {
    context_device()?;
    Ok(rt().device_set_limit(limit, value as u64)?)
} }

// No L2 lines persist on the emulated device.
driver_fn! { cuCtxResetPersistingL2Cache () {
    context_device()?;
    Ok(())
} }
