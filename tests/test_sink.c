/* mdflow tests — sinks and snapshot hooks: round trips through the host,
 * device and HDF5 sinks, the overflow chain (a write goes to the first sink
 * with room; when all are full the write, or the run, stops with an error and
 * what fitted stays), draining, truncation, the every-N snapshot hook (its
 * snapshot at step k equals the state of the same run stopped at step k, bit
 * for bit) and the converged-snapshot hook (each system exactly once, at the
 * step and with the fmax at which it left its stage).
 *
 * Expected values come from the batch itself (what was written must come
 * back unchanged) and from the definition of convergence. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "testutil.h"

#define FMAX 0.05

static mdf_model *argon_model(void)
{
    mdf_lj_config lj = tu_argon(8.5, 1);
    mdf_model *m = NULL;
    TU_CALL(mdf_model_create_lj, &lj, &m);
    return m;
}

/* n argon clusters of different sizes (13 to ~60 atoms), jittered. */
static mdf_batch *clusters(int n, int nshards, double T)
{
    mdf_frame *f = calloc((size_t)n, sizeof *f);
    for (int i = 0; i < n; i++) f[i] = tu_fcc_cluster(5.26, 0.75 + 0.12 * (i % 5), 0.08, 40 + (uint64_t)i);
    mdf_batch_config bc;
    mdf_batch_config_init(&bc);
    bc.nshards = nshards;
    mdf_batch *b = NULL;
    TU_CALL(mdf_batch_create, f, (size_t)n, &bc, &b);
    if (T > 0.0) TU_CALL(mdf_batch_thermalize, b, T, 5, 0);
    for (int i = 0; i < n; i++) mdf_frame_free(&f[i]);
    free(f);
    return b;
}

static mdf_stage *md_stage(int64_t steps)
{
    mdf_stage_config cfg;
    mdf_stage_config_init(&cfg);
    cfg.integrator = "velocity_verlet";
    cfg.max_steps = steps;
    cfg.params.dt_fs = 2.0;
    mdf_stage *s = NULL;
    TU_CALL(mdf_stage_create, &cfg, &s);
    return s;
}

static mdf_stage *fire_stage(int64_t steps)
{
    mdf_stage_config cfg;
    mdf_stage_config_init(&cfg);
    cfg.integrator = "fire";
    cfg.max_steps = steps;
    mdf_stage *s = NULL;
    TU_CALL(mdf_stage_create, &cfg, &s);
    TU_CALL(mdf_stage_add_criterion, s, MDF_CRITERION_FMAX, FMAX);
    return s;
}

static void run(mdf_stage *s, mdf_batch *b, mdf_model *m)
{
    mdf_stage_report rep;
    TU_CALL(mdf_stage_run, s, b, m, &rep);
}

static int64_t info_int(const mdf_frame *f, const char *key)
{
    const char *v = mdf_frame_get_info(f, key);
    assert_non_null(v);
    return strtoll(v, NULL, 10);
}

/* HDF5 files hold velocities in Å/fs: converting back costs an ulp. */
static int velocity_ulps = 0;

/* Stored frame `got` equals system i of the (synchronised) batch bit for bit
 * (velocities to velocity_ulps). */
