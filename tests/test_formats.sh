#!/bin/sh
# mdflow — structure file formats by name, never by guess (md, relax, run):
# --output x.h5md is an H5MD file (h5py: the h5md and particles groups),
# --output x.h5 the CSR structure form (h5py: /structures, positions equal to
# the input's, as ASE reads it), read back as --input; .dump/.lammpstrj a
# LAMMPS dump (velocities in Å/ps by ASE's factor), .data/.lmp LAMMPS data
# files (several systems need {id}: refused before the run otherwise; a
# cluster's box and pbc), read back as --input; --format and --input-format
# override the extension; an unknown extension of
# --output or --input, or an input mdflow cannot read, is exit status 2
# naming the file and the formats; a data file whose types have no elements
# names --lammps-types, which fixes it; workflows choose input and
# output.structures formats by name too (unknown, or a data file for
# several systems: FILE:LINE, exit 2).
#
# Needs /usr/bin/python3 with h5py and ase; skipped without.
set -u

HARNESS_NAME=mdflow-formats
srcdir=${MDF_TEST_SRCDIR:-$(cd "$(dirname "$0")/.." && pwd)}
# shellcheck source=tests/cli_harness.sh
. "$srcdir/tests/cli_harness.sh"
require_python "h5py numpy ase"

# Two small argon systems (a cluster and a periodic box).
cat >in.xyz <<'EOF'
3
pbc="F F F"
Ar 0 0 0
Ar 3.8 0 0
Ar 0 3.9 0.2
4
Lattice="7 0 0 0 7.2 0 0.3 0 7.4" pbc="T T T"
Ar 0 0 0
Ar 3.6 0.1 0
Ar 0 3.7 0.2
Ar 3.5 3.5 3.6
EOF
md() { run "$MDFLOW" md --steps 0 --lj-shift --quiet "$@"; }

# --- HDF5 by extension ---------------------------------------------------------
md --input in.xyz --output x.h5md
if [ "$rc" -eq 0 ] && "$PY" - <<'EOF' 2>"$T/py"
import h5py
f = h5py.File("x.h5md", "r")
assert "h5md" in f and "version" in f["h5md"].attrs, "no /h5md group with a version"
systems = [k for k in f.get("particles", {}) if k.startswith("system_")]
assert len(systems) == 2, "particles: %s" % list(f.get("particles", {}))
EOF
then pass "--output x.h5md: an H5MD file (h5py: /h5md with version, one particle group per system)"
else fail "--output x.h5md is H5MD" "exit $rc"; show stderr "$T/stderr"; show py "$T/py"; fi

md --input in.xyz --output x.h5
if [ "$rc" -eq 0 ] && "$PY" - <<'EOF' 2>"$T/py"
import h5py, numpy as np
from ase.io import read
g = h5py.File("x.h5", "r")["structures"]
assert g.attrs["format"] in ("mdflow-structures", b"mdflow-structures")
ref = np.concatenate([a.positions for a in read("in.xyz", ":")])
assert np.array_equal(g["positions"][:], ref), "positions differ from the input"
assert list(g["atom_ptr"][:]) == [0, 3, 7]
EOF
then pass "--output x.h5: CSR structure datasets with the input's positions"
else fail "--output x.h5 is the structures format" "exit $rc"; show stderr "$T/stderr"; show py "$T/py"; fi

md --input x.h5 --output fromh5.xyz
if [ "$rc" -eq 0 ] && "$PY" - <<'EOF' 2>"$T/py"
import numpy as np
from ase.io import read
for a, b in zip(read("in.xyz", ":"), read("fromh5.xyz", ":")):
    assert np.array_equal(a.positions, b.positions) and np.array_equal(a.cell.array, b.cell.array)
EOF
then pass "--input x.h5: the structures as written"
else fail "--input x.h5" "exit $rc"; show stderr "$T/stderr"; show py "$T/py"; fi

# --- unknown extensions, --format --------------------------------------------------
md --input in.xyz --output x.foo
if [ "$rc" -eq 2 ] && [ ! -e x.foo ] && [ -z "$(missing_in_stderr "'x.foo'" .xyz .h5md .data .dump "--format NAME" lammps-dump)" ]
then pass "--output x.foo: exit 2 naming the file, the extensions and --format"
else fail "--output x.foo refused" "exit $rc"; show stderr "$T/stderr"; fi

