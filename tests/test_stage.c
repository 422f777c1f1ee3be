/* mdflow tests — the stage engine: hook points, frequencies and order;
 * convergence criteria (kernel and engine); only converged systems leave;
 * the same results whatever the sharding and the scheduler.
 *
 * Expected values come from the definitions, not from earlier runs: the
 * hook sequence is generated from the documented step structure, and the
 * convergence steps from forces that a test hook imposes as a known function
 * of the step. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <starpu.h>
#include "testutil.h"
#include "../codelets/common/mdf_kernel_common.h"
#include "../codelets/converge/converge_codelet.h"

/* ---- convergence kernel ------------------------------------------------------ */

static mdf_converge_args crit(int mask, double f, double de, int64_t steps)
{
    mdf_converge_args a = {.lo = 0, .nparts = 1, .apply = 1};
    a.part[0] = (mdf_converge_part){.mask = mask, .target = 7, .fmax_thr = f, .de_thr = de, .steps_thr = steps};
    return a;
}

/* One system of two atoms with forces [[3,4,0],[0,0,1]] run through the CPU
 * codelet itself (its buffers are plain vector interfaces). */
static int run_converge_cpu(const mdf_converge_args *a, mdf_sys_info *si, mdf_sys_result *r, mdf_sys_state *st)
{
    double f[6] = {3, 4, 0, 0, 0, 1};
    struct starpu_vector_interface vf = {.ptr = (uintptr_t)f}, vs = {.ptr = (uintptr_t)si},
                                   vr = {.ptr = (uintptr_t)r}, vst = {.ptr = (uintptr_t)st};
    void *buffers[4] = {&vf, &vs, &vr, &vst};
    mdf_converge_args args = *a;
    args.nsys = 1;
    int32_t before = si->status;
    mdf_converge_cpu(buffers, &args);
    return si->status != before;
}

static void fresh_system(mdf_sys_info *si, mdf_sys_result *r, mdf_sys_state *st)
{
    memset(si, 0, sizeof *si);
    memset(r, 0, sizeof *r);
    memset(st, 0, sizeof *st);
    si->natoms = 2;
    r->energy_prev = NAN;
    st->owner = 1;
    st->d[0] = 42.0;
}

static void test_fmax_of_345(void **state)
{
    (void)state;
    mdf_sys_info si;
    mdf_sys_result r;
    mdf_sys_state st;
    fresh_system(&si, &r, &st);
    mdf_converge_args a = crit(0, 0, 0, 0);
    a.apply = 0;
    assert_int_equal(run_converge_cpu(&a, &si, &r, &st), 0); /* no criterion: measure only */
    assert_true(r.fmax == 5.0);                               /* |(3,4,0)| = 5 exactly */
    assert_int_equal(si.status, 0);
}

static void test_threshold_inclusive(void **state)
{
    (void)state;
    mdf_sys_info si;
    mdf_sys_result r;
    mdf_sys_state st;
    fresh_system(&si, &r, &st);
    mdf_converge_args below = crit(MDF_CRIT_FMAX, nextafter(5.0, 0.0), 0, 0);
    /* No criterion at all never converges, even with apply. */
    mdf_converge_args none = crit(0, 0, 0, 0);
    assert_int_equal(run_converge_cpu(&none, &si, &r, &st), 0);
    assert_int_equal(run_converge_cpu(&below, &si, &r, &st), 0);
    mdf_converge_args equal = crit(MDF_CRIT_FMAX, 5.0, 0, 0);
    assert_int_equal(run_converge_cpu(&equal, &si, &r, &st), 1);
    assert_int_equal(si.status, 7);
    assert_true(si.flags & MDF_SYS_CONVERGED_NOW);
    /* The next stage starts afresh. */
    assert_int_equal(st.owner, 0);
    assert_true(st.d[0] == 0.0);
    assert_int_equal(si.stage_step, 0);
}

