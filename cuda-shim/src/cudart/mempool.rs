//! Stream-ordered memory and memory pools (`cudaMallocAsync` and friends);
//! the pools themselves are the client runtime's (`runtime/mempool.rs`).

use std::ffi::c_void;
use std::os::raw::{c_int, c_uint};

use rcud_client::runtime::mempool::PoolAttr;
use rcud_client::Runtime;
use rcud_proto::CudaError;

use crate::ffi::{guard, write_out, CudaErrorT};
use crate::graph::{capture, memory as graph_memory, NodeKind};

fn rt() -> &'static Runtime {
    Runtime::global()
}

/// `cudaMemLocation`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub(crate) struct MemLocation {
    pub(crate) kind: c_int,
    pub(crate) id: c_int,
}

/// `cudaMemLocationTypeDevice`.
pub(crate) const LOCATION_DEVICE: c_int = 1;
/// `cudaMemAllocationTypePinned`.
const ALLOCATION_PINNED: c_int = 1;

/// `cudaMemPoolProps` (the fields rcud reads; the rest is reserved).
#[repr(C)]
pub(crate) struct MemPoolProps {
    pub(crate) alloc_type: c_int,
    pub(crate) handle_types: c_int,
    pub(crate) location: MemLocation,
    pub(crate) win32_security_attributes: *mut c_void,
    pub(crate) max_size: usize,
    pub(crate) usage: u16,
    pub(crate) reserved: [u8; 54],
}

/// `cudaMemAccessDesc`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub(crate) struct MemAccessDesc {
    pub(crate) location: MemLocation,
    pub(crate) flags: c_int,
}

/// Reads what `ptr` points to, or fails for NULL.
pub(crate) fn read_in<T: Copy>(ptr: *const T) -> Result<T, CudaError> {
    if ptr.is_null() {
        return Err(CudaError::INVALID_VALUE);
    }
    // SAFETY: the CUDA API contract makes input pointers valid for reads of
    // their type; NULL was rejected above.
    Ok(unsafe { ptr.read() })
}

/// The device of a location, which must be a device.
pub(crate) fn location_device(location: MemLocation) -> Result<i32, CudaError> {
    if location.kind != LOCATION_DEVICE {
        return Err(CudaError::INVALID_VALUE);
    }
    Ok(location.id)
}

/// `cudaMemPoolCreate`'s checks, shared with `cuMemPoolCreate`.
pub(crate) fn pool_create(props: *const MemPoolProps) -> Result<u64, CudaError> {
    if props.is_null() {
        return Err(CudaError::INVALID_VALUE);
    }
    // SAFETY: non-NULL (checked above) and valid for reads per the API
    // contract; only plain fields are read.
    let (alloc_type, handle_types, location, max_size) = unsafe {
        (
            (*props).alloc_type,
            (*props).handle_types,
            (*props).location,
            (*props).max_size,
        )
    };
    if alloc_type != ALLOCATION_PINNED {
        return Err(CudaError::INVALID_VALUE);
    }
    // Shareable handles (IPC) need the pool's memory in another process.
    if handle_types != 0 {
        return Err(CudaError::NOT_SUPPORTED);
    }
    let device = location_device(location)?;
    // A device that does not exist is an invalid location, as NVIDIA's
    // driver answers (not cudaErrorInvalidDevice).
    rt().props(device).map_err(|_| CudaError::INVALID_VALUE)?;
    rt().mem_pool_create(device, max_size as u64)
}

/// Reads an attribute value of the type the attribute has.
pub(crate) fn read_attribute(attr: PoolAttr, value: *const c_void) -> Result<u64, CudaError> {
    if attr.is_int() {
        read_in(value as *const c_int).map(|v| v as u64)
    } else {
        read_in(value as *const u64)
    }
}

/// Writes an attribute value as the type the attribute has.
pub(crate) fn write_attribute(attr: PoolAttr, out: *mut c_void, v: u64) -> Result<(), CudaError> {
    if attr.is_int() {
        write_out(out as *mut c_int, v as c_int)
    } else {
        write_out(out as *mut u64, v)
    }
}

/// `cudaMemPoolSetAccess`'s loop, shared with the driver.
pub(crate) fn set_access(
    pool: u64,
    descs: *const MemAccessDesc,
    count: usize,
) -> Result<(), CudaError> {
    if count > 0 && descs.is_null() {
        return Err(CudaError::INVALID_VALUE);
    }
    for i in 0..count {
        // SAFETY: `descs` holds `count` descriptors per the API contract
        // (non-NULL, checked above).
        let d = read_in(unsafe { descs.add(i) })?;
        rt().mem_pool_set_access(pool, location_device(d.location)?, d.flags)?;
    }
    Ok(())
}