md --input in.foo
if [ "$rc" -eq 2 ] && [ -z "$(missing_in_stderr "'in.foo'" .xyz .data "--input-format")" ]
then pass "--input in.foo: exit 2 naming the file and the formats"
else fail "--input in.foo refused" "exit $rc"; show stderr "$T/stderr"; fi

md --input in.xyz --output x.foo --format lammps-dump
if [ "$rc" -eq 0 ] && [ "$(head -n 1 x.foo)" = "ITEM: TIMESTEP" ] && [ "$(grep -c '^ITEM: ATOMS id type x y z vx vy vz fx fy fz' x.foo)" -eq 2 ]
then pass "--format lammps-dump overrides the name: one custom block per system"
else fail "--format lammps-dump" "exit $rc"; show stderr "$T/stderr"; show x.foo x.foo; fi

md --input in.xyz --output x.h5md --format nonsense
if [ "$rc" -eq 2 ] && [ -z "$(missing_in_stderr "--format nonsense" "xyz, h5, h5md, lammps-data, lammps-dump")" ]
then pass "--format nonsense: exit 2 listing the formats"
else fail "--format nonsense refused" "exit $rc"; show stderr "$T/stderr"; fi

# Dump velocities in LAMMPS metal units (Å/ps): ASE's factor, 1000 · ase.units.fs.
cat >vel.xyz <<'EOF'
2
Lattice="7 0 0 0 7.2 0 0.3 0 7.4" Properties=species:S:1:pos:R:3:velocities:R:3 pbc="T T T"
Ar 0 0 0 0.01 -0.02 0.003
Ar 3.6 0.1 0 -0.01 0.02 -0.003
EOF
md --input vel.xyz --keep-velocities --output v.lammpstrj
if [ "$rc" -eq 0 ] && "$PY" - <<'EOF' 2>"$T/py"
import numpy as np, ase.units
from ase.io import read
lines = open("v.lammpstrj").read().split("\n")
i = lines.index("ITEM: ATOMS id type x y z vx vy vz fx fy fz")
v = np.array([[float(x) for x in lines[i + 1 + k].split()[5:8]] for k in range(2)])
ref = read("vel.xyz").arrays["velocities"] * 1000 * ase.units.fs
assert np.abs(v - ref).max() <= 1e-14 * np.abs(ref).max(), (v, ref)
EOF
then pass "--output v.lammpstrj: a dump with velocities in Å/ps (ASE's conversion)"
else fail "dump velocities in Å/ps" "exit $rc"; show stderr "$T/stderr"; show py "$T/py"; fi

cp in.xyz in.txt
md --input in.txt --input-format xyz --output txt.xyz
if [ "$rc" -eq 0 ] && [ "$(grep -c mdf_step txt.xyz)" -eq 2 ]
then pass "--input-format xyz reads in.txt"
else fail "--input-format xyz" "exit $rc"; show stderr "$T/stderr"; fi

cp x.foo in.dump
md --input in.dump
if [ "$rc" -eq 2 ] && [ -z "$(missing_in_stderr "'in.dump'" "cannot read lammps-dump")" ]
then pass "--input in.dump: exit 2, mdflow reads no dump files"
else fail "--input in.dump refused" "exit $rc"; show stderr "$T/stderr"; fi

# --- LAMMPS data files ------------------------------------------------------------
md --input in.xyz --output x.data
if [ "$rc" -eq 2 ] && [ ! -e x.data ] && [ -z "$(missing_in_stderr "'x.data'" "{id}")" ]
then pass "--output x.data with 2 systems: exit 2 before the run, naming {id}"
else fail "--output x.data with 2 systems refused" "exit $rc"; show stderr "$T/stderr"; fi

md --input in.xyz --output 'x_{id}.data'
if [ "$rc" -eq 0 ] && grep -q '^3 atoms' x_0.data && grep -q '^4 atoms' x_1.data && grep -q 'pbc="F F F"' x_0.data
then pass "--output x_{id}.data: one LAMMPS data file per system"
else fail "--output x_{id}.data" "exit $rc"; show stderr "$T/stderr"; fi

