#!/bin/sh
# Builds the stand-in and the traced programs, runs them against NVIDIA's
# static and shared CUDA runtime, and leaves one log per run in OUT_DIR.
# Usage: tests/tools/trace_libcuda/run_demo.sh [OUT_DIR]     (default /tmp/trace_libcuda)
# Extra TRACE_LIBCUDA_* variables in the environment are passed through.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
out=${1:-/tmp/trace_libcuda}
cu13="$root/.venv-cuda/lib/python3.11/site-packages/nvidia/cu13"
[ -x "$cu13/bin/nvcc" ] || "$root/scripts/ensure-nvcc.sh"
"$here/build.sh" "$out"
PATH="$cu13/bin:$PATH"
for prog in "$here/trace_min.cu" "$root/tests/cuda/k_vector_add.cu"; do
    name=$(basename "$prog" .cu)
    nvcc -I "$root/tests/cuda" -o "$out/${name}_static" "$prog"
    nvcc -I "$root/tests/cuda" -cudart shared -o "$out/${name}_shared" "$prog"
    for kind in static shared; do
        log="$out/${name}_${kind}.log"
        set +e
        LD_LIBRARY_PATH="$out:$cu13/lib" "$out/${name}_${kind}" >"$out/${name}_${kind}.out" 2>"$log"
        rc=$?
        set -e
        echo "$name ($kind runtime): exit $rc, $(grep -c . "$log") trace lines -> $log"
        sed 's/^/    /' "$out/${name}_${kind}.out" | head -8
    done
done
