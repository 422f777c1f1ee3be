#!/bin/sh
# mdflow — tests of workflow files and `mdflow run`: a small valid workflow
# (relax + md fused, inflight batching with a budget below the dataset's size)
# writes every system in input order with status 2; --sequential (static
# batches, stages in sequence) follows the same trajectories; a single stage; --check;
# max_steps too small still writes every id; each kind of error names the
# workflow file and the right line and exits 2 (outputs equal to an input,
# the workflow file or another output, and outputs that cannot be written,
# among them); a system larger than the
# sampler's budget is named; the built-in default finishes within 60 s and
# its final frames' virials match ASE's.
#
# Run by automake's harness from the build tree with MDF_TEST_SRCDIR and
# MDF_TEST_BUILDDIR set; also runs by hand from a build directory.
# Prints "ok - ..." / "not ok - ..." per check (details of a failure follow as
# "#" lines), then "N passed, M failed"; exits 0 when every check passed, else 1.
set -u

HARNESS_NAME=mdflow-wf
MDF_TEST_SRCDIR_=${MDF_TEST_SRCDIR:-$(cd "$(dirname "$0")/.." && pwd)}
# shellcheck source=tests/cli_harness.sh
. "$MDF_TEST_SRCDIR_/tests/cli_harness.sh"

# expect_error NAME WANT_STATUS FRAGMENT...: the exit status (or "nonzero": any
# failure but a crash) and one "mdflow: <kind>: <message>" line holding every fragment.
expect_error() {
    name=$1 want=$2
    shift 2
    if [ "$want" = nonzero ] && [ "$rc" -ne 0 ] && [ "$rc" -lt 128 ]; then :
    elif [ "$rc" != "$want" ]; then
        fail "$name: exit status $want" "exit status $rc"
        show stderr "$T/stderr"
        return
    fi
    miss=$(missing_in_stderr "$@")
    if ! grep -E '^mdflow: [^:]+: ' "$T/stderr" >/dev/null; then
        fail "$name: an 'mdflow: <kind>: <message>' line on stderr"; show stderr "$T/stderr"
    elif [ -n "$miss" ]; then
        fail "$name: message names $*" "missing: $(echo "$miss" | tr '\n' ' ')"; show stderr "$T/stderr"
    else
        pass "$name: exit $rc, $(grep -E '^mdflow: ' "$T/stderr" | head -n 1 | cut -c1-220)"
    fi
}
# The values of an info key over the frames of a file, space-separated.
info_values() {
    frames "$2" 2>/dev/null | grep -o -E "(^|[[:space:]])$1=[-0-9]+" | sed 's/.*=//' | tr '\n' ' '
}

# ---- inputs ----------------------------------------------------------------------
# clusters.xyz: six jittered (±0.15 Å), unrelaxed argon clusters of 13, 19, 8, 13, 6 and 10
# atoms (69 in all), open boundaries.
argon_clusters 11 "13 19 8 13 6 10" 0.3 >clusters.xyz

# The base workflow; the error cases below change one line of it, so the line
# numbers in this heredoc matter.
cat >wf.yaml <<'EOF'
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
composition: relax + md
sampler: {max_atoms: 30, refill_interval: 5}
output: {structures: out.xyz, log: run.csv, log_every: 1}
hooks: {nan_check: true}
scheduler: {ncpus: 2, window: 4}
max_steps: 20000
seed: 3
EOF
# variant NAME SED-SCRIPT: NAME.yaml from wf.yaml.
variant() { sed "$2" wf.yaml >"$1.yaml"; }

# ---- 1. usage ----------------------------------------------------------------------
run "$MDFLOW" run --help
if [ "$rc" -eq 0 ] && grep -F 'usage: mdflow run' "$T/stdout" >/dev/null; then pass "mdflow run --help: exit 0, usage"; else
    fail "mdflow run --help: exit 0, usage" "exit status $rc"; show stdout "$T/stdout"; fi
# It says which snapshot form each reader takes (MDAnalysis: one file per system).
if grep -F 'traj_{id}.h5md' "$T/stdout" | grep -F MDAnalysis >/dev/null && grep -F 'FILE.h5md' "$T/stdout" |
    grep -F 'MDAnalysis opens the first system' >/dev/null; then pass "mdflow run --help: which snapshot form for MDAnalysis"
else fail "mdflow run --help: which snapshot form for MDAnalysis"; show stdout "$T/stdout"; fi
run "$MDFLOW" help
if [ "$rc" -eq 0 ] && grep -E '^  run ' "$T/stdout" >/dev/null; then pass "mdflow help lists the run command"; else
    fail "mdflow help lists the run command" "exit status $rc"; show stdout "$T/stdout"; fi

# ---- 2. a valid workflow: relax + md, inflight --------------------------------------
run "$MDFLOW" run wf.yaml
cp "$T/stdout" run.stdout
if [ "$rc" -eq 0 ]; then pass "relax + md workflow: exit 0"; else
    fail "relax + md workflow: exit 0" "exit status $rc"; show stderr "$T/stderr"; show stdout run.stdout; fi
