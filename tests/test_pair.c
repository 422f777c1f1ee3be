/* mdflow tests — the generic pair-model driver (mdflow/pair.h): a model
 * registered through the public API whose CPU codelet is the driver with
 * the Lennard-Jones arithmetic of lj_kernel.h gives the energies, forces
 * and virials of the built-in LJ model, on clusters of two species, a
 * triclinic crystal, systems sliced over several model tasks and atoms
 * whose neighbours overflow the list slots. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "testutil.h"
#include "mdflow/extension.h"
#include "mdflow/pair.h"
#include "../codelets/lj/lj_kernel.h"

/* ---- the model under test: the driver with LJ's pair function ------------------- */

MDF_HD double lj_rc2_z(const mdf_lj_params *p, int32_t zi, int32_t zj)
{
    return p->rc2[p->type_of_z[zi]][p->type_of_z[zj]];
}

MDF_HD double lj_pair_z(const mdf_lj_params *p, int32_t zi, int32_t zj, double r2, double *fpair)
{
    return mdf_lj_pair(p, p->type_of_z[zi], p->type_of_z[zj], r2, fpair);
}

MDF_PAIR_CPU_CODELET(test_pair_lj_cpu, mdf_lj_params, lj_rc2_z, lj_pair_z)

/* The configuration the built-in model gets too: argon and krypton, an
 * explicit cross pair, energies shifted or not. */
static mdf_lj_config two_species(int shift)
{
    mdf_lj_config lj = tu_argon(7.5, shift);
    TU_CALL(mdf_lj_config_add_species, &lj, 36, 0.0140, 3.65, 7.5);
    TU_CALL(mdf_lj_config_set_pair, &lj, 18, 36, 0.0121, 3.52, 7.0);
    return lj;
}

typedef struct pair_test_params {
    int32_t shift;
    double density; /* density hint, 1/Å³ (small: few list slots, overflow) */
} pair_test_params;

static const mdf_param_def pair_test_defs[] = {
    MDF_PARAM_BOOL(pair_test_params, shift, 0, "shift pair energies to zero at the cutoff"),
    MDF_PARAM_DOUBLE(pair_test_params, density, 0.0, 0.0, INFINITY, 0u, "1/Å³", "density hint (0: LJ's)"),
    MDF_PARAM_END};

/* The blob the built-in model builds (same coefficients), minus its dense
 * path, which the generic driver does not have. */
static mdf_status pair_test_setup(const void *params, const mdf_model_species *sp, mdf_model_setup *out,
                                  mdf_error *err)
{
    (void)sp;
    const pair_test_params *t = (const pair_test_params *)params;
    mdf_lj_config cfg = two_species(t->shift);
    mdf_lj_params *p = calloc(1, sizeof *p);
    if (!p) return mdf_error_set(err, MDF_ERR_NOMEM, "no memory");
    p->ntypes = cfg.nspecies;
    for (int z = 0; z <= MDF_LJ_MAX_Z; z++) p->type_of_z[z] = -1;
    double smin = INFINITY;
    for (int a = 0; a < cfg.nspecies; a++) {
        p->type_of_z[cfg.z[a]] = a;
        out->known_z[cfg.z[a]] = 1;
        for (int b = 0; b < cfg.nspecies; b++) {
            double eps = cfg.epsilon[a][b], sig = cfg.sigma[a][b], rc = cfg.cutoff[a][b];
            if (!cfg.pair_set[a][b]) {
                eps = sqrt(cfg.epsilon[a][a] * cfg.epsilon[b][b]);
                sig = 0.5 * (cfg.sigma[a][a] + cfg.sigma[b][b]);
                rc = fmax(cfg.cutoff[a][a], cfg.cutoff[b][b]);
            }
            mdf_lj_set_pair(p, a, b, eps, sig, rc, cfg.shift);
            out->cutoff = fmax(out->cutoff, rc);
            smin = fmin(smin, sig);
        }
    }
    out->blob = p;
    out->blob_size = sizeof *p;
    out->density_hint = t->density > 0.0 ? t->density : 1.5 / (smin * smin * smin);
    return MDF_OK;
}

static const mdf_model_def pair_test_def = {
    .api_version = MDFLOW_API_VERSION,
    .name = "test_pair_lj",
    .summary = "Lennard-Jones through mdflow/pair.h (test)",
    .params = pair_test_defs,
    .params_size = sizeof(pair_test_params),
    .setup = pair_test_setup,
    .cpu_func = test_pair_lj_cpu,
    .cpu_func_name = "test_pair_lj_cpu",
};

