/* mdflow — the dynamics stage: the step loop, its hooks, convergence and the
 * submission window.
 *
 * Per step and shard the stage submits, in this order:
 *   hooks BEFORE_STEP, BEFORE_PRE_UPDATE; pre_update; hooks AFTER_PRE_UPDATE,
 *   BEFORE_COMPUTE; model; hooks AFTER_COMPUTE, BEFORE_POST_UPDATE;
 *   post_update; hooks AFTER_POST_UPDATE; convergence; hooks ON_CONVERGE,
 *   AFTER_STEP.
 * StarPU orders them by their data access modes only. The host keeps at most
 * `window` steps in flight, and every `check_interval` steps submits a census
 * task per shard that counts the stage's systems left; once a census says
 * none is left anywhere, the host stops submitting. It never waits per step. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "integrator.h"
#include "hook_internal.h"
#include "mdflow/units.h"
#include "../dataflow/compute.h"
#include "../codelets/converge/converge_codelet.h"
#include "../codelets/host/host_view_codelet.h"
#include "../codelets/velocity/velocity_codelet.h"

#define MDF_MAX_HOOKS 64

_Static_assert(MDF_SYSTEM_CONVERGED_NOW == MDF_SYS_CONVERGED_NOW && MDF_SYSTEM_NONFINITE_POS == MDF_SYS_NONFINITE_POS &&
                   MDF_SYSTEM_NONFINITE_VEL == MDF_SYS_NONFINITE_VEL &&
                   MDF_SYSTEM_NONFINITE_FORCE == MDF_SYS_NONFINITE_FORCE &&
                   MDF_SYSTEM_NONFINITE_ENERGY == MDF_SYS_NONFINITE_ENERGY &&
                   MDF_SYSTEM_BUDGET_EXIT == MDF_SYS_BUDGET_EXIT,
               "public and kernel system flags agree");

struct mdf_stage {
    mdf_stage_config cfg;
    const mdf_integrator_ops *integ;
    int nhooks;
    mdf_hook *hooks[MDF_MAX_HOOKS];
    int crit_mask;
    double fmax_thr, de_thr;
    int64_t steps_thr;
};

void mdf_dynamics_params_init(mdf_dynamics_params *p)
{
    memset(p, 0, sizeof *p);
    p->dt_fs = 1.0;
    p->temperature_K = 300.0;
    p->seed = 1;
    p->langevin.friction_per_fs = 0.01;
    p->nose_hoover.tau_fs = 100.0;
    p->nose_hoover.chain = 3;
    p->bussi.tau_fs = 100.0;
    p->npt.pressure_bar = 1.0;
    p->npt.tau_p_fs = 1000.0;
    p->npt.compressibility_per_bar = 4.5e-5;
    p->npt.tau_t_fs = 100.0;
    p->fire.dt = 0.1;
    p->fire.dtmax = 1.0;
    p->fire.maxstep = 0.2;
    p->fire.nmin = 5;
    p->fire.finc = 1.1;
    p->fire.fdec = 0.5;
    p->fire.astart = 0.1;
    p->fire.fa = 0.99;
    p->fire2.dt = 0.1;
    p->fire2.dtmax = 1.0;
    p->fire2.dtmin = 2e-3;
    p->fire2.maxstep = 0.2;
    p->fire2.nmin = 20;
    p->fire2.finc = 1.1;
    p->fire2.fdec = 0.5;
    p->fire2.astart = 0.25;
    p->fire2.fa = 0.99;
    p->gd.step = 0.01;
    p->gd.maxstep = 0.2;
    p->lbfgs.memory = 100;
    p->lbfgs.alpha = 70.0;
    p->lbfgs.damping = 1.0;
    p->lbfgs.maxstep = 0.2;
}

void mdf_stage_config_init(mdf_stage_config *cfg)
{
    memset(cfg, 0, sizeof *cfg);
    cfg->integrator = "velocity_verlet";
    cfg->status = 0;
    cfg->converged_status = 1;
    cfg->max_steps = 1000;
    cfg->check_interval = 10;
    cfg->window = 8;
    cfg->skin = 1.0;
    mdf_dynamics_params_init(&cfg->params);
}

static mdf_status check_config(const mdf_stage_config *cfg, const mdf_integrator_ops **integ, mdf_error *err)
{
    const char *name = cfg->integrator ? cfg->integrator : "velocity_verlet";
    *integ = mdf_find_integrator(name);
    if (!*integ) {
        char names[512] = "";
        for (size_t k = 0; k < mdf_integrator_count(); k++) {
            strncat(names, k ? ", " : "", sizeof names - strlen(names) - 1);
            strncat(names, mdf_integrator_name(k), sizeof names - strlen(names) - 1);
        }
        return mdf_error_set(err, MDF_ERR_INVALID, "unknown integrator '%s': use one of %s", name, names);
    }
    const mdf_dynamics_params *p = &cfg->params;
    if (!((*integ)->flags & MDF_INTEG_OPTIMISER) && (!(p->dt_fs > 0.0) || !isfinite(p->dt_fs)))
        return mdf_error_set(err, MDF_ERR_INVALID, "time step %g fs must be positive and finite", p->dt_fs);
    if (cfg->max_steps < 0)
        return mdf_error_set(err, MDF_ERR_INVALID, "max_steps %lld must be >= 0", (long long)cfg->max_steps);
    if (cfg->window < 1) return mdf_error_set(err, MDF_ERR_INVALID, "submission window must be >= 1 step");
    if (cfg->check_interval < 1) return mdf_error_set(err, MDF_ERR_INVALID, "check_interval must be >= 1 step");
    if (cfg->converged_status == cfg->status)
        return mdf_error_set(err, MDF_ERR_INVALID,
                             "converged_status (%d) must differ from the stage's status (%d): converged systems "
                             "leave the stage", cfg->converged_status, cfg->status);
    if ((*integ)->check) return (*integ)->check(p, err);
    return MDF_OK;
}

mdf_status mdf_stage_create(const mdf_stage_config *cfg, mdf_stage **out, mdf_error *err)
{
    *out = NULL;
    mdf_stage_config c;
    if (cfg) c = *cfg;
    else mdf_stage_config_init(&c);
    const mdf_integrator_ops *integ;
    mdf_status st = check_config(&c, &integ, err);
    if (st != MDF_OK) return st;
    mdf_stage *s = calloc(1, sizeof *s);
    if (!s) return mdf_error_set(err, MDF_ERR_NOMEM, "no memory for a stage");
    s->cfg = c;
    s->integ = integ;
    *out = s;
    return MDF_OK;
}

void mdf_stage_destroy(mdf_stage *s)
{
    if (!s) return;
    for (int k = 0; k < s->nhooks; k++) mdf_hook_destroy(s->hooks[k]);
    free(s);
}

mdf_status mdf_stage_add_criterion(mdf_stage *s, mdf_criterion_kind kind, double threshold, mdf_error *err)
{
    if (!(threshold >= 0.0) || !isfinite(threshold))
        return mdf_error_set(err, MDF_ERR_INVALID, "a convergence threshold must be finite and >= 0 (got %g)",
                             threshold);
    switch (kind) {
    case MDF_CRITERION_FMAX: s->crit_mask |= MDF_CRIT_FMAX; s->fmax_thr = threshold; break;
    case MDF_CRITERION_ENERGY_CHANGE: s->crit_mask |= MDF_CRIT_DE; s->de_thr = threshold; break;
    case MDF_CRITERION_STEPS:
        if (threshold != floor(threshold))
            return mdf_error_set(err, MDF_ERR_INVALID, "a step budget must be a whole number of steps (got %g)",
                                 threshold);
        s->crit_mask |= MDF_CRIT_STEPS;
        s->steps_thr = (int64_t)threshold;
        break;
    default: return mdf_error_set(err, MDF_ERR_INVALID, "unknown convergence criterion %d", (int)kind);
    }
    return MDF_OK;
}

mdf_status mdf_stage_add_hook(mdf_stage *s, mdf_hook *h, mdf_error *err)
{
    if (!h) return mdf_error_set(err, MDF_ERR_INVALID, "no hook given");
    if (s->nhooks >= MDF_MAX_HOOKS) {
        mdf_hook_destroy(h);
        return mdf_error_set(err, MDF_ERR_INVALID, "a stage takes at most %d hooks", MDF_MAX_HOOKS);
    }
    s->hooks[s->nhooks++] = h;
    return MDF_OK;
}

/* ---- one run -------------------------------------------------------------------- */

