#!/usr/bin/env bash
# Checks the vcpkg overlay port (ports/typeflow) without vcpkg, which is not
# installed here:
#   a. ports/typeflow/vcpkg.json against vcpkg's manifest rules
#      (scripts/vcpkg_manifest_check.py), and the checker itself against a few
#      broken manifests that it must reject
#   b. the portfile's steps with plain CMake: configure with the portfile's
#      OPTIONS (read from ports/typeflow/portfile.cmake), install into a
#      staging "packages" prefix, vcpkg_cmake_config_fixup's rewrites (which
#      must change nothing), the debug/ and lib/ removal, usage and copyright;
#      then vcpkg's post-build rules: no absolute build paths in the package,
#      no empty directories, a copyright file
#   c. tests/consumer against that prefix with find_package (cmake/consumer_test.cmake:
#      the plain consumer, one program per component, and the failures that
#      must name a missing component's dependency)
# Work and staging directory: build-pkg/vcpkg (STAGE=... to change). Installs
# nothing else. Exits non-zero on the first failure.
#   bash scripts/vcpkg_check.sh
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
ROOT=$PWD
PORT=$ROOT/ports/typeflow
STAGE=${STAGE:-$ROOT/build-pkg/vcpkg}
JOBS=${JOBS:-$(nproc)}
start=$(date +%s)
rm -rf "$STAGE"
mkdir -p "$STAGE"

# ---- a. the manifest ----------------------------------------------------------
echo "vcpkg_check: (a) manifest rules"
python3 scripts/vcpkg_manifest_check.py "$PORT"

# The checker must reject manifests that break the rules.
bad=$STAGE/bad/typeflow
mkdir -p "$bad"
cp "$PORT/portfile.cmake" "$PORT/usage" "$bad/"
while IFS='|' read -r what expr; do
  python3 - "$PORT/vcpkg.json" "$bad/vcpkg.json" "$expr" <<'EOF'
import json, sys
m = json.load(open(sys.argv[1]))
exec(sys.argv[3])
json.dump(m, open(sys.argv[2], "w"), indent=2)
EOF
  if python3 scripts/vcpkg_manifest_check.py "$bad" >/dev/null 2>"$STAGE/bad/err"; then
    echo "vcpkg_check: the manifest checker accepted a manifest with $what" >&2
    exit 1
  fi
  echo "vcpkg_check:   rejects $what: $(head -n1 "$STAGE/bad/err" | sed 's/^[^:]*: [^:]*: //')"
done <<'EOF'
an upper-case name|m["name"] = "TypeFlow"
two version fields|m["version-string"] = "0.1"
a feature without a description|m["features"]["io"].pop("description")
a reserved feature name|m["features"]["core"] = {"description": "x"}
a misspelt dependency|m["dependencies"][0] = "eigen"
an undeclared default feature|m["default-features"] = ["gpu"]
no vcpkg-cmake host dependency|m["dependencies"] = [d for d in m["dependencies"] if not (isinstance(d, dict) and d["name"] == "vcpkg-cmake")]
EOF

# ---- b. the portfile's steps with plain CMake -----------------------------------
echo
echo "vcpkg_check: (b) the portfile's configure / install / fixup with plain CMake"
# vcpkg_cmake_configure(... OPTIONS -D... ) in the portfile: the same options here.
mapfile -t OPTIONS < <(python3 - "$PORT/portfile.cmake" <<'EOF'
import re, sys
text = open(sys.argv[1]).read()
m = re.search(r"vcpkg_cmake_configure\((.*?)\n\)", text, re.S)
if not m:
    sys.exit("vcpkg_check: no vcpkg_cmake_configure( ... ) in the portfile")
body = m.group(1)
opts = body.split("OPTIONS", 1)[1] if "OPTIONS" in body else ""
for tok in opts.split():
    if tok.startswith("-D"):
        print(tok)
EOF
)
echo "vcpkg_check: portfile OPTIONS: ${OPTIONS[*]}"
PKG=$STAGE/packages/typeflow_x64-linux   # vcpkg's CURRENT_PACKAGES_DIR
generator=(); command -v ninja >/dev/null && generator=(-G Ninja)
cmake -S "$ROOT" -B "$STAGE/buildtrees/typeflow/x64-linux-rel" "${generator[@]}" \
  -DCMAKE_BUILD_TYPE=Release "-DCMAKE_INSTALL_PREFIX=$PKG" "${OPTIONS[@]}"
cmake --build "$STAGE/buildtrees/typeflow/x64-linux-rel" --parallel "$JOBS"
cmake --install "$STAGE/buildtrees/typeflow/x64-linux-rel"

