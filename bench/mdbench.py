#!/usr/bin/python3
"""mdflow vs LAMMPS benchmark driver (python3 standard library only).

Called by bench/run.sh, which resolves the programs; every setting arrives
through the environment:

  MDFLOW     the mdflow program (required)
  LMP        the LAMMPS program (default: lmp)
  MPIRUN     mpirun (default: mpirun)
  NCORES     cores for both codes (default: nproc)
  QUICK      1: smoke version (small systems, few steps)
  REPEAT     runs per measurement, the fastest is kept (default 1); in.lj
             and the small case run mdflow and LAMMPS in rounds (each
             once per round), so that a machine whose speed drifts over
             minutes does not favour whichever code ran in the fast ones
  LAMMPS_MODE  force the LAMMPS mode: mpi, omp or serial (default: detect)
  BENCH_OUT  folder of the JSON results (default: bench/results)
  BENCH_WORK scratch folder (default: a fresh one under $TMPDIR, removed unless KEEP=1)

Cases: in.lj (LAMMPS's bench/in.lj, one 32,000-atom periodic LJ liquid) and
batched (1,000 argon clusters of 32-256 atoms; mdflow runs them all at once,
LAMMPS one after another in one process), plus a shard sweep of the batched
case for mdflow's StarPU overhead.
"""
import json
import math
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.dirname(HERE)

KB_EV = 1.38064852e-23 / 1.6021766208e-19  # mdflow's MDF_KB (CODATA 2014, as ASE)
AR_MASS = 39.948                           # mdflow's element table, amu
AR_EPS, AR_SIGMA, AR_RC = 0.0104, 3.40, 8.5
AR_A = 5.26                                # Å, fcc argon near 40 K


def fs_internal():
    """MDF_FS_INTERNAL from include/mdflow/units.h: 1 fs in sqrt(amu Å²/eV)."""
    try:
        with open(os.path.join(SRC, "include", "mdflow", "units.h")) as fp:
            m = re.search(r"#define\s+MDF_FS_INTERNAL\s+([0-9.eE+-]+)", fp.read())
            if m:
                return float(m.group(1))
    except OSError:
        pass
    return 0.09822694788464063


# ---------------------------------------------------------------- settings --

def env_int(name, default):
    v = os.environ.get(name, "")
    return int(v) if v.strip() else default


QUICK = os.environ.get("QUICK", "0") not in ("", "0")
NCORES = env_int("NCORES", os.cpu_count() or 1)
REPEAT = max(1, env_int("REPEAT", 1))
MDFLOW = os.environ.get("MDFLOW", "mdflow")
LMP = os.environ.get("LMP", "lmp")
MPIRUN = os.environ.get("MPIRUN", "mpirun")
OUT = os.environ.get("BENCH_OUT", os.path.join(HERE, "results"))

if QUICK:
    LJ_CELLS, LJ_STEPS = 10, 20             # 4,000 atoms
    B_SYSTEMS, B_STEPS = 50, 20
    SMALL_CELLS, SMALL_STEPS = 6, 500
else:
    LJ_CELLS, LJ_STEPS = 20, 100            # 32,000 atoms
    B_SYSTEMS, B_STEPS = 1000, 100
    SMALL_CELLS, SMALL_STEPS = 6, 10000     # 864 atoms


def parse_sizes(text):
    """LJ_SIZES: "CELLS:STEPS ..." (fcc cells per side: 4 n^3 atoms)."""
    sizes = []
    for tok in text.split():
        cells, _, steps = tok.partition(":")
        sizes.append((int(cells), int(steps)))
    return sizes


# in.lj at growing sizes (large single systems): 32,000, 256,000 and
# 1,000,188 atoms; the first is the in.lj case of inlj.json.
LJ_SIZES = parse_sizes(os.environ.get("LJ_SIZES", "")) or \
    ([(LJ_CELLS, LJ_STEPS), (14, 20)] if QUICK else [(LJ_CELLS, LJ_STEPS), (40, 50), (63, 50)])
B_MIN, B_MAX = 32, 256
B_DT_FS, B_TEMP, B_SKIN = 5.0, 40.0, 1.0
SWEEP_SHARDS = [int(x) for x in os.environ.get("SHARDS", "").split()] or \
    ([2, 8, 32] if QUICK else [2, 8, 32, 128, 512])

MPI_FLAGS = ["--allow-run-as-root", "--oversubscribe"]
SOURCE = {}


def log(msg):
    print(msg, flush=True)


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
    """Which mdflow was measured: the source tree's commit (read-only git
    queries) and the program's modification time."""
    info = {"program": MDFLOW}
    try:
        info["program_mtime"] = time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(os.path.getmtime(MDFLOW)))
    except OSError:
        pass
    try:
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


# ------------------------------------------------------------- processes --

PEAK_RSS = os.path.join(HERE, "peak_rss.py")


def rss_dir_for(work, tag):
    return os.path.join(work, "rss_" + tag)


def with_rss(rss_dir, cmd):
    """cmd under peak_rss.py, which leaves its peak resident memory in rss_dir."""
    return [sys.executable, PEAK_RSS, rss_dir, "--"] + list(cmd)


def clear_rss(rss_dir):
    shutil.rmtree(rss_dir, ignore_errors=True)
    os.makedirs(rss_dir)


def peak_rss_mb(rss_dir):
    """The peak resident memories the processes of a run left (MPI: every
    rank's), summed, in MB; None when there are none."""
    total, n = 0, 0
    for name in os.listdir(rss_dir):
        try:
            with open(os.path.join(rss_dir, name)) as fp:
                total += int(fp.read().strip())
                n += 1
        except (OSError, ValueError):
            pass
    return total * 1024 / 1e6 if n else None


def run_timed(cmd, cwd, env=None, stdout_path=None):
    """Runs cmd; returns (rc, wall seconds, output text)."""
    e = dict(os.environ)
    if env:
        e.update(env)
    t0 = time.monotonic()
    p = subprocess.run(cmd, cwd=cwd, env=e, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       universal_newlines=True)
    wall = time.monotonic() - t0
    if stdout_path:
        with open(stdout_path, "w") as fp:
            fp.write(p.stdout)
    return p.returncode, wall, p.stdout


_RUNS = [None]  # runs per best_of: REPEAT, or 1 inside rounds()


