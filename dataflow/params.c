/* mdflow — named parameters: set, check and list an extension's block from
 * its mdf_param_def table (mdflow/params.h). */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include "mdflow/params.h"

size_t mdf_params_count(const mdf_param_def *defs)
{
    size_t n = 0;
    while (defs && defs[n].name) n++;
    return n;
}

const mdf_param_def *mdf_params_find(const mdf_param_def *defs, const char *name)
{
    for (size_t k = 0; defs && defs[k].name; k++)
        if (strcmp(defs[k].name, name) == 0) return &defs[k];
    return NULL;
}

static void store(const mdf_param_def *d, void *block, double v)
{
    if (d->type == MDF_PARAM_TYPE_STRING) return; /* set from text only */
    char *field = (char *)block + d->offset;
    if (d->type == MDF_PARAM_TYPE_DOUBLE) memcpy(field, &v, sizeof v);
    else {
        int32_t i = (int32_t)v;
        memcpy(field, &i, sizeof i);
    }
}

double mdf_params_get(const mdf_param_def *d, const void *block)
{
    const char *field = (const char *)block + d->offset;
    if (d->type == MDF_PARAM_TYPE_STRING) return 0.0;
    if (d->type == MDF_PARAM_TYPE_DOUBLE) {
        double v;
        memcpy(&v, field, sizeof v);
        return v;
    }
    int32_t i;
    memcpy(&i, field, sizeof i);
    return (double)i;
}

void mdf_params_defaults(const mdf_param_def *defs, void *block)
{
    for (size_t k = 0; defs && defs[k].name; k++) {
        if (defs[k].type == MDF_PARAM_TYPE_STRING) memset((char *)block + defs[k].offset, 0, MDF_PARAM_STRING_MAX);
        else store(&defs[k], block, defs[k].def);
    }
}

/* "[min, max)" with the unit, as messages and listings write a range. */
static void format_range(const mdf_param_def *d, char *buf, size_t size)
{
    if (d->type == MDF_PARAM_TYPE_BOOL || d->type == MDF_PARAM_TYPE_STRING) {
        snprintf(buf, size, d->type == MDF_PARAM_TYPE_BOOL ? "true or false" : "text");
        return;
    }
    char lo[32], hi[32];
    if (isinf(d->min)) snprintf(lo, sizeof lo, "-inf");
    else snprintf(lo, sizeof lo, "%.10g", d->min);
    if (isinf(d->max)) snprintf(hi, sizeof hi, "inf");
    else snprintf(hi, sizeof hi, "%.10g", d->max);
    snprintf(buf, size, "%c%s, %s%c%s%s%s", (d->flags & MDF_PARAM_MIN_OPEN) || isinf(d->min) ? '(' : '[', lo, hi,
             (d->flags & MDF_PARAM_MAX_OPEN) || isinf(d->max) ? ')' : ']',
             d->type == MDF_PARAM_TYPE_INT ? " (whole number)" : "", d->unit && *d->unit ? " " : "",
             d->unit ? d->unit : "");
}

static int in_range(const mdf_param_def *d, double v)
{
    if (d->type == MDF_PARAM_TYPE_STRING) return 1;
    if (isnan(v)) return 0;
    if (d->type == MDF_PARAM_TYPE_DOUBLE && !isfinite(v) && !(isinf(v) && (isinf(d->min) || isinf(d->max))))
        return 0;
    if ((d->flags & MDF_PARAM_MIN_OPEN) ? !(v > d->min) : !(v >= d->min)) return 0;
    if ((d->flags & MDF_PARAM_MAX_OPEN) ? !(v < d->max) : !(v <= d->max)) return 0;
    return 1;
}

static mdf_status out_of_range(const mdf_param_def *d, const char *owner, const char *text, mdf_error *err)
{
    char range[96];
    format_range(d, range, sizeof range);
    return mdf_error_set(err, MDF_ERR_INVALID, "parameter %s of %s: %s is out of range; give a value in %s (%s)",
                         d->name, owner, text, range, d->help ? d->help : "");
}

static int parse_bool(const char *s, double *v)
{
    static const char *const yes[] = {"true", "yes", "on", "1"}, *const no[] = {"false", "no", "off", "0"};
    for (size_t k = 0; k < 4; k++) {
        if (strcasecmp(s, yes[k]) == 0) return *v = 1.0, 1;
        if (strcasecmp(s, no[k]) == 0) return *v = 0.0, 1;
    }
    return 0;
}

