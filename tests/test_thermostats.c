/* mdflow tests — thermostats and barostat, against theory and LAMMPS.
 *
 * 1. Canonical kinetic energy (Langevin BAOAB, Bussi CSVR). 64 periodic
 *    Lennard-Jones argon fluids of 32 atoms (ρ = 0.021 Å⁻³, 120 K). For a
 *    canonical ensemble K is Gamma-distributed: <K> = Nf kT/2,
 *    Var K = Nf (kT)²/2. Nf = 3N for Langevin (its noise acts on every atom,
 *    so it thermalises the total momentum too) and 3N - 3 for Bussi (the
 *    rescaling keeps the zero total momentum of the velocity draw). Each
 *    system gives one time average of K and one of (K - <K>_theory)²; the 64
 *    systems are independent (own Philox streams), so the error of the grand
 *    mean is the spread over systems / sqrt(64), measured from the data. The
 *    test asks for agreement within 4σ plus the O(dt²) bias of the
 *    integrators: for a harmonic mode of frequency ω the sampled kinetic
 *    energy is off by a relative (ω dt)²/4 at most (Verlet's shadow energy;
 *    BAOAB's velocity marginal); argon's highest frequency (Debye, 2 THz,
 *    ω = 0.0126 rad/fs) gives 1.6e-4 at dt = 2 fs: we allow 5e-4 for the mean
 *    and 1e-3 for the variance.
 * 2. Nosé–Hoover chain (τ 100 fs, chain 3): the extended energy
 *    H = E + K + extra_energy is conserved.
 *    (a) Order: 4 open argon clusters of 20 atoms with every pair interacting
 *        (no cutoff crossings), dt 4 and 2 fs over 6 ps: the rms of H - H0
 *        scales as dt² (ratio 4 for dt halved, accepted 3..5.5).
 *    (b) Bound: 4 periodic liquids of 256 atoms (cutoff 8.5 Å), equilibrated
 *        by a Langevin stage first: max |H - H0| ≤ 3N kT (ω_E dt)²/4 as in
 *        test_md (Einstein frequency of the starting configuration).
 *    In both, the mean kinetic energy over the second half of the run
 *    matches Nf kT/2 within 10% (loose: short runs).
 * 3. NPT against LAMMPS: an fcc argon crystal (4×4×4 cells, 256 atoms,
 *    lj/cut 8.5 Å, unshifted: LAMMPS's pressure has no shift term either) at
 *    60 K and 500 bar (far enough from 0 that an error in the pressure's
 *    units shows: β_T ΔP ≈ 3.5% of V). LAMMPS runs `fix npt temp 60 60 0.1
 *    iso 500 500 1.0` (MTK, which samples the same isothermal–isobaric
 *    ensemble) for 10 + 60 ps and prints the volume every 10 steps; we run
 *    stochastic cell rescaling (τ_p 0.5 ps) on 2 independent copies for
 *    4 + 16 ps each. Errors of the means come from block averages (blocks
 *    of 2 ps for ours, about 4 volume correlation times; 5 ps for LAMMPS,
 *    whose MTK volume oscillates with a ~1 ps period), ours also from the
 *    spread of the copies, the larger of the two; the test asks
 *    |V_ours - V_lammps| ≤ 4 sqrt(σ_ours² + σ_lammps²). The volume's
 *    standard deviation, which is sqrt(kT V β_T) in the NPT ensemble, is
 *    printed for both codes and must agree within 30% (a barostat that
 *    damps or inflates the fluctuations fails this). Skipped (77) without
 *    `lmp`.
 * 4. Invariance: bit-for-bit identical positions, velocities, cells, kinetic
 *    and extra energies with 1, 3 and 5 shards, under eager and dmda.
 * 5. Bad parameters give errors that name the parameter and its range.
 * 6. The noise: the logarithm and sine/cosine of the Box–Muller transform
 *    (plain arithmetic, mdf_philox.h) against libm, and the normals against
 *    the moments of N(0, 1): mean 0, variance 1, fourth moment 3, the two
 *    of a Box–Muller pair uncorrelated, P(|g| > 3) = 0.0026998.
 * 7. Degrees of freedom: for Langevin, Bussi, Nosé–Hoover and NPT, on
 *    13-atom clusters and 256-atom crystals, plain and with frozen atoms,
 *    every reported temperature is 2K/(Nf kB) with Nf from theory (3N - 3,
 *    3N for Langevin, 3 per free atom with frozen atoms), and the mean
 *    temperature is the target within 4σ (block averages); see below. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "testutil.h"
#include "../codelets/common/mdf_philox.h"

#define AR_EPS 0.0104
#define AR_SIG 3.40


/* ---- sampling through a callback hook --------------------------------------- */

/* Per-system series of K, H = E + K + extra and V, from stage step `from`
 * on, every `every` steps; H0 is H at step 0. Systems are indexed by id; a
 * system's rows come from one shard only, so no lock is needed. */
typedef struct sampler {
    int nsys, cap;
    int64_t from;
    int *n;
    double *k, *h, *v, *h0;
    int bad;
} sampler;

static sampler *sampler_new(int nsys, int cap, int64_t from)
{
    sampler *s = calloc(1, sizeof *s);
    s->nsys = nsys;
    s->cap = cap;
    s->from = from;
    s->n = calloc((size_t)nsys, sizeof *s->n);
    s->k = calloc((size_t)nsys * (size_t)cap, sizeof(double));
    s->h = calloc((size_t)nsys * (size_t)cap, sizeof(double));
    s->v = calloc((size_t)nsys * (size_t)cap, sizeof(double));
    s->h0 = calloc((size_t)nsys, sizeof(double));
    return s;
}

static void sampler_free(sampler *s)
{
    free(s->n);
    free(s->k);
    free(s->h);
    free(s->v);
    free(s->h0);
    free(s);
}

static void sample_rows(void *user, const mdf_hook_event *ev)
{
    sampler *s = (sampler *)user;
    for (size_t r = 0; r < ev->nrows; r++) {
        const mdf_hook_row *w = &ev->rows[r];
        if (w->id < 0 || w->id >= s->nsys) {
            s->bad = 1;
            continue;
        }
        double h = w->energy + w->kinetic + w->extra_energy;
        if (ev->step == 0) s->h0[w->id] = h;
        if (ev->step < s->from || s->n[w->id] >= s->cap) continue;
        size_t at = (size_t)w->id * (size_t)s->cap + (size_t)s->n[w->id]++;
        s->k[at] = w->kinetic;
        s->h[at] = h;
        s->v[at] = w->volume;
    }
}

static mdf_model *argon_model(double cutoff, int shift)
{
    mdf_lj_config lj = tu_argon(cutoff, shift);
    mdf_model *m = NULL;
    TU_CALL(mdf_model_create_lj, &lj, &m);
    return m;
}

