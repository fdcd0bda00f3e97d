//! rcud's cuRAND generators against NVIDIA's own library.
//!
//! NVIDIA's `libcurand.so.10` runs its host generators
//! (`curandCreateGeneratorHost`) on the CPU, without a GPU: this test
//! loads it (extracted from the `nvidia-curand` wheel by
//! `scripts/ensure-cuda-libs.py --curand`) and compares its output with
//! `rcud_math::rand::State`, the code the server runs for every cuRAND
//! call, generator by generator, distribution by distribution, with several
//! seeds, offsets, orderings and successive calls of odd sizes. NVIDIA
//! documents that host and device generators give the same results, so the
//! host library is the oracle for both.
//!
//! Without the library (no network) the test is skipped with a message,
//! unless `RCUD_REQUIRE_CUDA=1` (CI) makes that a failure.

use std::ffi::c_void;
use std::path::PathBuf;
use std::process::Command;
use std::sync::OnceLock;

use libloading::os::unix::{Library, Symbol, RTLD_GLOBAL, RTLD_NOW};
use rcud_math::rand::{State, MAX_HOST_BYTES};
use rcud_math::{DeviceMemory, Fault};
use rcud_proto::math::rand::{Call, Distribution};

type Gen = *mut c_void;

/// The functions of NVIDIA's host API this test calls.
struct Curand {
    create_host: Symbol<unsafe extern "C" fn(*mut Gen, i32) -> i32>,
    destroy: Symbol<unsafe extern "C" fn(Gen) -> i32>,
    set_seed: Symbol<unsafe extern "C" fn(Gen, u64) -> i32>,
    set_offset: Symbol<unsafe extern "C" fn(Gen, u64) -> i32>,
    set_ordering: Symbol<unsafe extern "C" fn(Gen, i32) -> i32>,
    set_dimensions: Symbol<unsafe extern "C" fn(Gen, u32) -> i32>,
    generate: Symbol<unsafe extern "C" fn(Gen, *mut u32, usize) -> i32>,
    generate_long_long: Symbol<unsafe extern "C" fn(Gen, *mut u64, usize) -> i32>,
    direction_vectors32: Symbol<unsafe extern "C" fn(*mut *const [u32; 32], i32) -> i32>,
    direction_vectors64: Symbol<unsafe extern "C" fn(*mut *const [u64; 64], i32) -> i32>,
    uniform: Symbol<unsafe extern "C" fn(Gen, *mut f32, usize) -> i32>,
    uniform_double: Symbol<unsafe extern "C" fn(Gen, *mut f64, usize) -> i32>,
    normal: Symbol<unsafe extern "C" fn(Gen, *mut f32, usize, f32, f32) -> i32>,
    normal_double: Symbol<unsafe extern "C" fn(Gen, *mut f64, usize, f64, f64) -> i32>,
    log_normal: Symbol<unsafe extern "C" fn(Gen, *mut f32, usize, f32, f32) -> i32>,
    log_normal_double: Symbol<unsafe extern "C" fn(Gen, *mut f64, usize, f64, f64) -> i32>,
    poisson: Symbol<unsafe extern "C" fn(Gen, *mut u32, usize, f64) -> i32>,
    _libs: (Library, Library),
}

/// The directory holding NVIDIA's libraries, fetched by the script once per
/// test process (the tests run in parallel and would fetch them at once).
fn library_dir() -> Result<PathBuf, String> {
    static DIR: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    DIR.get_or_init(|| {
        let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
        let script = root.join("scripts").join("ensure-cuda-libs.py");
        let out = Command::new("python3")
            .arg(&script)
            .arg("--curand")
            .output()
            .map_err(|e| format!("{}: {e}", script.display()))?;
        if !out.status.success() {
            return Err(format!(
                "{} --curand failed: {}",
                script.display(),
                String::from_utf8_lossy(&out.stderr)
            ));
        }
        Ok(PathBuf::from(String::from_utf8_lossy(&out.stdout).trim()))
    })
    .clone()
}

