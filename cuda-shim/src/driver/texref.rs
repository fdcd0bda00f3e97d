//! Texture references and surface references of the driver API
//! (`cuModuleGetTexRef`, `cuTexRef*`, `cuModuleGetSurfRef`, `cuSurfRef*`),
//! deprecated and gone from the CUDA 12 runtime, over texture and surface
//! objects.
//!
//! A `CUtexref` / `CUsurfref` is an object of this library recording what
//! the program set: format, bound memory or array, address modes, filter,
//! flags, border colour, mipmap parameters. The emulated device reads a
//! module's `.global .texref tex1` (PTX's non-unified mode) from an 8-byte
//! module variable `texref.tex1` (`surfref.<name>` for a `.surfref`) that
//! holds a texture (surface) object handle. Before each launch of a kernel
//! of a module ([`before_launch`]) every reference of that module that is
//! bound gets a texture or surface object made from its current state
//! (made again only when the state changed), and its handle is written into
//! the variable. A reference never bound holds 0, which faults as an
//! invalid handle when a kernel reads it.
//!
//! Texture and surface objects work on the emulated device only, so do
//! references: on a GPU behind the server `cuModuleGetTexRef` and
//! `cuModuleGetSurfRef` answer `CUDA_ERROR_NOT_SUPPORTED`.

use std::collections::HashMap;
use std::ffi::c_void;
use std::os::raw::{c_char, c_int, c_uint};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use parking_lot::Mutex;
use rcud_proto::texture::Filter;

use super::texture::{format_code, format_of};
use super::{c_str, context_device, out, rt, DriverError, DriverResult};
use crate::abi::texture::ArrayDescriptor;
use crate::image::{self, Resource, Sampling, ARRAY_SURFACE_LDST};

/// `CU_TRSA_OVERRIDE_FORMAT`: the only flag of `cuTexRefSetArray`.
const TRSA_OVERRIDE_FORMAT: c_uint = 0x01;
/// `CU_TRSF_*`: the flags `cuTexRefSetFlags` knows.
const TRSF_READ_AS_INTEGER: c_uint = 0x01;
const TRSF_NORMALIZED_COORDINATES: c_uint = 0x02;
const TRSF_SRGB: c_uint = 0x10;
const TRSF_DISABLE_TRILINEAR_OPTIMIZATION: c_uint = 0x20;
const TRSF_SEAMLESS_CUBEMAP: c_uint = 0x40;
const TRSF_ALL: c_uint = TRSF_READ_AS_INTEGER
    | TRSF_NORMALIZED_COORDINATES
    | TRSF_SRGB
    | TRSF_DISABLE_TRILINEAR_OPTIMIZATION
    | TRSF_SEAMLESS_CUBEMAP;
/// `CU_PARAM_TR_DEFAULT`: the only texture unit `cuParamSetTexRef` takes.
const PARAM_TR_DEFAULT: c_int = -1;
/// `cudaDeviceProp::maxTexture1DLinear` of current GPUs (2^27 texels), as
/// texture objects of linear memory check it.
const MAX_LINEAR_TEXELS: u64 = 1 << 27;

/// What a texture reference reads.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Bound {
    None,
    /// `cuTexRefSetAddress`: `bytes` from `ptr` (aligned), texels of the
    /// reference's format.
    Linear {
        ptr: u64,
        bytes: u64,
    },
    /// `cuTexRefSetAddress2D`: pitched memory (its format is the
    /// reference's, set from the descriptor).
    Pitch2D {
        ptr: u64,
        width: u64,
        height: u64,
        pitch: u64,
    },
    Array(u64),
    Mipmapped(u64),
}

/// A module's variable holding a reference's object handle.
#[derive(Debug, Clone)]
struct Variable {
    device: usize,
    module: u64,
    /// Its device address.
    addr: u64,
    /// The handle last written there.
    written: u64,
}

