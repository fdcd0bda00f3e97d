//! Real CUDA C++ kernels (emu/tests/ptx/*.cu, compiled by nvcc into the
//! checked-in .ptx next to them) run by the interpreter and checked against
//! CPU references.
#![allow(clippy::needless_range_loop)]

mod common;

use common::*;

fn kernel_named(d: &Dev, part: &str) -> String {
    d.module
        .kernel_names()
        .into_iter()
        .find(|k| k.contains(part))
        .unwrap()
}

fn close(a: f64, b: f64, rel: f64) -> bool {
    a == b || (a - b).abs() <= rel * a.abs().max(b.abs()).max(1e-30) || (a.is_nan() && b.is_nan())
}

#[test]
fn vector_add() {
    let mut d = Dev::load("basic.ptx");
    let n = 1000;
    let a: Vec<f32> = (0..n).map(|i| i as f32 * 0.5).collect();
    let b: Vec<f32> = (0..n).map(|i| 1000.0 - i as f32).collect();
    let pa = d.alloc(&a);
    let pb = d.alloc(&b);
    let pc = d.zeros::<f32>(n);
    let out = d
        .launch(
            "vec_add",
            [4, 1, 1],
            [256, 1, 1],
            0,
            &[arg(pa), arg(pb), arg(pc), arg(n as i32)],
        )
        .unwrap();
    let c: Vec<f32> = d.read(pc, n);
    for i in 0..n {
        assert_eq!(c[i], a[i] + b[i], "element {i}");
    }
    assert!(out.instructions > 1000);
}

#[test]
fn saxpy_grid_stride() {
    let mut d = Dev::load("basic.ptx");
    let n = 10_000;
    let mut rng = Rng(7);
    let x: Vec<f32> = (0..n).map(|_| rng.f32()).collect();
    let y: Vec<f32> = (0..n).map(|_| rng.f32()).collect();
    let px = d.alloc(&x);
    let py = d.alloc(&y);
    let a = 1.75f32;
    d.launch(
        "saxpy",
        [5, 1, 1],
        [96, 1, 1],
        0,
        &[arg(n as i32), arg(a), arg(px), arg(py)],
    )
    .unwrap();
    let got: Vec<f32> = d.read(py, n);
    for i in 0..n {
        // nvcc contracts a * x + y into one fma.
        assert_eq!(got[i], a.mul_add(x[i], y[i]), "element {i}");
    }
}

#[test]
fn grid_2d_3d() {
    let mut d = Dev::load("basic.ptx");
    let (w, h) = (21usize, 14usize);
    let out = d.zeros::<u32>(w * h);
    d.launch(
        "grid2d",
        [3, 4, 1],
        [8, 4, 1],
        0,
        &[arg(out), arg(w as i32), arg(h as i32)],
    )
    .unwrap();
    let got: Vec<u32> = d.read(out, w * h);
    for y in 0..h {
        for x in 0..w {
            assert_eq!(got[y * w + x], ((x as u32) << 16) ^ y as u32, "({x},{y})");
        }
    }
}

#[test]
fn special_registers() {
    let mut d = Dev::load("basic.ptx");
    let (grid, block) = ([2u32, 3, 2], [8u32, 3, 2]);
    let per_block = 48usize;
    let nblocks = 12usize;
    let out = d.zeros::<u32>(12 * per_block * nblocks);
    d.launch("specials", grid, block, 0, &[arg(out)]).unwrap();
    let got: Vec<u32> = d.read(out, 12 * per_block * nblocks);
    for bz in 0..2 {
        for by in 0..3 {
            for bx in 0..2 {
                let b = bx + 2 * (by + 3 * bz);
                for t in 0..per_block as u32 {
                    let (tx, ty, tz) = (t % 8, (t / 8) % 3, t / 24);
                    let o = &got[12 * (b * per_block + t as usize)..][..12];
                    let lane = t % 32;
                    assert_eq!(
                        o,
                        &[
                            tx,
                            ty,
                            tz,
                            bx as u32,
                            by as u32,
                            bz as u32,
                            80302,
                            20302,
                            lane,
                            t / 32,
                            (1u32 << lane) - 1,
                            1
                        ],
                        "block {b} thread {t}"
                    );
                }
            }
        }
    }
}

