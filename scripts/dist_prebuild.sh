#!/usr/bin/env bash
# scripts/dist_prebuild.sh — builds the distributed benchmarks here, so that a
# machine with many cores and no package registry (a GPU node, an air-gapped
# cluster node) only runs them:
#
#   bash scripts/dist_prebuild.sh           # here: build-dist/, at most 64 MiB
#   bash scripts/dist_check.sh build-dist   # there, with build-dist carried along
#
# build-dist/ gets typeflow-launch and the bench_dist_* programs (-O2, no
# -march=native: the other machine's processor may differ), lib/ with the
# shared libraries they load beyond the C/C++ runtime (Gloo, OpenSSL, ...),
# and debs/ with Debian's Open MPI packages (apt-get download), which
# dist_check.sh unpacks there with dpkg -x into a folder of its own (never
# into /) and runs through OPAL_PREFIX; lib/ also holds what those packages'
# programs and plugins load. scripts/dist_check.sh --local checks that the
# unpacked Open MPI runs with the system's copy hidden.
# Usage: scripts/dist_prebuild.sh [OUT_DIR (build-dist)] [BUILD_DIR (build-dist-prebuild)]
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-build-dist}
BUILD=${2:-build-dist-prebuild}
LIMIT=$((64 * 1024 * 1024))
MPI_DEBS=(openmpi-bin libopenmpi3 openmpi-common libpmix2)
PROGRAMS=(typeflow-launch bench_dist_typeflow bench_dist_tcp_ring bench_dist_floor bench_dist_mirrored bench_dist_ps
          bench_dist_gloo bench_dist_mpi)

bash scripts/deps.sh
mkdir -p "$BUILD"
cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DTYPEFLOW_BENCHMARKS_CHECK_ONLY=OFF \
    -DTYPEFLOW_ENABLE_CUDA=OFF > "$BUILD/configure.log" 2>&1 || { tail -20 "$BUILD/configure.log" >&2; exit 1; }
ninja -C "$BUILD" "${PROGRAMS[@]}"

rm -rf "$OUT"
mkdir -p "$OUT/lib" "$OUT/debs"
for p in "${PROGRAMS[@]}"; do
    cp "$BUILD/$p" "$OUT/"
    strip "$OUT/$p"
done
cp benchmarks/distributed/run_allreduce_bench.py "$OUT/"

# Open MPI as Debian ships it: the packages' own .deb files
(cd "$OUT/debs" && apt-get download "${MPI_DEBS[@]}" > /dev/null 2>&1) ||
    { echo "dist_prebuild: apt-get download ${MPI_DEBS[*]} failed" >&2; exit 1; }
# every library the programs, mpirun, orted and Open MPI's plugins load that
# is neither the C/C++ runtime's nor in those packages
mpi_files=()
for d in "${MPI_DEBS[@]}"; do
    while read -r f; do
        if [ -f "$f" ] && [ ! -L "$f" ]; then
            case "$f" in *.so* | */bin/*) mpi_files+=("$f") ;; esac
        fi
    done < <(dpkg -L "$d")
done
in_mpi_debs() { dpkg -S "$1" 2>/dev/null | grep -qE "^($(IFS='|'; echo "${MPI_DEBS[*]}")):"; }
for f in "$OUT"/bench_dist_* "$OUT"/typeflow-launch "${mpi_files[@]}"; do
    { ldd "$f" 2>/dev/null || true; } | awk '$3 ~ /^\// { print $3 }'
done | sort -u | while read -r lib; do
    case "$lib" in
        */libc.so.* | */libm.so.* | */libpthread.so.* | */libdl.so.* | */librt.so.* | */ld-linux* | \
            */libgcc_s.so.* | */libstdc++.so.*) ;;
        *) in_mpi_debs "$(readlink -f "$lib")" || in_mpi_debs "$lib" || cp -L "$lib" "$OUT/lib/" ;;
    esac
done
du -ab "$OUT" | sort -n | tail -n 8
total=$(du -sb "$OUT" | awk '{ print $1 }')
echo "dist_prebuild: $OUT holds $total bytes (a call carries at most $LIMIT)"
((total < LIMIT)) || { echo "dist_prebuild: $OUT is too large to carry" >&2; exit 1; }
