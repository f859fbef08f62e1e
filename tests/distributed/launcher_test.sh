#!/bin/bash
# Launcher behaviour: specs, inherited sockets, prefixes, failure and signals.
# usage: launcher_test.sh LAUNCHER PROBE
set -u
L=$1; P=$2
fail() { echo "FAIL: $*"; echo "--- output:"; echo "$out"; exit 1; }

out=$("$L" -n 3 --ps 1 "$P" hello 2>&1); rc=$?
[ $rc -eq 0 ] || fail "hello: exit $rc"
for t in "worker:0] task=worker:0 rank=0 size=4" "worker:2] task=worker:2 rank=2" "ps:0] task=ps:0 rank=3"; do
  echo "$out" | grep -qF "[$t" || fail "missing line [$t"
done
echo "$out" | grep -qF "[worker:1] partial line without newline" || fail "partial line not flushed with prefix"
echo "$out" | grep -q "secret_len=48" || fail "no generated secret"
# each task's share of the launcher's cores (4 tasks), unless TYPEFLOW_NUM_THREADS is set
share=$(( $(nproc) / 4 )); [ $share -ge 1 ] || share=1
[ "$(echo "$out" | grep -c "threads=$share\$")" -eq 4 ] || fail "TYPEFLOW_NUM_THREADS is not $share in every task"
out=$(TYPEFLOW_NUM_THREADS=3 "$L" -n 2 "$P" hello 2>&1); rc=$?
[ $rc -eq 0 ] || fail "hello with TYPEFLOW_NUM_THREADS: exit $rc"
[ "$(echo "$out" | grep -c 'threads=3$')" -eq 2 ] || fail "a TYPEFLOW_NUM_THREADS given to the launcher was not kept"

# --bind-cores: each task on CPUs of its own among the launcher's (its share of
# them, as many kernel threads); more tasks than those CPUs is refused before
# any task starts.
if [ "$(nproc)" -ge 2 ]; then
  out=$(taskset -c 0,1 "$L" -n 1 --ps 1 --bind-cores "$P" cpus 2>&1); rc=$?
  [ $rc -eq 0 ] || fail "--bind-cores: exit $rc"
  echo "$out" | grep -qF "[worker:0] task=worker:0 cpus=0 threads=1" || fail "--bind-cores: worker:0 not alone on CPU 0"
  echo "$out" | grep -qF "[ps:0] task=ps:0 cpus=1 threads=1" || fail "--bind-cores: ps:0 not alone on CPU 1"
  out=$(taskset -c 0,1 "$L" -n 1 --bind-cores "$P" cpus 2>&1); rc=$?
  echo "$out" | grep -qF "[worker:0] task=worker:0 cpus=0,1 threads=2" || fail "--bind-cores: one task must have both CPUs"
  out=$(taskset -c 0,1 "$L" -n 2 "$P" cpus 2>&1); rc=$?
  [ "$(echo "$out" | grep -c 'cpus=0,1 threads=1$')" -eq 2 ] || fail "without --bind-cores a task must keep the launcher's CPUs"
  out=$(TYPEFLOW_NUM_THREADS=2 taskset -c 0,1 "$L" -n 2 --bind-cores "$P" cpus 2>&1); rc=$?
  [ "$(echo "$out" | grep -c 'threads=2$')" -eq 2 ] || fail "--bind-cores: a TYPEFLOW_NUM_THREADS given to the launcher was not kept"
else
  echo "(--bind-cores on two CPUs: skipped, this machine has one)"
fi
out=$(taskset -c 0 "$L" -n 2 --bind-cores "$P" cpus 2>&1); rc=$?
[ $rc -eq 2 ] || fail "--bind-cores with 2 tasks on 1 CPU: exit $rc"
echo "$out" | grep -qF -- "--bind-cores: 2 tasks but the launcher may run on only 1 cores" || fail "--bind-cores: no clear error"
echo "$out" | grep -q "task=" && fail "--bind-cores refused, but a task ran"

out=$("$L" -n 2 --chief "$P" hello 2>&1); rc=$?
[ $rc -eq 0 ] || fail "chief: exit $rc"
echo "$out" | grep -qF "[chief:0] task=chief:0 rank=0 size=2" || fail "chief naming"

