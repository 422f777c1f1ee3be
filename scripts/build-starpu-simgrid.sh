#!/usr/bin/env bash
# build-starpu-simgrid.sh - build and install StarPU 1.4 with SimGrid from
# Debian's source package (default prefix /opt/starpu-1.4-simgrid), for
# `mdflow sched --simulate`.  Same arguments, environment and idempotence as
# build-starpu-cuda.sh, which does the work.
set -euo pipefail
MDF_STARPU_FLAVOUR=simgrid exec "$(dirname "$0")/build-starpu-cuda.sh" "$@"
