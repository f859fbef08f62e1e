#!/usr/bin/env bash
# Install the Debian (12) packages that typeflow's build, tests and examples
# need. Idempotent: installs only what is missing, and runs `apt-get update`
# only when something is missing. Run as root, or as a user with sudo.
set -euo pipefail

PACKAGES=(
  build-essential   # g++ (C++20), make
  cmake             # >= 3.20
  ninja-build
  libeigen3-dev     # >= 3.4, the CPU backend
  catch2            # v2, the unit tests
  libopenblas-dev   # optional BLAS backend (TYPEFLOW_USE_BLAS=ON)
  zlib1g-dev        # tf::data reads gzip-compressed IDX files
  dataset-fashion-mnist  # the main example's data (/usr/share/datasets/fashion-mnist)
  graphviz          # `dot`, renders the graph exports
  time              # /usr/bin/time, compile-time / memory measurements
  # the distributed runtime (include/typeflow/distributed)
  libboost1.81-dev  # Asio (conflicts with the 1.74 -dev packages)
  libssl-dev        # HMAC-SHA256 (libcrypto) for the handshake
  libcereal-dev     # control messages
  rapidjson-dev     # cluster spec parsing
  clang             # libFuzzer targets (frame parser, checkpoints, event files, cluster specs)
  libgloo-dev       # benchmark peer: Gloo's ring all-reduce
  libopenmpi-dev    # benchmark peer: Open MPI over TCP
  openmpi-bin
  python3           # all-reduce benchmark driver
  # tf::io: the TensorBoard reader check (tests/io) pip-installs tensorboard into a venv
  python3-venv
)

missing=()
for pkg in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'install ok installed'; then
    missing+=("$pkg")
  fi
done

if [ "${#missing[@]}" -eq 0 ]; then
  echo "deps: all packages present (${PACKAGES[*]})"
  exit 0
fi

if [ "$(id -u)" -eq 0 ]; then
  SUDO=()
elif command -v sudo >/dev/null 2>&1; then
  SUDO=(sudo)
else
  echo "deps: missing packages: ${missing[*]}; run this script as root (or install sudo)" >&2
  exit 1
fi

echo "deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
"${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -q
"${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive \
  apt-get install -y -q --no-install-recommends "${missing[@]}"
