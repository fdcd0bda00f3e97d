//! CUDA arrays, texture objects and surface objects, one implementation
//! behind the runtime API (`cudart/texture.rs`) and the driver API
//! (`driver/texture.rs`).
//!
//! An array is device memory of the device current when it was made,
//! holding its texels row after row and slice (or layer) after slice with
//! no padding, known to this library by a handle; a copy to or from an
//! array is a copy of pitched linear memory. A texture or surface object is
//! a descriptor (`rcud_proto::texture`) this library writes into device
//! memory; the handle is its address, and the emulated device's `tex`,
//! `tld4`, `txq`, `suld`, `sust` and `suq` instructions read it there. A real
//! GPU behind the server cannot read such descriptors, so there texture and
//! surface objects are refused with `cudaErrorNotSupported`.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};

use parking_lot::Mutex;
use rcud_client::Runtime;
use rcud_proto::texture::{
    self, AddressMode, ChannelKind, Filter, ImageDescriptor, Shape, DESCRIPTOR_BYTES,
};
use rcud_proto::CudaError;

use crate::abi::texture::{
    ResourceDesc, ResourceLinear, ResourcePitch2D, ResourceUnion, RESOURCE_ARRAY, RESOURCE_LINEAR,
    RESOURCE_MIPMAPPED_ARRAY, RESOURCE_PITCH2D,
};

fn rt() -> &'static Runtime {
    Runtime::global()
}

/// `cudaArrayLayered` / `CUDA_ARRAY3D_LAYERED`.
pub(crate) const ARRAY_LAYERED: u32 = 0x01;
/// `cudaArraySurfaceLoadStore` / `CUDA_ARRAY3D_SURFACE_LDST`.
pub(crate) const ARRAY_SURFACE_LDST: u32 = 0x02;
/// `cudaArrayCubemap` / `CUDA_ARRAY3D_CUBEMAP`.
pub(crate) const ARRAY_CUBEMAP: u32 = 0x04;
/// `cudaArrayTextureGather` / `CUDA_ARRAY3D_TEXTURE_GATHER`.
pub(crate) const ARRAY_TEXTURE_GATHER: u32 = 0x08;
const ARRAY_FLAGS: u32 = ARRAY_LAYERED | ARRAY_SURFACE_LDST | ARRAY_CUBEMAP | ARRAY_TEXTURE_GATHER;

/// The format of a texel: channels of one size and kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Format {
    pub(crate) channels: u8,
    pub(crate) bits: u8,
    pub(crate) kind: ChannelKind,
}

impl Format {
    /// A format CUDA arrays and textures can have: 1, 2 or 4 channels of
    /// 8, 16 or 32 bits (floats of 16 or 32).
    pub(crate) fn new(channels: u32, bits: u32, kind: ChannelKind) -> Result<Self, CudaError> {
        let ok = matches!(channels, 1 | 2 | 4)
            && matches!(bits, 8 | 16 | 32)
            && !(kind == ChannelKind::Float && bits == 8);
        if !ok {
            return Err(CudaError::INVALID_CHANNEL_DESCRIPTOR);
        }
        Ok(Self {
            channels: channels as u8,
            bits: bits as u8,
            kind,
        })
    }

    pub(crate) fn bytes(self) -> u64 {
        u64::from(self.channels) * u64::from(self.bits / 8)
    }
}

/// A CUDA array: `width` × `height` × `depth` texels, where `height` is 0
/// for a 1-D array and `depth` is 0 unless the array is 3-D, layered (the
/// layer count) or a cubemap (6 faces per cube).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Array {
    pub(crate) device: usize,
    pub(crate) base: u64,
    pub(crate) format: Format,
    pub(crate) width: u64,
    pub(crate) height: u64,
    pub(crate) depth: u64,
    pub(crate) flags: u32,
    /// The mipmapped array this is a level of (freed with it).
    pub(crate) level_of: Option<u64>,
}

impl Array {
    /// Bytes of one row.
    pub(crate) fn pitch(&self) -> u64 {
        self.width * self.format.bytes()
    }

