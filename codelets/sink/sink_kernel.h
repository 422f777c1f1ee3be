/* mdflow — packed snapshots: systems gathered from a shard into one flat
 * buffer (CSR: per-system arrays, then per-atom arrays), the layout shared by
 * the snapshot hook's staging buffers and by host and device sinks. Offsets
 * depend only on the capacities, so CPU and GPU code compute them alike.
 *
 * A buffer starts with an mdf_pack_header; arrays follow, 8-byte aligned. */
#ifndef MDF_SINK_KERNEL_H
#define MDF_SINK_KERNEL_H

#include "../common/mdf_kernel_common.h"

typedef struct mdf_pack_header {
    int64_t nsys, natoms;       /* systems and atoms stored */
    int64_t sys_cap, atom_cap;  /* room */
    int64_t pad_[4];
} mdf_pack_header;

/* Byte offsets from the start of a buffer. */
typedef struct mdf_pack_layout {
    int64_t atom_ptr, id, step, status, flags, pbc, src, cell, energy, kinetic, fmax, virial, time;
    int64_t pos, vel, force, mass, numbers, total;
} mdf_pack_layout;

MDF_HD int64_t mdf_pack_round8(int64_t n) { return (n + 7) & ~(int64_t)7; }

MDF_HD mdf_pack_layout mdf_pack_layout_of(int64_t sys_cap, int64_t atom_cap)
{
    mdf_pack_layout L;
    int64_t o = (int64_t)sizeof(mdf_pack_header);
#define MDF_PACK_FIELD(f, bytes) do { L.f = o; o += mdf_pack_round8(bytes); } while (0)
    MDF_PACK_FIELD(atom_ptr, 8 * (sys_cap + 1));
    MDF_PACK_FIELD(id, 8 * sys_cap);
    MDF_PACK_FIELD(step, 8 * sys_cap);
    MDF_PACK_FIELD(status, 4 * sys_cap);
    MDF_PACK_FIELD(flags, 4 * sys_cap);
    MDF_PACK_FIELD(pbc, 12 * sys_cap);
    MDF_PACK_FIELD(src, 4 * sys_cap);
    MDF_PACK_FIELD(cell, 72 * sys_cap);
    MDF_PACK_FIELD(energy, 8 * sys_cap);
    MDF_PACK_FIELD(kinetic, 8 * sys_cap);
    MDF_PACK_FIELD(fmax, 8 * sys_cap);
    MDF_PACK_FIELD(virial, 72 * sys_cap);
    MDF_PACK_FIELD(time, 8 * sys_cap);
    MDF_PACK_FIELD(pos, 24 * atom_cap);
    MDF_PACK_FIELD(vel, 24 * atom_cap);
    MDF_PACK_FIELD(force, 24 * atom_cap);
    MDF_PACK_FIELD(mass, 8 * atom_cap);
    MDF_PACK_FIELD(numbers, 4 * atom_cap);
#undef MDF_PACK_FIELD
    L.total = o;
    return L;
}

#define MDF_PACK_PTR(base, L, field, type) ((type *)((char *)(base) + (L).field))

/* Which systems a pack takes. */
#define MDF_PACK_STATUS 0     /* status == args.status (a stage's systems) */
#define MDF_PACK_CONVERGED 1  /* just converged: CONVERGED_NOW and status == args.target */
#define MDF_PACK_ALL 2        /* every system of the shard */

typedef struct mdf_pack_args {
    int64_t work;        /* atoms in the shard (performance-model key) */
    int64_t step;        /* the stage's step */
    int64_t sys_cap, atom_cap;  /* of the staging buffer */
    double dt_fs;        /* time = system step × dt_fs */
    int32_t nsys;        /* systems in the shard */
    int32_t mode;        /* MDF_PACK_* */
    int32_t status, target;
} mdf_pack_args;

/* The per-write counters that travel with a staging buffer (a small handle
 * of its own, so that sinks and the fullness check need not move the
 * buffer): systems and atoms packed, systems taken by the sinks so far. */
