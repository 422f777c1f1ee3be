#!/usr/bin/python3
"""Reference optimisations for mdflow's optimisers, computed by ASE.

  optim_ase_check.py START.xyz OUTDIR SIGMA EPSILON RC TRAJ_STEPS EVERY FMAX LBFGS_FMAX \
      MIN_FMAX

For every frame of START.xyz (open clusters), with
ase.calculators.lj.LennardJones(sigma, epsilon, rc, smooth=False) (ASE 3.22
shifts each pair energy to zero at rc), writes to OUTDIR, as extended XYZ
at full precision (repr: reads back to the identical double):

  fire_traj.xyz  ase.optimize.FIRE with its defaults, stepped TRAJ_STEPS
                 times with FIRE.step(); a frame every EVERY steps
                 (frames of a system together, info step=)
  lbfgs_traj.xyz the same with ase.optimize.LBFGS and its defaults
  fire_fmax.xyz  FIRE(...).run(fmax=FMAX): final frame, info nsteps=, energy=;
                 then the same with fmax=FMAX/10 (frames NSYS..2 NSYS-1)
  lbfgs.xyz      LBFGS(...).run(fmax=LBFGS_FMAX, steps=20000): final frame,
                 info nsteps=, energy=, fmax=
  lbfgs_min.xyz  the same with fmax=MIN_FMAX: the minima themselves (LJ
                 clusters have soft modes, k ~ 1e-4 eV/A^2, along which a
                 point with fmax 1e-4 may still lie 1e-5 eV above the
                 minimum; at 1e-6 it lies ~1e-10 eV above)

ASE's extxyz writer rounds to 8 decimals, so frames are written by hand.
Exit status: 0 on success, 2 on a usage error.
"""
import os
import sys

import numpy as np
import ase.io
from ase.calculators.lj import LennardJones
from ase.optimize import FIRE, LBFGS


def write_frame(fp, atoms, **info):
    def f(x):
        return repr(float(x))
    fp.write('%d\n' % len(atoms))
    head = ['Properties=species:S:1:pos:R:3']
    for k, v in info.items():
        head.append('%s=%s' % (k, v if isinstance(v, int) else f(v)))
    head.append('pbc="F F F"')
    fp.write(' '.join(head) + '\n')
    for s, x in zip(atoms.get_chemical_symbols(), atoms.positions):
        fp.write('%s %s\n' % (s, ' '.join(f(c) for c in x)))


def fmax_of(atoms):
    return float(np.sqrt((atoms.get_forces() ** 2).sum(axis=1).max()))


def main(argv):
    if len(argv) != 11:
        sys.stderr.write(__doc__)
        return 2
    start, outdir = argv[1], argv[2]
    sigma, epsilon, rc = float(argv[3]), float(argv[4]), float(argv[5])
    traj_steps, every = int(argv[6]), int(argv[7])
    fmax, lbfgs_fmax, min_fmax = float(argv[8]), float(argv[9]), float(argv[10])
    frames = ase.io.read(start, index=':', format='extxyz')

    def calc():
        return LennardJones(sigma=sigma, epsilon=epsilon, rc=rc, smooth=False)

    for name, method in (('fire_traj.xyz', FIRE), ('lbfgs_traj.xyz', LBFGS)):
        with open(os.path.join(outdir, name), 'w') as fp:
            for atoms0 in frames:
                atoms = atoms0.copy()
                atoms.calc = calc()
                opt = method(atoms, logfile=None)
                for k in range(1, traj_steps + 1):
                    opt.step()
                    if k % every == 0:
                        write_frame(fp, atoms, step=k)

    with open(os.path.join(outdir, 'fire_fmax.xyz'), 'w') as fp:
        for fm in (fmax, fmax / 10):
            for atoms0 in frames:
                atoms = atoms0.copy()
                atoms.calc = calc()
                opt = FIRE(atoms, logfile=None)
                opt.run(fmax=fm)
                write_frame(fp, atoms, nsteps=int(opt.nsteps), energy=atoms.get_potential_energy())

    for name, fm in (('lbfgs.xyz', lbfgs_fmax), ('lbfgs_min.xyz', min_fmax)):
        with open(os.path.join(outdir, name), 'w') as fp:
            for atoms0 in frames:
                atoms = atoms0.copy()
                atoms.calc = calc()
                opt = LBFGS(atoms, logfile=None)
                opt.run(fmax=fm, steps=20000)
                write_frame(fp, atoms, nsteps=int(opt.nsteps), energy=atoms.get_potential_energy(),
                            fmax=fmax_of(atoms))
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv))
