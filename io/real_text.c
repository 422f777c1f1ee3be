/* mdflow — doubles as short decimal text that reads back exactly, and
 * decimal text read as doubles (mdf_real_parse, at the end).
 *
 * The text is C's "%.16g" when that reads back as the same double, else
 * "%.17g" (which always does): 0.1 stays "0.1", a computed position keeps
 * its 16 or 17 digits. glibc formats with multi-precision arithmetic and
 * the round-trip test needs a strtod: together about half a microsecond a
 * number, most of the time it took to write a relaxed batch. For the
 * magnitudes files mostly hold, 1e-5 <= |x| < 1e15, the digits are found
 * here exactly in 128-bit integers instead:
 *
 *   x = m 2^-s (m < 2^53), so x 10^k = N / 2^s with N = m 10^k, and the
 *   P significant digits of x are N / 2^s rounded to an integer (half to
 *   even, as glibc rounds), k = P - 1 - floor(log10 |x|) in [0, 22], so
 *   N < 2^53 10^22 < 2^127.
 *
 * The P = 16 digits D read back as x exactly when D 10^-k lies closer to x
 * than half the gap to each neighbouring double: |D 2^s - N| < 10^k / 2
 * (10^k / 4 below a power of two, whose lower neighbour is twice as
 * close), a tie going to the even m, as strtod rounds. Other numbers (zero
 * aside) take snprintf and strtod, as before. tests/test_xyz.c compares
 * the two against glibc on random doubles of every magnitude. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "real_text.h"

typedef unsigned __int128 u128;

/* 10^k, k = 0..22. */
static const u128 pow10_table[23] = {
    (u128)1u,
    (u128)10u,
    (u128)100u,
    (u128)1000u,
    (u128)10000u,
    (u128)100000u,
    (u128)1000000u,
    (u128)10000000u,
    (u128)100000000u,
    (u128)1000000000u,
    (u128)10000000000ull,
    (u128)100000000000ull,
    (u128)1000000000000ull,
    (u128)10000000000000ull,
    (u128)100000000000000ull,
    (u128)1000000000000000ull,
    (u128)10000000000000000ull,
    (u128)100000000000000000ull,
    (u128)1000000000000000000ull,
    (u128)10000000000000000000ull,
    (u128)10000000000000000000ull * 10,
    (u128)10000000000000000000ull * 100,
    (u128)10000000000000000000ull * 1000};

static u128 pow10_u128(int k) { return pow10_table[k]; }

/* glibc's text, and the round-trip test by strtod. */
static int slow_real(char *buf, size_t size, double x)
{
    int n = snprintf(buf, size, "%.16g", x);
    if (strtod(buf, NULL) == x) return n;
    return snprintf(buf, size, "%.17g", x);
}

/* The P significant digits of |x| = m 2^-s rounded (half to even) into
 * *d, with x's decimal exponent *e10 (*d in [10^(P-1), 10^P] before the
 * caller folds 10^P); *exact_back: whether *d 10^(P-1-*e10) reads back as
 * x. guess: floor(log10 |x|) or one off. */
static void digits(uint64_t m, int s, int lower_closer, int P, int guess, uint64_t *d, int *e10, int *reads_back)
{
    for (;;) {
        const int k = P - 1 - guess;
        const u128 N = (u128)m * pow10_u128(k);
        u128 q, rem = 0, half = 0;
        if (s <= 0) {
            q = N << -s;
        } else {
            q = N >> s;
            rem = N - (q << s);
            half = (u128)1 << (s - 1);
        }
        const u128 lo = pow10_u128(P - 1), hi = lo * 10;
        if (q < lo) { /* the guess was one too high */
            guess--;
            continue;
        }
        if (q >= hi) {
            guess++;
            continue;
        }
        if (s > 0 && (rem > half || (rem == half && (q & 1)))) q++;
        *d = (uint64_t)q;
        *e10 = guess;
        if (s <= 0) {
            *reads_back = 1; /* x is an integer of at most 17 digits: exact */
            return;
        }
        /* |D 2^s - N| against 10^k / 2 (above x) or 10^k / 2 or / 4 (below) */
        const u128 Ds = q << s, tenk = pow10_u128(k);
        const u128 gap = Ds >= N ? Ds - N : N - Ds;
        const u128 scaled = gap * ((Ds < N && lower_closer) ? 4 : 2);
        *reads_back = scaled < tenk || (scaled == tenk && (m & 1) == 0);
        return;
    }
}

/* The "%.{P}g" text of sign, digits d (P of them, trailing zeros allowed)
 * and decimal exponent e10, into buf (at least 32 bytes); its length. */
