//! cuRAND on the CPU: the host API's generators, bit for bit as the
//! device API (`curand_kernel.h`) defines them.
//!
//! XORWOW, MRG32k3a and Philox4_32_10 run as 4096 parallel streams,
//! stream `s` being `curand_init(seed, s, 0)`: output unit `u` (counted
//! from the generator's offset, across calls) comes from stream
//! `u mod 4096`, each stream handing out its values in order. A unit is one
//! value, or the pair of a Box–Muller transform; it takes as many values
//! from its stream as the device API's function for it does
//! (`curand_uniform_double` two 32-bit words, one for Philox;
//! `curand_normal2` two; `curand_normal2_double` four; MRG32k3a one draw
//! per value). For 32-bit output this is the order cuRAND documents for
//! XORWOW's legacy ordering (value `n` from position
//! `(n mod 4096)·2^67 + ⌊n/4096⌋`). MT19937 is one sequential stream.
//! MTGP32 interleaves runs of 256 values of its 192 blocks
//! ([`mtgp32`]); it takes one word per value of every distribution, and
//! its normals are the inverse normal CDF of that word. The Sobol
//! generators lay out each call dimension-major ([`sobol`]) and make their
//! values from one 32- or 64-bit point each, normals by the inverse CDF.

mod mrg32k3a;
mod mt19937;
pub mod mtgp32;
mod philox;
pub mod sobol;
mod xorwow;

use std::collections::HashMap;

use rcud_proto::math::rand::{Call, Distribution};

use crate::{DeviceMemory, MathError, Reply};

pub use mrg32k3a::Mrg32k3a;
pub use mt19937::Mt19937;
pub use philox::{philox4x32_10, Philox};
pub use xorwow::Xorwow;

/// `CURAND_STATUS_NOT_INITIALIZED`: an unknown or destroyed generator.
pub const NOT_INITIALIZED: i32 = 101;
/// `CURAND_STATUS_TYPE_ERROR`: a generator type rcud does not run, or a
/// call the generator's type does not allow.
pub const TYPE_ERROR: i32 = 103;
/// `CURAND_STATUS_OUT_OF_RANGE`.
pub const OUT_OF_RANGE: i32 = 104;
/// `CURAND_STATUS_LENGTH_NOT_MULTIPLE`: an odd count of normals.
pub const LENGTH_NOT_MULTIPLE: i32 = 105;

/// `CURAND_RNG_PSEUDO_DEFAULT`.
pub const RNG_PSEUDO_DEFAULT: u32 = 100;
/// `CURAND_RNG_PSEUDO_XORWOW`.
pub const RNG_XORWOW: u32 = 101;
/// `CURAND_RNG_PSEUDO_MRG32K3A`.
pub const RNG_MRG32K3A: u32 = 121;
/// `CURAND_RNG_PSEUDO_MTGP32`.
pub const RNG_MTGP32: u32 = 141;
/// `CURAND_RNG_PSEUDO_MT19937`.
pub const RNG_MT19937: u32 = 142;
/// `CURAND_RNG_PSEUDO_PHILOX4_32_10`.
pub const RNG_PHILOX: u32 = 161;

/// `CURAND_RNG_QUASI_SOBOL32`.
pub const RNG_SOBOL32: u32 = 201;
/// `CURAND_RNG_QUASI_SCRAMBLED_SOBOL32`.
pub const RNG_SCRAMBLED_SOBOL32: u32 = 202;
/// `CURAND_RNG_QUASI_SOBOL64`.
pub const RNG_SOBOL64: u32 = 203;
/// `CURAND_RNG_QUASI_SCRAMBLED_SOBOL64`.
pub const RNG_SCRAMBLED_SOBOL64: u32 = 204;

/// Whether `rng_type` is a quasi-random generator.
fn is_quasi(rng_type: u32) -> bool {
    matches!(rng_type, RNG_SOBOL32 | RNG_SOBOL64)
}

/// Whether `rng_type` makes its normals one at a time (inverse CDF) rather
/// than in Box–Muller pairs, so that odd counts are fine.
fn one_normal_per_value(rng_type: u32) -> bool {
    rng_type == RNG_MTGP32 || is_quasi(rng_type)
}

/// Most bytes one host-generator call answers (the client splits larger
/// requests).
pub const MAX_HOST_BYTES: u64 = 1 << 19;

/// One generator of the device API: its state at a position of one of its
/// subsequences.
pub trait Engine: Sized {
    /// The state `curand_init(seed, subsequence, position)` sets.
    fn at(seed: u64, subsequence: u64, position: u64) -> Self;
    /// `curand(state)`.
    fn next(&mut self) -> u32;
}

/// The parallel streams of one engine, created when first used.
struct Parallel<E> {
    seed: u64,
    offset: u64,
    /// How many streams the units go round.
    count: u64,
    /// Units handed out so far, counted from 0 before the offset.
    units: u64,
    streams: Vec<Option<E>>,
}

