//! Pitched (2-D) memory and copies between devices.
//!
//! Host rows are gathered into, or scattered from, one packed buffer, so a
//! 2-D copy is one request however many rows it has.

use std::ffi::c_void;
use std::os::raw::{c_int, c_uint};

use rcud_client::runtime::Route;
use rcud_client::session::HostSrc;
use rcud_client::{MemcpyKind, Runtime};
use rcud_proto::CudaError;

use super::memory::memcpy;
use crate::ffi::{byte_count, guard, write_out, CudaErrorT};
use crate::graph::{capture, capture_memset, MemcpyNode, MemsetNode, NodeKind};

fn rt() -> &'static Runtime {
    Runtime::global()
}

#[no_mangle]
pub extern "C" fn cudaMallocPitch(
    dev_ptr: *mut *mut c_void,
    pitch: *mut usize,
    width: usize,
    height: usize,
) -> CudaErrorT {
    guard(|| {
        if dev_ptr.is_null() || pitch.is_null() {
            return Err(CudaError::INVALID_VALUE);
        }
        let (ptr, p) = rt().malloc_pitch(width as u64, height as u64)?;
        write_out(dev_ptr, ptr as *mut c_void)?;
        write_out(pitch, p as usize)
    })
}

/// Copies `height` rows of `width` bytes from `src` (rows `spitch` apart) into
/// a packed buffer.
fn gather(src: *const u8, spitch: usize, width: usize, height: usize) -> Vec<u8> {
    let mut packed = Vec::with_capacity(width * height);
    for r in 0..height {
        // SAFETY: the cudaMemcpy2D contract makes every source row readable.
        let row = unsafe { std::slice::from_raw_parts(src.add(r * spitch), width) };
        packed.extend_from_slice(row);
    }
    packed
}

/// The application's page-locked rows that a queued 2-D host-to-device copy
/// gathers when it is sent (after the host functions queued before it).
struct PinnedRows {
    src: *const u8,
    spitch: usize,
    width: usize,
    height: usize,
}

// SAFETY: CUDA's contract for cudaMemcpy2DAsync keeps a page-locked source
// valid until the stream is synchronized (and cudaFreeHost sends every queue
// first); the rows are read by whichever thread sends the queue.
unsafe impl Send for PinnedRows {}

impl HostSrc for PinnedRows {
    fn len(&self) -> usize {
        self.width * self.height
    }

    fn bytes(&self) -> std::borrow::Cow<'_, [u8]> {
        std::borrow::Cow::Owned(gather(self.src, self.spitch, self.width, self.height))
    }
}

/// Spreads a packed buffer over rows `dpitch` apart at `dst`.
fn scatter(packed: &[u8], dst: *mut u8, dpitch: usize, width: usize) {
    for (r, row) in packed.chunks(width).enumerate() {
        // SAFETY: the cudaMemcpy2D contract makes every destination row writable.
        unsafe { std::ptr::copy_nonoverlapping(row.as_ptr(), dst.add(r * dpitch), width) };
    }
}