static void assert_same_system(const mdf_batch *b, size_t i, const mdf_frame *got)
{
    mdf_frame want;
    mdf_system_view v;
    TU_CALL(mdf_batch_get_frame, b, i, &want);
    TU_CALL(mdf_batch_get_system, b, i, &v);
    assert_int_equal(got->natoms, want.natoms);
    assert_memory_equal(got->positions, want.positions, sizeof(double) * 3 * (size_t)want.natoms);
    if (!velocity_ulps)
        assert_memory_equal(got->velocities, want.velocities, sizeof(double) * 3 * (size_t)want.natoms);
    for (int64_t a = 0; a < 3 * want.natoms; a++)
        assert_true(fabs(got->velocities[a] - want.velocities[a]) <= 4e-16 * fabs(want.velocities[a]));
    assert_memory_equal(got->forces, want.forces, sizeof(double) * 3 * (size_t)want.natoms);
    assert_memory_equal(got->numbers, want.numbers, sizeof(int32_t) * (size_t)want.natoms);
    for (int64_t a = 0; a < want.natoms; a++)
        assert_true(got->masses[a] == (want.masses ? want.masses[a] : mdf_element_mass(want.numbers[a])));
    assert_true(got->energy == v.potential_energy);
    assert_int_equal(info_int(got, "mdf_system_id"), v.id);
    assert_int_equal(info_int(got, "mdf_step"), v.step);
    assert_int_equal(info_int(got, "mdf_status"), v.status);
    mdf_frame_free(&want);
}

/* ---- round trips ----------------------------------------------------------------- */

static void round_trip(mdf_sink *sink)
{
    mdf_model *m = argon_model();
    mdf_batch *b = clusters(7, 2, 30.0);
    run(md_stage(5), b, m);
    TU_CALL(mdf_batch_sync, b);
    uint8_t mask[7] = {1, 0, 1, 1, 0, 1, 1};
    TU_CALL(mdf_sink_write, sink, b, mask, 2.0);
    assert_int_equal(mdf_sink_length(sink), 5);
    TU_CALL(mdf_sink_write, sink, b, NULL, 2.0);
    assert_int_equal(mdf_sink_length(sink), 12);
    int64_t k = 0;
    for (size_t i = 0; i < 7; i++) {
        if (!mask[i]) continue;
        mdf_frame f;
        TU_CALL(mdf_sink_read, sink, k++, &f);
        assert_same_system(b, i, &f);
        mdf_frame_free(&f);
    }
    for (size_t i = 0; i < 7; i++) {
        mdf_frame f;
        TU_CALL(mdf_sink_read, sink, k++, &f);
        assert_same_system(b, i, &f);
        mdf_frame_free(&f);
    }
    mdf_frame f;
    mdf_error err;
    assert_int_equal(mdf_sink_read(sink, 12, &f, &err), MDF_ERR_INVALID);
    assert_non_null(strstr(err.message, "12"));
    /* Truncation forgets the later systems only. */
    TU_CALL(mdf_sink_truncate, sink, 3);
    assert_int_equal(mdf_sink_length(sink), 3);
    TU_CALL(mdf_sink_read, sink, 2, &f);
    assert_same_system(b, 3, &f);
    mdf_frame_free(&f);
    mdf_batch_destroy(b);
    mdf_model_destroy(m);
}

static void test_host_round_trip(void **state)
{
    (void)state;
    mdf_sink *s = NULL;
    TU_CALL(mdf_sink_create_host, 100, 10000, &s);
    assert_string_equal(mdf_sink_kind(s), "host");
    assert_int_equal(mdf_sink_capacity(s), 100);
    round_trip(s);
    mdf_sink_destroy(s);
}

static void test_device_round_trip(void **state)
{
    (void)state;
    mdf_sink *s = NULL;
    TU_CALL(mdf_sink_create_device, 100, 10000, &s);
    assert_string_equal(mdf_sink_kind(s), "device");
    round_trip(s);
    mdf_sink_destroy(s);
}

static void test_hdf5_round_trip(void **state)
{
    (void)state;
    char *dir = tu_tmpdir();
    char path[512];
    snprintf(path, sizeof path, "%s/s.h5", dir);
    mdf_sink *s = NULL;
    TU_CALL(mdf_sink_create_hdf5, path, NULL, &s);
    assert_int_equal(mdf_sink_capacity(s), -1);
    velocity_ulps = 1;
    round_trip(s);
    velocity_ulps = 0;
    TU_CALL(mdf_sink_close, s);
    mdf_sink_destroy(s);
    /* The file alone gives the same systems back. */
    mdf_frame_list l;
    mdf_frame_list_init(&l);
    TU_CALL(mdf_read_hdf5_structures, path, &l);
    assert_int_equal(l.count, 3);
    mdf_frame_list_free(&l);
    tu_remove_tree(dir);
    free(dir);
}

