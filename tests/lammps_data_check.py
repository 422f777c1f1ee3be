"""ASE's side of tests/test_lammps_io.c (LAMMPS data files).

  write-ase DIR   ASE writes DIR/ase_atomic.data (triclinic, velocities) and
                  DIR/ase_charge.data (charges) with ase.io.write(...,
                  format='lammps-data'); what ASE reads back from each goes to
                  DIR/<name>.ref: "cell" + 9 numbers, then one line per atom
                  "x y z vx vy vz q" (velocities in ASE units, 0 when absent).
  ref-lmp DIR     what ASE reads from DIR/lmp.data (LAMMPS's write_data), the
                  image flags applied (r + travel · cell: ASE keeps them in
                  arrays['travel']), as DIR/lmp.ref, atoms by id.
  check DIR       ASE reads DIR/md.data (mdflow's data file, atom_style
                  charge) and DIR/md.xyz (the same frame as extxyz); positions
                  and cell must be identical, charges identical, velocities
                  equal to 1e-14 relative, masses equal. Exit status 1 names
                  the difference.
"""
import sys

import numpy as np
from ase import Atoms
from ase.io import read, write


def ref_lines(atoms, q=None):
    lines = ["cell " + " ".join("%.17g" % x for x in atoms.cell.array.ravel())]
    v = atoms.get_velocities()
    if v is None:
        v = np.zeros((len(atoms), 3))
    q = np.zeros(len(atoms)) if q is None else q
    for r, vv, qq in zip(atoms.positions, v, q):
        lines.append(" ".join("%.17g" % x for x in list(r) + list(vv) + [qq]))
    return "\n".join(lines) + "\n"


def write_ase(d):
    rng = np.random.default_rng(7)
    # A general (rotated, sheared) cell: ASE's writer turns it into LAMMPS's form.
    cell = np.array([[7.1, 0.4, -0.3], [1.2, 6.8, 0.5], [-0.6, 0.9, 7.4]])
    n = 12
    frac = rng.random((n, 3))
    atoms = Atoms(symbols=["Cu", "Ni"] * (n // 2), scaled_positions=frac, cell=cell, pbc=True)
    atoms.set_velocities(rng.normal(scale=0.02, size=(n, 3)))
    write(d + "/ase_atomic.data", atoms, format="lammps-data", atom_style="atomic",
          specorder=["Cu", "Ni"], velocities=True)
    back = read(d + "/ase_atomic.data", format="lammps-data", style="atomic", units="metal")
    open(d + "/ase_atomic.ref", "w").write(ref_lines(back))

    atoms = Atoms(symbols=["Na", "Cl"] * 4, scaled_positions=rng.random((8, 3)),
                  cell=np.diag([5.6, 5.7, 5.8]), pbc=True)
    atoms.set_initial_charges([0.75, -0.75] * 4)
    write(d + "/ase_charge.data", atoms, format="lammps-data", atom_style="charge", specorder=["Na", "Cl"])
    back = read(d + "/ase_charge.data", format="lammps-data", style="charge", units="metal")
    open(d + "/ase_charge.ref", "w").write(ref_lines(back, back.arrays["initial_charges"]))


def ref_lmp(d):
    a = read(d + "/lmp.data", format="lammps-data", style="charge", units="metal", sort_by_id=True)
    travel = a.arrays.get("travel", np.zeros((len(a), 3), int))
    a.positions = a.positions + travel @ a.cell.array
    open(d + "/lmp.ref", "w").write(ref_lines(a, a.arrays["initial_charges"]))


def fail(what):
    print("lammps_data_check: " + what)
    sys.exit(1)


def check(d):
    x = read(d + "/md.xyz")
    m = read(d + "/md.data", format="lammps-data", style="charge", units="metal", sort_by_id=True)
    if len(m) != len(x):
        fail("%d atoms in md.data, %d in md.xyz" % (len(m), len(x)))
    if not np.array_equal(m.cell.array, x.cell.array):
        fail("cell differs: %s vs %s" % (m.cell.array, x.cell.array))
    if not np.array_equal(m.positions, x.positions):
        fail("positions differ by up to %g" % np.abs(m.positions - x.positions).max())
    if not np.array_equal(m.arrays["initial_charges"], x.arrays["initial_charges"]):
        fail("charges differ")
    # ASE converts masses from LAMMPS's g/mol through CODATA constants: 1e-8 off.
    if not np.allclose(m.get_masses(), x.get_masses(), rtol=1e-7, atol=0):
        fail("masses differ: %s vs %s" % (m.get_masses()[:2], x.get_masses()[:2]))
    vm, vx = m.get_velocities(), x.arrays["velocities"]
    if np.abs(vm - vx).max() > 1e-14 * np.abs(vx).max():
        fail("velocities differ by up to %g" % np.abs(vm - vx).max())
    print("lammps_data_check: md.data as ASE reads it equals md.xyz")


if __name__ == "__main__":
    {"write-ase": write_ase, "ref-lmp": ref_lmp, "check": check}[sys.argv[1]](sys.argv[2])
