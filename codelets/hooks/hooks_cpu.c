/* mdflow — built-in hook kernels, CPU implementations (arithmetic from
 * hooks_kernel.h). */
#include "hooks_codelet.h"

#define VEC(k, type) ((type)STARPU_VECTOR_GET_PTR(buffers[k]))

void mdf_hook_nan_check_cpu(void *buffers[], void *cl_arg)
{
    const mdf_hooks_args *a = (const mdf_hooks_args *)cl_arg;
    const double *x = VEC(0, const double *), *v = VEC(1, const double *), *f = VEC(2, const double *);
    mdf_sys_info *sys = VEC(3, mdf_sys_info *);
    const mdf_sys_result *res = VEC(4, const mdf_sys_result *);
    for (int32_t s = 0; s < a->nsys; s++) {
        if (sys[s].status != a->status) continue;
        int32_t found = 0, a1 = sys[s].atom_start + sys[s].natoms;
        for (int32_t i = sys[s].atom_start; i < a1; i++)
            found |= mdf_hooks_atom_nonfinite(x + 3 * i, v + 3 * i, f + 3 * i);
        mdf_hooks_nan_finish(&sys[s], &res[s], found, a->action);
    }
}

void mdf_hook_force_clamp_cpu(void *buffers[], void *cl_arg)
{
    const mdf_hooks_args *a = (const mdf_hooks_args *)cl_arg;
    double *f = VEC(0, double *);
    const mdf_sys_info *sys = VEC(1, const mdf_sys_info *);
    for (int32_t s = 0; s < a->nsys; s++) {
        if (sys[s].status != a->status) continue;
        int32_t a1 = sys[s].atom_start + sys[s].natoms;
        for (int32_t i = sys[s].atom_start; i < a1; i++) mdf_hooks_clamp_force(f + 3 * i, a->max_force);
    }
}

void mdf_hook_freeze_cpu(void *buffers[], void *cl_arg)
{
    const mdf_hooks_args *a = (const mdf_hooks_args *)cl_arg;
    double *f = VEC(0, double *), *v = VEC(1, double *);
    const mdf_atom_info *atoms = VEC(2, const mdf_atom_info *);
    const mdf_sys_info *sys = VEC(3, const mdf_sys_info *);
    for (int32_t s = 0; s < a->nsys; s++) {
        if (sys[s].status != a->status) continue;
        int32_t a1 = sys[s].atom_start + sys[s].natoms;
        for (int32_t i = sys[s].atom_start; i < a1; i++) mdf_hooks_freeze_atom(f + 3 * i, v + 3 * i, atoms[i].flags);
    }
}

void mdf_hook_wrap_cpu(void *buffers[], void *cl_arg)
{
    const mdf_hooks_args *a = (const mdf_hooks_args *)cl_arg;
    double *x = VEC(0, double *);
    const mdf_sys_info *sys = VEC(1, const mdf_sys_info *);
    for (int32_t s = 0; s < a->nsys; s++) {
        if (sys[s].status != a->status || !(sys[s].pbc[0] || sys[s].pbc[1] || sys[s].pbc[2])) continue;
        int32_t a1 = sys[s].atom_start + sys[s].natoms;
        for (int32_t i = sys[s].atom_start; i < a1; i++) mdf_hooks_wrap_atom(x + 3 * i, &sys[s]);
    }
}
