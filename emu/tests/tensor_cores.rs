//! Tensor-core instructions (emu/tests/ptx/tensor.cu): CUDA's wmma API,
//! inline-asm mma.sync in the PTX ISA's fragment layouts, ldmatrix and
//! movmatrix, each checked against a CPU matrix multiply on random inputs.
#![allow(clippy::needless_range_loop, clippy::too_many_arguments)]

mod common;

use common::*;
use half::{bf16, f16};
use rcud_emu::kernel::KernelError;

const WARP: [u32; 3] = [32, 1, 1];
const ONE: [u32; 3] = [1, 1, 1];

/// D = A * B + C (A m x k, B k x n, all row-major) in f64.
fn matmul(a: &[f64], b: &[f64], c: &[f64], m: usize, n: usize, k: usize) -> Vec<f64> {
    let mut d = c.to_vec();
    for i in 0..m {
        for j in 0..n {
            for x in 0..k {
                d[i * n + j] += a[i * k + x] * b[x * n + j];
            }
        }
    }
    d
}

/// Integer D = A * B + C, wrapping or saturating as s32.
fn matmul_i(a: &[i64], b: &[i64], c: &[i32], m: usize, n: usize, k: usize, sat: bool) -> Vec<i32> {
    (0..m * n)
        .map(|ij| {
            let (i, j) = (ij / n, ij % n);
            let s = i64::from(c[ij]) + (0..k).map(|x| a[i * k + x] * b[x * n + j]).sum::<i64>();
            if sat {
                s.clamp(i64::from(i32::MIN), i64::from(i32::MAX)) as i32
            } else {
                s as i32
            }
        })
        .collect()
}

/// Checks `got` against `want` within `rel` of the largest magnitude of
/// the terms (`scale`), which bounds any order of f32 accumulation.
fn check(what: &str, got: &[f64], want: &[f64], scale: &[f64], rel: f64) {
    assert_eq!(got.len(), want.len(), "{what}: length");
    for i in 0..got.len() {
        let tol = rel * scale[i].max(1e-30);
        assert!(
            (got[i] - want[i]).abs() <= tol,
            "{what}[{i}]: got {} want {} (tol {tol})",
            got[i],
            want[i]
        );
    }
}

/// Sum of |a||b| + |c| per element: the scale of rounding errors.
fn magnitude(a: &[f64], b: &[f64], c: &[f64], m: usize, n: usize, k: usize) -> Vec<f64> {
    let aa: Vec<f64> = a.iter().map(|x| x.abs()).collect();
    let bb: Vec<f64> = b.iter().map(|x| x.abs()).collect();
    let cc: Vec<f64> = c.iter().map(|x| x.abs()).collect();
    matmul(&aa, &bb, &cc, m, n, k)
}

fn rand_f16(rng: &mut Rng, n: usize) -> Vec<f16> {
    (0..n).map(|_| f16::from_f32(rng.f32() / 250.0)).collect()
}

fn rand_bf16(rng: &mut Rng, n: usize) -> Vec<bf16> {
    (0..n).map(|_| bf16::from_f32(rng.f32() / 250.0)).collect()
}

fn rand_f32(rng: &mut Rng, n: usize) -> Vec<f32> {
    (0..n).map(|_| rng.f32() / 250.0).collect()
}

fn bits16(v: &[f16]) -> Vec<u16> {
    v.iter().map(|x| x.to_bits()).collect()
}

fn f16s(v: &[f16]) -> Vec<f64> {
    v.iter().map(|x| x.to_f64()).collect()
}

/// f32 rounded to tf32, ties away from zero (`cvt.rna.tf32.f32`).
fn tf32(x: f32) -> f32 {
    f32::from_bits(x.to_bits().wrapping_add(0x1000) & !0x1FFF)
}

/// Element (r, c) of a matrix stored with leading dimension `ld`.
fn at(r: usize, c: usize, ld: usize, col_major: bool) -> usize {
    if col_major {
        c * ld + r
    } else {
        r * ld + c
    }
}

/// Lays out a rows x cols row-major matrix in a buffer of `len` elements.
fn store<T: Copy>(
    m: &[T],
    rows: usize,
    cols: usize,
    ld: usize,
    col_major: bool,
    fill: T,
    len: usize,
) -> Vec<T> {
    let mut out = vec![fill; len];
    for r in 0..rows {
        for c in 0..cols {
            out[at(r, c, ld, col_major)] = m[r * cols + c];
        }
    }
    out
}

fn load<T: Copy>(buf: &[T], rows: usize, cols: usize, ld: usize, col_major: bool) -> Vec<T> {
    let mut out = Vec::with_capacity(rows * cols);
    for r in 0..rows {
        for c in 0..cols {
            out.push(buf[at(r, c, ld, col_major)]);
        }
    }
    out
}

#[test]
fn wmma_f16_all_layouts_with_strides_and_accumulate() {
    let mut d = Dev::load("tensor.ptx");
    let mut rng = Rng(0x1234_5678_9abc_def1);
    for (kernel, acol, bcol) in [
        ("wmma_f16_rr", false, false),
        ("wmma_f16_rc", false, true),
        ("wmma_f16_cr", true, false),
        ("wmma_f16_cc", true, true),
    ] {
        for c_row in [1i32, 0] {
            let ccol = c_row == 0;
            let a = rand_f16(&mut rng, 256);
            let b = rand_f16(&mut rng, 256);
            let c = rand_f32(&mut rng, 256);
            let pa = d.alloc(&bits16(&store(&a, 16, 16, 24, acol, f16::ZERO, 384)));
            let pb = d.alloc(&bits16(&store(&b, 16, 16, 24, bcol, f16::ZERO, 384)));
            let pc = d.alloc(&store(&c, 16, 16, 20, ccol, 0.0f32, 320));
            let pd = d.alloc(&vec![-7.0f32; 320]);
            d.launch(
                kernel,
                ONE,
                WARP,
                0,
                &[arg(pa), arg(pb), arg(pc), arg(pd), arg(c_row)],
            )
            .unwrap();
            let buf: Vec<f32> = d.read(pd, 320);
            // The padding between rows stays untouched.
            let written: std::collections::HashSet<usize> =
                (0..256).map(|i| at(i / 16, i % 16, 20, ccol)).collect();
            for (i, &x) in buf.iter().enumerate() {
                if !written.contains(&i) {
                    assert_eq!(x, -7.0, "{kernel} padding {i}");
                }
            }
            let got: Vec<f64> = load(&buf, 16, 16, 20, ccol)
                .iter()
                .map(|&x| f64::from(x))
                .collect();
            let (a, b) = (f16s(&a), f16s(&b));
            let c: Vec<f64> = c.iter().map(|&x| f64::from(x)).collect();
            let want = matmul(&a, &b, &c, 16, 16, 16);
            let scale = magnitude(&a, &b, &c, 16, 16, 16);
            check(
                &format!("{kernel} c_row={c_row}"),
                &got,
                &want,
                &scale,
                1e-6,
            );
        }
    }
}

