//! Device and page-locked host memory, copies, memsets and pointer
//! attributes. The copies and memsets are the runtime's, with unified
//! addressing deciding directions, so both APIs queue and batch alike.

use crate::graph::{capture, capture_memset, MemsetNode, NodeKind};
use rcud_proto::CudaError;
use std::ffi::c_void;
use std::os::raw::{c_int, c_uint};

use super::{context_device, initialized, out, rt, DriverError, DriverResult};
use crate::cudart::batch_copy::{self, MemcpyAttributes};
use crate::cudart::mempool::MemLocation;
use crate::cudart::{ipc, managed, memory, pitched};

/// `cudaMemcpyKind` values the runtime helpers take.
const HOST_TO_DEVICE: c_int = 1;
const DEVICE_TO_HOST: c_int = 2;
const DEVICE_TO_DEVICE: c_int = 3;
const DEFAULT: c_int = 4;

/// `CUmemorytype`.
const MEMORYTYPE_HOST: c_uint = 1;
const MEMORYTYPE_DEVICE: c_uint = 2;
const MEMORYTYPE_ARRAY: c_uint = 3;
const MEMORYTYPE_UNIFIED: c_uint = 4;

type Stream = *mut c_void;

fn ptr(p: u64) -> *mut c_void {
    p as *mut c_void
}

driver_fn! { cuMemAlloc_v2 (dptr: *mut u64, size: usize) {
    context_device()?;
    if dptr.is_null() || size == 0 {
        return Err(DriverError::INVALID_VALUE);
    }
    capture::refuse_unsafe()?;
    let p = rt().malloc(size as u64)?;
    out(dptr, p)
} }

driver_fn! { cuMemAllocPitch_v2 (dptr: *mut u64, pitch: *mut usize, width: usize, height: usize, element_size: c_uint) {
    context_device()?;
    if dptr.is_null() || pitch.is_null() || width == 0 || height == 0 || ![4, 8, 16].contains(&element_size) {
        return Err(DriverError::INVALID_VALUE);
    }
    let (p, row) = rt().malloc_pitch(width as u64, height as u64)?;
    out(dptr, p)?;
    out(pitch, row as usize)
} }

driver_fn! { cuMemAllocManaged (dptr: *mut u64, size: usize, flags: c_uint) {
    context_device()?;
    if dptr.is_null() {
        return Err(DriverError::INVALID_VALUE);
    }
    out(dptr, crate::cudart::managed::alloc(size, flags)?)
} }

// ---- managed-memory hints ----------------------------------------------------

driver_fn! { [cuMemPrefetchAsync_v2, cuMemPrefetchAsync_v2_ptsz] (p: u64, count: usize, loc: MemLocation, flags: c_uint, stream: Stream) {
    initialized()?;
    rt().stream_device(stream as u64)?;
    let to = managed::location(loc.kind, loc.id)?.ok_or(DriverError::INVALID_VALUE)?;
    if flags != 0 {
        return Err(DriverError::INVALID_VALUE);
    }
    Ok(managed::prefetch(p, count as u64, to)?)
} }

driver_fn! { [cuMemPrefetchAsync, cuMemPrefetchAsync_ptsz] (p: u64, count: usize, dev: c_int, stream: Stream) {
    initialized()?;
    rt().stream_device(stream as u64)?;
    let (kind, id) = managed::legacy_location(dev);
    let to = managed::location(kind, id)?.ok_or(DriverError::INVALID_VALUE)?;
    Ok(managed::prefetch(p, count as u64, to)?)
} }

driver_fn! { cuMemAdvise_v2 (p: u64, count: usize, advice: c_int, loc: MemLocation) {
    initialized()?;
    Ok(managed::advise(p, count as u64, advice, loc.kind, loc.id)?)
} }

driver_fn! { cuMemAdvise (p: u64, count: usize, advice: c_int, dev: c_int) {
    initialized()?;
    let (kind, id) = managed::legacy_location(dev);
    Ok(managed::advise(p, count as u64, advice, kind, id)?)
} }

driver_fn! { cuMemRangeGetAttribute (data: *mut c_void, size: usize, attribute: c_int, p: u64, count: usize) {
    initialized()?;
    Ok(managed::write_range_attribute(data, size, attribute, p, count as u64)?)
} }

driver_fn! { cuMemRangeGetAttributes (data: *mut *mut c_void, sizes: *const usize, attributes: *const c_int, n: usize, p: u64, count: usize) {
    initialized()?;
    Ok(managed::write_range_attributes(data, sizes, attributes, n, p, count as u64)?)
} }

