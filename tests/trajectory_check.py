#!/usr/bin/python3
"""Checks a trajectory that mdflow md or relax wrote with --trajectory
(tests/test_trajectory.sh; README.md, docs/hdf5.md).

Usage: trajectory_check.py FORM TRAJ INPUT.xyz OUTPUT.xyz DT_FS EVERY md|relax

FORM: split (TRAJ holds {id}: one H5MD file per system), shared (one H5MD
file), h5 (CSR structure datasets) or xyz (extended XYZ). INPUT.xyz is what
the run read, OUTPUT.xyz its --output. Frames are expected at every step
0, EVERY, 2 EVERY, ... up to each system's last step (its mdf_step in the
output), and at that last step; the last frame equals the output (positions,
velocities, cell: exact in the HDF5 forms and XYZ). MDAnalysis (per-system
files, and the first system of a shared file) must give the positions (Å),
velocities (Å/ps: ASE's internal velocity x ase.units.fs x 1000), box
dimensions (ASE's cellpar() of the input), times (ps), steps, and the masses
and element symbols of the input once added from particles/trajectory (the
recipe of docs/hdf5.md). Exits 77 without h5py, ASE or MDAnalysis."""
import sys
import warnings

try:
    warnings.simplefilter("ignore")
    import ase.io
    import ase.units
    import h5py
    import numpy as np
except ImportError:
    sys.exit(77)

A_PER_PS = ase.units.fs * 1000.0  # an ASE internal velocity in Å/ps


def fail(msg):
    print("trajectory_check.py:", msg, file=sys.stderr)
    sys.exit(1)


def expected_steps(last, every):
    steps = list(range(0, last + 1, every))
    return steps if steps[-1] == last else steps + [last]


def check_velocity_unit(out):
    """the output's velocities are ASE's internal unit: 1/2 m v^2 is the
    kinetic energy it reports (eV)"""
    for a in out:
        ke = 0.5 * np.sum(a.get_masses()[:, None] * a.arrays["velocities"] ** 2)
        if abs(ke - a.info["kinetic_energy"]) > 1e-9 * max(1.0, ke):
            fail(f"system {a.info['mdf_system_id']}: 1/2 m v^2 = {ke}, kinetic_energy {a.info['kinetic_energy']}")


def check_h5md_group(path, g, a, inp, dt, every):
    """particle group g of system a (output frame) against theory"""
    want = expected_steps(a.info["mdf_step"], every)
    steps = g["position/step"][:].tolist()
    if steps != want:
        fail(f"{path}: system {a.info['mdf_system_id']}: steps {steps}, expected {want}")
    if not np.array_equal(g["position/time"][:], np.array(want) * dt):
        fail(f"{path}: times {g['position/time'][:]} fs, expected steps x {dt} fs")
    units = {"position": "Angstrom", "velocity": "Angstrom ps-1", "force": "kJ mol-1 Angstrom-1"}
    for el, unit in units.items():
        if g[f"{el}/value"].attrs["unit"] != unit.encode() and g[f"{el}/value"].attrs["unit"] != unit:
            fail(f"{path}: {el} unit {g[el + '/value'].attrs['unit']}")
    if not np.array_equal(g["position/value"][-1], a.positions):
        fail(f"{path}: last frame's positions differ from the output's")
    if not np.allclose(g["velocity/value"][-1], a.arrays["velocities"] * A_PER_PS, rtol=1e-12, atol=1e-15):
        fail(f"{path}: last frame's velocities are not the output's x ase.units.fs x 1000")
    if not np.array_equal(g["box/edges/value"][-1], a.cell[:]):
        fail(f"{path}: last frame's box differs from the output's cell")
    if not np.array_equal(g["mass"][:], inp.get_masses()) or not np.array_equal(g["species"][:], inp.numbers):
        fail(f"{path}: mass/species differ from the input's")