#[test]
fn wmma_f16_accumulator_over_two_steps() {
    let mut d = Dev::load("tensor.ptx");
    let mut rng = Rng(77);
    let a = rand_f16(&mut rng, 16 * 32);
    let b = rand_f16(&mut rng, 32 * 16);
    let pa = d.alloc(&bits16(&a));
    let pb = d.alloc(&bits16(&b));
    let pd = d.zeros::<u16>(256);
    d.launch("wmma_f16_acc16", ONE, WARP, 0, &[arg(pa), arg(pb), arg(pd)])
        .unwrap();
    let got: Vec<f64> = d
        .read::<u16>(pd, 256)
        .iter()
        .map(|&x| f16::from_bits(x).to_f64())
        .collect();
    let (a, b) = (f16s(&a), f16s(&b));
    let z = vec![0.0; 256];
    let want = matmul(&a, &b, &z, 16, 16, 32);
    let scale = magnitude(&a, &b, &z, 16, 16, 32);
    // f16 results: within a few half ulps of the magnitude.
    check("acc16", &got, &want, &scale, 2e-3);
}

#[test]
fn wmma_f16_other_shapes() {
    let mut d = Dev::load("tensor.ptx");
    let mut rng = Rng(99);
    // m32n8k16: A row-major, B column-major.
    let a = rand_f16(&mut rng, 32 * 16);
    let b = rand_f16(&mut rng, 16 * 8);
    let pa = d.alloc(&bits16(&a));
    let pb = d.alloc(&bits16(&store(&b, 16, 8, 16, true, f16::ZERO, 128)));
    let pd = d.zeros::<f32>(256);
    d.launch("wmma_f16_m32n8", ONE, WARP, 0, &[arg(pa), arg(pb), arg(pd)])
        .unwrap();
    let got: Vec<f64> = d
        .read::<f32>(pd, 256)
        .iter()
        .map(|&x| f64::from(x))
        .collect();
    let (af, bf) = (f16s(&a), f16s(&b));
    let z = vec![0.0; 256];
    let want = matmul(&af, &bf, &z, 32, 8, 16);
    check(
        "m32n8k16",
        &got,
        &want,
        &magnitude(&af, &bf, &z, 32, 8, 16),
        1e-6,
    );
    // m8n32k16: both row-major.
    let a = rand_f16(&mut rng, 8 * 16);
    let b = rand_f16(&mut rng, 16 * 32);
    let pa = d.alloc(&bits16(&a));
    let pb = d.alloc(&bits16(&b));
    let pd = d.zeros::<f32>(256);
    d.launch("wmma_f16_m8n32", ONE, WARP, 0, &[arg(pa), arg(pb), arg(pd)])
        .unwrap();
    let got: Vec<f64> = d
        .read::<f32>(pd, 256)
        .iter()
        .map(|&x| f64::from(x))
        .collect();
    let (af, bf) = (f16s(&a), f16s(&b));
    let want = matmul(&af, &bf, &z, 8, 32, 16);
    check(
        "m8n32k16",
        &got,
        &want,
        &magnitude(&af, &bf, &z, 8, 32, 16),
        1e-6,
    );
}

#[test]
fn wmma_bf16_tf32_f64() {
    let mut d = Dev::load("tensor.ptx");
    let mut rng = Rng(2024);
    // bf16: A row-major, B column-major.
    let a = rand_bf16(&mut rng, 256);
    let b = rand_bf16(&mut rng, 256);
    let pa = d.alloc(&a.iter().map(|x| x.to_bits()).collect::<Vec<u16>>());
    let bm = store(&b, 16, 16, 16, true, bf16::ZERO, 256);
    let pb = d.alloc(&bm.iter().map(|x| x.to_bits()).collect::<Vec<u16>>());
    let pd = d.zeros::<f32>(256);
    d.launch("wmma_bf16", ONE, WARP, 0, &[arg(pa), arg(pb), arg(pd)])
        .unwrap();
    let got: Vec<f64> = d
        .read::<f32>(pd, 256)
        .iter()
        .map(|&x| f64::from(x))
        .collect();
    let af: Vec<f64> = a.iter().map(|x| x.to_f64()).collect();
    let bf: Vec<f64> = b.iter().map(|x| x.to_f64()).collect();
    let z = vec![0.0; 256];
    let want = matmul(&af, &bf, &z, 16, 16, 16);
    check(
        "bf16",
        &got,
        &want,
        &magnitude(&af, &bf, &z, 16, 16, 16),
        1e-6,
    );

    // tf32 m16n16k8: the kernel rounds its fragments with cvt.rna.tf32.
    let a = rand_f32(&mut rng, 128);
    let b = rand_f32(&mut rng, 128);
    let pa = d.alloc(&a);
    let pb = d.alloc(&b);
    let pd = d.zeros::<f32>(256);
    d.launch("wmma_tf32", ONE, WARP, 0, &[arg(pa), arg(pb), arg(pd)])
        .unwrap();
    let got: Vec<f64> = d
        .read::<f32>(pd, 256)
        .iter()
        .map(|&x| f64::from(x))
        .collect();
    let af: Vec<f64> = a.iter().map(|&x| f64::from(tf32(x))).collect();
    let bf: Vec<f64> = b.iter().map(|&x| f64::from(tf32(x))).collect();
    let want = matmul(&af, &bf, &z, 16, 16, 8);
    check(
        "tf32",
        &got,
        &want,
        &magnitude(&af, &bf, &z, 16, 16, 8),
        1e-6,
    );

    // f64 m8n8k4 accumulating into C, B column-major.
    let a: Vec<f64> = (0..32).map(|_| f64::from(rng.f32()) / 3.0).collect();
    let b: Vec<f64> = (0..32).map(|_| f64::from(rng.f32()) / 7.0).collect();
    let c: Vec<f64> = (0..64).map(|_| f64::from(rng.f32()) / 11.0).collect();
    let pa = d.alloc(&a);
    let pb = d.alloc(&store(&b, 4, 8, 4, true, 0.0, 32));
    let pc = d.alloc(&c);
    let pd = d.zeros::<f64>(64);
    d.launch(
        "wmma_f64",
        ONE,
        WARP,
        0,
        &[arg(pa), arg(pb), arg(pc), arg(pd)],
    )
    .unwrap();
    let got: Vec<f64> = d.read(pd, 64);
    let want = matmul(&a, &b, &c, 8, 8, 4);
    check("f64", &got, &want, &magnitude(&a, &b, &c, 8, 8, 4), 1e-14);
}

