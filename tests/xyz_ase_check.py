#!/usr/bin/python3
"""Cross-checks mdflow's extended XYZ reader and writer against ASE.

  xyz_ase_check.py write DIR
      ASE writes DIR/ase_written.xyz (a periodic triclinic frame with momenta,
      energy, forces and info keys, then an open cluster), reads it back and
      records what it holds in DIR/ase_reference.json and, for the C test,
      in the line-based DIR/ase_reference.txt.
  xyz_ase_check.py read FILE REF.json
      ASE reads every frame of FILE and compares it with REF.json (same
      schema). Floats must match exactly: mdflow writes them so that they
      read back to the identical double.

Exit status: 0 when all matches, 1 on a mismatch (explained on stderr),
2 on a usage error. Run with the Python that has ASE (Debian python3-ase).
"""
import json
import sys

import numpy as np
import ase.io
from ase import Atoms
from ase.calculators.singlepoint import SinglePointCalculator
from ase.data import atomic_masses, chemical_symbols
from ase.md.velocitydistribution import MaxwellBoltzmannDistribution

# Per-atom arrays that the reference describes by name; any other array of
# ours is an extra column.
KNOWN_ARRAYS = {'numbers', 'positions', 'momenta', 'velocities', 'vel',
                'forces', 'masses'}


def make_images():
    rng = np.random.RandomState(1234)
    cell = [[5.1, 0.0, 0.0], [0.7, 5.3, 0.0], [0.4, -0.3, 5.7]]
    crystal = Atoms('Si4O2Cu', cell=cell, pbc=True,
                    scaled_positions=rng.uniform(size=(7, 3)))
    MaxwellBoltzmannDistribution(crystal, temperature_K=300, rng=rng)
    crystal.calc = SinglePointCalculator(
        crystal, energy=-123.45678901234, forces=rng.normal(size=(7, 3)))
    crystal.info['note'] = 'hello world'
    crystal.info['temperature'] = 300.25
    cluster = Atoms('CH4', positions=rng.normal(scale=1.2, size=(5, 3)))
    return [crystal, cluster]


def velocities_of(atoms):
    # ASE keeps velocities as momenta; a "velocities" column written by
    # mdflow stays a plain array under that name (ASE 3.22 does not map it).
    if 'momenta' in atoms.arrays:
        return atoms.get_velocities()
    for name in ('velocities', 'vel'):
        if name in atoms.arrays:
            return atoms.arrays[name]
    return None


def forces_of(atoms):
    if atoms.calc is not None and 'forces' in atoms.calc.results:
        return atoms.calc.results['forces']
    return atoms.arrays.get('forces')


def energy_of(atoms):
    if atoms.calc is not None and 'energy' in atoms.calc.results:
        return float(atoms.calc.results['energy'])
    return None


def info_text(value):
    """An info value as the text ASE wrote it."""
    if isinstance(value, (bool, np.bool_)):
        return 'T' if value else 'F'
    if isinstance(value, np.ndarray):
        return ' '.join(info_text(v) for v in value.ravel())
    return str(value)


def describe(atoms):
    def floats(a):
        return None if a is None else [float(x) for x in np.ravel(a)]
    return {
        'natoms': len(atoms),
        'numbers': [int(z) for z in atoms.numbers],
        'positions': floats(atoms.positions),
        'cell': floats(atoms.cell.array) if atoms.cell.any() else None,
        'pbc': [bool(p) for p in atoms.pbc],
        'velocities': floats(velocities_of(atoms)),
        'forces': floats(forces_of(atoms)),
        'energy': energy_of(atoms),
        'masses': floats(atoms.arrays.get('masses')),
        'info': {k: info_text(v) for k, v in atoms.info.items()
                 if k != 'energy'},
    }


def text_reference(frames):
    """The reference as 'keyword values...' lines that C reads easily."""
    def nums(xs):
        return 'none' if xs is None else ' '.join(repr(x) for x in xs)
    lines = ['element_masses ' + nums([float(m) for m in atomic_masses[1:]]),
             'element_symbols ' + ' '.join(chemical_symbols),
             'frames %d' % len(frames)]
    for f in frames:
        lines += ['natoms %d' % f['natoms'],
                  'numbers ' + ' '.join(str(z) for z in f['numbers']),
                  'positions ' + nums(f['positions']),
                  'cell ' + nums(f['cell']),
                  'pbc ' + ' '.join('1' if p else '0' for p in f['pbc']),
                  'velocities ' + nums(f['velocities']),
                  'forces ' + nums(f['forces']),
                  'energy ' + nums(None if f['energy'] is None
                                   else [f['energy']]),
                  'masses ' + nums(f['masses'])]
        lines += ['info %s %s' % kv for kv in f['info'].items()]
        lines.append('end')
    return '\n'.join(lines) + '\n'


