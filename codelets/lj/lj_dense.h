/* mdflow — Lennard-Jones over every pair of a small open system (no list):
 * the CPU kernel's path for clusters, where it beats the Verlet list. */
#ifndef MDF_LJ_DENSE_H
#define MDF_LJ_DENSE_H

#include <stddef.h>
#include "lj_kernel.h"
#include "mdflow/error.h"

/* Systems up to this size may take the all-pairs path... */
#define MDF_LJ_DENSE_MAX_ATOMS 1024
/* ...always when this small... */
#define MDF_LJ_DENSE_ALWAYS_ATOMS 64
/* ...and otherwise when all pairs number at most this many times the pairs
 * in its half list. Measured on one core (AMD EPYC, AVX-512): argon clusters
 * of 147, 400 and 1000 atoms (all/list pairs 3.1, 7.0, 15.5) ran 2.2x, 1.8x
 * and 1.0x as fast on this path, with the compiler-vectorised loop of
 * commit d21469f. The explicit-vector loop since is 1.8x faster per pair
 * on the pipeline benchmark's clusters (AVX-512: 1.15 -> 0.64 ns), so the
 * break-even ratio is higher now and this bound errs towards the list (not
 * measured again). */
#define MDF_LJ_DENSE_PAIR_RATIO 12

/* Instruction sets of the all-pairs loop (mdf_lj_params.dense_simd). */
enum { MDF_LJ_SIMD_GENERIC = 0, MDF_LJ_SIMD_AVX2 = 1, MDF_LJ_SIMD_AVX512 = 2 };

/* The set a new model uses: the widest this CPU runs, unless the
 * environment variable MDF_LJ_DENSE_SIMD names one (auto, avx512, avx2,
 * generic: to compare them, or to test each). An unknown name, or a set the
 * CPU lacks, is an error. */
mdf_status mdf_lj_dense_simd_choose(int32_t *out, mdf_error *err);

/* Whether system s (whose half list holds list_pairs pairs) takes the
 * all-pairs path in chunk c: open boundaries, small, wholly in the chunk. */
int mdf_lj_dense_suits(const mdf_sys_info *s, const mdf_chunk *c, int64_t list_pairs);

/* Doubles of scratch mdf_lj_dense_system needs for natoms atoms of model p. */
size_t mdf_lj_dense_scratch_doubles(int32_t natoms, const mdf_lj_params *p);

/* Adds system s's pair forces to f (its atoms' entries), its energy to
 * *energy and, when virial is set, its virial d ⊗ d · fpair to w. */
void mdf_lj_dense_system(const double *pos, double *f, const mdf_atom_info *atoms, const mdf_sys_info *s,
                         const mdf_lj_params *p, int virial, double *scratch, double *energy, double w[9]);

#endif
