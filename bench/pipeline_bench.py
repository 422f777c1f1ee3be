#!/usr/bin/python3
"""Relax-then-MD pipeline benchmark: 1,000 mixed-size argon clusters (13-147
atoms) relaxed with FIRE to fmax 0.05 eV/Å, then 1,000 steps of Langevin NVT
MD at 40 K each, four ways on this machine in one run:

  (a) mdflow run WORKFLOW.yaml: the stages fused (relax + md) with inflight
      batching (mdf_stage_run_inflight); a sweep over the sampler's max_atoms,
      the fastest is case (a)
  (b) mdflow run --sequential WORKFLOW.yaml: the same workflow without
      fusion or inflight batching: the sampler packs a static batch within
      the same max_atoms, relax runs on it until every system has left, then
      md, then the next batch; the same sweep, the fastest is case (b)
  (b') mdflow relax, then mdflow md, each on the whole dataset at once: no
      budget at all, so nothing to batch (reported, not a target)
  (c) ASE (python3-ase) one system at a time: FIRE, then Langevin, on a subset
      spread over the sizes, extrapolated to the whole dataset
  (d) LAMMPS one system at a time in one process (a clear/read_data loop in
      one input): min_style fire with min_modify norm max, then fix nve +
      fix langevin; every system by default (or a subset, extrapolated)

Called by bench/pipeline.sh (which resolves MDFLOW). Settings through the
environment, as for mdbench.py (MDFLOW, NCORES, QUICK, REPEAT, LMP, MPIRUN,
LAMMPS_MODE, BENCH_OUT, BENCH_WORK, KEEP) plus:

  PIPE_DATASET       "argon" (default): argon clusters cut from fcc with
                     0.05 Å noise (ε 0.0104 eV, σ 3.40 Å: fmax 0.05 eV/Å is
                     16 ε/σ, so FIRE needs 8-16 steps; 40 K, dt 5 fs); or
                     "random-lj": the classic LJ13-LJ147 clusters in reduced
                     units read as eV and Å (ε 1 eV, σ 1 Å, cutoff 2.5 Å,
                     skin 0.3 Å), atoms placed at random in a sphere (at
                     least 0.8 Å apart): fmax 0.05 is 0.05 ε/σ and FIRE takes
                     tens to thousands of steps; MD at 1160 K (kT = 0.1 ε),
                     dt 1 fs. Results: pipeline.json, pipeline_random-lj.json
  PIPE_SYSTEMS       systems in the dataset (default 1000; QUICK 50)
  PIPE_MD_STEPS      MD steps per system (default 1000; QUICK 100)
  REPEAT             rounds of (a) and (b), interleaved, and runs of (d); the
                     fastest of each is kept (default 3)
  PIPE_MAX_ATOMS     sampler max_atoms values for (a) and (b), space-separated;
                     the fastest of each is (a) and (b) (default "5000 10000
                     20000 40000"; QUICK "1000 2000 4000")
  PIPE_REFILL        sampler refill_interval (default 10)
  PIPE_ASE_SYSTEMS   size of the ASE subset (default 6; QUICK 3)
  PIPE_LAMMPS_SYSTEMS  size of the LAMMPS subset (default: every system)
  ASE_PYTHON         the Python with ASE (default: this one)

Writes BENCH_OUT/pipeline.json and prints a table. Issue targets: (a) >= 100x
ASE and >= 3x LAMMPS throughput (systems/s), (a) >= 1.5x (b).
"""
import json
import math
import os
import random
import re
import shutil
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
os.environ.setdefault("REPEAT", "3")
sys.dont_write_bytecode = True     # no bench/__pycache__ in the source tree
sys.path.insert(0, HERE)
import mdbench as mb  # noqa: E402  (generators, process runner, machine and source info, LAMMPS detection)


def env_list(name, default):
    v = os.environ.get(name, "").split()
    return [int(x) for x in v] if v else default


QUICK, NCORES, REPEAT = mb.QUICK, mb.NCORES, mb.REPEAT
NSYS = mb.env_int("PIPE_SYSTEMS", 50 if QUICK else 1000)
MD_STEPS = mb.env_int("PIPE_MD_STEPS", 100 if QUICK else 1000)
MAX_ATOMS = env_list("PIPE_MAX_ATOMS", [1000, 2000, 4000] if QUICK else [5000, 10000, 20000, 40000])
REFILL = mb.env_int("PIPE_REFILL", 10)
ASE_SYSTEMS = mb.env_int("PIPE_ASE_SYSTEMS", 3 if QUICK else 6)
LAMMPS_SYSTEMS = mb.env_int("PIPE_LAMMPS_SYSTEMS", 0)     # 0: every system
ASE_PYTHON = os.environ.get("ASE_PYTHON") or sys.executable or "/usr/bin/python3"

SIZE_MIN, SIZE_MAX = 13, 147           # atoms per cluster (the range)
FMAX, RELAX_BUDGET = 0.05, 2000        # eV/Å; FIRE steps before giving up
DATASET = os.environ.get("PIPE_DATASET", "argon").strip() or "argon"
if DATASET == "argon":
    TEMP_K, DT_FS, FRICTION_PER_FS = 40.0, 5.0, 0.01
    SKIN = mb.B_SKIN                   # 1 Å, both codes check every step
