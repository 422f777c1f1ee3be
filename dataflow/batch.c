/* mdflow — batch creation, sharding and StarPU registration. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include "batch_internal.h"
#include "../codelets/nlist/nlist_kernel.h"
#include "mdflow/runtime.h"

/* Atoms closer than this (Å) are "on top of each other". */
#define MDF_OVERLAP_TOLERANCE 1.0e-6
/* Aim for shards of at least this many atoms, so each task carries enough
 * work to hide StarPU's few microseconds of overhead per task. */
#define MDF_SHARD_MIN_ATOMS 2048

void mdf_batch_config_init(mdf_batch_config *cfg)
{
    memset(cfg, 0, sizeof *cfg);
}

size_t mdf_batch_nsystems(const mdf_batch *b) { return b->nsys; }
int64_t mdf_batch_natoms(const mdf_batch *b) { return b->natoms; }
int mdf_batch_nshards(const mdf_batch *b) { return b->nshards; }

int mdf_batch_default_shards(size_t nsystems, int64_t natoms)
{
    int workers = mdf_runtime_plan_workers();
    if (workers < 1) workers = 1;
    int64_t by_size = natoms / MDF_SHARD_MIN_ATOMS;
    /* Four shards a worker let CPU workers balance; a CUDA worker runs its
     * tasks one after another on one stream, so with MDF_CUDA_ONLY a shard
     * per GPU: fewer, larger tasks (each costs ~75 us on an H200 node). */
    int64_t n = (mdf_runtime_cuda_only() ? 1 : 4) * (int64_t)workers;
    if (n > by_size) n = by_size;
    if (n > (int64_t)nsystems) n = (int64_t)nsystems;
    return n < 1 ? 1 : (int)n;
}

/* ---- validation ---------------------------------------------------------- */

static double frame_mass(const mdf_frame *f, int64_t a)
{
    return f->masses ? f->masses[a] : mdf_element_mass(f->numbers[a]);
}

/* Frozen atoms come from an extxyz column: "fixed" (L:1 or I:1, true =
 * frozen) or ASE's "move_mask" (T = the atom may move that way): L:1, as
 * ASE writes FixAtoms, F = frozen; or L:3, as ASE writes FixCartesian,
 * frozen when all three are F. An atom fixed in some directions only
 * (e.g. "T F T") is refused by validate_frame: the batch freezes whole
 * atoms, and moving it would break the constraint the output carries.
 * Returns 1 (frozen), 0 (free), or -1 when c says nothing about freezing. */
static int is_move_mask(const mdf_extra_column *c)
{
    return strcmp(c->name, "move_mask") == 0 && (c->ncols == 1 || c->ncols == 3);
}

/* How many directions a move_mask column lets atom a move in. */
static int movable_directions(const mdf_extra_column *c, int64_t a)
{
    int movable = 0;
    for (int d = 0; d < c->ncols; d++) {
        const char *t = c->tokens[(size_t)c->ncols * (size_t)a + (size_t)d];
        movable += t[0] == 'T' || t[0] == 't';
    }
    return movable;
}

static int column_freezes(const mdf_extra_column *c, int64_t a)
{
    if (strcmp(c->name, "fixed") == 0 && c->ncols == 1) {
        const char *t = c->tokens[a];
        return t[0] == 'T' || t[0] == 't' || (t[0] >= '1' && t[0] <= '9');
    }
    if (is_move_mask(c)) return movable_directions(c, a) == 0;
    return -1;
}

/* 1 when a move_mask:L:3 column lets atom a move in some directions only. */
static int partly_fixed(const mdf_extra_column *c, int64_t a)
{
    if (!is_move_mask(c) || c->ncols != 3) return 0;
    int movable = movable_directions(c, a);
    return movable == 1 || movable == 2;
}

/* The batch freezes whole atoms: a per-direction constraint it cannot keep
 * is an error naming the atom, not a constraint broken in silence. */
static mdf_status check_partial_masks(const mdf_frame *f, size_t index, mdf_error *err)
{
    for (size_t k = 0; k < f->nextra; k++)
        for (int64_t a = 0; a < f->natoms; a++)
            if (partly_fixed(&f->extra[k], a)) {
                const char *const *t = (const char *const *)f->extra[k].tokens + 3 * a;
                return mdf_error_set(err, MDF_ERR_INVALID,
                                     "system %zu, atom %lld: move_mask '%s %s %s' fixes it in some directions only "
                                     "(ASE's FixCartesian with a partial mask); mdflow freezes whole atoms: fix it "
                                     "in all three directions (F F F), in none (T T T), or drop the column",
                                     index, (long long)a, t[0], t[1], t[2]);
            }
    return MDF_OK;
}

static int frame_atom_frozen(const mdf_frame *f, int64_t a)
{
    for (size_t k = 0; k < f->nextra; k++) {
        int frozen = column_freezes(&f->extra[k], a);
        if (frozen >= 0) return frozen;
    }
    return 0;
}

typedef struct sort_key {
    double s;        /* projection on an irrational direction */
    double w[3];     /* wrapped (or ghost) Cartesian position */
    int64_t atom;
} sort_key;

/* A double's bits as an unsigned integer of the same order (negative values
 * flipped whole, positive ones with the sign bit set). */
static uint64_t ordered_bits(double x)
{
    uint64_t u;
    memcpy(&u, &x, sizeof u);
    return u >> 63 ? ~u : u | ((uint64_t)1 << 63);
}

/* order[0..n) = the indices of keys by ascending s, ties in index order: a
 * radix sort, eight passes of a byte (a pass whose byte is the same in
 * every key is skipped). qsort of the 40-byte keys took 0.3 s for a
 * million atoms. Returns 0 without memory. */
static int order_keys(const sort_key *keys, int64_t n, int64_t *order)
{
    uint64_t *code = malloc(sizeof *code * (size_t)(2 * (n > 0 ? n : 1)));
    int64_t *spare = malloc(sizeof *spare * (size_t)(n > 0 ? n : 1));
    if (!code || !spare) {
        free(code);
        free(spare);
        return 0;
    }
    uint64_t *code2 = code + n;
    for (int64_t k = 0; k < n; k++) {
        code[k] = ordered_bits(keys[k].s);
        order[k] = k;
    }
    int64_t *src = order, *dst = spare;
    uint64_t *csrc = code, *cdst = code2;
    for (int shift = 0; shift < 64; shift += 8) {
        int64_t count[257] = {0};
        for (int64_t k = 0; k < n; k++) count[((csrc[k] >> shift) & 0xff) + 1]++;
        int single = 0;
        for (int b = 1; b <= 256; b++) single |= count[b] == n;
        if (single) continue;
        for (int b = 0; b < 256; b++) count[b + 1] += count[b];
        for (int64_t k = 0; k < n; k++) {
            int64_t at = count[(csrc[k] >> shift) & 0xff]++;
            dst[at] = src[k];
            cdst[at] = csrc[k];
        }
        int64_t *t = src;
        src = dst;
        dst = t;
        uint64_t *ct = csrc;
        csrc = cdst;
        cdst = ct;
    }
    if (src != order) memcpy(order, src, sizeof *order * (size_t)n);
    free(code);
    free(spare);
    return 1;
}