/* ---- chains ------------------------------------------------------------------------ */

static void test_chain_overflow(void **state)
{
    (void)state;
    mdf_model *m = argon_model();
    mdf_batch *b = clusters(6, 1, 0.0);
    TU_CALL(mdf_batch_sync, b);
    mdf_sink *parts[3] = {NULL, NULL, NULL};
    TU_CALL(mdf_sink_create_host, 2, 100000, &parts[0]);
    TU_CALL(mdf_sink_create_device, 1, 100000, &parts[1]);
    TU_CALL(mdf_sink_create_host, 1, 100000, &parts[2]);
    mdf_sink *chain = NULL;
    TU_CALL(mdf_sink_chain, parts, 3, &chain);
    assert_int_equal(mdf_sink_capacity(chain), 4);
    mdf_error err;
    mdf_error_clear(&err);
    assert_int_equal(mdf_sink_write(chain, b, NULL, 1.0, &err), MDF_ERR_IO);
    assert_non_null(strstr(err.message, "full"));
    assert_non_null(strstr(err.message, "2 of 6"));
    /* What fitted is stored, in order, across the three sinks. */
    assert_int_equal(mdf_sink_length(chain), 4);
    for (int64_t i = 0; i < 4; i++) {
        mdf_frame f;
        TU_CALL(mdf_sink_read, chain, i, &f);
        assert_same_system(b, (size_t)i, &f);
        mdf_frame_free(&f);
    }
    /* Draining the chain into a big host sink empties it, in order. */
    mdf_sink *big = NULL;
    TU_CALL(mdf_sink_create_host, 10, 100000, &big);
    TU_CALL(mdf_sink_drain, chain, big);
    assert_int_equal(mdf_sink_length(chain), 0);
    assert_int_equal(mdf_sink_length(big), 4);
    for (int64_t i = 0; i < 4; i++) {
        mdf_frame f;
        TU_CALL(mdf_sink_read, big, i, &f);
        assert_same_system(b, (size_t)i, &f);
        mdf_frame_free(&f);
    }
    mdf_sink_destroy(big);
    mdf_sink_destroy(chain);
    mdf_batch_destroy(b);
    mdf_model_destroy(m);
}

static void test_bad_arguments(void **state)
{
    (void)state;
    mdf_sink *s = NULL;
    mdf_error err;
    assert_int_equal(mdf_sink_create_host(0, 10, &s, &err), MDF_ERR_INVALID);
    assert_non_null(strstr(err.message, "at least one system"));
    assert_int_equal(mdf_sink_chain(NULL, 0, &s, &err), MDF_ERR_INVALID);
    assert_int_equal(mdf_hook_create_snapshot(NULL, 5, &(mdf_hook *){NULL}, &err), MDF_ERR_INVALID);
    TU_CALL(mdf_sink_create_host, 1, 10, &s);
    mdf_hook *h = NULL;
    assert_int_equal(mdf_hook_create_snapshot(s, 0, &h, &err), MDF_ERR_INVALID);
    assert_non_null(strstr(err.message, "every >= 1"));
    mdf_sink_destroy(s);
    assert_int_equal(mdf_sink_create_hdf5("/nonexistent-dir-mdflow/x.h5", NULL, &s, &err), MDF_ERR_IO);
    assert_non_null(strstr(err.message, "/nonexistent-dir-mdflow/x.h5"));
}

/* ---- snapshot hooks ------------------------------------------------------------------ */

/* Snapshots every 5 steps of a 20-step run; the snapshot at step 10 equals
 * the same run stopped at step 10. */
