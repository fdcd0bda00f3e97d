//! CuPy from PyPI, unmodified, under `rcud run` on the emulated GPU, for
//! CUDA 13 (`cupy-cuda13x`) and CUDA 12 (`cupy-cuda12x`). Both wheels carry
//! NVIDIA's CUDA runtime, linked statically, so everything reaches rcud
//! through its `libcuda.so.1`: NVIDIA's runtime (12.x or 13.x) with its
//! private export tables, CuPy's own driver calls for the kernels it
//! compiles with NVRTC, and the CUB and Thrust kernels built into the wheel.
//!
//! - `cupy13_smoke`, `cupy12_smoke`: `tests/python/cupy_smoke.py` (pytest),
//!   every test passes;
//! - `cupy13_math_libraries`, `cupy12_math_libraries`:
//!   `tests/python/cupy_math.py`: matrix products, `linalg`, FFT, random
//!   numbers and sparse matrices through rcud's cuBLAS, cuSOLVER, cuFFT,
//!   cuRAND and cuSPARSE, checked against numpy; every test passes;
//! - `cupy13_suite_subset`, `cupy12_suite_subset`: files of CuPy's own test
//!   suite (`tests/python/cupy_suite`, from CuPy 14.2.0), at least the
//!   measured number of tests pass and none errors;
//! - `cupy13_linalg_suite_subset`: CuPy's own `linalg` tests of solves and
//!   decompositions; every test passes.
//!
//! Needs the Python environments of `scripts/ensure-cupy.sh`:
//! `$RCUD_CUPY13_PYTHON` / `$RCUD_CUPY12_PYTHON`, else
//! `<repo>/.venv-cupy13/bin/python` / `<repo>/.venv-cupy12/bin/python`.
//! Without one the tests print `skipped: ...` and pass, unless
//! `RCUD_REQUIRE_CUDA=1`. Needs the workspace built (`cargo build --release
//! --workspace`). CuPy's kernel cache goes to `target/cupy-kernel-cache/`.

mod common;

use std::io::Write;
use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use common::{repo_root, run_with_timeout, Run};

/// Limit for the smoke module (about 30 s with an empty kernel cache).
const SMOKE_TIMEOUT: Duration = Duration::from_secs(300);
/// Limit for the suite subset (70 s with an empty kernel cache, on 2 cores
/// shared with another run; over 400 s on 2 cores shared with four builds).
const SUITE_TIMEOUT: Duration = Duration::from_secs(900);

/// The files of CuPy's test suite run by the `*_suite_subset` tests, under
/// `tests/python/cupy_suite/cupy_tests/`: elementwise and reduction
/// kernels, `RawKernel`/`RawModule`, user kernels, scans and CUB
/// reductions, ufuncs, sorting (CUB and Thrust), streams, events and the
/// memory pools. Chosen to run in about a minute on the emulated GPU; see
/// docs/compatibility.md for what fails and why.
const SUITE_FILES: &[&str] = &[
    "core_tests/test_elementwise.py",
    "core_tests/test_userkernel.py",
    "core_tests/test_raw.py",
    "core_tests/test_scan.py",
    "core_tests/test_cub_reduction.py",
    "core_tests/test_reduction.py",
    "math_tests/test_rounding.py",
    "math_tests/test_trigonometric.py",
    "sorting_tests/test_sort.py",
    "cuda_tests/test_stream.py",
    "cuda_tests/test_pinned_memory.py",
    "cuda_tests/test_memory.py",
    "cuda_tests/test_device.py",
    "cuda_tests/test_runtime.py",
    "cuda_tests/test_nvrtc.py",
];

