/* mdflow tests — the optimisers (FIRE, FIRE2, gradient descent, L-BFGS)
 * against ASE 3.22 and against theory.
 *
 * Four jittered argon fcc clusters (13, 19, 43 and 55 atoms, open
 * boundaries) in one batch, with our Lennard-Jones (σ 3.40 Å, ε 0.0104 eV,
 * rc 6.5 Å, shift on), which is ASE 3.22's LennardJones(sigma, epsilon, rc)
 * (smooth=False shifts each pair energy to zero at rc). The start is written
 * with mdf_xyz_write; tests/optim_ase_check.py runs ASE once on it.
 *
 *  1. FIRE follows ASE's FIRE step by step: positions after 10, 20, ..., 50
 *     steps (the stage is run five times with max_steps = 10: FIRE's state
 *     and velocities persist in the batch; every run starts by evaluating
 *     the forces at the current positions, as ASE does before its step).
 *     Both sides do the same operations in the same order; they differ only
 *     by summation order (pair forces, the dot products), i.e. ulps, which
 *     the dynamics amplifies a little: 1e-8 Å leaves orders of magnitude
 *     while any difference of algorithm (an Nsteps test off by one, a
 *     missed maxstep cap, a wrong mixing) moves atoms by 1e-3 Å or more.
 *     L-BFGS likewise (ASE's LBFGS with its defaults): as its history lives
 *     in a workspace that each run starts afresh, one run per checkpoint
 *     (10, 20, ..., 50 steps from the start). Measured in ASE itself, a
 *     1e-14 Å perturbation of the start grows to at most 3e-11 Å within 50
 *     L-BFGS steps (but to 1e-4 Å by step 150 for the 13-atom cluster,
 *     hence the comparison of whole runs by energy below).
 *  2. With an fmax criterion of 0.05 eV/Å (and 0.005) each system stops at
 *     the step where ASE's opt.run(fmax=0.05) (0.005) stops (ASE tests fmax < 0.05, we test
 *     <=: they differ only when fmax equals the threshold exactly).
 *  3. L-BFGS with fmax 1e-4 stops where ASE's LBFGS with fmax 1e-4 stops
 *     (energies within 1e-6 eV; both follow the same path, so mostly to
 *     round-off). FIRE2 takes another path, and these clusters have soft
 *     modes (k ~ 1e-4 eV/Å², measured: ASE's LBFGS points with fmax 1e-4
 *     lie up to 2.5e-5 eV above those with fmax 1e-6, as E - E_min ~
 *     fmax²/(2k)), so FIRE2 (and our L-BFGS too) run to fmax 2e-6
 *     (E - E_min ~ 1e-9 eV) and are compared with ASE's LBFGS minima at
 *     fmax 1e-6: energies within 1e-6 eV.
 *  3b. FIRE2 (no reference program has it: LAMMPS's min_style fire is
 *     another variant) follows, step by step, a reference written in this
 *     test from the description in codelets/optim/optim_kernel.h: positions
 *     after 10, 20, ..., 60 steps within 1e-8 Å, with parameters that make
 *     every branch (late uphill resets, capped moves, mixing) happen.
 *  4. Gradient descent with step 0.3 Å²/eV (below 2/λ_max of the Hessian,
 *     so each step must lower the energy) decreases every system's energy
 *     at every step; started 0.005 Å (per coordinate) from ASE's minima it
 *     converges (fmax 2e-6) to their energy within 1e-6 eV. GD has no ASE
 *     counterpart, so nothing compares its path.
 *  5. One shard and one shard per system, under eager and dmda: the same
 *     positions bit for bit for all four optimisers (per-system
 *     arithmetic never depends on sharding or workers on the CPU).
 *  6. Out-of-range parameters are refused with a message naming them. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "mdflow/extension.h"
#include "testutil.h"

#define SIGMA 3.40
#define EPSILON 0.0104
#define RC 6.5
#define NSYS 4
#define TRAJ_STEPS 50
#define TRAJ_EVERY 10
#define FIRE_FMAX 0.05
#define TIGHT_FMAX 1e-4
#define MIN_FMAX_OURS 2e-6
#define MIN_FMAX_ASE 1e-6

#define TOL_TRAJ 1e-8    /* Å, FIRE positions vs ASE */
#define TOL_MIN_E 1e-6   /* eV, minima energies */