static int parse_number(const char *s, double *v)
{
    char *end;
    errno = 0;
    *v = strtod(s, &end);
    while (end != s && isspace((unsigned char)*end)) end++;
    return end != s && *end == '\0' && errno != ERANGE;
}

/* The valid names of a table, ", "-separated, for "unknown parameter" messages. */
static void list_names(const mdf_param_def *defs, char *buf, size_t size)
{
    buf[0] = '\0';
    size_t used = 0;
    for (size_t k = 0; defs && defs[k].name && used + 1 < size; k++) {
        int n = snprintf(buf + used, size - used, "%s%s", k ? ", " : "", defs[k].name);
        if (n < 0) break;
        used += (size_t)n;
    }
}

/* Finds name in defs and reads value for it: *out the entry, *v the number
 * (strings: their length checked only). Every message names the parameter
 * and its owner. */
static mdf_status parse_setting(const mdf_param_def *defs, const char *owner, const char *name, const char *value,
                                const mdf_param_def **out, double *v, mdf_error *err)
{
    const mdf_param_def *d = *out = mdf_params_find(defs, name);
    if (!d) {
        if (mdf_params_count(defs) == 0)
            return mdf_error_set(err, MDF_ERR_INVALID, "unknown parameter '%s': %s takes no parameters", name, owner);
        char names[600];
        list_names(defs, names, sizeof names);
        return mdf_error_set(err, MDF_ERR_INVALID, "unknown parameter '%s' of %s: its parameters are %s", name,
                             owner, names);
    }
    if (d->type == MDF_PARAM_TYPE_STRING) {
        if (strlen(value) >= MDF_PARAM_STRING_MAX)
            return mdf_error_set(err, MDF_ERR_INVALID, "parameter %s of %s: the text is longer than %d characters",
                                 name, owner, MDF_PARAM_STRING_MAX - 1);
        return MDF_OK;
    }
    if (d->type == MDF_PARAM_TYPE_BOOL) {
        if (!parse_bool(value, v))
            return mdf_error_set(err, MDF_ERR_INVALID, "parameter %s of %s: '%s' is not true or false", name, owner,
                                 value);
    } else if (!parse_number(value, v)) {
        return mdf_error_set(err, MDF_ERR_INVALID, "parameter %s of %s: '%s' is not a number", name, owner, value);
    } else if (d->type == MDF_PARAM_TYPE_INT && (*v != floor(*v) || fabs(*v) > (double)INT32_MAX)) {
        return mdf_error_set(err, MDF_ERR_INVALID, "parameter %s of %s: '%s' is not a whole number", name, owner,
                             value);
    }
    return in_range(d, *v) ? MDF_OK : out_of_range(d, owner, value, err);
}

mdf_status mdf_params_set(const mdf_param_def *defs, void *block, const char *owner, const char *name,
                          const char *value, mdf_error *err)
{
    const mdf_param_def *d;
    double v = 0.0;
    mdf_status st = parse_setting(defs, owner, name, value, &d, &v, err);
    if (st != MDF_OK) return st;
    if (d->type == MDF_PARAM_TYPE_STRING) snprintf((char *)block + d->offset, MDF_PARAM_STRING_MAX, "%s", value);
    else store(d, block, v);
    return MDF_OK;
}

mdf_status mdf_params_check_setting(const mdf_param_def *defs, const char *owner, const char *name,
                                    const char *value, mdf_error *err)
{
    const mdf_param_def *d;
    double v = 0.0;
    return parse_setting(defs, owner, name, value, &d, &v, err);
}

mdf_status mdf_params_check(const mdf_param_def *defs, const void *block, const char *owner, mdf_error *err)
{
    for (size_t k = 0; defs && defs[k].name; k++) {
        double v = mdf_params_get(&defs[k], block);
        if (!in_range(&defs[k], v)) {
            char text[40];
            snprintf(text, sizeof text, "%.10g", v);
            return out_of_range(&defs[k], owner, text, err);
        }
    }
    return MDF_OK;
}

static void format_value(const mdf_param_def *d, double v, char *buf, size_t size)
{
    if (d->type == MDF_PARAM_TYPE_BOOL) snprintf(buf, size, "%s", v != 0.0 ? "true" : "false");
    else snprintf(buf, size, "%.10g", v);
}

