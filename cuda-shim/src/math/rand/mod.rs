//! cuRAND (`libcurand.so.10`): the host API.
//!
//! Generators live on the server (see `rcud_math::rand` for the order of
//! their values). A device generator's values are queued on its stream; a
//! host generator's values come back in the answer and are copied into the
//! application's buffer before the call returns.

#![allow(non_snake_case, unreachable_pub)]

use std::collections::HashMap;
use std::os::raw::{c_int, c_uint, c_ulonglong, c_void};
use std::sync::atomic::AtomicBool;
use std::sync::{Mutex, OnceLock};

use rcud_proto::math::rand::{Call, Distribution};
use rcud_proto::math::Library;

/// `CURAND_STATUS_INTERNAL_ERROR`: what a function rcud does not implement returns.
pub(crate) const NOT_SUPPORTED: c_int = 999;

const SUCCESS: c_int = 0;
const NOT_INITIALIZED: c_int = 101;
const TYPE_ERROR: c_int = 103;
const OUT_OF_RANGE: c_int = 104;
const LENGTH_NOT_MULTIPLE: c_int = 105;
const LAUNCH_FAILURE: c_int = 201;
const INITIALIZATION_FAILED: c_int = 203;
const INTERNAL_ERROR: c_int = 999;

/// `CURAND_VERSION` of the headers these exports come from (10.4.5).
const VERSION: [c_int; 3] = [10, 4, 5];

/// Values per host-generator request: the answer stays under the wire's
/// limit for 8-byte values, and the count is even for Box–Muller pairs.
const HOST_CHUNK: u64 = rcud_math_limits::MAX_HOST_BYTES / 8;

/// The server's limit on one host answer (`rcud_math::rand::MAX_HOST_BYTES`;
/// the client does not link the math crate).
mod rcud_math_limits {
    pub(super) const MAX_HOST_BYTES: u64 = 1 << 19;
}

/// The body of every generated cuRAND stub.
pub(crate) fn not_supported(name: &str, why: &str, logged: &AtomicBool) -> c_int {
    super::log_stub("cuRAND", name, why, logged);
    NOT_SUPPORTED
}

/// What the client keeps of a generator.
#[derive(Clone, Copy)]
struct Generator {
    /// The server's id.
    id: u64,
    /// Whether it generates into host memory.
    host: bool,
    /// Its stream (`curandSetStream`), as the runtime names streams.
    stream: u64,
    /// Its `curandRngType_t`.
    rng_type: c_uint,
    /// Dimensions of a quasi-random generator
    /// (`curandSetQuasiRandomGeneratorDimensions`).
    dimensions: u64,
}

/// `CURAND_RNG_PSEUDO_MTGP32`.
const RNG_MTGP32: c_uint = 141;
/// `CURAND_RNG_QUASI_SOBOL32`.
const RNG_SOBOL32: c_uint = 201;
/// `CURAND_RNG_QUASI_SOBOL64`.
const RNG_SOBOL64: c_uint = 203;

fn is_quasi(rng_type: c_uint) -> bool {
    matches!(rng_type, RNG_SOBOL32 | RNG_SOBOL64)
}

/// Whether `rng_type` makes normals in Box–Muller pairs, so that it takes
/// only even counts of them; MTGP32's and Sobol's normals are inverse-CDF,
/// one per value.
fn pairwise_normals(rng_type: c_uint) -> bool {
    rng_type != RNG_MTGP32 && !is_quasi(rng_type)
}

/// The status NVIDIA's library answers for `n` values of `distribution`
/// from `g` before generating anything (a device generator's work is
/// queued, so the client answers what the server would).
fn check_request(g: &Generator, distribution: Distribution, n: u64) -> c_int {
    // 64-bit words are Sobol64's only words.
    let words64 = g.rng_type == RNG_SOBOL64;
    if matches!(distribution, Distribution::Bits | Distribution::LongLong)
        && (distribution == Distribution::LongLong) != words64
    {
        return TYPE_ERROR;
    }
    if is_quasi(g.rng_type) && !n.is_multiple_of(g.dimensions) {
        return LENGTH_NOT_MULTIPLE;
    }
    if distribution.is_pairwise() && pairwise_normals(g.rng_type) && n % 2 == 1 {
        return LENGTH_NOT_MULTIPLE;
    }
    SUCCESS
}

/// Live generators by the handle the application holds.
fn generators() -> &'static Mutex<HashMap<u64, Generator>> {
    static GENERATORS: OnceLock<Mutex<HashMap<u64, Generator>>> = OnceLock::new();
    GENERATORS.get_or_init(Default::default)
}

fn lookup(handle: *mut c_void) -> Option<Generator> {
    generators()
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .get(&(handle as u64))
        .copied()
}

