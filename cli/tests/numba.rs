//! Numba (numba-cuda) and cuda-python's `cuda.core` from PyPI, unmodified,
//! under `rcud run` on the emulated GPU: they reach the driver through
//! cuda-bindings (`dlopen("libcuda.so.1")` and `cuGetProcAddress`), compile
//! with NVVM and NVRTC on the client and link PTX with `cuLink*`.
//!
//! - `numba_smoke`: `tests/python/numba_smoke.py` (pytest), every test passes;
//! - `cuda_core_saxpy`: `tests/python/cuda_core_saxpy.py` (pytest), every
//!   test passes;
//! - `numba_bundled_suite_subset`: 63 modules of numba-cuda's own
//!   `numba.cuda.tests.cudapy` (`python -m numba.runtests -m 2 ...`), at
//!   least [`SUITE_PASS_FLOOR`] tests pass and nothing crashes.
//!
//! Needs the Python environment of `scripts/ensure-numba.sh`:
//! `$RCUD_NUMBA_PYTHON`, else `<repo>/.venv-numba/bin/python`. Without one
//! the tests print `skipped: ...` and pass, unless `RCUD_REQUIRE_CUDA=1`.
//! Needs the workspace built (`cargo build --release --workspace`).

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use common::{repo_root, run_with_timeout, Run};

/// Limit for one pytest file.
const PYTEST_TIMEOUT: Duration = Duration::from_secs(300);
/// Limit for the bundled-suite subset (about 3 minutes on 2 cores).
const SUITE_TIMEOUT: Duration = Duration::from_secs(600);

/// The modules of `numba.cuda.tests.cudapy` run by
/// `numba_bundled_suite_subset`: those that exercise kernels, device
/// functions, memory (managed memory and Numba's runtime included), atomics,
/// math, warps, ufuncs and the type system. Left out: modules with tests
/// that need what rcud lacks (IPC, kernels reading
/// page-locked host memory), CuPy or nvJitLink, or that read past small
/// allocations, and the slowest compile-bound ones; see
/// docs/compatibility.md.
const SUITE_MODULES: &[&str] = &[
    "alignment",
    "array",
    "array_args",
    "array_methods",
    "array_reductions",
    "atomics",
    "bfloat16",
    "bfloat16_bindings",
    "blackscholes",
    "boolean",
    "casting",
    "complex_kernel",
    "const_string",
    "constmem",
    "cooperative_groups",
    "cuda_jit_no_types",
    "device_array_capture",
    "device_func",
    "enums",
    "exception",
    "extending",
    "fastmath",
    "flow_control",
    "forall",
    "freevar",
    "frexp_ldexp",
    "globals",
    "gufunc",
    "gufunc_scalar",
    "idiv",
    "inline",
    "iterators",
    "lang",
    "libdevice",
    "mandel",
    "math",
    "minmax",
    "montecarlo",
    "nondet",
    "operator",
    "optimization",
    "overload",
    "powi",
    "py2_div_issue",
    "random",
    "record_dtype",
    "recursion",
    "reduction",
    "retrieve_autoconverted_arrays",
    "serialize",
    "slicing",
    "sm",
    "sm_creation",
    "ssa",
    "sync",
    "transpose",
    "userexc",
    "vectorize",
    "vectorize_complex",
    "vectorize_decor",
    "vectorize_device",
    "vectorize_scalar_arg",
    "warp_ops",
];

/// Passing tests of [`SUITE_MODULES`] measured with the packages that
/// `scripts/ensure-numba.sh` pins (1065 of 1090; the other 25 are skipped or
/// expected failures), less a small margin.
const SUITE_PASS_FLOOR: u64 = 1053;

struct Python {
    python: PathBuf,
    rcud: PathBuf,
}

/// The interpreter and `rcud`, or `None` (after printing `skipped: ...`)
/// when there is no Numba environment and `RCUD_REQUIRE_CUDA` is not `1`.
fn setup(test: &str) -> Option<Python> {
    let python = std::env::var_os("RCUD_NUMBA_PYTHON")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| repo_root().join(".venv-numba").join("bin").join("python"));
    if !python.is_file() {
        assert!(
            std::env::var("RCUD_REQUIRE_CUDA").as_deref() != Ok("1"),
            "RCUD_REQUIRE_CUDA=1 but there is no Python with numba-cuda at {}: run \
             scripts/ensure-numba.sh or set RCUD_NUMBA_PYTHON",
            python.display()
        );
        // Straight to stderr: the test harness captures `eprintln!`.
        use std::io::Write;
        let _ = writeln!(
            std::io::stderr(),
            "skipped: {test}: no Python with numba-cuda at {} (run scripts/ensure-numba.sh or set \
             RCUD_NUMBA_PYTHON); set RCUD_REQUIRE_CUDA=1 to make this a failure",
            python.display()
        );
        return None;
    }
    let rcud = PathBuf::from(env!("CARGO_BIN_EXE_rcud"));
    let lib = rcud.with_file_name("librcudart.so");
    assert!(
        lib.is_file(),
        "{} is missing: build the workspace first: cargo build --release --workspace",
        lib.display()
    );
    Some(Python { python, rcud })
}

/// `rcud run -- PYTHON ARGS` in the repository root, with its own embedded
/// server.
fn rcud_python(py: &Python, args: &[&str], timeout: Duration) -> Run {
    let mut cmd = Command::new(&py.rcud);
    cmd.current_dir(repo_root())
        .env_remove("LD_PRELOAD")
        .env_remove("RCUD_SERVERS")
        // Numba's on-disk cache and pytest's stay out of the tree.
        .env(
            "NUMBA_CACHE_DIR",
            std::env::temp_dir().join("rcud-numba-cache"),
        )
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .arg("run")
        .arg("--")
        .arg(&py.python)
        .args(args);
    run_with_timeout(cmd, timeout)
}

