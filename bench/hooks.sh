#!/bin/sh
# Cost of hooks (CSV log every step vs none) and FIRE against ASE's FIRE:
# writes bench/results/hooks.json and prints a table. Same environment as
# bench/run.sh (MDFLOW or MDF_BUILD, NCORES, QUICK, REPEAT, BENCH_OUT).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
. "$here/find_mdflow.sh"
exec /usr/bin/python3 "$here/hooks_bench.py"
