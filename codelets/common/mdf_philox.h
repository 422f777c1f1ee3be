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
    /* Unrolled, so that a loop over draws around it vectorises. */
#if defined(__CUDA_ARCH__)
#pragma unroll
#elif defined(__GNUC__) && !defined(__clang__) && !defined(__CUDACC__)
#pragma GCC unroll 10
#endif
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

/* Two independent uniform numbers in (0, 1] for (key, counter, stream). */
MDF_HD void mdf_uniform2(uint64_t key, uint64_t counter, uint32_t stream, double out[2])
{
    mdf_philox_out r = mdf_philox4x32((uint32_t)counter, (uint32_t)(counter >> 32), stream, 0x6d64666cu,
                                      (uint32_t)key, (uint32_t)(key >> 32));
    out[0] = mdf_u01(r.v[0], r.v[1]);
    out[1] = mdf_u01(r.v[2], r.v[3]);
}

/* Two independent standard normal numbers for (key, counter), Box–Muller. */
MDF_HD void mdf_gauss2(uint64_t key, uint64_t counter, uint32_t stream, double out[2])
{
    double u[2];
    mdf_uniform2(key, counter, stream, u);
    double u1 = u[0], u2 = u[1];
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

/* ---- normals without libm --------------------------------------------------
 * Box–Muller needs a logarithm and a sine/cosine per pair. libm's are calls
 * the compiler cannot vectorise, and CUDA's differ from them in the last
 * bits; these are plain arithmetic on the ranges Box–Muller feeds them (a
 * 32-bit word each), so a loop over atoms vectorises, and CPU and GPU
 * compute the same formulas. Both are accurate to a few units in the last
 * place (tests/test_thermostats.c checks them against libm). */

MDF_HD double mdf_bits_to_double(uint64_t b)
{
    union { uint64_t u; double d; } c;
    c.u = b;
    return c.d;
}

MDF_HD uint64_t mdf_double_to_bits(double d)
{
    union { uint64_t u; double d; } c;
    c.d = d;
    return c.u;
}

/* ln u for u = (r + 1) / 2^32, in (0, 1]. u = 2^e m with m in [√½, √2];
 * ln m = 2 atanh(s), s = (m - 1)/(m + 1), |s| < 0.172: the odd series to
 * s^21 is exact to double precision. */
MDF_HD double mdf_log_u32(uint32_t r)
{
    double u = ((double)r + 1.0) * 2.3283064365386962890625e-10; /* 2^-32: exact */
    uint64_t b = mdf_double_to_bits(u);
    /* Mantissas above √2's are halved (exponent one up): integer
     * arithmetic on the bits, which vectorises without branches. */
    int64_t mant = (int64_t)(b & 0x000fffffffffffffull);
    uint64_t big = (uint64_t)(mant > (int64_t)0x6a09e667f3bcdll);
    /* The exponent as a double by the 2^52 trick (AVX2 has no conversion
     * of 64-bit integers). */
    double e = mdf_bits_to_double(((b >> 52) + big) | 0x4330000000000000ull) - 4503599627370496.0 - 1023.0;
    double m = mdf_bits_to_double((uint64_t)mant | (0x3ff0000000000000ull - (big << 52)));
    double f = m - 1.0, sv = f / (2.0 + f), z = sv * sv;
    double q = 1.0 / 21.0;
    q = q * z + 1.0 / 19.0;
    q = q * z + 1.0 / 17.0;
    q = q * z + 1.0 / 15.0;
    q = q * z + 1.0 / 13.0;
    q = q * z + 1.0 / 11.0;
    q = q * z + 1.0 / 9.0;
    q = q * z + 1.0 / 7.0;
    q = q * z + 1.0 / 5.0;
    q = q * z + 1.0 / 3.0;
    /* 2s(1 + z q), as f - s(f - 2 z q): 2s = f - s f. */
    double lnm = f - sv * (f - 2.0 * z * q);
    /* ln 2 in two parts, so that e ln 2 carries no rounding error. */
    return e * 6.93147180369123816490e-01 + (e * 1.90821492927058770002e-10 + lnm);
}

/* sin and cos of the angle 2π r / 2^32. The top two bits pick the quadrant;
 * within it φ = θ - π/4 lies in [-π/4, π/4), where Taylor series to φ^15
 * and φ^16 are exact to double precision. */
MDF_HD void mdf_sincos_turn_u32(uint32_t r, double *s, double *c)
{
    uint32_t quadrant = r >> 30;
    double phi = ((double)(r & 0x3fffffffu) * 9.31322574615478515625e-10 - 0.5) * 1.5707963267948966;
    double z = phi * phi;
    double sp = -7.6471637318198164759e-13;  /* -1/15! */
    sp = sp * z + 1.6059043836821614599e-10; /* 1/13! */
    sp = sp * z - 2.5052108385441718775e-08; /* -1/11! */
    sp = sp * z + 2.7557319223985890653e-06; /* 1/9! */
    sp = sp * z - 1.9841269841269841270e-04; /* -1/7! */
    sp = sp * z + 8.3333333333333333333e-03; /* 1/5! */
    sp = sp * z - 1.6666666666666666667e-01; /* -1/3! */
    sp = phi + phi * z * sp;
    double cp = 4.7794773323873852974e-14;   /* 1/16! */
    cp = cp * z - 1.1470745597729724714e-11; /* -1/14! */
    cp = cp * z + 2.0876756987868098979e-09; /* 1/12! */
    cp = cp * z - 2.7557319223985890653e-07; /* -1/10! */
    cp = cp * z + 2.4801587301587301587e-05; /* 1/8! */
    cp = cp * z - 1.3888888888888888889e-03; /* -1/6! */
    cp = cp * z + 4.1666666666666666667e-02; /* 1/4! */
    cp = cp * z - 0.5;
    cp = 1.0 + z * cp;
    /* θ = φ + π/4 */
    double st = (sp + cp) * 0.70710678118654752440, ct = (cp - sp) * 0.70710678118654752440;
    /* angle = quadrant · π/2 + θ: odd quadrants swap sine and cosine;
     * signs by arithmetic, not branches. */
    double odd = (double)(quadrant & 1u);
    double s0 = odd * ct + (1.0 - odd) * st, c0 = odd * st + (1.0 - odd) * ct;
    *s = s0 * (1.0 - (double)(quadrant & 2u));
    *c = c0 * (1.0 - (double)((quadrant + 1u) & 2u));
}

typedef struct mdf_normal3 {
    double g[3];
} mdf_normal3;

/* Three standard normals for draw `index` (an atom, or a counter of the
 * method's own) of step `step` of the system keyed by key: a pure function
 * of (key, step, index, purpose). One Philox block gives four 32-bit words:
 * two Box–Muller pairs, of which three normals are used. Returned by value,
 * so that a loop over draws keeps them in registers and vectorises. */
MDF_HD mdf_normal3 mdf_normal3_step(uint64_t key, int64_t step, uint32_t index, uint32_t purpose)
{
    mdf_philox_out r = mdf_philox4x32(index, (uint32_t)step, purpose << 1, 0x6d64666cu, (uint32_t)key,
                                      (uint32_t)(key >> 32));
    double s, c, s2, c2;
    mdf_sincos_turn_u32(r.v[1], &s, &c);
    mdf_sincos_turn_u32(r.v[3], &s2, &c2);
    double rad = sqrt(-2.0 * mdf_log_u32(r.v[0])), rad2 = sqrt(-2.0 * mdf_log_u32(r.v[2]));
    mdf_normal3 n = {{rad * c, rad * s, rad2 * c2}};
    return n;
}

MDF_HD void mdf_gauss3_step(uint64_t key, int64_t step, uint32_t index, uint32_t purpose, double out[3])
{
    mdf_normal3 n = mdf_normal3_step(key, step, index, purpose);
    for (int k = 0; k < 3; k++) out[k] = n.g[k];
}

#endif
