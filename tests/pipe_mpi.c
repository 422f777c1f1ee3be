/* mdflow tests — a pipeline over MPI ranks through the C API, one case per
 * run (tests/test_pipe_mpi.sh starts it under mpirun):
 *
 *   pipe_mpi match [RANKS_OF_MD]   relax | md over the ranks; rank 0 then runs
 *                                  relax + md fused on the same dataset and
 *                                  compares every system (exit 0: the same)
 *   pipe_mpi backpressure          md with a one-system budget and inbox: rank 0
 *                                  checks that relax was held back and that
 *                                  the inbox never held more than its capacity
 *   pipe_mpi fail                  a NaN in md (rank 1, or 1 and 2): every rank
 *                                  must stop with an error naming stage md,
 *                                  its rank and the NaN (exit 3 when it did)
 *   pipe_mpi kill                  rank 1 kills itself during the run (mpirun
 *                                  must end the job)
 *   pipe_mpi refuse                md's budget is smaller than a system: every
 *                                  rank refuses before any work (exit 3)
 *
 * Each rank prints "rank R: ..." lines; failures print "FAIL". */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "mdflow/mdflow.h"
#include "testutil.h"

#define NDATA 24
#define MD_STEPS 40
#define MAX_ATOMS 200

typedef struct outcome {
    pthread_mutex_t lock;
    int seen[NDATA];
    int status[NDATA];
    int64_t step[NDATA];
    double energy[NDATA];
    int natoms[NDATA];
    double pos[NDATA][3 * 64];
    int calls;
} outcome;

static int rank;

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
        o->energy[i] = v->potential_energy;
        o->natoms[i] = (int)f->natoms;
        memcpy(o->pos[i], f->positions, sizeof(double) * 3 * (size_t)f->natoms);
    }
    pthread_mutex_unlock(&o->lock);
    return 0;
}

static mdf_stage *make_stage(const char *method, int64_t steps, double fmax)
{
    mdf_stage_config sc;
    mdf_stage_config_init(&sc);
    sc.integrator = method;
    sc.max_steps = 100000;
    if (fmax > 0.0) sc.step_budget = 400;
    else {
        sc.params.dt_fs = 5.0;
        sc.params.temperature_K = 25.0;
        sc.params.seed = 4;
        sc.entry_temperature_K = 25.0;
    }
    mdf_stage *s = NULL;
    mdf_error err;
    mdf_error_clear(&err);
    if (mdf_stage_create(&sc, &s, &err) != MDF_OK ||
        mdf_stage_add_criterion(s, fmax > 0.0 ? MDF_CRITERION_FMAX : MDF_CRITERION_STEPS,
                                fmax > 0.0 ? fmax : (double)steps, &err) != MDF_OK) {
        fprintf(stderr, "rank %d: FAIL: %s\n", rank, err.message);
        exit(1);
    }
    return s;
}

static void check(mdf_status st, const mdf_error *err, const char *what)
{
    if (st == MDF_OK) return;
    fprintf(stderr, "rank %d: FAIL: %s: %s\n", rank, what, err->message);
    exit(1);
}

static void *kill_later(void *arg)
{
    (void)arg;
    usleep(1500 * 1000);
    fprintf(stderr, "rank %d: killing myself (SIGKILL)\n", rank);
    fflush(stderr);
    raise(SIGKILL);
    return NULL;
}

