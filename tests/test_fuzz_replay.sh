#!/bin/sh
# Every fuzz target (tests/fuzz/) replays its seed corpus and every input a
# fuzzer ever stopped on (tests/fuzz/regressions/TARGET/: crashes, leaks,
# out-of-memory, timeouts), built without libFuzzer: a known crash fails
# the suite on every build, sanitized or not.
set -u
src=${MDF_TEST_SRCDIR:?}
bld=${MDF_TEST_BUILDDIR:?}
fail=0
for t in xyz h5 checkpoint workflow cli; do
  prog=$bld/tests/fuzz/replay_$t
  [ -x "$prog" ] || { echo "FAIL: $prog was not built"; fail=1; continue; }
  n_corpus=$(ls "$src/tests/fuzz/corpus/$t" 2>/dev/null | wc -l)
  [ "$n_corpus" -gt 0 ] || { echo "FAIL: no seed corpus in $src/tests/fuzz/corpus/$t"; fail=1; continue; }
  # The readers write nothing but their scratch copy, in TMPDIR.
  if out=$(cd "${TMPDIR:-/tmp}" && "$prog" "$src/tests/fuzz/corpus/$t" "$src/tests/fuzz/regressions/$t" 2>&1); then
    echo "$t: $(echo "$out" | tail -n 1)"
  else
    echo "FAIL: $t:"; echo "$out" | tail -n 30; fail=1
  fi
done
# The fuzzer's first finding in the checkpoint reader: an array declaring
# 512 MB with nothing stored was allocated by its extent (libFuzzer's
# -malloc_limit_mb caught it); now it is refused before any allocation.
msg=$(cd "${TMPDIR:-/tmp}" && MDF_FUZZ_VERBOSE=1 "$bld/tests/fuzz/replay_checkpoint" \
      "$src/tests/fuzz/regressions/checkpoint/huge_extent" 2>&1)
if echo "$msg" | grep -q "declares [0-9]* bytes but the file stores 0 (damaged)"; then
  echo "checkpoint: an array larger than what the file stores is refused"
else
  echo "FAIL: the huge-extent checkpoint was not refused as damaged:"; echo "$msg" | tail -n 5; fail=1
fi
# The fuzzer's finding in the HDF5 structure reader: 8,388,608 systems
# declared in a 6 KB file were allocated by their extent (386 MB).
msg=$(cd "${TMPDIR:-/tmp}" && MDF_FUZZ_VERBOSE=1 "$bld/tests/fuzz/replay_h5" "$src/tests/fuzz/regressions/h5/huge_extent" 2>&1)
if echo "$msg" | grep -q "more than its [0-9]* bytes can hold"; then
  echo "h5: extents larger than the file can hold are refused"
else
  echo "FAIL: the huge-extent structure file was not refused:"; echo "$msg" | tail -n 5; fail=1
fi
[ $fail -eq 0 ] && echo PASS
exit $fail
