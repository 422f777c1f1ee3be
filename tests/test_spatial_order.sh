#!/bin/sh
# mdflow — large systems are stored in a spatial order inside mdflow
# (dataflow/batch.c: more than 2,048 atoms, a Morton order, so that their
# slices are compact), and every output gives their atoms back in the order
# of the input. Three systems in a shuffled atom order, with a per-atom tag
# and fixed column (tests/spatial_order_check.py make): a periodic Ar/Kr
# crystal of 2,916 atoms, an open cluster of 2,808 and a 108-atom cell.
#
# - mdflow md --steps 0 --output: every atom at its input position, bit for
#   bit, with its species, mass, tag and fixed flag, in the input's order;
#   forces equal to those of the same run in input order (MDF_SPATIAL_SORT=0)
#   within 1e-12 relative, and not all bit for bit (so the order did differ);
# - 20 MD steps (velocities drawn at 40 K, keyed by the input index): final
#   structures (extxyz) and an HDF5 structure trajectory equal to the run in
#   input order within 1e-8 Å; frozen atoms at their input positions;
# - a workflow with checkpoints, killed after its first and resumed, ends
#   byte for byte as the same workflow left alone (the stored order is in
#   the checkpoint);
# - neighbour-list slots from the local density (dataflow/compute.c,
#   measured_slots): in.lj's lattice (6,912 atoms, reduced density 0.8442)
#   and an fcc slab at 1.09 with 30% vacuum, periodic in x, y and z, run 20
#   MD steps at T = 0.43 epsilon/kB with no atom beyond its slots, the
#   lattice with fewer slots than the model's bound (1.2 x 1.5/sigma^3 x the
#   list sphere + 8 = 174) and the slab with at least its solid's count (1.09
#   x the list sphere = 100).
#
# Needs /usr/bin/python3 with ASE, numpy and h5py; skipped without.
set -u

HARNESS_NAME=mdflow-spatial-order
srcdir=${MDF_TEST_SRCDIR:-$(cd "$(dirname "$0")/.." && pwd)}
# shellcheck source=tests/cli_harness.sh
. "$srcdir/tests/cli_harness.sh"
require_python "ase numpy h5py"
CHECK="$srcdir/tests/spatial_order_check.py"
unset MDF_SPATIAL_SORT

# check NAME ARGS...: spatial_order_check.py ARGS, a pass or a failure with its output.
check() {
    name=$1
    shift
    if "$PY" "$CHECK" "$@" >"$T/check.out" 2>&1; then pass "$name"; else
        fail "$name"; show "spatial_order_check.py $*" "$T/check.out"; fi
}
# md ARGS...: mdflow md on in.xyz with LJ parameters for Ar and Kr.
md() {
    "$MDFLOW" md --input in.xyz --lj-species Ar:0.0104:3.4:7.0 --lj-species Kr:0.014:3.65:7.0 --quiet "$@"
}

"$PY" "$CHECK" make in.xyz >/dev/null || { fail "the input is written"; finish; }

run md --steps 0 --output out0.xyz
[ "$rc" -eq 0 ] || { fail "md --steps 0: exit 0" "status $rc"; show stderr "$T/stderr"; }
MDF_SPATIAL_SORT=0 run md --steps 0 --output ref0.xyz
[ "$rc" -eq 0 ] || { fail "md --steps 0 in input order: exit 0" "status $rc"; show stderr "$T/stderr"; }
check "--steps 0: every atom of every system at its input position, species, mass, tag and fixed flag, in input order" \
    input in.xyz out0.xyz
check "--steps 0: forces equal to those in input order within 1e-12 relative" close out0.xyz ref0.xyz 1e-12
check "--steps 0: forces of the large systems differ in the last bits (the atoms were stored in another order)" \
    roundoff out0.xyz ref0.xyz

run md --steps 20 --dt 5 --temperature 40 --output md.xyz --trajectory traj.h5 --trajectory-every 10
[ "$rc" -eq 0 ] || { fail "20 MD steps: exit 0" "status $rc"; show stderr "$T/stderr"; }
MDF_SPATIAL_SORT=0 run md --steps 20 --dt 5 --temperature 40 --output mdref.xyz --trajectory trajref.h5 \
    --trajectory-every 10
