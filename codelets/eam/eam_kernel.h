/* mdflow — embedded-atom method (EAM): the parameter blob, the table
 * arithmetic and the neighbour walk, shared by the CPU codelets (eam_cpu.c)
 * and the CUDA ones (eam_cuda.cu): every operation on numbers is one of the
 * MDF_HD functions below, so both evaluate the same formulas in the same
 * order. The GPU contracts a*b+c into fused multiply-adds where the CPU
 * rounds twice, except where a decision depends on the result: r² for the
 * cutoff (mdf_nl_norm2) and the spline row (mdf_eam_row) round as on the
 * CPU, so both take the same neighbours and the same table rows and differ
 * by round-off only.
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
#ifndef __CUDACC__
#include <math.h>
#endif
#include "mdflow/kernel.h"
#include "mdflow/kernel/nlist.h"

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

/* Row m and offset p of a table of n points at x = v * rinv + 1 (LAMMPS's
 * rounding: m = min((int)x, n - 1), at least lo; p = min(x - m, 1)). x is
 * rounded as on the CPU (no fused multiply-add): both pick the same row. */
MDF_HD int32_t mdf_eam_row(double v, double rinv, int32_t n, int32_t lo, double *p)
{
    double x = mdf_nl_add(mdf_nl_mul(v, rinv), 1.0);
    /* Clamped before the conversion: no undefined cast for a huge x. */
    const int32_t m = x < (double)(n - 1) ? (x > (double)lo ? (int32_t)x : lo) : n - 1;
    x -= m;
    *p = x < 1.0 ? x : 1.0;
    return m;
}

/* The spline row and offset p for distance r (LAMMPS's rounding). */
MDF_HD const double *mdf_eam_r_row(const mdf_eam_params *prm, const double *tab, double r, double *p)
{
    return tab + (int64_t)mdf_eam_row(r, prm->rdr, prm->nr, 0, p) * 7;
}

MDF_HD double mdf_eam_value(const double *c, double p) { return ((c[3] * p + c[4]) * p + c[5]) * p + c[6]; }
MDF_HD double mdf_eam_deriv(const double *c, double p) { return (c[0] * p + c[1]) * p + c[2]; }

/* F(rho) and F'(rho) of element e, as LAMMPS (linear beyond rhomax). */
MDF_HD double mdf_eam_embed(const mdf_eam_params *prm, int32_t e, double rho, double *fp)
{
    double p;
    const double *c = mdf_eam_frho(prm, e) + (int64_t)mdf_eam_row(rho, prm->rdrho, prm->nrho, 1, &p) * 7;
    double d = mdf_eam_deriv(c, p), f = mdf_eam_value(c, p);
    if (rho > prm->rhomax) f += d * (rho - prm->rhomax);
    *fp = d;
    return f;
}

/* F'(rho) only. */
MDF_HD double mdf_eam_embed_deriv(const mdf_eam_params *prm, int32_t e, double rho)
{
    double p;
    const double *c = mdf_eam_frho(prm, e) + (int64_t)mdf_eam_row(rho, prm->rdrho, prm->nrho, 1, &p) * 7;
    return mdf_eam_deriv(c, p);
}

/* The file's element of atomic number z (0 for one not in the file: such
 * systems are refused before a run). */
MDF_HD int32_t mdf_eam_elem(const mdf_eam_params *p, int32_t z)
{
    int32_t e = z >= 0 && z <= MDF_EAM_MAX_Z ? p->elem_of_z[z] : -1;
    return e >= 0 ? e : 0;
}

/* ---- neighbours ---------------------------------------------------------------
 *
 * Every neighbour image of atom i of a chunk within the cut-off, from its
 * full list or, without one, its cells (mdf_nl_full: small periodic cells
 * included). Usage (CPU and GPU alike):
 *
 *   mdf_eam_nbrs it;
 *   mdf_eam_nbrs_begin(&it, x, sys, l, v, chunk_atom_begin, i, s, p->cutsq);
 *   while (mdf_eam_nbrs_next(&it, &j, d, &r)) ...   (d = r_j - r_i, r = |d| < cut) */
typedef struct mdf_eam_nbrs {
    mdf_nl_full full;
    double rc2;
} mdf_eam_nbrs;

