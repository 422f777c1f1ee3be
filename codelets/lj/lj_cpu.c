/* mdflow — Lennard-Jones, CPU implementation: half lists with Newton's
 * third law (each pair once), as LAMMPS does with newton on; a slice of a
 * large system keeps Newton inside itself and counts pairs across its
 * edges half, on its own atoms only (lj_atom_slice). */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <starpu.h>
#include "lj_codelet.h"
#include "lj_dense.h"
#include "../reduce/reduce_kernel.h"

/* The row loops below take their flags as constants at every call, and must
 * be inlined there for the compiler to specialise each copy (left to
 * itself, GCC emitted one generic copy testing the flags at every pair). */
#if defined(__GNUC__)
#define LJ_SPECIALISED static inline __attribute__((always_inline))
#else
#define LJ_SPECIALISED static inline
#endif

typedef struct lj_acc {
    double e;
    double w[9];
} lj_acc;

/* The sums of one atom's row: a local that the compiler keeps in
 * registers. Summing straight into the caller's lj_acc or the force array
 * made every pair wait on the previous pair's store (the compiler cannot
 * prove those do not alias the force rows), which took longer than the
 * pair's arithmetic. */
typedef struct lj_row {
    double e;
    double f[3];
    double w[9];
} lj_row;

static inline void lj_row_add_to(const lj_row *r, double *fi, lj_acc *acc, int virial)
{
    for (int k = 0; k < 3; k++) fi[k] += r->f[k];
    acc->e += r->e;
    if (virial)
        for (int k = 0; k < 9; k++) acc->w[k] += r->w[k];
}

/* Branch-free: about a third of the list lies beyond the cutoff, at
 * random, so a branch would mispredict often; a mask costs less. */
static inline void lj_add_pair(const mdf_lj_coef *c, const double d[3], double *fj, lj_row *r, int virial)
{
    double r2 = d[0] * d[0] + d[1] * d[1] + d[2] * d[2];
    double inside = r2 < c->rc2 ? 1.0 : 0.0;
    double fpair;
    r->e += inside * mdf_lj_pair_coef(c, r2, &fpair);
    fpair *= inside;
    for (int k = 0; k < 3; k++) {
        r->f[k] -= d[k] * fpair;
        fj[k] += d[k] * fpair;
    }
    if (virial) mdf_lj_add_virial(r->w, d, fpair, 1.0);
}

/* A pair that crosses the edge of a slice (below): force on i only, half
 * its energy and virial; the slice holding j counts the other half. */
static inline void lj_add_half_pair(const mdf_lj_coef *c, const double d[3], lj_row *r, int virial)
{
    double r2 = d[0] * d[0] + d[1] * d[1] + d[2] * d[2];
    if (!(r2 < c->rc2)) return;
    double fpair;
    r->e += 0.5 * mdf_lj_pair_coef(c, r2, &fpair);
    for (int k = 0; k < 3; k++) r->f[k] -= d[k] * fpair;
    if (virial) mdf_lj_add_virial(r->w, d, fpair, 0.5);
}

/* The halo of a slice [lo, hb) under the halo contract: where its rows own
 * their pairs by mdf_nl_pair_owned, partners lie on both sides of it. map[j -
 * sys_start] is the row of partner j: j itself inside the slice, else its
 * compact row (mdf_part_halo_row). One load and no branch per pair: a
 * test of j against the slice's two edges mispredicted on the pairs
 * across them. */
typedef struct lj_halo_map {
    const int32_t *map;
    int32_t sys_start, lo, hb;
    int owned; /* the rows own their pairs by mdf_nl_pair_owned (else j > i) */
} lj_halo_map;

/* The row of the part that takes atom j's share of a pair (halo contract,
 * MDF_PART_ROWS_HALO): j itself inside the slice, else its compact halo
 * row. hm NULL: j. */
static inline int32_t lj_dest(int32_t j, const lj_halo_map *hm)
{
    return hm ? hm->map[j - hm->sys_start] : j;
}

/* Atom i with more neighbours than list slots: walk its cells directly,
 * with the wrapped positions of the last build. In a slice [lo, hi) of a
 * system, pairs with j outside the slice count half, on i only. Under the
 * halo contract (hm; [lo, hi) the whole system) the pairs i owns, whole. */