driver_fn! { [cuStreamAttachMemAsync, cuStreamAttachMemAsync_ptsz] (stream: Stream, p: u64, length: usize, flags: c_uint) {
    initialized()?;
    Ok(managed::attach(stream as u64, p, length as u64, flags)?)
} }

driver_fn! { cuMemFree_v2 (dptr: u64) {
    context_device()?;
    capture::refuse_unsafe()?;
    if let Some(freed) = crate::graph::memory::free(dptr) {
        return Ok(freed?);
    }
    if let Some(result) = crate::cudart::managed::free(dptr) {
        return Ok(result?);
    }
    if dptr != 0 && rt().allocation(dptr).is_none_or(|(base, _, _)| base != dptr) {
        return Err(DriverError::INVALID_VALUE);
    }
    Ok(rt().free(dptr)?)
} }

driver_fn! { cuMemGetInfo_v2 (free: *mut usize, total: *mut usize) {
    context_device()?;
    let (f, t) = rt().mem_get_info()?;
    out(free, f as usize)?;
    out(total, t as usize)
} }

// ---- CUDA IPC ------------------------------------------------------------------

driver_fn! { cuIpcGetMemHandle (handle: *mut ipc::IpcMemHandle, dptr: u64) {
    context_device()?;
    Ok(ipc::get_mem_handle(handle, dptr)?)
} }

driver_fn! { [cuIpcOpenMemHandle_v2, cuIpcOpenMemHandle] (dptr: *mut u64, handle: ipc::IpcMemHandle, flags: c_uint) {
    context_device()?;
    if dptr.is_null() {
        return Err(DriverError::INVALID_VALUE);
    }
    out(dptr, ipc::open_mem_handle(&handle, flags)?)
} }

driver_fn! { cuIpcGetEventHandle (handle: *mut ipc::IpcEventHandle, event: *mut c_void) {
    context_device()?;
    Ok(ipc::get_event_handle(handle, event as u64)?)
} }

driver_fn! { cuIpcOpenEventHandle (event: *mut *mut c_void, handle: ipc::IpcEventHandle) {
    context_device()?;
    if event.is_null() {
        return Err(DriverError::INVALID_VALUE);
    }
    out(event, ipc::open_event_handle(&handle)? as *mut c_void)
} }

driver_fn! { cuIpcCloseMemHandle (dptr: u64) {
    context_device()?;
    Ok(ipc::close_mem_handle(dptr)?)
} }

driver_fn! { cuMemGetAddressRange_v2 (base: *mut u64, size: *mut usize, dptr: u64) {
    initialized()?;
    let (b, len, _) = rt().allocation(dptr).ok_or(DriverError::NOT_FOUND)?;
    if !base.is_null() {
        out(base, b)?;
    }
    if !size.is_null() {
        out(size, len as usize)?;
    }
    Ok(())
} }

// ---- page-locked host memory ----------------------------------------------

driver_fn! { cuMemAllocHost_v2 (pp: *mut *mut c_void, size: usize) {
    context_device()?;
    Ok(memory::host_alloc(pp, size, 0)?)
} }

// The pre-CUDA 3.2 form, with a 32-bit size.
driver_fn! { cuMemAllocHost (pp: *mut *mut c_void, size: c_uint) {
    context_device()?;
    Ok(memory::host_alloc(pp, size as usize, 0)?)
} }

driver_fn! { cuMemHostAlloc (pp: *mut *mut c_void, size: usize, flags: c_uint) {
    context_device()?;
    Ok(memory::host_alloc(pp, size, flags)?)
} }

driver_fn! { cuMemFreeHost (p: *mut c_void) {
    context_device()?;
    Ok(memory::free_host(p)?)
} }

// CUDA 6.5's name for the same call.
driver_fn! { [cuMemHostRegister_v2, cuMemHostRegister] (p: *mut c_void, size: usize, flags: c_uint) {
    context_device()?;
    if p.is_null() || size == 0 {
        return Err(DriverError::INVALID_VALUE);
    }
    Ok(rt().host_register(p as u64, size as u64, flags)?)
} }

driver_fn! { cuMemHostUnregister (p: *mut c_void) {
    context_device()?;
    rt().drain_all();
    Ok(rt().host_unregister(p as u64)?)
} }

driver_fn! { cuMemHostGetDevicePointer_v2 (dptr: *mut u64, p: *mut c_void, flags: c_uint) {
    context_device()?;
    out(dptr, rt().host_device_pointer(p as u64, flags)?)
} }

