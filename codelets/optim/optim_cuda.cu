/* mdflow — the optimisers, CUDA implementation: one block per system, each
 * thread owning the atoms atom_start + threadIdx.x + k·blockDim.x in every
 * phase (so per-atom data needs no synchronisation), reductions through
 * mdf_block_sum/max (fixed order: results repeat from run to run). The
 * arithmetic is optim_kernel.h's, as on the CPU.
 *
 * Every thread reads the system's state before the first reduction; thread
 * 0 writes it back after the last one, so no thread can read a half-updated
 * block. */
#include <starpu.h>
#include "optim_kernel.h"
#include "optim_codelet.h"
#include "../common/mdf_cuda_util.cuh"

#define VEC(i) STARPU_VECTOR_GET_PTR(buffers[i])

__global__ void fire_kernel(double *x, double *v, const double *f, mdf_sys_info *sys, mdf_sys_result *res,
                            mdf_sys_state *state, mdf_fire_args p)
{
    __shared__ double scratch[MDF_SYS_BLOCK];
    const int32_t s = (int32_t)blockIdx.x;
    if (sys[s].status != p.status) return; /* uniform across the block */
    const int32_t a0 = sys[s].atom_start, a1 = a0 + sys[s].natoms;
    const int32_t t = (int32_t)threadIdx.x, nt = (int32_t)blockDim.x;
    mdf_fire_vars fv = mdf_fire_load(&state[s], &p);
    if (!fv.fresh) {
        double vf = 0.0, ff = 0.0, vv = 0.0;
        for (int32_t a = a0 + t; a < a1; a += nt) {
            vf += mdf_optim_dot3(f + 3 * a, v + 3 * a);
            ff += mdf_optim_dot3(f + 3 * a, f + 3 * a);
            vv += mdf_optim_dot3(v + 3 * a, v + 3 * a);
        }
        vf = mdf_block_sum(vf, scratch);
        ff = mdf_block_sum(ff, scratch);
        vv = mdf_block_sum(vv, scratch);
        mdf_fire_decide(&fv, &p, vf, ff, vv);
    }
    double dr2 = 0.0;
    for (int32_t a = a0 + t; a < a1; a += nt) dr2 += mdf_fire_atom_velocity(v + 3 * a, f + 3 * a, &fv);
    double normdr = sqrt(mdf_block_sum(dr2, scratch));
    for (int32_t a = a0 + t; a < a1; a += nt) mdf_fire_atom_move(x + 3 * a, v + 3 * a, &fv, normdr, p.maxstep);
    if (t == 0) {
        mdf_fire_store(&state[s], &fv);
        mdf_optim_bookkeeping(&sys[s], &res[s]);
    }
}

__global__ void fire2_kernel(double *x, double *v, const double *f, mdf_sys_info *sys, mdf_sys_result *res,
                             mdf_sys_state *state, mdf_fire2_args p)
{
    __shared__ double scratch[MDF_SYS_BLOCK];
    const int32_t s = (int32_t)blockIdx.x;
    if (sys[s].status != p.status) return;
    const int32_t a0 = sys[s].atom_start, a1 = a0 + sys[s].natoms;
    const int32_t t = (int32_t)threadIdx.x, nt = (int32_t)blockDim.x;
    mdf_fire2_vars fv = mdf_fire2_load(&state[s], &p);
    double P = 0.0, vmax2 = 0.0;
    for (int32_t a = a0 + t; a < a1; a += nt) {
        if (fv.fresh)
            for (int k = 0; k < 3; k++) v[3 * a + k] = 0.0;
        P += mdf_optim_dot3(f + 3 * a, v + 3 * a);
        vmax2 = fmax(vmax2, mdf_optim_dot3(v + 3 * a, v + 3 * a));
    }
    P = mdf_block_sum(P, scratch);
    vmax2 = mdf_block_max(vmax2, scratch);
    mdf_fire2_decide(&fv, &p, P, vmax2);
    double vv = 0.0, ff = 0.0;
    for (int32_t a = a0 + t; a < a1; a += nt) mdf_fire2_atom_kick(x + 3 * a, v + 3 * a, f + 3 * a, &fv, &vv, &ff);
    vv = mdf_block_sum(vv, scratch);
    ff = mdf_block_sum(ff, scratch);
    mdf_fire2_mixing(&fv, vv, ff);
    double dmax2 = 0.0;
    for (int32_t a = a0 + t; a < a1; a += nt) dmax2 = fmax(dmax2, mdf_fire2_atom_mix(v + 3 * a, f + 3 * a, &fv));
    dmax2 = mdf_block_max(dmax2, scratch);
    for (int32_t a = a0 + t; a < a1; a += nt) mdf_fire2_atom_move(x + 3 * a, v + 3 * a, &fv, dmax2, p.maxstep);
    if (t == 0) {
        mdf_fire2_store(&state[s], &fv);
        mdf_optim_bookkeeping(&sys[s], &res[s]);
    }
}

