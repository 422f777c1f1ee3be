#!/bin/sh
# mdflow — tests of the command-line program: usage, a small valid run (output
# frames, thermo log, summary), the error message and exit status for each kind
# of bad input, outputs equal to the input or to each other and outputs that
# cannot be written (both refused before the run), that a failing run loses
# nothing already written, parameters by name (--param, the shorthand flags,
# mdflow methods and models, plugins that are not there), and the default
# workload.
#
# Run by automake's harness from the build tree with MDF_TEST_SRCDIR and
# MDF_TEST_BUILDDIR set; also runs by hand from a build directory.
# Prints "ok - ..." / "not ok - ..." per check (details of a failure follow as
# "#" lines), then "N passed, M failed"; exits 0 when every check passed, else 1.
set -u

HARNESS_NAME=mdflow-cli
# shellcheck source=tests/cli_harness.sh
. "${MDF_TEST_SRCDIR:-$(cd "$(dirname "$0")/.." && pwd)}/tests/cli_harness.sh"

# expect_error NAME WANT_STATUS FRAGMENT...: after run, checks the exit status
# (WANT_STATUS "nonzero" accepts any failure but a crash) and that stderr is an
# "mdflow: <kind>: <message>" line holding every fragment.
expect_error() {
    name=$1 want=$2
    shift 2
    if [ "$want" = nonzero ]; then
        if [ "$rc" -ne 0 ] && [ "$rc" -lt 128 ]; then pass "$name: exits non-zero ($rc)"; else
            fail "$name: exits non-zero without crashing" "exit status $rc"; show stderr "$T/stderr"; fi
    elif [ "$rc" -eq "$want" ]; then
        pass "$name: exit status $want"
    else
        fail "$name: exit status $want" "exit status $rc"
        show stderr "$T/stderr"
    fi
    miss=$(missing_in_stderr "$@")
    if ! grep -E '^mdflow: [^:]+: ' "$T/stderr" >/dev/null; then
        fail "$name: an 'mdflow: <kind>: <message>' line on stderr"
        show stderr "$T/stderr"
    elif [ -n "$miss" ]; then
        fail "$name: message names $*" "missing: $(echo "$miss" | tr '\n' ' ')"
        show stderr "$T/stderr"
    else
        pass "$name: message names $* ($(grep -E '^mdflow: ' "$T/stderr" | head -n 1))"
    fi
}
# Data rows of a thermo log: a step number, then only numbers (6 fields at
# least; "-" is the pressure and volume of a system that is not periodic).
thermo_rows() {
    awk 'NF < 6 || $1 !~ /^[0-9]+$/ { next }
         { for (i = 2; i <= NF; i++) if ($i !~ /^[-+]?[0-9.]+([eE][-+]?[0-9]+)?$/ && $i != "-") next; print }' "$1"
}

# ---- inputs --------------------------------------------------------------------
# in.xyz: a periodic fcc argon box, 4x4x4 cells of 5.26 Å (21.04 Å > 2 x (8.5 + 1)),
# 256 atoms, and an open 13-atom cluster (a centre and its 12 fcc neighbours).
awk 'BEGIN {
    a = 5.26; n = 4; L = a * n
    printf "%d\nLattice=\"%.2f 0 0 0 %.2f 0 0 0 %.2f\" Properties=species:S:1:pos:R:3 pbc=\"T T T\"\n", 4 * n * n * n, L, L, L
    split("0 0 0 0.5 0.5 0 0.5 0 0.5 0 0.5 0.5", b, " ")
    for (i = 0; i < n; i++) for (j = 0; j < n; j++) for (k = 0; k < n; k++) for (m = 0; m < 4; m++)
        printf "Ar %.4f %.4f %.4f\n", (i + b[3 * m + 1]) * a, (j + b[3 * m + 2]) * a, (k + b[3 * m + 3]) * a
}' >in.xyz
cat >>in.xyz <<'EOF'
13
Properties=species:S:1:pos:R:3 pbc="F F F"
Ar 0.0 0.0 0.0
Ar 2.63 2.63 0.0
Ar -2.63 -2.63 0.0
Ar 2.63 -2.63 0.0
Ar -2.63 2.63 0.0
Ar 2.63 0.0 2.63
Ar -2.63 0.0 -2.63
Ar 2.63 0.0 -2.63
Ar -2.63 0.0 2.63
Ar 0.0 2.63 2.63
Ar 0.0 -2.63 -2.63
Ar 0.0 2.63 -2.63
Ar 0.0 -2.63 2.63
EOF
P='Properties=species:S:1:pos:R:3'
PM='Properties=species:S:1:pos:R:3:masses:R:1'
printf '4\n%s\nAr 0 0 0\nAr 4 0 0\nAr 0 4 0\n' "$P" >truncated.xyz
printf '3\n%s\nAr 0 0 0\nAr 4 abc 0\nAr 0 4 0\n' "$P" >nonnumeric.xyz
printf '3\n%s\nAr 0 0 0\nAr 4 0\nAr 0 4 0\n' "$P" >shortline.xyz
printf 'three\n%s\nAr 0 0 0\nAr 4 0 0\nAr 0 4 0\n' "$P" >badcount.xyz
printf '3\n%s\nAr 0 0 0\nAr 4 0 0\nXx 0 4 0\n' "$P" >element.xyz
printf '3\n%s\nAr 0 0 0 39.948\nAr 4 0 0 0\nAr 0 4 0 39.948\n' "$PM" >mass0.xyz
printf '3\n%s\nAr 0 0 0 39.948\nAr 4 0 0 39.948\nAr 0 4 0 -1.5\n' "$PM" >massneg.xyz
printf '3\n%s\nAr 0 0 0\nAr 4 0 0\nAr 4 0 0\n' "$P" >overlap.xyz
printf '2\nLattice="10 0 0 0 10 0 0 0 0" %s pbc="T T T"\nAr 1 1 1\nAr 5 1 1\n' "$P" >zerovolume.xyz
printf '2\nLattice="10 0 0 0 10 0 0 0 0.5" %s pbc="T T T"\nAr 1 1 0.2\nAr 5 1 0.2\n' "$P" >smallbox.xyz
# A 4-atom fcc argon cell (5.26 Å across, under the 8.5 Å default cut-off): runs.
printf '4\nLattice="5.26 0 0 0 5.26 0 0 0 5.26" %s pbc="T T T"\nAr 0 0 0\nAr 0 2.63 2.63\nAr 2.63 0 2.63\nAr 2.63 2.63 0.1\n' "$P" >smallcell.xyz

# md ARGS...: a short, quiet run.
# shellcheck disable=SC2317 # called through run
md() { "$MDFLOW" md --steps 5 --quiet "$@"; }

# ---- 1. usage --------------------------------------------------------------------
for args in "--help" "help" "md --help"; do
    # shellcheck disable=SC2086 # the words of args are separate arguments
    run "$MDFLOW" $args
    if [ "$rc" -eq 0 ] && grep -F -e 'usage:' "$T/stdout" >/dev/null && grep -F -e '--input' "$T/stdout" >/dev/null; then
        pass "mdflow $args: exit 0, usage mentioning --input"
    else
        fail "mdflow $args: exit 0, usage mentioning --input" "exit status $rc; 'usage:' printed: \
$(grep -c -F -e 'usage:' "$T/stdout"), lines with --input: $(grep -c -F -e '--input' "$T/stdout")"
        show stdout "$T/stdout"
    fi
done

# ---- 2. unknown command, unknown option, missing --input --------------------------
run "$MDFLOW" frobnicate
expect_error "unknown command" 2 "frobnicate"
run md --input in.xyz --frobnicate
expect_error "unknown option" 2 "--frobnicate"
run "$MDFLOW" md --steps 5
expect_error "md without --input" 2 "--input"
run md --input in.xyz --temperature 50 --velocity-dist cauchy
expect_error "unknown velocity distribution" 2 "--velocity-dist cauchy" "gaussian" "uniform"
run md --input in.xyz --velocity-dist uniform
expect_error "velocity distribution without a temperature" 2 "--velocity-dist uniform" "--temperature"

