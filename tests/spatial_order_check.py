#!/usr/bin/python3
"""Checks of tests/test_spatial_order.sh (ASE, numpy, h5py): systems of
more than 2,048 atoms are stored in a spatial order inside mdflow, and every
output must give their atoms back in the order of the input.

  make IN.xyz                 three systems in a shuffled atom order, each
                              atom tagged with a 'tag' column (its index
                              before shuffling) and a 'fixed' column (every
                              50th tag frozen): a periodic Ar/Kr crystal of
                              2,916 atoms, an open Ar cluster of 2,808 atoms
                              (both above the threshold) and a 108-atom cell
  input IN OUT                OUT (mdflow md --steps 0) has IN's atoms in
                              IN's order: positions bit for bit, species,
                              masses, tags and fixed flags
  close A B TOL               the frames of two extxyz files hold the same
                              atoms in the same order (species, tags),
                              positions and velocities within TOL, forces
                              within TOL relative to the largest
  roundoff A B                the forces of A and B differ somewhere (the
                              order of summation differs: proof that A's
                              run stored its atoms in another order)
  frozen IN OUT               OUT's frozen atoms (IN's fixed column) sit at
                              IN's positions, bit for bit
  h5 A.h5 B.h5 TOL            two HDF5 structure trajectories: same systems,
                              steps, numbers, masses; positions within TOL
  make-dense SLAB LATTICE     LJ in reduced units (sigma 1 A, mass 1): an fcc
                              (111) slab at reduced density 1.09 with 30%
                              vacuum along z, periodic in x, y and z (2,592
                              atoms), and in.lj's fcc lattice at 0.8442
                              (6,912 atoms)
Exit status 0 when the check holds, 1 with the reason otherwise."""
import sys

import ase.io
import numpy as np


def make(path):
    from ase.build import bulk
    rng = np.random.default_rng(7)

    def shuffled(a):
        a.set_array("tag", np.arange(len(a), dtype=int))
        return a[rng.permutation(len(a))]

    crystal = bulk("Ar", "fcc", a=5.26, cubic=True) * (9, 9, 9)
    for i in range(0, len(crystal), 7):
        crystal[i].symbol = "Kr"
    crystal.rattle(0.05, seed=1)
    block = bulk("Ar", "fcc", a=5.26, cubic=True) * (12, 12, 12)
    centre = block.positions.mean(0)
    cluster = block[np.linalg.norm(block.positions - centre, axis=1) < 29.0]
    cluster.set_cell([0, 0, 0])
    cluster.pbc = False
    cluster.rattle(0.05, seed=2)
    small = bulk("Ar", "fcc", a=5.26, cubic=True) * (3, 3, 3)
    small.rattle(0.05, seed=3)
    frames = []
    for a in (crystal, cluster, small):
        a = shuffled(a)
        a.set_masses(a.get_masses())
        a.set_array("fixed", a.arrays["tag"] % 50 == 0)
        frames.append(a)
    ase.io.write(path, frames, format="extxyz")
    print("atoms per system:", [len(a) for a in frames])
    return 0


def make_dense(slab_path, lattice_path):
    from ase.build import bulk, fcc111
    slab = fcc111("Ar", size=(12, 12, 18), a=(4 / 1.09) ** (1 / 3), vacuum=0.0, periodic=True)
    cell = slab.cell[:].copy()
    cell[2] *= 1.4
    slab.set_cell(cell)
    slab.pbc = True
    slab.info.clear()
    lattice = bulk("Ar", "fcc", a=(4 / 0.8442) ** (1 / 3), cubic=True) * (12, 12, 12)
    for a, path in ((slab, slab_path), (lattice, lattice_path)):
        a.set_masses([1.0] * len(a))
        ase.io.write(path, a, format="extxyz")
    return 0


def read(path):
    return ase.io.read(path, index=":", format="extxyz")


def same_atoms(a, b, k):
    if len(a) != len(b):
        return "system %d: %d atoms against %d" % (k, len(a), len(b))
    if list(a.numbers) != list(b.numbers):
        return "system %d: species differ at %d atoms" % (k, int(np.sum(a.numbers != b.numbers)))
    if "tag" in a.arrays and not np.array_equal(a.arrays["tag"], b.arrays.get("tag")):
        return "system %d: the tag column is in another order" % k
    return None


