/* mdflow tests — variable-cell relaxation (fire_cell, lbfgs_cell: ASE's
 * FIRE and LBFGS in FrechetCellFilter form) against LAMMPS.
 *
 * The references are computed here, by `lmp` (units metal, pair_style
 * lj/cut, no shift: the energy shift does not change forces or stress):
 * argon LJ fcc, 4x4x4 conventional cells (256 atoms), cutoff 6.8 Å (2σ,
 * between the third and fourth neighbour shells over the whole range of
 * lattice constants the tests visit, so that no pair crosses the cutoff
 * near a minimum), relaxed by `fix box/relax iso P` + minimize (cg,
 * quadratic line search, ftol 1e-12, twice).
 *
 *   1. zero pressure: a batch of strained crystals (perfect, expanded and
 *      sheared, compressed and jittered) relaxed by FIRE and by L-BFGS in
 *      one stage each; every system converges on its own (status 1, its
 *      own step count) to LAMMPS's lattice constant within 1e-5 relative,
 *      with the cell cubic again (shear gone);
 *   2. 1 GPa: the same with pressure_GPa = 1; the final pressure (from the
 *      virial, -tr σ / 3) equals 1 GPa within smax, every stress component
 *      is within smax of -P δ_ij, and the volume matches LAMMPS's;
 *   3. errors: a negative smax, and a cluster (no cell) in a cell
 *      relaxation, named;
 *   4. step by step against ASE (tests/cell_ase_check.py, /usr/bin/python3
 *      or MDF_PYTHON): 25 steps of FIRE and of LBFGS on a FrechetCellFilter
 *      (exp_cell_factor = N, scalar_pressure 0 and 0.5 GPa; ASE's
 *      LennardJones) from two strained, sheared, jittered 108-atom crystals
 *      give the same positions and cells (skipped without ASE);
 *   5. Cu with native EAM (Cu_u3.eam from lammps-data): 4-atom cells
 *      (narrower than the cut-off) and a 32-atom cell, strained, sheared
 *      and jittered, by FIRE and L-BFGS at 0 and 2 GPa, against LAMMPS's
 *      box/relax of the 4-atom cell (lattice constant to 1e-5, volume);
 *   6. Si with Stillinger-Weber through the KIM bridge (8-atom diamond
 *      cells, strained, sheared, jittered) against LAMMPS's kim init + kim
 *      interactions + box/relax, at 0 and 1 GPa (skipped without KIM).
 * Exits 77 (skipped) without lmp. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "config.h"
#include "testutil.h"
#include "mdflow/extension.h"

#define NC 4                     /* conventional cells per direction */
#define NATOMS (4 * NC * NC * NC)
#define RC 6.8
#define GPA_IN_BAR 1e4
#define FMAX 1e-5                /* eV/Å */
#define SMAX 1e-5                /* GPa */
#define NSYS 4

static char *g_dir;
static double g_a0, g_a1;        /* LAMMPS lattice constants at 0 and 1 GPa, Å */
static double g_v1;              /* LAMMPS volume at 1 GPa, Å³ */

/* LAMMPS's relaxed cell at pressure_bar for `setup` (the lines that make
 * the box, the atoms and the pair style) after `units` (the units line, or
 * KIM's "kim init"). */