impl<E: Engine> Parallel<E> {
    fn new(seed: u64, offset: u64, count: u64) -> Self {
        Self {
            seed,
            offset,
            count,
            units: offset,
            streams: (0..count).map(|_| None).collect(),
        }
    }

    /// The stream of the next unit.
    fn next_unit(&mut self) -> &mut E {
        let (seed, offset, count) = (self.seed, self.offset, self.count);
        let s = self.units % count;
        self.units += 1;
        // The offset's units went to the streams round-robin, one value each.
        let start = offset / count + u64::from(s < offset % count);
        self.streams[s as usize].get_or_insert_with(|| E::at(seed, s, start))
    }
}

/// Where a generator's words come from.
enum Source {
    Xorwow(Parallel<Xorwow>),
    /// Philox: the seed, and the index of the next value (from 0 before
    /// the offset).
    Philox {
        seed: u64,
        next: u64,
    },
    Mrg32k3a(Parallel<Mrg32k3a>),
    Mt19937(Mt19937),
    Mtgp32(mtgp32::HostMtgp32),
    /// Sobol32 or Sobol64: the dimensions and the index of the next point
    /// (from 0 before the offset).
    Sobol {
        dimensions: u32,
        bits64: bool,
        next: u64,
    },
}

impl Source {
    /// The `W` words of the next unit.
    fn unit<const W: usize>(&mut self) -> [u32; W] {
        match self {
            Source::Xorwow(p) => {
                let e = p.next_unit();
                std::array::from_fn(|_| e.next())
            }
            Source::Philox { .. } => unreachable!("Philox has its own generate_philox"),
            Source::Mrg32k3a(p) => {
                let e = p.next_unit();
                std::array::from_fn(|_| e.next())
            }
            Source::Mt19937(m) => std::array::from_fn(|_| m.next_u32()),
            Source::Mtgp32(m) => std::array::from_fn(|_| m.next_u32()),
            Source::Sobol { .. } => unreachable!("Sobol has its own generate_sobol"),
        }
    }
}

/// A generator: its settings, and its streams once it has generated.
struct Generator {
    rng_type: u32,
    seed: u64,
    offset: u64,
    ordering: u32,
    /// Dimensions of a quasi-random generator.
    dimensions: u32,
    source: Option<Source>,
}

impl Generator {
    fn source(&mut self) -> Result<&mut Source, i32> {
        if self.source.is_none() {
            let source = match self.rng_type {
                RNG_XORWOW => Source::Xorwow(Parallel::new(self.seed, self.offset, 4096)),
                RNG_PHILOX => Source::Philox {
                    seed: self.seed,
                    next: self.offset,
                },
                // NVIDIA's legacy order has 4096 streams, the others 81920
                // (20·4096), as its host library places them.
                RNG_MRG32K3A => {
                    let count = if self.ordering == ORDERING_LEGACY {
                        4096
                    } else {
                        81920
                    };
                    Source::Mrg32k3a(Parallel::new(self.seed, self.offset, count))
                }
                RNG_SOBOL32 | RNG_SOBOL64 => Source::Sobol {
                    dimensions: self.dimensions,
                    bits64: self.rng_type == RNG_SOBOL64,
                    next: self.offset,
                },
                RNG_MTGP32 => {
                    let blocks = if self.ordering == ORDERING_LEGACY {
                        mtgp32::LEGACY_BLOCKS
                    } else {
                        mtgp32::HOST_BLOCKS
                    };
                    Source::Mtgp32(mtgp32::HostMtgp32::new(self.seed, blocks))
                }
                // cuRAND's seed is 64 bits; MT19937's reference seeding takes 32.
                _ => Source::Mt19937(Mt19937::new(self.seed as u32)),
            };
            self.source = Some(source);
        }
        self.source.as_mut().ok_or(OUT_OF_RANGE)
    }
}

/// The orderings a generator type takes, as NVIDIA's library answers
/// `curandSetGeneratorOrdering` (`DYNAMIC` for none of them, `BEST` not
/// for MT19937, `SEEDED` for XORWOW only). Every ordering a type takes
/// gives the same values, as in NVIDIA's library, except XORWOW's
/// `SEEDED` (see the module documentation).
fn orderings(rng_type: u32) -> &'static [u32] {
    const BEST: u32 = 100;
    const SEEDED: u32 = 102;
    match rng_type {
        RNG_XORWOW => &[BEST, ORDERING_DEFAULT, SEEDED, ORDERING_LEGACY],
        RNG_MT19937 => &[ORDERING_DEFAULT, ORDERING_LEGACY],
        RNG_SOBOL32 | RNG_SOBOL64 => &[ORDERING_QUASI_DEFAULT],
        _ => &[BEST, ORDERING_DEFAULT, ORDERING_LEGACY],
    }
}

/// `CURAND_ORDERING_PSEUDO_DEFAULT`.
const ORDERING_DEFAULT: u32 = 101;
/// `CURAND_ORDERING_PSEUDO_LEGACY`.
const ORDERING_LEGACY: u32 = 103;
/// `CURAND_ORDERING_QUASI_DEFAULT`.
const ORDERING_QUASI_DEFAULT: u32 = 201;

