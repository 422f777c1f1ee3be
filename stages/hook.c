/* mdflow — hooks: the generic part (names, schedules, the run's control
 * block, host rows) and the two user-extensible kinds, host callbacks and
 * codelets. Built-in hooks live in stages/hooks/, one file each. */
#define _POSIX_C_SOURCE 200809L
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include "hook_internal.h"
#include "../codelets/common/mdf_codelet.h"
#include "../codelets/host/host_view_codelet.h"
#include "../codelets/nlist/nlist_kernel.h"
#include "mdflow/units.h"

static const char *const point_names[MDF_HOOK_POINTS] = {
    "BEFORE_STEP",        "BEFORE_PRE_UPDATE",  "AFTER_PRE_UPDATE", "BEFORE_COMPUTE", "AFTER_COMPUTE",
    "BEFORE_POST_UPDATE", "AFTER_POST_UPDATE", "AFTER_STEP",       "ON_CONVERGE"};

const char *mdf_hook_point_name(mdf_hook_point p)
{
    return (int)p >= 0 && p < MDF_HOOK_POINTS ? point_names[p] : NULL;
}

int mdf_hook_point_from_name(const char *name)
{
    for (int k = 0; name && k < MDF_HOOK_POINTS; k++)
        if (strcasecmp(name, point_names[k]) == 0) return k;
    return -1;
}

/* ---- run control ------------------------------------------------------------ */

void mdf_run_control_init(mdf_run_control *c)
{
    memset(c, 0, sizeof *c);
    pthread_mutex_init(&c->lock, NULL);
}

void mdf_run_control_destroy(mdf_run_control *c) { pthread_mutex_destroy(&c->lock); }

void mdf_run_fail(mdf_run_control *c, mdf_status code, const char *fmt, ...)
{
    pthread_mutex_lock(&c->lock);
    if (!c->stop) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(c->err.message, sizeof c->err.message, fmt, ap);
        va_end(ap);
        c->err.code = code;
        c->stop = 1;
    }
    pthread_mutex_unlock(&c->lock);
}

/* ---- hooks ------------------------------------------------------------------- */

static mdf_status check_schedule(mdf_hook_point point, int64_t every, mdf_error *err)
{
    if ((int)point < 0 || point >= MDF_HOOK_POINTS)
        return mdf_error_set(err, MDF_ERR_INVALID, "hook point %d is not one of the %d points (0..%d)", (int)point,
                             MDF_HOOK_POINTS, MDF_HOOK_POINTS - 1);
    if (every < 1)
        return mdf_error_set(err, MDF_ERR_INVALID, "a hook's frequency must be >= 1 step (got %lld)",
                             (long long)every);
    return MDF_OK;
}

mdf_status mdf_hook_new(const mdf_hook_ops *ops, const char *name, mdf_hook_point point, int64_t every,
                        void *impl, mdf_hook **out, mdf_error *err)
{
    *out = NULL;
    mdf_status st = check_schedule(point, every, err);
    mdf_hook *h = st == MDF_OK ? calloc(1, sizeof *h) : NULL;
    if (st == MDF_OK && !h) st = mdf_error_set(err, MDF_ERR_NOMEM, "no memory for hook '%s'", name);
    if (st != MDF_OK) {
        if (ops->destroy_impl) ops->destroy_impl(impl);
        return st;
    }
    h->ops = ops;
    h->point = point;
    h->every = every;
    h->impl = impl;
    snprintf(h->name, sizeof h->name, "%s", name && *name ? name : ops->kind);
    *out = h;
    return MDF_OK;
}

void mdf_hook_destroy(mdf_hook *h)
{
    if (!h) return;
    if (h->ops->destroy_impl) h->ops->destroy_impl(h->impl);
    free(h);
}

const char *mdf_hook_name(const mdf_hook *h) { return h->name; }
mdf_hook_point mdf_hook_get_point(const mdf_hook *h) { return h->point; }
int64_t mdf_hook_get_every(const mdf_hook *h) { return h->every; }

mdf_status mdf_hook_set_schedule(mdf_hook *h, mdf_hook_point point, int64_t every, mdf_error *err)
{
    mdf_status st = check_schedule(point, every, err);
    if (st != MDF_OK) return st;
    h->point = point;
    h->every = every;
    return MDF_OK;
}

/* ---- rows ---------------------------------------------------------------------- */

size_t mdf_hook_rows(const mdf_sys_info *sys, const mdf_sys_result *res, int32_t nsys, int32_t status,
                     int32_t target, int keep, const mdf_dof_rule *dof, mdf_hook_row *rows)
{
    size_t n = 0;
    for (int32_t s = 0; s < nsys; s++) {
        const mdf_sys_info *si = &sys[s];
        int just = (si->flags & MDF_SYS_CONVERGED_NOW) != 0 && si->status == target;
        if (keep == 1 && si->status != status && !just) continue;
        if (keep == 2 && !just) continue;
        const mdf_sys_result *r = &res[s];
        double nf = mdf_sys_dof(si, mdf_dof_rule_momentum(dof, si));
        rows[n++] = (mdf_hook_row){
            .id = si->id, .step = si->step, .stage_step = si->stage_step, .status = si->status,
            .natoms = si->natoms, .flags = si->flags, .energy = r->energy, .kinetic = r->kinetic,
            .extra_energy = r->extra_energy, .fmax = r->fmax,
            .temperature = nf > 0.0 ? 2.0 * r->kinetic / (nf * MDF_KB) : 0.0,
            .virial_trace = r->virial[0] + r->virial[4] + r->virial[8],
            .volume = si->pbc[0] && si->pbc[1] && si->pbc[2] ? fabs(mdf_det3(si->cell)) : 0.0, .dof = nf};
    }
    return n;
}

