#!/usr/bin/env bash
# install-deps.sh — installs the Debian packages mdflow needs to build, run
# and test. Idempotent: installs only what is missing, and runs apt-get
# update only when it must install something. Needs root (or sudo).
#
#   scripts/install-deps.sh            build + run + test dependencies
#   scripts/install-deps.sh --build    only what building and running need
set -euo pipefail

build_pkgs=(build-essential autoconf automake libtool pkg-config
            libstarpu-dev libhwloc-dev libhdf5-dev libyaml-dev
            libkim-api-dev openkim-models openmpi-bin libopenmpi-dev)
test_pkgs=(libcmocka-dev lammps python3-ase python3-numpy python3-h5py python3-mdanalysis
           hdf5-tools valgrind groff-base)
# mdflow plot draws with gnuplot (its tests too)
build_pkgs+=(gnuplot-nox)

pkgs=("${build_pkgs[@]}")
[ "${1:-}" = "--build" ] || pkgs+=("${test_pkgs[@]}")

missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#pkgs[@]} packages present"
  exit 0
fi

sudo=""
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "install-deps: need root or sudo to install: ${missing[*]}" >&2; exit 1; }
  sudo=sudo
fi
echo "install-deps: installing ${missing[*]}"
$sudo apt-get update -q
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q --no-install-recommends "${missing[@]}"