static void lj_atom_from_cells(int32_t i, const double *x, double *f, const mdf_atom_info *atoms,
                               const mdf_sys_info *s, int32_t sidx, const mdf_nl_bins_view *v,
                               const mdf_lj_params *p, lj_acc *acc, int32_t lo, int32_t hi, const lj_halo_map *hm)
{
    const mdf_nl_grid *g = &v->grid[sidx];
    const int32_t *cs = v->cell_start + s->atom_start + sidx;
    int ti = p->type_of_z[atoms[i].z];
    mdf_nl_pairs pw;
    mdf_nl_pairs_begin(&pw, i, x, v->offset, g, cs, v->sorted, v->cell_of, HUGE_VAL);
    int32_t j, n[3];
    double d[3];
    lj_row r = {0};
    while (mdf_nl_pairs_next(&pw, &j, n, d)) {
        int inside = j >= lo && j < hi;
        const int mine = hm && hm->owned ? mdf_nl_pair_owned(i, j, n, hm->lo, hm->hb) : mdf_nl_pair_is_up(i, j, n);
        if (inside && !mine) continue; /* counted from the other end */
        mdf_lj_coef c = mdf_lj_coef_of(p, ti, p->type_of_z[atoms[j].z]);
        if (inside) lj_add_pair(&c, d, f + 3 * lj_dest(j, hm), &r, 1);
        else lj_add_half_pair(&c, d, &r, 1);
    }
    lj_row_add_to(&r, f + 3 * i, acc, 1);
}

/* Atom i of a slice [lo, hi) of a large system (a chunk of its own, summed
 * with the other slices by mdf_reduce). Under the rows contract (a GPU may
 * take a slice) a slice writes the forces of its own atoms only, counting
 * pairs inside it once (Newton's third law) and pairs with an atom outside
 * it half, on i only: the contract of a GPU slice too (full rows, half of
 * every pair), so slices sum right whichever worker ran each. Under the
 * halo contract (CPUs only: hi = INT32_MAX, no down entries, hm) every
 * pair the row owns (the front: mdf_nl_pair_owned) is whole, j's share in
 * row lj_dest(j). Otherwise j > i comes from the front of the list (inside the slice when
 * j < hi), j < i from the back (inside when j >= lo: counted by j's own
 * row). Rows of one species with 5-bit entries take lj_atom_staged: this
 * loop serves several species, and small cells (wide, a constant at each
 * call, so the compiler specialises both). */
LJ_SPECIALISED void lj_atom_slice(int32_t i, int32_t lo, int32_t hi, int wide, const double *x, const double *o,
                                 double *f, const mdf_atom_info *atoms, const uint32_t *nb, int32_t n_up,
                                 int32_t n_down, int32_t M, const mdf_nl_shifts *t, const mdf_lj_params *p,
                                 const lj_halo_map *hm, lj_acc *acc)
{
    /* Wrapped positions x + o as they are read: a slice reads only its
     * atoms' neighbours, and wrapping its whole system beforehand cost every
     * slice O(system): O(N^2 / slice) a step for one large system. */
    const double xi[3] = {x[3 * i] + o[3 * i], x[3 * i + 1] + o[3 * i + 1], x[3 * i + 2] + o[3 * i + 2]};
    const int ti = p->type_of_z[atoms[i].z];
    lj_row r = {0};
    for (int32_t k = 0; k < n_up; k++) {
        double sh[3];
        int32_t j = wide ? mdf_nl_shifts_get(t, nb[k], sh) : mdf_nl_shifts_get5(t, nb[k], sh);
        double d[3] = {x[3 * j] + o[3 * j] + sh[0] - xi[0], x[3 * j + 1] + o[3 * j + 1] + sh[1] - xi[1],
                       x[3 * j + 2] + o[3 * j + 2] + sh[2] - xi[2]};
        const mdf_lj_coef c = mdf_lj_coef_of(p, ti, p->type_of_z[atoms[j].z]);
        if (j < hi) lj_add_pair(&c, d, f + 3 * lj_dest(j, hm), &r, 1);
        else lj_add_half_pair(&c, d, &r, 1);
    }
    for (int32_t k = M - n_down; k < M; k++) {
        double sh[3];
        int32_t j = wide ? mdf_nl_shifts_get(t, nb[k], sh) : mdf_nl_shifts_get5(t, nb[k], sh);
        if (j >= lo) continue; /* counted by j's own row, with Newton */
        double d[3] = {x[3 * j] + o[3 * j] + sh[0] - xi[0], x[3 * j + 1] + o[3 * j + 1] + sh[1] - xi[1],
                       x[3 * j + 2] + o[3 * j + 2] + sh[2] - xi[2]};
        const mdf_lj_coef c = mdf_lj_coef_of(p, ti, p->type_of_z[atoms[j].z]);
        lj_add_half_pair(&c, d, &r, 1);
    }
    lj_row_add_to(&r, f + 3 * i, acc, 1);
}

