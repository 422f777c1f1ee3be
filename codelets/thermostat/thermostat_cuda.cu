/* mdflow — thermostats and barostat, CUDA implementation: one block per
 * system, reductions through mdf_block_sum (fixed order, so results repeat
 * from run to run; they match the CPU to round-off). Thread 0 does each
 * system's scalar work (chain, Bussi factor, cell) and shares the resulting
 * factor through shared memory. Same arithmetic as the CPU, from
 * thermostat_kernel.h. */
#include <starpu.h>
#include "thermostat_kernel.h"
#include "thermostat_codelet.h"
#include "../common/mdf_cuda_util.cuh"

#define VEC(i) STARPU_VECTOR_GET_PTR(buffers[i])

__device__ static double block_ke(const mdf_sys_info *s, const double *v, const mdf_atom_info *atoms,
                                  double *scratch)
{
    double ke = 0.0;
    int32_t a1 = s->atom_start + s->natoms;
    for (int32_t a = s->atom_start + (int32_t)threadIdx.x; a < a1; a += (int32_t)blockDim.x)
        ke += mdf_thermo_ke(v + 3 * a, atoms[a].mass);
    return mdf_block_sum(ke, scratch);
}

__device__ static void block_scale(const mdf_sys_info *s, double *v, double alpha)
{
    int32_t k1 = 3 * (s->atom_start + s->natoms);
    for (int32_t k = 3 * s->atom_start + (int32_t)threadIdx.x; k < k1; k += (int32_t)blockDim.x) v[k] *= alpha;
}

__device__ static void block_kick_drift(const mdf_sys_info *s, double *x, double *v, const double *f,
                                        const mdf_atom_info *atoms, double dt)
{
    int32_t a1 = s->atom_start + s->natoms;
    for (int32_t a = s->atom_start + (int32_t)threadIdx.x; a < a1; a += (int32_t)blockDim.x)
        mdf_thermo_kick_drift(x + 3 * a, v + 3 * a, f + 3 * a, atoms[a].inv_mass, dt);
}

__global__ void langevin_pre_kernel(double *x, double *v, const double *f, const mdf_atom_info *atoms,
                                    const mdf_sys_info *sys, mdf_sys_result *res, mdf_sys_state *st,
                                    mdf_thermo_args a)
{
    __shared__ double scratch[MDF_SYS_BLOCK];
    const mdf_sys_info *s = &sys[blockIdx.x];
    if (s->status != a.status) return; /* uniform across the block */
    uint64_t key = mdf_velocity_key(a.seed, s->id);
    double dk = 0.0;
    for (int32_t i = (int32_t)threadIdx.x; i < s->natoms; i += (int32_t)blockDim.x) {
        int32_t at = s->atom_start + i;
        dk += mdf_baoab_pre_atom(x + 3 * at, v + 3 * at, f + 3 * at, atoms[at].mass, atoms[at].inv_mass,
                                 atoms[at].flags, &a, key, s->step, (uint32_t)i);
    }
    dk = mdf_block_sum(dk, scratch);
    if (threadIdx.x == 0) {
        mdf_sys_result *r = &res[blockIdx.x];
        if (st[blockIdx.x].owner != MDF_THERMO_OWNER(MDF_THERMO_LANGEVIN)) {
            r->extra_energy = 0.0;
            st[blockIdx.x].owner = MDF_THERMO_OWNER(MDF_THERMO_LANGEVIN);
        }
        r->extra_energy -= dk;
    }
}

__global__ void nhc_pre_kernel(double *x, double *v, const double *f, const mdf_atom_info *atoms,
                               const mdf_sys_info *sys, mdf_sys_state *st, mdf_thermo_args a)
{
    __shared__ double scratch[MDF_SYS_BLOCK];
    __shared__ double factor;
    const mdf_sys_info *s = &sys[blockIdx.x];
    if (s->status != a.status) return;
    double k2 = 2.0 * block_ke(s, v, atoms, scratch);
    if (threadIdx.x == 0) {
        mdf_sys_state *b = &st[blockIdx.x];
        if (b->owner != MDF_THERMO_OWNER(MDF_THERMO_NHC)) {
            for (int k = 0; k < MDF_STATE_DOUBLES; k++) b->d[k] = 0.0;
            b->owner = MDF_THERMO_OWNER(MDF_THERMO_NHC);
        }
        factor = mdf_nhc_half(b->d + MDF_NHC_ETA, b->d + MDF_NHC_ETA_DOT, a.chain, k2, mdf_dof(s->natoms), a.kT,
                              a.tau, a.dt);
    }
    __syncthreads();
    block_scale(s, v, factor);
    __syncthreads();
    block_kick_drift(s, x, v, f, atoms, a.dt);
}

