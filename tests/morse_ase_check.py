#!/usr/bin/env python3
"""mdflow test helper: the example plugin's Morse model against ASE's
MorsePotential (ase.calculators.morse, ASE 3.22).

    morse_ase_check.py gen OUT.xyz R0 CUTOFF
        random open clusters and periodic crystals (fcc, cubic and
        triclinic, jittered; three of 1, 2 and 4 atoms per cell, narrower
        than the cut-off) with no two atoms closer than 0.75 R0 and no
        pair distance within BAND of CUTOFF (see below).
    morse_ase_check.py check RESULT.xyz D A R0 CUTOFF SHIFT
        every frame's energy, forces and "virial" key (mdflow's results)
        against ASE's; prints the largest relative deviations, exits 0 when
        all are within 1e-10, 1 otherwise, 77 without ASE.

ASE's MorsePotential is epsilon exp(rho0 (1 - r/r0)) (exp(...) - 2) = D[(1 -
e^{-a(r - r0)})^2 - 1] with epsilon = D, rho0 = a r0, times a smooth cutoff
that goes from 1 at rcut1 r0 to 0 at rcut2 r0. With rcut2 r0 = CUTOFF and
rcut1 r0 = CUTOFF - BAND, and no pair distance in that band, it is exactly
the truncated Morse of mdflow. ASE 3.22 gives no stress: the reference
virial W = sum over pairs (r_i - r_j) (x) f_i (include/mdflow/batch.h) is
summed here from ASE's neighbour list ('ijdD', D = r_j - r_i) and ASE's own
pair force. With SHIFT, every pair inside the cutoff loses E(CUTOFF)."""
import sys

try:
    import numpy as np
    from ase import Atoms
    from ase.build import bulk
    from ase.io import read, write
    from ase.neighborlist import neighbor_list
    from ase.calculators.morse import MorsePotential
except ImportError as e:  # pragma: no cover
    print(f"SKIP: no ASE/numpy ({e})")
    sys.exit(77)

BAND = 1e-7  # Å: the width of ASE's smoothing; no pair distance within 3 BAND of the cutoff
TOL = 1e-10


def band_free(atoms, cutoff):
    d = neighbor_list("d", atoms, cutoff + 3 * BAND)
    return not np.any((d > cutoff - 3 * BAND) & (d < cutoff + 3 * BAND))


def cluster(rng, n, r0, cutoff):
    """n atoms in a ball, at least 0.75 r0 apart, band-free."""
    radius = 0.8 * r0 * n ** (1 / 3) + 0.5
    while True:
        pos = []
        while len(pos) < n:
            x = rng.uniform(-radius, radius, 3)
            if np.linalg.norm(x) <= radius and all(np.linalg.norm(x - y) >= 0.75 * r0 for y in pos):
                pos.append(x)
        a = Atoms("Cu%d" % n, positions=pos, pbc=False)
        if band_free(a, cutoff):
            return a


def crystal(rng, base, reps, jitter, cutoff, strain=0.0):
    while True:
        a = base.repeat(reps)
        if strain:
            eps = np.eye(3) + strain * rng.uniform(-1, 1, (3, 3))
            a.set_cell(a.cell @ eps, scale_atoms=True)
        a.positions += rng.normal(0.0, jitter, a.positions.shape)
        if band_free(a, cutoff):
            return a


