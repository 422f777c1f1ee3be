/* mdflow — range checks of the optimisers' parameters (host only; used by
 * stages/{fire,fire2,gd,lbfgs}.c). Messages name the parameter, its value
 * and its valid range, e.g. "fire.dt 0 must be > 0". */
#ifndef MDF_OPTIM_CHECK_H
#define MDF_OPTIM_CHECK_H

#include <math.h>
#include "mdflow/error.h"

#define MDF_OPEN 1    /* the bound itself is excluded */
#define MDF_CLOSED 0  /* the bound itself is allowed */

/* v must be finite and lie between lo and hi (hi = INFINITY: no upper bound). */
static inline mdf_status mdf_optim_check_range(const char *name, double v, double lo, int lo_open, double hi,
                                               int hi_open, mdf_error *err)
{
    int ok = isfinite(v) && (lo_open ? v > lo : v >= lo) && (hi_open ? v < hi : v <= hi);
    if (ok) return MDF_OK;
    if (isinf(hi))
        return mdf_error_set(err, MDF_ERR_INVALID, "%s %g must be %s %g%s", name, v, lo_open ? ">" : ">=", lo,
                             isfinite(v) ? "" : " and finite");
    return mdf_error_set(err, MDF_ERR_INVALID, "%s %g must be in %c%g, %g%c", name, v, lo_open ? '(' : '[', lo, hi,
                         hi_open ? ')' : ']');
}

#endif