/* Stage-wide settings, and the methods' own by name ("langevin.friction_per_fs":
 * each run takes those of its method, tu_method_params). */
typedef struct run_params {
    mdf_dynamics_params d;
    mdf_param_list m;
} run_params;

static run_params run_params_init(void)
{
    run_params p;
    mdf_dynamics_params_init(&p.d);
    mdf_param_list_init(&p.m);
    return p;
}

/* Runs `steps` steps of `integ` on the batch, sampling every `every` steps. */
static void run_stage(mdf_batch *b, mdf_model *m, const char *integ, const run_params *p, int64_t steps,
                      double skin, sampler *smp, int every)
{
    mdf_stage_config cfg;
    mdf_stage_config_init(&cfg);
    cfg.integrator = integ;
    cfg.max_steps = steps;
    cfg.skin = skin;
    cfg.params = p->d;
    tu_method_params(&cfg, &p->m);
    mdf_stage *s = NULL;
    TU_CALL(mdf_stage_create, &cfg, &s);
    if (smp) {
        mdf_hook *h = NULL;
        TU_CALL(mdf_hook_create_callback, "sampler", MDF_AFTER_STEP, every, sample_rows, smp, &h);
        TU_CALL(mdf_stage_add_hook, s, h);
    }
    mdf_stage_report rep;
    TU_CALL(mdf_stage_run, s, b, m, &rep);
    assert_int_equal(rep.steps, steps);
    if (steps >= 1000)
        printf("#   (%s: %lld steps of %lld atoms in %.1f s)\n", integ, (long long)steps,
               (long long)mdf_batch_natoms(b), rep.wall_seconds);
    mdf_stage_destroy(s);
    if (smp) assert_false(smp->bad);
}

static double mean_of(const double *x, int n)
{
    double s = 0.0;
    for (int i = 0; i < n; i++) s += x[i];
    return s / n;
}

/* Standard error of the mean of n independent values. */
static double sem_of(const double *x, int n)
{
    double m = mean_of(x, n), s = 0.0;
    for (int i = 0; i < n; i++) s += (x[i] - m) * (x[i] - m);
    return sqrt(s / (n - 1) / n);
}

/* ---- 1. canonical kinetic energy --------------------------------------------------- */

enum { KE_SYS = 64, KE_EQUIL = 500, KE_STEPS = 3000, KE_EVERY = 5 };
#define KE_T 120.0
#define KE_DT 2.0

static void fluid_frames(mdf_frame *f, int n, int cells, double a, uint64_t seed)
{
    for (int i = 0; i < n; i++) f[i] = tu_fcc(cells, cells, cells, a, 18, 0.0, 0.1, seed + (uint64_t)i);
}

static void check_canonical(const char *integ, const run_params *p, int all_dof)
{
    mdf_frame f[KE_SYS];
    fluid_frames(f, KE_SYS, 2, 5.75, 1000); /* 32 atoms, 11.5 Å box */
    mdf_model *m = argon_model(5.0, 1);     /* cutoff + skin 5.5 Å <= half box */
    mdf_batch *b = NULL;
    TU_CALL(mdf_batch_create, f, KE_SYS, NULL, &b);
    TU_CALL(mdf_batch_thermalize, b, KE_T, 7, 0);
    int cap = (KE_STEPS - KE_EQUIL) / KE_EVERY + 1;
    sampler *smp = sampler_new(KE_SYS, cap, KE_EQUIL);
    run_stage(b, m, integ, p, KE_STEPS, 0.5, smp, KE_EVERY);
    int natoms = (int)f[0].natoms;
    double nf = all_dof ? 3.0 * natoms : 3.0 * natoms - 3.0;
    double kT = MDF_KB * KE_T, kbar = 0.5 * nf * kT, var_th = 0.5 * nf * kT * kT;
    double means[KE_SYS], vars[KE_SYS];
    for (int s = 0; s < KE_SYS; s++) {
        assert_int_equal(smp->n[s], cap);
        const double *k = smp->k + (size_t)s * (size_t)cap;
        means[s] = mean_of(k, cap);
        double v = 0.0;
        for (int i = 0; i < cap; i++) v += (k[i] - kbar) * (k[i] - kbar);
        vars[s] = v / cap;
    }
    double mk = mean_of(means, KE_SYS), ek = sem_of(means, KE_SYS);
    double mv = mean_of(vars, KE_SYS), ev = sem_of(vars, KE_SYS);
    printf("# %s: %d systems x %d atoms, Nf %.0f, T %.0f K, dt %.1f fs, %d samples each\n", integ, KE_SYS, natoms,
           nf, KE_T, KE_DT, cap);
    printf("#   <K>   = %.6f +- %.6f eV  theory Nf kT/2     = %.6f  (%+.2f sigma, rel %+.2e)\n", mk, ek, kbar,
           (mk - kbar) / ek, mk / kbar - 1.0);
    printf("#   Var K = %.4e +- %.4e eV2 theory Nf (kT)^2/2 = %.4e  (%+.2f sigma, rel %+.2e)\n", mv, ev, var_th,
           (mv - var_th) / ev, mv / var_th - 1.0);
    assert_true(fabs(mk - kbar) <= 4.0 * ek + 5e-4 * kbar);
    assert_true(fabs(mv - var_th) <= 4.0 * ev + 1e-3 * var_th);
    /* The errors must be small enough for the test to mean something: a
     * wrong Nf (3 of 96) shifts <K> by 3%, a wrong variance formula by more. */
    assert_true(ek < 0.005 * kbar && ev < 0.03 * var_th);
    sampler_free(smp);
    mdf_batch_destroy(b);
    mdf_model_destroy(m);
    for (int i = 0; i < KE_SYS; i++) mdf_frame_free(&f[i]);
}

static void test_langevin_canonical(void **state)
{
    (void)state;
    run_params p = run_params_init();
    p.d.dt_fs = KE_DT;
    p.d.temperature_K = KE_T;
    p.d.seed = 11;
    tu_param(&p.m, "langevin.friction_per_fs", 0.01);
    check_canonical("langevin", &p, 1);
}

static void test_bussi_canonical(void **state)
{
    (void)state;
    run_params p = run_params_init();
    p.d.dt_fs = KE_DT;
    p.d.temperature_K = KE_T;
    p.d.seed = 12;
    tu_param(&p.m, "bussi.tau_fs", 50.0);
    check_canonical("bussi", &p, 0);
}

/* ---- 2. Nosé–Hoover chain ------------------------------------------------------------- */


typedef struct nhc_result {
    double max_dev, rms_dev, bound, ke_mean, kbar;
} nhc_result;

enum { NH_SYS = 4 };
#define NH_RC 8.5      /* periodic liquid */
#define NH_T 120.0
#define CL_RC 30.0     /* clusters: every pair interacts, no cutoff crossings */
#define CL_T 30.0

