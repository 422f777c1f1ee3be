#!/bin/sh
# mdflow tests — pipelines over MPI ranks through the C API (tests/pipe_mpi.c
# under mpirun, one CPU worker per rank): relax | md on 2 and 3 ranks
# against the fused run, back-pressure, a failing stage, a killed rank, a
# system too large for a stage. Exits 77 (skipped) only when mdflow was
# built without StarPU-MPI; a missing mpirun is a failure
# (scripts/install-deps.sh installs openmpi-bin).
set -u
builddir=${MDF_TEST_BUILDDIR:-$(pwd)}
prog=$builddir/tests/pipe_mpi
if [ ! -x "$prog" ]; then
    echo "SKIP: mdflow was built without StarPU-MPI (no $prog)"
    exit 77
fi
command -v mpirun >/dev/null || { echo "FAIL: no mpirun (install openmpi-bin)"; exit 1; }
export STARPU_NCPU=1 STARPU_WORKERS_NOBIND=1 STARPU_SILENT=1
scale=${MDF_TEST_TIME_SCALE:-1}
run() { # np timeout-seconds args...
    np=$1 limit=$(($2 * scale))
    shift 2
    timeout "$limit" mpirun --allow-run-as-root --oversubscribe -np "$np" "$prog" "$@" >out.txt 2>&1
}
fails=0
ok() { echo "ok: $*"; }
bad() { echo "FAIL: $*"; sed 's/^/    /' out.txt; fails=$((fails + 1)); }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work" || exit 1

# 1. relax | md over 2 ranks, then 3 (md on ranks 1 and 2, sharing the
#    stream), then 3 with md placed on [1, 2] explicitly: every system
#    equal to the fused run (positions and energies, tolerance 1e-7 Å and
#    1e-9 relative; bit for bit seen).
for case in "2" "3" "3 1,2"; do
    set -- $case
    if run "$1" 120 match ${2:-} && [ "$(grep -c 'rank [0-9]*: ok' out.txt)" = "$1" ] &&
        grep -q 'pipeline over ranks vs fused: 24 systems' out.txt; then
        ok "np $1 ${2:+md on $2 }matches the fused run: $(grep 'vs fused' out.txt | sed 's/.*systems, //')"
    else bad "np $1 ${2:+md on $2 }relax | md against the fused run"; fi
done

# 2. Back-pressure: md takes one or two systems at a time with an inbox of 2;
#    relax must be held back, the inbox never above its capacity.
for np in 2 3; do
    if run "$np" 180 backpressure && [ "$(grep -c 'rank [0-9]*: ok' out.txt)" = "$np" ]; then
        ok "np $np back-pressure: $(grep 'stage relax' out.txt | sed 's/.*blocked/blocked/;s/, inbox.*//')"
    else bad "np $np back-pressure"; fi
done

# 3. A NaN in md (on rank 1; with 3 ranks on 1 or 2): every rank stops,
#    naming the stage, the rank and the cause, within seconds (no hang: the
#    limit is 60 s).
for np in 2 3; do
    t0=$(date +%s)
    run "$np" 60 fail
    rc=$?
    dt=$(($(date +%s) - t0))
    if [ $rc -ne 124 ] && [ "$(grep -c "stopped as expected .*stage 'md' on rank [12] failed: NaN" out.txt)" = "$np" ]; then
        ok "np $np: a failing stage stops every rank in ${dt} s"
    else bad "np $np: a failing stage (rc $rc)"; fi
done

# 4. Rank 1 is killed (SIGKILL) during the run: the job ends, non-zero,
#    with mpirun naming the rank, not a hang.
t0=$(date +%s)
run 2 60 kill
rc=$?
dt=$(($(date +%s) - t0))
if [ $rc -ne 0 ] && [ $rc -ne 124 ] && grep -q 'rank 1 .*signal 9' out.txt; then
    ok "a killed rank ends the job (exit $rc) in ${dt} s: $(grep -o 'process rank 1.*' out.txt | head -n 1)"
else bad "a killed rank (rc $rc)"; fi

# 5. A system larger than md's budget: every rank refuses before any work.
if run 3 60 refuse; [ "$(grep -c "stopped as expected .*system 2 (id 2) has 43 atoms: stage 'md'" out.txt)" = 3 ]; then
    ok "a system too large for md's budget is refused up front on every rank"
else bad "a system too large for md's budget"; fi

[ $fails -eq 0 ] || { echo "$fails check(s) failed"; exit 1; }
echo "all pipeline MPI checks passed"
