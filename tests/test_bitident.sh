#!/bin/sh
# mdflow — bit-identical results whatever the scheduling: a built-in-like
# workflow (FIRE relaxation fused with Langevin MD, inflight batching with
# refills while systems are in flight, model work cut into chunks of 100
# atoms that slice the larger systems, argon clusters of 16-142 atoms and
# periodic crystals of 256 and 320 atoms from examples/argon_mixed.xyz, and
# two 4-atom crystals, smaller than the cutoff) run
# under every scheduling policy the linked StarPU offers, with 1 and 2 CPU
# workers and 2 and 3 shards, writes the same final structures, byte for
# byte, as under lws with 2 workers and 2 shards, and the same log rows
# per system (energy, fmax, temperature at each of its steps).
#
# The log's step column is left out of the comparison: it is the stage's
# step, and when a system enters (a refill) depends legitimately on when
# the census tasks report finished systems, hence on the scheduling. The
# rows of one system, in order, are its own trajectory, which must not
# depend on it (log_every 1: every step of every system is logged).
# graph_test (StarPU's test of its task-graph code) is not a policy to run
# work with; modular-heteroprio-heft never finished this workflow with 2
# workers (StarPU 1.4.x), so every run has a time limit of 60 s.
#
# Run by automake's harness from the build tree with MDF_TEST_SRCDIR and
# MDF_TEST_BUILDDIR set; also runs by hand from a build directory.
set -u

HARNESS_NAME=mdflow-bitident
srcdir=${MDF_TEST_SRCDIR:-$(cd "$(dirname "$0")/.." && pwd)}
# shellcheck source=tests/cli_harness.sh
. "$srcdir/tests/cli_harness.sh"

# The frames of an extxyz file whose indices are listed (0-based).
pick_frames() {
    awk -v want=" $1 " -v nf=0 'state == 0 { if ($0 ~ /^[ \t]*$/) next; n = $1 + 0; keep = index(want, " " nf " ") > 0;
            if (keep) print; state = 1; next }
        state == 1 { if (keep) print; left = n; state = n > 0 ? 2 : 0; if (!state) nf++; next }
        state == 2 { if (keep) print; if (--left == 0) { state = 0; nf++ } }' "$2"
}
# Crystals 0, 4 (256 atoms) and 1, 5 (320), clusters 96-125 (16-142 atoms),
# and two fcc cells of 4 atoms, narrower than twice the list radius (an atom
# sees several images of each neighbour: lists of "wide" entries, counted
# from the system's first atom, which moves when systems before it leave).
small_cell() {
    printf '4\nLattice="5.26 0 0 0 5.26 0 0 0 5.26" Properties=species:S:1:pos:R:3 pbc="T T T"\n'
    printf 'Ar %s\n' "$1 0.02 -0.01" "0.01 2.63 2.64" "2.62 -0.02 2.63" "2.63 2.65 0.01"
}
{
    pick_frames "0 1" "$srcdir/examples/argon_mixed.xyz"
    small_cell 0.03
    small_cell -0.04
    pick_frames "4 5 $(seq -s ' ' 96 125)" "$srcdir/examples/argon_mixed.xyz"
} >data.xyz

# workflow NAME SHARDS: NAME.yaml writing NAME.xyz, NAME.relax.csv, NAME.md.csv.
# Relaxations of 5 to 150 steps make systems leave at many different
# steps, so refills (every 5 steps) find crystals in the middle of their MD.
workflow() {
    cat >"$1.yaml" <<EOF
input: data.xyz
model: {type: lj, shift: true, skin: 1.0, species: [{element: Ar, epsilon: 0.0104, sigma: 3.40, cutoff: 8.5}]}
stages:
  relax: {method: fire, fmax: 0.005, step_budget: 150, params: {dt: 0.1, maxstep: 0.2}}
  md: {method: langevin, dt_fs: 5, temperature_K: 40, entry_temperature_K: 40, steps: 100,
       params: {friction_per_fs: 0.01}}
composition: relax + md
sampler: {max_atoms: 1500, refill_interval: 5, refill_fraction: 0.1}
output: {structures: $1.xyz, log: $1.csv, log_every: 1}
scheduler: {shards: $2, chunk_atoms: 100, window: 8}
seed: 1
EOF
}

# Each system's log rows in order, without the stage's step, and without
# repeats: a refill logs every system in flight again at its step (with the
# newcomers' step 0), for a staying system the same row once more.
rows_by_system() {
    tail -n +2 "$1" | cut -d, -f2- | sort -s -t, -k1,1n | uniq
}

# The policies: the names mdflow's error for an unknown one lists.
workflow ref 2
run env STARPU_SCHED=no-such-policy "$MDFLOW" run --quiet ref.yaml
policies=$(sed -n "s/.*is not a StarPU scheduler: use one of //p" "$T/stderr" | head -n 1 | tr -d ',')
if [ -z "$policies" ]; then
    fail "the linked StarPU's policies are listed by mdflow's error" "exit status $rc"; show stderr "$T/stderr"
    finish
fi
pass "policies: $policies"

