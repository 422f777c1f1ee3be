/* mdflow — neighbour lists: cell binning with a skin, and per-atom Verlet
 * lists, shared by the CPU (C) and CUDA implementations (installed: a
 * model codelet, built-in or a plugin's, reads the lists through the views
 * and walks below).
 *
 * Binning works in the fractional coordinates of a per-system basis: the
 * lattice when the system has a cell, the identity for open clusters
 * without one. Along a periodic direction a cell is at least r_list wide
 * in perpendicular distance, so every neighbour within r_list lies in the
 * 3x3x3 block of cells around an atom's own; along an open direction the
 * cells span the atoms' extent at the time of the build. The whole binning
 * stays valid until an atom of the system has moved more than skin/2.
 *
 * Lists are kept per atom in M fixed slots: neighbours j > i fill the slots
 * from the front (the half list a CPU uses with Newton's third law),
 * neighbours j < i fill them from the back (so front + back is the full list
 * a GPU thread uses without write conflicts). An atom with more than M
 * neighbours is marked overflowed and its forces are computed by walking the
 * cells directly: correct, only slower (M is not enlarged during a run).
 * Lists of fronts only (a CPU build with mdf_nl_build_args.up_only) are
 * packed: each system's rows follow one another from the start of the
 * system's M slots per row, and mdf_nl_list_head.packed says so; read a
 * row with mdf_nl_row, never as slots + li M. The memory is mapped lazily,
 * so the room a packed list leaves unused past its rows is never touched
 * (at 1,000,188 atoms of in.lj: about 39 of 112 slots a row used).
 *
 * Positions are never wrapped (trajectories stay continuous), so an atom
 * may be any number of cells away from the box. At each build the binning
 * records a per-atom offset o_i = -floor(s_i)·H that brings the atom into
 * the cell; lists then work with the wrapped positions x + o, and an entry
 * names a neighbour j and a lattice translation n:
 *   d = (x_j + o_j) - (x_i + o_i) + n·H.
 * The offsets stay fixed until the next build.
 *
 * Small periodic cells. Along a periodic direction whose perpendicular
 * width w is less than 2 r_list an atom sees several images of the same
 * neighbour, and of itself: the list holds one entry per image within
 * r_list (j == i with n != 0 included), as ASE's and LAMMPS's lists do.
 * Such a direction has fewer than three cells; the walk visits each of its
 * cells once and tries every n_k in [-R_k, R_k], R_k = ceil(r_list / w)
 * (mdf_nl_grid.reach). Directions with three cells or more take the image
 * of the neighbouring cell, one per atom (the fast path of large cells).
 *
 * Entry formats (per system, mdf_nl_grid): when every R_k <= 1 (every cell
 * down to half the list radius: large cells keep this path) an entry is
 *   (j << 5) | code(n),   code = (n0+1)·9 + (n1+1)·3 + (n2+1),
 * j the shard index. Wider reach uses "wide" entries
 *   ((j - atom_start) << 3q) | (n0+R) << 2q | (n1+R) << q | (n2+R),
 * with q bits per direction (mdf_nl_grid.image_q) and j counted from the
 * system's first atom. Read entries through mdf_nl_entry_atom and
 * mdf_nl_entry_image (any code), or an mdf_nl_shifts table (CPU loops). A
 * system whose atoms outnumber what a wide entry can index (or whose reach
 * exceeds MDF_NL_MAX_REACH) gets no list: every atom walks its cells
 * (mdf_nl_pairs), the path of atoms with more neighbours than slots. */
#ifndef MDF_NLIST_KERNEL_H
#define MDF_NLIST_KERNEL_H

#include <stddef.h>
#include "mdflow/kernel.h"

#define MDF_NL_IMAGE_BITS 5
#define MDF_NL_IMAGE_MASK 31u
#define MDF_NL_NO_IMAGE 13 /* (0,0,0) */

/* Per-system binning state. */
typedef struct mdf_nl_grid {
    int32_t n[3];          /* cells along each basis direction */
    int32_t rebuilt;       /* nonzero when this step rebuilt the system's lists:
                            * MDF_NL_REBINNED (new binning) or
                            * MDF_NL_RELISTED (the binning kept, lists made
                            * again from the reference positions) */
    int32_t periodic[3];
    int32_t valid;         /* 0 until the first build */
    int32_t all_pairs;     /* 1: left to an all-pairs model this step (CPU
                            * only): no bins, no list (mdf_nl_all_pairs) */
    int32_t reach[3];      /* R_k: images tried along a periodic direction of
                            * fewer than three cells (0 along open ones) */
    int32_t image_q;       /* 0: 5-bit codes; else bits per direction of a
                            * wide entry (see the top of this file) */
    int32_t image_bits;    /* low bits of an entry holding the image */
    int32_t entry_base;    /* j of an entry counts from here */
    int32_t lists_off;     /* 1: no list, every atom walks its cells */
    int32_t age;           /* evaluations since the last binning (the
                            * rebuild rule's clock, mdf_nl_rebuild_due) */
    int32_t age_pad_;
    int64_t nbuilds;       /* rebuilds so far (statistics, tests) */
    double lo[3], span[3]; /* fractional range covered along each direction */
    double basis[9];       /* rows; the cell, or the identity */
    double inv_basis[9];
    double ref_cell[9];    /* cell at the last build: a change forces one */
} mdf_nl_grid;

/* The bins blob of a shard: one StarPU vector of bytes. Its head records the
 * capacities so that a kernel can find every array from the pointer alone. */
typedef struct mdf_nl_bins_head {
    int32_t atom_cap, sys_cap;
    int32_t force_rebuild; /* set by the host side: MDF_NL_REBUILD_ALL, or
                            * MDF_NL_RELIST_ALL (the bins were carried over
                            * from another pipeline, the lists are empty) */
    int32_t pad;
} mdf_nl_bins_head;

