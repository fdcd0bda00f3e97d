//! The runtime API of CUDA arrays, texture objects and surface objects
//! over [`crate::image`]: channel descriptors, arrays and copies to and from
//! them, texture and surface objects and their queries.

use std::ffi::c_void;
use std::os::raw::{c_int, c_uint};

use rcud_proto::texture::{AddressMode, ChannelKind, Filter};
use rcud_proto::CudaError;

use super::graph::Extent;
use super::pitched::memcpy2d;
use crate::abi::texture::{ChannelFormatDesc, ResourceDesc, ResourceViewDesc, TextureDesc};
use crate::ffi::{guard, write_out, CudaErrorT};
use crate::image::{self, Format, Sampling};

fn rt() -> &'static rcud_client::Runtime {
    rcud_client::Runtime::global()
}

/// `cudaChannelFormatKind` values rcud's textures hold.
const KIND_SIGNED: c_int = 0;
const KIND_UNSIGNED: c_int = 1;
const KIND_FLOAT: c_int = 2;

/// `cudaReadModeNormalizedFloat`.
const READ_NORMALIZED: c_int = 1;

/// `cudaCreateChannelDesc`: a descriptor of the given bits per channel,
/// returned by value.
#[no_mangle]
pub extern "C" fn cudaCreateChannelDesc(
    x: c_int,
    y: c_int,
    z: c_int,
    w: c_int,
    f: c_int,
) -> ChannelFormatDesc {
    ChannelFormatDesc { x, y, z, w, f }
}

/// The format a channel descriptor names: channels x, y, z, w in that
/// order, all of one size.
pub(crate) fn format_of(d: &ChannelFormatDesc) -> Result<Format, CudaError> {
    let bits = [d.x, d.y, d.z, d.w];
    let channels = bits.iter().take_while(|&&b| b != 0).count();
    if channels == 0
        || bits[channels..].iter().any(|&b| b != 0)
        || bits[..channels].iter().any(|&b| b != d.x)
    {
        return Err(CudaError::INVALID_CHANNEL_DESCRIPTOR);
    }
    let kind = match d.f {
        KIND_SIGNED => ChannelKind::Signed,
        KIND_UNSIGNED => ChannelKind::Unsigned,
        KIND_FLOAT => ChannelKind::Float,
        _ => return Err(CudaError::INVALID_CHANNEL_DESCRIPTOR),
    };
    Format::new(channels as u32, d.x.max(0) as u32, kind)
}

/// The channel descriptor of a format.
pub(crate) fn desc_of(f: Format) -> ChannelFormatDesc {
    let b = c_int::from(f.bits);
    let on = |i: u8| if i < f.channels { b } else { 0 };
    ChannelFormatDesc {
        x: on(0),
        y: on(1),
        z: on(2),
        w: on(3),
        f: match f.kind {
            ChannelKind::Signed => KIND_SIGNED,
            ChannelKind::Unsigned => KIND_UNSIGNED,
            ChannelKind::Float => KIND_FLOAT,
        },
    }
}

fn read_desc<'a, T>(p: *const T) -> Result<&'a T, CudaError> {
    // SAFETY: the API passes a valid structure or NULL.
    unsafe { p.as_ref() }.ok_or(CudaError::INVALID_VALUE)
}

#[no_mangle]
pub extern "C" fn cudaGetChannelDesc(
    desc: *mut ChannelFormatDesc,
    array: *mut c_void,
) -> CudaErrorT {
    guard(|| write_out(desc, desc_of(image::array(array as u64)?.format)))
}

/// `cudaMallocArray`: a 1-D (`height` 0) or 2-D array.
#[no_mangle]
pub extern "C" fn cudaMallocArray(
    array: *mut *mut c_void,
    desc: *const ChannelFormatDesc,
    width: usize,
    height: usize,
    flags: c_uint,
) -> CudaErrorT {
    guard(|| {
        if array.is_null() || flags & image::ARRAY_LAYERED != 0 || flags & image::ARRAY_CUBEMAP != 0
        {
            return Err(CudaError::INVALID_VALUE);
        }
        let format = format_of(read_desc(desc)?)?;
        let h = image::create_array(
            rt().current_device()?,
            format,
            width as u64,
            height as u64,
            0,
            flags,
        )?;
        write_out(array, h as *mut c_void)
    })
}

