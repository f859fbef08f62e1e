#!/usr/bin/env bash
# Builds the Conan 2 package of typeflow (conanfile.py) and its test_package,
# offline, against the system's packages:
#   1. a venv with Conan 2 in build-pkg/venv-conan (pip; the only network use,
#      skipped when the venv already has conan; CONAN=/path/to/conan skips it too)
#   2. a fresh CONAN_HOME (build-pkg/conan-home) with no remotes, and
#      `conan profile detect` for the default profile
#   3. conan create with .ci/conan/profile, whose [platform_requires] map
#      eigen, zlib, cereal, rapidjson, boost and openssl to the Debian packages:
#        - default options (typeflow::typeflow, typeflow::io)
#        - with_distributed=True, and with_cuda=True where /usr/local/cuda has
#          cuDNN and NCCL (TYPEFLOW_CONAN_CUDA=0/1 forces it off/on)
#      test_package builds and runs one program per component.
# Installs nothing outside build-pkg/ (and test_package/build/, removed on
# success). Exits non-zero on the first failure.
#   bash scripts/conan_check.sh
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
ROOT=$PWD
start=$(date +%s)

VENV=$ROOT/build-pkg/venv-conan
if [ -n "${CONAN:-}" ]; then
  echo "conan_check: using CONAN=$CONAN"
elif [ -x "$VENV/bin/conan" ]; then
  CONAN=$VENV/bin/conan
else
  echo "conan_check: installing Conan 2 into $VENV (pip, from PyPI)"
  python3 -m venv "$VENV"
  if ! "$VENV/bin/pip" install -q --disable-pip-version-check "conan>=2.0,<3"; then
    echo "conan_check: could not pip-install conan (is PyPI reachable?); set CONAN=/path/to/conan" >&2
    exit 1
  fi
  CONAN=$VENV/bin/conan
fi
"$CONAN" --version

# A fresh Conan home: no remotes (offline), the detected default profile.
export CONAN_HOME=$ROOT/build-pkg/conan-home
rm -rf "$CONAN_HOME"
"$CONAN" profile detect >/dev/null 2>&1
for r in $("$CONAN" remote list --format=json | python3 -c 'import json,sys; print(" ".join(r["name"] for r in json.load(sys.stdin)))'); do
  "$CONAN" remote remove "$r" >/dev/null
done
if [ -n "$("$CONAN" remote list --format=json | python3 -c 'import json,sys; print(" ".join(r["name"] for r in json.load(sys.stdin)))')" ]; then
  echo "conan_check: could not remove the remotes" >&2
  exit 1
fi
echo "conan_check: CONAN_HOME=$CONAN_HOME, no remotes"

PROFILE=(-pr:a "$ROOT/.ci/conan/profile")

run_create() {
  echo
  echo "conan_check: conan create . $* (test_package included)"
  local t0=$SECONDS
  "$CONAN" create . "${PROFILE[@]}" --build=missing "$@"
  echo "conan_check: conan create $* passed ($((SECONDS - t0)) s)"
}

run_create
extra=(-o "&:with_distributed=True")
cuda=${TYPEFLOW_CONAN_CUDA:-auto}
if [ "$cuda" = auto ]; then
  cuda=0
  d=/usr/local/cuda/include
  if [ -e "$d/cuda_runtime_api.h" ] && [ -e "$d/cudnn.h" ] && [ -e "$d/nccl.h" ]; then cuda=1; fi
fi
if [ "$cuda" = 1 ]; then
  extra+=(-o "&:with_cuda=True")
else
  echo "conan_check: no CUDA toolkit with cuDNN and NCCL in /usr/local/cuda: with_cuda left out"
fi
run_create "${extra[@]}"

# The package is header-only: one binary for every option value.
echo
"$CONAN" list "typeflow/*:*"
npkg=$("$CONAN" list "typeflow/*:*" --format=json | python3 -c '
import json, sys
d = json.load(sys.stdin)["Local Cache"]
print(sum(len(rev.get("packages", {})) for ref in d.values() for rev in ref.get("revisions", {}).values()))')
if [ "$npkg" != 1 ]; then
  echo "conan_check: expected one package (header-only), found $npkg" >&2
  exit 1
fi

rm -rf "$ROOT/test_package/build" "$ROOT/test_package/CMakeUserPresets.json"
echo "conan_check: OK ($(( $(date +%s) - start )) s)"
