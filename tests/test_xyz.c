/* Tests of io/xyz.c, io/frame.c and io/elements.c: extended XYZ reading and
 * writing, error messages, and the frame helpers they rely on. */
#define _XOPEN_SOURCE 700
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mdflow/frame.h"
#include "mdflow/xyz.h"
#include "testutil.h"
#include "../io/real_text.h"

/* ------------------------------------------------------------------------ */
/* Fixtures                                                                  */

static char tmpdir[256];

static int setup_dir(void **state)
{
    (void)state;
    snprintf(tmpdir, sizeof tmpdir, "/tmp/mdf_test_xyz_XXXXXX");
    return mkdtemp(tmpdir) ? 0 : -1;
}

static int teardown_dir(void **state)
{
    (void)state;
    return tu_remove_tree(tmpdir);
}

/* Path of name inside the test directory (a static buffer per call slot, so
 * two paths can be alive at once). */
static const char *path_of(const char *name)
{
    static char buf[4][512];
    static int slot;
    slot = (slot + 1) % 4;
    snprintf(buf[slot], sizeof buf[slot], "%s/%s", tmpdir, name);
    return buf[slot];
}

static const char *write_text(const char *name, const char *text)
{
    const char *p = path_of(name);
    FILE *fp = fopen(p, "wb");
    assert_non_null(fp);
    fputs(text, fp);
    assert_int_equal(fclose(fp), 0);
    return p;
}

static int file_exists(const char *p)
{
    return access(p, F_OK) == 0;
}

static int same_bytes(const char *a, const char *b)
{
    FILE *fa = fopen(a, "rb"), *fb = fopen(b, "rb");
    int same = fa && fb;
    while (same) {
        int ca = fgetc(fa), cb = fgetc(fb);
        same = ca == cb;
        if (ca == EOF) break;
    }
    if (fa) fclose(fa);
    if (fb) fclose(fb);
    return same;
}

/* Reads text (written to a file called name) and expects success. */
static void read_ok(const char *name, const char *text, mdf_frame_list *l)
{
    mdf_error err;
    mdf_error_clear(&err);
    mdf_frame_list_init(l);
    mdf_status st = mdf_xyz_read(write_text(name, text), l, &err);
    if (st != MDF_OK) print_error("unexpected error: %s\n", err.message);
    assert_int_equal(st, MDF_OK);
}

/* Reads text and expects status, a message naming "bad.xyz:line:" and
 * containing needle. */
static void read_fails(const char *text, mdf_status status, int line, const char *needle)
{
    mdf_frame_list l;
    mdf_error err;
    mdf_error_clear(&err);
    mdf_frame_list_init(&l);
    const char *p = write_text("bad.xyz", text);
    mdf_status st = mdf_xyz_read(p, &l, &err);
    char where[600];
    snprintf(where, sizeof where, "%s:%d:", p, line);
    if (st != status || !strstr(err.message, where) || !strstr(err.message, needle))
        print_error("status %d, message: %s\n  wanted status %d, '%s' and '%s'\n", st,
                    err.message, status, where, needle);
    assert_int_equal(st, status);
    assert_non_null(strstr(err.message, where));
    assert_non_null(strstr(err.message, needle));
    mdf_frame_list_free(&l);
}

/* ------------------------------------------------------------------------ */
/* Reading                                                                   */

static void test_single_frame(void **state)
{
    (void)state;
    mdf_frame_list l;
    read_ok("single.xyz",
            "3\n"
            "Properties=species:S:1:pos:R:3 energy=-12.5\n"
            "O 0.0 0.0 0.119262\n"
            "H 0.0 0.763239 -0.477047\n"
            "H 0.0 -0.763239 -0.477047\n",
            &l);
    assert_int_equal(l.count, 1);
    const mdf_frame *f = &l.frames[0];
    assert_int_equal(f->natoms, 3);
    assert_int_equal(f->numbers[0], 8);
    assert_int_equal(f->numbers[1], 1);
    assert_int_equal(f->numbers[2], 1);
    assert_true(f->positions[2] == 0.119262);
    assert_true(f->positions[4] == 0.763239);
    assert_true(f->positions[8] == -0.477047);
    assert_true(f->has_energy);
    assert_true(f->energy == -12.5);
    assert_false(f->has_cell);
    assert_int_equal(f->pbc[0] + f->pbc[1] + f->pbc[2], 0);
    assert_null(f->velocities);
    assert_null(f->forces);
    assert_null(f->masses);
    assert_int_equal(f->ninfo, 0);
    assert_int_equal(f->nextra, 0);
    mdf_frame_list_free(&l);
}

static void test_multi_frame_crlf_blank_lines(void **state)
{
    (void)state;
    mdf_frame_list l;
    read_ok("multi.xyz",
            "1\r\n"
            "step=0\r\n"
            "Ar 0 0 0\r\n"
            "\r\n"
            "2\r\n"
            "step=1\r\n"
            "Ar 1 0 0\r\n"
            "Ar 0 1 0\r\n"
            "0\r\n"
            "step=2\r\n"
            "\r\n"
            "   \n",
            &l);
    assert_int_equal(l.count, 3);
    assert_int_equal(l.frames[0].natoms, 1);
    assert_int_equal(l.frames[1].natoms, 2);
    assert_int_equal(l.frames[2].natoms, 0);
    assert_string_equal(mdf_frame_get_info(&l.frames[0], "step"), "0");
    assert_string_equal(mdf_frame_get_info(&l.frames[1], "step"), "1");
    assert_string_equal(mdf_frame_get_info(&l.frames[2], "step"), "2");
    assert_true(l.frames[1].positions[4] == 1.0);
    assert_int_equal(l.frames[1].numbers[1], 18);
    mdf_frame_list_free(&l);
}

static void test_read_appends_to_list(void **state)
{
    (void)state;
    mdf_frame_list l;
    read_ok("one.xyz", "1\n\nHe 0 0 0\n", &l);
    mdf_error err;
    mdf_error_clear(&err);
    assert_int_equal(mdf_xyz_read(path_of("one.xyz"), &l, &err), MDF_OK);
    assert_int_equal(l.count, 2);
    assert_int_equal(l.frames[1].numbers[0], 2);
    mdf_frame_list_free(&l);
}

