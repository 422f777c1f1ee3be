#!/usr/bin/env python3
"""mdflow test helper: extended-XYZ round trips through `mdflow md`, `relax`
and `run`, judged by ASE (the reference reader and calculator).

    xyz_roundtrip_check.py make KIND FILE
        writes two periodic argon frames with ASE: a constraint (KIND l1:
        FixAtoms, which ASE writes as move_mask:L:1; KIND l3: FixCartesian,
        move_mask:L:3, with two atoms fixed in x, y and z and one in y only),
        initial charges, tags, a float array "foo" and an int array "bar".
    xyz_roundtrip_check.py check KIND IN OUT EPSILON SIGMA CUTOFF [md]
        reads mdflow's OUT with ase.io.read and checks every frame against
        IN: the same constraint; fully fixed atoms at exactly their input
        positions while the others moved; charges, tags, foo and bar equal,
        as integers where they were; an atom fixed in some directions only
        moving in those too (mdflow freezes whole atoms); get_stress() and
        get_potential_energy() equal to ase.calculators.lj.LennardJones
        (smooth=False: pair energies shifted to 0 at the cutoff, mdflow's
        --lj-shift) at OUT's positions and cell, within 1e-10 relative; and
        velocities_unit naming ASE's unit; and with "md" (optimisers
        report no kinetic energy), the velocities in that unit: ASE's
        kinetic energy of them equals the kinetic_energy key, not 0.

Prints what differs; exits 0 when all holds, 1 otherwise, 77 without ASE."""
import sys

try:
    import numpy as np
    from ase.build import bulk
    from ase.calculators.lj import LennardJones
    from ase.constraints import FixAtoms, FixCartesian
    from ase.io import read, write
except ImportError as e:  # pragma: no cover
    print(f"SKIP: no ASE/numpy ({e})")
    sys.exit(77)

EXTRAS = ("initial_charges", "tags", "foo", "bar")
INTEGER_EXTRAS = ("tags", "bar")
TOL = 1e-10


def make(kind, path):
    rng = np.random.default_rng(7)
    frames = []
    for k, rep in enumerate([(2, 2, 2), (2, 2, 3)]):
        a = bulk("Ar", "fcc", a=5.26, cubic=True).repeat(rep)
        a.positions += rng.normal(0.0, 0.05, a.positions.shape)
        n = len(a)
        a.set_initial_charges(rng.normal(0.0, 1.0, n))
        a.set_tags(np.arange(n) % 3 + 10 * k)
        a.new_array("foo", rng.normal(0.0, 1.0, n))
        a.new_array("bar", (np.arange(n) * 7 - 3 + k).astype(int))
        if kind == "l1":
            a.set_constraint(FixAtoms(indices=[0, 3, n - 1]))
        elif kind == "l3":
            a.set_constraint([FixCartesian(0), FixCartesian(3)])
        else:  # "partial": atom 5 fixed in y only, which mdflow refuses
            a.set_constraint([FixCartesian(0), FixCartesian(5, mask=(0, 1, 0))])
        frames.append(a)
    # ASE 3.22 writes constraints only when move_mask is asked for by name.
    write(path, frames, columns=["symbols", "positions", "move_mask", *EXTRAS])


def fully_fixed(atoms):
    """Indices of the atoms the constraints fix in every direction."""
    fixed = set()
    for c in atoms.constraints:
        if isinstance(c, FixAtoms):
            fixed.update(int(i) for i in c.index)
        elif isinstance(c, FixCartesian) and not c.mask.any():  # mask: directions that may move
            fixed.add(int(c.a))
    return sorted(fixed)


def describe(atoms):
    """The constraints, comparably: FixAtoms' indices, FixCartesian's movable directions."""
    out = []
    for c in atoms.constraints:
        if isinstance(c, FixAtoms):
            out.append(("FixAtoms", sorted(int(i) for i in c.index)))
        elif isinstance(c, FixCartesian):
            out.append(("FixCartesian", int(c.a), [bool(x) for x in c.mask]))
        else:
            out.append((type(c).__name__,))
    return sorted(out) if out and out[0][0] == "FixCartesian" else out


