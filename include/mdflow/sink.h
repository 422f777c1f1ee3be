/* mdflow — sinks: where snapshots of systems go during a run.
 *
 * A sink stores whole systems (positions, velocities, forces, atomic numbers,
 * masses, cell, pbc, energies, virial, id, step, status). Three kinds:
 *
 *   device buffer  pre-allocated storage on the memory node of the worker
 *                  that writes first (a GPU's memory when snapshots are
 *                  packed there): writes never leave the device; read back
 *                  or drain it at the end;
 *   host memory    pre-allocated host arrays;
 *   HDF5 file      CSR structure datasets (docs/hdf5.md), appended, flushed
 *                  after every snapshot, in SWMR mode so that a killed run
 *                  leaves a readable file; or an H5MD 1.0 trajectory.
 *
 * Sinks chain (mdf_sink_chain): a write goes to the first sink with room for
 * the next system; when every sink is full the run stops with an error that
 * says how many systems could not be stored. Nothing is dropped silently.
 *
 * Inside a run, sinks are fed by the snapshot hooks (mdflow/hook.h): a codelet
 * (CPU and CUDA) packs the selected systems of a shard into a staging buffer,
 * and one task per sink of the chain appends them; HDF5 writes are CPU tasks
 * that overlap the next steps' compute. Lengths and capacities count systems. */
#ifndef MDFLOW_SINK_H
#define MDFLOW_SINK_H

#include <stddef.h>
#include <stdint.h>
#include "mdflow/error.h"
#include "mdflow/frame.h"
#include "mdflow/batch.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A group of systems packed in CSR form (what sinks store and HDF5 writers
 * take). Arrays are indexed by packed system s in [0, nsys) or by packed
 * atom a in [0, natoms); system s owns atoms [atom_ptr[s], atom_ptr[s+1]).
 * Velocities are in mdflow's internal unit (Å per 10.18 fs, as ASE). */
typedef struct mdf_snapshot {
    int64_t nsys, natoms;
    const int64_t *atom_ptr;    /* nsys + 1 */
    const int64_t *id;          /* nsys: system id */
    const int64_t *step;        /* nsys: steps integrated by the system */
    const int32_t *status;      /* nsys */
    const int32_t *flags;       /* nsys: MDF_SYSTEM_* (stage.h) */
    const int32_t *pbc;         /* nsys * 3 */
    const double *cell;         /* nsys * 9: lattice vectors as rows, Å */
    const double *energy;       /* nsys: potential energy, eV */
    const double *kinetic;      /* nsys: eV */
    const double *fmax;         /* nsys: eV/Å at the last check (NaN: none) */
    const double *virial;       /* nsys * 9, eV (stress = -virial / volume) */
    const double *time_fs;      /* nsys: simulated time, fs (step × the stage's dt) */
    const double *positions;    /* natoms * 3, Å */
    const double *velocities;   /* natoms * 3 */
    const double *forces;       /* natoms * 3, eV/Å */
    const double *masses;       /* natoms, amu */
    const int32_t *numbers;     /* natoms: atomic numbers */
} mdf_snapshot;

typedef struct mdf_sink mdf_sink;

/* Host memory for up to max_systems systems and max_atoms atoms. */
mdf_status mdf_sink_create_host(int64_t max_systems, int64_t max_atoms, mdf_sink **out, mdf_error *err);

/* Storage for up to max_systems systems and max_atoms atoms on the memory
 * node of the worker that first writes to it (a GPU when the snapshot hook's
 * packing runs there), allocated when the run starts. Reading or draining
 * brings it to the host. StarPU must be initialised. */
mdf_status mdf_sink_create_device(int64_t max_systems, int64_t max_atoms, mdf_sink **out, mdf_error *err);

