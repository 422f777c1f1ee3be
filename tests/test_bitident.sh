#!/bin/sh
# mdflow — bit-identical results whatever the scheduling: a built-in-like
# workflow (FIRE relaxation fused with Langevin MD, inflight batching with
# frequent refills, the model's work cut into chunks that slice the larger
# systems, argon clusters of 16-142 atoms and periodic crystals of 256 and
# 320 atoms from examples/argon_mixed.xyz) run under every scheduling policy
# the linked StarPU offers, with 1 and 2 CPU workers and 2 and 3 shards,
# writes the same final structures, byte for byte, and the same per-system
# log rows (energy, fmax, temperature at every step of each system).
#
# The log's step column is left out of the comparison: it is the stage's
# step, and when a system enters (a refill) depends legitimately on when
# the census tasks report finished systems, hence on the scheduling. The
# rows of one system, in order, are its own trajectory, which must not
# depend on it (log_every 1: every step of every system is logged).
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
    awk -v want=" $1 " 'state == 0 { if ($0 ~ /^[ \t]*$/) next; n = $1 + 0; keep = index(want, " " nf " ") > 0;
            if (keep) print; state = 1; next }
        state == 1 { if (keep) print; left = n; state = n > 0 ? 2 : 0; if (!state) nf++; next }
        state == 2 { if (keep) print; if (--left == 0) { state = 0; nf++ } }' "$2"
}
# Crystals 0 (256 atoms) and 1 (320), clusters 96-121.
pick_frames "0 1 $(seq -s ' ' 96 121)" "$srcdir/examples/argon_mixed.xyz" >data.xyz

# workflow NAME SHARDS: NAME.yaml writing NAME.xyz, NAME.relax.csv, NAME.md.csv.
workflow() {
    cat >"$1.yaml" <<EOF
input: data.xyz
model: {type: lj, shift: true, skin: 0.4, species: [{element: Ar, epsilon: 0.0104, sigma: 3.40, cutoff: 8.5}]}
stages:
  relax: {method: fire, fmax: 0.02, step_budget: 60, params: {dt: 0.1, maxstep: 0.2}}
  md: {method: langevin, dt_fs: 5, temperature_K: 40, entry_temperature_K: 40, steps: 40,
       params: {friction_per_fs: 0.01}}
composition: relax + md
sampler: {max_atoms: 1100, refill_interval: 3, refill_fraction: 0}
output: {structures: $1.xyz, log: $1.csv, log_every: 1}
scheduler: {shards: $2, chunk_atoms: 100, window: 8}
seed: 3
EOF
}

# Each system's log rows in order, without the stage's step.
rows_by_system() {
    tail -n +2 "$1" | cut -d, -f2- | sort -s -t, -k1,1n
}

# The policies: the names mdflow's error for an unknown one lists.
run env STARPU_SCHED=no-such-policy "$MDFLOW" run --check /dev/null
policies=$(sed -n "s/.*is not a StarPU scheduler: use one of //p" "$T/stderr" | head -n 1 | tr -d ',')
if [ -z "$policies" ]; then
    fail "the linked StarPU's policies are listed by mdflow's error" "exit status $rc"; show stderr "$T/stderr"
    finish
fi
pass "policies: $policies"

# The reference: lws, 2 CPU workers, 2 shards.
workflow ref 2
run env STARPU_SCHED=lws STARPU_NCPU=2 "$MDFLOW" run --quiet ref.yaml
if [ "$rc" -ne 0 ] || [ ! -s ref.xyz ] || [ ! -s ref.relax.csv ] || [ ! -s ref.md.csv ]; then
    fail "reference run (lws, 2 CPUs, 2 shards)" "exit status $rc"; show stderr "$T/stderr"
    finish
fi
nframes=$(frames ref.xyz | grep -c mdf_system_id)
if [ "$nframes" -eq 28 ]; then pass "reference run: 28 final frames"; else fail "reference run: 28 final frames" "$nframes"; fi
rows_by_system ref.relax.csv >ref.relax.rows
rows_by_system ref.md.csv >ref.md.rows

# case NAME POLICY NCPU SHARDS: the run matches the reference byte for byte.
differing=""
case_run() {
    workflow "$1" "$4"
    run env STARPU_SCHED="$2" STARPU_NCPU="$3" "$MDFLOW" run --quiet "$1.yaml"
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

n=0
for p in $policies; do
    for ncpu in 1 2; do
        for shards in 2 3; do
            [ "$p" = lws ] && [ "$ncpu" = 2 ] && [ "$shards" = 2 ] && continue
            n=$((n + 1))
            case_run "c$n" "$p" "$ncpu" "$shards"
        done
    done
done
[ -n "$differing" ] && echo "# cases that differed:$differing"
finish
