//! Control flow on the warp: divergence and reconvergence seen through
//! warp-level operations, barriers with exited threads, calls from
//! divergent code, switch statements, recursion limits, generic pointers.

mod common;

use common::*;
use rcud_emu::kernel::KernelError;

#[test]
fn divergence_and_reconvergence() {
    let mut d = Dev::load("control.ptx");
    let out = d.zeros::<u32>(64 * 6);
    d.launch("divergence", [1, 1, 1], [64, 1, 1], 0, &[arg(out)])
        .unwrap();
    let got: Vec<u32> = d.read(out, 64 * 6);
    let m3: u32 = (0..32).filter(|l| l % 3 == 0).fold(0, |m, l| m | 1 << l);
    let m3a: u32 = (0..32)
        .filter(|l| l % 3 == 0 && l & 2 != 0)
        .fold(0, |m, l| m | 1 << l);
    assert_eq!(m3a | (m3 & !m3a), m3);
    for t in 0..64usize {
        let lane = (t % 32) as u32;
        let o = &got[6 * t..6 * t + 6];
        let first = if lane < 16 {
            if lane & 1 == 1 {
                0x0000_AAAA
            } else {
                0x5556
            }
        } else {
            0xFFFF_0002
        };
        assert_eq!(o[0], first, "nested if/else, lane {lane}");
        assert_eq!(o[1], u32::MAX, "after the loop, lane {lane}");
        assert_eq!(o[2], lane / 3 + 1, "loop count, lane {lane}");
        let f = if !lane.is_multiple_of(3) {
            0
        } else if lane & 2 != 0 {
            m3a | 0x8000_0000
        } else {
            (m3 & !m3a) & 0x7fff_ffff
        };
        assert_eq!(o[3], f, "activemask in a function, lane {lane}");
        let sh = if (8..24).contains(&lane) {
            let src = if lane % 8 + 4 < 8 { lane + 4 } else { lane };
            src * 10
        } else {
            7
        };
        assert_eq!(o[4], sh, "shuffle in a branch, lane {lane}");
        assert_eq!(o[5], 32, "reconverged at the end, lane {lane}");
    }
}

#[test]
fn barriers_with_exited_threads_and_generic_pointers() {
    let mut d = Dev::load("control.ptx");
    for (block, live) in [(128u32, 100i32), (256, 256), (96, 33)] {
        let out = d.zeros::<i32>(block as usize);
        d.launch(
            "early_exit_barrier",
            [2, 1, 1],
            [block, 1, 1],
            0,
            &[arg(out), arg(live)],
        )
        .unwrap();
        let got: Vec<i32> = d.read(out, block as usize);
        let s = |k: i32| 2 * ((k + 1) % live) + 1;
        for t in 0..block as i32 {
            let want = if t >= live {
                0
            } else {
                3 * t + 3 + s((t + 3) % live) + s(0) + s(1) + 1000 + 10000
            };
            assert_eq!(got[t as usize], want, "block {block} live {live} t {t}");
        }
    }
}

#[test]
fn switch_statement() {
    let mut d = Dev::load("control.ptx");
    let v: Vec<i32> = (0..64).map(|i| i * 7 - 20).collect();
    let pv = d.alloc(&v);
    let out = d.zeros::<i32>(64);
    d.launch("switcher", [1, 1, 1], [64, 1, 1], 0, &[arg(pv), arg(out)])
        .unwrap();
    let got: Vec<i32> = d.read(out, 64);
    for (i, &x) in v.iter().enumerate() {
        let want = match x & 15 {
            0 => 11,
            1 => x * 3,
            2 => -5,
            3 => x ^ 0x55,
            4 => 100,
            5 => x + 7,
            6 => 60,
            7 => 61,
            9 => 99,
            _ => -1,
        };
        assert_eq!(got[i], want, "input {x}");
    }
}

#[test]
fn recursion_depth_and_stack_overflow() {
    let mut d = Dev::load("control.ptx");
    let out = d.zeros::<i32>(32);
    d.launch(
        "recurse",
        [1, 1, 1],
        [32, 1, 1],
        0,
        &[arg(out), arg(200i32)],
    )
    .unwrap();
    assert_eq!(d.read::<i32>(out, 32), vec![2; 32]);
    let err = d
        .launch(
            "recurse",
            [1, 1, 1],
            [32, 1, 1],
            0,
            &[arg(out), arg(1_000_000i32)],
        )
        .unwrap_err();
    assert!(
        matches!(&err, KernelError::StackOverflow(f) if f.kernel == "recurse"),
        "{err}"
    );
}

#[test]
fn vector_accesses_through_shared_memory() {
    let mut d = Dev::load("control.ptx");
    let v: Vec<f32> = (0..256).map(|i| i as f32 + 0.25).collect();
    let pv = d.alloc(&v);
    let out = d.zeros::<f32>(256);
    d.launch("vectors", [1, 1, 1], [64, 1, 1], 0, &[arg(pv), arg(out)])
        .unwrap();
    let got: Vec<f32> = d.read(out, 256);
    for t in 0..64 {
        let s = 63 - t;
        let want = [v[4 * s + 3], v[4 * s + 2], v[4 * s + 1], v[4 * s]];
        assert_eq!(&got[4 * t..4 * t + 4], &want, "t {t}");
    }
}