static void run_lmp_units(const char *units, const char *setup, double pressure_bar, double *vol, double *lx)
{
    char path[1024], in[4096];
    int len = snprintf(in, sizeof in,
             "%satom_style atomic\nboundary p p p\n%s"
             "fix 1 all box/relax iso %.17g vmax 0.001\nmin_modify line quadratic\n"
             "minimize 0.0 1e-12 100000 1000000\nminimize 0.0 1e-12 100000 1000000\n"
             "print \"$(vol:%%.17g) $(lx:%%.17g) $(press:%%.17g)\" file results.txt\n",
             units, setup, pressure_bar);
    if (len < 0 || (size_t)len >= sizeof in) fail_msg("the LAMMPS input for %s does not fit %zu bytes", units, sizeof in);
    tu_lmp_run(g_dir, in);
    snprintf(path, sizeof path, "%s/results.txt", g_dir);
    FILE *fp = fopen(path, "r");
    double press = 0.0;
    if (!fp || fscanf(fp, "%lf %lf %lf", vol, lx, &press) != 3) fail_msg("LAMMPS printed no results in %s", g_dir);
    fclose(fp);
    if (fabs(press - pressure_bar) > 1e-3 * fmax(1.0, fabs(pressure_bar)))
        fail_msg("LAMMPS did not reach %g bar (%g)", pressure_bar, press);
}

static void run_lmp_setup(const char *setup, double pressure_bar, double *vol, double *lx)
{
    run_lmp_units("units metal\n", setup, pressure_bar, vol, lx);
}

/* The argon crystal of the LJ cases. */
static void run_lmp(double pressure_bar, double *vol, double *lx)
{
    char setup[1024];
    snprintf(setup, sizeof setup,
             "lattice fcc 5.3\nregion box block 0 %d 0 %d 0 %d\ncreate_box 1 box\ncreate_atoms 1 box\n"
             "mass 1 39.948\npair_style lj/cut %.17g\npair_coeff 1 1 0.0104 3.40\n",
             NC, NC, NC, RC);
    run_lmp_setup(setup, pressure_bar, vol, lx);
}

static int setup(void **state)
{
    (void)state;
    double v0, lx0, lx1;
    run_lmp(0.0, &v0, &lx0);
    run_lmp(1.0 * GPA_IN_BAR, &g_v1, &lx1);
    g_a0 = lx0 / NC;
    g_a1 = lx1 / NC;
    fprintf(stderr, "LAMMPS: a = %.10f Å at 0 GPa, %.10f Å at 1 GPa (V %.6f Å³)\n", g_a0, g_a1, g_v1);
    return 0;
}

/* The strained starting crystals: perfect (a bit large), expanded and
 * sheared (triclinic), compressed and jittered, sheared the other way. */
static void strained(mdf_frame *fr)
{
    fr[0] = tu_fcc(NC, NC, NC, 5.30, 18, 0.0, 0.0, 1);
    fr[1] = tu_fcc(NC, NC, NC, 5.40, 18, 0.03, 0.0, 2);
    fr[2] = tu_fcc(NC, NC, NC, 5.15, 18, 0.0, 0.02, 3);
    fr[3] = tu_fcc(NC, NC, NC, 5.22, 18, -0.02, 0.01, 4);
}

static mdf_model *argon(void)
{
    mdf_lj_config cfg = tu_argon(RC, 0);
    mdf_model *m = NULL;
    TU_CALL(mdf_model_create_lj, &cfg, &m);
    return m;
}

static mdf_stage *cell_stage(const char *method, double pressure_GPa)
{
    mdf_stage_config sc;
    mdf_stage_config_init(&sc);
    sc.integrator = method;
    sc.max_steps = 5000;
    sc.skin = 0.5;
    mdf_param_list pl;
    memset(&pl, 0, sizeof pl);
    tu_param(&pl, "pressure_GPa", pressure_GPa);
    sc.method_params = pl;
    mdf_stage *s = NULL;
    TU_CALL(mdf_stage_create, &sc, &s);
    TU_CALL(mdf_stage_add_criterion, s, MDF_CRITERION_FMAX, FMAX);
    TU_CALL(mdf_stage_add_criterion, s, MDF_CRITERION_SMAX, SMAX);
    return s;
}

/* A relaxed system (view v) against the reference lattice constant a_ref
 * (cells: conventional cells in it) and, when v_cell_ref > 0, the
 * reference volume per conventional cell: converged in force and stress,
 * at the target pressure, cubic again. */
