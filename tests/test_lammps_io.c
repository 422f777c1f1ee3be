/* mdflow tests — LAMMPS data and dump files (io/lammps_data.c,
 * io/lammps_dump.c) against LAMMPS (`lmp`) and ASE:
 *   - data files mdflow writes, read by LAMMPS's read_data, give the energy
 *     mdflow computes (LJ: orthogonal; a rotated, sheared cell that the writer
 *     turns into LAMMPS's orientation with tilts reduced; EAM Cu, rotated
 *     triclinic) to 1e-10 relative, and LAMMPS's kinetic energy of the
 *     written velocities is Σ ½ m v² of the frame (Å/ps conversion);
 *   - a custom dump of two systems, re-read by LAMMPS's rerun (read_dump x y
 *     z box yes), gives each system's energy as mdflow computes it;
 *   - data files ASE writes (atom_style atomic, triclinic, velocities;
 *     charge) and one LAMMPS's write_data writes (charge, triclinic, image
 *     flags, types from the masses) are read by mdflow with the positions,
 *     cell, velocities and charges ASE reads (tests/lammps_data_check.py);
 *   - ASE reads mdflow's data file (charge style) as the same structure as
 *     mdflow's extxyz of that frame;
 *   - bad files: errors name the file and line, or the type and the fix.
 * Skipped (77) without lmp; the ASE cases without Python's ase. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mdflow/mdflow.h"
#include "mdflow/extension.h"
#include "testutil.h"

static char *g_dir;
static const char *g_pot;
static const char *g_python;

static const char *path_in(const char *name)
{
    static char buf[4][1024];
    static int k;
    k = (k + 1) % 4;
    snprintf(buf[k], sizeof buf[k], "%s/%s", g_dir, name);
    return buf[k];
}

/* ---- frames ------------------------------------------------------------------------------- */

static void add_velocities(mdf_frame *f, uint64_t seed)
{
    free(f->velocities);
    f->velocities = malloc((size_t)f->natoms * 3 * sizeof(double));
    for (int64_t k = 0; k < 3 * f->natoms; k++) f->velocities[k] = 0.05 * tu_gauss(&seed);
}

/* v ← v R for positions, cell rows and velocities; R a proper rotation. */
static void rotate(mdf_frame *f, const double r[9])
{
    double *sets[3] = {f->positions, f->cell, f->velocities};
    int64_t counts[3] = {f->natoms, 3, f->velocities ? f->natoms : 0};
    for (int s = 0; s < 3; s++)
        for (int64_t i = 0; i < counts[s]; i++) {
            double *v = sets[s] + 3 * i, o[3];
            for (int j = 0; j < 3; j++) o[j] = v[0] * r[j] + v[1] * r[3 + j] + v[2] * r[6 + j];
            memcpy(v, o, sizeof o);
        }
}

/* A rotation by 0.7 rad about the axis (1, 2, 3)/√14. */
static void general_rotation(double r[9])
{
    double n[3] = {1 / sqrt(14.0), 2 / sqrt(14.0), 3 / sqrt(14.0)}, c = cos(0.7), s = sin(0.7);
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++) r[3 * i + j] = n[i] * n[j] * (1 - c) + (i == j ? c : 0.0);
    r[1] -= n[2] * s, r[3] += n[2] * s, r[2] += n[1] * s, r[6] -= n[1] * s, r[5] -= n[0] * s, r[7] += n[0] * s;
}

static double kinetic(const mdf_frame *f)
{
    double k = 0.0;
    for (int64_t a = 0; a < f->natoms; a++) {
        const double *v = f->velocities + 3 * a;
        k += 0.5 * mdf_element_mass(f->numbers[a]) * (v[0] * v[0] + v[1] * v[1] + v[2] * v[2]);
    }
    return k;
}

static double mdflow_energy(const mdf_frame *f, mdf_model *m)
{
    mdf_md_report rep;
    mdf_batch *b = tu_single_point(f, 1, m, 0, 1.0, &rep);
    mdf_frame out;
    TU_CALL(mdf_batch_get_frame, b, 0, &out);
    double e = out.energy;
    mdf_frame_free(&out);
    mdf_batch_destroy(b);
    return e;
}

static mdf_model *argon(void)
{
    mdf_lj_config lj = tu_argon(8.5, 0);
    mdf_model *m;
    TU_CALL(mdf_model_create_lj, &lj, &m);
    return m;
}