static const char *g_py;
static char *g_dir;
static mdf_frame g_start[NSYS];
static mdf_frame_list g_fire_traj, g_lbfgs_traj, g_fire_fmax, g_lbfgs, g_lbfgs_min;

/* A jittered fcc argon cluster of the expected size. */
static mdf_frame fcc_cluster(double a, double r_over_a, int expect, double jitter, uint64_t seed)
{
    mdf_frame f = tu_fcc_cluster(a, r_over_a, jitter, seed);
    assert_int_equal(f.natoms, expect);
    return f;
}

static void make_start(mdf_frame frames[NSYS])
{
    frames[0] = fcc_cluster(5.26, 0.75, 13, 0.1, 21);
    frames[1] = fcc_cluster(5.26, 1.05, 19, 0.1, 22);
    frames[2] = fcc_cluster(5.30, 1.25, 43, 0.1, 23);
    frames[3] = fcc_cluster(5.26, 1.45, 55, 0.1, 24);
}

static double info_double(const mdf_frame *f, const char *key)
{
    const char *s = mdf_frame_get_info(f, key);
    if (!s) fail_msg("ASE's output has no %s", key);
    char *end;
    double v = strtod(s, &end);
    if (end == s) fail_msg("ASE's %s is not a number: %s", key, s);
    return v;
}

static int read_list(const char *name, mdf_frame_list *l, size_t expect)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", g_dir, name);
    mdf_error err;
    mdf_error_clear(&err);
    mdf_frame_list_init(l);
    if (mdf_xyz_read(path, l, &err) != MDF_OK || l->count != expect) {
        fprintf(stderr, "setup: cannot read ASE's %s (%zu frames): %s\n", path, l->count, err.message);
        return -1;
    }
    return 0;
}

static int setup_reference(void **state)
{
    (void)state;
    make_start(g_start);
    char start[1024], cmd[4096];
    snprintf(start, sizeof start, "%s/start.xyz", g_dir);
    mdf_error err;
    mdf_error_clear(&err);
    if (mdf_xyz_write(start, g_start, NSYS, 0, &err) != MDF_OK) {
        fprintf(stderr, "setup: %s\n", err.message);
        return -1;
    }
    snprintf(cmd, sizeof cmd,
             "'%s' '%s/tests/optim_ase_check.py' '%s' '%s' %.17g %.17g %.17g %d %d %.17g %.17g %.17g", g_py,
             tu_srcdir(), start, g_dir, SIGMA, EPSILON, RC, TRAJ_STEPS, TRAJ_EVERY, FIRE_FMAX, TIGHT_FMAX,
             MIN_FMAX_ASE);
    int rc = system(cmd);
    if (rc != 0) {
        fprintf(stderr, "setup: ASE reference failed (status %d): %s\n", rc, cmd);
        return -1;
    }
    if (read_list("fire_traj.xyz", &g_fire_traj, NSYS * (TRAJ_STEPS / TRAJ_EVERY)) ||
        read_list("lbfgs_traj.xyz", &g_lbfgs_traj, NSYS * (TRAJ_STEPS / TRAJ_EVERY)) ||
        read_list("fire_fmax.xyz", &g_fire_fmax, 2 * NSYS) || read_list("lbfgs.xyz", &g_lbfgs, NSYS) ||
        read_list("lbfgs_min.xyz", &g_lbfgs_min, NSYS))
        return -1;
    return 0;
}

static int teardown_reference(void **state)
{
    (void)state;
    mdf_frame_list_free(&g_fire_traj);
    mdf_frame_list_free(&g_lbfgs_traj);
    mdf_frame_list_free(&g_fire_fmax);
    mdf_frame_list_free(&g_lbfgs);
    mdf_frame_list_free(&g_lbfgs_min);
    for (int s = 0; s < NSYS; s++) mdf_frame_free(&g_start[s]);
    return 0;
}

/* ---- helpers ---------------------------------------------------------------- */

static mdf_model *argon(void)
{
    mdf_lj_config cfg = tu_argon(RC, 1);
    mdf_model *m = NULL;
    TU_CALL(mdf_model_create_lj, &cfg, &m);
    return m;
}

static mdf_batch *batch_of(const mdf_frame *frames, int nshards)
{
    mdf_batch_config bc;
    mdf_batch_config_init(&bc);
    bc.nshards = nshards;
    mdf_batch *b = NULL;
    TU_CALL(mdf_batch_create, frames, NSYS, &bc, &b);
    assert_int_equal(mdf_batch_nshards(b), nshards);
    return b;
}

