#!/usr/bin/python3
"""Cost of snapshot sinks: bench/sink_bench (C, public API) runs 1,000
argon clusters of 13-147 atoms for 1,000 Langevin steps (5 fs, 40 K) five
ways in one process, in interleaved rounds (best of REPEAT): (a) no
snapshots, (b) an HDF5 CSR file written every 100 steps, (c) the same with
deflate level 4, (d) a host-memory sink and (e) a device sink, every 100
steps. The reference is mdflow itself without snapshots: the question is
what writing them costs.

Called by bench/sinks.sh (which resolves SINK_BENCH); settings through the
environment: SINK_BENCH, NCORES (STARPU_NCPU, default nproc), STARPU_SCHED
(passed through when set), QUICK (1: 100 systems, 200 steps, snapshots
every 50), REPEAT (default 3), BENCH_OUT (default bench/results), KEEP (1:
keep the HDF5 files). Writes BENCH_OUT/sinks.json and prints a table.

Requirement: writing a snapshot of 1,000 systems every 100 steps slows the
run by less than 10%; the writer does not stall the workers.
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.dirname(HERE)


def env_int(name, default):
    v = os.environ.get(name, "")
    return int(v) if v.strip() else default


QUICK = os.environ.get("QUICK", "0") not in ("", "0")
NCORES = env_int("NCORES", os.cpu_count() or 1)
REPEAT = max(1, env_int("REPEAT", 3))
OUT = os.environ.get("BENCH_OUT", os.path.join(HERE, "results"))
PROG = os.environ.get("SINK_BENCH", os.path.join(SRC, "build", "bench", "sink_bench"))
KEEP = os.environ.get("KEEP", "0") not in ("", "0")
SYSTEMS, STEPS, EVERY = (100, 200, 50) if QUICK else (1000, 1000, 100)
TARGET_PCT = 10.0

H5PY_CHECK = r'''
import json, sys
import h5py
path, expect_sys, expect_atoms = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
with h5py.File(path, "r", swmr=True) as f:
    g = f["structures"]
    out = {"h5py": h5py.version.version, "systems": int(g["system_id"].shape[0]),
           "atom_ptr": int(g["atom_ptr"].shape[0]), "atoms": int(g["positions"].shape[0]),
           "atom_ptr_last": int(g["atom_ptr"][-1])}
out["ok"] = (out["systems"] == expect_sys and out["atom_ptr"] == expect_sys + 1
             and out["atoms"] == expect_atoms and out["atom_ptr_last"] == expect_atoms)
print(json.dumps(out))
'''


def machine_info():
    model = "unknown"
    try:
        with open("/proc/cpuinfo") as fp:
            for line in fp:
                if line.startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    try:
        load = os.getloadavg()[0]
    except OSError:
        load = None
    return {"nproc": os.cpu_count(), "cpu_model": model, "loadavg_1min_at_start": load}


def source_info():
    info = {"program": PROG}
    try:
        info["program_mtime"] = time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(os.path.getmtime(PROG)))
        rev = subprocess.run(["git", "-C", SRC, "rev-parse", "--short", "HEAD"], stdout=subprocess.PIPE,
                             stderr=subprocess.DEVNULL, universal_newlines=True)
        if rev.returncode == 0:
            info["commit"] = rev.stdout.strip()
            st = subprocess.run(["git", "-C", SRC, "status", "--porcelain", "--untracked-files=no"],
                                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, universal_newlines=True)
            info["tree_modified"] = bool(st.stdout.strip())
    except OSError:
        pass
    return info


def h5py_check(path, expect_sys, expect_atoms):
    """An independent reader's view of the file: this Python's h5py, else a
    python3 on PATH that has it; skipped when neither does."""
    for py in (sys.executable, shutil.which("python3")):
        if not py:
            continue
        r = subprocess.run([py, "-c", H5PY_CHECK, path, str(expect_sys), str(expect_atoms)],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True)
        if r.returncode == 0:
            res = json.loads(r.stdout)
            res["python"] = py
            return res
        if "No module named" not in r.stderr:
            return {"ok": False, "python": py, "error": r.stderr.strip()[-400:]}
    return {"skipped": "h5py not found"}


def main():
    if not os.access(PROG, os.X_OK):
        sys.exit("bench: %s is not a program: build the tree first (scripts/build.sh)" % PROG)
    machine = machine_info()
    work = os.environ.get("BENCH_WORK") or tempfile.mkdtemp(prefix="mdflow-sinks-")
    os.makedirs(work, exist_ok=True)
    env = dict(os.environ)
    env["STARPU_NCPU"] = str(NCORES)
    env.setdefault("STARPU_SILENT", "1")
    cmd = [PROG, "--systems", str(SYSTEMS), "--steps", str(STEPS), "--every", str(EVERY),
           "--repeat", str(REPEAT), "--dir", work, "--keep"]
    print("bench: %s (STARPU_NCPU=%d%s)" % (" ".join(cmd), NCORES,
          ", STARPU_SCHED=" + env["STARPU_SCHED"] if env.get("STARPU_SCHED") else ""), file=sys.stderr)
    t0 = time.monotonic()
    try:
        r = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, universal_newlines=True)
        total = time.monotonic() - t0
        if r.returncode != 0:
            sys.exit("bench: FAILED: sink_bench exited %d (its message is above)" % r.returncode)
        res = json.loads(r.stdout)
        nsnap = res["snapshots_per_system"]
        checks = {}
        for name, fname in (("hdf5", "snapshots.h5"), ("hdf5_gzip4", "snapshots_gzip4.h5")):
            checks[name] = h5py_check(os.path.join(work, fname), res["systems"] * nsnap, res["atoms"] * nsnap)
            if checks[name].get("ok") is False:
                sys.exit("bench: FAILED: %s as h5py reads it: %s" % (fname, json.dumps(checks[name])))
    finally:
        if not KEEP:
            shutil.rmtree(work, ignore_errors=True)
    try:
        load_end = os.getloadavg()[0]
    except OSError:
        load_end = None
    machine["loadavg_1min_at_end"] = load_end
    results = {"machine": machine, "source": source_info(), "ncores": NCORES, "quick": QUICK,
               "starpu_sched": env.get("STARPU_SCHED"), "date": time.strftime("%Y-%m-%dT%H:%M:%S"),
               "process_wall_s": total, "h5py_check": checks}
    results.update(res)
    os.makedirs(OUT, exist_ok=True)
    path = os.path.join(OUT, "sinks.json")
    with open(path, "w") as fp:
        json.dump(results, fp, indent=2)

    cases = res["cases"]
    print("\nmdflow snapshot sinks benchmark (%d cores, %s, scheduler %s)" % (
        NCORES, machine["cpu_model"], res["scheduler"]))
    print("  %d argon clusters (%d atoms), %d Langevin steps, a snapshot of every system every %d steps "
          "(%d per system), best of %d" % (res["systems"], res["atoms"], res["steps"], res["every"], nsnap,
                                           res["repeat"]))
    print("  %-32s %9s %13s %9s %10s %9s" % ("case", "wall s", "atom-steps/s", "slowdown", "file MB", "stored"))
    for key in ("none", "hdf5", "hdf5_gzip4", "host", "device"):
        c = cases.get(key)
        if not c:
            continue
        print("  %-32s %9.3f %13.3g %9s %10s %9s" % (
            c["label"], c["wall_s"], c["atom_steps_per_s"],
            "-" if key == "none" else "%+.1f%%" % c["slowdown_pct"],
            "%.1f" % (c["file_bytes"] / 1e6) if c["file_bytes"] >= 0 else "-",
            "-" if key == "none" else str(c["systems_stored"])))
    if "hdf5_slowdown_pct" in res:
        print("  target: (b) slows the run by < %.0f%%: %+.1f%%, %s" % (
            TARGET_PCT, res["hdf5_slowdown_pct"], "met" if res["meets_target"] else "NOT met"))
    for name, chk in checks.items():
        if "skipped" in chk:
            print("  %s file: read back by mdflow (%d systems); h5py check skipped (%s)" % (
                name, cases[name]["verified_systems"], chk["skipped"]))
        else:
            print("  %s file: read back by mdflow and h5py %s (%d systems, %d atoms)" % (
                name, chk["h5py"], chk["systems"], chk["atoms"]))
    print("  runs (wall s): " + "; ".join("%s %s" % (k, " ".join("%.2f" % x for x in c["wall_s_all"]))
                                          for k, c in cases.items()))
    print("  load average: %s at the start, %s at the end" % (machine["loadavg_1min_at_start"], load_end))
    print("  results: %s" % path)


if __name__ == "__main__":
    main()