/* The half-list loop of atom i of a whole system, for several species or
 * small cells (as lj_atom_slice); with 5-bit entries (!wide: large cells)
 * the image is a plain table lookup. */
LJ_SPECIALISED void lj_atom_list(int32_t i, int wide, const double *w, double *f, const mdf_atom_info *atoms,
                                const uint32_t *nb, int32_t n, const mdf_nl_shifts *t, const mdf_lj_params *p,
                                lj_acc *acc)
{
    const double xi[3] = {w[3 * i], w[3 * i + 1], w[3 * i + 2]};
    const int ti = p->type_of_z[atoms[i].z];
    lj_row r = {0};
    for (int32_t k = 0; k < n; k++) {
        double sh[3];
        int32_t j = wide ? mdf_nl_shifts_get(t, nb[k], sh) : mdf_nl_shifts_get5(t, nb[k], sh);
        double d[3] = {w[3 * j] + sh[0] - xi[0], w[3 * j + 1] + sh[1] - xi[1], w[3 * j + 2] + sh[2] - xi[2]};
        const mdf_lj_coef c = mdf_lj_coef_of(p, ti, p->type_of_z[atoms[j].z]);
        lj_add_pair(&c, d, f + 3 * j, &r, 1);
    }
    lj_row_add_to(&r, f + 3 * i, acc, 1);
}

/* Per-task room for one row's pairs, in three passes (lj_atom_staged). */
typedef struct lj_stage {
    double *dx, *dy, *dz, *fp, *wt;
    int32_t *j;
} lj_stage;

static int lj_stage_alloc(lj_stage *st, int32_t slots)
{
    size_t n = (size_t)(slots > 0 ? slots : 1);
    double *d = malloc(sizeof(double) * 5 * n);
    st->j = malloc(sizeof(int32_t) * n);
    if (!d || !st->j) {
        free(d);
        free(st->j);
        st->dx = NULL;
        st->j = NULL;
        return -1;
    }
    st->dx = d, st->dy = d + n, st->dz = d + 2 * n, st->fp = d + 3 * n, st->wt = d + 4 * n;
    return 0;
}

static void lj_stage_free(lj_stage *st)
{
    free(st->dx);
    free(st->j);
}

/* Atom i's row for one species and 5-bit entries (large cells: the bulk of
 * the work), in three passes over its pairs: (1) gather each pair's
 * separation d and its weight (1, or 0.5 for a pair across a slice's edge,
 * counted on i only) into st; (2) the LJ arithmetic of every pair at once,
 * a loop the compiler vectorises (AVX-512 or AVX2 clones: division and
 * cutoff mask for several pairs per instruction); (3) add the forces to i
 * and, for pairs inside the slice or system, to j (Newton's third law).
 * The pairs and their weights are those of lj_atom_slice (slice) or
 * lj_atom_list (a whole system, positions x already wrapped: o unused). */
