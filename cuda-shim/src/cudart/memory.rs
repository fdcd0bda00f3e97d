//! Device memory, copies, memset and page-locked host memory.

use std::alloc::{self, Layout};
use std::ffi::c_void;
use std::os::raw::{c_int, c_uint};

use rcud_client::runtime::Route;
use rcud_client::session::{HostDst, HostSrc};
use rcud_client::{MemcpyKind, Runtime};
use rcud_proto::CudaError;

use crate::ffi::{byte_count, guard, write_out, CudaErrorT};
use crate::graph::{capture, capture_memset, MemcpyNode, MemsetNode, NodeKind};

fn rt() -> &'static Runtime {
    Runtime::global()
}

#[no_mangle]
pub extern "C" fn cudaMalloc(dev_ptr: *mut *mut c_void, size: usize) -> CudaErrorT {
    guard(|| {
        if dev_ptr.is_null() {
            return Err(CudaError::INVALID_VALUE);
        }
        capture::refuse_unsafe()?;
        let ptr = rt().malloc(size as u64)?;
        write_out(dev_ptr, ptr as *mut c_void)
    })
}

#[no_mangle]
pub extern "C" fn cudaFree(dev_ptr: *mut c_void) -> CudaErrorT {
    guard(|| {
        capture::refuse_unsafe()?;
        free(dev_ptr)
    })
}

fn free(dev_ptr: *mut c_void) -> Result<(), CudaError> {
    if let Some(freed) = crate::graph::memory::free(dev_ptr as u64) {
        return freed;
    }
    match super::managed::free(dev_ptr as u64) {
        Some(result) => result,
        None => rt().free(dev_ptr as u64),
    }
}

#[no_mangle]
pub extern "C" fn cudaMallocManaged(
    dev_ptr: *mut *mut c_void,
    size: usize,
    flags: c_uint,
) -> CudaErrorT {
    guard(|| {
        if dev_ptr.is_null() {
            return Err(CudaError::INVALID_VALUE);
        }
        let p = super::managed::alloc(size, flags)?;
        write_out(dev_ptr, p as *mut c_void)
    })
}

/// Whether a copy of `count` bytes from `src` to `dst` touches managed or
/// mapped memory; if so its ends are handed to the device side first (the
/// host's writes to the source are sent; the destination becomes
/// device-held).
fn managed_to_device(dst: u64, src: u64, count: u64) -> bool {
    let source = super::managed::to_device_range(src, count, false);
    let destination = super::managed::to_device_range(dst, count, true);
    source.is_some() || destination.is_some()
}

#[no_mangle]
pub extern "C" fn cudaMemGetInfo(free: *mut usize, total: *mut usize) -> CudaErrorT {
    guard(|| {
        let (f, t) = rt().mem_get_info()?;
        write_out(free, f as usize)?;
        write_out(total, t as usize)
    })
}

/// The common body of the synchronous copies.
pub(crate) fn memcpy(
    dst: *mut c_void,
    src: *const c_void,
    count: usize,
    kind: c_int,
) -> Result<(), CudaError> {
    let kind = MemcpyKind::from_raw(kind)?;
    let count = byte_count(count)?;
    if count == 0 {
        return Ok(());
    }
    if dst.is_null() || src.is_null() {
        return Err(CudaError::INVALID_VALUE);
    }
    capture::refuse_legacy_sync()?;
    copy_now(dst, src, count, kind)
}

/// A synchronous copy of `count` (> 0) bytes between non-NULL addresses.
fn copy_now(
    dst: *mut c_void,
    src: *const c_void,
    count: usize,
    kind: MemcpyKind,
) -> Result<(), CudaError> {
    // A copy touching managed memory runs on the device's side of it: the
    // addresses say which end is device memory, whatever the kind claims
    // (managed and mapped memory are device allocations mirrored on the
    // host, which fetches what it touches afterwards).
    if managed_to_device(dst as u64, src as u64, count as u64) {
        return memcpy_unmanaged(dst, src, count, MemcpyKind::Default);
    }
    memcpy_unmanaged(dst, src, count, kind)
}

