/* mdflow — neighbour lists, CPU implementation. */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <starpu.h>
#include "nlist_codelet.h"

/* The AVX-512 sweep (sweep_put_avx512): GCC or Clang on x86-64, compiled
 * for AVX-512 by a target attribute whatever the build's flags, run only
 * where the CPU has it. */
#if !defined(__CUDACC__) && defined(__GNUC__) && defined(__x86_64__)
#include <immintrin.h>
#define NL_X86 1
#else
#define NL_X86 0
#endif

int mdf_nl_simd_supported(int32_t simd)
{
    switch (simd) {
    case MDF_NL_SIMD_GENERIC: return 1;
#if NL_X86
    case MDF_NL_SIMD_AVX512: return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl");
#endif
    default: return 0;
    }
}

/* The sweep a build runs for args.simd: the best this CPU has for auto,
 * generic for one it lacks. */
static int32_t nl_simd_for(int32_t want)
{
    if (want == MDF_NL_SIMD_AUTO) want = MDF_NL_SIMD_AVX512;
    return mdf_nl_simd_supported(want) ? want : MDF_NL_SIMD_GENERIC;
}

/* Fractional range of the system's atoms along each direction: [0,1) along
 * periodic ones, the atoms' extent along open ones. */
static void bin_bounds(const double *pos, const mdf_sys_info *s, mdf_nl_grid *g)
{
    if (g->periodic[0] && g->periodic[1] && g->periodic[2]) { /* no extent to measure */
        for (int k = 0; k < 3; k++) {
            g->lo[k] = 0.0;
            g->span[k] = 1.0;
        }
        return;
    }
    double lo[3] = {DBL_MAX, DBL_MAX, DBL_MAX}, hi[3] = {-DBL_MAX, -DBL_MAX, -DBL_MAX};
    int32_t a1 = s->atom_start + s->natoms;
    for (int32_t a = s->atom_start; a < a1; a++) {
        double u[3], o[3];
        mdf_nl_wrap(g, pos + 3 * a, u, o);
        for (int k = 0; k < 3; k++) {
            lo[k] = u[k] < lo[k] ? u[k] : lo[k];
            hi[k] = u[k] > hi[k] ? u[k] : hi[k];
        }
    }
    for (int k = 0; k < 3; k++) {
        g->lo[k] = g->periodic[k] ? 0.0 : lo[k];
        double span = g->periodic[k] ? 1.0 : hi[k] - lo[k];
        g->span[k] = span > 0.0 ? span : 1e-300; /* a flat system: one cell */
    }
}

void mdf_nl_bin_system(const double *pos, const mdf_sys_info *s, int32_t sidx, mdf_nl_bins_view *v,
                       double r_list)
{
    mdf_nl_grid *g = &v->grid[sidx];
    mdf_nl_basis(s, g);
    bin_bounds(pos, s, g);
    int32_t a0 = s->atom_start, a1 = a0 + s->natoms;
    mdf_nl_grid_setup(g, r_list, s->atom_start, s->natoms);
    int32_t ncells = g->n[0] * g->n[1] * g->n[2];
    int32_t *cs = v->cell_start + a0 + sidx;
    memset(cs, 0, sizeof *cs * (size_t)(ncells + 1));
    for (int32_t a = a0; a < a1; a++) {
        double u[3];
        int32_t c[3];
        mdf_nl_wrap(g, pos + 3 * a, u, v->offset + 3 * a);
        v->cell_of[a] = mdf_nl_cell_index(g, u, c);
        cs[v->cell_of[a] + 1]++;
    }
    /* Counting sort, stable in atom order: cell contents are deterministic. */
    cs[0] = a0;
    for (int32_t c = 0; c < ncells; c++) cs[c + 1] += cs[c];
    for (int32_t a = a0; a < a1; a++) v->sorted[cs[v->cell_of[a]]++] = a;
    for (int32_t c = ncells; c > 0; c--) cs[c] = cs[c - 1];
    cs[0] = a0;
    memcpy(v->ref_pos + 3 * a0, pos + 3 * a0, sizeof(double) * 3 * (size_t)s->natoms);
    memcpy(g->ref_cell, s->cell, sizeof g->ref_cell);
    g->valid = 1;
    g->nbuilds++;
}

/* Whether open system s is left to the model's all-pairs path this step:
 * few atoms, or a bounding box (each side at least r_list) within
 * all_pairs_volume, so that most pairs lie within the list radius anyway.
 * A pure function of the positions: deterministic. */
static int all_pairs_now(const double *pos, const mdf_sys_info *s, const mdf_nl_bin_args *a)
{
    if (a->all_pairs_atoms <= 0 || s->natoms > a->all_pairs_atoms) return 0;
    if (s->pbc[0] || s->pbc[1] || s->pbc[2]) return 0;
    if (s->natoms <= a->all_pairs_small) return 1;
    double lo[3] = {DBL_MAX, DBL_MAX, DBL_MAX}, hi[3] = {-DBL_MAX, -DBL_MAX, -DBL_MAX};
    for (int32_t at = s->atom_start; at < s->atom_start + s->natoms; at++)
        for (int k = 0; k < 3; k++) {
            lo[k] = pos[3 * at + k] < lo[k] ? pos[3 * at + k] : lo[k];
            hi[k] = pos[3 * at + k] > hi[k] ? pos[3 * at + k] : hi[k];
        }
    double volume = 1.0;
    for (int k = 0; k < 3; k++) volume *= hi[k] - lo[k] > a->r_list ? hi[k] - lo[k] : a->r_list;
    return volume <= a->all_pairs_volume;
}