/* `steps` steps of dt fs of `integ` at T on NH_SYS systems (velocities as
 * in the frames, or drawn at T when draw is set); H = E + K + extra against
 * its value at step 0, and the bound 3N kT (ω_E dt)²/4 (smallest over the
 * systems). */
static nhc_result run_nhc(const mdf_frame *f, double rc, double T, int draw, const char *integ, double dt, int steps)
{
    mdf_model *m = argon_model(rc, 1);
    mdf_batch *b = NULL;
    TU_CALL(mdf_batch_create, f, NH_SYS, NULL, &b);
    if (draw) TU_CALL(mdf_batch_thermalize, b, T, 5, 0);
    run_params p = run_params_init();
    p.d.dt_fs = dt;
    p.d.temperature_K = T;
    tu_param(&p.m, "nose_hoover.tau_fs", 100.0);
    tu_param(&p.m, "nose_hoover.chain", 3);
    sampler *smp = sampler_new(NH_SYS, steps + 1, 0);
    run_stage(b, m, integ, &p, steps, 1.0, smp, 1);
    nhc_result r = {0};
    double kT = MDF_KB * T, n = (double)f[0].natoms;
    r.kbar = 0.5 * (f[0].natoms > 1 ? 3.0 * (double)f[0].natoms - 3.0 : 3.0) * kT;
    double ss = 0.0;
    int cnt = 0, nk = 0;
    for (int s = 0; s < NH_SYS; s++) {
        assert_int_equal(smp->n[s], steps + 1);
        double bound = 3.0 * n * kT * tu_lj_einstein_omega2(&f[s], AR_EPS, AR_SIG, rc) * pow(mdf_fs_to_internal(dt), 2) / 4.0;
        r.bound = s == 0 ? bound : fmin(r.bound, bound);
        for (int i = 0; i <= steps; i++) {
            size_t at = (size_t)s * (size_t)(steps + 1) + (size_t)i;
            double d = smp->h[at] - smp->h0[s];
            r.max_dev = fmax(r.max_dev, fabs(d));
            ss += d * d;
            cnt++;
            if (i >= steps / 2) {
                r.ke_mean += smp->k[at];
                nk++;
            }
        }
    }
    r.rms_dev = sqrt(ss / cnt);
    r.ke_mean /= nk;
    sampler_free(smp);
    mdf_batch_destroy(b);
    mdf_model_destroy(m);
    return r;
}

/* NH_SYS fluids of 256 atoms (23 Å box) melted and equilibrated at NH_T by a
 * Langevin stage (a stage of another method before: the chain starts fresh). */
static void equilibrated_fluid(mdf_frame *f)
{
    mdf_frame start[NH_SYS];
    fluid_frames(start, NH_SYS, 4, 5.75, 2000);
    mdf_model *m = argon_model(NH_RC, 1);
    mdf_batch *b = NULL;
    TU_CALL(mdf_batch_create, start, NH_SYS, NULL, &b);
    TU_CALL(mdf_batch_thermalize, b, NH_T, 5, 0);
    run_params p = run_params_init();
    p.d.dt_fs = 4.0;
    p.d.temperature_K = NH_T;
    tu_param(&p.m, "langevin.friction_per_fs", 0.02);
    run_stage(b, m, "langevin", &p, 1000, 1.0, NULL, 1);
    for (int i = 0; i < NH_SYS; i++) {
        TU_CALL(mdf_batch_get_frame, b, (size_t)i, &f[i]);
        mdf_frame_free(&start[i]);
    }
    mdf_batch_destroy(b);
    mdf_model_destroy(m);
}

static void print_nhc(const char *what, double dt, const nhc_result *r)
{
    printf("# NHC %s dt %.0f fs: max |dH| %.3e eV, rms %.3e eV, bound %.3e eV; <K> %.4f eV (Nf kT/2 %.4f, %+.2f%%)\n",
           what, dt, r->max_dev, r->rms_dev, r->bound, r->ke_mean, r->kbar, 100.0 * (r->ke_mean / r->kbar - 1.0));
}

/* The order of the method: argon clusters of 20 atoms with every pair
 * interacting (no cutoff: the force step of a truncated potential at rc
 * adds an O(dt) random walk to every integrator's energy, which would blur
 * the dt² law). */
static void test_nose_hoover_order(void **state)
{
    (void)state;
    mdf_frame f[NH_SYS];
    double box[9] = {9, 0, 0, 0, 9, 0, 0, 0, 9};
    int open[3] = {0, 0, 0}, zs[] = {18};
    for (int i = 0; i < NH_SYS; i++) {
        f[i] = tu_random(20, box, open, 3.5, zs, 1, 50 + (uint64_t)i);
        memset(f[i].cell, 0, sizeof f[i].cell);
    }
    nhc_result big = run_nhc(f, CL_RC, CL_T, 1, "nose_hoover", 4.0, 1500);
    nhc_result small = run_nhc(f, CL_RC, CL_T, 1, "nose_hoover", 2.0, 3000);
    print_nhc("clusters", 4.0, &big);
    print_nhc("clusters", 2.0, &small);
    double ratio = big.rms_dev / small.rms_dev;
    printf("# NHC clusters rms ratio dt/(dt/2) = %.2f (theory 4)\n", ratio);
    /* Only the order here: Verlet's harmonic bound does not cover the
     * chain's own splitting error, which dominates in these small systems
     * (Nf = 57, light Q_1); it is checked on the liquid below. */
    assert_true(ratio > 3.0 && ratio < 5.5);
    assert_true(fabs(small.ke_mean / small.kbar - 1.0) < 0.10);
    for (int i = 0; i < NH_SYS; i++) mdf_frame_free(&f[i]);
}

/* Conservation in a periodic liquid (cutoff 8.5 Å), from equilibrium. */
static void test_nose_hoover_liquid(void **state)
{
    (void)state;
    mdf_frame f[NH_SYS];
    equilibrated_fluid(f);
    nhc_result big = run_nhc(f, NH_RC, NH_T, 0, "nose_hoover", 4.0, 1500);
    nhc_result small = run_nhc(f, NH_RC, NH_T, 0, "nose_hoover", 2.0, 3000);
    print_nhc("liquid", 4.0, &big);
    print_nhc("liquid", 2.0, &small);
    /* The ratio is printed only: the force step of the truncated potential
     * at rc adds an O(dt) random walk at every cutoff crossing, which
     * dominates below dt ≈ 2 fs for every integrator (velocity Verlet on
     * these frames gives 4.5 for 4 -> 2 fs but 2.9 for 1 -> 0.5 fs). */
    printf("# NHC liquid rms ratio dt/(dt/2) = %.2f (cutoff crossings make it < 4; informative)\n",
           big.rms_dev / small.rms_dev);
    assert_true(big.max_dev <= big.bound);
    assert_true(small.max_dev <= small.bound);
    assert_true(fabs(big.ke_mean / big.kbar - 1.0) < 0.10);
    assert_true(fabs(small.ke_mean / small.kbar - 1.0) < 0.10);
    for (int i = 0; i < NH_SYS; i++) mdf_frame_free(&f[i]);
}

