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
}

/// `CURAND_RNG_PSEUDO_MTGP32`.
const RNG_MTGP32: c_uint = 141;

/// Whether `rng_type` makes normals in Box–Muller pairs, so that it takes
/// only even counts of them; MTGP32's normals are inverse-CDF, one per
/// value.
fn pairwise_normals(rng_type: c_uint) -> bool {
    rng_type != RNG_MTGP32
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
    let reply = match super::call(0, Library::Rand, &Call::Create { rng_type }) {
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
    _dimensions: c_uint,
) -> c_int {
    // Every generator rcud creates is pseudo-random.
    match lookup(generator) {
        Some(_) => TYPE_ERROR,
        None => NOT_INITIALIZED,
    }
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
    _out: *mut c_ulonglong,
    _n: usize,
) -> c_int {
    // 64-bit output is for the Sobol64 generators only.
    match lookup(generator) {
        Some(_) => TYPE_ERROR,
        None => NOT_INITIALIZED,
    }
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
    if distribution.is_pairwise() && pairwise_normals(g.rng_type) && n % 2 == 1 {
        return LENGTH_NOT_MULTIPLE;
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
    let mut done = 0u64;
    while done < n {
        let count = HOST_CHUNK.min(n - done);
        let reply = match super::call(g.stream, Library::Rand, &call(0, count)) {
            Ok(reply) => reply,
            Err(_) => return LAUNCH_FAILURE,
        };
        if reply.status != SUCCESS {
            return reply.status;
        }
        let want = (count * distribution.value_size()) as usize;
        if reply.out.len() != want {
            return INTERNAL_ERROR;
        }
        // SAFETY: the application's host buffer holds `n` values of this
        // distribution; this chunk lies inside it.
        unsafe {
            let dst = (out as *mut u8).add((done * distribution.value_size()) as usize);
            std::ptr::copy_nonoverlapping(reply.out.as_ptr(), dst, want);
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