/// NVIDIA's library, or why it is not there.
fn load() -> Result<Curand, String> {
    let dir = library_dir()?;
    // SAFETY: NVIDIA's CUDA runtime and cuRAND, whose initialisers only set
    // up their own state. The runtime is loaded first so that cuRAND's
    // dependency on libcudart.so.13 resolves to it.
    let (cudart, curand) = unsafe {
        let cudart = Library::open(Some(dir.join("libcudart.so.13")), RTLD_NOW | RTLD_GLOBAL)
            .map_err(|e| e.to_string())?;
        let curand = Library::open(Some(dir.join("libcurand.so.10")), RTLD_NOW)
            .map_err(|e| e.to_string())?;
        (cudart, curand)
    };
    // SAFETY: the signatures are those of curand.h.
    unsafe {
        Ok(Curand {
            create_host: curand
                .get(b"curandCreateGeneratorHost")
                .map_err(|e| e.to_string())?,
            destroy: curand
                .get(b"curandDestroyGenerator")
                .map_err(|e| e.to_string())?,
            set_seed: curand
                .get(b"curandSetPseudoRandomGeneratorSeed")
                .map_err(|e| e.to_string())?,
            set_offset: curand
                .get(b"curandSetGeneratorOffset")
                .map_err(|e| e.to_string())?,
            set_ordering: curand
                .get(b"curandSetGeneratorOrdering")
                .map_err(|e| e.to_string())?,
            set_dimensions: curand
                .get(b"curandSetQuasiRandomGeneratorDimensions")
                .map_err(|e| e.to_string())?,
            generate: curand.get(b"curandGenerate").map_err(|e| e.to_string())?,
            generate_long_long: curand
                .get(b"curandGenerateLongLong")
                .map_err(|e| e.to_string())?,
            direction_vectors32: curand
                .get(b"curandGetDirectionVectors32")
                .map_err(|e| e.to_string())?,
            direction_vectors64: curand
                .get(b"curandGetDirectionVectors64")
                .map_err(|e| e.to_string())?,
            uniform: curand
                .get(b"curandGenerateUniform")
                .map_err(|e| e.to_string())?,
            uniform_double: curand
                .get(b"curandGenerateUniformDouble")
                .map_err(|e| e.to_string())?,
            normal: curand
                .get(b"curandGenerateNormal")
                .map_err(|e| e.to_string())?,
            normal_double: curand
                .get(b"curandGenerateNormalDouble")
                .map_err(|e| e.to_string())?,
            log_normal: curand
                .get(b"curandGenerateLogNormal")
                .map_err(|e| e.to_string())?,
            log_normal_double: curand
                .get(b"curandGenerateLogNormalDouble")
                .map_err(|e| e.to_string())?,
            poisson: curand
                .get(b"curandGeneratePoisson")
                .map_err(|e| e.to_string())?,
            _libs: (cudart, curand),
        })
    }
}

/// No device memory: every call here is a host generator's (`ptr` 0).
struct NoMemory;

impl DeviceMemory for NoMemory {
    fn read(&self, ptr: u64, len: u64) -> Result<&[u8], Fault> {
        Err(Fault { ptr, len })
    }
    fn write(&mut self, ptr: u64, data: &[u8]) -> Result<(), Fault> {
        Err(Fault {
            ptr,
            len: data.len() as u64,
        })
    }
}

const MEAN: f64 = 1.5;
const STDDEV: f64 = 2.0;
const LOG_MEAN: f64 = 0.25;
const LOG_STDDEV: f64 = 0.5;

/// One generator's settings and the calls made on it.
#[derive(Debug, Clone)]
struct Case {
    rng: u32,
    seed: u64,
    offset: u64,
    ordering: Option<i32>,
    dimensions: Option<u32>,
    calls: Vec<(Distribution, usize)>,
}

fn params(d: Distribution) -> (f64, f64) {
    match d {
        Distribution::LogNormal | Distribution::LogNormalDouble => (LOG_MEAN, LOG_STDDEV),
        _ => (MEAN, STDDEV),
    }
}