static void test_two_criteria_need_both(void **state)
{
    (void)state;
    mdf_sys_info si;
    mdf_sys_result r;
    mdf_sys_state st;
    fresh_system(&si, &r, &st);
    mdf_converge_args both = crit(MDF_CRIT_FMAX | MDF_CRIT_DE, 5.0, 1e-3, 0);
    r.energy = -1.0;
    /* No previous energy: the energy criterion fails, fmax alone is not enough. */
    assert_int_equal(run_converge_cpu(&both, &si, &r, &st), 0);
    assert_true(r.energy_prev == -1.0);
    r.energy = -1.0 - 2e-3; /* |dE| = 2e-3 > 1e-3 */
    assert_int_equal(run_converge_cpu(&both, &si, &r, &st), 0);
    r.energy = -1.0 - 2e-3 - 1e-3; /* |dE| = 1e-3 (to round-off) within the threshold */
    both.part[0].de_thr = 1e-3 * (1 + 1e-12);
    assert_int_equal(run_converge_cpu(&both, &si, &r, &st), 1);

    /* fmax fails while the energy criterion holds. */
    fresh_system(&si, &r, &st);
    mdf_converge_args tight = crit(MDF_CRIT_FMAX | MDF_CRIT_DE, 4.0, 1.0, 0);
    r.energy = r.energy_prev = 0.0;
    assert_int_equal(run_converge_cpu(&tight, &si, &r, &st), 0);

    /* Step budget together with fmax. */
    fresh_system(&si, &r, &st);
    mdf_converge_args steps = crit(MDF_CRIT_FMAX | MDF_CRIT_STEPS, 5.0, 0, 3);
    si.stage_step = 2;
    assert_int_equal(run_converge_cpu(&steps, &si, &r, &st), 0);
    si.stage_step = 3;
    assert_int_equal(run_converge_cpu(&steps, &si, &r, &st), 1);
}

static void test_nan_force_never_converges(void **state)
{
    (void)state;
    double f[3] = {NAN, 0, 0};
    mdf_sys_info si;
    mdf_sys_result r;
    mdf_sys_state st;
    fresh_system(&si, &r, &st);
    si.natoms = 1;
    struct starpu_vector_interface vf = {.ptr = (uintptr_t)f}, vs = {.ptr = (uintptr_t)&si},
                                   vr = {.ptr = (uintptr_t)&r}, vst = {.ptr = (uintptr_t)&st};
    void *buffers[4] = {&vf, &vs, &vr, &vst};
    mdf_converge_args a = crit(MDF_CRIT_FMAX, 1e300, 0, 0);
    a.nsys = 1;
    mdf_converge_cpu(buffers, &a);
    assert_int_equal(si.status, 0);
    assert_true(isnan(r.fmax));
}

/* A NaN force on an early atom is not hidden by finite forces after it
 * (issue 21, finding 4: the running maximum took the next finite value). */
static void test_nan_force_then_finite_never_converges(void **state)
{
    (void)state;
    double f[9] = {0, NAN, 0, 0.5, 0, 0, 0, 0, 0.25};
    mdf_sys_info si;
    mdf_sys_result r;
    mdf_sys_state st;
    fresh_system(&si, &r, &st);
    si.natoms = 3;
    struct starpu_vector_interface vf = {.ptr = (uintptr_t)f}, vs = {.ptr = (uintptr_t)&si},
                                   vr = {.ptr = (uintptr_t)&r}, vst = {.ptr = (uintptr_t)&st};
    void *buffers[4] = {&vf, &vs, &vr, &vst};
    mdf_converge_args a = crit(MDF_CRIT_FMAX, 1e300, 0, 0);
    a.nsys = 1;
    mdf_converge_cpu(buffers, &a);
    assert_int_equal(si.status, 0);
    assert_false(si.flags & MDF_SYS_CONVERGED_NOW);
    assert_true(isnan(r.fmax));
    /* The finite maximum stays exact when no NaN is there. */
    f[1] = 0.0;
    fresh_system(&si, &r, &st);
    si.natoms = 3;
    mdf_converge_cpu(buffers, &a);
    assert_true(r.fmax == 0.5);
    assert_int_equal(si.status, 7);
}