counts=$(frames out.xyz 2>/dev/null | cut -f1 | tr '\n' ' ')
ids=$(info_values mdf_system_id out.xyz)
statuses=$(info_values mdf_status out.xyz)
if [ "$counts" = "13 19 8 13 6 10 " ] && [ "$ids" = "0 1 2 3 4 5 " ]; then
    pass "out.xyz: the 6 systems in input order (ids 0..5, atom counts 13 19 8 13 6 10)"
else
    fail "out.xyz: the 6 systems in input order" "atom counts '$counts', ids '$ids'"
fi
if [ "$statuses" = "2 2 2 2 2 2 " ]; then pass "relax + md: every system leaves with status 2 (exit)"; else
    fail "relax + md: every system leaves with status 2 (exit)" "statuses '$statuses'"; fi
if grep -E 'finished 6 \(status 2\), unfinished 0' run.stdout >/dev/null && grep -F 'atom-steps/s' run.stdout >/dev/null \
    && grep -F 'systems/s' run.stdout >/dev/null && grep -E '^[[:space:]]+CPU [0-9]+[[:space:]]+[0-9]+' run.stdout >/dev/null; then
    pass "summary: 6 finished, systems/s, atom-steps/s, StarPU worker table"
else
    fail "summary: 6 finished, systems/s, atom-steps/s, StarPU worker table"; show stdout run.stdout
fi
hdr="step,system_id,status,energy_eV,fmax_eV_per_A,temperature_K,pressure_bar,volume_A3"
nrelax=$(awk -F, 'NR > 1 { print $2 }' run.relax.csv 2>/dev/null | sort -u | wc -l)
nmd=$(awk -F, 'NR > 1 { print $2 }' run.md.csv 2>/dev/null | sort -u | wc -l)
if [ "$(head -n 1 run.relax.csv 2>/dev/null)" = "$hdr" ] && [ "$(head -n 1 run.md.csv 2>/dev/null)" = "$hdr" ] \
    && [ "$nrelax" -eq 6 ] && [ "$nmd" -eq 6 ] && [ ! -e run.csv ]; then
    pass "output.log with two stages: run.relax.csv and run.md.csv, rows for all 6 systems each"
else
    fail "output.log with two stages: run.relax.csv and run.md.csv" "systems in relax log: $nrelax, in md log: $nmd"
    show run.relax.csv run.relax.csv; ls >&2
fi

# ---- 2b. --sequential: the same stages, in sequence on static batches ------------------
# The baseline of the pipeline benchmark: no fusion, no refill. The sampler
# packs static batches within the same 30 atoms (69 atoms: at least 3), relax
# runs on each until all its systems have left, then md. Random numbers are
# keyed by (seed, system id, the system's own step), so every system must
# follow the fused inflight run's trajectory: same steps, same final
# energies to round-off.
variant seq 's/log: run.csv/log: seq.csv/; s/out.xyz/seq.xyz/'
run "$MDFLOW" run --sequential seq.yaml
cp "$T/stdout" seq.stdout
batches=$(sed -n 's/.*static batches (stages in sequence) \([0-9]*\).*/\1/p' seq.stdout)
if [ "$rc" -eq 0 ] && [ "$(info_values mdf_status seq.xyz)" = "2 2 2 2 2 2 " ] \
    && [ "$(info_values mdf_system_id seq.xyz)" = "0 1 2 3 4 5 " ] && [ "${batches:-0}" -ge 3 ] \
    && grep -E 'finished 6 \(status 2\), unfinished 0' seq.stdout >/dev/null; then
    pass "run --sequential: exit 0, 6 systems in input order with status 2, $batches static batches"
else
    fail "run --sequential: exit 0, 6 systems with status 2, >= 3 static batches" "exit status $rc; batches '$batches'"
    show stderr "$T/stderr"; show stdout seq.stdout
fi
# energy= and kinetic_energy= of every frame, in file order
energies() { frames "$1" 2>/dev/null | grep -o -E '(^|[[:space:]])(energy|kinetic_energy)=[-0-9.eE+]+' | sed 's/.*=//'; }
worst=$(energies out.xyz >fused.e; energies seq.xyz >seq.e
        paste fused.e seq.e | awk 'NF == 2 { d = $1 - $2; if (d < 0) d = -d; s = $1 < 0 ? -$1 : $1; r = d / (s + 1e-3)
                                            if (r > w) w = r; n++ } END { printf "%d %.3g\n", n, w }')
if [ "$(info_values mdf_step seq.xyz)" = "$(info_values mdf_step out.xyz)" ] && [ "${worst%% *}" -eq 12 ] \
    && awk -v w="${worst#* }" 'BEGIN { exit !(w <= 1e-9) }'; then
    pass "run --sequential follows the fused inflight trajectories: same steps, energies within ${worst#* } (relative)"
else
    fail "run --sequential follows the fused inflight trajectories" \
        "steps '$(info_values mdf_step seq.xyz)' vs '$(info_values mdf_step out.xyz)'; values compared and worst: $worst"
