#!/usr/bin/env bash
# Checks rcud against a real NVIDIA GPU, side by side with native runs.
#
# For a Linux machine with an NVIDIA GPU, its driver and `nvcc`, and NO Rust
# toolchain: the release binaries `rcud`, `rcud-server` and `librcudart.so` are
# built elsewhere (`cargo build --release`) and copied in, by default into
# target/release/ of this checkout.
#
# What it does:
#   1. builds every tests/cuda/*.cu with `nvcc -cudart shared -arch=native`
#      (sm_80 when this nvcc has no `native`), and again with nvcc's default
#      static runtime (`NAME-static`: NVIDIA's runtime inside the program,
#      over rcud's libcuda.so.1), the driver-API programs of tests/cuda/driver
#      (`-lcuda`, `-lnvrtc`, dlopen), plus a small latency program;
#   2. starts `rcud-server --backend cuda --listen 127.0.0.1:PORT`;
#   3. runs each program natively and under `rcud run --server 127.0.0.1:PORT`,
#      and compares exit status and standard output after the filter below;
#   4. runs tests/cuda/bandwidth.cu, the latency program and (with cuBLAS) a
#      GEMM timing program both ways and prints native vs rcud tables;
#   5. appends a dated section (GPU, driver, results) to docs/gpu-results.md.
#
# Output filter (lines dropped from both outputs before comparing), because
# they legitimately differ between a native run and an rcud run, or between
# any two runs:
#   - timings and bandwidths: lines containing `GB/s`, `ms/copy`, ` us` after a
#     number, and the bandwidth table rows (`pageable|pinned|device H2D|D2H|D2D`);
#   - device identity and properties: lines starting `device N: ` (name,
#     attributes, memory free/total: rcud reports a remote view of the device,
#     with features a remote client cannot use reported absent);
#   - `runtime version:` and `driver version:` lines, and lines ending in
#     `driver version N` (rcud is its own runtime and driver);
#   - `elapsed: N ms` lines (timings of the driver-API programs);
#   - `printf FIFO:` lines: rcud reports CUDA's documented default (1 MiB),
#     an H200's driver 8.25 MiB;
#   - `cublas version:` lines (rcud's headers and the GPU machine's cuBLAS
#     differ), and cuBLAS's own ` ** On entry to SGEMM parameter number N
#     had an illegal value` lines, which NVIDIA's library prints to stdout
#     and rcud's does not;
#   - pointer values (`0x` followed by 8 or more hex digits).
# Standard error is not compared (rcud's own diagnostics go there); both are
# kept under the work directory (--keep).
#
# Programs and modes:
#   - k_errors runs as `fault` and `config`;
#   - k_limits is skipped: `timeout` spins forever natively (no watchdog on a
#     compute GPU) and the cuda backend has no kernel time limit; `unsupported`
#     is about the emulated device's PTX interpreter;
#   - k_multi needs two GPUs and is skipped on a machine with one;
#   - hold_memory is skipped: a helper of the memory-limit tests;
#   - k_streams also runs built with `--default-stream per-thread`;
#   - every program also runs built with the static runtime; k_errors config
#     there is a known difference on the emulated device (see
#     docs/compatibility.md), compared here against the real driver;
#   - the driver-API programs get the kernel files they load (PTX, fatbins)
#     built from tests/cuda/driver/kernels.cu and matmul.cu;
#   - with --python PY (a Python with CuPy for this GPU's CUDA, e.g.
#     .venv-cupy13/bin/python from scripts/ensure-cupy.sh), the CuPy smoke
#     tests run natively and under rcud with pytest;
#   - bandwidth, the latency program and gemm are benchmarks (section 4); bandwidth's
#     deterministic lines are compared too.
# Known differences (reported as `differs (known)`, not as failures):
#   - unimplemented: functions rcud does not implement fail under rcud and
#     work natively;
#   - k_func_attrs: rcud refuses thread block cluster launches, a Hopper GPU
#     runs them (the program's own check fails natively);
#   - k_managed: rcud reports no concurrent managed access, a Hopper GPU has it;
#   - api_misc: rcud reports no thread block clusters, a Hopper GPU has them;
#   - k_textures, k_graph_cond: the cuda backend has no texture and surface
#     objects or conditional graph nodes yet (the emulated device has).
# k_dynamic's and k_printf's device-side printf lines come in an order CUDA
# leaves open (blocks run in any order): both outputs are sorted before
# comparing.
# The math_* programs run against NVIDIA's cuBLAS, cuBLASLt, cuFFT, cuRAND,
# cuSPARSE and cuSOLVER (the toolkit's, else those of the PyPI wheels
# python3 finds): natively, and under rcud with rcud-server loading those
# libraries (the cuda backend forwards them; it runs cuRAND's host
# generators there too). k_dynamic is built with -rdc=true
# -lcudadevrt.
# With RCUD_CHECK_SURVEY=1 in the environment, a program reports every
# unexpected result and goes on instead of stopping at the first one.
#
# Usage:
#   scripts/gpu-check.sh [--bin DIR] [--port PORT] [--arch ARCH]
#                        [--bandwidth-mb "32 256"] [--results FILE]
#                        [--only "memcpy k_saxpy ..."] [--no-record] [--keep]
#                        [--python PY]
#   --only limits the programs built and run to those named (bandwidth and
#   latency and gemm are benchmarks: name them to run them).
# Environment: NVCC (default: nvcc on PATH, else /usr/local/cuda/bin/nvcc),
# RUN_TIMEOUT (seconds per program run, default 600), CUPY_TIMEOUT (seconds
# per CuPy pytest run, default RUN_TIMEOUT), BUILD_JOBS (parallel nvcc runs,
# default the number of cores), CUDA_VISIBLE_DEVICES
# (applies to the native runs and to rcud-server alike).
#
# Exit status: 0 when every compared run matched (known differences aside),
# 1 otherwise, 2 for a usage or set-up error.
set -uo pipefail

