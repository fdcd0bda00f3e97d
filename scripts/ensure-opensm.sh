#!/usr/bin/env bash
# Prints (on stdout, one line) the absolute path of the `opensm` binary, for
# the tests that check the files `rcud qos plan` writes (cli/tests/qos.rs);
# everything else goes to stderr.
#
# The tests need no InfiniBand adapter. They run OpenSM's option parser on
# the opensm.conf fragment, and run OpenSM once against a fabric simulated by
# ibsim (a switch and two adapters, reached through the libumad2sim.so
# preload), where it parses the qos-policy.conf and programs the simulated
# ports, whose tables smpquery reads back. Hence four Debian packages:
# opensm, ibsim-utils, libumad2sim0 and infiniband-diags (smpquery). The
# missing ones are installed with apt-get (as root, or through sudo); when
# all are there the script only prints the path.
#
# Usage: export RCUD_OPENSM="$(scripts/ensure-opensm.sh)"
set -euo pipefail

log() { printf 'ensure-opensm: %s\n' "$*" >&2; }

# The first match of a program on PATH or in the sbin directories, which
# PATH may lack for a user that is not root.
find_prog() {
    command -v "$1" 2>/dev/null && return 0
    local d
    for d in /usr/sbin /sbin /usr/bin; do
        [[ -x "$d/$1" ]] && { printf '%s\n' "$d/$1"; return 0; }
    done
    return 1
}

find_umad2sim() {
    local f
    for f in /usr/lib/*/umad2sim/libumad2sim.so /usr/lib/umad2sim/libumad2sim.so \
             /usr/lib64/umad2sim/libumad2sim.so; do
        [[ -f "$f" ]] && { printf '%s\n' "$f"; return 0; }
    done
    return 1
}

missing=()
find_prog opensm >/dev/null || missing+=(opensm)
find_prog ibsim >/dev/null || missing+=(ibsim-utils)
find_umad2sim >/dev/null || missing+=(libumad2sim0)
find_prog smpquery >/dev/null || missing+=(infiniband-diags)

if ((${#missing[@]})); then
    if ! command -v apt-get >/dev/null 2>&1; then
        log "missing ${missing[*]} and there is no apt-get to install them with"
        exit 1
    fi
    sudo=()
    if [[ "$(id -u)" != 0 ]]; then
        if command -v sudo >/dev/null 2>&1; then
            sudo=(sudo)
        else
            log "missing ${missing[*]}; installing them needs root (or sudo)"
            exit 1
        fi
    fi
    log "installing the Debian packages ${missing[*]}"
    # A fresh CI image has no package lists yet.
    "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -qq >&2
    "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive \
        apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
    # Under systemd the opensm package starts a subnet manager on the host's
    # adapters. The tests start their own against a simulated fabric; one
    # this script brought up could take over a real fabric, so stop it.
    if [[ " ${missing[*]} " == *" opensm "* ]] && command -v systemctl >/dev/null 2>&1 \
        && systemctl is-active --quiet opensm 2>/dev/null; then
        log "stopping and disabling the opensm service the package started"
        "${sudo[@]}" systemctl disable --now opensm >&2 || true
    fi
fi

if ! path="$(find_prog opensm)"; then
    log "no opensm binary after installing"
    exit 1
fi
for p in ibsim smpquery; do
    find_prog "$p" >/dev/null || { log "no $p after installing"; exit 1; }
done
find_umad2sim >/dev/null || { log "no libumad2sim.so after installing"; exit 1; }

printf '%s\n' "$path"
