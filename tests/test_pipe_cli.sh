#!/bin/sh
# mdflow — pipelines through workflow files and `mdflow run` (composition
# 'relax | md', stages.NAME.sampler and .inbox, placement:, mpirun):
#
#   (a) one process: relax | md on two scheduling contexts (STARPU_NCPU=2),
#       with and without placement, relax | (md + nve) and --sequential give
#       the fused run's final structures (energies 1e-9 relative, positions
#       1e-7 Å; the largest differences are printed) and the fused run's file
#       names;
#   (b) mpirun -np 2 and -np 3 (one CPU worker per rank): the same against the
#       fused run, exit 0, rank 0 alone writes the structures and the summary,
#       logs of a stage on several ranks and HDF5 outputs of ranks > 0 get
#       .rN; explicit ranks; the README's 2-rank command on the example;
#   (c) back-pressure: md with a one-system budget and inbox: --pipe-report
#       shows relax blocked and holding systems, md's inbox within capacity;
#   (d) a rank killed during the run ends the job, non-zero, within the
#       time limit, naming the rank;
#   (e) a system too large for a stage's budget or inbox: exit 2 before any
#       output is written, naming the system and the stage;
#   (f) every new error with its FILE:LINE: the composition's grammar, the
#       pipeline keys in the wrong place, placement; refusals under mpirun;
#       a failing stage under MPI;
#   (g) checkpoints: a pipeline stopped by max_steps on a checkpoint step,
#       and one whose rank 1 is killed after a checkpoint, resumed, ends as
#       the fused run; stages sharing a snapshot file in one process with
#       checkpoints are refused.
#
# Run by automake's harness from the build tree (MDF_TEST_SRCDIR,
# MDF_TEST_BUILDDIR); also by hand from a build directory. The MPI cases
# need mdflow built with StarPU-MPI (config.h: MDF_HAVE_MPI) and mpirun
# (Open MPI); without StarPU-MPI they are skipped, without mpirun they fail.
set -u

HARNESS_NAME=mdflow-pipe
MDF_TEST_SRCDIR_=${MDF_TEST_SRCDIR:-$(cd "$(dirname "$0")/.." && pwd)}
# shellcheck source=tests/cli_harness.sh
. "$MDF_TEST_SRCDIR_/tests/cli_harness.sh"
export STARPU_WORKERS_NOBIND=1
scale=${MDF_TEST_TIME_SCALE:-1}
PY=${MDF_PYTHON:-/usr/bin/python3}
[ -x "$PY" ] || PY=python3

# expect_error NAME WANT_STATUS FRAGMENT...: the exit status and an
# "mdflow: ...: <message>" line on stderr holding every fragment.
expect_error() {
    name=$1 want=$2
    shift 2
    if [ "$rc" != "$want" ]; then
        fail "$name: exit status $want" "exit status $rc"
        show stderr "$T/stderr"
        return
    fi
    miss=$(missing_in_stderr "$@")
    if [ -n "$miss" ]; then
        fail "$name: message names $*" "missing: $(echo "$miss" | tr '\n' ' ')"; show stderr "$T/stderr"
    else
        pass "$name: exit $rc, $(grep -E '^mdflow: ' "$T/stderr" | head -n 1 | cut -c1-230)"
    fi
}