# ---- 3. a valid run ---------------------------------------------------------------
run md --input in.xyz --dt 2 --temperature 50 --output out.xyz
if [ "$rc" -eq 0 ]; then pass "valid 2-system run: exit 0"; else
    fail "valid 2-system run: exit 0" "exit status $rc"; show stderr "$T/stderr"; fi
cp "$T/stdout" run.stdout
frames out.xyz >out.frames 2>/dev/null
counts=$(cut -f1 out.frames | tr '\n' ' ')
if [ "$counts" = "256 13 " ]; then pass "out.xyz: 2 frames of 256 and 13 atoms"; else
    fail "out.xyz: 2 frames of 256 and 13 atoms" "atom counts per frame: '$counts'"; fi
nstep=$(grep -c -E '(^|[[:space:]])mdf_step=5([[:space:]]|$)' out.frames)
ids=$(grep -o -E '(^|[[:space:]])mdf_system_id=[0-9]+' out.frames | sed 's/.*=//' | sort -u | wc -l)
if [ "$nstep" -eq 2 ] && [ "$ids" -eq 2 ]; then
    pass "out.xyz: each comment line has mdf_step=5 and its own mdf_system_id"
else
    fail "out.xyz: each comment line has mdf_step=5 and its own mdf_system_id" \
        "comments with mdf_step=5: $nstep, distinct mdf_system_id values: $ids"
    show "comment lines" out.frames
fi
if head -n 1 out.frames | grep -F 'Lattice="21.04' >/dev/null && sed -n 2p out.frames | grep -F 'pbc="F F F"' >/dev/null; then
    pass "out.xyz: the box keeps its lattice, the cluster stays open"
else
    fail "out.xyz: the box keeps its lattice, the cluster stays open"; show "comment lines" out.frames
fi
if grep -F 'atom-steps/s' run.stdout >/dev/null; then pass "summary reports atom-steps/s"; else
    fail "summary reports atom-steps/s"; show stdout run.stdout; fi
if grep -F 'StarPU workers' run.stdout >/dev/null && grep -E '^[[:space:]]+CPU [0-9]+[[:space:]]+[0-9]+' run.stdout >/dev/null; then
    pass "summary has a StarPU worker table with CPU rows"
else
    fail "summary has a StarPU worker table with CPU rows"; show stdout run.stdout
fi
if [ -z "$(thermo_rows run.stdout)" ]; then pass "--quiet prints no thermo rows"; else
    fail "--quiet prints no thermo rows"; show stdout run.stdout; fi
run md --input out.xyz
if [ "$rc" -eq 0 ]; then pass "out.xyz is valid input to mdflow md"; else
    fail "out.xyz is valid input to mdflow md" "exit status $rc"; show stderr "$T/stderr"; fi

run "$MDFLOW" md --input in.xyz --steps 5 --thermo 1 --thermo-file thermo.txt
steps=$(thermo_rows thermo.txt 2>/dev/null | awk '{printf "%s ", $1}')
if [ "$rc" -eq 0 ] && head -n 1 thermo.txt | grep -E '^[[:space:]]*Step[[:space:]]' >/dev/null && [ "$steps" = "0 1 2 3 4 5 " ]; then
    pass "--thermo 1 --thermo-file: a header and 6 rows, steps 0..5"
else
    fail "--thermo 1 --thermo-file: a header and 6 rows, steps 0..5" "exit status $rc; steps of the rows: '$steps'"
    show thermo.txt thermo.txt; show stderr "$T/stderr"
fi
if [ -z "$(thermo_rows "$T/stdout")" ] && grep -F 'atom-steps/s' "$T/stdout" >/dev/null; then
    pass "--thermo-file: rows go to the file, the summary to stdout"
else
    fail "--thermo-file: rows go to the file, the summary to stdout"; show stdout "$T/stdout"
fi
run "$MDFLOW" md --input in.xyz --steps 5 --thermo 1 --thermo-per-system --thermo-file thermo2.txt
steps=$(thermo_rows thermo2.txt 2>/dev/null | awk '{printf "%s:%s ", $1, $2}')
if [ "$rc" -eq 0 ] && head -n 1 thermo2.txt | grep -E 'Step.*System' >/dev/null \
    && [ "$steps" = "0:0 0:1 1:0 1:1 2:0 2:1 3:0 3:1 4:0 4:1 5:0 5:1 " ]; then
    pass "--thermo-per-system: a header and 12 rows, systems 0 and 1 at steps 0..5"
else
    fail "--thermo-per-system: a header and 12 rows, systems 0 and 1 at steps 0..5" \
        "exit status $rc; step:system of the rows: '$steps'"
    show thermo2.txt thermo2.txt; show stderr "$T/stderr"
fi

# Temperatures: every thermo row's Temp is 2 KinEng / (Nf kB), with Nf counted
# from theory per system: 3N - 3 under nve (and the other momentum-conserving
# methods), 3N under langevin (its noise thermalises the total momentum), 3 per
# free atom when atoms are frozen; batch rows divide the summed K by the summed
# Nf. kB = 8.6173303e-5 eV/K (CODATA 2014, ASE's). frozen.xyz is the 13-atom
# cluster with 3 atoms flagged in a "fixed" column.
awk 'NR > 258' in.xyz | awk 'NR == 2 { print "Properties=species:S:1:pos:R:3:fixed:L:1 pbc=\"F F F\""; next }
    NR > 2 { print $0, (NR <= 5 ? "T" : "F"); next } { print }' >frozen.xyz
# check_temps NAME FILE PER_SYSTEM NF...: the Temp column of FILE against 2K/(Nf kB).
check_temps() {
    name=$1 file=$2 per=$3
    shift 3
    bad=$(thermo_rows "$file" | awk -v per="$per" -v nfs="$*" '
        BEGIN { kb = 8.6173303e-5; n = split(nfs, nf, " "); for (i = 1; i <= n; i++) tot += nf[i] }
        { if (per) { k = $5; t = $7; f = nf[$2 + 1] } else { k = $4; t = $6; f = tot }
          want = 2 * k / (f * kb); rows++
          if (t - want > 2e-4 || want - t > 2e-4) { printf "row %s: Temp %s, 2K/(Nf kB) = %.4f (Nf %d)\n", $0, t, want, f; exit } }
        END { if (rows == 0) print "no rows" }')
    if [ "$rc" -eq 0 ] && [ -z "$bad" ]; then pass "$name: Temp = 2K/(Nf kB) with Nf = $*"; else
        fail "$name: Temp = 2K/(Nf kB) with Nf = $*" "exit status $rc; $bad"; show "$file" "$file"; show stderr "$T/stderr"; fi
}
for ens in nve langevin bussi; do
    case $ens in langevin) nf="768 39" ;; *) nf="765 36" ;; esac
    run "$MDFLOW" md --input in.xyz --ensemble "$ens" --temperature 40 --steps 20 --dt 5 --thermo 5 \
        --thermo-per-system --thermo-file "t-$ens.txt"
    check_temps "md --ensemble $ens --thermo-per-system" "t-$ens.txt" 1 $nf
    run "$MDFLOW" md --input in.xyz --ensemble "$ens" --temperature 40 --steps 20 --dt 5 --thermo 5 \
        --thermo-file "tb-$ens.txt"
    check_temps "md --ensemble $ens, batch rows" "tb-$ens.txt" 0 $nf
done
for ens in nve langevin nose-hoover; do
    run "$MDFLOW" md --input frozen.xyz --ensemble "$ens" --temperature 40 --steps 20 --dt 5 --thermo 5 \
        --thermo-per-system --thermo-file "tf-$ens.txt"
    check_temps "md --ensemble $ens, 3 of 13 atoms frozen" "tf-$ens.txt" 1 30
