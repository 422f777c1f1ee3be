/* mdflow — small helpers for the command-line program. */
#ifndef MDF_CLI_H
#define MDF_CLI_H

#include <stdint.h>
#include "mdflow/mdflow.h"

/* Parse a number from an option value; on failure fill err naming the option. */
mdf_status cli_double(const char *opt, const char *text, double *out, mdf_error *err);
mdf_status cli_int64(const char *opt, const char *text, int64_t *out, mdf_error *err);
/* "SYM:eps:sigma:cutoff" -> species; "A:B:eps:sigma:cutoff" -> pair. */
mdf_status cli_lj_species(const char *text, mdf_lj_config *cfg, mdf_error *err);
mdf_status cli_lj_pair(const char *text, mdf_lj_config *cfg, mdf_error *err);

#endif
