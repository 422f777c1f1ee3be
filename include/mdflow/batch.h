/* mdflow — a batch: many atomic systems in one CSR layout, cut into shards
 * that StarPU schedules independently.
 *
 * Per atom: positions, velocities, forces, masses, atomic numbers, system
 * index. Per system: energy, kinetic energy, virial (3x3), cell (3x3, rows),
 * pbc, status, system id, step count. Capacities are fixed at creation, so
 * later refills never re-register StarPU handles. A shard is a contiguous
 * group of systems; each of its arrays is one StarPU handle over the batch's
 * own host memory (no copies on the CPU). */
#ifndef MDFLOW_BATCH_H
#define MDFLOW_BATCH_H

#include <stddef.h>
#include <stdint.h>
#include "mdflow/error.h"
#include "mdflow/frame.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct mdf_batch mdf_batch;

typedef struct mdf_batch_config {
    /* Number of shards; 0 chooses one from the workers StarPU has and the
     * batch size (see mdf_batch_default_shards). */
    int nshards;
    /* Extra room, in atoms and systems, for later refills (0: exact fit). */
    int64_t extra_atoms;
    int64_t extra_systems;
    /* Status every system starts with. */
    int32_t initial_status;
    /* Each frame's index in the dataset it came from (NULL: its position in
     * frames). A system keeps it (messages name it), and a frame without an
     * "mdf_system_id" key takes it as its id. */
    const size_t *sources;
    /* An explicit plan (inflight batching): frames [shard_first[k],
     * shard_first[k+1]) go to shard k (nshards entries + 1, nshards given),
     * and every shard gets shard_atom_cap atoms and shard_sys_cap systems of
     * capacity (extra_atoms/extra_systems are then ignored). */
    const size_t *shard_first;
    int64_t shard_atom_cap, shard_sys_cap;
} mdf_batch_config;

/* Fills cfg with the defaults (auto shards, exact fit, status 0). */
void mdf_batch_config_init(mdf_batch_config *cfg);

/* Packs frames into a new batch. StarPU must be initialised. Every frame is
 * validated (positive masses, known elements, non-degenerate cell, no two
 * atoms on top of each other); the error names the system and the fix.
 * System ids are 0..n-1 in frame order unless a frame carries an info key
 * "mdf_system_id". */
mdf_status mdf_batch_create(const mdf_frame *frames, size_t nframes,
                            const mdf_batch_config *cfg, mdf_batch **out,
                            mdf_error *err);
/* Unregisters every handle (waiting for pending tasks) and frees. */
void mdf_batch_destroy(mdf_batch *b);

size_t mdf_batch_nsystems(const mdf_batch *b);
int64_t mdf_batch_natoms(const mdf_batch *b);
int mdf_batch_nshards(const mdf_batch *b);
/* Shard count chosen when config asks for 0. */
int mdf_batch_default_shards(size_t nsystems, int64_t natoms);

/* Waits for all tasks touching the batch and brings its data to host
 * memory. This is the only synchronisation point; steps never call it. */
mdf_status mdf_batch_sync(mdf_batch *b, mdf_error *err);

/* After mdf_batch_sync(): system i (0-based, batch order) as a frame with
 * positions, velocities, forces, masses, numbers, cell, pbc, energy and
 * info keys "mdf_system_id", "mdf_step", "mdf_status", "kinetic_energy",
 * and "virial" when the last evaluation computed it (virial_fresh below;
 * a stage run gives it to every system that reached its exit status, at
 * refills and at the end; the frame's own "virial" and "stress" keys are
 * never carried over), with "stress" (-virial/V, eV/Å³, 9 numbers, ASE's
 * extxyz key) for systems periodic in x, y and z. The input frame's other
 * info keys and its extra columns come back too, in its atom order; the
 * freeze columns ("fixed", "move_mask") say which atoms are frozen now, in
 * the form they were read. */
mdf_status mdf_batch_get_frame(const mdf_batch *b, size_t i, mdf_frame *out,
                               mdf_error *err);

/* Per-system values after mdf_batch_sync(). */
typedef struct mdf_system_view {
    int64_t id;
    int64_t step;
    int32_t status;
    int64_t natoms;
    double potential_energy;  /* eV */
    double kinetic_energy;    /* eV */
    double extra_energy;      /* eV: thermostat/barostat part of the conserved
                               * quantity (0 for NVE) */
    double fmax;              /* eV/Å, largest per-atom force norm at the last
                               * convergence check (NaN before any) */
    int64_t stage_step;       /* steps in the current stage */
    int32_t flags;            /* MDF_SYS_* bits (mdflow/stage.h) */
    double virial[9];         /* eV: W = sum over pairs (r_i - r_j) ⊗ f_i, positive
                               * when repulsive (LAMMPS); stress = -W/V (ASE) */
    int32_t virial_fresh;     /* 1: `virial` belongs to the current positions; 0:
                               * to earlier ones (a step computes the virial only
                               * when an integrator, hook or the last step asks) */
    double cell[9];
    int pbc[3];
} mdf_system_view;
mdf_status mdf_batch_get_system(const mdf_batch *b, size_t i,
                                mdf_system_view *out, mdf_error *err);

/* Marks atom `atom` of system i (batch order) as frozen or free. A frozen
 * atom keeps its position under every integrator and optimiser when the
 * stage has a freeze hook (mdf_hook_create_freeze), which zeroes its force
 * and velocity, as ASE's FixAtoms does. Batches also read frozen atoms from
 * an extxyz column "fixed" (T/1 = frozen) or ASE's "move_mask": L:1 (its
 * FixAtoms, F = frozen) or L:3 (its FixCartesian, frozen when F F F; a batch
 * refuses an atom fixed in some directions only, MDF_ERR_INVALID). Velocity draws give
 * frozen atoms none. */
mdf_status mdf_batch_set_frozen(mdf_batch *b, size_t i, int64_t atom, int frozen, mdf_error *err);
/* 1 if the atom is frozen (after mdf_batch_sync()). */
int mdf_batch_is_frozen(const mdf_batch *b, size_t i, int64_t atom);

#ifdef __cplusplus
}
#endif
#endif
