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

static int eam_stage_alloc(eam_stage *st, int64_t slots)
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

/* Stages row i's pairs within the cut-off from its list (at most M
 * entries) into st from index `at` on, and returns their count:
 * positions d = r_j - r_i, r² in st->r2, j and whether j is one of the
 * rows (both; left unwritten for a whole system, parts 1, where every j
 * is). 5-bit entries (wide = 0) or wide ones (small cells); the
 * flag is a constant at each call, so the compiler specialises every copy.
 * Compacted without a branch: about half a list with a 1 Å skin lies
 * beyond the cut-off, at random. Down entries (j < i) count only when j
 * lies outside the rows (a slice's edge): a chunk holding the whole system
 * (parts 1) skips them all. */
EAM_INLINE int32_t eam_row_gather(const double *w, const mdf_nl_list_view *l, const mdf_nl_shifts *sh, int32_t li,
                                  int32_t i, int32_t lo, int32_t hi, int parts, double cutsq, int wide,
                                  const eam_stage *st, int64_t at)
{
    double *restrict sdx = st->dx + at, *restrict sdy = st->dy + at, *restrict sdz = st->dz + at;
    double *restrict sr2 = st->r2 + at;
    int32_t *restrict sj = st->j + at, *restrict sboth = st->both + at;
    const int32_t M = l->head->slots;
    const double xi[3] = {w[3 * (size_t)i], w[3 * (size_t)i + 1], w[3 * (size_t)i + 2]};
    const uint32_t *nb = mdf_nl_row(l, li);
    int32_t n = 0;
    for (int part = 0; part < parts; part++) {
        const int32_t k0 = part ? M - l->n_down[li] : 0, k1 = part ? M : l->n_up[li];
        for (int32_t k = k0; k < k1; k++) {
            double t[3], d[3];
            const int32_t j = wide ? mdf_nl_shifts_get(sh, nb[k], t) : mdf_nl_shifts_get5(sh, nb[k], t);
            for (int q = 0; q < 3; q++) d[q] = w[3 * (size_t)j + q] + t[q] - xi[q];
            const double r2 = mdf_nl_norm2(d[0], d[1], d[2]);
            sdx[n] = d[0], sdy[n] = d[1], sdz[n] = d[2], sr2[n] = r2, sj[n] = j;
            if (parts == 1) { /* the whole system: every j is one of the rows (both, eam_stage_apply) */
                n += r2 < cutsq;
                continue;
            }
            const int inside = j >= lo && j < hi;
            sboth[n] = inside;
            /* kept when within the cut-off and not an up entry of j's */
            n += (r2 < cutsq) & !(part && inside);
        }
    }
    return n;
}

/* Every staged pair's r, 1 / r and spline row, [k0, k1): a loop the
 * compiler vectorises (square roots and divisions several per
 * instruction). */
EAM_INLINE void eam_stage_lengths(const eam_stage *st, int64_t k0, int64_t k1, double rdr, int32_t nr)
{
    const double *restrict sr2 = st->r2;
    double *restrict srecip = st->recip, *restrict sst = st->t;
    int32_t *restrict sm = st->m;
#pragma omp simd
    for (int64_t k = k0; k < k1; k++) eam_pair_lengths(sr2[k], rdr, nr, &srecip[k], &sm[k], &sst[k]);
}

/* fn on staged pairs [k0, k1) of row i (whole: of a system held whole,
 * every pair between two of its rows). */
EAM_INLINE void eam_stage_apply(const eam_stage *st, int64_t k0, int64_t k1, int whole, eam_pair_fn fn, void *user,
                                eam_row *r, int32_t i)
{
    for (int64_t k = k0; k < k1; k++) {
        const eam_pair q = {.j = st->j[k], .both = whole ? 1 : st->both[k], .m = st->m[k],
                            .d = {st->dx[k], st->dy[k], st->dz[k]}, .recip = st->recip[k], .t = st->t[k]};
        fn(user, r, i, &q);
    }
}

/* Whether row li holds more neighbours than its list's slots (it walks
 * its cells instead). */
static inline int eam_row_overflows(const mdf_nl_list_view *l, int32_t li)
{
    return l->n_up[li] + l->n_down[li] > l->head->slots;
}

/* List rows ahead of the one gathered: a row's entries lie at its front,
 * M slots after the previous row's, a stride the hardware prefetchers
 * follow poorly; a system's rows stream from beyond the caches (about 13%
 * of a batched relaxation's step loop). */
#define EAM_PREFETCH_ROWS 4

