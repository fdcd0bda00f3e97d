//! NVIDIA's cuRAND, loaded at run time, for the `cuda` backend's device
//! generators.
//!
//! As for cuBLAS ([`crate::cublas`]), every entry point is resolved once when
//! the library is opened ([`Rand::load_from`]); a host without cuRAND gets a
//! [`LibraryLoadError`] value. Output addresses are plain numbers here: the
//! backend checks the range a generation writes against the client's own
//! allocations before it calls [`RandGenerator::generate`].

use std::ffi::{c_int, c_uint, c_ulonglong, c_void};
use std::fmt;
use std::sync::Arc;

use crate::math_library::loaded_library;
use crate::{symbol, CtxInner, DriverError, LoadError};
use cudarc::driver::sys::CUstream;

/// The file names NVIDIA's cuRAND is installed under (cuRAND 10 ships with
/// CUDA 11, 12 and 13 alike).
pub const LIBRARIES: [&str; 1] = ["libcurand.so.10"];

type Generator = *mut c_void;
type Status = c_int;

type Bits32 = unsafe extern "C" fn(Generator, *mut c_uint, usize) -> Status;
type Bits64 = unsafe extern "C" fn(Generator, *mut c_ulonglong, usize) -> Status;
type Uniform = unsafe extern "C" fn(Generator, *mut f32, usize) -> Status;
type UniformDouble = unsafe extern "C" fn(Generator, *mut f64, usize) -> Status;
type Normal = unsafe extern "C" fn(Generator, *mut f32, usize, f32, f32) -> Status;
type NormalDouble = unsafe extern "C" fn(Generator, *mut f64, usize, f64, f64) -> Status;

/// The cuRAND entry points the backend uses, with the prototypes of
/// `curand.h` (enums as `unsigned int`, as their C ABI is).
struct RandApi {
    create: unsafe extern "C" fn(*mut Generator, c_uint) -> Status,
    create_host: unsafe extern "C" fn(*mut Generator, c_uint) -> Status,
    destroy: unsafe extern "C" fn(Generator) -> Status,
    set_stream: unsafe extern "C" fn(Generator, CUstream) -> Status,
    set_seed: unsafe extern "C" fn(Generator, c_ulonglong) -> Status,
    set_offset: unsafe extern "C" fn(Generator, c_ulonglong) -> Status,
    set_ordering: unsafe extern "C" fn(Generator, c_uint) -> Status,
    set_dimensions: unsafe extern "C" fn(Generator, c_uint) -> Status,
    generate: Bits32,
    generate_long_long: Bits64,
    uniform: Uniform,
    uniform_double: UniformDouble,
    normal: Normal,
    normal_double: NormalDouble,
    log_normal: Normal,
    log_normal_double: NormalDouble,
    poisson: unsafe extern "C" fn(Generator, *mut c_uint, usize, f64) -> Status,
    /// Keeps the code behind the pointers mapped; dropped last.
    _library: libloading::Library,
}

impl RandApi {
    fn resolve(library: libloading::Library) -> Result<Self, LoadError> {
        let lib = &library;
        // SAFETY: every field's type is the prototype in curand.h of the
        // entry point it is resolved from (`curandGenerator_t` as `void *`,
        // `curandRngType_t` and `curandOrdering_t` as `unsigned int`,
        // `size_t` as `usize`); the pointers are stored next to `library`,
        // which outlives them.
        unsafe {
            Ok(Self {
                create: symbol(lib, "curandCreateGenerator")?,
                create_host: symbol(lib, "curandCreateGeneratorHost")?,
                destroy: symbol(lib, "curandDestroyGenerator")?,
                set_stream: symbol(lib, "curandSetStream")?,
                set_seed: symbol(lib, "curandSetPseudoRandomGeneratorSeed")?,
                set_offset: symbol(lib, "curandSetGeneratorOffset")?,
                set_ordering: symbol(lib, "curandSetGeneratorOrdering")?,
                set_dimensions: symbol(lib, "curandSetQuasiRandomGeneratorDimensions")?,
                generate: symbol(lib, "curandGenerate")?,
                generate_long_long: symbol(lib, "curandGenerateLongLong")?,
                uniform: symbol(lib, "curandGenerateUniform")?,
                uniform_double: symbol(lib, "curandGenerateUniformDouble")?,
                normal: symbol(lib, "curandGenerateNormal")?,
                normal_double: symbol(lib, "curandGenerateNormalDouble")?,
                log_normal: symbol(lib, "curandGenerateLogNormal")?,
                log_normal_double: symbol(lib, "curandGenerateLogNormalDouble")?,
                poisson: symbol(lib, "curandGeneratePoisson")?,
                _library: library,
            })
        }
    }
}