fn to_bytes<T: Copy>(v: &[T], size: usize) -> Vec<u8> {
    // SAFETY: plain numbers (u32, f32, f64) read as their bytes.
    unsafe { std::slice::from_raw_parts(v.as_ptr().cast::<u8>(), v.len() * size) }.to_vec()
}

/// What NVIDIA's host generator answers: the statuses of the settings,
/// then each call's status and bytes.
fn nvidia(lib: &Curand, case: &Case) -> (Vec<i32>, Vec<(i32, Vec<u8>)>) {
    let mut g: Gen = std::ptr::null_mut();
    // SAFETY: the library's own calls on a generator it created; every
    // output buffer holds the count passed.
    unsafe {
        assert_eq!((lib.create_host)(&mut g, case.rng as i32), 0, "{case:?}");
        let mut settings = Vec::new();
        if case.rng < 200 {
            settings.push((lib.set_seed)(g, case.seed));
        }
        settings.push((lib.set_offset)(g, case.offset));
        if let Some(o) = case.ordering {
            settings.push((lib.set_ordering)(g, o));
        }
        if let Some(d) = case.dimensions {
            settings.push((lib.set_dimensions)(g, d));
        }
        let out = case
            .calls
            .iter()
            .map(|&(d, n)| {
                let (mean, stddev) = params(d);
                match d {
                    Distribution::Bits => {
                        let mut v = vec![0u32; n];
                        ((lib.generate)(g, v.as_mut_ptr(), n), to_bytes(&v, 4))
                    }
                    Distribution::Poisson => {
                        let mut v = vec![0u32; n];
                        ((lib.poisson)(g, v.as_mut_ptr(), n, mean), to_bytes(&v, 4))
                    }
                    Distribution::LongLong => {
                        let mut v = vec![0u64; n];
                        (
                            (lib.generate_long_long)(g, v.as_mut_ptr(), n),
                            to_bytes(&v, 8),
                        )
                    }
                    Distribution::Uniform => {
                        let mut v = vec![0f32; n];
                        ((lib.uniform)(g, v.as_mut_ptr(), n), to_bytes(&v, 4))
                    }
                    Distribution::UniformDouble => {
                        let mut v = vec![0f64; n];
                        ((lib.uniform_double)(g, v.as_mut_ptr(), n), to_bytes(&v, 8))
                    }
                    Distribution::Normal => {
                        let mut v = vec![0f32; n];
                        let s = (lib.normal)(g, v.as_mut_ptr(), n, mean as f32, stddev as f32);
                        (s, to_bytes(&v, 4))
                    }
                    Distribution::LogNormal => {
                        let mut v = vec![0f32; n];
                        let s = (lib.log_normal)(g, v.as_mut_ptr(), n, mean as f32, stddev as f32);
                        (s, to_bytes(&v, 4))
                    }
                    Distribution::NormalDouble => {
                        let mut v = vec![0f64; n];
                        let s = (lib.normal_double)(g, v.as_mut_ptr(), n, mean, stddev);
                        (s, to_bytes(&v, 8))
                    }
                    Distribution::LogNormalDouble => {
                        let mut v = vec![0f64; n];
                        let s = (lib.log_normal_double)(g, v.as_mut_ptr(), n, mean, stddev);
                        (s, to_bytes(&v, 8))
                    }
                }
            })
            .collect();
        assert_eq!((lib.destroy)(g), 0);
        (settings, out)
    }
}