done

# ---- 4. bad input: exit status 2 and a message naming the file/line or system --------
run md --input truncated.xyz
expect_error "truncated file" 2 "truncated.xyz:5" "4 atoms" "line"
run md --input nonnumeric.xyz
expect_error "non-numeric coordinate" 2 "nonnumeric.xyz:4" "abc"
run md --input shortline.xyz
expect_error "atom line with too few columns" 2 "shortline.xyz:4"
run md --input badcount.xyz
expect_error "atom count not a number" 2 "badcount.xyz:1" "three"
run md --input element.xyz
expect_error "unknown element" 2 "element.xyz:5" "Xx"
run md --input mass0.xyz
expect_error "zero mass" 2 "mass" "system 0" "atom 1"
run md --input massneg.xyz
expect_error "negative mass" 2 "mass" "system 0" "atom 2" "-1.5"
run md --input overlap.xyz
expect_error "atoms on top of each other" 2 "on top of each other" "system 0" "atoms 1 and 2"
run md --input zerovolume.xyz
expect_error "periodic cell of zero volume" 2 "volume" "system 0"
run md --input smallbox.xyz
expect_error "box too small for the cutoff" 2 "more than 16 times the periodic width" "system 0" "lattice vector 3"
run md --input smallcell.xyz --output smallcell.out.xyz
if [ "$rc" -eq 0 ] && [ -s smallcell.out.xyz ]; then pass "a cell narrower than the cut-off (4-atom fcc argon) runs"; else
    fail "a cell narrower than the cut-off (4-atom fcc argon) runs" "exit status $rc"; show stderr "$T/stderr"; fi
run md --input in.xyz --dt -1
expect_error "--dt -1" 2 "time step"
run md --input in.xyz --steps abc
expect_error "--steps abc" 2 "--steps" "abc"
# Negative values of options whose default is "not given" are refused, not
# read as not given (a run at the default temperature, cutoff, workers...).
for args in "--temperature -5:>= 0 K" "--lj-cutoff -8.5:> 0" "--lj-cutoff 0:> 0" "--wrap -10:>= 0" \
    "--max-force -3:> 0" "--ncpus -2:>= 0" "--ncuda -1:>= 0" "--drift-warn -0.1:> 0"; do
    opt=${args%%:*} range=${args#*:}
    # shellcheck disable=SC2086 # opt is an option and its value
    run md --input in.xyz $opt
    expect_error "md $opt" 2 "option ${opt% *}: ${opt#* } is out of range" "$range"
done
run "$MDFLOW" relax --input in.xyz --ncpus -1
expect_error "relax --ncpus -1" 2 "option --ncpus: -1 is out of range" ">= 0"
# A file that is not there is an I/O failure: any non-zero status, with the path.
run md --input "$T/no-such-file.xyz"
expect_error "--input of a missing file" nonzero "$T/no-such-file.xyz"

# ---- 4b. neighbour lists: sized by what can exist --------------------------------------
# A huge cutoff on 27 open atoms: the slots per atom are bounded by the 26
# other atoms (the density estimate asked for 20.8 GB at 1000 Å, and
# overflowed int from about 2600 Å). A 512,000-atom system at 1000 Å would
# need a terabyte of lists: refused up front, naming the cause.
awk 'BEGIN { print 27; print "Properties=species:S:1:pos:R:3 pbc=\"F F F\""
    for (i = 0; i < 3; i++) for (j = 0; j < 3; j++) for (k = 0; k < 3; k++) printf "Ar %.1f %.1f %.1f\n", 3.8 * i, 3.8 * j, 3.8 * k }' >c27.xyz
if [ -x /usr/bin/time ]; then MEASURE="/usr/bin/time -o $T/maxrss -f %M"; else MEASURE=; fi
for rcut in 1000 3000; do
    rm -f "$T/maxrss"
    # shellcheck disable=SC2086 # MEASURE is empty or four words
    run $MEASURE "$MDFLOW" md --input c27.xyz --lj-cutoff $rcut --steps 20 --quiet
    slots=$(sed -n 's/.* of \([0-9]*\) slots.*/\1/p' "$T/stdout")
    kb=$(tail -n 1 "$T/maxrss" 2>/dev/null || echo 0)
    if [ "$rc" -eq 0 ] && [ "${slots:-999}" -le 26 ] && [ "$kb" -lt 1000000 ]; then
        pass "md --lj-cutoff $rcut on 27 open atoms: exit 0, $slots list slots, ${kb} kB resident at most"
    else
        fail "md --lj-cutoff $rcut on 27 open atoms: exit 0, at most 26 list slots, under 1 GB" \
            "exit status $rc; slots '$slots'; max resident ${kb} kB"
        show stdout "$T/stdout"; show stderr "$T/stderr"
    fi
done
awk 'BEGIN { n = 80; print n * n * n; print "Properties=species:S:1:pos:R:3 pbc=\"F F F\""
    for (i = 0; i < n; i++) for (j = 0; j < n; j++) for (k = 0; k < n; k++) printf "Ar %d %d %d\n", 4 * i, 4 * j, 4 * k }' >big.xyz
run md --input big.xyz --lj-cutoff 1000 --steps 1
expect_error "lists larger than the machine's memory" 2 "neighbour lists would need" "lower the cutoff"
rm -f big.xyz

# ---- 4c. a run that explodes does not exit 0 -------------------------------------------
# A 3x3x3 argon box at 300 K with dt 1000 fs goes to NaN within 20 steps;
# the open pair far apart beside it stays finite. Without --nan-check the
# run used to exit 0 with NaN everywhere: now it writes what it has and
# fails, naming the system that exploded and only that one.
awk 'BEGIN { a = 5.26; n = 3; L = a * n
    printf "%d\nLattice=\"%.2f 0 0 0 %.2f 0 0 0 %.2f\" Properties=species:S:1:pos:R:3 pbc=\"T T T\"\n", 4 * n * n * n, L, L, L
    split("0 0 0 0.5 0.5 0 0.5 0 0.5 0 0.5 0.5", b, " ")
    for (i = 0; i < n; i++) for (j = 0; j < n; j++) for (k = 0; k < n; k++) for (m = 0; m < 4; m++)
        printf "Ar %.4f %.4f %.4f\n", (i + b[3 * m + 1]) * a, (j + b[3 * m + 2]) * a, (k + b[3 * m + 3]) * a
    printf "2\nProperties=species:S:1:pos:R:3 pbc=\"F F F\"\nAr 0 0 0\nAr 20 0 0\n" }' >explode.xyz
run md --input explode.xyz --lj-cutoff 6.5 --temperature 300 --dt 1000 --steps 20 --output exploded.xyz
expect_error "md that explodes without --nan-check" 2 "NaN/Inf" "1 of 2 systems" "system id 0" "--nan-check"
if grep -F 'system id 1' "$T/stderr" >/dev/null; then fail "md that explodes: the finite system is not named"; show stderr "$T/stderr"
else pass "md that explodes: the finite system is not named"; fi
if [ "$(frames exploded.xyz | wc -l)" -eq 2 ]; then pass "md that explodes: --output still written (2 frames)"; else
    fail "md that explodes: --output still written (2 frames)"; fi
run md --input explode.xyz --lj-cutoff 6.5 --temperature 300 --dt 1000 --steps 20 --nan-check
expect_error "md that explodes with --nan-check" 2 "NaN/Inf detected" "system id 0"
run md --input explode.xyz --lj-cutoff 6.5 --temperature 300 --dt 5 --steps 20
if [ "$rc" -eq 0 ]; then pass "the same input with dt 5 fs: exit 0"; else
    fail "the same input with dt 5 fs: exit 0" "exit status $rc"; show stderr "$T/stderr"; fi