fn memcpy_unmanaged(
    dst: *mut c_void,
    src: *const c_void,
    count: usize,
    kind: MemcpyKind,
) -> Result<(), CudaError> {
    let rt = rt();
    match rt.memcpy_route(dst as u64, src as u64, kind)? {
        Route::HostToHost => {
            // SAFETY: both are host pointers valid for `count` bytes by the
            // cudaMemcpy contract; `copy` tolerates overlap.
            unsafe { std::ptr::copy(src as *const u8, dst as *mut u8, count) };
            Ok(())
        }
        Route::HostToDevice(d) => {
            // SAFETY: `src` is host memory readable for `count` bytes by the
            // cudaMemcpy contract, and is not written while the call runs.
            let bytes = unsafe { std::slice::from_raw_parts(src as *const u8, count) };
            rt.memcpy_htod(d, dst as u64, bytes)
        }
        Route::DeviceToHost(d) => {
            // SAFETY: `dst` is host memory writable for `count` bytes by the
            // cudaMemcpy contract, owned by the caller for the call's duration.
            let bytes = unsafe { std::slice::from_raw_parts_mut(dst as *mut u8, count) };
            rt.memcpy_dtoh(d, bytes, src as u64)
        }
        Route::DeviceToDevice { dst: dd, src: sd } => {
            rt.memcpy_dtod(dd, dst as u64, sd, src as u64, count as u64)
        }
    }
}

with_ptsz! {
    fn cudaMemcpy / cudaMemcpy_ptds (dst: *mut c_void, src: *const c_void, count: usize, kind: c_int) {
        memcpy(dst, src, count, kind)
    }
}

/// The application's page-locked buffer that a queued device-to-host copy
/// fills when its reply arrives.
struct PinnedDst {
    ptr: *mut u8,
    len: usize,
}

// SAFETY: CUDA's contract for cudaMemcpyAsync keeps the destination valid
// and untouched by the application until the stream is synchronized, and the
// copy is written by whichever thread sends the queue.
unsafe impl Send for PinnedDst {}

impl HostDst for PinnedDst {
    fn bytes(&mut self) -> &mut [u8] {
        // SAFETY: see the Send impl; `len` bytes at `ptr` were checked to be
        // page-locked memory of the application when the copy was queued.
        unsafe { std::slice::from_raw_parts_mut(self.ptr, self.len) }
    }
}

/// The application's page-locked buffer that a queued host-to-device copy
/// reads when it is sent (after the host functions queued before it).
struct PinnedSrc {
    ptr: *const u8,
    len: usize,
}

// SAFETY: CUDA's contract for cudaMemcpyAsync keeps a page-locked source valid
// until the stream is synchronized (and cudaFreeHost sends every queue
// first); the copy reads it from whichever thread sends the queue.
unsafe impl Send for PinnedSrc {}

impl HostSrc for PinnedSrc {
    fn len(&self) -> usize {
        self.len
    }

    fn bytes(&self) -> std::borrow::Cow<'_, [u8]> {
        // SAFETY: see the Send impl; `len` bytes at `ptr` were checked to be
        // page-locked memory of the application when the copy was queued.
        std::borrow::Cow::Borrowed(unsafe { std::slice::from_raw_parts(self.ptr, self.len) })
    }
}

/// `cudaMemcpyAsync`: copies to the device, between allocations of one
/// device and into page-locked memory are queued; the others (pageable
/// destinations, other devices) complete before returning, as CUDA specifies
/// for pageable memory.
pub(crate) fn memcpy_async(
    dst: *mut c_void,
    src: *const c_void,
    count: usize,
    kind: c_int,
    stream: *mut c_void,
) -> Result<(), CudaError> {
    let mkind = MemcpyKind::from_raw(kind)?;
    let count = byte_count(count)?;
    let rt = rt();
    let sd = rt.stream_device(stream as u64)?;
    if count == 0 {
        return Ok(());
    }
    if dst.is_null() || src.is_null() {
        return Err(CudaError::INVALID_VALUE);
    }
    let node = || {
        Ok(NodeKind::Memcpy(MemcpyNode::linear(
            dst as u64,
            src as u64,
            count as u64,
            kind,
        )))
    };
    if capture::record(stream as u64, node)? {
        return Ok(());
    }
    // With managed or mapped memory on either end, its device side counts.
    let mkind = match managed_to_device(dst as u64, src as u64, count as u64) {
        true => MemcpyKind::Default,
        false => mkind,
    };
    match rt.memcpy_route(dst as u64, src as u64, mkind)? {
        Route::HostToDevice(d) if d == sd && rt.is_pinned(src as u64, count as u64) => rt
            .memcpy_htod_async_from(
                d,
                dst as u64,
                Box::new(PinnedSrc {
                    ptr: src as *const u8,
                    len: count,
                }),
            ),
        Route::HostToDevice(d) if d == sd => {
            // SAFETY: `src` is host memory readable for `count` bytes by the
            // cudaMemcpyAsync contract; the bytes are copied before returning.
            let bytes = unsafe { std::slice::from_raw_parts(src as *const u8, count) };
            rt.memcpy_htod_async(d, dst as u64, bytes)
        }
        Route::DeviceToHost(d) if d == sd && rt.is_pinned(dst as u64, count as u64) => {
            let target = PinnedDst {
                ptr: dst as *mut u8,
                len: count,
            };
            rt.memcpy_dtoh_async(d, Box::new(target), src as u64, count as u64)
        }
        Route::DeviceToDevice { dst: a, src: b } if a == sd && b == sd => {
            rt.memcpy_dtod_async(sd, dst as u64, src as u64, count as u64)
        }
        _ => {
            rt.stream_synchronize(stream as u64)?;
            copy_now(dst, src, count, mkind)
        }
    }
}

