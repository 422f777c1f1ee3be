/* mdflow — neighbour-list codelets: per shard, bin the systems that moved
 * more than skin/2; per chunk, rebuild the Verlet lists of those systems. */
#ifndef MDF_NLIST_CODELET_H
#define MDF_NLIST_CODELET_H

#include <starpu.h>
#include "nlist_kernel.h"
#include "mdflow/kernel/reduce.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct mdf_nl_bin_args {
    int64_t work;          /* atoms in the shard */
    double r_list;         /* cutoff + skin */
    double half_skin2;     /* (skin/2)^2 */
    int32_t rebuild_every;   /* mdf_nl_rebuild_due: consider a rebuild every N */
    int32_t rebuild_nocheck; /* 1: then rebuild whatever the atoms did */
    int32_t nsys;
    int32_t status_lo, status_hi; /* only systems with a status in [lo, hi] */
    int32_t all_pairs_atoms;   /* > 0: open systems of at most this many atoms
                                * (and of compact extent) are left to the
                                * model's all-pairs path; 0: never */
    int32_t all_pairs_small;   /* at most this many atoms: whatever the extent */
    double all_pairs_volume;   /* largest bounding box, Å³, for that path */
    /* CUDA only: systems of more than big_atoms atoms are binned by many
     * thread blocks (the others by one block each). They all lie in systems
     * [big_sys_begin, big_sys_end) and atoms [big_atom_begin, big_atom_end)
     * of the shard; an empty range: none. The CPU ignores these. */
    int32_t big_atoms;
    int32_t big_sys_begin, big_sys_end;
    int32_t big_atom_begin, big_atom_end;
    /* CPU only: the nbuilds list builds after this binning, one per chunk
     * (chunks[q]): the binning writes into *build_work[q] the atoms whose
     * lists the build will make (those of the systems it binned or
     * re-listed), the build's performance-model size, before the build is
     * ready to be placed. nbuilds 0: none (the builds keep their chunk's
     * atoms). */
    int32_t nbuilds;
    int64_t *build_work[MDF_REDUCE_MAX_CHUNKS];
    mdf_chunk chunks[MDF_REDUCE_MAX_CHUNKS];
} mdf_nl_bin_args;

/* Default big_atoms: one block bins a system of up to this many atoms (the
 * multi-block path costs a dozen kernel launches per step). The environment
 * variable MDF_NL_BIG_ATOMS overrides it (0: every system, for tests). */
#define MDF_NL_BIG_ATOMS 16384

typedef struct mdf_nl_build_args {
    int64_t work;          /* atoms whose lists it makes (set by the binning
                            * on CPUs), else the chunk's atoms */
    double r_list2;
    mdf_chunk chunk;
    /* CPU only: where the build writes the work of the model task that
     * reads its list (the chunk's atoms plus neighbour pairs, and the pairs
     * of its all-pairs systems), before that task is placed; NULL: none. */
    int64_t *model_work;
    int32_t up_only;       /* CPU only: rows without their back (j < i):
                            * n_down 0 (MDF_MODEL_HALF_ROWS) */
    int32_t owned;         /* CPU only, with up_only, for a slice under the
                            * halo contract of a model flagged
                            * MDF_MODEL_HALO_OWNED: the front holds the pairs
                            * the row owns (mdf_nl_pair_owned over the chunk's
                            * atoms) instead of j > i */
    int32_t simd;          /* CPU only: MDF_NL_SIMD_*, the distance sweep's
                            * instructions (0: the best this CPU runs) */
} mdf_nl_build_args;

/* mdf_nl_build_args.simd. The sweeps give the same lists entry for entry;
 * tests ask for each (one this CPU lacks falls back to generic). */
#define MDF_NL_SIMD_AUTO 0
#define MDF_NL_SIMD_GENERIC 1
#define MDF_NL_SIMD_AVX512 2
/* Whether this CPU and build run the sweep `simd` itself. */
int mdf_nl_simd_supported(int32_t simd);

/* Binning and the lists of a shard's only chunk, as one task: saves a
 * task and a dependency hop per step for shards of small systems. */
typedef struct mdf_nl_update_args {
    int64_t work;          /* atoms of the shard times slots */
    mdf_nl_bin_args bin;
    mdf_nl_build_args build;
} mdf_nl_update_args;

void mdf_nl_bin_cpu(void *buffers[], void *cl_arg);
void mdf_nl_update_cpu(void *buffers[], void *cl_arg);
void mdf_nl_update_cuda(void *buffers[], void *cl_arg);
void mdf_nl_build_cpu(void *buffers[], void *cl_arg);
void mdf_nl_bin_cuda(void *buffers[], void *cl_arg);
void mdf_nl_build_cuda(void *buffers[], void *cl_arg);

/* Bins every system of a shard that needs it (pos R, sys R, bins RW). */
int mdf_insert_nl_bin(starpu_data_handle_t pos, starpu_data_handle_t sys, starpu_data_handle_t bins,
                      const mdf_nl_bin_args *args);
/* Rebuilds the lists of a chunk's atoms whose system was just binned
 * (pos R, atoms R, sys R, bins R, list RW). */
int mdf_insert_nl_build(starpu_data_handle_t pos, starpu_data_handle_t atoms, starpu_data_handle_t sys,
                        starpu_data_handle_t bins, starpu_data_handle_t list,
                        const mdf_nl_build_args *args);
/* The binning and the builds of nchunks chunks (lists[q], builds[q],
 * nchunks <= MDF_REDUCE_MAX_CHUNKS) as above, each build's work counted by
 * the binning on CPUs. */
int mdf_insert_nl_bin_builds(starpu_data_handle_t pos, starpu_data_handle_t atoms, starpu_data_handle_t sys,
                             starpu_data_handle_t bins, const starpu_data_handle_t *lists,
                             const mdf_nl_bin_args *bin, const mdf_nl_build_args *builds, int nchunks);

/* Bins, then rebuilds the lists of the single chunk
 * (pos R, atoms R, sys R, bins RW, list RW). */
int mdf_insert_nl_update(starpu_data_handle_t pos, starpu_data_handle_t atoms, starpu_data_handle_t sys,
                         starpu_data_handle_t bins, starpu_data_handle_t list, const mdf_nl_update_args *args);

/* CPU binning of one system (also used by tests as the reference). */
void mdf_nl_bin_system(const double *pos, const mdf_sys_info *s, int32_t sidx, mdf_nl_bins_view *v,
                       double r_list);

#ifdef __cplusplus
}
#endif
#endif
