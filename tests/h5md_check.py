#!/usr/bin/python3
"""Checks H5MD trajectories written by mdflow (docs/hdf5.md).

Usage: h5md_check.py DUMP.json

DUMP.json ({"split": 0|1, "path": p, "frames": [...]}) holds every frame the
C test wrote, in write order (values it passed in; velocities in mdflow's
internal unit, forces in eV/Angstrom). With h5py: the H5MD 1.0 layout
(h5md version, creator, particle groups, box, units, step/time/value of
every element, species, mass, observables) and every value. For one file
per system ("{id}" in the path), MDAnalysis as well: Universe(path) and the
H5MDReader give the positions, velocities, forces, box dimensions and times
that were written (in MDAnalysis units: Angstrom, ps, Angstrom/ps,
kJ/(mol Angstrom)), and masses and elements once added from
particles/trajectory (docs/hdf5.md). Of a file of many systems, MDAnalysis
reads the first system written. Exits 77 when h5py or MDAnalysis is
missing."""
import json
import math
import sys

try:
    import h5py
    import numpy as np
except ImportError:
    sys.exit(77)

FS = 1e-15 * 1e10 * math.sqrt(1.6021766208e-19 / 1.660539040e-27)  # 1 fs, internal units
EV_KJMOL = 1.6021766208e-19 * 6.022140857e23 / 1000.0                # 1 eV in kJ/mol


def fail(msg):
    print("h5md_check.py:", msg, file=sys.stderr)
    sys.exit(1)


def s(v):
    return v.decode() if isinstance(v, bytes) else str(v)


def cell_dimensions(cell):
    """lengths and angles (degrees) of the cell rows, computed here"""
    a, b, c = (np.array(v) for v in cell)
    la, lb, lc = (np.linalg.norm(v) for v in (a, b, c))
    ang = lambda u, v, lu, lv: math.degrees(math.acos(np.dot(u, v) / (lu * lv)))
    return np.array([la, lb, lc, ang(b, c, lb, lc), ang(a, c, la, lc), ang(a, b, la, lb)])


def check_file(path, sysid, frames, split):
    with h5py.File(path, "r", swmr=True) as f:
        h = f["h5md"]
        if list(h.attrs["version"]) != [1, 0]:
            fail(f"{path}: h5md version {h.attrs['version']}")
        if s(h["creator"].attrs["name"]) != "mdflow" or "version" not in h["creator"].attrs:
            fail(f"{path}: creator")
        if "name" not in h["author"].attrs:
            fail(f"{path}: author name")
        g = f[f"particles/system_{sysid}"]
        first = frames[0]
        n = len(first["numbers"])
        box = g["box"]
        if int(box.attrs["dimension"]) != 3:
            fail("box dimension")
        want_b = ["periodic" if p else "none" for p in first["pbc"]]
        if [s(x) for x in box.attrs["boundary"]] != want_b:
            fail(f"system {sysid}: boundary {box.attrs['boundary']}, expected {want_b}")
        if ("edges" in box) != bool(first["has_cell"]):
            fail(f"system {sysid}: box/edges present: {'edges' in box}")
        if not np.array_equal(g["species"][:], first["numbers"]):
            fail(f"system {sysid}: species")
        if not np.array_equal(g["mass"][:], first["masses"]) or s(g["mass"].attrs["unit"]) != "u":
            fail(f"system {sysid}: mass")
        units = {"position": "Angstrom", "velocity": "Angstrom ps-1", "force": "kJ mol-1 Angstrom-1"}
        for el, u in units.items():
            if s(g[el]["value"].attrs["unit"]) != u:
                fail(f"system {sysid}: {el} unit")
            if s(g[el]["time"].attrs["unit"]) != "fs":
                fail(f"system {sysid}: {el} time unit")
            if g[el]["value"].shape != (len(frames), n, 3):
                fail(f"system {sysid}: {el} shape {g[el]['value'].shape}, {len(frames)} frames of {n} atoms")
            if g[el]["step"].shape != (len(frames),) or g[el]["time"].shape != (len(frames),):
                fail(f"system {sysid}: {el} step/time shapes")
        if split:
            obs = f["observables"]
        else:
            # MDAnalysis reads observables/<name>/value for every name there
            if "observables" in f and len(f["observables"]):
                fail(f"{path}: a shared file has /observables members {list(f['observables'])}")
            obs = f[f"mdflow/observables/system_{sysid}"]
        for k, fr in enumerate(frames):
            if g["position/step"][k] != fr["step"] or g["position/time"][k] != fr["time"]:
                fail(f"system {sysid} frame {k}: step/time")
            if not np.array_equal(g["position/value"][k], np.array(fr["positions"]).reshape(n, 3)):
                fail(f"system {sysid} frame {k}: positions")
            if not np.allclose(g["velocity/value"][k], np.array(fr["velocities_internal"]).reshape(n, 3) * FS * 1000,
                               rtol=1e-14, atol=0):
                fail(f"system {sysid} frame {k}: velocities")
            if not np.allclose(g["force/value"][k], np.array(fr["forces"]).reshape(n, 3) * EV_KJMOL,
                               rtol=1e-14, atol=0):
                fail(f"system {sysid} frame {k}: forces")
            if fr["has_cell"] and not np.array_equal(g["box/edges/value"][k], np.array(fr["cell"]).reshape(3, 3)):
                fail(f"system {sysid} frame {k}: box edges")
            if obs["potential_energy/value"][k] != fr["energy"] or obs["kinetic_energy/value"][k] != fr["kinetic"]:
                fail(f"system {sysid} frame {k}: observables")
            if obs["potential_energy/step"][k] != fr["step"]:
                fail(f"system {sysid} frame {k}: observable step")
        wo = f["mdflow/write_order"][:]
        if not all(int(r[1]) == sysid for r in wo) and split:
            fail(f"{path}: write_order holds other systems")


