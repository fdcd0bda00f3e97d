//! Texture and surface instructions (`tex`, `tld4`, `txq`, `suld`, `sust`,
//! `suq`) in unified mode: the handle is the device address of an
//! [`ImageDescriptor`] the client wrote. Sampling follows the CUDA
//! programming guide's "Texture Fetching" appendix: texel coordinates
//! `x = u * width` for normalized coordinates, nearest point `floor(x)`,
//! linear filtering from `x - 0.5` with 9-bit fixed-point weights (8
//! fractional bits), address modes per coordinate, and the cubemap face
//! table. Every texel goes through the launch's checked memory view.

use half::f16;
use rcud_proto::texture::{
    AddressMode, ChannelKind, Filter, ImageDescriptor, Shape, DESCRIPTOR_BYTES,
};

use super::{lanes_of, Exc, ExcKind, Mem, Res};
use crate::ptx::ir::*;

fn reg(r: &[u64], s: R, lane: usize) -> u64 {
    if s == NONE {
        0
    } else {
        r[s as usize * 32 + lane]
    }
}

fn set(r: &mut [u64], s: R, lane: usize, v: u64) {
    if s != NONE {
        r[s as usize * 32 + lane] = v;
    }
}

/// A fault of this instruction with a message; `addr` is the handle.
fn fault(lane: usize, addr: u64, why: impl Into<String>) -> Box<Exc> {
    let mut e = Exc::mem(
        ExcKind::Illegal,
        lane,
        addr,
        DESCRIPTOR_BYTES as u32,
        Msp::Global,
    );
    e.msg = why.into();
    e
}

/// Reads and validates the descriptor at `handle`: outside the tenant's
/// memory or malformed, the kernel faults with `IllegalAddress`.
fn descriptor(mem: &mut Mem<'_, '_, '_>, handle: u64, lane: usize) -> Res<ImageDescriptor> {
    if !handle.is_multiple_of(8) {
        return Err(fault(
            lane,
            handle,
            "invalid texture or surface object: misaligned handle",
        ));
    }
    let mut b = [0u8; DESCRIPTOR_BYTES];
    for (k, chunk) in b.chunks_exact_mut(8).enumerate() {
        let a = handle.wrapping_add(8 * k as u64);
        let v = mem.load(Msp::Global, a, 8, lane).map_err(|_| {
            fault(
                lane,
                handle,
                "invalid texture or surface object: not in device memory",
            )
        })?;
        chunk.copy_from_slice(&v.to_le_bytes());
    }
    ImageDescriptor::decode(&b).map_err(|e| fault(lane, handle, e.to_string()))
}

/// A fetched (or filtered) texel: floats when the texture reads as floats
/// (float channels or normalized-float read mode), else raw integers.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Val {
    F([f32; 4]),
    I([u32; 4]),
}

/// Whether reads of `d` return floats.
fn float_result(d: &ImageDescriptor) -> bool {
    d.kind == ChannelKind::Float || (d.read_normalized && d.bits <= 16)
}

/// The sRGB transfer function's inverse (sRGB-encoded value to linear).
fn srgb_to_linear(c: f32) -> f32 {
    if c <= 0.04045 {
        c / 12.92
    } else {
        ((c + 0.055) / 1.055).powf(2.4)
    }
}

/// Channel values as read. CUDA's texture unit zero-fills the channels
/// the format lacks, alpha included (a 1-channel texture read as float4
/// gives (r, 0, 0, 0), unlike graphics APIs' alpha of 1).
fn convert(d: &ImageDescriptor, raw: [u64; 4]) -> Val {
    let n = usize::from(d.channels).min(4);
    if float_result(d) {
        let mut v = [0.0; 4];
        for c in 0..n {
            let x = raw[c];
            v[c] = match (d.kind, d.bits) {
                (ChannelKind::Float, 16) => f16::from_bits(x as u16).to_f32(),
                (ChannelKind::Float, _) => f32::from_bits(x as u32),
                (ChannelKind::Unsigned, 8) => f32::from(x as u8) / 255.0,
                (ChannelKind::Unsigned, _) => f32::from(x as u16) / 65535.0,
                // The most negative value also maps to -1.
                (ChannelKind::Signed, 8) => (f32::from(x as u8 as i8) / 127.0).max(-1.0),
                (ChannelKind::Signed, _) => (f32::from(x as u16 as i16) / 32767.0).max(-1.0),
            };
        }
        if d.srgb && d.read_normalized && d.kind == ChannelKind::Unsigned && d.bits == 8 {
            // Alpha stays linear.
            for x in v.iter_mut().take(n.min(3)) {
                *x = srgb_to_linear(*x);
            }
        }
        Val::F(v)
    } else {
        let mut v = [0; 4];
        for c in 0..n {
            let x = raw[c];
            v[c] = match (d.kind, d.bits) {
                (ChannelKind::Signed, 8) => x as u8 as i8 as i32 as u32,
                (ChannelKind::Signed, 16) => x as u16 as i16 as i32 as u32,
                _ => x as u32,
            };
        }
        Val::I(v)
    }
}