static mdf_model *eam_cu(void)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/Cu_u3.eam", g_pot);
    return tu_eam_model(path, NULL);
}

/* ---- LAMMPS --------------------------------------------------------------------------------- */

static const char lj_pair[] = "pair_style lj/cut 8.5\npair_coeff 1 1 0.0104 3.40\n";

/* LAMMPS's potential and kinetic energy of the data file md.data, with
 * boundaries p or f as pbc says. */
static void lammps_pe_ke(const char *pair, const int *pbc, double *pe, double *ke)
{
    char in[4096];
    snprintf(in, sizeof in,
             "units metal\natom_style atomic\nboundary %c %c %c\nread_data md.data\n%s"
             "thermo_style custom step pe ke\nrun 0\nprint \"$(pe:%%.17g) $(ke:%%.17g) $(atoms)\" file results.txt\n",
             pbc[0] ? 'p' : 'f', pbc[1] ? 'p' : 'f', pbc[2] ? 'p' : 'f', pair);
    tu_lmp_run(g_dir, in);
    double v[3];
    if (tu_read_doubles(g_dir, "results.txt", v, 3) != 3) fail_msg("LAMMPS printed no energies");
    *pe = v[0];
    *ke = v[1];
}

/* Writes f as md.data and compares LAMMPS's energies with mdflow's energy
 * e_mdflow (of f, or of a frame of the same lattice) and, when check_ke,
 * LAMMPS's kinetic energy of the written velocities with Σ ½ m v² of the
 * frame's: to 1e-7, as LAMMPS's metal mvv2e (1.0364269e-4) has 8 digits
 * (a wrong unit, Å/fs or internal, would be off by 1e3 or 1e1). Pair
 * styles that take the masses from their file (eam funcfl) skip it. */
static void compare_with_lammps(const mdf_frame *f, double e_mdflow, const char *pair, int check_ke, const char *what)
{
    TU_CALL(mdf_lammps_data_write, path_in("md.data"), f);
    double pe, ke;
    lammps_pe_ke(pair, f->pbc, &pe, &ke);
    double de = tu_reldiff(pe, e_mdflow, 1e-300), dk = tu_reldiff(ke, kinetic(f), 1e-300);
    printf("%s: energy %.17g (LAMMPS %.17g, rel %.1e), kinetic rel %.1e\n", what, e_mdflow, pe, de, dk);
    assert_true(de < 1e-10);
    if (check_ke) assert_true(dk < 1e-7);
}

static int file_contains(const char *path, const char *text)
{
    FILE *fp = fopen(path, "r");
    if (!fp) return 0;
    char line[1024];
    int found = 0;
    while (!found && fgets(line, sizeof line, fp)) found = strstr(line, text) != NULL;
    fclose(fp);
    return found;
}

static void test_lj_orthogonal(void **state)
{
    (void)state;
    mdf_frame f = tu_fcc(3, 3, 3, 5.26, 18, 0.0, 0.08, 11);
    add_velocities(&f, 12);
    mdf_model *m = argon();
    compare_with_lammps(&f, mdflow_energy(&f, m), lj_pair, 1, "LJ orthogonal");
    assert_false(file_contains(path_in("md.data"), "xy xz yz"));
    mdf_model_destroy(m);
    mdf_frame_free(&f);
}

/* A general cell (rotated) whose b is b + a: the writer rotates it into
 * LAMMPS's orientation and reduces the tilt (LAMMPS refuses |xy| > lx/2). */
static void test_lj_general_triclinic(void **state)
{
    (void)state;
    mdf_frame f = tu_fcc(3, 3, 3, 5.26, 18, 0.15, 0.08, 13);
    add_velocities(&f, 14);
    double r[9];
    general_rotation(r);
    rotate(&f, r);
    mdf_model *m = argon();
    double e = mdflow_energy(&f, m);
    for (int k = 0; k < 3; k++) f.cell[3 + k] += f.cell[k]; /* the same lattice */
    compare_with_lammps(&f, e, lj_pair, 1, "LJ rotated triclinic, sheared basis");
    assert_true(file_contains(path_in("md.data"), "rotated into LAMMPS's orientation"));
    assert_true(file_contains(path_in("md.data"), "xy xz yz"));
    mdf_model_destroy(m);
    mdf_frame_free(&f);
}