def check_frame(k, a, b, lj, md, problems):
    def bad(msg):
        problems.append(f"frame {k}: {msg}")

    if len(a) != len(b) or list(a.numbers) != list(b.numbers):
        bad(f"{len(b)} atoms, expected {len(a)} with the input's elements")
        return
    want, got = describe(a), describe(b)
    if not want:
        bad("the input has no constraint (bad test input)")
    if got != want:
        bad(f"constraints {got}, expected {want}")
    fixed = fully_fixed(a)
    free = [i for i in range(len(a)) if i not in fixed]
    for i in fixed:
        if not np.array_equal(a.positions[i], b.positions[i]):
            bad(f"fixed atom {i} moved by {b.positions[i] - a.positions[i]} Å")
    moved = np.abs(b.positions[free] - a.positions[free]).max()
    if not moved > 1e-4:
        bad(f"the free atoms did not move (largest change {moved} Å): nothing was run")
    for name in EXTRAS:
        x, y = a.arrays.get(name), b.arrays.get(name)
        if y is None:
            bad(f"no per-atom array {name!r} (arrays: {sorted(b.arrays)})")
        elif not np.array_equal(x, y):
            bad(f"{name} differs: {y[:4]}..., expected {x[:4]}...")
        elif name in INTEGER_EXTRAS and y.dtype.kind != "i":
            bad(f"{name} read back as {y.dtype}, expected integers")
    ref = b.copy()
    ref.set_constraint()
    ref.calc = lj
    try:
        stress, energy = b.get_stress(), b.get_potential_energy()
    except Exception as e:  # ASE raises when the file has no stress
        bad(f"ASE reads no stress or energy: {type(e).__name__}: {e}")
        return
    s_ref, e_ref = ref.get_stress(), ref.get_potential_energy()
    if not np.abs(stress - s_ref).max() <= TOL * np.abs(s_ref).max():
        bad(f"stress {stress}, ASE's LennardJones {s_ref}")
    if not abs(energy - e_ref) <= TOL * abs(e_ref):
        bad(f"energy {energy!r}, ASE's LennardJones {e_ref!r}")
    unit = b.info.get("velocities_unit")
    if unit != "sqrt(eV/amu)":
        bad(f"velocities_unit is {unit!r}, expected 'sqrt(eV/amu)' (ASE's unit)")
    ke = b.info.get("kinetic_energy")
    v = b.arrays.get("velocities")
    if v is None or ke is None:
        bad("no velocities or kinetic_energy")
    elif md and not ke > 0:
        bad(f"kinetic_energy {ke!r} after MD at a temperature")
    elif md:
        kin = b.copy()
        kin.set_constraint()
        kin.set_velocities(v)
        if not abs(kin.get_kinetic_energy() - ke) <= 1e-12 * max(abs(ke), 1e-300):
            bad(f"ASE's kinetic energy of the velocities {kin.get_kinetic_energy()!r} != kinetic_energy {ke!r}")


def check(kind, inp, out, eps, sig, rc, md):
    ins, outs = read(inp, ":"), read(out, ":")
    problems = []
    if len(ins) != len(outs):
        problems.append(f"{len(outs)} frames, expected {len(ins)}")
    lj = LennardJones(epsilon=eps, sigma=sig, rc=rc, smooth=False)
    for k, (a, b) in enumerate(zip(ins, outs)):
        check_frame(k, a, b, lj, md, problems)
    for p in problems:
        print(p)
    print(f"{kind}: {len(outs)} frames, {len(problems)} problems")
    return 1 if problems else 0


def main():
    if len(sys.argv) == 4 and sys.argv[1] == "make":
        make(sys.argv[2], sys.argv[3])
        return 0
    if len(sys.argv) in (8, 9) and sys.argv[1] == "check":
        md = sys.argv[8:] == ["md"]
        return check(sys.argv[2], sys.argv[3], sys.argv[4], *map(float, sys.argv[5:8]), md)
    print(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main())
