/* mdflow — EAM codelets (CPU): the density pass (auxiliary, one double per
 * atom) and the energy/force pass.
 *
 * Pairs within the chunk's rows are taken once, from half lists, with
 * Newton's third law (as LAMMPS's pair_eam): half the pair work of the full
 * lists the GPU threads walk (eam_cuda.cu). Pairs with an atom of another
 * chunk (a slice of a larger system) count on this chunk's atom only, half
 * their energy and virial, so a chunk writes its rows only (MDF_PART_ROWS).
 * The table arithmetic is eam_kernel.h's, shared with the GPU. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <starpu.h>
#include "eam_codelet.h"
#include "mdflow/kernel/nlist.h"
#include "mdflow/kernel/reduce.h"

/* Room for the wrapped positions of the systems chunk c touches, indexed
 * like the positions (rows before touch_begin unused). */
static double *eam_wrapped_alloc(const mdf_chunk *c)
{
    return (double *)malloc(sizeof(double) * 3 * (size_t)(c->touch_end > 0 ? c->touch_end : 1));
}

/* One pair: d = r_j - r_i, r2 = |d|²; both: j is one of the chunk's rows
 * too (add to both atoms), else to i only (j's own chunk adds its side). */
typedef void (*eam_pair_fn)(void *user, int32_t i, int32_t j, const double d[3], double r2, int both);

/* Calls fn once for every pair (i, j, n) within the cut-off with i in
 * [lo, hi) (the chunk's rows of system s): pairs within the rows once (up
 * entries: Newton's third law, as LAMMPS's pair_eam), pairs with an atom
 * outside them (a slice of a larger system) from i's side, both = 0. An
 * atom without a list walks its cells instead. */
/* Inlined into each caller (a constant fn), so the pair arithmetic is too. */
static inline __attribute__((always_inline)) void eam_pairs(const double *x, double *w, const mdf_sys_info *si,
                                                            int32_t s, const mdf_nl_list_view *l,
                                                            const mdf_nl_bins_view *v, int32_t atom_begin, int32_t lo,
                                                            int32_t hi, double cutsq, eam_pair_fn fn, void *user)
{
    /* Wrapped positions x + o of the system, which its lists index (w is
     * indexed like x; only the system's rows are written). */
    for (int32_t k = 3 * si->atom_start; k < 3 * (si->atom_start + si->natoms); k++) w[k] = x[k] + v->offset[k];
    const mdf_nl_grid *g = &v->grid[s];
    mdf_nl_shifts sh;
    mdf_nl_shifts_init(&sh, g, si->cell);
    const int32_t M = l->head->slots;
    const int32_t *cs = v->cell_start + si->atom_start + s;
    for (int32_t i = lo; i < hi; i++) {
        const int32_t li = i - atom_begin;
        double xi[3], d[3];
        if (l->n_up[li] + l->n_down[li] > M) {
            mdf_nl_pairs pw;
            mdf_nl_pairs_begin(&pw, i, x, v->offset, g, cs, v->sorted, v->cell_of, cutsq);
            int32_t j, n[3];
            while (mdf_nl_pairs_next(&pw, &j, n, d)) {
                const int inside = j >= lo && j < hi;
                if (inside && !mdf_nl_pair_is_up(i, j, n)) continue; /* from j's side */
                fn(user, i, j, d, mdf_nl_norm2(d[0], d[1], d[2]), inside);
            }
            continue;
        }
        for (int q = 0; q < 3; q++) xi[q] = w[3 * (size_t)i + q];
        const uint32_t *nb = l->slots + (size_t)li * (size_t)M;
        for (int part = 0; part < 2; part++) {
            const int32_t k0 = part ? M - l->n_down[li] : 0, k1 = part ? M : l->n_up[li];
            for (int32_t k = k0; k < k1; k++) {
                double t[3];
                const int32_t j = mdf_nl_shifts_get(&sh, nb[k], t);
                const int inside = j >= lo && j < hi;
                if (part && inside) continue; /* an up entry of j's */
                for (int q = 0; q < 3; q++) d[q] = w[3 * (size_t)j + q] + t[q] - xi[q];
                const double r2 = mdf_nl_norm2(d[0], d[1], d[2]);
                if (r2 < cutsq) fn(user, i, j, d, r2, inside);
            }
        }
    }
}

typedef struct half_density {
    const mdf_eam_params *p;
    const mdf_atom_info *atoms;
    double *rho; /* indexed by shard atom - atom_begin */
    int32_t atom_begin;
} half_density;

