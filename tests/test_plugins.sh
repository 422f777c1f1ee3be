#!/bin/sh
# mdflow — plugins from the program's side: a tiny plugin, compiled here
# against the source tree's headers, registers a model, an MD method and a
# hook; the checks load it with --plugin (before or after the other
# options), MDFLOW_PLUGIN_PATH (a file or a folder) and a workflow's
# plugins: (relative to the workflow's folder), and see its entries listed
# and marked, its parameters resolved (model./method. when a name is both
# the model's and the method's), its hook created by name in a run, and the
# errors: a name registered twice, another API version.
# (examples/plugin, a real model checked against ASE, is tested on its own.)
#
# Run by automake's harness from the build tree (MDF_TEST_PLUGIN_CFLAGS: the
# compile flags for <mdflow/extension.h>); exits 77 (skipped) without a C
# compiler. Prints "ok - ..." / "not ok - ..." and "N passed, M failed".
set -u

HARNESS_NAME=mdflow-plugins
# shellcheck source=tests/cli_harness.sh
. "${MDF_TEST_SRCDIR:-$(cd "$(dirname "$0")/.." && pwd)}/tests/cli_harness.sh"
SRCDIR=${MDF_TEST_SRCDIR:-$(cd "$(dirname "$0")/.." && pwd)}
CC=${CC:-cc}
if ! command -v "$CC" >/dev/null 2>&1; then echo "# no C compiler ($CC): skipped"; exit 77; fi
CFLAGS_PLUGIN=${MDF_TEST_PLUGIN_CFLAGS:-"-I$SRCDIR/include $(pkg-config --cflags starpu-1.4 2>/dev/null || pkg-config --cflags starpu-1.3 2>/dev/null)"}

# expect_error NAME FRAGMENT...: after run, a non-zero exit (no crash) and an
# "mdflow: <kind>: <message>" line holding every fragment.
expect_error() {
    name=$1
    shift
    miss=$(missing_in_stderr "$@")
    if [ "$rc" -ne 0 ] && [ "$rc" -lt 128 ] && [ -z "$miss" ] && grep -E '^mdflow: [^:]+: ' "$T/stderr" >/dev/null; then
        pass "$name: exit $rc, $(grep -E '^mdflow: ' "$T/stderr" | head -n 1)"
    else
        fail "$name: non-zero exit, message names $*" "exit status $rc; missing: $miss"; show stderr "$T/stderr"
    fi
}
# expect_ok NAME: after run, exit status 0.
expect_ok() {
    if [ "$rc" -eq 0 ]; then pass "$1: exit 0"; else fail "$1: exit 0" "exit status $rc"; show stderr "$T/stderr"; fi
}

# ---- the plugin ---------------------------------------------------------------------
# A model "toy" (scalar D and cutoff, per-element D), an MD method "toy_nve"
# whose parameter "cutoff" is also the lj model's, and a hook "toy_wrap"
# (the built-in wrap hook under a name of its own, with a parameter).
cat >toy.c <<'EOF2'
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "mdflow/extension.h"
#ifndef TOY_MODEL
#define TOY_MODEL "toy"
#endif

typedef struct { double D, cutoff; } toy_params;
static const mdf_param_def toy_defs[] = {
    MDF_PARAM_DOUBLE(toy_params, D, 1.0, 0.0, INFINITY, MDF_PARAM_MIN_OPEN, "eV", "well depth"),
    MDF_PARAM_DOUBLE(toy_params, cutoff, 5.0, 0.0, INFINITY, MDF_PARAM_MIN_OPEN, "Å", "interaction cutoff"),
    MDF_PARAM_END};
typedef struct { double D; } toy_row;
static const mdf_param_def toy_row_defs[] = {
    MDF_PARAM_DOUBLE(toy_row, D, 1.0, 0.0, INFINITY, MDF_PARAM_MIN_OPEN, "eV", "well depth of the element"),
    MDF_PARAM_END};