/// The cuRAND generators of one client context.
#[derive(Default)]
pub struct State {
    generators: HashMap<u64, Generator>,
    last_id: u64,
}

impl State {
    /// Runs one cuRAND call.
    pub fn call(&mut self, memory: &mut dyn DeviceMemory, call: Call) -> Result<Reply, MathError> {
        match call {
            // rcud's generators are NVIDIA's host generators, bit for bit
            // (math/tests/curand_oracle.rs); on the emulated device they
            // serve device generators too.
            Call::Create { rng_type } | Call::CreateHost { rng_type } => Ok(self.create(rng_type)),
            Call::Destroy { generator } => Ok(match self.generators.remove(&generator) {
                Some(_) => Reply::ok(Vec::new()),
                None => Reply::status(NOT_INITIALIZED),
            }),
            Call::SetSeed { generator, seed } => Ok(self.update(generator, |g| {
                if is_quasi(g.rng_type) {
                    return Err(TYPE_ERROR);
                }
                g.seed = seed;
                Ok(())
            })),
            Call::SetDimensions {
                generator,
                dimensions,
            } => Ok(self.update(generator, |g| {
                if !is_quasi(g.rng_type) {
                    return Err(TYPE_ERROR);
                }
                if !(1..=sobol::MAX_DIMENSIONS).contains(&dimensions) {
                    return Err(OUT_OF_RANGE);
                }
                g.dimensions = dimensions;
                Ok(())
            })),
            Call::SetOffset { generator, offset } => Ok(self.update(generator, |g| {
                // NVIDIA's MT19937 and MTGP32 take no offset.
                if matches!(g.rng_type, RNG_MT19937 | RNG_MTGP32) {
                    return Err(TYPE_ERROR);
                }
                g.offset = offset;
                Ok(())
            })),
            Call::SetOrdering {
                generator,
                ordering,
            } => Ok(self.update(generator, |g| {
                if orderings(g.rng_type).contains(&ordering) {
                    g.ordering = ordering;
                    Ok(())
                } else {
                    Err(OUT_OF_RANGE)
                }
            })),
            Call::Generate {
                generator,
                distribution,
                ptr,
                n,
                mean,
                stddev,
            } => {
                let Some(g) = self.generators.get_mut(&generator) else {
                    return Ok(Reply::status(NOT_INITIALIZED));
                };
                let Some(distribution) = Distribution::from_wire(distribution) else {
                    return Ok(Reply::status(TYPE_ERROR));
                };
                // 64-bit words are Sobol64's only output of bits, and its
                // only words.
                let bits64 = g.rng_type == RNG_SOBOL64;
                if (distribution == Distribution::LongLong) != bits64
                    && matches!(distribution, Distribution::Bits | Distribution::LongLong)
                {
                    return Ok(Reply::status(TYPE_ERROR));
                }
                // NVIDIA's library takes lambda in (0, 400000] (and answers
                // OUT_OF_RANGE for NaN on most generators).
                if distribution == Distribution::Poisson
                    && !(mean > 0.0 && mean <= MAX_POISSON_LAMBDA)
                {
                    return Ok(Reply::status(OUT_OF_RANGE));
                }
                // A quasi-random call is whole points of every dimension.
                if is_quasi(g.rng_type) && !n.is_multiple_of(u64::from(g.dimensions)) {
                    return Ok(Reply::status(LENGTH_NOT_MULTIPLE));
                }
                // Box–Muller makes normals in pairs; the inverse CDF makes
                // them one at a time.
                if distribution.is_pairwise() && n % 2 == 1 && !one_normal_per_value(g.rng_type) {
                    return Ok(Reply::status(LENGTH_NOT_MULTIPLE));
                }
                let Some(bytes) = n.checked_mul(distribution.value_size()) else {
                    return Ok(Reply::status(OUT_OF_RANGE));
                };
                if ptr == 0 {
                    if bytes > MAX_HOST_BYTES {
                        return Ok(Reply::status(OUT_OF_RANGE));
                    }
                } else {
                    // Bounds first, so a bogus length allocates nothing.
                    memory.read(ptr, bytes)?;
                }
                let source = match g.source() {
                    Ok(s) => s,
                    Err(status) => return Ok(Reply::status(status)),
                };
                let out = generate(source, distribution, n, mean, stddev);
                if ptr == 0 {
                    Ok(Reply::ok(out))
                } else {
                    memory.write(ptr, &out)?;
                    Ok(Reply::ok(Vec::new()))
                }
            }
        }
    }

