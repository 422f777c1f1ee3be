/* mdflow — the CSV log hook: one row per system every N steps,
 *
 *   step,system_id,status,energy_eV,fmax_eV_per_A,temperature_K,pressure_bar,volume_A3
 *
 * (pressure and volume empty for a system not periodic in x, y and z)
 * for the stage's systems and those that just converged (step: the stage's
 * step). The row collector hands over the rows of one step in batch order,
 * steps in order; each step's block is formatted into one buffer, written
 * once (the stream is unbuffered), so a crash leaves whole rows behind, and
 * a write a full disk cut is cut back to the last whole row. The file is
 * written as path + ".tmp" and renamed to path when the run ends, so a
 * reader never sees a half-written log under the final name.
 *
 * Logging every step of a large batch must stay cheap (the budget is a few
 * per cent of a step), and printf's "%.17g" costs several hundred
 * nanoseconds per number. Numbers are therefore formatted by hand: integers
 * digit by digit, and doubles as their correctly rounded 17-significant-digit
 * decimal, which reads back to the same double. The digits come from an
 * exact product with a power of ten (the FMA gives the product's rounding
 * error), with printf as the fallback outside 1e-6 <= |x| < 1e17. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "../hook_internal.h"
#include "../rows.h"
#include "mdflow/extension.h"

#define LOG_HEADER "step,system_id,status,energy_eV,fmax_eV_per_A,temperature_K,pressure_bar,volume_A3\n"
#define LOG_ROW_MAX 224 /* bytes of one row, generously */

typedef struct log_impl {
    char *path, *tmp_path;
    FILE *fp;
    mdf_run_control *ctl;
    mdf_rows *rows;
    char *buf;                /* one step's block */
    int failed;               /* errno of the first failed write (0: none) */
    int64_t bytes;            /* bytes of whole rows in the file */
    int resuming;             /* restore() asked begin() to continue the file ... */
    int64_t resume_at;        /* ... from this byte (the rows of the checkpoint) */
} log_impl;

/* ---- number formatting ------------------------------------------------------------ */

