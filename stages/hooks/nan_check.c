/* mdflow — the NaN/Inf detector. Per shard, a codelet (CPU or GPU) marks
 * each of the stage's systems with what it found non-finite (positions,
 * velocities, forces, energy) in its flags and, in quarantine mode, moves it
 * to MDF_STATUS_FAILED, so the next step no longer integrates or evaluates
 * it. A host-view task behind it (the shard's sequence token orders it)
 * reads the flags and either stops the run with an error naming the systems
 * or writes one warning per quarantined system. */
#include <stdlib.h>
#include <string.h>
#include "../hook_internal.h"
#include "../../codelets/hooks/hooks_codelet.h"
#include "../../codelets/host/host_view_codelet.h"
#include "mdflow/extension.h"

_Static_assert(MDF_HOOKS_STATUS_FAILED == MDF_STATUS_FAILED, "kernel and public failed status agree");
_Static_assert(MDF_HOOKS_NAN_STOP == MDF_NAN_STOP && MDF_HOOKS_NAN_QUARANTINE == MDF_NAN_QUARANTINE,
               "kernel and public NaN actions agree");

typedef struct nan_impl {
    mdf_nan_action action;
    FILE *warn_to;            /* NULL: stderr */
    mdf_run_control *ctl;
    size_t nsys;              /* slots */
    int64_t *reported;        /* by slot: id + 1 of the system whose quarantine
                               * was reported (a refill may reuse the slot) */
} nan_impl;

/* "positions, forces" from MDF_SYS_NONFINITE_* bits. */
static void describe_fields(int32_t flags, char *buf, size_t size)
{
    static const struct {
        int32_t bit;
        const char *name;
    } fields[] = {{MDF_SYS_NONFINITE_POS, "positions"},
                  {MDF_SYS_NONFINITE_VEL, "velocities"},
                  {MDF_SYS_NONFINITE_FORCE, "forces"},
                  {MDF_SYS_NONFINITE_ENERGY, "energy"}};
    buf[0] = '\0';
    for (size_t k = 0; k < sizeof fields / sizeof fields[0]; k++) {
        if (!(flags & fields[k].bit)) continue;
        size_t len = strlen(buf);
        snprintf(buf + len, size - len, "%s%s", len ? ", " : "", fields[k].name);
    }
}

/* STOP: one error naming every bad system of the shard (the run keeps the
 * first error of all shards). */
static void report_stop(nan_impl *impl, const mdf_host_view_args *a, const mdf_sys_info *sys)
{
    char msg[MDF_ERROR_MESSAGE_MAX];
    size_t len = 0;
    int bad = 0;
    msg[0] = '\0';
    for (int32_t s = 0; s < a->nsys; s++) {
        if (sys[s].status != a->status || !(sys[s].flags & MDF_SYS_NONFINITE)) continue;
        char fields[64];
        describe_fields(sys[s].flags, fields, sizeof fields);
        if (len < sizeof msg)
            len += (size_t)snprintf(msg + len, sizeof msg - len, "%ssystem id %lld (batch index %lld): %s at step %lld",
                                    bad ? "; " : "", (long long)sys[s].id, (long long)(a->first_row + s), fields,
                                    (long long)sys[s].step);
        bad++;
    }
    if (bad)
        mdf_run_fail(impl->ctl, MDF_ERR_PHYSICS,
                     "NaN/Inf detected in %d system%s: %s (the run stopped; try a smaller time step, a force "
                     "clamp, or check the model and the starting structure; MDF_NAN_QUARANTINE sets such systems "
                     "aside and lets the others finish)", bad, bad > 1 ? "s" : "", msg);
}

/* QUARANTINE: a warning per system newly moved to MDF_STATUS_FAILED. */
static void report_quarantine(nan_impl *impl, const mdf_host_view_args *a, const mdf_sys_info *sys)
{
    FILE *out = impl->warn_to ? impl->warn_to : stderr;
    for (int32_t s = 0; s < a->nsys; s++) {
        size_t row = (size_t)(a->first_row + s);
        if (sys[s].status != MDF_STATUS_FAILED || !(sys[s].flags & MDF_SYS_NONFINITE)) continue;
        if (row >= impl->nsys || impl->reported[row] == sys[s].id + 1) continue;
        impl->reported[row] = sys[s].id + 1; /* rows of a shard belong to its tasks only: no lock */
        char fields[64];
        describe_fields(sys[s].flags, fields, sizeof fields);
        fprintf(out,
                "mdflow: warning: NaN/Inf in system id %lld (batch index %lld): %s at step %lld; the system is "
                "quarantined (status %d) and the others go on\n",
                (long long)sys[s].id, (long long)row, fields, (long long)sys[s].step, MDF_STATUS_FAILED);
        fflush(out);
    }
}

