#!/usr/bin/env bash
# End-to-end check of deploy/slurm: a one-node Slurm cluster on loopback
# (munged, slurmctld, slurmd, all under a temporary directory, with ports of
# their own, so that a Slurm already installed on the machine is left alone)
# whose node offers the GPUs of two emulated `rcud-server`s (A with two
# GPUs, B with one, handed out whole) as the GRES `rgpu:3`, with
# deploy/slurm/rcud-slurm as its Prolog, Epilog and TaskProlog. First, a
# configuration with a typo is refused. Jobs submitted as `nobody` then
# check:
#   - `--gres=rgpu:1` runs tests/cuda/k_vector_add under `rcud run`, which
#     prints PASS, with RCUD_SERVERS naming GPU #0 of server A, whose log
#     shows the client;
#   - `--gres=rgpu:3` sees the three GPUs of both servers (`rcud info`);
#   - `srun --gres=rgpu:1` and an srun step started with --export=NONE get
#     their GPUs from the TaskProlog;
#   - three jobs holding one GPU each get different GPUs, a fourth waits
#     (Reason=Resources) until one is cancelled and then gets its GPU;
#   - a failing job and cancelled jobs free their GPUs;
#   - a GPU marked by a job that no longer exists (an epilog that never ran)
#     is reclaimed;
#   - a job without rgpu runs with RCUD_SERVERS unset, whatever the
#     submitter's environment held;
#   - `--gres=rgpu:4` is refused at submission;
# and after every job the ledger holds no GPU. All daemons are stopped on
# exit, also on failure.
#
# Needs root (slurmd runs the Prolog as root and the jobs as their users).
# Installs Debian's slurm-wlm and munge with apt-get when they are missing.
# Needs the release build (`cargo build --release --workspace`) and nvcc
# (`$RCUD_NVCC`, else on PATH), or a prebuilt program in
# `$RCUD_SLURM_PROGRAM`. `RCUD_SLURM_KEEP=1` keeps the temporary directory.
#
# Usage: scripts/slurm-check.sh      (prints `slurm-check: PASS` at the end)

# Single-quoted `$...` in job commands is meant for the job's shell.
# shellcheck disable=SC2016
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
bin=${RCUD_BIN_DIR:-$root/target/release}
started=$SECONDS

log() { printf 'slurm-check: [%3ds] %s\n' "$((SECONDS - started))" "$*" >&2; }

# ---------------------------------------------------------------------------
# Prerequisites
# ---------------------------------------------------------------------------
[[ $(id -u) == 0 ]] || {
    log "needs root: slurmd runs the Prolog as root and jobs as their users"
    exit 2
}
export PATH=$PATH:/usr/sbin:/sbin
for f in rcud rcud-server librcudart.so; do
    [[ -e $bin/$f ]] || {
        log "$bin/$f is missing: cargo build --release --workspace"
        exit 2
    }
done
if ! command -v slurmctld >/dev/null || ! command -v slurmd >/dev/null ||
    ! command -v sbatch >/dev/null || ! command -v munged >/dev/null; then
    log "installing slurm-wlm and munge with apt-get"
    apt_started=$SECONDS
    apt-get update -qq >&2
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
        slurm-wlm munge >&2
    log "installed in $((SECONDS - apt_started)) s"
fi
log "$(slurmctld -V)"

work=$(mktemp -d /tmp/rcud-slurm-check.XXXXXX)
chmod 755 "$work"
pids=()
export SLURM_CONF=$work/slurm.conf

