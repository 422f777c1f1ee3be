/* mdflow — named parameters of methods, models, hooks and sinks.
 *
 * An extension keeps its parameters in a C struct of its own (its "block")
 * and describes each field once, in a table of mdf_param_def ending with
 * MDF_PARAM_END: name, type, offset, default, range, unit and help text.
 * From that table alone the CLI (`--param name=value`), the workflow
 * (`params: {name: value}`) and `mdflow methods` / `mdflow models` set,
 * check and list the parameters; no central struct knows them.
 *
 *   typedef struct { double tau_fs; } berendsen_params;
 *   static const mdf_param_def berendsen_defs[] = {
 *       MDF_PARAM_DOUBLE(berendsen_params, tau_fs, 100.0, 0.0, INFINITY, MDF_PARAM_MIN_OPEN, "fs",
 *                        "relaxation time of the temperature"),
 *       MDF_PARAM_END};
 */
#ifndef MDFLOW_PARAMS_H
#define MDFLOW_PARAMS_H

#include <stddef.h>
#include <stdio.h>
#include "mdflow/error.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum mdf_param_type {
    MDF_PARAM_TYPE_DOUBLE = 0, /* double field */
    MDF_PARAM_TYPE_INT = 1,    /* int32_t field; values must be whole numbers */
    MDF_PARAM_TYPE_BOOL = 2,   /* int32_t field, 0 or 1 (true/false/yes/no/on/off/1/0) */
    MDF_PARAM_TYPE_STRING = 3  /* char[MDF_PARAM_STRING_MAX] field (a path, a name);
                                * default empty, no range */
} mdf_param_type;

#define MDF_PARAM_STRING_MAX 256

/* mdf_param_def.flags */
#define MDF_PARAM_MIN_OPEN 1u /* the range excludes min */
#define MDF_PARAM_MAX_OPEN 2u /* the range excludes max */

typedef struct mdf_param_def {
    const char *name;   /* as users type it: letters, digits, '_' */
    mdf_param_type type;
    size_t offset;      /* offsetof(block, field) */
    double def;         /* default */
    double min, max;    /* range, inclusive unless flags say open; ±INFINITY: none */
    unsigned flags;     /* MDF_PARAM_MIN_OPEN, MDF_PARAM_MAX_OPEN */
    const char *unit;   /* "fs", "eV", "" */
    const char *help;   /* one line */
} mdf_param_def;

#define MDF_PARAM_DOUBLE(block, field, def, min, max, flags, unit, help) \
    {#field, MDF_PARAM_TYPE_DOUBLE, offsetof(block, field), (def), (min), (max), (flags), (unit), (help)}
#define MDF_PARAM_INT(block, field, def, min, max, unit, help) \
    {#field, MDF_PARAM_TYPE_INT, offsetof(block, field), (def), (min), (max), 0u, (unit), (help)}
#define MDF_PARAM_BOOL(block, field, def, help) \
    {#field, MDF_PARAM_TYPE_BOOL, offsetof(block, field), (def), 0.0, 1.0, 0u, "", (help)}
#define MDF_PARAM_STRING(block, field, help) \
    {#field, MDF_PARAM_TYPE_STRING, offsetof(block, field), 0.0, 0.0, 0.0, 0u, "", (help)}
#define MDF_PARAM_END {NULL, MDF_PARAM_TYPE_DOUBLE, 0, 0.0, 0.0, 0.0, 0u, NULL, NULL}

/* Entries of a table (up to its MDF_PARAM_END; a NULL table has none). */
size_t mdf_params_count(const mdf_param_def *defs);
const mdf_param_def *mdf_params_find(const mdf_param_def *defs, const char *name);

/* Writes every default into block. */
void mdf_params_defaults(const mdf_param_def *defs, void *block);

/* Sets parameter `name` of block from text. `owner` names the extension in
 * messages ("method fire", "model morse"). An unknown name's message lists
 * the valid ones; a value out of range names the range and unit. */
mdf_status mdf_params_set(const mdf_param_def *defs, void *block, const char *owner, const char *name,
                          const char *value, mdf_error *err);

/* What mdf_params_set would say of name=value, without a block to set:
 * for settings kept as text until the extension's block exists. */
mdf_status mdf_params_check_setting(const mdf_param_def *defs, const char *owner, const char *name,
                                    const char *value, mdf_error *err);

/* Checks every value of block against its range (the first that fails). */
mdf_status mdf_params_check(const mdf_param_def *defs, const void *block, const char *owner, mdf_error *err);

/* The value of one entry as a double (ints and bools converted; strings 0). */
double mdf_params_get(const mdf_param_def *def, const void *block);

/* Writes "name=value name=value ..." of block into buf (for logs). */
void mdf_params_format(const mdf_param_def *defs, const void *block, char *buf, size_t size);

/* Prints one line per parameter: name, default, range, unit and help,
 * each line starting with `indent`. */
void mdf_params_print(FILE *out, const mdf_param_def *defs, const char *indent);

/* ---- a list of settings, as plain data -------------------------------------
 *
 * What a user asked for, before the extension that reads it is known (a
 * stage's method params, a model's): names and values as text, applied to
 * the extension's block when it is created. */
#define MDF_PARAM_LIST_MAX 24
#define MDF_PARAM_NAME_MAX 40
#define MDF_PARAM_VALUE_MAX MDF_PARAM_STRING_MAX

typedef struct mdf_param_list {
    int n;
    struct {
        char name[MDF_PARAM_NAME_MAX];
        char value[MDF_PARAM_VALUE_MAX];
    } item[MDF_PARAM_LIST_MAX];
} mdf_param_list;

void mdf_param_list_init(mdf_param_list *l);
/* Adds name=value, replacing an earlier value of the same name. */
mdf_status mdf_param_list_set(mdf_param_list *l, const char *name, const char *value, mdf_error *err);
/* The same with a number (written with 17 significant digits: exact). */
mdf_status mdf_param_list_set_double(mdf_param_list *l, const char *name, double value, mdf_error *err);
/* "name=value" as the CLI takes it. */
mdf_status mdf_param_list_parse(mdf_param_list *l, const char *assignment, mdf_error *err);
/* The value given for name, or NULL. */
const char *mdf_param_list_get(const mdf_param_list *l, const char *name);
/* Applies every setting to block (mdf_params_set for each, in order). */
mdf_status mdf_param_list_apply(const mdf_param_list *l, const mdf_param_def *defs, void *block, const char *owner,
                                mdf_error *err);

#ifdef __cplusplus
}
#endif
#endif