elif DATASET == "random-lj":
    # every code reads the model from mb.AR_* (mdflow, ASE, LAMMPS)
    mb.AR_EPS, mb.AR_SIGMA, mb.AR_RC = 1.0, 1.0, 2.5
    TEMP_K, DT_FS, FRICTION_PER_FS = 1160.0, 1.0, 0.01     # kT = 0.1 ε; dt = 0.016 sqrt(m σ² / ε)
    SKIN = 0.3
else:
    sys.exit("bench: PIPE_DATASET must be argon or random-lj, not '%s'" % DATASET)
SPECIES = "Ar:%r:%r:%r" % (mb.AR_EPS, mb.AR_SIGMA, mb.AR_RC)
# a_over_b0 (the whole dataset in one batch, no budget) is reported beside the
# target (a)/(b) for comparison; it is not one of the targets
TARGETS = {"a_over_c": 100.0, "a_over_d": 3.0, "a_over_b": 1.5, "a_over_b0": 1.5}

log = mb.log


# ------------------------------------------------------------------ data --

def random_clusters(n, seed=20261122):
    """LJ clusters of SIZE_MIN..SIZE_MAX atoms (σ = 1 Å) placed at random, at
    least 0.8 σ apart, in a sphere of 1.1 times the radius that holds them at
    density 0.9 σ^-3: the start of a structure search."""
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        k = rng.randint(SIZE_MIN, SIZE_MAX)
        radius = 1.1 * (3.0 * k / (4.0 * math.pi * 0.9)) ** (1.0 / 3.0)
        pts = []
        while len(pts) < k:
            p = tuple(rng.uniform(-radius, radius) for _ in range(3))
            if sum(c * c for c in p) <= radius * radius and \
                    all((p[0] - q[0]) ** 2 + (p[1] - q[1]) ** 2 + (p[2] - q[2]) ** 2 > 0.64 for q in pts):
                pts.append(p)
        out.append(pts)
    return out


def make_dataset(n):
    """mdbench's clusters (fcc cuts around a jittered centre, 0.05 Å noise),
    with the sizes of this issue; or random-packed ones (PIPE_DATASET)."""
    if DATASET == "random-lj":
        return random_clusters(n)
    saved = mb.B_MIN, mb.B_MAX
    mb.B_MIN, mb.B_MAX = SIZE_MIN, SIZE_MAX
    try:
        return mb.make_clusters(n)
    finally:
        mb.B_MIN, mb.B_MAX = saved


def spread_subset(clusters, k):
    """k system indices spread over the sizes: the (j + 1/2)/k quantiles of the
    size order, so the subset's mean size is close to the dataset's."""
    if k <= 0 or k >= len(clusters):
        return list(range(len(clusters)))
    order = sorted(range(len(clusters)), key=lambda i: (len(clusters[i]), i))
    return sorted(order[min(len(order) - 1, int((j + 0.5) * len(order) / k))] for j in range(k))


INFO_RE = re.compile(r'(\w+)=("[^"]*"|\S+)')


def read_xyz_info(path):
    """[(natoms, {info key: value})] of every frame of an extended XYZ file."""
    out = []
    with open(path) as fp:
        while True:
            head = fp.readline()
            if not head.strip():
                break
            n = int(head)
            info = {k: v.strip('"') for k, v in INFO_RE.findall(fp.readline())}
            for _ in range(n):
                fp.readline()
            out.append((n, info))
    return out


def rates(res):
    """systems/s (NSYS / wall_s, the whole dataset) and atom-steps/s (the
    systems measured / their wall time)."""
    res["systems_per_s"] = NSYS / res["wall_s"] if res.get("wall_s") else None
    res["atom_steps_per_s"] = res["atom_steps"] / res["atom_steps_wall_s"] if res.get("atom_steps_wall_s") else None
    return res


# ------------------------------------------------------------ (a) mdflow run --

WORKFLOW = """# written by bench/pipeline_bench.py: case (a) (mdflow run: relax + md fused, inflight batching)
# and case (b) (mdflow run --sequential: relax then md on static batches of the same max_atoms)
input: {input}
model:
  type: lj
  shift: true
  skin: {skin}
  species:
    - {{element: Ar, epsilon: {eps}, sigma: {sigma}, cutoff: {rc}}}
stages:
  relax:
    method: fire
    fmax: {fmax}
    step_budget: {budget}
  md:
    method: langevin
    dt_fs: {dt}
    temperature_K: {temp}
    entry_temperature_K: {temp}
    steps: {steps}
    params: {{friction_per_fs: {friction}}}
composition: relax + md
sampler:
  max_atoms: {max_atoms}
  refill_interval: {refill}
output:
  structures: {output}
max_steps: 100000000
seed: 1
"""


