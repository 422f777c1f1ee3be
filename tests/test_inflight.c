/* mdflow tests — inflight batching: the size-aware sampler's packing, and
 * fused runs whose finished systems are replaced in place.
 *
 * Packing cases are the issue's; the run's reference is the definition of
 * inflight batching: each system, whenever it enters and whoever shares its
 * batch, follows the trajectory its stages give it alone. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "testutil.h"

/* ---- the sampler ---------------------------------------------------------------- */

/* A line of n argon atoms 3.9 Å apart (no cell). */
static mdf_frame line_of(int n)
{
    mdf_frame f;
    memset(&f, 0, sizeof f);
    TU_CALL(mdf_frame_alloc, &f, n, 0, 0, 0);
    for (int i = 0; i < n; i++) {
        f.positions[3 * i] = 3.9 * i;
        f.numbers[i] = 18;
    }
    return f;
}

static mdf_sampler *sampler_over(mdf_frame *frames, const int *sizes, int n, int64_t max_atoms)
{
    for (int i = 0; i < n; i++) frames[i] = line_of(sizes[i]);
    mdf_sampler_config sc;
    mdf_sampler_config_init(&sc);
    sc.max_atoms = max_atoms;
    mdf_sampler *s = NULL;
    TU_CALL(mdf_sampler_create, frames, (size_t)n, &sc, &s);
    return s;
}

static void free_frames(mdf_frame *frames, int n)
{
    for (int i = 0; i < n; i++) mdf_frame_free(&frames[i]);
}

static void test_packing_cases(void **state)
{
    (void)state;
    mdf_frame frames[10];
    size_t idx[10];
    /* [5, 5, 5, 12, 15] with 20 atoms: {5, 12}. */
    int a[] = {5, 5, 5, 12, 15};
    mdf_sampler *s = sampler_over(frames, a, 5, 20);
    size_t n = mdf_sampler_take(s, 20, -1, -1, idx, 10);
    assert_int_equal(n, 2);
    assert_int_equal(a[idx[0]], 5);
    assert_int_equal(a[idx[1]], 12);
    assert_int_equal(mdf_sampler_remaining(s), 3);
    mdf_sampler_destroy(s);
    free_frames(frames, 5);
    /* 60 atoms over {5, 10, 20, 50}: the oldest, then 50 before 10 and 20. */
    int b[] = {5, 10, 20, 50};
    s = sampler_over(frames, b, 4, 60);
    n = mdf_sampler_take(s, 60, -1, -1, idx, 10);
    assert_int_equal(n, 2);
    assert_int_equal(b[idx[0]], 5);
    assert_int_equal(b[idx[1]], 50);
    mdf_sampler_destroy(s);
    free_frames(frames, 4);
    /* 35 over ten systems of 10: 3. */
    int c[10];
    for (int i = 0; i < 10; i++) c[i] = 10;
    s = sampler_over(frames, c, 10, 35);
    n = mdf_sampler_take(s, 35, -1, -1, idx, 10);
    assert_int_equal(n, 3);
    for (size_t k = 0; k < n; k++) assert_int_equal(idx[k], k); /* in input order among equals */
    /* The system budget is a maximum; a later call continues where it stopped. */
    n = mdf_sampler_take(s, 1000, -1, 2, idx, 10);
    assert_int_equal(n, 2);
    assert_int_equal(idx[0], 3);
    mdf_sampler_destroy(s);
    free_frames(frames, 10);
}

static void test_oldest_waits_for_room(void **state)
{
    (void)state;
    mdf_frame frames[3];
    size_t idx[3];
    int a[] = {30, 5, 5};
    mdf_sampler *s = sampler_over(frames, a, 3, 40);
    /* 20 atoms of room: the oldest (30) does not fit, so nothing is taken,
     * rather than letting smaller systems overtake it for ever. */
    assert_int_equal(mdf_sampler_take(s, 20, -1, -1, idx, 3), 0);
    assert_int_equal(mdf_sampler_take(s, 40, -1, -1, idx, 3), 2);
    assert_int_equal(idx[0], 0);
    mdf_sampler_destroy(s);
    free_frames(frames, 3);
}

