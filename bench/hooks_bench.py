#!/usr/bin/python3
"""Cost of hooks: mdflow with a per-system CSV log every step against the
same run without it, side by side on this machine, in one run (the
reference here is mdflow itself without the hook: the question is what the
hook costs). Also a FIRE relaxation against ASE's FIRE, one system at a time
(python3-ase), when ASE is installed.

Called by bench/hooks.sh (which resolves MDFLOW); settings through the
environment as for mdbench.py: MDFLOW, NCORES, QUICK, REPEAT (best of N,
default 3), BENCH_OUT. Writes BENCH_OUT/hooks.json and prints a table.

Requirement (issue 3): logging every step slows a 1,000-system batch by
less than 5%.
"""
import json
import os
import shutil
import sys
import tempfile
import time

os.environ.setdefault("REPEAT", "3")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import mdbench as mb  # noqa: E402  (shares generators, runners and settings)

SPECIES = "Ar:%r:%r:%r" % (mb.AR_EPS, mb.AR_SIGMA, mb.AR_RC)
NSYS = 50 if mb.QUICK else 1000
STEPS = 20 if mb.QUICK else 100
RELAX_NSYS_ASE = 5 if mb.QUICK else 20


def md_cmd(xyz, log_path=None):
    cmd = mb.mdflow_cmd(xyz, STEPS, mb.B_DT_FS, mb.B_TEMP, mb.B_SKIN, SPECIES)
    if log_path:
        cmd += ["--log", log_path, "--log-every", "1"]
    return cmd


def case_logging(work):
    """Interleaved runs without and with the log; best loop time of each."""
    xyz = os.path.join(work, "clusters.xyz")
    mb.write_clusters_xyz(xyz, mb.make_clusters(NSYS))
    log_path = os.path.join(work, "log.csv")
    runs = {"plain": [], "log": []}
    for _ in range(mb.REPEAT):
        for tag, cmd in (("plain", md_cmd(xyz)), ("log", md_cmd(xyz, log_path))):
            r = mb.run_mdflow(work, tag, cmd)
            if r.get("error"):
                return {"error": r["error"]}
            runs[tag].append(r)
    best = {k: min(v, key=lambda r: r["loop_s"]) for k, v in runs.items()}
    rows = 0
    with open(log_path) as fp:
        rows = sum(1 for _ in fp) - 1
    res = {
        "systems": best["plain"]["systems"], "atoms": best["plain"]["atoms"], "steps": STEPS,
        "loop_s_plain": best["plain"]["loop_s"], "loop_s_log": best["log"]["loop_s"],
        "loop_s_plain_all": [r["loop_s"] for r in runs["plain"]],
        "loop_s_log_all": [r["loop_s"] for r in runs["log"]],
        "log_rows": rows, "log_bytes": os.path.getsize(log_path),
        "slowdown": best["log"]["loop_s"] / best["plain"]["loop_s"] - 1.0,
        "target_slowdown": 0.05,
    }
    res["meets_target"] = res["slowdown"] < res["target_slowdown"]
    return res


ASE_FIRE = r'''
import sys, time
import ase.io
from ase.calculators.lj import LennardJones
from ase.optimize import FIRE
frames = ase.io.read(sys.argv[1], index=":")
n = int(sys.argv[2]); fmax = float(sys.argv[3])
steps = 0; t0 = time.monotonic()
for a in frames[:n]:
    a.calc = LennardJones(sigma=%r, epsilon=%r, rc=%r)
    opt = FIRE(a, logfile=None)
    opt.run(fmax=fmax, steps=1000)
    steps += opt.nsteps
print("ASE_RESULT %%d %%d %%.6f" %% (n, steps, time.monotonic() - t0))
''' % (mb.AR_SIGMA, mb.AR_EPS, mb.AR_RC)