__global__ void gd_kernel(double *x, const double *f, mdf_sys_info *sys, mdf_sys_result *res, mdf_gd_args p)
{
    __shared__ double scratch[MDF_SYS_BLOCK];
    const int32_t s = (int32_t)blockIdx.x;
    if (sys[s].status != p.status) return;
    const int32_t a0 = sys[s].atom_start, a1 = a0 + sys[s].natoms;
    const int32_t t = (int32_t)threadIdx.x, nt = (int32_t)blockDim.x;
    double dmax2 = 0.0;
    for (int32_t a = a0 + t; a < a1; a += nt) dmax2 = fmax(dmax2, mdf_gd_atom_len2(f + 3 * a, &p));
    dmax2 = mdf_block_max(dmax2, scratch);
    for (int32_t a = a0 + t; a < a1; a += nt) mdf_gd_atom_move(x + 3 * a, f + 3 * a, &p, dmax2);
    if (t == 0) mdf_optim_bookkeeping(&sys[s], &res[s]);
}

__global__ void lbfgs_kernel(double *x, const double *f, mdf_sys_info *sys, mdf_sys_result *res,
                             mdf_sys_state *state, double *w, mdf_lbfgs_args p)
{
    __shared__ double scratch[MDF_SYS_BLOCK];
    const int32_t s = (int32_t)blockIdx.x;
    if (sys[s].status != p.status) return;
    const int32_t a0 = sys[s].atom_start, a1 = a0 + sys[s].natoms;
    const int32_t t = (int32_t)threadIdx.x, nt = (int32_t)blockDim.x;
    const mdf_lbfgs_layout l = mdf_lbfgs_layout_of(p.memory, p.atom_cap, p.sys_cap);
    const int64_t m = p.memory;
    double *r0 = w + l.r0, *f0 = w + l.f0, *q = w + l.q;
    double *rho = w + l.rho + (int64_t)s * m, *coef = w + l.coef + (int64_t)s * m;
    const int64_t it = (state[s].owner == 0 || w[l.mark + s] == 0.0) ? 0 : state[s].n[0];
    if (it > 0 && m > 0) {
        const int64_t slot = (it - 1) % m;
        double *sv = w + l.s + slot * l.slot, *yv = w + l.y + slot * l.slot;
        double ys = 0.0;
        for (int32_t a = a0 + t; a < a1; a += nt)
            ys += mdf_lbfgs_atom_pair(sv + 3 * a, yv + 3 * a, x + 3 * a, r0 + 3 * a, f + 3 * a, f0 + 3 * a);
        ys = mdf_block_sum(ys, scratch);
        if (t == 0) rho[slot] = mdf_lbfgs_rho(ys);
        __syncthreads(); /* rho[slot] is read by every thread below */
    }
    const int64_t len = it < m ? it : m;
    for (int32_t a = a0 + t; a < a1; a += nt)
        for (int k = 0; k < 3; k++) q[3 * a + k] = -f[3 * a + k];
    for (int64_t i = len - 1; i >= 0; i--) {
        const int64_t slot = mdf_lbfgs_slot(it, len, i, m);
        const double *sv = w + l.s + slot * l.slot, *yv = w + l.y + slot * l.slot;
        double dot = 0.0;
        for (int32_t a = a0 + t; a < a1; a += nt) dot += mdf_optim_dot3(sv + 3 * a, q + 3 * a);
        const double ai = rho[slot] * mdf_block_sum(dot, scratch);
        if (t == 0) coef[i] = ai;
        for (int32_t a = a0 + t; a < a1; a += nt) mdf_lbfgs_atom_down(q + 3 * a, yv + 3 * a, ai);
    }
    __syncthreads(); /* coef[] is read by every thread below */
    const double H0 = 1.0 / p.alpha;
    for (int32_t a = a0 + t; a < a1; a += nt)
        for (int k = 0; k < 3; k++) q[3 * a + k] = H0 * q[3 * a + k];
    for (int64_t i = 0; i < len; i++) {
        const int64_t slot = mdf_lbfgs_slot(it, len, i, m);
        const double *sv = w + l.s + slot * l.slot, *yv = w + l.y + slot * l.slot;
        double dot = 0.0;
        for (int32_t a = a0 + t; a < a1; a += nt) dot += mdf_optim_dot3(yv + 3 * a, q + 3 * a);
        const double b = rho[slot] * mdf_block_sum(dot, scratch);
        for (int32_t a = a0 + t; a < a1; a += nt) mdf_lbfgs_atom_up(q + 3 * a, sv + 3 * a, coef[i], b);
    }
    double longest2 = 0.0;
    for (int32_t a = a0 + t; a < a1; a += nt) longest2 = fmax(longest2, mdf_lbfgs_atom_len2(q + 3 * a));
    longest2 = mdf_block_max(longest2, scratch);
    for (int32_t a = a0 + t; a < a1; a += nt)
        mdf_lbfgs_atom_move(x + 3 * a, r0 + 3 * a, f0 + 3 * a, f + 3 * a, q + 3 * a, &p, longest2);
    if (t == 0) {
        state[s].n[0] = it + 1;
        state[s].owner = 1;
        w[l.mark + s] = 1.0;
        mdf_optim_bookkeeping(&sys[s], &res[s]);
    }
}

