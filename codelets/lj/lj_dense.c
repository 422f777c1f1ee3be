/* mdflow — Lennard-Jones for small open systems: every pair, no list.
 *
 * A cluster of a few hundred atoms under a cutoff of a few σ has most of
 * its pairs inside the list radius anyway. Walking every pair i < j over
 * coordinates laid out as separate x, y, z arrays then costs fewer cycles
 * than following list entries: no gathers, no image shifts.
 *
 * The loop (lj_dense_simd.h) is written with explicit vectors, compiled for
 * AVX-512, AVX2 (with FMA) and portable two-lane vectors, and picked when the model is
 * created (the best the CPU has, or MDF_LJ_DENSE_SIMD). It takes whole blocks of atoms with
 * no scalar remainder, and keeps the energy and virial in vector registers
 * across rows. Before, a compiler-vectorised loop over j > i spent half its
 * time outside the vector body: 13-147 atom clusters have rows of 0-146
 * pairs, each with a scalar remainder and ten reductions.
 *
 * The arithmetic per pair is mdf_lj_pair's, with fused multiply-adds on
 * AVX2 and AVX-512, so this path and the list path agree to round-off and
 * both follow LAMMPS's lj/cut. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "lj_dense.h"

/* Atoms per block: the widest vector below (AVX-512: 8 doubles). Arrays
 * are padded to whole blocks of this size for every instruction set. */
#define DENSE_BLOCK 8

/* Added to r² of the lanes j <= i of a row's first block: far past any
 * cutoff, yet small enough that 1/r² and its powers stay normal numbers.
 * Row i's first block (j0 = i + 1 rounded down to the vector width) loads
 * its lanes from dense_penalty + (j0 - i - 1 + DENSE_PENALTY_LANES): lane
 * j reads entry j - i - 1 + DENSE_PENALTY_LANES, in the first half (the
 * penalty) exactly when j <= i, and never past the end. */
#define DENSE_FAR_R2 1e30
#define DENSE_PENALTY_LANES 8
static const double dense_penalty[2 * DENSE_PENALTY_LANES] = {
    DENSE_FAR_R2, DENSE_FAR_R2, DENSE_FAR_R2, DENSE_FAR_R2, DENSE_FAR_R2, DENSE_FAR_R2, DENSE_FAR_R2, DENSE_FAR_R2};

/* Coefficients against every j of the species of i (mixed species only). */
typedef struct dense_coef {
    const double *rc2, *c1, *c2, *c3, *c4, *off;
} dense_coef;

/* One system as structure of arrays, padded to np atoms; forces accumulate
 * here. rows[ti]: the coefficient rows of species ti. */
typedef struct dense_soa {
    int32_t n, np;
    double *x, *y, *z, *fx, *fy, *fz;
    const int32_t *t;
    const dense_coef *rows;
} dense_soa;

/* Sums: energy, then the virial's xx yy zz xy xz yz. */
typedef struct dense_sums {
    double e, w[6];
} dense_sums;

/* The loop's pieces are inlined into each specialised caller. */
#if defined(__GNUC__)
#define DENSE_INLINE static inline __attribute__((always_inline))
#else
#define DENSE_INLINE static inline
#endif

#define DENSE_CAT(a, b) a##_##b
#define DENSE_XCAT(a, b) DENSE_CAT(a, b)

/* Portable: two lanes of GCC/clang vector types, which every target runs
 * natively (SSE2, NEON, ...); one lane with other compilers. */