#[test]
fn struct_arguments_with_awkward_layouts() {
    let mut d = Dev::load("structs.ptx");
    let k = kernel_named(&d, "take_structs");
    let layout = d.module.kernel_params(&k).unwrap();
    assert_eq!(
        layout,
        vec![
            (0, 8),
            (8, 40),
            (48, 1),
            (64, 16),
            (80, 2),
            (82, 4),
            (88, 8),
            (96, 1)
        ]
    );
    let out = d.zeros::<f64>(17);
    let odd = arg_struct(
        40,
        &[
            (0, bytes(-3i8)),
            (8, bytes(2.5f64)),
            (16, bytes(-300i16)),
            (20, bytes(7i32)),
            (24, bytes(-8i32)),
            (28, bytes(9i32)),
            (32, bytes(250u8)),
        ],
    );
    let v3 = arg_struct(
        16,
        &[(0, bytes(1.5f32)), (4, bytes(-2.0f32)), (8, bytes(3.25f32))],
    );
    let small = arg_struct(
        4,
        &[(0, bytes(200u8)), (1, bytes(-5i8)), (2, bytes(60000u16))],
    );
    d.launch(
        &k,
        [1, 1, 1],
        [1, 1, 1],
        0,
        &[
            arg(out),
            odd,
            arg(255u8),
            v3,
            arg(-12345i16),
            small,
            arg(-(1i64 << 40)),
            arg(-100i8),
        ],
    )
    .unwrap();
    let got: Vec<f64> = d.read(out, 17);
    assert_eq!(
        got,
        vec![
            -3.0,
            2.5,
            -300.0,
            7.0,
            -8.0,
            9.0,
            250.0,
            255.0,
            1.5,
            -2.0,
            3.25,
            -12345.0,
            200.0,
            -5.0,
            60000.0,
            -(1i64 << 40) as f64,
            -100.0
        ]
    );

    let k = kernel_named(&d, "index_struct");
    let out = d.zeros::<i32>(8);
    let mut fields = Vec::new();
    for i in 0..8 {
        fields.push((i * 4, bytes(i as i32 * 10 - 3)));
    }
    d.launch(
        &k,
        [1, 1, 1],
        [8, 1, 1],
        0,
        &[arg(out), arg_struct(32, &fields), arg(7i32)],
    )
    .unwrap();
    let got: Vec<i32> = d.read(out, 8);
    for i in 0..8 {
        let want = if i < 7 {
            (((i * 5) & 7) as i32 * 10 - 3) * 3
        } else {
            0
        };
        assert_eq!(got[i], want, "element {i}");
    }
}

fn int_ref(x: i32, y: i32) -> [i32; 24] {
    let (ux, uy) = (x as u32, y as u32);
    let s = (y & 31) as u32;
    let ffs = if x == 0 {
        0
    } else {
        x.trailing_zeros() as i32 + 1
    };
    let perm = {
        let tmp = ((uy as u64) << 32) | ux as u64;
        let sel = 0x5140u32;
        let mut r = 0u32;
        for k in 0..4 {
            let n = (sel >> (4 * k)) & 7;
            r |= (((tmp >> (8 * n)) & 0xff) as u32) << (8 * k);
        }
        r as i32
    };
    let funnel = {
        let n = (y as u32) & 31;
        ((((uy as u64) << 32 | ux as u64) << n) >> 32) as u32 as i32
    };
    [
        x.wrapping_add(y),
        x.wrapping_sub(y),
        x.wrapping_mul(y),
        if y != 0 { x.wrapping_div(y) } else { 0 },
        if y != 0 { x.wrapping_rem(y) } else { 0 },
        ux.checked_div(uy).map_or(0, |q| q as i32),
        if uy != 0 { (ux % uy) as i32 } else { 0 },
        x >> s,
        (ux >> s) as i32,
        x.wrapping_shl(s),
        ((x as i64 * y as i64) >> 32) as i32,
        ((ux as u64 * uy as u64) >> 32) as i32,
        x.min(y),
        x.max(y),
        ux.min(uy) as i32,
        x.wrapping_abs(),
        ux.count_ones() as i32,
        x.leading_zeros() as i32,
        ux.reverse_bits() as i32,
        ffs,
        (x >> 3) & 0x1f,
        perm,
        funnel,
        (x as i8 as i32)
            .wrapping_add(y as u16 as i32)
            .wrapping_add((x as i64 - y as i64).unsigned_abs() as i32)
            .wrapping_add(1),
    ]
}