static inline __attribute__((always_inline)) void add_density_pair(void *user, int32_t i, int32_t j, const double d[3], double r2, int both)
{
    (void)d;
    half_density *h = (half_density *)user;
    const mdf_eam_params *p = h->p;
    const int32_t ei = mdf_eam_elem(p, h->atoms[i].z), ej = mdf_eam_elem(p, h->atoms[j].z);
    const double r = sqrt(r2);
    double t;
    /* one spline row for every table at r (mdf_eam_r_row's rounding) */
    const int64_t m = (int64_t)mdf_eam_row(r, p->rdr, p->nr, 0, &t) * 7;
    const double *tab_i = mdf_eam_rhor(p, ej, ei), *tab_j = mdf_eam_rhor(p, ei, ej);
    const double rho_i = mdf_eam_value(tab_i + m, t);
    h->rho[i - h->atom_begin] += rho_i;
    if (!both) return;
    /* one element, or eam/alloy's shared tables: the same value */
    h->rho[j - h->atom_begin] += tab_j == tab_i ? rho_i : mdf_eam_value(tab_j + m, t);
}

typedef struct half_force {
    const mdf_eam_params *p;
    const mdf_atom_info *atoms;
    const double *fp;  /* F'(rho) of the rows, indexed by shard atom - atom_begin */
    const double *rho; /* densities, indexed by shard atom (all the system's) */
    double *f;        /* indexed by shard atom */
    int32_t atom_begin, want_virial;
    double e, w[9];
} half_force;

/* As LAMMPS's pair_eam.cpp compute(): psip = F'(rho_i) rhojp + F'(rho_j)
 * rhoip + phi'(r), the pair's force on i (psip / r) (r_j - r_i). */
static inline __attribute__((always_inline)) void add_force_pair(void *user, int32_t i, int32_t j, const double d[3], double r2, int both)
{
    half_force *h = (half_force *)user;
    const mdf_eam_params *p = h->p;
    const int32_t ei = mdf_eam_elem(p, h->atoms[i].z), ej = mdf_eam_elem(p, h->atoms[j].z);
    const double r = sqrt(r2);
    double t;
    const int64_t m = (int64_t)mdf_eam_row(r, p->rdr, p->nr, 0, &t) * 7;
    const double *tab_ip = mdf_eam_rhor(p, ei, ej), *tab_jp = mdf_eam_rhor(p, ej, ei);
    const double rhoip = mdf_eam_deriv(tab_ip + m, t);
    const double rhojp = tab_jp == tab_ip ? rhoip : mdf_eam_deriv(tab_jp + m, t);
    const double *c = mdf_eam_z2r(p, ei, ej) + m;
    const double z2p = mdf_eam_deriv(c, t), z2 = mdf_eam_value(c, t);
    const double recip = 1.0 / r, phi = z2 * recip, phip = z2p * recip - phi * recip;
    const double fp_j = both ? h->fp[j - h->atom_begin] : mdf_eam_embed_deriv(p, ej, h->rho[j]);
    const double psip = h->fp[i - h->atom_begin] * rhojp + fp_j * rhoip + phip;
    const double fpair = -psip * recip; /* force on i: -fpair (r_j - r_i) */
    const double share = both ? 1.0 : 0.5; /* of the energy and virial */
    h->e += share * phi;
    for (int k = 0; k < 3; k++) h->f[3 * (size_t)i + k] -= fpair * d[k];
    if (both)
        for (int k = 0; k < 3; k++) h->f[3 * (size_t)j + k] += fpair * d[k];
    if (h->want_virial)
        for (int x = 0; x < 3; x++)
            for (int y = 0; y < 3; y++) h->w[3 * x + y] += share * d[x] * d[y] * fpair;
}

