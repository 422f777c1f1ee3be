/* mdflow — the timing hook: a host-view task per shard at AFTER_STEP marks
 * when each step of the shard completed. A shard's steps are timed from the
 * completion of its first marked step (step 0, the starting evaluation, so
 * step 1 starts there) to that of its last one; the report takes the
 * slowest shard. Shards' tasks run in order (sequence token) and touch only
 * their own record, so no lock is needed. */
#define _POSIX_C_SOURCE 200809L
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "../hook_internal.h"
#include "../../codelets/host/host_view_codelet.h"
#include "mdflow/extension.h"

typedef struct shard_clock {
    int64_t first_step, last_step;  /* -1: none yet */
    double first_t, last_t;         /* seconds (monotonic) */
    double max_gap;                 /* longest time per step between two marks */
} shard_clock;

typedef struct timing_impl {
    FILE *report_to;
    int nshards;
    shard_clock *clocks;
    mdf_timing_report report;       /* of the last run that ended */
} timing_impl;

static double now_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void timing_view(void *user, const mdf_host_view_args *a, const mdf_sys_info *sys, const mdf_sys_result *res)
{
    (void)sys;
    (void)res;
    timing_impl *impl = (timing_impl *)user;
    if (a->shard < 0 || a->shard >= impl->nshards) return;
    shard_clock *c = &impl->clocks[a->shard];
    double t = now_seconds();
    if (c->first_step < 0) {
        c->first_step = c->last_step = a->step;
        c->first_t = c->last_t = t;
        return;
    }
    if (a->step <= c->last_step) return;
    double gap = (t - c->last_t) / (double)(a->step - c->last_step);
    if (gap > c->max_gap) c->max_gap = gap;
    c->last_step = a->step;
    c->last_t = t;
}

static mdf_status timing_begin(mdf_hook *h, const mdf_hook_begin *b, mdf_error *err)
{
    timing_impl *impl = (timing_impl *)h->impl;
    free(impl->clocks);
    impl->nshards = b->b->nshards;
    impl->clocks = calloc((size_t)(impl->nshards > 0 ? impl->nshards : 1), sizeof *impl->clocks);
    if (!impl->clocks) return mdf_error_set(err, MDF_ERR_NOMEM, "no memory for the timing hook");
    for (int k = 0; k < impl->nshards; k++) impl->clocks[k].first_step = impl->clocks[k].last_step = -1;
    memset(&impl->report, 0, sizeof impl->report);
    return MDF_OK;
}

static int timing_submit(mdf_hook *h, const mdf_hook_ctx *c)
{
    const mdf_shard *sh = c->sh;
    mdf_host_view_args v = {.work = sh->nsys, .step = c->step, .first_row = c->first_row, .nsys = sh->nsys,
                            .status = c->status, .shard = sh->index, .point = (int32_t)c->point,
                            .fn = timing_view, .user = h->impl};
    return mdf_insert_host_view(sh->sys, sh->res, c->token, &v);
}

/* Slowest shard's steps and wall time; the longest step of any shard. */
static mdf_timing_report summarise(const timing_impl *impl)
{
    mdf_timing_report r = {0};
    for (int k = 0; impl->clocks && k < impl->nshards; k++) {
        const shard_clock *c = &impl->clocks[k];
        if (c->first_step < 0) continue;
        int64_t steps = c->last_step - c->first_step;
        double wall = c->last_t - c->first_t;
        if (wall > r.wall_seconds || (wall == r.wall_seconds && steps > r.steps)) {
            r.wall_seconds = wall;
            r.steps = steps;
        }
        if (c->max_gap > r.max_step_seconds) r.max_step_seconds = c->max_gap;
    }
    r.mean_step_seconds = r.steps > 0 ? r.wall_seconds / (double)r.steps : 0.0;
    return r;
}

static mdf_status timing_end(mdf_hook *h, mdf_error *err)
{
    timing_impl *impl = (timing_impl *)h->impl;
    impl->report = summarise(impl);
    if (!impl->report_to) return MDF_OK;
    const mdf_timing_report *r = &impl->report;
    fprintf(impl->report_to,
            "timing: %lld steps in %.6f s (slowest of %d shards): mean %.3e s/step, max %.3e s/step\n",
            (long long)r->steps, r->wall_seconds, impl->nshards, r->mean_step_seconds, r->max_step_seconds);
    if (fflush(impl->report_to) != 0 || ferror(impl->report_to))
        return mdf_error_set(err, MDF_ERR_IO, "writing the timing report failed (disk full?)");
    return MDF_OK;
}

static void timing_free(void *p)
{
    timing_impl *impl = (timing_impl *)p;
    if (impl) free(impl->clocks);
    free(impl);
}

static const mdf_hook_ops timing_ops = {.kind = "timing", .begin = timing_begin, .submit = timing_submit,
                                        .end = timing_end, .destroy_impl = timing_free};

mdf_status mdf_hook_create_timing(FILE *report_to, mdf_hook **out, mdf_error *err)
{
    *out = NULL;
    timing_impl *impl = calloc(1, sizeof *impl);
    if (!impl) return mdf_error_set(err, MDF_ERR_NOMEM, "no memory for the timing hook");
    impl->report_to = report_to;
    return mdf_hook_new(&timing_ops, "timing", MDF_AFTER_STEP, 1, impl, out, err);
}

mdf_status mdf_hook_timing_get(const mdf_hook *h, mdf_timing_report *out, mdf_error *err)
{
    if (!h || !out) return mdf_error_set(err, MDF_ERR_INVALID, "mdf_hook_timing_get needs a hook and a report");
    if (h->ops != &timing_ops)
        return mdf_error_set(err, MDF_ERR_INVALID,
                             "hook '%s' is a %s hook, not a timing hook (make it with mdf_hook_create_timing)",
                             h->name, h->ops->kind);
    *out = ((const timing_impl *)h->impl)->report;
    return MDF_OK;
}

/* ---- by name: reports to standard error when the run ends ----------------------- */

static mdf_status timing_create_named(const void *params, mdf_hook **out, mdf_error *err)
{
    (void)params;
    return mdf_hook_create_timing(stderr, out, err);
}

const mdf_hook_def mdf_hook_def_timing = {MDFLOW_API_VERSION, "timing",
                                          "wall time of the stage's steps, reported on standard error at the end",
                                          NULL, 0, timing_create_named};