/* mdf_nl_grid.rebuilt */
#define MDF_NL_REBINNED 1
#define MDF_NL_RELISTED 2
/* mdf_nl_bins_head.force_rebuild. A relist rebuilds each system's lists
 * from its binning and reference positions (those of its last binning):
 * the lists it had, entry for entry, so a new pipeline (a refill's) changes
 * no system's order of summation. A GPU bins kernel treats it as a full
 * rebuild (correct, not bit for bit). */
#define MDF_NL_REBUILD_ALL 1
#define MDF_NL_RELIST_ALL 2

typedef struct mdf_nl_bins_view {
    mdf_nl_bins_head *head;
    mdf_nl_grid *grid;     /* sys_cap */
    double *ref_pos;       /* 3*atom_cap */
    double *offset;        /* 3*atom_cap: o_i, wraps atom i into the cell */
    int32_t *cell_of;      /* atom_cap: linear cell index within its system */
    int32_t *sorted;       /* atom_cap: atoms of each system sorted by cell */
    int32_t *cell_start;   /* atom_cap + sys_cap: for system s, the entries
                            * atom_start(s) + s ... + ncells(s) */
} mdf_nl_bins_view;

MDF_HD size_t mdf_align64(size_t x) { return (x + 63) & ~(size_t)63; }

/* Byte size of the bins blob and the views into it. */
MDF_HD size_t mdf_nl_bins_bytes(int32_t atom_cap, int32_t sys_cap)
{
    size_t s = mdf_align64(sizeof(mdf_nl_bins_head));
    s += mdf_align64(sizeof(mdf_nl_grid) * (size_t)sys_cap);
    s += 2 * mdf_align64(sizeof(double) * 3 * (size_t)atom_cap);
    s += 2 * mdf_align64(sizeof(int32_t) * (size_t)atom_cap);
    s += mdf_align64(sizeof(int32_t) * (size_t)(atom_cap + sys_cap));
    return s;
}

MDF_HD mdf_nl_bins_view mdf_nl_bins_map(void *blob)
{
    mdf_nl_bins_view v;
    char *p = (char *)blob;
    v.head = (mdf_nl_bins_head *)p;
    size_t atom_cap = (size_t)v.head->atom_cap, sys_cap = (size_t)v.head->sys_cap;
    p += mdf_align64(sizeof(mdf_nl_bins_head));
    v.grid = (mdf_nl_grid *)p;
    p += mdf_align64(sizeof(mdf_nl_grid) * sys_cap);
    v.ref_pos = (double *)p;
    p += mdf_align64(sizeof(double) * 3 * atom_cap);
    v.offset = (double *)p;
    p += mdf_align64(sizeof(double) * 3 * atom_cap);
    v.cell_of = (int32_t *)p;
    p += mdf_align64(sizeof(int32_t) * atom_cap);
    v.sorted = (int32_t *)p;
    p += mdf_align64(sizeof(int32_t) * atom_cap);
    v.cell_start = (int32_t *)p;
    return v;
}

/* Verlet lists of one chunk of atoms: one StarPU vector of bytes. */
typedef struct mdf_nl_list_head {
    int32_t natoms;        /* atoms in the chunk */
    int32_t slots;         /* M, slots per atom */
    int32_t atom_begin;    /* first atom of the chunk within the shard */
    int32_t overflowed;    /* atoms whose neighbours exceeded M at last build */
    int32_t max_count;     /* largest neighbour count seen at last build */
    uint32_t pairs_lo, pairs_hi; /* entries j > i at the last CPU build (within
                            * the slots): mdf_nl_list_pairs */
    int32_t builds;        /* CPU builds of this list so far, modulo 2^30: a model
                            * that caches what it derives from the list sees a new
                            * one (was padding: the layout is unchanged) */
    int32_t packed;        /* 1: fronts only (n_down 0), rows packed (row_at);
                            * 0: row li at slots + li M. Set by each build */
} mdf_nl_list_head;

MDF_HD void mdf_nl_list_set_pairs(mdf_nl_list_head *h, int64_t pairs)
{
    h->pairs_lo = (uint32_t)((uint64_t)pairs & 0xffffffffu);
    h->pairs_hi = (uint32_t)((uint64_t)pairs >> 32);
}
MDF_HD int64_t mdf_nl_list_pairs(const mdf_nl_list_head *h)
{
    return (int64_t)(((uint64_t)h->pairs_hi << 32) | h->pairs_lo);
}

typedef struct mdf_nl_list_view {
    mdf_nl_list_head *head;
    int32_t *n_up;         /* natoms: entries j > i, from slot 0 */
    int32_t *n_down;       /* natoms: entries j < i, from slot M-1 down */
    int64_t *row_at;       /* natoms: a packed list's first slot of each row */
    uint32_t *slots;       /* natoms * M */
} mdf_nl_list_view;

MDF_HD size_t mdf_nl_list_bytes(int32_t natoms, int32_t slots)
{
    return mdf_align64(sizeof(mdf_nl_list_head)) +
           2 * mdf_align64(sizeof(int32_t) * (size_t)natoms) + mdf_align64(sizeof(int64_t) * (size_t)natoms) +
           mdf_align64(sizeof(uint32_t) * (size_t)natoms * (size_t)slots);
}

MDF_HD mdf_nl_list_view mdf_nl_list_map(void *blob)
{
    mdf_nl_list_view v;
    char *p = (char *)blob;
    v.head = (mdf_nl_list_head *)p;
    size_t n = (size_t)v.head->natoms;
    p += mdf_align64(sizeof(mdf_nl_list_head));
    v.n_up = (int32_t *)p;
    p += mdf_align64(sizeof(int32_t) * n);
    v.n_down = (int32_t *)p;
    p += mdf_align64(sizeof(int32_t) * n);
    v.row_at = (int64_t *)p;
    p += mdf_align64(sizeof(int64_t) * n);
    v.slots = (uint32_t *)p;
    return v;
}