driver_fn! { cuMemHostGetFlags (flags: *mut c_uint, p: *mut c_void) {
    context_device()?;
    /// `CU_MEMHOSTALLOC_DEVICEMAP`: page-locked memory is always mapped now.
    const DEVICEMAP: c_uint = 0x02;
    let (_, _, f) = rt().host_region(p as u64).ok_or(DriverError::INVALID_VALUE)?;
    out(flags, f | DEVICEMAP)
} }

// ---- copies ----------------------------------------------------------------

driver_fn! { [cuMemcpy, cuMemcpy_ptds] (dst: u64, src: u64, n: usize) {
    context_device()?;
    Ok(memory::memcpy(ptr(dst), ptr(src), n, DEFAULT)?)
} }

driver_fn! { [cuMemcpyHtoD_v2, cuMemcpyHtoD_v2_ptds] (dst: u64, src: *const c_void, n: usize) {
    context_device()?;
    Ok(memory::memcpy(ptr(dst), src, n, HOST_TO_DEVICE)?)
} }

driver_fn! { [cuMemcpyDtoH_v2, cuMemcpyDtoH_v2_ptds] (dst: *mut c_void, src: u64, n: usize) {
    context_device()?;
    Ok(memory::memcpy(dst, ptr(src), n, DEVICE_TO_HOST)?)
} }

driver_fn! { [cuMemcpyDtoD_v2, cuMemcpyDtoD_v2_ptds] (dst: u64, src: u64, n: usize) {
    context_device()?;
    Ok(memory::memcpy(ptr(dst), ptr(src), n, DEVICE_TO_DEVICE)?)
} }

driver_fn! { [cuMemcpyAsync, cuMemcpyAsync_ptsz] (dst: u64, src: u64, n: usize, stream: Stream) {
    context_device()?;
    Ok(memory::memcpy_async(ptr(dst), ptr(src), n, DEFAULT, stream)?)
} }

driver_fn! { [cuMemcpyHtoDAsync_v2, cuMemcpyHtoDAsync_v2_ptsz] (dst: u64, src: *const c_void, n: usize, stream: Stream) {
    context_device()?;
    Ok(memory::memcpy_async(ptr(dst), src, n, HOST_TO_DEVICE, stream)?)
} }

driver_fn! { [cuMemcpyDtoHAsync_v2, cuMemcpyDtoHAsync_v2_ptsz] (dst: *mut c_void, src: u64, n: usize, stream: Stream) {
    context_device()?;
    Ok(memory::memcpy_async(dst, ptr(src), n, DEVICE_TO_HOST, stream)?)
} }

driver_fn! { [cuMemcpyDtoDAsync_v2, cuMemcpyDtoDAsync_v2_ptsz] (dst: u64, src: u64, n: usize, stream: Stream) {
    context_device()?;
    Ok(memory::memcpy_async(ptr(dst), ptr(src), n, DEVICE_TO_DEVICE, stream)?)
} }

fn peer(dst: u64, dst_ctx: u64, src: u64, src_ctx: u64, n: usize) -> DriverResult {
    initialized()?;
    let dd = rt().context_info(dst_ctx)?.device;
    let sd = rt().context_info(src_ctx)?.device;
    Ok(rt().memcpy_peer(dd as c_int, dst, sd as c_int, src, n as u64)?)
}

driver_fn! { [cuMemcpyPeer, cuMemcpyPeer_ptds] (dst: u64, dst_ctx: u64, src: u64, src_ctx: u64, n: usize) {
    peer(dst, dst_ctx, src, src_ctx, n)
} }

// Ordered after earlier work of `stream` by waiting for it: copies between
// GPUs go through the servers, never through a queue.
driver_fn! { [cuMemcpyPeerAsync, cuMemcpyPeerAsync_ptsz] (dst: u64, dst_ctx: u64, src: u64, src_ctx: u64, n: usize, stream: Stream) {
    initialized()?;
    rt().stream_synchronize(stream as u64)?;
    peer(dst, dst_ctx, src, src_ctx, n)
} }

/// `CUDA_MEMCPY2D`.
#[repr(C)]
pub struct Memcpy2D {
    pub(super) src_x_in_bytes: usize,
    pub(super) src_y: usize,
    pub(super) src_memory_type: c_uint,
    pub(super) src_host: *const c_void,
    pub(super) src_device: u64,
    pub(super) src_array: *mut c_void,
    pub(super) src_pitch: usize,
    pub(super) dst_x_in_bytes: usize,
    pub(super) dst_y: usize,
    pub(super) dst_memory_type: c_uint,
    pub(super) dst_host: *mut c_void,
    pub(super) dst_device: u64,
    pub(super) dst_array: *mut c_void,
    pub(super) dst_pitch: usize,
    pub(super) width_in_bytes: usize,
    pub(super) height: usize,
}

