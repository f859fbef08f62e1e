#!/usr/bin/env bash
# scripts/dist_check.sh — the distributed benchmarks on a machine with many
# cores (16, say), in one run, each task on cores of its
# own (typeflow-launch --bind-cores, mpirun --bind-to core):
#   1. all-reduce: typeflow against Gloo, Open MPI and a plain TCP ring at 4
#      and 8 tasks (benchmarks/distributed/run_allreduce_bench.py --bind);
#   2. the mirrored strategy's data-parallel MLP step at 2, 4 and 8 tasks
#      (bench_dist_mirrored: the step against compute + one all-reduce);
#   3. parameter servers: pull + push of a 64 MiB model, 1 ps x 2 workers,
#      against the transport's point-to-point bandwidth (bench_dist_ps).
# The programs come from scripts/dist_prebuild.sh, run here beforehand and
# carried along (nothing can be installed there); Open MPI is Debian's
# packages, unpacked with dpkg -x into BIN_DIR/ompi-root and run through
# OPAL_PREFIX. Logs go to LOG_DIR; the closing lines sum up each part.
# Usage: scripts/dist_check.sh [BIN_DIR (build-dist)] [LOG_DIR ($OUT, else /tmp/dist_check)]
#        scripts/dist_check.sh --local [BIN_DIR]
# --local checks, on this machine, that the carried Open MPI runs by itself:
# it hides the system's Open MPI and PMIx (a private mount namespace) and runs
# the MPI all-reduce on 2 tasks (exit 0 when it reports). Task counts
# beyond the machine's CPUs are left out (a 2-core machine runs 2 tasks).
# DIST_CHECK_NP (default 4,8) and DIST_CHECK_MIRRORED_NP (2 4 8) pick the task counts.
set -u
cd "$(dirname "$0")/.."
local_check=
if [ "${1:-}" = --local ]; then local_check=1; shift; fi
BIN=$(cd "${1:-build-dist}" && pwd) || exit 2
LOG=${2:-${OUT:-/tmp/dist_check}}
mkdir -p "$LOG"
LOG=$(cd "$LOG" && pwd)
summary=()
note() { summary+=("$1"); echo "== $1"; }

# Open MPI from the carried packages
ROOT=$BIN/ompi-root
if [ ! -x "$ROOT/usr/bin/orterun" ]; then
    mkdir -p "$ROOT"
    for d in "$BIN"/debs/*.deb; do dpkg -x "$d" "$ROOT"; done
fi
ln -sf orterun "$ROOT/usr/bin/mpirun"
MULTI=$ROOT/usr/lib/x86_64-linux-gnu
export OPAL_PREFIX=$ROOT/usr PMIX_INSTALL_PREFIX=$MULTI/pmix2
export PATH=$ROOT/usr/bin:$PATH
export LD_LIBRARY_PATH=$MULTI:$MULTI/openmpi/lib:$MULTI/pmix2/lib:$BIN/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}

if [ -n "$local_check" ]; then
    # the system's copies out of sight: its Open MPI and PMIx folders, and its libraries one by one
    hide=(/usr/lib/x86_64-linux-gnu/openmpi /usr/lib/x86_64-linux-gnu/pmix2 /etc/openmpi /usr/share/openmpi)
    libs=$(ls /usr/lib/x86_64-linux-gnu/lib{mpi,open-rte,open-pal,pmix,mca_common_}*.so* 2>/dev/null | tr '\n' ' ')
    unshare -m bash -c '
        for d in '"${hide[*]}"'; do [ -d "$d" ] && mount -t tmpfs none "$d"; done
        for f in '"$libs"'; do mount --bind /dev/null "$f"; done
        mpirun --allow-run-as-root -np 2 --oversubscribe --bind-to none --mca pml ob1 --mca btl tcp,self \
            --mca btl_tcp_if_include lo '"$BIN"'/bench_dist_mpi 4096 65536' > "$LOG/mpi_local.log" 2>&1
    rc=$?
    grep RESULT "$LOG/mpi_local.log"
    n=$(grep -c "RESULT impl=openmpi np=2" "$LOG/mpi_local.log")
    echo "dist_check --local: the carried Open MPI rc=$rc, $n sizes (log: $LOG/mpi_local.log)"
    [ "$rc" -eq 0 ] && [ "$n" -ge 1 ]
    exit
fi

{ nproc | sed 's/^/cpus: /'; grep -m1 "model name" /proc/cpuinfo; } | tee "$LOG/machine.txt"
cpus=$(nproc)

# 1. all-reduce against the peers, at the task counts the machine has cores for
np=$(tr ',' '\n' <<< "${DIST_CHECK_NP:-4,8}" | awk -v c="$cpus" '$1 <= c' | paste -sd,)
timeout 300 python3 "$BIN/run_allreduce_bench.py" "$BIN" --np "${np:-2}" --rounds 1 --bind \
    --out "$LOG/allreduce.txt" > "$LOG/allreduce.log" 2>&1
rc=$?
cat "$LOG/allreduce.txt" 2>/dev/null
note "allreduce rc=$rc: $(grep -c ' ratio=' "$LOG/allreduce.txt" 2>/dev/null || echo 0) lines"

# 2. the data-parallel MLP step
for n in ${DIST_CHECK_MIRRORED_NP:-2 4 8}; do
    [ "$n" -le "$cpus" ] || { note "mirrored tasks=$n skipped: $cpus cpus"; continue; }
    timeout 120 "$BIN/typeflow-launch" -n "$n" --bind-cores "$BIN/bench_dist_mirrored" 256 15 >> "$LOG/mirrored.log" 2>&1
    rc=$?
    note "mirrored tasks=$n rc=$rc: $(grep 'mirrored_mlp_step' "$LOG/mirrored.log" | tail -1 | sed 's/^\[[^]]*\] //')"
done

# 3. parameter servers
if [ "$cpus" -ge 3 ]; then bind=(--bind-cores); else bind=(); fi
timeout 120 "$BIN/typeflow-launch" -n 2 --ps 1 "${bind[@]}" "$BIN/bench_dist_ps" 64 5 > "$LOG/ps.log" 2>&1
rc=$?
note "ps rc=$rc: $(grep 'ps_pull_push' "$LOG/ps.log" | tail -1 | sed 's/^\[[^]]*\] //')"

echo "==== summary"
printf '%s\n' "${summary[@]}" | tee "$LOG/summary.txt"