md --input x_0.data --output cluster.xyz
if grep -q '^-10 13.800000000000001 xlo xhi' x_0.data && [ "$rc" -eq 0 ] && grep -q 'pbc="F F F"' cluster.xyz
then pass "a cluster's data file: the atoms' extent + 10 Å as box, pbc F F F read back from the title"
else fail "cluster data file" "exit $rc"; show x_0.data x_0.data; show stderr "$T/stderr"; fi

md --input x_1.data --output back.lmp
if [ "$rc" -eq 0 ] && grep -q '^Atoms # atomic' back.lmp
then pass "--output back.lmp: a LAMMPS data file"
else fail "--output back.lmp" "exit $rc"; show stderr "$T/stderr"; fi

md --input x_1.data --output back.xyz
if [ "$rc" -eq 0 ] && "$PY" - <<'EOF' 2>"$T/py"
import numpy as np
from ase.io import read
a, b = read("in.xyz", 1), read("back.xyz")
assert np.array_equal(a.positions, b.positions) and np.array_equal(a.cell.array, b.cell.array)
assert list(b.symbols) == ["Ar"] * 4 and list(b.pbc) == [True] * 3
EOF
then pass "--input x_1.data: the system as it was (positions, cell, Ar from the Masses comment)"
else fail "--input x_1.data" "exit $rc"; show stderr "$T/stderr"; show py "$T/py"; fi

cat >typeless.data <<'EOF'
two argon atoms, no Masses section

2 atoms
1 atom types
0 8 xlo xhi
0 8 ylo yhi
0 8 zlo zhi

Atoms # atomic

1 1 0 0 0
2 1 3.8 0 0
EOF
md --input typeless.data
if [ "$rc" -eq 2 ] && [ -z "$(missing_in_stderr "typeless.data" "atom type 1" "--lammps-types")" ]
then pass "a data file without Masses: exit 2 naming the file, the type and --lammps-types"
else fail "typeless data file refused" "exit $rc"; show stderr "$T/stderr"; fi
md --input typeless.data --lammps-types Ar --output typed.xyz
if [ "$rc" -eq 0 ] && [ "$(sed -n 3p typed.xyz | awk '{print $1}')" = Ar ]
then pass "--lammps-types Ar maps type 1"
else fail "--lammps-types Ar" "exit $rc"; show stderr "$T/stderr"; fi

# --- workflows ---------------------------------------------------------------------
wf() {
    cat >"$1.yaml" <<EOF
input: $2
model: {type: lj, shift: true}
stages:
  md: {method: velocity_verlet, dt_fs: 1, steps: 1}
sampler: {max_atoms: 100}
output: {structures: $3}
EOF
}
wf bad x_1.data final.foo
run "$MDFLOW" run --check bad.yaml
if [ "$rc" -eq 2 ] && [ -z "$(missing_in_stderr "bad.yaml:6:" "output.structures 'final.foo'" ".h5md")" ]
then pass "workflow output.structures final.foo: FILE:LINE, exit 2"
else fail "workflow output.structures final.foo refused" "exit $rc"; show stderr "$T/stderr"; fi

wf many in.xyz final.data
run "$MDFLOW" run many.yaml
if [ "$rc" -eq 2 ] && [ ! -e final.data ] && [ -z "$(missing_in_stderr "many.yaml:6:" "output.structures 'final.data'" "{id}")" ]
then pass "workflow output.structures final.data with 2 systems: FILE:LINE naming {id}, before the run"
else fail "workflow final.data with 2 systems refused" "exit $rc"; show stderr "$T/stderr"; fi

wf good x_1.data final.h5md
run "$MDFLOW" run good.yaml
if [ "$rc" -eq 0 ] && "$PY" - <<'EOF' 2>"$T/py"
import h5py
f = h5py.File("final.h5md", "r")
assert "h5md" in f and "particles" in f, list(f)
EOF
then pass "workflow: input x_1.data (LAMMPS data), output.structures final.h5md (H5MD)"
else fail "workflow with a data input and an H5MD output" "exit $rc"; show stderr "$T/stderr"; show py "$T/py"; fi

finish
