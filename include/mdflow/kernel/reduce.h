/* mdflow — summing the partial outputs of a shard's model chunks
 * (installed: every model codelet, built-in or a plugin's, marks its part;
 * mdflow/pair.h does so for pair models).
 *
 * A system larger than one chunk is computed by several tasks, each writing
 * its own partial forces (the chunk's own atoms, and on a CPU those that
 * Newton's third law reaches: see the marks below) and partial
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
/* A CPU slice under the halo contract (mdf_model_args.halo_at > 0, given
 * only when no CUDA worker may take a slice): every pair of the slice's
 * rows with an atom after it is computed once, whole (Newton's third law),
 * and the partner's share goes to the partner's row of the part; pairs
 * with an atom before the slice are left to that atom's slice. The part
 * holds its own rows, then the shares of the atoms listed at
 * mdf_part_halo(part, halo_at) in compact rows: the q-th listed atom's in
 * row atom_end + q (rows of the next slices, which this part does not
 * otherwise hold). Each pair is computed once instead of once from each
 * side. The halo region, int32 from mdf_part_halo: [0] the count, [1] the
 * model's own stamp (the list it was derived from), then the atoms
 * ascending (atom_cap of room), then the model's own map (atom_cap).
 * A model flagged MDF_MODEL_HALO_OWNED gets lists whose rows own the pairs
 * of mdf_nl_pair_owned instead, and then its halo may list atoms before
 * the slice too: those, nb of them (the first nb listed), take the nb rows
 * just before the slice, atom_begin - nb + q, and the others the rows from
 * atom_end on, as above (mdf_part_halo_row). Without atoms before the
 * slice both layouts are the same. */
#define MDF_PART_ROWS_HALO 2
/* Doubles of a part with a halo region: forces, then the region. */
#define MDF_PART_DOUBLES(atom_cap) (3 * (size_t)(atom_cap) + (size_t)(atom_cap) + 1)

MDF_HD int32_t *mdf_part_halo(double *part, int32_t halo_at) { return (int32_t *)(part + halo_at); }

MDF_HD void mdf_part_mark(mdf_sys_result *r, int32_t how) { r->pad_ = how; }

/* How many of the halo's listed atoms (h: mdf_part_halo) lie before the
 * slice that begins at atom lo: they come first (ascending). */
MDF_HD int32_t mdf_part_halo_before(const int32_t *h, int32_t lo)
{
    int32_t nb = 0;
    while (nb < h[0] && h[2 + nb] < lo) nb++;
    return nb;
}

/* The compact row of the q-th listed halo atom of the slice [lo, hb) whose
 * halo lists nb atoms before it (MDF_PART_ROWS_HALO). */
MDF_HD int32_t mdf_part_halo_row(int32_t q, int32_t nb, int32_t lo, int32_t hb)
{
    return q < nb ? lo - nb + q : hb + (q - nb);
}

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
    int32_t halo_at;           /* > 0: parts marked MDF_PART_ROWS_HALO list their halo there */
    mdf_chunk chunks[MDF_REDUCE_MAX_CHUNKS];
} mdf_reduce_args;

#endif
