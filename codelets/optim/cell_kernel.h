/* mdflow — variable-cell relaxation: FIRE and L-BFGS on the atoms and the
 * cell together, in the form of ASE's FrechetCellFilter (ase/filters.py,
 * ASE >= 3.23), shared by the CPU and CUDA codelets.
 *
 * The optimiser works on 3N + 9 generalised coordinates per system:
 *   atoms  u_i = x_i F^-T          (positions in the reference cell's frame)
 *   cell   X   = c logm(F)         (c = exp_cell_factor, default N atoms)
 * with F the deformation gradient from the cell the system had when it
 * entered the stage (cell = cell_0 F^T, rows are lattice vectors). The
 * generalised forces are
 *   atoms  g_i = f_i F
 *   cell   G   = (W - P V I) / c   (W: mdflow's virial, eV, = ASE's
 *                                   -V stress; P the target pressure,
 *                                   V the volume)
 * i.e. ASE's FrechetCellFilter with scalar_pressure = P and its "naive"
 * log-space force (the virial itself). ASE switches to the exact
 * derivative of the matrix exponential only when the two directions'
 * cosine drops below 0.8, which needs a large, sheared deformation; the
 * minimum is the same (G = 0 exactly when the stress equals -P I).
 *
 * X, not the reference cell, is kept per system: the step maps the cell
 * with M = F^-T F'^T (cell' = cell M, x' = x M + dr F'^T), F = expm(X/c),
 * F' = expm(X'/c). State: FIRE d[0] dt, d[1] a, d[2..10] the cell's
 * velocity, d[11..19] X, n[0] Nsteps; L-BFGS d[11..19] X, n[0] iteration
 * (its history of the cell rows lives in the workspace, see
 * mdf_lbfgs_cell_layout_of).
 *
 * The optimisers are ASE's FIRE and LBFGS (optim_kernel.h) over those
 * vectors: FIRE's |dr| and v·f run over all 3N + 9 numbers, L-BFGS's
 * longest step over the N + 3 rows, as ASE's do on a filter.
 *
 * Each system's whole step is one function (mdf_cell_fire_system,
 * mdf_cell_lbfgs_system): the CPU codelet calls it per system, the CUDA one
 * runs one thread per system (the per-system loops are sequential there;
 * systems are independent, so there is no race).
 *
 * Systems that are not periodic in all three directions have no cell to
 * relax: their cell rows get no force and the step is the fixed-cell one
 * (the stage refuses them at the start of a run; this is the guard for
 * systems a refill brings in later).
 *
 * A cell that collapses below the list radius / MDF_NL_MAX_REACH is flagged
 * MDF_SYS_CELL_TOO_SMALL (as NPT does); the stage stops the run naming it. */
#ifndef MDF_CELL_KERNEL_H
#define MDF_CELL_KERNEL_H

#include "optim_kernel.h"
#include "../converge/converge_kernel.h" /* mdf_cell_periodic, mdf_m3_det */

/* ---- 3x3 matrices, row-major ------------------------------------------------- */

MDF_HD void mdf_m3_mul(const double *a, const double *b, double *out)
{
    double t[9];
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++) t[3 * i + j] = a[3 * i] * b[j] + a[3 * i + 1] * b[3 + j] + a[3 * i + 2] * b[6 + j];
    for (int k = 0; k < 9; k++) out[k] = t[k];
}

MDF_HD void mdf_m3_transpose(const double *a, double *out)
{
    double t[9];
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++) t[3 * j + i] = a[3 * i + j];
    for (int k = 0; k < 9; k++) out[k] = t[k];
}

/* The inverse (adjugate over determinant); the determinant is returned. */
MDF_HD double mdf_m3_inverse(const double *a, double *out)
{
    double d = mdf_m3_det(a);
    double t[9];
    t[0] = (a[4] * a[8] - a[5] * a[7]) / d;
    t[1] = (a[2] * a[7] - a[1] * a[8]) / d;
    t[2] = (a[1] * a[5] - a[2] * a[4]) / d;
    t[3] = (a[5] * a[6] - a[3] * a[8]) / d;
    t[4] = (a[0] * a[8] - a[2] * a[6]) / d;
    t[5] = (a[2] * a[3] - a[0] * a[5]) / d;
    t[6] = (a[3] * a[7] - a[4] * a[6]) / d;
    t[7] = (a[1] * a[6] - a[0] * a[7]) / d;
    t[8] = (a[0] * a[4] - a[1] * a[3]) / d;
    for (int k = 0; k < 9; k++) out[k] = t[k];
    return d;
}

