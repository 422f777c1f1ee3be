/* mdflow tests — batch layout, sharding and input validation. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "testutil.h"

static mdf_frame small_system(int n, double offset, int periodic)
{
    double cell[9] = {12, 0, 0, 0, 12, 0, 0, 0, 12};
    int pbc[3] = {periodic, periodic, periodic};
    int zs[] = {18};
    mdf_frame f = tu_random(n, cell, pbc, 1.0, zs, 1, (uint64_t)n * 7919u);
    for (int64_t a = 0; a < 3 * f.natoms; a++) f.positions[a] += offset;
    f.has_cell = periodic;
    if (!periodic) memset(f.cell, 0, sizeof f.cell);
    return f;
}

static void free_frames(mdf_frame *f, size_t n)
{
    for (size_t i = 0; i < n; i++) mdf_frame_free(&f[i]);
}

/* Every system comes back exactly as it went in, whatever the sharding. */
static void test_round_trip_and_layout(void **state)
{
    (void)state;
    const int sizes[] = {3, 7, 1, 12, 5};
    mdf_frame in[5];
    for (int i = 0; i < 5; i++) in[i] = small_system(sizes[i], 0.1 * i, i % 2);
    for (int nshards = 1; nshards <= 5; nshards++) {
        mdf_batch_config cfg;
        mdf_batch_config_init(&cfg);
        cfg.nshards = nshards;
        cfg.extra_atoms = 10;
        cfg.extra_systems = 2;
        mdf_batch *b = NULL;
        TU_CALL(mdf_batch_create, in, 5, &cfg, &b);
        assert_int_equal(mdf_batch_nsystems(b), 5);
        assert_int_equal(mdf_batch_natoms(b), 28);
        assert_int_equal(mdf_batch_nshards(b), nshards);
        TU_CALL(mdf_batch_sync, b);
        for (size_t i = 0; i < 5; i++) {
            mdf_frame out;
            TU_CALL(mdf_batch_get_frame, b, i, &out);
            assert_int_equal(out.natoms, sizes[i]);
            assert_memory_equal(out.positions, in[i].positions, sizeof(double) * 3 * (size_t)sizes[i]);
            assert_memory_equal(out.numbers, in[i].numbers, sizeof(int32_t) * (size_t)sizes[i]);
            assert_memory_equal(out.cell, in[i].cell, sizeof out.cell);
            assert_int_equal(out.pbc[0], in[i].pbc[0]);
            for (int64_t a = 0; a < out.natoms; a++) assert_true(out.masses[a] == mdf_element_mass(18));
            char id[8];
            snprintf(id, sizeof id, "%zu", i);
            assert_string_equal(mdf_frame_get_info(&out, "mdf_system_id"), id);
            mdf_system_view v;
            TU_CALL(mdf_batch_get_system, b, i, &v);
            assert_int_equal(v.id, (int64_t)i);
            assert_int_equal(v.natoms, sizes[i]);
            assert_int_equal(v.step, 0);
            mdf_frame_free(&out);
        }
        mdf_error err;
        mdf_error_clear(&err);
        mdf_frame dummy;
        assert_int_equal(mdf_batch_get_frame(b, 5, &dummy, &err), MDF_ERR_INVALID);
        mdf_batch_destroy(b);
    }
    free_frames(in, 5);
}

/* The default shard count gives each shard enough atoms and never more
 * shards than systems. */
static void test_default_shards(void **state)
{
    (void)state;
    assert_int_equal(mdf_batch_default_shards(1, 1000000), 1);
    assert_int_equal(mdf_batch_default_shards(1000, 100), 1);
    int n = mdf_batch_default_shards(1000, 100000);
    assert_true(n >= 1 && n <= 4 * (mdf_runtime_cpu_workers() + mdf_runtime_cuda_workers()) && 100000 / n >= 2048);
}

static void expect_error(mdf_frame *frames, size_t n, mdf_status code, const char *needle1, const char *needle2)
{
    mdf_batch *b = NULL;
    mdf_error err;
    mdf_error_clear(&err);
    mdf_status st = mdf_batch_create(frames, n, NULL, &b, &err);
    if (st != code) fail_msg("expected status %d, got %d (%s)", code, st, err.message);
    assert_null(b);
    if (!strstr(err.message, needle1) || (needle2 && !strstr(err.message, needle2)))
        fail_msg("message '%s' lacks '%s' / '%s'", err.message, needle1, needle2 ? needle2 : "");
}

