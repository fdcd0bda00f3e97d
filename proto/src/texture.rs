//! Texture and surface objects of the emulated device.
//!
//! A `cudaTextureObject_t` or `cudaSurfaceObject_t` on the emulated device
//! is the device address of an [`ImageDescriptor`] the client library
//! wrote into device memory: a kernel's `tex`, `tld4`, `txq`, `suld`,
//! `sust` and `suq` instructions read it there, so texture objects need no
//! state on the server beyond ordinary memory and pass through graphs and
//! kernel parameters as plain 64-bit values. The interpreter validates a
//! descriptor each time it uses one: a forged handle reads only what the
//! tenant's own memory holds, and a malformed one faults the kernel.
//!
//! The layout is fixed little-endian bytes (not the wire codec), since the
//! interpreter reads it from device memory:
//!
//! | offset | field |
//! |---|---|
//! | 0 | magic `u32` (`rTex` or `rSrf`) |
//! | 4 | shape, channels, bits per channel, channel kind (`u8` each) |
//! | 8 | base address `u64` |
//! | 16 | width, height, depth, layers (`u32` each) |
//! | 32 | row pitch `u64`, slice pitch `u64` |
//! | 48 | address modes (3 × `u8`), filter, read mode, normalized coordinates, sRGB (`u8` each), 0 |
//! | 56 | border colour (4 × `f32`) |
//! | 72 | mipmap levels, mipmap filter (`u8` each), 0, 0 |
//! | 76 | level bias, minimum and maximum level clamps (`f32` each) |
//! | 88 | reserved, 0 (8 bytes) |
//!
//! The levels of a mipmapped texture follow level 0 in memory, each packed
//! (rows of `width` texels, slices of `height` rows) and aligned to
//! [`LEVEL_ALIGN`]; [`ImageDescriptor::level`] gives a level's descriptor.

/// Bytes of an encoded descriptor.
pub const DESCRIPTOR_BYTES: usize = 96;
/// First four bytes of a texture descriptor.
pub const TEXTURE_MAGIC: u32 = u32::from_le_bytes(*b"rTex");
/// First four bytes of a surface descriptor.
pub const SURFACE_MAGIC: u32 = u32::from_le_bytes(*b"rSrf");

/// How the texels are laid out and addressed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Shape {
    /// `cudaResourceTypeLinear`: `width` texels at `base`, integer
    /// coordinates only (`tex1Dfetch`).
    Linear = 0,
    /// A 1-D CUDA array (`height` = `depth` = 1).
    Array1D = 1,
    /// A 2-D CUDA array, or `cudaResourceTypePitch2D` memory.
    Array2D = 2,
    /// A 3-D CUDA array.
    Array3D = 3,
    /// `layers` 1-D layers, `slice_pitch` apart.
    Layered1D = 4,
    /// `layers` 2-D layers, `slice_pitch` apart.
    Layered2D = 5,
    /// Six square faces (+x, -x, +y, -y, +z, -z) as six layers.
    Cubemap = 6,
    /// `layers` / 6 cubemaps, each six consecutive layers.
    CubemapLayered = 7,
}

/// `cudaChannelFormatKind` of every channel.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum ChannelKind {
    /// Two's-complement integers.
    Signed = 0,
    /// Unsigned integers.
    Unsigned = 1,
    /// IEEE floats: 16 bits (half) or 32.
    Float = 2,
}

/// `cudaTextureAddressMode`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum AddressMode {
    /// Repeat (normalized coordinates only).
    Wrap = 0,
    /// Clamp to the edge texel.
    Clamp = 1,
    /// Repeat mirrored (normalized coordinates only).
    Mirror = 2,
    /// Outside reads the border colour.
    Border = 3,
}

/// Alignment of each mipmap level's first byte.
pub const LEVEL_ALIGN: u64 = 256;

/// Most mipmap levels a texture may have: enough for a 2^31-texel extent.
pub const MAX_LEVELS: u8 = 32;

/// The extent of mipmap level `l` of an image whose level 0 is `width` ×
/// `height` × `depth` texels: each halves, rounded down, to at least 1;
/// the depth only for 3-D images (layers stay).
pub fn level_extent(width: u32, height: u32, depth: u32, three_d: bool, l: u32) -> [u32; 3] {
    let half = |v: u32| (v.checked_shr(l).unwrap_or(0)).max(1);
    [
        half(width),
        half(height),
        if three_d { half(depth) } else { depth },
    ]
}