static void check_relaxed(const mdf_system_view *vp, const char *method, double pressure_GPa, int i, int cells,
                      double a_ref, double v_cell_ref)
{
    const mdf_system_view v = *vp;
    double V = fabs(v.cell[0] * (v.cell[4] * v.cell[8] - v.cell[5] * v.cell[7]) -
                    v.cell[1] * (v.cell[3] * v.cell[8] - v.cell[5] * v.cell[6]) +
                    v.cell[2] * (v.cell[3] * v.cell[7] - v.cell[4] * v.cell[6]));
    double a = cbrt(V / cells);
    /* stress σ = -W/V (eV/Å³), pressure -tr σ/3 */
    double sres = 0.0;
    for (int k = 0; k < 9; k++) {
        double sig = -v.virial[k] / V * MDF_EV_PER_A3_IN_GPA;
        sres = fmax(sres, fabs(sig + (k % 4 == 0 ? pressure_GPa : 0.0)));
    }
    double P = (v.virial[0] + v.virial[4] + v.virial[8]) / (3.0 * V) * MDF_EV_PER_A3_IN_GPA;
    /* cubic again: the three lattice vectors equally long and orthogonal */
    double len[3], cosmax = 0.0;
    for (int r = 0; r < 3; r++) len[r] = sqrt(v.cell[3 * r] * v.cell[3 * r] + v.cell[3 * r + 1] * v.cell[3 * r + 1] +
                                              v.cell[3 * r + 2] * v.cell[3 * r + 2]);
    for (int r = 0; r < 3; r++)
        for (int q = r + 1; q < 3; q++) {
            double d = v.cell[3 * r] * v.cell[3 * q] + v.cell[3 * r + 1] * v.cell[3 * q + 1] +
                       v.cell[3 * r + 2] * v.cell[3 * q + 2];
            cosmax = fmax(cosmax, fabs(d / (len[r] * len[q])));
        }
    double rel = fabs(a - a_ref) / a_ref;
    fprintf(stderr, "%s P=%g GPa sys %d: %lld steps, a %.10f (LAMMPS %.10f, rel %.2e), P %.8f GPa, "
            "|σ+P| %.2e GPa, fmax %.2e, |cos| %.1e\n", method, pressure_GPa, i, (long long)v.step, a, a_ref,
            rel, P, sres, v.fmax, cosmax);
    assert_true(v.fmax <= FMAX);
    assert_true(sres <= SMAX);
    assert_true(fabs(P - pressure_GPa) <= SMAX);
    assert_true(rel <= 1e-5);
    assert_true(fabs(len[0] - len[1]) / len[0] < 1e-4 && fabs(len[0] - len[2]) / len[0] < 1e-4);
    assert_true(cosmax < 1e-4);
    if (v_cell_ref > 0.0) assert_true(fabs(V / cells - v_cell_ref) / v_cell_ref <= 3e-5);
}

/* Relaxes the strained batch with `method` at pressure_GPa and checks each
 * system against the LAMMPS lattice constant a_ref. */
static void relax_batch(const char *method, double pressure_GPa, double a_ref, int nshards)
{
    mdf_frame fr[NSYS];
    strained(fr);
    mdf_batch_config bc;
    mdf_batch_config_init(&bc);
    bc.nshards = nshards;
    mdf_batch *b = NULL;
    TU_CALL(mdf_batch_create, fr, NSYS, &bc, &b);
    mdf_model *m = argon();
    mdf_stage *s = cell_stage(method, pressure_GPa);
    mdf_stage_report rep;
    TU_CALL(mdf_stage_run, s, b, m, &rep);
    TU_CALL(mdf_batch_sync, b);
    assert_int_equal(rep.converged, NSYS);
    int64_t steps[NSYS];
    for (int i = 0; i < NSYS; i++) {
        mdf_system_view v;
        TU_CALL(mdf_batch_get_system, b, (size_t)i, &v);
        assert_int_equal(v.status, 1);
        steps[i] = v.step;
        check_relaxed(&v, method, pressure_GPa, i, NC * NC * NC, a_ref, pressure_GPa != 0.0 ? g_v1 / (NC * NC * NC) : 0.0);
    }
    /* independent convergence: not every system needed the same steps */
    int differ = 0;
    for (int i = 1; i < NSYS; i++) differ |= steps[i] != steps[0];
    assert_true(differ);
    mdf_stage_destroy(s);
    mdf_model_destroy(m);
    mdf_batch_destroy(b);
    for (int i = 0; i < NSYS; i++) mdf_frame_free(&fr[i]);
}

