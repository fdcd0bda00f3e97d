//! cuRAND on the cuda backend, with the fake driver and `fake_libcurand.c`.

use super::*;

use rcud_proto::math::rand::{Call as RandCall, Distribution};

/// `fake_libcurand.c` built for `test`: (library, log).
fn fake_curand(test: &str) -> Option<(PathBuf, PathBuf)> {
    fake_math_library(test, "fake_libcurand.c", "libcurand.so.10")
}

/// The fake driver with the fake cuRAND: (backend, log).
fn fake_rand_backend(test: &str) -> Option<(CudaBackend, PathBuf)> {
    let backend = fake_backend(test)?;
    let (lib, log) = fake_curand(test)?;
    Some((backend.with_rand_libraries(vec![lib.into()]), log))
}

fn rand(ctx: &mut dyn DeviceContext, call: RandCall) -> Result<rcud_math::Reply, Failure> {
    ctx.math_call(4, &rcud_proto::codec::to_vec(&call))
}

/// A new generator of `rng_type` (its wire id).
fn generator(ctx: &mut dyn DeviceContext, rng_type: u32) -> u64 {
    let reply = rand(ctx, RandCall::Create { rng_type }).unwrap();
    assert_eq!(reply.status, 0);
    u64::from_le_bytes(reply.out.try_into().unwrap())
}

fn generate(g: u64, d: Distribution, ptr: u64, n: u64, mean: f64, stddev: f64) -> RandCall {
    RandCall::Generate {
        generator: g,
        distribution: d as u32,
        ptr,
        n,
        mean,
        stddev,
    }
}

/// Status of a call that must reach no failure.
fn rand_status(ctx: &mut dyn DeviceContext, call: RandCall) -> i32 {
    rand(ctx, call).unwrap().status
}

fn u32s(bytes: &[u8]) -> Vec<u32> {
    bytes
        .chunks_exact(4)
        .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}

fn f64s(bytes: &[u8]) -> Vec<f64> {
    bytes
        .chunks_exact(8)
        .map(|c| f64::from_le_bytes(c.try_into().unwrap()))
        .collect()
}

/// The log lines of calls after the first `skip`, by function name.
fn calls_after(log: &PathBuf, skip: usize) -> Vec<String> {
    log_lines(log)
        .iter()
        .skip(skip)
        .filter_map(|l| l.split_whitespace().next().map(str::to_string))
        .collect()
}

/// `key=value` of a log line.
fn field<'a>(line: &'a str, key: &str) -> &'a str {
    line.split_whitespace()
        .find_map(|w| w.strip_prefix(key)?.strip_prefix('='))
        .unwrap_or_default()
}