/* params: the method's own, by name (NULL: its defaults). */
static mdf_stage *stage_of(const char *method, int64_t max_steps, double fmax, const mdf_param_list *params)
{
    mdf_stage_config sc;
    mdf_stage_config_init(&sc);
    sc.integrator = method;
    sc.max_steps = max_steps;
    if (params) sc.method_params = *params;
    mdf_stage *s = NULL;
    TU_CALL(mdf_stage_create, &sc, &s);
    if (fmax >= 0.0) TU_CALL(mdf_stage_add_criterion, s, MDF_CRITERION_FMAX, fmax);
    return s;
}

static void run_stage(mdf_stage *s, mdf_batch *b, mdf_model *m)
{
    mdf_stage_report rep;
    TU_CALL(mdf_stage_run, s, b, m, &rep);
}

/* Largest coordinate difference between system i of b and frame ref. */
static double max_dx(const mdf_batch *b, size_t i, const mdf_frame *ref)
{
    mdf_frame out;
    memset(&out, 0, sizeof out);
    TU_CALL(mdf_batch_get_frame, b, i, &out);
    assert_int_equal(out.natoms, ref->natoms);
    double dx = 0.0;
    for (int64_t k = 0; k < 3 * out.natoms; k++) dx = fmax(dx, fabs(out.positions[k] - ref->positions[k]));
    mdf_frame_free(&out);
    return dx;
}

static mdf_system_view view_of(const mdf_batch *b, size_t i)
{
    mdf_system_view v;
    TU_CALL(mdf_batch_get_system, b, i, &v);
    return v;
}

/* ---- 1. FIRE step by step ------------------------------------------------------ */

static void fire_trajectory(int nshards)
{
    mdf_model *m = argon();
    mdf_batch *b = batch_of(g_start, nshards);
    mdf_stage *s = stage_of("fire", TRAJ_EVERY, -1.0, NULL);
    double worst = 0.0, moved = 0.0;
    for (int k = 1; k <= TRAJ_STEPS / TRAJ_EVERY; k++) {
        run_stage(s, b, m);
        for (int i = 0; i < NSYS; i++) {
            const mdf_frame *ref = &g_fire_traj.frames[i * (TRAJ_STEPS / TRAJ_EVERY) + (k - 1)];
            assert_int_equal((int)info_double(ref, "step"), k * TRAJ_EVERY);
            assert_int_equal(view_of(b, (size_t)i).step, k * TRAJ_EVERY);
            double dx = max_dx(b, (size_t)i, ref);
            worst = fmax(worst, dx);
            if (k == TRAJ_STEPS / TRAJ_EVERY) moved = fmax(moved, max_dx(b, (size_t)i, &g_start[i]));
            if (!(dx <= TOL_TRAJ)) fail_msg("shards %d system %d step %d: FIRE positions differ from ASE's by %.3e A",
                                            nshards, i, k * TRAJ_EVERY, dx);
        }
    }
    printf("  FIRE vs ASE, %d shard(s): max |dx| over %d steps (every %d) = %.3e A (largest move %.3f A)\n",
           nshards, TRAJ_STEPS, TRAJ_EVERY, worst, moved);
    assert_true(moved > 0.05); /* the comparison means something */
    mdf_stage_destroy(s);
    mdf_batch_destroy(b);
    mdf_model_destroy(m);
}

static void test_fire_trajectory(void **state)
{
    (void)state;
    fire_trajectory(1);
    fire_trajectory(NSYS);
}

/* L-BFGS: a fresh batch per checkpoint (the history does not outlive a run). */
static void test_lbfgs_trajectory(void **state)
{
    (void)state;
    mdf_model *m = argon();
    double worst = 0.0;
    for (int k = 1; k <= TRAJ_STEPS / TRAJ_EVERY; k++) {
        mdf_batch *b = batch_of(g_start, 2);
        mdf_stage *s = stage_of("lbfgs", k * TRAJ_EVERY, -1.0, NULL);
        run_stage(s, b, m);
        for (int i = 0; i < NSYS; i++) {
            const mdf_frame *ref = &g_lbfgs_traj.frames[i * (TRAJ_STEPS / TRAJ_EVERY) + (k - 1)];
            assert_int_equal((int)info_double(ref, "step"), k * TRAJ_EVERY);
            assert_int_equal(view_of(b, (size_t)i).step, k * TRAJ_EVERY);
            double dx = max_dx(b, (size_t)i, ref);
            worst = fmax(worst, dx);
            if (!(dx <= TOL_TRAJ))
                fail_msg("system %d step %d: L-BFGS positions differ from ASE's by %.3e A", i, k * TRAJ_EVERY, dx);
        }
        mdf_stage_destroy(s);
        mdf_batch_destroy(b);
    }
    printf("  L-BFGS vs ASE: max |dx| over %d steps (every %d) = %.3e A\n", TRAJ_STEPS, TRAJ_EVERY, worst);
    mdf_model_destroy(m);
}