/// Runs `call` for `handle` and answers the library status.
fn sync_call(handle: *mut c_void, make: impl FnOnce(u64) -> Call) -> c_int {
    let Some(g) = lookup(handle) else {
        return NOT_INITIALIZED;
    };
    match super::call(g.stream, Library::Rand, &make(g.id)) {
        Ok(reply) => reply.status,
        Err(_) => LAUNCH_FAILURE,
    }
}

fn create(out: *mut *mut c_void, rng_type: c_uint, host: bool) -> c_int {
    if out.is_null() {
        return OUT_OF_RANGE;
    }
    let call = if host {
        Call::CreateHost { rng_type }
    } else {
        Call::Create { rng_type }
    };
    let reply = match super::call(0, Library::Rand, &call) {
        Ok(reply) => reply,
        Err(_) => return INITIALIZATION_FAILED,
    };
    if reply.status != SUCCESS {
        return reply.status;
    }
    let Ok(id) = <[u8; 8]>::try_from(reply.out.as_slice()).map(u64::from_le_bytes) else {
        return INTERNAL_ERROR;
    };
    static NEXT_HANDLE: Mutex<u64> = Mutex::new(0);
    let handle = {
        let mut next = NEXT_HANDLE.lock().unwrap_or_else(|e| e.into_inner());
        *next += 1;
        // Non-null and pointer-aligned, like a real object's address.
        *next << 4
    };
    generators()
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .insert(
            handle,
            Generator {
                id,
                host,
                stream: 0,
                rng_type,
                dimensions: 1,
            },
        );
    write_out(out, handle as *mut c_void)
}

#[no_mangle]
pub extern "C" fn curandCreateGenerator(generator: *mut *mut c_void, rng_type: c_uint) -> c_int {
    super::guard(INTERNAL_ERROR, || create(generator, rng_type, false))
}

#[no_mangle]
pub extern "C" fn curandCreateGeneratorHost(
    generator: *mut *mut c_void,
    rng_type: c_uint,
) -> c_int {
    super::guard(INTERNAL_ERROR, || create(generator, rng_type, true))
}

#[no_mangle]
pub extern "C" fn curandDestroyGenerator(generator: *mut c_void) -> c_int {
    super::guard(INTERNAL_ERROR, || {
        let status = sync_call(generator, |id| Call::Destroy { generator: id });
        generators()
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&(generator as u64));
        status
    })
}

/// Stores `value` at the application's `out`, or answers `OUT_OF_RANGE`
/// for a null pointer.
fn write_out<T>(out: *mut T, value: T) -> c_int {
    if out.is_null() {
        return OUT_OF_RANGE;
    }
    // SAFETY: `out` is the application's non-null output pointer of type T.
    unsafe { out.write(value) };
    SUCCESS
}

#[no_mangle]
pub extern "C" fn curandGetVersion(version: *mut c_int) -> c_int {
    write_out(version, VERSION[0] * 1000 + VERSION[1] * 100 + VERSION[2])
}

#[no_mangle]
pub extern "C" fn curandGetProperty(kind: c_int, value: *mut c_int) -> c_int {
    // MAJOR_VERSION, MINOR_VERSION, PATCH_LEVEL.
    match usize::try_from(kind).ok().and_then(|k| VERSION.get(k)) {
        Some(&v) => write_out(value, v),
        None => OUT_OF_RANGE,
    }
}

#[no_mangle]
pub extern "C" fn curandSetStream(generator: *mut c_void, stream: *mut c_void) -> c_int {
    super::guard(INTERNAL_ERROR, || {
        let mut all = generators().lock().unwrap_or_else(|e| e.into_inner());
        match all.get_mut(&(generator as u64)) {
            Some(g) => {
                g.stream = stream as u64;
                SUCCESS
            }
            None => NOT_INITIALIZED,
        }
    })
}

#[no_mangle]
pub extern "C" fn curandSetPseudoRandomGeneratorSeed(
    generator: *mut c_void,
    seed: c_ulonglong,
) -> c_int {
    super::guard(INTERNAL_ERROR, || {
        sync_call(generator, |id| Call::SetSeed {
            generator: id,
            seed,
        })
    })
}

#[no_mangle]
pub extern "C" fn curandSetGeneratorOffset(generator: *mut c_void, offset: c_ulonglong) -> c_int {
    super::guard(INTERNAL_ERROR, || {
        sync_call(generator, |id| Call::SetOffset {
            generator: id,
            offset,
        })
    })
}

#[no_mangle]
pub extern "C" fn curandSetGeneratorOrdering(generator: *mut c_void, ordering: c_uint) -> c_int {
    super::guard(INTERNAL_ERROR, || {
        sync_call(generator, |id| Call::SetOrdering {
            generator: id,
            ordering,
        })
    })
}

