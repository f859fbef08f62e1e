#!/usr/bin/env python3
"""Checks a vcpkg port (vcpkg.json + portfile.cmake + usage) against the
rules vcpkg enforces, without vcpkg: the manifest schema
(microsoft/vcpkg-tool docs/vcpkg.schema.json and
vcpkg-schema-definitions.schema.json) and a few port conventions.

    python3 scripts/vcpkg_manifest_check.py ports/typeflow

Exits 1 and lists every problem found, or prints a summary and exits 0.
"""

import json
import re
import sys
from pathlib import Path

# vcpkg-schema-definitions.schema.json: identifier, port-name, versions.
IDENTIFIER = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")
PORT_NAME = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*(\.[a-z0-9]+(-[a-z0-9]+)*)*$")
RESERVED = re.compile(r"^(prn|aux|nul|con|lpt[1-9]|com[1-9]|core|default)$")
_PRE = r"(?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)"
VERSION_PATTERNS = {
    "version": re.compile(r"^\d+(\.\d+)*(?:-(" + _PRE + r"(?:\." + _PRE + r")*))?(?:\+([0-9a-zA-Z-]+(?:\.[0-9a-zA-Z-]+)*))?$"),
    "version-semver": re.compile(r"^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(?:-(" + _PRE + r"(?:\." + _PRE
                                 + r")*))?(?:\+([0-9a-zA-Z-]+(?:\.[0-9a-zA-Z-]+)*))?$"),
    "version-date": re.compile(r"^\d{4}-\d{2}-\d{2}(\.\d+)*$"),
    "version-string": re.compile(r"^[^#]+$"),
}
VERSION_GE = re.compile(r"^[^#]+(#\d+)?$")
TOP_LEVEL_KEYS = {
    "name", "version", "version-semver", "version-date", "version-string", "port-version", "maintainers",
    "summary", "description", "homepage", "documentation", "license", "builtin-baseline", "dependencies",
    "overrides", "features", "default-features", "supports", "vcpkg-configuration",
}
DEPENDENCY_KEYS = {"name", "features", "host", "default-features", "platform", "version>="}
FEATURE_KEYS = {"description", "dependencies", "supports"}
# Ports of the microsoft/vcpkg registry this port may name (checked against
# the registry when this list was written); a typo such as "eigen" for
# "eigen3" is caught here instead of by `vcpkg install`.
KNOWN_PORTS = {
    "eigen3", "zlib", "cereal", "rapidjson", "boost-asio", "boost-headers", "openssl",
    "vcpkg-cmake", "vcpkg-cmake-config", "cuda", "cudnn", "nccl",
}
# A tiny platform-expression grammar: identifiers, !, &, |, ',', parentheses.
PLATFORM_EXPR = re.compile(r"^[\sa-z0-9_!&|,()-]+$")


def no_duplicate_keys(pairs):
    keys = [k for k, _ in pairs]
    dups = sorted({k for k in keys if keys.count(k) > 1})
    if dups:
        raise ValueError(f"duplicate keys {dups}")
    return dict(pairs)


def is_string_or_strings(v):
    return isinstance(v, str) or (isinstance(v, list) and all(isinstance(x, str) for x in v))


def check_identifier(errors, what, name, pattern=IDENTIFIER):
    if not isinstance(name, str) or not pattern.match(name):
        errors.append(f"{what}: {name!r} is not lowercase letters/digits separated by single dashes")
    elif any(RESERVED.match(part) for part in name.split(".")):
        errors.append(f"{what}: {name!r} is a reserved name")


def check_fields(errors, message, obj, allowed):
    """Reports the fields of obj that are neither allowed nor comments ("$...")."""
    extra = {k for k in obj if k not in allowed and not k.startswith("$")}
    if extra:
        errors.append(f"{message} {sorted(extra)}")


def check_dependency(errors, where, dep, port_name, features):
    if isinstance(dep, str):
        dep = {"name": dep}
    elif not isinstance(dep, dict):
        errors.append(f"{where}: a dependency must be a string or an object, not {dep!r}")
        return
    check_fields(errors, f"{where}: unknown dependency fields", dep, DEPENDENCY_KEYS)
    name = dep.get("name")
    if name is None:
        errors.append(f"{where}: dependency without a name")
        return
    check_identifier(errors, f"{where}: dependency name", name, PORT_NAME)
    if name != port_name and name not in KNOWN_PORTS:
        errors.append(f"{where}: dependency {name!r} is not a port this check knows (KNOWN_PORTS)")
    for f in dep.get("features", []):
        name_f = f["name"] if isinstance(f, dict) else f
        check_identifier(errors, f"{where}: feature of {name}", name_f)
        if name == port_name and name_f not in features:
            errors.append(f"{where}: depends on its own feature {name_f!r}, which it does not declare")
    for key in ("host", "default-features"):
        if key in dep and not isinstance(dep[key], bool):
            errors.append(f"{where}: {key} must be true or false")
    if "platform" in dep and not (isinstance(dep["platform"], str) and PLATFORM_EXPR.match(dep["platform"])):
        errors.append(f"{where}: platform {dep['platform']!r} is not a platform expression")
    if "version>=" in dep and not (isinstance(dep["version>="], str) and VERSION_GE.match(dep["version>="])):
        errors.append(f"{where}: version>= {dep['version>=']!r} is malformed")
    if name == port_name and dep.get("host"):
        errors.append(f"{where}: a port cannot host-depend on itself")


