/* mdflow — variable-cell FIRE and L-BFGS, CUDA implementation: one thread
 * per system runs cell_kernel.h's whole step for it (the same code as the
 * CPU's, so the same operations in the same order). Systems are
 * independent (each writes only its own atoms, workspace rows and state),
 * so there is no race; a large system is, however, walked by one thread:
 * fine for the crystals a cell relaxation usually sees, slow for systems of
 * many thousands of atoms (the fixed-cell optimisers spread a system over
 * blocks, optim_cuda.cu). */
#include <starpu.h>
#include "optim_codelet.h"
#include "../common/mdf_cuda_util.cuh"

#define VEC(i) STARPU_VECTOR_GET_PTR(buffers[i])
#define CELL_THREADS 64

__global__ void cell_fire_kernel(double *x, double *v, const double *f, mdf_sys_info *sys, mdf_sys_result *res,
                                 mdf_sys_state *state, mdf_cell_fire_args p)
{
    const int32_t s = (int32_t)(blockIdx.x * blockDim.x + threadIdx.x);
    if (s >= p.nsys || sys[s].status != p.status) return;
    mdf_cell_fire_system(x, v, f, &sys[s], &res[s], &state[s], &p);
}

__global__ void cell_lbfgs_kernel(double *x, const double *f, mdf_sys_info *sys, mdf_sys_result *res,
                                  mdf_sys_state *state, double *w, mdf_cell_lbfgs_args p)
{
    const int32_t s = (int32_t)(blockIdx.x * blockDim.x + threadIdx.x);
    if (s >= p.nsys || sys[s].status != p.status) return;
    mdf_cell_lbfgs_system(x, f, &sys[s], &res[s], &state[s], w, s, &p);
}

static unsigned cell_grid(int32_t nsys) { return (unsigned)((nsys + CELL_THREADS - 1) / CELL_THREADS); }

/* buffers: pos RW, vel RW, force R, sys RW, res RW, state RW */
extern "C" void mdf_cell_fire_cuda(void *buffers[], void *cl_arg)
{
    const mdf_cell_fire_args *p = (const mdf_cell_fire_args *)cl_arg;
    if (p->nsys <= 0) return;
    cudaStream_t stream = starpu_cuda_get_local_stream();
    cell_fire_kernel<<<cell_grid(p->nsys), CELL_THREADS, 0, stream>>>(
        (double *)VEC(0), (double *)VEC(1), (const double *)VEC(2), (mdf_sys_info *)VEC(3),
        (mdf_sys_result *)VEC(4), (mdf_sys_state *)VEC(5), *p);
    mdf_cuda_check_launch();
}

/* buffers: pos RW, force R, sys RW, res RW, state RW, work RW */
extern "C" void mdf_cell_lbfgs_cuda(void *buffers[], void *cl_arg)
{
    const mdf_cell_lbfgs_args *p = (const mdf_cell_lbfgs_args *)cl_arg;
    if (p->nsys <= 0) return;
    cudaStream_t stream = starpu_cuda_get_local_stream();
    cell_lbfgs_kernel<<<cell_grid(p->nsys), CELL_THREADS, 0, stream>>>(
        (double *)VEC(0), (const double *)VEC(1), (mdf_sys_info *)VEC(2), (mdf_sys_result *)VEC(3),
        (mdf_sys_state *)VEC(4), (double *)VEC(5), *p);
    mdf_cuda_check_launch();
}
