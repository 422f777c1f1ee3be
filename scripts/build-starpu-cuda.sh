#!/usr/bin/env bash
# build-starpu-cuda.sh - build and install a CUDA-enabled StarPU 1.4 from
# Debian's source package (Debian's binary libstarpu-dev is 1.3 without CUDA).
#
# Usage:
#   scripts/build-starpu-cuda.sh [PREFIX]
#
# Arguments / environment:
#   PREFIX (1st arg) or STARPU_CUDA_PREFIX   install prefix
#                                            (default: /opt/starpu-1.4-cuda)
#   CUDA_HOME                                CUDA toolkit dir (default: /usr/local/cuda)
#   STARPU_BUILD_WORKDIR                     work dir for sources, build tree and log
#                                            (default: /tmp/mdflow-starpu-build)
#   STARPU_SRC_VERSION                       Debian source version to fetch, e.g.
#                                            1.4.10+dfsg-1 (default: newest 1.4.x that
#                                            can actually be downloaded)
#   STARPU_BUILD_JOBS                        parallel make jobs (default: nproc)
#   MDF_STARPU_FLAVOUR                       cuda (default) or simgrid: a StarPU that
#                                            simulates CPUs and GPUs with SimGrid
#                                            (scripts/build-starpu-simgrid.sh sets it;
#                                            default prefix /opt/starpu-1.4-simgrid)
#
# Idempotent: if PREFIX already holds a CUDA-enabled StarPU 1.4 it exits 0
# right away.  apt-get update is only run when something must be fetched, and
# the deb-src entry (/etc/apt/sources.list.d/mdflow-src.sources) is only
# added if absent.  Needs root (or sudo) for apt-get and for a root-owned PREFIX.
#
# Afterwards use it with:
#   PKG_CONFIG_PATH=PREFIX/lib/pkgconfig pkg-config --cflags --libs starpu-1.4
#   LD_LIBRARY_PATH=PREFIX/lib ./your-program
set -euo pipefail

flavour="${MDF_STARPU_FLAVOUR:-cuda}"
case "$flavour" in
    cuda) prefix="${1:-${STARPU_CUDA_PREFIX:-/opt/starpu-1.4-cuda}}"; feature=STARPU_USE_CUDA ;;
    simgrid) prefix="${1:-${STARPU_SIMGRID_PREFIX:-/opt/starpu-1.4-simgrid}}"; feature=STARPU_SIMGRID ;;
    *) echo "build-starpu-cuda: ERROR: MDF_STARPU_FLAVOUR must be cuda or simgrid, not '$flavour'" >&2; exit 1 ;;
esac
cuda_home="${CUDA_HOME:-/usr/local/cuda}"
workdir="${STARPU_BUILD_WORKDIR:-/tmp/mdflow-starpu-build}"
jobs="${STARPU_BUILD_JOBS:-$(nproc 2>/dev/null || echo 2)}"
src_list=/etc/apt/sources.list.d/mdflow-src.sources
logfile="$workdir/build-$flavour.log"

msg() { echo "build-starpu-$flavour: $*"; }
die() { echo "build-starpu-$flavour: ERROR: $*" >&2; exit 1; }

pc_file="$prefix/lib/pkgconfig/starpu-1.4.pc"
config_h="$prefix/include/starpu/1.4/starpu_config.h"

is_installed() {
    [[ -f "$pc_file" && -f "$config_h" ]] &&
        grep -Eq "^[[:space:]]*#[[:space:]]*define[[:space:]]+$feature([[:space:]]|\$)" "$config_h"
}

# --- 0. already done? -------------------------------------------------------
if is_installed; then
    ver=$(PKG_CONFIG_PATH="$prefix/lib/pkgconfig" pkg-config --modversion starpu-1.4 2>/dev/null || echo unknown)
    msg "$flavour StarPU $ver already installed at $prefix; nothing to do."
    exit 0
fi

# --- 1. prerequisites -------------------------------------------------------
[[ $flavour != cuda || -x "$cuda_home/bin/nvcc" ]] ||
    die "nvcc not found at $cuda_home/bin/nvcc (CUDA toolkit missing; set CUDA_HOME to the CUDA install dir)"
[[ $flavour != cuda || -f "$cuda_home/include/cuda.h" ]] ||
    die "cuda.h not found at $cuda_home/include/cuda.h (CUDA toolkit headers missing; set CUDA_HOME)"