#[test]
fn integer_math() {
    let mut d = Dev::load("math.ptx");
    let mut rng = Rng(99);
    let mut a: Vec<i32> = vec![
        0,
        1,
        -1,
        i32::MIN,
        i32::MAX,
        7,
        -7,
        0x1234_5678,
        i32::MIN,
        100,
        -100,
        31,
    ];
    let mut b: Vec<i32> = vec![0, -1, -1, -1, 1, 3, 3, 5, 1, 0, 33, 32];
    for _ in 0..52 {
        a.push(rng.i32());
        b.push(if rng.next().is_multiple_of(4) {
            rng.i32() % 100
        } else {
            rng.i32()
        });
    }
    let n = a.len();
    let (pa, pb) = (d.alloc(&a), d.alloc(&b));
    let out = d.zeros::<i32>(24 * n);
    d.launch(
        "int_math",
        [2, 1, 1],
        [32, 1, 1],
        0,
        &[arg(pa), arg(pb), arg(out), arg(n as i32)],
    )
    .unwrap();
    let got: Vec<i32> = d.read(out, 24 * n);
    for i in 0..n {
        let want = int_ref(a[i], b[i]);
        for k in 0..24 {
            assert_eq!(
                got[24 * i + k],
                want[k],
                "output {k} for x={} y={}",
                a[i],
                b[i]
            );
        }
    }
}

#[test]
fn long_math() {
    let mut d = Dev::load("math.ptx");
    let mut rng = Rng(5);
    let mut a: Vec<i64> = vec![0, -1, i64::MIN, i64::MAX, 12345678901234, -5];
    let mut b: Vec<i64> = vec![0, -1, -1, 2, -77, 64];
    for _ in 0..26 {
        a.push(rng.next() as i64);
        b.push(if rng.next().is_multiple_of(3) {
            (rng.next() % 1000) as i64 - 500
        } else {
            rng.next() as i64
        });
    }
    let n = a.len();
    let (pa, pb) = (d.alloc(&a), d.alloc(&b));
    let out = d.zeros::<i64>(12 * n);
    d.launch(
        "long_math",
        [1, 1, 1],
        [64, 1, 1],
        0,
        &[arg(pa), arg(pb), arg(out), arg(n as i32)],
    )
    .unwrap();
    let got: Vec<i64> = d.read(out, 12 * n);
    for i in 0..n {
        let (x, y) = (a[i], b[i]);
        let (ux, uy) = (x as u64, y as u64);
        let s = (y & 63) as u32;
        let want = [
            x.wrapping_add(y),
            x.wrapping_mul(y),
            if y != 0 { x.wrapping_div(y) } else { 0 },
            if y != 0 { x.wrapping_rem(y) } else { 0 },
            ux.checked_div(uy).map_or(0, |q| q as i64),
            x >> s,
            (ux >> s) as i64,
            ((x as i128 * y as i128) >> 64) as i64,
            ((ux as u128 * uy as u128) >> 64) as i64,
            (ux.count_ones() + x.leading_zeros()) as i64,
            ux.reverse_bits() as i64,
            x.max(y) ^ (ux.min(uy) as i64),
        ];
        assert_eq!(&got[12 * i..12 * i + 12], &want, "x={x} y={y}");
    }
}

#[test]
fn float_math() {
    let mut d = Dev::load("math.ptx");
    let mut rng = Rng(11);
    let mut a: Vec<f32> = vec![0.0, -0.0, 1.0, -2.5, 3.5, 1e-40, f32::INFINITY, 100.7];
    let mut b: Vec<f32> = vec![0.0, 1.0, f32::NAN, 2.0, -0.5, 3.0, 2.0, -3.2];
    for _ in 0..56 {
        a.push(rng.f32());
        b.push(rng.f32());
    }
    let n = a.len();
    let (pa, pb) = (d.alloc(&a), d.alloc(&b));
    let out = d.zeros::<f32>(20 * n);
    d.launch(
        "float_math",
        [1, 1, 1],
        [64, 1, 1],
        0,
        &[arg(pa), arg(pb), arg(out), arg(n as i32)],
    )
    .unwrap();
    let got: Vec<f32> = d.read(out, 20 * n);
    for i in 0..n {
        let (x, y) = (a[i], b[i]);
        let g = &got[20 * i..20 * i + 20];
        let exact = [
            x + y,
            x * y,
            x / y,
            x.mul_add(y, 1.0),
            x.abs().sqrt(),
            if x.is_nan() {
                y
            } else if y.is_nan() {
                x
            } else {
                x.min(y)
            },
            if x.is_nan() {
                y
            } else if y.is_nan() {
                x
            } else {
                x.max(y)
            },
            x.floor(),
            x.ceil(),
            x.trunc(),
            x.round_ties_even(),
            (x as i32) as f32,
            (y.abs() as u32) as f32,
            x.abs().copysign(y),
        ];
        for k in 0..exact.len() {
            let ok = g[k] == exact[k] || (g[k].is_nan() && exact[k].is_nan());
            assert!(
                ok,
                "output {k} for x={x} y={y}: got {} want {}",
                g[k], exact[k]
            );
        }
        let approx = [
            (14, x / 3.0),
            (15, (x * 0.01).exp()),
            (16, (y.abs() + 1.0).ln()),
            (17, x.sin()),
            (18, y.cos()),
            (19, (x * 0.1).tanh()),
        ];
        for (k, want) in approx {
            let tol = if k == 17 || k == 18 { 2e-5 } else { 2e-6 };
            let abs_ok = (g[k] - want).abs() <= 2e-6;
            assert!(
                close(g[k] as f64, want as f64, tol) || abs_ok,
                "output {k} for x={x} y={y}: got {} want {want}",
                g[k]
            );
        }
    }
}