/// The address and row pitch of one end of a 2-D copy: (x, y) into its
/// memory; an array end has its own pitch, and the copy must fit in it.
fn copy_end(
    kind: c_uint,
    (host, device, array): (u64, u64, *mut c_void),
    (x, y): (usize, usize),
    (pitch, width, height): (usize, usize, usize),
) -> Result<(u64, usize), DriverError> {
    let base = match kind {
        MEMORYTYPE_HOST => host,
        MEMORYTYPE_DEVICE | MEMORYTYPE_UNIFIED => device,
        MEMORYTYPE_ARRAY => {
            let a = array as u64;
            if width > 0 && height > 0 {
                let far = |v: usize, n: usize| (v + n - 1) as u64;
                crate::image::array_at(a, far(x, width), far(y, height), 0)?;
            }
            let (at, pitch, _) = crate::image::array_at(a, x as u64, y as u64, 0)?;
            return Ok((at, pitch as usize));
        }
        _ => return Err(DriverError::INVALID_VALUE),
    };
    let pitch = pitch.max(width);
    let offset = y.checked_mul(pitch).and_then(|o| o.checked_add(x));
    let at = offset
        .and_then(|o| base.checked_add(o as u64))
        .ok_or(DriverError::INVALID_VALUE)?;
    Ok((at, pitch))
}

fn memcpy_2d(p: *const Memcpy2D, stream: Option<Stream>) -> DriverResult {
    context_device()?;
    if p.is_null() {
        return Err(DriverError::INVALID_VALUE);
    }
    // SAFETY: non-NULL, and the API passes a valid CUDA_MEMCPY2D.
    let p = unsafe { &*p };
    let (w, h) = (p.width_in_bytes, p.height);
    let (src, spitch) = copy_end(
        p.src_memory_type,
        (p.src_host as u64, p.src_device, p.src_array),
        (p.src_x_in_bytes, p.src_y),
        (p.src_pitch, w, h),
    )?;
    let (dst, dpitch) = copy_end(
        p.dst_memory_type,
        (p.dst_host as u64, p.dst_device, p.dst_array),
        (p.dst_x_in_bytes, p.dst_y),
        (p.dst_pitch, w, h),
    )?;
    Ok(pitched::memcpy2d(
        ptr(dst),
        dpitch,
        ptr(src),
        spitch,
        w,
        h,
        DEFAULT,
        stream,
    )?)
}

driver_fn! { [cuMemcpy2D_v2, cuMemcpy2DUnaligned_v2, cuMemcpy2D_v2_ptds, cuMemcpy2DUnaligned_v2_ptds] (p: *const Memcpy2D) {
    memcpy_2d(p, None)
} }

driver_fn! { [cuMemcpy2DAsync_v2, cuMemcpy2DAsync_v2_ptsz] (p: *const Memcpy2D, stream: Stream) {
    memcpy_2d(p, Some(stream))
} }

/// `cuMemcpy3D`: the copy node of the graph layer, captured on a
/// capturing stream, else run as 2-D copies slice by slice.
fn memcpy_3d(p: *const super::graph::Memcpy3D, stream: Option<Stream>) -> DriverResult {
    context_device()?;
    if let Some(s) = stream {
        let node = || super::graph::memcpy_kind(p).map_err(|e| CudaError(e.0 as u32));
        if capture::record(s as u64, node)? {
            return Ok(());
        }
    } else {
        capture::refuse_legacy_sync()?;
    }
    let NodeKind::Memcpy(copy) = super::graph::memcpy_kind(p)? else {
        return Err(DriverError::INVALID_VALUE);
    };
    Ok(crate::graph::exec::run_copy(
        &copy,
        stream.map(|s| s as u64),
    )?)
}

driver_fn! { [cuMemcpy3D_v2, cuMemcpy3D_v2_ptds] (p: *const super::graph::Memcpy3D) {
    memcpy_3d(p, None)
} }

driver_fn! { [cuMemcpy3DAsync_v2, cuMemcpy3DAsync_v2_ptsz] (p: *const super::graph::Memcpy3D, stream: Stream) {
    memcpy_3d(p, Some(stream))
} }

// `CUDA_MEMCPY3D_PEER` is `CUDA_MEMCPY3D` with the reserved words naming the
// two contexts; with unified addressing the addresses say the devices.
driver_fn! { [cuMemcpy3DPeer, cuMemcpy3DPeer_ptds] (p: *const super::graph::Memcpy3D) {
    memcpy_3d(p, None)
} }

driver_fn! { [cuMemcpy3DPeerAsync, cuMemcpy3DPeerAsync_ptsz] (p: *const super::graph::Memcpy3D, stream: Stream) {
    memcpy_3d(p, Some(stream))
} }

