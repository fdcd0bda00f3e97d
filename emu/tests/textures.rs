//! Texture and surface objects (emu/tests/ptx/textures.cu and hand-written
//! PTX): every fetch checked against a CPU model of CUDA's texture unit
//! written from the programming guide's "Texture Fetching" appendix.
#![allow(clippy::needless_range_loop, clippy::too_many_arguments)]

mod common;

use common::*;
use half::f16;
use rcud_emu::kernel::KernelError;
use rcud_proto::texture::{AddressMode, ChannelKind, Filter, ImageDescriptor, Shape};

const BLOCK: [u32; 3] = [64, 1, 1];

fn grid(n: usize) -> [u32; 3] {
    [n.div_ceil(64) as u32, 1, 1]
}

/// A descriptor with tight pitches; `layers` 0 unless layered.
fn desc(
    shape: Shape,
    channels: u8,
    bits: u8,
    kind: ChannelKind,
    [w, h, depth]: [u32; 3],
    layers: u32,
) -> ImageDescriptor {
    let pitch = u64::from(w) * u64::from(channels) * u64::from(bits / 8);
    ImageDescriptor {
        surface: false,
        shape,
        channels,
        bits,
        kind,
        base: 0,
        width: w,
        height: h,
        depth,
        layers,
        pitch,
        slice_pitch: pitch * u64::from(h),
        address: [AddressMode::Clamp; 3],
        filter: Filter::Point,
        read_normalized: false,
        normalized_coords: false,
        srgb: false,
        border: [0.0; 4],
        levels: 1,
        mipmap_filter: Filter::Point,
        lod_bias: 0.0,
        min_lod: 0.0,
        max_lod: 0.0,
    }
}

/// A texture and its bytes, for the CPU model.
#[derive(Clone)]
struct Img {
    d: ImageDescriptor,
    data: Vec<u8>,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Texel {
    F([f32; 4]),
    I([u32; 4]),
}

impl Img {
    fn random(d: ImageDescriptor, rng: &mut Rng) -> Img {
        let slices = u64::from(d.depth.max(d.layers));
        let len = (slices * d.slice_pitch) as usize;
        let mut data: Vec<u8> = (0..len).map(|_| rng.next() as u8).collect();
        // Float texels: finite values of moderate size.
        if d.kind == ChannelKind::Float {
            let size = usize::from(d.bits / 8);
            for c in data.chunks_mut(size) {
                let v = rng.f32() / 100.0;
                if size == 2 {
                    c.copy_from_slice(&f16::from_f32(v).to_bits().to_le_bytes());
                } else {
                    c.copy_from_slice(&v.to_le_bytes());
                }
            }
        }
        Img { d, data }
    }

    /// Puts the texels and the descriptor in device memory: the handle.
    fn upload(&mut self, dev: &mut Dev) -> u64 {
        self.d.base = dev.alloc(&self.data);
        dev.alloc(&self.d.encode())
    }

    fn floats(&self) -> bool {
        self.d.kind == ChannelKind::Float || (self.d.read_normalized && self.d.bits < 32)
    }

    /// The converted texel at in-range indices of slice `s`.
    fn texel(&self, x: u32, y: u32, s: u32) -> Texel {
        let d = &self.d;
        let size = usize::from(d.bits / 8);
        let at = (u64::from(s) * d.slice_pitch + u64::from(y) * d.pitch) as usize
            + x as usize * size * usize::from(d.channels);
        let raw = |c: usize| {
            let b = &self.data[at + c * size..at + (c + 1) * size];
            let mut v = [0u8; 4];
            v[..size].copy_from_slice(b);
            u32::from_le_bytes(v)
        };
        let n = usize::from(d.channels);
        if self.floats() {
            let mut v = [0.0; 4];
            for c in 0..n {
                let r = raw(c);
                v[c] = match (d.kind, d.bits) {
                    (ChannelKind::Float, 32) => f32::from_bits(r),
                    (ChannelKind::Float, _) => f16::from_bits(r as u16).to_f32(),
                    (ChannelKind::Unsigned, 8) => r as f32 / 255.0,
                    (ChannelKind::Unsigned, _) => r as f32 / 65535.0,
                    (ChannelKind::Signed, 8) => f32::max(r as u8 as i8 as f32 / 127.0, -1.0),
                    (ChannelKind::Signed, _) => f32::max(r as u16 as i16 as f32 / 32767.0, -1.0),
                };
            }
            if d.srgb {
                for c in v.iter_mut().take(n.min(3)) {
                    *c = if *c <= 0.04045 {
                        *c / 12.92
                    } else {
                        ((*c + 0.055) / 1.055).powf(2.4)
                    };
                }
            }
            Texel::F(v)
        } else {
            let mut v = [0; 4];
            for c in 0..n {
                let r = raw(c);
                v[c] = match (d.kind, d.bits) {
                    (ChannelKind::Signed, 8) => r as u8 as i8 as i32 as u32,
                    (ChannelKind::Signed, 16) => r as u16 as i16 as i32 as u32,
                    _ => r,
                };
            }
            Texel::I(v)
        }
    }

    fn border(&self) -> Texel {
        if self.floats() {
            Texel::F(self.d.border)
        } else {
            Texel::I(self.d.border.map(|c| c as i32 as u32))
        }
    }

    /// Texel at signed indices after the address modes; `modes` and
    /// `normalized` as the fetch sees them.
    fn at(&self, i: [i64; 3], dims: usize, s: u32, modes: [AddressMode; 3], norm: bool) -> Texel {
        let ext = [self.d.width, self.d.height, self.d.depth].map(i64::from);
        let mut j = [0u32; 3];
        for k in 0..dims {
            let n = ext[k];
            let v = match modes[k] {
                AddressMode::Wrap if norm => i[k].rem_euclid(n),
                AddressMode::Mirror if norm => {
                    let p = i[k].rem_euclid(2 * n);
                    p.min(2 * n - 1 - p)
                }
                AddressMode::Border if !(0..n).contains(&i[k]) => return self.border(),
                _ => i[k].clamp(0, n - 1),
            };
            j[k] = v as u32;
        }
        let s = if self.d.shape == Shape::Array3D {
            j[2]
        } else {
            s
        };
        self.texel(j[0], j[1], s)
    }

    /// The guide's fetch at texel coordinates `x` (already scaled).
    fn fetch(
        &self,
        x: [f32; 3],
        dims: usize,
        s: u32,
        modes: [AddressMode; 3],
        norm: bool,
    ) -> Texel {
        if self.d.filter == Filter::Point || !self.floats() {
            let i = x.map(|v| v.floor() as i64);
            return self.at(i, dims, s, modes, norm);
        }
        let mut i = [0i64; 3];
        let mut w = [0f32; 3];
        for k in 0..dims {
            let xb = x[k] - 0.5;
            i[k] = xb.floor() as i64;
            // 9-bit fixed point, 8 fractional bits.
            w[k] = ((xb - xb.floor()) * 256.0).round() / 256.0;
        }
        let mut acc = [0f32; 4];
        for corner in 0..1 << dims {
            let mut f = 1f32;
            let mut at = i;
            for k in 0..dims {
                if corner >> k & 1 == 1 {
                    f *= w[k];
                    at[k] += 1;
                } else {
                    f *= 1.0 - w[k];
                }
            }
            let Texel::F(v) = self.at(at, dims, s, modes, norm) else {
                unreachable!()
            };
            for c in 0..4 {
                acc[c] += f * v[c];
            }
        }
        Texel::F(acc)
    }