void mdf_params_format(const mdf_param_def *defs, const void *block, char *buf, size_t size)
{
    if (size == 0) return;
    buf[0] = '\0';
    size_t used = 0;
    for (size_t k = 0; defs && defs[k].name && used + 1 < size; k++) {
        char v[MDF_PARAM_STRING_MAX];
        if (defs[k].type == MDF_PARAM_TYPE_STRING) snprintf(v, sizeof v, "%s", (const char *)block + defs[k].offset);
        else format_value(&defs[k], mdf_params_get(&defs[k], block), v, sizeof v);
        int n = snprintf(buf + used, size - used, "%s%s=%s", k ? " " : "", defs[k].name, v);
        if (n < 0) break;
        used += (size_t)n;
    }
}

void mdf_params_print(FILE *out, const mdf_param_def *defs, const char *indent)
{
    for (size_t k = 0; defs && defs[k].name; k++) {
        const mdf_param_def *d = &defs[k];
        char def[40], range[96];
        if (d->type == MDF_PARAM_TYPE_STRING) snprintf(def, sizeof def, "none");
        else format_value(d, d->def, def, sizeof def);
        format_range(d, range, sizeof range);
        fprintf(out, "%s%-16s %s (default %s; %s)\n", indent, d->name, d->help ? d->help : "", def, range);
    }
}

/* ---- settings lists ------------------------------------------------------------ */

void mdf_param_list_init(mdf_param_list *l) { memset(l, 0, sizeof *l); }

static int valid_name(const char *name)
{
    if (!*name) return 0;
    for (const char *c = name; *c; c++)
        if (!isalnum((unsigned char)*c) && *c != '_' && *c != '.') return 0;
    return 1;
}

mdf_status mdf_param_list_set(mdf_param_list *l, const char *name, const char *value, mdf_error *err)
{
    if (!valid_name(name))
        return mdf_error_set(err, MDF_ERR_INVALID,
                             "parameter name '%s' is not valid: use letters, digits and '_' (e.g. tau_fs)", name);
    if (strlen(name) >= MDF_PARAM_NAME_MAX)
        return mdf_error_set(err, MDF_ERR_INVALID, "parameter name '%.40s...' is longer than %d characters", name,
                             MDF_PARAM_NAME_MAX - 1);
    if (strlen(value) >= MDF_PARAM_VALUE_MAX)
        return mdf_error_set(err, MDF_ERR_INVALID, "value of parameter %s is longer than %d characters", name,
                             MDF_PARAM_VALUE_MAX - 1);
    int k = 0;
    while (k < l->n && strcmp(l->item[k].name, name) != 0) k++;
    if (k == l->n) {
        if (l->n == MDF_PARAM_LIST_MAX)
            return mdf_error_set(err, MDF_ERR_INVALID, "more than %d parameters given: %s is one too many",
                                 MDF_PARAM_LIST_MAX, name);
        l->n++;
        snprintf(l->item[k].name, sizeof l->item[k].name, "%s", name);
    }
    snprintf(l->item[k].value, sizeof l->item[k].value, "%s", value);
    return MDF_OK;
}

mdf_status mdf_param_list_set_double(mdf_param_list *l, const char *name, double value, mdf_error *err)
{
    char text[40];
    snprintf(text, sizeof text, "%.17g", value);
    return mdf_param_list_set(l, name, text, err);
}

mdf_status mdf_param_list_parse(mdf_param_list *l, const char *assignment, mdf_error *err)
{
    const char *eq = strchr(assignment, '=');
    if (!eq || eq == assignment || !eq[1])
        return mdf_error_set(err, MDF_ERR_INVALID, "'%s' is not NAME=VALUE (e.g. --param tau_fs=100)", assignment);
    char name[MDF_PARAM_NAME_MAX];
    size_t len = (size_t)(eq - assignment);
    if (len >= sizeof name)
        return mdf_error_set(err, MDF_ERR_INVALID, "parameter name in '%s' is longer than %d characters", assignment,
                             MDF_PARAM_NAME_MAX - 1);
    memcpy(name, assignment, len);
    name[len] = '\0';
    return mdf_param_list_set(l, name, eq + 1, err);
}

const char *mdf_param_list_get(const mdf_param_list *l, const char *name)
{
    for (int k = 0; k < l->n; k++)
        if (strcmp(l->item[k].name, name) == 0) return l->item[k].value;
    return NULL;
}

mdf_status mdf_param_list_apply(const mdf_param_list *l, const mdf_param_def *defs, void *block, const char *owner,
                                mdf_error *err)
{
    for (int k = 0; k < l->n; k++) {
        mdf_status st = mdf_params_set(defs, block, owner, l->item[k].name, l->item[k].value, err);
        if (st != MDF_OK) return st;
    }
    return MDF_OK;
}
