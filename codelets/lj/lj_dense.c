/* mdflow — Lennard-Jones for small open systems: every pair, no list.
 *
 * A cluster of a few hundred atoms under a cutoff of a few σ has most of
 * its pairs inside the list radius anyway. Walking every pair i < j over
 * coordinates laid out as separate x, y, z arrays then costs fewer cycles
 * than following list entries: no gathers, no image shifts, a branch-free
 * inner loop the compiler vectorises (with AVX-512 and AVX2 clones picked
 * when the library loads, where the compiler can make them). The arithmetic
 * per pair is mdf_lj_pair's, so both paths agree to round-off and both
 * follow LAMMPS's lj/cut. */
#include <string.h>
#include "lj_dense.h"

/* One system in structure-of-arrays form; forces accumulate here. */
typedef struct dense_soa {
    double *x, *y, *z, *fx, *fy, *fz;
    int32_t *t;
} dense_soa;

/* Sums: energy, then the virial's xx yy zz xy xz yz. */
typedef struct dense_sums {
    double e, w[6];
} dense_sums;

/* Pairs (i, j > i) of one system. `single` and `virial` are constants at
 * every call, so each caller below gets its own specialised loop. */
static inline __attribute__((always_inline)) void dense_pairs(int32_t n, dense_soa a, const mdf_lj_params *p,
                                                               int single, int virial, dense_sums *out)
{
    double e = 0.0, wxx = 0.0, wyy = 0.0, wzz = 0.0, wxy = 0.0, wxz = 0.0, wyz = 0.0;
    const double *restrict x = a.x, *restrict y = a.y, *restrict z = a.z;
    double *restrict fx = a.fx, *restrict fy = a.fy, *restrict fz = a.fz;
    const int32_t *restrict t = a.t;
    for (int32_t i = 0; i < n - 1; i++) {
        const double xi = x[i], yi = y[i], zi = z[i];
        const int ti = single ? 0 : t[i];
        const double *rc2 = p->rc2[ti], *c1 = p->lj1[ti], *c2 = p->lj2[ti], *c3 = p->lj3[ti], *c4 = p->lj4[ti],
                     *off = p->offset[ti];
        double fxi = 0.0, fyi = 0.0, fzi = 0.0;
#pragma omp simd reduction(+ : e, fxi, fyi, fzi, wxx, wyy, wzz, wxy, wxz, wyz)
        for (int32_t j = i + 1; j < n; j++) {
            const int tj = single ? 0 : t[j];
            const double dx = x[j] - xi, dy = y[j] - yi, dz = z[j] - zi;
            const double r2 = dx * dx + dy * dy + dz * dz;
            /* Everything unconditionally, then a 0/1 weight: a conditional
             * division would be a branch (it may trap), which stops the
             * vectoriser. Pairs beyond the cutoff give finite values, zeroed. */
            const double inside = r2 < rc2[tj] ? 1.0 : 0.0;
            const double r2inv = 1.0 / r2;
            const double r6inv = r2inv * r2inv * r2inv;
            const double fpair = inside * (r6inv * (c1[tj] * r6inv - c2[tj]) * r2inv);
            e += inside * (r6inv * (c3[tj] * r6inv - c4[tj]) - off[tj]);
            fxi -= dx * fpair;
            fyi -= dy * fpair;
            fzi -= dz * fpair;
            fx[j] += dx * fpair;
            fy[j] += dy * fpair;
            fz[j] += dz * fpair;
            if (virial) {
                wxx += dx * dx * fpair;
                wyy += dy * dy * fpair;
                wzz += dz * dz * fpair;
                wxy += dx * dy * fpair;
                wxz += dx * dz * fpair;
                wyz += dy * dz * fpair;
            }
        }
        fx[i] += fxi;
        fy[i] += fyi;
        fz[i] += fzi;
    }
    *out = (dense_sums){.e = e, .w = {wxx, wyy, wzz, wxy, wxz, wyz}};
}

MDF_CPU_CLONES static void dense_single(int32_t n, dense_soa a, const mdf_lj_params *p, dense_sums *out)
{
    dense_pairs(n, a, p, 1, 0, out);
}

MDF_CPU_CLONES static void dense_single_virial(int32_t n, dense_soa a, const mdf_lj_params *p, dense_sums *out)
{
    dense_pairs(n, a, p, 1, 1, out);
}

MDF_CPU_CLONES static void dense_mixed(int32_t n, dense_soa a, const mdf_lj_params *p, dense_sums *out)
{
    dense_pairs(n, a, p, 0, 0, out);
}

MDF_CPU_CLONES static void dense_mixed_virial(int32_t n, dense_soa a, const mdf_lj_params *p, dense_sums *out)
{
    dense_pairs(n, a, p, 0, 1, out);
}

int mdf_lj_dense_suits(const mdf_sys_info *s, const mdf_chunk *c, int64_t list_pairs)
{
    if (s->pbc[0] || s->pbc[1] || s->pbc[2]) return 0;
    if (s->natoms > MDF_LJ_DENSE_MAX_ATOMS) return 0;
    /* The list kernel's i-loop may be split over chunks; this one is not. */
    if (s->atom_start < c->atom_begin || s->atom_start + s->natoms > c->atom_end) return 0;
    int64_t all = (int64_t)s->natoms * (s->natoms - 1) / 2;
    return s->natoms <= MDF_LJ_DENSE_ALWAYS_ATOMS || all <= MDF_LJ_DENSE_PAIR_RATIO * list_pairs;
}

size_t mdf_lj_dense_scratch_doubles(int32_t natoms)
{
    /* x y z fx fy fz, and the types (as many int32 as fit in n doubles). */
    return 7 * (size_t)(natoms > 0 ? natoms : 1);
}

void mdf_lj_dense_system(const double *pos, double *f, const mdf_atom_info *atoms, const mdf_sys_info *s,
                         const mdf_lj_params *p, int virial, double *scratch, double *energy, double w[9])
{
    int32_t n = s->natoms, a0 = s->atom_start;
    size_t m = (size_t)(n > 0 ? n : 1);
    dense_soa a = {scratch, scratch + m, scratch + 2 * m, scratch + 3 * m, scratch + 4 * m, scratch + 5 * m,
                   (int32_t *)(scratch + 6 * m)};
    for (int32_t i = 0; i < n; i++) {
        a.x[i] = pos[3 * (a0 + i)];
        a.y[i] = pos[3 * (a0 + i) + 1];
        a.z[i] = pos[3 * (a0 + i) + 2];
        a.t[i] = p->type_of_z[atoms[a0 + i].z];
    }
    memset(a.fx, 0, sizeof(double) * 3 * m);
    dense_sums sums;
    int single = p->ntypes == 1;
    if (single) virial ? dense_single_virial(n, a, p, &sums) : dense_single(n, a, p, &sums);
    else virial ? dense_mixed_virial(n, a, p, &sums) : dense_mixed(n, a, p, &sums);
    for (int32_t i = 0; i < n; i++) {
        f[3 * (a0 + i)] += a.fx[i];
        f[3 * (a0 + i) + 1] += a.fy[i];
        f[3 * (a0 + i) + 2] += a.fz[i];
    }
    *energy += sums.e;
    if (virial) {
        const int sym[9] = {0, 3, 4, 3, 1, 5, 4, 5, 2};
        for (int k = 0; k < 9; k++) w[k] += sums.w[sym[k]];
    }
}