#[test]
fn fake_curand_generators_run_on_the_contexts_stream() {
    let test = "fake_curand_generators_run_on_the_contexts_stream";
    let Some((b, log)) = fake_rand_backend(test) else {
        return;
    };
    let mut ctx = b.open(0, 0).unwrap();
    let ctx = ctx.as_mut();
    let g = generator(ctx, rcud_math::rand::RNG_XORWOW);
    for call in [
        RandCall::SetSeed {
            generator: g,
            seed: 1000,
        },
        RandCall::SetOffset {
            generator: g,
            offset: 20,
        },
        RandCall::SetOrdering {
            generator: g,
            ordering: 101,
        },
    ] {
        assert_eq!(rand_status(ctx, call), 0);
    }
    // Words seed + offset + position, just inside the allocation's end.
    let buf = ctx.malloc(64).unwrap();
    put(ctx, buf, &[0xee; 64]);
    let call = generate(g, Distribution::Bits, buf + 48, 4, 0.0, 1.0);
    assert_eq!(rand(ctx, call).unwrap(), rcud_math::Reply::ok(Vec::new()));
    let got = read_back(ctx, buf, 64);
    assert_eq!(&got[..48], &[0xee; 48]);
    assert_eq!(u32s(&got[48..]), [1020, 1021, 1022, 1023]);

    // Every distribution of a pseudo-random generator, each value where
    // the fake puts it: uniform (w & 0xffff + 1) / 2^16, normal mean +
    // stddev (w mod 7 - 3), log-normal its exponential.
    let u = |w: u32| f64::from((w & 0xffff) + 1) / 65536.0;
    let z = |w: u32, m: f64, s: f64| m + s * f64::from(w % 7) - 3.0 * s;
    let call = generate(g, Distribution::Uniform, buf, 2, 0.0, 1.0);
    assert_eq!(rand_status(ctx, call), 0);
    assert_eq!(read_f32s(ctx, buf, 2), [u(1024) as f32, u(1025) as f32]);
    let call = generate(g, Distribution::UniformDouble, buf, 2, 0.0, 1.0);
    assert_eq!(rand_status(ctx, call), 0);
    assert_eq!(f64s(&read_back(ctx, buf, 16)), [u(1026), u(1027)]);
    let call = generate(g, Distribution::Normal, buf, 2, 1.5, 2.0);
    assert_eq!(rand_status(ctx, call), 0);
    let want = [z(1028, 1.5, 2.0) as f32, z(1029, 1.5, 2.0) as f32];
    assert_eq!(read_f32s(ctx, buf, 2), want);
    let call = generate(g, Distribution::NormalDouble, buf, 2, -1.0, 0.5);
    assert_eq!(rand_status(ctx, call), 0);
    let want = [z(1030, -1.0, 0.5), z(1031, -1.0, 0.5)];
    assert_eq!(f64s(&read_back(ctx, buf, 16)), want);
    let call = generate(g, Distribution::LogNormal, buf, 2, 0.0, 1.0);
    assert_eq!(rand_status(ctx, call), 0);
    let want = [
        z(1032, 0.0, 1.0).exp() as f32,
        z(1033, 0.0, 1.0).exp() as f32,
    ];
    assert_eq!(read_f32s(ctx, buf, 2), want);
    let call = generate(g, Distribution::LogNormalDouble, buf, 2, 0.0, 1.0);
    assert_eq!(rand_status(ctx, call), 0);
    let want = [z(1034, 0.0, 1.0).exp(), z(1035, 0.0, 1.0).exp()];
    assert_eq!(f64s(&read_back(ctx, buf, 16)), want);

    // 64-bit words of a Sobol64 generator of 2 dimensions.
    let q = generator(ctx, rcud_math::rand::RNG_SOBOL64);
    let call = RandCall::SetDimensions {
        generator: q,
        dimensions: 2,
    };
    assert_eq!(rand_status(ctx, call), 0);
    let call = generate(q, Distribution::LongLong, buf, 4, 0.0, 1.0);
    assert_eq!(rand_status(ctx, call), 0);
    let words: Vec<u64> = read_back(ctx, buf, 32)
        .chunks_exact(8)
        .map(|c| u64::from_le_bytes(c.try_into().unwrap()))
        .collect();
    assert_eq!(words, [0, 1 << 32, 2 << 32, 3 << 32]);

    // Every call reached the library on the context's one stream, set once
    // per generator.
    let lines = log_lines(&log);
    let names: Vec<&str> = lines.iter().filter_map(|l| l.split(' ').next()).collect();
    assert_eq!(
        names,
        [
            "curandCreateGenerator",
            "curandSetStream",
            "curandSetPseudoRandomGeneratorSeed",
            "curandSetGeneratorOffset",
            "curandSetGeneratorOrdering",
            "curandGenerate",
            "curandGenerateUniform",
            "curandGenerateUniformDouble",
            "curandGenerateNormal",
            "curandGenerateNormalDouble",
            "curandGenerateLogNormal",
            "curandGenerateLogNormalDouble",
            "curandCreateGenerator",
            "curandSetStream",
            "curandSetQuasiRandomGeneratorDimensions",
            "curandGenerateLongLong",
        ]
    );
    let stream = field(&lines[1], "stream");
    assert!(stream != "(nil)" && stream != "0x0", "{lines:?}");
    // (A generator is created before its stream is set.)
    for l in lines
        .iter()
        .filter(|l| !l.starts_with("curandCreateGenerator"))
    {
        assert_eq!(field(l, "stream"), stream, "{l}");
    }
    assert_eq!(field(&lines[5], "n"), "4");
    assert_eq!(field(&lines[0], "type"), "101");
    assert_eq!(field(&lines[12], "type"), "203");
}