# vcpkg_cmake_config_fixup(CONFIG_PATH share/typeflow): the config is already in
# share/typeflow; apply the fixup's rewrites (prefix depth 2, absolute paths of
# the packages dir to ${_IMPORT_PREFIX}) and require that they change nothing.
python3 - "$PKG" <<'EOF'
import re, sys
from pathlib import Path
pkg = Path(sys.argv[1])
share = pkg / "share" / "typeflow"
if not (share / "typeflowConfig.cmake").is_file():
    sys.exit(f"vcpkg_check: no {share}/typeflowConfig.cmake (CONFIG_PATH share/typeflow)")
changed = []
for f in sorted(share.rglob("*.cmake")):
    text = f.read_text()
    new = re.sub(r'get_filename_component\(_IMPORT_PREFIX "\$\{CMAKE_CURRENT_LIST_FILE\}" PATH\)'
                 r'(\nget_filename_component\(_IMPORT_PREFIX "\$\{_IMPORT_PREFIX\}" PATH\))*',
                 'get_filename_component(_IMPORT_PREFIX "${CMAKE_CURRENT_LIST_FILE}" PATH)\n'
                 'get_filename_component(_IMPORT_PREFIX "${_IMPORT_PREFIX}" PATH)\n'
                 'get_filename_component(_IMPORT_PREFIX "${_IMPORT_PREFIX}" PATH)', text)
    new = re.sub(r'get_filename_component\(PACKAGE_PREFIX_DIR "\$\{CMAKE_CURRENT_LIST_DIR\}/\.\./(\.\./)*" ABSOLUTE\)',
                 'get_filename_component(PACKAGE_PREFIX_DIR "${CMAKE_CURRENT_LIST_DIR}/../../" ABSOLUTE)', new)
    new = new.replace(str(pkg), "${_IMPORT_PREFIX}")
    if new != text:
        changed.append(f.name)
        f.write_text(new)
if changed:
    sys.exit(f"vcpkg_check: vcpkg_cmake_config_fixup would rewrite {changed}: the installed package "
             "is not at share/typeflow with relative paths")
print(f"vcpkg_check: config fixup: nothing to rewrite in {len(list(share.rglob('*.cmake')))} files")
EOF
rm -rf "$PKG/debug" "$PKG/lib"
install -m 644 "$PORT/usage" "$PKG/share/typeflow/usage"
if [ -f "$ROOT/LICENSE" ]; then
  install -m 644 "$ROOT/LICENSE" "$PKG/share/typeflow/copyright"
else
  printf 'typeflow: no license file in the source tree; see the project'"'"'s README.\n' > "$PKG/share/typeflow/copyright"
fi

# vcpkg's post-build checks that apply to a header-only port.
fail=0
if grep -rlF -e "$STAGE" -e "$ROOT/" "$PKG/share" >/dev/null; then
  echo "vcpkg_check: absolute build or source paths in the package:" >&2
  grep -rnF -e "$STAGE" -e "$ROOT/" "$PKG/share" >&2
  fail=1
fi
if [ -n "$(find "$PKG" -type d -empty)" ]; then
  echo "vcpkg_check: empty directories in the package: $(find "$PKG" -type d -empty)" >&2
  fail=1
fi
for f in include/typeflow/typeflow.hpp share/typeflow/copyright share/typeflow/usage \
         share/typeflow/typeflowConfig.cmake share/typeflow/typeflowConfigVersion.cmake; do
  [ -f "$PKG/$f" ] || { echo "vcpkg_check: the package has no $f" >&2; fail=1; }
done
if find "$PKG" -name '*.a' -o -name '*.so*' -o -name '*.lib' -o -name '*.dll' | grep -q .; then
  echo "vcpkg_check: a header-only package with binaries in it" >&2
  fail=1
fi
[ "$fail" = 0 ]
echo "vcpkg_check: package layout OK: $(cd "$PKG" && find . -type f | wc -l) files; share/typeflow: $(ls "$PKG/share/typeflow" | tr '\n' ' ')"

# ---- c. a consumer against the staged package --------------------------------------
echo
echo "vcpkg_check: (c) tests/consumer with find_package(typeflow) from $PKG"
components=io,distributed
d=/usr/local/cuda/include
if [ -e "$d/cuda_runtime_api.h" ] && [ -e "$d/cudnn.h" ] && [ -e "$d/nccl.h" ]; then
  components=$components,cuda
fi
cmake -DSKIP_INSTALL=ON -DTYPEFLOW_BUILD_DIR=unused "-DPREFIX=$PKG" \
  "-DCONSUMER_SOURCE=$ROOT/tests/consumer" "-DCONSUMER_BUILD=$STAGE/consumer" \
  "-DGENERATOR=${generator[1]:-Unix Makefiles}" -DCXX="$(command -v c++)" -DCONFIG=Release \
  "-DCOMPONENTS=$components" "-DJOBS=$JOBS" \
  -P "$ROOT/cmake/consumer_test.cmake"

echo
echo "vcpkg_check: OK ($(( $(date +%s) - start )) s)"
