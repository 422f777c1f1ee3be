#!/usr/bin/python3
"""Reference trajectories for mdflow's velocity Verlet, computed by ASE.

  ase_vv_check.py START.xyz END.xyz DT_FS STEPS SIGMA EPSILON RC

Reads every frame of START.xyz (positions, velocities in ASE's internal unit
Angstrom/sqrt(amu Angstrom^2/eV), masses when the file has them, cell, pbc),
attaches ase.calculators.lj.LennardJones(sigma, epsilon, rc) (ASE 3.22:
smooth=False, so each pair energy is shifted to zero at rc; pairs with
r <= rc interact), runs ase.md.verlet.VelocityVerlet with
timestep = DT_FS * ase.units.fs for STEPS steps and writes the final frames
to END.xyz as extended XYZ: species, positions and velocities at full
precision (repr, which reads back to the identical double), with
energy (potential, eV), kinetic_energy (eV) and ase_fs (ase.units.fs) on the
comment line.

ASE's own extxyz writer rounds to 8 decimals, so the frames are written
here by hand. Exit status: 0 on success, 2 on a usage error. Run with the
Python that has ASE (Debian python3-ase).
"""
import sys

import numpy as np
import ase.io
from ase import units
from ase.calculators.lj import LennardJones
from ase.md.verlet import VelocityVerlet


def velocities_of(atoms):
    # mdflow writes a "velocities" column; ASE 3.22 keeps it as a plain
    # array under that name (only "momenta" is mapped by ASE itself).
    for name in ('velocities', 'vel'):
        if name in atoms.arrays:
            v = np.array(atoms.arrays[name], dtype=float)
            del atoms.arrays[name]
            return v
    if 'momenta' in atoms.arrays:
        return atoms.get_velocities()
    raise SystemExit('frame has no velocities')


def write_frame(fp, atoms, energy, kinetic):
    def f(x):
        return repr(float(x))
    fp.write('%d\n' % len(atoms))
    head = []
    if atoms.cell.rank == 3:
        head.append('Lattice="%s"' % ' '.join(f(x) for x in atoms.cell.array.ravel()))
    head.append('Properties=species:S:1:pos:R:3:velocities:R:3')
    head.append('energy=%s' % f(energy))
    head.append('kinetic_energy=%s' % f(kinetic))
    head.append('ase_fs=%s' % f(units.fs))
    head.append('pbc="%s"' % ' '.join('T' if p else 'F' for p in atoms.pbc))
    fp.write(' '.join(head) + '\n')
    v = atoms.get_velocities()
    for s, x, u in zip(atoms.get_chemical_symbols(), atoms.positions, v):
        fp.write('%s %s\n' % (s, ' '.join(f(c) for c in list(x) + list(u))))


def main(argv):
    if len(argv) != 8:
        sys.stderr.write(__doc__)
        return 2
    start, end = argv[1], argv[2]
    dt_fs, steps = float(argv[3]), int(argv[4])
    sigma, epsilon, rc = float(argv[5]), float(argv[6]), float(argv[7])
    frames = ase.io.read(start, index=':', format='extxyz')
    with open(end, 'w') as fp:
        for atoms in frames:
            v = velocities_of(atoms)
            atoms.calc = LennardJones(sigma=sigma, epsilon=epsilon, rc=rc,
                                      smooth=False)
            atoms.set_velocities(v)
            dyn = VelocityVerlet(atoms, timestep=dt_fs * units.fs)
            dyn.run(steps)
            assert dyn.nsteps == steps
            write_frame(fp, atoms, atoms.get_potential_energy(),
                        atoms.get_kinetic_energy())
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv))