with_ptsz! {
    fn cudaMallocAsync / cudaMallocAsync_ptsz (dev_ptr: *mut *mut c_void, size: usize, stream: *mut c_void) {
        if dev_ptr.is_null() {
            return Err(CudaError::INVALID_VALUE);
        }
        let ptr = malloc_async(size as u64, None, stream as u64)?;
        write_out(dev_ptr, ptr as *mut c_void)
    }
}

with_ptsz! {
    fn cudaMallocFromPoolAsync / cudaMallocFromPoolAsync_ptsz (dev_ptr: *mut *mut c_void, size: usize, pool: *mut c_void, stream: *mut c_void) {
        if dev_ptr.is_null() {
            return Err(CudaError::INVALID_VALUE);
        }
        let ptr = malloc_async(size as u64, Some(pool as u64), stream as u64)?;
        write_out(dev_ptr, ptr as *mut c_void)
    }
}

with_ptsz! {
    fn cudaFreeAsync / cudaFreeAsync_ptsz (dev_ptr: *mut c_void, stream: *mut c_void) {
        free_async(dev_ptr as u64, stream as u64)
    }
}

/// `cudaMallocAsync` (from `pool`, or the device's current pool); on a
/// capturing stream, a memory alloc node of the capture's graph.
pub(crate) fn malloc_async(size: u64, pool: Option<u64>, stream: u64) -> Result<u64, CudaError> {
    let mut reserved = None;
    let node = || {
        let device = rt().stream_device(stream)?;
        let ptr = graph_memory::reserve(device, size)?;
        reserved = Some(ptr);
        Ok(NodeKind::MemAlloc { ptr, size, device })
    };
    if capture::record(stream, node)? {
        return reserved.ok_or(CudaError::ILLEGAL_STATE);
    }
    match pool {
        Some(pool) => rt().malloc_from_pool(size, pool, stream),
        None => rt().malloc_async(size, stream),
    }
}

/// `cudaFreeAsync`: graph memory is freed in the graph's sense (and, on a
/// capturing stream, by a memory free node); pool memory goes back to its pool.
pub(crate) fn free_async(ptr: u64, stream: u64) -> Result<(), CudaError> {
    if capture::is_capturing(stream) && !graph_memory::is_graph_memory(ptr) {
        // Only graph memory can be freed by a graph.
        return Err(CudaError::STREAM_CAPTURE_UNSUPPORTED);
    }
    if capture::record(stream, || Ok(NodeKind::MemFree(ptr)))? {
        return Ok(());
    }
    if let Some(freed) = graph_memory::free(ptr) {
        rt().stream_device(stream)?;
        return freed;
    }
    rt().free_async(ptr, stream)
}

#[no_mangle]
pub extern "C" fn cudaDeviceGetDefaultMemPool(pool: *mut *mut c_void, device: c_int) -> CudaErrorT {
    guard(|| write_out(pool, rt().default_mem_pool(device)? as *mut c_void))
}

#[no_mangle]
pub extern "C" fn cudaDeviceGetMemPool(pool: *mut *mut c_void, device: c_int) -> CudaErrorT {
    guard(|| write_out(pool, rt().current_mem_pool(device)? as *mut c_void))
}

#[no_mangle]
pub extern "C" fn cudaDeviceSetMemPool(device: c_int, pool: *mut c_void) -> CudaErrorT {
    guard(|| rt().set_mem_pool(device, pool as u64))
}

#[no_mangle]
pub extern "C" fn cudaMemPoolCreate(
    pool: *mut *mut c_void,
    props: *const MemPoolProps,
) -> CudaErrorT {
    guard(|| {
        if pool.is_null() {
            return Err(CudaError::INVALID_VALUE);
        }
        write_out(pool, pool_create(props)? as *mut c_void)
    })
}

#[no_mangle]
pub extern "C" fn cudaMemPoolDestroy(pool: *mut c_void) -> CudaErrorT {
    guard(|| rt().mem_pool_destroy(pool as u64))
}

#[no_mangle]
pub extern "C" fn cudaMemPoolTrimTo(pool: *mut c_void, keep: usize) -> CudaErrorT {
    guard(|| rt().mem_pool_trim_to(pool as u64, keep as u64))
}

#[no_mangle]
pub extern "C" fn cudaMemPoolSetAttribute(
    pool: *mut c_void,
    attr: c_int,
    value: *mut c_void,
) -> CudaErrorT {
    guard(|| {
        let attr = PoolAttr::from_raw(attr)?;
        let v = read_attribute(attr, value)?;
        rt().mem_pool_set_attribute(pool as u64, attr, v)
    })
}

#[no_mangle]
pub extern "C" fn cudaMemPoolGetAttribute(
    pool: *mut c_void,
    attr: c_int,
    value: *mut c_void,
) -> CudaErrorT {
    guard(|| {
        let attr = PoolAttr::from_raw(attr)?;
        let v = rt().mem_pool_get_attribute(pool as u64, attr)?;
        write_attribute(attr, value, v)
    })
}

