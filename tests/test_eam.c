/* mdflow tests — the built-in EAM model ("eam") against LAMMPS.
 *
 * Every reference number comes from LAMMPS (`lmp`, units metal) run at test
 * time on configurations this program writes as data files:
 *   (a) eam/alloy with AlCu.eam.alloy: periodic jittered fcc crystals with
 *       random Al/Cu occupation (orthorhombic and triclinic), and an open
 *       Al/Cu cluster (LAMMPS `boundary f f f`);
 *   (b) eam (funcfl) with Cu_u3.eam: a jittered Cu crystal;
 *   (c) eam/fs with Al_mm.eam.fs (a jittered Al crystal), CuZr_mm.eam.fs
 *       and NiAlH_jea.eam.fs (random occupation; NiAlH's cross densities
 *       rho_{a,b} and rho_{b,a} differ);
 *   (d) a 2,916-atom crystal, sliced into chunks whose densities are
 *       gathered (the auxiliary pass's gather path), alone and beside a
 *       whole system whose chunk computes its own densities (fused);
 *   (e) densities beyond the F(rho) table (F continued linearly, as LAMMPS)
 *       and lists too short for the neighbours (atoms walked from cells).
 * LAMMPS writes forces with %.17g (dump sorted by id) and prints pe and the
 * pressure tensor with %.17g; velocities are zero, so the pressure is the
 * virial: W_ab = P_ab V / nktv2p, nktv2p measured from LAMMPS (as in
 * test_lammps.c). Tolerances 1e-10 relative: energy |ΔE|/|E|, forces
 * max |ΔF| / max |F|, virial max |ΔW| / max |W|. Both codes evaluate the
 * same spline tables in double precision; differences are summation order
 * (~1e-14). A wrong table, a swapped density direction (rho_ij for
 * rho_ji), a missing F'(rho_j) term or the wrong extrapolation shows at
 * 1e-4 or more.
 *
 * Also: file errors (missing file, bad header, short table) name the file
 * and the line; a system with an element the file lacks is refused with a
 * message naming the system, the element, the file and its elements. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "testutil.h"
#include "mdflow/extension.h"

#define TOL 1e-10

static char *g_dir;
static const char *g_pot;
static double g_nktv2p;
static double g_max_e, g_max_f, g_max_w;

typedef struct eam_case {
    const char *name;
    const char *style; /* LAMMPS pair style */
    const char *file;  /* in g_pot */
    int nel;
    int z[4];          /* LAMMPS types 1..nel */
} eam_case;

typedef struct lmp_ref {
    double pe, w[9], *forces;
} lmp_ref;

static void lammps_reference(const eam_case *c, const mdf_frame *f, lmp_ref *ref)
{
    tu_lmp_write_data(g_dir, f, c->nel, c->z);
    char coeff[1024], in[4096];
    if (!strcmp(c->style, "eam")) {
        snprintf(coeff, sizeof coeff, "pair_coeff 1 1 %s/%s\n", g_pot, c->file);
    } else {
        int n = snprintf(coeff, sizeof coeff, "pair_coeff * * %s/%s", g_pot, c->file);
        for (int t = 0; t < c->nel; t++) n += snprintf(coeff + n, sizeof coeff - (size_t)n, " %s", mdf_element_symbol(c->z[t]));
        snprintf(coeff + n, sizeof coeff - (size_t)n, "\n");
    }
    snprintf(in, sizeof in,
             "units metal\natom_style atomic\nboundary %c %c %c\nread_data data.lmp\n"
             "pair_style %s\n%s%s",
             f->pbc[0] ? 'p' : 'f', f->pbc[1] ? 'p' : 'f', f->pbc[2] ? 'p' : 'f', c->style, coeff, tu_lmp_point_input);
    tu_lmp_run(g_dir, in);
    tu_lmp_point pt;
    tu_lmp_read_point(g_dir, f->natoms, c->name, &pt);
    ref->pe = pt.pe;
    ref->forces = pt.forces;
    for (int k = 0; k < 9; k++) ref->w[k] = pt.p[k] * pt.vol / g_nktv2p; /* the virial, eV */
}

static const char *g_density_hint; /* NULL: the model's default */