# compare_xyz A B: "systems N pos P energy E": the largest difference of the
# positions (Å) and of the energies (relative) of the same systems in two
# extended XYZ files; exit 1 when the systems or their atoms differ.
compare_xyz() {
    awk 'function energy(line,   m) {
             if (match(line, /(^|[ \t])energy=[-+0-9.eE]+/)) { m = substr(line, RSTART, RLENGTH); sub(/.*=/, "", m); return m + 0 }
             return "none" }
         FNR == 1 { file++; n = 0; state = 0 }
         {
             if (state == 0) { if ($0 ~ /^[ \t]*$/) next; n++; left = $1 + 0; count[file] = n; natoms[file, n] = left; state = 1; next }
             if (state == 1) { e[file, n] = energy($0); a = 0; state = left > 0 ? 2 : 0; next }
             a++; for (k = 2; k <= 4; k++) p[file, n, a, k] = $k + 0
             if (a == left) state = 0
         }
         END {
             if (file != 2 || count[1] != count[2] || count[1] == 0) { print "systems differ:", count[1] + 0, count[2] + 0; exit 1 }
             wp = 0; we = 0
             for (i = 1; i <= count[1]; i++) {
                 if (natoms[1, i] != natoms[2, i] || e[1, i] == "none" || e[2, i] == "none") { print "system", i, "differs"; exit 1 }
                 d = e[1, i] - e[2, i]; if (d < 0) d = -d; s = e[1, i] < 0 ? -e[1, i] : e[1, i]; if (s < 1e-3) s = 1e-3
                 if (d / s > we) we = d / s
                 for (j = 1; j <= natoms[1, i]; j++) for (k = 2; k <= 4; k++) {
                     d = p[1, i, j, k] - p[2, i, j, k]; if (d < 0) d = -d; if (d > wp) wp = d }
             }
             printf "systems %d pos %.3g energy %.3g\n", count[1], wp, we
         }' "$1" "$2"
}
# same_as_fused NAME FILE [REF]: FILE holds REF's systems (default fused.xyz)
# within 1e-7 Å and 1e-9 relative, with the same statuses.
worst_pos=0 worst_e=0
same_as_fused() {
    ref=${3:-fused.xyz}
    d=$(compare_xyz "$ref" "$2") && st1=$(info_values mdf_status "$ref") && st2=$(info_values mdf_status "$2") &&
        [ "$st1" = "$st2" ] &&
        echo "$d" | awk '{ exit !($4 <= 1e-7 && $6 <= 1e-9) }'
    ok=$?
    if [ $ok -eq 0 ]; then
        pass "$1: the fused run's systems ($d)"
        worst_pos=$(echo "$d $worst_pos" | awk '{ print ($4 > $7 ? $4 : $7) }')
        worst_e=$(echo "$d $worst_e" | awk '{ print ($6 > $8 ? $6 : $8) }')
    else
        fail "$1: the fused run's systems (1e-7 Å, 1e-9 relative)" "$d" "statuses $(info_values mdf_status "$2")"
    fi
}
info_values() {
    frames "$2" 2>/dev/null | grep -o -E "(^|[[:space:]])$1=[-0-9]+" | sed 's/.*=//' | tr '\n' ' '
}
# json FILE EXPR: a Python expression over the report r (json.load), printed.
json() {
    "$PY" -c 'import json, sys
r = json.load(open(sys.argv[1]))
s = {(x["name"], x["rank"]): x for x in r["stages"]}
print(eval(sys.argv[2]))' "$1" "$2" 2>&1
}

# ---- inputs ------------------------------------------------------------------------------
# twelve jittered open argon clusters of 6 to 19 atoms (140 in all)
argon_clusters 11 "13 19 8 13 6 10 17 9 12 15 7 11" 0.3 >clusters.xyz
# The base workflow; error cases change one line, so its line numbers matter.
cat >base.yaml <<'EOF'
input: clusters.xyz
model:
  type: lj
  shift: true
  species:
    - {element: Ar, epsilon: 0.0104, sigma: 3.40, cutoff: 8.5}
stages:
  relax:
    method: fire
    fmax: 0.01
    step_budget: 500
    params: {dt: 0.1, maxstep: 0.2}
  md:
    method: langevin
    dt_fs: 5
    temperature_K: 20
    entry_temperature_K: 20
    steps: 20
    params: {friction_per_fs: 0.01}
  nve:
    method: velocity_verlet
    dt_fs: 5
    steps: 10
composition: relax | md
sampler: {max_atoms: 40, refill_interval: 5}
output: {structures: pipe.xyz, log: pipe.csv, log_every: 5}
hooks: {nan_check: true}
scheduler: {window: 4}
max_steps: 20000
seed: 3
EOF
# variant NAME SED-SCRIPT: NAME.yaml from base.yaml, its outputs named NAME.*
variant() { sed "s/pipe\\./$1./g; $2" base.yaml >"$1.yaml"; }

# ---- (a) one process -----------------------------------------------------------------------
variant fused 's/^composition: .*/composition: relax + md/'
run "$MDFLOW" run --quiet fused.yaml
if [ "$rc" -eq 0 ] && [ "$(info_values mdf_status fused.xyz)" = "2 2 2 2 2 2 2 2 2 2 2 2 " ]; then
    pass "relax + md (the reference): exit 0, 12 systems with status 2"
else fail "relax + md (the reference)" "exit status $rc"; show stderr "$T/stderr"; fi
variant one ''
run "$MDFLOW" run --quiet --pipe-report one.json one.yaml
cp "$T/stdout" one.stdout
if [ "$rc" -eq 0 ] && grep -F 'relax | md of clusters.xyz, a pipeline of 2 stages in one process' one.stdout >/dev/null &&
    grep -E 'finished 12 \(status 2\), unfinished 0' one.stdout >/dev/null &&
    [ "$(grep -c -E '^    (relax|md) +0 +2 +12 +12 +0 ' one.stdout)" = 2 ]; then
    pass "relax | md in one process: exit 0, 12 finished, a table row per stage (sharing the 2 workers, 12 in, 12 out)"
else fail "relax | md in one process: exit 0, 12 finished, the table" "exit status $rc"; show stdout one.stdout
    show stderr "$T/stderr"; fi
same_as_fused "relax | md, 2 scheduling contexts" one.xyz
if [ -s one.relax.csv ] && [ -s one.md.csv ] && [ ! -e one.md.r0.csv ] && [ ! -e one.csv ]; then
    pass "relax | md in one process: the fused run's log names (one.relax.csv, one.md.csv)"
