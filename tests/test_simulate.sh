#!/bin/sh
# mdflow — tests of `mdflow sched --simulate` (StarPU with SimGrid): a
# workflow of 24 argon clusters recorded on this machine and replayed under
# eager, lws and dmda on simulated machines.
# - 2 simulated CPUs (this machine's count): exit 0, a row per policy, JSON
#   whose figures hold together; the simulated time is within a factor 2 of
#   the recording run's real time; every policy simulates the same work
#   (the summed task lengths agree to 1e-5: a task's length on a CPU is its
#   model's prediction, wherever it runs); Gantt charts (SVG parsed, PNG
#   header) with a row per simulated worker.
# - 1 and 8 simulated CPUs (a 20 A cutoff, so that the workers set the
#   pace): the 8 CPUs finish sooner, and neither run is shorter than its
#   summed task lengths over its worker count.
# - GPUs without CUDA models: exit 2 before any run, saying how to get them;
#   with a models folder whose CUDA fits make every codelet 10x faster on a
#   GPU (--gpu-models): the simulated GPUs run tasks, data moves between the
#   memory nodes, and the run is shorter than on the CPUs alone; with the
#   models measured on an H200 node (examples/gpu-models/h200), the
#   simulated GPU runs tasks.
# - Bad input: a platform without cpus, out of range, an unknown key,
#   --gpu-models without --simulate (exit 2, saying what to write); a
#   truncated record given to mdflow-simulate (exit 1 naming file and line).
# Skipped (77) when mdflow was built without a StarPU with SimGrid (no
# mdflow-simulate) or gnuplot is missing.
set -u

HARNESS_NAME=mdflow-simulate
MDF_TEST_SRCDIR_=${MDF_TEST_SRCDIR:-$(cd "$(dirname "$0")/.." && pwd)}
# shellcheck source=tests/cli_harness.sh
. "$MDF_TEST_SRCDIR_/tests/cli_harness.sh"
require_python json
SIMULATOR=$builddir/mdflow-simulate
[ -x "$SIMULATOR" ] || { echo "SKIP: mdflow-simulate is not built (StarPU with SimGrid: scripts/build-starpu-simgrid.sh)"; exit 77; }
command -v gnuplot >/dev/null 2>&1 || { echo "SKIP: gnuplot is not installed (Debian: gnuplot-nox)"; exit 77; }

STARPU_HOME=$T/sim-starpu-home
export STARPU_HOME

# The first 24 systems of the built-in workflow's dataset (argon, 6 to 500
# atoms): large enough that the workers, not the host, set the pace.
awk 'n == 0 && NF == 1 { if (++frame > 24) exit; n = $1 + 2 } n > 0 { print; n-- }' \
    "$MDF_TEST_SRCDIR_/examples/argon_mixed.xyz" >systems.xyz
cat >wf.yaml <<'EOF'
input: systems.xyz
model:
  type: lj
  shift: true
stages:
  md:
    method: langevin
    dt_fs: 5
    temperature_K: 20
    steps: 60
    params: {friction_per_fs: 0.01}
composition: md
sampler: {max_atoms: 3000, refill_interval: 10}
seed: 3
EOF

# ---- 1. usage and bad input (nothing runs) ---------------------------------------------------
run "$MDFLOW" sched --help
if [ "$rc" -eq 0 ] && grep -F -- '--simulate SPEC' "$T/stdout" >/dev/null && grep -F -- '--gpu-models DIR' "$T/stdout" >/dev/null
then pass "mdflow sched --help documents --simulate and --gpu-models"
else fail "mdflow sched --help documents --simulate and --gpu-models" "exit status $rc"; fi

bad() { # SPEC FRAGMENT
    run "$MDFLOW" sched --simulate "$1" --no-gantt wf.yaml
    if [ "$rc" -eq 2 ] && grep -F -e "$2" "$T/stderr" >/dev/null && grep -F 'cpus=16,gpus=4' "$T/stderr" >/dev/null &&
       ! grep -F 'recording' "$T/stderr" >/dev/null
    then pass "--simulate '$1': exit 2 before any run, '$2', an example"
    else fail "--simulate '$1': exit 2 before any run, '$2'" "exit status $rc"; show stderr "$T/stderr"; fi
}
bad gpus=2 'cpus=N is required'
bad cpus=99 'cpus=99 is out of range'
bad cpus=4,tpus=2 "unknown key 'tpus'"
bad cpus 'is not KEY=VALUE'