/* ---- 3. NPT against LAMMPS ------------------------------------------------------------ */

#define NPT_T 60.0
#define NPT_P 500.0 /* bar: far enough from 0 that a unit error in P0 shows */
#define NPT_A 5.42 /* near the 60 K, 500 bar lattice: short equilibration */
#define NPT_DT 5.0
#define NPT_RC 8.5
enum { NPT_SYS = 2, NPT_EQUIL = 800, NPT_STEPS = 3200, NPT_EVERY = 10, BLOCK_SAMPLES = 40 };
enum { LMP_EQUIL = 2000, LMP_STEPS = 12000, LMP_BLOCK_SAMPLES = 100 };

/* Mean of x and its error from the means of blocks of bs samples. */
static void block_stats(const double *x, int n, int bs, double *mean, double *err, double *sd)
{
    int nb = n / bs;
    double bm[1024] = {0}; /* (filled for nb < 1024 blocks; GCC cannot tell) */
    assert_true(nb >= 4 && nb <= 1024);
    for (int b = 0; b < nb; b++) bm[b] = mean_of(x + b * bs, bs);
    *mean = mean_of(bm, nb);
    *err = sem_of(bm, nb);
    double m = mean_of(x, nb * bs), s = 0.0;
    for (int i = 0; i < nb * bs; i++) s += (x[i] - m) * (x[i] - m);
    *sd = sqrt(s / (nb * bs - 1));
}

/* LAMMPS's volumes, every NPT_EVERY steps after equilibration; returns the
 * count (0: lmp failed). */
static int lammps_volumes(const char *dir, double *vol, int cap)
{
    char path[1024], cmd[2048];
    snprintf(path, sizeof path, "%s/in.npt", dir);
    FILE *fp = fopen(path, "w");
    assert_non_null(fp);
    fprintf(fp,
            "units metal\natom_style atomic\nboundary p p p\n"
            "lattice fcc %.17g\nregion box block 0 4 0 4 0 4\ncreate_box 1 box\ncreate_atoms 1 box\n"
            "mass 1 %.17g\npair_style lj/cut %.17g\npair_coeff 1 1 %.17g %.17g\n"
            "neighbor 1.0 bin\nneigh_modify every 1 delay 0 check yes\n"
            "velocity all create %.17g 4928459 mom yes dist gaussian\n"
            "timestep %.17g\nfix 1 all npt temp %.17g %.17g 0.1 iso %.17g %.17g 1.0\n"
            "thermo 1000\nrun %d\n"
            "fix 2 all print %d \"$(vol:%%.12g)\" file vol.txt screen no\nrun %d\n",
            NPT_A, mdf_element_mass(18), NPT_RC, AR_EPS, AR_SIG, NPT_T, NPT_DT * 1e-3, NPT_T, NPT_T, NPT_P, NPT_P,
            LMP_EQUIL, NPT_EVERY, LMP_STEPS);
    fclose(fp);
    snprintf(cmd, sizeof cmd,
             "cd '%s' && lmp -log none -screen screen.txt -in in.npt </dev/null >/dev/null 2>&1", dir);
    if (system(cmd) != 0) {
        snprintf(cmd, sizeof cmd, "tail -n 20 '%s/screen.txt' >&2", dir);
        if (system(cmd) != 0) fprintf(stderr, "(no LAMMPS output)\n");
        return 0;
    }
    snprintf(path, sizeof path, "%s/vol.txt", dir);
    fp = fopen(path, "r");
    if (!fp) return 0;
    char line[256];
    int n = 0;
    while (n < cap && fgets(line, sizeof line, fp))
        if (line[0] != '#' && sscanf(line, "%lf", &vol[n]) == 1) n++;
    fclose(fp);
    return n;
}

static void test_npt_vs_lammps(void **state)
{
    (void)state;
    if (!tu_have("lmp")) {
        printf("# lmp not found: NPT comparison skipped\n");
        skip();
    }
    char *dir = tu_tmpdir();
    int lcap = LMP_STEPS / NPT_EVERY + 1;
    double *lv = calloc((size_t)lcap, sizeof(double));
    int ln = lammps_volumes(dir, lv, lcap);
    if (ln < lcap - 1) fail_msg("LAMMPS gave %d volumes, expected %d (see %s)", ln, lcap - 1, dir);

    mdf_frame f[NPT_SYS];
    for (int i = 0; i < NPT_SYS; i++) f[i] = tu_fcc(4, 4, 4, NPT_A, 18, 0.0, 0.0, 1);
    mdf_model *m = argon_model(NPT_RC, 0);
    mdf_batch *b = NULL;
    TU_CALL(mdf_batch_create, f, NPT_SYS, NULL, &b);
    TU_CALL(mdf_batch_thermalize, b, NPT_T, 3, 0);
    run_params p = run_params_init();
    p.d.dt_fs = NPT_DT;
    p.d.temperature_K = NPT_T;
    p.d.seed = 21;
    tu_param(&p.m, "npt.pressure_bar", NPT_P);
    tu_param(&p.m, "npt.tau_p_fs", 500.0); /* volume correlation time ≈ τ_p: more independent samples */
    tu_param(&p.m, "npt.tau_t_fs", 100.0);
    tu_param(&p.m, "npt.compressibility_per_bar", 7e-5); /* solid argon near 60 K (B ≈ 1.4 GPa) */
    int cap = NPT_STEPS / NPT_EVERY;
    sampler *smp = sampler_new(NPT_SYS, cap, NPT_EQUIL + NPT_EVERY);
    run_stage(b, m, "npt", &p, NPT_EQUIL + NPT_STEPS, 1.0, smp, NPT_EVERY);

    double lm, le, lsd;
    block_stats(lv, ln, LMP_BLOCK_SAMPLES, &lm, &le, &lsd);
    double sys_mean[NPT_SYS], sd_sum = 0.0, err2 = 0.0;
    for (int s = 0; s < NPT_SYS; s++) {
        assert_int_equal(smp->n[s], cap);
        double e, sd;
        block_stats(smp->v + (size_t)s * (size_t)cap, cap, BLOCK_SAMPLES, &sys_mean[s], &e, &sd);
        err2 += e * e;
        sd_sum += sd;
        printf("# NPT system %d: <V> %.2f +- %.2f A^3, sd %.2f\n", s, sys_mean[s], e, sd);
    }
    /* Error of our mean: from the blocks, or from the spread of the
     * independent copies, whichever is larger. */
    double om = mean_of(sys_mean, NPT_SYS), osd = sd_sum / NPT_SYS;
    double oe = fmax(sqrt(err2) / NPT_SYS, sem_of(sys_mean, NPT_SYS));
    double kT = MDF_KB * NPT_T;
    printf("# NPT 256 Ar, %.0f K, %.0f bar, dt %.0f fs: ours <V> = %.2f +- %.2f A^3 (sd %.2f), LAMMPS fix npt <V> = "
           "%.2f +- %.2f A^3 (sd %.2f); diff %.2f, tolerance 4 sigma = %.2f A^3\n",
           NPT_T, NPT_P, NPT_DT, om, oe, osd, lm, le, lsd, om - lm, 4.0 * sqrt(oe * oe + le * le));
    printf("# NPT implied compressibility sd^2/(kT V): ours %.3e, LAMMPS %.3e 1/bar\n",
           osd * osd / (kT * om) * 1e-4 / 160.21766208, lsd * lsd / (kT * lm) * 1e-4 / 160.21766208);
    assert_true(fabs(om - lm) <= 4.0 * sqrt(oe * oe + le * le));
    assert_true(fabs(osd / lsd - 1.0) < 0.3);
    /* The conserved quantity stays bounded (no drift beyond the fluctuation
     * of the thermostat-free dynamics). */
    sampler_free(smp);
    mdf_batch_destroy(b);
    mdf_model_destroy(m);
    for (int i = 0; i < NPT_SYS; i++) mdf_frame_free(&f[i]);
    free(lv);
    tu_remove_tree(dir);
    free(dir);
}

