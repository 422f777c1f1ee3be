/* mdflow — EAM codelets (CPU): the density pass (auxiliary, one double per
 * atom) and the energy/force pass.
 *
 * Pairs within the chunk's rows are taken once, from half lists, with
 * Newton's third law (as LAMMPS's pair_eam): half the pair work of the full
 * lists the GPU threads walk (eam_cuda.cu). Pairs with an atom of another
 * chunk (a slice of a larger system) count on this chunk's atom only, half
 * their energy and virial, so a chunk writes its rows only (MDF_PART_ROWS).
 * The table arithmetic is eam_kernel.h's, shared with the GPU. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <starpu.h>
#include "eam_codelet.h"
#include "mdflow/kernel/nlist.h"
#include "mdflow/kernel/reduce.h"

/* The sums of one atom's row (its density or its force, energy and virial):
 * a local of eam_pairs, which the compiler keeps in registers. Summing into
 * the density or force arrays instead made each pair wait on the previous
 * pair's store to the same element. ei and fp_i are the row's element and
 * F'(rho_i), read once per row. */
typedef struct eam_row {
    int32_t ei;
    double fp_i, rho, e, f[3], w[9];
    int single; /* a one-element file (a constant at each call) */
} eam_row;

#define EAM_INLINE static inline __attribute__((always_inline))

/* One pair within the cut-off: d = r_j - r_i, recip = 1 / |d|, and the
 * spline row m and offset t of every r table at r = |d| (mdf_eam_row's
 * rounding); both: j is one of the chunk's rows too (add to both atoms),
 * else to i only (j's own chunk adds its side). */
typedef struct eam_pair {
    int32_t j, both, m;
    double d[3], recip, t;
} eam_pair;

/* mdf_eam_row(r, rdr, nr, 0, t) for a distance within the cut-off (0 <=
 * r < cut, so x >= 1, and x < cut / dr + 1, which the file readers keep
 * below 2^30: (int)x is defined): the same row and offset, written without
 * mdf_eam_row's nested clamps on doubles, which (under the default
 * trapping-math) kept GCC from vectorising a loop over pairs; a clamp on x
 * before the conversion cost 12% of a batched relaxation. */
EAM_INLINE int32_t eam_row_in_cutoff(double r, double rdr, int32_t nr, double *t)
{
    const double x = mdf_nl_add(mdf_nl_mul(r, rdr), 1.0);
    int32_t m = (int32_t)x;
    m = m < nr - 1 ? m : nr - 1;
    const double p = x - (double)m;
    *t = p < 1.0 ? p : 1.0;
    return m;
}

/* A pair's recip and spline row from r2 = |d|² < cutsq, for the grid's
 * 1 / dr (rdr) and nr points: one definition for the staged rows (a loop
 * the compiler vectorises) and the cells' walk. */
EAM_INLINE void eam_pair_lengths(double r2, double rdr, int32_t nr, double *recip, int32_t *m, double *t)
{
    const double r = sqrt(r2);
    *recip = 1.0 / r;
    *m = eam_row_in_cutoff(r, rdr, nr, t);
}

/* i's side of pair q goes to the row r. */
typedef void (*eam_pair_fn)(void *user, eam_row *r, int32_t i, const eam_pair *q);
/* Before (r zeroed but for ei) and after atom i's row. */
typedef void (*eam_row_fn)(void *user, eam_row *r, int32_t i);

/* Per-task room for one row's pairs (eam_rows), slots long. */
typedef struct eam_stage {
    double *dx, *dy, *dz, *r2, *recip, *t;
    int32_t *j, *both, *m;
} eam_stage;

static int eam_stage_alloc(eam_stage *st, int32_t slots)
{
    const size_t n = (size_t)(slots > 0 ? slots : 1);
    double *d = malloc(sizeof(double) * 6 * n);
    int32_t *k = malloc(sizeof(int32_t) * 3 * n);
    if (!d || !k) {
        free(d);
        free(k);
        st->dx = NULL;
        return -1;
    }
    st->dx = d, st->dy = d + n, st->dz = d + 2 * n, st->r2 = d + 3 * n, st->recip = d + 4 * n, st->t = d + 5 * n;
    st->j = k, st->both = k + n, st->m = k + 2 * n;
    return 0;
}

static void eam_stage_free(eam_stage *st)
{
    if (!st->dx) return;
    free(st->dx);
    free(st->j);
    st->dx = NULL;
}

