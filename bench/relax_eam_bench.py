#!/usr/bin/python3
"""Batched EAM relaxation benchmark: 1,000 perturbed Cu fcc cells of 8-256
atoms (periodic, strained by a few %, atoms jittered), Foiles's Cu_u3.eam
(funcfl, Debian's lammps-data), fixed-cell FIRE to fmax 0.01 eV/Å, three ways
on this machine in one run, on the same cores:

  mdflow   mdflow relax --model eam:Cu_u3.eam --optimizer fire: every system
           in one batched run (STARPU_NCPU = NCORES)
  LAMMPS   lmp (pair_style eam, -sf opt when the build has OPT: eam/opt), one
           system at a time: a clear/read_data/minimize loop in one input,
           min_style fire, min_modify norm max (fmax is the largest per-atom
           force, as mdflow's), minimize 0 FMAX MAXSTEPS; run two ways on a
           probe slice of the systems (NCORES serial processes in parallel
           over shares of the systems; one mpirun -np NCORES process), the
           faster way then runs every system
  ASE      ase.calculators.eam.EAM(potential=Cu_u3.eam) + ase.optimize.FIRE,
           one system at a time, on a seeded random sample, NCORES Python
           processes in parallel over it, extrapolated to the whole dataset

Called by bench/relax_eam.sh. Environment (as mdbench.py: MDFLOW, NCORES,
QUICK, REPEAT, LMP, MPIRUN, BENCH_OUT, BENCH_WORK, KEEP) plus:

  RELAX_SYSTEMS         systems in the dataset (default 1000; QUICK 60)
  RELAX_FMAX            eV/Å (default 0.01)
  RELAX_MAX_STEPS       step budget of every code (default 1000)
  RELAX_ASE_SYSTEMS     size of the ASE sample (default 20; QUICK 4)
  RELAX_LAMMPS_SYSTEMS  LAMMPS subset (default 0: every system); a subset is
                        extrapolated by atoms x steps
  RELAX_LAMMPS_WAY      split or mpi: skip the probe and use this way
  EAM_POTENTIAL         default /usr/share/lammps/potentials/Cu_u3.eam
  ASE_PYTHON            the Python with ASE (default /usr/bin/python3)
  REPEAT                runs of mdflow and of the LAMMPS loop, the fastest
                        kept (default 2)

Writes BENCH_OUT/relax_eam.json and relax_eam.txt (the table). Issue
targets: mdflow >= 3x LAMMPS and >= 100x ASE in systems/s.
"""
import json
import os
import random
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
os.environ.setdefault("REPEAT", "2")
sys.dont_write_bytecode = True
sys.path.insert(0, HERE)
import mdbench as mb  # noqa: E402  (process runner, machine and source info, LAMMPS flags)

QUICK, NCORES, REPEAT = mb.QUICK, mb.NCORES, mb.REPEAT
NSYS = mb.env_int("RELAX_SYSTEMS", 60 if QUICK else 1000)
FMAX = float(os.environ.get("RELAX_FMAX", "0.01"))
MAX_STEPS = mb.env_int("RELAX_MAX_STEPS", 1000)
ASE_SYSTEMS = mb.env_int("RELAX_ASE_SYSTEMS", 4 if QUICK else 20)
LAMMPS_SYSTEMS = mb.env_int("RELAX_LAMMPS_SYSTEMS", 0)
LAMMPS_WAY = os.environ.get("RELAX_LAMMPS_WAY", "").strip()
POTENTIAL = os.environ.get("EAM_POTENTIAL", "/usr/share/lammps/potentials/Cu_u3.eam")
ASE_PYTHON = os.environ.get("ASE_PYTHON") or "/usr/bin/python3"
SEED = 20261125
TARGETS = {"lammps": 3.0, "ase": 100.0}
E_TOL_PER_ATOM = 1e-4          # eV/atom: relaxed energies, mdflow vs LAMMPS

# Cu, conventional fcc cell (Cu_u3.eam's own lattice constant), 4 atoms
A_CU, M_CU = 3.615, 63.55
BASIS = [(0.0, 0.0, 0.0), (0.5, 0.5, 0.0), (0.5, 0.0, 0.5), (0.0, 0.5, 0.5)]
# supercells na x nb x nc of the 4-atom cell, 1 <= n <= 4: 8 to 256 atoms
SHAPES = [(a, b, c) for a in range(1, 5) for b in range(1, 5) for c in range(1, 5) if a * b * c >= 2]
STRAIN_DIAG, STRAIN_SHEAR, JITTER = 0.03, 0.02, 0.07     # ±3 %, ±2 %, Gaussian σ in Å

log = mb.log


# ------------------------------------------------------------------ data --