LJ_SPECIALISED void lj_atom_staged(int32_t i, int32_t lo, int32_t hi, int slice, int virial, const double *x,
                                   const double *o, double *f, const uint32_t *nb, int32_t n_up, int32_t n_down,
                                   int32_t M, const mdf_nl_shifts *t, const mdf_lj_coef *c1, const lj_stage *st,
                                   const lj_halo_map *hm, lj_acc *acc)
{
    double *restrict dx = st->dx, *restrict dy = st->dy, *restrict dz = st->dz, *restrict fp = st->fp,
                     *restrict wt = st->wt;
    int32_t *restrict jj = st->j;
    double xi[3];
    for (int q = 0; q < 3; q++) xi[q] = slice ? x[3 * i + q] + o[3 * i + q] : x[3 * i + q];
    int32_t n = 0;
    for (int32_t k = 0; k < n_up; k++) {
        double sh[3];
        const int32_t j = mdf_nl_shifts_get5(t, nb[k], sh);
        dx[n] = (slice ? x[3 * j] + o[3 * j] : x[3 * j]) + sh[0] - xi[0];
        dy[n] = (slice ? x[3 * j + 1] + o[3 * j + 1] : x[3 * j + 1]) + sh[1] - xi[1];
        dz[n] = (slice ? x[3 * j + 2] + o[3 * j + 2] : x[3 * j + 2]) + sh[2] - xi[2];
        wt[n] = !slice || j < hi ? 1.0 : 0.5;
        jj[n++] = lj_dest(j, hm);
    }
    if (slice)
        for (int32_t k = M - n_down; k < M; k++) {
            double sh[3];
            const int32_t j = mdf_nl_shifts_get5(t, nb[k], sh);
            if (j >= lo) continue; /* counted by j's own row, with Newton */
            dx[n] = x[3 * j] + o[3 * j] + sh[0] - xi[0];
            dy[n] = x[3 * j + 1] + o[3 * j + 1] + sh[1] - xi[1];
            dz[n] = x[3 * j + 2] + o[3 * j + 2] + sh[2] - xi[2];
            wt[n] = 0.5;
            jj[n++] = j;
        }
    const mdf_lj_coef c = *c1;
    double e = 0.0;
#pragma omp simd reduction(+ : e)
    for (int32_t k = 0; k < n; k++) {
        const double r2 = dx[k] * dx[k] + dy[k] * dy[k] + dz[k] * dz[k];
        const double inside = r2 < c.rc2 ? 1.0 : 0.0;
        double fpair;
        const double en = mdf_lj_pair_coef(&c, r2, &fpair);
        fp[k] = fpair * inside;
        e += wt[k] * (inside * en);
    }
    lj_row r = {0};
    r.e = e;
    for (int32_t k = 0; k < n; k++) {
        const double d[3] = {dx[k], dy[k], dz[k]}, g = fp[k];
        for (int q = 0; q < 3; q++) r.f[q] -= d[q] * g;
        if (!slice || wt[k] == 1.0)
            for (int q = 0; q < 3; q++) f[3 * jj[k] + q] += d[q] * g;
        if (virial) mdf_lj_add_virial(r.w, d, g, wt[k]);
    }
    lj_row_add_to(&r, f + 3 * i, acc, virial);
}

/* One pair of lj_atom_halo's vectorised pass at separation (ax, ay, az):
 * returns its energy and sets *g (the force on i is -g d), both zero
 * beyond the cutoff (a mask, no branch: the loop stays vectorised). */
static inline double lj_masked_pair(const mdf_lj_coef *c, double ax, double ay, double az, double *g)
{
    const double r2 = ax * ax + ay * ay + az * az;
    const double inside = r2 < c->rc2 ? 1.0 : 0.0;
    double fpair;
    const double en = mdf_lj_pair_coef(c, r2, &fpair);
    *g = fpair * inside;
    return inside * en;
}

/* Atom i's row under the halo contract (MDF_PART_ROWS_HALO), one species
 * and 5-bit entries: the pairs of lj_atom_staged for a slice, every one
 * whole (no down entries, no upper edge), with positions from wp, the
 * wrapped positions of the slice's own and halo rows (lj_halo_positions),
 * indexed like its force rows fr = f + 3 lo: row lj_dest(j) - lo. One load
 * per coordinate instead of a position and its wrap offset. Pass (2) also
 * forms the pair forces, the row's sum and the virial (vectorised), so
 * that (3) only adds each pair's force to its partner's row. */