/// A texture reference's state.
#[derive(Debug, Clone)]
struct TexRef {
    /// `None` for one of `cuTexRefCreate`.
    var: Option<Variable>,
    /// `CUarray_format` and channel count; (0, 0) until set.
    format: (c_uint, c_int),
    bound: Bound,
    address: [c_int; 3],
    filter: c_int,
    flags: c_uint,
    border: [f32; 4],
    max_anisotropy: c_uint,
    mipmap_filter: c_int,
    mipmap_bias: f32,
    mipmap_clamp: [f32; 2],
    /// The texture object made for the state last launched with, and that
    /// state.
    object: Option<(u64, Resource, Sampling)>,
}

impl TexRef {
    fn new(var: Option<Variable>) -> Self {
        // A fresh reference: wrap addressing, point filtering, no flags (as
        // a zeroed CUDA_TEXTURE_DESC), no format and nothing bound.
        Self {
            var,
            format: (0, 0),
            bound: Bound::None,
            address: [0; 3],
            filter: 0,
            flags: 0,
            border: [0.0; 4],
            max_anisotropy: 0,
            mipmap_filter: 0,
            mipmap_bias: 0.0,
            mipmap_clamp: [0.0; 2],
            object: None,
        }
    }

    /// The resource and sampling a texture object of the current state
    /// needs; `None` while nothing is bound.
    fn wanted(&self) -> Result<Option<(Resource, Sampling)>, DriverError> {
        let format = || format_of(self.format.0, self.format.1 as c_uint);
        let resource = match self.bound {
            Bound::None => return Ok(None),
            Bound::Linear { ptr, bytes } => {
                let format = format()?;
                // Whole texels only, as the hardware counts them.
                let bytes = bytes - bytes % format.bytes();
                Resource::Linear { ptr, format, bytes }
            }
            Bound::Pitch2D {
                ptr,
                width,
                height,
                pitch,
            } => Resource::Pitch2D {
                ptr,
                format: format()?,
                width,
                height,
                pitch,
            },
            Bound::Array(h) => Resource::Array(h),
            Bound::Mipmapped(h) => Resource::Mipmapped(h),
        };
        let mode = |m: c_int| image::address_mode(m).map_err(DriverError::from);
        let linear_memory = matches!(self.bound, Bound::Linear { .. });
        let sampling = Sampling {
            address: [
                mode(self.address[0])?,
                mode(self.address[1])?,
                mode(self.address[2])?,
            ],
            // Filtering does not apply to linear memory (the filter mode
            // "has no effect" there, says cuda.h).
            filter: if linear_memory {
                Filter::Point
            } else {
                image::filter_mode(self.filter)?
            },
            read_normalized: self.flags & TRSF_READ_AS_INTEGER == 0,
            normalized_coords: self.flags & TRSF_NORMALIZED_COORDINATES != 0,
            srgb: self.flags & TRSF_SRGB != 0,
            border: self.border,
            max_anisotropy: self.max_anisotropy,
            mipmap_filter: image::filter_mode(self.mipmap_filter)?,
            mipmap_level_bias: self.mipmap_bias,
            min_mipmap_level_clamp: self.mipmap_clamp[0],
            max_mipmap_level_clamp: self.mipmap_clamp[1],
            disable_trilinear_optimization: self.flags & TRSF_DISABLE_TRILINEAR_OPTIMIZATION != 0,
            seamless_cubemap: self.flags & TRSF_SEAMLESS_CUBEMAP != 0,
        };
        Ok(Some((resource, sampling)))
    }
}

/// A surface reference's state.
#[derive(Debug, Clone)]
struct SurfRef {
    var: Variable,
    array: Option<u64>,
    /// The surface object made for the array last launched with.
    object: Option<(u64, u64)>,
}

#[derive(Default)]
struct Refs {
    textures: HashMap<u64, TexRef>,
    surfaces: HashMap<u64, SurfRef>,
    /// (module, name, surface?) → handle: a module's reference is one
    /// object however often it is asked for.
    by_name: HashMap<(u64, String, bool), u64>,
}

