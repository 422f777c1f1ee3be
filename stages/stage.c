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
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/stat.h>
#include "method_internal.h"
#include "hook_internal.h"
#include "inflight.h"
#include "checkpoint.h"
#include "mdflow/units.h"
#include "../dataflow/compute.h"
#include "../dataflow/model_internal.h"
#include "../codelets/converge/converge_codelet.h"
#include "../codelets/host/host_view_codelet.h"
#include "../codelets/velocity/velocity_codelet.h"
#include "../codelets/common/mdf_codelet.h"
#include "mdflow/runtime.h"

#define MDF_MAX_HOOKS 64

_Static_assert(MDF_SYSTEM_CONVERGED_NOW == MDF_SYS_CONVERGED_NOW && MDF_SYSTEM_NONFINITE_POS == MDF_SYS_NONFINITE_POS &&
                   MDF_SYSTEM_NONFINITE_VEL == MDF_SYS_NONFINITE_VEL &&
                   MDF_SYSTEM_NONFINITE_FORCE == MDF_SYS_NONFINITE_FORCE &&
                   MDF_SYSTEM_NONFINITE_ENERGY == MDF_SYS_NONFINITE_ENERGY &&
                   MDF_SYSTEM_BUDGET_EXIT == MDF_SYS_BUDGET_EXIT && MDF_SYSTEM_ENTERED == MDF_SYS_ENTERED &&
                   MDF_SYSTEM_CELL_TOO_SMALL == MDF_SYS_CELL_TOO_SMALL,
               "public and kernel system flags agree");

/* One (sub-)stage: a method, its parameters, criteria and hooks. */
typedef struct stage_part {
    mdf_stage_config cfg;        /* cfg.status and cfg.converged_status are the part's codes */
    const mdf_method *method;    /* from the registry (built-in or a plugin's) */
    void *mparams;               /* the method's block: defaults, cfg.method_params, checked;
                                  * owned by the part (params_size bytes, at least 1) */
    int nhooks;
    mdf_hook *hooks[MDF_MAX_HOOKS];
    mdf_converge_part crit;      /* criteria and budget; target set at run time */
} stage_part;

/* A stage is one part, or several fused ones sharing each step's model
 * evaluation (statuses cfg.status of part 0, +1, ...). */
struct mdf_stage {
    int nparts;
    stage_part parts[MDF_CONVERGE_PARTS];
    int64_t max_steps;           /* the run's step limit */
    mdf_progress_fn progress;    /* NULL: none */
    void *progress_user;
    double progress_interval;    /* s */
};

void mdf_dynamics_params_init(mdf_dynamics_params *p)
{
    memset(p, 0, sizeof *p);
    p->dt_fs = 1.0;
    p->temperature_K = 300.0;
    p->seed = 1;
}

void mdf_stage_config_init(mdf_stage_config *cfg)
{
    memset(cfg, 0, sizeof *cfg);
    cfg->integrator = "velocity_verlet";
    cfg->status = 0;
    cfg->converged_status = 1;
    cfg->max_steps = 1000;
    cfg->check_interval = 10;
    cfg->window = 16;
    cfg->skin = 1.0;
    cfg->rebuild_every = 1;
    cfg->rebuild_nocheck = 0;
    cfg->step_budget = 0;
    cfg->entry_temperature_K = -1.0;
    mdf_dynamics_params_init(&cfg->params);
    mdf_param_list_init(&cfg->method_params);
}

/* "unknown integrator" names every registered method. */
static mdf_status unknown_method(const char *name, mdf_error *err)
{
    char names[512] = "";
    for (size_t k = 0; k < mdf_integrator_count(); k++) {
        strncat(names, k ? ", " : "", sizeof names - strlen(names) - 1);
        strncat(names, mdf_integrator_name(k), sizeof names - strlen(names) - 1);
    }
    return mdf_error_set(err, MDF_ERR_INVALID, "unknown integrator '%s': use one of %s", name, names);
}

/* The stage-wide settings the method reads (its flags say which). */
static mdf_status check_dynamics(const mdf_method *m, const mdf_dynamics_params *p, mdf_error *err)
{
    if (!mdf_method_has(m, MDF_METHOD_OPTIMISER) && (!(p->dt_fs > 0.0) || !isfinite(p->dt_fs)))
        return mdf_error_set(err, MDF_ERR_INVALID, "time step %g fs must be positive and finite", p->dt_fs);
    double t = p->temperature_K;
    if (mdf_method_has(m, MDF_METHOD_POSITIVE_TEMPERATURE) && (!(t > 0.0) || !isfinite(t)))
        return mdf_error_set(err, MDF_ERR_INVALID,
                             "%s: temperature_K %g must be finite and > 0 K (the method's masses or noise are "
                             "proportional to it)", m->name, t);
    if (mdf_method_has(m, MDF_METHOD_TEMPERATURE) && (!(t >= 0.0) || !isfinite(t)))
        return mdf_error_set(err, MDF_ERR_INVALID, "%s: temperature_K %g must be finite and >= 0 K", m->name, t);
    return MDF_OK;
}

static mdf_status check_config(const mdf_stage_config *cfg, const mdf_method *m, mdf_error *err)
{
    mdf_status st = check_dynamics(m, &cfg->params, err);
    if (st != MDF_OK) return st;
    if (cfg->max_steps < 0)
        return mdf_error_set(err, MDF_ERR_INVALID, "max_steps %lld must be >= 0", (long long)cfg->max_steps);
    if (cfg->window < 1) return mdf_error_set(err, MDF_ERR_INVALID, "submission window must be >= 1 step");
    if (cfg->check_interval < 1) return mdf_error_set(err, MDF_ERR_INVALID, "check_interval must be >= 1 step");
    if (cfg->converged_status == cfg->status)
        return mdf_error_set(err, MDF_ERR_INVALID,
                             "converged_status (%d) must differ from the stage's status (%d): converged systems "
                             "leave the stage", cfg->converged_status, cfg->status);
    if (cfg->step_budget < 0)
        return mdf_error_set(err, MDF_ERR_INVALID, "step_budget %lld must be >= 0 (0: none)",
                             (long long)cfg->step_budget);
    if (!(cfg->entry_temperature_K < 0.0) && !isfinite(cfg->entry_temperature_K))
        return mdf_error_set(err, MDF_ERR_INVALID, "entry_temperature_K must be finite (or < 0: none)");
    return MDF_OK;
}

/* The method's block for this stage: its table's defaults, then the
 * settings by name (an unknown name's message lists the valid ones, a
 * value out of range names the range), then its own cross-checks. The
 * stage keeps the block for its lifetime: tasks read copies of it. */
static mdf_status method_block(const mdf_method *m, const mdf_param_list *settings, void **out, mdf_error *err)
{
    *out = NULL;
    void *block = calloc(1, m->params_size ? m->params_size : 1);
    if (!block) return mdf_error_set(err, MDF_ERR_NOMEM, "no memory for method %s's parameters", m->name);
    char owner[96];
    snprintf(owner, sizeof owner, "method %s", m->name);
    mdf_params_defaults(m->params, block);
    mdf_status st = mdf_param_list_apply(settings, m->params, block, owner, err);
    if (st == MDF_OK) st = mdf_params_check(m->params, block, owner, err);
    if (st == MDF_OK && m->check) st = m->check(block, err);
    if (st != MDF_OK) {
        free(block);
        return st;
    }
    *out = block;
    return MDF_OK;
}

mdf_status mdf_stage_create(const mdf_stage_config *cfg, mdf_stage **out, mdf_error *err)
{
    *out = NULL;
    mdf_stage_config c;
    if (cfg) c = *cfg;
    else mdf_stage_config_init(&c);
    const char *name = c.integrator ? c.integrator : "velocity_verlet";
    const mdf_method *m = mdf_method_find(name);
    if (!m) return unknown_method(name, err);
    void *block = NULL;
    mdf_status st = check_config(&c, m, err);
    if (st == MDF_OK) st = method_block(m, &c.method_params, &block, err);
    if (st != MDF_OK) return st;
    mdf_stage *s = calloc(1, sizeof *s);
    if (!s) {
        free(block);
        return mdf_error_set(err, MDF_ERR_NOMEM, "no memory for a stage");
    }
    s->nparts = 1;
    s->parts[0].cfg = c;
    s->parts[0].method = m;
    s->parts[0].mparams = block;
    s->parts[0].crit.budget = c.step_budget;
    s->max_steps = c.max_steps;
    *out = s;
    return MDF_OK;
}

void mdf_stage_destroy(mdf_stage *s)
{
    if (!s) return;
    for (int p = 0; p < s->nparts; p++) {
        for (int k = 0; k < s->parts[p].nhooks; k++) mdf_hook_destroy(s->parts[p].hooks[k]);
        free(s->parts[p].mparams);
    }
    free(s);
}

static mdf_status check_part(const mdf_stage *s, int k, mdf_error *err)
{
    if (k < 0 || k >= s->nparts)
        return mdf_error_set(err, MDF_ERR_INVALID, "sub-stage %d does not exist (the stage has %d)", k, s->nparts);
    return MDF_OK;
}

mdf_status mdf_stage_add_part_criterion(mdf_stage *s, int k, mdf_criterion_kind kind, double threshold,
                                        mdf_error *err)
{
    mdf_status st = check_part(s, k, err);
    if (st != MDF_OK) return st;
    mdf_converge_part *c = &s->parts[k].crit;
    static const char *const names[] = {"fmax (eV/Å)", "energy-change (eV)", "steps", "smax (GPa)"};
    if (!(threshold >= 0.0) || !isfinite(threshold))
        return mdf_error_set(err, MDF_ERR_INVALID, "a convergence threshold must be finite and >= 0 (got %g for %s)",
                             threshold, (unsigned)kind < 4 ? names[kind] : "an unknown criterion");
    switch (kind) {
    case MDF_CRITERION_FMAX: c->mask |= MDF_CRIT_FMAX; c->fmax_thr = threshold; break;
    case MDF_CRITERION_ENERGY_CHANGE: c->mask |= MDF_CRIT_DE; c->de_thr = threshold; break;
    case MDF_CRITERION_SMAX: c->mask |= MDF_CRIT_SMAX; c->smax_thr = threshold / MDF_EV_PER_A3_IN_GPA; break;
    case MDF_CRITERION_STEPS:
        if (threshold != floor(threshold))
            return mdf_error_set(err, MDF_ERR_INVALID, "a step budget must be a whole number of steps (got %g)",
                                 threshold);
        c->mask |= MDF_CRIT_STEPS;
        c->steps_thr = (int64_t)threshold;
        break;
    default: return mdf_error_set(err, MDF_ERR_INVALID, "unknown convergence criterion %d", (int)kind);
    }
    return MDF_OK;
}

