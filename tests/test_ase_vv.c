/* mdflow tests — velocity Verlet trajectories against ASE's VelocityVerlet
 * with ASE's LennardJones calculator.
 *
 * Three argon systems in one batch: a 55-atom fcc cluster without a cell
 * (open boundaries), a periodic 108-atom fcc box, and another whose atoms
 * start up to two periods outside the cell (unwrapped), all jittered, with
 * Maxwell–Boltzmann velocities at 60 K from mdf_batch_thermalize. The start
 * is written with mdf_xyz_write (numbers that read back to the identical
 * double); tests/ase_vv_check.py reads it with ase.io.read, attaches
 * LennardJones(sigma 3.4, epsilon 0.0104, rc 6.5) — ASE 3.22 with
 * smooth=False always shifts each pair energy to zero at rc, so our model
 * runs with shift on — and runs VelocityVerlet(timestep = 4 * units.fs) for
 * 100 steps; mdflow runs mdf_md_run for 100 steps of 4 fs, with one shard
 * and with one shard per system. Compared at the end: positions (nearest
 * periodic image), velocities, potential and kinetic energies.
 *
 * Tolerances. Both codes do the same arithmetic per step up to summation
 * order (pair forces summed in another order, ASE kicks momenta p = m v
 * where we kick v, and its v = p/m is 1 ulp off ours), so they start apart
 * by a few ulps (~1e-16 relative) and the difference grows with the
 * dynamics' sensitivity to perturbations (Lyapunov time of LJ argon near
 * melting ~ 1 ps; 100 steps are 0.4 ps, a growth of at most ~e^1 to e^3).
 * Measured with GCC -O2 on x86-64: up to 1.5e-14 Å in positions (the
 * unwrapped box, whose coordinates reach 30 Å), 1e-15 in velocities,
 * 4e-15 relative in the energies. The tolerances, 1e-10 Å in
 * positions, 1e-11 Å per internal time unit in velocities (|v| ~ 3e-2) and
 * 1e-10 relative in the energies, leave a factor > 10^4 for other compilers
 * (FMA contraction), libms and summation orders, while physics errors are
 * far above them: a time step off by only 1e-7 relative already moves the
 * atoms by 1e-7 Å after 100 steps, and a wrong unit, half kick, force or
 * energy shift by 1e-3 or more. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "testutil.h"

#define DT_FS 4.0
#define STEPS 100
#define SIGMA 3.40
#define EPSILON 0.0104
#define RC 6.5
#define TEMPERATURE 60.0

#define TOL_POS 1e-10   /* Å */
#define TOL_VEL 1e-11   /* Å per internal time unit */
#define TOL_ENERGY 1e-10 /* relative */

static const char *g_py;
static char *g_dir;

/* fcc lattice points within 1.42 a of a lattice site: 1 + 12 + 6 + 24 + 12
 * = 55 atoms, jittered, no cell. */
static mdf_frame fcc_cluster(double a, double jitter, uint64_t seed)
{
    mdf_frame f = tu_fcc_cluster(a, 1.42, jitter, seed);
    assert_int_equal(f.natoms, 55);
    return f;
}

#define NSYS 3

/* The cluster, the periodic box, and a second periodic box whose atoms lie
 * up to two periods outside the cell (unwrapped coordinates, as ASE's own
 * dynamics leaves them; ASE computes with them natively). */
static void make_start(mdf_frame frames[NSYS])
{
    frames[0] = fcc_cluster(5.26, 0.05, 11);
    frames[1] = tu_fcc(3, 3, 3, 5.26, 18, 0.0, 0.05, 12);
    frames[2] = tu_fcc(3, 3, 3, 5.30, 18, 0.0, 0.05, 13);
    uint64_t seed = 14;
    mdf_frame *f = &frames[2];
    for (int64_t i = 0; i < f->natoms; i++) {
        double n[3];
        for (int k = 0; k < 3; k++) n[k] = floor(5.0 * tu_rand(&seed)) - 2.0; /* -2..2 */
        for (int d = 0; d < 3; d++)
            f->positions[3 * i + d] += n[0] * f->cell[d] + n[1] * f->cell[3 + d] + n[2] * f->cell[6 + d];
    }
}