/// Tests of [`SUITE_FILES`] left out for time alone (node id prefixes): the
/// reductions of tens of millions of elements (5 to 10 s each on the
/// emulated GPU), the reductions of 27 sizes each (15 to 20 s each to
/// compile their kernels) and `partition`/`argpartition` (two minutes,
/// compiling a kernel for each shape and running large ones).
const SUITE_DESELECTED: &[&str] = &[
    "core_tests/test_reduction.py::TestSimpleReductionFunction::test_shape1",
    "core_tests/test_reduction.py::TestReductionKernel::test_shape1",
    "core_tests/test_reduction.py::TestSimpleReductionFunction::test_shape4",
    "core_tests/test_reduction.py::TestSimpleReductionFunction::test_shape5",
    "core_tests/test_reduction.py::TestReductionKernel::test_shape4",
    "sorting_tests/test_sort.py::TestPartition",
    "sorting_tests/test_sort.py::TestArgpartition",
];

/// One CuPy build.
struct Flavour {
    /// `cupy13` or `cupy12`, as the tests are named.
    name: &'static str,
    /// The variable naming its interpreter.
    var: &'static str,
    /// Its virtual environment under the repository root.
    venv: &'static str,
    /// Passing tests of [`SUITE_FILES`] measured with the packages that
    /// `scripts/ensure-cupy.sh` pins (468 of 601 selected for either build;
    /// 47 fail for want of cuRAND and friends, SASS or features rcud lacks,
    /// see docs/compatibility.md), less a small margin.
    suite_floor: u64,
}

const CUPY13: Flavour = Flavour {
    name: "cupy13",
    var: "RCUD_CUPY13_PYTHON",
    venv: ".venv-cupy13",
    suite_floor: 500,
};

const CUPY12: Flavour = Flavour {
    name: "cupy12",
    var: "RCUD_CUPY12_PYTHON",
    venv: ".venv-cupy12",
    suite_floor: 500,
};

struct Python {
    flavour: &'static Flavour,
    python: PathBuf,
    rcud: PathBuf,
}

/// The interpreter and `rcud`, or `None` (after printing `skipped: ...`)
/// when the flavour's environment is missing and `RCUD_REQUIRE_CUDA` is not
/// `1`.
fn setup(test: &str, flavour: &'static Flavour) -> Option<Python> {
    let python = std::env::var_os(flavour.var)
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| repo_root().join(flavour.venv).join("bin").join("python"));
    if !python.is_file() {
        assert!(
            std::env::var("RCUD_REQUIRE_CUDA").as_deref() != Ok("1"),
            "RCUD_REQUIRE_CUDA=1 but there is no Python with CuPy at {}: run \
             scripts/ensure-cupy.sh or set {}",
            python.display(),
            flavour.var
        );
        // Straight to stderr: the test harness captures `eprintln!`.
        let _ = writeln!(
            std::io::stderr(),
            "skipped: {test}: no Python with CuPy at {} (run scripts/ensure-cupy.sh or set {}); \
             set RCUD_REQUIRE_CUDA=1 to make this a failure",
            python.display(),
            flavour.var
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
    Some(Python {
        flavour,
        python,
        rcud,
    })
}

/// nvcc, for CuPy's `backend='nvcc'` (`$RCUD_NVCC`, else the one
/// `scripts/ensure-nvcc.sh` installs), or `None` after printing `skipped:
/// ...` (a failure with `RCUD_REQUIRE_CUDA=1`).
fn nvcc(test: &str) -> Option<PathBuf> {
    let venv = repo_root().join(".venv-cuda").join("lib");
    let found = std::env::var_os("RCUD_NVCC")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| {
            let pythons = std::fs::read_dir(venv).ok()?;
            pythons
                .flatten()
                .map(|e| e.path().join("site-packages/nvidia/cu13/bin/nvcc"))
                .find(|p| p.is_file())
        })
        .filter(|p| p.is_file());
    if found.is_none() {
        assert!(
            std::env::var("RCUD_REQUIRE_CUDA").as_deref() != Ok("1"),
            "RCUD_REQUIRE_CUDA=1 but no nvcc was found: run scripts/ensure-nvcc.sh or set RCUD_NVCC"
        );
        let _ = writeln!(
            std::io::stderr(),
            "skipped: {test}: no nvcc (run scripts/ensure-nvcc.sh or set RCUD_NVCC); set \
             RCUD_REQUIRE_CUDA=1 to make this a failure"
        );
    }
    found
}

