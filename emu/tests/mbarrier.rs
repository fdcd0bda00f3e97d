//! mbarrier-based synchronisation: libcu++'s `cuda::barrier` and
//! `cuda::memcpy_async` and raw mbarrier PTX (emu/tests/ptx/mbarrier.cu),
//! and hand-written forms nvcc does not emit (mbarrier_forms.ptx), checked
//! against CPU references.

mod common;

use std::time::Duration;

use common::*;
use rcud_emu::kernel::KernelError;

/// mbarrier.cu compiled for sm_80 and for sm_90, where libcu++ uses
/// `try_wait`, `expect_tx` and bulk copies.
const CU_PTX: [&str; 2] = ["mbarrier.ptx", "mbarrier_sm90.ptx"];

#[test]
fn barrier_arrive_wait_over_rounds() {
    for file in CU_PTX {
        let mut d = Dev::load(file);
        let (grid, block, rounds) = (3usize, 128usize, 4i32);
        let out = d.zeros::<i32>(grid * block);
        d.launch(
            "barrier_rounds",
            [grid as u32, 1, 1],
            [block as u32, 1, 1],
            0,
            &[arg(out), arg(rounds)],
        )
        .unwrap();
        let got: Vec<i32> = d.read(out, grid * block);
        for b in 0..grid {
            for t in 0..block {
                let want: i32 = (0..rounds as usize)
                    .map(|r| {
                        let j = (t + 1 + r) % block;
                        j as i32 * (r as i32 + 1) + b as i32
                    })
                    .sum();
                assert_eq!(got[b * block + t], want, "block {b} thread {t}");
            }
        }
    }
}

#[test]
fn barrier_arrive_and_drop() {
    for file in CU_PTX {
        let mut d = Dev::load(file);
        let block = 128usize;
        let out = d.zeros::<i32>(block);
        d.launch(
            "barrier_drop",
            [1, 1, 1],
            [block as u32, 1, 1],
            0,
            &[arg(out)],
        )
        .unwrap();
        let got: Vec<i32> = d.read(out, block);
        let mut buf: Vec<i32> = (1..=block as i32).collect();
        let mut want: Vec<i32> = (0..block).map(|t| buf[block - 1 - t]).collect();
        for _ in 0..3 {
            for t in 0..32 {
                buf[t] += want[t];
            }
            for t in 0..32 {
                want[t] = buf[31 - t];
            }
        }
        assert_eq!(got, want);
    }
}

#[test]
fn producer_consumer_with_parity_waits() {
    for file in CU_PTX {
        let mut d = Dev::load(file);
        let n = 32 * 9;
        let input: Vec<i32> = (0..n as i32).map(|i| i * 7 - 100).collect();
        let pin = d.alloc(&input);
        let out = d.zeros::<i32>(n);
        d.launch(
            "producer_consumer",
            [2, 1, 1],
            [64, 1, 1],
            0,
            &[arg(pin), arg(out), arg(n as i32)],
        )
        .unwrap();
        let got: Vec<i32> = d.read(out, n);
        for c in 0..n / 32 {
            for l in 0..32 {
                assert_eq!(
                    got[c * 32 + l],
                    input[c * 32 + 31 - l] * 3 + c as i32,
                    "chunk {c} lane {l}"
                );
            }
        }
    }
}

#[test]
fn memcpy_async_completes_through_the_barrier() {
    for file in CU_PTX {
        let mut d = Dev::load(file);
        let (grid, block) = (2usize, 96usize);
        let input: Vec<f32> = (0..grid * block).map(|i| i as f32 * 0.5 - 3.0).collect();
        let pin = d.alloc(&input);
        let out = d.zeros::<f32>(grid * block);
        d.launch(
            "memcpy_async_barrier",
            [grid as u32, 1, 1],
            [block as u32, 1, 1],
            0,
            &[arg(pin), arg(out)],
        )
        .unwrap();
        let got: Vec<f32> = d.read(out, grid * block);
        for b in 0..grid {
            for t in 0..block {
                assert_eq!(got[b * block + t], input[b * block + block - 1 - t] * 2.0);
            }
        }

        let n = 64usize;
        let input: Vec<f32> = (0..4 * n).map(|i| i as f32 + 0.25).collect();
        let pin = d.alloc(&input);
        let out = d.zeros::<f32>(4 * n);
        d.launch(
            "memcpy_async_thread",
            [1, 1, 1],
            [n as u32, 1, 1],
            0,
            &[arg(pin), arg(out)],
        )
        .unwrap();
        let got: Vec<f32> = d.read(out, 4 * n);
        for t in 0..n {
            let s = n - 1 - t;
            let want = [3, 2, 1, 0].map(|k| input[s * 4 + k]);
            assert_eq!(got[t * 4..t * 4 + 4], want, "thread {t}");
        }
    }
}

