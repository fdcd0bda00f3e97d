#!/usr/bin/env bash
# Prints (on stdout, one line) the absolute path of a `kubernetes-validate`
# to check the manifests in deploy/kubernetes against the Kubernetes OpenAPI
# schemas; everything else goes to stderr.
#
# kubernetes-validate (PyPI) ships the schemas of every Kubernetes release,
# so validating needs no network once it is installed. Order:
#   1. $RCUD_K8S_VALIDATE, when set (must be executable);
#   2. <repo root>/.venv-k8s/bin/kubernetes-validate, installed there
#      (python3 -m venv + pip) when it is missing.
#
# Usage: VALIDATE="$(scripts/ensure-kubernetes-validate.sh)"
set -euo pipefail

log() { printf 'ensure-kubernetes-validate: %s\n' "$*" >&2; }

repo_root="$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")/.." && pwd -P)"

if [[ -n "${RCUD_K8S_VALIDATE:-}" ]]; then
    if [[ ! -x "$RCUD_K8S_VALIDATE" ]]; then
        log "RCUD_K8S_VALIDATE=$RCUD_K8S_VALIDATE is not executable"
        exit 1
    fi
    printf '%s\n' "$RCUD_K8S_VALIDATE"
    exit 0
fi

venv="$repo_root/.venv-k8s"
validate="$venv/bin/kubernetes-validate"
if [[ ! -x "$validate" ]]; then
    log "installing kubernetes-validate into $venv"
    python3 -m venv "$venv" >&2
    "$venv/bin/pip" install --quiet --disable-pip-version-check 'kubernetes-validate>=1.30' >&2
fi
printf '%s\n' "$validate"
