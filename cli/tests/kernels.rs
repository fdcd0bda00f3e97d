//! Kernel launches end to end: the self-checking CUDA programs
//! `tests/cuda/k_*.cu`, each built in four variants (nvcc's default fatbin
//! compression and `--compress-mode none`, `speed`, `size`, all for sm_80),
//! run unmodified under `rcud run` with its embedded server. Every run must
//! exit with status 0 and print `PASS` last; each test also checks the
//! program's own lines. Each program runs on the interpreter and, from the
//! same binary, on the compiling engine (`RCUD_EMU_ENGINE=jit`).
//!
//! Requirements and skipping as in `e2e.rs` (see `common/mod.rs`): without
//! nvcc the tests print `skipped: ...` and pass, unless `RCUD_REQUIRE_CUDA=1`.
//! Binaries go to `<repo>/target/cuda-tests/<program>-<variant>`.

mod common;

use std::collections::HashMap;
use std::path::PathBuf;
use std::time::Duration;

use common::{build_as, rcud_run_on, rcud_run_within, setup, Env, Run, ENGINES};

/// Limit for one run: the emulated device interprets the kernels on the CPU.
const KERNEL_RUN_TIMEOUT: Duration = Duration::from_secs(300);

/// nvcc arguments of every variant: the emulated device is compute capability
/// 8.0, and host-code warnings show up in a failed build's output.
const COMMON_ARGS: &[&str] = common::KERNEL_PROGRAM_ARGS;

/// Each variant's name (the suffix of the binary) and its extra nvcc arguments.
const VARIANTS: [(&str, &[&str]); 4] = [
    ("default", &[]),
    ("none", &["--compress-mode", "none"]),
    ("speed", &["--compress-mode", "speed"]),
    ("size", &["--compress-mode", "size"]),
];

/// `tests/cuda/<name>.cu` built in every variant, all built before any runs.
fn build_variants(env: &Env, name: &str) -> Vec<(&'static str, PathBuf)> {
    VARIANTS
        .iter()
        .map(|&(variant, extra)| {
            let args: Vec<&str> = COMMON_ARGS.iter().chain(extra).copied().collect();
            let bin = build_as(env, name, &format!("{name}-{variant}"), &args);
            (variant, bin)
        })
        .collect()
}

/// Runs every variant of `tests/cuda/<name>.cu` under `rcud run -- BIN ARGS`
/// (once per entry of `arg_sets`), asserts that each passes, and hands each run
/// with its arguments to `check`. The `default` variant also runs on the
/// compiling engine (`RCUD_EMU_ENGINE=jit`); the others differ from it only in
/// how the fatbin is compressed, not in the PTX the engines run.
fn run_variants(name: &str, arg_sets: &[&[&str]], check: impl Fn(&[&str], &Run)) {
    let Some(env) = setup(name) else { return };
    for (variant, bin) in build_variants(env, name) {
        let engines: &[&str] = if variant == "default" {
            &ENGINES
        } else {
            &ENGINES[..1]
        };
        for &engine in engines {
            for &args in arg_sets {
                let run = rcud_run_on(env, None, &bin, args, KERNEL_RUN_TIMEOUT, Some(engine));
                run.assert_pass(None);
                check(args, &run);
                eprintln!("{name} [{variant}, {engine}] {args:?}: passed");
            }
        }
    }
}

/// `rcud run -- BIN ARGS` on each engine of the emulated device, the same
/// binary each time.
fn runs_on_both_engines<'a>(
    env: &'a Env,
    bin: &'a std::path::Path,
    args: &'a [&'a str],
) -> impl Iterator<Item = Run> + 'a {
    ENGINES
        .into_iter()
        .map(move |engine| rcud_run_on(env, None, bin, args, KERNEL_RUN_TIMEOUT, Some(engine)))
}

/// Runs every variant without arguments and asserts each of `lines`.
fn run_and_expect(name: &str, lines: &[String]) {
    run_variants(name, &[&[]], |_, run| assert_lines(run, lines));
}

fn assert_lines(run: &Run, lines: &[String]) {
    for line in lines {
        run.assert_line(line);
    }
}

fn owned(lines: &[&str]) -> Vec<String> {
    lines.iter().map(|l| l.to_string()).collect()
}

#[test]
fn k_vector_add() {
    let mut lines = Vec::new();
    for n in [1usize, 255, 256, 257, 1000, 4097, 65539] {
        for block in [256usize, 128, 1024, 32] {
            let grid = n.div_ceil(block);
            for how in ["<<<>>>", "cudaLaunchKernel"] {
                lines.push(format!(
                    "vector_add n={n} block={block} grid={grid} {how}: ok"
                ));
            }
        }
    }
    for n in [1, 95, 10001] {
        lines.push(format!("vector_add_int n={n} cudaLaunchKernel: ok"));
    }
    run_and_expect("k_vector_add", &lines);
}

#[test]
fn k_saxpy() {
    let mut lines = Vec::new();
    for (n, grid, block) in [
        (1, 1, 32),
        (4099, 1, 64),
        (4099, 4, 128),
        (100003, 7, 96),
        (100003, 32, 256),
        (31, 2, 1024),
    ] {
        for ty in ["float", "double"] {
            lines.push(format!("saxpy<{ty}> n={n} grid={grid} block={block}: ok"));
        }
    }
    run_and_expect("k_saxpy", &lines);
}

#[test]
fn k_struct_args() {
    let kernels = [
        "k_awkward",
        "k_awkward via cudaLaunchKernel",
        "k_nested",
        "k_tiny",
        "k_with_array",
        "k_small_ints",
        "k_mixed",
        "k_aligned",
        "k_big",
    ];
    let lines: Vec<String> = kernels.iter().map(|k| format!("{k}: ok")).collect();
    run_and_expect("k_struct_args", &lines);
}

#[test]
fn k_math() {
    let lines = owned(&[
        "int32: 15 ops ok",
        "uint32: 12 ops ok",
        "int64: 14 ops ok",
        "uint64: 8 ops ok",
        "float: 30 ops ok",
        "double: 23 ops ok",
        "half: 8 ops ok",
    ]);
    run_and_expect("k_math", &lines);
}

#[test]
fn k_device_functions() {
    let lines = owned(&[
        "inline helpers: ok",
        "noinline dot/cross/divmod/mix: ok",
        "noinline struct result: ok",
        "recursive factorial: ok",
        "recursive fib: ok",
        "recursive ackermann: ok",
        "mutual recursion: ok",
    ]);
    run_and_expect("k_device_functions", &lines);
}

