/* mdflow tests — fused stages (mdf_fuse): one model evaluation per step for
 * every sub-stage; systems migrate 0 -> 1 -> exit; each sub-stage moves only
 * its own systems; step budgets; and a fused run gives every system the
 * trajectory it gets when its stages run one after the other on it alone.
 *
 * The reference is the definition of fusing: the same methods run as plain
 * stages, one system per batch, one stage after the other. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "testutil.h"

#define NSYS 5
#define MD_STEPS 40
#define FMAX 0.01
#define ENTRY_T 20.0

static mdf_frame start_frame(int i)
{
    static const double radius[NSYS] = {0.75, 1.05, 1.25, 1.45, 0.9};
    return tu_fcc_cluster(5.26, radius[i], 0.08, 40 + (uint64_t)i);
}

static mdf_model *argon(void)
{
    mdf_lj_config lj = tu_argon(6.5, 1);
    mdf_model *m = NULL;
    TU_CALL(mdf_model_create_lj, &lj, &m);
    return m;
}

static mdf_batch *batch_of(const int *which, int n, int nshards)
{
    mdf_frame frames[NSYS];
    for (int k = 0; k < n; k++) {
        frames[k] = start_frame(which[k]);
        char id[16];
        snprintf(id, sizeof id, "%d", which[k]);
        TU_CALL(mdf_frame_set_info, &frames[k], "mdf_system_id", id);
    }
    mdf_batch_config bc;
    mdf_batch_config_init(&bc);
    bc.nshards = nshards;
    mdf_batch *b = NULL;
    TU_CALL(mdf_batch_create, frames, (size_t)n, &bc, &b);
    for (int k = 0; k < n; k++) mdf_frame_free(&frames[k]);
    return b;
}

/* Relaxation: FIRE to FMAX; budget > 0 also sets a step budget. */
static mdf_stage *relax_stage(int64_t budget)
{
    mdf_stage_config sc;
    mdf_stage_config_init(&sc);
    sc.integrator = "fire";
    sc.max_steps = 2000;
    sc.step_budget = budget;
    mdf_stage *s = NULL;
    TU_CALL(mdf_stage_create, &sc, &s);
    TU_CALL(mdf_stage_add_criterion, s, MDF_CRITERION_FMAX, FMAX);
    return s;
}

/* MD: velocity Verlet for exactly MD_STEPS steps, starting from velocities
 * drawn at ENTRY_T when a system arrives from the relaxation. */
static mdf_stage *md_stage(int32_t status)
{
    mdf_stage_config sc;
    mdf_stage_config_init(&sc);
    sc.integrator = "velocity_verlet";
    sc.status = status;
    sc.converged_status = status + 1;
    sc.params.dt_fs = 5.0;
    sc.params.seed = 9;
    sc.entry_temperature_K = ENTRY_T;
    sc.max_steps = MD_STEPS + 10;
    mdf_stage *s = NULL;
    TU_CALL(mdf_stage_create, &sc, &s);
    TU_CALL(mdf_stage_add_criterion, s, MDF_CRITERION_STEPS, MD_STEPS);
    return s;
}

typedef struct outcome {
    double pos[NSYS][3 * 64], vel[NSYS][3 * 64];
    double energy[NSYS];
    int64_t step[NSYS];
    int32_t status[NSYS], flags[NSYS];
    int natoms[NSYS];
} outcome;

static void collect(mdf_batch *b, outcome *o)
{
    for (size_t i = 0; i < mdf_batch_nsystems(b); i++) {
        mdf_frame f;
        mdf_system_view v;
        TU_CALL(mdf_batch_get_frame, b, i, &f);
        TU_CALL(mdf_batch_get_system, b, i, &v);
        memcpy(o->pos[v.id], f.positions, sizeof(double) * 3 * (size_t)f.natoms);
        memcpy(o->vel[v.id], f.velocities, sizeof(double) * 3 * (size_t)f.natoms);
        o->energy[v.id] = v.potential_energy;
        o->step[v.id] = v.step;
        o->status[v.id] = v.status;
        o->flags[v.id] = v.flags;
        o->natoms[v.id] = (int)f.natoms;
        mdf_frame_free(&f);
    }
}