def check_mdanalysis(path, frames, split):
    """MDAnalysis reads the file's first particle group, and of a shared
    file that is the first system written (frames: that system's)"""
    try:
        import MDAnalysis as mda
        from MDAnalysis.coordinates.H5MD import H5MDReader
        from MDAnalysis.exceptions import NoDataError
        from MDAnalysis.topology.tables import Z2SYMB
    except ImportError:
        sys.exit(77)
    n = len(frames[0]["numbers"])
    u = mda.Universe(path)
    # MDAnalysis 2.4 has no H5MD topology parser: no masses or elements
    # unless added from the file (docs/hdf5.md's recipe)
    try:
        u.atoms.masses
        fail(f"{path}: MDAnalysis found masses without a topology: update docs/hdf5.md")
    except NoDataError:
        pass
    with h5py.File(path, "r") as f:
        g = f["particles/trajectory"]
        u.add_TopologyAttr("masses", g["mass"][:])
        u.add_TopologyAttr("elements", [Z2SYMB[z] for z in g["species"][:]])
        if g != f["particles"][list(f["particles"])[0]]:
            fail(f"{path}: particles/trajectory is not the first particle group MDAnalysis lists")
    if not np.array_equal(u.atoms.masses, frames[0]["masses"]):
        fail(f"{path}: masses {u.atoms.masses}, expected {frames[0]['masses']}")
    if list(u.atoms.elements) != [Z2SYMB[z] for z in frames[0]["numbers"]]:
        fail(f"{path}: elements {u.atoms.elements}")
    r = H5MDReader(path)
    for reader in (u.trajectory, r):
        if reader.n_frames != len(frames) or reader.n_atoms != n:
            fail(f"{path}: MDAnalysis sees {reader.n_frames} frames of {reader.n_atoms} atoms")
        for k, ts in enumerate(reader):
            fr = frames[k]
            if not np.allclose(ts.positions, np.array(fr["positions"]).reshape(n, 3), rtol=1e-6, atol=1e-5):
                fail(f"{path} frame {k}: MDAnalysis positions")
            if not np.allclose(ts.velocities, np.array(fr["velocities_internal"]).reshape(n, 3) * FS * 1000,
                               rtol=1e-5, atol=1e-6):
                fail(f"{path} frame {k}: MDAnalysis velocities (Angstrom/ps)")
            if not np.allclose(ts.forces, np.array(fr["forces"]).reshape(n, 3) * EV_KJMOL, rtol=1e-5, atol=1e-5):
                fail(f"{path} frame {k}: MDAnalysis forces (kJ/(mol Angstrom))")
            if abs(ts.time - fr["time"] / 1000.0) > 1e-9 * max(1.0, abs(ts.time)):
                fail(f"{path} frame {k}: MDAnalysis time {ts.time} ps, expected {fr['time'] / 1000.0}")
            if ts.data["step"] != fr["step"]:
                fail(f"{path} frame {k}: MDAnalysis step")
            if not split and "potential_energy" in ts.data:
                fail(f"{path} frame {k}: MDAnalysis found a potential energy in a shared file")
            if split and abs(ts.data["potential_energy"] - fr["energy"]) > 1e-12 * abs(fr["energy"]):
                fail(f"{path} frame {k}: MDAnalysis potential_energy")
            if fr["has_cell"]:
                want = cell_dimensions(np.array(fr["cell"]).reshape(3, 3))
                if ts.dimensions is None or not np.allclose(ts.dimensions, want, rtol=1e-5, atol=1e-4):
                    fail(f"{path} frame {k}: MDAnalysis dimensions {ts.dimensions}, expected {want}")
            elif ts.dimensions is not None:
                fail(f"{path} frame {k}: dimensions {ts.dimensions} for a system without a cell")
    r.close()


def main():
    dump = json.load(open(sys.argv[1]))
    path, split, frames = dump["path"], dump["split"], dump["frames"]
    by_sys = {}
    for fr in frames:
        by_sys.setdefault(fr["id"], []).append(fr)
    if split:
        for sysid, frs in by_sys.items():
            check_file(path.replace("{id}", str(sysid)), sysid, frs, True)
        for sysid, frs in by_sys.items():
            check_mdanalysis(path.replace("{id}", str(sysid)), frs, True)
    else:
        for sysid, frs in by_sys.items():
            check_file(path, sysid, frs, False)
        with h5py.File(path, "r", swmr=True) as f:
            wo = f["mdflow/write_order"][:]
            if [int(r[1]) for r in wo] != [fr["id"] for fr in frames]:
                fail(f"{path}: write_order {wo[:, 1]}")
            if [int(r[0]) for r in wo] != list(range(len(frames))):
                fail(f"{path}: write_order indices")
            if [int(r[2]) for r in wo] != [fr["status"] for fr in frames]:
                fail(f"{path}: write_order statuses")
        check_mdanalysis(path, by_sys[frames[0]["id"]], False)
    print(f"h5md_check.py: {path}: {len(frames)} frames of {len(by_sys)} systems match")


if __name__ == "__main__":
    main()
