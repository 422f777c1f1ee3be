#!/bin/sh
# mdflow vs LAMMPS benchmark: runs every case on this machine, writes
# bench/results/*.json and prints a table. See bench/README.md.
#
#   MDF_BUILD=/path/to/build bench/run.sh     # mdflow = $MDF_BUILD/mdflow
#   MDFLOW=/path/to/mdflow NCORES=4 bench/run.sh
#   QUICK=1 bench/run.sh                      # smoke version (CI)
#
# Environment: MDFLOW, MDF_BUILD, NCORES (default: nproc), QUICK, REPEAT
# (best of N, default 1), LMP (default: lmp), MPIRUN (default: mpirun),
# LAMMPS_MODE (mpi|omp|serial; default: detect and take the faster),
# BENCH_OUT (default: bench/results), BENCH_WORK / KEEP=1 (scratch files).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
. "$here/find_mdflow.sh"
need_lammps
exec /usr/bin/python3 "$here/mdbench.py"
