/* Berendsen thermostat — the definition: the method's parameters, its two
 * StarPU codelets with their performance models, and the two callbacks
 * that submit one task each per shard and step, through the public
 * accessors of mdflow/extension.h (the shard's handles, its counts, the
 * stage's settings). See berendsen_kernel.h for the physics. */
#include <math.h>
#include <starpu.h>
#include "mdflow/units.h"
#include "berendsen.h"
#include "berendsen_kernel.h"

typedef struct berendsen_config {
    double tau_fs;
} berendsen_config;

static const mdf_param_def berendsen_param_defs[] = {
    MDF_PARAM_DOUBLE(berendsen_config, tau_fs, 100.0, 0.0, INFINITY, MDF_PARAM_MIN_OPEN, "fs",
                     "relaxation time of the temperature (dt/tau_fs of the gap closes per step)"),
    MDF_PARAM_END};

/* mdflow's performance models, fitted on the args' first field, `work`
 * (mdf_method_task_work: atoms of the systems the task moves), so that dmda
 * can place tasks of any size (mdflow/extension.h, mdf_perfmodel_cost). */
static struct starpu_perfmodel berendsen_pre_model = {
    .type = STARPU_PER_ARCH, .symbol = "berendsen_pre", .arch_cost_function = mdf_perfmodel_cost};
static struct starpu_perfmodel berendsen_post_model = {
    .type = STARPU_PER_ARCH, .symbol = "berendsen_post", .arch_cost_function = mdf_perfmodel_cost};

#ifdef PLUGIN_WITH_CUDA
#define CUDA_FUNC(fn) .cuda_funcs = {fn}, .cuda_flags = {STARPU_CUDA_ASYNC},
#else
#define CUDA_FUNC(fn)
#endif

static struct starpu_codelet berendsen_pre_cl = {
    .cpu_funcs = {berendsen_pre_cpu},
    .cpu_funcs_name = {"berendsen_pre_cpu"},
    CUDA_FUNC(berendsen_pre_cuda)
    .nbuffers = 5,
    .modes = {STARPU_RW, STARPU_RW, STARPU_R, STARPU_R, STARPU_R},
    .model = &berendsen_pre_model,
    .name = "berendsen_pre",
};

static struct starpu_codelet berendsen_post_cl = {
    .cpu_funcs = {berendsen_post_cpu},
    .cpu_funcs_name = {"berendsen_post_cpu"},
    CUDA_FUNC(berendsen_post_cuda)
    .nbuffers = 6,
    .modes = {STARPU_RW, STARPU_R, STARPU_R, STARPU_RW, STARPU_RW, STARPU_RW},
    .model = &berendsen_post_model,
    .name = "berendsen_post",
};

/* The arguments of this step's tasks for the shard. */
static berendsen_args args_of(const mdf_method_ctx *c)
{
    const berendsen_config *p = (const berendsen_config *)mdf_method_params(c);
    return (berendsen_args){.work = mdf_method_task_work(c),
                            .dt = mdf_method_dt(c),
                            .kT0 = MDF_KB * mdf_method_temperature(c),
                            .dt_over_tau = mdf_method_dt_fs(c) / p->tau_fs,
                            .status = mdf_method_status(c),
                            .nsys = mdf_method_nsys(c),
                            .natoms = mdf_method_natoms(c)};
}

static int berendsen_pre(const mdf_method_ctx *c)
{
    berendsen_args a = args_of(c);
    starpu_data_handle_t h[] = {mdf_method_pos(c), mdf_method_vel(c), mdf_method_force(c), mdf_method_atoms(c),
                                mdf_method_sys(c)};
    return mdf_submit(&berendsen_pre_cl, &a, sizeof a, 5, h, NULL, berendsen_pre_cl.name);
}

static int berendsen_post(const mdf_method_ctx *c)
{
    berendsen_args a = args_of(c);
    starpu_data_handle_t h[] = {mdf_method_vel(c), mdf_method_force(c), mdf_method_atoms(c),
                                mdf_method_sys(c), mdf_method_res(c),   mdf_method_state(c)};
    return mdf_submit(&berendsen_post_cl, &a, sizeof a, 6, h, NULL, berendsen_post_cl.name);
}

const mdf_method berendsen_method = {
    .api_version = MDFLOW_API_VERSION,
    .name = "berendsen",
    .summary = "NVT velocity Verlet with Berendsen weak-coupling velocity rescaling (example plugin)",
    /* Rescaling keeps the total momentum (zero after a velocity draw): Nf = 3N - 3. */
    .flags = MDF_METHOD_MOMENTUM | MDF_METHOD_TEMPERATURE, /* the stage checks T0 */
    .params = berendsen_param_defs,
    .params_size = sizeof(berendsen_config),
    .pre_update = berendsen_pre,
    .post_update = berendsen_post,
};