/* A direction no lattice plane contains, so that atoms of a crystal project
 * to distinct values and the sweep below stays O(N log N). */
static const double overlap_dir[3] = {0.7946544722917661, 0.5217363543410668, 0.3103804836451156};

static void add_key(sort_key *keys, int64_t *n, const double w[3], int64_t atom)
{
    sort_key *k = &keys[(*n)++];
    memcpy(k->w, w, sizeof k->w);
    k->s = w[0] * overlap_dir[0] + w[1] * overlap_dir[1] + w[2] * overlap_dir[2];
    k->atom = atom;
}

/* Keys for atom a: its wrapped position, plus ghost copies across every
 * periodic face it lies within the tolerance of (overlaps across a face). */
static void add_atom_keys(const mdf_frame *f, const mdf_sys_info *s, int64_t a, sort_key *keys, int64_t *n)
{
    double u[3], w[3];
    int near[3] = {0, 0, 0};
    if (!(s->pbc[0] | s->pbc[1] | s->pbc[2])) {
        add_key(keys, n, f->positions + 3 * a, a);
        return;
    }
    mdf_vec_mat(f->positions + 3 * a, s->inv_cell, u);
    for (int k = 0; k < 3; k++)
        if (s->pbc[k]) {
            u[k] -= floor(u[k]);
            near[k] = u[k] * mdf_perpendicular_width(s->inv_cell, k) < MDF_OVERLAP_TOLERANCE;
        }
    for (int g = 0; g < 8; g++) {
        if (((g & 1) && !near[0]) || ((g & 2) && !near[1]) || ((g & 4) && !near[2])) continue;
        double v[3] = {u[0] + (g & 1), u[1] + ((g >> 1) & 1), u[2] + ((g >> 2) & 1)};
        mdf_vec_mat(v, s->cell, w);
        add_key(keys, n, w, a);
    }
}

/* Finds two atoms closer than the tolerance: sort wrapped positions by
 * their projection on a generic direction, compare only neighbours in that
 * order. Returns 1 and the pair (lower index first) when found. */
static int find_overlap(const mdf_frame *f, const mdf_sys_info *s, int64_t *ia, int64_t *ib,
                        mdf_error *err, int *failed)
{
    int64_t n = f->natoms, nk = 0;
    sort_key *keys = malloc(sizeof *keys * (size_t)(n > 0 ? 8 * n : 1));
    if (!keys) {
        *failed = 1;
        mdf_error_set(err, MDF_ERR_NOMEM, "no memory to check %lld atoms for overlaps", (long long)n);
        return 0;
    }
    for (int64_t a = 0; a < n; a++) add_atom_keys(f, s, a, keys, &nk);
    int64_t *order = malloc(sizeof *order * (size_t)(nk > 0 ? nk : 1));
    if (!order || !order_keys(keys, nk, order)) {
        free(order);
        free(keys);
        *failed = 1;
        mdf_error_set(err, MDF_ERR_NOMEM, "no memory to check %lld atoms for overlaps", (long long)n);
        return 0;
    }
    const double tol2 = MDF_OVERLAP_TOLERANCE * MDF_OVERLAP_TOLERANCE;
    int found = 0;
    for (int64_t x = 0; x < nk && !found; x++)
        for (int64_t y = x + 1; y < nk && keys[order[y]].s - keys[order[x]].s <= MDF_OVERLAP_TOLERANCE; y++) {
            const sort_key *kx = &keys[order[x]], *ky = &keys[order[y]];
            double d2 = 0.0;
            for (int k = 0; k < 3; k++) d2 += (ky->w[k] - kx->w[k]) * (ky->w[k] - kx->w[k]);
            if (d2 < tol2 && kx->atom != ky->atom) {
                *ia = kx->atom < ky->atom ? kx->atom : ky->atom;
                *ib = kx->atom < ky->atom ? ky->atom : kx->atom;
                found = 1;
                break;
            }
        }
    free(order);
    free(keys);
    return found;
}

/* Fills the geometry part of a system record and checks it. */
static mdf_status set_geometry(const mdf_frame *f, size_t index, mdf_sys_info *s, mdf_error *err)
{
    memcpy(s->cell, f->cell, sizeof s->cell);
    for (int k = 0; k < 3; k++) s->pbc[k] = f->pbc[k] ? 1 : 0;
    int any_pbc = s->pbc[0] | s->pbc[1] | s->pbc[2];
    if (!mdf_inv3(s->cell, s->inv_cell)) {
        if (any_pbc)
            return mdf_error_set(err, MDF_ERR_PHYSICS,
                                 "system %zu is periodic but its cell has zero volume: give three "
                                 "linearly independent lattice vectors, or set pbc to F F F",
                                 index);
        memset(s->inv_cell, 0, sizeof s->inv_cell);
        return MDF_OK;
    }
    double vol = fabs(mdf_det3(s->cell));
    double scale = 0.0;
    for (int k = 0; k < 9; k++) scale = fmax(scale, fabs(s->cell[k]));
    if (any_pbc && vol <= 1e-12 * scale * scale * scale)
        return mdf_error_set(err, MDF_ERR_PHYSICS,
                             "system %zu is periodic but its cell volume is %g Å³ (degenerate): give "
                             "three linearly independent lattice vectors",
                             index, vol);
    return MDF_OK;
}

static mdf_status validate_frame(const mdf_frame *f, size_t index, const mdf_sys_info *s,
                                 mdf_error *err)
{
    if (f->natoms < 1)
        return mdf_error_set(err, MDF_ERR_INVALID, "system %zu has no atoms: remove it from the input",
                             index);
    for (int64_t a = 0; a < f->natoms; a++) {
        int z = f->numbers[a];
        if (z < 1 || z > 118 || mdf_element_mass(z) <= 0.0)
            return mdf_error_set(err, MDF_ERR_INVALID,
                                 "system %zu, atom %lld: unknown element (atomic number %d): use an "
                                 "element of the periodic table (1-118)",
                                 index, (long long)a, z);
        double m = frame_mass(f, a);
        if (!(m > 0.0) || !isfinite(m))
            return mdf_error_set(err, MDF_ERR_INVALID,
                                 "system %zu, atom %lld: mass %g amu is not positive: give a positive "
                                 "mass or drop the masses column to use standard masses",
                                 index, (long long)a, m);
        for (int k = 0; k < 3; k++)
            if (!isfinite(f->positions[3 * a + k]) ||
                (f->velocities && !isfinite(f->velocities[3 * a + k])))
                return mdf_error_set(err, MDF_ERR_INVALID,
                                     "system %zu, atom %lld: position or velocity is not finite",
                                     index, (long long)a);
    }
    mdf_status st = check_partial_masks(f, index, err);
    if (st != MDF_OK) return st;
    int failed = 0;
    int64_t ia = 0, ib = 0;
    if (find_overlap(f, s, &ia, &ib, err, &failed))
        return mdf_error_set(err, MDF_ERR_PHYSICS,
                             "system %zu: atoms %lld and %lld are on top of each other (closer than "
                             "%g Å): remove the duplicate atom",
                             index, (long long)ia, (long long)ib, MDF_OVERLAP_TOLERANCE);
    return failed ? err->code : MDF_OK;
}

/* ---- allocation and registration ---------------------------------------- */