static void test_pairs_budget_and_refusals(void **state)
{
    (void)state;
    /* Lines of 2, 3 and 4 atoms 3.9 Å apart with a 5 Å pair cutoff: 1, 2 and
     * 3 pairs. */
    mdf_frame frames[3];
    int sizes[] = {2, 3, 4};
    for (int i = 0; i < 3; i++) frames[i] = line_of(sizes[i]);
    mdf_sampler_config sc;
    mdf_sampler_config_init(&sc);
    sc.max_atoms = 100;
    sc.max_pairs = 5;
    sc.pair_cutoff = 5.0;
    mdf_sampler *s = NULL;
    TU_CALL(mdf_sampler_create, frames, 3, &sc, &s);
    assert_int_equal(mdf_sampler_pairs(s, 0), 1);
    assert_int_equal(mdf_sampler_pairs(s, 1), 2);
    assert_int_equal(mdf_sampler_pairs(s, 2), 3);
    size_t idx[3];
    /* Below 5 pairs: 1 (oldest), then 3 (largest that fits: 4 < 5), no room for 2 more. */
    size_t n = mdf_sampler_take(s, 100, 5, -1, idx, 3);
    assert_int_equal(n, 2);
    assert_int_equal(idx[0], 0);
    assert_int_equal(idx[1], 2);
    mdf_sampler_destroy(s);
    /* A system as large as the atom budget can never be in flight. */
    mdf_error err;
    mdf_error_clear(&err);
    sc.max_pairs = 0;
    sc.max_atoms = 4;
    assert_int_equal(mdf_sampler_create(frames, 3, &sc, &s, &err), MDF_ERR_INVALID);
    assert_non_null(strstr(err.message, "system 2"));
    assert_non_null(strstr(err.message, "4 atoms"));
    assert_non_null(strstr(err.message, "max_atoms"));
    mdf_error_clear(&err);
    sc.max_atoms = 100;
    sc.max_pairs = 3;
    assert_int_equal(mdf_sampler_create(frames, 3, &sc, &s, &err), MDF_ERR_INVALID);
    assert_non_null(strstr(err.message, "system 2"));
    assert_non_null(strstr(err.message, "max_pairs"));
    sc.pair_cutoff = 0.0;
    assert_int_equal(mdf_sampler_create(frames, 3, &sc, &s, NULL), MDF_ERR_INVALID);
    free_frames(frames, 3);
}

/* ---- fused inflight runs ------------------------------------------------------------ */

#define NDATA 12
#define MD_STEPS 30
#define MAX_ATOMS 130

static mdf_frame dataset_frame(int i) { return tu_mixed_cluster(i, 0.08, 300 + (uint64_t)i); }

/* Jitter from 0.02 to 0.35 Å: relaxations of very different lengths, so
 * that systems finish one by one. */
static mdf_frame spread_frame(int i) { return tu_mixed_cluster(i, 0.02 + 0.03 * i, 700 + (uint64_t)i); }

static mdf_model *argon(void)
{
    mdf_lj_config lj = tu_argon(6.5, 1);
    mdf_model *m = NULL;
    TU_CALL(mdf_model_create_lj, &lj, &m);
    return m;
}

/* FIRE to fmax 0.01 (status 0 -> 1). */
static mdf_stage *relax_part(void)
{
    mdf_stage_config sc;
    mdf_stage_config_init(&sc);
    sc.integrator = "fire";
    sc.max_steps = 2000;
    mdf_stage *s = NULL;
    TU_CALL(mdf_stage_create, &sc, &s);
    TU_CALL(mdf_stage_add_criterion, s, MDF_CRITERION_FMAX, 0.01);
    return s;
}

/* Langevin at 25 K for MD_STEPS steps from entry velocities (1 -> 2). */
static mdf_stage *md_part(void)
{
    mdf_stage_config sc;
    mdf_stage_config_init(&sc);
    sc.integrator = "langevin";
    sc.status = 1;
    sc.converged_status = 2;
    sc.params.dt_fs = 5.0;
    sc.params.temperature_K = 25.0;
    sc.params.seed = 4;
    sc.entry_temperature_K = 25.0;
    sc.max_steps = MD_STEPS + 10;
    mdf_stage *s = NULL;
    TU_CALL(mdf_stage_create, &sc, &s);
    TU_CALL(mdf_stage_add_criterion, s, MDF_CRITERION_STEPS, MD_STEPS);
    return s;
}