    /// Rows of one slice.
    pub(crate) fn rows(&self) -> u64 {
        self.height.max(1)
    }

    /// Slices (or layers, or cube faces).
    pub(crate) fn slices(&self) -> u64 {
        self.depth.max(1)
    }

    fn shape(&self) -> Shape {
        if self.flags & ARRAY_CUBEMAP != 0 {
            if self.flags & ARRAY_LAYERED != 0 {
                Shape::CubemapLayered
            } else {
                Shape::Cubemap
            }
        } else if self.flags & ARRAY_LAYERED != 0 {
            if self.height == 0 {
                Shape::Layered1D
            } else {
                Shape::Layered2D
            }
        } else if self.depth > 0 {
            Shape::Array3D
        } else if self.height > 0 {
            Shape::Array2D
        } else {
            Shape::Array1D
        }
    }
}

/// A mipmapped array: its levels one after another in one allocation, as
/// `rcud_proto::texture::level_offset` places them, each also an array
/// (`cudaGetMipmappedArrayLevel`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Mipmapped {
    /// Level 0.
    pub(crate) base: Array,
    pub(crate) levels: Vec<u64>,
}

/// What a texture or surface object reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Resource {
    Array(u64),
    Mipmapped(u64),
    Linear {
        ptr: u64,
        format: Format,
        bytes: u64,
    },
    Pitch2D {
        ptr: u64,
        format: Format,
        width: u64,
        height: u64,
        pitch: u64,
    },
}

/// A texel format as one API's resource descriptor names it.
pub(crate) trait FormatDesc: Copy {
    fn to_format(&self) -> Result<Format, CudaError>;
    fn from_format(f: Format) -> Self;
}

/// The resource a `cudaResourceDesc` / `CUDA_RESOURCE_DESC` names.
pub(crate) fn resource_of<F: FormatDesc>(d: &ResourceDesc<F>) -> Result<Resource, CudaError> {
    if d.flags != 0 {
        return Err(CudaError::INVALID_VALUE);
    }
    // SAFETY: each arm reads the union member `res_type` says is there; the
    // members are plain data, so any bytes are a valid value.
    unsafe {
        match d.res_type {
            RESOURCE_ARRAY => Ok(Resource::Array(d.res.array as u64)),
            RESOURCE_LINEAR => {
                let l = d.res.linear;
                Ok(Resource::Linear {
                    ptr: l.dev_ptr,
                    format: l.format.to_format()?,
                    bytes: l.size_in_bytes as u64,
                })
            }
            RESOURCE_PITCH2D => {
                let p = d.res.pitch2d;
                Ok(Resource::Pitch2D {
                    ptr: p.dev_ptr,
                    format: p.format.to_format()?,
                    width: p.width as u64,
                    height: p.height as u64,
                    pitch: p.pitch_in_bytes as u64,
                })
            }
            RESOURCE_MIPMAPPED_ARRAY => Ok(Resource::Mipmapped(d.res.array as u64)),
            _ => Err(CudaError::INVALID_VALUE),
        }
    }
}

/// The resource descriptor of a resource, in one API's layout.
pub(crate) fn resource_desc<F: FormatDesc>(r: Resource) -> ResourceDesc<F> {
    let mut res = ResourceUnion { reserved: [0; 32] };
    let res_type = match r {
        Resource::Array(h) => {
            res.array = h as *mut std::ffi::c_void;
            RESOURCE_ARRAY
        }
        Resource::Mipmapped(h) => {
            res.array = h as *mut std::ffi::c_void;
            RESOURCE_MIPMAPPED_ARRAY
        }
        Resource::Linear { ptr, format, bytes } => {
            res.linear = ResourceLinear {
                dev_ptr: ptr,
                format: F::from_format(format),
                size_in_bytes: bytes as usize,
            };
            RESOURCE_LINEAR
        }
        Resource::Pitch2D {
            ptr,
            format,
            width,
            height,
            pitch,
        } => {
            res.pitch2d = ResourcePitch2D {
                dev_ptr: ptr,
                format: F::from_format(format),
                width: width as usize,
                height: height as usize,
                pitch_in_bytes: pitch as usize,
            };
            RESOURCE_PITCH2D
        }
    };
    ResourceDesc {
        res_type,
        res,
        flags: 0,
    }
}