/* Difference a - b reduced to the nearest periodic image of frame f. */
static void image_diff(const mdf_frame *f, const double *a, const double *b, double d[3])
{
    for (int k = 0; k < 3; k++) d[k] = a[k] - b[k];
    if (!(f->pbc[0] || f->pbc[1] || f->pbc[2])) return;
    /* fractional coordinates: solve d = u · cell (cell rows), via the inverse */
    const double *h = f->cell;
    double det = h[0] * (h[4] * h[8] - h[5] * h[7]) - h[1] * (h[3] * h[8] - h[5] * h[6]) +
                 h[2] * (h[3] * h[7] - h[4] * h[6]);
    double inv[9] = {(h[4] * h[8] - h[5] * h[7]) / det, (h[2] * h[7] - h[1] * h[8]) / det,
                     (h[1] * h[5] - h[2] * h[4]) / det, (h[5] * h[6] - h[3] * h[8]) / det,
                     (h[0] * h[8] - h[2] * h[6]) / det, (h[2] * h[3] - h[0] * h[5]) / det,
                     (h[3] * h[7] - h[4] * h[6]) / det, (h[1] * h[6] - h[0] * h[7]) / det,
                     (h[0] * h[4] - h[1] * h[3]) / det};
    double u[3];
    for (int k = 0; k < 3; k++) u[k] = d[0] * inv[k] + d[1] * inv[3 + k] + d[2] * inv[6 + k];
    for (int k = 0; k < 3; k++) u[k] = f->pbc[k] ? rint(u[k]) : 0.0;
    for (int k = 0; k < 3; k++) d[k] -= u[0] * h[k] + u[1] * h[3 + k] + u[2] * h[6 + k];
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

/* Writes the start, runs ASE once; both MD runs below compare with it. */
static mdf_frame_list g_ase;
static mdf_frame g_start[NSYS];

static int setup_reference(void **state)
{
    (void)state;
    mdf_error err;
    mdf_error_clear(&err);
    /* Velocities come from mdflow's own draw, in a throwaway batch. */
    mdf_frame frames[NSYS];
    make_start(frames);
    mdf_batch_config bc;
    mdf_batch_config_init(&bc);
    bc.nshards = 1;
    mdf_batch *b = NULL;
    if (mdf_batch_create(frames, NSYS, &bc, &b, &err) != MDF_OK ||
        mdf_batch_thermalize(b, TEMPERATURE, 2024, 0, &err) != MDF_OK || mdf_batch_sync(b, &err) != MDF_OK) {
        fprintf(stderr, "setup: %s\n", err.message);
        return -1;
    }
    for (int s = 0; s < NSYS; s++) {
        memset(&g_start[s], 0, sizeof g_start[s]);
        if (mdf_batch_get_frame(b, (size_t)s, &g_start[s], &err) != MDF_OK || !g_start[s].velocities) {
            fprintf(stderr, "setup: no velocities in system %d: %s\n", s, err.message);
            return -1;
        }
    }
    mdf_batch_destroy(b);
    for (int s = 0; s < NSYS; s++) mdf_frame_free(&frames[s]);

    char start[1024], end[1024], cmd[4096];
    snprintf(start, sizeof start, "%s/start.xyz", g_dir);
    snprintf(end, sizeof end, "%s/ase_end.xyz", g_dir);
    if (mdf_xyz_write(start, g_start, NSYS, 0, &err) != MDF_OK) {
        fprintf(stderr, "setup: %s\n", err.message);
        return -1;
    }
    snprintf(cmd, sizeof cmd, "'%s' '%s/tests/ase_vv_check.py' '%s' '%s' %.17g %d %.17g %.17g %.17g", g_py,
             tu_srcdir(), start, end, DT_FS, STEPS, SIGMA, EPSILON, RC);
    int rc = system(cmd);
    if (rc != 0) {
        fprintf(stderr, "setup: ASE reference failed (status %d): %s\n", rc, cmd);
        return -1;
    }
    mdf_frame_list_init(&g_ase);
    if (mdf_xyz_read(end, &g_ase, &err) != MDF_OK || g_ase.count != NSYS) {
        fprintf(stderr, "setup: cannot read ASE's %s: %s\n", end, err.message);
        return -1;
    }
    return 0;
}

static int teardown_reference(void **state)
{
    (void)state;
    mdf_frame_list_free(&g_ase);
    for (int s = 0; s < NSYS; s++) mdf_frame_free(&g_start[s]);
    return 0;
}

static void run_and_compare(int nshards)
{
    mdf_lj_config cfg = tu_argon(RC, 1);
    mdf_model *m = NULL;
    TU_CALL(mdf_model_create_lj, &cfg, &m);
    mdf_batch_config bc;
    mdf_batch_config_init(&bc);
    bc.nshards = nshards;
    mdf_batch *b = NULL;
    TU_CALL(mdf_batch_create, g_start, NSYS, &bc, &b);
    assert_int_equal(mdf_batch_nshards(b), nshards);
    mdf_md_config mc;
    mdf_md_config_init(&mc);
    mc.dt_fs = DT_FS;
    mc.steps = STEPS;
    mdf_md_report rep;
    TU_CALL(mdf_md_run, b, m, &mc, &rep);
    printf("  shards %d: %lld steps, %lld neighbour-list rebuilds (summed over systems)\n", nshards,
           (long long)rep.steps, (long long)rep.list_rebuilds);
    /* The 55-atom cluster's surface atoms move more than skin/2 = 0.5 Å, so
     * the comparison also covers lists rebuilt during the run (the count
     * includes each system's first build). */
    assert_true(rep.list_rebuilds > NSYS);

    for (int s = 0; s < NSYS; s++) {
        const mdf_frame *ref = &g_ase.frames[s];
        mdf_frame out;
        memset(&out, 0, sizeof out);
        TU_CALL(mdf_batch_get_frame, b, (size_t)s, &out);
        mdf_system_view v;
        TU_CALL(mdf_batch_get_system, b, (size_t)s, &v);
        assert_int_equal(v.step, STEPS);
        assert_int_equal(ref->natoms, out.natoms);
        assert_non_null(ref->velocities);
        assert_true(ref->has_energy);

        double dx = 0.0, dv = 0.0, moved = 0.0, vmax = 0.0;
        for (int64_t i = 0; i < out.natoms; i++) {
            double d[3];
            image_diff(&out, out.positions + 3 * i, ref->positions + 3 * i, d);
            for (int k = 0; k < 3; k++) dx = fmax(dx, fabs(d[k]));
            image_diff(&out, out.positions + 3 * i, g_start[s].positions + 3 * i, d);
            moved = fmax(moved, sqrt(d[0] * d[0] + d[1] * d[1] + d[2] * d[2]));
            for (int k = 0; k < 3; k++) {
                dv = fmax(dv, fabs(out.velocities[3 * i + k] - ref->velocities[3 * i + k]));
                vmax = fmax(vmax, fabs(ref->velocities[3 * i + k]));
            }
        }
        double ke_ase = info_double(ref, "kinetic_energy");
        double de = tu_reldiff(v.potential_energy, ref->energy, 0.0);
        double dk = tu_reldiff(v.kinetic_energy, ke_ase, 0.0);
        printf("  shards %d system %d (%3lld atoms, %s%s): max displacement %.3f A | dx %.2e A | "
               "max|v| %.3e dv %.2e | Epot %.10f dE %.2e | Ekin %.10f dK %.2e\n",
               nshards, s, (long long)out.natoms, out.pbc[0] ? "periodic" : "open", s == 2 ? ", unwrapped" : "", moved, dx, vmax, dv,
               ref->energy, de, ke_ase, dk);
        /* The run must have moved the atoms for the comparison to mean anything. */
        assert_true(moved > 0.1);
        if (!(dx <= TOL_POS)) fail_msg("system %d: positions differ from ASE by %.3e A", s, dx);
        if (!(dv <= TOL_VEL)) fail_msg("system %d: velocities differ from ASE by %.3e", s, dv);
        if (!(de <= TOL_ENERGY))
            fail_msg("system %d: potential energy %.17g eV, ASE %.17g eV (rel %.2e)", s, v.potential_energy,
                     ref->energy, de);
        if (!(dk <= TOL_ENERGY))
            fail_msg("system %d: kinetic energy %.17g eV, ASE %.17g eV (rel %.2e)", s, v.kinetic_energy, ke_ase,
                     dk);
        mdf_frame_free(&out);
    }
    mdf_batch_destroy(b);
    mdf_model_destroy(m);
}

/* ASE's femtosecond in internal units equals ours (to the last bits), so
 * both sides take the same step. */
static void test_units(void **state)
{
    (void)state;
    double ase_fs = info_double(&g_ase.frames[0], "ase_fs");
    printf("  ase.units.fs %.17g, MDF_FS_INTERNAL %.17g\n", ase_fs, MDF_FS_INTERNAL);
    assert_true(tu_reldiff(ase_fs, MDF_FS_INTERNAL, 0.0) < 1e-15);
}

static void test_one_shard(void **state)
{
    (void)state;
    run_and_compare(1);
}

static void test_three_shards(void **state)
{
    (void)state;
    run_and_compare(3);
}

int main(void)
{
    g_py = tu_python_with("ase");
    if (!g_py) {
        fprintf(stderr, "no Python with ASE: skipping\n");
        return TU_SKIP;
    }
    g_dir = tu_tmpdir();
    tu_start(NULL, 2, 0);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_units),
        cmocka_unit_test(test_one_shard),
        cmocka_unit_test(test_three_shards),
    };
    int rc = cmocka_run_group_tests(tests, setup_reference, teardown_reference);
    tu_stop();
    if (rc == 0) tu_remove_tree(g_dir); /* kept for inspection on failure */
    free(g_dir);
    return rc;
}