fi
# A bad system in the last static batch (two atoms of system 4 on one spot) is
# refused before the first batch runs: no log row is written.
awk 'NR == 64 { keep = $0 } NR == 65 { $0 = keep } { print }' clusters.xyz >badlast.xyz
variant seqbad 's/^input: .*/input: badlast.xyz/; s/log: run.csv/log: seqbad.csv/; s/out.xyz/seqbad.xyz/'
rm -f seqbad.relax.csv seqbad.md.csv
run "$MDFLOW" run --sequential seqbad.yaml
expect_error "run --sequential, bad system in the last batch" 2 "system 4"
rows=$(cat seqbad.relax.csv seqbad.md.csv 2>/dev/null | grep -c -v '^step,')
if [ "$rows" -eq 0 ]; then pass "run --sequential checks every system before the first batch: no log rows"; else
    fail "run --sequential checks every system before the first batch" "$rows log rows written"; fi
run "$MDFLOW" run --sequential --resume seq.yaml
expect_error "run --sequential --resume" 2 "--resume" "--sequential"
variant seqck 's/^seed: 3/seed: 3\ncheckpoint: {path: seq.ckpt.h5, every: 10}/; s/out.xyz/seqck.xyz/'
run "$MDFLOW" run --sequential seqck.yaml
expect_error "run --sequential with a checkpoint" 2 "seqck.yaml:27:" "checkpoint" "--sequential"

# ---- 3. one stage, --check, max_steps too small -------------------------------------
variant single 's/^composition: .*/composition: relax/; s/log: run.csv/log: single.csv/; s/out.xyz/single.xyz/'
run "$MDFLOW" run single.yaml
statuses=$(info_values mdf_status single.xyz)
if [ "$rc" -eq 0 ] && [ "$statuses" = "1 1 1 1 1 1 " ] && [ -s single.csv ]; then
    pass "composition: relax (one stage): exit 0, every system status 1, log single.csv"
else
    fail "composition: relax (one stage): exit 0, every system status 1" "exit status $rc; statuses '$statuses'"
    show stderr "$T/stderr"
fi
variant check 's/out.xyz/check.xyz/'
run "$MDFLOW" run --check check.yaml
if [ "$rc" -eq 0 ] && grep -F 'relax + md' "$T/stdout" >/dev/null && [ ! -e check.xyz ]; then
    pass "run --check: exit 0, prints the composition, runs nothing"
else
    fail "run --check: exit 0, prints the composition, runs nothing" "exit status $rc"; show stdout "$T/stdout"
fi
variant short 's/^max_steps: .*/max_steps: 3/; s/out.xyz/short.xyz/; s/log: run.csv, //'
run "$MDFLOW" run short.yaml
ids=$(info_values mdf_system_id short.xyz)
if [ "$rc" -eq 0 ] && [ "$ids" = "0 1 2 3 4 5 " ] && grep -F 'unfinished' "$T/stdout" >/dev/null \
    && ! info_values mdf_status short.xyz | grep -E '(^| )2 ' >/dev/null; then
    pass "max_steps: 3: exit 0, every id still written in order, none finished, the summary lists them"
else
    fail "max_steps: 3: every id still written in order, none finished" "exit status $rc; ids '$ids'; statuses \
'$(info_values mdf_status short.xyz)'"
    show stdout "$T/stdout"
fi

# ---- 3a. a variable-cell relaxation stage: method fire_cell, params pressure_GPa, smax ---
# Two strained 256-atom argon crystals (4x4x4 cells of 5.40 and 5.15 Å) relaxed at
# 1 GPa: both converge on their own (status 1) to a = 4.98864 ± 1e-4 Å (LAMMPS's value with
# this 6.8 Å cutoff; test_cell_relax checks it to 1e-5).
awk 'BEGIN {
    split("5.40 5.15", as, " ")
    for (c = 1; c <= 2; c++) {
        a = as[c]; n = 4; L = a * n
        printf "%d\nLattice=\"%.4f 0 0 0 %.4f 0 0 0 %.4f\" Properties=species:S:1:pos:R:3 pbc=\"T T T\"\n", 4 * n * n * n, L, L, L
        split("0 0 0 0.5 0.5 0 0.5 0 0.5 0 0.5 0.5", b, " ")
        for (i = 0; i < n; i++) for (j = 0; j < n; j++) for (k = 0; k < n; k++) for (m = 0; m < 4; m++)
            printf "Ar %.6f %.6f %.6f\n", (i + b[3 * m + 1]) * a, (j + b[3 * m + 2]) * a, (k + b[3 * m + 3]) * a
    }
}' >crystals.xyz
cat >cell.yaml <<'EOF'
input: crystals.xyz
model:
  type: lj
  species:
    - {element: Ar, epsilon: 0.0104, sigma: 3.40, cutoff: 6.8}
stages:
  relax:
    method: fire_cell
    fmax: 1.0e-4
    smax: 1.0e-4
    params: {pressure_GPa: 1.0}