/// How a texture object samples: the fields of `cudaTextureDesc` the
/// emulated device honours, plus the rest kept for the queries.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Sampling {
    pub(crate) address: [AddressMode; 3],
    pub(crate) filter: Filter,
    pub(crate) read_normalized: bool,
    pub(crate) normalized_coords: bool,
    pub(crate) srgb: bool,
    pub(crate) border: [f32; 4],
    pub(crate) max_anisotropy: u32,
    pub(crate) mipmap_filter: Filter,
    pub(crate) mipmap_level_bias: f32,
    pub(crate) min_mipmap_level_clamp: f32,
    pub(crate) max_mipmap_level_clamp: f32,
    pub(crate) disable_trilinear_optimization: bool,
    pub(crate) seamless_cubemap: bool,
}

/// A texture (with its sampling) or surface object.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Object {
    pub(crate) resource: Resource,
    pub(crate) sampling: Option<Sampling>,
}

#[derive(Default)]
struct Registry {
    arrays: HashMap<u64, Array>,
    mipmaps: HashMap<u64, Mipmapped>,
    objects: HashMap<u64, Object>,
}

static REGISTRY: Mutex<Option<Registry>> = Mutex::new(None);

fn with_registry<T>(f: impl FnOnce(&mut Registry) -> T) -> T {
    f(REGISTRY.lock().get_or_insert_with(Registry::default))
}

/// Array handles: never 0, never a device address, never reused.
static NEXT_ARRAY: AtomicU64 = AtomicU64::new(1);
const ARRAY_TAG: u64 = 0xa77a_0000_0000_0000;

/// Checks an array's extent and flags against what the device reports
/// for textures of its shape (`cudaMalloc3DArray` / `CUDA_ARRAY3D_DESCRIPTOR`
/// flags).
fn check_extent(
    device: usize,
    width: u64,
    height: u64,
    depth: u64,
    flags: u32,
) -> Result<(), CudaError> {
    if flags & !ARRAY_FLAGS != 0
        || width == 0
        || (height == 0 && depth > 0 && flags & ARRAY_LAYERED == 0)
    {
        return Err(CudaError::INVALID_VALUE);
    }
    let props = rt().props(device as i32)?;
    let cube = flags & ARRAY_CUBEMAP != 0;
    let layered = flags & ARRAY_LAYERED != 0;
    if cube
        && (width != height || depth == 0 || !depth.is_multiple_of(6) || (!layered && depth != 6))
    {
        return Err(CudaError::INVALID_VALUE);
    }
    if layered && depth == 0 {
        return Err(CudaError::INVALID_VALUE);
    }
    let limit = |v: i32| v.max(0) as u64;
    let fits = if cube {
        width <= limit(props.max_texture_cubemap)
    } else if layered && height == 0 {
        width <= limit(props.max_texture_1d_layered[0])
            && depth <= limit(props.max_texture_1d_layered[1])
    } else if layered {
        width <= limit(props.max_texture_2d_layered[0])
            && height <= limit(props.max_texture_2d_layered[1])
            && depth <= limit(props.max_texture_2d_layered[2])
    } else if depth > 0 {
        width <= limit(props.max_texture_3d[0])
            && height <= limit(props.max_texture_3d[1])
            && depth <= limit(props.max_texture_3d[2])
    } else if height > 0 {
        width <= limit(props.max_texture_2d[0]) && height <= limit(props.max_texture_2d[1])
    } else {
        width <= limit(props.max_texture_1d)
    };
    if !fits {
        return Err(CudaError::INVALID_VALUE);
    }
    Ok(())
}

fn new_handle() -> u64 {
    ARRAY_TAG | NEXT_ARRAY.fetch_add(1, Ordering::Relaxed) << 4
}