void mdf_mem_advise_huge(void *p, size_t bytes)
{
#ifdef MADV_HUGEPAGE
    if (!p || bytes < MDF_HUGE_MIN) return;
    /* The whole huge pages inside [p, p + bytes): madvise needs page
     * alignment, and a huge page must lie within the range. */
    uintptr_t lo = ((uintptr_t)p + MDF_HUGE_PAGE - 1) & ~(uintptr_t)(MDF_HUGE_PAGE - 1);
    uintptr_t hi = ((uintptr_t)p + bytes) & ~(uintptr_t)(MDF_HUGE_PAGE - 1);
    if (hi > lo) (void)madvise((void *)lo, hi - lo, MADV_HUGEPAGE); /* advice only: failure changes nothing */
#else
    (void)p;
    (void)bytes;
#endif
}

static void *zalloc(size_t count, size_t size)
{
    /* StarPU may pin or copy these; 64-byte alignment keeps vector loads
     * happy, huge-page alignment lets a large array be all huge pages. */
    size_t bytes = count * size;
    if (bytes == 0) bytes = 64;
    const size_t align = bytes >= MDF_HUGE_MIN ? MDF_HUGE_PAGE : 64;
    void *p = NULL;
    if (posix_memalign(&p, align, (bytes + 63) & ~(size_t)63)) return NULL;
    mdf_mem_advise_huge(p, bytes); /* before the first write, which faults the pages in */
    memset(p, 0, bytes);
    return p;
}

static void register_shard(mdf_batch *b, mdf_shard *s)
{
    uint32_t na = (uint32_t)s->atom_cap, ns = (uint32_t)s->sys_cap;
    starpu_vector_data_register(&s->pos, STARPU_MAIN_RAM, (uintptr_t)(b->pos + 3 * s->atom_off), 3 * na,
                                sizeof(double));
    starpu_vector_data_register(&s->vel, STARPU_MAIN_RAM, (uintptr_t)(b->vel + 3 * s->atom_off), 3 * na,
                                sizeof(double));
    starpu_vector_data_register(&s->force, STARPU_MAIN_RAM, (uintptr_t)(b->force + 3 * s->atom_off),
                                3 * na, sizeof(double));
    starpu_vector_data_register(&s->atoms, STARPU_MAIN_RAM, (uintptr_t)(b->atoms + s->atom_off), na,
                                sizeof(mdf_atom_info));
    starpu_vector_data_register(&s->sys, STARPU_MAIN_RAM, (uintptr_t)(b->sys + s->sys_off), ns,
                                sizeof(mdf_sys_info));
    starpu_vector_data_register(&s->res, STARPU_MAIN_RAM, (uintptr_t)(b->res + s->sys_off), ns,
                                sizeof(mdf_sys_result));
    starpu_vector_data_register(&s->state, STARPU_MAIN_RAM, (uintptr_t)(b->state + s->sys_off), ns,
                                sizeof(mdf_sys_state));
    char name[64];
    snprintf(name, sizeof name, "pos[%d]", s->index);
    starpu_data_set_name(s->pos, name);
    snprintf(name, sizeof name, "force[%d]", s->index);
    starpu_data_set_name(s->force, name);
}

/* Splits systems into nshards contiguous groups of about equal atom counts. */
static void plan_shards(const mdf_frame *frames, size_t n, int nshards, int64_t natoms,
                        size_t *first_sys)
{
    size_t i = 0;
    int64_t done = 0;
    for (int k = 0; k < nshards; k++) {
        first_sys[k] = i;
        int64_t target = natoms * (k + 1) / nshards;
        size_t left_shards = (size_t)(nshards - k - 1);
        /* Take at least one system, and leave one for each later shard. */
        do {
            done += frames[i].natoms;
            i++;
        } while (i < n - left_shards && done + frames[i].natoms / 2 <= target);
    }
    first_sys[nshards] = n;
}

static int recomputed_key(const char *key)
{
    return strcmp(key, "virial") == 0 || strcmp(key, "stress") == 0;
}

mdf_status mdf_batch_set_slot_columns(mdf_batch *b, int64_t slot, const mdf_frame *f, mdf_error *err)
{
    mdf_frame *cols = &b->meta[slot].columns;
    mdf_frame_free(cols);
    cols->natoms = f->natoms;
    mdf_status st = mdf_frame_append_extras(cols, f, err);
    if (st != MDF_OK) mdf_frame_free(cols);
    return st;
}

/* ---- spatial order of large systems ------------------------------------------ */

/* A system of more than this many atoms is stored in a spatial order (env
 * MDF_SPATIAL_SORT: another threshold, 0 = never). Such a system is cut
 * into index-range slices (one model task each, 2,048 atoms and up), and in
 * an input ordered by lattice planes a slice is a slab thinner than the
 * cutoff: nearly every pair crosses its edges and is computed by both
 * slices. In a Morton order a slice is a compact block, most pairs lie
 * inside it (Newton's third law, once), and neighbours are near in memory. */
#define MDF_SPATIAL_SORT_ATOMS 2048

static int64_t spatial_sort_threshold(void)
{
    const char *e = getenv("MDF_SPATIAL_SORT");
    if (e && *e) {
        char *end;
        long long v = strtoll(e, &end, 10);
        if (*end == '\0' && v >= 0) return v == 0 ? INT64_MAX : v;
    }
    return MDF_SPATIAL_SORT_ATOMS;
}

/* The 10 low bits of v, two zero bits after each (a Morton code's axis). */
static uint64_t morton_spread(uint64_t v)
{
    v &= 0x3ff;
    v = (v | v << 16) & 0x30000ff;
    v = (v | v << 8) & 0x300f00f;
    v = (v | v << 4) & 0x30c30c3;
    v = (v | v << 2) & 0x9249249;
    return v;
}

static int compare_u64(const void *pa, const void *pb)
{
    uint64_t a = *(const uint64_t *)pa, b = *(const uint64_t *)pb;
    return (a > b) - (a < b);
}

/* The order in which frame f's atoms are stored: order[k] is the input
 * index of the k-th stored atom, by the Morton code of a grid over the
 * atoms' bounding box (about 8 atoms a cell, at most 1024 cells a side),
 * ties in input order. A function of the input positions alone, so the
 * same input gives the same order. NULL: input order (small systems, or
 * no memory, which costs speed only). */
