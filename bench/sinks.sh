#!/bin/sh
# Cost of snapshot sinks (HDF5 file, compressed HDF5, host memory, device
# buffer, every 100 steps) against the same run without snapshots: writes
# bench/results/sinks.json and prints a table. Needs the benchmark program
# bench/sink_bench of a build (SINK_BENCH, or MDF_BUILD, or build/).
# Environment: NCORES (default nproc), STARPU_SCHED, QUICK, REPEAT (default 3),
# BENCH_OUT, KEEP.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
if [ -z "${SINK_BENCH:-}" ]; then
    if [ -n "${MDF_BUILD:-}" ] && [ -x "$MDF_BUILD/bench/sink_bench" ]; then SINK_BENCH=$MDF_BUILD/bench/sink_bench
    elif [ -x "$here/../build/bench/sink_bench" ]; then SINK_BENCH=$here/../build/bench/sink_bench
    else echo "bench: no sink_bench program: build the tree (scripts/build.sh), or set MDF_BUILD=/path/to/build or SINK_BENCH=/path/to/sink_bench" >&2; exit 2
    fi
fi
NCORES=${NCORES:-$(nproc)}
export SINK_BENCH NCORES
exec /usr/bin/python3 "$here/sinks_bench.py"
