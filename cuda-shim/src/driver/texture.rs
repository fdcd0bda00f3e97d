//! The driver API of CUDA arrays, texture objects and surface objects over
//! [`crate::image`], which the runtime shares: NVIDIA's static runtime
//! turns `cudaMallocArray` into `cuArrayCreate`, `cudaCreateTextureObject`
//! into `cuTexObjectCreate`, and so on.

use std::ffi::c_void;
use std::os::raw::{c_int, c_uint};

use rcud_proto::texture::{ChannelKind, Filter};

use super::{context_device, out, DriverError, DriverResult};
use crate::abi::texture::{
    Array3DDescriptor, ArrayDescriptor, DrvFormat, DrvTextureDesc, ResourceDesc, ResourceViewDesc,
};
use crate::cudart::pitched::memcpy2d;
use crate::image::{self, Format, Sampling};

/// `CUarray_format` values of plain channels.
const FORMATS: &[(c_uint, u32, ChannelKind)] = &[
    (0x01, 8, ChannelKind::Unsigned),
    (0x02, 16, ChannelKind::Unsigned),
    (0x03, 32, ChannelKind::Unsigned),
    (0x08, 8, ChannelKind::Signed),
    (0x09, 16, ChannelKind::Signed),
    (0x0a, 32, ChannelKind::Signed),
    (0x10, 16, ChannelKind::Float),
    (0x20, 32, ChannelKind::Float),
];

/// `CU_TRSF_*` texture flags.
const TRSF_READ_AS_INTEGER: c_uint = 0x01;
const TRSF_NORMALIZED_COORDINATES: c_uint = 0x02;
const TRSF_SRGB: c_uint = 0x10;
const TRSF_DISABLE_TRILINEAR_OPTIMIZATION: c_uint = 0x20;
const TRSF_SEAMLESS_CUBEMAP: c_uint = 0x40;

/// `cudaMemcpyDefault`: the addresses say the direction.
const COPY_DEFAULT: c_int = 4;

pub(super) fn format_of(format: c_uint, channels: c_uint) -> Result<Format, DriverError> {
    let &(_, bits, kind) = FORMATS
        .iter()
        .find(|f| f.0 == format)
        .ok_or(DriverError::INVALID_VALUE)?;
    Format::new(channels, bits, kind).map_err(|_| DriverError::INVALID_VALUE)
}

pub(super) fn format_code(f: Format) -> c_uint {
    FORMATS
        .iter()
        .find(|e| e.1 == u32::from(f.bits) && e.2 == f.kind)
        .map_or(0, |e| e.0)
}

fn read<'a, T>(p: *const T) -> Result<&'a T, DriverError> {
    // SAFETY: the API passes a valid structure or NULL.
    unsafe { p.as_ref() }.ok_or(DriverError::INVALID_VALUE)
}

driver_fn! { cuDeviceGetTexture1DLinearMaxWidth (width: *mut usize, format: c_uint, channels: c_uint, dev: c_int) {
    let dev = super::device(dev)?;
    format_of(format, channels)?;
    out(width, crate::cudart::texture::texture_1d_linear_max_width(dev)?)
} }

// No array here is multi-planar, sparse or mapped later: see the runtime's.
driver_fn! { cuArrayGetPlane (plane: *mut *mut c_void, array: *mut c_void, _index: c_uint) {
    context_device()?;
    Ok(crate::cudart::texture::array_special(plane as *const c_void, array as u64)?)
} }

driver_fn! { cuArrayGetSparseProperties (props: *mut c_void, array: *mut c_void) {
    context_device()?;
    Ok(crate::cudart::texture::array_special(props, array as u64)?)
} }

driver_fn! { cuArrayGetMemoryRequirements (requirements: *mut c_void, array: *mut c_void, dev: c_int) {
    super::device(dev)?;
    Ok(crate::cudart::texture::array_special(requirements, array as u64)?)
} }

driver_fn! { cuArrayCreate_v2 (handle: *mut *mut c_void, desc: *const ArrayDescriptor) {
    let device = context_device()?;
    let d = read(desc)?;
    if handle.is_null() {
        return Err(DriverError::INVALID_VALUE);
    }
    let format = format_of(d.format, d.num_channels)?;
    let h = image::create_array(device, format, d.width as u64, d.height as u64, 0, 0)?;
    out(handle, h as *mut c_void)
} }

driver_fn! { cuArray3DCreate_v2 (handle: *mut *mut c_void, desc: *const Array3DDescriptor) {
    let device = context_device()?;
    let d = read(desc)?;
    if handle.is_null() {
        return Err(DriverError::INVALID_VALUE);
    }
    let format = format_of(d.format, d.num_channels)?;
    let h = image::create_array(
        device,
        format,
        d.width as u64,
        d.height as u64,
        d.depth as u64,
        d.flags,
    )?;
    out(handle, h as *mut c_void)
} }