static void nan_view(void *user, const mdf_host_view_args *a, const mdf_sys_info *sys, const mdf_sys_result *res)
{
    (void)res;
    nan_impl *impl = (nan_impl *)user;
    if (impl->action == MDF_NAN_STOP) report_stop(impl, a, sys);
    else report_quarantine(impl, a, sys);
}

static mdf_status nan_begin(mdf_hook *h, const mdf_hook_begin *b, mdf_error *err)
{
    nan_impl *impl = (nan_impl *)h->impl;
    impl->ctl = b->ctl;
    free(impl->reported);
    impl->nsys = b->b->sys_cap;
    impl->reported = calloc(impl->nsys ? impl->nsys : 1, sizeof *impl->reported);
    if (!impl->reported) return mdf_error_set(err, MDF_ERR_NOMEM, "no memory for the NaN detector");
    /* Systems quarantined before this run (the batch is on the host now)
     * were reported then. */
    for (size_t i = 0; i < b->b->nsys; i++) {
        const mdf_sys_info *si = &b->b->sys[b->b->sys_slot[i]];
        if (si->status == MDF_STATUS_FAILED) impl->reported[b->b->sys_slot[i]] = si->id + 1;
    }
    return MDF_OK;
}

static int nan_submit(mdf_hook *h, const mdf_hook_ctx *c)
{
    nan_impl *impl = (nan_impl *)h->impl;
    const mdf_shard *sh = c->sh;
    mdf_hooks_args a = mdf_hooks_args_of(c);
    a.action = (int32_t)impl->action;
    int ret = mdf_insert_hook_nan_check(sh->pos, sh->vel, sh->force, sh->sys, sh->res, &a);
    if (ret != 0) return ret;
    mdf_host_view_args v = {.work = sh->nsys, .step = c->step, .first_row = c->first_row, .nsys = sh->nsys,
                            .status = c->status, .shard = sh->index, .point = (int32_t)c->point,
                            .fn = nan_view, .user = impl};
    return mdf_insert_host_view(sh->sys, sh->res, c->token, &v);
}

static void nan_free(void *p)
{
    nan_impl *impl = (nan_impl *)p;
    if (impl) free(impl->reported);
    free(impl);
}

static const mdf_hook_ops nan_ops = {
    .kind = "nan_check", .begin = nan_begin, .submit = nan_submit, .destroy_impl = nan_free};

mdf_status mdf_hook_create_nan_check(int64_t every, mdf_nan_action action, FILE *warn_to, mdf_hook **out,
                                     mdf_error *err)
{
    *out = NULL;
    if (action != MDF_NAN_STOP && action != MDF_NAN_QUARANTINE)
        return mdf_error_set(err, MDF_ERR_INVALID,
                             "unknown NaN action %d: use MDF_NAN_STOP (0) or MDF_NAN_QUARANTINE (1)", (int)action);
    nan_impl *impl = calloc(1, sizeof *impl);
    if (!impl) return mdf_error_set(err, MDF_ERR_NOMEM, "no memory for the NaN detector");
    impl->action = action;
    impl->warn_to = warn_to;
    return mdf_hook_new(&nan_ops, "nan_check", MDF_AFTER_POST_UPDATE, every, impl, out, err);
}

/* ---- by name ---------------------------------------------------------------------- */

typedef struct nan_params {
    int32_t every, quarantine;
} nan_params;

static const mdf_param_def nan_defs[] = {
    MDF_PARAM_INT(nan_params, every, 1, 1, INT32_MAX, "steps", "check every N steps"),
    MDF_PARAM_BOOL(nan_params, quarantine, 0, "move a system with NaN/Inf to status -1 and go on (default: stop)"),
    MDF_PARAM_END};

static mdf_status nan_create_named(const void *params, mdf_hook **out, mdf_error *err)
{
    const nan_params *p = (const nan_params *)params;
    return mdf_hook_create_nan_check(p->every, p->quarantine ? MDF_NAN_QUARANTINE : MDF_NAN_STOP, NULL, out, err);
}

const mdf_hook_def mdf_hook_def_nan_check = {MDFLOW_API_VERSION, "nan_check",
                                             "stops (or quarantines) on NaN/Inf positions, velocities, forces, energy",
                                             nan_defs, sizeof(nan_params), nan_create_named};