/// The border colour in the texture's result kind.
fn border(d: &ImageDescriptor) -> Val {
    if float_result(d) {
        Val::F(d.border)
    } else {
        // Integer reads: the colour converted (toward zero, saturating).
        Val::I(d.border.map(|c| c as i32 as u32))
    }
}

/// A texel index along an axis of `n` texels after the address mode, or
/// `None` outside the texture in border mode. Wrap and mirror need
/// normalized coordinates; CUDA clamps unnormalized ones instead.
fn address(i: i64, n: u32, mode: AddressMode, normalized: bool) -> Option<u32> {
    let n = i64::from(n.max(1));
    let mode = match mode {
        AddressMode::Wrap | AddressMode::Mirror if !normalized => AddressMode::Clamp,
        m => m,
    };
    let j = match mode {
        AddressMode::Wrap => i.rem_euclid(n),
        AddressMode::Mirror => {
            let m = i.rem_euclid(2 * n);
            if m >= n {
                2 * n - 1 - m
            } else {
                m
            }
        }
        AddressMode::Clamp => i.clamp(0, n - 1),
        AddressMode::Border => {
            if !(0..n).contains(&i) {
                return None;
            }
            i
        }
    };
    Some(j as u32)
}

/// `floor(x)` as an index (NaN reads as 0, infinities saturate).
fn floor_index(x: f32) -> i64 {
    x.floor() as i64
}

/// The linear-filter weight of the upper texel: `frac(x)` in 1.8 fixed
/// point, rounded to nearest (1.0 is representable, hence the ninth bit).
fn weight(frac: f32) -> f32 {
    (frac * 256.0).round() / 256.0
}

/// Texel reads of one descriptor for one lane.
struct Sampler<'d, 'x, 'e, 'a, 'm> {
    d: &'d ImageDescriptor,
    mem: &'x mut Mem<'e, 'a, 'm>,
    lane: usize,
    /// Slice (3-D) or layer (arrays, cubemap faces) of the access.
    slice: u32,
    modes: [AddressMode; 3],
    normalized: bool,
}

impl Sampler<'_, '_, '_, '_, '_> {
    /// The texel at in-range indices.
    fn texel(&mut self, x: u32, y: u32, z: u32) -> Res<Val> {
        let d = self.d;
        let slice = if d.shape == Shape::Array3D {
            z
        } else {
            self.slice
        };
        // In range by construction: `ImageDescriptor::check` bounded the
        // extent's last byte below 2^64.
        let addr = d
            .base
            .wrapping_add(u64::from(slice).wrapping_mul(d.slice_pitch))
            .wrapping_add(u64::from(y).wrapping_mul(d.pitch))
            .wrapping_add(u64::from(x).wrapping_mul(d.texel_bytes()));
        let size = d.bits / 8;
        let mut raw = [0u64; 4];
        for (c, v) in raw.iter_mut().enumerate().take(usize::from(d.channels)) {
            let a = addr.wrapping_add(c as u64 * u64::from(size));
            *v = self.mem.load(Msp::Global, a, size, self.lane)?;
        }
        Ok(convert(d, raw))
    }

    /// The texel at signed indices after the address modes (`dims` axes).
    fn at(&mut self, i: [i64; 3], dims: usize) -> Res<Val> {
        let ext = [self.d.width, self.d.height, self.d.depth];
        let mut idx = [0u32; 3];
        for k in 0..dims {
            match address(i[k], ext[k], self.modes[k], self.normalized) {
                Some(j) => idx[k] = j,
                None => return Ok(border(self.d)),
            }
        }
        self.texel(idx[0], idx[1], idx[2])
    }

    /// A filtered (or nearest) sample at texel-space coordinates `x`.
    fn sample(&mut self, x: [f32; 3], dims: usize) -> Res<Val> {
        if self.d.filter == Filter::Point || !float_result(self.d) {
            let i = [floor_index(x[0]), floor_index(x[1]), floor_index(x[2])];
            return self.at(i, dims);
        }
        let mut i = [0i64; 3];
        let mut a = [0f32; 3];
        for k in 0..dims {
            let xb = x[k] - 0.5;
            let f = xb.floor();
            i[k] = floor_index(xb);
            a[k] = weight(xb - f);
        }
        // Corners in the guide's order: x fastest, then y, then z.
        let mut acc = [0f32; 4];
        for corner in 0..(1usize << dims) {
            let mut w = 1f32;
            let mut at = i;
            for k in 0..dims {
                if corner >> k & 1 == 1 {
                    w *= a[k];
                    at[k] = at[k].saturating_add(1);
                } else {
                    w *= 1.0 - a[k];
                }
            }
            if let Val::F(v) = self.at(at, dims)? {
                for c in 0..4 {
                    acc[c] += w * v[c];
                }
            }
        }
        Ok(Val::F(acc))
    }
}

