#!/bin/sh
# Builds the tracing libcuda.so.1 stand-in into $1 (default /tmp/trace_libcuda).
# Usage: tests/tools/trace_libcuda/build.sh [OUT_DIR]
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
out=${1:-/tmp/trace_libcuda}
mkdir -p "$out"
python3 "$here/gen_stubs.py" "$root/cuda-shim/exports/cuda.txt" "$root/cuda-shim/exports/cuda-procs.txt" \
    "$out/stubs.gen.c"
${CC:-cc} -O1 -g -fPIC -shared -fvisibility=hidden -Wall -Wextra -Wno-unused-parameter \
    -Wl,-soname,libcuda.so.1 -o "$out/libcuda.so.1" \
    "$here/trace_libcuda.c" "$out/stubs.gen.c" -ldl -lpthread
ln -sf libcuda.so.1 "$out/libcuda.so"
echo "built $out/libcuda.so.1"