composition: relax
sampler: {max_atoms: 600, refill_interval: 5}
output: {structures: cell.xyz}
scheduler: {ncpus: 2}
max_steps: 5000
EOF
run "$MDFLOW" run cell.yaml
lat=$(sed -n 's/.*Lattice="\([^ ]*\) .*/\1/p' cell.xyz 2>/dev/null | awk '{ printf "%.6f ", $1 / 4 }')
if [ "$rc" -eq 0 ] && [ "$(info_values mdf_status cell.xyz)" = "1 1 " ] \
    && echo "$lat" | awk '{ exit !(NF == 2 && ($1 - 4.98864)^2 < 1e-8 && ($2 - 4.98864)^2 < 1e-8) }'; then
    pass "stage method fire_cell, params pressure_GPa: 1, smax: both crystals status 1, a = $lat"
else
    fail "stage method fire_cell at 1 GPa: both crystals status 1, a = 4.98864 +- 1e-4" "exit status $rc; a = '$lat'"
    show stderr "$T/stderr"; show stdout "$T/stdout"
fi
sed 's/^    smax: .*//' cell.yaml >cellnosmax.yaml
run "$MDFLOW" run cellnosmax.yaml
expect_error "fire_cell stage without smax" 2 "cellnosmax.yaml:" "smax"
sed 's/^input: crystals.xyz/input: clusters.xyz/' cell.yaml >cellclusters.yaml
run "$MDFLOW" run cellclusters.yaml
expect_error "fire_cell stage on clusters" 2 "cellclusters.yaml:8" "system 0" "not periodic"
sed 's/^    smax: .*/    smax: -1/' cell.yaml >cellneg.yaml
run "$MDFLOW" run cellneg.yaml
expect_error "smax: -1" 2 "cellneg.yaml:10" "stages.relax.smax"

# ---- 3b. a run that explodes does not exit 0 ---------------------------------------------
# Two 3x3x3 argon boxes entering NVE at 300 K with dt 1000 fs go to NaN;
# the open pair far apart stays finite. Without hooks.nan_check the run
# used to exit 0 with NaN written: now the structures are written and the
# run fails naming the two boxes, and only them.
awk 'BEGIN { a = 5.26; n = 3; L = a * n
    split("0 0 0 0.5 0.5 0 0.5 0 0.5 0 0.5 0.5", b, " ")
    for (s = 0; s < 2; s++) {
        printf "%d\nLattice=\"%.2f 0 0 0 %.2f 0 0 0 %.2f\" Properties=species:S:1:pos:R:3 pbc=\"T T T\"\n", 4 * n * n * n, L, L, L
        for (i = 0; i < n; i++) for (j = 0; j < n; j++) for (k = 0; k < n; k++) for (m = 0; m < 4; m++)
            printf "Ar %.4f %.4f %.4f\n", (i + b[3 * m + 1]) * a, (j + b[3 * m + 2]) * a, (k + b[3 * m + 3]) * a
    }
    printf "2\nProperties=species:S:1:pos:R:3 pbc=\"F F F\"\nAr 0 0 0\nAr 20 0 0\n" }' >explode.xyz
cat >explode.yaml <<'EOF'
input: explode.xyz
model:
  type: lj
  species:
    - {element: Ar, epsilon: 0.0104, sigma: 3.40, cutoff: 6.5}
stages:
  md:
    method: velocity_verlet
    dt_fs: 1000
    entry_temperature_K: 300
    steps: 20
composition: md
sampler: {max_atoms: 300}
output: {structures: exploded.xyz}
scheduler: {ncpus: 2}
seed: 3
EOF
run "$MDFLOW" run explode.yaml
expect_error "run that explodes without nan_check" 2 "NaN/Inf" "2 of 3 systems: system id 0, system id 1;" \
    "nan_check" "explode.yaml"
if [ "$(frames exploded.xyz | wc -l)" -eq 3 ]; then pass "run that explodes: the 3 structures are still written"; else
    fail "run that explodes: the 3 structures are still written"; fi

# ---- 3b'. the EAM model: its potential file relative to the workflow's folder --------------
eam_pot=${MDF_LAMMPS_POTENTIALS:-/usr/share/lammps/potentials}/Cu_u3.eam
if [ -r "$eam_pot" ]; then
    mkdir -p eamwf/pots && cp "$eam_pot" eamwf/pots/
    awk 'BEGIN { a = 3.615; n = 5; L = a * n
        split("0 0 0 0.5 0.5 0 0.5 0 0.5 0 0.5 0.5", b, " ")
        printf "%d\nLattice=\"%.3f 0 0 0 %.3f 0 0 0 %.3f\" Properties=species:S:1:pos:R:3 pbc=\"T T T\"\n", 4 * n * n * n, L, L, L
        for (i = 0; i < n; i++) for (j = 0; j < n; j++) for (k = 0; k < n; k++) for (m = 0; m < 4; m++)
            printf "Cu %.4f %.4f %.4f\n", (i + b[3 * m + 1]) * a, (j + b[3 * m + 2]) * a, (k + b[3 * m + 3]) * a
    }' >eamwf/cu.xyz
    cat >eamwf/eam.yaml <<'EOF'
input: cu.xyz
model:
  type: eam
  params: {file: pots/Cu_u3.eam}
stages:
  md:
    method: velocity_verlet
    dt_fs: 2
    entry_temperature_K: 300
    steps: 10