static mdf_model *eam_model(const char *file)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", g_pot, file);
    return tu_eam_model(path, g_density_hint);
}

/* Evaluates the frames in one batch (nshards: 0 default) and compares each
 * system with LAMMPS. */
static void compare(const eam_case *c, mdf_frame *frames, int n, int nshards)
{
    lmp_ref refs[8];
    assert_true(n <= 8);
    for (int s = 0; s < n; s++) lammps_reference(c, &frames[s], &refs[s]);
    mdf_model *m = eam_model(c->file);
    mdf_batch_config bc;
    mdf_batch_config_init(&bc);
    bc.nshards = nshards;
    mdf_batch *b;
    TU_CALL(mdf_batch_create, frames, (size_t)n, &bc, &b);
    TU_CALL(mdf_compute_forces, b, m);
    TU_CALL(mdf_batch_sync, b);
    double we = 0, wf = 0, ww = 0;
    for (int s = 0; s < n; s++) {
        mdf_frame out;
        memset(&out, 0, sizeof out);
        TU_CALL(mdf_batch_get_frame, b, (size_t)s, &out);
        mdf_system_view v;
        TU_CALL(mdf_batch_get_system, b, (size_t)s, &v);
        int64_t na = frames[s].natoms;
        double de = tu_reldiff(v.potential_energy, refs[s].pe, 0.0);
        double fs = 0, df = 0, wsc = 0, dw = 0;
        for (int64_t k = 0; k < 3 * na; k++) fs = fmax(fs, fabs(refs[s].forces[k]));
        for (int64_t k = 0; k < 3 * na; k++) df = fmax(df, fabs(out.forces[k] - refs[s].forces[k]));
        for (int k = 0; k < 9; k++) wsc = fmax(wsc, fabs(refs[s].w[k]));
        for (int k = 0; k < 9; k++) dw = fmax(dw, fabs(v.virial[k] - refs[s].w[k]));
        df /= fs;
        dw /= wsc;
        printf("#   %s system %d (%lld atoms): E %.12g eV (LAMMPS %.12g), rel. dev. energy %.2e forces %.2e virial "
               "%.2e\n",
               c->name, s, (long long)na, v.potential_energy, refs[s].pe, de, df, dw);
        we = fmax(we, de);
        wf = fmax(wf, df);
        ww = fmax(ww, dw);
        assert_true(fs > 1e-3); /* jittered: forces are not zero by symmetry */
        free(refs[s].forces);
        mdf_frame_free(&out);
    }
    g_max_e = fmax(g_max_e, we);
    g_max_f = fmax(g_max_f, wf);
    g_max_w = fmax(g_max_w, ww);
    mdf_batch_destroy(b);
    mdf_model_destroy(m);
    assert_true(we < TOL);
    assert_true(wf < TOL);
    assert_true(ww < TOL);
}

/* Random Al/Cu occupation. */
static void alloy(mdf_frame *f, double cu_fraction, uint64_t seed)
{
    uint64_t st = seed;
    for (int64_t i = 0; i < f->natoms; i++) f->numbers[i] = tu_rand(&st) < cu_fraction ? 29 : 13;
    if (f->masses) {
        free(f->masses);
        f->masses = NULL;
    }
}

static const eam_case alcu = {"AlCu eam/alloy", "eam/alloy", "AlCu.eam.alloy", 2, {13, 29}};

static void test_alloy_crystals(void **state)
{
    (void)state;
    mdf_frame in[3] = {tu_fcc(5, 5, 5, 3.9, 13, 0.0, 0.12, 11), tu_fcc(5, 5, 5, 3.85, 13, 0.1, 0.1, 12),
                       tu_fcc(5, 5, 5, 4.0, 13, 0.0, 0.15, 13)};
    alloy(&in[0], 0.5, 21);
    alloy(&in[1], 0.3, 22);
    alloy(&in[2], 0.8, 23);
    compare(&alcu, in, 3, 0);
    compare(&alcu, in, 3, 1);
    for (int k = 0; k < 3; k++) mdf_frame_free(&in[k]);
}