def check_input(inp, out):
    A, B = read(inp), read(out)
    if len(A) != len(B):
        return "%d systems in, %d out" % (len(A), len(B))
    for k, (a, b) in enumerate(zip(A, B)):
        why = same_atoms(a, b, k)
        if why:
            return why
        if not np.array_equal(a.positions, b.positions):
            bad = np.flatnonzero(np.any(a.positions != b.positions, axis=1))
            return "system %d: %d atoms not at their input positions (first: atom %d)" % (k, len(bad), bad[0])
        if not np.array_equal(a.get_masses(), b.get_masses()):
            return "system %d: masses in another order" % k
        if not np.array_equal(a.arrays["fixed"], b.arrays.get("fixed")):
            return "system %d: the fixed column in another order" % k
    return None


def check_close(pa, pb, tol):
    A, B = read(pa), read(pb)
    if len(A) != len(B):
        return "%d frames against %d" % (len(A), len(B))
    for k, (a, b) in enumerate(zip(A, B)):
        why = same_atoms(a, b, k)
        if why:
            return why
        dx = np.max(np.abs(a.positions - b.positions))
        va, vb = a.arrays.get("velocities"), b.arrays.get("velocities")
        if va is None or vb is None:
            return "frame %d: no velocities column" % k
        dv = np.max(np.abs(va - vb))
        fa, fb = a.arrays["forces"], b.arrays["forces"]
        df = np.max(np.abs(fa - fb)) / max(np.max(np.abs(fb)), 1e-300)
        print("frame %d (%d atoms): positions %.2e A, velocities %.2e, forces %.2e relative apart"
              % (k, len(a), dx, dv, df))
        if not (dx <= tol and dv <= tol and df <= tol):
            return "frame %d: apart by more than %g" % (k, tol)
    return None


def check_roundoff(pa, pb):
    A, B = read(pa), read(pb)
    differ = [k for k, (a, b) in enumerate(zip(A, B)) if not np.array_equal(a.arrays["forces"], b.arrays["forces"])]
    print("frames whose forces differ in the last bits:", differ)
    return None if differ else "every force equal bit for bit: the atoms were not stored in another order"


def check_frozen(inp, out):
    A, B = read(inp), read(out)
    for k, (a, b) in enumerate(zip(A, B)):
        fixed = a.arrays["fixed"].astype(bool)
        if not np.array_equal(a.positions[fixed], b.positions[fixed]):
            return "system %d: frozen atoms moved" % k
        if np.array_equal(a.positions[~fixed], b.positions[~fixed]):
            return "system %d: the free atoms did not move" % k
        print("system %d: %d frozen atoms in place, %d free atoms moved" % (k, fixed.sum(), (~fixed).sum()))
    return None


def check_h5(pa, pb, tol):
    import h5py
    with h5py.File(pa, "r") as fa, h5py.File(pb, "r") as fb:
        ga, gb = fa["structures"], fb["structures"]
        for name in ("atom_ptr", "system_id", "step", "numbers", "masses"):
            if not np.array_equal(ga[name][:], gb[name][:]):
                return "%s differ" % name
        dx = np.max(np.abs(ga["positions"][:] - gb["positions"][:]))
        print("%d frames, %d atom rows: positions %.2e A apart" % (len(ga["step"]), len(ga["positions"]), dx))
        return None if dx <= tol else "positions apart by %g > %g" % (dx, tol)


def main(argv):
    cmd = argv[1] if len(argv) > 1 else ""
    if cmd == "make" and len(argv) == 3:
        return make(argv[2])
    if cmd == "make-dense" and len(argv) == 4:
        return make_dense(argv[2], argv[3])
    checks = {"input": (check_input, 2), "close": (check_close, 3), "roundoff": (check_roundoff, 2),
              "frozen": (check_frozen, 2), "h5": (check_h5, 3)}
    if cmd not in checks or len(argv) != 2 + checks[cmd][1]:
        sys.stderr.write(__doc__)
        return 2
    args = argv[2:]
    if checks[cmd][1] == 3:
        args[2] = float(args[2])
    why = checks[cmd][0](*args)
    if why:
        print("FAIL: " + why)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
