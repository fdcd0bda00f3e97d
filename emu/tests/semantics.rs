//! Instruction semantics on hand-written PTX: each test thread reads four
//! 64-bit inputs (%rd0..%rd3) and writes four outputs (%rd4..%rd7).

mod common;

use common::*;
use rcud_emu::kernel::KernelError;

fn kernel(body: &str) -> String {
    format!(
        r#"
.version 9.5
.target sm_80
.address_size 64

.visible .entry t(.param .u64 pin, .param .u64 pout)
{{
	.reg .pred %p<16>;
	.reg .b16 %h<16>;
	.reg .b32 %r<32>;
	.reg .b64 %rd<32>;
	.reg .f32 %f<16>;
	.reg .f64 %fd<16>;
	.shared .align 16 .b8 sbuf[1024];

	ld.param.u64 %rd30, [pin];
	ld.param.u64 %rd31, [pout];
	mov.u32 %r31, %tid.x;
	mul.wide.u32 %rd29, %r31, 32;
	add.s64 %rd30, %rd30, %rd29;
	add.s64 %rd31, %rd31, %rd29;
	ld.global.u64 %rd0, [%rd30];
	ld.global.u64 %rd1, [%rd30+8];
	ld.global.u64 %rd2, [%rd30+16];
	ld.global.u64 %rd3, [%rd30+24];
	mov.u64 %rd4, 0;
	mov.u64 %rd5, 0;
	mov.u64 %rd6, 0;
	mov.u64 %rd7, 0;
{body}
	st.global.u64 [%rd31], %rd4;
	st.global.u64 [%rd31+8], %rd5;
	st.global.u64 [%rd31+16], %rd6;
	st.global.u64 [%rd31+24], %rd7;
	ret;
}}
"#
    )
}

/// Runs `body` once per input row (one thread each, one block).
fn run(body: &str, rows: &[[u64; 4]]) -> Vec<[u64; 4]> {
    try_run(body, rows).unwrap()
}

fn try_run(body: &str, rows: &[[u64; 4]]) -> Result<Vec<[u64; 4]>, KernelError> {
    let mut d = Dev::from_text(&kernel(body));
    if let Some(e) = d.module.errors().next() {
        panic!("{e}");
    }
    let flat: Vec<u64> = rows.iter().flatten().copied().collect();
    let pin = d.alloc(&flat);
    let pout = d.zeros::<u64>(flat.len());
    d.launch(
        "t",
        [1, 1, 1],
        [rows.len() as u32, 1, 1],
        0,
        &[arg(pin), arg(pout)],
    )?;
    let out: Vec<u64> = d.read(pout, flat.len());
    Ok(out.chunks(4).map(|c| [c[0], c[1], c[2], c[3]]).collect())
}

fn f32b(x: f32) -> u64 {
    u64::from(x.to_bits())
}

fn f32v(x: u64) -> f32 {
    f32::from_bits(x as u32)
}

