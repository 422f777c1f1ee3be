/* mdflow — velocity Verlet, CPU implementation. */
#include <starpu.h>
#include "verlet_kernel.h"
#include "verlet_codelet.h"

/* pre_update of system si's atoms: v += dt/2 F/m, then x += dt v. */
static void vv_pre_system(double *x, double *v, const double *f, const mdf_atom_info *atoms, const mdf_sys_info *si,
                          double dt)
{
    const int32_t a1 = si->atom_start + si->natoms;
    for (int32_t a = si->atom_start; a < a1; a++) mdf_vv_pre_atom(x + 3 * a, v + 3 * a, f + 3 * a, atoms[a].inv_mass, dt);
}

/* post_update of system si's atoms: v += dt/2 F/m, its kinetic energy and
 * its step counts. */
static void vv_post_system(double *v, const double *f, const mdf_atom_info *atoms, mdf_sys_info *si,
                           mdf_sys_result *res, double dt)
{
    const int32_t a1 = si->atom_start + si->natoms;
    double ke = 0.0;
    for (int32_t a = si->atom_start; a < a1; a++)
        ke += mdf_vv_post_atom(v + 3 * a, f + 3 * a, atoms[a].mass, atoms[a].inv_mass, dt);
    res->kinetic = ke;
    si->step++;
    si->stage_step++;
}

/* buffers: pos RW, vel RW, force R, atoms R, sys R */
void mdf_vv_pre_cpu(void *buffers[], void *cl_arg)
{
    const mdf_vv_args *args = (const mdf_vv_args *)cl_arg;
    double *x = (double *)STARPU_VECTOR_GET_PTR(buffers[0]);
    double *v = (double *)STARPU_VECTOR_GET_PTR(buffers[1]);
    const double *f = (const double *)STARPU_VECTOR_GET_PTR(buffers[2]);
    const mdf_atom_info *atoms = (const mdf_atom_info *)STARPU_VECTOR_GET_PTR(buffers[3]);
    const mdf_sys_info *sys = (const mdf_sys_info *)STARPU_VECTOR_GET_PTR(buffers[4]);
    for (int32_t s = 0; s < args->nsys; s++)
        if (sys[s].status == args->status) vv_pre_system(x, v, f, atoms, &sys[s], args->dt);
}

/* buffers: vel RW, force R, atoms R, sys RW, res RW */
void mdf_vv_post_cpu(void *buffers[], void *cl_arg)
{
    const mdf_vv_args *args = (const mdf_vv_args *)cl_arg;
    double *v = (double *)STARPU_VECTOR_GET_PTR(buffers[0]);
    const double *f = (const double *)STARPU_VECTOR_GET_PTR(buffers[1]);
    const mdf_atom_info *atoms = (const mdf_atom_info *)STARPU_VECTOR_GET_PTR(buffers[2]);
    mdf_sys_info *sys = (mdf_sys_info *)STARPU_VECTOR_GET_PTR(buffers[3]);
    mdf_sys_result *res = (mdf_sys_result *)STARPU_VECTOR_GET_PTR(buffers[4]);
    for (int32_t s = 0; s < args->nsys; s++)
        if (sys[s].status == args->status) vv_post_system(v, f, atoms, &sys[s], &res[s], args->dt);
}

/* buffers: pos RW, vel RW, force R, atoms R, sys RW, res RW: mdf_vv_post_cpu,
 * then mdf_vv_pre_cpu, system by system (a system's atoms are no one
 * else's, so the order of the per-atom arithmetic is the two tasks'). */
void mdf_vv_post_pre_cpu(void *buffers[], void *cl_arg)
{
    const mdf_vv_args *args = (const mdf_vv_args *)cl_arg;
    double *x = (double *)STARPU_VECTOR_GET_PTR(buffers[0]);
    double *v = (double *)STARPU_VECTOR_GET_PTR(buffers[1]);
    const double *f = (const double *)STARPU_VECTOR_GET_PTR(buffers[2]);
    const mdf_atom_info *atoms = (const mdf_atom_info *)STARPU_VECTOR_GET_PTR(buffers[3]);
    mdf_sys_info *sys = (mdf_sys_info *)STARPU_VECTOR_GET_PTR(buffers[4]);
    mdf_sys_result *res = (mdf_sys_result *)STARPU_VECTOR_GET_PTR(buffers[5]);
    for (int32_t s = 0; s < args->nsys; s++) {
        if (sys[s].status != args->status) continue;
        vv_post_system(v, f, atoms, &sys[s], &res[s], args->dt);
        vv_pre_system(x, v, f, atoms, &sys[s], args->dt);
    }
}
