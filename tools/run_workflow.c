/* mdflow — running a workflow: the stages of its composition fused into one,
 * the model, a sampler over the input, and inflight batching; every system's
 * final frame is collected as it leaves and the file of final structures is
 * written in input order (by system id) at the end.
 *
 * A composition with '|' runs as a pipeline (mdflow/pipe.h): each term fused
 * as above, one pipeline stage each, on scheduling contexts of this process
 * or, under mpirun, on MPI ranks. Every rank reads the input and builds the
 * whole pipeline (the library runs each stage where it is placed); rank 0
 * receives every finished system and alone writes the final structures and
 * the summary. Files written during the run by a stage instance (logs, HDF5
 * snapshots) get ".rN" before their extension where ranks would share them. */
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
                             int log_rank, mdf_stage **out, mdf_error *err)
{
    const wf_stage *ws = &wf->stages[wf->comp[k]];
    mdf_stage_config sc = ws->cfg;
    sc.integrator = ws->method;
    sc.status = status;
    sc.converged_status = status + 1;
    sc.window = wf->window;
    sc.skin = wf->skin;
    sc.rebuild_every = wf->rebuild_every;
    sc.rebuild_nocheck = wf->rebuild_nocheck;
    sc.chunk_atoms = wf->chunk_atoms;
    char log[WF_PATH_MAX + WF_NAME_MAX + 16];
    wf_log_path(wf, k, log, sizeof log);
    if (*log && log_rank >= 0) { /* a pipeline stage on several ranks: a file each */
        char named[sizeof log];
        snprintf(named, sizeof named, "%s", log);
        wf_rank_path(named, log_rank, log, sizeof log);
    }
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

/* Composition entries [first, end) fused in order (mdf_fuse consumes both
 * parts, also on failure); log_rank as build_part's. */
static mdf_status build_fused(const mdf_workflow *wf, int first, int end, int freeze, const run_sinks *sk, int log_rank,
                              mdf_stage **out, mdf_error *err)
{
    mdf_stage *acc = NULL;
    mdf_status st = MDF_OK;
    for (int k = first; st == MDF_OK && k < end; k++) {
        mdf_stage *part = NULL;
        st = build_part(wf, k, 0, freeze, sk, log_rank, &part, err); /* mdf_fuse numbers the parts */
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

/* The composition fused in order. */
static mdf_status build_composition(const mdf_workflow *wf, int freeze, const run_sinks *sk, mdf_stage **out,
                                    mdf_error *err)
{
    return build_fused(wf, 0, wf->ncomp, freeze, sk, -1, out, err);
}

/* --sequential: each composition entry as a stage of its own. Entry k moves
 * the systems at status k to k + 1, so the entries run one after another on
 * one batch and systems end at the fused composition's exit status. */
static mdf_status build_sequence(const mdf_workflow *wf, int freeze, const run_sinks *sk, mdf_stage **parts,
                                 mdf_error *err)
{
    mdf_status st = MDF_OK;
    for (int k = 0; st == MDF_OK && k < wf->ncomp; k++) {
        st = build_part(wf, k, k, freeze, sk, -1, &parts[k], err);
        if (st == MDF_OK) st = mdf_stage_set_max_steps(parts[k], wf->max_steps, err);
    }
    return st;
}

/* ---- pipelines (a composition with '|') -------------------------------------------------- */

/* 1: the composition runs as a pipeline (--sequential runs its entries in
 * turn, '|' as '+'). */
static int is_pipeline(const mdf_workflow *wf) { return wf->npipe > 1 && !wf->sequential; }

/* The ranks of pipeline stage g among nranks: its placement's, else the
 * library's default (mdf_pipe_default_ranks), which the program needs to
 * name each rank's files before the run. */
static int group_ranks(const mdf_workflow *wf, int g, int nranks, int *out)
{
    const wf_pipe_stage *p = &wf->pipe[g];
    if (p->nranks > 0) {
        memcpy(out, p->ranks, sizeof(int) * (size_t)p->nranks);
        return p->nranks;
    }
    return mdf_pipe_default_ranks(g, wf->npipe, nranks, out);
}

/* 1 when pipeline stage g runs on `rank`. */
static int group_on(const mdf_workflow *wf, int g, int rank, int nranks)
{
    int r[MDF_PIPE_MAX_RANKS];
    int n = group_ranks(wf, g, nranks, r);
    for (int i = 0; i < n; i++)
        if (r[i] == rank) return 1;
    return 0;
}

/* The rank whose name composition entry k's log gets on `rank` (-1: the
 * plain name): a pipeline stage on several ranks writes a log per rank. */
static int log_rank_of(const mdf_workflow *wf, int k, int rank, int nranks)
{
    int r[MDF_PIPE_MAX_RANKS];
    if (!is_pipeline(wf)) return -1;
    return group_ranks(wf, wf_pipe_of(wf, k), nranks, r) > 1 ? rank : -1;
}

/* The file an HDF5 output named `path` is on `rank`: its own name on rank 0
 * and in one process, ".rN" before the extension on rank N > 0. */
static void rank_output(const char *path, int rank, char *out, size_t size)
{
    if (rank > 0) wf_rank_path(path, rank, out, size);
    else snprintf(out, size, "%s", path);
}

/* Pipeline stage g's configuration from the workflow. */
static void pipe_stage_config(const mdf_workflow *wf, int g, mdf_pipe_stage_config *c)
{
    const wf_pipe_stage *p = &wf->pipe[g];
    mdf_pipe_stage_config_init(c);
    wf_pipe_name(wf, g, c->name, sizeof c->name);
    c->budget = p->budget; /* pair_cutoff 0: the library takes the model's with max_pairs */
    c->refill_interval = p->refill_interval;
    c->refill_fraction = p->refill_fraction;
    c->nshards = wf->shards;
    c->inbox_systems = p->inbox_systems;
    c->inbox_atoms = p->inbox_atoms;
    c->ncpus = p->ncpus;
    c->ncuda = p->ncuda;
    snprintf(c->sched, sizeof c->sched, "%s", p->sched);
    c->nranks = p->nranks;
    memcpy(c->ranks, p->ranks, sizeof c->ranks);
}

/* The pipeline: each term of the composition fused as a fused run's
 * composition is (mdf_pipeline_add numbers the statuses on), with its
 * budget, inbox and placement. Logs of a stage on several ranks get
 * `rank`'s name. */
static mdf_status build_pipeline(const mdf_workflow *wf, int freeze, const run_sinks *sk, int rank, int nranks,
                                 mdf_pipeline **out, mdf_error *err)
{
    mdf_pipeline *p = NULL;
    mdf_status st = mdf_pipeline_create(&p, err);
    for (int g = 0; st == MDF_OK && g < wf->npipe; g++) {
        int first = wf->pipe_first[g], end = wf->pipe_first[g + 1];
        mdf_stage *s = NULL;
        st = build_fused(wf, first, end, freeze, sk, log_rank_of(wf, first, rank, nranks), &s, err);
        mdf_pipe_stage_config c;
        pipe_stage_config(wf, g, &c);
        if (st == MDF_OK && mdf_pipeline_add(p, s, &c, err) != MDF_OK)
            st = at_line(err, wf, wf->pipe[g].placement_line ? wf->pipe[g].placement_line : wf->comp_line,
                         "pipeline");
    }
    if (st != MDF_OK) {
        mdf_pipeline_destroy(p);
        p = NULL;
    }
    *out = p;
    return st;
}

/* The workflow line a pipeline check's message belongs to: the placement,
 * or the budget or inbox of the stage it names first, else the composition. */
static int check_line(const mdf_workflow *wf, const char *msg)
{
    int placement = !strncmp(msg, "placement", 9), subject = -1;
    const char *first = NULL;
    for (int g = 0; g < wf->npipe; g++) {
        char name[MDF_PIPE_NAME_MAX], quoted[MDF_PIPE_NAME_MAX + 16];
        wf_pipe_name(wf, g, name, sizeof name);
        snprintf(quoted, sizeof quoted, "stage '%s'", name);
        const char *at = strstr(msg, quoted);
        if (at && (!first || at < first)) {
            first = at;
            subject = g;
        }
    }
    if (subject < 0) return placement && wf->placement_line ? wf->placement_line : wf->comp_line;
    const wf_pipe_stage *p = &wf->pipe[subject];
    if (placement || strstr(msg, "CUDA")) return p->placement_line ? p->placement_line : wf->comp_line;
    if (strstr(msg, "inbox"))
        return p->inbox_line ? p->inbox_line : wf->stages[wf->comp[wf->pipe_first[subject]]].line;
    return p->budget_line;
}

/* What mdf_pipeline_run checks before any work, done before any output is
 * opened: every system against every stage's budget and inbox (the
 * message names the system and the stage), the model against every cell
 * (m NULL: not), the placement against nranks. No StarPU needed. */
static mdf_status check_pipeline(const mdf_workflow *wf, const mdf_frame_list *frames, const mdf_model *m, int nranks,
                                 mdf_error *err)
{
    run_sinks none = {NULL, NULL};
    mdf_pipeline *p = NULL;
    int freeze = wf->hooks.freeze < 0 ? runner_frames_have_frozen(frames) : wf->hooks.freeze;
    mdf_status st = build_pipeline(wf, freeze, &none, 0, nranks, &p, err);
    if (st == MDF_OK && mdf_pipeline_check(p, m, frames->frames, frames->count, nranks, err) != MDF_OK) {
        char context[64];
        if (nranks > 1) snprintf(context, sizeof context, "pipeline over %d MPI ranks", nranks);
        else snprintf(context, sizeof context, "pipeline in one process");
        st = at_line(err, wf, check_line(wf, err->message), context);
    }
    mdf_pipeline_destroy(p);
    return st;
}

mdf_status wf_check_input(const mdf_workflow *wf, int nranks, mdf_error *err)
{
    mdf_frame_list frames;
    mdf_frame_list_init(&frames);
    mdf_status st = read_input(wf, &frames, err);
    if (st == MDF_OK) st = check_model_elements(wf, &frames, err);
    if (st == MDF_OK && is_pipeline(wf)) st = check_pipeline(wf, &frames, NULL, nranks, err);
    mdf_frame_list_free(&frames);
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
    mdf_pipeline *pipe;                /* a composition with '|' */
    int rank, nranks;                  /* this process's MPI rank and the ranks (0, 1 in one process) */
    int started;
    collector col;
    run_sinks sinks;
} run_state;

/* The snapshots output by registered name: under MPI, on rank N > 0, its
 * "path" setting (when it has one) gets ".rN" as a file output does. */
static mdf_status open_named_sink(const mdf_workflow *wf, int rank, mdf_sink **out, mdf_error *err)
{
    mdf_param_list params = wf->snapshot_sink.params;
    const char *path = mdf_param_list_get(&wf->snapshot_sink.params, "path");
    mdf_status st = MDF_OK;
    if (path && rank > 0) {
        char ranked[MDF_PARAM_VALUE_MAX + 16];
        wf_rank_path(path, rank, ranked, sizeof ranked);
        st = mdf_param_list_set(&params, "path", ranked, err);
    }
    if (st == MDF_OK) st = mdf_sink_create_named(wf->snapshot_sink.type, &params, out, err);
    if (st != MDF_OK) mdf_error_prefix(err, st, "%s:%d: output.snapshot_sink", wf->path, wf->snapshot_sink.line);
    return st;
}

/* Opens the run's HDF5 outputs (continued, not replaced, on --resume: the
 * checkpoint cuts them back to where it was taken). Under MPI each rank
 * writes files of its own (rank_output), and only those its stages fill:
 * snapshots where a stage runs, converged where the first one does. */
static mdf_status open_sinks(const mdf_workflow *wf, const run_state *rs, run_sinks *sk, mdf_error *err)
{
    mdf_h5_options o;
    mdf_h5_options_init(&o);
    o.compression = wf->compression;
    o.append = wf->resume;
    int any = !wf->mpi, first = !wf->mpi || group_on(wf, 0, rs->rank, rs->nranks);
    for (int g = 0; !any && g < wf->npipe; g++) any = group_on(wf, g, rs->rank, rs->nranks);
    char path[WF_PATH_MAX + 16];
    mdf_status st = MDF_OK;
    if (any && wf->has_snapshot_sink) {
        st = open_named_sink(wf, wf->mpi ? rs->rank : 0, &sk->snapshots, err);
        if (st != MDF_OK) return st; /* at its line already */
    } else if (any && *wf->snapshots) {
        rank_output(wf->snapshots, wf->mpi ? rs->rank : 0, path, sizeof path);
        st = wf_hdf5_kind(wf->snapshots) == 2 ? mdf_sink_create_h5md(path, &o, &sk->snapshots, err)
                                              : mdf_sink_create_hdf5(path, &o, &sk->snapshots, err);
    }
    if (st == MDF_OK && first && *wf->converged) {
        rank_output(wf->converged, wf->mpi ? rs->rank : 0, path, sizeof path);
        st = mdf_sink_create_hdf5(path, &o, &sk->converged, err);
    }
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
    /* Warnings once, from rank 0, under MPI. */
    if (st == MDF_OK && rs->rank == 0) runner_warn_mixed_cutoffs(&wf->model, "model.pairs");
    /* Every system goes through every stage: one warning for the first npt stage. */
    for (int k = 0; st == MDF_OK && rs->rank == 0 && k < wf->ncomp; k++) {
        const wf_stage *ws = &wf->stages[wf->comp[k]];
        const mdf_method *m = mdf_method_find(ws->method);
        if (!m || !(m->flags & MDF_METHOD_CELL)) continue;
        char where[4608];
        snprintf(where, sizeof where, "%s:%d: stage '%s' (method %s)", wf->path, ws->line, ws->name, ws->method);
        runner_warn_npt_open(ws->method, where, &rs->frames);
        break;
    }
    /* A pipeline's budgets, inboxes and placement, before StarPU (and MPI) start. */
    if (st == MDF_OK && is_pipeline(wf)) st = check_pipeline(wf, &rs->frames, NULL, rs->nranks, err);
    mdf_runtime_config rc;
    mdf_runtime_config_init(&rc);
    rc.sched = *wf->sched ? wf->sched : NULL;
    rc.ncpus = wf->ncpus;
    rc.ncuda = wf->ncuda;
    rc.mpi = wf->mpi;
    if (st == MDF_OK) st = mdf_runtime_start(&rc, err);
    rs->started = st == MDF_OK;
    if (st == MDF_OK && wf->mpi && (mdf_runtime_mpi_rank() != rs->rank || mdf_runtime_mpi_size() != rs->nranks))
        st = mdf_error_set(err, MDF_ERR_INVALID, "MPI says rank %d of %d, the launcher said rank %d of %d: start "
                           "mdflow with the mpirun of the MPI it was built with", mdf_runtime_mpi_rank(),
                           mdf_runtime_mpi_size(), rs->rank, rs->nranks);
    if (st == MDF_OK && runner_model_create(&wf->model, &rs->model, err) != MDF_OK)
        st = at_line(err, wf, wf->model_line ? wf->model_line : 1, "model");
    int freeze = wf->hooks.freeze < 0 ? runner_frames_have_frozen(&rs->frames) : wf->hooks.freeze;
    if (st == MDF_OK && is_pipeline(wf)) { /* each stage samples with its own budget */
        st = check_pipeline(wf, &rs->frames, rs->model, rs->nranks, err); /* the cells, before any file */
        if (st == MDF_OK) st = open_sinks(wf, rs, &rs->sinks, err);
        if (st == MDF_OK) st = build_pipeline(wf, freeze, &rs->sinks, rs->rank, rs->nranks, &rs->pipe, err);
        return st;
    }
    /* Pairs are counted (O(N²) per system) only when a pair budget asks, within the model's cutoff. */
    mdf_sampler_config sampler = wf->sampler;
    sampler.pair_cutoff = st == MDF_OK && sampler.max_pairs > 0 ? mdf_model_cutoff(rs->model) : 0.0;
    if (st == MDF_OK && mdf_sampler_create(rs->frames.frames, rs->frames.count, &sampler, &rs->sampler, err) != MDF_OK)
        st = at_line(err, wf, wf->sampler_line, "sampler");
    if (st == MDF_OK) st = open_sinks(wf, rs, &rs->sinks, err);
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

static void print_pipe_summary(const mdf_workflow *wf, const run_state *rs, const mdf_pipe_report *r,
                               const out_entry *e, size_t n);
static mdf_status write_pipe_report(const mdf_workflow *wf, const run_state *rs, const mdf_pipe_report *r,
                                    mdf_error *err);

/* ---- a pipeline's summary and report ---------------------------------------------------- */

/* The files an output named `path` became over the ranks (rank_output),
 * for the summary: "traj.h5" or "traj.h5 (rank 0), traj.r1.h5 (rank 1)". */
static void rank_files(const mdf_workflow *wf, const run_state *rs, const char *path, int only_first, char *out,
                       size_t size)
{
    out[0] = '\0';
    if (!wf->mpi) {
        snprintf(out, size, "%s", path);
        return;
    }
    for (int r = 0; r < rs->nranks; r++) {
        int any = 0;
        for (int g = 0; g < (only_first ? 1 : wf->npipe); g++) any |= group_on(wf, g, r, rs->nranks);
        if (!any) continue;
        char file[WF_PATH_MAX + 16];
        rank_output(path, r, file, sizeof file);
        size_t len = strlen(out);
        snprintf(out + len, size - len, "%s%s (rank %d)", len ? ", " : "", file, r);
    }
}

/* The outputs of a pipeline run and where each rank's went. */
static void print_pipe_outputs(const mdf_workflow *wf, const run_state *rs)
{
    char files[8192];
    if (*wf->structures) printf("  final structures (input order, written by rank 0): %s\n", wf->structures);
    if (*wf->snapshots) {
        rank_files(wf, rs, wf->snapshots, 0, files, sizeof files);
        printf("  snapshots every %lld steps: %s\n", (long long)wf->snapshot_every, files);
    }
    if (wf->has_snapshot_sink)
        printf("  snapshots every %lld steps: sink %s%s\n", (long long)wf->snapshot_every, wf->snapshot_sink.type,
               wf->mpi ? " (its path with .rN on rank N > 0)" : "");
    if (*wf->converged) {
        rank_files(wf, rs, wf->converged, 1, files, sizeof files);
        printf("  systems leaving stage %s, each once: %s\n", wf->stages[wf->comp[0]].name, files);
    }
    for (int k = 0; *wf->log && k < wf->ncomp; k++) {
        char log[WF_PATH_MAX + WF_NAME_MAX + 2];
        wf_log_path(wf, k, log, sizeof log);
        int g = wf_pipe_of(wf, k), ranks[MDF_PIPE_MAX_RANKS];
        int n = group_ranks(wf, g, rs->nranks, ranks);
        if (n <= 1) {
            printf("  log of stage %s: %s\n", wf->stages[wf->comp[k]].name, log);
            continue;
        }
        files[0] = '\0';
        for (int i = 0; i < n; i++) {
            char file[sizeof log + 16];
            wf_rank_path(log, ranks[i], file, sizeof file);
            size_t len = strlen(files);
            snprintf(files + len, sizeof files - len, "%s%s", i ? ", " : "", file);
        }
        printf("  logs of stage %s (one per rank): %s\n", wf->stages[wf->comp[k]].name, files);
    }
}

/* "h/cap" of an inbox's high-water mark; cap 0 (no limit): "h/-". */
static void inbox_text(int64_t hwm, int64_t cap, char *out, size_t size)
{
    if (cap > 0) snprintf(out, size, "%lld/%lld", (long long)hwm, (long long)cap);
    else snprintf(out, size, "%lld/-", (long long)hwm);
}

/* One row per stage instance (a pipeline stage on one rank). */
static void print_pipe_table(const mdf_pipe_report *r)
{
    printf("  pipeline stages (busy/idle/sleeping: shares of the instance's workers over the run; blocked: waiting\n"
           "  for room downstream with nothing to move (back-pressure); starved: waiting for systems; held max:\n"
           "  most finished systems kept back at once; inbox: high-water mark / capacity, systems and atoms):\n");
    printf("    %-16s %4s %7s %6s %6s %6s %8s %6s %6s %6s %10s %10s %8s %12s %14s\n", "stage", "rank", "workers", "in",
           "out", "unfin", "steps", "busy%", "idle%", "sleep%", "blocked_s", "starved_s", "held_max", "inbox_sys",
           "inbox_atoms");
    for (int i = 0; i < r->n; i++) {
        const mdf_pipe_stage_report *x = &r->stages[i];
        char sys[48] = "-", atoms[48] = "-";
        if (x->stage > 0) {
            inbox_text(x->inbox_hwm_systems, x->inbox_cap_systems, sys, sizeof sys);
            inbox_text(x->inbox_hwm_atoms, x->inbox_cap_atoms, atoms, sizeof atoms);
        }
        printf("    %-16s %4d %7d %6lld %6lld %6lld %8lld %6.1f %6.1f %6.1f %10.3f %10.3f %8lld %12s %14s\n", x->name,
               x->rank, x->nworkers, (long long)x->systems_in, (long long)x->systems_out,
               (long long)x->systems_unfinished, (long long)x->steps, 100.0 * x->busy_share, 100.0 * x->idle_share,
               100.0 * x->sleeping_share, x->blocked_s, x->starved_s, (long long)x->held_max, sys, atoms);
    }
}

static void print_pipe_summary(const mdf_workflow *wf, const run_state *rs, const mdf_pipe_report *r,
                               const out_entry *e, size_t n)
{
    int32_t exit_status = rs->col.exit_status;
    size_t finished = 0;
    for (size_t i = 0; i < n; i++) finished += e[i].exited && e[i].status == exit_status;
    char comp[512];
    wf_composition_text(wf, comp, sizeof comp);
    printf("\nmdflow run summary: %s\n", comp);
    printf("  systems %zu, atoms %lld; a pipeline of %d stages, %d stage instances %s\n", rs->frames.count,
           (long long)total_atoms(&rs->frames), wf->npipe, r->n,
           wf->mpi ? "over MPI ranks" : "on scheduling contexts of one process");
    if (wf->mpi) printf("  ranks %d\n", r->nranks);
    printf("  finished %zu (status %d), unfinished %zu; left a stage on its step budget: %lld\n", finished,
           (int)exit_status, n - finished, (long long)r->budget_exits);
    print_unfinished(e, n, exit_status, n - finished);
    printf("  %.3f s: %.4g systems/s; model evaluations %lld (steps per stage instance below)\n", r->wall_s,
           r->wall_s > 0.0 ? (double)finished / r->wall_s : 0.0, (long long)r->model_evaluations);
    print_pipe_outputs(wf, rs);
    print_pipe_table(r);
}

/* A JSON string (stage names are YAML keys: any character). */
static void json_string(FILE *fp, const char *t)
{
    fputc('"', fp);
    for (; *t; t++) {
        unsigned char ch = (unsigned char)*t;
        if (ch == '"' || ch == '\\') fprintf(fp, "\\%c", ch);
        else if (ch < 0x20) fprintf(fp, "\\u%04x", ch);
        else fputc(ch, fp);
    }
    fputc('"', fp);
}

static void json_stage(FILE *fp, const mdf_pipe_stage_report *x)
{
    fprintf(fp, "    {\"name\": ");
    json_string(fp, x->name);
    fprintf(fp, ", \"stage\": %d, \"rank\": %d, \"nworkers\": %d,\n", x->stage, x->rank, x->nworkers);
    fprintf(fp, "     \"systems_in\": %lld, \"systems_out\": %lld, \"systems_unfinished\": %lld, \"steps\": %lld,\n",
            (long long)x->systems_in, (long long)x->systems_out, (long long)x->systems_unfinished,
            (long long)x->steps);
    fprintf(fp, "     \"wall_s\": %.9g, \"atom_steps_per_second\": %.9g, \"busy_share\": %.9g, \"idle_share\": %.9g, "
            "\"sleeping_share\": %.9g,\n", x->wall_s, x->atom_steps_per_second, x->busy_share, x->idle_share,
            x->sleeping_share);
    fprintf(fp, "     \"blocked_s\": %.9g, \"starved_s\": %.9g, \"held_max\": %lld,\n", x->blocked_s, x->starved_s,
            (long long)x->held_max);
    fprintf(fp, "     \"inbox_cap_systems\": %lld, \"inbox_cap_atoms\": %lld, \"inbox_hwm_systems\": %lld, "
            "\"inbox_hwm_atoms\": %lld,\n", (long long)x->inbox_cap_systems, (long long)x->inbox_cap_atoms,
            (long long)x->inbox_hwm_systems, (long long)x->inbox_hwm_atoms);
    fprintf(fp, "     \"refills\": %lld, \"model_evaluations\": %lld, \"list_rebuilds\": %lld}", (long long)x->refills,
            (long long)x->model_evaluations, (long long)x->list_rebuilds);
}

/* --pipe-report FILE.json: the whole mdf_pipe_report, for benchmarks. */
static mdf_status write_pipe_report(const mdf_workflow *wf, const run_state *rs, const mdf_pipe_report *r,
                                    mdf_error *err)
{
    FILE *fp = fopen(wf->pipe_report, "w");
    if (!fp) return mdf_error_set(err, MDF_ERR_IO, "--pipe-report: cannot write '%s': %s", wf->pipe_report,
                                  strerror(errno));
    char comp[512];
    wf_composition_text(wf, comp, sizeof comp);
    fprintf(fp, "{\"composition\": ");
    json_string(fp, comp);
    fprintf(fp, ",\n \"mpi\": %s, \"nranks\": %d, \"systems\": %zu, \"wall_s\": %.9g, \"finished\": %lld, "
            "\"systems_per_s\": %.9g,\n", wf->mpi ? "true" : "false", r->nranks, rs->frames.count, r->wall_s,
            (long long)r->finished, r->wall_s > 0.0 ? (double)r->finished / r->wall_s : 0.0);
    fprintf(fp, " \"budget_exits\": %lld, \"model_evaluations\": %lld, \"list_rebuilds\": %lld,\n \"stages\": [\n",
            (long long)r->budget_exits, (long long)r->model_evaluations, (long long)r->list_rebuilds);
    for (int i = 0; i < r->n; i++) {
        json_stage(fp, &r->stages[i]);
        fprintf(fp, "%s\n", i + 1 < r->n ? "," : "");
    }
    fprintf(fp, " ]}\n");
    if (fclose(fp) != 0) return mdf_error_set(err, MDF_ERR_IO, "--pipe-report: cannot write '%s'", wf->pipe_report);
    return MDF_OK;
}

/* Writes what was collected (also after a run stopped by a hook: it shows
 * where). A pipeline (prep not NULL): rank 0 alone, which received every
 * system; the other ranks write nothing and print no summary. */
static mdf_status finish(const mdf_workflow *wf, run_state *rs, const mdf_stage_report *report,
                         const mdf_pipe_report *prep, mdf_status st, mdf_error *err)
{
    if (rs->rank != 0) return st;
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
    if (st == MDF_OK && prep) print_pipe_summary(wf, rs, prep, e, n);
    else if (st == MDF_OK) print_summary(wf, &rs->frames, report, e, n, rs->col.exit_status);
    if (st == MDF_OK && prep && wf->pipe_report) st = write_pipe_report(wf, rs, prep, err);
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

/* The pipeline over the input: systems go to the collector (rank 0 under
 * MPI), the progress line follows the last pipeline stage. */
static mdf_status run_pipeline(const mdf_workflow *wf, run_state *rs, mdf_pipe_report *report, mdf_error *err)
{
    mdf_pipe_run_config pc;
    mdf_pipe_run_config_init(&pc);
    pc.frames = rs->frames.frames;
    pc.nframes = rs->frames.count;
    pc.on_exit = collect;
    pc.user = &rs->col;
    pc.mpi = wf->mpi;
    pc.checkpoint_path = *wf->checkpoint ? wf->checkpoint : NULL;
    pc.checkpoint_every = wf->checkpoint_every;
    pc.resume = wf->resume;
    mdf_stage *last = mdf_pipeline_stage(rs->pipe, wf->npipe - 1);
    progress_line progress; /* systems leave the pipeline as they leave its last stage */
    progress_attach(&progress, last, wf->quiet, wf->progress_every, 1);
    mdf_status st = mdf_pipeline_run(rs->pipe, rs->model, &pc, report, err);
    mdf_stage_set_progress(last, NULL, NULL, 0.0);
    if (st != MDF_OK && pc.checkpoint_path && err->code == MDF_ERR_UNSUPPORTED)
        st = at_line(err, wf, wf->checkpoint_line, "checkpoint");
    else if (st != MDF_OK && !strncmp(err->message, "placement", 9)) /* a rank's workers, found at set-up */
        st = at_line(err, wf, check_line(wf, err->message), "pipeline");
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

/* The files a run names, for check_files: path_roles over storage of their own. */
#define FILE_WHAT_MAX (WF_NAME_MAX + 48)
#define FILE_PATH_MAX (WF_PATH_MAX + WF_NAME_MAX + 24)
typedef struct file_list {
    path_role *roles;
    char (*what)[FILE_WHAT_MAX];
    char (*path)[FILE_PATH_MAX];
    size_t n, cap;
} file_list;

static void file_add(file_list *l, const char *what, const char *path, int output, int line)
{
    if (l->n == l->cap || !path || !*path) return;
    snprintf(l->what[l->n], FILE_WHAT_MAX, "%s", what);
    snprintf(l->path[l->n], FILE_PATH_MAX, "%s", path);
    l->roles[l->n] = (path_role){l->what[l->n], l->path[l->n], output, line};
    l->n++;
}

/* An HDF5 output: one file, or under MPI one per rank that fills it (only_first: the ranks of the first stage). */
static void file_add_ranked(file_list *l, const mdf_workflow *wf, int nranks, const char *what, const char *path,
                            int only_first)
{
    if (!wf->mpi) {
        file_add(l, what, path, 1, wf->output_line);
        return;
    }
    for (int r = 0; r < nranks && *path; r++) {
        int any = 0;
        for (int g = 0; g < (only_first ? 1 : wf->npipe); g++) any |= group_on(wf, g, r, nranks);
        char file[FILE_PATH_MAX], label[FILE_WHAT_MAX];
        rank_output(path, r, file, sizeof file);
        snprintf(label, sizeof label, "%s (rank %d)", what, r);
        if (any) file_add(l, label, file, 1, wf->output_line);
    }
}

/* The log of composition entry k: one file, or one per rank of its pipeline stage. */
static void file_add_logs(file_list *l, const mdf_workflow *wf, int nranks, int k)
{
    char log[FILE_PATH_MAX], what[FILE_WHAT_MAX];
    wf_log_path(wf, k, log, sizeof log);
    if (wf->ncomp > 1) snprintf(what, sizeof what, "output.log (stage %s)", wf->stages[wf->comp[k]].name);
    else snprintf(what, sizeof what, "output.log");
    int ranks[MDF_PIPE_MAX_RANKS];
    int n = is_pipeline(wf) ? group_ranks(wf, wf_pipe_of(wf, k), nranks, ranks) : 1;
    if (n <= 1) {
        file_add(l, what, log, 1, wf->output_line);
        return;
    }
    for (int i = 0; i < n; i++) {
        char file[FILE_PATH_MAX], label[FILE_WHAT_MAX];
        wf_rank_path(log, ranks[i], file, sizeof file);
        snprintf(label, sizeof label, "%.*s, rank %d", (int)sizeof label - 16, what, ranks[i]);
        file_add(l, label, file, 1, wf->output_line);
    }
}

/* The workflow's files, before anything runs: outputs distinct from the
 * input, the workflow file and each other, and writable; under MPI, every
 * rank's files (each rank checks them all: they share the folder). */
static mdf_status check_files(const mdf_workflow *wf, int nranks, mdf_error *err)
{
    file_list l = {0};
    l.cap = 8 + (size_t)(2 + wf->ncomp) * (size_t)(nranks > 0 ? nranks : 1);
    l.roles = calloc(l.cap, sizeof *l.roles);
    l.what = calloc(l.cap, sizeof *l.what);
    l.path = calloc(l.cap, sizeof *l.path);
    mdf_status st = MDF_OK;
    if (!l.roles || !l.what || !l.path) st = mdf_error_set(err, MDF_ERR_NOMEM, "no memory to check the outputs");
    if (st == MDF_OK) {
        file_add(&l, "the workflow file", wf->path, 0, 0);
        file_add(&l, "input", wf->input, 0, wf->input_line);
        file_add(&l, "output.structures", wf->structures, 1, wf->output_line);
        file_add_ranked(&l, wf, nranks, "output.snapshots", wf->snapshots, 0);
        file_add_ranked(&l, wf, nranks, "output.converged", wf->converged, 1);
        file_add(&l, "checkpoint.path", wf->checkpoint, 1, wf->checkpoint_line);
        if (wf->pipe_report) file_add(&l, "--pipe-report", wf->pipe_report, 1, 0);
        for (int k = 0; *wf->log && k < wf->ncomp; k++) file_add_logs(&l, wf, nranks, k);
        st = paths_check_distinct(wf->path, l.roles, l.n, err);
    }
    if (st == MDF_OK) st = paths_check_writable(wf->path, l.roles, l.n, err);
    free(l.roles);
    free(l.what);
    free(l.path);
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

/* What a pipeline run cannot take, said before anything runs. */
/* Checkpoints cut each snapshot file back to the length its stage saw at
 * its checkpoint; two stages of one process filling one file checkpoint at
 * different times, so each would cut the other's snapshots. One stage per
 * rank (each rank writes its own file) is fine. */
static mdf_status check_shared_snapshots(const mdf_workflow *wf, int nranks, mdf_error *err)
{
    if (!is_pipeline(wf) || !*wf->checkpoint || (!*wf->snapshots && !wf->has_snapshot_sink)) return MDF_OK;
    for (int r = 0; r < nranks; r++) {
        int here = 0;
        for (int g = 0; g < wf->npipe; g++) here += group_on(wf, g, r, nranks);
        if (here > 1)
            return mdf_error_set(err, MDF_ERR_INVALID, "%s:%d: checkpoint: %d pipeline stages of %s write one snapshot "
                                 "file, and a stage's checkpoint cuts that file back to where that stage was: place "
                                 "each stage on a rank of its own (mpirun; each rank writes its own snapshots), or "
                                 "drop output.snapshots or the checkpoint", wf->path, wf->checkpoint_line, here,
                                 wf->mpi ? "one rank" : "one process");
    }
    return MDF_OK;
}

static mdf_status check_pipeline_options(const mdf_workflow *wf, int nranks, mdf_error *err)
{
    mdf_status st = check_shared_snapshots(wf, nranks, err);
    if (st != MDF_OK) return st;
    if (wf->pipe_report && !is_pipeline(wf))
        return mdf_error_set(err, MDF_ERR_INVALID, "--pipe-report writes a pipeline's report, and %s runs %s: compose "
                             "its stages with '|' (relax | md) or leave --pipe-report out", wf->path,
                             wf->sequential ? "its stages in sequence (--sequential)" : "no pipeline");
    if (wf->sched_report && is_pipeline(wf))
        return mdf_error_set(err, MDF_ERR_INVALID, "%s:%d: mdflow sched compares policies on fused compositions: "
                             "write the composition with '+', or give each pipeline stage its policy with "
                             "placement: {STAGE: {sched: NAME}}", wf->path, wf->comp_line);
    return MDF_OK;
}

mdf_status wf_run(const mdf_workflow *wf, mdf_error *err)
{
    run_state rs;
    memset(&rs, 0, sizeof rs);
    mdf_frame_list_init(&rs.frames);
    pthread_mutex_init(&rs.col.lock, NULL);
    mdf_error_clear(&rs.col.err);
    /* Under MPI the launcher's numbers, until MPI starts (prepare checks they agree). */
    rs.rank = wf->mpi ? mdf_runtime_launcher_rank() : 0;
    rs.nranks = wf->mpi ? mdf_runtime_launcher_size() : 1;
    mdf_stage_report report;
    memset(&report, 0, sizeof report);
    mdf_pipe_report prep;
    memset(&prep, 0, sizeof prep);
    mdf_status st = MDF_OK;
    if (wf->resume && !*wf->checkpoint)
        st = mdf_error_set(err, MDF_ERR_INVALID, "%s:1: --resume needs the workflow's checkpoint: add e.g. "
                           "checkpoint: {path: run.ckpt.h5, every: 100} and run without --resume first", wf->path);
    if (st == MDF_OK && wf->sequential && *wf->checkpoint)
        st = mdf_error_set(err, MDF_ERR_INVALID, "%s:%d: --sequential takes no checkpoints (they belong to inflight "
                           "runs): remove the checkpoint key or run without --sequential", wf->path,
                           wf->checkpoint_line);
    if (st == MDF_OK) st = check_pipeline_options(wf, rs.nranks, err);
    if (st == MDF_OK) st = check_files(wf, rs.nranks, err);
    /* A pipeline's checkpoints are files per stage and rank: the library finds them. */
    if (st == MDF_OK && wf->resume && !is_pipeline(wf)) st = check_resumable(wf, err);
    if (st == MDF_OK) st = prepare(wf, &rs, err);
    if (st == MDF_OK) {
        rs.col.exit_status = wf->sequential ? wf->ncomp
                             : rs.pipe      ? mdf_pipeline_exit_status(rs.pipe)
                                            : mdf_stage_exit_status(rs.stage);
        if (wf->sched_report) st = mdf_runtime_trace_start(err);
        /* mdflow sched --simulate's recording run: the task graph, for mdflow-simulate. */
        const char *record = wf->sched_report ? getenv("MDF_TASK_RECORD") : NULL;
        if (st == MDF_OK && record && *record) st = mdf_runtime_record_start(record, err);
        if (st == MDF_OK)
            st = wf->sequential ? run_sequential(wf, &rs, &report, err)
                 : rs.pipe      ? run_pipeline(wf, &rs, &prep, err)
                                : run_inflight(wf, &rs, &report, err);
        if (st != MDF_OK && rs.col.err.code != MDF_OK) *err = rs.col.err; /* our callback stopped it */
        if (record && *record) {
            mdf_error rerr;
            mdf_error_clear(&rerr);
            mdf_status rst = mdf_runtime_record_stop(&rerr);
            if (rst != MDF_OK && st == MDF_OK) {
                *err = rerr;
                st = rst;
            }
        }
        if (st == MDF_OK && wf->sched_report) st = sched_report_write(wf->sched_report, &report, err);
        st = finish(wf, &rs, &report, rs.pipe ? &prep : NULL, st, err);
    }
    mdf_stage_destroy(rs.stage); /* before the sinks its hooks borrow */
    for (int k = 0; k < WF_MAX_STAGES; k++) mdf_stage_destroy(rs.parts[k]);
    mdf_pipeline_destroy(rs.pipe);
    mdf_pipe_report_free(&prep);
    st = close_sinks(&rs.sinks, st, err);
    mdf_sampler_destroy(rs.sampler);
    mdf_model_destroy(rs.model);
    if (rs.started) mdf_runtime_stop();
    collector_free(&rs.col);
    mdf_frame_list_free(&rs.frames);
    return st;
}