#[test]
fn carry_chains_are_128_bit_arithmetic() {
    let body = "
	add.cc.u64 %rd4, %rd0, %rd2;
	addc.u64 %rd5, %rd1, %rd3;
	sub.cc.u64 %rd6, %rd0, %rd2;
	subc.u64 %rd7, %rd1, %rd3;
";
    let rows = [
        [u64::MAX, 0, 1, 0],
        [u64::MAX, u64::MAX, 1, 0],
        [0, 5, 1, 2],
        [0x8000_0000_0000_0000, 1, 0x8000_0000_0000_0000, 2],
        [123, 456, 789, 1011],
    ];
    for (row, out) in rows.iter().zip(run(body, &rows)) {
        let a = (row[1] as u128) << 64 | row[0] as u128;
        let b = (row[3] as u128) << 64 | row[2] as u128;
        let s = a.wrapping_add(b);
        let d = a.wrapping_sub(b);
        assert_eq!(
            out,
            [s as u64, (s >> 64) as u64, d as u64, (d >> 64) as u64],
            "{row:?}"
        );
    }
    // 32-bit carries and mad.cc.
    let body = "
	mov.b64 {%r0, %r1}, %rd0;
	mov.b64 {%r2, %r3}, %rd1;
	add.cc.u32 %r4, %r0, %r2;
	addc.cc.u32 %r5, %r1, %r3;
	addc.u32 %r6, 0, 0;
	mov.b64 %rd4, {%r4, %r5};
	cvt.u64.u32 %rd5, %r6;
	mad.lo.cc.u32 %r7, %r0, %r2, %r1;
	madc.hi.u32 %r8, %r0, %r2, 0;
	mov.b64 %rd6, {%r7, %r8};
";
    let rows = [
        [u64::MAX, 1, 0, 0],
        [0xFFFF_FFFF_0000_0001, 0x0000_0001_FFFF_FFFF, 0, 0],
        [0x1234_5678_9abc_def0, 0xfedc_ba98_7654_3210, 0, 0],
    ];
    for (row, out) in rows.iter().zip(run(body, &rows)) {
        let (a, b) = (row[0], row[1]);
        let s = a as u128 + b as u128;
        assert_eq!(out[0], s as u64, "{row:?}");
        assert_eq!(out[1], (s >> 64) as u64, "{row:?}");
        let (a0, a1, b0) = (a as u32 as u64, (a >> 32) as u32 as u64, b as u32 as u64);
        let lo = (a0 * b0) as u32 as u64 + a1;
        let hi = ((a0 * b0) >> 32) + (lo >> 32);
        assert_eq!(
            out[2],
            (lo as u32 as u64) | ((hi as u32 as u64) << 32),
            "{row:?}"
        );
    }
}

#[test]
fn multiply_variants() {
    let body = "
	mul.hi.u64 %rd4, %rd0, %rd1;
	mul.hi.s64 %rd5, %rd0, %rd1;
	mov.b64 {%r0, %r1}, %rd0;
	mov.b64 {%r2, %r3}, %rd1;
	mad.wide.s32 %rd6, %r0, %r2, %rd2;
	mul24.lo.u32 %r4, %r0, %r2;
	mad.hi.s32 %r5, %r0, %r2, %r1;
	mov.b64 %rd7, {%r4, %r5};
";
    let rows = [
        [u64::MAX, u64::MAX, 5, 0],
        [(-3i64) as u64, 7, u64::MAX, 0],
        [0x0123_4567_89ab_cdef, 0xfedc_ba98_7654_3210, 1 << 40, 0],
    ];
    for (row, out) in rows.iter().zip(run(body, &rows)) {
        let (a, b) = (row[0], row[1]);
        assert_eq!(out[0], ((a as u128 * b as u128) >> 64) as u64);
        assert_eq!(out[1], ((a as i64 as i128 * b as i64 as i128) >> 64) as u64);
        let (a0, b0) = (a as u32 as i32 as i64, b as u32 as i32 as i64);
        assert_eq!(out[2], (a0 * b0).wrapping_add(row[2] as i64) as u64);
        let m24 = ((a as u32 & 0xFF_FFFF) as u64 * (b as u32 & 0xFF_FFFF) as u64) as u32;
        let mh = (((a0 * b0) >> 32) as i32).wrapping_add((a >> 32) as u32 as i32);
        assert_eq!(out[3], m24 as u64 | ((mh as u32 as u64) << 32));
    }
}

const CMPS: [&str; 14] = [
    "eq", "ne", "lt", "le", "gt", "ge", "equ", "neu", "ltu", "leu", "gtu", "geu", "num", "nan",
];

