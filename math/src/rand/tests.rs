use super::*;
use crate::Fault;

/// One allocation of device memory at [`BASE`].
struct Memory(Vec<u8>);

const BASE: u64 = 0x10_0000;

impl DeviceMemory for Memory {
    fn read(&self, ptr: u64, len: u64) -> Result<&[u8], Fault> {
        let start = ptr.checked_sub(BASE).ok_or(Fault { ptr, len })? as usize;
        self.0
            .get(start..start + len as usize)
            .ok_or(Fault { ptr, len })
    }
    fn write(&mut self, ptr: u64, data: &[u8]) -> Result<(), Fault> {
        let len = data.len() as u64;
        let start = ptr.checked_sub(BASE).ok_or(Fault { ptr, len })? as usize;
        self.0
            .get_mut(start..start + data.len())
            .ok_or(Fault { ptr, len })?
            .copy_from_slice(data);
        Ok(())
    }
}

fn create(state: &mut State, memory: &mut Memory, rng_type: u32) -> u64 {
    let reply = state.call(memory, Call::Create { rng_type }).unwrap();
    assert_eq!(reply.status, 0);
    u64::from_le_bytes(reply.out.try_into().unwrap())
}

fn generate(
    state: &mut State,
    memory: &mut Memory,
    generator: u64,
    distribution: Distribution,
    n: u64,
) -> Reply {
    state
        .call(
            memory,
            Call::Generate {
                generator,
                distribution: distribution as u32,
                ptr: 0,
                n,
                mean: 0.0,
                stddev: 1.0,
            },
        )
        .unwrap()
}

fn words(bytes: &[u8]) -> Vec<u32> {
    bytes
        .chunks_exact(4)
        .map(|c| u32::from_le_bytes(c.try_into().unwrap()))
        .collect()
}

/// Value `n` of the legacy order: stream `n mod 4096`, position `n / 4096`.
fn legacy<E: Engine>(seed: u64, n: u64) -> u32 {
    E::at(seed, n % 4096, n / 4096).next()
}

#[test]
fn legacy_bits_follow_the_documented_order_across_calls() {
    let mut memory = Memory(vec![0; 64]);
    let mut state = State::default();
    for rng in [RNG_XORWOW, RNG_MRG32K3A] {
        let g = create(&mut state, &mut memory, rng);
        state
            .call(
                &mut memory,
                Call::SetSeed {
                    generator: g,
                    seed: 1234,
                },
            )
            .unwrap();
        state
            .call(
                &mut memory,
                Call::SetOffset {
                    generator: g,
                    offset: 100,
                },
            )
            .unwrap();
        state
            .call(
                &mut memory,
                Call::SetOrdering {
                    generator: g,
                    ordering: 103,
                },
            )
            .unwrap();
        let first = words(&generate(&mut state, &mut memory, g, Distribution::Bits, 5000).out);
        let second = words(&generate(&mut state, &mut memory, g, Distribution::Bits, 4000).out);
        let all: Vec<u32> = first.into_iter().chain(second).collect();
        for (i, &x) in all.iter().enumerate() {
            let n = 100 + i as u64;
            let want = match rng {
                RNG_XORWOW => legacy::<Xorwow>(1234, n),
                _ => legacy::<Mrg32k3a>(1234, n),
            };
            assert_eq!(x, want, "rng {rng} value {i}");
        }
    }
}

#[test]
fn mt19937_is_the_reference_sequence() {
    let mut memory = Memory(vec![0; 64]);
    let mut state = State::default();
    let g = create(&mut state, &mut memory, RNG_MT19937);
    state
        .call(
            &mut memory,
            Call::SetSeed {
                generator: g,
                seed: 5489,
            },
        )
        .unwrap();
    let out = words(&generate(&mut state, &mut memory, g, Distribution::Bits, 3).out);
    let mut mt = Mt19937::new(5489);
    assert_eq!(out[0], 3_499_211_612);
    assert_eq!(out, (0..3).map(|_| mt.next_u32()).collect::<Vec<_>>());
}