/// The count before `word` in pytest's summary line (`12 passed, 1 failed
/// in 3.4s`), 0 when absent.
fn pytest_count(summary: &str, word: &str) -> u64 {
    let words: Vec<&str> = summary
        .split(|c: char| c == ',' || c.is_whitespace())
        .filter(|w| !w.is_empty())
        .collect();
    words
        .windows(2)
        .find(|w| w[1] == word)
        .and_then(|w| w[0].parse().ok())
        .unwrap_or(0)
}

fn run_pytest(test: &str, file: &str) {
    let Some(py) = setup(test) else {
        return;
    };
    let path = Path::new("tests").join("python").join(file);
    let path = path.to_string_lossy();
    let run = rcud_python(
        &py,
        &["-m", "pytest", "-q", "-p", "no:cacheprovider", &path],
        PYTEST_TIMEOUT,
    );
    let summary = run
        .stdout
        .lines()
        .rev()
        .find(|l| l.contains(" passed") || l.contains(" failed") || l.contains(" error"))
        .unwrap_or("")
        .to_string();
    let passed = pytest_count(&summary, "passed");
    let bad = ["failed", "error", "errors", "skipped"]
        .iter()
        .map(|w| pytest_count(&summary, w))
        .sum::<u64>();
    if !run.status.success() || passed == 0 || bad != 0 {
        run.fail(
            &format!("{file}: every test must pass (summary: {summary:?})"),
            None,
        );
    }
}

#[test]
fn numba_smoke() {
    run_pytest("numba_smoke", "numba_smoke.py");
}

#[test]
fn cuda_core_saxpy() {
    run_pytest("cuda_core_saxpy", "cuda_core_saxpy.py");
}

/// Counts from unittest's closing lines: `Ran N tests` and `OK (skipped=S)`
/// or `FAILED (failures=F, errors=E, skipped=S, expected failures=X)`.
#[derive(Debug, Default, PartialEq, Eq)]
struct UnittestCounts {
    ran: u64,
    failures: u64,
    errors: u64,
    skipped: u64,
    expected_failures: u64,
    unexpected_successes: u64,
}

impl UnittestCounts {
    fn parse(text: &str) -> Option<Self> {
        let mut c = UnittestCounts::default();
        let ran_line = text.lines().rev().find(|l| l.starts_with("Ran "))?;
        c.ran = ran_line.split_whitespace().nth(1)?.parse().ok()?;
        let result = text
            .lines()
            .rev()
            .find(|l| l.starts_with("OK") || l.starts_with("FAILED"))?;
        if let Some((_, inner)) = result.split_once('(') {
            for part in inner.trim_end_matches(')').split(',') {
                let Some((key, value)) = part.split_once('=') else {
                    continue;
                };
                let value: u64 = value.trim().parse().ok()?;
                match key.trim() {
                    "failures" => c.failures = value,
                    "errors" => c.errors = value,
                    "skipped" => c.skipped = value,
                    "expected failures" => c.expected_failures = value,
                    "unexpected successes" => c.unexpected_successes = value,
                    _ => {}
                }
            }
        }
        Some(c)
    }

    fn passed(&self) -> u64 {
        self.ran.saturating_sub(
            self.failures
                + self.errors
                + self.skipped
                + self.expected_failures
                + self.unexpected_successes,
        )
    }
}

#[test]
fn numba_bundled_suite_subset() {
    let Some(py) = setup("numba_bundled_suite_subset") else {
        return;
    };
    let modules: Vec<String> = SUITE_MODULES
        .iter()
        .map(|m| format!("numba.cuda.tests.cudapy.test_{m}"))
        .collect();
    let mut args = vec!["-m", "numba.runtests", "-m", "2"];
    args.extend(modules.iter().map(String::as_str));
    let run = rcud_python(&py, &args, SUITE_TIMEOUT);
    // unittest reports on stderr.
    let Some(counts) = UnittestCounts::parse(&run.stderr) else {
        run.fail("no unittest summary (did the run crash?)", None);
    };
    // Exit status 1 is "some tests failed"; anything else (a signal, an
    // abort) is a crash.
    if !matches!(run.status.code(), Some(0 | 1)) {
        run.fail("the test run crashed", None);
    }
    if run.stderr.contains("internal error (panic)") {
        run.fail("rcud panicked", None);
    }
    let passed = counts.passed();
    use std::io::Write;
    let _ = writeln!(
        std::io::stderr(),
        "numba.cuda.tests.cudapy subset: {passed} passed of {} ({counts:?})",
        counts.ran
    );
    if passed < SUITE_PASS_FLOOR {
        run.fail(
            &format!(
                "{passed} tests passed, fewer than the floor of {SUITE_PASS_FLOOR}: {counts:?}"
            ),
            None,
        );
    }
}

#[test]
fn summaries_parse() {
    let c = UnittestCounts::parse(
        "...\n----\nRan 1069 tests in 198.403s\n\nFAILED (failures=1, errors=2, skipped=14, \
         expected failures=11)\n",
    )
    .expect("parses");
    assert_eq!(c.ran, 1069);
    assert_eq!(c.passed(), 1069 - 1 - 2 - 14 - 11);
    let ok = UnittestCounts::parse("Ran 5 tests in 1s\n\nOK\n").expect("parses");
    assert_eq!(ok.passed(), 5);
    assert!(UnittestCounts::parse("Traceback ...").is_none());
    assert_eq!(pytest_count("15 passed, 2 failed in 6.47s", "passed"), 15);
    assert_eq!(pytest_count("15 passed, 2 failed in 6.47s", "failed"), 2);
    assert_eq!(pytest_count("1 failed, 14 passed in 11.51s", "error"), 0);
}