#[test]
fn float_comparisons_ordered_and_unordered() {
    let mut body = String::from("\tmov.b64 {%r0, %r1}, %rd0;\n\tmov.b32 %f0, %r0;\n\tmov.b32 %f1, %r1;\n\tmov.u32 %r2, 0;\n");
    for (k, c) in CMPS.iter().enumerate() {
        body += &format!(
            "\tsetp.{c}.f32 %p1, %f0, %f1;\n\tselp.u32 %r3, 1, 0, %p1;\n\tshl.b32 %r3, %r3, {k};\n\tor.b32 %r2, %r2, %r3;\n"
        );
    }
    // Combining forms: p = (a < b) AND q, np = !(a < b) AND q, with q = a == a.
    body += "\tsetp.num.f32 %p2, %f0, %f0;\n\tsetp.lt.and.f32 %p3|%p4, %f0, %f1, %p2;\n";
    body += "\tselp.u32 %r4, 1, 0, %p3;\n\tselp.u32 %r5, 2, 0, %p4;\n\tor.b32 %r4, %r4, %r5;\n";
    body += "\tsetp.gt.or.f32 %p5, %f0, %f1, !%p2;\n\tselp.u32 %r6, 4, 0, %p5;\n\tor.b32 %r4, %r4, %r6;\n";
    body += "\tcvt.u64.u32 %rd4, %r2;\n\tcvt.u64.u32 %rd5, %r4;\n";
    let vals = [0.0f32, -0.0, 1.0, -1.0, f32::NAN, f32::INFINITY];
    let mut rows = Vec::new();
    for &a in &vals {
        for &b in &vals {
            rows.push([f32b(a) | f32b(b) << 32, 0, 0, 0]);
        }
    }
    let out = run(&body, &rows);
    for (row, o) in rows.iter().zip(out) {
        let (a, b) = (f32v(row[0]), f32v(row[0] >> 32));
        let nan = a.is_nan() || b.is_nan();
        let want = [
            a == b,
            !nan && a != b,
            a < b,
            a <= b,
            a > b,
            a >= b,
            nan || a == b,
            nan || a != b,
            nan || a < b,
            nan || a <= b,
            nan || a > b,
            nan || a >= b,
            !nan,
            nan,
        ];
        let mask = want
            .iter()
            .enumerate()
            .fold(0u64, |m, (k, &w)| m | (u64::from(w) << k));
        assert_eq!(o[0], mask, "{a} vs {b}");
        let q = !a.is_nan();
        let lt = a < b;
        let comb = u64::from(lt && q) | u64::from(!lt && q) << 1 | u64::from(a > b || !q) << 2;
        assert_eq!(o[1], comb, "{a} vs {b}");
    }
}

#[test]
fn float_min_max_division_and_classes() {
    let body = "
	mov.b64 {%r0, %r1}, %rd0;
	mov.b32 %f0, %r0;
	mov.b32 %f1, %r1;
	min.f32 %f2, %f0, %f1;
	max.f32 %f3, %f0, %f1;
	mov.b32 %r2, %f2;
	mov.b32 %r3, %f3;
	mov.b64 %rd4, {%r2, %r3};
	min.NaN.f32 %f4, %f0, %f1;
	div.rn.f32 %f5, %f0, %f1;
	mov.b32 %r4, %f4;
	mov.b32 %r5, %f5;
	mov.b64 %rd5, {%r4, %r5};
	testp.notanumber.f32 %p1, %f0;
	testp.infinite.f32 %p2, %f0;
	testp.subnormal.f32 %p3, %f0;
	testp.normal.f32 %p4, %f0;
	selp.u32 %r6, 1, 0, %p1;
	selp.u32 %r7, 2, 0, %p2;
	selp.u32 %r8, 4, 0, %p3;
	selp.u32 %r9, 8, 0, %p4;
	or.b32 %r6, %r6, %r7;
	or.b32 %r6, %r6, %r8;
	or.b32 %r6, %r6, %r9;
	cvt.u64.u32 %rd6, %r6;
	add.rz.f32 %f6, %f0, %f1;
	fma.rm.f32 %f7, %f0, %f1, %f0;
	mov.b32 %r10, %f6;
	mov.b32 %r11, %f7;
	mov.b64 %rd7, {%r10, %r11};
";
    let pairs = [
        (1.0f32, f32::NAN),
        (f32::NAN, -2.0),
        (0.0, -0.0),
        (-0.0, 0.0),
        (1.0, 0.0),
        (0.0, 0.0),
        (1e-40, 3.0),
        (f32::INFINITY, 1.0),
        (1.0, 1e-30),
    ];
    let rows: Vec<[u64; 4]> = pairs
        .iter()
        .map(|&(a, b)| [f32b(a) | f32b(b) << 32, 0, 0, 0])
        .collect();
    for (&(a, b), o) in pairs.iter().zip(run(body, &rows)) {
        let (mn, mx) = (f32v(o[0]), f32v(o[0] >> 32));
        if a.is_nan() || b.is_nan() {
            let other = if a.is_nan() { b } else { a };
            assert_eq!(mn, other);
            assert_eq!(mx, other);
            assert!(f32v(o[1]).is_nan(), "min.NaN");
        } else {
            assert_eq!(mn, a.min(b));
            assert_eq!(mx, a.max(b));
            if a == 0.0 && b == 0.0 && a.is_sign_negative() != b.is_sign_negative() {
                assert!(
                    mn.is_sign_negative() && mx.is_sign_positive(),
                    "signed zeros"
                );
            }
        }
        let q = f32v(o[1] >> 32);
        assert!(q == a / b || (q.is_nan() && (a / b).is_nan()), "{a}/{b}");
        let class = u64::from(a.is_nan())
            | u64::from(a.is_infinite()) << 1
            | u64::from(a.is_subnormal()) << 2
            | u64::from(a.is_normal()) << 3;
        assert_eq!(o[2], class, "class of {a}");
        if a == 1.0 && b == 1e-30 {
            assert_eq!(f32v(o[3]), 1.0, "add.rz keeps 1");
        }
        if a.is_finite() && b.is_finite() {
            let exact = a as f64 * b as f64 + a as f64;
            assert!(f32v(o[3] >> 32) as f64 <= exact, "fma.rm rounds down");
        }
    }
}

