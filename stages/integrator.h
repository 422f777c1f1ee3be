/* mdflow — what an integrator provides to a stage (internal): the two
 * halves of its step as task submissions for one shard. A new integrator is
 * one file defining an mdf_integrator_ops plus one line in registry.c. */
#ifndef MDF_INTEGRATOR_H
#define MDF_INTEGRATOR_H

#include "../dataflow/batch_internal.h"

typedef struct mdf_integrator_ops {
    const char *name;
    const char *summary;
    /* Before the model: typically moves positions. */
    int (*pre_update)(const mdf_shard *sh, double dt, int32_t status);
    /* After the model: typically completes velocities, kinetic energy and
     * the step count. */
    int (*post_update)(const mdf_shard *sh, double dt, int32_t status);
} mdf_integrator_ops;

const mdf_integrator_ops *mdf_find_integrator(const char *name);

extern const mdf_integrator_ops mdf_velocity_verlet;

#endif
