#!/usr/bin/python3
"""Fidelity of `mdflow sched --simulate`: real runs of a workflow under each
policy with 1 and NCORES CPU workers, and the simulation of the same
machines (cpus=1, cpus=NCORES), side by side in one run on this machine.
The reference is the real run; the figure of merit is simulated / real
time per policy and worker count, and whether the simulation ranks the
policies as the real runs do.

Called by bench/simulate.sh; settings through the environment: MDFLOW,
NCORES, QUICK (the test's 24-system workflow instead of the built-in one),
REPEAT (real runs per policy, median kept; default 3), POLICIES, BENCH_OUT.
Writes BENCH_OUT/simulate.json and prints a table.
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import mdbench as mb  # noqa: E402  (settings, machine and source info)

REPEAT = max(1, int(os.environ.get("REPEAT", "3") or 3))
POLICIES = os.environ.get("POLICIES", "lws dmda eager random").split()

QUICK_WORKFLOW = """input: systems.xyz
model: {type: lj, shift: true}
stages:
  md: {method: langevin, dt_fs: 5, temperature_K: 20, steps: 60, params: {friction_per_fs: 0.01}}
composition: md
sampler: {max_atoms: 3000, refill_interval: 10}
seed: 3
"""


def quick_workflow(work):
    """The first 24 systems of the built-in dataset, as tests/test_simulate.sh."""
    src = os.path.join(mb.SRC, "examples", "argon_mixed.xyz")
    out, frames = [], 0
    with open(src) as fp:
        lines = fp.read().splitlines()
    i = 0
    while i < len(lines) and frames < 24:
        n = int(lines[i].split()[0])
        out.extend(lines[i:i + n + 2])
        i += n + 2
        frames += 1
    with open(os.path.join(work, "systems.xyz"), "w") as fp:
        fp.write("\n".join(out) + "\n")
    path = os.path.join(work, "wf.yaml")
    with open(path, "w") as fp:
        fp.write(QUICK_WORKFLOW)
    return path


def sched(work, ncpu, extra, tag, workflow):
    """One mdflow sched; its JSON, or an error."""
    out = os.path.join(work, tag + ".json")
    cmd = [mb.MDFLOW, "sched", "--policies", ",".join(POLICIES), "--no-gantt", "--json", out] + extra
    if workflow:
        cmd.append(workflow)
    env = dict(os.environ, STARPU_NCPU=str(ncpu), STARPU_SILENT="1")
    t0 = time.time()
    p = subprocess.run(cmd, cwd=work, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       universal_newlines=True)
    mb.log("  %s: %.1f s" % (" ".join(cmd[1:]), time.time() - t0))
    if p.returncode != 0:
        return {"error": (p.stderr.strip().splitlines() or ["exit %d" % p.returncode])[-1]}
    with open(out) as fp:
        return json.load(fp)


def by_policy(d):
    return {p["policy"]: p for p in d.get("policies", [])}


def order(walls):
    return sorted(walls, key=lambda k: walls[k])


def main():
    os.makedirs(mb.OUT, exist_ok=True)
    work = tempfile.mkdtemp(prefix="mdflow-bench-sim.")
    # The models this benchmark fits stay here: a user's are not touched.
    os.environ["STARPU_HOME"] = os.path.join(work, "starpu-home")
    workflow = quick_workflow(work) if mb.QUICK else None
    result = {"machine": mb.machine_info(), "source": mb.source_info(), "repeat": REPEAT, "policies": POLICIES,
              "workflow": workflow or "built-in (examples/relax_md.yaml)", "cases": []}
    counts = sorted({1, mb.NCORES})
    for ncpu in counts:
        mb.log("%d CPU worker%s" % (ncpu, "" if ncpu == 1 else "s"))
        real = sched(work, ncpu, ["--repeats", str(REPEAT)], "real%d" % ncpu, workflow)
        sim = sched(work, ncpu, ["--simulate", "cpus=%d" % ncpu], "sim%d" % ncpu, workflow)
        case = {"cpus": ncpu, "real": real, "simulated": sim}
        if "error" not in real and "error" not in sim:
            rp, sp = by_policy(real), by_policy(sim)
            case["rows"] = [{"policy": k, "real_s": rp[k]["wall_s"], "real_s_runs": rp[k]["wall_s_runs"],
                             "simulated_s": sp[k]["wall_s"], "ratio": sp[k]["wall_s"] / rp[k]["wall_s"]}
                            for k in POLICIES]
            case["recorded_s"] = sim["simulated"]["recorded_wall_s"]
            case["real_order"] = order({k: rp[k]["wall_s"] for k in POLICIES})
            case["simulated_order"] = order({k: sp[k]["wall_s"] for k in POLICIES})
        result["cases"].append(case)
    result["machine"]["loadavg_1min_at_end"] = os.getloadavg()[0]
    path = os.path.join(mb.OUT, "simulate.json")
    with open(path, "w") as fp:
        json.dump(result, fp, indent=1)
    print()
    print("mdflow sched --simulate against real runs (%s; %d real runs per policy, median; load %.1f -> %.1f)"
          % (result["workflow"], REPEAT, result["machine"]["loadavg_1min_at_start"] or 0,
             result["machine"]["loadavg_1min_at_end"]))
    print("%-5s %-8s %10s %13s %11s" % ("cpus", "policy", "real s", "simulated s", "sim / real"))
    for case in result["cases"]:
        if "rows" not in case:
            print("%-5d error: %s" % (case["cpus"], case["real"].get("error") or case["simulated"].get("error")))
            continue
        for r in case["rows"]:
            print("%-5d %-8s %10.3f %13.3f %10.2fx" % (case["cpus"], r["policy"], r["real_s"], r["simulated_s"],
                                                        r["ratio"]))
        print("      order, fastest first: real %s; simulated %s" % (" < ".join(case["real_order"]),
                                                                      " < ".join(case["simulated_order"])))
    print("results: %s" % path)
    if os.environ.get("KEEP", "0") in ("", "0"):
        shutil.rmtree(work, ignore_errors=True)
    return 0 if all("rows" in c for c in result["cases"]) else 1


if __name__ == "__main__":
    sys.exit(main())