/// Makes an array on `device`. `flags` are the
/// `cudaMalloc3DArray` / `CUDA_ARRAY3D_DESCRIPTOR` flags; the extent is
/// checked against what the device reports for textures of that shape.
pub(crate) fn create_array(
    device: usize,
    format: Format,
    width: u64,
    height: u64,
    depth: u64,
    flags: u32,
) -> Result<u64, CudaError> {
    check_extent(device, width, height, depth, flags)?;
    let bytes = width
        .checked_mul(format.bytes())
        .and_then(|b| b.checked_mul(height.max(1)))
        .and_then(|b| b.checked_mul(depth.max(1)))
        .ok_or(CudaError::MEMORY_ALLOCATION)?;
    let base = rt().malloc(bytes)?;
    let handle = new_handle();
    let array = Array {
        device,
        base,
        format,
        width,
        height,
        depth,
        flags,
        level_of: None,
    };
    with_registry(|r| r.arrays.insert(handle, array));
    Ok(handle)
}

/// Makes a mipmapped array of `levels` levels (clamped to
/// `[1, 1 + floor(log2(largest extent))]`, as CUDA clamps it) on `device`.
pub(crate) fn create_mipmapped(
    device: usize,
    format: Format,
    [width, height, depth]: [u64; 3],
    levels: u32,
    flags: u32,
) -> Result<u64, CudaError> {
    check_extent(device, width, height, depth, flags)?;
    let three_d = depth > 0 && flags & (ARRAY_LAYERED | ARRAY_CUBEMAP) == 0;
    let narrow = |v: u64| u32::try_from(v).map_err(|_| CudaError::INVALID_VALUE);
    let (w, h, d) = (narrow(width)?, narrow(height)?, narrow(depth)?);
    let largest = w.max(h).max(if three_d { d } else { 1 });
    let levels = levels.clamp(1, 32 - largest.leading_zeros());
    let level = |l: u32| {
        let [lw, lh, ld] = texture::level_extent(w, h.max(1), d.max(1), three_d, l);
        // A 1-D array has no rows and a 2-D one no depth, at every level.
        (
            u64::from(lw),
            if h == 0 { 0 } else { u64::from(lh) },
            if d == 0 { 0 } else { u64::from(ld) },
        )
    };
    let bytes = texture::level_offset(w, h.max(1), d.max(1), three_d, format.bytes(), levels)
        .ok_or(CudaError::MEMORY_ALLOCATION)?;
    let base = rt().malloc(bytes)?;
    let handle = new_handle();
    let mut arrays = Vec::with_capacity(levels as usize);
    with_registry(|r| {
        for l in 0..levels {
            let (lw, lh, ld) = level(l);
            let offset = texture::level_offset(w, h.max(1), d.max(1), three_d, format.bytes(), l)
                .unwrap_or(0);
            let view = new_handle();
            r.arrays.insert(
                view,
                Array {
                    device,
                    base: base + offset,
                    format,
                    width: lw,
                    height: lh,
                    depth: ld,
                    flags,
                    level_of: Some(handle),
                },
            );
            arrays.push(view);
        }
        let level0 = r.arrays[&arrays[0]];
        r.mipmaps.insert(
            handle,
            Mipmapped {
                base: level0,
                levels: arrays,
            },
        );
    });
    Ok(handle)
}

/// The mipmapped array of `handle`.
pub(crate) fn mipmapped(handle: u64) -> Result<Mipmapped, CudaError> {
    with_registry(|r| r.mipmaps.get(&handle).cloned()).ok_or(CudaError::INVALID_RESOURCE_HANDLE)
}

/// Level `level` of a mipmapped array, as an array.
pub(crate) fn mipmap_level(handle: u64, level: u32) -> Result<u64, CudaError> {
    let m = mipmapped(handle)?;
    m.levels
        .get(level as usize)
        .copied()
        .ok_or(CudaError::INVALID_VALUE)
}