typedef struct census {
    int64_t step;      /* step of the latest census (-1: none yet) */
    int64_t left;      /* the stage's systems in the shard at that step */
} census;

typedef struct stage_run {
    mdf_stage *s;
    mdf_batch *b;
    mdf_compute *c;
    mdf_run_control ctl;
    double dt;
    starpu_data_handle_t *tokens;   /* one per shard */
    int32_t *token_mem;
    starpu_data_handle_t *work;     /* one per shard, or NULL */
    void **work_mem;
    census *cens;                   /* one per shard, under ctl.lock */
    int64_t *first_row;             /* batch index of each shard's first system */
    int begun_hooks;
} stage_run;

static double now_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int hook_due(const mdf_hook *h, mdf_hook_point point, int64_t step)
{
    if (h->point != point) return 0;
    return point == MDF_ON_CONVERGE || step % h->every == 0;
}

/* What the hooks due at this step need from the model and the checks. */
static unsigned hook_needs(const mdf_stage *s, int64_t step)
{
    unsigned needs = 0;
    for (int k = 0; k < s->nhooks; k++) {
        const mdf_hook *h = s->hooks[k];
        if (h->point == MDF_ON_CONVERGE || step % h->every == 0) needs |= h->ops->needs;
    }
    return needs;
}

static mdf_status submit_hooks(stage_run *r, int k, mdf_hook_point point, int64_t step, mdf_error *err)
{
    mdf_stage *s = r->s;
    mdf_hook_ctx ctx = {.b = r->b, .sh = &r->b->shards[k], .token = r->tokens[k], .point = point, .step = step,
                        .first_row = r->first_row[k], .status = s->cfg.status, .ctl = &r->ctl};
    for (int h = 0; h < s->nhooks; h++) {
        if (!hook_due(s->hooks[h], point, step)) continue;
        int ret = s->hooks[h]->ops->submit(s->hooks[h], &ctx);
        if (ret != 0)
            return mdf_error_set(err, MDF_ERR_STARPU, "could not submit hook '%s' at %s of step %lld (StarPU error %d)",
                                 s->hooks[h]->name, mdf_hook_point_name(point), (long long)step, ret);
    }
    return MDF_OK;
}

