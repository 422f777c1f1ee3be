#!/bin/sh
# mdflow — extended-XYZ round trips with ASE (tests/xyz_roundtrip_check.py
# writes the inputs with ASE 3.22 and judges the outputs with ase.io.read):
# ASE's FixAtoms (move_mask:L:1) and FixCartesian (move_mask:L:3) keep their
# fully fixed atoms at exactly their input positions in `mdflow md` (frozen
# automatically: the input has the column), `mdflow relax --freeze` and
# `mdflow run` (a relax + md workflow with entry velocities), and the output
# carries the same constraint back; initial charges, tags and custom float
# and int arrays come out equal; ASE's get_stress() and
# get_potential_energy() of the output equal ASE's LennardJones at its
# positions; velocities_unit names ASE's velocity unit. A workflow stopped
# by max_steps with systems in flight and resumed from its checkpoint keeps
# the extra columns too. mdflow reads its own output back; a
# velocities_unit other than ASE's is an error naming the file and line.
#
# Needs /usr/bin/python3 with ASE; skipped without.
set -u

HARNESS_NAME=mdflow-xyzrt
srcdir=${MDF_TEST_SRCDIR:-$(cd "$(dirname "$0")/.." && pwd)}
# shellcheck source=tests/cli_harness.sh
. "$srcdir/tests/cli_harness.sh"
require_python "ase numpy"
CHECK=$srcdir/tests/xyz_roundtrip_check.py
LJ="--lj-epsilon 0.0104 --lj-sigma 3.4 --lj-cutoff 8.5 --lj-shift"

# judge NAME KIND OUT [md]: the checker's verdict on OUT against in_KIND.xyz.
judge() {
    name=$1 kind=$2 out=$3
    shift 3
    if [ "$rc" -ne 0 ]; then
        fail "$name: exit 0" "exit status $rc"; show stderr "$T/stderr"; return
    fi
    "$PY" "$CHECK" check "$kind" "in_$kind.xyz" "$out" 0.0104 3.4 8.5 "$@" >"$T/check" 2>&1
    if [ $? -eq 0 ]; then pass "$name: $(tail -n 1 "$T/check")"; else
        fail "$name" "$(head -n 12 "$T/check" | tr '\n' ';')"; fi
}

# Each column once in every frame's Properties (the input's extras are not
# written twice next to what mdflow writes).
unique_columns() {
    dups=$(frames "$2" | sed -n 's/.*Properties=\([^ ]*\).*/\1/p' |
        awk -F: '{ delete seen; for (i = 1; i <= NF; i += 3) if (seen[$i]++) print $i }' | sort -u)
    if [ -z "$dups" ]; then pass "$1: every column once"; else fail "$1: every column once" "twice: $dups"; fi
}

for kind in l1 l3; do
    "$PY" "$CHECK" make "$kind" "in_$kind.xyz" || { fail "ASE writes in_$kind.xyz"; continue; }
    # shellcheck disable=SC2086
    run "$MDFLOW" md --input "in_$kind.xyz" --output "md_$kind.xyz" --steps 20 --ensemble langevin \
        --temperature 50 --quiet $LJ
    judge "md, move_mask $kind (frozen automatically)" "$kind" "md_$kind.xyz" md
    unique_columns "md, move_mask $kind" "md_$kind.xyz"
    # shellcheck disable=SC2086
    run "$MDFLOW" relax --input "in_$kind.xyz" --output "relax_$kind.xyz" --freeze --max-steps 30 $LJ
    judge "relax --freeze, move_mask $kind" "$kind" "relax_$kind.xyz"
done

# An atom fixed in some directions only (FixCartesian, mask T F T): mdflow
# freezes whole atoms, so it refuses the input instead of breaking the
# constraint in silence.
"$PY" "$CHECK" make partial in_partial.xyz || fail "ASE writes in_partial.xyz"
# shellcheck disable=SC2086
run "$MDFLOW" md --input in_partial.xyz --output partial.xyz --steps 5 --quiet $LJ
miss=$(missing_in_stderr "system 0, atom 5" "move_mask 'T F T'" "F F F")
if [ "$rc" -eq 2 ] && [ -z "$miss" ] && [ ! -e partial.xyz ]; then
    pass "a partial FixCartesian: exit 2 naming the system, the atom and the fix"
else fail "a partial FixCartesian: exit 2 naming the system, the atom and the fix" "exit $rc, missing $miss"
    show stderr "$T/stderr"; fi

# mdflow reads back what it wrote (velocities_unit, the extras, the mask).
# shellcheck disable=SC2086
run "$MDFLOW" md --input md_l1.xyz --output again.xyz --steps 5 --quiet $LJ
if [ "$rc" -eq 0 ] && [ "$(frames again.xyz | wc -l)" -eq 2 ]; then pass "md reads its own output back"; else
    fail "md reads its own output back" "exit status $rc"; show stderr "$T/stderr"; fi

# A velocities column in another unit would be misread: refused.
sed '2s/$/ velocities_unit=Angstrom\/fs/' md_l1.xyz >wrong_unit.xyz
# shellcheck disable=SC2086
run "$MDFLOW" md --input wrong_unit.xyz --output wrong.xyz --steps 1 --quiet $LJ
miss=$(missing_in_stderr "wrong_unit.xyz:2" "velocities_unit=Angstrom/fs" "sqrt(eV/amu)")
if [ "$rc" -eq 2 ] && [ -z "$miss" ]; then pass "velocities_unit=Angstrom/fs: exit 2, file:line, the unit to use"
else fail "velocities_unit=Angstrom/fs: exit 2, file:line, the unit to use" "exit $rc, missing $miss"
    show stderr "$T/stderr"; fi

# workflow NAME MAX_STEPS: relax + md of in_l1.xyz with checkpoints.
workflow() {
    cat >"$1.yaml" <<EOF
input: in_l1.xyz
model: {type: lj, shift: true, species: [{element: Ar, epsilon: 0.0104, sigma: 3.40, cutoff: 8.5}]}
stages:
  relax: {method: fire, fmax: 0.01, step_budget: 40, params: {dt: 0.1, maxstep: 0.2}}
  md: {method: langevin, dt_fs: 2, temperature_K: 40, entry_temperature_K: 40, steps: 30}
composition: relax + md
sampler: {max_atoms: 1000, refill_interval: 5}
output: {structures: $1.xyz}
checkpoint: {path: $1.ckpt.h5, every: 10}
max_steps: $2
seed: 3
EOF
}
workflow alone 1000
run "$MDFLOW" run alone.yaml
judge "mdflow run (relax + md, entry velocities)" l1 alone.xyz md
# Stopped at step 20 with both systems in flight, then resumed.
workflow resumed 20
run "$MDFLOW" run resumed.yaml
if [ "$rc" -eq 0 ] && grep -q 'mdf_status=[01] ' resumed.xyz; then pass "run stopped at step 20 with systems in flight"
else fail "run stopped at step 20 with systems in flight" "exit $rc"; show stderr "$T/stderr"; fi
workflow resumed 1000
run "$MDFLOW" run --resume resumed.yaml
judge "mdflow run --resume (systems in flight at the checkpoint)" l1 resumed.xyz md
if cmp -s alone.xyz resumed.xyz; then pass "resumed run's output equals the uninterrupted run's"; else
    fail "resumed run's output equals the uninterrupted run's" "$(cmp alone.xyz resumed.xyz 2>&1 | head -n 1)"; fi

finish
