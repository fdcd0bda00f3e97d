//! cuSPARSE end to end: `tests/cuda/math_sparse.cu`, linked against NVIDIA's
//! `libcusparse.so.12` link stub, run under `rcud run` on the emulated
//! device, where rcud's `librcudart.so` answers as `libcusparse.so.12`. The
//! program checks every operation against dense host computations and the
//! library's statuses for bad input; it is built with the shared and the
//! static CUDA runtime.
//!
//! Needs nvcc and the built workspace, as `e2e.rs` does.

mod common;

use std::time::Duration;

use common::{build_as, math_args, rcud_run_within, setup};

/// Limit for one run (the computations run on the server's CPU).
const RUN_TIMEOUT: Duration = Duration::from_secs(180);

fn run_variant(cudart: &str) {
    let Some(env) = setup("math_sparse") else {
        return;
    };
    let mut args = math_args();
    args.extend(["-lcusparse", "-cudart", cudart].map(String::from));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let bin = build_as(env, "math_sparse", &format!("math_sparse-{cudart}"), &args);
    let run = rcud_run_within(env, None, &bin, &[], RUN_TIMEOUT);
    run.assert_pass(None);
    for line in [
        "handle: ok",
        "spmv f32 csr i32 base 0 op 0: ok",
        "spmv c64 csc i32 base 0 op 2: ok",
        "spmv f64 coo i64 base 0 op 1 device scalars: ok",
        "spmm c32 csc row op 0/2: ok",
        "spsv f64 fill 1 diag 0 op 1: ok",
        "csr2csc c64 base 1: ok",
        "csr2coo/coo2csr base 1: ok",
        "sparse2dense f32 base 0: ok",
        "dense2sparse c32 base 1: ok",
        "errors: ok",
    ] {
        run.assert_line(line);
    }
    run.assert_contains("spgemm f64 base 1 nnz ");
    run.assert_line(
        "cusparseSpMV(h, N, &one, sa.descr, vx, &zero, vwild, CUDA_R_32F, alg, NULL) -> \
         CUSPARSE_STATUS_INVALID_VALUE",
    );
}

#[test]
fn math_sparse_shared_runtime() {
    run_variant("shared");
}

#[test]
fn math_sparse_static_runtime() {
    run_variant("static");
}

/// `tests/cuda/math_sparse_legacy.cu`: sorting with its permutation,
/// Gather/Scatter, ILU(0)/IC(0) and their zero pivots, bad arguments.
fn run_legacy_variant(cudart: &str) {
    let Some(env) = setup("math_sparse_legacy") else {
        return;
    };
    let mut args = math_args();
    args.extend(["-lcusparse", "-cudart", cudart].map(String::from));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let bin = build_as(
        env,
        "math_sparse_legacy",
        &format!("math_sparse_legacy-{cudart}"),
        &args,
    );
    let run = rcud_run_within(env, None, &bin, &[], RUN_TIMEOUT);
    run.assert_pass(None);
    for line in [
        "coosort by row: ok",
        "coosort by column: ok",
        "csrsort base 0: ok",
        "cscsort base 1: ok",
        "scatter c32: ok",
        "ilu0 f32 base 0: ok",
        "ilu0 c64 base 1: ok",
        "ic0 f64 base 0: ok",
        "ic0 c32 base 1: ok",
        "zero pivots: ok",
        "errors: ok",
    ] {
        run.assert_line(line);
    }
    run.assert_line("cusparseXcsrilu02_zeroPivot(h, info, dpivot) -> CUSPARSE_STATUS_ZERO_PIVOT");
    run.assert_line(
        "cusparseDcsric02_analysis(h, 2, 2, descr, dv, d, d, icinfo, CUSPARSE_SOLVE_POLICY_NO_LEVEL, NULL) -> \
         CUSPARSE_STATUS_MATRIX_TYPE_NOT_SUPPORTED",
    );
}

#[test]
fn math_sparse_legacy_shared_runtime() {
    run_legacy_variant("shared");
}

#[test]
fn math_sparse_legacy_static_runtime() {
    run_legacy_variant("static");
}
