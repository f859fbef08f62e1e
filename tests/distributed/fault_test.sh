#!/bin/bash
# Fault tests driven through typeflow-launch.
# usage: fault_test.sh LAUNCHER FAULT_TEST MODE
#   kill      SIGKILL of a task during collectives, 2, 3 and 4 tasks (caller and sender-thread writes)
#   stop      SIGSTOP of a task, heartbeat bound 1000 ms
#   mismatch  a different collective, size or dtype on one task
#   loop      >= 100 SIGKILLs at random points (fixed seed), zero hangs
set -u
L=$1; F=$2; MODE=$3
dir=$(mktemp -d); trap 'rm -rf "$dir"' EXIT
fail() { echo "FAIL: $*"; echo "--- output:"; echo "$out"; exit 1; }

# run N ARGS...: launches N tasks; checks that N-1 report DETECTED-OK, none HANG/BAD.
run() {
  local n=$1; shift
  out=$("$L" -n "$n" --grace-ms 4000 --timeout 20 "$F" "$@" 2>&1); rc=$?
  [ $rc -ne 124 ] || fail "launcher watchdog fired (hang): $*"
  echo "$out" | grep -q "HANG" && fail "hang: $*"
  echo "$out" | grep -q "DETECTED-BAD" && fail "bad detection: $*"
  local ok; ok=$(echo "$out" | grep -c "DETECTED-OK")
  [ "$ok" -eq "$((n - 1))" ] || fail "expected $((n - 1)) detections, got $ok: $*"
}

case $MODE in
kill)
  for n in 2 3 4; do
    for v in 0 $((n - 1)); do
      for d in 150 151; do # 151: frames written by the sender thread
        rm -f "$dir/mark"; run $n kill $v $d loop "$dir/mark"
        echo "$out" | grep DETECTED-OK
      done
    done
  done ;;
stop)
  for n in 2 3; do
    rm -f "$dir/mark"; run $n stop 1 1000 "$dir/mark"
    echo "$out" | grep DETECTED-OK
  done ;;
mismatch)
  for kind in op size dtype; do
    for n in 2 3; do
      out=$("$L" -n $n --grace-ms 4000 --timeout 20 "$F" mismatch $kind 2>&1); rc=$?
      [ $rc -eq 0 ] || fail "mismatch $kind n=$n: exit $rc"
      [ "$(echo "$out" | grep -c DETECTED-OK)" -eq $n ] || fail "mismatch $kind n=$n: not all tasks failed cleanly"
    done
  done
  echo "$out" | grep DETECTED-OK ;;
loop)
  RANDOM=20240611
  iters=${LOOP_ITERS:-100}
  for i in $(seq "$iters"); do
    n=$(( 2 + RANDOM % 3 )); v=$(( RANDOM % n )); d=$(( RANDOM % 250 ))
    from=loop; [ $(( RANDOM % 4 )) -eq 0 ] && from=start
    rm -f "$dir/mark"
    run $n kill $v $d $from "$dir/mark"
  done
  echo "$iters random kills, zero hangs" ;;
esac
echo "fault test $MODE passed"
