#!/usr/bin/env bash
# Runs every test of rcud on a fresh machine: formatting and lint checks, the
# unit tests of each crate, and the end-to-end tests that compile the CUDA
# programs in tests/cuda (with `nvcc -cudart shared` and with nvcc's default
# static runtime) and tests/cuda/driver, and run them, unmodified, under
# `rcud run`, as well as CuPy, numba-cuda and cuda-python with chosen subsets
# of their own test suites. Installs the CUDA compiler (into .venv-cuda, when
# `nvcc` is not on PATH) and the Python libraries (.venv-cupy13,
# .venv-cupy12, .venv-numba) from PyPI, OpenSM with the ibsim fabric
# simulator and Slurm (slurm-wlm, munge) from Debian, and cargo-deb (into
# target/tools) from crates.io.
# No GPU or RDMA hardware is needed.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

nvcc="$(scripts/ensure-nvcc.sh)"
export RCUD_NVCC="$nvcc"
export RCUD_CUDA_INCLUDE="$(dirname "$nvcc")/../include"
# numba-cuda and cuda.core for cli/tests/numba.rs (into .venv-numba).
numba_python="$(scripts/ensure-numba.sh)"
export RCUD_NUMBA_PYTHON="$numba_python"
# CuPy for CUDA 13 and 12 for cli/tests/cupy.rs (into .venv-cupy13, .venv-cupy12).
cupy_pythons="$(scripts/ensure-cupy.sh)"
export RCUD_CUPY13_PYTHON="$(sed -n 1p <<<"$cupy_pythons")"
export RCUD_CUPY12_PYTHON="$(sed -n 2p <<<"$cupy_pythons")"
# The CUDA toolkit is installed above: tests that need it must not skip.
export RCUD_REQUIRE_CUDA=1
# OpenSM and a simulated fabric (ibsim) for cli/tests/qos.rs, from Debian.
export RCUD_OPENSM="$(scripts/ensure-opensm.sh)"
export RCUD_REQUIRE_OPENSM=1
# A one-node Slurm cluster on loopback for cli/tests/slurm.rs (slurm-wlm and
# munge from Debian, installed by scripts/slurm-check.sh): must not skip.
export RCUD_SLURM=1
# cargo-deb for cli/tests/package.rs (built once into target/tools).
export RCUD_CARGO_DEB="$(scripts/ensure-cargo-deb.sh)"
export RCUD_REQUIRE_DEB=1

cargo fmt --all --check
cargo clippy --workspace --all-targets --release -- -D warnings
# The end-to-end tests run the release binaries and library built here.
# All targets: the tests' dev-dependencies change the features of shared
# crates, so building without them made `cargo test` compile the
# workspace a second time (7 of CI's 43 minutes).
cargo build --workspace --release --all-targets
log="$(mktemp)"
trap 'rm -f "$log"' EXIT
status=0
cargo test --workspace --release 2>&1 | tee "$log" || status=$?
# One closing line for the whole run, summed over every test binary.
awk '/^test result:/ { p += $4; f += $6; s += $8 }
     END { printf "all crates: %d passed, %d failed, %d skipped\n", p, f, s }' "$log"
exit "$status"
