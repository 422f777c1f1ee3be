/* mdflow — embedded-atom method (EAM): the parameter blob and the table
 * arithmetic shared by the CPU codelets (and a future CUDA one).
 *
 * The tables are LAMMPS's (pair_eam.cpp): each tabulated function f[1..n]
 * (f[1] at 0) becomes cubic-spline coefficients, 7 per point (its
 * interpolate()), evaluated as
 *   p = x / dx + 1, m = (int)p, m = min(m, n - 1), p -= m, p = min(p, 1),
 *   value = ((c3 p + c4) p + c5) p + c6,  derivative = (c0 p + c1) p + c2,
 * and F(rho) beyond rhomax continued linearly with the last slope, as
 * LAMMPS's compute() does. Results match LAMMPS's eam/alloy to round-off.
 *
 * Blob layout (one allocation, doubles aligned): mdf_eam_params, then the
 * spline arrays, each table (n + 1) x 7 doubles (row 0 unused):
 *   frho: nelem tables of nrho points;
 *   rhor: nelem * nelem tables of nr points, table a * nelem + b is the
 *         density at an atom of element b due to a neighbour of element a
 *         (eam/alloy: every b shares a's table; eam/fs: the file's own);
 *   z2r:  nelem * (nelem + 1) / 2 tables of nr points, r * phi(r), pair
 *         (a, b) with a >= b at a * (a + 1) / 2 + b. */
#ifndef MDF_EAM_KERNEL_H
#define MDF_EAM_KERNEL_H

#include <stdint.h>
#include "mdflow/kernel.h"

#define MDF_EAM_MAX_Z 127
#define MDF_EAM_MAX_ELEMENTS 16

typedef struct mdf_eam_params {
    int32_t nelem, nrho, nr, kind; /* kind: 0 setfl (eam/alloy), 1 funcfl (eam), 2 eam/fs */
    double drho, dr, rdrho, rdr;
    double rhomax, cut, cutsq, pad_;
    int64_t off_frho, off_rhor, off_z2r; /* offsets in doubles from the blob's start */
    int64_t total;                       /* blob size in doubles */
    int32_t elem_of_z[MDF_EAM_MAX_Z + 1]; /* -1: not in the file */
    int32_t z_of_elem[MDF_EAM_MAX_ELEMENTS];
} mdf_eam_params;

MDF_HD const double *mdf_eam_frho(const mdf_eam_params *p, int32_t e)
{
    return (const double *)p + p->off_frho + (int64_t)e * (p->nrho + 1) * 7;
}

/* Density at an atom of element b due to a neighbour of element a. */
MDF_HD const double *mdf_eam_rhor(const mdf_eam_params *p, int32_t a, int32_t b)
{
    return (const double *)p + p->off_rhor + (int64_t)(a * p->nelem + b) * (p->nr + 1) * 7;
}

MDF_HD const double *mdf_eam_z2r(const mdf_eam_params *p, int32_t a, int32_t b)
{
    int32_t hi = a > b ? a : b, lo = a > b ? b : a;
    return (const double *)p + p->off_z2r + (int64_t)(hi * (hi + 1) / 2 + lo) * (p->nr + 1) * 7;
}

/* The spline row and offset p for distance r (LAMMPS's rounding). */
MDF_HD const double *mdf_eam_r_row(const mdf_eam_params *prm, const double *tab, double r, double *p)
{
    double x = r * prm->rdr + 1.0;
    int32_t m = (int32_t)x;
    if (m > prm->nr - 1) m = prm->nr - 1;
    x -= m;
    *p = x < 1.0 ? x : 1.0;
    return tab + (int64_t)m * 7;
}

MDF_HD double mdf_eam_value(const double *c, double p) { return ((c[3] * p + c[4]) * p + c[5]) * p + c[6]; }
MDF_HD double mdf_eam_deriv(const double *c, double p) { return (c[0] * p + c[1]) * p + c[2]; }

/* F(rho) and F'(rho) of element e, as LAMMPS (linear beyond rhomax). */
MDF_HD double mdf_eam_embed(const mdf_eam_params *prm, int32_t e, double rho, double *fp)
{
    double x = rho * prm->rdrho + 1.0;
    int32_t m = (int32_t)x;
    if (m > prm->nrho - 1) m = prm->nrho - 1;
    if (m < 1) m = 1;
    x -= m;
    double p = x < 1.0 ? x : 1.0;
    const double *c = mdf_eam_frho(prm, e) + (int64_t)m * 7;
    double d = mdf_eam_deriv(c, p), f = mdf_eam_value(c, p);
    if (rho > prm->rhomax) f += d * (rho - prm->rhomax);
    *fp = d;
    return f;
}

/* F'(rho) only. */
MDF_HD double mdf_eam_embed_deriv(const mdf_eam_params *prm, int32_t e, double rho)
{
    double x = rho * prm->rdrho + 1.0;
    int32_t m = (int32_t)x;
    if (m > prm->nrho - 1) m = prm->nrho - 1;
    if (m < 1) m = 1;
    x -= m;
    double p = x < 1.0 ? x : 1.0;
    return mdf_eam_deriv(mdf_eam_frho(prm, e) + (int64_t)m * 7, p);
}

#endif
