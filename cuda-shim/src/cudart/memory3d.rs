//! 3-D linear memory: `cudaMalloc3D`, `cudaMemset3D`, `cudaMemcpy3D` and
//! their asynchronous and peer forms, over pitched allocations. A 3-D copy
//! is the graph layer's copy node ([`crate::graph::MemcpyNode`]): captured
//! as one on a capturing stream, else run slice by slice as 2-D copies.
//! Either end may be a CUDA array (`crate::image`).

use std::ffi::c_void;
use std::os::raw::c_int;

use rcud_client::Runtime;
use rcud_proto::CudaError;

use super::graph::{memcpy_kind, Extent, Memcpy3DParms, PitchedPtr, Pos};
use crate::ffi::{guard, write_out, CudaErrorT};
use crate::graph::{capture, exec, NodeKind};

fn rt() -> &'static Runtime {
    Runtime::global()
}

#[no_mangle]
pub extern "C" fn cudaMalloc3D(pitched: *mut PitchedPtr, extent: Extent) -> CudaErrorT {
    guard(|| {
        if pitched.is_null() {
            return Err(CudaError::INVALID_VALUE);
        }
        capture::refuse_unsafe()?;
        let rows = extent
            .height
            .max(1)
            .checked_mul(extent.depth.max(1))
            .ok_or(CudaError::INVALID_VALUE)?;
        let (ptr, pitch) = rt().malloc_pitch(extent.width as u64, rows as u64)?;
        write_out(
            pitched,
            PitchedPtr {
                ptr: ptr as *mut c_void,
                pitch: pitch as usize,
                xsize: extent.width,
                ysize: extent.height,
            },
        )
    })
}

/// `cudaMemset3D`: `depth` slices of `height` rows of `width` bytes; one
/// 2-D memset when the slices lie back to back.
fn memset3d(
    p: PitchedPtr,
    value: c_int,
    extent: Extent,
    stream: Option<*mut c_void>,
) -> Result<(), CudaError> {
    if extent.width == 0 || extent.height == 0 || extent.depth == 0 {
        return Ok(());
    }
    if p.ptr.is_null() || extent.width > p.pitch {
        return Err(CudaError::INVALID_VALUE);
    }
    let slice_rows = p.ysize.max(extent.height);
    let slice = p
        .pitch
        .checked_mul(slice_rows)
        .ok_or(CudaError::INVALID_VALUE)?;
    if slice_rows == extent.height {
        let rows = extent
            .height
            .checked_mul(extent.depth)
            .ok_or(CudaError::INVALID_VALUE)?;
        return super::pitched::memset2d(p.ptr, p.pitch, value, extent.width, rows, stream);
    }
    for z in 0..extent.depth {
        let at = (p.ptr as usize)
            .checked_add(z.checked_mul(slice).ok_or(CudaError::INVALID_VALUE)?)
            .ok_or(CudaError::INVALID_VALUE)?;
        super::pitched::memset2d(
            at as *mut c_void,
            p.pitch,
            value,
            extent.width,
            extent.height,
            stream,
        )?;
    }
    Ok(())
}

with_ptsz! {
    fn cudaMemset3D / cudaMemset3D_ptds (p: PitchedPtr, value: c_int, extent: Extent) {
        memset3d(p, value, extent, None)
    }
}

with_ptsz! {
    fn cudaMemset3DAsync / cudaMemset3DAsync_ptsz (p: PitchedPtr, value: c_int, extent: Extent, stream: *mut c_void) {
        memset3d(p, value, extent, Some(stream))
    }
}

/// `cudaMemcpy3D` and `cudaMemcpy3DAsync`.
pub(crate) fn memcpy3d(p: *const Memcpy3DParms, stream: Option<u64>) -> Result<(), CudaError> {
    match stream {
        Some(s) => {
            if capture::record(s, || memcpy_kind(p))? {
                return Ok(());
            }
            rt().stream_device(s)?;
        }
        None => capture::refuse_legacy_sync()?,
    }
    let NodeKind::Memcpy(copy) = memcpy_kind(p)? else {
        return Err(CudaError::INVALID_VALUE);
    };
    exec::run_copy(&copy, stream)
}

with_ptsz! {
    fn cudaMemcpy3D / cudaMemcpy3D_ptds (p: *const Memcpy3DParms) {
        memcpy3d(p, None)
    }
}

with_ptsz! {
    fn cudaMemcpy3DAsync / cudaMemcpy3DAsync_ptsz (p: *const Memcpy3DParms, stream: *mut c_void) {
        memcpy3d(p, Some(stream as u64))
    }
}

/// `cudaMemcpy3DPeerParms`.
#[repr(C)]
pub(crate) struct Memcpy3DPeerParms {
    src_array: *mut c_void,
    src_pos: Pos,
    src_ptr: PitchedPtr,
    src_device: c_int,
    dst_array: *mut c_void,
    dst_pos: Pos,
    dst_ptr: PitchedPtr,
    dst_device: c_int,
    extent: Extent,
}

/// `cudaMemcpyDefault`: with unified addressing, the devices follow from
/// the addresses.
const COPY_DEFAULT: c_int = 4;

/// A peer copy is a 3-D copy whose devices the addresses name; the named
/// devices must exist.
fn memcpy3d_peer(p: *const Memcpy3DPeerParms, stream: Option<u64>) -> Result<(), CudaError> {
    // SAFETY: the API passes a valid structure or NULL.
    let p = unsafe { p.as_ref() }.ok_or(CudaError::INVALID_VALUE)?;
    rt().props(p.src_device)?;
    rt().props(p.dst_device)?;
    let parms = Memcpy3DParms::new(
        (p.src_array, p.src_pos, p.src_ptr),
        (p.dst_array, p.dst_pos, p.dst_ptr),
        p.extent,
        COPY_DEFAULT,
    );
    memcpy3d(&parms, stream)
}

with_ptsz! {
    fn cudaMemcpy3DPeer / cudaMemcpy3DPeer_ptds (p: *const Memcpy3DPeerParms) {
        memcpy3d_peer(p, None)
    }
}

with_ptsz! {
    fn cudaMemcpy3DPeerAsync / cudaMemcpy3DPeerAsync_ptsz (p: *const Memcpy3DPeerParms, stream: *mut c_void) {
        memcpy3d_peer(p, Some(stream as u64))
    }
}