static void test_alloy_cluster(void **state)
{
    (void)state;
    mdf_frame in = tu_fcc(3, 3, 3, 3.9, 13, 0.0, 0.1, 31);
    alloy(&in, 0.5, 32);
    in.has_cell = 0;
    memset(in.cell, 0, sizeof in.cell);
    memset(in.pbc, 0, sizeof in.pbc);
    compare(&alcu, &in, 1, 0);
    mdf_frame_free(&in);
}

/* 2,916 atoms: sliced into chunks whose densities are gathered. */
static void test_sliced(void **state)
{
    (void)state;
    mdf_frame in = tu_fcc(9, 9, 9, 3.7, 13, 0.0, 0.1, 41);
    alloy(&in, 0.6, 42);
    compare(&alcu, &in, 1, 0);
    mdf_frame_free(&in);
}

/* One shard holding a sliced system (2,916 atoms: two slices, their
 * densities from the auxiliary pass, gathered) and a whole one (108 atoms:
 * its chunk computes its own densities in the main task, with CPU workers
 * only, MDF_MODEL_AUX_FUSED_WHOLE): both kinds of chunk in one evaluation. */
static void test_sliced_beside_whole(void **state)
{
    (void)state;
    mdf_frame in[2] = {tu_fcc(9, 9, 9, 3.7, 13, 0.0, 0.1, 43), tu_fcc(3, 3, 3, 3.8, 13, 0.0, 0.1, 44)};
    alloy(&in[0], 0.6, 45);
    alloy(&in[1], 0.4, 46);
    compare(&alcu, in, 2, 1);
    for (int k = 0; k < 2; k++) mdf_frame_free(&in[k]);
}

static void test_funcfl(void **state)
{
    (void)state;
    static const eam_case cu = {"Cu eam (funcfl)", "eam", "Cu_u3.eam", 1, {29}};
    mdf_frame in[2] = {tu_fcc(5, 5, 5, 3.615, 29, 0.0, 0.1, 51), tu_fcc(5, 5, 5, 3.5, 29, 0.05, 0.1, 52)};
    compare(&cu, in, 2, 0);
    for (int k = 0; k < 2; k++) mdf_frame_free(&in[k]);
}

/* Densities beyond the table (rho > rhomax = 0.25 for Cu_u3 in the core of
 * a cluster squeezed to a = 2.2 Å): F continues linearly, as in LAMMPS. */
static void test_beyond_rhomax(void **state)
{
    (void)state;
    static const eam_case cu = {"Cu eam (funcfl), squeezed cluster", "eam", "Cu_u3.eam", 1, {29}};
    mdf_frame in = tu_fcc(3, 3, 3, 2.2, 29, 0.0, 0.05, 71);
    in.has_cell = 0;
    memset(in.cell, 0, sizeof in.cell);
    memset(in.pbc, 0, sizeof in.pbc);
    compare(&cu, &in, 1, 0);
    mdf_frame_free(&in);
}

/* Lists too short for the neighbours (density_hint tiny): atoms walk their cells. */
static void test_short_lists(void **state)
{
    (void)state;
    mdf_frame in[2] = {tu_fcc(5, 5, 5, 3.9, 13, 0.1, 0.12, 81), tu_fcc(3, 3, 3, 3.9, 13, 0.0, 0.1, 82)};
    alloy(&in[0], 0.5, 83);
    alloy(&in[1], 0.5, 84);
    in[1].has_cell = 0;
    memset(in[1].cell, 0, sizeof in[1].cell);
    memset(in[1].pbc, 0, sizeof in[1].pbc);
    g_density_hint = "0.0005";
    compare(&alcu, &in[0], 1, 0);
    compare(&alcu, &in[1], 1, 0);
    g_density_hint = NULL;
    for (int k = 0; k < 2; k++) mdf_frame_free(&in[k]);
}

