/* mdflow tests — a many-body model through the extension API's auxiliary
 * pass: a Finnis–Sinclair-type model registered by the test itself,
 *   E = Σ_i F(ρ_i) + Σ_{i<j} V(r_ij),  ρ_i = Σ_j φ(r_ij),
 *   F(ρ) = -A √ρ,  φ(r) = exp(-β (r - r0)),  V(r) = B exp(-α (r - r0)),
 * (φ and V cut at rc), whose densities come from the auxiliary pass and
 * whose forces need every atom's F'(ρ). Energies, forces and virials are
 * checked against a brute-force O(N²) evaluation of the formula (minimum
 * image) on open clusters, periodic boxes, a system large enough to be
 * sliced into chunks (the gather of the chunks' densities), and lists too
 * short for the density (atoms walked from their cells). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "testutil.h"
#include "mdflow/extension.h"
#include "../codelets/nlist/nlist_kernel.h"
#include "../codelets/reduce/reduce_kernel.h"

typedef struct fs_params {
    double A, B, alpha, beta, r0, rc, density_hint;
} fs_params;

static const mdf_param_def fs_defs[] = {
    MDF_PARAM_DOUBLE(fs_params, A, 1.0, 0.0, INFINITY, 0u, "eV", "embedding strength"),
    MDF_PARAM_DOUBLE(fs_params, B, 0.3, 0.0, INFINITY, 0u, "eV", "pair repulsion"),
    MDF_PARAM_DOUBLE(fs_params, alpha, 3.0, 0.0, INFINITY, 0u, "1/Å", "pair decay"),
    MDF_PARAM_DOUBLE(fs_params, beta, 1.5, 0.0, INFINITY, 0u, "1/Å", "density decay"),
    MDF_PARAM_DOUBLE(fs_params, r0, 2.5, 0.0, INFINITY, MDF_PARAM_MIN_OPEN, "Å", "reference distance"),
    MDF_PARAM_DOUBLE(fs_params, rc, 5.0, 0.0, INFINITY, MDF_PARAM_MIN_OPEN, "Å", "cutoff"),
    MDF_PARAM_DOUBLE(fs_params, density_hint, 0.1, 0.0, INFINITY, MDF_PARAM_MIN_OPEN, "1/Å³",
                     "sizes the list slots (tiny: atoms overflow)"),
    MDF_PARAM_END};

static double fs_phi(const fs_params *p, double r) { return exp(-p->beta * (r - p->r0)); }
static double fs_dphi(const fs_params *p, double r) { return -p->beta * fs_phi(p, r); }
static double fs_V(const fs_params *p, double r) { return p->B * exp(-p->alpha * (r - p->r0)); }
static double fs_dV(const fs_params *p, double r) { return -p->alpha * fs_V(p, r); }
static double fs_F(const fs_params *p, double rho) { return -p->A * sqrt(rho); }
static double fs_dF(const fs_params *p, double rho) { return rho > 0.0 ? -0.5 * p->A / sqrt(rho) : 0.0; }

/* ---- the model's codelets (CPU) ------------------------------------------------ */

typedef struct fs_view {
    const double *x;
    const mdf_atom_info *atoms;
    const mdf_sys_info *sys;
    mdf_nl_list_view l;
    mdf_nl_bins_view v;
    const fs_params *p;
    const mdf_chunk *c;
} fs_view;

static fs_view fs_map(void *buffers[], const mdf_model_args *a, int params_buffer)
{
    fs_view w = {.x = (const double *)STARPU_VECTOR_GET_PTR(buffers[0]),
                 .atoms = (const mdf_atom_info *)STARPU_VECTOR_GET_PTR(buffers[1]),
                 .sys = (const mdf_sys_info *)STARPU_VECTOR_GET_PTR(buffers[2]),
                 .l = mdf_nl_list_map((void *)STARPU_VECTOR_GET_PTR(buffers[3])),
                 .v = mdf_nl_bins_map((void *)STARPU_VECTOR_GET_PTR(buffers[4])),
                 .p = (const fs_params *)STARPU_VECTOR_GET_PTR(buffers[params_buffer]),
                 .c = &a->chunk};
    return w;
}

/* Calls fn(j, d) for every neighbour j of atom i (system s, index sidx)
 * within rc, d = r_j - r_i: from the full list, or from the cells when the
 * list overflowed. */
