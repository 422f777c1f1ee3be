#!/bin/sh
# mdflow — outputs on a full file system (a small tmpfs mounted for the
# test). Whatever the writer, the run stops with exit status 1 (never a
# crash), a message naming the file and what to do, and what was written
# before stays readable:
#   - checkpoints, at every size of file system from "none fits" to "one
#     fits, its replacement does not": the checkpoint path is absent or a
#     whole checkpoint (never half-replaced), and once there is room again
#     the run resumes from it and ends as the run left alone, byte for byte;
#   - `mdflow md --thermo-file`: the run stops at the first failed row, and
#     the previous thermo file is not replaced by a truncated one;
#   - `--log` and `--output`: the previous files stay, the log's rows so far
#     are whole;
#   - `mdflow run`'s HDF5 outputs (snapshots as .h5, .h5md and {id} files,
#     converged systems, final structures) at three sizes: one message, said
#     once, no HDF5 stack on stderr, every file opens with h5py (SWMR) and
#     the structure file is an input mdflow reads; no unreadable stub left.
#
# Needs mount(8) permission (root) for the tmpfs: skipped (77) without it.
set -u

HARNESS_NAME=mdflow-full
srcdir=${MDF_TEST_SRCDIR:-$(cd "$(dirname "$0")/.." && pwd)}
# shellcheck source=tests/cli_harness.sh
. "$srcdir/tests/cli_harness.sh"
STARPU_SCHED=eager
export STARPU_SCHED

mkdir full
if ! mount -t tmpfs -o size=64k tmpfs "$T/full" 2>/dev/null; then
    echo "SKIP: cannot mount a tmpfs (needs root): the disk-full tests need a small file system"
    exit 77
fi
trap 'umount "$T/full" 2>/dev/null; rm -rf "$T"' EXIT
# resize BYTES: the tmpfs's size (its files stay).
resize() { mount -o remount,size="$1" "$T/full"; }
# empty_full: no file left on the tmpfs.
empty_full() { rm -rf "$T/full/"* "$T/full/".[!.]* 2>/dev/null; }

# expect_full NAME FRAGMENT...: exit status 1 (a failure, not a crash) and
# an "mdflow: I/O error:" line holding every fragment.
expect_full() {
    name=$1
    shift
    miss=$(missing_in_stderr "$@")
    if [ "$rc" -ne 1 ]; then
        fail "$name: exit status 1" "exit status $rc"; show stderr "$T/stderr"
    elif ! grep -E '^mdflow: I/O error: ' "$T/stderr" >/dev/null; then
        fail "$name: an 'mdflow: I/O error:' line"; show stderr "$T/stderr"
    elif [ -n "$miss" ]; then
        fail "$name: message names $*" "missing: $(echo "$miss" | tr '\n' ' ')"; show stderr "$T/stderr"
    else
        pass "$name: exit 1, $(grep -E '^mdflow: ' "$T/stderr" | head -n 1 | cut -c1-240)"
    fi
}

# clusters.xyz: twelve jittered argon clusters of 6 to 19 atoms, open boundaries.
argon_clusters 5 "13 19 8 13 6 10 13 19 8 13 6 10" 0.3 >clusters.xyz

# workflow NAME CHECKPOINT [OUTPUT...]: relax + md over the clusters, final
# structures in NAME.xyz, a checkpoint every 10 steps; more output keys may follow.
workflow() {
    name=$1 ckpt=$2
    shift 2
    extra=""
    for o in "$@"; do extra="$extra, $o"; done
    cat >"$name.yaml" <<EOF
input: clusters.xyz
model: {type: lj, shift: true}
stages:
  relax: {method: fire, fmax: 0.02, step_budget: 200}
  md: {method: langevin, dt_fs: 5, temperature_K: 20, entry_temperature_K: 20, steps: 40}
composition: relax + md
sampler: {max_atoms: 60, refill_interval: 5}
output: {structures: $name.xyz$extra}
checkpoint: {path: $ckpt, every: 10}
seed: 3
EOF
}

# ---- checkpoints -------------------------------------------------------------------
workflow ref ref.ckpt.h5
run "$MDFLOW" run ref.yaml
if [ "$rc" -ne 0 ] || [ ! -s ref.ckpt.h5 ]; then
    fail "reference run with checkpoints" "exit status $rc"; show stderr "$T/stderr"
    finish