/* The candidates each build after this binning will sweep: for each
 * system binned or re-listed now, its rows in the chunk times the atoms of
 * a row's neighbourhood (27 cells' worth, at most the whole system): the
 * builds' model sizes, so that a scheduler places a build by what it will
 * do, not by the chunk. Counting rows alone, a cluster of n atoms (a few
 * cells: every atom a candidate) cost like n, not n^2, and the dmda
 * family's predictions of the builds were 53% off. */
static void hand_builds_their_work(const mdf_nl_bin_args *args, const mdf_sys_info *sys, const mdf_nl_bins_view *v)
{
    for (int32_t q = 0; q < args->nbuilds; q++) {
        const mdf_chunk *c = &args->chunks[q];
        int64_t work = 0;
        for (int32_t s = c->sys_begin; s < c->sys_end; s++) {
            const mdf_nl_grid *g = &v->grid[s];
            if (!g->rebuilt) continue;
            int32_t a0, a1;
            mdf_chunk_rows(c, &sys[s], &a0, &a1);
            if (a1 <= a0) continue;
            const int64_t cells = (int64_t)g->n[0] * g->n[1] * g->n[2];
            int64_t reach = cells > 0 ? 27 * (int64_t)sys[s].natoms / cells : sys[s].natoms;
            if (reach > sys[s].natoms) reach = sys[s].natoms;
            work += (int64_t)(a1 - a0) * (reach > 1 ? reach : 1);
        }
        *args->build_work[q] = work;
    }
}

/* buffers: pos R, sys R, bins RW */
void mdf_nl_bin_cpu(void *buffers[], void *cl_arg)
{
    const mdf_nl_bin_args *args = (const mdf_nl_bin_args *)cl_arg;
    const double *pos = (const double *)STARPU_VECTOR_GET_PTR(buffers[0]);
    const mdf_sys_info *sys = (const mdf_sys_info *)STARPU_VECTOR_GET_PTR(buffers[1]);
    mdf_nl_bins_view v = mdf_nl_bins_map((void *)STARPU_VECTOR_GET_PTR(buffers[2]));
    /* Bins carried over from another pipeline: the lists are empty, and a
     * system whose binning still holds gets them back from its reference
     * positions (the lists of its last binning, entry for entry), so when
     * a refill made a new pipeline leaves no trace in its trajectory. */
    const int relist = v.head->force_rebuild == MDF_NL_RELIST_ALL;
    const int rebuild_all = v.head->force_rebuild == MDF_NL_REBUILD_ALL;
    for (int32_t s = 0; s < args->nsys; s++) {
        mdf_nl_grid *g = &v.grid[s];
        const mdf_sys_info *si = &sys[s];
        if (!mdf_status_in(si->status, args->status_lo, args->status_hi)) {
            /* not evaluated this time: its lists wait (carried ones are
             * made now, the binning they need may not outlive this task) */
            g->rebuilt = relist && g->valid && !g->all_pairs ? MDF_NL_RELISTED : 0;
            continue;
        }
        if (all_pairs_now(pos, si, args)) { /* no bins, no list: the model takes every pair */
            g->all_pairs = 1;
            g->rebuilt = 0;
            continue;
        }
        /* Back from the all-pairs path, the bins and list are stale: rebuild. */
        const int32_t age = g->age + 1;
        const int due = mdf_nl_rebuild_due(age, args->rebuild_every, args->rebuild_nocheck);
        int need = !g->valid || g->all_pairs || rebuild_all || mdf_nl_cell_changed(g, si) || due > 0 ||
                   (due < 0 && mdf_nl_moved_too_far(pos, v.ref_pos, si->atom_start, si->atom_start + si->natoms,
                                                    args->half_skin2));
        g->age = need ? 0 : age;
        g->all_pairs = 0;
        g->rebuilt = need ? MDF_NL_REBINNED : relist ? MDF_NL_RELISTED : 0;
        if (need) mdf_nl_bin_system(pos, si, s, &v, args->r_list);
    }
    v.head->force_rebuild = 0;
    hand_builds_their_work(args, sys, &v);
}

static void list_stats(mdf_nl_list_view *l)
{
    int32_t over = 0, maxc = 0;
    int64_t up = 0;
    for (int32_t i = 0; i < l->head->natoms; i++) {
        int32_t c = l->n_up[i] + l->n_down[i];
        over += c > l->head->slots;
        maxc = c > maxc ? c : maxc;
        up += l->n_up[i] < l->head->slots ? l->n_up[i] : l->head->slots;
    }
    l->head->overflowed = over;
    l->head->max_count = maxc;
    l->head->builds = (l->head->builds + 1) & 0x3fffffff;
    mdf_nl_list_set_pairs(l->head, up);
}