#[test]
fn distributions_have_their_moments() {
    let mut memory = Memory(vec![0; 64]);
    let mut state = State::default();
    let g = create(&mut state, &mut memory, RNG_PHILOX);
    let n = 100_000;
    let floats = |bytes: Vec<u8>| -> Vec<f64> {
        words(&bytes)
            .into_iter()
            .map(|w| f64::from(f32::from_bits(w)))
            .collect()
    };
    let u = floats(generate(&mut state, &mut memory, g, Distribution::Uniform, n).out);
    assert!(u.iter().all(|&x| x > 0.0 && x <= 1.0));
    let mean = u.iter().sum::<f64>() / n as f64;
    assert!((mean - 0.5).abs() < 0.01, "uniform mean {mean}");
    let z = floats(generate(&mut state, &mut memory, g, Distribution::Normal, n).out);
    let mean = z.iter().sum::<f64>() / n as f64;
    let var = z.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / n as f64;
    assert!(
        mean.abs() < 0.02 && (var - 1.0).abs() < 0.02,
        "normal {mean} {var}"
    );
}

#[test]
fn transforms_match_curand_formulas() {
    assert_eq!(uniform(0), 2f32.powi(-33));
    assert_eq!(uniform(u32::MAX), 1.0);
    assert_eq!(uniform_double(0, 0), 2f64.powi(-54));
    // u = 2^-33 (x = 0), v = π (y = 2^31): sin π·s ≈ 0, cos π·s = -s.
    let (a, b) = box_muller(0, 1 << 31);
    let s = (-2.0f32 * 2f32.powi(-33).ln()).sqrt();
    assert!(a.abs() < 1e-5 * s && (b + s).abs() < 1e-5 * s, "{a} {b}");
}

#[test]
fn statuses() {
    let mut memory = Memory(vec![0; 64]);
    let mut state = State::default();
    assert_eq!(
        state
            .call(&mut memory, Call::Create { rng_type: 999 })
            .unwrap()
            .status,
        TYPE_ERROR
    );
    let g = create(&mut state, &mut memory, RNG_PSEUDO_DEFAULT);
    assert_eq!(
        generate(&mut state, &mut memory, g, Distribution::Normal, 3).status,
        LENGTH_NOT_MULTIPLE
    );
    assert_eq!(
        generate(
            &mut state,
            &mut memory,
            g,
            Distribution::Bits,
            MAX_HOST_BYTES
        )
        .status,
        OUT_OF_RANGE
    );
    let ordering = Call::SetOrdering {
        generator: g,
        ordering: 201,
    };
    assert_eq!(
        state.call(&mut memory, ordering).unwrap().status,
        OUT_OF_RANGE
    );
    // A device range past the allocation faults before anything is generated.
    let past_end = Call::Generate {
        generator: g,
        distribution: Distribution::Bits as u32,
        ptr: BASE + 32,
        n: 16,
        mean: 0.0,
        stddev: 1.0,
    };
    assert!(matches!(
        state.call(&mut memory, past_end),
        Err(MathError::Fault(_))
    ));
    let inside = Call::Generate {
        generator: g,
        distribution: Distribution::Bits as u32,
        ptr: BASE,
        n: 16,
        mean: 0.0,
        stddev: 1.0,
    };
    assert_eq!(state.call(&mut memory, inside).unwrap().status, 0);
    assert_eq!(words(&memory.0)[0], legacy::<Xorwow>(0, 0));
    assert_eq!(
        state
            .call(&mut memory, Call::Destroy { generator: g })
            .unwrap()
            .status,
        0
    );
    assert_eq!(
        state
            .call(&mut memory, Call::Destroy { generator: g })
            .unwrap()
            .status,
        NOT_INITIALIZED
    );
    assert_eq!(
        generate(&mut state, &mut memory, g, Distribution::Bits, 4).status,
        NOT_INITIALIZED
    );
}