/// Byte offset of mipmap level `l` from level 0, for an image of `slices`
/// slices or layers (at least 1) whose texels take `texel` bytes; `None`
/// when it does not fit in a `u64`.
pub fn level_offset(
    width: u32,
    height: u32,
    slices: u32,
    three_d: bool,
    texel: u64,
    l: u32,
) -> Option<u64> {
    let mut offset = 0u64;
    for k in 0..l {
        let [w, h, d] = level_extent(width, height, slices.max(1), three_d, k);
        let bytes = u64::from(w)
            .checked_mul(texel)?
            .checked_mul(u64::from(h.max(1)))?
            .checked_mul(u64::from(d.max(1)))?;
        offset = offset
            .checked_add(bytes)?
            .checked_next_multiple_of(LEVEL_ALIGN)?;
    }
    Some(offset)
}

/// `cudaTextureFilterMode`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Filter {
    /// The nearest texel.
    Point = 0,
    /// Linear interpolation of the 2, 4 or 8 nearest texels, with 9-bit
    /// fixed-point weights as the hardware computes them.
    Linear = 1,
}

/// A texture or surface object: the memory it reads and how.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ImageDescriptor {
    /// A surface object (read and written by `suld`/`sust`, byte
    /// x-coordinates, no filtering) rather than a texture object.
    pub surface: bool,
    /// Layout of the texels.
    pub shape: Shape,
    /// Channels per texel: 1, 2 or 4.
    pub channels: u8,
    /// Bits per channel: 8, 16 or 32.
    pub bits: u8,
    /// Type of every channel.
    pub kind: ChannelKind,
    /// Device address of texel (0, 0, 0) of layer 0.
    pub base: u64,
    /// Texels per row.
    pub width: u32,
    /// Rows (1 for 1-D shapes).
    pub height: u32,
    /// Slices of a 3-D array (1 otherwise).
    pub depth: u32,
    /// Layers of a layered or cubemap shape (0 otherwise).
    pub layers: u32,
    /// Bytes from one row to the next.
    pub pitch: u64,
    /// Bytes from one slice or layer to the next.
    pub slice_pitch: u64,
    /// Address mode of each coordinate.
    pub address: [AddressMode; 3],
    /// Filtering of texture reads.
    pub filter: Filter,
    /// `cudaReadModeNormalizedFloat`: 8- and 16-bit integer texels read as
    /// floats in [0, 1] (unsigned) or [-1, 1] (signed).
    pub read_normalized: bool,
    /// Coordinates in [0, 1) rather than texels.
    pub normalized_coords: bool,
    /// sRGB-to-linear conversion of 8-bit unsigned texels.
    pub srgb: bool,
    /// Colour read outside the texture in border mode.
    pub border: [f32; 4],
    /// Mipmap levels: 1 for a texture without mipmaps.
    pub levels: u8,
    /// How a level between two levels is read.
    pub mipmap_filter: Filter,
    /// Added to every level of detail.
    pub lod_bias: f32,
    /// Lowest level of detail read (`minMipmapLevelClamp`).
    pub min_lod: f32,
    /// Highest level of detail read (`maxMipmapLevelClamp`).
    pub max_lod: f32,
}

/// Why bytes are not a valid descriptor.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BadDescriptor(pub &'static str);

impl std::fmt::Display for BadDescriptor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "invalid texture or surface object: {}", self.0)
    }
}

impl std::error::Error for BadDescriptor {}

impl ImageDescriptor {
    /// Bytes per texel.
    pub fn texel_bytes(&self) -> u64 {
        u64::from(self.channels) * u64::from(self.bits / 8)
    }

