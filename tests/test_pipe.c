/* mdflow tests — pipelines in one process (mdflow/pipe.h): `relax | md` on
 * two scheduling contexts against the fused inflight run of the same
 * stages, back-pressure from a slow stage, refusals before any work, and a
 * failing stage stopping the others.
 *
 * The reference of the first test is the fused run (`relax + md`), which
 * test_inflight and test_fuse check against each system run alone: a
 * pipeline hands each system to the next stage with its state, and random
 * numbers are keyed by the system and its own step, so it must follow the
 * same trajectory; only neighbour lists built anew in the next stage (in
 * another order) may change the round-off. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "testutil.h"

#define NDATA 24
#define MD_STEPS 40
#define MAX_ATOMS 200

static mdf_frame dataset_frame(int i) { return tu_mixed_cluster(i, 0.02 + 0.012 * i, 900 + (uint64_t)i); }

static mdf_model *argon(void)
{
    mdf_lj_config lj = tu_argon(6.5, 1);
    mdf_model *m = NULL;
    TU_CALL(mdf_model_create_lj, &lj, &m);
    return m;
}

/* FIRE to fmax 0.01 eV/Å, at most 400 steps in the stage. */
static mdf_stage *relax_stage(void)
{
    mdf_stage_config sc;
    mdf_stage_config_init(&sc);
    sc.integrator = "fire";
    sc.max_steps = 100000;
    sc.step_budget = 400;
    mdf_stage *s = NULL;
    TU_CALL(mdf_stage_create, &sc, &s);
    TU_CALL(mdf_stage_add_criterion, s, MDF_CRITERION_FMAX, 0.01);
    return s;
}

/* Langevin at 25 K for `steps` steps from entry velocities. */
static mdf_stage *md_stage(int64_t steps, uint64_t seed)
{
    mdf_stage_config sc;
    mdf_stage_config_init(&sc);
    sc.integrator = "langevin";
    sc.params.dt_fs = 5.0;
    sc.params.temperature_K = 25.0;
    sc.params.seed = seed;
    sc.entry_temperature_K = 25.0;
    sc.max_steps = 100000;
    mdf_stage *s = NULL;
    TU_CALL(mdf_stage_create, &sc, &s);
    TU_CALL(mdf_stage_add_criterion, s, MDF_CRITERION_STEPS, (double)steps);
    return s;
}

typedef struct outcome {
    pthread_mutex_t lock;
    int seen[NDATA];
    int status[NDATA];
    int64_t step[NDATA];
    int32_t flags[NDATA];
    double energy[NDATA];
    int natoms[NDATA];
    double pos[NDATA][3 * 64];
    double vel[NDATA][3 * 64];
    int calls;
} outcome;

static int on_exit_cb(void *user, const mdf_frame *f, const mdf_system_view *v)
{
    outcome *o = (outcome *)user;
    pthread_mutex_lock(&o->lock);
    o->calls++;
    if (v->id >= 0 && v->id < NDATA) {
        int i = (int)v->id;
        o->seen[i]++;
        o->status[i] = v->status;
        o->step[i] = v->step;
        o->flags[i] = v->flags;
        o->energy[i] = v->potential_energy;
        o->natoms[i] = (int)f->natoms;
        memcpy(o->pos[i], f->positions, sizeof(double) * 3 * (size_t)f->natoms);
        if (f->velocities) memcpy(o->vel[i], f->velocities, sizeof(double) * 3 * (size_t)f->natoms);
    }
    pthread_mutex_unlock(&o->lock);
    return 0;
}

static void outcome_init(outcome *o)
{
    memset(o, 0, sizeof *o);
    pthread_mutex_init(&o->lock, NULL);
}

static void make_dataset(mdf_frame *frames)
{
    for (int i = 0; i < NDATA; i++) frames[i] = dataset_frame(i);
}

static void free_dataset(mdf_frame *frames)
{
    for (int i = 0; i < NDATA; i++) mdf_frame_free(&frames[i]);
}