static mdf_model *generic_model(int shift, double density)
{
    mdf_model_config *c = NULL;
    TU_CALL(mdf_model_config_create, "test_pair_lj", &c);
    char text[64];
    TU_CALL(mdf_model_config_set, c, "shift", shift ? "true" : "false");
    snprintf(text, sizeof text, "%.17g", density);
    TU_CALL(mdf_model_config_set, c, "density", text);
    mdf_model *m = NULL;
    TU_CALL(mdf_model_create, c, &m);
    mdf_model_config_destroy(c);
    return m;
}

static mdf_model *builtin_model(int shift)
{
    mdf_lj_config lj = two_species(shift);
    mdf_model *m = NULL;
    TU_CALL(mdf_model_create_lj, &lj, &m);
    return m;
}

/* ---- evaluating a set of frames ------------------------------------------------- */

typedef struct results {
    size_t n;
    double *energy;   /* n */
    double *virial;   /* 9n */
    double **forces;  /* n arrays of 3 natoms */
    mdf_md_report rep;
} results;

static results evaluate(const mdf_frame *frames, size_t n, mdf_model *m, int32_t chunk_atoms)
{
    results r = {.n = n, .energy = calloc(n, sizeof(double)), .virial = calloc(9 * n, sizeof(double)),
                 .forces = calloc(n, sizeof(double *))};
    mdf_batch *b = tu_single_point(frames, n, m, chunk_atoms, 0.5, &r.rep);
    for (size_t i = 0; i < n; i++) {
        mdf_system_view v;
        TU_CALL(mdf_batch_get_system, b, i, &v);
        mdf_frame out;
        TU_CALL(mdf_batch_get_frame, b, i, &out);
        assert_true(v.id >= 0 && (size_t)v.id < n);
        assert_int_equal(v.virial_fresh, 1);
        r.energy[v.id] = v.potential_energy;
        memcpy(r.virial + 9 * v.id, v.virial, sizeof v.virial);
        r.forces[v.id] = malloc(sizeof(double) * 3 * (size_t)out.natoms);
        memcpy(r.forces[v.id], out.forces, sizeof(double) * 3 * (size_t)out.natoms);
        mdf_frame_free(&out);
    }
    mdf_batch_destroy(b);
    return r;
}

static void results_free(results *r)
{
    for (size_t i = 0; i < r->n; i++) free(r->forces[i]);
    free(r->forces);
    free(r->energy);
    free(r->virial);
}

/* Largest relative deviation of the generic results from the built-in
 * ones, each quantity relative to its system's largest value of its kind. */
static double compare(const mdf_frame *frames, const results *g, const results *ref, const char *what)
{
    double worst = 0.0;
    for (size_t i = 0; i < g->n; i++) {
        double escale = fmax(fabs(ref->energy[i]), 1e-3), fscale = 1e-6, wscale = 1e-6;
        for (int64_t k = 0; k < 3 * frames[i].natoms; k++) fscale = fmax(fscale, fabs(ref->forces[i][k]));
        for (int k = 0; k < 9; k++) wscale = fmax(wscale, fabs(ref->virial[9 * i + k]));
        double de = fabs(g->energy[i] - ref->energy[i]) / escale, df = 0.0, dw = 0.0;
        for (int64_t k = 0; k < 3 * frames[i].natoms; k++)
            df = fmax(df, fabs(g->forces[i][k] - ref->forces[i][k]) / fscale);
        for (int k = 0; k < 9; k++) dw = fmax(dw, fabs(g->virial[9 * i + k] - ref->virial[9 * i + k]) / wscale);
        if (de > 1e-12 || df > 1e-12 || dw > 1e-12)
            fail_msg("%s, system %zu (%lld atoms): energy %.17g vs %.17g (rel %.3g), forces rel %.3g, virial rel %.3g",
                     what, i, (long long)frames[i].natoms, g->energy[i], ref->energy[i], de, df, dw);
        worst = fmax(worst, fmax(de, fmax(df, dw)));
    }
    printf("%s: %zu systems, largest relative deviation from the built-in LJ %.3g\n", what, g->n, worst);
    return worst;
}

/* Checks the generic model against the built-in one on frames, for both
 * shift settings; returns the generic run's report (shift off). */
static mdf_md_report check_frames(const mdf_frame *frames, size_t n, int32_t chunk_atoms, double density,
                                  const char *what)
{
    mdf_md_report rep;
    memset(&rep, 0, sizeof rep);
    for (int shift = 0; shift <= 1; shift++) {
        mdf_model *mg = generic_model(shift, density), *mb = builtin_model(shift);
        results g = evaluate(frames, n, mg, chunk_atoms), ref = evaluate(frames, n, mb, chunk_atoms);
        char label[128];
        snprintf(label, sizeof label, "%s (shift %d)", what, shift);
        compare(frames, &g, &ref, label);
        if (!shift) rep = g.rep;
        results_free(&g);
        results_free(&ref);
        mdf_model_destroy(mg);
        mdf_model_destroy(mb);
    }
    return rep;
}

