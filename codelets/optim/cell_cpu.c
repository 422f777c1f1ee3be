/* mdflow — variable-cell FIRE and L-BFGS, CPU implementation: each system's
 * step is cell_kernel.h's, one system after another. */
#include <starpu.h>
#include "optim_codelet.h"

#define VEC(i) STARPU_VECTOR_GET_PTR(buffers[i])

/* buffers: pos RW, vel RW, force R, sys RW, res RW, state RW */
void mdf_cell_fire_cpu(void *buffers[], void *cl_arg)
{
    const mdf_cell_fire_args *p = (const mdf_cell_fire_args *)cl_arg;
    double *x = (double *)VEC(0), *v = (double *)VEC(1);
    const double *f = (const double *)VEC(2);
    mdf_sys_info *sys = (mdf_sys_info *)VEC(3);
    mdf_sys_result *res = (mdf_sys_result *)VEC(4);
    mdf_sys_state *state = (mdf_sys_state *)VEC(5);
    for (int32_t s = 0; s < p->nsys; s++)
        if (sys[s].status == p->status) mdf_cell_fire_system(x, v, f, &sys[s], &res[s], &state[s], p);
}

/* buffers: pos RW, force R, sys RW, res RW, state RW, work RW */
void mdf_cell_lbfgs_cpu(void *buffers[], void *cl_arg)
{
    const mdf_cell_lbfgs_args *p = (const mdf_cell_lbfgs_args *)cl_arg;
    double *x = (double *)VEC(0);
    const double *f = (const double *)VEC(1);
    mdf_sys_info *sys = (mdf_sys_info *)VEC(2);
    mdf_sys_result *res = (mdf_sys_result *)VEC(3);
    mdf_sys_state *state = (mdf_sys_state *)VEC(4);
    double *w = (double *)VEC(5);
    for (int32_t s = 0; s < p->nsys; s++)
        if (sys[s].status == p->status) mdf_cell_lbfgs_system(x, f, &sys[s], &res[s], &state[s], w, s, p);
}
