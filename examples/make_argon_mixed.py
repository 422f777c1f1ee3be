#!/usr/bin/python3
"""Regenerates examples/argon_mixed.xyz, mdflow's built-in default workload:
hundreds of argon systems of mixed sizes, periodic fcc crystals (256-500
atoms, lattice 5.26 Å, large enough for an 8.5 Å cutoff + 1 Å skin) and
open fcc-cut clusters (13-147 atoms), with small random displacements.
Deterministic (fixed seed). Needs Debian's python3-ase."""
import numpy as np
from ase.build import bulk
from ase.io import write

rng = np.random.default_rng(20261122)
A = 5.26  # Å, fcc argon near 40 K
frames = []
crystal_shapes = [(4, 4, 4), (4, 4, 5), (4, 5, 5), (5, 5, 5)]
for k in range(96):
    atoms = bulk("Ar", "fcc", a=A, cubic=True).repeat(crystal_shapes[k % 4])
    atoms.positions += rng.normal(0.0, 0.05, atoms.positions.shape)
    atoms.info["kind"] = "crystal"
    frames.append(atoms)
lattice = bulk("Ar", "fcc", a=A, cubic=True).repeat((8, 8, 8))
centre = lattice.get_center_of_mass()
order = np.argsort(np.linalg.norm(lattice.positions - centre, axis=1))
for k in range(160):
    n = int(rng.integers(13, 148))
    atoms = lattice[order[:n]]
    atoms.set_cell(np.zeros((3, 3)))
    atoms.pbc = False
    atoms.positions -= atoms.positions.mean(axis=0)
    atoms.positions += rng.normal(0.0, 0.05, atoms.positions.shape)
    atoms.info["kind"] = "cluster"
    frames.append(atoms)
write("argon_mixed.xyz", frames, format="extxyz")
print(len(frames), "systems,", sum(len(f) for f in frames), "atoms")