/* expm(a): scaling and squaring with an 18-term Taylor series (the scaled
 * matrix has norm <= 1/2: truncation below 1e-20 relative). */
MDF_HD void mdf_m3_expm(const double *a, double *out)
{
    double norm = 0.0;
    for (int k = 0; k < 9; k++) norm += fabs(a[k]);
    int sq = 0;
    double scale = 1.0;
    while (norm * scale > 0.5 && sq < 60) {
        scale *= 0.5;
        sq++;
    }
    double b[9], term[9], sum[9];
    for (int k = 0; k < 9; k++) {
        b[k] = a[k] * scale;
        term[k] = (k % 4 == 0) ? 1.0 : 0.0;
        sum[k] = term[k];
    }
    for (int n = 1; n <= 18; n++) {
        mdf_m3_mul(term, b, term);
        for (int k = 0; k < 9; k++) {
            term[k] /= (double)n;
            sum[k] += term[k];
        }
    }
    for (int s = 0; s < sq; s++) mdf_m3_mul(sum, sum, sum);
    for (int k = 0; k < 9; k++) out[k] = sum[k];
}

/* ---- the filter ----------------------------------------------------------------- */

typedef struct mdf_cell_common {
    double pressure;         /* target, eV/Å³ */
    double cell_factor;      /* exp_cell_factor; <= 0: the system's atom count (ASE's default) */
    double r_list;           /* cutoff + skin, Å: the width check */
} mdf_cell_common;

/* One system's filter quantities at the current cell (F from its X). */
typedef struct mdf_cell_frame {
    double c;                /* exp_cell_factor in use */
    double F[9], FinvT[9];   /* deformation gradient and F^-T */
    double G[9];             /* generalised cell force */
    int cell;                /* 1: the cell moves (periodic in x, y, z) */
} mdf_cell_frame;

MDF_HD mdf_cell_frame mdf_cell_frame_of(const mdf_sys_info *s, const mdf_sys_result *r, const double *X,
                                        const mdf_cell_common *p)
{
    mdf_cell_frame f;
    f.c = p->cell_factor > 0.0 ? p->cell_factor : (double)s->natoms;
    f.cell = mdf_cell_periodic(s);
    double Xc[9], Finv[9];
    for (int k = 0; k < 9; k++) Xc[k] = X[k] / f.c;
    mdf_m3_expm(Xc, f.F);
    mdf_m3_inverse(f.F, Finv);
    mdf_m3_transpose(Finv, f.FinvT);
    double V = fabs(mdf_m3_det(s->cell));
    for (int k = 0; k < 9; k++)
        f.G[k] = f.cell ? (r->virial[k] - ((k % 4 == 0) ? p->pressure * V : 0.0)) / f.c : 0.0;
    return f;
}

/* The atom's generalised position u = x F^-T and force g = f F. */
MDF_HD void mdf_cell_atom_u(const double *x, const mdf_cell_frame *fr, double *u) { mdf_vec_mat(x, fr->FinvT, u); }
MDF_HD void mdf_cell_atom_g(const double *f, const mdf_cell_frame *fr, double *g) { mdf_vec_mat(f, fr->F, g); }

/* The new cell and the map of positions for X' (Xn): writes cell, inv_cell,
 * M = F^-T F'^T and F'^T, and flags a cell too small for the lists. */
