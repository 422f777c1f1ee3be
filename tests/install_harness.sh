# mdflow — installing the build into a scratch folder, for the tests that
# use mdflow as an installed package (sourced after cli_harness.sh, which
# gives T, builddir, pass, fail and show).
#
# install_scratch runs `make install DESTDIR=$T/root` from the build tree
# and writes a copy of the installed mdflow.pc whose prefix, exec_prefix,
# libdir and includedir point into $T/root (pkg-config's --define-prefix
# would move Debian's multiarch StarPU and HDF5 too), first on
# PKG_CONFIG_PATH, with the PKG_CONFIG_PATH configure saw (a CUDA build's
# StarPU). It sets root, pcfile, lib, libdir, incroot (the folder holding
# mdflow/), man, bin (the installed mdflow), cflags and libs (pkg-config
# --cflags/--libs mdflow), and returns 1 after reporting what failed.

# A variable of the build's Makefile (what configure wrote).
mkvar() { sed -n "s/^$1 = //p" "$builddir/Makefile" | head -n 1; }

install_scratch() {
    # The suite's make passes its jobserver in MAKEFLAGS: this make is separate.
    unset MAKEFLAGS MFLAGS MAKELEVEL
    root=$T/root
    if make -C "$builddir" install DESTDIR="$root" >"$T/install.log" 2>&1; then
        pass "make install DESTDIR=\$T/root"
    else
        fail "make install DESTDIR=\$T/root"
        show "make install" "$T/install.log"
        return 1
    fi
    pcfile=$(find "$root" -name mdflow.pc -path '*/pkgconfig/*' | head -n 1)
    man=$(find "$root" -name mdflow.1 -path '*/man1/*' | head -n 1)
    lib=$(find "$root" -name libmdflow.so | head -n 1)
    bin=$(find "$root" -name mdflow -path '*/bin/*' -type f | head -n 1)
    incroot=$(find "$root" -type d -name mdflow -path '*/include/mdflow' | head -n 1)
    for what in pcfile lib incroot man bin; do
        eval "v=\$$what"
        if [ -z "$v" ]; then
            fail "make install installs the $what"
            (cd "$root" && find . | sort) >"$T/installed"
            show "installed" "$T/installed"
        fi
    done
    if [ -z "$pcfile" ] || [ -z "$lib" ] || [ -z "$incroot" ] || [ -z "$bin" ]; then return 1; fi
    incroot=$(dirname "$incroot")
    libdir=$(dirname "$lib")
    mkdir -p "$T/pkgconfig"
    sed -E "s#^(prefix|exec_prefix|libdir|includedir)=/#\\1=$root/#" "$pcfile" >"$T/pkgconfig/mdflow.pc"
    build_pc_path=$(mkvar PKG_CONFIG_PATH)
    PKG_CONFIG_PATH=$T/pkgconfig${build_pc_path:+:$build_pc_path}${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}
    export PKG_CONFIG_PATH
    unset PKG_CONFIG_SYSROOT_DIR
    if cflags=$(pkg-config --cflags mdflow 2>"$T/pc.err") && libs=$(pkg-config --libs mdflow 2>>"$T/pc.err"); then
        pass "pkg-config --cflags --libs mdflow: $cflags $libs"
    else
        fail "pkg-config --cflags --libs mdflow"
        show pkg-config "$T/pc.err"
        show mdflow.pc "$T/pkgconfig/mdflow.pc"
        return 1
    fi
}