LJ_SPECIALISED void lj_atom_halo(int32_t i, int32_t lo, int virial, const double *wp, double *fr, const uint32_t *nb,
                                 int32_t n, const mdf_nl_shifts *t, const mdf_lj_coef *c1, const lj_stage *st,
                                 const lj_halo_map *hm, lj_acc *acc)
{
    double *restrict dx = st->dx, *restrict dy = st->dy, *restrict dz = st->dz;
    int32_t *restrict jj = st->j;
    const int32_t ri = i - lo;
    const double xi = wp[3 * ri], yi = wp[3 * ri + 1], zi = wp[3 * ri + 2];
    for (int32_t k = 0; k < n; k++) {
        double sh[3];
        const int32_t r = lj_dest(mdf_nl_shifts_get5(t, nb[k], sh), hm) - lo;
        dx[k] = wp[3 * r] + sh[0] - xi;
        dy[k] = wp[3 * r + 1] + sh[1] - yi;
        dz[k] = wp[3 * r + 2] + sh[2] - zi;
        jj[k] = r;
    }
    const mdf_lj_coef c = *c1;
    double e = 0.0, sx = 0.0, sy = 0.0, sz = 0.0;
    double w[6] = {0.0, 0.0, 0.0, 0.0, 0.0, 0.0}; /* xx xy xz yy yz zz */
    if (virial) {
        double wxx = 0.0, wxy = 0.0, wxz = 0.0, wyy = 0.0, wyz = 0.0, wzz = 0.0;
#pragma omp simd reduction(+ : e, sx, sy, sz, wxx, wxy, wxz, wyy, wyz, wzz)
        for (int32_t k = 0; k < n; k++) {
            const double ax = dx[k], ay = dy[k], az = dz[k];
            double g;
            e += lj_masked_pair(&c, ax, ay, az, &g);
            wxx += ax * ax * g, wxy += ax * ay * g, wxz += ax * az * g;
            wyy += ay * ay * g, wyz += ay * az * g, wzz += az * az * g;
            dx[k] = ax * g, dy[k] = ay * g, dz[k] = az * g;
            sx += dx[k], sy += dy[k], sz += dz[k];
        }
        w[0] = wxx, w[1] = wxy, w[2] = wxz, w[3] = wyy, w[4] = wyz, w[5] = wzz;
    } else {
#pragma omp simd reduction(+ : e, sx, sy, sz)
        for (int32_t k = 0; k < n; k++) {
            const double ax = dx[k], ay = dy[k], az = dz[k];
            double g;
            e += lj_masked_pair(&c, ax, ay, az, &g);
            dx[k] = ax * g, dy[k] = ay * g, dz[k] = az * g;
            sx += dx[k], sy += dy[k], sz += dz[k];
        }
    }
    for (int32_t k = 0; k < n; k++) {
        double *fj = fr + 3 * jj[k];
        fj[0] += dx[k];
        fj[1] += dy[k];
        fj[2] += dz[k];
    }
    fr[3 * ri] -= sx;
    fr[3 * ri + 1] -= sy;
    fr[3 * ri + 2] -= sz;
    acc->e += e;
    if (virial) {
        static const int sym[9] = {0, 1, 2, 1, 3, 4, 2, 4, 5};
        for (int k = 0; k < 9; k++) acc->w[k] += w[sym[k]];
    }
}

/* The wrapped positions x + o of the rows a slice [lo, hb) under the halo
 * contract reads, in the order of its force rows (mdf_part_halo_row): the
 * nb halo atoms before it, its own atoms, the halo atoms after it; row lo
 * is at wp + 3 nb. O(slice + halo): wrapping the whole system in each
 * slice would cost O(N) each. NULL without memory. */
static double *lj_halo_positions(const double *x, const double *o, int32_t lo, int32_t hb, const int32_t *h,
                                 int32_t nb)
{
    const int32_t own = hb - lo, count = h[0];
    const int32_t *atoms = h + 2;
    double *wp = malloc(sizeof(double) * 3 * (size_t)(own + count > 0 ? own + count : 1));
    if (!wp) return NULL;
    double *mine = wp + 3 * (size_t)nb;
    for (size_t k = 0; k < 3 * (size_t)own; k++) mine[k] = x[3 * (size_t)lo + k] + o[3 * (size_t)lo + k];
    for (int32_t q = 0; q < count; q++) {
        const size_t row = (size_t)(q < nb ? q : own + q); /* mdf_part_halo_row - (lo - nb) */
        for (int k = 0; k < 3; k++) wp[3 * row + k] = x[3 * (size_t)atoms[q] + k] + o[3 * (size_t)atoms[q] + k];
    }
    return wp;
}

/* Pairs in system s's half lists (the atoms of chunk c). */
static int64_t lj_list_pairs(const mdf_chunk *c, const mdf_sys_info *s, const mdf_nl_list_view *l)
{
    int32_t i0, i1;
    mdf_chunk_rows(c, s, &i0, &i1);
    int64_t n = 0;
    for (int32_t i = i0; i < i1; i++) n += l->n_up[i - c->atom_begin];
    return n;
}

/* Whether chunk c holds only part of system s (a slice). */
static int lj_is_slice(const mdf_chunk *c, const mdf_sys_info *s) { return !mdf_chunk_holds_whole(c, s); }