/* ---- 4. invariance --------------------------------------------------------------------- */

enum { INV_SYS = 6, INV_STEPS = 25 };

static void invariance_frames(mdf_frame *f)
{
    double box[9] = {30, 0, 0, 0, 30, 0, 0, 0, 30};
    int open[3] = {0, 0, 0}, zs[] = {18};
    for (int i = 0; i < INV_SYS; i++) {
        if (i == 4) {
            f[i] = tu_random(40, box, open, 3.2, zs, 1, 77);
            memset(f[i].cell, 0, sizeof f[i].cell);
        } else {
            f[i] = tu_fcc(2 + (i == 2), 2 + (i == 2), 2 + (i == 2), 5.75, 18, 0.04 * (i % 2), 0.1, 300 + (uint64_t)i);
        }
    }
}

typedef struct inv_snapshot {
    mdf_frame frames[INV_SYS];
    mdf_system_view views[INV_SYS];
} inv_snapshot;

static void run_invariance(const mdf_frame *f, const char *integ, int nshards, const char *sched, inv_snapshot *out)
{
    tu_start(sched, 2, 0);
    mdf_model *m = argon_model(5.0, 1);
    mdf_batch_config bc;
    mdf_batch_config_init(&bc);
    bc.nshards = nshards;
    mdf_batch *b = NULL;
    TU_CALL(mdf_batch_create, f, INV_SYS, &bc, &b);
    TU_CALL(mdf_batch_thermalize, b, 150.0, 9, 0);
    run_params p = run_params_init();
    p.d.dt_fs = 4.0;
    p.d.temperature_K = 100.0;
    p.d.seed = 5;
    tu_param(&p.m, "langevin.friction_per_fs", 0.05);
    tu_param(&p.m, "bussi.tau_fs", 40.0);
    tu_param(&p.m, "nose_hoover.tau_fs", 60.0);
    tu_param(&p.m, "npt.pressure_bar", 500.0);
    tu_param(&p.m, "npt.tau_p_fs", 200.0); /* visible cell changes in a few steps */
    tu_param(&p.m, "npt.tau_t_fs", 40.0);
    run_stage(b, m, integ, &p, INV_STEPS, 0.5, NULL, 1);
    for (int i = 0; i < INV_SYS; i++) {
        TU_CALL(mdf_batch_get_frame, b, (size_t)i, &out->frames[i]);
        TU_CALL(mdf_batch_get_system, b, (size_t)i, &out->views[i]);
    }
    mdf_batch_destroy(b);
    mdf_model_destroy(m);
    tu_stop();
}

static void free_inv(inv_snapshot *s)
{
    for (int i = 0; i < INV_SYS; i++) mdf_frame_free(&s->frames[i]);
}

static void test_invariance(void **state)
{
    (void)state;
    mdf_frame f[INV_SYS];
    invariance_frames(f);
    const char *methods[] = {"langevin", "bussi", "nose_hoover", "npt"};
    const char *scheds[] = {"eager", "eager", "dmda", "dmda"};
    const int shards[] = {1, 3, 5, 1};
    tu_stop();
    for (int k = 0; k < 4; k++) {
        inv_snapshot ref, x;
        run_invariance(f, methods[k], 1, "eager", &ref);
        for (int r = 1; r < 4; r++) {
            run_invariance(f, methods[k], shards[r], scheds[r], &x);
            for (int i = 0; i < INV_SYS; i++) {
                size_t bytes = sizeof(double) * 3 * (size_t)f[i].natoms;
                const mdf_system_view *a = &ref.views[i], *c = &x.views[i];
                if (memcmp(x.frames[i].positions, ref.frames[i].positions, bytes) ||
                    memcmp(x.frames[i].velocities, ref.frames[i].velocities, bytes) ||
                    memcmp(a->cell, c->cell, sizeof a->cell) || a->kinetic_energy != c->kinetic_energy ||
                    a->extra_energy != c->extra_energy || a->potential_energy != c->potential_energy ||
                    a->step != c->step || a->stage_step != c->stage_step)
                    fail_msg("%s: system %d differs with %d shards under %s", methods[k], i, shards[r], scheds[r]);
            }
            free_inv(&x);
        }
        /* The systems moved, the thermostat did something, and NPT changed
         * the periodic cells but not the open cluster's. */
        assert_true(ref.views[0].step == INV_STEPS && ref.views[0].stage_step == INV_STEPS);
        assert_true(ref.views[0].extra_energy != 0.0);
        if (strcmp(methods[k], "npt") == 0) {
            assert_true(ref.views[0].cell[0] != f[0].cell[0]);
            assert_true(ref.views[0].cell[0] == ref.views[0].cell[4]); /* isotropic */
            assert_true(memcmp(ref.views[4].cell, f[4].cell, sizeof f[4].cell) == 0);
            printf("# npt: cell a of system 0 went %.6f -> %.6f A in %d steps\n", f[0].cell[0], ref.views[0].cell[0],
                   INV_STEPS);
        }
        printf("# %s: identical with 1/3/5 shards under eager and dmda\n", methods[k]);
        free_inv(&ref);
    }
    for (int i = 0; i < INV_SYS; i++) mdf_frame_free(&f[i]);
    tu_start(NULL, 2, 0);
}

/* ---- 5. bad parameters ------------------------------------------------------------------ */

typedef struct bad_case {
    const char *integ;
    const char *expect; /* substring of the message */
    void (*set)(run_params *p);
} bad_case;

