/* mdflow — the model-evaluation pipeline: neighbour lists, model chunks and
 * their sum, per shard. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include "compute.h"
#include "../codelets/nlist/nlist_codelet.h"
#include "../codelets/reduce/reduce_codelet.h"
#include "../codelets/common/mdf_codelet.h"
#include "../codelets/gather/gather_codelet.h"
#include "mdflow/runtime.h"
#include "mdflow/stage.h"

#define MDF_DEFAULT_SKIN 1.0
/* Automatic chunk size: enough chunks for every worker to share a batch
 * of few large systems, but no task below ~1,000 atoms of work. */
#define MDF_CHUNK_MIN 1024
#define MDF_CHUNK_MAX 8192
/* Automatic slices of a large system: of MDF_CHUNK_SLICE atoms, but at
 * most MDF_CHUNK_SLICES of them. Both constants, so that a system's slices
 * (and the order of its sums) depend on the system alone, never on the
 * worker count or on the systems that share its batch. The cap: slices
 * of a few thousand atoms have a quarter of their pairs across their
 * edges, computed by both slices (half each) under the rows contract; in.lj
 * with 256,000 atoms on 2 CPUs ran 10% faster in 16 slices than in 32, and
 * 20% faster than in 63 (1,000,188 atoms: 16 and 64 the same), measured
 * before LJ's CPU slices computed such pairs once (MDF_PART_ROWS_HALO). 16 slices keep 2 per
 * worker up to 8 workers; with more workers and one large system, set
 * chunk_atoms (it sets the slice size itself). */
#define MDF_CHUNK_SLICE 2048
#define MDF_CHUNK_SLICES 16
/* A periodic system alone in its batch, with CPU workers only, is cut in
 * two from 2 x MDF_CHUNK_LONE_MIN atoms (slices of half of it, up to
 * MDF_CHUNK_SLICE): whole, one worker computed its forces while the
 * others waited (in.lj with 864 atoms on 2 CPUs: 41-44% busy each, 10,000
 * steps in 2.45-2.98 s; two slices, 2.05-2.33 s). Depends on the batch
 * alone, never on the worker count. */
#define MDF_CHUNK_LONE_MIN 384

/* Where a system lay in its shard when a pipeline was made (the bins are
 * indexed so): what mdf_compute_carry_lists maps to the new layout. */
typedef struct ws_system {
    int32_t source, atom_start, natoms;
} ws_system;

typedef struct shard_ws {
    ws_system *systems;    /* nsys of the shard at creation */
    int32_t nsys;
    void *bins_mem;
    starpu_data_handle_t bins;
    int32_t big_sys[2], big_atoms[2]; /* systems (and their atoms) binned by many
                                       * blocks on a GPU: see mdf_nl_bin_args */
    int nchunks;
    mdf_chunk chunks[MDF_REDUCE_MAX_CHUNKS];
    void *list_mem[MDF_REDUCE_MAX_CHUNKS];  /* mapped (lazy_zero), list_bytes[k] each */
    size_t list_bytes[MDF_REDUCE_MAX_CHUNKS];
    starpu_data_handle_t lists[MDF_REDUCE_MAX_CHUNKS];
    double *fpart_mem[MDF_REDUCE_MAX_CHUNKS];
    size_t fpart_bytes;    /* each, mapped (lazy_zero) */
    size_t fpart_doubles;  /* 3 * atom_cap forces, then the halo list's room */
    mdf_sys_result *rpart_mem[MDF_REDUCE_MAX_CHUNKS];
    starpu_data_handle_t fparts[MDF_REDUCE_MAX_CHUNKS];
    starpu_data_handle_t rparts[MDF_REDUCE_MAX_CHUNKS];
    /* Many-body models (an auxiliary pass): the shard's per-atom values and
     * each chunk's rows of them (several chunks only). */
    double *aux_mem;
    starpu_data_handle_t aux;
    double *auxpart_mem[MDF_REDUCE_MAX_CHUNKS];
    starpu_data_handle_t auxparts[MDF_REDUCE_MAX_CHUNKS];
} shard_ws;

struct mdf_compute {
    mdf_batch *b;
    mdf_model *m;
    mdf_compute_config cfg;
    double r_list;
    int32_t slots;
    int32_t big_atoms;      /* mdf_nl_bin_args.big_atoms */
    int32_t slice_atoms;    /* a system larger than this is sliced (cfg.chunk_atoms, or MDF_CHUNK_SLICE) */
    int32_t max_slices;     /* per system (MDF_CHUNK_SLICES when automatic, else no cap) */
    int32_t group_atoms;    /* whole systems per chunk, in atoms */
    int32_t all_pairs_atoms;/* see mdf_nl_bin_args; 0 with CUDA workers (their model uses lists) */
    int32_t all_pairs_small;
    double all_pairs_volume;
    shard_ws *ws;
    int64_t evaluations;
};

void mdf_compute_config_init(mdf_compute_config *cfg)
{
    cfg->skin = MDF_DEFAULT_SKIN;
    cfg->rebuild_every = 1;
    cfg->rebuild_nocheck = 0;
    cfg->chunk_atoms = 0; /* automatic */
    cfg->status_lo = INT32_MIN;
    cfg->status_hi = INT32_MAX;
}

int64_t mdf_compute_evaluations(const mdf_compute *c) { return c->evaluations; }

/* ---- validation -------------------------------------------------------- */

static mdf_status check_system(const mdf_compute *c, size_t i, mdf_error *err)
{
    const mdf_batch *b = c->b;
    int64_t slot = b->sys_slot[i];
    const mdf_sys_info *s = &b->sys[slot];
    int64_t base = mdf_batch_slot_atom(b, slot);
    for (int32_t a = 0; a < s->natoms; a++) {
        int z = b->atoms[base + a].z;
        if (!mdf_model_has_element(c->m, z)) /* named by its input index */
            return mdf_model_element_error(c->m, i, (long long)s->id, b->atoms[base + a].index, z, err);
    }
    /* A model that finds its own neighbours takes periodic images itself. */
    for (int k = 0; k < 3 && !mdf_model_own_neighbours(c->m); k++) {
        if (!s->pbc[k]) continue;
        double width = mdf_perpendicular_width(s->inv_cell, k);
        if (!(c->r_list <= MDF_NL_MAX_REACH * width))
            return mdf_error_set(err, MDF_ERR_INVALID,
                                 "system %zu (id %lld): cutoff + skin = %g + %g = %g Å is more than %d times the "
                                 "periodic width (%g Å) along lattice vector %d: replicate the cell to at least %g Å "
                                 "across (e.g. ase.build.make_supercell)",
                                 i, (long long)s->id, mdf_model_cutoff(c->m), c->cfg.skin, c->r_list, MDF_NL_MAX_REACH,
                                 width, k + 1, c->r_list / MDF_NL_MAX_REACH);
    }
    return MDF_OK;
}