static mdf_frame open_cluster(int n, double side, uint64_t seed)
{
    int zs[] = {18, 36};
    double box[9] = {side, 0, 0, 0, side, 0, 0, 0, side};
    int open[3] = {0, 0, 0};
    mdf_frame f = tu_random(n, box, open, 3.0, zs, 2, seed);
    memset(f.cell, 0, sizeof f.cell);
    f.has_cell = 0;
    return f;
}

/* Two-species argon/krypton with a third of the atoms krypton: a crystal
 * of mixed pairs. */
static void mix_species(mdf_frame *f)
{
    for (int64_t k = 0; k < f->natoms; k++) f->numbers[k] = k % 3 == 0 ? 36 : 18;
    if (f->masses)
        for (int64_t k = 0; k < f->natoms; k++) f->masses[k] = k % 3 == 0 ? 83.798 : 39.948;
}

static void free_frames(mdf_frame *f, size_t n)
{
    for (size_t k = 0; k < n; k++) mdf_frame_free(&f[k]);
}

/* ---- the tests ---------------------------------------------------------------- */

static void test_clusters(void **state)
{
    (void)state;
    mdf_frame f[6];
    const int sizes[] = {2, 7, 20, 40, 80, 150};
    for (int k = 0; k < 6; k++) f[k] = open_cluster(sizes[k], 6.0 * cbrt((double)sizes[k]), 100 + (uint64_t)k);
    check_frames(f, 6, 0, 0.0, "random Ar/Kr clusters");
    free_frames(f, 6);
}

static void test_crystal(void **state)
{
    (void)state;
    mdf_frame f[2] = {tu_fcc(4, 4, 4, 5.3, 18, 0.15, 0.15, 7), tu_fcc(5, 4, 4, 5.3, 18, 0.0, 0.2, 8)};
    mix_species(&f[1]);
    check_frames(f, 2, 0, 0.0, "periodic crystals");
    free_frames(f, 2);
}

/* Systems larger than a chunk are computed in slices, summed afterwards;
 * small ones beside them in chunks of whole systems. */
static void test_sliced(void **state)
{
    (void)state;
    mdf_frame f[4] = {tu_fcc(5, 5, 5, 5.3, 18, 0.1, 0.15, 9), open_cluster(30, 18.0, 10),
                      tu_fcc(4, 4, 4, 5.3, 18, 0.0, 0.2, 11), open_cluster(200, 35.0, 12)};
    mix_species(&f[2]);
    mdf_md_report rep = check_frames(f, 4, 64, 0.0, "sliced systems (chunks of 64 atoms)");
    if (rep.nchunks < 10) fail_msg("only %d chunks: the systems were not sliced", rep.nchunks);
    free_frames(f, 4);
}

/* Too few list slots: atoms with more neighbours are walked from their
 * cells, beside atoms of the same system that use their lists. */
static void test_overflow(void **state)
{
    (void)state;
    mdf_frame f[3] = {tu_fcc(4, 4, 4, 5.3, 18, 0.1, 0.15, 13), open_cluster(120, 28.0, 14),
                      tu_fcc(5, 4, 4, 5.3, 18, 0.0, 0.2, 15)};
    mix_species(&f[2]);
    const int32_t chunks[] = {0, 64};
    for (int k = 0; k < 2; k++) {
        mdf_md_report rep = check_frames(f, 3, chunks[k], 0.004, k ? "overflowing lists, sliced" : "overflowing lists");
        int64_t natoms = f[0].natoms + f[1].natoms + f[2].natoms;
        printf("  %lld of %lld atoms overflowed %d slots\n", (long long)rep.overflowed_atoms, (long long)natoms,
               rep.list_slots);
        if (rep.overflowed_atoms <= 0 || rep.overflowed_atoms >= natoms)
            fail_msg("%lld of %lld atoms overflowed: want some, not all", (long long)rep.overflowed_atoms,
                     (long long)natoms);
    }
    free_frames(f, 3);
}

int main(void)
{
    tu_start(NULL, 2, 0);
    mdf_error err;
    mdf_error_clear(&err);
    if (mdf_register_model(&pair_test_def, &err) != MDF_OK) {
        fprintf(stderr, "registering the test model: %s\n", err.message);
        return 1;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_clusters),
        cmocka_unit_test(test_crystal),
        cmocka_unit_test(test_sliced),
        cmocka_unit_test(test_overflow),
    };
    int failed = cmocka_run_group_tests(tests, NULL, NULL);
    tu_stop();
    return failed ? 1 : 0;
}