/* Row li of a list (li: the atom's index within the chunk): its M fixed
 * slots, or where a packed list put it. */
MDF_HD uint32_t *mdf_nl_row(const mdf_nl_list_view *l, int32_t li)
{
    return l->slots + (l->head->packed ? l->row_at[li] : (int64_t)li * (int64_t)l->head->slots);
}

/* ---- arithmetic that decides ------------------------------------------ */

/* nvcc contracts a*b + c into a fused multiply-add by default; the CPU code
 * is compiled as C11, which implies -ffp-contract=off. The products and sums
 * whose results decide something (a pair within r_list, an atom past skin/2,
 * the basis, an atom's cell and wrap offset) go through these helpers, so
 * that the GPU rounds every operation as the CPU does and both make the same
 * decisions bit for bit. On the CPU they are the plain operators, applied in
 * the order the expressions had before: the CPU results are unchanged. */
MDF_HD double mdf_nl_mul(double a, double b)
{
#ifdef __CUDA_ARCH__
    return __dmul_rn(a, b); /* never fused */
#else
    return a * b;
#endif
}

MDF_HD double mdf_nl_add(double a, double b)
{
#ifdef __CUDA_ARCH__
    return __dadd_rn(a, b);
#else
    return a + b;
#endif
}

MDF_HD double mdf_nl_sub(double a, double b)
{
#ifdef __CUDA_ARCH__
    return __dsub_rn(a, b);
#else
    return a - b;
#endif
}

/* a0*b0 + a1*b1 + a2*b2, left to right. */
MDF_HD double mdf_nl_dot3(double a0, double b0, double a1, double b1, double a2, double b2)
{
    return mdf_nl_add(mdf_nl_add(mdf_nl_mul(a0, b0), mdf_nl_mul(a1, b1)), mdf_nl_mul(a2, b2));
}

/* d0*d0 + d1*d1 + d2*d2, left to right. */
MDF_HD double mdf_nl_norm2(double d0, double d1, double d2) { return mdf_nl_dot3(d0, d0, d1, d1, d2, d2); }

/* a*b - c*d */
MDF_HD double mdf_nl_cross2(double a, double b, double c, double d)
{
    return mdf_nl_sub(mdf_nl_mul(a, b), mdf_nl_mul(c, d));
}

/* mdf_vec_mat (r · m) with the rounding above. */
MDF_HD void mdf_nl_vec_mat(const double r[3], const double m[9], double out[3])
{
    out[0] = mdf_nl_dot3(r[0], m[0], r[1], m[3], r[2], m[6]);
    out[1] = mdf_nl_dot3(r[0], m[1], r[1], m[4], r[2], m[7]);
    out[2] = mdf_nl_dot3(r[0], m[2], r[1], m[5], r[2], m[8]);
}

/* ---- geometry ---------------------------------------------------------- */

MDF_HD double mdf_det3(const double m[9])
{
    return mdf_nl_add(mdf_nl_sub(mdf_nl_mul(m[0], mdf_nl_cross2(m[4], m[8], m[5], m[7])),
                                 mdf_nl_mul(m[1], mdf_nl_cross2(m[3], m[8], m[5], m[6]))),
                      mdf_nl_mul(m[2], mdf_nl_cross2(m[3], m[7], m[4], m[6])));
}

/* Inverse of a 3x3 matrix; returns 0 when it is singular. */
MDF_HD int mdf_inv3(const double m[9], double inv[9])
{
    double det = mdf_det3(m);
    if (!(fabs(det) > 0.0)) return 0;
    double r = 1.0 / det;
    inv[0] = mdf_nl_mul(mdf_nl_cross2(m[4], m[8], m[5], m[7]), r);
    inv[1] = mdf_nl_mul(mdf_nl_cross2(m[2], m[7], m[1], m[8]), r);
    inv[2] = mdf_nl_mul(mdf_nl_cross2(m[1], m[5], m[2], m[4]), r);
    inv[3] = mdf_nl_mul(mdf_nl_cross2(m[5], m[6], m[3], m[8]), r);
    inv[4] = mdf_nl_mul(mdf_nl_cross2(m[0], m[8], m[2], m[6]), r);
    inv[5] = mdf_nl_mul(mdf_nl_cross2(m[2], m[3], m[0], m[5]), r);
    inv[6] = mdf_nl_mul(mdf_nl_cross2(m[3], m[7], m[4], m[6]), r);
    inv[7] = mdf_nl_mul(mdf_nl_cross2(m[1], m[6], m[0], m[7]), r);
    inv[8] = mdf_nl_mul(mdf_nl_cross2(m[0], m[4], m[1], m[3]), r);
    return 1;
}

/* Distance between the two lattice planes spanned by the other two rows,
 * for direction k: 1 / |column k of the inverse|. */
MDF_HD double mdf_perpendicular_width(const double inv[9], int k)
{
    double c0 = inv[0 + k], c1 = inv[3 + k], c2 = inv[6 + k];
    return 1.0 / sqrt(mdf_nl_norm2(c0, c1, c2));
}

/* Cartesian translation of lattice image code (n in {-1,0,1}^3). */
MDF_HD void mdf_nl_image_shift(uint32_t code, const double cell[9], double out[3])
{
    double n0 = (double)((int)(code / 9) - 1);
    double n1 = (double)((int)((code / 3) % 3) - 1);
    double n2 = (double)((int)(code % 3) - 1);
    out[0] = mdf_nl_dot3(n0, cell[0], n1, cell[3], n2, cell[6]);
    out[1] = mdf_nl_dot3(n0, cell[1], n1, cell[4], n2, cell[7]);
    out[2] = mdf_nl_dot3(n0, cell[2], n1, cell[5], n2, cell[8]);
}