fi
size=$(wc -c <ref.ckpt.h5)
# From "nothing fits" to "the first fits and a replacement does not" (the
# checkpoints grow as systems finish: their final frames are kept).
crashes=0 bad=0 resumed=0
for pct in 20 60 90 120 150 180; do
    empty_full
    resize $((size * pct / 100 + 4096))
    workflow "ck$pct" "$T/full/ck.h5"
    run "$MDFLOW" run "ck$pct.yaml"
    [ "$rc" -ge 128 ] && crashes=$((crashes + 1))
    if [ "$rc" -eq 0 ]; then
        fail "checkpoints on a tmpfs of $pct% of the checkpoint's size: the write must fail" "exit status 0"
        continue
    fi
    expect_full "checkpoint, tmpfs at $pct% of its size" "cannot write checkpoint '$T/full/ck.h5'" \
        "No space left on device" "free disk space"
    [ -e "$T/full/ck.h5.tmp" ] && { bad=$((bad + 1)); fail "$pct%: no temporary file left" "$T/full/ck.h5.tmp exists"; }
    if [ -e "$T/full/ck.h5" ]; then
        # Room again: the checkpoint left behind resumes to the reference's end.
        resize 64m
        run "$MDFLOW" run --resume "ck$pct.yaml"
        if [ "$rc" -eq 0 ] && cmp -s ref.xyz "ck$pct.xyz"; then resumed=$((resumed + 1))
        else bad=$((bad + 1)); fail "$pct%: the checkpoint left on the full disk resumes to the same end" \
            "exit status $rc"; show stderr "$T/stderr"; fi
    fi
done
if [ "$crashes" -eq 0 ]; then pass "checkpoints on a full disk: no crash (6 sizes)"
else fail "checkpoints on a full disk: no crash" "$crashes of 6 runs died of a signal"; fi
if [ "$bad" -eq 0 ] && [ "$resumed" -ge 2 ]; then
    pass "the checkpoint a full disk leaves is whole: $resumed resumed to the reference's final structures, byte for byte"
else fail "checkpoints left by a full disk resume" "$resumed resumed, $bad bad"; fi

# ---- the thermo file of mdflow md --------------------------------------------------------
# fill KB: the tmpfs is 64 KiB with about KB KiB free.
fill() {
    empty_full
    resize 64k
    head -c $(((64 - $1) * 1024)) /dev/zero >"$T/full/pad"
}
fill 16
echo "the previous run's thermo log" >"$T/full/thermo.txt"
run "$MDFLOW" md --input clusters.xyz --steps 2000 --thermo 1 --thermo-per-system \
    --thermo-file "$T/full/thermo.txt" --output thermo.xyz
expect_full "--thermo-file on a full disk" "thermo log '$T/full/thermo.txt'" "No space left on device" \
    "is unchanged" "$T/full/thermo.txt.tmp" "free disk space"
if [ "$(cat "$T/full/thermo.txt")" = "the previous run's thermo log" ]; then
    pass "--thermo-file on a full disk: the previous thermo log is not replaced by a truncated one"
else fail "--thermo-file on a full disk: the previous thermo log stays" "it now holds $(wc -c <"$T/full/thermo.txt") bytes"; fi
if [ ! -e thermo.xyz ] && [ -s "$T/full/thermo.txt.tmp" ] && head -n 1 "$T/full/thermo.txt.tmp" | grep -q PotEng; then
    pass "--thermo-file on a full disk: the run stopped (no output), the rows so far are in thermo.txt.tmp"
else fail "--thermo-file on a full disk: the run stops" "output written: $(ls thermo.xyz 2>&1)"; fi

# ---- the CSV log and the extxyz output of mdflow md --------------------------------------
fill 12
echo "the previous log" >"$T/full/log.csv"
run "$MDFLOW" md --input clusters.xyz --steps 2000 --quiet --log "$T/full/log.csv" --log-every 1 --output log.xyz
expect_full "--log on a full disk" "log '$T/full/log.csv'" "No space left on device" "$T/full/log.csv.tmp" \
    "free disk space"
if [ "$(cat "$T/full/log.csv")" = "the previous log" ] && [ ! -e log.xyz ] &&
    awk -F, 'NR == 1 && $1 != "step" { exit 1 } NR > 1 && NF != 8 { exit 1 }' "$T/full/log.csv.tmp"; then
    pass "--log on a full disk: the run stopped, the previous log stays, the rows so far are whole"
else fail "--log on a full disk: previous log kept, whole rows" "$(tail -n 2 "$T/full/log.csv.tmp")"; fi

