#!/bin/sh
# mdflow — a workflow's HDF5 outputs: snapshots every N steps, converged
# snapshots (each system once, when it leaves the relaxation) and the final
# structures as CSR structure datasets, read with h5py and checked against
# the definitions (fmax recomputed from the stored forces, every id once,
# snapshot steps multiples of N, final structures equal to the .xyz output);
# the structure file read back as a workflow's input; complete trajectories
# (each system's exit state in its snapshots once, also between snapshot
# steps; MD of 200 steps every 10 gives 21 frames, steps 0-200, in per-system
# H5MD files that MDAnalysis reads); and a run killed with
# SIGKILL after a checkpoint and resumed leaves snapshot and converged files
# equal, array for array, to those of the uninterrupted run.
#
# Needs /usr/bin/python3 with h5py and numpy (python3-h5py); skipped without.
set -u

HARNESS_NAME=mdflow-outputs
srcdir=${MDF_TEST_SRCDIR:-$(cd "$(dirname "$0")/.." && pwd)}
# shellcheck source=tests/cli_harness.sh
. "$srcdir/tests/cli_harness.sh"
STARPU_SCHED=eager
export STARPU_SCHED
require_python "h5py numpy"

awk -v K=40 'state == 0 { if ($0 ~ /^[ \t]*$/) next; if (nf >= K) exit; n = $1 + 0; print; state = 1; next }
    state == 1 { print; left = n; state = n > 0 ? 2 : 0; if (!state) nf++; next }
    state == 2 { print; if (--left == 0) { state = 0; nf++ } }' "$srcdir/examples/argon_mixed.xyz" >data.xyz

# workflow NAME INPUT [STRUCTURES]: relax + md with every HDF5 output.
workflow() {
    cat >"$1.yaml" <<EOF
input: $2
model: {type: lj, shift: true}
stages:
  relax: {method: fire, fmax: 0.05, step_budget: 150}
  md: {method: langevin, dt_fs: 5, temperature_K: 40, entry_temperature_K: 40, steps: 60}
composition: relax + md
sampler: {max_atoms: 3000, refill_interval: 10}
output: {structures: ${3:-$1.xyz}, snapshots: $1.snap.h5, snapshot_every: 20, converged: $1.relaxed.h5}
checkpoint: {path: $1.ckpt.h5, every: 40}
seed: 3
EOF
}

workflow alone data.xyz
run "$MDFLOW" run alone.yaml
if [ "$rc" -eq 0 ] && [ -s alone.snap.h5 ] && [ -s alone.relaxed.h5 ]; then
    pass "run with snapshot and converged outputs: exit 0, files written"
else
    fail "run with snapshot and converged outputs" "exit status $rc"; show stderr "$T/stderr"
fi

# h5py: the converged file holds each of the 40 systems once, at status 1,
# with fmax (recomputed from its forces) <= 0.05 unless it left on its budget;
# snapshot steps are multiples of 20 (the systems' own steps are not: a
# snapshot is taken at the stage's step) and every atom pointer is consistent.
cat >check.py <<'EOF'
import sys, h5py, numpy as np
relaxed, snaps = sys.argv[1], sys.argv[2]
with h5py.File(relaxed, "r") as f:
    g = f["structures"]
    ids = g["system_id"][:]
    assert sorted(ids.tolist()) == list(range(40)), ("ids", sorted(ids.tolist()))
    assert (g["status"][:] == 1).all(), g["status"][:]
    ptr = g["atom_ptr"][:]
    forces = g["forces"][:]
    flags = g["flags"][:]
    for s in range(len(ids)):
        fm = np.sqrt((forces[ptr[s]:ptr[s + 1]] ** 2).sum(axis=1)).max()
        assert abs(fm - g["fmax"][s]) <= 1e-12 * max(fm, 1.0), (s, fm, g["fmax"][s])
        assert fm <= 0.05 or flags[s] & 32, (s, fm)
with h5py.File(snaps, "r") as f:
    g = f["structures"]
    ptr = g["atom_ptr"][:]
    assert ptr[0] == 0 and (np.diff(ptr) > 0).all() and ptr[-1] == len(g["positions"])
    n = len(g["system_id"])
    assert n > 40, n