else fail "relax | md in one process: the fused run's log names" "$(ls one.*)"; fi
if [ "$(json one.json 'r["nranks"], r["finished"], len(r["stages"]), s[("relax", 0)]["nworkers"], s[("md", 0)]["nworkers"], r["mpi"]')" = "(1, 12, 2, 2, 2, False)" ]; then
    pass "--pipe-report: nranks 1, finished 12, two stage instances sharing the 2 workers"
else fail "--pipe-report in one process" "$(json one.json 'r["nranks"], r["finished"], len(r["stages"])')"; fi
# placement in one process: a CPU worker and a policy each
variant placed '$a\
placement: {relax: {cpus: 1, sched: lws}, md: {cpus: 1, sched: eager}}'
run "$MDFLOW" run --quiet --pipe-report placed.json placed.yaml
if [ "$rc" -eq 0 ] && [ "$(json placed.json 's[("relax", 0)]["nworkers"], s[("md", 0)]["nworkers"]')" = "(1, 1)" ]; then
    pass "placement {cpus: 1, sched: lws} and {cpus: 1, sched: eager}: exit 0, one worker each"
    same_as_fused "relax | md placed" placed.xyz
else fail "placement in one process" "exit status $rc"; show stderr "$T/stderr"; fi
# a fused term in a pipeline, and three pipeline stages, against relax + md + nve
variant fused3 's/^composition: .*/composition: relax + md + nve/'
variant group 's/^composition: .*/composition: relax | (md + nve)/'
variant three 's/^composition: .*/composition: relax | md | nve/'
rcs=""
for w in fused3 group three; do run "$MDFLOW" run --quiet "$w.yaml"; rcs="$rcs$rc"; done
if [ "$rcs" = 000 ] && [ "$(info_values mdf_status fused3.xyz)" = "3 3 3 3 3 3 3 3 3 3 3 3 " ]; then
    pass "relax + md + nve, relax | (md + nve), relax | md | nve: exit 0, status 3"
    same_as_fused "relax | (md + nve)" group.xyz fused3.xyz
    same_as_fused "relax | md | nve" three.xyz fused3.xyz
else fail "three stages fused, grouped and pipelined" "exit statuses $rcs"; show stderr "$T/stderr"; fi
# --sequential takes '|' as '+'
variant seq ''
run "$MDFLOW" run --quiet --sequential seq.yaml
if [ "$rc" -eq 0 ] && grep -F 'stages in sequence' "$T/stdout" >/dev/null; then
    pass "--sequential with relax | md: exit 0, stages in sequence"
    same_as_fused "--sequential relax | md" seq.xyz
else fail "--sequential with relax | md" "exit status $rc"; show stderr "$T/stderr"; fi

# max_steps bounds each stage's own steps: every id is still written, in order
variant short 's/^max_steps: .*/max_steps: 3/'
run "$MDFLOW" run --quiet short.yaml
if [ "$rc" -eq 0 ] && [ "$(info_values mdf_system_id short.xyz)" = "0 1 2 3 4 5 6 7 8 9 10 11 " ] &&
    grep -F 'finished 0 (status 2), unfinished 12' "$T/stdout" >/dev/null && grep -F '(not started)' "$T/stdout" >/dev/null; then
    pass "relax | md with max_steps: 3: exit 0, every id written in input order, none finished, the unstarted listed"
else fail "relax | md with max_steps: 3" "exit status $rc; ids '$(info_values mdf_system_id short.xyz)'"
    show stdout "$T/stdout"; fi

# ---- (c) back-pressure ----------------------------------------------------------------------
# md keeps one system at a time (budget 20 atoms: the largest has 19) with an
# inbox of one system, and runs 50 steps each: relax must wait for it.
variant bp 's/^    steps: 20/    steps: 50\
    sampler: {max_atoms: 20}\
    inbox: {systems: 1, atoms: 19}/'
run "$MDFLOW" run --quiet --pipe-report bp.json bp.yaml
bp=$(json bp.json '(s[("relax", 0)]["blocked_s"] > 0, s[("relax", 0)]["held_max"] > 0, s[("md", 0)]["inbox_cap_systems"], s[("md", 0)]["inbox_cap_atoms"], s[("md", 0)]["inbox_hwm_systems"] <= 1, s[("md", 0)]["inbox_hwm_atoms"] <= 19, r["finished"])')
if [ "$rc" -eq 0 ] && [ "$bp" = "(True, True, 1, 19, True, True, 12)" ]; then
    pass "back-pressure in one process: relax blocked $(json bp.json 'round(s[("relax", 0)]["blocked_s"], 3)') s, held up to $(json bp.json 's[("relax", 0)]["held_max"]'), md's inbox within 1 system / 19 atoms"
else fail "back-pressure in one process" "exit status $rc; $bp"; show stderr "$T/stderr"; fi