#[test]
fn conversions_round_and_saturate() {
    let body = "
	mov.b64 {%r0, %r1}, %rd0;
	mov.b32 %f0, %r0;
	cvt.rni.s32.f32 %r2, %f0;
	cvt.rzi.s32.f32 %r3, %f0;
	mov.b64 %rd4, {%r2, %r3};
	cvt.rmi.s32.f32 %r4, %f0;
	cvt.rpi.s32.f32 %r5, %f0;
	mov.b64 %rd5, {%r4, %r5};
	cvt.sat.u8.s32 %h0, %r1;
	cvt.u32.u8 %r6, %h0;
	cvt.rzi.u32.f32 %r7, %f0;
	mov.b64 %rd6, {%r6, %r7};
	cvt.rn.f16.f32 %h1, %f0;
	cvt.f32.f16 %f1, %h1;
	cvt.s8.s32 %h2, %r1;
	cvt.s32.s8 %r9, %h2;
	mov.b32 %r8, %f1;
	mov.b64 %rd7, {%r8, %r9};
";
    let cases: [(f32, i32); 8] = [
        (2.5, 300),
        (-2.5, -5),
        (1.7, 255),
        (-1.2, 128),
        (3e9, -129),
        (f32::NAN, 0x1ff),
        (-3e9, 127),
        (65519.0, -1),
    ];
    let rows: Vec<[u64; 4]> = cases
        .iter()
        .map(|&(f, i)| [f32b(f) | (i as u32 as u64) << 32, 0, 0, 0])
        .collect();
    for (&(f, i), o) in cases.iter().zip(run(body, &rows)) {
        let sat = |x: f32| -> i32 {
            if x.is_nan() {
                0
            } else {
                x as i32
            }
        };
        assert_eq!(o[0] as u32 as i32, sat(f.round_ties_even()), "rni {f}");
        assert_eq!((o[0] >> 32) as u32 as i32, sat(f.trunc()), "rzi {f}");
        assert_eq!(o[1] as u32 as i32, sat(f.floor()), "rmi {f}");
        assert_eq!((o[1] >> 32) as u32 as i32, sat(f.ceil()), "rpi {f}");
        assert_eq!(o[2] as u32, i.clamp(0, 255) as u32, "sat u8 {i}");
        assert_eq!(
            (o[2] >> 32) as u32,
            if f.is_nan() { 0 } else { f as u32 },
            "u32 {f}"
        );
        let h = half::f16::from_f32(f).to_f32();
        let got = f32v(o[3]);
        assert!(got == h || (got.is_nan() && h.is_nan()), "f16 {f}: {got}");
        assert_eq!((o[3] >> 32) as u32 as i32, i as i8 as i32, "s8 {i}");
    }
}