/* The work of the model task on this chunk's list (its performance-model
 * size): its atoms, the pairs its list holds (as of the last build), and
 * n(n-1)/2 for each all-pairs system's atoms in the chunk. */
static int64_t model_work(const mdf_nl_list_view *l, const mdf_sys_info *sys, const mdf_nl_grid *grid,
                          const mdf_chunk *c)
{
    int64_t work = (int64_t)(c->atom_end - c->atom_begin) + mdf_nl_list_pairs(l->head);
    for (int32_t s = c->sys_begin; s < c->sys_end; s++) {
        if (!grid[s].all_pairs) continue;
        int32_t a0, a1;
        mdf_chunk_rows(c, &sys[s], &a0, &a1);
        if (a1 > a0) work += (int64_t)(a1 - a0) * (sys[s].natoms - 1) / 2;
    }
    return work;
}

/* The atoms of a cell's neighbourhood (its 3x3x3 block; every cell along a
 * direction of fewer than three, each atom there through every translation
 * in [-R_k, R_k]: small cells), wrapped and translated, in
 * structure-of-arrays form so the distance sweep vectorises. The order is
 * mdf_nl_pairs's (cells in walk order, atoms in cell order, translations
 * last), so the lists equal mdf_nl_build_atom's entry for entry. */
/* The slice [lo, hi) whose rows own their pairs by mdf_nl_pair_owned
 * (mdf_nl_build_args.owned). */
typedef struct nl_owner {
    int32_t lo, hi;
} nl_owner;

typedef struct candidates {
    int32_t n, cap;
    double *x, *y, *z;
    uint32_t *entry;   /* mdf_nl_entry_make */
    int32_t *j;
    int32_t *self0;    /* j for the translation 0, else -1: i never pairs with itself through 0 */
    uint8_t *up_self;  /* n's first non-zero component is positive (i's own images: "up") */
    int32_t *hit;      /* candidates within r_list of the current atom */
    uint8_t *within;   /* per candidate: whether it is one of them */
    uint32_t *up_run, *down_run; /* the AVX-512 sweep's entries j > i and j < i */
    /* The system's wrapped positions in cell order (v->sorted's, from
     * row0), each cell's rows filled when a neighbourhood first takes it
     * (done[] at the cell's first row): an atom is wrapped once per task,
     * not once for each of the 27 neighbourhoods that hold it, and a
     * neighbourhood copies contiguous rows. */
    int32_t row0, rows_cap;
    double *rx, *ry, *rz;
    uint8_t *done;
} candidates;

/* Candidates are padded to a multiple of NL_PAD (the AVX-512 sweep's
 * lanes) with ones beyond any list radius. */
#define NL_PAD 8

static void candidate_arrays_free(candidates *c)
{
    free(c->x);
    free(c->y);
    free(c->z);
    free(c->entry);
    free(c->j);
    free(c->self0);
    free(c->up_self);
    free(c->hit);
    free(c->within);
    free(c->up_run);
    free(c->down_run);
    c->x = c->y = c->z = NULL;
    c->entry = c->up_run = c->down_run = NULL;
    c->j = c->self0 = c->hit = NULL;
    c->up_self = c->within = NULL;
    c->cap = 0;
}

static void candidates_free(candidates *c)
{
    candidate_arrays_free(c);
    free(c->rx);
    free(c->ry);
    free(c->rz);
    free(c->done);
    memset(c, 0, sizeof *c);
}

static int candidates_reserve(candidates *c, int64_t cap)
{
    if (cap <= c->cap) return 1;
    candidate_arrays_free(c);
    if (cap > INT32_MAX - NL_PAD) return 0;
    cap += NL_PAD; /* a vector's worth past the last candidate */
    c->up_run = malloc(sizeof(uint32_t) * (size_t)cap);
    c->down_run = malloc(sizeof(uint32_t) * (size_t)cap);
    c->hit = malloc(sizeof(int32_t) * (size_t)cap);
    c->x = malloc(sizeof(double) * (size_t)cap);
    c->y = malloc(sizeof(double) * (size_t)cap);
    c->z = malloc(sizeof(double) * (size_t)cap);
    c->entry = malloc(sizeof(uint32_t) * (size_t)cap);
    c->j = malloc(sizeof(int32_t) * (size_t)cap);
    c->self0 = malloc(sizeof(int32_t) * (size_t)cap);
    c->up_self = malloc((size_t)cap);
    c->within = malloc((size_t)cap);
    c->cap = (int32_t)cap - NL_PAD;
    return c->x && c->y && c->z && c->entry && c->j && c->self0 && c->up_self && c->hit && c->within &&
           c->up_run && c->down_run;
}

/* Room for the cell-ordered rows of a system of natoms atoms whose sorted
 * entries start at row0, none filled yet. The pages of cells a task never
 * reaches are never touched: a slice of a large system pays for its own
 * neighbourhood only. */