/* ---- 2. FIRE stops where ASE stops ----------------------------------------------- */

static void fire_stops_like_ase(double fmax, const mdf_frame *refs)
{
    mdf_model *m = argon();
    mdf_batch *b = batch_of(g_start, 2);
    mdf_stage *s = stage_of("fire", 5000, fmax, NULL);
    run_stage(s, b, m);
    for (int i = 0; i < NSYS; i++) {
        const mdf_frame *ref = &refs[i];
        mdf_system_view v = view_of(b, (size_t)i);
        int64_t ase = (int64_t)info_double(ref, "nsteps");
        double dx = max_dx(b, (size_t)i, ref);
        printf("  FIRE fmax %.3f system %d (%2lld atoms): steps %3lld, ASE %3lld; fmax %.5f; |dx| %.2e A, "
               "|dE| %.2e eV\n", fmax, i, (long long)v.natoms, (long long)v.step, (long long)ase, v.fmax, dx,
               fabs(v.potential_energy - ref->energy));
        assert_int_equal(v.status, 1);
        assert_true(v.fmax <= fmax);
        assert_int_equal(v.step, ase);
        assert_true(dx <= TOL_TRAJ);
    }
    mdf_stage_destroy(s);
    mdf_batch_destroy(b);
    mdf_model_destroy(m);
}

static void test_fire_fmax_steps(void **state)
{
    (void)state;
    fire_stops_like_ase(FIRE_FMAX, &g_fire_fmax.frames[0]);
    fire_stops_like_ase(FIRE_FMAX / 10, &g_fire_fmax.frames[NSYS]);
}

/* ---- 2b. FIRE2 step by step, as documented ---------------------------------------- */

/* mdflow's FIRE2 is neither ASE's (ASE has none) nor LAMMPS's min_style
 * fire (which evaluates the forces again after the half step back, mixes
 * with |v| from before the kick, limits dt rather than the move, and uses
 * masses): this reference is written from the description in
 * codelets/optim/optim_kernel.h alone, with its own Lennard-Jones forces
 * (every pair within RC: the forces of the shifted potential are those of
 * the plain one), one system at a time. Parameters that make every branch
 * happen within 60 steps: a short delay, a large dt, a small maxstep. */
typedef struct f2_ref {
    double dt, a;
    int64_t npos, iter;
    int uphill_late, capped, mixed; /* counts, to see that each branch ran */
} f2_ref;

/* FIRE2's parameters as a stage gets them: those given, else the method's
 * table defaults. */
typedef struct f2_par {
    double dt, dtmax, dtmin, maxstep, finc, fdec, astart, fa;
    int nmin;
} f2_par;

static double f2_value(const mdf_param_list *l, const char *name)
{
    const char *given = mdf_param_list_get(l, name);
    if (given) return strtod(given, NULL);
    const mdf_param_def *d = mdf_params_find(mdf_method_find("fire2")->params, name);
    assert_non_null(d);
    return d->def;
}

static f2_par f2_par_of(const mdf_param_list *l)
{
    return (f2_par){.dt = f2_value(l, "dt"), .dtmax = f2_value(l, "dtmax"), .dtmin = f2_value(l, "dtmin"),
                    .maxstep = f2_value(l, "maxstep"), .finc = f2_value(l, "finc"), .fdec = f2_value(l, "fdec"),
                    .astart = f2_value(l, "astart"), .fa = f2_value(l, "fa"), .nmin = (int)f2_value(l, "nmin")};
}