#[no_mangle]
pub extern "C" fn curandSetQuasiRandomGeneratorDimensions(
    generator: *mut c_void,
    dimensions: c_uint,
) -> c_int {
    super::guard(INTERNAL_ERROR, || {
        let status = sync_call(generator, |id| Call::SetDimensions {
            generator: id,
            dimensions,
        });
        if status == SUCCESS {
            let mut all = generators().lock().unwrap_or_else(|e| e.into_inner());
            if let Some(g) = all.get_mut(&(generator as u64)) {
                g.dimensions = dimensions.into();
            }
        }
        status
    })
}

#[no_mangle]
pub extern "C" fn curandGenerateSeeds(generator: *mut c_void) -> c_int {
    // The server seeds a generator's streams when it first generates.
    match lookup(generator) {
        Some(_) => SUCCESS,
        None => NOT_INITIALIZED,
    }
}

#[no_mangle]
pub extern "C" fn curandGenerateLongLong(
    generator: *mut c_void,
    out: *mut c_ulonglong,
    n: usize,
) -> c_int {
    super::guard(INTERNAL_ERROR, || {
        generate(generator, out.cast(), n, Distribution::LongLong, 0.0, 1.0)
    })
}

/// `n` values of `distribution` into `out` (device memory, or host memory
/// for a host generator).
fn generate(
    generator: *mut c_void,
    out: *mut c_void,
    n: usize,
    distribution: Distribution,
    mean: f64,
    stddev: f64,
) -> c_int {
    let Some(g) = lookup(generator) else {
        return NOT_INITIALIZED;
    };
    let n = n as u64;
    let status = check_request(&g, distribution, n);
    if status != SUCCESS {
        return status;
    }
    // NVIDIA's library takes lambda in (0, 400000].
    if distribution == Distribution::Poisson && !(mean > 0.0 && mean <= MAX_POISSON_LAMBDA) {
        return OUT_OF_RANGE;
    }
    let Some(bytes) = n.checked_mul(distribution.value_size()) else {
        return OUT_OF_RANGE;
    };
    if n == 0 {
        return SUCCESS;
    }
    if out.is_null() {
        return LAUNCH_FAILURE;
    }
    let call = |ptr: u64, n: u64| Call::Generate {
        generator: g.id,
        distribution: distribution as u32,
        ptr,
        n,
        mean,
        stddev,
    };
    if !g.host {
        // What NVIDIA's kernel would fault on is refused before launching.
        if !super::is_device_range(out as u64, bytes) {
            return LAUNCH_FAILURE;
        }
        return match super::enqueue(g.stream, Library::Rand, &call(out as u64, n)) {
            Ok(()) => SUCCESS,
            Err(_) => LAUNCH_FAILURE,
        };
    }
    // In requests of whole points: a quasi-random request answers its
    // points dimension-major, each dimension's run going to its place in
    // the caller's dimension-major buffer. (A pseudo-random generator has
    // one dimension.)
    let dimensions = if is_quasi(g.rng_type) {
        g.dimensions
    } else {
        1
    };
    let points = n / dimensions;
    let points_per_request = (HOST_CHUNK / dimensions).max(1);
    let size = distribution.value_size();
    let mut done = 0u64;
    while done < points {
        let count = points_per_request.min(points - done);
        let reply = match super::call(g.stream, Library::Rand, &call(0, count * dimensions)) {
            Ok(reply) => reply,
            Err(_) => return LAUNCH_FAILURE,
        };
        if reply.status != SUCCESS {
            return reply.status;
        }
        if reply.out.len() as u64 != count * dimensions * size {
            return INTERNAL_ERROR;
        }
        for (d, run) in reply.out.chunks_exact((count * size) as usize).enumerate() {
            let at = (d as u64 * points + done) * size;
            // SAFETY: the application's host buffer holds `n` = `points` ·
            // `dimensions` values of this distribution; dimension `d`'s
            // points `done..done + count` lie inside it.
            unsafe {
                let dst = (out as *mut u8).add(at as usize);
                std::ptr::copy_nonoverlapping(run.as_ptr(), dst, run.len());
            }
        }
        done += count;
    }
    SUCCESS
}

#[no_mangle]
pub extern "C" fn curandGenerate(generator: *mut c_void, out: *mut c_uint, n: usize) -> c_int {
    super::guard(INTERNAL_ERROR, || {
        generate(generator, out.cast(), n, Distribution::Bits, 0.0, 1.0)
    })
}

/// The largest lambda `curandGeneratePoisson` takes, as NVIDIA's library.
const MAX_POISSON_LAMBDA: f64 = 400_000.0;

#[no_mangle]
pub extern "C" fn curandGeneratePoisson(
    generator: *mut c_void,
    out: *mut c_uint,
    n: usize,
    lambda: f64,
) -> c_int {
    super::guard(INTERNAL_ERROR, || {
        generate(generator, out.cast(), n, Distribution::Poisson, lambda, 0.0)
    })
}