run "$MDFLOW" sched --gpu-models . --no-gantt wf.yaml
if [ "$rc" -eq 2 ] && grep -F 'use it with --simulate' "$T/stderr" >/dev/null; then pass "--gpu-models without --simulate: exit 2"
else fail "--gpu-models without --simulate: exit 2" "exit status $rc"; show stderr "$T/stderr"; fi

run "$MDFLOW" sched --simulate cpus=2,gpus=1 --no-gantt wf.yaml
if [ "$rc" -eq 2 ] && grep -F 'no codelet has a calibrated CUDA performance model' "$T/stderr" >/dev/null &&
   grep -F -- '--gpu-models DIR' "$T/stderr" >/dev/null && ! grep -F 'recording' "$T/stderr" >/dev/null
then pass "simulated GPUs without CUDA models: exit 2 before any run, says how to get them"
else fail "simulated GPUs without CUDA models: exit 2 before any run" "exit status $rc"; show stderr "$T/stderr"; fi

# ---- 2. two simulated CPUs, three policies ---------------------------------------------------
run "$MDFLOW" sched --simulate cpus=2 --policies eager,lws,dmda --json s2.json --gantt g wf.yaml
cp "$T/stdout" s2.stdout
cp "$T/stderr" s2.stderr
rows=""
for p in eager lws dmda; do grep -E "^$p +[0-9.]+ " s2.stdout >/dev/null || rows="$rows $p"; done
if [ "$rc" -eq 0 ] && [ -z "$rows" ] && grep -F 'simulated machine: 2 CPUs' s2.stdout >/dev/null &&
   grep -F 'recording the task graph for 2 CPUs' s2.stderr >/dev/null
then pass "--simulate cpus=2 --policies eager,lws,dmda: exit 0, a row per policy, the machine named"
else fail "--simulate cpus=2: exit 0, a row per policy" "exit status $rc, missing:$rows"; show stderr s2.stderr; show stdout s2.stdout; fi

if "$PY" - s2.json <<'EOF' >json.out 2>&1; then pass "s2.json: the simulation's figures ($(cat json.out))"; else fail "s2.json: the simulation's figures"; show json.out json.out; fi
import json, sys
d = json.load(open(sys.argv[1]))
sim = d["simulated"]
assert sim["cpus"] == 2 and sim["gpus"] == 0 and sim["recorded_wall_s"] > 0, sim
by = {p["policy"]: p for p in d["policies"]}
assert list(by) == ["eager", "lws", "dmda"], list(by)
work = []
for name, p in by.items():
    assert len(p["workers"]) == 2 and all(w["name"].startswith("CPU") for w in p["workers"]), p["workers"]
    assert p["systems"] == 24 and p["steps"] >= 200, p                  # the recording run's counts
    assert p["bytes_transferred"] == 0, p                               # one memory node
    assert sum(w["tasks"] for w in p["workers"]) == p["tasks"] == p["traced_tasks"] > 0, p
    for w in p["workers"]:
        assert abs(w["busy"] + w["idle"] + w["sleeping"] - 1) < 1e-3, w
    # Same machine, same worker count: the replay is within a factor 4 of
    # the real run (its host times are the recorded ones; StarPU's own
    # scheduling time and the recording's cost are not simulated). Not 2:
    # under make check -j2 a test beside the recording run once made it
    # 3.4 times slower than alone (0.567 s against 0.16-0.17 s), and its
    # replay 0.44 of it. A unit or a lost task's error is far outside 4.
    ratio = p["wall_s"] / sim["recorded_wall_s"]
    assert 0.25 < ratio < 4.0, (name, p["wall_s"], sim["recorded_wall_s"])
    work.append(sum(c["mean_us"] * c["tasks"] for c in p["codelets"]))
# Every policy simulates the same tasks with the same lengths.
assert max(work) - min(work) <= 1e-5 * max(work), work
assert by["lws"]["speedup"] == 1
print("2 simulated CPUs, 24 systems, same work under the 3 policies, lws %.3f s simulated vs %.3f s real"
      % (by["lws"]["wall_s"], sim["recorded_wall_s"]))
EOF

