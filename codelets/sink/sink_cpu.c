/* mdflow — sink codelets, CPU implementations. */
#include <string.h>
#include "sink_codelet.h"

#define VEC(k, type) ((type)STARPU_VECTOR_GET_PTR(buffers[k]))

void mdf_pack_cpu(void *buffers[], void *cl_arg)
{
    const mdf_pack_args *a = (const mdf_pack_args *)cl_arg;
    const double *x = VEC(0, const double *), *v = VEC(1, const double *), *f = VEC(2, const double *);
    const mdf_atom_info *atoms = VEC(3, const mdf_atom_info *);
    const mdf_sys_info *sys = VEC(4, const mdf_sys_info *);
    const mdf_sys_result *res = VEC(5, const mdf_sys_result *);
    char *buf = VEC(6, char *);
    int64_t *cnt = VEC(7, int64_t *);
    mdf_pack_layout L = mdf_pack_layout_of(a->sys_cap, a->atom_cap);
    int64_t k = 0, na = 0;
    for (int32_t s = 0; s < a->nsys; s++) {
        if (!mdf_pack_selects(&sys[s], a)) continue;
        mdf_pack_system(buf, &L, k, na, &sys[s], &res[s], s, a->dt_fs);
        for (int32_t i = 0; i < sys[s].natoms; i++)
            mdf_pack_atom(buf, &L, na, sys[s].atom_start + i, x, v, f, atoms);
        na += sys[s].natoms;
        k++;
    }
    mdf_pack_header *h = (mdf_pack_header *)buf;
    memset(h, 0, sizeof *h);
    h->nsys = k;
    h->natoms = na;
    h->sys_cap = a->sys_cap;
    h->atom_cap = a->atom_cap;
    memset(cnt, 0, sizeof(int64_t) * MDF_PACK_CNT_N);
    cnt[MDF_PACK_CNT_NSYS] = k;
    cnt[MDF_PACK_CNT_NATOMS] = na;
    cnt[MDF_PACK_CNT_STEP] = a->step;
}

void mdf_device_append_cpu(void *buffers[], void *cl_arg)
{
    const mdf_device_append_args *a = (const mdf_device_append_args *)cl_arg;
    char *dst = VEC(0, char *);
    int64_t *len = VEC(1, int64_t *);
    const char *src = VEC(2, const char *);
    int64_t *cnt = VEC(3, int64_t *);
    mdf_pack_layout Ld = mdf_pack_layout_of(a->dst_sys_cap, a->dst_atom_cap);
    mdf_pack_layout Ls = mdf_pack_layout_of(a->src_sys_cap, a->src_atom_cap);
    mdf_pack_header *h = (mdf_pack_header *)dst;
    int64_t from = cnt[MDF_PACK_CNT_TAKEN];
    int64_t k = mdf_pack_fit(h, src, &Ls, from, cnt[MDF_PACK_CNT_NSYS]);
    const int64_t *sp = MDF_PACK_PTR(src, Ls, atom_ptr, const int64_t);
    for (int64_t j = 0; j < k; j++) {
        int64_t a0 = h->natoms;
        mdf_pack_copy_system(dst, &Ld, h->nsys, a0, src, &Ls, from + j);
        for (int64_t i = sp[from + j]; i < sp[from + j + 1]; i++)
            mdf_pack_copy_atom(dst, &Ld, a0 + (i - sp[from + j]), src, &Ls, i);
        h->nsys++;
        h->natoms += sp[from + j + 1] - sp[from + j];
    }
    cnt[MDF_PACK_CNT_TAKEN] = from + k;
    len[0] = h->nsys;
    len[1] = h->natoms;
}

void mdf_device_init_cpu(void *buffers[], void *cl_arg)
{
    const mdf_device_append_args *a = (const mdf_device_append_args *)cl_arg;
    mdf_pack_header *h = VEC(0, mdf_pack_header *);
    int64_t *len = VEC(1, int64_t *);
    memset(h, 0, sizeof *h);
    h->sys_cap = a->dst_sys_cap;
    h->atom_cap = a->dst_atom_cap;
    MDF_PACK_PTR(h, mdf_pack_layout_of(a->dst_sys_cap, a->dst_atom_cap), atom_ptr, int64_t)[0] = 0;
    len[0] = len[1] = 0;
}
