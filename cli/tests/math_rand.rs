//! cuRAND end to end: `tests/cuda/math_rand.cu` under `rcud run`, built with
//! the shared and the static CUDA runtime. The program compares the host
//! API (device and host generators) with `curand_kernel.h` run in kernels
//! by the emulated device, in the order NVIDIA's library places the values
//! (measured by `math/tests/curand_oracle.rs`), MT19937's first value with
//! the reference sequence's, MTGP32 against `curand_kernel.h` and values of
//! NVIDIA's library, Sobol32/64 against `curand_kernel.h`'s Sobol states,
//! `curandGeneratePoisson` (MTGP32) against `curand_poisson.h`'s inverse
//! transform and values of NVIDIA's library, and checks cuRAND's documented
//! statuses.
//!
//! Requirements and skipping as in `e2e.rs` (see `common/mod.rs`).

mod common;

use std::time::Duration;

use common::{build_as, math_args, rcud_run_within, setup};

/// The emulated device interprets the device-API kernels on the CPU.
const TIMEOUT: Duration = Duration::from_secs(600);

fn run_build(cudart: &str) {
    let name = format!("math_rand_{cudart}");
    let Some(env) = setup(&name) else { return };
    let mut extra = math_args();
    extra.extend(["-arch=sm_80", "-cudart", cudart, "-lcurand"].map(String::from));
    let extra: Vec<&str> = extra.iter().map(String::as_str).collect();
    let bin = build_as(env, "math_rand", &name, &extra);
    let run = rcud_run_within(env, None, &bin, &[], TIMEOUT);
    run.assert_pass(None);
    for generator in ["XORWOW", "Philox4_32_10", "MRG32k3a"] {
        for kind in [
            "bits",
            "uniform",
            "uniform_double",
            "normal",
            "normal_double",
            "log_normal",
            "log_normal_double",
        ] {
            run.assert_contains(&format!(
                "{generator} {kind}: 5000 values match curand_kernel.h"
            ));
        }
        run.assert_line(&format!(
            "{generator}: offset 1000 and two calls: 8000 values match curand_kernel.h"
        ));
    }
    run.assert_line("MT19937: first value, statuses, device and host agree");
    run.assert_line("MTGP32 64 blocks: 32768 values match curand_kernel.h and NVIDIA's");
    run.assert_line("MTGP32 192 blocks: 98304 values match curand_kernel.h and NVIDIA's");
    for sobol in ["Sobol32", "Sobol64"] {
        run.assert_line(&format!(
            "{sobol}: 90906 values in 3 dimensions match curand_kernel.h"
        ));
    }
    for lambda in ["50", "777.25"] {
        run.assert_line(&format!(
            "Poisson lambda {lambda}: 3001 values as curand_poisson.h's"
        ));
    }
    run.assert_line("curandGeneratePoisson(gen, got.data(), 6, 0.0) -> 104");
    run.assert_line("curandGenerateNormal(gen, d, 63, 0.0f, 1.0f) -> 105");
    // What a local GPU leaves undefined, rcud refuses.
    let hostile = rcud_run_within(env, None, &bin, &["hostile"], TIMEOUT);
    hostile.assert_pass(None);
    hostile.assert_line("curandGenerateUniform(gen, d, 65) -> 201");
    hostile.assert_line("curandDestroyGenerator(gen) -> 101");
    hostile.assert_line("hostile calls refused");
}

#[test]
fn math_rand_shared_runtime() {
    run_build("shared");
}

#[test]
fn math_rand_static_runtime() {
    run_build("static");
}
