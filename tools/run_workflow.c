/* mdflow — running a workflow: the stages of its composition fused into one,
 * the model, a sampler over the input, and inflight batching; every system's
 * final frame is collected as it leaves and the file of final structures is
 * written in input order (by system id) at the end. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include "formats.h"
#include "paths.h"
#include "progress.h"
#include "runner.h"
#include "sched.h"
#include "trajectory.h"
#include "workflow.h"

/* Final frames as systems leave the run (mdf_exit_fn). */
typedef struct collector {
    pthread_mutex_t lock;
    mdf_frame *frames;
    int64_t *ids;
    int32_t *status;
    size_t count, cap;
    int32_t exit_status;
    mdf_error err;          /* why a copy failed */
} collector;

static int collect(void *user, const mdf_frame *f, const mdf_system_view *v)
{
    collector *c = user;
    int stop = 0;
    pthread_mutex_lock(&c->lock);
    if (c->count == c->cap) {
        size_t cap = c->cap ? 2 * c->cap : 64;
        mdf_frame *fr = realloc(c->frames, cap * sizeof *fr);
        if (fr) c->frames = fr;
        int64_t *ids = realloc(c->ids, cap * sizeof *ids);
        if (ids) c->ids = ids;
        int32_t *status = realloc(c->status, cap * sizeof *status);
        if (status) c->status = status;
        if (fr && ids && status) c->cap = cap;
    }
    if (c->count == c->cap) {
        mdf_error_set(&c->err, MDF_ERR_NOMEM, "no memory to keep the final frame of system %lld", (long long)v->id);
        stop = 1;
    } else if (mdf_frame_copy(&c->frames[c->count], f, &c->err) != MDF_OK) {
        stop = 1;
    } else {
        c->ids[c->count] = v->id;
        c->status[c->count] = v->status;
        c->count++;
    }
    pthread_mutex_unlock(&c->lock);
    return stop;
}

static void collector_free(collector *c)
{
    for (size_t i = 0; i < c->count; i++) mdf_frame_free(&c->frames[i]);
    free(c->frames);
    free(c->ids);
    free(c->status);
    pthread_mutex_destroy(&c->lock);
}

/* A library message (no line of its own) under the workflow line it comes from. */
static mdf_status at_line(mdf_error *err, const mdf_workflow *wf, int line, const char *context)
{
    char msg[MDF_ERROR_MESSAGE_MAX];
    mdf_status code = err->code;
    snprintf(msg, sizeof msg, "%s", err->message);
    mdf_error_clear(err);
    return mdf_error_set(err, code, "%s:%d: %s: %s", wf->path, line, context, msg);
}

/* ---- the model ------------------------------------------------------------------------ */

/* The input dataset, in the format of its name (tools/formats.h); and
 * whether output.structures can hold that many systems (a LAMMPS data file
 * one, unless its name has {id}), said before the run. */
static mdf_status read_input(const mdf_workflow *wf, mdf_frame_list *frames, mdf_error *err)
{
    fmt_kind k = FMT_XYZ, out = FMT_XYZ;
    mdf_status st = fmt_choose("input", wf->input, NULL, NULL, &k, err);
    if (st == MDF_OK) st = fmt_read("input", wf->input, k, NULL, 0, frames, err);
    if (st == MDF_OK && *wf->structures) st = fmt_choose("output.structures", wf->structures, NULL, NULL, &out, err);
    if (st == MDF_OK && *wf->structures) {
        st = fmt_check_count("output.structures", wf->structures, out, frames->count, err);
        if (st != MDF_OK) st = at_line(err, wf, wf->output_line, "output");
    }
    return st;
}

/* With model.species, every element of the input must be listed. */
static mdf_status check_species(const mdf_workflow *wf, const mdf_frame_list *frames, mdf_error *err)
{
    if (runner_model_count(&wf->model, RUNNER_SPECIES) == 0) return MDF_OK;
    for (size_t i = 0; i < frames->count; i++)
        for (int64_t a = 0; a < frames->frames[i].natoms; a++) {
            int z = frames->frames[i].numbers[a];
            if (runner_model_has_species(&wf->model, z)) continue;
            const char *sym = mdf_element_symbol(z);
            return mdf_error_set(err, MDF_ERR_INVALID,
                                 "%s:%d: model.species has no entry for %s, found in system %zu (atom %lld) of %s: "
                                 "add {element: %s, ...} (mdflow models lists model %s's per-element parameters)",
                                 wf->path, wf->species_line, sym ? sym : "?", i, (long long)a, wf->input,
                                 sym ? sym : "?", wf->model.name);
        }
    return MDF_OK;
}

/* Every element of the input has parameters somebody chose: model.species
 * lists it, or the model's own rule (runner_check_model_elements). */
static mdf_status check_model_elements(const mdf_workflow *wf, const mdf_frame_list *frames, mdf_error *err)
{
    char where[8400];
    snprintf(where, sizeof where, "%s:%d: input %s", wf->path, wf->model_line > 0 ? wf->model_line : 1, wf->input);
    mdf_status st = check_species(wf, frames, err);
    if (st == MDF_OK)
        st = runner_check_model_elements(&wf->model, frames, where,
                                         "model: {type: lj, species: [{element: X, epsilon: E, sigma: S}, ...]} "
                                         "for each element, model: {type: lj, params: {epsilon: E, sigma: S}} for "
                                         "every element, or another model (type: eam, file: FILE; type: kim:NAME)",
                                         err);
    return st;
}