static mdf_stage *relax_then_md(void)
{
    mdf_stage *fused = NULL;
    TU_CALL(mdf_fuse, relax_part(), md_part(), &fused);
    return fused;
}

typedef struct finished {
    pthread_mutex_t lock;
    int seen[NDATA];
    int status[NDATA];
    int64_t step[NDATA];
    double pos[NDATA][3 * 64];
    int natoms[NDATA];
    int64_t step_atoms[4096];  /* atoms in flight per stage step (AFTER_STEP rows) */
    int64_t seen_at[4096][NDATA];
    int64_t last_step;         /* latest stage step of an AFTER_STEP event */
    int64_t out_after[NDATA];  /* last_step when the system was handed out */
} finished;

static int on_exit_cb(void *user, const mdf_frame *f, const mdf_system_view *v)
{
    finished *fin = (finished *)user;
    assert_true(v->id >= 0 && v->id < NDATA);
    fin->seen[v->id]++;
    fin->status[v->id] = v->status;
    fin->step[v->id] = v->step;
    fin->natoms[v->id] = (int)f->natoms;
    /* Refills wait for every task: the hooks' latest step names the refill. */
    pthread_mutex_lock(&fin->lock);
    fin->out_after[v->id] = fin->last_step;
    pthread_mutex_unlock(&fin->lock);
    memcpy(fin->pos[v->id], f->positions, sizeof(double) * 3 * (size_t)f->natoms);
    /* Handed out with the virial of its final positions (one more
     * evaluation at the refill or the end: systems leave between the steps
     * that compute it). */
    assert_true(tu_frame_virial_is_current(f, (long long)v->id));
    return 0;
}

/* Atoms in flight at each step: every system a part's AFTER_STEP rows name,
 * once (a system that just moved from part 0 to part 1 shows in both). */
static void count_atoms(void *user, const mdf_hook_event *ev)
{
    finished *fin = (finished *)user;
    if (ev->step < 0 || ev->step >= 4096) return;
    pthread_mutex_lock(&fin->lock);
    if (ev->step > fin->last_step) fin->last_step = ev->step;
    for (size_t r = 0; r < ev->nrows; r++) {
        int64_t id = ev->rows[r].id;
        if (id < 0 || id >= NDATA || ev->rows[r].status == 2) continue; /* exited: not in flight */
        if (fin->seen_at[ev->step][id] == 0) fin->step_atoms[ev->step] += ev->rows[r].natoms;
        fin->seen_at[ev->step][id] = 1;
    }
    pthread_mutex_unlock(&fin->lock);
}

static void inflight_run(mdf_frame (*frame_of)(int), const char *sched, int nshards, int64_t refill, double fraction,
                         finished *fin, mdf_stage_report *rep)
{
    tu_start(sched, 2, 0);
    mdf_frame frames[NDATA];
    for (int i = 0; i < NDATA; i++) frames[i] = frame_of(i);
    mdf_sampler_config sc;
    mdf_sampler_config_init(&sc);
    sc.max_atoms = MAX_ATOMS;
    mdf_sampler *sampler = NULL;
    TU_CALL(mdf_sampler_create, frames, NDATA, &sc, &sampler);
    mdf_model *m = argon();
    mdf_stage *s = relax_then_md();
    TU_CALL(mdf_stage_set_max_steps, s, 5000);
    memset(fin, 0, sizeof *fin);
    pthread_mutex_init(&fin->lock, NULL);
    for (int p = 0; p < 2; p++) {
        mdf_hook *h = NULL;
        TU_CALL(mdf_hook_create_callback, "count", MDF_AFTER_STEP, 1, count_atoms, fin, &h);
        TU_CALL(mdf_stage_add_part_hook, s, p, h);
    }
    mdf_inflight_config ic;
    mdf_inflight_config_init(&ic);
    ic.sampler = sampler;
    ic.refill_interval = refill;
    ic.refill_fraction = fraction;
    ic.nshards = nshards;
    ic.on_exit = on_exit_cb;
    ic.user = fin;
    TU_CALL(mdf_stage_run_inflight, s, m, &ic, rep);
    mdf_stage_destroy(s);
    mdf_model_destroy(m);
    mdf_sampler_destroy(sampler);
    for (int i = 0; i < NDATA; i++) mdf_frame_free(&frames[i]);
    tu_stop();
}