driver_fn! { cuMipmappedArrayCreate (handle: *mut *mut c_void, desc: *const Array3DDescriptor, levels: c_uint) {
    let device = context_device()?;
    let d = read(desc)?;
    if handle.is_null() {
        return Err(DriverError::INVALID_VALUE);
    }
    let format = format_of(d.format, d.num_channels)?;
    let extent = [d.width, d.height, d.depth].map(|v| v as u64);
    let h = image::create_mipmapped(device, format, extent, levels, d.flags)?;
    out(handle, h as *mut c_void)
} }

driver_fn! { cuMipmappedArrayGetLevel (level_array: *mut *mut c_void, handle: *mut c_void, level: c_uint) {
    context_device()?;
    if level_array.is_null() {
        return Err(DriverError::INVALID_VALUE);
    }
    out(level_array, image::mipmap_level(handle as u64, level)? as *mut c_void)
} }

driver_fn! { cuMipmappedArrayDestroy (handle: *mut c_void) {
    context_device()?;
    if handle.is_null() {
        return Err(DriverError::INVALID_HANDLE);
    }
    Ok(image::destroy_mipmapped(handle as u64)?)
} }

driver_fn! { cuArrayDestroy (handle: *mut c_void) {
    context_device()?;
    if handle.is_null() {
        return Err(DriverError::INVALID_HANDLE);
    }
    Ok(image::destroy_array(handle as u64)?)
} }

driver_fn! { cuArrayGetDescriptor_v2 (desc: *mut ArrayDescriptor, handle: *mut c_void) {
    context_device()?;
    let a = image::array(handle as u64)?;
    out(desc, ArrayDescriptor {
        width: a.width as usize,
        height: a.height as usize,
        format: format_code(a.format),
        num_channels: c_uint::from(a.format.channels),
    })
} }

driver_fn! { cuArray3DGetDescriptor_v2 (desc: *mut Array3DDescriptor, handle: *mut c_void) {
    context_device()?;
    let a = image::array(handle as u64)?;
    out(desc, Array3DDescriptor {
        width: a.width as usize,
        height: a.height as usize,
        depth: a.depth as usize,
        format: format_code(a.format),
        num_channels: c_uint::from(a.format.channels),
        flags: a.flags,
    })
} }

// ---- linear copies to and from arrays (offsets in bytes) -------------------

fn span(array: *mut c_void, offset: usize, count: usize) -> Result<*mut c_void, DriverError> {
    context_device()?;
    Ok(image::array_linear(array as u64, offset as u64, count as u64)? as *mut c_void)
}

fn copy(
    dst: *mut c_void,
    src: *const c_void,
    count: usize,
    stream: Option<*mut c_void>,
) -> DriverResult {
    Ok(memcpy2d(
        dst,
        count,
        src,
        count,
        count,
        1,
        COPY_DEFAULT,
        stream,
    )?)
}

driver_fn! { [cuMemcpyHtoA_v2, cuMemcpyHtoA_v2_ptds] (dst: *mut c_void, offset: usize, src: *const c_void, count: usize) {
    copy(span(dst, offset, count)?, src, count, None)
} }

driver_fn! { [cuMemcpyHtoAAsync_v2, cuMemcpyHtoAAsync_v2_ptsz] (dst: *mut c_void, offset: usize, src: *const c_void, count: usize, stream: *mut c_void) {
    copy(span(dst, offset, count)?, src, count, Some(stream))
} }

driver_fn! { [cuMemcpyAtoH_v2, cuMemcpyAtoH_v2_ptds] (dst: *mut c_void, src: *mut c_void, offset: usize, count: usize) {
    copy(dst, span(src, offset, count)?, count, None)
} }

driver_fn! { [cuMemcpyAtoHAsync_v2, cuMemcpyAtoHAsync_v2_ptsz] (dst: *mut c_void, src: *mut c_void, offset: usize, count: usize, stream: *mut c_void) {
    copy(dst, span(src, offset, count)?, count, Some(stream))
} }

driver_fn! { [cuMemcpyDtoA_v2, cuMemcpyDtoA_v2_ptds] (dst: *mut c_void, offset: usize, src: u64, count: usize) {
    copy(span(dst, offset, count)?, src as *const c_void, count, None)
} }

driver_fn! { [cuMemcpyAtoD_v2, cuMemcpyAtoD_v2_ptds] (dst: u64, src: *mut c_void, offset: usize, count: usize) {
    copy(dst as *mut c_void, span(src, offset, count)?, count, None)
} }

driver_fn! { [cuMemcpyAtoA_v2, cuMemcpyAtoA_v2_ptds] (dst: *mut c_void, dst_offset: usize, src: *mut c_void, src_offset: usize, count: usize) {
    let from = span(src, src_offset, count)?;
    copy(span(dst, dst_offset, count)?, from, count, None)
} }

// ---- texture and surface objects ---------------------------------------------

