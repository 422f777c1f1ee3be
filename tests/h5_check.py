#!/usr/bin/python3
"""Checks an mdflow CSR structure file (docs/hdf5.md) with h5py.

Usage: h5_check.py FILE DUMP.json [MIN_SYSTEMS]

DUMP.json holds the systems the C test wrote ({"systems": [...]}, the values
it passed in, velocities in mdflow's internal unit). Without MIN_SYSTEMS the
file must hold exactly those systems; with it (a killed writer), at least
MIN_SYSTEMS and at most all of them. Every value is compared; velocities
are converted to Angstrom/fs here and the stress is recomputed from the
virial and the cell. The file is opened with swmr=True, as after a crash.
Exits 77 when h5py is missing."""
import json
import math
import sys

try:
    import h5py
    import numpy as np
except ImportError:
    sys.exit(77)

# 1 fs in mdflow's internal time unit (ASE's units.fs, CODATA 2014)
FS = 1e-15 * 1e10 * math.sqrt(1.6021766208e-19 / 1.660539040e-27)


def fail(msg):
    print("h5_check.py:", msg, file=sys.stderr)
    sys.exit(1)


def main():
    path, dump = sys.argv[1], sys.argv[2]
    min_systems = int(sys.argv[3]) if len(sys.argv) > 3 else None
    ref = json.load(open(dump))["systems"]
    with h5py.File(path, "r", swmr=True) as f:
        g = f["structures"]
        if g.attrs["format"] != "mdflow-structures" and g.attrs["format"] != b"mdflow-structures":
            fail("format attribute")
        if int(g.attrs["version"]) != 1:
            fail("version attribute")
        # the reader's rule: complete systems from atom_ptr and per-system datasets
        ptr = g["atom_ptr"][:]
        per_sys = ["cell", "pbc", "energy", "kinetic_energy", "fmax", "virial", "stress",
                   "system_id", "step", "status", "flags", "time"]
        n = min([len(ptr) - 1] + [g[k].shape[0] for k in per_sys])
        if min_systems is None:
            if n != len(ref):
                fail(f"{n} systems in the file, {len(ref)} written")
        elif not (min_systems <= n <= len(ref)):
            fail(f"{n} systems in the file: expected {min_systems} to {len(ref)}")
        if ptr[0] != 0:
            fail("atom_ptr[0] != 0")
        for k in list(g.keys()):
            d = g[k]
            if d.chunks is None or d.maxshape[0] is not None:
                fail(f"{k}: not chunked with an unlimited first dimension")
        units = {"positions": "Angstrom", "velocities": "Angstrom/fs", "forces": "eV/Angstrom",
                 "masses": "amu", "cell": "Angstrom", "energy": "eV", "kinetic_energy": "eV",
                 "fmax": "eV/Angstrom", "virial": "eV", "stress": "eV/Angstrom^3", "time": "fs"}
        for k, u in units.items():
            got = g[k].attrs["unit"]
            got = got.decode() if isinstance(got, bytes) else got
            if got != u:
                fail(f"{k}: unit {got!r}, expected {u!r}")
        pos, vel, frc = g["positions"], g["velocities"], g["forces"]
        mass, num = g["masses"], g["numbers"]
        natoms = 0
        for i in range(n):
            r = ref[i]
            a, b = int(ptr[i]), int(ptr[i + 1])
            m = len(r["numbers"])
            if a != natoms or b - a != m:
                fail(f"system {i}: atom_ptr {a}..{b}, expected {natoms}..{natoms + m}")
            natoms += m
            exact = {
                "positions": (pos[a:b], np.array(r["positions"]).reshape(m, 3)),
                "forces": (frc[a:b], np.array(r["forces"]).reshape(m, 3)),
                "masses": (mass[a:b], np.array(r["masses"])),
                "numbers": (num[a:b], np.array(r["numbers"])),
                "cell": (g["cell"][i], np.array(r["cell"]).reshape(3, 3) if r["has_cell"] else np.zeros((3, 3))),
                "pbc": (g["pbc"][i], np.array(r["pbc"])),
                "energy": (g["energy"][i], r["energy"]),
                "kinetic_energy": (g["kinetic_energy"][i], r["kinetic"]),
                "fmax": (g["fmax"][i], r["fmax"]),
                "virial": (g["virial"][i], np.array(r["virial"]).reshape(3, 3)),
                "system_id": (g["system_id"][i], r["id"]),
                "step": (g["step"][i], r["step"]),
                "status": (g["status"][i], r["status"]),
                "flags": (g["flags"][i], r["flags"]),
                "time": (g["time"][i], r["time"]),
            }
            for k, (got, want) in exact.items():
                if not np.array_equal(np.asarray(got), np.asarray(want)):
                    fail(f"system {i}: {k} = {got!r}, expected {want!r}")
            want_v = np.array(r["velocities_internal"]).reshape(m, 3) * FS
            if not np.allclose(vel[a:b], want_v, rtol=1e-14, atol=0):
                fail(f"system {i}: velocities (Angstrom/fs) differ")
            cell = np.array(r["cell"]).reshape(3, 3)
            vol = abs(np.linalg.det(cell)) if r["has_cell"] else 0.0
            want_s = -np.array(r["virial"]).reshape(3, 3) / vol if vol > 0 else np.zeros((3, 3))
            if not np.allclose(g["stress"][i], want_s, rtol=1e-12, atol=1e-300):
                fail(f"system {i}: stress {g['stress'][i]!r}, expected {want_s!r}")
    print(f"h5_check.py: {path}: {n} systems match")


if __name__ == "__main__":
    main()