def host_deps(manifest):
    out = set()
    for d in manifest.get("dependencies", []):
        if isinstance(d, dict) and d.get("host"):
            out.add(d["name"])
    return out


def main(port_dir):
    port_dir = Path(port_dir)
    errors = []
    manifest_path = port_dir / "vcpkg.json"
    try:
        manifest = json.loads(manifest_path.read_text(encoding="utf-8"), object_pairs_hook=no_duplicate_keys)
    except (OSError, ValueError) as e:
        print(f"vcpkg_manifest_check: {manifest_path}: {e}", file=sys.stderr)
        return 1
    if not isinstance(manifest, dict):
        print(f"vcpkg_manifest_check: {manifest_path}: the top level must be an object", file=sys.stderr)
        return 1

    check_fields(errors, "unknown top-level fields", manifest, TOP_LEVEL_KEYS)

    name = manifest.get("name")
    if name is None:
        errors.append("a port needs a name")
    else:
        check_identifier(errors, "name", name)
        if name != port_dir.name:
            errors.append(f"name {name!r} differs from the port directory {port_dir.name!r}")

    versions = [k for k in VERSION_PATTERNS if k in manifest]
    if len(versions) != 1:
        errors.append(f"a port needs exactly one of {sorted(VERSION_PATTERNS)}, found {versions}")
    for k in versions:
        v = manifest[k]
        if not isinstance(v, str) or not VERSION_PATTERNS[k].match(v):
            errors.append(f"{k} {v!r} does not match the {k} scheme")
        elif k != "version-string" and "#" in v:
            errors.append(f"{k} {v!r}: the port version goes in port-version, not after '#'")
    if "port-version" in manifest:
        pv = manifest["port-version"]
        if not isinstance(pv, int) or isinstance(pv, bool) or pv < 0:
            errors.append(f"port-version {pv!r} must be a non-negative integer")

    if "description" not in manifest:
        errors.append("a port needs a description")
    elif not is_string_or_strings(manifest["description"]):
        errors.append("description must be a string or an array of strings")
    if "license" in manifest and not (manifest["license"] is None or isinstance(manifest["license"], str)):
        errors.append("license must be an SPDX expression string or null")
    if "supports" in manifest and not (isinstance(manifest["supports"], str)
                                       and PLATFORM_EXPR.match(manifest["supports"])):
        errors.append(f"supports {manifest['supports']!r} is not a platform expression")
    for k in ("builtin-baseline", "overrides", "vcpkg-configuration"):
        if k in manifest:
            errors.append(f"{k} is only for top-level (project) manifests, not for a port")

    features = manifest.get("features", {})
    if not isinstance(features, dict):
        errors.append("features must be an object")
        features = {}
    for fname, feature in features.items():
        check_identifier(errors, "feature name", fname)
        if not isinstance(feature, dict):
            errors.append(f"feature {fname!r} must be an object")
            continue
        check_fields(errors, f"feature {fname!r}: unknown fields", feature, FEATURE_KEYS)
        if "description" not in feature:
            errors.append(f"feature {fname!r} has no description")
        elif not is_string_or_strings(feature["description"]) or not feature["description"]:
            errors.append(f"feature {fname!r}: description must be a non-empty string or array of strings")
        for dep in feature.get("dependencies", []):
            check_dependency(errors, f"feature {fname!r}", dep, name, features)

    for dep in manifest.get("dependencies", []):
        check_dependency(errors, "dependencies", dep, name, features)
        if (dep if isinstance(dep, str) else dep.get("name")) == name:
            errors.append("a port cannot depend on itself outside a feature")

    for df in manifest.get("default-features", []):
        fname = df.get("name") if isinstance(df, dict) else df
        if fname not in features:
            errors.append(f"default feature {fname!r} is not declared in features")

    # Port conventions vcpkg relies on.
    portfile = port_dir / "portfile.cmake"
    if not portfile.is_file():
        errors.append("no portfile.cmake")
    else:
        text = portfile.read_text(encoding="utf-8")
        hosts = host_deps(manifest)
        if re.search(r"\bvcpkg_cmake_(configure|install|build)\s*\(", text) and "vcpkg-cmake" not in hosts:
            errors.append("portfile uses vcpkg_cmake_* but vcpkg-cmake is not a host dependency")
        if re.search(r"\bvcpkg_cmake_config_fixup\s*\(", text) and "vcpkg-cmake-config" not in hosts:
            errors.append("portfile uses vcpkg_cmake_config_fixup but vcpkg-cmake-config is not a host dependency")
        if not re.search(r"\bvcpkg_install_copyright\s*\(|/copyright\"", text):
            errors.append("portfile installs no copyright file (vcpkg_install_copyright)")
        if re.search(r"\busage\b", text) and not (port_dir / "usage").is_file():
            errors.append("portfile installs a usage file the port does not have")
    if not (port_dir / "usage").is_file():
        errors.append("no usage file")

    if errors:
        for e in errors:
            print(f"vcpkg_manifest_check: {manifest_path}: {e}", file=sys.stderr)
        return 1
    version = manifest[versions[0]]
    print(f"vcpkg_manifest_check: {name} {version}: manifest OK "
          f"(features: {', '.join(sorted(features)) or 'none'}; "
          f"default: {', '.join(str(d) for d in manifest.get('default-features', [])) or 'none'})")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "ports/typeflow"))