MDF_CPU_CLONES static void lj_system(int32_t sidx, const mdf_chunk *c, const double *x, double *w, double *f,
                      const mdf_atom_info *atoms, const mdf_sys_info *s, const mdf_nl_list_view *l,
                      const mdf_nl_bins_view *v, const mdf_lj_params *p, int virial, double *scratch,
                      const lj_stage *stage, const lj_halo_map *hm, const double *wp, mdf_sys_result *r)
{
    const int halo = hm != NULL;
    const int slice = lj_is_slice(c, s);
    /* The halo contract (MDF_PART_ROWS_HALO): each row of a slice takes the
     * pairs it owns whole, the partner's share in the partner's row
     * wherever it is: the slice loops with no upper edge (hi) and no down
     * entries, the cell walk with the system's range. wp: row lo's wrapped
     * position (lj_halo_positions). */
    const int32_t lo = c->atom_begin, hi = halo ? INT32_MAX : c->atom_end;
    const int32_t walk_lo = slice && !halo ? c->atom_begin : s->atom_start,
                  walk_hi = slice && !halo ? c->atom_end : s->atom_start + s->natoms;
    /* Flagged by the neighbour lists (then it has none), or cheaper so. */
    if (!slice && scratch && (v->grid[sidx].all_pairs || mdf_lj_dense_suits(s, c, lj_list_pairs(c, s, l)))) {
        /* Open boundaries: raw positions are the right ones (no images). */
        mdf_lj_dense_system(x, f, atoms, s, p, virial, scratch, &r->energy, r->virial);
        return;
    }
    /* Wrapped positions x + o of the system, which its lists index (a
     * slice wraps the ones it reads as it reads them). */
    if (!slice)
        for (int32_t k = 3 * s->atom_start; k < 3 * (s->atom_start + s->natoms); k++) w[k] = x[k] + v->offset[k];
    mdf_nl_shifts shift;
    mdf_nl_shifts_init(&shift, &v->grid[sidx], s->cell);
    int32_t i0, i1;
    mdf_chunk_rows(c, s, &i0, &i1);
    int32_t M = l->head->slots;
    int single = p->ntypes == 1;
    const mdf_lj_coef c1 = mdf_lj_coef_of(p, 0, 0); /* the one species' (used when single) */
    lj_acc acc;
    memset(&acc, 0, sizeof acc);
    for (int32_t i = i0; i < i1; i++) {
        int32_t li = i - c->atom_begin;
        const uint32_t *nb = mdf_nl_row(l, li);
        const int32_t n_down = halo ? 0 : l->n_down[li];
        if (l->n_up[li] + l->n_down[li] > M)
            lj_atom_from_cells(i, x, f, atoms, s, sidx, v, p, &acc, walk_lo, walk_hi, hm);
        /* One species, large cells: the three-pass row (the common case).
         * Constant flags: the compiler specialises each call. */
        else if (single && !shift.q && halo && !virial)
            lj_atom_halo(i, lo, 0, wp, f + 3 * (size_t)lo, nb, l->n_up[li], &shift, &c1, stage, hm, &acc);
        else if (single && !shift.q && halo)
            lj_atom_halo(i, lo, 1, wp, f + 3 * (size_t)lo, nb, l->n_up[li], &shift, &c1, stage, hm, &acc);
        else if (single && !shift.q && slice && !virial)
            lj_atom_staged(i, lo, hi, 1, 0, x, v->offset, f, nb, l->n_up[li], n_down, M, &shift, &c1, stage, hm,
                           &acc);
        else if (single && !shift.q && slice)
            lj_atom_staged(i, lo, hi, 1, 1, x, v->offset, f, nb, l->n_up[li], n_down, M, &shift, &c1, stage, hm,
                           &acc);
        else if (single && !shift.q && !virial)
            lj_atom_staged(i, 0, 0, 0, 0, w, NULL, f, nb, l->n_up[li], 0, M, &shift, &c1, stage, NULL, &acc);
        else if (single && !shift.q)
            lj_atom_staged(i, 0, 0, 0, 1, w, NULL, f, nb, l->n_up[li], 0, M, &shift, &c1, stage, NULL, &acc);
        /* Several species, or small cells (wide entries). */
        else if (slice && shift.q)
            lj_atom_slice(i, lo, hi, 1, x, v->offset, f, atoms, nb, l->n_up[li], n_down, M, &shift, p, hm, &acc);
        else if (slice)
            lj_atom_slice(i, lo, hi, 0, x, v->offset, f, atoms, nb, l->n_up[li], n_down, M, &shift, p, hm, &acc);
        else if (shift.q) lj_atom_list(i, 1, w, f, atoms, nb, l->n_up[li], &shift, p, &acc);
        else lj_atom_list(i, 0, w, f, atoms, nb, l->n_up[li], &shift, p, &acc);
    }
    r->energy += acc.e;
    if (virial)
        for (int k = 0; k < 9; k++) r->virial[k] += acc.w[k];
}

