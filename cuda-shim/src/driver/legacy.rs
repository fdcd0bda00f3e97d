//! The pre-CUDA 3.2 ("v1") entry points that can work in rcud: the
//! unversioned `cuMemGetInfo`, `cuArrayCreate`, `cuMemcpy2D`, ... that
//! `libcuda.so.1` still exports beside the `_v2` forms `cuda.h` maps calls to.
//! In their ABI sizes, offsets and pitches are `unsigned int` and a
//! `CUdeviceptr` is a 32-bit `unsigned int`, in the functions and in the
//! structures `CUDA_MEMCPY2D_v1`, `CUDA_MEMCPY3D_v1`,
//! `CUDA_ARRAY_DESCRIPTOR_v1` and `CUDA_ARRAY3D_DESCRIPTOR_v1`.
//!
//! Each one widens its arguments and calls the `_v2` function, so there is one
//! implementation. rcud's device allocations all lie between 16 and 80 TiB
//! (see `emu/src/memory.rs`), so no 32-bit device pointer names one: the v1
//! functions that only take or return device pointers (`cuMemAlloc`,
//! `cuMemcpyHtoD`, `cuMemsetD8`, ...) stay stubs (reasons in
//! `exports/unsupported.txt`); these are the ones whose arguments are sizes,
//! arrays and host memory. A copy structure may still name a device end; see
//! [`device_end`].

use std::ffi::c_void;
use std::mem::size_of;
use std::os::raw::{c_int, c_uint};
use std::ptr;

use super::graph::Memcpy3D;
use super::memory::Memcpy2D;
use super::{context_device, out, rt, CuResult, DriverError, DriverResult};
use crate::abi::texture::{Array3DDescriptor, ArrayDescriptor};

type Stream = *mut c_void;

/// The `CUresult` of a `_v2` function as a [`DriverResult`].
fn status(r: CuResult) -> DriverResult {
    match r {
        0 => Ok(()),
        e => Err(DriverError(e)),
    }
}

/// A v1 input structure, or `None` for NULL (then the `_v2` function is
/// called with NULL and answers as it does).
fn input<'a, T>(p: *const T) -> Option<&'a T> {
    // SAFETY: the API passes NULL or a valid structure of this v1 layout
    // that outlives the call.
    unsafe { p.as_ref() }
}

/// The pointer to pass on for an optional widened structure.
fn or_null<T>(v: &Option<T>) -> *const T {
    v.as_ref().map_or(ptr::null(), |v| v as *const T)
}

/// A size for a 32-bit output. The old `cuDeviceTotalMem` of NVIDIA's driver
/// reports cards with more than 4 GiB as having 4 GiB (BOINC issue #1773,
/// and NVIDIA's forum threads it cites); it saturates rather than wraps
/// (wrapping would report 8 GiB as 0). `cuMemGetInfo` follows the same rule.
fn clamp(n: usize) -> c_uint {
    c_uint::try_from(n).unwrap_or(c_uint::MAX)
}

/// An array extent for a v1 descriptor. Unlike a memory size, a clamped
/// extent would describe a different array, and NVIDIA documents
/// `CUDA_ERROR_INVALID_VALUE` among `cuArrayGetDescriptor`'s results and no
/// clamping, so an extent that does not fit is refused. (None occurs in
/// practice: array extents are limited to far less than 2^32 elements.)
fn extent(n: usize) -> Result<c_uint, DriverError> {
    c_uint::try_from(n).map_err(|_| DriverError::INVALID_VALUE)
}

// ---- sizes ---------------------------------------------------------------------

driver_fn! { cuDeviceTotalMem (bytes: *mut c_uint, dev: c_int) {
    let mut total = 0usize;
    status(super::device::cuDeviceTotalMem_v2(&mut total, dev))?;
    out(bytes, clamp(total))
} }

driver_fn! { cuMemGetInfo (free: *mut c_uint, total: *mut c_uint) {
    let (mut f, mut t) = (0usize, 0usize);
    status(super::memory::cuMemGetInfo_v2(&mut f, &mut t))?;
    out(free, clamp(f))?;
    out(total, clamp(t))
} }

// ---- arrays ----------------------------------------------------------------------

