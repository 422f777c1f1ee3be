/* mdflow — what every kernel shares: the per-atom and per-system records of
 * a shard, and the qualifier that lets one inline function serve both the
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

/* Constant per-atom data. */
typedef struct mdf_atom_info {
    double mass;       /* amu */
    double inv_mass;
    int32_t z;         /* atomic number */
    int32_t sys;       /* index of the atom's system within its shard */
} mdf_atom_info;

/* Per-system description, read by models and written by integrators. */
typedef struct mdf_sys_info {
    int32_t atom_start;    /* first atom of the system within the shard */
    int32_t natoms;
    int32_t pbc[3];
    int32_t status;        /* stage routing code; see mdf_stage */
    int64_t id;            /* stable system id (dataset order) */
    int64_t step;          /* steps integrated so far */
    double cell[9];        /* lattice vectors as rows, Å */
    double inv_cell[9];    /* inverse of cell: fractional = r · inv_cell */
} mdf_sys_info;

/* Per-system results: written by the model (energy, virial) and by the
 * integrator's second half (kinetic energy). */
typedef struct mdf_sys_result {
    double energy;         /* potential energy, eV */
    double kinetic;        /* kinetic energy, eV */
    double virial[9];      /* eV; see batch.h for the sign */
} mdf_sys_result;

/* A contiguous range of atoms of one shard worked on by one task: either
 * whole systems [sys_begin, sys_end) or a slice of a single large system. */
typedef struct mdf_chunk {
    int32_t atom_begin, atom_end;  /* atoms this task owns (i-loop) */
    int32_t sys_begin, sys_end;    /* systems it touches */
    int32_t touch_begin, touch_end;/* atoms it may write (whole systems) */
    int32_t index;                 /* chunk number within the shard */
} mdf_chunk;

/* r · m for a row vector r and a 3x3 row-major matrix m. */
MDF_HD void mdf_vec_mat(const double r[3], const double m[9], double out[3])
{
    out[0] = r[0] * m[0] + r[1] * m[3] + r[2] * m[6];
    out[1] = r[0] * m[1] + r[1] * m[4] + r[2] * m[7];
    out[2] = r[0] * m[2] + r[1] * m[5] + r[2] * m[8];
}

#endif