static mdf_status submit_converge(stage_run *r, int k, int apply, mdf_error *err)
{
    const mdf_shard *sh = &r->b->shards[k];
    mdf_stage *s = r->s;
    mdf_converge_args a = {.work = sh->natoms, .nsys = sh->nsys, .status = s->cfg.status,
                           .target = s->cfg.converged_status, .mask = apply ? s->crit_mask : 0,
                           .fmax_thr = s->fmax_thr, .de_thr = s->de_thr, .steps_thr = s->steps_thr};
    int ret = mdf_insert_converge(sh->force, sh->sys, sh->res, sh->state, &a);
    if (ret != 0) return mdf_error_set(err, MDF_ERR_STARPU, "could not submit the convergence check (%d)", ret);
    return MDF_OK;
}

static void census_view(void *user, const mdf_host_view_args *a, const mdf_sys_info *sys, const mdf_sys_result *res)
{
    (void)res;
    stage_run *r = (stage_run *)user;
    int64_t left = 0;
    for (int32_t s = 0; s < a->nsys; s++) left += sys[s].status == a->status;
    pthread_mutex_lock(&r->ctl.lock);
    if (a->step > r->cens[a->shard].step) r->cens[a->shard] = (census){.step = a->step, .left = left};
    pthread_mutex_unlock(&r->ctl.lock);
}