// ---- batched and attributed copies (the runtime's implementation) ----------

fn batch_async(
    (dsts, srcs, sizes, count): (*const u64, *const u64, *const usize, usize),
    (attrs, idxs, num_attrs): (*const MemcpyAttributes, *const usize, usize),
    stream: Stream,
) -> DriverResult {
    context_device()?;
    // SAFETY: the API passes arrays of `count` and `num_attrs` entries.
    let (copies, attrs, idxs) = unsafe {
        (
            batch_copy::copies(dsts, srcs, sizes, count)?,
            batch_copy::slice(attrs, num_attrs)?,
            batch_copy::slice(idxs, num_attrs)?,
        )
    };
    Ok(batch_copy::batch(&copies, attrs, idxs, stream as u64)?)
}

// CUDA 12.8's form reports the failing copy; rcud's errors concern the batch
// as a whole (`SIZE_MAX`), as the driver reports errors that are not about
// one copy.
driver_fn! { [cuMemcpyBatchAsync, cuMemcpyBatchAsync_ptsz] (dsts: *const u64, srcs: *const u64, sizes: *const usize, count: usize, attrs: *const MemcpyAttributes, idxs: *const usize, num_attrs: usize, fail_idx: *mut usize, stream: Stream) {
    let r = batch_async((dsts, srcs, sizes, count), (attrs, idxs, num_attrs), stream);
    if r.is_err() && !fail_idx.is_null() {
        // SAFETY: non-NULL, and the API passes a writable size_t.
        unsafe { *fail_idx = usize::MAX };
    }
    r
} }

driver_fn! { [cuMemcpyBatchAsync_v2, cuMemcpyBatchAsync_v2_ptsz] (dsts: *const u64, srcs: *const u64, sizes: *const usize, count: usize, attrs: *const MemcpyAttributes, idxs: *const usize, num_attrs: usize, stream: Stream) {
    batch_async((dsts, srcs, sizes, count), (attrs, idxs, num_attrs), stream)
} }

driver_fn! { [cuMemcpyWithAttributesAsync, cuMemcpyWithAttributesAsync_ptsz] (dst: u64, src: u64, size: usize, attr: *const MemcpyAttributes, stream: Stream) {
    batch_async((&dst, &src, &size, 1), (attr, &0, 1), stream)
} }

fn batch_3d_async(
    ops: *const batch_copy::Memcpy3DBatchOp,
    count: usize,
    flags: u64,
    stream: Stream,
) -> DriverResult {
    context_device()?;
    // SAFETY: the API passes `count` operations.
    let ops = unsafe { batch_copy::slice(ops, count)? };
    Ok(batch_copy::batch_3d(ops, flags, stream as u64)?)
}

driver_fn! { [cuMemcpy3DBatchAsync, cuMemcpy3DBatchAsync_ptsz] (count: usize, ops: *const batch_copy::Memcpy3DBatchOp, fail_idx: *mut usize, flags: u64, stream: Stream) {
    let r = batch_3d_async(ops, count, flags, stream);
    if r.is_err() && !fail_idx.is_null() {
        // SAFETY: non-NULL, and the API passes a writable size_t.
        unsafe { *fail_idx = usize::MAX };
    }
    r
} }

driver_fn! { [cuMemcpy3DBatchAsync_v2, cuMemcpy3DBatchAsync_v2_ptsz] (count: usize, ops: *const batch_copy::Memcpy3DBatchOp, flags: u64, stream: Stream) {
    batch_3d_async(ops, count, flags, stream)
} }

driver_fn! { [cuMemcpy3DWithAttributesAsync, cuMemcpy3DWithAttributesAsync_ptsz] (op: *const batch_copy::Memcpy3DBatchOp, flags: u64, stream: Stream) {
    if op.is_null() {
        return Err(DriverError::INVALID_VALUE);
    }
    batch_3d_async(op, 1, flags, stream)
} }

// ---- memsets ---------------------------------------------------------------

