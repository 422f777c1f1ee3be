/* mdflow — a generic CPU codelet for pair models (header only).
 *
 * A pair model's physics is two inline functions over a parameter blob P
 * (the blob its setup fills, see mdflow/extension.h), written with MDF_HD
 * in a kernel header that the CPU and the CUDA codelet share:
 *
 *   MDF_HD double rc2_fn(const P *p, int32_t zi, int32_t zj);
 *       the squared cutoff of a pair of elements zi, zj (Å²);
 *   MDF_HD double pair_fn(const P *p, int32_t zi, int32_t zj, double r2, double *fpair);
 *       the energy of one pair at squared distance r2 < rc2 (eV), and
 *       *fpair such that the force on i is -fpair * (r_j - r_i) (eV/Å²;
 *       positive when the pair repels).
 *
 * Then, in one C file,
 *
 *   #include "mdflow/pair.h"
 *   MDF_PAIR_CPU_CODELET(morse_cpu, morse_params, morse_rc2, morse_pair)
 *
 * defines `void morse_cpu(void *buffers[], void *cl_arg)`, a complete
 * model codelet (mdf_model_def.cpu_func) with the buffer layout and the
 * mdf_model_args contract of mdflow/extension.h:
 *
 *   - the chunk's systems whose status is in [status_lo, status_hi] get
 *     their forces over the touch range zeroed, then energy, forces and
 *     (with want_virial) virial from the half lists with Newton's third
 *     law, each pair once; virial_fresh says whether the virial is new;
 *   - a slice of a large system (a chunk holding only part of it) counts
 *     pairs inside the slice once and pairs across its edges half, on its
 *     own atoms only, so that the slices' parts sum right whichever worker
 *     (CPU or GPU) ran each; with `partial` each system's result is marked
 *     with what the task wrote (MDF_PART_ROWS or MDF_PART_TOUCH,
 *     mdflow/kernel/reduce.h);
 *   - an atom with more neighbours than list slots (overflowed) is
 *     evaluated by walking its cells directly;
 *   - out of memory inside the task (nothing to return an error to), the
 *     chunk's energies become NaN, which a run's checks report.
 *
 * The virial is W = Σ_pairs (r_i - r_j) ⊗ f_i (see mdflow/batch.h), i.e.
 * fpair d ⊗ d per pair with d = r_j - r_i. Pair distances use the wrapped
 * positions of the last list build (mdflow/kernel/nlist.h), so the images
 * are those the lists chose.
 *
 * Pairs at or beyond the cutoff are skipped before pair_fn is called, so it
 * may assume r2 < rc2 (and r2 > 0: an atom is never its own neighbour).
 * The built-in Lennard-Jones codelet (codelets/lj/lj_cpu.c) is this driver
 * with LJ's arithmetic, plus a dense all-pairs path for small clusters,
 * which a model built on this driver leaves off (mdf_model_setup's
 * all_pairs_atoms = 0: the lists never flag its systems). */
#ifndef MDFLOW_PAIR_H
#define MDFLOW_PAIR_H

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <starpu.h>
#include "mdflow/extension.h"
#include "mdflow/kernel.h"
#include "mdflow/kernel/nlist.h"
#include "mdflow/kernel/reduce.h"

/* The driver's functions are inlined into each codelet, so that the pair
 * functions (passed as constant pointers) are inlined into the loops: one
 * specialised copy per model, as a C++ template would give. */
#if defined(__GNUC__)
#define MDF_PAIR_INLINE static inline __attribute__((always_inline))
#else
#define MDF_PAIR_INLINE static inline
#endif

typedef double (*mdf_pair_rc2_fn)(const void *p, int32_t zi, int32_t zj);
typedef double (*mdf_pair_energy_fn)(const void *p, int32_t zi, int32_t zj, double r2, double *fpair);

/* What the loops need besides the atoms: the model's two functions and
 * blob, and whether to sum the virial. */
typedef struct mdf_pair_ctx {
    mdf_pair_rc2_fn rc2;
    mdf_pair_energy_fn pair;
    const void *p;
    int virial;
} mdf_pair_ctx;

typedef struct mdf_pair_acc {
    double e;
    double w[9];
} mdf_pair_acc;

/* Adds a row's sums to a task's. */
MDF_PAIR_INLINE void mdf_pair_acc_add(mdf_pair_acc *acc, const mdf_pair_acc *row, int virial)
{
    acc->e += row->e;
    if (virial)
        for (int k = 0; k < 9; k++) acc->w[k] += row->w[k];
}