[[ $flavour != cuda ]] || msg "using CUDA at $cuda_home ($("$cuda_home/bin/nvcc" --version | grep -o 'release [0-9.]*' || echo 'unknown release'))"

SUDO=()
if [[ $(id -u) -ne 0 ]]; then
    command -v sudo >/dev/null 2>&1 || die "not root and sudo not available (needed for apt-get / install)"
    SUDO=(sudo)
fi

mkdir -p "$workdir"
: >"$logfile"
msg "work dir: $workdir, log: $logfile, prefix: $prefix"

# Run a command with its output appended to the log; on failure show the
# tail of the log and exit non-zero.
run_logged() {
    local what="$1"; shift
    msg "$what ..."
    echo "=== $what: $* ===" >>"$logfile"
    if ! "$@" >>"$logfile" 2>&1; then
        echo "build-starpu-cuda: ERROR: $what failed; last 40 lines of $logfile:" >&2
        tail -n 40 "$logfile" >&2
        exit 1
    fi
}

apt_updated=0
apt_update_once() {
    if [[ $apt_updated -eq 0 ]]; then
        run_logged "apt-get update" "${SUDO[@]}" apt-get update
        apt_updated=1
    fi
}

# --- 2. build dependencies (explicit, minimal) --------------------------------
build_deps=(build-essential pkg-config dpkg-dev libhwloc-dev libltdl-dev)
[[ $flavour != simgrid ]] || build_deps+=(libsimgrid-dev libboost-dev)
missing=()
for p in "${build_deps[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if ((${#missing[@]})); then
    apt_update_once
    run_logged "installing build deps: ${missing[*]}" \
        "${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive \
        apt-get install -y --no-install-recommends "${missing[@]}"
else
    msg "build deps already installed: ${build_deps[*]}"
fi

# --- 3. fetch Debian source package -----------------------------------------
dl="$workdir/src"
mkdir -p "$dl"
# Let apt's unprivileged _apt user write there (avoids the "unsandboxed" warning).
chmod 0777 "$dl" 2>/dev/null || true

find_dsc() {  # newest starpu 1.4 .dsc already in $dl
    (shopt -s nullglob; for f in "$dl"/starpu_1.4.*.dsc; do echo "$f"; done) | sort -V | tail -n 1
}

dsc=""
if [[ -n "${STARPU_SRC_VERSION:-}" ]]; then
    cand="$dl/starpu_${STARPU_SRC_VERSION#*:}.dsc"
    [[ -f "$cand" ]] && dsc="$cand"
else
    dsc=$(find_dsc)
fi

if [[ -z "$dsc" ]]; then
    if [[ ! -f "$src_list" ]]; then
        msg "adding deb-src entry $src_list"
        "${SUDO[@]}" tee "$src_list" >/dev/null <<'EOF'