static void test_fs(void **state)
{
    (void)state;
    static const eam_case al = {"Al eam/fs", "eam/fs", "Al_mm.eam.fs", 1, {13}};
    mdf_frame in = tu_fcc(5, 5, 5, 4.05, 13, 0.0, 0.12, 61);
    compare(&al, &in, 1, 0);
    mdf_frame_free(&in);
    /* Several elements. CuZr_mm's cross densities are symmetric
     * (rho_{Cu,Zr} = rho_{Zr,Cu}); NiAlH_jea's are not, so reading the
     * density at i due to j the wrong way round fails there. */
    static const eam_case cuzr = {"CuZr eam/fs", "eam/fs", "CuZr_mm.eam.fs", 2, {29, 40}};
    static const eam_case nialh = {"NiAlH eam/fs", "eam/fs", "NiAlH_jea.eam.fs", 3, {28, 13, 1}};
    const eam_case *cases[2] = {&cuzr, &nialh};
    for (int k = 0; k < 2; k++) {
        mdf_frame mix = tu_fcc(5, 5, 5, k ? 3.7 : 4.1, 29, 0.05, 0.12, 62 + (uint64_t)k);
        uint64_t st = 63 + (uint64_t)k;
        for (int64_t i = 0; i < mix.natoms; i++) {
            double u = tu_rand(&st);
            mix.numbers[i] = k ? (u < 0.5 ? 28 : u < 0.9 ? 13 : 1) : (u < 0.4 ? 40 : 29);
        }
        if (mix.masses) {
            free(mix.masses);
            mix.masses = NULL;
        }
        compare(cases[k], &mix, 1, 0);
        mdf_frame_free(&mix);
    }
}

/* Small periodic cells (2 and 4 atoms, triclinic), narrower than the
 * cut-off (AlCu: 6.29 Å over widths of 3.2-3.9 Å; Cu_u3: 4.95 Å): every
 * image of every neighbour counts, in the densities and the forces. */
static void test_small_cells(void **state)
{
    (void)state;
    const int pbc[3] = {1, 1, 1}, zs[2] = {13, 29};
    const double two[9] = {3.4, 0, 0, 0.7, 3.3, 0, -0.5, 0.6, 3.5};
    mdf_frame in[3] = {tu_fcc(1, 1, 1, 3.9, 13, 0.1, 0.12, 111), tu_random(2, two, pbc, 2.3, zs, 2, 112),
                       tu_fcc(1, 1, 1, 4.0, 13, -0.2, 0.15, 113)};
    alloy(&in[0], 0.5, 114);
    alloy(&in[2], 0.25, 115);
    compare(&alcu, in, 3, 0);
    compare(&alcu, in, 3, 1);
    for (int k = 0; k < 3; k++) mdf_frame_free(&in[k]);
    static const eam_case cu = {"Cu eam (funcfl)", "eam", "Cu_u3.eam", 1, {29}};
    const int zcu[1] = {29};
    const double cu2[9] = {2.9, 0, 0, 0.4, 2.8, 0, 0.3, -0.2, 3.0};
    mdf_frame c[2] = {tu_fcc(1, 1, 1, 3.615, 29, -0.15, 0.1, 116), tu_random(2, cu2, pbc, 2.1, zcu, 1, 117)};
    compare(&cu, c, 2, 0);
    for (int k = 0; k < 2; k++) mdf_frame_free(&c[k]);
}

/* A model created from `text` fails with a message holding every string in want. */
static void expect_file_error(const char *name, const char *text, const char *const *want)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", g_dir, name);
    if (text) tu_write_text(path, text);
    mdf_model_config *c;
    TU_CALL(mdf_model_config_create, "eam", &c);
    TU_CALL(mdf_model_config_set, c, "file", path);
    mdf_model *m = NULL;
    mdf_error err;
    mdf_error_clear(&err);
    mdf_status st = mdf_model_create(c, &m, &err);
    mdf_model_config_destroy(c);
    printf("#   %s: %s\n", name, err.message);
    assert_int_not_equal(st, MDF_OK);
    assert_null(m);
    for (int k = 0; want[k]; k++)
        if (!strstr(err.message, want[k])) fail_msg("'%s' not in the message '%s'", want[k], err.message);
}

