/* mdflow — the sampler's position, for checkpoints (internal). */
#ifndef MDF_SAMPLER_INTERNAL_H
#define MDF_SAMPLER_INTERNAL_H

#include "mdflow/sampler.h"

/* Which systems were taken: taken[i] = 1 for dataset index i (n = size). */
void mdf_sampler_get_taken(const mdf_sampler *s, unsigned char *taken);
/* Puts the sampler back where it was: the same systems taken (n must be
 * the dataset's size); what it chooses next follows from this alone. */
mdf_status mdf_sampler_set_taken(mdf_sampler *s, const unsigned char *taken, size_t n, mdf_error *err);

/* ---- stream mode: a pipeline stage's sampler ------------------------------------
 *
 * Over the whole dataset (sizes, ids and checks as any sampler), but a
 * system waits for the batch only once it has arrived (mdf_sampler_arrive),
 * with the state an earlier stage gave it; take() then works over the
 * arrived systems in arrival order (the first to arrive first, then the
 * largest that fits). mdf_sampler_remaining counts the systems waiting now;
 * the stream is exhausted once closed with none waiting. */
mdf_status mdf_sampler_make_stream(mdf_sampler *s, mdf_error *err);
int mdf_sampler_is_stream(const mdf_sampler *s);
/* Dataset system i as the dataset has it (mdf_sampler_frame gives a
 * stream's arrived state instead): fingerprints, checkpoints' columns. */
const mdf_frame *mdf_sampler_dataset_frame(const mdf_sampler *s, size_t i);
/* Nothing will ever be taken again: a plain sampler with none left, a
 * stream closed with none waiting. */
int mdf_sampler_exhausted(const mdf_sampler *s);
/* System i (dataset index) arrives through link `origin`, with frame f
 * (moved into the sampler: f is left empty) or, with f NULL, as the dataset
 * has it, and the flags `carry` it keeps from the stage before
 * (MDF_SYS_BUDGET_EXIT). Twice is an error. */
mdf_status mdf_sampler_arrive(mdf_sampler *s, size_t i, mdf_frame *f, int32_t origin, int32_t carry,
                              mdf_error *err);
int mdf_sampler_arrived(const mdf_sampler *s, size_t i);
/* Systems that have arrived so far (a plain sampler: its whole dataset). */
size_t mdf_sampler_narrived(const mdf_sampler *s);
void mdf_sampler_close(mdf_sampler *s);
int mdf_sampler_closed(const mdf_sampler *s);
/* Atoms of the systems waiting now (0 for a plain sampler). */
int64_t mdf_sampler_available_atoms(const mdf_sampler *s);
/* The link system i arrived through (-1: none), and the flags it carries. */
int32_t mdf_sampler_origin(const mdf_sampler *s, size_t i);
int32_t mdf_sampler_carry_flags(const mdf_sampler *s, size_t i);
/* Frees the arrived state of system i once the batch holds a copy. */
void mdf_sampler_release(mdf_sampler *s, size_t i);

/* Checkpoints of a stream: the systems waiting now in arrival order (out
 * holds size() entries; returns how many), every system's arrived flag and
 * carried flags, and whether a waiting system has a state of its own (else
 * it is the dataset's frame). */
size_t mdf_sampler_waiting(const mdf_sampler *s, size_t *out);
void mdf_sampler_get_arrived(const mdf_sampler *s, unsigned char *arrived, int32_t *carry);
int mdf_sampler_has_state(const mdf_sampler *s, size_t i);
/* Puts a stream back (after mdf_sampler_set_taken): arrived flags, carried
 * flags, the waiting systems in order with their frames (moved; NULL or an
 * empty frame: the dataset's). The stream is open again (the stages before
 * close it again) and no room is owed to any link for restored systems. */
mdf_status mdf_sampler_restore_stream(mdf_sampler *s, const unsigned char *arrived, const int32_t *carry,
                                      const size_t *waiting, mdf_frame *frames, size_t nwaiting, mdf_error *err);

#endif