#[test]
fn double_math() {
    let mut d = Dev::load("math.ptx");
    let mut rng = Rng(12);
    let mut a: Vec<f64> = vec![0.0, -1.5, 2.5, 1e300, -7.25];
    let mut b: Vec<f64> = vec![1.0, 0.0, -2.0, 1e10, 3.0];
    for _ in 0..27 {
        a.push(rng.f32() as f64 * 1.37);
        b.push(rng.f32() as f64 * 0.91);
    }
    let n = a.len();
    let (pa, pb) = (d.alloc(&a), d.alloc(&b));
    let out = d.zeros::<f64>(12 * n);
    d.launch(
        "double_math",
        [1, 1, 1],
        [32, 1, 1],
        0,
        &[arg(pa), arg(pb), arg(out), arg(n as i32)],
    )
    .unwrap();
    let got: Vec<f64> = d.read(out, 12 * n);
    for i in 0..n {
        let (x, y) = (a[i], b[i]);
        let g = &got[12 * i..12 * i + 12];
        let exact = [
            x + y,
            x * y,
            x / y,
            x.mul_add(y, 1.0),
            x.abs().sqrt(),
            x.min(y),
            x.max(y),
            x.floor(),
            (x as i64) as f64,
            (y as f32) as f64,
        ];
        for k in 0..exact.len() {
            assert_eq!(g[k], exact[k], "output {k} for x={x} y={y}");
        }
        assert!(close(g[10], (x * 0.01).exp(), 1e-14), "exp of {x}");
        assert_eq!(
            g[11],
            ((x * 1.5).round_ties_even() as i32) as f64,
            "rn of {x}"
        );
    }
}

#[test]
fn half_math() {
    use half::{bf16, f16};
    let mut d = Dev::load("math.ptx");
    let a: Vec<f32> = vec![0.5, -1.25, 3.0, 100.0, 0.1, -7.5, 65504.0, 1e-3];
    let b: Vec<f32> = vec![2.0, 0.75, -3.0, 0.01, 0.2, -7.5, 2.0, 1e-3];
    let n = a.len();
    let (pa, pb) = (d.alloc(&a), d.alloc(&b));
    let out = d.zeros::<f32>(8 * n);
    d.launch(
        "half_math",
        [1, 1, 1],
        [32, 1, 1],
        0,
        &[arg(pa), arg(pb), arg(out), arg(n as i32)],
    )
    .unwrap();
    let got: Vec<f32> = d.read(out, 8 * n);
    for i in 0..n {
        let (x, y) = (f16::from_f32(a[i]), f16::from_f32(b[i]));
        let (bx, by) = (bf16::from_f32(a[i]), bf16::from_f32(b[i]));
        let h = |v: f32| f16::from_f32(v).to_f32();
        let bh = |v: f32| bf16::from_f32(v).to_f32();
        let (xf, yf) = (x.to_f32(), y.to_f32());
        let want = [
            h(xf + yf),
            h(xf * yf),
            h((xf as f64 * yf as f64 + 1.0) as f32),
            if xf < yf { 1.0 } else { 0.0 },
            bh(bx.to_f32() + by.to_f32()),
            bh(bx.to_f32() * by.to_f32()),
            h(xf * xf) + h(yf * yf),
        ];
        for k in 0..want.len() {
            assert_eq!(got[8 * i + k], want[k], "output {k} for {} {}", a[i], b[i]);
        }
        // Round toward zero: never larger in magnitude than the value.
        let rz = got[8 * i + 7];
        let v = a[i] * 3.3;
        if v.abs() > 65504.0 {
            assert_eq!(rz.abs(), 65504.0);
            continue;
        }
        assert!(
            rz.abs() <= v.abs() && (v - rz).abs() <= v.abs() * 1e-3 + 1e-7,
            "{rz} vs {v}"
        );
    }
}

fn fib(n: i64) -> i64 {
    if n < 2 {
        n
    } else {
        fib(n - 1) + fib(n - 2)
    }
}