/// `CUDA_ARRAY_DESCRIPTOR_v1`.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct ArrayDescriptorV1 {
    width: c_uint,
    height: c_uint,
    format: c_uint,
    num_channels: c_uint,
}

/// `CUDA_ARRAY3D_DESCRIPTOR_v1`.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct Array3DDescriptorV1 {
    width: c_uint,
    height: c_uint,
    depth: c_uint,
    format: c_uint,
    num_channels: c_uint,
    flags: c_uint,
}

driver_fn! { cuArrayCreate (handle: *mut *mut c_void, desc: *const ArrayDescriptorV1) {
    let wide = input(desc).map(|d| ArrayDescriptor {
        width: d.width as usize,
        height: d.height as usize,
        format: d.format,
        num_channels: d.num_channels,
    });
    status(super::texture::cuArrayCreate_v2(handle, or_null(&wide)))
} }

driver_fn! { cuArray3DCreate (handle: *mut *mut c_void, desc: *const Array3DDescriptorV1) {
    let wide = input(desc).map(|d| Array3DDescriptor {
        width: d.width as usize,
        height: d.height as usize,
        depth: d.depth as usize,
        format: d.format,
        num_channels: d.num_channels,
        flags: d.flags,
    });
    status(super::texture::cuArray3DCreate_v2(handle, or_null(&wide)))
} }

driver_fn! { cuArrayGetDescriptor (desc: *mut ArrayDescriptorV1, handle: *mut c_void) {
    let mut d = ArrayDescriptor::default();
    status(super::texture::cuArrayGetDescriptor_v2(&mut d, handle))?;
    out(desc, ArrayDescriptorV1 {
        width: extent(d.width)?,
        height: extent(d.height)?,
        format: d.format,
        num_channels: d.num_channels,
    })
} }

driver_fn! { cuArray3DGetDescriptor (desc: *mut Array3DDescriptorV1, handle: *mut c_void) {
    let mut d = Array3DDescriptor::default();
    status(super::texture::cuArray3DGetDescriptor_v2(&mut d, handle))?;
    out(desc, Array3DDescriptorV1 {
        width: extent(d.width)?,
        height: extent(d.height)?,
        depth: extent(d.depth)?,
        format: d.format,
        num_channels: d.num_channels,
        flags: d.flags,
    })
} }

// ---- linear copies to and from arrays --------------------------------------------

driver_fn! { cuMemcpyHtoA (dst: *mut c_void, offset: c_uint, src: *const c_void, count: c_uint) {
    status(super::texture::cuMemcpyHtoA_v2(dst, offset as usize, src, count as usize))
} }

driver_fn! { cuMemcpyHtoAAsync (dst: *mut c_void, offset: c_uint, src: *const c_void, count: c_uint, stream: Stream) {
    status(super::texture::cuMemcpyHtoAAsync_v2(dst, offset as usize, src, count as usize, stream))
} }

driver_fn! { cuMemcpyAtoH (dst: *mut c_void, src: *mut c_void, offset: c_uint, count: c_uint) {
    status(super::texture::cuMemcpyAtoH_v2(dst, src, offset as usize, count as usize))
} }

driver_fn! { cuMemcpyAtoHAsync (dst: *mut c_void, src: *mut c_void, offset: c_uint, count: c_uint, stream: Stream) {
    status(super::texture::cuMemcpyAtoHAsync_v2(dst, src, offset as usize, count as usize, stream))
} }

driver_fn! { cuMemcpyAtoA (dst: *mut c_void, dst_offset: c_uint, src: *mut c_void, src_offset: c_uint, count: c_uint) {
    status(super::texture::cuMemcpyAtoA_v2(dst, dst_offset as usize, src, src_offset as usize, count as usize))
} }

// ---- 2-D and 3-D copies ------------------------------------------------------------

/// `CU_MEMORYTYPE_DEVICE`.
const MEMORYTYPE_DEVICE: c_uint = 2;