loaded_library! {
    /// NVIDIA's cuRAND, loaded.
    Rand(RandApi), "cuRAND", "cuRAND 10"
}

/// A cuRAND call failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RandError {
    /// Making the context current, or waiting for its stream, failed.
    Driver(DriverError),
    /// cuRAND answered this `curandStatus_t`.
    Status {
        /// The entry point.
        call: &'static str,
        /// Its status.
        status: i32,
    },
}

impl From<DriverError> for RandError {
    fn from(e: DriverError) -> Self {
        Self::Driver(e)
    }
}

impl fmt::Display for RandError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Driver(e) => e.fmt(f),
            Self::Status { call, status } => write!(f, "{call} failed: curandStatus_t {status}"),
        }
    }
}

impl std::error::Error for RandError {}

/// What one generation call writes: the function and its arguments.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Output {
    /// `curandGenerate`: 32-bit words.
    Bits,
    /// `curandGenerateLongLong`: 64-bit words.
    LongLong,
    /// `curandGenerateUniform`.
    Uniform,
    /// `curandGenerateUniformDouble`.
    UniformDouble,
    /// `curandGenerateNormal`.
    Normal {
        /// Mean.
        mean: f32,
        /// Standard deviation.
        stddev: f32,
    },
    /// `curandGenerateNormalDouble`.
    NormalDouble {
        /// Mean.
        mean: f64,
        /// Standard deviation.
        stddev: f64,
    },
    /// `curandGenerateLogNormal`.
    LogNormal {
        /// Mean of the underlying normal.
        mean: f32,
        /// Its standard deviation.
        stddev: f32,
    },
    /// `curandGenerateLogNormalDouble`.
    LogNormalDouble {
        /// Mean of the underlying normal.
        mean: f64,
        /// Its standard deviation.
        stddev: f64,
    },
    /// `curandGeneratePoisson`: 32-bit counts.
    Poisson {
        /// The distribution's mean.
        lambda: f64,
    },
}

impl Output {
    /// Bytes of one value.
    pub fn value_size(self) -> u64 {
        match self {
            Self::Bits
            | Self::Uniform
            | Self::Normal { .. }
            | Self::LogNormal { .. }
            | Self::Poisson { .. } => 4,
            Self::LongLong
            | Self::UniformDouble
            | Self::NormalDouble { .. }
            | Self::LogNormalDouble { .. } => 8,
        }
    }
}

/// A cuRAND device generator created in a client's context, bound to its
/// stream; destroyed (with the context current) when dropped.
pub struct RandGenerator {
    api: Arc<RandApi>,
    ctx: Arc<CtxInner>,
    raw: Generator,
}

// SAFETY: cuRAND generators may be used from any thread, one call at a time;
// `&mut self` on every call and the context bound first make it so.
unsafe impl Send for RandGenerator {}

impl fmt::Debug for RandGenerator {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RandGenerator").finish_non_exhaustive()
    }
}

impl Drop for RandGenerator {
    fn drop(&mut self) {
        if let Err(e) = self.ctx.bind() {
            tracing::warn!("releasing a cuRAND generator: {e}");
        }
        // SAFETY: `raw` is a live generator, used by nothing else after this.
        let status = unsafe { (self.api.destroy)(self.raw) };
        if status != 0 {
            tracing::warn!("curandDestroyGenerator failed: curandStatus_t {status}");
        }
    }
}