static mdf_status submit_census(stage_run *r, int k, int64_t step, mdf_error *err)
{
    const mdf_shard *sh = &r->b->shards[k];
    mdf_host_view_args a = {.work = sh->nsys, .step = step, .first_row = r->first_row[k], .nsys = sh->nsys,
                            .status = r->s->cfg.status, .shard = k, .point = -1, .fn = census_view, .user = r};
    int ret = mdf_insert_host_view(sh->sys, sh->res, r->tokens[k], &a);
    if (ret != 0) return mdf_error_set(err, MDF_ERR_STARPU, "could not submit the census of shard %d (%d)", k, ret);
    return MDF_OK;
}

/* 1 once every shard's latest census found none of the stage's systems. */
static int nothing_left(stage_run *r)
{
    int done = 1;
    pthread_mutex_lock(&r->ctl.lock);
    for (int k = 0; k < r->b->nshards && done; k++) done = r->cens[k].step >= 0 && r->cens[k].left == 0;
    pthread_mutex_unlock(&r->ctl.lock);
    return done;
}

static mdf_status submit_step(stage_run *r, int64_t step, int flags, int check, mdf_error *err)
{
    mdf_stage *s = r->s;
    mdf_step_ctx ctx = {.p = &s->cfg.params, .dt = r->dt, .status = s->cfg.status, .step = step};
    mdf_status st = MDF_OK;
    for (int k = 0; st == MDF_OK && k < r->b->nshards; k++) {
        ctx.sh = &r->b->shards[k];
        ctx.work = r->work ? r->work[k] : NULL;
        st = submit_hooks(r, k, MDF_BEFORE_STEP, step, err);
        if (st == MDF_OK) st = submit_hooks(r, k, MDF_BEFORE_PRE_UPDATE, step, err);
        if (st == MDF_OK && s->integ->pre_update(&ctx) != 0)
            st = mdf_error_set(err, MDF_ERR_STARPU, "could not submit %s pre_update", s->integ->name);
        if (st == MDF_OK) st = submit_hooks(r, k, MDF_AFTER_PRE_UPDATE, step, err);
        if (st == MDF_OK) st = submit_hooks(r, k, MDF_BEFORE_COMPUTE, step, err);
        if (st == MDF_OK) st = mdf_compute_submit(r->c, k, flags, err);
        if (st == MDF_OK) st = submit_hooks(r, k, MDF_AFTER_COMPUTE, step, err);
        if (st == MDF_OK) st = submit_hooks(r, k, MDF_BEFORE_POST_UPDATE, step, err);
        if (st == MDF_OK && s->integ->post_update && s->integ->post_update(&ctx) != 0)
            st = mdf_error_set(err, MDF_ERR_STARPU, "could not submit %s post_update", s->integ->name);
        if (st == MDF_OK) st = submit_hooks(r, k, MDF_AFTER_POST_UPDATE, step, err);
        if (st == MDF_OK && check) st = submit_converge(r, k, s->crit_mask != 0, err);
        if (st == MDF_OK && s->crit_mask) st = submit_hooks(r, k, MDF_ON_CONVERGE, step, err);
        if (st == MDF_OK) st = submit_hooks(r, k, MDF_AFTER_STEP, step, err);
    }
    return st;
}

/* Step 0: the model at the starting positions, kinetic energies, the first
 * convergence check, and the hooks of the compute points and AFTER_STEP. */
