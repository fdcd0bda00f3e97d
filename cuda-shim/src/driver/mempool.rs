//! Stream-ordered allocation and memory pools of the driver API: the same
//! pools as the runtime's (`cudaMallocAsync`), one implementation.

use crate::cudart::mempool as rt_mempool;
use std::ffi::c_void;
use std::os::raw::c_int;

use rcud_client::runtime::mempool::PoolAttr;

use super::{initialized, out, rt, DriverError};
use crate::cudart::mempool::{
    location_device, pool_create, read_attribute, set_access, write_attribute, MemAccessDesc,
    MemLocation, MemPoolProps,
};

type Stream = *mut c_void;
type Pool = *mut c_void;

driver_fn! { [cuMemAllocAsync, cuMemAllocAsync_ptsz] (dptr: *mut u64, size: usize, stream: Stream) {
    initialized()?;
    if dptr.is_null() {
        return Err(DriverError::INVALID_VALUE);
    }
    out(dptr, rt_mempool::malloc_async(size as u64, None, stream as u64)?)
} }

driver_fn! { [cuMemAllocFromPoolAsync, cuMemAllocFromPoolAsync_ptsz] (dptr: *mut u64, size: usize, pool: Pool, stream: Stream) {
    initialized()?;
    if dptr.is_null() {
        return Err(DriverError::INVALID_VALUE);
    }
    out(dptr, rt_mempool::malloc_async(size as u64, Some(pool as u64), stream as u64)?)
} }

driver_fn! { [cuMemFreeAsync, cuMemFreeAsync_ptsz] (dptr: u64, stream: Stream) {
    initialized()?;
    Ok(rt_mempool::free_async(dptr, stream as u64)?)
} }

driver_fn! { cuDeviceGetDefaultMemPool (pool: *mut Pool, device: c_int) {
    initialized()?;
    out(pool, rt().default_mem_pool(device)? as Pool)
} }

driver_fn! { cuDeviceGetMemPool (pool: *mut Pool, device: c_int) {
    initialized()?;
    out(pool, rt().current_mem_pool(device)? as Pool)
} }

driver_fn! { cuDeviceSetMemPool (device: c_int, pool: Pool) {
    initialized()?;
    Ok(rt().set_mem_pool(device, pool as u64)?)
} }

driver_fn! { cuMemGetDefaultMemPool (pool: *mut Pool, location: *const MemLocation, alloc_type: c_int) {
    initialized()?;
    let device = rt_mempool::pool_device(location, alloc_type)?;
    out(pool, rt().default_mem_pool(device)? as Pool)
} }

driver_fn! { cuMemGetMemPool (pool: *mut Pool, location: *const MemLocation, alloc_type: c_int) {
    initialized()?;
    let device = rt_mempool::pool_device(location, alloc_type)?;
    out(pool, rt().current_mem_pool(device)? as Pool)
} }

driver_fn! { cuMemSetMemPool (location: *const MemLocation, alloc_type: c_int, pool: Pool) {
    initialized()?;
    let device = rt_mempool::pool_device(location, alloc_type)?;
    Ok(rt().set_mem_pool(device, pool as u64)?)
} }

// Nothing can be exported or imported: see the runtime's. The import and
// pointer forms fail whatever their arguments (the C convention lets them
// read only the first two).
driver_fn! { cuMemPoolExportToShareableHandle (handle: *mut c_void, pool: Pool, _kind: c_int, _flags: u64) {
    initialized()?;
    if handle.is_null() {
        return Err(DriverError::INVALID_VALUE);
    }
    Ok(rt_mempool::export_pool(pool)?)
} }

driver_fn! { [cuMemPoolImportFromShareableHandle, cuMemPoolExportPointer, cuMemPoolImportPointer] (_a: *mut c_void, _b: *mut c_void) {
    initialized()?;
    Err(DriverError::INVALID_VALUE)
} }

driver_fn! { cuMemPoolCreate (pool: *mut Pool, props: *const MemPoolProps) {
    initialized()?;
    if pool.is_null() {
        return Err(DriverError::INVALID_VALUE);
    }
    out(pool, pool_create(props)? as Pool)
} }

driver_fn! { cuMemPoolDestroy (pool: Pool) {
    initialized()?;
    Ok(rt().mem_pool_destroy(pool as u64)?)
} }

driver_fn! { cuMemPoolTrimTo (pool: Pool, keep: usize) {
    initialized()?;
    Ok(rt().mem_pool_trim_to(pool as u64, keep as u64)?)
} }

driver_fn! { cuMemPoolSetAttribute (pool: Pool, attr: c_int, value: *mut c_void) {
    initialized()?;
    let attr = PoolAttr::from_raw(attr)?;
    let v = read_attribute(attr, value)?;
    Ok(rt().mem_pool_set_attribute(pool as u64, attr, v)?)
} }

driver_fn! { cuMemPoolGetAttribute (pool: Pool, attr: c_int, value: *mut c_void) {
    initialized()?;
    let attr = PoolAttr::from_raw(attr)?;
    let v = rt().mem_pool_get_attribute(pool as u64, attr)?;
    Ok(write_attribute(attr, value, v)?)
} }

driver_fn! { cuMemPoolSetAccess (pool: Pool, descs: *const MemAccessDesc, count: usize) {
    initialized()?;
    Ok(set_access(pool as u64, descs, count)?)
} }

driver_fn! { cuMemPoolGetAccess (flags: *mut c_int, pool: Pool, location: *mut MemLocation) {
    initialized()?;
    if location.is_null() {
        return Err(DriverError::INVALID_VALUE);
    }
    // SAFETY: non-NULL (checked above) and valid for reads per the API
    // contract.
    let location = unsafe { location.read() };
    out(flags, rt().mem_pool_get_access(pool as u64, location_device(location)?)?)
} }