#[test]
fn fake_curand_bad_requests_are_refused_before_the_library() {
    use rcud_math::rand::{LENGTH_NOT_MULTIPLE, NOT_INITIALIZED, TYPE_ERROR};
    let test = "fake_curand_bad_requests_are_refused_before_the_library";
    let Some((b, log)) = fake_rand_backend(test) else {
        return;
    };
    let mut ctx = b.open(0, 0).unwrap();
    let mut other = b.open(0, 0).unwrap();
    let foreign = other.malloc(64).unwrap();
    let ctx = ctx.as_mut();
    let g = generator(ctx, rcud_math::rand::RNG_PHILOX);
    let buf = ctx.malloc(64).unwrap();
    put(ctx, buf, &[0; 64]);
    let before = log_lines(&log).len();
    let illegal = |r: Result<rcud_math::Reply, Failure>| {
        let f = r.unwrap_err();
        assert_eq!(f.code, CudaError::ILLEGAL_ADDRESS, "{f}");
    };
    // Past the end, by one value; another client's memory; no memory.
    illegal(rand(
        ctx,
        generate(g, Distribution::Bits, buf + 4, 16, 0.0, 1.0),
    ));
    illegal(rand(
        ctx,
        generate(g, Distribution::NormalDouble, buf, 10, 0.0, 1.0),
    ));
    illegal(rand(
        ctx,
        generate(g, Distribution::Uniform, foreign, 4, 0.0, 1.0),
    ));
    illegal(rand(
        ctx,
        generate(g, Distribution::Uniform, 0x10, 4, 0.0, 1.0),
    ));
    // A count whose bytes overflow: CURAND_STATUS_OUT_OF_RANGE.
    let call = generate(g, Distribution::UniformDouble, buf, u64::MAX / 4, 0.0, 1.0);
    assert_eq!(rand_status(ctx, call), rcud_math::rand::OUT_OF_RANGE);
    // Statuses answered as rcud_math answers them, before the range: odd
    // normals of a Box–Muller generator, 64-bit words of a 32-bit one, an
    // unknown distribution.
    let call = generate(g, Distribution::Normal, 0x10, 3, 0.0, 1.0);
    assert_eq!(rand_status(ctx, call), LENGTH_NOT_MULTIPLE);
    let call = generate(g, Distribution::LongLong, buf, 2, 0.0, 1.0);
    assert_eq!(rand_status(ctx, call), TYPE_ERROR);
    let call = RandCall::Generate {
        generator: g,
        distribution: 99,
        ptr: buf,
        n: 2,
        mean: 0.0,
        stddev: 1.0,
    };
    assert_eq!(rand_status(ctx, call), TYPE_ERROR);
    // Unknown and destroyed generators: CURAND_STATUS_NOT_INITIALIZED.
    let call = generate(g + 100, Distribution::Bits, buf, 4, 0.0, 1.0);
    assert_eq!(rand_status(ctx, call), NOT_INITIALIZED);
    let call = RandCall::SetSeed {
        generator: g + 100,
        seed: 1,
    };
    assert_eq!(rand_status(ctx, call), NOT_INITIALIZED);
    assert_eq!(calls_after(&log, before), Vec::<String>::new());

    let destroyed = generator(ctx, rcud_math::rand::RNG_XORWOW);
    assert_eq!(
        rand_status(
            ctx,
            RandCall::Destroy {
                generator: destroyed
            }
        ),
        0
    );
    let before = log_lines(&log).len();
    let call = generate(destroyed, Distribution::Bits, buf, 4, 0.0, 1.0);
    assert_eq!(rand_status(ctx, call), NOT_INITIALIZED);
    let call = RandCall::Destroy {
        generator: destroyed,
    };
    assert_eq!(rand_status(ctx, call), NOT_INITIALIZED);
    assert_eq!(calls_after(&log, before), Vec::<String>::new());

    // Settings the library refuses answer its status (seeds of a
    // quasi-random generator, an ordering of another kind).
    let q = generator(ctx, rcud_math::rand::RNG_SOBOL32);
    let before = log_lines(&log).len();
    let call = RandCall::SetSeed {
        generator: q,
        seed: 5,
    };
    assert_eq!(rand_status(ctx, call), TYPE_ERROR);
    let call = RandCall::SetOrdering {
        generator: q,
        ordering: 101,
    };
    assert_eq!(rand_status(ctx, call), rcud_math::rand::OUT_OF_RANGE);
    assert_eq!(
        calls_after(&log, before),
        [
            "curandSetPseudoRandomGeneratorSeed",
            "curandSetGeneratorOrdering"
        ]
    );
    // The generators still work, and nothing was written by the refusals.
    assert_eq!(read_back(ctx, buf, 64), vec![0; 64]);
    let call = generate(g, Distribution::Bits, buf, 16, 0.0, 1.0);
    assert_eq!(rand_status(ctx, call), 0);
    assert_eq!(
        u32s(&read_back(ctx, buf, 64)),
        (0..16).collect::<Vec<u32>>()
    );
}

