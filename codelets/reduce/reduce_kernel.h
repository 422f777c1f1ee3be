/* mdflow — summing the partial outputs of a shard's model chunks.
 *
 * A system larger than one chunk is computed by several tasks, each writing
 * its own partial forces (Newton's third law reaches every atom of the
 * system) and partial energy/virial. The sum runs in chunk order, so the
 * result does not depend on which worker ran which chunk. A system that
 * fits in one chunk receives exactly that chunk's numbers. */
#ifndef MDF_REDUCE_KERNEL_H
#define MDF_REDUCE_KERNEL_H

#include "../common/mdf_kernel_common.h"

#define MDF_REDUCE_MAX_CHUNKS 64

typedef struct mdf_reduce_args {
    int64_t work;              /* atoms in the shard */
    int32_t natoms, nsys, nchunks;
    int32_t want_virial;       /* 0: the virial keeps its previous value */
    mdf_chunk chunks[MDF_REDUCE_MAX_CHUNKS];
} mdf_reduce_args;

#endif