/* ---- chunks ------------------------------------------------------------- */

static int add_chunk(mdf_chunk *out, int n, int32_t a0, int32_t a1, int32_t s0, int32_t s1,
                     int32_t t0, int32_t t1)
{
    if (n >= MDF_REDUCE_MAX_CHUNKS) return n + 1;
    out[n] = (mdf_chunk){.atom_begin = a0, .atom_end = a1, .sys_begin = s0, .sys_end = s1,
                         .touch_begin = t0, .touch_end = t1, .index = n};
    return n + 1;
}

/* Groups whole systems into chunks of about `group` atoms (the last one up
 * to 1.5 group); a system larger than `slice` atoms is split into equal
 * slices (at most max_slices), each a chunk of its own. Returns the count,
 * or more than MDF_REDUCE_MAX_CHUNKS when slice or group is too small. */
static int plan_chunks(const mdf_sys_info *sys, int32_t nsys, int32_t slice, int32_t max_slices, int32_t group,
                       mdf_chunk *out)
{
    int n = 0;
    int32_t g0 = 0, gatoms = 0;
    for (int32_t s = 0; s < nsys; s++) {
        int32_t na = sys[s].natoms, a0 = sys[s].atom_start;
        if (na > slice) {
            if (gatoms) n = add_chunk(out, n, sys[g0].atom_start, a0, g0, s, sys[g0].atom_start, a0);
            int32_t pieces = (int32_t)(((int64_t)na + slice - 1) / slice);
            if (pieces > max_slices) pieces = max_slices;
            for (int32_t p = 0; p < pieces; p++)
                n = add_chunk(out, n, a0 + (int32_t)((int64_t)na * p / pieces),
                              a0 + (int32_t)((int64_t)na * (p + 1) / pieces), s, s + 1, a0, a0 + na);
            g0 = s + 1;
            gatoms = 0;
            continue;
        }
        gatoms += na;
        /* Close the group at the target, unless what follows in the shard
         * is less than half a target: a sliver of a chunk costs its tasks'
         * overhead and buys no parallelism. */
        int32_t rest = sys[nsys - 1].atom_start + sys[nsys - 1].natoms - (a0 + na);
        if (gatoms >= group && (rest >= group / 2 || s == nsys - 1)) {
            n = add_chunk(out, n, sys[g0].atom_start, a0 + na, g0, s + 1, sys[g0].atom_start, a0 + na);
            g0 = s + 1;
            gatoms = 0;
        }
    }
    if (gatoms) {
        int32_t end = sys[nsys - 1].atom_start + sys[nsys - 1].natoms;
        n = add_chunk(out, n, sys[g0].atom_start, end, g0, nsys, sys[g0].atom_start, end);
    }
    return n;
}

/* ---- workspace ---------------------------------------------------------- */

/* Zeroed, 64-byte aligned, padded as mdf_blob_register needs. */
static void *aligned_zero(size_t bytes)
{
    void *p = NULL;
    bytes = mdf_blob_padded(bytes);
    if (posix_memalign(&p, 64, bytes ? bytes : 64)) return NULL;
    memset(p, 0, bytes);
    return p;
}

/* Zero pages that become resident only where written: a chunk's partial
 * forces span its whole shard (the model codelets index them like the
 * positions) but a chunk writes its own rows only, so with one large
 * system cut into 63 slices the shard's 63 parts held 63 times its forces
 * (393 MB of 638 MB at 256,000 atoms). Page-aligned; lazy_free undoes. */