/// The 64-bit address of a v1 structure's device pointer, `addr` (a
/// `CUdeviceptr_v1`) of an end of memory type `kind`. The `_v2` copies use
/// unified addressing, where an address outside every device allocation is
/// host memory; a 32-bit device pointer never lies in an rcud device
/// allocation (they are at 16 TiB and above), so passing it on unchecked
/// would copy to or from whatever host memory lies at that address. A device
/// end must therefore name a device allocation, or page-locked mapped host
/// memory (whose device address is its host address and may be below
/// 4 GiB); anything else is refused with `CUDA_ERROR_INVALID_VALUE`, as the
/// `_v2` copies refuse an address that names no allocation (`cuMemcpyHtoD_v2`,
/// `cuMemcpyDtoH_v2`) or NULL (`cuMemcpy2D_v2`, `cuMemcpy3D_v2`). Other
/// memory types (host, array, unified) pass on as they are.
fn device_end(kind: c_uint, addr: c_uint) -> Result<u64, DriverError> {
    let addr = u64::from(addr);
    let named = || rt().allocation(addr).is_some() || rt().host_region(addr).is_some();
    if kind == MEMORYTYPE_DEVICE && !named() {
        return Err(DriverError::INVALID_VALUE);
    }
    Ok(addr)
}

/// `CUDA_MEMCPY2D_v1`.
#[repr(C)]
pub struct Memcpy2DV1 {
    src_x_in_bytes: c_uint,
    src_y: c_uint,
    src_memory_type: c_uint,
    src_host: *const c_void,
    src_device: c_uint,
    src_array: *mut c_void,
    src_pitch: c_uint,
    dst_x_in_bytes: c_uint,
    dst_y: c_uint,
    dst_memory_type: c_uint,
    dst_host: *mut c_void,
    dst_device: c_uint,
    dst_array: *mut c_void,
    dst_pitch: c_uint,
    width_in_bytes: c_uint,
    height: c_uint,
}

const _: () = assert!(size_of::<Memcpy2DV1>() == 96);
const _: () = assert!(size_of::<Memcpy2D>() == 128);

/// The `_v2` structure of `p`, or `None` for NULL.
fn memcpy_2d(p: *const Memcpy2DV1) -> Result<Option<Memcpy2D>, DriverError> {
    let Some(p) = input(p) else {
        return Ok(None);
    };
    context_device()?;
    Ok(Some(Memcpy2D {
        src_x_in_bytes: p.src_x_in_bytes as usize,
        src_y: p.src_y as usize,
        src_memory_type: p.src_memory_type,
        src_host: p.src_host,
        src_device: device_end(p.src_memory_type, p.src_device)?,
        src_array: p.src_array,
        src_pitch: p.src_pitch as usize,
        dst_x_in_bytes: p.dst_x_in_bytes as usize,
        dst_y: p.dst_y as usize,
        dst_memory_type: p.dst_memory_type,
        dst_host: p.dst_host,
        dst_device: device_end(p.dst_memory_type, p.dst_device)?,
        dst_array: p.dst_array,
        dst_pitch: p.dst_pitch as usize,
        width_in_bytes: p.width_in_bytes as usize,
        height: p.height as usize,
    }))
}

driver_fn! { cuMemcpy2D (p: *const Memcpy2DV1) {
    status(super::memory::cuMemcpy2D_v2(or_null(&memcpy_2d(p)?)))
} }

driver_fn! { cuMemcpy2DUnaligned (p: *const Memcpy2DV1) {
    status(super::memory::cuMemcpy2DUnaligned_v2(or_null(&memcpy_2d(p)?)))
} }

driver_fn! { cuMemcpy2DAsync (p: *const Memcpy2DV1, stream: Stream) {
    status(super::memory::cuMemcpy2DAsync_v2(or_null(&memcpy_2d(p)?), stream))
} }

/// `CUDA_MEMCPY3D_v1`.
#[repr(C)]
pub struct Memcpy3DV1 {
    src_x_in_bytes: c_uint,
    src_y: c_uint,
    src_z: c_uint,
    src_lod: c_uint,
    src_memory_type: c_uint,
    src_host: *const c_void,
    src_device: c_uint,
    src_array: *mut c_void,
    reserved0: *mut c_void,
    src_pitch: c_uint,
    src_height: c_uint,
    dst_x_in_bytes: c_uint,
    dst_y: c_uint,
    dst_z: c_uint,
    dst_lod: c_uint,
    dst_memory_type: c_uint,
    dst_host: *mut c_void,
    dst_device: c_uint,
    dst_array: *mut c_void,
    reserved1: *mut c_void,
    dst_pitch: c_uint,
    dst_height: c_uint,
    width_in_bytes: c_uint,
    height: c_uint,
    depth: c_uint,
}