#[allow(clippy::too_many_arguments)]
pub(crate) fn memcpy2d(
    dst: *mut c_void,
    dpitch: usize,
    src: *const c_void,
    spitch: usize,
    width: usize,
    height: usize,
    kind: c_int,
    stream: Option<*mut c_void>,
) -> Result<(), CudaError> {
    let mkind = MemcpyKind::from_raw(kind)?;
    if width == 0 || height == 0 {
        return Ok(());
    }
    if width > dpitch || width > spitch {
        return Err(CudaError::INVALID_PITCH_VALUE);
    }
    byte_count(width.checked_mul(height).ok_or(CudaError::INVALID_VALUE)?)?;
    if dst.is_null() || src.is_null() {
        return Err(CudaError::INVALID_VALUE);
    }
    match stream {
        Some(s) => {
            let node = || {
                Ok(NodeKind::Memcpy(MemcpyNode {
                    dst: dst as u64,
                    dst_pitch: dpitch as u64,
                    dst_rows: height as u64,
                    src: src as u64,
                    src_pitch: spitch as u64,
                    src_rows: height as u64,
                    width: width as u64,
                    height: height as u64,
                    depth: 1,
                    kind,
                }))
            };
            if capture::record(s as u64, node)? {
                return Ok(());
            }
        }
        None => capture::refuse_legacy_sync()?,
    }
    let rt = rt();
    let stream = stream.map(|s| s as u64);
    let (d64, s64) = (dst as u64, src as u64);
    let (w, h) = (width as u64, height as u64);
    match rt.memcpy_route(d64, s64, mkind)? {
        Route::HostToHost => {
            if let Some(s) = stream {
                rt.stream_synchronize(s)?;
            }
            for r in 0..height {
                // SAFETY: both are host rows valid for `width` bytes by contract.
                unsafe {
                    std::ptr::copy(
                        (src as *const u8).add(r * spitch),
                        (dst as *mut u8).add(r * dpitch),
                        width,
                    )
                };
            }
            Ok(())
        }
        Route::HostToDevice(d)
            if stream.is_some()
                && spitch
                    .checked_mul(height - 1)
                    .and_then(|e| e.checked_add(width))
                    .is_some_and(|extent| rt.is_pinned(s64, extent as u64)) =>
        {
            let rows = PinnedRows {
                src: src as *const u8,
                spitch,
                width,
                height,
            };
            rt.memcpy2d_htod_async_from(d, d64, dpitch as u64, w, h, Box::new(rows))
        }
        Route::HostToDevice(d) => {
            let packed = gather(src as *const u8, spitch, width, height);
            rt.memcpy2d_htod(d, d64, dpitch as u64, w, h, &packed, stream)
        }
        Route::DeviceToHost(d) => {
            if let Some(s) = stream {
                rt.stream_synchronize(s)?;
            }
            let mut packed = vec![0u8; width * height];
            rt.memcpy2d_dtoh(d, &mut packed, s64, spitch as u64, w, h)?;
            scatter(&packed, dst as *mut u8, dpitch, width);
            Ok(())
        }
        Route::DeviceToDevice { dst: a, src: b } if a == b => {
            rt.memcpy2d_dtod(a, d64, dpitch as u64, s64, spitch as u64, w, h, stream)
        }
        Route::DeviceToDevice { .. } => {
            if let Some(s) = stream {
                rt.stream_synchronize(s)?;
            }
            for r in 0..height {
                let (dr, sr) = (d64 + (r * dpitch) as u64, s64 + (r * spitch) as u64);
                memcpy(dr as *mut c_void, sr as *const c_void, width, kind)?;
            }
            Ok(())
        }
    }
}

with_ptsz! {
    fn cudaMemcpy2D / cudaMemcpy2D_ptds (dst: *mut c_void, dpitch: usize, src: *const c_void, spitch: usize, width: usize, height: usize, kind: c_int) {
        memcpy2d(dst, dpitch, src, spitch, width, height, kind, None)
    }
}

with_ptsz! {
    #[allow(clippy::too_many_arguments)]
    fn cudaMemcpy2DAsync / cudaMemcpy2DAsync_ptsz (dst: *mut c_void, dpitch: usize, src: *const c_void, spitch: usize, width: usize, height: usize, kind: c_int, stream: *mut c_void) {
        memcpy2d(dst, dpitch, src, spitch, width, height, kind, Some(stream))
    }
}

pub(crate) fn memset2d(
    dst: *mut c_void,
    pitch: usize,
    value: c_int,
    width: usize,
    height: usize,
    stream: Option<*mut c_void>,
) -> Result<(), CudaError> {
    if width == 0 || height == 0 {
        return Ok(());
    }
    if width > pitch && height > 1 {
        return Err(CudaError::INVALID_PITCH_VALUE);
    }
    match stream {
        Some(s) => {
            let node = MemsetNode {
                dst: dst as u64,
                pitch: pitch as u64,
                value: u32::from(value as u8),
                element: 1,
                width: width as u64,
                height: height as u64,
            };
            if capture_memset(s as u64, node)? {
                return Ok(());
            }
        }
        None => capture::refuse_legacy_sync()?,
    }
    rt().memset2d(
        dst as u64,
        pitch as u64,
        value as u8,
        width as u64,
        height as u64,
        stream.map(|s| s as u64),
    )
}

