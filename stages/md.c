/* mdflow — molecular dynamics runs: the step loop and its submission window.
 *
 * One step of one shard is: integrator pre_update -> model evaluation
 * (neighbour lists, model chunks, chunk sum) -> integrator post_update, and
 * every N steps a sample task for the thermo log. Shards never wait for one
 * another; the host only keeps at most `window` steps in flight. */
#include <math.h>
#include <string.h>
#include <time.h>
#include "integrator.h"
#include "thermo.h"
#include "mdflow/md.h"
#include "mdflow/units.h"
#include "../dataflow/compute.h"
#include "../codelets/velocity/velocity_codelet.h"

#define MDF_DEFAULT_WINDOW 8

void mdf_md_config_init(mdf_md_config *cfg)
{
    memset(cfg, 0, sizeof *cfg);
    cfg->integrator = "velocity_verlet";
    cfg->dt_fs = 1.0;
    cfg->skin = 1.0;
    cfg->chunk_atoms = 0; /* automatic */
    cfg->window = MDF_DEFAULT_WINDOW;
}

static double now_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static mdf_status check_config(const mdf_md_config *cfg, const mdf_integrator_ops **integ, mdf_error *err)
{
    *integ = mdf_find_integrator(cfg->integrator ? cfg->integrator : "velocity_verlet");
    if (!*integ)
        return mdf_error_set(err, MDF_ERR_INVALID, "unknown integrator '%s': use one of the registered ones "
                             "(velocity_verlet)", cfg->integrator);
    if (!(cfg->dt_fs > 0.0) || !isfinite(cfg->dt_fs))
        return mdf_error_set(err, MDF_ERR_INVALID, "time step %g fs must be positive", cfg->dt_fs);
    if (cfg->steps < 0) return mdf_error_set(err, MDF_ERR_INVALID, "step count %lld must be >= 0", (long long)cfg->steps);
    if (cfg->window < 1) return mdf_error_set(err, MDF_ERR_INVALID, "submission window must be >= 1 step");
    if (cfg->thermo_every < 0) return mdf_error_set(err, MDF_ERR_INVALID, "thermo interval must be >= 0");
    return MDF_OK;
}

static mdf_status submit_kinetic(mdf_batch *b, mdf_error *err)
{
    for (int k = 0; k < b->nshards; k++) {
        const mdf_shard *sh = &b->shards[k];
        mdf_kinetic_args a = {.work = sh->natoms, .nsys = sh->nsys};
        int ret = mdf_insert_kinetic(sh->vel, sh->atoms, sh->sys, sh->res, &a);
        if (ret != 0) return mdf_error_set(err, MDF_ERR_STARPU, "could not submit kinetic energies (%d)", ret);
    }
    return MDF_OK;
}

static mdf_status submit_step(mdf_batch *b, mdf_compute *c, const mdf_integrator_ops *integ, double dt,
                              int32_t status, int flags, mdf_error *err)
{
    for (int k = 0; k < b->nshards; k++) {
        const mdf_shard *sh = &b->shards[k];
        int ret = integ->pre_update(sh, dt, status);
        if (ret != 0) return mdf_error_set(err, MDF_ERR_STARPU, "could not submit %s pre_update (%d)", integ->name, ret);
        mdf_status st = mdf_compute_submit(c, k, flags, err);
        if (st != MDF_OK) return st;
        ret = integ->post_update(sh, dt, status);
        if (ret != 0) return mdf_error_set(err, MDF_ERR_STARPU, "could not submit %s post_update (%d)", integ->name, ret);
    }
    return MDF_OK;
}

static mdf_status evaluate_all(mdf_batch *b, mdf_compute *c, mdf_error *err)
{
    mdf_status st = MDF_OK;
    for (int k = 0; st == MDF_OK && k < b->nshards; k++) st = mdf_compute_submit(c, k, MDF_COMPUTE_VIRIAL, err);
    return st;
}

static void fill_report(mdf_batch *b, mdf_compute *c, int64_t steps, double wall, mdf_md_report *r)
{
    memset(r, 0, sizeof *r);
    mdf_compute_stats cs;
    if (mdf_compute_get_stats(c, &cs, NULL) == MDF_OK) {
        r->list_rebuilds = cs.rebuilds;
        r->overflowed_atoms = cs.overflowed_atoms;
        r->max_neighbours = cs.max_neighbours;
        r->list_slots = cs.slots;
        r->nchunks = cs.nchunks;
    }
    r->steps = steps;
    r->atoms = b->natoms;
    r->wall_seconds = wall;
    r->atom_steps_per_second = wall > 0.0 ? (double)b->natoms * (double)steps / wall : 0.0;
    r->model_evaluations = mdf_compute_evaluations(c);
    r->nshards = b->nshards;
}

