/* mdflow — the optimisers, CPU implementation: one system at a time, the
 * reductions as plain sequential loops (arithmetic in optim_kernel.h). */
#include <starpu.h>
#include "optim_kernel.h"
#include "optim_codelet.h"

#define VEC(i) STARPU_VECTOR_GET_PTR(buffers[i])

static int32_t sys_end(const mdf_sys_info *s) { return s->atom_start + s->natoms; }

/* buffers: pos RW, vel RW, force R, sys RW, res RW, state RW */
void mdf_fire_cpu(void *buffers[], void *cl_arg)
{
    const mdf_fire_args *p = (const mdf_fire_args *)cl_arg;
    double *x = (double *)VEC(0), *v = (double *)VEC(1);
    const double *f = (const double *)VEC(2);
    mdf_sys_info *sys = (mdf_sys_info *)VEC(3);
    mdf_sys_result *res = (mdf_sys_result *)VEC(4);
    mdf_sys_state *state = (mdf_sys_state *)VEC(5);
    for (int32_t s = 0; s < p->nsys; s++) {
        if (sys[s].status != p->status) continue;
        int32_t a0 = sys[s].atom_start, a1 = sys_end(&sys[s]);
        mdf_fire_vars fv = mdf_fire_load(&state[s], p);
        double vf = 0.0, ff = 0.0, vv = 0.0;
        if (!fv.fresh)
            for (int32_t i = 3 * a0; i < 3 * a1; i++) {
                vf += f[i] * v[i];
                ff += f[i] * f[i];
                vv += v[i] * v[i];
            }
        mdf_fire_decide(&fv, p, vf, ff, vv);
        double dr2 = 0.0;
        for (int32_t a = a0; a < a1; a++) dr2 += mdf_fire_atom_velocity(v + 3 * a, f + 3 * a, &fv);
        double normdr = sqrt(dr2);
        for (int32_t a = a0; a < a1; a++) mdf_fire_atom_move(x + 3 * a, v + 3 * a, &fv, normdr, p->maxstep);
        mdf_fire_store(&state[s], &fv);
        mdf_optim_bookkeeping(&sys[s], &res[s]);
    }
}

/* buffers: pos RW, vel RW, force R, sys RW, res RW, state RW */
void mdf_fire2_cpu(void *buffers[], void *cl_arg)
{
    const mdf_fire2_args *p = (const mdf_fire2_args *)cl_arg;
    double *x = (double *)VEC(0), *v = (double *)VEC(1);
    const double *f = (const double *)VEC(2);
    mdf_sys_info *sys = (mdf_sys_info *)VEC(3);
    mdf_sys_result *res = (mdf_sys_result *)VEC(4);
    mdf_sys_state *state = (mdf_sys_state *)VEC(5);
    for (int32_t s = 0; s < p->nsys; s++) {
        if (sys[s].status != p->status) continue;
        int32_t a0 = sys[s].atom_start, a1 = sys_end(&sys[s]);
        mdf_fire2_vars fv = mdf_fire2_load(&state[s], p);
        if (fv.fresh)
            for (int32_t i = 3 * a0; i < 3 * a1; i++) v[i] = 0.0;
        double P = 0.0, vmax2 = 0.0;
        for (int32_t a = a0; a < a1; a++) {
            P += mdf_optim_dot3(f + 3 * a, v + 3 * a);
            vmax2 = fmax(vmax2, mdf_optim_dot3(v + 3 * a, v + 3 * a));
        }
        mdf_fire2_decide(&fv, p, P, vmax2);
        double vv = 0.0, ff = 0.0;
        for (int32_t a = a0; a < a1; a++) mdf_fire2_atom_kick(x + 3 * a, v + 3 * a, f + 3 * a, &fv, &vv, &ff);
        mdf_fire2_mixing(&fv, vv, ff);
        double dmax2 = 0.0;
        for (int32_t a = a0; a < a1; a++) dmax2 = fmax(dmax2, mdf_fire2_atom_mix(v + 3 * a, f + 3 * a, &fv));
        for (int32_t a = a0; a < a1; a++) mdf_fire2_atom_move(x + 3 * a, v + 3 * a, &fv, dmax2, p->maxstep);
        mdf_fire2_store(&state[s], &fv);
        mdf_optim_bookkeeping(&sys[s], &res[s]);
    }
}