/// Face, and coordinates on it in [0, 1], of a cubemap direction, as in
/// the programming guide's cubemap table.
fn cube_face(x: f32, y: f32, z: f32) -> (u32, f32, f32) {
    let (ax, ay, az) = (x.abs(), y.abs(), z.abs());
    let (face, m, s, t) = if ax > ay && ax > az {
        if x >= 0.0 {
            (0, ax, -z, -y)
        } else {
            (1, ax, z, -y)
        }
    } else if ay > az {
        if y >= 0.0 {
            (2, ay, x, z)
        } else {
            (3, ay, x, -z)
        }
    } else if z >= 0.0 {
        (4, az, x, -y)
    } else {
        (5, az, -x, -y)
    };
    (face, (s / m + 1.0) / 2.0, (t / m + 1.0) / 2.0)
}

/// Array index clamped to the layers (cubemaps, for `.acube`) present.
fn layer_index(v: u64, count: u32) -> u32 {
    // In i64: a forged descriptor may claim more than 2^31 layers.
    i64::from(v as u32 as i32).clamp(0, i64::from(count.max(1)) - 1) as u32
}

fn dims_of(geom: Geom) -> usize {
    match geom {
        Geom::D1 | Geom::A1d => 1,
        Geom::D2 | Geom::A2d | Geom::Cube | Geom::ACube => 2,
        Geom::D3 => 3,
    }
}

/// `tex`: one lane's sample.
fn tex(
    d: &ImageDescriptor,
    mem: &mut Mem<'_, '_, '_>,
    lane: usize,
    geom: Geom,
    c: [u64; 3],
    layer: u64,
    int_coords: bool,
) -> Res<Val> {
    let mut s = Sampler {
        d,
        mem,
        lane,
        slice: 0,
        modes: d.address,
        normalized: d.normalized_coords,
    };
    let dims = dims_of(geom);
    let ext = [d.width, d.height, d.depth];
    if matches!(geom, Geom::A1d | Geom::A2d) {
        s.slice = layer_index(layer, d.layers);
    }
    if int_coords {
        let i = c.map(|v| i64::from(v as u32 as i32));
        // tex1Dfetch: linear memory reads 0 outside, whatever the mode.
        if d.shape == Shape::Linear && !(0..i64::from(d.width)).contains(&i[0]) {
            return Ok(if float_result(d) {
                Val::F([0.0; 4])
            } else {
                Val::I([0; 4])
            });
        }
        s.normalized = false;
        return s.at(i, dims);
    }
    let mut x = c.map(|v| f32::from_bits(v as u32));
    if matches!(geom, Geom::Cube | Geom::ACube) {
        let (face, u, v) = cube_face(x[0], x[1], x[2]);
        let cube = if geom == Geom::ACube {
            layer_index(layer, d.layers / 6)
        } else {
            0
        };
        s.slice = (cube * 6 + face).min(d.layers.max(1) - 1);
        s.normalized = true;
        s.modes = [AddressMode::Clamp; 3];
        x = [u, v, 0.0];
    }
    if s.normalized {
        for k in 0..dims {
            x[k] *= ext[k] as f32;
        }
    }
    s.sample(x, dims)
}