#[no_mangle]
pub extern "C" fn cudaMemPoolSetAccess(
    pool: *mut c_void,
    descs: *const MemAccessDesc,
    count: usize,
) -> CudaErrorT {
    guard(|| set_access(pool as u64, descs, count))
}

#[no_mangle]
pub extern "C" fn cudaMemPoolGetAccess(
    flags: *mut c_int,
    pool: *mut c_void,
    location: *mut MemLocation,
) -> CudaErrorT {
    guard(|| {
        let device = location_device(read_in(location as *const MemLocation)?)?;
        write_out(flags, rt().mem_pool_get_access(pool as u64, device)?)
    })
}

/// `cudaMemLocationTypeHost` .. `HostNumaCurrent`; `cudaMemAllocationTypeManaged`.
const LOCATION_HOST_TYPES: std::ops::RangeInclusive<c_int> = 2..=4;
const ALLOCATION_MANAGED: c_int = 2;

/// The device of a `(location, allocation type)` pool query (CUDA 13's
/// `cudaMemGetDefaultMemPool` and friends). Pools here are device pools of
/// pinned memory; host and managed pools are not supported.
pub(crate) fn pool_device(
    location: *const MemLocation,
    alloc_type: c_int,
) -> Result<i32, CudaError> {
    let location = read_in(location)?;
    let host = LOCATION_HOST_TYPES.contains(&location.kind);
    if !(host || location.kind == LOCATION_DEVICE)
        || !(alloc_type == ALLOCATION_PINNED || alloc_type == ALLOCATION_MANAGED)
    {
        return Err(CudaError::INVALID_VALUE);
    }
    if host || alloc_type == ALLOCATION_MANAGED {
        return Err(CudaError::NOT_SUPPORTED);
    }
    rt().props(location.id)
        .map_err(|_| CudaError::INVALID_VALUE)?;
    Ok(location.id)
}

#[no_mangle]
pub extern "C" fn cudaMemGetDefaultMemPool(
    pool: *mut *mut c_void,
    location: *const MemLocation,
    alloc_type: c_int,
) -> CudaErrorT {
    guard(|| {
        let device = pool_device(location, alloc_type)?;
        write_out(pool, rt().default_mem_pool(device)? as *mut c_void)
    })
}

#[no_mangle]
pub extern "C" fn cudaMemGetMemPool(
    pool: *mut *mut c_void,
    location: *const MemLocation,
    alloc_type: c_int,
) -> CudaErrorT {
    guard(|| {
        let device = pool_device(location, alloc_type)?;
        write_out(pool, rt().current_mem_pool(device)? as *mut c_void)
    })
}

#[no_mangle]
pub extern "C" fn cudaMemSetMemPool(
    location: *const MemLocation,
    alloc_type: c_int,
    pool: *mut c_void,
) -> CudaErrorT {
    guard(|| {
        let device = pool_device(location, alloc_type)?;
        rt().set_mem_pool(device, pool as u64)
    })
}

// ---- sharing pools between processes ------------------------------------------------

/// Pools here never have shareable handle types (`cudaMemPoolCreate`
/// refuses them), so, as CUDA answers for such pools, nothing can be
/// exported; and no handle or export data from another process can name
/// a pool or allocation of these remote devices.
pub(crate) fn export_pool(pool: *mut c_void) -> Result<(), CudaError> {
    rt().mem_pool_get_attribute(pool as u64, PoolAttr::ReleaseThreshold)?;
    Err(CudaError::INVALID_VALUE)
}

#[no_mangle]
pub extern "C" fn cudaMemPoolExportToShareableHandle(
    handle: *mut c_void,
    pool: *mut c_void,
    _kind: c_int,
    _flags: c_uint,
) -> CudaErrorT {
    guard(|| {
        if handle.is_null() {
            return Err(CudaError::INVALID_VALUE);
        }
        export_pool(pool)
    })
}

#[no_mangle]
pub extern "C" fn cudaMemPoolImportFromShareableHandle(
    _pool: *mut *mut c_void,
    _handle: *mut c_void,
    _kind: c_int,
    _flags: c_uint,
) -> CudaErrorT {
    guard(|| Err(CudaError::INVALID_VALUE))
}

#[no_mangle]
pub extern "C" fn cudaMemPoolExportPointer(_data: *mut c_void, _ptr: *mut c_void) -> CudaErrorT {
    guard(|| Err(CudaError::INVALID_VALUE))
}

#[no_mangle]
pub extern "C" fn cudaMemPoolImportPointer(
    _ptr: *mut *mut c_void,
    _pool: *mut c_void,
    _data: *mut c_void,
) -> CudaErrorT {
    guard(|| Err(CudaError::INVALID_VALUE))
}