fn mtgp32_generator(state: &mut State, memory: &mut Memory, seed: u64, ordering: u32) -> u64 {
    let g = create(state, memory, RNG_MTGP32);
    for call in [
        Call::SetSeed { generator: g, seed },
        Call::SetOrdering {
            generator: g,
            ordering,
        },
    ] {
        assert_eq!(state.call(memory, call).unwrap().status, 0);
    }
    g
}

#[test]
fn mtgp32_gives_nvidias_values() {
    // Values of NVIDIA's libcurand.so.10 (host generator): value 0 and 1
    // (block 0), 256 (block 1), and 192·256 (block 0's second run; in the
    // legacy order, with 64 blocks, that is value 64·256).
    let mut memory = Memory(vec![0; 64]);
    let mut state = State::default();
    let g = mtgp32_generator(&mut state, &mut memory, 1234, ORDERING_DEFAULT);
    let out = words(
        &generate(
            &mut state,
            &mut memory,
            g,
            Distribution::Bits,
            192 * 256 + 1,
        )
        .out,
    );
    assert_eq!(
        [out[0], out[1], out[256], out[192 * 256]],
        [2_501_053_709, 1_991_185_121, 3_018_620_328, 809_145_794]
    );
    let g = mtgp32_generator(&mut state, &mut memory, 1234, ORDERING_LEGACY);
    let out = words(&generate(&mut state, &mut memory, g, Distribution::Bits, 64 * 256 + 1).out);
    assert_eq!([out[0], out[64 * 256]], [2_501_053_709, 809_145_794]);
    // A 64-bit seed is folded to 32 bits.
    let g = mtgp32_generator(&mut state, &mut memory, 0x1234_5678_9abc_def0, 101);
    let out = words(&generate(&mut state, &mut memory, g, Distribution::Bits, 1).out);
    assert_eq!(out, [3_992_761_209]);
}

#[test]
fn mtgp32_interleaves_its_blocks_across_calls() {
    let mut memory = Memory(vec![0; 64]);
    let mut state = State::default();
    let g = mtgp32_generator(&mut state, &mut memory, 99, ORDERING_DEFAULT);
    let mut out = Vec::new();
    for n in [1, 300, 7, 192 * 256] {
        out.extend(words(
            &generate(&mut state, &mut memory, g, Distribution::Bits, n).out,
        ));
    }
    let seed32 = 99u32;
    let mut blocks: Vec<_> = (0..192)
        .map(|b| mtgp32::Block::new(b, seed32 + b as u32 + 1))
        .collect();
    let mut expected = Vec::new();
    for chunk in 0..out.len().div_ceil(256) {
        let block = &mut blocks[chunk % 192];
        expected.extend((0..256).map(|_| block.next_u32()));
    }
    expected.truncate(out.len());
    assert_eq!(out, expected);
}

#[test]
fn mtgp32_statuses() {
    let mut memory = Memory(vec![0; 64]);
    let mut state = State::default();
    let g = create(&mut state, &mut memory, RNG_MTGP32);
    // No offset, as NVIDIA's; normals one at a time, so odd counts too.
    let offset = Call::SetOffset {
        generator: g,
        offset: 5,
    };
    assert_eq!(state.call(&mut memory, offset).unwrap().status, TYPE_ERROR);
    for d in [Distribution::Normal, Distribution::LogNormalDouble] {
        let reply = generate(&mut state, &mut memory, g, d, 3);
        assert_eq!(reply.status, 0);
        assert_eq!(reply.out.len() as u64, 3 * d.value_size());
    }
}