start=$(date +%s%N)
out=$("$L" -n 3 --grace-ms 300 "$P" fail worker:1 7 2>&1); rc=$?
ms=$(( ($(date +%s%N) - start) / 1000000 ))
[ $rc -eq 7 ] || fail "a failing task must give its exit code (got $rc)"
echo "$out" | grep -qF "typeflow-launch: worker:1 exited with code 7" || fail "failure not reported"
[ "$(echo "$out" | grep -c 'got SIGTERM')" -eq 2 ] || fail "the other tasks were not stopped with SIGTERM"
[ $ms -lt 3000 ] || fail "stopping took ${ms} ms"

# --keep-going: a failed worker is reported and the others go on; a failed ps still stops the job.
out=$("$L" -n 3 --ps 1 --keep-going --grace-ms 100 "$P" fail-early worker:1 7 2>&1); rc=$?
[ $rc -eq 0 ] || fail "--keep-going with a failed worker: exit $rc"
echo "$out" | grep -qF "typeflow-launch: worker:1 exited with code 7; the other tasks go on (--keep-going)" || fail "--keep-going: failure not reported"
[ "$(echo "$out" | grep -c '] finished')" -eq 3 ] || fail "--keep-going: the other tasks did not finish"
for t in ps:0 worker:0; do  # a ps, or worker:0 (the chief when there is no chief job), still stops the job
  out=$("$L" -n 2 --ps 1 --keep-going --grace-ms 100 "$P" fail-early $t 7 2>&1); rc=$?
  [ $rc -eq 7 ] || fail "--keep-going with a failed $t: exit $rc"
  echo "$out" | grep -q "finished" && fail "--keep-going: a failed $t did not stop the others"
done
out=$("$L" -n 2 --chief --keep-going --grace-ms 100 "$P" fail-early worker:0 7 2>&1); rc=$?
[ $rc -eq 0 ] || fail "--keep-going --chief with a failed worker:0: exit $rc"

# --restart R: a failed job is started again, each task told its attempt; at most R times.
out=$("$L" -n 2 --ps 1 --restart 3 --grace-ms 100 "$P" fail-first ps:0 5 2 2>&1); rc=$?
[ $rc -eq 0 ] || fail "--restart 3 with 2 failed attempts: exit $rc"
[ "$(echo "$out" | grep -c 'typeflow-launch: restarting the job')" -eq 2 ] || fail "--restart: not restarted twice"
echo "$out" | grep -qF "[worker:1] attempt 2" || fail "--restart: TYPEFLOW_ATTEMPT not set"
echo "$out" | grep -qF "[ps:0] finished" || fail "--restart: the last attempt did not finish"
out=$("$L" -n 2 --restart 1 --grace-ms 100 "$P" fail-first worker:1 5 9 2>&1); rc=$?
[ $rc -eq 5 ] || fail "--restart 1 with every attempt failing: exit $rc"
[ "$(echo "$out" | grep -c 'typeflow-launch: restarting the job')" -eq 1 ] || fail "--restart 1: restarted more than once"

# SIGTERM to the launcher is forwarded to every task.
tmp=$(mktemp)
"$L" -n 2 "$P" sleep > "$tmp" 2>&1 &
lp=$!
for i in $(seq 100); do [ "$(grep -c ready "$tmp")" -eq 2 ] && break; sleep 0.05; done
kill -TERM $lp
wait $lp; rc=$?
out=$(cat "$tmp"); rm -f "$tmp"
[ $rc -eq 143 ] || fail "SIGTERM: exit $rc"
[ "$(echo "$out" | grep -c 'got SIGTERM')" -eq 2 ] || fail "SIGTERM not forwarded"

out=$("$L" -n 2 --timeout 1 "$P" sleep 2>&1); rc=$?
[ $rc -eq 124 ] || fail "--timeout: exit $rc"

out=$("$L" -n 2 /nonexistent/prog 2>&1); rc=$?
[ $rc -eq 127 ] || fail "missing program: exit $rc"
out=$("$L" 2>&1); rc=$?
[ $rc -eq 2 ] || fail "usage error: exit $rc"
echo "launcher tests passed"