# ---- (e) a system too large for a stage ---------------------------------------------------
# md's budget 15 atoms (system 1 has 19), or md's inbox 15 atoms: refused before
# any output is written (structures, logs, snapshots, converged).
variant big 's/^    steps: 20/    steps: 20\
    sampler: {max_atoms: 15}/; s/log_every: 5/log_every: 5, snapshots: big.h5, converged: bigc.h5/'
run "$MDFLOW" run --quiet big.yaml
expect_error "a system above md's budget" 2 "big.yaml:19:" "system 1 (id 1) has 19 atoms" "stage 'md'" "max_atoms = 15"
if ! ls big.xyz big.*csv* big.h5 bigc.h5 >/dev/null 2>&1; then pass "a system above md's budget: no output written"
else fail "a system above md's budget: no output written" "$(ls big.*)"; fi
variant bigin 's/^    steps: 20/    steps: 20\
    inbox: {atoms: 15}/; s/log_every: 5/log_every: 5, snapshots: bigin.h5/'
run "$MDFLOW" run --quiet bigin.yaml
expect_error "a system above md's inbox" 2 "bigin.yaml:19:" "system 1 (id 1) has 19 atoms" "inbox of stage 'md'"
if ! ls bigin.xyz bigin.*csv* bigin.h5 >/dev/null 2>&1; then pass "a system above md's inbox: no output written"
else fail "a system above md's inbox: no output written" "$(ls bigin.*)"; fi

# ---- (f) errors with their line ---------------------------------------------------------------
comp_error() { # NAME COMPOSITION FRAGMENT...
    name=$1 comp=$2
    shift 2
    variant cerr "s/^composition: .*/composition: \"$comp\"/"
    run "$MDFLOW" run --check cerr.yaml
    expect_error "composition '$comp' ($name)" 2 "cerr.yaml:24:" "$@"
}
comp_error "empty term" 'relax |' "empty term"
comp_error "empty term" 'relax || md' "empty term"
comp_error "empty term" '()' "empty term"
comp_error "unbalanced" '(relax + md' "unbalanced parentheses" "never closed"
comp_error "unbalanced" 'relax | md)' "unbalanced parentheses" "closes no '('"
comp_error "nested" '((relax + md)) | nve' "nests parentheses"
comp_error "'|' in parentheses" '(relax | md)' "'|' inside parentheses"
comp_error "a stage twice" 'relax | md | relax' "stage 'relax' twice"
comp_error "unknown stage" 'relax | mdd' "stage 'mdd'" "not defined" "relax, md, nve"
comp_error "two names" 'relax md' "two stage names in a row"
run "$MDFLOW" run --check group.yaml
if [ "$rc" -eq 0 ] && grep -F 'relax | (md + nve) of clusters.xyz' "$T/stdout" >/dev/null; then
    pass "run --check relax | (md + nve): exit 0, prints the pipeline"
else fail "run --check relax | (md + nve)" "exit status $rc"; show stderr "$T/stderr"; fi
# pipeline keys in the wrong place
variant kfused 's/^composition: .*/composition: relax + md/; s/^    steps: 20/    steps: 20\
    sampler: {max_atoms: 60}/'
run "$MDFLOW" run --check kfused.yaml
expect_error "stages.md.sampler without '|'" 2 "kfused.yaml:19:" "stages.md.sampler" "has no '|'"
variant kin 's/^    step_budget: 500/    step_budget: 500\
    inbox: {systems: 2}/'
run "$MDFLOW" run --check kin.yaml
expect_error "stages.relax.inbox (the first pipeline stage)" 2 "kin.yaml:12:" "stages.relax.inbox" "no inbox" \
    "stages.md.inbox"
variant klater 's/^composition: .*/composition: relax | (md + nve)/; s/^    steps: 10/    steps: 10\
    inbox: {systems: 2}/'
run "$MDFLOW" run --check klater.yaml
expect_error "stages.nve.inbox (fused after md)" 2 "klater.yaml:24:" "stages.nve.inbox" "fused after stage 'md'" \
    "move it to stages.md"
variant kinfused 's/^composition: .*/composition: relax + md/; s/^    steps: 20/    steps: 20\
    inbox: {atoms: 60}/'
run "$MDFLOW" run --check kinfused.yaml
expect_error "stages.md.inbox without '|'" 2 "kinfused.yaml:19:" "stages.md.inbox" "has no '|'"
variant kbad 's/^    steps: 20/    steps: 20\
    sampler: {max_atom: 60}/'
run "$MDFLOW" run --check kbad.yaml
expect_error "unknown key in stages.md.sampler" 2 "kbad.yaml:19:" "max_atom" "max_atoms, max_pairs"
variant kzero 's/^    steps: 20/    steps: 20\
    inbox: {systems: 0}/'
