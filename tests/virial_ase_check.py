#!/usr/bin/env python3
"""mdflow test helper: the virial of every final frame of an extxyz file
against ASE's Lennard-Jones calculator (an independent reference).

    virial_ase_check.py FILE EPSILON SIGMA CUTOFF

For each frame: W (the "virial" key, eV) must equal -stress * volume from
ase.calculators.lj.LennardJones at the frame's positions (periodic frames),
and, for open frames (no volume), sum_i r_i (x) F_i of ASE's forces. Prints
one summary line; exits 0 when every frame has a virial within 1e-9 of the
largest component, 1 otherwise, 77 without ASE."""
import sys

try:
    import numpy as np
    from ase.io import iread
    from ase.calculators.lj import LennardJones
except ImportError as e:  # pragma: no cover
    print(f"SKIP: no ASE/numpy ({e})")
    sys.exit(77)


def main():
    path, eps, sig, rc = sys.argv[1], *map(float, sys.argv[2:5])
    n = periodic = missing = 0
    worst = 0.0
    for k, a in enumerate(iread(path)):
        n += 1
        v = a.info.get("virial")
        if v is None:
            missing += 1
            print(f"frame {k}: no virial")
            continue
        w = np.array([float(x) for x in v.split()] if isinstance(v, str) else v, dtype=float).reshape(3, 3)
        b = a.copy()
        b.calc = LennardJones(epsilon=eps, sigma=sig, rc=rc, smooth=False)
        if a.pbc.all():
            periodic += 1
            ref = -b.get_stress(voigt=False) * b.get_volume()
        elif not a.pbc.any():
            ref = np.einsum("ia,ib->ab", b.positions, b.get_forces())
        else:
            print(f"frame {k}: partly periodic, not checked")
            continue
        dev = np.abs(w - ref).max() / max(np.abs(ref).max(), 1e-12)
        if dev > 1e-9:
            print(f"frame {k}: virial deviates from ASE by {dev:.3g} (relative)")
        worst = max(worst, dev)
    print(f"{n} frames ({periodic} periodic), {missing} without a virial, "
          f"largest deviation from ASE {worst:.2e}")
    sys.exit(0 if n > 0 and missing == 0 and worst <= 1e-9 else 1)


if __name__ == "__main__":
    main()