#[test]
fn k_symbols() {
    let lines = owned(&[
        "cudaGetSymbolSize(c_coeffs) = 64",
        "cudaGetSymbolSize(c_table) = 1024",
        "cudaGetSymbolSize(c_shorts) = 6",
        "cudaGetSymbolSize(d_counter) = 4",
        "cudaGetSymbolSize(d_array) = 256",
        "cudaGetSymbolSize(d_ull) = 8",
        "initialisers: ok",
        "cudaMemcpyToSymbol/FromSymbol with offsets: ok",
        "kernel reads __constant__ and updates __device__: ok (d_counter = 1005)",
        "cudaGetSymbolAddress(d_array): ok",
        "cudaMemcpyToSymbolAsync/FromSymbolAsync on stream 0: ok",
        "cudaMemcpy through the symbol address: ok",
        "device-to-device symbol copies: ok",
        "cudaMemcpyToSymbol(past the end of c_coeffs) -> cudaErrorInvalidValue",
        "cudaGetSymbolAddress(host variable) -> cudaErrorInvalidSymbol",
        "symbol errors: ok",
        "pointer table initialiser: ok",
    ]);
    run_and_expect("k_symbols", &lines);
}

#[test]
fn k_grid2d() {
    let mut lines = Vec::new();
    for (rows, cols, bx, by) in [
        (37, 100, 16, 8),
        (128, 33, 32, 4),
        (1, 257, 64, 2),
        (300, 200, 8, 16),
    ] {
        lines.push(format!("transpose {rows}x{cols} block {bx}x{by}: ok"));
        lines.push(format!("transpose_tiled {rows}x{cols}: ok"));
    }
    for (h, w, bx, by) in [(45, 70, 32, 4), (3, 200, 16, 16), (129, 17, 8, 8)] {
        lines.push(format!("stencil {h}x{w} block {bx}x{by}: ok"));
    }
    for (grid, block) in [
        ((3, 2, 4), (4, 3, 5)),
        ((1, 5, 1), (33, 1, 2)),
        ((2, 1, 3), (1, 1, 64)),
    ] {
        lines.push(format!(
            "grid3d grid ({},{},{}) block ({},{},{}): ok",
            grid.0, grid.1, grid.2, block.0, block.1, block.2
        ));
    }
    run_and_expect("k_grid2d", &lines);
}

#[test]
fn k_matmul_tiled() {
    let mut lines = Vec::new();
    for (m, k, n) in [
        (37, 50, 29),
        (64, 64, 64),
        (100, 3, 77),
        (1, 130, 1),
        (17, 16, 33),
    ] {
        lines.push(format!("matmul<float> {m}x{k} * {k}x{n} (tile 16): ok"));
    }
    for (m, k, n) in [(37, 50, 29), (20, 9, 70)] {
        lines.push(format!("matmul<double> {m}x{k} * {k}x{n} (tile 8): ok"));
    }
    run_and_expect("k_matmul_tiled", &lines);
}

#[test]
fn k_reduction() {
    let mut lines = Vec::new();
    for n in [1usize, 31, 32, 33, 1000, 65537, 100000] {
        for (kind, ty, block) in [
            ("reduce_shared", "int", 256usize),
            ("reduce_shared", "float", 128),
            ("reduce_shared", "double", 1024),
            ("reduce_shuffle", "int", 96),
            ("reduce_shuffle", "float", 256),
            ("reduce_shuffle", "double", 1024),
        ] {
            let grid = n.div_ceil(block).min(64);
            lines.push(format!("{kind}<{ty}> n={n} block={block} grid={grid}: ok"));
        }
    }
    lines.extend(owned(&[
        "warp allreduce xor: ok",
        "warp scan shfl_up: ok",
        "warp broadcast shfl: ok",
    ]));
    run_and_expect("k_reduction", &lines);
}

#[test]
fn k_histogram() {
    let mut lines = Vec::new();
    for n in [1, 1000, 100003] {
        lines.push(format!("histogram shared+global n={n}: ok"));
        lines.push(format!("histogram global n={n}: ok"));
    }
    for place in ["global", "shared"] {
        for ty in ["int", "unsigned", "ull", "float", "double"] {
            lines.push(format!("atomics {ty} {place}: ok"));
        }
        lines.push(format!("atomicExch/atomicInc old values {place}: ok"));
    }
    run_and_expect("k_histogram", &lines);
}

#[test]
fn k_warp_vote() {
    let lines: Vec<String> = [(1, 64), (1, 48), (3, 40), (2, 7), (1, 1), (2, 1024)]
        .iter()
        .map(|(grid, block)| format!("warp vote block={block} grid={grid}: ok"))
        .collect();
    run_and_expect("k_warp_vote", &lines);
}

/// Separable compilation: `tests/cuda/rdc/main.cu` and `lib.cu` built with
/// `-rdc=true`, with the shared and with nvcc's default static runtime
/// (failed before: the device-linked image holds SASS only).
#[test]
fn separable_compilation() {
    let Some(env) = setup("separable_compilation") else {
        return;
    };
    let lib = common::repo_root().join("tests/cuda/rdc/lib.cu");
    let lib = lib.to_string_lossy().into_owned();
    for (variant, runtime) in [("shared", "shared"), ("static", "static")] {
        let args = ["-arch=sm_80", "-rdc=true", "-cudart", runtime, lib.as_str()];
        let bin = build_as(env, "rdc/main", &format!("rdc-{variant}"), &args);
        for run in runs_on_both_engines(env, &bin, &[]) {
            run.assert_pass(None);
            run.assert_line("separate translation units linked: ok");
        }
    }
}

/// Dynamic parallelism (`tests/cuda/k_dynamic.cu`, `-rdc=true` with
/// libcudadevrt): kernels launching kernels on device streams, a tail
/// launch, nested printf; shared and static runtime (failed before: calls
/// to the device runtime were unsupported PTX).
#[test]
fn dynamic_parallelism() {
    let Some(env) = setup("dynamic_parallelism") else {
        return;
    };
    for runtime in ["shared", "static"] {
        let args = [
            "-arch=sm_80",
            "-rdc=true",
            "-cudart",
            runtime,
            "-lcudadevrt",
        ];
        let bin = build_as(env, "k_dynamic", &format!("k_dynamic-{runtime}"), &args);
        for run in runs_on_both_engines(env, &bin, &[]) {
            run.assert_pass(None);
            for line in [
                "device-launched quicksort of 4000 elements: ok",
                "tail launch after its siblings: ok",
                "depth 2, block 1",
                "PASS",
            ] {
                run.assert_line(line);
            }
            assert!(
                !run.stderr.contains("not in the module"),
                "libcudadevrt's kernels are looked up quietly: {}",
                run.stderr
            );
        }
    }
}

