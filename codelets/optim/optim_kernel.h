/* mdflow — the optimisers' arithmetic, shared by the CPU and CUDA codelets.
 *
 * Every optimiser step runs before the model (pre_update) with the forces of
 * the previous evaluation, one system at a time: per-system reductions
 * (dot products, norms, longest per-atom move) are done by the caller (a
 * sequential loop on the CPU, mdf_block_sum/max on the GPU), everything else
 * is here. Per-atom functions take one atom's 3-vectors; per-system
 * functions take the reduced scalars. All four are mass-less, as ASE's.
 *
 * FIRE   ASE 3.22 FIRE.step (Bitzek et al., PRL 97, 170201 (2006)), same
 *        operations in the same order: first step v = 0; then, when
 *        v·f > 0, v = (1-a) v + a f/|f| |v| and, once Nsteps > Nmin,
 *        dt = min(dt finc, dtmax), a *= fa, then Nsteps += 1; otherwise
 *        v = 0, a = astart, dt *= fdec, Nsteps = 0. Then v += dt f,
 *        dr = dt v, scaled to maxstep when |dr| (norm over the whole system)
 *        exceeds it. State: d[0] dt, d[1] a, n[0] Nsteps; owner marks v as
 *        initialised. v lives in the batch's velocity array.
 * FIRE2  mdflow's FIRE 2.0: the scheme of Guénolé et al. (Comput. Mater.
 *        Sci. 175, 109584 (2020), Algorithm 2: semi-implicit Euler, half
 *        step back, initial delay), mass-less, with one force evaluation
 *        per step. Per step, F the forces of the last evaluation (at the
 *        positions the previous step left):
 *          P = F·v
 *          P > 0:  Npos += 1; if Npos > Nmin: dt = min(dt finc, dtmax), a *= fa
 *          else:   Npos = 0; unless in iterations 1 .. Nmin - 1 (the
 *                  initial delay; this step is iteration 1 of a fresh
 *                  system): dt = max(dt fdec, dtmin), a = astart;
 *                  x -= 0.5 dt v (half step back, new dt); v = 0
 *          v += dt F                          (the same F, also after a half
 *                                              step back: no new evaluation)
 *          P > 0:  v = (1-a) v + a |v| F/|F|  (|v| after the kick, a after
 *                                              this step's a *= fa)
 *          x += dt v
 *        The half step back and the move dt v are each scaled as a whole so
 *        that no atom moves more than maxstep (Euclidean length per atom);
 *        dt itself is not reduced. The mixing is skipped when |F|² <= 1e-20.
 *        A fresh system starts with v = 0, so its first step is a plain
 *        Euler step dt F. State: d[0] dt, d[1] a, n[0] Npos, n[1] iterations.
 *        It is NOT LAMMPS's min_style fire (src/min_fire.cpp, e.g. Debian's
 *        29 Sep 2021), which differs in five ways: after a half step back it
 *        evaluates the forces again and kicks with those; it takes the
 *        mixing factors 1-a and a |v|/|F| from |v| before the kick and the a
 *        before this step's update (applying them after the kick); it
 *        shrinks dt only while dt fdec >= dtmin (else keeps dt); it limits
 *        the step by shortening this step's dt until no velocity component
 *        times dt exceeds dmax (the half step back is not limited); and it
 *        divides F by the masses. Trajectories therefore differ from
 *        LAMMPS's (with unit masses, from the first uphill step or mixing
 *        on); both reach minima (test_optim checks FIRE2 against ASE's
 *        L-BFGS minima, and step by step against a reference written
 *        from this description).
 * GD     x += step F, scaled as a whole when the longest per-atom move
 *        reaches maxstep (ASE's determine_step). No state.
 * LBFGS  ASE 3.22 LBFGS.step/update/determine_step without line search:
 *        two-loop recursion over the last min(iteration, memory) pairs
 *        s = r - r0, y = f0 - f, rho = 1/(y·s), H0 = 1/alpha; the step
 *        p = -z is scaled when its longest per-atom length is >= maxstep,
 *        then multiplied by damping. rho is 0 when y·s is exactly 0 (ASE
 *        would divide by zero and go NaN): that pair then drops out of the
 *        recursion. History lives in the per-shard workspace (ring of
 *        `memory` slots, see mdf_lbfgs_layout); state n[0] = iteration. A
 *        workspace is zeroed at the start of every stage run, so a run
 *        restarts the history (a new ASE LBFGS object), marked per system.
 */