/// Frees a mipmapped array and its levels (`NULL` is accepted).
pub(crate) fn destroy_mipmapped(handle: u64) -> Result<(), CudaError> {
    if handle == 0 {
        return Ok(());
    }
    let m = with_registry(|r| {
        let m = r.mipmaps.remove(&handle)?;
        for view in &m.levels {
            r.arrays.remove(view);
        }
        Some(m)
    })
    .ok_or(CudaError::INVALID_RESOURCE_HANDLE)?;
    rt().free(m.base.base)
}

/// The array of `handle`.
pub(crate) fn array(handle: u64) -> Result<Array, CudaError> {
    with_registry(|r| r.arrays.get(&handle).copied()).ok_or(CudaError::INVALID_RESOURCE_HANDLE)
}

/// Frees an array (`NULL` is accepted, as CUDA accepts it).
pub(crate) fn destroy_array(handle: u64) -> Result<(), CudaError> {
    if handle == 0 {
        return Ok(());
    }
    // A mipmap level goes with its mipmapped array: freeing it alone
    // succeeds and does nothing, as NVIDIA's runtime answers (on an H200).
    let a = with_registry(|r| match r.arrays.get(&handle) {
        Some(a) if a.level_of.is_some() => Ok(None),
        Some(_) => r
            .arrays
            .remove(&handle)
            .map(Some)
            .ok_or(CudaError::INVALID_RESOURCE_HANDLE),
        None => Err(CudaError::INVALID_RESOURCE_HANDLE),
    })?;
    match a {
        Some(a) => rt().free(a.base),
        None => Ok(()),
    }
}

/// The address of texel byte `x_bytes` of row `y` of slice `z` of an
/// array, with the array's row pitch and rows per slice; the position must
/// lie in the array.
pub(crate) fn array_at(
    handle: u64,
    x_bytes: u64,
    y: u64,
    z: u64,
) -> Result<(u64, u64, u64), CudaError> {
    let a = array(handle)?;
    if x_bytes >= a.pitch() || y >= a.rows() || z >= a.slices() {
        return Err(CudaError::INVALID_VALUE);
    }
    let at = a.base + (z * a.rows() + y) * a.pitch() + x_bytes;
    Ok((at, a.pitch(), a.rows()))
}

/// Bytes from `x_bytes`, `y` of slice 0 to the end of the array: what a
/// linear copy (`cudaMemcpyToArray`, `cuMemcpyHtoA`) may cover.
pub(crate) fn array_linear(handle: u64, offset: u64, len: u64) -> Result<u64, CudaError> {
    let a = array(handle)?;
    let total = a.pitch() * a.rows() * a.slices();
    match offset.checked_add(len) {
        Some(end) if end <= total => Ok(a.base + offset),
        _ => Err(CudaError::INVALID_VALUE),
    }
}

pub(crate) fn require_emulated(device: usize, what: &str) -> Result<(), CudaError> {
    let props = rt().props(device as i32)?;
    if props.name != rcud_proto::device::EMULATED_DEVICE_NAME {
        tracing::warn!(
            "{what}: texture and surface objects work on rcud's emulated device only, not on the server's GPU"
        );
        return Err(CudaError::NOT_SUPPORTED);
    }
    Ok(())
}