static int32_t *spatial_order(const mdf_frame *f)
{
    const int64_t n = f->natoms;
    if (n <= spatial_sort_threshold() || n > INT32_MAX) return NULL;
    double lo[3] = {HUGE_VAL, HUGE_VAL, HUGE_VAL}, hi[3] = {-HUGE_VAL, -HUGE_VAL, -HUGE_VAL};
    for (int64_t a = 0; a < n; a++)
        for (int k = 0; k < 3; k++) {
            double x = f->positions[3 * a + k];
            lo[k] = x < lo[k] ? x : lo[k];
            hi[k] = x > hi[k] ? x : hi[k];
        }
    double volume = 1.0, span[3];
    for (int k = 0; k < 3; k++) {
        span[k] = hi[k] - lo[k];
        if (!isfinite(span[k])) return NULL; /* coordinates near the double range: keep the input order */
        volume *= span[k] > 0.0 ? span[k] : 1.0;
    }
    if (!isfinite(volume)) return NULL;
    double side = cbrt(volume * 8.0 / (double)n); /* about 8 atoms a cell */
    int32_t cells[3];
    for (int k = 0; k < 3; k++) {
        double c = span[k] > 0.0 && side > 0.0 ? ceil(span[k] / side) : 1.0;
        cells[k] = c > 1024.0 ? 1024 : c < 1.0 ? 1 : (int32_t)c;
    }
    uint64_t *key = malloc(sizeof *key * (size_t)n);
    int32_t *order = malloc(sizeof *order * (size_t)n);
    if (!key || !order) {
        free(key);
        free(order);
        return NULL;
    }
    for (int64_t a = 0; a < n; a++) {
        uint64_t code = 0;
        for (int k = 0; k < 3; k++) {
            double t = span[k] > 0.0 ? (f->positions[3 * a + k] - lo[k]) / span[k] * cells[k] : 0.0;
            int32_t c = t >= cells[k] ? cells[k] - 1 : t > 0.0 ? (int32_t)t : 0;
            code |= morton_spread((uint64_t)c) << k;
        }
        key[a] = code << 32 | (uint64_t)a;
    }
    qsort(key, (size_t)n, sizeof *key, compare_u64);
    for (int64_t k = 0; k < n; k++) order[k] = (int32_t)(key[k] & 0xffffffffu);
    free(key);
    return order;
}

/* mdf_sys_info.densest_cell of frame f, with s's geometry set: the atoms
 * of the fullest cell of a coarse grid over the cell in fractional
 * coordinates (rounded up), so that a slab with vacuum counts its solid's
 * density, not its mean. Each atom is shared between the 8 cells around
 * it by its distance to their centres (cloud in cell): lattice planes that
 * fall on a cell's edge would otherwise go whole to one side or the other,
 * by round-off, and make a perfect crystal look 40% denser in places.
 * 0 unless periodic in x, y and z (or without memory). */
static int32_t densest_cell(const mdf_frame *f, const mdf_sys_info *s)
{
    if (!(s->pbc[0] && s->pbc[1] && s->pbc[2]) || f->natoms > INT32_MAX) return 0;
    const int32_t m = mdf_coarse_cells((int32_t)f->natoms);
    double *count = calloc((size_t)m * (size_t)m * (size_t)m, sizeof *count);
    if (!count) return 0;
    for (int64_t a = 0; a < f->natoms; a++) {
        int32_t lo[3], hi[3];
        double t[3];
        for (int k = 0; k < 3; k++) {
            const double *x = f->positions + 3 * a;
            double u = x[0] * s->inv_cell[k] + x[1] * s->inv_cell[3 + k] + x[2] * s->inv_cell[6 + k];
            double w = (u - floor(u)) * m - 0.5; /* in cell-centre units */
            double below = floor(w);
            t[k] = w - below;
            int32_t q = (int32_t)below; /* -1 .. m-1 */
            lo[k] = q < 0 ? m - 1 : q >= m ? m - 1 : q;
            hi[k] = q + 1 >= m ? 0 : q + 1 < 0 ? 0 : q + 1;
        }
        for (int c = 0; c < 8; c++) {
            const int32_t i = c & 1 ? hi[0] : lo[0], j = c & 2 ? hi[1] : lo[1], k = c & 4 ? hi[2] : lo[2];
            const double share = (c & 1 ? t[0] : 1.0 - t[0]) * (c & 2 ? t[1] : 1.0 - t[1]) * (c & 4 ? t[2] : 1.0 - t[2]);
            count[((size_t)i * (size_t)m + (size_t)j) * (size_t)m + (size_t)k] += share;
        }
    }
    double most = 0.0;
    for (size_t c = 0; c < (size_t)m * (size_t)m * (size_t)m; c++) most = count[c] > most ? count[c] : most;
    free(count);
    return (int32_t)ceil(most);
}

/* Copies frame f (batch system i) into slot `slot` of shard sh, whose
 * local system index is `local_sys` and first atom `local_atom`. */
static mdf_status fill_system(mdf_batch *b, const mdf_frame *f, size_t i, mdf_shard *sh,
                              int32_t local_sys, int32_t local_atom, int32_t status, mdf_error *err)
{
    size_t slot = (size_t)sh->sys_off + (size_t)local_sys;
    mdf_sys_info *s = &b->sys[slot];
    mdf_status st = set_geometry(f, i, s, err);
    if (st == MDF_OK) st = validate_frame(f, i, s, err);
    if (st != MDF_OK) return st;
    const char *id = mdf_frame_get_info(f, "mdf_system_id");
    s->id = id ? strtoll(id, NULL, 10) : (int64_t)i;
    s->source = (int32_t)i;
    s->atom_start = local_atom;
    s->natoms = (int32_t)f->natoms;
    s->status = status;
    s->nfrozen = 0; /* counted with the atoms' flags below */
    s->densest_cell = densest_cell(f, s);
    const char *step = mdf_frame_get_info(f, "mdf_step");
    s->step = step ? strtoll(step, NULL, 10) : 0;
    b->res[slot].energy = f->has_energy ? f->energy : 0.0;
    b->res[slot].energy_prev = NAN; /* no previous step for the energy criterion */
    b->res[slot].fmax = NAN;
    int64_t base = sh->atom_off + local_atom;
    /* Stored atom k is input atom order[k] (its index field says which):
     * every output maps back. */
    int32_t *order = spatial_order(f);
    for (int64_t k = 0; k < f->natoms; k++) {
        const int64_t a = order ? order[k] : k;
        mdf_atom_info *ai = &b->atoms[base + k];
        ai->z = f->numbers[a];
        ai->mass = frame_mass(f, a);
        ai->inv_mass = 1.0 / ai->mass;
        ai->sys = local_sys;
        ai->flags = frame_atom_frozen(f, a) ? MDF_ATOM_FROZEN : 0;
        ai->index = (int32_t)a;
        s->nfrozen += (ai->flags & MDF_ATOM_FROZEN) != 0;
        for (int d = 0; d < 3; d++) {
            b->pos[3 * (base + k) + d] = f->positions[3 * a + d];
            b->vel[3 * (base + k) + d] = f->velocities ? f->velocities[3 * a + d] : 0.0;
            b->force[3 * (base + k) + d] = f->forces ? f->forces[3 * a + d] : 0.0;
        }
    }
    free(order);
    st = mdf_batch_set_slot_columns(b, (int64_t)slot, f, err);
    if (st != MDF_OK) return st;
    /* Keep the frame's own keys for output, other than ours and those of
     * the input's positions that the batch recomputes: a virial or stress
     * read in would be written back out with the new positions. */
    mdf_sys_meta *m = &b->meta[slot];
    m->info = calloc(f->ninfo ? f->ninfo : 1, sizeof *m->info);
    if (!m->info) return mdf_error_set(err, MDF_ERR_NOMEM, "no memory for system %zu's keys", i);
    for (size_t k = 0; k < f->ninfo; k++) {
        if (strncmp(f->info[k].key, "mdf_", 4) == 0 || recomputed_key(f->info[k].key)) continue;
        char *key = strdup(f->info[k].key), *value = strdup(f->info[k].value);
        if (!key || !value) {
            free(key);
            free(value);
            return mdf_error_set(err, MDF_ERR_NOMEM, "no memory for system %zu's keys", i);
        }
        m->info[m->ninfo].key = key;
        m->info[m->ninfo].value = value;
        m->ninfo++;
    }
    return MDF_OK;
}