with_ptsz! {
    fn cudaMemcpyAsync / cudaMemcpyAsync_ptsz (dst: *mut c_void, src: *const c_void, count: usize, kind: c_int, stream: *mut c_void) {
        memcpy_async(dst, src, count, kind, stream)
    }
}

pub(crate) fn memset_async(
    dev_ptr: *mut c_void,
    value: c_int,
    count: usize,
    stream: *mut c_void,
) -> Result<(), CudaError> {
    if count == 0 {
        return rt().stream_device(stream as u64).map(|_| ());
    }
    let node = MemsetNode {
        dst: dev_ptr as u64,
        pitch: count as u64,
        value: u32::from(value as u8),
        element: 1,
        width: count as u64,
        height: 1,
    };
    if capture_memset(stream as u64, node)? {
        return Ok(());
    }
    super::managed::to_device_range(dev_ptr as u64, count as u64, true);
    rt().memset_async(dev_ptr as u64, value as u8, count as u64, stream as u64)
}

with_ptsz! {
    fn cudaMemsetAsync / cudaMemsetAsync_ptsz (dev_ptr: *mut c_void, value: c_int, count: usize, stream: *mut c_void) {
        memset_async(dev_ptr, value, count, stream)
    }
}

pub(crate) fn memset(dev_ptr: *mut c_void, value: c_int, count: usize) -> Result<(), CudaError> {
    if count == 0 {
        return Ok(());
    }
    capture::refuse_legacy_sync()?;
    super::managed::to_device_range(dev_ptr as u64, count as u64, true);
    // Only the low byte of the value counts, as in CUDA.
    rt().memset(dev_ptr as u64, value as u8, count as u64)
}

with_ptsz! {
    fn cudaMemset / cudaMemset_ptds (dev_ptr: *mut c_void, value: c_int, count: usize) {
        memset(dev_ptr, value, count)
    }
}

// ---- page-locked host memory ---------------------------------------------

/// Alignment of host allocations: a page, as the driver's pinned memory.
const HOST_ALIGN: usize = 4096;
/// `cudaHostAllocMapped`.
const HOST_ALLOC_MAPPED: c_uint = 0x2;

pub(crate) fn host_alloc(
    ptr: *mut *mut c_void,
    size: usize,
    flags: c_uint,
) -> Result<(), CudaError> {
    if ptr.is_null() {
        return Err(CudaError::INVALID_VALUE);
    }
    Runtime::check_host_alloc_flags(flags)?;
    if size == 0 {
        return write_out(ptr, std::ptr::null_mut());
    }
    if flags & HOST_ALLOC_MAPPED != 0 {
        // Kernels reach it: device memory mirrored on the host at the same
        // address, moved at launches and synchronizations.
        let base = super::managed::alloc_mirrored(size)?;
        rt().host_alloc_insert(base, size as u64, flags);
        return write_out(ptr, base as *mut c_void);
    }
    let layout =
        Layout::from_size_align(size, HOST_ALIGN).map_err(|_| CudaError::MEMORY_ALLOCATION)?;
    // SAFETY: the layout has a non-zero size.
    let mem = unsafe { alloc::alloc(layout) };
    if mem.is_null() {
        return Err(CudaError::MEMORY_ALLOCATION);
    }
    rt().host_alloc_insert(mem as u64, size as u64, flags);
    write_out(ptr, mem as *mut c_void)
}

#[no_mangle]
pub extern "C" fn cudaMallocHost(ptr: *mut *mut c_void, size: usize) -> CudaErrorT {
    guard(|| host_alloc(ptr, size, 0))
}

