#!/usr/bin/env python3
"""GPU benchmark: mdflow on the CPUs only, on the GPU, and on both, for the
cases a GPU node is bought for. Part of scripts/gpu-check.sh (its `bench`
phase); runs anywhere mdflow was built against a StarPU with CUDA.

Cases (the inputs of bench/mdbench.py, so figures compare with bench/run.sh):
  inlj-32k    in.lj, 32,000 atoms (fcc, reduced density 0.8442), 100 steps
  inlj-1m     in.lj, 1,000,188 atoms, 50 steps
  clusters-1k   1,000 argon clusters of 32-256 atoms, 100 NVE steps
  clusters-8k   8,000 argon clusters of 32-256 atoms, 100 NVE steps
Modes (one mdflow process each, StarPU's environment variables):
  cpu    every core a CPU worker, no CUDA worker (STARPU_NCUDA=0)
  gpu    one CUDA worker and one CPU worker, scheduler dmda, MDF_CUDA_ONLY=1:
         every task with a CUDA implementation runs on the GPU, the CPU
         worker takes the host-only ones (census, callbacks); the batch
         stays on the GPU
  both   every core and the GPU, scheduler dmdas
Each run has a time limit (GPU_BENCH_TIMEOUT, default 240 s) so that the
phase fits in 10 minutes; a run that hits it is reported as such.

The gpu and both modes first run the case once for GPU_BENCH_WARMUP steps
(default 20; 0: none), untimed: dmda and dmdas place tasks by the codelets'
performance models, and until those are calibrated (10 measurements per
codelet, size class and architecture, kept in STARPU_HOME) StarPU places
tasks to measure them, such as whole-system force tasks on the one CPU
worker of the gpu mode. The first GPU run (an H200, 2026-11-28) measured
that calibration: 16.8 s for in.lj 1 M atoms against 5.5 s on 16 cores.

Environment: MDFLOW (the program), BENCH_OUT (folder for gpu.json; default
bench/results), GPU_BENCH_CASES (space-separated subset), GPU_BENCH_MODES,
GPU_BENCH_TIMEOUT, GPU_BENCH_WARMUP, GPU_BENCH_LOGS (a folder for each run's
output; default a temporary one), NCORES (CPU workers in the cpu and both modes).
Writes gpu.json and prints a table."""
import json
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import mdbench  # noqa: E402  (generators and the output parser)

MDFLOW = os.environ.get("MDFLOW", "mdflow")
OUT = os.environ.get("BENCH_OUT", os.path.join(HERE, "results"))
NCORES = int(os.environ.get("NCORES", "") or os.cpu_count() or 1)
TIMEOUT = float(os.environ.get("GPU_BENCH_TIMEOUT", "240"))
CASES = os.environ.get("GPU_BENCH_CASES", "inlj-32k clusters-1k inlj-1m clusters-8k").split()
WARMUP = int(os.environ.get("GPU_BENCH_WARMUP", "20"))
MODES = os.environ.get("GPU_BENCH_MODES", "cpu gpu both").split()

MODE_ENV = {
    "cpu": {"STARPU_NCPU": str(NCORES), "STARPU_NCUDA": "0"},
    "gpu": {"STARPU_NCPU": "1", "STARPU_NCUDA": "1", "STARPU_SCHED": "dmda", "MDF_CUDA_ONLY": "1"},
    "both": {"STARPU_NCPU": str(max(1, NCORES - 1)), "STARPU_NCUDA": "1", "STARPU_SCHED": "dmdas"},
}


def log(msg):
    print(msg, flush=True)


def case_inputs(work, case):
    """(xyz path, atoms, systems, mdflow md arguments) of a case."""
    tau_fs = 1.0 / mdbench.fs_internal()
    if case.startswith("inlj-"):
        ncell, steps = (20, 100) if case == "inlj-32k" else (63, 50)
        xyz = os.path.join(work, case + ".xyz")
        natoms = mdbench.write_inlj_xyz(xyz, ncell)
        args = ["--steps", str(steps), "--dt", repr(0.005 * tau_fs), "--temperature", repr(1.44 / mdbench.KB_EV),
                "--skin", "0.3", "--lj-species", "Ar:1:1:2.5"]
        return xyz, natoms, 1, steps, args
    nsys = 1000 if case == "clusters-1k" else 8000
    clusters = mdbench.make_clusters(nsys)
    xyz = os.path.join(work, case + ".xyz")
    mdbench.write_clusters_xyz(xyz, clusters)
    steps = 100
    species = "Ar:%r:%r:%r" % (mdbench.AR_EPS, mdbench.AR_SIGMA, mdbench.AR_RC)
    args = ["--steps", str(steps), "--dt", repr(mdbench.B_DT_FS), "--temperature", repr(mdbench.B_TEMP),
            "--skin", repr(mdbench.B_SKIN), "--lj-species", species]
    return xyz, sum(len(c) for c in clusters), nsys, steps, args