#[test]
fn wmma_integers() {
    let mut d = Dev::load("tensor.ptx");
    let mut rng = Rng(31337);
    // s8, accumulating into C, which is near the ends of the s32 range
    // in places so that the sum wraps.
    let a: Vec<i8> = (0..256).map(|_| rng.next() as i8).collect();
    let b: Vec<i8> = (0..256).map(|_| rng.next() as i8).collect();
    let c: Vec<i32> = (0..256)
        .map(|i| match i % 3 {
            0 => i32::MAX - (rng.next() % 1000) as i32,
            1 => i32::MIN + (rng.next() % 1000) as i32,
            _ => rng.i32() / 4,
        })
        .collect();
    let pa = d.alloc(&a);
    let pb = d.alloc(&b);
    let pc = d.alloc(&c);
    let pd = d.zeros::<i32>(256);
    d.launch(
        "wmma_s8",
        ONE,
        WARP,
        0,
        &[arg(pa), arg(pb), arg(pc), arg(pd)],
    )
    .unwrap();
    let ai: Vec<i64> = a.iter().map(|&x| i64::from(x)).collect();
    let bi: Vec<i64> = b.iter().map(|&x| i64::from(x)).collect();
    assert_eq!(
        d.read::<i32>(pd, 256),
        matmul_i(&ai, &bi, &c, 16, 16, 16, false),
        "s8"
    );

    // u8: everything column-major, C filled with 7.
    let a: Vec<u8> = (0..256).map(|_| rng.next() as u8).collect();
    let b: Vec<u8> = (0..256).map(|_| rng.next() as u8).collect();
    let pa = d.alloc(&store(&a, 16, 16, 16, true, 0, 256));
    let pb = d.alloc(&store(&b, 16, 16, 16, true, 0, 256));
    let pd = d.zeros::<i32>(256);
    d.launch("wmma_u8", ONE, WARP, 0, &[arg(pa), arg(pb), arg(pd)])
        .unwrap();
    let ai: Vec<i64> = a.iter().map(|&x| i64::from(x)).collect();
    let bi: Vec<i64> = b.iter().map(|&x| i64::from(x)).collect();
    let got = load(&d.read::<i32>(pd, 256), 16, 16, 16, true);
    assert_eq!(got, matmul_i(&ai, &bi, &[7; 256], 16, 16, 16, false), "u8");

    // s4 m8n8k32: A row-major, B column-major, low nibble first.
    let a: Vec<i64> = (0..256).map(|_| (rng.next() % 16) as i64 - 8).collect();
    let b: Vec<i64> = (0..256).map(|_| (rng.next() % 16) as i64 - 8).collect();
    let pack = |m: &[i64]| -> Vec<u8> {
        m.chunks(2)
            .map(|p| (p[0] as u8 & 15) | ((p[1] as u8 & 15) << 4))
            .collect()
    };
    let pa = d.alloc(&pack(&a));
    let pb = d.alloc(&pack(&store(&b, 32, 8, 32, true, 0, 256)));
    let pd = d.zeros::<i32>(64);
    d.launch("wmma_s4", ONE, WARP, 0, &[arg(pa), arg(pb), arg(pd)])
        .unwrap();
    assert_eq!(
        d.read::<i32>(pd, 64),
        matmul_i(&a, &b, &[0; 64], 8, 8, 32, false),
        "s4"
    );
}

#[test]
fn wmma_fill_and_elementwise_fragment_ops() {
    let mut d = Dev::load("tensor.ptx");
    let mut rng = Rng(4242);
    let a = rand_f16(&mut rng, 256);
    let b = rand_f16(&mut rng, 256);
    let pa = d.alloc(&bits16(&a));
    let pb = d.alloc(&bits16(&b));
    let pd = d.zeros::<f32>(256);
    let (alpha, beta) = (0.75f32, -1.5f32);
    d.launch(
        "wmma_elementwise",
        ONE,
        WARP,
        0,
        &[arg(pa), arg(pb), arg(pd), arg(alpha), arg(beta)],
    )
    .unwrap();
    let got: Vec<f64> = d
        .read::<f32>(pd, 256)
        .iter()
        .map(|&x| f64::from(x))
        .collect();
    let a2: Vec<f64> = f16s(&a).iter().map(|x| 2.0 * x).collect();
    let bf = f16s(&b);
    let c = vec![f64::from(beta); 256];
    let prod = matmul(&a2, &bf, &c, 16, 16, 16);
    let want: Vec<f64> = prod.iter().map(|x| f64::from(alpha) * x + 1.0).collect();
    let scale: Vec<f64> = magnitude(&a2, &bf, &c, 16, 16, 16)
        .iter()
        .map(|x| x + 1.0)
        .collect();
    check("elementwise", &got, &want, &scale, 1e-6);
}

fn f32s(v: &[f32]) -> Vec<f64> {
    v.iter().map(|&x| f64::from(x)).collect()
}

