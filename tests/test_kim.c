/* mdflow tests — the KIM API bridge (model "kim") against LAMMPS's own KIM
 * interface: `kim init MODEL metal` + `kim interactions ELEMENTS`, run by
 * `lmp` here (no pasted numbers). For an EAM, a MEAM, a Stillinger-Weber, a
 * Tersoff, a SNAP and a DUNN (carbon neural network) model: a randomly
 * perturbed crystal, a surface slab (periodic in x and y), a cluster (open)
 * and a periodic cell of 1 to 4 atoms narrower than the cutoff (images
 * replicated), each in one batch of several shards and chunks (one KIM
 * model object per worker). Energies, forces and the pressure tensor agree
 * to TOL relative. Exit 77 when mdflow was built without KIM, or when lmp
 * or a model is missing. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "testutil.h"
#include "mdflow/extension.h"
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#ifdef MDF_HAVE_KIM
#define TOL 1e-10
#define MAXF 8

typedef tu_lmp_point lmp_ref;

static char *g_dir;
static double g_nktv2p;

/* Largest deviations per model (the report). */
typedef struct model_case {
    const char *model;   /* KIM name */
    const char *element; /* symbol */
    int z;
    const char *lattice; /* "fcc" or "diamond" */
    double a;            /* lattice constant, Å */
    double max_e, max_f, max_p;
} model_case;

/* LAMMPS with the KIM model on frame f (one element). */
static void lammps_reference(const model_case *mc, const mdf_frame *f, lmp_ref *ref)
{
    tu_lmp_write_data(g_dir, f, 1, &mc->z);
    char in[4096];
    snprintf(in, sizeof in,
             "kim init %s metal\natom_style atomic\nboundary %c %c %c\nread_data data.lmp\n"
             "kim interactions %s\n%s",
             mc->model, f->pbc[0] ? 'p' : 'f', f->pbc[1] ? 'p' : 'f', f->pbc[2] ? 'p' : 'f', mc->element,
             tu_lmp_point_input);
    tu_lmp_run(g_dir, in);
    tu_lmp_read_point(g_dir, f->natoms, mc->model, ref);
}

/* ---- structures ------------------------------------------------------------ */

/* Basis of the cubic cell, in units of a. */
static int basis(const char *lattice, double b[8][3])
{
    static const double fcc[4][3] = {{0, 0, 0}, {0.5, 0.5, 0}, {0.5, 0, 0.5}, {0, 0.5, 0.5}};
    int n = 0;
    for (int k = 0; k < 4; k++, n++) memcpy(b[n], fcc[k], sizeof fcc[k]);
    if (!strcmp(lattice, "diamond"))
        for (int k = 0; k < 4; k++, n++)
            for (int d = 0; d < 3; d++) b[n][d] = fcc[k][d] + 0.25;
    return n;
}

static mdf_frame alloc_frame(int64_t n)
{
    mdf_frame f;
    TU_CALL(mdf_frame_alloc, &f, n, 0, 0, 0);
    return f;
}

/* nx × ny × nz cubic cells, jittered by `jitter` · U(-1, 1) Å; pbc as given. */
static mdf_frame crystal(const model_case *mc, int nx, int ny, int nz, double jitter, const int pbc[3], uint64_t seed)
{
    double b[8][3];
    int nb = basis(mc->lattice, b);
    mdf_frame f = alloc_frame((int64_t)nx * ny * nz * nb);
    int64_t i = 0;
    for (int x = 0; x < nx; x++)
        for (int y = 0; y < ny; y++)
            for (int z = 0; z < nz; z++)
                for (int k = 0; k < nb; k++, i++) {
                    int c[3] = {x, y, z};
                    for (int d = 0; d < 3; d++)
                        f.positions[3 * i + d] = mc->a * (c[d] + b[k][d]) + jitter * (2.0 * tu_rand(&seed) - 1.0);
                    f.numbers[i] = mc->z;
                }
    memset(f.cell, 0, sizeof f.cell);
    f.cell[0] = nx * mc->a;
    f.cell[4] = ny * mc->a;
    f.cell[8] = nz * mc->a;
    f.has_cell = 1;
    for (int d = 0; d < 3; d++) f.pbc[d] = pbc[d];
    return f;
}

