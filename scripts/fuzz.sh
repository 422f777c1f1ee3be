#!/usr/bin/env bash
# fuzz.sh — runs the libFuzzer targets of tests/fuzz/ (see its README.md).
#
#   scripts/fuzz.sh [SECONDS] [TARGET...]   # default: 60 s, every target
#
# Installs clang and libclang-rt-14-dev when missing (Debian, idempotent),
# builds libmdflow with clang under -fsanitize=fuzzer-no-link,address,undefined
# in build-fuzz/ (MDF_FUZZ_BUILD), links each target with libFuzzer, runs it
# for SECONDS on a working corpus seeded from tests/fuzz/corpus/TARGET, and
# prints one row per target (executions, coverage, findings) and one closing
# line "N passed, N failed". Findings go to build-fuzz/fuzz/findings/TARGET/.
set -uo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
secs=${1:-60}
[ $# -gt 0 ] && shift
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(xyz h5 checkpoint workflow cli)
build=${MDF_FUZZ_BUILD:-$top/build-fuzz}
out=$build/fuzz
msg() { echo "fuzz: $*"; }
die() { echo "fuzz: ERROR: $*" >&2; exit 1; }

# ---- tools -------------------------------------------------------------------
missing=()
for p in clang libclang-rt-14-dev; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  sudo=""
  [ "$(id -u)" -ne 0 ] && sudo=sudo
  msg "installing ${missing[*]}"
  $sudo apt-get update -q >/dev/null && DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q --no-install-recommends "${missing[@]}" >/dev/null ||
    die "could not install ${missing[*]}"
fi
"$top/scripts/install-deps.sh" --build >/dev/null || die "scripts/install-deps.sh failed"

# ---- build ---------------------------------------------------------------------
san="-fsanitize=address,undefined -fno-sanitize-recover=undefined"
mkdir -p "$build"
MDF_BUILD=$build CC=clang CFLAGS="-O1 -g -fno-omit-frame-pointer -fsanitize=fuzzer-no-link $san" \
  LDFLAGS="$san" MDF_CONFIGURE_ARGS="--disable-tests" "$top/scripts/build.sh" >"$build/fuzz-build.log" 2>&1 ||
  { tail -n 30 "$build/fuzz-build.log"; die "building libmdflow with clang failed (log: $build/fuzz-build.log)"; }
mkdir -p "$out"
cflags=(-O1 -g -fno-omit-frame-pointer -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined
        -std=c11 -D_DEFAULT_SOURCE -DHAVE_CONFIG_H -I"$build" -I"$top/include" -I"$top"
        -DMDF_PKGDATADIR=\"/nonexistent\" -DMDF_SRCDIR=\"$top\")
pc=$(cd "$build" && sed -n 's/^STARPU_CFLAGS = //p; s/^HDF5_CFLAGS = //p; s/^YAML_CFLAGS = //p' Makefile | tr '\n' ' ')
libs=$(cd "$build" && sed -n 's/^STARPU_LIBS = //p; s/^HDF5_LIBS = //p; s/^YAML_LIBS = //p' Makefile | tr '\n' ' ')
# The program's sources but its main (Makefile.am's MDF_TOOLS).
mapfile -t tools < <(sed -n '/^MDF_TOOLS = /,/[^\\]$/p' "$top/Makefile.am" | tr ' \t\\' '\n\n\n' |
  grep '^tools/.*\.c$' | sed "s|^|$top/|")
for t in "${targets[@]}"; do
  src=$top/tests/fuzz/fuzz_$t.c
  [ -f "$src" ] || die "no target $t ($src)"
  extra=()
  case $t in workflow|cli) extra=("${tools[@]}") ;; esac
  # shellcheck disable=SC2086  # pkg-config flag lists
  clang "${cflags[@]}" $pc "$src" "${extra[@]}" -o "$out/fuzz_$t" -L"$build/.libs" -Wl,-rpath,"$build/.libs" \
    -lmdflow $libs -lm -lpthread >"$out/build_$t.log" 2>&1 || { cat "$out/build_$t.log"; die "building fuzz_$t failed"; }
done

# ---- run -------------------------------------------------------------------------
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:allocator_may_return_null=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
export STARPU_SILENT=1
pass=0 fail=0 json=""
printf 'fuzz: %-11s %8s %12s %10s %7s %8s  %s\n' target seconds executions exec/s cov features findings
for t in "${targets[@]}"; do
  work=$out/corpus/$t findings=$out/findings/$t
  rm -rf "$findings" # a finding of an earlier run is not this run's
  mkdir -p "$work" "$findings"
  log=$out/run_$t.log
  # Readers' scratch files go to a private TMPDIR (fuzz.h).
  tmp=$(mktemp -d)
  (cd "$out" && TMPDIR=$tmp "$out/fuzz_$t" "$work" "$top/tests/fuzz/corpus/$t" -dict="$top/tests/fuzz/mdflow.dict" \
     -max_total_time="$secs" -rss_limit_mb=2048 -malloc_limit_mb=256 -timeout=10 -max_len=65536 -print_final_stats=1 \
     -artifact_prefix="$findings/" >"$log" 2>&1)
  rc=$?
  rm -rf "$tmp"
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -n 1)
  cov=$(grep -o 'cov: [0-9]*' "$log" | tail -n 1 | awk '{print $2}')
  ft=$(grep -o 'ft: [0-9]*' "$log" | tail -n 1 | awk '{print $2}')
  nfind=$(find "$findings" -type f | wc -l)
  printf 'fuzz: %-11s %8s %12s %10s %7s %8s  %s\n' "$t" "$secs" "${execs:-?}" "${rate:-?}" "${cov:-?}" "${ft:-?}" "$nfind"
  if [ "$rc" -eq 0 ] && [ "$nfind" -eq 0 ]; then pass=$((pass + 1)); else
    fail=$((fail + 1))
    grep -m 1 -E 'ERROR: |SUMMARY: |==ERROR|runtime error' "$log" | sed 's/^/    /'
    msg "$t: see $log; inputs in $findings (keep them in tests/fuzz/regressions/$t/ with the fix)"
  fi
  json="$json${json:+,}{\"target\": \"$t\", \"seconds\": $secs, \"executions\": ${execs:-0}, \"exec_per_s\": ${rate:-0}, \"coverage\": ${cov:-0}, \"features\": ${ft:-0}, \"findings\": $nfind, \"exit\": $rc}"
done
echo "{\"targets\": [$json]}" >"$out/summary.json"
msg "summary: $out/summary.json"
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