die() { printf 'gpu-check: %s\n' "$*" >&2; exit 2; }
log() { printf 'gpu-check: %s\n' "$*" >&2; }

root="$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")/.." && pwd -P)"
bin="$root/target/release"
port=7199
arch=native
bandwidth_mb="32 256"
results="$root/docs/gpu-results.md"
record=1
keep=0
only=""
python=""
run_timeout="${RUN_TIMEOUT:-600}"
cupy_timeout="${CUPY_TIMEOUT:-$run_timeout}"

while [[ $# -gt 0 ]]; do
    case "$1" in
        --bin) bin="$2"; shift 2 ;;
        --port) port="$2"; shift 2 ;;
        --arch) arch="$2"; shift 2 ;;
        --bandwidth-mb) bandwidth_mb="$2"; shift 2 ;;
        --results) results="$2"; shift 2 ;;
        --only) only=" $2 "; shift 2 ;;
        --no-record) record=0; shift ;;
        --keep) keep=1; shift ;;
        --python) python="$2"; shift 2 ;;
        -h|--help) sed -n '2,/^set -uo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
        *) die "unknown argument: $1 (see --help)" ;;
    esac
done

# ---- prerequisites ----------------------------------------------------------

nvcc="${NVCC:-}"
if [[ -z "$nvcc" ]]; then
    nvcc="$(command -v nvcc || true)"
    [[ -z "$nvcc" && -x /usr/local/cuda/bin/nvcc ]] && nvcc=/usr/local/cuda/bin/nvcc
fi
[[ -n "$nvcc" && -x "$nvcc" ]] || die "nvcc not found (set NVCC or put it on PATH)"
command -v nvidia-smi >/dev/null || die "nvidia-smi not found: is the NVIDIA driver installed?"
command -v timeout >/dev/null || die "timeout (coreutils) not found"
for f in rcud rcud-server librcudart.so; do
    [[ -f "$bin/$f" ]] || die "$bin/$f is missing: build with \`cargo build --release\` on a machine with Rust and copy rcud, rcud-server and librcudart.so into $bin (or pass --bin DIR)"
done
bin="$(cd -- "$bin" && pwd -P)"
gpu_name="$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -n1)"
driver="$(nvidia-smi --query-gpu=driver_version --format=csv,noheader 2>/dev/null | head -n1)"
gpu_count="$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ' || true)"
if [[ -n "${CUDA_VISIBLE_DEVICES:-}" ]]; then
    gpu_count="$(awk -F, '{print NF}' <<<"$CUDA_VISIBLE_DEVICES")"
