/* mdflow tests — NVE velocity Verlet: energy conservation within a derived
 * bound, dt² scaling of the error, results independent of shard count and
 * scheduler, and Maxwell–Boltzmann draws.
 *
 * The bound. For a harmonic mode of frequency ω, velocity Verlet conserves
 * the shadow energy H̃ = p²/2m + ½mω²x²(1 − ω²dt²/4), so the true energy
 * H = H̃ + ½mω²x²·ω²dt²/4 departs from its start by at most (ωdt)²/4 of the
 * mode's energy. Summing over the 3N modes of a liquid, each holding about
 * kT, |ΔE| ≤ Σ_k kT (ω_k dt)²/4 = 3N kT (ω_E dt)²/4, where the Einstein
 * frequency ω_E² = Σ_k ω_k² / 3N = (1/3N) Σ_i tr(∂²U/∂r_i²)/m_i is computed
 * from the configuration: tr(∂²U/∂r_i²) = Σ_j φ''(r_ij) + 2φ'(r_ij)/r_ij.
 * The sum assumes all modes in phase, so it is conservative for the
 * harmonic part; anharmonicity is what the test checks it against. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "testutil.h"

#define AR_EPS 0.0104
#define AR_SIG 3.40
#define AR_RC 8.5

static mdf_model *argon_model(void)
{
    mdf_lj_config lj = tu_argon(AR_RC, 1);
    mdf_model *m = NULL;
    TU_CALL(mdf_model_create_lj, &lj, &m);
    return m;
}

/* Reads "Step System Time PotEng KinEng TotEng Temp" rows. */
static int read_energies(FILE *fp, double *tot, int max)
{
    rewind(fp);
    char line[512];
    int n = 0;
    while (fgets(line, sizeof line, fp) && n < max) {
        long long step, sys;
        double t, pe, ke, te, temp;
        if (sscanf(line, "%lld %lld %lf %lf %lf %lf %lf", &step, &sys, &t, &pe, &ke, &te, &temp) == 7) tot[n++] = te;
    }
    return n;
}

typedef struct nve_run {
    double max_dev, rms_dev, bound;
} nve_run;

/* Liquid argon (256 atoms at 0.021 Å⁻³), melted from fcc, then `steps`
 * steps of dt fs with the total energy logged at every step. */
static nve_run run_liquid(const mdf_frame *start, double dt, int steps)
{
    mdf_model *m = argon_model();
    mdf_batch *b = NULL;
    TU_CALL(mdf_batch_create, start, 1, NULL, &b);
    FILE *log = tmpfile();
    mdf_md_config md;
    mdf_md_config_init(&md);
    md.dt_fs = dt;
    md.steps = steps;
    md.thermo_every = 1;
    md.thermo_per_system = 1;
    md.thermo = log;
    TU_CALL(mdf_md_run, b, m, &md, NULL);
    double *e = malloc(sizeof(double) * (size_t)(steps + 1));
    int n = read_energies(log, e, steps + 1);
    assert_int_equal(n, steps + 1);
    nve_run r = {0};
    for (int k = 0; k < n; k++) {
        double d = e[k] - e[0];
        r.max_dev = fmax(r.max_dev, fabs(d));
        r.rms_dev += d * d;
    }
    r.rms_dev = sqrt(r.rms_dev / n);
    mdf_system_view v;
    TU_CALL(mdf_batch_get_system, b, 0, &v);
    double kT = 2.0 * v.kinetic_energy / (3.0 * (double)start->natoms - 3.0);
    /* Shifted LJ has the same φ' and φ'' as the plain one. */
    double omega2 = tu_lj_einstein_omega2(start, AR_EPS, AR_SIG, AR_RC);
    r.bound = 3.0 * (double)start->natoms * kT * omega2 * pow(mdf_fs_to_internal(dt), 2) / 4.0;
    free(e);
    fclose(log);
    mdf_batch_destroy(b);
    mdf_model_destroy(m);
    return r;
}