#[test]
fn mma_sync_half_and_bf16() {
    let mut d = Dev::load("tensor.ptx");
    let mut rng = Rng(5150);
    // m16n8k16 f16 -> f32.
    let a = rand_f16(&mut rng, 256);
    let b = rand_f16(&mut rng, 128);
    let c = rand_f32(&mut rng, 128);
    let (pa, pb, pc) = (d.alloc(&bits16(&a)), d.alloc(&bits16(&b)), d.alloc(&c));
    let pd = d.zeros::<f32>(128);
    d.launch(
        "mma_f16_f32",
        ONE,
        WARP,
        0,
        &[arg(pa), arg(pb), arg(pc), arg(pd)],
    )
    .unwrap();
    let (af, bf, cf) = (f16s(&a), f16s(&b), f32s(&c));
    let want = matmul(&af, &bf, &cf, 16, 8, 16);
    let got = f32s(&d.read::<f32>(pd, 128));
    check(
        "m16n8k16 f32",
        &got,
        &want,
        &magnitude(&af, &bf, &cf, 16, 8, 16),
        1e-6,
    );

    // m16n8k16 f16 -> f16.
    let c = rand_f16(&mut rng, 128);
    let pc = d.alloc(&bits16(&c));
    let pd = d.zeros::<u16>(128);
    d.launch(
        "mma_f16_f16",
        ONE,
        WARP,
        0,
        &[arg(pa), arg(pb), arg(pc), arg(pd)],
    )
    .unwrap();
    let cf = f16s(&c);
    let want = matmul(&af, &bf, &cf, 16, 8, 16);
    let got: Vec<f64> = d
        .read::<u16>(pd, 128)
        .iter()
        .map(|&x| f16::from_bits(x).to_f64())
        .collect();
    check(
        "m16n8k16 f16",
        &got,
        &want,
        &magnitude(&af, &bf, &cf, 16, 8, 16),
        2e-3,
    );

    // m16n8k8 bf16.
    let a = rand_bf16(&mut rng, 128);
    let b = rand_bf16(&mut rng, 64);
    let c = rand_f32(&mut rng, 128);
    let pa = d.alloc(&a.iter().map(|x| x.to_bits()).collect::<Vec<u16>>());
    let pb = d.alloc(&b.iter().map(|x| x.to_bits()).collect::<Vec<u16>>());
    let pc = d.alloc(&c);
    let pd = d.zeros::<f32>(128);
    d.launch(
        "mma_bf16",
        ONE,
        WARP,
        0,
        &[arg(pa), arg(pb), arg(pc), arg(pd)],
    )
    .unwrap();
    let af: Vec<f64> = a.iter().map(|x| x.to_f64()).collect();
    let bf: Vec<f64> = b.iter().map(|x| x.to_f64()).collect();
    let cf = f32s(&c);
    let want = matmul(&af, &bf, &cf, 16, 8, 8);
    let got = f32s(&d.read::<f32>(pd, 128));
    check(
        "m16n8k8 bf16",
        &got,
        &want,
        &magnitude(&af, &bf, &cf, 16, 8, 8),
        1e-6,
    );
}

#[test]
fn mma_sync_tf32_and_f64() {
    let mut d = Dev::load("tensor.ptx");
    let mut rng = Rng(8086);
    let a: Vec<f32> = rand_f32(&mut rng, 128).into_iter().map(tf32).collect();
    let b: Vec<f32> = rand_f32(&mut rng, 64).into_iter().map(tf32).collect();
    let c = rand_f32(&mut rng, 128);
    let (pa, pb, pc) = (d.alloc(&a), d.alloc(&b), d.alloc(&c));
    let pd = d.zeros::<f32>(128);
    d.launch(
        "mma_tf32",
        ONE,
        WARP,
        0,
        &[arg(pa), arg(pb), arg(pc), arg(pd)],
    )
    .unwrap();
    let (af, bf, cf) = (f32s(&a), f32s(&b), f32s(&c));
    let want = matmul(&af, &bf, &cf, 16, 8, 8);
    let got = f32s(&d.read::<f32>(pd, 128));
    check(
        "m16n8k8 tf32",
        &got,
        &want,
        &magnitude(&af, &bf, &cf, 16, 8, 8),
        1e-6,
    );

    let a: Vec<f64> = (0..32).map(|_| f64::from(rng.f32()) / 3.0).collect();
    let b: Vec<f64> = (0..32).map(|_| f64::from(rng.f32()) / 7.0).collect();
    let c: Vec<f64> = (0..64).map(|_| f64::from(rng.f32()) / 11.0).collect();
    let (pa, pb, pc) = (d.alloc(&a), d.alloc(&b), d.alloc(&c));
    let pd = d.zeros::<f64>(64);
    d.launch(
        "mma_f64",
        ONE,
        WARP,
        0,
        &[arg(pa), arg(pb), arg(pc), arg(pd)],
    )
    .unwrap();
    let want = matmul(&a, &b, &c, 8, 8, 4);
    check(
        "m8n8k4 f64",
        &d.read::<f64>(pd, 64),
        &want,
        &magnitude(&a, &b, &c, 8, 8, 4),
        1e-14,
    );
}

#[test]
fn mma_sync_integers_wrap_and_satfinite() {
    let mut d = Dev::load("tensor.ptx");
    let mut rng = Rng(6502);
    let a: Vec<i8> = (0..16 * 32).map(|_| rng.next() as i8).collect();
    let b: Vec<i8> = (0..32 * 8).map(|_| rng.next() as i8).collect();
    let c: Vec<i32> = (0..128)
        .map(|i| match i % 3 {
            0 => i32::MAX - (rng.next() % 100_000) as i32,
            1 => i32::MIN + (rng.next() % 100_000) as i32,
            _ => rng.i32() / 4,
        })
        .collect();
    let (pa, pb, pc) = (d.alloc(&a), d.alloc(&b), d.alloc(&c));
    let ai: Vec<i64> = a.iter().map(|&x| i64::from(x)).collect();
    let bi: Vec<i64> = b.iter().map(|&x| i64::from(x)).collect();
    for sat in [0i32, 1] {
        let pd = d.zeros::<i32>(128);
        d.launch(
            "mma_s8",
            ONE,
            WARP,
            0,
            &[arg(pa), arg(pb), arg(pc), arg(pd), arg(sat)],
        )
        .unwrap();
        let want = matmul_i(&ai, &bi, &c, 16, 8, 32, sat == 1);
        assert_eq!(d.read::<i32>(pd, 128), want, "m16n8k32 s8 sat={sat}");
    }
    let a: Vec<i8> = (0..16 * 64).map(|_| (rng.next() % 16) as i8 - 8).collect();
    let b: Vec<i8> = (0..64 * 8).map(|_| (rng.next() % 16) as i8 - 8).collect();
    let c: Vec<i32> = (0..128).map(|_| rng.i32() / 2).collect();
    let (pa, pb, pc) = (d.alloc(&a), d.alloc(&b), d.alloc(&c));
    let pd = d.zeros::<i32>(128);
    d.launch(
        "mma_s4",
        ONE,
        WARP,
        0,
        &[arg(pa), arg(pb), arg(pc), arg(pd)],
    )
    .unwrap();
    let ai: Vec<i64> = a.iter().map(|&x| i64::from(x)).collect();
    let bi: Vec<i64> = b.iter().map(|&x| i64::from(x)).collect();
    assert_eq!(
        d.read::<i32>(pd, 128),
        matmul_i(&ai, &bi, &c, 16, 8, 64, false),
        "m16n8k64 s4"
    );
}

