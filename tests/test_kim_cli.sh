#!/bin/sh
# mdflow — the command line with the KIM API bridge: mdflow models counts and
# lists the installed KIM models, --model kim:NAME runs one (a cell narrower
# than the cutoff included), an unknown name lists close matches, an element
# the model does not cover names the system, the element and what the model
# covers, and a workflow takes model: {type: kim, name: NAME} and
# {type: kim:NAME}. Built without KIM: the messages say how to get it.
set -u

HARNESS_NAME=mdflow-kim-cli
# shellcheck source=tests/cli_harness.sh
. "${MDF_TEST_SRCDIR:-$(cd "$(dirname "$0")/.." && pwd)}/tests/cli_harness.sh"

expect_error() {
    name=$1 want=$2
    shift 2
    if [ "$rc" -eq "$want" ]; then pass "$name: exit status $want"; else
        fail "$name: exit status $want" "exit status $rc"; show stderr "$T/stderr"; fi
    miss=$(missing_in_stderr "$@")
    if [ -n "$miss" ]; then
        fail "$name: message names $*" "missing: $(echo "$miss" | tr '\n' ' ')"
        show stderr "$T/stderr"
    else
        pass "$name: message names $* ($(grep -E '^mdflow: ' "$T/stderr" | head -n 1 | cut -c1-160))"
    fi
}

# Silicon: the 2-atom primitive cell of diamond (3.84 Å across, the
# Stillinger-Weber cutoff is 3.77 Å: images out to the influence distance).
cat >si.xyz <<'XYZ'
2
Lattice="0 2.7155 2.7155 2.7155 0 2.7155 2.7155 2.7155 0" Properties=species:S:1:pos:R:3 pbc="T T T"
Si 0.02 -0.01 0.03
Si 1.40 1.36 1.35
XYZ
SW=SW_StillingerWeber_1985_Si__MO_405512056662_005
CU=EAM_Dynamo_MendelevKing_2013_Cu__MO_748636486270_005

run "$MDFLOW" models
if ! grep -q '^  kim ' "$T/stdout"; then
    # Built without KIM.
    if grep -q 'built without it' "$T/stdout"; then pass "mdflow models says kim is not built and how to get it"
    else fail "mdflow models says kim is not built"; show stdout "$T/stdout"; fi
    run "$MDFLOW" relax --input si.xyz --model kim:$SW
    expect_error "--model kim:NAME without KIM" 2 "built without KIM support" "libkim-api-dev"
    finish
fi

if grep -q 'kim:NAME.*KIM portable models are installed' "$T/stdout"; then
    pass "mdflow models: kim:NAME and the installed count ($(grep -o '[0-9]* KIM portable models are installed' "$T/stdout"))"
else fail "mdflow models: kim:NAME and the installed count"; show stdout "$T/stdout"; fi
run "$MDFLOW" models --kim
if [ "$rc" -eq 0 ] && grep -qx "kim:$SW" "$T/stdout"; then pass "mdflow models --kim lists $SW ($(wc -l <"$T/stdout") models)"
else
    echo "# $SW is not installed (openkim-models): skipping the rest"
    finish
fi
grep -qx "kim:$CU" "$T/stdout" || { echo "# $CU is not installed: skipping the rest"; finish; }

run "$MDFLOW" relax --input si.xyz --model kim:$SW --fmax 0.01 --output out.xyz
if [ "$rc" -eq 0 ] && [ "$(frames out.xyz | wc -l)" -eq 1 ]; then pass "relax --model kim:$SW of a cell narrower than the cutoff"
else fail "relax --model kim:$SW" "exit status $rc"; show stderr "$T/stderr"; fi
run "$MDFLOW" md --input si.xyz --model kim --param name=$SW --steps 20 --integrator langevin --temperature 300
if [ "$rc" -eq 0 ]; then pass "md --model kim --param name=NAME"; else fail "md --model kim --param name=NAME" "exit status $rc"; show stderr "$T/stderr"; fi

run "$MDFLOW" relax --input si.xyz --model kim:SW_StillingerWeber_1985
expect_error "an unknown KIM name" 2 "not an installed KIM portable model" "closest: $SW"
run "$MDFLOW" relax --input si.xyz --model kim:EAM_Dynamo_MendelevKing_2031_Cu
expect_error "a misspelt KIM name" 2 "closest: $CU"
run "$MDFLOW" relax --input si.xyz --model kim:$CU
expect_error "an element the model does not cover" 2 "system 0" "element Si" "kim model $CU" "covers Cu only"
run "$MDFLOW" relax --input si.xyz --model kim
expect_error "kim without a name" 2 "needs a KIM model name" "kim:NAME"

for form in "{type: kim, name: $SW}" "{type: kim:$SW}" "{type: kim, params: {name: $SW}}"; do
    cat >wf.yaml <<YAML
input: si.xyz
model: $form
stages:
  relax: {method: fire, fmax: 0.01, step_budget: 50}
composition: relax
sampler: {max_atoms: 100}
output: {structures: wf_out.xyz}
YAML
    run "$MDFLOW" run wf.yaml
    if [ "$rc" -eq 0 ] && [ "$(frames wf_out.xyz | wc -l)" -eq 1 ]; then pass "workflow model: $form"
    else fail "workflow model: $form" "exit status $rc"; show stderr "$T/stderr"; fi
done
finish
