/* mdflow — Lennard-Jones arithmetic shared by the CPU and CUDA kernels.
 *
 * The pair terms follow LAMMPS's lj/cut exactly (same coefficients, same
 * order of operations), so energies, forces and virials agree with it to
 * round-off:
 *   E(r) = 4ε[(σ/r)^12 - (σ/r)^6] - E_shift,   F(r)·r̂ = 24ε[2(σ/r)^12 - (σ/r)^6]/r */
#ifndef MDF_LJ_KERNEL_H
#define MDF_LJ_KERNEL_H

#include "../common/mdf_kernel_common.h"
#include "../nlist/nlist_kernel.h"

#define MDF_LJ_MAX_TYPES 8
#define MDF_LJ_MAX_Z 119

/* Model parameters: registered once as a StarPU handle, so StarPU copies
 * them to each GPU once and caches them there. */
typedef struct mdf_lj_params {
    int32_t ntypes;
    int32_t type_of_z[MDF_LJ_MAX_Z + 1]; /* -1: element not in the model */
    int32_t dense_simd;                  /* CPU all-pairs loop: MDF_LJ_SIMD_* (lj_dense.h) */
    double rc2[MDF_LJ_MAX_TYPES][MDF_LJ_MAX_TYPES];
    double lj1[MDF_LJ_MAX_TYPES][MDF_LJ_MAX_TYPES]; /* 48 ε σ^12 */
    double lj2[MDF_LJ_MAX_TYPES][MDF_LJ_MAX_TYPES]; /* 24 ε σ^6 */
    double lj3[MDF_LJ_MAX_TYPES][MDF_LJ_MAX_TYPES]; /* 4 ε σ^12 */
    double lj4[MDF_LJ_MAX_TYPES][MDF_LJ_MAX_TYPES]; /* 4 ε σ^6 */
    double offset[MDF_LJ_MAX_TYPES][MDF_LJ_MAX_TYPES];
} mdf_lj_params;

/* Fills the coefficients of pair (a, b) and its mirror. */
MDF_HD void mdf_lj_set_pair(mdf_lj_params *p, int a, int b, double epsilon, double sigma,
                            double cutoff, int shift)
{
    double s6 = sigma * sigma * sigma * sigma * sigma * sigma;
    double s12 = s6 * s6;
    double off = 0.0;
    if (shift) {
        double ratio = sigma / cutoff;
        double r6 = ratio * ratio * ratio * ratio * ratio * ratio;
        off = 4.0 * epsilon * (r6 * r6 - r6);
    }
    for (int t = 0; t < 2; t++) {
        int x = t ? b : a, y = t ? a : b;
        p->rc2[x][y] = cutoff * cutoff;
        p->lj1[x][y] = 48.0 * epsilon * s12;
        p->lj2[x][y] = 24.0 * epsilon * s6;
        p->lj3[x][y] = 4.0 * epsilon * s12;
        p->lj4[x][y] = 4.0 * epsilon * s6;
        p->offset[x][y] = off;
    }
}

/* One pair's coefficients, read once per row (a loop constant with one
 * species: kept in registers, where reading the table at every pair would
 * be a load the compiler cannot hoist past the force stores). */
typedef struct mdf_lj_coef {
    double rc2, lj1, lj2, lj3, lj4, offset;
} mdf_lj_coef;

MDF_HD mdf_lj_coef mdf_lj_coef_of(const mdf_lj_params *p, int ti, int tj)
{
    mdf_lj_coef c = {p->rc2[ti][tj], p->lj1[ti][tj], p->lj2[ti][tj],
                     p->lj3[ti][tj], p->lj4[ti][tj], p->offset[ti][tj]};
    return c;
}

/* One pair at squared distance r2 (already known to be inside the cutoff):
 * returns the pair energy and sets *fpair so that the force on i is
 * -fpair * (r_j - r_i). */
MDF_HD double mdf_lj_pair_coef(const mdf_lj_coef *c, double r2, double *fpair)
{
    double r2inv = 1.0 / r2;
    double r6inv = r2inv * r2inv * r2inv;
    double forcelj = r6inv * (c->lj1 * r6inv - c->lj2);
    *fpair = forcelj * r2inv;
    return r6inv * (c->lj3 * r6inv - c->lj4) - c->offset;
}

/* mdf_lj_pair_coef for the types (ti, tj). */
MDF_HD double mdf_lj_pair(const mdf_lj_params *p, int ti, int tj, double r2, double *fpair)
{
    mdf_lj_coef c = mdf_lj_coef_of(p, ti, tj);
    return mdf_lj_pair_coef(&c, r2, fpair);
}

/* Adds one pair's virial contribution d ⊗ d * fpair (d = r_j - r_i). */
MDF_HD void mdf_lj_add_virial(double w[9], const double d[3], double fpair, double scale)
{
    for (int a = 0; a < 3; a++)
        for (int b = 0; b < 3; b++) w[3 * a + b] += scale * d[a] * d[b] * fpair;
}

#endif
