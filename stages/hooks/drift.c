/* mdflow — the energy-drift monitor: a host-view task per shard compares
 * each of the stage's systems' conserved energy (potential + kinetic +
 * extra) with its value the first time this run's monitor saw the system,
 * per atom. Beyond the threshold it warns once per system, or stops the run
 * with an error naming the shard's drifting systems. References are kept by
 * batch index; a shard's rows are touched only by its own tasks, which the
 * sequence token runs in order, so no lock is needed. */
#include <math.h>
#include <stdlib.h>
#include "../hook_internal.h"
#include "../../codelets/host/host_view_codelet.h"
#include "mdflow/extension.h"

typedef struct drift_impl {
    double threshold;          /* eV per atom */
    mdf_drift_action action;
    FILE *warn_to;             /* NULL: stderr */
    mdf_run_control *ctl;
    size_t nsys;               /* slots */
    double *ref;               /* by slot; NaN: not seen yet */
    int64_t *ref_id;           /* id of the system the slot's reference is for */
    unsigned char *warned;
} drift_impl;

/* |E - E_ref| / N; a non-finite energy counts as infinite drift. */
static double drift_of(const mdf_sys_info *si, const mdf_sys_result *r, double ref)
{
    double e = r->energy + r->kinetic + r->extra_energy;
    double d = fabs(e - ref) / (si->natoms > 0 ? (double)si->natoms : 1.0);
    return isfinite(d) ? d : INFINITY;
}

static void drift_view(void *user, const mdf_host_view_args *a, const mdf_sys_info *sys, const mdf_sys_result *res)
{
    drift_impl *impl = (drift_impl *)user;
    FILE *out = impl->warn_to ? impl->warn_to : stderr;
    char msg[MDF_ERROR_MESSAGE_MAX];
    size_t len = 0;
    int bad = 0;
    msg[0] = '\0';
    for (int32_t s = 0; s < a->nsys; s++) {
        size_t row = (size_t)(a->first_row + s);
        const mdf_sys_info *si = &sys[s];
        if (si->status != a->status || row >= impl->nsys) continue;
        if (impl->ref_id[row] != si->id) { /* a refill put another system here */
            impl->ref_id[row] = si->id;
            impl->ref[row] = NAN;
            impl->warned[row] = 0;
        }
        if (isnan(impl->ref[row])) {
            impl->ref[row] = res[s].energy + res[s].kinetic + res[s].extra_energy;
            if (!isnan(impl->ref[row])) continue;
        }
        double d = drift_of(si, &res[s], impl->ref[row]);
        if (d <= impl->threshold) continue;
        if (impl->action == MDF_DRIFT_WARN) {
            if (impl->warned[row]) continue;
            impl->warned[row] = 1;
            fprintf(out,
                    "mdflow: warning: energy drift of system id %lld (batch index %zu) at step %lld: %.3e eV/atom "
                    "exceeds %.3e eV/atom (reference %.10g eV); a smaller time step conserves energy better\n",
                    (long long)si->id, row, (long long)si->step, d, impl->threshold, impl->ref[row]);
            fflush(out);
        } else {
            if (len < sizeof msg)
                len += (size_t)snprintf(msg + len, sizeof msg - len, "%ssystem id %lld (batch index %zu) %.3e eV/atom at step %lld",
                                        bad ? "; " : "", (long long)si->id, row, d, (long long)si->step);
            bad++;
        }
    }
    if (bad)
        mdf_run_fail(impl->ctl, MDF_ERR_PHYSICS,
                     "energy drift beyond %.3e eV/atom in %d system%s: %s (the run stopped; use a smaller time step "
                     "or raise the drift threshold)", impl->threshold, bad, bad > 1 ? "s" : "", msg);
}