/* Atoms of a 4×4×4 crystal within r of its centre, jittered, no cell. */
static mdf_frame cluster(const model_case *mc, double r, uint64_t seed)
{
    static const int none[3] = {0, 0, 0};
    mdf_frame all = crystal(mc, 4, 4, 4, 0.0, none, seed);
    double c[3] = {2.0 * mc->a + 0.1, 2.0 * mc->a + 0.05, 2.0 * mc->a};
    int64_t n = 0;
    for (int64_t i = 0; i < all.natoms; i++) {
        double d2 = 0.0;
        for (int d = 0; d < 3; d++) d2 += pow(all.positions[3 * i + d] - c[d], 2);
        if (d2 <= r * r) n++;
    }
    mdf_frame f = alloc_frame(n);
    n = 0;
    for (int64_t i = 0; i < all.natoms; i++) {
        double d2 = 0.0;
        for (int d = 0; d < 3; d++) d2 += pow(all.positions[3 * i + d] - c[d], 2);
        if (d2 > r * r) continue;
        for (int d = 0; d < 3; d++) f.positions[3 * n + d] = all.positions[3 * i + d] + 0.1 * (2.0 * tu_rand(&seed) - 1.0);
        f.numbers[n++] = mc->z;
    }
    mdf_frame_free(&all);
    return f;
}

/* The primitive cell of fcc or diamond (1 or 2 atoms), in
 * LAMMPS's form (a along x, b in the xy plane), atoms jittered and the first
 * one put outside the cell (the bridge wraps it). */
static mdf_frame primitive(const model_case *mc, uint64_t seed)
{
    double a = mc->a, h[9];
    double l = a / sqrt(2.0);
    double t[9] = {l, 0, 0, l / 2.0, l * sqrt(3.0) / 2.0, 0, l / 2.0, l / (2.0 * sqrt(3.0)), l * sqrt(2.0 / 3.0)};
    memcpy(h, t, sizeof t);
    int n = !strcmp(mc->lattice, "diamond") ? 2 : 1;
    mdf_frame f = alloc_frame(n);
    for (int i = 0; i < n; i++) {
        double fr = i ? 0.25 : 0.0;
        for (int d = 0; d < 3; d++)
            f.positions[3 * i + d] = fr * (h[d] + h[3 + d] + h[6 + d]) + 0.05 * (2.0 * tu_rand(&seed) - 1.0);
        f.numbers[i] = mc->z;
    }
    memcpy(f.cell, h, sizeof h);
    f.has_cell = 1;
    f.pbc[0] = f.pbc[1] = f.pbc[2] = 1;
    return f;
}

/* LAMMPS needs atoms inside its box: wrap periodic directions (our copy
 * keeps one atom outside, which the bridge wraps itself). */
static mdf_frame wrapped_copy(const mdf_frame *f)
{
    mdf_frame w;
    TU_CALL(mdf_frame_copy, &w, f);
    if (!(f->pbc[0] || f->pbc[1] || f->pbc[2])) return w;
    double inv[9];
    const double *h = f->cell;
    double det = h[0] * (h[4] * h[8] - h[5] * h[7]) - h[1] * (h[3] * h[8] - h[5] * h[6]) + h[2] * (h[3] * h[7] - h[4] * h[6]);
    inv[0] = (h[4] * h[8] - h[5] * h[7]) / det;
    inv[1] = (h[2] * h[7] - h[1] * h[8]) / det;
    inv[2] = (h[1] * h[5] - h[2] * h[4]) / det;
    inv[3] = (h[5] * h[6] - h[3] * h[8]) / det;
    inv[4] = (h[0] * h[8] - h[2] * h[6]) / det;
    inv[5] = (h[2] * h[3] - h[0] * h[5]) / det;
    inv[6] = (h[3] * h[7] - h[4] * h[6]) / det;
    inv[7] = (h[1] * h[6] - h[0] * h[7]) / det;
    inv[8] = (h[0] * h[4] - h[1] * h[3]) / det;
    for (int64_t i = 0; i < w.natoms; i++) {
        double *r = w.positions + 3 * i, fr[3];
        for (int k = 0; k < 3; k++) {
            fr[k] = r[0] * inv[k] + r[1] * inv[3 + k] + r[2] * inv[6 + k];
            if (f->pbc[k]) fr[k] -= floor(fr[k]);
        }
        for (int d = 0; d < 3; d++) r[d] = fr[0] * h[d] + fr[1] * h[3 + d] + fr[2] * h[6 + d];
    }
    return w;
}