static void bad_friction(run_params *p) { tu_param(&p->m, "friction_per_fs", 0.0); }
static void bad_temp_neg(run_params *p) { p->d.temperature_K = -5.0; }
static void bad_bussi_tau(run_params *p) { tu_param(&p->m, "tau_fs", -1.0); }
static void bad_temp_nan(run_params *p) { p->d.temperature_K = NAN; }
static void bad_nhc_temp(run_params *p) { p->d.temperature_K = 0.0; }
static void bad_nhc_tau(run_params *p) { tu_param(&p->m, "tau_fs", 0.0); }
static void bad_nhc_chain0(run_params *p) { tu_param(&p->m, "chain", 0); }
static void bad_nhc_chain9(run_params *p) { tu_param(&p->m, "chain", MDF_NHC_MAX + 1); }
static void bad_npt_p(run_params *p) { tu_param(&p->m, "pressure_bar", INFINITY); }
static void bad_npt_taup(run_params *p) { tu_param(&p->m, "tau_p_fs", 0.0); }
static void bad_npt_beta(run_params *p) { tu_param(&p->m, "compressibility_per_bar", -4.5e-5); }
static void bad_npt_taut(run_params *p) { tu_param(&p->m, "tau_t_fs", NAN); }
static void bad_npt_temp(run_params *p) { p->d.temperature_K = 0.0; }

/* ---- 6. the noise -------------------------------------------------------------- */

static uint32_t lcg_word(uint64_t *x)
{
    *x = *x * 6364136223846793005ull + 1442695040888963407ull;
    return (uint32_t)(*x >> 32);
}

static void test_normals(void **state)
{
    (void)state;
    /* ln((r + 1) / 2^32): exact at powers of two, within 2 ulp elsewhere. */
    assert_true(mdf_log_u32(0xffffffffu) == 0.0);
    assert_true(fabs(mdf_log_u32(0u) + 32.0 * log(2.0)) <= 1e-15 * 32.0 * log(2.0));
    uint64_t x = 2026;
    double worst_log = 0.0, worst_trig = 0.0;
    for (int i = 0; i < 2000000; i++) {
        uint32_t r = i < 4096 ? (uint32_t)i : i < 8192 ? 0xffffffffu - (uint32_t)(i - 4096) : lcg_word(&x);
        double u = ((double)r + 1.0) / 4294967296.0, ref = log(u);
        double rel = fabs(mdf_log_u32(r) - ref) / fabs(ref);
        if (ref != 0.0 && rel > worst_log) worst_log = rel;
        /* The reference angle carries its own rounding (≤ 1 ulp of 2π). */
        double s, c, a = 6.283185307179586 * ((double)r / 4294967296.0);
        mdf_sincos_turn_u32(r, &s, &c);
        double e = fmax(fabs(s - sin(a)), fabs(c - cos(a)));
        if (e > worst_trig) worst_trig = e;
    }
    printf("  ln: max relative error %.3g; sin/cos: max absolute error %.3g\n", worst_log, worst_trig);
    assert_true(worst_log < 4.5e-16);
    assert_true(worst_trig < 2.5e-15);
    const uint32_t quarter[4] = {0u, 1u << 30, 2u << 30, 3u << 30};
    const double want_s[4] = {0, 1, 0, -1}, want_c[4] = {1, 0, -1, 0};
    for (int q = 0; q < 4; q++) {
        double s, c;
        mdf_sincos_turn_u32(quarter[q], &s, &c);
        assert_true(fabs(s - want_s[q]) < 1e-15 && fabs(c - want_c[q]) < 1e-15);
    }
    /* Moments of 3 n normals against N(0, 1); 4 standard errors each. */
    const int n = 1000000;
    double m1 = 0, m2 = 0, m4 = 0, pair = 0, tail = 0;
    for (int i = 0; i < n; i++) {
        mdf_normal3 g = mdf_normal3_step(0x1234abcdull, i / 1000, (uint32_t)(i % 1000), MDF_RNG_LANGEVIN);
        for (int k = 0; k < 3; k++) {
            double v = g.g[k];
            m1 += v;
            m2 += v * v;
            m4 += v * v * v * v;
            tail += fabs(v) > 3.0;
        }
        pair += g.g[0] * g.g[1];
    }
    double N = 3.0 * n, p3 = erfc(3.0 / sqrt(2.0));
    m1 /= N, m2 /= N, m4 /= N, pair /= n, tail /= N;
    printf("  normals: mean %.2e, variance %.5f, 4th moment %.4f, pair correlation %.2e, P(|g|>3) %.6f (%.6f)\n",
           m1, m2, m4, pair, tail, p3);
    assert_true(fabs(m1) < 4.0 / sqrt(N));
    assert_true(fabs(m2 - 1.0) < 4.0 * sqrt(2.0 / N));
    assert_true(fabs(m4 - 3.0) < 4.0 * sqrt(96.0 / N));
    assert_true(fabs(pair) < 4.0 / sqrt((double)n));
    assert_true(fabs(tail - p3) < 4.0 * sqrt(p3 * (1.0 - p3) / N));
}

static void test_bad_parameters(void **state)
{
    (void)state;
    const bad_case cases[] = {
        {"langevin", "friction_per_fs", bad_friction},     {"langevin", "temperature_K", bad_temp_neg},
        {"bussi", "tau_fs", bad_bussi_tau},                 {"csvr", "temperature_K", bad_temp_nan},
        {"nose_hoover", "temperature_K", bad_nhc_temp},     {"nose_hoover", "tau_fs", bad_nhc_tau},
        {"nhc", "chain of method nose_hoover: 0 is out of range; give a value in [1, 5]", bad_nhc_chain0},
        {"nose_hoover", "chain of method nose_hoover: 6 is out of range; give a value in [1, 5]", bad_nhc_chain9},
        {"npt", "pressure_bar", bad_npt_p},                 {"npt", "tau_p_fs", bad_npt_taup},
        {"npt", "compressibility_per_bar", bad_npt_beta},   {"npt", "tau_t_fs", bad_npt_taut},
        {"npt", "temperature_K", bad_npt_temp},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        mdf_stage_config cfg;
        mdf_stage_config_init(&cfg);
        cfg.integrator = cases[k].integ;
        run_params p = run_params_init();
        cases[k].set(&p);
        cfg.params = p.d;
        tu_method_params(&cfg, &p.m);
        mdf_stage *s = NULL;
        mdf_error err;
        mdf_error_clear(&err);
        mdf_status st = mdf_stage_create(&cfg, &s, &err);
        printf("# %s: %s\n", cases[k].integ, err.message);
        assert_int_equal(st, MDF_ERR_INVALID);
        assert_null(s);
        if (!strstr(err.message, cases[k].expect))
            fail_msg("%s: message '%s' does not mention '%s'", cases[k].integ, err.message, cases[k].expect);
    }
    /* The defaults are valid for every method, and the names are registered. */
    const char *names[] = {"langevin", "nose_hoover", "bussi", "npt", "nvt-langevin", "nhc", "csvr"};
    for (size_t k = 0; k < sizeof names / sizeof names[0]; k++) {
        mdf_stage_config cfg;
        mdf_stage_config_init(&cfg);
        cfg.integrator = names[k];
        mdf_stage *s = NULL;
        TU_CALL(mdf_stage_create, &cfg, &s);
        mdf_stage_destroy(s);
        assert_int_equal(mdf_integrator_is_optimiser(names[k]), 0);
    }
}