const _: () = assert!(size_of::<Memcpy3DV1>() == 144);
const _: () = assert!(size_of::<Memcpy3D>() == 200);

/// The `_v2` structure of `p`, or `None` for NULL.
fn memcpy_3d(p: *const Memcpy3DV1) -> Result<Option<Memcpy3D>, DriverError> {
    let Some(p) = input(p) else {
        return Ok(None);
    };
    context_device()?;
    Ok(Some(Memcpy3D {
        src_x_in_bytes: p.src_x_in_bytes as usize,
        src_y: p.src_y as usize,
        src_z: p.src_z as usize,
        src_lod: p.src_lod as usize,
        src_memory_type: p.src_memory_type,
        src_host: p.src_host,
        src_device: device_end(p.src_memory_type, p.src_device)?,
        src_array: p.src_array,
        reserved0: p.reserved0,
        src_pitch: p.src_pitch as usize,
        src_height: p.src_height as usize,
        dst_x_in_bytes: p.dst_x_in_bytes as usize,
        dst_y: p.dst_y as usize,
        dst_z: p.dst_z as usize,
        dst_lod: p.dst_lod as usize,
        dst_memory_type: p.dst_memory_type,
        dst_host: p.dst_host,
        dst_device: device_end(p.dst_memory_type, p.dst_device)?,
        dst_array: p.dst_array,
        reserved1: p.reserved1,
        dst_pitch: p.dst_pitch as usize,
        dst_height: p.dst_height as usize,
        width_in_bytes: p.width_in_bytes as usize,
        height: p.height as usize,
        depth: p.depth as usize,
    }))
}

driver_fn! { cuMemcpy3D (p: *const Memcpy3DV1) {
    status(super::memory::cuMemcpy3D_v2(or_null(&memcpy_3d(p)?)))
} }

driver_fn! { cuMemcpy3DAsync (p: *const Memcpy3DV1, stream: Stream) {
    status(super::memory::cuMemcpy3DAsync_v2(or_null(&memcpy_3d(p)?), stream))
} }

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_saturate_at_32_bits() {
        assert_eq!(clamp(0), 0);
        assert_eq!(clamp(0xFFFF_FFFF), 0xFFFF_FFFF);
        assert_eq!(clamp(0x1_0000_0000), 0xFFFF_FFFF);
        assert_eq!(clamp(80 << 30), 0xFFFF_FFFF);
        assert_eq!(extent(1 << 16), Ok(1 << 16));
        assert_eq!(extent(1 << 32), Err(DriverError::INVALID_VALUE));
    }

    #[test]
    fn v1_layouts_match_cuda_h() {
        // x86-64 offsets of CUDA_MEMCPY2D_v1 and CUDA_MEMCPY3D_v1.
        assert_eq!(std::mem::offset_of!(Memcpy2DV1, src_host), 16);
        assert_eq!(std::mem::offset_of!(Memcpy2DV1, src_device), 24);
        assert_eq!(std::mem::offset_of!(Memcpy2DV1, src_array), 32);
        assert_eq!(std::mem::offset_of!(Memcpy2DV1, dst_x_in_bytes), 44);
        assert_eq!(std::mem::offset_of!(Memcpy2DV1, dst_host), 56);
        assert_eq!(std::mem::offset_of!(Memcpy2DV1, height), 88);
        assert_eq!(std::mem::offset_of!(Memcpy3DV1, src_host), 24);
        assert_eq!(std::mem::offset_of!(Memcpy3DV1, src_pitch), 56);
        assert_eq!(std::mem::offset_of!(Memcpy3DV1, dst_memory_type), 80);
        assert_eq!(std::mem::offset_of!(Memcpy3DV1, depth), 136);
        assert_eq!(size_of::<ArrayDescriptorV1>(), 16);
        assert_eq!(size_of::<Array3DDescriptorV1>(), 24);
    }
}