/* A task's working memory: room for the wrapped positions of the systems
 * chunk c touches, indexed like the positions (rows before touch_begin
 * unused; returned), and the staged rows' arrays (*st); NULL, with nothing
 * held, when either is missing. */
static double *eam_task_alloc(const mdf_chunk *c, int32_t slots, eam_stage *st)
{
    double *w = malloc(sizeof(double) * 3 * (size_t)(c->touch_end > 0 ? c->touch_end : 1));
    if (eam_stage_alloc(st, slots) == 0 && w) return w;
    eam_stage_free(st);
    free(w);
    return NULL;
}

/* The list rows [lo, hi) of system s: 5-bit entries (wide = 0) or wide ones
 * (small cells), one element or several; the flags are constants at each
 * call, so the compiler specialises every copy. A row runs in three
 * passes: gather the pairs within the cut-off into st (compacted without
 * a branch: about half a list with a 1 Å skin lies beyond it, at random);
 * then every pair's r, 1 / r and spline row at once, a loop the compiler
 * vectorises (square roots and divisions several per instruction); then
 * fn on each pair. */
EAM_INLINE void eam_rows(const double *x, const double *w, const mdf_sys_info *si, int32_t s, const mdf_nl_list_view *l,
                         const mdf_nl_bins_view *v, const mdf_nl_shifts *sh, const mdf_atom_info *atoms,
                         const mdf_eam_params *p, int32_t atom_begin, int32_t lo, int32_t hi, double cutsq,
                         int wide, int single, const eam_stage *st, eam_pair_fn fn, eam_row_fn begin,
                         eam_row_fn end, void *user)
{
    double *restrict sdx = st->dx, *restrict sdy = st->dy, *restrict sdz = st->dz, *restrict sr2 = st->r2;
    double *restrict srecip = st->recip, *restrict sst = st->t;
    int32_t *restrict sj = st->j, *restrict sboth = st->both, *restrict sm = st->m;
    const int32_t M = l->head->slots;
    const mdf_nl_grid *g = &v->grid[s];
    const int32_t *cs = v->cell_start + si->atom_start + s;
    for (int32_t i = lo; i < hi; i++) {
        const int32_t li = i - atom_begin;
        eam_row r = {0};
        r.ei = single ? 0 : mdf_eam_elem(p, atoms[i].z);
        r.single = single;
        begin(user, &r, i);
        double d[3];
        if (l->n_up[li] + l->n_down[li] > M) {
            /* more neighbours than slots: walk the cells */
            mdf_nl_pairs pw;
            mdf_nl_pairs_begin(&pw, i, x, v->offset, g, cs, v->sorted, v->cell_of, cutsq);
            int32_t j, n[3];
            while (mdf_nl_pairs_next(&pw, &j, n, d)) {
                const int inside = j >= lo && j < hi;
                if (inside && !mdf_nl_pair_is_up(i, j, n)) continue; /* from j's side */
                eam_pair q = {.j = j, .both = inside, .d = {d[0], d[1], d[2]}};
                eam_pair_lengths(mdf_nl_norm2(d[0], d[1], d[2]), p->rdr, p->nr, &q.recip, &q.m, &q.t);
                fn(user, &r, i, &q);
            }
            end(user, &r, i);
            continue;
        }
        const double xi[3] = {w[3 * (size_t)i], w[3 * (size_t)i + 1], w[3 * (size_t)i + 2]};
        const uint32_t *nb = l->slots + (size_t)li * (size_t)M;
        int32_t n = 0;
        /* Down entries (j < i) count only when j lies outside the rows (a
         * slice's edge): a chunk holding the whole system skips them all. */
        const int parts = lo == si->atom_start && hi == si->atom_start + si->natoms ? 1 : 2;
        for (int part = 0; part < parts; part++) {
            const int32_t k0 = part ? M - l->n_down[li] : 0, k1 = part ? M : l->n_up[li];
            for (int32_t k = k0; k < k1; k++) {
                double t[3];
                const int32_t j = wide ? mdf_nl_shifts_get(sh, nb[k], t) : mdf_nl_shifts_get5(sh, nb[k], t);
                const int inside = j >= lo && j < hi;
                for (int q = 0; q < 3; q++) d[q] = w[3 * (size_t)j + q] + t[q] - xi[q];
                const double r2 = mdf_nl_norm2(d[0], d[1], d[2]);
                sdx[n] = d[0], sdy[n] = d[1], sdz[n] = d[2], sr2[n] = r2, sj[n] = j, sboth[n] = inside;
                /* kept when within the cut-off and not an up entry of j's */
                n += (r2 < cutsq) & !(part && inside);
            }
        }
        const double rdr = p->rdr;
        const int32_t nr = p->nr;
#pragma omp simd
        for (int32_t k = 0; k < n; k++) eam_pair_lengths(sr2[k], rdr, nr, &srecip[k], &sm[k], &sst[k]);
        for (int32_t k = 0; k < n; k++) {
            const eam_pair q = {.j = sj[k], .both = sboth[k], .m = sm[k], .d = {sdx[k], sdy[k], sdz[k]},
                                .recip = srecip[k], .t = sst[k]};
            fn(user, &r, i, &q);
        }
        end(user, &r, i);
    }
}

