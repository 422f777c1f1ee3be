#!/bin/sh
# mdflow — trajectories from the command line: mdflow md and relax with
# --trajectory FILE --trajectory-every N, in each form (per-system H5MD files
# with {id}, one shared H5MD file, HDF5 structures, extended XYZ), checked by
# tests/trajectory_check.py with h5py, ASE and MDAnalysis: frames at steps 0,
# N, 2N, ... and at each system's last step (20 MD steps every 5: 0 5 10 15
# 20; 22 steps: also 22; a relaxation: up to the step it converged at, or its
# last step), the last frame equal to --output, times step x dt, velocities
# in Å/ps, MDAnalysis's box dimensions equal to ASE's cellpar() of a
# triclinic input, masses and elements of the input through docs/hdf5.md's
# recipe; the default intervals (md 10, relax 1); unknown names, intervals
# and a trajectory over the input refused with status 2.
#
# Needs /usr/bin/python3 with h5py, ASE and MDAnalysis; skipped without.
set -u

HARNESS_NAME=mdflow-trajectory
srcdir=${MDF_TEST_SRCDIR:-$(cd "$(dirname "$0")/.." && pwd)}
# shellcheck source=tests/cli_harness.sh
. "$srcdir/tests/cli_harness.sh"
require_python "h5py ase MDAnalysis"
CHECK="$srcdir/tests/trajectory_check.py"

# Two periodic systems: a triclinic Ar cell (one atom of mass 35.967545, as
# 36Ar) and an orthorhombic Ar/Kr cell, rattled.
cat >make_input.py <<'PYEOF'
import ase.io, numpy as np
from ase.build import bulk
a = bulk("Ar", "fcc", a=5.26) * (2, 2, 2)
a.set_cell(a.cell[:] + np.array([[0, 0, 0], [0.8, 0, 0], [0.3, 0.5, 0]]), scale_atoms=True)
m = a.get_masses(); m[3] = 35.967545; a.set_masses(m)
b = bulk("Ar", "fcc", a=5.30, cubic=True) * (2, 1, 1)
b[0].symbol = "Kr"
b.set_masses(b.get_masses())
for i, x in enumerate((a, b)):
    x.rattle(0.05, seed=i + 1)
ase.io.write("in.xyz", [a, b], format="extxyz")
PYEOF
"$PY" make_input.py || { fail "ASE writes the input"; finish; }
# mdflow_lj CMD ARGS...: mdflow CMD with Lennard-Jones parameters for Ar and Kr
mdflow_lj() {
    sub=$1
    shift
    "$MDFLOW" "$sub" --lj-species Ar:0.0104:3.4:7.0 --lj-species Kr:0.014:3.65:7.0 "$@"
}

# traj_case CMD FORM TRAJ EVERY CHECKER_DT ARGS...: runs mdflow CMD with
# --trajectory TRAJ --trajectory-every EVERY and checks the trajectory;
# EVERY "default=N": without --trajectory-every, expecting N.
traj_case() {
    cmd=$1 form=$2 traj=$3 every=$4 dt=$5
    shift 5
    rm -f out.xyz
    case $every in
    default=*)
        every=${every#default=}
        what="mdflow $cmd $* --trajectory $traj (every $every steps by default)"
        run mdflow_lj "$cmd" --input in.xyz --output out.xyz --trajectory "$traj" "$@" ;;
    *)
        what="mdflow $cmd $* --trajectory $traj --trajectory-every $every"
        run mdflow_lj "$cmd" --input in.xyz --output out.xyz --trajectory "$traj" --trajectory-every "$every" "$@" ;;
    esac
    if [ "$rc" -ne 0 ]; then
        fail "$what" "exit status $rc"
        show stderr "$T/stderr"
        return
    fi
    run "$PY" "$CHECK" "$form" "$traj" in.xyz out.xyz "$dt" "$every" "$cmd"
    if [ "$rc" -eq 0 ]; then pass "$what: $(tail -n 1 "$T/stdout")"
    else fail "$what" "$(grep -v xdrlib "$T/stderr" | tail -n 3)"; fi
}

