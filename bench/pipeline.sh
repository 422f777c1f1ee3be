#!/bin/sh
# Relax-then-MD pipeline benchmark: 1,000 argon clusters of 13-147 atoms,
# FIRE to fmax 0.05 eV/Å then 1,000 Langevin steps each, four ways:
# (a) mdflow run (fused + inflight), (b) mdflow relax then mdflow md,
# (c) ASE and (d) LAMMPS one system at a time. Writes
# bench/results/pipeline.json and prints a table. See bench/README.md.
#
#   bench/pipeline.sh                          # mdflow = build/mdflow
#   MDF_BUILD=/path/to/build bench/pipeline.sh
#   QUICK=1 bench/pipeline.sh                  # smoke version (50 systems, 100 MD steps)
#
# Environment as bench/run.sh (MDFLOW, MDF_BUILD, NCORES, QUICK, REPEAT, LMP,
# MPIRUN, LAMMPS_MODE, BENCH_OUT, BENCH_WORK, KEEP) plus PIPE_SYSTEMS,
# PIPE_MD_STEPS, PIPE_MAX_ATOMS, PIPE_REFILL, PIPE_ASE_SYSTEMS,
# PIPE_LAMMPS_SYSTEMS, ASE_PYTHON (see bench/pipeline_bench.py).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
. "$here/find_mdflow.sh"
if ! "$MDFLOW" run --help >/dev/null 2>&1; then
    echo "bench: warning: $MDFLOW has no 'run' command: case (a) will fail" >&2
fi
need_lammps
exec /usr/bin/python3 "$here/pipeline_bench.py"