/// Disjoint groups of one warp at one vote, match or reduction each see
/// only their members (failed before: every lane saw the whole warp).
#[test]
fn k_warp_groups() {
    let lines = owned(&[
        "warp groups of 32: ok",
        "warp groups of 16: ok",
        "warp groups of 8: ok",
    ]);
    run_and_expect("k_warp_groups", &lines);
}

/// Vector loads never see half of a racing vector store (failed before:
/// 16-byte accesses went element by element).
#[test]
fn k_vector_race() {
    let lines = owned(&[
        "16-byte vector loads that saw two stores: 0",
        "8-byte vector loads that saw two stores: 0",
    ]);
    run_and_expect("k_vector_race", &lines);
}

/// `warpSize` (PTX's `WARP_SZ`) as a loop bound and in arithmetic.
#[test]
fn k_warp_size() {
    run_and_expect("k_warp_size", &owned(&["warpSize in kernels: ok"]));
}

#[test]
fn library_api() {
    let lines = owned(&[
        "library kernel launched: ok",
        "kernels of the library: 1",
        "library variable: ok",
        "cudaGetKernel: ok",
        "a kernel the library lacks -> cudaErrorSymbolNotFound",
        "a variable the library lacks -> cudaErrorSymbolNotFound",
        "a file that is not there -> cudaErrorFileNotFound",
    ]);
    run_and_expect("library_api", &lines);
}

#[test]
fn device_limits() {
    let lines = owned(&[
        "stack size: 1024",
        "printf FIFO: 1048576",
        "malloc heap: 8388608",
        "32 MiB malloc in a 64 MiB heap: ok",
        "heap size after a malloc kernel -> cudaErrorInvalidValue",
        "L2 fetch granularity of 256 -> cudaErrorInvalidValue",
        "L2 fetch granularity after asking 128: 128",
        "an unknown limit -> cudaErrorInvalidValue",
    ]);
    run_and_expect("device_limits", &lines);
}

#[test]
fn k_mempool() {
    let lines = owned(&[
        "memory pools supported",
        "reuse: no new reservation",
        "set UsedMemCurrent -> cudaErrorInvalidValue",
        "released at synchronization",
        "destroy the default pool -> cudaErrorInvalidValue",
        "free a pointer no pool gave -> cudaErrorInvalidValue",
        "a pool on no device -> cudaErrorInvalidValue",
    ]);
    run_and_expect("k_mempool", &lines);
}

/// The lines the kernels of k_printf.cu print, each exactly once.
fn printf_expected() -> Vec<String> {
    let names = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta"];
    let mut lines = Vec::new();
    for block in 0..2u32 {
        for thread in 0..3u32 {
            let g = 3 * block + thread;
            let d = 7 - 1000 * i64::from(g);
            let u = 4_000_000_000u64 + u64::from(g);
            let x = 0xdead_be00u32 + g;
            let f = f64::from(g) * 1.25;
            let c = char::from(b'A' + g as u8);
            let lld = -1_234_567_890_123i64 * (i64::from(g) + 1);
            lines.push(format!(
                "[dev] block {block} thread {thread}: d={d} u={u} x={x:x} f={f:.6} s={} c={c} \
                 lld={lld}",
                names[g as usize]
            ));
        }
    }
    lines.extend(owned(&[
        "[dev] hello from the device",
        "[dev] 100% done, %d is literal",
        "[dev] padded: [   42] [42   ] [0000beef] [3.142] [     right]",
        "[dev] double 0.67 and float 0.5, end",
    ]));
    for g in (0..128).filter(|g| g % 3 != 1) {
        lines.push(format!("[dev] many {g}"));
    }
    lines
}

#[test]
fn k_printf() {
    let expected = printf_expected();
    run_variants("k_printf", &[&[]], |_, run| {
        // The order between threads is unspecified: compare the multisets.
        let mut counts: HashMap<&str, i64> = HashMap::new();
        for line in &expected {
            *counts.entry(line.as_str()).or_default() += 1;
        }
        for line in run.stdout.lines().map(str::trim_end) {
            if line.starts_with("[dev]") {
                *counts.entry(line).or_default() -= 1;
            }
        }
        let mut wrong: Vec<String> = counts
            .iter()
            .filter(|(_, &n)| n != 0)
            .map(|(line, &n)| {
                if n > 0 {
                    format!("missing: `{line}`")
                } else {
                    format!("unexpected or repeated {}x: `{line}`", -n)
                }
            })
            .collect();
        if !wrong.is_empty() {
            wrong.sort();
            run.fail(
                &format!("device printf output differs:\n{}", wrong.join("\n")),
                None,
            );
        }
    });
}

#[test]
fn k_errors() {
    let fault = owned(&[
        "launch -> cudaSuccess",
        "cudaDeviceSynchronize -> a memory fault",
        "cudaMalloc after the fault -> the same fault",
        "cudaMemcpy after the fault -> the same fault",
        "cudaMemset after the fault -> the same fault",
        "cudaDeviceSynchronize again -> the same fault",
    ]);
    let config = owned(&[
        "before the invalid configurations: launch ok",
        "block of 2048 threads -> cudaErrorInvalidValue",
        "cudaGetLastError again -> cudaSuccess",
        "cudaDeviceSynchronize -> cudaSuccess",
        "block z of 65 -> cudaErrorInvalidValue",
        "grid y of 65536 -> cudaErrorInvalidValue",
        "empty grid -> cudaErrorInvalidValue",
        "cudaLaunchKernel with 2048 threads -> cudaErrorInvalidValue",
        "after the invalid configurations: launch ok",
    ]);
    run_variants("k_errors", &[&["fault"], &["config"]], |args, run| {
        assert_lines(run, if args == ["config"] { &config } else { &fault });
    });
}