    fn create(&mut self, rng_type: u32) -> Reply {
        let rng_type = match rng_type {
            RNG_PSEUDO_DEFAULT => RNG_XORWOW,
            RNG_XORWOW | RNG_PHILOX | RNG_MRG32K3A | RNG_MT19937 | RNG_MTGP32 | RNG_SOBOL32
            | RNG_SOBOL64 => rng_type,
            RNG_SCRAMBLED_SOBOL32 | RNG_SCRAMBLED_SOBOL64 => {
                // Their scrambled direction vectors and scramble constants
                // are NVIDIA's own numbers, published nowhere.
                tracing::warn!(
                    rng_type,
                    "scrambled Sobol is not implemented by rcud (NVIDIA's scramble constants \
                     are not published); use CURAND_RNG_QUASI_SOBOL32/64"
                );
                return Reply::status(TYPE_ERROR);
            }
            other => {
                tracing::warn!(
                    rng_type = other,
                    "cuRAND generator type not implemented by rcud"
                );
                return Reply::status(TYPE_ERROR);
            }
        };
        self.last_id += 1;
        self.generators.insert(
            self.last_id,
            Generator {
                rng_type,
                seed: 0,
                offset: 0,
                ordering: if is_quasi(rng_type) {
                    ORDERING_QUASI_DEFAULT
                } else {
                    ORDERING_DEFAULT
                },
                dimensions: 1,
                source: None,
            },
        );
        Reply::ok(self.last_id.to_le_bytes().to_vec())
    }

    /// Changes a setting of `generator`; its streams start again from the
    /// new settings.
    fn update(
        &mut self,
        generator: u64,
        change: impl FnOnce(&mut Generator) -> Result<(), i32>,
    ) -> Reply {
        let Some(g) = self.generators.get_mut(&generator) else {
            return Reply::status(NOT_INITIALIZED);
        };
        match change(g) {
            Ok(()) => {
                g.source = None;
                Reply::ok(Vec::new())
            }
            Err(status) => Reply::status(status),
        }
    }
}

/// 2^-32 (`CURAND_2POW32_INV`).
const TWO_POW_M32: f32 = 2.328_306_4e-10;
/// 2^-32 · 2π in single precision (`CURAND_2POW32_INV_2PI`).
const TWO_POW_M32_2PI: f32 = 2.328_306_4e-10 * 6.283_185_5;
/// 2^-53 (`CURAND_2POW53_INV_DOUBLE`).
const TWO_POW_M53: f64 = 1.110_223_024_625_156_5e-16;

/// `_curand_uniform`: (0, 1].
pub fn uniform(x: u32) -> f32 {
    (x as f32).mul_add(TWO_POW_M32, TWO_POW_M32 / 2.0)
}

/// `_curand_uniform_double_hq`: 53 bits from two words, (0, 1].
pub fn uniform_double(x: u32, y: u32) -> f64 {
    let z = u64::from(x) ^ (u64::from(y) << 21);
    (z as f64).mul_add(TWO_POW_M53, TWO_POW_M53 / 2.0)
}

/// `_curand_uniform_double` of one word (Philox's `curand_uniform_double`):
/// 32 bits, (0, 1].
pub fn uniform_double_32(x: u32) -> f64 {
    let two_pow_m32 = 2f64.powi(-32);
    f64::from(x).mul_add(two_pow_m32, two_pow_m32)
}

/// `_curand_box_muller`: two standard normals from two words.
pub fn box_muller(x: u32, y: u32) -> (f32, f32) {
    let u = uniform(x);
    let v = (y as f32).mul_add(TWO_POW_M32_2PI, TWO_POW_M32_2PI / 2.0);
    let s = (-2.0f32 * u.ln()).sqrt();
    (v.sin() * s, v.cos() * s)
}

/// `_curand_box_muller_double`: two standard normals from four words.
pub fn box_muller_double(x0: u32, x1: u32, y0: u32, y1: u32) -> (f64, f64) {
    let u = uniform_double(x0, x1);
    let zy = u64::from(y0) ^ (u64::from(y1) << 21);
    let v = (zy as f64).mul_add(TWO_POW_M53 * 2.0, TWO_POW_M53);
    let s = (-2.0 * u.ln()).sqrt();
    let (sin, cos) = (v * std::f64::consts::PI).sin_cos();
    (sin * s, cos * s)
}

