/* mdflow — command-line helpers. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "cli.h"

mdf_status cli_double(const char *opt, const char *text, double *out, mdf_error *err)
{
    char *end = NULL;
    errno = 0;
    double v = strtod(text, &end);
    if (errno || end == text || *end || !isfinite(v))
        return mdf_error_set(err, MDF_ERR_INVALID, "option %s: '%s' is not a number", opt, text);
    *out = v;
    return MDF_OK;
}

mdf_status cli_int64(const char *opt, const char *text, int64_t *out, mdf_error *err)
{
    char *end = NULL;
    errno = 0;
    long long v = strtoll(text, &end, 10);
    if (errno || end == text || *end)
        return mdf_error_set(err, MDF_ERR_INVALID, "option %s: '%s' is not an integer", opt, text);
    *out = v;
    return MDF_OK;
}

mdf_status cli_double_min(const char *opt, const char *text, double min, int strict, const char *range, double *out,
                          mdf_error *err)
{
    double v = 0.0;
    mdf_status st = cli_double(opt, text, &v, err);
    if (st != MDF_OK) return st;
    if (strict ? !(v > min) : !(v >= min))
        return mdf_error_set(err, MDF_ERR_INVALID, "option %s: %s is out of range: give %s", opt, text, range);
    *out = v;
    return MDF_OK;
}

mdf_status cli_int64_range(const char *opt, const char *text, int64_t min, int64_t max, const char *range,
                           int64_t *out, mdf_error *err)
{
    int64_t v = 0;
    mdf_status st = cli_int64(opt, text, &v, err);
    if (st != MDF_OK) return st;
    if (v < min || v > max)
        return mdf_error_set(err, MDF_ERR_INVALID, "option %s: %s is out of range: give %s", opt, text, range);
    *out = v;
    return MDF_OK;
}

/* Splits text at ':' into at most max fields (modifies a copy). */
static int split_fields(char *copy, char **fields, int max)
{
    int n = 0;
    for (char *save = NULL, *tok = strtok_r(copy, ":", &save); tok && n < max + 1;
         tok = strtok_r(NULL, ":", &save))
        fields[n++] = tok;
    return n;
}

static mdf_status element(const char *sym, int *z, mdf_error *err)
{
    *z = mdf_element_number(sym);
    if (*z < 1) return mdf_error_set(err, MDF_ERR_INVALID, "unknown element '%s' in Lennard-Jones parameters", sym);
    return MDF_OK;
}

/* Three numbers of an --lj-species or --lj-pair value, kept as given. */
static mdf_status lj_numbers(const char *opt, char *const *f, cli_lj_row *row, mdf_error *err)
{
    static const char *const what[] = {"epsilon", "sigma", "cutoff"};
    for (int k = 0; k < 3; k++) {
        char name[64];
        double v = 0.0;
        snprintf(name, sizeof name, "%s %s", opt, what[k]);
        mdf_status st = cli_double(name, f[k], &v, err);
        if (st != MDF_OK) return st;
        if (strlen(f[k]) >= sizeof row->value[k])
            return mdf_error_set(err, MDF_ERR_INVALID, "option %s: '%s' is too long", name, f[k]);
        snprintf(row->value[k], sizeof row->value[k], "%s", f[k]);
    }
    return MDF_OK;
}

mdf_status cli_lj_species(const char *text, cli_lj_row *row, mdf_error *err)
{
    char copy[256], *f[6];
    snprintf(copy, sizeof copy, "%s", text);
    memset(row, 0, sizeof *row);
    if (split_fields(copy, f, 4) != 4)
        return mdf_error_set(err, MDF_ERR_INVALID,
                             "--lj-species '%s': expected SYMBOL:EPSILON:SIGMA:CUTOFF, e.g. Ar:0.0104:3.4:8.5", text);
    mdf_status st = element(f[0], &row->z[0], err);
    return st != MDF_OK ? st : lj_numbers("--lj-species", f + 1, row, err);
}

mdf_status cli_lj_pair(const char *text, cli_lj_row *row, mdf_error *err)
{
    char copy[256], *f[6];
    snprintf(copy, sizeof copy, "%s", text);
    memset(row, 0, sizeof *row);
    if (split_fields(copy, f, 5) != 5)
        return mdf_error_set(err, MDF_ERR_INVALID,
                             "--lj-pair '%s': expected A:B:EPSILON:SIGMA:CUTOFF, e.g. Ar:Kr:0.0140:3.5:8.5", text);
    mdf_status st = element(f[0], &row->z[0], err);
    if (st == MDF_OK) st = element(f[1], &row->z[1], err);
    return st != MDF_OK ? st : lj_numbers("--lj-pair", f + 2, row, err);
}