static void lj_forces_ref(const double *x, int n, double *f)
{
    memset(f, 0, sizeof(double) * 3 * (size_t)n);
    for (int i = 0; i < n; i++)
        for (int j = i + 1; j < n; j++) {
            double d[3], r2 = 0.0;
            for (int k = 0; k < 3; k++) {
                d[k] = x[3 * i + k] - x[3 * j + k];
                r2 += d[k] * d[k];
            }
            if (!(r2 < RC * RC)) continue;
            double s6 = pow(SIGMA * SIGMA / r2, 3.0), g = 24.0 * EPSILON * (2.0 * s6 * s6 - s6) / r2;
            for (int k = 0; k < 3; k++) {
                f[3 * i + k] += g * d[k];
                f[3 * j + k] -= g * d[k];
            }
        }
}

/* One step of the documented FIRE2 on x, v (n atoms). */
static void fire2_ref_step(f2_ref *r, const f2_par *dp, double *x, double *v, int n)
{
    double *f = malloc(sizeof(double) * 3 * (size_t)n);
    lj_forces_ref(x, n, f);
    double P = 0.0, vmax = 0.0, ff = 0.0, vv = 0.0, dmax = 0.0;
    for (int i = 0; i < n; i++) {
        double vi2 = 0.0;
        for (int k = 0; k < 3; k++) {
            P += f[3 * i + k] * v[3 * i + k];
            vi2 += v[3 * i + k] * v[3 * i + k];
        }
        vmax = fmax(vmax, sqrt(vi2));
    }
    r->iter++;
    int uphill = !(P > 0.0);
    if (!uphill) {
        r->npos++;
        if (r->npos > dp->nmin) {
            r->dt = fmin(r->dt * dp->finc, dp->dtmax);
            r->a *= dp->fa;
        }
    } else {
        r->npos = 0;
        if (r->iter >= dp->nmin) { /* iterations 1 .. nmin - 1 are the initial delay */
            r->dt = fmax(r->dt * dp->fdec, dp->dtmin);
            r->a = dp->astart;
            r->uphill_late++;
        }
        double back = 0.5 * r->dt, longest = back * vmax;
        if (longest > dp->maxstep) back *= dp->maxstep / longest;
        for (int q = 0; q < 3 * n; q++) {
            x[q] -= back * v[q];
            v[q] = 0.0;
        }
    }
    for (int q = 0; q < 3 * n; q++) {
        v[q] += r->dt * f[q]; /* the forces from before any half step back */
        vv += v[q] * v[q];
        ff += f[q] * f[q];
    }
    if (!uphill && ff > 1e-20) {
        double c1 = 1.0 - r->a, c2 = r->a * sqrt(vv / ff); /* |v| after the kick, a after its update */
        for (int q = 0; q < 3 * n; q++) v[q] = c1 * v[q] + c2 * f[q];
        r->mixed++;
    }
    for (int i = 0; i < n; i++) {
        double d2 = 0.0;
        for (int k = 0; k < 3; k++) d2 += (r->dt * v[3 * i + k]) * (r->dt * v[3 * i + k]);
        dmax = fmax(dmax, sqrt(d2));
    }
    double scale = dmax > dp->maxstep ? dp->maxstep / dmax : 1.0;
    r->capped += dmax > dp->maxstep;
    for (int q = 0; q < 3 * n; q++) x[q] += scale * (r->dt * v[q]);
    free(f);
}