/// The level of detail a `tex` of a mipmapped texture reads, before bias
/// and clamps: the `.level` operand, or from `.grad` the log2 of the longer
/// derivative in level-0 texels. `None` without mipmaps or a level.
fn level_of_detail(d: &ImageDescriptor, op: &ImageOp, r: &[u64], lane: usize) -> Option<f32> {
    if d.levels <= 1 {
        return None;
    }
    let f = |s: R| f32::from_bits(reg(r, s, lane) as u32);
    match op.lod {
        Lod::Base => None,
        Lod::Level(l) => Some(f(l)),
        Lod::Grad { dx, dy } => {
            let ext = [d.width, d.height, d.depth];
            let dims = dims_of(op.geom).min(if d.shape == Shape::Array3D { 3 } else { 2 });
            let scale = |k: usize| {
                if d.normalized_coords {
                    ext[k] as f32
                } else {
                    1.0
                }
            };
            let length = |g: [R; 3]| {
                (0..dims)
                    .filter(|&k| g[k] != NONE)
                    .map(|k| (f(g[k]) * scale(k)).powi(2))
                    .sum::<f32>()
                    .sqrt()
            };
            let rho = length(dx).max(length(dy));
            Some(if rho > 0.0 {
                rho.log2()
            } else {
                f32::NEG_INFINITY
            })
        }
    }
}

/// `tex.level`/`tex.grad` of a mipmapped texture: the level of detail
/// `lod` biased and clamped as the texture says, then the nearest level
/// (point mipmap filtering) or the two levels around it blended (linear).
/// Unnormalized coordinates address level 0's texels on every level.
#[allow(clippy::too_many_arguments)]
fn tex_mipmapped(
    d: &ImageDescriptor,
    mem: &mut Mem<'_, '_, '_>,
    lane: usize,
    geom: Geom,
    c: [u64; 3],
    layer: u64,
    int_coords: bool,
    lod: f32,
) -> Res<Val> {
    let last = f32::from(d.levels - 1);
    // As on a GPU, a texture description left zeroed clamps to level 0.
    let lod = (lod + d.lod_bias)
        .max(d.min_lod)
        .min(d.max_lod)
        .clamp(0.0, last);
    let mut at_level = |l: u32| -> Res<Val> {
        let level = d.level(l);
        let mut coords = c;
        if !d.normalized_coords && !int_coords {
            let ext = [d.width, d.height, d.depth];
            let lext = [level.width, level.height, level.depth];
            for k in 0..dims_of(geom).min(3) {
                let x = f32::from_bits(c[k] as u32) * lext[k] as f32 / ext[k] as f32;
                coords[k] = u64::from(x.to_bits());
            }
        }
        tex(&level, mem, lane, geom, coords, layer, int_coords)
    };
    if d.mipmap_filter == Filter::Point || int_coords || !float_result(d) {
        return at_level((lod + 0.5).floor() as u32);
    }
    let low = lod.floor();
    let a = weight(lod - low);
    let v0 = at_level(low as u32)?;
    if a == 0.0 {
        return Ok(v0);
    }
    let v1 = at_level(low as u32 + 1)?;
    Ok(match (v0, v1) {
        (Val::F(x), Val::F(y)) => Val::F([0, 1, 2, 3].map(|k| x[k] * (1.0 - a) + y[k] * a)),
        (v, _) => v,
    })
}

/// `tld4`: channel `comp` of the four texels of the bilinear footprint,
/// counter-clockwise from the lower left: (i, j+1), (i+1, j+1), (i+1, j),
/// (i, j).
fn tld4(
    d: &ImageDescriptor,
    mem: &mut Mem<'_, '_, '_>,
    lane: usize,
    c: [u64; 3],
    comp: u8,
) -> Res<Val> {
    let mut s = Sampler {
        d,
        mem,
        lane,
        slice: 0,
        modes: d.address,
        normalized: d.normalized_coords,
    };
    let mut x = [c[0], c[1]].map(|v| f32::from_bits(v as u32));
    if s.normalized {
        x[0] *= d.width as f32;
        x[1] *= d.height as f32;
    }
    let i = floor_index(x[0] - 0.5);
    let j = floor_index(x[1] - 0.5);
    let k = usize::from(comp.min(3));
    let corners = [(0, 1), (1, 1), (1, 0), (0, 0)];
    let mut f = [0f32; 4];
    let mut n = [0u32; 4];
    let mut float = true;
    for (q, (di, dj)) in corners.into_iter().enumerate() {
        let at = [i.saturating_add(di), j.saturating_add(dj), 0];
        match s.at(at, 2)? {
            Val::F(v) => f[q] = v[k],
            Val::I(v) => {
                float = false;
                n[q] = v[k];
            }
        }
    }
    Ok(if float { Val::F(f) } else { Val::I(n) })
}

