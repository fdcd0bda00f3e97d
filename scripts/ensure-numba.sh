#!/usr/bin/env bash
# Prints (on stdout, one line) the absolute path of a Python interpreter that
# has numba-cuda, cuda-python's `cuda.core`, numpy and pytest, for the tests
# that run Numba and cuda.core programs under `rcud run`
# (cli/tests/numba.rs); everything else goes to stderr.
#
# The interpreter is <repo root>/.venv-numba/bin/python. The virtual
# environment is created when missing and the pinned packages below are
# installed with pip (its download cache is used); when they are already
# installed the script only checks a stamp file and returns at once.
#
# What is installed is numba-cuda's `cu13` extra (cuda-bindings 13, NVRTC,
# NVVM, the runtime and CCCL headers) except nvJitLink: nvJitLink links on
# the client into SASS for the device's architecture, which the emulated GPU
# cannot run (it runs PTX). Without it, Numba and cuda.core link through the
# driver's cuLink*, that is through rcud, which keeps the PTX. An existing
# nvJitLink in .venv-numba is removed. The packages the bundled test suite
# imports (filecheck, cffi, ml_dtypes, psutil) come too.
#
# Usage: PYTHON="$(scripts/ensure-numba.sh)"
set -euo pipefail

log() { printf 'ensure-numba: %s\n' "$*" >&2; }

script_dir="$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd -P)"
repo_root="$(cd -- "$script_dir/.." && pwd -P)"
venv="$repo_root/.venv-numba"
python="$venv/bin/python"
stamp="$venv/.rcud-requirements"

# Pinned: the pass counts asserted by cli/tests/numba.rs were measured with
# exactly these.
requirements=(
    "numba-cuda==0.30.4"
    "numba==0.68.1"
    "cuda-core==1.2.2"
    "cuda-bindings==13.5.0"
    "cuda-toolkit[cccl,cudart,nvrtc,nvvm]==13.5.0"
    "numpy==2.4.6"
    "pytest==9.2.0"
    "filecheck==1.0.6"
    "cffi==2.1.1"
    "ml-dtypes==0.6.0"
    "psutil==7.2.2"
)
wanted="$(printf '%s\n' "${requirements[@]}")"

installed() {
    [[ -x "$python" && -f "$stamp" && "$(cat "$stamp")" == "$wanted" ]] || return 1
    # Cheap check that the stamp did not outlive the packages.
    "$python" -c 'import numba.cuda, cuda.core, numpy, pytest' >/dev/null 2>&1
}

if ! installed; then
    if ! command -v python3 >/dev/null 2>&1; then
        log "no python3 to create $venv with"
        exit 1
    fi
    if [[ ! -x "$python" ]]; then
        log "creating virtual environment $venv"
        python3 -m venv "$venv" >&2
    fi
    log "installing numba-cuda, cuda-core and the CUDA 13 compilers from PyPI into $venv (about 1 GB)"
    rm -f "$stamp"
    "$python" -m pip install --disable-pip-version-check --quiet "${requirements[@]}" >&2
    if "$python" -m pip show --quiet nvidia-nvjitlink >/dev/null 2>&1; then
        log "removing nvidia-nvjitlink: it links into SASS, which the emulated GPU cannot run"
        "$python" -m pip uninstall --disable-pip-version-check --quiet --yes nvidia-nvjitlink >&2
    fi
    if ! "$python" -c 'import numba.cuda, cuda.core, numpy, pytest' >&2; then
        log "pip finished but the packages do not import"
        exit 1
    fi
    printf '%s\n' "$wanted" >"$stamp"
fi

printf '%s\n' "$python"