static mdf_frame melted_liquid(void)
{
    mdf_frame f = tu_fcc(4, 4, 4, 5.75, 18, 0.0, 0.05, 21);
    mdf_model *m = argon_model();
    mdf_batch *b = NULL;
    TU_CALL(mdf_batch_create, &f, 1, NULL, &b);
    TU_CALL(mdf_batch_thermalize, b, 300.0, 5, 0);
    mdf_md_config md;
    mdf_md_config_init(&md);
    md.dt_fs = 4.0;
    md.steps = 600;
    TU_CALL(mdf_md_run, b, m, &md, NULL);
    mdf_frame out;
    TU_CALL(mdf_batch_get_frame, b, 0, &out);
    mdf_batch_destroy(b);
    mdf_model_destroy(m);
    mdf_frame_free(&f);
    return out;
}

static void test_nve_conservation(void **state)
{
    (void)state;
    mdf_frame liquid = melted_liquid();
    nve_run big = run_liquid(&liquid, 4.0, 500);
    nve_run small = run_liquid(&liquid, 2.0, 1000);
    printf("# NVE dt 4 fs: max |dE| %.3e eV, rms %.3e eV, bound %.3e eV\n", big.max_dev, big.rms_dev, big.bound);
    printf("# NVE dt 2 fs: max |dE| %.3e eV, rms %.3e eV, bound %.3e eV\n", small.max_dev, small.rms_dev, small.bound);
    assert_true(big.max_dev <= big.bound);
    assert_true(small.max_dev <= small.bound);
    /* Second-order method: halving dt divides the fluctuation by ~4. */
    double ratio = big.rms_dev / small.rms_dev;
    printf("# rms ratio dt/(dt/2) = %.2f (theory 4)\n", ratio);
    assert_true(ratio > 3.0 && ratio < 5.5);
    mdf_frame_free(&liquid);
}

/* ---- invariance ------------------------------------------------------------ */

static void mixed_batch(mdf_frame *f, int n)
{
    double box[9] = {30, 0, 0, 0, 30, 0, 0, 0, 30};
    int open[3] = {0, 0, 0}, zs[] = {18};
    for (int i = 0; i < n; i++) {
        if (i % 3 == 0) {
            f[i] = tu_fcc(4, 4, 4 + i % 2, 5.3, 18, 0.05 * (i % 2), 0.05, 100 + (uint64_t)i);
        } else {
            f[i] = tu_random(13 + 17 * i, box, open, 3.2, zs, 1, 200 + (uint64_t)i);
            memset(f[i].cell, 0, sizeof f[i].cell);
        }
    }
}

typedef struct snapshot {
    size_t n;
    mdf_frame *frames;
} snapshot;

static snapshot run_mixed(const mdf_frame *f, int n, int nshards, const char *sched)
{
    tu_start(sched, 2, 0);
    mdf_model *m = argon_model();
    mdf_batch_config bc;
    mdf_batch_config_init(&bc);
    bc.nshards = nshards;
    mdf_batch *b = NULL;
    TU_CALL(mdf_batch_create, f, (size_t)n, &bc, &b);
    TU_CALL(mdf_batch_thermalize, b, 60.0, 42, 0);
    mdf_md_config md;
    mdf_md_config_init(&md);
    md.dt_fs = 5.0;
    md.steps = 40;
    md.chunk_atoms = 200; /* crystals span several model tasks */
    TU_CALL(mdf_md_run, b, m, &md, NULL);
    snapshot s = {.n = (size_t)n, .frames = calloc((size_t)n, sizeof(mdf_frame))};
    for (int i = 0; i < n; i++) TU_CALL(mdf_batch_get_frame, b, (size_t)i, &s.frames[i]);
    mdf_batch_destroy(b);
    mdf_model_destroy(m);
    tu_stop();
    return s;
}

static void free_snapshot(snapshot *s)
{
    for (size_t i = 0; i < s->n; i++) mdf_frame_free(&s->frames[i]);
    free(s->frames);
}

/* Bit-for-bit identical trajectories whatever the shard count and the
 * scheduler: every system's arithmetic happens in a fixed order. */