static void test_lattice_pbc_info_extra(void **state)
{
    (void)state;
    mdf_frame_list l;
    read_ok("ext.xyz",
            "2\n"
            "Lattice=\"5.0 0.1 0.2 0.3 6.0 0.4 0.5 0.6 7.0\" "
            "Properties=species:S:1:pos:R:3:tags:I:1:charge:R:1:fixed:L:3:label:S:1 "
            "energy=-3.25 note=\"hello world\" temperature=300.5 flag "
            "quoted=\"say \\\"hi\\\"\" arr={1 2 3} eq = spaced a=b=c\n"
            "Si 0 0 0 7 -0.5 T F T first\n"
            "Si 1.35 1.35 1.35 8 0.5 F F F second\n",
            &l);
    assert_int_equal(l.count, 1);
    const mdf_frame *f = &l.frames[0];
    double cell[9] = {5.0, 0.1, 0.2, 0.3, 6.0, 0.4, 0.5, 0.6, 7.0};
    assert_true(f->has_cell);
    assert_memory_equal(f->cell, cell, sizeof cell);
    /* ASE: Lattice without pbc means periodic in all directions. */
    assert_int_equal(f->pbc[0], 1);
    assert_int_equal(f->pbc[1], 1);
    assert_int_equal(f->pbc[2], 1);
    assert_true(f->has_energy && f->energy == -3.25);
    assert_string_equal(mdf_frame_get_info(f, "note"), "hello world");
    assert_string_equal(mdf_frame_get_info(f, "temperature"), "300.5");
    assert_string_equal(mdf_frame_get_info(f, "flag"), "T");
    assert_string_equal(mdf_frame_get_info(f, "quoted"), "say \"hi\"");
    assert_string_equal(mdf_frame_get_info(f, "arr"), "1 2 3");
    assert_string_equal(mdf_frame_get_info(f, "eq"), "spaced");
    assert_string_equal(mdf_frame_get_info(f, "a"), "b=c");
    assert_null(mdf_frame_get_info(f, "energy"));
    assert_null(mdf_frame_get_info(f, "Lattice"));
    assert_null(mdf_frame_get_info(f, "Properties"));
    assert_int_equal(f->ninfo, 7);
    /* Extra columns in file order, tokens verbatim. */
    assert_int_equal(f->nextra, 4);
    assert_string_equal(f->extra[0].name, "tags");
    assert_int_equal(f->extra[0].type, 'I');
    assert_int_equal(f->extra[0].ncols, 1);
    assert_string_equal(f->extra[0].tokens[1], "8");
    assert_string_equal(f->extra[1].name, "charge");
    assert_string_equal(f->extra[1].tokens[0], "-0.5");
    assert_string_equal(f->extra[2].name, "fixed");
    assert_int_equal(f->extra[2].type, 'L');
    assert_int_equal(f->extra[2].ncols, 3);
    assert_string_equal(f->extra[2].tokens[0], "T");
    assert_string_equal(f->extra[2].tokens[1], "F");
    assert_string_equal(f->extra[2].tokens[5], "F");
    assert_string_equal(f->extra[3].tokens[1], "second");
    assert_true(f->positions[3] == 1.35);
    mdf_frame_list_free(&l);
}

static void test_pbc_spellings(void **state)
{
    (void)state;
    mdf_frame_list l;
    read_ok("pbc.xyz",
            "1\nLattice=\"4 0 0 0 4 0 0 0 4\" pbc=\"T T F\"\nC 0 0 0\n"
            "1\nLattice=\"4 0 0 0 4 0 0 0 4\" pbc=\"True False True\"\nC 0 0 0\n"
            "1\npbc=\"1 0 1\"\nC 0 0 0\n"
            "1\nLattice=\"4 0 0 0 4 0 0 0 4\" pbc=F\nC 0 0 0\n",
            &l);
    assert_int_equal(l.count, 4);
    int want[4][3] = {{1, 1, 0}, {1, 0, 1}, {1, 0, 1}, {0, 0, 0}};
    for (int i = 0; i < 4; i++)
        for (int k = 0; k < 3; k++) assert_int_equal(l.frames[i].pbc[k], want[i][k]);
    assert_false(l.frames[2].has_cell);
    mdf_frame_list_free(&l);
}

static void test_plain_xyz(void **state)
{
    (void)state;
    mdf_frame_list l;
    read_ok("plain.xyz",
            "2\n"
            "Mike's water: \"really\" {not extxyz}\n"
            "O 0 0 0\n"
            "H 0.9572 0 0\n"
            "1\n"
            "\n"
            "h 1 2 3\n",
            &l);
    assert_int_equal(l.count, 2);
    assert_int_equal(l.frames[0].ninfo, 0);
    assert_false(l.frames[0].has_cell);
    assert_false(l.frames[0].has_energy);
    assert_int_equal(l.frames[0].numbers[1], 1);
    assert_true(l.frames[0].positions[3] == 0.9572);
    /* ASE capitalises symbols when reading. */
    assert_int_equal(l.frames[1].numbers[0], 1);
    mdf_frame_list_free(&l);
}

static void test_momenta_and_masses(void **state)
{
    (void)state;
    mdf_frame_list l;
    read_ok("momenta.xyz",
            "2\n"
            "Properties=species:S:1:pos:R:3:momenta:R:3\n"
            "Cu 0 0 0 1.5 -0.3 0.7\n"
            "H 1 1 1 0.1 0.2 0.3\n"
            "2\n"
            "Properties=species:S:1:pos:R:3:momenta:R:3:masses:R:1\n"
            "Cu 0 0 0 1.5 -0.3 0.7 2.5\n"
            "H 1 1 1 0.1 0.2 0.3 2.0\n",
            &l);
    assert_int_equal(l.count, 2);
    const mdf_frame *f = &l.frames[0];
    assert_non_null(f->velocities);
    assert_null(f->masses);
    double mcu = mdf_element_mass(29), mh = mdf_element_mass(1);
    assert_true(f->velocities[0] == 1.5 / mcu);
    assert_true(f->velocities[1] == -0.3 / mcu);
    assert_true(f->velocities[5] == 0.3 / mh);
    f = &l.frames[1];
    assert_non_null(f->masses);
    assert_true(f->masses[0] == 2.5);
    assert_true(f->velocities[2] == 0.7 / 2.5);
    assert_true(f->velocities[3] == 0.1 / 2.0);
    mdf_frame_list_free(&l);
}

static void test_z_vel_forces(void **state)
{
    (void)state;
    mdf_frame_list l;
    read_ok("zvel.xyz",
            "2\n"
            "Properties=Z:I:1:pos:R:3:vel:R:3:forces:R:3\n"
            "6 0 0 0 1 2 3 -1 -2 -3\n"
            "8 1 1 1 4 5 6 -4 -5 -6\n"
            "1\n"
            "Properties=species:S:1:pos:R:3:Z:I:1\n"
            "H 0 0 0 26\n",
            &l);
    const mdf_frame *f = &l.frames[0];
    assert_int_equal(f->numbers[0], 6);
    assert_int_equal(f->numbers[1], 8);
    assert_true(f->velocities[5] == 6.0);
    assert_true(f->forces[3] == -4.0);
    /* As in ASE, Z wins over species. */
    assert_int_equal(l.frames[1].numbers[0], 26);
    mdf_frame_list_free(&l);
}

static void test_long_line(void **state)
{
    (void)state;
    size_t n = 200000;
    char *text = malloc(n + 100);
    assert_non_null(text);
    strcpy(text, "1\nlong=\"");
    size_t len = strlen(text);
    memset(text + len, 'x', n);
    strcpy(text + len + n, "\"\nNe 0 0 0\n");
    mdf_frame_list l;
    read_ok("long.xyz", text, &l);
    assert_int_equal(strlen(mdf_frame_get_info(&l.frames[0], "long")), n);
    free(text);
    mdf_frame_list_free(&l);
}

static void test_empty_file(void **state)
{
    (void)state;
    mdf_frame_list l;
    read_ok("empty.xyz", "", &l);
    assert_int_equal(l.count, 0);
    mdf_frame_list_free(&l);
}

