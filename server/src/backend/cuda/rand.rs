//! cuRAND calls on a real GPU, in NVIDIA's library loaded at run time on
//! the first `curandCreateGenerator` ([`RandLibrary`]).
//!
//! Each wire generator is one of NVIDIA's: a device generator
//! (`curandCreateGenerator`, on the client context's stream, writing the
//! client's device memory) or a host generator (`curandCreateGeneratorHost`,
//! NVIDIA's CPU implementation, writing a buffer of the server's whose bytes
//! go back in the reply). They are not interchangeable: on an H200 NVIDIA's
//! host XORWOW normals differ from its device ones in the last bits, and
//! the host MT19937 refuses orderings the device one takes.
//!
//! Before NVIDIA's code runs, the statuses cuRAND answers without
//! generating are answered as `rcud_math::rand` answers them (in the same
//! order), then the written range `[ptr, ptr + n · value size)` is checked
//! against the client's allocations: a range outside them is refused with
//! `cudaErrorIllegalAddress`, as the emulated device refuses it.

use std::collections::BTreeMap;

use rcud_cuda_driver::curand::{self as nv, Output, RandError};
use rcud_math::rand::{
    LENGTH_NOT_MULTIPLE, MAX_HOST_BYTES, NOT_INITIALIZED, OUT_OF_RANGE, RNG_MTGP32,
    RNG_PSEUDO_DEFAULT, RNG_SCRAMBLED_SOBOL32, RNG_SCRAMBLED_SOBOL64, RNG_SOBOL32, RNG_SOBOL64,
    RNG_XORWOW, TYPE_ERROR,
};
use rcud_math::Reply;
use rcud_proto::math::rand::{Call, Distribution};
use rcud_proto::ops::Failure;
use rcud_proto::CudaError;

use super::library::LazyLibrary;
use super::CudaDeviceContext;

/// NVIDIA's cuRAND, opened on first use and shared by every client.
pub(super) type RandLibrary = LazyLibrary<nv::Rand>;

/// One generator of a client.
#[derive(Debug)]
struct Generator {
    nvidia: nv::RandGenerator,
    /// Made by `curandCreateGeneratorHost`.
    host: bool,
    /// Its `curandRngType_t` (`PSEUDO_DEFAULT` as the XORWOW it is).
    rng_type: u32,
    /// Dimensions of a quasi-random generator.
    dimensions: u32,
}

/// The cuRAND generators of one client context, by wire id.
#[derive(Debug, Default)]
pub(super) struct RandGenerators {
    generators: BTreeMap<u64, Generator>,
    next: u64,
}

impl RandGenerators {
    /// Destroys every generator (before the context goes).
    pub(super) fn clear(&mut self) {
        self.generators.clear();
    }
}

fn is_quasi(rng_type: u32) -> bool {
    matches!(
        rng_type,
        RNG_SOBOL32 | RNG_SOBOL64 | RNG_SCRAMBLED_SOBOL32 | RNG_SCRAMBLED_SOBOL64
    )
}

/// The status cuRAND answers for `n` values of `distribution` from a
/// generator of `rng_type` with `dimensions`, before generating anything
/// (the rules, and their order, of `rcud_math::rand` and of the client):
/// 32-bit words from every type but the 64-bit Sobols, which give only
/// 64-bit words; whole points of a quasi-random generator; Box–Muller
/// normals in pairs (MTGP32's and Sobol's are one per value).
fn status_before_generating(
    rng_type: u32,
    dimensions: u32,
    distribution: Distribution,
    n: u64,
) -> Option<i32> {
    let words64 = matches!(rng_type, RNG_SOBOL64 | RNG_SCRAMBLED_SOBOL64);
    if matches!(distribution, Distribution::Bits | Distribution::LongLong)
        && (distribution == Distribution::LongLong) != words64
    {
        return Some(TYPE_ERROR);
    }
    if is_quasi(rng_type) && !n.is_multiple_of(u64::from(dimensions.max(1))) {
        return Some(LENGTH_NOT_MULTIPLE);
    }
    let pairwise = rng_type != RNG_MTGP32 && !is_quasi(rng_type);
    if distribution.is_pairwise() && pairwise && n % 2 == 1 {
        return Some(LENGTH_NOT_MULTIPLE);
    }
    None
}

/// The library function for `distribution` (float parameters rounded to
/// `float`, as the C prototypes take them).
fn output(distribution: Distribution, mean: f64, stddev: f64) -> Output {
    match distribution {
        Distribution::Bits => Output::Bits,
        Distribution::LongLong => Output::LongLong,
        Distribution::Uniform => Output::Uniform,
        Distribution::UniformDouble => Output::UniformDouble,
        Distribution::Normal => Output::Normal {
            mean: mean as f32,
            stddev: stddev as f32,
        },
        Distribution::NormalDouble => Output::NormalDouble { mean, stddev },
        Distribution::LogNormal => Output::LogNormal {
            mean: mean as f32,
            stddev: stddev as f32,
        },
        Distribution::LogNormalDouble => Output::LogNormalDouble { mean, stddev },
        Distribution::Poisson => Output::Poisson { lambda: mean },
    }
}

