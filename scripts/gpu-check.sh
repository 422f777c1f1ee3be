#!/usr/bin/env bash
# gpu-check.sh — the first (and every) GPU run of mdflow, on a GPU node with
# this Debian userland and no network, in phases that each fit in 10 minutes.
#
#   scripts/gpu-check.sh build [STARPU_SOURCE]
#       A CUDA-enabled StarPU 1.4 (unless one is already at STARPU_CUDA_PREFIX,
#       default /opt/starpu-1.4-cuda), from STARPU_SOURCE: a Debian source
#       package (.dsc beside its tarballs), an upstream tarball (.tar.gz/.bz2/.xz)
#       or an unpacked source tree; then mdflow against it (build-cuda/). No
#       network is used: missing build packages are named, not installed.
#   scripts/gpu-check.sh test
#       The CUDA tests of build-cuda/ (test_cuda_wiring.sh, test_cuda,
#       test_cuda_stage, test_cuda_runs, test_cuda_plugin, test_cuda_eam) on
#       the GPU; a table and gpu-tests.json.
#   scripts/gpu-check.sh bench
#       bench/gpu_bench.py: in.lj 32k and 1 M atoms, 1,000 and 8,000 clusters,
#       each on the CPUs only, the GPU, and both; a table and gpu.json.
#   scripts/gpu-check.sh bundle [DIR]
#       (on the build machine) a relocatable copy of build-cuda's programs and
#       CUDA tests with every shared library they load except glibc's and
#       CUDA's (driver and toolkit: the node's own; default DIR: .bundle), for
#       GPU nodes with no compiler or
#       -dev packages. There: MDF_BUNDLE=DIR scripts/gpu-check.sh test|bench.
#
# Results go to GPU_CHECK_OUT (default: build-cuda/gpu-check, or the bundle's
# results/ folder); each phase ends with one line "N passed, N failed".
# GPU_TEST_TIMEOUT: seconds each test may run (default 560); GPU_TESTS: the
# tests to run (e.g. "tests/test_cuda tests/test_cuda_eam"); GPU_TEST_WRAPPER:
# a command the test programs run under, e.g. "compute-sanitizer --tool
# memcheck --error-exitcode 9".
set -uo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
phase=${1:-}
[ $# -gt 0 ] && shift
prefix=${STARPU_CUDA_PREFIX:-/opt/starpu-1.4-cuda}
bundle=${MDF_BUNDLE:-}
build=${MDF_BUILD:-$top/build-cuda}
if [ -n "$bundle" ]; then
  bundle=$(cd "$bundle" && pwd) || { echo "gpu-check: no bundle at $MDF_BUNDLE" >&2; exit 2; }
  out=${GPU_CHECK_OUT:-$bundle/results}
else
  out=${GPU_CHECK_OUT:-$build/gpu-check}
fi
msg() { echo "gpu-check: $*"; }
die() { echo "gpu-check: ERROR: $*" >&2; exit 1; }

# ---- build -----------------------------------------------------------------------

starpu_from_source() {
  local src=$1 work=${STARPU_BUILD_WORKDIR:-/tmp/mdflow-starpu-build} dir=""
  mkdir -p "$work"
  case $src in
    *.dsc) dir=$work/src-dsc; rm -rf "$dir"; dpkg-source -x --no-check "$src" "$dir" >/dev/null || die "cannot unpack $src" ;;
    *.tar.gz|*.tgz|*.tar.bz2|*.tar.xz)
      rm -rf "$work/src-tar"; mkdir -p "$work/src-tar"
      tar -xf "$src" -C "$work/src-tar" || die "cannot unpack $src"
      dir=$(find "$work/src-tar" -mindepth 1 -maxdepth 1 -type d | head -n 1) ;;
    *) [ -d "$src" ] || die "STARPU_SOURCE must be a .dsc, a tarball or a source folder: $src"; dir=$src ;;
  esac
  [ -x "$dir/configure" ] || die "no configure script in $dir"
  local bdir=$work/build-gpu-check
  rm -rf "$bdir"; mkdir -p "$bdir"
  msg "configuring StarPU from $dir (log: $bdir/build.log)"
  # The flags of scripts/build-starpu-cuda.sh (docs: shared/design/GPU.md).
  (cd "$bdir" && "$dir/configure" --prefix="$prefix" --enable-cuda --disable-cuda-memcpy-peer \
      --with-cuda-dir="${CUDA_HOME:-/usr/local/cuda}" --enable-maxcpus=64 --disable-opencl --disable-build-doc \
      --disable-build-examples --disable-build-tests --disable-fortran --disable-socl --disable-starpufft \
      --disable-starpupy --disable-hip --disable-static --disable-mpi >"$bdir/build.log" 2>&1) ||
    { tail -n 30 "$bdir/build.log"; die "StarPU configure failed"; }
  msg "building StarPU (several minutes)"
  (cd "$bdir" && make -j"$(nproc)" >>"$bdir/build.log" 2>&1 && make install >>"$bdir/build.log" 2>&1) ||
    { tail -n 30 "$bdir/build.log"; die "StarPU build failed"; }
}