/* The halo of slice c of system s (MDF_PART_ROWS_HALO) in the part's
 * region h: the atoms outside the slice that the pairs its rows own may
 * reach (list entries; the cells of a row with more neighbours than slots,
 * a superset), ascending, and the map from such an atom j to its compact
 * row (mdf_part_halo_row), map[j - the system's first atom]. Derived again
 * only when the list was rebuilt (h[1] holds the build it came from): the
 * scan of every entry cost a tenth of the step. Zeroes the compact rows;
 * returns hm filled in, or NULL without memory. */
static const lj_halo_map *lj_halo(const mdf_chunk *c, const mdf_sys_info *s, int32_t sidx, const double *x,
                                  const mdf_nl_list_view *l, const mdf_nl_bins_view *v, double *f, int32_t *h,
                                  int32_t atom_cap, int owned, lj_halo_map *hm)
{
    const int32_t lo = c->atom_begin, hb = c->atom_end, s0 = s->atom_start, n = s->natoms, M = l->head->slots;
    const int32_t stamp = l->head->builds + 1;
    int32_t *atoms = h + 2, *map = h + 2 + atom_cap;
    if (h[1] != stamp) {
        const mdf_nl_grid *g = &v->grid[sidx];
        const int32_t base = g->entry_base, bits = g->image_bits;
        uint8_t *seen = calloc((size_t)(n > 0 ? n : 1), 1);
        if (!seen) return NULL;
        int32_t i0, i1;
        mdf_chunk_rows(c, s, &i0, &i1);
        for (int32_t i = i0; i < i1; i++) {
            const int32_t li = i - c->atom_begin;
            if (l->n_up[li] + l->n_down[li] > M) {
                mdf_nl_pairs pw;
                mdf_nl_pairs_begin(&pw, i, x, v->offset, g, v->cell_start + s0 + sidx, v->sorted, v->cell_of,
                                   HUGE_VAL);
                int32_t j, nn[3];
                double d[3];
                while (mdf_nl_pairs_next(&pw, &j, nn, d))
                    if ((j < lo || j >= hb) &&
                        (owned ? mdf_nl_pair_owned(i, j, nn, lo, hb) : mdf_nl_pair_is_up(i, j, nn)))
                        seen[j - s0] = 1;
                continue;
            }
            const uint32_t *restrict nb = mdf_nl_row(l, li);
            for (int32_t k = 0; k < l->n_up[li]; k++) {
                const int32_t j = base + (int32_t)(nb[k] >> bits); /* mdf_nl_entry_atom */
                if (j < lo || j >= hb) seen[j - s0] = 1;
            }
        }
        int32_t count = 0, before = 0;
        for (int32_t q = 0; q < n; q++)
            if (seen[q]) {
                atoms[count++] = s0 + q;
                before += s0 + q < lo;
            }
        for (int32_t q = 0; q < count; q++) map[atoms[q] - s0] = mdf_part_halo_row(q, before, lo, hb);
        for (int32_t j = lo; j < hb; j++) map[j - s0] = j;
        free(seen);
        h[0] = count;
        h[1] = stamp;
    }
    const int32_t nb = mdf_part_halo_before(h, lo), na = h[0] - nb;
    if (nb > 0) memset(f + 3 * (size_t)(lo - nb), 0, sizeof(double) * 3 * (size_t)nb);
    if (na > 0) memset(f + 3 * (size_t)hb, 0, sizeof(double) * 3 * (size_t)na);
    *hm = (lj_halo_map){.map = map, .sys_start = s0, .lo = lo, .hb = hb, .owned = owned};
    return hm;
}

/* Out of memory inside a task: no way to return an error, so make the
 * failure impossible to miss downstream (NaN energies stop a run's checks). */
static void mdf_lj_cpu_flag_failure(mdf_sys_result *res, const mdf_chunk *c)
{
    for (int32_t s = c->sys_begin; s < c->sys_end; s++) res[s].energy = NAN;
}

