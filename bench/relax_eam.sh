#!/bin/sh
# Batched EAM relaxation benchmark: 1,000 perturbed Cu fcc cells of 8-256
# atoms (Cu_u3.eam), fixed-cell FIRE to fmax 0.01 eV/Å: mdflow relax (all at
# once) against LAMMPS and ASE (one system at a time) on the same cores.
# Writes bench/results/relax_eam.json and relax_eam.txt and prints a table.
# See bench/README.md.
#
#   bench/relax_eam.sh                          # mdflow = build/mdflow
#   MDF_BUILD=/path/to/build bench/relax_eam.sh
#   QUICK=1 bench/relax_eam.sh                  # smoke version (60 cells, 4 for ASE)
#
# Environment as bench/run.sh (MDFLOW, MDF_BUILD, NCORES, QUICK, REPEAT, LMP,
# MPIRUN, BENCH_OUT, BENCH_WORK, KEEP) plus RELAX_SYSTEMS, RELAX_FMAX,
# RELAX_MAX_STEPS, RELAX_ASE_SYSTEMS, RELAX_LAMMPS_SYSTEMS, RELAX_LAMMPS_WAY,
# EAM_POTENTIAL, ASE_PYTHON (see bench/relax_eam_bench.py).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
. "$here/find_mdflow.sh"
need_lammps
exec /usr/bin/python3 "$here/relax_eam_bench.py"
