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

if [ -z "${MDFLOW:-}" ]; then
    if [ -n "${MDF_BUILD:-}" ] && [ -x "$MDF_BUILD/mdflow" ]; then
        MDFLOW=$MDF_BUILD/mdflow
    elif [ -n "${MDF_BUILD:-}" ] && [ -x "$MDF_BUILD/../mdflow" ]; then
        MDFLOW=$MDF_BUILD/../mdflow
    elif [ -x "$here/../mdflow" ]; then
        MDFLOW=$here/../mdflow          # an in-tree build
    elif command -v mdflow >/dev/null 2>&1; then
        MDFLOW=$(command -v mdflow)
    else
        echo "bench: no mdflow program: set MDFLOW=/path/to/mdflow or MDF_BUILD=/path/to/build" >&2
        exit 2
    fi
fi
case $MDFLOW in
    */*) d=$(cd "$(dirname "$MDFLOW")" 2>/dev/null && pwd) && MDFLOW=${d%/}/$(basename "$MDFLOW") ;;
esac
if ! "$MDFLOW" --help >/dev/null 2>&1; then
    echo "bench: $MDFLOW does not run" >&2
    exit 2
fi
LMP=${LMP:-lmp}
if ! command -v "$LMP" >/dev/null 2>&1; then
    echo "bench: no LAMMPS program '$LMP' (Debian: apt-get install lammps; or set LMP=...)" >&2
    exit 2
fi
NCORES=${NCORES:-$(nproc)}
export MDFLOW LMP NCORES
exec /usr/bin/python3 "$here/mdbench.py"