fn check(status: Status, call: &'static str) -> Result<(), RandError> {
    if status == 0 {
        Ok(())
    } else {
        Err(RandError::Status { call, status })
    }
}

impl crate::Context {
    /// A new cuRAND device generator of `rng_type` (a `curandRngType_t`) in
    /// this context, on its stream (`curandCreateGenerator`,
    /// `curandSetStream`).
    pub fn rand_generator(&self, rand: &Rand, rng_type: u32) -> Result<RandGenerator, RandError> {
        self.inner.bind()?;
        let mut raw: Generator = std::ptr::null_mut();
        // SAFETY: `raw` is a valid out-pointer; the context is current; an
        // unknown type is answered with a status by cuRAND.
        let status = unsafe { (rand.api.create)(&mut raw, rng_type) };
        check(status, "curandCreateGenerator")?;
        let generator = RandGenerator {
            api: rand.api.clone(),
            ctx: self.inner.clone(),
            raw,
        };
        // SAFETY: a live generator and this context's live stream.
        let status = unsafe { (rand.api.set_stream)(raw, self.inner.stream) };
        check(status, "curandSetStream")?;
        Ok(generator)
    }
}

impl crate::Context {
    /// A new cuRAND host generator of `rng_type` (`curandCreateGeneratorHost`):
    /// NVIDIA's CPU implementation, which writes host memory. It is tied
    /// to this context only to be destroyed with it.
    pub fn rand_host_generator(
        &self,
        rand: &Rand,
        rng_type: u32,
    ) -> Result<RandGenerator, RandError> {
        self.inner.bind()?;
        let mut raw: Generator = std::ptr::null_mut();
        // SAFETY: `raw` is a valid out-pointer; an unknown type is answered
        // with a status by cuRAND.
        let status = unsafe { (rand.api.create_host)(&mut raw, rng_type) };
        check(status, "curandCreateGeneratorHost")?;
        Ok(RandGenerator {
            api: rand.api.clone(),
            ctx: self.inner.clone(),
            raw,
        })
    }
}

impl RandGenerator {
    /// `n` values of `output` from a host generator into `out`, which holds
    /// `n` values of its size (`out.len() * 16 >= n * value size`; 16-byte
    /// aligned, as NVIDIA's vectorised host code may store).
    pub fn generate_to_host(
        &mut self,
        output: Output,
        out: &mut [u128],
        n: usize,
    ) -> Result<(), RandError> {
        let fits = n
            .checked_mul(output.value_size() as usize)
            .is_some_and(|bytes| bytes <= std::mem::size_of_val(out));
        if !fits {
            return Err(RandError::Status {
                call: "a cuRAND host generation larger than its buffer",
                status: 104,
            });
        }
        // A host generator writes host memory at the address it is given,
        // which `out` provides for all `n` values (checked above).
        self.generate(output, out.as_mut_ptr() as u64, n)
    }

    /// `curandSetPseudoRandomGeneratorSeed`.
    pub fn set_seed(&mut self, seed: u64) -> Result<(), RandError> {
        self.ctx.bind()?;
        // SAFETY: a live generator; any seed is valid input.
        check(
            unsafe { (self.api.set_seed)(self.raw, seed) },
            "curandSetPseudoRandomGeneratorSeed",
        )
    }

    /// `curandSetGeneratorOffset`.
    pub fn set_offset(&mut self, offset: u64) -> Result<(), RandError> {
        self.ctx.bind()?;
        // SAFETY: a live generator; any offset is valid input.
        check(
            unsafe { (self.api.set_offset)(self.raw, offset) },
            "curandSetGeneratorOffset",
        )
    }

    /// `curandSetGeneratorOrdering` (`ordering` a `curandOrdering_t`; cuRAND
    /// answers an unknown one with a status).
    pub fn set_ordering(&mut self, ordering: u32) -> Result<(), RandError> {
        self.ctx.bind()?;
        // SAFETY: a live generator; cuRAND validates the value.
        check(
            unsafe { (self.api.set_ordering)(self.raw, ordering) },
            "curandSetGeneratorOrdering",
        )
    }