dump_logs() {
    local f
    for f in "$work"/log/* "$work"/out/* "$work"/rcud-slurm.log; do
        [[ -f $f ]] || continue
        printf -- '----- %s (last 40 lines)\n' "$f" >&2
        tail -n 40 "$f" >&2
    done
}

cleanup() {
    local status=$? pid i
    if [[ -f $SLURM_CONF ]] && ((${#pids[@]} > 1)); then
        # Jobs first: their slurmstepd outlives a stopped slurmd.
        scancel --quiet --full --user=nobody 2>/dev/null || true
        scancel --quiet --full --user=root 2>/dev/null || true
        for i in $(seq 50); do
            [[ -z $(squeue -h 2>/dev/null) ]] && break
            sleep 0.2
        done
    fi
    for ((i = ${#pids[@]} - 1; i >= 0; i--)); do
        kill "${pids[i]}" 2>/dev/null || true
    done
    for pid in "${pids[@]}"; do
        wait "$pid" 2>/dev/null || true
    done
    if ((status != 0)); then dump_logs; fi
    if [[ ${RCUD_SLURM_KEEP:-0} == 1 ]]; then
        log "kept $work"
    else
        rm -rf "$work"
    fi
    exit "$status"
}
trap cleanup EXIT

fail() {
    log "FAIL: $*"
    exit 1
}

# A TCP port on loopback that no socket uses. It is drawn below the kernel's
# ephemeral range, where the outgoing connections of tests running beside
# this one take their local ports; a probe sees listeners only.
free_port() {
    local port low=32768
    read -r low _ </proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || true
    ((low > 11000)) || low=32768
    while :; do
        port=$((10000 + RANDOM % (low - 10000)))
        if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
            continue
        fi
        if command -v ss >/dev/null && [[ -n $(ss -Htan "( sport = :$port )" 2>/dev/null) ]]; then
            continue
        fi
        printf '%d\n' "$port"
        return
    done
}

wait_for() { # seconds, description, command...
    local limit=$1 what=$2 deadline=$((SECONDS + $1))
    shift 2
    until "$@"; do
        ((SECONDS < deadline)) || fail "$what: not within $limit s"
        sleep 0.2
    done
}

# ---------------------------------------------------------------------------
# The CUDA program
# ---------------------------------------------------------------------------
if [[ -n ${RCUD_SLURM_PROGRAM:-} ]]; then
    cp "$RCUD_SLURM_PROGRAM" "$work/k_vector_add"
else
    nvcc=${RCUD_NVCC:-$(command -v nvcc || true)}
    [[ -x $nvcc ]] || fail "no nvcc: set RCUD_NVCC or RCUD_SLURM_PROGRAM"
    link=()
    lib=$(dirname "$(readlink -f "$nvcc")")/../lib
    # The PyPI toolkit ships libcudart.so.13 only; `-cudart shared` links
    # against libcudart.so.
    if [[ ! -e $lib/libcudart.so && -e $lib/libcudart.so.13 ]]; then
        mkdir -p "$work/cudart-link"
        ln -s "$(readlink -f "$lib/libcudart.so.13")" "$work/cudart-link/libcudart.so"
        link=(-L"$work/cudart-link")
    fi
    "$nvcc" -arch=sm_80 -cudart shared -O2 "${link[@]}" -o "$work/k_vector_add" \
        "$root/tests/cuda/k_vector_add.cu"
    log "built k_vector_add"
fi
chmod 755 "$work/k_vector_add"

# ---------------------------------------------------------------------------
# munge, rcud-server, slurmctld, slurmd
# ---------------------------------------------------------------------------
mkdir -p "$work"/{munge-key,munge,log,state,spool,hooks,ledger,out}
chmod 700 "$work/munge-key"
chmod 755 "$work/munge"
# Jobs run as nobody and write their output here.
chmod 1777 "$work/out"
dd if=/dev/urandom of="$work/munge-key/munge.key" bs=1024 count=1 status=none
chmod 400 "$work/munge-key/munge.key"
munged -F --force --socket="$work/munge/munge.socket" \
    --key-file="$work/munge-key/munge.key" --pid-file="$work/munge/munged.pid" \
    --log-file="$work/log/munged.log" --seed-file="$work/munge-key/seed" \
    >"$work/log/munged.out" 2>&1 &
pids+=($!)
wait_for 10 "munged socket" test -S "$work/munge/munge.socket"

# Two servers: A with two GPUs handed out one by one, B with one GPU handed
# out as a whole server (an entry without `#gpu`).
# A port can still be taken between the draw and the bind: a server that
# could not listen is started again on another port.
listening() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
started_port=
start_server() { # name, GPUs; sets started_port
    local try port pid log=$work/log/rcud-server-$1.log
    for try in 1 2 3 4 5; do
        port=$(free_port)
        "$bin/rcud-server" --backend emu --emu-gpus "$2" --emu-memory 1GiB \
            --listen "127.0.0.1:$port" >"$log" 2>&1 &
        pid=$!
        local deadline=$((SECONDS + 30))
        while ((SECONDS < deadline)); do
            if listening "$port"; then
                pids+=("$pid")
                started_port=$port
                return
            fi
            kill -0 "$pid" 2>/dev/null || break
            sleep 0.2
        done
        if kill -0 "$pid" 2>/dev/null; then
            kill "$pid" 2>/dev/null || true
            fail "rcud-server $1 on port $port: not listening within 30 s"
        fi
        grep -q 'Address already in use' "$log" ||
            fail "rcud-server $1 on port $port exited: $(tail -n 5 "$log")"
        log "port $port was taken before rcud-server $1 bound it; drawing another (try $try)"
    done
    fail "rcud-server $1: five ports in a row were taken"
}
start_server a 2
server_port=$started_port
start_server b 1
server_b_port=$started_port
log "rcud-server A (emu, 2 GPUs) on 127.0.0.1:$server_port, B (1 GPU) on 127.0.0.1:$server_b_port"

# The hook as operators install it, with its configuration beside it.
cp "$root/deploy/slurm/rcud-slurm" "$work/hooks/rcud-slurm"
chmod 755 "$work/hooks" "$work/hooks/rcud-slurm"
ledger=$work/ledger
cat >"$work/hooks/rcud-slurm.conf" <<EOF
gpu = 127.0.0.1:$server_port#0
gpu = 127.0.0.1:$server_port#1
gpu = 127.0.0.1:$server_b_port
gres = rgpu
ledger = $ledger
log = $work/rcud-slurm.log
EOF
chmod 644 "$work/hooks/rcud-slurm.conf"

# 0. A configuration with a typo is refused, with its line.
mkdir -p "$work/badconf"
cp "$root/deploy/slurm/rcud-slurm" "$work/badconf/rcud-slurm"
bad_config() { # text, expected message
    local out
    printf '%s\n' "$1" >"$work/badconf/rcud-slurm.conf"
    if out=$("$work/badconf/rcud-slurm" status 2>&1); then
        fail "rcud-slurm accepted \`$1\`"
    fi
    [[ $out == *"$2"* ]] || fail "rcud-slurm on \`$1\`: $out"
}
bad_config $'gpu = 127.0.0.1:1#0\ngpus = 127.0.0.1:1#1' 'rcud-slurm.conf:2: unknown key `gpus`'
bad_config 'gpu = 127.0.0.1#0' 'gpu `127.0.0.1#0` is not host:port#gpu'
bad_config 'gpu 127.0.0.1:1' 'rcud-slurm.conf:1: expected `key = value`'
log "rcud-slurm refuses bad configurations"

cat >"$SLURM_CONF" <<EOF
ClusterName=rcudcheck
SlurmctldHost=localhost
SlurmctldPort=$(free_port)
SlurmdPort=$(free_port)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$work/munge/munge.socket
StateSaveLocation=$work/state
SlurmdSpoolDir=$work/spool
SlurmctldPidFile=$work/slurmctld.pid
SlurmdPidFile=$work/slurmd.pid
SlurmctldLogFile=$work/log/slurmctld.log
SlurmdLogFile=$work/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
MpiDefault=none
MailProg=/bin/true
JobCompType=jobcomp/none
AccountingStorageType=accounting_storage/none
SchedulerType=sched/backfill
# Four CPUs whatever the machine has (config_overrides), so that the rgpu
# count alone decides which of the check's jobs run together.
SlurmdParameters=config_overrides
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
KillWait=2
ReturnToService=2
GresTypes=rgpu
Prolog=$work/hooks/rcud-slurm
Epilog=$work/hooks/rcud-slurm
TaskProlog=$work/hooks/rcud-slurm
PrologFlags=Alloc
NodeName=localhost NodeAddr=127.0.0.1 CPUs=4 Gres=rgpu:3 State=UNKNOWN
PartitionName=main Nodes=localhost Default=YES MaxTime=INFINITE State=UP
EOF
cat >"$work/gres.conf" <<EOF
NodeName=localhost Name=rgpu Count=3
EOF

slurmctld -D -i >"$work/log/slurmctld.out" 2>&1 &
pids+=($!)
slurmd -D -N localhost >"$work/log/slurmd.out" 2>&1 &
pids+=($!)
node_idle() { [[ $(sinfo -h -N -o %T 2>/dev/null) == idle ]]; }
wait_for 60 "the node to be idle" node_idle
log "slurmctld and slurmd up, node idle"

# ---------------------------------------------------------------------------
# Jobs
# ---------------------------------------------------------------------------
job_user=root
if id nobody >/dev/null 2>&1; then job_user=nobody; fi

submit() { # sbatch arguments...: prints the job id
    runuser -u "$job_user" -- sbatch --parsable --chdir="$work/out" "$@"
}

state() { scontrol show job "$1" 2>/dev/null | grep -oE 'JobState=[A-Z_]+' | cut -d= -f2; }

# Until the job has ended and its epilog has run (no longer COMPLETING).
wait_done() { # job id, seconds
    local deadline=$((SECONDS + $2)) s
    while :; do
        s=$(state "$1")
        case $s in
        COMPLETED | FAILED | CANCELLED | TIMEOUT | NODE_FAIL | OUT_OF_MEMORY | BOOT_FAIL) return ;;
        esac
        if sinfo -h -N -o %T | grep -q drain; then
            fail "job $1: the node was drained: $(sinfo -h -R -o %E)"
        fi
        ((SECONDS < deadline)) || fail "job $1 still $s after $2 s"
        sleep 0.2
    done
}

wait_state() { # job id, state, seconds
    local deadline=$((SECONDS + $3))
    until [[ $(state "$1") == "$2" ]]; do
        ((SECONDS < deadline)) || fail "job $1 is $(state "$1"), not $2, after $3 s"
        sleep 0.2
    done
}

expect_state() { # job id, state
    local s
    s=$(state "$1")
    [[ $s == "$2" ]] || fail "job $1 ended $s, expected $2"
}

ledger_gpus() { find "$ledger/gpus" "$ledger/jobs" -type f 2>/dev/null | wc -l; }
expect_ledger_empty() { # after what
    [[ $(ledger_gpus) == 0 ]] ||
        fail "the ledger still holds GPUs after $1: $(grep -r . "$ledger/gpus" "$ledger/jobs")"
}

expect_line() { # file, line
    grep -qxF -- "$2" "$1" || fail "$1 lacks the line \`$2\`: $(cat "$1")"
}

srv=127.0.0.1:$server_port
srvb=127.0.0.1:$server_b_port

# 1. One GPU, a CUDA program under rcud.
t=$SECONDS
connected() { grep -c 'client connected' "$work/log/rcud-server-a.log" || true; }
before=$(connected)
j=$(submit --gres=rgpu:1 -o "$work/out/one.out" \
    --wrap "echo \"RCUD_SERVERS=\$RCUD_SERVERS\"; $bin/rcud run -- $work/k_vector_add")
wait_done "$j" 300
expect_state "$j" COMPLETED
expect_line "$work/out/one.out" "RCUD_SERVERS=$srv#0"
# The program ran on the cluster's server, not on one `rcud run` embeds.
(($(connected) > before)) || fail "rcud-server saw no client during job $j"
[[ $(tail -n 1 "$work/out/one.out") == PASS ]] || fail "k_vector_add did not pass: $(cat "$work/out/one.out")"
expect_ledger_empty "job $j"
log "rgpu:1 job $j: k_vector_add PASS on $srv#0 in $((SECONDS - t)) s, GPU released"

# 2. All three GPUs of both servers, as the job's devices 0, 1 and 2.
j=$(submit --gres=rgpu:3 -o "$work/out/three.out" \
    --wrap "echo \"RCUD_SERVERS=\$RCUD_SERVERS\"; $bin/rcud info")
wait_done "$j" 120
expect_state "$j" COMPLETED
expect_line "$work/out/three.out" "RCUD_SERVERS=$srv#0,$srv#1,$srvb"
info=$(cat "$work/out/three.out")
grep -q '^3 remote GPU(s)' <<<"$info" || fail "rcud info: $info"
grep -qE "server: +$srv \(GPU #1," <<<"$info" || fail "no GPU #1 of A: $info"
grep -qE "server: +$srvb \(GPU #0," <<<"$info" || fail "no GPU of B: $info"
expect_ledger_empty "job $j"
log "rgpu:3 job $j: rcud info shows 3 GPUs on 2 servers, released"

# 2b. An interactive job (srun), and a step inside a batch job that starts
# without the batch script's environment: each task's environment comes from
# the TaskProlog.
out=$(cd "$work/out" && timeout 120 runuser -u "$job_user" -- srun --gres=rgpu:1 \
    sh -c 'echo "RCUD_SERVERS=$RCUD_SERVERS"') || fail "srun --gres=rgpu:1: $out"
[[ $out == "RCUD_SERVERS=$srv#0" ]] || fail "srun --gres=rgpu:1 printed \`$out\`"
# srun returns before the job's epilog has run.
ledger_empty() { [[ $(ledger_gpus) == 0 ]]; }
wait_for 30 "the srun job's GPU to be released" ledger_empty
j=$(submit --gres=rgpu:2 -o "$work/out/step.out" \
    --wrap "export RCUD_CHECK_MARK=batch; srun -n1 --export=NONE /bin/sh -c \
        'echo \"step RCUD_SERVERS=\$RCUD_SERVERS mark=\${RCUD_CHECK_MARK-unset}\"'")
wait_done "$j" 120
expect_state "$j" COMPLETED
# mark=unset: the step did not inherit the batch script's environment.
expect_line "$work/out/step.out" "step RCUD_SERVERS=$srv#0,$srv#1 mark=unset"
expect_ledger_empty "job $j"
log "srun job and a step with --export=NONE got their GPUs, released"

# 3. Three holders get different GPUs; a fourth waits, then takes a freed
# one.
hold="echo \"RCUD_SERVERS=\$RCUD_SERVERS\"; exec sleep 300"
holders=() held=() expected_status=""
for i in 0 1 2; do
    holders+=("$(submit --gres=rgpu:1 -o "$work/out/hold$i.out" --wrap "$hold")")
done
for i in 0 1 2; do
    wait_state "${holders[i]}" RUNNING 60
    wait_for 30 "holder ${holders[i]}'s output" grep -qs RCUD_SERVERS= "$work/out/hold$i.out"
    held+=("$(grep -oE 'RCUD_SERVERS=.*' "$work/out/hold$i.out" | cut -d= -f2)")
    expected_status+="${held[i]} ${holders[i]}"$'\n'
done
[[ $(printf '%s\n' "${held[@]}" | sort) == "$(printf '%s\n' "$srv#0" "$srv#1" "$srvb" | sort)" ]] ||
    fail "holders got ${held[*]}"
[[ $("$work/hooks/rcud-slurm" status | sort) == "$(printf '%s' "$expected_status" | sort)" ]] ||
    fail "ledger: $("$work/hooks/rcud-slurm" status)"
waiter=$(submit --gres=rgpu:1 -o "$work/out/waiter.out" --wrap 'echo "RCUD_SERVERS=$RCUD_SERVERS"')
# The scheduler gives the reason once it has looked at the job; until then
# it is PENDING for Reason=None.
waiting_for_resources() {
    local s
    s=$(state "$waiter")
    [[ $s == PENDING ]] || fail "job $waiter is $s while every GPU is held"
    scontrol show job "$waiter" | grep -q 'Reason=Resources'
}
wait_for 30 "job $waiter to wait for Resources" waiting_for_resources
sleep 2
[[ $(state "$waiter") == PENDING ]] || fail "job $waiter is $(state "$waiter") while every GPU is held"
scancel "${holders[1]}"
wait_done "${holders[1]}" 60
expect_state "${holders[1]}" CANCELLED
wait_done "$waiter" 60
expect_state "$waiter" COMPLETED
expect_line "$work/out/waiter.out" "RCUD_SERVERS=${held[1]}"
scancel "${holders[0]}" "${holders[2]}"
wait_done "${holders[0]}" 60
wait_done "${holders[2]}" 60
expect_ledger_empty "cancelling jobs ${holders[*]}"
log "holders ${holders[*]} got ${held[*]}; $waiter waited for Resources, then got ${held[1]}; all released"

# 4. A failing job frees its GPUs.
j=$(submit --gres=rgpu:3 -o "$work/out/fail.out" --wrap 'exit 3')
wait_done "$j" 60
expect_state "$j" FAILED
expect_ledger_empty "failed job $j"
log "failed job $j: GPUs released"

# 5. A mark left by a job that is gone is reclaimed.
printf '999999\n' >"$ledger/gpus/0"
j=$(submit --gres=rgpu:3 -o "$work/out/stale.out" --wrap 'echo "RCUD_SERVERS=$RCUD_SERVERS"')
wait_done "$j" 60
expect_state "$j" COMPLETED
expect_line "$work/out/stale.out" "RCUD_SERVERS=$srv#0,$srv#1,$srvb"
grep -q 'reclaiming GPU .* from job 999999' "$work/rcud-slurm.log" || fail "no reclaim logged"
expect_ledger_empty "job $j"
log "stale mark of job 999999 reclaimed by job $j"

# 6. No rgpu: RCUD_SERVERS of the submitter does not leak into the job.
j=$(RCUD_SERVERS=$srv#1 submit -o "$work/out/none.out" --wrap 'echo "RCUD_SERVERS=${RCUD_SERVERS-unset}"')
wait_done "$j" 60
expect_state "$j" COMPLETED
expect_line "$work/out/none.out" "RCUD_SERVERS=unset"
log "job $j without rgpu: RCUD_SERVERS unset"

# 7. More GPUs than the node has: refused at submission.
if out=$(submit --gres=rgpu:4 --wrap true 2>&1); then
    fail "rgpu:4 was accepted as job $out"
fi
grep -q 'Requested node configuration is not available' <<<"$out" || fail "rgpu:4: $out"
log "rgpu:4 refused: ${out##*error: }"

expect_ledger_empty "all jobs"
log "PASS in $((SECONDS - started)) s"
printf 'slurm-check: PASS\n'
