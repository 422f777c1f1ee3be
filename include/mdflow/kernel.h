/* mdflow — what every kernel shares, built-in or a plugin's (installed):
 * the per-atom and per-system records of a shard, and the qualifier that lets one inline function serve both the
 * CPU implementation (compiled as C11) and the CUDA one (compiled by nvcc).
 *
 * Kernels include this and nothing from StarPU: the arithmetic is checked by
 * the CPU tests and reused unchanged on the GPU. */
#ifndef MDF_KERNEL_COMMON_H
#define MDF_KERNEL_COMMON_H

#include <stdint.h>
#include <math.h>

#ifdef __CUDACC__
#define MDF_HD __host__ __device__ static inline
#else
#define MDF_HD static inline
#endif

/* CPU kernels with vectorised loops: AVX-512 and AVX2 copies besides the
 * baseline, the loader picks one per machine (GCC on x86-64 Linux; not
 * under AddressSanitizer or ThreadSanitizer: their ifunc resolvers would
 * run instrumented before the sanitizer's runtime is up). */
#if !defined(__CUDACC__) && defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && \
    defined(__linux__) && !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
#define MDF_CPU_CLONES __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define MDF_CPU_CLONES
#endif

/* Per-atom flags (mdf_atom_info.flags). */
#define MDF_ATOM_FROZEN 1  /* held in place: forces and velocities zeroed by the freeze hook */

/* Constant per-atom data. */
typedef struct mdf_atom_info {
    double mass;       /* amu */
    double inv_mass;
    int32_t z;         /* atomic number */
    int32_t sys;       /* index of the atom's system within its shard */
    int32_t flags;     /* MDF_ATOM_* */
    /* The atom's index in its system as given (input order). A system of
     * more than 2,048 atoms is stored in a spatial order (so that its
     * slices are compact), and every output maps its atoms back by this. */
    int32_t index;
} mdf_atom_info;

/* Per-system event flags (mdf_sys_info.flags). The NONFINITE bits are set by
 * the NaN detector; CONVERGED_NOW by the convergence task for the systems it
 * moved at that step (cleared at its next run), read by ON_CONVERGE hooks. */
#define MDF_SYS_CONVERGED_NOW    1
#define MDF_SYS_NONFINITE_POS    2
#define MDF_SYS_NONFINITE_VEL    4
#define MDF_SYS_NONFINITE_FORCE  8
#define MDF_SYS_NONFINITE_ENERGY 16
#define MDF_SYS_NONFINITE (MDF_SYS_NONFINITE_POS | MDF_SYS_NONFINITE_VEL | MDF_SYS_NONFINITE_FORCE | \
                           MDF_SYS_NONFINITE_ENERGY)
#define MDF_SYS_BUDGET_EXIT      32 /* left a stage on its step budget, unconverged */
#define MDF_SYS_ENTERED          64 /* moved into its current stage and not yet checked
                                     * there: set with CONVERGED_NOW, but cleared only
                                     * by the first check of the stage that serves it
                                     * (entry velocities read it, also across runs) */
#define MDF_SYS_CELL_TOO_SMALL  128 /* a method that changes the cell (NPT) took a
                                     * periodic width below (cutoff + skin) /
                                     * MDF_NL_MAX_REACH, past the images the
                                     * neighbour lists follow: set by the
                                     * method's task, reported by the stage, cleared
                                     * when a run starts */

/* Per-system description, read by models and written by integrators. */
typedef struct mdf_sys_info {
    int32_t atom_start;    /* first atom of the system within the shard */
    int32_t natoms;
    int32_t pbc[3];
    int32_t status;        /* stage routing code; see mdf_stage */
    int64_t id;            /* stable system id (dataset order) */
    int64_t step;          /* steps integrated so far (keys the random streams) */
    int64_t stage_step;    /* steps in the current stage (reset on a status move) */
    int32_t flags;         /* MDF_SYS_* */
    int32_t source;        /* index in the dataset it came from (the frames
                            * given to mdf_batch_create, or the sampler's);
                            * ids may be anything, this finds the system */
    int32_t nfrozen;       /* atoms flagged MDF_ATOM_FROZEN: kept by the batch
                            * wherever flags are set (creation, refills,
                            * mdf_batch_set_frozen) and counted again from the
                            * flags when a checkpoint is loaded */
    int32_t densest_cell;  /* periodic in x, y and z: the atoms of the fullest
                            * of mdf_coarse_cells(natoms)^3 equal cells (in
                            * fractional coordinates) when the system entered
                            * the batch, its highest local density; else 0.
                            * Sizes the neighbour lists (dataflow/compute.c) */
    double cell[9];        /* lattice vectors as rows, Å */
    double inv_cell[9];    /* inverse of cell: fractional = r · inv_cell */
} mdf_sys_info;

/* Cells per direction of the coarse grid of mdf_sys_info.densest_cell:
 * about 128 atoms a cell (a liquid's counts then vary by about 10%), at
 * most 64. */
MDF_HD int32_t mdf_coarse_cells(int32_t natoms)
{
    int32_t m = 1;
    while (m < 64 && (int64_t)(m + 1) * (m + 1) * (m + 1) * 128 <= natoms) m++;
    return m;
}

/* Per-system results: written by the model (energy, virial) and by the
 * integrator's second half (kinetic energy). */