    /// `curandSetQuasiRandomGeneratorDimensions`.
    pub fn set_dimensions(&mut self, dimensions: u32) -> Result<(), RandError> {
        self.ctx.bind()?;
        // SAFETY: a live generator; cuRAND validates the value.
        check(
            unsafe { (self.api.set_dimensions)(self.raw, dimensions) },
            "curandSetQuasiRandomGeneratorDimensions",
        )
    }

    /// `n` values of `output` at device address `ptr`, complete when this
    /// returns. The caller has checked that `[ptr, ptr + n * value size)`
    /// lies in the client's memory.
    pub fn generate(&mut self, output: Output, ptr: u64, n: usize) -> Result<(), RandError> {
        self.ctx.bind()?;
        let (api, g) = (&*self.api, self.raw);
        // SAFETY: the prototypes match (see `resolve`); the device range the
        // call writes was checked by the caller against the client's
        // allocations; the work is complete (stream synchronised) before we
        // return.
        let (status, call) = unsafe {
            match output {
                Output::Bits => ((api.generate)(g, ptr as *mut c_uint, n), "curandGenerate"),
                Output::LongLong => (
                    (api.generate_long_long)(g, ptr as *mut c_ulonglong, n),
                    "curandGenerateLongLong",
                ),
                Output::Uniform => (
                    (api.uniform)(g, ptr as *mut f32, n),
                    "curandGenerateUniform",
                ),
                Output::UniformDouble => (
                    (api.uniform_double)(g, ptr as *mut f64, n),
                    "curandGenerateUniformDouble",
                ),
                Output::Normal { mean, stddev } => (
                    (api.normal)(g, ptr as *mut f32, n, mean, stddev),
                    "curandGenerateNormal",
                ),
                Output::NormalDouble { mean, stddev } => (
                    (api.normal_double)(g, ptr as *mut f64, n, mean, stddev),
                    "curandGenerateNormalDouble",
                ),
                Output::LogNormal { mean, stddev } => (
                    (api.log_normal)(g, ptr as *mut f32, n, mean, stddev),
                    "curandGenerateLogNormal",
                ),
                Output::LogNormalDouble { mean, stddev } => (
                    (api.log_normal_double)(g, ptr as *mut f64, n, mean, stddev),
                    "curandGenerateLogNormalDouble",
                ),
                Output::Poisson { lambda } => (
                    (api.poisson)(g, ptr as *mut c_uint, n, lambda),
                    "curandGeneratePoisson",
                ),
            }
        };
        check(status, call)?;
        self.ctx.sync_stream()?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_curand_is_an_error_value_naming_the_first_candidate() {
        let e = Rand::load_from(&[
            "/nonexistent/libcurand.so.10",
            "/nonexistent/other/libcurand.so.10",
        ])
        .unwrap_err();
        let text = e.to_string();
        assert!(text.contains("/nonexistent/libcurand.so.10"), "{text}");
    }

    /// NVIDIA's own library, when `scripts/ensure-cuda-libs.py --curand`
    /// fetched it into `.cuda-libs/lib`: every entry point resolves with
    /// the names used here (it loads without a GPU).
    #[test]
    fn nvidias_curand_has_every_entry_point() {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../.cuda-libs/lib/libcurand.so.10"
        );
        if !std::path::Path::new(path).exists() {
            eprintln!("skipped: {path} is not there (scripts/ensure-cuda-libs.py --curand)");
            return;
        }
        let rand = Rand::load_from(&[path]).unwrap();
        assert_eq!(rand.library(), path);
    }

    #[test]
    fn value_sizes_are_the_c_types() {
        assert_eq!(Output::Bits.value_size(), 4);
        assert_eq!(Output::LongLong.value_size(), 8);
        let (mean, stddev) = (0.0, 1.0);
        assert_eq!(Output::LogNormal { mean, stddev }.value_size(), 4);
        assert_eq!(
            Output::NormalDouble {
                mean: 0.0,
                stddev: 1.0
            }
            .value_size(),
            8
        );
    }
}