/* The reference: relax + md fused, inflight, 2 CPU workers. */
static void fused_run(outcome *o)
{
    tu_start("lws", 2, 0);
    mdf_frame frames[NDATA];
    make_dataset(frames);
    mdf_sampler_config sc;
    mdf_sampler_config_init(&sc);
    sc.max_atoms = MAX_ATOMS;
    mdf_sampler *sampler = NULL;
    TU_CALL(mdf_sampler_create, frames, NDATA, &sc, &sampler);
    mdf_model *m = argon();
    mdf_stage *s = NULL;
    TU_CALL(mdf_fuse, relax_stage(), md_stage(MD_STEPS, 4), &s);
    TU_CALL(mdf_stage_set_max_steps, s, 100000);
    mdf_inflight_config ic;
    mdf_inflight_config_init(&ic);
    ic.sampler = sampler;
    ic.on_exit = on_exit_cb;
    ic.user = o;
    mdf_stage_report rep;
    TU_CALL(mdf_stage_run_inflight, s, m, &ic, &rep);
    mdf_stage_destroy(s);
    mdf_model_destroy(m);
    mdf_sampler_destroy(sampler);
    free_dataset(frames);
    tu_stop();
}

static mdf_pipe_stage_config stage_cfg(const char *name, int64_t max_atoms, int ncpus)
{
    mdf_pipe_stage_config c;
    mdf_pipe_stage_config_init(&c);
    snprintf(c.name, sizeof c.name, "%s", name);
    c.budget.max_atoms = max_atoms;
    c.ncpus = ncpus;
    return c;
}

static mdf_pipeline *relax_md_pipeline(int64_t md_budget, int64_t inbox_systems, int64_t inbox_atoms, int ncpus)
{
    mdf_pipeline *p = NULL;
    TU_CALL(mdf_pipeline_create, &p);
    mdf_pipe_stage_config a = stage_cfg("relax", MAX_ATOMS, ncpus), b = stage_cfg("md", md_budget, ncpus);
    b.inbox_systems = inbox_systems;
    b.inbox_atoms = inbox_atoms;
    TU_CALL(mdf_pipeline_add, p, relax_stage(), &a);
    TU_CALL(mdf_pipeline_add, p, md_stage(MD_STEPS, 4), &b);
    return p;
}

static void pipe_run(mdf_pipeline *p, outcome *o, mdf_pipe_report *rep)
{
    mdf_frame frames[NDATA];
    make_dataset(frames);
    mdf_model *m = argon();
    mdf_pipe_run_config rc;
    mdf_pipe_run_config_init(&rc);
    rc.frames = frames;
    rc.nframes = NDATA;
    rc.on_exit = on_exit_cb;
    rc.user = o;
    TU_CALL(mdf_pipeline_run, p, m, &rc, rep);
    mdf_model_destroy(m);
    free_dataset(frames);
}

/* Largest |a - b| over a system's coordinates. */
static double max_diff(const double *a, const double *b, int n)
{
    double d = 0.0;
    for (int k = 0; k < 3 * n; k++) d = fmax(d, fabs(a[k] - b[k]));
    return d;
}

