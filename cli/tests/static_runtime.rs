//! Programs built with nvcc's default, the static runtime: NVIDIA's own
//! `libcudart_static.a` inside the program, talking to rcud's `libcuda.so.1`
//! (the public driver API, `cuGetProcAddress` and the private export tables).
//! Every program of `tests/cuda` is built both ways, and under `rcud run` the
//! static build must pass and print what the `-cudart shared` build prints,
//! apart from timings, addresses and the runtime's own version.
//!
//! Requirements and skipping as in `e2e.rs` (see `common/mod.rs`).

mod common;

use std::time::Duration;

use common::{run_with_timeout, setup, Env, Run, PROGRAMS};

/// The emulated device interprets kernels on the CPU.
const TIMEOUT: Duration = Duration::from_secs(300);

/// Known differences: (program, arguments, why). Each is in
/// docs/compatibility.md.
const KNOWN_DIFFERENT: &[(&str, &[&str], &str)] = &[];

fn run(env: &Env, bin: &std::path::Path, args: &[&str], rcud_args: &[&str]) -> Run {
    let mut cmd = std::process::Command::new(&env.rcud);
    cmd.env_remove("LD_PRELOAD")
        .env_remove("RCUD_SERVERS")
        .arg("run")
        .args(rcud_args)
        .arg("--")
        .arg(bin)
        .args(args);
    run_with_timeout(cmd, TIMEOUT)
}

/// The lines a run reports, with what legitimately varies between runs and
/// runtimes masked: numbers with a fraction (timings, rates), addresses,
/// and the runtime's version (NVIDIA's static runtime reports its own).
fn verdicts(run: &Run) -> Vec<String> {
    run.stdout
        .lines()
        .filter(|l| !l.starts_with("runtime version:"))
        .map(|line| {
            line.split_whitespace()
                .map(|word| {
                    let fractional = word.contains('.')
                        && word.chars().any(|c| c.is_ascii_digit())
                        && word
                            .chars()
                            .all(|c| c.is_ascii_digit() || ".,:()%".contains(c));
                    if word.contains("0x") {
                        "<address>"
                    } else if fractional {
                        "<number>"
                    } else {
                        word
                    }
                })
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect()
}

#[test]
fn every_program_with_the_static_runtime() {
    let Some(env) = setup("every_program_with_the_static_runtime") else {
        return;
    };
    for &(name, args, rcud_args) in PROGRAMS {
        if let Some((_, _, why)) = KNOWN_DIFFERENT
            .iter()
            .find(|(n, a, _)| *n == name && *a == args)
        {
            eprintln!("{name} {args:?}: not compared: {why}");
            continue;
        }
        // The builds of the other test files, static linked from the same
        // objects: the programs differ in their runtime only.
        let shared = common::build_program(env, name, "shared");
        let stat = common::build_program(env, name, "static");
        let expected = run(env, &shared, args, rcud_args);
        expected.assert_pass(None);
        let got = run(env, &stat, args, rcud_args);
        got.assert_pass(None);
        let (want, have) = (verdicts(&expected), verdicts(&got));
        if want != have {
            got.fail(
                &format!(
                    "the static build of {name} printed otherwise than the shared build:\n\
                     shared: {want:#?}\nstatic: {have:#?}"
                ),
                None,
            );
        }
        eprintln!("{name} {args:?}: static runtime passes as the shared one does");
    }
}

/// The static runtime of a program built for CUDA 13 asks rcud's driver for
/// its private tables and the integrity answer; with neither, every call
/// would fail. A fresh process per call shows the set-up holds from the
/// first call on: the device query's very first runtime call succeeds.
#[test]
fn static_runtime_starts_without_an_nvidia_driver() {
    let Some(env) = setup("static_runtime_starts_without_an_nvidia_driver") else {
        return;
    };
    let bin = common::build_program(env, "device_query", "static");
    let got = run(env, &bin, &[], &[]);
    got.assert_pass(None);
    got.assert_contains("runtime version: 13.");
    got.assert_contains("device count: ");
    assert!(
        !got.stderr.contains("not provided by rcud"),
        "the runtime asked for a table rcud lacks:\n{}",
        got.transcript()
    );
}