MDF_HD void mdf_cell_apply(mdf_sys_info *s, const mdf_cell_frame *fr, const double *Xn, double *M, double *FnT,
                           double r_list)
{
    if (!fr->cell) { /* no cell to move (not periodic in x, y and z): X stays 0 */
        for (int k = 0; k < 9; k++) M[k] = FnT[k] = (k % 4 == 0) ? 1.0 : 0.0;
        return;
    }
    double Xc[9], Fn[9];
    for (int k = 0; k < 9; k++) Xc[k] = Xn[k] / fr->c;
    mdf_m3_expm(Xc, Fn);
    mdf_m3_transpose(Fn, FnT);
    mdf_m3_mul(fr->FinvT, FnT, M);
    mdf_m3_mul(s->cell, M, s->cell);
    mdf_m3_inverse(s->cell, s->inv_cell);
    if (r_list > 0.0 && r_list > MDF_NL_MAX_REACH * mdf_periodic_width(s, 0)) s->flags |= MDF_SYS_CELL_TOO_SMALL;
}

/* x' = u' F'^T with u' = x F^-T + dr: x M + dr F'^T. */
MDF_HD void mdf_cell_atom_place(double *x, const double *dr, const double *M, const double *FnT)
{
    double a[3], b[3];
    mdf_vec_mat(x, M, a);
    mdf_vec_mat(dr, FnT, b);
    for (int k = 0; k < 3; k++) x[k] = a[k] + b[k];
}

/* ---- FIRE on the filter (ASE's FIRE, optim_kernel.h) ------------------------------ */

typedef struct mdf_cell_fire_args {
    int64_t work;
    int32_t nsys, status;
    mdf_fire_args fire;      /* its work, nsys, status unused */
    mdf_cell_common cell;
} mdf_cell_fire_args;

#define MDF_CELL_X 11        /* state.d offset of X */
#define MDF_CELL_V 2         /* state.d offset of the cell's FIRE velocity */

MDF_HD void mdf_cell_fire_system(double *x, double *v, const double *f, mdf_sys_info *si, mdf_sys_result *ri,
                                 mdf_sys_state *st, const mdf_cell_fire_args *p)
{
    const int32_t a0 = si->atom_start, a1 = si->atom_start + si->natoms;
    mdf_fire_vars fv = mdf_fire_load(st, &p->fire);
    double *X = st->d + MDF_CELL_X, *vc = st->d + MDF_CELL_V;
    if (fv.fresh)
        for (int k = 0; k < 9; k++) X[k] = vc[k] = 0.0;
    mdf_cell_frame fr = mdf_cell_frame_of(si, ri, X, &p->cell);
    double vf = 0.0, ff = 0.0, vv = 0.0;
    if (!fv.fresh) {
        for (int32_t a = a0; a < a1; a++) {
            double g[3];
            mdf_cell_atom_g(f + 3 * a, &fr, g);
            vf += mdf_optim_dot3(g, v + 3 * a);
            ff += mdf_optim_dot3(g, g);
            vv += mdf_optim_dot3(v + 3 * a, v + 3 * a);
        }
        for (int r = 0; r < 3; r++) {
            vf += mdf_optim_dot3(fr.G + 3 * r, vc + 3 * r);
            ff += mdf_optim_dot3(fr.G + 3 * r, fr.G + 3 * r);
            vv += mdf_optim_dot3(vc + 3 * r, vc + 3 * r);
        }
    }
    mdf_fire_decide(&fv, &p->fire, vf, ff, vv);
    double dr2 = 0.0;
    for (int32_t a = a0; a < a1; a++) {
        double g[3];
        mdf_cell_atom_g(f + 3 * a, &fr, g);
        dr2 += mdf_fire_atom_velocity(v + 3 * a, g, &fv);
    }
    for (int r = 0; r < 3; r++) dr2 += mdf_fire_atom_velocity(vc + 3 * r, fr.G + 3 * r, &fv);
    const double normdr = sqrt(dr2);
    double Xn[9], M[9], FnT[9];
    for (int k = 0; k < 9; k++) Xn[k] = X[k];
    for (int r = 0; r < 3; r++) mdf_fire_atom_move(Xn + 3 * r, vc + 3 * r, &fv, normdr, p->fire.maxstep);
    mdf_cell_apply(si, &fr, Xn, M, FnT, p->cell.r_list);
    for (int32_t a = a0; a < a1; a++) {
        double dr[3] = {0.0, 0.0, 0.0};
        mdf_fire_atom_move(dr, v + 3 * a, &fv, normdr, p->fire.maxstep);
        mdf_cell_atom_place(x + 3 * a, dr, M, FnT);
    }
    for (int k = 0; k < 9; k++) X[k] = Xn[k];
    mdf_fire_store(st, &fv);
    mdf_optim_bookkeeping(si, ri);
}