/// Fills `count` elements of `width` bytes with `value`: a byte memset when
/// every byte of the value is the same, else the filled bytes are copied.
fn memset_elements(
    dst: u64,
    value: u32,
    width: usize,
    count: usize,
    stream: Option<Stream>,
) -> DriverResult {
    context_device()?;
    if !dst.is_multiple_of(width as u64) {
        return Err(DriverError::INVALID_VALUE);
    }
    let bytes = value.to_le_bytes();
    let element = &bytes[..width];
    let len = count.checked_mul(width).ok_or(DriverError::INVALID_VALUE)?;
    if let Some(s) = stream {
        // Captured as a memset node: the pattern is not taken from memory.
        let node = MemsetNode {
            dst,
            pitch: len as u64,
            value,
            element: width as u32,
            width: count as u64,
            height: 1,
        };
        if count > 0 && capture_memset(s as u64, node)? {
            return Ok(());
        }
    }
    if element.iter().all(|&b| b == element[0]) {
        return Ok(match stream {
            Some(s) => memory::memset_async(ptr(dst), c_int::from(element[0]), len, s),
            None => memory::memset(ptr(dst), c_int::from(element[0]), len),
        }?);
    }
    let pattern: Vec<u8> = element.iter().copied().cycle().take(len).collect();
    let src = pattern.as_ptr() as *const c_void;
    // Pageable source: the bytes are taken before the call returns.
    Ok(match stream {
        Some(s) => memory::memcpy_async(ptr(dst), src, len, HOST_TO_DEVICE, s),
        None => memory::memcpy(ptr(dst), src, len, HOST_TO_DEVICE),
    }?)
}

driver_fn! { [cuMemsetD8_v2, cuMemsetD8_v2_ptds] (dst: u64, value: u8, n: usize) {
    memset_elements(dst, u32::from(value), 1, n, None)
} }

driver_fn! { [cuMemsetD16_v2, cuMemsetD16_v2_ptds] (dst: u64, value: u16, n: usize) {
    memset_elements(dst, u32::from(value), 2, n, None)
} }

driver_fn! { [cuMemsetD32_v2, cuMemsetD32_v2_ptds] (dst: u64, value: u32, n: usize) {
    memset_elements(dst, value, 4, n, None)
} }

driver_fn! { [cuMemsetD8Async, cuMemsetD8Async_ptsz] (dst: u64, value: u8, n: usize, stream: Stream) {
    memset_elements(dst, u32::from(value), 1, n, Some(stream))
} }

driver_fn! { [cuMemsetD16Async, cuMemsetD16Async_ptsz] (dst: u64, value: u16, n: usize, stream: Stream) {
    memset_elements(dst, u32::from(value), 2, n, Some(stream))
} }

driver_fn! { [cuMemsetD32Async, cuMemsetD32Async_ptsz] (dst: u64, value: u32, n: usize, stream: Stream) {
    memset_elements(dst, value, 4, n, Some(stream))
} }

/// 2-D memsets: row by row unless the value is one repeated byte.
fn memset_2d(
    dst: u64,
    pitch: usize,
    value: u32,
    width: usize,
    w: usize,
    h: usize,
    stream: Option<Stream>,
) -> DriverResult {
    context_device()?;
    let bytes = value.to_le_bytes();
    if bytes[..width].iter().all(|&b| b == bytes[0]) {
        let row = w.checked_mul(width).ok_or(DriverError::INVALID_VALUE)?;
        return Ok(pitched::memset2d(
            ptr(dst),
            pitch,
            c_int::from(bytes[0]),
            row,
            h,
            stream,
        )?);
    }
    for y in 0..h {
        let row = dst + (y * pitch) as u64;
        memset_elements(row, value, width, w, stream)?;
    }
    Ok(())
}

driver_fn! { [cuMemsetD2D8_v2, cuMemsetD2D8_v2_ptds] (dst: u64, pitch: usize, value: u8, w: usize, h: usize) {
    memset_2d(dst, pitch, u32::from(value), 1, w, h, None)
} }

driver_fn! { [cuMemsetD2D16_v2, cuMemsetD2D16_v2_ptds] (dst: u64, pitch: usize, value: u16, w: usize, h: usize) {
    memset_2d(dst, pitch, u32::from(value), 2, w, h, None)
} }

driver_fn! { [cuMemsetD2D32_v2, cuMemsetD2D32_v2_ptds] (dst: u64, pitch: usize, value: u32, w: usize, h: usize) {
    memset_2d(dst, pitch, value, 4, w, h, None)
} }

driver_fn! { [cuMemsetD2D8Async, cuMemsetD2D8Async_ptsz] (dst: u64, pitch: usize, value: u8, w: usize, h: usize, stream: Stream) {
    memset_2d(dst, pitch, u32::from(value), 1, w, h, Some(stream))
} }

driver_fn! { [cuMemsetD2D16Async, cuMemsetD2D16Async_ptsz] (dst: u64, pitch: usize, value: u16, w: usize, h: usize, stream: Stream) {
    memset_2d(dst, pitch, u32::from(value), 2, w, h, Some(stream))
} }