# ---- 5. nothing already written is lost -----------------------------------------
printf 'precious output\n' >out.xyz
cp out.xyz out.saved
printf 'precious thermo log\n' >thermo.txt
cp thermo.txt thermo.saved
for bad in truncated element overlap zerovolume smallbox; do
    run "$MDFLOW" md --input $bad.xyz --steps 5 --output out.xyz
    if [ "$rc" -ne 0 ] && cmp -s out.xyz out.saved && [ ! -e out.xyz.tmp ]; then
        pass "failing run ($bad.xyz) leaves an existing --output file untouched"
    else
        fail "failing run ($bad.xyz) leaves an existing --output file untouched" \
            "exit status $rc; out.xyz $(cmp -s out.xyz out.saved && echo unchanged || echo CHANGED); \
out.xyz.tmp $([ -e out.xyz.tmp ] && echo left behind || echo absent)"
        cp out.saved out.xyz
    fi
done
run "$MDFLOW" md --input in.xyz --steps 5 --dt -1 --output out.xyz
if [ "$rc" -ne 0 ] && cmp -s out.xyz out.saved; then
    pass "failing run (--dt -1) leaves an existing --output file untouched"
else
    fail "failing run (--dt -1) leaves an existing --output file untouched" "exit status $rc"
    cp out.saved out.xyz
fi
for bad in truncated overlap smallbox; do
    run "$MDFLOW" md --input $bad.xyz --steps 5 --thermo-file thermo.txt
    if [ "$rc" -ne 0 ] && cmp -s thermo.txt thermo.saved; then
        pass "rejected input ($bad.xyz) leaves an existing --thermo-file untouched"
    else
        fail "rejected input ($bad.xyz) leaves an existing --thermo-file untouched" \
            "exit status $rc; thermo.txt is now $(wc -c <thermo.txt 2>/dev/null || echo 'missing,') bytes, was $(wc -c <thermo.saved)"
        cp thermo.saved thermo.txt
    fi
done
run md --input in.xyz --output /nonexistent-dir/out.xyz
expect_error "--output into a missing directory" nonzero "/nonexistent-dir/out.xyz"

# ---- 6. relax, ensembles, the CSV log ------------------------------------------------
# clusters.xyz: three jittered argon clusters (13, 19 and 8 atoms), not relaxed.
argon_clusters 7 "13 19 8" 0.1 >clusters.xyz
for args in "relax --help" "methods"; do
    # shellcheck disable=SC2086 # the words of args are separate arguments
    run "$MDFLOW" $args
    if [ "$rc" -eq 0 ] && grep -E -e '--fmax|fire2' "$T/stdout" >/dev/null && grep -F lbfgs "$T/stdout" >/dev/null; then
        pass "mdflow $args: exit 0, names the optimisers"
    else
        fail "mdflow $args: exit 0, names the optimisers" "exit status $rc"; show stdout "$T/stdout"
    fi
done
# What fire2 is, in its own words: FIRE 2.0 with one force evaluation per step
# (none after the half step back) and the mixing from |v| after the kick,
# which is not LAMMPS's min_style fire (it re-evaluates, and mixes with |v|
# from before the kick).
run "$MDFLOW" methods
line=$(grep -E '^[[:space:]]+fire2[[:space:]]' "$T/stdout")
if echo "$line" | grep -F 'no force evaluation after the half step back' >/dev/null \
    && echo "$line" | grep -F 'after the kick' >/dev/null && echo "$line" | grep -F "not LAMMPS's" >/dev/null; then
    pass "mdflow methods: fire2 says it does not re-evaluate after the half step back and is not LAMMPS's"
else
    fail "mdflow methods: fire2 says it does not re-evaluate after the half step back and is not LAMMPS's" "line: $line"
fi
for opt in fire fire2 lbfgs gd; do
    run "$MDFLOW" relax --input clusters.xyz --optimizer $opt --fmax 0.05 --max-steps 3000 \
        --output relaxed-$opt.xyz --log relax-$opt.csv
    nconv=$(frames relaxed-$opt.xyz 2>/dev/null | grep -c -E '(^|[[:space:]])mdf_status=1([[:space:]]|$)')
    if [ "$rc" -eq 0 ] && [ "$nconv" -eq 3 ] && grep -F 'relaxed 3 of 3' "$T/stdout" >/dev/null; then
        pass "relax --optimizer $opt: exit 0, 3 of 3 systems converged (status 1 in --output)"
    else
        fail "relax --optimizer $opt: exit 0, 3 of 3 systems converged" "exit status $rc; frames with mdf_status=1: $nconv"
        show stdout "$T/stdout"; show stderr "$T/stderr"
    fi
    # The log: its header, rows for 3 systems at step 0, the last row of each system
    # below the threshold.
    head1=$(head -n 1 relax-$opt.csv 2>/dev/null)
    at0=$(awk -F, 'NR > 1 && $1 == 0' relax-$opt.csv 2>/dev/null | wc -l)
    bad=$(awk -F, 'NR > 1 { last[$2] = $5 } END { for (s in last) if (last[s] + 0 > 0.05) print s }' relax-$opt.csv 2>/dev/null)
    if [ "$head1" = "step,system_id,status,energy_eV,fmax_eV_per_A,temperature_K,pressure_bar,volume_A3" ] && [ "$at0" -eq 3 ] && [ -z "$bad" ] \
        && [ ! -e relax-$opt.csv.tmp ]; then
        pass "relax --log ($opt): header, 3 rows at step 0, each system's last fmax <= 0.05"
    else
        fail "relax --log ($opt): header, 3 rows at step 0, each system's last fmax <= 0.05" \
            "header '$head1'; rows at step 0: $at0; systems ending above 0.05: '$bad'"
        show relax.csv relax-$opt.csv
    fi
done
run "$MDFLOW" relax --input clusters.xyz --fmax 1e-4 --max-steps 1 --output unrelaxed.xyz
if [ "$rc" -eq 0 ] && grep -F 'not converged after 1 steps' "$T/stdout" >/dev/null \
    && [ "$(frames unrelaxed.xyz | grep -c -E '(^|[[:space:]])mdf_status=0([[:space:]]|$)')" -eq 3 ]; then
    pass "relax --max-steps 1: exit 0, lists the unconverged systems, status 0 in --output"
else
    fail "relax --max-steps 1: exit 0, lists the unconverged systems, status 0 in --output" "exit status $rc"
    show stdout "$T/stdout"
fi
run "$MDFLOW" relax --input clusters.xyz --optimizer newton
expect_error "relax --optimizer newton" 2 "newton" "fire"
run "$MDFLOW" relax --input clusters.xyz --steps 5
expect_error "md option given to relax" 2 "--steps" "mdflow md"
run md --input in.xyz --ensemble langevin
expect_error "md --ensemble langevin without --temperature" 2 "--temperature"
run md --input in.xyz --ensemble nph
expect_error "md --ensemble nph" 2 "nph" "nose-hoover"
# Every ensemble runs and writes its outputs; the thermostats keep the
# temperature finite and positive.
head -n 258 in.xyz >box.xyz
for ens in nve langevin nose-hoover bussi npt; do
    run md --input box.xyz --ensemble $ens --temperature 40 --steps 20 --dt 4 --output md-$ens.xyz --log md-$ens.csv \
        --log-every 5 --nan-check
    rows=$(awk -F, 'NR > 1 && $6 + 0 > 0' md-$ens.csv 2>/dev/null | wc -l)
    if [ "$rc" -eq 0 ] && [ "$(frames md-$ens.xyz | wc -l)" -eq 1 ] && [ "$rows" -eq 5 ]; then
        pass "md --ensemble $ens: exit 0, final structure written, 5 log rows with T > 0"
    else
        fail "md --ensemble $ens: exit 0, final structure written, 5 log rows with T > 0" "exit status $rc; log rows: $rows"
        show stderr "$T/stderr"; show log md-$ens.csv
    fi