#[test]
fn inverse_cdf_normals() {
    assert_eq!(erfcinv(1.0), 0.0);
    // erfinv(1/2), and erfc(erfcinv(y)) = y down to the smallest 2p.
    assert!((erfcinv(0.5) - 0.476_936_276_204_469_9).abs() < 1e-16);
    for y in [
        2f64.powi(-53),
        2f64.powi(-32),
        1e-9,
        1e-3,
        0.1,
        0.3,
        0.7,
        0.999,
    ] {
        let z = erfcinv(y);
        // erfc's relative slope is about 2z: an ulp of z moves it 2z² ulps.
        let slack = 4.0 * f64::EPSILON * y * (1.0 + 2.0 * z * z);
        assert!((libm::erfc(z) - y).abs() <= slack, "{y}: {z}");
    }
    // The smallest word is the far lower tail (Φ⁻¹(2^-33)), the largest
    // its mirror.
    assert!((normal_icdf_double(0) + 6.337_957_754_553_789).abs() < 1e-14);
    assert_eq!(normal_icdf_double(u32::MAX), -normal_icdf_double(0));
    assert_eq!(normal_icdf(u32::MAX), -normal_icdf(0));
    assert!(normal_icdf_double(1 << 31).abs() < 1e-9);
    // Sobol64's first point, 0: Φ⁻¹(2^-54).
    assert!((normal_icdf_double_53(0) + 8.292_361_075_813_595).abs() < 1e-12);
}

fn sobol_generator(state: &mut State, memory: &mut Memory, rng: u32, dimensions: u32) -> u64 {
    let g = create(state, memory, rng);
    let call = Call::SetDimensions {
        generator: g,
        dimensions,
    };
    assert_eq!(state.call(memory, call).unwrap().status, 0);
    g
}

#[test]
fn sobol_is_dimension_major_and_counts_points() {
    let mut memory = Memory(vec![0; 64]);
    let mut state = State::default();
    let g = sobol_generator(&mut state, &mut memory, RNG_SOBOL32, 2);
    let first = words(&generate(&mut state, &mut memory, g, Distribution::Bits, 6).out);
    let second = words(&generate(&mut state, &mut memory, g, Distribution::Bits, 4).out);
    // Van der Corput in Gray code order: points 0..5 of dimension 1, then
    // of dimension 2 (m = 1, 3: vectors 2^31, 3·2^30, ...).
    let half = 1u32 << 31;
    assert_eq!(&first[..3], &[0, half, half | (1 << 30)]);
    assert_eq!(&first[3..], &[0, half, (1 << 30)]);
    assert_eq!(&second[..2], &[1 << 30, (1 << 30) | (1 << 29)]);
    let mut dim2 = sobol::Points::<32>::new(1, 3);
    assert_eq!(
        &second[2..],
        &[dim2.next_point() as u32, dim2.next_point() as u32]
    );
}

#[test]
fn sobol_statuses() {
    let mut memory = Memory(vec![0; 64]);
    let mut state = State::default();
    let g32 = sobol_generator(&mut state, &mut memory, RNG_SOBOL32, 3);
    let g64 = sobol_generator(&mut state, &mut memory, RNG_SOBOL64, 3);
    let status =
        |state: &mut State, memory: &mut Memory, g, d, n| generate(state, memory, g, d, n).status;
    // Whole points only; normals one per value; each width its own words.
    assert_eq!(
        status(&mut state, &mut memory, g32, Distribution::Uniform, 4),
        LENGTH_NOT_MULTIPLE
    );
    assert_eq!(
        status(&mut state, &mut memory, g32, Distribution::Normal, 3),
        0
    );
    assert_eq!(
        status(&mut state, &mut memory, g32, Distribution::LongLong, 3),
        TYPE_ERROR
    );
    assert_eq!(
        status(&mut state, &mut memory, g64, Distribution::Bits, 3),
        TYPE_ERROR
    );
    let reply = generate(&mut state, &mut memory, g64, Distribution::LongLong, 3);
    assert_eq!((reply.status, reply.out.len()), (0, 24));
    for (call, want) in [
        (
            Call::SetSeed {
                generator: g32,
                seed: 1,
            },
            TYPE_ERROR,
        ),
        (
            Call::SetDimensions {
                generator: g32,
                dimensions: 0,
            },
            OUT_OF_RANGE,
        ),
        (
            Call::SetDimensions {
                generator: g32,
                dimensions: 20_001,
            },
            OUT_OF_RANGE,
        ),
        (
            Call::SetDimensions {
                generator: g32,
                dimensions: 20_000,
            },
            0,
        ),
        (
            Call::SetOrdering {
                generator: g32,
                ordering: 201,
            },
            0,
        ),
        (
            Call::SetOrdering {
                generator: g32,
                ordering: 101,
            },
            OUT_OF_RANGE,
        ),
        (
            Call::SetOffset {
                generator: g64,
                offset: 1 << 40,
            },
            0,
        ),
    ] {
        assert_eq!(
            state.call(&mut memory, call.clone()).unwrap().status,
            want,
            "{call:?}"
        );
    }
    // Scrambled Sobol cannot be reproduced (NVIDIA's own constants).
    for rng in [RNG_SCRAMBLED_SOBOL32, RNG_SCRAMBLED_SOBOL64] {
        let reply = state
            .call(&mut memory, Call::Create { rng_type: rng })
            .unwrap();
        assert_eq!(reply.status, TYPE_ERROR);
    }
}

