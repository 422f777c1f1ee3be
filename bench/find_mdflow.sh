# mdflow benchmarks — what every bench/*.sh launcher shares (sourced, not
# run): finds the mdflow program and checks that it runs, and checks for
# LAMMPS where a benchmark needs it. Set `here` (the bench folder) first.
#
# MDFLOW, else $MDF_BUILD/mdflow, $MDF_BUILD/../mdflow, an in-tree build
# (bench/../mdflow), bench/../build/mdflow, then mdflow on PATH; made
# absolute (the Python drivers change folder). Exits 2 with the way out
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
