/* mdflow — molecular dynamics of a batch: single-point evaluations,
 * Maxwell–Boltzmann velocities and NVE velocity Verlet runs, all as StarPU
 * task graphs over the batch's shards. */
#ifndef MDFLOW_MD_H
#define MDFLOW_MD_H

#include <stdio.h>
#include <stdint.h>
#include "mdflow/batch.h"
#include "mdflow/model.h"
#include "mdflow/stage.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct mdf_md_config {
    const char *integrator;   /* registry name; "velocity_verlet" (NVE) */
    mdf_dynamics_params params; /* temperature and seed (dt_fs below wins) */
    mdf_param_list method_params; /* the integrator's own parameters by name */
    double dt_fs;             /* time step, fs */
    int64_t steps;
    int32_t status;           /* only systems with this status move */
    double skin;              /* Å added to the cutoff for neighbour lists */
    int32_t rebuild_every;    /* mdf_stage_config.rebuild_every (default 1) */
    int32_t rebuild_nocheck;  /* mdf_stage_config.rebuild_nocheck (default 0) */
    int32_t chunk_atoms;      /* a shard's model work is split above this
                               * many atoms; 0: automatic, 1024-8192 from
                               * the batch size and the worker count, and
                               * a large system in slices of 2048 atoms, at
                               * most 16 (set it to slice one large system
                               * for more than 8 workers) */
    int window;               /* steps submitted ahead of completion */
    int64_t thermo_every;     /* a thermo row every N steps; 0: none */
    int thermo_per_system;    /* 1: one row per system; 0: batch totals */
    FILE *thermo;             /* destination of the rows (NULL: none) */
} mdf_md_config;

typedef struct mdf_md_report {
    int64_t steps;
    int64_t atoms;
    double wall_seconds;
    double atom_steps_per_second;
    int64_t model_evaluations;
    int64_t list_rebuilds;        /* summed over systems */
    int64_t overflowed_atoms;     /* list slots too few: computed from cells */
    int32_t max_neighbours;
    int32_t list_slots;
    int nshards, nchunks;
} mdf_md_report;

void mdf_md_config_init(mdf_md_config *cfg);

/* Runs cfg->steps steps. Forces are evaluated first at the initial
 * positions. The host submits up to cfg->window steps ahead and never waits
 * per step; it waits once at the end. The batch is synchronised on return. */
mdf_status mdf_md_run(mdf_batch *b, mdf_model *m, const mdf_md_config *cfg, mdf_md_report *report,
                      mdf_error *err);

/* Energy, forces and virial at the current positions (skin irrelevant). */
mdf_status mdf_compute_forces(mdf_batch *b, mdf_model *m, mdf_error *err);

/* Maxwell–Boltzmann velocities at temperature_K for systems with status:
 * reproducible from (seed, system id), whatever the sharding; the total
 * momentum of each system with more than one atom is removed. */
mdf_status mdf_batch_thermalize(mdf_batch *b, double temperature_K, uint64_t seed, int32_t status,
                                mdf_error *err);

/* The distribution of each velocity component drawn at a temperature. */
typedef enum mdf_velocity_dist {
    MDF_VELOCITY_GAUSSIAN = 0, /* Maxwell–Boltzmann (mdf_batch_thermalize) */
    MDF_VELOCITY_UNIFORM = 1   /* uniform of the same variance: LAMMPS's `velocity create`
                                * default (dist uniform), to start a run as a LAMMPS input does */
} mdf_velocity_dist;

/* mdf_batch_thermalize with the components drawn from dist. */
mdf_status mdf_batch_thermalize_dist(mdf_batch *b, double temperature_K, uint64_t seed, int32_t status,
                                     mdf_velocity_dist dist, mdf_error *err);

#ifdef __cplusplus
}
#endif
#endif