static void test_fire2_steps(void **state)
{
    (void)state;
    enum { STEPS = 60, EVERY = 10 };
    mdf_param_list p;
    mdf_param_list_init(&p);
    tu_param(&p, "dt", 0.3);
    tu_param(&p, "dtmax", 3.0);
    tu_param(&p, "nmin", 4);
    tu_param(&p, "maxstep", 0.08);
    const f2_par dp = f2_par_of(&p);
    mdf_model *m = argon();
    mdf_batch *b = batch_of(g_start, 1);
    mdf_stage *s = stage_of("fire2", EVERY, -1.0, &p);
    f2_ref ref[NSYS];
    double *x[NSYS], *v[NSYS], worst = 0.0, moved = 0.0;
    int uphill = 0, capped = 0, mixed = 0;
    for (int i = 0; i < NSYS; i++) {
        int n = (int)g_start[i].natoms;
        ref[i] = (f2_ref){.dt = dp.dt, .a = dp.astart};
        x[i] = malloc(sizeof(double) * 3 * (size_t)n);
        v[i] = calloc(3 * (size_t)n, sizeof(double));
        memcpy(x[i], g_start[i].positions, sizeof(double) * 3 * (size_t)n);
    }
    for (int k = 1; k <= STEPS / EVERY; k++) {
        run_stage(s, b, m);
        for (int i = 0; i < NSYS; i++) {
            int n = (int)g_start[i].natoms;
            for (int t = 0; t < EVERY; t++) fire2_ref_step(&ref[i], &dp, x[i], v[i], n);
            mdf_frame out;
            memset(&out, 0, sizeof out);
            TU_CALL(mdf_batch_get_frame, b, (size_t)i, &out);
            double dx = 0.0;
            for (int q = 0; q < 3 * n; q++) {
                dx = fmax(dx, fabs(out.positions[q] - x[i][q]));
                moved = fmax(moved, fabs(out.positions[q] - g_start[i].positions[q]));
            }
            mdf_frame_free(&out);
            worst = fmax(worst, dx);
            if (!(dx <= TOL_TRAJ))
                fail_msg("FIRE2 system %d step %d: positions differ from the documented algorithm by %.3e A", i,
                         k * EVERY, dx);
        }
    }
    for (int i = 0; i < NSYS; i++) {
        uphill += ref[i].uphill_late;
        capped += ref[i].capped;
        mixed += ref[i].mixed;
        free(x[i]);
        free(v[i]);
    }
    printf("  FIRE2 vs the documented steps: max |dx| over %d steps (every %d) = %.3e A (largest move %.3f A; "
           "%d uphill resets after the delay, %d capped moves, %d mixings)\n",
           STEPS, EVERY, worst, moved, uphill, capped, mixed);
    assert_true(moved > 0.05 && uphill > 0 && capped > 0 && mixed > 0); /* every branch ran */
    mdf_stage_destroy(s);
    mdf_batch_destroy(b);
    mdf_model_destroy(m);
}

/* ---- 3. L-BFGS and FIRE2 reach ASE's L-BFGS minima -------------------------------- */

static void minima_like_ase(const char *method, double fmax, const mdf_frame_list *refs, const char *what)
{
    mdf_model *m = argon();
    mdf_batch *b = batch_of(g_start, 1);
    mdf_stage *s = stage_of(method, 20000, fmax, NULL);
    run_stage(s, b, m);
    printf("  %s fmax %.0e vs ASE's LBFGS %s:\n", method, fmax, what);
    for (int i = 0; i < NSYS; i++) {
        const mdf_frame *ref = &refs->frames[i];
        mdf_system_view v = view_of(b, (size_t)i);
        double de = fabs(v.potential_energy - ref->energy);
        printf("  %-5s system %d (%2lld atoms): E %.10f eV after %4lld steps; ASE LBFGS E %.10f after %4lld steps;"
               " |dE| %.2e eV, |dx| %.2e A\n", method, i, (long long)v.natoms, v.potential_energy, (long long)v.step,
               ref->energy, (long long)info_double(ref, "nsteps"), de, max_dx(b, (size_t)i, ref));
        assert_int_equal(v.status, 1);
        if (!(de <= TOL_MIN_E))
            fail_msg("%s system %d: minimum %.12f eV, ASE's LBFGS %.12f eV", method, i, v.potential_energy,
                     ref->energy);
    }
    mdf_stage_destroy(s);
    mdf_batch_destroy(b);
    mdf_model_destroy(m);
}

static void test_lbfgs_minima(void **state)
{
    (void)state;
    minima_like_ase("lbfgs", TIGHT_FMAX, &g_lbfgs, "fmax 1e-4 (same path)");
    minima_like_ase("lbfgs", MIN_FMAX_OURS, &g_lbfgs_min, "fmax 1e-6 (minima)");
}

static void test_fire2_minima(void **state)
{
    (void)state;
    minima_like_ase("fire2", MIN_FMAX_OURS, &g_lbfgs_min, "fmax 1e-6 (minima)");
}

/* ---- 4. gradient descent -------------------------------------------------------- */

#define GD_STEPS 300
typedef struct energy_log {
    double e[NSYS][GD_STEPS + 1];
    int seen[NSYS][GD_STEPS + 1];
} energy_log;