/// What rcud's server answers for the same calls.
fn rcud(case: &Case) -> (Vec<i32>, Vec<(i32, Vec<u8>)>) {
    let mut state = State::default();
    let mut memory = NoMemory;
    let mut call = |c: Call| {
        state
            .call(&mut memory, c)
            .expect("host calls touch no memory")
    };
    let created = call(Call::Create { rng_type: case.rng });
    assert_eq!(created.status, 0, "rcud cannot create {case:?}");
    let generator = u64::from_le_bytes(created.out.try_into().expect("an id"));
    let mut settings = Vec::new();
    if case.rng < 200 {
        settings.push(
            call(Call::SetSeed {
                generator,
                seed: case.seed,
            })
            .status,
        );
    }
    settings.push(
        call(Call::SetOffset {
            generator,
            offset: case.offset,
        })
        .status,
    );
    if let Some(ordering) = case.ordering {
        settings.push(
            call(Call::SetOrdering {
                generator,
                ordering: ordering as u32,
            })
            .status,
        );
    }
    if let Some(dimensions) = case.dimensions {
        settings.push(
            call(Call::SetDimensions {
                generator,
                dimensions,
            })
            .status,
        );
    }
    let out = case
        .calls
        .iter()
        .map(|&(d, n)| {
            let (mean, stddev) = params(d);
            // In requests of at most MAX_HOST_BYTES, as the client sends them.
            let chunk = (MAX_HOST_BYTES / 8) as usize;
            let mut bytes = Vec::new();
            for start in (0..n).step_by(chunk) {
                let reply = call(Call::Generate {
                    generator,
                    distribution: d as u32,
                    ptr: 0,
                    n: chunk.min(n - start) as u64,
                    mean,
                    stddev,
                });
                if reply.status != 0 {
                    return (reply.status, Vec::new());
                }
                assert!(
                    case.dimensions.is_none() || n <= chunk,
                    "a quasi-random call in several requests is laid out per request"
                );
                bytes.extend(reply.out);
            }
            (0, bytes)
        })
        .collect();
    (settings, out)
}

const ALL: [Distribution; 7] = [
    Distribution::Bits,
    Distribution::Uniform,
    Distribution::UniformDouble,
    Distribution::Normal,
    Distribution::NormalDouble,
    Distribution::LogNormal,
    Distribution::LogNormalDouble,
];

/// How far a value of `d` may be from NVIDIA's, as `(absolute, relative)`.
///
/// Integers and uniforms must be bit for bit (the same integer arithmetic
/// and one correctly rounded multiply-add). Normals and log-normals go
/// through `logf`/`sinf`/`cosf`/`expf` (or their double versions), whose
/// last bits differ between NVIDIA's math library and Rust's libm:
/// single-precision Box–Muller values are within a few ulps of the
/// standard normal (times `stddev` = 2, so 1e-5 absolute), log-normals
/// within a few ulps relative. Double-precision values were bit for bit
/// in every case measured for the Box–Muller generators; the inverse-CDF
/// normals (MTGP32) go through `erfcinv`, whose last bit differs in about
/// 0.5 % of the values. Doubles are allowed 1e-14 relative, and 1e-14
/// absolute for values near zero, where `mean + stddev·z` cancels.
fn tolerance(d: Distribution) -> Option<(f64, f64)> {
    match d {
        Distribution::Bits
        | Distribution::LongLong
        | Distribution::Poisson
        | Distribution::Uniform
        | Distribution::UniformDouble => None,
        Distribution::Normal => Some((1e-5, 0.0)),
        Distribution::LogNormal => Some((0.0, 1e-6)),
        Distribution::NormalDouble | Distribution::LogNormalDouble => Some((1e-14, 1e-14)),
    }
}

/// The values of one call as numbers (integers exactly, as f64).
fn values(d: Distribution, bytes: &[u8]) -> Vec<f64> {
    match d.value_size() {
        4 => bytes
            .chunks_exact(4)
            .map(|c| {
                let w = u32::from_le_bytes(c.try_into().expect("4 bytes"));
                match d {
                    Distribution::Bits | Distribution::Poisson => f64::from(w),
                    _ => f64::from(f32::from_bits(w)),
                }
            })
            .collect(),
        _ => bytes
            .chunks_exact(8)
            .map(|c| f64::from_le_bytes(c.try_into().expect("8 bytes")))
            .collect(),
    }
}