static void test_shards_and_schedulers(void **state)
{
    (void)state;
    enum { N = 9 };
    mdf_frame f[N];
    mixed_batch(f, N);
    tu_stop();
    snapshot ref = run_mixed(f, N, 1, "eager");
    const char *scheds[] = {"eager", "lws", "dmda"};
    const int shards[] = {1, 3, 9};
    for (int s = 0; s < 3; s++)
        for (int k = 0; k < 3; k++) {
            if (s == 0 && k == 0) continue;
            snapshot x = run_mixed(f, N, shards[k], scheds[s]);
            for (int i = 0; i < N; i++) {
                size_t bytes = sizeof(double) * 3 * (size_t)f[i].natoms;
                if (memcmp(x.frames[i].positions, ref.frames[i].positions, bytes) ||
                    memcmp(x.frames[i].velocities, ref.frames[i].velocities, bytes) ||
                    memcmp(x.frames[i].forces, ref.frames[i].forces, bytes) ||
                    x.frames[i].energy != ref.frames[i].energy)
                    fail_msg("system %d differs with %d shards under %s", i, shards[k], scheds[s]);
            }
            free_snapshot(&x);
        }
    /* And the systems really moved. */
    assert_true(memcmp(ref.frames[0].positions, f[0].positions, sizeof(double) * 3) != 0);
    free_snapshot(&ref);
    for (int i = 0; i < N; i++) mdf_frame_free(&f[i]);
    tu_start(NULL, 2, 0);
}

/* Draws depend on (seed, system id, atom) only; momentum is removed; the
 * temperature over many systems matches the target within its statistical
 * error (relative sd sqrt(2/dof)). */
static void test_maxwell_boltzmann(void **state)
{
    (void)state;
    enum { N = 200, NA = 50 };
    double box[9] = {25, 0, 0, 0, 25, 0, 0, 0, 25};
    int open[3] = {0, 0, 0}, zs[] = {18, 36};
    mdf_frame *f = calloc(N, sizeof *f);
    for (int i = 0; i < N; i++) f[i] = tu_random(NA, box, open, 2.5, zs, 2, 300 + (uint64_t)i);
    double *first = NULL;
    for (int shards = 1; shards <= 7; shards += 6) {
        mdf_batch_config bc;
        mdf_batch_config_init(&bc);
        bc.nshards = shards;
        mdf_batch *b = NULL;
        TU_CALL(mdf_batch_create, f, N, &bc, &b);
        const double T = 100.0;
        TU_CALL(mdf_batch_thermalize, b, T, 7, 0);
        TU_CALL(mdf_batch_sync, b);
        double ke = 0.0, dof = 0.0;
        double *vel = malloc(sizeof(double) * 3 * N * NA);
        for (size_t i = 0; i < N; i++) {
            mdf_frame g;
            TU_CALL(mdf_batch_get_frame, b, i, &g);
            double p[3] = {0, 0, 0};
            for (int a = 0; a < NA; a++)
                for (int q = 0; q < 3; q++) {
                    p[q] += g.masses[a] * g.velocities[3 * a + q];
                    ke += 0.5 * g.masses[a] * g.velocities[3 * a + q] * g.velocities[3 * a + q];
                }
            for (int q = 0; q < 3; q++) assert_true(fabs(p[q]) < 1e-12);
            memcpy(vel + 3 * NA * i, g.velocities, sizeof(double) * 3 * NA);
            dof += 3.0 * NA - 3.0;
            mdf_frame_free(&g);
        }
        double t = 2.0 * ke / (dof * MDF_KB);
        double sd = T * sqrt(2.0 / dof);
        printf("# %d shards: T = %.3f K (target %.1f, sd %.3f)\n", shards, t, T, sd);
        assert_true(fabs(t - T) < 4.0 * sd);
        if (!first) first = vel;
        else {
            assert_memory_equal(first, vel, sizeof(double) * 3 * N * NA);
            free(vel);
        }
        mdf_batch_destroy(b);
    }
    free(first);
    for (int i = 0; i < N; i++) mdf_frame_free(&f[i]);
    free(f);
}

/* LAMMPS's default velocity distribution (velocity create ... dist
 * uniform): each component uniform with the Maxwell-Boltzmann variance. */
static double kurtosis(const double *v, size_t n)
{
    double m2 = 0.0, m4 = 0.0;
    for (size_t k = 0; k < n; k++) {
        m2 += v[k] * v[k];
        m4 += v[k] * v[k] * v[k] * v[k];
    }
    return (m4 / (double)n) / ((m2 / (double)n) * (m2 / (double)n));
}