/// `n` values of `distribution` from `source`, as little-endian bytes.
fn generate(
    source: &mut Source,
    distribution: Distribution,
    n: u64,
    mean: f64,
    stddev: f64,
) -> Vec<u8> {
    if distribution == Distribution::Poisson {
        return generate_poisson(source, n, mean);
    }
    match source {
        Source::Mrg32k3a(p) => return generate_mrg(p, distribution, n, mean, stddev),
        Source::Philox { seed, next } => {
            return generate_philox(*seed, next, distribution, n, mean, stddev)
        }
        Source::Mtgp32(m) => {
            return generate_one_word(&mut || m.next_u32(), distribution, n, mean, stddev)
        }
        &mut Source::Sobol {
            dimensions,
            bits64,
            ref mut next,
        } => {
            let per = n / u64::from(dimensions);
            let mut out = Vec::with_capacity((n * distribution.value_size()) as usize);
            for d in 0..dimensions {
                if bits64 {
                    let mut points = sobol::Points::<64>::new(d, *next);
                    out.extend(generate_sobol64(
                        &mut points,
                        distribution,
                        per,
                        mean,
                        stddev,
                    ));
                } else {
                    let mut points = sobol::Points::<32>::new(d, *next);
                    let mut word = || points.next_point() as u32;
                    out.extend(generate_one_word(
                        &mut word,
                        distribution,
                        per,
                        mean,
                        stddev,
                    ));
                }
            }
            *next += per;
            return out;
        }
        _ => {}
    }
    let mut out = Vec::with_capacity((n * distribution.value_size()) as usize);
    let (mean32, stddev32) = (mean as f32, stddev as f32);
    match distribution {
        // 64-bit words are refused before (Sobol64 only).
        Distribution::Bits | Distribution::LongLong | Distribution::Poisson => {
            for _ in 0..n {
                let [x] = source.unit::<1>();
                out.extend_from_slice(&x.to_le_bytes());
            }
        }
        Distribution::Uniform => {
            for _ in 0..n {
                let [x] = source.unit::<1>();
                out.extend_from_slice(&uniform(x).to_le_bytes());
            }
        }
        Distribution::UniformDouble => {
            for _ in 0..n {
                let [x, y] = source.unit::<2>();
                out.extend_from_slice(&uniform_double(x, y).to_le_bytes());
            }
        }
        Distribution::Normal | Distribution::LogNormal => {
            for _ in 0..n / 2 {
                let [x, y] = source.unit::<2>();
                let (a, b) = box_muller(x, y);
                for z in [a, b] {
                    // mean + stddev·z, fused as the device code is.
                    let value =
                        scale_f32(z, mean32, stddev32, distribution == Distribution::LogNormal);
                    out.extend_from_slice(&value.to_le_bytes());
                }
            }
        }
        Distribution::NormalDouble | Distribution::LogNormalDouble => {
            for _ in 0..n / 2 {
                let [x0, x1, y0, y1] = source.unit::<4>();
                let (a, b) = box_muller_double(x0, x1, y0, y1);
                for z in [a, b] {
                    let value = scale_f64(
                        z,
                        mean,
                        stddev,
                        distribution == Distribution::LogNormalDouble,
                    );
                    out.extend_from_slice(&value.to_le_bytes());
                }
            }
        }
    }
    out
}

/// The largest lambda NVIDIA's `curandGeneratePoisson` takes (found with
/// its library: 400000 is taken, the next double refused).
pub const MAX_POISSON_LAMBDA: f64 = 400_000.0;

/// Above this lambda NVIDIA's host library takes the normal approximation
/// for Poisson values (8000 is still the inverse transform, the next
/// double not).
const NORMAL_POISSON_ABOVE: f64 = 8000.0;
/// From this lambda on Sobol64's Poisson values are the normal
/// approximation.
const NORMAL_POISSON_FROM_SOBOL64: f64 = 2000.0;

/// `curandGeneratePoisson`: one value per word of `curandGenerate`'s
/// order (`curandGenerateLongLong`'s for Sobol64), each [`poisson`] of
/// it — the method NVIDIA's host library uses for MTGP32 and Sobol at all
/// but small lambdas (docs/math/rand.md).
fn generate_poisson(source: &mut Source, n: u64, lambda: f64) -> Vec<u8> {
    if matches!(source, Source::Sobol { bits64: true, .. }) {
        // The word's top 53 bits, as `_curand_uniform_double_excluding_one`
        // and `_curand_normal_icdf_double` of a 64-bit word take them.
        let two_pow_m53 = 2f64.powi(-53);
        return generate(source, Distribution::LongLong, n, 0.0, 1.0)
            .chunks_exact(8)
            .map(|c| u64::from_le_bytes(c.try_into().unwrap_or_default()))
            .flat_map(|x| {
                let u = ((x >> 11) as f64) * two_pow_m53 + two_pow_m53 / 4.0;
                let normal = lambda >= NORMAL_POISSON_FROM_SOBOL64;
                poisson(u, || normal_icdf_double_53(x), lambda, normal).to_le_bytes()
            })
            .collect();
    }
    let two_pow_m32 = 2f64.powi(-32);
    generate(source, Distribution::Bits, n, 0.0, 1.0)
        .chunks_exact(4)
        .map(|c| u32::from_le_bytes(c.try_into().unwrap_or_default()))
        .flat_map(|x| {
            // (0, 1), never 1: the inverse transform's walk would not end.
            let u = f64::from(x) * two_pow_m32 + two_pow_m32 / 2.0;
            let normal = lambda > NORMAL_POISSON_ABOVE;
            poisson(u, || normal_icdf_double(x), lambda, normal).to_le_bytes()
        })
        .collect()
}

