/* mdflow — Philox4x32-10 (Salmon et al., SC'11), a counter-based random
 * generator: the numbers for (key, counter) are a pure function of both, so
 * a system's random stream depends on its id, its atoms and the step, never
 * on which shard or worker handles it. */
#ifndef MDF_PHILOX_H
#define MDF_PHILOX_H

#include "mdf_kernel_common.h"

typedef struct mdf_philox_out {
    uint32_t v[4];
} mdf_philox_out;

MDF_HD uint32_t mdf_mulhilo32(uint32_t a, uint32_t b, uint32_t *hi)
{
    uint64_t p = (uint64_t)a * (uint64_t)b;
    *hi = (uint32_t)(p >> 32);
    return (uint32_t)p;
}

MDF_HD mdf_philox_out mdf_philox4x32(uint32_t c0, uint32_t c1, uint32_t c2, uint32_t c3,
                                     uint32_t k0, uint32_t k1)
{
    for (int round = 0; round < 10; round++) {
        uint32_t hi0, hi1;
        uint32_t lo0 = mdf_mulhilo32(0xD2511F53u, c0, &hi0);
        uint32_t lo1 = mdf_mulhilo32(0xCD9E8D57u, c2, &hi1);
        uint32_t n0 = hi1 ^ c1 ^ k0, n1 = lo1, n2 = hi0 ^ c3 ^ k1, n3 = lo0;
        c0 = n0; c1 = n1; c2 = n2; c3 = n3;
        k0 += 0x9E3779B9u;
        k1 += 0xBB67AE85u;
    }
    mdf_philox_out o;
    o.v[0] = c0; o.v[1] = c1; o.v[2] = c2; o.v[3] = c3;
    return o;
}

/* Uniform double in (0, 1] from two 32-bit words (53 random bits). */
MDF_HD double mdf_u01(uint32_t a, uint32_t b)
{
    uint64_t x = ((uint64_t)a << 21) ^ (uint64_t)b;
    x &= (((uint64_t)1) << 53) - 1;
    return ((double)x + 1.0) * (1.0 / 9007199254740992.0);
}

/* Two independent standard normal numbers for (key, counter), Box–Muller. */
MDF_HD void mdf_gauss2(uint64_t key, uint64_t counter, uint32_t stream, double out[2])
{
    mdf_philox_out r = mdf_philox4x32((uint32_t)counter, (uint32_t)(counter >> 32), stream, 0x6d64666cu,
                                      (uint32_t)key, (uint32_t)(key >> 32));
    double u1 = mdf_u01(r.v[0], r.v[1]), u2 = mdf_u01(r.v[2], r.v[3]);
    double rad = sqrt(-2.0 * log(u1));
    double ang = 6.283185307179586 * u2;
    out[0] = rad * cos(ang);
    out[1] = rad * sin(ang);
}

/* Random streams of the integrators: what each draw is for, so that two
 * methods never share numbers. Stream words 0 and 1 belong to the
 * Maxwell–Boltzmann velocity draws (velocity_kernel.h). */
#define MDF_RNG_LANGEVIN 1u
#define MDF_RNG_BUSSI 2u
#define MDF_RNG_NPT 3u

/* Three standard normals for draw `index` (an atom, or a counter of the
 * method's own) of step `step` of the system keyed by key: a pure function
 * of (key, step, index, purpose). */
MDF_HD void mdf_gauss3_step(uint64_t key, int64_t step, uint32_t index, uint32_t purpose, double out[3])
{
    uint64_t counter = ((uint64_t)step << 32) | (uint64_t)index;
    double a[2], b[2];
    mdf_gauss2(key, counter, purpose << 1, a);
    mdf_gauss2(key, counter, (purpose << 1) | 1u, b);
    out[0] = a[0];
    out[1] = a[1];
    out[2] = b[0];
}

#endif