mdf_status mdf_stage_add_criterion(mdf_stage *s, mdf_criterion_kind kind, double threshold, mdf_error *err)
{
    return mdf_stage_add_part_criterion(s, s->nparts - 1, kind, threshold, err);
}

mdf_status mdf_stage_add_part_hook(mdf_stage *s, int k, mdf_hook *h, mdf_error *err)
{
    if (!h) return mdf_error_set(err, MDF_ERR_INVALID, "no hook given");
    mdf_status st = check_part(s, k, err);
    stage_part *part = st == MDF_OK ? &s->parts[k] : NULL;
    if (st == MDF_OK && part->nhooks >= MDF_MAX_HOOKS)
        st = mdf_error_set(err, MDF_ERR_INVALID, "a stage takes at most %d hooks", MDF_MAX_HOOKS);
    if (st != MDF_OK) {
        mdf_hook_destroy(h);
        return st;
    }
    part->hooks[part->nhooks++] = h;
    return MDF_OK;
}

mdf_status mdf_stage_add_hook(mdf_stage *s, mdf_hook *h, mdf_error *err)
{
    return mdf_stage_add_part_hook(s, s->nparts - 1, h, err);
}

/* Renumbers the parts base, base + 1, ...: each converges into the next. */
static void number_parts(mdf_stage *s)
{
    int32_t base = s->parts[0].cfg.status;
    for (int k = 0; k < s->nparts; k++) {
        s->parts[k].cfg.status = base + k;
        s->parts[k].cfg.converged_status = base + k + 1;
    }
}

mdf_status mdf_fuse(mdf_stage *a, mdf_stage *b, mdf_stage **out, mdf_error *err)
{
    *out = NULL;
    mdf_status st = MDF_OK;
    if (!a || !b) st = mdf_error_set(err, MDF_ERR_INVALID, "mdf_fuse needs two stages");
    else if (a == b) st = mdf_error_set(err, MDF_ERR_INVALID, "a stage cannot be fused with itself");
    else if (a->nparts + b->nparts > MDF_CONVERGE_PARTS)
        st = mdf_error_set(err, MDF_ERR_INVALID, "a fused stage holds at most %d sub-stages (%d + %d asked)",
                           MDF_CONVERGE_PARTS, a->nparts, b->nparts);
    if (st != MDF_OK) {
        if (a != b) mdf_stage_destroy(b);
        mdf_stage_destroy(a);
        return st;
    }
    /* b's parts (and the hooks they own) move into a. */
    memcpy(&a->parts[a->nparts], b->parts, sizeof(stage_part) * (size_t)b->nparts);
    a->nparts += b->nparts;
    a->max_steps += b->max_steps;
    free(b);
    number_parts(a);
    *out = a;
    return MDF_OK;
}

mdf_status mdf_stage_set_max_steps(mdf_stage *s, int64_t max_steps, mdf_error *err)
{
    if (max_steps < 0) return mdf_error_set(err, MDF_ERR_INVALID, "max_steps %lld must be >= 0", (long long)max_steps);
    s->max_steps = max_steps;
    return MDF_OK;
}

void mdf_stage_set_progress(mdf_stage *s, mdf_progress_fn fn, void *user, double interval_s)
{
    s->progress = fn;
    s->progress_user = user;
    s->progress_interval = interval_s;
}

int mdf_stage_nparts(const mdf_stage *s) { return s->nparts; }

int32_t mdf_stage_exit_status(const mdf_stage *s) { return s->parts[s->nparts - 1].cfg.converged_status; }

void mdf_stage_rebase(mdf_stage *s, int32_t base)
{
    s->parts[0].cfg.status = base;
    number_parts(s);
}

double mdf_stage_skin(const mdf_stage *s) { return s->parts[0].cfg.skin; }
int32_t mdf_stage_base_status(const mdf_stage *s) { return s->parts[0].cfg.status; }

/* ---- one run -------------------------------------------------------------------- */

typedef struct census {
    int64_t step;      /* step of the latest census (-1: none yet) */
    int64_t left;      /* the stage's systems in the shard at that step */
    int64_t gone_atoms;/* atoms of the shard's systems that left the stage */
    int32_t first_busy;/* the first part with systems then (nparts: none);
                        * 0 when unknown (a census restored from a checkpoint) */
    int atoms_known;   /* part_atoms holds this census's counts (not a
                        * census restored from a checkpoint) */
    int64_t part_atoms[MDF_CONVERGE_PARTS]; /* atoms of each part's systems then */
} census;

/* A shard's censuses in submission order (host views of one shard run in
 * that order: they share its token): the steps the host asked for, the
 * answers as they come, and how many the host has applied. A ring of
 * `cap` (census q at q % cap): censuses not yet applied were taken in the
 * last census_lag + 1 steps, at most two a step (a refill's and the
 * regular one), so 2 * (census_lag + 2) never fills. */
typedef struct census_log {
    int64_t *step;
    census *answer;
    int64_t cap, submitted, answered, applied;
} census_log;

typedef struct stage_run {
    mdf_stage *s;
    mdf_batch *b;
    mdf_model *m;
    mdf_compute *c;
    mdf_inflight *in;               /* inflight batching, or NULL */
    int64_t evaluations_before;     /* of the computes a refill replaced */
    int64_t rebuilds_before;
    int64_t overflowed_max;         /* the largest figures any of them saw */
    int32_t neighbours_max, slots;
    int chunks_max;
    mdf_run_control ctl;
    int32_t lo, hi;                 /* statuses of the first and last part */
    int any_checks;                 /* some part has criteria or a budget */
    int cells_change;               /* some part's method changes cells (MDF_METHOD_CELL) */
    double r_list;                  /* cutoff + skin of the lists, Å */
    starpu_data_handle_t *tokens;   /* one per shard */
    int32_t *token_mem;
    starpu_data_handle_t *work[MDF_CONVERGE_PARTS]; /* per part, one per shard, or NULL */
    void **work_mem[MDF_CONVERGE_PARTS];
    census *cens;                   /* one per shard, under ctl.lock: the census the
                                     * host's decisions read (census_advance) */
    census_log *clog;               /* one per shard, under ctl.lock */
    pthread_cond_t answered;        /* a census answered (with ctl.lock) */
    int64_t census_lag;             /* decisions at step s read the census of a step
                                     * <= s - 1 - census_lag (the window) */
    int64_t refills;                /* refills that moved systems */
    int64_t *first_row;             /* batch index of each shard's first system */
    int begun_hooks[MDF_CONVERGE_PARTS];
    /* checkpoints (inflight runs) */
    const char *ckpt_path;          /* NULL: none */
    int64_t ckpt_every;             /* steps, a multiple of the refill interval (0: at exit only) */
    int fixed_course;               /* decisions independent of timing (checkpoints on) */
    mdf_method_post_pre_fn post_pre;/* the method's fused halves, where the run may fuse
                                     * them (fusable_run), else NULL */
    int64_t deferred_post;          /* the step whose post_update waits to run with the
                                     * next step's pre_update (0: none) */
} stage_run;

/* What a run does about checkpoints. */
typedef struct ckpt_plan {
    const char *path;
    int64_t every;
    const mdf_ckpt *resume;         /* continue from this one, or NULL */
} ckpt_plan;

static void fold_compute_stats(stage_run *r);

static double now_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int part_checks(const stage_part *p) { return p->crit.mask != 0 || p->crit.budget > 0; }

/* The target pressure of a part's SMAX criterion, eV/Å³: its method's
 * double parameter pressure_GPa (the variable-cell optimisers'), else 0. */
static double part_pressure(const stage_part *p)
{
    if (!p->method || !p->method->params || !p->mparams) return 0.0;
    for (const mdf_param_def *d = p->method->params; d->name; d++)
        if (d->type == MDF_PARAM_TYPE_DOUBLE && strcmp(d->name, "pressure_GPa") == 0) {
            double v;
            memcpy(&v, (const char *)p->mparams + d->offset, sizeof v);
            return v / MDF_EV_PER_A3_IN_GPA;
        }
    return 0.0;
}

/* Parts whose method relaxes the cell (an optimiser that changes it) need
 * systems periodic in x, y and z: the error names the first that is not. */
static mdf_status check_cell_systems(const mdf_stage *s, const mdf_batch *b, mdf_error *err)
{
    for (int p = 0; p < s->nparts; p++) {
        const mdf_method *m = s->parts[p].method;
        if (!mdf_method_has(m, MDF_METHOD_CELL) || !mdf_method_has(m, MDF_METHOD_OPTIMISER)) continue;
        for (size_t i = 0; i < b->nsys; i++) {
            const mdf_sys_info *si = &b->sys[b->sys_slot[i]];
            if (si->status != s->parts[p].cfg.status) continue;
            if (si->pbc[0] && si->pbc[1] && si->pbc[2]) continue;
            return mdf_error_set(err, MDF_ERR_INVALID,
                                 "system %zu (id %lld) is not periodic in x, y and z (pbc %d %d %d): '%s' relaxes "
                                 "the cell and needs a periodic cell; relax it with a fixed-cell optimiser "
                                 "(fire, lbfgs) instead",
                                 i, (long long)si->id, si->pbc[0], si->pbc[1], si->pbc[2], m->name);
        }
    }
    return MDF_OK;
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
    for (int p = 0; p < s->nparts; p++)
        for (int k = 0; k < s->parts[p].nhooks; k++) {
            const mdf_hook *h = s->parts[p].hooks[k];
            if (h->point == MDF_ON_CONVERGE || step % h->every == 0) needs |= h->ops->needs;
        }
    return needs;
}

/* The work of part p's tasks in shard k (their performance models' size):
 * the atoms of its systems at the latest census, or the shard's atoms when
 * there is none (since the last refill, or restored from a checkpoint).
 * Systems only move forward, so a part can have gained systems since; the
 * census runs every check_interval steps, so the figure lags by at most
 * that plus the window. */
static int64_t part_work(stage_run *r, int p, int k)
{
    pthread_mutex_lock(&r->ctl.lock);
    const census *c = &r->cens[k];
    int64_t work = c->step >= 0 && c->atoms_known ? c->part_atoms[p] : r->b->shards[k].natoms;
    pthread_mutex_unlock(&r->ctl.lock);
    return work;
}