typedef void (*fs_visit)(void *user, int32_t j, const double d[3], double r);

static void fs_neighbours(const fs_view *w, int32_t i, int32_t sidx, fs_visit fn, void *user)
{
    double rc2 = w->p->rc * w->p->rc, d[3];
    mdf_nl_full it;
    mdf_nl_full_begin(&it, i, w->x, &w->l, &w->v, &w->sys[sidx], sidx, w->c->atom_begin);
    int32_t j;
    while (mdf_nl_full_next(&it, &j, d)) {
        double r2 = d[0] * d[0] + d[1] * d[1] + d[2] * d[2];
        if (r2 < rc2) fn(user, j, d, sqrt(r2));
    }
}

/* Rows [i0, i1) of system s that chunk c owns. */
static void fs_rows(const mdf_chunk *c, const mdf_sys_info *s, int32_t *i0, int32_t *i1)
{
    *i0 = s->atom_start > c->atom_begin ? s->atom_start : c->atom_begin;
    *i1 = s->atom_start + s->natoms < c->atom_end ? s->atom_start + s->natoms : c->atom_end;
}

typedef struct density_acc {
    double rho;
    const fs_params *p;
} density_acc;

static void add_density(void *user, int32_t j, const double d[3], double r)
{
    (void)j;
    (void)d;
    density_acc *a = (density_acc *)user;
    a->rho += fs_phi(a->p, r);
}

static void fs_aux_cpu(void *buffers[], void *cl_arg)
{
    const mdf_model_args *a = (const mdf_model_args *)cl_arg;
    fs_view w = fs_map(buffers, a, 6);
    double *rho = (double *)STARPU_VECTOR_GET_PTR(buffers[5]);
    for (int32_t s = a->chunk.sys_begin; s < a->chunk.sys_end; s++) {
        if (!mdf_status_in(w.sys[s].status, a->status_lo, a->status_hi)) continue;
        int32_t i0, i1;
        fs_rows(w.c, &w.sys[s], &i0, &i1);
        for (int32_t i = i0; i < i1; i++) {
            density_acc u = {0.0, w.p};
            fs_neighbours(&w, i, s, add_density, &u);
            rho[i - a->chunk.atom_begin] = u.rho;
        }
    }
}

typedef struct force_acc {
    const fs_params *p;
    const double *rho;
    double rho_i, e, f[3], w[9];
} force_acc;

static void add_force(void *user, int32_t j, const double d[3], double r)
{
    force_acc *a = (force_acc *)user;
    double g = (fs_dF(a->p, a->rho_i) + fs_dF(a->p, a->rho[j])) * fs_dphi(a->p, r) + fs_dV(a->p, r);
    double fpair = -g / r; /* force on i is -fpair (r_j - r_i) */
    a->e += 0.5 * fs_V(a->p, r);
    for (int k = 0; k < 3; k++) a->f[k] -= fpair * d[k];
    for (int x = 0; x < 3; x++)
        for (int y = 0; y < 3; y++) a->w[3 * x + y] += 0.5 * d[x] * d[y] * fpair;
}

/* Rows only (each chunk writes the forces of its own atoms, every pair seen
 * from both ends): the contract of a slice, MDF_PART_ROWS. */
static void fs_cpu(void *buffers[], void *cl_arg)
{
    const mdf_model_args *a = (const mdf_model_args *)cl_arg;
    fs_view w = fs_map(buffers, a, 7);
    double *f = (double *)STARPU_VECTOR_GET_PTR(buffers[5]);
    mdf_sys_result *res = (mdf_sys_result *)STARPU_VECTOR_GET_PTR(buffers[6]);
    const double *rho = (const double *)STARPU_VECTOR_GET_PTR(buffers[8]);
    for (int32_t s = a->chunk.sys_begin; s < a->chunk.sys_end; s++) {
        if (!mdf_status_in(w.sys[s].status, a->status_lo, a->status_hi)) continue;
        int32_t i0, i1;
        fs_rows(w.c, &w.sys[s], &i0, &i1);
        mdf_sys_result *r = &res[s];
        r->energy = 0.0;
        if (a->want_virial) memset(r->virial, 0, sizeof r->virial);
        r->virial_fresh = a->want_virial != 0;
        if (a->partial) mdf_part_mark(r, MDF_PART_ROWS);
        for (int32_t i = i0; i < i1; i++) {
            force_acc acc = {.p = w.p, .rho = rho, .rho_i = rho[i]};
            fs_neighbours(&w, i, s, add_force, &acc);
            r->energy += fs_F(w.p, rho[i]) + acc.e;
            for (int k = 0; k < 3; k++) f[3 * i + k] = acc.f[k];
            if (a->want_virial)
                for (int k = 0; k < 9; k++) r->virial[k] += acc.w[k];
        }
    }
}