#define MDF_PACK_CNT_NSYS 0
#define MDF_PACK_CNT_NATOMS 1
#define MDF_PACK_CNT_TAKEN 2
#define MDF_PACK_CNT_STEP 3
#define MDF_PACK_CNT_FROM 4    /* device appends: first system of the last append */
#define MDF_PACK_CNT_DST0 5    /* device appends: sink's system count before it */
#define MDF_PACK_CNT_COUNT 6   /* device appends: systems it took */
#define MDF_PACK_CNT_N 8

MDF_HD int mdf_pack_selects(const mdf_sys_info *s, const mdf_pack_args *a)
{
    if (s->natoms <= 0) return 0;
    if (a->mode == MDF_PACK_ALL) return 1;
    if (a->mode == MDF_PACK_CONVERGED) return (s->flags & MDF_SYS_CONVERGED_NOW) && s->status == a->target;
    return s->status == a->status;
}

/* Packed system k (its atoms start at packed atom a0) from a shard's system. */
MDF_HD void mdf_pack_system(char *base, const mdf_pack_layout *L, int64_t k, int64_t a0, const mdf_sys_info *s,
                            const mdf_sys_result *r, int32_t src, double dt_fs)
{
    MDF_PACK_PTR(base, *L, atom_ptr, int64_t)[k] = a0;
    MDF_PACK_PTR(base, *L, atom_ptr, int64_t)[k + 1] = a0 + s->natoms;
    MDF_PACK_PTR(base, *L, id, int64_t)[k] = s->id;
    MDF_PACK_PTR(base, *L, step, int64_t)[k] = s->step;
    MDF_PACK_PTR(base, *L, status, int32_t)[k] = s->status;
    MDF_PACK_PTR(base, *L, flags, int32_t)[k] = s->flags;
    MDF_PACK_PTR(base, *L, src, int32_t)[k] = src;
    for (int d = 0; d < 3; d++) MDF_PACK_PTR(base, *L, pbc, int32_t)[3 * k + d] = s->pbc[d];
    for (int d = 0; d < 9; d++) {
        MDF_PACK_PTR(base, *L, cell, double)[9 * k + d] = s->cell[d];
        /* NaN for a virial of earlier positions (none computed here) */
        MDF_PACK_PTR(base, *L, virial, double)[9 * k + d] = r->virial_fresh ? r->virial[d] : nan("");
    }
    MDF_PACK_PTR(base, *L, energy, double)[k] = r->energy;
    MDF_PACK_PTR(base, *L, kinetic, double)[k] = r->kinetic;
    MDF_PACK_PTR(base, *L, fmax, double)[k] = r->fmax;
    MDF_PACK_PTR(base, *L, time, double)[k] = (double)s->step * dt_fs;
}

/* Shard atom i into the packed system whose first atom is a0, at its input
 * index (atoms[i].index: a large system's atoms are stored in a spatial
 * order, outputs are in the order given). */
MDF_HD void mdf_pack_atom(char *base, const mdf_pack_layout *L, int64_t a0, int32_t i, const double *x,
                          const double *v, const double *f, const mdf_atom_info *atoms)
{
    const int64_t a = a0 + atoms[i].index;
    for (int d = 0; d < 3; d++) {
        MDF_PACK_PTR(base, *L, pos, double)[3 * a + d] = x[3 * i + d];
        MDF_PACK_PTR(base, *L, vel, double)[3 * a + d] = v[3 * i + d];
        MDF_PACK_PTR(base, *L, force, double)[3 * a + d] = f[3 * i + d];
    }
    MDF_PACK_PTR(base, *L, mass, double)[a] = atoms[i].mass;
    MDF_PACK_PTR(base, *L, numbers, int32_t)[a] = atoms[i].z;
}

/* Per-system fields of packed system ks of src into packed system kd of dst
 * (atoms at a0 in dst). */