phase_build() {
  local missing=()
  for m in hwloc hdf5 yaml-0.1 cmocka; do pkg-config --exists "$m" || missing+=("$m"); done
  command -v autoreconf >/dev/null || missing+=("autoconf/automake/libtool")
  [ ${#missing[@]} -eq 0 ] || die "missing build dependencies (pkg-config: ${missing[*]}): install libhwloc-dev libhdf5-dev libyaml-dev libcmocka-dev autoconf automake libtool, or build elsewhere and use 'bundle'"
  if [ -f "$prefix/lib/pkgconfig/starpu-1.4.pc" ] && grep -q '^#define STARPU_USE_CUDA 1' "$prefix/include/starpu/1.4/starpu_config.h" 2>/dev/null; then
    msg "CUDA-enabled StarPU already at $prefix"
  elif [ $# -gt 0 ]; then
    starpu_from_source "$1"
  else
    die "no CUDA-enabled StarPU at $prefix: give its source (scripts/gpu-check.sh build PATH)"
  fi
  MDF_CUDA=1 MDF_CONFIGURE_ARGS=--enable-tests STARPU_CUDA_PREFIX=$prefix "$top/scripts/build.sh" || die "mdflow build failed"
  (cd "$build" && make -j"$(nproc)" tests/test_cuda tests/test_cuda_stage tests/test_cuda_runs tests/test_cuda_plugin tests/test_cuda_eam \
    tests/plugins/mdflow-example-plugin.la >/dev/null) ||
    die "building the CUDA tests failed"
  echo "1 passed, 0 failed"
}

# ---- bundle ----------------------------------------------------------------------

phase_bundle() {
  local dir=${1:-$top/.bundle}
  [ -x "$build/.libs/mdflow" ] || [ -x "$build/mdflow" ] || die "no build in $build: run MDF_CUDA=1 scripts/build.sh first"
  (cd "$build" && make -j"$(nproc)" tests/test_cuda tests/test_cuda_stage tests/test_cuda_runs tests/test_cuda_plugin tests/test_cuda_eam \
    tests/plugins/mdflow-example-plugin.la >/dev/null) ||
    die "building the CUDA tests failed"
  rm -rf "$dir"; mkdir -p "$dir/bin" "$dir/lib" "$dir/bench" "$dir/results"
  local real
  for p in mdflow tests/test_cuda tests/test_cuda_stage tests/test_cuda_runs tests/test_cuda_plugin tests/test_cuda_eam; do
    real=$build/$(dirname "$p")/.libs/$(basename "$p")
    [ -x "$real" ] || real=$build/$p
    cp "$real" "$dir/bin/$(basename "$p")"
  done
  mkdir -p "$dir/plugins"
  cp "$build/tests/plugins/.libs/mdflow-example-plugin.so" "$dir/plugins/" # test_cuda_plugin's
  # test_cuda_eam's potentials (LAMMPS's files: the GPU node may have no LAMMPS).
  mkdir -p "$dir/potentials"
  for f in AlCu.eam.alloy Cu_u3.eam NiAlH_jea.eam.fs; do
    cp "${MDF_LAMMPS_POTENTIALS:-/usr/share/lammps/potentials}/$f" "$dir/potentials/" ||
      die "no $f for test_cuda_eam (install lammps-data, or set MDF_LAMMPS_POTENTIALS)"
  done
  cp "$top"/bench/gpu_bench.py "$top"/bench/mdbench.py "$dir/bench/"
  cp -r "$top/include" "$dir/include" # bench reads units.h
  # Every library the programs load, but glibc's and CUDA's: the driver and
  # the toolkit's runtime libraries (cudart, cuBLAS, cuSPARSE... that
  # StarPU links: most of a gigabyte) are the GPU node's own.
  cuda_dir=$(readlink -f "${CUDA_HOME:-/usr/local/cuda}")
  LD_LIBRARY_PATH="$build/.libs:$prefix/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
    ldd "$dir"/bin/* | awk '$2 == "=>" && $3 ~ /^\// {print $3}' | sort -u | while read -r lib; do
      real=$(readlink -f "$lib")
      case $real in "$cuda_dir"/*|*/cuda*/*) continue ;; esac
      case $(basename "$lib") in
        # (libresolv and the like are glibc's: its private symbols must match the node's libc.)
        # libstdc++ and libgcc_s too: the node's are as new or newer (backward
        # compatible), and its CUDA libraries may need them newer than ours;
        # libresolv and the like are glibc's (private symbols: the node's libc's).
        libc.so*|libm.so*|libpthread.so*|libdl.so*|librt.so*|ld-linux*|libcuda.so*|libnvidia*|libcu*|libnv*|libstdc++.so*|libgcc_s.so*|libresolv.so*|libutil.so*|libanl.so*|libnsl.so*) ;;
        *) cp -L "$lib" "$dir/lib/" ;;
      esac
    done
  # StarPU's performance-model and config files are not needed: STARPU_HOME is set at run time.
  cp "$top/scripts/gpu-check.sh" "$dir/gpu-check.sh"
  du -sh "$dir" | awk '{print "gpu-check: bundle " $2 " (" $1 ")"}'
  echo "1 passed, 0 failed"
}

# ---- test ------------------------------------------------------------------------

# A node whose toolkit lacks a library StarPU links (cuBLAS, cuSPARSE,
# cuSOLVER, nvJitLink...) may still hold it elsewhere, e.g. in the pip
# wheels of its Python frameworks (site-packages/nvidia/*/lib): add the
# folder of each one ldd cannot find.
find_missing_cuda_libs() {
  local lib dir
  for lib in $(ldd "$bundle/bin/mdflow" 2>/dev/null | awk '/not found/ {print $1}'); do
    dir=$(find /usr/local /opt /usr/lib /usr/lib64 -name "$lib" -print -quit 2>/dev/null | xargs -r dirname)
    if [ -n "$dir" ]; then
      msg "$lib found in $dir"
      export LD_LIBRARY_PATH="$LD_LIBRARY_PATH:$dir"
    else
      msg "WARNING: $lib not found on this node"
    fi
  done
}

run_env() {
  if [ -n "$bundle" ]; then
    # CUDA's libraries come from the node (see phase_bundle).
    local cuda=${CUDA_HOME:-/usr/local/cuda}
    export LD_LIBRARY_PATH="$bundle/lib:$cuda/lib64:$cuda/lib:$cuda/targets/x86_64-linux/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    find_missing_cuda_libs
  else
    export LD_LIBRARY_PATH="$build/.libs:$prefix/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  fi
  # test_cuda_plugin loads the example plugin the build (or the bundle) holds.
  if [ -n "$bundle" ]; then export MDF_TEST_PLUGIN=$bundle/plugins/mdflow-example-plugin.so
  else export MDF_TEST_PLUGIN=$build/tests/plugins/.libs/mdflow-example-plugin.so; fi
  # test_cuda_eam reads LAMMPS's EAM files: the bundle's copies there.
  if [ -n "$bundle" ]; then export MDF_LAMMPS_POTENTIALS=$bundle/potentials; fi
  export STARPU_HOME=${STARPU_HOME:-$out/starpu-home} STARPU_SILENT=1 STARPU_WORKERS_NOBIND=1
  mkdir -p "$out" "$STARPU_HOME"
}

prog() {  # path of a program of the build or the bundle
  if [ -n "$bundle" ]; then echo "$bundle/bin/$(basename "$1")"; else echo "$build/$1"; fi
}

phase_test() {
  run_env
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null | sed 's/^/gpu-check: GPU: /'
  local pass=0 fail=0 skip=0 json="" rc t0 t1 res secs
  local tests=(tests/test_cuda tests/test_cuda_stage tests/test_cuda_runs tests/test_cuda_plugin tests/test_cuda_eam)
  if [ -z "$bundle" ]; then tests=(tests/test_cuda_wiring.sh "${tests[@]}"); fi
  if [ -n "${GPU_TESTS:-}" ]; then read -r -a tests <<<"$GPU_TESTS"; fi
  local wrap=()
  if [ -n "${GPU_TEST_WRAPPER:-}" ]; then read -r -a wrap <<<"$GPU_TEST_WRAPPER"; fi
  for t in "${tests[@]}"; do
    local name log
    name=$(basename "$t"); log=$out/$name.log
    t0=$(date +%s.%N)
    if [ "${t%.sh}" != "$t" ]; then
      MDF_TEST_SRCDIR=$top MDF_TEST_BUILDDIR=$build timeout "${GPU_TEST_TIMEOUT:-560}" sh "$top/$t" >"$log" 2>&1
    else
      timeout "${GPU_TEST_TIMEOUT:-560}" "${wrap[@]}" "$(prog "$t")" >"$log" 2>&1
    fi
    rc=$?
    t1=$(date +%s.%N)
    case $rc in 0) res=PASS; pass=$((pass + 1)) ;; 77) res=SKIP; skip=$((skip + 1)) ;; *) res=FAIL; fail=$((fail + 1)) ;; esac
    secs=$(awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.1f", b - a}')
    printf 'gpu-check: %-4s %-22s %6s s  (%s)\n' "$res" "$name" "$secs" "$log"
    [ "$res" = FAIL ] && tail -n 40 "$log" | sed 's/^/    /'
    json="$json${json:+,}{\"test\": \"$name\", \"result\": \"$res\", \"exit\": $rc, \"seconds\": $secs}"
  done
  echo "{\"gpu\": \"$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -n 1)\", \"tests\": [$json]}" >"$out/gpu-tests.json"
  msg "results: $out/gpu-tests.json"
  echo "$pass passed, $fail failed, $skip skipped"
  [ "$fail" -eq 0 ]
}

phase_bench() {
  run_env
  local benchdir=$top/bench
  [ -n "$bundle" ] && benchdir=$bundle/bench
  MDFLOW=$(prog mdflow) BENCH_OUT=$out timeout 590 python3 "$benchdir/gpu_bench.py"
  rc=$?
  if [ $rc -eq 0 ]; then echo "1 passed, 0 failed"; else echo "0 passed, 1 failed"; fi
  return $rc
}

case $phase in
  build) phase_build "$@" ;;
  bundle) phase_bundle "$@" ;;
  test) phase_test ;;
  bench) phase_bench ;;
  *) sed -n '2,25p' "$0"; exit 2 ;;
esac