fn sum_digits(n: i32, depth: i32) -> i32 {
    let buf: Vec<i32> = (0..8).map(|i| (n >> i) & 1).collect();
    let mut s = 0;
    for i in 0..8 {
        s += buf[((i * 3 + depth) & 7) as usize];
    }
    if depth > 0 && n > 0 {
        s += sum_digits(n / 2, depth - 1);
    }
    s
}

#[test]
fn device_functions_recursion_constants_globals() {
    let mut d = Dev::load("funcs.ptx");
    let names: Vec<_> = d.module.globals().iter().map(|g| g.name.clone()).collect();
    for want in ["coeffs", "scale", "counter", "table", "big_table"] {
        assert!(names.iter().any(|n| n == want), "{want} in {names:?}");
    }
    let coeffs: Vec<i32> = (0..16).map(|i| i * i - 5).collect();
    d.write_symbol("coeffs", &coeffs);
    let n = 70;
    let out = d.zeros::<i64>(6 * n);
    d.launch(
        "use_funcs",
        [1, 1, 1],
        [96, 1, 1],
        0,
        &[arg(out), arg(n as i32)],
    )
    .unwrap();
    let got: Vec<i64> = d.read(out, 6 * n);
    let table = [10i64, 20, 30, 40];
    let big = [1i64 << 40, 3, 5];
    for i in 0..n as i64 {
        let fact: i64 = (1..=(i % 20)).product::<i64>().max(1);
        let want = [
            fib(i % 16),
            fact,
            i * 2 + ((0.5 * i as f64 + 1.0) * 10.0) as i64,
            coeffs[(i & 15) as usize] as i64 * 10 + table[(i & 3) as usize],
            sum_digits((i * 37) as i32, (i % 5) as i32) as i64,
            big[(i % 3) as usize],
        ];
        assert_eq!(
            &got[6 * i as usize..6 * i as usize + 6],
            &want,
            "thread {i}"
        );
    }
    assert_eq!(d.read_symbol::<i32>("counter", 1), vec![n as i32]);
}

#[test]
fn tiled_matmul_with_shared_memory() {
    let mut d = Dev::load("matmul.ptx");
    let (m, n, k) = (37usize, 29usize, 45usize);
    let mut rng = Rng(3);
    let a: Vec<f32> = (0..m * k).map(|_| rng.f32() / 100.0).collect();
    let b: Vec<f32> = (0..k * n).map(|_| rng.f32() / 100.0).collect();
    let (pa, pb) = (d.alloc(&a), d.alloc(&b));
    let pc = d.zeros::<f32>(m * n);
    assert_eq!(d.module.kernel_info("matmul").unwrap().static_shared, 2048);
    d.launch(
        "matmul",
        [n.div_ceil(16) as u32, m.div_ceil(16) as u32, 1],
        [16, 16, 1],
        0,
        &[
            arg(pa),
            arg(pb),
            arg(pc),
            arg(m as i32),
            arg(n as i32),
            arg(k as i32),
        ],
    )
    .unwrap();
    let c: Vec<f32> = d.read(pc, m * n);
    for i in 0..m {
        for j in 0..n {
            let mut acc = 0.0f32;
            for t in 0..k {
                acc = a[i * k + t].mul_add(b[t * n + j], acc);
            }
            assert_eq!(c[i * n + j], acc, "C[{i}][{j}]");
        }
    }
}

#[test]
fn reduction_dynamic_shared_and_shuffles() {
    let mut d = Dev::load("reduce.ptx");
    let n = 100_000usize;
    let x: Vec<f32> = (0..n).map(|i| ((i * 7) % 13) as f32 - 6.0).collect();
    let px = d.alloc(&x);
    let blocks = 16;
    let out = d.zeros::<f32>(blocks);
    d.launch(
        "reduce_sum",
        [blocks as u32, 1, 1],
        [256, 1, 1],
        8 * 4,
        &[arg(px), arg(out), arg(n as i32)],
    )
    .unwrap();
    let got: Vec<f32> = d.read(out, blocks);
    let total: f32 = got.iter().sum();
    let want: f32 = x.iter().sum();
    assert_eq!(total, want);
    // Per block: the grid-stride partition.
    for b in 0..blocks {
        let s: f32 = (0..n)
            .filter(|i| (i / 256) % blocks == b)
            .map(|i| x[i])
            .sum();
        assert_eq!(got[b], s, "block {b}");
    }

    let m = 1000usize;
    let v: Vec<i32> = (0..m).map(|i| (i as i32 * 37) % 101 - 50).collect();
    let pv = d.alloc(&v);
    let grid = m.div_ceil(128);
    let sums = d.zeros::<i64>(grid);
    let pos = d.zeros::<i32>(grid);
    d.launch(
        "reduce_tree",
        [grid as u32, 1, 1],
        [128, 1, 1],
        128 * 8,
        &[arg(pv), arg(sums), arg(pos), arg(m as i32)],
    )
    .unwrap();
    let s: Vec<i64> = d.read(sums, grid);
    let p: Vec<i32> = d.read(pos, grid);
    for b in 0..grid {
        let chunk = &v[b * 128..((b + 1) * 128).min(m)];
        assert_eq!(
            s[b],
            chunk.iter().map(|&x| x as i64).sum::<i64>(),
            "block {b}"
        );
        assert_eq!(
            p[b],
            chunk.iter().filter(|&&x| x > 0).count() as i32,
            "block {b}"
        );
    }
}