/* Displacement r_j - r_i to the nearest periodic image of j, for any two
 * positions (wrapped or not). Returns the image code when the translation
 * is within {-1,0,1}^3 (always so for wrapped positions), else -1. */
MDF_HD int mdf_nl_min_image(const double *xi, const double *xj, const mdf_sys_info *s, double d[3])
{
    d[0] = xj[0] - xi[0];
    d[1] = xj[1] - xi[1];
    d[2] = xj[2] - xi[2];
    if (!(s->pbc[0] | s->pbc[1] | s->pbc[2])) return MDF_NL_NO_IMAGE;
    double f[3], n[3];
    mdf_nl_vec_mat(d, s->inv_cell, f);
    for (int k = 0; k < 3; k++) n[k] = s->pbc[k] ? -rint(f[k]) : 0.0;
    for (int k = 0; k < 3; k++)
        d[k] = mdf_nl_add(d[k], mdf_nl_dot3(n[0], s->cell[k], n[1], s->cell[3 + k], n[2], s->cell[6 + k]));
    /* written so that a NaN (a position gone non-finite) also returns -1:
     * converting it to int would be undefined */
    if (!(fabs(n[0]) <= 1.0 && fabs(n[1]) <= 1.0 && fabs(n[2]) <= 1.0)) return -1;
    return (int)((n[0] + 1.0) * 9.0 + (n[1] + 1.0) * 3.0 + (n[2] + 1.0));
}

/* Wrapped position x + o of atom a. */
MDF_HD void mdf_nl_wrapped(const double *pos, const double *offset, int32_t a, double out[3])
{
    const size_t k = 3 * (size_t)a;
    out[0] = pos[k] + offset[k];
    out[1] = pos[k + 1] + offset[k + 1];
    out[2] = pos[k + 2] + offset[k + 2];
}

/* The binning basis of a system: its cell when it has a non-degenerate one,
 * otherwise the identity (open cluster). */
MDF_HD void mdf_nl_basis(const mdf_sys_info *s, mdf_nl_grid *g)
{
    int has_cell = mdf_inv3(s->cell, g->inv_basis);
    for (int k = 0; k < 9; k++) g->basis[k] = has_cell ? s->cell[k] : (k % 4 == 0 ? 1.0 : 0.0);
    if (!has_cell)
        for (int k = 0; k < 9; k++) g->inv_basis[k] = g->basis[k];
    for (int k = 0; k < 3; k++) g->periodic[k] = s->pbc[k] ? 1 : 0;
}

/* Fractional coordinate u of x (wrapped into [0,1) along periodic
 * directions) and the Cartesian offset o = -floor(u)·basis that wraps x. */
MDF_HD void mdf_nl_wrap(const mdf_nl_grid *g, const double *x, double u[3], double o[3])
{
    double f[3] = {0.0, 0.0, 0.0};
    mdf_nl_vec_mat(x, g->inv_basis, u);
    for (int k = 0; k < 3; k++)
        if (g->periodic[k]) {
            f[k] = floor(u[k]);
            u[k] -= f[k];
            if (u[k] >= 1.0) { /* -tiny wraps to exactly 1.0 */
                u[k] = 0.0;
                f[k] += 1.0;
            }
        }
    for (int k = 0; k < 3; k++) o[k] = -mdf_nl_dot3(f[0], g->basis[k], f[1], g->basis[3 + k], f[2], g->basis[6 + k]);
}

/* Chooses cell counts once lo/span are known: cells at least r_list wide
 * (perpendicular), and no more cells than max_cells. */
MDF_HD void mdf_nl_grid_dims(mdf_nl_grid *g, double r_list, int32_t max_cells)
{
    double ncell[3];
    for (int k = 0; k < 3; k++) {
        double width = mdf_perpendicular_width(g->inv_basis, k) * g->span[k];
        double n = floor(width / r_list);
        /* a NaN width (a cell gone non-finite) gives one cell: converting
         * NaN to int below would be undefined */
        ncell[k] = n >= 1.0 ? (n > 1.0e6 ? 1.0e6 : n) : 1.0;
    }
    if (max_cells < 1) max_cells = 1;
    /* Halve the finest direction until the grid fits: cells only grow. */
    while (ncell[0] * ncell[1] * ncell[2] > (double)max_cells) {
        int k = ncell[0] >= ncell[1] ? (ncell[0] >= ncell[2] ? 0 : 2) : (ncell[1] >= ncell[2] ? 1 : 2);
        ncell[k] = floor(ncell[k] / 2.0);
        if (ncell[k] < 1.0) ncell[k] = 1.0;
    }
    for (int k = 0; k < 3; k++) g->n[k] = (int32_t)ncell[k];
}

/* The images a system's lists need (after mdf_nl_grid_dims: the cell
 * counts decide which directions walk their images) and the entry format
 * that can name them; see the top of this file. */
MDF_HD void mdf_nl_grid_images(mdf_nl_grid *g, double r_list, int32_t atom_start, int32_t natoms)
{
    int32_t R = 1;
    for (int k = 0; k < 3; k++) {
        g->reach[k] = 0;
        if (!g->periodic[k]) continue;
        double r = ceil(r_list / mdf_perpendicular_width(g->inv_basis, k));
        /* a NaN or huge ratio (a cell gone non-finite or flat) ends up past
         * the maximum, without an undefined conversion */
        g->reach[k] = g->n[k] >= 3 ? 1 : (r >= 1.0 ? (r <= (double)MDF_NL_MAX_REACH ? (int32_t)r : MDF_NL_MAX_REACH + 1) : 1);
        R = g->reach[k] > R ? g->reach[k] : R;
    }
    g->lists_off = 0;
    if (R <= 1) {
        g->image_q = 0;
        g->image_bits = MDF_NL_IMAGE_BITS;
        g->entry_base = 0;
        return;
    }
    int32_t q = 1;
    while ((1 << q) < 2 * R + 1) q++;
    g->image_q = q;
    g->image_bits = 3 * q;
    g->entry_base = atom_start;
    g->lists_off = R > MDF_NL_MAX_REACH || (int64_t)natoms > ((int64_t)1 << (32 - 3 * q));
}