/* ---- a batch of small argon clusters ------------------------------------------- */

static mdf_frame cluster(int n, double spacing, uint64_t seed)
{
    mdf_frame f;
    memset(&f, 0, sizeof f);
    TU_CALL(mdf_frame_alloc, &f, n, 0, 0, 0);
    uint64_t s = seed;
    int side = (int)ceil(cbrt((double)n));
    for (int i = 0; i < n; i++) {
        int ix = i % side, iy = (i / side) % side, iz = i / (side * side);
        f.positions[3 * i + 0] = ix * spacing + 0.05 * tu_gauss(&s);
        f.positions[3 * i + 1] = iy * spacing + 0.05 * tu_gauss(&s);
        f.positions[3 * i + 2] = iz * spacing + 0.05 * tu_gauss(&s);
        f.numbers[i] = 18;
    }
    return f;
}

#define NSYS 6

static mdf_batch *make_batch(int nshards)
{
    mdf_frame frames[NSYS];
    for (int i = 0; i < NSYS; i++) frames[i] = cluster(8 + 5 * i, 3.9, 100 + (uint64_t)i);
    mdf_batch_config bc;
    mdf_batch_config_init(&bc);
    bc.nshards = nshards;
    mdf_batch *b = NULL;
    TU_CALL(mdf_batch_create, frames, NSYS, &bc, &b);
    for (int i = 0; i < NSYS; i++) mdf_frame_free(&frames[i]);
    return b;
}

static mdf_model *make_model(void)
{
    mdf_lj_config lj = tu_argon(8.5, 1);
    mdf_model *m = NULL;
    TU_CALL(mdf_model_create_lj, &lj, &m);
    return m;
}

/* ---- hook points, frequencies and order ------------------------------------------ */

#define MAX_EVENTS 20000

typedef struct event {
    int hook;       /* registration index */
    int point;
    int64_t step;
    int shard;
    size_t nrows;
} event;

typedef struct recorder {
    pthread_mutex_t lock;
    int n;
    event ev[MAX_EVENTS];
} recorder;

typedef struct hook_tag {
    recorder *rec;
    int index;
} hook_tag;

static void record(void *user, const mdf_hook_event *ev)
{
    hook_tag *t = (hook_tag *)user;
    pthread_mutex_lock(&t->rec->lock);
    if (t->rec->n < MAX_EVENTS)
        t->rec->ev[t->rec->n++] = (event){.hook = t->index, .point = (int)ev->point, .step = ev->step,
                                          .shard = ev->shard, .nrows = ev->nrows};
    pthread_mutex_unlock(&t->rec->lock);
}

/* Hooks: one per point with frequency 1, then a second set with
 * frequencies 2 and 3 alternating, so that registration order and
 * frequency filtering are both visible. */
#define NHOOKS (2 * MDF_HOOK_POINTS)

static int64_t hook_every(int h) { return h < MDF_HOOK_POINTS ? 1 : (h % 2 ? 2 : 3); }
static int hook_point(int h) { return h % MDF_HOOK_POINTS; }

static int point_fires_at_start(int p)
{
    return p == MDF_BEFORE_COMPUTE || p == MDF_AFTER_COMPUTE || p == MDF_ON_CONVERGE || p == MDF_AFTER_STEP;
}

/* The expected sequence of one shard: steps 0..last, points in step order,
 * hooks of a point in registration order, due ones only. ON_CONVERGE fires
 * only at the convergence step (where rows are non-empty). */
static int expected_sequence(int64_t last, int64_t converge_step, event *out, int max)
{
    static const int order[] = {MDF_BEFORE_STEP,    MDF_BEFORE_PRE_UPDATE, MDF_AFTER_PRE_UPDATE,
                                MDF_BEFORE_COMPUTE, MDF_AFTER_COMPUTE,     MDF_BEFORE_POST_UPDATE,
                                MDF_AFTER_POST_UPDATE, MDF_ON_CONVERGE,    MDF_AFTER_STEP};
    int n = 0;
    for (int64_t step = 0; step <= last; step++)
        for (size_t q = 0; q < sizeof order / sizeof order[0]; q++) {
            int p = order[q];
            if (step == 0 && !point_fires_at_start(p)) continue;
            if (p == MDF_ON_CONVERGE && step != converge_step) continue;
            for (int h = 0; h < NHOOKS; h++) {
                if (hook_point(h) != p) continue;
                if (p != MDF_ON_CONVERGE && step % hook_every(h) != 0) continue;
                if (n < max) out[n] = (event){.hook = h, .point = p, .step = step};
                n++;
            }
        }
    return n;
}