static int cell_rows_reset(candidates *c, int32_t row0, int32_t natoms)
{
    if (natoms > c->rows_cap) {
        free(c->rx);
        free(c->ry);
        free(c->rz);
        free(c->done);
        c->rx = malloc(sizeof(double) * (size_t)natoms);
        c->ry = malloc(sizeof(double) * (size_t)natoms);
        c->rz = malloc(sizeof(double) * (size_t)natoms);
        c->done = calloc((size_t)natoms, 1);
        c->rows_cap = c->rx && c->ry && c->rz && c->done ? natoms : 0;
        if (!c->rows_cap) return 0;
    } else {
        memset(c->done, 0, (size_t)natoms);
    }
    c->row0 = row0;
    return 1;
}

/* The rows of the cell at sorted entries [p0, p1), filled on first use. */
static void cell_rows_fill(candidates *c, const mdf_nl_bins_view *v, const double *pos, int32_t p0, int32_t p1)
{
    uint8_t *done = c->done + (p0 - c->row0);
    if (*done) return;
    for (int32_t p = p0; p < p1; p++) {
        const int32_t j = v->sorted[p];
        const size_t q = (size_t)(p - c->row0);
        c->rx[q] = pos[3 * j] + v->offset[3 * j];
        c->ry[q] = pos[3 * j + 1] + v->offset[3 * j + 1];
        c->rz[q] = pos[3 * j + 2] + v->offset[3 * j + 2];
    }
    *done = 1;
}

/* Small cells gather at most this many candidates (about 180 MB); beyond,
 * atom by atom. */
#define MDF_NL_GATHER_MAX (1 << 22)

/* Candidates a neighbourhood of system g can hold: its atoms times the
 * translations tried along its directions of fewer than three cells. */
static int64_t candidates_needed(const mdf_nl_grid *g, int32_t natoms)
{
    int64_t n = natoms;
    for (int k = 0; k < 3; k++)
        if (g->periodic[k] && g->n[k] < 3) n *= 2 * (int64_t)g->reach[k] + 1;
    return n;
}

/* The candidates of one walked cell, sorted entries [p0, p1), through the
 * one translation n its direction counts allow (large cells, open
 * directions): copies of the cell's rows plus n's shift, the same sums as
 * mdf_nl_pairs's (x + o) + shift, in loops the compiler vectorises. */
static void gather_cell(candidates *c, const mdf_nl_grid *g, const mdf_nl_bins_view *v, const double *pos,
                        int32_t p0, int32_t p1, const int32_t n[3])
{
    cell_rows_fill(c, v, pos, p0, p1);
    double sh[3];
    mdf_nl_shift_of(n, g->basis, sh);
    const uint32_t code = mdf_nl_entry_make(g, g->entry_base, n); /* j = entry_base: the image bits alone */
    const int32_t base = g->entry_base, bits = g->image_bits, at = c->n, count = p1 - p0;
    const int self = !(n[0] | n[1] | n[2]);
    const uint8_t up = (uint8_t)mdf_nl_pair_is_up(0, 0, n);
    const double *restrict rx = c->rx + (p0 - c->row0), *restrict ry = c->ry + (p0 - c->row0),
                           *restrict rz = c->rz + (p0 - c->row0);
    const int32_t *restrict sorted = v->sorted + p0;
    double *restrict x = c->x + at, *restrict y = c->y + at, *restrict z = c->z + at;
    uint32_t *restrict entry = c->entry + at;
    int32_t *restrict jj = c->j + at, *restrict self0 = c->self0 + at;
    for (int32_t k = 0; k < count; k++) {
        x[k] = rx[k] + sh[0];
        y[k] = ry[k] + sh[1];
        z[k] = rz[k] + sh[2];
        jj[k] = sorted[k];
        entry[k] = ((uint32_t)(sorted[k] - base) << bits) | code;
        self0[k] = self ? sorted[k] : -1;
    }
    memset(c->up_self + at, up, (size_t)count);
    c->n += count;
}

/* Along each periodic direction of fewer than three cells, how many cells
 * away from the home cell (counting through the images) a candidate
 * within r_list can lie: m with (m - 1) cell widths below r_list, a hair
 * more than the exact count so that rounding never drops a neighbour.
 * Cells are at least r_list wide when there are two (mdf_nl_grid_dims):
 * m = 1, the home cell's neighbours only. Elsewhere 0: not narrowed. */
static void image_cell_reach(const mdf_nl_grid *g, double r_list, int32_t m[3])
{
    for (int k = 0; k < 3; k++) {
        m[k] = 0;
        if (!g->periodic[k] || g->n[k] >= 3) continue;
        const double cells = r_list * (1.0 + 1e-9) / (mdf_perpendicular_width(g->inv_basis, k) / g->n[k]);
        /* NaN or huge (a flat or non-finite cell): keep every translation */
        m[k] = cells >= 0.0 && cells < 1e6 ? (int32_t)floor(cells) + 1 : 0;
    }
}

/* Whether every atom of system si lies inside its cell along the
 * directions image_cell_reach narrows, as the sweep sees it: the wrapped
 * position pos + offset (which the candidates are made of), in fractional
 * coordinates, within its cell's bounds up to 1e-12 (far below the reach's
 * margin). 0 for a non-finite coordinate, one the binning clamped into the
 * grid, or a wrapped position that cancellation moved out of its cell
 * (positions of 1e15 Å and more: a run that exploded); then the cells no
 * longer bound the distances and nothing may be narrowed. */
