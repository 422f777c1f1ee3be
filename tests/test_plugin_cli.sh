#!/bin/sh
# The example plugin as a user builds and loads it: mdflow installed into a
# scratch prefix, examples/plugin copied out of the tree and built by its
# own Makefile with pkg-config only, then loaded by the installed mdflow
# from the command line (--plugin), a workflow (plugins:) and
# MDFLOW_PLUGIN_PATH.
#   - Morse energies, forces and virials of random clusters and periodic
#     crystals against ASE's MorsePotential (tests/morse_ase_check.py) to
#     1e-10 relative, with and without shift, from the CLI and a workflow;
#   - Berendsen MD of argon crystals started at 180 K with a 60 K target:
#     the mean temperature of the second half within 3% of 60 K (NVE from
#     that start equilibrates near 90 K).
# Skipped (77) without make, pkg-config, a C compiler or ASE.
set -u

HARNESS_NAME=mdflow-plugin-cli
srcdir=${MDF_TEST_SRCDIR:-$(cd "$(dirname "$0")/.." && pwd)}
# shellcheck source=tests/cli_harness.sh
. "$srcdir/tests/cli_harness.sh"
# shellcheck source=tests/install_harness.sh
. "$srcdir/tests/install_harness.sh"

PY=${MDF_PYTHON:-/usr/bin/python3}
CC=$(mkvar CC)
for tool in make pkg-config "${CC%% *}" "$PY"; do
    command -v "$tool" >/dev/null 2>&1 || { echo "SKIP: $tool not found"; exit 77; }
done
"$PY" -c 'import ase, numpy' 2>/dev/null || { echo "SKIP: no ASE for $PY"; exit 77; }

install_scratch || finish
# The installed program finds the installed library (its rpath names the
# prefix without DESTDIR).
LD_LIBRARY_PATH=$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export LD_LIBRARY_PATH

