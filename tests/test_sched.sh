#!/bin/sh
# mdflow — tests of `mdflow sched`: a small workflow (four argon clusters,
# 30 Langevin steps) under eager, lws and dmda with 2 CPU workers exits 0,
# drops and reruns the dmda runs that met models not yet calibrated
# (a fresh STARPU_HOME), reports the models' prediction error, a second run
# with the same models calibrates nothing, mdflow perfmodels prints them,
# and --calibrate runs a calibration first; prints a row per policy,
# writes JSON whose figures hold together (4 systems, both workers' busy +
# idle + sleeping shares adding to 1, no bytes moved on a machine with one
# memory node, lws's speed-up 1), a valid SVG and PNG Gantt chart per policy
# with one row per worker, a time window that is drawn as asked, and leaves
# the workflow's outputs out of the current folder; --repeats keeps the
# median run and --no-gantt draws nothing; an unknown policy is
# exit 2 naming it and listing the valid ones.
#
# Run by automake's harness from the build tree (MDF_TEST_SRCDIR,
# MDF_TEST_BUILDDIR); also by hand from a build directory. Prints "ok - ..." /
# "not ok - ..." per check, then "N passed, M failed"; exits 0 when all passed.
set -u

HARNESS_NAME=mdflow-sched
MDF_TEST_SRCDIR_=${MDF_TEST_SRCDIR:-$(cd "$(dirname "$0")/.." && pwd)}
# shellcheck source=tests/cli_harness.sh
. "$MDF_TEST_SRCDIR_/tests/cli_harness.sh"
require_python json
command -v gnuplot >/dev/null 2>&1 || { echo "SKIP: gnuplot is not installed (Debian: gnuplot-nox)"; exit 77; }

# clusters.xyz: four argon clusters of 8, 13, 6 and 10 atoms on an fcc
# lattice (5.26 Å), jittered by up to ±0.15 Å, open boundaries.
argon_clusters 5 "8 13 6 10" 0.3 >clusters.xyz
cat >wf.yaml <<'EOF'
input: clusters.xyz
model:
  type: lj
  shift: true
stages:
  md:
    method: langevin
    dt_fs: 5
    temperature_K: 20
    steps: 30
    params: {friction_per_fs: 0.01}
composition: md
sampler: {max_atoms: 30, refill_interval: 5}
output: {structures: out/final.xyz}
seed: 3
EOF

# ---- 1. usage ------------------------------------------------------------------------
run "$MDFLOW" sched --help
if [ "$rc" -eq 0 ] && grep -F 'usage: mdflow sched' "$T/stdout" >/dev/null && grep -F 'STARPU_CALIBRATE=1' "$T/stdout" >/dev/null &&
   grep -F 'fewer than 10 measurements is not calibrated' "$T/stdout" >/dev/null
then pass "mdflow sched --help: exit 0, usage, how models are calibrated"
else fail "mdflow sched --help: exit 0, usage" "exit status $rc"; show stdout "$T/stdout"; fi

run "$MDFLOW" sched --policies lws,nosuch wf.yaml
if [ "$rc" -eq 2 ] && grep -F "'nosuch'" "$T/stderr" >/dev/null && grep -F 'dmda' "$T/stderr" >/dev/null \
    && grep -F 'eager' "$T/stderr" >/dev/null && grep -F 'lws' "$T/stderr" >/dev/null; then
    pass "an unknown policy: exit 2, named, the valid ones listed"
else fail "an unknown policy: exit 2, named, the valid ones listed" "exit status $rc"; show stderr "$T/stderr"; fi

# ---- 2. three policies ------------------------------------------------------------------
# Fresh models, so that dmda's first run calibrates.
STARPU_HOME=$(pwd)/sched-starpu-home
rm -rf "$STARPU_HOME"
export STARPU_HOME
run "$MDFLOW" sched --policies eager,lws,dmda --json s.json --gantt g wf.yaml
cp "$T/stdout" sched.stdout
cp "$T/stderr" sched.stderr
if [ "$rc" -eq 0 ]; then pass "mdflow sched --policies eager,lws,dmda: exit 0"
else fail "mdflow sched --policies eager,lws,dmda: exit 0" "exit status $rc"; show stderr sched.stderr; show stdout sched.stdout; fi
rows=""
for p in eager lws dmda; do
    grep -E "^$p +[0-9.]+ " sched.stdout >/dev/null || rows="$rows $p"
done
if [ -z "$rows" ] && grep -F 'busy/idle/sleeping' sched.stdout >/dev/null; then pass "the table has a row per policy"
else fail "the table has a row per policy" "missing:$rows"; show stdout sched.stdout; fi
# A fresh STARPU_HOME: the first dmda run calibrates, is dropped and runs again.
if grep -F 'dmda: performance models were calibrated during this run' sched.stderr >/dev/null &&
   ! grep -F 'eager: performance models were calibrated' sched.stderr >/dev/null && ! grep -F 'lws: performance models were calibrated' sched.stderr >/dev/null; then
    pass "fresh models: the dmda run that calibrated is dropped and run again (only dmda uses models)"
