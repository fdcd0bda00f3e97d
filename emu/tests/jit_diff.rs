//! Differential tests of the compiling engine: the same launches on the
//! interpreter and on `Engine::Jit`, which must leave the same memory and
//! report the same faults. Every kernel of every PTX test module runs with
//! generic arguments, then thousands of random kernels (arithmetic,
//! compares, selects, uniform and divergent branches, bounded loops, global
//! loads and stores, some out of bounds or misaligned, traps).

mod common;
mod jit_gen;

use std::time::Duration;

use common::*;
use rcud_emu::kernel::{KernelError, LaunchOutput, Limits};
use rcud_emu::Engine;

use jit_gen::BUF;

/// One launch's observable result: memory of every buffer, the error, the
/// printf output and the instruction count.
#[derive(Debug, PartialEq)]
struct Outcome {
    buffers: Vec<Vec<u8>>,
    result: Result<(String, u64), KernelError>,
}

#[allow(clippy::too_many_arguments)]
/// Runs `kernel` of `ptx` on a fresh device with `engine`: every 8-byte
/// parameter a fresh buffer of `BUF` bytes filled from `seed`, every other
/// parameter `small`.
fn run(
    ptx: &str,
    kernel: &str,
    engine: Engine,
    grid: [u32; 3],
    block: [u32; 3],
    seed: u64,
    small: u32,
    timeout: Duration,
) -> Outcome {
    let mut d = Dev::from_text(ptx);
    d.limits = Limits {
        timeout,
        threads: 1,
        engine,
        ..Limits::default()
    };
    let layout = d.module.kernel_params(kernel).unwrap();
    let mut rng = Rng(seed | 1);
    let mut bufs = Vec::new();
    let mut args = Vec::new();
    for &(_, size) in &layout {
        if size == 8 {
            let data: Vec<u32> = (0..BUF / 4).map(|_| (rng.next() % 1000) as u32).collect();
            let a = d.alloc(&data);
            bufs.push(a);
            args.push(arg(a));
        } else {
            let mut b = small.to_le_bytes().to_vec();
            b.resize(size, 0);
            args.push(Arg(b));
        }
    }
    let res: Result<LaunchOutput, KernelError> = d.launch(kernel, grid, block, 0, &args);
    Outcome {
        buffers: bufs.iter().map(|&a| d.read::<u8>(a, BUF)).collect(),
        result: res.map(|o| (o.printf, o.instructions)),
    }
}

fn modules() -> Vec<(String, String)> {
    let dir = ptx_path("");
    let mut v: Vec<(String, String)> = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(|e| {
            let p = e.ok()?.path();
            (p.extension()? == "ptx").then(|| {
                let name = p.file_name().unwrap().to_string_lossy().into_owned();
                (name, std::fs::read_to_string(&p).unwrap())
            })
        })
        .collect();
    v.sort();
    v
}

#[test]
fn every_test_kernel_matches_the_interpreter() {
    let mut kernels = 0;
    for (name, text) in modules() {
        let probe = Dev::from_text(&text);
        for k in probe.module.kernel_names() {
            for (grid, block, small) in [([2, 1, 1], [64, 1, 1], 64u32), ([1, 1, 1], [40, 1, 1], 7)]
            {
                let a = run(
                    &text,
                    &k,
                    Engine::Interp,
                    grid,
                    block,
                    7,
                    small,
                    Duration::from_secs(2),
                );
                let b = run(
                    &text,
                    &k,
                    Engine::Jit,
                    grid,
                    block,
                    7,
                    small,
                    Duration::from_secs(2),
                );
                // A timeout stops both at an arbitrary instruction.
                if matches!(a.result, Err(KernelError::Timeout(_)))
                    || matches!(b.result, Err(KernelError::Timeout(_)))
                {
                    assert_eq!(
                        std::mem::discriminant(&a.result.as_ref().err()),
                        std::mem::discriminant(&b.result.as_ref().err()),
                        "{name} {k}"
                    );
                    continue;
                }
                assert!(
                    a == b,
                    "{name} {k} {grid:?} {block:?}: {:?} vs {:?}",
                    a.result,
                    b.result
                );
                kernels += 1;
            }
        }
    }
    assert!(kernels > 40, "only {kernels} launches compared");
}

/// Runs random kernel `seed` on both engines; `Err` with the kernel and
/// both outcomes when they differ.
pub fn compare_random(seed: u64) -> Result<(), String> {
    let ptx = jit_gen::random_kernel(seed);
    let grid = [2, 1, 1];
    let block = [if seed.is_multiple_of(3) { 40 } else { 64 }, 1, 1];
    let small = (seed % 100) as u32;
    let t = Duration::from_secs(5);
    let a = run(&ptx, "k", Engine::Interp, grid, block, seed, small, t);
    let b = run(&ptx, "k", Engine::Jit, grid, block, seed, small, t);
    if a == b {
        Ok(())
    } else {
        Err(format!(
            "seed {seed}:\n{ptx}\ninterp: {:?}\njit: {:?}",
            a.result, b.result
        ))
    }
}

#[test]
fn random_kernels_match_the_interpreter() {
    let count: u64 = std::env::var("RCUD_JIT_DIFF_COUNT")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(2000);
    let start: u64 = std::env::var("RCUD_JIT_DIFF_START")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    for seed in start..start + count {
        if let Err(e) = compare_random(seed) {
            panic!("{e}");
        }
    }
}

