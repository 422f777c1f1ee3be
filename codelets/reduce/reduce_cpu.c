/* mdflow — summing chunk outputs, CPU implementation. */
#include <string.h>
#include <starpu.h>
#include "reduce_codelet.h"

void mdf_reduce_cpu(void *buffers[], void *cl_arg)
{
    const mdf_reduce_args *args = (const mdf_reduce_args *)cl_arg;
    int K = args->nchunks;
    double *f = (double *)STARPU_VECTOR_GET_PTR(buffers[2 * K]);
    mdf_sys_result *res = (mdf_sys_result *)STARPU_VECTOR_GET_PTR(buffers[2 * K + 1]);
    memset(f, 0, sizeof(double) * 3 * (size_t)args->natoms);
    for (int32_t s = 0; s < args->nsys; s++) {
        res[s].energy = 0.0;
        if (args->want_virial) memset(res[s].virial, 0, sizeof res[s].virial);
    }
    for (int c = 0; c < K; c++) {
        const mdf_chunk *ch = &args->chunks[c];
        const double *fp = (const double *)STARPU_VECTOR_GET_PTR(buffers[c]);
        const mdf_sys_result *rp = (const mdf_sys_result *)STARPU_VECTOR_GET_PTR(buffers[K + c]);
        int32_t lo, hi;
        mdf_part_range(ch, rp, &lo, &hi);
        const int halo = args->halo_at > 0 && ch->sys_begin < ch->sys_end && rp[ch->sys_begin].pad_ == MDF_PART_ROWS_HALO;
        if (halo) lo = ch->atom_begin, hi = ch->atom_end;
        for (size_t k = 3 * (size_t)lo; k < 3 * (size_t)hi; k++) f[k] += fp[k];
        if (halo) { /* the q-th halo atom's share sits in its compact row (mdf_part_halo_row) */
            const int32_t *h = mdf_part_halo((double *)fp, args->halo_at);
            const int32_t *atom = h + 2, nb = mdf_part_halo_before(h, ch->atom_begin);
            for (int32_t q = 0; q < h[0]; q++) {
                const size_t row = (size_t)mdf_part_halo_row(q, nb, ch->atom_begin, ch->atom_end);
                for (int k = 0; k < 3; k++) f[3 * (size_t)atom[q] + k] += fp[3 * row + k];
            }
        }
        for (int32_t s = ch->sys_begin; s < ch->sys_end; s++) {
            res[s].energy += rp[s].energy;
            /* every part of a system saw the same evaluation */
            res[s].virial_fresh = rp[s].virial_fresh;
            if (args->want_virial)
                for (int k = 0; k < 9; k++) res[s].virial[k] += rp[s].virial[k];
        }
    }
}