driver_fn! { [cuMemsetD2D32Async, cuMemsetD2D32Async_ptsz] (dst: u64, pitch: usize, value: u32, w: usize, h: usize, stream: Stream) {
    memset_2d(dst, pitch, value, 4, w, h, Some(stream))
} }

// ---- pointer attributes ------------------------------------------------------

/// `CUpointer_attribute` values answered.
mod attr {
    pub(super) const CONTEXT: i32 = 1;
    pub(super) const MEMORY_TYPE: i32 = 2;
    pub(super) const DEVICE_POINTER: i32 = 3;
    pub(super) const HOST_POINTER: i32 = 4;
    pub(super) const SYNC_MEMOPS: i32 = 6;
    pub(super) const BUFFER_ID: i32 = 7;
    pub(super) const IS_MANAGED: i32 = 8;
    pub(super) const DEVICE_ORDINAL: i32 = 9;
    pub(super) const IS_LEGACY_CUDA_IPC_CAPABLE: i32 = 10;
    pub(super) const RANGE_START_ADDR: i32 = 11;
    pub(super) const RANGE_SIZE: i32 = 12;
    pub(super) const MAPPED: i32 = 13;
    pub(super) const ALLOWED_HANDLE_TYPES: i32 = 14;
    pub(super) const IS_GPU_DIRECT_RDMA_CAPABLE: i32 = 15;
    pub(super) const ACCESS_FLAGS: i32 = 16;
    pub(super) const MEMPOOL_HANDLE: i32 = 17;
    pub(super) const MAPPING_SIZE: i32 = 18;
    pub(super) const MAPPING_BASE_ADDR: i32 = 19;
    pub(super) const MEMORY_BLOCK_ID: i32 = 20;
    pub(super) const IS_HW_DECOMPRESS_CAPABLE: i32 = 21;
    pub(super) const LOCALITY_DOMAIN_ORDINAL: i32 = 22;
}

/// One attribute's value, in the C type the driver writes for it.
enum AttrValue {
    Bool(bool),
    U32(u32),
    I32(i32),
    U64(u64),
}

/// What `ptr` is: device memory (base, length, device) or page-locked host
/// memory (base, length).
enum Pointee {
    Device(u64, u64, usize),
    Host(u64, u64),
}

fn pointee(p: u64) -> Option<Pointee> {
    if let Some((b, len, d)) = rt().allocation(p) {
        return Some(Pointee::Device(b, len, d));
    }
    rt().host_region(p).map(|(b, len, _)| Pointee::Host(b, len))
}

fn attribute(attribute: i32, p: u64) -> Result<AttrValue, DriverError> {
    use AttrValue::*;
    let target = pointee(p);
    let known = target.is_some();
    let device = match target {
        Some(Pointee::Device(_, _, d)) => Some(d),
        _ => None,
    };
    Ok(match (attribute, target) {
        (attr::MEMORY_TYPE, Some(Pointee::Device(..))) => U32(MEMORYTYPE_DEVICE),
        (attr::MEMORY_TYPE, Some(Pointee::Host(..))) => U32(MEMORYTYPE_HOST),
        (attr::CONTEXT, Some(_)) => U64(rt().primary_context(device.unwrap_or(0) as c_int)?),
        (attr::DEVICE_POINTER | attr::HOST_POINTER, Some(Pointee::Host(..))) => U64(p),
        (attr::DEVICE_POINTER, Some(Pointee::Device(..))) => U64(p),
        // Device memory has no host address (the runtime's `hostPointer` is
        // then NULL, through the multi-attribute query).
        (attr::HOST_POINTER, Some(Pointee::Device(..)))
            if crate::cudart::managed::device_of(p).is_none() =>
        {
            return Err(DriverError::INVALID_VALUE)
        }
        (attr::DEVICE_ORDINAL, Some(_)) => I32(device.unwrap_or(0) as i32),
        (attr::RANGE_START_ADDR, Some(Pointee::Device(b, ..) | Pointee::Host(b, _))) => U64(b),
        (attr::RANGE_SIZE, Some(Pointee::Device(_, len, _) | Pointee::Host(_, len))) => U64(len),
        (attr::BUFFER_ID, Some(Pointee::Device(b, ..) | Pointee::Host(b, _))) => U64(b),
        (attr::SYNC_MEMOPS, Some(_)) => Bool(true),
        (attr::MAPPED, Some(_)) => Bool(true),
        (attr::IS_MANAGED, _) => Bool(crate::cudart::managed::device_of(p).is_some()),
        // Managed memory has its host mirror at the same address.
        (attr::HOST_POINTER, Some(Pointee::Device(..))) => U64(p),
        (attr::IS_LEGACY_CUDA_IPC_CAPABLE | attr::IS_GPU_DIRECT_RDMA_CAPABLE, _) => Bool(false),
        (attr::ALLOWED_HANDLE_TYPES, _) => U64(0),
        // CU_POINTER_ATTRIBUTE_ACCESS_FLAG_READWRITE.
        (attr::ACCESS_FLAGS, Some(_)) => U32(3),
        (attr::MEMPOOL_HANDLE, Some(_)) => U64(0),
        // One mapping per allocation, its base its process-wide id.
        (attr::MAPPING_SIZE, Some(Pointee::Device(_, len, _) | Pointee::Host(_, len))) => U64(len),
        (
            attr::MAPPING_BASE_ADDR | attr::MEMORY_BLOCK_ID,
            Some(Pointee::Device(b, ..) | Pointee::Host(b, _)),
        ) => U64(b),
        (attr::IS_HW_DECOMPRESS_CAPABLE, _) => Bool(false),
        // Not localized to a locality domain.
        (attr::LOCALITY_DOMAIN_ORDINAL, Some(_)) => I32(-1),
        (a, _) if known || a > attr::LOCALITY_DOMAIN_ORDINAL + 4 => {
            tracing::warn!("cuPointerGetAttribute: attribute {a} is not supported by rcud");
            return Err(DriverError::NOT_SUPPORTED);
        }
        _ => return Err(DriverError::INVALID_VALUE),
    })
}

