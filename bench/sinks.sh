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
    elif b=${MDF_BUILD:-$here/../build} && [ -f "$b/.libs/libmdflow.so" ]; then
        # Compiled here against the build's library (not part of the build: distcheck stays simple).
        SINK_BENCH=$b/sink_bench
        gcc -O2 -std=c11 -D_DEFAULT_SOURCE -I"$here/../include" $(pkg-config --cflags starpu-1.4 2>/dev/null || pkg-config --cflags starpu-1.3) \
            "$here/sink_bench.c" -o "$SINK_BENCH" -L"$b/.libs" -Wl,-rpath,"$b/.libs" -lmdflow \
            $(pkg-config --libs starpu-1.4 2>/dev/null || pkg-config --libs starpu-1.3) -lm || exit 2
    else echo "bench: no sink_bench program: build the tree (scripts/build.sh), or set MDF_BUILD=/path/to/build or SINK_BENCH=/path/to/sink_bench" >&2; exit 2
    fi
fi
NCORES=${NCORES:-$(nproc)}
export SINK_BENCH NCORES
exec /usr/bin/python3 "$here/sinks_bench.py"