static mdf_status submit_start(stage_run *r, int flags, mdf_error *err)
{
    mdf_stage *s = r->s;
    int optimiser = (s->integ->flags & MDF_INTEG_OPTIMISER) != 0;
    mdf_status st = MDF_OK;
    for (int k = 0; st == MDF_OK && k < r->b->nshards; k++) {
        const mdf_shard *sh = &r->b->shards[k];
        st = submit_hooks(r, k, MDF_BEFORE_COMPUTE, 0, err);
        if (st == MDF_OK) st = mdf_compute_submit(r->c, k, flags, err);
        if (st == MDF_OK) st = submit_hooks(r, k, MDF_AFTER_COMPUTE, 0, err);
        if (st == MDF_OK && !optimiser) {
            mdf_kinetic_args ka = {.work = sh->natoms, .nsys = sh->nsys};
            if (mdf_insert_kinetic(sh->vel, sh->atoms, sh->sys, sh->res, &ka) != 0)
                st = mdf_error_set(err, MDF_ERR_STARPU, "could not submit kinetic energies");
        }
        if (st == MDF_OK) st = submit_converge(r, k, s->crit_mask != 0, err);
        if (st == MDF_OK && s->crit_mask) st = submit_hooks(r, k, MDF_ON_CONVERGE, 0, err);
        if (st == MDF_OK) st = submit_hooks(r, k, MDF_AFTER_STEP, 0, err);
        if (st == MDF_OK && s->crit_mask) st = submit_census(r, k, 0, err);
    }
    return st;
}

/* ---- setup and teardown ------------------------------------------------------- */

static mdf_status create_run(stage_run *r, mdf_stage *s, mdf_batch *b, mdf_model *m, mdf_error *err)
{
    memset(r, 0, sizeof *r);
    r->s = s;
    r->b = b;
    r->dt = mdf_fs_to_internal(s->cfg.params.dt_fs);
    mdf_run_control_init(&r->ctl);
    int n = b->nshards;
    r->tokens = calloc((size_t)n, sizeof *r->tokens);
    r->token_mem = calloc((size_t)n, sizeof *r->token_mem);
    r->cens = calloc((size_t)n, sizeof *r->cens);
    r->first_row = calloc((size_t)n, sizeof *r->first_row);
    if (!r->tokens || !r->token_mem || !r->cens || !r->first_row)
        return mdf_error_set(err, MDF_ERR_NOMEM, "no memory for a stage run");
    int64_t row = 0;
    for (int k = 0; k < n; k++) {
        starpu_vector_data_register(&r->tokens[k], STARPU_MAIN_RAM, (uintptr_t)&r->token_mem[k], 1, sizeof(int32_t));
        r->cens[k].step = -1;
        r->first_row[k] = row;
        row += b->shards[k].nsys;
    }
    if (s->integ->work_bytes) {
        r->work = calloc((size_t)n, sizeof *r->work);
        r->work_mem = calloc((size_t)n, sizeof *r->work_mem);
        if (!r->work || !r->work_mem) return mdf_error_set(err, MDF_ERR_NOMEM, "no memory for a stage run");
        for (int k = 0; k < n; k++) {
            const mdf_shard *sh = &b->shards[k];
            size_t bytes = s->integ->work_bytes(&s->cfg.params, sh->atom_cap, sh->sys_cap);
            if (bytes == 0) bytes = 8;
            /* StarPU vectors count elements in 32 bits. */
            if (bytes > UINT32_MAX)
                return mdf_error_set(err, MDF_ERR_INVALID,
                                     "%s needs %.3g GB of workspace for shard %d (%d atoms), more than one StarPU "
                                     "vector holds (4 GiB): use more shards (--shards) or a smaller history",
                                     s->integ->name, (double)bytes / 1e9, k, sh->atom_cap);
            r->work_mem[k] = calloc(1, bytes);
            if (!r->work_mem[k])
                return mdf_error_set(err, MDF_ERR_NOMEM, "no memory for %s's workspace (%zu bytes for shard %d)",
                                     s->integ->name, bytes, k);
            starpu_vector_data_register(&r->work[k], STARPU_MAIN_RAM, (uintptr_t)r->work_mem[k], (uint32_t)bytes, 1);
        }
    }
    mdf_compute_config cc;
    mdf_compute_config_init(&cc);
    cc.skin = s->cfg.skin;
    cc.chunk_atoms = s->cfg.chunk_atoms;
    cc.status_lo = cc.status_hi = s->cfg.status;
    mdf_status st = mdf_compute_create(b, m, &cc, &r->c, err);
    mdf_hook_begin hb = {.b = b, .ctl = &r->ctl, .status = s->cfg.status, .converged_status = s->cfg.converged_status,
                         .dt_fs = s->cfg.params.dt_fs, .max_steps = s->cfg.max_steps, .window = s->cfg.window};
    for (int h = 0; st == MDF_OK && h < s->nhooks; h++, r->begun_hooks++)
        if (s->hooks[h]->ops->begin) st = s->hooks[h]->ops->begin(s->hooks[h], &hb, err);
    return st;
}