/// The descriptor of a texture (with `sampling`) or surface object.
fn descriptor(
    device: usize,
    resource: &Resource,
    sampling: Option<&Sampling>,
) -> Result<ImageDescriptor, CudaError> {
    let props = rt().props(device as i32)?;
    let mut levels = 1u8;
    let (shape, format, base, width, height, depth, layers, pitch, slice_pitch) = match *resource {
        Resource::Array(_) | Resource::Mipmapped(_) => {
            let a = match *resource {
                Resource::Mipmapped(h) => {
                    let m = mipmapped(h)?;
                    levels = u8::try_from(m.levels.len()).map_err(|_| CudaError::INVALID_VALUE)?;
                    m.base
                }
                _ => array(resource_array(resource)?)?,
            };
            let shape = a.shape();
            let (depth, layers) = match shape {
                Shape::Array3D => (a.depth, 0),
                Shape::Layered1D | Shape::Layered2D | Shape::Cubemap | Shape::CubemapLayered => {
                    (1, a.depth)
                }
                _ => (1, 0),
            };
            (
                shape,
                a.format,
                a.base,
                a.width,
                a.rows(),
                depth,
                layers,
                a.pitch(),
                a.pitch() * a.rows(),
            )
        }
        Resource::Linear { ptr, format, bytes } => {
            if !ptr.is_multiple_of(props.texture_alignment.max(1))
                || bytes == 0
                || !bytes.is_multiple_of(format.bytes())
            {
                return Err(CudaError::INVALID_VALUE);
            }
            let width = bytes / format.bytes();
            // cudaDeviceProp::maxTexture1DLinear of current GPUs (2^27).
            if width > 1 << 27 {
                return Err(CudaError::INVALID_VALUE);
            }
            (Shape::Linear, format, ptr, width, 1, 1, 0, bytes, bytes)
        }
        Resource::Pitch2D {
            ptr,
            format,
            width,
            height,
            pitch,
        } => {
            let [max_w, max_h, max_pitch] = props.max_texture_2d_linear.map(|v| v.max(0) as u64);
            let bad = !ptr.is_multiple_of(props.texture_alignment.max(1))
                || !pitch.is_multiple_of(props.texture_pitch_alignment.max(1))
                || width == 0
                || height == 0
                || width > max_w
                || height > max_h
                || pitch > max_pitch
                || pitch < width * format.bytes();
            if bad {
                return Err(CudaError::INVALID_VALUE);
            }
            (
                Shape::Array2D,
                format,
                ptr,
                width,
                height,
                1,
                0,
                pitch,
                pitch * height,
            )
        }
    };
    let narrow = |v: u64| u32::try_from(v).map_err(|_| CudaError::INVALID_VALUE);
    let d = ImageDescriptor {
        surface: sampling.is_none(),
        shape,
        channels: format.channels,
        bits: format.bits,
        kind: format.kind,
        base,
        width: narrow(width)?,
        height: narrow(height)?,
        depth: narrow(depth)?,
        layers: narrow(layers)?,
        pitch,
        slice_pitch,
        address: sampling.map_or([AddressMode::Clamp; 3], |s| s.address),
        filter: sampling.map_or(Filter::Point, |s| s.filter),
        read_normalized: sampling.is_some_and(|s| s.read_normalized),
        normalized_coords: sampling.is_some_and(|s| s.normalized_coords),
        srgb: sampling.is_some_and(|s| s.srgb),
        border: sampling.map_or([0.0; 4], |s| s.border),
        levels,
        mipmap_filter: sampling.map_or(Filter::Point, |s| s.mipmap_filter),
        lod_bias: sampling.map_or(0.0, |s| s.mipmap_level_bias),
        min_lod: sampling.map_or(0.0, |s| s.min_mipmap_level_clamp),
        max_lod: sampling.map_or(0.0, |s| s.max_mipmap_level_clamp),
    };
    d.check().map_err(|_| CudaError::INVALID_VALUE)?;
    Ok(d)
}

/// Writes the descriptor of a new object into device memory; its address
/// is the handle.
/// The array handle of an array resource.
fn resource_array(resource: &Resource) -> Result<u64, CudaError> {
    match *resource {
        Resource::Array(h) => Ok(h),
        _ => Err(CudaError::INVALID_VALUE),
    }
}

/// The format and level 0 of an array or mipmapped-array resource.
fn resource_image(resource: &Resource) -> Result<Option<Array>, CudaError> {
    Ok(match *resource {
        Resource::Array(h) => Some(array(h)?),
        Resource::Mipmapped(h) => Some(mipmapped(h)?.base),
        _ => None,
    })
}