/* ---- comparing ------------------------------------------------------------- */

static double max_abs(const double *v, size_t n)
{
    double m = 0.0;
    for (size_t i = 0; i < n; i++) m = fmax(m, fabs(v[i]));
    return m;
}

static mdf_model *kim_model(const char *name)
{
    mdf_model_config *cfg = NULL;
    TU_CALL(mdf_model_config_create, "kim", &cfg);
    TU_CALL(mdf_model_config_set, cfg, "name", name);
    mdf_model *m = NULL;
    TU_CALL(mdf_model_create, cfg, &m);
    mdf_model_config_destroy(cfg);
    return m;
}

static const char *const frame_names[] = {"crystal", "slab", "cluster", "small cell", "small cell x4"};

/* One batch of nshards shards (mdf_compute_forces), or with chunk_atoms > 0
 * a 0-step run of one shard cut into chunks of about that many atoms: the
 * systems, larger than that, stay whole (MDF_MODEL_WHOLE_SYSTEMS), several
 * to a chunk, the chunks on both workers. */
static void compare(model_case *mc, mdf_frame *frames, const lmp_ref *refs, int nf, int nshards, int32_t chunk_atoms,
                    mdf_model *m)
{
    mdf_batch *b = NULL;
    if (chunk_atoms > 0) {
        mdf_md_report rep;
        b = tu_single_point(frames, (size_t)nf, m, chunk_atoms, 1.0, &rep);
    } else {
        mdf_batch_config bc;
        mdf_batch_config_init(&bc);
        bc.nshards = nshards;
        TU_CALL(mdf_batch_create, frames, (size_t)nf, &bc, &b);
        TU_CALL(mdf_compute_forces, b, m);
    }
    for (int s = 0; s < nf; s++) {
        const mdf_frame *f = &frames[s];
        const lmp_ref *r = &refs[s];
        mdf_system_view v;
        TU_CALL(mdf_batch_get_system, b, (size_t)s, &v);
        mdf_frame out;
        memset(&out, 0, sizeof out);
        TU_CALL(mdf_batch_get_frame, b, (size_t)s, &out);
        double de = tu_reldiff(v.potential_energy, r->pe, 0.0);
        double fscale = max_abs(r->forces, (size_t)f->natoms * 3), df = 0.0;
        for (int64_t i = 0; i < 3 * f->natoms; i++) df = fmax(df, fabs(out.forces[i] - r->forces[i]));
        /* Relative to the largest force, at least 1e-3 eV/Å: in a cell of
         * one atom every force is zero by symmetry (round-off on both sides). */
        df /= fmax(fscale, 1e-3);
        double vol = r->vol;
        if (f->pbc[0] && f->pbc[1] && f->pbc[2]) {
            const double *h = v.cell;
            vol = fabs(h[0] * (h[4] * h[8] - h[5] * h[7]) - h[1] * (h[3] * h[8] - h[5] * h[6]) +
                       h[2] * (h[3] * h[7] - h[4] * h[6]));
        }
        double pours[9], plmp[9];
        for (int k = 0; k < 9; k++) {
            pours[k] = v.virial[k] / vol;
            plmp[k] = r->p[k] / g_nktv2p;
        }
        double pscale = max_abs(plmp, 9), dp = 0.0;
        for (int k = 0; k < 9; k++) dp = fmax(dp, fabs(pours[k] - plmp[k]));
        dp = v.virial_fresh ? dp / pscale : 0.0; /* a 0-step run may compute none */
        printf("  %-3s %-13s shards %d chunks %-4s (%4lld atoms): E %.10f eV dE %.2e | max|F| %.4f dF %.2e | max|P| %.3e "
               "dP %.2e\n",
               mc->element, frame_names[s], nshards, chunk_atoms ? "16" : "auto", (long long)f->natoms, r->pe, de, fscale, df, pscale, dp);
        mc->max_e = fmax(mc->max_e, de);
        mc->max_f = fmax(mc->max_f, df);
        mc->max_p = fmax(mc->max_p, dp);
        if (!(de <= TOL)) fail_msg("%s %s: energy %.17g eV, LAMMPS %.17g eV (rel %.3e)", mc->model, frame_names[s],
                                   v.potential_energy, r->pe, de);
        if (!(df <= TOL)) fail_msg("%s %s: forces differ from LAMMPS by %.3e relative", mc->model, frame_names[s], df);
        if (!(dp <= TOL)) {
            for (int k = 0; k < 9; k++) fprintf(stderr, "  P[%d] ours %.17g LAMMPS %.17g\n", k, pours[k], plmp[k]);
            fail_msg("%s %s: pressure differs from LAMMPS by %.3e relative", mc->model, frame_names[s], dp);
        }
        mdf_frame_free(&out);
    }
    mdf_batch_destroy(b);
}

