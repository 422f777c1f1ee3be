/* mdflow — the batch's inside, shared by dataflow/ and stages/ only. */
#ifndef MDF_BATCH_INTERNAL_H
#define MDF_BATCH_INTERNAL_H

#include <starpu.h>
#include "mdflow/batch.h"
#include "../codelets/common/mdf_kernel_common.h"

/* Large arrays that are written whole (the batch's, the neighbour lists)
 * ask for transparent huge pages: one fault per 2 MB instead of 512, and
 * fewer TLB misses in the force loops. Where the kernel gives huge pages
 * only on request ("madvise", as on this project's machines), a 1,000,000
 * atom run spent about 40% of its startup in page faults. Arrays of fewer
 * than MDF_HUGE_MIN bytes, or without THP support, keep small pages. */
#define MDF_HUGE_PAGE ((size_t)2 << 20)
#define MDF_HUGE_MIN ((size_t)4 << 20)
void mdf_mem_advise_huge(void *p, size_t bytes);

/* A contiguous group of systems with fixed capacities. Each array is one
 * StarPU vector handle over the batch's own host memory. */
typedef struct mdf_shard {
    int index;
    int32_t atom_cap, sys_cap;   /* fixed at creation */
    int32_t natoms, nsys;        /* current fill */
    int32_t max_natoms;          /* atoms of its largest system (host side: kernels
                                  * whose best shape depends on it read it here) */
    int64_t atom_off, sys_off;   /* where the shard starts in the batch arrays */
    starpu_data_handle_t pos;    /* 3*atom_cap doubles */
    starpu_data_handle_t vel;    /* 3*atom_cap doubles */
    starpu_data_handle_t force;  /* 3*atom_cap doubles */
    starpu_data_handle_t atoms;  /* atom_cap mdf_atom_info */
    starpu_data_handle_t sys;    /* sys_cap mdf_sys_info */
    starpu_data_handle_t res;    /* sys_cap mdf_sys_result */
    starpu_data_handle_t state;  /* sys_cap mdf_sys_state (integrator state) */
} mdf_shard;

/* What the batch keeps of a system's input frame for get_frame: its info
 * keys, and its per-atom extra columns (in `columns`, a frame holding only
 * natoms and extra), which the output carries in the input's atom order. */
typedef struct mdf_sys_meta {
    size_t ninfo;
    mdf_info_entry *info;
    mdf_frame columns;
} mdf_sys_meta;

struct mdf_batch {
    size_t nsys, sys_cap;
    int64_t natoms, atom_cap;
    double *pos, *vel, *force;
    mdf_atom_info *atoms;
    mdf_sys_info *sys;
    mdf_sys_result *res;
    mdf_sys_state *state;
    mdf_sys_meta *meta;           /* sys_cap, by slot */
    int64_t *sys_slot;            /* batch system index -> slot in sys/res/meta */
    int nshards;
    mdf_shard *shards;
    /* The arrays above that are page-locked (starpu_memory_pin, with CUDA
     * workers): copies to and from a GPU then run at the bus's speed. */
    void *pinned[7];
    size_t pinned_bytes[7];
    int npinned;
};

/* ---- inflight refills (host side) ------------------------------------------ */

/* Acquires every handle of every shard RW: StarPU waits for the tasks that
 * use them; the host arrays are then current and may be changed. */
mdf_status mdf_batch_acquire_all(mdf_batch *b, mdf_error *err);
void mdf_batch_release_all(mdf_batch *b);
/* With the batch acquired: removes every system for which done(system) is
 * true, compacting each shard; batch indices are renumbered (shard order).
 * Slots and handles stay. */
void mdf_batch_remove_done(mdf_batch *b, int (*done)(const mdf_sys_info *s, void *user), void *user);
/* Free room of shard k: atoms and system slots. */
void mdf_batch_shard_room(const mdf_batch *b, int k, int64_t *atoms, int64_t *systems);
/* With the batch acquired: appends frame f, system `index` of its dataset
 * (its source, and its id unless it has one), to shard k (which has room)
 * with the given status and flags, validated as mdf_batch_create does. */
mdf_status mdf_batch_append(mdf_batch *b, int k, const mdf_frame *f, size_t index, int32_t status, int32_t flags,
                            mdf_error *err);
/* Replaces slot `slot`'s copy of its input's extra columns by f's (f is
 * the system's dataset frame: a resumed checkpoint takes them from there
 * rather than storing them). */
mdf_status mdf_batch_set_slot_columns(mdf_batch *b, int64_t slot, const mdf_frame *f, mdf_error *err);
/* Validates a frame as mdf_batch_create does (index names it in messages). */
mdf_status mdf_batch_check_frame(const mdf_frame *f, size_t index, mdf_error *err);

/* ---- checkpoints (host side) ------------------------------------------------ */

/* An empty batch with shards of the given capacities (arrays zeroed, meta
 * empty, no handle registered yet): a checkpoint fills the arrays and each
 * shard's natoms and nsys, then mdf_batch_register_loaded makes it live. */
mdf_status mdf_batch_alloc_layout(int nshards, const int32_t *atom_cap, const int32_t *sys_cap, mdf_batch **out,
                                  mdf_error *err);
/* Numbers the systems in shard order and registers every shard's handles. */
void mdf_batch_register_loaded(mdf_batch *b);

/* Shard holding slot `slot` (shards are few; a linear scan is enough). */
static inline const mdf_shard *mdf_batch_slot_shard(const struct mdf_batch *b, int64_t slot)
{
    int k = 0;
    while (k + 1 < b->nshards && b->shards[k + 1].sys_off <= slot) k++;
    return &b->shards[k];
}

/* Global index of the first atom of the system in slot `slot`. */
static inline int64_t mdf_batch_slot_atom(const struct mdf_batch *b, int64_t slot)
{
    return mdf_batch_slot_shard(b, slot)->atom_off + b->sys[slot].atom_start;
}

#endif