static void test_hook_order_and_frequency(void **state)
{
    (void)state;
    tu_start("eager", 2, 0);
    mdf_batch *b = make_batch(3);
    mdf_model *m = make_model();
    mdf_stage_config sc;
    mdf_stage_config_init(&sc);
    sc.params.dt_fs = 2.0;
    sc.max_steps = 40;
    sc.check_interval = 1;
    mdf_stage *s = NULL;
    TU_CALL(mdf_stage_create, &sc, &s);
    /* Every system leaves after exactly 7 steps. */
    TU_CALL(mdf_stage_add_criterion, s, MDF_CRITERION_STEPS, 7.0);
    static recorder rec;
    pthread_mutex_init(&rec.lock, NULL);
    rec.n = 0;
    static hook_tag tags[NHOOKS];
    for (int h = 0; h < NHOOKS; h++) {
        tags[h] = (hook_tag){.rec = &rec, .index = h};
        mdf_hook *hk = NULL;
        char name[32];
        snprintf(name, sizeof name, "rec%d", h);
        TU_CALL(mdf_hook_create_callback, name, (mdf_hook_point)hook_point(h), hook_every(h), record, &tags[h], &hk);
        TU_CALL(mdf_stage_add_hook, s, hk);
    }
    mdf_stage_report rep;
    TU_CALL(mdf_stage_run, s, b, m, &rep);
    assert_int_equal(rep.converged, NSYS);
    assert_int_equal(rep.remaining, 0);
    /* The host stops submitting once every shard's census finds nobody left.
     * The window counts tasks over all shards, so the slowest shard trails
     * the host by at most window x nshards steps, then a check interval. */
    assert_true(rep.steps >= 7 && rep.steps <= 7 + (int64_t)sc.window * mdf_batch_nshards(b) + sc.check_interval);
    static event want[MAX_EVENTS];
    for (int k = 0; k < mdf_batch_nshards(b); k++) {
        int n = expected_sequence(rep.steps, 7, want, MAX_EVENTS);
        int got = 0;
        for (int e = 0; e < rec.n; e++) {
            if (rec.ev[e].shard != k) continue;
            assert_true(got < n);
            if (rec.ev[e].hook != want[got].hook || rec.ev[e].point != want[got].point ||
                rec.ev[e].step != want[got].step)
                fail_msg("shard %d, event %d: got hook %d at %s of step %lld, expected hook %d at %s of step %lld", k,
                         got, rec.ev[e].hook, mdf_hook_point_name((mdf_hook_point)rec.ev[e].point),
                         (long long)rec.ev[e].step, want[got].hook,
                         mdf_hook_point_name((mdf_hook_point)want[got].point), (long long)want[got].step);
            /* ON_CONVERGE sees exactly the shard's systems, all converging at 7. */
            if (rec.ev[e].point == MDF_ON_CONVERGE) assert_true(rec.ev[e].nrows > 0);
            got++;
        }
        assert_int_equal(got, n);
    }
    for (size_t i = 0; i < NSYS; i++) {
        mdf_system_view v;
        TU_CALL(mdf_batch_get_system, b, i, &v);
        assert_int_equal(v.status, 1);
        assert_int_equal(v.step, 7);
    }
    mdf_stage_destroy(s);
    mdf_batch_destroy(b);
    mdf_model_destroy(m);
    tu_stop();
}

/* ---- convergence through the engine ------------------------------------------------ */