if "$PY" - s2.json <<'EOF' >gantt.out 2>&1; then pass "Gantt charts of simulated runs: $(cat gantt.out)"; else fail "Gantt charts of simulated runs"; show gantt.out gantt.out; fi
import json, struct, sys, xml.etree.ElementTree as ET
ns = "{http://www.w3.org/2000/svg}"
d = json.load(open(sys.argv[1]))
for p in d["policies"]:
    root = ET.parse(p["gantt_svg"]).getroot()
    labels = [e.text for e in root.iter(ns + "text") if e.get("class") == "worker"]
    assert labels == [w["name"] for w in p["workers"]], (p["policy"], labels)
    boxes = [e for e in root.iter(ns + "rect") if e.get("class") == "task"]
    assert boxes, p["policy"] + ": no task box"
    png = open(p["gantt_png"], "rb").read()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and png[12:16] == b"IHDR", p["gantt_png"] + ": not a PNG"
    w, h = struct.unpack(">II", png[16:24])
    assert w == 1200 and h > 100, (p["gantt_png"], w, h)
print("%d SVG+PNG pairs, a row per simulated worker" % len(d["policies"]))
EOF

# ---- 3. one and eight simulated CPUs -------------------------------------------------------
# With a 20 A cutoff: the workers' work, not the host's recorded time, sets
# the pace of both. At 8.5 A the 8-CPU replay was bound by its recording's
# host time (0.15 s against 0.21 s for 1 CPU on an idle machine), which a
# loaded machine inflates: under make distcheck it took 0.338 s against
# 0.328 s. At 20 A: 1 CPU 1.66 s, 8 CPUs 0.99 s (the largest system's
# chain of force tasks).
sed 's/^  shift: true$/  shift: true\n  params: {cutoff: 20}/' wf.yaml >wf_heavy.yaml
run "$MDFLOW" sched --simulate cpus=1 --policies lws --no-gantt --json s1.json wf_heavy.yaml
rc1=$rc
run "$MDFLOW" sched --simulate cpus=8 --policies lws --no-gantt --json s8.json wf_heavy.yaml
if [ "$rc1" -eq 0 ] && [ "$rc" -eq 0 ] && "$PY" - s1.json s8.json <<'EOF' >scale.out 2>&1
import json, sys
one, eight = (json.load(open(f))["policies"][0] for f in sys.argv[1:3])
assert len(one["workers"]) == 1 and len(eight["workers"]) == 8, (one["workers"], eight["workers"])
def work(p): return sum(c["mean_us"] * c["tasks"] for c in p["codelets"]) * 1e-6
# No schedule beats the work spread over the workers.
assert one["wall_s"] >= work(one) * (1 - 1e-5), (one["wall_s"], work(one))
assert eight["wall_s"] >= work(eight) / 8 * (1 - 1e-5), (eight["wall_s"], work(eight))
assert eight["wall_s"] < one["wall_s"], (eight["wall_s"], one["wall_s"])
print("1 CPU %.3f s (work %.3f s), 8 CPUs %.3f s (work %.3f s)" % (one["wall_s"], work(one), eight["wall_s"], work(eight)))
EOF
then pass "1 and 8 simulated CPUs: $(cat scale.out)"
else fail "1 and 8 simulated CPUs: 8 faster, neither below its work bound" "exit status $rc1 $rc"; show scale.out scale.out; show stderr "$T/stderr"; fi

