/* Berendsen thermostat — the CPU codelets: a loop over the shard's systems
 * with the method's status, and over their atoms. */
#include <starpu.h>
#include "berendsen.h"
#include "berendsen_kernel.h"

#define VEC(k) STARPU_VECTOR_GET_PTR(buffers[k])

void berendsen_pre_cpu(void *buffers[], void *cl_arg)
{
    const berendsen_args *a = (const berendsen_args *)cl_arg;
    double *x = (double *)VEC(0), *v = (double *)VEC(1);
    const double *f = (const double *)VEC(2);
    const mdf_atom_info *atoms = (const mdf_atom_info *)VEC(3);
    const mdf_sys_info *sys = (const mdf_sys_info *)VEC(4);
    for (int32_t s = 0; s < a->nsys; s++) {
        if (sys[s].status != a->status) continue;
        for (int32_t at = sys[s].atom_start; at < sys[s].atom_start + sys[s].natoms; at++)
            if (berendsen_moves(&atoms[at]))
                berendsen_kick_drift(x + 3 * (size_t)at, v + 3 * (size_t)at, f + 3 * (size_t)at, atoms[at].inv_mass, a->dt);
    }
}

void berendsen_post_cpu(void *buffers[], void *cl_arg)
{
    const berendsen_args *a = (const berendsen_args *)cl_arg;
    double *v = (double *)VEC(0);
    const double *f = (const double *)VEC(1);
    const mdf_atom_info *atoms = (const mdf_atom_info *)VEC(2);
    mdf_sys_info *sys = (mdf_sys_info *)VEC(3);
    mdf_sys_result *res = (mdf_sys_result *)VEC(4);
    mdf_sys_state *st = (mdf_sys_state *)VEC(5);
    for (int32_t s = 0; s < a->nsys; s++) {
        if (sys[s].status != a->status) continue;
        const int32_t a0 = sys[s].atom_start, a1 = a0 + sys[s].natoms;
        double K = 0.0;
        for (int32_t at = a0; at < a1; at++)
            if (berendsen_moves(&atoms[at]))
                K += berendsen_kick(v + 3 * (size_t)at, f + 3 * (size_t)at, atoms[at].mass, atoms[at].inv_mass, a->dt);
        double lambda = berendsen_finish(&sys[s], &res[s], &st[s], K, a);
        for (int32_t at = a0; at < a1; at++)
            if (berendsen_moves(&atoms[at]))
                for (int k = 0; k < 3; k++) v[3 * (size_t)at + k] *= lambda;
    }
}