fi
[[ -n "$gpu_name" ]] || die "nvidia-smi reports no GPU"
cuda_driver="$(nvidia-smi 2>/dev/null | sed -n 's/.*CUDA Version: *\([0-9.]*\).*/\1/p' | head -n1)"
nvcc_version="$("$nvcc" --version | sed -n 's/.*release \([0-9.]*\).*/\1/p')"
commit="$(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)"
# The toolkit's libcudart.so.13 for the native runs (not always in ld.so.conf).
native_libs="${LD_LIBRARY_PATH:-}"
nvcc_dir="$(cd -- "$(dirname -- "$nvcc")" && pwd -P)"
for d in "$nvcc_dir/../lib64" "$nvcc_dir/../lib" "$nvcc_dir/../targets/$(uname -m)-linux/lib"; do
    if compgen -G "$d/libcudart.so.*" >/dev/null; then
        native_libs="$(cd -- "$d" && pwd -P)${native_libs:+:$native_libs}"
        break
    fi
done
# NVIDIA's math libraries: a directory holding libcublas.so.13 (or .12)
# and the other libraries beside it, with the headers in ../include (the
# toolkit's lib64, else the lib of the PyPI wheels python3 finds). The math
# programs the cuda backend forwards are built against them and run
# natively with them, and rcud-server opens them on their first calls.
math_dir=""
for d in "$nvcc_dir/../lib64" "$nvcc_dir/../lib" "$nvcc_dir/../targets/$(uname -m)-linux/lib" \
    $(python3 -c 'import nvidia, os; [print(os.path.join(p, s, "lib")) for p in nvidia.__path__ for s in ("cu13", "cu12")]' 2>/dev/null); do
    if compgen -G "$d/libcublas.so.1[23]" >/dev/null && [[ -e "$d/../include/cublas_v2.h" ]]; then
        math_dir="$(cd -- "$d" && pwd -P)"
        break
    fi
done
# The soname of library $1 (e.g. libcufft) in $math_dir, if there.
math_soname() {
    local f
    for f in "$math_dir/$1".so.*; do
        [[ "${f##*/}" =~ ^$1\.so\.[0-9]+$ ]] && { echo "${f##*/}"; return; }
    done
}
# The math programs the cuda backend forwards, and their library.
forwarded_library() {
    case "$1" in
        math_blas) echo libcublas ;;
        math_blaslt) echo libcublasLt ;;
        math_fft) echo libcufft ;;
        math_rand) echo libcurand ;;
        math_sparse) echo libcusparse ;;
        math_solver) echo libcusolver ;;
        math_graph) echo libcublas libcufft libcurand ;;
    esac
}
# nvcc arguments for a forwarded math program ($1), or nothing when one of
# its libraries is missing here.
math_link() {
    local libs lib soname flags=""
    libs="$(forwarded_library "$1")"
    [[ -n "$libs" && -n "$math_dir" ]] || return 1
    for lib in $libs; do
        soname="$(math_soname "$lib")"
        [[ -n "$soname" ]] || return 1
        flags+=" -l:$soname"
    done
    echo "-I $math_dir/../include -L $math_dir$flags"
}
if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
    die "port $port is in use (pass --port)"
fi