# ---- the template, built out of tree -------------------------------------------
cp -R "$srcdir/examples/plugin" "$T/plugin"
chmod -R u+w "$T/plugin"
rm -f "$T/plugin"/*.so "$T/plugin"/*.o
lines=$(grep -Ecv '^[[:space:]]*(#|$)' "$T/plugin/Makefile")
if [ "$lines" -le 15 ]; then pass "the template's Makefile is $lines lines (comments aside)"; else fail "the template's Makefile is 15 lines" "$lines lines"; fi
if grep -q 'pkg-config --cflags mdflow' "$T/plugin/Makefile" && ! grep -Eq -- '-[IL]/|/work|builddir|\.\./' "$T/plugin/Makefile"; then
    pass "the Makefile finds mdflow through pkg-config only"
else
    fail "the Makefile finds mdflow through pkg-config only"
fi
# Sanitizer builds: the plugin runs inside an instrumented program.
if make -C "$T/plugin" CC="$CC" CFLAGS="-O2 $(mkvar CFLAGS)" LDFLAGS="$(mkvar LDFLAGS)" >"$T/plugin.log" 2>&1; then
    pass "make in the copied examples/plugin builds mdflow-example-plugin.so"
else
    fail "make in the copied examples/plugin"
    show "make" "$T/plugin.log"
    finish
fi
so=$T/plugin/mdflow-example-plugin.so

# ---- Morse from the CLI ----------------------------------------------------------
D=0.5 A=1.4 R0=2.9 RC=6.0
"$PY" "$srcdir/tests/morse_ase_check.py" gen "$T/in.xyz" "$R0" "$RC" >/dev/null || {
    fail "morse_ase_check.py gen"
    finish
}
check_morse() { # check_morse WHAT FILE SHIFT
    if "$PY" "$srcdir/tests/morse_ase_check.py" check "$2" "$D" "$A" "$R0" "$RC" "$3" >"$T/check.out" 2>&1; then
        pass "$1: $(tail -n 1 "$T/check.out")"
    else
        fail "$1 agrees with ASE's MorsePotential"
        show "morse_ase_check.py" "$T/check.out"
    fi
}
for shift in 0 1; do
    run "$bin" md --plugin "$so" --model morse --param D=$D --param a=$A --param r0=$R0 --param cutoff=$RC \
        --param shift=$shift --input "$T/in.xyz" --steps 0 --output "$T/cli$shift.xyz" --quiet
    if [ "$rc" -eq 0 ]; then
        check_morse "mdflow md --plugin ... --model morse (shift $shift)" "$T/cli$shift.xyz" $shift
    else
        fail "mdflow md --plugin ... --model morse (shift $shift) exits 0" "exit $rc"
        show stderr "$T/stderr"
    fi
done

# ---- Morse from a workflow (plugins: and input relative to the file, outputs
# to the current directory) --------------------------------------------------------
mkdir -p "$T/wf/lib"
cp "$so" "$T/wf/lib/"
cp "$T/in.xyz" "$T/wf/"
cat >"$T/wf/morse.yaml" <<EOF
plugins: [lib/mdflow-example-plugin.so]
input: in.xyz
model:
  type: morse
  params: {D: $D, a: $A, r0: $R0, cutoff: $RC}
stages:
  once:
    method: fire
    fmax: 1.0e9
sampler:
  max_atoms: 20000
output:
  structures: out.xyz
EOF
run "$bin" run "$T/wf/morse.yaml"
if [ "$rc" -eq 0 ]; then
    check_morse "mdflow run with plugins: [lib/mdflow-example-plugin.so]" "$T/out.xyz" 0
else
    fail "mdflow run with plugins: exits 0" "exit $rc"
    show stderr "$T/stderr"
fi

# ---- MDFLOW_PLUGIN_PATH -------------------------------------------------------------
MDFLOW_PLUGIN_PATH=$T/wf/lib run "$bin" models
if [ "$rc" -eq 0 ] && grep -q '^ *morse' "$T/stdout" && grep -q 'mdflow-example-plugin.so' "$T/stdout"; then
    pass "MDFLOW_PLUGIN_PATH=DIR: mdflow models lists morse, marked with its file"
else
    fail "MDFLOW_PLUGIN_PATH=DIR: mdflow models lists morse" "exit $rc"
    show stdout "$T/stdout"
fi
MDFLOW_PLUGIN_PATH=$so run "$bin" methods
if [ "$rc" -eq 0 ] && grep -q '^ *berendsen' "$T/stdout" && grep -q 'tau_fs' "$T/stdout"; then
    pass "MDFLOW_PLUGIN_PATH=FILE: mdflow methods lists berendsen and its tau_fs"
else
    fail "MDFLOW_PLUGIN_PATH=FILE: mdflow methods lists berendsen" "exit $rc"
    show stdout "$T/stdout"
fi

# ---- Berendsen from the CLI ------------------------------------------------------------
"$PY" - "$T/hot.xyz" <<'EOF' || { fail "writing hot argon crystals"; finish; }
import sys
import numpy as np
from ase.build import bulk
from ase.io import write
from ase.md.velocitydistribution import MaxwellBoltzmannDistribution, Stationary
frames = []
for k in range(8):
    a = bulk("Ar", "fcc", a=5.26, cubic=True).repeat((3, 3, 3))
    MaxwellBoltzmannDistribution(a, temperature_K=180.0, rng=np.random.default_rng(k))
    Stationary(a)
    frames.append(a)
write(sys.argv[1], frames, format="extxyz")
EOF
run "$bin" md --plugin "$so" --integrator berendsen --param tau_fs=100 --temperature 60 --keep-velocities \
    --model lj --lj-cutoff 6.5 --input "$T/hot.xyz" --steps 3000 --dt 5 --log "$T/berendsen.csv" --log-every 10 --quiet
if [ "$rc" -eq 0 ]; then
    mean=$(awk -F, 'NR > 1 && $1 >= 1500 { s += $6; n++ } END { if (n) printf "%.3f", s / n }' "$T/berendsen.csv")
    if [ -n "$mean" ] && awk -v m="$mean" 'BEGIN { exit !(m > 58.2 && m < 61.8) }'; then
        pass "berendsen (tau 100 fs, target 60 K) from 180 K: mean temperature $mean K over steps 1500-3000"
    else
        fail "berendsen holds 60 K within 3%" "mean temperature '$mean' K over steps 1500-3000"
        show log "$T/berendsen.csv"
    fi
else
    fail "mdflow md --plugin ... --integrator berendsen exits 0" "exit $rc"
    show stderr "$T/stderr"
fi
finish
