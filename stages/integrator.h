/* mdflow — what an integrator or optimiser provides to a stage (internal):
 * the two halves of its step as task submissions for one shard. A new method
 * is one file defining an mdf_integrator_ops (its kernels in a
 * codelets/<name>/ folder) plus one line in registry.c.
 *
 * Contract of the tasks a method submits, for the systems whose status is
 * ctx->status (all other systems untouched):
 *   pre_update   runs before the model: typically moves positions.
 *   post_update  runs after the model (forces at the new positions): must
 *                leave res.kinetic (eV; 0 for optimisers), increment
 *                sys.step and sys.stage_step, and keep res.extra_energy
 *                (thermostat/barostat part of the conserved quantity).
 * Per-system state lives in the shard's `state` handle (mdf_sys_state): a
 * block with owner == 0 is fresh (the system just entered the stage) and
 * must be initialised by the method before use, then owner set to 1. Random
 * numbers come from Philox keyed by (seed, system id) and counted by
 * (sys.step, atom, component), so they are independent of sharding and of
 * the worker that runs the task. */
#ifndef MDF_INTEGRATOR_H
#define MDF_INTEGRATOR_H

#include "../dataflow/batch_internal.h"
#include "mdflow/stage.h"

typedef struct mdf_step_ctx {
    const mdf_shard *sh;             /* pos, vel, force, atoms, sys, res, state */
    starpu_data_handle_t work;       /* per-shard workspace (ops->work_bytes), else NULL */
    const mdf_dynamics_params *p;
    double dt;                       /* params.dt_fs in internal time units */
    int32_t status;                  /* the stage's systems */
    int64_t step;                    /* the stage's step (1, 2, ...) */
    double r_list;                   /* cutoff + skin of the run's lists, Å */
} mdf_step_ctx;

/* ops->flags */
#define MDF_INTEG_OPTIMISER 1     /* moves down the forces; velocities are its own */
#define MDF_INTEG_NEEDS_VIRIAL 2  /* reads res.virial in pre_update: model computes it every step */
#define MDF_INTEG_MOMENTUM 4      /* conserves the total momentum when no atom is frozen: the
                                   * kinetic energy has 3N - 3 degrees of freedom, not 3N
                                   * (mdf_dof; the temperatures and thermostat targets) */
#define MDF_INTEG_CELL 8          /* changes the cell: its tasks flag MDF_SYS_CELL_TOO_SMALL
                                   * from ctx->r_list, and the stage checks the flags */

typedef struct mdf_integrator_ops {
    const char *name;
    const char *summary;
    unsigned flags;
    /* Optional: checks the method's parameters; the message names the
     * parameter and its valid range. */
    mdf_status (*check)(const mdf_dynamics_params *p, mdf_error *err);
    /* Optional: bytes of a per-shard workspace (registered by the stage as
     * one StarPU vector of bytes, zeroed, passed as ctx->work). */
    size_t (*work_bytes)(const mdf_dynamics_params *p, int32_t atom_cap, int32_t sys_cap);
    int (*pre_update)(const mdf_step_ctx *c);
    /* May be NULL for a method whose whole step runs before the model (the
     * optimisers): its pre_update then does post_update's bookkeeping. */
    int (*post_update)(const mdf_step_ctx *c);
} mdf_integrator_ops;

const mdf_integrator_ops *mdf_find_integrator(const char *name);
/* 1-based registry number of a method (0 if it is not registered). */
int32_t mdf_integrator_number(const mdf_integrator_ops *ops);
/* 1 if the method conserves the total momentum (MDF_INTEG_MOMENTUM). */
static inline int mdf_integrator_momentum(const mdf_integrator_ops *ops)
{
    return ops && (ops->flags & MDF_INTEG_MOMENTUM) != 0;
}

/* The registered methods (one file each). */
extern const mdf_integrator_ops mdf_velocity_verlet;
extern const mdf_integrator_ops mdf_langevin;
extern const mdf_integrator_ops mdf_nose_hoover;
extern const mdf_integrator_ops mdf_bussi;
extern const mdf_integrator_ops mdf_npt;
extern const mdf_integrator_ops mdf_fire;
extern const mdf_integrator_ops mdf_fire2;
extern const mdf_integrator_ops mdf_gd;
extern const mdf_integrator_ops mdf_lbfgs;

#endif