#if defined(__GNUC__)
typedef double dense_v2 __attribute__((vector_size(16)));
typedef int64_t dense_m2 __attribute__((vector_size(16)));
static inline dense_v2 dense_load_v2(const double *p)
{
    dense_v2 v;
    memcpy(&v, p, sizeof v);
    return v;
}
static inline void dense_store_v2(double *p, dense_v2 v)
{
    memcpy(p, &v, sizeof v);
}
#define V dense_v2
#define M dense_m2
#define DENSE_W 2
#define V_SET1(a) ((dense_v2){(a), (a)})
#define V_LOAD(p) dense_load_v2(p)
#define V_STORE(p, v) dense_store_v2((p), (v))
#define V_KEEP(v, m) ((dense_v2)((dense_m2)(v) & (m)))
#define V_SUM(v) ((v)[0] + (v)[1])
#else
#define V double
#define M int
#define DENSE_W 1
#define V_SET1(a) (a)
#define V_LOAD(p) (*(p))
#define V_STORE(p, v) (*(p) = (v))
#define V_KEEP(v, m) ((v) * (double)(m)) /* no branch */
#define V_SUM(v) (v)
#endif
#define DENSE_ISA generic
#define DENSE_TARGET
#define V_ADD(a, b) ((a) + (b))
#define V_SUB(a, b) ((a) - (b))
#define V_MUL(a, b) ((a) * (b))
#define V_DIV(a, b) ((a) / (b))
#define V_FMA(a, b, c) ((a) * (b) + (c)) /* separate: fma() is slow without the instruction */
#define V_FMS(a, b, c) ((a) * (b) - (c))
#define V_FNMA(a, b, c) ((c) - (a) * (b))
#define V_LT(a, b) ((a) < (b))
#include "lj_dense_simd.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__)) && !defined(__CUDACC__)
#define DENSE_X86 1
#include <immintrin.h>

/* AVX2 with FMA: four lanes (Haswell, Zen and later). */
#define V __m256d
#define M __m256d
#define DENSE_W 4
#define DENSE_ISA avx2
#define DENSE_TARGET __attribute__((target("avx2,fma")))
#define V_SET1(a) _mm256_set1_pd(a)
#define V_LOAD(p) _mm256_loadu_pd(p)
#define V_STORE(p, v) _mm256_storeu_pd((p), (v))
#define V_ADD(a, b) _mm256_add_pd((a), (b))
#define V_SUB(a, b) _mm256_sub_pd((a), (b))
#define V_MUL(a, b) _mm256_mul_pd((a), (b))
#define V_DIV(a, b) _mm256_div_pd((a), (b))
#define V_FMA(a, b, c) _mm256_fmadd_pd((a), (b), (c))
#define V_FMS(a, b, c) _mm256_fmsub_pd((a), (b), (c))
#define V_FNMA(a, b, c) _mm256_fnmadd_pd((a), (b), (c))
#define V_LT(a, b) _mm256_cmp_pd((a), (b), _CMP_LT_OQ)
#define V_KEEP(v, m) _mm256_and_pd((v), (m))
#define V_SUM(v) dense_sum_avx2(v)
DENSE_TARGET static inline double dense_sum_avx2(__m256d v)
{
    __m128d s = _mm_add_pd(_mm256_castpd256_pd128(v), _mm256_extractf128_pd(v, 1));
    return _mm_cvtsd_f64(_mm_add_sd(s, _mm_unpackhi_pd(s, s)));
}
#include "lj_dense_simd.h"

/* AVX-512: eight lanes, masks in mask registers. */
#define V __m512d
#define M __mmask8
#define DENSE_W 8
#define DENSE_ISA avx512
#define DENSE_TARGET __attribute__((target("avx512f")))
#define V_SET1(a) _mm512_set1_pd(a)
#define V_LOAD(p) _mm512_loadu_pd(p)
#define V_STORE(p, v) _mm512_storeu_pd((p), (v))
#define V_ADD(a, b) _mm512_add_pd((a), (b))
#define V_SUB(a, b) _mm512_sub_pd((a), (b))
#define V_MUL(a, b) _mm512_mul_pd((a), (b))
#define V_DIV(a, b) _mm512_div_pd((a), (b))
#define V_FMA(a, b, c) _mm512_fmadd_pd((a), (b), (c))
#define V_FMS(a, b, c) _mm512_fmsub_pd((a), (b), (c))
#define V_FNMA(a, b, c) _mm512_fnmadd_pd((a), (b), (c))
#define V_LT(a, b) _mm512_cmp_pd_mask((a), (b), _CMP_LT_OQ)
#define V_KEEP(v, m) _mm512_maskz_mov_pd((m), (v))
#define V_SUM(v) _mm512_reduce_add_pd(v)
#include "lj_dense_simd.h"
#else
#define DENSE_X86 0
#endif