static void snapshot_every(mdf_sink *sink)
{
    mdf_model *m = argon_model();
    mdf_batch *b = clusters(9, 3, 40.0);
    mdf_stage *s = md_stage(20);
    mdf_hook *h = NULL;
    TU_CALL(mdf_hook_create_snapshot, sink, 5, &h);
    TU_CALL(mdf_stage_add_hook, s, h);
    run(s, b, m);
    mdf_stage_destroy(s);
    /* Steps 0, 5, 10, 15, 20: five snapshots of nine systems. */
    assert_int_equal(mdf_sink_length(sink), 45);
    mdf_batch *ref = clusters(9, 3, 40.0);
    run(s = md_stage(10), ref, m);
    mdf_stage_destroy(s);
    TU_CALL(mdf_batch_sync, ref);
    int found = 0;
    for (int64_t i = 0; i < 45; i++) {
        mdf_frame f;
        TU_CALL(mdf_sink_read, sink, i, &f);
        int64_t step = info_int(&f, "mdf_step");
        assert_true(step % 5 == 0 && step <= 20);
        if (step == 10) {
            int64_t id = info_int(&f, "mdf_system_id");
            assert_same_system(ref, (size_t)id, &f);
            found++;
        }
        mdf_frame_free(&f);
    }
    assert_int_equal(found, 9);
    mdf_batch_destroy(ref);
    mdf_batch_destroy(b);
    mdf_model_destroy(m);
}

static void test_snapshot_host(void **state)
{
    (void)state;
    mdf_sink *s = NULL;
    TU_CALL(mdf_sink_create_host, 45, 45 * 64, &s);
    snapshot_every(s);
    mdf_sink_destroy(s);
}

static void test_snapshot_device(void **state)
{
    (void)state;
    mdf_sink *s = NULL;
    TU_CALL(mdf_sink_create_device, 45, 45 * 64, &s);
    snapshot_every(s);
    mdf_sink_destroy(s);
}

static void test_snapshot_hdf5(void **state)
{
    (void)state;
    char *dir = tu_tmpdir();
    char path[512];
    snprintf(path, sizeof path, "%s/snap.h5", dir);
    mdf_sink *s = NULL;
    TU_CALL(mdf_sink_create_hdf5, path, NULL, &s);
    velocity_ulps = 1;
    snapshot_every(s);
    velocity_ulps = 0;
    TU_CALL(mdf_sink_close, s);
    mdf_sink_destroy(s);
    tu_remove_tree(dir);
    free(dir);
}

/* A run whose sinks fill up stops with an error naming them; what was
 * stored stays and is whole. */
static void test_snapshot_run_overflow(void **state)
{
    (void)state;
    mdf_model *m = argon_model();
    mdf_batch *b = clusters(4, 1, 40.0);
    mdf_sink *parts[2] = {NULL, NULL};
    TU_CALL(mdf_sink_create_host, 5, 100000, &parts[0]);
    TU_CALL(mdf_sink_create_host, 3, 100000, &parts[1]);
    mdf_sink *chain = NULL;
    TU_CALL(mdf_sink_chain, parts, 2, &chain);
    mdf_stage *s = md_stage(50);
    mdf_hook *h = NULL;
    TU_CALL(mdf_hook_create_snapshot, chain, 1, &h);
    TU_CALL(mdf_stage_add_hook, s, h);
    mdf_error err;
    mdf_error_clear(&err);
    mdf_stage_report rep;
    assert_int_equal(mdf_stage_run(s, b, m, &rep, &err), MDF_ERR_IO);
    assert_non_null(strstr(err.message, "full"));
    assert_non_null(strstr(err.message, "host sink"));
    assert_true(rep.steps < 50);
    mdf_stage_destroy(s);
    assert_int_equal(mdf_sink_length(chain), 8);
    /* Step 0 fills the first sink with four systems; step 1 puts one in
     * it and three in the second; step 2 finds no room. */
    for (int64_t i = 0; i < 8; i++) {
        mdf_frame f;
        TU_CALL(mdf_sink_read, chain, i, &f);
        assert_int_equal(info_int(&f, "mdf_step"), i / 4);
        assert_int_equal(info_int(&f, "mdf_system_id"), i % 4);
        mdf_frame_free(&f);
    }
    mdf_sink_destroy(chain);
    mdf_batch_destroy(b);
    mdf_model_destroy(m);
}