static int model_installed(const char *name)
{
    mdf_model_config *cfg = NULL;
    mdf_error err;
    mdf_error_clear(&err);
    if (mdf_model_config_create("kim", &cfg, &err) != MDF_OK) return 0;
    mdf_model_config_set(cfg, "name", name, &err);
    mdf_model *m = NULL;
    int ok = mdf_model_create(cfg, &m, &err) == MDF_OK;
    if (!ok) fprintf(stderr, "  %s: %s\n", name, err.message);
    mdf_model_destroy(m);
    mdf_model_config_destroy(cfg);
    return ok;
}

static void run_model(model_case *mc)
{
    if (!model_installed(mc->model)) {
        printf("  %s is not installed: skipped\n", mc->model);
        skip();
    }
    if (!(g_nktv2p > 0.0)) g_nktv2p = tu_lmp_nktv2p(g_dir);
    static const int p3[3] = {1, 1, 1}, slab[3] = {1, 1, 0};
    mdf_frame frames[5];
    int nf = 0;
    frames[nf++] = crystal(mc, 3, 3, 3, 0.12, p3, 11);
    frames[nf++] = crystal(mc, 3, 3, 3, 0.08, slab, 12);
    frames[nf++] = cluster(mc, 1.3 * mc->a, 13);
    frames[nf++] = primitive(mc, 14);
    frames[nf++] = crystal(mc, 1, 1, 1, 0.1, p3, 15); /* the cubic cell: 2-8 atoms, narrower than the cutoff */
    /* One atom of the crystal outside its cell: the bridge wraps it. */
    frames[0].positions[0] -= frames[0].cell[0];
    for (int d = 0; d < 3; d++) frames[3].positions[d] += 2.0 * frames[3].cell[3 + d];
    lmp_ref refs[5];
    for (int s = 0; s < nf; s++) {
        mdf_frame w = wrapped_copy(&frames[s]);
        lammps_reference(mc, &w, &refs[s]);
        mdf_frame_free(&w);
    }
    mdf_model *m = kim_model(mc->model);
    compare(mc, frames, refs, nf, 1, 0, m);
    compare(mc, frames, refs, nf, 2, 0, m);
    compare(mc, frames, refs, nf, nf, 0, m);
    compare(mc, frames, refs, nf, 1, 16, m);
    mdf_model_destroy(m);
    for (int s = 0; s < nf; s++) {
        free(refs[s].forces);
        mdf_frame_free(&frames[s]);
    }
}

static model_case g_cases[] = {
    {"EAM_Dynamo_MendelevKing_2013_Cu__MO_748636486270_005", "Cu", 29, "fcc", 3.639, 0, 0, 0},
    {"MEAM_LAMMPS_AsadiZaeemNouranian_2015_Cu__MO_390178379548_000", "Cu", 29, "fcc", 3.615, 0, 0, 0},
    {"SW_StillingerWeber_1985_Si__MO_405512056662_005", "Si", 14, "diamond", 5.431, 0, 0, 0},
    {"Tersoff_LAMMPS_Tersoff_1988T3_Si__MO_186459956893_003", "Si", 14, "diamond", 5.432, 0, 0, 0},
    {"SNAP_ZuoChenLi_2019_Cu__MO_931672895580_000", "Cu", 29, "fcc", 3.62, 0, 0, 0},
    {"DUNN_WenTadmor_2019v1_C__MO_584345505904_000", "C", 6, "diamond", 3.567, 0, 0, 0},
};

static void test_eam(void **state) { (void)state; run_model(&g_cases[0]); }
static void test_meam(void **state) { (void)state; run_model(&g_cases[1]); }
static void test_sw(void **state) { (void)state; run_model(&g_cases[2]); }
static void test_tersoff(void **state) { (void)state; run_model(&g_cases[3]); }
static void test_snap(void **state) { (void)state; run_model(&g_cases[4]); }
static void test_dunn(void **state) { (void)state; run_model(&g_cases[5]); }