static mdf_status submit_hooks(stage_run *r, int p, int k, mdf_hook_point point, int64_t step, mdf_error *err)
{
    stage_part *part = &r->s->parts[p];
    /* Most points of most steps have no hook due: no context (and no census
     * read under the lock) for them. */
    int due = 0;
    for (int h = 0; h < part->nhooks && !due; h++) due = hook_due(part->hooks[h], point, step);
    if (!due) return MDF_OK;
    mdf_hook_ctx ctx = {.b = r->b, .sh = &r->b->shards[k], .token = r->tokens[k], .point = point, .step = step,
                        .first_row = r->first_row[k], .status = part->cfg.status,
                        .target = part->cfg.converged_status, .ctl = &r->ctl,
                        .dof = {.lo = r->lo, .nparts = r->s->nparts, .own = p, .momentum = 0},
                        .work = part_work(r, p, k)};
    for (int q = 0; q < r->s->nparts; q++)
        ctx.dof.momentum |= (uint32_t)mdf_method_has(r->s->parts[q].method, MDF_METHOD_MOMENTUM) << q;
    for (int h = 0; h < part->nhooks; h++) {
        if (!hook_due(part->hooks[h], point, step)) continue;
        int ret = part->hooks[h]->ops->submit(part->hooks[h], &ctx);
        if (ret != 0)
            return mdf_error_set(err, MDF_ERR_STARPU, "could not submit hook '%s' at %s of step %lld (StarPU error %d)",
                                 part->hooks[h]->name, mdf_hook_point_name(point), (long long)step, ret);
    }
    return MDF_OK;
}

/* The hooks of every part at one point, parts in order. */
static mdf_status submit_point(stage_run *r, int k, mdf_hook_point point, int64_t step, mdf_error *err)
{
    mdf_status st = MDF_OK;
    for (int p = 0; st == MDF_OK && p < r->s->nparts; p++) {
        if (point == MDF_ON_CONVERGE && !part_checks(&r->s->parts[p])) continue;
        st = submit_hooks(r, p, k, point, step, err);
    }
    return st;
}

static mdf_status submit_converge(stage_run *r, int k, int only_entered, mdf_error *err)
{
    const mdf_shard *sh = &r->b->shards[k];
    mdf_stage *s = r->s;
    mdf_converge_args a = {.work = sh->natoms, .nsys = sh->nsys, .lo = r->lo, .nparts = s->nparts,
                           .apply = r->any_checks, .only_entered = only_entered};
    for (int p = 0; p < s->nparts; p++) {
        a.part[p] = s->parts[p].crit;
        a.part[p].target = s->parts[p].cfg.converged_status;
        a.part[p].pressure = part_pressure(&s->parts[p]);
    }
    int ret = mdf_insert_converge(sh->force, sh->sys, sh->res, sh->state, &a);
    if (ret != 0) return mdf_error_set(err, MDF_ERR_STARPU, "could not submit the convergence check (%d)", ret);
    return MDF_OK;
}

/* Maxwell–Boltzmann velocities for the systems that just entered a part
 * that asks for them (a relaxation's output starting MD). */
static mdf_status submit_entries(stage_run *r, int p, int k, mdf_error *err)
{
    const stage_part *part = &r->s->parts[p];
    if (part->cfg.entry_temperature_K < 0.0) return MDF_OK;
    const mdf_shard *sh = &r->b->shards[k];
    mdf_velocity_args a = {.work = sh->natoms, .kT = MDF_KB * part->cfg.entry_temperature_K,
                           .seed = part->cfg.params.seed, .status = part->cfg.status, .nsys = sh->nsys,
                           .entering_only = 1};
    if (mdf_insert_velocity(sh->vel, sh->atoms, sh->sys, sh->res, &a) != 0)
        return mdf_error_set(err, MDF_ERR_STARPU, "could not submit the entry velocities of shard %d", k);
    return MDF_OK;
}

/* A host-view task (census, cell check) that could not be submitted. */
static mdf_status host_view_failed(const char *what, int k, int ret, mdf_error *err)
{
    if (ret == -ENODEV)
        return mdf_error_set(err, MDF_ERR_STARPU, "could not submit %s of shard %d: no CPU worker to run it (a stage's "
                             "host-side checks need one; STARPU_NCPU=0 leaves none)", what, k);
    return mdf_error_set(err, MDF_ERR_STARPU, "could not submit %s of shard %d (StarPU error %d)", what, k, ret);
}

static void census_view(void *user, const mdf_host_view_args *a, const mdf_sys_info *sys, const mdf_sys_result *res)
{
    (void)res;
    stage_run *r = (stage_run *)user;
    census c = {.step = a->step, .first_busy = r->hi - r->lo + 1, .atoms_known = 1};
    for (int32_t s = 0; s < a->nsys; s++)
        if (sys[s].status >= r->lo && sys[s].status <= r->hi) {
            int32_t part = sys[s].status - r->lo;
            c.left++;
            c.part_atoms[part] += sys[s].natoms;
            if (part < c.first_busy) c.first_busy = part;
        } else {
            c.gone_atoms += sys[s].natoms;
        }
    pthread_mutex_lock(&r->ctl.lock);
    census_log *lg = &r->clog[a->shard];
    lg->answer[lg->answered % lg->cap] = c;
    lg->answered++;
    pthread_cond_broadcast(&r->answered);
    pthread_mutex_unlock(&r->ctl.lock);
}

/* Before the host decides anything for step `step` (refills, skipped
 * tasks, the tasks' work, the end of the run): each shard's census becomes
 * the latest one taken at a step <= step - 1 - census_lag, waiting for its
 * answer if need be. A fixed lag, not whichever census has answered: the
 * run's course (its refills, steps and tasks) then no longer depends on
 * timing, so every scheduling policy does the same work. The lag is the
 * task window, which has usually let that census run already. */
static void census_advance(stage_run *r, int64_t step)
{
    const int64_t upto = step - 1 - r->census_lag;
    pthread_mutex_lock(&r->ctl.lock);
    for (int k = 0; k < r->b->nshards; k++) {
        census_log *lg = &r->clog[k];
        int64_t use = -1;
        for (int64_t q = lg->applied; q < lg->submitted && lg->step[q % lg->cap] <= upto; q++) use = q;
        if (use < 0) continue;
        int waited = 0;
        while (lg->answered <= use && !r->ctl.stop) {
            pthread_cond_wait(&r->answered, &r->ctl.lock);
            waited = 1;
        }
        if (waited) mdf_runtime_record_host_waited(); /* not the host's work (mdflow sched --simulate) */
        if (lg->answered <= use) break; /* stopped: the run ends, the census no longer matters */
        r->cens[k] = lg->answer[use % lg->cap];
        lg->applied = use + 1;
    }
    pthread_mutex_unlock(&r->ctl.lock);
}

/* Forgets the censuses (a refill changed the systems; every task ran). */
static void census_forget(stage_run *r)
{
    pthread_mutex_lock(&r->ctl.lock);
    for (int k = 0; k < r->b->nshards; k++) {
        r->cens[k].step = -1;
        r->clog[k].submitted = r->clog[k].answered = r->clog[k].applied = 0;
    }
    pthread_mutex_unlock(&r->ctl.lock);
}

static mdf_status submit_census(stage_run *r, int k, int64_t step, mdf_error *err)
{
    const mdf_shard *sh = &r->b->shards[k];
    pthread_mutex_lock(&r->ctl.lock);
    census_log *lg = &r->clog[k];
    /* Never full (see census_log); were it, the oldest unapplied census,
     * superseded by this one, would be dropped. */
    if (lg->submitted - lg->applied >= lg->cap) lg->applied = lg->submitted - lg->cap + 1;
    lg->step[lg->submitted % lg->cap] = step;
    lg->submitted++;
    pthread_mutex_unlock(&r->ctl.lock);
    mdf_host_view_args a = {.work = sh->nsys, .step = step, .first_row = r->first_row[k], .nsys = sh->nsys,
                            .status = r->lo, .target = r->hi + 1, .shard = k, .point = -1, .fn = census_view,
                            .user = r};
    int ret = mdf_insert_host_view(sh->sys, sh->res, r->tokens[k], &a);
    if (ret != 0) return host_view_failed("the census", k, ret, err);
    return MDF_OK;
}

/* The error for a system whose cell a method shrank below the list radius
 * over MDF_NL_MAX_REACH (MDF_SYS_CELL_TOO_SMALL); `slot` finds its batch
 * index. */
static void small_cell_message(const stage_run *r, int64_t slot, const mdf_sys_info *si, char *msg, size_t n)
{
    size_t index = 0;
    while (index < r->b->nsys && r->b->sys_slot[index] != slot) index++;
    int axis = 0;
    double width = mdf_periodic_width(si, &axis), cutoff = mdf_model_cutoff(r->m);
    snprintf(msg, n,
             "system %zu (id %lld): the barostat or cell optimiser shrank its cell by step %lld to a periodic width of %.6g Å "
             "along lattice vector %d, under 1/%d of cutoff + skin = %g + %g = %g Å (the narrowest cell the "
             "neighbour lists take is %g Å): the cell collapsed; lower the target pressure or the barostat's "
             "coupling, or replicate the cell",
             index, (long long)si->id, (long long)si->step, width, axis + 1, MDF_NL_MAX_REACH, cutoff,
             r->r_list - cutoff, r->r_list, r->r_list / MDF_NL_MAX_REACH);
}

/* Stops the run at the first flagged system of the stage's. */
static void cell_view(void *user, const mdf_host_view_args *a, const mdf_sys_info *sys, const mdf_sys_result *res)
{
    (void)res;
    stage_run *r = (stage_run *)user;
    for (int32_t s = 0; s < a->nsys; s++) {
        if (!(sys[s].flags & MDF_SYS_CELL_TOO_SMALL) || sys[s].status < r->lo || sys[s].status > r->hi + 1) continue;
        char msg[MDF_ERROR_MESSAGE_MAX];
        small_cell_message(r, a->first_row + s, &sys[s], msg, sizeof msg);
        mdf_run_fail(&r->ctl, MDF_ERR_PHYSICS, "%s", msg);
        return;
    }
}

/* The check of cells that a method changed, for shard k (host view). */
static mdf_status submit_cell_check(stage_run *r, int k, int64_t step, mdf_error *err)
{
    const mdf_shard *sh = &r->b->shards[k];
    mdf_host_view_args a = {.work = sh->nsys, .step = step, .first_row = r->first_row[k], .nsys = sh->nsys,
                            .status = r->lo, .target = r->hi + 1, .shard = k, .point = -1, .fn = cell_view,
                            .user = r};
    int ret = mdf_insert_host_view(sh->sys, sh->res, r->tokens[k], &a);
    if (ret != 0) return host_view_failed("the cell check", k, ret, err);
    return MDF_OK;
}

/* After the run (host memory current): a flag no check saw yet. */
static mdf_status check_cells_after(stage_run *r, mdf_error *err)
{
    for (size_t i = 0; i < r->b->nsys; i++) {
        int64_t slot = r->b->sys_slot[i];
        const mdf_sys_info *si = &r->b->sys[slot];
        if (!(si->flags & MDF_SYS_CELL_TOO_SMALL) || si->status < r->lo || si->status > r->hi + 1) continue;
        char msg[MDF_ERROR_MESSAGE_MAX];
        small_cell_message(r, slot, si, msg, sizeof msg);
        return mdf_error_set(err, MDF_ERR_PHYSICS, "%s", msg);
    }
    return MDF_OK;
}

