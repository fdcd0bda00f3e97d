#!/usr/bin/env bash
# Prints (on stdout, one line) the absolute path of a `cargo-deb` binary of
# the pinned version, for cli/tests/package.rs (`cargo deb -p rcud`);
# everything else goes to stderr.
#
# A `cargo-deb` on PATH of that version is used as it is. Otherwise the
# script builds it once with `cargo install --locked` into
# $RCUD_TOOLS_DIR (default <repo>/target/tools), where later runs find it.
#
# Usage: export RCUD_CARGO_DEB="$(scripts/ensure-cargo-deb.sh)"
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

version=3.8.0
root="${RCUD_TOOLS_DIR:-$PWD/target/tools}"

log() { printf 'ensure-cargo-deb: %s\n' "$*" >&2; }

# Whether $1 is a cargo-deb of the pinned version.
pinned() {
    [[ -x "$1" ]] && [[ "$("$1" --version 2>/dev/null)" == *" $version"* ]]
}

if found="$(command -v cargo-deb 2>/dev/null)" && pinned "$found"; then
    printf '%s\n' "$found"
    exit 0
fi
bin="$root/bin/cargo-deb"
if ! pinned "$bin"; then
    log "building cargo-deb $version into $root (a few minutes, once)"
    start=$SECONDS
    cargo install cargo-deb --locked --version "$version" --root "$root" --force >&2
    log "built in $((SECONDS - start)) s"
    pinned "$bin" || { log "$bin is not cargo-deb $version after installing it"; exit 1; }
fi
printf '%s\n' "$bin"