static void test_read_stream(void **state)
{
    (void)state;
    const char *p = write_text("stream.xyz", "1\n\nKr 0 0 0\n1\n\nKr 0 x 0\n");
    FILE *fp = fopen(p, "r");
    assert_non_null(fp);
    mdf_frame_list l;
    mdf_frame_list_init(&l);
    mdf_error err;
    mdf_error_clear(&err);
    assert_int_equal(mdf_xyz_read_stream(fp, "<mystream>", &l, &err), MDF_ERR_PARSE);
    fclose(fp);
    assert_non_null(strstr(err.message, "<mystream>:6:"));
    /* The frame read before the error stays in the list. */
    assert_int_equal(l.count, 1);
    assert_int_equal(l.frames[0].numbers[0], 36);
    mdf_frame_list_free(&l);
}

/* ------------------------------------------------------------------------ */
/* Bad input                                                                 */

static void test_bad_count(void **state)
{
    (void)state;
    read_fails("hello\n\nH 0 0 0\n", MDF_ERR_PARSE, 1, "expected the atom count of frame 1");
    read_fails("3.5\n\nH 0 0 0\n", MDF_ERR_PARSE, 1, "found '3.5'");
    read_fails("2 atoms\n\nH 0 0 0\nH 0 0 1\n", MDF_ERR_PARSE, 1, "expected the atom count");
    read_fails("-2\n\n", MDF_ERR_PARSE, 1, "negative atom count (-2)");
    read_fails("1\n\nH 0 0 0\n\n\nfoo\n", MDF_ERR_PARSE, 6, "expected the atom count of frame 2");
}

static void test_truncated(void **state)
{
    (void)state;
    read_fails("3\ncomment\nH 0 0 0\n", MDF_ERR_PARSE, 3,
               "frame 1 announces 3 atoms (line 1) but the file ends after 1 of them");
    read_fails("1\n\nH 0 0 0\n4\n\nH 0 0 0\nH 0 0 1\n", MDF_ERR_PARSE, 7,
               "frame 2 announces 4 atoms (line 4) but the file ends after 2 of them");
    read_fails("5\n", MDF_ERR_PARSE, 1, "ends after its count line");
    read_fails("2\n\nH 0 0 0\n\nH 0 0 1\n", MDF_ERR_PARSE, 4, "blank line where atom 2");
    /* Count too large: the next frame's count line is read as an atom. */
    read_fails("3\n\nH 0 0 0\nH 0 0 1\n1\n\nH 0 0 0\n", MDF_ERR_PARSE, 5,
               "expected 3 numbers for 'pos' (Properties columns 2-4), found 0: check that the "
               "atom count on line 1 (3) matches");
}

/* A "Key:   N kB" line of /proc/self/status, in kB (-1 when absent). */
static long proc_status_kb(const char *key)
{
    FILE *fp = fopen("/proc/self/status", "r");
    if (!fp) return -1;
    char line[256];
    long kb = -1;
    size_t n = strlen(key);
    while (kb < 0 && fgets(line, sizeof line, fp))
        if (strncmp(line, key, n) == 0 && line[n] == ':') kb = strtol(line + n + 1, NULL, 10);
    fclose(fp);
    return kb;
}

/* A 120-byte file whose count line announces 990,900,002 atoms and that ends
 * after three: the reader must size its arrays from the lines it reads, not
 * from the header (a calloc sized by the header asked for 24 GB; under
 * AddressSanitizer, or with strict overcommit, that is an out-of-memory stop
 * instead of the real cause). Address space (VmPeak) and resident memory
 * (VmHWM) may each grow by a few MB, not by what the header claims. */
static void test_hostile_count_bounded_memory(void **state)
{
    (void)state;
    const char *text = "990900002\n"
                       "Properties=species:S:1:pos:R:3 pbc=\"F F F\"\n"
                       "Ar 1.000 2.0000 3.000\n"
                       "Ar 4.000 5.0000 6.000\n"
                       "Ar 7.000 8.0000 9.0000\n";
    assert_int_equal(strlen(text), 120);
    const char *p = write_text("hostile.xyz", text);
    long peak0 = proc_status_kb("VmPeak"), hwm0 = proc_status_kb("VmHWM");
    mdf_frame_list l;
    mdf_frame_list_init(&l);
    mdf_error err;
    mdf_error_clear(&err);
    mdf_status st = mdf_xyz_read(p, &l, &err);
    long peak1 = proc_status_kb("VmPeak"), hwm1 = proc_status_kb("VmHWM");
    print_message("status %d: %s\nVmPeak +%ld kB, VmHWM +%ld kB\n", st, err.message, peak1 - peak0, hwm1 - hwm0);
    assert_int_equal(st, MDF_ERR_PARSE);
    assert_non_null(strstr(err.message, "hostile.xyz:5:"));
    assert_non_null(strstr(err.message, "announces 990900002 atoms (line 1) but the file ends after 3 of them"));
    assert_int_equal(l.count, 0);
    assert_true(peak0 > 0 && hwm0 > 0);
    assert_true(hwm1 - hwm0 < 50 * 1024);
    assert_true(peak1 - peak0 < 50 * 1024);
    mdf_frame_list_free(&l);
}

static void test_bad_fields(void **state)
{
    (void)state;
    read_fails("2\n\nH 0 0 0\nH 0 abc 0\n", MDF_ERR_PARSE, 4, "'abc' is not a number");
    read_fails("2\n\nH 0 0 0\nH 0 1e5x 0\n", MDF_ERR_PARSE, 4, "column 3, property 'pos'");
    read_fails("2\n\nH 0 0 0\nH 0 0\n", MDF_ERR_PARSE, 4, "expected 3 numbers for 'pos'");
    read_fails("1\n\nH 0 0 0 9\n", MDF_ERR_PARSE, 3, "found 5 fields but Properties");
    read_fails("1\n\nXx 0 0 0\n", MDF_ERR_PARSE, 3, "unknown element 'Xx'");
    read_fails("1\n\nXx 0 0 0\n", MDF_ERR_PARSE, 3, "use a symbol from the periodic table");
    read_fails("1\n\nHydrogen 0 0 0\n", MDF_ERR_PARSE, 3, "unknown element 'Hydrogen'");
    read_fails("1\nProperties=Z:I:1:pos:R:3\n119 0 0 0\n", MDF_ERR_PARSE, 3,
               "'119' is not an atomic number");
    read_fails("1\nProperties=species:S:1:pos:R:3:tag:I:1\nH 0 0 0 1.5\n", MDF_ERR_PARSE, 3,
               "'1.5' is not an integer");
    read_fails("1\nProperties=species:S:1:pos:R:3:fix:L:1\nH 0 0 0 yes\n", MDF_ERR_PARSE, 3,
               "'yes' is not a logical");
    read_fails("1\nProperties=species:S:1:pos:R:3:momenta:R:3\nX 0 0 0 1 1 1\n", MDF_ERR_PARSE,
               3, "add a masses:R:1 column");
}

