#!/usr/bin/env bash
# Runs a distributed program under Open MPI's mpirun, the way a cluster user
# starts one: every task reads its rank and the task count from mpirun's
# environment (OMPI_COMM_WORLD_RANK/SIZE) and joins rank 0 at
# MASTER_ADDR:MASTER_PORT (cluster_spec::from_mpi); the other tasks' ports
# are exchanged through it.
#   mpirun_test.sh <tasks> <program> [args...]
# Exits 77 (skipped) when mpirun is not installed. Picks a free loopback
# port for MASTER_PORT; tries again with another one if rank 0 found it taken.
set -u
n="$1"
shift
if ! command -v mpirun >/dev/null 2>&1; then
  echo "SKIPPED: mpirun (Debian's openmpi-bin) is not installed"
  exit 77
fi
log="$(mktemp)"
trap 'rm -f "$log"' EXIT
for attempt in 1 2 3; do
  port="$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
  # as root (CI containers) mpirun needs --allow-run-as-root; more tasks than
  # cores need --oversubscribe; Open MPI's own wiring stays on loopback (the
  # machine may have no other interface)
  timeout 150 mpirun --allow-run-as-root --oversubscribe --mca oob_tcp_if_include lo --mca btl_tcp_if_include lo -np "$n" \
    -x MASTER_ADDR=127.0.0.1 -x MASTER_PORT="$port" -x TYPEFLOW_SECRET=mpirun-test-secret "$@" >"$log" 2>&1
  rc=$?
  cat "$log"
  if [ "$rc" -eq 0 ]; then exit 0; fi
  if ! grep -q "cannot listen on 127.0.0.1:$port" "$log"; then exit "$rc"; fi
  echo "mpirun_test: port $port was taken; trying another"
done
exit 1
