/* mdflow — small helpers for the command-line program. */
#ifndef MDF_CLI_H
#define MDF_CLI_H

#include <stdint.h>
#include "mdflow/mdflow.h"

/* Parse a number from an option value; on failure fill err naming the option. */
mdf_status cli_double(const char *opt, const char *text, double *out, mdf_error *err);
mdf_status cli_int64(const char *opt, const char *text, int64_t *out, mdf_error *err);
/* The same, refusing values outside a range (range: the valid values in
 * words, for the message). Options whose "not given" is a negative value
 * internally must use these: a negative value given would otherwise read as
 * not given. cli_double_min: >= min, or > min when strict. */
mdf_status cli_double_min(const char *opt, const char *text, double min, int strict, const char *range, double *out,
                          mdf_error *err);
mdf_status cli_int64_range(const char *opt, const char *text, int64_t min, int64_t max, const char *range,
                           int64_t *out, mdf_error *err);
/* "SYM:eps:sigma:cutoff" -> a species row; "A:B:eps:sigma:cutoff" -> a pair
 * row: the elements and the three numbers as given (checked to be numbers;
 * their ranges are the lj model's). */
typedef struct cli_lj_row {
    int z[2];
    char value[3][64];     /* epsilon, sigma, cutoff */
} cli_lj_row;
mdf_status cli_lj_species(const char *text, cli_lj_row *row, mdf_error *err);
mdf_status cli_lj_pair(const char *text, cli_lj_row *row, mdf_error *err);

#endif
