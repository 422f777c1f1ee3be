/* mdflow — EAM codelets (CPU): the density pass (auxiliary, one double per
 * atom) and the energy/force pass. Both walk full lists for the chunk's own
 * atoms (eam_kernel.h: mdf_eam_nbrs; the arithmetic of one atom is
 * mdf_eam_atom_density and mdf_eam_atom_force, shared with eam_cuda.cu) and
 * write rows only, so a chunk is a slice of its system (MDF_PART_ROWS). */
#include <math.h>
#include <string.h>
#include <starpu.h>
#include "eam_codelet.h"
#include "mdflow/kernel/nlist.h"
#include "mdflow/kernel/reduce.h"

static void eam_rows(const mdf_chunk *c, const mdf_sys_info *s, int32_t *i0, int32_t *i1)
{
    *i0 = s->atom_start > c->atom_begin ? s->atom_start : c->atom_begin;
    *i1 = s->atom_start + s->natoms < c->atom_end ? s->atom_start + s->natoms : c->atom_end;
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
    for (int32_t s = a->chunk.sys_begin; s < a->chunk.sys_end; s++) {
        if (!mdf_status_in(sys[s].status, a->status_lo, a->status_hi)) continue;
        int32_t i0, i1;
        eam_rows(&a->chunk, &sys[s], &i0, &i1);
        for (int32_t i = i0; i < i1; i++) {
            mdf_eam_nbrs it;
            mdf_eam_nbrs_begin(&it, x, sys, l, v, a->chunk.atom_begin, i, s, p->cutsq);
            rho[i - a->chunk.atom_begin] = mdf_eam_atom_density(p, atoms, &it);
        }
    }
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
    for (int32_t s = a->chunk.sys_begin; s < a->chunk.sys_end; s++) {
        if (!mdf_status_in(sys[s].status, a->status_lo, a->status_hi)) continue;
        int32_t i0, i1;
        eam_rows(&a->chunk, &sys[s], &i0, &i1);
        mdf_sys_result *r = &res[s];
        r->energy = 0.0;
        if (a->want_virial) memset(r->virial, 0, sizeof r->virial);
        r->virial_fresh = a->want_virial != 0;
        if (a->partial) mdf_part_mark(r, MDF_PART_ROWS);
        for (int32_t i = i0; i < i1; i++) {
            mdf_eam_nbrs it;
            double w[9];
            mdf_eam_nbrs_begin(&it, x, sys, l, v, a->chunk.atom_begin, i, s, p->cutsq);
            r->energy += mdf_eam_atom_force(p, atoms, rho, &it, a->want_virial, &f[3 * (size_t)i], w);
            if (a->want_virial)
                for (int k = 0; k < 9; k++) r->virial[k] += w[k];
        }
    }
}