def check_mdanalysis(path, a, inp, dt, every):
    try:
        import MDAnalysis as mda
        from MDAnalysis.topology.tables import Z2SYMB
    except ImportError:
        sys.exit(77)
    u = mda.Universe(path)
    with h5py.File(path, "r") as f:  # docs/hdf5.md: MDAnalysis 2.4 reads no topology from H5MD
        g = f["particles/trajectory"]
        u.add_TopologyAttr("masses", g["mass"][:])
        u.add_TopologyAttr("elements", [Z2SYMB[z] for z in g["species"][:]])
    if not np.array_equal(u.atoms.masses, inp.get_masses()):
        fail(f"{path}: MDAnalysis masses {u.atoms.masses}, the input's {inp.get_masses()}")
    if list(u.atoms.elements) != inp.get_chemical_symbols():
        fail(f"{path}: MDAnalysis elements {list(u.atoms.elements)}, the input's {inp.get_chemical_symbols()}")
    want = expected_steps(a.info["mdf_step"], every)
    if u.trajectory.n_frames != len(want) or len(u.atoms) != len(inp):
        fail(f"{path}: MDAnalysis sees {u.trajectory.n_frames} frames of {len(u.atoms)} atoms")
    for k, ts in enumerate(u.trajectory):
        if ts.data["step"] != want[k] or abs(ts.time - want[k] * dt / 1000.0) > 1e-12:
            fail(f"{path} frame {k}: MDAnalysis step {ts.data['step']}, time {ts.time} ps")
        if not np.allclose(ts.dimensions, inp.cell.cellpar(), rtol=1e-6, atol=1e-4):
            fail(f"{path} frame {k}: MDAnalysis dimensions {ts.dimensions}, ASE cellpar {inp.cell.cellpar()}")
    ts = u.trajectory[-1]  # iterating to the end rewinds to frame 0
    if not np.allclose(ts.positions, a.positions, rtol=0, atol=1e-4):
        fail(f"{path}: MDAnalysis's last positions differ from the output's")
    if not np.allclose(ts.velocities, a.arrays["velocities"] * A_PER_PS, rtol=1e-5, atol=1e-5):
        fail(f"{path}: MDAnalysis's last velocities (Å/ps) differ from the output's x ase.units.fs x 1000")


def check_xyz(path, out, every):
    frames = ase.io.read(path, ":")
    keys = [(f.info["mdf_step"], f.info["mdf_system_id"]) for f in frames]
    if keys != sorted(keys):
        fail(f"{path}: frames not ordered by step, then system: {keys}")
    for a in out:
        sid = a.info["mdf_system_id"]
        mine = [f for f in frames if f.info["mdf_system_id"] == sid]
        want = expected_steps(a.info["mdf_step"], every)
        if [f.info["mdf_step"] for f in mine] != want:
            fail(f"{path}: system {sid}: steps {[f.info['mdf_step'] for f in mine]}, expected {want}")
        last = mine[-1]
        if not (np.array_equal(last.positions, a.positions) and np.array_equal(last.cell[:], a.cell[:]) and
                np.array_equal(last.arrays["velocities"], a.arrays["velocities"])):
            fail(f"{path}: system {sid}: the last frame differs from the output")


def check_h5(path, out, every):
    with h5py.File(path, "r") as f:
        g = f["structures"]
        ids, steps, ptr = g["system_id"][:], g["step"][:], g["atom_ptr"][:]
        for a in out:
            sid = a.info["mdf_system_id"]
            rows = sorted((int(steps[i]), i) for i in range(len(ids)) if ids[i] == sid)
            want = expected_steps(a.info["mdf_step"], every)
            if [s for s, _ in rows] != want:
                fail(f"{path}: system {sid}: steps {[s for s, _ in rows]}, expected {want}")
            i = rows[-1][1]
            if not np.array_equal(g["positions"][ptr[i]:ptr[i + 1]], a.positions):
                fail(f"{path}: system {sid}: the last frame differs from the output")


def main():
    form, traj, inp_path, out_path = sys.argv[1:5]
    dt, every = float(sys.argv[5]), int(sys.argv[6])
    inp, out = ase.io.read(inp_path, ":"), ase.io.read(out_path, ":")
    if sys.argv[7] == "md":  # a relaxation's output has FIRE's velocities but no kinetic energy
        check_velocity_unit(out)
    if form == "xyz":
        check_xyz(traj, out, every)
    elif form == "h5":
        check_h5(traj, out, every)
    elif form == "split":
        for a in out:
            sid = a.info["mdf_system_id"]
            path = traj.replace("{id}", str(sid))
            with h5py.File(path, "r") as f:
                check_h5md_group(path, f["particles/trajectory"], a, inp[sid], dt, every)
            check_mdanalysis(path, a, inp[sid], dt, every)
    elif form == "shared":
        with h5py.File(traj, "r") as f:
            for a in out:
                sid = a.info["mdf_system_id"]
                check_h5md_group(traj, f[f"particles/system_{sid}"], a, inp[sid], dt, every)
            first = int(f["mdflow/write_order"][0, 1])
        check_mdanalysis(traj, out[first], inp[first], dt, every)  # MDAnalysis reads the first system written
    else:
        fail(f"unknown form {form}")
    print(f"trajectory_check.py: {traj} ({form}): {len(out)} systems match")


if __name__ == "__main__":
    main()
