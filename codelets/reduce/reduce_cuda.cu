/* mdflow — summing chunk outputs, CUDA implementation.
 *
 * Same semantics and the same order of additions as the CPU: every force
 * component and every system starts from zero and receives its chunks'
 * parts in chunk order, so the sums are bitwise those of mdf_reduce_cpu.
 * A chunk's forces are added over the range its task marked as written
 * (mdf_part_range: its touch range after a CPU, its own atoms after a GPU);
 * the marks are in device memory, so the kernel reads them.
 * The parts' device pointers travel to the kernels by value (about 2 KB,
 * well within the kernel parameter limit). */
#include <starpu.h>
#include "../common/mdf_cuda_util.cuh"
#include "reduce_kernel.h"
#include "reduce_codelet.h"

#define MDF_RED_BLOCK 256

typedef struct reduce_parts {
    const double *f[MDF_REDUCE_MAX_CHUNKS];
    const mdf_sys_result *r[MDF_REDUCE_MAX_CHUNKS];
    int32_t atom_begin[MDF_REDUCE_MAX_CHUNKS], atom_end[MDF_REDUCE_MAX_CHUNKS];
    int32_t touch_begin[MDF_REDUCE_MAX_CHUNKS], touch_end[MDF_REDUCE_MAX_CHUNKS];
    int32_t sys_begin[MDF_REDUCE_MAX_CHUNKS], sys_end[MDF_REDUCE_MAX_CHUNKS];
    int32_t nchunks;
} reduce_parts;

static_assert(MDF_RED_BLOCK >= MDF_REDUCE_MAX_CHUNKS, "a thread per chunk reads the marks");

/* One thread per force component of atoms [0, natoms). */
__global__ void __launch_bounds__(MDF_RED_BLOCK)
    reduce_forces_kernel(double *f, int32_t natoms, const reduce_parts parts)
{
    __shared__ int32_t lo[MDF_REDUCE_MAX_CHUNKS], hi[MDF_REDUCE_MAX_CHUNKS];
    const int t = (int)threadIdx.x;
    if (t < parts.nchunks) { /* each chunk's written range, from its mark */
        mdf_chunk ch;
        ch.atom_begin = parts.atom_begin[t];
        ch.atom_end = parts.atom_end[t];
        ch.sys_begin = parts.sys_begin[t];
        ch.sys_end = parts.sys_end[t];
        ch.touch_begin = parts.touch_begin[t];
        ch.touch_end = parts.touch_end[t];
        ch.index = t;
        mdf_part_range(&ch, parts.r[t], &lo[t], &hi[t]);
    }
    __syncthreads(); /* every thread: no return above */
    int64_t k = (int64_t)blockIdx.x * blockDim.x + t;
    if (k >= 3 * (int64_t)natoms) return;
    int32_t a = (int32_t)(k / 3);
    double sum = 0.0;
    for (int c = 0; c < parts.nchunks; c++)
        if (a >= lo[c] && a < hi[c]) sum += parts.f[c][k];
    f[k] = sum;
}

/* One thread per system of [0, nsys): energy, and the virial when asked
 * (else it keeps its value); the kinetic energy is kept. */
__global__ void reduce_results_kernel(mdf_sys_result *res, int32_t nsys, int32_t want_virial,
                                      const reduce_parts parts)
{
    int32_t s = (int32_t)(blockIdx.x * blockDim.x + threadIdx.x);
    if (s >= nsys) return;
    double e = 0.0, w[9] = {0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0};
    int32_t fresh = res[s].virial_fresh;
    for (int c = 0; c < parts.nchunks; c++) {
        if (s < parts.sys_begin[c] || s >= parts.sys_end[c]) continue;
        const mdf_sys_result *rp = &parts.r[c][s];
        e += rp->energy;
        fresh = rp->virial_fresh; /* every part of a system saw the same evaluation */
        if (want_virial)
            for (int k = 0; k < 9; k++) w[k] += rp->virial[k];
    }
    res[s].energy = e;
    res[s].virial_fresh = fresh;
    if (want_virial)
        for (int k = 0; k < 9; k++) res[s].virial[k] = w[k];
}

/* buffers: force parts[K] R, result parts[K] R, forces W, results RW */
extern "C" void mdf_reduce_cuda(void *buffers[], void *cl_arg)
{
    const mdf_reduce_args *args = (const mdf_reduce_args *)cl_arg;
    cudaStream_t stream = starpu_cuda_get_local_stream();
    int K = args->nchunks;
    reduce_parts parts;
    parts.nchunks = K;
    for (int c = 0; c < K; c++) {
        parts.f[c] = (const double *)STARPU_VECTOR_GET_PTR(buffers[c]);
        parts.r[c] = (const mdf_sys_result *)STARPU_VECTOR_GET_PTR(buffers[K + c]);
        parts.atom_begin[c] = args->chunks[c].atom_begin;
        parts.atom_end[c] = args->chunks[c].atom_end;
        parts.touch_begin[c] = args->chunks[c].touch_begin;
        parts.touch_end[c] = args->chunks[c].touch_end;
        parts.sys_begin[c] = args->chunks[c].sys_begin;
        parts.sys_end[c] = args->chunks[c].sys_end;
    }
    for (int c = K; c < MDF_REDUCE_MAX_CHUNKS; c++) {
        parts.f[c] = NULL;
        parts.r[c] = NULL;
        parts.atom_begin[c] = parts.atom_end[c] = 0;
        parts.touch_begin[c] = parts.touch_end[c] = parts.sys_begin[c] = parts.sys_end[c] = 0;
    }
    double *f = (double *)STARPU_VECTOR_GET_PTR(buffers[2 * K]);
    mdf_sys_result *res = (mdf_sys_result *)STARPU_VECTOR_GET_PTR(buffers[2 * K + 1]);
    int64_t ncomp = 3 * (int64_t)args->natoms;
    if (ncomp > 0) {
        reduce_forces_kernel<<<(unsigned)((ncomp + MDF_RED_BLOCK - 1) / MDF_RED_BLOCK), MDF_RED_BLOCK, 0, stream>>>(
            f, args->natoms, parts);
        mdf_cuda_try(cudaGetLastError());
    }
    /* The forces are write-only here: the device copy beyond the shard's
     * atoms (room for refills) would otherwise hold whatever the allocation
     * held; the CPU leaves the host's values there, zero from creation. */
    size_t nx = STARPU_VECTOR_GET_NX(buffers[2 * K]);
    if (nx > (size_t)ncomp)
        mdf_cuda_try(cudaMemsetAsync(f + ncomp, 0, sizeof(double) * (nx - (size_t)ncomp), stream));
    if (args->nsys > 0) {
        reduce_results_kernel<<<(args->nsys + MDF_RED_BLOCK - 1) / MDF_RED_BLOCK, MDF_RED_BLOCK, 0, stream>>>(
            res, args->nsys, args->want_virial ? 1 : 0, parts);
        mdf_cuda_try(cudaGetLastError());
    }
}