run "$MDFLOW" run --check kzero.yaml
expect_error "stages.md.inbox.systems: 0" 2 "kzero.yaml:19:" "stages.md.inbox.systems" ">= 1"
placement_error() { # NAME SED FRAGMENT...
    name=$1
    variant perr "$2"
    shift 2
    run "$MDFLOW" run --check perr.yaml
    expect_error "placement: $name" 2 "perr.yaml:31:" "$@"
}
placement_error "without '|'" 's/^composition: .*/composition: relax + md/; $a\
placement: {relax: {cpus: 1}}' "placement.relax" "has no '|'"
placement_error "on a stage fused after another" 's/^composition: .*/composition: relax | (md + nve)/; $a\
placement: {nve: {cpus: 1}}' "placement.nve" "move it to placement.md"
placement_error "an unknown stage" '$a\
placement: {mdd: {cpus: 1}}' "stage 'mdd'" "not defined"
placement_error "an unknown key" '$a\
placement: {md: {gpus: 1}}' "unknown key 'gpus'" "cpus, cuda, sched, ranks"
placement_error "cpus: -1" '$a\
placement: {md: {cpus: -1}}' "placement.md.cpus" "out of range"
placement_error "an unknown policy" '$a\
placement: {md: {sched: fastest}}' "placement.md.sched" "'fastest'" "dmda"
placement_error "a rank twice" '$a\
placement: {md: {ranks: [1, 1]}}' "placement.md.ranks" "rank 1 twice"
placement_error "a negative rank" '$a\
placement: {md: {ranks: [-1]}}' "placement.md.ranks" "out of range"
placement_error "ranks: []" '$a\
placement: {md: {ranks: []}}' "placement.md.ranks" "non-empty list"
placement_error "a rank hosting nothing" '$a\
placement: {relax: {ranks: [0]}, md: {ranks: [2]}}' "rank 1 hosts no stage"
# CUDA workers are counted when StarPU runs (not by --check)
variant pcuda '$a\
placement: {md: {cuda: 4}}'
run "$MDFLOW" run --quiet pcuda.yaml
expect_error "placement: more CUDA workers than there are" 2 "pcuda.yaml:31:" "stage 'md' asks for 4 CUDA workers"
variant pranks '$a\
placement: {relax: {ranks: [0]}, md: {ranks: [1]}}'
run "$MDFLOW" run --quiet pranks.yaml
expect_error "placement on 2 ranks, run without mpirun" 2 "pranks.yaml:31:" "placed on rank 1" "mpirun -np 2"
run "$MDFLOW" sched one.yaml --policies eager --repeats 1 --no-gantt
expect_error "mdflow sched with a pipeline" 2 "one.yaml:24:" "fused compositions" "placement"
run "$MDFLOW" run --quiet --pipe-report x.json fused.yaml
expect_error "--pipe-report without a pipeline" 2 "--pipe-report" "no pipeline"

# ---- (g) checkpoints in one process ----------------------------------------------------------
# Stopped by max_steps at step 20 (a checkpoint step: every 10), then resumed
# with the step limit back: the fused run's structures.
variant ck 's/^seed: 3/seed: 3\
checkpoint: {path: ck.h5, every: 10}/; s/^max_steps: .*/max_steps: 20/'
run "$MDFLOW" run --quiet ck.yaml
if [ "$rc" -eq 0 ] && [ -s ck.relax.r0.h5 ] && [ -s ck.md.r0.h5 ] && [ ! -e ck.h5 ] &&
    ! grep -F 'finished 12 (status 2)' "$T/stdout" >/dev/null; then
    pass "relax | md with checkpoints, stopped at max_steps 20: exit 0, unfinished, a checkpoint per stage (ck.relax.r0.h5, ck.md.r0.h5)"
else fail "relax | md with checkpoints, stopped at max_steps 20" "exit status $rc; $(ls ck.* 2>&1 | tr '\n' ' ')"
    show stdout "$T/stdout"; show stderr "$T/stderr"; fi
sed 's/^max_steps: 20$/max_steps: 20000/' ck.yaml >ck2.yaml
run "$MDFLOW" run --quiet --resume ck2.yaml
if [ "$rc" -eq 0 ] && grep -F 'finished 12 (status 2)' "$T/stdout" >/dev/null; then
    pass "relax | md resumed from its stage checkpoints: exit 0, 12 finished"
    same_as_fused "relax | md stopped and resumed" ck.xyz
else fail "relax | md resumed" "exit status $rc"; show stderr "$T/stderr"; fi
# Two stages of one process writing one snapshot file cannot each cut it back to
# their own checkpoint: refused before anything runs.
variant cksnap 's/^seed: 3/seed: 3\
checkpoint: {path: cksnap.ck.h5, every: 10}/; s/log_every: 5/log_every: 5, snapshots: cksnap.h5/'
run "$MDFLOW" run --quiet cksnap.yaml
expect_error "checkpoints with one snapshot file for two stages of a process" 2 "cksnap.yaml:" "snapshots" "checkpoint"