static void *lazy_zero(size_t bytes)
{
    void *p = mmap(NULL, bytes ? bytes : 1, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

static void lazy_free(void *p, size_t bytes)
{
    if (p) munmap(p, bytes ? bytes : 1);
}

static mdf_status create_aux(const mdf_compute *c, const mdf_shard *sh, shard_ws *w, mdf_error *err);

static mdf_status create_shard_ws(mdf_compute *c, const mdf_shard *sh, shard_ws *w, mdf_error *err)
{
    const mdf_sys_info *sys = c->b->sys + sh->sys_off;
    /* A model that takes whole systems only: no system is sliced. */
    int32_t slice = (c->m->def->flags & MDF_MODEL_WHOLE_SYSTEMS) ? INT32_MAX : c->slice_atoms, group = c->group_atoms;
    /* Too many chunks: whole systems merge first, which leaves every sum
     * as it was; slices grow only when the shard's slices alone are too
     * many, and then depend on the shard's other systems too. */
    for (;;) {
        w->nchunks = sh->nsys ? plan_chunks(sys, sh->nsys, slice, c->max_slices, group, w->chunks) : 0;
        if (w->nchunks <= MDF_REDUCE_MAX_CHUNKS) break;
        if (group < INT32_MAX) group = group > INT32_MAX / 2 ? INT32_MAX : 2 * group;
        else slice = slice > INT32_MAX / 2 ? INT32_MAX : 2 * slice;
    }
    w->nsys = sh->nsys;
    w->systems = calloc((size_t)(sh->nsys ? sh->nsys : 1), sizeof *w->systems);
    if (!w->systems) return mdf_error_set(err, MDF_ERR_NOMEM, "no memory for shard %d's workspace", sh->index);
    for (int32_t s = 0; s < sh->nsys; s++)
        w->systems[s] = (ws_system){.source = sys[s].source, .atom_start = sys[s].atom_start, .natoms = sys[s].natoms};
    size_t bytes = mdf_nl_bins_bytes(sh->atom_cap, sh->sys_cap);
    w->bins_mem = aligned_zero(bytes);
    if (!w->bins_mem) return mdf_error_set(err, MDF_ERR_NOMEM, "no memory for shard %d's cell bins", sh->index);
    mdf_nl_bins_head *head = (mdf_nl_bins_head *)w->bins_mem;
    head->atom_cap = sh->atom_cap;
    head->sys_cap = sh->sys_cap;
    mdf_blob_register(&w->bins, STARPU_MAIN_RAM, (uintptr_t)w->bins_mem, bytes);
    w->big_sys[0] = w->big_sys[1] = w->big_atoms[0] = w->big_atoms[1] = 0;
    for (int32_t s = 0; s < sh->nsys; s++) {
        if (sys[s].natoms <= c->big_atoms) continue;
        if (w->big_sys[1] == 0) {
            w->big_sys[0] = s;
            w->big_atoms[0] = sys[s].atom_start;
        }
        w->big_sys[1] = s + 1;
        w->big_atoms[1] = sys[s].atom_start + sys[s].natoms;
    }
    for (int k = 0; k < w->nchunks; k++) {
        const mdf_chunk *ch = &w->chunks[k];
        int32_t n = ch->atom_end - ch->atom_begin;
        size_t lbytes = mdf_nl_list_bytes(n, c->slots);
        /* Mapped zero pages, not memset: the first build writes every row
         * (on the workers, in parallel), and at 1,000,000 atoms the host
         * spent 0.4 s zeroing 440 MB of slots first. */
        w->list_bytes[k] = mdf_blob_padded(lbytes);
        w->list_mem[k] = lazy_zero(w->list_bytes[k]);
        if (!w->list_mem[k])
            return mdf_error_set(err, MDF_ERR_NOMEM, "no memory for %zu bytes of neighbour lists", lbytes);
        mdf_mem_advise_huge(w->list_mem[k], w->list_bytes[k]); /* every row is written */
        mdf_nl_list_head *lh = (mdf_nl_list_head *)w->list_mem[k];
        lh->natoms = n;
        lh->slots = c->slots;
        lh->atom_begin = ch->atom_begin;
        mdf_blob_register(&w->lists[k], STARPU_MAIN_RAM, (uintptr_t)w->list_mem[k], lbytes);
        if (w->nchunks == 1) continue; /* the single chunk writes the shard's own arrays */
        /* The forces, then a halo region (MDF_PART_ROWS_HALO). */
        w->fpart_doubles = MDF_PART_DOUBLES(sh->atom_cap);
        w->fpart_bytes = sizeof(double) * w->fpart_doubles;
        w->fpart_mem[k] = lazy_zero(w->fpart_bytes);
        w->rpart_mem[k] = aligned_zero(sizeof(mdf_sys_result) * (size_t)sh->sys_cap);
        if (!w->fpart_mem[k] || !w->rpart_mem[k])
            return mdf_error_set(err, MDF_ERR_NOMEM, "no memory for shard %d's partial forces", sh->index);
        starpu_vector_data_register(&w->fparts[k], STARPU_MAIN_RAM, (uintptr_t)w->fpart_mem[k],
                                    (uint32_t)w->fpart_doubles, sizeof(double));
        starpu_vector_data_register(&w->rparts[k], STARPU_MAIN_RAM, (uintptr_t)w->rpart_mem[k],
                                    (uint32_t)sh->sys_cap, sizeof(mdf_sys_result));
    }
    return create_aux(c, sh, w, err);
}

/* The auxiliary pass's arrays: the shard's, and each chunk's rows when the
 * shard has several chunks (they write side by side, then a gather). */
static mdf_status create_aux(const mdf_compute *c, const mdf_shard *sh, shard_ws *w, mdf_error *err)
{
    int32_t per = mdf_model_aux_per_atom(c->m);
    if (per == 0) return MDF_OK;
    size_t n = (size_t)sh->atom_cap * (size_t)per;
    w->aux_mem = aligned_zero(sizeof(double) * n);
    if (!w->aux_mem) return mdf_error_set(err, MDF_ERR_NOMEM, "no memory for shard %d's per-atom model values", sh->index);
    mdf_blob_register(&w->aux, STARPU_MAIN_RAM, (uintptr_t)w->aux_mem, sizeof(double) * n);
    for (int k = 0; w->nchunks > 1 && k < w->nchunks; k++) {
        size_t rows = (size_t)(w->chunks[k].atom_end - w->chunks[k].atom_begin) * (size_t)per;
        w->auxpart_mem[k] = aligned_zero(sizeof(double) * (rows ? rows : 1));
        if (!w->auxpart_mem[k])
            return mdf_error_set(err, MDF_ERR_NOMEM, "no memory for shard %d's per-atom model values", sh->index);
        mdf_blob_register(&w->auxparts[k], STARPU_MAIN_RAM, (uintptr_t)w->auxpart_mem[k],
                          sizeof(double) * (rows ? rows : 1));
    }
    return MDF_OK;
}

static void destroy_shard_ws(shard_ws *w)
{
    for (int k = 0; k < w->nchunks; k++) {
        if (w->auxparts[k]) mdf_data_unregister(w->auxparts[k]);
        free(w->auxpart_mem[k]);
        if (w->lists[k]) mdf_data_unregister(w->lists[k]);
        if (w->fparts[k]) mdf_data_unregister(w->fparts[k]);
        if (w->rparts[k]) mdf_data_unregister(w->rparts[k]);
        lazy_free(w->list_mem[k], w->list_bytes[k]);
        lazy_free(w->fpart_mem[k], w->fpart_bytes);
        free(w->rpart_mem[k]);
    }
    if (w->aux) mdf_data_unregister(w->aux);
    free(w->aux_mem);
    if (w->bins) mdf_data_unregister(w->bins);
    free(w->bins_mem);
    free(w->systems);
}

/* The chunks that cut system s (a slice each). */
static int32_t system_slices(const shard_ws *w, int32_t s)
{
    int32_t n = 0;
    for (int q = 0; q < w->nchunks; q++) n += w->chunks[q].sys_begin == s && w->chunks[q].sys_end == s + 1;
    return n;
}

/* Whether chunk ch holds each of its systems whole (no slice): those
 * between its first and last are. */
static int chunk_is_whole(const mdf_chunk *ch, const mdf_sys_info *sys)
{
    return ch->sys_end <= ch->sys_begin ||
           (mdf_chunk_holds_whole(ch, &sys[ch->sys_begin]) && mdf_chunk_holds_whole(ch, &sys[ch->sys_end - 1]));
}

/* The slice size of a periodic system of natoms atoms alone in its batch
 * (MDF_CHUNK_LONE_MIN). */
static int32_t lone_slice_atoms(int32_t natoms)
{
    const int32_t half = natoms / 2 + natoms % 2;
    return half < MDF_CHUNK_LONE_MIN ? MDF_CHUNK_LONE_MIN : half > MDF_CHUNK_SLICE ? MDF_CHUNK_SLICE : half;
}

/* Two chunks per worker over the whole batch, within [MIN, MAX]: how many
 * whole systems share a chunk, which changes no sum (slices take
 * MDF_CHUNK_SLICE). */
static int32_t auto_chunk_atoms(const mdf_batch *b)
{
    int workers = mdf_runtime_plan_workers();
    int64_t t = b->natoms / (2 * (workers > 0 ? workers : 1));
    return (int32_t)(t < MDF_CHUNK_MIN ? MDF_CHUNK_MIN : t > MDF_CHUNK_MAX ? MDF_CHUNK_MAX : t);
}

/* Whether some periodic system of the batch is narrower than 2 r_list
 * along a direction: its atoms see several images of a neighbour (and of
 * themselves), so their list counts are not bounded by the atom count. */
static int batch_has_small_cells(const mdf_batch *b, double r_list)
{
    for (size_t i = 0; i < b->nsys; i++) {
        const mdf_sys_info *s = &b->sys[b->sys_slot[i]];
        for (int k = 0; k < 3; k++)
            if (s->pbc[k] && r_list > 0.5 * mdf_perpendicular_width(s->inv_cell, k)) return 1;
    }
    return 0;
}

/* Neighbours within r_list at a number density (atoms/Å³), plus 20%, plus
 * pad: the slots of a list sized for that density. */
static double slots_at_density(double density, double r_list, double pad)
{
    return ceil(1.2 * density * 4.0 / 3.0 * M_PI * r_list * r_list * r_list) + pad;
}

/* Slots from the batch's own density, where that is safe to go by: every
 * system periodic in x, y and z, with its local density measured when it
 * entered the batch (the fullest of its coarse cells: mdf_sys_info.
 * densest_cell; a slab in vacuum counts its solid), none below half the
 * model's expected density (a dilute gas may condense: it keeps the
 * model's bound), and no room for refills (a later system could be
 * denser). Then 1.2 x the neighbour count at the densest system's local
 * density (itself above the mean: the fullest cell), + 16: a liquid's or
 * a hot crystal's counts stay well within that (in.lj at T = 1.44: 111
 * slots, at most 87 neighbours for a mean of 78), and so does a cell that
 * shrinks by 10% (NPT, cell relaxation). A list costs 4 bytes a slot
 * and an atom, most of a large system's memory. An atom with more
 * neighbours than slots is still right (it walks its cells), only slower.
 * Depends only on what a checkpoint stores (the systems and the shards), so
 * a resumed run has the same slots. INFINITY when the rule does not apply. */
static double measured_slots(const mdf_model *m, const mdf_batch *b, double r_list)
{
    double densest = 0.0;
    for (int k = 0; k < b->nshards; k++) {
        const mdf_shard *sh = &b->shards[k];
        if (sh->atom_cap > sh->natoms || sh->sys_cap > sh->nsys) return INFINITY;
    }
    for (size_t i = 0; i < b->nsys; i++) {
        const mdf_sys_info *s = &b->sys[b->sys_slot[i]];
        if (!(s->pbc[0] && s->pbc[1] && s->pbc[2]) || s->densest_cell <= 0) return INFINITY;
        const double cells = mdf_coarse_cells(s->natoms);
        double density = s->densest_cell * cells * cells * cells / fabs(mdf_det3(s->cell));
        if (!(density >= 0.5 * m->density_hint)) return INFINITY;
        densest = density > densest ? density : densest;
    }
    return slots_at_density(densest, r_list, 16.0);
}

/* Slots per atom: the neighbours of the densest expected packing plus 20%
 * (or measured_slots, where that applies and is fewer), but never more
 * than a list can hold. When every periodic width is at
 * least 2 r_list, a neighbour appears once, and a system of n atoms gives
 * an atom at most n - 1 of them; a system never outgrows its shard (refills
 * included), so the largest shard capacity bounds every list. Small cells
 * (several images per neighbour) lift that bound; one refilled later into a
 * batch that had none walks its cells when its lists overflow. Worked out in
 * double: the sphere alone passes INT32_MAX from a cutoff of about 2600 Å. */
static int32_t list_slots(const mdf_model *m, const mdf_batch *b, double r_list)
{
    int64_t cap = 1;
    for (int k = 0; k < b->nshards; k++)
        if (b->shards[k].atom_cap > cap) cap = b->shards[k].atom_cap;
    double n = slots_at_density(m->density_hint, r_list, 8.0);
    double measured = measured_slots(m, b, r_list);
    if (measured < n) n = measured;
    double most = batch_has_small_cells(b, r_list) ? (double)INT32_MAX / 2 : (double)(cap > 1 ? cap - 1 : 1);
    return (int32_t)(n < most ? n : most); /* a NaN hint gives most too */
}

/* Bytes of every chunk's lists (the chunks cover the atoms present), as
 * create_shard_ws will allocate them. */
static double list_bytes_total(const mdf_batch *b, int32_t slots)
{
    double total = 0.0;
    for (int k = 0; k < b->nshards; k++) total += (double)b->shards[k].natoms * slots * sizeof(uint32_t);
    return total;
}

/* Lists larger than the machine's memory are refused up front, with the
 * cause, instead of failing (or swapping) in the allocation. */
static mdf_status check_list_memory(const mdf_compute *c, mdf_error *err)
{
    double need = list_bytes_total(c->b, c->slots);
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    double have = pages > 0 && page > 0 ? (double)pages * (double)page : INFINITY;
    if (need <= have) return MDF_OK;
    return mdf_error_set(err, MDF_ERR_INVALID,
                         "the neighbour lists would need %.1f GB (%d neighbours per atom within cutoff + skin "
                         "= %.4g Å, for %lld atoms), more than this machine's %.1f GB of memory: lower the "
                         "cutoff, or run fewer atoms per batch",
                         need / 1e9, (int)c->slots, c->r_list, (long long)c->b->natoms, have / 1e9);
}

mdf_status mdf_compute_create(mdf_batch *b, mdf_model *m, const mdf_compute_config *cfg,
                              mdf_compute **out, mdf_error *err)
{
    *out = NULL;
    mdf_compute *c = calloc(1, sizeof *c);
    if (!c) return mdf_error_set(err, MDF_ERR_NOMEM, "no memory for the compute pipeline");
    c->b = b;
    c->m = m;
    if (cfg) c->cfg = *cfg;
    else mdf_compute_config_init(&c->cfg);
    mdf_status st = MDF_OK;
    if (!(c->cfg.skin >= 0.0) || c->cfg.chunk_atoms < 0)
        st = mdf_error_set(err, MDF_ERR_INVALID, "skin must be >= 0 Å and chunk size >= 0 atoms (0: automatic)");
    else if (c->cfg.rebuild_every < 1 || c->cfg.rebuild_every > MDF_REBUILD_EVERY_MAX)
        st = mdf_error_set(err, MDF_ERR_INVALID, "rebuild interval %d: give 1 to %d steps", (int)c->cfg.rebuild_every,
                           MDF_REBUILD_EVERY_MAX);
    /* With the automatic size and a shard per worker or more, the shards
     * already keep every worker busy: whole systems then share one chunk
     * per shard (fewer, larger tasks: StarPU's per-task cost is ~10 µs).
     * Large systems are sliced the same either way. */
    int automatic = c->cfg.chunk_atoms == 0;
    if (automatic) c->cfg.chunk_atoms = auto_chunk_atoms(b);
    c->slice_atoms = automatic ? MDF_CHUNK_SLICE : c->cfg.chunk_atoms;
    c->max_slices = automatic ? MDF_CHUNK_SLICES : INT32_MAX;
    if (automatic && b->nsys == 1 && mdf_runtime_plan_cuda_workers() == 0) {
        const mdf_sys_info *lone = &b->sys[b->sys_slot[0]];
        if (lone->pbc[0] || lone->pbc[1] || lone->pbc[2]) c->slice_atoms = lone_slice_atoms(lone->natoms);
    }
    c->group_atoms = automatic && b->nshards >= mdf_runtime_plan_workers() ? INT32_MAX : c->cfg.chunk_atoms;
    c->r_list = mdf_model_list_radius(m, c->cfg.skin);
    /* Small open systems skip the lists when only CPUs evaluate the model:
     * whole in a chunk, and a box of at most all_pairs_ratio list spheres
     * (all pairs then number at most about that many times the listed ones). */
    /* MDF_NL_ALL_PAIRS=0 keeps the lists for every system (test_cuda
     * compares the CPU's list decisions with the GPU's, which has no all-pairs path). */
    const char *all_pairs = getenv("MDF_NL_ALL_PAIRS");
    int all_pairs_allowed = !(all_pairs && strcmp(all_pairs, "0") == 0);
    if (mdf_runtime_plan_cuda_workers() == 0 && m->all_pairs_atoms > 0 && all_pairs_allowed) {
        c->all_pairs_atoms = m->all_pairs_atoms < c->slice_atoms ? m->all_pairs_atoms : c->slice_atoms;
        c->all_pairs_small = m->all_pairs_small;
        c->all_pairs_volume = m->all_pairs_ratio * 4.0 / 3.0 * M_PI * c->r_list * c->r_list * c->r_list;
    }
    c->slots = list_slots(m, b, c->r_list);
    c->big_atoms = MDF_NL_BIG_ATOMS;
    const char *big = getenv("MDF_NL_BIG_ATOMS");
    if (big && *big) {
        char *end = NULL;
        long v = strtol(big, &end, 10);
        if (*end == '\0' && v >= 0 && v <= INT32_MAX) c->big_atoms = (int32_t)v;
    }
    for (size_t i = 0; st == MDF_OK && i < b->nsys; i++) st = check_system(c, i, err);
    if (st == MDF_OK) st = check_list_memory(c, err);
    if (st == MDF_OK) {
        c->ws = calloc((size_t)b->nshards, sizeof *c->ws);
        if (!c->ws) st = mdf_error_set(err, MDF_ERR_NOMEM, "no memory for shard workspaces");
    }
    for (int k = 0; st == MDF_OK && k < b->nshards; k++)
        st = create_shard_ws(c, &b->shards[k], &c->ws[k], err);
    if (st != MDF_OK) {
        mdf_compute_destroy(c);
        return st;
    }
    *out = c;
    return MDF_OK;
}

void mdf_compute_destroy(mdf_compute *c)
{
    if (!c) return;
    if (c->ws)
        for (int k = 0; k < c->b->nshards; k++) destroy_shard_ws(&c->ws[k]);
    free(c->ws);
    free(c);
}

/* ---- carrying the binning over to a new pipeline -------------------------- */

/* Copies system `from` of an old shard's bins (its atoms from a_old) to
 * system `to` of the new bins (from a_new): grid, reference positions,
 * offsets and cells, with the sorted atoms and cell starts shifted. */
static void carry_system(const mdf_nl_bins_view *o, int32_t from, int32_t a_old, mdf_nl_bins_view *n, int32_t to,
                         int32_t a_new, int32_t natoms)
{
    const mdf_nl_grid *g = &o->grid[from];
    n->grid[to] = *g;
    n->grid[to].nbuilds = 0; /* the old pipeline's statistics counted them */
    n->grid[to].rebuilt = 0;
    int32_t shift = a_new - a_old;
    if (g->image_q) n->grid[to].entry_base = g->entry_base + shift; /* wide entries count from atom_start */
    size_t k_old = 3 * (size_t)a_old, k_new = 3 * (size_t)a_new, nk = 3 * (size_t)natoms;
    memcpy(n->ref_pos + k_new, o->ref_pos + k_old, sizeof(double) * nk);
    memcpy(n->offset + k_new, o->offset + k_old, sizeof(double) * nk);
    memcpy(n->cell_of + a_new, o->cell_of + a_old, sizeof(int32_t) * (size_t)natoms);
    for (int32_t a = 0; a < natoms; a++) n->sorted[a_new + a] = o->sorted[a_old + a] + shift;
    if (!g->valid) return;
    /* A system has at most as many cells as atoms: its starts fit. */
    int64_t ncells = (int64_t)g->n[0] * g->n[1] * g->n[2];
    const int32_t *cs = o->cell_start + a_old + from;
    int32_t *cd = n->cell_start + a_new + to;
    for (int64_t cell = 0; cell <= ncells; cell++) cd[cell] = cs[cell] + shift;
}

/* Shard k: each system that stayed takes its bins from the old pipeline.
 * A refill keeps the staying systems in order and appends newcomers. */
static mdf_status carry_shard(mdf_compute *to, const mdf_compute *from, int k, mdf_error *err)
{
    shard_ws *o = &from->ws[k], *n = &to->ws[k];
    if (n->nsys == 0 || o->nsys == 0) return MDF_OK;
    if (mdf_data_acquire(o->bins, STARPU_R) != 0)
        return mdf_error_set(err, MDF_ERR_STARPU, "could not read shard %d's bins", k);
    if (mdf_data_acquire(n->bins, STARPU_RW) != 0) {
        starpu_data_release(o->bins);
        return mdf_error_set(err, MDF_ERR_STARPU, "could not write shard %d's bins", k);
    }
    mdf_nl_bins_view ov = mdf_nl_bins_map(o->bins_mem), nv = mdf_nl_bins_map(n->bins_mem);
    for (int32_t s = 0, q = 0; s < n->nsys; s++, q++) {
        while (q < o->nsys && o->systems[q].source != n->systems[s].source) q++;
        if (q == o->nsys) break; /* the newcomers, from here on */
        carry_system(&ov, q, o->systems[q].atom_start, &nv, s, n->systems[s].atom_start, n->systems[s].natoms);
    }
    nv.head->force_rebuild = MDF_NL_RELIST_ALL;
    starpu_data_release(n->bins);
    starpu_data_release(o->bins);
    return MDF_OK;
}

mdf_status mdf_compute_carry_lists(mdf_compute *to, const mdf_compute *from, mdf_error *err)
{
    /* GPU bins kernels rebuild every list on a relist anyway. */
    if (!from || mdf_runtime_plan_cuda_workers() > 0) return MDF_OK;
    mdf_status st = MDF_OK;
    for (int k = 0; st == MDF_OK && k < to->b->nshards; k++) st = carry_shard(to, from, k, err);
    return st;
}

/* ---- one evaluation ------------------------------------------------------ */

static mdf_status submitted(int ret, const char *what, int shard, mdf_error *err)
{
    if (ret == 0) return MDF_OK;
    return mdf_error_set(err, MDF_ERR_STARPU, "could not submit %s for shard %d (StarPU error %d)", what,
                         shard, ret);
}

/* A many-body model's auxiliary pass over shard k: each chunk writes its
 * own rows (its part, or the shard's array when it is the only chunk),
 * then one task gathers the parts. A chunk whose main task computes them
 * itself (fused[q]) has no task here; its part, never read, is left as it
 * was, and when every chunk is fused there is nothing to gather. */
static mdf_status submit_aux_pass(mdf_compute *c, int k, int32_t lo, int32_t hi, const int *fused, mdf_error *err)
{
    const mdf_shard *sh = &c->b->shards[k];
    shard_ws *w = &c->ws[k];
    int split = w->nchunks > 1, passes = 0;
    mdf_status st = MDF_OK;
    for (int q = 0; st == MDF_OK && q < w->nchunks; q++) {
        if (fused[q]) continue;
        mdf_model_task t = {.pos = sh->pos, .atoms = sh->atoms, .sys = sh->sys, .list = w->lists[q],
                            .bins = w->bins, .chunk = w->chunks[q], .status_lo = lo, .status_hi = hi,
                            .partial = split};
        st = submitted(mdf_model_insert_aux(c->m, &t, split ? w->auxparts[q] : w->aux), "the model's first pass", k,
                       err);
        passes++;
    }
    if (st != MDF_OK || !split || passes == 0) return st;
    mdf_gather_args g = {.work = (int64_t)sh->natoms * mdf_model_aux_per_atom(c->m), .nparts = w->nchunks,
                         .per_atom = mdf_model_aux_per_atom(c->m)};
    for (int q = 0; q < w->nchunks; q++) {
        g.begin[q] = w->chunks[q].atom_begin;
        g.count[q] = w->chunks[q].atom_end - w->chunks[q].atom_begin;
    }
    return submitted(mdf_insert_gather(w->auxparts, w->aux, &g), "the gather of per-atom model values", k, err);
}

/* One evaluation of shard k's systems with a status in [lo, hi]. With one
 * chunk, the model writes `force` and `res` (the shard's own arrays, or
 * scratch of their shape). */
static mdf_status submit_evaluation(mdf_compute *c, int k, int flags, int32_t lo, int32_t hi,
                                    starpu_data_handle_t force, starpu_data_handle_t res, mdf_error *err)
{
    const mdf_shard *sh = &c->b->shards[k];
    shard_ws *w = &c->ws[k];
    if (w->nchunks == 0) return MDF_OK;
    mdf_nl_bin_args bin = {.work = sh->natoms, .r_list = c->r_list,
                           .half_skin2 = 0.25 * c->cfg.skin * c->cfg.skin,
                           .rebuild_every = c->cfg.rebuild_every, .rebuild_nocheck = c->cfg.rebuild_nocheck,
                           .nsys = sh->nsys,
                           .status_lo = lo, .status_hi = hi,
                           .all_pairs_atoms = c->all_pairs_atoms, .all_pairs_small = c->all_pairs_small,
                           .all_pairs_volume = c->all_pairs_volume, .big_atoms = c->big_atoms,
                           .big_sys_begin = w->big_sys[0], .big_sys_end = w->big_sys[1],
                           .big_atom_begin = w->big_atoms[0], .big_atom_end = w->big_atoms[1]};
    /* The model's tasks are made first, so that on CPUs each chunk's list
     * build can write its model task's work (the chunk's atoms plus its
     * neighbour pairs) before the task is placed; submitted after the
     * lists and the auxiliary pass (data order). */
    int split = w->nchunks > 1;
    /* Slices may compute each pair once (MDF_PART_ROWS_HALO) unless a GPU
     * may take one, planned or present: its slices keep the rows-only
     * contract, and both kinds of slice could meet in one sum. */
    const int cpus_only = mdf_runtime_plan_cuda_workers() == 0 && mdf_runtime_cuda_workers() == 0;
    const int32_t halo_at = split && cpus_only ? 3 * sh->atom_cap : 0;
    struct starpu_task *model[MDF_REDUCE_MAX_CHUNKS] = {0};
    const unsigned mf = c->m->def->flags;
    const mdf_sys_info *sys = c->b->sys + sh->sys_off;
    /* Chunks whose main task computes the auxiliary values itself. */
    int fused[MDF_REDUCE_MAX_CHUNKS] = {0};
    for (int q = 0; q < w->nchunks; q++)
        fused[q] = w->aux && cpus_only && (mf & MDF_MODEL_AUX_FUSED_WHOLE) && chunk_is_whole(&w->chunks[q], sys);
    /* Slices whose rows own their pairs evenly (MDF_MODEL_HALO_OWNED): those
     * of a system cut in two (a periodic system alone in its batch,
     * MDF_CHUNK_LONE_MIN), where the first half held most pairs and held up
     * the step. A system in more slices keeps j > i: the scheduler evens
     * those out, and owned rows reach atoms on both sides of the slice
     * (256,000 atoms in 16 slices: 8% slower). A function of the chunks
     * alone, never of the worker count (the same sums under any), and the
     * same answer for every slice of a system. */
    int32_t owned[MDF_REDUCE_MAX_CHUNKS] = {0};
    for (int q = 0; halo_at > 0 && (mf & MDF_MODEL_HALO_OWNED) && q < w->nchunks; q++)
        owned[q] = !chunk_is_whole(&w->chunks[q], sys) && system_slices(w, w->chunks[q].sys_begin) <= 2;
    mdf_status st = MDF_OK;
    for (int q = 0; st == MDF_OK && q < w->nchunks; q++) {
        mdf_model_task t = {.pos = sh->pos, .atoms = sh->atoms, .sys = sh->sys, .list = w->lists[q],
                            .bins = w->bins, .forces = split ? w->fparts[q] : force,
                            .results = split ? w->rparts[q] : res, .aux = w->aux, .chunk = w->chunks[q],
                            .flags = flags, .status_lo = lo, .status_hi = hi, .partial = split,
                            .halo_at = halo_at, .fuse_aux = fused[q], .halo_owned = owned[q]};
        if (!(model[q] = mdf_model_prepare(c->m, &t))) st = submitted(-ENOMEM, "the model", k, err);
    }
    if (st == MDF_OK && w->nchunks == 1 && mdf_runtime_plan_cuda_workers() > 0) {
        /* With GPUs, binning and the only list in one task: it saves a
         * launch and a dependency hop per step for shards of small systems,
         * and the host could not learn the build's work anyway (the count
         * is on the device). */
        mdf_nl_update_args u = {.work = (int64_t)sh->natoms, .bin = bin,
                                .build = {.work = (int64_t)sh->natoms,
                                          .r_list2 = c->r_list * c->r_list, .chunk = w->chunks[0]}};
        st = submitted(mdf_insert_nl_update(sh->pos, sh->atoms, sh->sys, w->bins, w->lists[0], &u),
                       "neighbour lists", k, err);
    } else if (st == MDF_OK) {
        /* The binning, then each chunk's build, whose work (atoms to list)
         * the binning counts on CPUs: a step that re-lists nothing is a
         * near-empty build, one that re-lists a system costs its atoms,
         * and the dmda family sees which. */
        mdf_nl_build_args builds[MDF_REDUCE_MAX_CHUNKS];
        for (int q = 0; q < w->nchunks; q++) {
            const int whole = chunk_is_whole(&w->chunks[q], sys);
            const int32_t up_only = cpus_only && ((mf & MDF_MODEL_HALF_ROWS) ||
                                                  ((mf & MDF_MODEL_HALF_ROWS_WHOLE) && whole));
            builds[q] = (mdf_nl_build_args){.work = w->chunks[q].atom_end - w->chunks[q].atom_begin,
                                            .r_list2 = c->r_list * c->r_list, .chunk = w->chunks[q],
                                            .model_work = mdf_model_task_work(model[q]), .up_only = up_only,
                                            .owned = up_only && owned[q]};
        }
        st = submitted(mdf_insert_nl_bin_builds(sh->pos, sh->atoms, sh->sys, w->bins, w->lists, &bin, builds,
                                                w->nchunks),
                       "neighbour lists", k, err);
    }
    if (st == MDF_OK && w->aux) st = submit_aux_pass(c, k, lo, hi, fused, err);
    for (int q = 0; q < w->nchunks; q++) {
        if (st == MDF_OK) st = submitted(mdf_task_submit(model[q]), "the model", k, err);
        else mdf_task_drop(model[q]);
    }
    if (st == MDF_OK && split) {
        mdf_reduce_args r = {.work = sh->natoms, .natoms = sh->natoms, .nsys = sh->nsys, .nchunks = w->nchunks,
                             .want_virial = (flags & MDF_COMPUTE_VIRIAL) != 0, .halo_at = halo_at};
        memcpy(r.chunks, w->chunks, sizeof(mdf_chunk) * (size_t)w->nchunks);
        st = submitted(mdf_insert_reduce(w->fparts, w->rparts, sh->force, sh->res, &r), "the chunk sum", k, err);
    }
    return st;
}

mdf_status mdf_compute_submit(mdf_compute *c, int k, int flags, mdf_error *err)
{
    /* One evaluation per call on the last shard, even an empty one (a
     * refill can leave it without systems). */
    if (k == c->b->nshards - 1) c->evaluations++;
    const mdf_shard *sh = &c->b->shards[k];
    return submit_evaluation(c, k, flags, c->cfg.status_lo, c->cfg.status_hi, sh->force, sh->res, err);
}

/* ---- virials of the systems at one status -------------------------------- */

/* Systems of shard k at `status` (its statuses acquired on the host). */
static int32_t shard_count_status(const mdf_batch *b, int k, int32_t status)
{
    const mdf_shard *sh = &b->shards[k];
    int32_t n = 0;
    if (sh->nsys == 0 || mdf_data_acquire(sh->sys, STARPU_R) != 0) return sh->nsys;
    for (int32_t s = 0; s < sh->nsys; s++) n += b->sys[sh->sys_off + s].status == status;
    starpu_data_release(sh->sys);
    return n;
}

/* Copies the virials of shard k's systems at `status` from the scratch
 * results into the shard's. */
static mdf_status copy_virials(mdf_batch *b, int k, int32_t status, starpu_data_handle_t scratch,
                               const mdf_sys_result *tmp, mdf_error *err)
{
    const mdf_shard *sh = &b->shards[k];
    if (mdf_data_acquire(scratch, STARPU_R) != 0) goto fail;
    if (mdf_data_acquire(sh->sys, STARPU_R) != 0) {
        starpu_data_release(scratch);
        goto fail;
    }
    if (mdf_data_acquire(sh->res, STARPU_RW) != 0) {
        starpu_data_release(sh->sys);
        starpu_data_release(scratch);
        goto fail;
    }
    for (int32_t s = 0; s < sh->nsys; s++) {
        if (b->sys[sh->sys_off + s].status != status) continue;
        mdf_sys_result *r = &b->res[sh->sys_off + s];
        memcpy(r->virial, tmp[s].virial, sizeof r->virial);
        r->virial_fresh = tmp[s].virial_fresh;
    }
    starpu_data_release(sh->res);
    starpu_data_release(sh->sys);
    starpu_data_release(scratch);
    return MDF_OK;
fail:
    return mdf_error_set(err, MDF_ERR_STARPU, "could not read back the virials of shard %d", k);
}

/* Scratch force and result arrays of one shard, in the shard's shape. */
typedef struct shard_scratch {
    double *force;
    mdf_sys_result *res;
    starpu_data_handle_t force_h, res_h;
} shard_scratch;

static mdf_status scratch_create(const mdf_shard *sh, shard_scratch *s, mdf_error *err)
{
    s->force = aligned_zero(sizeof(double) * 3 * (size_t)sh->atom_cap);
    s->res = aligned_zero(sizeof(mdf_sys_result) * (size_t)sh->sys_cap);
    if (!s->force || !s->res)
        return mdf_error_set(err, MDF_ERR_NOMEM, "no memory to refresh the virials of shard %d", sh->index);
    starpu_vector_data_register(&s->force_h, STARPU_MAIN_RAM, (uintptr_t)s->force, 3 * (uint32_t)sh->atom_cap,
                                sizeof(double));
    starpu_vector_data_register(&s->res_h, STARPU_MAIN_RAM, (uintptr_t)s->res, (uint32_t)sh->sys_cap,
                                sizeof(mdf_sys_result));
    return MDF_OK;
}

static void scratch_destroy(shard_scratch *s)
{
    if (s->force_h) mdf_data_unregister(s->force_h);
    if (s->res_h) mdf_data_unregister(s->res_h);
    free(s->force);
    free(s->res);
}

mdf_status mdf_compute_refresh_virials(mdf_batch *b, mdf_model *m, double skin, int32_t status, mdf_error *err)
{
    int any = 0;
    for (int k = 0; k < b->nshards; k++) any |= shard_count_status(b, k, status) > 0;
    if (!any) return MDF_OK;
    mdf_compute_config cc;
    mdf_compute_config_init(&cc);
    cc.skin = skin;
    cc.chunk_atoms = INT32_MAX; /* one chunk per shard: no chunk sum, which rewrites every system */
    cc.status_lo = cc.status_hi = status;
    mdf_compute *c = NULL;
    mdf_status st = mdf_compute_create(b, m, &cc, &c, err);
    if (st != MDF_OK) return st;
    shard_scratch *sc = calloc((size_t)b->nshards, sizeof *sc);
    if (!sc) st = mdf_error_set(err, MDF_ERR_NOMEM, "no memory to refresh virials");
    for (int k = 0; st == MDF_OK && k < b->nshards; k++) {
        if (c->ws[k].nchunks == 0) continue;
        st = scratch_create(&b->shards[k], &sc[k], err);
        if (st == MDF_OK)
            st = submit_evaluation(c, k, MDF_COMPUTE_VIRIAL, status, status, sc[k].force_h, sc[k].res_h, err);
    }
    mdf_task_wait_for_all();
    for (int k = 0; st == MDF_OK && k < b->nshards; k++)
        if (sc[k].res_h) st = copy_virials(b, k, status, sc[k].res_h, sc[k].res, err);
    for (int k = 0; sc && k < b->nshards; k++) scratch_destroy(&sc[k]);
    free(sc);
    mdf_compute_destroy(c);
    return st;
}

/* ---- statistics --------------------------------------------------------- */

mdf_status mdf_compute_get_stats(mdf_compute *c, mdf_compute_stats *out, mdf_error *err)
{
    memset(out, 0, sizeof *out);
    out->slots = c->slots;
    for (int k = 0; k < c->b->nshards; k++) {
        shard_ws *w = &c->ws[k];
        const mdf_shard *sh = &c->b->shards[k];
        out->nchunks += w->nchunks;
        if (mdf_data_acquire(w->bins, STARPU_R) != 0)
            return mdf_error_set(err, MDF_ERR_STARPU, "could not read shard %d's bins", k);
        mdf_nl_bins_view v = mdf_nl_bins_map(w->bins_mem);
        for (int32_t s = 0; s < sh->nsys; s++) out->rebuilds += v.grid[s].nbuilds;
        starpu_data_release(w->bins);
        for (int q = 0; q < w->nchunks; q++) {
            if (mdf_data_acquire(w->lists[q], STARPU_R) != 0)
                return mdf_error_set(err, MDF_ERR_STARPU, "could not read shard %d's lists", k);
            const mdf_nl_list_head *h = (const mdf_nl_list_head *)w->list_mem[q];
            out->overflowed_atoms += h->overflowed;
            if (h->max_count > out->max_neighbours) out->max_neighbours = h->max_count;
            starpu_data_release(w->lists[q]);
        }
    }
    return MDF_OK;
}

int64_t mdf_compute_system_rebuilds(mdf_compute *c, size_t i)
{
    int64_t slot = c->b->sys_slot[i];
    const mdf_shard *sh = mdf_batch_slot_shard(c->b, slot);
    shard_ws *w = &c->ws[sh->index];
    if (mdf_data_acquire(w->bins, STARPU_R) != 0) return -1;
    int64_t n = mdf_nl_bins_map(w->bins_mem).grid[slot - sh->sys_off].nbuilds;
    starpu_data_release(w->bins);
    return n;
}

mdf_status mdf_compute_check_frame(const mdf_model *m, double skin, const mdf_frame *f, size_t index, int64_t id,
                                   mdf_error *err)
{
    for (int64_t a = 0; a < f->natoms; a++) {
        int z = f->numbers[a];
        if (!mdf_model_has_element(m, z)) return mdf_model_element_error(m, index, (long long)id, (long long)a, z, err);
    }
    double inv[9];
    if (mdf_model_own_neighbours(m) || !f->has_cell || !mdf_inv3(f->cell, inv)) return MDF_OK;
    double r_list = mdf_model_cutoff(m) + skin;
    for (int k = 0; k < 3; k++) {
        if (!f->pbc[k]) continue;
        double width = mdf_perpendicular_width(inv, k);
        if (!(r_list <= MDF_NL_MAX_REACH * width))
            return mdf_error_set(err, MDF_ERR_INVALID,
                                 "system %zu (id %lld): cutoff + skin = %g Å is more than %d times the periodic width "
                                 "(%g Å) along lattice vector %d: replicate the cell to at least %g Å across",
                                 index, (long long)id, r_list, MDF_NL_MAX_REACH, width, k + 1,
                                 r_list / MDF_NL_MAX_REACH);
    }
    return MDF_OK;
}
