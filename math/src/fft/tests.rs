//! cuFFT on the CPU against a naive DFT.

use std::collections::HashMap;

use rcud_proto::math::fft::{status, Advanced, Call, Geometry, Kind, FORWARD, INVERSE};

use super::State;
use crate::{DeviceMemory, Fault, MathError};

/// One allocation of device memory at `BASE`.
struct Memory(Vec<u8>);

const BASE: u64 = 0x10_0000;

impl DeviceMemory for Memory {
    fn read(&self, ptr: u64, len: u64) -> Result<&[u8], Fault> {
        let fault = Fault { ptr, len };
        let start = ptr.checked_sub(BASE).ok_or(fault)? as usize;
        let end = start.checked_add(len as usize).ok_or(fault)?;
        self.0.get(start..end).ok_or(fault)
    }
    fn write(&mut self, ptr: u64, data: &[u8]) -> Result<(), Fault> {
        let fault = Fault {
            ptr,
            len: data.len() as u64,
        };
        let start = ptr.checked_sub(BASE).ok_or(fault)? as usize;
        let end = start.checked_add(data.len()).ok_or(fault)?;
        self.0
            .get_mut(start..end)
            .ok_or(fault)?
            .copy_from_slice(data);
        Ok(())
    }
}

impl Memory {
    fn new(bytes: usize) -> Self {
        Self(vec![0; bytes])
    }
    fn put_f64(&mut self, at: u64, values: &[f64], single: bool) {
        let mut at = (at - BASE) as usize;
        for &v in values {
            if single {
                self.0[at..at + 4].copy_from_slice(&(v as f32).to_le_bytes());
                at += 4;
            } else {
                self.0[at..at + 8].copy_from_slice(&v.to_le_bytes());
                at += 8;
            }
        }
    }
    fn get_f64(&self, at: u64, count: usize, single: bool) -> Vec<f64> {
        let at = (at - BASE) as usize;
        (0..count)
            .map(|i| {
                if single {
                    let b = &self.0[at + 4 * i..at + 4 * i + 4];
                    f32::from_le_bytes([b[0], b[1], b[2], b[3]]) as f64
                } else {
                    let mut raw = [0; 8];
                    raw.copy_from_slice(&self.0[at + 8 * i..at + 8 * i + 8]);
                    f64::from_le_bytes(raw)
                }
            })
            .collect()
    }
}

/// Deterministic values in [-1, 1).
fn values(count: usize, seed: u64) -> Vec<f64> {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..count)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 11) as f64 / (1u64 << 52) as f64 - 1.0
        })
        .collect()
}

/// The DFT of one complex array of dimensions `dims` (row-major), with
/// exponent sign `sign`, unnormalized.
fn naive_dft(data: &[(f64, f64)], dims: &[usize], sign: f64) -> Vec<(f64, f64)> {
    let total: usize = dims.iter().product();
    let index = |mut i: usize| {
        let mut x = vec![0; dims.len()];
        for k in (0..dims.len()).rev() {
            x[k] = i % dims[k];
            i /= dims[k];
        }
        x
    };
    (0..total)
        .map(|f| {
            let fx = index(f);
            let mut sum = (0.0, 0.0);
            for (i, &(re, im)) in data.iter().enumerate() {
                let xx = index(i);
                let phase: f64 = (0..dims.len())
                    .map(|k| (xx[k] * fx[k] % dims[k]) as f64 / dims[k] as f64)
                    .sum::<f64>()
                    * sign
                    * std::f64::consts::TAU;
                let (s, c) = phase.sin_cos();
                sum.0 += re * c - im * s;
                sum.1 += re * s + im * c;
            }
            sum
        })
        .collect()
}

fn assert_close(got: &[f64], want: &[f64], tolerance: f64) {
    assert_eq!(got.len(), want.len());
    let scale = want.iter().fold(1.0f64, |m, v| m.max(v.abs()));
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert!(
            (g - w).abs() <= tolerance * scale,
            "element {i}: got {g}, want {w}"
        );
    }
}