static REFS: Mutex<Option<Refs>> = Mutex::new(None);
/// Whether a module reference was ever made: launches skip the work until.
static ANY_MODULE_REF: AtomicBool = AtomicBool::new(false);
/// Handles: never 0, never a device address or array handle.
static NEXT: AtomicU64 = AtomicU64::new(1);
const TEXREF_TAG: u64 = 0x7e7f_0000_0000_0000;
const SURFREF_TAG: u64 = 0x5f5f_0000_0000_0000;

fn with_refs<T>(f: impl FnOnce(&mut Refs) -> T) -> T {
    f(REFS.lock().get_or_insert_with(Refs::default))
}

fn new_handle(tag: u64) -> u64 {
    tag | NEXT.fetch_add(1, Ordering::Relaxed) << 4
}

/// Runs `f` on the texture reference `h` (after the `cuInit` and context
/// checks): `CUDA_ERROR_INVALID_VALUE` for NULL, `CUDA_ERROR_INVALID_HANDLE`
/// for what is no texture reference.
fn with_tex<T>(
    h: *mut c_void,
    f: impl FnOnce(&mut TexRef) -> Result<T, DriverError>,
) -> Result<T, DriverError> {
    context_device()?;
    if h.is_null() {
        return Err(DriverError::INVALID_VALUE);
    }
    with_refs(|r| match r.textures.get_mut(&(h as u64)) {
        Some(t) => f(t),
        None => Err(DriverError::INVALID_HANDLE),
    })
}

fn with_surf<T>(
    h: *mut c_void,
    f: impl FnOnce(&mut SurfRef) -> Result<T, DriverError>,
) -> Result<T, DriverError> {
    context_device()?;
    if h.is_null() {
        return Err(DriverError::INVALID_VALUE);
    }
    with_refs(|r| match r.surfaces.get_mut(&(h as u64)) {
        Some(s) => f(s),
        None => Err(DriverError::INVALID_HANDLE),
    })
}

/// The variable of module reference `name` (`kind`: "texref" or
/// "surfref"), or `CUDA_ERROR_NOT_FOUND`. The emulated device names it so
/// (`rcud_emu::ptx::opaque_var_name`); a GPU behind the server has no such
/// variables, and no texture objects either.
fn module_variable(
    module: u64,
    name: *const c_char,
    kind: &str,
) -> Result<(String, Variable), DriverError> {
    let device = context_device()?;
    let name = c_str(name)?;
    image::require_emulated(device, "texture and surface references")?;
    let (addr, size) = rt()
        .module_global(device, module, &format!("{kind}.{name}"))
        .map_err(|e| match DriverError::from(e) {
            DriverError::INVALID_VALUE => DriverError::NOT_FOUND,
            d => d,
        })?;
    if size != 8 {
        return Err(DriverError::NOT_FOUND);
    }
    let var = Variable {
        device,
        module,
        addr,
        written: 0,
    };
    Ok((name.to_string(), var))
}

driver_fn! { cuModuleGetTexRef (tex: *mut *mut c_void, module: u64, name: *const c_char) {
    if tex.is_null() {
        context_device()?;
        return Err(DriverError::INVALID_VALUE);
    }
    let (name, var) = module_variable(module, name, "texref")?;
    let h = with_refs(|r| {
        *r.by_name.entry((module, name, false)).or_insert_with(|| {
            let h = new_handle(TEXREF_TAG);
            r.textures.insert(h, TexRef::new(Some(var)));
            h
        })
    });
    ANY_MODULE_REF.store(true, Ordering::Release);
    out(tex, h as *mut c_void)
} }