done
run "$MDFLOW" md --input box.xyz --ensemble npt --temperature 40 --steps 5 --output npt.xyz
if [ "$rc" -eq 0 ] && ! head -n 2 npt.xyz | grep -F 'Lattice="21.04 0' >/dev/null; then
    pass "md --ensemble npt changes the cell"
else
    fail "md --ensemble npt changes the cell" "exit status $rc"; show npt.xyz npt.xyz
fi
# A barostat that shrinks the cell below twice the list radius (cutoff 10 +
# skin 0.5 Å: 21 Å): fcc argon, 4x4x4 cells of 5.30 Å (21.2 Å), at 30,000 bar
# goes below 21 Å within 5 steps and ends near 19.1 Å. The lists then follow
# several images of each neighbour (small cells): the run goes on.
awk 'BEGIN { a = 5.30; n = 4; L = a * n
    printf "%d\nLattice=\"%.2f 0 0 0 %.2f 0 0 0 %.2f\" Properties=species:S:1:pos:R:3 pbc=\"T T T\"\n", 4 * n * n * n, L, L, L
    split("0 0 0 0.5 0.5 0 0.5 0 0.5 0 0.5 0.5", b, " ")
    for (i = 0; i < n; i++) for (j = 0; j < n; j++) for (k = 0; k < n; k++) for (m = 0; m < 4; m++)
        printf "Ar %.4f %.4f %.4f\n", (i + b[3 * m + 1]) * a, (j + b[3 * m + 2]) * a, (k + b[3 * m + 3]) * a
}' >fcc530.xyz
run "$MDFLOW" md --input fcc530.xyz --ensemble npt --temperature 40 --pressure 30000 --tau-p 200 --dt 5 \
    --lj-cutoff 10 --skin 0.5 --steps 60 --quiet --output shrunk.xyz
L=$(head -n 2 shrunk.xyz | sed -n 's/.*Lattice="\([0-9.]*\) .*/\1/p')
if [ "$rc" -eq 0 ] && awk -v L="$L" 'BEGIN { exit !(L < 21.0) }'; then
    pass "npt shrinking the cell below 2 (cutoff + skin) runs on (box $L A)"; else
    fail "npt shrinking the cell below 2 (cutoff + skin) runs on" "exit status $rc, box '$L'"; show stderr "$T/stderr"; fi
# A cell that collapses below (cutoff + skin) / 16, the narrowest the lists
# take: one argon atom in a 3.8 Å simple cubic cell under a 60 Å cut-off
# (60.5 / 16 = 3.78 Å) at 300,000 bar. The run must fail naming the system,
# the width and the cut-off: caught by the check every 10 steps (and stopped
# there), or at the end of a shorter run.
printf '1\nLattice="3.8 0 0 0 3.8 0 0 0 3.8" %s pbc="T T T"\nAr 0 0 0\n' "$P" >sc1.xyz
for steps in 5 3000; do
    run "$MDFLOW" md --input sc1.xyz --ensemble npt --temperature 40 --pressure 300000 --tau-p 200 --dt 5 \
        --lj-cutoff 60 --skin 0.5 --steps "$steps" --quiet --output collapsed.xyz
    expect_error "npt collapsing the cell below (cutoff + skin) / 16, $steps steps" nonzero "system 0 (id 0)" \
        "periodic width" "cutoff + skin = 60 + 0.5 = 60.5" "3.78125"
done
last=$(grep -o 'mdf_step=[0-9]*' collapsed.xyz | sed 's/.*=//')
# The check at step 10 stops it; steps already in flight (window 16) still finish.
if [ -n "$last" ] && [ "$last" -le 30 ]; then pass "npt collapsing the cell: the run stops by step 30 (step $last)"; else
    fail "npt collapsing the cell: the run stops by step 30" "mdf_step of the output: '$last'"; fi

# ---- 6b. silent choices get a warning -------------------------------------------------
# A pair without parameters of its own takes max(rc_i, rc_j) as cutoff (LAMMPS
# mixes cutoffs arithmetically); npt leaves systems that are not periodic in
# all three directions at constant volume (NVT). Each is documented in --help
# and warned about once per run on stderr, and only when it happens.
printf '4\n%s pbc="F F F"\nAr 0 0 0\nKr 3.9 0 0\nAr 0 3.9 0\nKr 3.9 3.9 0\n' "$P" >arkr.xyz
# count_warnings FRAGMENT: lines of $T/stderr that are warnings holding FRAGMENT.
count_warnings() { grep -E '^mdflow: warning: ' "$T/stderr" | grep -c -F -e "$1"; }
# expect_warning NAME WANT FRAGMENT: after run, exit status 0 and WANT warnings with FRAGMENT.
expect_warning() {
    n=$(count_warnings "$3")
    if [ "$rc" -eq 0 ] && [ "$n" -eq "$2" ]; then pass "$1: exit 0, $2 warning(s) naming '$3'"; else
        fail "$1: exit 0, $2 warning(s) naming '$3'" "exit status $rc, $n such warnings"; show stderr "$T/stderr"; fi
}
run md --input arkr.xyz --lj-species Ar:0.0104:3.40:8.5 --lj-species Kr:0.014:3.65:10
expect_warning "two species with cutoffs 8.5 and 10, no --lj-pair" 1 "Ar-Kr"
if grep -F 'max(' "$T/stderr" | grep -F '10 ' >/dev/null && grep -F '9.25' "$T/stderr" >/dev/null; then
    pass "the warning gives the cutoff used (max, 10 A) and LAMMPS's arithmetic one (9.25 A)"
else
    fail "the warning gives the cutoff used (max, 10 A) and LAMMPS's arithmetic one (9.25 A)"; show stderr "$T/stderr"
fi
run md --input arkr.xyz --lj-species Ar:0.0104:3.40:8.5 --lj-species Kr:0.014:3.65:10 --lj-pair Ar:Kr:0.012:3.5:9.25
expect_warning "the same with --lj-pair Ar:Kr" 0 "Ar-Kr"
run md --input arkr.xyz --lj-species Ar:0.0104:3.40:9 --lj-species Kr:0.014:3.65:9
expect_warning "two species with equal cutoffs" 0 "cutoff"
run md --input in.xyz --ensemble npt --temperature 40
expect_warning "npt on a box and an open cluster" 1 "constant volume"
run md --input box.xyz --ensemble npt --temperature 40
expect_warning "npt on a fully periodic box" 0 "constant volume"
cat >mix.yaml <<'EOF'
input: arkr.xyz
model: {type: lj, species: [{element: Ar, epsilon: 0.0104, sigma: 3.40, cutoff: 8.5},
                            {element: Kr, epsilon: 0.014, sigma: 3.65, cutoff: 10}]}
stages:
  md: {method: npt, dt_fs: 2, temperature_K: 40, entry_temperature_K: 40, steps: 5}
sampler: {max_atoms: 100}
scheduler: {ncpus: 2}
EOF
run "$MDFLOW" run mix.yaml
expect_warning "mdflow run: a mixed pair with other cutoffs" 1 "Ar-Kr"
expect_warning "mdflow run: npt stage on an open cluster" 1 "constant volume"
run "$MDFLOW" md --help
if grep -F 'max(rc' "$T/stdout" >/dev/null && grep -F 'constant volume' "$T/stdout" >/dev/null; then
    pass "md --help documents the mixed cutoff and npt on non-periodic systems"
else
    fail "md --help documents the mixed cutoff and npt on non-periodic systems"; show stdout "$T/stdout"
fi