static void test_fire_zero_pressure(void **state)
{
    (void)state;
    relax_batch("fire_cell", 0.0, g_a0, 1);
}

static void test_lbfgs_zero_pressure(void **state)
{
    (void)state;
    relax_batch("lbfgs_cell", 0.0, g_a0, 2);
}

static void test_fire_pressure(void **state)
{
    (void)state;
    relax_batch("fire_cell", 1.0, g_a1, 2);
}

static void test_lbfgs_pressure(void **state)
{
    (void)state;
    relax_batch("lbfgs_cell", 1.0, g_a1, 1);
}

/* ---- 5. Cu with native EAM, small cells ------------------------------------ */

/* Relaxes frames fr[n] (cells[i] conventional cells each) under the model
 * of type `type` with its text parameter key = value, by `method` at
 * pressure_GPa, checks every system against a_ref and v_ref, and frees the
 * frames. */
static void relax_frames(mdf_frame *fr, int n, const int *cells, const char *type, const char *key,
                         const char *value, const char *method, double pressure_GPa, double a_ref, double v_ref)
{
    mdf_batch_config bc;
    mdf_batch_config_init(&bc);
    mdf_batch *b = NULL;
    TU_CALL(mdf_batch_create, fr, (size_t)n, &bc, &b);
    mdf_model_config *c;
    TU_CALL(mdf_model_config_create, type, &c);
    TU_CALL(mdf_model_config_set, c, key, value);
    mdf_model *m;
    TU_CALL(mdf_model_create, c, &m);
    mdf_model_config_destroy(c);
    mdf_stage *s = cell_stage(method, pressure_GPa);
    mdf_stage_report rep;
    TU_CALL(mdf_stage_run, s, b, m, &rep);
    TU_CALL(mdf_batch_sync, b);
    assert_int_equal(rep.converged, n);
    for (int i = 0; i < n; i++) {
        mdf_system_view v;
        TU_CALL(mdf_batch_get_system, b, (size_t)i, &v);
        assert_int_equal(v.status, 1);
        check_relaxed(&v, method, pressure_GPa, i, cells[i], a_ref, v_ref);
    }
    mdf_stage_destroy(s);
    mdf_model_destroy(m);
    mdf_batch_destroy(b);
    for (int i = 0; i < n; i++) mdf_frame_free(&fr[i]);
}

/* Strained Cu crystals: the 4-atom conventional cell (narrower than the
 * 4.95 Å cut-off: small cells), expanded; compressed, sheared and jittered;
 * a 2x2x2 cell sheared the other way and jittered. Relaxed by `method` at
 * pressure_GPa against LAMMPS's a_ref and volume per cell v_ref. */
static void relax_cu(const char *method, double pressure_GPa, double a_ref, double v_ref)
{
    mdf_frame fr[3] = {tu_fcc(1, 1, 1, 3.70, 29, 0.0, 0.0, 11), tu_fcc(1, 1, 1, 3.52, 29, 0.04, 0.03, 12),
                       tu_fcc(2, 2, 2, 3.66, 29, -0.03, 0.02, 13)};
    const int cells[3] = {1, 1, 8};
    char path[1024];
    snprintf(path, sizeof path, "%s/Cu_u3.eam", tu_lammps_potentials());
    relax_frames(fr, 3, cells, "eam", "file", path, method, pressure_GPa, a_ref, v_ref);
}