#ifndef MDF_OPTIM_KERNEL_H
#define MDF_OPTIM_KERNEL_H

#include "../common/mdf_kernel_common.h"

/* ---- shared --------------------------------------------------------------- */

/* What every optimiser step leaves on its systems (post_update's part). */
MDF_HD void mdf_optim_bookkeeping(mdf_sys_info *s, mdf_sys_result *r)
{
    r->kinetic = 0.0;
    s->step++;
    s->stage_step++;
}

MDF_HD double mdf_optim_dot3(const double *a, const double *b) { return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]; }

/* ---- FIRE (ASE) -------------------------------------------------------------- */

typedef struct mdf_fire_args {
    int64_t work;            /* atoms of the systems it moves (performance-model key) */
    int32_t nsys, status;
    double dt, dtmax, maxstep, finc, fdec, astart, fa;
    int32_t nmin;
    int32_t natoms;          /* atoms in the shard (mdf_method_natoms): a CUDA task's per-atom range */
} mdf_fire_args;

#define MDF_FIRE_ZERO 0      /* v = 0 before the kick */
#define MDF_FIRE_MIX 1       /* v = (1-a) v + a f/|f| |v| before the kick */

typedef struct mdf_fire_vars {
    double dt, a;
    int64_t nsteps;
    int fresh;               /* first step: v = 0, no test on v·f */
    int mode;                /* MDF_FIRE_* */
    double a_mix, nf, nv;    /* mixing coefficients (a before its update) */
} mdf_fire_vars;

MDF_HD mdf_fire_vars mdf_fire_load(const mdf_sys_state *st, const mdf_fire_args *p)
{
    mdf_fire_vars v; /* every field set: {0} warns in C++ (nvcc) */
    v.fresh = st->owner == 0;
    v.dt = v.fresh ? p->dt : st->d[0];
    v.a = v.fresh ? p->astart : st->d[1];
    v.nsteps = v.fresh ? 0 : st->n[0];
    v.mode = MDF_FIRE_ZERO;
    v.a_mix = v.nf = v.nv = 0.0;
    return v;
}

/* ASE's branch on vf = v·f (ff = f·f, vv = v·v of the whole system). */
MDF_HD void mdf_fire_decide(mdf_fire_vars *v, const mdf_fire_args *p, double vf, double ff, double vv)
{
    if (v->fresh) return; /* v = 0, dt and a as initialised */
    if (vf > 0.0) {
        v->mode = MDF_FIRE_MIX;
        v->a_mix = v->a;
        v->nf = sqrt(ff);
        v->nv = sqrt(vv);
        if (v->nsteps > p->nmin) {
            v->dt = fmin(v->dt * p->finc, p->dtmax);
            v->a *= p->fa;
        }
        v->nsteps += 1;
    } else {
        v->mode = MDF_FIRE_ZERO;
        v->a = p->astart;
        v->dt *= p->fdec;
        v->nsteps = 0;
    }
}

/* The atom's new velocity; returns |dt v|² (its part of |dr|²). */
MDF_HD double mdf_fire_atom_velocity(double *vel, const double *f, const mdf_fire_vars *v)
{
    double d2 = 0.0;
    for (int k = 0; k < 3; k++) {
        double u = v->mode == MDF_FIRE_MIX ? (1.0 - v->a_mix) * vel[k] + v->a_mix * f[k] / v->nf * v->nv : 0.0;
        u += v->dt * f[k];
        vel[k] = u;
        double dr = v->dt * u;
        d2 += dr * dr;
    }
    return d2;
}

/* x += dr, scaled to maxstep when the system's |dr| (normdr) exceeds it. */
MDF_HD void mdf_fire_atom_move(double *x, const double *vel, const mdf_fire_vars *v, double normdr, double maxstep)
{
    for (int k = 0; k < 3; k++) {
        double dr = v->dt * vel[k];
        if (normdr > maxstep) dr = maxstep * dr / normdr;
        x[k] += dr;
    }
}

MDF_HD void mdf_fire_store(mdf_sys_state *st, const mdf_fire_vars *v)
{
    st->d[0] = v->dt;
    st->d[1] = v->a;
    st->n[0] = v->nsteps;
    st->owner = 1;
}

/* ---- FIRE 2.0 ------------------------------------------------------------------ */