static mdf_status toy_setup(const void *params, const mdf_model_species *sp, mdf_model_setup *out, mdf_error *err)
{
    (void)sp;
    const toy_params *p = params;
    out->blob = malloc(sizeof *p);
    if (!out->blob) return mdf_error_set(err, MDF_ERR_NOMEM, "no memory");
    memcpy(out->blob, p, sizeof *p);
    out->blob_size = sizeof *p;
    out->cutoff = p->cutoff;
    out->density_hint = 0.1;
    out->all_elements = 1;
    return MDF_OK;
}
static void toy_cpu(void *buffers[], void *cl_arg) { (void)buffers; (void)cl_arg; }
static const mdf_model_def toy_model = {
    .api_version = TOY_API, .name = TOY_MODEL, .summary = "a toy model of the plugin test",
    .params = toy_defs, .params_size = sizeof(toy_params),
    .species_params = toy_row_defs, .species_size = sizeof(toy_row),
    .setup = toy_setup, .cpu_func = toy_cpu, .cpu_func_name = "toy_cpu"};

typedef struct { double cutoff, tau_fs; } toy_method_params;
static const mdf_param_def toy_method_defs[] = {
    MDF_PARAM_DOUBLE(toy_method_params, cutoff, 1.0, 0.0, INFINITY, MDF_PARAM_MIN_OPEN, "Å", "a name lj takes too"),
    MDF_PARAM_DOUBLE(toy_method_params, tau_fs, 100.0, 0.0, 1000.0, MDF_PARAM_MIN_OPEN, "fs", "a relaxation time"),
    MDF_PARAM_END};
static int toy_pre(const mdf_method_ctx *c) { (void)c; return 0; }
static const mdf_method toy_method = {
    .api_version = TOY_API, .name = "toy_nve", .summary = "a toy method of the plugin test",
    .params = toy_method_defs, .params_size = sizeof(toy_method_params), .pre_update = toy_pre};

typedef struct { int32_t every; } toy_hook_params;
static const mdf_param_def toy_hook_defs[] = {
    MDF_PARAM_INT(toy_hook_params, every, 10, 1, 1000000, "steps", "wrap every N steps"), MDF_PARAM_END};
static mdf_status toy_hook_create(const void *params, mdf_hook **out, mdf_error *err)
{
    return mdf_hook_create_wrap(((const toy_hook_params *)params)->every, out, err);
}
static const mdf_hook_def toy_hook = {
    .api_version = TOY_API, .name = "toy_wrap", .summary = "wraps positions (plugin test)",
    .params = toy_hook_defs, .params_size = sizeof(toy_hook_params), .create = toy_hook_create};

static mdf_status register_all(mdf_error *err)
{
    mdf_status st = mdf_register_model(&toy_model, err);
    if (st == MDF_OK) st = mdf_register_method(&toy_method, err);
    return st != MDF_OK ? st : mdf_register_hook(&toy_hook, err);
}
MDFLOW_PLUGIN(register_all)
EOF2
mkdir -p plugdir sub
# shellcheck disable=SC2086 # CFLAGS_PLUGIN is a list of flags
if ! "$CC" -std=c11 -D_DEFAULT_SOURCE -shared -fPIC -DTOY_API=MDFLOW_API_VERSION $CFLAGS_PLUGIN -o toy.so toy.c 2>cc.err; then
    fail "the test plugin compiles against the source tree's headers" "$(head -n 5 cc.err)"
    finish
fi
pass "the test plugin compiles against the source tree's headers"
cp toy.so plugdir/toy.so
cp toy.so toy-copy.so
cp toy.so sub/toy.so
# shellcheck disable=SC2086
"$CC" -std=c11 -D_DEFAULT_SOURCE -shared -fPIC -DTOY_API=99 $CFLAGS_PLUGIN -o old-api.so toy.c 2>>cc.err
# shellcheck disable=SC2086
"$CC" -std=c11 -D_DEFAULT_SOURCE -shared -fPIC -DTOY_API=MDFLOW_API_VERSION '-DTOY_MODEL="lj"' $CFLAGS_PLUGIN \
    -o lj-again.so toy.c 2>>cc.err

printf '2\nProperties=species:S:1:pos:R:3 pbc="F F F"\nAr 0 0 0\nAr 3.8 0 0\n' >pair.xyz

# ---- listings -------------------------------------------------------------------------
run "$MDFLOW" models --plugin toy.so
if [ "$rc" -eq 0 ] && grep -E '^  toy +a toy model.*\[plugin .*/toy\.so\]' "$T/stdout" >/dev/null \
    && grep -E '^ +D +well depth \(default 1; \(0, inf\) eV\)' "$T/stdout" >/dev/null \
    && grep -E '^  lj ' "$T/stdout" | grep -v -F '[plugin' >/dev/null; then
    pass "mdflow models --plugin: the plugin's model, marked with its file, with its parameters; lj unmarked"
