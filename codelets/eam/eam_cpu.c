/* mdflow — EAM codelets (CPU): the density pass (auxiliary, one double per
 * atom) and the energy/force pass. Both walk full lists for the chunk's own
 * atoms (n_up entries from slot 0, n_down from slot M-1 down; atoms with
 * more neighbours than slots walk their cells) and write rows only, so a
 * chunk is a slice of its system (MDF_PART_ROWS). */
#include <math.h>
#include <string.h>
#include <starpu.h>
#include "eam_codelet.h"
#include "mdflow/kernel/nlist.h"
#include "mdflow/kernel/reduce.h"

typedef struct eam_view {
    const double *x;
    const mdf_atom_info *atoms;
    const mdf_sys_info *sys;
    mdf_nl_list_view l;
    mdf_nl_bins_view v;
    const mdf_eam_params *p;
    const mdf_chunk *c;
} eam_view;

static eam_view eam_map(void *buffers[], const mdf_model_args *a, int params_buffer)
{
    eam_view w = {.x = (const double *)STARPU_VECTOR_GET_PTR(buffers[0]),
                  .atoms = (const mdf_atom_info *)STARPU_VECTOR_GET_PTR(buffers[1]),
                  .sys = (const mdf_sys_info *)STARPU_VECTOR_GET_PTR(buffers[2]),
                  .l = mdf_nl_list_map((void *)STARPU_VECTOR_GET_PTR(buffers[3])),
                  .v = mdf_nl_bins_map((void *)STARPU_VECTOR_GET_PTR(buffers[4])),
                  .p = (const mdf_eam_params *)STARPU_VECTOR_GET_PTR(buffers[params_buffer]),
                  .c = &a->chunk};
    return w;
}

typedef void (*eam_visit)(void *user, int32_t j, const double d[3], double r);

/* Calls fn(j, d, r) for every neighbour j of atom i within the cutoff,
 * d = r_j - r_i. */
static void eam_neighbours(const eam_view *w, int32_t i, int32_t sidx, eam_visit fn, void *user)
{
    const mdf_sys_info *s = &w->sys[sidx];
    double xi[3], rc2 = w->p->cutsq;
    mdf_nl_wrapped(w->x, w->v.offset, i, xi);
    int32_t li = i - w->c->atom_begin, M = w->l.head->slots;
    if (w->l.n_up[li] + w->l.n_down[li] > M) {
        const mdf_nl_grid *g = &w->v.grid[sidx];
        mdf_nl_walk walk;
        mdf_nl_walk_begin(&walk, g, w->v.cell_of[i]);
        int32_t j;
        while (mdf_nl_walk_next(&walk, g, w->v.cell_start + s->atom_start + sidx, w->v.sorted, &j)) {
            if (j == i) continue;
            double xj[3], d[3];
            mdf_nl_wrapped(w->x, w->v.offset, j, xj);
            mdf_nl_min_image(xi, xj, s, d);
            double r2 = d[0] * d[0] + d[1] * d[1] + d[2] * d[2];
            if (r2 < rc2) fn(user, j, d, sqrt(r2));
        }
        return;
    }
    const uint32_t *nb = w->l.slots + (size_t)li * (size_t)M;
    for (int part = 0; part < 2; part++) {
        int32_t k0 = part ? M - w->l.n_down[li] : 0, k1 = part ? M : w->l.n_up[li];
        for (int32_t k = k0; k < k1; k++) {
            int32_t j = (int32_t)(nb[k] >> MDF_NL_IMAGE_BITS);
            double sh[3], xj[3];
            mdf_nl_image_shift(nb[k] & MDF_NL_IMAGE_MASK, s->cell, sh);
            mdf_nl_wrapped(w->x, w->v.offset, j, xj);
            double d[3] = {xj[0] + sh[0] - xi[0], xj[1] + sh[1] - xi[1], xj[2] + sh[2] - xi[2]};
            double r2 = d[0] * d[0] + d[1] * d[1] + d[2] * d[2];
            if (r2 < rc2) fn(user, j, d, sqrt(r2));
        }
    }
}

static void eam_rows(const mdf_chunk *c, const mdf_sys_info *s, int32_t *i0, int32_t *i1)
{
    *i0 = s->atom_start > c->atom_begin ? s->atom_start : c->atom_begin;
    *i1 = s->atom_start + s->natoms < c->atom_end ? s->atom_start + s->natoms : c->atom_end;
}

static int32_t eam_elem(const eam_view *w, int32_t i)
{
    int32_t z = w->atoms[i].z;
    int32_t e = z >= 0 && z <= MDF_EAM_MAX_Z ? w->p->elem_of_z[z] : -1;
    return e >= 0 ? e : 0; /* unknown elements are refused before a run */
}