static const char *const simd_names[] = {[MDF_LJ_SIMD_GENERIC] = "generic", [MDF_LJ_SIMD_AVX2] = "avx2",
                                         [MDF_LJ_SIMD_AVX512] = "avx512"};

/* Whether this CPU (and build) runs instruction set `simd`. */
static int simd_supported(int simd)
{
    switch (simd) {
    case MDF_LJ_SIMD_GENERIC: return 1;
#if DENSE_X86
    case MDF_LJ_SIMD_AVX2: return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    case MDF_LJ_SIMD_AVX512: return __builtin_cpu_supports("avx512f");
#endif
    default: return 0;
    }
}

mdf_status mdf_lj_dense_simd_choose(int32_t *out, mdf_error *err)
{
    const char *want = getenv("MDF_LJ_DENSE_SIMD");
    if (!want || !*want || !strcmp(want, "auto")) {
        *out = MDF_LJ_SIMD_GENERIC;
        for (int s = MDF_LJ_SIMD_AVX512; s > MDF_LJ_SIMD_GENERIC; s--)
            if (simd_supported(s)) {
                *out = s;
                break;
            }
        return MDF_OK;
    }
    for (int s = MDF_LJ_SIMD_GENERIC; s <= MDF_LJ_SIMD_AVX512; s++) {
        if (strcmp(want, simd_names[s])) continue;
        if (!simd_supported(s)) {
            char have[64] = "";
            for (int o = MDF_LJ_SIMD_AVX512; o >= MDF_LJ_SIMD_GENERIC; o--)
                if (simd_supported(o)) {
                    strcat(have, ", ");
                    strcat(have, simd_names[o]);
                }
            return mdf_error_set(err, MDF_ERR_INVALID,
                                 "MDF_LJ_DENSE_SIMD=%s: this CPU (or build) cannot run %s; use auto%s", want, want,
                                 have);
        }
        *out = s;
        return MDF_OK;
    }
    return mdf_error_set(err, MDF_ERR_INVALID, "MDF_LJ_DENSE_SIMD=%s is not one of auto, avx512, avx2, generic",
                         want);
}

int mdf_lj_dense_suits(const mdf_sys_info *s, const mdf_chunk *c, int64_t list_pairs)
{
    if (s->pbc[0] || s->pbc[1] || s->pbc[2]) return 0;
    if (s->natoms > MDF_LJ_DENSE_MAX_ATOMS) return 0;
    /* The list kernel's i-loop may be split over chunks; this one is not. */
    if (s->atom_start < c->atom_begin || s->atom_start + s->natoms > c->atom_end) return 0;
    int64_t all = (int64_t)s->natoms * (s->natoms - 1) / 2;
    return s->natoms <= MDF_LJ_DENSE_ALWAYS_ATOMS || all <= MDF_LJ_DENSE_PAIR_RATIO * list_pairs;
}

static size_t dense_padded(int32_t natoms)
{
    size_t n = (size_t)(natoms > 0 ? natoms : 1);
    return (n + DENSE_BLOCK - 1) / DENSE_BLOCK * DENSE_BLOCK;
}

size_t mdf_lj_dense_scratch_doubles(int32_t natoms, const mdf_lj_params *p)
{
    /* x y z fx fy fz, the types (int32, in np doubles), with several
     * species six coefficient rows each, and a block to align the start. */
    size_t rows = p->ntypes > 1 ? 6 * (size_t)p->ntypes : 0;
    return (7 + rows) * dense_padded(natoms) + DENSE_BLOCK;
}

/* Species ti's coefficients against every j (padding takes species 0's; it
 * lies beyond every cutoff). */