#[test]
fn bit_manipulation() {
    let body = "
	mov.b64 {%r0, %r1}, %rd0;
	bfe.s32 %r2, %r0, 4, 8;
	bfe.u32 %r3, %r0, 4, 8;
	mov.b64 %rd4, {%r2, %r3};
	bfi.b32 %r4, %r1, %r0, 8, 12;
	prmt.b32 %r5, %r0, %r1, 0x7351;
	mov.b64 %rd5, {%r4, %r5};
	brev.b32 %r6, %r0;
	bfind.s32 %r7, %r0;
	mov.b64 %rd6, {%r6, %r7};
	shr.s32 %r8, %r0, 40;
	shl.b32 %r9, %r0, 33;
	mov.b64 %rd7, {%r8, %r9};
";
    let rows = [
        [0x0000_0F80_u64 | 0x1234_5678 << 32, 0, 0, 0],
        [0x8000_0ABC_u64 | 0xFFFF_FFFF << 32, 0, 0, 0],
        [0x7FFF_FFFF_u64, 0, 0, 0],
    ];
    for (row, o) in rows.iter().zip(run(body, &rows)) {
        let (a, b) = (row[0] as u32, (row[0] >> 32) as u32);
        let field = (a >> 4) & 0xff;
        let sfield = ((field << 24) as i32 >> 24) as u32;
        assert_eq!(o[0], sfield as u64 | (field as u64) << 32, "bfe {a:#x}");
        let m = 0xFFFu32 << 8;
        let bfi = (a & !m) | ((b << 8) & m);
        let tmp = (b as u64) << 32 | a as u64;
        let byte = |i: u64| ((tmp >> (8 * i)) & 0xff) as u32;
        let prmt = byte(1) | byte(5) << 8 | byte(3) << 16 | byte(7) << 24;
        assert_eq!(
            o[1],
            bfi as u64 | (prmt as u64) << 32,
            "bfi/prmt {a:#x} {b:#x}"
        );
        let bfind = if (a as i32) < 0 {
            31 - (!a).leading_zeros()
        } else {
            31 - a.leading_zeros()
        };
        assert_eq!(
            o[2],
            a.reverse_bits() as u64 | (bfind as u64) << 32,
            "brev/bfind {a:#x}"
        );
        let sh = ((a as i32) >> 31) as u32;
        assert_eq!(o[3], sh as u64, "oversized shifts {a:#x}");
    }
}

#[test]
fn warp_votes_and_shuffles_under_predicates() {
    let body = "
	mov.u32 %r0, %laneid;
	and.b32 %r1, %r0, 3;
	setp.eq.u32 %p1, %r1, 0;
	setp.lt.u32 %p2, %r0, 20;
	mov.u32 %r2, 0;
	@%p2 vote.sync.ballot.b32 %r2, %p1, 0xfffff;
	vote.sync.uni.pred %p3, %p2, -1;
	selp.u32 %r3, 1, 0, %p3;
	vote.sync.uni.pred %p4, %p1, -1;
	selp.u32 %r4, 1, 0, %p4;
	@%p1 vote.sync.uni.pred %p5, %p1, -1;
	@!%p1 setp.eq.u32 %p5, 1, 0;
	selp.u32 %r5, 1, 0, %p5;
	mov.b64 %rd4, {%r2, %r3};
	mov.b64 %rd5, {%r4, %r5};
	shfl.sync.idx.b32 %r6|%p6, %r0, 40, 0x1f, -1;
	selp.u32 %r7, 1, 0, %p6;
	mov.b64 %rd6, {%r6, %r7};
	shfl.sync.up.b32 %r8|%p7, %r0, 1, 0x0, -1;
	selp.u32 %r9, 1, 0, %p7;
	mov.b64 %rd7, {%r8, %r9};
";
    let rows = vec![[0u64; 4]; 32];
    let out = run(body, &rows);
    let ballot: u32 = (0..20).filter(|l| l % 4 == 0).fold(0, |m, l| m | 1 << l);
    for (l, o) in out.iter().enumerate() {
        let l = l as u32;
        let b = if l < 20 { ballot } else { 0 };
        assert_eq!(o[0], b as u64, "ballot under guard, lane {l}");
        assert_eq!(o[0] >> 32, 0, "uni of a split predicate, lane {l}");
        assert_eq!(o[1] & 0xffff_ffff, 0, "uni of a split predicate, lane {l}");
        assert_eq!(
            o[1] >> 32,
            u64::from(l.is_multiple_of(4)),
            "uni among guarded lanes, lane {l}"
        );
        // idx 40 wraps to lane 8 of the warp (40 & 31).
        assert_eq!(o[2], 8 | 1 << 32, "shfl idx lane {l}");
        assert_eq!(
            o[3],
            if l == 0 { 0 } else { (l - 1) as u64 | 1 << 32 },
            "up lane {l}"
        );
    }
}