/* Relaxation with a converged-snapshot hook: each system once, at the step
 * where it converged, with fmax <= the threshold, matching the batch. */
static void converged_once(int fused)
{
    const int n = 12;
    mdf_model *m = argon_model();
    mdf_batch *b = clusters(n, 3, 0.0);
    mdf_sink *sink = NULL;
    TU_CALL(mdf_sink_create_host, 3 * n, 3 * n * 64, &sink);
    mdf_stage *s = fire_stage(2000);
    mdf_hook *h = NULL;
    TU_CALL(mdf_hook_create_converged_snapshot, sink, &h);
    TU_CALL(mdf_stage_add_hook, s, h);
    if (fused) {
        /* relax + 30 MD steps: the hook belongs to the relaxation only. */
        mdf_stage *md = md_stage(30);
        TU_CALL(mdf_stage_add_criterion, md, MDF_CRITERION_STEPS, 30);
        TU_CALL(mdf_fuse, s, md, &s);
    }
    run(s, b, m);
    mdf_stage_destroy(s);
    TU_CALL(mdf_batch_sync, b);
    assert_int_equal(mdf_sink_length(sink), n);
    int seen[64] = {0};
    for (int64_t i = 0; i < n; i++) {
        mdf_frame f;
        TU_CALL(mdf_sink_read, sink, i, &f);
        int64_t id = info_int(&f, "mdf_system_id");
        assert_true(id >= 0 && id < n);
        assert_int_equal(seen[id]++, 0);
        assert_int_equal(info_int(&f, "mdf_status"), 1);
        /* Its forces are those at which it converged. */
        double fmax = 0.0;
        for (int64_t a = 0; a < f.natoms; a++) {
            const double *fa = f.forces + 3 * a;
            fmax = fmax > sqrt(fa[0] * fa[0] + fa[1] * fa[1] + fa[2] * fa[2])
                       ? fmax : sqrt(fa[0] * fa[0] + fa[1] * fa[1] + fa[2] * fa[2]);
        }
        assert_true(fmax <= FMAX);
        mdf_system_view v;
        TU_CALL(mdf_batch_get_system, b, (size_t)id, &v);
        if (!fused) {
            /* Relaxation only: the system has not moved since. */
            assert_int_equal(info_int(&f, "mdf_step"), v.step);
            assert_same_system(b, (size_t)id, &f);
        } else {
            assert_int_equal(v.status, 2);
            assert_int_equal(info_int(&f, "mdf_step") + 30, v.step);
        }
        mdf_frame_free(&f);
    }
    mdf_sink_destroy(sink);
    mdf_batch_destroy(b);
    mdf_model_destroy(m);
}

static void test_converged_once(void **state)
{
    (void)state;
    converged_once(0);
}

static void test_converged_once_fused(void **state)
{
    (void)state;
    converged_once(1);
}

static int setup(void **state)
{
    (void)state;
    tu_start(NULL, 2, 0);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    tu_stop();
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bad_arguments),     cmocka_unit_test(test_host_round_trip),
        cmocka_unit_test(test_device_round_trip), cmocka_unit_test(test_hdf5_round_trip),
        cmocka_unit_test(test_chain_overflow),    cmocka_unit_test(test_snapshot_host),
        cmocka_unit_test(test_snapshot_device),   cmocka_unit_test(test_snapshot_hdf5),
        cmocka_unit_test(test_snapshot_run_overflow), cmocka_unit_test(test_converged_once),
        cmocka_unit_test(test_converged_once_fused),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
