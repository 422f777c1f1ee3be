/* mdflow — velocity Verlet, per atom, shared by CPU and CUDA.
 *   pre_update:  v += dt/2 · F/m ;  x += dt · v
 *   post_update: v += dt/2 · F/m   (with the forces at the new positions) */
#ifndef MDF_VERLET_KERNEL_H
#define MDF_VERLET_KERNEL_H

#include "../common/mdf_kernel_common.h"

MDF_HD void mdf_vv_pre_atom(double *x, double *v, const double *f, double inv_mass, double dt)
{
    double h = 0.5 * dt * inv_mass;
    for (int k = 0; k < 3; k++) {
        v[k] += h * f[k];
        x[k] += dt * v[k];
    }
}

/* Returns the atom's kinetic energy after the kick. */
MDF_HD double mdf_vv_post_atom(double *v, const double *f, double mass, double inv_mass, double dt)
{
    double h = 0.5 * dt * inv_mass;
    for (int k = 0; k < 3; k++) v[k] += h * f[k];
    return 0.5 * mass * (v[0] * v[0] + v[1] * v[1] + v[2] * v[2]);
}

/* Arguments every Verlet task carries. */
typedef struct mdf_vv_args {
    int64_t work;          /* atoms of the systems it moves (performance-model key) */
    double dt;             /* internal time units */
    int32_t status;        /* only systems with this status move */
    int32_t nsys;          /* systems in the shard */
    int32_t natoms;        /* atoms in the shard (mdf_method_natoms): a CUDA task's per-atom range;
                            * `work` is the performance model's size only */
    int32_t pad_;
} mdf_vv_args;

#endif