/* With CUDA workers, page-locks the arrays the tasks move: StarPU copies
 * pageable memory to a GPU through a staging buffer at a fraction of the
 * bus's speed (on an H200 node, 1 GB/s where its bus benchmark, taken with
 * pinned memory, promised far more, so dmda misjudged every transfer). An
 * array that cannot be pinned (a locked-memory limit) stays pageable. */
static void pin_arrays(mdf_batch *b)
{
    if (starpu_cuda_worker_get_count() == 0) return;
    size_t na = (size_t)b->atom_cap, ns = b->sys_cap;
    void *ptr[7] = {b->pos, b->vel, b->force, b->atoms, b->sys, b->res, b->state};
    size_t bytes[7] = {3 * na * sizeof(double), 3 * na * sizeof(double), 3 * na * sizeof(double),
                       na * sizeof(mdf_atom_info), ns * sizeof(mdf_sys_info), ns * sizeof(mdf_sys_result),
                       ns * sizeof(mdf_sys_state)};
    for (int k = 0; k < 7; k++) {
        if (bytes[k] == 0 || starpu_memory_pin(ptr[k], bytes[k]) != 0) continue;
        b->pinned[b->npinned] = ptr[k];
        b->pinned_bytes[b->npinned] = bytes[k];
        b->npinned++;
    }
}

static mdf_status alloc_arrays(mdf_batch *b, mdf_error *err)
{
    size_t na = (size_t)b->atom_cap, ns = b->sys_cap;
    b->pos = zalloc(3 * na, sizeof(double));
    b->vel = zalloc(3 * na, sizeof(double));
    b->force = zalloc(3 * na, sizeof(double));
    b->atoms = zalloc(na, sizeof(mdf_atom_info));
    b->sys = zalloc(ns, sizeof(mdf_sys_info));
    b->res = zalloc(ns, sizeof(mdf_sys_result));
    b->state = zalloc(ns, sizeof(mdf_sys_state));
    b->meta = calloc(ns ? ns : 1, sizeof(mdf_sys_meta));
    b->sys_slot = calloc(ns ? ns : 1, sizeof(int64_t));
    b->shards = calloc((size_t)b->nshards, sizeof(mdf_shard));
    if (!b->pos || !b->vel || !b->force || !b->atoms || !b->sys || !b->res || !b->state || !b->meta ||
        !b->sys_slot || !b->shards)
        return mdf_error_set(err, MDF_ERR_NOMEM, "no memory for a batch of %zu systems and %zu atoms",
                             ns, na);
    pin_arrays(b);
    return MDF_OK;
}

static void free_meta(mdf_sys_meta *m)
{
    for (size_t k = 0; k < m->ninfo; k++) {
        free(m->info[k].key);
        free(m->info[k].value);
    }
    free(m->info);
    mdf_frame_free(&m->columns);
    memset(m, 0, sizeof *m);
}

static void free_arrays(mdf_batch *b)
{
    if (b->meta)
        for (size_t i = 0; i < b->sys_cap; i++) free_meta(&b->meta[i]);
    free(b->meta);
    for (int k = 0; k < b->npinned; k++) starpu_memory_unpin(b->pinned[k], b->pinned_bytes[k]);
    b->npinned = 0;
    free(b->pos);
    free(b->vel);
    free(b->force);
    free(b->atoms);
    free(b->sys);
    free(b->res);
    free(b->state);
    free(b->sys_slot);
    free(b->shards);
}

/* Spreads `extra` over nshards as evenly as integers allow. */
static int64_t share(int64_t extra, int k, int nshards)
{
    return extra * (k + 1) / nshards - extra * k / nshards;
}

static void renumber(mdf_batch *b);

mdf_status mdf_batch_create(const mdf_frame *frames, size_t nframes, const mdf_batch_config *cfg_in,
                            mdf_batch **out, mdf_error *err)
{
    *out = NULL;
    mdf_batch_config cfg;
    if (cfg_in) cfg = *cfg_in;
    else mdf_batch_config_init(&cfg);
    if (nframes == 0)
        return mdf_error_set(err, MDF_ERR_INVALID, "the batch has no systems: give at least one structure");
    if (cfg.nshards < 0 || cfg.extra_atoms < 0 || cfg.extra_systems < 0)
        return mdf_error_set(err, MDF_ERR_INVALID, "shard count and extra capacities must not be negative");
    int64_t natoms = 0;
    for (size_t i = 0; i < nframes; i++) natoms += frames[i].natoms;
    if (natoms + cfg.extra_atoms > ((int64_t)1 << 26))
        return mdf_error_set(err, MDF_ERR_INVALID,
                             "a batch holds at most %lld atoms, this one would hold %lld: split the input",
                             (long long)1 << 26, (long long)(natoms + cfg.extra_atoms));
    mdf_batch *b = calloc(1, sizeof *b);
    if (!b) return mdf_error_set(err, MDF_ERR_NOMEM, "no memory for a batch");
    b->nsys = nframes;
    b->natoms = natoms;
    b->sys_cap = nframes + (size_t)cfg.extra_systems;
    b->atom_cap = natoms + cfg.extra_atoms;
    b->nshards = cfg.nshards ? cfg.nshards : mdf_batch_default_shards(nframes, natoms);
    if ((size_t)b->nshards > nframes) b->nshards = (int)nframes;
    if (cfg.shard_first) { /* equal capacities, given by the plan */
        b->sys_cap = (size_t)b->nshards * (size_t)cfg.shard_sys_cap;
        b->atom_cap = (int64_t)b->nshards * cfg.shard_atom_cap;
    }
    mdf_status st = alloc_arrays(b, err);
    size_t *first = calloc((size_t)b->nshards + 1, sizeof *first);
    if (st == MDF_OK && !first) st = mdf_error_set(err, MDF_ERR_NOMEM, "no memory for shard plan");
    if (st == MDF_OK && cfg.shard_first) memcpy(first, cfg.shard_first, sizeof *first * ((size_t)b->nshards + 1));
    else if (st == MDF_OK) plan_shards(frames, nframes, b->nshards, natoms, first);
    /* Capacities and offsets first, so every system goes straight to its slot. */
    int64_t atom_off = 0, sys_off = 0;
    for (int k = 0; st == MDF_OK && k < b->nshards; k++) {
        mdf_shard *sh = &b->shards[k];
        sh->index = k;
        sh->atom_off = atom_off;
        sh->sys_off = sys_off;
        sh->nsys = (int32_t)(first[k + 1] - first[k]);
        sh->natoms = 0;
        for (size_t i = first[k]; i < first[k + 1]; i++) sh->natoms += (int32_t)frames[i].natoms;
        sh->atom_cap = sh->natoms + (int32_t)share(cfg.extra_atoms, k, b->nshards);
        sh->sys_cap = sh->nsys + (int32_t)share(cfg.extra_systems, k, b->nshards);
        if (cfg.shard_first) {
            if (sh->natoms > cfg.shard_atom_cap || sh->nsys > cfg.shard_sys_cap || sh->nsys < 1)
                st = mdf_error_set(err, MDF_ERR_INVALID, "shard %d's plan (%d systems, %d atoms) does not fit its "
                                   "capacity (%lld systems, %lld atoms)", k, sh->nsys, sh->natoms,
                                   (long long)cfg.shard_sys_cap, (long long)cfg.shard_atom_cap);
            sh->atom_cap = (int32_t)cfg.shard_atom_cap;
            sh->sys_cap = (int32_t)cfg.shard_sys_cap;
        }
        atom_off += sh->atom_cap;
        sys_off += sh->sys_cap;
    }
    for (int k = 0; st == MDF_OK && k < b->nshards; k++) {
        mdf_shard *sh = &b->shards[k];
        int32_t local_atom = 0;
        for (size_t i = first[k]; st == MDF_OK && i < first[k + 1]; i++) {
            int32_t local_sys = (int32_t)(i - first[k]);
            b->sys_slot[i] = sh->sys_off + local_sys;
            size_t index = cfg.sources ? cfg.sources[i] : i;
            st = fill_system(b, &frames[i], index, sh, local_sys, local_atom, cfg.initial_status, err);
            local_atom += (int32_t)frames[i].natoms;
        }
    }
    free(first);
    if (st != MDF_OK) {
        free_arrays(b);
        free(b);
        return st;
    }
    renumber(b);
    for (int k = 0; k < b->nshards; k++) register_shard(b, &b->shards[k]);
    *out = b;
    return MDF_OK;
}