/* A codelet hook at AFTER_COMPUTE replaces the forces of system id i by a
 * uniform force of magnitude max(0, 1 + 2i - stage_step) eV/Å along x on
 * every atom. At step t the hook runs before post_update counts the step, so
 * it sees stage_step = t - 1 (and 0 at the starting evaluation): the force
 * is 2 + 2i - t > 0.5 before step 2 + 2i and 0 at it, so with an fmax
 * threshold of 0.5 system i converges exactly at step 2 + 2i. The hook also
 * records every system's positions at every step, to see who moves. */
#define REC_STEPS 64
#define MAX_ATOMS 64

typedef struct motion {
    pthread_mutex_t lock;
    double x[REC_STEPS][NSYS][3 * MAX_ATOMS];
    int seen[REC_STEPS][NSYS];
} motion;

typedef struct force_arg {
    motion *mo;
} force_arg;

static void impose_forces_cpu(void *buffers[], void *cl_arg)
{
    const mdf_hook_task_args *a = (const mdf_hook_task_args *)cl_arg;
    force_arg fa;
    memcpy(&fa, (const char *)cl_arg + sizeof *a, sizeof fa);
    const double *x = (const double *)STARPU_VECTOR_GET_PTR(buffers[0]);
    double *f = (double *)STARPU_VECTOR_GET_PTR(buffers[2]);
    const mdf_sys_info *sys = (const mdf_sys_info *)STARPU_VECTOR_GET_PTR(buffers[4]);
    for (int32_t s = 0; s < a->nsys; s++) {
        const mdf_sys_info *si = &sys[s];
        int64_t id = si->id;
        /* Record every system, in the stage or not. */
        if (a->step < REC_STEPS && id < NSYS) {
            pthread_mutex_lock(&fa.mo->lock);
            memcpy(fa.mo->x[a->step][id], x + 3 * si->atom_start, sizeof(double) * 3 * (size_t)si->natoms);
            fa.mo->seen[a->step][id] = 1;
            pthread_mutex_unlock(&fa.mo->lock);
        }
        if (si->status != a->status) continue;
        double mag = 1.0 + 2.0 * (double)id - (double)si->stage_step;
        if (mag < 0.0) mag = 0.0;
        for (int32_t k = si->atom_start; k < si->atom_start + si->natoms; k++) {
            f[3 * k] = mag;
            f[3 * k + 1] = 0.0;
            f[3 * k + 2] = 0.0;
        }
    }
}

static struct starpu_codelet impose_forces_cl = {
    .cpu_funcs = {impose_forces_cpu},
    .nbuffers = 7,
    .modes = {STARPU_R, STARPU_R, STARPU_RW, STARPU_R, STARPU_R, STARPU_R, STARPU_R},
    .name = "test_impose_forces",
};

typedef struct run_result {
    double pos[NSYS][3 * MAX_ATOMS];
    int64_t step[NSYS];
    int32_t status[NSYS];
} run_result;

static void converge_run(const char *sched, int nshards, motion *mo, run_result *out)
{
    tu_start(sched, 2, 0);
    mdf_batch *b = make_batch(nshards);
    mdf_model *m = make_model();
    TU_CALL(mdf_batch_thermalize, b, 30.0, 5, 0);
    mdf_stage_config sc;
    mdf_stage_config_init(&sc);
    sc.params.dt_fs = 2.0;
    sc.max_steps = 50;
    sc.converged_status = 3;
    mdf_stage *s = NULL;
    TU_CALL(mdf_stage_create, &sc, &s);
    TU_CALL(mdf_stage_add_criterion, s, MDF_CRITERION_FMAX, 0.5);
    memset(mo->seen, 0, sizeof mo->seen);
    force_arg fa = {.mo = mo};
    mdf_hook *h = NULL;
    TU_CALL(mdf_hook_create_codelet, "impose", MDF_AFTER_COMPUTE, 1, &impose_forces_cl, &fa, sizeof fa, &h);
    TU_CALL(mdf_stage_add_hook, s, h);
    mdf_stage_report rep;
    TU_CALL(mdf_stage_run, s, b, m, &rep);
    assert_int_equal(rep.converged, NSYS);
    for (size_t i = 0; i < NSYS; i++) {
        mdf_system_view v;
        TU_CALL(mdf_batch_get_system, b, i, &v);
        out->step[v.id] = v.step;
        out->status[v.id] = v.status;
        mdf_frame fr;
        TU_CALL(mdf_batch_get_frame, b, i, &fr);
        memcpy(out->pos[v.id], fr.positions, sizeof(double) * 3 * (size_t)fr.natoms);
        mdf_frame_free(&fr);
    }
    mdf_stage_destroy(s);
    mdf_batch_destroy(b);
    mdf_model_destroy(m);
    tu_stop();
}

