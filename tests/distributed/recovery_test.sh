#!/bin/bash
# Recovery of parameter-server training from sharded checkpoints: kill -9 a
# ps at random steps (20 runs), and while it writes a shard (4 runs); each run
# must be restarted by typeflow-launch, resume from the last committed
# checkpoint and end with single-process training's weights (see
# ps_recovery_test.cpp). One run without a kill first.
# usage: recovery_test.sh LAUNCHER PROGRAM [seed]
set -u
L=$1; P=$2
seed=${3:-$(date +%s)}
RANDOM=$seed
steps=24
echo "recovery test: seed $seed"
fail() { echo "FAIL: $*"; echo "--- output:"; echo "$out"; exit 1; }
run() {  # kill spec
  local dir; dir=$(mktemp -d)
  out=$("$L" -n 2 --ps 2 --restart 2 --grace-ms 200 --timeout 60 "$P" "$dir" $steps "$1" 2>&1); rc=$?
  rm -rf "$dir"
  [ $rc -eq 0 ] || fail "kill $1: exit $rc"
  echo "$out" | grep "\[worker:0\] recovery: kill=" || fail "kill $1: no result line"
  if [ "$1" != none ]; then
    [ "$(echo "$out" | grep -c 'typeflow-launch: restarting the job')" -eq 1 ] || fail "kill $1: not restarted once"
  fi
}
run none
for i in $(seq 20); do run "ps:$((RANDOM % 2))@$((1 + RANDOM % (steps - 1)))"; done
for k in 4 8 12 20; do run "ps:$((RANDOM % 2))@save:$k"; done
echo "recovery tests passed (seed $seed)"