def parse_summary(text):
    r = {}
    m = re.search(r"systems (\d+), atoms (\d+), shards (\d+), model chunks (\d+)", text)
    if m:
        r["systems"], r["atoms"], r["shards"], r["chunks"] = map(int, m.groups())
    m = re.search(r"(\d+) steps in ([0-9.]+) s", text)
    if m:
        r["steps"], r["loop_s"] = int(m.group(1)), float(m.group(2))
    m = re.search(r"([0-9.eE+-]+) atom-steps/s", text)
    if m:
        r["reported_atom_steps_per_s"] = float(m.group(1))
    m = re.search(r"finished (\d+) \(status (\d+)\), unfinished (\d+); left a stage on its step budget: (\d+)", text)
    if m:
        r["finished"], r["exit_status"], r["unfinished"], r["budget_exits"] = map(int, m.groups())
    m = re.search(r"model evaluations (\d+)", text)
    if m:
        r["model_evaluations"] = int(m.group(1))
    m = re.search(r"relaxed (\d+) of (\d+) systems", text)
    if m:
        r["relaxed"] = int(m.group(1))
    return r


def steps_per_system(frames, md_steps, fused):
    """Relax steps of each system from mdflow's output (mdf_step): in a fused
    run it counts the steps through the whole composition."""
    relax = []
    for _, info in frames:
        s = int(info.get("mdf_step", "0"))
        relax.append(max(0, s - md_steps) if fused else s)
    return relax


def case_run_once(work, xyz, max_atoms, sequential):
    """One run of case (a) (mdflow run) or, with sequential, of case (b)
    (mdflow run --sequential) on the same workflow; the output's per-system
    step counts and final energies come along."""
    tag = "%s_%d" % ("seq" if sequential else "fused", max_atoms)
    out = os.path.join(work, tag + ".xyz")
    wf = os.path.join(work, tag + ".yaml")
    with open(wf, "w") as fp:
        fp.write(WORKFLOW.format(input=xyz, skin=SKIN, eps=mb.AR_EPS, sigma=mb.AR_SIGMA, rc=mb.AR_RC, fmax=FMAX,
                                 budget=RELAX_BUDGET, dt=DT_FS, temp=TEMP_K, steps=MD_STEPS,
                                 friction=FRICTION_PER_FS, max_atoms=max_atoms, refill=REFILL, output=out))
    cmd = [mb.MDFLOW, "run"] + (["--sequential"] if sequential else []) + [wf]
    if os.path.exists(out):
        os.remove(out)
    rc, wall, text = mb.run_timed(cmd, work, env={"STARPU_NCPU": str(NCORES)},
                                  stdout_path=os.path.join(work, tag + ".out"))
    r = parse_summary(text)
    if rc != 0 or "loop_s" not in r or not os.path.exists(out):
        return {"max_atoms": max_atoms, "error": "mdflow run exited %d: %s" % (rc, text.strip()[-600:]),
                "command": " ".join(cmd)}
    with open(wf) as fp:
        r["workflow"] = fp.read()
    r.update({"wall_s": wall, "max_atoms": max_atoms, "refill_interval": REFILL, "command": " ".join(cmd),
              "frames": read_xyz_info(out)})
    return r


def final_energies(frames):
    return [float(info.get("energy", "nan")) for _, info in frames]


def finish_run(r, clusters, walls):
    if r.get("error"):
        return r
    r["final_energies"] = final_energies(r["frames"])
    relax = steps_per_system(r.pop("frames"), MD_STEPS, True)
    r.update({"wall_s_all_runs": walls, "relax_steps_mean": sum(relax) / len(relax), "relax_steps_max": max(relax),
              "atom_steps": sum(len(c) * (s + MD_STEPS) for c, s in zip(clusters, relax)),
              "atom_steps_wall_s": r["wall_s"], "systems_measured": len(clusters)})
    r["converged"] = r.get("finished", 0) - r.get("budget_exits", 0)
    return rates(r)


# ------------------------------------------------ (b') whole dataset, in sequence --

def case_b0_once(work, xyz):
    """One run of case (b'): mdflow relax, then mdflow md on its output."""
    relaxed = os.path.join(work, "relaxed.xyz")
    final = os.path.join(work, "seq_md.xyz")
    common = ["--lj-species", SPECIES, "--lj-shift", "--skin", repr(SKIN)]
    relax_cmd = [mb.MDFLOW, "relax", "--input", xyz, "--optimizer", "fire", "--fmax", repr(FMAX),
                 "--max-steps", str(RELAX_BUDGET), "--output", relaxed] + common
    md_cmd = [mb.MDFLOW, "md", "--input", relaxed, "--ensemble", "langevin", "--temperature", repr(TEMP_K),
              "--dt", repr(DT_FS), "--steps", str(MD_STEPS), "--friction", repr(FRICTION_PER_FS), "--seed", "1",
              "--thermo", "0", "--quiet", "--output", final] + common
    env = {"STARPU_NCPU": str(NCORES)}
    for f in (relaxed, final):
        if os.path.exists(f):
            os.remove(f)
    rc1, w1, t1 = mb.run_timed(relax_cmd, work, env=env, stdout_path=os.path.join(work, "seq_relax.out"))
    if rc1 != 0:
        return {"error": "mdflow relax exited %d: %s" % (rc1, t1.strip()[-600:]), "command": " ".join(relax_cmd)}
    frames = read_xyz_info(relaxed)
    rc2, w2, t2 = mb.run_timed(md_cmd, work, env=env, stdout_path=os.path.join(work, "seq_md.out"))
    if rc2 != 0:
        return {"error": "mdflow md exited %d: %s" % (rc2, t2.strip()[-600:]), "command": " ".join(md_cmd)}
    return {"relax": parse_summary(t1), "md": parse_summary(t2), "relax_wall_s": w1, "md_wall_s": w2,
            "wall_s": w1 + w2, "commands": [" ".join(relax_cmd), " ".join(md_cmd)], "frames": frames,
            "final_frames": read_xyz_info(final)}