MDF_PAIR_INLINE void mdf_pair_add_virial(double w[9], const double d[3], double fpair, double scale)
{
    for (int a = 0; a < 3; a++)
        for (int b = 0; b < 3; b++) w[3 * a + b] += scale * d[a] * d[b] * fpair;
}

/* A pair with both atoms in the task's range: forces on i (into fi) and j,
 * all of its energy and virial. */
MDF_PAIR_INLINE void mdf_pair_add_full(const mdf_pair_ctx *c, int32_t zi, int32_t zj, const double d[3], double *fi,
                                       double *fj, mdf_pair_acc *acc, int virial)
{
    double r2 = d[0] * d[0] + d[1] * d[1] + d[2] * d[2];
    if (!(r2 < c->rc2(c->p, zi, zj))) return;
    double fpair;
    acc->e += c->pair(c->p, zi, zj, r2, &fpair);
    for (int k = 0; k < 3; k++) {
        fi[k] -= d[k] * fpair;
        fj[k] += d[k] * fpair;
    }
    if (virial) mdf_pair_add_virial(acc->w, d, fpair, 1.0);
}

/* A pair that crosses the edge of a slice: force on i only, half its
 * energy and virial; the slice holding j counts the other half. */
MDF_PAIR_INLINE void mdf_pair_add_half(const mdf_pair_ctx *c, int32_t zi, int32_t zj, const double d[3], double *fi,
                                       mdf_pair_acc *acc, int virial)
{
    double r2 = d[0] * d[0] + d[1] * d[1] + d[2] * d[2];
    if (!(r2 < c->rc2(c->p, zi, zj))) return;
    double fpair;
    acc->e += 0.5 * c->pair(c->p, zi, zj, r2, &fpair);
    for (int k = 0; k < 3; k++) fi[k] -= d[k] * fpair;
    if (virial) mdf_pair_add_virial(acc->w, d, fpair, 0.5);
}

/* Atom i with more neighbours than list slots: its cells walked directly,
 * with the wrapped positions of the last build. Within [lo, hi) (the
 * system, or the slice) each pair is counted once, from its lower atom;
 * pairs with j outside count half, on i only. */
MDF_PAIR_INLINE void mdf_pair_atom_from_cells(const mdf_pair_ctx *c, int32_t i, const double *x, double *f,
                                              const mdf_atom_info *atoms, const mdf_sys_info *s, int32_t sidx,
                                              const mdf_nl_bins_view *v, mdf_pair_acc *acc, int32_t lo, int32_t hi)
{
    const mdf_nl_grid *g = &v->grid[sidx];
    const int32_t *cs = v->cell_start + s->atom_start + sidx;
    const int32_t zi = atoms[i].z;
    mdf_nl_pairs pw;
    mdf_nl_pairs_begin(&pw, i, x, v->offset, g, cs, v->sorted, v->cell_of, HUGE_VAL);
    int32_t j, n[3];
    double d[3];
    while (mdf_nl_pairs_next(&pw, &j, n, d)) {
        int inside = j >= lo && j < hi;
        if (inside && !mdf_nl_pair_is_up(i, j, n)) continue; /* counted from the other end */
        if (inside) mdf_pair_add_full(c, zi, atoms[j].z, d, f + 3 * i, f + 3 * j, acc, c->virial);
        else mdf_pair_add_half(c, zi, atoms[j].z, d, f + 3 * i, acc, c->virial);
    }
}

/* Atom i of a slice [lo, hi) of a large system: pairs inside the slice once
 * (Newton), pairs with an atom outside half, on i only. j > i comes from the
 * front of the list, j < i from the back. */
MDF_PAIR_INLINE void mdf_pair_atom_slice(const mdf_pair_ctx *c, int32_t i, int32_t lo, int32_t hi, int wide,
                                         const double *w,
                                         double *f, const mdf_atom_info *atoms, const uint32_t *nb, int32_t n_up,
                                         int32_t n_down, int32_t M, const mdf_nl_shifts *t, mdf_pair_acc *acc)
{
    const double xi[3] = {w[3 * i], w[3 * i + 1], w[3 * i + 2]};
    const int32_t zi = atoms[i].z;
    /* The row's sums in locals (registers): summing into *acc or f through
     * pointers that may alias the force rows made each pair wait on the
     * previous pair's store. */
    double fi[3] = {0.0, 0.0, 0.0};
    mdf_pair_acc row = {0.0, {0.0}};
    for (int part = 0; part < 2; part++) {
        int32_t k0 = part ? M - n_down : 0, k1 = part ? M : n_up;
        for (int32_t k = k0; k < k1; k++) {
            double sh[3];
            int32_t j = wide ? mdf_nl_shifts_get(t, nb[k], sh) : mdf_nl_shifts_get5(t, nb[k], sh);
            int inside = j >= lo && j < hi;
            if (part && inside) continue; /* counted by j's own row, with Newton */
            double d[3] = {w[3 * j] + sh[0] - xi[0], w[3 * j + 1] + sh[1] - xi[1], w[3 * j + 2] + sh[2] - xi[2]};
            if (inside) mdf_pair_add_full(c, zi, atoms[j].z, d, fi, f + 3 * j, &row, c->virial);
            else mdf_pair_add_half(c, zi, atoms[j].z, d, fi, &row, c->virial);
        }
    }
    for (int k = 0; k < 3; k++) f[3 * i + k] += fi[k];
    mdf_pair_acc_add(acc, &row, c->virial);
}