#[test]
fn generic_addresses_of_shared_and_local() {
    let body = "
	mov.u64 %rd8, sbuf;
	cvta.shared.u64 %rd9, %rd8;
	mov.u32 %r0, %tid.x;
	mul.wide.u32 %rd10, %r0, 8;
	add.s64 %rd11, %rd9, %rd10;
	st.u64 [%rd11], %rd0;
	bar.sync 0;
	ld.shared.u64 %rd4, [%rd10+8];
	isspacep.shared %p1, %rd11;
	isspacep.global %p2, %rd11;
	isspacep.global %p3, %rd30;
	selp.u32 %r1, 1, 0, %p1;
	selp.u32 %r2, 2, 0, %p2;
	selp.u32 %r3, 4, 0, %p3;
	or.b32 %r1, %r1, %r2;
	or.b32 %r1, %r1, %r3;
	cvt.u64.u32 %rd5, %r1;
	cvta.to.shared.u64 %rd6, %rd11;
	sub.s64 %rd6, %rd6, %rd10;
";
    let rows: Vec<[u64; 4]> = (0..33u64).map(|i| [i * 11, 0, 0, 0]).collect();
    let out = run(body, &rows);
    for (i, o) in out.iter().enumerate() {
        let next = if i < 32 { (i as u64 + 1) * 11 } else { 0 };
        assert_eq!(o[0], next, "neighbour of {i}");
        assert_eq!(o[1], 1 | 4, "space tests of {i}");
        assert_eq!(o[2], 0, "shared offset round trip of {i}");
    }
}

#[test]
fn misaligned_and_bad_generic_accesses() {
    let err = try_run("\tld.global.u32 %r0, [%rd30+2];\n", &[[0; 4]]).unwrap_err();
    assert!(matches!(err, KernelError::MisalignedAddress(_)), "{err}");
    let err = try_run(
        "\tld.global.v4.u32 {%r0, %r1, %r2, %r3}, [%rd30+8];\n",
        &[[0; 4]],
    )
    .unwrap_err();
    assert!(matches!(err, KernelError::MisalignedAddress(_)), "{err}");
    let err = try_run("\tst.shared.u32 [1024], %r0;\n", &[[0; 4]]).unwrap_err();
    assert!(
        matches!(&err, KernelError::IllegalAddress(f) if f.space == "shared"),
        "{err}"
    );
    let err = try_run(
        "\tld.u32 %r0, [%rd0];\n",
        &[[0xFFFF_0000_0000_0000, 0, 0, 0]],
    )
    .unwrap_err();
    assert!(
        matches!(&err, KernelError::IllegalAddress(f) if f.space == "generic"),
        "{err}"
    );
    let err = try_run("\tld.local.u32 %r0, [0];\n", &[[0; 4]]).unwrap_err();
    assert!(
        matches!(&err, KernelError::IllegalAddress(f) if f.space == "local"),
        "{err}"
    );
}