else
    fail "mdflow models --plugin: the plugin's model, marked, with its parameters" "exit status $rc"; show stdout "$T/stdout"
fi
run "$MDFLOW" methods --plugin toy.so
if [ "$rc" -eq 0 ] && grep -E '^  toy_nve +a toy method.*\[plugin .*/toy\.so\]' "$T/stdout" >/dev/null \
    && grep -E '^ +tau_fs +a relaxation time \(default 100; \(0, 1000\] fs\)' "$T/stdout" >/dev/null \
    && ! grep -E '^  fire ' "$T/stdout" | grep -F '[plugin' >/dev/null; then
    pass "mdflow methods --plugin: the plugin's method, marked with its file, with its parameters"
else
    fail "mdflow methods --plugin: the plugin's method, marked, with its parameters" "exit status $rc"; show stdout "$T/stdout"
fi
run env MDFLOW_PLUGIN_PATH="$T/plugdir" "$MDFLOW" methods
if [ "$rc" -eq 0 ] && grep -E '^  toy_nve .*plugdir/toy\.so' "$T/stdout" >/dev/null; then
    pass "MDFLOW_PLUGIN_PATH naming a folder: its plugin's method is listed"
else fail "MDFLOW_PLUGIN_PATH naming a folder: its plugin's method is listed" "exit status $rc"; show stdout "$T/stdout"; fi
run env MDFLOW_PLUGIN_PATH="$T/toy.so:$T/plugdir/missing.so" "$MDFLOW" models
expect_error "MDFLOW_PLUGIN_PATH with a bad second entry" "MDFLOW_PLUGIN_PATH" "$T/plugdir/missing.so"

# ---- parameters: the plugin's model and method on the command line ------------------------
# (nothing runs: each case fails while the options are resolved, or says what it resolved to)
run "$MDFLOW" md --input pair.xyz --integrator toy_nve --temperature 10 --param cutoff=5 --plugin toy.so
expect_error "--param of a name both the model and the method take (--plugin after it)" "both model lj and method toy_nve" \
    "--param model.cutoff=5" "--param method.cutoff=5"
run "$MDFLOW" md --plugin toy.so --input pair.xyz --integrator toy_nve --temperature 10 --param method.cutoff=-1
expect_error "--param method.cutoff goes to the method" "parameter cutoff of method toy_nve" "(0, inf) Å"
run "$MDFLOW" md --plugin toy.so --input pair.xyz --integrator toy_nve --temperature 10 --param model.cutoff=-1
expect_error "--param model.cutoff goes to the model" "parameter cutoff of model lj" "[0, inf) Å"
run "$MDFLOW" md --plugin toy.so --input pair.xyz --integrator toy_nve --temperature 10 --param tau_fs=2000
expect_error "--param of the plugin method's parameter out of range" "tau_fs" "method toy_nve" "(0, 1000] fs"
run "$MDFLOW" md --plugin toy.so --input pair.xyz --model toy --param D=-0.5
expect_error "--param of the plugin model's parameter out of range" "parameter D of model toy" "(0, inf) eV"
run "$MDFLOW" md --plugin toy.so --input pair.xyz --model toy --param frobnicate=1
expect_error "--param unknown with a plugin's model" "unknown parameter 'frobnicate'" "model toy takes D, cutoff" \
    "method velocity_verlet takes none"
run "$MDFLOW" md --plugin toy.so --input pair.xyz --model toy --lj-epsilon 0.01
expect_error "--lj-epsilon with another model" "--lj-epsilon is for --model lj" "model toy" "--param"

# ---- errors of loading ------------------------------------------------------------------
run "$MDFLOW" models --plugin toy.so --plugin toy-copy.so
expect_error "two plugins registering one name" "toy-copy.so" "toy.so" "already registered" "rename"
run "$MDFLOW" models --plugin toy.so --plugin toy.so
expect_ok "the same plugin twice (loaded once)"
run "$MDFLOW" models --plugin lj-again.so
expect_error "a plugin registering a built-in's name" "lj-again.so" "model named 'lj'" "already registered"
if [ -f old-api.so ]; then
    run "$MDFLOW" methods --plugin old-api.so
    expect_error "a plugin of another API version" "old-api.so" "API version 99" "rebuild"
fi