driver_fn! { cuModuleGetSurfRef (surf: *mut *mut c_void, module: u64, name: *const c_char) {
    if surf.is_null() {
        context_device()?;
        return Err(DriverError::INVALID_VALUE);
    }
    let (name, var) = module_variable(module, name, "surfref")?;
    let h = with_refs(|r| {
        *r.by_name.entry((module, name, true)).or_insert_with(|| {
            let h = new_handle(SURFREF_TAG);
            r.surfaces.insert(h, SurfRef { var, array: None, object: None });
            h
        })
    });
    ANY_MODULE_REF.store(true, Ordering::Release);
    out(surf, h as *mut c_void)
} }

driver_fn! { cuTexRefCreate (tex: *mut *mut c_void) {
    context_device()?;
    if tex.is_null() {
        return Err(DriverError::INVALID_VALUE);
    }
    let h = new_handle(TEXREF_TAG);
    with_refs(|r| r.textures.insert(h, TexRef::new(None)));
    out(tex, h as *mut c_void)
} }

driver_fn! { cuTexRefDestroy (tex: *mut c_void) {
    // Only references of cuTexRefCreate: a module's belong to the module.
    let object = with_tex(tex, |t| {
        if t.var.is_some() {
            return Err(DriverError::INVALID_HANDLE);
        }
        Ok(t.object)
    })?;
    with_refs(|r| r.textures.remove(&(tex as u64)));
    if let Some((o, _, _)) = object {
        image::destroy_object(o, true)?;
    }
    Ok(())
} }

// ---- binding ------------------------------------------------------------------

/// Whether `[ptr, ptr + len)` is device memory of `device` (NULL and
/// addresses of no allocation are `CUDA_ERROR_INVALID_VALUE`). The 32-bit
/// forms of the old API can never pass: rcud's device addresses lie above
/// 4 GiB.
fn check_memory(device: usize, ptr: u64, len: u64) -> DriverResult {
    match rt().allocation(ptr) {
        Some((base, size, d))
            if d == device && ptr.checked_add(len).is_some_and(|end| end <= base + size) =>
        {
            Ok(())
        }
        _ => Err(DriverError::INVALID_VALUE),
    }
}

/// `cuTexRefSetAddress`: binds `bytes` of linear memory at `dptr`; the
/// byte offset of `dptr` from the texture alignment below it.
fn set_address(tex: *mut c_void, dptr: u64, bytes: u64) -> Result<u64, DriverError> {
    let device = context_device()?;
    let align = rt().props(device as i32)?.texture_alignment.max(1);
    // The hardware (and a texture object here) needs an aligned base: the
    // texture starts at the alignment boundary at or below `dptr`, and the
    // program adds the offset to its fetches, as with CUDA. cuMemAlloc's
    // pointers are aligned, so for them the offset is 0.
    let offset = dptr % align;
    let base = dptr - offset;
    if bytes == 0 {
        return Err(DriverError::INVALID_VALUE);
    }
    check_memory(device, dptr, bytes)?;
    let bytes = bytes
        .checked_add(offset)
        .ok_or(DriverError::INVALID_VALUE)?;
    with_tex(tex, |t| {
        if let Ok(format) = format_of(t.format.0, t.format.1 as c_uint) {
            if bytes / format.bytes() > MAX_LINEAR_TEXELS {
                return Err(DriverError::INVALID_VALUE);
            }
        }
        t.bound = Bound::Linear { ptr: base, bytes };
        Ok(offset)
    })
}

driver_fn! { cuTexRefSetAddress_v2 (offset: *mut usize, tex: *mut c_void, dptr: u64, bytes: usize) {
    let o = set_address(tex, dptr, bytes as u64)?;
    if !offset.is_null() {
        out(offset, o as usize)?;
    }
    Ok(())
} }