static int cells_hold_atoms(const mdf_nl_grid *g, const mdf_sys_info *si, const mdf_nl_bins_view *v,
                            const double *pos, const int32_t m[3])
{
    if (m[0] <= 0 && m[1] <= 0 && m[2] <= 0) return 1;
    for (int32_t a = si->atom_start; a < si->atom_start + si->natoms; a++) {
        double w[3], f[3];
        mdf_nl_wrapped(pos, v->offset, a, w);
        mdf_nl_vec_mat(w, g->inv_basis, f);
        const int32_t cell = v->cell_of[a];
        const int32_t c[3] = {cell / (g->n[1] * g->n[2]), (cell / g->n[2]) % g->n[1], cell % g->n[2]};
        for (int k = 0; k < 3; k++) {
            if (m[k] <= 0) continue;
            const double t = (f[k] - g->lo[k]) / g->span[k] * (double)g->n[k];
            if (!(t >= (double)c[k] - 1e-12 && t <= (double)(c[k] + 1) + 1e-12)) return 0;
        }
    }
    return 1;
}

static int32_t floor_div(int32_t a, int32_t b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }

/* The translations [lo, hi] of the walked cell (offset w->d from the home
 * cell) narrowed to the images at most m[k] cells from home (image t of
 * a cell at offset d lies d + t n_k cells away): along a direction of two
 * cells at least r_list wide, half the images, whose candidates the
 * sweep would all reject. Returns 0 when none is left. */
static int narrow_images(const mdf_nl_grid *g, const mdf_nl_walk *w, const int32_t m[3], int32_t lo[3], int32_t hi[3])
{
    for (int k = 0; k < 3; k++) {
        if (m[k] <= 0) continue;
        const int32_t n = g->n[k], d = w->d[k];
        const int32_t t0 = -floor_div(m[k] + d, n), t1 = floor_div(m[k] - d, n); /* |d + t n| <= m */
        if (t0 > lo[k]) lo[k] = t0;
        if (t1 < hi[k]) hi[k] = t1;
        if (lo[k] > hi[k]) return 0;
    }
    return 1;
}

static void gather(candidates *c, const mdf_nl_grid *g, const int32_t *cs, const mdf_nl_bins_view *v,
                   const double *pos, int32_t cell, const int32_t reach[3])
{
    mdf_nl_walk w;
    mdf_nl_walk_begin(&w, g, cell);
    c->n = 0;
    while (mdf_nl_walk_next_cell(&w, g, cs)) {
        int32_t lo[3], hi[3], n[3];
        mdf_nl_image_range(g, &w, lo, hi);
        if (!narrow_images(g, &w, reach, lo, hi)) continue;
        if (lo[0] == hi[0] && lo[1] == hi[1] && lo[2] == hi[2]) {
            gather_cell(c, g, v, pos, w.pos, w.end, lo);
            continue;
        }
        for (int32_t p = w.pos; p < w.end; p++) {
            int32_t j = v->sorted[p];
            double xj[3];
            mdf_nl_wrapped(pos, v->offset, j, xj);
            for (n[0] = lo[0]; n[0] <= hi[0]; n[0]++)
                for (n[1] = lo[1]; n[1] <= hi[1]; n[1]++)
                    for (n[2] = lo[2]; n[2] <= hi[2]; n[2]++) {
                        double sh[3];
                        mdf_nl_shift_of(n, g->basis, sh);
                        c->x[c->n] = xj[0] + sh[0];
                        c->y[c->n] = xj[1] + sh[1];
                        c->z[c->n] = xj[2] + sh[2];
                        c->entry[c->n] = mdf_nl_entry_make(g, j, n);
                        c->j[c->n] = j;
                        c->self0[c->n] = (n[0] | n[1] | n[2]) ? -1 : j;
                        c->up_self[c->n] = (uint8_t)mdf_nl_pair_is_up(0, 0, n);
                        c->n++;
                    }
        }
    }
    /* Lanes past the last candidate: (DBL_MAX - x)^2 is infinite (or NaN
     * for a non-finite x), never within r_list. */
    for (int32_t k = c->n; k % NL_PAD; k++) {
        c->x[k] = c->y[k] = c->z[k] = DBL_MAX;
        c->j[k] = c->self0[k] = -1;
        c->entry[k] = 0;
        c->up_self[k] = 0;
    }
}

/* The candidates within r_list of atom i (itself through translation 0
 * excluded), into c->hit in candidate order. The distances go first into
 * a mask, a loop the compiler vectorises (AVX-512 or AVX2 where the
 * machine has them); then a branch-free compaction: most candidates are
 * rejected, at random, so a branch would mispredict. */