/* A slab open along z whose atoms stick out of its cell below and above
 * (LAMMPS refuses atoms outside a non-periodic box), then the same slab
 * with no third cell vector at all (ASE's slabs without vacuum): the
 * writer widens the box along z and LAMMPS gets every atom. */
static void test_lj_open_direction(void **state)
{
    (void)state;
    mdf_frame f = tu_fcc(3, 3, 3, 5.26, 18, 0.0, 0.08, 15);
    add_velocities(&f, 16);
    f.pbc[2] = 0;
    for (int64_t a = 0; a < f.natoms; a++) f.positions[3 * a + 2] += a % 2 ? -3.0 : 3.0;
    mdf_model *m = argon();
    double e = mdflow_energy(&f, m); /* the third vector does not matter along open z */
    compare_with_lammps(&f, e, lj_pair, 1, "LJ slab, atoms outside the cell along open z");
    for (int k = 6; k < 9; k++) f.cell[k] = 0.0;
    compare_with_lammps(&f, e, lj_pair, 1, "LJ slab, no third cell vector");
    mdf_model_destroy(m);
    mdf_frame_free(&f);
}

static void test_eam_triclinic(void **state)
{
    (void)state;
    mdf_frame f = tu_fcc(2, 2, 2, 3.615, 29, 0.1, 0.05, 15);
    add_velocities(&f, 16);
    double r[9];
    general_rotation(r);
    rotate(&f, r);
    mdf_model *m = eam_cu();
    char pair[1200];
    snprintf(pair, sizeof pair, "pair_style eam\npair_coeff 1 1 %s/Cu_u3.eam\n", g_pot);
    compare_with_lammps(&f, mdflow_energy(&f, m), pair, 0, "EAM Cu rotated triclinic");
    mdf_model_destroy(m);
    mdf_frame_free(&f);
}

/* Two systems in one dump (steps 10 and 20, different cells), re-read by
 * LAMMPS's rerun: each energy is mdflow's. */
static void test_dump_rerun(void **state)
{
    (void)state;
    mdf_frame f[2] = {tu_fcc(3, 3, 3, 5.26, 18, 0.12, 0.08, 17), tu_fcc(3, 3, 3, 5.40, 18, 0.0, 0.1, 18)};
    mdf_model *m = argon();
    double e[2];
    for (int i = 0; i < 2; i++) {
        add_velocities(&f[i], 19 + (uint64_t)i);
        TU_CALL(mdf_frame_set_info, &f[i], "mdf_step", i == 0 ? "10" : "20");
        e[i] = mdflow_energy(&f[i], m);
    }
    TU_CALL(mdf_lammps_data_write, path_in("md.data"), &f[0]);
    TU_CALL(mdf_lammps_dump_write, path_in("md.dump"), f, 2);
    /* one box form for the whole file, as LAMMPS writes: the second's tilts are 0 */
    assert_true(file_contains(path_in("md.dump"), "ITEM: BOX BOUNDS xy xz yz pp pp pp"));
    assert_false(file_contains(path_in("md.dump"), "ITEM: BOX BOUNDS pp pp pp"));
    assert_true(file_contains(path_in("md.dump"), "ITEM: ATOMS id type x y z vx vy vz fx fy fz"));
    char in[4096];
    snprintf(in, sizeof in,
             "units metal\natom_style atomic\nboundary p p p\nread_data md.data\n%s"
             "thermo_style custom step pe\nthermo 1\n"
             "fix p all print 1 \"$(step) $(pe:%%.17g)\" file results.txt screen no\n"
             "rerun md.dump dump x y z box yes\n",
             lj_pair);
    remove(path_in("results.txt"));
    tu_lmp_run(g_dir, in);
    FILE *fp = fopen(path_in("results.txt"), "r");
    assert_non_null(fp);
    char line[256];
    int got = 0;
    while (fgets(line, sizeof line, fp)) {
        double step, pe;
        if (sscanf(line, "%lf %lf", &step, &pe) != 2) continue;
        int i = step == 10.0 ? 0 : step == 20.0 ? 1 : -1;
        assert_true(i >= 0);
        printf("rerun step %g: LAMMPS %.17g, mdflow %.17g (rel %.1e)\n", step, pe, e[i], tu_reldiff(pe, e[i], 1e-300));
        assert_true(tu_reldiff(pe, e[i], 1e-300) < 1e-10);
        got |= 1 << i;
    }
    fclose(fp);
    assert_int_equal(got, 3);
    mdf_model_destroy(m);
    for (int i = 0; i < 2; i++) mdf_frame_free(&f[i]);
}