/// `cuTexRefSetAddress2D`: binds pitched memory of the descriptor's
/// extent and format, which becomes the reference's format.
fn set_address_2d(tex: *mut c_void, desc: &ArrayDescriptor, dptr: u64, pitch: u64) -> DriverResult {
    let device = context_device()?;
    let format = format_of(desc.format, desc.num_channels)?;
    let props = rt().props(device as i32)?;
    let [max_w, max_h, max_pitch] = props.max_texture_2d_linear.map(|v| v.max(0) as u64);
    let (width, height) = (desc.width as u64, desc.height as u64);
    let bad = dptr == 0
        || !dptr.is_multiple_of(props.texture_alignment.max(1))
        || !pitch.is_multiple_of(props.texture_pitch_alignment.max(1))
        || width == 0
        || height == 0
        || width > max_w
        || height > max_h
        || pitch > max_pitch
        || pitch < width.saturating_mul(format.bytes());
    if bad {
        return Err(DriverError::INVALID_VALUE);
    }
    check_memory(device, dptr, (height - 1) * pitch + width * format.bytes())?;
    with_tex(tex, |t| {
        t.format = (desc.format, desc.num_channels as c_int);
        t.bound = Bound::Pitch2D {
            ptr: dptr,
            width,
            height,
            pitch,
        };
        Ok(())
    })
}

fn read<'a, T>(p: *const T) -> Result<&'a T, DriverError> {
    context_device()?;
    // SAFETY: the API passes a valid structure or NULL.
    unsafe { p.as_ref() }.ok_or(DriverError::INVALID_VALUE)
}

// `_v2` (CUDA 3.2) and `_v3` (CUDA 4.1, what cuda.h maps the name to) take
// the same arguments.
driver_fn! { [cuTexRefSetAddress2D_v3, cuTexRefSetAddress2D_v2] (tex: *mut c_void, desc: *const ArrayDescriptor, dptr: u64, pitch: usize) {
    set_address_2d(tex, read(desc)?, dptr, pitch as u64)
} }

driver_fn! { cuTexRefSetArray (tex: *mut c_void, array: *mut c_void, flags: c_uint) {
    context_device()?;
    if flags != TRSA_OVERRIDE_FORMAT {
        return Err(DriverError::INVALID_VALUE);
    }
    let a = image::array(array as u64).map_err(|_| DriverError::INVALID_VALUE)?;
    with_tex(tex, |t| {
        // CU_TRSA_OVERRIDE_FORMAT: the array's format replaces the
        // reference's.
        t.format = (format_code(a.format), c_int::from(a.format.channels));
        t.bound = Bound::Array(array as u64);
        Ok(())
    })
} }

driver_fn! { cuTexRefSetMipmappedArray (tex: *mut c_void, array: *mut c_void, flags: c_uint) {
    context_device()?;
    if flags != TRSA_OVERRIDE_FORMAT {
        return Err(DriverError::INVALID_VALUE);
    }
    let m = image::mipmapped(array as u64).map_err(|_| DriverError::INVALID_VALUE)?;
    with_tex(tex, |t| {
        t.format = (format_code(m.base.format), c_int::from(m.base.format.channels));
        t.bound = Bound::Mipmapped(array as u64);
        Ok(())
    })
} }

driver_fn! { cuTexRefGetAddress_v2 (dptr: *mut u64, tex: *mut c_void) {
    let p = with_tex(tex, |t| match t.bound {
        Bound::Linear { ptr, .. } | Bound::Pitch2D { ptr, .. } => Ok(ptr),
        _ => Err(DriverError::INVALID_VALUE),
    })?;
    out(dptr, p)
} }

driver_fn! { cuTexRefGetArray (array: *mut *mut c_void, tex: *mut c_void) {
    let h = with_tex(tex, |t| match t.bound {
        Bound::Array(h) => Ok(h),
        _ => Err(DriverError::INVALID_VALUE),
    })?;
    out(array, h as *mut c_void)
} }

driver_fn! { cuTexRefGetMipmappedArray (array: *mut *mut c_void, tex: *mut c_void) {
    let h = with_tex(tex, |t| match t.bound {
        Bound::Mipmapped(h) => Ok(h),
        _ => Err(DriverError::INVALID_VALUE),
    })?;
    out(array, h as *mut c_void)
} }

// ---- sampling state -------------------------------------------------------------

