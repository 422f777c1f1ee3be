#!/usr/bin/env bash
# test.sh — the test suite: installs what is missing, builds, runs
# `make check` and prints one closing line "N passed, N failed, N skipped".
#   MDF_CUDA=1     against the CUDA-enabled StarPU 1.4 (see build.sh)
#   MDF_SANITIZE=1 build with AddressSanitizer and UBSan (own build dir)
set -uo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
"$top/scripts/install-deps.sh" || exit 1
if [ "${MDF_SANITIZE:-0}" = 1 ]; then
  export MDF_BUILD=${MDF_BUILD:-$top/build-asan}
  export CFLAGS="-O1 -g -fsanitize=address,undefined -fno-omit-frame-pointer"
  export LDFLAGS="-fsanitize=address,undefined"
  # StarPU's own threads leak small buffers at exit; we check our code.
  export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=0} UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
fi
"$top/scripts/build.sh" || exit 1
cuda=${MDF_CUDA:-0}
suffix=""
[ "$cuda" = 1 ] && suffix=-cuda
build=${MDF_BUILD:-$top/build$suffix}
if [ "$cuda" = 1 ]; then
  export LD_LIBRARY_PATH="${STARPU_CUDA_PREFIX:-/opt/starpu-1.4-cuda}/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
fi
cd "$build"
make -j"$(nproc)" check >/dev/null 2>&1
status=$?
# Show every test's result and the log of those that failed.
for trs in $(find tests -name '*.trs' | sort); do
  res=$(sed -n 's/^:test-result: //p' "$trs")
  echo "${res:-UNKNOWN}: ${trs%.trs}"
  if [ "$res" = FAIL ] || [ "$res" = ERROR ]; then sed 's/^/    /' "${trs%.trs}.log"; fi
done
pass=$(grep -h '^:test-result: PASS' tests/*.trs 2>/dev/null | wc -l)
fail=$(grep -h -E '^:test-result: (FAIL|ERROR|XPASS)' tests/*.trs 2>/dev/null | wc -l)
skip=$(grep -h '^:test-result: SKIP' tests/*.trs 2>/dev/null | wc -l)
# cmocka's own counts, for the record.
cases=$(grep -h '^\[  PASSED  \]' tests/*.log 2>/dev/null | awk '{s += $4} END {print s + 0}')
echo "test cases passed inside the programs: $cases"
echo "$pass passed, $fail failed, $skip skipped"
[ "$status" -eq 0 ] && [ "$fail" -eq 0 ]
