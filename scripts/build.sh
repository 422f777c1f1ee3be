#!/usr/bin/env bash
# build.sh — configures and builds mdflow out of tree.
#   MDF_BUILD   build directory (default: build, or build-cuda with MDF_CUDA=1)
#   MDF_CUDA=1  build against the CUDA-enabled StarPU 1.4 in STARPU_CUDA_PREFIX
#               (default /opt/starpu-1.4-cuda; see scripts/build-starpu-cuda.sh)
#   CFLAGS      compiler flags (default -O3 -g)
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
if [ ! -f Makefile ] || [ "$top/configure" -nt Makefile ]; then
  "$top/configure" -q CFLAGS="${CFLAGS:--O3 -g}"
fi
make -j"$(nproc)" >/dev/null
echo "build: $(pwd)"