MDF_CPU_CLONES static int32_t sweep_candidates(const candidates *c, int32_t i, double xi, double yi, double zi,
                                               double r_list2)
{
    const double *restrict x = c->x, *restrict y = c->y, *restrict z = c->z;
    const int32_t *restrict self0 = c->self0;
    uint8_t *restrict within = c->within;
    int32_t *restrict hit = c->hit;
    const int32_t n = c->n;
#pragma omp simd
    for (int32_t k = 0; k < n; k++) {
        double dx = x[k] - xi, dy = y[k] - yi, dz = z[k] - zi;
        within[k] = (uint8_t)((dx * dx + dy * dy + dz * dz < r_list2) & (self0[k] != i));
    }
    int32_t hits = 0;
    for (int32_t k = 0; k < n; k++) {
        hit[hits] = k;
        hits += within[k];
    }
    return hits;
}

/* mdf_nl_slot_put for each of atom i's hits, in order, without a branch
 * on which end an entry goes to: j > i is a coin toss, and a branch on it
 * mispredicted about every other hit. up_only: the front alone (the back's
 * entries are neither written nor counted). */
static void put_hits(const candidates *c, int32_t i, int32_t hits, int32_t M, int32_t up_only,
                     const nl_owner *own, uint32_t *restrict slots, int32_t *n_up, int32_t *n_down)
{
    const int32_t *restrict hit = c->hit, *restrict cj = c->j;
    const uint32_t *restrict entry = c->entry;
    const uint8_t *restrict up_self = c->up_self;
    int32_t up = 0, down = 0;
    for (int32_t h = 0; h < hits; h++) {
        const int32_t k = hit[h], j = cj[k];
        int32_t is_up = (j > i) | ((j == i) & up_self[k]);
        if (own && (j < own->lo || j >= own->hi)) is_up = ((i + j) & 1) ? j > i : j < i; /* mdf_nl_pair_owned */
        const int32_t take = -is_up;
        const int32_t slot = (up & take) | ((M - 1 - down) & ~take);
        if (up + down < M && (is_up | !up_only)) slots[slot] = entry[k];
        up += is_up;
        down += (1 - is_up) & (up_only - 1); /* up_only: 0 */
    }
    *n_up = up;
    *n_down = down;
}

#if NL_X86
/* sweep_candidates and put_hits in one pass, eight candidates at a time:
 * the within test rounded as the generic loop rounds it (three products,
 * then the sums left to right, no fused multiply-add), then each lane's
 * entry compressed into the up or the down run by mask, in candidate
 * order. No per-candidate compaction and no per-hit loop: together two
 * thirds of a build's time. A row with more neighbours than slots
 * (overflowed, read by no model) takes the generic path, which writes
 * its first M entries as it always did. */
__attribute__((target("avx512f,avx512vl,popcnt"))) static void
sweep_put_avx512(const candidates *c, int32_t i, double xi, double yi, double zi, double r_list2, int32_t M,
                 int32_t up_only, const nl_owner *own, uint32_t *slots, int32_t *n_up, int32_t *n_down)
{
    const __m512d vx = _mm512_set1_pd(xi), vy = _mm512_set1_pd(yi), vz = _mm512_set1_pd(zi),
                  r2 = _mm512_set1_pd(r_list2);
    const __m256i vi = _mm256_set1_epi32(i), one = _mm256_set1_epi32(1);
    const __m256i vlo = _mm256_set1_epi32(own ? own->lo : 0), vhi = _mm256_set1_epi32(own ? own->hi : 0);
    const double *restrict x = c->x, *restrict y = c->y, *restrict z = c->z;
    const int32_t *restrict self0 = c->self0, *restrict cj = c->j;
    const uint32_t *restrict entry = c->entry;
    const uint8_t *restrict up_self = c->up_self;
    uint32_t *restrict up_run = c->up_run, *restrict down_run = c->down_run;
    const int32_t n = c->n;
    int32_t up = 0, down = 0;
    /* No branch on an empty group of eight: a quarter of them are, at
     * random, and the branch cost more than the group. up_only skips a
     * group without an atom j >= i: in a spatial order a neighbour cell's
     * atoms mostly lie all before or all after i, so about half of the
     * groups, in runs (a branch that predicts well). */
    for (int32_t k = 0; k < n; k += NL_PAD) {
        const __m256i j = _mm256_loadu_si256((const __m256i *)(cj + k));
        /* Lanes across the slice's edges (owned rows): any may be i's. */
        const __mmask8 across = own ? (__mmask8)(_mm256_cmplt_epi32_mask(j, vlo) | _mm256_cmpge_epi32_mask(j, vhi)) : 0;
        if (up_only && !(_mm256_cmpge_epi32_mask(j, vi) | across)) continue;
        const __m512d dx = _mm512_sub_pd(_mm512_loadu_pd(x + k), vx);
        const __m512d dy = _mm512_sub_pd(_mm512_loadu_pd(y + k), vy);
        const __m512d dz = _mm512_sub_pd(_mm512_loadu_pd(z + k), vz);
        const __m512d d2 =
            _mm512_add_pd(_mm512_add_pd(_mm512_mul_pd(dx, dx), _mm512_mul_pd(dy, dy)), _mm512_mul_pd(dz, dz));
        const __mmask8 in = _mm512_cmp_pd_mask(d2, r2, _CMP_LT_OQ) &
                            _mm256_cmpneq_epi32_mask(_mm256_loadu_si256((const __m256i *)(self0 + k)), vi);
        __mmask8 is_up = _mm256_cmpgt_epi32_mask(j, vi);
        const __mmask8 self = _mm256_cmpeq_epi32_mask(j, vi) & in; /* i's own images (small cells) */
        for (int t = 0; self && t < NL_PAD; t++)
            if ((self >> t) & 1 && up_self[k + t]) is_up |= (__mmask8)(1u << t);
        if (across) { /* mdf_nl_pair_owned: odd i + j, the lower index; even, the higher */
            const __mmask8 odd = _mm256_test_epi32_mask(_mm256_add_epi32(j, vi), one);
            const __mmask8 owned = (odd & is_up) | (__mmask8)(~odd & _mm256_cmplt_epi32_mask(j, vi));
            is_up = (__mmask8)((is_up & ~across) | (owned & across));
        }
        const __m256i e = _mm256_loadu_si256((const __m256i *)(entry + k));
        const __mmask8 u = in & is_up, d = in & (__mmask8)~is_up;
        _mm256_storeu_si256((__m256i *)(up_run + up), _mm256_maskz_compress_epi32(u, e));
        up += __builtin_popcount(u);
        if (up_only) continue;
        _mm256_storeu_si256((__m256i *)(down_run + down), _mm256_maskz_compress_epi32(d, e));
        down += __builtin_popcount(d);
    }
    if (up + down > M) {
        put_hits(c, i, sweep_candidates(c, i, xi, yi, zi, r_list2), M, up_only, own, slots, n_up, n_down);
        return;
    }
    memcpy(slots, up_run, sizeof *slots * (size_t)up);
    for (int32_t t = 0; t < down; t++) slots[M - 1 - t] = down_run[t];
    *n_up = up;
    *n_down = down;
}
#endif