#[test]
fn fake_curand_host_generators_answer_through_a_server_buffer() {
    use rcud_math::rand::{
        LENGTH_NOT_MULTIPLE, OUT_OF_RANGE, RNG_MT19937, RNG_SCRAMBLED_SOBOL32, RNG_XORWOW,
    };
    let test = "fake_curand_host_generators_answer_through_a_server_buffer";
    let Some((b, log)) = fake_rand_backend(test) else {
        return;
    };
    let mut ctx = b.open(0, 0).unwrap();
    let ctx = ctx.as_mut();
    // NVIDIA's host generators, answering in the reply through a buffer of
    // the server's own: MT19937 (rcud's CPU generator matches NVIDIA's
    // first value only).
    let host_generator = |ctx: &mut dyn DeviceContext, rng_type| {
        let reply = rand(ctx, RandCall::CreateHost { rng_type }).unwrap();
        assert_eq!(reply.status, 0);
        u64::from_le_bytes(reply.out.try_into().unwrap())
    };
    let g = host_generator(ctx, RNG_MT19937);
    let call = RandCall::SetSeed {
        generator: g,
        seed: 77,
    };
    assert_eq!(rand_status(ctx, call), 0);
    let held = ctx.memory_held();
    let reply = rand(ctx, generate(g, Distribution::Bits, 0, 4, 0.0, 1.0)).unwrap();
    assert_eq!(reply.status, 0);
    assert_eq!(u32s(&reply.out), [77, 78, 79, 80]);
    let reply = rand(ctx, generate(g, Distribution::NormalDouble, 0, 2, 1.0, 0.5)).unwrap();
    // Words 81 and 82: mean + stddev (w mod 7 - 3).
    assert_eq!(f64s(&reply.out), [1.0 + 0.5 * 1.0, 1.0 + 0.5 * 2.0]);
    assert_eq!(ctx.memory_held(), held);
    let lines = log_lines(&log);
    let generated: Vec<&String> = lines
        .iter()
        .filter(|l| l.starts_with("curandGenerate"))
        .collect();
    assert_eq!(generated.len(), 2, "{lines:?}");
    assert!(
        lines[0].starts_with("curandCreateGeneratorHost"),
        "{lines:?}"
    );
    // Statuses before the library: odd normals, more than one answer holds.
    let before = log_lines(&log).len();
    let call = generate(g, Distribution::Normal, 0, 3, 0.0, 1.0);
    assert_eq!(rand_status(ctx, call), LENGTH_NOT_MULTIPLE);
    let call = generate(g, Distribution::Bits, 0, (1 << 19) / 4 + 1, 0.0, 1.0);
    assert_eq!(rand_status(ctx, call), OUT_OF_RANGE);
    assert_eq!(calls_after(&log, before), Vec::<String>::new());

    // XORWOW, with an offset and two calls continuing one sequence.
    let x = host_generator(ctx, RNG_XORWOW);
    let call = RandCall::SetOffset {
        generator: x,
        offset: 10,
    };
    assert_eq!(rand_status(ctx, call), 0);
    let reply = rand(ctx, generate(x, Distribution::Bits, 0, 3, 0.0, 1.0)).unwrap();
    assert_eq!(u32s(&reply.out), [10, 11, 12]);
    let reply = rand(ctx, generate(x, Distribution::Uniform, 0, 1, 0.0, 1.0)).unwrap();
    assert_eq!(reply.out, (14.0f32 / 65536.0).to_le_bytes());

    // Scrambled Sobol (rcud cannot compute it: NVIDIA's constants are
    // unpublished): a device and a host generator.
    let s = generator(ctx, RNG_SCRAMBLED_SOBOL32);
    let buf = ctx.malloc(16).unwrap();
    let call = generate(s, Distribution::Bits, buf, 4, 0.0, 1.0);
    assert_eq!(rand_status(ctx, call), 0);
    assert_eq!(u32s(&read_back(ctx, buf, 16)), [0, 1, 2, 3]);
    let h = host_generator(ctx, RNG_SCRAMBLED_SOBOL32);
    let reply = rand(ctx, generate(h, Distribution::Bits, 0, 4, 0.0, 1.0)).unwrap();
    assert_eq!(u32s(&reply.out), [0, 1, 2, 3]);
    // Neither is asked for the other side's memory.
    let f = rand(ctx, generate(s, Distribution::Bits, 0, 4, 0.0, 1.0)).unwrap_err();
    assert_eq!(f.code, CudaError::INVALID_VALUE);
    let f = rand(ctx, generate(h, Distribution::Bits, buf, 4, 0.0, 1.0)).unwrap_err();
    assert_eq!(f.code, CudaError::INVALID_VALUE);
    assert_eq!(u32s(&read_back(ctx, buf, 16)), [0, 1, 2, 3]);
}

