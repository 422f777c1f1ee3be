/* mdflow — the thermo log (internal): rows like LAMMPS's thermo output,
 * fed by per-shard sample tasks; the last shard to report a sample prints
 * its row, so the host never waits for it. */
#ifndef MDF_THERMO_H
#define MDF_THERMO_H

#include <stdio.h>
#include "../dataflow/batch_internal.h"
#include "../codelets/thermo/sample_codelet.h"

typedef struct mdf_thermo mdf_thermo;

/* ring: samples that may be in flight at once. */
mdf_status mdf_thermo_create(FILE *out, int per_system, double dt_fs, const mdf_batch *b, int ring,
                             mdf_thermo **t, mdf_error *err);
/* Submits the sample tasks of every shard for the current step. */
mdf_status mdf_thermo_submit(mdf_thermo *t, mdf_batch *b, mdf_error *err);
/* Call after all tasks completed. */
void mdf_thermo_destroy(mdf_thermo *t);

#endif