void mdf_lj_cpu(void *buffers[], void *cl_arg)
{
    const mdf_lj_args *args = (const mdf_lj_args *)cl_arg;
    const double *x = (const double *)STARPU_VECTOR_GET_PTR(buffers[0]);
    const mdf_atom_info *atoms = (const mdf_atom_info *)STARPU_VECTOR_GET_PTR(buffers[1]);
    const mdf_sys_info *sys = (const mdf_sys_info *)STARPU_VECTOR_GET_PTR(buffers[2]);
    mdf_nl_list_view l = mdf_nl_list_map((void *)STARPU_VECTOR_GET_PTR(buffers[3]));
    mdf_nl_bins_view v = mdf_nl_bins_map((void *)STARPU_VECTOR_GET_PTR(buffers[4]));
    double *f = (double *)STARPU_VECTOR_GET_PTR(buffers[5]);
    mdf_sys_result *res = (mdf_sys_result *)STARPU_VECTOR_GET_PTR(buffers[6]);
    const mdf_lj_params *p = (const mdf_lj_params *)STARPU_VECTOR_GET_PTR(buffers[7]);
    const mdf_chunk *c = &args->chunk;
    /* Wrapped positions x + o, filled by each whole system that takes the
     * list path; indexed like x (entries outside the chunk's whole systems
     * are unused: a slice needs none, and a chunk that is one slice no
     * buffer the size of its system). */
    int32_t wrap_end = 0;
    for (int32_t s = c->sys_begin; s < c->sys_end; s++)
        if (!lj_is_slice(c, &sys[s])) wrap_end = sys[s].atom_start + sys[s].natoms;
    double *w = malloc(sizeof(double) * 3 * (size_t)(wrap_end > 0 ? wrap_end : 1));
    /* Room for the largest system that may take the all-pairs path. */
    int32_t dense_atoms = 0;
    for (int32_t s = c->sys_begin; s < c->sys_end; s++)
        if (sys[s].natoms <= MDF_LJ_DENSE_MAX_ATOMS && sys[s].natoms > dense_atoms) dense_atoms = sys[s].natoms;
    double *scratch = dense_atoms ? malloc(sizeof(double) * mdf_lj_dense_scratch_doubles(dense_atoms, p)) : NULL;
    lj_stage stage;
    if (lj_stage_alloc(&stage, l.head->slots) != 0 || !w || (dense_atoms && !scratch)) {
        free(w);
        free(scratch);
        lj_stage_free(&stage); /* a failed allocation left both NULL */
        mdf_lj_cpu_flag_failure(res, c);
        return;
    }
    for (int32_t s = c->sys_begin; s < c->sys_end; s++) {
        if (!mdf_status_in(sys[s].status, args->status_lo, args->status_hi)) continue;
        /* The rows this task writes: a slice its own (lj_atom_slice), else
         * the part of the touch range that is this system's. */
        int slice = lj_is_slice(c, &sys[s]);
        int32_t t0 = sys[s].atom_start > c->touch_begin ? sys[s].atom_start : c->touch_begin;
        int32_t t1 = sys[s].atom_start + sys[s].natoms;
        if (t1 > c->touch_end) t1 = c->touch_end;
        if (slice) mdf_chunk_rows(c, &sys[s], &t0, &t1);
        if (t1 > t0) memset(f + 3 * (size_t)t0, 0, sizeof(double) * 3 * (size_t)(t1 - t0));
        res[s].energy = 0.0;
        if (args->want_virial) memset(res[s].virial, 0, sizeof res[s].virial);
        res[s].virial_fresh = args->want_virial != 0;
        /* A slice's part holds its own rows (lj_atom_slice), as a GPU's; a
         * part of whole systems holds them whole. */
        if (args->partial) mdf_part_mark(&res[s], slice ? MDF_PART_ROWS : MDF_PART_TOUCH);
        /* A slice computes each pair once where the sum allows it. */
        lj_halo_map halo_map;
        const lj_halo_map *hm = NULL;
        double *wp = NULL;
        int32_t before = 0; /* halo atoms before the slice */
        if (slice && args->partial && args->halo_at > 0) {
            int32_t *h = mdf_part_halo(f, args->halo_at);
            hm = lj_halo(c, &sys[s], s, x, &l, &v, f, h, args->halo_at / 3, args->halo_owned, &halo_map);
            if (hm) before = mdf_part_halo_before(h, c->atom_begin);
            if (hm) wp = lj_halo_positions(x, v.offset, c->atom_begin, c->atom_end, h, before);
            if (!wp) {
                res[s].energy = NAN; /* out of memory: impossible to miss downstream */
                continue;
            }
            mdf_part_mark(&res[s], MDF_PART_ROWS_HALO);
        }
        lj_system(s, c, x, w, f, atoms, &sys[s], &l, &v, p, args->want_virial, scratch, &stage, hm,
                  wp ? wp + 3 * (size_t)before : NULL, &res[s]);
        free(wp);
    }
    lj_stage_free(&stage);
    free(scratch);
    free(w);
}