typedef struct mdf_fire2_args {
    int64_t work;
    int32_t nsys, status;
    double dt, dtmax, dtmin, maxstep, finc, fdec, astart, fa;
    int32_t nmin;
    int32_t natoms;          /* as mdf_fire_args.natoms */
} mdf_fire2_args;

typedef struct mdf_fire2_vars {
    double dt, a;
    int64_t npos, iter;
    int fresh;
    int uphill;              /* P <= 0: half step back and v = 0 */
    double back;             /* half step back: x += back · v (-0.5 dt, capped) */
    double c1, c2;           /* mixing v = c1 v + c2 F (1, 0 when none) */
} mdf_fire2_vars;

MDF_HD mdf_fire2_vars mdf_fire2_load(const mdf_sys_state *st, const mdf_fire2_args *p)
{
    mdf_fire2_vars v; /* every field set below */
    v.fresh = st->owner == 0;
    v.dt = v.fresh ? p->dt : st->d[0];
    v.a = v.fresh ? p->astart : st->d[1];
    v.npos = v.fresh ? 0 : st->n[0];
    v.iter = v.fresh ? 0 : st->n[1];
    v.uphill = 0;
    v.back = 0.0;
    v.c1 = 1.0;
    v.c2 = 0.0;
    return v;
}

/* The branch on P = F·v; vmax2 is the largest per-atom |v|² (for the cap of
 * the half step back). A fresh system has v = 0 (the caller zeroed it). */
MDF_HD void mdf_fire2_decide(mdf_fire2_vars *v, const mdf_fire2_args *p, double P, double vmax2)
{
    v->iter += 1;
    if (P > 0.0) {
        v->uphill = 0;
        v->npos += 1;
        if (v->npos > p->nmin) {
            v->dt = fmin(v->dt * p->finc, p->dtmax);
            v->a *= p->fa;
        }
        return;
    }
    v->uphill = 1;
    v->npos = 0;
    if (!(v->iter < p->nmin)) { /* LAMMPS's initialdelay: no slow-down at the very start */
        v->dt = fmax(v->dt * p->fdec, p->dtmin);
        v->a = p->astart;
    }
    double longest = 0.5 * v->dt * sqrt(vmax2);
    v->back = -0.5 * v->dt;
    if (longest > p->maxstep) v->back *= p->maxstep / longest;
}

/* Half step back when uphill, then the Euler kick v += dt F. Adds the
 * atom's v·v and F·F to *vv and *ff (for the mixing). */
MDF_HD void mdf_fire2_atom_kick(double *x, double *vel, const double *f, const mdf_fire2_vars *v, double *vv,
                                double *ff)
{
    for (int k = 0; k < 3; k++) {
        if (v->uphill) {
            x[k] += v->back * vel[k];
            vel[k] = 0.0;
        }
        vel[k] += v->dt * f[k];
    }
    *vv += mdf_optim_dot3(vel, vel);
    *ff += mdf_optim_dot3(f, f);
}

/* Mixing coefficients from the system's v·v and F·F after the kick. */
MDF_HD void mdf_fire2_mixing(mdf_fire2_vars *v, double vv, double ff)
{
    if (v->uphill) return;
    v->c1 = 1.0 - v->a;
    v->c2 = ff <= 1e-20 ? 0.0 : v->a * sqrt(vv / ff);
}

/* Mixing; returns the atom's |dt v|² (for the longest move). */
MDF_HD double mdf_fire2_atom_mix(double *vel, const double *f, const mdf_fire2_vars *v)
{
    for (int k = 0; k < 3; k++) vel[k] = v->c1 * vel[k] + v->c2 * f[k];
    double d = v->dt;
    return d * d * mdf_optim_dot3(vel, vel);
}

/* x += dt v, scaled so that the longest move (sqrt of dmax2) is maxstep. */
MDF_HD void mdf_fire2_atom_move(double *x, const double *vel, const mdf_fire2_vars *v, double dmax2, double maxstep)
{
    double longest = sqrt(dmax2);
    double scale = longest > maxstep ? maxstep / longest : 1.0;
    for (int k = 0; k < 3; k++) x[k] += scale * (v->dt * vel[k]);
}

MDF_HD void mdf_fire2_store(mdf_sys_state *st, const mdf_fire2_vars *v)
{
    st->d[0] = v->dt;
    st->d[1] = v->a;
    st->n[0] = v->npos;
    st->n[1] = v->iter;
    st->owner = 1;
}

/* ---- gradient descent ---------------------------------------------------------- */