mdf_status wf_check_input(const mdf_workflow *wf, mdf_error *err)
{
    mdf_frame_list frames;
    mdf_frame_list_init(&frames);
    mdf_status st = read_input(wf, &frames, err);
    if (st == MDF_OK) st = check_model_elements(wf, &frames, err);
    mdf_frame_list_free(&frames);
    return st;
}

/* The stage's hooks by registered name, in the order listed. */
static mdf_status add_named_hooks(const mdf_workflow *wf, const wf_stage *ws, mdf_stage *s, mdf_error *err)
{
    for (int k = 0; k < ws->nhooks; k++) {
        mdf_hook *h = NULL;
        mdf_status st = mdf_hook_create_named(ws->hooks[k].type, &ws->hooks[k].params, &h, err);
        if (st == MDF_OK) st = mdf_stage_add_hook(s, h, err);
        if (st != MDF_OK) {
            char context[WF_NAME_MAX + 32];
            snprintf(context, sizeof context, "hook %s", ws->hooks[k].type);
            return at_line(err, wf, ws->hooks[k].line, context);
        }
    }
    return MDF_OK;
}

/* ---- the stages ------------------------------------------------------------------------ */

static mdf_status add_criteria(mdf_stage *s, const wf_stage *ws, mdf_error *err)
{
    mdf_status st = MDF_OK;
    if (ws->fmax >= 0.0) st = mdf_stage_add_criterion(s, MDF_CRITERION_FMAX, ws->fmax, err);
    if (st == MDF_OK && ws->energy_change >= 0.0)
        st = mdf_stage_add_criterion(s, MDF_CRITERION_ENERGY_CHANGE, ws->energy_change, err);
    if (st == MDF_OK && ws->steps > 0) st = mdf_stage_add_criterion(s, MDF_CRITERION_STEPS, (double)ws->steps, err);
    if (st == MDF_OK && ws->smax >= 0.0) st = mdf_stage_add_criterion(s, MDF_CRITERION_SMAX, ws->smax, err);
    return st;
}

/* The HDF5 outputs that hooks write during the run (borrowed by the hooks). */
typedef struct run_sinks {
    mdf_sink *snapshots;   /* every snapshot_every steps, every stage's systems */
    mdf_sink *converged;   /* systems leaving the first stage, each once */
} run_sinks;

/* Snapshots every snapshot_every steps, and on the last composition entry
 * the state each system leaves the run with, at its exit step: the periodic
 * hook selects the entry's systems after the convergence check, so it
 * misses a system that leaves at that very step (step 200 of a 200-step
 * stage), and a system leaving early by convergence leaves between two
 * snapshot steps. The two select disjoint systems (status == the entry's,
 * or just moved to the exit status), so no state is written twice. Entries
 * before the last need no exit hook: the next entry's periodic hook sees a
 * system that moved on. */
static mdf_status add_snapshot_hooks(const mdf_workflow *wf, int k, mdf_sink *sink, mdf_stage *s, mdf_error *err)
{
    return trajectory_add_hooks(s, sink, wf->snapshot_every, k == wf->ncomp - 1, err);
}

static mdf_status add_sink_hooks(const mdf_workflow *wf, int k, const run_sinks *sk, mdf_stage *s, mdf_error *err)
{
    mdf_hook *h = NULL;
    mdf_status st = MDF_OK;
    if (sk->snapshots) st = add_snapshot_hooks(wf, k, sk->snapshots, s, err);
    if (st == MDF_OK && sk->converged && k == 0) {
        st = mdf_hook_create_converged_snapshot(sk->converged, &h, err);
        if (st == MDF_OK) st = mdf_stage_add_hook(s, h, err);
    }
    return st;
}

/* Composition entry k as a plain stage with its criteria and hooks, moving
 * the systems at `status` to status + 1. */
static mdf_status build_part(const mdf_workflow *wf, int k, int32_t status, int freeze, const run_sinks *sk,
                             mdf_stage **out, mdf_error *err)
{
    const wf_stage *ws = &wf->stages[wf->comp[k]];
    mdf_stage_config sc = ws->cfg;
    sc.integrator = ws->method;
    sc.status = status;
    sc.converged_status = status + 1;
    sc.window = wf->window;
    sc.skin = wf->skin;
    sc.chunk_atoms = wf->chunk_atoms;
    char log[WF_PATH_MAX + WF_NAME_MAX + 2];
    wf_log_path(wf, k, log, sizeof log);
    runner_hooks h;
    runner_hooks_init(&h);
    h.freeze = freeze;
    h.max_force = wf->hooks.max_force;
    h.nan_check = wf->hooks.nan_check;
    h.wrap_every = wf->hooks.wrap_every;
    h.drift = wf->hooks.drift_warn;
    h.log_file = *log ? log : NULL;
    h.log_every = wf->log_every;
    mdf_status st = mdf_stage_create(&sc, out, err);
    if (st == MDF_OK) st = add_criteria(*out, ws, err);
    if (st == MDF_OK) st = runner_add_hooks(*out, 0, &h, err);
    if (st == MDF_OK && (st = add_named_hooks(wf, ws, *out, err)) != MDF_OK) {
        mdf_stage_destroy(*out);
        *out = NULL;
        return st; /* at its own line already */
    }
    if (st == MDF_OK) st = add_sink_hooks(wf, k, sk, *out, err);
    if (st != MDF_OK) {
        mdf_stage_destroy(*out);
        *out = NULL;
        char context[96];
        snprintf(context, sizeof context, "stage '%s'", ws->name);
        return at_line(err, wf, ws->line, context);
    }
    return MDF_OK;
}

