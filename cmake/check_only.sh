#!/usr/bin/env bash
# Compiler and linker launcher for targets built as a compile check only
# (TYPEFLOW_BENCHMARKS_CHECK_ONLY):
#   check_only.sh compile <command>   runs the compile command with
#       -fsyntax-only (the front end: every template is still instantiated and
#       checked), writes its dependency file, and creates the object file empty
#   check_only.sh compile-cuda <nvcc command>   runs it with the host
#       compiler's -fsyntax-only (TYPEFLOW_CUDA_DEVICE_TESTS_CHECK_ONLY, and
#       bench_gpu): nvcc's front end still checks host and device code and
#       instantiates every kernel, cicc and ptxas still compile the device
#       code; only the host compiler writes no code. The object is left empty.
#   check_only.sh link <command>      writes, instead of linking, a program
#       that says how to build the real one
set -euo pipefail
mode=$1
shift
out="" prev="" pre=()
for a in "$@"; do
    if [[ $prev == -o ]]; then out=$a pre+=(/dev/null)
    elif [[ $a != -c ]]; then pre+=("$a")
    fi
    prev=$a
done
if [[ $mode == compile-cuda ]]; then
    "$@" -Xcompiler=-fsyntax-only
    [[ -z $out ]] || : > "$out"
elif [[ $mode == compile ]]; then
    "$@" -fsyntax-only
    # the dependency file (-MD -MF) that -fsyntax-only does not write: the
    # command through the preprocessor alone, its output dropped
    "${pre[@]}" -E > /dev/null
    [[ -z $out ]] || : > "$out"
elif [[ -n $out ]]; then
    printf '#!/bin/sh\necho "%s: built as a compile check only (TYPEFLOW_BENCHMARKS_CHECK_ONLY=ON); build it with scripts/bench.sh (bench_gpu: scripts/gpu_check.sh)" >&2\nexit 1\n' "${out##*/}" > "$out"
    chmod +x "$out"
fi
