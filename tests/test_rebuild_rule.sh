#!/bin/sh
# mdflow — the neighbour lists' rebuild rule against LAMMPS's neigh_modify
# (--rebuild-every N, --rebuild-check yes|no): a hot argon crystal whose
# atoms move past skin/2 between builds runs 40 NVE steps in both codes with
# the same rule; the build counts must be LAMMPS's and the potential
# energies agree to 2e-6 (the same pairs missed by check no), and mdflow's
# default rule must not reproduce the check-no energy (the test can fail).
#
# The tolerance: LAMMPS's metal units turn forces into accelerations with
# its own constants (ftm2v from 1.0364269e-4, 8 digits) where mdflow uses
# ASE's CODATA units, so the two trajectories part by about 1e-8 relative
# a step: 2.3e-7 in the energy after 40 steps, under every rule alike.
# A rule off by one step is far outside it: rebuilding every 9 or 11 steps
# instead of 10 (check no) moves the energy by 2e-4 and 2e-3, and the
# pairs that check no misses by 4e-4.
#
# Run by automake's harness from the build tree (MDF_TEST_SRCDIR,
# MDF_TEST_BUILDDIR); prints "ok - ..." / "not ok - ..." per check, then
# "N passed, M failed"; exits 0 when every check passed, 77 without LAMMPS
# or ASE, else 1.
set -u

HARNESS_NAME=mdflow-rebuild-rule
# shellcheck source=tests/cli_harness.sh
. "${MDF_TEST_SRCDIR:-$(cd "$(dirname "$0")/.." && pwd)}/tests/cli_harness.sh"
require_python "numpy ase"
if ! command -v lmp >/dev/null 2>&1; then
    echo "SKIP: lmp (LAMMPS, Debian package lammps) not found"
    exit 77
fi

# 256 atoms, 21 Å cell, cutoff 8.5 Å + skin 0.2 Å (or 1 Å); velocities of about
# 5 Å/ps: 10 steps of 5 fs move atoms about 0.25 Å, past skin/2.
argon_crystal "$PY" 11 5.26 0.05 0.05 1 hot.xyz data.lmp

# lammps NAME "NEIGH_MODIFY": 40 steps; NAME.txt holds "pe builds", builds
# as LAMMPS's log counts them (after the setup's).
lammps() {
    cat >"$1.in" <<LMP
units metal
atom_style atomic
boundary p p p
read_data data.lmp
pair_style lj/cut 8.5
pair_coeff 1 1 0.0104 3.40
neighbor $SKIN bin
neigh_modify $2
timestep 0.005
fix 1 all nve
thermo_style custom step pe
run 40
print "\$(pe:%.17g)" file $1.pe
LMP
    if ! lmp -in "$1.in" -log "$1.log" -screen none >/dev/null 2>&1 || [ ! -s "$1.pe" ]; then
        fail "LAMMPS runs with neigh_modify $2"; show "$1.log" "$1.log"; finish
    fi
    echo "$(cat "$1.pe") $(sed -n 's/^Neighbor list builds = *\([0-9]*\).*/\1/p' "$1.log")" >"$1.txt"
}

# mdflow_run NAME ARGS...: the same 40 steps; NAME.txt holds "pe builds",
# the builds after the first.
mdflow_run() {
    name=$1
    shift
    run "$MDFLOW" md --input hot.xyz --keep-velocities --steps 40 --dt 5 --skin "$SKIN" --log "$name.csv" \
        --log-every 40 "$@"
    pe=$(awk -F, '$1 == "40" { print $4 }' "$name.csv" 2>/dev/null)
    nb=$(sed -n 's/.*neighbour-list rebuilds \([0-9]*\).*/\1/p' "$T/stdout" "$T/stderr" | head -n 1)
    if [ "$rc" -ne 0 ] || [ -z "$pe" ] || [ -z "$nb" ]; then
        fail "mdflow md $* runs" "exit $rc, energy '$pe', rebuilds '$nb'"; show stderr "$T/stderr"; finish
    fi
    echo "$pe $((nb - 1))" >"$name.txt"
}

# same WHAT A B: energies of A.txt and B.txt within 2e-6 relative and the
# same build counts.
same() {
    v=$(awk '{ print }' "$2.txt" "$3.txt" | awk 'NR == 1 { e = $1; n = $2 } NR == 2 {
        r = (e - $1) / $1; if (r < 0) r = -r
        printf "%s pe %.15g vs %.15g (rel %.2g), builds %d vs %d", (r < 2e-6 && n == $2) ? "ok" : "bad", e, $1, r, n, $2 }')
    case $v in
        ok*) pass "$1: ${v#ok }" ;;
        *) fail "$1" "$v" ;;
    esac
}

