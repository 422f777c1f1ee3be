# mdflow benchmarks — what every bench/*.sh launcher shares (sourced, not
# run): finds the mdflow program and checks that it runs, and checks for
# LAMMPS where a benchmark needs it. Set `here` (the bench folder) first.
#
# MDFLOW, else $MDF_BUILD/mdflow, $MDF_BUILD/../mdflow, an in-tree build
# (bench/../mdflow), bench/../build/mdflow, then mdflow on PATH; made
# absolute (the Python drivers change folder); a build tree's libtool
# wrapper is replaced by the program it runs (LD_LIBRARY_PATH exported). Exits 2 with the way out
# when there is none or it does not run. Exports MDFLOW and NCORES
# (default: nproc).

if [ -z "${MDFLOW:-}" ]; then
    if [ -n "${MDF_BUILD:-}" ] && [ -x "$MDF_BUILD/mdflow" ]; then MDFLOW=$MDF_BUILD/mdflow
    elif [ -n "${MDF_BUILD:-}" ] && [ -x "$MDF_BUILD/../mdflow" ]; then MDFLOW=$MDF_BUILD/../mdflow
    elif [ -x "$here/../mdflow" ]; then MDFLOW=$here/../mdflow
    elif [ -x "$here/../build/mdflow" ]; then MDFLOW=$here/../build/mdflow
    elif command -v mdflow >/dev/null 2>&1; then MDFLOW=$(command -v mdflow)
    else echo "bench: no mdflow program: set MDFLOW=/path/to/mdflow or MDF_BUILD=/path/to/build" >&2; exit 2
    fi
fi
case $MDFLOW in
    */*) d=$(cd "$(dirname "$MDFLOW")" 2>/dev/null && pwd) && MDFLOW=${d%/}/$(basename "$MDFLOW") ;;
esac
# A build tree's mdflow is libtool's wrapper script, which runs a shell, sed
# and ls before the program (50 ms a run here): time the program itself, as
# an installed mdflow is, with the build's library on the loader's path.
if head -c 2 "$MDFLOW" 2>/dev/null | grep -q '^#!' && grep -q 'libtool' "$MDFLOW" 2>/dev/null &&
    [ -x "$(dirname "$MDFLOW")/.libs/$(basename "$MDFLOW")" ]; then
    lt_libs=$(dirname "$MDFLOW")/.libs
    if LD_LIBRARY_PATH="$lt_libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" "$lt_libs/$(basename "$MDFLOW")" --help \
        >/dev/null 2>&1; then
        export LD_LIBRARY_PATH="$lt_libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
        MDFLOW=$lt_libs/$(basename "$MDFLOW")
    fi
fi
if ! "$MDFLOW" --help >/dev/null 2>&1; then
    echo "bench: $MDFLOW does not run" >&2
    exit 2
fi
NCORES=${NCORES:-$(nproc)}
export MDFLOW NCORES

# need_lammps: LMP (default lmp) must be a program; exported.
need_lammps() {
    LMP=${LMP:-lmp}
    if ! command -v "$LMP" >/dev/null 2>&1; then
        echo "bench: no LAMMPS program '$LMP' (Debian: apt-get install lammps; or set LMP=...)" >&2
        exit 2
    fi
    export LMP
}