fn create(state: &mut State, memory: &mut Memory) -> u32 {
    let reply = state.call(memory, Call::Create {}).expect("create");
    assert_eq!(reply.status, status::SUCCESS);
    u32::from_le_bytes(reply.out[..4].try_into().expect("4 bytes"))
}

fn plan(state: &mut State, memory: &mut Memory, geometry: Geometry) -> u32 {
    let id = create(state, memory);
    let reply = state
        .call(memory, Call::MakePlan { plan: id, geometry })
        .expect("make");
    assert_eq!(reply.status, status::SUCCESS);
    id
}

fn exec(
    state: &mut State,
    memory: &mut Memory,
    plan: u32,
    kind: Kind,
    input: u64,
    output: u64,
    direction: i32,
) -> i32 {
    let call = Call::Exec {
        plan,
        kind: kind.raw(),
        input,
        output,
        direction,
    };
    state.call(memory, call).expect("exec").status
}

fn basic(kind: Kind, n: &[i64], batch: i64) -> Geometry {
    Geometry {
        kind: kind.raw(),
        n: n.to_vec(),
        batch,
        advanced: None,
    }
}

fn pairs(flat: &[f64]) -> Vec<(f64, f64)> {
    flat.chunks_exact(2).map(|c| (c[0], c[1])).collect()
}

fn flat(pairs: &[(f64, f64)]) -> Vec<f64> {
    pairs.iter().flat_map(|&(re, im)| [re, im]).collect()
}

#[test]
fn complex_transforms_match_the_dft() {
    for (kind, dims, batch) in [
        (Kind::C2C, vec![8usize, 6, 4], 2usize),
        (Kind::Z2Z, vec![8, 6, 4], 1),
        (Kind::C2C, vec![5, 7], 3),
        (Kind::Z2Z, vec![12], 4),
        (Kind::C2C, vec![1000], 2),
    ] {
        let single = !kind.is_double();
        let tolerance = if single { 1e-5 } else { 1e-11 };
        let elements: usize = dims.iter().product();
        let input = values(2 * elements * batch, 7);
        for direction in [FORWARD, INVERSE] {
            for in_place in [false, true] {
                let mut state = State::default();
                let mut memory = Memory::new(64 * elements * batch);
                let bytes = if single { 8 } else { 16 } * (elements * batch) as u64;
                let (src, dst) = (BASE, if in_place { BASE } else { BASE + bytes });
                memory.put_f64(src, &input, single);
                let n: Vec<i64> = dims.iter().map(|&d| d as i64).collect();
                let id = plan(&mut state, &mut memory, basic(kind, &n, batch as i64));
                assert_eq!(
                    exec(&mut state, &mut memory, id, kind, src, dst, direction),
                    status::SUCCESS
                );
                let got = memory.get_f64(dst, 2 * elements * batch, single);
                for b in 0..batch {
                    let one = pairs(&input[2 * elements * b..2 * elements * (b + 1)]);
                    let want = flat(&naive_dft(&one, &dims, direction as f64));
                    assert_close(
                        &got[2 * elements * b..2 * elements * (b + 1)],
                        &want,
                        tolerance,
                    );
                }
            }
        }
    }
}