static void record_energy(void *user, const mdf_hook_event *ev)
{
    energy_log *log = (energy_log *)user;
    for (size_t r = 0; r < ev->nrows; r++) {
        const mdf_hook_row *row = &ev->rows[r];
        if (row->id < 0 || row->id >= NSYS || ev->step < 0 || ev->step > GD_STEPS) continue;
        log->e[row->id][ev->step] = row->energy; /* one system per row: no two writers */
        log->seen[row->id][ev->step] = 1;
    }
}

static void test_gd(void **state)
{
    (void)state;
    mdf_param_list p;
    mdf_param_list_init(&p);
    tu_param(&p, "step", 0.3);
    mdf_model *m = argon();

    /* Monotonic decrease from the jittered starts. */
    energy_log *log = calloc(1, sizeof *log);
    assert_non_null(log);
    mdf_batch *b = batch_of(g_start, 2);
    mdf_stage *s = stage_of("gd", GD_STEPS, -1.0, &p);
    mdf_hook *h = NULL;
    TU_CALL(mdf_hook_create_callback, "energies", MDF_AFTER_STEP, 1, record_energy, log, &h);
    TU_CALL(mdf_stage_add_hook, s, h);
    run_stage(s, b, m);
    for (int i = 0; i < NSYS; i++) {
        double rise = -INFINITY;
        for (int k = 0; k <= GD_STEPS; k++) assert_true(log->seen[i][k]);
        for (int k = 1; k <= GD_STEPS; k++) rise = fmax(rise, log->e[i][k] - log->e[i][k - 1]);
        printf("  GD system %d: E %.8f -> %.8f eV in %d steps, largest step-to-step change %+.2e eV\n", i,
               log->e[i][0], log->e[i][GD_STEPS], GD_STEPS, rise);
        /* Strictly downhill at every step (1e-13 eV: summation round-off of
         * energies ~ 1 eV, far below a step's decrease early on). */
        assert_true(rise <= 1e-13);
        assert_true(log->e[i][GD_STEPS] < log->e[i][0] - 1e-3);
    }
    mdf_stage_destroy(s);
    mdf_batch_destroy(b);
    free(log);

    /* Converges to ASE's L-BFGS minima when started close to them. */
    mdf_frame near[NSYS];
    uint64_t seed = 99;
    for (int i = 0; i < NSYS; i++) {
        memset(&near[i], 0, sizeof near[i]);
        const mdf_frame *ref = &g_lbfgs_min.frames[i];
        TU_CALL(mdf_frame_alloc, &near[i], ref->natoms, 0, 0, 0);
        for (int64_t k = 0; k < ref->natoms; k++) {
            near[i].numbers[k] = 18;
            for (int d = 0; d < 3; d++) near[i].positions[3 * k + d] = ref->positions[3 * k + d] + 0.005 * tu_gauss(&seed);
        }
    }
    b = batch_of(near, 2);
    s = stage_of("gd", 20000, MIN_FMAX_OURS, &p);
    run_stage(s, b, m);
    for (int i = 0; i < NSYS; i++) {
        mdf_system_view v = view_of(b, (size_t)i);
        double de = fabs(v.potential_energy - g_lbfgs_min.frames[i].energy);
        printf("  GD from 0.005 A off ASE's minimum, system %d: %lld steps, |dE| %.2e eV\n", i, (long long)v.step, de);
        assert_int_equal(v.status, 1);
        assert_true(de <= TOL_MIN_E);
        mdf_frame_free(&near[i]);
    }
    mdf_stage_destroy(s);
    mdf_batch_destroy(b);
    mdf_model_destroy(m);
}

/* ---- 5. sharding and schedulers --------------------------------------------------- */

static const char *const g_methods[] = {"fire", "fire2", "gd", "lbfgs"};
#define NMETHODS 4
#define REPRO_STEPS 40
static double *g_repro[NMETHODS]; /* positions of the first configuration */