#[test]
fn exit_in_divergent_code_then_barrier() {
    let body = "
	mov.u32 %r0, %tid.x;
	setp.gt.u32 %p1, %r0, 40;
	@%p1 bra DONE;
	and.b32 %r1, %r0, 1;
	setp.eq.u32 %p2, %r1, 1;
	@%p2 exit;
	bar.sync 0;
	activemask.b32 %r2;
	cvt.u64.u32 %rd4, %r2;
DONE:
	mov.u64 %rd5, 77;
";
    let rows = vec![[0u64; 4]; 64];
    let out = run(body, &rows);
    for (t, o) in out.iter().enumerate() {
        if t > 40 {
            assert_eq!(o[..2], [0, 77], "t {t}");
        } else if t % 2 == 1 {
            assert_eq!(o[..2], [0, 0], "exited t {t}");
        } else {
            let even: u32 = if t < 32 {
                0x5555_5555
            } else {
                (32..=40)
                    .filter(|x| x % 2 == 0)
                    .fold(0, |m, x| m | 1 << (x - 32))
            };
            assert_eq!(o[..2], [even as u64, 77], "t {t}");
        }
    }
}

#[test]
fn trap_instruction() {
    let err = try_run(
        "\tsetp.eq.u64 %p1, %rd0, 3;\n\t@%p1 trap;\n",
        &[[0; 4], [3, 0, 0, 0]],
    )
    .unwrap_err();
    let KernelError::Trap(f) = &err else {
        panic!("{err}")
    };
    assert_eq!(f.thread, [1, 0, 0]);
    assert_eq!(f.instruction, "trap");
}

#[test]
fn fused_multiply_add_is_single_rounding() {
    let body = "
	mov.b64 {%r0, %r1}, %rd0;
	mov.b32 %f0, %r0;
	mov.b32 %f1, %r1;
	mov.b64 {%r2, %r3}, %rd1;
	mov.b32 %f2, %r2;
	fma.rn.f32 %f3, %f0, %f1, %f2;
	mov.b32 %r4, %f3;
	cvt.u64.u32 %rd4, %r4;
	mov.b64 %fd0, %rd2;
	mov.b64 %fd1, %rd3;
	fma.rn.f64 %fd2, %fd0, %fd1, %fd0;
	mov.b64 %rd5, %fd2;
";
    let mut rng = Rng(77);
    let special = [
        0.0f32,
        -0.0,
        1.0,
        -1.0,
        f32::MAX,
        f32::MIN_POSITIVE,
        1e-45,
        f32::INFINITY,
        f32::NAN,
        1.0 + f32::EPSILON,
        3.0e38,
        1e-30,
    ];
    let mut rows = Vec::new();
    for _ in 0..256 {
        let pick = |rng: &mut Rng| {
            if rng.next().is_multiple_of(4) {
                special[(rng.next() % special.len() as u64) as usize]
            } else {
                let m = f32::from_bits((rng.next() as u32 & 0x807f_ffff) | 0x3f00_0000);
                m * 2f32.powi((rng.next() % 60) as i32 - 30)
            }
        };
        let (a, b, c) = (pick(&mut rng), pick(&mut rng), pick(&mut rng));
        let (x, y) = (rng.next() as f64 / 3.0, -(rng.next() as f64) / 7.0);
        rows.push([f32b(a) | f32b(b) << 32, f32b(c), x.to_bits(), y.to_bits()]);
    }
    for (row, o) in rows.iter().zip(run(body, &rows)) {
        let (a, b, c) = (f32v(row[0]), f32v(row[0] >> 32), f32v(row[1]));
        let want = a.mul_add(b, c);
        let got = f32v(o[0]);
        assert!(
            got.to_bits() == want.to_bits() || (got.is_nan() && want.is_nan()),
            "fma({a:e}, {b:e}, {c:e}) = {got:e}, want {want:e}"
        );
        let (x, y) = (f64::from_bits(row[2]), f64::from_bits(row[3]));
        assert_eq!(o[1], x.mul_add(y, x).to_bits());
    }
}