/* Reference: each system alone, relaxation then MD as separate plain stages. */
static void alone(int i, double *pos, int64_t *step)
{
    mdf_frame f = dataset_frame(i);
    char id[16];
    snprintf(id, sizeof id, "%d", i);
    TU_CALL(mdf_frame_set_info, &f, "mdf_system_id", id);
    mdf_batch *b = NULL;
    TU_CALL(mdf_batch_create, &f, 1, NULL, &b);
    mdf_model *m = argon();
    /* The fused stage's parts, as plain stages run one after the other. */
    mdf_stage *relax = relax_part(), *md = md_part();
    TU_CALL(mdf_stage_run, relax, b, m, NULL);
    TU_CALL(mdf_stage_run, md, b, m, NULL);
    mdf_frame out;
    TU_CALL(mdf_batch_get_frame, b, 0, &out);
    mdf_system_view v;
    TU_CALL(mdf_batch_get_system, b, 0, &v);
    assert_int_equal(v.status, 2);
    memcpy(pos, out.positions, sizeof(double) * 3 * (size_t)out.natoms);
    *step = v.step;
    mdf_frame_free(&out);
    mdf_frame_free(&f);
    mdf_stage_destroy(relax);
    mdf_stage_destroy(md);
    mdf_batch_destroy(b);
    mdf_model_destroy(m);
}

/* With refill_fraction f, every refill but the last hand-out moved at least
 * f of the atom budget out, or found nothing left to move (one shard). */
static void check_refill_groups(const finished *fin, double fraction)
{
    int64_t last = 0;
    for (int i = 0; i < NDATA; i++) last = fin->out_after[i] > last ? fin->out_after[i] : last;
    int groups = 0;
    for (int64_t t = 0; t < last; t++) {
        int64_t gone = 0;
        for (int i = 0; i < NDATA; i++) gone += fin->out_after[i] == t ? fin->natoms[i] : 0;
        if (gone == 0) continue;
        groups++;
        if (!((double)gone >= fraction * (MAX_ATOMS - 1) || fin->step_atoms[t] == 0))
            fail_msg("the refill after step %lld handed out %lld atoms with %lld still moving (fraction %g)",
                     (long long)t, (long long)gone, (long long)fin->step_atoms[t], fraction);
    }
    assert_true(groups >= 2); /* systems really were replaced along the way */
}

static void test_inflight_matches_alone(void **state)
{
    (void)state;
    static double ref_pos[NDATA][3 * 64];
    static int64_t ref_step[NDATA];
    tu_start("eager", 2, 0);
    for (int i = 0; i < NDATA; i++) alone(i, ref_pos[i], &ref_step[i]);
    tu_stop();
    static finished fin;
    static const struct {
        const char *sched;
        int shards;
        int64_t refill;
        double fraction;
    } runs[] = {{"eager", 1, 5, 0.0}, {"dmda", 2, 1, 0.1}};
    for (int k = 0; k < 2; k++) {
        mdf_stage_report rep;
        inflight_run(dataset_frame, runs[k].sched, runs[k].shards, runs[k].refill, runs[k].fraction, &fin, &rep);
        int64_t peak = 0;
        for (int t = 0; t < 4096; t++) peak = fin.step_atoms[t] > peak ? fin.step_atoms[t] : peak;
        double dx = 0.0;
        for (int i = 0; i < NDATA; i++) {
            /* Every system exactly once, with its id, finished. */
            assert_int_equal(fin.seen[i], 1);
            assert_int_equal(fin.status[i], 2);
            assert_int_equal(fin.step[i], ref_step[i]);
            for (int c = 0; c < 3 * fin.natoms[i]; c++) dx = fmax(dx, fabs(fin.pos[i][c] - ref_pos[i][c]));
        }
        printf("  %s, %d shards, refill every %lld, fraction %g: %lld steps, %lld evaluations, %lld refills for %d systems, "
               "peak %lld atoms in flight (budget: below %d), max |dx| vs alone %.3g A\n",
               runs[k].sched, runs[k].shards, (long long)runs[k].refill, runs[k].fraction, (long long)rep.steps,
               (long long)rep.model_evaluations, (long long)rep.refills, NDATA, (long long)peak, MAX_ATOMS, dx);
        assert_int_equal(rep.converged, NDATA);
        assert_int_equal(rep.remaining, 0);
        /* one evaluation per step and step 0, also once a shard ran empty */
        assert_int_equal(rep.model_evaluations, rep.steps + 1);
        assert_true(peak < MAX_ATOMS);
        assert_true(peak > MAX_ATOMS / 2); /* the batch was actually kept full */
        /* The batch never holds every system: systems really were replaced. */
        int64_t total = 0;
        for (int i = 0; i < NDATA; i++) total += fin.natoms[i];
        assert_true(total >= MAX_ATOMS);
        /* Round-off: forces at a refill are evaluated again at unchanged
         * positions with lists built at another time. */
        assert_true(dx < 1e-9);
    }
}