/* ---- 7. temperatures and degrees of freedom ---------------------------------------------- */

/* The reported temperature is 2K/(Nf kB), and each thermostat holds the
 * kinetic energy at Nf kT/2, with Nf counted from what the method conserves
 * (theory, not the library's count):
 *   Langevin                        3 (N - frozen): its noise thermalises
 *                                   the total momentum;
 *   velocity Verlet, Nosé–Hoover,   3N - 3 without frozen atoms (the total
 *   Bussi, NPT                      momentum is conserved, and zero after a
 *                                   velocity draw); 3 (N - frozen) with some
 *                                   (they exert forces on the free atoms).
 * Systems: 13-atom argon clusters (open, every pair within the cutoff) and
 * 256-atom fcc argon crystals (periodic), each plain and with frozen atoms.
 * Every row's temperature must be 2K/(Nf kB) to round-off, and the long-run
 * mean temperature of each kind of system must lie within 4σ (+ the O(dt²)
 * bias, 1e-3 T) of the target: σ from block averages of each system's
 * series (10 blocks, each many correlation times long), combined over
 * independent systems, and never below the uncorrelated floor that the
 * canonical variance Var K = Nf (kT)²/2 gives. The measured variance of T
 * is printed against its canonical value 2T²/Nf. */

enum { DOF_CL = 8, DOF_CL_FROZEN = 3, DOF_EVERY = 5, DOF_BLOCKS = 10, DOF_BULK = 2, DOF_BULK_FROZEN = 32 };
#define DOF_CL_T 25.0
#define DOF_BULK_T 40.0
#define DOF_DT 5.0

static double theory_nf(int natoms, int nfrozen, int momentum)
{
    if (nfrozen > 0 || !momentum) return 3.0 * (natoms - nfrozen);
    return natoms > 1 ? 3.0 * natoms - 3.0 : 3.0;
}

/* Per-system series of the reported temperature, and the worst deviation
 * of a row's temperature from 2K/(Nf kB). */
typedef struct tseries {
    int nsys, cap, momentum;
    int64_t from;
    const int *nfrozen;
    int *n;
    double *t, worst;
    int bad;
} tseries;

static void sample_temperatures(void *user, const mdf_hook_event *ev)
{
    tseries *s = (tseries *)user;
    for (size_t r = 0; r < ev->nrows; r++) {
        const mdf_hook_row *w = &ev->rows[r];
        if (w->id < 0 || w->id >= s->nsys) {
            s->bad = 1;
            continue;
        }
        double nf = theory_nf(w->natoms, s->nfrozen[w->id], s->momentum), want = 2.0 * w->kinetic / (nf * MDF_KB);
        double dev = fabs(w->temperature - want) / fmax(want, 1e-300);
        if (!(dev <= s->worst)) s->worst = isnan(dev) ? INFINITY : dev;
        if (ev->step < s->from || s->n[w->id] >= s->cap) continue;
        s->t[(size_t)w->id * (size_t)s->cap + (size_t)s->n[w->id]++] = w->temperature;
    }
}

/* Runs integ on the batch (freeze hook on) and checks the systems [first,
 * first + count), which share natoms and nfrozen. */
typedef struct dof_group {
    const char *what;
    int first, count;
} dof_group;

static void check_dof_run(mdf_batch *b, mdf_model *m, const char *integ, int momentum, const run_params *p,
                          int64_t equil, int64_t steps, const int *nfrozen, const int *natoms, int nsys,
                          const dof_group *groups, int ngroups)
{
    int cap = (int)((steps - equil) / DOF_EVERY);
    tseries ts = {.nsys = nsys, .cap = cap, .momentum = momentum, .from = equil + DOF_EVERY, .nfrozen = nfrozen};
    ts.n = calloc((size_t)nsys, sizeof *ts.n);
    ts.t = calloc((size_t)nsys * (size_t)cap, sizeof(double));
    mdf_stage_config cfg;
    mdf_stage_config_init(&cfg);
    cfg.integrator = integ;
    cfg.max_steps = steps;
    cfg.skin = 0.5;
    cfg.params = p->d;
    tu_method_params(&cfg, &p->m);
    mdf_stage *s = NULL;
    TU_CALL(mdf_stage_create, &cfg, &s);
    mdf_hook *h = NULL;
    TU_CALL(mdf_hook_create_freeze, &h);
    TU_CALL(mdf_stage_add_hook, s, h);
    TU_CALL(mdf_hook_create_callback, "temperatures", MDF_AFTER_STEP, DOF_EVERY, sample_temperatures, &ts, &h);
    TU_CALL(mdf_stage_add_hook, s, h);
    mdf_stage_report rep;
    TU_CALL(mdf_stage_run, s, b, m, &rep);
    mdf_stage_destroy(s);
    assert_false(ts.bad);
    double T0 = p->d.temperature_K;
    printf("# %s (%.1f s): worst |T_row - 2K/(Nf kB)| / T = %.2e\n", integ, rep.wall_seconds, ts.worst);
    int ok = ts.worst < 1e-12;
    for (int g = 0; g < ngroups; g++) {
        const dof_group *gr = &groups[g];
        int na = natoms[gr->first], nfz = nfrozen[gr->first];
        double nf = theory_nf(na, nfz, momentum), err2 = 0.0, sum = 0.0, var = 0.0, means[64];
        int bs = cap / DOF_BLOCKS;
        assert_true(gr->count <= 64);
        for (int i = gr->first; i < gr->first + gr->count; i++) {
            assert_int_equal(ts.n[i], cap);
            const double *t = ts.t + (size_t)i * (size_t)cap;
            double bm[DOF_BLOCKS];
            for (int k = 0; k < DOF_BLOCKS; k++) bm[k] = mean_of(t + k * bs, bs);
            means[i - gr->first] = mean_of(bm, DOF_BLOCKS);
            double e = sem_of(bm, DOF_BLOCKS);
            err2 += e * e;
            sum += means[i - gr->first];
            for (int k = 0; k < DOF_BLOCKS * bs; k++) var += (t[k] - T0) * (t[k] - T0);
        }
        double mean = sum / gr->count, err = sqrt(err2) / gr->count;
        /* The spread of the independent systems, when larger; and never
         * below the floor of uncorrelated canonical samples. */
        if (gr->count > 2) err = fmax(err, sem_of(means, gr->count));
        double floor = T0 * sqrt(2.0 / nf) / sqrt((double)gr->count * DOF_BLOCKS * bs);
        err = fmax(err, floor);
        var /= (double)gr->count * DOF_BLOCKS * bs;
        double tol = 4.0 * err + 1e-3 * T0;
        int pass = fabs(mean - T0) <= tol;
        printf("#   %-34s N %3d, frozen %2d, Nf %3.0f: <T> = %.3f +- %.3f K (target %.1f, %+.2f sigma)%s; "
               "Var T %.3g K2 (canonical 2T2/Nf %.3g)\n",
               gr->what, na, nfz, nf, mean, err, T0, (mean - T0) / err, pass ? "" : "  FAIL", var,
               2.0 * T0 * T0 / nf);
        ok &= pass;
    }
    free(ts.n);
    free(ts.t);
    assert_true(ok);
}

