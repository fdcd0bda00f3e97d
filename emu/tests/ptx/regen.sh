#!/usr/bin/env bash
# Regenerates the checked-in PTX of the interpreter's test kernels:
#   emu/tests/ptx/regen.sh            (uses scripts/ensure-nvcc.sh to find nvcc)
#   NVCC=/path/to/nvcc emu/tests/ptx/regen.sh
# The tests read only the .ptx files, so they need no CUDA toolkit.
set -euo pipefail
here="$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd -P)"
nvcc="${NVCC:-$("$here/../../../scripts/ensure-nvcc.sh")}"
for cu in "$here"/*.cu; do
    # Kernels that launch kernels need separable compilation.
    rdc=(); [[ $cu == *_rdc.cu ]] && rdc=(-rdc=true)
    "$nvcc" -ptx -arch=sm_80 -O3 "${rdc[@]}" "$cu" -o "${cu%.cu}.ptx"
    echo "regen: ${cu##*/} -> $(basename "${cu%.cu}.ptx")"
done
# libcu++ takes other paths on sm_90 (try_wait, expect_tx, bulk copies).
"$nvcc" -ptx -arch=sm_90 -O3 "$here/mbarrier.cu" -o "$here/mbarrier_sm90.ptx"
echo "regen: mbarrier.cu -> mbarrier_sm90.ptx"