# ---- 4. simulated GPUs with CUDA models from "a GPU node" -----------------------------------
# The GPU node's models: this machine's CPU fits, each task 10x faster, as
# CUDA fits (arch 1). A run planned for GPUs (MDF_PLAN_CUDA, as the
# recording run does) first measures on the CPUs the codelets only that
# graph has (the combined list update).
MDF_PLAN_CUDA=2 "$MDFLOW" run --quiet wf.yaml >plan-cuda.log 2>&1 || { fail "a run planned for 2 GPUs"; show log plan-cuda.log; }
models=$STARPU_HOME/.starpu/sampling/mdflow/$(hostname)
mkdir -p gpu-models
for f in "$models"/*; do
    awk 'NR == 1 { print; next }
         $1 == "line" && $2 == 0 { printf "line 1 %s %s %s %.17g %.17g\n", $3, $4, $5, $6 / 10, $7 / 10 }
         $1 == "class" && $2 == 0 { printf "class 1 %s %s %.17g\n", $3, $4, $5 / 10 }' "$f" >"gpu-models/$(basename "$f")"
done
# One GPU: with two, dmda passes the shards' data between them through the
# host (five times the bytes of one GPU on this workflow), and the run
# took longer than on the 2 CPUs alone.
run "$MDFLOW" sched --simulate cpus=2,gpus=1 --gpu-models gpu-models --policies dmda --no-gantt --json sg.json wf.yaml
if [ "$rc" -eq 0 ] && grep -F 'simulated machine: 2 CPUs + 1 GPU' "$T/stdout" >/dev/null &&
   "$PY" - sg.json s2.json <<'EOF' >gpu.out 2>&1
import json, sys
d = json.load(open(sys.argv[1]))
cpu_only = {p["policy"]: p for p in json.load(open(sys.argv[2]))["policies"]}["dmda"]
p = d["policies"][0]
assert d["simulated"]["gpus"] == 1 and d["simulated"]["cuda_models"] >= 5, d["simulated"]
gpus = [w for w in p["workers"] if w["name"].startswith("CUDA")]
assert len(gpus) == 1 and len(p["workers"]) == 3, p["workers"]
assert sum(w["tasks"] for w in gpus) > 0, gpus                         # the GPUs run tasks
assert p["bytes_transferred"] > 0 and p["transfers"] > 0, p           # their data moves
assert p["wall_s"] < cpu_only["wall_s"], (p["wall_s"], cpu_only["wall_s"])
print("%d of %d tasks on the GPU, %d bytes moved, %.3f s vs %.3f s on 2 CPUs"
      % (sum(w["tasks"] for w in gpus), p["tasks"], p["bytes_transferred"], p["wall_s"], cpu_only["wall_s"]))
EOF
then pass "a simulated GPU with CUDA models (--gpu-models): $(cat gpu.out)"
else fail "a simulated GPU with CUDA models" "exit status $rc"; show gpu.out gpu.out; show stderr "$T/stderr"; show stdout "$T/stdout"; fi

# The models measured on a real GPU node (examples/gpu-models/h200: one
# H200, the CUDA tests and bench/gpu_bench.py, 2026-11-28): read, and the
# simulated GPU runs tasks with them. No speed is asserted: on this small
# workflow a CUDA task's cost on the node (tens of us) is more than most
# of these tasks take on a CPU.
run "$MDFLOW" sched --simulate cpus=2,gpus=1 --gpu-models "$MDF_TEST_SRCDIR_/examples/gpu-models/h200" --policies dmda \
    --no-gantt --json sh.json wf.yaml
if [ "$rc" -eq 0 ] && "$PY" - sh.json <<'EOF' >h200.out 2>&1
import json, sys
d = json.load(open(sys.argv[1]))
p = d["policies"][0]
assert d["simulated"]["gpus"] == 1 and d["simulated"]["cuda_models"] >= 15, d["simulated"]
gpus = [w for w in p["workers"] if w["name"].startswith("CUDA")]
assert len(gpus) == 1 and sum(w["tasks"] for w in gpus) > 0, p["workers"]
print("%d CUDA models; %d of %d tasks on the GPU, %.3f s simulated"
      % (d["simulated"]["cuda_models"], sum(w["tasks"] for w in gpus), p["tasks"], p["wall_s"]))
EOF
then pass "a simulated GPU with the H200's models (examples/gpu-models/h200): $(cat h200.out)"
else fail "a simulated GPU with the H200's models" "exit status $rc"; show h200.out h200.out; show stderr "$T/stderr"; fi

# ---- 5. a broken record -------------------------------------------------------------------------
printf 'mdflow-taskrec 1\nH 0 64\nT 1.5 0 0 mdf_velocity 1 0:3\nT 2.0 5 0 mdf_velocity\n' >bad.rec
run "$SIMULATOR" bad.rec bad.report
if [ "$rc" -eq 1 ] && grep -F 'bad.rec:4:' "$T/stderr" >/dev/null && [ ! -e bad.report ]
then pass "mdflow-simulate on a broken record: exit 1 naming the file and line, no report"
else fail "mdflow-simulate on a broken record: exit 1 naming the file and line" "exit status $rc"; show stderr "$T/stderr"; fi

finish