#[test]
fn real_transforms_match_the_dft_and_round_trip() {
    for (real_kind, complex_kind, dims, batch) in [
        (Kind::R2C, Kind::C2R, vec![8usize, 6, 4], 2usize),
        (Kind::D2Z, Kind::Z2D, vec![8, 6, 5], 1),
        (Kind::R2C, Kind::C2R, vec![7, 9], 2),
        (Kind::D2Z, Kind::Z2D, vec![1000], 3),
        (Kind::R2C, Kind::C2R, vec![15], 2),
    ] {
        let single = !real_kind.is_double();
        let tolerance = if single { 2e-5 } else { 1e-11 };
        let rank = dims.len();
        let last = dims[rank - 1];
        let half = last / 2 + 1;
        let rows: usize = dims[..rank - 1].iter().product();
        let elements = rows * last;
        let n: Vec<i64> = dims.iter().map(|&d| d as i64).collect();
        let input = values(elements * batch, 11);
        for in_place in [false, true] {
            let mut state = State::default();
            let mut memory = Memory::new(64 * rows * half * batch + 4096);
            // In place, each real row is padded to 2 * half reals.
            let real_row = if in_place { 2 * half } else { last };
            let real_bytes = if single { 4 } else { 8 };
            let src = BASE;
            let dst = if in_place {
                BASE
            } else {
                BASE + (real_bytes * rows * last * batch) as u64
            };
            for b in 0..batch {
                for r in 0..rows {
                    let at = src + (real_bytes * ((b * rows + r) * real_row)) as u64;
                    let row = &input[(b * rows + r) * last..(b * rows + r + 1) * last];
                    memory.put_f64(at, row, single);
                }
            }
            let forward = plan(&mut state, &mut memory, basic(real_kind, &n, batch as i64));
            assert_eq!(
                exec(
                    &mut state,
                    &mut memory,
                    forward,
                    real_kind,
                    src,
                    dst,
                    FORWARD
                ),
                status::SUCCESS
            );
            let spectrum = memory.get_f64(dst, 2 * rows * half * batch, single);
            for b in 0..batch {
                let one: Vec<(f64, f64)> = input[elements * b..elements * (b + 1)]
                    .iter()
                    .map(|&v| (v, 0.0))
                    .collect();
                let full = naive_dft(&one, &dims, -1.0);
                let want: Vec<f64> = (0..rows)
                    .flat_map(|r| flat(&full[r * last..r * last + half]))
                    .collect();
                let at = 2 * rows * half * b;
                assert_close(&spectrum[at..at + 2 * rows * half], &want, tolerance);
            }
            // Back: N times the input, in the same layout it came in.
            let inverse = plan(
                &mut state,
                &mut memory,
                basic(complex_kind, &n, batch as i64),
            );
            assert_eq!(
                exec(
                    &mut state,
                    &mut memory,
                    inverse,
                    complex_kind,
                    dst,
                    src,
                    INVERSE
                ),
                status::SUCCESS
            );
            for b in 0..batch {
                for r in 0..rows {
                    let at = src + (real_bytes * ((b * rows + r) * real_row)) as u64;
                    let got = memory.get_f64(at, last, single);
                    let want: Vec<f64> = input[(b * rows + r) * last..(b * rows + r + 1) * last]
                        .iter()
                        .map(|v| v * elements as f64)
                        .collect();
                    assert_close(&got, &want, tolerance);
                }
            }
        }
    }
}

#[test]
fn advanced_layout_reads_and_writes_only_its_elements() {
    // 3 transforms of 4x5 complex: input rows 7 elements apart, elements 2
    // apart, transforms 70 apart; output interleaved (stride 3, dist 1).
    let (rows, cols, batch) = (4usize, 5usize, 3usize);
    let geometry = Geometry {
        kind: Kind::Z2Z.raw(),
        n: vec![rows as i64, cols as i64],
        batch: batch as i64,
        advanced: Some(Advanced {
            inembed: vec![rows as i64, 7],
            istride: 2,
            idist: 70,
            onembed: vec![rows as i64, cols as i64],
            ostride: 3,
            odist: 1,
        }),
    };
    let mut state = State::default();
    let mut memory = Memory::new(16 * 1024);
    let input = values(2 * 70 * batch, 3);
    memory.put_f64(BASE, &input, false);
    let sentinel = 12345.0;
    let out = BASE + 16 * 256;
    memory.put_f64(out, &vec![sentinel; 2 * (rows * cols * 3 + 8)], false);
    let id = plan(&mut state, &mut memory, geometry);
    assert_eq!(
        exec(&mut state, &mut memory, id, Kind::Z2Z, BASE, out, FORWARD),
        status::SUCCESS
    );
    let got = memory.get_f64(out, 2 * (rows * cols * 3 + 8), false);
    let mut written = HashMap::new();
    for b in 0..batch {
        let one: Vec<(f64, f64)> = (0..rows * cols)
            .map(|i| {
                let at = b * 70 + 2 * (i / cols * 7 + i % cols);
                (input[2 * at], input[2 * at + 1])
            })
            .collect();
        for (i, v) in naive_dft(&one, &[rows, cols], -1.0).into_iter().enumerate() {
            written.insert(b + 3 * i, v);
        }
    }
    for (slot, pair) in got.chunks_exact(2).enumerate() {
        match written.get(&slot) {
            Some(&(re, im)) => assert_close(pair, &[re, im], 1e-11),
            None => assert_eq!(
                pair,
                [sentinel, sentinel],
                "slot {slot} is outside the layout"
            ),
        }
    }
}