#[test]
fn k_func_attrs() {
    let lines = owned(&[
        "cudaFuncGetAttributes: ok",
        "static shared launch: ok",
        "cudaFuncSetAttribute(MaxDynamicSharedMemorySize, 65536): ok",
        "launch with 65536 bytes of dynamic shared memory: ok",
        "cudaFuncSetCacheConfig: ok",
        "cudaOccupancyMaxActiveBlocksPerMultiprocessor: ok",
        "cudaLaunchKernelExC: ok",
        "cudaLaunchKernelExC with a priority: ok",
        "cudaLaunchKernelExC with clusters of 2 -> cudaErrorNotSupported",
        "cudaLaunchKernelEx: ok",
        "cudaFuncGetName(no_shared): _Z9no_sharedPiii",
        "cudaFuncGetParamCount/ParamInfo: ok",
        "cudaFuncGetParamInfo past the end -> cudaErrorInvalidValue",
    ]);
    run_variants("k_func_attrs", &[&[]], |_, run| {
        assert_lines(run, &lines);
        run.assert_contains("static_shared: numRegs=");
        run.assert_contains("sharedSizeBytes=1056");
        run.assert_contains("bounded: numRegs=");
        run.assert_contains("maxThreadsPerBlock=128");
        run.assert_contains("maxDynamicSharedSizeBytes=65536");
    });
}

/// A kernel that never ends is stopped at the server's time limit, and a
/// kernel using PTX the interpreter lacks fails to launch with a message
/// naming the instruction and the kernel.
#[test]
fn k_limits() {
    let Some(env) = setup("k_limits") else { return };
    let args: Vec<&str> = COMMON_ARGS.to_vec();
    let bin = build_as(env, "k_limits", "k_limits-default", &args);
    // The time limit holds on both engines (compiled loops count their
    // taken branches against it).
    for engine in ENGINES {
        let run = |mode: &str| {
            let mut cmd = std::process::Command::new(&env.rcud);
            cmd.env_remove("LD_PRELOAD")
                .env_remove("RCUD_SERVERS")
                .env("RCUD_KERNEL_TIMEOUT", "2")
                .env("RCUD_EMU_ENGINE", engine)
                .arg("run")
                .arg("--")
                .arg(&bin)
                .arg(mode);
            let run = common::run_with_timeout(cmd, KERNEL_RUN_TIMEOUT);
            run.assert_pass(None);
            run
        };
        limits_checks(run);
    }
}

fn limits_checks(run: impl Fn(&str) -> Run) {
    let timeout = run("timeout");
    assert_lines(
        &timeout,
        &owned(&[
            "launch -> cudaSuccess",
            "cudaDeviceSynchronize -> cudaErrorLaunchTimeout",
            "cudaMalloc after the timeout -> cudaErrorLaunchTimeout",
        ]),
    );
    let unsupported = run("unsupported");
    assert_lines(
        &unsupported,
        &owned(&[
            "launch -> cudaErrorNotSupported",
            "cudaDeviceSynchronize -> cudaSuccess",
        ]),
    );
    for needle in ["unsupported PTX instruction 'mma.sp", "_Z11tensor_corePj"] {
        if !unsupported.stderr.contains(needle) {
            unsupported.fail(&format!("stderr does not name `{needle}`"), None);
        }
    }
}

/// Streams, events, asynchronous copies, host callbacks; built as is and with
/// `--default-stream per-thread` (the `_ptsz`/`_ptds` entry points).
#[test]
fn k_streams() {
    let Some(env) = setup("k_streams") else {
        return;
    };
    let lines = owned(&[
        "stream flags and priorities: ok",
        "pipelines on 4 streams: ok",
        "cudaStreamQuery after synchronize: ok",
        "pageable async copies and memset: ok",
        "cudaEventElapsedTime(timing disabled) -> cudaErrorInvalidResourceHandle",
        "cudaStreamWaitEvent: ok",
        "host functions in stream order: ok",
        "host function without a synchronizing call: ok",
        "CUDA calls in a host function -> cudaErrorNotPermitted, cudaErrorNotPermitted",
        "CUDA calls in a host function refused: ok",
        "copies after host functions see their writes: ok",
        "cudaMemcpyAsync to a bad pointer -> cudaErrorInvalidValue",
    ]);
    for (variant, extra) in [
        ("default", &[][..]),
        ("per-thread", &["--default-stream", "per-thread"][..]),
    ] {
        let args: Vec<&str> = COMMON_ARGS.iter().chain(extra).copied().collect();
        let bin = build_as(env, "k_streams", &format!("k_streams-{variant}"), &args);
        for run in runs_on_both_engines(env, &bin, &[]) {
            run.assert_pass(None);
            assert_lines(&run, &lines);
        }
    }
}

/// Two emulated GPUs, eight host threads, copies between GPUs, pitched memory.
#[test]
fn k_multi() {
    let Some(env) = setup("k_multi") else { return };
    let bin = build_as(env, "k_multi", "k_multi-default", COMMON_ARGS);
    for engine in ENGINES {
        let mut cmd = std::process::Command::new(&env.rcud);
        cmd.env_remove("LD_PRELOAD")
            .env_remove("RCUD_SERVERS")
            .env("RCUD_EMU_ENGINE", engine)
            .args(["run", "--emu-gpus", "2", "--"])
            .arg(&bin);
        let run = common::run_with_timeout(cmd, KERNEL_RUN_TIMEOUT);
        run.assert_pass(None);
        assert_lines(
            &run,
            &owned(&[
                "devices: 2",
                "cudaDeviceCanAccessPeer(0, 1) = 0",
                "cudaDeviceEnablePeerAccess(1) -> cudaErrorPeerAccessUnsupported",
                "copies between GPUs: ok",
                "cudaMemcpy2D(width > pitch) -> cudaErrorInvalidPitchValue",
                "pitched memory: ok",
                "8 host threads on 2 devices: ok",
            ]),
        );
    }
}