static void test_nul_byte(void **state)
{
    (void)state;
    const char *p = path_of("nul.xyz");
    FILE *fp = fopen(p, "wb");
    assert_non_null(fp);
    fwrite("1\n\nH 0\0 0 0\n", 1, 12, fp);
    fclose(fp);
    mdf_frame_list l;
    mdf_frame_list_init(&l);
    mdf_error err;
    mdf_error_clear(&err);
    assert_int_equal(mdf_xyz_read(p, &l, &err), MDF_ERR_PARSE);
    assert_non_null(strstr(err.message, "nul.xyz:3:"));
    assert_non_null(strstr(err.message, "NUL byte"));
    mdf_frame_list_free(&l);
}

static void test_bad_header(void **state)
{
    (void)state;
    read_fails("1\nLattice=\"1 0 0 0 1 0 0 0\"\nH 0 0 0\n", MDF_ERR_PARSE, 2,
               "Lattice must hold 9 numbers");
    read_fails("1\nLattice=\"1 0 0 0 1 0 0 0 z\"\nH 0 0 0\n", MDF_ERR_PARSE, 2,
               "Lattice value 9, 'z', is not a number");
    read_fails("1\npbc=\"T T\"\nH 0 0 0\n", MDF_ERR_PARSE, 2, "pbc=\"T T\" is not understood");
    read_fails("1\npbc=\"T yes F\"\nH 0 0 0\n", MDF_ERR_PARSE, 2, "is not understood");
    read_fails("1\nenergy=low\nH 0 0 0\n", MDF_ERR_PARSE, 2, "energy=low is not a number");
    read_fails("1\nnote=\"unterminated\nH 0 0 0\n", MDF_ERR_PARSE, 2, "is never closed");
    read_fails("1\n=2 a=1\nH 0 0 0\n", MDF_ERR_PARSE, 2, "'=' without a key");
}

static void test_bad_properties(void **state)
{
    (void)state;
    read_fails("1\nProperties=species:S:1:pos:Q:3\nH 0 0 0\n", MDF_ERR_PARSE, 2,
               "unknown type 'Q' for 'pos'");
    read_fails("1\nProperties=species:S:1:pos:R:0\nH 0 0 0\n", MDF_ERR_PARSE, 2,
               "the column count '0' of 'pos' is not a positive integer");
    read_fails("1\nProperties=species:S:1:pos:R:x\nH 0 0 0\n", MDF_ERR_PARSE, 2,
               "the column count 'x' of 'pos'");
    read_fails("1\nProperties=species:S:1:pos:R\nH 0 0 0\n", MDF_ERR_PARSE, 2,
               "must be name:type:ncols triplets");
    read_fails("1\nProperties=species:S:1\nH\n", MDF_ERR_PARSE, 2, "has no 'pos' column");
    read_fails("1\nProperties=pos:R:3\n0 0 0\n", MDF_ERR_PARSE, 2,
               "has neither 'species' nor 'Z'");
    read_fails("1\nProperties=species:S:1:pos:R:2\nH 0 0\n", MDF_ERR_PARSE, 2,
               "'pos' must be declared pos:R:3");
    read_fails("1\nProperties=species:S:1:pos:R:3:pos:R:3\nH 0 0 0 0 0 0\n", MDF_ERR_PARSE, 2,
               "declares 'pos' twice");
    read_fails("1\nProperties=species:S:1:pos:R:3:vel:R:3:momenta:R:3\nH 0 0 0 0 0 0 0 0 0\n",
               MDF_ERR_PARSE, 2, "both velocities and momenta");
}

static void test_error_in_second_frame_keeps_first(void **state)
{
    (void)state;
    mdf_frame_list l;
    mdf_frame_list_init(&l);
    mdf_error err;
    mdf_error_clear(&err);
    const char *p = write_text("second.xyz", "1\n\nH 0 0 0\n1\n\nQq 0 0 0\n");
    assert_int_equal(mdf_xyz_read(p, &l, &err), MDF_ERR_PARSE);
    assert_non_null(strstr(err.message, "second.xyz:6:"));
    assert_non_null(strstr(err.message, "frame 2"));
    assert_int_equal(l.count, 1);
    assert_int_equal(l.frames[0].numbers[0], 1);
    mdf_frame_list_free(&l);
}

static void test_missing_file(void **state)
{
    (void)state;
    mdf_frame_list l;
    mdf_frame_list_init(&l);
    mdf_error err;
    mdf_error_clear(&err);
    const char *p = path_of("does-not-exist.xyz");
    assert_int_equal(mdf_xyz_read(p, &l, &err), MDF_ERR_IO);
    assert_non_null(strstr(err.message, p));
    assert_int_equal(l.count, 0);
}

/* ------------------------------------------------------------------------ */
/* Writing                                                                   */

/* A frame with every feature and awkward numbers. */
static void build_frame(mdf_frame *f, int64_t n, int with_extras, unsigned seed)
{
    assert_int_equal(mdf_frame_alloc(f, n, 1, 1, 1, NULL), MDF_OK);
    srand(seed);
    for (int64_t i = 0; i < n; i++) {
        f->numbers[i] = (int32_t)(1 + (i * 7) % 118);
        f->masses[i] = mdf_element_mass(f->numbers[i]) * (1.0 + (double)rand() / RAND_MAX);
        for (int k = 0; k < 3; k++) {
            size_t j = (size_t)(3 * i + k);
            f->positions[j] = 20.0 * rand() / RAND_MAX - 10.0 + 1.0 / 3.0;
            f->velocities[j] = ((double)rand() / RAND_MAX - 0.5) * 1e-3;
            f->forces[j] = ((double)rand() / RAND_MAX - 0.5) * 1e7;
        }
    }
    if (n > 2) {
        f->positions[0] = 0.1;
        f->positions[1] = -0.0;
        f->positions[2] = 1e-300;
        f->velocities[0] = 5e-324;
        f->forces[0] = 1.7976931348623157e308;
    }
    double cell[9] = {10.5, 0, 0, 1.0 / 3.0, 11.25, 0, -0.7, 0.2, 12.0 + 1e-12};
    memcpy(f->cell, cell, sizeof cell);
    f->has_cell = 1;
    f->pbc[0] = 1;
    f->pbc[2] = 1;
    f->energy = -1234.5678901234567;
    f->has_energy = 1;
    assert_int_equal(mdf_frame_set_info(f, "note", "hello world", NULL), MDF_OK);
    assert_int_equal(mdf_frame_set_info(f, "tricky", "a=b \"q\" back\\slash {x}", NULL), MDF_OK);
    assert_int_equal(mdf_frame_set_info(f, "step", "42", NULL), MDF_OK);
    assert_int_equal(mdf_frame_set_info(f, "key with space", "v", NULL), MDF_OK);
    assert_int_equal(mdf_frame_set_info(f, "empty", "", NULL), MDF_OK);
    if (!with_extras) return;
    f->nextra = 2;
    f->extra = calloc(2, sizeof *f->extra);
    assert_non_null(f->extra);
    const char *names[2] = {"tags", "label"};
    const char types[2] = {'I', 'S'};
    const int ncols[2] = {1, 2};
    for (int c = 0; c < 2; c++) {
        f->extra[c].name = strdup(names[c]);
        f->extra[c].type = types[c];
        f->extra[c].ncols = ncols[c];
        f->extra[c].tokens = calloc((size_t)(n * ncols[c]) + 1, sizeof(char *));
        for (int64_t i = 0; i < n * ncols[c]; i++) {
            char tok[32];
            snprintf(tok, sizeof tok, c == 0 ? "%lld" : "s%lld", (long long)i);
            f->extra[c].tokens[i] = strdup(tok);
        }
    }
}