/// Runs `case` on both libraries; answers its mismatches, and counts the
/// values that are not bit for bit (within the tolerance) in `inexact`.
fn compare(lib: &Curand, case: &Case, inexact: &mut [usize; 8]) -> Vec<String> {
    let (want_settings, want) = nvidia(lib, case);
    let (got_settings, got) = rcud(case);
    let mut errors = Vec::new();
    if got_settings != want_settings {
        errors.push(format!(
            "{case:?}: settings answer {got_settings:?}, NVIDIA's {want_settings:?}"
        ));
    }
    for (k, ((&(d, n), (s1, a)), (s2, b))) in case.calls.iter().zip(&want).zip(&got).enumerate() {
        if s1 != s2 {
            errors.push(format!("{case:?} call {k}: status {s2}, NVIDIA's {s1}"));
            continue;
        }
        if *s1 != 0 {
            continue;
        }
        if a.len() != b.len() || a.len() != n * d.value_size() as usize {
            errors.push(format!(
                "{case:?} call {k}: {} bytes, NVIDIA's {}",
                b.len(),
                a.len()
            ));
            continue;
        }
        let (x, y) = (values(d, a), values(d, b));
        for (i, (&x, &y)) in x.iter().zip(&y).enumerate() {
            if x.to_bits() == y.to_bits() {
                continue;
            }
            let within =
                tolerance(d).is_some_and(|(abs, rel)| (x - y).abs() <= abs.max(rel * x.abs()));
            if within {
                inexact[d as usize] += 1;
            } else {
                errors.push(format!("{case:?} call {k} value {i}: {y}, NVIDIA's {x}"));
                break;
            }
        }
    }
    errors
}

/// NVIDIA's library, or `None` (the test is skipped) when it cannot be
/// had and `RCUD_REQUIRE_CUDA` does not require it.
fn library() -> Option<Curand> {
    match load() {
        Ok(lib) => Some(lib),
        Err(e) if std::env::var_os("RCUD_REQUIRE_CUDA").is_some_and(|v| v == "1") => {
            panic!("NVIDIA's cuRAND is required (RCUD_REQUIRE_CUDA=1): {e}")
        }
        Err(e) => {
            eprintln!("skipped: NVIDIA's cuRAND is not available: {e}");
            None
        }
    }
}

/// Runs every case, reports the values within tolerance, fails on any
/// mismatch.
fn check(lib: &Curand, cases: &[Case]) {
    let mut inexact = [0usize; 8];
    let mut total = [0usize; 8];
    let mut errors = Vec::new();
    for case in cases {
        for &(d, n) in &case.calls {
            total[d as usize] += n;
        }
        errors.extend(compare(lib, case, &mut inexact));
    }
    for d in ALL.into_iter().chain([Distribution::LongLong]) {
        if total[d as usize] > 0 {
            eprintln!(
                "{d:?}: {} values, {} not bit for bit (within tolerance)",
                total[d as usize], inexact[d as usize]
            );
        }
    }
    assert!(
        errors.is_empty(),
        "{} mismatches:\n{}",
        errors.len(),
        errors.join("\n")
    );
}

/// For each pseudo-random type: every distribution with several seeds,
/// offsets and orderings, two calls of sizes that are not multiples of the
/// stream count (odd for the non-pairwise distributions), the second
/// continuing the first.
fn pseudo_cases(rng: u32, orderings: &[Option<i32>], sizes: [usize; 2]) -> Vec<Case> {
    cases_with_odd(rng, orderings, sizes, |d| !d.is_pairwise())
}

/// [`pseudo_cases`], with the sizes made odd for the distributions `odd`
/// selects.
fn cases_with_odd(
    rng: u32,
    orderings: &[Option<i32>],
    sizes: [usize; 2],
    odd: impl Fn(Distribution) -> bool,
) -> Vec<Case> {
    let mut cases = Vec::new();
    for &ordering in orderings {
        for d in ALL {
            for (seed, offset) in [
                (0, 0),
                (1234, 0),
                (0x1234_5678_9abc_def0, 4099),
                (42, 100_003),
                (7, 262_141),
            ] {
                let odd = usize::from(odd(d));
                cases.push(Case {
                    rng,
                    seed,
                    offset,
                    ordering,
                    dimensions: None,
                    calls: vec![(d, sizes[0] + odd), (d, sizes[1] + odd)],
                });
            }
        }
    }
    cases
}

const BEST: Option<i32> = Some(100);
const DEFAULT: Option<i32> = Some(101);
const LEGACY: Option<i32> = Some(103);