fill 8
echo "the previous structures" >"$T/full/out.xyz"
run "$MDFLOW" md --input clusters.xyz --steps 5 --quiet --output "$T/full/out.xyz"
expect_full "--output on a full disk" "cannot write '$T/full/out.xyz'" "No space left on device" "free disk space" \
    "is unchanged"
if [ "$(cat "$T/full/out.xyz")" = "the previous structures" ] && [ ! -e "$T/full/out.xyz.tmp" ]; then
    pass "--output on a full disk: the previous file stays, no temporary file left"
else fail "--output on a full disk: the previous file stays" "$(ls -l "$T/full")"; fi

# ---- HDF5 outputs of mdflow run: snapshots in each form, converged, final -----------------
PY=${MDF_PYTHON:-/usr/bin/python3}
if "$PY" -c 'import h5py' 2>/dev/null; then have_h5py=1; else have_h5py=0; echo "# (no h5py: the files are read by mdflow only)"; fi
# readable.py DIR: every HDF5 file under DIR opens with h5py (SWMR); prints
# each one's committed length; exits 1 on the first that does not open.
cat >readable.py <<'EOF'
import sys, glob, h5py
out = []
for p in sorted(glob.glob(sys.argv[1] + "/*.h5*")):
    with h5py.File(p, "r", swmr=True) as f:
        n = len(f["structures/atom_ptr"]) - 1 if "structures" in f else len(f["mdflow/write_order"])
        out.append(f"{p.split('/')[-1]}:{n}")
print(" ".join(out))
EOF
for form in snap.h5 snap.h5md "snap_{id}.h5md"; do
    for sz in 300k 1m 2m; do
        empty_full
        resize $sz
        workflow h5 none.h5 "snapshots: \"$T/full/$form\"" "snapshot_every: 5" "converged: $T/full/relaxed.h5"
        sed -i '/^checkpoint:/d' h5.yaml
        run "$MDFLOW" run h5.yaml
        what="$form on a $sz tmpfs"
        if [ "$rc" -ne 1 ] || [ "$(grep -c . "$T/stderr")" -ne 1 ] || [ "$(grep -o 'free disk space' "$T/stderr" | wc -l)" -ne 1 ]; then
            fail "$what: exit 1 and one message, said once" "exit status $rc"; show stderr "$T/stderr"
            continue
        fi
        if ! grep -E "^mdflow: I/O error: .*'$T/full/[^']*'.*No space left on device" "$T/stderr" >/dev/null; then
            fail "$what: the message names the file and the cause"; show stderr "$T/stderr"; continue
        fi
        if [ "$have_h5py" = 1 ]; then
            run "$PY" readable.py "$T/full"
            if [ "$rc" -ne 0 ]; then fail "$what: every file written opens with h5py" "$(tail -n 1 "$T/stderr")"; continue; fi
            pass "$what: exit 1, one message naming the file, every file readable ($(cat "$T/stdout"))"
        else pass "$what: exit 1, one message naming the file"; fi
    done
done
# The structure file a full disk stopped is an input mdflow reads.
empty_full
resize 2m
workflow h5 none.h5 "snapshots: $T/full/snap.h5" "snapshot_every: 5"
sed -i '/^checkpoint:/d' h5.yaml
run "$MDFLOW" run h5.yaml
sed "s#^input: .*#input: $T/full/snap.h5#; s#^output: .*#output: {structures: again.xyz}#" h5.yaml >again.yaml
run "$MDFLOW" run again.yaml
if [ "$rc" -eq 0 ] && grep -E 'finished [1-9]' "$T/stdout" >/dev/null; then
    pass "the snapshots a full disk stopped are read back by mdflow ($(grep -o 'systems [0-9]*' "$T/stdout"))"
else fail "the snapshots a full disk stopped are read back by mdflow" "exit status $rc"; show stderr "$T/stderr"; fi
# Final structures at the end of a run.
empty_full
resize 16k
workflow fin none.h5
sed -i "/^checkpoint:/d; s#^output: .*#output: {structures: $T/full/final.h5}#" fin.yaml
run "$MDFLOW" run fin.yaml
expect_full "final structures (HDF5) on a full disk" "'$T/full/final.h5'" "No space left on device" "free disk space"
if [ ! -e "$T/full/final.h5" ]; then pass "final structures on a full disk: no unreadable stub left"
else fail "final structures on a full disk: no unreadable stub left" "$(ls -l "$T/full/final.h5")"; fi

finish