/// One Poisson value from one word, as NVIDIA's host library makes it
/// (`_curand_poisson` of `curand_poisson.h`, whose switch is at 1000 where
/// the host library's is above [`NORMAL_POISSON_ABOVE`]): the inverse
/// transform of the word's uniform `u` in (0, 1) (Fishman's algorithm,
/// walking the CDF with `e^-lambda` taken in steps of at most `e^-500` so
/// that it never underflows), or, when `normal`, the normal approximation
/// `⌊√λ·z + λ + ½⌋` with `z` the word's inverse normal CDF.
pub fn poisson(u: f64, z: impl FnOnce() -> f64, lambda: f64, normal: bool) -> u32 {
    if normal {
        return (lambda.sqrt() * z() + lambda + 0.5) as u32;
    }
    const STEP: f64 = 500.0;
    let (mut p, mut q) = (1.0f64, 1.0f64);
    let mut k = 0u32;
    let mut pow = 0i32;
    loop {
        let factor = if lambda > f64::from(pow) + STEP {
            (-STEP).exp()
        } else {
            (f64::from(pow) - lambda).exp()
        };
        p *= factor;
        q *= factor;
        pow += STEP as i32;
        while u > q {
            k += 1;
            p *= lambda / f64::from(k);
            q += p;
        }
        if f64::from(pow) >= lambda {
            return k;
        }
    }
}

/// `mean + stddev z`, exponentiated for a log-normal distribution.
fn scale_f32(z: f32, mean: f32, stddev: f32, log_normal: bool) -> f32 {
    let value = stddev.mul_add(z, mean);
    if log_normal {
        value.exp()
    } else {
        value
    }
}

/// As [`scale_f32`], in double precision.
fn scale_f64(z: f64, mean: f64, stddev: f64, log_normal: bool) -> f64 {
    let value = stddev.mul_add(z, mean);
    if log_normal {
        value.exp()
    } else {
        value
    }
}

/// The distributions of a generator that takes one 32-bit word per value
/// of every distribution and makes normals by the inverse CDF (MTGP32's
/// `curand_uniform`, `curand_uniform_double`, `curand_normal`,
/// `curand_normal_double`, `curand_log_normal`, ...).
fn generate_one_word(
    word: &mut dyn FnMut() -> u32,
    distribution: Distribution,
    n: u64,
    mean: f64,
    stddev: f64,
) -> Vec<u8> {
    let mut out = Vec::with_capacity((n * distribution.value_size()) as usize);
    let (mean32, stddev32) = (mean as f32, stddev as f32);
    for _ in 0..n {
        let x = word();
        match distribution {
            // Only Sobol64 makes 64-bit words (checked before).
            Distribution::Bits | Distribution::LongLong | Distribution::Poisson => {
                out.extend_from_slice(&x.to_le_bytes())
            }
            Distribution::Uniform => out.extend_from_slice(&uniform(x).to_le_bytes()),
            Distribution::UniformDouble => {
                out.extend_from_slice(&uniform_double_32(x).to_le_bytes())
            }
            Distribution::Normal | Distribution::LogNormal => {
                let value = scale_f32(
                    normal_icdf(x),
                    mean32,
                    stddev32,
                    distribution == Distribution::LogNormal,
                );
                out.extend_from_slice(&value.to_le_bytes());
            }
            Distribution::NormalDouble | Distribution::LogNormalDouble => {
                let value = scale_f64(
                    normal_icdf_double(x),
                    mean,
                    stddev,
                    distribution == Distribution::LogNormalDouble,
                );
                out.extend_from_slice(&value.to_le_bytes());
            }
        }
    }
    out
}

/// Sobol64's distributions: `curand_uniform`, `curand_normal`, ... of
/// `curandStateSobol64_t`, from the point's top 32 bits for floats and top
/// 53 bits for doubles.
fn generate_sobol64(
    points: &mut sobol::Points<64>,
    distribution: Distribution,
    n: u64,
    mean: f64,
    stddev: f64,
) -> Vec<u8> {
    let mut high = || (points.next_point() >> 32) as u32;
    match distribution {
        Distribution::Uniform | Distribution::Normal | Distribution::LogNormal => {
            return generate_one_word(&mut high, distribution, n, mean, stddev)
        }
        _ => {}
    }
    let mut out = Vec::with_capacity((n * 8) as usize);
    for _ in 0..n {
        let x = points.next_point();
        let value = match distribution {
            Distribution::UniformDouble => uniform_double_53(x),
            Distribution::NormalDouble => stddev.mul_add(normal_icdf_double_53(x), mean),
            Distribution::LogNormalDouble => stddev.mul_add(normal_icdf_double_53(x), mean).exp(),
            _ => {
                out.extend_from_slice(&x.to_le_bytes());
                continue;
            }
        };
        out.extend_from_slice(&value.to_le_bytes());
    }
    out
}

/// `_curand_uniform_double` of a 64-bit word: its top 53 bits, (0, 1).
pub fn uniform_double_53(x: u64) -> f64 {
    ((x >> 11) as f64).mul_add(TWO_POW_M53, TWO_POW_M53 / 2.0)
}