/// `cudaMalloc3DArray`: 1-D, 2-D, 3-D, layered and cubemap arrays, as the
/// extent and flags say.
#[no_mangle]
pub extern "C" fn cudaMalloc3DArray(
    array: *mut *mut c_void,
    desc: *const ChannelFormatDesc,
    extent: Extent,
    flags: c_uint,
) -> CudaErrorT {
    guard(|| {
        if array.is_null() {
            return Err(CudaError::INVALID_VALUE);
        }
        let format = format_of(read_desc(desc)?)?;
        let h = image::create_array(
            rt().current_device()?,
            format,
            extent.width as u64,
            extent.height as u64,
            extent.depth as u64,
            flags,
        )?;
        write_out(array, h as *mut c_void)
    })
}

#[no_mangle]
pub extern "C" fn cudaMallocMipmappedArray(
    mipmapped: *mut *mut c_void,
    desc: *const ChannelFormatDesc,
    extent: Extent,
    levels: c_uint,
    flags: c_uint,
) -> CudaErrorT {
    guard(|| {
        if mipmapped.is_null() {
            return Err(CudaError::INVALID_VALUE);
        }
        let format = format_of(read_desc(desc)?)?;
        let extent = [extent.width, extent.height, extent.depth].map(|v| v as u64);
        let h = image::create_mipmapped(rt().current_device()?, format, extent, levels, flags)?;
        write_out(mipmapped, h as *mut c_void)
    })
}

#[no_mangle]
pub extern "C" fn cudaGetMipmappedArrayLevel(
    level_array: *mut *mut c_void,
    mipmapped: *const c_void,
    level: c_uint,
) -> CudaErrorT {
    guard(|| {
        if level_array.is_null() {
            return Err(CudaError::INVALID_VALUE);
        }
        let h = image::mipmap_level(mipmapped as u64, level)?;
        write_out(level_array, h as *mut c_void)
    })
}

#[no_mangle]
pub extern "C" fn cudaFreeMipmappedArray(mipmapped: *mut c_void) -> CudaErrorT {
    guard(|| image::destroy_mipmapped(mipmapped as u64))
}

#[no_mangle]
pub extern "C" fn cudaFreeArray(array: *mut c_void) -> CudaErrorT {
    guard(|| image::destroy_array(array as u64))
}

/// `cudaArrayGetInfo`: format, extent (0 for absent dimensions) and flags.
#[no_mangle]
pub extern "C" fn cudaArrayGetInfo(
    desc: *mut ChannelFormatDesc,
    extent: *mut Extent,
    flags: *mut c_uint,
    array: *mut c_void,
) -> CudaErrorT {
    guard(|| {
        let a = image::array(array as u64)?;
        if !desc.is_null() {
            write_out(desc, desc_of(a.format))?;
        }
        if !extent.is_null() {
            write_out(
                extent,
                Extent {
                    width: a.width as usize,
                    height: a.height as usize,
                    depth: a.depth as usize,
                },
            )?;
        }
        if !flags.is_null() {
            write_out(flags, a.flags)?;
        }
        Ok(())
    })
}

// ---- copies to and from arrays --------------------------------------------

/// The address of (`x_bytes`, `y`) in slice 0 of an array, and its pitch.
fn array_row(
    array: *const c_void,
    x_bytes: usize,
    y: usize,
) -> Result<(*mut c_void, usize), CudaError> {
    let (at, pitch, _) = image::array_at(array as u64, x_bytes as u64, y as u64, 0)?;
    Ok((at as *mut c_void, pitch as usize))
}

/// A 2-D copy whose `width` × `height` must fit the array from
/// (`x_bytes`, `y`).
fn check_fits(
    array: *const c_void,
    x_bytes: usize,
    y: usize,
    width: usize,
    height: usize,
) -> Result<(), CudaError> {
    if width == 0 || height == 0 {
        return Ok(());
    }
    image::array_at(
        array as u64,
        (x_bytes + width - 1) as u64,
        (y + height - 1) as u64,
        0,
    )
    .map(|_| ())
}

/// Copies `width` × `height` bytes from `src` (`spitch` apart) to the array
/// at (`x`, `y`).
fn to_array_2d(
    dst: *mut c_void,
    (x, y): (usize, usize),
    (src, spitch): (*const c_void, usize),
    (width, height): (usize, usize),
    kind: c_int,
    stream: Option<*mut c_void>,
) -> Result<(), CudaError> {
    check_fits(dst, x, y, width, height)?;
    let (at, pitch) = array_row(dst, x, y)?;
    memcpy2d(at, pitch, src, spitch, width, height, kind, stream)
}