static void assert_frames_equal(const mdf_frame *a, const mdf_frame *b)
{
    size_t n = (size_t)a->natoms;
    assert_int_equal(a->natoms, b->natoms);
    /* Bit for bit: memcmp also tells -0.0 from 0.0. */
    assert_memory_equal(a->positions, b->positions, 3 * n * sizeof(double) + (n == 0));
    assert_memory_equal(a->numbers, b->numbers, n * sizeof(int32_t) + (n == 0));
    assert_int_equal(a->velocities != NULL, b->velocities != NULL);
    assert_int_equal(a->forces != NULL, b->forces != NULL);
    assert_int_equal(a->masses != NULL, b->masses != NULL);
    if (a->velocities && n) assert_memory_equal(a->velocities, b->velocities, 3 * n * sizeof(double));
    if (a->forces && n) assert_memory_equal(a->forces, b->forces, 3 * n * sizeof(double));
    if (a->masses && n) assert_memory_equal(a->masses, b->masses, n * sizeof(double));
    assert_int_equal(a->has_cell, b->has_cell);
    if (a->has_cell) assert_memory_equal(a->cell, b->cell, sizeof a->cell);
    assert_memory_equal(a->pbc, b->pbc, sizeof a->pbc);
    assert_int_equal(a->has_energy, b->has_energy);
    if (a->has_energy) assert_memory_equal(&a->energy, &b->energy, sizeof a->energy);
    assert_int_equal(a->ninfo, b->ninfo);
    for (size_t k = 0; k < a->ninfo; k++) {
        assert_string_equal(a->info[k].key, b->info[k].key);
        assert_string_equal(a->info[k].value, b->info[k].value);
    }
    assert_int_equal(a->nextra, b->nextra);
    for (size_t c = 0; c < a->nextra; c++) {
        assert_string_equal(a->extra[c].name, b->extra[c].name);
        assert_int_equal(a->extra[c].type, b->extra[c].type);
        assert_int_equal(a->extra[c].ncols, b->extra[c].ncols);
        for (size_t t = 0; t < n * (size_t)a->extra[c].ncols; t++)
            assert_string_equal(a->extra[c].tokens[t], b->extra[c].tokens[t]);
    }
}

static void test_round_trip(void **state)
{
    (void)state;
    mdf_frame frames[3];
    build_frame(&frames[0], 50, 1, 1);
    build_frame(&frames[1], 7, 0, 2);
    /* An open cluster: no cell, no velocities, standard masses. */
    assert_int_equal(mdf_frame_alloc(&frames[2], 3, 0, 0, 0, NULL), MDF_OK);
    for (int i = 0; i < 9; i++) frames[2].positions[i] = 1.0 / (i + 1.0);
    frames[2].numbers[0] = 8;
    frames[2].numbers[1] = 1;
    frames[2].numbers[2] = 1;
    mdf_error err;
    mdf_error_clear(&err);
    const char *p = path_of("roundtrip.xyz");
    assert_int_equal(mdf_xyz_write(p, frames, 3, 0, &err), MDF_OK);
    assert_false(file_exists(path_of("roundtrip.xyz.tmp")));
    mdf_frame_list l;
    mdf_frame_list_init(&l);
    assert_int_equal(mdf_xyz_read(p, &l, &err), MDF_OK);
    assert_int_equal(l.count, 3);
    for (int i = 0; i < 3; i++) assert_frames_equal(&frames[i], &l.frames[i]);
    /* Writing what was read gives the same bytes again. */
    const char *p2 = path_of("roundtrip2.xyz");
    assert_int_equal(mdf_xyz_write(p2, l.frames, l.count, 0, &err), MDF_OK);
    assert_true(same_bytes(p, p2));
    mdf_frame_list_free(&l);
    for (int i = 0; i < 3; i++) mdf_frame_free(&frames[i]);
}

/* A write large enough to be formatted by several threads, over several
 * rounds (io/xyz.c: WRITE_PARALLEL_ATOMS, WRITE_ROUND_ATOMS): the same
 * bytes as frames appended one call at a time (one frame: formatted on the
 * caller's thread), and an exact round trip; /dev/full still fails cleanly. */
static void test_write_parallel(void **state)
{
    (void)state;
    enum { NF = 1400 };
    mdf_frame *frames = calloc(NF, sizeof *frames);
    for (int i = 0; i < NF; i++) build_frame(&frames[i], 60 + i % 80, i % 2, 100u + (unsigned)i);
    mdf_error err;
    mdf_error_clear(&err);
    const char *p = path_of("parallel.xyz"), *q = path_of("serial.xyz");
    assert_int_equal(mdf_xyz_write(p, frames, NF, 0, &err), MDF_OK);
    remove(q);
    for (int i = 0; i < NF; i++) assert_int_equal(mdf_xyz_write(q, &frames[i], 1, 1, &err), MDF_OK);
    assert_true(same_bytes(p, q));
    mdf_frame_list l;
    mdf_frame_list_init(&l);
    assert_int_equal(mdf_xyz_read(p, &l, &err), MDF_OK);
    assert_int_equal(l.count, NF);
    for (int i = 0; i < NF; i++) assert_frames_equal(&frames[i], &l.frames[i]);
    mdf_frame_list_free(&l);
    if (file_exists("/dev/full")) {
        mdf_error_clear(&err);
        assert_int_equal(mdf_xyz_write("/dev/full", frames, NF, 1, &err), MDF_ERR_IO);
        assert_non_null(strstr(err.message, "/dev/full"));
    }
    for (int i = 0; i < NF; i++) mdf_frame_free(&frames[i]);
    free(frames);
}

/* A frame far larger than the reader's first allocation (about 65,536
 * values): its arrays grow several times while the atom lines arrive, and
 * every column (extras included) reads back exactly. */
static void test_read_grows_large_frame(void **state)
{
    (void)state;
    mdf_frame f;
    build_frame(&f, 30001, 1, 7u);
    mdf_error err;
    mdf_error_clear(&err);
    const char *p = path_of("large.xyz");
    assert_int_equal(mdf_xyz_write(p, &f, 1, 0, &err), MDF_OK);
    mdf_frame_list l;
    mdf_frame_list_init(&l);
    assert_int_equal(mdf_xyz_read(p, &l, &err), MDF_OK);
    assert_int_equal(l.count, 1);
    assert_frames_equal(&f, &l.frames[0]);
    mdf_frame_list_free(&l);
    mdf_frame_free(&f);
}