static mdf_status fs_setup(const void *params, const mdf_model_species *sp, mdf_model_setup *out, mdf_error *err)
{
    (void)sp;
    (void)err;
    const fs_params *p = (const fs_params *)params;
    out->blob = malloc(sizeof *p);
    if (!out->blob) return mdf_error_set(err, MDF_ERR_NOMEM, "no memory");
    memcpy(out->blob, p, sizeof *p);
    out->blob_size = sizeof *p;
    out->cutoff = p->rc;
    out->density_hint = p->density_hint;
    out->all_elements = 1;
    return MDF_OK;
}

static const mdf_model_def fs_def = {
    .api_version = MDFLOW_API_VERSION,
    .name = "fs_test",
    .summary = "Finnis-Sinclair-type test model",
    .params = fs_defs,
    .params_size = sizeof(fs_params),
    .setup = fs_setup,
    .cpu_func = fs_cpu,
    .cpu_func_name = "fs_cpu",
    .aux_per_atom = 1,
    .aux_cpu_func = fs_aux_cpu,
    .aux_cpu_func_name = "fs_aux_cpu",
};

/* ---- the reference: every pair, minimum image --------------------------------- */

static void min_image(const mdf_frame *f, const double inv[9], int64_t i, int64_t j, double d[3])
{
    for (int k = 0; k < 3; k++) d[k] = f->positions[3 * j + k] - f->positions[3 * i + k];
    if (!f->has_cell) return;
    double s[3];
    for (int k = 0; k < 3; k++) s[k] = d[0] * inv[k] + d[1] * inv[3 + k] + d[2] * inv[6 + k];
    for (int k = 0; k < 3; k++)
        if (f->pbc[k]) s[k] -= nearbyint(s[k]);
    for (int k = 0; k < 3; k++) d[k] = s[0] * f->cell[k] + s[1] * f->cell[3 + k] + s[2] * f->cell[6 + k];
}

static void reference(const fs_params *p, const mdf_frame *f, double *energy, double *forces, double w[9])
{
    double inv[9] = {0};
    if (f->has_cell) assert_true(mdf_inv3(f->cell, inv));
    int64_t n = f->natoms;
    double *rho = calloc((size_t)n, sizeof *rho);
    for (int64_t i = 0; i < n; i++)
        for (int64_t j = 0; j < n; j++) {
            if (i == j) continue;
            double d[3];
            min_image(f, inv, i, j, d);
            double r = sqrt(d[0] * d[0] + d[1] * d[1] + d[2] * d[2]);
            if (r < p->rc) rho[i] += fs_phi(p, r);
        }
    *energy = 0.0;
    memset(forces, 0, sizeof(double) * 3 * (size_t)n);
    memset(w, 0, sizeof(double) * 9);
    for (int64_t i = 0; i < n; i++) {
        *energy += fs_F(p, rho[i]);
        for (int64_t j = i + 1; j < n; j++) {
            double d[3];
            min_image(f, inv, i, j, d);
            double r = sqrt(d[0] * d[0] + d[1] * d[1] + d[2] * d[2]);
            if (!(r < p->rc)) continue;
            *energy += fs_V(p, r);
            double g = (fs_dF(p, rho[i]) + fs_dF(p, rho[j])) * fs_dphi(p, r) + fs_dV(p, r);
            for (int k = 0; k < 3; k++) {
                forces[3 * i + k] += g * d[k] / r; /* -dE/dr_i */
                forces[3 * j + k] -= g * d[k] / r;
            }
            for (int x = 0; x < 3; x++)
                for (int y = 0; y < 3; y++) w[3 * x + y] -= d[x] * d[y] * g / r;
        }
    }
    free(rho);
}

/* ---- checks ----------------------------------------------------------------------- */