#[test]
fn fake_curand_generators_are_destroyed_with_the_context() {
    let test = "fake_curand_generators_are_destroyed_with_the_context";
    let Some((b, log)) = fake_rand_backend(test) else {
        return;
    };
    let mut ctx = b.open(0, 0).unwrap();
    generator(ctx.as_mut(), rcud_math::rand::RNG_XORWOW);
    generator(ctx.as_mut(), rcud_math::rand::RNG_MTGP32);
    let g = generator(ctx.as_mut(), rcud_math::rand::RNG_PHILOX);
    // One destroyed by the client, the others with the reset and the context.
    assert_eq!(
        rand_status(ctx.as_mut(), RandCall::Destroy { generator: g }),
        0
    );
    let destroyed = |log| {
        log_lines(log)
            .iter()
            .filter(|l| l.starts_with("curandDestroyGenerator"))
            .count()
    };
    assert_eq!(destroyed(&log), 1);
    ctx.reset();
    assert_eq!(destroyed(&log), 3);
    let call = generate(1, Distribution::Bits, 0, 2, 0.0, 1.0);
    assert_eq!(
        rand_status(ctx.as_mut(), call),
        rcud_math::rand::NOT_INITIALIZED
    );
    generator(ctx.as_mut(), rcud_math::rand::RNG_XORWOW);
    drop(ctx);
    assert_eq!(destroyed(&log), 4);
}

#[test]
fn fake_driver_without_curand_says_so() {
    let Some(b) = fake_backend("fake_driver_without_curand_says_so") else {
        return;
    };
    let b = b.with_rand_libraries(vec!["/nonexistent/libcurand.so.10".into()]);
    let mut ctx = b.open(0, 0).unwrap();
    let f = rand(ctx.as_mut(), RandCall::Create { rng_type: 101 }).unwrap_err();
    assert_eq!(f.code, CudaError::NOT_SUPPORTED);
    assert!(
        f.message
            .contains("NVIDIA's cuRAND (libcurand.so.10) was not found on the server"),
        "{f}"
    );
    assert!(f.message.contains("/nonexistent/libcurand.so.10"), "{f}");
}

#[test]
fn fake_curand_poisson_reaches_the_library_with_its_lambda() {
    let test = "fake_curand_poisson_reaches_the_library_with_its_lambda";
    let Some((b, log)) = fake_rand_backend(test) else {
        return;
    };
    let mut ctx = b.open(0, 0).unwrap();
    let ctx = ctx.as_mut();
    let g = generator(ctx, rcud_math::rand::RNG_XORWOW);
    let buf = ctx.malloc(64).unwrap();
    // Odd counts are whole values for Poisson.
    let call = generate(g, Distribution::Poisson, buf, 5, 50.0, 0.0);
    assert_eq!(rand_status(ctx, call), 0);
    let counts = u32s(&read_back(ctx, buf, 20));
    assert!(counts.iter().all(|c| (49..=51).contains(c)), "{counts:?}");
    // NVIDIA's own status for a lambda out of range comes back.
    let call = generate(g, Distribution::Poisson, buf, 4, 0.0, 0.0);
    assert_eq!(rand_status(ctx, call), rcud_math::rand::OUT_OF_RANGE);
    let calls: Vec<String> = log_lines(&log)
        .into_iter()
        .filter(|l| l.starts_with("curandGeneratePoisson"))
        .collect();
    assert_eq!(calls.len(), 2, "{calls:?}");
    // Past the allocation: refused before the library.
    let f = rand(ctx, generate(g, Distribution::Poisson, buf, 17, 5.0, 0.0)).unwrap_err();
    assert_eq!(f.code, CudaError::ILLEGAL_ADDRESS);
}