/// `suld.b` / `sust.b`: x in bytes. Returns the loaded elements.
#[allow(clippy::too_many_arguments)]
fn surface(
    d: &ImageDescriptor,
    mem: &mut Mem<'_, '_, '_>,
    lane: usize,
    handle: u64,
    geom: Geom,
    c: [u64; 3],
    layer: u64,
    bits: u8,
    n: u8,
    oob: Oob,
    store: Option<[u64; 4]>,
) -> Res<[u64; 4]> {
    let size = bits / 8;
    let e = i64::from(size) * i64::from(n);
    let row = i64::from(d.width) * d.texel_bytes() as i64;
    let dims = dims_of(geom);
    let coord = |k: usize| {
        if k < dims {
            i64::from(c[k] as u32 as i32)
        } else {
            0
        }
    };
    let (mut x, mut y, mut z) = (coord(0), coord(1), coord(2));
    let mut l = if geom.layered() {
        i64::from(layer as u32 as i32)
    } else {
        0
    };
    let (slices, sl) = if geom == Geom::D3 {
        (i64::from(d.depth), &mut z)
    } else {
        (i64::from(d.layers.max(1)), &mut l)
    };
    let inside = (0..=row - e).contains(&x)
        && (0..i64::from(d.height)).contains(&y)
        && (0..slices).contains(sl);
    if !inside {
        match oob {
            Oob::Trap => {
                return Err(fault(
                    lane,
                    handle,
                    format!(
                        "surface access out of bounds at byte x {x}, y {y}, slice {}",
                        *sl
                    ),
                ))
            }
            Oob::Zero => return Ok([0; 4]),
            Oob::Clamp => {
                if row < e {
                    return Ok([0; 4]);
                }
                x = x.clamp(0, row - e);
                y = y.clamp(0, i64::from(d.height) - 1);
                *sl = (*sl).clamp(0, slices - 1);
            }
        }
    }
    let slice = if geom == Geom::D3 { z } else { l };
    // In range: the checks above and the descriptor's bounded extent.
    let addr = d
        .base
        .wrapping_add((slice as u64).wrapping_mul(d.slice_pitch))
        .wrapping_add((y as u64).wrapping_mul(d.pitch))
        .wrapping_add(x as u64);
    let mut out = [0u64; 4];
    for k in 0..usize::from(n).min(4) {
        let a = addr.wrapping_add(k as u64 * u64::from(size));
        match store {
            Some(v) => mem.store(Msp::Global, a, size, v[k], lane)?,
            None => out[k] = mem.load(Msp::Global, a, size, lane)?,
        }
    }
    Ok(out)
}

/// `txq` / `suq` values. Channel types and orders use the OpenCL
/// enumeration PTX's texture properties share; address modes PTX's order
/// (wrap, mirror, clamp_ogl, clamp_to_edge, clamp_to_border).
fn query(d: &ImageDescriptor, q: Query, surface: bool) -> u32 {
    match q {
        Query::Width => d.width,
        Query::Height => d.height,
        Query::Depth => d.depth,
        Query::ChannelDataType => {
            let norm = d.read_normalized && !surface;
            match (d.kind, d.bits, norm) {
                (ChannelKind::Signed, 8, true) => 0x10D0,
                (ChannelKind::Signed, 16, true) => 0x10D1,
                (ChannelKind::Unsigned, 8, true) => 0x10D2,
                (ChannelKind::Unsigned, 16, true) => 0x10D3,
                (ChannelKind::Signed, 8, _) => 0x10D7,
                (ChannelKind::Signed, 16, _) => 0x10D8,
                (ChannelKind::Signed, _, _) => 0x10D9,
                (ChannelKind::Unsigned, 8, _) => 0x10DA,
                (ChannelKind::Unsigned, 16, _) => 0x10DB,
                (ChannelKind::Unsigned, _, _) => 0x10DC,
                (ChannelKind::Float, 16, _) => 0x10DD,
                (ChannelKind::Float, _, _) => 0x10DE,
            }
        }
        Query::ChannelOrder => match d.channels {
            1 => 0x10B0,
            2 => 0x10B2,
            _ if d.srgb => 0x10C1,
            _ => 0x10B5,
        },
        Query::NormalizedCoords => u32::from(d.normalized_coords),
        Query::ForceUnnormalizedCoords => 0,
        Query::FilterMode => u32::from(d.filter == Filter::Linear),
        Query::AddrMode(k) => match d.address[usize::from(k.min(2))] {
            AddressMode::Wrap => 0,
            AddressMode::Mirror => 1,
            AddressMode::Clamp => 3,
            AddressMode::Border => 4,
        },
        Query::ArraySize => match d.shape {
            Shape::Layered1D | Shape::Layered2D => d.layers,
            Shape::CubemapLayered => d.layers / 6,
            _ => 0,
        },
        Query::NumMipmapLevels => u32::from(d.levels),
        Query::NumSamples => 0,
        // Surfaces are CUDA arrays, block-linear on a GPU.
        Query::MemoryLayout => 0,
    }
}