/* Where row li goes: its M fixed slots, or (a packed list: pack, the
 * system's next free slot) the next free slot of its system's room. */
static uint32_t *row_to_fill(const mdf_nl_list_view *l, int32_t li, const int64_t *pack)
{
    return pack ? l->slots + *pack : l->slots + (int64_t)li * l->head->slots;
}

/* After row li was filled at row_to_fill: a packed list records where, and
 * its system's next row starts after this one's entries (none for a row
 * that overflowed: no model reads it). Entries from the back, which the
 * atom-by-atom builds write, are dropped: a packed list holds fronts only
 * (the back was written within the row's M slots, which the next rows
 * overwrite). Each row advances by at most M, so a system's rows never
 * pass the M slots a row that it has. */
static void row_filled(mdf_nl_list_view *l, int32_t li, int64_t *pack)
{
    if (!pack) return;
    l->row_at[li] = *pack;
    if (l->n_up[li] + l->n_down[li] > l->head->slots) return;
    *pack += l->n_up[li];
    l->n_down[li] = 0;
}

/* Lists of atoms [i0, i1) of system s, cell by cell: each neighbourhood is
 * gathered once and swept for every atom of the cell. own: the rows own
 * their pairs by mdf_nl_pair_owned over own's range (NULL: j > i). pack:
 * a packed list's next free slot for this system (NULL: fixed rows). */
static void build_by_cells(const mdf_sys_info *si, int32_t s, int32_t i0, int32_t i1, const double *pos,
                           const mdf_nl_bins_view *v, double r_list2, mdf_nl_list_view *l, int32_t atom_begin,
                           candidates *c, int32_t simd, int32_t up_only, const nl_owner *own, int64_t *pack)
{
    (void)simd; /* without x86 intrinsics: generic only */
    const mdf_nl_grid *g = &v->grid[s];
    const int32_t *cs = v->cell_start + si->atom_start + s;
    int32_t ncells = g->n[0] * g->n[1] * g->n[2], M = l->head->slots;
    int32_t reach[3];
    image_cell_reach(g, sqrt(r_list2), reach);
    if (!cells_hold_atoms(g, si, v, pos, reach)) reach[0] = reach[1] = reach[2] = 0;
    for (int32_t cell = 0; cell < ncells; cell++) {
        int32_t mine = 0;
        for (int32_t p = cs[cell]; p < cs[cell + 1]; p++) mine += v->sorted[p] >= i0 && v->sorted[p] < i1;
        if (!mine) continue;
        gather(c, g, cs, v, pos, cell, reach);
        for (int32_t p = cs[cell]; p < cs[cell + 1]; p++) {
            int32_t i = v->sorted[p];
            if (i < i0 || i >= i1) continue;
            double xi = pos[3 * i] + v->offset[3 * i], yi = pos[3 * i + 1] + v->offset[3 * i + 1],
                   zi = pos[3 * i + 2] + v->offset[3 * i + 2];
            const int32_t li = i - atom_begin;
            uint32_t *slots = row_to_fill(l, li, pack);
#if NL_X86
            if (simd == MDF_NL_SIMD_AVX512) {
                sweep_put_avx512(c, i, xi, yi, zi, r_list2, M, up_only, own, slots, &l->n_up[li], &l->n_down[li]);
                row_filled(l, li, pack);
                continue;
            }
#endif
            put_hits(c, i, sweep_candidates(c, i, xi, yi, zi, r_list2), M, up_only, own, slots, &l->n_up[li],
                     &l->n_down[li]);
            row_filled(l, li, pack);
        }
    }
}