else fail "fresh models: the dmda run that calibrated is dropped and run again"; show stderr sched.stderr; fi
if [ ! -e out ] && [ ! -e out.xyz ]; then pass "the workflow's outputs stay out of the current folder"
else fail "the workflow's outputs stay out of the current folder" "$(ls)"; fi

# ---- 3. the JSON --------------------------------------------------------------------------
if "$PY" - s.json <<'EOF' >json.out 2>&1; then pass "s.json: every policy's figures ($(cat json.out))"; else fail "s.json: every policy's figures, the same course"; show json.out json.out; fi
import json, sys
d = json.load(open(sys.argv[1]))
assert [p["policy"] for p in d["policies"]] == ["eager", "lws", "dmda"], d["policies"]
assert d["baseline"] == "lws" and d["calibration_policy"] is None, (d["baseline"], d["calibration_policy"])
by = {p["policy"]: p for p in d["policies"]}
for name, p in by.items():
    assert p["uses_models"] == (name == "dmda"), name
    assert p["wall_s"] > 0 and len(p["wall_s_runs"]) == 1 and p["wall_s_runs"][0] == p["wall_s"], p
    assert p["systems"] == 4, (name, p["systems"])                       # the four clusters, each finishes
    assert abs(p["systems_per_s"] * p["wall_s"] - 4) < 1e-3 * 4, p
    assert p["atom_steps_per_s"] > 0 and p["steps"] >= 30, p
    assert p["bytes_transferred"] == 0 and p["transfers"] == 0, p      # one memory node: nothing to move
    assert len(p["workers"]) == 2, p["workers"]                         # STARPU_NCPU=2
    assert sum(w["tasks"] for w in p["workers"]) == p["tasks"] > 0, p
    assert 0 < p["traced_tasks"] <= p["tasks"], p
    for w in p["workers"]:
        shares = (w["busy"], w["idle"], w["sleeping"])
        assert all(0 <= s <= 1 for s in shares) and abs(sum(shares) - 1) < 1e-3, w
    expect = by["lws"]["wall_s"] / p["wall_s"]
    assert abs(p["speedup"] - expect) < 1e-3 * expect, (name, p["speedup"], expect)
    assert p["gantt_svg"] == "g-%s.svg" % name and p["gantt_png"] == "g-%s.png" % name, p
    # dmda predicts every modelled task it places; the others predict none.
    codelets = {c["name"]: c for c in p["codelets"]}
    assert sum(c["tasks"] for c in codelets.values()) == p["traced_tasks"], p["codelets"]
    if name == "dmda":
        # Fresh models: at least the first run calibrated and was dropped.
        assert p["calibration_runs_dropped"] >= 1, p
        assert p["predicted_tasks"] > 0 and p["model_error"] is not None and p["model_error"] >= 0, p
        assert sum(c["predicted_tasks"] for c in codelets.values()) == p["predicted_tasks"], codelets
    else:
        assert p["predicted_tasks"] == 0 and p["model_error"] is None and p["calibration_runs_dropped"] == 0, p
assert by["lws"]["speedup"] == 1
# The run's course (refills, steps, tasks) does not depend on timing, so
# every policy does the same work: its decisions read censuses at a fixed lag.
course = {(p["steps"], p["tasks"]) for p in d["policies"]}
assert len(course) == 1, [(p["policy"], p["steps"], p["tasks"]) for p in d["policies"]]
print("3 policies, 4 systems, 2 workers, shares add to 1, lws 1.00x, the same %d steps and %d tasks each" % course.pop())
EOF

# ---- 3b. the models persist: a second run calibrates nothing; mdflow perfmodels ----------
run "$MDFLOW" sched --policies dmda --no-gantt --json again.json wf.yaml
if [ "$rc" -eq 0 ] && ! grep -F 'were calibrated' "$T/stderr" >/dev/null &&
   "$PY" -c 'import json,sys; p=json.load(open(sys.argv[1]))["policies"][0]; assert p["calibration_runs_dropped"] == 0 and not p["calibrating"] and p["predicted_tasks"] == p["traced_tasks"], p' again.json
then pass "a second mdflow sched reuses the models in STARPU_HOME (no calibration, every task predicted)"
else fail "a second mdflow sched reuses the models in STARPU_HOME" "exit status $rc"; show stderr "$T/stderr"; fi
run "$MDFLOW" perfmodels
if [ "$rc" -eq 0 ] && grep -F "$STARPU_HOME/.starpu/sampling/mdflow/" "$T/stdout" >/dev/null &&
   grep -E '^mdf_langevin_pre +cpu +[0-9]+ +[0-9]+ .* yes$' "$T/stdout" >/dev/null &&
   grep -E '^mdf_model_lj +cpu ' "$T/stdout" >/dev/null; then
    pass "mdflow perfmodels: the folder, and a calibrated model per codelet that ran"
