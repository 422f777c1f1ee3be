#!/bin/sh
# mdflow — daily use of the command-line program (issue 20): the lj model's
# built-in argon parameters refused for other elements, --version, the live
# progress line, pressure and volume in thermo rows and the CSV log (against
# LAMMPS), misspelled schedulers, and mdflow plot.
#
# Run by automake's harness from the build tree (MDF_TEST_SRCDIR,
# MDF_TEST_BUILDDIR); prints "ok - ..." / "not ok - ..." per check, then
# "N passed, M failed"; exits 0 when every check passed, else 1.
set -u

HARNESS_NAME=mdflow-cli-ux
# shellcheck source=tests/cli_harness.sh
. "${MDF_TEST_SRCDIR:-$(cd "$(dirname "$0")/.." && pwd)}/tests/cli_harness.sh"
SRC=${MDF_TEST_SRCDIR:-$(cd "$(dirname "$0")/.." && pwd)}
PY=/usr/bin/python3

# expect_refusal NAME FRAGMENT...: the last run exited 2 and said every fragment on stderr.
expect_refusal() {
    name=$1
    shift
    miss=$(missing_in_stderr "$@")
    if [ "$rc" -eq 2 ] && [ -z "$miss" ]; then pass "$name: exit 2 naming $*"; else
        fail "$name: exit 2 naming $*" "exit status $rc" "missing: $miss"; show stderr "$T/stderr"; fi
}

# ---- A: argon's parameters are argon's -------------------------------------------------
cat >h2o.xyz <<'XYZ'
3
Properties=species:S:1:pos:R:3 pbc="F F F"
O 0.0 0.0 0.0
H 0.96 0.0 0.0
H -0.24 0.93 0.0
XYZ
cat >cu.xyz <<'XYZ'
4
Lattice="3.61 0 0 0 3.61 0 0 0 3.61" Properties=species:S:1:pos:R:3 pbc="T T T"
Cu 0 0 0
Cu 1.805 1.805 0
Cu 1.805 0 1.805
Cu 0 1.805 1.805
XYZ
run "$MDFLOW" md --input h2o.xyz --steps 10 --temperature 300
expect_refusal "md of water with lj's defaults" "H, O" "argon" "--lj-species" "--lj-epsilon" "--model eam:FILE" "kim:NAME"
run "$MDFLOW" relax --input cu.xyz
expect_refusal "relax of Cu with lj's defaults" "Cu" "argon"
run "$MDFLOW" md --input cu.xyz --steps 2 --lj-cutoff 5
expect_refusal "a cutoff alone gives no parameters" "Cu"
run "$MDFLOW" md --input h2o.xyz --steps 2 --lj-species O:0.0067:3.16:8
expect_refusal "--lj-species for O only" "H (the first in system 0)"
run "$MDFLOW" md --input h2o.xyz --steps 2 --lj-epsilon 0.005 --lj-sigma 2.8 --quiet
if [ "$rc" -eq 0 ]; then pass "explicit --lj-epsilon/--lj-sigma apply to every element"; else
    fail "explicit --lj-epsilon/--lj-sigma apply to every element" "exit $rc"; show stderr "$T/stderr"; fi
run "$MDFLOW" md --input h2o.xyz --steps 2 --param sigma=2.8 --quiet
if [ "$rc" -eq 0 ]; then pass "--param sigma chooses for every element"; else
    fail "--param sigma chooses for every element" "exit $rc"; show stderr "$T/stderr"; fi
run "$MDFLOW" md --input h2o.xyz --steps 2 --lj-species O:0.0067:3.16:8 --lj-species H:0.001:2.5:6 --quiet
if [ "$rc" -eq 0 ]; then pass "--lj-species for every element"; else
    fail "--lj-species for every element" "exit $rc"; show stderr "$T/stderr"; fi
run "$MDFLOW" md --input "$SRC/examples/argon_mixed.xyz" --steps 2 --quiet
if [ "$rc" -eq 0 ]; then pass "argon runs with the defaults"; else
    fail "argon runs with the defaults" "exit $rc"; show stderr "$T/stderr"; fi

cat >wf-cu.yaml <<'YAML'
input: cu.xyz
stages: {relax: {method: fire, fmax: 0.05, steps: 5}}
sampler: {max_atoms: 100}
YAML
run "$MDFLOW" run --check wf-cu.yaml
expect_refusal "run --check of a Cu dataset without a model" "wf-cu.yaml:1:" "Cu" "argon" "species"
run "$MDFLOW" run wf-cu.yaml
expect_refusal "run of a Cu dataset without a model" "Cu" "argon"
cat >wf-cu-params.yaml <<'YAML'
input: cu.xyz
model:
  type: lj
  params: {epsilon: 0.4, sigma: 2.3}
