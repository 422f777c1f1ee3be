/* mdflow — sink codelets, CUDA implementations. Packing: one thread chooses
 * the systems and writes their per-system fields (a shard has at most a few
 * thousand systems), then one block per system copies its atoms. Device
 * appends: the same split, from a staging buffer into the sink's storage,
 * which never leaves the GPU. */
#include <starpu.h>
#include "sink_codelet.h"
#include "../common/mdf_cuda_util.cuh"

#define VEC(k, type) ((type)STARPU_VECTOR_GET_PTR(buffers[k]))

__global__ void pack_systems_kernel(const mdf_sys_info *sys, const mdf_sys_result *res, char *buf, int64_t *cnt,
                                    mdf_pack_args a)
{
    mdf_pack_layout L = mdf_pack_layout_of(a.sys_cap, a.atom_cap);
    int64_t k = 0, na = 0;
    for (int32_t s = 0; s < a.nsys; s++) {
        if (!mdf_pack_selects(&sys[s], &a)) continue;
        mdf_pack_system(buf, &L, k, na, &sys[s], &res[s], s, a.dt_fs);
        na += sys[s].natoms;
        k++;
    }
    mdf_pack_header *h = (mdf_pack_header *)buf;
    h->nsys = k;
    h->natoms = na;
    h->sys_cap = a.sys_cap;
    h->atom_cap = a.atom_cap;
    for (int j = 0; j < MDF_PACK_CNT_N; j++) cnt[j] = 0;
    cnt[MDF_PACK_CNT_NSYS] = k;
    cnt[MDF_PACK_CNT_NATOMS] = na;
    cnt[MDF_PACK_CNT_STEP] = a.step;
}

/* Block b copies the atoms of packed system b (blocks past the packed count return). */
__global__ void pack_atoms_kernel(const double *x, const double *v, const double *f, const mdf_atom_info *atoms,
                                  const mdf_sys_info *sys, char *buf, mdf_pack_args a)
{
    mdf_pack_layout L = mdf_pack_layout_of(a.sys_cap, a.atom_cap);
    const mdf_pack_header *h = (const mdf_pack_header *)buf;
    int64_t k = blockIdx.x;
    if (k >= h->nsys) return;
    int32_t s = MDF_PACK_PTR(buf, L, src, const int32_t)[k];
    int64_t a0 = MDF_PACK_PTR(buf, L, atom_ptr, const int64_t)[k];
    for (int32_t i = (int32_t)threadIdx.x; i < sys[s].natoms; i += (int32_t)blockDim.x)
        mdf_pack_atom(buf, &L, a0, sys[s].atom_start + i, x, v, f, atoms);
}

extern "C" void mdf_pack_cuda(void *buffers[], void *cl_arg)
{
    const mdf_pack_args *a = (const mdf_pack_args *)cl_arg;
    cudaStream_t stream = starpu_cuda_get_local_stream();
    pack_systems_kernel<<<1, 1, 0, stream>>>(VEC(4, const mdf_sys_info *), VEC(5, const mdf_sys_result *),
                                             VEC(6, char *), VEC(7, int64_t *), *a);
    mdf_cuda_check_launch();
    if (a->nsys == 0) return;
    pack_atoms_kernel<<<a->nsys, MDF_SYS_BLOCK, 0, stream>>>(
        VEC(0, const double *), VEC(1, const double *), VEC(2, const double *), VEC(3, const mdf_atom_info *),
        VEC(4, const mdf_sys_info *), VEC(6, char *), *a);
    mdf_cuda_check_launch();
}