fn pack_f16(a: f32, b: f32) -> u64 {
    u64::from(f16::from_f32(a).to_bits()) | u64::from(f16::from_f32(b).to_bits()) << 16
}

/// Writes a texel to the destination registers in the instruction's form.
fn write(r: &mut [u64], regs: &[R; 4], lane: usize, out: TexOut, v: Val) {
    if out == TexOut::F16x2 {
        let f = match v {
            Val::F(f) => f,
            Val::I(i) => i.map(|x| x as i32 as f32),
        };
        set(r, regs[0], lane, pack_f16(f[0], f[1]));
        set(r, regs[1], lane, pack_f16(f[2], f[3]));
        return;
    }
    // The texture unit's result as it is: float bits or integers.
    let bits = match v {
        Val::F(f) => f.map(f32::to_bits),
        Val::I(i) => i,
    };
    for k in 0..4 {
        set(r, regs[k], lane, u64::from(bits[k]));
    }
}

/// Runs a texture or surface instruction for the active lanes `m`.
pub(super) fn image(
    r: &mut [u64],
    preds: &mut [u32],
    m: u32,
    op: &ImageOp,
    mem: &mut Mem<'_, '_, '_>,
) -> Res<()> {
    // The descriptor is read once per instruction while the lanes share a
    // handle (the usual case), again whenever it changes.
    let mut cached: Option<(u64, ImageDescriptor)> = None;
    for lane in lanes_of(m) {
        let h = reg(r, op.handle, lane);
        let d = match cached {
            Some((ch, d)) if ch == h => d,
            _ => {
                let d = descriptor(mem, h, lane)?;
                cached = Some((h, d));
                d
            }
        };
        let wants_surface = match op.kind {
            ImageKind::Suld { .. } | ImageKind::Sust { .. } => true,
            ImageKind::Query { surface, .. } => surface,
            _ => false,
        };
        if d.surface != wants_surface {
            let what = if d.surface {
                "a surface object used as a texture"
            } else {
                "a texture object used as a surface"
            };
            return Err(fault(lane, h, what));
        }
        let c = op.coords.map(|s| reg(r, s, lane));
        let layer = reg(r, op.layer, lane);
        match op.kind {
            ImageKind::Tex { out, int_coords } => {
                let v = match level_of_detail(&d, op, r, lane) {
                    None => tex(&d, mem, lane, op.geom, c, layer, int_coords)?,
                    Some(lod) => tex_mipmapped(&d, mem, lane, op.geom, c, layer, int_coords, lod)?,
                };
                write(r, &op.regs, lane, out, v);
            }
            ImageKind::Tld4 { out, comp } => {
                let v = tld4(&d, mem, lane, c, comp)?;
                write(r, &op.regs, lane, out, v);
            }
            ImageKind::Query { q, surface } => {
                // `txq.level`: the extent of one level (0 beyond the last).
                let level = match op.lod {
                    Lod::Level(l) => reg(r, l, lane) as u32 as i32,
                    _ => 0,
                };
                let v = match u8::try_from(level) {
                    Ok(l) if l < d.levels => query(&d.level(u32::from(l)), q, surface),
                    _ => 0,
                };
                let v = if q == Query::NumMipmapLevels {
                    u32::from(d.levels)
                } else {
                    v
                };
                set(r, op.regs[0], lane, u64::from(v));
            }
            ImageKind::Suld { bits, n, oob } => {
                let v = surface(&d, mem, lane, h, op.geom, c, layer, bits, n, oob, None)?;
                for (k, x) in v.iter().enumerate().take(usize::from(n)) {
                    set(r, op.regs[k], lane, *x);
                }
            }
            ImageKind::Sust { bits, n, oob } => {
                let v = op.regs.map(|s| reg(r, s, lane));
                surface(&d, mem, lane, h, op.geom, c, layer, bits, n, oob, Some(v))?;
            }
        }
    }
    // Texture data is always resident.
    if op.p != NONE {
        preds[op.p as usize] |= m;
    }
    Ok(())
}