def gen(path, r0, cutoff):
    rng = np.random.default_rng(20240615)
    frames = [cluster(rng, n, r0, cutoff) for n in (2, 3, 8, 20, 45, 90)]
    a = 2 ** 0.5 * r0  # fcc with nearest neighbours at r0
    frames.append(crystal(rng, bulk("Cu", "fcc", a=a, cubic=True), (4, 4, 4), 0.08, cutoff))
    frames.append(crystal(rng, bulk("Cu", "fcc", a=a), (7, 7, 7), 0.1, cutoff, strain=0.03))
    frames.append(crystal(rng, bulk("Cu", "fcc", a=1.05 * a, cubic=True), (4, 4, 4), 0.15, cutoff))
    # small periodic cells (1, 2 and 4 atoms, strained to triclinic), 1.5 to
    # 3 times narrower than the cut-off: several images of every neighbour
    frames.append(crystal(rng, bulk("Cu", "fcc", a=a), (1, 1, 1), 0.0, cutoff, strain=0.04))
    frames.append(crystal(rng, bulk("Cu", "bcc", a=1.16 * r0, cubic=True), (1, 1, 1), 0.1, cutoff, strain=0.05))
    frames.append(crystal(rng, bulk("Cu", "fcc", a=a, cubic=True), (1, 1, 1), 0.12, cutoff, strain=0.06))
    write(path, frames, format="extxyz")
    print(f"wrote {len(frames)} frames to {path}")


def reference(atoms, D, A, r0, cutoff, shift):
    """ASE's energy and forces, and the virial from ASE's pairs."""
    b = Atoms(numbers=atoms.numbers, positions=atoms.positions, cell=atoms.cell, pbc=atoms.pbc)
    rho0 = A * r0
    b.calc = MorsePotential(epsilon=D, rho0=rho0, r0=r0, rcut1=(cutoff - BAND) / r0, rcut2=cutoff / r0)
    e, f = b.get_potential_energy(), b.get_forces()
    i, j, d, dv = neighbor_list("ijdD", b, cutoff)
    expf = np.exp(rho0 * (1.0 - d / r0))
    fpair = (-2 * D * rho0 / r0 * expf * (expf - 1))[:, None] * dv / d[:, None]  # on i, as ASE
    fsum = np.zeros_like(f)
    np.add.at(fsum, i, fpair)
    assert np.abs(fsum - f).max() <= 1e-12 * max(np.abs(f).max(), 1.0), "pair forces do not sum to ASE's"
    w = -0.5 * np.einsum("pa,pb->ab", dv, fpair)
    if shift:
        x = np.exp(-A * (cutoff - r0))
        e -= 0.5 * len(d) * D * x * (x - 2.0)
    return e, f, w


def check(path, D, A, r0, cutoff, shift):
    worst = {"energy": 0.0, "forces": 0.0, "virial": 0.0}
    n = bad = 0
    for k, atoms in enumerate(read(path, ":")):
        n += 1
        v = atoms.info.get("virial")
        if v is None:
            print(f"frame {k}: no virial")
            bad += 1
            continue
        w = np.array([float(x) for x in v.split()] if isinstance(v, str) else v, dtype=float).reshape(3, 3)
        e, f = atoms.get_potential_energy(), atoms.get_forces()
        re, rf, rw = reference(atoms, D, A, r0, cutoff, shift)
        dev = {"energy": abs(e - re) / max(abs(re), D),
               "forces": np.abs(f - rf).max() / max(np.abs(rf).max(), 1e-3 * D / r0),
               "virial": np.abs(w - rw).max() / max(np.abs(rw).max(), 1e-3 * D)}
        for q, x in dev.items():
            worst[q] = max(worst[q], x)
        if max(dev.values()) > TOL:
            bad += 1
            print(f"frame {k} ({len(atoms)} atoms, pbc {atoms.pbc.any()}): energy {e!r} vs ASE {re!r}; "
                  + ", ".join(f"{q} {x:.3g}" for q, x in dev.items()))
    print(f"{n} frames (shift {shift}), largest relative deviation from ASE: energy {worst['energy']:.2e}, "
          f"forces {worst['forces']:.2e}, virial {worst['virial']:.2e}")
    sys.exit(0 if n > 0 and bad == 0 else 1)


def main():
    if sys.argv[1] == "gen":
        gen(sys.argv[2], float(sys.argv[3]), float(sys.argv[4]))
    elif sys.argv[1] == "check":
        D, A, r0, cutoff = map(float, sys.argv[3:7])
        check(sys.argv[2], D, A, r0, cutoff, int(sys.argv[7]))
    else:
        sys.exit(f"unknown mode {sys.argv[1]}")


if __name__ == "__main__":
    main()