/// Copies `width` × `height` bytes from the array at (`x`, `y`) to `dst`
/// (`dpitch` apart).
fn from_array_2d(
    (dst, dpitch): (*mut c_void, usize),
    src: *const c_void,
    (x, y): (usize, usize),
    (width, height): (usize, usize),
    kind: c_int,
    stream: Option<*mut c_void>,
) -> Result<(), CudaError> {
    check_fits(src, x, y, width, height)?;
    let (at, pitch) = array_row(src, x, y)?;
    memcpy2d(dst, dpitch, at, pitch, width, height, kind, stream)
}

/// A linear range of an array from (`x`, `y`): arrays here have no
/// padding, so `count` bytes may run on over following rows.
fn array_span(
    array: *const c_void,
    x: usize,
    y: usize,
    count: usize,
) -> Result<*mut c_void, CudaError> {
    let a = image::array(array as u64)?;
    let offset = (y as u64)
        .checked_mul(a.pitch())
        .and_then(|o| o.checked_add(x as u64))
        .ok_or(CudaError::INVALID_VALUE)?;
    Ok(image::array_linear(array as u64, offset, count as u64)? as *mut c_void)
}

fn linear(
    dst: *mut c_void,
    src: *const c_void,
    count: usize,
    kind: c_int,
    stream: Option<*mut c_void>,
) -> Result<(), CudaError> {
    memcpy2d(dst, count, src, count, count, 1, kind, stream)
}

with_ptsz! {
    fn cudaMemcpy2DToArray / cudaMemcpy2DToArray_ptds (dst: *mut c_void, w_offset: usize, h_offset: usize, src: *const c_void, spitch: usize, width: usize, height: usize, kind: c_int) {
        to_array_2d(dst, (w_offset, h_offset), (src, spitch), (width, height), kind, None)
    }
}

with_ptsz! {
    fn cudaMemcpy2DToArrayAsync / cudaMemcpy2DToArrayAsync_ptsz (dst: *mut c_void, w_offset: usize, h_offset: usize, src: *const c_void, spitch: usize, width: usize, height: usize, kind: c_int, stream: *mut c_void) {
        to_array_2d(dst, (w_offset, h_offset), (src, spitch), (width, height), kind, Some(stream))
    }
}

with_ptsz! {
    fn cudaMemcpy2DFromArray / cudaMemcpy2DFromArray_ptds (dst: *mut c_void, dpitch: usize, src: *const c_void, w_offset: usize, h_offset: usize, width: usize, height: usize, kind: c_int) {
        from_array_2d((dst, dpitch), src, (w_offset, h_offset), (width, height), kind, None)
    }
}

with_ptsz! {
    fn cudaMemcpy2DFromArrayAsync / cudaMemcpy2DFromArrayAsync_ptsz (dst: *mut c_void, dpitch: usize, src: *const c_void, w_offset: usize, h_offset: usize, width: usize, height: usize, kind: c_int, stream: *mut c_void) {
        from_array_2d((dst, dpitch), src, (w_offset, h_offset), (width, height), kind, Some(stream))
    }
}

with_ptsz! {
    fn cudaMemcpy2DArrayToArray / cudaMemcpy2DArrayToArray_ptds (dst: *mut c_void, w_offset_dst: usize, h_offset_dst: usize, src: *const c_void, w_offset_src: usize, h_offset_src: usize, width: usize, height: usize, kind: c_int) {
        check_fits(src, w_offset_src, h_offset_src, width, height)?;
        let (from, spitch) = array_row(src, w_offset_src, h_offset_src)?;
        to_array_2d(dst, (w_offset_dst, h_offset_dst), (from, spitch), (width, height), kind, None)
    }
}

with_ptsz! {
    fn cudaMemcpyToArray / cudaMemcpyToArray_ptds (dst: *mut c_void, w_offset: usize, h_offset: usize, src: *const c_void, count: usize, kind: c_int) {
        linear(array_span(dst, w_offset, h_offset, count)?, src, count, kind, None)
    }
}

with_ptsz! {
    fn cudaMemcpyToArrayAsync / cudaMemcpyToArrayAsync_ptsz (dst: *mut c_void, w_offset: usize, h_offset: usize, src: *const c_void, count: usize, kind: c_int, stream: *mut c_void) {
        linear(array_span(dst, w_offset, h_offset, count)?, src, count, kind, Some(stream))
    }
}