/* ---- checkpoints ------------------------------------------------------------ */


mdf_status mdf_batch_alloc_layout(int nshards, const int32_t *atom_cap, const int32_t *sys_cap, mdf_batch **out,
                                  mdf_error *err)
{
    *out = NULL;
    if (nshards < 1) return mdf_error_set(err, MDF_ERR_INVALID, "a batch needs at least one shard");
    mdf_batch *b = calloc(1, sizeof *b);
    if (!b) return mdf_error_set(err, MDF_ERR_NOMEM, "no memory for a batch");
    b->nshards = nshards;
    for (int k = 0; k < nshards; k++) {
        if (atom_cap[k] < 1 || sys_cap[k] < 1) {
            free(b);
            return mdf_error_set(err, MDF_ERR_INVALID, "shard %d has no capacity (%d atoms, %d systems)", k,
                                 atom_cap[k], sys_cap[k]);
        }
        b->atom_cap += atom_cap[k];
        b->sys_cap += (size_t)sys_cap[k];
    }
    if (b->atom_cap > ((int64_t)1 << 26)) {
        int64_t atoms = b->atom_cap;
        free(b);
        return mdf_error_set(err, MDF_ERR_INVALID, "a batch holds at most %lld atoms, not %lld", (long long)1 << 26,
                             (long long)atoms);
    }
    mdf_status st = alloc_arrays(b, err);
    int64_t atom_off = 0, sys_off = 0;
    for (int k = 0; st == MDF_OK && k < nshards; k++) {
        mdf_shard *sh = &b->shards[k];
        sh->index = k;
        sh->atom_cap = atom_cap[k];
        sh->sys_cap = sys_cap[k];
        sh->atom_off = atom_off;
        sh->sys_off = sys_off;
        atom_off += atom_cap[k];
        sys_off += sys_cap[k];
    }
    if (st != MDF_OK) {
        free_arrays(b);
        free(b);
        return st;
    }
    *out = b;
    return MDF_OK;
}

void mdf_batch_register_loaded(mdf_batch *b)
{
    renumber(b);
    for (int k = 0; k < b->nshards; k++) register_shard(b, &b->shards[k]);
}

#define MDF_SHARD_HANDLES 7

/* Every handle of a shard, for loops that treat them alike. */
static void shard_handles(const mdf_shard *s, starpu_data_handle_t hs[MDF_SHARD_HANDLES])
{
    hs[0] = s->pos;
    hs[1] = s->vel;
    hs[2] = s->force;
    hs[3] = s->atoms;
    hs[4] = s->sys;
    hs[5] = s->res;
    hs[6] = s->state;
}

void mdf_batch_destroy(mdf_batch *b)
{
    if (!b) return;
    for (int k = 0; k < b->nshards; k++) {
        mdf_shard *s = &b->shards[k];
        starpu_data_handle_t hs[MDF_SHARD_HANDLES];
        shard_handles(s, hs);
        for (int h = 0; h < MDF_SHARD_HANDLES; h++)
            if (hs[h]) mdf_data_unregister(hs[h]);
    }
    free_arrays(b);
    free(b);
}

mdf_status mdf_batch_sync(mdf_batch *b, mdf_error *err)
{
    for (int k = 0; k < b->nshards; k++) {
        mdf_shard *s = &b->shards[k];
        starpu_data_handle_t hs[MDF_SHARD_HANDLES];
        shard_handles(s, hs);
        for (int h = 0; h < MDF_SHARD_HANDLES; h++) {
            /* Acquire then release: waits for writers and leaves a valid copy
             * in main memory, where the batch's arrays are. */
            int ret = mdf_data_acquire(hs[h], STARPU_R);
            if (ret != 0)
                return mdf_error_set(err, MDF_ERR_STARPU, "could not bring shard %d to host memory (%d)",
                                     k, ret);
            starpu_data_release(hs[h]);
        }
    }
    return MDF_OK;
}

static mdf_status check_index(const mdf_batch *b, size_t i, mdf_error *err)
{
    if (i >= b->nsys)
        return mdf_error_set(err, MDF_ERR_INVALID, "system index %zu is out of range (batch has %zu)", i,
                             b->nsys);
    return MDF_OK;
}

mdf_status mdf_batch_get_system(const mdf_batch *b, size_t i, mdf_system_view *out, mdf_error *err)
{
    mdf_status st = check_index(b, i, err);
    if (st != MDF_OK) return st;
    int64_t slot = b->sys_slot[i];
    const mdf_sys_info *s = &b->sys[slot];
    const mdf_sys_result *r = &b->res[slot];
    /* Padding too: checkpoints store views byte for byte, and a resumed
     * run's file must equal the uninterrupted run's. */
    memset(out, 0, sizeof *out);
    out->id = s->id;
    out->step = s->step;
    out->status = s->status;
    out->natoms = s->natoms;
    out->potential_energy = r->energy;
    out->kinetic_energy = r->kinetic;
    out->extra_energy = r->extra_energy;
    out->fmax = r->fmax;
    out->stage_step = s->stage_step;
    out->flags = s->flags;
    memcpy(out->virial, r->virial, sizeof out->virial);
    out->virial_fresh = r->virial_fresh;
    memcpy(out->cell, s->cell, sizeof out->cell);
    for (int k = 0; k < 3; k++) out->pbc[k] = s->pbc[k];
    return MDF_OK;
}

static mdf_status set_number_info(mdf_frame *f, const char *key, const char *fmt, double v1,
                                  long long v2, mdf_error *err)
{
    char text[64];
    if (fmt) snprintf(text, sizeof text, fmt, v1);
    else snprintf(text, sizeof text, "%lld", v2);
    return mdf_frame_set_info(f, key, text, err);
}

/* The token that says `frozen` in a freeze column of c's form. */
static const char *freeze_token(const mdf_extra_column *c, int frozen)
{
    if (strcmp(c->name, "fixed") == 0) return c->type == 'I' ? (frozen ? "1" : "0") : (frozen ? "T" : "F");
    return frozen ? "F" : "T"; /* move_mask: T = may move */
}