work="$(mktemp -d "${TMPDIR:-/tmp}/rcud-gpu-check.XXXXXX")"
mkdir -p "$work/bin" "$work/out"
server_pid=""
cleanup() {
    if [[ -n "$server_pid" ]] && kill -0 "$server_pid" 2>/dev/null; then
        kill "$server_pid" 2>/dev/null
        wait "$server_pid" 2>/dev/null
    fi
    if [[ "$keep" == 1 ]]; then
        log "outputs kept in $work"
    else
        rm -rf "$work"
    fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

log "GPU: $gpu_name (x$gpu_count), driver $driver (CUDA $cuda_driver), nvcc $nvcc_version, rcud $commit"

# ---- build ------------------------------------------------------------------

cat >"$work/latency.cu" <<'EOF'
// Round trip of small synchronous calls: N timed iterations after 10 warm-up ones.
#include <cuda_runtime.h>
#include <chrono>
#include <cstdio>
#include <cstdlib>
__global__ void empty_kernel() {}
#define CHECK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { \
    printf("FAIL: %s: %s\n", #x, cudaGetErrorName(e_)); return 1; } } while (0)
#define TIME(label, ...) do { \
    for (int i = 0; i < 10; i++) { __VA_ARGS__; } \
    auto t0 = std::chrono::steady_clock::now(); \
    for (int i = 0; i < n; i++) { __VA_ARGS__; } \
    double us = std::chrono::duration<double, std::micro>( \
        std::chrono::steady_clock::now() - t0).count() / n; \
    printf("latency|%s|%.2f\n", label, us); } while (0)
int main(int argc, char **argv) {
    int n = argc > 1 ? atoi(argv[1]) : 2000;
    CHECK(cudaSetDevice(0));
    int *d = NULL, h = 0;
    CHECK(cudaMalloc(&d, 4));
    TIME("cudaMemcpy H2D 4 B", CHECK(cudaMemcpy(d, &h, 4, cudaMemcpyHostToDevice)));
    TIME("cudaMemcpy D2H 4 B", CHECK(cudaMemcpy(&h, d, 4, cudaMemcpyDeviceToHost)));
    TIME("cudaDeviceSynchronize", CHECK(cudaDeviceSynchronize()));
    TIME("empty kernel + synchronize", empty_kernel<<<1, 1>>>(); CHECK(cudaDeviceSynchronize()));
    TIME("cudaMalloc + cudaFree 1 MiB", void *p = NULL; CHECK(cudaMalloc(&p, 1 << 20)); CHECK(cudaFree(p)));
    CHECK(cudaFree(d));
    printf("PASS\n");
    return 0;
}
EOF

cat >"$work/gemm.cu" <<'EOF'
// cuBLAS GEMM time per call, synchronised: N timed calls after 2 warm-up
// ones, for square sizes from one whose time is the call's overhead to one
// whose time is the GPU's.
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <chrono>
#include <cstdio>
#define CHECK(x) do { if ((x) != 0) { printf("FAIL: %s\n", #x); return 1; } } while (0)
template <typename T, typename F>
static int run(cublasHandle_t h, const char *name, int n, int reps, F gemm) {
    T *a, *b, *c, one = 1, zero = 0;
    size_t bytes = (size_t)n * n * sizeof(T);
    CHECK(cudaMalloc(&a, bytes)); CHECK(cudaMalloc(&b, bytes)); CHECK(cudaMalloc(&c, bytes));
    CHECK(cudaMemset(a, 0, bytes)); CHECK(cudaMemset(b, 0, bytes));
    for (int i = 0; i < 2; i++) CHECK(gemm(h, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one, a, n, b, n, &zero, c, n));
    CHECK(cudaDeviceSynchronize());
    auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < reps; i++) CHECK(gemm(h, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one, a, n, b, n, &zero, c, n));
    CHECK(cudaDeviceSynchronize());
    double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count() / reps;
    printf("gemm|%s %d^3|%.3f|%.1f\n", name, n, ms, 2.0 * n * n * (double)n / ms / 1e9);
    CHECK(cudaFree(a)); CHECK(cudaFree(b)); CHECK(cudaFree(c));
    return 0;
}
int main() {
    cublasHandle_t h;
    CHECK(cublasCreate(&h));
    for (int n : {256, 1024, 4096}) {
        int reps = n == 4096 ? 10 : 100;
        if (run<float>(h, "SGEMM", n, reps, cublasSgemm)) return 1;
        if (run<double>(h, "DGEMM", n, reps, cublasDgemm)) return 1;
    }
    CHECK(cublasDestroy(h));
    printf("PASS\n");
    return 0;
}
EOF

# Probe -arch=native once.
if [[ "$arch" == native ]]; then
    if ! "$nvcc" -cudart shared -arch=native -o "$work/bin/.probe" "$work/latency.cu" >"$work/probe.log" 2>&1; then
        log "nvcc -arch=native failed ($(head -n1 "$work/probe.log")); using sm_80"
        arch=sm_80
    fi
fi

wanted() { [[ -z "$only" || "$only" == *" $1 "* ]]; }
# The program a build variant belongs to.
base_name() { local n="${1%-ptds}"; echo "${n%-static}"; }