#[test]
fn packed_16_bit_min_max() {
    // The destination doubles as a source in the last one.
    let body = "
	cvt.u32.u64 %r0, %rd0;
	cvt.u32.u64 %r1, %rd1;
	min.s16x2 %r2, %r0, %r1;
	max.u16x2 %r3, %r0, %r1;
	max.s16x2.relu %r4, %r0, %r1;
	mov.b32 %r5, %r0;
	min.u16x2 %r5, %r5, %r1;
	cvt.u64.u32 %rd4, %r2;
	cvt.u64.u32 %rd5, %r3;
	cvt.u64.u32 %rd6, %r4;
	cvt.u64.u32 %rd7, %r5;
";
    let pack = |lo: u16, hi: u16| u64::from(lo) | u64::from(hi) << 16;
    let rows = [
        [pack(0xfff0, 5), pack(3, 0x8000), 0, 0],
        [pack(7, 0x7fff), pack(0x8001, 0x7ffe), 0, 0],
        [pack(0xffff, 0xfffe), pack(0xfffd, 0xffff), 0, 0],
    ];
    for (row, out) in rows.iter().zip(run(body, &rows)) {
        let half = |v: u64, i: u32| (v >> (16 * i)) as u16;
        let each = |f: &dyn Fn(u16, u16) -> u16| {
            pack(
                f(half(row[0], 0), half(row[1], 0)),
                f(half(row[0], 1), half(row[1], 1)),
            )
        };
        let s = |x: u16| x as i16;
        assert_eq!(out[0], each(&|x, y| s(x).min(s(y)) as u16), "{row:x?}");
        assert_eq!(out[1], each(&|x, y| x.max(y)), "{row:x?}");
        assert_eq!(
            out[2],
            each(&|x, y| s(x).max(s(y)).max(0) as u16),
            "{row:x?}"
        );
        assert_eq!(out[3], each(&|x, y| x.min(y)), "{row:x?}");
    }
}

#[test]
fn grid_dependency_control_is_satisfied() {
    // Grids run one after the other: waiting for the prerequisite grid and
    // letting dependents start are no-ops.
    let body = "
	griddepcontrol.wait;
	add.u64 %rd4, %rd0, 1;
	griddepcontrol.launch_dependents;
";
    assert_eq!(run(body, &[[41, 0, 0, 0]]), [[42, 0, 0, 0]]);
}

#[test]
fn unrounded_multiply_and_add_contract_into_fma() {
    // ptxas fuses `mul` and `add`/`sub` that carry no rounding modifier:
    // 255.6 - 213 * 1.2 is 3.8e-15 fused and 0 when the product is rounded.
    let body = "
	mov.b64 %fd0, %rd0;
	mov.b64 %fd1, %rd1;
	mov.b64 %fd2, %rd2;
	mul.f64 %fd3, %fd1, %fd2;
	sub.f64 %fd4, %fd0, %fd3;
	mov.b64 %rd4, %fd4;
	mul.rn.f64 %fd5, %fd1, %fd2;
	sub.f64 %fd6, %fd0, %fd5;
	mov.b64 %rd5, %fd6;
	mul.f64 %fd7, %fd1, %fd2;
	neg.f64 %fd8, %fd0;
	add.f64 %fd9, %fd7, %fd8;
	mov.b64 %rd6, %fd9;
	mul.f64 %fd10, %fd1, %fd2;
$L_join:
	sub.f64 %fd11, %fd0, %fd10;
	mov.b64 %rd7, %fd11;
";
    let (x, q, y) = (255.6f64, 213.0f64, 1.2f64);
    let out = run(body, &[[x.to_bits(), q.to_bits(), y.to_bits(), 0]]);
    let fused = (-q).mul_add(y, x);
    assert_ne!(fused, x - q * y);
    assert_eq!(f64::from_bits(out[0][0]), fused);
    assert_eq!(
        f64::from_bits(out[0][1]),
        x - q * y,
        "mul.rn is not contracted"
    );
    assert_eq!(f64::from_bits(out[0][2]), -fused, "product first, then add");
    assert_eq!(f64::from_bits(out[0][3]), x - q * y, "not across a label");
}