/* The composition fused in order (mdf_fuse consumes both parts, also on failure). */
static mdf_status build_composition(const mdf_workflow *wf, int freeze, const run_sinks *sk, mdf_stage **out,
                                    mdf_error *err)
{
    mdf_stage *acc = NULL;
    mdf_status st = MDF_OK;
    for (int k = 0; st == MDF_OK && k < wf->ncomp; k++) {
        mdf_stage *part = NULL;
        st = build_part(wf, k, 0, freeze, sk, &part, err); /* mdf_fuse numbers the parts */
        if (st == MDF_OK && !acc) acc = part;
        else if (st == MDF_OK && (st = mdf_fuse(acc, part, &acc, err)) != MDF_OK)
            st = at_line(err, wf, wf->comp_line, "composition");
    }
    if (st == MDF_OK) st = mdf_stage_set_max_steps(acc, wf->max_steps, err);
    if (st != MDF_OK) {
        mdf_stage_destroy(acc);
        acc = NULL;
    }
    *out = acc;
    return st;
}

/* --sequential: each composition entry as a stage of its own. Entry k moves
 * the systems at status k to k + 1, so the entries run one after another on
 * one batch and systems end at the fused composition's exit status. */
static mdf_status build_sequence(const mdf_workflow *wf, int freeze, const run_sinks *sk, mdf_stage **parts,
                                 mdf_error *err)
{
    mdf_status st = MDF_OK;
    for (int k = 0; st == MDF_OK && k < wf->ncomp; k++) {
        st = build_part(wf, k, k, freeze, sk, &parts[k], err);
        if (st == MDF_OK) st = mdf_stage_set_max_steps(parts[k], wf->max_steps, err);
    }
    return st;
}

/* ---- results ---------------------------------------------------------------------------- */

/* The id a system gets: its "mdf_system_id" info key, else its input index. */
static int64_t input_id(const mdf_frame *f, size_t i)
{
    const char *s = mdf_frame_get_info(f, "mdf_system_id");
    char *end = NULL;
    long long v = s ? strtoll(s, &end, 10) : 0;
    return s && end != s && !*end ? (int64_t)v : (int64_t)i;
}

typedef struct out_entry {
    int64_t id;
    const mdf_frame *frame;
    int32_t status;
    int exited;        /* handed over by the run (0: never started) */
} out_entry;

/* Systems the run never started: their input frames, labelled as the run
 * labels final frames (id, status 0, step 0), so the output lists every id. */
typedef struct unstarted {
    mdf_frame *frames;
    size_t count;
} unstarted;

static void unstarted_free(unstarted *u)
{
    for (size_t i = 0; i < u->count; i++) mdf_frame_free(&u->frames[i]);
    free(u->frames);
    u->frames = NULL;
    u->count = 0;
}

static mdf_status label_unstarted(unstarted *u, const mdf_frame *f, int64_t id, mdf_error *err)
{
    mdf_frame *copy = &u->frames[u->count];
    mdf_status st = mdf_frame_copy(copy, f, err);
    if (st != MDF_OK) return st;
    u->count++;
    char text[32];
    snprintf(text, sizeof text, "%lld", (long long)id);
    st = mdf_frame_set_info(copy, "mdf_system_id", text, err);
    if (st == MDF_OK) st = mdf_frame_set_info(copy, "mdf_status", "0", err);
    if (st == MDF_OK) st = mdf_frame_set_info(copy, "mdf_step", "0", err);
    return st;
}

static int by_id(const void *a, const void *b)
{
    int64_t x = ((const out_entry *)a)->id, y = ((const out_entry *)b)->id;
    return (x > y) - (x < y);
}