/// Copies between GPUs (`k_peer.cu`), three ways: two GPUs of the embedded
/// server (agent threads), two GPUs of an `rcud-server` (agent processes),
/// and a GPU on each of two servers. On one server the server moves the
/// bytes agent to agent: it reports every copy the program made.
#[test]
fn k_peer() {
    let Some(env) = setup("k_peer") else { return };
    let bin = build_as(env, "k_peer", "k_peer-default", COMMON_ARGS);
    let lines = owned(&[
        "devices: 2",
        "cudaDeviceCanAccessPeer(0, 1) = 0",
        "cudaMemcpyPeer both ways, 1 B to 64 MiB + 1: ok",
        "cudaMemcpyPeerAsync both ways, 1 B to 64 MiB + 1: ok",
        "peer copies in stream order with kernels: ok",
        "cudaMemcpyPeer after kernels on both devices: ok",
        "cudaMemcpy between GPUs (DeviceToDevice, Default, Async): ok",
        "cudaMemcpyPeer(source range past its allocation) -> cudaErrorInvalidValue",
        "cudaMemcpyPeer(destination range past its allocation) -> cudaErrorInvalidValue",
        "cudaMemcpyPeer(device 7) -> cudaErrorInvalidDevice",
        "invalid copies: ok",
    ]);

    let mut cmd = std::process::Command::new(&env.rcud);
    cmd.env_remove("LD_PRELOAD")
        .env_remove("RCUD_SERVERS")
        .env("RCUD_LOG", "warn,rcud_server::peer=debug")
        .env("NO_COLOR", "1")
        .args(["run", "--emu-gpus", "2", "--"])
        .arg(&bin);
    let run = common::run_with_timeout(cmd, KERNEL_RUN_TIMEOUT);
    run.assert_pass(None);
    assert_lines(&run, &lines);
    let copies: usize = run
        .stdout
        .lines()
        .find_map(|l| l.trim().strip_prefix("copies between the GPUs: "))
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| run.fail("no count of copies", None));
    let by_server = run
        .stderr
        .lines()
        .filter(|l| l.contains("peer copy: received from the source agent"))
        .count();
    if by_server != copies {
        run.fail(
            &format!("the program made {copies} copies, the server made {by_server}"),
            None,
        );
    }

    let two_gpus = common::Server::start_with(env, &["--emu-gpus", "2"]);
    let one_gpu = common::Server::start(env);
    let libdir = common::cudart_soname_dir(env);
    // GPU #0 of both servers: the client names an address window per device
    // ordinal at attach, so their allocations cannot collide.
    for servers in [
        two_gpus.addr.to_string(),
        format!("{}#0,{}#0", one_gpu.addr, two_gpus.addr),
        format!("{}#1,{}#0", two_gpus.addr, one_gpu.addr),
    ] {
        let mut cmd = common::clean_command(&bin);
        cmd.env("LD_LIBRARY_PATH", libdir.path())
            .env("RCUD_SERVERS", &servers);
        let run = common::run_with_timeout(cmd, KERNEL_RUN_TIMEOUT);
        run.assert_pass(Some(&two_gpus));
        assert_lines(&run, &lines);
        eprintln!("k_peer on {servers}: passed");
    }
}

/// Clients of one server are isolated: while one program's kernel faults
/// (sticky illegal address in its own context), programs running at the same
/// time on the same server finish correctly, and the server keeps serving.
#[test]
fn a_faulting_client_does_not_disturb_others() {
    let Some(env) = setup("a_faulting_client_does_not_disturb_others") else {
        return;
    };
    let faulty = build_as(env, "k_errors", "k_errors-default", COMMON_ARGS);
    let good = build_as(env, "k_vector_add", "k_vector_add-default", COMMON_ARGS);
    let mut server = common::Server::start(env);
    let runs: Vec<Run> =
        std::thread::scope(|scope| {
            let mut handles = Vec::new();
            for i in 0..6 {
                let (bin, args): (&std::path::Path, &[&str]) = if i % 2 == 0 {
                    (&faulty, &["fault"])
                } else {
                    (&good, &[])
                };
                let server = &server;
                handles.push(scope.spawn(move || {
                    rcud_run_within(env, Some(server), bin, args, KERNEL_RUN_TIMEOUT)
                }));
            }
            handles
                .into_iter()
                .map(|h| h.join().expect("client thread"))
                .collect()
        });
    for run in &runs {
        run.assert_pass(Some(&server));
    }
    runs[0].assert_line("cudaDeviceSynchronize -> a memory fault");
    server.assert_running();
}

/// Sixteen client processes on one server (an agent process each): fifteen do
/// thousands of checked operations, five each over TCP, CSR and MSR (so the
/// RDMA set-ups of many agents run at once), while the sixteenth is killed
/// with SIGKILL in the middle of a 64 MB transfer. The others finish
/// correctly and the server keeps serving.
#[test]
fn sixteen_client_processes_one_killed_mid_transfer() {
    let Some(env) = setup("sixteen_client_processes_one_killed_mid_transfer") else {
        return;
    };
    let bin = build_as(env, "k_stress", "k_stress-default", COMMON_ARGS);
    let mut server = common::Server::start(env);
    let libdir = common::cudart_soname_dir(env);
    let runs: Vec<Run> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..15)
            .map(|i| {
                let (server, bin) = (&server, &bin);
                scope.spawn(move || {
                    let seed = (i + 1).to_string();
                    let mut cmd = std::process::Command::new(&env.rcud);
                    cmd.env_remove("LD_PRELOAD")
                        .env_remove("RCUD_SERVERS")
                        .args(["run", "--server", &server.addr.to_string()])
                        .args(["--transport", ["tcp", "csr", "msr"][i % 3], "--"])
                        .arg(bin)
                        .args(["400", &seed]);
                    common::run_with_timeout(cmd, KERNEL_RUN_TIMEOUT)
                })
            })
            .collect();
        let mut victim = start_victim(&bin, &server, libdir.path(), "tcp");
        victim.kill().expect("kill the victim");
        let status = victim.wait().expect("reap the victim");
        assert!(!status.success(), "the victim was not killed: {status}");
        handles
            .into_iter()
            .map(|h| h.join().expect("client thread"))
            .collect()
    });
    for run in &runs {
        run.assert_pass(Some(&server));
        run.assert_line("400 iterations: ok");
    }
    server.assert_running();
    // A new client is served after all of it.
    let run = rcud_run_within(env, Some(&server), &bin, &["50", "99"], KERNEL_RUN_TIMEOUT);
    run.assert_pass(Some(&server));
}

/// The end-to-end programs of the repository over the CSR transport (RDMA
/// channel semantics on the `soft` verbs provider) against the embedded
/// server: every program that moves data, and half of those that mostly
/// compute (the other half goes over MSR), so each program runs over an
/// RDMA module and each module carries every kind of traffic.
#[test]
fn every_program_over_csr() {
    every_program_over("csr");
}

/// The same over the MSR transport (RDMA memory semantics, dual channel).
#[test]
fn every_program_over_msr() {
    every_program_over("msr");
}

/// Programs whose copies, streams or peers exercise the transport: they run
/// over both RDMA modules.
const DATA_PROGRAMS: &[&str] = &[
    "memcpy",
    "memset",
    "pinned",
    "bandwidth",
    "k_stress",
    "k_streams",
    "k_async",
    "k_zero_copy",
    "k_multi",
    "k_peer",
    "memcpy3d",
    "batch_copy",
    "k_graphs",
    "interop",
];