def best_of(fn):
    """Calls fn() REPEAT times (once inside rounds()), keeps the result with
    the smallest loop time."""
    best = None
    for _ in range(_RUNS[0] or REPEAT):
        r = fn()
        if r.get("error"):
            return r
        if best is None or r["loop_s"] < best["loop_s"]:
            best = r
    return best


def rounds(calls, repeat=None):
    """Each call measures once; `repeat` (default REPEAT) rounds of all of
    them in turn, the fastest loop of each kept (an error kept as it is).
    Returns a list like calls."""
    best = [None] * len(calls)
    _RUNS[0] = 1
    try:
        for _ in range(repeat or REPEAT):
            for k, call in enumerate(calls):
                if best[k] is not None and best[k].get("error"):
                    continue
                r = call()
                if best[k] is None or r.get("error") or r["loop_s"] < best[k]["loop_s"]:
                    best[k] = r
    finally:
        _RUNS[0] = None
    return best


# ------------------------------------------------------------ generators --

def write_inlj_xyz(path, ncell):
    a = (4.0 / 0.8442) ** (1.0 / 3.0)
    basis = [(0, 0, 0), (0.5, 0.5, 0), (0.5, 0, 0.5), (0, 0.5, 0.5)]
    L = ncell * a
    n = 4 * ncell ** 3
    with open(path, "w") as fp:
        fp.write("%d\n" % n)
        fp.write('Lattice="%.17g 0 0 0 %.17g 0 0 0 %.17g" Properties=species:S:1:pos:R:3:masses:R:1 '
                 'pbc="T T T"\n' % (L, L, L))
        for k in range(ncell):
            for j in range(ncell):
                for i in range(ncell):
                    for (bx, by, bz) in basis:
                        fp.write("Ar %.10f %.10f %.10f 1.0\n" % ((i + bx) * a, (j + by) * a, (k + bz) * a))
    return n


def fcc_block(ncell, a):
    basis = [(0, 0, 0), (0.5, 0.5, 0), (0.5, 0, 0.5), (0, 0.5, 0.5)]
    return [((i + bx) * a, (j + by) * a, (k + bz) * a)
            for k in range(ncell) for j in range(ncell) for i in range(ncell) for (bx, by, bz) in basis]


def make_clusters(nsys, seed=20261122):
    """Argon clusters of B_MIN..B_MAX atoms cut from an fcc lattice around a
    jittered centre (so shapes differ), with 0.05 Å random displacements."""
    rng = random.Random(seed)
    lattice = fcc_block(8, AR_A)
    c0 = 4 * AR_A
    out = []
    for _ in range(nsys):
        n = rng.randint(B_MIN, B_MAX)
        c = [c0 + rng.uniform(-0.5, 0.5) * AR_A for _ in range(3)]
        order = sorted(lattice, key=lambda p: (p[0] - c[0]) ** 2 + (p[1] - c[1]) ** 2 + (p[2] - c[2]) ** 2)
        pts = order[:n]
        mean = [sum(p[d] for p in pts) / n for d in range(3)]
        out.append([tuple(p[d] - mean[d] + rng.gauss(0.0, 0.05) for d in range(3)) for p in pts])
    return out


def write_clusters_xyz(path, clusters):
    with open(path, "w") as fp:
        for pts in clusters:
            fp.write("%d\nProperties=species:S:1:pos:R:3 kind=cluster pbc=\"F F F\"\n" % len(pts))
            for p in pts:
                fp.write("Ar %.10f %.10f %.10f\n" % p)


def write_clusters_lammps(folder, clusters):
    os.makedirs(folder, exist_ok=True)
    for i, pts in enumerate(clusters, 1):
        lo = [min(p[d] for p in pts) - 1.0 for d in range(3)]
        hi = [max(p[d] for p in pts) + 1.0 for d in range(3)]
        with open(os.path.join(folder, "sys_%d.data" % i), "w") as fp:
            fp.write("argon cluster %d\n\n%d atoms\n1 atom types\n\n" % (i, len(pts)))
            for d, ax in enumerate("xyz"):
                fp.write("%.10f %.10f %slo %shi\n" % (lo[d], hi[d], ax, ax))
            fp.write("\nMasses\n\n1 %.6f\n\nAtoms # atomic\n\n" % AR_MASS)
            for k, p in enumerate(pts, 1):
                fp.write("%d 1 %.10f %.10f %.10f\n" % (k, p[0], p[1], p[2]))


INLJ_LAMMPS = """units lj
atom_style atomic
lattice fcc 0.8442
region box block 0 {n} 0 {n} 0 {n}
create_box 1 box
create_atoms 1 box
mass 1 1.0
velocity all create 1.44 87287 loop geom
pair_style lj/cut 2.5
pair_coeff 1 1 1.0 1.0 2.5
neighbor 0.3 bin
neigh_modify delay 0 every 20 check no
fix 1 all nve
run {steps}
"""
# in.lj's `velocity create` draws each component from a uniform
# distribution (LAMMPS's default, dist uniform); mdflow draws the same way
# for these cases, so both start with the same velocity distribution. With
# mdflow's default Maxwell-Boltzmann draw, whose tails hold faster atoms,
# the lists are rebuilt more often early on (256,000 atoms, 50 steps: 9
# rebuilds against 7; LAMMPS with dist gaussian: 8 against its 5).
INLJ_VELOCITY_DIST = "uniform"

BATCH_HEAD = """# {nsys} argon clusters, one after another in one LAMMPS process
variable i loop {nsys}
label loop
"""
BATCH_PART_HEAD = """# {nsys} argon clusters shared by LAMMPS partitions, one list each
variable lst world {lists}
variable i file ${{lst}}
label loop
"""
BATCH_BODY = """clear
units metal
atom_style atomic
boundary s s s
read_data {data}/sys_${{i}}.data
pair_style lj/cut {rc}
pair_coeff 1 1 {eps} {sigma}
neighbor {skin} bin
neigh_modify delay 0 every 1 check yes
velocity all create {temp} ${{i}} dist gaussian mom yes
timestep {dt_ps}
fix 1 all nve
thermo 0
run {steps}
next i
jump SELF loop
"""
BATCH_LAMMPS = BATCH_HEAD + BATCH_BODY
BATCH_PART_LAMMPS = BATCH_PART_HEAD + BATCH_BODY


