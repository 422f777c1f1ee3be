#!/usr/bin/env bash
# run.sh — the main job: installs what is missing, builds, and runs
# `mdflow run`, the built-in default workflow (examples/relax_md.yaml: FIRE
# relaxation then Langevin NVT MD of 256 argon systems of mixed sizes with
# inflight batching). Arguments replace `run` and go to mdflow
# (e.g. `scripts/run.sh run my.yaml`, `scripts/run.sh md --help`).
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
"$top/scripts/install-deps.sh" --build
"$top/scripts/build.sh"
build=${MDF_BUILD:-$top/build}
[ $# -gt 0 ] || set -- run
exec "$build/mdflow" "$@"