driver_fn! { cuTexRefSetFormat (tex: *mut c_void, format: c_uint, channels: c_int) {
    let channels_u = c_uint::try_from(channels).map_err(|_| DriverError::INVALID_VALUE)?;
    format_of(format, channels_u)?;
    with_tex(tex, |t| {
        t.format = (format, channels);
        Ok(())
    })
} }

driver_fn! { cuTexRefGetFormat (format: *mut c_uint, channels: *mut c_int, tex: *mut c_void) {
    let (f, c) = with_tex(tex, |t| Ok(t.format))?;
    // Either output may be NULL, and is then skipped.
    if !format.is_null() {
        out(format, f)?;
    }
    if !channels.is_null() {
        out(channels, c)?;
    }
    Ok(())
} }

fn dimension(dim: c_int) -> Result<usize, DriverError> {
    usize::try_from(dim)
        .ok()
        .filter(|&d| d < 3)
        .ok_or(DriverError::INVALID_VALUE)
}

driver_fn! { cuTexRefSetAddressMode (tex: *mut c_void, dim: c_int, mode: c_int) {
    let dim = dimension(dim)?;
    image::address_mode(mode)?;
    with_tex(tex, |t| {
        t.address[dim] = mode;
        Ok(())
    })
} }

driver_fn! { cuTexRefGetAddressMode (mode: *mut c_int, tex: *mut c_void, dim: c_int) {
    let dim = dimension(dim)?;
    out(mode, with_tex(tex, |t| Ok(t.address[dim]))?)
} }

driver_fn! { cuTexRefSetFilterMode (tex: *mut c_void, mode: c_int) {
    image::filter_mode(mode)?;
    with_tex(tex, |t| {
        t.filter = mode;
        Ok(())
    })
} }

driver_fn! { cuTexRefGetFilterMode (mode: *mut c_int, tex: *mut c_void) {
    out(mode, with_tex(tex, |t| Ok(t.filter))?)
} }

driver_fn! { cuTexRefSetMipmapFilterMode (tex: *mut c_void, mode: c_int) {
    image::filter_mode(mode)?;
    with_tex(tex, |t| {
        t.mipmap_filter = mode;
        Ok(())
    })
} }

driver_fn! { cuTexRefGetMipmapFilterMode (mode: *mut c_int, tex: *mut c_void) {
    out(mode, with_tex(tex, |t| Ok(t.mipmap_filter))?)
} }

driver_fn! { cuTexRefSetFlags (tex: *mut c_void, flags: c_uint) {
    if flags & !TRSF_ALL != 0 {
        context_device()?;
        return Err(DriverError::INVALID_VALUE);
    }
    with_tex(tex, |t| {
        t.flags = flags;
        Ok(())
    })
} }

driver_fn! { cuTexRefGetFlags (flags: *mut c_uint, tex: *mut c_void) {
    out(flags, with_tex(tex, |t| Ok(t.flags))?)
} }

driver_fn! { cuTexRefSetBorderColor (tex: *mut c_void, color: *const f32) {
    let color = read(color.cast::<[f32; 4]>())?;
    with_tex(tex, |t| {
        t.border = *color;
        Ok(())
    })
} }

driver_fn! { cuTexRefGetBorderColor (color: *mut f32, tex: *mut c_void) {
    let c = with_tex(tex, |t| Ok(t.border))?;
    out(color.cast::<[f32; 4]>(), c)
} }

driver_fn! { cuTexRefSetMaxAnisotropy (tex: *mut c_void, max: c_uint) {
    with_tex(tex, |t| {
        t.max_anisotropy = max;
        Ok(())
    })
} }

driver_fn! { cuTexRefGetMaxAnisotropy (max: *mut c_int, tex: *mut c_void) {
    let m = with_tex(tex, |t| Ok(t.max_anisotropy))?;
    out(max, c_int::try_from(m).unwrap_or(c_int::MAX))
} }