mdf_status mdf_md_run(mdf_batch *b, mdf_model *m, const mdf_md_config *cfg, mdf_md_report *report,
                      mdf_error *err)
{
    const mdf_integrator_ops *integ;
    mdf_status st = check_config(cfg, &integ, err);
    if (st != MDF_OK) return st;
    mdf_compute_config cc;
    mdf_compute_config_init(&cc);
    cc.skin = cfg->skin;
    if (cfg->chunk_atoms > 0) cc.chunk_atoms = cfg->chunk_atoms;
    mdf_compute *c = NULL;
    st = mdf_compute_create(b, m, &cc, &c, err);
    if (st != MDF_OK) return st;
    mdf_thermo *thermo = NULL;
    int logging = cfg->thermo && cfg->thermo_every > 0;
    if (logging)
        st = mdf_thermo_create(cfg->thermo, cfg->thermo_per_system, cfg->dt_fs, b,
                               (int)(cfg->window / cfg->thermo_every) + 3, &thermo, err);
    double dt = mdf_fs_to_internal(cfg->dt_fs);
    double t0 = now_seconds();
    /* Forces (and kinetic energies) at the starting point. */
    if (st == MDF_OK) st = evaluate_all(b, c, err);
    if (st == MDF_OK) st = submit_kinetic(b, err);
    if (st == MDF_OK && logging) st = mdf_thermo_submit(thermo, b, err);
    /* Tasks of one step, to express the window in tasks for StarPU. */
    unsigned tasks_per_step = 0;
    for (int64_t step = 1; st == MDF_OK && step <= cfg->steps; step++) {
        int before = starpu_task_nsubmitted();
        /* The virial only where someone reads it: logged steps and the last. */
        int logged = logging && step % cfg->thermo_every == 0;
        int flags = logged || step == cfg->steps ? MDF_COMPUTE_VIRIAL : 0;
        st = submit_step(b, c, integ, dt, cfg->status, flags, err);
        if (st == MDF_OK && logged) st = mdf_thermo_submit(thermo, b, err);
        if (tasks_per_step == 0) tasks_per_step = (unsigned)(starpu_task_nsubmitted() - before + 1);
        /* Keep at most `window` steps in flight: waits only for old tasks. */
        if (st == MDF_OK) starpu_task_wait_for_n_submitted((unsigned)cfg->window * tasks_per_step);
    }
    starpu_task_wait_for_all();
    double wall = now_seconds() - t0;
    mdf_status sync = mdf_batch_sync(b, st == MDF_OK ? err : NULL);
    if (st == MDF_OK) st = sync;
    if (report) fill_report(b, c, cfg->steps, wall, report);
    mdf_thermo_destroy(thermo);
    mdf_compute_destroy(c);
    return st;
}

mdf_status mdf_compute_forces(mdf_batch *b, mdf_model *m, mdf_error *err)
{
    mdf_compute_config cc;
    mdf_compute_config_init(&cc);
    cc.skin = 0.0;
    mdf_compute *c = NULL;
    mdf_status st = mdf_compute_create(b, m, &cc, &c, err);
    if (st != MDF_OK) return st;
    st = evaluate_all(b, c, err);
    starpu_task_wait_for_all();
    if (st == MDF_OK) st = mdf_batch_sync(b, err);
    mdf_compute_destroy(c);
    return st;
}

mdf_status mdf_batch_thermalize(mdf_batch *b, double temperature_K, uint64_t seed, int32_t status,
                                mdf_error *err)
{
    if (!(temperature_K >= 0.0) || !isfinite(temperature_K))
        return mdf_error_set(err, MDF_ERR_INVALID, "temperature %g K must be >= 0", temperature_K);
    for (int k = 0; k < b->nshards; k++) {
        const mdf_shard *sh = &b->shards[k];
        mdf_velocity_args a = {.work = sh->natoms, .kT = MDF_KB * temperature_K, .seed = seed,
                               .status = status, .nsys = sh->nsys};
        int ret = mdf_insert_velocity(sh->vel, sh->atoms, sh->sys, sh->res, &a);
        if (ret != 0) return mdf_error_set(err, MDF_ERR_STARPU, "could not submit velocity draws (%d)", ret);
    }
    return MDF_OK;
}