static void test_eam_cu(void **state)
{
    (void)state;
    char setup[2048], probe[1024];
    snprintf(probe, sizeof probe, "%s/Cu_u3.eam", tu_lammps_potentials());
    FILE *fp = fopen(probe, "r");
    if (!fp) {
        fprintf(stderr, "%s not found (lammps-data): skipping the EAM cases\n", probe);
        skip();
    }
    fclose(fp);
    snprintf(setup, sizeof setup,
             "lattice fcc 3.615\nregion box block 0 1 0 1 0 1\ncreate_box 1 box\ncreate_atoms 1 box\n"
             "mass 1 63.546\npair_style eam\npair_coeff 1 1 %s\n", probe);
    double v0, lx0, v2, lx2;
    run_lmp_setup(setup, 0.0, &v0, &lx0);
    run_lmp_setup(setup, 2.0 * GPA_IN_BAR, &v2, &lx2);
    fprintf(stderr, "LAMMPS Cu_u3.eam: a = %.10f Å at 0 GPa, %.10f Å at 2 GPa\n", lx0, lx2);
    relax_cu("fire_cell", 0.0, lx0, v0);
    relax_cu("lbfgs_cell", 0.0, lx0, v0);
    relax_cu("fire_cell", 2.0, lx2, v2);
    relax_cu("lbfgs_cell", 2.0, lx2, v2);
}

/* ---- 6. Si with Stillinger-Weber through the KIM bridge -------------------- */

#ifdef MDF_HAVE_KIM
#define SI_SW "SW_StillingerWeber_1985_Si__MO_405512056662_005"

/* An 8-atom diamond Si cell (narrower than twice the cut-off + skin),
 * sheared by tilt and jittered. */
static mdf_frame si_diamond(double a, double tilt, double jitter, uint64_t seed)
{
    static const double u[8][3] = {{0, 0, 0},          {0.5, 0.5, 0},      {0.5, 0, 0.5},      {0, 0.5, 0.5},
                                   {0.25, 0.25, 0.25}, {0.75, 0.75, 0.25}, {0.75, 0.25, 0.75}, {0.25, 0.75, 0.75}};
    mdf_frame f;
    memset(&f, 0, sizeof f);
    mdf_error err;
    mdf_error_clear(&err);
    if (mdf_frame_alloc(&f, 8, 0, 0, 0, &err) != MDF_OK) fail_msg("frame: %s", err.message);
    const double h[9] = {a, 0, 0, tilt * a, a, 0, -0.5 * tilt * a, 0.3 * tilt * a, a};
    memcpy(f.cell, h, sizeof h);
    f.has_cell = 1;
    for (int k = 0; k < 3; k++) f.pbc[k] = 1;
    uint64_t st = seed;
    for (int i = 0; i < 8; i++) {
        f.numbers[i] = 14;
        for (int d = 0; d < 3; d++)
            f.positions[3 * i + d] = u[i][0] * h[d] + u[i][1] * h[3 + d] + u[i][2] * h[6 + d] +
                                     jitter * (tu_rand(&st) - 0.5);
    }
    return f;
}

static void relax_si(const char *method, double pressure_GPa, double a_ref, double v_ref)
{
    mdf_frame fr[3] = {si_diamond(5.50, 0.0, 0.0, 21), si_diamond(5.36, 0.03, 0.06, 22),
                       si_diamond(5.46, -0.02, 0.05, 23)};
    const int cells[3] = {1, 1, 1};
    relax_frames(fr, 3, cells, "kim", "name", SI_SW, method, pressure_GPa, a_ref, v_ref);
}
#endif

