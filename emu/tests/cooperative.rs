//! Cooperative launches: every block resident at once, and cooperative
//! groups' `grid.sync()` (emu/tests/ptx/cooperative.cu) a real barrier.

mod common;

use common::*;
use rcud_emu::kernel::KernelError;

#[test]
fn neighbour_rounds_need_a_grid_barrier() {
    let mut d = Dev::load("cooperative.ptx");
    // Few workers for many blocks: blocks spinning in grid.sync() must not
    // keep the others from reaching it.
    d.limits.threads = 2;
    let n = 3000usize;
    let rounds = 5;
    let init: Vec<i32> = (0..n as i32).map(|i| i % 97 - 40).collect();
    let a = d.alloc(&init);
    let tmp = d.zeros::<i32>(n);
    d.launch_cooperative(
        "neighbour_rounds",
        [24, 1, 1],
        [64, 1, 1],
        &[arg(a), arg(tmp), arg(n as i32), arg(rounds)],
    )
    .unwrap();
    let mut want = init;
    for _ in 0..rounds {
        want = (0..n)
            .map(|i| want[i].wrapping_add(want[(i + 1) % n]))
            .collect();
    }
    assert_eq!(d.read::<i32>(a, n), want);
}

#[test]
fn grid_sum_reads_every_blocks_partial_after_the_barrier() {
    let mut d = Dev::load("cooperative.ptx");
    d.limits.threads = 3;
    let n = 20_000usize;
    let mut rng = Rng(11);
    let input: Vec<f32> = (0..n).map(|_| (rng.f32() * 8.0).round()).collect();
    let pin = d.alloc(&input);
    let blocks = 40;
    let partial = d.zeros::<f32>(blocks);
    let out = d.zeros::<f32>(1);
    // Run it twice: the workspace barrier must be ready again.
    for _ in 0..2 {
        d.launch_cooperative(
            "grid_sum",
            [blocks as u32, 1, 1],
            [256, 1, 1],
            &[arg(pin), arg(partial), arg(out), arg(n as i32)],
        )
        .unwrap();
        let want: f32 = input.iter().sum();
        assert_eq!(d.read::<f32>(out, 1)[0], want);
    }
}

#[test]
fn grid_group_is_valid_only_in_a_cooperative_launch() {
    let mut d = Dev::load("cooperative.ptx");
    let out = d.zeros::<u64>(3);
    d.launch_cooperative("grid_info", [6, 1, 1], [32, 2, 1], &[arg(out), arg(1i32)])
        .unwrap();
    assert_eq!(d.read::<u64>(out, 3), vec![1, 6 * 64, 6]);

    d.launch(
        "grid_info",
        [6, 1, 1],
        [32, 2, 1],
        0,
        &[arg(out), arg(0i32)],
    )
    .unwrap();
    assert_eq!(d.read::<u64>(out, 3)[0], 0);
    // grid.sync() outside a cooperative launch traps, as on a GPU.
    let e = d
        .launch(
            "grid_info",
            [6, 1, 1],
            [32, 2, 1],
            0,
            &[arg(out), arg(1i32)],
        )
        .unwrap_err();
    assert!(matches!(e, KernelError::Trap(_)), "{e}");
}

#[test]
fn a_grid_too_big_to_hold_is_refused() {
    let mut d = Dev::load("cooperative.ptx");
    let out = d.zeros::<u64>(3);
    let e = d
        .launch_cooperative(
            "grid_info",
            [1 << 20, 1, 1],
            [1024, 1, 1],
            &[arg(out), arg(1i32)],
        )
        .unwrap_err();
    assert!(matches!(e, KernelError::CooperativeTooLarge(_)), "{e}");
}

/// The shape of Numba's `cg.this_grid().sync()`: calls to the device
/// runtime's `cudaCGGetIntrinsicHandle` and `cudaCGSynchronize`, declared
/// `.extern`, which the emulator provides.
const DEVRT_CALLER: &str = r#"
.version 8.0
.target sm_80
.address_size 64

.extern .func (.param .b64 func_retval0) cudaCGGetIntrinsicHandle(.param .b32 cudaCGGetIntrinsicHandle_param_0);
.extern .func (.param .b32 func_retval0) cudaCGSynchronize(.param .b64 cudaCGSynchronize_param_0, .param .b32 cudaCGSynchronize_param_1);

.visible .entry rotate(.param .u64 p_a, .param .u64 p_out, .param .u32 p_n)
{
    .reg .pred %p<2>;
    .reg .b32 %r<12>;
    .reg .b64 %rd<12>;
    ld.param.u64 %rd1, [p_a];
    ld.param.u64 %rd2, [p_out];
    ld.param.u32 %r1, [p_n];
    mov.u32 %r2, %ctaid.x;
    mov.u32 %r3, %ntid.x;
    mov.u32 %r4, %tid.x;
    mad.lo.u32 %r5, %r2, %r3, %r4;
    add.u32 %r6, %r5, 1;
    mul.wide.u32 %rd3, %r5, 4;
    add.u64 %rd4, %rd1, %rd3;
    st.global.u32 [%rd4], %r6;
    {
    .param .b32 a0;
    .param .b64 r0;
    st.param.b32 [a0], 1;
    call.uni (r0), cudaCGGetIntrinsicHandle, (a0);
    ld.param.b64 %rd5, [r0];
    }
    {
    .param .b64 b0;
    .param .b32 b1;
    .param .b32 r1;
    st.param.b64 [b0], %rd5;
    st.param.b32 [b1], 0;
    call.uni (r1), cudaCGSynchronize, (b0, b1);
    ld.param.b32 %r7, [r1];
    }
    add.u32 %r8, %r5, 1;
    rem.u32 %r8, %r8, %r1;
    mul.wide.u32 %rd6, %r8, 4;
    add.u64 %rd7, %rd1, %rd6;
    ld.global.u32 %r9, [%rd7];
    add.u64 %rd8, %rd2, %rd3;
    st.global.u32 [%rd8], %r9;
    ret;
}
"#;

#[test]
fn device_runtime_grid_sync_is_provided() {
    let mut d = Dev::from_text(DEVRT_CALLER);
    d.limits.threads = 2;
    let (blocks, threads) = (9u32, 64u32);
    let n = (blocks * threads) as usize;
    let a = d.zeros::<u32>(n);
    let out = d.zeros::<u32>(n);
    d.launch_cooperative(
        "rotate",
        [blocks, 1, 1],
        [threads, 1, 1],
        &[arg(a), arg(out), arg(n as u32)],
    )
    .unwrap();
    let want: Vec<u32> = (0..n).map(|i| ((i + 1) % n) as u32 + 1).collect();
    assert_eq!(d.read::<u32>(out, n), want);
    // Not cooperative: no workspace, and the device runtime traps.
    let e = d
        .launch(
            "rotate",
            [blocks, 1, 1],
            [threads, 1, 1],
            0,
            &[arg(a), arg(out), arg(n as u32)],
        )
        .unwrap_err();
    assert!(matches!(e, KernelError::Trap(_)), "{e}");
}