    /// tex1D/tex2D/tex3D and the layered forms at coordinates `u`.
    fn tex(&self, u: [f32; 3], dims: usize, layer: i32) -> Texel {
        let norm = self.d.normalized_coords;
        let ext = [self.d.width, self.d.height, self.d.depth];
        let mut x = u;
        if norm {
            for k in 0..dims {
                x[k] *= ext[k] as f32;
            }
        }
        let s = layer.clamp(0, self.d.layers.max(1) as i32 - 1) as u32;
        self.fetch(x, dims, s, self.d.address, norm)
    }

    /// texCubemap / texCubemapLayered.
    fn cube(&self, v: [f32; 3], cube: i32) -> Texel {
        let (face, s, t) = cube_face(v);
        let n = self.d.width as f32;
        let cube = cube.clamp(0, (self.d.layers / 6) as i32 - 1) as u32;
        self.fetch(
            [s * n, t * n, 0.0],
            2,
            cube * 6 + face,
            [AddressMode::Clamp; 3],
            true,
        )
    }
}

/// The programming guide's cubemap table: face and (s, t) in [0, 1].
fn cube_face([x, y, z]: [f32; 3]) -> (u32, f32, f32) {
    let (ax, ay, az) = (x.abs(), y.abs(), z.abs());
    let (f, m, s, t) = if ax > ay && ax > az {
        if x > 0.0 {
            (0, ax, -z, -y)
        } else {
            (1, ax, z, -y)
        }
    } else if ay > az {
        if y > 0.0 {
            (2, ay, x, z)
        } else {
            (3, ay, x, -z)
        }
    } else if z > 0.0 {
        (4, az, x, -y)
    } else {
        (5, az, -x, -y)
    };
    (f, (s / m + 1.0) / 2.0, (t / m + 1.0) / 2.0)
}

fn texels_f(out: &[f32]) -> Vec<Texel> {
    out.chunks(4)
        .map(|c| Texel::F([c[0], c[1], c[2], c[3]]))
        .collect()
}

fn texels_i(out: &[u32]) -> Vec<Texel> {
    out.chunks(4)
        .map(|c| Texel::I([c[0], c[1], c[2], c[3]]))
        .collect()
}

/// Float texels equal within `tol` (filtered sums may round apart).
fn check(what: &str, got: &[Texel], want: &[Texel], tol: f32) {
    assert_eq!(got.len(), want.len());
    for (k, (g, w)) in got.iter().zip(want).enumerate() {
        let ok = match (g, w) {
            (Texel::F(a), Texel::F(b)) => a
                .iter()
                .zip(b)
                .all(|(x, y)| (x - y).abs() <= tol * y.abs().max(1.0) || x == y),
            (Texel::I(a), Texel::I(b)) => a == b,
            _ => false,
        };
        assert!(ok, "{what}[{k}]: got {g:?} want {w:?}");
    }
}

/// Runs `kernel(handle, coords, out, n)` with float coordinates, `per`
/// floats each; returns the outputs as 4 words each.
fn run_coords(dev: &mut Dev, kernel: &str, handle: u64, coords: &[f32], per: usize) -> Vec<u32> {
    let n = coords.len() / per;
    let c = dev.alloc(coords);
    let out = dev.zeros::<u32>(4 * n);
    dev.launch(
        kernel,
        grid(n),
        BLOCK,
        0,
        &[arg(handle), arg(c), arg(out), arg(n as i32)],
    )
    .unwrap();
    dev.read(out, 4 * n)
}

fn as_f32(v: &[u32]) -> Vec<f32> {
    v.iter().map(|x| f32::from_bits(*x)).collect()
}

const MODES: [AddressMode; 4] = [
    AddressMode::Wrap,
    AddressMode::Clamp,
    AddressMode::Mirror,
    AddressMode::Border,
];

#[test]
fn address_modes_and_filtering_2d() {
    let mut dev = Dev::load("textures.ptx");
    let mut rng = Rng(0x7e57);
    for norm in [false, true] {
        for filter in [Filter::Point, Filter::Linear] {
            for (a, b) in [(0, 0), (1, 1), (2, 2), (3, 3), (0, 3), (2, 1)] {
                let mut d = desc(Shape::Array2D, 4, 32, ChannelKind::Float, [6, 5, 1], 0);
                d.address = [MODES[a], MODES[b], AddressMode::Clamp];
                d.filter = filter;
                d.normalized_coords = norm;
                d.border = [0.5, -2.0, 3.0, 0.25];
                let mut img = Img::random(d, &mut rng);
                let h = img.upload(&mut dev);
                let span = if norm { 1.0 } else { 6.0 };
                let coords: Vec<f32> = (0..400)
                    .map(|_| (rng.next() % 4000) as f32 / 1000.0 * span - 1.5 * span + 0.0007)
                    .collect();
                let got = texels_f(&as_f32(&run_coords(&mut dev, "tex2d_f4", h, &coords, 2)));
                let want: Vec<Texel> = coords
                    .chunks(2)
                    .map(|c| img.tex([c[0], c[1], 0.0], 2, 0))
                    .collect();
                check(&format!("2d {norm} {filter:?} {a}/{b}"), &got, &want, 1e-6);
            }
        }
    }
}

#[test]
fn linear_weights_have_eight_fractional_bits() {
    let mut dev = Dev::load("textures.ptx");
    let mut d = desc(Shape::Array1D, 1, 32, ChannelKind::Float, [2, 1, 1], 0);
    d.filter = Filter::Linear;
    let mut img = Img {
        d,
        data: [0.0f32, 1.0].iter().flat_map(|v| v.to_le_bytes()).collect(),
    };
    let h = img.upload(&mut dev);
    // x - 0.5 = 0.3017: a float weight gives 0.3017, the texture unit
    // 77/256 = 0.30078125.
    let xs = [0.8017f32, 0.5 + 200.4 / 256.0, 1.49];
    let got = as_f32(&run_coords(&mut dev, "tex1d_f4", h, &xs, 1));
    assert_eq!(got[0], 77.0 / 256.0);
    assert_ne!(got[0], 0.8017f32 - 0.5);
    assert_eq!(got[4], 200.0 / 256.0);
    assert_eq!(got[8], 253.0 / 256.0);
    // Missing channels read 0, alpha included (CUDA zero-fills them).
    assert_eq!(&got[1..4], &[0.0, 0.0, 0.0]);
}

#[test]
fn read_modes_and_formats() {
    let mut dev = Dev::load("textures.ptx");
    let mut rng = Rng(0xf0f0);
    let formats = [
        (ChannelKind::Unsigned, 8),
        (ChannelKind::Signed, 8),
        (ChannelKind::Unsigned, 16),
        (ChannelKind::Signed, 16),
        (ChannelKind::Float, 16),
        (ChannelKind::Float, 32),
        (ChannelKind::Signed, 32),
        (ChannelKind::Unsigned, 32),
    ];
    for (kind, bits) in formats {
        for channels in [1u8, 2, 4] {
            for normalized_read in [false, true] {
                for filter in [Filter::Point, Filter::Linear] {
                    let mut d = desc(Shape::Array2D, channels, bits, kind, [5, 4, 1], 0);
                    d.read_normalized = normalized_read;
                    d.filter = filter;
                    d.address = [AddressMode::Border, AddressMode::Clamp, AddressMode::Clamp];
                    d.border = [1.0, 2.0, -3.0, 4.0];
                    let mut img = Img::random(d, &mut rng);
                    let h = img.upload(&mut dev);
                    let coords: Vec<f32> = (0..128)
                        .map(|_| (rng.next() % 8000) as f32 / 1000.0 - 1.5)
                        .collect();
                    let want: Vec<Texel> = coords
                        .chunks(2)
                        .map(|c| img.tex([c[0], c[1], 0.0], 2, 0))
                        .collect();
                    let what =
                        format!("{kind:?}{bits}x{channels} norm {normalized_read} {filter:?}");
                    let got = if img.floats() {
                        texels_f(&as_f32(&run_coords(&mut dev, "tex2d_f4", h, &coords, 2)))
                    } else {
                        let k = if kind == ChannelKind::Signed {
                            "tex2d_i4"
                        } else {
                            "tex2d_u4"
                        };
                        texels_i(&run_coords(&mut dev, k, h, &coords, 2))
                    };
                    check(&what, &got, &want, 1e-6);
                }
            }
        }
    }
}

#[test]
fn srgb_textures_read_linear_values() {
    let mut dev = Dev::load("textures.ptx");
    let mut rng = Rng(5);
    let mut d = desc(Shape::Array2D, 4, 8, ChannelKind::Unsigned, [4, 4, 1], 0);
    d.read_normalized = true;
    d.srgb = true;
    let mut img = Img::random(d, &mut rng);
    let h = img.upload(&mut dev);
    let coords: Vec<f32> = (0..32).map(|k| (k % 4) as f32 + 0.5).collect();
    let got = texels_f(&as_f32(&run_coords(&mut dev, "tex2d_f4", h, &coords, 2)));
    let want: Vec<Texel> = coords
        .chunks(2)
        .map(|c| img.tex([c[0], c[1], 0.0], 2, 0))
        .collect();
    check("srgb", &got, &want, 1e-6);
    // Alpha is not converted: (0.5, 1.5) is texel (0, 1), 16 bytes in.
    let Texel::F(v) = got[0] else { panic!() };
    assert_eq!(v[3], f32::from(img.data[16 + 3]) / 255.0);
}

#[test]
fn one_d_three_d_and_layered() {
    let mut dev = Dev::load("textures.ptx");
    let mut rng = Rng(77);
    for filter in [Filter::Point, Filter::Linear] {
        for mode in MODES {
            // 1-D, normalized.
            let mut d = desc(Shape::Array1D, 2, 16, ChannelKind::Float, [9, 1, 1], 0);
            d.filter = filter;
            d.address = [mode; 3];
            d.normalized_coords = true;
            d.border = [7.0, 8.0, 9.0, 10.0];
            let mut img = Img::random(d, &mut rng);
            let h = img.upload(&mut dev);
            let xs: Vec<f32> = (0..100)
                .map(|_| (rng.next() % 3000) as f32 / 1000.0 - 1.0 + 0.0003)
                .collect();
            let got = texels_f(&as_f32(&run_coords(&mut dev, "tex1d_f4", h, &xs, 1)));
            let want: Vec<Texel> = xs.iter().map(|&x| img.tex([x, 0.0, 0.0], 1, 0)).collect();
            check(&format!("1d {filter:?} {mode:?}"), &got, &want, 1e-6);

            // 3-D, unnormalized (wrap and mirror act as clamp).
            let mut d = desc(Shape::Array3D, 4, 8, ChannelKind::Unsigned, [4, 3, 5], 0);
            d.filter = filter;
            d.read_normalized = true;
            d.address = [mode, AddressMode::Clamp, mode];
            d.border = [0.1, 0.2, 0.3, 0.4];
            let mut img = Img::random(d, &mut rng);
            let h = img.upload(&mut dev);
            let cs: Vec<f32> = (0..400)
                .map(|k| {
                    if k % 4 == 3 {
                        0.0
                    } else {
                        (rng.next() % 8000) as f32 / 1000.0 - 1.7
                    }
                })
                .collect();
            let got = texels_f(&as_f32(&run_coords(&mut dev, "tex3d_f4", h, &cs, 4)));
            let want: Vec<Texel> = cs
                .chunks(4)
                .map(|c| img.tex([c[0], c[1], c[2]], 3, 0))
                .collect();
            check(&format!("3d {filter:?} {mode:?}"), &got, &want, 1e-6);
        }
    }

    // Layered: the layer is an integer, clamped to the layers present.
    for (shape, dims, kernel) in [
        (Shape::Layered1D, 1, "tex1d_layered_f4"),
        (Shape::Layered2D, 2, "tex2d_layered_f4"),
    ] {
        let h2 = if dims == 1 { 1 } else { 3 };
        let mut d = desc(shape, 1, 32, ChannelKind::Float, [5, h2, 1], 4);
        d.filter = Filter::Linear;
        d.address = [AddressMode::Wrap; 3];
        d.normalized_coords = true;
        let mut img = Img::random(d, &mut rng);
        let h = img.upload(&mut dev);
        let n = 96;
        let cs: Vec<f32> = (0..n * dims)
            .map(|_| (rng.next() % 3000) as f32 / 1000.0 - 1.0)
            .collect();
        let layers: Vec<i32> = (0..n as i32).map(|k| k % 7 - 1).collect();
        let (cb, lb, out) = (dev.alloc(&cs), dev.alloc(&layers), dev.zeros::<f32>(4 * n));
        dev.launch(
            kernel,
            grid(n),
            BLOCK,
            0,
            &[arg(h), arg(cb), arg(lb), arg(out), arg(n as i32)],
        )
        .unwrap();
        let got = texels_f(&dev.read::<f32>(out, 4 * n));
        let want: Vec<Texel> = (0..n)
            .map(|k| {
                let c = &cs[k * dims..(k + 1) * dims];
                let y = if dims == 2 { c[1] } else { 0.0 };
                img.tex([c[0], y, 0.0], dims, layers[k])
            })
            .collect();
        check(kernel, &got, &want, 1e-6);
    }
}

#[test]
fn cubemap_faces_follow_the_guide_table() {
    let mut dev = Dev::load("textures.ptx");
    let mut rng = Rng(99);
    // Each face a constant: the face index.
    let n = 4u32;
    let d = desc(Shape::Cubemap, 1, 32, ChannelKind::Float, [n, n, 1], 6);
    let data: Vec<u8> = (0..6)
        .flat_map(|f| vec![f as f32; (n * n) as usize])
        .flat_map(|v| v.to_le_bytes())
        .collect();
    let mut faces = Img { d, data };
    let h = faces.upload(&mut dev);
    let dirs: [[f32; 4]; 8] = [
        [1.0, 0.2, -0.3, 0.0],
        [-2.0, 0.5, 0.5, 0.0],
        [0.1, 3.0, -0.2, 0.0],
        [0.1, -3.0, -0.2, 0.0],
        [0.3, 0.2, 1.0, 0.0],
        [0.3, 0.2, -1.0, 0.0],
        [-0.9, 0.1, 0.95, 0.0],
        [0.5, -0.6, 0.55, 0.0],
    ];
    let flat: Vec<f32> = dirs.iter().flatten().copied().collect();
    let got = as_f32(&run_coords(&mut dev, "tex_cube_f4", h, &flat, 4));
    let want = [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 4.0, 3.0];
    for k in 0..8 {
        assert_eq!(got[4 * k], want[k], "direction {:?}", dirs[k]);
    }

    // Random directions on random texels, point and linear.
    for filter in [Filter::Point, Filter::Linear] {
        let mut d = desc(Shape::Cubemap, 4, 16, ChannelKind::Float, [5, 5, 1], 6);
        d.filter = filter;
        let mut img = Img::random(d, &mut rng);
        let h = img.upload(&mut dev);
        let cs: Vec<f32> = (0..256)
            .map(|k| {
                if k % 4 == 3 {
                    0.0
                } else {
                    (rng.next() % 2000) as f32 / 1000.0 - 1.0 + 0.0001
                }
            })
            .collect();
        let got = texels_f(&as_f32(&run_coords(&mut dev, "tex_cube_f4", h, &cs, 4)));
        let want: Vec<Texel> = cs
            .chunks(4)
            .map(|c| img.cube([c[0], c[1], c[2]], 0))
            .collect();
        check(&format!("cube {filter:?}"), &got, &want, 1e-6);

        // Layered cubemaps: three of them.
        let mut d = desc(
            Shape::CubemapLayered,
            1,
            8,
            ChannelKind::Signed,
            [3, 3, 1],
            18,
        );
        d.filter = filter;
        d.read_normalized = true;
        let mut img = Img::random(d, &mut rng);
        let h = img.upload(&mut dev);
        let layers: Vec<i32> = (0..64).map(|k| k % 5 - 1).collect();
        let (cb, lb, out) = (dev.alloc(&cs), dev.alloc(&layers), dev.zeros::<f32>(4 * 64));
        dev.launch(
            "tex_cube_layered_f4",
            grid(64),
            BLOCK,
            0,
            &[arg(h), arg(cb), arg(lb), arg(out), arg(64i32)],
        )
        .unwrap();
        let got = texels_f(&dev.read::<f32>(out, 4 * 64));
        let want: Vec<Texel> = (0..64)
            .map(|k| img.cube([cs[4 * k], cs[4 * k + 1], cs[4 * k + 2]], layers[k]))
            .collect();
        check(&format!("acube {filter:?}"), &got, &want, 1e-6);
    }
}

#[test]
fn fetches_from_linear_memory() {
    let mut dev = Dev::load("textures.ptx");
    let mut rng = Rng(3);
    let xs: Vec<i32> = (-4..24).collect();
    for (kind, bits, norm, kernel) in [
        (ChannelKind::Float, 32, false, "tex1d_fetch_f4"),
        (ChannelKind::Unsigned, 8, true, "tex1d_fetch_f4"),
        (ChannelKind::Signed, 16, false, "tex1d_fetch_i4"),
    ] {
        let mut d = desc(Shape::Linear, 2, bits, kind, [17, 1, 1], 0);
        d.read_normalized = norm;
        let mut img = Img::random(d, &mut rng);
        let h = img.upload(&mut dev);
        let (xb, out) = (dev.alloc(&xs), dev.zeros::<u32>(4 * xs.len()));
        dev.launch(
            kernel,
            grid(xs.len()),
            BLOCK,
            0,
            &[arg(h), arg(xb), arg(out), arg(xs.len() as i32)],
        )
        .unwrap();
        let got = dev.read::<u32>(out, 4 * xs.len());
        for (k, &x) in xs.iter().enumerate() {
            let want = if (0..17).contains(&x) {
                img.texel(x as u32, 0, 0)
            } else if img.floats() {
                Texel::F([0.0; 4])
            } else {
                Texel::I([0; 4])
            };
            let g = &got[4 * k..4 * k + 4];
            let g = match want {
                Texel::F(_) => texels_f(&as_f32(g)),
                Texel::I(_) => texels_i(g),
            };
            check(&format!("{kernel} {kind:?} x {x}"), &g, &[want], 0.0);
        }
    }
}

#[test]
fn scalar_level_and_gradient_forms() {
    let mut dev = Dev::load("textures.ptx");
    let mut rng = Rng(11);
    let mut d = desc(Shape::Array2D, 4, 32, ChannelKind::Float, [7, 6, 1], 0);
    d.filter = Filter::Linear;
    d.normalized_coords = true;
    d.address = [AddressMode::Wrap, AddressMode::Mirror, AddressMode::Clamp];
    let mut img = Img::random(d, &mut rng);
    let h = img.upload(&mut dev);
    let n = 64;
    let cs: Vec<f32> = (0..2 * n)
        .map(|_| (rng.next() % 3000) as f32 / 1000.0 - 1.0)
        .collect();
    let want: Vec<[f32; 4]> = cs
        .chunks(2)
        .map(|c| match img.tex([c[0], c[1], 0.0], 2, 0) {
            Texel::F(v) => v,
            _ => unreachable!(),
        })
        .collect();
    let cb = dev.alloc(&cs);
    let (one, two) = (dev.zeros::<f32>(n), dev.zeros::<f32>(2 * n));
    dev.launch(
        "tex2d_f1_f2",
        grid(n),
        BLOCK,
        0,
        &[arg(h), arg(cb), arg(one), arg(two), arg(n as i32)],
    )
    .unwrap();
    let (one, two) = (dev.read::<f32>(one, n), dev.read::<f32>(two, 2 * n));
    let (lod, grad) = (dev.zeros::<f32>(4 * n), dev.zeros::<f32>(4 * n));
    dev.launch(
        "tex2d_lod_grad",
        grid(n),
        BLOCK,
        0,
        &[arg(h), arg(cb), arg(lod), arg(grad), arg(n as i32)],
    )
    .unwrap();
    let (lod, grad) = (dev.read::<f32>(lod, 4 * n), dev.read::<f32>(grad, 4 * n));
    for k in 0..n {
        let w = want[k];
        let close = |a: f32, b: f32| (a - b).abs() <= 1e-6 * b.abs().max(1.0);
        assert!(close(one[k], w[0]), "tex2D<float> {k}");
        assert!(
            close(two[2 * k], w[0]) && close(two[2 * k + 1], w[1]),
            "float2 {k}"
        );
        for c in 0..4 {
            // No mipmaps: level 0 whatever the level or gradients.
            assert!(close(lod[4 * k + c], w[c]), "tex2DLod {k}");
            assert!(close(grad[4 * k + c], w[c]), "tex2DGrad {k}");
        }
    }
}

/// tld4's footprint in the ISA's order: (i, j+1), (i+1, j+1), (i+1, j), (i, j).
fn gather(img: &Img, u: f32, v: f32, comp: usize) -> Texel {
    let norm = img.d.normalized_coords;
    let (mut x, mut y) = (u, v);
    if norm {
        x *= img.d.width as f32;
        y *= img.d.height as f32;
    }
    let (i, j) = ((x - 0.5).floor() as i64, (y - 0.5).floor() as i64);
    let mut f = [0f32; 4];
    let mut n = [0u32; 4];
    for (q, (di, dj)) in [(0, 1), (1, 1), (1, 0), (0, 0)].into_iter().enumerate() {
        match img.at([i + di, j + dj, 0], 2, 0, img.d.address, norm) {
            Texel::F(t) => f[q] = t[comp],
            Texel::I(t) => n[q] = t[comp],
        }
    }
    if img.floats() {
        Texel::F(f)
    } else {
        Texel::I(n)
    }
}

#[test]
fn gathers_return_the_bilinear_footprint() {
    let mut dev = Dev::load("textures.ptx");
    let mut rng = Rng(21);
    let mut d = desc(Shape::Array2D, 4, 16, ChannelKind::Unsigned, [5, 4, 1], 0);
    d.read_normalized = true;
    d.filter = Filter::Linear;
    d.address = [AddressMode::Border, AddressMode::Wrap, AddressMode::Clamp];
    d.normalized_coords = true;
    d.border = [0.5, 0.25, 0.125, 2.0];
    let mut img = Img::random(d, &mut rng);
    let h = img.upload(&mut dev);
    let n = 64;
    let cs: Vec<f32> = (0..2 * n)
        .map(|_| (rng.next() % 3000) as f32 / 1000.0 - 1.0 + 0.0001)
        .collect();
    let cb = dev.alloc(&cs);
    for comp in 0..4 {
        let out = dev.zeros::<f32>(4 * n);
        dev.launch(
            "tex2d_gather",
            grid(n),
            BLOCK,
            0,
            &[arg(h), arg(cb), arg(comp as i32), arg(out), arg(n as i32)],
        )
        .unwrap();
        let got = texels_f(&dev.read::<f32>(out, 4 * n));
        let want: Vec<Texel> = cs
            .chunks(2)
            .map(|c| gather(&img, c[0], c[1], comp))
            .collect();
        check(&format!("gather {comp}"), &got, &want, 0.0);
    }
    // Integer texels gather as integers (channel 1).
    let d = desc(Shape::Array2D, 2, 8, ChannelKind::Signed, [6, 3, 1], 0);
    let mut img = Img::random(d, &mut rng);
    let h = img.upload(&mut dev);
    let cs: Vec<f32> = (0..2 * n)
        .map(|_| (rng.next() % 9000) as f32 / 1000.0 - 1.0)
        .collect();
    let got = texels_i(&run_coords(&mut dev, "tex2d_gather_i4", h, &cs, 2));
    let want: Vec<Texel> = cs.chunks(2).map(|c| gather(&img, c[0], c[1], 1)).collect();
    check("gather s8", &got, &want, 0.0);
}

fn surface(d: ImageDescriptor, data: Vec<u8>, dev: &mut Dev) -> (u64, u64) {
    let mut s = ImageDescriptor { surface: true, ..d };
    s.base = dev.alloc(&data);
    (dev.alloc(&s.encode()), s.base)
}

#[test]
fn surfaces_read_and_write() {
    let mut dev = Dev::load("textures.ptx");
    // surf2Dread/surf2Dwrite of a 10 x 3 u32 image.
    let (w, hgt) = (10u32, 3u32);
    let d = desc(Shape::Array2D, 1, 32, ChannelKind::Unsigned, [w, hgt, 1], 0);
    let src: Vec<u32> = (0..w * hgt).map(|k| k * 3 + 1).collect();
    let (hs, _) = surface(
        d,
        src.iter().flat_map(|v| v.to_le_bytes()).collect(),
        &mut dev,
    );
    let (hd, dst) = surface(d, vec![0; (w * hgt * 4) as usize], &mut dev);
    dev.launch(
        "surf2d_copy",
        [1, hgt, 1],
        [16, 1, 1],
        0,
        &[arg(hs), arg(hd), arg(w as i32), arg(hgt as i32)],
    )
    .unwrap();
    let got = dev.read::<u32>(dst, (w * hgt) as usize);
    assert_eq!(got, src.iter().map(|v| v + 1).collect::<Vec<_>>());

    // Vectors, 1-D, 3-D and 64-bit elements.
    let d8 = desc(Shape::Array2D, 4, 8, ChannelKind::Unsigned, [4, 2, 1], 0);
    let b8: Vec<u8> = (0..32).collect();
    let (h8, a8) = surface(d8, b8.clone(), &mut dev);
    let d16 = desc(Shape::Array1D, 2, 16, ChannelKind::Signed, [4, 1, 1], 0);
    let b16: Vec<i16> = vec![1, -2, 3, -4, 5, -6, 7, -8];
    let (h16, a16) = surface(
        d16,
        b16.iter().flat_map(|v| v.to_le_bytes()).collect(),
        &mut dev,
    );
    let df = desc(Shape::Array3D, 4, 32, ChannelKind::Float, [4, 2, 2], 0);
    let bf: Vec<f32> = (0..64).map(|k| k as f32).collect();
    let (hf, af) = surface(
        df,
        bf.iter().flat_map(|v| v.to_le_bytes()).collect(),
        &mut dev,
    );
    let d64 = desc(Shape::Array1D, 2, 32, ChannelKind::Unsigned, [4, 1, 1], 0);
    let b64: Vec<u64> = vec![10, 20, 30, 40];
    let (h64, a64) = surface(
        d64,
        b64.iter().flat_map(|v| v.to_le_bytes()).collect(),
        &mut dev,
    );
    dev.launch(
        "surf_vectors",
        [1, 1, 1],
        [4, 1, 1],
        0,
        &[arg(h8), arg(h16), arg(hf), arg(h64), arg(4i32)],
    )
    .unwrap();
    let g8 = dev.read::<u8>(a8, 32);
    for x in 0..4 {
        let row1 = &b8[16 + 4 * x..20 + 4 * x];
        assert_eq!(&g8[4 * x..4 * x + 4], &[row1[3], row1[2], row1[1], row1[0]]);
    }
    assert_eq!(dev.read::<i16>(a16, 8), vec![-2, 1, -4, 3, -6, 5, -8, 7]);
    let gf = dev.read::<f32>(af, 64);
    for x in 0..16 {
        // Texel (x/4, 1, 1) doubled into (x/4, 0, 0).
        assert_eq!(gf[x], bf[48 + x] * 2.0, "3-d {x}");
    }
    assert_eq!(dev.read::<u64>(a64, 4), vec![15, 25, 35, 45]);

    // Layered: 1-D layers of u16, 2-D layers of u8.
    let dl1 = desc(Shape::Layered1D, 1, 16, ChannelKind::Unsigned, [4, 1, 1], 2);
    let bl1: Vec<u16> = (0..8).map(|k| 100 + k).collect();
    let (hl1, al1) = surface(
        dl1,
        bl1.iter().flat_map(|v| v.to_le_bytes()).collect(),
        &mut dev,
    );
    let dl2 = desc(Shape::Layered2D, 1, 8, ChannelKind::Unsigned, [4, 3, 1], 3);
    let bl2: Vec<u8> = (0..36).collect();
    let (hl2, al2) = surface(dl2, bl2.clone(), &mut dev);
    dev.launch(
        "surf_layered",
        [1, 1, 1],
        [4, 1, 1],
        0,
        &[arg(hl1), arg(hl2), arg(4i32)],
    )
    .unwrap();
    let g1 = dev.read::<u16>(al1, 8);
    assert_eq!(&g1[..4], &[111, 112, 113, 114]);
    let g2 = dev.read::<u8>(al2, 36);
    for x in 0..4 {
        // (x, 1) of layer 2 plus 3 into (x, 0) of layer 1.
        assert_eq!(g2[12 + x], bl2[24 + 4 + x] + 3);
    }
}

#[test]
fn surface_out_of_range_modes() {
    let mut dev = Dev::load("textures.ptx");
    let d = desc(Shape::Array1D, 1, 32, ChannelKind::Unsigned, [5, 1, 1], 0);
    let vals: Vec<u32> = vec![11, 22, 33, 44, 55];
    let (h, base) = surface(
        d,
        vals.iter().flat_map(|v| v.to_le_bytes()).collect(),
        &mut dev,
    );
    let xs: Vec<i32> = vec![0, 4, 8, 16, 20, -4, 400, -400];
    let xb = dev.alloc(&xs);
    let n = xs.len();
    let read = |dev: &mut Dev, mode: i32| {
        let out = dev.zeros::<u32>(n);
        let r = dev.launch(
            "surf1d_read_modes",
            [1, 1, 1],
            [n as u32, 1, 1],
            0,
            &[arg(h), arg(xb), arg(mode), arg(out), arg(n as i32)],
        );
        r.map(|_| dev.read::<u32>(out, n))
    };
    // .zero: 0 outside.
    assert_eq!(read(&mut dev, 0).unwrap(), vec![11, 22, 33, 55, 0, 0, 0, 0]);
    // .clamp: the edge element.
    assert_eq!(
        read(&mut dev, 1).unwrap(),
        vec![11, 22, 33, 55, 55, 11, 55, 11]
    );
    // .trap: a fault.
    match read(&mut dev, 2) {
        Err(KernelError::IllegalAddress(f)) => assert!(f.message.contains("out of bounds"), "{f}"),
        r => panic!("trap mode: {r:?}"),
    }
    let write = |dev: &mut Dev, mode: i32, xs: &[i32]| {
        let xb = dev.alloc(xs);
        dev.mem
            .slice_mut(base, 20)
            .unwrap()
            .copy_from_slice(&[0u8; 20]);
        let r = dev.launch(
            "surf1d_write_modes",
            [1, 1, 1],
            [xs.len() as u32, 1, 1],
            0,
            &[arg(h), arg(xb), arg(mode), arg(xs.len() as i32)],
        );
        r.map(|_| dev.read::<u32>(base, 5))
    };
    // .zero drops the write; in-range lanes write 1000 + lane.
    assert_eq!(
        write(&mut dev, 0, &[4, 40, -8]).unwrap(),
        vec![0, 1000, 0, 0, 0]
    );
    assert_eq!(
        write(&mut dev, 1, &[4, -8]).unwrap(),
        vec![1001, 1000, 0, 0, 0]
    );
    assert_eq!(
        write(&mut dev, 1, &[4, 80]).unwrap(),
        vec![0, 1000, 0, 0, 1001]
    );
    assert!(matches!(
        write(&mut dev, 2, &[4, 20]),
        Err(KernelError::IllegalAddress(_))
    ));
}

/// Hand-written PTX: txq and suq, predicate destinations, a handle read
/// straight from the parameter, integer coordinates, f16x2 results.
const HAND: &str = r#"
.version 8.0
.target sm_80
.address_size 64

.visible .entry queries(.param .u64 t, .param .u64 s, .param .u64 out)
{
    .reg .b32 %r<30>;
    .reg .b64 %rd<4>;
    ld.param.u64 %rd1, [t];
    ld.param.u64 %rd2, [s];
    ld.param.u64 %rd3, [out];
    cvta.to.global.u64 %rd3, %rd3;
    txq.width.b32 %r1, [%rd1];
    txq.height.b32 %r2, [%rd1];
    txq.depth.b32 %r3, [%rd1];
    txq.channel_data_type.b32 %r4, [%rd1];
    txq.channel_order.b32 %r5, [%rd1];
    txq.normalized_coords.b32 %r6, [%rd1];
    txq.filter_mode.b32 %r7, [%rd1];
    txq.addr_mode_0.b32 %r8, [%rd1];
    txq.addr_mode_1.b32 %r9, [%rd1];
    txq.addr_mode_2.b32 %r10, [%rd1];
    txq.array_size.b32 %r11, [%rd1];
    txq.num_mipmap_levels.b32 %r12, [%rd1];
    txq.num_samples.b32 %r13, [%rd1];
    suq.width.b32 %r14, [%rd2];
    suq.height.b32 %r15, [%rd2];
    suq.depth.b32 %r16, [%rd2];
    suq.channel_data_type.b32 %r17, [%rd2];
    suq.channel_order.b32 %r18, [%rd2];
    suq.array_size.b32 %r19, [%rd2];
    suq.memory_layout.b32 %r20, [%rd2];
    txq.width.b32 %r21, [t];
    st.global.v4.u32 [%rd3], {%r1, %r2, %r3, %r4};
    st.global.v4.u32 [%rd3+16], {%r5, %r6, %r7, %r8};
    st.global.v4.u32 [%rd3+32], {%r9, %r10, %r11, %r12};
    st.global.v4.u32 [%rd3+48], {%r13, %r14, %r15, %r16};
    st.global.v4.u32 [%rd3+64], {%r17, %r18, %r19, %r20};
    st.global.u32 [%rd3+80], %r21;
    ret;
}

.visible .entry forms(.param .u64 t, .param .u64 out)
{
    .reg .pred %p<3>;
    .reg .b32 %r<30>;
    .reg .f32 %f<10>;
    .reg .b64 %rd<4>;
    ld.param.u64 %rd3, [out];
    cvta.to.global.u64 %rd3, %rd3;
    mov.f32 %f1, 0f40200000;
    mov.f32 %f2, 0f3FC00000;
    mov.b32 %r9, 2;
    mov.b32 %r10, 1;
    tex.2d.v4.f32.f32 {%f3, %f4, %f5, %f6}|%p1, [t, {%f1, %f2}];
    selp.u32 %r1, 1, 0, %p1;
    tex.2d.v4.s32.s32 {%r2, %r3, %r4, %r5}, [t, {%r9, %r10}];
    tex.2d.v2.f16x2.f32 {%r6, %r7}, [t, {%f1, %f2}];
    tld4.a.2d.v4.u32.f32 {%r11, %r12, %r13, %r14}, [t, {%f1, %f2}];
    st.global.v4.f32 [%rd3], {%f3, %f4, %f5, %f6};
    st.global.v4.u32 [%rd3+16], {%r1, %r2, %r3, %r4};
    st.global.v4.u32 [%rd3+32], {%r5, %r6, %r7, %r11};
    st.global.v4.u32 [%rd3+48], {%r12, %r13, %r14, %r14};
    ret;
}

.visible .entry mixed(.param .u64 t0, .param .u64 t1, .param .u64 out)
{
    .reg .pred %p<2>;
    .reg .b32 %r<4>;
    .reg .f32 %f<8>;
    .reg .b64 %rd<8>;
    ld.param.u64 %rd1, [t0];
    ld.param.u64 %rd2, [t1];
    ld.param.u64 %rd3, [out];
    cvta.to.global.u64 %rd3, %rd3;
    mov.u32 %r1, %tid.x;
    and.b32 %r2, %r1, 1;
    setp.eq.u32 %p1, %r2, 0;
    selp.b64 %rd4, %rd1, %rd2, %p1;
    mov.f32 %f1, 0f3F000000;
    tex.1d.v4.f32.f32 {%f2, %f3, %f4, %f5}, [%rd4, {%f1}];
    mul.wide.u32 %rd5, %r1, 4;
    add.s64 %rd6, %rd3, %rd5;
    st.global.f32 [%rd6], %f2;
    ret;
}

.visible .entry formatted(.param .u64 s)
{
    .reg .b32 %r<3>;
    .reg .b64 %rd<2>;
    ld.param.u64 %rd1, [s];
    mov.b32 %r1, 0;
    sust.p.1d.v4.b32.trap [%rd1, {%r1}], {%r1, %r1, %r1, %r1};
    ret;
}

.visible .entry independent(.param .u64 t, .param .u64 smp)
{
    .reg .f32 %f<6>;
    .reg .b64 %rd<3>;
    ld.param.u64 %rd1, [t];
    ld.param.u64 %rd2, [smp];
    tex.1d.v4.f32.f32 {%f1, %f2, %f3, %f4}, [%rd1, %rd2, {%f5}];
    ret;
}
"#;

#[test]
fn queries_and_hand_written_forms() {
    let mut dev = Dev::from_text(HAND);
    let mut d = desc(Shape::Layered2D, 2, 8, ChannelKind::Signed, [6, 4, 1], 3);
    d.read_normalized = true;
    d.normalized_coords = true;
    d.filter = Filter::Linear;
    d.address = [AddressMode::Wrap, AddressMode::Mirror, AddressMode::Border];
    let mut rng = Rng(8);
    let mut img = Img::random(d, &mut rng);
    let t = img.upload(&mut dev);
    let s = desc(Shape::Array3D, 4, 16, ChannelKind::Float, [3, 5, 7], 0);
    let (s, _) = surface(s, vec![0; 3 * 5 * 7 * 8], &mut dev);
    let out = dev.zeros::<u32>(21);
    dev.launch(
        "queries",
        [1, 1, 1],
        [1, 1, 1],
        0,
        &[arg(t), arg(s), arg(out)],
    )
    .unwrap();
    assert_eq!(
        dev.read::<u32>(out, 21),
        vec![
            6, 4, 1, 0x10D0, 0x10B2, 1, 1, 0, 1, 4, 3, 1, 0, // txq
            3, 5, 7, 0x10DD, 0x10B5, 0, 0, // suq
            6, // txq on the parameter
        ]
    );

    // Unnormalized point sampling of a u8x4 element-type texture.
    let mut d = desc(Shape::Array2D, 4, 8, ChannelKind::Unsigned, [4, 3, 1], 0);
    d.read_normalized = true;
    let mut img = Img::random(d, &mut rng);
    let t = img.upload(&mut dev);
    let out = dev.zeros::<u32>(16);
    dev.launch("forms", [1, 1, 1], [1, 1, 1], 0, &[arg(t), arg(out)])
        .unwrap();
    let got = dev.read::<u32>(out, 16);
    // (2.5, 1.5) is texel (2, 1).
    let Texel::F(v) = img.texel(2, 1, 0) else {
        panic!()
    };
    assert_eq!(&as_f32(&got[..4]), &v);
    assert_eq!(got[4], 1, "predicate destination");
    // Integer coordinates (2, 1): the same texel.
    assert_eq!(&as_f32(&got[5..9]), &v);
    let h = |x: f32| u32::from(f16::from_f32(x).to_bits());
    assert_eq!(got[9], h(v[0]) | h(v[1]) << 16);
    assert_eq!(got[10], h(v[2]) | h(v[3]) << 16);
    // Gather of alpha around (2.5, 1.5): texels (2, 2), (3, 2), (3, 1), (2, 1).
    let alpha = |x, y| match img.texel(x, y, 0) {
        Texel::F(v) => v[3].to_bits(),
        _ => unreachable!(),
    };
    assert_eq!(
        &got[11..15],
        &[alpha(2, 2), alpha(3, 2), alpha(3, 1), alpha(2, 1)]
    );

    // Lanes of one warp on two textures.
    let one = |v: f32, dev: &mut Dev| {
        let d = desc(Shape::Array1D, 1, 32, ChannelKind::Float, [1, 1, 1], 0);
        Img {
            d,
            data: v.to_le_bytes().to_vec(),
        }
        .upload(dev)
    };
    let (t0, t1) = (one(1.0, &mut dev), one(2.0, &mut dev));
    let out = dev.zeros::<f32>(32);
    dev.launch(
        "mixed",
        [1, 1, 1],
        [32, 1, 1],
        0,
        &[arg(t0), arg(t1), arg(out)],
    )
    .unwrap();
    let want: Vec<f32> = (0..32).map(|k| [1.0, 2.0][k % 2]).collect();
    assert_eq!(dev.read::<f32>(out, 32), want);

    for k in ["formatted", "independent"] {
        let e = dev
            .launch(
                k,
                [1, 1, 1],
                [1, 1, 1],
                0,
                &[arg(s), arg(s)][..dev.module.kernel_params(k).unwrap().len()],
            )
            .unwrap_err();
        assert!(matches!(e, KernelError::Unsupported(_)), "{k}: {e:?}");
    }
}

#[test]
fn forged_handles_fault_cleanly() {
    let mut dev = Dev::load("textures.ptx");
    let coords = dev.alloc(&[0.5f32, 0.5]);
    let out = dev.zeros::<f32>(4);
    let garbage = dev.alloc(&[0xdead_beef_u32; 32]);
    let mut img = Img::random(
        desc(Shape::Array2D, 1, 32, ChannelKind::Float, [2, 2, 1], 0),
        &mut Rng(1),
    );
    let good = img.upload(&mut dev);
    // A descriptor whose texels are outside every allocation.
    let mut stray = img.d;
    stray.base = 0x7000_0000_0000;
    let stray = dev.alloc(&stray.encode());
    let (surf, _) = surface(img.d, vec![0; 16], &mut dev);
    // Billions of layers claimed over a small allocation.
    let mut huge = desc(
        Shape::Layered2D,
        1,
        32,
        ChannelKind::Float,
        [2, 2, 1],
        3_000_000_000,
    );
    huge.base = img.d.base;
    let huge = dev.alloc(&huge.encode());
    let c = dev.alloc(&[0.5f32, 0.5]);
    let l = dev.alloc(&[2_000_000_000i32]);
    let r = dev.launch(
        "tex2d_layered_f4",
        [1, 1, 1],
        [1, 1, 1],
        0,
        &[arg(huge), arg(c), arg(l), arg(out), arg(1i32)],
    );
    assert!(matches!(r, Err(KernelError::IllegalAddress(_))), "{r:?}");
    for (what, h) in [
        ("unallocated", 0x1234_5678_9000u64),
        ("null", 0),
        ("misaligned", good + 4),
        ("garbage", garbage),
        ("texels outside memory", stray),
        ("a surface", surf),
        ("near the end of an allocation", garbage + 64),
    ] {
        let r = dev.launch(
            "tex2d_f4",
            [1, 1, 1],
            [32, 1, 1],
            0,
            &[arg(h), arg(coords), arg(out), arg(1i32)],
        );
        assert!(
            matches!(r, Err(KernelError::IllegalAddress(_))),
            "{what}: {r:?}"
        );
    }
    // The good one still works.
    dev.launch(
        "tex2d_f4",
        [1, 1, 1],
        [32, 1, 1],
        0,
        &[arg(good), arg(coords), arg(out), arg(1i32)],
    )
    .unwrap();
}

/// Random valid descriptors (any shape, format, modes and extent over one
/// allocation) under random coordinates, NaNs and infinities included:
/// every launch samples or faults, never panics the interpreter.
#[test]
fn random_descriptors_never_panic() {
    let mut dev = Dev::load("textures.ptx");
    let mut rng = Rng(0xbad);
    let pool = dev.alloc(&vec![0x3c00_3c00u32; 4096]);
    let special = [
        f32::NAN,
        f32::INFINITY,
        f32::NEG_INFINITY,
        -0.0,
        1e30,
        -1e30,
        0.5,
    ];
    let shapes = [
        Shape::Linear,
        Shape::Array1D,
        Shape::Array2D,
        Shape::Array3D,
        Shape::Layered1D,
        Shape::Layered2D,
        Shape::Cubemap,
        Shape::CubemapLayered,
    ];
    let kinds = [
        ChannelKind::Signed,
        ChannelKind::Unsigned,
        ChannelKind::Float,
    ];
    let mut decoded = 0;
    for round in 0..300 {
        let shape = shapes[(rng.next() % 8) as usize];
        let channels = [1u8, 2, 4][(rng.next() % 3) as usize];
        let bits = [8u8, 16, 32][(rng.next() % 3) as usize];
        let kind = kinds[(rng.next() % 3) as usize];
        let w = (rng.next() % 9 + 1) as u32;
        let (h, depth, layers) = match shape {
            Shape::Linear | Shape::Array1D => (1, 1, 0),
            Shape::Layered1D => (1, 1, (rng.next() % 4 + 1) as u32),
            Shape::Array2D => ((rng.next() % 9 + 1) as u32, 1, 0),
            Shape::Array3D => ((rng.next() % 5 + 1) as u32, (rng.next() % 5 + 1) as u32, 0),
            Shape::Layered2D => ((rng.next() % 5 + 1) as u32, 1, (rng.next() % 4 + 1) as u32),
            Shape::Cubemap => (w, 1, 6),
            Shape::CubemapLayered => (w, 1, 6 * (rng.next() % 3 + 1) as u32),
        };
        let mut d = desc(shape, channels, bits, kind, [w, h, depth], layers);
        d.surface = round % 5 == 0;
        d.address = [0, 1, 2].map(|_| MODES[(rng.next() % 4) as usize]);
        d.filter = [Filter::Point, Filter::Linear][(rng.next() % 2) as usize];
        d.read_normalized = rng.next().is_multiple_of(2);
        d.normalized_coords = rng.next().is_multiple_of(2);
        d.srgb = rng.next().is_multiple_of(4);
        // Sometimes past the pool's end: texel reads must fault cleanly.
        d.base = pool + (rng.next() % 4) * 4096 * (rng.next() % 2);
        let Ok(d) = ImageDescriptor::decode(&d.encode()) else {
            continue;
        };
        decoded += 1;
        let handle = dev.alloc(&d.encode());
        let n = 64;
        let floats: Vec<f32> = (0..4 * n)
            .map(|_| match rng.next() % 4 {
                0 => special[(rng.next() % 7) as usize],
                _ => (rng.next() % 40_000) as f32 / 1000.0 - 20.0,
            })
            .collect();
        let ints: Vec<i32> = (0..4 * n)
            .map(|_| match rng.next() % 3 {
                0 => rng.i32(),
                _ => (rng.next() % 64) as i32 - 16,
            })
            .collect();
        let (fb, ib) = (dev.alloc(&floats), dev.alloc(&ints));
        let out = dev.zeros::<u32>(8 * n);
        let runs: [(&str, Vec<Arg>); 9] = [
            (
                "tex1d_f4",
                vec![arg(handle), arg(fb), arg(out), arg(n as i32)],
            ),
            (
                "tex2d_f4",
                vec![arg(handle), arg(fb), arg(out), arg(n as i32)],
            ),
            (
                "tex3d_f4",
                vec![arg(handle), arg(fb), arg(out), arg(n as i32)],
            ),
            (
                "tex_cube_f4",
                vec![arg(handle), arg(fb), arg(out), arg(n as i32)],
            ),
            (
                "tex2d_i4",
                vec![arg(handle), arg(fb), arg(out), arg(n as i32)],
            ),
            (
                "tex1d_fetch_f4",
                vec![arg(handle), arg(ib), arg(out), arg(n as i32)],
            ),
            (
                "tex2d_layered_f4",
                vec![arg(handle), arg(fb), arg(ib), arg(out), arg(n as i32)],
            ),
            (
                "tex_cube_layered_f4",
                vec![arg(handle), arg(fb), arg(ib), arg(out), arg(n as i32)],
            ),
            (
                "surf1d_read_modes",
                vec![
                    arg(handle),
                    arg(ib),
                    arg(round % 3),
                    arg(out),
                    arg(n as i32),
                ],
            ),
        ];
        for (k, args) in runs {
            let r = dev.launch(k, grid(n), BLOCK, 0, &args);
            assert!(
                matches!(
                    r,
                    Ok(_)
                        | Err(KernelError::IllegalAddress(_))
                        | Err(KernelError::MisalignedAddress(_))
                ),
                "{k} on {d:?}: {r:?}"
            );
        }
        let r = dev.launch(
            "tex2d_gather",
            grid(n),
            BLOCK,
            0,
            &[
                arg(handle),
                arg(fb),
                arg(round % 4),
                arg(out),
                arg(n as i32),
            ],
        );
        assert!(!matches!(r, Err(KernelError::Internal(_))), "{r:?}");
    }
    assert!(decoded > 100, "only {decoded} descriptors decoded");
}