/* Draws at T into a batch of the n frames f with the shard count and
 * distribution given; returns every component in units of its atom's
 * sqrt(kB T / m), and the temperature over 3 N_atoms - 3 per system (3 for
 * a lone atom, whose momentum stays) in *temp. */
static double *draw_components(const mdf_frame *f, size_t n, int shards, mdf_velocity_dist dist, double T,
                               double *temp)
{
    mdf_batch_config bc;
    mdf_batch_config_init(&bc);
    bc.nshards = shards;
    mdf_batch *b = NULL;
    TU_CALL(mdf_batch_create, f, n, &bc, &b);
    TU_CALL(mdf_batch_thermalize_dist, b, T, 11, 0, dist);
    TU_CALL(mdf_batch_sync, b);
    size_t total = 0, at = 0;
    for (size_t i = 0; i < n; i++) total += 3 * (size_t)f[i].natoms;
    double *u = malloc(sizeof(double) * total), ke = 0.0, dof = 0.0;
    for (size_t i = 0; i < n; i++) {
        mdf_frame g;
        TU_CALL(mdf_batch_get_frame, b, i, &g);
        for (int32_t k = 0; k < 3 * g.natoms; k++) {
            double v = g.velocities[k], m = g.masses[k / 3];
            ke += 0.5 * m * v * v;
            u[at++] = v / sqrt(MDF_KB * T / m);
        }
        dof += g.natoms > 1 ? 3.0 * g.natoms - 3.0 : 3.0;
        mdf_frame_free(&g);
    }
    mdf_batch_destroy(b);
    *temp = 2.0 * ke / (dof * MDF_KB);
    return u;
}

/* From theory: the temperature matches the target within its statistical
 * error; the components' kurtosis E[v^4]/E[v^2]^2 is 9/5 (the normal's is
 * 3, checked on the default draw as a control); a lone atom's components
 * (no momentum removed) fill [-sqrt(3), sqrt(3)] standard deviations and
 * never leave it; the draws do not depend on the shard count. */