static int compare_with_fused(const outcome *got, mdf_frame *frames, mdf_model *m)
{
    outcome *ref = calloc(1, sizeof *ref);
    pthread_mutex_init(&ref->lock, NULL);
    mdf_error err;
    mdf_error_clear(&err);
    mdf_sampler_config sc;
    mdf_sampler_config_init(&sc);
    sc.max_atoms = MAX_ATOMS;
    mdf_sampler *sampler = NULL;
    check(mdf_sampler_create(frames, NDATA, &sc, &sampler, &err), &err, "sampler");
    mdf_stage *s = NULL;
    check(mdf_fuse(make_stage("fire", 0, 0.01), make_stage("langevin", MD_STEPS, 0.0), &s, &err), &err, "fuse");
    mdf_inflight_config ic;
    mdf_inflight_config_init(&ic);
    ic.sampler = sampler;
    ic.on_exit = on_exit_cb;
    ic.user = ref;
    check(mdf_stage_run_inflight(s, m, &ic, NULL, &err), &err, "fused run");
    mdf_stage_destroy(s);
    mdf_sampler_destroy(sampler);
    double worst_pos = 0.0, worst_e = 0.0;
    int bad = 0;
    for (int i = 0; i < NDATA; i++) {
        if (got->seen[i] != 1 || ref->seen[i] != 1 || got->status[i] != 2 || got->status[i] != ref->status[i] ||
            got->step[i] != ref->step[i]) {
            fprintf(stderr, "rank 0: FAIL: system %d: seen %d/%d, status %d/%d, step %lld/%lld\n", i, got->seen[i],
                    ref->seen[i], got->status[i], ref->status[i], (long long)got->step[i], (long long)ref->step[i]);
            bad = 1;
        }
        for (int k = 0; k < 3 * ref->natoms[i]; k++) worst_pos = fmax(worst_pos, fabs(got->pos[i][k] - ref->pos[i][k]));
        worst_e = fmax(worst_e, fabs(got->energy[i] - ref->energy[i]) / fmax(fabs(ref->energy[i]), 1e-3));
    }
    printf("rank 0: pipeline over ranks vs fused: %d systems, positions %.3g A, energies %.3g relative\n", NDATA,
           worst_pos, worst_e);
    free(ref);
    if (worst_pos > 1e-7 || worst_e > 1e-9) bad = 1;
    return bad;
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "match";
    mdf_runtime_config rc;
    mdf_runtime_config_init(&rc);
    rc.mpi = 1;
    mdf_error err;
    mdf_error_clear(&err);
    check(mdf_runtime_start(&rc, &err), &err, "start");
    rank = mdf_runtime_mpi_rank();
    int nranks = mdf_runtime_mpi_size();
    mdf_frame frames[NDATA];
    for (int i = 0; i < NDATA; i++) frames[i] = tu_mixed_cluster(i, 0.02 + 0.012 * i, 900 + (uint64_t)i);
    mdf_lj_config lj = tu_argon(6.5, 1);
    mdf_model *m = NULL;
    check(mdf_model_create_lj(&lj, &m, &err), &err, "model");

    int fail_case = !strcmp(mode, "fail"), kill_case = !strcmp(mode, "kill");
    int bp = !strcmp(mode, "backpressure"), refuse = !strcmp(mode, "refuse");
    mdf_pipeline *p = NULL;
    check(mdf_pipeline_create(&p, &err), &err, "pipeline");
    mdf_pipe_stage_config a, b;
    mdf_pipe_stage_config_init(&a);
    mdf_pipe_stage_config_init(&b);
    snprintf(a.name, sizeof a.name, "relax");
    snprintf(b.name, sizeof b.name, "md");
    a.budget.max_atoms = MAX_ATOMS;
    b.budget.max_atoms = refuse ? 20 : bp ? 60 : MAX_ATOMS;
    if (bp) {
        b.inbox_systems = 2;
        b.inbox_atoms = 120;
    }
    if (argc > 2) { /* md's ranks, e.g. "1,2" */
        char *save = NULL, *list = strdup(argv[2]);
        for (char *t = strtok_r(list, ",", &save); t; t = strtok_r(NULL, ",", &save)) b.ranks[b.nranks++] = atoi(t);
        free(list);
        a.ranks[a.nranks++] = 0;
    }
    mdf_stage *md = make_stage("langevin", kill_case || fail_case ? 100000 : bp ? 400 : MD_STEPS, 0.0);
    if (fail_case) {
        mdf_hook *nan = NULL;
        check(mdf_stage_add_hook(md, tu_poison_hook(3, -5), &err), &err, "poison");
        check(mdf_hook_create_nan_check(1, MDF_NAN_STOP, NULL, &nan, &err), &err, "nan check");
        check(mdf_stage_add_hook(md, nan, &err), &err, "nan check");
    }
    check(mdf_pipeline_add(p, make_stage("fire", 0, 0.01), &a, &err), &err, "add relax");
    check(mdf_pipeline_add(p, md, &b, &err), &err, "add md");

    outcome *got = calloc(1, sizeof *got);
    pthread_mutex_init(&got->lock, NULL);
    mdf_pipe_run_config pc;
    mdf_pipe_run_config_init(&pc);
    pc.frames = frames;
    pc.nframes = NDATA;
    pc.mpi = 1;
    pc.on_exit = on_exit_cb;
    pc.user = got;
    pthread_t killer;
    if (kill_case && rank == 1) pthread_create(&killer, NULL, kill_later, NULL);
    mdf_pipe_report rep;
    mdf_status st = mdf_pipeline_run(p, m, &pc, &rep, &err);
    int code = 0;
    if (fail_case || refuse) {
        /* md runs on rank 1, or on ranks 1 and 2: system 3 fails on either */
        const char *want = fail_case ? "failed: NaN" : "stage 'md' keeps the atoms";
        int ok = st != MDF_OK && strstr(err.message, want) && (!refuse || got->calls == 0) &&
                 (!fail_case || strstr(err.message, "stage 'md' on rank "));
        fprintf(stderr, "rank %d: %s (status %d): %s\n", rank, ok ? "stopped as expected" : "FAIL", (int)st, err.message);
        code = ok ? 3 : 1;
        if (!ok && st == MDF_OK && rank == 0)
            for (int i = 0; i < rep.n; i++)
                fprintf(stderr, "rank 0: stage %s on rank %d: in %lld out %lld unfinished %lld steps %lld\n",
                        rep.stages[i].name, rep.stages[i].rank, (long long)rep.stages[i].systems_in,
                        (long long)rep.stages[i].systems_out, (long long)rep.stages[i].systems_unfinished,
                        (long long)rep.stages[i].steps);
    } else if (st != MDF_OK) {
        fprintf(stderr, "rank %d: FAIL: %s\n", rank, err.message);
        code = 1;
    } else if (rank == 0) {
        for (int i = 0; i < rep.n; i++) {
            const mdf_pipe_stage_report *r = &rep.stages[i];
            printf("rank 0: stage %s on rank %d: in %lld out %lld steps %lld, blocked %.3f s, starved %.3f s, held "
                   "max %lld, inbox high-water %lld/%lld systems %lld/%lld atoms\n", r->name, r->rank,
                   (long long)r->systems_in, (long long)r->systems_out, (long long)r->steps, r->blocked_s,
                   r->starved_s, (long long)r->held_max, (long long)r->inbox_hwm_systems,
                   (long long)r->inbox_cap_systems, (long long)r->inbox_hwm_atoms, (long long)r->inbox_cap_atoms);
            if (r->stage == 1 && (r->inbox_hwm_atoms > r->inbox_cap_atoms ||
                                  (r->inbox_cap_systems > 0 && r->inbox_hwm_systems > r->inbox_cap_systems))) {
                fprintf(stderr, "rank 0: FAIL: inbox above its capacity\n");
                code = 1;
            }
        }
        if (rep.n != 1 + (b.nranks ? b.nranks : nranks - 1) || rep.finished != NDATA) {
            fprintf(stderr, "rank 0: FAIL: %d stage reports, %lld finished\n", rep.n, (long long)rep.finished);
            code = 1;
        }
        if (bp && !(rep.stages[0].blocked_s > 0.0 && rep.stages[0].held_max > 0)) {
            fprintf(stderr, "rank 0: FAIL: no back-pressure seen\n");
            code = 1;
        }
        if (!bp && !code) code = compare_with_fused(got, frames, m);
    }
    mdf_pipe_report_free(&rep);
    mdf_pipeline_destroy(p);
    mdf_model_destroy(m);
    for (int i = 0; i < NDATA; i++) mdf_frame_free(&frames[i]);
    free(got);
    mdf_runtime_stop();
    if (code == 0) printf("rank %d: ok\n", rank);
    return code;
}
