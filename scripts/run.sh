#!/usr/bin/env bash
# run.sh — the main job: installs what is missing, builds, and runs mdflow on
# its built-in default workload (hundreds of argon systems of mixed sizes).
# Extra arguments go to mdflow (e.g. `scripts/run.sh md --help`).
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
"$top/scripts/install-deps.sh" --build
"$top/scripts/build.sh"
build=${MDF_BUILD:-$top/build}
exec "$build/mdflow" "$@"