/* mdf_nl_build_atom for rows that own their pairs by mdf_nl_pair_owned:
 * the owned ones in front, the others at the back, in the walk's order. */
static void build_atom_owned(int32_t i, const double *pos, const double *offset, const mdf_nl_grid *g,
                             const int32_t *cs, const mdf_nl_bins_view *v, double r_list2, int32_t M,
                             const nl_owner *own, uint32_t *slots, int32_t *n_up, int32_t *n_down)
{
    int32_t up = 0, down = 0, j, n[3];
    double d[3];
    mdf_nl_pairs p;
    mdf_nl_pairs_begin(&p, i, pos, offset, g, cs, v->sorted, v->cell_of, r_list2);
    while (mdf_nl_pairs_next(&p, &j, n, d))
        mdf_nl_slot_put(slots, M, mdf_nl_entry_make(g, j, n), mdf_nl_pair_owned(i, j, n, own->lo, own->hi), &up,
                        &down);
    *n_up = up;
    *n_down = down;
}

/* buffers: pos R, atoms R, sys R, bins RW, list RW */
void mdf_nl_update_cpu(void *buffers[], void *cl_arg)
{
    const mdf_nl_update_args *args = (const mdf_nl_update_args *)cl_arg;
    void *bin_buffers[3] = {buffers[0], buffers[2], buffers[3]};
    mdf_nl_bin_cpu(bin_buffers, (void *)&args->bin);
    mdf_nl_build_cpu(buffers, (void *)&args->build);
}

/* buffers: pos R, atoms R, sys R, bins R, list RW */
void mdf_nl_build_cpu(void *buffers[], void *cl_arg)
{
    const mdf_nl_build_args *args = (const mdf_nl_build_args *)cl_arg;
    const double *x = (const double *)STARPU_VECTOR_GET_PTR(buffers[0]);
    const mdf_sys_info *sys = (const mdf_sys_info *)STARPU_VECTOR_GET_PTR(buffers[2]);
    mdf_nl_bins_view v = mdf_nl_bins_map((void *)STARPU_VECTOR_GET_PTR(buffers[3]));
    mdf_nl_list_view l = mdf_nl_list_map((void *)STARPU_VECTOR_GET_PTR(buffers[4]));
    const mdf_chunk *c = &args->chunk;
    int32_t M = l.head->slots;
    int any = 0;
    const int32_t simd = nl_simd_for(args->simd);
    candidates cand = {0};
    const nl_owner owner = {c->atom_begin, c->atom_end}, *own = args->owned && args->up_only ? &owner : NULL;
    /* Fronts only: packed rows (mdf_nl_row), so that the room past each
     * system's rows is never touched (lazily mapped: no memory). */
    l.head->packed = args->up_only != 0;
    for (int32_t s = c->sys_begin; s < c->sys_end; s++) {
        if (!v.grid[s].rebuilt) continue;
        any = 1;
        /* A relist builds from the positions of the binning, as it did. */
        const double *pos = v.grid[s].rebuilt == MDF_NL_RELISTED ? v.ref_pos : x;
        const mdf_sys_info *si = &sys[s];
        int32_t i0, i1;
        mdf_chunk_rows(c, si, &i0, &i1);
        /* Each system packs its rows into the M slots a row of its own
         * (the same room as fixed rows): a system rebuilt alone leaves
         * the others' rows where they are. */
        int64_t next_slot = (int64_t)(i0 - c->atom_begin) * M, *pack = args->up_only ? &next_slot : NULL;
        /* A neighbourhood holds at most the whole system, through the
         * translations small cells try. */
        const int64_t need = candidates_needed(&v.grid[s], si->natoms);
        if (!v.grid[s].lists_off && (need <= si->natoms || need <= MDF_NL_GATHER_MAX) &&
            candidates_reserve(&cand, need) && cell_rows_reset(&cand, si->atom_start, si->natoms)) {
            build_by_cells(si, s, i0, i1, pos, &v, args->r_list2, &l, c->atom_begin, &cand, simd, args->up_only,
                           own, pack);
            continue;
        }
        /* No room for the candidates, or no lists (every atom walks its
         * cells): atom by atom, the same entries. */
        const int32_t *cs = v.cell_start + si->atom_start + s;
        for (int32_t i = i0; i < i1; i++) {
            int32_t li = i - c->atom_begin;
            uint32_t *slots = row_to_fill(&l, li, pack);
            if (own && !v.grid[s].lists_off)
                build_atom_owned(i, pos, v.offset, &v.grid[s], cs, &v, args->r_list2, M, own, slots, &l.n_up[li],
                                 &l.n_down[li]);
            else
                mdf_nl_build_atom(i, pos, v.offset, si, &v.grid[s], cs, v.sorted, v.cell_of, args->r_list2, M,
                                  slots, &l.n_up[li], &l.n_down[li]);
            row_filled(&l, li, pack);
        }
    }
    candidates_free(&cand);
    if (any) list_stats(&l);
    if (args->model_work) *args->model_work = model_work(&l, sys, v.grid, c);
}