static mdf_status drift_begin(mdf_hook *h, const mdf_hook_begin *b, mdf_error *err)
{
    drift_impl *impl = (drift_impl *)h->impl;
    impl->ctl = b->ctl;
    free(impl->ref);
    free(impl->ref_id);
    free(impl->warned);
    impl->nsys = b->b->sys_cap;
    impl->ref = malloc(sizeof *impl->ref * (impl->nsys ? impl->nsys : 1));
    impl->ref_id = malloc(sizeof *impl->ref_id * (impl->nsys ? impl->nsys : 1));
    impl->warned = calloc(impl->nsys ? impl->nsys : 1, 1);
    if (!impl->ref || !impl->ref_id || !impl->warned)
        return mdf_error_set(err, MDF_ERR_NOMEM, "no memory for the drift monitor");
    for (size_t i = 0; i < impl->nsys; i++) {
        impl->ref[i] = NAN;
        impl->ref_id[i] = -1;
    }
    return MDF_OK;
}

static int drift_submit(mdf_hook *h, const mdf_hook_ctx *c)
{
    const mdf_shard *sh = c->sh;
    mdf_host_view_args v = {.work = sh->nsys, .step = c->step, .first_row = c->first_row, .nsys = sh->nsys,
                            .status = c->status, .shard = sh->index, .point = (int32_t)c->point,
                            .fn = drift_view, .user = h->impl};
    return mdf_insert_host_view(sh->sys, sh->res, c->token, &v);
}

static void drift_free(void *p)
{
    drift_impl *impl = (drift_impl *)p;
    if (impl) {
        free(impl->ref);
        free(impl->ref_id);
        free(impl->warned);
    }
    free(impl);
}

static const mdf_hook_ops drift_ops = {
    .kind = "drift_monitor", .begin = drift_begin, .submit = drift_submit, .destroy_impl = drift_free};

mdf_status mdf_hook_create_drift_monitor(double threshold_ev_per_atom, mdf_drift_action action, int64_t every,
                                         FILE *warn_to, mdf_hook **out, mdf_error *err)
{
    *out = NULL;
    if (!(threshold_ev_per_atom >= 0.0) || !isfinite(threshold_ev_per_atom))
        return mdf_error_set(err, MDF_ERR_INVALID, "the drift threshold must be finite and >= 0 eV/atom (got %g)",
                             threshold_ev_per_atom);
    if (action != MDF_DRIFT_WARN && action != MDF_DRIFT_STOP)
        return mdf_error_set(err, MDF_ERR_INVALID,
                             "unknown drift action %d: use MDF_DRIFT_WARN (0) or MDF_DRIFT_STOP (1)", (int)action);
    drift_impl *impl = calloc(1, sizeof *impl);
    if (!impl) return mdf_error_set(err, MDF_ERR_NOMEM, "no memory for the drift monitor");
    impl->threshold = threshold_ev_per_atom;
    impl->action = action;
    impl->warn_to = warn_to;
    return mdf_hook_new(&drift_ops, "drift_monitor", MDF_AFTER_STEP, every, impl, out, err);
}

/* ---- by name ---------------------------------------------------------------------- */

typedef struct drift_params {
    double threshold;
    int32_t every, stop;
} drift_params;

static const mdf_param_def drift_defs[] = {
    MDF_PARAM_DOUBLE(drift_params, threshold, 1e-3, 0.0, INFINITY, MDF_PARAM_MIN_OPEN, "eV/atom",
                     "conserved-energy drift that warns (or stops)"),
    MDF_PARAM_INT(drift_params, every, 10, 1, INT32_MAX, "steps", "check every N steps"),
    MDF_PARAM_BOOL(drift_params, stop, 0, "stop the run instead of warning"),
    MDF_PARAM_END};

static mdf_status drift_create_named(const void *params, mdf_hook **out, mdf_error *err)
{
    const drift_params *p = (const drift_params *)params;
    return mdf_hook_create_drift_monitor(p->threshold, p->stop ? MDF_DRIFT_STOP : MDF_DRIFT_WARN, p->every, NULL, out,
                                         err);
}

const mdf_hook_def mdf_hook_def_drift = {MDFLOW_API_VERSION, "drift_monitor",
                                         "watches each system's conserved energy per atom",
                                         drift_defs, sizeof(drift_params), drift_create_named};
