#!/bin/sh
# mdflow — what `make install` gives a plugin author, checked from the build
# tree through `make install DESTDIR=...` into a scratch folder (the
# configured prefix is never touched):
#   every header of include/mdflow/ is installed, and each compiles alone
#   (#include <mdflow/X.h> and nothing else) with only
#   `pkg-config --cflags mdflow`, as C and as C++ (plugins may be C++ or CUDA:
#   in a CUDA build, mdflow/extension.h also in a .cu file under nvcc);
#   mdflow.pc's Requires names the StarPU package the library was built
#   against, so that those flags are complete;
#   a C and a C++ shared object that call mdf_register_model link with
#   `-shared -fPIC -Wl,--no-undefined` and `pkg-config --libs mdflow`;
#   a program linked the same way runs against the installed library, prints
#   MDFLOW_API_VERSION and loads the plugin (dlopen, RTLD_NOW);
#   the man page mdflow(1) is installed, ASCII, renders under groff -ww
#   without a warning, carries the package's version, and names every option
#   of the program's --help texts.
#
# The .pc's paths are moved into the scratch folder by rewriting its
# prefix, exec_prefix, libdir and includedir (pkg-config's --define-prefix
# would move Debian's multiarch StarPU and HDF5 too).
#
# Needs make, pkg-config, a C and a C++ compiler (CXX, default g++), nm and
# groff; skipped without.
set -u

HARNESS_NAME=mdflow-install
srcdir=${MDF_TEST_SRCDIR:-$(cd "$(dirname "$0")/.." && pwd)}
# shellcheck source=tests/cli_harness.sh
. "$srcdir/tests/cli_harness.sh"
# shellcheck source=tests/install_harness.sh
. "$srcdir/tests/install_harness.sh"

# What the library was built with (the Makefile configure wrote).
CC=$(mkvar CC)
CXX=${CXX:-g++}
starpu=$(mkvar mdf_starpu)
version=$(mkvar PACKAGE_VERSION)
# Sanitizer builds: programs linked to the library need the same flags.
link_flags="$(mkvar CFLAGS) $(mkvar LDFLAGS)"

for tool in make pkg-config "${CC%% *}" "$CXX" nm groff; do
    if ! command -v "$tool" >/dev/null 2>&1; then
        echo "SKIP: $tool not found (needed to check the installed files)"
        exit 77
    fi
done
if [ -z "$starpu" ] || [ -z "$version" ]; then
    fail "mdf_starpu and PACKAGE_VERSION are set in $builddir/Makefile" "starpu='$starpu' version='$version'"
    finish
fi

# ---- make install DESTDIR=$T/root, mdflow.pc moved there -------------------
install_scratch || finish
case " $cflags " in
*" -I$incroot "*) ;;
*) fail "pkg-config --cflags mdflow names the installed include folder $incroot" "$cflags" ;;
esac

# ---- (e) Requires: the StarPU package the library was built against ---------
requires=$(pkg-config --print-requires mdflow 2>&1)
if printf '%s\n' "$requires" | awk '{print $1}' | grep -qx "$starpu"; then
    pass "mdflow.pc Requires $starpu (what configure found)"
else
    fail "mdflow.pc Requires $starpu (what configure found)" "Requires: $requires"
fi

# ---- (a) every header installed, each compiling alone ------------------------
# Warnings from StarPU's or CUDA's headers are theirs; ours are failures.
missing=""
for h in $(cd "$srcdir/include" && find mdflow -name '*.h' | sort); do
    [ -f "$incroot/$h" ] || missing="$missing $h"
done
if [ -z "$missing" ]; then
    pass "every header of include/mdflow/ is installed"
else
    fail "every header of include/mdflow/ is installed" \
        "not installed:$missing (list them in mdflowinclude_HEADERS, Makefile.am)"