for t in "split traj_{id}.h5md" "shared traj.h5md" "xyz traj.xyz" "h5 traj.h5"; do
    # shellcheck disable=SC2086
    set -- $t
    traj_case md "$1" "$2" 5 2 --steps 20 --dt 2 --temperature 60 --quiet
done
# 20 steps every 5 are the 5 frames 0 5 10 15 20 (the checker's rule, spelt out)
run "$PY" -c 'import h5py; f = h5py.File("traj_1.h5md", "r"); print(f["particles/trajectory/position/step"][:].tolist())'
if [ "$(cat "$T/stdout")" = "[0, 5, 10, 15, 20]" ]; then pass "md --steps 20 --trajectory-every 5: steps 0 5 10 15 20"
else fail "md --steps 20 --trajectory-every 5: steps 0 5 10 15 20" "got $(cat "$T/stdout") $(tail -n 1 "$T/stderr")"; fi
# the last step, 22, is not a multiple of 5: a frame of its own
traj_case md xyz traj22.xyz 5 2 --steps 22 --dt 2 --temperature 60 --quiet
run "$PY" -c 'import ase.io; print(sorted({a.info["mdf_step"] for a in ase.io.read("traj22.xyz", ":")}))'
if [ "$(cat "$T/stdout")" = "[0, 5, 10, 15, 20, 22]" ]; then pass "md --steps 22 --trajectory-every 5: steps 0 5 10 15 20 22"
else fail "md --steps 22 --trajectory-every 5: steps 0 5 10 15 20 22" "got $(cat "$T/stdout")"; fi

# The default intervals: md 10, relax 1 (as --log-every)
traj_case md xyz default_md.xyz default=10 2 --steps 20 --dt 2 --temperature 60 --quiet
traj_case relax xyz default_relax.xyz default=1 1 --max-steps 30

# Relaxations: the first system converges at step 0, the second later (30
# steps) or not at all (6 steps: its frames end at step 6, status 0).
traj_case relax split "rtraj_{id}.h5md" 4 1 --max-steps 30
traj_case relax xyz rtraj.xyz 4 1 --max-steps 30
traj_case relax shared rtraj6.h5md 4 1 --max-steps 6
if grep -F 'mdf_step=6 mdf_status=0' out.xyz >/dev/null; then pass "relax --max-steps 6: a system left unconverged at step 6"
else fail "relax --max-steps 6: a system left unconverged at step 6" "$(grep -o 'mdf_step=[0-9]* mdf_status=[0-9]' out.xyz)"; fi

# Refused names and intervals.
run mdflow_lj md --input in.xyz --steps 2 --trajectory traj.dcd
if [ "$rc" -eq 2 ] && [ -z "$(missing_in_stderr "'traj.dcd'" "FILE.h5md" "FILE.xyz")" ] && [ ! -e traj.dcd ]; then
    pass "--trajectory traj.dcd: status 2, the formats named"
else fail "--trajectory traj.dcd: status 2, the formats named" "status $rc" "$(cat "$T/stderr")"; fi
run mdflow_lj relax --input in.xyz --trajectory t0.xyz --trajectory-every 0
if [ "$rc" -eq 2 ] && [ -z "$(missing_in_stderr "--trajectory-every must be >= 1")" ]; then
    pass "--trajectory-every 0: status 2"
else fail "--trajectory-every 0: status 2" "status $rc" "$(cat "$T/stderr")"; fi
cp in.xyz in.keep
run mdflow_lj md --input in.xyz --steps 2 --trajectory ./in.xyz
if [ "$rc" -eq 2 ] && [ -z "$(missing_in_stderr "--trajectory")" ] && cmp -s in.xyz in.keep; then
    pass "--trajectory naming the input: status 2, the input untouched"
else fail "--trajectory naming the input: status 2, the input untouched" "status $rc" "$(cat "$T/stderr")"; fi
for cmd in md relax; do
    run "$MDFLOW" "$cmd" --help
    if grep -F -- '--trajectory FILE' "$T/stdout" >/dev/null && grep -F -- '--trajectory-every N' "$T/stdout" >/dev/null; then
        pass "mdflow $cmd --help lists --trajectory and --trajectory-every"
    else fail "mdflow $cmd --help lists --trajectory and --trajectory-every"; fi
done
finish