    /// The descriptor's bytes.
    pub fn encode(&self) -> [u8; DESCRIPTOR_BYTES] {
        let mut b = [0u8; DESCRIPTOR_BYTES];
        let magic = if self.surface {
            SURFACE_MAGIC
        } else {
            TEXTURE_MAGIC
        };
        b[0..4].copy_from_slice(&magic.to_le_bytes());
        b[4] = self.shape as u8;
        b[5] = self.channels;
        b[6] = self.bits;
        b[7] = self.kind as u8;
        b[8..16].copy_from_slice(&self.base.to_le_bytes());
        for (i, v) in [self.width, self.height, self.depth, self.layers]
            .iter()
            .enumerate()
        {
            b[16 + 4 * i..20 + 4 * i].copy_from_slice(&v.to_le_bytes());
        }
        b[32..40].copy_from_slice(&self.pitch.to_le_bytes());
        b[40..48].copy_from_slice(&self.slice_pitch.to_le_bytes());
        for (i, m) in self.address.iter().enumerate() {
            b[48 + i] = *m as u8;
        }
        b[51] = self.filter as u8;
        b[52] = u8::from(self.read_normalized);
        b[53] = u8::from(self.normalized_coords);
        b[54] = u8::from(self.srgb);
        for (i, c) in self.border.iter().enumerate() {
            b[56 + 4 * i..60 + 4 * i].copy_from_slice(&c.to_le_bytes());
        }
        b[72] = self.levels;
        b[73] = self.mipmap_filter as u8;
        b[76..80].copy_from_slice(&self.lod_bias.to_le_bytes());
        b[80..84].copy_from_slice(&self.min_lod.to_le_bytes());
        b[84..88].copy_from_slice(&self.max_lod.to_le_bytes());
        b
    }

    /// Whether the image is 3-D (its depth halves from level to level).
    fn three_d(&self) -> bool {
        self.shape == Shape::Array3D
    }

    /// The descriptor of mipmap level `l` (< `levels`): its base, extent and
    /// packed pitches, sampled as a texture of one level.
    pub fn level(&self, l: u32) -> ImageDescriptor {
        let slices = self.depth.max(self.layers);
        let [width, height, depth] =
            level_extent(self.width, self.height, self.depth, self.three_d(), l);
        let offset = level_offset(
            self.width,
            self.height,
            slices,
            self.three_d(),
            self.texel_bytes(),
            l,
        )
        .unwrap_or(0);
        let pitch = u64::from(width) * self.texel_bytes();
        ImageDescriptor {
            base: self.base.wrapping_add(offset),
            width,
            height,
            depth,
            pitch,
            slice_pitch: pitch * u64::from(height),
            levels: 1,
            ..*self
        }
    }

    /// Reads and checks a descriptor: a known magic, shape and format,
    /// non-zero extents that agree with the shape, pitches that hold a row
    /// and a slice, and an extent whose last byte does not overflow.
    pub fn decode(b: &[u8]) -> Result<Self, BadDescriptor> {
        let bad = |why| Err(BadDescriptor(why));
        if b.len() < DESCRIPTOR_BYTES {
            return bad("short descriptor");
        }
        let u32_at = |o: usize| u32::from_le_bytes([b[o], b[o + 1], b[o + 2], b[o + 3]]);
        let u64_at = |o: usize| u64::from(u32_at(o)) | u64::from(u32_at(o + 4)) << 32;
        let surface = match u32_at(0) {
            TEXTURE_MAGIC => false,
            SURFACE_MAGIC => true,
            _ => return bad("no descriptor at this address"),
        };
        let shape = match b[4] {
            0 => Shape::Linear,
            1 => Shape::Array1D,
            2 => Shape::Array2D,
            3 => Shape::Array3D,
            4 => Shape::Layered1D,
            5 => Shape::Layered2D,
            6 => Shape::Cubemap,
            7 => Shape::CubemapLayered,
            _ => return bad("unknown shape"),
        };
        let (channels, bits) = (b[5], b[6]);
        if !matches!(channels, 1 | 2 | 4) || !matches!(bits, 8 | 16 | 32) {
            return bad("unknown texel format");
        }
        let kind = match b[7] {
            0 => ChannelKind::Signed,
            1 => ChannelKind::Unsigned,
            2 if bits >= 16 => ChannelKind::Float,
            _ => return bad("unknown channel kind"),
        };
        let address_mode = |v: u8| match v {
            0 => Ok(AddressMode::Wrap),
            1 => Ok(AddressMode::Clamp),
            2 => Ok(AddressMode::Mirror),
            3 => Ok(AddressMode::Border),
            _ => Err(BadDescriptor("unknown address mode")),
        };
        let filter_of = |v: u8| match v {
            0 => Ok(Filter::Point),
            1 => Ok(Filter::Linear),
            _ => Err(BadDescriptor("unknown filter mode")),
        };
        let filter = filter_of(b[51])?;
        let f32_at = |o: usize| f32::from_bits(u32_at(o));
        let border = [0, 1, 2, 3].map(|i| {
            f32::from_le_bytes([b[56 + 4 * i], b[57 + 4 * i], b[58 + 4 * i], b[59 + 4 * i]])
        });
        let d = ImageDescriptor {
            surface,
            shape,
            channels,
            bits,
            kind,
            base: u64_at(8),
            width: u32_at(16),
            height: u32_at(20),
            depth: u32_at(24),
            layers: u32_at(28),
            pitch: u64_at(32),
            slice_pitch: u64_at(40),
            address: [
                address_mode(b[48])?,
                address_mode(b[49])?,
                address_mode(b[50])?,
            ],
            filter,
            read_normalized: b[52] != 0,
            normalized_coords: b[53] != 0,
            srgb: b[54] != 0,
            border,
            // Level count 0 is a descriptor written before mipmaps: one level.
            levels: b[72].max(1),
            mipmap_filter: filter_of(b[73])?,
            lod_bias: f32_at(76),
            min_lod: f32_at(80),
            max_lod: f32_at(84),
        };
        d.check()?;
        Ok(d)
    }

