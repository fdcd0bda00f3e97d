//! cuBLAS end to end: `tests/cuda/math_blas.cu`, linked against NVIDIA's
//! `libcublas.so.13` (link stubs; `rcud run` provides the library), run on
//! the emulated device. The program checks every result against a host
//! reference, and the statuses of bad calls against those NVIDIA's cuBLAS
//! 13.1 gave on an H200 (`scripts/gpu-check.sh` compares the two), and
//! prints `PASS`; `math_blas hostile` checks rcud's refusals of what a
//! local GPU leaves undefined.
//!
//! Needs nvcc and the math headers as `cli/tests/common/mod.rs` describes.

mod common;

use common::{build_as, math_args, rcud_run, setup};

fn run(out_name: &str, cudart: &str) {
    let Some(env) = setup(out_name) else {
        return;
    };
    let mut extra = math_args();
    extra.extend(["-cudart", cudart, "-lcublas"].map(String::from));
    let extra: Vec<&str> = extra.iter().map(String::as_str).collect();
    let bin = build_as(env, "math_blas", out_name, &extra);
    let run = rcud_run(env, None, &bin, &[]);
    run.assert_pass(None);
    for line in [
        "handle and copies ok",
        "Sgemm: 9 transpose combinations ok",
        "Dgemm: 9 transpose combinations ok",
        "Cgemm: 9 transpose combinations ok",
        "Zgemm: 9 transpose combinations ok",
        "level 1 ok",
        "level 2 ok",
        "banded and packed level 2 ok",
        "rank updates ok",
        "level 3 (symm, herk, trmm, trsm, geam, dgmm) ok",
        "syr2k, her2k, syrkx, herkx ok",
        "rotg, rotmg, rotm ok",
        "batched and mixed-precision GEMM ok",
        "S gemmGroupedBatched ok",
        "D gemmGroupedBatched ok",
        "Ex C gemmGroupedBatched ok",
        "Ex Z gemmGroupedBatched ok",
        "S trsm, gemv, geqrf, gels batched ok",
        "D trsm, gemv, geqrf, gels batched ok",
        "C trsm, gemv, geqrf, gels batched ok",
        "Z trsm, gemv, geqrf, gels batched ok",
        "errors ok",
    ] {
        run.assert_line(line);
    }
    // The statuses of the bad calls are cuBLAS's own.
    run.assert_contains("-> CUBLAS_STATUS_NOT_INITIALIZED");
    run.assert_contains("-> CUBLAS_STATUS_INVALID_VALUE");
    run.assert_contains("-> CUBLAS_STATUS_MAPPING_ERROR");
    run.assert_contains("-> CUBLAS_STATUS_NOT_SUPPORTED");
    // What a local GPU leaves undefined, rcud refuses.
    let hostile = rcud_run(env, None, &bin, &["hostile"]);
    hostile.assert_pass(None);
    hostile.assert_line("hostile calls refused");
}

#[test]
fn math_blas_shared_cudart() {
    run("math_blas_shared", "shared");
}

#[test]
fn math_blas_static_cudart() {
    run("math_blas_static", "static");
}

/// cuBLASXt: `tests/cuda/math_blasxt.cu`, level-3 routines on host (and
/// device) memory through an Xt handle on device 0.
fn run_xt(out_name: &str, cudart: &str) {
    let Some(env) = setup(out_name) else {
        return;
    };
    let mut extra = math_args();
    extra.extend(["-cudart", cudart, "-lcublas"].map(String::from));
    let extra: Vec<&str> = extra.iter().map(String::as_str).collect();
    let bin = build_as(env, "math_blasxt", out_name, &extra);
    let run = rcud_run(env, None, &bin, &[]);
    run.assert_pass(None);
    for line in [
        "settings ok",
        "Sgemm: 9 transpose combinations on host memory ok",
        "Dgemm: 9 transpose combinations on host memory ok",
        "Cgemm: 9 transpose combinations on host memory ok",
        "Zgemm: 9 transpose combinations on host memory ok",
        "gemm on device memory ok",
        "symm and hemm on host memory ok",
        "syrk and herk on host memory ok",
        "trmm and trsm on host memory ok",
        "errors ok",
    ] {
        run.assert_line(line);
    }
    run.assert_contains("-> CUBLAS_STATUS_NOT_INITIALIZED");
    run.assert_contains("-> CUBLAS_STATUS_INVALID_VALUE");
}

#[test]
fn math_blasxt_shared_cudart() {
    run_xt("math_blasxt_shared", "shared");
}

#[test]
fn math_blasxt_static_cudart() {
    run_xt("math_blasxt_static", "static");
}

/// cuBLASLt: `tests/cuda/math_blaslt.cu`.
fn run_lt(out_name: &str, cudart: &str) {
    let Some(env) = setup(out_name) else {
        return;
    };
    let mut extra = math_args();
    extra.extend(["-cudart", cudart, "-lcublasLt"].map(String::from));
    let extra: Vec<&str> = extra.iter().map(String::as_str).collect();
    let bin = build_as(env, "math_blaslt", out_name, &extra);
    let run = rcud_run(env, None, &bin, &[]);
    run.assert_pass(None);
    for line in [
        "default NN ok",
        "bias TN ok",
        "relu NT ok",
        "relu+bias TT ok",
        "gelu NN ok",
        "gelu+bias NN ok",
        "half matmul and errors ok",
    ] {
        run.assert_line(line);
    }
    run.assert_contains("-> CUBLAS_STATUS_NOT_SUPPORTED");
    run.assert_contains("-> CUBLAS_STATUS_NOT_INITIALIZED");
}

#[test]
fn math_blaslt_shared_cudart() {
    run_lt("math_blaslt_shared", "shared");
}

#[test]
fn math_blaslt_static_cudart() {
    run_lt("math_blaslt_static", "static");
}

/// Math library calls in CUDA graphs: `tests/cuda/math_graph.cu` captures
/// cuRAND, cuBLAS and cuFFT calls on a stream and launches the graph twice.
fn run_graph(out_name: &str, cudart: &str) {
    let Some(env) = setup(out_name) else {
        return;
    };
    let mut extra = math_args();
    extra.extend(["-cudart", cudart, "-lcublas", "-lcurand", "-lcufft"].map(String::from));
    let extra: Vec<&str> = extra.iter().map(String::as_str).collect();
    let bin = build_as(env, "math_graph", out_name, &extra);
    let run = rcud_run(env, None, &bin, &[]);
    run.assert_pass(None);
    for line in [
        "capture ran nothing ok",
        "graph launches ok",
        "gemm and fft in the graph ok",
        "reduction to the host refused ok",
    ] {
        run.assert_line(line);
    }
}

#[test]
fn math_graph_shared_cudart() {
    run_graph("math_graph_shared", "shared");
}

#[test]
fn math_graph_static_cudart() {
    run_graph("math_graph_static", "static");
}