static void test_writer_layout(void **state)
{
    (void)state;
    mdf_frame f;
    assert_int_equal(mdf_frame_alloc(&f, 1, 0, 1, 0, NULL), MDF_OK);
    f.numbers[0] = 14;
    f.positions[0] = 0.5;
    f.has_cell = 1;
    f.cell[0] = f.cell[4] = f.cell[8] = 5.43;
    f.pbc[0] = f.pbc[1] = 1;
    f.has_energy = 1;
    f.energy = -2.5;
    assert_int_equal(mdf_frame_set_info(&f, "note", "hello world", NULL), MDF_OK);
    const char *p = path_of("layout.xyz");
    mdf_error err;
    mdf_error_clear(&err);
    assert_int_equal(mdf_xyz_write(p, &f, 1, 0, &err), MDF_OK);
    FILE *fp = fopen(p, "r");
    assert_non_null(fp);
    char line1[64], line2[512], line3[512];
    assert_non_null(fgets(line1, sizeof line1, fp));
    assert_non_null(fgets(line2, sizeof line2, fp));
    assert_non_null(fgets(line3, sizeof line3, fp));
    fclose(fp);
    assert_string_equal(line1, "1\n");
    assert_string_equal(line2, "Lattice=\"5.43 0 0 0 5.43 0 0 0 5.43\" "
                               "Properties=species:S:1:pos:R:3:forces:R:3 energy=-2.5 "
                               "note=\"hello world\" pbc=\"T T F\"\n");
    assert_true(strncmp(line3, "Si ", 3) == 0);
    mdf_frame_free(&f);
}

static void test_append(void **state)
{
    (void)state;
    mdf_frame a, b;
    build_frame(&a, 4, 1, 3);
    build_frame(&b, 2, 0, 4);
    const char *p = path_of("append.xyz");
    mdf_error err;
    mdf_error_clear(&err);
    assert_int_equal(mdf_xyz_write(p, &a, 1, 0, &err), MDF_OK);
    assert_int_equal(mdf_xyz_write(p, &b, 1, 1, &err), MDF_OK);
    assert_int_equal(mdf_xyz_write(p, &a, 1, 1, &err), MDF_OK);
    mdf_frame_list l;
    mdf_frame_list_init(&l);
    assert_int_equal(mdf_xyz_read(p, &l, &err), MDF_OK);
    assert_int_equal(l.count, 3);
    assert_frames_equal(&a, &l.frames[0]);
    assert_frames_equal(&b, &l.frames[1]);
    assert_frames_equal(&a, &l.frames[2]);
    mdf_frame_list_free(&l);
    /* append = 0 replaces the file. */
    assert_int_equal(mdf_xyz_write(p, &b, 1, 0, &err), MDF_OK);
    assert_int_equal(mdf_xyz_read(p, &l, &err), MDF_OK);
    assert_int_equal(l.count, 1);
    assert_frames_equal(&b, &l.frames[0]);
    mdf_frame_list_free(&l);
    mdf_frame_free(&a);
    mdf_frame_free(&b);
}

static void test_write_missing_dir(void **state)
{
    (void)state;
    mdf_frame f;
    build_frame(&f, 2, 0, 5);
    const char *p = path_of("no/such/dir/out.xyz");
    for (int append = 0; append <= 1; append++) {
        mdf_error err;
        mdf_error_clear(&err);
        assert_int_equal(mdf_xyz_write(p, &f, 1, append, &err), MDF_ERR_IO);
        assert_non_null(strstr(err.message, p));
    }
    mdf_frame_free(&f);
}

static void test_write_disk_full(void **state)
{
    (void)state;
    if (!file_exists("/dev/full")) skip();
    mdf_frame f;
    build_frame(&f, 100, 1, 6);
    mdf_error err;
    mdf_error_clear(&err);
    assert_int_equal(mdf_xyz_write("/dev/full", &f, 1, 1, &err), MDF_ERR_IO);
    assert_non_null(strstr(err.message, "/dev/full"));
    FILE *fp = fopen("/dev/full", "w");
    assert_non_null(fp);
    mdf_error_clear(&err);
    assert_int_equal(mdf_xyz_write_stream(fp, &f, 1, &err), MDF_ERR_IO);
    fclose(fp);
    mdf_frame_free(&f);
}

static void test_write_invalid(void **state)
{
    (void)state;
    mdf_frame f;
    build_frame(&f, 3, 1, 7);
    const char *p = path_of("invalid.xyz");
    mdf_error err;

    f.numbers[1] = 200;
    mdf_error_clear(&err);
    assert_int_equal(mdf_xyz_write(p, &f, 1, 0, &err), MDF_ERR_INVALID);
    assert_non_null(strstr(err.message, "atom 2 has atomic number 200"));
    assert_false(file_exists(p));
    f.numbers[1] = 1;

    assert_int_equal(mdf_frame_set_info(&f, "pbc", "T T T", NULL), MDF_OK);
    mdf_error_clear(&err);
    assert_int_equal(mdf_xyz_write(p, &f, 1, 0, &err), MDF_ERR_INVALID);
    assert_non_null(strstr(err.message, "info key 'pbc'"));
    assert_false(file_exists(p));
    free(f.info[f.ninfo - 1].key);
    free(f.info[f.ninfo - 1].value);
    f.ninfo--;

    free(f.extra[0].tokens[2]);
    f.extra[0].tokens[2] = strdup("two words");
    mdf_error_clear(&err);
    assert_int_equal(mdf_xyz_write(p, &f, 1, 0, &err), MDF_ERR_INVALID);
    assert_non_null(strstr(err.message, "extra column 'tags'"));
    free(f.extra[0].tokens[2]);
    f.extra[0].tokens[2] = strdup("2");

    free(f.extra[1].name);
    f.extra[1].name = strdup("forces");
    mdf_error_clear(&err);
    assert_int_equal(mdf_xyz_write(p, &f, 1, 0, &err), MDF_ERR_INVALID);
    assert_non_null(strstr(err.message, "clashes"));
    assert_false(file_exists(p));
    mdf_frame_free(&f);
}

static void test_overwrite_keeps_old_file_on_invalid(void **state)
{
    (void)state;
    mdf_frame good, bad;
    build_frame(&good, 2, 0, 8);
    build_frame(&bad, 2, 0, 9);
    bad.numbers[0] = -1;
    const char *p = path_of("keep.xyz");
    mdf_error err;
    mdf_error_clear(&err);
    assert_int_equal(mdf_xyz_write(p, &good, 1, 0, &err), MDF_OK);
    mdf_frame both[2] = {good, bad};
    assert_int_equal(mdf_xyz_write(p, both, 2, 0, &err), MDF_ERR_INVALID);
    mdf_frame_list l;
    mdf_frame_list_init(&l);
    mdf_error_clear(&err);
    assert_int_equal(mdf_xyz_read(p, &l, &err), MDF_OK);
    assert_int_equal(l.count, 1);
    assert_frames_equal(&good, &l.frames[0]);
    mdf_frame_list_free(&l);
    mdf_frame_free(&good);
    mdf_frame_free(&bad);
}

/* ------------------------------------------------------------------------ */
/* Frames and elements                                                       */