typedef struct mdf_gd_args {
    int64_t work;
    int32_t nsys, status;
    int32_t natoms, pad_;    /* as mdf_fire_args.natoms */
    double step, maxstep;
} mdf_gd_args;

/* The atom's |step F|². */
MDF_HD double mdf_gd_atom_len2(const double *f, const mdf_gd_args *p)
{
    double d2 = 0.0;
    for (int k = 0; k < 3; k++) {
        double dr = p->step * f[k];
        d2 += dr * dr;
    }
    return d2;
}

/* x += step F, scaled as ASE's determine_step when the longest move
 * (sqrt of dmax2) reaches maxstep. */
MDF_HD void mdf_gd_atom_move(double *x, const double *f, const mdf_gd_args *p, double dmax2)
{
    double longest = sqrt(dmax2);
    for (int k = 0; k < 3; k++) {
        double dr = p->step * f[k];
        if (longest >= p->maxstep) dr *= p->maxstep / longest;
        x[k] += dr;
    }
}

/* ---- L-BFGS (ASE) -------------------------------------------------------------- */

typedef struct mdf_lbfgs_args {
    int64_t work;
    int32_t nsys, status;
    int32_t memory, atom_cap, sys_cap;
    int32_t max_natoms;      /* the shard's largest system: the GPU's shape (optim_cuda.cu) */
    int32_t natoms, pad_;    /* as mdf_fire_args.natoms */
    double alpha, damping, maxstep;
} mdf_lbfgs_args;

/* Where things lie in a shard's workspace (offsets in doubles): s and y
 * (memory slots of 3·atom_cap each, indexed by the shard's atom), r0, f0
 * and the two-loop vector q (3·atom_cap each), then per system rho and the
 * first loop's coefficients (memory each) and a "history valid" mark. */
typedef struct mdf_lbfgs_layout {
    int64_t s, y, r0, f0, q, rho, coef, mark, total;
    int64_t slot;            /* doubles per history slot (3·atom_cap) */
} mdf_lbfgs_layout;

MDF_HD mdf_lbfgs_layout mdf_lbfgs_layout_of(int64_t memory, int64_t atom_cap, int64_t sys_cap)
{
    mdf_lbfgs_layout l;
    l.slot = 3 * atom_cap;
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

/* Ring slot of history entry i (0 = oldest) of `len` entries, after
 * `iteration` updates. */
MDF_HD int64_t mdf_lbfgs_slot(int64_t iteration, int64_t len, int64_t i, int64_t memory)
{
    return (iteration - len + i) % memory;
}

/* ASE's update for one atom: s = r - r0, y = f0 - f; returns its y·s. */
MDF_HD double mdf_lbfgs_atom_pair(double *s, double *y, const double *x, const double *r0, const double *f,
                                  const double *f0)
{
    for (int k = 0; k < 3; k++) {
        s[k] = x[k] - r0[k];
        y[k] = f0[k] - f[k];
    }
    return mdf_optim_dot3(y, s);
}

/* rho = 1/(y·s); an exactly zero y·s (no move, or no force change) gives 0,
 * which drops the pair from the recursion instead of poisoning it. */
MDF_HD double mdf_lbfgs_rho(double ys) { return ys == 0.0 ? 0.0 : 1.0 / ys; }

/* First loop, per atom: q -= a y. */
MDF_HD void mdf_lbfgs_atom_down(double *q, const double *y, double a)
{
    for (int k = 0; k < 3; k++) q[k] -= a * y[k];
}

/* Second loop, per atom: z += s (a - b). */
MDF_HD void mdf_lbfgs_atom_up(double *z, const double *s, double a, double b)
{
    for (int k = 0; k < 3; k++) z[k] += s[k] * (a - b);
}

/* The step p = -z; returns |p|² of the atom (for the longest step). */
MDF_HD double mdf_lbfgs_atom_len2(const double *z)
{
    return mdf_optim_dot3(z, z);
}

/* r0 = x, f0 = f, x += determine_step(-z) · damping. */
MDF_HD void mdf_lbfgs_atom_move(double *x, double *r0, double *f0, const double *f, const double *z,
                                const mdf_lbfgs_args *p, double longest2)
{
    double longest = sqrt(longest2);
    for (int k = 0; k < 3; k++) {
        double dr = -z[k];
        if (longest >= p->maxstep) dr *= p->maxstep / longest;
        dr *= p->damping;
        r0[k] = x[k];
        f0[k] = f[k];
        x[k] = x[k] + dr;
    }
}

#endif