composition: md
sampler: {max_atoms: 1000}
scheduler: {ncpus: 2}
EOF
    run "$MDFLOW" run eamwf/eam.yaml
    if [ "$rc" -eq 0 ]; then pass "eam workflow: model.params.file relative to the workflow's folder"; else
        fail "eam workflow: model.params.file relative to the workflow's folder" "exit status $rc"; show stderr "$T/stderr"; fi
    sed 's#pots/Cu_u3.eam#pots/none.eam#' eamwf/eam.yaml >eamwf/eam-missing.yaml
    run "$MDFLOW" run eamwf/eam-missing.yaml
    expect_error "eam workflow with a missing potential file" nonzero "eam-missing.yaml:3:" "eamwf/pots/none.eam"
else
    echo "# skipped: eam workflow (no $eam_pot)"
fi

# ---- 3c. memory follows the dataset, not the budgets ---------------------------------------
# The largest budgets a workflow may give over 69 atoms: the shards were
# sized by the budget (16 GB resident and minutes of zeroing); now by what
# the dataset can fill.
variant huge-budget 's/^sampler: {max_atoms: 30, refill_interval: 5}$/sampler: {max_atoms: 67108864, max_systems: 67108864, refill_interval: 5}/'
if [ -x /usr/bin/time ]; then MEASURE="/usr/bin/time -o $T/maxrss -f %M"; else MEASURE=; fi
rm -f "$T/maxrss"
# shellcheck disable=SC2086 # MEASURE is empty or four words
run $MEASURE "$MDFLOW" run huge-budget.yaml
kb=$(tail -n 1 "$T/maxrss" 2>/dev/null || echo 0)
if [ "$rc" -eq 0 ] && grep -F 'max_atoms: 67108864' huge-budget.yaml >/dev/null && [ "$kb" -lt 1000000 ]; then
    pass "run with budgets of 67 million atoms and systems over 69 atoms: exit 0, ${kb} kB resident at most"
else
    fail "run with budgets of 67 million atoms and systems over 69 atoms: exit 0, under 1 GB" \
        "exit status $rc; max resident ${kb} kB"; show stderr "$T/stderr"
fi

# ---- 4. errors name the workflow file and the line -----------------------------------
{ cat wf.yaml; echo "frobnicate: 1"; } >unknown-top.yaml
run "$MDFLOW" run unknown-top.yaml
expect_error "unknown top-level key" 2 "unknown-top.yaml:27:" "frobnicate" "valid keys"
variant unknown-key '10s/fmax/fmx/'
run "$MDFLOW" run unknown-key.yaml
expect_error "unknown key in a stage" 2 "unknown-key.yaml:10:" "fmx" "fmax"
variant bad-number '10s/0.01/abc/'
run "$MDFLOW" run bad-number.yaml
expect_error "fmax: abc" 2 "bad-number.yaml:10:" "abc" "not a number"
variant bad-range '15s/5/-5/'
run "$MDFLOW" run bad-range.yaml
expect_error "dt_fs: -5" 2 "bad-range.yaml:15:" "dt_fs" "out of range"
variant bad-fraction '21s/refill_interval: 5/refill_interval: 5, refill_fraction: 1.5/'
run "$MDFLOW" run bad-fraction.yaml
expect_error "refill_fraction: 1.5" 2 "bad-fraction.yaml:21:" "sampler.refill_fraction" "out of range" "[0, 1]"
variant bad-type '21s/.*/sampler: 5/'
run "$MDFLOW" run bad-type.yaml
expect_error "sampler: 5 (not a mapping)" 2 "bad-type.yaml:21:" "sampler" "mapping"
variant bad-method '14s/langevin/newton/'
run "$MDFLOW" run bad-method.yaml
expect_error "unknown method" 2 "bad-method.yaml:14:" "newton" "fire" "langevin"
variant bad-param '19s/friction_per_fs/frictoin/'
run "$MDFLOW" run bad-param.yaml
expect_error "unknown method parameter" 2 "bad-param.yaml:19:" "frictoin" "langevin" "friction_per_fs"
variant bad-comp '20s/relax + md/relax + mdd/'
run "$MDFLOW" run bad-comp.yaml
expect_error "unknown stage in composition" 2 "bad-comp.yaml:20:" "mdd" "relax, md"
variant no-input '1s/clusters.xyz/nothere.xyz/'
run "$MDFLOW" run no-input.yaml
expect_error "input file missing" 2 "no-input.yaml:1:" "nothere.xyz"
variant duplicate '10a\    fmax: 0.1'
run "$MDFLOW" run duplicate.yaml
expect_error "duplicate key" 2 "duplicate.yaml:11:" "duplicate key 'fmax'" "line 10"
variant no-sampler '21d'
run "$MDFLOW" run no-sampler.yaml
expect_error "missing required key" 2 "no-sampler.yaml:1:" "sampler" "max_atoms"
variant no-temp '16d'
run "$MDFLOW" run no-temp.yaml
expect_error "thermostat without temperature_K" 2 "no-temp.yaml:14:" "temperature_K"
variant no-exit '18d'
run "$MDFLOW" run no-exit.yaml
expect_error "stage without a way out" 2 "no-exit.yaml:14:" "'md'" "steps"
variant optimiser-dt '9a\    dt_fs: 2'
run "$MDFLOW" run optimiser-dt.yaml
expect_error "dt_fs on an optimiser" 2 "optimiser-dt.yaml:10:" "dt_fs" "optimiser"
variant bad-element '6s/Ar/Xx/'
run "$MDFLOW" run bad-element.yaml
expect_error "unknown element" 2 "bad-element.yaml:6:" "Xx"
printf '2\nProperties=species:S:1:pos:R:3 pbc="F F F"\nKr 0 0 0\nKr 4 0 0\n' >krypton.xyz
variant no-species '1s/clusters.xyz/krypton.xyz/'
run "$MDFLOW" run no-species.yaml
expect_error "input element missing from model.species" 2 "no-species.yaml:6:" "Kr" "system 0"
variant syntax '12s/0.2}/0.2/'
run "$MDFLOW" run syntax.yaml
if [ "$rc" -eq 2 ] && grep -E '^mdflow: parse error: syntax\.yaml:1[2-3]: ' "$T/stderr" >/dev/null; then
    pass "YAML syntax error (unclosed '{' at line 12): exit 2, parse error at syntax.yaml:12 or 13"