static void test_systems_converge_at_their_own_step(void **state)
{
    (void)state;
    static motion mo;
    pthread_mutex_init(&mo.lock, NULL);
    static run_result r;
    converge_run("eager", 3, &mo, &r);
    for (int i = 0; i < NSYS; i++) {
        /* Converged at step 2 + 2i, and no step after that. */
        assert_int_equal(r.status[i], 3);
        assert_int_equal(r.step[i], 2 + 2 * i);
        int natoms = 8 + 5 * i;
        int64_t conv = 2 + 2 * i;
        /* Moving up to the convergence step, still afterwards. */
        for (int64_t st = 1; st < REC_STEPS && mo.seen[st][i]; st++) {
            int same = memcmp(mo.x[st][i], mo.x[st - 1][i], sizeof(double) * 3 * (size_t)natoms) == 0;
            if (st <= conv) assert_false(same);
            else if (!same) fail_msg("system %d moved at step %lld after converging at %lld", i, (long long)st, (long long)conv);
        }
        assert_memory_equal(r.pos[i], mo.x[conv][i], sizeof(double) * 3 * (size_t)natoms);
    }
}

static void test_invariance_over_shards_and_schedulers(void **state)
{
    (void)state;
    static motion mo;
    pthread_mutex_init(&mo.lock, NULL);
    static run_result ref, other;
    converge_run("eager", 1, &mo, &ref);
    const char *scheds[] = {"eager", "dmda"};
    int shards[] = {1, 3, NSYS};
    for (int a = 0; a < 2; a++)
        for (int k = 0; k < 3; k++) {
            converge_run(scheds[a], shards[k], &mo, &other);
            assert_memory_equal(other.step, ref.step, sizeof ref.step);
            assert_memory_equal(other.pos, ref.pos, sizeof ref.pos);
        }
}

/* ---- configuration errors ----------------------------------------------------------- */

static void test_config_errors(void **state)
{
    (void)state;
    mdf_error err;
    mdf_stage *s = NULL;
    mdf_stage_config sc;
    mdf_stage_config_init(&sc);
    sc.integrator = "leapfrog";
    mdf_error_clear(&err);
    assert_int_equal(mdf_stage_create(&sc, &s, &err), MDF_ERR_INVALID);
    assert_non_null(strstr(err.message, "leapfrog"));
    assert_non_null(strstr(err.message, "velocity_verlet"));
    mdf_stage_config_init(&sc);
    sc.converged_status = sc.status;
    mdf_error_clear(&err);
    assert_int_equal(mdf_stage_create(&sc, &s, &err), MDF_ERR_INVALID);
    assert_non_null(strstr(err.message, "converged_status"));
    mdf_stage_config_init(&sc);
    sc.params.dt_fs = -1.0;
    assert_int_equal(mdf_stage_create(&sc, &s, NULL), MDF_ERR_INVALID);
    mdf_stage_config_init(&sc);
    TU_CALL(mdf_stage_create, &sc, &s);
    mdf_error_clear(&err);
    assert_int_equal(mdf_stage_add_criterion(s, MDF_CRITERION_FMAX, -1.0, &err), MDF_ERR_INVALID);
    assert_int_equal(mdf_stage_add_criterion(s, MDF_CRITERION_STEPS, 2.5, &err), MDF_ERR_INVALID);
    mdf_hook *h = NULL;
    mdf_error_clear(&err);
    assert_int_equal(mdf_hook_create_callback("x", MDF_AFTER_STEP, 0, record, NULL, &h, &err), MDF_ERR_INVALID);
    assert_null(h);
    assert_non_null(strstr(err.message, ">= 1"));
    mdf_stage_destroy(s);
    assert_int_equal(mdf_hook_point_from_name("after_compute"), MDF_AFTER_COMPUTE);
    assert_int_equal(mdf_hook_point_from_name("nowhere"), -1);
    assert_string_equal(mdf_hook_point_name(MDF_ON_CONVERGE), "ON_CONVERGE");
}