# ---- a workflow's plugins: ---------------------------------------------------------------
# Relative to the workflow's folder (sub/), loaded before the model and the
# stages are read: the plugin's model and its hook by name.
cp pair.xyz sub/pair.xyz
cat >sub/toy.yaml <<'EOF2'
input: pair.xyz
plugins: [toy.so]
model: {type: toy, params: {D: 0.5}, cutoff: 6, species: [{element: Ar, D: 0.7}]}
stages:
  md: {method: velocity_verlet, dt_fs: 1, steps: 5, hooks: [{type: toy_wrap, params: {every: 2}}]}
sampler: {max_atoms: 10}
EOF2
run "$MDFLOW" run --check sub/toy.yaml
expect_ok "mdflow run --check: plugins: [toy.so] beside the workflow, model type toy, a hook toy_wrap"
sed 's/D: 0.5/D: -1/' sub/toy.yaml >sub/toy-bad.yaml
run "$MDFLOW" run --check sub/toy-bad.yaml
expect_error "the plugin model's parameter out of range, with the line" "sub/toy-bad.yaml:3:" "parameter D of model toy"
sed 's/every: 2/every: 0/' sub/toy.yaml >sub/toy-hook.yaml
run "$MDFLOW" run --check sub/toy-hook.yaml
expect_error "the plugin hook's parameter out of range, with the line" "sub/toy-hook.yaml:5:" "parameter every of hook toy_wrap" \
    "[1, 1000000]"
sed 's/type: toy_wrap/type: toy_wrp/' sub/toy.yaml >sub/toy-hook2.yaml
run "$MDFLOW" run --check sub/toy-hook2.yaml
expect_error "an unknown hook type, with the line" "sub/toy-hook2.yaml:5:" "toy_wrp" "toy_wrap"
sed 's/plugins: \[toy.so\]/plugins: [toy.so, ..\/toy-copy.so]/' sub/toy.yaml >sub/toy-dup.yaml
run "$MDFLOW" run --check sub/toy-dup.yaml
expect_error "plugins: two registering one name, with the line" "sub/toy-dup.yaml:2:" "toy-copy.so" "already registered"
sed '/^plugins:/d' sub/toy.yaml >sub/toy-noplugin.yaml
run "$MDFLOW" run --check sub/toy-noplugin.yaml
expect_error "the plugin's model without plugins:" "sub/toy-noplugin.yaml:2:" "unknown model 'toy'"
run "$MDFLOW" run --check --plugin toy.so sub/toy-noplugin.yaml
expect_ok "mdflow run --plugin toy.so: the same workflow without plugins:"
# A hook by name acts in a run: toy_wrap (the wrap hook) every 2 steps puts
# an atom moved out of a periodic cell back inside, as hooks: wrap_every does.
printf '2\nLattice="10 0 0 0 10 0 0 0 10" Properties=species:S:1:pos:R:3:velocities:R:3 pbc="T T T"\nAr 9.9 5 5 0.5 0 0\nAr 5 5 5 0 0 0\n' >box.xyz
cat >wrap.yaml <<'EOF2'
input: box.xyz
plugins: [toy.so]
model: {type: lj, cutoff: 4}
stages:
  md: {method: velocity_verlet, dt_fs: 1, steps: 4, hooks: [{type: toy_wrap, params: {every: 2}}]}
sampler: {max_atoms: 10}
output: {structures: wrapped.xyz}
EOF2
sed 's/, hooks: .*}$/}/; s/wrapped.xyz/unwrapped.xyz/' wrap.yaml >nowrap.yaml
run "$MDFLOW" run wrap.yaml
rc_wrap=$rc
run "$MDFLOW" run nowrap.yaml
x_wrap=$(awk 'NR == 3 { print $2 }' wrapped.xyz 2>/dev/null)
x_nowrap=$(awk 'NR == 3 { print $2 }' unwrapped.xyz 2>/dev/null)
if [ "$rc_wrap" -eq 0 ] && [ "$rc" -eq 0 ] && awk -v a="$x_wrap" -v b="$x_nowrap" 'BEGIN { exit !(a >= 0 && a < 10 && b >= 10) }'; then
    pass "a stage's hook by name (toy_wrap from the plugin) wraps the atom: x = $x_wrap, $x_nowrap without it"
else
    fail "a stage's hook by name (toy_wrap from the plugin) wraps the atom" "exit statuses $rc_wrap, $rc; x = '$x_wrap', without the hook '$x_nowrap'"
    show stderr "$T/stderr"
fi

finish