driver_fn! { cuTexRefSetMipmapLevelBias (tex: *mut c_void, bias: f32) {
    with_tex(tex, |t| {
        t.mipmap_bias = bias;
        Ok(())
    })
} }

driver_fn! { cuTexRefGetMipmapLevelBias (bias: *mut f32, tex: *mut c_void) {
    out(bias, with_tex(tex, |t| Ok(t.mipmap_bias))?)
} }

driver_fn! { cuTexRefSetMipmapLevelClamp (tex: *mut c_void, min: f32, max: f32) {
    with_tex(tex, |t| {
        t.mipmap_clamp = [min, max];
        Ok(())
    })
} }

driver_fn! { cuTexRefGetMipmapLevelClamp (min: *mut f32, max: *mut f32, tex: *mut c_void) {
    let [lo, hi] = with_tex(tex, |t| Ok(t.mipmap_clamp))?;
    if min.is_null() || max.is_null() {
        return Err(DriverError::INVALID_VALUE);
    }
    out(min, lo)?;
    out(max, hi)
} }

// ---- surface references -----------------------------------------------------------

driver_fn! { cuSurfRefSetArray (surf: *mut c_void, array: *mut c_void, flags: c_uint) {
    context_device()?;
    if flags != 0 {
        return Err(DriverError::INVALID_VALUE);
    }
    let a = image::array(array as u64).map_err(|_| DriverError::INVALID_VALUE)?;
    // Surfaces read and write arrays made for surface load/store only.
    if a.flags & ARRAY_SURFACE_LDST == 0 {
        return Err(DriverError::INVALID_VALUE);
    }
    with_surf(surf, |s| {
        s.array = Some(array as u64);
        Ok(())
    })
} }

driver_fn! { cuSurfRefGetArray (array: *mut *mut c_void, surf: *mut c_void) {
    let h = with_surf(surf, |s| s.array.ok_or(DriverError::INVALID_VALUE))?;
    out(array, h as *mut c_void)
} }

// ---- launches ----------------------------------------------------------------------

// Every reference of a kernel's module is brought up to date at its launch
// (`before_launch`), so naming one for a function adds nothing; the call
// checks its arguments as CUDA's does.
driver_fn! { cuParamSetTexRef (function: u64, unit: c_int, tex: *mut c_void) {
    context_device()?;
    if function == 0 {
        return Err(DriverError::INVALID_HANDLE);
    }
    if unit != PARAM_TR_DEFAULT {
        return Err(DriverError::INVALID_VALUE);
    }
    let module = rt().function_module(function)?;
    with_tex(tex, |t| match &t.var {
        Some(v) if v.module == module => Ok(()),
        _ => Err(DriverError::INVALID_VALUE),
    })
} }

/// Forgets the references of an unloaded module (their handles are then
/// invalid, as CUDA destroys them with the module) and frees their objects.
pub(crate) fn module_unloaded(module: u64) {
    let objects = with_refs(|r| {
        let mut objects = Vec::new();
        r.textures.retain(|_, t| {
            let keep = t.var.as_ref().is_none_or(|v| v.module != module);
            if !keep {
                objects.extend(t.object.map(|(h, _, _)| (h, true)));
            }
            keep
        });
        r.surfaces.retain(|_, s| {
            let keep = s.var.module != module;
            if !keep {
                objects.extend(s.object.map(|(h, _)| (h, false)));
            }
            keep
        });
        r.by_name.retain(|(m, _, _), _| *m != module);
        objects
    });
    for (h, texture) in objects {
        let _ = image::destroy_object(h, texture);
    }
}

/// One variable write a launch needs: device, address, handle.
type Write = (usize, u64, u64);