fn poisson_call(
    state: &mut State,
    memory: &mut Memory,
    generator: u64,
    n: u64,
    lambda: f64,
) -> Reply {
    state
        .call(
            memory,
            Call::Generate {
                generator,
                distribution: Distribution::Poisson as u32,
                ptr: 0,
                n,
                mean: lambda,
                stddev: 0.0,
            },
        )
        .unwrap()
}

#[test]
fn poisson_gives_nvidias_values_and_moments() {
    let mut state = State::default();
    let mut memory = Memory(Vec::new());
    // NVIDIA's library, MTGP32 seed 1234: the inverse transform at 50 and
    // 5000, the normal approximation above 8000.
    for (lambda, want) in [
        (50.0, vec![51, 49, 52, 70, 42, 46]),
        (5000.0, vec![5015, 4993, 5021, 5191, 4916, 4956]),
        (400_000.0, vec![400_131, 399_942, 400_186]),
    ] {
        let g = mtgp32_generator(&mut state, &mut memory, 1234, ORDERING_DEFAULT);
        let reply = poisson_call(&mut state, &mut memory, g, want.len() as u64, lambda);
        assert_eq!(reply.status, 0);
        let got: Vec<u32> = reply
            .out
            .chunks_exact(4)
            .map(|c| u32::from_le_bytes(c.try_into().unwrap()))
            .collect();
        assert_eq!(got, want, "lambda {lambda}");
    }
    // Mean and variance lambda, for small and large lambdas, odd counts.
    for lambda in [0.5, 3.5, 120.0, 9000.0] {
        let g = create(&mut state, &mut memory, RNG_XORWOW);
        let reply = poisson_call(&mut state, &mut memory, g, 20_001, lambda);
        assert_eq!(reply.status, 0);
        let v: Vec<f64> = reply
            .out
            .chunks_exact(4)
            .map(|c| f64::from(u32::from_le_bytes(c.try_into().unwrap())))
            .collect();
        let mean = v.iter().sum::<f64>() / v.len() as f64;
        let var = v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / v.len() as f64;
        let se = (lambda / v.len() as f64).sqrt();
        assert!(
            (mean - lambda).abs() < 5.0 * se,
            "lambda {lambda}: mean {mean}"
        );
        assert!(
            (var / lambda - 1.0).abs() < 0.05,
            "lambda {lambda}: variance {var}"
        );
    }
}

#[test]
fn poisson_statuses() {
    let mut state = State::default();
    let mut memory = Memory(Vec::new());
    let g = create(&mut state, &mut memory, RNG_XORWOW);
    for lambda in [
        0.0,
        -2.0,
        f64::NAN,
        f64::INFINITY,
        MAX_POISSON_LAMBDA * 1.000_001,
    ] {
        let reply = poisson_call(&mut state, &mut memory, g, 4, lambda);
        assert_eq!(reply.status, OUT_OF_RANGE, "lambda {lambda}");
    }
    assert_eq!(
        poisson_call(&mut state, &mut memory, g, 4, MAX_POISSON_LAMBDA).status,
        0
    );
    // The inverse transform ends for the extreme words.
    assert_eq!(poisson(2f64.powi(-33), || 0.0, 1e-9, false), 0);
    assert!(poisson(1.0 - 2f64.powi(-33), || 0.0, 7999.5, false) > 7999);
}
