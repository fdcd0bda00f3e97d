#!/usr/bin/env bash
# Prints (on stdout, two lines) the absolute paths of two Python interpreters
# with CuPy, for the tests that run CuPy under `rcud run` (cli/tests/cupy.rs):
#
#   line 1: <repo root>/.venv-cupy13/bin/python  (cupy-cuda13x, CUDA 13)
#   line 2: <repo root>/.venv-cupy12/bin/python  (cupy-cuda12x, CUDA 12)
#
# Everything else goes to stderr. Each virtual environment is created when
# missing and the pinned packages below are installed with pip (its download
# cache is used); when they are already installed the script only checks a
# stamp file and returns at once.
#
# What CuPy needs at run time besides its wheel (which carries NVIDIA's CUDA
# runtime, linked statically, and so talks to libcuda.so.1 only): NVRTC, to
# compile its kernels, and the CUDA runtime headers, which NVRTC includes
# (CuPy finds both through cuda-pathfinder). `cupy-cuda13x[ctk]` would also
# bring cuBLAS, cuFFT, cuRAND, cuSOLVER and cuSPARSE (about 1.5 GB); CuPy
# imports without them, and what needs them (matmul, FFT, random, linalg)
# is not run by the tests. For CUDA 12 the runtime package also brings
# NVIDIA's shared libcudart.so.12, which the tests load to check NVIDIA's own
# runtime on rcud's driver.
#
# Usage: paths="$(scripts/ensure-cupy.sh)"
#        PY13="$(sed -n 1p <<<"$paths")"; PY12="$(sed -n 2p <<<"$paths")"
set -euo pipefail

log() { printf 'ensure-cupy: %s\n' "$*" >&2; }

script_dir="$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd -P)"
repo_root="$(cd -- "$script_dir/.." && pwd -P)"

# Pinned: the pass counts asserted by cli/tests/cupy.rs were measured with
# exactly these, and tests/python/cupy_suite holds CuPy 14.2.0's own tests.
requirements_13=(
    "cupy-cuda13x==14.2.0"
    "nvidia-cuda-nvrtc==13.5.37"
    "nvidia-cuda-runtime==13.5.37"
    "numpy==2.4.6"
    "pytest==9.2.0"
)
requirements_12=(
    "cupy-cuda12x==14.2.0"
    "nvidia-cuda-nvrtc-cu12==12.9.86"
    "nvidia-cuda-runtime-cu12==12.9.79"
    "numpy==2.4.6"
    "pytest==9.2.0"
)

# ensure VENV_DIR REQUIREMENTS...: creates the environment and installs the
# requirements unless its stamp says they are there.
ensure() {
    local venv="$1"
    shift
    local python="$venv/bin/python"
    local stamp="$venv/.rcud-requirements"
    local wanted
    wanted="$(printf '%s\n' "$@")"
    if [[ -x "$python" && -f "$stamp" && "$(cat "$stamp")" == "$wanted" ]] &&
        "$python" -c 'import cupy, pytest' >/dev/null 2>&1; then
        return 0
    fi
    if [[ ! -x "$python" ]]; then
        if ! command -v python3 >/dev/null 2>&1; then
            log "no python3 to create $venv with"
            exit 1
        fi
        log "creating virtual environment $venv"
        python3 -m venv "$venv" >&2
    fi
    log "installing $1 with NVRTC and the runtime headers from PyPI into $venv (about 600 MB)"
    rm -f "$stamp"
    "$python" -m pip install --disable-pip-version-check --quiet "$@" >&2
    if ! "$python" -c 'import cupy, pytest' >&2; then
        log "pip finished but cupy does not import in $venv"
        exit 1
    fi
    printf '%s\n' "$wanted" >"$stamp"
}

ensure "$repo_root/.venv-cupy13" "${requirements_13[@]}"
ensure "$repo_root/.venv-cupy12" "${requirements_12[@]}"

printf '%s\n' "$repo_root/.venv-cupy13/bin/python" "$repo_root/.venv-cupy12/bin/python"