#[test]
fn xorwow_matches_nvidia() {
    let Some(lib) = library() else { return };
    check(
        &lib,
        &pseudo_cases(101, &[None, BEST, DEFAULT, LEGACY], [5000, 4096 * 3 + 2]),
    );
    // CURAND_RNG_PSEUDO_DEFAULT is XORWOW.
    check(&lib, &pseudo_cases(100, &[None], [6, 10]));
}

#[test]
fn philox_matches_nvidia() {
    let Some(lib) = library() else { return };
    check(
        &lib,
        &pseudo_cases(161, &[None, BEST, LEGACY], [5000, 4096 * 3 + 2]),
    );
}

#[test]
fn mrg32k3a_matches_nvidia() {
    let Some(lib) = library() else { return };
    // 81920 streams: the second call wraps round to their second values.
    check(&lib, &pseudo_cases(121, &[None], [5000, 81920]));
    // The legacy order has 4096 streams.
    check(&lib, &pseudo_cases(121, &[LEGACY], [5000, 4096 * 3 + 2]));
}

/// MTGP32: 192 blocks of 256 values (64 in the legacy order), every
/// distribution one word per value (normals by the inverse CDF, so odd
/// counts of them too); the offsets of the cases are refused
/// (`TYPE_ERROR`) by both. The second call wraps round the blocks to their
/// second runs (third, in the legacy order).
#[test]
fn mtgp32_matches_nvidia() {
    let Some(lib) = library() else { return };
    check(
        &lib,
        &cases_with_odd(
            141,
            &[None, BEST, DEFAULT, LEGACY],
            [5001, 192 * 256 + 4097],
            |_| true,
        ),
    );
}

/// Sobol32 (201) and Sobol64 (203): every distribution (32-bit words for
/// Sobol32, 64-bit for Sobol64, and the other's refused with `TYPE_ERROR`),
/// 1, 3, 7 and 20,000 dimensions, offsets, two successive calls of whole
/// points (odd counts of points), and a count that is not whole points
/// (`LENGTH_NOT_MULTIPLE`).
#[test]
fn sobol_matches_nvidia() {
    let Some(lib) = library() else { return };
    let mut cases = Vec::new();
    for rng in [201, 203] {
        let words = if rng == 201 {
            Distribution::Bits
        } else {
            Distribution::LongLong
        };
        let refused = if rng == 201 {
            Distribution::LongLong
        } else {
            Distribution::Bits
        };
        for d in ALL
            .into_iter()
            .filter(|&d| d != Distribution::Bits)
            .chain([words, refused])
        {
            for (dimensions, offset, points) in [
                (1, 0, [1001, 3333]),
                (1, 123_457, [7, 65_535]),
                (3, 5, [517, 1001]),
                (7, 1000, [33, 4097]),
                (20_000, 9, [1, 3]),
            ] {
                cases.push(Case {
                    rng,
                    seed: 0,
                    offset,
                    ordering: Some(201),
                    dimensions: Some(dimensions),
                    calls: vec![
                        (d, points[0] * dimensions as usize),
                        (d, points[1] * dimensions as usize),
                        (d, points[0] * dimensions as usize + 1),
                    ],
                });
            }
        }
    }
    check(&lib, &cases);
}

/// The direction vectors of all 20,000 dimensions, 32 and 64 bits, against
/// `curandGetDirectionVectors32/64` of NVIDIA's library.
#[test]
fn sobol_direction_vectors_match_nvidia() {
    let Some(lib) = library() else { return };
    let mut v32: *const [u32; 32] = std::ptr::null();
    let mut v64: *const [u64; 64] = std::ptr::null();
    // SAFETY: NVIDIA's calls answer pointers to its tables of 20,000
    // dimensions (CURAND_DIRECTION_VECTORS_32/64_JOEKUO6).
    let (nv32, nv64) = unsafe {
        assert_eq!((lib.direction_vectors32)(&mut v32, 101), 0);
        assert_eq!((lib.direction_vectors64)(&mut v64, 103), 0);
        (
            std::slice::from_raw_parts(v32, 20_000),
            std::slice::from_raw_parts(v64, 20_000),
        )
    };
    for dimension in 0..20_000u32 {
        let ours32 = rcud_math::rand::sobol::direction_vectors::<32>(dimension);
        let ours64 = rcud_math::rand::sobol::direction_vectors::<64>(dimension);
        let d = dimension as usize;
        assert!(
            ours32
                .iter()
                .zip(&nv32[d])
                .all(|(&a, &b)| a == u64::from(b)),
            "dimension {dimension}: 32-bit vectors differ"
        );
        assert_eq!(
            ours64, nv64[d],
            "dimension {dimension}: 64-bit vectors differ"
        );
    }
}