double mdf_hook_row_pressure_bar(const mdf_hook_row *r)
{
    if (!(r->volume > 0.0)) return NAN;
    /* eV/Å³ -> bar: 1 GPa is 1e4 bar */
    return (2.0 * r->kinetic + r->virial_trace) / (3.0 * r->volume) * MDF_EV_PER_A3_IN_GPA * 1e4;
}

/* ---- host callbacks ------------------------------------------------------------ */

typedef struct callback_impl {
    mdf_hook_fn fn;
    void *user;
    mdf_hook_point point;
} callback_impl;

static void callback_view(void *user, const mdf_host_view_args *a, const mdf_sys_info *sys,
                          const mdf_sys_result *res)
{
    const callback_impl *c = (const callback_impl *)user;
    mdf_hook_row stack_rows[64];
    mdf_hook_row *rows = a->nsys <= 64 ? stack_rows : malloc(sizeof *rows * (size_t)a->nsys);
    if (!rows) return;
    int keep = a->point == MDF_ON_CONVERGE ? 2 : 1;
    mdf_hook_event ev = {.point = (mdf_hook_point)a->point, .step = a->step, .shard = a->shard,
                         .stage_status = a->status};
    ev.nrows = mdf_hook_rows(sys, res, a->nsys, a->status, a->target, keep, &a->dof, rows);
    ev.rows = rows;
    if (a->point != MDF_ON_CONVERGE || ev.nrows > 0) c->fn(c->user, &ev);
    if (rows != stack_rows) free(rows);
}

static int callback_submit(mdf_hook *h, const mdf_hook_ctx *c)
{
    callback_impl *impl = (callback_impl *)h->impl;
    mdf_host_view_args a = {.work = c->sh->nsys, .step = c->step, .first_row = c->first_row, .nsys = c->sh->nsys,
                            .status = c->status, .target = c->target, .shard = c->sh->index,
                            .point = (int32_t)c->point, .dof = c->dof, .fn = callback_view, .user = impl};
    return mdf_insert_host_view(c->sh->sys, c->sh->res, c->token, &a);
}

static const mdf_hook_ops callback_ops = {
    .kind = "callback", .needs = 0, .submit = callback_submit, .destroy_impl = free};

mdf_status mdf_hook_create_callback(const char *name, mdf_hook_point point, int64_t every, mdf_hook_fn fn,
                                    void *user, mdf_hook **out, mdf_error *err)
{
    *out = NULL;
    if (!fn) return mdf_error_set(err, MDF_ERR_INVALID, "hook '%s' needs a callback function", name ? name : "");
    callback_impl *impl = calloc(1, sizeof *impl);
    if (!impl) return mdf_error_set(err, MDF_ERR_NOMEM, "no memory for hook '%s'", name ? name : "");
    impl->fn = fn;
    impl->user = user;
    impl->point = point;
    return mdf_hook_new(&callback_ops, name ? name : "callback", point, every, impl, out, err);
}

/* ---- codelet hooks ----------------------------------------------------------- */

typedef struct codelet_impl {
    struct starpu_codelet *cl;
    size_t arg_size;
    unsigned char arg[]; /* the user's bytes, after an mdf_hook_task_args at submit */
} codelet_impl;

static int codelet_submit(mdf_hook *h, const mdf_hook_ctx *c)
{
    codelet_impl *impl = (codelet_impl *)h->impl;
    size_t total = sizeof(mdf_hook_task_args) + impl->arg_size;
    unsigned char *buf = malloc(total);
    if (!buf) return -ENOMEM;
    mdf_hook_task_args head = {.work = c->work, .step = c->step, .status = c->status,
                               .nsys = c->sh->nsys, .natoms = c->sh->natoms, .point = (int32_t)c->point};
    memcpy(buf, &head, sizeof head);
    if (impl->arg_size) memcpy(buf + sizeof head, impl->arg, impl->arg_size);
    const mdf_shard *sh = c->sh;
    starpu_data_handle_t hs[] = {sh->pos, sh->vel, sh->force, sh->atoms, sh->sys, sh->res, sh->state};
    int ret = mdf_submit(impl->cl, buf, total, 7, hs, NULL, h->name);
    free(buf);
    return ret;
}

static const mdf_hook_ops codelet_ops = {.kind = "codelet", .needs = 0, .submit = codelet_submit, .destroy_impl = free};

mdf_status mdf_hook_create_codelet(const char *name, mdf_hook_point point, int64_t every,
                                   struct starpu_codelet *cl, const void *arg, size_t arg_size, mdf_hook **out,
                                   mdf_error *err)
{
    *out = NULL;
    if (!cl || cl->nbuffers != 7)
        return mdf_error_set(err, MDF_ERR_INVALID,
                             "hook '%s': the codelet must declare nbuffers = 7 (positions, velocities, forces, "
                             "atoms, systems, results, state)", name ? name : "");
    codelet_impl *impl = calloc(1, sizeof *impl + arg_size);
    if (!impl) return mdf_error_set(err, MDF_ERR_NOMEM, "no memory for hook '%s'", name ? name : "");
    impl->cl = cl;
    impl->arg_size = arg_size;
    if (arg_size) memcpy(impl->arg, arg, arg_size);
    return mdf_hook_new(&codelet_ops, name ? name : (cl->name ? cl->name : "codelet"), point, every, impl, out, err);
}