/* ---- against ASE's reader ------------------------------------------------------------------------ */

static int run_python(const char *mode)
{
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "'%s' '%s/tests/lammps_data_check.py' %s '%s'", g_python, tu_srcdir(), mode, g_dir);
    return system(cmd);
}

static double charge_of(const mdf_frame *f, int64_t a)
{
    for (size_t j = 0; j < f->nextra; j++)
        if (!strcmp(f->extra[j].name, "initial_charges")) return strtod(f->extra[j].tokens[a], NULL);
    return 0.0;
}

/* mdflow's reading of a data file against what ASE read (name.ref):
 * positions and cell to tol absolute, velocities 1e-14 relative. */
static void compare_with_ref(const mdf_frame *f, const char *ref, double tol)
{
    FILE *fp = fopen(path_in(ref), "r");
    assert_non_null(fp);
    double c[9];
    assert_int_equal(fscanf(fp, "cell %lf %lf %lf %lf %lf %lf %lf %lf %lf", &c[0], &c[1], &c[2], &c[3], &c[4], &c[5],
                            &c[6], &c[7], &c[8]),
                     9);
    for (int k = 0; k < 9; k++) assert_true(fabs(c[k] - f->cell[k]) <= tol);
    int64_t a = 0;
    double row[7];
    while (fscanf(fp, "%lf %lf %lf %lf %lf %lf %lf", &row[0], &row[1], &row[2], &row[3], &row[4], &row[5], &row[6]) == 7) {
        assert_true(a < f->natoms);
        for (int d = 0; d < 3; d++) {
            if (fabs(row[d] - f->positions[3 * a + d]) > tol)
                fail_msg("%s: atom %lld: x%d %.17g, ASE %.17g", ref, (long long)a + 1, d, f->positions[3 * a + d], row[d]);
            double v = f->velocities ? f->velocities[3 * a + d] : 0.0;
            assert_true(fabs(v - row[3 + d]) <= 1e-14 * fmax(fabs(row[3 + d]), 1e-3));
        }
        assert_true(charge_of(f, a) == row[6]);
        a++;
    }
    fclose(fp);
    assert_int_equal(a, f->natoms);
}

static void read_one(const char *name, const int32_t *types, int ntypes, mdf_frame_list *l)
{
    mdf_frame_list_init(l);
    TU_CALL(mdf_lammps_data_read, path_in(name), types, ntypes, l);
    assert_int_equal(l->count, 1);
}

static void test_ase_written(void **state)
{
    (void)state;
    if (!g_python) skip();
    assert_int_equal(run_python("write-ase"), 0);
    /* ASE writes no Masses: without the types' elements there is no mapping. */
    mdf_frame_list l;
    mdf_frame_list_init(&l);
    mdf_error err;
    mdf_error_clear(&err);
    assert_int_not_equal(mdf_lammps_data_read(path_in("ase_atomic.data"), NULL, 0, &l, &err), MDF_OK);
    printf("%s\n", err.message);
    assert_non_null(strstr(err.message, "ase_atomic.data: atom type 1 cannot be mapped"));
    assert_non_null(strstr(err.message, "no Masses section"));
    assert_non_null(strstr(err.message, "--lammps-types"));
    mdf_frame_list_free(&l);

    const int32_t cuni[2] = {29, 28}, nacl[2] = {11, 17};
    read_one("ase_atomic.data", cuni, 2, &l);
    compare_with_ref(&l.frames[0], "ase_atomic.ref", 0.0);
    for (int64_t a = 0; a < l.frames[0].natoms; a++) assert_int_equal(l.frames[0].numbers[a], a % 2 ? 28 : 29);
    assert_true(l.frames[0].pbc[0] && l.frames[0].pbc[1] && l.frames[0].pbc[2]);
    mdf_frame_list_free(&l);
    read_one("ase_charge.data", nacl, 2, &l);
    assert_null(l.frames[0].velocities);
    compare_with_ref(&l.frames[0], "ase_charge.ref", 0.0);
    mdf_frame_list_free(&l);
}