/* A run starts with no cell flagged: the model pipeline checks the cells as
 * they are (a run that failed on one leaves the flag behind). */
static mdf_status clear_cell_flags(mdf_batch *b, mdf_error *err)
{
    for (int k = 0; k < b->nshards; k++) {
        const mdf_shard *sh = &b->shards[k];
        int any = 0;
        for (int32_t i = 0; i < sh->nsys; i++) any |= (b->sys[sh->sys_off + i].flags & MDF_SYS_CELL_TOO_SMALL) != 0;
        if (!any) continue;
        if (mdf_data_acquire(sh->sys, STARPU_RW) != 0)
            return mdf_error_set(err, MDF_ERR_STARPU, "could not acquire shard %d's systems", k);
        for (int32_t i = 0; i < sh->nsys; i++) b->sys[sh->sys_off + i].flags &= ~MDF_SYS_CELL_TOO_SMALL;
        starpu_data_release(sh->sys);
    }
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

static mdf_method_ctx part_ctx(stage_run *r, int p, int k, int64_t step)
{
    const stage_part *part = &r->s->parts[p];
    return (mdf_method_ctx){.sh = &r->b->shards[k], .work = r->work[p] ? r->work[p][k] : NULL,
                          .params = part->mparams, .p = &part->cfg.params,
                          .dt = mdf_fs_to_internal(part->cfg.params.dt_fs), .status = part->cfg.status,
                          .step = step, .r_list = r->r_list, .task_work = part_work(r, p, k)};
}

/* The first part that may have systems in shard k: parts before it were
 * empty at the latest census. A system's status only moves forward within a
 * run and a refill forgets the census, so those parts' updates and entry
 * draws have nothing to do in the shard from the step after the census on:
 * the host skips the tasks (no-ops otherwise; the results are the same
 * either way). Their hooks still run. */
static int32_t shard_first_busy(stage_run *r, int k)
{
    pthread_mutex_lock(&r->ctl.lock);
    int32_t first = r->cens[k].step >= 0 ? r->cens[k].first_busy : 0;
    pthread_mutex_unlock(&r->ctl.lock);
    return first;
}

/* ---- the two halves of consecutive steps as one task ------------------------------
 *
 * A step's post_update and the next step's pre_update are consecutive tasks
 * of one shard whenever nothing runs between them: no hook due at the
 * points between (AFTER_POST_UPDATE, ON_CONVERGE, AFTER_STEP, then
 * BEFORE_STEP and BEFORE_PRE_UPDATE of the next step) and no check. A
 * built-in method that has both halves as one task (mdf_method_post_pre)
 * then runs them so: one task and one dependency hop fewer a step, which
 * is a tenth of a step of one small system on two cores (864-atom in.lj).
 * The same arithmetic in the same order, so the results are the same bit
 * for bit. Only runs of one part without checks, cell checks, refills,
 * checkpoints, entry velocities or CUDA workers fuse: their course between
 * two steps is fixed beforehand. */
static int fusable_run(const stage_run *r)
{
    const stage_part *part = &r->s->parts[0];
    return r->s->nparts == 1 && !r->any_checks && !r->cells_change && !r->in && !r->ckpt_path &&
           part->cfg.entry_temperature_K < 0.0 && part->method->post_update &&
           mdf_runtime_plan_cuda_workers() == 0 && mdf_runtime_cuda_workers() == 0;
}

/* Whether the post_update of `step` waits for the next step's pre_update. */
static int fuse_post_pre(stage_run *r, int64_t step, int check)
{
    if (!r->post_pre || check || step >= r->s->max_steps || r->ctl.stop) return 0;
    const stage_part *part = &r->s->parts[0];
    for (int h = 0; h < part->nhooks; h++) {
        const mdf_hook *hk = part->hooks[h];
        if (hook_due(hk, MDF_AFTER_POST_UPDATE, step) || hook_due(hk, MDF_AFTER_STEP, step) ||
            (part_checks(part) && hook_due(hk, MDF_ON_CONVERGE, step)) || hook_due(hk, MDF_BEFORE_STEP, step + 1) ||
            hook_due(hk, MDF_BEFORE_PRE_UPDATE, step + 1))
            return 0;
    }
    return 1;
}

/* The post_updates left waiting when the run ends before the next step
 * (a stop): as the step would have run them. */
static mdf_status submit_deferred_posts(stage_run *r, mdf_error *err)
{
    const stage_part *part = &r->s->parts[0];
    for (int k = 0; k < r->b->nshards; k++) {
        mdf_method_ctx ctx = part_ctx(r, 0, k, r->deferred_post);
        if (part->method->post_update(&ctx) != 0)
            return mdf_error_set(err, MDF_ERR_STARPU, "could not submit %s post_update", part->method->name);
    }
    r->deferred_post = 0;
    return MDF_OK;
}

/* The first half of a step for every part: hooks, entries, pre_update
 * (with the previous step's post_update where that waited for it). */
static mdf_status submit_first_half(stage_run *r, int k, int64_t step, int32_t first_busy, mdf_error *err)
{
    mdf_status st = MDF_OK;
    for (int p = 0; st == MDF_OK && p < r->s->nparts; p++) {
        const stage_part *part = &r->s->parts[p];
        mdf_method_ctx ctx = part_ctx(r, p, k, step);
        int idle = p < first_busy;
        st = submit_hooks(r, p, k, MDF_BEFORE_STEP, step, err);
        if (st == MDF_OK && !idle) st = submit_entries(r, p, k, err);
        if (st == MDF_OK) st = submit_hooks(r, p, k, MDF_BEFORE_PRE_UPDATE, step, err);
        if (st == MDF_OK && r->deferred_post > 0 && r->deferred_post == step - 1) {
            mdf_method_ctx post = part_ctx(r, p, k, step - 1);
            if (r->post_pre(&post, &ctx) != 0)
                st = mdf_error_set(err, MDF_ERR_STARPU, "could not submit %s post_update and pre_update",
                                   part->method->name);
        } else if (st == MDF_OK && !idle && part->method->pre_update(&ctx) != 0)
            st = mdf_error_set(err, MDF_ERR_STARPU, "could not submit %s pre_update", part->method->name);
        if (st == MDF_OK) st = submit_hooks(r, p, k, MDF_AFTER_PRE_UPDATE, step, err);
    }
    return st == MDF_OK ? submit_point(r, k, MDF_BEFORE_COMPUTE, step, err) : st;
}

/* The second half for every part: hooks, post_update (unless it waits to
 * run with the next pre_update: fuse). */
static mdf_status submit_second_half(stage_run *r, int k, int64_t step, int32_t first_busy, int fuse,
                                     mdf_error *err)
{
    mdf_status st = submit_point(r, k, MDF_AFTER_COMPUTE, step, err);
    for (int p = 0; st == MDF_OK && p < r->s->nparts; p++) {
        const stage_part *part = &r->s->parts[p];
        mdf_method_ctx ctx = part_ctx(r, p, k, step);
        st = submit_hooks(r, p, k, MDF_BEFORE_POST_UPDATE, step, err);
        if (st == MDF_OK && !fuse && p >= first_busy && part->method->post_update &&
            part->method->post_update(&ctx) != 0)
            st = mdf_error_set(err, MDF_ERR_STARPU, "could not submit %s post_update", part->method->name);
        if (st == MDF_OK) st = submit_hooks(r, p, k, MDF_AFTER_POST_UPDATE, step, err);
    }
    return st;
}

static mdf_status submit_step(stage_run *r, int64_t step, int flags, int check, mdf_error *err)
{
    mdf_status st = MDF_OK;
    const int fuse = fuse_post_pre(r, step, check);
    for (int k = 0; st == MDF_OK && k < r->b->nshards; k++) {
        int32_t first_busy = shard_first_busy(r, k); /* once: both halves agree */
        st = submit_first_half(r, k, step, first_busy, err);
        /* One model evaluation for the systems of every part. */
        if (st == MDF_OK) st = mdf_compute_submit(r->c, k, flags, err);
        if (st == MDF_OK) st = submit_second_half(r, k, step, first_busy, fuse, err);
        if (st == MDF_OK && check) st = submit_converge(r, k, 0, err);
        if (st == MDF_OK) st = submit_point(r, k, MDF_ON_CONVERGE, step, err);
        if (st == MDF_OK) st = submit_point(r, k, MDF_AFTER_STEP, step, err);
    }
    r->deferred_post = st == MDF_OK && fuse ? step : 0;
    return st;
}

/* Step 0: the model at the starting positions, kinetic energies, entry
 * velocities of systems handed over by an earlier stage, the first
 * convergence check, and the hooks of the compute points and AFTER_STEP. */
static mdf_status submit_start(stage_run *r, int flags, mdf_error *err)
{
    mdf_status st = MDF_OK;
    for (int k = 0; st == MDF_OK && k < r->b->nshards; k++) {
        const mdf_shard *sh = &r->b->shards[k];
        st = submit_point(r, k, MDF_BEFORE_COMPUTE, 0, err);
        if (st == MDF_OK) st = mdf_compute_submit(r->c, k, flags, err);
        if (st == MDF_OK) st = submit_point(r, k, MDF_AFTER_COMPUTE, 0, err);
        if (st == MDF_OK) {
            mdf_kinetic_args ka = {.work = sh->natoms, .nsys = sh->nsys};
            if (mdf_insert_kinetic(sh->vel, sh->atoms, sh->sys, sh->res, &ka) != 0)
                st = mdf_error_set(err, MDF_ERR_STARPU, "could not submit kinetic energies");
        }
        for (int p = 0; st == MDF_OK && p < r->s->nparts; p++) st = submit_entries(r, p, k, err);
        if (st == MDF_OK) st = submit_converge(r, k, 0, err);
        if (st == MDF_OK) st = submit_point(r, k, MDF_ON_CONVERGE, 0, err);
        if (st == MDF_OK) st = submit_point(r, k, MDF_AFTER_STEP, 0, err);
        if (st == MDF_OK && r->any_checks) st = submit_census(r, k, 0, err);
    }
    return st;
}

/* ---- setup and teardown ------------------------------------------------------- */

static mdf_status create_workspaces(stage_run *r, int p, mdf_error *err)
{
    const stage_part *part = &r->s->parts[p];
    if (!part->method->work_bytes) return MDF_OK;
    int n = r->b->nshards;
    r->work[p] = calloc((size_t)n, sizeof *r->work[p]);
    r->work_mem[p] = calloc((size_t)n, sizeof *r->work_mem[p]);
    if (!r->work[p] || !r->work_mem[p]) return mdf_error_set(err, MDF_ERR_NOMEM, "no memory for a stage run");
    for (int k = 0; k < n; k++) {
        const mdf_shard *sh = &r->b->shards[k];
        size_t bytes = part->method->work_bytes(part->mparams, sh->atom_cap, sh->sys_cap);
        if (bytes == 0) bytes = 8;
        r->work_mem[p][k] = calloc(1, mdf_blob_padded(bytes));
        if (!r->work_mem[p][k])
            return mdf_error_set(err, MDF_ERR_NOMEM, "no memory for %s's workspace (%zu bytes for shard %d)",
                                 part->method->name, bytes, k);
        mdf_blob_register(&r->work[p][k], STARPU_MAIN_RAM, (uintptr_t)r->work_mem[p][k], bytes);
    }
    return MDF_OK;
}

static mdf_status begin_hooks(stage_run *r, int p, mdf_error *err)
{
    stage_part *part = &r->s->parts[p];
    mdf_hook_begin hb = {.b = r->b, .ctl = &r->ctl, .status = part->cfg.status,
                         .converged_status = part->cfg.converged_status, .dt_fs = part->cfg.params.dt_fs,
                         .max_steps = r->s->max_steps, .window = r->s->parts[0].cfg.window};
    mdf_status st = MDF_OK;
    for (int h = 0; st == MDF_OK && h < part->nhooks; h++, r->begun_hooks[p]++)
        if (part->hooks[h]->ops->begin) st = part->hooks[h]->ops->begin(part->hooks[h], &hb, err);
    return st;
}

/* The model pipeline over the stage's statuses (again after each refill:
 * its chunks follow the systems in place). */
static mdf_status create_compute(stage_run *r, mdf_error *err)
{
    const mdf_stage_config *run = &r->s->parts[0].cfg;
    mdf_compute_config cc;
    mdf_compute_config_init(&cc);
    cc.skin = run->skin;
    cc.rebuild_every = run->rebuild_every;
    cc.rebuild_nocheck = run->rebuild_nocheck;
    cc.chunk_atoms = run->chunk_atoms;
    cc.status_lo = r->lo;
    cc.status_hi = r->hi;
    return mdf_compute_create(r->b, r->m, &cc, &r->c, err);
}

/* Steps compute the virial only when something asks for it, so a system
 * that reached the exit status on another step carries a stale one. Before
 * such systems are handed out (at a refill) or the run ends, with every
 * task done, one more evaluation of just them gives it
 * (mdf_compute_refresh_virials: its own pipeline and scratch arrays, so no
 * force or energy changes). It costs one evaluation per system that
 * leaves, and is not counted among the steps' evaluations. */
static mdf_status evaluate_exited(stage_run *r, mdf_error *err)
{
    return mdf_compute_refresh_virials(r->b, r->m, r->s->parts[0].cfg.skin, mdf_stage_exit_status(r->s), err);
}

static mdf_status restore_run(stage_run *r, const mdf_ckpt *ck, mdf_error *err);

static mdf_status create_run(stage_run *r, mdf_stage *s, mdf_batch *b, mdf_model *m, const mdf_ckpt *resume,
                             mdf_error *err)
{
    memset(r, 0, sizeof *r);
    r->s = s;
    r->b = b;
    r->m = m;
    r->lo = s->parts[0].cfg.status;
    r->hi = s->parts[s->nparts - 1].cfg.status;
    for (int p = 0; p < s->nparts; p++) {
        r->any_checks |= part_checks(&s->parts[p]);
        r->cells_change |= mdf_method_has(s->parts[p].method, MDF_METHOD_CELL);
    }
    r->r_list = mdf_model_list_radius(m, s->parts[0].cfg.skin);
    mdf_run_control_init(&r->ctl);
    int n = b->nshards;
    r->tokens = calloc((size_t)n, sizeof *r->tokens);
    r->token_mem = calloc((size_t)n, sizeof *r->token_mem);
    r->cens = calloc((size_t)n, sizeof *r->cens);
    r->first_row = calloc((size_t)n, sizeof *r->first_row);
    r->clog = calloc((size_t)n, sizeof *r->clog);
    pthread_cond_init(&r->answered, NULL);
    if (!r->tokens || !r->token_mem || !r->cens || !r->first_row || !r->clog)
        return mdf_error_set(err, MDF_ERR_NOMEM, "no memory for a stage run");
    r->census_lag = s->parts[0].cfg.window;
    for (int k = 0; k < n; k++) {
        census_log *lg = &r->clog[k];
        lg->cap = 2 * (r->census_lag + 2);
        lg->step = calloc((size_t)lg->cap, sizeof *lg->step);
        lg->answer = calloc((size_t)lg->cap, sizeof *lg->answer);
        if (!lg->step || !lg->answer) return mdf_error_set(err, MDF_ERR_NOMEM, "no memory for a stage run");
    }
    int64_t row = 0;
    for (int k = 0; k < n; k++) {
        starpu_vector_data_register(&r->tokens[k], STARPU_MAIN_RAM, (uintptr_t)&r->token_mem[k], 1, sizeof(int32_t));
        r->cens[k].step = -1;
        /* Host-side hooks key their rows by slot: stable across refills. */
        r->first_row[k] = b->shards[k].sys_off;
        row += b->shards[k].nsys;
    }
    mdf_status st = MDF_OK;
    for (int p = 0; st == MDF_OK && p < s->nparts; p++) st = create_workspaces(r, p, err);
    if (st == MDF_OK) st = create_compute(r, err);
    /* Hooks get their positions back before they begin: begin then
     * continues their outputs instead of starting them afresh. */
    if (st == MDF_OK && resume) st = restore_run(r, resume, err);
    for (int p = 0; st == MDF_OK && p < s->nparts; p++) st = begin_hooks(r, p, err);
    return st;
}

/* Ends the hooks that began (the first error is kept) and frees the run. */
static mdf_status destroy_run(stage_run *r, mdf_error *err)
{
    mdf_status st = MDF_OK;
    for (int p = 0; p < r->s->nparts; p++)
        for (int h = 0; h < r->begun_hooks[p]; h++) {
            mdf_hook *hk = r->s->parts[p].hooks[h];
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
        if (r->tokens[k]) mdf_data_unregister(r->tokens[k]);
    for (int p = 0; p < r->s->nparts; p++) {
        for (int k = 0; r->work[p] && k < n; k++) {
            if (r->work[p][k]) mdf_data_unregister(r->work[p][k]);
            free(r->work_mem[p][k]);
        }
        free(r->work[p]);
        free(r->work_mem[p]);
    }
    mdf_compute_destroy(r->c);
    free(r->tokens);
    free(r->token_mem);
    free(r->cens);
    free(r->first_row);
    for (int k = 0; r->clog && k < n; k++) {
        free(r->clog[k].step);
        free(r->clog[k].answer);
    }
    free(r->clog);
    pthread_cond_destroy(&r->answered);
    mdf_run_control_destroy(&r->ctl);
    return st;
}

/* A state block belongs to the method that wrote it: when a stage with
 * another method takes a system over (two stages on one status, one after
 * the other), the block starts afresh. The state of systems that continue
 * with the same method (a stage run again) is kept. Host side, once per run. */
static mdf_status claim_states(mdf_batch *b, const mdf_stage *s, mdf_error *err)
{
    int32_t number[MDF_CONVERGE_PARTS];
    for (int p = 0; p < s->nparts; p++) number[p] = mdf_method_number(s->parts[p].method);
    for (int k = 0; k < b->nshards; k++) {
        const mdf_shard *sh = &b->shards[k];
        if (mdf_data_acquire(sh->state, STARPU_RW) != 0)
            return mdf_error_set(err, MDF_ERR_STARPU, "could not acquire shard %d's integrator state", k);
        for (int32_t i = 0; i < sh->nsys; i++) {
            mdf_sys_state *st = &b->state[sh->sys_off + i];
            int32_t status = b->sys[sh->sys_off + i].status;
            for (int p = 0; p < s->nparts; p++) {
                int32_t method = number[p];
                if (status != s->parts[p].cfg.status || st->method == method) continue;
                memset(st, 0, sizeof *st);
                st->method = method;
            }
        }
        starpu_data_release(sh->state);
    }
    return MDF_OK;
}

/* Systems and atoms with a status in [lo, hi], and those at the exit status. */
static int64_t count_systems(const mdf_batch *b, int32_t lo, int32_t hi, int32_t exit, int64_t *atoms,
                             int64_t *at_exit, int64_t *budget_flagged)
{
    int64_t n = 0;
    *atoms = *at_exit = *budget_flagged = 0;
    for (size_t i = 0; i < b->nsys; i++) {
        const mdf_sys_info *si = &b->sys[b->sys_slot[i]];
        if (si->status == exit) {
            (*at_exit)++;
            *budget_flagged += (si->flags & MDF_SYS_BUDGET_EXIT) != 0;
        }
        if (si->status < lo || si->status > hi) continue;
        *atoms += si->natoms;
        n++;
    }
    return n;
}

static void fill_report(stage_run *r, int64_t steps, double wall, int64_t atoms0, int64_t exit0, int64_t flagged0,
                        mdf_stage_report *report)
{
    report->steps = steps;
    fold_compute_stats(r);
    report->model_evaluations = r->evaluations_before;
    report->list_rebuilds = r->rebuilds_before;
    report->overflowed_atoms = r->overflowed_max;
    report->max_neighbours = r->neighbours_max;
    report->list_slots = r->slots;
    report->nchunks = r->chunks_max;
    int64_t atoms, at_exit, flagged;
    report->remaining = count_systems(r->b, r->lo, r->hi, mdf_stage_exit_status(r->s), &atoms, &at_exit, &flagged);
    report->converged = at_exit - exit0;
    report->budget_exits = flagged - flagged0;
    report->wall_seconds = wall;
    report->atom_steps_per_second = wall > 0.0 ? (double)atoms0 * (double)steps / wall : 0.0;
    report->nshards = r->b->nshards;
    report->refills = r->refills;
}

/* Step 0 of the systems a refill brought in, as stage step `step`: the
 * model (for everyone at unchanged positions: the same forces), entry
 * velocities, the first convergence check of the newcomers only, and the
 * ON_CONVERGE and AFTER_STEP hooks, so that logs see the newcomers (also
 * those already converged) and their moves. */
static mdf_status submit_refill_start(stage_run *r, int64_t step, mdf_error *err)
{
    mdf_status st = MDF_OK;
    for (int k = 0; st == MDF_OK && k < r->b->nshards; k++) {
        st = mdf_compute_submit(r->c, k, MDF_COMPUTE_VIRIAL, err);
        for (int p = 0; st == MDF_OK && p < r->s->nparts; p++) st = submit_entries(r, p, k, err);
        if (st == MDF_OK) st = submit_converge(r, k, 1, err);
        if (st == MDF_OK) st = submit_point(r, k, MDF_ON_CONVERGE, step, err);
        if (st == MDF_OK) st = submit_point(r, k, MDF_AFTER_STEP, step, err);
    }
    return st;
}

/* The neighbour-list figures of a pipeline, folded into the run's. */
static void fold_compute_stats(stage_run *r)
{
    mdf_compute_stats cs;
    if (!r->c || mdf_compute_get_stats(r->c, &cs, NULL) != MDF_OK) return;
    r->rebuilds_before += cs.rebuilds;
    r->evaluations_before += mdf_compute_evaluations(r->c);
    if (cs.overflowed_atoms > r->overflowed_max) r->overflowed_max = cs.overflowed_atoms;
    if (cs.max_neighbours > r->neighbours_max) r->neighbours_max = cs.max_neighbours;
    if (cs.nchunks > r->chunks_max) r->chunks_max = cs.nchunks;
    r->slots = cs.slots;
}

/* Hands finished systems out and brings new ones in: a synchronisation point
 * every refill_interval steps (the batch's handles stay registered). Sets
 * *took_step when the newcomers' step 0 used stage step `step`. */
static mdf_status refill_now(stage_run *r, int64_t step, int *took_step, mdf_error *err)
{
    *took_step = 0;
    mdf_task_wait_for_all();
    size_t added = 0, removed = 0;
    mdf_status st = evaluate_exited(r, err);
    if (st == MDF_OK) st = mdf_inflight_refill(r->in, r->b, r->lo, r->hi, &added, &removed, err);
    /* The pipeline's chunks follow the systems: rebuild it when some came or
     * went. A refill that changed nothing keeps it (and its lists), so that
     * whether a refill happened leaves no trace in the trajectories. */
    if (added || removed) r->refills++;
    if (st == MDF_OK && (added || removed || !r->c)) {
        fold_compute_stats(r);
        mdf_compute *old = r->c;
        r->c = NULL;
        st = create_compute(r, err);
        if (st == MDF_OK) st = mdf_compute_carry_lists(r->c, old, err);
        mdf_compute_destroy(old);
    }
    census_forget(r);
    if (st == MDF_OK && added) {
        st = submit_refill_start(r, step, err);
        *took_step = 1;
    }
    /* Learn at once whether anything is left. */
    for (int k = 0; st == MDF_OK && k < r->b->nshards; k++) st = submit_census(r, k, step, err);
    return st;
}

/* 1 when the latest censuses make a refill worth its cost: a shard has
 * none of the stage's systems left while it holds some (its workers would
 * idle), or the systems that left hold at least refill_fraction of the
 * batch's atom budget. A shard whose census has not answered since the
 * last refill counts as unchanged: the next refill point will know. */
static int worth_refilling(stage_run *r)
{
    int worth = 0;
    int64_t gone = 0, budget = 0;
    pthread_mutex_lock(&r->ctl.lock);
    for (int k = 0; k < r->b->nshards && !worth; k++) {
        const census *c = &r->cens[k];
        budget += r->b->shards[k].atom_cap;
        if (c->step < 0) continue;
        worth = c->left == 0 && r->b->shards[k].nsys > 0;
        gone += c->gone_atoms;
    }
    pthread_mutex_unlock(&r->ctl.lock);
    if (worth) return 1;
    double enough = mdf_inflight_fraction(r->in) * (double)budget;
    if (gone > 0 && (double)gone >= enough) return 1;
    /* A pipeline stage whose next stage has nothing waiting: hand over at
     * once what finished (its workers would idle, or the next stage's: at
     * the start it waits for the first systems). */
    if (gone > 0 && mdf_inflight_downstream_idle(r->in)) return 1;
    /* A pipeline stage: finished systems held for lack of room that could
     * now go on, or enough arrivals for the room the batch has. */
    if (mdf_inflight_room_for_held(r->in)) return 1;
    int64_t pending = mdf_inflight_pending_atoms(r->in);
    if (pending <= 0) return 0;
    int64_t room = gone;
    for (int k = 0; k < r->b->nshards; k++) room += r->b->shards[k].atom_cap - r->b->shards[k].natoms;
    int64_t fill = pending < room ? pending : room;
    return fill > 0 && ((double)fill >= enough || mdf_inflight_inbox_pressing(r->in));
}

static int refill_due(stage_run *r, int64_t step)
{
    if (!r->in || step <= 1) return 0;
    /* With checkpoints, at every refill point and only there: the census'
     * answers arrive when they arrive, so decisions on them would make the
     * run's course (and a resumed run's) depend on timing. */
    if (r->fixed_course) return (step - 1) % mdf_inflight_interval(r->in) == 0;
    /* Nobody left to move while the dataset still has systems: refill now. */
    if (!mdf_inflight_exhausted(r->in) && r->any_checks && nothing_left(r)) return 1;
    if ((step - 1) % mdf_inflight_interval(r->in) != 0) return 0;
    /* A refill drains the task window and rebuilds the model's pipeline:
     * skip it until the census (every check_interval steps) says that enough
     * systems have finished. */
    return !r->any_checks || worth_refilling(r);
}

/* ---- checkpoints ------------------------------------------------------------------ */

/* The stage-wide settings, then the method's block value by value in its
 * table's order (padding and layout do not count; the method's name is
 * hashed by the caller). */
static uint64_t hash_params(uint64_t h, const mdf_dynamics_params *p, const mdf_method *m, const void *block)
{
    h = mdf_hash_f64(h, p->dt_fs);
    h = mdf_hash_f64(h, p->temperature_K);
    h = mdf_hash_i64(h, (int64_t)p->seed);
    h = mdf_hash_i64(h, (int64_t)mdf_params_count(m->params));
    for (const mdf_param_def *d = m->params; d && d->name; d++) {
        h = mdf_hash_str(h, d->name);
        switch (d->type) {
        case MDF_PARAM_TYPE_DOUBLE: h = mdf_hash_f64(h, mdf_params_get(d, block)); break;
        case MDF_PARAM_TYPE_INT:
        case MDF_PARAM_TYPE_BOOL: h = mdf_hash_i64(h, (int64_t)mdf_params_get(d, block)); break;
        default: h = mdf_hash_str(h, (const char *)block + d->offset); break; /* text parameters */
        }
    }
    return h;
}

/* The stage as a checkpoint sees it: methods, parameters, criteria,
 * budgets, hooks (kind, point, frequency), and what shapes the model's
 * arithmetic (skin, chunking). text: "fire + langevin". */
static uint64_t stage_hash(const mdf_stage *s, char *text, size_t size)
{
    uint64_t h = mdf_hash_i64(MDF_HASH_INIT, s->nparts);
    text[0] = '\0';
    for (int p = 0; p < s->nparts; p++) {
        const stage_part *part = &s->parts[p];
        const mdf_stage_config *c = &part->cfg;
        size_t len = strlen(text);
        snprintf(text + len, size - len, "%s%s", p ? " + " : "", part->method->name);
        h = mdf_hash_str(h, part->method->name);
        h = mdf_hash_i64(h, c->status);
        h = mdf_hash_i64(h, c->converged_status);
        h = mdf_hash_i64(h, c->step_budget);
        h = mdf_hash_f64(h, c->entry_temperature_K);
        h = mdf_hash_f64(h, c->skin);
        if (c->rebuild_every != 1 || c->rebuild_nocheck) { /* checkpoints of the default rule keep their hash */
            h = mdf_hash_i64(h, c->rebuild_every);
            h = mdf_hash_i64(h, c->rebuild_nocheck);
        }
        h = mdf_hash_i64(h, c->chunk_atoms);
        h = hash_params(h, &c->params, part->method, part->mparams);
        h = mdf_hash_i64(h, part->crit.mask);
        h = mdf_hash_f64(h, part->crit.fmax_thr);
        h = mdf_hash_f64(h, part->crit.de_thr);
        h = mdf_hash_i64(h, part->crit.steps_thr);
        h = mdf_hash_i64(h, part->crit.budget);
        if (part->crit.mask & MDF_CRIT_SMAX) h = mdf_hash_f64(h, part->crit.smax_thr);
        h = mdf_hash_i64(h, part->nhooks);
        for (int k = 0; k < part->nhooks; k++) {
            const mdf_hook *hk = part->hooks[k];
            h = mdf_hash_str(h, hk->ops->kind);
            h = mdf_hash_str(h, hk->name);
            h = mdf_hash_i64(h, hk->point);
            h = mdf_hash_i64(h, hk->every);
        }
    }
    return h;
}

/* The model: its kind, cutoff, elements and parameters. */
static uint64_t model_hash(const mdf_model *m)
{
    uint64_t h = mdf_hash_str(MDF_HASH_INIT, mdf_model_name(m));
    h = mdf_hash_f64(h, m->cutoff);
    h = mdf_hash_f64(h, m->density_hint);
    h = mdf_hash(h, m->known_z, sizeof m->known_z);
    if (m->params && mdf_data_acquire(m->params, STARPU_R) == 0) {
        const unsigned char *p = (const unsigned char *)starpu_data_get_local_ptr(m->params);
        size_t n = starpu_data_get_size(m->params), skip = m->fingerprint_skip_off;
        size_t rest = skip + m->fingerprint_skip_len;
        if (p && rest <= n) {
            /* Zeros in place of the machine setting: the hash is that of
             * parameters laid out before it existed (zeroed padding). */
            static const unsigned char zero = 0;
            h = mdf_hash(h, p, skip);
            for (size_t z = skip; z < rest; z++) h = mdf_hash(h, &zero, 1);
            h = mdf_hash(h, p + rest, n - rest);
        } else if (p) h = mdf_hash(h, p, n);
        starpu_data_release(m->params);
    }
    return h;
}

/* Neighbour-list and evaluation figures so far, without folding. */
static void run_counters(stage_run *r, int64_t out[6])
{
    out[0] = r->evaluations_before;
    out[1] = r->rebuilds_before;
    out[2] = r->overflowed_max;
    out[3] = r->neighbours_max;
    out[4] = r->slots;
    out[5] = r->chunks_max;
    mdf_compute_stats cs;
    if (!r->c || mdf_compute_get_stats(r->c, &cs, NULL) != MDF_OK) return;
    out[0] += mdf_compute_evaluations(r->c);
    out[1] += cs.rebuilds;
    if (cs.overflowed_atoms > out[2]) out[2] = cs.overflowed_atoms;
    if (cs.max_neighbours > out[3]) out[3] = cs.max_neighbours;
    out[4] = cs.slots;
    if (cs.nchunks > out[5]) out[5] = cs.nchunks;
}

/* A hook's position in its outputs, under hook.P.K. */
static mdf_status save_hook(mdf_hook *h, int p, int k, mdf_ckpt *ck, mdf_error *err)
{
    size_t cap = 4096;
    for (;;) {
        unsigned char *buf = malloc(cap);
        if (!buf) return mdf_error_set(err, MDF_ERR_NOMEM, "no memory for hook '%s''s checkpoint", h->name);
        long n = h->ops->save(h, buf, cap);
        if (n >= 0) {
            char name[64];
            snprintf(name, sizeof name, "hook.%d.%d", p, k);
            mdf_status st = mdf_ckpt_put(ck, name, buf, 1, (size_t)n, err);
            free(buf);
            return st;
        }
        free(buf);
        if (cap >= ((size_t)1 << 30))
            return mdf_error_set(err, MDF_ERR_INVALID, "hook '%s' could not save its position in a checkpoint", h->name);
        cap *= 4;
    }
}

/* The run's full state, with no task pending, to r->ckpt_path; next_step:
 * the first step a resumed run submits. */
static mdf_status save_checkpoint(stage_run *r, int64_t next_step, mdf_error *err)
{
    mdf_status st = mdf_inflight_pull(r->in, err); /* a pipeline stage's inbox goes into the checkpoint */
    if (st == MDF_OK) st = mdf_batch_sync(r->b, err);
    if (st != MDF_OK) return st;
    mdf_ckpt *ck = mdf_ckpt_new(r->ckpt_path);
    if (!ck) return mdf_error_set(err, MDF_ERR_NOMEM, "no memory for checkpoint '%s'", r->ckpt_path);
    char text[512];
    int64_t fp[2] = {(int64_t)stage_hash(r->s, text, sizeof text), (int64_t)model_hash(r->m)};
    int64_t counters[6];
    run_counters(r, counters);
    int64_t cens[2 * 4096];
    int n = r->b->nshards;
    st = mdf_ckpt_put_i64(ck, "run.next_step", &next_step, 1, err);
    if (st == MDF_OK) st = mdf_ckpt_put_i64(ck, "run.fingerprint", fp, 2, err);
    if (st == MDF_OK) st = mdf_ckpt_put(ck, "run.stages", text, 1, strlen(text), err);
    if (st == MDF_OK) st = mdf_ckpt_put_i64(ck, "run.counters", counters, 6, err);
    if (st == MDF_OK) {
        int64_t *c = n <= 4096 ? cens : malloc(sizeof *c * 2 * (size_t)n);
        if (!c) st = mdf_error_set(err, MDF_ERR_NOMEM, "no memory for a checkpoint");
        pthread_mutex_lock(&r->ctl.lock);
        for (int k = 0; c && k < n; k++) {
            c[2 * k] = r->cens[k].step;
            c[2 * k + 1] = r->cens[k].left;
        }
        pthread_mutex_unlock(&r->ctl.lock);
        if (c) st = mdf_ckpt_put_i64(ck, "run.census", c, 2 * (size_t)n, err);
        if (c != cens) free(c);
    }
    for (int p = 0; st == MDF_OK && p < r->s->nparts; p++)
        for (int k = 0; st == MDF_OK && r->work[p] && k < n; k++) {
            if (mdf_data_acquire(r->work[p][k], STARPU_R) != 0) {
                st = mdf_error_set(err, MDF_ERR_STARPU, "could not bring a workspace to the host for a checkpoint");
                break;
            }
            char name[64];
            snprintf(name, sizeof name, "work.%d.%d", p, k);
            st = mdf_ckpt_put(ck, name, r->work_mem[p][k], 1, starpu_data_get_size(r->work[p][k]), err);
            starpu_data_release(r->work[p][k]);
        }
    for (int p = 0; st == MDF_OK && p < r->s->nparts; p++)
        for (int k = 0; st == MDF_OK && k < r->s->parts[p].nhooks; k++) {
            mdf_hook *h = r->s->parts[p].hooks[k];
            if (h->ops->save) st = save_hook(h, p, k, ck, err);
        }
    if (st == MDF_OK) st = mdf_inflight_save(r->in, r->b, ck, err);
    if (st == MDF_OK) st = mdf_ckpt_write(ck, err);
    mdf_ckpt_free(ck);
    return st;
}

/* A checkpoint within the run (a refill point): the pipeline is rebuilt
 * after it, as a resumed run builds its own, so both go on with neighbour
 * lists built from the same positions at the same step. */
static mdf_status checkpoint_now(stage_run *r, int64_t step, mdf_error *err)
{
    mdf_task_wait_for_all();
    fold_compute_stats(r);
    mdf_compute_destroy(r->c);
    r->c = NULL;
    mdf_status st = save_checkpoint(r, step, err);
    if (st == MDF_OK) st = create_compute(r, err);
    return st;
}

/* The stage and the model the checkpoint was written for are these. */
static mdf_status check_run_fingerprint(const mdf_stage *s, const mdf_model *m, const mdf_ckpt *ck, mdf_error *err)
{
    const int64_t *fp = mdf_ckpt_get(ck, "run.fingerprint", sizeof(int64_t), 2, NULL, err);
    if (!fp) return err ? err->code : MDF_ERR_PARSE;
    size_t n = 0;
    const char *was = mdf_ckpt_get(ck, "run.stages", 1, (size_t)-1, &n, err);
    if (!was) return err ? err->code : MDF_ERR_PARSE;
    char text[512];
    uint64_t h = stage_hash(s, text, sizeof text);
    if ((uint64_t)fp[0] != h)
        return mdf_error_set(err, MDF_ERR_INVALID,
                             "checkpoint '%s' was written by another workflow: its stages were %.*s, this run's are "
                             "%s%s: resume with the stages, parameters, criteria and hooks it was written with, or "
                             "start afresh without resuming", mdf_ckpt_path(ck), (int)n, was, text,
                             strlen(text) == n && !strncmp(text, was, n) ? " (with other parameters, criteria or hooks)"
                                                                         : "");
    if ((uint64_t)fp[1] != model_hash(m))
        return mdf_error_set(err, MDF_ERR_INVALID,
                             "checkpoint '%s' was written with another model (its parameters, cutoffs or elements "
                             "differ from this run's %s model): resume with the model it was written with, or start "
                             "afresh without resuming", mdf_ckpt_path(ck), mdf_model_name(m));
    return MDF_OK;
}

/* Puts the run's own state back from a checkpoint: workspaces, census,
 * counters, and the hooks' positions (before they begin). */
static mdf_status restore_run(stage_run *r, const mdf_ckpt *ck, mdf_error *err)
{
    int n = r->b->nshards;
    mdf_status st = MDF_OK;
    for (int p = 0; st == MDF_OK && p < r->s->nparts; p++)
        for (int k = 0; st == MDF_OK && r->work[p] && k < n; k++) {
            char name[64];
            snprintf(name, sizeof name, "work.%d.%d", p, k);
            const void *w = mdf_ckpt_get(ck, name, 1, starpu_data_get_size(r->work[p][k]), NULL, err);
            if (!w) st = err ? err->code : MDF_ERR_PARSE;
            else memcpy(r->work_mem[p][k], w, starpu_data_get_size(r->work[p][k]));
        }
    const int64_t *c = st == MDF_OK ? mdf_ckpt_get(ck, "run.census", sizeof(int64_t), 2 * (size_t)n, NULL, err) : NULL;
    if (st == MDF_OK && !c) st = err ? err->code : MDF_ERR_PARSE;
    for (int k = 0; st == MDF_OK && k < n; k++) r->cens[k] = (census){.step = c[2 * k], .left = c[2 * k + 1]};
    const int64_t *cnt = st == MDF_OK ? mdf_ckpt_get(ck, "run.counters", sizeof(int64_t), 6, NULL, err) : NULL;
    if (st == MDF_OK && !cnt) st = err ? err->code : MDF_ERR_PARSE;
    if (st == MDF_OK) {
        r->evaluations_before = cnt[0];
        r->rebuilds_before = cnt[1];
        r->overflowed_max = cnt[2];
        r->neighbours_max = (int32_t)cnt[3];
        r->slots = (int32_t)cnt[4];
        r->chunks_max = (int)cnt[5];
    }
    for (int p = 0; st == MDF_OK && p < r->s->nparts; p++)
        for (int k = 0; st == MDF_OK && k < r->s->parts[p].nhooks; k++) {
            mdf_hook *h = r->s->parts[p].hooks[k];
            if (!h->ops->save) continue;
            char name[64];
            snprintf(name, sizeof name, "hook.%d.%d", p, k);
            size_t bytes = 0;
            const void *data = mdf_ckpt_get(ck, name, 1, (size_t)-1, &bytes, err);
            if (!data) st = err ? err->code : MDF_ERR_PARSE;
            else if (h->ops->restore) st = h->ops->restore(h, data, bytes, err);
        }
    return st;
}

static int run_needs_virial(const mdf_stage *s)
{
    for (int p = 0; p < s->nparts; p++)
        if (mdf_method_has(s->parts[p].method, MDF_METHOD_NEEDS_VIRIAL) || (s->parts[p].crit.mask & MDF_CRIT_SMAX))
            return 1;
    return 0;
}

/* ---- progress: host bookkeeping only -------------------------------------------------- */

typedef struct progress_clock {
    double t0, next;      /* the run's start, the next report due */
    int64_t systems0;     /* the stage's systems at the start (without a sampler) */
    int64_t steps0;       /* steps done before the run began (resumed from a checkpoint) */
} progress_clock;

/* The stage's systems still in the batch at the latest censuses (all of
 * them until every shard answered one). */
static int64_t census_left(stage_run *r, int64_t all)
{
    int64_t left = 0;
    pthread_mutex_lock(&r->ctl.lock);
    for (int k = 0; k < r->b->nshards && left >= 0; k++) left = r->cens[k].step < 0 ? -1 : left + r->cens[k].left;
    pthread_mutex_unlock(&r->ctl.lock);
    return left < 0 ? all : left;
}

/* Calls the stage's progress function when a report is due (or at the
 * end); no task, no wait. */
static void report_progress(stage_run *r, progress_clock *pc, int64_t steps, int finished)
{
    const mdf_stage *s = r->s;
    if (!s->progress) return; /* no clock read per step without a listener */
    double t = now_seconds();
    if (!finished && t < pc->next) return;
    pc->next = t + s->progress_interval;
    mdf_progress p = {.steps = steps > pc->steps0 ? steps : pc->steps0, .steps0 = pc->steps0,
                      .max_steps = s->max_steps, .atoms = r->b->natoms, .elapsed_s = t - pc->t0,
                      .finished = finished};
    if (r->in) {
        mdf_inflight_counts(r->in, &p.systems, &p.waiting);
        p.in_flight = (int64_t)r->b->nsys;
    } else {
        p.systems = pc->systems0;
        p.in_flight = r->any_checks ? census_left(r, pc->systems0) : pc->systems0;
    }
    p.done = p.systems - p.waiting - p.in_flight;
    s->progress(s->progress_user, &p);
}

/* Tasks submitted so far, to size the window: StarPU's count, which is
 * the whole process's, when this thread submits to the global context;
 * this thread's own (mdf_submit counts them) when it has a context of its
 * own (a pipeline stage beside others). */
static uint64_t submitted_tasks(void)
{
    if (starpu_sched_ctx_get_context() == STARPU_NMAX_SCHED_CTXS) return (uint64_t)starpu_task_nsubmitted();
    return mdf_submit_count();
}

static mdf_status run_stage(mdf_stage *s, mdf_batch *b, mdf_model *m, mdf_inflight *in, const ckpt_plan *plan,
                            mdf_stage_report *report, mdf_error *err)
{
    const mdf_ckpt *resume = plan ? plan->resume : NULL;
    if (report) memset(report, 0, sizeof *report);
    /* Statuses and sizes on the host: a wait at the start of a run, never per step. */
    mdf_status st = mdf_batch_sync(b, err);
    if (st != MDF_OK) return st;
    int32_t lo = s->parts[0].cfg.status, hi = s->parts[s->nparts - 1].cfg.status;
    int64_t atoms0, exit0, flagged0;
    int64_t systems0 = count_systems(b, lo, hi, mdf_stage_exit_status(s), &atoms0, &exit0, &flagged0);
    st = check_cell_systems(s, b, err);
    if (st != MDF_OK) return st;
    /* A resumed run's states are the checkpoint's, claimed when it began. */
    st = resume ? MDF_OK : claim_states(b, s, err);
    if (st == MDF_OK) st = clear_cell_flags(b, err);
    if (st != MDF_OK) return st;
    int64_t first_step = 1;
    if (resume && (st = mdf_ckpt_get_i64(resume, "run.next_step", &first_step, err)) == MDF_OK && first_step < 1)
        st = mdf_error_set(err, MDF_ERR_PARSE, "checkpoint '%s' is inconsistent (next step %lld): start the run "
                           "afresh without resuming", mdf_ckpt_path(resume), (long long)first_step);
    if (st != MDF_OK) return st;
    stage_run r;
    st = create_run(&r, s, b, m, resume, err);
    r.in = in; /* create_run zeroed the rest, post_pre and deferred_post among it */
    if (in && plan && plan->path) {
        r.ckpt_path = plan->path;
        r.fixed_course = 1;
        /* Checkpoints at refill points: every N steps, rounded up to a multiple of the interval. */
        int64_t iv = mdf_inflight_interval(in);
        r.ckpt_every = plan->every > 0 ? (plan->every + iv - 1) / iv * iv : 0;
    }
    if (st == MDF_OK && fusable_run(&r)) r.post_pre = mdf_method_post_pre(s->parts[0].method);
    const mdf_stage_config *run = &s->parts[0].cfg;
    int needs_virial = run_needs_virial(s);
    double t0 = now_seconds();
    progress_clock pc = {.t0 = t0, .next = t0 + s->progress_interval, .systems0 = systems0, .steps0 = first_step - 1};
    /* A resumed run's step 0 and steps up to the checkpoint were done. */
    if (st == MDF_OK && !resume) st = submit_start(&r, MDF_COMPUTE_VIRIAL, err);
    unsigned per_step = 0; /* most tasks one step took: the window in tasks */
    const int batch = run->window > 1 ? run->window / 2 : 1; /* steps submitted between waits */
    int since_wait = 0;
    int64_t step = 0;
    for (step = first_step; st == MDF_OK && step <= s->max_steps; step++) {
        if (r.ctl.stop) break;
        if (in && mdf_inflight_stopped(in, err)) {
            st = err ? err->code : MDF_ERR_INVALID;
            break;
        }
        census_advance(&r, step);
        /* A checkpoint before the refill of its step (a resumed run starts
         * there, so it does not write the one it starts from again). */
        if (r.ckpt_every > 0 && step > 1 && (step - 1) % r.ckpt_every == 0 && !(resume && step == first_step)) {
            st = checkpoint_now(&r, step, err);
            if (st != MDF_OK) break;
        }
        if (refill_due(&r, step)) {
            int took_step = 0;
            st = refill_now(&r, step, &took_step, err);
            if (st != MDF_OK) break;
            /* The census just submitted must answer before "nobody left"
             * counts; waited for, it counts at once (a fixed point of the
             * course: the dataset ran out at this refill). */
            if (r.any_checks && mdf_inflight_exhausted(in)) {
                mdf_task_wait_for_all();
                census_advance(&r, INT64_MAX / 2);
            }
            if (took_step) continue; /* this step number was the newcomers' step 0 */
        }
        if (r.any_checks && nothing_left(&r) && (!in || mdf_inflight_exhausted(in))) break;
        uint64_t before = submitted_tasks();
        unsigned needs = hook_needs(s, step);
        /* The step before a checkpoint computes the virial, so that a run stopped
         * there by max_steps and resumed leaves the same virials behind. */
        int before_ckpt = r.ckpt_every > 0 && step % r.ckpt_every == 0;
        int flags = needs_virial || (needs & MDF_HOOK_NEEDS_VIRIAL) || step == s->max_steps || before_ckpt
                        ? MDF_COMPUTE_VIRIAL
                        : 0;
        int check = r.any_checks || (needs & MDF_HOOK_NEEDS_FMAX);
        st = submit_step(&r, step, flags, check, err);
        if (st == MDF_OK && r.any_checks && step % run->check_interval == 0)
            for (int k = 0; st == MDF_OK && k < b->nshards; k++) st = submit_census(&r, k, step, err);
        if (st == MDF_OK && r.cells_change && step % run->check_interval == 0)
            for (int k = 0; st == MDF_OK && k < b->nshards; k++) st = submit_cell_check(&r, k, step, err);
        int now = (int)(submitted_tasks() - before) + 1;
        if (now > (int)per_step) per_step = (unsigned)now;
        /* Keep at most `window` steps in flight, waiting only for old
         * tasks: every `batch` steps, until `window - batch` remain. One
         * wait per step woke the host once a step, and on a machine with a
         * worker on every core each wake-up took a busy worker's core for a
         * while (864-atom in.lj on 2 cores: 10,000 wake-ups). */
        if (st == MDF_OK && ++since_wait >= batch) {
            mdf_task_wait_for_n_submitted((unsigned)(run->window - batch) * per_step);
            since_wait = 0;
        }
        report_progress(&r, &pc, step - run->window, 0);
    }
    int64_t steps_done = step - 1;
    if (st == MDF_OK && r.deferred_post > 0) st = submit_deferred_posts(&r, err);
    mdf_task_wait_for_all();
    report_progress(&r, &pc, steps_done, 1);
    if (st == MDF_OK && !r.ctl.stop) st = evaluate_exited(&r, err);
    double wall = now_seconds() - t0;
    mdf_status sync = mdf_batch_sync(b, st == MDF_OK ? err : NULL);
    if (st == MDF_OK) st = sync;
    if (st == MDF_OK && !r.ctl.stop && r.cells_change) st = check_cells_after(&r, err);
    /* The checkpoint at exit: after max_steps, the last system, or a hook's
     * stop (the state is whole); an internal failure keeps the previous one. */
    if (st == MDF_OK && r.ckpt_path) {
        mdf_error cerr;
        mdf_error_clear(&cerr);
        mdf_status cs = save_checkpoint(&r, step, &cerr);
        if (cs != MDF_OK && !r.ctl.stop) {
            st = cs;
            if (err) *err = cerr;
        }
    }
    if (st == MDF_OK && r.ctl.stop) {
        st = r.ctl.err.code;
        if (err) *err = r.ctl.err;
    }
    if (report && r.c) fill_report(&r, steps_done, wall, atoms0, exit0, flagged0, report);
    mdf_status end = destroy_run(&r, st == MDF_OK ? err : NULL);
    if (st == MDF_OK) st = end;
    return st;
}

mdf_status mdf_stage_run(mdf_stage *s, mdf_batch *b, mdf_model *m, mdf_stage_report *report, mdf_error *err)
{
    return run_stage(s, b, m, NULL, NULL, report, err);
}

mdf_status mdf_stage_run_inflight(mdf_stage *s, mdf_model *m, const mdf_inflight_config *cfg,
                                  mdf_stage_report *report, mdf_error *err)
{
    return mdf_stage_run_ported(s, m, cfg, NULL, report, err);
}

mdf_status mdf_stage_run_ported(mdf_stage *s, mdf_model *m, const mdf_inflight_config *cfg,
                                const mdf_stage_ports *ports, mdf_stage_report *report, mdf_error *err)
{
    if (report) memset(report, 0, sizeof *report);
    mdf_batch *b = NULL;
    mdf_inflight *in = NULL;
    const stage_part *first = &s->parts[0];
    mdf_ckpt *ck = NULL;
    mdf_status st = MDF_OK;
    if (cfg && cfg->resume) {
        const char *path = cfg->checkpoint_path;
        struct stat sb;
        if (!path || !*path)
            return mdf_error_set(err, MDF_ERR_INVALID, "resuming needs a checkpoint file: set checkpoint_path");
        if (stat(path, &sb) != 0)
            return mdf_error_set(err, MDF_ERR_INVALID, "there is no checkpoint '%s' to resume from (%s): run without "
                                 "resuming first, with checkpoints on", path, strerror(errno));
        st = mdf_ckpt_read(path, &ck, err);
        if (st == MDF_OK) st = check_run_fingerprint(s, m, ck, err);
        if (st != MDF_OK) {
            mdf_ckpt_free(ck);
            return st;
        }
    }
    st = mdf_inflight_create(cfg, m, first->cfg.skin, first->cfg.status, mdf_stage_exit_status(s), ck, ports, &b, &in,
                             err);
    /* Systems handed out before the checkpoint go to the receiver again. */
    if (st == MDF_OK && ck) st = mdf_inflight_replay(in, cfg->checkpoint_path, err);
    if (st != MDF_OK) {
        mdf_inflight_destroy(in);
        mdf_batch_destroy(b);
        mdf_ckpt_free(ck);
        return st;
    }
    ckpt_plan plan = {.path = cfg->checkpoint_path, .every = cfg->checkpoint_every, .resume = ck};
    mdf_stage_report rep;
    st = run_stage(s, b, m, in, &plan, &rep, err);
    mdf_ckpt_free(ck);
    /* Everything still in the batch goes out, finished or not, also after an
     * error (what was done is not lost). */
    mdf_error fin_err;
    mdf_error_clear(&fin_err);
    mdf_status fin = mdf_batch_sync(b, &fin_err);
    if (fin == MDF_OK) fin = mdf_inflight_finish(in, b, &fin_err);
    if (st == MDF_OK && fin != MDF_OK) {
        st = fin;
        if (err) *err = fin_err;
    }
    if (report) {
        *report = rep;
        report->converged = mdf_inflight_exited(in, &report->budget_exits);
        report->remaining = (int64_t)mdf_sampler_size(cfg->sampler) - report->converged;
    }
    mdf_inflight_destroy(in);
    mdf_batch_destroy(b);
    return st;
}