#[test]
fn histogram_shared_and_global_atomics() {
    let mut d = Dev::load("histogram.ptx");
    let n = 200_000usize;
    let mut rng = Rng(17);
    let data: Vec<u8> = (0..n).map(|_| rng.next() as u8).collect();
    let pd = d.alloc(&data);
    let bins = d.zeros::<u32>(64);
    d.launch(
        "histogram",
        [24, 1, 1],
        [192, 1, 1],
        0,
        &[arg(pd), arg(n as i32), arg(bins)],
    )
    .unwrap();
    let got: Vec<u32> = d.read(bins, 64);
    let mut want = vec![0u32; 64];
    for &x in &data {
        want[(x % 64) as usize] += 1;
    }
    assert_eq!(got, want);
}

#[test]
fn atomics_under_contention() {
    let mut d = Dev::load("histogram.ptx");
    let (grid, block) = (16u32, 128u32);
    let threads = (grid * block) as i64;
    let i32s = d.alloc(&[0i32, 0, i32::MAX, i32::MIN, 0, 10]);
    let u32s = d.alloc(&[u32::MAX, 0, 0, 0, 0, 0]);
    let u64s = d.alloc(&[0u64, 0, u64::MAX]);
    let f32s = d.alloc(&[0.0f32]);
    let f64s = d.alloc(&[0.0f64]);
    let order = d.zeros::<i32>(threads as usize);
    d.launch(
        "atomics",
        [grid, 1, 1],
        [block, 1, 1],
        0,
        &[
            arg(i32s),
            arg(u32s),
            arg(u64s),
            arg(f32s),
            arg(f64s),
            arg(order),
        ],
    )
    .unwrap();
    let i: Vec<i32> = d.read(i32s, 6);
    assert_eq!(i[0], threads as i32);
    assert_eq!(i[1], -2 * threads as i32);
    assert_eq!(i[2], -1000);
    assert_eq!(i[3], threads as i32 - 1);
    assert_eq!(i[4], threads as i32);
    assert_eq!(i[5], 10 + 3 * threads as i32);
    let u: Vec<u32> = d.read(u32s, 6);
    assert_eq!(u[0], 0);
    assert_eq!(u[1], u32::MAX);
    assert_eq!(
        u[2], 0,
        "each bit of the low byte flipped an even number of times"
    );
    assert_eq!(u[3], (threads % 101) as u32);
    // dec from 0 wraps to 100 then counts down: after k calls, (100 - (k-1) % 101).
    assert_eq!(u[4], (100 - (threads - 1) % 101) as u32);
    assert_eq!(u[5], 7);
    let w: Vec<u64> = d.read(u64s, 3);
    assert_eq!(w[0], (threads * (threads - 1) / 2) as u64);
    assert_eq!(w[1], (threads as u64 - 1) * 1_000_000_000);
    assert_eq!(w[2], 5);
    assert_eq!(d.read::<f32>(f32s, 1)[0], 0.5 * threads as f32);
    assert_eq!(d.read::<f64>(f64s, 1)[0], 0.25 * threads as f64);
    let mut o: Vec<i32> = d.read(order, threads as usize);
    o.sort_unstable();
    assert_eq!(o, (0..threads as i32).collect::<Vec<_>>());

    let out = d.zeros::<i32>(3 * 8);
    d.launch("shared_atomics", [3, 1, 1], [96, 1, 1], 0, &[arg(out)])
        .unwrap();
    let got: Vec<i32> = d.read(out, 24);
    for b in 0..3 {
        let g = &got[b * 8..b * 8 + 8];
        assert_eq!(g[0], (0..96).sum::<i32>());
        assert_eq!(g[1], 95);
        assert_eq!(g[2], 0);
        assert_eq!(g[3], (0..96).fold(0, |acc, t| acc | 1 << (t % 31)));
        assert_eq!(g[4], (0..96).fold(0, |acc, t| acc ^ t));
        assert!((1..=96).contains(&g[5]), "CAS winner {}", g[5]);
        assert_eq!(g[6], 96 % 10);
        assert_eq!(g[7], (0..96).sum::<i32>());
    }
}