stages: {relax: {method: fire, fmax: 0.05, steps: 5}}
sampler: {max_atoms: 100}
YAML
run "$MDFLOW" run --check wf-cu-params.yaml
if [ "$rc" -eq 0 ]; then pass "run --check with model params for every element"; else
    fail "run --check with model params for every element" "exit $rc"; show stderr "$T/stderr"; fi
run "$MDFLOW" run --check
if [ "$rc" -eq 0 ]; then pass "the built-in workflow (argon) passes --check"; else
    fail "the built-in workflow (argon) passes --check" "exit $rc"; show stderr "$T/stderr"; fi

# ---- B: --version ----------------------------------------------------------------------
pkgver=$(sed -n 's/^#define PACKAGE_VERSION "\(.*\)"/\1/p' "$builddir/config.h")
apiver=$(sed -n 's/^#define MDFLOW_API_VERSION \([0-9]*\).*/\1/p' "$SRC/include/mdflow/extension.h")
# The StarPU this build compiled against: its starpu_config.h, found through
# the build's STARPU_CFLAGS (-I or -isystem), not pkg-config's default one.
starpu_config=$(sed -n 's/^STARPU_CFLAGS = //p' "$builddir/Makefile" | tr ' ' '\n' | sed 's/^-I//' |
    while read -r d; do [ -f "$d/starpu_config.h" ] && echo "$d/starpu_config.h" && break; done)