def case_relax(work):
    """FIRE to fmax 0.05: mdflow on every system at once vs ASE on a subset."""
    py = "/usr/bin/python3"
    xyz = os.path.join(work, "clusters.xyz")
    if not os.path.exists(xyz):
        mb.write_clusters_xyz(xyz, mb.make_clusters(NSYS))
    cmd = [mb.MDFLOW, "relax", "--input", xyz, "--optimizer", "fire", "--fmax", "0.05", "--max-steps", "1000",
           "--lj-species", SPECIES, "--skin", "1.0"]
    rc, wall, text = mb.run_timed(cmd, work, env={"STARPU_NCPU": str(mb.NCORES)})
    r = mb.parse_mdflow(text)
    if rc != 0 or "loop_s" not in r:
        return {"error": "mdflow relax exited %d: %s" % (rc, text.strip()[-400:])}
    out = {"mdflow_systems": r["systems"], "mdflow_loop_s": r["loop_s"], "mdflow_wall_s": wall,
           "mdflow_systems_per_s": r["systems"] / wall}
    script = os.path.join(work, "ase_fire.py")
    with open(script, "w") as fp:
        fp.write(ASE_FIRE)
    rc, wall_ase, text = mb.run_timed([py, script, xyz, str(RELAX_NSYS_ASE), "0.05"], work)
    line = [l for l in text.splitlines() if l.startswith("ASE_RESULT")]
    if rc != 0 or not line:
        out["ase_error"] = "ASE not available or failed (%d): %s" % (rc, text.strip()[-300:])
        return out
    n, steps, secs = line[0].split()[1:]
    out.update({"ase_systems": int(n), "ase_steps": int(steps), "ase_seconds": float(secs),
                "ase_systems_per_s": int(n) / float(secs)})
    out["throughput_ratio"] = out["mdflow_systems_per_s"] / out["ase_systems_per_s"]
    return out


def main():
    machine = mb.machine_info()
    work = os.environ.get("BENCH_WORK") or tempfile.mkdtemp(prefix="mdflow-hooks-")
    os.makedirs(work, exist_ok=True)
    try:
        results = {"machine": machine, "source": mb.source_info(), "ncores": mb.NCORES, "quick": mb.QUICK,
                   "repeat": mb.REPEAT, "date": time.strftime("%Y-%m-%dT%H:%M:%S")}
        results["logging"] = case_logging(work)
        results["relax_fire"] = case_relax(work)
    finally:
        if os.environ.get("KEEP", "0") in ("", "0"):
            shutil.rmtree(work, ignore_errors=True)
    os.makedirs(mb.OUT, exist_ok=True)
    path = os.path.join(mb.OUT, "hooks.json")
    with open(path, "w") as fp:
        json.dump(results, fp, indent=2)
    lg, rx = results["logging"], results["relax_fire"]
    print("\nmdflow hooks benchmark (%d cores, %s)" % (mb.NCORES, machine["cpu_model"]))
    if "error" in lg:
        print("  logging: ERROR %s" % lg["error"])
    else:
        print("  %-44s %10s %10s %9s" % ("case", "plain s", "with log", "slowdown"))
        print("  %-44s %10.3f %10.3f %8.1f%%  (target < 5%%: %s)" % (
            "MD, %d systems (%d atoms), CSV log every step" % (lg["systems"], lg["atoms"]),
            lg["loop_s_plain"], lg["loop_s_log"], 100 * lg["slowdown"], "met" if lg["meets_target"] else "NOT met"))
        print("  log: %d rows, %.1f MB" % (lg["log_rows"], lg["log_bytes"] / 1e6))
    if "error" in rx:
        print("  relax: ERROR %s" % rx["error"])
    else:
        print("  FIRE to fmax 0.05: mdflow %d systems in %.2f s (%.1f systems/s)" % (
            rx["mdflow_systems"], rx["mdflow_wall_s"], rx["mdflow_systems_per_s"]))
        if "ase_systems_per_s" in rx:
            print("                     ASE    %d systems in %.2f s (%.2f systems/s): mdflow %.0fx ASE" % (
                rx["ase_systems"], rx["ase_seconds"], rx["ase_systems_per_s"], rx["throughput_ratio"]))
        else:
            print("  ASE: %s" % rx.get("ase_error"))
    print("  results: %s" % path)


if __name__ == "__main__":
    main()