fn every_program_over(transport: &str) {
    let Some(env) = setup(&format!("every_program_over_{transport}")) else {
        return;
    };
    let mut compute = 0;
    for &(name, args, rcud_args) in common::PROGRAMS {
        if !DATA_PROGRAMS.contains(&name) {
            compute += 1;
            // Alternate the compute-bound programs between the modules.
            if (compute % 2 == 0) != (transport == "csr") {
                continue;
            }
        }
        let bin = common::build_program(env, name, "shared");
        let mut cmd = std::process::Command::new(&env.rcud);
        cmd.env_remove("LD_PRELOAD")
            .env_remove("RCUD_SERVERS")
            .args(["run", "--transport", transport])
            .args(rcud_args)
            .arg("--")
            .arg(&bin)
            .args(args);
        let run = common::run_with_timeout(cmd, KERNEL_RUN_TIMEOUT);
        run.assert_pass(None);
        eprintln!("{name} {args:?} over {transport}: passed");
    }
}

/// A CSR client killed in the middle of a 64 MB transfer (its peer dies
/// mid-burst) ends only its own session: the server keeps serving CSR, MSR
/// and TCP clients.
#[test]
fn a_csr_client_killed_mid_transfer() {
    client_killed_mid_transfer("csr");
}

/// The same with an MSR client killed in the middle of its RDMA writes.
#[test]
fn an_msr_client_killed_mid_transfer() {
    client_killed_mid_transfer("msr");
}

fn client_killed_mid_transfer(victim_transport: &str) {
    let Some(env) = setup(&format!("{victim_transport}_client_killed_mid_transfer")) else {
        return;
    };
    let bin = build_as(env, "k_stress", "k_stress-default", COMMON_ARGS);
    let mut server = common::Server::start(env);
    let libdir = common::cudart_soname_dir(env);
    let mut victim = start_victim(&bin, &server, libdir.path(), victim_transport);
    victim.kill().expect("kill the victim");
    let _ = victim.wait();
    for transport in ["csr", "msr", "tcp"] {
        let mut cmd = common::clean_command(&bin);
        cmd.args(["50", "11"])
            .env("LD_LIBRARY_PATH", libdir.path())
            .env("RCUD_SERVERS", server.addr.to_string())
            .env("RCUD_TRANSPORT", transport);
        let run = common::run_with_timeout(cmd, KERNEL_RUN_TIMEOUT);
        run.assert_pass(Some(&server));
    }
    server.assert_running();
}

/// With `RCUD_GPUDIRECT=off` every payload goes through the staging chunks
/// (no in-place posting from device memory or the application's buffer):
/// the data-moving programs pass over both RDMA modules that way too.
#[test]
fn data_programs_over_rdma_with_gpudirect_off() {
    let Some(env) = setup("data_programs_over_rdma_with_gpudirect_off") else {
        return;
    };
    let stress = build_as(env, "k_stress", "k_stress-default", COMMON_ARGS);
    let peer = build_as(env, "k_peer", "k_peer-default", COMMON_ARGS);
    for transport in ["csr", "msr"] {
        let runs: [(std::path::PathBuf, &[&str], &[&str]); 5] = [
            (common::build(env, "memcpy"), &[], &[]),
            (common::build(env, "pinned"), &[], &[]),
            (common::build(env, "bandwidth"), &["4"], &[]),
            (stress.clone(), &["50", "3"], &[]),
            (peer.clone(), &[], &["--emu-gpus", "2"]),
        ];
        for (bin, args, rcud_args) in runs {
            let mut cmd = std::process::Command::new(&env.rcud);
            cmd.env_remove("LD_PRELOAD")
                .env_remove("RCUD_SERVERS")
                .env("RCUD_GPUDIRECT", "off")
                .args(["run", "--transport", transport])
                .args(rcud_args)
                .arg("--")
                .arg(&bin)
                .args(args);
            let run = common::run_with_timeout(cmd, KERNEL_RUN_TIMEOUT);
            run.assert_pass(None);
        }
    }
}

/// Starts `k_stress victim` against `server` over `transport` (bound through
/// LD_LIBRARY_PATH alone) and returns once it is inside its stream of 64 MB
/// copies; the caller kills it.
fn start_victim(
    bin: &std::path::Path,
    server: &common::Server,
    libdir: &std::path::Path,
    transport: &str,
) -> std::process::Child {
    use std::io::{BufRead, BufReader};
    use std::process::Stdio;

    let mut victim = common::clean_command(bin);
    victim
        .arg("victim")
        .env("LD_LIBRARY_PATH", libdir)
        .env("RCUD_SERVERS", server.addr.to_string())
        .env("RCUD_TRANSPORT", transport)
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    let mut victim = victim.spawn().expect("start the victim");
    let stdout = victim.stdout.take().expect("victim stdout");
    let mut line = String::new();
    BufReader::new(stdout)
        .read_line(&mut line)
        .expect("victim output");
    assert_eq!(line.trim(), "victim: copying");
    // Let it get well into a transfer.
    std::thread::sleep(Duration::from_millis(300));
    victim
}

#[test]
fn k_graphs() {
    let lines = owned(&[
        "explicit graph queries: ok",
        "explicit graph launched 3 times: ok",
        "host source read at launch: ok",
        "exec kernel node parameters: ok",
        "disabled node skipped: ok",
        "graph exec update: ok",
        "update with another topology -> cudaErrorGraphExecUpdateFailure",
        "child graph then a 4-byte memset: ok",
        "child graph's work: ok",
        "DOT output: ok",
        "captured graph: stream a: ok",
        "captured graph: stream b joined back: ok",
        "cudaMalloc while capturing (global) -> cudaErrorStreamCaptureUnsupported",
        "end an invalidated capture -> cudaErrorStreamCaptureInvalidated",
        "cudaEventQuery on a captured event -> cudaErrorCapturedEvent",
        "end after querying a captured event -> cudaErrorStreamCaptureInvalidated",
        "capture modes: ok",
        "synchronize a capturing stream -> cudaErrorStreamCaptureUnsupported",
        "end after the invalidation -> cudaErrorStreamCaptureInvalidated",
        "end with b not joined -> cudaErrorStreamCaptureUnjoined",
        "end a capture never begun -> cudaErrorIllegalState",
        "capture the legacy stream -> cudaErrorStreamCaptureUnsupported",
        "alloc, use and free nodes: ok",
        "relaunch with the allocation live -> cudaErrorInvalidValue",
        "a second executable graph with memory nodes -> cudaErrorNotSupported",
        "free it twice -> cudaErrorInvalidValue",
        "graph allocation outlives the launch: ok",
        "cudaMallocAsync and cudaFreeAsync captured: ok",
        "user objects and ids: ok",
        "PASS",
    ]);
    run_and_expect("k_graphs", &lines);
}