MDF_HD void mdf_pack_copy_system(char *dst, const mdf_pack_layout *Ld, int64_t kd, int64_t a0, const char *src,
                                 const mdf_pack_layout *Ls, int64_t ks)
{
    const int64_t *sp = MDF_PACK_PTR(src, *Ls, atom_ptr, const int64_t);
    MDF_PACK_PTR(dst, *Ld, atom_ptr, int64_t)[kd] = a0;
    MDF_PACK_PTR(dst, *Ld, atom_ptr, int64_t)[kd + 1] = a0 + (sp[ks + 1] - sp[ks]);
    MDF_PACK_PTR(dst, *Ld, id, int64_t)[kd] = MDF_PACK_PTR(src, *Ls, id, const int64_t)[ks];
    MDF_PACK_PTR(dst, *Ld, step, int64_t)[kd] = MDF_PACK_PTR(src, *Ls, step, const int64_t)[ks];
    MDF_PACK_PTR(dst, *Ld, status, int32_t)[kd] = MDF_PACK_PTR(src, *Ls, status, const int32_t)[ks];
    MDF_PACK_PTR(dst, *Ld, flags, int32_t)[kd] = MDF_PACK_PTR(src, *Ls, flags, const int32_t)[ks];
    MDF_PACK_PTR(dst, *Ld, src, int32_t)[kd] = MDF_PACK_PTR(src, *Ls, src, const int32_t)[ks];
    for (int d = 0; d < 3; d++)
        MDF_PACK_PTR(dst, *Ld, pbc, int32_t)[3 * kd + d] = MDF_PACK_PTR(src, *Ls, pbc, const int32_t)[3 * ks + d];
    for (int d = 0; d < 9; d++) {
        MDF_PACK_PTR(dst, *Ld, cell, double)[9 * kd + d] = MDF_PACK_PTR(src, *Ls, cell, const double)[9 * ks + d];
        MDF_PACK_PTR(dst, *Ld, virial, double)[9 * kd + d] = MDF_PACK_PTR(src, *Ls, virial, const double)[9 * ks + d];
    }
    MDF_PACK_PTR(dst, *Ld, energy, double)[kd] = MDF_PACK_PTR(src, *Ls, energy, const double)[ks];
    MDF_PACK_PTR(dst, *Ld, kinetic, double)[kd] = MDF_PACK_PTR(src, *Ls, kinetic, const double)[ks];
    MDF_PACK_PTR(dst, *Ld, fmax, double)[kd] = MDF_PACK_PTR(src, *Ls, fmax, const double)[ks];
    MDF_PACK_PTR(dst, *Ld, time, double)[kd] = MDF_PACK_PTR(src, *Ls, time, const double)[ks];
}

/* Per-atom fields of packed atom as of src into packed atom ad of dst. */
MDF_HD void mdf_pack_copy_atom(char *dst, const mdf_pack_layout *Ld, int64_t ad, const char *src,
                               const mdf_pack_layout *Ls, int64_t as)
{
    for (int d = 0; d < 3; d++) {
        MDF_PACK_PTR(dst, *Ld, pos, double)[3 * ad + d] = MDF_PACK_PTR(src, *Ls, pos, const double)[3 * as + d];
        MDF_PACK_PTR(dst, *Ld, vel, double)[3 * ad + d] = MDF_PACK_PTR(src, *Ls, vel, const double)[3 * as + d];
        MDF_PACK_PTR(dst, *Ld, force, double)[3 * ad + d] = MDF_PACK_PTR(src, *Ls, force, const double)[3 * as + d];
    }
    MDF_PACK_PTR(dst, *Ld, mass, double)[ad] = MDF_PACK_PTR(src, *Ls, mass, const double)[as];
    MDF_PACK_PTR(dst, *Ld, numbers, int32_t)[ad] = MDF_PACK_PTR(src, *Ls, numbers, const int32_t)[as];
}

/* How many systems of src from `from` on fit, in order, into dst's room. */
MDF_HD int64_t mdf_pack_fit(const mdf_pack_header *dst, const char *src, const mdf_pack_layout *Ls, int64_t from,
                            int64_t nsys)
{
    const int64_t *sp = MDF_PACK_PTR(src, *Ls, atom_ptr, const int64_t);
    int64_t k = 0, atoms = dst->natoms;
    while (from + k < nsys && dst->nsys + k < dst->sys_cap) {
        int64_t n = sp[from + k + 1] - sp[from + k];
        if (atoms + n > dst->atom_cap) break;
        atoms += n;
        k++;
    }
    return k;
}

#endif
