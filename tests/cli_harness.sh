# mdflow — what the command-line test scripts share (sourced, not run):
# the program, StarPU's settings, "ok"/"not ok" counting, a scratch folder,
# running a command, and reading extxyz frames.
#
# Set HARNESS_NAME (scratch folder prefix) before sourcing. Prints
# "ok - ..." / "not ok - ..." per check (details of a failure follow as "#"
# lines); finish prints "N passed, M failed" and exits 0 when all passed.

builddir=${MDF_TEST_BUILDDIR:-$(pwd)}
MDFLOW=$builddir/mdflow
STARPU_NCPU=2
STARPU_SILENT=1
export STARPU_NCPU STARPU_SILENT
unset MDFLOW_DATA STARPU_NCUDA STARPU_SCHED

npass=0
nfail=0
pass() { npass=$((npass + 1)); echo "ok - $1"; }
fail() {
    nfail=$((nfail + 1))
    echo "not ok - $1"
    shift
    for line in "$@"; do echo "#   $line"; done
}
# Shows a file as diagnostic lines (at most 15).
show() {
    [ -f "$2" ] || { echo "#   ($1: no such file)"; return; }
    echo "#   $1:"
    head -n 15 "$2" | sed 's/^/#     /'
}
finish() {
    echo "$npass passed, $nfail failed"
    [ "$nfail" -eq 0 ] && exit 0
    exit 1
}

if [ ! -x "$MDFLOW" ]; then
    fail "the program $MDFLOW is built"
    finish
fi

T=$(mktemp -d "${TMPDIR:-/tmp}/${HARNESS_NAME:-mdflow-test}.XXXXXX") || { echo "not ok - mktemp -d"; exit 1; }
trap 'rm -rf "$T"' EXIT
trap 'exit 1' HUP INT TERM
# StarPU's calibration files: the harness puts them in the build tree.
if [ -z "${STARPU_HOME:-}" ]; then STARPU_HOME=$T/starpu-home; export STARPU_HOME; fi
cd "$T" || exit 1

# run CMD ARGS...: stdout in $T/stdout, stderr in $T/stderr, exit status in $rc.
run() {
    "$@" >"$T/stdout" 2>"$T/stderr"
    rc=$?
}
# Fragments of $T/stderr that are missing, one per line.
missing_in_stderr() {
    for frag in "$@"; do
        grep -F -e "$frag" "$T/stderr" >/dev/null || echo "'$frag'"
    done
}
# Frames of an extxyz file, one line each: "<atom count><TAB><comment line>";
# a last line "TRUNCATED" when the file ends inside a frame.
frames() {
    awk 'state == 0 { if ($0 ~ /^[ \t]*$/) next; n = $1 + 0; state = 1; next }
         state == 1 { printf "%d\t%s\n", n, $0; left = n; state = n > 0 ? 2 : 0; next }
         state == 2 { if (--left == 0) state = 0 }
         END { if (state != 0) print "TRUNCATED" }' "$1"
}

# The Python of the reference checks (MDF_PYTHON, default /usr/bin/python3)
# in PY; the test is skipped (exit 77) unless it imports every module named
# ("h5py ase"): the Debian packages python3-h5py, python3-ase, ...
require_python() {
    PY=${MDF_PYTHON:-/usr/bin/python3}
    if ! "$PY" -c "import $(echo "$1" | sed 's/ /, /g')" 2>/dev/null; then
        echo "SKIP: $PY cannot import $1 (Debian: python3-$(echo "$1" | tr 'A-Z ' 'a-z\n' | paste -sd' ' - | sed 's/ / python3-/g'))"
        exit 77
    fi
}

# argon_clusters SEED "SIZES" JITTER: extended XYZ on standard output, one
# open argon cluster per size (atoms on an fcc lattice, 5.26 Å, each
# coordinate jittered by up to ±JITTER/2 Å; atoms past the 14 lattice sites
# on a line beside the cluster).
argon_clusters() {
    awk -v seed="$1" -v list="$2" -v jitter="$3" 'BEGIN {
    srand(seed); a = 5.26
    nc = split(list, sizes, " ")
    for (c = 1; c <= nc; c++) {
        n = sizes[c]; printf "%d\nProperties=species:S:1:pos:R:3 pbc=\"F F F\"\n", n
        k = 0
        for (i = -1; i <= 1 && k < n; i++) for (j = -1; j <= 1 && k < n; j++) for (l = -1; l <= 1 && k < n; l++) {
            if ((i + j + l) % 2 != 0) continue
            printf "Ar %.4f %.4f %.4f\n", i * a / 2 + jitter * (rand() - 0.5), j * a / 2 + jitter * (rand() - 0.5), l * a / 2 + jitter * (rand() - 0.5)
            k++
        }
        for (; k < n; k++) printf "Ar %.4f %.4f %.4f\n", 5.0 + 3.7 * (k - 13), 0.1 * c, 0.2
    }
}'
}

# argon_crystal PY SEED A JITTER VSIGMA CENTRE XYZ DATA: a periodic fcc argon
# crystal (4x4x4 cells, 256 atoms, lattice A Å) with positions jittered by
# N(0, JITTER) Å and velocities N(0, VSIGMA) Å per ASE time unit (CENTRE 1:
# less their mean), as extended XYZ (XYZ, mdflow's units) and as a LAMMPS
# data file (DATA, metal units: Å/ps), with the Python PY (numpy, ase).
argon_crystal() {
    "$1" - "$2" "$3" "$4" "$5" "$6" "$7" "$8" <<'PYEOF'
import sys
import numpy as np
from ase.lattice.cubic import FaceCenteredCubic
from ase import units
from ase.data import atomic_masses
seed, lat, jitter, vsigma = int(sys.argv[1]), float(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4])
centre, xyz, data = sys.argv[5] == "1", sys.argv[6], sys.argv[7]
rng = np.random.default_rng(seed)
a = FaceCenteredCubic("Ar", latticeconstant=lat, size=(4, 4, 4), pbc=True)
a.positions += rng.normal(0.0, jitter, a.positions.shape)
v = rng.normal(0.0, vsigma, a.positions.shape)  # Å per ASE time unit (mdflow's)
if centre:
    v -= v.mean(axis=0)
c = a.cell.array
with open(xyz, "w") as f:
    f.write("%d\nLattice=\"%s\" Properties=species:S:1:pos:R:3:velocities:R:3 pbc=\"T T T\"\n"
            % (len(a), " ".join("%.17g" % x for x in c.flat)))
    for p, w in zip(a.positions, v):
        f.write("Ar %.17g %.17g %.17g %.17g %.17g %.17g\n" % (*p, *w))
with open(data, "w") as f:
    f.write("argon\n\n%d atoms\n1 atom types\n\n0 %.17g xlo xhi\n0 %.17g ylo yhi\n0 %.17g zlo zhi\n\n"
            % (len(a), c[0, 0], c[1, 1], c[2, 2]))
    f.write("Masses\n\n1 %.17g\n\nAtoms # atomic\n\n" % atomic_masses[18])
    for i, p in enumerate(a.positions):
        f.write("%d 1 %.17g %.17g %.17g\n" % (i + 1, *p))
    f.write("\nVelocities\n\n")
    for i, w in enumerate(v):  # Å/ps
        f.write("%d %.17g %.17g %.17g\n" % (i + 1, *(w * units.fs * 1000.0)))
PYEOF
}