/// A setting of a generator.
#[derive(Debug, Clone, Copy)]
enum Setting {
    Seed(u64),
    Offset(u64),
    Ordering(u32),
    Dimensions(u32),
}

impl CudaDeviceContext {
    /// Runs one cuRAND call (the library's calls on the `cuda` backend).
    pub(super) fn rand_call(&mut self, call: Call) -> Result<Reply, Failure> {
        match call {
            Call::Create { rng_type } => self.rand_create(rng_type, false),
            Call::CreateHost { rng_type } => self.rand_create(rng_type, true),
            Call::Destroy { generator } => {
                // Dropping NVIDIA's generator destroys it, with its context current.
                Ok(match self.rand.generators.remove(&generator) {
                    Some(_) => Reply::ok(Vec::new()),
                    None => Reply::status(NOT_INITIALIZED),
                })
            }
            Call::SetSeed { generator, seed } => self.rand_set(generator, Setting::Seed(seed)),
            Call::SetOffset { generator, offset } => {
                self.rand_set(generator, Setting::Offset(offset))
            }
            Call::SetOrdering {
                generator,
                ordering,
            } => self.rand_set(generator, Setting::Ordering(ordering)),
            Call::SetDimensions {
                generator,
                dimensions,
            } => self.rand_set(generator, Setting::Dimensions(dimensions)),
            Call::Generate {
                generator,
                distribution,
                ptr,
                n,
                mean,
                stddev,
            } => {
                if !self.rand.generators.contains_key(&generator) {
                    return Ok(Reply::status(NOT_INITIALIZED));
                }
                let Some(distribution) = Distribution::from_wire(distribution) else {
                    return Ok(Reply::status(TYPE_ERROR));
                };
                let host = self.rand.generators.get(&generator).is_some_and(|g| g.host);
                // rcud's client asks a host generator for its values (`ptr`
                // 0) and a device generator for device memory, never else.
                if host != (ptr == 0) {
                    return Err(Failure::new(
                        CudaError::INVALID_VALUE,
                        "a cuRAND generation to the wrong side of the generator",
                    ));
                }
                if host {
                    return self.rand_generate_for_host(generator, distribution, n, (mean, stddev));
                }
                self.rand_generate(generator, distribution, ptr, n, (mean, stddev))
            }
        }
    }

    fn rand_create(&mut self, rng_type: u32, host: bool) -> Result<Reply, Failure> {
        let library = self.rand_library.clone();
        let rand = library.get()?;
        let ctx = self.live()?.clone();
        let made = if host {
            ctx.rand_host_generator(rand, rng_type)
        } else {
            ctx.rand_generator(rand, rng_type)
        };
        let nvidia = match made {
            Ok(g) => g,
            Err(RandError::Status { call, status }) => {
                tracing::debug!("{call}: curandStatus_t {status}");
                return Ok(Reply::status(status));
            }
            Err(RandError::Driver(e)) => return Err(self.note(&e)),
        };
        self.rand.next += 1;
        let id = self.rand.next;
        self.rand.generators.insert(
            id,
            Generator {
                nvidia,
                host,
                rng_type: if rng_type == RNG_PSEUDO_DEFAULT {
                    RNG_XORWOW
                } else {
                    rng_type
                },
                dimensions: 1,
            },
        );
        Ok(Reply::ok(id.to_le_bytes().to_vec()))
    }

    /// Applies `setting` to NVIDIA's generator, whose status is the answer.
    fn rand_set(&mut self, generator: u64, setting: Setting) -> Result<Reply, Failure> {
        if !self.rand.generators.contains_key(&generator) {
            return Ok(Reply::status(NOT_INITIALIZED));
        }
        self.live()?;
        let Some(g) = self.rand.generators.get_mut(&generator) else {
            return Ok(Reply::status(NOT_INITIALIZED));
        };
        let applied = match setting {
            Setting::Seed(seed) => g.nvidia.set_seed(seed),
            Setting::Offset(offset) => g.nvidia.set_offset(offset),
            Setting::Ordering(ordering) => g.nvidia.set_ordering(ordering),
            Setting::Dimensions(dimensions) => g.nvidia.set_dimensions(dimensions),
        };
        match applied {
            Ok(()) => {}
            Err(RandError::Status { call, status }) => {
                tracing::debug!("{call}: curandStatus_t {status}");
                return Ok(Reply::status(status));
            }
            Err(RandError::Driver(e)) => return Err(self.note(&e)),
        }
        if let Setting::Dimensions(d) = setting {
            g.dimensions = d;
        }
        Ok(Reply::ok(Vec::new()))
    }

