#!/bin/sh
# How well `mdflow sched --simulate` predicts this machine: the built-in
# workflow run for real under several policies with 1 and NCORES CPU
# workers, against its simulation on the same machines. Writes
# bench/results/simulate.json and prints a table. Same environment as
# bench/run.sh (MDFLOW or MDF_BUILD, NCORES, QUICK, REPEAT, BENCH_OUT);
# POLICIES (default "lws dmda eager random").
set -eu
here=$(cd "$(dirname "$0")" && pwd)
. "$here/find_mdflow.sh"
exec /usr/bin/python3 "$here/simulate_bench.py"
