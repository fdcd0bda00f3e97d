//! cuFFT end to end: `tests/cuda/math_fft.cu` (every transform type in 1-3
//! dimensions, batched, in place and out of place, advanced layouts,
//! cuFFT's error statuses), built against NVIDIA's cuFFT headers and link
//! stubs, with the CUDA runtime shared and static, run under `rcud run`
//! with the emulated device, whose cuFFT computes on the CPU.
//!
//! Needs nvcc (see `e2e.rs`) and the workspace built in the same profile.

mod common;

use std::time::Duration;

use common::{build_as, math_args, rcud_run_within, setup};

/// The host-side naive DFTs of the program take a few seconds.
const RUN_TIMEOUT: Duration = Duration::from_secs(300);

#[test]
fn math_fft() {
    let Some(env) = setup("math_fft") else {
        return;
    };
    for runtime in ["shared", "static"] {
        let mut args = math_args();
        args.extend(["-arch=sm_80", "-cudart", runtime, "-lcufft"].map(String::from));
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let bin = build_as(env, "math_fft", &format!("math_fft-{runtime}"), &args);
        let run = rcud_run_within(env, None, &bin, &[], RUN_TIMEOUT);
        run.assert_pass(None);
        run.assert_contains("C2C 3d 8x6x4 batch 0/1 out of place forward: ok");
        run.assert_contains("R2C 3d round trip: ok");
        run.assert_contains("D2Z 1d 1x1x1000 batch 1/2 out of place: ok");
        run.assert_contains("C2C 2d advanced layout (cufftMakePlanMany64, own stream): ok");
        run.assert_line(
            "cufftExecC2C(plan, (cufftComplex*)d, (cufftComplex*)d, CUFFT_FORWARD) -> 3",
        );
        run.assert_line("cufftExecR2C(plan, NULL, (cufftComplex*)d) -> 4");
        run.assert_line("cufftXtSetCallback(plan, callbacks, CUFFT_CB_LD_COMPLEX, NULL) -> 16");
        // What NVIDIA's cuFFT accepts or leaves undefined, rcud refuses.
        let hostile = rcud_run_within(env, None, &bin, &["hostile"], RUN_TIMEOUT);
        hostile.assert_pass(None);
        hostile.assert_line("cufftPlan2d(&plan, 4, -3, CUFFT_C2C) -> 8");
        hostile.assert_line("cufftExecR2C(plan, d + 100, (cufftComplex*)d) -> 4");
        hostile.assert_line("cufftDestroy(plan) -> 1");
        hostile.assert_line("hostile calls refused");
    }
}