static void test_kim_si(void **state)
{
    (void)state;
#ifndef MDF_HAVE_KIM
    fprintf(stderr, "mdflow built without KIM: skipping the Si (Stillinger-Weber) cases\n");
    skip();
#else
    double v0, lx0, v1, lx1;
    const char *setup = "lattice diamond 5.431\nregion box block 0 1 0 1 0 1\ncreate_box 1 box\n"
                        "create_atoms 1 box\nmass 1 28.0855\nkim interactions Si\n";
    run_lmp_units("kim init " SI_SW " metal\n", setup, 0.0, &v0, &lx0);
    run_lmp_units("kim init " SI_SW " metal\n", setup, 1.0 * GPA_IN_BAR, &v1, &lx1);
    fprintf(stderr, "LAMMPS kim %s: a = %.10f Å at 0 GPa, %.10f Å at 1 GPa\n", SI_SW, lx0, lx1);
    relax_si("fire_cell", 0.0, lx0, v0);
    relax_si("lbfgs_cell", 0.0, lx0, v0);
    relax_si("fire_cell", 1.0, lx1, v1);
    relax_si("lbfgs_cell", 1.0, lx1, v1);
#endif
}

static void test_errors(void **state)
{
    (void)state;
    mdf_stage *s = cell_stage("fire_cell", 0.0);
    mdf_error err;
    mdf_error_clear(&err);
    assert_int_not_equal(mdf_stage_add_criterion(s, MDF_CRITERION_SMAX, -1.0, &err), MDF_OK);
    assert_non_null(strstr(err.message, "smax"));
    /* a cluster (no cell) among crystals */
    mdf_frame fr[2];
    fr[0] = tu_fcc(NC, NC, NC, 5.30, 18, 0.0, 0.0, 1);
    fr[1] = tu_fcc_cluster(5.26, 1.0, 0.01, 7);
    mdf_batch *b = NULL;
    TU_CALL(mdf_batch_create, fr, 2, NULL, &b);
    mdf_model *m = argon();
    mdf_error_clear(&err);
    assert_int_not_equal(mdf_stage_run(s, b, m, NULL, &err), MDF_OK);
    fprintf(stderr, "error: %s\n", err.message);
    assert_non_null(strstr(err.message, "system 1"));
    assert_non_null(strstr(err.message, "not periodic"));
    mdf_stage_destroy(s);
    mdf_model_destroy(m);
    mdf_batch_destroy(b);
    mdf_frame_free(&fr[0]);
    mdf_frame_free(&fr[1]);
}

/* ---- 4. step by step against ASE -------------------------------------------- */

#define ASE_STEPS 25
#define ASE_TOL 1e-10 /* Å */