    /// The extent checks of [`ImageDescriptor::decode`].
    pub fn check(&self) -> Result<(), BadDescriptor> {
        let bad = |why| Err(BadDescriptor(why));
        if self.width == 0 || self.height == 0 || self.depth == 0 {
            return bad("empty extent");
        }
        let one_d = matches!(
            self.shape,
            Shape::Linear | Shape::Array1D | Shape::Layered1D
        );
        if one_d && self.height != 1 {
            return bad("a 1-D shape with several rows");
        }
        if self.shape != Shape::Array3D && self.depth != 1 {
            return bad("depth outside a 3-D array");
        }
        let layered = matches!(
            self.shape,
            Shape::Layered1D | Shape::Layered2D | Shape::Cubemap | Shape::CubemapLayered
        );
        if layered != (self.layers != 0) {
            return bad("layers that disagree with the shape");
        }
        let cube = matches!(self.shape, Shape::Cubemap | Shape::CubemapLayered);
        if cube && (self.width != self.height || !self.layers.is_multiple_of(6)) {
            return bad("a cubemap whose faces are not six squares");
        }
        if self.shape == Shape::Cubemap && self.layers != 6 {
            return bad("a cubemap of more than six faces");
        }
        let row = u64::from(self.width) * self.texel_bytes();
        if self.pitch < row {
            return bad("row pitch smaller than a row");
        }
        let slices = u64::from(self.depth.max(self.layers));
        let slice = self.pitch * u64::from(self.height);
        if slices > 1 && self.slice_pitch < slice {
            return bad("slice pitch smaller than a slice");
        }
        let last = (slices - 1)
            .checked_mul(self.slice_pitch)
            .and_then(|s| s.checked_add((u64::from(self.height) - 1).checked_mul(self.pitch)?))
            .and_then(|s| s.checked_add(row))
            .and_then(|s| s.checked_add(self.base));
        if last.is_none() {
            return bad("extent past the end of the address space");
        }
        self.check_levels()
    }