/* ---- native EAM against the KIM version of the same potential ---------- */

/* Energies, forces and virials of frames under model m. */
static void evaluate(mdf_model *m, const mdf_frame *frames, int n, double *e, double **f, double (*w)[9])
{
    mdf_batch_config bc;
    mdf_batch_config_init(&bc);
    mdf_batch *b = NULL;
    TU_CALL(mdf_batch_create, frames, (size_t)n, &bc, &b);
    TU_CALL(mdf_compute_forces, b, m);
    for (int s = 0; s < n; s++) {
        mdf_system_view v;
        TU_CALL(mdf_batch_get_system, b, (size_t)s, &v);
        mdf_frame out;
        memset(&out, 0, sizeof out);
        TU_CALL(mdf_batch_get_frame, b, (size_t)s, &out);
        e[s] = v.potential_energy;
        memcpy(w[s], v.virial, sizeof w[s]);
        f[s] = malloc(sizeof(double) * 3 * (size_t)out.natoms);
        memcpy(f[s], out.forces, sizeof(double) * 3 * (size_t)out.natoms);
        mdf_frame_free(&out);
    }
    mdf_batch_destroy(b);
}

/* LAMMPS's AlCu.eam.alloy is Cai and Ye's 1996 file, which OpenKIM's
 * EAM_Dynamo_CaiYe_1996_AlCu__MO_942551040047_005 embeds: mdflow's native
 * eam and the KIM bridge must agree to 1e-10 on random Al/Cu crystals (one
 * a 4-atom cell narrower than the cut-off) and a cluster. (OpenKIM's Mishin
 * Cu is another tabulation than lammps-data's Cu_mishin1.eam.alloy: their
 * energies differ by 7e-5, so it is not the same potential.) */
static void test_native_eam(void **state)
{
    (void)state;
    static const char *kim = "EAM_Dynamo_CaiYe_1996_AlCu__MO_942551040047_005";
    char file[1024];
    snprintf(file, sizeof file, "%s/AlCu.eam.alloy", tu_lammps_potentials());
    FILE *fp = fopen(file, "r");
    if (!model_installed(kim) || !fp) {
        if (fp) fclose(fp);
        fprintf(stderr, "%s or %s missing: skipped\n", kim, file);
        skip();
    }
    fclose(fp);
    enum { NF = 3 };
    mdf_frame fr[NF] = {tu_fcc(3, 3, 3, 4.0, 13, 0.1, 0.1, 71), tu_fcc(1, 1, 1, 3.9, 13, -0.15, 0.12, 72),
                        tu_fcc(3, 3, 3, 3.95, 13, 0.0, 0.1, 73)};
    fr[2].has_cell = 0;
    memset(fr[2].cell, 0, sizeof fr[2].cell);
    memset(fr[2].pbc, 0, sizeof fr[2].pbc);
    uint64_t st = 74;
    for (int k = 0; k < NF; k++) {
        for (int64_t i = 0; i < fr[k].natoms; i++) fr[k].numbers[i] = tu_rand(&st) < 0.4 ? 29 : 13;
        free(fr[k].masses);
        fr[k].masses = NULL;
    }
    mdf_model *native = tu_eam_model(file, NULL);
    mdf_model *bridge = kim_model(kim);
    double e[2][NF], *f[2][NF], w[2][NF][9];
    evaluate(native, fr, NF, e[0], f[0], w[0]);
    evaluate(bridge, fr, NF, e[1], f[1], w[1]);
    for (int s = 0; s < NF; s++) {
        double de = fabs(e[0][s] - e[1][s]) / fabs(e[1][s]), fs = 0, df = 0, ws = 0, dw = 0;
        for (int64_t k = 0; k < 3 * fr[s].natoms; k++) {
            fs = fmax(fs, fabs(f[1][s][k]));
            df = fmax(df, fabs(f[0][s][k] - f[1][s][k]));
        }
        for (int k = 0; k < 9; k++) {
            ws = fmax(ws, fabs(w[1][s][k]));
            dw = fmax(dw, fabs(w[0][s][k] - w[1][s][k]));
        }
        df /= fmax(fs, 1e-3);
        dw /= ws;
        printf("  native eam vs %s, system %d (%lld atoms): E %.12f eV, rel. dev. energy %.2e forces %.2e virial %.2e\n",
               kim, s, (long long)fr[s].natoms, e[1][s], de, df, dw);
        assert_true(de <= TOL);
        assert_true(df <= TOL);
        assert_true(dw <= TOL);
        free(f[0][s]);
        free(f[1][s]);
        mdf_frame_free(&fr[s]);
    }
    mdf_model_destroy(native);
    mdf_model_destroy(bridge);
}