/// `_curand_normal_icdf_double` of a 64-bit word: its top 53 bits,
/// mirrored about ½.
pub fn normal_icdf_double_53(x: u64) -> f64 {
    const MINUS_SQRT2: f64 = -std::f64::consts::SQRT_2;
    let x = x >> 11;
    let (x, s) = if x > 1 << 52 {
        ((1 << 53) - 1 - x, -MINUS_SQRT2)
    } else {
        (x, MINUS_SQRT2)
    };
    let p = (x as f64).mul_add(TWO_POW_M53, TWO_POW_M53 / 2.0);
    s * erfcinv(2.0 * p)
}

/// `_curand_normal_icdf`: the standard normal at the word's uniform,
/// `-√2·erfcinv(2p)`, mirrored about ½ so that `p` stays in (0, ½] and
/// keeps its precision.
pub fn normal_icdf(x: u32) -> f32 {
    const MINUS_SQRT2: f32 = -std::f32::consts::SQRT_2;
    let (x, s) = if x > 0x8000_0000 {
        (u32::MAX - x, -MINUS_SQRT2)
    } else {
        (x, MINUS_SQRT2)
    };
    let p = uniform(x);
    // erfcinvf, computed in double and rounded once.
    s * erfcinv(f64::from(2.0 * p)) as f32
}

/// `_curand_normal_icdf_double` of one word.
pub fn normal_icdf_double(x: u32) -> f64 {
    const MINUS_SQRT2: f64 = -std::f64::consts::SQRT_2;
    let (x, s) = if x > 0x8000_0000 {
        (u32::MAX - x, -MINUS_SQRT2)
    } else {
        (x, MINUS_SQRT2)
    };
    let two_pow_m32 = 2f64.powi(-32);
    let p = f64::from(x).mul_add(two_pow_m32, two_pow_m32 / 2.0);
    s * erfcinv(2.0 * p)
}

/// The inverse complementary error function on (0, 1] (the inverse
/// normal CDF's tail half): Giles's single-precision approximation
/// ("Approximating the erfinv function", 2010), in terms of
/// `w = -ln(y(2 - y))` so that tiny `y` keep their precision, then Newton
/// steps on `ln erfc(z) = ln y` (nearly quadratic in `z`, so they converge
/// fast even from the guess's extrapolation below single precision's
/// range) to double precision.
pub fn erfcinv(y: f64) -> f64 {
    let w = -(y * (2.0 - y)).ln();
    let x = 1.0 - y;
    let guess = if w < 5.0 {
        let w = w - 2.5;
        [
            3.432_739_39e-7,
            -3.523_387_7e-6,
            -4.391_506_54e-6,
            2.185_808_7e-4,
            -1.253_725_03e-3,
            -4.177_681_64e-3,
            2.466_407_27e-1,
            1.501_409_41,
        ]
        .iter()
        .fold(2.810_226_36e-8, |p, c| c + p * w)
    } else {
        let w = w.sqrt() - 3.0;
        [
            1.009_505_58e-4,
            1.349_343_22e-3,
            -3.673_428_44e-3,
            5.739_507_73e-3,
            -7.622_461_3e-3,
            9.438_870_47e-3,
            1.001_674_06,
            2.832_976_82,
        ]
        .iter()
        .fold(-2.002_142_57e-4, |p, c| c + p * w)
    } * x;
    // d ln erfc(z)/dz = -2/√π·e^(-z²)/erfc(z).
    let (two_over_sqrt_pi, ln_y) = (std::f64::consts::FRAC_2_SQRT_PI, y.ln());
    let mut z = guess;
    for _ in 0..8 {
        let erfc = libm::erfc(z);
        let step = (erfc.ln() - ln_y) * erfc / (two_over_sqrt_pi * (-z * z).exp());
        z += step;
        if step.abs() <= f64::EPSILON * z.abs() {
            break;
        }
    }
    z
}