def make_cells(n, seed=SEED):
    """n perturbed Cu cells: a random supercell shape, a random deformation
    M (lower triangular, rows are vectors: r' = r M; the cell stays in
    LAMMPS's restricted triclinic form) with diagonal 1 ± 3 % and shears
    ± 2 %, and Gaussian jitter of JITTER Å on every atom. The relaxed state of
    each is the strained perfect lattice (a Bravais lattice: no force on any
    atom), which all three codes should find."""
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        na, nb, nc = rng.choice(SHAPES)
        m = [[1 + rng.uniform(-STRAIN_DIAG, STRAIN_DIAG), 0.0, 0.0],
             [rng.uniform(-STRAIN_SHEAR, STRAIN_SHEAR), 1 + rng.uniform(-STRAIN_DIAG, STRAIN_DIAG), 0.0],
             [rng.uniform(-STRAIN_SHEAR, STRAIN_SHEAR), rng.uniform(-STRAIN_SHEAR, STRAIN_SHEAR),
              1 + rng.uniform(-STRAIN_DIAG, STRAIN_DIAG)]]

        def tr(v):
            return tuple(sum(v[k] * m[k][j] for k in range(3)) for j in range(3))
        cell = [tr((na * A_CU, 0, 0)), tr((0, nb * A_CU, 0)), tr((0, 0, nc * A_CU))]
        pos = []
        for i in range(na):
            for j in range(nb):
                for k in range(nc):
                    for b in BASIS:
                        p = tr(((i + b[0]) * A_CU, (j + b[1]) * A_CU, (k + b[2]) * A_CU))
                        pos.append(tuple(p[d] + rng.gauss(0.0, JITTER) for d in range(3)))
        out.append({"shape": (na, nb, nc), "cell": cell, "pos": pos})
    return out


def write_xyz(path, cells):
    with open(path, "w") as fp:
        for c in cells:
            fp.write("%d\nLattice=\"%s\" Properties=species:S:1:pos:R:3 pbc=\"T T T\"\n"
                     % (len(c["pos"]), " ".join("%.10f" % x for v in c["cell"] for x in v)))
            for p in c["pos"]:
                fp.write("Cu %.10f %.10f %.10f\n" % p)


def write_lammps_data(folder, cells):
    """sys_I.data, I = 1..n: the same cells as LAMMPS triclinic boxes (origin 0)."""
    os.makedirs(folder, exist_ok=True)
    for i, c in enumerate(cells, 1):
        (ax, _, _), (bx, by, _), (cx, cy, cz) = c["cell"]
        with open(os.path.join(folder, "sys_%d.data" % i), "w") as fp:
            fp.write("Cu cell %d %dx%dx%d\n\n%d atoms\n1 atom types\n\n" % ((i,) + c["shape"] + (len(c["pos"]),)))
            fp.write("0 %.10f xlo xhi\n0 %.10f ylo yhi\n0 %.10f zlo zhi\n%.10f %.10f %.10f xy xz yz\n"
                     % (ax, by, cz, bx, cx, cy))
            fp.write("\nMasses\n\n1 %.4f\n\nAtoms # atomic\n\n" % M_CU)
            for k, p in enumerate(c["pos"], 1):
                fp.write("%d 1 %.10f %.10f %.10f\n" % (k, p[0], p[1], p[2]))


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