typedef struct mdf_h5_options {
    int compression;        /* deflate level 0-9 (0: none, default) */
    int64_t chunk_systems;  /* systems per chunk of per-system datasets (default 256) */
    int64_t chunk_atoms;    /* atoms per chunk of per-atom datasets (default 16384) */
    int append;             /* 1: open an existing file and append (default 0: create,
                             * replacing a file of that name) */
    int64_t max_systems;    /* capacity, for chains and tests (0: unlimited) */
} mdf_h5_options;

void mdf_h5_options_init(mdf_h5_options *o);

/* CSR structure datasets in an HDF5 file (layout: docs/hdf5.md). */
mdf_status mdf_sink_create_hdf5(const char *path, const mdf_h5_options *opt, mdf_sink **out, mdf_error *err);

/* An H5MD 1.0 trajectory: one particle group per system ("system_<id>"),
 * position, velocity and force with step, time and value, the box, species
 * and masses; observables potential_energy, kinetic_energy. A path holding
 * "{id}" writes one file per system instead (readers that take the first
 * particle group, such as MDAnalysis, see the first system written of a
 * shared file only). */
mdf_status mdf_sink_create_h5md(const char *path, const mdf_h5_options *opt, mdf_sink **out, mdf_error *err);

/* Chains sinks: writes go to the first with room. The chain takes the sinks
 * over (destroying it destroys them), also on failure. At most 8. */
mdf_status mdf_sink_chain(mdf_sink **sinks, int n, mdf_sink **out, mdf_error *err);

/* Flushes and closes files (an error names the file), frees memory. */
mdf_status mdf_sink_close(mdf_sink *s, mdf_error *err);
void mdf_sink_destroy(mdf_sink *s);

const char *mdf_sink_kind(const mdf_sink *s);   /* "host", "device", "hdf5", "h5md", "chain" */
/* Systems stored (for a chain, in all of its sinks). Waits for pending writes. */
int64_t mdf_sink_length(mdf_sink *s);
/* Systems it can hold (-1: unlimited). */
int64_t mdf_sink_capacity(const mdf_sink *s);

/* Writes the systems of a synchronised batch whose mask entry is non-zero
 * (mask: one byte per system in batch order; NULL: all); their time is
 * step × dt_fs. Fails with
 * MDF_ERR_IO, naming how many systems did not fit, when the sinks are full;
 * the systems that fit are stored. */
mdf_status mdf_sink_write(mdf_sink *s, const mdf_batch *b, const uint8_t *mask, double dt_fs, mdf_error *err);
/* Writes frames as systems: id, step and status from their info keys
 * mdf_system_id (else the index), mdf_step, mdf_status (else 0); energy if
 * they have one (else NaN); the kinetic energy and virial from the keys
 * kinetic_energy and virial (9 numbers) that mdf_batch_get_frame writes,
 * else 0 and NaN; missing velocities, forces and time are 0, fmax NaN. */
mdf_status mdf_sink_write_frames(mdf_sink *s, const mdf_frame *frames, size_t n, mdf_error *err);
/* Writes a packed snapshot directly. */
mdf_status mdf_sink_write_snapshot(mdf_sink *s, const mdf_snapshot *snap, mdf_error *err);

/* Stored system i (0-based, write order; chains count through their sinks)
 * as a frame with info keys mdf_system_id, mdf_step, mdf_status. */
mdf_status mdf_sink_read(mdf_sink *s, int64_t i, mdf_frame *out, mdf_error *err);

/* Moves everything stored in src to dst, in order, and empties src (a full
 * dst stops with an error; what it took is removed from src). */
mdf_status mdf_sink_drain(mdf_sink *src, mdf_sink *dst, mdf_error *err);

/* Forgets every system after the first `length` (resume from a checkpoint
 * written when the sink held `length` systems). */
mdf_status mdf_sink_truncate(mdf_sink *s, int64_t length, mdf_error *err);

/* Reads every system of a CSR structure file as frames (input order), e.g.
 * to feed a sampler. The error names the file and the dataset. */
mdf_status mdf_read_hdf5_structures(const char *path, mdf_frame_list *out, mdf_error *err);

#ifdef __cplusplus
}
#endif
#endif