def finish_b0(r, clusters, walls):
    if r.get("error"):
        return r
    r["final_energies"] = final_energies(r.pop("final_frames"))
    relax = steps_per_system(r.pop("frames"), MD_STEPS, False)
    r.update({"wall_s_all_runs": walls, "relax_steps_mean": sum(relax) / len(relax), "relax_steps_max": max(relax),
              "converged": r["relax"].get("relaxed"),
              "atom_steps": sum(len(c) * (s + MD_STEPS) for c, s in zip(clusters, relax)),
              "atom_steps_wall_s": r["wall_s"], "systems_measured": len(clusters)})
    return rates(r)


# ------------------------------------------------------------------ (c) ASE --

ASE_SCRIPT = r'''
import json, sys, time
import numpy as np
import ase.io
from ase import units
from ase.calculators.lj import LennardJones
from ase.optimize import FIRE
from ase.md.langevin import Langevin
from ase.md.velocitydistribution import MaxwellBoltzmannDistribution, Stationary
frames = ase.io.read(sys.argv[1], index=":")
md_steps = int(sys.argv[3])
for i in map(int, sys.argv[2].split(",")):
    a = frames[i]
    t0 = time.monotonic()
    a.calc = LennardJones(sigma=%(sigma)r, epsilon=%(eps)r, rc=%(rc)r)   # energy shifted to 0 at rc
    opt = FIRE(a, logfile=None)                                          # ASE defaults: dt 0.1, maxstep 0.2
    converged = bool(opt.run(fmax=%(fmax)r, steps=%(budget)d))
    t1 = time.monotonic()
    MaxwellBoltzmannDistribution(a, temperature_K=%(temp)r, rng=np.random.RandomState(i + 1))
    Stationary(a)
    # friction 0.01/fs in ASE's time unit: 0.01 / units.fs
    dyn = Langevin(a, %(dt)r * units.fs, temperature_K=%(temp)r, friction=%(friction)r / units.fs, logfile=None)
    dyn.run(md_steps)
    t2 = time.monotonic()
    print("ASE_SYSTEM " + json.dumps({"index": i, "natoms": len(a), "relax_steps": opt.nsteps,
          "converged": converged, "relax_s": t1 - t0, "md_s": t2 - t1,
          "final_T_K": a.get_temperature()}), flush=True)
''' % dict(sigma=mb.AR_SIGMA, eps=mb.AR_EPS, rc=mb.AR_RC, fmax=FMAX, budget=RELAX_BUDGET, temp=TEMP_K, dt=DT_FS,
           friction=FRICTION_PER_FS)


def extrapolate(rows, clusters, key_s):
    """Whole-dataset time from per-system times of a subset: a least-squares
    line t = t0 + b * natoms over the subset (>= 3 sizes), summed over every
    system; else the subset's time per atom times every atom."""
    xs = [r["natoms"] for r in rows]
    ts = [r[key_s] for r in rows]
    sizes = [len(c) for c in clusters]
    if len(set(xs)) >= 3:
        mx, mt = sum(xs) / len(xs), sum(ts) / len(ts)
        b = sum((x - mx) * (t - mt) for x, t in zip(xs, ts)) / sum((x - mx) ** 2 for x in xs)
        t0 = mt - b * mx
        if t0 >= 0 and b > 0:
            return len(sizes) * t0 + b * sum(sizes), "linear fit t = %.4g s + %.4g s/atom" % (t0, b)
    return sum(ts) * sum(sizes) / sum(xs), "time per atom of the subset"


def case_c(work, xyz, clusters):
    subset = spread_subset(clusters, ASE_SYSTEMS)
    script = os.path.join(work, "ase_pipeline.py")
    with open(script, "w") as fp:
        fp.write(ASE_SCRIPT)
    cmd = [ASE_PYTHON, script, xyz, ",".join(map(str, subset)), str(MD_STEPS)]
    rc, wall, text = mb.run_timed(cmd, work, stdout_path=os.path.join(work, "ase.out"))
    rows = [json.loads(l.split(" ", 1)[1]) for l in text.splitlines() if l.startswith("ASE_SYSTEM ")]
    if rc != 0 or len(rows) != len(subset):
        return {"error": "ASE (%s) exited %d: %s" % (ASE_PYTHON, rc, text.strip()[-600:]), "command": " ".join(cmd)}
    for r in rows:
        r["s"] = r["relax_s"] + r["md_s"]
    sub_s = sum(r["s"] for r in rows)
    full_s, how = extrapolate(rows, clusters, "s")
    r = {"subset": subset, "subset_sizes": [x["natoms"] for x in rows], "systems_measured": len(rows),
         "per_system": rows, "subset_s": sub_s, "process_wall_s": wall, "wall_s": full_s, "extrapolated": True,
         "extrapolation": how, "converged": sum(1 for x in rows if x["converged"]),
         "relax_steps_mean": sum(x["relax_steps"] for x in rows) / len(rows),
         "atom_steps": sum(x["natoms"] * (x["relax_steps"] + MD_STEPS) for x in rows),
         "atom_steps_wall_s": sub_s, "command": " ".join(cmd),
         "note": "time inside one Python process, per system (interpreter and ASE import excluded); "
                 "wall_s is the whole dataset, extrapolated"}
    return rates(r)