/* ---- L-BFGS on the filter (ASE's LBFGS, optim_kernel.h) -------------------------- */

typedef struct mdf_cell_lbfgs_args {
    int64_t work;
    int32_t nsys, status;
    mdf_lbfgs_args lbfgs;    /* memory, atom_cap, sys_cap, alpha, damping, maxstep */
    mdf_cell_common cell;
} mdf_cell_lbfgs_args;

/* The workspace: vectors of `slot` = 3 atom_cap + 9 sys_cap doubles (the
 * atoms by shard index, then system s's three cell rows at 3 atom_cap + 9 s):
 * s and y (memory each), r0, f0, q; then per system rho and the first
 * loop's coefficients (memory each) and the "history valid" mark. */
MDF_HD mdf_lbfgs_layout mdf_lbfgs_cell_layout_of(int64_t memory, int64_t atom_cap, int64_t sys_cap)
{
    mdf_lbfgs_layout l;
    l.slot = 3 * atom_cap + 9 * sys_cap;
    l.s = 0;
    l.y = l.s + memory * l.slot;
    l.r0 = l.y + memory * l.slot;
    l.f0 = l.r0 + l.slot;
    l.q = l.f0 + l.slot;
    l.rho = l.q + l.slot;
    l.coef = l.rho + memory * sys_cap;
    l.mark = l.coef + memory * sys_cap;
    l.total = l.mark + sys_cap;
    return l;
}

/* Offset of row k (0..N+2) of system s within a slot vector. */
MDF_HD int64_t mdf_cell_row(const mdf_sys_info *si, int32_t s, int64_t atom_cap, int32_t k)
{
    return k < si->natoms ? 3 * (int64_t)(si->atom_start + k) : 3 * atom_cap + 9 * (int64_t)s + 3 * (k - si->natoms);
}

/* The generalised position and force of row k. */
MDF_HD void mdf_cell_lbfgs_rf(const double *x, const double *f, const mdf_sys_info *si, const mdf_cell_frame *fr,
                              const double *X, int32_t k, double *r, double *g)
{
    if (k < si->natoms) {
        int64_t a = si->atom_start + k;
        mdf_cell_atom_u(x + 3 * a, fr, r);
        mdf_cell_atom_g(f + 3 * a, fr, g);
    } else {
        for (int j = 0; j < 3; j++) {
            r[j] = X[3 * (k - si->natoms) + j];
            g[j] = fr->G[3 * (k - si->natoms) + j];
        }
    }
}

