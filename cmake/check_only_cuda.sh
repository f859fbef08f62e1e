#!/usr/bin/env bash
# Compiler launcher of the CUDA device tests built as a compile check only
# (TYPEFLOW_CUDA_DEVICE_TESTS_CHECK_ONLY): runs the nvcc command with the host
# compiler's -fsyntax-only. nvcc's front end (cudafe++) still checks the host
# and device code and instantiates every kernel, cicc and ptxas still compile
# the device code; only the host compiler writes no code. Creates the object
# file empty (nothing links it).
set -euo pipefail
out="" prev=""
for a in "$@"; do
    [[ $prev == -o ]] && out=$a
    prev=$a
done
"$@" -Xcompiler=-fsyntax-only
[[ -z $out ]] || : > "$out"