/* Cell counts and images of a system whose basis, lo and span are set. */
MDF_HD void mdf_nl_grid_setup(mdf_nl_grid *g, double r_list, int32_t atom_start, int32_t natoms)
{
    mdf_nl_grid_dims(g, r_list, natoms);
    mdf_nl_grid_images(g, r_list, atom_start, natoms);
}

/* The cell of fractional position u. Clamped to the grid in floating point
 * before the conversion to int, which is undefined for a NaN, an infinity or
 * anything beyond int32: a non-finite position (a run that exploded, before
 * the NaN check reports it) lands in cell 0 or the last one. Finite values
 * get the cell they always got. */
MDF_HD int32_t mdf_nl_cell_index(const mdf_nl_grid *g, const double u[3], int32_t c[3])
{
    for (int k = 0; k < 3; k++) {
        double t = floor((u[k] - g->lo[k]) / g->span[k] * (double)g->n[k]);
        c[k] = t >= (double)(g->n[k] - 1) ? g->n[k] - 1 : (t > 0.0 ? (int32_t)t : 0);
    }
    return (c[0] * g->n[1] + c[1]) * g->n[2] + c[2];
}

/* ---- walking the cells around an atom ---------------------------------- */

/* Visits every atom of the cells adjacent to (and including) atom i's cell,
 * each distinct cell once even when a periodic direction has fewer than
 * three cells. Usage: mdf_nl_walk_begin(...); while (mdf_nl_walk_next(...)). */
typedef struct mdf_nl_walk {
    int32_t c[3];          /* atom i's cell */
    int32_t d[3];          /* current offset */
    int32_t dmin[3], dmax[3];
    int32_t pos, end;      /* current range within sorted[] */
    int32_t image[3];      /* lattice translation of the current cell (along
                            * directions of three cells or more) */
} mdf_nl_walk;

MDF_HD void mdf_nl_walk_range(const mdf_nl_grid *g, int k, int32_t c, int32_t *lo, int32_t *hi)
{
    if (g->periodic[k]) {
        if (g->n[k] >= 3) { *lo = -1; *hi = 1; }
        else { *lo = -c; *hi = g->n[k] - 1 - c; } /* every cell once */
    } else {
        *lo = c > 0 ? -1 : 0;
        *hi = c < g->n[k] - 1 ? 1 : 0;
    }
}

MDF_HD void mdf_nl_walk_begin(mdf_nl_walk *w, const mdf_nl_grid *g, int32_t cell_linear)
{
    w->c[2] = cell_linear % g->n[2];
    w->c[1] = (cell_linear / g->n[2]) % g->n[1];
    w->c[0] = cell_linear / (g->n[2] * g->n[1]);
    for (int k = 0; k < 3; k++) mdf_nl_walk_range(g, k, w->c[k], &w->dmin[k], &w->dmax[k]);
    w->d[0] = w->dmin[0];
    w->d[1] = w->dmin[1];
    w->d[2] = w->dmin[2] - 1; /* first advance lands on dmin */
    w->pos = w->end = 0;
    w->image[0] = w->image[1] = w->image[2] = 0;
}

/* Moves to the next non-empty cell; returns 0 when all were visited.
 * cell_start points at the system's first cell entry. */
MDF_HD int mdf_nl_walk_next_cell(mdf_nl_walk *w, const mdf_nl_grid *g, const int32_t *cell_start)
{
    for (;;) {
        if (++w->d[2] > w->dmax[2]) {
            w->d[2] = w->dmin[2];
            if (++w->d[1] > w->dmax[1]) {
                w->d[1] = w->dmin[1];
                if (++w->d[0] > w->dmax[0]) return 0;
            }
        }
        int32_t cc[3];
        for (int k = 0; k < 3; k++) {
            cc[k] = w->c[k] + w->d[k];
            w->image[k] = 0;
            if (cc[k] < 0) {
                cc[k] += g->n[k];
                w->image[k] = -1;
            } else if (cc[k] >= g->n[k]) {
                cc[k] -= g->n[k];
                w->image[k] = 1;
            }
        }
        int32_t lin = (cc[0] * g->n[1] + cc[1]) * g->n[2] + cc[2];
        w->pos = cell_start[lin];
        w->end = cell_start[lin + 1];
        if (w->pos < w->end) return 1;
    }
}

/* Next candidate atom (shard index) into *j; returns 0 when done. */
MDF_HD int mdf_nl_walk_next(mdf_nl_walk *w, const mdf_nl_grid *g, const int32_t *cell_start,
                            const int32_t *sorted, int32_t *j)
{
    while (w->pos >= w->end)
        if (!mdf_nl_walk_next_cell(w, g, cell_start)) return 0;
    *j = sorted[w->pos++];
    return 1;
}

/* ---- building one atom's list ------------------------------------------ */

/* ---- list entries ------------------------------------------------------ */

/* Cartesian translation n·H (rounded as mdf_nl_image_shift). */
MDF_HD void mdf_nl_shift_of(const int32_t n[3], const double cell[9], double out[3])
{
    for (int k = 0; k < 3; k++)
        out[k] = mdf_nl_dot3((double)n[0], cell[k], (double)n[1], cell[3 + k], (double)n[2], cell[6 + k]);
}