/* Ends the hooks that began (the first error is kept) and frees the run. */
static mdf_status destroy_run(stage_run *r, mdf_error *err)
{
    mdf_status st = MDF_OK;
    for (int h = 0; h < r->begun_hooks; h++) {
        mdf_hook *hk = r->s->hooks[h];
        if (!hk->ops->end) continue;
        mdf_error e;
        mdf_error_clear(&e);
        mdf_status hs = hk->ops->end(hk, &e);
        if (hs != MDF_OK && st == MDF_OK) {
            st = hs;
            if (err) *err = e;
        }
    }
    int n = r->b->nshards;
    for (int k = 0; r->tokens && k < n; k++)
        if (r->tokens[k]) starpu_data_unregister(r->tokens[k]);
    for (int k = 0; r->work && k < n; k++) {
        if (r->work[k]) starpu_data_unregister(r->work[k]);
        free(r->work_mem[k]);
    }
    mdf_compute_destroy(r->c);
    free(r->tokens);
    free(r->token_mem);
    free(r->work);
    free(r->work_mem);
    free(r->cens);
    free(r->first_row);
    mdf_run_control_destroy(&r->ctl);
    return st;
}

/* A state block belongs to the method that wrote it: when a stage with
 * another method takes a system over (two stages on one status, one after
 * the other), the block starts afresh. The state of systems that continue
 * with the same method (a stage run again) is kept. Host side, once per run. */
static mdf_status claim_states(mdf_batch *b, int32_t status, int32_t method, mdf_error *err)
{
    for (int k = 0; k < b->nshards; k++) {
        const mdf_shard *sh = &b->shards[k];
        if (starpu_data_acquire(sh->state, STARPU_RW) != 0)
            return mdf_error_set(err, MDF_ERR_STARPU, "could not acquire shard %d's integrator state", k);
        for (int32_t s = 0; s < sh->nsys; s++) {
            mdf_sys_state *st = &b->state[sh->sys_off + s];
            if (b->sys[sh->sys_off + s].status != status || st->method == method) continue;
            memset(st, 0, sizeof *st);
            st->method = method;
        }
        starpu_data_release(sh->state);
    }
    return MDF_OK;
}

static int64_t stage_atoms(const mdf_batch *b, int32_t status, int64_t *nsys)
{
    int64_t atoms = 0;
    *nsys = 0;
    for (size_t i = 0; i < b->nsys; i++) {
        const mdf_sys_info *si = &b->sys[b->sys_slot[i]];
        if (si->status != status) continue;
        atoms += si->natoms;
        (*nsys)++;
    }
    return atoms;
}