#[no_mangle]
pub extern "C" fn cudaHostAlloc(ptr: *mut *mut c_void, size: usize, flags: c_uint) -> CudaErrorT {
    guard(|| host_alloc(ptr, size, flags))
}

pub(crate) fn free_host(ptr: *mut c_void) -> Result<(), CudaError> {
    if ptr.is_null() {
        return Ok(());
    }
    // Queued copies into this memory must land before it is released.
    rt().drain_all();
    let region = rt().host_alloc_remove(ptr as u64)?;
    if super::managed::is_allocation(ptr as u64) {
        return super::managed::free(ptr as u64).unwrap_or(Ok(()));
    }
    let layout = Layout::from_size_align(region.len as usize, HOST_ALIGN)
        .map_err(|_| CudaError::INVALID_VALUE)?;
    // SAFETY: the table only holds allocations made by `host_alloc` with
    // this size and alignment, and the entry was just removed, so the
    // memory is released exactly once.
    unsafe { alloc::dealloc(ptr as *mut u8, layout) };
    Ok(())
}

#[no_mangle]
pub extern "C" fn cudaFreeHost(ptr: *mut c_void) -> CudaErrorT {
    guard(|| free_host(ptr))
}

#[no_mangle]
pub extern "C" fn cudaHostRegister(ptr: *mut c_void, size: usize, flags: c_uint) -> CudaErrorT {
    guard(|| rt().host_register(ptr as u64, size as u64, flags))
}

#[no_mangle]
pub extern "C" fn cudaHostUnregister(ptr: *mut c_void) -> CudaErrorT {
    guard(|| {
        rt().drain_all();
        rt().host_unregister(ptr as u64)
    })
}

#[no_mangle]
pub extern "C" fn cudaHostGetDevicePointer(
    dev_ptr: *mut *mut c_void,
    host: *mut c_void,
    flags: c_uint,
) -> CudaErrorT {
    guard(|| {
        let dev = rt().host_device_pointer(host as u64, flags)?;
        write_out(dev_ptr, dev as *mut c_void)
    })
}

#[no_mangle]
pub extern "C" fn cudaHostGetFlags(flags: *mut c_uint, host: *mut c_void) -> CudaErrorT {
    guard(|| {
        /// `cudaHostAllocMapped`: page-locked memory is always mapped now, and
        /// NVIDIA's runtime reports the flag whatever was asked (seen on an
        /// H200).
        const MAPPED: c_uint = 0x02;
        let (_, _, f) = rt()
            .host_region(host as u64)
            .ok_or(CudaError::INVALID_VALUE)?;
        write_out(flags, f | MAPPED)
    })
}

/// `cudaPointerAttributes`.
#[repr(C)]
pub(crate) struct PointerAttributes {
    kind: c_int,
    device: c_int,
    device_pointer: *mut c_void,
    host_pointer: *mut c_void,
}

/// `cudaMemoryType`.
const MEMORY_UNREGISTERED: c_int = 0;
const MEMORY_HOST: c_int = 1;
const MEMORY_DEVICE: c_int = 2;
const MEMORY_MANAGED: c_int = 3;

/// `cudaPointerGetAttributes`: page-locked host memory (reachable at the
/// same address on the device), managed memory, device memory, or memory
/// CUDA does not know (`cudaMemoryTypeUnregistered`, device -2).
#[no_mangle]
pub extern "C" fn cudaPointerGetAttributes(
    attributes: *mut PointerAttributes,
    ptr: *const c_void,
) -> CudaErrorT {
    guard(|| {
        let rt = rt();
        let p = ptr as u64;
        let at = |kind, device: usize, dev: u64, host: u64| PointerAttributes {
            kind,
            device: device as c_int,
            device_pointer: dev as *mut c_void,
            host_pointer: host as *mut c_void,
        };
        let answer = if rt.host_region(p).is_some() {
            at(MEMORY_HOST, rt.current_device()?, p, p)
        } else if let Some(d) = super::managed::device_of(p) {
            at(MEMORY_MANAGED, d, p, p)
        } else if let Some(d) = rt.device_of(p) {
            at(MEMORY_DEVICE, d, p, 0)
        } else {
            PointerAttributes {
                kind: MEMORY_UNREGISTERED,
                device: -2,
                device_pointer: std::ptr::null_mut(),
                host_pointer: ptr as *mut c_void,
            }
        };
        write_out(attributes, answer)
    })
}
