//! The random PTX kernels of the differential tests of the compiling
//! engine (`emu/tests/jit_diff.rs`, and the `jit` fuzz target of
//! `fuzz-targets`, which includes this file).
#![allow(unreachable_pub)]

/// Bytes of each buffer a random kernel is given (`out`, `inp`).
pub const BUF: usize = 64 << 10;

/// A random valid PTX kernel: `out` and `inp` are `BUF`-byte buffers, each
/// thread owning 64 bytes of each; `n` a uniform value.
pub fn random_kernel(seed: u64) -> String {
    let mut state = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    // xorshift64
    let mut r = |n: u64| {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state % n
    };
    let mut body = String::new();
    let reg = |x: u64| format!("%r{}", 3 + x % 11);
    let ops = [
        "add", "sub", "mul.lo", "min", "max", "and", "or", "xor", "shl", "shr", "div", "rem",
        "mul.hi",
    ];
    let tys = ["s32", "u32"];
    let cmps = ["eq", "ne", "lt", "le", "gt", "ge", "lo", "hi"];
    let mut labels_open: Vec<u64> = Vec::new();
    let mut label = 0;
    let mut in_loop = false;
    let len = 10 + r(40);
    for _ in 0..len {
        let guard = match r(6) {
            0 => format!("@%p{} ", r(4)),
            1 => format!("@!%p{} ", r(4)),
            _ => String::new(),
        };
        let line = match r(20) {
            0..=5 => {
                let op = ops[r(ops.len() as u64) as usize];
                let ty = if op == "and" || op == "or" || op == "xor" { "b32" } else { tys[r(2) as usize] };
                let ty = if op == "shl" { "b32" } else { ty };
                let b = if r(3) == 0 { format!("{}", r(70) as i64 - 3) } else { reg(r(11)) };
                format!("{guard}{op}.{ty} {}, {}, {b};", reg(r(11)), reg(r(11)))
            }
            6 => format!("{guard}mad.lo.s32 {}, {}, {}, {};", reg(r(11)), reg(r(11)), reg(r(11)), reg(r(11))),
            7 => format!(
                "{guard}setp.{}.{} %p{}, {}, {};",
                cmps[r(cmps.len() as u64) as usize],
                tys[r(2) as usize],
                r(4),
                reg(r(11)),
                reg(r(11))
            ),
            8 => format!("{guard}selp.b32 {}, {}, {}, %p{};", reg(r(11)), reg(r(11)), reg(r(11)), r(4)),
            9 => {
                let fop = ["add.rn", "sub.rn", "mul.rn", "add", "mul"][r(5) as usize];
                format!(
                    "mov.b32 %f1, {}; cvt.rn.f32.s32 %f2, {}; {guard}{fop}.f32 %f3, %f1, %f2; fma.rn.f32 %f3, %f3, %f2, %f1; mov.b32 {}, %f3;",
                    reg(r(11)),
                    reg(r(11)),
                    reg(r(11))
                )
            }
            10 => format!(
                "cvt.f64.f32 %fd1, %f3; mul.wide.s32 %rd6, {}, {}; cvt.rn.f64.s32 %fd2, {}; {guard}fma.rn.f64 %fd1, %fd1, %fd2, %fd2; add.f64 %fd1, %fd1, %fd2; mov.b64 %rd7, %fd1; cvt.u32.u64 {}, %rd7; xor.b64 %rd6, %rd6, %rd7; cvt.u32.u64 {}, %rd6;",
                reg(r(11)),
                reg(r(11)),
                reg(r(11)),
                reg(r(11)),
                reg(r(11))
            ),
            11 => {
                // A store inside the thread's own part of `out`.
                format!("{guard}st.global.u32 [%rd4+{}], {};", 4 * r(16), reg(r(11)))
            }
            12 => format!("{guard}ld.global.u32 {}, [%rd5+{}];", reg(r(11)), 4 * r(16)),
            13 => {
                // A store anywhere in `out`, or just past it.
                format!(
                    "and.b32 %r14, {}, {}; mul.wide.u32 %rd6, %r14, 4; add.s64 %rd6, %rd1, %rd6; {guard}st.global.u32 [%rd6], {};",
                    reg(r(11)),
                    if r(8) == 0 { 0x7FFF } else { 0x3FFF },
                    reg(r(11))
                )
            }
            14 => match r(12) {
                0 => format!("{guard}st.global.u32 [%rd4+2], {};", reg(r(11))),
                1 => format!("setp.gt.u32 %p3, {}, 900; @%p3 trap;", reg(r(11))),
                2 => format!("{guard}ld.shared.u32 {}, [sh+{}];", reg(r(11)), 4 * r(64)),
                3 => format!("{guard}st.shared.u32 [sh+{}], {};", 4 * r(64), reg(r(11))),
                4 => format!("{guard}cvt.u64.u32 %rd6, {}; add.s64 %rd6, %rd6, %rd5; ld.global.u8 {}, [%rd6];", reg(r(11)), reg(r(11))),
                5 => format!("{guard}ld.global.s16 {}, [%rd5+{}];", reg(r(11)), 2 * r(32)),
                6 => format!("{guard}st.global.u8 [%rd4+{}], {};", r(64), reg(r(11))),
                7 => format!("{guard}ld.param.u32 {}, [n];", reg(r(11))),
                8 => format!("cvta.shared.u64 %rd6, sh; {guard}st.u32 [%rd6+{}], {}; ld.u32 {}, [%rd6+{}];", 4 * r(64), reg(r(11)), reg(r(11)), 4 * r(64)),
                _ => format!("{guard}not.b32 {}, {};", reg(r(11)), reg(r(11))),
            },
            15 | 16 => {
                // A forward branch: uniform (on `n` or a block value) or
                // divergent (on a per-thread value).
                label += 1;
                labels_open.push(label);
                match r(3) {
                    0 => format!("setp.lt.u32 %p0, %r15, {}; @%p0 bra L{label};", r(100)),
                    1 => format!("setp.ne.u32 %p1, {}, %r0; @%p1 bra L{label};", reg(r(11))),
                    _ => format!("bra.uni L{label};"),
                }
            }
            17 if !labels_open.is_empty() => {
                let l = labels_open.remove(0);
                format!("L{l}:")
            }
            18 if !in_loop => {
                in_loop = true;
                "mov.u32 %r2, 0;\nLOOP:".to_string()
            }
            19 if in_loop => {
                in_loop = false;
                let trip = 1 + r(5);
                format!("add.u32 %r2, %r2, 1; setp.lt.u32 %p2, %r2, {trip}; @%p2 bra LOOP;")
            }
            _ => format!("{guard}mov.u32 {}, {};", reg(r(11)), reg(r(11))),
        };
        body.push_str(&line);
        body.push('\n');
    }
    if in_loop {
        body.push_str("add.u32 %r2, %r2, 1; setp.lt.u32 %p2, %r2, 3; @%p2 bra LOOP;\n");
    }
    for l in labels_open {
        body.push_str(&format!("L{l}:\n"));
    }
    let mut stores = String::new();
    for k in 0..11 {
        stores.push_str(&format!("st.global.u32 [%rd4+{}], %r{};\n", 4 * k, 3 + k));
    }
    format!(
        r#".version 8.4
.target sm_80
.address_size 64
.visible .entry k(.param .u64 out, .param .u64 inp, .param .u32 n)
{{
.reg .pred %p<4>;
.reg .b32 %r<16>;
.reg .b64 %rd<8>;
.reg .f32 %f<4>;
.reg .f64 %fd<3>;
.shared .align 4 .b8 sh[256];
ld.param.u64 %rd1, [out];
ld.param.u64 %rd2, [inp];
ld.param.u32 %r15, [n];
cvta.to.global.u64 %rd1, %rd1;
cvta.to.global.u64 %rd2, %rd2;
mov.u32 %r0, %tid.x;
mov.u32 %r1, %ctaid.x;
mov.u32 %r14, %ntid.x;
mad.lo.s32 %r14, %r1, %r14, %r0;
mul.wide.u32 %rd6, %r14, 64;
add.s64 %rd4, %rd1, %rd6;
add.s64 %rd5, %rd2, %rd6;
{loads}
setp.lt.u32 %p0, %r3, %r4;
setp.lt.s32 %p1, %r5, 500;
setp.ne.u32 %p2, %r6, %r7;
setp.gt.u32 %p3, %r8, 100;
{body}
{stores}
ret;
}}
"#,
        loads = (0..11)
            .map(|k| format!("ld.global.u32 %r{}, [%rd5+{}];", 3 + k, 4 * k))
            .collect::<Vec<_>>()
            .join("\n"),
    )
}