static void test_frame_copy_is_deep(void **state)
{
    (void)state;
    mdf_frame a, b;
    build_frame(&a, 5, 1, 10);
    assert_int_equal(mdf_frame_copy(&b, &a, NULL), MDF_OK);
    assert_frames_equal(&a, &b);
    assert_ptr_not_equal(a.positions, b.positions);
    assert_ptr_not_equal(a.info[0].value, b.info[0].value);
    assert_ptr_not_equal(a.extra[0].tokens[0], b.extra[0].tokens[0]);
    b.positions[0] = 99.0;
    b.extra[1].tokens[0][0] = 'Z';
    assert_true(a.positions[0] != 99.0);
    assert_int_equal(a.extra[1].tokens[0][0], 's');
    mdf_frame_free(&a);
    mdf_frame_free(&b);
    assert_null(b.positions);
    assert_int_equal(b.natoms, 0);
}

static void test_frame_info_and_list(void **state)
{
    (void)state;
    mdf_frame f;
    mdf_error err;
    mdf_error_clear(&err);
    assert_int_equal(mdf_frame_alloc(&f, 0, 1, 0, 0, &err), MDF_OK);
    assert_non_null(f.velocities);   /* present even for 0 atoms */
    assert_null(f.forces);
    assert_null(mdf_frame_get_info(&f, "x"));
    assert_int_equal(mdf_frame_set_info(&f, "x", "1", &err), MDF_OK);
    assert_int_equal(mdf_frame_set_info(&f, "y", "2", &err), MDF_OK);
    assert_int_equal(mdf_frame_set_info(&f, "x", "3", &err), MDF_OK);
    assert_int_equal(f.ninfo, 2);
    assert_string_equal(mdf_frame_get_info(&f, "x"), "3");
    assert_int_equal(mdf_frame_set_info(&f, "", "3", &err), MDF_ERR_INVALID);
    mdf_frame neg;
    mdf_error_clear(&err);
    assert_int_equal(mdf_frame_alloc(&neg, -1, 0, 0, 0, &err), MDF_ERR_INVALID);
    mdf_error_clear(&err);

    mdf_frame_list l;
    mdf_frame_list_init(&l);
    for (int i = 0; i < 20; i++) {
        mdf_frame g;
        assert_int_equal(mdf_frame_alloc(&g, i, 0, 0, 0, &err), MDF_OK);
        assert_int_equal(mdf_frame_list_push(&l, &g, &err), MDF_OK);
        assert_null(g.positions);   /* ownership moved */
    }
    assert_int_equal(l.count, 20);
    assert_int_equal(l.frames[19].natoms, 19);
    mdf_frame_list_free(&l);
    assert_int_equal(l.count, 0);
    mdf_frame_free(&f);
    mdf_frame_free(NULL);
}

static void test_elements(void **state)
{
    (void)state;
    assert_true(mdf_element_mass(0) == 0.0);
    assert_true(mdf_element_mass(1) == 1.008);
    assert_true(mdf_element_mass(6) == 12.011);
    assert_true(mdf_element_mass(118) == 294.214);
    assert_true(mdf_element_mass(119) == 0.0);
    assert_true(mdf_element_mass(-1) == 0.0);
    assert_string_equal(mdf_element_symbol(0), "X");
    assert_string_equal(mdf_element_symbol(14), "Si");
    assert_string_equal(mdf_element_symbol(118), "Og");
    assert_null(mdf_element_symbol(119));
    assert_null(mdf_element_symbol(-1));
    for (int z = 0; z <= 118; z++) assert_int_equal(mdf_element_number(mdf_element_symbol(z)), z);
    assert_int_equal(mdf_element_number("si"), -1);   /* case-sensitive, as ASE */
    assert_int_equal(mdf_element_number("Xx"), -1);
    assert_int_equal(mdf_element_number(""), -1);
    assert_int_equal(mdf_element_number(NULL), -1);
}

/* mdf_error_set never reads the caller's struct: an uninitialised one
 * (here filled with garbage, as a stack variable may be; valgrind flagged
 * the read) gets exactly the message, and a struct reused after a failure
 * does not drag the old message into the new one. Context goes on a cause
 * only through mdf_error_prefix. */
static void test_error_struct_never_read(void **state)
{
    (void)state;
    mdf_error err;
    memset(&err, 0xA5, sizeof err);
    mdf_frame_list l;
    mdf_frame_list_init(&l);
    assert_int_equal(mdf_xyz_read(path_of("missing.xyz"), &l, &err), MDF_ERR_IO);
    print_message("garbage struct: %s\n", err.message);
    assert_true(strncmp(err.message, "cannot open '", 13) == 0);
    assert_null(strchr(err.message, (char)0xA5));
    assert_true(strlen(err.message) < 300);
    assert_int_equal(mdf_xyz_read(write_text("reused.xyz", "x\n"), &l, &err), MDF_ERR_PARSE);
    assert_null(strstr(err.message, "cannot open"));
    assert_non_null(strstr(err.message, "reused.xyz:1:"));
    mdf_error_set(&err, MDF_ERR_NOMEM, "the cause");
    assert_int_equal(mdf_error_prefix(&err, MDF_ERR_PARSE, "at %s", "line 3"), MDF_ERR_PARSE);
    assert_string_equal(err.message, "at line 3: the cause");
    assert_int_equal(err.code, MDF_ERR_PARSE);
    assert_int_equal(mdf_error_set(NULL, MDF_ERR_IO, "x"), MDF_ERR_IO);
    assert_int_equal(mdf_error_prefix(NULL, MDF_ERR_IO, "x"), MDF_ERR_IO);
    mdf_frame_list_free(&l);
}

/* The writer's numbers (io/real_text.c) against glibc: "%.16g" when
 * strtod reads it back as the same double, else "%.17g", the text byte for
 * byte, on random doubles of every magnitude (both sides of the fast
 * path's range), binary fractions n / 2^j (exact decimal ties at the 16th
 * digit, rounded half to even), short decimals, powers of two and ten and
 * their neighbours. */
static void glibc_real(char *buf, size_t size, double x)
{
    snprintf(buf, size, "%.16g", x);
    if (strtod(buf, NULL) != x) snprintf(buf, size, "%.17g", x);
}

static void check_real_text(double x, long *checked)
{
    char want[64], got[64];
    glibc_real(want, sizeof want, x);
    int n = mdf_real_text(got, sizeof got, x);
    if (strcmp(want, got) != 0 || n != (int)strlen(got)) {
        print_message("%a: glibc '%s', mdf_real_text '%s' (length %d)\n", x, want, got, n);
        fail();
    }
    ++*checked;
}