/* Calls fn once for every pair (i, j, n) within the cut-off with i in
 * [lo, hi) (the chunk's rows of system s): pairs within the rows once (up
 * entries: Newton's third law, as LAMMPS's pair_eam), pairs with an atom
 * outside them (a slice of a larger system) from i's side, both = 0. An
 * atom without a list walks its cells instead. Inlined into each caller (a
 * constant fn), so the pair arithmetic is too. */
EAM_INLINE void eam_pairs(const double *x, double *w, const mdf_sys_info *si, int32_t s, const mdf_nl_list_view *l,
                          const mdf_nl_bins_view *v, const mdf_atom_info *atoms, const mdf_eam_params *p,
                          int32_t atom_begin, int32_t lo, int32_t hi, double cutsq, const eam_stage *st, eam_pair_fn fn,
                          eam_row_fn begin, eam_row_fn end, void *user)
{
    /* Wrapped positions x + o of the system, which its lists index (w is
     * indexed like x; only the system's rows are written). */
    for (int32_t k = 3 * si->atom_start; k < 3 * (si->atom_start + si->natoms); k++) w[k] = x[k] + v->offset[k];
    mdf_nl_shifts sh;
    mdf_nl_shifts_init(&sh, &v->grid[s], si->cell);
    const int single = p->nelem == 1;
    if (sh.q && single)
        eam_rows(x, w, si, s, l, v, &sh, atoms, p, atom_begin, lo, hi, cutsq, 1, 1, st, fn, begin, end, user);
    else if (sh.q)
        eam_rows(x, w, si, s, l, v, &sh, atoms, p, atom_begin, lo, hi, cutsq, 1, 0, st, fn, begin, end, user);
    else if (single)
        eam_rows(x, w, si, s, l, v, &sh, atoms, p, atom_begin, lo, hi, cutsq, 0, 1, st, fn, begin, end, user);
    else
        eam_rows(x, w, si, s, l, v, &sh, atoms, p, atom_begin, lo, hi, cutsq, 0, 0, st, fn, begin, end, user);
}

typedef struct half_density {
    const mdf_eam_params *p;
    const mdf_atom_info *atoms;
    double *rho; /* indexed by shard atom - atom_begin */
    int32_t atom_begin;
} half_density;

EAM_INLINE void density_row_begin(void *user, eam_row *r, int32_t i)
{
    (void)user, (void)r, (void)i;
}

EAM_INLINE void density_row_end(void *user, eam_row *r, int32_t i)
{
    half_density *h = (half_density *)user;
    h->rho[i - h->atom_begin] += r->rho;
}

/* ej: the neighbour's element (0 for a one-element file, where reading it
 * would be a load per pair for nothing). */
EAM_INLINE int32_t eam_elem_of(const eam_row *r, const mdf_eam_params *p, const mdf_atom_info *atoms, int32_t j)
{
    return r->single ? 0 : mdf_eam_elem(p, atoms[j].z);
}

EAM_INLINE void add_density_pair(void *user, eam_row *row, int32_t i, const eam_pair *q)
{
    (void)i;
    half_density *h = (half_density *)user;
    const mdf_eam_params *p = h->p;
    const int32_t j = q->j, both = q->both;
    const int32_t ei = row->ei, ej = eam_elem_of(row, p, h->atoms, j);
    const double t = q->t;
    /* one spline row for every table at r (mdf_eam_r_row's rounding) */
    const int64_t m = (int64_t)q->m * 7;
    const double *tab_i = mdf_eam_rhor(p, ej, ei), *tab_j = mdf_eam_rhor(p, ei, ej);
    const double rho_i = mdf_eam_value(tab_i + m, t);
    row->rho += rho_i;
    if (!both) return;
    /* one element, or eam/alloy's shared tables: the same value */
    h->rho[j - h->atom_begin] += tab_j == tab_i ? rho_i : mdf_eam_value(tab_j + m, t);
}

