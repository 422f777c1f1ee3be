/* mdflow — convergence, CPU implementation. */
#include "converge_codelet.h"

void mdf_converge_cpu(void *buffers[], void *cl_arg)
{
    const mdf_converge_args *a = (const mdf_converge_args *)cl_arg;
    const double *f = (const double *)STARPU_VECTOR_GET_PTR(buffers[0]);
    mdf_sys_info *sys = (mdf_sys_info *)STARPU_VECTOR_GET_PTR(buffers[1]);
    mdf_sys_result *res = (mdf_sys_result *)STARPU_VECTOR_GET_PTR(buffers[2]);
    mdf_sys_state *state = (mdf_sys_state *)STARPU_VECTOR_GET_PTR(buffers[3]);
    for (int32_t s = 0; s < a->nsys; s++) {
        sys[s].flags &= ~MDF_SYS_CONVERGED_NOW;
        const mdf_converge_part *part = mdf_converge_part_of(a, &sys[s]);
        if (!part) continue;
        double m2 = 0.0;
        int32_t a1 = sys[s].atom_start + sys[s].natoms;
        for (int32_t i = sys[s].atom_start; i < a1; i++) {
            double n2 = mdf_force_norm2(f + 3 * i);
            /* A NaN force must not pass for a small one, nor be replaced by
             * a later finite one: NaN wins (as mdf_seg_combine on the GPU). */
            if (n2 > m2 || n2 != n2) m2 = n2;
        }
        mdf_converge_system(&sys[s], &res[s], &state[s], m2, part, a->apply);
    }
}