/* ---- the virial of final frames ----------------------------------------------------- */

/* Counts the final frames that carry a virial, each checked. */
static int current_virials(const mdf_batch *b)
{
    int with = 0;
    for (int i = 0; i < NSYS; i++) {
        mdf_frame f;
        TU_CALL(mdf_batch_get_frame, b, (size_t)i, &f);
        mdf_system_view v;
        TU_CALL(mdf_batch_get_system, b, (size_t)i, &v);
        int has = tu_frame_virial_is_current(&f, i);
        assert_int_equal(has, v.virial_fresh);
        with += has;
        mdf_frame_free(&f);
    }
    return with;
}

static mdf_stage *plain_stage(const char *integrator, int32_t status, int64_t max_steps)
{
    mdf_stage_config sc;
    mdf_stage_config_init(&sc);
    sc.integrator = integrator;
    sc.status = status;
    sc.converged_status = status + 1;
    sc.max_steps = max_steps;
    sc.params.dt_fs = 2.0;
    mdf_stage *s = NULL;
    TU_CALL(mdf_stage_create, &sc, &s);
    return s;
}

/* Steps compute the virial only when asked (the last step of a run does).
 * Systems that converge earlier get one more evaluation, with the virial,
 * when the run ends: every final frame carries the virial of its own
 * positions (Σ r_i ⊗ F_i of the frame's forces), never that of the
 * positions a system started from. */
static void test_final_virial_is_current(void **state)
{
    (void)state;
    tu_start("eager", 2, 0);
    mdf_batch *b = make_batch(2);
    mdf_model *m = make_model();
    mdf_stage *relax = plain_stage("fire", 0, 5000), *md = plain_stage("velocity_verlet", 1, 25);
    /* argon's forces here start near 0.005 eV/Å: a tight threshold for a real relaxation */
    TU_CALL(mdf_stage_add_criterion, relax, MDF_CRITERION_FMAX, 2e-4);
    mdf_stage_report rep;
    TU_CALL(mdf_stage_run, relax, b, m, &rep);
    assert_int_equal(rep.converged, NSYS);
    assert_true(rep.steps > 10 && rep.steps < 5000); /* ended on convergence, before its last step */
    int relaxed = current_virials(b);
    TU_CALL(mdf_stage_run, md, b, m, &rep);
    assert_int_equal(rep.steps, 25);
    int after_md = current_virials(b);
    printf("  frames with a current virial: %d of %d after relaxing, %d after MD to max_steps\n", relaxed, NSYS,
           after_md);
    assert_int_equal(relaxed, NSYS);  /* the evaluation at the end of the run, for those that converged early */
    assert_int_equal(after_md, NSYS); /* the last step computed it, for every system */
    mdf_stage_destroy(relax);
    mdf_stage_destroy(md);
    mdf_model_destroy(m);
    mdf_batch_destroy(b);
    tu_stop();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fmax_of_345),
        cmocka_unit_test(test_threshold_inclusive),
        cmocka_unit_test(test_two_criteria_need_both),
        cmocka_unit_test(test_nan_force_never_converges),
        cmocka_unit_test(test_nan_force_then_finite_never_converges),
        cmocka_unit_test(test_config_errors),
        cmocka_unit_test(test_hook_order_and_frequency),
        cmocka_unit_test(test_systems_converge_at_their_own_step),
        cmocka_unit_test(test_invariance_over_shards_and_schedulers),
        cmocka_unit_test(test_final_virial_is_current),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