# Added by mdflow scripts/build-starpu-cuda.sh: source packages (for StarPU 1.4).
Types: deb-src
URIs: http://deb.debian.org/debian
Suites: bookworm sid
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF
        # A new source list needs its own update, even when the build
        # dependencies above already ran one (before this entry existed).
        apt_updated=0
    fi
    apt_update_once

    if [[ -n "${STARPU_SRC_VERSION:-}" ]]; then
        versions=("$STARPU_SRC_VERSION")
    else
        # Every 1.4.x source version apt knows about, newest first.
        mapfile -t versions < <(apt-cache showsrc starpu 2>/dev/null |
            sed -n 's/^Version: //p' | grep -E '^([0-9]+:)?1\.4\.' | sort -V -r -u)
        ((${#versions[@]})) || die "apt-cache showsrc starpu lists no 1.4.x source version (is $src_list active?)"
    fi
    msg "candidate source versions: ${versions[*]}"

    for v in "${versions[@]}"; do
        msg "downloading source starpu=$v ..."
        echo "=== apt-get source --download-only starpu=$v ===" >>"$logfile"
        if (cd "$dl" && apt-get source --download-only "starpu=$v") >>"$logfile" 2>&1 &&
           [[ -f "$dl/starpu_${v#*:}.dsc" ]]; then
            dsc="$dl/starpu_${v#*:}.dsc"
            break
        fi
        msg "download of starpu=$v failed, trying next version"
    done
    if [[ -z "$dsc" ]]; then
        echo "build-starpu-cuda: ERROR: could not download any StarPU 1.4 source; last 40 lines of $logfile:" >&2
        tail -n 40 "$logfile" >&2
        exit 1
    fi
else
    msg "using already downloaded source $dsc"
fi

srcver=$(basename "$dsc" .dsc); srcver=${srcver#starpu_}
upver=${srcver%-*}; upver=${upver%%+*}       # e.g. 1.4.10
srcdir="$workdir/starpu-$srcver"

# --- 4. unpack ----------------------------------------------------------------
if [[ ! -x "$srcdir/configure" ]]; then
    rm -rf "$srcdir"
    run_logged "unpacking $(basename "$dsc")" dpkg-source -x --no-check "$dsc" "$srcdir"
fi
[[ -x "$srcdir/configure" ]] || die "no configure script in $srcdir (source tarball without generated build system?)"

# --- 5. configure -----------------------------------------------------------
builddir="$workdir/build-$srcver"
[[ $flavour == cuda ]] || builddir+="-$flavour"
rm -rf "$builddir"
mkdir -p "$builddir"

help_text=$("$srcdir/configure" --help)
has_opt() { grep -Eq -- "--(en|dis)able-$1([=[:space:]]|\$)" <<<"$help_text"; }

conf_flags=(--prefix="$prefix")
if [[ $flavour == cuda ]]; then
    conf_flags+=(--enable-cuda --disable-cuda-memcpy-peer --with-cuda-dir="$cuda_home")
else
    # SimGrid simulates CUDA devices itself; StarPU refuses real CUDA and
    # shared-library MPI in this mode.
    conf_flags+=(--enable-simgrid --disable-cuda --disable-mpi)
fi
conf_flags+=(
    --enable-maxcpus=64
    --disable-opencl
    --disable-build-doc
    --disable-build-examples
    --disable-build-tests
    --disable-fortran
    --disable-socl
    --disable-starpufft
    --disable-starpupy
    --disable-hip
    --disable-static
)
# StarPU-MPI only when an MPI *development* setup works: an mpicc wrapper alone
# (e.g. openmpi-bin without libopenmpi-dev) is not enough, configure would
# still enable MPI and the build would then fail on a missing mpi.h.
mpi_ok=0
if command -v mpicc >/dev/null 2>&1; then
    printf '#include <mpi.h>\nint main(void){MPI_Init(0,0);MPI_Finalize();return 0;}\n' >"$workdir/mpitest.c"
    mpicc "$workdir/mpitest.c" -o "$workdir/mpitest" >/dev/null 2>&1 && mpi_ok=1
    rm -f "$workdir/mpitest.c" "$workdir/mpitest"
fi
if [[ $flavour == simgrid ]]; then
    :
elif ((mpi_ok)); then
    msg "working MPI development setup found: building StarPU-MPI too"
else
    conf_flags+=(--disable-mpi)
fi
# Multiple-linear-regression models would need extra deps (only if configure knows the option).
if has_opt mlr; then
    conf_flags+=(--disable-mlr)
fi

msg "configure flags: ${conf_flags[*]}"
cd "$builddir"
run_logged "configuring StarPU $upver" "$srcdir/configure" "${conf_flags[@]}"
grep -Eq "^#define $feature 1" include/starpu_config.h 2>/dev/null ||
    { tail -n 40 "$logfile" >&2; die "configure finished but $feature is not defined (see $logfile)"; }

# --- 6. build + install -------------------------------------------------------
run_logged "building (make -j$jobs; takes several minutes)" make -j"$jobs"
run_logged "installing into $prefix" "${SUDO[@]}" make install

# --- 7. verify ----------------------------------------------------------------
ver=$(PKG_CONFIG_PATH="$prefix/lib/pkgconfig" pkg-config --modversion starpu-1.4) ||
    die "pkg-config cannot find starpu-1.4 in $prefix/lib/pkgconfig"
grep -Eq "^#define $feature 1" "$config_h" ||
    die "$config_h does not define $feature 1"
msg "OK: $flavour StarPU $ver installed at $prefix (Debian source $srcver)"
msg "use: PKG_CONFIG_PATH=$prefix/lib/pkgconfig pkg-config --cflags --libs starpu-1.4; LD_LIBRARY_PATH=$prefix/lib"