static void test_contexts_match_fused(void **state)
{
    (void)state;
    outcome *ref = calloc(1, sizeof *ref), *got = calloc(1, sizeof *got);
    outcome_init(ref);
    outcome_init(got);
    fused_run(ref);
    tu_start("lws", 2, 0);
    mdf_pipeline *p = relax_md_pipeline(MAX_ATOMS, 0, 0, 1); /* one CPU worker each */
    assert_int_equal(mdf_pipeline_nstages(p), 2);
    assert_int_equal(mdf_pipeline_exit_status(p), 2);
    mdf_pipe_report rep;
    pipe_run(p, got, &rep);
    double worst_pos = 0.0, worst_e = 0.0, worst_v = 0.0;
    for (int i = 0; i < NDATA; i++) {
        assert_int_equal(ref->seen[i], 1);
        assert_int_equal(got->seen[i], 1);
        assert_int_equal(got->status[i], 2);
        assert_int_equal(got->status[i], ref->status[i]);
        assert_int_equal(got->step[i], ref->step[i]); /* every system took the same steps */
        assert_int_equal(got->flags[i] & MDF_SYSTEM_BUDGET_EXIT, ref->flags[i] & MDF_SYSTEM_BUDGET_EXIT);
        worst_pos = fmax(worst_pos, max_diff(got->pos[i], ref->pos[i], ref->natoms[i]));
        worst_v = fmax(worst_v, max_diff(got->vel[i], ref->vel[i], ref->natoms[i]));
        worst_e = fmax(worst_e, fabs(got->energy[i] - ref->energy[i]) / fmax(fabs(ref->energy[i]), 1e-3));
    }
    printf("pipeline (2 contexts) vs fused, %d systems: positions %.3g Å, velocities %.3g, energies %.3g relative\n",
           NDATA, worst_pos, worst_v, worst_e);
    /* At most the round-off of another summation order, grown over the MD
     * steps (a stage builds its neighbour lists anew; seen: none at all). */
    assert_true(worst_pos < 1e-7);
    assert_true(worst_e < 1e-9);
    /* The report: both stages, every system through both. */
    assert_int_equal(rep.n, 2);
    assert_int_equal(rep.finished, NDATA);
    assert_string_equal(rep.stages[0].name, "relax");
    assert_string_equal(rep.stages[1].name, "md");
    assert_int_equal(rep.stages[0].systems_in, NDATA);
    assert_int_equal(rep.stages[0].systems_out, NDATA);
    assert_int_equal(rep.stages[1].systems_in, NDATA);
    assert_int_equal(rep.stages[1].systems_out, NDATA);
    assert_int_equal(rep.stages[0].nworkers, 1);
    assert_int_equal(rep.stages[1].nworkers, 1);
    assert_true(rep.stages[0].steps > 0 && rep.stages[1].steps >= MD_STEPS);
    assert_true(rep.stages[1].inbox_hwm_atoms <= rep.stages[1].inbox_cap_atoms);
    mdf_pipe_report_free(&rep);
    mdf_pipeline_destroy(p);
    tu_stop();
    free(ref);
    free(got);
}

/* A slow second stage with a tiny budget and inbox: the first holds its
 * finished systems and waits; the inbox never holds more than it may. */
static void test_backpressure(void **state)
{
    (void)state;
    outcome *got = calloc(1, sizeof *got);
    outcome_init(got);
    tu_start("lws", 2, 0);
    /* md: one or two systems in flight at a time (the largest has 43 atoms), two in the inbox. */
    mdf_pipeline *p = NULL;
    TU_CALL(mdf_pipeline_create, &p);
    mdf_pipe_stage_config a = stage_cfg("relax", MAX_ATOMS, 1), b = stage_cfg("md", 60, 1);
    b.inbox_systems = 2;
    b.inbox_atoms = 120;
    TU_CALL(mdf_pipeline_add, p, relax_stage(), &a);
    TU_CALL(mdf_pipeline_add, p, md_stage(400, 4), &b);
    mdf_pipe_report rep;
    pipe_run(p, got, &rep);
    for (int i = 0; i < NDATA; i++) {
        assert_int_equal(got->seen[i], 1);
        assert_int_equal(got->status[i], 2);
    }
    const mdf_pipe_stage_report *r = &rep.stages[0], *d = &rep.stages[1];
    printf("back-pressure: relax blocked %.3f s, held at most %lld systems; md inbox high-water %lld systems "
           "(cap %lld), %lld atoms (cap %lld); md starved %.3f s\n", r->blocked_s, (long long)r->held_max,
           (long long)d->inbox_hwm_systems, (long long)d->inbox_cap_systems, (long long)d->inbox_hwm_atoms,
           (long long)d->inbox_cap_atoms, d->starved_s);
    assert_true(r->blocked_s > 0.0);
    assert_true(r->held_max > 0);
    assert_int_equal(d->inbox_cap_systems, 2);
    assert_int_equal(d->inbox_cap_atoms, 120);
    assert_true(d->inbox_hwm_systems <= 2 && d->inbox_hwm_systems >= 1);
    assert_true(d->inbox_hwm_atoms <= 120);
    mdf_pipe_report_free(&rep);
    mdf_pipeline_destroy(p);
    tu_stop();
    free(got);
}

/* A system larger than the second stage's budget, or than its inbox, is
 * refused before any work: nothing reaches the receiver. */