typedef struct half_force {
    const mdf_eam_params *p;
    const mdf_atom_info *atoms;
    const double *fp;  /* F'(rho) of the rows, indexed by shard atom - atom_begin */
    const double *rho; /* densities, indexed by shard atom (all the system's) */
    double *f;        /* indexed by shard atom */
    int32_t atom_begin, want_virial;
    double e, w[9];
} half_force;

EAM_INLINE void force_row_begin(void *user, eam_row *r, int32_t i)
{
    half_force *h = (half_force *)user;
    r->fp_i = h->fp[i - h->atom_begin];
}

EAM_INLINE void force_row_end(void *user, eam_row *r, int32_t i)
{
    half_force *h = (half_force *)user;
    for (int k = 0; k < 3; k++) h->f[3 * (size_t)i + k] += r->f[k];
    h->e += r->e;
    if (h->want_virial)
        for (int k = 0; k < 9; k++) h->w[k] += r->w[k];
}

/* As LAMMPS's pair_eam.cpp compute(): psip = F'(rho_i) rhojp + F'(rho_j)
 * rhoip + phi'(r), the pair's force on i (psip / r) (r_j - r_i). */
EAM_INLINE void add_force_pair(void *user, eam_row *row, int32_t i, const eam_pair *q)
{
    (void)i;
    half_force *h = (half_force *)user;
    const mdf_eam_params *p = h->p;
    const int32_t j = q->j, both = q->both;
    const double *d = q->d, t = q->t;
    const int32_t ei = row->ei, ej = eam_elem_of(row, p, h->atoms, j);
    const int64_t m = (int64_t)q->m * 7;
    const double *tab_ip = mdf_eam_rhor(p, ei, ej), *tab_jp = mdf_eam_rhor(p, ej, ei);
    const double rhoip = mdf_eam_deriv(tab_ip + m, t);
    const double rhojp = tab_jp == tab_ip ? rhoip : mdf_eam_deriv(tab_jp + m, t);
    const double *c = mdf_eam_z2r(p, ei, ej) + m;
    const double z2p = mdf_eam_deriv(c, t), z2 = mdf_eam_value(c, t);
    const double recip = q->recip, phi = z2 * recip, phip = z2p * recip - phi * recip;
    const double fp_j = both ? h->fp[j - h->atom_begin] : mdf_eam_embed_deriv(p, ej, h->rho[j]);
    const double psip = row->fp_i * rhojp + fp_j * rhoip + phip;
    const double fpair = -psip * recip; /* force on i: -fpair (r_j - r_i) */
    const double share = both ? 1.0 : 0.5; /* of the energy and virial */
    row->e += share * phi;
    for (int k = 0; k < 3; k++) row->f[k] -= fpair * d[k];
    if (both)
        for (int k = 0; k < 3; k++) h->f[3 * (size_t)j + k] += fpair * d[k];
    if (h->want_virial)
        for (int x = 0; x < 3; x++)
            for (int y = 0; y < 3; y++) row->w[3 * x + y] += share * d[x] * d[y] * fpair;
}