# ---- 6b. outputs that are inputs or each other: refused before the run ---------------
cp in.xyz same.xyz
before=$(cksum <same.xyz)
run md --input same.xyz --log same.xyz
expect_error "--log = --input" 2 "--log 'same.xyz'" "--input 'same.xyz'" "same file" "overwrite its input"
run md --input same.xyz --output ./same.xyz
expect_error "--output = --input (another spelling)" 2 "--output './same.xyz'" "--input 'same.xyz'" "same file"
mkdir -p sub
ln -sf ../same.xyz sub/link.xyz
run md --input sub/link.xyz --thermo-file same.xyz
expect_error "--thermo-file = --input through a link" 2 "--thermo-file" "--input 'sub/link.xyz'" "same file"
run md --input same.xyz --output both.xyz --log both.xyz
expect_error "--output = --log" 2 "--log 'both.xyz'" "--output 'both.xyz'" "each output would overwrite the other"
run "$MDFLOW" relax --input same.xyz --output same.xyz
expect_error "relax --output = --input" 2 "--output 'same.xyz'" "--input 'same.xyz'"
if [ "$(cksum <same.xyz)" = "$before" ] && [ ! -e both.xyz ]; then pass "the input is untouched and nothing was written"
else fail "the input is untouched and nothing was written" "$(ls -l same.xyz both.xyz 2>&1)"; fi

# ---- 6c. outputs that cannot be written: found before the run --------------------------
run md --input in.xyz --steps 20000 --output nodir/out.xyz --thermo 1
expect_error "--output in a missing folder" 1 "--output 'nodir/out.xyz'" "folder 'nodir' does not exist" \
    "checked before the run"
if ! grep -q PotEng "$T/stdout"; then pass "--output in a missing folder: refused before the first step"
else fail "--output in a missing folder: refused before the first step" "thermo rows were printed"; fi
run md --input in.xyz --log sub
expect_error "--log naming a folder" 1 "--log 'sub'" "is a folder"
# A read-only folder (root writes through permissions: a read-only mount then).
mkdir -p ro
if [ "$(id -u)" != 0 ]; then chmod 555 ro; ro=perm
elif mount -t tmpfs -o ro,size=16k tmpfs ro 2>/dev/null; then ro=mount
else ro=; fi
if [ -n "$ro" ]; then
    run "$MDFLOW" relax --input in.xyz --output ro/out.xyz
    expect_error "--output in a read-only folder ($ro)" 1 "--output 'ro/out.xyz'" "folder 'ro' is not writable"
    if [ "$ro" = mount ]; then umount ro; else chmod 755 ro; fi
else
    echo "# (read-only folder case skipped: cannot make one here)"
fi

# ---- 6d. parameters by name: --param, the shorthands, mdflow methods/models -------------
# The dedicated flags are shorthands for the method's and the model's named
# parameters: the same run either way, bit for bit; and the parameter is
# applied (another friction gives another trajectory).
common="--input clusters.xyz --ensemble langevin --temperature 40 --steps 30 --dt 5 --quiet"
# shellcheck disable=SC2086 # common is a list of options
run "$MDFLOW" md $common --friction 0.05 --lj-epsilon 0.012 --lj-sigma 3.3 --lj-cutoff 7.5 --lj-shift --output flags.xyz
rc_flags=$rc
# shellcheck disable=SC2086
run "$MDFLOW" md $common --param friction_per_fs=0.05 --param epsilon=0.012 --param sigma=3.3 --param cutoff=7.5 \
    --param shift=true --output params.xyz
rc_params=$rc
# shellcheck disable=SC2086
run "$MDFLOW" md $common --param friction_per_fs=0.02 --param epsilon=0.012 --param sigma=3.3 --param cutoff=7.5 \
    --param shift=true --output params2.xyz
if [ "$rc_flags" -eq 0 ] && [ "$rc_params" -eq 0 ] && cmp -s flags.xyz params.xyz && ! cmp -s params.xyz params2.xyz; then
    pass "md --param friction_per_fs/epsilon/sigma/cutoff/shift = --friction --lj-*: the same output bit for bit (another friction differs)"
else
    fail "md --param = the dedicated flags, bit for bit" "exit status $rc_flags and $rc_params; \
flags vs params: $(cmp flags.xyz params.xyz 2>&1 || true); params vs friction 0.02: $(cmp -s params.xyz params2.xyz && echo same || echo differ)"
fi
# A later setting of a parameter wins (the shorthand first, --param after).
# shellcheck disable=SC2086
run "$MDFLOW" md $common --friction 0.02 --param friction_per_fs=0.05 --lj-epsilon 0.012 --lj-sigma 3.3 --lj-cutoff 7.5 \
    --lj-shift --output later.xyz
if [ "$rc" -eq 0 ] && cmp -s flags.xyz later.xyz; then pass "--friction 0.02 then --param friction_per_fs=0.05: the later wins"
else fail "--friction 0.02 then --param friction_per_fs=0.05: the later wins" "exit status $rc"; fi
# npt's shorthands.
run "$MDFLOW" md --input box.xyz --ensemble npt --temperature 40 --steps 10 --dt 4 --quiet --pressure 100 --tau-p 500 \
    --compressibility 1e-5 --tau-t 50 --output npt-flags.xyz
rc_flags=$rc
run "$MDFLOW" md --input box.xyz --ensemble npt --temperature 40 --steps 10 --dt 4 --quiet --param pressure_bar=100 \
    --param tau_p_fs=500 --param compressibility_per_bar=1e-5 --param tau_t_fs=50 --output npt-params.xyz
if [ "$rc_flags" -eq 0 ] && [ "$rc" -eq 0 ] && cmp -s npt-flags.xyz npt-params.xyz; then
    pass "md npt: --pressure --tau-p --compressibility --tau-t = --param pressure_bar, tau_p_fs, compressibility_per_bar, tau_t_fs"
else fail "md npt: the shorthands = --param" "exit status $rc_flags and $rc"; show stderr "$T/stderr"; fi
# Without per-element rows, lj gives every element of the input the scalar
# parameters: the same run as a row per element with those values.
run md --input arkr.xyz --lj-epsilon 0.012 --lj-sigma 3.5 --lj-cutoff 8 --output every.xyz
rc_every=$rc
run md --input arkr.xyz --lj-species Ar:0.012:3.5:8 --lj-species Kr:0.012:3.5:8 --output rows.xyz
if [ "$rc_every" -eq 0 ] && [ "$rc" -eq 0 ] && cmp -s every.xyz rows.xyz; then
    pass "lj without rows on Ar + Kr = a row per element with the scalar values, bit for bit"
else fail "lj without rows on Ar + Kr = a row per element with the scalar values" "exit status $rc_every and $rc"; fi
# Per-element rows and a method's two names for one option (--tau-t is nose_hoover's tau_fs).
run "$MDFLOW" md --input arkr.xyz --ensemble nose-hoover --temperature 30 --steps 20 --quiet --tau-t 40 --chain 4 \
    --lj-species Ar:0.0104:3.40:8.5 --lj-species Kr:0.014:3.65:8.5 --lj-pair Ar:Kr:0.012:3.5:8.5 --output nh-flags.xyz
rc_flags=$rc
run "$MDFLOW" md --input arkr.xyz --ensemble nose-hoover --temperature 30 --steps 20 --quiet --param tau_fs=40 \
    --param method.chain=4 --lj-species Ar:0.0104:3.40:8.5 --lj-species Kr:0.014:3.65:8.5 --lj-pair Ar:Kr:0.012:3.5:8.5 \
    --output nh-params.xyz
if [ "$rc_flags" -eq 0 ] && [ "$rc" -eq 0 ] && cmp -s nh-flags.xyz nh-params.xyz; then
    pass "md nose-hoover: --param tau_fs, method.chain = --tau-t, --chain (with --lj-species/--lj-pair rows)"
else
    fail "md nose-hoover: --param tau_fs, method.chain = --tau-t, --chain" "exit status $rc_flags and $rc"
    show stderr "$T/stderr"