/* The fused run on all systems at once. */
static void fused_run(const char *sched, int nshards, outcome *o, mdf_stage_report *rep)
{
    tu_start(sched, 2, 0);
    int all[NSYS] = {0, 1, 2, 3, 4};
    mdf_batch *b = batch_of(all, NSYS, nshards);
    mdf_model *m = argon();
    mdf_stage *s = NULL;
    TU_CALL(mdf_fuse, relax_stage(0), md_stage(1), &s);
    assert_int_equal(mdf_stage_nparts(s), 2);
    assert_int_equal(mdf_stage_exit_status(s), 2);
    TU_CALL(mdf_stage_run, s, b, m, rep);
    collect(b, o);
    mdf_stage_destroy(s);
    mdf_batch_destroy(b);
    mdf_model_destroy(m);
    tu_stop();
}

/* The same stages one after the other, each system in a batch of its own. */
static void sequential_runs(outcome *o)
{
    tu_start("eager", 2, 0);
    mdf_model *m = argon();
    for (int i = 0; i < NSYS; i++) {
        mdf_batch *b = batch_of(&i, 1, 1);
        mdf_stage *relax = relax_stage(0), *md = md_stage(1);
        mdf_stage_report r1, r2;
        TU_CALL(mdf_stage_run, relax, b, m, &r1);
        assert_int_equal(r1.converged, 1);
        TU_CALL(mdf_stage_run, md, b, m, &r2);
        assert_int_equal(r2.converged, 1);
        collect(b, o);
        mdf_stage_destroy(relax);
        mdf_stage_destroy(md);
        mdf_batch_destroy(b);
    }
    mdf_model_destroy(m);
    tu_stop();
}

static void test_one_evaluation_per_step_and_migration(void **state)
{
    (void)state;
    static outcome o;
    mdf_stage_report rep;
    fused_run("eager", 2, &o, &rep);
    printf("  fused: %lld steps, %lld model evaluations, %lld systems through both stages\n", (long long)rep.steps,
           (long long)rep.model_evaluations, (long long)rep.converged);
    /* Step 0 plus one per step, for both sub-stages together. */
    assert_int_equal(rep.model_evaluations, rep.steps + 1);
    assert_int_equal(rep.converged, NSYS);
    assert_int_equal(rep.remaining, 0);
    assert_int_equal(rep.budget_exits, 0);
    for (int i = 0; i < NSYS; i++) {
        assert_int_equal(o.status[i], 2);
        assert_false(o.flags[i] & MDF_SYSTEM_BUDGET_EXIT);
    }
}

static void test_fused_equals_sequential(void **state)
{
    (void)state;
    static outcome fused, seq;
    mdf_stage_report rep;
    sequential_runs(&seq);
    const char *scheds[] = {"eager", "dmda"};
    int shards[] = {1, 3};
    for (int a = 0; a < 2; a++)
        for (int k = 0; k < 2; k++) {
            fused_run(scheds[a], shards[k], &fused, &rep);
            double dx = 0.0, dv = 0.0, de = 0.0;
            for (int i = 0; i < NSYS; i++) {
                /* The same number of steps: the relaxation's, then MD_STEPS. */
                assert_int_equal(fused.step[i], seq.step[i]);
                assert_int_equal(fused.status[i], 2);
                for (int c = 0; c < 3 * seq.natoms[i]; c++) {
                    dx = fmax(dx, fabs(fused.pos[i][c] - seq.pos[i][c]));
                    dv = fmax(dv, fabs(fused.vel[i][c] - seq.vel[i][c]));
                }
                de = fmax(de, fabs(fused.energy[i] - seq.energy[i]));
            }
            printf("  %s, %d shards: fused vs sequential: |dx| %.3g A, |dv| %.3g, |dE| %.3g eV\n", scheds[a], shards[k],
                   dx, dv, de);
            /* Round-off: the only difference is that the sequential MD stage
             * evaluates the forces again at its start (same positions, lists
             * built at another time: another summation order, ~1e-16
             * relative), grown over 40 steps of a small cluster. */
            assert_true(dx < 1e-9);
            assert_true(dv < 1e-9);
            assert_true(de < 1e-9);
        }
}