/* Entry naming neighbour j (shard index) through translation n. */
MDF_HD uint32_t mdf_nl_entry_make(const mdf_nl_grid *g, int32_t j, const int32_t n[3])
{
    uint32_t code;
    if (!g->image_q) {
        code = (uint32_t)((n[0] + 1) * 9 + (n[1] + 1) * 3 + (n[2] + 1));
    } else {
        int32_t q = g->image_q, R = (1 << (q - 1)); /* the offset of a direction: any R' >= R fits */
        code = ((uint32_t)(n[0] + R) << (2 * q)) | ((uint32_t)(n[1] + R) << q) | (uint32_t)(n[2] + R);
    }
    return ((uint32_t)(j - g->entry_base) << g->image_bits) | code;
}

/* The neighbour (shard index) an entry names. */
MDF_HD int32_t mdf_nl_entry_atom(const mdf_nl_grid *g, uint32_t e)
{
    return g->entry_base + (int32_t)(e >> g->image_bits);
}

/* The translation n of an entry. */
MDF_HD void mdf_nl_entry_image(const mdf_nl_grid *g, uint32_t e, int32_t n[3])
{
    if (!g->image_q) {
        uint32_t code = e & MDF_NL_IMAGE_MASK;
        n[0] = (int32_t)(code / 9) - 1;
        n[1] = (int32_t)((code / 3) % 3) - 1;
        n[2] = (int32_t)(code % 3) - 1;
        return;
    }
    int32_t q = g->image_q, R = 1 << (q - 1);
    uint32_t m = (1u << q) - 1u;
    n[0] = (int32_t)((e >> (2 * q)) & m) - R;
    n[1] = (int32_t)((e >> q) & m) - R;
    n[2] = (int32_t)(e & m) - R;
}

/* The Cartesian translation of an entry (GPU threads; CPU loops use an
 * mdf_nl_shifts table, which gives the same numbers). */
MDF_HD void mdf_nl_entry_shift(const mdf_nl_grid *g, uint32_t e, const double cell[9], double out[3])
{
    int32_t n[3];
    mdf_nl_entry_image(g, e, n);
    mdf_nl_shift_of(n, cell, out);
}

/* Whether the pair (i, j, n) belongs to i's half list ("up": counted once
 * with Newton's third law): j > i, or an image of i itself whose first
 * non-zero component of n is positive (of n and -n, exactly one). */
MDF_HD int mdf_nl_pair_is_up(int32_t i, int32_t j, const int32_t n[3])
{
    if (j != i) return j > i;
    return n[0] != 0 ? n[0] > 0 : (n[1] != 0 ? n[1] > 0 : n[2] > 0);
}

/* Whether row i of a slice [lo, hi) of its system owns the pair (i, j, n)
 * in the lists of a model flagged MDF_MODEL_HALO_OWNED: inside the slice
 * as mdf_nl_pair_is_up; a pair across the slice's edges (j outside, never
 * i itself) by the parity of i + j: odd, the lower index owns it, even,
 * the higher. From j's slice the same pair gets the opposite answer, so
 * each is owned exactly once, and each row owns about half of its pairs
 * across the edges whatever the atoms' order. With j > i alone, the first
 * slice of a periodic system owned every pair across both its edges (the
 * wrap included), and once a liquid had mixed its atoms, about three
 * quarters of all pairs: two slices on two workers ran 110 us against
 * 46 us a step (864 atoms). */
MDF_HD int mdf_nl_pair_owned(int32_t i, int32_t j, const int32_t n[3], int32_t lo, int32_t hi)
{
    if (j >= lo && j < hi) return mdf_nl_pair_is_up(i, j, n);
    return ((i + j) & 1) ? j > i : j < i;
}

/* Translations of a system's entries, tabulated once per system for CPU
 * loops: the 27 codes of 5-bit entries, or n_k·H_k per direction for wide
 * ones (summed as mdf_nl_shift_of rounds: the same numbers). */
typedef struct mdf_nl_shifts {
    int32_t q, bits, base, R;
    double code[27][3];
    double axis[3][2 * MDF_NL_MAX_REACH + 2][3];
} mdf_nl_shifts;

MDF_HD void mdf_nl_shifts_init(mdf_nl_shifts *t, const mdf_nl_grid *g, const double cell[9])
{
    t->q = g->image_q;
    t->bits = g->image_bits;
    t->base = g->entry_base;
    if (!t->q) {
        for (uint32_t c = 0; c < 27; c++) mdf_nl_image_shift(c, cell, t->code[c]);
        return;
    }
    if (g->lists_off) return; /* no entries to read */
    int32_t lo = -g->reach[0], hi = g->reach[0];
    for (int k = 1; k < 3; k++) {
        lo = -g->reach[k] < lo ? -g->reach[k] : lo;
        hi = g->reach[k] > hi ? g->reach[k] : hi;
    }
    if (lo > -1) lo = -1;
    if (hi < 1) hi = 1;
    for (int k = 0; k < 3; k++)
        for (int32_t n = lo; n <= hi; n++)
            for (int c = 0; c < 3; c++) t->axis[k][n - lo][c] = mdf_nl_mul((double)n, cell[3 * k + c]);
    t->R = -lo; /* axis rows are indexed from -R */
}

/* mdf_nl_shifts_get for 5-bit entries (t->q == 0), without the test: for
 * loops specialised on the format (the common, large-cell case). */
MDF_HD int32_t mdf_nl_shifts_get5(const mdf_nl_shifts *t, uint32_t e, double sh[3])
{
    const double *c = t->code[e & MDF_NL_IMAGE_MASK];
    sh[0] = c[0];
    sh[1] = c[1];
    sh[2] = c[2];
    return (int32_t)(e >> MDF_NL_IMAGE_BITS);
}