fn write_attr(data: *mut c_void, value: AttrValue) -> DriverResult {
    match value {
        // The driver's booleans are 32-bit: NVIDIA's runtime passes an
        // uninitialised `unsigned int` for IS_MANAGED and reads all of it.
        AttrValue::Bool(v) => out(data as *mut u32, u32::from(v)),
        AttrValue::U32(v) => out(data as *mut u32, v),
        AttrValue::I32(v) => out(data as *mut i32, v),
        AttrValue::U64(v) => out(data as *mut u64, v),
    }
}

driver_fn! { cuPointerGetAttribute (data: *mut c_void, attr: c_int, p: u64) {
    initialized()?;
    write_attr(data, attribute(attr, p)?)
} }

// Unlike the single query, unknown pointers are not an error here: their
// attributes read as zero, as the driver does for memory it does not know.
driver_fn! { cuPointerGetAttributes (count: c_uint, attrs: *const c_int, data: *mut *mut c_void, p: u64) {
    initialized()?;
    if attrs.is_null() || data.is_null() {
        return Err(DriverError::INVALID_VALUE);
    }
    for i in 0..count as usize {
        // SAFETY: the API passes `count` attributes and `count` output
        // pointers.
        let (a, slot) = unsafe { (*attrs.add(i), *data.add(i)) };
        let value = match attribute(a, p) {
            Ok(v) => v,
            Err(DriverError::INVALID_VALUE) if a == attr::MEMORY_TYPE => AttrValue::U32(0),
            Err(DriverError::INVALID_VALUE) if a == attr::DEVICE_ORDINAL => AttrValue::I32(-2),
            // Memory CUDA does not know is the host's, at its own address.
            Err(DriverError::INVALID_VALUE) if a == attr::HOST_POINTER && pointee(p).is_none() => {
                AttrValue::U64(p)
            }
            Err(DriverError::INVALID_VALUE) => AttrValue::U64(0),
            Err(e) => return Err(e),
        };
        // A NULL slot asks for nothing.
        if !slot.is_null() {
            write_attr(slot, value)?;
        }
    }
    Ok(())
} }

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_2d_copy_end_is_its_base_plus_rows_and_columns() {
        let null = std::ptr::null_mut();
        assert_eq!(
            copy_end(MEMORYTYPE_HOST, (0x1000, 0, null), (4, 2), (256, 8, 1)).ok(),
            Some((0x1000 + 516, 256))
        );
        // A pitch smaller than the row is the row.
        assert_eq!(
            copy_end(MEMORYTYPE_DEVICE, (0, 0x8000, null), (0, 1), (16, 64, 1)).ok(),
            Some((0x8040, 64))
        );
        // No such array.
        assert_eq!(
            copy_end(MEMORYTYPE_ARRAY, (0, 0, null), (0, 0), (0, 1, 1)),
            Err(DriverError::INVALID_HANDLE)
        );
        assert_eq!(
            copy_end(9, (0, 0, null), (0, 0), (0, 0, 0)),
            Err(DriverError::INVALID_VALUE)
        );
        assert_eq!(
            copy_end(MEMORYTYPE_HOST, (u64::MAX, 0, null), (1, 0), (0, 1, 1)),
            Err(DriverError::INVALID_VALUE)
        );
    }
}