/// Conditional graph nodes (`tests/cuda/k_graph_cond.cu`): the server
/// evaluates the conditions that kernels set with `cudaGraphSetConditional`.
#[test]
fn k_graph_cond() {
    let lines = owned(&[
        "IF without else: ok",
        "IF with else: ok",
        "WHILE counting down from 5: ok",
        "SWITCH over 4 bodies and past the end: ok",
        "default launch value: ok",
        "nested WHILE and IF: ok",
        "capture into a body: ok",
        "conditional node queries and DOT: ok",
        "clone and exec update: ok",
        "handle with unknown flags -> cudaErrorInvalidValue",
        "IF of 3 bodies -> cudaErrorInvalidValue",
        "WHILE of 2 bodies -> cudaErrorInvalidValue",
        "SWITCH of no bodies -> cudaErrorInvalidValue",
        "event record node in a body -> cudaErrorInvalidValue",
        "conditional error cases: ok",
        "PASS",
    ]);
    run_and_expect("k_graph_cond", &lines);
}

#[test]
fn k_cooperative() {
    let lines = owned(&[
        "cooperative launch supported: ok",
        "cudaLaunchCooperativeKernel with grid.sync(): ok",
        "cudaLaunchAttributeCooperative: ok",
        "a grid of occupancy x SMs blocks: ok",
        "one block more than co-resident -> cudaErrorCooperativeLaunchTooLarge",
        "cooperative launch in a graph: ok",
        "PASS",
    ]);
    run_and_expect("k_cooperative", &lines);
}

#[test]
fn k_textures() {
    let lines = owned(&[
        "arrays and copies: ok",
        "tex2D point: ok",
        "tex2D linear: ok",
        "normalized coordinates, wrap: ok",
        "uchar4 normalized float: ok",
        "linear filtering of uchar4 read as integers -> cudaErrorInvalidFilterSetting",
        "tex1Dfetch on linear memory: ok",
        "texture on pitched memory: ok",
        "surf2Dread/surf2Dwrite: ok",
        "surface on an array without the load/store flag -> cudaSuccess",
        "tex2DLayered: ok",
        "3-D array and tex3D: ok",
        "texCubemap: ok",
        "object queries: ok",
        "a level past the last -> cudaErrorInvalidValue",
        "mipmapped arrays, tex2DLod and tex2DGrad: ok",
        "free a mipmap level as an array -> cudaSuccess",
        "PASS",
    ]);
    run_and_expect("k_textures", &lines);
}

/// Batched and attributed copies (`cudaMemcpyBatchAsync`,
/// `cudaMemcpyWithAttributesAsync`, and `cuMemcpyBatchAsync_v2` under the
/// static runtime).
#[test]
fn batch_copy() {
    let lines = owned(&[
        "cudaMemcpyBatchAsync: ok",
        "cudaMemcpyWithAttributesAsync: ok",
        "batch on the legacy stream -> cudaErrorInvalidValue",
        "first attribute index not 0 -> cudaErrorInvalidValue",
        "invalid source access order -> cudaErrorInvalidValue",
        "cudaMemcpy3DBatchAsync and cudaMemcpy3DWithAttributesAsync: ok",
        "3-D batch with a zero extent -> cudaErrorInvalidValue",
        "3-D batch on the legacy stream -> cudaErrorInvalidValue",
        "3-D batch with rows shorter than the copy -> cudaErrorInvalidValue",
        "3-D batch between arrays of different elements -> cudaErrorInvalidValue",
        "3-D batch with an invalid access order -> cudaErrorInvalidValue",
        "PASS",
    ]);
    run_and_expect("batch_copy", &lines);
}

#[test]
fn k_async() {
    let lines = owned(&[
        "host worked while 64 MiB went to the device and back: ok",
        "results: ok",
        "cudaStreamQuery: ok",
        "PASS",
    ]);
    run_and_expect("k_async", &lines);
}

#[test]
fn k_zero_copy() {
    let lines = owned(&[
        "zero-copy vector add, round 1: ok",
        "zero-copy vector add, round 2: ok",
        "PASS",
    ]);
    run_and_expect("k_zero_copy", &lines);
}

#[test]
fn k_managed() {
    let lines = owned(&[
        "host and kernels share cudaMallocManaged memory: ok",
        "sparse host reads and writes of a large managed array: ok",
        "__managed__ variables: ok",
        "four host threads reading and writing managed memory: ok",
        "copies and memsets on managed memory: ok",
        "attach singly to the NULL stream -> cudaErrorInvalidValue",
        "attach part of an allocation -> cudaErrorInvalidValue",
        "attach memory that is not managed -> cudaErrorInvalidValue",
        "cudaStreamAttachMemAsync: ok",
        "advice on memory that is not managed -> cudaErrorInvalidValue",
        "a range past the allocation -> cudaErrorInvalidValue",
        "a prefetch to a device that does not exist -> cudaErrorInvalidDevice",
        "a range attribute of 2 bytes -> cudaErrorInvalidValue",
        "a batched prefetch without concurrent managed access -> cudaErrorNotSupported",
        "advice, prefetches and range attributes: ok",
        "PASS",
    ]);
    run_and_expect("k_managed", &lines);
}

/// CUDA IPC memory and events between a process and the child it forks
/// (separate contexts and connections to the same server).
#[test]
fn ipc() {
    let lines = owned(&[
        "an interprocess event with timing -> cudaErrorInvalidValue",
        "the handle of an event that is not interprocess -> cudaErrorInvalidResourceHandle",
        "open a handle in the process that exported it -> cudaErrorInvalidValue",
        "child: opened the parent's allocation and event, read it after the event and ran a kernel on it: ok",
        "child: cudaFree of opened memory -> cudaErrorInvalidValue",
        "child: close it twice -> cudaErrorInvalidValue",
        "child: a forged handle -> cudaErrorInvalidValue",
        "child: unknown flags -> cudaErrorInvalidValue",
        "parent: sees the child's writes: ok",
        "export memory that is not device memory -> cudaErrorInvalidValue",
        "PASS",
    ]);
    run_and_expect("ipc", &lines);
}

/// Virtual functions in device code (vtables are module variables holding
/// function addresses; a warp's lanes call different classes' functions).
#[test]
fn k_virtual() {
    run_and_expect(
        "k_virtual",
        &owned(&["virtual calls through device vtables: ok", "PASS"]),
    );
}

#[test]
fn memcpy3d() {
    let lines = owned(&[
        "cudaMemcpy3D host, device and positions: ok",
        "cudaMemcpy3DAsync, peer and captured: ok",
        "cudaMemcpy3D to no destination -> cudaErrorInvalidValue",
        "PASS",
    ]);
    run_and_expect("memcpy3d", &lines);
}

