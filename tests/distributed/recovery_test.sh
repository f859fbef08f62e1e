#!/bin/bash
# Recovery from checkpoints (see recovery_test.cpp): parameter-server
# training with a ps killed with SIGKILL at random steps (20 runs) and while
# it writes a shard (4 runs); mirrored training with a task killed at random
# steps (10 runs). Each run must be restarted once by typeflow-launch, resume
# from the last checkpoint and end with single-process training's weights.
# One run of each strategy without a kill first.
# usage: recovery_test.sh LAUNCHER PROGRAM [seed]
set -u
L=$1; P=$2
seed=${3:-$(date +%s)}
RANDOM=$seed
steps=24
echo "recovery test: seed $seed"
fail() { echo "FAIL: $*"; echo "--- output:"; echo "$out"; exit 1; }
run() {  # strategy, kill spec
  local dir ps=(); dir=$(mktemp -d)
  [ "$1" = ps ] && ps=(--ps 2)
  out=$("$L" -n 2 "${ps[@]}" --restart 2 --grace-ms 200 --timeout 60 "$P" "$1" "$dir" $steps "$2" 2>&1); rc=$?
  rm -rf "$dir"
  [ $rc -eq 0 ] || fail "$1 kill $2: exit $rc"
  echo "$out" | grep "\[worker:0\] recovery: .*kill=" || fail "$1 kill $2: no result line"
  if [ "$2" != none ]; then
    [ "$(echo "$out" | grep -c 'typeflow-launch: restarting the job')" -eq 1 ] || fail "$1 kill $2: not restarted once"
  fi
}
run ps none
for i in $(seq 20); do run ps "ps:$((RANDOM % 2))@$((1 + RANDOM % (steps - 1)))"; done
for k in 4 8 12 20; do run ps "ps:$((RANDOM % 2))@save:$k"; done
run mirrored none
for i in $(seq 10); do run mirrored "task:$((RANDOM % 2))@$((1 + RANDOM % (steps - 1)))"; done
echo "recovery tests passed (seed $seed)"