MDF_CPU_CLONES void mdf_eam_aux_cpu(void *buffers[], void *cl_arg)
{
    const mdf_model_args *a = (const mdf_model_args *)cl_arg;
    const double *x = (const double *)STARPU_VECTOR_GET_PTR(buffers[0]);
    const mdf_atom_info *atoms = (const mdf_atom_info *)STARPU_VECTOR_GET_PTR(buffers[1]);
    const mdf_sys_info *sys = (const mdf_sys_info *)STARPU_VECTOR_GET_PTR(buffers[2]);
    mdf_nl_list_view l = mdf_nl_list_map((void *)STARPU_VECTOR_GET_PTR(buffers[3]));
    mdf_nl_bins_view v = mdf_nl_bins_map((void *)STARPU_VECTOR_GET_PTR(buffers[4]));
    double *rho = (double *)STARPU_VECTOR_GET_PTR(buffers[5]);
    const mdf_eam_params *p = (const mdf_eam_params *)STARPU_VECTOR_GET_PTR(buffers[6]);
    eam_stage st;
    double *w = eam_task_alloc(&a->chunk, l.head->slots, &st);
    for (int32_t s = a->chunk.sys_begin; s < a->chunk.sys_end; s++) {
        if (!w) { /* out of memory inside a task: NaN densities make it impossible to miss */
            for (int32_t i = a->chunk.atom_begin; i < a->chunk.atom_end; i++) rho[i - a->chunk.atom_begin] = NAN;
            break;
        }
        if (!mdf_status_in(sys[s].status, a->status_lo, a->status_hi)) continue;
        int32_t i0, i1;
        mdf_chunk_rows(&a->chunk, &sys[s], &i0, &i1);
        for (int32_t i = i0; i < i1; i++) rho[i - a->chunk.atom_begin] = 0.0;
        half_density h = {p, atoms, rho, a->chunk.atom_begin};
        eam_pairs(x, w, &sys[s], s, &l, &v, atoms, p, a->chunk.atom_begin, i0, i1, p->cutsq, &st, add_density_pair,
                  density_row_begin, density_row_end, &h);
    }
    eam_stage_free(&st);
    free(w);
}

MDF_CPU_CLONES void mdf_eam_cpu(void *buffers[], void *cl_arg)
{
    const mdf_model_args *a = (const mdf_model_args *)cl_arg;
    const double *x = (const double *)STARPU_VECTOR_GET_PTR(buffers[0]);
    const mdf_atom_info *atoms = (const mdf_atom_info *)STARPU_VECTOR_GET_PTR(buffers[1]);
    const mdf_sys_info *sys = (const mdf_sys_info *)STARPU_VECTOR_GET_PTR(buffers[2]);
    mdf_nl_list_view l = mdf_nl_list_map((void *)STARPU_VECTOR_GET_PTR(buffers[3]));
    mdf_nl_bins_view v = mdf_nl_bins_map((void *)STARPU_VECTOR_GET_PTR(buffers[4]));
    double *f = (double *)STARPU_VECTOR_GET_PTR(buffers[5]);
    mdf_sys_result *res = (mdf_sys_result *)STARPU_VECTOR_GET_PTR(buffers[6]);
    const mdf_eam_params *p = (const mdf_eam_params *)STARPU_VECTOR_GET_PTR(buffers[7]);
    const double *rho = (const double *)STARPU_VECTOR_GET_PTR(buffers[8]);
    /* F'(rho) of the chunk's rows */
    double *fp = (double *)malloc(sizeof(double) * (size_t)(a->chunk.atom_end - a->chunk.atom_begin + 1));
    eam_stage st;
    double *w = eam_task_alloc(&a->chunk, l.head->slots, &st);
    for (int32_t s = a->chunk.sys_begin; s < a->chunk.sys_end; s++) {
        if (!mdf_status_in(sys[s].status, a->status_lo, a->status_hi)) continue;
        int32_t i0, i1;
        mdf_chunk_rows(&a->chunk, &sys[s], &i0, &i1);
        mdf_sys_result *r = &res[s];
        r->energy = 0.0;
        if (a->want_virial) memset(r->virial, 0, sizeof r->virial);
        r->virial_fresh = a->want_virial != 0;
        if (a->partial) mdf_part_mark(r, MDF_PART_ROWS);
        if (!fp || !w) { /* out of memory inside a task: make it impossible to miss */
            r->energy = NAN;
            continue;
        }
        half_force h = {p, atoms, fp, rho, f, a->chunk.atom_begin, a->want_virial, 0.0, {0}};
        for (int32_t i = i0; i < i1; i++) {
            double d;
            h.e += mdf_eam_embed(p, mdf_eam_elem(p, atoms[i].z), rho[i], &d);
            fp[i - a->chunk.atom_begin] = d;
            f[3 * (size_t)i] = f[3 * (size_t)i + 1] = f[3 * (size_t)i + 2] = 0.0;
        }
        eam_pairs(x, w, &sys[s], s, &l, &v, atoms, p, a->chunk.atom_begin, i0, i1, p->cutsq, &st, add_force_pair,
                  force_row_begin, force_row_end, &h);
        r->energy += h.e;
        if (a->want_virial)
            for (int k = 0; k < 9; k++) r->virial[k] += h.w[k];
    }
    eam_stage_free(&st);
    free(fp);
    free(w);
}