SKIN=0.2
lammps l_every1 "every 1 delay 0 check yes"
lammps l_nocheck "every 10 delay 0 check no"
mdflow_run m_default
mdflow_run m_nocheck --rebuild-every 10 --rebuild-check no
# With a skin of 1 Å a check every 4 steps finds no atom past skin/2 at
# some checks: builds at some multiples of 4 only.
SKIN=1.0
lammps l_check4 "every 4 delay 0 check yes"
mdflow_run m_check4 --rebuild-every 4 --rebuild-check yes

same "default rule = LAMMPS every 1 check yes" m_default l_every1
same "--rebuild-every 10 --rebuild-check no = LAMMPS every 10 check no" m_nocheck l_nocheck
same "--rebuild-every 4 (skin 1 Å) = LAMMPS every 4 check yes" m_check4 l_check4
n4=$(cut -d' ' -f2 m_check4.txt)
if [ "$n4" -ge 1 ] && [ "$n4" -lt 10 ]; then pass "check yes every 4 steps rebuilt $n4 times of 10 checks"; else
    fail "check yes every 4 steps rebuilds at some checks, not all" "builds after the first: $n4 of 10 checks"; fi
# check no every 10 steps: 4 builds after the first, whatever the atoms did
if [ "$(cut -d' ' -f2 m_nocheck.txt)" = 4 ]; then pass "check no rebuilds at steps 10, 20, 30, 40"; else
    fail "check no rebuilds at steps 10, 20, 30, 40" "builds after the first: $(cut -d' ' -f2 m_nocheck.txt)"; fi
# The atoms outran the skin: the default rule rebuilt more often, and check
# no missed pairs (else the comparison above proves nothing).
v=$(cat m_default.txt m_nocheck.txt | awk 'NR == 1 { e = $1; n = $2 } NR == 2 {
    r = (e - $1) / $1; if (r < 0) r = -r
    printf "%s default %d builds, check no %d; energies differ by %.2g", (n > $2 && r > 1e-7) ? "ok" : "bad", n, $2, r }')
case $v in
    ok*) pass "the case discriminates: ${v#ok }" ;;
    *) fail "the case discriminates (atoms outrun the skin)" "$v" ;;
esac
# A workflow's model.rebuild_every / rebuild_check: the same run as
# mdflow md's, the same bytes.
cat >wf.yaml <<'YAML'
input: hot.xyz
model:
  type: lj
  skin: 0.2
  rebuild_every: 10
  rebuild_check: false
stages:
  md:
    method: velocity_verlet
    dt_fs: 5
    steps: 40
sampler: {max_atoms: 1000}
output: {log: wf.csv, log_every: 40}
YAML
run "$MDFLOW" run wf.yaml
wpe=$(awk -F, '$1 == "40" { print $4 }' wf.csv 2>/dev/null)
mpe=$(awk -F, '$1 == "40" { print $4 }' m_nocheck.csv)
wnb=$(sed -n 's/.*neighbour-list rebuilds \([0-9]*\).*/\1/p' "$T/stdout" | head -n 1)
if [ "$rc" -eq 0 ] && [ -n "$wpe" ] && [ "$wpe" = "$mpe" ] && [ "$wnb" = 5 ]; then
    pass "workflow model.rebuild_every 10, rebuild_check false: mdflow md's energy ($wpe) and 5 builds"
else
    fail "workflow model.rebuild_every 10, rebuild_check false = mdflow md's run" \
        "exit $rc, energy '$wpe' vs '$mpe', builds '$wnb'"; show stderr "$T/stderr"
fi
sed 's/rebuild_every: 10/rebuild_every: 0/' wf.yaml >wf0.yaml
run "$MDFLOW" run wf0.yaml
if [ "$rc" -eq 2 ] && grep -q "wf0.yaml:5:.*model.rebuild_every" "$T/stderr"; then
    pass "model.rebuild_every: 0 is refused, naming file, line and key"
else fail "model.rebuild_every: 0 is refused, naming file, line and key" "exit $rc"; show stderr "$T/stderr"; fi

# Refused values name the option.
run "$MDFLOW" md --input hot.xyz --steps 1 --rebuild-every 0
if [ "$rc" -eq 2 ] && grep -q -- "--rebuild-every 0" "$T/stderr"; then pass "--rebuild-every 0 is refused"; else
    fail "--rebuild-every 0 is refused" "exit $rc"; show stderr "$T/stderr"; fi
run "$MDFLOW" md --input hot.xyz --steps 1 --rebuild-check maybe
if [ "$rc" -eq 2 ] && grep -q "give yes or no" "$T/stderr"; then pass "--rebuild-check maybe is refused"; else
    fail "--rebuild-check maybe is refused" "exit $rc"; show stderr "$T/stderr"; fi
finish