static int compose(char *buf, int negative, uint64_t d, int P, int e10)
{
    char dig[24];
    int nd = P;
    while (nd > 1 && d % 10 == 0) d /= 10, nd--;
    for (int i = nd - 1; i >= 0; i--, d /= 10) dig[i] = (char)('0' + d % 10);
    char *o = buf;
    if (negative) *o++ = '-';
    if (e10 < -4 || e10 >= P) { /* d.ddde±XX */
        *o++ = dig[0];
        if (nd > 1) {
            *o++ = '.';
            memcpy(o, dig + 1, (size_t)nd - 1);
            o += nd - 1;
        }
        *o++ = 'e';
        *o++ = e10 < 0 ? '-' : '+';
        int a = e10 < 0 ? -e10 : e10;
        if (a >= 100) *o++ = (char)('0' + a / 100);
        *o++ = (char)('0' + a / 10 % 10);
        *o++ = (char)('0' + a % 10);
    } else if (e10 >= 0) { /* ddd.ddd */
        for (int i = 0; i <= e10; i++) *o++ = i < nd ? dig[i] : '0';
        if (nd > e10 + 1) {
            *o++ = '.';
            memcpy(o, dig + e10 + 1, (size_t)(nd - e10 - 1));
            o += nd - e10 - 1;
        }
    } else { /* 0.000ddd */
        *o++ = '0';
        *o++ = '.';
        for (int i = 0; i < -e10 - 1; i++) *o++ = '0';
        memcpy(o, dig, (size_t)nd);
        o += nd;
    }
    *o = '\0';
    return (int)(o - buf);
}

int mdf_real_text(char *buf, size_t size, double x)
{
    const double a = fabs(x);
    /* The range keeps k = P - 1 - e10 in [0, 22] for every guess of e10
     * (floor(log10 a) may be one off either way near a power of ten). */
    if (size < 32 || !(a >= 1e-5 && a < 1e15)) {
        if (x == 0.0 && size >= 3) return snprintf(buf, size, signbit(x) ? "-0" : "0");
        return slow_real(buf, size, x);
    }
    uint64_t u;
    memcpy(&u, &x, sizeof u);
    const int bexp = (int)((u >> 52) & 0x7ff); /* >= 1: 1e-5 is a normal number */
    const uint64_t m = (u & ((UINT64_C(1) << 52) - 1)) | (UINT64_C(1) << 52);
    const int s = 1075 - bexp; /* x = m 2^-s */
    const int lower_closer = (m == (UINT64_C(1) << 52)) && bexp > 1;
    const int guess = (int)floor(log10(a));
    uint64_t d;
    int e10, back;
    digits(m, s, lower_closer, 16, guess, &d, &e10, &back);
    int P = 16;
    if (!back) {
        P = 17;
        digits(m, s, lower_closer, 17, guess, &d, &e10, &back);
    }
    uint64_t top = 1;
    for (int i = 0; i < P; i++) top *= 10;
    if (d == top) { /* rounding carried into a new digit: 9.99..96 -> 10 */
        d /= 10;
        e10++;
    }
    return compose(buf, signbit(x) != 0, d, P, e10);
}

/* ---- reading -------------------------------------------------------------------- */

/* 10^k as doubles, k = 0..22: every one exact. */
static const double exact_pow10[23] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,  1e8,  1e9,  1e10, 1e11,
                                       1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};

/* A token of the plain form [+-]digits[.digits][(e|E)[+-]digits] (digits on
 * at least one side of the point) with at most 15 significant digits and a
 * decimal exponent within 22 of them: M 10^e with M < 2^53 and 10^|e|
 * exact doubles, so one IEEE multiplication or division rounds it
 * correctly, as strtod does (Clinger's fast path). 0 for anything else. */
static int fast_parse(const char *s, double *out)
{
    const char *p = s;
    int negative = *p == '-';
    if (*p == '-' || *p == '+') p++;
    uint64_t m = 0;
    int significant = 0, exp10 = 0, digits = 0;
    for (; *p >= '0' && *p <= '9'; p++, digits++) {
        if (m == 0 && *p == '0') continue; /* leading zeros */
        if (++significant > 15) return 0;
        m = m * 10 + (uint64_t)(*p - '0');
    }
    if (*p == '.') {
        for (p++; *p >= '0' && *p <= '9'; p++, digits++) {
            exp10--;
            if (m == 0 && *p == '0') continue;
            if (++significant > 15) return 0;
            m = m * 10 + (uint64_t)(*p - '0');
        }
    }
    if (digits == 0) return 0;
    if (*p == 'e' || *p == 'E') {
        p++;
        int eneg = *p == '-', e = 0, edigits = 0;
        if (*p == '-' || *p == '+') p++;
        for (; *p >= '0' && *p <= '9'; p++, edigits++)
            if ((e = e * 10 + (*p - '0')) > 400) return 0;
        if (edigits == 0) return 0;
        exp10 += eneg ? -e : e;
    }
    if (*p) return 0; /* not the whole token */
    double v = (double)m;
    if (m != 0) {
        if (exp10 < -22 || exp10 > 22) return 0;
        v = exp10 < 0 ? v / exact_pow10[-exp10] : v * exact_pow10[exp10];
    }
    *out = negative ? -v : v;
    return 1;
}

int mdf_real_parse(const char *s, double *out)
{
    if (!*s) return 0;
    if (fast_parse(s, out)) return 1;
    char *end;
    double v = strtod(s, &end);
    if (end == s || *end) return 0;
    *out = v;
    return 1;
}