/* Digits of v, most significant first; returns the end. */
static char *put_u64(char *p, uint64_t v)
{
    char tmp[20];
    int n = 0;
    do {
        tmp[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    while (n) *p++ = tmp[--n];
    return p;
}

static char *put_i64(char *p, int64_t v)
{
    if (v < 0) {
        *p++ = '-';
        return put_u64(p, (uint64_t)0 - (uint64_t)v);
    }
    return put_u64(p, (uint64_t)v);
}

static const char digit_pairs[201] = "00010203040506070809101112131415161718192021222324252627282930313233343536373839"
                                     "40414243444546474849505152535455565758596061626364656667686970717273747576777879"
                                     "8081828384858687888990919293949596979899";

/* The 8 digits of v < 10^8, two at a time in 32-bit arithmetic. */
static void put_digits8(char *d, uint32_t v)
{
    for (int i = 6; i >= 0; i -= 2) {
        uint32_t r = v % 100;
        v /= 100;
        memcpy(d + i, digit_pairs + 2 * r, 2);
    }
}

/* The 17 digits of m < 10^17: two independent 8-digit halves (a chain of 17
 * 64-bit divisions by 10 costs several times more). */
static void put_digits17(char *d, uint64_t m)
{
    uint64_t hi = m / 100000000u;           /* < 10^9 */
    uint32_t lo = (uint32_t)(m % 100000000u);
    d[0] = (char)('0' + hi / 100000000u);
    put_digits8(d + 1, (uint32_t)(hi % 100000000u));
    put_digits8(d + 9, lo);
}

/* 10^0 .. 10^22: every one is exact in binary64. */
static const double pow10_exact[23] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,  1e8,  1e9,  1e10, 1e11,
                                       1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};

/* The 17-digit integer m with |x|·10^k rounded to nearest, exactly: the
 * product p is rounded, and fma(x, P, -p) is its exact error e, so the
 * true product is p + e; p >= 10^16 > 2^53 is an even integer, |e| <= 8. */
static uint64_t scaled_digits(double ax, int k)
{
    double P = pow10_exact[k];
    double p = ax * P;
    double e = fma(ax, P, -p);
    /* p is even, so rounding e half to even rounds p + e half to even, as printf does. */
    return (uint64_t)p + (uint64_t)(int64_t)rint(e);
}

/* x as a decimal that strtod reads back to x: "-1.2345678901234567e+01",
 * trailing zeros of the fraction dropped. */
static char *put_double(char *p, double x)
{
    if (isnan(x)) return memcpy(p, "nan", 3), p + 3;
    if (signbit(x)) *p++ = '-';
    double ax = fabs(x);
    if (isinf(ax)) return memcpy(p, "inf", 3), p + 3;
    if (ax == 0.0) return *p++ = '0', p;
    uint64_t bits;
    memcpy(&bits, &ax, sizeof bits);
    int e2 = (int)(bits >> 52) - 1023; /* ax in [2^e2, 2^(e2+1)) for normal numbers */
    /* floor(e2·log10 2) (78913 / 2^18 = log10 2 to 6 digits, exact for
     * |e2| < 1700): the decimal exponent or one less. */
    int e10 = (e2 * 78913) >> 18;
    int k = 16 - e10;
    if (k > 22 || k < 1 || (bits >> 52) == 0) return p + sprintf(p, "%.17g", ax);
    uint64_t m = scaled_digits(ax, k);
    if (m >= 100000000000000000ull) { /* the exponent was one more */
        e10++;
        k--;
        m = scaled_digits(ax, k);
        if (m >= 100000000000000000ull) { /* rounded up to 10^17 */
            m /= 10;
            e10++;
        }
    }
    char d[17];
    put_digits17(d, m);
    int last = 16;
    while (last > 0 && d[last] == '0') last--;
    *p++ = d[0];
    if (last > 0) {
        *p++ = '.';
        memcpy(p, d + 1, (size_t)last);
        p += last;
    }
    *p++ = 'e';
    *p++ = e10 < 0 ? '-' : '+';
    int ae = e10 < 0 ? -e10 : e10;
    if (ae < 10) *p++ = '0';
    return put_u64(p, (uint64_t)ae);
}

/* ---- the hook ------------------------------------------------------------------------ */

static void log_emit(void *user, int64_t step, const mdf_hook_row *rows, size_t n)
{
    log_impl *L = (log_impl *)user;
    if (!L->fp || L->failed || n == 0) return;
    char *p = L->buf;
    for (size_t i = 0; i < n; i++) {
        const mdf_hook_row *r = &rows[i];
        p = put_i64(p, step);
        *p++ = ',';
        p = put_i64(p, r->id);
        *p++ = ',';
        p = put_i64(p, r->status);
        *p++ = ',';
        p = put_double(p, r->energy);
        *p++ = ',';
        p = put_double(p, r->fmax);
        *p++ = ',';
        p = put_double(p, r->temperature);
        *p++ = ',';
        if (r->volume > 0.0) p = put_double(p, mdf_hook_row_pressure_bar(r));
        *p++ = ',';
        if (r->volume > 0.0) p = put_double(p, r->volume);
        *p++ = '\n';
    }
    size_t len = (size_t)(p - L->buf);
    errno = 0;
    if (fwrite(L->buf, 1, len, L->fp) == len && fflush(L->fp) == 0) {
        L->bytes += (int64_t)len;
    } else {
        L->failed = errno ? errno : EIO;
        /* a full disk cuts a write anywhere: drop the part of a row, so
         * the file ends with whole rows (unbuffered: nothing is left to
         * flush after the cut) */
        if (ftruncate(fileno(L->fp), (off_t)L->bytes) != 0) { /* the error above is the one to report */ }
        mdf_run_fail(L->ctl, MDF_ERR_IO,
                     "writing the log '%s' failed at step %lld: %s (the rows so far are in '%s'; free disk space or "
                     "log to another path)", L->path, (long long)step, strerror(L->failed), L->tmp_path);
    }
}

static mdf_status log_begin(mdf_hook *h, const mdf_hook_begin *b, mdf_error *err)
{
    log_impl *L = (log_impl *)h->impl;
    mdf_rows_destroy(L->rows);
    L->rows = NULL;
    if (L->fp) fclose(L->fp);
    L->fp = NULL;
    L->failed = 0;
    L->ctl = b->ctl;
    free(L->buf);
    L->buf = malloc(LOG_ROW_MAX * (b->b->sys_cap ? b->b->sys_cap : 1));
    if (!L->buf) return mdf_error_set(err, MDF_ERR_NOMEM, "no memory for the log of %zu systems", b->b->nsys);
    if (L->resuming) {
        /* A resumed run: the rows up to the checkpoint stay, later ones go. */
        L->resuming = 0;
        L->fp = fopen(L->tmp_path, "r+");
        if (L->fp) setvbuf(L->fp, NULL, _IONBF, 0); /* each step's block is one write() */
        if (!L->fp || ftruncate(fileno(L->fp), (off_t)L->resume_at) != 0 ||
            fseeko(L->fp, (off_t)L->resume_at, SEEK_SET) != 0)
            return mdf_error_set(err, MDF_ERR_IO, "cannot continue the log '%s' (opening '%s' at byte %lld: %s)",
                                 L->path, L->tmp_path, (long long)L->resume_at, strerror(errno));
        L->bytes = L->resume_at;
        return mdf_rows_create(b->b, 1, h->every, b->window, log_emit, L, &L->rows, err);
    }
    L->fp = fopen(L->tmp_path, "w");
    if (!L->fp)
        return mdf_error_set(err, MDF_ERR_IO,
                             "cannot write the log '%s' (opening '%s': %s); check that its directory exists and "
                             "is writable", L->path, L->tmp_path, strerror(errno));
    setvbuf(L->fp, NULL, _IONBF, 0); /* each step's block is one write() */
    if (fputs(LOG_HEADER, L->fp) == EOF || fflush(L->fp) != 0)
        return mdf_error_set(err, MDF_ERR_IO, "cannot write the log '%s' (writing '%s': %s)", L->path, L->tmp_path,
                             strerror(errno));
    L->bytes = (int64_t)strlen(LOG_HEADER);
    return mdf_rows_create(b->b, 1, h->every, b->window, log_emit, L, &L->rows, err);
}

static int log_submit(mdf_hook *h, const mdf_hook_ctx *c)
{
    return mdf_rows_submit(((log_impl *)h->impl)->rows, c);
}

/* Every task finished: close, and put the file in place unless a write
 * failed (a failed log does not replace an older one). */
static mdf_status log_end(mdf_hook *h, mdf_error *err)
{
    log_impl *L = (log_impl *)h->impl;
    mdf_rows_destroy(L->rows);
    L->rows = NULL;
    if (!L->fp) return MDF_OK; /* begin failed and said why */
    int bad = ferror(L->fp) != 0;
    if (fclose(L->fp) != 0 && !L->failed) L->failed = errno ? errno : EIO;
    L->fp = NULL;
    if (L->failed || bad)
        return mdf_error_set(err, MDF_ERR_IO, "writing the log '%s' failed: %s (the rows so far are in '%s')",
                             L->path, strerror(L->failed ? L->failed : EIO), L->tmp_path);
    if (rename(L->tmp_path, L->path) != 0)
        return mdf_error_set(err, MDF_ERR_IO, "cannot move the log '%s' to '%s': %s (the log stays in '%s')",
                             L->tmp_path, L->path, strerror(errno), L->tmp_path);
    return MDF_OK;
}

/* Checkpoints: the bytes written so far (every row of the steps done: no
 * task is pending, so the collector emitted them all); -1 before begin. */
static long log_save(mdf_hook *h, void *buf, size_t cap)
{
    log_impl *L = (log_impl *)h->impl;
    if (cap < sizeof(int64_t)) return -1;
    int64_t at = -1;
    if (L->fp && fflush(L->fp) == 0) at = (int64_t)ftello(L->fp);
    memcpy(buf, &at, sizeof at);
    return (long)sizeof at;
}

/* Before begin: the file to continue is PATH.tmp (a run killed or still
 * going), or PATH (a run that ended, renamed it, and is now continued). */
static mdf_status log_restore(mdf_hook *h, const void *buf, size_t n, mdf_error *err)
{
    log_impl *L = (log_impl *)h->impl;
    int64_t at = -1;
    if (n != sizeof at) return mdf_error_set(err, MDF_ERR_PARSE, "the checkpoint's position of the log '%s' is damaged", L->path);
    memcpy(&at, buf, sizeof at);
    L->resuming = 0;
    if (at < 0) return MDF_OK; /* it had not begun: start afresh */
    struct stat sb;
    if (stat(L->tmp_path, &sb) != 0) {
        if (stat(L->path, &sb) != 0)
            return mdf_error_set(err, MDF_ERR_IO, "the log '%s' that the checkpoint continues is gone (neither '%s' "
                                 "nor '%s' exists): restore it, or start afresh without resuming", L->path,
                                 L->tmp_path, L->path);
        if (rename(L->path, L->tmp_path) != 0)
            return mdf_error_set(err, MDF_ERR_IO, "cannot continue the log '%s' (moving it to '%s': %s)", L->path,
                                 L->tmp_path, strerror(errno));
    }
    if ((int64_t)sb.st_size < at)
        return mdf_error_set(err, MDF_ERR_IO, "the log '%s' has %lld bytes, fewer than the %lld it had at the "
                             "checkpoint: restore it, or start afresh without resuming", L->tmp_path,
                             (long long)sb.st_size, (long long)at);
    L->resuming = 1;
    L->resume_at = at;
    return MDF_OK;
}

static void log_free(void *p)
{
    log_impl *L = (log_impl *)p;
    if (!L) return;
    mdf_rows_destroy(L->rows);
    if (L->fp) fclose(L->fp);
    free(L->path);
    free(L->tmp_path);
    free(L->buf);
    free(L);
}

static const mdf_hook_ops log_ops = {.kind = "log", .needs = MDF_HOOK_NEEDS_FMAX | MDF_HOOK_NEEDS_VIRIAL, .begin = log_begin,
                                     .submit = log_submit, .end = log_end, .destroy_impl = log_free,
                                     .save = log_save, .restore = log_restore};

mdf_status mdf_hook_create_log(const char *path, int64_t every, mdf_hook **out, mdf_error *err)
{
    *out = NULL;
    if (!path || !*path) return mdf_error_set(err, MDF_ERR_INVALID, "the log hook needs a file path");
    log_impl *L = calloc(1, sizeof *L);
    size_t n = strlen(path);
    if (L) {
        L->path = strdup(path);
        L->tmp_path = malloc(n + 5);
    }
    if (!L || !L->path || !L->tmp_path) {
        log_free(L);
        return mdf_error_set(err, MDF_ERR_NOMEM, "no memory for the log hook of '%s'", path);
    }
    memcpy(L->tmp_path, path, n);
    memcpy(L->tmp_path + n, ".tmp", 5);
    return mdf_hook_new(&log_ops, "log", MDF_AFTER_STEP, every, L, out, err);
}

/* ---- by name: hooks: [{type: log, params: {path: run.csv, every: 10}}] ---- */

typedef struct log_params {
    char path[MDF_PARAM_STRING_MAX];
    int32_t every;
} log_params;

static const mdf_param_def log_defs[] = {
    MDF_PARAM_STRING(log_params, path, "CSV file to write (required)"),
    MDF_PARAM_INT(log_params, every, 10, 1, INT32_MAX, "steps", "a row per system every N steps"),
    MDF_PARAM_END};

static mdf_status log_create_named(const void *params, mdf_hook **out, mdf_error *err)
{
    const log_params *p = (const log_params *)params;
    if (!p->path[0]) return mdf_error_set(err, MDF_ERR_INVALID, "hook log needs parameter path (the CSV file to write)");
    return mdf_hook_create_log(p->path, p->every, out, err);
}

const mdf_hook_def mdf_hook_def_log = {MDFLOW_API_VERSION, "log",
                                       "per-system CSV rows: step, id, status, energy, fmax, temperature, pressure, volume",
                                       log_defs, sizeof(log_params), log_create_named};