fn create_object(device: usize, object: Object, what: &str) -> Result<u64, CudaError> {
    require_emulated(device, what)?;
    if matches!(object.resource, Resource::Mipmapped(_)) && object.sampling.is_none() {
        // Surfaces read one level of one array.
        return Err(CudaError::INVALID_VALUE);
    }
    if let Some(a) = resource_image(&object.resource)? {
        if a.device != device {
            return Err(CudaError::INVALID_VALUE);
        }
    } else if object.sampling.is_none() {
        return Err(CudaError::INVALID_VALUE);
    }
    if let Some(s) = object.sampling {
        // Linear filtering returns floats: integer texels read as integers
        // cannot be filtered.
        let format = match object.resource {
            Resource::Array(_) | Resource::Mipmapped(_) => {
                match resource_image(&object.resource)? {
                    Some(a) => a.format,
                    None => return Err(CudaError::INVALID_VALUE),
                }
            }
            Resource::Linear { format, .. } | Resource::Pitch2D { format, .. } => format,
        };
        // Linear memory (`tex1Dfetch`) is never filtered either; CUDA's
        // runtime answers both with cudaErrorInvalidFilterSetting.
        let integer = format.kind != ChannelKind::Float && !s.read_normalized;
        let linear_memory = matches!(object.resource, Resource::Linear { .. });
        if s.filter == Filter::Linear && (integer || linear_memory) {
            return Err(CudaError::INVALID_FILTER_SETTING);
        }
    }
    let bytes = descriptor(device, &object.resource, object.sampling.as_ref())?.encode();
    let handle = rt().malloc(DESCRIPTOR_BYTES as u64)?;
    if let Err(e) = rt().memcpy_htod(device, handle, &bytes) {
        let _ = rt().free(handle);
        return Err(e);
    }
    with_registry(|r| r.objects.insert(handle, object));
    Ok(handle)
}

/// `cudaCreateTextureObject` / `cuTexObjectCreate` on `device`.
pub(crate) fn create_texture(
    device: usize,
    resource: Resource,
    sampling: Sampling,
) -> Result<u64, CudaError> {
    create_object(
        device,
        Object {
            resource,
            sampling: Some(sampling),
        },
        "cudaCreateTextureObject",
    )
}

/// `cudaCreateSurfaceObject` / `cuSurfObjectCreate`: of an array. One made
/// without the surface load/store flag is accepted too, as NVIDIA's driver
/// accepts it (seen on an H200); what a kernel's access to it does is
/// undefined there.
pub(crate) fn create_surface(device: usize, resource: Resource) -> Result<u64, CudaError> {
    create_object(
        device,
        Object {
            resource,
            sampling: None,
        },
        "cudaCreateSurfaceObject",
    )
}

/// The object of `handle`, a texture object when `texture`, else a surface.
pub(crate) fn object(handle: u64, texture: bool) -> Result<Object, CudaError> {
    with_registry(|r| r.objects.get(&handle).copied())
        .filter(|o| o.sampling.is_some() == texture)
        .ok_or(CudaError::INVALID_VALUE)
}

/// Destroys a texture (`texture`) or surface object; 0 is accepted.
pub(crate) fn destroy_object(handle: u64, texture: bool) -> Result<(), CudaError> {
    if handle == 0 {
        return Ok(());
    }
    object(handle, texture)?;
    with_registry(|r| r.objects.remove(&handle));
    rt().free(handle)
}

/// `cudaTextureAddressMode` / `CUaddress_mode` (the same values).
pub(crate) fn address_mode(v: i32) -> Result<AddressMode, CudaError> {
    Ok(match v {
        0 => AddressMode::Wrap,
        1 => AddressMode::Clamp,
        2 => AddressMode::Mirror,
        3 => AddressMode::Border,
        _ => return Err(CudaError::INVALID_VALUE),
    })
}

/// `cudaTextureFilterMode` / `CUfilter_mode`.
pub(crate) fn filter_mode(v: i32) -> Result<Filter, CudaError> {
    Ok(match v {
        0 => Filter::Point,
        1 => Filter::Linear,
        _ => return Err(CudaError::INVALID_VALUE),
    })
}