/* The output's freeze columns ("fixed", "move_mask", copied from the input)
 * say which atoms the batch holds frozen now (mdf_batch_set_frozen may have
 * changed some), in the form they were read, so that ASE reads its
 * FixAtoms (move_mask:L:1) or FixCartesian (L:3) back. An atom whose state
 * is unchanged keeps its input tokens (as read: "t" stays "t"). */
static mdf_status refresh_freeze_columns(const mdf_batch *b, int64_t base, mdf_frame *out, mdf_error *err)
{
    for (size_t k = 0; k < out->nextra; k++) {
        mdf_extra_column *c = &out->extra[k];
        for (int64_t stored = 0; stored < out->natoms; stored++) {
            const int64_t a = b->atoms[base + stored].index; /* the column's row */
            int was = column_freezes(c, a);
            int now = (b->atoms[base + stored].flags & MDF_ATOM_FROZEN) != 0;
            if (was < 0) break; /* not a freeze column */
            if (was == now) continue;
            for (int d = 0; d < c->ncols; d++) {
                char **t = &c->tokens[(size_t)c->ncols * (size_t)a + (size_t)d];
                char *token = strdup(freeze_token(c, now));
                if (!token) return mdf_error_set(err, MDF_ERR_NOMEM, "no memory for a frame's %s column", c->name);
                free(*t);
                *t = token;
            }
        }
    }
    return MDF_OK;
}

/* A 3x3 matrix as an info key: nine numbers, row by row, exact. */
static mdf_status set_matrix_info(mdf_frame *f, const char *key, const double m[9], mdf_error *err)
{
    char text[512];
    snprintf(text, sizeof text, "%.17g %.17g %.17g %.17g %.17g %.17g %.17g %.17g %.17g", m[0], m[1], m[2], m[3],
             m[4], m[5], m[6], m[7], m[8]);
    return mdf_frame_set_info(f, key, text, err);
}

/* ASE's "stress" key (eV/Å³, 3x3, which its extxyz reader turns into the
 * frame's calculator stress): -W/V, for systems periodic in all three
 * directions only, where the volume is the cell's. */
static mdf_status set_stress_info(mdf_frame *out, const double w[9], mdf_error *err)
{
    double volume = fabs(mdf_det3(out->cell));
    if (!(out->pbc[0] && out->pbc[1] && out->pbc[2]) || !(volume > 0.0)) return MDF_OK;
    double p[9];
    for (int k = 0; k < 9; k++) p[k] = -w[k] / volume;
    return set_matrix_info(out, "stress", p, err);
}

mdf_status mdf_batch_get_frame(const mdf_batch *b, size_t i, mdf_frame *out, mdf_error *err)
{
    memset(out, 0, sizeof *out);
    mdf_status st = check_index(b, i, err);
    if (st != MDF_OK) return st;
    int64_t slot = b->sys_slot[i];
    const mdf_sys_info *s = &b->sys[slot];
    st = mdf_frame_alloc(out, s->natoms, 1, 1, 1, err);
    if (st != MDF_OK) return st;
    int64_t base = mdf_batch_slot_atom(b, slot);
    for (int64_t stored = 0; stored < s->natoms; stored++) {
        const int64_t i = base + stored, a = b->atoms[i].index; /* back in input order */
        out->numbers[a] = b->atoms[i].z;
        out->masses[a] = b->atoms[i].mass;
        for (int k = 0; k < 3; k++) {
            out->positions[3 * a + k] = b->pos[3 * i + k];
            out->velocities[3 * a + k] = b->vel[3 * i + k];
            out->forces[3 * a + k] = b->force[3 * i + k];
        }
    }
    memcpy(out->cell, s->cell, sizeof out->cell);
    for (int k = 0; k < 3; k++) out->pbc[k] = s->pbc[k];
    out->has_cell = mdf_det3(s->cell) != 0.0;
    out->energy = b->res[slot].energy;
    out->has_energy = 1;
    const mdf_sys_meta *m = &b->meta[slot];
    for (size_t k = 0; st == MDF_OK && k < m->ninfo; k++)
        st = mdf_frame_set_info(out, m->info[k].key, m->info[k].value, err);
    if (st == MDF_OK) st = mdf_frame_append_extras(out, &m->columns, err);
    if (st == MDF_OK) st = refresh_freeze_columns(b, base, out, err);
    if (st == MDF_OK) st = set_number_info(out, "mdf_system_id", NULL, 0, (long long)s->id, err);
    if (st == MDF_OK) st = set_number_info(out, "mdf_step", NULL, 0, (long long)s->step, err);
    if (st == MDF_OK) st = set_number_info(out, "mdf_status", NULL, 0, (long long)s->status, err);
    if (st == MDF_OK)
        st = set_number_info(out, "kinetic_energy", "%.17g", b->res[slot].kinetic, 0, err);
    /* Only a virial of these positions: steps compute one only when asked. */
    if (st == MDF_OK && b->res[slot].virial_fresh) {
        st = set_matrix_info(out, "virial", b->res[slot].virial, err);
        if (st == MDF_OK) st = set_stress_info(out, b->res[slot].virial, err);
    }
    if (st != MDF_OK) mdf_frame_free(out);
    return st;
}

/* Where input atom `atom` of the system in `slot` is stored (its offset in
 * the system's atoms). */
static int64_t stored_atom(const mdf_batch *b, int64_t slot, int64_t atom)
{
    const mdf_atom_info *ai = &b->atoms[mdf_batch_slot_atom(b, slot)];
    if (ai[atom].index == atom) return atom; /* input order */
    for (int64_t k = 0; k < b->sys[slot].natoms; k++)
        if (ai[k].index == atom) return k;
    return atom; /* not reached: the indices are a permutation */
}

mdf_status mdf_batch_set_frozen(mdf_batch *b, size_t i, int64_t atom, int frozen, mdf_error *err)
{
    mdf_status st = check_index(b, i, err);
    if (st != MDF_OK) return st;
    int64_t slot = b->sys_slot[i];
    const mdf_sys_info *s = &b->sys[slot];
    if (atom < 0 || atom >= s->natoms)
        return mdf_error_set(err, MDF_ERR_INVALID, "system %zu (id %lld) has %d atoms: atom %lld does not exist",
                             i, (long long)s->id, s->natoms, (long long)atom);
    const mdf_shard *sh = mdf_batch_slot_shard(b, slot);
    /* Tasks may hold the atoms and the systems (whose frozen count the
     * degrees of freedom use): take both for writing through StarPU. */
    if (mdf_data_acquire(sh->atoms, STARPU_RW) != 0)
        return mdf_error_set(err, MDF_ERR_STARPU, "could not acquire shard %d's atoms", sh->index);
    if (mdf_data_acquire(sh->sys, STARPU_RW) != 0) {
        starpu_data_release(sh->atoms);
        return mdf_error_set(err, MDF_ERR_STARPU, "could not acquire shard %d's systems", sh->index);
    }
    mdf_atom_info *ai = &b->atoms[sh->atom_off + s->atom_start + stored_atom(b, slot, atom)];
    int was = (ai->flags & MDF_ATOM_FROZEN) != 0;
    ai->flags = frozen ? (ai->flags | MDF_ATOM_FROZEN) : (ai->flags & ~MDF_ATOM_FROZEN);
    b->sys[slot].nfrozen += (frozen != 0) - was;
    starpu_data_release(sh->sys);
    starpu_data_release(sh->atoms);
    return MDF_OK;
}