# ---- under mpirun ---------------------------------------------------------------------------
if ! grep -q 'define MDF_HAVE_MPI 1' "$builddir/config.h" 2>/dev/null; then
    pass "MPI cases skipped: mdflow was built without StarPU-MPI"
    finish
fi
if ! command -v mpirun >/dev/null 2>&1; then
    fail "mpirun is installed (scripts/install-deps.sh installs openmpi-bin)"
    finish
fi
# every_rank NAME NP STATUS PATTERN: exit STATUS, and every rank printed a
# line "mdflow: rank R: " matching PATTERN (an extended regex), or, stopped
# by mpirun once another rank had ended, its "stopped by a signal" line;
# at least one rank PATTERN's.
every_rank() {
    name=$1 np=$2 want=$3 pattern=$4
    missing="" matched=0
    for r in $(seq 0 $((np - 1))); do
        if grep -E "^mdflow: rank $r: ($pattern)" "$T/stderr" >/dev/null; then matched=$((matched + 1))
        elif ! grep -E "^mdflow: rank $r: stopped by a signal from mpirun" "$T/stderr" >/dev/null; then
            missing="$missing $r"; fi
    done
    if [ "$rc" -eq "$want" ] && [ -z "$missing" ] && [ "$matched" -ge 1 ]; then
        pass "$name: exit $rc, every rank says so ($matched of $np with the error): $(grep -E "^mdflow: rank [0-9]+: ($pattern)" "$T/stderr" | head -n 1 | cut -c1-200)"
    else
        fail "$name: exit $want, every rank prints the error" "exit status $rc; ranks without a line:$missing"
        show stderr "$T/stderr"
    fi
}
# mpi NP LIMIT_S ARGS...: mdflow under mpirun, one CPU worker per rank.
mpi() {
    np=$1 limit=$(($2 * scale))
    shift 2
    STARPU_NCPU=1 timeout "$limit" mpirun --allow-run-as-root --oversubscribe -np "$np" "$MDFLOW" "$@" \
        >"$T/stdout" 2>"$T/stderr"
    rc=$?
}

# ---- (b) relax | md over 2 and 3 ranks ----------------------------------------------------------
variant np2 's/log_every: 5/log_every: 5, snapshots: np2.h5, snapshot_every: 10/'
mpi 2 120 run --quiet --pipe-report np2.json np2.yaml
cp "$T/stdout" np2.stdout
if [ "$rc" -eq 0 ] && [ "$(grep -c 'mdflow run summary' np2.stdout)" = 1 ] &&
    grep -F 'a pipeline of 2 stages over 2 MPI ranks' np2.stdout >/dev/null &&
    [ "$(json np2.json '[(x["name"], x["rank"]) for x in r["stages"]], r["nranks"], r["finished"]')" = "([('relax', 0), ('md', 1)], 2, 12)" ]; then
    pass "mpirun -np 2: exit 0 on every rank, one summary, relax on rank 0 and md on rank 1"
else fail "mpirun -np 2 relax | md" "exit status $rc"; show stdout np2.stdout; show stderr "$T/stderr"; fi
same_as_fused "mpirun -np 2 relax | md" np2.xyz
if [ -s np2.relax.csv ] && [ -s np2.md.csv ] && [ -s np2.h5 ] && [ -s np2.r1.h5 ] && ! ls np2*.r1.xyz np2.md.r*.csv >/dev/null 2>&1; then
    pass "mpirun -np 2: structures by rank 0 only; logs np2.relax.csv, np2.md.csv; snapshots np2.h5 (rank 0), np2.r1.h5 (rank 1)"
else fail "mpirun -np 2: the files of each rank" "$(ls np2*)"; fi
variant np3 's/log_every: 5/log_every: 5, snapshots: np3.h5, snapshot_every: 10/'
mpi 3 120 run --quiet --pipe-report np3.json np3.yaml
cp "$T/stdout" np3.stdout
if [ "$rc" -eq 0 ] && [ "$(grep -c 'mdflow run summary' np3.stdout)" = 1 ] &&
    [ "$(json np3.json '[(x["name"], x["rank"]) for x in r["stages"]], s[("md", 1)]["systems_in"] + s[("md", 2)]["systems_in"]')" = "([('relax', 0), ('md', 1), ('md', 2)], 12)" ]; then
    pass "mpirun -np 3: exit 0 on every rank, md on ranks 1 and 2 sharing the 12 systems"
else fail "mpirun -np 3 relax | md" "exit status $rc"; show stdout np3.stdout; show stderr "$T/stderr"; fi
same_as_fused "mpirun -np 3 relax | md" np3.xyz
if [ -s np3.relax.csv ] && [ -s np3.md.r1.csv ] && [ -s np3.md.r2.csv ] && [ ! -e np3.md.csv ] &&
    [ -s np3.h5 ] && [ -s np3.r1.h5 ] && [ -s np3.r2.h5 ] && grep -F 'np3.md.r1.csv, np3.md.r2.csv' np3.stdout >/dev/null; then
    pass "mpirun -np 3: a log per md rank (np3.md.r1.csv, np3.md.r2.csv), snapshots np3.h5, np3.r1.h5, np3.r2.h5"
