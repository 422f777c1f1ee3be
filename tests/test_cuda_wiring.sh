#!/bin/sh
# The CUDA path is wired, proved without a GPU.
#
# In every build, from the sources: each CUDA entry point a codelet family
# declares (void mdf_*_cuda(...) in its *_codelet.h) is defined in its
# *_cuda.cu and registered in a `.cuda_funcs` of its *_codelet.c (directly
# or through a family macro such as MDF_THERMO_CUDA(fn)), or, for a model,
# in the `.cuda_func` of its definition (*_model.c), from which the model
# registry builds the codelet.
#
# In a build with CUDA (config.h defines MDF_USE_CUDA), from the objects:
# every mdf_*_cuda defined by a CUDA object is referenced by a codelet
# object, and the library exports them all. Until issue 21 no codelet object
# referenced any: MDF_USE_CUDA never reached the codelets, so their
# cuda_funcs compiled out and a GPU node ran everything on its CPUs.
set -u
src=${MDF_TEST_SRCDIR:?}
bld=${MDF_TEST_BUILDDIR:?}
fail=0
err() { echo "FAIL: $*"; fail=1; }

declared=""
for h in "$src"/codelets/*/*_codelet.h; do
  fam=$(dirname "$h")
  for f in $(grep -o 'void mdf_[a-z0-9_]*_cuda(' "$h" | sed 's/^void //; s/($//' | sort -u); do
    declared="$declared $f"
    grep -q "extern \"C\" void $f(" "$fam"/*_cuda.cu 2>/dev/null || err "$f is declared in $h but defined in no $fam/*_cuda.cu"
    grep -Eq "\.cuda_funcs = \{$f\}|_CUDA\($f\)|\.(aux_)?cuda_func = $f," $(ls "$fam"/*_codelet.c "$fam"/*_model.c 2>/dev/null) ||
      err "$f is declared in $h but no codelet of $fam/*_codelet.c registers it (.cuda_funcs = {$f}), nor a model definition in $fam/*_model.c (.cuda_func = $f)"
  done
done
ndeclared=$(echo $declared | wc -w)
[ "$ndeclared" -gt 0 ] || err "no CUDA entry point found in $src/codelets/*/*_codelet.h"
echo "sources: $ndeclared CUDA entry points declared, defined and registered"

if ! grep -q '^#define MDF_USE_CUDA 1' "$bld/config.h"; then
  echo "this build has no CUDA (StarPU without CUDA): object check not applicable"
  [ $fail -eq 0 ] && echo "PASS" && exit 0
  exit 1
fi

defined=$(for o in "$bld"/codelets/*/.libs/*_cuda.o; do nm "$o"; done | awk '$2 == "T" && $3 ~ /^mdf_.*_cuda$/ {print $3}' | sort -u)
referenced=$(for o in "$bld"/codelets/*/.libs/*_codelet.o "$bld"/codelets/*/.libs/*_model.o; do [ -f "$o" ] && nm "$o"; done | awk '$1 == "U" && $2 ~ /^mdf_.*_cuda$/ {print $2}' | sort -u)
exported=$(nm -D --defined-only "$bld"/.libs/libmdflow.so | awk '$3 ~ /^mdf_.*_cuda$/ {print $3}' | sort -u)
ndefined=$(echo $defined | wc -w)
[ "$ndefined" -eq "$ndeclared" ] || err "the CUDA objects define $ndefined mdf_*_cuda functions, the headers declare $ndeclared"
for f in $defined; do
  echo "$referenced" | grep -qx "$f" || err "$f is compiled but no codelet object references it (its cuda_funcs compiled out?)"
  echo "$exported" | grep -qx "$f" || err "$f is not in libmdflow.so"
done
echo "objects: $ndefined CUDA entry points compiled, $(echo $referenced | wc -w) referenced by codelets"
[ $fail -eq 0 ] && echo "PASS" && exit 0
exit 1
