//! cuSOLVER (dense) end to end: `tests/cuda/math_solver.cu`, linked against
//! NVIDIA's `libcusolver.so.12` names (the link stubs of
//! [`common::math_args`]) with `-cudart shared` and `-cudart static`, run
//! under `rcud run`, where `librcudart.so` answers for cuSOLVER and the
//! emulated device computes on the CPU. The program checks every result by
//! its residual on the host.

mod common;

use common::{build_as, math_args, rcud_run, setup};

fn run_solver(test: &str, cudart: &str) {
    let Some(env) = setup(test) else {
        return;
    };
    let mut extra = math_args();
    extra.extend([
        "-lcusolver".to_string(),
        "-cudart".to_string(),
        cudart.to_string(),
    ]);
    let extra: Vec<&str> = extra.iter().map(String::as_str).collect();
    let bin = build_as(env, "math_solver", &format!("math_solver_{cudart}"), &extra);
    let run = rcud_run(env, None, &bin, &[]);
    run.assert_pass(None);
    for t in ["S", "D", "C", "Z"] {
        run.assert_line(&format!("{t} getrf/getrs: ok"));
        run.assert_line(&format!("{t} potrf/potrs: ok"));
        run.assert_line(&format!("{t} Xgeev: ok"));
    }
    for line in [
        "S geqrf/ormqr/orgqr: ok",
        "D geqrf/ormqr/orgqr: ok",
        "C geqrf/unmqr/ungqr: ok",
        "Z geqrf/unmqr/ungqr: ok",
        "S syevd: ok",
        "D syevd: ok",
        "C heevd: ok",
        "Z heevd: ok",
        "S gesvd: ok",
        "D gesvd: ok",
        "C gesvd: ok",
        "Z gesvd: ok",
        "singular devInfo: ok",
        "bad arguments: ok",
        "use after destroy: ok",
    ] {
        run.assert_line(line);
    }
}

#[test]
fn math_solver_cudart_shared() {
    run_solver("math_solver_cudart_shared", "shared");
}

#[test]
fn math_solver_cudart_static() {
    run_solver("math_solver_cudart_static", "static");
}

/// cuSOLVER's sparse API: `tests/cuda/math_solver_sp.cu`.
fn run_solver_sp(test: &str, cudart: &str) {
    let Some(env) = setup(test) else {
        return;
    };
    let mut extra = math_args();
    extra.extend([
        "-lcusolver".to_string(),
        "-lcusparse".to_string(),
        "-cudart".to_string(),
        cudart.to_string(),
    ]);
    let extra: Vec<&str> = extra.iter().map(String::as_str).collect();
    let bin = build_as(
        env,
        "math_solver_sp",
        &format!("math_solver_sp_{cudart}"),
        &extra,
    );
    let run = rcud_run(env, None, &bin, &[]);
    run.assert_pass(None);
    for t in ["S", "D", "C", "Z"] {
        for what in [
            "csrlsvHost",
            "csrlsv",
            "csrchol",
            "csrqr",
            "csrluHost",
            "csrqrsvBatched",
        ] {
            run.assert_line(&format!("{t} {what}: ok"));
        }
    }
    for t in ["D", "Z"] {
        for what in [
            "csrlsqvqr",
            "csreigvsi",
            "csreigs",
            "csrzfd",
            "csrcholDiag",
            "sparse extras bad arguments",
        ] {
            run.assert_line(&format!("{t} {what}: ok"));
        }
    }
    for line in [
        "orderings: ok",
        "csrperm: ok",
        "cusolverRf: ok",
        "cusolverRf batched: ok",
        "singular and bad arguments: ok",
        "use after destroy: ok",
    ] {
        run.assert_line(line);
    }
}

#[test]
fn math_solver_sp_cudart_shared() {
    run_solver_sp("math_solver_sp_cudart_shared", "shared");
}

#[test]
fn math_solver_sp_cudart_static() {
    run_solver_sp("math_solver_sp_cudart_static", "static");
}

/// The iterative-refinement solvers: `tests/cuda/math_solver_irs.cu`.
fn run_solver_irs(test: &str, cudart: &str) {
    let Some(env) = setup(test) else {
        return;
    };
    let mut extra = math_args();
    extra.extend([
        "-lcusolver".to_string(),
        "-cudart".to_string(),
        cudart.to_string(),
    ]);
    let extra: Vec<&str> = extra.iter().map(String::as_str).collect();
    let bin = build_as(
        env,
        "math_solver_irs",
        &format!("math_solver_irs_{cudart}"),
        &extra,
    );
    let run = rcud_run(env, None, &bin, &[]);
    run.assert_pass(None);
    for pair in [
        "DD", "DS", "DH", "DB", "DX", "SS", "SH", "SB", "SX", "ZZ", "ZC", "ZK", "ZE", "ZY", "CC",
        "CK", "CE", "CY",
    ] {
        run.assert_line_starts(&format!("{pair}gesv: ok"));
    }
    for pair in ["DD", "DS", "DH", "DX", "SS", "SH", "ZK", "CY"] {
        run.assert_line_starts(&format!("{pair}gels: ok"));
    }
    for line in [
        "IRSXgesv: ok",
        "fallback: ok",
        "IRSXgels: ok",
        "expert statuses: ok",
        "statuses: ok",
    ] {
        run.assert_line_starts(line);
    }
}

#[test]
fn math_solver_irs_cudart_shared() {
    run_solver_irs("math_solver_irs_cudart_shared", "shared");
}

#[test]
fn math_solver_irs_cudart_static() {
    run_solver_irs("math_solver_irs_cudart_static", "static");
}