__global__ void npt_pre_kernel(double *x, double *v, const double *f, const mdf_atom_info *atoms,
                               mdf_sys_info *sys, mdf_sys_result *res, mdf_sys_state *st, mdf_thermo_args a)
{
    __shared__ double scratch[MDF_SYS_BLOCK];
    __shared__ double mu;
    mdf_sys_info *s = &sys[blockIdx.x];
    if (s->status != a.status) return;
    double K = block_ke(s, v, atoms, scratch);
    if (threadIdx.x == 0) {
        mdf_sys_state *b = &st[blockIdx.x];
        mdf_sys_result *r = &res[blockIdx.x];
        if (b->owner != MDF_THERMO_OWNER(MDF_THERMO_NPT)) {
            b->d[MDF_NPT_ACC] = 0.0;
            b->owner = MDF_THERMO_OWNER(MDF_THERMO_NPT);
        }
        mu = 1.0;
        double V = mdf_npt_volume(s);
        if (V > 0.0) {
            double trw = mdf_trace3(r->virial);
            double p = (2.0 * K + trw) / (3.0 * V);
            double de = mdf_npt_deps(p, V, mdf_npt_noise(mdf_velocity_key(a.seed, s->id), s->step), &a);
            mu = exp(de / 3.0);
            mdf_npt_scale_cell(s, mu);
            b->d[MDF_NPT_ACC] -= K / (mu * mu) - K - trw * de / 3.0;
            V = mdf_npt_volume(s);
        }
        r->extra_energy = a.p0 * V + b->d[MDF_NPT_ACC];
    }
    __syncthreads();
    int32_t k0 = 3 * s->atom_start, k1 = 3 * (s->atom_start + s->natoms);
    for (int32_t k = k0 + (int32_t)threadIdx.x; k < k1; k += (int32_t)blockDim.x) {
        x[k] *= mu;
        v[k] /= mu;
    }
    __syncthreads();
    block_kick_drift(s, x, v, f, atoms, a.dt);
}

__global__ void thermo_post_kernel(double *v, const double *f, const mdf_atom_info *atoms, mdf_sys_info *sys,
                                   mdf_sys_result *res, mdf_sys_state *st, mdf_thermo_args a)
{
    __shared__ double scratch[MDF_SYS_BLOCK];
    __shared__ double factor;
    mdf_sys_info *s = &sys[blockIdx.x];
    if (s->status != a.status) return;
    double K = 0.0;
    int32_t a1 = s->atom_start + s->natoms;
    for (int32_t at = s->atom_start + (int32_t)threadIdx.x; at < a1; at += (int32_t)blockDim.x)
        K += mdf_thermo_kick(v + 3 * at, f + 3 * at, atoms[at].mass, atoms[at].inv_mass, a.dt);
    K = mdf_block_sum(K, scratch);
    double nf = mdf_dof(s->natoms);
    mdf_sys_state *b = &st[blockIdx.x];
    mdf_sys_result *r = &res[blockIdx.x];
    if (a.kind == MDF_THERMO_BUSSI || a.kind == MDF_THERMO_NPT) {
        uint64_t key = mdf_velocity_key(a.seed, s->id);
        double r1 = 0.0, sum2 = 0.0;
        uint32_t nd = mdf_bussi_ndraws(nf);
        for (uint32_t d = threadIdx.x; d < nd; d += blockDim.x) mdf_bussi_draw(key, s->step, d, nf, &r1, &sum2);
        sum2 = mdf_block_sum(sum2, scratch);
        if (threadIdx.x == 0) {
            double knew;
            factor = mdf_bussi_alpha(K, 0.5 * nf * a.kT, nf, a.c1, r1, sum2, &knew);
            if (a.kind == MDF_THERMO_BUSSI) {
                if (b->owner != MDF_THERMO_OWNER(MDF_THERMO_BUSSI)) {
                    r->extra_energy = 0.0;
                    b->owner = MDF_THERMO_OWNER(MDF_THERMO_BUSSI);
                }
                r->extra_energy -= knew - K;
            } else {
                b->d[MDF_NPT_ACC] -= knew - K;
                r->extra_energy = a.p0 * mdf_npt_volume(s) + b->d[MDF_NPT_ACC];
            }
            r->kinetic = knew;
        }
    } else if (a.kind == MDF_THERMO_NHC) {
        if (threadIdx.x == 0) {
            double *eta = b->d + MDF_NHC_ETA, *eta_dot = b->d + MDF_NHC_ETA_DOT;
            factor = mdf_nhc_half(eta, eta_dot, a.chain, 2.0 * K, nf, a.kT, a.tau, a.dt);
            r->extra_energy = mdf_nhc_energy(eta, eta_dot, a.chain, nf, a.kT, a.tau);
            r->kinetic = K * factor * factor;
        }
    } else if (threadIdx.x == 0) {
        factor = 1.0;
        r->kinetic = K;
    }
    __syncthreads();
    if (a.kind != MDF_THERMO_LANGEVIN) block_scale(s, v, factor);
    if (threadIdx.x == 0) {
        s->step++;
        s->stage_step++;
    }
}