#[test]
fn ldmatrix_feeding_mma() {
    let mut d = Dev::load("tensor.ptx");
    let mut rng = Rng(1701);
    let a = rand_f16(&mut rng, 256);
    let b = rand_f16(&mut rng, 128);
    let (pa, pb) = (d.alloc(&bits16(&a)), d.alloc(&bits16(&b)));
    let outs: Vec<u64> = (0..3).map(|_| d.zeros::<f32>(128)).collect();
    d.launch(
        "ldmatrix_mma",
        ONE,
        WARP,
        0,
        &[arg(pa), arg(pb), arg(outs[0]), arg(outs[1]), arg(outs[2])],
    )
    .unwrap();
    let (af, bf) = (f16s(&a), f16s(&b));
    let z = vec![0.0; 128];
    let want = matmul(&af, &bf, &z, 16, 8, 16);
    let scale = magnitude(&af, &bf, &z, 16, 8, 16);
    check(
        "x4 + x2.trans",
        &f32s(&d.read(outs[0], 128)),
        &want,
        &scale,
        1e-6,
    );
    check("x4 + x2", &f32s(&d.read(outs[1], 128)), &want, &scale, 1e-6);
    let a8: Vec<f64> = (0..16)
        .flat_map(|r| af[r * 16..r * 16 + 8].to_vec())
        .collect();
    let want = matmul(&a8, &bf[..64], &z, 16, 8, 8);
    let scale = magnitude(&a8, &bf[..64], &z, 16, 8, 8);
    check(
        "x2 + x1.trans",
        &f32s(&d.read(outs[2], 128)),
        &want,
        &scale,
        1e-6,
    );
}

#[test]
fn ldmatrix_and_movmatrix_fragments() {
    let mut d = Dev::load("tensor.ptx");
    let mut rng = Rng(2718);
    let m: Vec<u16> = (0..256).map(|_| rng.next() as u16).collect();
    let pm = d.alloc(&m);
    let out = d.zeros::<u32>(32 * 15);
    d.launch("ldmatrix_raw", ONE, WARP, 0, &[arg(pm), arg(out)])
        .unwrap();
    let got: Vec<u32> = d.read(out, 32 * 15);
    // Row rr of matrix i is the row lane 8i + rr points at.
    let row = |i: usize, rr: usize| (5 * (8 * i + rr) + 3) % 32;
    let el = |i: usize, r: usize, c: usize| u32::from(m[row(i, r) * 8 + c]);
    let frag = |lane: usize, i: usize, trans: bool| {
        let (g, t) = (lane / 4, lane % 4);
        if trans {
            el(i, 2 * t, g) | el(i, 2 * t + 1, g) << 16
        } else {
            el(i, g, 2 * t) | el(i, g, 2 * t + 1) << 16
        }
    };
    for lane in 0..32 {
        let o = &got[lane * 15..lane * 15 + 15];
        let mut want = vec![frag(lane, 0, false), frag(lane, 0, true)];
        for (n, trans) in [(2, false), (2, true), (4, false), (4, true)] {
            want.extend((0..n).map(|i| frag(lane, i, trans)));
        }
        // movmatrix: source fragment word of lane l.
        let w = |l: usize| {
            (l as u32)
                .wrapping_mul(0x10001)
                .wrapping_add(u32::from(m[l]))
        };
        let x = |r: usize, c: usize| (w(r * 4 + c / 2) >> (16 * (c % 2))) & 0xFFFF;
        let (g, t) = (lane / 4, lane % 4);
        want.push(x(2 * t, g) | x(2 * t + 1, g) << 16);
        assert_eq!(o, &want[..], "lane {lane}");
    }
}

/// Hand-written PTX: one kernel running `inst`, its fragments loaded from
/// and stored to per-lane arrays (lane-major, registers consecutive), all
/// registers 64-bit when `wide`.
fn frag_kernel(inst: &str, [na, nb, nc, nd]: [usize; 4], wide: bool) -> String {
    let (t, sz) = if wide { ("b64", 8) } else { ("b32", 4) };
    let mut s = format!(
        ".version 8.0\n.target sm_90\n.address_size 64\n\
         .visible .entry k(.param .u64 pa, .param .u64 pb, .param .u64 pc, .param .u64 pd)\n{{\n\
         .reg .b32 %lane;\n.reg .b64 %p;\n.reg .b64 %off;\n\
         .reg .{t} %a<{na}>;\n.reg .{t} %b<{nb}>;\n.reg .{t} %c<{nc}>;\n.reg .{t} %d<{nd}>;\n\
         mov.u32 %lane, %tid.x;\n"
    );
    let lane_base = |p: &str, n: usize| {
        format!(
            "ld.param.u64 %p, [{p}];\nmul.wide.u32 %off, %lane, {};\nadd.u64 %p, %p, %off;\n",
            n * sz
        )
    };
    for (p, r, n) in [("pa", "%a", na), ("pb", "%b", nb), ("pc", "%c", nc)] {
        s += &lane_base(p, n);
        for i in 0..n {
            s += &format!("ld.global.{t} {r}{i}, [%p+{}];\n", i * sz);
        }
    }
    let list = |r: &str, n: usize| {
        (0..n)
            .map(|i| format!("{r}{i}"))
            .collect::<Vec<_>>()
            .join(",")
    };
    s += &format!(
        "{inst} {{{}}}, {{{}}}, {{{}}}, {{{}}};\n",
        list("%d", nd),
        list("%a", na),
        list("%b", nb),
        list("%c", nc)
    );
    s += &lane_base("pd", nd);
    for i in 0..nd {
        s += &format!("st.global.{t} [%p+{}], %d{i};\n", i * sz);
    }
    s + "ret;\n}\n"
}