static void repro_run(const char *sched, int nshards)
{
    mdf_model *m = argon();
    for (int k = 0; k < NMETHODS; k++) {
        mdf_batch *b = batch_of(g_start, nshards);
        mdf_stage *s = stage_of(g_methods[k], REPRO_STEPS, -1.0, NULL);
        run_stage(s, b, m);
        int64_t n = 0;
        for (int i = 0; i < NSYS; i++) n += g_start[i].natoms;
        double *x = malloc((size_t)(3 * n) * sizeof *x);
        assert_non_null(x);
        int64_t off = 0;
        for (int i = 0; i < NSYS; i++) {
            mdf_frame out;
            memset(&out, 0, sizeof out);
            TU_CALL(mdf_batch_get_frame, b, (size_t)i, &out);
            memcpy(x + off, out.positions, (size_t)(3 * out.natoms) * sizeof *x);
            off += 3 * out.natoms;
            assert_int_equal(view_of(b, (size_t)i).step, REPRO_STEPS);
            mdf_frame_free(&out);
        }
        if (!g_repro[k]) {
            g_repro[k] = x;
        } else {
            int same = memcmp(x, g_repro[k], (size_t)(3 * n) * sizeof *x) == 0;
            printf("  %-5s %s, %d shard(s): positions after %d steps %s\n", g_methods[k], sched, nshards,
                   REPRO_STEPS, same ? "identical" : "DIFFER");
            if (!same) fail_msg("%s under %s with %d shards differs from the first run", g_methods[k], sched, nshards);
            free(x);
        }
        mdf_stage_destroy(s);
        mdf_batch_destroy(b);
    }
    mdf_model_destroy(m);
}

static void test_shards_and_schedulers(void **state)
{
    (void)state;
    repro_run("eager", 1);
    repro_run("eager", NSYS);
    tu_stop();
    tu_start("dmda", 2, 0);
    repro_run("dmda", 1);
    repro_run("dmda", NSYS);
    tu_stop();
    tu_start("eager", 2, 0);
    for (int k = 0; k < NMETHODS; k++) {
        free(g_repro[k]);
        g_repro[k] = NULL;
    }
}

/* ---- 6. parameters ---------------------------------------------------------------- */

static void expect_refused(const char *method, const char *name, double value, const char *needle)
{
    mdf_stage_config sc;
    mdf_stage_config_init(&sc);
    sc.integrator = method;
    tu_param(&sc.method_params, name, value);
    mdf_stage *s = NULL;
    mdf_error err;
    mdf_error_clear(&err);
    assert_int_equal(mdf_stage_create(&sc, &s, &err), MDF_ERR_INVALID);
    assert_null(s);
    printf("  %s: %s\n", method, err.message);
    if (!strstr(err.message, needle)) fail_msg("message '%s' does not name '%s'", err.message, needle);
}

static void test_bad_parameters(void **state)
{
    (void)state;
    for (int k = 0; k < NMETHODS; k++) { /* the defaults pass */
        mdf_stage *s = stage_of(g_methods[k], 1, -1.0, NULL);
        mdf_stage_destroy(s);
        assert_int_equal(mdf_integrator_is_optimiser(g_methods[k]), 1);
    }
    expect_refused("fire", "dt", 0.0, "parameter dt of method fire: 0 is out of range; give a value in (0, inf)");
    expect_refused("fire", "fdec", 1.5, "fdec of method fire");
    expect_refused("fire", "nmin", -1, "nmin of method fire");
    expect_refused("fire2", "dtmin", 2.0, "dtmin of method fire2");
    expect_refused("fire2", "maxstep", NAN, "maxstep of method fire2");
    expect_refused("gd", "step", -0.1, "step of method gd");
    expect_refused("lbfgs", "memory", -1, "memory of method lbfgs");
    expect_refused("lbfgs", "alpha", 0.0, "alpha of method lbfgs");
    expect_refused("lbfgs", "maxstep", 1.5, "maxstep of method lbfgs");
}

int main(void)
{
    g_py = tu_python_with("ase");
    if (!g_py) {
        fprintf(stderr, "no Python with ASE: skipping\n");
        return TU_SKIP;
    }
    g_dir = tu_tmpdir();
    tu_start("eager", 2, 0);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bad_parameters),
        cmocka_unit_test(test_fire_trajectory),
        cmocka_unit_test(test_lbfgs_trajectory),
        cmocka_unit_test(test_fire_fmax_steps),
        cmocka_unit_test(test_lbfgs_minima),
        cmocka_unit_test(test_fire2_steps),
        cmocka_unit_test(test_fire2_minima),
        cmocka_unit_test(test_gd),
        cmocka_unit_test(test_shards_and_schedulers),
    };
    if (getenv("MDF_TEST_FILTER")) cmocka_set_test_filter(getenv("MDF_TEST_FILTER"));
    int rc = cmocka_run_group_tests(tests, setup_reference, teardown_reference);
    tu_stop();
    if (rc == 0) tu_remove_tree(g_dir); /* kept for inspection on failure */
    free(g_dir);
    return rc;
}