/* Neighbour j of entry e and its translation into sh. */
MDF_HD int32_t mdf_nl_shifts_get(const mdf_nl_shifts *t, uint32_t e, double sh[3])
{
    if (!t->q) return mdf_nl_shifts_get5(t, e, sh);
    const int32_t q = t->q, off = 1 << (q - 1);
    const uint32_t m = (1u << q) - 1u;
    const int32_t a = (int32_t)((e >> (2 * q)) & m) - off + t->R, b = (int32_t)((e >> q) & m) - off + t->R,
                  c = (int32_t)(e & m) - off + t->R;
    for (int k = 0; k < 3; k++) sh[k] = mdf_nl_add(mdf_nl_add(t->axis[0][a][k], t->axis[1][b][k]), t->axis[2][c][k]);
    return t->base + (int32_t)(e >> t->bits);
}

/* ---- every image near an atom, from the cells --------------------------- */

/* Visits every (j, n) with |d| < r (squared: r2) around atom i, d as in
 * the entries (wrapped positions of the last build): the candidates of the
 * cells around i's, and along directions of fewer than three cells each
 * translation in [-R_k, R_k]; i itself with n != 0 too. Used to build the
 * lists and by atoms that have none (overflowed, or lists_off). Usage:
 *   mdf_nl_pairs_begin(&p, ...); while (mdf_nl_pairs_next(&p, &j, n, d)) ... */
typedef struct mdf_nl_pairs {
    mdf_nl_walk w;
    const mdf_nl_grid *g;
    const int32_t *cs, *sorted;
    const double *pos, *offset;
    double xi[3], xj[3], r2;
    int32_t i, j, have;
    int32_t n[3], lo[3], hi[3];
} mdf_nl_pairs;

/* cell_start_sys: the system's first cell entry (v.cell_start +
 * atom_start + s). */
MDF_HD void mdf_nl_pairs_begin(mdf_nl_pairs *p, int32_t i, const double *pos, const double *offset,
                               const mdf_nl_grid *g, const int32_t *cell_start_sys, const int32_t *sorted,
                               const int32_t *cell_of, double r2)
{
    mdf_nl_walk_begin(&p->w, g, cell_of[i]);
    p->g = g;
    p->cs = cell_start_sys;
    p->sorted = sorted;
    p->pos = pos;
    p->offset = offset;
    p->r2 = r2;
    p->i = i;
    p->j = -1;
    p->have = 0;
    for (int k = 0; k < 3; k++) p->xj[k] = 0.0, p->n[k] = p->lo[k] = p->hi[k] = 0;
    mdf_nl_wrapped(pos, offset, i, p->xi);
}

/* The translations [lo, hi] to try for atoms of walk w's current cell:
 * none along open directions, the cell's image along directions of three
 * cells or more, [-R_k, R_k] along the others (small cells). */
MDF_HD void mdf_nl_image_range(const mdf_nl_grid *g, const mdf_nl_walk *w, int32_t lo[3], int32_t hi[3])
{
    for (int k = 0; k < 3; k++) {
        if (!g->periodic[k]) lo[k] = hi[k] = 0;
        else if (g->n[k] >= 3) lo[k] = hi[k] = w->image[k];
        else {
            lo[k] = -g->reach[k];
            hi[k] = g->reach[k];
        }
    }
}

/* The translations to try for the walk's current cell. */
MDF_HD void mdf_nl_pairs_ranges(mdf_nl_pairs *p)
{
    mdf_nl_image_range(p->g, &p->w, p->lo, p->hi);
    for (int k = 0; k < 3; k++) p->n[k] = p->lo[k];
}

/* Next translation of the current candidate; 0 when all were tried. */
MDF_HD int mdf_nl_pairs_advance(mdf_nl_pairs *p)
{
    for (int k = 2; k >= 0; k--) {
        if (++p->n[k] <= p->hi[k]) return 1;
        p->n[k] = p->lo[k];
    }
    return 0;
}

MDF_HD int mdf_nl_pairs_next(mdf_nl_pairs *p, int32_t *j, int32_t n[3], double d[3])
{
    for (;;) {
        if (!p->have) {
            if (!mdf_nl_walk_next(&p->w, p->g, p->cs, p->sorted, &p->j)) return 0;
            mdf_nl_wrapped(p->pos, p->offset, p->j, p->xj);
            mdf_nl_pairs_ranges(p);
            p->have = 1;
        } else if (!mdf_nl_pairs_advance(p)) {
            p->have = 0;
            continue;
        }
        if (p->j == p->i && !(p->n[0] | p->n[1] | p->n[2])) continue;
        double sh[3];
        mdf_nl_shift_of(p->n, p->g->basis, sh);
        for (int k = 0; k < 3; k++) d[k] = p->xj[k] + sh[k] - p->xi[k];
        if (!(mdf_nl_norm2(d[0], d[1], d[2]) < p->r2)) continue;
        *j = p->j;
        n[0] = p->n[0];
        n[1] = p->n[1];
        n[2] = p->n[2];
        return 1;
    }
}

/* ---- building one atom's list ------------------------------------------ */

/* Puts a neighbour entry in an atom's slots: "up" entries (mdf_nl_pair_is_up)
 * from the front, the others from the back, counting past M (overflow)
 * without writing. */
MDF_HD void mdf_nl_slot_put(uint32_t *slots, int32_t M, uint32_t entry, int is_up, int32_t *up, int32_t *down)
{
    int32_t slot = is_up ? *up : M - 1 - *down;
    if (*up + *down < M) slots[slot] = entry;
    *up += is_up;
    *down += !is_up;
}

/* Fills atom i's slots from the binning just made (positions equal the
 * reference ones). Returns the total neighbour count, which may exceed M:
 * the caller then treats the atom as overflowed. A system without lists
 * (lists_off) reports M + 1 and writes nothing. */