void mdf_eam_aux_cpu(void *buffers[], void *cl_arg)
{
    const mdf_model_args *a = (const mdf_model_args *)cl_arg;
    const double *x = (const double *)STARPU_VECTOR_GET_PTR(buffers[0]);
    const mdf_atom_info *atoms = (const mdf_atom_info *)STARPU_VECTOR_GET_PTR(buffers[1]);
    const mdf_sys_info *sys = (const mdf_sys_info *)STARPU_VECTOR_GET_PTR(buffers[2]);
    mdf_nl_list_view l = mdf_nl_list_map((void *)STARPU_VECTOR_GET_PTR(buffers[3]));
    mdf_nl_bins_view v = mdf_nl_bins_map((void *)STARPU_VECTOR_GET_PTR(buffers[4]));
    double *rho = (double *)STARPU_VECTOR_GET_PTR(buffers[5]);
    const mdf_eam_params *p = (const mdf_eam_params *)STARPU_VECTOR_GET_PTR(buffers[6]);
    double *w = eam_wrapped_alloc(&a->chunk);
    for (int32_t s = a->chunk.sys_begin; s < a->chunk.sys_end; s++) {
        if (!w) { /* out of memory inside a task: NaN densities make it impossible to miss */
            for (int32_t i = a->chunk.atom_begin; i < a->chunk.atom_end; i++) rho[i - a->chunk.atom_begin] = NAN;
            break;
        }
        if (!mdf_status_in(sys[s].status, a->status_lo, a->status_hi)) continue;
        int32_t i0, i1;
        mdf_chunk_rows(&a->chunk, &sys[s], &i0, &i1);
        for (int32_t i = i0; i < i1; i++) rho[i - a->chunk.atom_begin] = 0.0;
        half_density h = {p, atoms, rho, a->chunk.atom_begin};
        eam_pairs(x, w, &sys[s], s, &l, &v, a->chunk.atom_begin, i0, i1, p->cutsq, add_density_pair, &h);
    }
    free(w);
}

void mdf_eam_cpu(void *buffers[], void *cl_arg)
{
    const mdf_model_args *a = (const mdf_model_args *)cl_arg;
    const double *x = (const double *)STARPU_VECTOR_GET_PTR(buffers[0]);
    const mdf_atom_info *atoms = (const mdf_atom_info *)STARPU_VECTOR_GET_PTR(buffers[1]);
    const mdf_sys_info *sys = (const mdf_sys_info *)STARPU_VECTOR_GET_PTR(buffers[2]);
    mdf_nl_list_view l = mdf_nl_list_map((void *)STARPU_VECTOR_GET_PTR(buffers[3]));
    mdf_nl_bins_view v = mdf_nl_bins_map((void *)STARPU_VECTOR_GET_PTR(buffers[4]));
    double *f = (double *)STARPU_VECTOR_GET_PTR(buffers[5]);
    mdf_sys_result *res = (mdf_sys_result *)STARPU_VECTOR_GET_PTR(buffers[6]);
    const mdf_eam_params *p = (const mdf_eam_params *)STARPU_VECTOR_GET_PTR(buffers[7]);
    const double *rho = (const double *)STARPU_VECTOR_GET_PTR(buffers[8]);
    /* F'(rho) of the chunk's rows */
    double *fp = (double *)malloc(sizeof(double) * (size_t)(a->chunk.atom_end - a->chunk.atom_begin + 1));
    double *w = eam_wrapped_alloc(&a->chunk);
    for (int32_t s = a->chunk.sys_begin; s < a->chunk.sys_end; s++) {
        if (!mdf_status_in(sys[s].status, a->status_lo, a->status_hi)) continue;
        int32_t i0, i1;
        mdf_chunk_rows(&a->chunk, &sys[s], &i0, &i1);
        mdf_sys_result *r = &res[s];
        r->energy = 0.0;
        if (a->want_virial) memset(r->virial, 0, sizeof r->virial);
        r->virial_fresh = a->want_virial != 0;
        if (a->partial) mdf_part_mark(r, MDF_PART_ROWS);
        if (!fp || !w) { /* out of memory inside a task: make it impossible to miss */
            r->energy = NAN;
            continue;
        }
        half_force h = {p, atoms, fp, rho, f, a->chunk.atom_begin, a->want_virial, 0.0, {0}};
        for (int32_t i = i0; i < i1; i++) {
            double d;
            h.e += mdf_eam_embed(p, mdf_eam_elem(p, atoms[i].z), rho[i], &d);
            fp[i - a->chunk.atom_begin] = d;
            f[3 * (size_t)i] = f[3 * (size_t)i + 1] = f[3 * (size_t)i + 2] = 0.0;
        }
        eam_pairs(x, w, &sys[s], s, &l, &v, a->chunk.atom_begin, i0, i1, p->cutsq, add_force_pair, &h);
        r->energy += h.e;
        if (a->want_virial)
            for (int k = 0; k < 9; k++) r->virial[k] += h.w[k];
    }
    free(fp);
    free(w);
}
