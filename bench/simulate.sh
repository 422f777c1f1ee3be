#!/bin/sh
# How well `mdflow sched --simulate` predicts this machine: the built-in
# workflow run for real under several policies with 1 and NCORES CPU
# workers, against its simulation on the same machines. Writes
# bench/results/simulate.json and prints a table. Same environment as
# bench/run.sh (MDFLOW or MDF_BUILD, NCORES, QUICK, REPEAT, BENCH_OUT);
# POLICIES (default "lws dmda eager random").
set -eu
here=$(cd "$(dirname "$0")" && pwd)
if [ -z "${MDFLOW:-}" ]; then
    if [ -n "${MDF_BUILD:-}" ] && [ -x "$MDF_BUILD/mdflow" ]; then MDFLOW=$MDF_BUILD/mdflow
    elif [ -x "$here/../build/mdflow" ]; then MDFLOW=$here/../build/mdflow
    elif command -v mdflow >/dev/null 2>&1; then MDFLOW=$(command -v mdflow)
    else echo "bench: no mdflow program: set MDFLOW=/path/to/mdflow or MDF_BUILD=/path/to/build" >&2; exit 2
    fi
fi
NCORES=${NCORES:-$(nproc)}
export MDFLOW NCORES
exec /usr/bin/python3 "$here/simulate_bench.py"