MDF_HD int32_t mdf_nl_build_atom(int32_t i, const double *pos, const double *offset, const mdf_sys_info *s,
                                 const mdf_nl_grid *g, const int32_t *cell_start_sys,
                                 const int32_t *sorted, const int32_t *cell_of,
                                 double r_list2, int32_t M, uint32_t *slots,
                                 int32_t *n_up_out, int32_t *n_down_out)
{
    (void)s;
    int32_t up = 0, down = 0;
    if (g->lists_off) {
        *n_up_out = M + 1;
        *n_down_out = 0;
        return M + 1;
    }
    mdf_nl_pairs p;
    mdf_nl_pairs_begin(&p, i, pos, offset, g, cell_start_sys, sorted, cell_of, r_list2);
    int32_t j, n[3];
    double d[3];
    while (mdf_nl_pairs_next(&p, &j, n, d))
        mdf_nl_slot_put(slots, M, mdf_nl_entry_make(g, j, n), mdf_nl_pair_is_up(i, j, n), &up, &down);
    *n_up_out = up;
    *n_down_out = down;
    return up + down;
}

/* ---- reading an atom's neighbours ------------------------------------- */

/* Every neighbour image (j, d) of atom i, d = r_j - r_i as in the entries:
 * its full list (up entries from the front, the others from the back), or
 * its cells when it has none (more neighbours than slots, or a system
 * without lists). Images beyond the list radius may come from the cells:
 * filter with the model's cut-off. For many-body models that read full
 * lists (CPU and GPU alike):
 *   mdf_nl_full it;
 *   mdf_nl_full_begin(&it, i, x, &l, &v, s, sidx, chunk_atom_begin);
 *   while (mdf_nl_full_next(&it, &j, d)) ... */
typedef struct mdf_nl_full {
    mdf_nl_pairs pw;       /* the cells' walk, when walking */
    const mdf_nl_grid *g;
    const uint32_t *nb;
    const double *x, *offset, *cell;
    double xi[3];
    int32_t i;             /* the atom */
    int32_t walking, k, k_end, part, M, n_down;
} mdf_nl_full;

MDF_HD void mdf_nl_full_begin(mdf_nl_full *it, int32_t i, const double *x, const mdf_nl_list_view *l,
                              const mdf_nl_bins_view *v, const mdf_sys_info *s, int32_t sidx, int32_t atom_begin)
{
    const int32_t li = i - atom_begin, M = l->head->slots;
    it->i = i;
    it->g = &v->grid[sidx];
    it->x = x;
    it->offset = v->offset;
    it->cell = s->cell;
    it->walking = l->n_up[li] + l->n_down[li] > M;
    /* Both paths' fields are set (compilers cannot tell which is read). */
    mdf_nl_pairs_begin(&it->pw, i, x, v->offset, it->g, v->cell_start + s->atom_start + sidx, v->sorted,
                       v->cell_of, HUGE_VAL);
    for (int k = 0; k < 3; k++) it->xi[k] = it->pw.xi[k];
    it->nb = mdf_nl_row(l, li);
    it->M = M;
    it->n_down = it->walking ? 0 : l->n_down[li];
    it->part = it->walking;
    it->k = 0;
    it->k_end = it->walking ? 0 : l->n_up[li];
}

MDF_HD int mdf_nl_full_next(mdf_nl_full *it, int32_t *j, double d[3])
{
    if (it->walking) {
        int32_t n[3];
        return mdf_nl_pairs_next(&it->pw, j, n, d);
    }
    while (it->k >= it->k_end) {
        if (it->part) return 0;
        it->part = 1;
        it->k = it->M - it->n_down;
        it->k_end = it->M;
    }
    uint32_t e = it->nb[it->k++];
    double sh[3], xj[3];
    *j = mdf_nl_entry_atom(it->g, e);
    mdf_nl_entry_shift(it->g, e, it->cell, sh);
    mdf_nl_wrapped(it->x, it->offset, *j, xj);
    for (int k = 0; k < 3; k++) d[k] = xj[k] + sh[k] - it->xi[k];
    return 1;
}

/* The rebuild rule of LAMMPS's neigh_modify every N delay 0 check yes|no,
 * beyond the reasons that always rebuild (no lists yet, a changed cell):
 * at the age-th evaluation since the last binning, 0: not now; 1: now,
 * whatever the atoms did (check no); -1: now if some atom moved more than
 * skin/2 (mdf_nl_moved_too_far; check yes). every <= 1 considers every
 * evaluation, so every 1 with the check is mdflow's default rule. */
MDF_HD int mdf_nl_rebuild_due(int32_t age, int32_t every, int32_t nocheck)
{
    if (every > 1 && age % every != 0) return 0;
    return nocheck ? 1 : -1;
}

/* Whether system s moved far enough since its last build to need another:
 * some atom moved more than skin/2, the cell changed, or it never was built.
 * Checks atoms [a0, a1) of the system. */
MDF_HD int mdf_nl_moved_too_far(const double *pos, const double *ref, int32_t a0, int32_t a1,
                                double half_skin2)
{
    for (int32_t a = a0; a < a1; a++) {
        const size_t k = 3 * (size_t)a;
        double dx = pos[k] - ref[k], dy = pos[k + 1] - ref[k + 1], dz = pos[k + 2] - ref[k + 2];
        if (mdf_nl_norm2(dx, dy, dz) > half_skin2) return 1;
    }
    return 0;
}

MDF_HD int mdf_nl_cell_changed(const mdf_nl_grid *g, const mdf_sys_info *s)
{
    for (int k = 0; k < 9; k++)
        if (g->ref_cell[k] != s->cell[k]) return 1;
    return 0;
}

#endif