/// Makes sure every bound texture and surface reference of `function`'s
/// module has an object of its current state, and that the module's
/// variable holds its handle. Called by the launches of `launch.rs`.
pub(crate) fn before_launch(function: u64) -> DriverResult {
    if !ANY_MODULE_REF.load(Ordering::Acquire) {
        return Ok(());
    }
    // Functions of the runtime's registered fatbins have no module handle
    // and no references.
    let Ok(module) = rt().function_module(function) else {
        return Ok(());
    };
    let mut guard = REFS.lock();
    let Some(refs) = guard.as_mut() else {
        return Ok(());
    };
    let mut writes: Vec<Write> = Vec::new();
    let mut stale: Vec<(u64, bool)> = Vec::new();
    // A reference whose state makes no object fails the launch, after the
    // others are brought up to date.
    let mut failure = None;
    for t in refs.textures.values_mut() {
        if t.var.as_ref().is_none_or(|v| v.module != module) {
            continue;
        }
        let handle = match texture_object(t, &mut stale) {
            Ok(h) => h,
            Err(e) => {
                failure.get_or_insert(e);
                continue;
            }
        };
        if let Some(var) = t.var.as_mut().filter(|v| v.written != handle) {
            writes.push((var.device, var.addr, handle));
            var.written = handle;
        }
    }
    for s in refs.surfaces.values_mut() {
        if s.var.module != module {
            continue;
        }
        let handle = match (s.array, s.object) {
            (None, _) => 0,
            (Some(a), Some((h, made_of))) if a == made_of => h,
            (Some(a), _) => match image::create_surface(s.var.device, Resource::Array(a)) {
                Ok(h) => {
                    if let Some((old, _)) = s.object.replace((h, a)) {
                        stale.push((old, false));
                    }
                    h
                }
                Err(e) => {
                    failure.get_or_insert(e.into());
                    continue;
                }
            },
        };
        if s.var.written != handle {
            writes.push((s.var.device, s.var.addr, handle));
            s.var.written = handle;
        }
    }
    drop(guard);
    // The server runs a device's work in issue order: launches queued
    // before these writes still read the handles they were launched with.
    for (device, addr, handle) in writes {
        rt().memcpy_htod(device, addr, &handle.to_le_bytes())?;
    }
    for (old, texture) in stale {
        // The objects of earlier states go once no variable names them.
        let _ = image::destroy_object(old, texture);
    }
    failure.map_or(Ok(()), Err)
}

/// The texture object of a module reference's current state (0 while
/// unbound), made when the state changed; the replaced one goes to `stale`.
fn texture_object(t: &mut TexRef, stale: &mut Vec<(u64, bool)>) -> Result<u64, DriverError> {
    let Some((resource, sampling)) = t.wanted()? else {
        return Ok(0);
    };
    if let Some((h, r, s)) = t.object {
        if r == resource && s == sampling {
            return Ok(h);
        }
    }
    let device = t.var.as_ref().map_or(0, |v| v.device);
    let h = image::create_texture(device, resource, sampling)?;
    if let Some((old, _, _)) = t.object.replace((h, resource, sampling)) {
        stale.push((old, true));
    }
    Ok(h)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fresh_reference_samples_like_a_zeroed_descriptor() {
        let mut t = TexRef::new(None);
        assert_eq!(t.wanted(), Ok(None));
        t.bound = Bound::Array(1);
        let (_, s) = t.wanted().unwrap().unwrap();
        assert_eq!(s.filter, Filter::Point);
        assert!(s.read_normalized && !s.normalized_coords);
        t.flags = TRSF_READ_AS_INTEGER | TRSF_NORMALIZED_COORDINATES;
        t.filter = 1;
        let (_, s) = t.wanted().unwrap().unwrap();
        assert!(!s.read_normalized && s.normalized_coords);
        assert_eq!(s.filter, Filter::Linear);
        // Linear memory is never filtered, and needs a format.
        t.bound = Bound::Linear {
            ptr: 256,
            bytes: 10,
        };
        assert_eq!(t.wanted(), Err(DriverError::INVALID_VALUE));
        t.format = (0x20, 1);
        let (r, s) = t.wanted().unwrap().unwrap();
        assert_eq!(s.filter, Filter::Point);
        assert!(matches!(r, Resource::Linear { bytes: 8, .. }));
    }
}