/* LAMMPS's write_data (charge, triclinic, image flags, velocities): types
 * from the masses, image flags applied. */
static void test_lammps_written(void **state)
{
    (void)state;
    if (!g_python) skip();
    tu_lmp_run(g_dir, "units metal\natom_style charge\nboundary p p p\n"
                      "region box prism -1 4.5 0.5 5 0 6 1.0 0.5 -0.7\ncreate_box 2 box\n"
                      "create_atoms 1 single 1 1 1\ncreate_atoms 2 single 2.5 3 4\ncreate_atoms 1 single 3.9 4.2 1.5\n"
                      "mass 1 63.546\nmass 2 58.6934\nset atom 1 charge 0.5\nset atom 2 charge -0.25\n"
                      "set atom 1 image 1 0 -1\nset atom 3 image -2 1 0\nvelocity all create 300 4 dist gaussian\n"
                      "pair_style zero 3.0\npair_coeff * *\nrun 0\nwrite_data lmp.data\n");
    assert_true(file_contains(path_in("lmp.data"), "xy xz yz"));
    assert_int_equal(run_python("ref-lmp"), 0);
    mdf_frame_list l;
    read_one("lmp.data", NULL, 0, &l);
    const mdf_frame *f = &l.frames[0];
    assert_int_equal(f->natoms, 3);
    assert_int_equal(f->numbers[0], 29);
    assert_int_equal(f->numbers[1], 28);
    assert_true(f->masses && f->masses[1] == 58.6934);
    compare_with_ref(f, "lmp.ref", 1e-12);
    /* the image flags moved atom 1 by a - c: not where the Atoms line puts it */
    assert_true(fabs(f->positions[0] - 1.0) > 1.0);
    assert_true(f->cell[0] == 5.5 && f->cell[4] == 4.5); /* hi - lo; the origin (-1, 0.5, 0) stays in the positions */
    mdf_frame_list_free(&l);
}

/* mdflow writes a charge-style data file; ASE reads it as the extxyz of the
 * same frame. */
static void test_ase_reads_mdflow(void **state)
{
    (void)state;
    if (!g_python) skip();
    mdf_frame f = tu_fcc(2, 2, 2, 5.64, 11, 0.1, 0.1, 21);
    add_velocities(&f, 22);
    f.masses = malloc((size_t)f.natoms * sizeof *f.masses); /* so that md.xyz has them for ASE */
    f.extra = calloc(1, sizeof *f.extra);
    f.nextra = 1;
    f.extra[0] = (mdf_extra_column){strdup("initial_charges"), 'R', 1, calloc((size_t)f.natoms, sizeof(char *))};
    for (int64_t a = 0; a < f.natoms; a++) {
        f.numbers[a] = a % 2 ? 17 : 11;
        f.masses[a] = mdf_element_mass(f.numbers[a]);
        f.extra[0].tokens[a] = strdup(a % 2 ? "-0.8125" : "0.8125");
    }
    TU_CALL(mdf_lammps_data_write, path_in("md.data"), &f);
    TU_CALL(mdf_xyz_write, path_in("md.xyz"), &f, 1, 0);
    assert_true(file_contains(path_in("md.data"), "Atoms # charge"));
    assert_true(file_contains(path_in("md.data"), "# Cl"));
    assert_int_equal(run_python("check"), 0);
    /* and back into mdflow, by the Masses comments */
    mdf_frame_list l;
    read_one("md.data", NULL, 0, &l);
    for (int64_t a = 0; a < f.natoms; a++) {
        assert_int_equal(l.frames[0].numbers[a], f.numbers[a]);
        assert_true(charge_of(&l.frames[0], a) == charge_of(&f, a));
        for (int d = 0; d < 3; d++) assert_true(l.frames[0].positions[3 * a + d] == f.positions[3 * a + d]);
    }
    for (int k = 0; k < 9; k++) assert_true(l.frames[0].cell[k] == f.cell[k]);
    mdf_frame_list_free(&l);
    mdf_frame_free(&f);
}

/* ---- bad files ------------------------------------------------------------------------------------ */

