/* mdflow — Maxwell–Boltzmann velocities and kinetic energies, CPU. */
#include <math.h>
#include <starpu.h>
#include "velocity_codelet.h"

static double system_kinetic(const double *v, const mdf_atom_info *atoms, const mdf_sys_info *s)
{
    double ke = 0.0;
    for (int32_t a = s->atom_start; a < s->atom_start + s->natoms; a++)
        ke += 0.5 * atoms[a].mass * (v[3 * a] * v[3 * a] + v[3 * a + 1] * v[3 * a + 1] + v[3 * a + 2] * v[3 * a + 2]);
    return ke;
}

/* buffers: vel RW, atoms R, sys R, res RW */
void mdf_velocity_cpu(void *buffers[], void *cl_arg)
{
    const mdf_velocity_args *args = (const mdf_velocity_args *)cl_arg;
    double *v = (double *)STARPU_VECTOR_GET_PTR(buffers[0]);
    const mdf_atom_info *atoms = (const mdf_atom_info *)STARPU_VECTOR_GET_PTR(buffers[1]);
    const mdf_sys_info *sys = (const mdf_sys_info *)STARPU_VECTOR_GET_PTR(buffers[2]);
    mdf_sys_result *res = (mdf_sys_result *)STARPU_VECTOR_GET_PTR(buffers[3]);
    for (int32_t s = 0; s < args->nsys; s++) {
        const mdf_sys_info *si = &sys[s];
        if (!mdf_velocity_wanted(si, args->status, args->entering_only)) continue;
        uint64_t key = mdf_velocity_key(args->seed, si->id);
        double p[3] = {0.0, 0.0, 0.0}, mtot = 0.0;
        for (int32_t a = si->atom_start; a < si->atom_start + si->natoms; a++) {
            /* keyed by the input index: the same velocities whatever the storage order */
            mdf_velocity_draw(key, atoms[a].index, mdf_velocity_sd(&atoms[a], args->kT), args->dist, v + 3 * a);
            for (int k = 0; k < 3; k++) p[k] += atoms[a].mass * v[3 * a + k];
            mtot += atoms[a].mass;
        }
        if (mdf_velocity_removes_momentum(si))
            for (int32_t a = si->atom_start; a < si->atom_start + si->natoms; a++)
                for (int k = 0; k < 3; k++) v[3 * a + k] -= p[k] / mtot;
        res[s].kinetic = system_kinetic(v, atoms, si);
    }
}

/* buffers: vel R, atoms R, sys R, res RW */
void mdf_kinetic_cpu(void *buffers[], void *cl_arg)
{
    const mdf_kinetic_args *args = (const mdf_kinetic_args *)cl_arg;
    const double *v = (const double *)STARPU_VECTOR_GET_PTR(buffers[0]);
    const mdf_atom_info *atoms = (const mdf_atom_info *)STARPU_VECTOR_GET_PTR(buffers[1]);
    const mdf_sys_info *sys = (const mdf_sys_info *)STARPU_VECTOR_GET_PTR(buffers[2]);
    mdf_sys_result *res = (mdf_sys_result *)STARPU_VECTOR_GET_PTR(buffers[3]);
    for (int32_t s = 0; s < args->nsys; s++) res[s].kinetic = system_kinetic(v, atoms, &sys[s]);
}