typedef struct density_acc {
    const eam_view *w;
    int32_t ei;
    double rho;
} density_acc;

static void add_density(void *user, int32_t j, const double d[3], double r)
{
    (void)d;
    density_acc *a = (density_acc *)user;
    double p;
    const double *c = mdf_eam_r_row(a->w->p, mdf_eam_rhor(a->w->p, eam_elem(a->w, j), a->ei), r, &p);
    a->rho += mdf_eam_value(c, p);
}

void mdf_eam_aux_cpu(void *buffers[], void *cl_arg)
{
    const mdf_model_args *a = (const mdf_model_args *)cl_arg;
    eam_view w = eam_map(buffers, a, 6);
    double *rho = (double *)STARPU_VECTOR_GET_PTR(buffers[5]);
    for (int32_t s = a->chunk.sys_begin; s < a->chunk.sys_end; s++) {
        if (!mdf_status_in(w.sys[s].status, a->status_lo, a->status_hi)) continue;
        int32_t i0, i1;
        eam_rows(w.c, &w.sys[s], &i0, &i1);
        for (int32_t i = i0; i < i1; i++) {
            density_acc u = {&w, eam_elem(&w, i), 0.0};
            eam_neighbours(&w, i, s, add_density, &u);
            rho[i - a->chunk.atom_begin] = u.rho;
        }
    }
}

typedef struct force_acc {
    const eam_view *w;
    const double *rho;
    int32_t ei;
    double fp_i, e, f[3], vir[9];
} force_acc;

static void add_force(void *user, int32_t j, const double d[3], double r)
{
    force_acc *a = (force_acc *)user;
    const mdf_eam_params *p = a->w->p;
    int32_t ej = eam_elem(a->w, j);
    double t;
    /* LAMMPS: rhoip = d rho_{i->j}, rhojp = d rho_{j->i}, z2 = r phi. */
    const double *c = mdf_eam_r_row(p, mdf_eam_rhor(p, a->ei, ej), r, &t);
    double rhoip = mdf_eam_deriv(c, t);
    c = mdf_eam_r_row(p, mdf_eam_rhor(p, ej, a->ei), r, &t);
    double rhojp = mdf_eam_deriv(c, t);
    c = mdf_eam_r_row(p, mdf_eam_z2r(p, a->ei, ej), r, &t);
    double z2p = mdf_eam_deriv(c, t), z2 = mdf_eam_value(c, t);
    double recip = 1.0 / r, phi = z2 * recip, phip = z2p * recip - phi * recip;
    double fp_j = mdf_eam_embed_deriv(p, ej, a->rho[j]);
    double psip = a->fp_i * rhojp + fp_j * rhoip + phip;
    double fpair = -psip * recip; /* force on i: -fpair (r_j - r_i) */
    a->e += 0.5 * phi;
    for (int k = 0; k < 3; k++) a->f[k] -= fpair * d[k];
    for (int x = 0; x < 3; x++)
        for (int y = 0; y < 3; y++) a->vir[3 * x + y] += 0.5 * d[x] * d[y] * fpair;
}

void mdf_eam_cpu(void *buffers[], void *cl_arg)
{
    const mdf_model_args *a = (const mdf_model_args *)cl_arg;
    eam_view w = eam_map(buffers, a, 7);
    double *f = (double *)STARPU_VECTOR_GET_PTR(buffers[5]);
    mdf_sys_result *res = (mdf_sys_result *)STARPU_VECTOR_GET_PTR(buffers[6]);
    const double *rho = (const double *)STARPU_VECTOR_GET_PTR(buffers[8]);
    for (int32_t s = a->chunk.sys_begin; s < a->chunk.sys_end; s++) {
        if (!mdf_status_in(w.sys[s].status, a->status_lo, a->status_hi)) continue;
        int32_t i0, i1;
        eam_rows(w.c, &w.sys[s], &i0, &i1);
        mdf_sys_result *r = &res[s];
        r->energy = 0.0;
        if (a->want_virial) memset(r->virial, 0, sizeof r->virial);
        r->virial_fresh = a->want_virial != 0;
        if (a->partial) mdf_part_mark(r, MDF_PART_ROWS);
        for (int32_t i = i0; i < i1; i++) {
            force_acc acc;
            memset(&acc, 0, sizeof acc);
            acc.w = &w;
            acc.rho = rho;
            acc.ei = eam_elem(&w, i);
            double embed = mdf_eam_embed(w.p, acc.ei, rho[i], &acc.fp_i);
            eam_neighbours(&w, i, s, add_force, &acc);
            r->energy += embed + acc.e;
            for (int k = 0; k < 3; k++) f[3 * i + k] = acc.f[k];
            if (a->want_virial)
                for (int k = 0; k < 9; k++) r->virial[k] += acc.vir[k];
        }
    }
}