# -------------------------------------------------------------- (d) LAMMPS --

LAMMPS_LOOP = """# {nsys} argon clusters, one after another in one LAMMPS process:
# FIRE to max per-atom |F| <= {fmax} eV/A, then {steps} steps of Langevin NVT
variable i loop {nsys}
label loop
clear
units metal
atom_style atomic
boundary s s s
read_data {data}/sys_${{i}}.data
pair_style lj/cut {rc}
pair_modify shift yes
pair_coeff 1 1 {eps} {sigma}
neighbor {skin} bin
neigh_modify delay 0 every 1 check yes
thermo 0
min_style fire
min_modify norm max
timestep {min_dt_ps}
minimize 0.0 {fmax} {budget} {maxeval}
velocity all create {temp} ${{i}} dist gaussian mom yes rot yes
timestep {dt_ps}
fix 1 all nve
fix 2 all langevin {temp} {temp} {damp_ps} ${{i}}
run {steps}
next i
jump SELF loop
"""


def parse_lammps(text):
    """Per system: (minimize loop, run loop) pairs and the minimiser's iterations."""
    loops = re.findall(r"Loop time of ([0-9.eE+-]+) on (\d+) procs for (\d+) steps with (\d+) atoms", text)
    iters = [int(x) for x in re.findall(r"Iterations, force evaluations = (\d+) \d+", text)]
    stops = re.findall(r"Stopping criterion = (.+)", text)
    return loops, iters, stops


def lammps_input(work, tag, clusters):
    data = os.path.join(work, tag + "_data")
    mb.write_clusters_lammps(data, clusters)
    infile = os.path.join(work, "in." + tag)
    with open(infile, "w") as fp:
        # FIRE's initial step 1 fs (ASE's FIRE: dt 0.1 ASE units = 1.02 fs; LAMMPS's dtmax = 10 dt as ASE's 1.0)
        fp.write(LAMMPS_LOOP.format(nsys=len(clusters), data=data, rc=mb.AR_RC, eps=mb.AR_EPS, sigma=mb.AR_SIGMA,
                                    skin=SKIN, fmax=FMAX, budget=RELAX_BUDGET, maxeval=10 * RELAX_BUDGET,
                                    min_dt_ps=0.001, temp=TEMP_K, dt_ps=DT_FS / 1000.0,
                                    damp_ps=1.0 / FRICTION_PER_FS / 1000.0, steps=MD_STEPS))
    return infile


def run_lammps_loop(work, tag, mode, clusters):
    infile = lammps_input(work, tag, clusters)
    lg = os.path.join(work, tag + ".log")
    cmd = mb.lammps_cmd(mode, infile, ["-log", lg, "-screen", "none"])
    best, walls = None, []
    for rep in range(REPEAT):
        if os.path.exists(lg):
            os.remove(lg)
        env = {"OMP_NUM_THREADS": str(NCORES) if mode == "omp" else "1"}
        rc, wall, text = mb.run_timed(cmd, work, env=env, stdout_path=os.path.join(work, tag + ".out"))
        try:
            with open(lg) as fp:
                logtext = fp.read()
        except OSError:
            logtext = ""
        loops, iters, stops = parse_lammps(logtext)
        if rc != 0 or len(iters) != len(clusters) or len(loops) != 2 * len(clusters):
            return {"error": "LAMMPS exited %d (%d of %d systems): %s" % (rc, len(iters), len(clusters),
                                                                         (text + logtext).strip()[-600:]),
                    "command": " ".join(cmd)}
        walls.append(round(wall, 3))
        if best is None or wall < best["wall_s_measured"]:
            best = {"wall_s_measured": wall, "loops": loops, "iters": iters, "stops": stops}
    return dict(best, command=" ".join(cmd), mode=mode, wall_s_measured_all_runs=walls)