static void dense_fill_rows(const dense_soa *a, const mdf_lj_params *p, double *rows, dense_coef *coef)
{
    size_t np = (size_t)a->np;
    for (int32_t ti = 0; ti < p->ntypes; ti++) {
        double *r = rows + 6 * np * (size_t)ti;
        for (int32_t j = 0; j < a->np; j++) {
            int tj = j < a->n ? a->t[j] : 0;
            r[j] = p->rc2[ti][tj];
            r[np + j] = p->lj1[ti][tj];
            r[2 * np + j] = p->lj2[ti][tj];
            r[3 * np + j] = p->lj3[ti][tj];
            r[4 * np + j] = p->lj4[ti][tj];
            r[5 * np + j] = p->offset[ti][tj];
        }
        coef[ti] = (dense_coef){r, r + np, r + 2 * np, r + 3 * np, r + 4 * np, r + 5 * np};
    }
}

/* A plain comparison: fmax is a libm call here, and NaN needs no care. */
static inline double dense_max(double a, double b)
{
    return a > b ? a : b;
}

/* The padding atoms' coordinate (all three): beyond the largest cutoff of
 * every real atom along each axis, so none of their pairs counts. */
static double dense_pad_coordinate(const dense_soa *a, const mdf_lj_params *p)
{
    double far = 0.0, rc2 = 0.0;
    for (int32_t i = 0; i < a->n; i++) {
        double m = dense_max(fabs(a->x[i]), dense_max(fabs(a->y[i]), fabs(a->z[i])));
        far = dense_max(far, m);
    }
    for (int32_t s = 0; s < p->ntypes; s++)
        for (int32_t u = 0; u < p->ntypes; u++) rc2 = dense_max(rc2, p->rc2[s][u]);
    return far + 2.0 * sqrt(rc2) + 1.0;
}

void mdf_lj_dense_system(const double *pos, double *f, const mdf_atom_info *atoms, const mdf_sys_info *s,
                         const mdf_lj_params *p, int virial, double *scratch, double *energy, double w[9])
{
    int32_t n = s->natoms, a0 = s->atom_start;
    size_t np = dense_padded(n);
    /* Blocks start on 64-byte boundaries. */
    double *base = (double *)(((uintptr_t)scratch + 63) & ~(uintptr_t)63);
    int32_t *t = (int32_t *)(base + 6 * np);
    dense_coef coef[MDF_LJ_MAX_TYPES];
    dense_soa a = {n, (int32_t)np, base, base + np, base + 2 * np, base + 3 * np, base + 4 * np, base + 5 * np,
                   t, coef};
    for (int32_t i = 0; i < n; i++) {
        a.x[i] = pos[3 * (a0 + i)];
        a.y[i] = pos[3 * (a0 + i) + 1];
        a.z[i] = pos[3 * (a0 + i) + 2];
        t[i] = p->type_of_z[atoms[a0 + i].z];
    }
    double far = dense_pad_coordinate(&a, p);
    for (size_t i = (size_t)n; i < np; i++) a.x[i] = a.y[i] = a.z[i] = far;
    memset(a.fx, 0, sizeof(double) * 3 * np);
    if (p->ntypes > 1) dense_fill_rows(&a, p, base + 7 * np, coef);
    dense_sums sums;
    switch (p->dense_simd) {
#if DENSE_X86
    case MDF_LJ_SIMD_AVX512: dense_run_avx512(&a, p, virial, &sums); break;
    case MDF_LJ_SIMD_AVX2: dense_run_avx2(&a, p, virial, &sums); break;
#endif
    default: dense_run_generic(&a, p, virial, &sums); break;
    }
    for (int32_t i = 0; i < n; i++) {
        f[3 * (a0 + i)] += a.fx[i];
        f[3 * (a0 + i) + 1] += a.fy[i];
        f[3 * (a0 + i) + 2] += a.fz[i];
    }
    *energy += sums.e;
    if (virial) {
        const int sym[9] = {0, 3, 4, 3, 1, 5, 4, 5, 2};
        for (int k = 0; k < 9; k++) w[k] += sums.w[sym[k]];
    }
}