#[test]
fn errors_get_cuffts_statuses() {
    let mut state = State::default();
    let mut memory = Memory::new(4096);
    let reply = |state: &mut State, memory: &mut Memory, call| {
        state.call(memory, call).expect("runs").status
    };
    // Unknown plan, plan not made, destroyed plan.
    assert_eq!(
        exec(&mut state, &mut memory, 99, Kind::C2C, BASE, BASE, FORWARD),
        status::INVALID_PLAN
    );
    let id = create(&mut state, &mut memory);
    assert_eq!(
        exec(&mut state, &mut memory, id, Kind::C2C, BASE, BASE, FORWARD),
        status::INVALID_PLAN
    );
    let bad = basic(Kind::C2C, &[0], 1);
    assert_eq!(
        reply(
            &mut state,
            &mut memory,
            Call::MakePlan {
                plan: id,
                geometry: bad
            }
        ),
        status::INVALID_SIZE
    );
    let bad = Geometry {
        kind: 0x33,
        ..basic(Kind::C2C, &[4], 1)
    };
    assert_eq!(
        reply(
            &mut state,
            &mut memory,
            Call::MakePlan {
                plan: id,
                geometry: bad
            }
        ),
        status::INVALID_TYPE
    );
    let good = basic(Kind::C2C, &[16], 2);
    assert_eq!(
        reply(
            &mut state,
            &mut memory,
            Call::MakePlan {
                plan: id,
                geometry: good.clone()
            }
        ),
        status::SUCCESS
    );
    // Wrong execution function, direction, null pointer.
    assert_eq!(
        exec(&mut state, &mut memory, id, Kind::Z2Z, BASE, BASE, FORWARD),
        status::INVALID_TYPE
    );
    assert_eq!(
        exec(&mut state, &mut memory, id, Kind::C2C, BASE, BASE, 0),
        status::INVALID_VALUE
    );
    assert_eq!(
        exec(&mut state, &mut memory, id, Kind::C2C, 0, BASE, FORWARD),
        status::INVALID_VALUE
    );
    // Data past the allocation: a fault, never an access.
    let call = Call::Exec {
        plan: id,
        kind: Kind::C2C.raw(),
        input: BASE + 4000,
        output: BASE,
        direction: FORWARD,
    };
    assert!(matches!(
        state.call(&mut memory, call),
        Err(MathError::Fault(_))
    ));
    assert_eq!(
        exec(&mut state, &mut memory, id, Kind::C2C, BASE, BASE, FORWARD),
        status::SUCCESS
    );
    assert_eq!(
        reply(&mut state, &mut memory, Call::Destroy { plan: id }),
        status::SUCCESS
    );
    assert_eq!(
        reply(&mut state, &mut memory, Call::Destroy { plan: id }),
        status::INVALID_PLAN
    );
    assert_eq!(
        exec(&mut state, &mut memory, id, Kind::C2C, BASE, BASE, FORWARD),
        status::INVALID_PLAN
    );
    assert_eq!(
        reply(
            &mut state,
            &mut memory,
            Call::MakePlan {
                plan: id,
                geometry: good
            }
        ),
        status::INVALID_PLAN
    );
}