static void test_bad_input(void **state)
{
    (void)state;
    mdf_frame f[2];
    f[0] = small_system(4, 0.0, 1);
    f[1] = small_system(5, 0.0, 1);

    /* Zero and negative masses. */
    f[1].masses = calloc(5, sizeof(double));
    for (int a = 0; a < 5; a++) f[1].masses[a] = 39.9;
    f[1].masses[2] = 0.0;
    expect_error(f, 2, MDF_ERR_INVALID, "system 1, atom 2", "mass");
    f[1].masses[2] = -1.0;
    expect_error(f, 2, MDF_ERR_INVALID, "system 1, atom 2", "positive");
    free(f[1].masses);
    f[1].masses = NULL;

    /* Unknown elements. */
    f[0].numbers[3] = 0;
    expect_error(f, 2, MDF_ERR_INVALID, "system 0, atom 3", "unknown element");
    f[0].numbers[3] = 200;
    expect_error(f, 2, MDF_ERR_INVALID, "system 0, atom 3", "unknown element");
    f[0].numbers[3] = 18;

    /* Atoms on top of each other, directly and through the periodic boundary. */
    memcpy(f[1].positions + 3 * 4, f[1].positions + 3 * 1, 3 * sizeof(double));
    expect_error(f, 2, MDF_ERR_PHYSICS, "system 1: atoms 1 and 4", "on top of each other");
    for (int k = 0; k < 3; k++) f[1].positions[3 * 4 + k] = f[1].positions[3 * 1 + k] + 12.0;
    expect_error(f, 2, MDF_ERR_PHYSICS, "atoms 1 and 4", "on top of each other");
    mdf_frame_free(&f[1]);
    f[1] = small_system(5, 0.0, 1);

    /* Periodic cell without volume. */
    f[0].cell[8] = 0.0;
    expect_error(f, 2, MDF_ERR_PHYSICS, "system 0", "zero volume");
    f[0].cell[8] = 12.0;
    f[0].cell[6] = 12.0; /* c = a + (0, 0, 12)... still independent */
    mdf_batch *ok = NULL;
    TU_CALL(mdf_batch_create, f, 2, NULL, &ok);
    mdf_batch_destroy(ok);
    for (int k = 0; k < 3; k++) f[0].cell[6 + k] = f[0].cell[k] + f[0].cell[3 + k]; /* coplanar */
    expect_error(f, 2, MDF_ERR_PHYSICS, "system 0", "volume");

    /* A system without atoms; and an empty batch. */
    mdf_frame empty;
    memset(&empty, 0, sizeof empty);
    expect_error(&empty, 1, MDF_ERR_INVALID, "system 0 has no atoms", NULL);
    expect_error(f, 0, MDF_ERR_INVALID, "no systems", NULL);
    free_frames(f, 2);
}

/* A periodic cube of 22^3 atoms 2 Å apart, jittered, stored in a scrambled
 * order, from -22 Å on: negative and positive coordinates. */
static mdf_frame large_grid(void)
{
    const int side = 22;
    const double a = 2.0, L = side * a;
    mdf_frame f;
    TU_CALL(mdf_frame_alloc, &f, (int64_t)side * side * side, 0, 0, 0);
    uint64_t seed = 20261128;
    for (int64_t k = 0; k < f.natoms; k++) {
        /* a stride coprime with the atom count scrambles the storage order */
        int64_t c = (k * 7919) % f.natoms;
        int64_t g[3] = {c / (side * side), (c / side) % side, c % side};
        for (int d = 0; d < 3; d++) f.positions[3 * k + d] = g[d] * a - L / 2 + 0.2 * (tu_rand(&seed) - 0.5);
        f.numbers[k] = 18;
    }
    for (int d = 0; d < 3; d++) f.cell[4 * d] = L;
    f.has_cell = 1;
    f.pbc[0] = f.pbc[1] = f.pbc[2] = 1;
    return f;
}

/* The overlap search on a large system: none in the clean grid; a duplicate
 * anywhere in the storage order, or one a lattice vector away (through
 * the boundary), is found and named, lower index first. */
static void test_overlap_large(void **state)
{
    (void)state;
    mdf_frame f = large_grid();
    mdf_batch *b = NULL;
    TU_CALL(mdf_batch_create, &f, 1, NULL, &b);
    mdf_batch_destroy(b);
    double *x = f.positions;
    const double saved[3] = {x[3 * 9001], x[3 * 9001 + 1], x[3 * 9001 + 2]};
    for (int d = 0; d < 3; d++) x[3 * 9001 + d] = x[3 * 17 + d] + (d == 0 ? 3e-7 : 0.0);
    expect_error(&f, 1, MDF_ERR_PHYSICS, "system 0: atoms 17 and 9001", "on top of each other");
    /* the same atom one period up along y, less 2e-7 Å: across the face */
    for (int d = 0; d < 3; d++) x[3 * 9001 + d] = x[3 * 4242 + d] + (d == 1 ? f.cell[4] - 2e-7 : 0.0);
    expect_error(&f, 1, MDF_ERR_PHYSICS, "system 0: atoms 4242 and 9001", "on top of each other");
    /* 2e-6 Å apart: beyond the 1e-6 Å tolerance, accepted */
    for (int d = 0; d < 3; d++) x[3 * 9001 + d] = x[3 * 4242 + d] + (d == 2 ? 2e-6 : 0.0);
    TU_CALL(mdf_batch_create, &f, 1, NULL, &b);
    mdf_batch_destroy(b);
    memcpy(x + 3 * 9001, saved, sizeof saved);
    mdf_frame_free(&f);
}

/* Open clusters may have no cell; ids given by the file are kept. */
static void test_open_and_ids(void **state)
{
    (void)state;
    mdf_frame f = small_system(6, 0.0, 0);
    mdf_error err;
    mdf_error_clear(&err);
    TU_CALL(mdf_frame_set_info, &f, "mdf_system_id", "42");
    mdf_batch *b = NULL;
    TU_CALL(mdf_batch_create, &f, 1, NULL, &b);
    TU_CALL(mdf_batch_sync, b);
    mdf_system_view v;
    TU_CALL(mdf_batch_get_system, b, 0, &v);
    assert_int_equal(v.id, 42);
    assert_int_equal(v.pbc[0] | v.pbc[1] | v.pbc[2], 0);
    mdf_batch_destroy(b);
    mdf_frame_free(&f);
}

int main(void)
{
    tu_start(NULL, 2, 0);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_trip_and_layout),
        cmocka_unit_test(test_default_shards),
        cmocka_unit_test(test_bad_input),
        cmocka_unit_test(test_overlap_large),
        cmocka_unit_test(test_open_and_ids),
    };
    int failed = cmocka_run_group_tests(tests, NULL, NULL);
    tu_stop();
    return failed ? 1 : 0;
}