/* buffers: pos RW, force R, sys RW, res RW */
void mdf_gd_cpu(void *buffers[], void *cl_arg)
{
    const mdf_gd_args *p = (const mdf_gd_args *)cl_arg;
    double *x = (double *)VEC(0);
    const double *f = (const double *)VEC(1);
    mdf_sys_info *sys = (mdf_sys_info *)VEC(2);
    mdf_sys_result *res = (mdf_sys_result *)VEC(3);
    for (int32_t s = 0; s < p->nsys; s++) {
        if (sys[s].status != p->status) continue;
        int32_t a0 = sys[s].atom_start, a1 = sys_end(&sys[s]);
        double dmax2 = 0.0;
        for (int32_t a = a0; a < a1; a++) dmax2 = fmax(dmax2, mdf_gd_atom_len2(f + 3 * a, p));
        for (int32_t a = a0; a < a1; a++) mdf_gd_atom_move(x + 3 * a, f + 3 * a, p, dmax2);
        mdf_optim_bookkeeping(&sys[s], &res[s]);
    }
}

/* One system's L-BFGS step (ASE's LBFGS.step). */
static void lbfgs_system(double *x, const double *f, mdf_sys_info *si, mdf_sys_result *ri, mdf_sys_state *st,
                         double *w, int32_t s, const mdf_lbfgs_args *p)
{
    const mdf_lbfgs_layout l = mdf_lbfgs_layout_of(p->memory, p->atom_cap, p->sys_cap);
    const int64_t m = p->memory;
    int32_t a0 = si->atom_start, a1 = sys_end(si);
    double *r0 = w + l.r0, *f0 = w + l.f0, *q = w + l.q;
    double *rho = w + l.rho + (int64_t)s * m, *coef = w + l.coef + (int64_t)s * m;
    /* A system new to the stage, or a workspace new to this run: no history. */
    int64_t it = (st->owner == 0 || w[l.mark + s] == 0.0) ? 0 : st->n[0];
    if (it > 0 && m > 0) {
        int64_t slot = (it - 1) % m;
        double *sv = w + l.s + slot * l.slot, *yv = w + l.y + slot * l.slot;
        double ys = 0.0;
        for (int32_t a = a0; a < a1; a++)
            ys += mdf_lbfgs_atom_pair(sv + 3 * a, yv + 3 * a, x + 3 * a, r0 + 3 * a, f + 3 * a, f0 + 3 * a);
        rho[slot] = mdf_lbfgs_rho(ys);
    }
    int64_t len = it < m ? it : m;
    for (int32_t i = 3 * a0; i < 3 * a1; i++) q[i] = -f[i];
    for (int64_t i = len - 1; i >= 0; i--) {
        int64_t slot = mdf_lbfgs_slot(it, len, i, m);
        const double *sv = w + l.s + slot * l.slot, *yv = w + l.y + slot * l.slot;
        double dot = 0.0;
        for (int32_t a = a0; a < a1; a++) dot += mdf_optim_dot3(sv + 3 * a, q + 3 * a);
        coef[i] = rho[slot] * dot;
        for (int32_t a = a0; a < a1; a++) mdf_lbfgs_atom_down(q + 3 * a, yv + 3 * a, coef[i]);
    }
    const double H0 = 1.0 / p->alpha;
    for (int32_t i = 3 * a0; i < 3 * a1; i++) q[i] = H0 * q[i]; /* q is z from here */
    for (int64_t i = 0; i < len; i++) {
        int64_t slot = mdf_lbfgs_slot(it, len, i, m);
        const double *sv = w + l.s + slot * l.slot, *yv = w + l.y + slot * l.slot;
        double dot = 0.0;
        for (int32_t a = a0; a < a1; a++) dot += mdf_optim_dot3(yv + 3 * a, q + 3 * a);
        double b = rho[slot] * dot;
        for (int32_t a = a0; a < a1; a++) mdf_lbfgs_atom_up(q + 3 * a, sv + 3 * a, coef[i], b);
    }
    double longest2 = 0.0;
    for (int32_t a = a0; a < a1; a++) longest2 = fmax(longest2, mdf_lbfgs_atom_len2(q + 3 * a));
    for (int32_t a = a0; a < a1; a++)
        mdf_lbfgs_atom_move(x + 3 * a, r0 + 3 * a, f0 + 3 * a, f + 3 * a, q + 3 * a, p, longest2);
    st->n[0] = it + 1;
    st->owner = 1;
    w[l.mark + s] = 1.0;
    mdf_optim_bookkeeping(si, ri);
}

/* buffers: pos RW, force R, sys RW, res RW, state RW, work RW */
void mdf_lbfgs_cpu(void *buffers[], void *cl_arg)
{
    const mdf_lbfgs_args *p = (const mdf_lbfgs_args *)cl_arg;
    double *x = (double *)VEC(0);
    const double *f = (const double *)VEC(1);
    mdf_sys_info *sys = (mdf_sys_info *)VEC(2);
    mdf_sys_result *res = (mdf_sys_result *)VEC(3);
    mdf_sys_state *state = (mdf_sys_state *)VEC(4);
    double *w = (double *)VEC(5);
    for (int32_t s = 0; s < p->nsys; s++)
        if (sys[s].status == p->status) lbfgs_system(x, f, &sys[s], &res[s], &state[s], w, s, p);
}
