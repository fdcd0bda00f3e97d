#!/usr/bin/env bash
# The demo on a fresh machine: build rcud, get a CUDA compiler, compile two
# unmodified CUDA programs against the ordinary shared CUDA runtime, and run
# them on rcud's embedded server (the emulated GPU when this machine has none).
#
# Needs: cargo, python3 with pip (for the CUDA compiler from PyPI when no nvcc
# is on PATH), a C++ compiler for nvcc's host code.
set -euo pipefail

cd -- "$(dirname -- "${BASH_SOURCE[0]}")/.."

# Cargo puts its output under $CARGO_TARGET_DIR when that is set.
target_dir="${CARGO_TARGET_DIR:-target}"
rcud="$target_dir/release/rcud"

echo "==> cargo build --release --workspace" >&2
cargo build --release --workspace

echo "==> finding nvcc" >&2
nvcc="$(scripts/ensure-nvcc.sh)"
echo "    nvcc: $nvcc" >&2

# The PyPI toolkit keeps libcudart.so beside libcudart.so.13 (ensure-nvcc.sh
# makes the symlink); pass that directory to the linker in case nvcc's own
# profile does not.
nvcc_lib="$(cd -- "$(dirname -- "$nvcc")/../lib" 2>/dev/null && pwd -P || true)"
link_flags=()
if [[ -n "$nvcc_lib" && -e "$nvcc_lib/libcudart.so" ]]; then
    link_flags=("-L$nvcc_lib")
fi

out=target/cuda-demo
mkdir -p "$out"
for prog in device_query bandwidth k_matmul_tiled k_streams; do
    echo "==> nvcc -cudart shared tests/cuda/$prog.cu -> $out/$prog" >&2
    "$nvcc" -cudart shared -O2 -arch=sm_80 ${link_flags[@]+"${link_flags[@]}"} \
        -o "$out/$prog" "tests/cuda/$prog.cu"
done

echo "==> $rcud run -- $out/device_query" >&2
"$rcud" run -- "$out/device_query"

echo "==> $rcud run -- $out/bandwidth 32" >&2
"$rcud" run -- "$out/bandwidth" 32

echo "==> $rcud run -- $out/k_matmul_tiled (kernels with shared memory, run by the PTX interpreter)" >&2
"$rcud" run -- "$out/k_matmul_tiled"

echo "==> $rcud run -- $out/k_streams (streams, events, callbacks)" >&2
"$rcud" run -- "$out/k_streams"