# Builds run in parallel, one per core: nvcc is single-threaded and the
# programs are many. A failed build leaves no binary (is_built below).
build_jobs="${BUILD_JOBS:-$(nproc 2>/dev/null || echo 4)}"
throttle() { while [[ "$(jobs -rp | wc -l)" -ge "$build_jobs" ]]; do wait -n; done; }
build() { # name source [extra nvcc args...]: -cudart shared unless they name one
    local name="$1" src="$2" runtime=(-cudart shared) a
    shift 2
    wanted "$(base_name "$name")" || return 0
    for a in "$@"; do [[ "$a" == -cudart ]] && runtime=(); done
    throttle
    (
        if ! "$nvcc" "${runtime[@]}" -arch="$arch" -I "$root/tests/cuda" -o "$work/bin/$name" "$src" "$@" \
            >"$work/out/$name.build.log" 2>&1; then
            rm -f "$work/bin/$name"
            log "build of $name failed:"
            sed 's/^/    /' "$work/out/$name.build.log" | head -n 20 >&2
        fi
    ) &
}
log "building tests/cuda/*.cu with $nvcc -cudart shared -arch=$arch"
for src in "$root"/tests/cuda/*.cu; do
    name="$(basename "$src" .cu)"
    extra=()
    case "$name" in
        math_*)
            # shellcheck disable=SC2207 # the paths hold no spaces
            extra=($(math_link "$name")) || continue ;;
        hold_memory) continue ;; # see the runs below
        k_dynamic) extra=(-rdc=true -lcudadevrt) ;;
    esac
    build "$name" "$src" "${extra[@]}"
    if [[ "$name" == k_streams ]]; then
        build k_streams-ptds "$src" --default-stream per-thread
    fi
    build "$name-static" "$src" -cudart static "${extra[@]}"
done
build latency "$work/latency.cu"
if gemm_link="$(math_link math_blas)"; then
    # shellcheck disable=SC2086 # the paths hold no spaces
    build gemm "$work/gemm.cu" $gemm_link
fi

# Driver-API programs, linked against the toolkit's libcuda stub as on any
# CUDA machine; rcud run offers its own libcuda.so.1 in its place.
driver_src="$root/tests/cuda/driver"
stubs=""
for d in "$nvcc_dir/../lib64/stubs" "$nvcc_dir/../lib/stubs" "$nvcc_dir/../targets/$(uname -m)-linux/lib/stubs"; do
    [[ -e "$d/libcuda.so" ]] && stubs="$(cd -- "$d" && pwd -P)" && break
done
if [[ -z "$stubs" ]]; then
    log "no libcuda.so stub beside nvcc: the driver-API programs link against the driver's own"
    stubs="$(dirname "$(ldconfig -p | awk '/libcuda\.so /{print $NF; exit}')")"
fi
nvkernels() { # out source args...
    local out="$1" src="$2"
    shift 2
    throttle
    { "$nvcc" "$@" -o "$work/bin/$out" "$src" >"$work/out/$out.build.log" 2>&1 \
        || log "build of $out failed: $(head -n1 "$work/out/$out.build.log")"; } &
}
if wanted d_vector_add || wanted d_contexts || wanted d_dlopen || wanted d_mixed; then
    nvkernels kernels.ptx "$driver_src/kernels.cu" -ptx -arch=compute_80
    nvkernels kernels-ptx.fatbin "$driver_src/kernels.cu" -fatbin -gencode arch=compute_80,code=compute_80
    nvkernels kernels.fatbin "$driver_src/kernels.cu" -fatbin -arch="$arch"
fi
wanted d_matmul && nvkernels matmul.ptx "$driver_src/matmul.cu" -ptx -arch=compute_80
for prog in d_vector_add d_matmul d_contexts; do
    build "$prog" "$driver_src/$prog.c" -cudart none -L"$stubs" -lcuda -lpthread
done
build d_dlopen "$driver_src/d_dlopen.c" -cudart none -ldl
build d_mixed "$driver_src/d_mixed.cu" -L"$stubs" -lcuda
build d_nvrtc "$driver_src/d_nvrtc.c" -cudart none -L"$stubs" -lcuda -lnvrtc
wait
log "built $(find "$work/bin" -maxdepth 1 -type f ! -name '.*' | wc -l) files in $work/bin"
is_built() { [[ -x "$work/bin/$1" ]]; }

# ---- server -----------------------------------------------------------------

LD_LIBRARY_PATH="${math_dir:+$math_dir:}${LD_LIBRARY_PATH:-}" \
    RCUD_LOG=info "$bin/rcud-server" --backend cuda --listen "127.0.0.1:$port" >"$work/server.log" 2>&1 &
server_pid=$!
for _ in $(seq 1 150); do
    grep -q "rcud-server listening" "$work/server.log" 2>/dev/null && break
    if ! kill -0 "$server_pid" 2>/dev/null; then
        log "rcud-server --backend cuda did not start:"
        sed 's/^/    /' "$work/server.log" >&2
        exit 2
    fi
    sleep 0.2
done
grep -q "rcud-server listening" "$work/server.log" || die "rcud-server did not start listening within 30 s"
log "rcud-server --backend cuda listening on 127.0.0.1:$port (pid $server_pid)"

# ---- runs -------------------------------------------------------------------

filter() {
    grep -v -E \
        -e 'GB/s|ms/copy|[0-9] us\b' \
        -e '^(pageable|pinned|device) +(H2D|D2H|D2D) ' \
        -e '^device [0-9]+: ' \
        -e '^(runtime|driver) version: ' \
        -e 'driver version [0-9]+$' \
        -e '^elapsed: [0-9.]+ ms$' \
        -e '^printf FIFO: ' \
        -e '^cublas version: ' \
        -e '^ \*\* On entry to ' \
        -e '0x[0-9a-fA-F]{8,}' \
        "$1"
}

# One program both ways: native, then under rcud. Sets $native_rc, $rcud_rc.
run_both() { # tag name [args...]
    local tag="$1" name="$2"
    shift 2
    LD_LIBRARY_PATH="$native_libs${math_dir:+:$math_dir}" timeout "$run_timeout" "$work/bin/$name" "$@" \
        >"$work/out/$tag.native" 2>"$work/out/$tag.native.err"
    native_rc=$?
    timeout "$run_timeout" "$bin/rcud" run --server "127.0.0.1:$port" \
        --library "$bin/librcudart.so" -- "$work/bin/$name" "$@" \
        >"$work/out/$tag.rcud" 2>"$work/out/$tag.rcud.err"
    rcud_rc=$?
}

status_of() { # rc -> PASS / FAIL(rc) / TIMEOUT
    case "$1" in
        0) echo PASS ;;
        124) echo TIMEOUT ;;
        *) echo "FAIL($1)" ;;
    esac
}

known_difference() {
    case "$1" in
        unimplemented) echo "functions rcud does not implement work natively" ;;
        k_func_attrs) echo "rcud refuses thread block cluster launches, a Hopper GPU runs them" ;;
        k_managed) echo "rcud reports no concurrent managed access (host and GPU share no page table)" ;;
        api_misc) echo "rcud reports no thread block clusters, a Hopper GPU has them" ;;
        k_textures) echo "the cuda backend has no texture or surface objects yet" ;;
        k_graph_cond) echo "the cuda backend does not run conditional graph nodes yet" ;;
        *) return 1 ;;
    esac
}

declare -a rows=()
failures=0
add_row() { rows+=("$1|$2|$3|$4|$5"); }

compare() { # tag name args-text
    local tag="$1" name="$2" args="$3" result note=""
    local same_output=0
    {
        echo "exit status: native $(status_of "$native_rc"), rcud $(status_of "$rcud_rc")"
        if [[ "$(base_name "$name")" == k_dynamic || "$(base_name "$name")" == k_printf ]]; then
            diff <(filter "$work/out/$tag.native" | sort) <(filter "$work/out/$tag.rcud" | sort) && same_output=1
        else
            diff <(filter "$work/out/$tag.native") <(filter "$work/out/$tag.rcud") && same_output=1
        fi
    } >"$work/out/$tag.diff"
    if [[ "$native_rc" == "$rcud_rc" && "$same_output" == 1 ]]; then
        result=same
    elif note="$(known_difference "$(base_name "$name")")"; then
        result="differs (known)"
    else
        result=DIFFERS
        failures=$((failures + 1))
        # The first differing line, for the table.
        note="$(grep -m1 '^[<>]' "$work/out/$tag.diff" | cut -c1-100 | tr '|' '/')"
        [[ -n "$note" ]] || note="exit status differs"
        log "$tag: outputs differ (native $(status_of "$native_rc"), rcud $(status_of "$rcud_rc")):"
        head -n 20 "$work/out/$tag.diff" | sed 's/^/    /' >&2
    fi
    add_row "$name" "$args" "$(status_of "$native_rc")" "$(status_of "$rcud_rc")" "$result${note:+: $note}"
}

for src in "$root"/tests/cuda/*.cu; do
    name="$(basename "$src" .cu)"
    wanted "$name" || continue
    case "$name" in
        k_limits)
            add_row k_limits "timeout, unsupported" - - "skipped: never ends natively / emulator-only"
            continue ;;
        hold_memory)
            add_row hold_memory "" - - "skipped: a helper of the memory-limit tests (holds memory, prints its pid)"
            continue ;;
        math_*)
            if [[ -z "$(forwarded_library "$name")" ]]; then
                add_row "$name" "" - - "skipped: the cuda backend does not forward this library yet"
                continue
            elif ! math_link "$name" >/dev/null; then
                add_row "$name" "" - - "skipped: NVIDIA's $(forwarded_library "$name") not found (toolkit or wheel)"
                continue
            fi ;;
        k_multi)
            if [[ "$gpu_count" -lt 2 ]]; then
                add_row k_multi "" - - "skipped: needs two GPUs"
                continue
            fi ;;
    esac
    if ! is_built "$name"; then
        add_row "$name" "" - - "build failed"
        failures=$((failures + 1))
        continue
    fi
    case "$name" in
        k_errors)
            for mode in fault config; do
                log "running $name $mode"
                run_both "$name-$mode" "$name" "$mode"
                compare "$name-$mode" "$name" "$mode"
            done ;;
        bandwidth) ;; # below
        *)
            log "running $name"
            run_both "$name" "$name"
            compare "$name" "$name" ""
            if [[ "$name" == k_streams ]] && is_built k_streams-ptds; then
                log "running k_streams-ptds"
                run_both k_streams-ptds k_streams-ptds
                compare k_streams-ptds k_streams-ptds "(--default-stream per-thread)"
            fi ;;
    esac
    if is_built "$name-static"; then
        if [[ "$name" == k_errors ]]; then
            for mode in fault config; do
                log "running $name-static $mode"
                run_both "$name-static-$mode" "$name-static" "$mode"
                compare "$name-static-$mode" "$name-static" "$mode"
            done
        elif [[ "$name" != bandwidth ]]; then
            log "running $name-static"
            run_both "$name-static" "$name-static"
            compare "$name-static" "$name-static" "(static runtime)"
        fi
    fi
done

# The driver-API programs, with the kernel files they load.
driver_args() {
    case "$1" in
        d_vector_add) echo "$work/bin/kernels.ptx $work/bin/kernels-ptx.fatbin $work/bin/kernels.fatbin" ;;
        d_matmul) echo "$work/bin/matmul.ptx" ;;
        d_contexts|d_dlopen|d_mixed) echo "$work/bin/kernels.ptx" ;;
    esac
}
for prog in d_vector_add d_matmul d_contexts d_dlopen d_mixed d_nvrtc; do
    wanted "$prog" || continue
    if ! is_built "$prog"; then
        add_row "$prog" "" - - "build failed"
        failures=$((failures + 1))
        continue
    fi
    log "running $prog"
    # shellcheck disable=SC2046 # the paths hold no spaces (mktemp)
    run_both "$prog" "$prog" $(driver_args "$prog")
    compare "$prog" "$prog" "(driver API)"
done

# CuPy's smoke tests, when a Python with CuPy for this GPU is given.
if [[ -n "$python" ]]; then
    log "running CuPy's smoke tests with $python"
    cupy_tests="$root/tests/python"
    LD_LIBRARY_PATH="$native_libs" timeout "$cupy_timeout" "$python" -m pytest -q -p no:cacheprovider \
        "$cupy_tests/cupy_smoke.py" >"$work/out/cupy.native" 2>&1
    native_rc=$?
    timeout "$cupy_timeout" "$bin/rcud" run --server "127.0.0.1:$port" --library "$bin/librcudart.so" \
        -- "$python" -m pytest -q -p no:cacheprovider "$cupy_tests/cupy_smoke.py" \
        >"$work/out/cupy.rcud" 2>&1
    rcud_rc=$?
    cupy_result="$(tail -n1 "$work/out/cupy.rcud" | tr '|' '/')"
    if [[ "$native_rc" == 0 && "$rcud_rc" == 0 ]]; then
        add_row cupy_smoke.py "(pytest)" PASS PASS "same: $cupy_result"
    else
        add_row cupy_smoke.py "(pytest)" "$(status_of "$native_rc")" "$(status_of "$rcud_rc")" "DIFFERS: $cupy_result"
        failures=$((failures + 1))
    fi
fi

# ---- benchmarks -------------------------------------------------------------

declare -a bw_rows=()
if is_built bandwidth; then
    for mb in $bandwidth_mb; do
        log "running bandwidth $mb"
        run_both "bandwidth-$mb" bandwidth "$mb"
        compare "bandwidth-$mb" bandwidth "$mb"
        while read -r memory copy native_gbs; do
            rcud_gbs="$(awk -v m="$memory" -v c="$copy" '$1 == m && $2 == c { print $NF }' \
                "$work/out/bandwidth-$mb.rcud")"
            bw_rows+=("$mb|$memory $copy|$native_gbs|${rcud_gbs:--}")
        done < <(awk '$1 ~ /^(pageable|pinned|device)$/ && $2 ~ /^(H2D|D2H|D2D)$/ { print $1, $2, $NF }' \
            "$work/out/bandwidth-$mb.native")
    done
fi

declare -a lat_rows=()
if is_built latency; then
    log "running the latency program"
    run_both latency latency
    while IFS='|' read -r _ label native_us; do
        rcud_us="$(awk -F'|' -v l="$label" '$1 == "latency" && $2 == l { print $3 }' \
            "$work/out/latency.rcud")"
        lat_rows+=("$label|$native_us|${rcud_us:--}")
    done < <(grep '^latency|' "$work/out/latency.native")
    if [[ "$native_rc" != 0 || "$rcud_rc" != 0 ]]; then
        log "latency program: native $(status_of "$native_rc"), rcud $(status_of "$rcud_rc")"
        failures=$((failures + 1))
    fi
fi

declare -a gemm_rows=()
if is_built gemm; then
    log "running the cuBLAS GEMM program"
    run_both gemm gemm
    while IFS='|' read -r _ label native_ms native_tflops; do
        rcud_ms="$(awk -F'|' -v l="$label" '$1 == "gemm" && $2 == l { print $3 }' "$work/out/gemm.rcud")"
        gemm_rows+=("$label|$native_ms|${rcud_ms:--}|$native_tflops")
    done < <(grep '^gemm|' "$work/out/gemm.native")
    if [[ "$native_rc" != 0 || "$rcud_rc" != 0 ]]; then
        log "GEMM program: native $(status_of "$native_rc"), rcud $(status_of "$rcud_rc")"
        failures=$((failures + 1))
    fi
fi

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a + 0 > 0 && b + 0 > 0) printf "%.2f", b / a; else print "-" }'; }

# ---- report -----------------------------------------------------------------

report() { # markdown tables on stdout
    echo "| program | args | native | rcud | result |"
    echo "|---|---|---|---|---|"
    local r
    for r in "${rows[@]}"; do
        IFS='|' read -r a b c d e <<<"$r"
        echo "| $a | $b | $c | $d | $e |"
    done
    if [[ ${#bw_rows[@]} -gt 0 ]]; then
        echo
        echo "Bandwidth (tests/cuda/bandwidth.cu, GB/s; rcud over TCP on loopback):"
        echo
        echo "| size (MB) | memory, copy | native GB/s | rcud GB/s | rcud / native |"
        echo "|---|---|---|---|---|"
        for r in "${bw_rows[@]}"; do
            IFS='|' read -r a b c d <<<"$r"
            echo "| $a | $b | $c | $d | $(ratio "$c" "$d") |"
        done
    fi
    if [[ ${#lat_rows[@]} -gt 0 ]]; then
        echo
        echo "Latency (µs per call, mean of 2000 after 10 warm-up calls):"
        echo
        echo "| call | native µs | rcud µs | rcud / native |"
        echo "|---|---|---|---|"
        for r in "${lat_rows[@]}"; do
            IFS='|' read -r a b c <<<"$r"
            echo "| $a | $b | $c | $(ratio "$b" "$c") |"
        done
    fi
    if [[ ${#gemm_rows[@]} -gt 0 ]]; then
        echo
        echo "cuBLAS GEMM (ms per call, synchronised; under rcud each call is forwarded to NVIDIA's cuBLAS on the server):"
        echo
        echo "| GEMM | native ms | rcud ms | native / rcud | native TFLOP/s |"
        echo "|---|---|---|---|---|"
        for r in "${gemm_rows[@]}"; do
            IFS='|' read -r a b c d <<<"$r"
            echo "| $a | $b | $c | $(ratio "$c" "$b") | $d |"
        done
    fi
}

echo
echo "rcud gpu-check: $gpu_name, driver $driver (CUDA $cuda_driver), nvcc $nvcc_version, -arch=$arch, rcud $commit"
echo
report
echo

if [[ "$record" == 1 ]]; then
    {
        echo
        echo "## $(date -u +%Y-%m-%d) — $gpu_name, driver $driver"
        echo
        echo "GPU: $gpu_name (x$gpu_count); driver $driver (CUDA $cuda_driver); nvcc $nvcc_version, \`-arch=$arch\`; rcud commit $commit; run $(date -u +%Y-%m-%dT%H:%MZ) with \`scripts/gpu-check.sh\`."
        echo
        report
    } >>"$results"
    log "results appended to $results"
fi

if [[ "$failures" -gt 0 ]]; then
    log "$failures run(s) differ between native and rcud"
    exit 1
fi
log "every compared run matched (known differences aside)"
exit 0