MDF_HD void mdf_eam_nbrs_begin(mdf_eam_nbrs *it, const double *x, const mdf_sys_info *sys, mdf_nl_list_view l,
                               mdf_nl_bins_view v, int32_t atom_begin, int32_t i, int32_t s, double rc2)
{
    mdf_nl_full_begin(&it->full, i, x, &l, &v, &sys[s], s, atom_begin);
    it->rc2 = rc2;
}

/* The next neighbour within the cutoff: j, d = r_j - r_i and r = |d|; 0
 * when there is none left. */
MDF_HD int mdf_eam_nbrs_next(mdf_eam_nbrs *it, int32_t *j, double d[3], double *r)
{
    while (mdf_nl_full_next(&it->full, j, d)) {
        const double r2 = mdf_nl_norm2(d[0], d[1], d[2]);
        if (r2 < it->rc2) {
            *r = sqrt(r2);
            return 1;
        }
    }
    return 0;
}

/* ---- one atom -------------------------------------------------------------------- */

/* The density at atom it->full.i: the sum over its neighbours j of rho_{e_j -> e_i}(r). */
MDF_HD double mdf_eam_atom_density(const mdf_eam_params *p, const mdf_atom_info *atoms, mdf_eam_nbrs *it)
{
    const int32_t ei = mdf_eam_elem(p, atoms[it->full.i].z);
    int32_t j;
    double d[3], r, rho = 0.0, t;
    while (mdf_eam_nbrs_next(it, &j, d, &r)) {
        const double *c = mdf_eam_r_row(p, mdf_eam_rhor(p, mdf_eam_elem(p, atoms[j].z), ei), r, &t);
        rho += mdf_eam_value(c, t);
    }
    return rho;
}

/* Atom it->full.i's energy, F(rho_i) + half of each pair energy phi(r_ij), its
 * force f, and when want_virial its half of each pair's virial in w (both
 * overwritten). rho: the densities by shard atom index. As LAMMPS's
 * pair_eam.cpp compute(): with rhoip = d rho_{i->j}/dr, rhojp =
 * d rho_{j->i}/dr and psip = F'(rho_i) rhojp + F'(rho_j) rhoip + phi'(r),
 * the pair's force on i is (psip / r) (r_j - r_i). */
MDF_HD double mdf_eam_atom_force(const mdf_eam_params *p, const mdf_atom_info *atoms, const double *rho,
                                 mdf_eam_nbrs *it, int want_virial, double f[3], double w[9])
{
    const int32_t i = it->full.i, ei = mdf_eam_elem(p, atoms[i].z);
    double fp_i, e = 0.0, d[3], r, t;
    const double embed = mdf_eam_embed(p, ei, rho[i], &fp_i);
    for (int k = 0; k < 3; k++) f[k] = 0.0;
    for (int k = 0; k < 9; k++) w[k] = 0.0;
    int32_t j;
    while (mdf_eam_nbrs_next(it, &j, d, &r)) {
        const int32_t ej = mdf_eam_elem(p, atoms[j].z);
        const double *c = mdf_eam_r_row(p, mdf_eam_rhor(p, ei, ej), r, &t);
        const double rhoip = mdf_eam_deriv(c, t);
        c = mdf_eam_r_row(p, mdf_eam_rhor(p, ej, ei), r, &t);
        const double rhojp = mdf_eam_deriv(c, t);
        c = mdf_eam_r_row(p, mdf_eam_z2r(p, ei, ej), r, &t);
        const double z2p = mdf_eam_deriv(c, t), z2 = mdf_eam_value(c, t);
        const double recip = 1.0 / r, phi = z2 * recip, phip = z2p * recip - phi * recip;
        const double fp_j = mdf_eam_embed_deriv(p, ej, rho[j]);
        const double psip = fp_i * rhojp + fp_j * rhoip + phip;
        const double fpair = -psip * recip; /* force on i: -fpair (r_j - r_i) */
        e += 0.5 * phi;
        for (int k = 0; k < 3; k++) f[k] -= fpair * d[k];
        if (want_virial)
            for (int x = 0; x < 3; x++)
                for (int y = 0; y < 3; y++) w[3 * x + y] += 0.5 * d[x] * d[y] * fpair;
    }
    return embed + e;
}

#endif