fi
# compile_alone LANG COMPILER FLAGS... : each installed header alone.
compile_alone() {
    lang=$1 ext=$2
    shift 2
    bad=""
    : >"$T/alone.log"
    for h in $(cd "$incroot" && find mdflow -name '*.h' | sort); do
        printf '#include <%s>\nint mdf_install_check;\n' "$h" >"$T/alone.$ext"
        # shellcheck disable=SC2086  # cflags is a list of words
        if ! "$@" -Wall -Wextra -c "$T/alone.$ext" -o "$T/alone.o" $cflags >"$T/alone.err" 2>&1 ||
            grep -Eq 'mdflow/[A-Za-z0-9_/]*\.h:[0-9]+(:[0-9]+)?: (warning|error)' "$T/alone.err"; then
            bad="$bad $h"
            cat "$T/alone.err" >>"$T/alone.log"
        fi
    done
    if [ -z "$bad" ]; then
        pass "every installed header compiles alone as $lang with pkg-config --cflags mdflow only"
    else
        fail "every installed header compiles alone as $lang with pkg-config --cflags mdflow only" "failed:$bad"
        show "the compiler's messages" "$T/alone.log"
    fi
}
# shellcheck disable=SC2086  # CC may hold words
compile_alone "C (the compiler's default dialect)" c $CC
# StarPU's headers need POSIX (rwlocks, barriers) under a strict -std.
# shellcheck disable=SC2086
compile_alone "C11 (-std=c11 -D_DEFAULT_SOURCE -Wpedantic)" c $CC -std=c11 -D_DEFAULT_SOURCE -Wpedantic
compile_alone "C++ ($CXX)" cc "$CXX" -Wpedantic
# A CUDA build: a plugin's .cu file includes the extension API too.
nvcc=$(mkvar NVCC)
if [ -n "$nvcc" ]; then
    printf '#include <mdflow/extension.h>\n__global__ void k(double *x) { x[0] = MDFLOW_API_VERSION; }\n' >"$T/plugin.cu"
    # shellcheck disable=SC2086
    if "$nvcc" -c "$T/plugin.cu" -o "$T/plugin_cu.o" $cflags >"$T/nvcc.err" 2>&1; then
        pass "mdflow/extension.h compiles in a .cu file ($nvcc)"
    else
        fail "mdflow/extension.h compiles in a .cu file ($nvcc)"
        show nvcc "$T/nvcc.err"
    fi
fi

# ---- (b) plugins (C and C++) link with pkg-config --libs mdflow ----------------
# The extension API's entry points must be exported (plugins link them).
defined=$(nm -D --defined-only "$lib" | awk '{print $3}')
skipped=""
for sym in mdf_register_model mdf_plugin_declare; do
    printf '%s\n' "$defined" | grep -qx "$sym" || skipped="$skipped $sym"
done
cat >"$T/plugin.c" <<'EOF'
#include <mdflow/extension.h>
static void cpu(void *buffers[], void *cl_arg)
{
    (void)buffers;
    (void)cl_arg;
    (void)starpu_worker_get_count(); /* StarPU's libs come through Requires */
}
static const mdf_model_def def = {
    .api_version = MDFLOW_API_VERSION, .name = "install_check", .summary = "test_install.sh", .cpu_func = cpu,
};
static mdf_status register_all(mdf_error *err)
{
    return mdf_register_model(&def, err);
}
MDFLOW_PLUGIN(register_all)
EOF
cat >"$T/plugin.cc" <<'EOF'
#include <mdflow/extension.h>
extern "C" mdf_status cxx_register(mdf_error *err);
mdf_status cxx_register(mdf_error *err)
{
    (void)starpu_worker_get_count();
    (void)mdf_status_name(MDF_OK);
    return mdf_register_model(nullptr, err);
}
MDFLOW_PLUGIN(cxx_register)
EOF
plugin_ok=0
if [ -n "$skipped" ]; then
    fail "libmdflow exports the extension API" "missing:$skipped"
else
    # shellcheck disable=SC2086
    if $CC -shared -fPIC -o "$T/plugin.so" "$T/plugin.c" $cflags $link_flags -Wl,--no-undefined $libs \
        >"$T/plugin.err" 2>&1; then
        pass "a C plugin (-shared -fPIC -Wl,--no-undefined) links with pkg-config --cflags --libs mdflow"
        plugin_ok=1
    else
        fail "a C plugin (-shared -fPIC -Wl,--no-undefined) links with pkg-config --cflags --libs mdflow"
        show "the compiler's messages" "$T/plugin.err"
    fi
    # shellcheck disable=SC2086
    if "$CXX" -shared -fPIC -o "$T/plugin_cxx.so" "$T/plugin.cc" $cflags $link_flags -Wl,--no-undefined $libs \
        >"$T/plugin_cxx.err" 2>&1; then
        pass "a C++ plugin links the same way (extern \"C\" declarations)"
    else
        fail "a C++ plugin links the same way (extern \"C\" declarations)"
        show "the compiler's messages" "$T/plugin_cxx.err"
    fi