static void ase_steps(const char *method, const char *ase_name, double pressure_GPa)
{
    const char *py = tu_python_with("ase");
    if (!py) {
        fprintf(stderr, "no Python with ASE: step-by-step check of %s skipped\n", method);
        return;
    }
    mdf_frame fr[2];
    fr[0] = tu_fcc(3, 3, 3, 5.40, 18, 0.03, 0.02, 11);
    fr[1] = tu_fcc(3, 3, 3, 5.20, 18, -0.02, 0.03, 12);
    char start[1024], out[1024], cmd[4096];
    snprintf(start, sizeof start, "%s/ase_start.xyz", g_dir);
    snprintf(out, sizeof out, "%s/ase_%s_%g.xyz", g_dir, ase_name, pressure_GPa);
    TU_CALL(mdf_xyz_write, start, fr, 2, 0);
    snprintf(cmd, sizeof cmd, "'%s' '%s/tests/cell_ase_check.py' '%s' '%s' %s %d %.17g 3.40 0.0104 %.17g", py,
             tu_srcdir(), start, out, ase_name, ASE_STEPS, pressure_GPa, RC);
    if (system(cmd) != 0) fail_msg("ASE reference failed: %s", cmd);
    mdf_frame_list ref;
    mdf_frame_list_init(&ref);
    TU_CALL(mdf_xyz_read, out, &ref);
    assert_int_equal(ref.count, 2);

    /* mdflow starts from the file ASE read (the same rounded numbers) */
    mdf_frame_list in;
    mdf_frame_list_init(&in);
    TU_CALL(mdf_xyz_read, start, &in);
    mdf_batch *b = NULL;
    TU_CALL(mdf_batch_create, in.frames, 2, NULL, &b);
    mdf_model *m = argon();
    mdf_stage_config sc;
    mdf_stage_config_init(&sc);
    sc.integrator = method;
    sc.max_steps = ASE_STEPS;
    sc.skin = 0.5;
    mdf_param_list pl;
    memset(&pl, 0, sizeof pl);
    tu_param(&pl, "pressure_GPa", pressure_GPa);
    sc.method_params = pl;
    mdf_stage *s = NULL;
    TU_CALL(mdf_stage_create, &sc, &s);
    TU_CALL(mdf_stage_run, s, b, m, NULL);
    TU_CALL(mdf_batch_sync, b);
    for (size_t i = 0; i < 2; i++) {
        mdf_frame o;
        memset(&o, 0, sizeof o);
        TU_CALL(mdf_batch_get_frame, b, i, &o);
        const mdf_frame *r = &ref.frames[i];
        double dx = 0.0, dc = 0.0, moved = 0.0;
        for (int64_t k = 0; k < 3 * o.natoms; k++) {
            dx = fmax(dx, fabs(o.positions[k] - r->positions[k]));
            moved = fmax(moved, fabs(o.positions[k] - fr[i].positions[k]));
        }
        for (int k = 0; k < 9; k++) dc = fmax(dc, fabs(o.cell[k] - r->cell[k]));
        fprintf(stderr, "%s vs ASE %s + FrechetCellFilter, %g GPa, system %zu, %d steps: max |dx| %.2e Å, "
                "max |dcell| %.2e Å (moved up to %.3f Å)\n", method, ase_name, pressure_GPa, i, ASE_STEPS, dx, dc,
                moved);
        assert_true(dx <= ASE_TOL && dc <= ASE_TOL);
        assert_true(moved > 1e-2); /* the steps did something */
        mdf_frame_free(&o);
    }
    mdf_frame_list_free(&ref);
    mdf_frame_list_free(&in);
    mdf_stage_destroy(s);
    mdf_model_destroy(m);
    mdf_batch_destroy(b);
    mdf_frame_free(&fr[0]);
    mdf_frame_free(&fr[1]);
}

static void test_ase_fire_steps(void **state)
{
    (void)state;
    ase_steps("fire_cell", "fire", 0.0);
    ase_steps("fire_cell", "fire", 0.5);
}

static void test_ase_lbfgs_steps(void **state)
{
    (void)state;
    ase_steps("lbfgs_cell", "lbfgs", 0.0);
    ase_steps("lbfgs_cell", "lbfgs", 0.5);
}

int main(void)
{
    if (!tu_have("lmp")) {
        fprintf(stderr, "no lmp (LAMMPS): skipping\n");
        return TU_SKIP;
    }
    g_dir = tu_tmpdir();
    tu_start("eager", 2, 0);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_fire_zero_pressure),
        cmocka_unit_test(test_lbfgs_zero_pressure),
        cmocka_unit_test(test_fire_pressure),
        cmocka_unit_test(test_lbfgs_pressure),
        cmocka_unit_test(test_ase_fire_steps),
        cmocka_unit_test(test_ase_lbfgs_steps),
        cmocka_unit_test(test_eam_cu),
        cmocka_unit_test(test_kim_si),
    };
    if (getenv("MDF_TEST_FILTER")) cmocka_set_test_filter(getenv("MDF_TEST_FILTER"));
    int rc = cmocka_run_group_tests(tests, setup, NULL);
    tu_stop();
    if (rc == 0) tu_remove_tree(g_dir);
    free(g_dir);
    return rc;
}