/// MT19937: NVIDIA's first value is the reference sequence's (`std::mt19937`
/// of the seed), and rcud's settings answer as NVIDIA's (no offset:
/// `TYPE_ERROR`). NVIDIA's later values interleave parallel streams that
/// its host library jumps ahead to (about 6 s per generator on this CPU);
/// rcud gives the single reference sequence, so only the first value is
/// compared (a known difference, docs/math/rand.md).
#[test]
fn mt19937_starts_as_nvidia() {
    let Some(lib) = library() else { return };
    for seed in [0, 5489] {
        let case = Case {
            rng: 142,
            seed,
            offset: 7,
            ordering: LEGACY,
            dimensions: None,
            calls: vec![(Distribution::Bits, 1)],
        };
        let (want_settings, want) = nvidia(&lib, &case);
        let (got_settings, got) = rcud(&case);
        assert_eq!(got_settings, want_settings, "{case:?}");
        assert_eq!(got, want, "{case:?}");
    }
}

/// What `curandSetGeneratorOrdering` answers for every type and ordering.
#[test]
fn orderings_answer_as_nvidia() {
    let Some(lib) = library() else { return };
    let mut state = State::default();
    let mut memory = NoMemory;
    for rng in [100, 101, 121, 141, 142, 161, 201, 203] {
        let created = state
            .call(&mut memory, Call::Create { rng_type: rng })
            .expect("create");
        let generator = u64::from_le_bytes(created.out.try_into().expect("an id"));
        for ordering in [0, 99, 100, 101, 102, 103, 104, 105, 200, 201] {
            let mut g: Gen = std::ptr::null_mut();
            // SAFETY: NVIDIA's calls on a generator it created.
            let want = unsafe {
                assert_eq!((lib.create_host)(&mut g, rng as i32), 0);
                let status = (lib.set_ordering)(g, ordering);
                (lib.destroy)(g);
                status
            };
            let got = state
                .call(
                    &mut memory,
                    Call::SetOrdering {
                        generator,
                        ordering: ordering as u32,
                    },
                )
                .expect("ordering")
                .status;
            assert_eq!(got, want, "type {rng} ordering {ordering}");
        }
    }
}

/// `curandGeneratePoisson`'s values and statuses from NVIDIA's host
/// generator `rng` (seed, offset, then each lambda in turn on one
/// generator, `n` values each).
fn nvidia_poisson(
    lib: &Curand,
    rng: u32,
    offset: u64,
    calls: &[(f64, usize)],
) -> Vec<(i32, Vec<u32>)> {
    let mut g: Gen = std::ptr::null_mut();
    // SAFETY: the library's own calls on a generator it created; every
    // output buffer holds the count passed.
    unsafe {
        assert_eq!((lib.create_host)(&mut g, rng as i32), 0);
        if rng < 200 {
            assert_eq!((lib.set_seed)(g, 1234), 0);
        }
        if offset > 0 {
            assert_eq!((lib.set_offset)(g, offset), 0);
        }
        let out = calls
            .iter()
            .map(|&(lambda, n)| {
                let mut v = vec![0u32; n];
                ((lib.poisson)(g, v.as_mut_ptr(), n, lambda), v)
            })
            .collect();
        assert_eq!((lib.destroy)(g), 0);
        out
    }
}