/* DOF_CL 13-atom clusters plain, then DOF_CL with DOF_CL_FROZEN atoms frozen. */
static void check_dof_clusters(const char *integ, int momentum, run_params p)
{
    enum { N = 2 * DOF_CL };
    mdf_frame f[N];
    int nfrozen[N], natoms[N];
    for (int i = 0; i < N; i++) {
        f[i] = tu_fcc_cluster(5.30, 0.75, 0.05, 400 + (uint64_t)i);
        assert_int_equal(f[i].natoms, 13);
        natoms[i] = 13;
        nfrozen[i] = i < DOF_CL ? 0 : DOF_CL_FROZEN;
    }
    mdf_model *m = argon_model(8.5, 1);
    mdf_batch *b = NULL;
    TU_CALL(mdf_batch_create, f, N, NULL, &b);
    for (int i = DOF_CL; i < N; i++)
        for (int a = 0; a < DOF_CL_FROZEN; a++) TU_CALL(mdf_batch_set_frozen, b, (size_t)i, a, 1);
    TU_CALL(mdf_batch_thermalize, b, DOF_CL_T, 17, 0);
    p.d.temperature_K = DOF_CL_T;
    const dof_group groups[] = {{"13-atom clusters", 0, DOF_CL}, {"13-atom clusters, 3 frozen", DOF_CL, DOF_CL}};
    check_dof_run(b, m, integ, momentum, &p, 1000, 9000, nfrozen, natoms, N, groups, 2);
    mdf_batch_destroy(b);
    mdf_model_destroy(m);
    for (int i = 0; i < N; i++) mdf_frame_free(&f[i]);
}

/* DOF_BULK fcc crystals of 256 atoms plain, then DOF_BULK with the
 * DOF_BULK_FROZEN atoms of the plane z = 0 frozen. */
static void check_dof_bulk(const char *integ, int momentum, run_params p, int64_t steps)
{
    enum { N = 2 * DOF_BULK };
    mdf_frame f[N];
    int nfrozen[N], natoms[N];
    for (int i = 0; i < N; i++) {
        f[i] = tu_fcc(4, 4, 4, 5.30, 18, 0.0, 0.02, 500 + (uint64_t)i);
        natoms[i] = (int)f[i].natoms;
        nfrozen[i] = i < DOF_BULK ? 0 : DOF_BULK_FROZEN;
    }
    mdf_model *m = argon_model(6.0, 1); /* r_list 6.5 A: three cells across the 21.2 A box */
    mdf_batch *b = NULL;
    TU_CALL(mdf_batch_create, f, N, NULL, &b);
    for (int i = DOF_BULK; i < N; i++) {
        int n = 0;
        for (int64_t a = 0; a < f[i].natoms; a++)
            if (fabs(f[i].positions[3 * a + 2]) < 0.5) {
                TU_CALL(mdf_batch_set_frozen, b, (size_t)i, a, 1);
                n++;
            }
        assert_int_equal(n, DOF_BULK_FROZEN);
    }
    TU_CALL(mdf_batch_thermalize, b, 2.0 * DOF_BULK_T, 19, 0); /* half goes into the potential energy */
    p.d.temperature_K = DOF_BULK_T;
    const dof_group groups[] = {{"fcc 4x4x4 crystals", 0, DOF_BULK},
                                {"fcc 4x4x4 crystals, a plane frozen", DOF_BULK, DOF_BULK}};
    check_dof_run(b, m, integ, momentum, &p, steps / 5, steps, nfrozen, natoms, N, groups, 2);
    mdf_batch_destroy(b);
    mdf_model_destroy(m);
    for (int i = 0; i < N; i++) mdf_frame_free(&f[i]);
}

static run_params dof_params(void)
{
    run_params p = run_params_init();
    p.d.dt_fs = DOF_DT;
    p.d.seed = 31;
    tu_param(&p.m, "langevin.friction_per_fs", 0.01);
    tu_param(&p.m, "bussi.tau_fs", 100.0);
    tu_param(&p.m, "nose_hoover.tau_fs", 200.0);
    tu_param(&p.m, "nose_hoover.chain", 3);
    tu_param(&p.m, "npt.pressure_bar", 0.0);
    tu_param(&p.m, "npt.tau_p_fs", 1000.0);
    tu_param(&p.m, "npt.tau_t_fs", 100.0);
    tu_param(&p.m, "npt.compressibility_per_bar", 7e-5);
    return p;
}

static void test_dof_langevin(void **state)
{
    (void)state;
    check_dof_clusters("langevin", 0, dof_params());
    check_dof_bulk("langevin", 0, dof_params(), 6000);
}

static void test_dof_bussi(void **state)
{
    (void)state;
    check_dof_clusters("bussi", 1, dof_params());
    check_dof_bulk("bussi", 1, dof_params(), 6000);
}

static void test_dof_nose_hoover(void **state)
{
    (void)state;
    check_dof_clusters("nose_hoover", 1, dof_params());
    check_dof_bulk("nose_hoover", 1, dof_params(), 6000);
}

/* NPT's thermostat (Bussi) on the crystals; clusters run under it at
 * constant volume. */
static void test_dof_npt(void **state)
{
    (void)state;
    check_dof_clusters("npt", 1, dof_params());
    check_dof_bulk("npt", 1, dof_params(), 3000);
}

int main(void)
{
    tu_start(NULL, 2, 0);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_normals),
        cmocka_unit_test(test_bad_parameters),
        cmocka_unit_test(test_langevin_canonical),
        cmocka_unit_test(test_bussi_canonical),
        cmocka_unit_test(test_nose_hoover_order),
        cmocka_unit_test(test_nose_hoover_liquid),
        cmocka_unit_test(test_invariance),
        cmocka_unit_test(test_npt_vs_lammps),
        cmocka_unit_test(test_dof_langevin),
        cmocka_unit_test(test_dof_bussi),
        cmocka_unit_test(test_dof_nose_hoover),
        cmocka_unit_test(test_dof_npt),
    };
    if (getenv("MDF_TEST_FILTER")) cmocka_set_test_filter(getenv("MDF_TEST_FILTER"));
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    tu_stop();
    return rc;
}