extern "C" void mdf_fire_cuda(void *buffers[], void *cl_arg)
{
    const mdf_fire_args *p = (const mdf_fire_args *)cl_arg;
    if (p->nsys == 0) return;
    fire_kernel<<<p->nsys, MDF_SYS_BLOCK, 0, starpu_cuda_get_local_stream()>>>(
        (double *)VEC(0), (double *)VEC(1), (const double *)VEC(2), (mdf_sys_info *)VEC(3),
        (mdf_sys_result *)VEC(4), (mdf_sys_state *)VEC(5), *p);
    mdf_cuda_check_launch();
}

extern "C" void mdf_fire2_cuda(void *buffers[], void *cl_arg)
{
    const mdf_fire2_args *p = (const mdf_fire2_args *)cl_arg;
    if (p->nsys == 0) return;
    fire2_kernel<<<p->nsys, MDF_SYS_BLOCK, 0, starpu_cuda_get_local_stream()>>>(
        (double *)VEC(0), (double *)VEC(1), (const double *)VEC(2), (mdf_sys_info *)VEC(3),
        (mdf_sys_result *)VEC(4), (mdf_sys_state *)VEC(5), *p);
    mdf_cuda_check_launch();
}

extern "C" void mdf_gd_cuda(void *buffers[], void *cl_arg)
{
    const mdf_gd_args *p = (const mdf_gd_args *)cl_arg;
    if (p->nsys == 0) return;
    gd_kernel<<<p->nsys, MDF_SYS_BLOCK, 0, starpu_cuda_get_local_stream()>>>(
        (double *)VEC(0), (const double *)VEC(1), (mdf_sys_info *)VEC(2), (mdf_sys_result *)VEC(3), *p);
    mdf_cuda_check_launch();
}

extern "C" void mdf_lbfgs_cuda(void *buffers[], void *cl_arg)
{
    const mdf_lbfgs_args *p = (const mdf_lbfgs_args *)cl_arg;
    if (p->nsys == 0) return;
    lbfgs_kernel<<<p->nsys, MDF_SYS_BLOCK, 0, starpu_cuda_get_local_stream()>>>(
        (double *)VEC(0), (const double *)VEC(1), (mdf_sys_info *)VEC(2), (mdf_sys_result *)VEC(3),
        (mdf_sys_state *)VEC(4), (double *)VEC(5), *p);
    mdf_cuda_check_launch();
}