with_ptsz! {
    fn cudaMemset2D / cudaMemset2D_ptds (dst: *mut c_void, pitch: usize, value: c_int, width: usize, height: usize) {
        memset2d(dst, pitch, value, width, height, None)
    }
}

with_ptsz! {
    fn cudaMemset2DAsync / cudaMemset2DAsync_ptsz (dst: *mut c_void, pitch: usize, value: c_int, width: usize, height: usize, stream: *mut c_void) {
        memset2d(dst, pitch, value, width, height, Some(stream))
    }
}

// ---- peers ------------------------------------------------------------------

#[no_mangle]
pub extern "C" fn cudaDeviceCanAccessPeer(
    can: *mut c_int,
    device: c_int,
    peer: c_int,
) -> CudaErrorT {
    guard(|| write_out(can, c_int::from(rt().can_access_peer(device, peer)?)))
}

/// `cudaDevP2PAttrPerformanceRank` .. `CudaArrayAccessSupported`.
const P2P_ATTRIBUTES: std::ops::RangeInclusive<c_int> = 1..=4;

/// `cudaDeviceGetP2PAttribute`: between two distinct devices there is no
/// peer link, so no access, no atomics and no performance rank.
#[no_mangle]
pub extern "C" fn cudaDeviceGetP2PAttribute(
    value: *mut c_int,
    attr: c_int,
    src: c_int,
    dst: c_int,
) -> CudaErrorT {
    guard(|| {
        let linked = rt()
            .can_access_peer(src, dst)
            .map_err(|_| CudaError::INVALID_DEVICE)?;
        if src == dst {
            return Err(CudaError::INVALID_DEVICE);
        }
        if !P2P_ATTRIBUTES.contains(&attr) {
            return Err(CudaError::INVALID_VALUE);
        }
        write_out(value, c_int::from(linked))
    })
}

/// Remote GPUs cannot map each other's memory: peer access is refused, as
/// CUDA refuses it between GPUs without a peer link.
#[no_mangle]
pub extern "C" fn cudaDeviceEnablePeerAccess(peer: c_int, flags: c_uint) -> CudaErrorT {
    guard(|| {
        if flags != 0 {
            return Err(CudaError::INVALID_VALUE);
        }
        let current = rt().current_device()? as c_int;
        match rt().can_access_peer(current, peer)? {
            true => Ok(()),
            false => Err(CudaError::PEER_ACCESS_UNSUPPORTED),
        }
    })
}

#[no_mangle]
pub extern "C" fn cudaDeviceDisablePeerAccess(peer: c_int) -> CudaErrorT {
    guard(|| {
        let current = rt().current_device()? as c_int;
        rt().can_access_peer(current, peer)?;
        Err(CudaError::PEER_ACCESS_NOT_ENABLED)
    })
}

#[no_mangle]
pub extern "C" fn cudaMemcpyPeer(
    dst: *mut c_void,
    dst_device: c_int,
    src: *const c_void,
    src_device: c_int,
    count: usize,
) -> CudaErrorT {
    guard(|| rt().memcpy_peer(dst_device, dst as u64, src_device, src as u64, count as u64))
}

/// Both devices' queued work runs first; the copy completes before returning.
#[no_mangle]
pub extern "C" fn cudaMemcpyPeerAsync(
    dst: *mut c_void,
    dst_device: c_int,
    src: *const c_void,
    src_device: c_int,
    count: usize,
    stream: *mut c_void,
) -> CudaErrorT {
    guard(|| {
        rt().stream_synchronize(stream as u64)?;
        rt().memcpy_peer(dst_device, dst as u64, src_device, src as u64, count as u64)
    })
}