# The reference: lws, 2 CPU workers, 2 shards.
run env STARPU_SCHED=lws STARPU_NCPU=2 "$MDFLOW" run --quiet ref.yaml
if [ "$rc" -ne 0 ] || [ ! -s ref.xyz ] || [ ! -s ref.relax.csv ] || [ ! -s ref.md.csv ]; then
    fail "reference run (lws, 2 CPUs, 2 shards)" "exit status $rc"; show stderr "$T/stderr"
    finish
fi
nframes=$(frames ref.xyz | grep -c mdf_system_id)
if [ "$nframes" -eq 36 ]; then pass "reference run: 36 final frames"; else fail "reference run: 36 final frames" "$nframes"; fi
rows_by_system ref.relax.csv >ref.relax.rows
rows_by_system ref.md.csv >ref.md.rows

# case NAME POLICY NCPU SHARDS: the run matches the reference byte for byte.
differing=""
case_run() {
    workflow "$1" "$4"
    run timeout 60 env STARPU_SCHED="$2" STARPU_NCPU="$3" "$MDFLOW" run --quiet "$1.yaml"
    what="$2, $3 CPU, $4 shards"
    if [ "$rc" -ne 0 ]; then
        fail "$what: exit 0" "exit status $rc"; show stderr "$T/stderr"
        return
    fi
    rows_by_system "$1.relax.csv" >"$1.relax.rows"
    rows_by_system "$1.md.csv" >"$1.md.rows"
    bad=""
    cmp -s ref.xyz "$1.xyz" || bad="$bad structures ($(cmp ref.xyz "$1.xyz" 2>&1 | head -n 1));"
    cmp -s ref.relax.rows "$1.relax.rows" || bad="$bad relax log rows;"
    cmp -s ref.md.rows "$1.md.rows" || bad="$bad md log rows;"
    if [ -z "$bad" ]; then
        pass "$what: structures and log rows identical to lws, 2 CPU, 2 shards"
    else
        fail "$what: identical to lws, 2 CPU, 2 shards" "differ:$bad"
        differing="$differing [$what]"
    fi
}

# Every policy twice: 2 CPU workers and 2 shards, 1 CPU worker and 3
# shards; the two other corners under lws (all four corners of every policy
# would take twice as long).
n=0
for p in $policies; do
    case $p in graph_test | modular-heteroprio-heft) continue ;; esac
    for corner in "2 2" "1 3"; do
        set -- $corner
        [ "$p" = lws ] && [ "$1" = 2 ] && [ "$2" = 2 ] && continue
        n=$((n + 1))
        case_run "c$n" "$p" "$1" "$2"
    done
done
case_run lws12 lws 1 2
case_run lws23 lws 2 3
[ -n "$differing" ] && echo "# cases that differed:$differing"

# One periodic crystal alone (864 atoms, NVE): its model work is cut in two
# slices whose rows own their pairs (mdf_nl_pair_owned), and where no hook
# is due between two steps, a step's post_update and the next step's
# pre_update run as one task (stages/stage.c, fuse_post_pre). A thermo row
# every step leaves no step fused; every 7th step, most. Both, under lws
# with 2 workers, eager with 1 and dmda with 2, end with the same file,
# byte for byte.
awk 'BEGIN { a = 5.26; n = 6; srand(7); printf "%d\nLattice=\"%g 0 0 0 %g 0 0 0 %g\" Properties=species:S:1:pos:R:3 pbc=\"T T T\"\n", 4 * n * n * n, n * a, n * a, n * a;
    split("0 0 0 0.5 0.5 0 0.5 0 0.5 0 0.5 0.5", b, " ");
    for (z = 0; z < n; z++) for (y = 0; y < n; y++) for (x = 0; x < n; x++) for (k = 0; k < 4; k++)
        printf "Ar %.6f %.6f %.6f\n", (x + b[3*k+1]) * a + 0.1 * (rand() - 0.5), (y + b[3*k+2]) * a + 0.1 * (rand() - 0.5), (z + b[3*k+3]) * a + 0.1 * (rand() - 0.5) }' >lone.xyz
lone_ref=""
for c in "lws 2 1" "lws 2 7" "eager 1 1" "eager 1 7" "dmda 2 1" "dmda 2 7"; do
    set -- $c
    run env STARPU_SCHED="$1" STARPU_NCPU="$2" "$MDFLOW" md --input lone.xyz --steps 60 --dt 5 --temperature 60 \
        --seed 3 --lj-species Ar:0.0104:3.40:8.5 --thermo "$3" --quiet --thermo-file "lone_$1_$2_$3.thermo" \
        --output "lone_$1_$2_$3.xyz"
    what="lone 864-atom crystal, $1, $2 CPU, a thermo row every $3 step(s)"
    if [ "$rc" -ne 0 ] || ! grep -q "model chunks 2" "$T/stdout"; then
        fail "$what: exit 0, two slices" "exit status $rc"; show stdout "$T/stdout"; show stderr "$T/stderr"
        continue
    fi
    [ -z "$lone_ref" ] && lone_ref="lone_$1_$2_$3.xyz"
    if cmp -s "$lone_ref" "lone_$1_$2_$3.xyz"; then pass "$what: the same structures as lws, 2 CPU, every step"; else
        fail "$what: the same structures as lws, 2 CPU, every step" "$(cmp "$lone_ref" "lone_$1_$2_$3.xyz" 2>&1 | head -n 1)"; fi
done
finish