print("ok", len(ids), n)
EOF
run "$PY" check.py alone.relaxed.h5 alone.snap.h5
if [ "$rc" -eq 0 ]; then pass "h5py: converged file has each system once with fmax <= 0.05; snapshots consistent ($(cat "$T/stdout"))"
else fail "h5py checks of the outputs" "exit status $rc"; show stderr "$T/stderr"; fi

# Final structures as HDF5 equal the .xyz output, and feed a workflow.
workflow h5out data.xyz h5out.final.h5
run "$MDFLOW" run h5out.yaml
cat >same_final.py <<'EOF'
import sys, h5py, numpy as np
from ase.io import read
frames = read(sys.argv[1], index=":")
with h5py.File(sys.argv[2], "r") as f:
    g = f["structures"]; ptr = g["atom_ptr"][:]
    assert len(frames) == len(ptr) - 1
    for s, a in enumerate(frames):
        assert int(a.info["mdf_system_id"]) == g["system_id"][s]
        assert np.allclose(a.positions, g["positions"][ptr[s]:ptr[s + 1]], rtol=0, atol=1e-7)
        assert (a.numbers == g["numbers"][ptr[s]:ptr[s + 1]]).all()
print("ok")
EOF
if [ "$rc" -eq 0 ] && "$PY" -c 'import ase' 2>/dev/null; then
    run "$PY" same_final.py alone.xyz h5out.final.h5
    if [ "$rc" -eq 0 ]; then pass "final structures as HDF5 equal the .xyz output of the same workflow"
    else fail "final structures as HDF5 equal the .xyz output" "exit status $rc"; show stderr "$T/stderr"; fi
elif [ "$rc" -ne 0 ]; then fail "run writing final structures as HDF5" "exit status $rc"; show stderr "$T/stderr"; fi
workflow fromh5 h5out.final.h5
run "$MDFLOW" run fromh5.yaml
if [ "$rc" -eq 0 ] && grep -F 'finished 40 (status 2)' "$T/stdout" >/dev/null; then
    pass "an HDF5 structure file as a workflow's input: 40 systems finished"
else fail "an HDF5 structure file as input" "exit status $rc"; show stdout "$T/stdout"; show stderr "$T/stderr"; fi

# Complete trajectories: every snapshot step up to and including the step a
# system leaves the run at is in its trajectory, once. Of relax + md above,
# systems leave at steps that are not multiples of 20 (the md stage's 60
# steps start when the relaxation ends): each system's last snapshot is its
# final structure (same step, same positions), and no (id, step) repeats.
cat >exit_step.py <<'EOF'
import sys, h5py, numpy as np
with h5py.File(sys.argv[1], "r") as f, h5py.File(sys.argv[2], "r") as g:
    s, e = f["structures"], g["structures"]
    sid, sstep, sptr = s["system_id"][:], s["step"][:], s["atom_ptr"][:]
    pairs = list(zip(sid.tolist(), sstep.tolist()))
    assert len(pairs) == len(set(pairs)), "a (system, step) is written twice"
    between = 0
    eptr = e["atom_ptr"][:]
    for k, i in enumerate(e["system_id"][:]):
        rows = np.nonzero(sid == i)[0]
        last = rows[np.argmax(sstep[rows])]
        assert sstep[last] == e["step"][k], (int(i), int(sstep[last]), int(e["step"][k]))
        a = s["positions"][sptr[last]:sptr[last + 1]]
        b = e["positions"][eptr[k]:eptr[k + 1]]
        assert np.array_equal(a, b), ("positions", int(i))
        between += sstep[last] % 20 != 0
    n = len(eptr) - 1
assert between > 0, "every system left at a multiple of 20: the case is not tested"
print("ok", n, "systems,", between, "leaving between snapshot steps")
EOF
if [ -s h5out.final.h5 ]; then
    run "$PY" exit_step.py h5out.snap.h5 h5out.final.h5
    if [ "$rc" -eq 0 ]; then pass "snapshots hold each system's exit state once, also between snapshot steps ($(cat "$T/stdout"))"
    else fail "snapshots hold each system's exit state once" "$(tail -n 3 "$T/stderr")"; fi
fi

# MD of 200 steps with a snapshot every 10: 21 frames (steps 0-200, as
# LAMMPS's dump every 10 over run 200), the last one the state the system
# leaves with; one H5MD file per system ({id}), which MDAnalysis reads
# without a topology.
awk -v K=3 'state == 0 { if ($0 ~ /^[ \t]*$/) next; if (nf >= K) exit; n = $1 + 0; print; state = 1; next }
    state == 1 { print; left = n; state = n > 0 ? 2 : 0; if (!state) nf++; next }
    state == 2 { print; if (--left == 0) { state = 0; nf++ } }' data.xyz >three.xyz
