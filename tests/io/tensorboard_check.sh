#!/usr/bin/env bash
# CTest io.tensorboard_reader: writes an event file with tests/io/event_writer
# and reads it back with TensorBoard's own reader, installed with pip into a
# virtual environment under the build directory. Exits 77 (CTest: skipped)
# with a SKIP message when TensorBoard cannot be installed.
#   tensorboard_check.sh <event_writer binary> <work dir> <check script>
set -uo pipefail
writer="$1" work="$2" check="$3"
venv="$work/tensorboard-venv"
mkdir -p "$work"
if [ ! -x "$venv/bin/python" ] || ! "$venv/bin/python" -c "import tensorboard" 2>/dev/null; then
  rm -rf "$venv"
  if ! python3 -m venv "$venv" >"$work/venv.log" 2>&1; then
    echo "SKIP: cannot create a Python virtual environment (python3-venv missing?):"; tail -3 "$work/venv.log"
    exit 77
  fi
  if ! timeout 600 "$venv/bin/python" -m pip install --quiet --disable-pip-version-check tensorboard \
       >"$work/pip.log" 2>&1; then
    echo "SKIP: 'python3 -m pip install tensorboard' failed (no network to PyPI?):"; tail -3 "$work/pip.log"
    exit 77
  fi
fi
logdir="$work/logs"
rm -rf "$logdir"
event_file="$("$writer" "$logdir")" || { echo "event_writer failed"; exit 1; }
"$venv/bin/python" "$check" "$logdir" "$event_file"