impl image::FormatDesc for DrvFormat {
    fn to_format(&self) -> Result<Format, rcud_proto::CudaError> {
        format_of(self.format, self.num_channels).map_err(|_| rcud_proto::CudaError::INVALID_VALUE)
    }

    fn from_format(f: Format) -> Self {
        DrvFormat {
            format: format_code(f),
            num_channels: c_uint::from(f.channels),
        }
    }
}

type DrvResourceDesc = ResourceDesc<DrvFormat>;

fn sampling_of(t: &DrvTextureDesc) -> Result<Sampling, DriverError> {
    let address = [
        image::address_mode(t.address_mode[0])?,
        image::address_mode(t.address_mode[1])?,
        image::address_mode(t.address_mode[2])?,
    ];
    Ok(Sampling {
        address,
        filter: image::filter_mode(t.filter_mode)?,
        // The driver reads integer texels as normalized floats unless told.
        read_normalized: t.flags & TRSF_READ_AS_INTEGER == 0,
        normalized_coords: t.flags & TRSF_NORMALIZED_COORDINATES != 0,
        srgb: t.flags & TRSF_SRGB != 0,
        border: t.border_color,
        max_anisotropy: t.max_anisotropy,
        mipmap_filter: image::filter_mode(t.mipmap_filter_mode)?,
        mipmap_level_bias: t.mipmap_level_bias,
        min_mipmap_level_clamp: t.min_mipmap_level_clamp,
        max_mipmap_level_clamp: t.max_mipmap_level_clamp,
        disable_trilinear_optimization: t.flags & TRSF_DISABLE_TRILINEAR_OPTIMIZATION != 0,
        seamless_cubemap: t.flags & TRSF_SEAMLESS_CUBEMAP != 0,
    })
}

fn texture_desc_of(s: &Sampling) -> DrvTextureDesc {
    let flag = |on: bool, f: c_uint| if on { f } else { 0 };
    DrvTextureDesc {
        address_mode: s.address.map(|m| m as c_int),
        filter_mode: s.filter as c_int,
        flags: flag(!s.read_normalized, TRSF_READ_AS_INTEGER)
            | flag(s.normalized_coords, TRSF_NORMALIZED_COORDINATES)
            | flag(s.srgb, TRSF_SRGB)
            | flag(
                s.disable_trilinear_optimization,
                TRSF_DISABLE_TRILINEAR_OPTIMIZATION,
            )
            | flag(s.seamless_cubemap, TRSF_SEAMLESS_CUBEMAP),
        max_anisotropy: s.max_anisotropy,
        mipmap_filter_mode: match s.mipmap_filter {
            Filter::Point => 0,
            Filter::Linear => 1,
        },
        mipmap_level_bias: s.mipmap_level_bias,
        min_mipmap_level_clamp: s.min_mipmap_level_clamp,
        max_mipmap_level_clamp: s.max_mipmap_level_clamp,
        border_color: s.border,
        reserved: [0; 12],
    }
}

driver_fn! { cuTexObjectCreate (tex: *mut u64, res: *const DrvResourceDesc, desc: *const DrvTextureDesc, view: *const ResourceViewDesc) {
    let device = context_device()?;
    if tex.is_null() {
        return Err(DriverError::INVALID_VALUE);
    }
    if !view.is_null() {
        tracing::warn!("cuTexObjectCreate: resource views are not supported by rcud");
        return Err(DriverError::NOT_SUPPORTED);
    }
    let resource = image::resource_of(read(res)?)?;
    let sampling = sampling_of(read(desc)?)?;
    out(tex, image::create_texture(device, resource, sampling)?)
} }

driver_fn! { cuTexObjectDestroy (tex: u64) {
    context_device()?;
    Ok(image::destroy_object(tex, true)?)
} }

driver_fn! { cuTexObjectGetResourceDesc (res: *mut DrvResourceDesc, tex: u64) {
    context_device()?;
    out(res, image::resource_desc::<DrvFormat>(image::object(tex, true)?.resource))
} }

driver_fn! { cuTexObjectGetTextureDesc (desc: *mut DrvTextureDesc, tex: u64) {
    context_device()?;
    let s = image::object(tex, true)?.sampling.ok_or(DriverError::INVALID_VALUE)?;
    out(desc, texture_desc_of(&s))
} }

driver_fn! { cuSurfObjectCreate (surf: *mut u64, res: *const DrvResourceDesc) {
    let device = context_device()?;
    if surf.is_null() {
        return Err(DriverError::INVALID_VALUE);
    }
    let resource = image::resource_of(read(res)?)?;
    out(surf, image::create_surface(device, resource)?)
} }

driver_fn! { cuSurfObjectDestroy (surf: u64) {
    context_device()?;
    Ok(image::destroy_object(surf, false)?)
} }

driver_fn! { cuSurfObjectGetResourceDesc (res: *mut DrvResourceDesc, surf: u64) {
    context_device()?;
    out(res, image::resource_desc::<DrvFormat>(image::object(surf, false)?.resource))
} }