#[test]
fn votes_ballots_matches() {
    let mut d = Dev::load("warp.ptx");
    let n = 96usize;
    let v: Vec<i32> = (0..n as i32)
        .map(|i| match i {
            32..=63 => 7,
            _ => (i * 13) % 11 - 3,
        })
        .collect();
    let pv = d.alloc(&v);
    let out = d.zeros::<u32>(8 * n);
    d.launch("votes", [1, 1, 1], [96, 1, 1], 0, &[arg(pv), arg(out)])
        .unwrap();
    let got: Vec<u32> = d.read(out, 8 * n);
    for w in 0..3 {
        let lanes = &v[w * 32..w * 32 + 32];
        let ballot = lanes
            .iter()
            .enumerate()
            .fold(0u32, |m, (l, &x)| m | (u32::from(x > 0) << l));
        let odd_ballot = ballot & 0xaaaa_aaaa;
        for l in 0..32 {
            let t = w * 32 + l;
            let o = &got[8 * t..8 * t + 8];
            let same = lanes
                .iter()
                .enumerate()
                .fold(0u32, |m, (k, &x)| m | (u32::from(x == lanes[l]) << k));
            let all_parity = lanes.iter().all(|&x| (x & 1) == (lanes[0] & 1));
            assert_eq!(o[0], ballot, "ballot t={t}");
            assert_eq!(o[1], u32::from(lanes.iter().all(|&x| x > 0)), "all t={t}");
            assert_eq!(o[2], u32::from(lanes.iter().any(|&x| x > 5)), "any t={t}");
            assert_eq!(o[3], same, "match.any t={t}");
            assert_eq!(
                o[4],
                if all_parity { u32::MAX } else { 0 },
                "match.all t={t}"
            );
            assert_eq!(o[5], u32::from(all_parity), "match.all pred t={t}");
            assert_eq!(o[6], u32::MAX, "activemask t={t}");
            let div = if l % 2 == 1 {
                odd_ballot ^ 0xaaaa_aaaa
            } else {
                0x5555_5555
            };
            assert_eq!(o[7], div, "divergent ballot t={t}");
        }
    }
}

#[test]
fn shuffles_with_width_and_divergence() {
    let mut d = Dev::load("warp.ptx");
    for width in [32i32, 16, 8, 4] {
        let n = 64usize;
        let v: Vec<i32> = (0..n as i32).map(|i| i * 3 + 100).collect();
        let pv = d.alloc(&v);
        let out = d.zeros::<i32>(6 * n);
        d.launch(
            "shuffles",
            [1, 1, 1],
            [64, 1, 1],
            0,
            &[arg(pv), arg(out), arg(width)],
        )
        .unwrap();
        let got: Vec<i32> = d.read(out, 6 * n);
        let w = width as usize;
        for t in 0..n {
            let base = t / 32 * 32;
            let lane = t % 32;
            let seg = lane / w * w;
            let val = |l: usize| v[base + l];
            let up = if lane - seg >= 3 {
                val(lane - 3)
            } else {
                val(lane)
            };
            let down = if lane + 5 < seg + w {
                val(lane + 5)
            } else {
                val(lane)
            };
            let x = lane ^ 6;
            let bfly = if x < seg + w { val(x) } else { val(lane) };
            let idx = val(seg + (lane + 1) % w);
            let o = &got[6 * t..6 * t + 6];
            assert_eq!(o[0], val((lane * 7) & 31), "idx t={t}");
            assert_eq!(o[1], up, "up t={t} width={w}");
            assert_eq!(o[2], down, "down t={t} width={w}");
            assert_eq!(o[3], bfly, "bfly t={t} width={w}");
            assert_eq!(o[4], idx, "idx+1 t={t} width={w}");
            let div = if lane < 16 { val(lane ^ 1) * 2 } else { -1 };
            assert_eq!(o[5], div, "divergent t={t}");
        }
    }
}