with_ptsz! {
    fn cudaMemcpyFromArray / cudaMemcpyFromArray_ptds (dst: *mut c_void, src: *const c_void, w_offset: usize, h_offset: usize, count: usize, kind: c_int) {
        linear(dst, array_span(src, w_offset, h_offset, count)?, count, kind, None)
    }
}

with_ptsz! {
    fn cudaMemcpyFromArrayAsync / cudaMemcpyFromArrayAsync_ptsz (dst: *mut c_void, src: *const c_void, w_offset: usize, h_offset: usize, count: usize, kind: c_int, stream: *mut c_void) {
        linear(dst, array_span(src, w_offset, h_offset, count)?, count, kind, Some(stream))
    }
}

with_ptsz! {
    fn cudaMemcpyArrayToArray / cudaMemcpyArrayToArray_ptds (dst: *mut c_void, w_offset_dst: usize, h_offset_dst: usize, src: *const c_void, w_offset_src: usize, h_offset_src: usize, count: usize, kind: c_int) {
        let from = array_span(src, w_offset_src, h_offset_src, count)?;
        linear(array_span(dst, w_offset_dst, h_offset_dst, count)?, from, count, kind, None)
    }
}

// ---- texture and surface objects ------------------------------------------

impl image::FormatDesc for ChannelFormatDesc {
    fn to_format(&self) -> Result<Format, CudaError> {
        format_of(self)
    }

    fn from_format(f: Format) -> Self {
        desc_of(f)
    }
}

type RuntimeResourceDesc = ResourceDesc<ChannelFormatDesc>;

fn sampling_of(t: &TextureDesc) -> Result<Sampling, CudaError> {
    let address = [
        image::address_mode(t.address_mode[0])?,
        image::address_mode(t.address_mode[1])?,
        image::address_mode(t.address_mode[2])?,
    ];
    if !matches!(t.read_mode, 0 | READ_NORMALIZED) {
        return Err(CudaError::INVALID_VALUE);
    }
    Ok(Sampling {
        address,
        filter: image::filter_mode(t.filter_mode)?,
        read_normalized: t.read_mode == READ_NORMALIZED,
        normalized_coords: t.normalized_coords != 0,
        srgb: t.srgb != 0,
        border: t.border_color,
        max_anisotropy: t.max_anisotropy,
        mipmap_filter: image::filter_mode(t.mipmap_filter_mode)?,
        mipmap_level_bias: t.mipmap_level_bias,
        min_mipmap_level_clamp: t.min_mipmap_level_clamp,
        max_mipmap_level_clamp: t.max_mipmap_level_clamp,
        disable_trilinear_optimization: t.disable_trilinear_optimization != 0,
        seamless_cubemap: t.seamless_cubemap != 0,
    })
}

fn texture_desc_of(s: &Sampling) -> TextureDesc {
    let mode = |m: AddressMode| m as c_int;
    let filter = |f: Filter| f as c_int;
    TextureDesc {
        address_mode: s.address.map(mode),
        filter_mode: filter(s.filter),
        read_mode: c_int::from(s.read_normalized),
        srgb: c_int::from(s.srgb),
        border_color: s.border,
        normalized_coords: c_int::from(s.normalized_coords),
        max_anisotropy: s.max_anisotropy,
        mipmap_filter_mode: filter(s.mipmap_filter),
        mipmap_level_bias: s.mipmap_level_bias,
        min_mipmap_level_clamp: s.min_mipmap_level_clamp,
        max_mipmap_level_clamp: s.max_mipmap_level_clamp,
        disable_trilinear_optimization: c_int::from(s.disable_trilinear_optimization),
        seamless_cubemap: c_int::from(s.seamless_cubemap),
    }
}

#[no_mangle]
pub extern "C" fn cudaCreateTextureObject(
    tex: *mut u64,
    res: *const RuntimeResourceDesc,
    desc: *const TextureDesc,
    view: *const ResourceViewDesc,
) -> CudaErrorT {
    guard(|| {
        if tex.is_null() {
            return Err(CudaError::INVALID_VALUE);
        }
        if !view.is_null() {
            tracing::warn!("cudaCreateTextureObject: resource views are not supported by rcud");
            return Err(CudaError::NOT_SUPPORTED);
        }
        let resource = image::resource_of(read_desc(res)?)?;
        let sampling = sampling_of(read_desc(desc)?)?;
        write_out(
            tex,
            image::create_texture(rt().current_device()?, resource, sampling)?,
        )
    })
}

