//! C ABI of CUDA arrays, texture and surface objects: the runtime's
//! `cudaChannelFormatDesc`, `cudaResourceDesc`, `cudaTextureDesc` and the
//! driver's `CUDA_ARRAY_DESCRIPTOR`, `CUDA_ARRAY3D_DESCRIPTOR`,
//! `CUDA_RESOURCE_DESC`, `CUDA_TEXTURE_DESC`, as CUDA 13's headers lay
//! them out.

use std::ffi::c_void;
use std::os::raw::{c_int, c_uint};

/// `cudaChannelFormatDesc`: bits of each channel and their kind.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct ChannelFormatDesc {
    pub(crate) x: c_int,
    pub(crate) y: c_int,
    pub(crate) z: c_int,
    pub(crate) w: c_int,
    pub(crate) f: c_int,
}

/// `cudaResourceType` / `CUresourcetype` (the same values).
pub(crate) const RESOURCE_ARRAY: c_int = 0;
pub(crate) const RESOURCE_MIPMAPPED_ARRAY: c_int = 1;
pub(crate) const RESOURCE_LINEAR: c_int = 2;
pub(crate) const RESOURCE_PITCH2D: c_int = 3;

/// `cudaResourceDesc` (`F` = [`ChannelFormatDesc`]) and `CUDA_RESOURCE_DESC`
/// (`F` = [`DrvFormat`]): a resource type and a 128-byte union whose linear
/// and pitched-2-D members name the texel format each API's way.
#[repr(C)]
#[derive(Clone, Copy)]
pub(crate) struct ResourceDesc<F: Copy> {
    pub(crate) res_type: c_int,
    pub(crate) res: ResourceUnion<F>,
    pub(crate) flags: c_uint,
}

/// The union of a resource descriptor: the array handle, or the linear and
/// pitched-2-D members (device pointer, format, then sizes).
#[repr(C)]
#[derive(Clone, Copy)]
pub(crate) union ResourceUnion<F: Copy> {
    pub(crate) array: *mut c_void,
    pub(crate) linear: ResourceLinear<F>,
    pub(crate) pitch2d: ResourcePitch2D<F>,
    pub(crate) reserved: [c_int; 32],
}

#[repr(C)]
#[derive(Clone, Copy)]
pub(crate) struct ResourceLinear<F> {
    pub(crate) dev_ptr: u64,
    pub(crate) format: F,
    pub(crate) size_in_bytes: usize,
}

#[repr(C)]
#[derive(Clone, Copy)]
pub(crate) struct ResourcePitch2D<F> {
    pub(crate) dev_ptr: u64,
    pub(crate) format: F,
    pub(crate) width: usize,
    pub(crate) height: usize,
    pub(crate) pitch_in_bytes: usize,
}

/// The driver's texel format: a `CUarray_format` and a channel count.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub(crate) struct DrvFormat {
    pub(crate) format: c_uint,
    pub(crate) num_channels: c_uint,
}

/// `cudaTextureDesc`.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct TextureDesc {
    pub(crate) address_mode: [c_int; 3],
    pub(crate) filter_mode: c_int,
    pub(crate) read_mode: c_int,
    pub(crate) srgb: c_int,
    pub(crate) border_color: [f32; 4],
    pub(crate) normalized_coords: c_int,
    pub(crate) max_anisotropy: c_uint,
    pub(crate) mipmap_filter_mode: c_int,
    pub(crate) mipmap_level_bias: f32,
    pub(crate) min_mipmap_level_clamp: f32,
    pub(crate) max_mipmap_level_clamp: f32,
    pub(crate) disable_trilinear_optimization: c_int,
    pub(crate) seamless_cubemap: c_int,
}

/// `cudaResourceViewDesc`: only checked to be absent or a plain view.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct ResourceViewDesc {
    pub(crate) format: c_int,
    pub(crate) width: usize,
    pub(crate) height: usize,
    pub(crate) depth: usize,
    pub(crate) first_mipmap_level: c_uint,
    pub(crate) last_mipmap_level: c_uint,
    pub(crate) first_layer: c_uint,
    pub(crate) last_layer: c_uint,
    pub(crate) reserved: [c_uint; 16],
}

/// `CUDA_ARRAY_DESCRIPTOR`.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct ArrayDescriptor {
    pub(crate) width: usize,
    pub(crate) height: usize,
    pub(crate) format: c_uint,
    pub(crate) num_channels: c_uint,
}

/// `CUDA_ARRAY3D_DESCRIPTOR`.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Array3DDescriptor {
    pub(crate) width: usize,
    pub(crate) height: usize,
    pub(crate) depth: usize,
    pub(crate) format: c_uint,
    pub(crate) num_channels: c_uint,
    pub(crate) flags: c_uint,
}

/// `CUDA_TEXTURE_DESC`.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct DrvTextureDesc {
    pub(crate) address_mode: [c_int; 3],
    pub(crate) filter_mode: c_int,
    pub(crate) flags: c_uint,
    pub(crate) max_anisotropy: c_uint,
    pub(crate) mipmap_filter_mode: c_int,
    pub(crate) mipmap_level_bias: f32,
    pub(crate) min_mipmap_level_clamp: f32,
    pub(crate) max_mipmap_level_clamp: f32,
    pub(crate) border_color: [f32; 4],
    pub(crate) reserved: [c_int; 12],
}

const _: () = {
    use std::mem::{offset_of, size_of};
    assert!(size_of::<ChannelFormatDesc>() == 20);
    assert!(size_of::<ResourceDesc<ChannelFormatDesc>>() == 144);
    assert!(offset_of!(ResourceDesc<ChannelFormatDesc>, flags) == 136);
    assert!(offset_of!(ResourceLinear<ChannelFormatDesc>, size_in_bytes) == 32);
    assert!(offset_of!(ResourcePitch2D<ChannelFormatDesc>, pitch_in_bytes) == 48);
    assert!(offset_of!(ResourceLinear<DrvFormat>, size_in_bytes) == 16);
    assert!(offset_of!(ResourcePitch2D<DrvFormat>, pitch_in_bytes) == 32);
    assert!(size_of::<TextureDesc>() == 72);
    assert!(size_of::<ResourceViewDesc>() == 112);
    assert!(size_of::<ArrayDescriptor>() == 24);
    assert!(size_of::<Array3DDescriptor>() == 40);
    assert!(size_of::<ResourceDesc<DrvFormat>>() == 144);
    assert!(size_of::<DrvTextureDesc>() == 104);
};