mdf_status mdf_stage_run(mdf_stage *s, mdf_batch *b, mdf_model *m, mdf_stage_report *report, mdf_error *err)
{
    if (report) memset(report, 0, sizeof *report);
    /* Statuses and sizes on the host: a wait at the start of a run, never per step. */
    mdf_status st = mdf_batch_sync(b, err);
    if (st != MDF_OK) return st;
    int64_t nsys0 = 0, atoms0 = stage_atoms(b, s->cfg.status, &nsys0);
    st = claim_states(b, s->cfg.status, mdf_integrator_number(s->integ), err);
    if (st != MDF_OK) return st;
    stage_run r;
    st = create_run(&r, s, b, m, err);
    int needs_virial = (s->integ->flags & MDF_INTEG_NEEDS_VIRIAL) != 0;
    double t0 = now_seconds();
    int64_t target0 = 0;
    for (size_t i = 0; i < b->nsys; i++) target0 += b->sys[b->sys_slot[i]].status == s->cfg.converged_status;
    if (st == MDF_OK) st = submit_start(&r, MDF_COMPUTE_VIRIAL, err);
    unsigned per_step = 0; /* most tasks one step took: the window in tasks */
    int64_t step = 0;
    for (step = 1; st == MDF_OK && step <= s->cfg.max_steps; step++) {
        if (r.ctl.stop) break;
        if (s->crit_mask && nothing_left(&r)) break;
        int before = starpu_task_nsubmitted();
        unsigned needs = hook_needs(s, step);
        int flags = needs_virial || (needs & MDF_HOOK_NEEDS_VIRIAL) || step == s->cfg.max_steps ? MDF_COMPUTE_VIRIAL : 0;
        int check = s->crit_mask != 0 || (needs & MDF_HOOK_NEEDS_FMAX);
        st = submit_step(&r, step, flags, check, err);
        if (st == MDF_OK && s->crit_mask && step % s->cfg.check_interval == 0)
            for (int k = 0; st == MDF_OK && k < b->nshards; k++) st = submit_census(&r, k, step, err);
        int now = starpu_task_nsubmitted() - before + 1;
        if (now > (int)per_step) per_step = (unsigned)now;
        /* Keep at most `window` steps in flight: waits only for old tasks. */
        if (st == MDF_OK) starpu_task_wait_for_n_submitted((unsigned)s->cfg.window * per_step);
    }
    int64_t steps_done = step - 1;
    starpu_task_wait_for_all();
    double wall = now_seconds() - t0;
    mdf_status sync = mdf_batch_sync(b, st == MDF_OK ? err : NULL);
    if (st == MDF_OK) st = sync;
    if (st == MDF_OK && r.ctl.stop) {
        st = r.ctl.err.code;
        if (err) *err = r.ctl.err;
    }
    if (report && r.c) {
        report->steps = steps_done;
        report->model_evaluations = mdf_compute_evaluations(r.c);
        mdf_compute_stats cs;
        if (mdf_compute_get_stats(r.c, &cs, NULL) == MDF_OK) {
            report->list_rebuilds = cs.rebuilds;
            report->overflowed_atoms = cs.overflowed_atoms;
            report->max_neighbours = cs.max_neighbours;
            report->list_slots = cs.slots;
            report->nchunks = cs.nchunks;
        }
        int64_t left = 0;
        stage_atoms(b, s->cfg.status, &left);
        report->remaining = left;
        report->converged = -target0;
        for (size_t i = 0; i < b->nsys; i++)
            report->converged += b->sys[b->sys_slot[i]].status == s->cfg.converged_status;
        report->wall_seconds = wall;
        report->atom_steps_per_second = wall > 0.0 ? (double)atoms0 * (double)steps_done / wall : 0.0;
        report->nshards = b->nshards;
    }
    (void)nsys0;
    mdf_status end = destroy_run(&r, st == MDF_OK ? err : NULL);
    if (st == MDF_OK) st = end;
    return st;
}