MDF_HD void mdf_cell_lbfgs_system(double *x, const double *f, mdf_sys_info *si, mdf_sys_result *ri,
                                  mdf_sys_state *st, double *w, int32_t s, const mdf_cell_lbfgs_args *pa)
{
    const mdf_lbfgs_args *p = &pa->lbfgs;
    const mdf_lbfgs_layout l = mdf_lbfgs_cell_layout_of(p->memory, p->atom_cap, p->sys_cap);
    const int64_t m = p->memory;
    const int32_t nrows = si->natoms + 3;
    double *r0 = w + l.r0, *f0 = w + l.f0, *q = w + l.q;
    double *rho = w + l.rho + (int64_t)s * m, *coef = w + l.coef + (int64_t)s * m;
    double *X = st->d + MDF_CELL_X;
    if (st->owner == 0)
        for (int k = 0; k < 9; k++) X[k] = 0.0;
    mdf_cell_frame fr = mdf_cell_frame_of(si, ri, X, &pa->cell);
    int64_t it = (st->owner == 0 || w[l.mark + s] == 0.0) ? 0 : st->n[0];
    if (it > 0 && m > 0) {
        int64_t slot = (it - 1) % m;
        double *sv = w + l.s + slot * l.slot, *yv = w + l.y + slot * l.slot;
        double ys = 0.0;
        for (int32_t k = 0; k < nrows; k++) {
            int64_t o = mdf_cell_row(si, s, p->atom_cap, k);
            double r[3], g[3];
            mdf_cell_lbfgs_rf(x, f, si, &fr, X, k, r, g);
            ys += mdf_lbfgs_atom_pair(sv + o, yv + o, r, r0 + o, g, f0 + o);
        }
        rho[slot] = mdf_lbfgs_rho(ys);
    }
    int64_t len = it < m ? it : m;
    for (int32_t k = 0; k < nrows; k++) {
        int64_t o = mdf_cell_row(si, s, p->atom_cap, k);
        double r[3], g[3];
        mdf_cell_lbfgs_rf(x, f, si, &fr, X, k, r, g);
        for (int j = 0; j < 3; j++) q[o + j] = -g[j];
    }
    for (int64_t i = len - 1; i >= 0; i--) {
        int64_t slot = mdf_lbfgs_slot(it, len, i, m);
        const double *sv = w + l.s + slot * l.slot, *yv = w + l.y + slot * l.slot;
        double dot = 0.0;
        for (int32_t k = 0; k < nrows; k++) {
            int64_t o = mdf_cell_row(si, s, p->atom_cap, k);
            dot += mdf_optim_dot3(sv + o, q + o);
        }
        coef[i] = rho[slot] * dot;
        for (int32_t k = 0; k < nrows; k++) {
            int64_t o = mdf_cell_row(si, s, p->atom_cap, k);
            mdf_lbfgs_atom_down(q + o, yv + o, coef[i]);
        }
    }
    const double H0 = 1.0 / p->alpha;
    for (int32_t k = 0; k < nrows; k++) {
        int64_t o = mdf_cell_row(si, s, p->atom_cap, k);
        for (int j = 0; j < 3; j++) q[o + j] *= H0;
    }
    for (int64_t i = 0; i < len; i++) {
        int64_t slot = mdf_lbfgs_slot(it, len, i, m);
        const double *sv = w + l.s + slot * l.slot, *yv = w + l.y + slot * l.slot;
        double dot = 0.0;
        for (int32_t k = 0; k < nrows; k++) {
            int64_t o = mdf_cell_row(si, s, p->atom_cap, k);
            dot += mdf_optim_dot3(yv + o, q + o);
        }
        double b = rho[slot] * dot;
        for (int32_t k = 0; k < nrows; k++) {
            int64_t o = mdf_cell_row(si, s, p->atom_cap, k);
            mdf_lbfgs_atom_up(q + o, sv + o, coef[i], b);
        }
    }
    double longest2 = 0.0;
    for (int32_t k = 0; k < nrows; k++)
        longest2 = fmax(longest2, mdf_lbfgs_atom_len2(q + mdf_cell_row(si, s, p->atom_cap, k)));
    /* The cell rows first (their step fixes F'), then the atoms. */
    double Xn[9], M[9], FnT[9];
    for (int32_t k = si->natoms; k < nrows; k++) {
        int64_t o = mdf_cell_row(si, s, p->atom_cap, k);
        double r[3], g[3];
        mdf_cell_lbfgs_rf(x, f, si, &fr, X, k, r, g);
        mdf_lbfgs_atom_move(r, r0 + o, f0 + o, g, q + o, p, longest2);
        for (int j = 0; j < 3; j++) Xn[3 * (k - si->natoms) + j] = r[j];
    }
    mdf_cell_apply(si, &fr, Xn, M, FnT, pa->cell.r_list);
    for (int32_t k = 0; k < si->natoms; k++) {
        int64_t o = mdf_cell_row(si, s, p->atom_cap, k);
        double u[3], g[3];
        mdf_cell_lbfgs_rf(x, f, si, &fr, X, k, u, g);
        double un[3] = {u[0], u[1], u[2]};
        mdf_lbfgs_atom_move(un, r0 + o, f0 + o, g, q + o, p, longest2);
        double dr[3] = {un[0] - u[0], un[1] - u[1], un[2] - u[2]};
        mdf_cell_atom_place(x + 3 * (int64_t)(si->atom_start + k), dr, M, FnT);
    }
    for (int k = 0; k < 9; k++) X[k] = Xn[k];
    st->n[0] = it + 1;
    st->owner = 1;
    w[l.mark + s] = 1.0;
    mdf_optim_bookkeeping(si, ri);
}

#endif