#[no_mangle]
pub extern "C" fn cudaDestroyTextureObject(tex: u64) -> CudaErrorT {
    guard(|| image::destroy_object(tex, true))
}

#[no_mangle]
pub extern "C" fn cudaGetTextureObjectResourceDesc(
    res: *mut RuntimeResourceDesc,
    tex: u64,
) -> CudaErrorT {
    guard(|| {
        write_out(
            res,
            image::resource_desc::<ChannelFormatDesc>(image::object(tex, true)?.resource),
        )
    })
}

#[no_mangle]
pub extern "C" fn cudaGetTextureObjectTextureDesc(desc: *mut TextureDesc, tex: u64) -> CudaErrorT {
    guard(|| {
        let o = image::object(tex, true)?;
        let s = o.sampling.ok_or(CudaError::INVALID_VALUE)?;
        write_out(desc, texture_desc_of(&s))
    })
}

#[no_mangle]
pub extern "C" fn cudaCreateSurfaceObject(
    surf: *mut u64,
    res: *const RuntimeResourceDesc,
) -> CudaErrorT {
    guard(|| {
        if surf.is_null() {
            return Err(CudaError::INVALID_VALUE);
        }
        let resource = image::resource_of(read_desc(res)?)?;
        write_out(
            surf,
            image::create_surface(rt().current_device()?, resource)?,
        )
    })
}

#[no_mangle]
pub extern "C" fn cudaDestroySurfaceObject(surf: u64) -> CudaErrorT {
    guard(|| image::destroy_object(surf, false))
}

#[no_mangle]
pub extern "C" fn cudaGetSurfaceObjectResourceDesc(
    res: *mut RuntimeResourceDesc,
    surf: u64,
) -> CudaErrorT {
    guard(|| {
        write_out(
            res,
            image::resource_desc::<ChannelFormatDesc>(image::object(surf, false)?.resource),
        )
    })
}

/// `cudaDeviceGetTexture1DLinearMaxWidth`: the device's limit on a 1-D
/// texture over linear memory, in elements of a valid format.
pub(crate) fn texture_1d_linear_max_width(device: c_int) -> Result<usize, CudaError> {
    let width = rcud_client::Runtime::global()
        .attribute(
            rcud_proto::DeviceAttr::MAX_TEXTURE_1D_LINEAR_WIDTH.0,
            device,
        )
        .map_err(|_| CudaError::INVALID_DEVICE)?;
    usize::try_from(width).map_err(|_| CudaError::UNSUPPORTED_LIMIT)
}

#[no_mangle]
pub extern "C" fn cudaDeviceGetTexture1DLinearMaxWidth(
    width: *mut usize,
    desc: *const ChannelFormatDesc,
    device: c_int,
) -> CudaErrorT {
    guard(|| {
        // SAFETY: the API passes a valid descriptor or NULL.
        let desc = unsafe { desc.as_ref() }.ok_or(CudaError::INVALID_VALUE)?;
        format_of(desc)?;
        write_out(width, texture_1d_linear_max_width(device)?)
    })
}

/// `cudaArrayGetPlane`, `cudaArrayGetSparseProperties`,
/// `cudaArrayGetMemoryRequirements`: the array exists, but none here has a
/// multi-planar format (NV12), is sparse or defers its mapping, which is
/// what each asks for: an invalid value, as in CUDA.
pub(crate) fn array_special(out: *const c_void, array: u64) -> Result<(), CudaError> {
    if out.is_null() {
        return Err(CudaError::INVALID_VALUE);
    }
    image::array(array)?;
    Err(CudaError::INVALID_VALUE)
}

#[no_mangle]
pub extern "C" fn cudaArrayGetPlane(
    plane: *mut *mut c_void,
    array: *mut c_void,
    _index: c_uint,
) -> CudaErrorT {
    guard(|| array_special(plane as *const c_void, array as u64))
}

#[no_mangle]
pub extern "C" fn cudaArrayGetSparseProperties(
    props: *mut c_void,
    array: *mut c_void,
) -> CudaErrorT {
    guard(|| array_special(props, array as u64))
}

#[no_mangle]
pub extern "C" fn cudaArrayGetMemoryRequirements(
    requirements: *mut c_void,
    array: *mut c_void,
    device: c_int,
) -> CudaErrorT {
    guard(|| {
        rcud_client::Runtime::global()
            .props(device)
            .map_err(|_| CudaError::INVALID_DEVICE)?;
        array_special(requirements, array as u64)
    })
}