static void test_too_large_refused(void **state)
{
    (void)state;
    outcome *got = calloc(1, sizeof *got);
    outcome_init(got);
    tu_start("lws", 2, 0);
    mdf_frame frames[NDATA];
    make_dataset(frames);
    int64_t largest = 0, at = 0;
    for (int i = 0; i < NDATA; i++)
        if (frames[i].natoms > largest) largest = frames[i].natoms, at = i;
    mdf_model *m = argon();
    mdf_pipe_run_config rc;
    mdf_pipe_run_config_init(&rc);
    rc.frames = frames;
    rc.nframes = NDATA;
    rc.on_exit = on_exit_cb;
    rc.user = got;
    mdf_error err;
    char id[64];
    snprintf(id, sizeof id, "system %lld (id %lld)", (long long)at, (long long)at);
    /* The md budget. */
    mdf_pipeline *p = relax_md_pipeline(largest, 0, 0, 1);
    mdf_error_clear(&err);
    assert_int_equal(mdf_pipeline_run(p, m, &rc, NULL, &err), MDF_ERR_INVALID);
    printf("%s\n", err.message);
    assert_non_null(strstr(err.message, id));
    assert_non_null(strstr(err.message, "stage 'md'"));
    assert_non_null(strstr(err.message, "max_atoms"));
    mdf_pipeline_destroy(p);
    /* The md inbox. */
    p = relax_md_pipeline(MAX_ATOMS, 0, largest - 1, 1);
    mdf_error_clear(&err);
    assert_int_equal(mdf_pipeline_run(p, m, &rc, NULL, &err), MDF_ERR_INVALID);
    printf("%s\n", err.message);
    assert_non_null(strstr(err.message, id));
    assert_non_null(strstr(err.message, "inbox of stage 'md'"));
    mdf_pipeline_destroy(p);
    /* More CPU workers than StarPU has. */
    p = relax_md_pipeline(MAX_ATOMS, 0, 0, 3);
    mdf_error_clear(&err);
    assert_int_equal(mdf_pipeline_run(p, m, &rc, NULL, &err), MDF_ERR_INVALID);
    printf("%s\n", err.message);
    assert_non_null(strstr(err.message, "CPU workers"));
    mdf_pipeline_destroy(p);
    assert_int_equal(got->calls, 0);
    mdf_model_destroy(m);
    free_dataset(frames);
    tu_stop();
    free(got);
}