/// Philox4_32_10 as NVIDIA's host library places its values
/// (`math/tests/curand_oracle.rs`): a unit is four values of one of
/// 65536 streams, unit `u` coming from stream `u mod 65536`, its
/// `⌊u/65536⌋`-th unit, which starts at the stream's block `⌊u/65536⌋`.
/// A unit of 32-bit values is that block of four words (`curand4`,
/// `curand_uniform4`, `curand_normal4`), a unit of doubles that block and
/// the next (`curand_uniform2_double`, `curand_normal2_double` twice), so
/// consecutive double units of a stream share a block. `next` counts
/// values, offset included.
fn generate_philox(
    seed: u64,
    next: &mut u64,
    distribution: Distribution,
    n: u64,
    mean: f64,
    stddev: f64,
) -> Vec<u8> {
    let key = [seed as u32, (seed >> 32) as u32];
    let blocks_per_unit = distribution.value_size() / 4;
    let block = |stream: u64, counter: u64| {
        let words = [
            counter as u32,
            (counter >> 32) as u32,
            stream as u32,
            (stream >> 32) as u32,
        ];
        philox4x32_10(words, key)
    };
    let (mean32, stddev32) = (mean as f32, stddev as f32);
    let log = matches!(
        distribution,
        Distribution::LogNormal | Distribution::LogNormalDouble
    );
    let finish32 = |z: f32| scale_f32(z, mean32, stddev32, log).to_le_bytes();
    let finish64 = |z: f64| scale_f64(z, mean, stddev, log).to_le_bytes();
    // The four values of one block, as bytes.
    let values = |[a, b, c, d]: [u32; 4]| -> Vec<u8> {
        match distribution {
            // 64-bit words are refused before (Sobol64 only).
            Distribution::Bits | Distribution::LongLong | Distribution::Poisson => {
                [a, b, c, d].iter().flat_map(|x| x.to_le_bytes()).collect()
            }
            Distribution::Uniform => [a, b, c, d]
                .iter()
                .flat_map(|&x| uniform(x).to_le_bytes())
                .collect(),
            Distribution::UniformDouble => [uniform_double(a, b), uniform_double(c, d)]
                .iter()
                .flat_map(|x| x.to_le_bytes())
                .collect(),
            Distribution::Normal | Distribution::LogNormal => {
                let (z0, z1) = box_muller(a, b);
                let (z2, z3) = box_muller(c, d);
                [z0, z1, z2, z3].into_iter().flat_map(finish32).collect()
            }
            Distribution::NormalDouble | Distribution::LogNormalDouble => {
                let (z0, z1) = box_muller_double(a, b, c, d);
                [z0, z1].into_iter().flat_map(finish64).collect()
            }
        }
    };
    let size = distribution.value_size() as usize;
    let mut out = Vec::with_capacity(n as usize * size);
    let mut cached: Option<(u64, Vec<u8>)> = None;
    for v in *next..*next + n {
        let unit = v / 4;
        let index = (v % 4) as usize;
        if cached.as_ref().is_none_or(|(u, _)| *u != unit) {
            let stream = unit % PHILOX_STREAMS;
            // A stream's k-th unit starts at block k, also for doubles: its
            // second block is the next unit's first (as NVIDIA's does).
            let first = unit / PHILOX_STREAMS;
            let bytes = (first..first + blocks_per_unit)
                .flat_map(|counter| values(block(stream, counter)))
                .collect();
            cached = Some((unit, bytes));
        }
        if let Some((_, bytes)) = &cached {
            out.extend_from_slice(&bytes[index * size..(index + 1) * size]);
        }
    }
    *next += n;
    out
}

/// Philox's parallel streams in NVIDIA's host library.
const PHILOX_STREAMS: u64 = 65536;

/// MRG32k3a's own transforms (`curand_uniform`, `curand_box_muller_mrg`,
/// ... for `curandStateMRG32k3a_t`), from its draws in (0, m1].
fn generate_mrg(
    p: &mut Parallel<Mrg32k3a>,
    distribution: Distribution,
    n: u64,
    mean: f64,
    stddev: f64,
) -> Vec<u8> {
    let mut out = Vec::with_capacity((n * distribution.value_size()) as usize);
    let (mean32, stddev32) = (mean as f32, stddev as f32);
    let log = matches!(
        distribution,
        Distribution::LogNormal | Distribution::LogNormalDouble
    );
    match distribution {
        // 64-bit words are refused before (Sobol64 only).
        Distribution::Bits | Distribution::LongLong | Distribution::Poisson => {
            for _ in 0..n {
                out.extend_from_slice(&p.next_unit().next().to_le_bytes());
            }
        }
        Distribution::Uniform => {
            for _ in 0..n {
                let u = (p.next_unit().draw() * mrg32k3a::NORM) as f32;
                out.extend_from_slice(&u.to_le_bytes());
            }
        }
        Distribution::UniformDouble => {
            for _ in 0..n {
                let u = p.next_unit().draw() * mrg32k3a::NORM;
                out.extend_from_slice(&u.to_le_bytes());
            }
        }
        Distribution::Normal | Distribution::LogNormal => {
            for _ in 0..n / 2 {
                let e = p.next_unit();
                let x = (e.draw() * mrg32k3a::NORM) as f32;
                let y = (e.draw() * mrg32k3a::NORM) as f32 * TWO_PI_F32;
                let s = (-2.0f32 * x.ln()).sqrt();
                for z in [y.sin() * s, y.cos() * s] {
                    let value = scale_f32(z, mean32, stddev32, log);
                    out.extend_from_slice(&value.to_le_bytes());
                }
            }
        }
        Distribution::NormalDouble | Distribution::LogNormalDouble => {
            for _ in 0..n / 2 {
                let e = p.next_unit();
                let x = e.draw() * mrg32k3a::NORM;
                let y = e.draw() * mrg32k3a::NORM * 2.0;
                let s = (-2.0 * x.ln()).sqrt();
                let (sin, cos) = (y * std::f64::consts::PI).sin_cos();
                for z in [sin * s, cos * s] {
                    let value = scale_f64(z, mean, stddev, log);
                    out.extend_from_slice(&value.to_le_bytes());
                }
            }
        }
    }
    out
}

/// 2π in single precision (`CURAND_2PI`).
const TWO_PI_F32: f32 = 6.283_185_5;

#[cfg(test)]
mod tests;