fi
# An optimiser's parameters: --param reaches it (a smaller maxstep takes more steps).
run "$MDFLOW" relax --input clusters.xyz --optimizer fire --fmax 0.05 --max-steps 3000 --param maxstep=0.01 --log slow.csv
steps_slow=$(awk -F, 'NR > 1 { if ($1 > m) m = $1 } END { print m + 0 }' slow.csv 2>/dev/null)
steps_fast=$(awk -F, 'NR > 1 { if ($1 > m) m = $1 } END { print m + 0 }' relax-fire.csv 2>/dev/null)
if [ "$rc" -eq 0 ] && [ "${steps_slow:-0}" -gt "${steps_fast:-0}" ]; then
    pass "relax --param maxstep=0.01 reaches FIRE: $steps_slow steps, $steps_fast with the default 0.2 Å"
else
    fail "relax --param maxstep=0.01 reaches FIRE" "exit status $rc; steps $steps_slow vs $steps_fast"; show stderr "$T/stderr"
fi
run md --input in.xyz --param frobnicate=1
expect_error "--param of an unknown name" 2 "unknown parameter 'frobnicate'" "model lj takes epsilon, sigma, cutoff, shift" \
    "method velocity_verlet takes none"
run md --input in.xyz --ensemble langevin --temperature 40 --param tau_fs=5
expect_error "--param of another method's name" 2 "'tau_fs'" "method langevin takes friction_per_fs"
run md --input in.xyz --ensemble langevin --temperature 40 --param friction_per_fs=-1
expect_error "--param out of range" 2 "friction_per_fs" "langevin" "-1 is out of range" "(0, inf) 1/fs"
run md --input in.xyz --ensemble nose-hoover --temperature 40 --chain 9
expect_error "--chain out of range" 2 "--chain 9" "chain" "[1, 5]"
run md --input in.xyz --param sigma=0
expect_error "--param sigma=0 (model)" 2 "sigma" "model lj" "(0, inf) Å"
run md --input in.xyz --param sigma
expect_error "--param without a value" 2 "NAME=VALUE"
run md --input in.xyz --param model.tau_fs=1
expect_error "--param model. of a method's name" 2 "unknown parameter 'tau_fs' of model lj" "epsilon, sigma, cutoff, shift"
run md --input in.xyz --ensemble langevin --temperature 40 --tau-t 50
expect_error "--tau-t for a method without a thermostat time" 2 "--tau-t 50" "langevin" "friction_per_fs"
run md --input in.xyz --model morse
expect_error "--model of an unregistered model" 2 "morse" "lj" "--plugin"
run "$MDFLOW" relax --input clusters.xyz --optimizer velocity_verlet
expect_error "relax --optimizer of an integrator" 2 "velocity_verlet" "fire, fire2, gd, lbfgs"
# mdflow methods: every method with its parameters (name, help, default, range, unit).
run "$MDFLOW" methods
if [ "$rc" -eq 0 ] && grep -E '^ +friction_per_fs +.*default 0\.01; \(0, inf\) 1/fs' "$T/stdout" >/dev/null \
    && grep -E '^ +chain +.*default 3; \[1, 5\]' "$T/stdout" >/dev/null && grep -E '^ +memory ' "$T/stdout" >/dev/null \
    && grep -E '^ +pressure_bar ' "$T/stdout" >/dev/null; then
    pass "mdflow methods: parameters with default, range and unit (friction_per_fs, chain, memory, pressure_bar)"
else
    fail "mdflow methods: parameters with default, range and unit" "exit status $rc"; show stdout "$T/stdout"
fi
run "$MDFLOW" models
if [ "$rc" -eq 0 ] && grep -E '^  lj +Lennard-Jones' "$T/stdout" >/dev/null \
    && grep -E '^ +sigma +.*default 3\.4; \(0, inf\) Å' "$T/stdout" >/dev/null && grep -E '^ +shift ' "$T/stdout" >/dev/null \
    && grep -F 'per element' "$T/stdout" >/dev/null && grep -F 'per pair' "$T/stdout" >/dev/null; then
    pass "mdflow models: lj with its parameters (scalar, per element, per pair)"
else
    fail "mdflow models: lj with its parameters (scalar, per element, per pair)" "exit status $rc"; show stdout "$T/stdout"
fi
if [ "$rc" -eq 0 ] && grep -E '^  eam +embedded-atom' "$T/stdout" >/dev/null && grep -E '^ +file +' "$T/stdout" >/dev/null; then
    pass "mdflow models: eam with its file parameter"
else
    fail "mdflow models: eam with its file parameter" "exit status $rc"; show stdout "$T/stdout"
fi
# The built-in EAM model by name: its file by --param, file errors named.
run md --input in.xyz --model eam
expect_error "eam without a file" nonzero "file=PATH"
run md --input in.xyz --model eam --param file=nothere.eam.alloy
expect_error "eam with a missing file" nonzero "nothere.eam.alloy"
eam_pot=${MDF_LAMMPS_POTENTIALS:-/usr/share/lammps/potentials}/Cu_u3.eam
if [ -r "$eam_pot" ]; then
    awk 'BEGIN {
        a = 3.615; n = 5; L = a * n
        printf "%d\nLattice=\"%.3f 0 0 0 %.3f 0 0 0 %.3f\" Properties=species:S:1:pos:R:3 pbc=\"T T T\"\n", 4 * n * n * n, L, L, L
        split("0 0 0 0.5 0.5 0 0.5 0 0.5 0 0.5 0.5", b, " ")
        for (i = 0; i < n; i++) for (j = 0; j < n; j++) for (k = 0; k < n; k++) for (m = 0; m < 4; m++)
            printf "Cu %.4f %.4f %.4f\n", (i + b[3 * m + 1]) * a, (j + b[3 * m + 2]) * a, (k + b[3 * m + 3]) * a
    }' > cu.xyz
    run md --input cu.xyz --model eam --param "file=$eam_pot" --temperature 300
    if [ "$rc" -eq 0 ]; then pass "md --model eam --param file=Cu_u3.eam runs"; else
        fail "md --model eam --param file=Cu_u3.eam runs" "exit status $rc"; show stderr "$T/stderr"; fi
    run md --input cu.xyz --model "eam:$eam_pot" --steps 3
    if [ "$rc" -eq 0 ]; then pass "md --model eam:Cu_u3.eam runs"; else
        fail "md --model eam:Cu_u3.eam runs" "exit status $rc"; show stderr "$T/stderr"; fi
    run md --input in.xyz --model eam --param "file=$eam_pot"
    expect_error "eam on an element the file lacks" nonzero "system 0" "Ar" "eam" "$eam_pot" "covers element Cu only"
    # The flavours as LAMMPS's pair styles: eam/alloy:FILE, eam/fs:FILE.
    eam_dir=$(dirname "$eam_pot")
    if [ -r "$eam_dir/AlCu.eam.alloy" ] && [ -r "$eam_dir/CuZr_mm.eam.fs" ]; then
        run md --input cu.xyz --model "eam/alloy:$eam_dir/AlCu.eam.alloy" --steps 3
        if [ "$rc" -eq 0 ]; then pass "md --model eam/alloy:AlCu.eam.alloy runs"; else
            fail "md --model eam/alloy:AlCu.eam.alloy runs" "exit status $rc"; show stderr "$T/stderr"; fi
        run md --input cu.xyz --model "eam/fs:$eam_dir/CuZr_mm.eam.fs" --steps 3
        if [ "$rc" -eq 0 ]; then pass "md --model eam/fs:CuZr_mm.eam.fs runs"; else
            fail "md --model eam/fs:CuZr_mm.eam.fs runs" "exit status $rc"; show stderr "$T/stderr"; fi
        run md --input in.xyz --model "eam/alloy:$eam_dir/AlCu.eam.alloy"
        expect_error "eam/alloy on an element the file lacks" nonzero "Ar" "AlCu.eam.alloy" "covers elements Al, Cu only"
        # The flavour is the file's format: a setfl file read as eam/fs, a
        # funcfl file read as setfl, fail at a line of the file.
        run md --input cu.xyz --model "eam/fs:$eam_dir/AlCu.eam.alloy" --steps 3
        expect_error "--model eam/fs: with a setfl file" nonzero "AlCu.eam.alloy:"
        run md --input cu.xyz --model "eam/alloy:$eam_pot" --steps 3
        expect_error "--model eam/alloy: with a funcfl file" nonzero "Cu_u3.eam:"
    fi
    run md --input cu.xyz --model "eam/nosuch:$eam_pot"
    expect_error "--model eam/STYLE, an unknown style" nonzero "nosuch" "alloy, fs or funcfl"
    run md --input cu.xyz --model "lj/alloy"
    expect_error "--model lj/STYLE (lj has no style)" nonzero "lj" "no style"
    # A malformed file: the message names the file and the line.
    printf 'c\nc\nc\n1 Cu\n10 0.1 10 0.5 4.0\n29 63.55 3.615 fcc\n1 2 abc\n' > bad.eam.alloy
    run md --input cu.xyz --model eam:bad.eam.alloy
    expect_error "--model eam:FILE, a malformed file" nonzero "bad.eam.alloy:7" "'abc'"
    # A grid too fine for its cutoff (2^31 r steps): refused at its line.
    printf 'c\nc\nc\n1 Cu\n10 0.1 10 1e-9 4.0\n' > fine.eam.alloy
    run md --input cu.xyz --model eam:fine.eam.alloy
    expect_error "--model eam:FILE, a cutoff of more than 2^30 steps dr" nonzero "fine.eam.alloy:5" "2^30 steps"
    run md --input cu.xyz --model "lj:$eam_pot"
    expect_error "--model lj:FILE (lj takes no file)" nonzero "lj" "no file"
    run md --input cu.xyz --model eam:nothere.eam
    expect_error "--model eam:FILE, a missing file" nonzero "nothere.eam"