    /// The mipmap checks: levels that halve to at least one texel, level 0
    /// packed, the last level's end within the address space.
    fn check_levels(&self) -> Result<(), BadDescriptor> {
        let bad = |why| Err(BadDescriptor(why));
        if self.levels == 0 || self.levels > MAX_LEVELS {
            return bad("mipmap level count out of range");
        }
        if self.levels == 1 {
            return Ok(());
        }
        if self.surface || self.shape == Shape::Linear {
            return bad("mipmaps on a surface or linear memory");
        }
        let largest = self
            .width
            .max(self.height)
            .max(if self.three_d() { self.depth } else { 1 });
        if u32::from(self.levels) > 32 - largest.leading_zeros() {
            return bad("more mipmap levels than halvings");
        }
        let row = u64::from(self.width) * self.texel_bytes();
        if self.pitch != row || self.slice_pitch != row * u64::from(self.height) {
            return bad("a mipmapped level 0 that is not packed");
        }
        let last = u32::from(self.levels) - 1;
        let slices = self.depth.max(self.layers);
        let end = level_offset(
            self.width,
            self.height,
            slices,
            self.three_d(),
            self.texel_bytes(),
            last + 1,
        )
        .and_then(|e| self.base.checked_add(e));
        if end.is_none() {
            return bad("mipmap levels past the end of the address space");
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn array2d() -> ImageDescriptor {
        ImageDescriptor {
            surface: false,
            shape: Shape::Array2D,
            channels: 4,
            bits: 8,
            kind: ChannelKind::Unsigned,
            base: 0x7000_0000_0000,
            width: 33,
            height: 7,
            depth: 1,
            layers: 0,
            pitch: 33 * 4,
            slice_pitch: 33 * 4 * 7,
            address: [AddressMode::Wrap, AddressMode::Border, AddressMode::Clamp],
            filter: Filter::Linear,
            read_normalized: true,
            normalized_coords: true,
            srgb: false,
            border: [0.25, -1.0, 0.0, 1.0],
            levels: 1,
            mipmap_filter: Filter::Point,
            lod_bias: 0.0,
            min_lod: 0.0,
            max_lod: 0.0,
        }
    }

    #[test]
    fn mipmap_levels_follow_each_other() {
        let mut d = array2d();
        d.levels = 6;
        d.mipmap_filter = Filter::Linear;
        d.lod_bias = 0.5;
        d.max_lod = 5.0;
        assert_eq!(ImageDescriptor::decode(&d.encode()), Ok(d));
        // 33×7, 16×3, 8×1, 4×1, 2×1, 1×1 texels of 4 bytes, each level at 256.
        let l1 = d.level(1);
        assert_eq!((l1.width, l1.height, l1.pitch), (16, 3, 64));
        assert_eq!(l1.base, d.base + (33 * 7 * 4_u64).next_multiple_of(256));
        let l2 = d.level(2);
        assert_eq!((l2.width, l2.height), (8, 1));
        assert_eq!(l2.base, l1.base + 256);
        assert_eq!(d.level(5).width, 1);
        assert_eq!(l1.levels, 1);
        // A 33-texel extent halves five times: six levels, not seven.
        d.levels = 7;
        assert!(d.check().is_err());
        d.levels = 0;
        assert!(d.check().is_err());
        let mut padded = array2d();
        padded.levels = 2;
        padded.pitch += 4;
        padded.slice_pitch = padded.pitch * 7;
        assert!(
            padded.check().is_err(),
            "a mipmapped level 0 must be packed"
        );
        let mut three = array2d();
        three.shape = Shape::Array3D;
        three.depth = 4;
        three.levels = 3;
        assert_eq!(three.level(2).depth, 1);
        assert_eq!(level_extent(8, 8, 6, false, 2), [2, 2, 6]);
    }

    #[test]
    fn descriptors_round_trip() {
        let d = array2d();
        assert_eq!(ImageDescriptor::decode(&d.encode()), Ok(d));
        let s = ImageDescriptor {
            surface: true,
            shape: Shape::CubemapLayered,
            width: 8,
            height: 8,
            layers: 12,
            kind: ChannelKind::Float,
            bits: 32,
            channels: 1,
            pitch: 32,
            slice_pitch: 256,
            ..d
        };
        assert_eq!(ImageDescriptor::decode(&s.encode()), Ok(s));
    }

    #[test]
    fn malformed_descriptors_are_refused() {
        let good = array2d().encode();
        let cases: &[(usize, u8)] = &[(0, b'x'), (4, 9), (5, 3), (6, 12), (7, 5), (48, 4), (51, 2)];
        for &(at, v) in cases {
            let mut b = good;
            b[at] = v;
            assert!(ImageDescriptor::decode(&b).is_err(), "byte {at} = {v}");
        }
        assert!(ImageDescriptor::decode(&good[..40]).is_err());
        let d = array2d();
        for bad in [
            ImageDescriptor { width: 0, ..d },
            ImageDescriptor { pitch: 10, ..d },
            ImageDescriptor { depth: 2, ..d },
            ImageDescriptor { layers: 3, ..d },
            ImageDescriptor {
                shape: Shape::Cubemap,
                layers: 6,
                ..d
            },
            ImageDescriptor {
                base: u64::MAX - 8,
                ..d
            },
            ImageDescriptor {
                bits: 8,
                kind: ChannelKind::Float,
                ..d
            },
        ] {
            assert!(ImageDescriptor::decode(&bad.encode()).is_err(), "{bad:?}");
        }
    }
}