/* A budget of 3 steps on a relaxation that needs more: every system that
 * did not converge within 3 steps leaves flagged, and MD still runs. */
static void test_step_budget(void **state)
{
    (void)state;
    tu_start("eager", 2, 0);
    int all[NSYS] = {0, 1, 2, 3, 4};
    mdf_batch *b = batch_of(all, NSYS, 2);
    mdf_model *m = argon();
    mdf_stage *s = NULL;
    TU_CALL(mdf_fuse, relax_stage(3), md_stage(1), &s);
    mdf_stage_report rep;
    TU_CALL(mdf_stage_run, s, b, m, &rep);
    static outcome o;
    collect(b, &o);
    int flagged = 0;
    for (int i = 0; i < NSYS; i++) {
        assert_int_equal(o.status[i], 2);
        /* Unconverged after 3 relaxation steps: 3 + MD_STEPS steps in all. */
        if (o.flags[i] & MDF_SYSTEM_BUDGET_EXIT) {
            assert_int_equal(o.step[i], 3 + MD_STEPS);
            flagged++;
        } else {
            assert_true(o.step[i] < 3 + MD_STEPS);
        }
    }
    printf("  budget 3: %d of %d systems left the relaxation unconverged\n", flagged, NSYS);
    assert_true(flagged >= 3); /* these clusters need 10+ FIRE steps to fmax 0.01 */
    assert_int_equal(rep.budget_exits, flagged);
    assert_int_equal(rep.model_evaluations, rep.steps + 1);
    mdf_stage_destroy(s);
    mdf_batch_destroy(b);
    mdf_model_destroy(m);
    tu_stop();
}

/* fuse(fuse(a, b), c): three sub-stages, statuses 0, 1, 2, exit 3. */
static void test_chaining_and_errors(void **state)
{
    (void)state;
    mdf_stage *ab = NULL, *abc = NULL;
    TU_CALL(mdf_fuse, relax_stage(0), md_stage(1), &ab);
    TU_CALL(mdf_fuse, ab, md_stage(5), &abc);
    assert_int_equal(mdf_stage_nparts(abc), 3);
    assert_int_equal(mdf_stage_exit_status(abc), 3);
    mdf_error err;
    mdf_error_clear(&err);
    assert_int_equal(mdf_stage_add_part_criterion(abc, 3, MDF_CRITERION_FMAX, 0.1, &err), MDF_ERR_INVALID);
    assert_non_null(strstr(err.message, "sub-stage 3"));
    mdf_stage *self = relax_stage(0), *out = NULL;
    assert_int_equal(mdf_fuse(self, self, &out, NULL), MDF_ERR_INVALID);
    assert_null(out);
    /* At most 8 sub-stages. */
    mdf_stage *big = abc;
    for (int k = 3; k < 8; k++) TU_CALL(mdf_fuse, big, md_stage(0), &big);
    assert_int_equal(mdf_stage_nparts(big), 8);
    mdf_error_clear(&err);
    assert_int_equal(mdf_fuse(big, md_stage(0), &out, &err), MDF_ERR_INVALID);
    assert_non_null(strstr(err.message, "at most 8"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_chaining_and_errors),
        cmocka_unit_test(test_one_evaluation_per_step_and_migration),
        cmocka_unit_test(test_fused_equals_sequential),
        cmocka_unit_test(test_step_budget),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