static mdf_model *fs_model(const char *density_hint)
{
    mdf_model_config *c;
    TU_CALL(mdf_model_config_create, "fs_test", &c);
    if (density_hint) TU_CALL(mdf_model_config_set, c, "density_hint", density_hint);
    mdf_model *m;
    TU_CALL(mdf_model_create, c, &m);
    mdf_model_config_destroy(c);
    return m;
}

static void check_frames(mdf_frame *in, size_t n, const char *density_hint, const char *what)
{
    mdf_model *m = fs_model(density_hint);
    fs_params p;
    mdf_params_defaults(fs_defs, &p);
    mdf_batch *b;
    TU_CALL(mdf_batch_create, in, n, NULL, &b);
    TU_CALL(mdf_compute_forces, b, m);
    TU_CALL(mdf_batch_sync, b);
    double worst_e = 0.0, worst_f = 0.0, worst_w = 0.0;
    for (size_t s = 0; s < n; s++) {
        mdf_frame out;
        TU_CALL(mdf_batch_get_frame, b, s, &out);
        mdf_system_view v;
        TU_CALL(mdf_batch_get_system, b, s, &v);
        double e, w[9], *f = malloc(sizeof(double) * 3 * (size_t)in[s].natoms);
        reference(&p, &in[s], &e, f, w);
        worst_e = fmax(worst_e, tu_reldiff(out.energy, e, 1e-12));
        double fscale = 0.0;
        for (int64_t k = 0; k < 3 * in[s].natoms; k++) fscale = fmax(fscale, fabs(f[k]));
        for (int64_t k = 0; k < 3 * in[s].natoms; k++)
            worst_f = fmax(worst_f, fabs(out.forces[k] - f[k]) / fscale);
        double wscale = 0.0;
        for (int k = 0; k < 9; k++) wscale = fmax(wscale, fabs(w[k]));
        for (int k = 0; k < 9; k++) worst_w = fmax(worst_w, fabs(v.virial[k] - w[k]) / wscale);
        assert_true(e < 0.0);
        free(f);
        mdf_frame_free(&out);
    }
    printf("# %s: worst relative differences from the reference: energy %.2e, forces %.2e, virial %.2e\n", what,
           worst_e, worst_f, worst_w);
    assert_true(worst_e < 1e-10);
    assert_true(worst_f < 1e-10);
    assert_true(worst_w < 1e-10);
    mdf_batch_destroy(b);
    mdf_model_destroy(m);
}

static int setup_registry(void **state)
{
    (void)state;
    mdf_error err;
    if (mdf_register_model(&fs_def, &err) != MDF_OK) {
        fprintf(stderr, "%s\n", err.message);
        return -1;
    }
    return 0;
}

static void test_clusters_and_boxes(void **state)
{
    (void)state;
    tu_start(NULL, 2, 0);
    double box[9] = {13, 0, 0, 0, 12, 0, 0.5, 0, 14};
    int pbc[3] = {1, 1, 1}, open[3] = {0, 0, 0}, slab[3] = {1, 1, 0}, zs[] = {29};
    mdf_frame in[4] = {tu_random(50, box, open, 2.0, zs, 1, 1), tu_random(70, box, pbc, 2.0, zs, 1, 2),
                       tu_random(60, box, slab, 2.0, zs, 1, 3), tu_fcc(3, 3, 3, 3.6, 29, 0.05, 0.05, 4)};
    in[0].has_cell = 0;
    memset(in[0].cell, 0, sizeof in[0].cell);
    check_frames(in, 4, NULL, "clusters and boxes");
    check_frames(in, 4, "0.0005", "short lists (atoms walked from cells)");
    for (int k = 0; k < 4; k++) mdf_frame_free(&in[k]);
    tu_stop();
}

/* 2,916 atoms: sliced into chunks whose densities are gathered. */
static void test_sliced_system(void **state)
{
    (void)state;
    tu_start(NULL, 2, 0);
    mdf_frame in = tu_fcc(9, 9, 9, 3.6, 29, 0.0, 0.08, 5);
    check_frames(&in, 1, NULL, "a sliced system");
    mdf_frame_free(&in);
    tu_stop();
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_clusters_and_boxes), cmocka_unit_test(test_sliced_system)};
    return cmocka_run_group_tests(tests, setup_registry, NULL);
}