#[test]
fn warp_misc_64bit_shuffles_reductions_reconvergence() {
    let mut d = Dev::load("warp.ptx");
    let n = 64usize;
    let v: Vec<i64> = (0..n as i64).map(|i| i * 1_000_000_007 - 5).collect();
    let pv = d.alloc(&v);
    let out = d.zeros::<i64>(5 * n);
    d.launch("warp_misc", [1, 1, 1], [64, 1, 1], 0, &[arg(pv), arg(out)])
        .unwrap();
    let got: Vec<i64> = d.read(out, 5 * n);
    for t in 0..n {
        let base = t / 32 * 32;
        let lane = t % 32;
        let acc = |l: usize| -> i64 { (0..(l as i64 & 7)).map(|i| v[base + l] * i).sum() };
        let down = if lane + 1 < 32 { v[t + 1] } else { v[t] };
        let bf = lane ^ 2;
        let m = (0..32).fold(0u32, |m, k| {
            m | (u32::from(v[base + k] % 3 == v[t] % 3) << k)
        });
        let o = &got[5 * t..5 * t + 5];
        assert_eq!(o[0], down, "t={t}");
        assert_eq!(o[1], (v[base + bf] as f64 * 0.5) as i64, "t={t}");
        assert_eq!(
            o[2],
            (0..32).map(|k| (base + k) as i64).sum::<i64>(),
            "t={t}"
        );
        assert_eq!(o[3], acc(31 - lane), "t={t}");
        assert_eq!(o[4], m as i64, "t={t}");
    }
}

#[test]
fn half_atomics_and_cp_async() {
    use half::f16;
    let mut d = Dev::load("async_half.ptx");
    let h = d.alloc(&[0u16, 0]);
    let h2 = d.alloc(&[0u16, 0]);
    let src: Vec<f32> = (0..128).map(|i| i as f32).collect();
    let ps = d.alloc(&src);
    let dst = d.zeros::<f32>(64);
    d.launch(
        "half_atomics_and_cp_async",
        [2, 1, 1],
        [32, 1, 1],
        0,
        &[arg(h), arg(h2), arg(dst), arg(ps)],
    )
    .unwrap();
    assert_eq!(f16::from_bits(d.read::<u16>(h, 1)[0]).to_f32(), 64.0);
    let v: Vec<u16> = d.read(h2, 2);
    // __floats2half2_rn(1, 2): low half 1, high half 2.
    assert_eq!(f16::from_bits(v[0]).to_f32(), 64.0);
    assert_eq!(f16::from_bits(v[1]).to_f32(), 128.0);
    let got: Vec<f32> = d.read(dst, 64);
    for b in 0..2 {
        for t in 0..32 {
            assert_eq!(got[b * 32 + t], src[(31 - t) * 4] + src[t * 4 + 3], "t {t}");
        }
    }
}

#[test]
fn cub_and_cooperative_groups() {
    let mut d = Dev::load("libraries.ptx");
    // CUB block scan and reduce.
    let v: Vec<i32> = (0..256).map(|i| (i * 31) % 17 - 8).collect();
    let pin = d.alloc(&v);
    let out = d.zeros::<i32>(256);
    d.launch("scan", [2, 1, 1], [128, 1, 1], 0, &[arg(pin), arg(out)])
        .unwrap();
    let got: Vec<i32> = d.read(out, 256);
    for b in 0..2 {
        let blk = &v[b * 128..(b + 1) * 128];
        let total: i32 = blk.iter().sum();
        let mut run = 0;
        for t in 0..128 {
            let want = run + if t == 0 { total } else { 0 };
            assert_eq!(got[b * 128 + t], want, "block {b} t {t}");
            run += blk[t];
        }
    }
    // Cooperative-groups tiles: warp sum, max over tiles of 4, shfl, rank.
    let f: Vec<f32> = (0..64).map(|i| ((i * 7) % 23) as f32).collect();
    let pf = d.alloc(&f);
    let of = d.zeros::<f32>(64);
    d.launch("groups", [1, 1, 1], [64, 1, 1], 0, &[arg(pf), arg(of)])
        .unwrap();
    let got: Vec<f32> = d.read(of, 64);
    for t in 0..64 {
        let w = t / 32 * 32;
        let s: f32 = f[w..w + 32].iter().sum();
        let q = t / 4 * 4;
        let m = f[q..q + 4].iter().cloned().fold(f32::MIN, f32::max);
        assert_eq!(got[t], s + m + f[w + 3] + (t % 4) as f32, "t {t}");
    }
    // A virtual call.
    let ov = d.zeros::<f32>(32);
    d.launch("virt", [1, 1, 1], [32, 1, 1], 0, &[arg(ov)])
        .unwrap();
    let got: Vec<f32> = d.read(ov, 32);
    assert_eq!(got, (0..32).map(|t| (t * t) as f32).collect::<Vec<_>>());
    // CUB block radix sort: 64 threads x 4 keys.
    let mut rng = Rng(42);
    let keys: Vec<i32> = (0..256)
        .map(|_| (rng.next() % 100_000) as i32 - 50_000)
        .collect();
    let pk = d.alloc(&keys);
    d.launch("sorted", [1, 1, 1], [64, 1, 1], 0, &[arg(pk)])
        .unwrap();
    let mut want = keys.clone();
    want.sort_unstable();
    assert_eq!(d.read::<i32>(pk, 256), want);
}