/// Numba's test_external_cooperative_func: a device function with its own
/// `__shared__ cuda::barrier` (`cta_barrier`), from a cooperative launch.
#[test]
fn numba_cta_barrier_shape() {
    for file in CU_PTX {
        let mut d = Dev::load(file);
        for (block, coop) in [(32usize, true), (128, false), (32, false)] {
            let grid = 4usize;
            let out = d.zeros::<i32>(grid * block);
            let (g, b) = ([grid as u32, 1, 1], [block as u32, 1, 1]);
            if coop {
                d.launch_cooperative("cta_barrier_kernel", g, b, &[arg(out)])
                    .unwrap();
            } else {
                d.launch("cta_barrier_kernel", g, b, 0, &[arg(out)])
                    .unwrap();
            }
            let got: Vec<i32> = d.read(out, grid * block);
            let want: Vec<i32> = (0..grid * block).map(|i| (i % block % 32) as i32).collect();
            assert_eq!(got, want, "block {block}");
        }
        // As Numba calls it: no output pointer.
        d.launch_cooperative("cta_barrier_kernel", [2, 1, 1], [32, 1, 1], &[arg(0u64)])
            .unwrap();
    }
}

#[test]
fn hand_written_forms() {
    let mut d = Dev::load("mbarrier_forms.ptx");
    let out = d.zeros::<u32>(14);
    d.launch("forms", [1, 1, 1], [32, 1, 1], 0, &[arg(out)])
        .unwrap();
    let got: Vec<u32> = d.read(out, 10);
    assert_eq!(got, [1, 0, 1, 1, 0, 2, 0, 1, 0, 1]);
    let raw: Vec<u64> = d.read(out + 40, 2);
    // Phase parity 1, pending 2, expected 2 (after the drop), no tx.
    assert_eq!(raw[0], 1 << 63 | 2 << 21 | 2);
    assert_eq!(raw[1], 0, "inval");
}

#[test]
fn bulk_copies_complete_tx_bytes() {
    let mut d = Dev::load("mbarrier_forms.ptx");
    let input: Vec<u32> = (0..64).map(|i| i * 3 + 7).collect();
    let pin = d.alloc(&input);
    let out = d.zeros::<u32>(48);
    d.launch("bulk", [1, 1, 1], [64, 1, 1], 0, &[arg(pin), arg(out)])
        .unwrap();
    assert_eq!(d.read::<u32>(out, 48), input[4..52]);
}

#[test]
fn failed_waits_yield_to_the_arriving_warp() {
    let mut d = Dev::load("mbarrier_forms.ptx");
    let iters = 20_000u32;
    let out = d.zeros::<u32>(32);
    let alone = d
        .launch("spin", [1, 1, 1], [32, 1, 1], 0, &[arg(out), arg(iters)])
        .unwrap()
        .instructions;
    let both = d
        .launch("spin", [1, 1, 1], [64, 1, 1], 0, &[arg(out), arg(iters)])
        .unwrap()
        .instructions;
    let sum = (0..iters).fold(0u32, |a, i| a.wrapping_add(i));
    assert_eq!(d.read::<u32>(out, 32), vec![sum; 32]);
    // The waiting warp runs a few instructions per slice of the producer,
    // not a whole slice of spinning.
    assert!(
        both - alone < alone / 20,
        "alone {alone}, with a waiter {both}"
    );
}

#[test]
fn faults_and_deadlocks() {
    let mut d = Dev::load("mbarrier_forms.ptx");
    let g = d.zeros::<u64>(1);
    let e = d
        .launch("global_object", [1, 1, 1], [1, 1, 1], 0, &[arg(g)])
        .unwrap_err();
    assert!(matches!(e, KernelError::IllegalAddress(_)), "{e}");
    let e = d
        .launch("misaligned", [1, 1, 1], [1, 1, 1], 0, &[arg(g)])
        .unwrap_err();
    assert!(matches!(e, KernelError::MisalignedAddress(_)), "{e}");
    let e = d
        .launch("unknown_form", [1, 1, 1], [1, 1, 1], 0, &[arg(g)])
        .unwrap_err();
    assert!(
        matches!(&e, KernelError::Unsupported(s) if s.contains("mbarrier.frobnicate")),
        "{e}"
    );
    d.limits.timeout = Duration::from_millis(300);
    let e = d
        .launch("never", [1, 1, 1], [1, 1, 1], 0, &[arg(g)])
        .unwrap_err();
    assert!(matches!(e, KernelError::Timeout(_)), "{e}");
}

#[test]
fn numbered_barriers_with_thread_counts() {
    let mut d = Dev::load("mbarrier_forms.ptx");
    let chunks = 7usize;
    let input: Vec<u32> = (0..32 * chunks as u32).map(|i| i * 5 + 1).collect();
    let pin = d.alloc(&input);
    let out = d.zeros::<u32>(32 * chunks);
    d.launch(
        "named",
        [2, 1, 1],
        [96, 1, 1],
        0,
        &[arg(pin), arg(out), arg(chunks as u32)],
    )
    .unwrap();
    let got: Vec<u32> = d.read(out, 32 * chunks);
    for c in 0..chunks {
        for l in 0..32 {
            assert_eq!(
                got[c * 32 + l],
                input[c * 32 + 31 - l] + c as u32,
                "chunk {c} lane {l}"
            );
        }
    }
}