/* The half-list row of atom i of a whole system (each pair once). `virial`
 * and `wide` (entries of small cells) are constants at each call, so the
 * compiler makes a copy of the loop for each. */
MDF_PAIR_INLINE void mdf_pair_atom_list(const mdf_pair_ctx *c, int32_t i, int virial, int wide, const double *w,
                                        double *f,
                                        const mdf_atom_info *atoms, const uint32_t *nb, int32_t n,
                                        const mdf_nl_shifts *t, mdf_pair_acc *acc)
{
    const double xi[3] = {w[3 * i], w[3 * i + 1], w[3 * i + 2]};
    const int32_t zi = atoms[i].z;
    double fi[3] = {0.0, 0.0, 0.0};
    mdf_pair_acc row = {0.0, {0.0}}; /* in registers, as in mdf_pair_atom_slice */
    for (int32_t k = 0; k < n; k++) {
        double sh[3];
        int32_t j = wide ? mdf_nl_shifts_get(t, nb[k], sh) : mdf_nl_shifts_get5(t, nb[k], sh);
        double d[3] = {w[3 * j] + sh[0] - xi[0], w[3 * j + 1] + sh[1] - xi[1], w[3 * j + 2] + sh[2] - xi[2]};
        mdf_pair_add_full(c, zi, atoms[j].z, d, fi, f + 3 * j, &row, virial);
    }
    for (int k = 0; k < 3; k++) f[3 * i + k] += fi[k];
    mdf_pair_acc_add(acc, &row, virial);
}

/* Whether chunk ch holds only part of system s (a slice). */
MDF_PAIR_INLINE int mdf_pair_is_slice(const mdf_chunk *ch, const mdf_sys_info *s)
{
    return ch->atom_begin > s->atom_start || ch->atom_end < s->atom_start + s->natoms;
}

/* System s (index sidx): the rows of its atoms that chunk ch owns. w holds
 * room for the wrapped positions, indexed like x. */
MDF_PAIR_INLINE void mdf_pair_system(const mdf_pair_ctx *c, int32_t sidx, const mdf_chunk *ch, const double *x,
                                     double *w, double *f, const mdf_atom_info *atoms, const mdf_sys_info *s,
                                     const mdf_nl_list_view *l, const mdf_nl_bins_view *v, mdf_sys_result *r)
{
    const int slice = mdf_pair_is_slice(ch, s);
    /* Wrapped positions x + o of the system, which its lists index. */
    for (int32_t k = 3 * s->atom_start; k < 3 * (s->atom_start + s->natoms); k++) w[k] = x[k] + v->offset[k];
    mdf_nl_shifts shift;
    mdf_nl_shifts_init(&shift, &v->grid[sidx], s->cell);
    int32_t i0, i1;
    mdf_chunk_rows(ch, s, &i0, &i1);
    const int32_t M = l->head->slots;
    const int32_t lo = slice ? ch->atom_begin : s->atom_start, hi = slice ? ch->atom_end : s->atom_start + s->natoms;
    mdf_pair_acc acc;
    memset(&acc, 0, sizeof acc);
    for (int32_t i = i0; i < i1; i++) {
        int32_t li = i - ch->atom_begin;
        const uint32_t *nb = mdf_nl_row(l, li);
        if (l->n_up[li] + l->n_down[li] > M)
            mdf_pair_atom_from_cells(c, i, x, f, atoms, s, sidx, v, &acc, lo, hi);
        else if (slice)
            mdf_pair_atom_slice(c, i, lo, hi, shift.q != 0, w, f, atoms, nb, l->n_up[li], l->n_down[li], M, &shift,
                                &acc); /* (the entry test is cheap next to a slice's cross-edge checks) */
        else if (shift.q) /* wide entries (small cells) */
            mdf_pair_atom_list(c, i, 1, 1, w, f, atoms, nb, l->n_up[li], &shift, &acc);
        else if (c->virial)
            mdf_pair_atom_list(c, i, 1, 0, w, f, atoms, nb, l->n_up[li], &shift, &acc);
        else
            mdf_pair_atom_list(c, i, 0, 0, w, f, atoms, nb, l->n_up[li], &shift, &acc);
    }
    r->energy += acc.e;
    if (c->virial)
        for (int k = 0; k < 9; k++) r->virial[k] += acc.w[k];
}