def median(xs):
    xs = sorted(xs or [])
    if not xs:
        return None
    return xs[len(xs) // 2] if len(xs) % 2 else 0.5 * (xs[len(xs) // 2 - 1] + xs[len(xs) // 2])


def loadavg():
    try:
        return list(os.getloadavg())
    except OSError:
        return None


def children_cpu():
    """User + system CPU seconds of the waited-for child processes so far
    (with their own waited-for children: mpirun's ranks included)."""
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def uptime():
    try:
        return subprocess.run(["uptime"], stdout=subprocess.PIPE, universal_newlines=True).stdout.strip()
    except OSError:
        return None


# ---------------------------------------------------------------- mdflow --

def parse_mdflow(text):
    r = {}
    m = re.search(r"systems (\d+), atoms (\d+), shards (\d+), model chunks (\d+)", text)
    if m:
        r["systems"], r["atoms"], r["shards"], r["chunks"] = map(int, m.groups())
    m = re.search(r"(\d+) steps in ([0-9.]+) s", text)
    if m:
        r["steps"], r["loop_s"] = int(m.group(1)), float(m.group(2))
    m = re.search(r"model evaluations (\d+), neighbour-list rebuilds (\d+)", text)
    if m:
        r["model_evaluations_batch"], r["list_rebuilds"] = int(m.group(1)), int(m.group(2))
    m = re.search(r"relaxed (\d+) of (\d+) systems", text)
    if m:
        r["converged"] = int(m.group(1))
    m = re.search(r"StarPU workers \(scheduler (\S+)\)", text)
    if m:
        r["scheduler"] = m.group(1)
    busy = re.findall(r"^\s+(CPU \d+|CUDA \d+)\s+(\d+)\s+([0-9.]+)\s+([0-9.]+)%", text, re.M)
    if busy:
        r["workers"] = [{"worker": w, "tasks": int(t), "busy_s": float(b), "busy_pct": float(p)}
                        for w, t, b, p in busy]
    return r


def run_mdflow(work, xyz, cells):
    out = os.path.join(work, "mdflow_relaxed.xyz")
    cmd = [mb.MDFLOW, "relax", "--input", xyz, "--model", "eam:" + POTENTIAL, "--optimizer", "fire",
           "--fmax", repr(FMAX), "--max-steps", str(MAX_STEPS), "--output", out]
    env = {"STARPU_NCPU": str(NCORES)}
    best, walls, cpus = None, [], []
    for rep in range(REPEAT):
        if os.path.exists(out):
            os.remove(out)
        c0 = children_cpu()
        rc, wall, text = mb.run_timed(cmd, work, env=env, stdout_path=os.path.join(work, "mdflow.out"))
        cpu = children_cpu() - c0
        r = parse_mdflow(text)
        if rc != 0 or "loop_s" not in r or not os.path.exists(out):
            return {"error": "mdflow exited %d: %s" % (rc, text.strip()[-800:]), "command": " ".join(cmd)}
        walls.append(round(wall, 3))
        cpus.append(round(cpu, 3))
        log("  mdflow run %d: %.2f s, CPU %.2f s (loop %.2f s, %d batch steps, %d shards, scheduler %s)"
            % (rep + 1, wall, cpu, r["loop_s"], r["steps"], r.get("shards", 0), r.get("scheduler", "?")))
        if best is None or wall < best["wall_s"]:
            frames = read_xyz_info(out)
            r.update({"wall_s": wall, "cpu_s": cpu, "frames": frames})
            best = r
    frames = best.pop("frames")
    steps = [int(info.get("mdf_step", "0")) for _, info in frames]
    best.update({
        "command": " ".join(cmd), "env": env, "wall_s_all_runs": walls, "wall_s_median": median(walls),
        "cpu_s_all_runs": cpus, "cpu_s_min": min(cpus),
        "systems_measured": len(frames), "extrapolated": False,
        "energies": [float(info["energy"]) for _, info in frames],
        "steps_per_system": steps, "relax_steps_mean": sum(steps) / len(steps), "relax_steps_max": max(steps),
        # mdflow's FIRE evaluates the forces once per step (plus the start)
        "force_evaluations": sum(s + 1 for s in steps),
        "atom_steps": sum(len(c["pos"]) * s for c, s in zip(cells, steps)),
        "status": [int(info.get("mdf_status", "0")) for _, info in frames]})
    best["atom_steps_per_s"] = best["atom_steps"] / best["wall_s"]
    best["systems_per_s"] = NSYS / best["wall_s"]
    return best


# ---------------------------------------------------------------- LAMMPS --

LAMMPS_LOOP = """# Cu cells, one after another in one LAMMPS process: fixed-cell FIRE to
# max per-atom |F| <= {fmax} eV/A (min_modify norm max), at most {budget} iterations
variable k loop {n}
label loop
variable i index {first}
clear
units metal
atom_style atomic
boundary p p p
read_data {data}/sys_${{i}}.data
pair_style eam
pair_coeff 1 1 {pot}
neighbor 1.0 bin
neigh_modify delay 0 every 1 check yes
thermo 0
thermo_modify norm no
min_style fire
min_modify norm max
timestep 0.001
minimize 0.0 {fmax} {budget} {maxeval}
print "SYSTEM ${{i}} $(atoms) $(pe:%.12g) $(fmax:%.6g)"
next i
next k
jump SELF loop
"""


def lammps_input(work, tag, data, ids):
    """One input that runs the systems ids (1-based data files) in order;
    the list is an index variable of explicit values."""
    infile = os.path.join(work, "in." + tag)
    body = LAMMPS_LOOP.format(n=len(ids), first=" ".join(map(str, ids)), data=data, pot=POTENTIAL, fmax=FMAX,
                              budget=MAX_STEPS, maxeval=100 * MAX_STEPS)
    with open(infile, "w") as fp:
        fp.write(body)
    return infile


SYS_RE = re.compile(r"^SYSTEM (\d+) (\d+) (\S+) (\S+)", re.M)


def parse_lammps(text):
    """Per system, in order: iterations, force evaluations, stop, energy, fmax."""
    iters = [tuple(map(int, x)) for x in re.findall(r"Iterations, force evaluations = (\d+) (\d+)", text)]
    stops = [s.strip() for s in re.findall(r"Stopping criterion = (.+)", text)]
    loops = [float(x) for x in re.findall(r"Loop time of ([0-9.eE+-]+) on", text)]
    systems = [(int(i), int(n), float(e), float(f)) for i, n, e, f in SYS_RE.findall(text)]
    return {"iters": iters, "stops": stops, "loops": loops, "systems": systems}


def shares(ids, cells, k):
    """k lists of system ids (1-based) with about equal atoms each (largest
    first into the lightest list), each list in id order."""
    out, load = [[] for _ in range(k)], [0] * k
    for i in sorted(ids, key=lambda i: -len(cells[i - 1]["pos"])):
        j = load.index(min(load))
        out[j].append(i)
        load[j] += len(cells[i - 1]["pos"])
    return [sorted(x) for x in out if x]


def run_lammps_way(work, tag, way, data, ids, cells):
    """One run of the systems ids: 'split' = NCORES serial lmp processes at
    once over shares of the systems (the wall time is until the last ends);
    'mpi' = one mpirun -np NCORES lmp over all of them."""
    if way == "split":
        parts = shares(ids, cells, NCORES)
    else:
        parts = [list(ids)]
    procs, cmds, logs = [], [], []
    env = dict(os.environ, OMP_NUM_THREADS="1")
    t0, c0 = time.monotonic(), children_cpu()
    for p, part in enumerate(parts):
        infile = lammps_input(work, "%s_%d" % (tag, p), data, part)
        lg = os.path.join(work, "%s_%d.log" % (tag, p))
        if os.path.exists(lg):
            os.remove(lg)
        cmd = (mb.lammps_cmd("mpi", infile, ["-log", lg, "-screen", "none"]) if way == "mpi"
               else mb.lammps_cmd("serial", infile, ["-log", lg, "-screen", "none"]))
        cmds.append(" ".join(cmd))
        logs.append(lg)
        procs.append(subprocess.Popen(cmd, cwd=work, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                      universal_newlines=True))
    outs = [pr.communicate()[0] for pr in procs]
    wall, cpu = time.monotonic() - t0, children_cpu() - c0
    res = {"iters": [], "stops": [], "loops": [], "systems": []}
    for pr, lg, o in zip(procs, logs, outs):
        try:
            with open(lg) as fp:
                text = fp.read()
        except OSError:
            text = ""
        p = parse_lammps(text)
        if pr.returncode != 0 or len(p["systems"]) != len(p["iters"]):
            return {"error": "LAMMPS exited %d: %s" % (pr.returncode, (o + text).strip()[-800:]), "commands": cmds}
        for k in res:
            res[k] += p[k]
    if len(res["systems"]) != len(ids):
        return {"error": "LAMMPS ran %d of %d systems" % (len(res["systems"]), len(ids)), "commands": cmds}
    res.update({"wall_s": wall, "cpu_s": cpu, "commands": cmds, "way": way, "processes": len(parts)})
    return res


def run_lammps(work, cells):
    data = os.path.join(work, "lammps_data")
    write_lammps_data(data, cells)
    all_ids = list(range(1, len(cells) + 1))
    rng = random.Random(SEED + 1)
    ids = sorted(rng.sample(all_ids, LAMMPS_SYSTEMS)) if 0 < LAMMPS_SYSTEMS < len(cells) else all_ids
    ways = ["split", "mpi"] if NCORES > 1 else ["split"]
    probe = {}
    if LAMMPS_WAY:
        way = LAMMPS_WAY
    elif len(ways) > 1:
        # the faster way on a probe slice: every 10th system of the set
        pids = ids[::10] if len(ids) >= 50 else ids
        for w in ways:
            r = run_lammps_way(work, "probe_" + w, w, data, pids, cells)
            probe[w] = r.get("error") or round(r["wall_s"], 3)
            log("  LAMMPS probe %-5s (%d systems): %s" % (w, len(pids), r.get("error") or "%.2f s" % r["wall_s"]))
        ok = {w: t for w, t in probe.items() if isinstance(t, float)}
        way = min(ok, key=ok.get) if ok else ways[0]
    else:
        way = ways[0]
    best, walls, cpus = None, [], []
    for rep in range(REPEAT):
        r = run_lammps_way(work, "lammps", way, data, ids, cells)
        if r.get("error"):
            return dict(r, probe=probe)
        walls.append(round(r["wall_s"], 3))
        cpus.append(round(r["cpu_s"], 3))
        log("  LAMMPS %s run %d (%d systems, %d process(es)): %.2f s, CPU %.2f s"
            % (way, rep + 1, len(ids), r["processes"], r["wall_s"], r["cpu_s"]))
        if best is None or r["wall_s"] < best["wall_s"]:
            best = r
    # per system, by id
    by_id = {}
    for (i, n, e, f), (it, fe), stop in zip(best["systems"], best["iters"], best["stops"]):
        by_id[i] = {"natoms": n, "energy": e, "fmax": f, "iterations": it, "force_evaluations": fe, "stop": stop}
    rows = [by_id[i] for i in ids]
    atom_steps = sum(r["natoms"] * r["iterations"] for r in rows)
    extrap = len(ids) < len(cells)
    # a subset: scale by atoms (the steps of the other systems are unknown)
    scale = sum(len(c["pos"]) for c in cells) / sum(r["natoms"] for r in rows) if extrap else 1.0
    res = {"way": way, "probe_wall_s": probe, "commands": best["commands"], "processes": best["processes"],
           "lmp_suffix": " ".join(mb.LMP_OPT) or None, "systems_measured": len(ids), "extrapolated": extrap,
           "extrapolation": "wall time x all atoms / subset atoms" if extrap else None,
           "wall_s_measured": best["wall_s"], "wall_s": best["wall_s"] * scale,
           "wall_s_all_runs": [round(w * scale, 3) for w in walls], "wall_s_median": median(walls) * scale,
           "cpu_s_all_runs": [round(w * scale, 3) for w in cpus], "cpu_s_min": min(cpus) * scale,
           "loop_s_sum": sum(best["loops"]), "converged": sum(1 for r in rows if "force tolerance" in r["stop"]),
           "stop_criteria": sorted(set(r["stop"] for r in rows)),
           "relax_steps_mean": sum(r["iterations"] for r in rows) / len(rows),
           "relax_steps_max": max(r["iterations"] for r in rows),
           "force_evaluations": sum(r["force_evaluations"] for r in rows),
           "atom_steps": atom_steps, "ids": ids if extrap else "all", "per_system": by_id}
    res["systems_per_s"] = NSYS / res["wall_s"]
    res["atom_steps_per_s"] = atom_steps / best["wall_s"]
    return res


# ------------------------------------------------------------------- ASE --

ASE_SCRIPT = r'''
import json, sys, time
import ase.io
from ase.calculators.eam import EAM
from ase.optimize import FIRE
frames = ase.io.read(sys.argv[1], index=":")
calc = EAM(potential=sys.argv[3], elements=["Cu"])   # ASE 3.22's funcfl reader sets no elements
for i in map(int, sys.argv[2].split(",")):
    a = frames[i]
    t0, c0 = time.monotonic(), time.process_time()
    a.calc = calc
    opt = FIRE(a, logfile=None)             # ASE defaults: dt 0.1, maxstep 0.2 (mdflow's fire)
    converged = bool(opt.run(fmax=%(fmax)r, steps=%(budget)d))
    e = a.get_potential_energy()
    t1, c1 = time.monotonic(), time.process_time()
    print("ASE_SYSTEM " + json.dumps({"index": i, "natoms": len(a), "relax_steps": opt.nsteps,
          "converged": converged, "s": t1 - t0, "cpu_s": c1 - c0, "energy": e}), flush=True)
''' % dict(fmax=FMAX, budget=MAX_STEPS)


def run_ase(work, xyz, cells):
    rng = random.Random(SEED + 2)
    k = min(ASE_SYSTEMS, len(cells))
    sample = sorted(rng.sample(range(len(cells)), k))
    script = os.path.join(work, "ase_relax.py")
    with open(script, "w") as fp:
        fp.write(ASE_SCRIPT)
    # NCORES processes at once, shares of about equal atoms
    parts = [[i - 1 for i in p] for p in shares([i + 1 for i in sample], cells, NCORES)]
    procs, cmds = [], []
    t0 = time.monotonic()
    for part in parts:
        cmd = [ASE_PYTHON, script, xyz, ",".join(map(str, part)), POTENTIAL]
        cmds.append(" ".join(cmd))
        procs.append(subprocess.Popen(cmd, cwd=work, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                      universal_newlines=True, env=dict(os.environ, OMP_NUM_THREADS="1",
                                                                        OPENBLAS_NUM_THREADS="1")))
    outs = [p.communicate()[0] for p in procs]
    wall = time.monotonic() - t0
    rows = []
    for p, o in zip(procs, outs):
        got = [json.loads(l.split(" ", 1)[1]) for l in o.splitlines() if l.startswith("ASE_SYSTEM ")]
        if p.returncode != 0:
            return {"error": "ASE (%s) exited %d: %s" % (ASE_PYTHON, p.returncode, o.strip()[-800:]),
                    "commands": cmds}
        rows += got
    if len(rows) != k:
        return {"error": "ASE ran %d of %d systems" % (len(rows), k), "commands": cmds}
    rows.sort(key=lambda r: r["index"])
    sub_s = sum(r["s"] for r in rows)
    sub_cpu = sum(r["cpu_s"] for r in rows)
    sub_atoms = sum(r["natoms"] for r in rows)
    all_atoms = sum(len(c["pos"]) for c in cells)
    # the sample's CPU seconds per atom, times every atom, shared by NCORES processes
    full_s = sub_s * all_atoms / sub_atoms / NCORES
    res = {"sample": sample, "systems_measured": k, "sample_sizes": [r["natoms"] for r in rows],
           "processes": len(parts), "commands": cmds, "sample_s_summed": sub_s, "sample_process_wall_s": wall,
           "wall_s": full_s, "extrapolated": True,
           "sample_cpu_s_summed": sub_cpu, "cpu_s_min": sub_cpu * all_atoms / sub_atoms,
           "extrapolation": "sum of the sample's per-system times (measured with %d processes running at once) "
                            "x all atoms / sample atoms / %d processes" % (len(parts), NCORES),
           "converged": sum(1 for r in rows if r["converged"]),
           "relax_steps_mean": sum(r["relax_steps"] for r in rows) / k,
           "relax_steps_max": max(r["relax_steps"] for r in rows),
           "atom_steps": sum(r["natoms"] * r["relax_steps"] for r in rows), "per_system": rows,
           "note": "per-system time inside the Python processes (interpreter start, ASE import, reading the "
                   "file and the potential excluded); wall_s is the whole dataset, extrapolated"}
    res["systems_per_s"] = NSYS / full_s
    res["atom_steps_per_s"] = res["atom_steps"] * NCORES / sub_s
    return res


# ------------------------------------------------------------- checking --

def compare_energies(cells, md, lmp, ase):
    """Relaxed energies per atom: mdflow against LAMMPS on every system both
    ran and both converged; against ASE on its sample (ASE's funcfl reader
    uses 14.4 eV Å (Hartree x Bohr) where LAMMPS uses 27.2 x 0.529, and cubic
    splines of its own: a looser agreement is expected)."""
    out = {"tolerance_eV_per_atom": E_TOL_PER_ATOM}
    if md.get("error"):
        return out
    e_md = md["energies"]
    ok_md = [s == 1 for s in md["status"]]
    if not lmp.get("error"):
        diffs = []
        for i, r in lmp["per_system"].items():
            if ok_md[i - 1] and "force tolerance" in r["stop"]:
                diffs.append((abs(e_md[i - 1] - r["energy"]) / r["natoms"], i - 1))
        if diffs:
            worst = max(diffs)
            out["lammps"] = {"systems_compared": len(diffs), "max_abs_diff_eV_per_atom": worst[0],
                             "worst_system": worst[1],
                             "median_abs_diff_eV_per_atom": median([d for d, _ in diffs]),
                             "systems_over_tolerance": sum(1 for d, _ in diffs if d > E_TOL_PER_ATOM),
                             "ok": worst[0] <= E_TOL_PER_ATOM}
    if not ase.get("error"):
        diffs = [(abs(e_md[r["index"]] - r["energy"]) / r["natoms"], r["index"]) for r in ase["per_system"]
                 if r["converged"] and ok_md[r["index"]]]
        if diffs:
            worst = max(diffs)
            out["ase"] = {"systems_compared": len(diffs), "max_abs_diff_eV_per_atom": worst[0],
                          "worst_system": worst[1]}
    return out


# ---------------------------------------------------------------- output --

def table(res):
    m = res["machine"]
    c = res["cases"]
    L = []
    L.append("")
    L.append("mdflow relax, EAM: %d perturbed Cu fcc cells of %d-%d atoms (%d atoms), %s, fixed-cell FIRE to "
             "fmax %g eV/A, at most %d steps%s" % (res["systems"], res["sizes"][0], res["sizes"][1], res["atoms"],
                                                   os.path.basename(POTENTIAL), FMAX, MAX_STEPS,
                                                   ", QUICK" if QUICK else ""))
    L.append("%s, %d cores (nproc %s); mdflow %s%s" % (
        m["cpu_model"], NCORES, m["nproc"], res["mdflow_source"].get("commit", "?"),
        " (+ uncommitted changes)" if res["mdflow_source"].get("tree_modified") else ""))
    L.append("load: before  %s" % res["uptime_before"])
    L.append("      after   %s" % res["uptime_after"])
    if max((res["loadavg_before"] or [0])[0], (res["loadavg_after"] or [0])[0]) > 0.5 * NCORES:
        L.append("      (other work was running on this machine: the timings are noisy; every code ran in the "
                 "same conditions, one after another)")
    hdr = "%-50s %8s %9s %9s %9s %10s %10s %7s %6s %10s" % ("code", "systems", "wall s", "median s", "CPU s",
                                                             "systems/s", "atom-st/s", "steps", "max", "conv.")
    L.append(hdr)
    L.append("-" * len(hdr))
    names = {"mdflow": "mdflow relax (one batched run%s)" % (", %s" % c["mdflow"].get("scheduler")
                                                              if c["mdflow"].get("scheduler") else ""),
             "lammps": "LAMMPS eam%s, one system at a time [%s]" % (
                 "/opt" if mb.LMP_OPT else "", "%s x %d" % (c["lammps"].get("way"), c["lammps"].get("processes", 0))),
             "ase": "ASE EAM + FIRE, one system at a time [%d proc]" % c["ase"].get("processes", 0)}
    for k in ("mdflow", "lammps", "ase"):
        r = c[k]
        if r.get("error"):
            L.append("%-50s error: %s" % (names[k], r["error"][:300]))
            continue
        med = r.get("wall_s_median")
        L.append("%-50s %8s %9.2f %9s %9.2f %10.2f %10.3g %7.1f %6d %10s" % (
            names[k], "%d%s" % (r["systems_measured"], "*" if r.get("extrapolated") else ""), r["wall_s"],
            "%.2f" % med if med else "-", r.get("cpu_s_min") or 0, r["systems_per_s"], r["atom_steps_per_s"], r["relax_steps_mean"],
            r["relax_steps_max"], "%d/%d" % (r["converged"], r["systems_measured"])))
    L.append("* measured on a sample, wall s extrapolated to all %d systems (see the JSON's extrapolation)"
             % res["systems"])
    L.append("wall s: fastest of %d runs (ASE: one); CPU s: user + system CPU seconds of every process for the "
             "whole dataset (least of the runs); systems/s = %d / wall s; steps = mean FIRE iterations per system "
             "(max: largest), as each code counts them; atom-st/s = atoms x steps / s of the systems measured"
             % (REPEAT, res["systems"]))
    md = c["mdflow"]
    if not md.get("error"):
        L.append("mdflow: %d batch steps, loop %.2f s of %.2f s wall, %d force evaluations summed over systems; "
                 "LAMMPS: %s force evaluations" % (md["steps"], md["loop_s"], md["wall_s"], md["force_evaluations"],
                                                   c["lammps"].get("force_evaluations", "-")))
    if c["lammps"].get("probe_wall_s"):
        L.append("LAMMPS ways on a probe slice: %s (the faster ran every system)" % ", ".join(
            "%s %s" % (w, "%.2f s" % t if isinstance(t, float) else "error") for w, t in
            c["lammps"]["probe_wall_s"].items()))
    for key, label in (("lammps", "mdflow / LAMMPS"), ("ase", "mdflow / ASE")):
        t = res["targets"][key]
        if t["ratio"] is None:
            L.append("  %-16s -" % label)
            continue
        L.append("  %-16s %8.2fx systems/s  [atom-steps/s %.2fx; CPU s %.2fx]   target >= %gx: %s%s" % (
            label, t["ratio"], t["ratio_atom_steps"] or 0, t["ratio_cpu_s"] or 0, t["target"],
            "met" if t["met"] else "NOT met",
            "  (medians: %.2fx)" % t["ratio_of_medians"] if t.get("ratio_of_medians") else ""))
    ch = res["check"]
    if ch.get("lammps"):
        x = ch["lammps"]
        L.append("check: relaxed energy per atom, mdflow vs LAMMPS, %d systems: largest difference %.2g eV/atom "
                 "(system %d), median %.2g; tolerance %g: %s" % (
                     x["systems_compared"], x["max_abs_diff_eV_per_atom"], x["worst_system"],
                     x["median_abs_diff_eV_per_atom"], x["tolerance_eV_per_atom"] if "tolerance_eV_per_atom" in x
                     else E_TOL_PER_ATOM, "ok" if x["ok"] else "FAILED (%d over)" % x["systems_over_tolerance"]))
    if ch.get("ase"):
        x = ch["ase"]
        L.append("       mdflow vs ASE, %d systems: largest difference %.2g eV/atom (ASE's funcfl reader: "
                 "other splines and unit constant)" % (x["systems_compared"], x["max_abs_diff_eV_per_atom"]))
    L = [l.rstrip() for l in L]
    for l in L:
        log(l)
    return "\n".join(L) + "\n"


def ratio(x, y):
    return x / y if x and y else None


def main():
    if not os.path.exists(POTENTIAL):
        sys.exit("bench: no potential %s (Debian: apt-get install lammps-data; or set EAM_POTENTIAL)" % POTENTIAL)
    keep = os.environ.get("KEEP", "0") not in ("", "0")
    work = os.environ.get("BENCH_WORK") or tempfile.mkdtemp(prefix="mdflow-relax-eam.")
    os.makedirs(work, exist_ok=True)
    work = os.path.abspath(work)
    up0, load0 = uptime(), loadavg()
    machine = mb.machine_info()
    source = mb.source_info()
    mb.detect_lammps_modes(work)        # sets mb.LMP_OPT (-sf opt) when LAMMPS has OPT
    t_start = time.monotonic()
    cells = make_cells(NSYS)
    natoms = sum(len(c["pos"]) for c in cells)
    xyz = os.path.join(work, "cu_cells.xyz")
    write_xyz(xyz, cells)
    sizes = [len(c["pos"]) for c in cells]
    log("relax_eam: %d Cu cells (%d atoms, %d-%d per cell), %s, fmax %g, %d cores; mdflow %s; LAMMPS %s %s; "
        "scratch %s" % (NSYS, natoms, min(sizes), max(sizes), POTENTIAL, FMAX, NCORES, mb.MDFLOW, mb.LMP,
                        " ".join(mb.LMP_OPT), work))
    log("load before: %s" % up0)
    cases = {}
    log("== mdflow relax, every system in one run (STARPU_NCPU=%d) ==" % NCORES)
    cases["mdflow"] = run_mdflow(work, xyz, cells)
    log("== LAMMPS, one system at a time ==")
    cases["lammps"] = run_lammps(work, cells)
    log("== ASE, one system at a time (%d of %d, %d processes) ==" % (min(ASE_SYSTEMS, NSYS), NSYS, NCORES))
    cases["ase"] = run_ase(work, xyz, cells)
    if cases["ase"].get("error"):
        log("  " + cases["ase"]["error"])
    else:
        log("  %d systems, %.2f s summed over the processes (process wall %.2f s)"
            % (cases["ase"]["systems_measured"], cases["ase"]["sample_s_summed"],
               cases["ase"]["sample_process_wall_s"]))
    up1, load1 = uptime(), loadavg()
    check = compare_energies(cells, cases["mdflow"], cases["lammps"], cases["ase"])
    md = cases["mdflow"]
    targets = {}
    for k in ("lammps", "ase"):
        o = cases[k]
        rt = ratio(md.get("systems_per_s"), o.get("systems_per_s"))
        targets[k] = {"ratio": rt, "ratio_atom_steps": ratio(md.get("atom_steps_per_s"), o.get("atom_steps_per_s")),
                      "target": TARGETS[k], "met": bool(rt is not None and rt >= TARGETS[k]),
                      "ratio_of_medians": ratio(o.get("wall_s_median"), md.get("wall_s_median")),
                      # CPU seconds for the whole dataset (least over the runs): steadier than wall
                      # time when other work shares the machine
                      "ratio_cpu_s": ratio(o.get("cpu_s_min"), md.get("cpu_s_min"))}
    machine.update({"loadavg_1min_at_end": load1[0] if load1 else None})
    res = {"benchmark": "relax_eam", "date": time.strftime("%Y-%m-%dT%H:%M:%S"), "machine": machine,
           "uptime_before": up0, "uptime_after": up1, "loadavg_before": load0, "loadavg_after": load1,
           "mdflow_source": source, "ncores": NCORES, "quick": QUICK, "repeat": REPEAT, "seed": SEED,
           "systems": NSYS, "atoms": natoms, "sizes": [min(sizes), max(sizes)],
           "size_histogram": {str(s): sizes.count(s) for s in sorted(set(sizes))},
           "dataset": {"element": "Cu", "lattice_A": A_CU, "supercells": "na x nb x nc of the 4-atom fcc cell, "
                       "1 <= n <= 4, na nb nc >= 2, uniform over the 63 shapes",
                       "strain": "lower-triangular deformation: diagonal 1 +- %g, shears +- %g (uniform)"
                                 % (STRAIN_DIAG, STRAIN_SHEAR),
                       "jitter_A": "Gaussian, sigma %g" % JITTER, "pbc": "T T T"},
           "potential": POTENTIAL, "fmax_eV_per_A": FMAX, "max_steps": MAX_STEPS,
           "bench_seconds": time.monotonic() - t_start,
           "definitions": {"systems_per_s": "systems in the dataset / wall seconds of the whole dataset (process "
                                            "wall time; ASE: per-system time in the processes; extrapolated for "
                                            "samples)",
                           "atom_steps_per_s": "sum over the systems measured of atoms x FIRE iterations / their "
                                               "wall seconds (ASE: / summed seconds x processes)",
                           "cpu_s": "user + system CPU seconds of every process of a run for the whole dataset "
                                    "(ASE: the sample's process_time, extrapolated by atoms)",
                           "ratios": "mdflow / other, on systems/s; ratio_cpu_s: other's CPU s / mdflow's"},
           "cases": cases, "check": check, "targets": targets}
    res["table"] = table(res)
    os.makedirs(mb.OUT, exist_ok=True)
    # the per-system lists stay out of the committed JSON but for a summary
    slim = json.loads(json.dumps(res))
    for k in ("energies", "status", "steps_per_system"):
        slim["cases"]["mdflow"].pop(k, None)
    if isinstance(slim["cases"]["lammps"].get("per_system"), dict):
        slim["cases"]["lammps"].pop("per_system")
    path = os.path.join(mb.OUT, "relax_eam.json")
    with open(path, "w") as fp:
        json.dump(slim, fp, indent=1)
        fp.write("\n")
    with open(os.path.join(mb.OUT, "relax_eam.txt"), "w") as fp:
        fp.write(res["table"])
    log("")
    log("JSON: %s; table: %s" % (path, os.path.join(mb.OUT, "relax_eam.txt")))
    if not keep and not os.environ.get("BENCH_WORK"):
        shutil.rmtree(work, ignore_errors=True)
    else:
        log("scratch kept: %s" % work)
    bad = any(cases[k].get("error") for k in cases) or not check.get("lammps", {}).get("ok", False)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
