/* mdflow — summing the partial outputs of a shard's model chunks
 * (installed: every model codelet, built-in or a plugin's, marks its part;
 * mdflow/pair.h does so for pair models).
 *
 * A system larger than one chunk is computed by several tasks, each writing
 * its own partial forces (on a CPU, Newton's third law reaches every atom
 * of the system; on a GPU, only the chunk's own atoms) and partial
 * energy/virial. The sum runs in chunk order, so the
 * result does not depend on which worker ran which chunk. A system that
 * fits in one chunk receives exactly that chunk's numbers. */
#ifndef MDF_REDUCE_KERNEL_H
#define MDF_REDUCE_KERNEL_H

#include "mdflow/kernel.h"

#define MDF_REDUCE_MAX_CHUNKS 64

/* Which forces a model task wrote in its part. A part of whole systems
 * holds their forces whole (its touch range is its atom range). A slice of
 * one large system writes only its own atoms' forces, on either worker: the
 * GPU with full rows and half of every pair's energy, the CPU with Newton's
 * third law inside the slice and pairs across its edges counted half, on
 * its own atoms only (lj_cpu.c's lj_atom_slice, mdflow/pair.h); so slices of one system
 * sum right whichever worker ran each. The task marks, in the pad_ field
 * of each system it evaluated in its result part, what it wrote, and the
 * sum adds a chunk's forces over that range only. Parts start zeroed
 * (MDF_PART_TOUCH). The mark is read from the chunk's first system. */
#define MDF_PART_TOUCH 0
#define MDF_PART_ROWS 1

MDF_HD void mdf_part_mark(mdf_sys_result *r, int32_t how) { r->pad_ = how; }

/* Atoms [*lo, *hi) whose forces chunk ch's part holds (rp: its results). */
MDF_HD void mdf_part_range(const mdf_chunk *ch, const mdf_sys_result *rp, int32_t *lo, int32_t *hi)
{
    int rows = ch->sys_begin < ch->sys_end && rp[ch->sys_begin].pad_ == MDF_PART_ROWS;
    *lo = rows ? ch->atom_begin : ch->touch_begin;
    *hi = rows ? ch->atom_end : ch->touch_end;
}

typedef struct mdf_reduce_args {
    int64_t work;              /* atoms in the shard */
    int32_t natoms, nsys, nchunks;
    int32_t want_virial;       /* 0: the virial keeps its previous value */
    mdf_chunk chunks[MDF_REDUCE_MAX_CHUNKS];
} mdf_reduce_args;

#endif