/// Registers of every lane for a matrix in the PTX ISA's layout: element
/// j of register r of lane l at (row, col) = `pos(l, r, j)`.
fn frags(
    nregs: usize,
    per: usize,
    bits: usize,
    pos: impl Fn(usize, usize, usize) -> (usize, usize),
    val: impl Fn(usize, usize) -> u64,
) -> Vec<u32> {
    let mut out = vec![0u32; 32 * nregs];
    for l in 0..32 {
        for r in 0..nregs {
            let mut v = 0u64;
            for j in 0..per {
                let (row, col) = pos(l, r, j);
                v |= (val(row, col) & ((1u64 << bits) - 1)) << (j * bits);
            }
            out[l * nregs + r] = v as u32;
        }
    }
    out
}

#[test]
fn mma_sync_single_bit_and_m8n8k16_s8_from_ptx() {
    let mut rng = Rng(1984);
    // b1 m16n8k256 xor.popc: A 16x256, B 256x8.
    let a: Vec<u64> = (0..16 * 256).map(|_| rng.next() & 1).collect();
    let b: Vec<u64> = (0..256 * 8).map(|_| rng.next() & 1).collect();
    let c: Vec<i32> = (0..128).map(|_| (rng.next() % 1000) as i32).collect();
    for (op, f) in [("xor", 0u64), ("and", 1)] {
        let inst = format!("mma.sync.aligned.m16n8k256.row.col.s32.b1.b1.s32.{op}.popc");
        let text = frag_kernel(&inst, [4, 2, 4, 4], false);
        let mut d = Dev::from_text(&text);
        let fa = frags(
            4,
            32,
            1,
            |l, r, j| (l / 4 + 8 * (r & 1), (l % 4) * 32 + j + 128 * (r >> 1)),
            |r, c| a[r * 256 + c],
        );
        let fb = frags(
            2,
            32,
            1,
            |l, r, j| ((l % 4) * 32 + j + 128 * r, l / 4),
            |r, c| b[r * 8 + c],
        );
        let fc = frags(
            4,
            1,
            32,
            |l, r, _| (l / 4 + 8 * (r >> 1), (l % 4) * 2 + (r & 1)),
            |r, cc| c[r * 8 + cc] as u64,
        );
        let (pa, pb, pc) = (d.alloc(&fa), d.alloc(&fb), d.alloc(&fc));
        let pd = d.zeros::<u32>(128);
        d.launch("k", ONE, WARP, 0, &[arg(pa), arg(pb), arg(pc), arg(pd)])
            .unwrap();
        let got: Vec<u32> = d.read(pd, 128);
        for l in 0..32 {
            for r in 0..4 {
                let (i, j) = (l / 4 + 8 * (r >> 1), (l % 4) * 2 + (r & 1));
                let dot: u64 = (0..256)
                    .map(|k| {
                        if f == 0 {
                            a[i * 256 + k] ^ b[k * 8 + j]
                        } else {
                            a[i * 256 + k] & b[k * 8 + j]
                        }
                    })
                    .sum();
                assert_eq!(
                    got[l * 4 + r] as i32,
                    c[i * 8 + j] + dot as i32,
                    "b1 {op} lane {l} reg {r}"
                );
            }
        }
    }
    // m8n8k16 u8 x s8.
    let a: Vec<u64> = (0..8 * 16).map(|_| rng.next() & 0xFF).collect();
    let b: Vec<i64> = (0..16 * 8).map(|_| rng.next() as i8 as i64).collect();
    let text = frag_kernel(
        "mma.sync.aligned.m8n8k16.row.col.s32.u8.s8.s32",
        [1, 1, 2, 2],
        false,
    );
    let mut d = Dev::from_text(&text);
    let fa = frags(
        1,
        4,
        8,
        |l, _, j| (l / 4, (l % 4) * 4 + j),
        |r, c| a[r * 16 + c],
    );
    let fb = frags(
        1,
        4,
        8,
        |l, _, j| ((l % 4) * 4 + j, l / 4),
        |r, c| b[r * 8 + c] as u64,
    );
    let (pa, pb, pc) = (d.alloc(&fa), d.alloc(&fb), d.alloc(&[5u32; 64]));
    let pd = d.zeros::<u32>(64);
    d.launch("k", ONE, WARP, 0, &[arg(pa), arg(pb), arg(pc), arg(pd)])
        .unwrap();
    let got: Vec<u32> = d.read(pd, 64);
    for l in 0..32 {
        for r in 0..2 {
            let (i, j) = (l / 4, (l % 4) * 2 + r);
            let dot: i64 = (0..16).map(|k| a[i * 16 + k] as i64 * b[k * 8 + j]).sum();
            assert_eq!(got[l * 2 + r] as i32, 5 + dot as i32, "m8n8k16 lane {l}");
        }
    }
}

