#!/usr/bin/env bash
# build.sh — configures and builds mdflow out of tree.
#   MDF_BUILD   build directory (default: build, or build-cuda with MDF_CUDA=1)
#   MDF_CUDA=1  build against the CUDA-enabled StarPU 1.4 in STARPU_CUDA_PREFIX
#               (default /opt/starpu-1.4-cuda; see scripts/build-starpu-cuda.sh)
#   CFLAGS      compiler flags (default -O3 -g)
#   MDF_CONFIGURE_ARGS  extra configure arguments (scripts/test.sh: --enable-tests)
# configure runs again when its arguments, the flags or the detected
# libraries' versions differ from the last configure of this build dir.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cuda=${MDF_CUDA:-0}
suffix=""
[ "$cuda" = 1 ] && suffix=-cuda
build=${MDF_BUILD:-$top/build$suffix}
cd "$top"
if [ ! -x configure ] || [ configure.ac -nt configure ] || [ Makefile.am -nt configure ] \
   || [ tests/Makefile.inc -nt configure ]; then
  echo "build: autoreconf"
  autoreconf -fi >/dev/null
fi
mkdir -p "$build"
cd "$build"
if [ "$cuda" = 1 ]; then
  prefix=${STARPU_CUDA_PREFIX:-/opt/starpu-1.4-cuda}
  export PKG_CONFIG_PATH="$prefix/lib/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
  export LD_LIBRARY_PATH="$prefix/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
fi
# Configure again whenever what configure saw may have changed: its
# arguments, the flags, or the versions of the libraries it detects (a
# package installed after the first build, such as cmocka, must reach the
# Makefile, or `make check` silently builds a partial suite).
cflags=${CFLAGS:--O3 -g}
stamp_of() {
  echo "args: ${MDF_CONFIGURE_ARGS:-} CFLAGS=$cflags LDFLAGS=${LDFLAGS:-} PKG_CONFIG_PATH=${PKG_CONFIG_PATH:-}"
  echo "simgrid starpu: $(ls /opt/starpu-1.4-simgrid/lib/pkgconfig/starpu-1.4.pc 2>/dev/null || echo missing)"
  for m in starpu-1.4 starpu-1.3 starpumpi-1.4 starpumpi-1.3 ompi-c hwloc hdf5 yaml-0.1 cmocka; do
    echo "$m: $(pkg-config --modversion "$m" 2>/dev/null || echo missing)"
  done
}
stamp=$(stamp_of)
if [ ! -f Makefile ] || [ "$top/configure" -nt Makefile ] || [ "$(cat .mdf-configure-stamp 2>/dev/null)" != "$stamp" ]; then
  [ -f Makefile ] && echo "build: configure again (its inputs changed)"
  # shellcheck disable=SC2086  # MDF_CONFIGURE_ARGS is a list of words
  "$top/configure" -q CFLAGS="$cflags" ${MDF_CONFIGURE_ARGS:-}
  echo "$stamp" > .mdf-configure-stamp
fi
make -j"$(nproc)" >/dev/null
echo "build: $(pwd)"