#[no_mangle]
pub extern "C" fn curandGenerateUniform(generator: *mut c_void, out: *mut f32, n: usize) -> c_int {
    super::guard(INTERNAL_ERROR, || {
        generate(generator, out.cast(), n, Distribution::Uniform, 0.0, 1.0)
    })
}

#[no_mangle]
pub extern "C" fn curandGenerateUniformDouble(
    generator: *mut c_void,
    out: *mut f64,
    n: usize,
) -> c_int {
    super::guard(INTERNAL_ERROR, || {
        generate(
            generator,
            out.cast(),
            n,
            Distribution::UniformDouble,
            0.0,
            1.0,
        )
    })
}

#[no_mangle]
pub extern "C" fn curandGenerateNormal(
    generator: *mut c_void,
    out: *mut f32,
    n: usize,
    mean: f32,
    stddev: f32,
) -> c_int {
    super::guard(INTERNAL_ERROR, || {
        generate(
            generator,
            out.cast(),
            n,
            Distribution::Normal,
            mean.into(),
            stddev.into(),
        )
    })
}

#[no_mangle]
pub extern "C" fn curandGenerateNormalDouble(
    generator: *mut c_void,
    out: *mut f64,
    n: usize,
    mean: f64,
    stddev: f64,
) -> c_int {
    super::guard(INTERNAL_ERROR, || {
        generate(
            generator,
            out.cast(),
            n,
            Distribution::NormalDouble,
            mean,
            stddev,
        )
    })
}

#[no_mangle]
pub extern "C" fn curandGenerateLogNormal(
    generator: *mut c_void,
    out: *mut f32,
    n: usize,
    mean: f32,
    stddev: f32,
) -> c_int {
    super::guard(INTERNAL_ERROR, || {
        generate(
            generator,
            out.cast(),
            n,
            Distribution::LogNormal,
            mean.into(),
            stddev.into(),
        )
    })
}

#[no_mangle]
pub extern "C" fn curandGenerateLogNormalDouble(
    generator: *mut c_void,
    out: *mut f64,
    n: usize,
    mean: f64,
    stddev: f64,
) -> c_int {
    super::guard(INTERNAL_ERROR, || {
        generate(
            generator,
            out.cast(),
            n,
            Distribution::LogNormalDouble,
            mean,
            stddev,
        )
    })
}

/// The server's Sobol direction numbers (`math/src/rand/sobol.rs`, with its
/// generated Joe–Kuo table), compiled into the client too:
/// `curandGetDirectionVectors32/64` answer host tables the application
/// reads directly.
#[allow(dead_code)]
#[path = "../../../../math/src/rand/sobol.rs"]
mod sobol;

/// `CURAND_DIRECTION_VECTORS_32_JOEKUO6`.
const DIRECTION_VECTORS_32_JOEKUO6: c_uint = 101;
/// `CURAND_DIRECTION_VECTORS_64_JOEKUO6`.
const DIRECTION_VECTORS_64_JOEKUO6: c_uint = 103;

/// Answers a table of `set` (the unscrambled one of its width), made once.
fn direction_table<T, const BITS: usize>(
    out: *mut *const [T; BITS],
    set: c_uint,
    unscrambled: c_uint,
    table: &'static OnceLock<Vec<[T; BITS]>>,
    convert: fn(u64) -> T,
) -> c_int {
    if set != unscrambled {
        if set == unscrambled + 1 {
            // The scrambled sets are NVIDIA's own numbers, published nowhere.
            tracing::warn!(
                set,
                "cuRAND's scrambled direction vectors are not available in rcud"
            );
        }
        return OUT_OF_RANGE;
    }
    let vectors = table.get_or_init(|| {
        (0..sobol::MAX_DIMENSIONS)
            .map(|d| sobol::direction_vectors::<BITS>(d).map(convert))
            .collect()
    });
    write_out(out, vectors.as_ptr())
}

#[no_mangle]
pub extern "C" fn curandGetDirectionVectors32(
    vectors: *mut *const [c_uint; 32],
    set: c_uint,
) -> c_int {
    static TABLE: OnceLock<Vec<[c_uint; 32]>> = OnceLock::new();
    super::guard(INTERNAL_ERROR, || {
        direction_table(vectors, set, DIRECTION_VECTORS_32_JOEKUO6, &TABLE, |v| {
            v as c_uint
        })
    })
}

#[no_mangle]
pub extern "C" fn curandGetDirectionVectors64(
    vectors: *mut *const [c_ulonglong; 64],
    set: c_uint,
) -> c_int {
    static TABLE: OnceLock<Vec<[c_ulonglong; 64]>> = OnceLock::new();
    super::guard(INTERNAL_ERROR, || {
        direction_table(vectors, set, DIRECTION_VECTORS_64_JOEKUO6, &TABLE, |v| v)
    })
}