/* The codelet body (see the top of this file). */
MDF_PAIR_INLINE void mdf_pair_cpu_run(void *buffers[], void *cl_arg, mdf_pair_rc2_fn rc2, mdf_pair_energy_fn pair)
{
    const mdf_model_args *args = (const mdf_model_args *)cl_arg;
    const double *x = (const double *)STARPU_VECTOR_GET_PTR(buffers[0]);
    const mdf_atom_info *atoms = (const mdf_atom_info *)STARPU_VECTOR_GET_PTR(buffers[1]);
    const mdf_sys_info *sys = (const mdf_sys_info *)STARPU_VECTOR_GET_PTR(buffers[2]);
    mdf_nl_list_view l = mdf_nl_list_map((void *)STARPU_VECTOR_GET_PTR(buffers[3]));
    mdf_nl_bins_view v = mdf_nl_bins_map((void *)STARPU_VECTOR_GET_PTR(buffers[4]));
    double *f = (double *)STARPU_VECTOR_GET_PTR(buffers[5]);
    mdf_sys_result *res = (mdf_sys_result *)STARPU_VECTOR_GET_PTR(buffers[6]);
    const mdf_chunk *ch = &args->chunk;
    mdf_pair_ctx c; /* (no designated initialisers: the header compiles as C++ too) */
    c.rc2 = rc2;
    c.pair = pair;
    c.p = (const void *)STARPU_VECTOR_GET_PTR(buffers[7]);
    c.virial = args->want_virial != 0;
    /* Wrapped positions, indexed like x (entries before touch_begin unused). */
    double *w = (double *)malloc(sizeof(double) * 3 * (size_t)(ch->touch_end > 0 ? ch->touch_end : 1));
    if (!w) {
        for (int32_t s = ch->sys_begin; s < ch->sys_end; s++) res[s].energy = NAN;
        return;
    }
    for (int32_t s = ch->sys_begin; s < ch->sys_end; s++) {
        if (!mdf_status_in(sys[s].status, args->status_lo, args->status_hi)) continue;
        /* The part of the touch range that is this system's. */
        int32_t t0 = sys[s].atom_start > ch->touch_begin ? sys[s].atom_start : ch->touch_begin;
        int32_t t1 = sys[s].atom_start + sys[s].natoms;
        if (t1 > ch->touch_end) t1 = ch->touch_end;
        if (t1 > t0) memset(f + 3 * (size_t)t0, 0, sizeof(double) * 3 * (size_t)(t1 - t0));
        res[s].energy = 0.0;
        if (args->want_virial) memset(res[s].virial, 0, sizeof res[s].virial);
        res[s].virial_fresh = args->want_virial != 0;
        /* A slice's part holds its own rows, as a GPU's; a part of whole
         * systems holds them whole. */
        if (args->partial) mdf_part_mark(&res[s], mdf_pair_is_slice(ch, &sys[s]) ? MDF_PART_ROWS : MDF_PART_TOUCH);
        mdf_pair_system(&c, s, ch, x, w, f, atoms, &sys[s], &l, &v, &res[s]);
    }
    free(w);
}

/* Defines `void fn_name(void *buffers[], void *cl_arg)`: the CPU codelet
 * of the pair model whose blob is a params_type and whose arithmetic is
 * rc2_fn and pair_fn (see the top of this file). */
#define MDF_PAIR_CPU_CODELET(fn_name, params_type, rc2_fn, pair_fn)                                   \
    static inline double fn_name##_rc2_(const void *p_, int32_t zi_, int32_t zj_)                      \
    {                                                                                                 \
        return rc2_fn((const params_type *)p_, zi_, zj_);                                             \
    }                                                                                                 \
    static inline double fn_name##_pair_(const void *p_, int32_t zi_, int32_t zj_, double r2_,         \
                                         double *fpair_)                                              \
    {                                                                                                 \
        return pair_fn((const params_type *)p_, zi_, zj_, r2_, fpair_);                               \
    }                                                                                                 \
    void fn_name(void *buffers[], void *cl_arg);                                                      \
    void fn_name(void *buffers[], void *cl_arg) { mdf_pair_cpu_run(buffers, cl_arg, fn_name##_rc2_, fn_name##_pair_); }

#endif