else fail "mdflow perfmodels: the folder, and a model per codelet" "exit status $rc"; show stdout "$T/stdout"; fi
# ---- 3c. --calibrate ---------------------------------------------------------------------
run "$MDFLOW" sched --policies dmda --no-gantt --calibrate --json cal.json wf.yaml
if [ "$rc" -eq 0 ] && grep -F 'calibrating the performance models under dmda' "$T/stderr" >/dev/null &&
   "$PY" -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["calibration_policy"] == "dmda", d' cal.json
then pass "--calibrate: a calibration run first, whatever the models"
else fail "--calibrate: a calibration run first" "exit status $rc"; show stderr "$T/stderr"; fi

# ---- 4. the Gantt charts -----------------------------------------------------------------
cat >check_gantt.py <<'EOF'
import json, struct, sys, xml.etree.ElementTree as ET
d = json.load(open(sys.argv[1]))
t1 = float(sys.argv[2]) if len(sys.argv) > 2 else None
ns = "{http://www.w3.org/2000/svg}"
for p in d["policies"]:
    root = ET.parse(p["gantt_svg"]).getroot()
    labels = [e.text for e in root.iter(ns + "text") if e.get("class") == "worker"]
    assert labels == [w["name"] for w in p["workers"]], (p["policy"], labels)
    tasks = [e for e in root.iter(ns + "rect") if e.get("class") == "task"]
    assert tasks, p["policy"] + ": no task box"
    legend = [e for e in root.iter(ns + "rect") if e.get("class") == "legend"]
    assert legend, p["policy"] + ": no legend"
    if t1 is not None:
        ticks = [float(e.text) for e in root.iter(ns + "text") if e.get("class") == "tick"]
        assert ticks and 0.9 * t1 <= max(ticks) <= t1 * (1 + 1e-9), (p["policy"], ticks)
    png = open(p["gantt_png"], "rb").read()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and png[12:16] == b"IHDR", p["gantt_png"] + ": not a PNG"
    w, h = struct.unpack(">II", png[16:24])
    assert w == 1200 and h > 100, (p["gantt_png"], w, h)
print("%d SVG+PNG pairs, a row per worker" % len(d["policies"]))
EOF
if "$PY" check_gantt.py s.json >gantt.out 2>&1; then pass "Gantt charts: $(cat gantt.out)"
else fail "Gantt charts: valid SVG and PNG, a row per worker"; show gantt.out gantt.out; fi

# A window: the axis ends at T1; one policy is enough.
run "$MDFLOW" sched --policies lws --window 0:0.002 --json w.json --gantt w --no-calibration wf.yaml
if [ "$rc" -eq 0 ] && "$PY" check_gantt.py w.json 0.002 >window.out 2>&1; then
    pass "--window 0:0.002: the axis stops at 0.002 s"
else fail "--window 0:0.002: the axis stops at 0.002 s" "exit status $rc"; show stderr "$T/stderr"; show window.out window.out; fi
# --repeats 3: the median of the three wall times; --no-gantt: no charts.
run "$MDFLOW" sched --policies eager --repeats 3 --no-gantt --no-calibration --json r.json wf.yaml
if [ "$rc" -eq 0 ] && [ ! -e gantt-eager.svg ] && [ ! -e gantt-eager.png ] && "$PY" - r.json <<'EOF' >repeats.out 2>&1
import json, sys
p = json.load(open(sys.argv[1]))["policies"][0]
runs = p["wall_s_runs"]
assert len(runs) == 3 and p["wall_s"] == sorted(runs)[1] and "gantt_svg" not in p, p
EOF
then pass "--repeats 3: the median run; --no-gantt: no chart"
else fail "--repeats 3: the median run; --no-gantt: no chart" "exit status $rc"; show stderr "$T/stderr"; show repeats.out repeats.out; fi
# Two policies, two runs each: in rounds (each policy once per round).
run "$MDFLOW" sched --policies eager,lws --repeats 2 --no-gantt --no-calibration --json rr.json wf.yaml
order=$(sed -n 's/^mdflow sched: \([a-z]*\), run \([0-9]\) of 2$/\1:\2/p' "$T/stderr" | tr '\n' ' ')
if [ "$rc" -eq 0 ] && [ "$order" = "eager:1 lws:1 eager:2 lws:2 " ]; then
    pass "--repeats 2 with two policies: runs in rounds ($order)"
else fail "--repeats 2 with two policies: runs in rounds" "exit status $rc, order '$order'"; show stderr "$T/stderr"; fi
run "$MDFLOW" sched --policies lws --window 0.5:0.1 wf.yaml
if [ "$rc" -eq 2 ] && grep -F -- "--window '0.5:0.1'" "$T/stderr" >/dev/null; then pass "--window T0 >= T1: exit 2"
else fail "--window T0 >= T1: exit 2" "exit status $rc"; show stderr "$T/stderr"; fi

finish
