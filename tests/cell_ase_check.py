"""mdflow tests — ASE's reference for test_cell_relax: FIRE and LBFGS on
atoms and cell, FrechetCellFilter form, for a fixed number of steps.

usage: cell_ase_check.py START.xyz OUT.xyz OPTIMIZER STEPS PRESSURE_GPA SIGMA EPSILON RC

ASE >= 3.23 has ase.filters.FrechetCellFilter; ASE 3.22 (Debian's) has its
predecessor ExpCellFilter, which is FrechetCellFilter with exp_cell_factor
fixed to 1. On 3.22 the class below adds exp_cell_factor exactly as 3.23's
FrechetCellFilter does (cell rows exp_cell_factor * logm(F), set through
expm(rows / exp_cell_factor), cell forces divided by exp_cell_factor).
exp_cell_factor is ASE's default, the number of atoms. Writes the frames
after STEPS optimiser steps (fmax 0: none converges early), every digit."""
import sys

import numpy as np
from ase.calculators.lj import LennardJones
from ase.io import read
from ase.optimize import FIRE, LBFGS
from ase import units

try:
    from ase.filters import FrechetCellFilter
except ImportError:
    from ase.constraints import ExpCellFilter

    class FrechetCellFilter(ExpCellFilter):
        def __init__(self, atoms, exp_cell_factor=None, scalar_pressure=0.0):
            ExpCellFilter.__init__(self, atoms, scalar_pressure=scalar_pressure)
            self.exp_cell_factor = float(len(atoms)) if exp_cell_factor is None else exp_cell_factor

        def get_positions(self):
            pos = ExpCellFilter.get_positions(self)
            pos[len(self.atoms):] *= self.exp_cell_factor
            return pos

        def set_positions(self, new, **kwargs):
            new2 = np.array(new, copy=True)
            new2[len(self.atoms):] /= self.exp_cell_factor
            ExpCellFilter.set_positions(self, new2, **kwargs)

        def get_forces(self, **kwargs):
            f = ExpCellFilter.get_forces(self, **kwargs)
            f[len(self.atoms):] /= self.exp_cell_factor
            return f


def main():
    start, out, opt_name, steps, p_gpa, sigma, eps, rc = sys.argv[1:9]
    frames = read(start, ":")
    done = []
    for atoms in frames:
        atoms.calc = LennardJones(sigma=float(sigma), epsilon=float(eps), rc=float(rc))
        filt = FrechetCellFilter(atoms, scalar_pressure=float(p_gpa) * units.GPa)
        opt = (FIRE if opt_name == "fire" else LBFGS)(filt, logfile=None)
        opt.run(fmax=0.0, steps=int(steps))
        done.append(atoms)
    # extended XYZ with every digit (ase.io.write rounds positions to 1e-8 Å)
    with open(out, "w") as fp:
        for a in done:
            lat = " ".join("%.17g" % v for v in a.cell.array.ravel())
            pbc = " ".join("T" if p else "F" for p in a.pbc)
            fp.write("%d\nLattice=\"%s\" Properties=species:S:1:pos:R:3 pbc=\"%s\"\n" % (len(a), lat, pbc))
            for sym, pos in zip(a.get_chemical_symbols(), a.positions):
                fp.write("%s %.17g %.17g %.17g\n" % (sym, pos[0], pos[1], pos[2]))


main()