static void test_uniform_velocities(void **state)
{
    (void)state;
    enum { N = 200, NA = 50, NLONE = 4000 };
    const double T = 100.0;
    double box[9] = {25, 0, 0, 0, 25, 0, 0, 0, 25};
    int open[3] = {0, 0, 0}, zs[] = {18, 36};
    mdf_frame *f = calloc(N, sizeof *f), *lone = calloc(NLONE, sizeof *lone);
    for (int i = 0; i < N; i++) f[i] = tu_random(NA, box, open, 2.5, zs, 2, 900 + (uint64_t)i);
    for (int i = 0; i < NLONE; i++) lone[i] = tu_random(1, box, open, 2.5, zs, 2, 5000 + (uint64_t)i);
    const size_t nu = 3 * (size_t)N * NA, nl = 3 * (size_t)NLONE;
    double t1, t7, tg, tl, tlg;
    double *u1 = draw_components(f, N, 1, MDF_VELOCITY_UNIFORM, T, &t1);
    double *u7 = draw_components(f, N, 7, MDF_VELOCITY_UNIFORM, T, &t7);
    double *g = draw_components(f, N, 1, MDF_VELOCITY_GAUSSIAN, T, &tg);
    double *ul = draw_components(lone, NLONE, 3, MDF_VELOCITY_UNIFORM, T, &tl);
    double *gl = draw_components(lone, NLONE, 3, MDF_VELOCITY_GAUSSIAN, T, &tlg);
    double sd = T * sqrt(2.0 / (N * (3.0 * NA - 3.0))), sdl = T * sqrt(2.0 / nl);
    double worst = 0.0, worst_g = 0.0;
    for (size_t k = 0; k < nl; k++) worst = fmax(worst, fabs(ul[k])), worst_g = fmax(worst_g, fabs(gl[k]));
    printf("# %d systems of %d atoms: uniform T = %.3f K, gaussian %.3f K (target %.1f, sd %.3f); "
           "kurtosis uniform %.4f, gaussian %.4f\n", N, NA, t1, tg, T, sd, kurtosis(u1, nu), kurtosis(g, nu));
    printf("# %d lone atoms: uniform T = %.3f K, gaussian %.3f K (sd %.3f); kurtosis %.4f and %.4f; "
           "largest |v| %.6f and %.3f sd (sqrt(3) = %.6f)\n", NLONE, tl, tlg, sdl, kurtosis(ul, nl),
           kurtosis(gl, nl), worst, worst_g, sqrt(3.0));
    assert_memory_equal(u1, u7, sizeof(double) * nu); /* whatever the shards */
    assert_true(fabs(t1 - T) < 4.0 * sd && fabs(tg - T) < 4.0 * sd);
    assert_true(fabs(tl - T) < 4.0 * sdl);
    /* Removing a system's momentum mixes a little of every other atom into
     * each component: u_i = (1 - m_i/M) W_i - sum_j sqrt(m_i m_j) W_j / M,
     * whose kurtosis is 3 - 1.2 (1 - m_i/M)^2, about 1.8 + 2.4 / NA.
     * Sample kurtosis sd: about 0.007 (30,000 components) and 0.01
     * (12,000 lone atoms, no removal: exactly 9/5 expected). */
    assert_true(fabs(kurtosis(u1, nu) - (1.8 + 2.4 / NA)) < 0.03);
    assert_true(fabs(kurtosis(ul, nl) - 1.8) < 0.05);
    assert_true(fabs(kurtosis(g, nu) - 3.0) < 0.3);
    assert_true(worst <= sqrt(3.0) * (1.0 + 1e-12) && worst > 0.999 * sqrt(3.0));
    assert_true(worst_g > sqrt(3.0) + 1.0); /* the normal's tails */
    free(u1), free(u7), free(g), free(ul), free(gl);
    mdf_batch *b = NULL;
    TU_CALL(mdf_batch_create, f, 1, NULL, &b);
    mdf_error err;
    mdf_error_clear(&err);
    assert_int_equal(mdf_batch_thermalize_dist(b, T, 1, 0, (mdf_velocity_dist)7, &err), MDF_ERR_INVALID);
    assert_non_null(strstr(err.message, "distribution"));
    mdf_batch_destroy(b);
    for (int i = 0; i < N; i++) mdf_frame_free(&f[i]);
    for (int i = 0; i < NLONE; i++) mdf_frame_free(&lone[i]);
    free(f);
    free(lone);
}

/* Bad run parameters are refused with a message naming them. */
static void test_bad_parameters(void **state)
{
    (void)state;
    mdf_frame f = tu_fcc(4, 4, 4, 5.3, 18, 0.0, 0.0, 1);
    mdf_batch *b = NULL;
    TU_CALL(mdf_batch_create, &f, 1, NULL, &b);
    mdf_model *m = argon_model();
    mdf_md_config md;
    mdf_md_config_init(&md);
    mdf_error err;
    mdf_error_clear(&err);
    md.dt_fs = -1.0;
    assert_int_equal(mdf_md_run(b, m, &md, NULL, &err), MDF_ERR_INVALID);
    assert_non_null(strstr(err.message, "time step"));
    mdf_md_config_init(&md);
    md.integrator = "leapfrog-of-doom";
    mdf_error_clear(&err);
    assert_int_equal(mdf_md_run(b, m, &md, NULL, &err), MDF_ERR_INVALID);
    assert_non_null(strstr(err.message, "leapfrog-of-doom"));
    mdf_error_clear(&err);
    assert_int_equal(mdf_batch_thermalize(b, -5.0, 1, 0, &err), MDF_ERR_INVALID);
    mdf_model_destroy(m);
    mdf_batch_destroy(b);
    mdf_frame_free(&f);
}

int main(void)
{
    tu_start(NULL, 2, 0);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_nve_conservation),
        cmocka_unit_test(test_shards_and_schedulers),
        cmocka_unit_test(test_maxwell_boltzmann),
        cmocka_unit_test(test_uniform_velocities),
        cmocka_unit_test(test_bad_parameters),
    };
    int failed = cmocka_run_group_tests(tests, NULL, NULL);
    tu_stop();
    return failed ? 1 : 0;
}