/// An endless loop stops at the timeout on both engines.
#[test]
fn endless_loop_times_out() {
    let ptx = r#".version 8.4
.target sm_80
.address_size 64
.visible .entry spin(.param .u64 out)
{
.reg .b32 %r<3>;
.reg .b64 %rd<2>;
ld.param.u64 %rd1, [out];
mov.u32 %r1, 0;
L:
add.u32 %r1, %r1, 1;
st.global.u32 [%rd1], %r1;
bra.uni L;
}
"#;
    for engine in [Engine::Interp, Engine::Jit] {
        let o = run(
            ptx,
            "spin",
            engine,
            [1, 1, 1],
            [32, 1, 1],
            1,
            0,
            Duration::from_millis(300),
        );
        assert!(
            matches!(o.result, Err(KernelError::Timeout(_))),
            "{engine}: {:?}",
            o.result
        );
    }
}

/// A kernel of straight-line compiled code ending in `tail`: each thread
/// adds its index to `out[tid]` first, so the memory before the fault is
/// compared too.
fn hostile(tail: &str) -> String {
    format!(
        r#".version 8.4
.target sm_80
.address_size 64
.visible .entry h(.param .u64 out)
{{
.reg .pred %p<2>;
.reg .b32 %r<4>;
.reg .b64 %rd<4>;
ld.param.u64 %rd1, [out];
cvta.to.global.u64 %rd1, %rd1;
mov.u32 %r1, %tid.x;
mul.wide.u32 %rd2, %r1, 4;
add.s64 %rd3, %rd1, %rd2;
st.global.u32 [%rd3], %r1;
{tail}
ret;
}}
"#
    )
}

/// Out-of-bounds and misaligned accesses and traps raise the interpreter's
/// fault, with the memory written before it, on the compiling engine.
#[test]
fn hostile_kernels_fault_alike() {
    type Expected = fn(&KernelError) -> bool;
    let cases: [(&str, Expected); 7] = [
        // Lanes 16.. store past the end of the 64 KiB buffer.
        (
            "mul.wide.u32 %rd2, %r1, 4096; add.s64 %rd3, %rd1, %rd2; st.global.u32 [%rd3], %r1;",
            |e| matches!(e, KernelError::IllegalAddress(_)),
        ),
        ("st.global.u32 [%rd3+2], %r1;", |e| {
            matches!(e, KernelError::MisalignedAddress(_))
        }),
        (
            "ld.global.u64 %rd2, [%rd3]; st.global.u64 [%rd3+4], %rd2;",
            |e| matches!(e, KernelError::MisalignedAddress(_)),
        ),
        ("setp.eq.u32 %p1, %r1, 5; @%p1 trap;", |e| {
            matches!(e, KernelError::Trap(_))
        }),
        ("ld.global.u32 %r2, [0];", |e| {
            matches!(e, KernelError::IllegalAddress(_))
        }),
        // Loads run lane by lane inside compiled segments: lane 0 faults
        // (misaligned) at the second load, lane 16 (out of bounds) at the
        // first, which is the fault the interpreter raises.
        (
            "mul.wide.u32 %rd2, %r1, 4096; add.s64 %rd2, %rd1, %rd2; \
             ld.global.u32 %r2, [%rd2]; ld.global.u32 %r3, [%rd1+2]; add.u32 %r2, %r2, %r3;",
            |e| matches!(e, KernelError::IllegalAddress(_)),
        ),
        // Shared memory too: past its end in lanes 8.., misaligned later.
        (
            ".shared .align 4 .b8 sm[4096]; mov.u32 %r3, sm; shl.b32 %r2, %r1, 9; add.u32 %r2, %r2, %r3; \
             ld.shared.u32 %r3, [%r2]; ld.shared.u32 %r2, [sm+2];",
            |e| matches!(e, KernelError::IllegalAddress(_)),
        ),
    ];
    for (tail, expected) in cases {
        let ptx = hostile(tail);
        let t = Duration::from_secs(5);
        let a = run(&ptx, "h", Engine::Interp, [1, 1, 1], [32, 1, 1], 3, 0, t);
        let b = run(&ptx, "h", Engine::Jit, [1, 1, 1], [32, 1, 1], 3, 0, t);
        assert!(
            a.result.as_ref().err().is_some_and(expected),
            "{tail}: {:?}",
            a.result
        );
        assert!(a == b, "{tail}: {:?} vs {:?}", a.result, b.result);
    }
}

/// A guarded load inside a compiled segment touches memory only in the
/// lanes whose guard holds: lanes 16.. would read past the buffer.
#[test]
fn guarded_loads_check_only_their_lanes() {
    let ptx = hostile(
        "setp.lt.u32 %p1, %r1, 16; mul.wide.u32 %rd2, %r1, 4096; add.s64 %rd2, %rd1, %rd2; \
         @%p1 ld.global.u32 %r2, [%rd2]; add.u32 %r2, %r2, 1; st.global.u32 [%rd3], %r2;",
    );
    let t = Duration::from_secs(5);
    let a = run(&ptx, "h", Engine::Interp, [1, 1, 1], [32, 1, 1], 3, 0, t);
    let b = run(&ptx, "h", Engine::Jit, [1, 1, 1], [32, 1, 1], 3, 0, t);
    assert!(a.result.is_ok(), "{:?}", a.result);
    assert!(a == b, "{:?} vs {:?}", a.result, b.result);
}