else fail "mpirun -np 3: the files of each rank" "$(ls np3*)"; fi
# explicit ranks and a fused term: relax + md on rank 0 ... nve on ranks 1 and 2
variant ranks3 's/^composition: .*/composition: (relax + md) | nve/; $a\
placement: {relax: {ranks: [0]}, nve: {ranks: [1, 2]}}'
mpi 3 120 run --quiet --pipe-report ranks3.json ranks3.yaml
if [ "$rc" -eq 0 ] && [ "$(json ranks3.json '[(x["name"], x["rank"]) for x in r["stages"]]')" = "[('relax+md', 0), ('nve', 1), ('nve', 2)]" ]; then
    pass "mpirun -np 3, (relax + md) | nve placed on [0] and [1, 2]: exit 0"
    same_as_fused "mpirun -np 3 (relax + md) | nve" ranks3.xyz fused3.xyz
else fail "mpirun -np 3 with placement ranks" "exit status $rc"; show stderr "$T/stderr"; fi

# back-pressure over 2 ranks
sed 's/bp\./bpm./g' bp.yaml >bpm.yaml
mpi 2 120 run --quiet --pipe-report bpm.json bpm.yaml
bp=$(json bpm.json '(s[("relax", 0)]["blocked_s"] > 0, s[("relax", 0)]["held_max"] > 0, s[("md", 1)]["inbox_hwm_systems"] <= s[("md", 1)]["inbox_cap_systems"], s[("md", 1)]["inbox_hwm_atoms"] <= s[("md", 1)]["inbox_cap_atoms"], r["finished"])')
if [ "$rc" -eq 0 ] && [ "$bp" = "(True, True, True, True, 12)" ]; then
    pass "back-pressure over 2 ranks: relax blocked $(json bpm.json 'round(s[("relax", 0)]["blocked_s"], 3)') s, md's inbox within its capacity"
else fail "back-pressure over 2 ranks" "exit status $rc; $bp"; show stderr "$T/stderr"; fi

# (e) under MPI: every rank refuses, nothing written
sed 's/big\./bigm./g; s/bigc\./bigmc./g' big.yaml >bigm.yaml
mpi 2 60 run --quiet bigm.yaml
every_rank "mpirun -np 2, a system above md's budget" 2 2 "invalid input: bigm.yaml:19: .*system 1 \(id 1\) has 19 atoms: stage 'md'"
if ! ls bigm.xyz bigm.*csv* bigm.h5 bigmc.h5 >/dev/null 2>&1; then pass "mpirun -np 2, a system above md's budget: no output"
else fail "mpirun -np 2, a system above md's budget: no output" "$(ls bigm.* 2>&1)"; fi

# refusals under mpirun: a fused composition, --sequential, md
mpi 2 60 run --quiet fused.yaml
every_rank "mpirun with relax + md" 2 2 "invalid input: mdflow run under mpirun needs a pipeline composition \(relax \| md\).*fuses its stages"
mpi 2 60 run --quiet --sequential seq.yaml
every_rank "mpirun with --sequential" 2 2 "invalid input: mdflow run under mpirun needs a pipeline composition.*--sequential"
mpi 2 60 md --input clusters.xyz --steps 5
every_rank "mpirun with mdflow md" 2 2 "invalid input: mdflow md under mpirun.*without mpirun"

# a failing stage: NaN in md on rank 1 stops both ranks, naming the stage and the rank
awk 'BEGIN { a = 5.26; n = 3; L = a * n
    split("0 0 0 0.5 0.5 0 0.5 0 0.5 0 0.5 0.5", b, " ")
    for (s = 0; s < 2; s++) {
        printf "%d\nLattice=\"%.2f 0 0 0 %.2f 0 0 0 %.2f\" Properties=species:S:1:pos:R:3 pbc=\"T T T\"\n", 4 * n * n * n, L, L, L
        for (i = 0; i < n; i++) for (j = 0; j < n; j++) for (k = 0; k < n; k++) for (m = 0; m < 4; m++)
            printf "Ar %.4f %.4f %.4f\n", (i + b[3 * m + 1]) * a, (j + b[3 * m + 2]) * a, (k + b[3 * m + 3]) * a
    } }' >boxes.xyz
cat >nan.yaml <<'EOF'
input: boxes.xyz
model: {type: lj, species: [{element: Ar, epsilon: 0.0104, sigma: 3.40, cutoff: 6.5}]}
stages:
  relax: {method: fire, fmax: 0.01, step_budget: 5}
  md: {method: velocity_verlet, dt_fs: 1000, entry_temperature_K: 300, steps: 50}