/// `rcud run -- PYTHON -m pytest ARGS` in the repository root, with its own
/// embedded server and the variables `vars`.
fn rcud_pytest(
    py: &Python,
    args: &[&str],
    vars: &[(&str, &std::ffi::OsStr)],
    timeout: Duration,
) -> Run {
    let cache = repo_root()
        .join("target")
        .join("cupy-kernel-cache")
        .join(py.flavour.name);
    let mut cmd = Command::new(&py.rcud);
    cmd.current_dir(repo_root())
        .env_remove("LD_PRELOAD")
        .env_remove("RCUD_SERVERS")
        // `rcud run` sets it: the tests check that it does.
        .env_remove("CUPY_COMPILE_WITH_PTX")
        .env("CUPY_CACHE_DIR", cache)
        // One emulated GPU: CuPy's multi-GPU tests skip.
        .env("CUPY_TEST_GPU_LIMIT", "1")
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .envs(vars.iter().copied())
        .arg("run")
        .arg("--")
        .arg(&py.python)
        .args(["-m", "pytest", "-q", "-p", "no:cacheprovider"])
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

/// pytest's closing summary line, or "" when the run printed none.
fn pytest_summary(run: &Run) -> String {
    run.stdout
        .lines()
        .rev()
        .map(|l| l.trim_matches(|c: char| c == '=' || c.is_whitespace()))
        .find(|l| {
            [" passed", " failed", " error", " skipped", "no tests ran"]
                .iter()
                .any(|w| l.contains(w))
        })
        .unwrap_or("")
        .to_string()
}

fn smoke(test: &str, flavour: &'static Flavour) {
    every_test_passes(test, flavour, "tests/python/cupy_smoke.py");
}

/// Runs pytest module `module`; every test in it must pass.
fn every_test_passes(test: &str, flavour: &'static Flavour, module: &str) {
    let Some(py) = setup(test, flavour) else {
        return;
    };
    let run = rcud_pytest(&py, &[module], &[], SMOKE_TIMEOUT);
    let summary = pytest_summary(&run);
    let passed = pytest_count(&summary, "passed");
    let bad = ["failed", "error", "errors", "skipped"]
        .iter()
        .map(|w| pytest_count(&summary, w))
        .sum::<u64>();
    if !run.status.success() || passed == 0 || bad != 0 {
        run.fail(
            &format!("{module}: every test must pass (summary: {summary:?})"),
            None,
        );
    }
}

fn suite_subset(test: &str, flavour: &'static Flavour) {
    let Some(py) = setup(test, flavour) else {
        return;
    };
    let dir = "tests/python/cupy_suite";
    let ini = format!("{dir}/pytest.ini");
    let files: Vec<String> = SUITE_FILES
        .iter()
        .map(|f| format!("{dir}/cupy_tests/{f}"))
        .collect();
    let deselected: Vec<String> = SUITE_DESELECTED
        .iter()
        // Node ids are relative to the rootdir, the directory of pytest.ini.
        .map(|t| format!("--deselect=cupy_tests/{t}"))
        .collect();
    let mut args = vec!["-c", &ini, "-m", "not slow", "-rfE"];
    args.extend(deselected.iter().map(String::as_str));
    args.extend(files.iter().map(String::as_str));
    // test_raw.py asks nvcc for its version when it is collected.
    let Some(nvcc) = nvcc(test) else {
        return;
    };
    let run = rcud_pytest(&py, &args, &[("NVCC", nvcc.as_os_str())], SUITE_TIMEOUT);
    let summary = pytest_summary(&run);
    // Exit status 1 is "some tests failed"; anything else (a signal, an
    // abort, an interrupted collection) is a crash.
    if !matches!(run.status.code(), Some(0 | 1)) || summary.is_empty() {
        run.fail("the test run crashed", None);
    }
    if run.stderr.contains("internal error (panic)") {
        run.fail("rcud panicked", None);
    }
    let passed = pytest_count(&summary, "passed");
    let errors = pytest_count(&summary, "error") + pytest_count(&summary, "errors");
    let _ = writeln!(
        std::io::stderr(),
        "{} suite subset: {summary}",
        flavour.name
    );
    if errors != 0 {
        run.fail(
            &format!("tests errored (in set-up or collection): {summary:?}"),
            None,
        );
    }
    if passed < flavour.suite_floor {
        run.fail(
            &format!(
                "{passed} tests passed, fewer than the {} measured (summary: {summary:?})",
                flavour.suite_floor
            ),
            None,
        );
    }
}

#[test]
fn cupy13_smoke() {
    smoke("cupy13_smoke", &CUPY13);
}

#[test]
fn cupy12_smoke() {
    smoke("cupy12_smoke", &CUPY12);
}

#[test]
fn cupy13_math_libraries() {
    every_test_passes(
        "cupy13_math_libraries",
        &CUPY13,
        "tests/python/cupy_math.py",
    );
}

#[test]
fn cupy12_math_libraries() {
    every_test_passes(
        "cupy12_math_libraries",
        &CUPY12,
        "tests/python/cupy_math.py",
    );
}

#[test]
fn cupy13_suite_subset() {
    suite_subset("cupy13_suite_subset", &CUPY13);
}

#[test]
fn cupy12_suite_subset() {
    suite_subset("cupy12_suite_subset", &CUPY12);
}

/// The `linalg` files of CuPy's suite that rcud's cuSOLVER and cuBLAS
/// serve in full, without the `*_loop` SVD tests: the same calls on larger
/// stacks, 150 s more. `test_eigenvalue.py` covers `eigh`, `eigvalsh`
/// (syevd and the batched Jacobi solver) and `eig`, `eigvals`
/// (`cusolverDnXgeev`); `cupyx_tests/test_cusolver.py` the iterative
/// refinement solvers (`gesv`, `gels`), `gesvdj`, `gesvda`, `syevj` and
/// `csrlsvqr` (skipped: it wants SciPy, which is not installed).
const LINALG_FILES: &[&str] = &[
    "cupy_tests/linalg_tests/test_solve.py",
    "cupy_tests/linalg_tests/test_decomposition.py",
    "cupy_tests/linalg_tests/test_eigenvalue.py",
    "cupyx_tests/test_cusolver.py",
];

/// CuPy 13 only: the same libraries serve both wheels, and `cupy_math.py`
/// covers them on CuPy 12.
#[test]
fn cupy13_linalg_suite_subset() {
    let Some(py) = setup("cupy13_linalg_suite_subset", &CUPY13) else {
        return;
    };
    let dir = "tests/python/cupy_suite";
    let ini = format!("{dir}/pytest.ini");
    let files: Vec<String> = LINALG_FILES.iter().map(|f| format!("{dir}/{f}")).collect();
    let mut args = vec!["-c", &ini, "-m", "not slow", "-k", "not _loop", "-rfE"];
    args.extend(files.iter().map(String::as_str));
    let run = rcud_pytest(&py, &args, &[], SUITE_TIMEOUT);
    let summary = pytest_summary(&run);
    let _ = writeln!(std::io::stderr(), "cupy13 linalg subset: {summary}");
    let passed = pytest_count(&summary, "passed");
    let bad = ["failed", "error", "errors"]
        .iter()
        .map(|w| pytest_count(&summary, w))
        .sum::<u64>();
    if !run.status.success() || passed == 0 || bad != 0 {
        run.fail(
            &format!("every test of CuPy's linalg subset must pass (summary: {summary:?})"),
            None,
        );
    }
}

#[test]
fn pytest_summaries_are_read() {
    let s = "3 failed, 120 passed, 4 skipped, 1 xfailed, 2 errors in 61.20s (0:01:01)";
    assert_eq!(pytest_count(s, "passed"), 120);
    assert_eq!(pytest_count(s, "failed"), 3);
    assert_eq!(pytest_count(s, "errors"), 2);
    assert_eq!(pytest_count(s, "error"), 0);
}
