#!/bin/sh
# Pipeline placement benchmark: the relax-then-MD task (random-packed LJ
# clusters by default) as relax + md fused on every core, and as relax | md
# on two scheduling contexts and on two (and three) MPI ranks with half the
# cores each. Writes bench/results/pipe_split_random-lj.json and prints a
# table. See bench/README.md.
#
#   bench/pipe_split.sh                    # mdflow = build/mdflow
#   MDF_BUILD=/path/to/build bench/pipe_split.sh
#   QUICK=1 bench/pipe_split.sh            # smoke version (50 systems, 100 MD steps)
#
# Environment: MDFLOW, MDF_BUILD, NCORES, QUICK, REPEAT, MPIRUN, BENCH_OUT,
# BENCH_WORK, KEEP, PIPE_DATASET (random-lj or argon), PIPE_SYSTEMS,
# PIPE_MD_STEPS, SPLIT_MAX_ATOMS (see bench/pipe_split_bench.py).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
if [ -z "${MDFLOW:-}" ]; then
    if [ -n "${MDF_BUILD:-}" ] && [ -x "$MDF_BUILD/mdflow" ]; then MDFLOW=$MDF_BUILD/mdflow
    elif [ -x "$here/../build/mdflow" ]; then MDFLOW=$here/../build/mdflow
    elif command -v mdflow >/dev/null 2>&1; then MDFLOW=$(command -v mdflow)
    else echo "bench: no mdflow program: set MDFLOW=/path/to/mdflow or MDF_BUILD=/path/to/build" >&2; exit 2
    fi
fi
case $MDFLOW in
    */*) d=$(cd "$(dirname "$MDFLOW")" 2>/dev/null && pwd) && MDFLOW=${d%/}/$(basename "$MDFLOW") ;;
esac
command -v "${MPIRUN:-mpirun}" >/dev/null 2>&1 || { echo "bench: no mpirun (Debian: apt-get install openmpi-bin)" >&2; exit 2; }
NCORES=${NCORES:-$(nproc)}
export MDFLOW NCORES
exec /usr/bin/python3 "$here/pipe_split_bench.py"