else
    fail "YAML syntax error: exit 2, parse error naming syntax.yaml:12 or 13" "exit status $rc"; show stderr "$T/stderr"
fi
run "$MDFLOW" run "$T/no-such-workflow.yaml"
expect_error "workflow file missing" nonzero "$T/no-such-workflow.yaml"
run "$MDFLOW" run wf.yaml extra.yaml
expect_error "two workflow files" 2 "extra.yaml"

# ---- 4b. parameters by name: stage params, the model's tables, plugins: ----------------
variant bad-param-range '19s/0.01}/-0.5}/'
run "$MDFLOW" run bad-param-range.yaml
expect_error "a method parameter out of range" 2 "bad-param-range.yaml:19:" "friction_per_fs" "langevin" "(0, inf) 1/fs"
variant bad-param-nh '14s/langevin/nose_hoover/'
run "$MDFLOW" run bad-param-nh.yaml
expect_error "another method's parameter" 2 "bad-param-nh.yaml:19:" "friction_per_fs" "nose_hoover" "tau_fs, chain"
variant bad-model-type '3s/lj/morse/'
run "$MDFLOW" run bad-model-type.yaml
expect_error "unknown model type" 2 "bad-model-type.yaml:3:" "morse" "lj" "plugin"
variant bad-model-key '4s/shift: true/shfit: true/'
run "$MDFLOW" run bad-model-key.yaml
expect_error "unknown model key" 2 "bad-model-key.yaml:4:" "shfit" "epsilon, sigma, cutoff, shift"
variant bad-species-key '6s/epsilon:/epsilonn:/'
run "$MDFLOW" run bad-species-key.yaml
expect_error "unknown per-element parameter" 2 "bad-species-key.yaml:6:" "epsilonn" "element, epsilon, sigma, cutoff"
variant bad-species-range '6s/sigma: 3.40/sigma: -3.40/'
run "$MDFLOW" run bad-species-range.yaml
expect_error "per-element parameter out of range" 2 "bad-species-range.yaml:6:" "model.species.sigma" "(0, inf) Å"
variant bad-model-param '4s/shift: true/params: {sigma: 3.4, cutof: 8}/'
run "$MDFLOW" run bad-model-param.yaml
expect_error "unknown model.params name" 2 "bad-model-param.yaml:4:" "cutof" "epsilon, sigma, cutoff, shift"
variant twice '6a\    - {element: Ar, epsilon: 0.0104, sigma: 3.40}'
run "$MDFLOW" run twice.yaml
expect_error "an element listed twice" 2 "twice.yaml:7:" "Ar twice"
variant pair-unlisted '6a\  pairs: [{elements: [Ar, Kr], epsilon: 0.01, sigma: 3.5}]'
run "$MDFLOW" run pair-unlisted.yaml
expect_error "a pair of an unlisted element" 2 "pair-unlisted.yaml:7:" "Kr" "model.species"
variant no-plugin 's/^input: clusters.xyz/input: clusters.xyz\nplugins: [nothere.so]/'
run "$MDFLOW" run no-plugin.yaml
expect_error "plugins: a missing file" nonzero "no-plugin.yaml:2:" "plugins" "nothere.so"
# The model's table, generically: params: {NAME: VALUE} and the lj
# shorthands at model level are one model; rows take unset values from the
# scalars (a species row without cutoff: the scalar cutoff).
cat >m1.yaml <<'EOF2'
input: clusters.xyz
model: {type: lj, epsilon: 0.012, sigma: 3.3, cutoff: 7.5, shift: true}
stages: {md: {method: bussi, dt_fs: 5, temperature_K: 20, entry_temperature_K: 20, steps: 30, params: {tau_fs: 50}}}
sampler: {max_atoms: 30, max_pairs: 400}
output: {structures: m1.xyz}
scheduler: {ncpus: 2}
EOF2
sed 's/model: .*/model: {type: lj, params: {epsilon: 0.012, sigma: 3.3, cutoff: 7.5, shift: true}}/; s/m1.xyz/m2.xyz/' m1.yaml >m2.yaml
sed 's/model: .*/model: {type: lj, cutoff: 7.5, shift: true, species: [{element: Ar, epsilon: 0.012, sigma: 3.3}]}/; s/m1.xyz/m3.xyz/' m1.yaml >m3.yaml
sed 's/model: .*/model: {type: lj, params: {epsilon: 0.0104, sigma: 3.3, cutoff: 7.5, shift: true}}/; s/m1.xyz/m4.xyz/' m1.yaml >m4.yaml
rcs=""
for m in m1 m2 m3 m4; do run "$MDFLOW" run $m.yaml; rcs="$rcs$rc"; done
if [ "$rcs" = 0000 ] && cmp -s m1.xyz m2.xyz && cmp -s m1.xyz m3.xyz && ! cmp -s m1.xyz m4.xyz; then
    pass "model: lj shorthands, params: and a species row give the same run bit for bit (another epsilon differs)"