static int id_cmp(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* Every system once, sorted by id: its final frame, or its input frame when
 * the run ended (max_steps) before it started. */
static out_entry *gather(const collector *c, const mdf_frame_list *input, unstarted *u, size_t *n, mdf_error *err)
{
    out_entry *e = calloc(c->count + input->count + 1, sizeof *e);
    int64_t *seen = malloc((c->count + 1) * sizeof *seen);
    u->frames = calloc(input->count + 1, sizeof *u->frames);
    if (!e || !seen || !u->frames) {
        free(e);
        free(seen);
        unstarted_free(u);
        mdf_error_set(err, MDF_ERR_NOMEM, "no memory to order %zu structures", c->count);
        return NULL;
    }
    size_t m = 0;
    for (size_t i = 0; i < c->count; i++) {
        e[m++] = (out_entry){c->ids[i], &c->frames[i], c->status[i], 1};
        seen[i] = c->ids[i];
    }
    qsort(seen, c->count, sizeof *seen, id_cmp);
    for (size_t i = 0; i < input->count; i++) {
        int64_t id = input_id(&input->frames[i], i);
        if (bsearch(&id, seen, c->count, sizeof *seen, id_cmp)) continue;
        if (label_unstarted(u, &input->frames[i], id, err) != MDF_OK) {
            free(seen);
            free(e);
            return NULL;
        }
        e[m++] = (out_entry){id, &u->frames[u->count - 1], 0, 0};
    }
    free(seen);
    qsort(e, m, sizeof *e, by_id);
    *n = m;
    return e;
}

static mdf_status write_structures(const mdf_workflow *wf, const out_entry *e, size_t n, mdf_error *err)
{
    mdf_frame *frames = malloc((n + 1) * sizeof *frames);
    if (!frames) return mdf_error_set(err, MDF_ERR_NOMEM, "no memory to write %zu structures", n);
    for (size_t i = 0; i < n; i++) frames[i] = *e[i].frame; /* shallow: only read */
    fmt_kind k = FMT_XYZ;
    mdf_status st = fmt_choose("output.structures", wf->structures, NULL, NULL, &k, err);
    if (st == MDF_OK) st = fmt_write(wf->structures, k, frames, n, wf->compression, err);
    free(frames);
    return st;
}

static int64_t total_atoms(const mdf_frame_list *frames)
{
    int64_t n = 0;
    for (size_t i = 0; i < frames->count; i++) n += frames->frames[i].natoms;
    return n;
}

static void print_unfinished(const out_entry *e, size_t n, int32_t exit_status, size_t unfinished)
{
    if (!unfinished) return;
    printf("  unfinished (status below %d in the output; raise max_steps or add a step_budget):", (int)exit_status);
    size_t shown = 0;
    for (size_t i = 0; i < n && shown < 20; i++) {
        if (e[i].exited && e[i].status == exit_status) continue;
        printf(" %lld%s", (long long)e[i].id, e[i].exited ? "" : " (not started)");
        shown++;
    }
    printf("%s\n", unfinished > shown ? " ..." : "");
}

static void print_summary(const mdf_workflow *wf, const mdf_frame_list *input, const mdf_stage_report *r,
                          const out_entry *e, size_t n, int32_t exit_status)
{
    size_t finished = 0;
    for (size_t i = 0; i < n; i++) finished += e[i].exited && e[i].status == exit_status;
    char comp[512];
    wf_composition_text(wf, comp, sizeof comp);
    printf("\nmdflow run summary: %s\n", comp);
    printf("  systems %zu, atoms %lld, shards %d, model chunks %d\n", input->count, (long long)total_atoms(input),
           r->nshards, r->nchunks);
    printf("  finished %zu (status %d), unfinished %zu; left a stage on its step budget: %lld\n", finished,
           (int)exit_status, n - finished, (long long)r->budget_exits);
    print_unfinished(e, n, exit_status, n - finished);
    double sys_rate = r->wall_seconds > 0.0 ? (double)finished / r->wall_seconds : 0.0;
    printf("  %lld steps in %.3f s: %.4g systems/s, %.4g atom-steps/s\n", (long long)r->steps, r->wall_seconds,
           sys_rate, r->atom_steps_per_second);
    printf("  model evaluations %lld, neighbour-list rebuilds %lld (summed over systems), %s %lld\n",
           (long long)r->model_evaluations, (long long)r->list_rebuilds,
           wf->sequential ? "static batches (stages in sequence)" : "refills", (long long)r->refills);
    printf("  largest neighbour count %d of %d slots, atoms beyond the slots %lld\n", r->max_neighbours,
           r->list_slots, (long long)r->overflowed_atoms);
    if (*wf->structures) printf("  final structures (input order): %s\n", wf->structures);
    if (*wf->snapshots) printf("  snapshots every %lld steps: %s\n", (long long)wf->snapshot_every, wf->snapshots);
    if (wf->has_snapshot_sink)
        printf("  snapshots every %lld steps: sink %s\n", (long long)wf->snapshot_every, wf->snapshot_sink.type);
    if (*wf->converged)
        printf("  systems leaving stage %s, each once: %s\n", wf->stages[wf->comp[0]].name, wf->converged);
    if (*wf->checkpoint) {
        if (wf->checkpoint_every > 0)
            printf("  checkpoint%s: %s (every %lld steps at refill points, and at exit)\n",
                   wf->resume ? " (resumed from it)" : "", wf->checkpoint, (long long)wf->checkpoint_every);
        else printf("  checkpoint%s: %s (at exit)\n", wf->resume ? " (resumed from it)" : "", wf->checkpoint);
    }
    for (int k = 0; *wf->log && k < wf->ncomp; k++) {
        char log[WF_PATH_MAX + WF_NAME_MAX + 2];
        wf_log_path(wf, k, log, sizeof log);
        printf("  log of stage %s: %s\n", wf->stages[wf->comp[k]].name, log);
    }
    mdf_runtime_print_worker_stats(stdout);
}

/* ---- the run ------------------------------------------------------------------------------ */

typedef struct run_state {
    mdf_frame_list frames;
    mdf_model *model;
    mdf_sampler *sampler;
    mdf_stage *stage;                  /* the fused composition (inflight) */
    mdf_stage *parts[WF_MAX_STAGES];   /* each entry on its own (--sequential) */
    int started;
    collector col;
    run_sinks sinks;
} run_state;

/* Opens the run's HDF5 outputs (continued, not replaced, on --resume: the
 * checkpoint cuts them back to where it was taken). */
static mdf_status open_sinks(const mdf_workflow *wf, run_sinks *sk, mdf_error *err)
{
    mdf_h5_options o;
    mdf_h5_options_init(&o);
    o.compression = wf->compression;
    o.append = wf->resume;
    mdf_status st = MDF_OK;
    if (wf->has_snapshot_sink) {
        st = mdf_sink_create_named(wf->snapshot_sink.type, &wf->snapshot_sink.params, &sk->snapshots, err);
        if (st != MDF_OK)
            mdf_error_prefix(err, st, "%s:%d: output.snapshot_sink", wf->path, wf->snapshot_sink.line);
    } else if (*wf->snapshots)
        st = wf_hdf5_kind(wf->snapshots) == 2 ? mdf_sink_create_h5md(wf->snapshots, &o, &sk->snapshots, err)
                                              : mdf_sink_create_hdf5(wf->snapshots, &o, &sk->snapshots, err);
    if (st == MDF_OK && *wf->converged) st = mdf_sink_create_hdf5(wf->converged, &o, &sk->converged, err);
    if (st != MDF_OK) st = at_line(err, wf, wf->output_line, "output");
    return st;
}

static mdf_status close_sinks(run_sinks *sk, mdf_status st, mdf_error *err)
{
    mdf_sink *all[2] = {sk->snapshots, sk->converged};
    for (int j = 0; j < 2; j++) {
        if (!all[j]) continue;
        mdf_status cs = mdf_sink_close(all[j], st == MDF_OK ? err : NULL);
        if (st == MDF_OK) st = cs;
        mdf_sink_destroy(all[j]);
    }
    sk->snapshots = sk->converged = NULL;
    return st;
}

static mdf_status prepare(const mdf_workflow *wf, run_state *rs, mdf_error *err)
{
    mdf_status st = read_input(wf, &rs->frames, err);
    if (st == MDF_OK && rs->frames.count == 0)
        st = mdf_error_set(err, MDF_ERR_INVALID, "%s:%d: input %s holds no structure: give an extended XYZ file "
                           "with at least one frame", wf->path, wf->input_line, wf->input);
    if (st == MDF_OK) st = check_model_elements(wf, &rs->frames, err);
    /* Every system goes through every stage: a variable-cell relaxation needs
     * them all periodic (found here, before inflight batching brings them in). */
    for (int k = 0; st == MDF_OK && k < wf->ncomp; k++) {
        const wf_stage *ws = &wf->stages[wf->comp[k]];
        const mdf_method *m = mdf_method_find(ws->method);
        if (!m || !(m->flags & MDF_METHOD_CELL) || !(m->flags & MDF_METHOD_OPTIMISER)) continue;
        for (size_t i = 0; st == MDF_OK && i < rs->frames.count; i++) {
            const mdf_frame *f = &rs->frames.frames[i];
            if (f->pbc[0] && f->pbc[1] && f->pbc[2]) continue;
            st = mdf_error_set(err, MDF_ERR_INVALID,
                               "%s:%d: stage '%s' (%s) relaxes the cell, but system %zu of %s is not periodic in "
                               "x, y and z (pbc %d %d %d): give every system a periodic cell, or relax with a "
                               "fixed-cell optimiser (fire, lbfgs)",
                               wf->path, ws->line, ws->name, ws->method, i, wf->input, f->pbc[0], f->pbc[1],
                               f->pbc[2]);
        }
    }
    if (st == MDF_OK) runner_warn_mixed_cutoffs(&wf->model, "model.pairs");
    /* Every system goes through every stage: one warning for the first npt stage. */
    for (int k = 0; st == MDF_OK && k < wf->ncomp; k++) {
        const wf_stage *ws = &wf->stages[wf->comp[k]];
        const mdf_method *m = mdf_method_find(ws->method);
        if (!m || !(m->flags & MDF_METHOD_CELL)) continue;
        char where[4608];
        snprintf(where, sizeof where, "%s:%d: stage '%s' (method %s)", wf->path, ws->line, ws->name, ws->method);
        runner_warn_npt_open(ws->method, where, &rs->frames);
        break;
    }
    mdf_runtime_config rc;
    mdf_runtime_config_init(&rc);
    rc.sched = *wf->sched ? wf->sched : NULL;
    rc.ncpus = wf->ncpus;
    rc.ncuda = wf->ncuda;
    if (st == MDF_OK) st = mdf_runtime_start(&rc, err);
    rs->started = st == MDF_OK;
    if (st == MDF_OK && runner_model_create(&wf->model, &rs->model, err) != MDF_OK)
        st = at_line(err, wf, wf->model_line ? wf->model_line : 1, "model");
    /* Pairs are counted (O(N²) per system) only when a pair budget asks, within the model's cutoff. */
    mdf_sampler_config sampler = wf->sampler;
    sampler.pair_cutoff = st == MDF_OK && sampler.max_pairs > 0 ? mdf_model_cutoff(rs->model) : 0.0;
    if (st == MDF_OK && mdf_sampler_create(rs->frames.frames, rs->frames.count, &sampler, &rs->sampler, err) != MDF_OK)
        st = at_line(err, wf, wf->sampler_line, "sampler");
    int freeze = wf->hooks.freeze < 0 ? runner_frames_have_frozen(&rs->frames) : wf->hooks.freeze;
    if (st == MDF_OK) st = open_sinks(wf, &rs->sinks, err);
    if (st == MDF_OK)
        st = wf->sequential ? build_sequence(wf, freeze, &rs->sinks, rs->parts, err)
                            : build_composition(wf, freeze, &rs->sinks, &rs->stage, err);
    return st;
}

/* After the run: systems that left it with NaN/Inf (no NaN check stopped
 * them) make it fail, naming them, instead of exiting 0 with NaN written. */
static mdf_status check_finite(const mdf_workflow *wf, const collector *c, mdf_error *err)
{
    runner_nonfinite n;
    memset(&n, 0, sizeof n);
    for (size_t i = 0; i < c->count; i++) runner_nonfinite_check(&n, &c->frames[i], c->ids[i], c->status[i]);
    char hint[512];
    snprintf(hint, sizeof hint, "try a smaller dt or a force clamp (hooks: max_force), or add hooks: nan_check: "
             "true to stop at the first NaN, naming the step (%.300s)", wf->path);
    return runner_nonfinite_error(&n, hint, err);
}

/* Writes what was collected (also after a run stopped by a hook: it shows where). */
static mdf_status finish(const mdf_workflow *wf, run_state *rs, const mdf_stage_report *report, mdf_status st,
                         mdf_error *err)
{
    size_t n = 0;
    mdf_error werr;
    mdf_error_clear(&werr);
    unstarted u = {0};
    out_entry *e = gather(&rs->col, &rs->frames, &u, &n, &werr);
    if (e && *wf->structures && (st == MDF_OK || err->code == MDF_ERR_PHYSICS)) {
        /* Host work only (every task has finished): the workers sleep meanwhile. */
        mdf_runtime_pause();
        write_structures(wf, e, n, &werr);
        mdf_runtime_resume();
    }
    if (st == MDF_OK && werr.code != MDF_OK) {
        *err = werr;
        st = werr.code;
    }
    if (st == MDF_OK) st = check_finite(wf, &rs->col, err);
    if (st == MDF_OK) print_summary(wf, &rs->frames, report, e, n, rs->col.exit_status);
    free(e);
    unstarted_free(&u);
    return st;
}

static mdf_status run_inflight(const mdf_workflow *wf, run_state *rs, mdf_stage_report *report, mdf_error *err)
{
    mdf_inflight_config ic;
    mdf_inflight_config_init(&ic);
    ic.sampler = rs->sampler;
    ic.refill_interval = wf->refill_interval;
    ic.refill_fraction = wf->refill_fraction;
    ic.nshards = wf->shards;
    ic.on_exit = collect;
    ic.user = &rs->col;
    ic.checkpoint_path = *wf->checkpoint ? wf->checkpoint : NULL;
    ic.checkpoint_every = wf->checkpoint_every;
    ic.resume = wf->resume;
    progress_line progress; /* the stage's sub-stages: systems leave as they finish the composition */
    progress_attach(&progress, rs->stage, wf->quiet, wf->progress_every, 1);
    mdf_status st = mdf_stage_run_inflight(rs->stage, rs->model, &ic, report, err);
    mdf_stage_set_progress(rs->stage, NULL, NULL, 0.0);
    if (st != MDF_OK && wf->resume && rs->col.err.code == MDF_OK && report->steps == 0 &&
        (err->code == MDF_ERR_INVALID || err->code == MDF_ERR_PARSE) && strstr(err->message, "checkpoint"))
        st = at_line(err, wf, wf->checkpoint_line, "--resume");
    return st;
}

/* ---- --sequential: the baseline without fusion or inflight batching ------------------------ */

/* The next static batch: the waiting systems the sampler packs within its
 * budgets, as for inflight batching; *out stays NULL when none is left. */
static mdf_status next_static_batch(const mdf_workflow *wf, mdf_sampler *s, size_t *idx, mdf_frame *frames,
                                    mdf_batch **out, mdf_error *err)
{
    const mdf_sampler_config *c = &wf->sampler;
    *out = NULL;
    if (mdf_sampler_remaining(s) == 0) return MDF_OK;
    /* "free" room is exclusive: the systems in flight stay below each budget */
    size_t n = mdf_sampler_take(s, c->max_atoms, c->max_pairs > 0 ? c->max_pairs : -1,
                                c->max_systems > 0 ? c->max_systems : -1, idx, mdf_sampler_size(s));
    if (n == 0) /* the sampler refuses systems larger than a budget when it is created */
        return mdf_error_set(err, MDF_ERR_INVALID, "%s:%d: the sampler's budgets hold none of the %zu waiting "
                             "systems: raise max_atoms or max_pairs", wf->path, wf->sampler_line,
                             mdf_sampler_remaining(s));
    for (size_t j = 0; j < n; j++) frames[j] = *mdf_sampler_frame(s, idx[j]); /* shallow: the batch only reads */
    mdf_batch_config bc;
    mdf_batch_config_init(&bc);
    bc.nshards = wf->shards;
    bc.sources = idx; /* ids, and with them the random streams, are the dataset indices */
    return mdf_batch_create(frames, n, &bc, out, err);
}

/* Folds one stage run into the whole run's figures: steps add up, the last
 * stage's exits are the systems that finished. Budget exits and atom-steps
 * are counted at the hand-out (a stage's budget count includes the systems
 * flagged by the stages before it). */
static void add_report(mdf_stage_report *sum, const mdf_stage_report *r, int last)
{
    sum->steps += r->steps;
    sum->model_evaluations += r->model_evaluations;
    sum->list_rebuilds += r->list_rebuilds;
    if (last) sum->converged += r->converged;
    if (r->overflowed_atoms > sum->overflowed_atoms) sum->overflowed_atoms = r->overflowed_atoms;
    if (r->max_neighbours > sum->max_neighbours) sum->max_neighbours = r->max_neighbours;
    if (r->list_slots > sum->list_slots) sum->list_slots = r->list_slots;
    if (r->nchunks > sum->nchunks) sum->nchunks = r->nchunks;
    if (r->nshards > sum->nshards) sum->nshards = r->nshards;
}

typedef struct handed_out {
    int64_t budget_exits;   /* finished after leaving some stage on its step budget */
    double atom_steps;      /* atoms x steps each system took */
} handed_out;

/* Every system of the batch, finished or not, to the collector. */
static mdf_status hand_out(mdf_batch *b, collector *c, handed_out *h, mdf_error *err)
{
    mdf_status st = mdf_batch_sync(b, err);
    for (size_t i = 0; st == MDF_OK && i < mdf_batch_nsystems(b); i++) {
        mdf_system_view v;
        mdf_frame f;
        st = mdf_batch_get_system(b, i, &v, err);
        if (st == MDF_OK) st = mdf_batch_get_frame(b, i, &f, err);
        if (st != MDF_OK) break;
        h->budget_exits += v.status == c->exit_status && (v.flags & MDF_SYSTEM_BUDGET_EXIT);
        h->atom_steps += (double)v.natoms * (double)v.step;
        if (collect(c, &f, &v)) st = mdf_error_set(err, c->err.code, "%s", c->err.message);
        mdf_frame_free(&f);
    }
    return st;
}

/* One static batch through every stage in turn. */
static mdf_status run_static_batch(const mdf_workflow *wf, run_state *rs, mdf_batch *b, mdf_stage_report *sum,
                                   handed_out *h, mdf_error *err)
{
    const wf_stage *first = &wf->stages[wf->comp[0]];
    mdf_status st = MDF_OK;
    /* Fresh systems get the first stage's entry velocities, as a refill gives them. */
    if (first->cfg.entry_temperature_K >= 0.0)
        st = mdf_batch_thermalize(b, first->cfg.entry_temperature_K, first->cfg.params.seed, 0, err);
    for (int k = 0; st == MDF_OK && k < wf->ncomp; k++) {
        mdf_stage_report r;
        memset(&r, 0, sizeof r);
        progress_line progress; /* this stage on this batch */
        progress_attach(&progress, rs->parts[k], wf->quiet, wf->progress_every, 1);
        st = mdf_stage_run(rs->parts[k], b, rs->model, &r, err);
        mdf_stage_set_progress(rs->parts[k], NULL, NULL, 0.0);
        add_report(sum, &r, k == wf->ncomp - 1);
    }
    mdf_error later; /* a failed hand-out after a failed stage: the stage's error is the one to report */
    mdf_error_clear(&later);
    mdf_status hs = hand_out(b, &rs->col, h, st == MDF_OK ? err : &later);
    return st == MDF_OK ? hs : st;
}

static double seconds_now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* The sampler's systems in static batches, one after another: a batch is
 * built, runs each stage until all its systems have left it, hands every
 * system to the collector and is destroyed before the next is built. */
static mdf_status run_sequential(const mdf_workflow *wf, run_state *rs, mdf_stage_report *report, mdf_error *err)
{
    size_t n = mdf_sampler_size(rs->sampler);
    size_t *idx = malloc((n + 1) * sizeof *idx);
    mdf_frame *frames = malloc((n + 1) * sizeof *frames);
    mdf_status st = idx && frames ? MDF_OK
                                  : mdf_error_set(err, MDF_ERR_NOMEM, "no memory to pack %zu systems in batches", n);
    /* Every system is checked before the first batch runs: a bad one found
     * later would cost the batches before it (they are written only on success). */
    if (st == MDF_OK) st = mdf_sampler_check_dataset(rs->sampler, rs->model, wf->skin, err);
    handed_out h = {0, 0.0};
    double t0 = seconds_now();
    while (st == MDF_OK) {
        mdf_batch *b = NULL;
        st = next_static_batch(wf, rs->sampler, idx, frames, &b, err);
        if (st != MDF_OK || !b) break;
        report->refills++; /* counts the batches */
        st = run_static_batch(wf, rs, b, report, &h, err);
        mdf_batch_destroy(b);
    }
    report->wall_seconds = seconds_now() - t0;
    report->budget_exits = h.budget_exits;
    report->atom_steps_per_second = report->wall_seconds > 0.0 ? h.atom_steps / report->wall_seconds : 0.0;
    free(idx);
    free(frames);
    return st;
}

/* The workflow's files, before anything runs: outputs distinct from the
 * input, the workflow file and each other, and writable. */
static mdf_status check_files(const mdf_workflow *wf, mdf_error *err)
{
    static char logs[WF_MAX_STAGES][WF_PATH_MAX + WF_NAME_MAX + 2];
    static char what[WF_MAX_STAGES][WF_NAME_MAX + 32];
    path_role roles[6 + WF_MAX_STAGES] = {{"the workflow file", wf->path, 0, 0},
                                          {"input", wf->input, 0, wf->input_line},
                                          {"output.structures", wf->structures, 1, wf->output_line},
                                          {"output.snapshots", wf->snapshots, 1, wf->output_line},
                                          {"output.converged", wf->converged, 1, wf->output_line},
                                          {"checkpoint.path", wf->checkpoint, 1, wf->checkpoint_line}};
    size_t n = 6;
    for (int k = 0; *wf->log && k < wf->ncomp; k++) {
        wf_log_path(wf, k, logs[k], sizeof logs[k]);
        if (wf->ncomp > 1) snprintf(what[k], sizeof what[k], "output.log (stage %s)", wf->stages[wf->comp[k]].name);
        else snprintf(what[k], sizeof what[k], "output.log");
        roles[n++] = (path_role){what[k], logs[k], 1, wf->output_line};
    }
    mdf_status st = paths_check_distinct(wf->path, roles, n, err);
    if (st == MDF_OK) st = paths_check_writable(wf->path, roles, n, err);
    return st;
}

/* --resume needs the checkpoint itself: said before the outputs are opened
 * to be continued, or a run killed before its first checkpoint (which can
 * leave a snapshot file cut short at creation) got an error blaming that
 * file instead of "there is no checkpoint". Checkpoints are renamed into
 * place only when complete, so one that exists is whole. */
static mdf_status check_resumable(const mdf_workflow *wf, mdf_error *err)
{
    struct stat sb;
    if (stat(wf->checkpoint, &sb) == 0) return MDF_OK;
    int e = errno;
    char tmp[WF_PATH_MAX + 8];
    snprintf(tmp, sizeof tmp, "%s.tmp", wf->checkpoint);
    int partial = stat(tmp, &sb) == 0;
    return mdf_error_set(err, MDF_ERR_INVALID, "%s:%d: --resume: there is no checkpoint '%s' to resume from (%s): "
                         "the run stopped before its first checkpoint%s; run without --resume to start afresh",
                         wf->path, wf->checkpoint_line, wf->checkpoint, strerror(e),
                         partial ? " (its unfinished write, '.tmp', is not used)" : "");
}

mdf_status wf_run(const mdf_workflow *wf, mdf_error *err)
{
    run_state rs;
    memset(&rs, 0, sizeof rs);
    mdf_frame_list_init(&rs.frames);
    pthread_mutex_init(&rs.col.lock, NULL);
    mdf_error_clear(&rs.col.err);
    mdf_stage_report report;
    memset(&report, 0, sizeof report);
    mdf_status st = MDF_OK;
    if (wf->resume && !*wf->checkpoint)
        st = mdf_error_set(err, MDF_ERR_INVALID, "%s:1: --resume needs the workflow's checkpoint: add e.g. "
                           "checkpoint: {path: run.ckpt.h5, every: 100} and run without --resume first", wf->path);
    if (st == MDF_OK && wf->sequential && *wf->checkpoint)
        st = mdf_error_set(err, MDF_ERR_INVALID, "%s:%d: --sequential takes no checkpoints (they belong to inflight "
                           "runs): remove the checkpoint key or run without --sequential", wf->path,
                           wf->checkpoint_line);
    if (st == MDF_OK) st = check_files(wf, err);
    if (st == MDF_OK && wf->resume) st = check_resumable(wf, err);
    if (st == MDF_OK) st = prepare(wf, &rs, err);
    if (st == MDF_OK) {
        rs.col.exit_status = wf->sequential ? wf->ncomp : mdf_stage_exit_status(rs.stage);
        if (wf->sched_report) st = mdf_runtime_trace_start(err);
        if (st == MDF_OK)
            st = wf->sequential ? run_sequential(wf, &rs, &report, err) : run_inflight(wf, &rs, &report, err);
        if (st != MDF_OK && rs.col.err.code != MDF_OK) *err = rs.col.err; /* our callback stopped it */
        if (st == MDF_OK && wf->sched_report) st = sched_report_write(wf->sched_report, &report, err);
        st = finish(wf, &rs, &report, st, err);
    }
    mdf_stage_destroy(rs.stage); /* before the sinks its hooks borrow */
    for (int k = 0; k < WF_MAX_STAGES; k++) mdf_stage_destroy(rs.parts[k]);
    st = close_sinks(&rs.sinks, st, err);
    mdf_sampler_destroy(rs.sampler);
    mdf_model_destroy(rs.model);
    if (rs.started) mdf_runtime_stop();
    collector_free(&rs.col);
    mdf_frame_list_free(&rs.frames);
    return st;
}
