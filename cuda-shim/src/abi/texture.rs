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

/// `cudaResourceDesc`: a resource type and a 128-byte union.
#[repr(C)]
#[derive(Clone, Copy)]
pub(crate) struct ResourceDesc {
    pub(crate) res_type: c_int,
    pub(crate) res: ResourceUnion,
    pub(crate) flags: c_uint,
}

/// The union of `cudaResourceDesc`: the array handle, or the linear and
/// pitched-2-D members (`devPtr`, channel format, then sizes).
#[repr(C)]
#[derive(Clone, Copy)]
pub(crate) union ResourceUnion {
    pub(crate) array: *mut c_void,
    pub(crate) linear: ResourceLinear,
    pub(crate) pitch2d: ResourcePitch2D,
    pub(crate) reserved: [c_int; 32],
}

#[repr(C)]
#[derive(Clone, Copy)]
pub(crate) struct ResourceLinear {
    pub(crate) dev_ptr: *mut c_void,
    pub(crate) desc: ChannelFormatDesc,
    pub(crate) size_in_bytes: usize,
}

#[repr(C)]
#[derive(Clone, Copy)]
pub(crate) struct ResourcePitch2D {
    pub(crate) dev_ptr: *mut c_void,
    pub(crate) desc: ChannelFormatDesc,
    pub(crate) width: usize,
    pub(crate) height: usize,
    pub(crate) pitch_in_bytes: usize,
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

/// `CUDA_RESOURCE_DESC`: as the runtime's, with the driver's format
/// (`CUarray_format` and a channel count) in the linear and 2-D members.
#[repr(C)]
#[derive(Clone, Copy)]
pub(crate) struct DrvResourceDesc {
    pub(crate) res_type: c_int,
    pub(crate) res: DrvResourceUnion,
    pub(crate) flags: c_uint,
}

#[repr(C)]
#[derive(Clone, Copy)]
pub(crate) union DrvResourceUnion {
    pub(crate) array: *mut c_void,
    pub(crate) linear: DrvResourceLinear,
    pub(crate) pitch2d: DrvResourcePitch2D,
    pub(crate) reserved: [c_int; 32],
}

#[repr(C)]
#[derive(Clone, Copy)]
pub(crate) struct DrvResourceLinear {
    pub(crate) dev_ptr: u64,
    pub(crate) format: c_uint,
    pub(crate) num_channels: c_uint,
    pub(crate) size_in_bytes: usize,
}

#[repr(C)]
#[derive(Clone, Copy)]
pub(crate) struct DrvResourcePitch2D {
    pub(crate) dev_ptr: u64,
    pub(crate) format: c_uint,
    pub(crate) num_channels: c_uint,
    pub(crate) width: usize,
    pub(crate) height: usize,
    pub(crate) pitch_in_bytes: usize,
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
    assert!(size_of::<ResourceDesc>() == 144);
    assert!(offset_of!(ResourceDesc, flags) == 136);
    assert!(size_of::<TextureDesc>() == 72);
    assert!(size_of::<ResourceViewDesc>() == 112);
    assert!(size_of::<ArrayDescriptor>() == 24);
    assert!(size_of::<Array3DDescriptor>() == 40);
    assert!(size_of::<DrvResourceDesc>() == 144);
    assert!(size_of::<DrvTextureDesc>() == 104);
};