else
    fail "model: lj shorthands, params: and a species row give the same run bit for bit" "exit statuses $rcs; \
m2 $(cmp -s m1.xyz m2.xyz && echo same || echo differs), m3 $(cmp -s m1.xyz m3.xyz && echo same || echo differs), \
m4 (epsilon 0.0104) $(cmp -s m1.xyz m4.xyz && echo same || echo differs)"
    show stderr "$T/stderr"
fi

# Outputs that are inputs or each other: refused before the run, naming both.
before=$(cksum <clusters.xyz)
variant ck-input 's/^seed: 3/seed: 3\ncheckpoint: {path: clusters.xyz, every: 10}/'
run "$MDFLOW" run ck-input.yaml
expect_error "checkpoint.path = the input" 2 "ck-input.yaml:27:" "checkpoint.path 'clusters.xyz'" \
    "input 'clusters.xyz'" "same file" "overwrite its input"
cp clusters.xyz in.h5
variant snap-input 's/^input: .*/input: in.h5/; s/out.xyz, /out.xyz, snapshots: .\/in.h5, /'
run "$MDFLOW" run snap-input.yaml
expect_error "output.snapshots = an HDF5 input" 2 "snap-input.yaml:22:" "output.snapshots './in.h5'" "input" \
    "same file"
# (output.structures is written in the format of its name: the workflow file
# itself is refused for its extension, before anything is written.)
variant wfself 's/out.xyz/wfself.yaml/'
run "$MDFLOW" run wfself.yaml
expect_error "output.structures = the workflow file" 2 "wfself.yaml:22:" "output.structures 'wfself.yaml'" \
    "the format cannot be told from the name"
variant log-out 's/out.xyz/run.md.xyz/; s/log: run.csv/log: run.xyz/'
run "$MDFLOW" run log-out.yaml
expect_error "output.log of a stage = output.structures" 2 "log-out.yaml:22:" "output.log (stage md) 'run.md.xyz'" \
    "output.structures 'run.md.xyz'" "each output would overwrite the other"
if [ "$(cksum <clusters.xyz)" = "$before" ] && grep -q '^input:' wfself.yaml; then pass "inputs untouched by the refused runs"
else fail "inputs untouched by the refused runs"; fi

# An output that cannot be written is found before the run (it was found
# after it, the steps lost).
variant unwritable 's/out.xyz/nodir\/out.xyz/; s/log: run.csv/log: unw.csv/'
run "$MDFLOW" run unwritable.yaml
expect_error "output.structures in a missing folder" 1 "unwritable.yaml:22:" "output.structures 'nodir/out.xyz'" \
    "folder 'nodir' does not exist" "checked before the run"
if [ ! -e unw.relax.csv.tmp ] && [ ! -e unw.relax.csv ]; then pass "output in a missing folder: nothing ran (no log begun)"
else fail "output in a missing folder: nothing ran" "$(ls unw.* 2>&1)"; fi
variant unwritable-ck 's/^seed: 3/seed: 3\ncheckpoint: {path: nodir\/ck.h5, every: 10}/'
run "$MDFLOW" run unwritable-ck.yaml
expect_error "checkpoint.path in a missing folder" 1 "unwritable-ck.yaml:27:" "checkpoint.path 'nodir/ck.h5'" \
    "does not exist"

# ---- 5. a system larger than the sampler's budget -------------------------------------
variant budget '21s/max_atoms: 30/max_atoms: 15/; s/out.xyz/budget.xyz/'
run "$MDFLOW" run budget.yaml
expect_error "system above max_atoms" 2 "budget.yaml:21:" "system 1" "19 atoms" "max_atoms"