composition: relax | md
sampler: {max_atoms: 300}
output: {structures: nan.xyz}
hooks: {nan_check: true}
EOF
mpi 2 60 run --quiet nan.yaml
every_rank "mpirun -np 2, NaN in md on rank 1" 2 2 "unphysical input: stage 'md' on rank 1 failed: NaN"

# kill_rank1_when FILE YAML: starts mdflow run YAML under mpirun -np 2 (in
# the background), waits for FILE to appear (rank 1 has reached its stage),
# then SIGKILLs rank 1 (the child of mpirun with OMPI_COMM_WORLD_RANK=1)
# and waits for the job: sets victim (empty: none found), rc and took (s).
kill_rank1_when() {
    file=$1 yaml=$2
    start=$(date +%s)
    STARPU_NCPU=1 timeout "$limit" mpirun --allow-run-as-root --oversubscribe -np 2 "$MDFLOW" run --quiet "$yaml" \
        >"$T/stdout" 2>"$T/stderr" &
    job=$!
    victim=""
    for _ in $(seq 1 $((200 * scale))); do
        sleep 0.1
        if [ -s "$file" ]; then
            for p in $(pgrep -P "$(pgrep -P $job | head -n 1)" 2>/dev/null); do
                tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null | grep -q '^OMPI_COMM_WORLD_RANK=1$' && victim=$p
            done
            [ -n "$victim" ] && break
        fi
    done
    [ -n "$victim" ] && kill -9 "$victim"
    wait $job
    rc=$?
    took=$(($(date +%s) - start))
}

# ---- (d) a rank killed during the run ------------------------------------------------------------
# md runs for ever; once its log is open on rank 1 (md started there),
# rank 1 gets SIGKILL.
variant kill 's/^    steps: 20/    steps: 100000000/; s/^max_steps: .*/max_steps: 1000000000/'
limit=$((60 * scale))
kill_rank1_when kill.md.csv.tmp kill.yaml
if [ -z "$victim" ]; then fail "a killed rank: rank 1 was found running md" "exit status $rc"; show stderr "$T/stderr"
elif [ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] && grep -E 'rank 1 .*(signal 9|Killed)' "$T/stderr" >/dev/null &&
    grep -F 'mdflow: rank 0: stopped by a signal from mpirun' "$T/stderr" >/dev/null; then
    pass "rank 1 killed during the run: the job ends (exit $rc) in ${took} s, mpirun names rank 1, rank 0 says why it stopped"
else fail "rank 1 killed during the run: the job ends non-zero within $limit s, naming the rank" "exit status $rc after ${took} s"
    show stderr "$T/stderr"; fi

# ---- (g) checkpoints over 2 ranks: rank 1 killed after a checkpoint, then resumed ----------------
variant ckm 's/^    steps: 20/    steps: 300/; s/^seed: 3/seed: 3\
checkpoint: {path: ckm.h5, every: 10}/'
variant fused300 's/^    steps: 20/    steps: 300/; s/^composition: .*/composition: relax + md/'
run "$MDFLOW" run --quiet fused300.yaml
kill_rank1_when ckm.md.r1.h5 ckm.yaml
rc_killed=$rc
mpi 2 120 run --quiet --resume ckm.yaml
if [ -z "$victim" ]; then fail "rank 1 killed after its first checkpoint" "no rank 1 or no ckm.md.r1.h5"
elif [ "$rc_killed" -ne 0 ] && [ "$rc" -eq 0 ] && grep -F 'finished 12 (status 2)' "$T/stdout" >/dev/null; then
    pass "mpirun -np 2: rank 1 killed after a checkpoint (exit $rc_killed), resumed: exit 0, 12 finished"
    same_as_fused "mpirun -np 2 killed and resumed" ckm.xyz fused300.xyz
else fail "mpirun -np 2 killed and resumed" "killed run exit $rc_killed, resumed run exit $rc"; show stderr "$T/stderr"; fi

# ---- the README's 2-rank command on the example -------------------------------------------------
mpi 2 240 run --quiet "$MDF_TEST_SRCDIR_/examples/relax_md_pipe.yaml"
if [ "$rc" -eq 0 ] && grep -E 'finished 256 \(status 2\), unfinished 0' "$T/stdout" >/dev/null &&
    [ "$(frames relax_md_pipe.xyz | wc -l)" -eq 256 ]; then
    pass "STARPU_NCPU=1 mpirun -np 2 mdflow run examples/relax_md_pipe.yaml: exit 0, 256 systems finished"
else fail "mpirun -np 2 mdflow run examples/relax_md_pipe.yaml" "exit status $rc"; show stdout "$T/stdout"
    show stderr "$T/stderr"; fi

echo "# largest differences from the fused runs: positions $worst_pos Å, energies $worst_e (relative)"
finish