#[test]
fn runtime_misc() {
    let lines = owned(&[
        "cudaHostGetFlags of pageable memory -> cudaErrorInvalidValue",
        "pointer attributes: ok",
        "cudaLaunchHostFunc_v2 with flags -> cudaErrorInvalidValue",
        "streams: ok",
        "an unknown PCI bus id -> cudaErrorInvalidDevice",
        "cudaSetValidDevices with no such device -> cudaErrorInvalidDevice",
        "device settings: ok",
        "PASS",
    ]);
    run_and_expect("runtime_misc", &lines);
}

#[test]
fn stream_attrs() {
    let lines = owned(&[
        "access-policy window: ok",
        "hitRatio 1.5 -> cudaErrorInvalidValue",
        "a window over cudaDevAttrMaxAccessPolicyWindowSize -> cudaErrorInvalidValue",
        "missProp persisting -> cudaErrorInvalidValue",
        "cooperative on a stream -> cudaErrorInvalidValue",
        "sync policy 9 -> cudaErrorInvalidValue",
        "synchronization policy, priority, domain: ok",
        "cudaStreamCopyAttributes: ok",
        "PASS",
    ]);
    run_and_expect("stream_attrs", &lines);
}

#[test]
fn graph_params() {
    let lines = owned(&[
        "cudaGraphAddNode of type 99 -> cudaErrorInvalidValue",
        "cudaGraphAddNode and cudaGraphNodeGetParams: ok",
        "cudaGraphNodeSetParams of another type -> cudaErrorInvalidValue",
        "cudaGraphNodeSetParams and cudaGraphExecNodeSetParams: ok",
        "a child graph of another shape -> cudaErrorGraphExecUpdateFailure",
        "cudaGraphExecChildGraphNodeSetParams: ok",
        "hitRatio -0.5 -> cudaErrorInvalidValue",
        "a stream's synchronization policy on a kernel node -> cudaErrorInvalidValue",
        "an attribute of a memset node -> cudaErrorInvalidValue",
        "kernel node attributes: ok",
        "graph memory nodes through cudaGraphAddNode: ok",
        "PASS",
    ]);
    run_and_expect("graph_params", &lines);
}

#[test]
fn graph_mem_capture() {
    let lines = owned(&[
        "captured across two streams: 3 alloc and 3 free nodes",
        "4 launches: ok",
        "PASS",
    ]);
    run_and_expect("graph_mem_capture", &lines);
}

#[test]
fn api_misc() {
    let lines = owned(&[
        "a version newer than the driver -> cudaErrorInvalidValue",
        "unknown flags -> cudaErrorInvalidValue",
        "driver entry points: ok",
        "cudaGetFuncBySymbol of a host variable -> cudaErrorInvalidDeviceFunction",
        "cudaGetFuncBySymbol: ok",
        "cudaDeviceGetP2PAttribute of one device -> cudaErrorInvalidDevice",
        "cudaDeviceGetP2PAttribute of no device -> cudaErrorInvalidDevice",
        "a 1-D linear width of a mixed format -> cudaErrorInvalidChannelDescriptor",
        "clusters of two blocks -> cudaErrorInvalidClusterSize",
        "texture and cluster limits: ok",
        "a pool at an invalid location -> cudaErrorInvalidValue",
        "exporting a pool without handle types -> cudaErrorInvalidValue",
        "memory pools by location: ok",
        "a notification on no device -> cudaErrorInvalidDevice",
        "cudaLogsCurrent with flags -> cudaErrorInvalidValue",
        "notifications and logs: ok",
        "cudaDeviceFlushGPUDirectRDMAWrites of scope 7 -> cudaErrorInvalidValue",
        "cudaDeviceFlushGPUDirectRDMAWrites -> cudaErrorNotSupported",
        "an unknown atomic operation -> cudaErrorInvalidValue",
        "peer atomics of one device -> cudaErrorInvalidDevice",
        "cudaDeviceGetNvSciSyncAttributes -> cudaErrorNotSupported",
        "cudaArrayGetPlane of a float array -> cudaErrorInvalidValue",
        "cudaArrayGetSparseProperties of a dense array -> cudaErrorInvalidValue",
        "cudaArrayGetMemoryRequirements of a mapped array -> cudaErrorInvalidValue",
        "RDMA, atomics, NvSciSync, arrays: ok",
        "PASS",
    ]);
    run_and_expect("api_misc", &lines);
}

#[test]
fn interop() {
    let lines = owned(&[
        "cudaGLGetDevices -> cudaErrorOperatingSystem",
        "cudaGraphicsGLRegisterBuffer -> cudaErrorOperatingSystem",
        "cudaGraphicsGLRegisterImage with unknown flags -> cudaErrorInvalidValue",
        "cudaGLSetGLDevice of no device -> cudaErrorInvalidDevice",
        "cudaGLMapBufferObject -> cudaErrorInvalidValue",
        "cudaGLUnmapBufferObject -> cudaErrorInvalidValue",
        "cudaGraphicsEGLRegisterImage of no image -> cudaErrorUnknown",
        "cudaEGLStreamConsumerConnect -> cudaErrorUnknown",
        "cudaEventCreateFromEGLSync -> cudaErrorNotSupported",
        "cudaVDPAUSetVDPAUDevice of no device -> cudaErrorInvalidDevice",
        "cudaGraphicsVDPAURegisterVideoSurface -> cudaErrorDeviceUninitialized",
        "cudaGraphicsUnmapResources of none -> cudaErrorInvalidValue",
        "cudaImportExternalMemory of stdin -> cudaErrorUnknown",
        "cudaImportExternalMemory of type 77 -> cudaErrorInvalidValue",
        "cudaImportExternalSemaphore of stdin -> cudaErrorUnknown",
        "cudaSignalExternalSemaphoresAsync of none -> cudaErrorInvalidValue",
        "cudaGraphExternalSemaphoresSignalNodeGetParams of an empty node -> cudaErrorInvalidValue",
        "PASS",
    ]);
    run_and_expect("interop", &lines);
}

#[test]
fn k_tensor_cores() {
    let lines = owned(&[
        "wmma half GEMM 96x144 * 144x80 (alpha 1.5, beta -0.5): ok",
        "wmma half GEMM 64x64 * 64x64 (alpha 1, beta 0): ok",
        "wmma int8 GEMM 64x96 * 96x48: ok",
        "PASS",
    ]);
    run_and_expect("k_tensor_cores", &lines);
}