static void expect_error(const char *text, const char *const *parts)
{
    tu_write_text(path_in("bad.data"), text);
    mdf_frame_list l;
    mdf_frame_list_init(&l);
    mdf_error err;
    mdf_error_clear(&err);
    assert_int_not_equal(mdf_lammps_data_read(path_in("bad.data"), NULL, 0, &l, &err), MDF_OK);
    printf("  %s\n", err.message);
    for (int k = 0; parts[k]; k++)
        if (!strstr(err.message, parts[k])) fail_msg("'%s' not in: %s", parts[k], err.message);
    mdf_frame_list_free(&l);
}

#define HEAD "title\n\n2 atoms\n1 atom types\n0 5 xlo xhi\n0 5 ylo yhi\n0 5 zlo zhi\n\nMasses\n\n1 39.95\n\n"

static void test_bad_files(void **state)
{
    (void)state;
    expect_error(HEAD "Atoms # atomic\n\n1 1 0 0 0\n2 1 1 x1 1\n", (const char *const[]){"bad.data:16:", "coordinate 'x1'", NULL});
    expect_error(HEAD "Atoms # full\n\n1 1 1 0 0 0 0\n", (const char *const[]){"bad.data:13:", "atom_style full", "atomic and charge", NULL});
    expect_error(HEAD "Atoms\n\n1 1 0 0 0\n1 1 1 1 1\n", (const char *const[]){"atom id 1 appears twice", NULL});
    expect_error(HEAD "Atoms\n\n1 1 0 0 0\n2 3 1 1 1\n", (const char *const[]){"bad.data:16:", "atom type '3'", NULL});
    expect_error(HEAD "Atoms\n\n1 1 0 0 0\n", (const char *const[]){"2 atoms but the Atoms section lists 1", NULL});
    expect_error("title\n\n2 atoms\n1 atom types\n0 5 xlo xhi\n0 5 zlo zhi\n\nAtoms\n\n1 1 0 0 0\n2 1 1 1 1\n",
                 (const char *const[]){"no 'ylo yhi' line", NULL});
    expect_error("title\n\n2 atoms\n1 atom types\n0 5 xlo xhi\n0 5 ylo yhi\n0 5 zlo zhi\n\nMasses\n\n1 12.5\n\n"
                 "Atoms\n\n1 1 0 0 0\n2 1 1 1 1\n",
                 (const char *const[]){"atom type 1 cannot be mapped", "12.5 (line 11)", "within 0.01 amu", "# Cu", NULL});
    /* atom 1's velocity twice, atom 2's none: the count alone would pass */
    expect_error(HEAD "Atoms\n\n1 1 0 0 0\n2 1 1 1 1\n\nVelocities\n\n1 0 0 0\n1 1 1 1\n",
                 (const char *const[]){"bad.data:21:", "velocity of atom 1 is given twice", NULL});
    /* atom_style bond rows (id mol type x y z) would read as charge rows */
    expect_error("title\n\n2 atoms\n1 bonds\n1 atom types\n1 bond types\n0 5 xlo xhi\n0 5 ylo yhi\n0 5 zlo zhi\n\n"
                 "Atoms\n\n1 1 1 0 0 0\n2 1 1 1 1 1\n",
                 (const char *const[]){"bad.data:4:", "'1 bonds'", "atomic and charge", NULL});
}

int main(void)
{
    if (!tu_have("lmp")) {
        fprintf(stderr, "lmp (LAMMPS) not found: skipping\n");
        return TU_SKIP;
    }
    g_pot = tu_lammps_potentials();
    g_python = tu_python_with("ase");
    if (!g_python) fprintf(stderr, "no Python with ase: the ASE cases are skipped\n");
    g_dir = tu_tmpdir();
    tu_start(NULL, 2, 0);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_lj_orthogonal), cmocka_unit_test(test_lj_general_triclinic),
        cmocka_unit_test(test_lj_open_direction),
        cmocka_unit_test(test_eam_triclinic), cmocka_unit_test(test_dump_rerun),
        cmocka_unit_test(test_ase_written),   cmocka_unit_test(test_lammps_written),
        cmocka_unit_test(test_ase_reads_mdflow), cmocka_unit_test(test_bad_files),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    tu_stop();
    if (rc != 0) fprintf(stderr, "files of the last case kept in %s\n", g_dir);
    if (rc == 0) tu_remove_tree(g_dir);
    free(g_dir);
    return rc;
}
