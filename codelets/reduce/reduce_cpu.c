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
        for (size_t k = 3 * (size_t)lo; k < 3 * (size_t)hi; k++) f[k] += fp[k];
        for (int32_t s = ch->sys_begin; s < ch->sys_end; s++) {
            res[s].energy += rp[s].energy;
            /* every part of a system saw the same evaluation */
            res[s].virial_fresh = rp[s].virial_fresh;
            if (args->want_virial)
                for (int k = 0; k < 9; k++) res[s].virial[k] += rp[s].virial[k];
        }
    }
}