def write(directory):
    path = directory + '/ase_written.xyz'
    ase.io.write(path, make_images(), format='extxyz')
    # Describe what ASE reads back: the file holds %16.8f columns, and both
    # sides must agree on those values.
    frames = [describe(a) for a in ase.io.read(path, index=':',
                                               format='extxyz')]
    with open(directory + '/ase_reference.json', 'w') as fp:
        json.dump({'frames': frames}, fp, indent=1)
    with open(directory + '/ase_reference.txt', 'w') as fp:
        fp.write(text_reference(frames))
    return 0


def same_info(ase_value, text):
    """ASE turns info values into numbers, booleans or arrays; compare them
    with the text mdflow wrote."""
    if isinstance(ase_value, (bool, np.bool_)):
        return text == ('T' if ase_value else 'F')
    if isinstance(ase_value, (int, float, np.integer, np.floating)):
        return float(text) == float(ase_value)
    if isinstance(ase_value, np.ndarray):
        return [float(x) for x in text.replace(',', ' ').split()] == \
            [float(x) for x in ase_value.ravel()]
    return str(ase_value) == text


def same_array(got, want):
    if got is None or want is None:
        return got is None and want is None
    got = np.ravel(np.asarray(got, dtype=float))
    return got.shape == (len(want),) and np.array_equal(got, np.array(want))


def compare(i, atoms, ref):
    """Yields one message per difference between atoms and ref frame i."""
    mine = describe(atoms)
    where = 'frame %d' % (i + 1)
    if mine['natoms'] != ref['natoms']:
        yield '%s: %d atoms, expected %d' % (where, mine['natoms'],
                                             ref['natoms'])
        return
    if mine['numbers'] != ref['numbers']:
        yield '%s: atomic numbers %s, expected %s' % (
            where, mine['numbers'], ref['numbers'])
    for key in ('positions', 'cell', 'velocities', 'forces', 'masses'):
        if not same_array(mine[key], ref.get(key)):
            yield '%s: %s differ:\n  ASE  %s\n  want %s' % (
                where, key, mine[key], ref.get(key))
    if mine['pbc'] != ref['pbc']:
        yield '%s: pbc %s, expected %s' % (where, mine['pbc'], ref['pbc'])
    if mine['energy'] != ref.get('energy'):
        yield '%s: energy %r, expected %r' % (where, mine['energy'],
                                               ref.get('energy'))
    info = {k: v for k, v in atoms.info.items() if k != 'energy'}
    # mdflow names the unit of the velocities column it writes (ASE's).
    unit = info.pop('velocities_unit', None)
    if ref.get('velocities') is not None and unit != 'sqrt(eV/amu)':
        yield '%s: velocities_unit %r, expected %r' % (where, unit, 'sqrt(eV/amu)')
    if ref.get('velocities') is None and unit is not None:
        yield '%s: velocities_unit %r without velocities' % (where, unit)
    for key, text in ref.get('info', {}).items():
        if key not in info:
            yield '%s: info key %r missing' % (where, key)
        elif not same_info(info[key], text):
            yield '%s: info %r is %r, expected %r' % (where, key, info[key],
                                                      text)
    for key in set(info) - set(ref.get('info', {})):
        yield '%s: unexpected info key %r' % (where, key)
    for name, col in ref.get('extra', {}).items():
        convert = {'R': float, 'I': int, 'S': str,
                   'L': lambda t: t in ('T', 'True')}[col['type']]
        want = [convert(t) for t in col['values']]
        got = atoms.arrays.get(name)
        if got is None or [convert(x) if col['type'] != 'L' else bool(x)
                           for x in np.ravel(got)] != want:
            yield '%s: column %r is %s, expected %s' % (where, name, got, want)
    extra = set(atoms.arrays) - KNOWN_ARRAYS - set(ref.get('extra', {}))
    for name in sorted(extra):
        yield '%s: unexpected column %r' % (where, name)


def read(path, ref_path):
    with open(ref_path) as fp:
        ref = json.load(fp)['frames']
    images = ase.io.read(path, index=':', format='extxyz')
    problems = []
    if len(images) != len(ref):
        problems.append('%d frames, expected %d' % (len(images), len(ref)))
    for i, (atoms, want) in enumerate(zip(images, ref)):
        problems.extend(compare(i, atoms, want))
    for p in problems:
        print('%s: %s' % (path, p), file=sys.stderr)
    if not problems:
        print('%s: ASE reads %d frame(s) matching %s' % (path, len(ref),
                                                          ref_path))
    return 1 if problems else 0


def main(argv):
    if len(argv) == 3 and argv[1] == 'write':
        return write(argv[2])
    if len(argv) == 4 and argv[1] == 'read':
        return read(argv[2], argv[3])
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == '__main__':
    sys.exit(main(sys.argv))
