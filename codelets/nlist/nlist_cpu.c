/* mdflow — neighbour lists, CPU implementation. */
#include <float.h>
#include <string.h>
#include <starpu.h>
#include "nlist_codelet.h"

/* Fractional range of the system's atoms along each direction: [0,1) along
 * periodic ones, the atoms' extent along open ones. */
static void bin_bounds(const double *pos, const mdf_sys_info *s, mdf_nl_grid *g)
{
    double lo[3] = {DBL_MAX, DBL_MAX, DBL_MAX}, hi[3] = {-DBL_MAX, -DBL_MAX, -DBL_MAX};
    int32_t a1 = s->atom_start + s->natoms;
    for (int32_t a = s->atom_start; a < a1; a++) {
        double u[3];
        mdf_nl_frac(g, pos + 3 * a, u);
        for (int k = 0; k < 3; k++) {
            lo[k] = u[k] < lo[k] ? u[k] : lo[k];
            hi[k] = u[k] > hi[k] ? u[k] : hi[k];
        }
    }
    for (int k = 0; k < 3; k++) {
        g->lo[k] = g->periodic[k] ? 0.0 : lo[k];
        double span = g->periodic[k] ? 1.0 : hi[k] - lo[k];
        g->span[k] = span > 0.0 ? span : 1e-300; /* a flat system: one cell */
    }
}

void mdf_nl_bin_system(const double *pos, const mdf_sys_info *s, int32_t sidx, mdf_nl_bins_view *v,
                       double r_list)
{
    mdf_nl_grid *g = &v->grid[sidx];
    mdf_nl_basis(s, g);
    bin_bounds(pos, s, g);
    int32_t a0 = s->atom_start, a1 = a0 + s->natoms;
    mdf_nl_grid_dims(g, r_list, s->natoms);
    int32_t ncells = g->n[0] * g->n[1] * g->n[2];
    int32_t *cs = v->cell_start + a0 + sidx;
    memset(cs, 0, sizeof *cs * (size_t)(ncells + 1));
    for (int32_t a = a0; a < a1; a++) {
        double u[3];
        int32_t c[3];
        mdf_nl_frac(g, pos + 3 * a, u);
        v->cell_of[a] = mdf_nl_cell_index(g, u, c);
        cs[v->cell_of[a] + 1]++;
    }
    /* Counting sort, stable in atom order: cell contents are deterministic. */
    cs[0] = a0;
    for (int32_t c = 0; c < ncells; c++) cs[c + 1] += cs[c];
    for (int32_t a = a0; a < a1; a++) v->sorted[cs[v->cell_of[a]]++] = a;
    for (int32_t c = ncells; c > 0; c--) cs[c] = cs[c - 1];
    cs[0] = a0;
    memcpy(v->ref_pos + 3 * a0, pos + 3 * a0, sizeof(double) * 3 * (size_t)s->natoms);
    memcpy(g->ref_cell, s->cell, sizeof g->ref_cell);
    g->valid = 1;
    g->nbuilds++;
}

/* buffers: pos R, sys R, bins RW */
void mdf_nl_bin_cpu(void *buffers[], void *cl_arg)
{
    const mdf_nl_bin_args *args = (const mdf_nl_bin_args *)cl_arg;
    const double *pos = (const double *)STARPU_VECTOR_GET_PTR(buffers[0]);
    const mdf_sys_info *sys = (const mdf_sys_info *)STARPU_VECTOR_GET_PTR(buffers[1]);
    mdf_nl_bins_view v = mdf_nl_bins_map((void *)STARPU_VECTOR_GET_PTR(buffers[2]));
    for (int32_t s = 0; s < args->nsys; s++) {
        mdf_nl_grid *g = &v.grid[s];
        const mdf_sys_info *si = &sys[s];
        int need = !g->valid || v.head->force_rebuild || mdf_nl_cell_changed(g, si) ||
                   mdf_nl_moved_too_far(pos, v.ref_pos, si->atom_start, si->atom_start + si->natoms,
                                        args->half_skin2);
        g->rebuilt = need;
        if (need) mdf_nl_bin_system(pos, si, s, &v, args->r_list);
    }
    v.head->force_rebuild = 0;
}

static void list_stats(mdf_nl_list_view *l)
{
    int32_t over = 0, maxc = 0;
    for (int32_t i = 0; i < l->head->natoms; i++) {
        int32_t c = l->n_up[i] + l->n_down[i];
        over += c > l->head->slots;
        maxc = c > maxc ? c : maxc;
    }
    l->head->overflowed = over;
    l->head->max_count = maxc;
}

/* buffers: pos R, atoms R, sys R, bins R, list RW */
void mdf_nl_build_cpu(void *buffers[], void *cl_arg)
{
    const mdf_nl_build_args *args = (const mdf_nl_build_args *)cl_arg;
    const double *pos = (const double *)STARPU_VECTOR_GET_PTR(buffers[0]);
    const mdf_sys_info *sys = (const mdf_sys_info *)STARPU_VECTOR_GET_PTR(buffers[2]);
    mdf_nl_bins_view v = mdf_nl_bins_map((void *)STARPU_VECTOR_GET_PTR(buffers[3]));
    mdf_nl_list_view l = mdf_nl_list_map((void *)STARPU_VECTOR_GET_PTR(buffers[4]));
    const mdf_chunk *c = &args->chunk;
    int32_t M = l.head->slots;
    int any = 0;
    for (int32_t s = c->sys_begin; s < c->sys_end; s++) {
        if (!v.grid[s].rebuilt) continue;
        any = 1;
        const mdf_sys_info *si = &sys[s];
        int32_t i0 = si->atom_start > c->atom_begin ? si->atom_start : c->atom_begin;
        int32_t i1 = si->atom_start + si->natoms;
        if (i1 > c->atom_end) i1 = c->atom_end;
        const int32_t *cs = v.cell_start + si->atom_start + s;
        for (int32_t i = i0; i < i1; i++) {
            int32_t li = i - c->atom_begin;
            mdf_nl_build_atom(i, pos, si, &v.grid[s], cs, v.sorted, v.cell_of, args->r_list2, M,
                              l.slots + (size_t)li * (size_t)M, &l.n_up[li], &l.n_down[li]);
        }
    }
    if (any) list_stats(&l);
}