#[test]
fn mma_sync_f64_m16n8k16_and_e4m3_from_ptx() {
    let mut rng = Rng(4004);
    // f64 m16n8k16 (sm_90).
    let a: Vec<f64> = (0..256).map(|_| f64::from(rng.f32()) / 3.0).collect();
    let b: Vec<f64> = (0..128).map(|_| f64::from(rng.f32()) / 5.0).collect();
    let c: Vec<f64> = (0..128).map(|_| f64::from(rng.f32())).collect();
    let text = frag_kernel(
        "mma.sync.aligned.m16n8k16.row.col.f64.f64.f64.f64",
        [8, 4, 4, 4],
        true,
    );
    let mut d = Dev::from_text(&text);
    let lay_a = |l: usize, r: usize| (l / 4 + 8 * (r & 1), l % 4 + 4 * (r >> 1));
    let lay_c = |l: usize, r: usize| (l / 4 + 8 * (r >> 1), (l % 4) * 2 + (r & 1));
    let fa: Vec<f64> = (0..32 * 8)
        .map(|x| {
            let (i, k) = lay_a(x / 8, x % 8);
            a[i * 16 + k]
        })
        .collect();
    let fb: Vec<f64> = (0..32 * 4)
        .map(|x| {
            let (l, r) = (x / 4, x % 4);
            b[(l % 4 + 4 * r) * 8 + l / 4]
        })
        .collect();
    let fc: Vec<f64> = (0..32 * 4)
        .map(|x| {
            let (i, j) = lay_c(x / 4, x % 4);
            c[i * 8 + j]
        })
        .collect();
    let (pa, pb, pc) = (d.alloc(&fa), d.alloc(&fb), d.alloc(&fc));
    let pd = d.zeros::<f64>(128);
    d.launch("k", ONE, WARP, 0, &[arg(pa), arg(pb), arg(pc), arg(pd)])
        .unwrap();
    let got: Vec<f64> = d.read(pd, 128);
    let want = matmul(&a, &b, &c, 16, 8, 16);
    let scale = magnitude(&a, &b, &c, 16, 8, 16);
    for x in 0..128 {
        let (i, j) = lay_c(x / 4, x % 4);
        assert!(
            (got[x] - want[i * 8 + j]).abs() <= 1e-14 * scale[i * 8 + j],
            "f64 m16n8k16 {x}"
        );
    }

    // e4m3 m16n8k32 -> f32: random bytes that are not NaN.
    let e4 = |x: u64| -> f64 {
        let (e, m) = ((x >> 3) & 15, (x & 7) as f64);
        let v = if e == 0 {
            m / 512.0
        } else {
            (8.0 + m) * 2f64.powi(e as i32 - 10)
        };
        if x & 0x80 != 0 {
            -v
        } else {
            v
        }
    };
    let byte = |rng: &mut Rng| loop {
        let x = rng.next() & 0xFF;
        if x & 0x7F != 0x7F {
            break x;
        }
    };
    let a: Vec<u64> = (0..16 * 32).map(|_| byte(&mut rng)).collect();
    let b: Vec<u64> = (0..32 * 8).map(|_| byte(&mut rng)).collect();
    let text = frag_kernel(
        "mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32",
        [4, 2, 4, 4],
        false,
    );
    let mut d = Dev::from_text(&text);
    let fa = frags(
        4,
        4,
        8,
        |l, r, j| (l / 4 + 8 * (r & 1), (l % 4) * 4 + j + 16 * (r >> 1)),
        |r, c| a[r * 32 + c],
    );
    let fb = frags(
        2,
        4,
        8,
        |l, r, j| ((l % 4) * 4 + j + 16 * r, l / 4),
        |r, c| b[r * 8 + c],
    );
    let (pa, pb, pc) = (d.alloc(&fa), d.alloc(&fb), d.alloc(&[0u32; 128]));
    let pd = d.zeros::<f32>(128);
    d.launch("k", ONE, WARP, 0, &[arg(pa), arg(pb), arg(pc), arg(pd)])
        .unwrap();
    let got: Vec<f32> = d.read(pd, 128);
    let af: Vec<f64> = a.iter().map(|&x| e4(x)).collect();
    let bf: Vec<f64> = b.iter().map(|&x| e4(x)).collect();
    let z = vec![0.0; 128];
    let want = matmul(&af, &bf, &z, 16, 8, 32);
    let scale = magnitude(&af, &bf, &z, 16, 8, 32);
    for x in 0..128 {
        let (i, j) = lay_c(x / 4, x % 4);
        let w = want[i * 8 + j];
        assert!(
            (f64::from(got[x]) - w).abs() <= 1e-6 * scale[i * 8 + j].max(1e-30),
            "e4m3 {x}: {} vs {w}",
            got[x]
        );
    }
}

#[test]
fn mma_sync_m8n8k4_f16_quad_pairs_from_ptx() {
    let mut rng = Rng(1970);
    for (alay, blay, cty) in [
        ("row", "col", "f32"),
        ("col", "row", "f16"),
        ("row", "row", "f16"),
        ("col", "col", "f32"),
    ] {
        // Four independent products, one per quad-pair q.
        let a = rand_f16(&mut rng, 4 * 32);
        let b = rand_f16(&mut rng, 4 * 32);
        let c = rand_f16(&mut rng, 4 * 64);
        let f32c = cty == "f32";
        let nc = if f32c { 8 } else { 4 };
        let inst = format!("mma.sync.aligned.m8n8k4.{alay}.{blay}.{cty}.f16.f16.{cty}");
        let mut d = Dev::from_text(&frag_kernel(&inst, [2, 2, nc, nc], false));
        let quad = |l: usize| ((l % 16) / 4, l % 4, if l >= 16 { 4 } else { 0 });
        let pos_a = |l: usize, i: usize| {
            let (q, t, h) = quad(l);
            let (r, c) = if alay == "row" {
                (t + h, i)
            } else {
                (i + h, t)
            };
            q * 32 + r * 4 + c
        };
        let pos_b = |l: usize, i: usize| {
            let (q, t, h) = quad(l);
            let (r, c) = if blay == "row" {
                (t, i + h)
            } else {
                (i, t + h)
            };
            q * 32 + r * 8 + c
        };
        let pos_c = |l: usize, i: usize| {
            let (q, t, h) = quad(l);
            let (r, c) = if f32c {
                ((l & 1) + (i & 2) + h, (i & 4) + (l & 2) + (i & 1))
            } else {
                (t + h, i)
            };
            q * 64 + r * 8 + c
        };
        let pairs = |m: &[f16], pos: &dyn Fn(usize, usize) -> usize, n: usize| -> Vec<u32> {
            (0..32 * n)
                .map(|x| {
                    let (l, r) = (x / n, x % n);
                    let lo = m[pos(l, 2 * r)].to_bits();
                    let hi = m[pos(l, 2 * r + 1)].to_bits();
                    u32::from(lo) | u32::from(hi) << 16
                })
                .collect()
        };
        let fa = pairs(&a, &pos_a, 2);
        let fb = pairs(&b, &pos_b, 2);
        let fc: Vec<u32> = if f32c {
            (0..256)
                .map(|x| c[pos_c(x / 8, x % 8)].to_f32().to_bits())
                .collect()
        } else {
            pairs(&c, &pos_c, 4)
        };
        let (pa, pb, pc) = (d.alloc(&fa), d.alloc(&fb), d.alloc(&fc));
        let pd = d.zeros::<u32>(32 * nc);
        d.launch("k", ONE, WARP, 0, &[arg(pa), arg(pb), arg(pc), arg(pd)])
            .unwrap();
        let got: Vec<u32> = d.read(pd, 32 * nc);
        let (af, bf, cf) = (f16s(&a), f16s(&b), f16s(&c));
        let mut want = Vec::new();
        let mut scale = Vec::new();
        for q in 0..4 {
            let (aq, bq, cq) = (
                &af[q * 32..q * 32 + 32],
                &bf[q * 32..q * 32 + 32],
                &cf[q * 64..q * 64 + 64],
            );
            want.extend(matmul(aq, bq, cq, 8, 8, 4));
            scale.extend(magnitude(aq, bq, cq, 8, 8, 4));
        }
        for l in 0..32 {
            for i in 0..8 {
                let g = if f32c {
                    f64::from(f32::from_bits(got[l * 8 + i]))
                } else {
                    f16::from_bits((got[l * 4 + i / 2] >> (16 * (i % 2))) as u16).to_f64()
                };
                let at = pos_c(l, i);
                let tol = if f32c { 1e-6 } else { 2e-3 } * scale[at];
                assert!(
                    (g - want[at]).abs() <= tol,
                    "{inst}: lane {l} element {i}: {g} vs {}",
                    want[at]
                );
            }
        }
    }
}