/* Refill points (every step here) refill only once the systems that left
 * hold refill_fraction of the atom budget: fewer refills, each moving more. */
static void test_refill_fraction(void **state)
{
    (void)state;
    static finished fin;
    const double fractions[2] = {0.0, 0.5};
    int64_t refills[2], steps[2];
    for (int k = 0; k < 2; k++) {
        mdf_stage_report rep;
        inflight_run(spread_frame, "eager", 1, 1, fractions[k], &fin, &rep);
        for (int i = 0; i < NDATA; i++) assert_int_equal(fin.seen[i], 1);
        assert_int_equal(rep.converged, NDATA);
        check_refill_groups(&fin, fractions[k]);
        refills[k] = rep.refills;
        steps[k] = rep.steps;
        printf("  refill_fraction %g: %lld refills, %lld steps for %d systems\n", fractions[k], (long long)refills[k],
               (long long)steps[k], NDATA);
    }
    assert_true(refills[1] < refills[0]);
}

/* Frames that carry ids of their own, as in a file mdflow wrote (here 5000
 * + the reversed position): the pair budget still holds at every step. The
 * budget counts each system's pairs by its place in the dataset. */
#define FOREIGN_ID(i) (5000 + (NDATA - 1 - (i)))

typedef struct pair_watch {
    pthread_mutex_t lock;
    int64_t pairs_of[NDATA]; /* by position in the dataset */
    int64_t step_pairs[4096];
    unsigned char seen_at[4096][NDATA];
    int exits[NDATA];
} pair_watch;

static int foreign_position(int64_t id)
{
    int64_t i = NDATA - 1 - (id - 5000);
    return i >= 0 && i < NDATA ? (int)i : -1;
}

static void count_pairs(void *user, const mdf_hook_event *ev)
{
    pair_watch *w = (pair_watch *)user;
    if (ev->step < 0 || ev->step >= 4096) return;
    pthread_mutex_lock(&w->lock);
    for (size_t r = 0; r < ev->nrows; r++) {
        int i = foreign_position(ev->rows[r].id);
        assert_true(i >= 0);
        if (ev->rows[r].status == 2 || w->seen_at[ev->step][i]) continue;
        w->seen_at[ev->step][i] = 1;
        w->step_pairs[ev->step] += w->pairs_of[i];
    }
    pthread_mutex_unlock(&w->lock);
}

static int count_exit(void *user, const mdf_frame *f, const mdf_system_view *v)
{
    (void)f;
    pair_watch *w = (pair_watch *)user;
    int i = foreign_position(v->id);
    assert_true(i >= 0);
    w->exits[i]++;
    return 0;
}