static void test_file_errors(void **state)
{
    (void)state;
    const char *missing[] = {"nothere.eam.alloy", NULL};
    expect_file_error("nothere.eam.alloy", NULL, missing);
    const char *header[] = {"bad.eam.alloy:4", NULL};
    expect_file_error("bad.eam.alloy", "c\nc\nc\n2 Al Xx\n", header);
    const char *grid[] = {"grid.eam.alloy:5", NULL};
    expect_file_error("grid.eam.alloy", "c\nc\nc\n1 Al\n10 0.1 10 x 5.0\n", grid);
    const char *shortt[] = {"short.eam.alloy:9", "rho(r) of Al", "3 of its 10", NULL};
    expect_file_error("short.eam.alloy",
                      "c\nc\nc\n1 Al\n10 0.1 10 0.5 4.0\n13 26.98 4.05 fcc\n"
                      "1 2 3 4 5\n6 7 8 9 10\n1 2 3\n",
                      shortt);
    const char *nan[] = {"nan.eam.alloy:7", "'abc'", NULL};
    expect_file_error("nan.eam.alloy", "c\nc\nc\n1 Al\n10 0.1 10 0.5 4.0\n13 26.98 4.05 fcc\n1 2 abc\n", nan);
}

/* A system with an element the file lacks is refused, naming the system,
 * the element, the file and the elements the file covers. */
static void test_missing_element(void **state)
{
    (void)state;
    mdf_frame in[2] = {tu_fcc(4, 4, 4, 4.05, 13, 0.0, 0.0, 91), tu_fcc(4, 4, 4, 4.05, 13, 0.0, 0.0, 92)};
    in[1].numbers[5] = 28; /* Ni */
    free(in[1].masses);
    in[1].masses = NULL;
    mdf_model *m = eam_model("AlCu.eam.alloy");
    mdf_batch *b;
    TU_CALL(mdf_batch_create, in, 2, NULL, &b);
    mdf_error err;
    mdf_error_clear(&err);
    mdf_status st = mdf_compute_forces(b, m, &err);
    printf("#   %s\n", err.message);
    assert_int_not_equal(st, MDF_OK);
    char file[1024];
    snprintf(file, sizeof file, "%s/AlCu.eam.alloy", g_pot);
    const char *want[] = {"system 1", "atom 5", "Ni", file, "covers elements Al, Cu only", NULL};
    for (int k = 0; want[k]; k++)
        if (!strstr(err.message, want[k])) fail_msg("'%s' not in the message '%s'", want[k], err.message);
    assert_null(strstr(err.message, "species")); /* not the generic advice */
    mdf_batch_destroy(b);
    mdf_model_destroy(m);
    for (int k = 0; k < 2; k++) mdf_frame_free(&in[k]);
}

static void test_nktv2p(void **state)
{
    (void)state;
    g_nktv2p = tu_lmp_nktv2p(g_dir);
    assert_true(fabs(g_nktv2p / 1.602176634e6 - 1.0) < 1e-6);
}

int main(void)
{
    if (!tu_have("lmp")) {
        fprintf(stderr, "lmp (LAMMPS) not found: skipping\n");
        return TU_SKIP;
    }
    g_pot = tu_lammps_potentials();
    char probe[1024];
    snprintf(probe, sizeof probe, "%s/AlCu.eam.alloy", g_pot);
    FILE *fp = fopen(probe, "r");
    if (!fp) {
        fprintf(stderr, "%s not found (set MDF_LAMMPS_POTENTIALS): skipping\n", probe);
        return TU_SKIP;
    }
    fclose(fp);
    g_dir = tu_tmpdir();
    tu_start(NULL, 2, 0);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_nktv2p),       cmocka_unit_test(test_alloy_crystals), cmocka_unit_test(test_alloy_cluster),
        cmocka_unit_test(test_sliced),       cmocka_unit_test(test_sliced_beside_whole), cmocka_unit_test(test_funcfl),         cmocka_unit_test(test_fs),
        cmocka_unit_test(test_beyond_rhomax), cmocka_unit_test(test_short_lists), cmocka_unit_test(test_small_cells),
        cmocka_unit_test(test_file_errors),  cmocka_unit_test(test_missing_element),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    printf("max relative deviations from LAMMPS: energy %.2e, forces %.2e, virial %.2e\n", g_max_e, g_max_f, g_max_w);
    tu_stop();
    if (rc != 0) fprintf(stderr, "LAMMPS inputs and outputs of the last case kept in %s\n", g_dir);
    if (rc == 0) tu_remove_tree(g_dir);
    free(g_dir);
    return rc;
}