static double seconds(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* A NaN in one system of the md stage stops the md stage (NaN detector) and
 * with it the relaxation; the error names the stage; every system the
 * receiver got, it got once. */
static void test_failure_stops_everything(void **state)
{
    (void)state;
    outcome *got = calloc(1, sizeof *got);
    outcome_init(got);
    tu_start("lws", 2, 0);
    mdf_pipeline *p = NULL;
    TU_CALL(mdf_pipeline_create, &p);
    mdf_pipe_stage_config a = stage_cfg("relax", MAX_ATOMS, 1), b = stage_cfg("md", MAX_ATOMS, 1);
    mdf_stage *md = md_stage(100000, 4); /* md would run for ever */
    mdf_hook *poison = tu_poison_hook(3, -5), *nan = NULL;
    TU_CALL(mdf_stage_add_hook, md, poison);
    TU_CALL(mdf_hook_create_nan_check, 1, MDF_NAN_STOP, NULL, &nan);
    TU_CALL(mdf_stage_add_hook, md, nan);
    TU_CALL(mdf_pipeline_add, p, relax_stage(), &a);
    TU_CALL(mdf_pipeline_add, p, md, &b);
    mdf_frame frames[NDATA];
    make_dataset(frames);
    mdf_model *m = argon();
    mdf_pipe_run_config rc;
    mdf_pipe_run_config_init(&rc);
    rc.frames = frames;
    rc.nframes = NDATA;
    rc.on_exit = on_exit_cb;
    rc.user = got;
    mdf_error err;
    mdf_error_clear(&err);
    double t0 = seconds();
    mdf_status st = mdf_pipeline_run(p, m, &rc, NULL, &err);
    double dt = seconds() - t0;
    printf("failure after %.2f s: %s\n", dt, err.message);
    assert_int_not_equal(st, MDF_OK);
    assert_non_null(strstr(err.message, "stage 'md'"));
    assert_non_null(strstr(err.message, "system id 3"));
    assert_true(dt < 60.0);
    for (int i = 0; i < NDATA; i++) assert_true(got->seen[i] <= 1);
    assert_int_equal(got->seen[3], 1); /* the failed system is handed out, not lost */
    mdf_model_destroy(m);
    free_dataset(frames);
    mdf_pipeline_destroy(p);
    tu_stop();
    free(got);
}

/* Three stages, the last a fused pair: relax | (md1 + md2). Statuses run
 * through 0..3 as in the fused relax + md1 + md2. */
static void test_three_stages(void **state)
{
    (void)state;
    outcome *got = calloc(1, sizeof *got);
    outcome_init(got);
    tu_start("lws", 2, 0);
    mdf_pipeline *p = NULL;
    TU_CALL(mdf_pipeline_create, &p);
    mdf_pipe_stage_config a = stage_cfg("relax", MAX_ATOMS, -1), b = stage_cfg("md", MAX_ATOMS, -1);
    mdf_stage *md = NULL;
    TU_CALL(mdf_fuse, md_stage(10, 4), md_stage(10, 5), &md);
    TU_CALL(mdf_pipeline_add, p, relax_stage(), &a);
    TU_CALL(mdf_pipeline_add, p, md, &b);
    assert_int_equal(mdf_pipeline_exit_status(p), 3);
    mdf_pipe_report rep;
    pipe_run(p, got, &rep);
    for (int i = 0; i < NDATA; i++) {
        assert_int_equal(got->seen[i], 1);
        assert_int_equal(got->status[i], 3);
    }
    assert_int_equal(rep.finished, NDATA);
    mdf_pipe_report_free(&rep);
    mdf_pipeline_destroy(p);
    /* Three pipeline stages on two CPUs: the contexts share them. */
    outcome_init(got);
    TU_CALL(mdf_pipeline_create, &p);
    mdf_pipe_stage_config c = stage_cfg("md2", MAX_ATOMS, -1);
    snprintf(b.name, sizeof b.name, "md1");
    TU_CALL(mdf_pipeline_add, p, relax_stage(), &a);
    TU_CALL(mdf_pipeline_add, p, md_stage(10, 4), &b);
    TU_CALL(mdf_pipeline_add, p, md_stage(10, 5), &c);
    pipe_run(p, got, &rep);
    for (int i = 0; i < NDATA; i++) {
        assert_int_equal(got->seen[i], 1);
        assert_int_equal(got->status[i], 3);
    }
    assert_int_equal(rep.n, 3);
    mdf_pipe_report_free(&rep);
    mdf_pipeline_destroy(p);
    tu_stop();
    free(got);
}

/* Checkpoints: a run whose stages stop early (each its max_steps, on a
 * checkpoint step) and is resumed ends where the uninterrupted run ends,
 * with every system handed out once; a checkpoint of another pipeline
 * shape is refused. */
static void run_with_checkpoints(const char *path, int64_t relax_steps, int64_t md_steps, int resume, outcome *o,
                                 mdf_status want, mdf_error *err)
{
    mdf_pipeline *p = relax_md_pipeline(MAX_ATOMS, 0, 0, 1);
    TU_CALL(mdf_stage_set_max_steps, mdf_pipeline_stage(p, 0), relax_steps);
    TU_CALL(mdf_stage_set_max_steps, mdf_pipeline_stage(p, 1), md_steps);
    mdf_frame frames[NDATA];
    make_dataset(frames);
    mdf_model *m = argon();
    mdf_pipe_run_config rc;
    mdf_pipe_run_config_init(&rc);
    rc.frames = frames;
    rc.nframes = NDATA;
    rc.on_exit = on_exit_cb;
    rc.user = o;
    rc.checkpoint_path = path;
    rc.checkpoint_every = 20;
    rc.resume = resume;
    mdf_error_clear(err);
    assert_int_equal(mdf_pipeline_run(p, m, &rc, NULL, err), want);
    mdf_model_destroy(m);
    free_dataset(frames);
    mdf_pipeline_destroy(p);
}

static void test_checkpoint_resume(void **state)
{
    (void)state;
    char *dir = tu_tmpdir(), path[512], a[600], b[600];
    snprintf(path, sizeof path, "%s/run.ckpt.h5", dir);
    outcome *ref = calloc(1, sizeof *ref), *first = calloc(1, sizeof *first), *got = calloc(1, sizeof *got);
    outcome_init(ref);
    outcome_init(first);
    outcome_init(got);
    mdf_error err;
    tu_start("lws", 2, 0);
    run_with_checkpoints(path, 100000, 100000, 0, ref, MDF_OK, &err);
    /* The stage files are named after the stages and the rank. */
    mdf_pipeline *p = relax_md_pipeline(MAX_ATOMS, 0, 0, 1);
    mdf_pipeline_checkpoint_name(p, path, 0, 0, a, sizeof a);
    mdf_pipeline_checkpoint_name(p, path, 1, 0, b, sizeof b);
    mdf_pipeline_destroy(p);
    char want_a[600];
    snprintf(want_a, sizeof want_a, "%s/run.ckpt.relax.r0.h5", dir);
    assert_string_equal(a, want_a);
    assert_int_equal(access(a, F_OK), 0);
    assert_int_equal(access(b, F_OK), 0);
    /* Stopped early: relax after 40 steps, md after 60 (checkpoints every 20). */
    run_with_checkpoints(path, 40, 60, 0, first, MDF_OK, &err);
    int unfinished = 0;
    for (int i = 0; i < NDATA; i++) unfinished += first->seen[i] && first->status[i] != 2;
    assert_true(unfinished > 0);
    run_with_checkpoints(path, 100000, 100000, 1, got, MDF_OK, &err);
    double worst = 0.0;
    for (int i = 0; i < NDATA; i++) {
        assert_int_equal(got->seen[i], 1);
        assert_int_equal(got->status[i], 2);
        assert_int_equal(got->step[i], ref->step[i]);
        worst = fmax(worst, max_diff(got->pos[i], ref->pos[i], ref->natoms[i]));
    }
    printf("resumed pipeline vs uninterrupted: %d systems, positions differ by at most %.3g Å (%d were unfinished "
           "when it stopped)\n", NDATA, worst, unfinished);
    assert_true(worst < 1e-9);
    /* Another shape: relax | md | md2 cannot resume from relax | md's files. */
    TU_CALL(mdf_pipeline_create, &p);
    mdf_pipe_stage_config ca = stage_cfg("relax", MAX_ATOMS, -1), cb = stage_cfg("md", MAX_ATOMS, -1),
                          cc = stage_cfg("md2", MAX_ATOMS, -1);
    TU_CALL(mdf_pipeline_add, p, relax_stage(), &ca);
    TU_CALL(mdf_pipeline_add, p, md_stage(MD_STEPS, 4), &cb);
    TU_CALL(mdf_pipeline_add, p, md_stage(5, 5), &cc);
    mdf_frame frames[NDATA];
    make_dataset(frames);
    mdf_model *m = argon();
    mdf_pipe_run_config rc;
    mdf_pipe_run_config_init(&rc);
    rc.frames = frames;
    rc.nframes = NDATA;
    rc.checkpoint_path = path;
    rc.checkpoint_every = 20;
    rc.resume = 1;
    mdf_error_clear(&err);
    assert_int_not_equal(mdf_pipeline_run(p, m, &rc, NULL, &err), MDF_OK);
    printf("%s\n", err.message);
    assert_non_null(strstr(err.message, "run.ckpt."));
    /* Whichever stage looks first: relax's or md's file of another shape, or md2's, missing. */
    assert_true((strstr(err.message, "was written by stage ") && strstr(err.message, " of 2 (") &&
                 strstr(err.message, "this run is stage ") && strstr(err.message, " of 3 (")) ||
                strstr(err.message, "there is no checkpoint"));
    mdf_model_destroy(m);
    free_dataset(frames);
    mdf_pipeline_destroy(p);
    tu_stop();
    tu_remove_tree(dir);
    free(dir);
    free(ref);
    free(first);
    free(got);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_contexts_match_fused),
        cmocka_unit_test(test_backpressure),
        cmocka_unit_test(test_too_large_refused),
        cmocka_unit_test(test_failure_stops_everything),
        cmocka_unit_test(test_three_stages),
        cmocka_unit_test(test_checkpoint_resume),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