static void test_pair_budget_with_foreign_ids(void **state)
{
    (void)state;
    tu_start("eager", 2, 0);
    static pair_watch w;
    memset(&w, 0, sizeof w);
    pthread_mutex_init(&w.lock, NULL);
    mdf_frame frames[NDATA];
    for (int i = 0; i < NDATA; i++) {
        frames[i] = spread_frame(i); /* systems leave one by one */
        char id[16];
        snprintf(id, sizeof id, "%d", FOREIGN_ID(i));
        TU_CALL(mdf_frame_set_info, &frames[i], "mdf_system_id", id);
    }
    mdf_sampler_config sc;
    mdf_sampler_config_init(&sc);
    sc.max_atoms = 100000; /* not the binding budget */
    sc.pair_cutoff = 7.0;
    mdf_sampler *sampler = NULL;
    TU_CALL(mdf_sampler_create, frames, NDATA, &sc, &sampler);
    int64_t total = 0, largest = 0;
    for (int i = 0; i < NDATA; i++) {
        w.pairs_of[i] = mdf_sampler_pairs(sampler, (size_t)i);
        total += w.pairs_of[i];
        largest = w.pairs_of[i] > largest ? w.pairs_of[i] : largest;
    }
    mdf_sampler_destroy(sampler);
    /* Room for one of the three large systems at a time, beside small ones. */
    sc.max_pairs = largest + largest / 4;
    TU_CALL(mdf_sampler_create, frames, NDATA, &sc, &sampler);
    mdf_model *m = argon();
    mdf_stage *s = relax_then_md();
    TU_CALL(mdf_stage_set_max_steps, s, 4000);
    for (int p = 0; p < 2; p++) {
        mdf_hook *h = NULL;
        TU_CALL(mdf_hook_create_callback, "pairs", MDF_AFTER_STEP, 1, count_pairs, &w, &h);
        TU_CALL(mdf_stage_add_part_hook, s, p, h);
    }
    mdf_inflight_config ic;
    mdf_inflight_config_init(&ic);
    ic.sampler = sampler;
    ic.refill_interval = 1;
    ic.refill_fraction = 0.0;
    ic.nshards = 1;
    ic.on_exit = count_exit;
    ic.user = &w;
    mdf_stage_report rep;
    TU_CALL(mdf_stage_run_inflight, s, m, &ic, &rep);
    int64_t peak = 0;
    for (int t = 0; t < 4096; t++) peak = w.step_pairs[t] > peak ? w.step_pairs[t] : peak;
    printf("  foreign ids: pair budget %lld (dataset %lld), peak %lld pairs in flight, %lld refills\n",
           (long long)sc.max_pairs, (long long)total, (long long)peak, (long long)rep.refills);
    for (int i = 0; i < NDATA; i++) assert_int_equal(w.exits[i], 1);
    assert_int_equal(rep.converged, NDATA);
    assert_true(rep.refills >= 2);
    assert_true(peak < sc.max_pairs);
    assert_true(peak > largest); /* a large system and small ones shared the batch */
    mdf_stage_destroy(s);
    mdf_model_destroy(m);
    mdf_sampler_destroy(sampler);
    for (int i = 0; i < NDATA; i++) mdf_frame_free(&frames[i]);
    tu_stop();
}

static void test_inflight_errors(void **state)
{
    (void)state;
    tu_start("eager", 2, 0);
    mdf_frame frames[2] = {dataset_frame(0), dataset_frame(1)};
    frames[1].numbers[3] = 36; /* krypton: the argon model has no parameters for it */
    mdf_sampler_config sc;
    mdf_sampler_config_init(&sc);
    sc.max_atoms = 200;
    mdf_sampler *sampler = NULL;
    TU_CALL(mdf_sampler_create, frames, 2, &sc, &sampler);
    mdf_model *m = argon();
    mdf_stage *s = relax_then_md();
    mdf_inflight_config ic;
    mdf_inflight_config_init(&ic);
    ic.sampler = sampler;
    mdf_error err;
    mdf_error_clear(&err);
    /* Refused before any work, naming the system. */
    assert_int_equal(mdf_stage_run_inflight(s, m, &ic, NULL, &err), MDF_ERR_INVALID);
    assert_non_null(strstr(err.message, "system 1"));
    assert_non_null(strstr(err.message, "Kr"));
    ic.refill_interval = 0;
    assert_int_equal(mdf_stage_run_inflight(s, m, &ic, NULL, NULL), MDF_ERR_INVALID);
    mdf_stage_destroy(s);
    mdf_model_destroy(m);
    mdf_sampler_destroy(sampler);
    mdf_frame_free(&frames[0]);
    mdf_frame_free(&frames[1]);
    tu_stop();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_packing_cases),
        cmocka_unit_test(test_oldest_waits_for_room),
        cmocka_unit_test(test_pairs_budget_and_refusals),
        cmocka_unit_test(test_pair_budget_with_foreign_ids),
        cmocka_unit_test(test_inflight_errors),
        cmocka_unit_test(test_inflight_matches_alone),
        cmocka_unit_test(test_refill_fraction),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