def warm_up(work, mode, xyz, args, env):
    """The case for WARMUP steps (models calibrated); its loop time, or None."""
    i = args.index("--steps")
    short = args[:i + 1] + [str(min(WARMUP, int(args[i + 1])))] + args[i + 2:]
    try:
        p = subprocess.run([MDFLOW, "md", "--input", xyz, "--quiet"] + short, cwd=work, env=env,
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True, timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        return None
    return mdbench.parse_mdflow(p.stdout).get("loop_s") if p.returncode == 0 else None


def run_mode(work, case, mode, xyz, args):
    cmd = [MDFLOW, "md", "--input", xyz, "--quiet"] + args
    env = dict(os.environ)
    env.update(MODE_ENV[mode])
    warm = warm_up(work, mode, xyz, args, env) if WARMUP > 0 and mode != "cpu" else None
    t0 = time.monotonic()
    try:
        p = subprocess.run(cmd, cwd=work, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           universal_newlines=True, timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        return {"error": "time limit of %g s reached" % TIMEOUT, "env": MODE_ENV[mode]}
    wall = time.monotonic() - t0
    with open(os.path.join(os.environ.get("GPU_BENCH_LOGS") or work, "%s_%s.out" % (case, mode)), "w") as fp:
        fp.write(p.stdout)
    r = mdbench.parse_mdflow(p.stdout)
    if p.returncode != 0 or "loop_s" not in r:
        return {"error": "mdflow exited %d: %s" % (p.returncode, p.stdout.strip()[-600:]), "env": MODE_ENV[mode]}
    r["wall_s"] = wall
    r["warmup_steps"] = min(WARMUP, r["steps"]) if mode != "cpu" and WARMUP > 0 else 0
    r["warmup_loop_s"] = warm
    r["atom_steps_per_s"] = r["atoms"] * r["steps"] / r["loop_s"]
    r["cuda_tasks"] = sum(w["tasks"] for w in r["workers"] if "CUDA" in w["name"].upper())
    r["cpu_tasks"] = sum(w["tasks"] for w in r["workers"] if "CUDA" not in w["name"].upper())
    r["env"] = MODE_ENV[mode]
    r["command"] = " ".join(cmd)
    return r


def gpu_name():
    try:
        p = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version,memory.total", "--format=csv,noheader"],
                           stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, universal_newlines=True, timeout=30)
        return p.stdout.strip() or None
    except (OSError, subprocess.TimeoutExpired):
        return None


def main():
    os.makedirs(OUT, exist_ok=True)
    work = tempfile.mkdtemp(prefix="mdflow-gpu-bench-")
    machine = mdbench.machine_info()
    machine["gpu"] = gpu_name()
    results = []
    for case in CASES:
        xyz, natoms, nsys, steps, args = case_inputs(work, case)
        log("== %s: %d atoms in %d systems, %d steps ==" % (case, natoms, nsys, steps))
        row = {"case": case, "natoms": natoms, "nsystems": nsys, "steps": steps, "modes": {}}
        for mode in MODES:
            r = run_mode(work, case, mode, xyz, args)
            row["modes"][mode] = r
            log("  %-5s %s" % (mode, r.get("error") or "loop %.3f s (%.3g atom-steps/s), total %.3f s, tasks CPU %d "
                               "CUDA %d" % (r["loop_s"], r["atom_steps_per_s"], r["wall_s"], r["cpu_tasks"],
                                            r["cuda_tasks"])))
        cpu = row["modes"].get("cpu", {})
        for mode in ("gpu", "both"):
            r = row["modes"].get(mode, {})
            if cpu.get("loop_s") and r.get("loop_s"):
                row["speedup_%s_over_cpu" % mode] = cpu["loop_s"] / r["loop_s"]
        results.append(row)
        os.remove(xyz)
    doc = {"benchmark": "gpu", "machine": machine, "ncores": NCORES, "timeout_s": TIMEOUT, "cases": results}
    path = os.path.join(OUT, "gpu.json")
    with open(path, "w") as fp:
        json.dump(doc, fp, indent=2)
        fp.write("\n")
    log("")
    log("%-12s %10s %9s | %10s %10s %10s | %8s %8s" % ("case", "atoms", "systems", "cpu s", "gpu s", "both s",
                                                       "gpu/cpu", "both/cpu"))
    for row in results:
        def cell(mode):
            r = row["modes"].get(mode)
            return "%10.3f" % r["loop_s"] if r and r.get("loop_s") else "%10s" % ("limit" if r else "-")
        log("%-12s %10d %9d | %s %s %s | %8s %8s" % (
            row["case"], row["natoms"], row["nsystems"], cell("cpu"), cell("gpu"), cell("both"),
            "%.2fx" % row["speedup_gpu_over_cpu"] if "speedup_gpu_over_cpu" in row else "-",
            "%.2fx" % row["speedup_both_over_cpu"] if "speedup_both_over_cpu" in row else "-"))
    log("(loop time of the step loop; speed-ups are cpu time / mode time; %d CPU cores; GPU: %s)"
        % (NCORES, machine["gpu"]))
    log("JSON: %s" % path)
    failed = any(r.get("error") and "time limit" not in r["error"] for row in results for r in row["modes"].values())
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