int mdf_batch_is_frozen(const mdf_batch *b, size_t i, int64_t atom)
{
    if (i >= b->nsys) return 0;
    int64_t slot = b->sys_slot[i];
    if (atom < 0 || atom >= b->sys[slot].natoms) return 0;
    return (b->atoms[mdf_batch_slot_atom(b, slot) + stored_atom(b, slot, atom)].flags & MDF_ATOM_FROZEN) != 0;
}

/* ---- inflight refills ------------------------------------------------------- */

mdf_status mdf_batch_check_frame(const mdf_frame *f, size_t index, mdf_error *err)
{
    mdf_sys_info s;
    memset(&s, 0, sizeof s);
    mdf_status st = set_geometry(f, index, &s, err);
    if (st == MDF_OK) st = validate_frame(f, index, &s, err);
    return st;
}

mdf_status mdf_batch_acquire_all(mdf_batch *b, mdf_error *err)
{
    for (int k = 0; k < b->nshards; k++) {
        starpu_data_handle_t hs[MDF_SHARD_HANDLES];
        shard_handles(&b->shards[k], hs);
        for (int h = 0; h < MDF_SHARD_HANDLES; h++)
            if (mdf_data_acquire(hs[h], STARPU_RW) != 0) {
                /* Give back what was taken before failing. */
                for (int g = h - 1; g >= 0; g--) starpu_data_release(hs[g]);
                for (int j = k - 1; j >= 0; j--) {
                    starpu_data_handle_t hj[MDF_SHARD_HANDLES];
                    shard_handles(&b->shards[j], hj);
                    for (int g = 0; g < MDF_SHARD_HANDLES; g++) starpu_data_release(hj[g]);
                }
                return mdf_error_set(err, MDF_ERR_STARPU, "could not acquire shard %d for a refill", k);
            }
    }
    return MDF_OK;
}

void mdf_batch_release_all(mdf_batch *b)
{
    for (int k = 0; k < b->nshards; k++) {
        starpu_data_handle_t hs[MDF_SHARD_HANDLES];
        shard_handles(&b->shards[k], hs);
        for (int h = 0; h < MDF_SHARD_HANDLES; h++) starpu_data_release(hs[h]);
    }
}

/* Moves local system s of shard sh to local index t starting at atom a0. */
static void move_system(mdf_batch *b, mdf_shard *sh, int32_t s, int32_t t, int32_t a0)
{
    mdf_sys_info *from = &b->sys[sh->sys_off + s];
    int64_t src = sh->atom_off + from->atom_start, dst = sh->atom_off + a0;
    size_t n = (size_t)from->natoms;
    if (src != dst) {
        memmove(b->pos + 3 * dst, b->pos + 3 * src, sizeof(double) * 3 * n);
        memmove(b->vel + 3 * dst, b->vel + 3 * src, sizeof(double) * 3 * n);
        memmove(b->force + 3 * dst, b->force + 3 * src, sizeof(double) * 3 * n);
        memmove(b->atoms + dst, b->atoms + src, sizeof(mdf_atom_info) * n);
    }
    for (size_t a = 0; a < n; a++) b->atoms[dst + (int64_t)a].sys = t;
    if (s != t) {
        b->sys[sh->sys_off + t] = *from;
        b->res[sh->sys_off + t] = b->res[sh->sys_off + s];
        b->state[sh->sys_off + t] = b->state[sh->sys_off + s];
        b->meta[sh->sys_off + t] = b->meta[sh->sys_off + s];
        memset(&b->meta[sh->sys_off + s], 0, sizeof(mdf_sys_meta));
    }
    b->sys[sh->sys_off + t].atom_start = a0;
}

/* Batch indices in shard order, after systems came or went. */
static void renumber(mdf_batch *b)
{
    size_t i = 0;
    int64_t atoms = 0;
    for (int k = 0; k < b->nshards; k++) {
        mdf_shard *sh = &b->shards[k];
        sh->max_natoms = 0;
        for (int32_t s = 0; s < sh->nsys; s++) {
            b->sys_slot[i++] = sh->sys_off + s;
            if (b->sys[sh->sys_off + s].natoms > sh->max_natoms) sh->max_natoms = b->sys[sh->sys_off + s].natoms;
        }
        atoms += sh->natoms;
    }
    b->nsys = i;
    b->natoms = atoms;
}

void mdf_batch_remove_done(mdf_batch *b, int (*done)(const mdf_sys_info *s, void *user), void *user)
{
    for (int k = 0; k < b->nshards; k++) {
        mdf_shard *sh = &b->shards[k];
        int32_t t = 0, a0 = 0;
        for (int32_t s = 0; s < sh->nsys; s++) {
            mdf_sys_info *si = &b->sys[sh->sys_off + s];
            if (done(si, user)) {
                free_meta(&b->meta[sh->sys_off + s]);
                continue;
            }
            int32_t natoms = si->natoms;
            move_system(b, sh, s, t, a0);
            t++;
            a0 += natoms;
        }
        /* Empty slots hold nothing a task could mistake for a system. */
        for (int32_t s = t; s < sh->nsys; s++) {
            memset(&b->sys[sh->sys_off + s], 0, sizeof(mdf_sys_info));
            memset(&b->res[sh->sys_off + s], 0, sizeof(mdf_sys_result));
            memset(&b->state[sh->sys_off + s], 0, sizeof(mdf_sys_state));
        }
        sh->nsys = t;
        sh->natoms = a0;
    }
    renumber(b);
}

void mdf_batch_shard_room(const mdf_batch *b, int k, int64_t *atoms, int64_t *systems)
{
    const mdf_shard *sh = &b->shards[k];
    *atoms = sh->atom_cap - sh->natoms;
    *systems = sh->sys_cap - sh->nsys;
}

mdf_status mdf_batch_append(mdf_batch *b, int k, const mdf_frame *f, size_t index, int32_t status, int32_t flags,
                            mdf_error *err)
{
    mdf_shard *sh = &b->shards[k];
    if (sh->natoms + f->natoms > sh->atom_cap || sh->nsys >= sh->sys_cap)
        return mdf_error_set(err, MDF_ERR_INVALID, "shard %d has no room for system %zu (%lld atoms)", k, index,
                             (long long)f->natoms);
    int32_t local = sh->nsys;
    size_t slot = (size_t)sh->sys_off + (size_t)local;
    memset(&b->sys[slot], 0, sizeof(mdf_sys_info));
    memset(&b->res[slot], 0, sizeof(mdf_sys_result));
    memset(&b->state[slot], 0, sizeof(mdf_sys_state));
    free_meta(&b->meta[slot]);
    mdf_status st = fill_system(b, f, index, sh, local, sh->natoms, status, err);
    if (st != MDF_OK) return st;
    b->sys[slot].flags = flags;
    sh->nsys++;
    sh->natoms += (int32_t)f->natoms;
    renumber(b);
    return MDF_OK;
}
