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
. "$here/find_mdflow.sh"
command -v "${MPIRUN:-mpirun}" >/dev/null 2>&1 || { echo "bench: no mpirun (Debian: apt-get install openmpi-bin)" >&2; exit 2; }
exec /usr/bin/python3 "$here/pipe_split_bench.py"