# ---- 6. the built-in default ------------------------------------------------------------
# Sanitizer builds run slower (scripts/test.sh sets MDF_TEST_TIME_SCALE: 10 under TSan).
limit=$((60 * ${MDF_TEST_TIME_SCALE:-1}))
if command -v timeout >/dev/null 2>&1; then TIMEOUT="timeout $limit"; else TIMEOUT=; fi
start=$(date +%s)
# shellcheck disable=SC2086 # TIMEOUT is empty or two words
run env MDFLOW_DATA=/nonexistent $TIMEOUT "$MDFLOW" run
took=$(($(date +%s) - start))
nframes=$(frames relax_md.xyz 2>/dev/null | wc -l)
ids=$(info_values mdf_system_id relax_md.xyz | tr ' ' '\n' | awk 'NF && $1 != NR - 1 { bad++ } END { print bad + 0 }')
if [ "$rc" -eq 124 ]; then
    fail "mdflow run (built-in default) finishes within $limit s" "killed after ${took} s"
elif [ "$rc" -eq 0 ] && head -n 1 "$T/stdout" | grep -F 'default workload' >/dev/null \
    && grep -F 'finished 256 (status 2), unfinished 0' "$T/stdout" >/dev/null && [ "$nframes" -eq 256 ] && [ "$ids" -eq 0 ]; then
    pass "mdflow run (built-in default): exit 0, 256 systems finished, relax_md.xyz in input order (${took} s)"
else
    fail "mdflow run (built-in default): exit 0, 256 finished, relax_md.xyz in input order" \
        "exit status $rc; frames $nframes; ids out of order $ids"
    show stdout "$T/stdout"; show stderr "$T/stderr"
fi
# Every final frame carries the virial of its own positions (systems leave
# between the steps that compute it: one more evaluation gives it), checked
# against ASE's Lennard-Jones (the default's model: argon, 8.5 Å cutoff).
PY=${MDF_PYTHON:-/usr/bin/python3}
if [ "$rc" -ne 0 ]; then :
elif ! "$PY" -c 'import ase, numpy' 2>/dev/null; then
    pass "final virials against ASE: skipped ($PY has no ASE; install python3-ase)"
else
    if check=$("$PY" "$MDF_TEST_SRCDIR_/tests/virial_ase_check.py" relax_md.xyz 0.0104 3.40 8.5 2>&1); then
        pass "final virials of the default run against ASE: $(echo "$check" | tail -n 1)"
    else fail "final virials of the default run against ASE" "$(echo "$check" | tail -n 5)"; fi
fi
# The default asks for no log: no per-stage log file may appear (it once
# wrote ".relax" and ".md", the stage names on an empty path).
stray=$(ls -A | grep -E '^\.' | tr '\n' ' ')
if [ -z "$stray" ]; then pass "mdflow run without output.log writes no log file"; else
    fail "mdflow run without output.log writes no log file" "found: $stray"; fi

# ---- snapshots into a sink by registered name ------------------------------------------
# output.snapshot_sink {type: hdf5, params: {path: ...}} writes what snapshots: FILE.h5 writes.
# Checkpoints make both runs' course independent of timing (refill points
# then always refill), so their snapshots can be compared byte for byte.
variant snapfile 's/^output: .*/output: {structures: snapfile.xyz, snapshots: snapfile.h5, snapshot_every: 10}/; s/^seed: 3/seed: 3\ncheckpoint: {path: snapfile.ck.h5, every: 10}/'
variant snapsink 's/^output: .*/output: {structures: snapsink.xyz, snapshot_sink: {type: hdf5, params: {path: snapsink.h5}}, snapshot_every: 10}/; s/^seed: 3/seed: 3\ncheckpoint: {path: snapsink.ck.h5, every: 10}/'
run "$MDFLOW" run snapfile.yaml
rc_file=$rc
run "$MDFLOW" run snapsink.yaml
if [ "$rc_file" -eq 0 ] && [ "$rc" -eq 0 ] && command -v h5dump >/dev/null 2>&1 &&
    h5dump snapfile.h5 | tail -n +2 >snapfile.dump && h5dump snapsink.h5 | tail -n +2 >snapsink.dump &&
    [ -s snapsink.dump ] && cmp -s snapfile.dump snapsink.dump; then
    pass "output.snapshot_sink {type: hdf5, params: {path}} writes what output.snapshots writes"
else
    fail "output.snapshot_sink {type: hdf5} = output.snapshots" "exit status $rc_file and $rc"
    show stderr "$T/stderr"
fi
variant sinkunknown 's/^output: .*/output: {structures: x.xyz, snapshot_sink: {type: hdf6}}/'
run "$MDFLOW" run sinkunknown.yaml
expect_error "unknown snapshot_sink type" 2 "sinkunknown.yaml:22:" "unknown sink type 'hdf6'" "host, device, hdf5, h5md"
variant sinkparam 's/^output: .*/output: {structures: x.xyz, snapshot_sink: {type: hdf5, params: {path: s.h5, compression: 12}}}/'
run "$MDFLOW" run sinkparam.yaml
expect_error "snapshot_sink parameter out of range" 2 "sinkparam.yaml:22:" "compression" "[0, 9]"
variant sinkboth 's/^output: .*/output: {structures: x.xyz, snapshots: a.h5, snapshot_sink: {type: hdf5, params: {path: b.h5}}}/'
run "$MDFLOW" run sinkboth.yaml
expect_error "snapshots and snapshot_sink together" 2 "sinkboth.yaml:22:" "exclude each other"

finish