    /// A host generation of `n` values by NVIDIA's host generator, into a
    /// buffer of the server's, answered in the reply. At most
    /// [`MAX_HOST_BYTES`], as on the emulated device (the client splits
    /// larger requests).
    fn rand_generate_for_host(
        &mut self,
        generator: u64,
        distribution: Distribution,
        n: u64,
        (mean, stddev): (f64, f64),
    ) -> Result<Reply, Failure> {
        let Some(g) = self.rand.generators.get_mut(&generator) else {
            return Ok(Reply::status(NOT_INITIALIZED));
        };
        if let Some(status) = status_before_generating(g.rng_type, g.dimensions, distribution, n) {
            return Ok(Reply::status(status));
        }
        let bytes = match n.checked_mul(distribution.value_size()) {
            Some(b) if b <= MAX_HOST_BYTES => b as usize,
            _ => return Ok(Reply::status(OUT_OF_RANGE)),
        };
        if n == 0 {
            return Ok(Reply::ok(Vec::new()));
        }
        let mut buffer = vec![0u128; bytes.div_ceil(16)];
        let generated =
            g.nvidia
                .generate_to_host(output(distribution, mean, stddev), &mut buffer, n as usize);
        match generated {
            Ok(()) => {
                let mut out: Vec<u8> = buffer.iter().flat_map(|w| w.to_le_bytes()).collect();
                out.truncate(bytes);
                Ok(Reply::ok(out))
            }
            Err(RandError::Status { call, status }) => {
                tracing::debug!("{call}: curandStatus_t {status}");
                Ok(Reply::status(status))
            }
            Err(RandError::Driver(e)) => Err(self.note(&e)),
        }
    }

    /// `n` values of `distribution` written by NVIDIA's library at device
    /// address `ptr`, once the statuses and the range are checked.
    fn rand_generate(
        &mut self,
        generator: u64,
        distribution: Distribution,
        ptr: u64,
        n: u64,
        (mean, stddev): (f64, f64),
    ) -> Result<Reply, Failure> {
        let Some(g) = self.rand.generators.get(&generator) else {
            return Ok(Reply::status(NOT_INITIALIZED));
        };
        if let Some(status) = status_before_generating(g.rng_type, g.dimensions, distribution, n) {
            return Ok(Reply::status(status));
        }
        let (Some(bytes), Ok(count)) =
            (n.checked_mul(distribution.value_size()), usize::try_from(n))
        else {
            return Ok(Reply::status(OUT_OF_RANGE));
        };
        if n == 0 {
            return Ok(Reply::ok(Vec::new()));
        }
        if self.memory.check(ptr, bytes).is_err() {
            return Err(Failure::new(
                CudaError::ILLEGAL_ADDRESS,
                format!(
                    "cuRAND output: {bytes} bytes at {ptr:#x} are outside the client's device \
                     memory"
                ),
            ));
        }
        self.live()?;
        let Some(g) = self.rand.generators.get_mut(&generator) else {
            return Ok(Reply::status(NOT_INITIALIZED));
        };
        match g
            .nvidia
            .generate(output(distribution, mean, stddev), ptr, count)
        {
            Ok(()) => Ok(Reply::ok(Vec::new())),
            Err(RandError::Status { call, status }) => {
                tracing::debug!("{call}: curandStatus_t {status}");
                Ok(Reply::status(status))
            }
            Err(RandError::Driver(e)) => Err(self.note(&e)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_before_generating_are_rcud_maths() {
        use Distribution::*;
        assert_eq!(
            status_before_generating(RNG_XORWOW, 1, Normal, 3),
            Some(LENGTH_NOT_MULTIPLE)
        );
        assert_eq!(status_before_generating(RNG_MTGP32, 1, Normal, 3), None);
        assert_eq!(
            status_before_generating(RNG_XORWOW, 1, LongLong, 2),
            Some(TYPE_ERROR)
        );
        assert_eq!(
            status_before_generating(RNG_SOBOL64, 1, Bits, 2),
            Some(TYPE_ERROR)
        );
        assert_eq!(status_before_generating(RNG_SOBOL64, 2, LongLong, 4), None);
        assert_eq!(
            status_before_generating(RNG_SOBOL32, 3, Uniform, 4),
            Some(LENGTH_NOT_MULTIPLE)
        );
        assert_eq!(status_before_generating(RNG_SOBOL32, 3, Normal, 3), None);
    }
}