# --------------------------------------------------------------- parsers --

def parse_mdflow(text):
    r = {}
    m = re.search(r"systems (\d+), atoms (\d+), shards (\d+), model chunks (\d+)", text)
    if m:
        r["systems"], r["atoms"], r["shards"], r["chunks"] = map(int, m.groups())
    m = re.search(r"(\d+) steps in ([0-9.]+) s: ([0-9.eE+-]+) atom-steps/s", text)
    if m:
        r["steps"], r["loop_s"] = int(m.group(1)), float(m.group(2))
    m = re.search(r"neighbour-list rebuilds (\d+)", text)
    if m:
        r["list_rebuilds"] = int(m.group(1))
    workers = []
    in_table = False
    for line in text.splitlines():
        if line.startswith("StarPU workers"):
            in_table = True
            m = re.search(r"scheduler ([^)]+)\)", line)
            r["scheduler"] = m.group(1) if m else None
            continue
        if in_table:
            m = re.match(r"^\s+(.+?)\s+(\d+)\s+([0-9.]+)\s+([0-9.]+)%\s*$", line)
            if m:
                workers.append({"name": m.group(1), "tasks": int(m.group(2)), "busy_s": float(m.group(3)),
                                "busy_pct": float(m.group(4))})
    r["workers"] = workers
    return r


def parse_lammps_log(text):
    loops = re.findall(r"Loop time of ([0-9.eE+-]+) on (\d+) procs for (\d+) steps with (\d+) atoms", text)
    builds = re.findall(r"Neighbor list builds = (\d+)", text)
    return {"runs": len(loops), "loop_s": sum(float(l[0]) for l in loops),
            "atoms": sum(int(l[3]) for l in loops),
            "procs": int(loops[0][1]) if loops else None,
            "list_builds": sum(int(b) for b in builds)}


# ---------------------------------------------------------------- runners --

def mdflow_cmd(xyz, steps, dt_fs, temp_K, skin, species, shards=None, velocity_dist=None, extra=()):
    cmd = [MDFLOW, "md", "--input", xyz, "--steps", str(steps), "--dt", repr(dt_fs),
           "--temperature", repr(temp_K), "--skin", repr(skin), "--lj-species", species, "--quiet"]
    cmd += list(extra)
    if velocity_dist:
        cmd += ["--velocity-dist", velocity_dist]
    if shards:
        cmd += ["--shards", str(shards)]
    return cmd


def run_mdflow(work, tag, cmd, ncpu=None):
    rss = rss_dir_for(work, tag)

    def once():
        clear_rss(rss)
        rc, wall, text = run_timed(with_rss(rss, cmd), work, env={"STARPU_NCPU": str(ncpu or NCORES)},
                                   stdout_path=os.path.join(work, tag + ".out"))
        r = parse_mdflow(text)
        if rc != 0 or "loop_s" not in r:
            return {"error": "mdflow exited %d: %s" % (rc, text.strip()[-600:])}
        r["wall_s"] = wall
        r["peak_rss_mb"] = peak_rss_mb(rss)
        r["atom_steps_per_s"] = r["atoms"] * r["steps"] / r["loop_s"]
        r["atom_steps_per_s_total"] = r["atoms"] * r["steps"] / wall
        nw = len(r["workers"])
        busy = sum(w["busy_s"] for w in r["workers"])
        # Share of the workers' time in the step loop not spent inside codelets:
        # StarPU's scheduling/submission cost plus idle time (waits on
        # dependencies, load imbalance). 1 - sum(busy) / (workers x loop wall).
        r["overhead_share"] = 1.0 - busy / (nw * r["loop_s"]) if nw and r["loop_s"] > 0 else None
        # The same from StarPU's own busy % (relative to the time since
        # StarPU started: includes setup outside the step loop).
        r["overhead_share_starpu_total"] = (1.0 - sum(w["busy_pct"] for w in r["workers"]) / (100.0 * nw)
                                            if nw else None)
        r["command"] = " ".join(cmd)
        return r
    return best_of(once)


# ["-sf", "opt"] when this LAMMPS has the OPT package (lj/cut/opt): LAMMPS
# at its best with MPI ranks or serial (set by detect_lammps_modes).
LMP_OPT = []


def lammps_cmd(mode, infile, extra=(), rss_dir=None):
    """rss_dir: each LAMMPS process (every MPI rank) under peak_rss.py."""
    def lmp(args):
        return with_rss(rss_dir, [LMP] + args) if rss_dir else [LMP] + args
    if mode == "mpi":
        return [MPIRUN] + MPI_FLAGS + ["-np", str(NCORES)] + lmp(LMP_OPT + ["-in", infile] + list(extra))
    if mode == "omp":
        return lmp(["-sf", "omp", "-pk", "omp", str(NCORES), "-in", infile] + list(extra))
    return lmp(LMP_OPT + ["-in", infile] + list(extra))


def run_lammps(work, tag, cmd, logs, steps, env=None, rss_dir=None):
    """logs: log files to parse after the run (all 'Loop time' lines summed
    per file; loop_s is the largest per-file sum, i.e. the slowest partition).
    rss_dir: the folder the command's peak_rss.py wrappers write to."""
    def once():
        if rss_dir:
            clear_rss(rss_dir)
        for f in logs:
            if os.path.exists(f):
                os.remove(f)
        e = {"OMP_NUM_THREADS": str(NCORES) if "omp" in cmd else "1"}
        if env:
            e.update(env)
        rc, wall, text = run_timed(cmd, work, env=e, stdout_path=os.path.join(work, tag + ".out"))
        parsed = []
        for f in logs:
            try:
                with open(f) as fp:
                    parsed.append(parse_lammps_log(fp.read()))
            except OSError:
                pass
        if rc != 0 or not parsed or not any(p["runs"] for p in parsed):
            tail = text.strip()[-600:]
            return {"error": "LAMMPS exited %d: %s" % (rc, tail)}
        r = {"wall_s": wall, "loop_s": max(p["loop_s"] for p in parsed),
             "loop_s_sum": sum(p["loop_s"] for p in parsed),
             "runs": sum(p["runs"] for p in parsed), "atoms": sum(p["atoms"] for p in parsed),
             "procs_per_run": parsed[0]["procs"], "list_builds": sum(p["list_builds"] for p in parsed),
             "command": " ".join(cmd)}
        if rss_dir:
            r["peak_rss_mb"] = peak_rss_mb(rss_dir)
        r["atom_steps_per_s"] = r["atoms"] * steps / r["loop_s"]
        r["atom_steps_per_s_total"] = r["atoms"] * steps / wall
        return r
    return best_of(once)