__global__ void append_systems_kernel(char *dst, int64_t *len, const char *src, int64_t *cnt,
                                      mdf_device_append_args a)
{
    mdf_pack_layout Ld = mdf_pack_layout_of(a.dst_sys_cap, a.dst_atom_cap);
    mdf_pack_layout Ls = mdf_pack_layout_of(a.src_sys_cap, a.src_atom_cap);
    mdf_pack_header *h = (mdf_pack_header *)dst;
    int64_t from = cnt[MDF_PACK_CNT_TAKEN];
    int64_t k = mdf_pack_fit(h, src, &Ls, from, cnt[MDF_PACK_CNT_NSYS]);
    const int64_t *sp = MDF_PACK_PTR(src, Ls, atom_ptr, const int64_t);
    cnt[MDF_PACK_CNT_FROM] = from;
    cnt[MDF_PACK_CNT_DST0] = h->nsys;
    cnt[MDF_PACK_CNT_COUNT] = k;
    for (int64_t j = 0; j < k; j++) {
        mdf_pack_copy_system(dst, &Ld, h->nsys, h->natoms, src, &Ls, from + j);
        h->nsys++;
        h->natoms += sp[from + j + 1] - sp[from + j];
    }
    cnt[MDF_PACK_CNT_TAKEN] = from + k;
    len[0] = h->nsys;
    len[1] = h->natoms;
}

__global__ void append_atoms_kernel(char *dst, const char *src, const int64_t *cnt, mdf_device_append_args a)
{
    if (blockIdx.x >= cnt[MDF_PACK_CNT_COUNT]) return;
    mdf_pack_layout Ld = mdf_pack_layout_of(a.dst_sys_cap, a.dst_atom_cap);
    mdf_pack_layout Ls = mdf_pack_layout_of(a.src_sys_cap, a.src_atom_cap);
    int64_t ks = cnt[MDF_PACK_CNT_FROM] + blockIdx.x, kd = cnt[MDF_PACK_CNT_DST0] + blockIdx.x;
    const int64_t *sp = MDF_PACK_PTR(src, Ls, atom_ptr, const int64_t);
    int64_t a0 = MDF_PACK_PTR(dst, Ld, atom_ptr, const int64_t)[kd];
    for (int64_t i = sp[ks] + threadIdx.x; i < sp[ks + 1]; i += blockDim.x)
        mdf_pack_copy_atom(dst, &Ld, a0 + (i - sp[ks]), src, &Ls, i);
}

extern "C" void mdf_device_append_cuda(void *buffers[], void *cl_arg)
{
    const mdf_device_append_args *a = (const mdf_device_append_args *)cl_arg;
    cudaStream_t stream = starpu_cuda_get_local_stream();
    append_systems_kernel<<<1, 1, 0, stream>>>(VEC(0, char *), VEC(1, int64_t *), VEC(2, const char *),
                                               VEC(3, int64_t *), *a);
    mdf_cuda_check_launch();
    if (a->src_sys_cap == 0) return;
    append_atoms_kernel<<<(unsigned)a->src_sys_cap, MDF_SYS_BLOCK, 0, stream>>>(VEC(0, char *), VEC(2, const char *),
                                                                              VEC(3, const int64_t *), *a);
    mdf_cuda_check_launch();
}

__global__ void device_init_kernel(char *dst, int64_t *len, mdf_device_append_args a)
{
    mdf_pack_header *h = (mdf_pack_header *)dst;
    h->nsys = h->natoms = 0;
    h->sys_cap = a.dst_sys_cap;
    h->atom_cap = a.dst_atom_cap;
    for (int j = 0; j < 4; j++) h->pad_[j] = 0;
    MDF_PACK_PTR(dst, mdf_pack_layout_of(a.dst_sys_cap, a.dst_atom_cap), atom_ptr, int64_t)[0] = 0;
    len[0] = len[1] = 0;
}

extern "C" void mdf_device_init_cuda(void *buffers[], void *cl_arg)
{
    const mdf_device_append_args *a = (const mdf_device_append_args *)cl_arg;
    device_init_kernel<<<1, 1, 0, starpu_cuda_get_local_stream()>>>(VEC(0, char *), VEC(1, int64_t *), *a);
    mdf_cuda_check_launch();
}