/* Asks for list row li's entries (up, then down) before they are read. */
EAM_INLINE void eam_prefetch_row(const mdf_nl_list_view *l, int32_t li)
{
    const int32_t M = l->head->slots;
    const uint32_t *row = mdf_nl_row(l, li);
    for (int32_t k = 0; k < l->n_up[li]; k += 16) __builtin_prefetch(row + k);
    for (int32_t k = M - l->n_down[li]; k < M; k += 16) __builtin_prefetch(row + k);
}

/* A row's sums with the element fields set. */
EAM_INLINE eam_row eam_row_start(const mdf_eam_params *p, const mdf_atom_info *atoms, int32_t i, int single)
{
    eam_row r = {0};
    r.ei = single ? 0 : mdf_eam_elem(p, atoms[i].z);
    r.single = single;
    return r;
}

/* The list rows [lo, hi) of system s, one element or several (single, a
 * constant at each call). A row runs in three passes: gather its pairs
 * within the cut-off into st (eam_row_gather), then every pair's lengths
 * at once (eam_stage_lengths), then fn on each pair. A row with more
 * neighbours than slots walks its cells. */
EAM_INLINE void eam_rows(const double *x, const double *w, const mdf_sys_info *si, int32_t s, const mdf_nl_list_view *l,
                         const mdf_nl_bins_view *v, const mdf_nl_shifts *sh, const mdf_atom_info *atoms,
                         const mdf_eam_params *p, int32_t atom_begin, int32_t lo, int32_t hi, double cutsq,
                         int wide, int single, const eam_stage *st, eam_pair_fn fn, eam_row_fn begin,
                         eam_row_fn end, void *user)
{
    const mdf_nl_grid *g = &v->grid[s];
    const int32_t *cs = v->cell_start + si->atom_start + s;
    const int parts = lo == si->atom_start && hi == si->atom_start + si->natoms ? 1 : 2;
    for (int32_t i = lo; i < hi; i++) {
        const int32_t li = i - atom_begin;
        if (i + EAM_PREFETCH_ROWS < hi) eam_prefetch_row(l, li + EAM_PREFETCH_ROWS);
        eam_row r = eam_row_start(p, atoms, i, single);
        begin(user, &r, i);
        if (eam_row_overflows(l, li)) {
            /* more neighbours than slots: walk the cells */
            mdf_nl_pairs pw;
            mdf_nl_pairs_begin(&pw, i, x, v->offset, g, cs, v->sorted, v->cell_of, cutsq);
            int32_t j, n[3];
            double d[3];
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
        const int32_t n = eam_row_gather(w, l, sh, li, i, lo, hi, parts, cutsq, wide, st, 0);
        eam_stage_lengths(st, 0, n, p->rdr, p->nr);
        eam_stage_apply(st, 0, n, parts == 1, fn, user, &r, i);
        end(user, &r, i);
    }
}

/* The wrapped positions x + o of system s, which its lists index, into w
 * (indexed like x; only the system's rows are written), and its list
 * entries' translations into sh. */
EAM_INLINE void eam_wrap_system(const double *x, double *w, const mdf_sys_info *si, int32_t s,
                                const mdf_nl_bins_view *v, mdf_nl_shifts *sh)
{
    for (int32_t k = 3 * si->atom_start; k < 3 * (si->atom_start + si->natoms); k++) w[k] = x[k] + v->offset[k];
    mdf_nl_shifts_init(sh, &v->grid[s], si->cell);
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
    mdf_nl_shifts sh;
    eam_wrap_system(x, w, si, s, v, &sh);
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

/* F(rho_i) of rows [lo, hi) summed into h->e, in row order, and F'(rho_i)
 * into fp (by row - h->atom_begin, as h->fp); rho by shard atom. */
EAM_INLINE void eam_embed_rows(const mdf_eam_params *p, const mdf_atom_info *atoms, int32_t lo, int32_t hi,
                               const double *rho, double *fp, half_force *h)
{
    for (int32_t i = lo; i < hi; i++) {
        double d;
        h->e += mdf_eam_embed(p, mdf_eam_elem(p, atoms[i].z), rho[i], &d);
        fp[i - h->atom_begin] = d;
    }
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

/* ---- both passes in one task (fuse_aux: the chunk holds its systems whole) ---- */

/* Staged pairs a fused system may hold (60 bytes each): a larger system
 * runs its two passes one after the other over the lists instead. */
#define EAM_FUSED_MAX_PAIRS ((int64_t)1 << 18)

/* A fused task's working memory: the staged pairs of one system (cap
 * slots) and where each of its rows ends among them. */
typedef struct eam_fused_ws {
    eam_stage st;
    int64_t cap;
    int64_t *row_end;
} eam_fused_ws;

/* Room for `slots` staged pairs (kept when there is already as much). */
static int eam_fused_reserve(eam_fused_ws *fw, int64_t slots)
{
    if (slots <= fw->cap) return 0;
    eam_stage_free(&fw->st);
    fw->cap = 0;
    if (eam_stage_alloc(&fw->st, slots) != 0) return -1;
    fw->cap = slots;
    return 0;
}

/* The pair slots system rows [lo, hi) need when staged whole (their list
 * fronts; parts 1), or -1 when a row walks its cells instead. */
static int64_t eam_fused_slots(const mdf_nl_list_view *l, int32_t atom_begin, int32_t lo, int32_t hi)
{
    int64_t n = 0;
    for (int32_t i = lo; i < hi; i++) {
        if (eam_row_overflows(l, i - atom_begin)) return -1;
        n += l->n_up[i - atom_begin];
    }
    return n;
}

/* A whole system's rows [lo, hi), staged once for both passes: every pair
 * within the cut-off gathered and its lengths taken (the work the two
 * tasks each did), then the densities (into rho, by shard atom), F'(rho)
 * (into fp, by chunk row, which h->fp is too) and the embedding energies
 * (into h->e), then
 * the forces. Each pass meets the pairs in the order eam_rows gives them,
 * so the sums are those of the two tasks, bit for bit. */
EAM_INLINE void eam_fused_rows(const double *w, const mdf_nl_list_view *l, const mdf_nl_shifts *sh,
                               const mdf_atom_info *atoms, const mdf_eam_params *p, int32_t atom_begin, int32_t lo,
                               int32_t hi, double cutsq, int wide, int single, eam_fused_ws *fw, double *rho,
                               double *fp, half_force *h)
{
    const eam_stage *st = &fw->st;
    int64_t at = 0;
    for (int32_t i = lo; i < hi; i++) {
        if (i + EAM_PREFETCH_ROWS < hi) eam_prefetch_row(l, i + EAM_PREFETCH_ROWS - atom_begin);
        at += eam_row_gather(w, l, sh, i - atom_begin, i, lo, hi, 1, cutsq, wide, st, at);
        fw->row_end[i - lo] = at;
    }
    eam_stage_lengths(st, 0, at, p->rdr, p->nr);
    half_density hd = {p, atoms, rho, 0};
    for (int32_t i = lo; i < hi; i++) rho[i] = 0.0;
    for (int32_t i = lo; i < hi; i++) {
        eam_row r = eam_row_start(p, atoms, i, single);
        eam_stage_apply(st, i > lo ? fw->row_end[i - lo - 1] : 0, fw->row_end[i - lo], 1, add_density_pair, &hd, &r, i);
        density_row_end(&hd, &r, i);
    }
    eam_embed_rows(p, atoms, lo, hi, rho, fp, h);
    for (int32_t i = lo; i < hi; i++) {
        eam_row r = eam_row_start(p, atoms, i, single);
        force_row_begin(h, &r, i);
        eam_stage_apply(st, i > lo ? fw->row_end[i - lo - 1] : 0, fw->row_end[i - lo], 1, add_force_pair, h, &r, i);
        force_row_end(h, &r, i);
    }
}

/* One whole system s (rows [lo, hi)) in a fused task: staged when its
 * pairs fit (eam_fused_rows), else its two passes one after the other
 * (eam_pairs: a row with more neighbours than slots, or a system too
 * large to stage). fp, rho and h as in eam_fused_rows; -1 when out of
 * memory. */
EAM_INLINE int eam_fused_system(const double *x, double *w, const mdf_sys_info *si, int32_t s, const mdf_nl_list_view *l,
                            const mdf_nl_bins_view *v, const mdf_atom_info *atoms, const mdf_eam_params *p,
                            int32_t atom_begin, int32_t lo, int32_t hi, eam_fused_ws *fw, double *rho, double *fp,
                            half_force *h)
{
    const int64_t slots = eam_fused_slots(l, atom_begin, lo, hi);
    const int staged = slots >= 0 && slots <= EAM_FUSED_MAX_PAIRS;
    if (staged && eam_fused_reserve(fw, slots) != 0) return -1; /* unstaged: the task's M slots do */
    if (!staged) {
        half_density hd = {p, atoms, rho, 0};
        for (int32_t i = lo; i < hi; i++) rho[i] = 0.0;
        eam_pairs(x, w, si, s, l, v, atoms, p, atom_begin, lo, hi, p->cutsq, &fw->st, add_density_pair,
                  density_row_begin, density_row_end, &hd);
        eam_embed_rows(p, atoms, lo, hi, rho, fp, h);
        eam_pairs(x, w, si, s, l, v, atoms, p, atom_begin, lo, hi, p->cutsq, &fw->st, add_force_pair,
                  force_row_begin, force_row_end, h);
        return 0;
    }
    mdf_nl_shifts sh;
    eam_wrap_system(x, w, si, s, v, &sh);
    const int single = p->nelem == 1;
    if (sh.q && single)
        eam_fused_rows(w, l, &sh, atoms, p, atom_begin, lo, hi, p->cutsq, 1, 1, fw, rho, fp, h);
    else if (sh.q)
        eam_fused_rows(w, l, &sh, atoms, p, atom_begin, lo, hi, p->cutsq, 1, 0, fw, rho, fp, h);
    else if (single)
        eam_fused_rows(w, l, &sh, atoms, p, atom_begin, lo, hi, p->cutsq, 0, 1, fw, rho, fp, h);
    else
        eam_fused_rows(w, l, &sh, atoms, p, atom_begin, lo, hi, p->cutsq, 0, 0, fw, rho, fp, h);
    return 0;
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
    const int fused = a->fuse_aux != 0;
    /* The densities by shard atom: the gathered pass's, or (fused) this
     * task's own, over the atoms it may touch. */
    double *own_rho = fused ? malloc(sizeof(double) * (size_t)(a->chunk.touch_end > 0 ? a->chunk.touch_end : 1)) : NULL;
    const double *rho = fused ? own_rho : (const double *)STARPU_VECTOR_GET_PTR(buffers[8]);
    /* F'(rho) of the chunk's rows */
    double *fp = (double *)malloc(sizeof(double) * (size_t)(a->chunk.atom_end - a->chunk.atom_begin + 1));
    eam_fused_ws fw = {.cap = 0};
    double *w = eam_task_alloc(&a->chunk, l.head->slots, &fw.st);
    if (w) fw.cap = l.head->slots > 0 ? l.head->slots : 1;
    if (fused) fw.row_end = malloc(sizeof(int64_t) * (size_t)(a->chunk.atom_end - a->chunk.atom_begin + 1));
    const int short_of_memory = !fp || !w || (fused && (!own_rho || !fw.row_end));
    for (int32_t s = a->chunk.sys_begin; s < a->chunk.sys_end; s++) {
        if (!mdf_status_in(sys[s].status, a->status_lo, a->status_hi)) continue;
        int32_t i0, i1;
        mdf_chunk_rows(&a->chunk, &sys[s], &i0, &i1);
        mdf_sys_result *r = &res[s];
        r->energy = 0.0;
        if (a->want_virial) memset(r->virial, 0, sizeof r->virial);
        r->virial_fresh = a->want_virial != 0;
        if (a->partial) mdf_part_mark(r, MDF_PART_ROWS);
        /* Out of memory inside a task, or a fused task given a slice (which
         * needs other chunks' densities): make it impossible to miss. */
        if (short_of_memory || (fused && !mdf_chunk_holds_whole(&a->chunk, &sys[s]))) {
            r->energy = NAN;
            continue;
        }
        half_force h = {p, atoms, fp, rho, f, a->chunk.atom_begin, a->want_virial, 0.0, {0}};
        for (int32_t i = i0; i < i1; i++) f[3 * (size_t)i] = f[3 * (size_t)i + 1] = f[3 * (size_t)i + 2] = 0.0;
        if (fused) {
            if (eam_fused_system(x, w, &sys[s], s, &l, &v, atoms, p, a->chunk.atom_begin, i0, i1, &fw, own_rho, fp,
                                 &h) != 0) {
                r->energy = NAN;
                continue;
            }
        } else {
            eam_embed_rows(p, atoms, i0, i1, rho, fp, &h);
            eam_pairs(x, w, &sys[s], s, &l, &v, atoms, p, a->chunk.atom_begin, i0, i1, p->cutsq, &fw.st,
                      add_force_pair, force_row_begin, force_row_end, &h);
        }
        r->energy += h.e;
        if (a->want_virial)
            for (int k = 0; k < 9; k++) r->virial[k] += h.w[k];
    }
    eam_stage_free(&fw.st);
    free(fw.row_end);
    free(own_rho);
    free(fp);
    free(w);
}