/* Errors: an unknown name lists close matches; an element the model does
 * not cover names the system, the element and the model's species. */
static void test_errors(void **state)
{
    (void)state;
    mdf_model_config *cfg = NULL;
    mdf_error err;
    mdf_error_clear(&err);
    TU_CALL(mdf_model_config_create, "kim", &cfg);
    TU_CALL(mdf_model_config_set, cfg, "name", "SW_StillingerWeber_1985_Si");
    mdf_model *m = NULL;
    assert_int_equal(mdf_model_create(cfg, &m, &err), MDF_ERR_INVALID);
    printf("  %s\n", err.message);
    assert_non_null(strstr(err.message, "SW_StillingerWeber_1985_Si__MO_405512056662_005"));
    TU_CALL(mdf_model_config_set, cfg, "name", "EAM_Dynamo_MendelevKing_2031_Cu__MO_748636486270_005");
    assert_int_equal(mdf_model_create(cfg, &m, &err), MDF_ERR_INVALID);
    printf("  %s\n", err.message);
    assert_non_null(strstr(err.message, "EAM_Dynamo_MendelevKing_2013_Cu__MO_748636486270_005"));
    mdf_model_config_destroy(cfg);
    if (!model_installed(g_cases[0].model)) skip();
    m = kim_model(g_cases[0].model);
    static const int p3[3] = {1, 1, 1};
    model_case al = g_cases[0];
    al.z = 13;
    mdf_frame f[2] = {crystal(&g_cases[0], 2, 2, 2, 0.0, p3, 1), crystal(&al, 2, 2, 2, 0.0, p3, 2)};
    mdf_batch_config bc;
    mdf_batch_config_init(&bc);
    mdf_batch *b = NULL;
    TU_CALL(mdf_batch_create, f, 2, &bc, &b);
    assert_int_equal(mdf_compute_forces(b, m, &err), MDF_ERR_INVALID);
    printf("  %s\n", err.message);
    assert_non_null(strstr(err.message, "system 1"));
    assert_non_null(strstr(err.message, "element Al"));
    assert_non_null(strstr(err.message, g_cases[0].model));
    assert_non_null(strstr(err.message, "covers Cu only"));
    mdf_batch_destroy(b);
    mdf_model_destroy(m);
    mdf_frame_free(&f[0]);
    mdf_frame_free(&f[1]);
}

#endif /* MDF_HAVE_KIM */

int main(void)
{
#ifndef MDF_HAVE_KIM
    fprintf(stderr, "mdflow was built without KIM support (libkim-api): skipping\n");
    return TU_SKIP;
#else
    if (!tu_have("lmp")) {
        fprintf(stderr, "lmp (LAMMPS) not found: skipping\n");
        return TU_SKIP;
    }
    g_dir = tu_tmpdir();
    tu_start(NULL, 2, 0);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_errors), cmocka_unit_test(test_eam),  cmocka_unit_test(test_meam),
        cmocka_unit_test(test_sw),     cmocka_unit_test(test_tersoff), cmocka_unit_test(test_snap),
        cmocka_unit_test(test_dunn),   cmocka_unit_test(test_native_eam),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    printf("largest relative deviations from LAMMPS (energy, forces, pressure):\n");
    for (size_t k = 0; k < sizeof g_cases / sizeof g_cases[0]; k++)
        printf("  %-62s %.2e %.2e %.2e\n", g_cases[k].model, g_cases[k].max_e, g_cases[k].max_f, g_cases[k].max_p);
    tu_stop();
    if (rc != 0) fprintf(stderr, "LAMMPS inputs of the last case kept in %s\n", g_dir);
    if (rc == 0) tu_remove_tree(g_dir);
    free(g_dir);
    return rc;
#endif
}