#[test]
fn stmatrix_round_trip_from_ptx() {
    // stmatrix (sm_90) of fragments, then plain loads of the rows.
    let text = r#"
.version 8.0
.target sm_90
.address_size 64
.visible .entry k(.param .u64 pin, .param .u64 pout)
{
    .shared .align 16 .b8 s[512];
    .reg .b32 %r<12>;
    .reg .b64 %rd<6>;
    mov.u32 %r0, %tid.x;
    ld.param.u64 %rd0, [pin];
    mul.wide.u32 %rd1, %r0, 16;
    add.u64 %rd2, %rd0, %rd1;
    ld.global.v4.b32 {%r1, %r2, %r3, %r4}, [%rd2];
    // lane l stores row (5 l + 3) % 32 of s.
    mul.lo.u32 %r5, %r0, 5;
    add.u32 %r5, %r5, 3;
    rem.u32 %r5, %r5, 32;
    shl.b32 %r5, %r5, 4;
    mov.u32 %r6, s;
    add.u32 %r6, %r6, %r5;
    stmatrix.sync.aligned.m8n8.x4.trans.shared.b16 [%r6], {%r1, %r2, %r3, %r4};
    bar.sync 0;
    ld.param.u64 %rd3, [pout];
    add.u64 %rd4, %rd3, %rd1;
    mov.u32 %r7, s;
    shl.b32 %r8, %r0, 4;
    add.u32 %r7, %r7, %r8;
    ld.shared.v4.b32 {%r1, %r2, %r3, %r4}, [%r7];
    st.global.v4.b32 [%rd4], {%r1, %r2, %r3, %r4};
    ret;
}
"#;
    let mut d = Dev::from_text(text);
    let mut rng = Rng(3141);
    let input: Vec<u32> = (0..128).map(|_| rng.next() as u32).collect();
    let pin = d.alloc(&input);
    let pout = d.zeros::<u32>(128);
    d.launch("k", ONE, WARP, 0, &[arg(pin), arg(pout)]).unwrap();
    let out: Vec<u32> = d.read(pout, 128);
    let half = |w: u32, h: usize| ((w >> (16 * h)) & 0xFFFF) as u16;
    let smem_row = |i: usize, rr: usize| (5 * (8 * i + rr) + 3) % 32;
    for lane in 0..32 {
        let (g, t) = (lane / 4, lane % 4);
        for i in 0..4 {
            let w = input[lane * 4 + i];
            for h in 0..2 {
                // Transposed: the element goes to row 2t + h, column g.
                let row = smem_row(i, 2 * t + h);
                let got = half(out[row * 4 + g / 2], g % 2);
                assert_eq!(got, half(w, h), "lane {lane} matrix {i} half {h}");
            }
        }
    }
}

#[test]
fn unsupported_tensor_variants_fail_cleanly() {
    for inst in [
        // m8n8k4 exists for f16 and f64 only.
        "mma.sync.aligned.m8n8k4.row.col.f32.bf16.bf16.f32 {%f0,%f1,%f2,%f3,%f4,%f5,%f6,%f7}, {%r0,%r1}, {%r2,%r3}, {%f0,%f1,%f2,%f3,%f4,%f5,%f6,%f7};",
        // Sparse MMA.
        "mma.sp.sync.aligned.m16n8k32.row.col.f32.f16.f16.f32 {%f0,%f1,%f2,%f3}, {%r0,%r1,%r2,%r3}, {%r4,%r5,%r6,%r7}, {%f0,%f1,%f2,%f3}, %r8, 0;",
        // A shape that does not exist.
        "mma.sync.aligned.m16n8k12.row.col.f32.f16.f16.f32 {%f0,%f1,%f2,%f3}, {%r0,%r1,%r2,%r3}, {%r4,%r5}, {%f0,%f1,%f2,%f3};",
        "ldmatrix.sync.aligned.m16n16.x1.trans.shared.b8 {%r0, %r1}, [%r2];",
        // Hostile shapes never reach the index arithmetic.
        "wmma.load.c.sync.aligned.row.m0n0k0.global.f32 {%f0}, [%rd0];",
        "wmma.load.c.sync.aligned.row.m4294967295n65536k1.f32 {%f0}, [%rd0], %r1;",
        "wmma.mma.sync.aligned.row.row.m99999999999n8k8.f32.f32 {%f0}, {%r0}, {%r1}, {%f1};",
        "mma.sync.aligned.m16n8k16.row.col.f32.f32.f32.f32 {%f0,%f1,%f2,%f3}, {%f0,%f1,%f2,%f3}, {%f0,%f1}, {%f0,%f1,%f2,%f3};",
    ] {
        let text = format!(
            ".version 8.0\n.target sm_90\n.address_size 64\n.visible .entry k()\n{{\n.reg .b32 %r<10>;\n.reg .b64 %rd<2>;\n.reg .f32 %f<10>;\n{inst}\nret;\n}}\n"
        );
        let mut d = Dev::from_text(&text);
        match d.launch("k", ONE, WARP, 0, &[]) {
            Err(KernelError::Unsupported(msg)) => {
                assert!(msg.contains("unsupported PTX instruction"), "{inst}: {msg}")
            }
            other => panic!("{inst}: {other:?}"),
        }
    }
}
