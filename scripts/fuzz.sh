#!/usr/bin/env bash
# Runs rcud's cargo-fuzz targets (fuzz/) with their memory budgets. Not part
# of CI: CI replays the checked-in corpora as an ordinary test
# (fuzz-targets/tests/corpus.rs).
#
#   scripts/fuzz.sh [TARGET|all] [RUNS]   fuzz TARGET (default: all, one
#                                         after the other) for RUNS inputs
#   scripts/fuzz.sh cmin [TARGET|all]     minimise the corpora in place
#   scripts/fuzz.sh build                 build every target
#
# RUNS defaults to 10000000 (agent_ops: 250000 sessions, which play well
# over a million operations; the log counts them). Extra libFuzzer flags can
# be given in FUZZ_FLAGS (e.g. FUZZ_FLAGS="-max_total_time=3600").
# FUZZ_NO_BUILD=1 runs the targets as last built (while others edit the
# crates under test). Logs go to fuzz/logs/<target>.log; crashes to
# fuzz/artifacts/<target>/. Installs cargo-fuzz and the nightly toolchain
# when they are missing.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
root="$PWD"

targets=(request handshake fatbin ptx setup agent_ops math)

# Per target: largest input (bytes), RSS limit and single-allocation limit
# (MiB). The decoders must never allocate much more than they are given;
# the fatbin parser may decompress up to 16 MiB (its limit in the target)
# and the PTX front end holds module variables' initial bytes; an agent
# serves up to 32 MiB of emulated device memory and reads fat binaries of
# up to 256 MiB (its protocol limit).
max_len() {
  case "$1" in
    request | handshake | setup) echo 4096 ;;
    fatbin) echo 16384 ;;
    ptx) echo 8192 ;;
    agent_ops) echo 16384 ;;
    math) echo 4096 ;;
  esac
}
rss_limit() {
  case "$1" in
    agent_ops | math) echo 2048 ;;
    *) echo 1024 ;;
  esac
}
malloc_limit() {
  case "$1" in
    request | handshake | setup) echo 16 ;;
    fatbin | ptx) echo 64 ;;
    agent_ops) echo 320 ;;
    # A math call holds copies of the matrices it reads from its 128 KiB.
    math) echo 64 ;;
  esac
}

ensure_tools() {
  if ! rustup toolchain list | grep -q '^nightly'; then
    rustup toolchain install nightly --profile minimal
  fi
  if ! cargo +nightly fuzz --version >/dev/null 2>&1; then
    cargo install cargo-fuzz --locked
  fi
}

# cargo-fuzz builds into fuzz/target; a CARGO_TARGET_DIR meant for the
# workspace would mix nightly sanitizer builds into it.
unset CARGO_TARGET_DIR

build() {
  if [[ -z "${FUZZ_NO_BUILD:-}" ]]; then
    (cd fuzz && cargo +nightly fuzz build -O)
  fi
}

# What `cargo fuzz build -O` made (cargo fuzz run would run the same).
binary() {
  echo "$root/fuzz/target/x86_64-unknown-linux-gnu/release/$1"
}

run_one() {
  local t="$1" runs="$2"
  mkdir -p "fuzz/corpus/$t" "fuzz/logs" "fuzz/artifacts/$t"
  local dict=()
  if [[ -f "fuzz/dict/$t.dict" ]]; then dict=("-dict=$root/fuzz/dict/$t.dict"); fi
  echo "fuzzing $t for $runs runs (log: fuzz/logs/$t.log)"
  local started=$SECONDS status=0
  (cd fuzz && RCUD_FUZZ_PROGRESS=1 "$(binary "$t")" "corpus/$t" \
    -artifact_prefix="artifacts/$t/" \
    -runs="$runs" -max_len="$(max_len "$t")" \
    -rss_limit_mb="$(rss_limit "$t")" -malloc_limit_mb="$(malloc_limit "$t")" \
    -timeout=20 -print_final_stats=1 "${dict[@]}" ${FUZZ_FLAGS:-}) \
    >"fuzz/logs/$t.log" 2>&1 || status=$?
  local executed
  executed="$(grep -o 'stat::number_of_executed_units: [0-9]*' "fuzz/logs/$t.log" | tail -1 | grep -o '[0-9]*$' || true)"
  if [[ -z "$executed" ]]; then
    # Fork mode (FUZZ_FLAGS="-fork=N -ignore_crashes=1"): the last "#N:" line.
    executed="$(grep -o '^#[0-9]*:' "fuzz/logs/$t.log" | tail -1 | tr -d '#:' || true)"
  fi
  echo "$t: status $status, ${executed:-?} executions in $((SECONDS - started)) s"
  if [[ "$t" == agent_ops ]]; then
    grep 'agent_ops:' "fuzz/logs/$t.log" | tail -1 || true
  fi
  return "$status"
}

# Bytes of corpus checked in per target, at most: after the merge, the
# largest inputs go first until the rest fits.
corpus_cap_kb() {
  case "$1" in
    request | handshake | setup) echo 32 ;;
    fatbin | ptx | agent_ops | math) echo 96 ;;
  esac
}

cmin_one() {
  # What `cargo fuzz cmin` does: merge the corpus into an empty one, which
  # keeps the smallest inputs that still cover all it covers.
  local t="$1" kept cap before
  kept="$(mktemp -d)"
  before="$(ls "fuzz/corpus/$t" | wc -l)"
  (cd fuzz && "$(binary "$t")" -merge=1 "$kept" "corpus/$t" \
    -max_len="$(max_len "$t")" -rss_limit_mb="$(rss_limit "$t")" \
    -malloc_limit_mb="$(malloc_limit "$t")" -timeout=20) >"fuzz/logs/cmin-$t.log" 2>&1
  cap=$(($(corpus_cap_kb "$t") * 1024))
  local dropped=0
  while (($(cat "$kept"/* | wc -c) > cap)); do
    rm -f "$kept/$(ls -S "$kept" | head -1)"
    dropped=$((dropped + 1))
  done
  echo "$t: $before inputs before, $(ls "$kept" | wc -l) kept ($dropped of the merge's largest dropped to fit $(corpus_cap_kb "$t") KiB)"
  rm -rf "fuzz/corpus/$t"
  mv "$kept" "fuzz/corpus/$t"
  chmod 755 "fuzz/corpus/$t"
}

ensure_tools
case "${1:-all}" in
  build)
    build
    ;;
  cmin)
    build
    mkdir -p fuzz/logs
    if [[ "${2:-all}" == all ]]; then sel=("${targets[@]}"); else sel=("$2"); fi
    for t in "${sel[@]}"; do cmin_one "$t"; done
    ;;
  *)
    if [[ "${1:-all}" == all ]]; then sel=("${targets[@]}"); else sel=("$1"); fi
    build
    failed=0
    for t in "${sel[@]}"; do
      default=10000000
      [[ "$t" == agent_ops ]] && default=250000
      run_one "$t" "${2:-$default}" || failed=1
    done
    exit "$failed"
    ;;
esac