[ "$rc" -eq 0 ] || { fail "20 MD steps in input order: exit 0" "status $rc"; show stderr "$T/stderr"; }
check "20 MD steps: final structures equal to the run in input order within 1e-8 (positions, velocities, forces)" \
    close md.xyz mdref.xyz 1e-8
check "20 MD steps: frozen atoms at their input positions, bit for bit" frozen in.xyz md.xyz
check "20 MD steps: the HDF5 trajectory (3 frames a system) equals the run in input order within 1e-8 A" \
    h5 traj.h5 trajref.h5 1e-8

# workflow NAME: NAME.yaml writing NAME.xyz, with checkpoints every 20 steps.
workflow() {
    cat >"$1.yaml" <<YAML
input: in.xyz
model: {type: lj, species: [{element: Ar, epsilon: 0.0104, sigma: 3.40, cutoff: 7.0},
                            {element: Kr, epsilon: 0.014, sigma: 3.65, cutoff: 7.0}]}
stages:
  md: {method: velocity_verlet, dt_fs: 5, entry_temperature_K: 40, steps: 600}
composition: md
sampler: {max_atoms: 20000}
output: {structures: $1.xyz}
checkpoint: {path: $1.h5, every: 20}
seed: 3
YAML
}
workflow alone
workflow killed
run "$MDFLOW" run alone.yaml
[ "$rc" -eq 0 ] && [ -s alone.xyz ] || { fail "workflow left alone: exit 0" "status $rc"; show stderr "$T/stderr"; }
"$MDFLOW" run killed.yaml >killed.stdout 2>killed.stderr &
pid=$!
waited=0
while [ ! -e killed.h5 ] && [ "$waited" -lt 600 ] && kill -0 "$pid" 2>/dev/null; do
    sleep 0.05
    waited=$((waited + 1))
done
if kill -9 "$pid" 2>/dev/null; then killed=yes; else killed=no; fi
wait "$pid" 2>/dev/null
if [ "$killed" = yes ] && [ -e killed.h5 ] && [ ! -e killed.xyz ]; then
    pass "workflow killed (SIGKILL) after its first checkpoint, before its structures"
else
    fail "workflow killed after its first checkpoint" "killed: $killed, checkpoint: $(ls killed.h5 2>&1)"
fi
run "$MDFLOW" run --resume killed.yaml
if [ "$rc" -eq 0 ] && cmp -s alone.xyz killed.xyz; then
    pass "resumed from the checkpoint: final structures equal the uninterrupted run's, byte for byte"
else
    fail "resumed from the checkpoint: final structures equal the uninterrupted run's" "status $rc, $(cmp alone.xyz killed.xyz 2>&1)"
    show stderr "$T/stderr"
fi
check "the resumed run's structures in input order (tags, species)" close killed.xyz alone.xyz 0

# slots_case NAME FILE LOW HIGH: 20 MD steps of FILE, no atom beyond its
# slots, and LOW <= slots <= HIGH.
slots_case() {
    run "$MDFLOW" md --input "$2" --lj-species Ar:1:1:2.5 --skin 0.3 --steps 20 --dt 0.02 --temperature 5000
    line=$(grep -F "largest neighbour count" "$T/stdout")
    slots=$(echo "$line" | sed -n 's/.* of \([0-9]*\) slots.*/\1/p')
    beyond=$(echo "$line" | sed -n 's/.*atoms beyond the slots \([0-9]*\).*/\1/p')
    if [ "$rc" -eq 0 ] && [ "$beyond" = 0 ] && [ "$slots" -ge "$3" ] && [ "$slots" -le "$4" ]; then
        pass "$1: $slots slots (within $3..$4), no atom beyond them"
    else fail "$1: within $3..$4 slots, no atom beyond them" "status $rc: $line"; show stderr "$T/stderr"; fi
}
"$PY" "$CHECK" make-dense slab.xyz lattice.xyz >/dev/null 2>&1 || fail "the slab and the lattice are written"
slots_case "in.lj's lattice, 6,912 atoms: slots from its density" lattice.xyz 87 173
slots_case "an fcc slab with 30% vacuum, periodic: slots from its solid's density" slab.xyz 100 174
finish
