/* mdflow — the sampler's position, for checkpoints (internal). */
#ifndef MDF_SAMPLER_INTERNAL_H
#define MDF_SAMPLER_INTERNAL_H

#include "mdflow/sampler.h"

/* Which systems were taken: taken[i] = 1 for dataset index i (n = size). */
void mdf_sampler_get_taken(const mdf_sampler *s, unsigned char *taken);
/* Puts the sampler back where it was: the same systems taken (n must be
 * the dataset's size); what it chooses next follows from this alone. */
mdf_status mdf_sampler_set_taken(mdf_sampler *s, const unsigned char *taken, size_t n, mdf_error *err);

#endif