fi

# ---- (c) a program runs against the installed library --------------------------
cat >"$T/prog.c" <<'EOF'
#include <dlfcn.h>
#include <stdio.h>
#include <mdflow/mdflow.h>
#include <mdflow/extension.h>
int main(int argc, char **argv)
{
    printf("MDFLOW_API_VERSION %d %s\n", MDFLOW_API_VERSION, mdf_status_name(MDF_OK));
    if (argc > 1) {
        void *h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
        if (!h || !dlsym(h, "mdflow_plugin_init")) {
            fprintf(stderr, "%s\n", dlerror());
            return 1;
        }
        printf("loaded %s\n", argv[1]);
    }
    return 0;
}
EOF
api=$(sed -n 's/^#define MDFLOW_API_VERSION \([0-9][0-9]*\).*/\1/p' "$srcdir/include/mdflow/extension.h")
# shellcheck disable=SC2086
if $CC -o "$T/prog" "$T/prog.c" $cflags $link_flags $libs -ldl >"$T/prog.err" 2>&1; then
    pass "a program links with pkg-config --cflags --libs mdflow"
    LD_LIBRARY_PATH=$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
    export LD_LIBRARY_PATH
    if [ "$plugin_ok" = 1 ]; then run "$T/prog" "$T/plugin.so"; else run "$T/prog"; fi
    if [ "$rc" -eq 0 ] && grep -qx "MDFLOW_API_VERSION $api ok" "$T/stdout"; then
        pass "it runs against the installed library and prints MDFLOW_API_VERSION $api"
    else
        fail "it runs against the installed library and prints MDFLOW_API_VERSION $api" "exit status $rc"
        show stdout "$T/stdout"
        show stderr "$T/stderr"
    fi
    if [ "$plugin_ok" = 1 ]; then
        if grep -q "^loaded " "$T/stdout"; then
            pass "it loads the plugin (RTLD_NOW: every symbol resolves)"
        else
            fail "it loads the plugin (RTLD_NOW: every symbol resolves)"
            show stderr "$T/stderr"
        fi
    fi
    loaded=$(LD_TRACE_LOADED_OBJECTS=1 "$T/prog" 2>&1 | grep 'libmdflow\.so')
    case $loaded in
    *"=> $libdir/"*) pass "the library loaded is the installed one" ;;
    *) fail "the library loaded is the installed one ($libdir)" "$loaded" ;;
    esac
else
    fail "a program links with pkg-config --cflags --libs mdflow"
    show "the compiler's messages" "$T/prog.err"
fi

# ---- (d) the man page ----------------------------------------------------------
if [ -n "$man" ]; then
    pass "mdflow(1) is installed (${man#"$root"})"
    if LC_ALL=C grep -n '[^ -~	]' "$man" >"$T/nonascii"; then
        fail "mdflow.1 is ASCII (groff escapes such as \\(oA for non-ASCII)"
        show "lines" "$T/nonascii"
    else
        pass "mdflow.1 is ASCII"
    fi
    if groff -man -Tutf8 -ww -z "$man" >"$T/groff.err" 2>&1 && [ ! -s "$T/groff.err" ]; then
        pass "groff -man -Tutf8 -ww renders it without a warning"
    else
        fail "groff -man -Tutf8 -ww renders it without a warning"
        show groff "$T/groff.err"
    fi
    if grep -q "^\\.TH MDFLOW 1 [^ ]* \"mdflow $version\"" "$man"; then
        pass "its .TH line carries mdflow $version"
    else
        fail "its .TH line carries mdflow $version" "$(grep '^\.TH' "$man")"
    fi
    # Every option the --help texts name, written \-\-name in the page.
    undocumented=""
    for cmd in "" run md relax sched; do
        # shellcheck disable=SC2086  # no command: mdflow --help
        for opt in $("$MDFLOW" $cmd --help 2>/dev/null | grep -oE -- '--[a-z][a-z0-9-]*' | sort -u); do
            esc=$(printf '%s' "$opt" | sed 's/-/\\-/g')
            grep -qF -- "$esc" "$man" || undocumented="$undocumented ${cmd:-mdflow} $opt;"
        done
    done
    if [ -z "$undocumented" ]; then
        pass "every option of mdflow --help, run --help, md --help, relax --help and sched --help is in the page"
    else
        fail "every option of the --help texts is in the page (docs/mdflow.1)" "missing:$undocumented"
    fi
fi

finish