typedef struct mdf_sys_result {
    double energy;         /* potential energy, eV */
    double kinetic;        /* kinetic energy, eV */
    double virial[9];      /* eV; see batch.h for the sign */
    double fmax;           /* largest per-atom force norm, eV/Å (convergence task) */
    double energy_prev;    /* potential energy at the previous check (NaN: none yet) */
    double extra_energy;   /* eV: thermostat/barostat terms of the conserved
                            * quantity (Nosé–Hoover chain energy, energy taken
                            * out by Bussi rescaling, barostat PV), so that
                            * energy + kinetic + extra_energy is conserved */
    int32_t virial_fresh;  /* 1: `virial` is that of the positions the model
                            * last evaluated (it computed one then); 0: of an
                            * earlier evaluation, or none. Only evaluations
                            * asked for it compute a virial (it costs ~40%) */
    int32_t pad_;
} mdf_sys_result;

/* Per-system integrator state: a small block each integrator interprets in
 * its own way (see its *_kernel.h). `owner` is 0 for a system that has not
 * started the current stage: the integrator initialises the block then sets
 * owner to 1. The convergence task zeroes the block when it moves a system
 * to another stage, and so does a refill. */
#define MDF_STATE_DOUBLES 20
#define MDF_STATE_INTS 4
typedef struct mdf_sys_state {
    double d[MDF_STATE_DOUBLES];
    int64_t n[MDF_STATE_INTS];
    int32_t owner;
    int32_t method;        /* registry number + 1 of the method that owns the
                            * block; a stage whose method differs starts the
                            * block afresh (set by the stage, host side) */
} mdf_sys_state;

/* A contiguous range of atoms of one shard worked on by one task: either
 * whole systems [sys_begin, sys_end) or a slice of a single large system. */
typedef struct mdf_chunk {
    int32_t atom_begin, atom_end;  /* atoms this task owns (i-loop) */
    int32_t sys_begin, sys_end;    /* systems it touches */
    int32_t touch_begin, touch_end;/* atoms it may write (whole systems) */
    int32_t index;                 /* chunk number within the shard */
} mdf_chunk;

/* The atoms [*i0, *i1) of system s that chunk c owns (empty when none). */
MDF_HD void mdf_chunk_rows(const mdf_chunk *c, const mdf_sys_info *s, int32_t *i0, int32_t *i1)
{
    *i0 = s->atom_start > c->atom_begin ? s->atom_start : c->atom_begin;
    *i1 = s->atom_start + s->natoms < c->atom_end ? s->atom_start + s->natoms : c->atom_end;
}

/* Whether chunk c holds all of system s's atoms (s is not sliced there). */
MDF_HD int mdf_chunk_holds_whole(const mdf_chunk *c, const mdf_sys_info *s)
{
    return c->atom_begin <= s->atom_start && c->atom_end >= s->atom_start + s->natoms;
}

/* Whether a system takes part in work restricted to statuses [lo, hi]. */
MDF_HD int mdf_status_in(int32_t status, int32_t lo, int32_t hi) { return status >= lo && status <= hi; }

/* Degrees of freedom of a system's kinetic energy: 3 per free atom, less
 * the 3 of the total momentum when the method conserves it (`momentum`:
 * velocity Verlet, Nosé–Hoover, Bussi, NPT; not Langevin, whose noise
 * thermalises the total momentum too) and no atom is frozen (frozen atoms
 * exert forces on the free ones, whose momentum then changes). A lone atom
 * keeps its 3; a system of frozen atoms only has none. The reported
 * temperature (2K / (Nf kB)) and the thermostats' targets (Nf kT/2) both
 * use this count. */
MDF_HD double mdf_dof(int32_t natoms, int32_t nfrozen, int momentum)
{
    int32_t nfree = natoms - nfrozen;
    if (nfree <= 0) return 0.0;
    return momentum && nfrozen == 0 && natoms > 1 ? 3.0 * natoms - 3.0 : 3.0 * nfree;
}

MDF_HD double mdf_sys_dof(const mdf_sys_info *s, int momentum) { return mdf_dof(s->natoms, s->nfrozen, momentum); }

/* The smallest distance between opposite faces of the cell along a
 * periodic direction (1 / |column k of inv_cell|), and that direction in
 * *axis (0..2; -1 and HUGE_VAL when no direction is periodic). Cutoff +
 * skin must not exceed half of it (the lists take one image per pair). */
/* Cells at most this many times narrower than cutoff + skin (the list
 * radius) are supported, through periodic images (mdflow/kernel/nlist.h);
 * a run refuses narrower ones up front, and NPT flags a cell that shrinks
 * past it (MDF_SYS_CELL_TOO_SMALL). */
#define MDF_NL_MAX_REACH 16

MDF_HD double mdf_periodic_width(const mdf_sys_info *s, int *axis)
{
    double w = HUGE_VAL;
    int at = -1;
    for (int k = 0; k < 3; k++) {
        if (!s->pbc[k]) continue;
        const double *c = s->inv_cell;
        double wk = 1.0 / sqrt(c[k] * c[k] + c[3 + k] * c[3 + k] + c[6 + k] * c[6 + k]);
        if (wk < w) {
            w = wk;
            at = k;
        }
    }
    if (axis) *axis = at;
    return w;
}

/* r · m for a row vector r and a 3x3 row-major matrix m. */
MDF_HD void mdf_vec_mat(const double r[3], const double m[9], double out[3])
{
    out[0] = r[0] * m[0] + r[1] * m[3] + r[2] * m[6];
    out[1] = r[0] * m[1] + r[1] * m[4] + r[2] * m[7];
    out[2] = r[0] * m[2] + r[1] * m[5] + r[2] * m[8];
}

#endif