static void test_real_text(void **state)
{
    (void)state;
    long checked = 0;
    uint64_t st = 20261128;
    for (int i = 0; i < 2000000; i++) { /* random bits, |x| from about 1e-8 to 1e17 */
        uint64_t u = (uint64_t)(tu_rand(&st) * 4503599627370496.0); /* 52 bits */
        uint64_t e = 996 + (uint64_t)(tu_rand(&st) * 87.0);           /* 2^-27 .. 2^59 */
        u |= e << 52;
        if (tu_rand(&st) < 0.5) u |= UINT64_C(1) << 63;
        double x;
        memcpy(&x, &u, sizeof x);
        check_real_text(x, &checked);
    }
    for (int i = 0; i < 500000; i++) { /* n / 2^j: decimal ties at the 16th digit */
        int j = 1 + (int)(tu_rand(&st) * 12.0);
        double n = floor(tu_rand(&st) * 9007199254740992.0 / (1 << (int)(tu_rand(&st) * 12.0)));
        check_real_text(n / (double)(1 << j), &checked);
    }
    for (int i = 0; i < 200000; i++) { /* short decimals: 3.7, 0.125, 12.5e-3 */
        char t[64];
        snprintf(t, sizeof t, "%d.%de%d", (int)(tu_rand(&st) * 1000), (int)(tu_rand(&st) * 1000),
                 (int)(tu_rand(&st) * 24) - 8);
        check_real_text(strtod(t, NULL), &checked);
    }
    for (int k = -1074; k <= 1023; k++) { /* powers of two and their neighbours */
        double x = ldexp(1.0, k);
        check_real_text(x, &checked);
        check_real_text(nextafter(x, 0.0), &checked);
        check_real_text(nextafter(x, INFINITY), &checked);
    }
    for (int k = -20; k <= 22; k++) { /* powers of ten, their neighbours, 9.99...9 */
        char t[32];
        snprintf(t, sizeof t, "1e%d", k);
        double x = strtod(t, NULL);
        for (int d = -3; d <= 3; d++) {
            double y = x;
            for (int q = 0; q < (d < 0 ? -d : d); q++) y = nextafter(y, d < 0 ? 0.0 : INFINITY);
            check_real_text(y, &checked);
            check_real_text(-y, &checked);
        }
    }
    const double special[] = {0.0, -0.0, 0.1, 0.2, 0.3, 1.0 / 3.0, 2.0 / 3.0, 0.5, 2.5, 1e-5, 1e15, 9.999999999999999e14,
                              0.9999999999999999, 99999999999999.99, 5e-324, 1.7976931348623157e308, 63.546};
    for (size_t i = 0; i < sizeof special / sizeof special[0]; i++) check_real_text(special[i], &checked);
    printf("# %ld doubles formatted as glibc does\n", checked);
}

/* The reader's numbers (mdf_real_parse) against strtod: the same value,
 * bit for bit, and the same verdict on whether the whole token is a
 * number, on random decimals (1 to 20 digits, the point anywhere or
 * nowhere, exponents of either sign, leading zeros, signs) and on tokens
 * that are not numbers or only partly. */
static void check_parse(const char *t, long *checked)
{
    char *end;
    double want = strtod(t, &end);
    int want_ok = *t && end != t && !*end;
    double got = 12345.0;
    int ok = mdf_real_parse(t, &got);
    if (ok != want_ok || (ok && memcmp(&got, &want, sizeof got) != 0)) {
        print_message("'%s': strtod %s %a, mdf_real_parse %s %a\n", t, want_ok ? "reads" : "refuses", want,
                      ok ? "reads" : "refuses", got);
        fail();
    }
    ++*checked;
}

static void test_real_parse(void **state)
{
    (void)state;
    long checked = 0;
    uint64_t st = 20261129;
    for (int i = 0; i < 1000000; i++) {
        char t[96];
        int n = 0;
        if (tu_rand(&st) < 0.3) t[n++] = tu_rand(&st) < 0.7 ? '-' : '+';
        int ndig = 1 + (int)(tu_rand(&st) * 20.0), point = (int)(tu_rand(&st) * (ndig + 2)) - 1;
        int zeros = tu_rand(&st) < 0.2 ? (int)(tu_rand(&st) * 6.0) : 0;
        for (int z = 0; z < zeros; z++) t[n++] = '0';
        for (int d = 0; d < ndig; d++) {
            if (d == point) t[n++] = '.';
            t[n++] = (char)('0' + (int)(tu_rand(&st) * 10.0));
        }
        if (point == ndig) t[n++] = '.';
        if (tu_rand(&st) < 0.4) {
            t[n++] = tu_rand(&st) < 0.5 ? 'e' : 'E';
            double u = tu_rand(&st);
            if (u < 0.4) t[n++] = '-';
            else if (u < 0.6) t[n++] = '+';
            n += snprintf(t + n, sizeof t - (size_t)n, "%d", (int)(tu_rand(&st) * 40.0));
        }
        t[n] = '\0';
        check_parse(t, &checked);
    }
    static const char *odd[] = {"", "-", "+", ".", "-.", "e5", ".e5", "1e", "1e+", "1e-", "1.5x", "1.5 ", " 1.5",
                                "0x1p3", "inf", "-inf", "nan", "1..5", "1e5.5", "--1", "+-1", "5.", ".5", "-0",
                                "-0.000", "0e0", "1e400", "1e-400", "123456789012345", "1234567890123456",
                                "0.000000000000000000000000001", "9007199254740993", "1e22", "1e23", "1e-22",
                                "1e-23", "4.9406564584124654e-324", "1.7976931348623157e308", "1,5"};
    for (size_t i = 0; i < sizeof odd / sizeof odd[0]; i++) check_parse(odd[i], &checked);
    printf("# %ld tokens read as strtod reads them\n", checked);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_single_frame),
        cmocka_unit_test(test_multi_frame_crlf_blank_lines),
        cmocka_unit_test(test_read_appends_to_list),
        cmocka_unit_test(test_lattice_pbc_info_extra),
        cmocka_unit_test(test_pbc_spellings),
        cmocka_unit_test(test_plain_xyz),
        cmocka_unit_test(test_momenta_and_masses),
        cmocka_unit_test(test_z_vel_forces),
        cmocka_unit_test(test_long_line),
        cmocka_unit_test(test_empty_file),
        cmocka_unit_test(test_read_stream),
        cmocka_unit_test(test_bad_count),
        cmocka_unit_test(test_truncated),
        cmocka_unit_test(test_hostile_count_bounded_memory),
        cmocka_unit_test(test_bad_fields),
        cmocka_unit_test(test_nul_byte),
        cmocka_unit_test(test_bad_header),
        cmocka_unit_test(test_bad_properties),
        cmocka_unit_test(test_error_in_second_frame_keeps_first),
        cmocka_unit_test(test_missing_file),
        cmocka_unit_test(test_round_trip),
        cmocka_unit_test(test_write_parallel),
        cmocka_unit_test(test_read_grows_large_frame),
        cmocka_unit_test(test_writer_layout),
        cmocka_unit_test(test_append),
        cmocka_unit_test(test_write_missing_dir),
        cmocka_unit_test(test_write_disk_full),
        cmocka_unit_test(test_write_invalid),
        cmocka_unit_test(test_overwrite_keeps_old_file_on_invalid),
        cmocka_unit_test(test_frame_copy_is_deep),
        cmocka_unit_test(test_frame_info_and_list),
        cmocka_unit_test(test_elements),
        cmocka_unit_test(test_error_struct_never_read),
        cmocka_unit_test(test_real_text),
        cmocka_unit_test(test_real_parse),
    };
    return cmocka_run_group_tests(tests, setup_dir, teardown_dir);
}