spver=$(awk '$1 == "#define" && $2 ~ /^STARPU_(MAJOR|MINOR|RELEASE)_VERSION$/ { v[$2] = $3 }
    END { print v["STARPU_MAJOR_VERSION"] "." v["STARPU_MINOR_VERSION"] "." v["STARPU_RELEASE_VERSION"] }' \
    "${starpu_config:-/dev/null}")
for form in --version version; do
    run "$MDFLOW" $form
    first=$(head -n 1 "$T/stdout")
    if [ "$rc" -eq 0 ] && [ "$first" = "mdflow $pkgver" ] && grep -q "API version $apiver\b" "$T/stdout" \
        && grep -q "StarPU $spver (built against)" "$T/stdout" && grep -Eq "^CUDA (yes|no)" "$T/stdout"; then
        pass "mdflow $form: mdflow $pkgver, API $apiver, StarPU $spver, CUDA"
    else fail "mdflow $form: mdflow $pkgver, API $apiver, StarPU $spver, CUDA" "exit $rc"; show stdout "$T/stdout"; fi
done

# ---- E: misspelled schedulers ------------------------------------------------------------
ar=$SRC/examples/argon_mixed.xyz
run "$MDFLOW" md --input "$ar" --steps 2 --sched lws2
expect_refusal "--sched lws2" "'lws2'" "--sched" "eager" "dmda" "lws"
run "$MDFLOW" relax --input "$ar" --sched nonesuch
expect_refusal "relax --sched nonesuch" "'nonesuch'" "dmda"
STARPU_SCHED=foo run "$MDFLOW" md --input "$ar" --steps 2
expect_refusal "STARPU_SCHED=foo" "STARPU_SCHED" "'foo'" "dmda"
cat >wf-sched.yaml <<YAML
input: $ar
stages: {relax: {method: fire, fmax: 0.05, steps: 5}}
sampler: {max_atoms: 2000}
scheduler:
  name: foo
YAML
run "$MDFLOW" run --check wf-sched.yaml
expect_refusal "scheduler: {name: foo} at --check" "wf-sched.yaml:5:" "'foo'" "eager" "dmda"
run "$MDFLOW" md --input "$ar" --steps 2 --sched eager --quiet
if [ "$rc" -eq 0 ]; then pass "--sched eager runs"; else fail "--sched eager runs" "exit $rc"; show stderr "$T/stderr"; fi

# ---- D: pressure and volume against LAMMPS -----------------------------------------------
# A strained, shaken argon crystal with velocities: mdflow's step-0 pressure
# (CSV log, thermo rows) against LAMMPS's thermo press on the same atoms.
if ! command -v lmp >/dev/null 2>&1 || ! "$PY" -c "import ase" 2>/dev/null; then
    echo "# SKIP pressure against LAMMPS: lmp or ase missing"
else
    argon_crystal "$PY" 7 5.1 0.08 0.004 0 crystal.xyz data.lmp
    cat >in.lmp <<'LMP'
units metal
atom_style atomic
boundary p p p
read_data data.lmp
pair_style lj/cut 8.5
pair_coeff 1 1 0.0104 3.40
thermo_style custom step press vol
run 0
print "$(press:%.17g) $(vol:%.17g)" file results.txt
LMP
    # LAMMPS's bar per eV/Å³ (its nktv2p differs from CODATA's by 1e-8): two
    # free moving atoms, P_xx V = nktv2p sum m vx^2 mvv2e.
    cat >cal.lmp <<'LMP'
units metal
atom_style atomic
boundary p p p
region box block 0 10 0 11 0 12
create_box 1 box
create_atoms 1 single 1 1 1
create_atoms 1 single 5 5 5
mass 1 39.948
pair_style lj/cut 1.0
pair_coeff 1 1 0.0 1.0
velocity all set 1.5 -0.5 0.25
thermo_style custom step pxx vol c_thermo_temp[1]
run 0
print "$(pxx:%.17g) $(vol:%.17g) $(c_thermo_temp[1]:%.17g)" file cal.txt
LMP
    lmp -in in.lmp -log none -screen none && lmp -in cal.lmp -log none -screen none
    run "$MDFLOW" md --input crystal.xyz --steps 1 --log log.csv --log-every 1 --thermo 1 --thermo-per-system
    if [ "$rc" -ne 0 ] || [ ! -s results.txt ] || [ ! -s cal.txt ]; then
        fail "pressure against LAMMPS: both ran" "mdflow exit $rc"; show stderr "$T/stderr"
    else
        head1=$(head -n 1 log.csv)
        row=$(awk -F, '$1 == "0" { print $7, $8 }' log.csv)
        if [ "$head1" = "step,system_id,status,energy_eV,fmax_eV_per_A,temperature_K,pressure_bar,volume_A3" ]; then
            pass "the CSV log appends pressure_bar,volume_A3"
        else fail "the CSV log appends pressure_bar,volume_A3" "header: $head1"; fi
        verdict=$(echo "$row $(cat results.txt) $(cat cal.txt)" | awk '{
            nktv2p = $5 * $6 / $7
            pm = $1 / 1.6021766208e6; pl = $3 / nktv2p    # eV/A^3, each with its own constant
            rp = (pm - pl) / pl; if (rp < 0) rp = -rp
            rv = ($2 - $4) / $4; if (rv < 0) rv = -rv
            printf "%s mdflow %.12g bar LAMMPS %.12g bar (rel %.2g), volume %.12g vs %.12g", (rp < 1e-8 && rv < 1e-12) ? "ok" : "bad", $1, $3, rp, $2, $4 }')
        case $verdict in
            ok*) pass "step-0 pressure and volume equal LAMMPS's (1e-8): ${verdict#ok }" ;;
            *) fail "step-0 pressure and volume equal LAMMPS's (1e-8)" "$verdict"; show log.csv log.csv ;;
        esac
        # The thermo row of step 0 prints the same numbers (4 decimals).
        trow=$(awk '$1 == "0" && $2 == "0" && NF == 9 { print $8, $9 }' "$T/stdout")
        tver=$(echo "$trow $row" | awk 'NF == 4 { d = $1 - $3; e = $2 - $4; exit !(d < 1e-3 && d > -1e-3 && e < 1e-3 && e > -1e-3) } NF != 4 { exit 1 }' && echo ok)
        if grep -q "Press(bar) *Volume(A^3)" "$T/stdout" && [ "$tver" = ok ]; then
            pass "thermo rows carry Press(bar) and Volume(A^3)"
        else fail "thermo rows carry Press(bar) and Volume(A^3)" "row: $trow; log: $row"; show stdout "$T/stdout"; fi
    fi