/// The same calls on rcud's server code.
fn rcud_poisson(rng: u32, offset: u64, calls: &[(f64, usize)]) -> Vec<(i32, Vec<u32>)> {
    let mut state = State::default();
    let mut memory = NoMemory;
    let created = state
        .call(&mut memory, Call::Create { rng_type: rng })
        .expect("create");
    let generator = u64::from_le_bytes(created.out.try_into().expect("an id"));
    if rng < 200 {
        let r = state.call(
            &mut memory,
            Call::SetSeed {
                generator,
                seed: 1234,
            },
        );
        assert_eq!(r.expect("seed").status, 0);
    }
    if offset > 0 {
        let r = state.call(&mut memory, Call::SetOffset { generator, offset });
        assert_eq!(r.expect("offset").status, 0);
    }
    calls
        .iter()
        .map(|&(lambda, n)| {
            let mut values = Vec::new();
            let mut status = 0;
            // As the client does: requests of at most MAX_HOST_BYTES.
            let mut left = n as u64;
            while left > 0 && status == 0 {
                let chunk = left.min(MAX_HOST_BYTES / 4);
                let reply = state
                    .call(
                        &mut memory,
                        Call::Generate {
                            generator,
                            distribution: Distribution::Poisson as u32,
                            ptr: 0,
                            n: chunk,
                            mean: lambda,
                            stddev: 0.0,
                        },
                    )
                    .expect("generate");
                status = reply.status;
                values.extend(
                    reply
                        .out
                        .chunks_exact(4)
                        .map(|c| u32::from_le_bytes(c.try_into().expect("4 bytes"))),
                );
                left -= chunk;
            }
            if status != 0 {
                values = vec![0; n];
            }
            (status, values)
        })
        .collect()
}

/// `curandGeneratePoisson` bit for bit where rcud reproduces NVIDIA's
/// method: MTGP32 from lambda 40 and Sobol32/Sobol64 from lambda 10 (each
/// value from one word: the inverse transform up to lambda 8000, the
/// normal approximation above), two calls on one generator, odd counts,
/// Sobol with an offset (its point 0, word 0, is the one value that differs
/// at these lambdas). Lambda outside (0, 400000] is OUT_OF_RANGE on every
/// type, as NVIDIA answers.
#[test]
fn poisson_matches_nvidia() {
    let Some(lib) = library() else { return };
    let mut checked = 0;
    for (rng, offset, lambdas) in [
        (
            141,
            0,
            vec![40.0, 64.0, 499.5, 999.99, 1000.0, 5000.0, 400_000.0],
        ),
        (201, 1, vec![10.0, 50.0, 777.25, 1000.0, 123_456.5]),
        (
            203,
            3,
            vec![10.0, 64.0, 999.0, 1999.5, 2000.0, 4000.5, 400_000.0],
        ),
    ] {
        for &lambda in &lambdas {
            let calls = [(lambda, 4097), (lambda, 192 * 256 + 3)];
            let want = nvidia_poisson(&lib, rng, offset, &calls);
            let got = rcud_poisson(rng, offset, &calls);
            for (call, ((ws, wv), (gs, gv))) in want.iter().zip(&got).enumerate() {
                assert_eq!(
                    (gs, gv.len()),
                    (ws, wv.len()),
                    "type {rng} lambda {lambda} call {call}"
                );
                let differ: Vec<_> = wv
                    .iter()
                    .zip(gv)
                    .enumerate()
                    .filter(|(_, (a, b))| a != b)
                    .take(5)
                    .collect();
                assert!(
                    differ.is_empty(),
                    "type {rng} lambda {lambda} call {call}: (index, (NVIDIA, rcud)) {differ:?}"
                );
                checked += wv.len();
            }
        }
    }
    for rng in [101, 121, 141, 142, 161, 201, 203] {
        for lambda in [0.0, -1.0, f64::INFINITY, 400_000.000_000_1, 1e6] {
            let want = nvidia_poisson(&lib, rng, 0, &[(lambda, 5)]);
            let got = rcud_poisson(rng, 0, &[(lambda, 5)]);
            assert_eq!(got[0].0, want[0].0, "type {rng} lambda {lambda}");
        }
    }
    eprintln!("Poisson: {checked} values bit for bit");
}