def detect_lammps_modes(work):
    """Modes of giving LAMMPS NCORES cores that this build and machine support."""
    forced = os.environ.get("LAMMPS_MODE", "").strip()
    if forced:
        return [forced], "forced by LAMMPS_MODE"
    if NCORES == 1:
        return ["serial"], "one core"
    modes, notes = [], []
    try:
        h = subprocess.run([LMP, "-h"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           universal_newlines=True).stdout
    except OSError as exc:
        raise SystemExit("bench: cannot run LAMMPS '%s': %s" % (LMP, exc))
    pk = re.search(r"Installed packages:\s*\n(.*?)\n\s*\n", h, re.S)
    pkgs = pk.group(1).split() if pk else []
    global LMP_OPT
    LMP_OPT = ["-sf", "opt"] if "OPT" in pkgs else []
    if "OPENMP" in pkgs or "USER-OMP" in pkgs:
        modes.append("omp")
    else:
        notes.append("no OPENMP package in this LAMMPS build")
    probe = os.path.join(work, "probe.in")
    with open(probe, "w") as fp:
        fp.write("units lj\nprint \"probe ok\"\n")
    try:
        p = subprocess.run([MPIRUN] + MPI_FLAGS + ["-np", str(NCORES), LMP, "-in", probe, "-log", "none"],
                           cwd=work, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           universal_newlines=True, timeout=120)
        if p.returncode == 0 and "probe ok" in p.stdout:
            modes.insert(0, "mpi")
        else:
            notes.append("mpirun -np %d failed (rc %d)" % (NCORES, p.returncode))
    except (OSError, subprocess.TimeoutExpired) as exc:
        notes.append("mpirun unusable: %s" % exc)
    if not modes:
        modes = ["serial"]
    return modes, "; ".join(notes)


# ------------------------------------------------------------------ cases --

def log_lammps(mode, r, what=""):
    log("  LAMMPS %-6s %s%s" % (mode, r.get("error") or "loop %.3f s, total %.3f s" % (r["loop_s"], r["wall_s"]),
                                what))


def run_lammps_input(work, name, mode, infile, steps, what="", quiet=False):
    """LAMMPS on one input file in a mode, its log WORK/NAME.log and the peak
    memory of its processes; prints a line unless quiet."""
    lg = os.path.join(work, name + ".log")
    rss = rss_dir_for(work, name + "_lammps")
    r = run_lammps(work, name + "_lammps", lammps_cmd(mode, infile, ["-log", lg, "-screen", "none"], rss), [lg],
                   steps, rss_dir=rss)
    if not quiet:
        log_lammps(mode, r, what)
    return r


def case_inlj(work, modes, ncell=None, steps=None):
    ncell, steps = ncell or LJ_CELLS, steps or LJ_STEPS
    log("== case in.lj: %d atoms, %d steps ==" % (4 * ncell ** 3, steps))
    tag = "inlj%d" % ncell
    xyz = os.path.join(work, tag + ".xyz")
    natoms = write_inlj_xyz(xyz, ncell)
    infile = os.path.join(work, "in." + tag)
    with open(infile, "w") as fp:
        fp.write(INLJ_LAMMPS.format(n=ncell, steps=steps))
    tau_fs = 1.0 / fs_internal()                 # one LJ time unit in fs
    dt_fs = 0.005 * tau_fs
    temp_K = 1.44 / KB_EV
    # Several ways of giving LAMMPS the cores: one run of each picks the
    # fastest, which then runs in the rounds below.
    per_mode = {}
    if len(modes) > 1:
        probes = [(lambda m=m: run_lammps_input(work, "%s_%s_probe" % (tag, m), m, infile, steps)) for m in modes]
        per_mode = dict(zip(modes, rounds(probes, repeat=1)))
    ok = {m: r for m, r in per_mode.items() if not r.get("error")}
    mode = min(ok, key=lambda m: ok[m]["loop_s"]) if ok else modes[0]
    # Both codes with in.lj's rebuild rule, "every 20 check no" (rebuild
    # every 20 steps, never check: faster, but pairs that come within the
    # cutoff in between are missed, by both alike): mdflow's
    # --rebuild-every 20 --rebuild-check no. Then both with mdflow's default
    # rule (rebuild when an atom moved more than skin/2), "every 1 check
    # yes": the safe rule, like with like again.
    checked_in = os.path.join(work, "in.%s.checked" % tag)
    with open(checked_in, "w") as fp:
        fp.write(INLJ_LAMMPS.format(n=ncell, steps=steps).replace(
            "neigh_modify delay 0 every 20 check no", "neigh_modify delay 0 every 1 check yes"))
    md_cmd = mdflow_cmd(xyz, steps, dt_fs, temp_K, 0.3, "Ar:1:1:2.5", velocity_dist=INLJ_VELOCITY_DIST,
                        extra=("--rebuild-every", "20", "--rebuild-check", "no"))
    checked_cmd = mdflow_cmd(xyz, steps, dt_fs, temp_K, 0.3, "Ar:1:1:2.5", velocity_dist=INLJ_VELOCITY_DIST)
    # In rounds: LAMMPS (its best mode, found above, runs again in them),
    # mdflow, each rule.
    lmp_rule, md, checked, md_checked = rounds([
        lambda: run_lammps_input(work, "%s_%s" % (tag, mode), mode, infile, steps, quiet=True),
        lambda: run_mdflow(work, tag + "_mdflow", md_cmd),
        lambda: run_lammps_input(work, tag + "_checked", mode, checked_in, steps, quiet=True),
        lambda: run_mdflow(work, tag + "_mdflow_checked", checked_cmd)])
    per_mode[mode] = lmp_rule
    log_lammps(mode, lmp_rule, " (every 20 check no)")
    log_lammps(mode, checked, " (every 1 check yes)")
    log("  mdflow        %s (every 20 check no)" % (md.get("error") or "loop %.3f s, total %.3f s, shards %d"
                                                    % (md["loop_s"], md["wall_s"], md["shards"])))
    log("  mdflow        %s (every 1 check yes)" % (md_checked.get("error") or "loop %.3f s, total %.3f s"
                                                    % (md_checked["loop_s"], md_checked["wall_s"])))
    res = {"case": "in.lj", "natoms": natoms, "steps": steps, "nsystems": 1,
           "dt_fs": dt_fs, "temperature_K": temp_K, "lammps_mode": mode,
           "mdflow": md, "mdflow_checked": md_checked, "lammps": per_mode[mode], "lammps_checked": checked,
           "lammps_modes_tried": {m: {k: r.get(k) for k in ("loop_s", "wall_s", "error")}
                                  for m, r in per_mode.items()}}
    return res, mode


def case_small(work, mode):
    """One small system for long (864 atoms, 10,000 steps): mdflow on NCORES
    cores against LAMMPS on one core (serial) and on NCORES (mode)."""
    natoms = 4 * SMALL_CELLS ** 3
    log("== case small in.lj: %d atoms, %d steps ==" % (natoms, SMALL_STEPS))
    tag = "small%d" % SMALL_CELLS
    xyz = os.path.join(work, tag + ".xyz")
    write_inlj_xyz(xyz, SMALL_CELLS)
    infile = os.path.join(work, "in." + tag)
    with open(infile, "w") as fp:
        fp.write(INLJ_LAMMPS.format(n=SMALL_CELLS, steps=SMALL_STEPS).replace(
            "neigh_modify delay 0 every 20 check no", "neigh_modify delay 0 every 1 check yes"))
    lmp_modes = ["serial"] + ([mode] if mode != "serial" else [])
    md_cmd = mdflow_cmd(xyz, SMALL_STEPS, 0.005 / fs_internal(), 1.44 / KB_EV, 0.3, "Ar:1:1:2.5",
                        velocity_dist=INLJ_VELOCITY_DIST)
    # In rounds: each LAMMPS mode, then mdflow, REPEAT times.
    got = rounds([(lambda m=m: run_lammps_input(work, "%s_%s" % (tag, m), m, infile, SMALL_STEPS, quiet=True))
                  for m in lmp_modes] + [lambda: run_mdflow(work, tag + "_mdflow", md_cmd)])
    runs = dict(zip(lmp_modes, got[:-1]))
    md = got[-1]
    for m in lmp_modes:
        log_lammps(m, runs[m])
    log("  mdflow        %s" % (md.get("error") or "loop %.3f s, total %.3f s, overhead %.1f%%"
                                % (md["loop_s"], md["wall_s"], 100 * (md["overhead_share"] or 0))))
    res = {"case": "small in.lj", "natoms": natoms, "steps": SMALL_STEPS, "mdflow": md,
           "lammps_serial": runs["serial"], "lammps": runs.get(mode, runs["serial"]), "lammps_mode": mode,
           "note": "LAMMPS rebuilds with 'every 1 check yes' here (mdflow's rule); mdflow on %d cores, "
                   "lammps_serial on one" % NCORES}
    res["ratios_vs_serial"] = {"loop": ratio(md.get("loop_s"), runs["serial"].get("loop_s")),
                               "total": ratio(md.get("wall_s"), runs["serial"].get("wall_s"))}
    res["ratios"] = {"loop": ratio(md.get("loop_s"), res["lammps"].get("loop_s")),
                     "total": ratio(md.get("wall_s"), res["lammps"].get("wall_s"))}
    return res


def case_batched(work, mode):
    log("== case batched: %d argon clusters of %d-%d atoms, %d steps ==" % (B_SYSTEMS, B_MIN, B_MAX, B_STEPS))
    clusters = make_clusters(B_SYSTEMS)
    natoms = sum(len(c) for c in clusters)
    xyz = os.path.join(work, "batched.xyz")
    write_clusters_xyz(xyz, clusters)
    data = os.path.join(work, "batched_data")
    write_clusters_lammps(data, clusters)
    species = "Ar:%r:%r:%r" % (AR_EPS, AR_SIGMA, AR_RC)
    md = run_mdflow(work, "batched_mdflow", mdflow_cmd(xyz, B_STEPS, B_DT_FS, B_TEMP, B_SKIN, species))
    log("  mdflow        %s" % (md.get("error") or "loop %.3f s, total %.3f s, shards %d"
                                % (md["loop_s"], md["wall_s"], md["shards"])))
    fmt = dict(nsys=B_SYSTEMS, data=data, rc=AR_RC, eps=AR_EPS, sigma=AR_SIGMA, skin=B_SKIN, temp=B_TEMP,
               dt_ps=B_DT_FS / 1000.0, steps=B_STEPS)
    infile = os.path.join(work, "in.batched")
    with open(infile, "w") as fp:
        fp.write(BATCH_LAMMPS.format(**fmt))
    lg = os.path.join(work, "batched_lammps.log")
    lmp = run_lammps(work, "batched_lammps", lammps_cmd(mode, infile, ["-log", lg, "-screen", "none"]),
                     [lg], B_STEPS)
    log("  LAMMPS %-6s %s" % (mode, lmp.get("error") or "loop %.3f s, total %.3f s (%d runs)"
                              % (lmp["loop_s"], lmp["wall_s"], lmp["runs"])))
    part = None
    if mode == "mpi" and NCORES > 1:
        # Reference point beyond the brief: NCORES independent 1-rank LAMMPS
        # partitions sharing the systems, the usual way to run many
        # small systems with LAMMPS on NCORES cores.
        # Systems dealt to partitions by atom count (largest first to the
        # least loaded); each partition reads its list through a file-style
        # variable (uloop would sleep up to 1 s per 'next').
        loads = [0] * NCORES
        lists = [[] for _ in range(NCORES)]
        for i in sorted(range(len(clusters)), key=lambda k: -len(clusters[k])):
            q = loads.index(min(loads))
            loads[q] += len(clusters[i])
            lists[q].append(i + 1)
        names = []
        for q in range(NCORES):
            names.append(os.path.join(work, "part_%d.list" % q))
            with open(names[-1], "w") as fp:
                fp.write("".join("%d\n" % i for i in sorted(lists[q])))
        pin = os.path.join(work, "in.batched_part")
        with open(pin, "w") as fp:
            fp.write(BATCH_PART_LAMMPS.format(lists=" ".join(names), **fmt))
        plg = os.path.join(work, "batched_part.log")
        cmd = [MPIRUN] + MPI_FLAGS + ["-np", str(NCORES), LMP] + LMP_OPT + ["-partition", "%dx1" % NCORES,
                                      "-in", pin, "-log", plg, "-plog", plg, "-pscreen", "none", "-screen", "none"]
        logs = ["%s.%d" % (plg, k) for k in range(NCORES)]
        part = run_lammps(work, "batched_lammps_partitions", cmd, logs, B_STEPS)
        log("  LAMMPS %dx1 partitions %s" % (NCORES, part.get("error") or "loop %.3f s (slowest), total %.3f s"
                                              % (part["loop_s"], part["wall_s"])))
    sweep = []
    for ns in SWEEP_SHARDS:
        r = run_mdflow(work, "batched_mdflow_shards%d" % ns,
                       mdflow_cmd(xyz, B_STEPS, B_DT_FS, B_TEMP, B_SKIN, species, shards=ns))
        if r.get("error"):
            sweep.append({"shards_requested": ns, "error": r["error"]})
            log("  mdflow --shards %-3d %s" % (ns, r["error"]))
            continue
        row = {"shards_requested": ns, "shards": r["shards"], "atoms_per_shard": r["atoms"] / r["shards"],
               "loop_s": r["loop_s"], "wall_s": r["wall_s"], "atom_steps_per_s": r["atom_steps_per_s"],
               "overhead_share": r["overhead_share"], "tasks": sum(w["tasks"] for w in r["workers"])}
        sweep.append(row)
        log("  mdflow --shards %-3d %d shards, %.0f atoms/shard, loop %.3f s, overhead %.1f%%"
            % (ns, row["shards"], row["atoms_per_shard"], row["loop_s"], 100 * row["overhead_share"]))
    big = [r for r in sweep + [{"atoms_per_shard": natoms / md["shards"], "overhead_share": md["overhead_share"]}
                               if not md.get("error") else {}]
           if r.get("overhead_share") is not None and r["atoms_per_shard"] >= 1000]
    summary = {"runs": len(big),
               "max": max(r["overhead_share"] for r in big) if big else None,
               "min": min(r["overhead_share"] for r in big) if big else None}
    res = {"case": "batched", "natoms": natoms, "steps": B_STEPS, "nsystems": B_SYSTEMS,
           "dt_fs": B_DT_FS, "temperature_K": B_TEMP, "skin_A": B_SKIN, "lammps_mode": mode,
           "mdflow": md, "lammps": lmp, "shard_sweep": sweep,
           "overhead_share_at_ge_1000_atoms_per_shard": summary}
    if part is not None:
        res["lammps_partitions"] = part
    return res


# ---------------------------------------------------------------- output --

def ratio(a, b):
    return a / b if a and b else None


def finish(res, machine, lammps_note):
    md, lmp = res["mdflow"], res["lammps"]
    res["machine"] = machine
    res["mdflow_source"] = SOURCE
    res["ncores"] = NCORES
    res["quick"] = QUICK
    res["repeat"] = REPEAT
    res["lammps_mode_note"] = lammps_note
    for side in (md, lmp, res.get("lammps_partitions"), res.get("lammps_checked")):
        if side is not None:
            side.setdefault("wall_s", None)
            side.setdefault("loop_s", None)
            side.setdefault("atom_steps_per_s", None)
    md.setdefault("overhead_share", None)
    md.setdefault("shards", None)
    res["ratios"] = {"loop": ratio(md.get("loop_s"), lmp.get("loop_s")),
                     "total": ratio(md.get("wall_s"), lmp.get("wall_s"))}
    if res.get("lammps_checked") and not res["lammps_checked"].get("error"):
        c, mc = res["lammps_checked"], res.get("mdflow_checked") or md
        res["ratios_vs_checked"] = {"loop": ratio(mc.get("loop_s"), c.get("loop_s")),
                                    "total": ratio(mc.get("wall_s"), c.get("wall_s"))}
    if res.get("lammps_partitions"):
        p = res["lammps_partitions"]
        res["ratios_vs_partitions"] = {"loop": ratio(md.get("loop_s"), p.get("loop_s")),
                                       "total": ratio(md.get("wall_s"), p.get("wall_s"))}
    return res


def f3(x, fmt="%.3f"):
    return fmt % x if isinstance(x, (int, float)) else "-"


def print_table(results, machine, mode_desc):
    log("")
    log("mdflow vs LAMMPS: %s, %d cores of %d (%s)%s"
        % (machine["cpu_model"], NCORES, machine["nproc"], mode_desc, ", QUICK" if QUICK else ""))
    log("times in s; rate in million atom-steps/s (loop); ratio = mdflow / LAMMPS (< 1: mdflow faster)")
    hdr = "%-22s %8s %6s | %8s %8s %7s %8s | %8s %8s %7s | %6s %6s" % (
        "case", "atoms", "steps", "md loop", "md total", "md rate", "overhead", "lmp loop", "lmp tot",
        "lmp rate", "r loop", "r tot")
    log(hdr)
    log("-" * len(hdr))
    for r in results:
        md, lmp = r["mdflow"], r["lammps"]
        rows = [(r["case"] + " [" + r["lammps_mode"] + "]", lmp, r["ratios"])]
        if r.get("ratios_vs_checked"):
            rows.append(("  both check yes", r["lammps_checked"], r["ratios_vs_checked"]))
        if r.get("lammps_partitions"):
            rows.append(("  vs LAMMPS %dx1 part." % NCORES, r["lammps_partitions"], r["ratios_vs_partitions"]))
        for i, (name, l, rat) in enumerate(rows):
            mdcols = (f3(md.get("loop_s")), f3(md.get("wall_s")), f3(md["atom_steps_per_s"] / 1e6, "%.2f")
                      if md.get("atom_steps_per_s") else "-",
                      f3(100 * md["overhead_share"], "%.1f%%") if md.get("overhead_share") is not None else "-")
            if i and name == "  both check yes" and r.get("mdflow_checked"):
                mc = r["mdflow_checked"]
                mdcols = (f3(mc.get("loop_s")), f3(mc.get("wall_s")),
                          f3(mc["atom_steps_per_s"] / 1e6, "%.2f") if mc.get("atom_steps_per_s") else "-", "")
            elif i:
                mdcols = ("", "", "", "")
            log("%-22s %8s %6s | %8s %8s %7s %8s | %8s %8s %7s | %6s %6s" % (
                name, r["natoms"] if not i else "", r["steps"] if not i else "", *mdcols,
                f3(l.get("loop_s")), f3(l.get("wall_s")),
                f3(l["atom_steps_per_s"] / 1e6, "%.2f") if l.get("atom_steps_per_s") else "-",
                f3(rat["loop"], "%.2f"), f3(rat["total"], "%.2f")))
        for side, d in (("mdflow", md), ("LAMMPS", lmp)):
            if d.get("error"):
                log("  %s error: %s" % (side, d["error"]))
    for r in results:
        if r.get("shard_sweep"):
            log("")
            log("mdflow StarPU overhead vs shard size (%s case; overhead = 1 - sum(busy)/(workers x loop))"
                % r["case"])
            log("%8s %14s %9s %9s %8s %9s" % ("shards", "atoms/shard", "tasks", "loop s", "rate", "overhead"))
            rows = [{"shards": r["mdflow"].get("shards"), "atoms_per_shard":
                     r["natoms"] / r["mdflow"]["shards"] if r["mdflow"].get("shards") else None,
                     "tasks": sum(w["tasks"] for w in r["mdflow"].get("workers", [])),
                     "loop_s": r["mdflow"].get("loop_s"), "atom_steps_per_s": r["mdflow"].get("atom_steps_per_s"),
                     "overhead_share": r["mdflow"].get("overhead_share"), "default": True}] + r["shard_sweep"]
            for s in rows:
                if s.get("error"):
                    log("%8s  error: %s" % (s["shards_requested"], s["error"][:200]))
                    continue
                log("%8s %14s %9s %9s %8s %9s%s" % (
                    s["shards"], f3(s["atoms_per_shard"], "%.0f"), s["tasks"], f3(s["loop_s"]),
                    f3(s["atom_steps_per_s"] / 1e6, "%.2f") if s.get("atom_steps_per_s") else "-",
                    f3(100 * s["overhead_share"], "%.1f%%") if s.get("overhead_share") is not None else "-",
                    "  (default)" if s.get("default") else ""))
            o = r.get("overhead_share_at_ge_1000_atoms_per_shard") or {}
            if o.get("runs"):
                log("overhead at >= 1000 atoms/shard: %.1f%% to %.1f%% (%d runs)"
                    % (100 * o["min"], 100 * o["max"], o["runs"]))


def sizes_summary(sizes, small, machine, mode_desc):
    """The large-system table: wall, rate and peak memory of both codes per
    size, and how mdflow's rate holds from the smallest to the largest."""
    ok = [r for r in sizes if not r["mdflow"].get("error") and not r["lammps"].get("error")]
    lin = None
    if len(ok) >= 2:
        lin = ok[-1]["mdflow"]["atom_steps_per_s"] / ok[0]["mdflow"]["atom_steps_per_s"]
    out = {"machine": machine, "mdflow_source": SOURCE, "ncores": NCORES, "quick": QUICK, "repeat": REPEAT,
           "lammps_mode": mode_desc, "sizes": [], "small": small,
           "mdflow_rate_largest_over_smallest": lin}
    for r in sizes:
        md, lmp = r["mdflow"], r["lammps"]
        out["sizes"].append({
            "atoms": r["natoms"], "steps": r["steps"],
            "mdflow_wall_s": md.get("wall_s"), "mdflow_loop_s": md.get("loop_s"),
            "mdflow_rate": md.get("atom_steps_per_s"), "mdflow_peak_rss_mb": md.get("peak_rss_mb"),
            "mdflow_list_rebuilds": md.get("list_rebuilds"), "mdflow_overhead_share": md.get("overhead_share"),
            "lammps_wall_s": lmp.get("wall_s"), "lammps_loop_s": lmp.get("loop_s"),
            "lammps_rate": lmp.get("atom_steps_per_s"), "lammps_peak_rss_mb": lmp.get("peak_rss_mb"),
            "lammps_list_builds": lmp.get("list_builds"),
            "lammps_checked_wall_s": (r.get("lammps_checked") or {}).get("wall_s"),
            "lammps_checked_loop_s": (r.get("lammps_checked") or {}).get("loop_s"),
            "ratio_wall": ratio(md.get("wall_s"), lmp.get("wall_s")),
            "ratio_loop": ratio(md.get("loop_s"), lmp.get("loop_s")),
            "mdflow_checked_wall_s": (r.get("mdflow_checked") or {}).get("wall_s"),
            "mdflow_checked_list_rebuilds": (r.get("mdflow_checked") or {}).get("list_rebuilds"),
            "ratio_wall_vs_checked": ratio((r.get("mdflow_checked") or md).get("wall_s"),
                                           (r.get("lammps_checked") or {}).get("wall_s")),
            "ratio_rss": ratio(md.get("peak_rss_mb"), lmp.get("peak_rss_mb")),
            "errors": [e for e in (md.get("error"), lmp.get("error")) if e]})
    return out


def print_sizes(summary):
    log("")
    log("in.lj by size (%s); wall = whole process; rate = loop atom-steps/s (M); RSS = peak resident MB "
        "(LAMMPS: all ranks); ratio = mdflow / LAMMPS, r wall with in.lj's every 20 check no on both sides, "
        "r chk with every 1 check yes on both" % summary["lammps_mode"])
    hdr = "%9s %6s | %8s %8s %7s %7s | %8s %8s %7s %7s | %7s %7s %7s" % (
        "atoms", "steps", "md wall", "md loop", "md rate", "md RSS", "lmp wall", "lmp loop", "lmp rate", "lmp RSS",
        "r wall", "r chk", "r RSS")
    log(hdr)
    log("-" * len(hdr))
    for r in summary["sizes"]:
        log("%9d %6d | %8s %8s %7s %7s | %8s %8s %7s %7s | %7s %7s %7s" % (
            r["atoms"], r["steps"], f3(r["mdflow_wall_s"]), f3(r["mdflow_loop_s"]),
            f3(r["mdflow_rate"] / 1e6 if r["mdflow_rate"] else None, "%.2f"), f3(r["mdflow_peak_rss_mb"], "%.0f"),
            f3(r["lammps_wall_s"]), f3(r["lammps_loop_s"]),
            f3(r["lammps_rate"] / 1e6 if r["lammps_rate"] else None, "%.2f"), f3(r["lammps_peak_rss_mb"], "%.0f"),
            f3(r["ratio_wall"], "%.2f"), f3(r["ratio_wall_vs_checked"], "%.2f"), f3(r["ratio_rss"], "%.2f")))
        for e in r["errors"]:
            log("  error: %s" % e[:300])
    if summary["mdflow_rate_largest_over_smallest"]:
        log("mdflow rate at the largest size / at the smallest: %.2f" % summary["mdflow_rate_largest_over_smallest"])
    sm = summary.get("small")
    if sm:
        md, ser = sm["mdflow"], sm["lammps_serial"]
        log("small: %d atoms, %d steps: mdflow (%d cores) wall %s s, loop %s s, StarPU overhead+idle %s; "
            "LAMMPS 1 core wall %s s; ratio %s; LAMMPS %d cores wall %s s"
            % (sm["natoms"], sm["steps"], NCORES, f3(md.get("wall_s")), f3(md.get("loop_s")),
               f3(100 * md["overhead_share"], "%.1f%%") if md.get("overhead_share") is not None else "-",
               f3(ser.get("wall_s")), f3(sm["ratios_vs_serial"]["total"], "%.2f"), NCORES,
               f3(sm["lammps"].get("wall_s"))))


def plot_sizes(summary, png, work):
    """atom-steps/s against atoms for both codes (gnuplot; skipped without it)."""
    gp = shutil.which("gnuplot")
    rows = [r for r in summary["sizes"] if r["mdflow_rate"] and r["lammps_rate"]]
    if not gp or not rows:
        log("plot: %s" % ("no gnuplot on PATH (Debian: gnuplot-nox)" if not gp else "no complete size"))
        return None
    data = os.path.join(work, "sizes.dat")
    with open(data, "w") as fp:
        for r in rows:
            fp.write("%d %.6g %.6g %.6g %.6g\n" % (
                r["atoms"], r["mdflow_rate"] / 1e6, r["lammps_rate"] / 1e6,
                r["atoms"] * r["steps"] / r["mdflow_wall_s"] / 1e6, r["atoms"] * r["steps"] / r["lammps_wall_s"] / 1e6))
    script = os.path.join(work, "sizes.gp")
    with open(script, "w") as fp:
        fp.write("set terminal pngcairo size 900,560 noenhanced\nset output '%s'\n" % png.replace("'", "''"))
        fp.write("set title 'in.lj on %d cores: mdflow and LAMMPS by size'\n" % NCORES)
        fp.write("set logscale x\nset xlabel 'atoms'\nset ylabel 'million atom-steps/s'\nset yrange [0:*]\n"
                 "set key bottom right\nset grid\n")
        fp.write("plot '%s' u 1:2 w lp lw 2 pt 7 t 'mdflow (step loop)', '' u 1:3 w lp lw 2 pt 5 t 'LAMMPS (loop)', "
                 "'' u 1:4 w lp dt 2 pt 6 t 'mdflow (whole process)', '' u 1:5 w lp dt 2 pt 4 t 'LAMMPS (whole process)'\n"
                 % data.replace("'", "''"))
    p = subprocess.run([gp, script], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True)
    if p.returncode != 0 or not os.path.exists(png):
        log("plot: gnuplot failed: %s" % p.stdout.strip()[-300:])
        return None
    return png


def main():
    keep = os.environ.get("KEEP", "0") not in ("", "0")
    work = os.environ.get("BENCH_WORK") or tempfile.mkdtemp(prefix="mdflow-bench.")
    os.makedirs(work, exist_ok=True)
    os.makedirs(OUT, exist_ok=True)
    machine = machine_info()
    global SOURCE
    SOURCE = source_info()
    modes, note = detect_lammps_modes(work)
    log("bench: mdflow %s, LAMMPS %s, %d cores, modes available: %s%s; scratch %s"
        % (MDFLOW, LMP, NCORES, ", ".join(modes), " (%s)" % note if note else "", work))
    results = []
    inlj, mode = case_inlj(work, modes, *LJ_SIZES[0])
    opt = " -sf opt" if LMP_OPT else " (no OPT package)"
    if mode == "mpi":
        mode_desc = "LAMMPS: %d MPI ranks (mpirun -np %d%s)" % (NCORES, NCORES, opt)
    elif mode == "omp":
        mode_desc = "LAMMPS: %d OpenMP threads (-sf omp -pk omp %d)" % (NCORES, NCORES)
    else:
        mode_desc = "LAMMPS: serial%s" % opt
    mode_desc += "; mdflow: STARPU_NCPU=%d" % NCORES
    lammps_note = mode_desc + ("; chosen as the faster on in.lj of: " + ", ".join(modes) if len(modes) > 1 else
                               "; the only mode available" + (" (%s)" % note if note else ""))
    results.append(finish(inlj, machine, lammps_note))
    sizes = [inlj] + [finish(case_inlj(work, [mode], n, st)[0], machine, lammps_note) for n, st in LJ_SIZES[1:]]
    small = case_small(work, mode)
    results.append(finish(case_batched(work, mode), machine, lammps_note))
    for r in results:
        name = {"in.lj": "inlj", "batched": "batched"}[r["case"]]
        with open(os.path.join(OUT, name + ".json"), "w") as fp:
            json.dump(r, fp, indent=2, sort_keys=False)
            fp.write("\n")
    print_table(results, machine, mode_desc)
    summary = sizes_summary(sizes, small, machine, mode_desc)
    summary["plot"] = plot_sizes(summary, os.path.join(OUT, "inlj_sizes.png"), work)
    with open(os.path.join(OUT, "inlj_sizes.json"), "w") as fp:
        json.dump(summary, fp, indent=2)
        fp.write("\n")
    print_sizes(summary)
    log("")
    log("JSON: %s" % ", ".join(os.path.join(OUT, n) for n in ("inlj.json", "batched.json", "inlj_sizes.json")))
    if not keep and not os.environ.get("BENCH_WORK"):
        shutil.rmtree(work, ignore_errors=True)
    else:
        log("scratch kept: %s" % work)
    failed = any(r["mdflow"].get("error") or r["lammps"].get("error") for r in results + sizes + [small])
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