fi
# Batch totals: the mean of the periodic systems' pressures (the CSV's),
# the sum of their volumes (ASE's, from the input file); the open clusters
# of the file count in neither.
run "$MDFLOW" md --input "$ar" --steps 1 --thermo 1 --log agg.csv --log-every 1
vsum=$("$PY" -c "
import sys
from ase.io import read
print('%.6f' % sum(a.get_volume() for a in read(sys.argv[1], ':') if a.pbc.all()))" "$ar" 2>/dev/null)
pmean=$(awk -F, '$1 == "0" && $7 != "" { s += $7; n++ } END { if (n) printf "%.6f", s / n }' agg.csv)
trow=$(awk '$1 == "0" && NF == 8 { print $7, $8 }' "$T/stdout")
if [ -z "$vsum" ] && ! "$PY" -c "import ase" 2>/dev/null; then
    echo "# SKIP batch totals: no ase"
elif [ -n "$vsum" ] && echo "$trow $pmean $vsum" | awk 'NF == 4 { d = $1 - $3; e = ($2 - $4) / $4; exit !(d < 1e-3 && d > -1e-3 && e < 1e-9 && e > -1e-9) } NF != 4 { exit 1 }'; then
    pass "batch totals: mean pressure $pmean bar, summed volume $vsum A^3"
else fail "batch totals: mean pressure, summed volume" "thermo '$trow', CSV mean '$pmean', ASE volume '$vsum'"; show stdout "$T/stdout"; fi
# Not periodic: no pressure, no volume (empty CSV fields, no thermo columns).
run "$MDFLOW" md --input h2o.xyz --steps 2 --lj-epsilon 0.005 --lj-sigma 2.8 --log open.csv --log-every 1
if [ "$rc" -eq 0 ] && awk -F, 'NR > 1 && ($7 != "" || $8 != "" || NF != 8) { bad = 1 } END { exit bad }' open.csv \
    && ! grep -q "Press" "$T/stdout"; then
    pass "a system not periodic has no pressure or volume"
else fail "a system not periodic has no pressure or volume" "exit $rc"; show open.csv open.csv; show stdout "$T/stdout"; fi

# ---- C: progress -----------------------------------------------------------------------
# A run of a few seconds (256 argon systems, 48089 atoms); --progress-every
# 0.01 so that lines come also on a fast machine.
long="--input $ar --steps 200 --temperature 30 --thermo 0"
if command -v script >/dev/null 2>&1; then
    # script gives the program a pseudo-terminal; its output is what the terminal saw.
    script -q -c "'$MDFLOW' md $long --progress-every 0.01 2>&1" /dev/null >tty.out 2>&1
    # the line is rewritten in place: "\r" before "step N/200", and cleared ("\r\033[K") before the summary
    ncr=$(tr '\r' '\n' <tty.out | grep -c '^step [0-9]*/200 | .* done, .* in flight, .* waiting | .*steps/s.*atom-steps/s | .*ETA')
    cleared=$(awk '/mdflow summary/ { exit } { print }' tty.out | tr '\033' 'E' | grep -c "$(printf '\r')E\[K")
    if [ "$ncr" -ge 2 ] && [ "$cleared" -ge 1 ]; then pass "on a terminal: a progress line rewritten in place ($ncr updates), cleared at the end"; else
        fail "on a terminal: a progress line rewritten in place, cleared at the end" "updates $ncr, cleared $cleared"; show tty.out tty.out; fi
    # by default at most 4 updates a second
    t0=$(date +%s.%N)
    script -q -c "'$MDFLOW' md $long 2>&1" /dev/null >tty4.out 2>&1
    t1=$(date +%s.%N)
    n4=$(tr '\r' '\n' <tty4.out | grep -c '^step [0-9]*/200 |')
    if awk -v n="$n4" -v a="$t0" -v b="$t1" 'BEGIN { exit !(n <= 4 * (b - a) + 1) }'; then
        pass "on a terminal: at most 4 updates a second ($n4 in $(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }') s)"
    else fail "on a terminal: at most 4 updates a second" "$n4 updates from $t0 to $t1"; fi
    script -q -c "'$MDFLOW' md $long --progress-every 0.01 --quiet 2>&1" /dev/null >ttyq.out 2>&1
    if grep -q "mdflow summary" ttyq.out && ! grep -q "steps/s," ttyq.out; then pass "on a terminal with --quiet: no progress line"; else
        fail "on a terminal with --quiet: no progress line"; show ttyq.out ttyq.out; fi
else
    echo "# SKIP progress on a terminal: no script (util-linux)"
fi
run "$MDFLOW" md $long --progress-every 0.01
nlines=$(grep -c '^mdflow: step [0-9]*/200 | 0 done, 256 in flight, 0 waiting | .*steps/s, .*atom-steps/s | [0-9:]*, ETA' "$T/stderr")
if [ "$rc" -eq 0 ] && [ "$nlines" -ge 2 ] && ! grep -q "$(printf '\r')" "$T/stderr"; then
    pass "off a terminal: $nlines plain progress lines with --progress-every 0.01"
else fail "off a terminal: plain progress lines with --progress-every 0.01" "exit $rc, lines $nlines"; show stderr "$T/stderr"; fi
run "$MDFLOW" md $long --progress-every 0.01 --quiet
if [ "$rc" -eq 0 ] && ! grep -q "steps/s" "$T/stderr"; then pass "md --quiet: no progress lines"; else
    fail "md --quiet: no progress lines" "exit $rc"; show stderr "$T/stderr"; fi
# (a slow build, e.g. under AddressSanitizer, runs past 10 s: lines may
# come then, never with less than 10 s elapsed)
run "$MDFLOW" md $long
if [ "$rc" -eq 0 ] && ! grep -q "| 0:0[0-9], ETA" "$T/stderr"; then pass "off a terminal, default interval: no line before 10 s"; else
    fail "off a terminal, default interval: no line before 10 s" "exit $rc"; show stderr "$T/stderr"; fi
run "$MDFLOW" relax --input "$ar" --fmax 0.001 --max-steps 150 --progress-every 0.01
if [ "$rc" -eq 0 ] && grep -q '^mdflow: step [0-9]*/150 | .* done, .* in flight, 0 waiting' "$T/stderr"; then
    pass "relax: progress lines"; else fail "relax: progress lines" "exit $rc"; show stderr "$T/stderr"; fi
run "$MDFLOW" relax --input "$ar" --fmax 0.001 --max-steps 150 --progress-every 0.01 --quiet
if [ "$rc" -eq 0 ] && ! grep -q "steps/s" "$T/stderr"; then pass "relax --quiet: no progress lines"; else
    fail "relax --quiet: no progress lines" "exit $rc"; show stderr "$T/stderr"; fi
cat >wf-progress.yaml <<YAML
input: $ar
stages:
  relax: {method: fire, fmax: 0.001, steps: 100}
  md: {method: langevin, dt_fs: 5, temperature_K: 30, entry_temperature_K: 30, steps: 100}
composition: relax + md
sampler: {max_atoms: 12000}
YAML
run "$MDFLOW" run --progress-every 0.01 wf-progress.yaml
# inflight batching: systems wait in the sampler, then leave; the last line has some of each
waits=$(grep -c '^mdflow: step .* | [0-9]* done, [0-9]* in flight, [1-9][0-9]* waiting' "$T/stderr")
dones=$(grep -c '^mdflow: step .* | [1-9][0-9]* done, ' "$T/stderr")
if [ "$rc" -eq 0 ] && [ "$waits" -ge 1 ] && [ "$dones" -ge 1 ]; then pass "run: progress lines with systems waiting and done"; else
    fail "run: progress lines with systems waiting and done" "exit $rc, waiting lines $waits, done lines $dones"; show stderr "$T/stderr"; fi
run "$MDFLOW" run --quiet --progress-every 0.01 wf-progress.yaml
if [ "$rc" -eq 0 ] && ! grep -q "steps/s" "$T/stderr"; then pass "run --quiet: no progress lines"; else
    fail "run --quiet: no progress lines" "exit $rc"; show stderr "$T/stderr"; fi
run "$MDFLOW" run --sequential --progress-every 0.01 wf-progress.yaml
if [ "$rc" -eq 0 ] && grep -q "steps/s" "$T/stderr"; then pass "run --sequential: progress lines"; else
    fail "run --sequential: progress lines" "exit $rc"; show stderr "$T/stderr"; fi
run "$MDFLOW" run --sequential --quiet --progress-every 0.01 wf-progress.yaml
if [ "$rc" -eq 0 ] && ! grep -q "steps/s" "$T/stderr"; then pass "run --sequential --quiet: no progress lines"; else
    fail "run --sequential --quiet: no progress lines" "exit $rc"; show stderr "$T/stderr"; fi

# ---- F: mdflow plot ----------------------------------------------------------------------
# png_size FILE: "WIDTH HEIGHT" from the IHDR chunk, after checking the 8-byte signature.
png_size() {
    sig=$(od -An -tx1 -N8 "$1" | tr -d ' \n')
    [ "$sig" = 89504e470d0a1a0a ] || { echo "no PNG signature ($sig)"; return; }
    [ "$(od -An -c -j12 -N4 "$1" | tr -d ' \n')" = IHDR ] || { echo "no IHDR"; return; }
    od -An -tu1 -j16 -N8 "$1" | awk '{ print ($1 * 16777216 + $2 * 65536 + $3 * 256 + $4), ($5 * 16777216 + $6 * 65536 + $7 * 256 + $8) }'
}
run "$MDFLOW" md --input "$ar" --steps 40 --temperature 30 --quiet --log md.csv --log-every 5
if ! command -v gnuplot >/dev/null 2>&1; then
    echo "# SKIP drawing: gnuplot is not installed (scripts/install-deps.sh)"
else
    run "$MDFLOW" plot md.csv -o all.png --size 800x600
    size=$(png_size all.png 2>/dev/null)
    bytes=$(wc -c <all.png 2>/dev/null || echo 0)
    if [ "$rc" -eq 0 ] && [ "$size" = "800 600" ] && [ "$bytes" -gt 10000 ] \
        && grep -q "256 systems are more than 10 lines: plotting their mean" "$T/stderr"; then
        pass "plot of 256 systems: an 800x600 PNG ($bytes bytes), aggregated, with a note"
    else fail "plot of 256 systems: an 800x600 PNG, aggregated, with a note" "exit $rc, size '$size', $bytes bytes"
        show stderr "$T/stderr"; fi
    run "$MDFLOW" plot md.csv --systems 3,7,250 --per-system --size 640x480
    size=$(png_size md.png 2>/dev/null)
    if [ "$rc" -eq 0 ] && [ "$size" = "640 480" ] && grep -q "md.png: a line each of 3 systems (energy, temperature, pressure)" "$T/stdout"; then
        pass "plot --systems 3,7,250: md.png (the default name), a line each, with pressure"
    else fail "plot --systems 3,7,250: md.png, a line each, with pressure" "exit $rc, size '$size'"; show stdout "$T/stdout"; show stderr "$T/stderr"; fi
    run "$MDFLOW" md --input h2o.xyz --steps 10 --lj-epsilon 0.005 --lj-sigma 2.8 --quiet --log open.csv --log-every 1
    run "$MDFLOW" plot open.csv -o open.png
    if [ "$rc" -eq 0 ] && [ "$(png_size open.png)" = "1000 800" ] && grep -q "(energy, temperature)$" "$T/stdout"; then
        pass "plot of a log without pressure: two panels, default size 1000x800"
    else fail "plot of a log without pressure: two panels, default size 1000x800" "exit $rc"; show stdout "$T/stdout"; show stderr "$T/stderr"; fi
fi
printf 'step,system_id,status,energy_eV,fmax_eV_per_A\n0,0,0,-1.0,0.1\n' >notemp.csv
run "$MDFLOW" plot notemp.csv
expect_refusal "plot of a log without temperature_K" "notemp.csv:1:" "'temperature_K'"
printf 'step,system_id,status,energy_eV,fmax_eV_per_A,temperature_K\n0,0,0,-1.0,0.1,30\n1,0,0,oops,0.1,30\n' >badrow.csv
run "$MDFLOW" plot badrow.csv
expect_refusal "plot of a log with a bad row" "badrow.csv:3:"
run "$MDFLOW" plot md.csv --systems 999
expect_refusal "plot --systems with an id not in the log" "999" "md.csv"
PATH=/nonexistent run "$MDFLOW" plot md.csv -o nognuplot.png
if [ "$rc" -eq 1 ] && grep -q "gnuplot is not installed" "$T/stderr" && grep -q "gnuplot-nox" "$T/stderr" && [ ! -e nognuplot.png ]; then
    pass "plot without gnuplot: exit 1 saying how to install it"
else fail "plot without gnuplot: exit 1 saying how to install it" "exit $rc"; show stderr "$T/stderr"; fi

# ---- G: --help says it -------------------------------------------------------------------
run "$MDFLOW" --help
h1=$(grep -c -e 'plot ' -e 'version' "$T/stdout")
run "$MDFLOW" md --help
h2=$(grep -c -e '--progress-every' -e 'Press(bar)' -e 'pressure_bar,volume_A3' -e 'argon only' "$T/stdout")
run "$MDFLOW" relax --help
h3=$(grep -c -e '--quiet' -e '--progress-every' "$T/stdout")
run "$MDFLOW" run --help
h4=$(grep -c -e '--quiet' -e '--progress-every' "$T/stdout")
if [ "$h1" -ge 2 ] && [ "$h2" -ge 4 ] && [ "$h3" -ge 2 ] && [ "$h4" -ge 2 ]; then
    pass "--help documents plot, version, progress, pressure columns and the argon rule"
else fail "--help documents plot, version, progress, pressure columns and the argon rule" "counts $h1 $h2 $h3 $h4"; fi

finish
