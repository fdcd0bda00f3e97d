#!/usr/bin/env bash
# Prints (on stdout, one line) the absolute path of an `nvcc` to compile the
# CUDA test programs with; everything else goes to stderr.
#
# Order:
#   1. $RCUD_NVCC, when set (must be executable);
#   2. `nvcc` on PATH;
#   3. the CUDA 13 toolkit from PyPI in <repo root>/.venv-cuda, installed there
#      (python3 -m venv + pip) when it is missing; NVRTC (for the driver-API
#      test that compiles a kernel at run time) is added to an existing
#      .venv-cuda that lacks it.
#
# The PyPI toolkit ships only libcudart.so.13; linking with `nvcc -cudart shared`
# needs a `libcudart.so` symlink beside it, which this script creates.
#
# Usage: NVCC="$(scripts/ensure-nvcc.sh)"
set -euo pipefail

log() { printf 'ensure-nvcc: %s\n' "$*" >&2; }

script_dir="$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd -P)"
repo_root="$(cd -- "$script_dir/.." && pwd -P)"

abs_path() {
    # Absolute path of an existing file, without needing `realpath`.
    local dir
    dir="$(cd -- "$(dirname -- "$1")" && pwd -P)"
    printf '%s/%s\n' "$dir" "$(basename -- "$1")"
}

if [[ -n "${RCUD_NVCC:-}" ]]; then
    if [[ -x "$RCUD_NVCC" && ! -d "$RCUD_NVCC" ]]; then
        log "using \$RCUD_NVCC"
        abs_path "$RCUD_NVCC"
        exit 0
    fi
    log "RCUD_NVCC=$RCUD_NVCC is not an executable file; ignoring it"
fi

if found="$(command -v nvcc 2>/dev/null)" && [[ -n "$found" && -x "$found" ]]; then
    log "using nvcc from PATH"
    abs_path "$found"
    exit 0
fi

venv="$repo_root/.venv-cuda"

find_venv_nvcc() {
    local candidate
    for candidate in "$venv"/lib/python3*/site-packages/nvidia/cu13/bin/nvcc; do
        if [[ -x "$candidate" ]]; then
            printf '%s\n' "$candidate"
            return 0
        fi
    done
    return 1
}

# NVRTC (libnvrtc.so.13) for the driver-API test program that compiles its
# kernel at run time; an existing .venv-cuda from before gets it added.
find_venv_nvrtc() {
    local candidate
    for candidate in "$venv"/lib/python3*/site-packages/nvidia/cu13/lib/libnvrtc.so.13; do
        if [[ -e "$candidate" ]]; then
            printf '%s\n' "$candidate"
            return 0
        fi
    done
    return 1
}

if ! nvcc_path="$(find_venv_nvcc)" || ! find_venv_nvrtc >/dev/null; then
    if ! command -v python3 >/dev/null 2>&1; then
        log "no nvcc on PATH and no python3 to install the CUDA toolkit from PyPI"
        exit 1
    fi
    if [[ ! -x "$venv/bin/python" ]]; then
        log "creating virtual environment $venv"
        python3 -m venv "$venv" >&2
    fi
    log "installing the CUDA 13 compiler, runtime and NVRTC from PyPI into $venv (a few hundred MB)"
    "$venv/bin/python" -m pip install --disable-pip-version-check --quiet \
        "nvidia-cuda-nvcc==13.*" \
        "nvidia-cuda-runtime==13.*" \
        "nvidia-cuda-crt==13.*" \
        "nvidia-cuda-cccl==13.*" \
        "nvidia-cuda-nvrtc==13.*" >&2
    if ! nvcc_path="$(find_venv_nvcc)"; then
        log "pip finished but no nvcc was found under $venv/lib/python3*/site-packages/nvidia/cu13/bin"
        exit 1
    fi
fi

lib_dir="$(cd -- "$(dirname -- "$nvcc_path")/../lib" && pwd -P)"
if [[ ! -e "$lib_dir/libcudart.so" ]]; then
    if [[ ! -e "$lib_dir/libcudart.so.13" ]]; then
        log "no libcudart.so.13 in $lib_dir (is nvidia-cuda-runtime installed?)"
        exit 1
    fi
    log "creating $lib_dir/libcudart.so -> libcudart.so.13"
    ln -sfn libcudart.so.13 "$lib_dir/libcudart.so"
fi

abs_path "$nvcc_path"
