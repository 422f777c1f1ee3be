/* mdflow — molecular dynamics runs: a stage without convergence criteria
 * (and a thermo hook when asked), plus single-point evaluations and
 * Maxwell–Boltzmann velocities. */
#include <math.h>
#include <string.h>
#include "../dataflow/batch_internal.h"
#include "mdflow/md.h"
#include "mdflow/units.h"
#include "../dataflow/compute.h"
#include "../codelets/velocity/velocity_codelet.h"
#include "mdflow/runtime.h"

#define MDF_DEFAULT_WINDOW 8

void mdf_md_config_init(mdf_md_config *cfg)
{
    memset(cfg, 0, sizeof *cfg);
    cfg->integrator = "velocity_verlet";
    mdf_dynamics_params_init(&cfg->params);
    mdf_param_list_init(&cfg->method_params);
    cfg->dt_fs = 1.0;
    cfg->skin = 1.0;
    cfg->rebuild_every = 1;
    cfg->rebuild_nocheck = 0;
    cfg->chunk_atoms = 0; /* automatic */
    cfg->window = MDF_DEFAULT_WINDOW;
}

static mdf_status stage_from_md(const mdf_md_config *cfg, mdf_stage **out, mdf_error *err)
{
    if (cfg->steps < 0) return mdf_error_set(err, MDF_ERR_INVALID, "step count %lld must be >= 0", (long long)cfg->steps);
    if (cfg->thermo_every < 0) return mdf_error_set(err, MDF_ERR_INVALID, "thermo interval must be >= 0");
    mdf_stage_config sc;
    mdf_stage_config_init(&sc);
    sc.integrator = cfg->integrator;
    sc.params = cfg->params;
    sc.params.dt_fs = cfg->dt_fs;
    sc.method_params = cfg->method_params;
    sc.status = cfg->status;
    sc.converged_status = cfg->status + 1; /* no criteria: nobody converges */
    sc.max_steps = cfg->steps;
    sc.window = cfg->window;
    sc.skin = cfg->skin;
    sc.rebuild_every = cfg->rebuild_every;
    sc.rebuild_nocheck = cfg->rebuild_nocheck;
    sc.chunk_atoms = cfg->chunk_atoms;
    mdf_status st = mdf_stage_create(&sc, out, err);
    if (st != MDF_OK || !cfg->thermo || cfg->thermo_every <= 0) return st;
    mdf_hook *h = NULL;
    st = mdf_hook_create_thermo(cfg->thermo, cfg->thermo_per_system, cfg->thermo_every, cfg->dt_fs, &h, err);
    if (st == MDF_OK) st = mdf_stage_add_hook(*out, h, err);
    if (st != MDF_OK) {
        mdf_stage_destroy(*out);
        *out = NULL;
    }
    return st;
}

mdf_status mdf_md_run(mdf_batch *b, mdf_model *m, const mdf_md_config *cfg, mdf_md_report *report,
                      mdf_error *err)
{
    if (report) memset(report, 0, sizeof *report);
    mdf_stage *s = NULL;
    mdf_status st = stage_from_md(cfg, &s, err);
    if (st != MDF_OK) return st;
    mdf_stage_report sr;
    st = mdf_stage_run(s, b, m, &sr, err);
    mdf_stage_destroy(s);
    if (report) {
        report->steps = sr.steps;
        report->atoms = b->natoms;
        report->wall_seconds = sr.wall_seconds;
        report->atom_steps_per_second = sr.wall_seconds > 0.0 ? (double)b->natoms * (double)sr.steps / sr.wall_seconds : 0.0;
        report->model_evaluations = sr.model_evaluations;
        report->list_rebuilds = sr.list_rebuilds;
        report->overflowed_atoms = sr.overflowed_atoms;
        report->max_neighbours = sr.max_neighbours;
        report->list_slots = sr.list_slots;
        report->nchunks = sr.nchunks;
        report->nshards = b->nshards;
    }
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
    for (int k = 0; st == MDF_OK && k < b->nshards; k++) st = mdf_compute_submit(c, k, MDF_COMPUTE_VIRIAL, err);
    mdf_task_wait_for_all();
    if (st == MDF_OK) st = mdf_batch_sync(b, err);
    mdf_compute_destroy(c);
    return st;
}

mdf_status mdf_batch_thermalize(mdf_batch *b, double temperature_K, uint64_t seed, int32_t status,
                                mdf_error *err)
{
    return mdf_batch_thermalize_dist(b, temperature_K, seed, status, MDF_VELOCITY_GAUSSIAN, err);
}

mdf_status mdf_batch_thermalize_dist(mdf_batch *b, double temperature_K, uint64_t seed, int32_t status,
                                     mdf_velocity_dist dist, mdf_error *err)
{
    if (!(temperature_K >= 0.0) || !isfinite(temperature_K))
        return mdf_error_set(err, MDF_ERR_INVALID, "temperature %g K must be >= 0", temperature_K);
    if (dist != MDF_VELOCITY_GAUSSIAN && dist != MDF_VELOCITY_UNIFORM)
        return mdf_error_set(err, MDF_ERR_INVALID, "unknown velocity distribution %d (MDF_VELOCITY_GAUSSIAN or "
                             "MDF_VELOCITY_UNIFORM)", (int)dist);
    for (int k = 0; k < b->nshards; k++) {
        const mdf_shard *sh = &b->shards[k];
        mdf_velocity_args a = {.work = sh->natoms, .kT = MDF_KB * temperature_K, .seed = seed,
                               .status = status, .nsys = sh->nsys, .dist = (int32_t)dist};
        int ret = mdf_insert_velocity(sh->vel, sh->atoms, sh->sys, sh->res, &a);
        if (ret != 0) return mdf_error_set(err, MDF_ERR_STARPU, "could not submit velocity draws (%d)", ret);
    }
    return MDF_OK;
}