cat >md200.yaml <<EOF
input: three.xyz
model: {type: lj, shift: true}
stages:
  md: {method: langevin, dt_fs: 5, temperature_K: 40, steps: 200}
composition: md
sampler: {max_atoms: 3000, refill_interval: 10}
output: {structures: md200.final.h5, snapshots: "md200_{id}.h5md", snapshot_every: 10}
seed: 3
EOF
run "$MDFLOW" run md200.yaml
cat >md200.py <<'EOF'
import sys, h5py, numpy as np
with h5py.File("md200.final.h5", "r") as g:
    e = g["structures"]
    ids, ptr = e["system_id"][:].tolist(), e["atom_ptr"][:]
    final = {i: e["positions"][ptr[k]:ptr[k + 1]] for k, i in enumerate(ids)}
for i in ids:
    with h5py.File(f"md200_{i}.h5md", "r") as f:
        steps = f[f"particles/system_{i}/position/step"][:].tolist()
        assert steps == list(range(0, 201, 10)), (i, steps)
        assert np.array_equal(f[f"particles/system_{i}/position/value"][-1], final[i]), i
try:
    import warnings
    warnings.simplefilter("ignore")
    import MDAnalysis as mda
except ImportError:
    print("ok (h5py; no MDAnalysis)")
    sys.exit(0)
for i in ids:
    u = mda.Universe(f"md200_{i}.h5md")
    assert u.trajectory.n_frames == 21 and len(u.atoms) == len(final[i]), (i, u.trajectory.n_frames, len(u.atoms))
    u.trajectory[-1]
    assert np.allclose(u.atoms.positions, final[i], atol=1e-4), i
    assert abs(u.trajectory.time - 1.0) < 1e-12, u.trajectory.time   # 200 steps of 5 fs, in ps
print("ok: MDAnalysis reads", len(ids), "files of 21 frames")
EOF
if [ "$rc" -eq 0 ]; then
    run "$PY" md200.py
    if [ "$rc" -eq 0 ]; then pass "MD of 200 steps, snapshot every 10: 21 frames, steps 0-200, the last the final state ($(cat "$T/stdout"))"
    else fail "MD of 200 steps, snapshot every 10: 21 frames, steps 0-200" "$(tail -n 3 "$T/stderr")"; fi
else fail "MD of 200 steps with {id} snapshots" "exit status $rc"; show stderr "$T/stderr"; fi

# Killed with SIGKILL after its first checkpoint, then resumed: the same files.
workflow killed data.xyz
"$MDFLOW" run killed.yaml >/dev/null 2>"$T/stderr" &
pid=$!
i=0
while [ ! -s killed.ckpt.h5 ] && [ $i -lt 600 ] && kill -0 $pid 2>/dev/null; do sleep 0.05; i=$((i + 1)); done
kill -9 $pid 2>/dev/null
wait $pid 2>/dev/null
if [ -e killed.xyz ]; then fail "the run was killed before it finished" "killed.xyz exists: it had finished"; fi
run "$MDFLOW" run --resume killed.yaml
cat >same_files.py <<'EOF'
import sys, h5py, numpy as np
for a, b in zip(sys.argv[1::2], sys.argv[2::2]):
    with h5py.File(a, "r") as fa, h5py.File(b, "r") as fb:
        ga, gb = fa["structures"], fb["structures"]
        assert sorted(ga) == sorted(gb), (sorted(ga), sorted(gb))
        for k in ga:
            x, y = ga[k][:], gb[k][:]
            assert x.shape == y.shape and np.array_equal(x, y, equal_nan=True), (a, k, x.shape, y.shape)
print("ok")
EOF
if [ "$rc" -eq 0 ]; then
    run "$PY" same_files.py alone.snap.h5 killed.snap.h5 alone.relaxed.h5 killed.relaxed.h5
    if [ "$rc" -eq 0 ]; then pass "killed (SIGKILL) and resumed: snapshot and converged files equal the uninterrupted run's"
    else fail "killed and resumed: same HDF5 outputs" "$(tail -n 3 "$T/stderr")"; fi
else
    fail "mdflow run --resume after SIGKILL" "exit status $rc"; show stderr "$T/stderr"
fi

finish