else
    echo "# skipped: md --model eam (no $eam_pot)"
fi
for args in "--help" "md --help" "relax --help"; do
    # shellcheck disable=SC2086
    run "$MDFLOW" $args
    if grep -F -e '--param' "$T/stdout" >/dev/null && grep -F -e '--plugin' "$T/stdout" >/dev/null; then
        pass "mdflow $args documents --param and --plugin"
    else fail "mdflow $args documents --param and --plugin"; show stdout "$T/stdout"; fi
done
run "$MDFLOW" --help
if grep -E '^  models ' "$T/stdout" >/dev/null && grep -F MDFLOW_PLUGIN_PATH "$T/stdout" >/dev/null; then
    pass "mdflow --help lists the models command and MDFLOW_PLUGIN_PATH"
else fail "mdflow --help lists the models command and MDFLOW_PLUGIN_PATH"; show stdout "$T/stdout"; fi
# Plugins that are not there: the message names the file (loading real ones: test_plugins.sh).
run md --input in.xyz --plugin "$T/no-such-plugin.so"
expect_error "--plugin of a missing file" nonzero "--plugin" "$T/no-such-plugin.so"
run env MDFLOW_PLUGIN_PATH="$T/missing-dir/x.so" "$MDFLOW" methods
expect_error "MDFLOW_PLUGIN_PATH naming a missing file" nonzero "MDFLOW_PLUGIN_PATH" "$T/missing-dir/x.so"
printf 'not a shared object\n' >fake.so
run env MDFLOW_PLUGIN_PATH="$T/fake.so" "$MDFLOW" md --input in.xyz
expect_error "MDFLOW_PLUGIN_PATH naming a file that is not a shared object" nonzero "$T/fake.so" "shared object"

# ---- 6e. variable-cell relaxation: --cell, --pressure (GPa), --smax (GPa) --------------
# The periodic box of in.xyz alone, relaxed with its cell at 0 and at 1 GPa: the
# lattice constant (from the output's Lattice) grows a little at 0 GPa (the LJ
# minimum with a 6.8 Å cutoff is 5.2925 Å, test_cell_relax checks it against
# LAMMPS) and shrinks below 5.0 Å at 1 GPa.
head -n 258 in.xyz >box.xyz
lattice_a() { sed -n '2s/.*Lattice="\([^ ]*\) .*/\1/p' "$1" | awk '{ printf "%.4f", $1 / 4 }'; }
for opt in fire lbfgs; do
    for p in 0 1; do
        run "$MDFLOW" relax --input box.xyz --optimizer $opt --cell --pressure $p --lj-cutoff 6.8 --fmax 1e-3 \
            --smax 1e-3 --max-steps 3000 --output cell_$opt$p.xyz
        a=$(lattice_a cell_$opt$p.xyz)
        if [ "$rc" -eq 0 ] && grep -F 'relaxed 1 of 1 systems' "$T/stdout" | grep -F 'stress within 0.001 GPa' \
            >/dev/null && grep -F 'mdf_status=1' cell_$opt$p.xyz >/dev/null \
            && awk -v a="$a" -v p="$p" 'BEGIN { exit !(p == 0 ? (a > 5.29 && a < 5.295) : (a > 4.98 && a < 4.995)) }'; then
            pass "relax --cell --optimizer $opt --pressure $p GPa: converged, lattice constant $a Å"
        else
            fail "relax --cell --optimizer $opt --pressure $p GPa: converged, lattice constant as expected" \
                "exit status $rc, a = $a"
            show stdout "$T/stdout"; show stderr "$T/stderr"
        fi
    done
done
run "$MDFLOW" relax --input box.xyz --optimizer lbfgs_cell --pressure 1 --lj-cutoff 6.8 --fmax 1e-3 --smax 1e-3
if [ "$rc" -eq 0 ] && grep -F 'relaxed 1 of 1 systems' "$T/stdout" | grep -F 'stress within' >/dev/null; then
    pass "relax --optimizer lbfgs_cell --pressure 1: --cell implied, converged"
else
    fail "relax --optimizer lbfgs_cell --pressure 1: --cell implied, converged" "exit status $rc"
    show stderr "$T/stderr"
fi
run "$MDFLOW" relax --input box.xyz --cell --smax -1
expect_error "relax --cell --smax -1" 2 "--smax" "GPa"
run "$MDFLOW" relax --input box.xyz --pressure 1
expect_error "relax --pressure without --cell" 2 "--pressure" "--cell"
run "$MDFLOW" relax --input in.xyz --cell
expect_error "relax --cell on a cluster" 2 "system 1" "not periodic"
run "$MDFLOW" relax --input box.xyz --cell --optimizer gd
expect_error "relax --cell --optimizer gd" 2 "--cell" "gd"
run "$MDFLOW" md --input box.xyz --smax 1
expect_error "md --smax" 2 "--smax" "relax"

# ---- 7. the default workload -------------------------------------------------------
# MDFLOW_DATA points nowhere: the dataset is found through the compiled-in paths.
# Sanitizer builds run slower (scripts/test.sh sets MDF_TEST_TIME_SCALE: 10 under TSan).
limit=$((60 * ${MDF_TEST_TIME_SCALE:-1}))
if command -v timeout >/dev/null 2>&1; then TIMEOUT="timeout $limit"; else TIMEOUT=; fi
start=$(date +%s)
# shellcheck disable=SC2086 # TIMEOUT is empty or two words
run env MDFLOW_DATA=/nonexistent $TIMEOUT "$MDFLOW"
took=$(($(date +%s) - start))
if [ "$rc" -eq 124 ]; then
    fail "mdflow (default workload) finishes within $limit s" "killed after ${took} s"
elif [ "$rc" -eq 0 ] && head -n 1 "$T/stdout" | grep -F 'default workload' >/dev/null \
    && grep -F 'atom-steps/s' "$T/stdout" >/dev/null; then
    pass "mdflow (default workload): exit 0, announces the default workload, reports atom-steps/s (${took} s)"
else
    fail "mdflow (default workload): exit 0, announces the default workload, reports atom-steps/s" "exit status $rc"
    show stdout "$T/stdout"; show stderr "$T/stderr"
fi

finish