def case_d(work, clusters, modes):
    subset = spread_subset(clusters, LAMMPS_SYSTEMS)
    sub = [clusters[i] for i in subset]
    tried = {}
    if len(modes) > 1:
        # pick the faster mode on a slice of the subset (every 10th system, at least 10)
        probe = sub[::max(1, len(sub) // max(10, len(sub) // 10))]
        for m in modes:
            r = run_lammps_loop(work, "lammps_probe_" + m, m, probe)
            tried[m] = r.get("error") or r["wall_s_measured"]
            log("  LAMMPS probe %-6s %d systems: %s" % (m, len(probe), r.get("error") or "%.2f s" % r["wall_s_measured"]))
        ok = {m: t for m, t in tried.items() if isinstance(t, float)}
        mode = min(ok, key=ok.get) if ok else modes[0]
    else:
        mode = modes[0]
    r = run_lammps_loop(work, "lammps", mode, sub)
    if r.get("error"):
        return dict(r, modes_tried=tried)
    loops, iters = r.pop("loops"), r.pop("iters")
    stops = r.pop("stops")
    natoms_sub = sum(len(c) for c in sub)
    sub_s = r["wall_s_measured"]
    extrap = len(sub) < len(clusters)
    scale = sum(len(c) for c in clusters) / natoms_sub if extrap else 1.0
    full_s = sub_s * scale
    r["wall_s_all_runs"] = [round(w * scale, 3) for w in r["wall_s_measured_all_runs"]]
    r.update({"subset": subset if extrap else "all", "systems_measured": len(sub), "modes_tried": tried,
              "procs": int(loops[0][1]), "wall_s": full_s, "extrapolated": extrap,
              "extrapolation": "process wall time per atom of the subset" if extrap else None,
              "loop_s_min": sum(float(l[0]) for l in loops[0::2]), "loop_s_md": sum(float(l[0]) for l in loops[1::2]),
              "converged": sum(1 for s in stops if "force tolerance" in s),
              "stop_criteria": sorted(set(s.strip() for s in stops)),
              "relax_steps_mean": sum(iters) / len(iters), "relax_steps_max": max(iters),
              "atom_steps": sum(len(c) * (s + MD_STEPS) for c, s in zip(sub, iters)),
              "atom_steps_wall_s": sub_s})
    return rates(r)


# ---------------------------------------------------------------- output --

def ratio(x, y):
    return x / y if x and y else None


def median(xs):
    xs = sorted(xs or [])
    if not xs:
        return None
    return xs[len(xs) // 2] if len(xs) % 2 else 0.5 * (xs[len(xs) // 2 - 1] + xs[len(xs) // 2])


def print_table(res):
    m = res["machine"]
    lines = []
    lines.append("")
    lines.append("mdflow pipeline: %d %s clusters of %d-%d atoms (%d atoms), FIRE to fmax %.2f eV/A, then %d "
                 "Langevin steps of %.0f fs at %.0f K%s" % (res["systems"], DATASET, SIZE_MIN, SIZE_MAX, res["atoms"], FMAX,
                                                             MD_STEPS, DT_FS, TEMP_K, ", QUICK" if QUICK else ""))
    lines.append("%s, %d cores; load average %.2f at start, %.2f at end; mdflow %s%s" % (
        m["cpu_model"], NCORES, m["loadavg_1min_at_start"] or 0, m.get("loadavg_1min_at_end") or 0,
        res["mdflow_source"].get("commit", "?"), " (+ uncommitted changes)" if res["mdflow_source"].get("tree_modified")
        else ""))
    hdr = "%-50s %8s %9s %9s %11s %10s %7s %9s" % ("case", "systems", "wall s", "median s", "systems/s", "atom-st/s",
                                                    "relax", "conv.")
    lines.append(hdr)
    lines.append("-" * len(hdr))
    names = {"a": "(a) mdflow run: fused + inflight", "b": "(b) mdflow run --sequential: static batches",
             "b0": "(b') mdflow relax, then md: whole dataset", "c": "(c) ASE, one system at a time",
             "d": "(d) LAMMPS, one system at a time"}
    for k in ("a", "b", "b0", "c", "d"):
        r = res["cases"][k]
        name = names[k]
        if k in "ab" and r.get("max_atoms"):
            name += " [%d]" % r["max_atoms"]
        if k == "d" and r.get("mode"):
            name += " [%s]" % r["mode"]
        if r.get("error"):
            lines.append("%-50s error: %s" % (name, r["error"][:300]))
            continue
        meas = "%d%s" % (r["systems_measured"], "*" if r.get("extrapolated") else "")
        med = r.get("wall_s_median")
        lines.append("%-50s %8s %9.2f %9s %11.2f %10.3g %7.1f %9s" % (
            name, meas, r["wall_s"], "%.2f" % med if med else "-", r["systems_per_s"], r["atom_steps_per_s"],
            r.get("relax_steps_mean", 0),
            "%s/%d" % (r.get("converged"), r["systems_measured"])))
    for k in "ab":
        sw = res["cases"].get(k + "_sweep") or []
        if len(sw) > 1:
            lines.append("  (%s) sampler max_atoms sweep: " % k + ", ".join(
                "%d: %s" % (s["max_atoms"], "error" if s.get("error") else "%.2f s" % s["wall_s"]) for s in sw))
    by = res["cases"].get("a_over_b_by_max_atoms") or {}
    if by:
        lines.append("  (a)/(b) at the same max_atoms: " + ", ".join(
            "%s: %s" % (k, "%.2fx" % v if v else "-") for k, v in by.items()))
    same = res["cases"].get("max_final_energy_difference_eV") or {}
    if same.get("a_vs_b") is not None:
        lines.append("  same trajectories: largest difference of a system's final energy, (a) vs (b) %.2g eV, "
                     "(a) vs (b') %s eV" % (same["a_vs_b"], "%.2g" % same["a_vs_b0"] if same.get("a_vs_b0") is not None
                                          else "-"))
    lines.append("* measured on a subset spread over the sizes, wall s extrapolated to all %d systems" % res["systems"])
    lines.append("wall s: fastest of %d runs (median s: their median); systems/s = %d / wall s; atom-st/s = "
                 "atoms x (relax steps + MD steps) / s, relax steps as each code counts them; relax = mean FIRE "
                 "steps; conv. = systems that reached fmax" % (REPEAT, res["systems"]))
    lines.append("throughput ratios (systems/s; atom-steps/s in brackets) against the issue's targets; (a)/(b') "
                 "for comparison (no budget: nothing to batch):")
    for key, label in (("a_over_c", "(a)/(c) ASE"), ("a_over_d", "(a)/(d) LAMMPS"), ("a_over_b", "(a)/(b) sequence"),
                       ("a_over_b0", "(a)/(b') whole")):
        t = res["targets"][key]
        if t["ratio"] is None:
            lines.append("  %-18s -" % label)
            continue
        lines.append("  %-18s %8.2fx  [%7.2fx]   target >= %gx: %-8s%s" % (
            label, t["ratio"], t["ratio_atom_steps"] or 0, t["target"],
            ("met" if t["met"] else "NOT met") + ("" if t.get("is_issue_target", True) else " (not a target)"),
            "  (medians: %.2fx)" % t["ratio_of_medians"] if t.get("ratio_of_medians") else ""))
    lines = [l.rstrip() for l in lines]
    for l in lines:
        log(l)
    return "\n".join(lines) + "\n"


def main():
    keep = os.environ.get("KEEP", "0") not in ("", "0")
    work = os.environ.get("BENCH_WORK") or tempfile.mkdtemp(prefix="mdflow-pipeline.")
    os.makedirs(work, exist_ok=True)
    work = os.path.abspath(work)
    machine = mb.machine_info()
    source = mb.source_info()
    clusters = make_dataset(NSYS)
    natoms = sum(len(c) for c in clusters)
    xyz = os.path.join(work, "clusters.xyz")
    mb.write_clusters_xyz(xyz, clusters)
    modes, note = mb.detect_lammps_modes(work)
    if "serial" not in modes and not os.environ.get("LAMMPS_MODE", "").strip():
        modes.append("serial")
    log("pipeline (%s): %d systems (%d atoms, %d-%d per system), %d MD steps; mdflow %s; LAMMPS %s modes %s; "
        "%d cores; load %.2f; scratch %s" % (DATASET, NSYS, natoms, min(map(len, clusters)), max(map(len, clusters)),
                                             MD_STEPS, mb.MDFLOW, mb.LMP, ",".join(modes), NCORES,
                                             machine["loadavg_1min_at_start"] or 0, work))
    cases = {}
    t_start = time.monotonic()

    # (a), (b) and (b') interleaved, REPEAT rounds, the fastest run of each
    # kept: load from elsewhere then hits them alike
    log("== (b') mdflow relax, then mdflow md, whole dataset per stage; (a) mdflow run, relax + md fused, inflight; "
        "(b) mdflow run --sequential, static batches; sampler max_atoms %s; %d round(s) =="
        % (" ".join(map(str, MAX_ATOMS)), REPEAT))
    runs = [("b0", lambda: case_b0_once(work, xyz))]
    for ma in MAX_ATOMS:
        runs.append((("a", ma), (lambda m: lambda: case_run_once(work, xyz, m, False))(ma)))
        runs.append((("b", ma), (lambda m: lambda: case_run_once(work, xyz, m, True))(ma)))
    best, walls = {}, {}
    for rnd in range(REPEAT):
        for key, fn in runs:
            if best.get(key, {}).get("error"):
                continue
            r = fn()
            name = "(b')" if key == "b0" else "(%s) max_atoms %d" % key
            if r.get("error"):
                best[key] = r
                log("  %s: %s" % (name, r["error"]))
                continue
            walls.setdefault(key, []).append(round(r["wall_s"], 3))
            if key not in best or r["wall_s"] < best[key]["wall_s"]:
                best[key] = r
            if key == "b0":
                log("  round %d (b'): relax %.2f s + md %.2f s = %.2f s (md loop %.2f s)"
                    % (rnd + 1, r["relax_wall_s"], r["md_wall_s"], r["wall_s"], r["md"].get("loop_s", 0)))
            else:
                log("  round %d %-20s %.2f s (loop %.2f s, %d shards, %d steps)"
                    % (rnd + 1, name, r["wall_s"], r["loop_s"], r.get("shards", 0), r.get("steps", 0)))
    cases["b0"] = finish_b0(best["b0"], clusters, walls.get("b0"))
    for k in "ab":
        sweep = [finish_run(best[(k, ma)], clusters, walls.get((k, ma))) for ma in MAX_ATOMS]
        ok = [r for r in sweep if not r.get("error")]
        cases[k] = min(ok, key=lambda r: r["wall_s"]) if ok else sweep[0]
        cases[k + "_sweep"] = [{f: r.get(f) for f in ("max_atoms", "wall_s", "wall_s_all_runs", "loop_s",
                                                      "systems_per_s", "atom_steps_per_s", "shards", "steps",
                                                      "error")} for r in sweep]
    # (a)/(b) at each max_atoms: the same budget, with and without inflight batching
    cases["a_over_b_by_max_atoms"] = {str(x["max_atoms"]): ratio(y.get("wall_s"), x.get("wall_s"))
                                      for x, y in zip(cases["a_sweep"], cases["b_sweep"])}
    for k, name in (("a", "(a)"), ("b", "(b)"), ("b0", "(b')")):
        r = cases[k]
        log("  %s %s" % (name, r.get("error") or "best %.2f s%s, %.1f systems/s" % (
            r["wall_s"], " (max_atoms %d)" % r["max_atoms"] if k != "b0" else "", r["systems_per_s"])))
    # Every variant runs the same trajectories: the final energies agree to round-off
    same = {}
    for k in ("b", "b0"):
        ea, eo = cases["a"].get("final_energies"), cases[k].get("final_energies")
        if ea and eo and len(ea) == len(eo):
            same[k] = max(abs(x - y) for x, y in zip(ea, eo))
    cases["max_final_energy_difference_eV"] = {"a_vs_b": same.get("b"), "a_vs_b0": same.get("b0")}
    for k in ("a", "b", "b0"):
        cases[k].pop("final_energies", None)

    log("== (c) ASE, one system at a time (%d systems spread over the sizes) ==" % min(ASE_SYSTEMS, NSYS))
    cases["c"] = case_c(work, xyz, clusters)
    c = cases["c"]
    log("  %s" % (c.get("error") or "%d systems in %.2f s (sizes %s); whole dataset %.0f s (%s)"
                  % (c["systems_measured"], c["subset_s"], sorted(c["subset_sizes"]), c["wall_s"], c["extrapolation"])))

    log("== (d) LAMMPS, one system at a time in one process ==")
    cases["d"] = case_d(work, clusters, modes)
    d = cases["d"]
    log("  %s" % (d.get("error") or "%d systems in %.2f s [%s, %d procs]%s"
                  % (d["systems_measured"], d["wall_s_measured"], d["mode"], d["procs"],
                     "; whole dataset %.0f s" % d["wall_s"] if d["extrapolated"] else "")))

    machine["loadavg_1min_at_end"] = os.getloadavg()[0]
    machine["loadavg_5min_at_end"] = os.getloadavg()[1]
    a = cases["a"]
    for k in ("a", "b", "b0", "d"):
        if not cases[k].get("error"):
            cases[k]["wall_s_median"] = median(cases[k].get("wall_s_all_runs"))
    targets = {}
    for key, other in (("a_over_c", "c"), ("a_over_d", "d"), ("a_over_b", "b"), ("a_over_b0", "b0")):
        o = cases[other]
        rt = ratio(a.get("systems_per_s"), o.get("systems_per_s"))
        targets[key] = {"ratio": rt, "ratio_atom_steps": ratio(a.get("atom_steps_per_s"), o.get("atom_steps_per_s")),
                        "target": TARGETS[key], "met": bool(rt is not None and rt >= TARGETS[key]),
                        "is_issue_target": key != "a_over_b0",
                        # medians of the repeated runs ((a) at the chosen max_atoms): less luck in them
                        "ratio_of_medians": ratio(o.get("wall_s_median"), a.get("wall_s_median"))}
    res = {"benchmark": "pipeline", "dataset": DATASET, "date": time.strftime("%Y-%m-%dT%H:%M:%S"), "machine": machine,
           "mdflow_source": source, "ncores": NCORES, "quick": QUICK, "repeat": REPEAT,
           "systems": NSYS, "atoms": natoms, "sizes": [SIZE_MIN, SIZE_MAX], "md_steps": MD_STEPS,
           "fmax_eV_per_A": FMAX, "relax_step_budget": RELAX_BUDGET, "temperature_K": TEMP_K, "dt_fs": DT_FS,
           "langevin_friction_per_fs": FRICTION_PER_FS, "skin_A": SKIN, "lj": {"epsilon_eV": mb.AR_EPS,
                                                                                "sigma_A": mb.AR_SIGMA,
                                                                                "cutoff_A": mb.AR_RC,
                                                                                "shift": True},
           "lammps_mode_note": note, "bench_seconds": time.monotonic() - t_start,
           "definitions": {"systems_per_s": "systems in the dataset / wall seconds of the whole dataset "
                                            "(processes' wall time; ASE: per-system time in one process; "
                                            "extrapolated for subsets)",
                           "atom_steps_per_s": "sum over measured systems of atoms x (relax steps + MD steps) / "
                                               "their wall seconds; relax steps as each code counts them",
                           "ratios": "(a) / other, on systems/s"},
           "cases": cases, "targets": targets}
    table = print_table(res)
    res["table"] = table
    os.makedirs(mb.OUT, exist_ok=True)
    path = os.path.join(mb.OUT, "pipeline.json" if DATASET == "argon" else "pipeline_%s.json" % DATASET)
    with open(path, "w") as fp:
        json.dump(res, fp, indent=2)
        fp.write("\n")
    log("")
    log("JSON: %s" % path)
    if not keep and not os.environ.get("BENCH_WORK"):
        shutil.rmtree(work, ignore_errors=True)
    else:
        log("scratch kept: %s" % work)
    return 1 if any(cases[k].get("error") for k in ("a", "b", "b0", "c", "d")) else 0


if __name__ == "__main__":
    sys.exit(main())