extern "C" void mdf_langevin_pre_cuda(void *buffers[], void *cl_arg)
{
    const mdf_thermo_args *a = (const mdf_thermo_args *)cl_arg;
    if (a->nsys == 0) return;
    langevin_pre_kernel<<<a->nsys, MDF_SYS_BLOCK, 0, starpu_cuda_get_local_stream()>>>(
        (double *)VEC(0), (double *)VEC(1), (const double *)VEC(2), (const mdf_atom_info *)VEC(3),
        (const mdf_sys_info *)VEC(4), (mdf_sys_result *)VEC(5), (mdf_sys_state *)VEC(6), *a);
    mdf_cuda_check_launch();
}

extern "C" void mdf_nhc_pre_cuda(void *buffers[], void *cl_arg)
{
    const mdf_thermo_args *a = (const mdf_thermo_args *)cl_arg;
    if (a->nsys == 0) return;
    nhc_pre_kernel<<<a->nsys, MDF_SYS_BLOCK, 0, starpu_cuda_get_local_stream()>>>(
        (double *)VEC(0), (double *)VEC(1), (const double *)VEC(2), (const mdf_atom_info *)VEC(3),
        (const mdf_sys_info *)VEC(4), (mdf_sys_state *)VEC(5), *a);
    mdf_cuda_check_launch();
}

extern "C" void mdf_npt_pre_cuda(void *buffers[], void *cl_arg)
{
    const mdf_thermo_args *a = (const mdf_thermo_args *)cl_arg;
    if (a->nsys == 0) return;
    npt_pre_kernel<<<a->nsys, MDF_SYS_BLOCK, 0, starpu_cuda_get_local_stream()>>>(
        (double *)VEC(0), (double *)VEC(1), (const double *)VEC(2), (const mdf_atom_info *)VEC(3),
        (mdf_sys_info *)VEC(4), (mdf_sys_result *)VEC(5), (mdf_sys_state *)VEC(6), *a);
    mdf_cuda_check_launch();
}

extern "C" void mdf_thermo_post_cuda(void *buffers[], void *cl_arg)
{
    const mdf_thermo_args *a = (const mdf_thermo_args *)cl_arg;
    if (a->nsys == 0) return;
    thermo_post_kernel<<<a->nsys, MDF_SYS_BLOCK, 0, starpu_cuda_get_local_stream()>>>(
        (double *)VEC(0), (const double *)VEC(1), (const mdf_atom_info *)VEC(2), (mdf_sys_info *)VEC(3),
        (mdf_sys_result *)VEC(4), (mdf_sys_state *)VEC(5), *a);
    mdf_cuda_check_launch();
}
