/* Berendsen thermostat — the definition: the method's parameters, its two
 * StarPU codelets with their performance models, and the two callbacks
 * that submit one task each per shard and step, through the public
 * accessors of mdflow/extension.h (the shard's handles, its counts, the
 * stage's settings). See berendsen_kernel.h for the physics. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
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

/* The performance models' footprint: ~10% wide bins of the shard's atom
 * count (the args' first field), so that StarPU's history-based models
 * learn a cost per size class and dmda can place shards of any size. */
static uint32_t berendsen_footprint(struct starpu_task *task)
{
    int64_t work = 0;
    if (task->cl_arg && task->cl_arg_size >= sizeof work) memcpy(&work, task->cl_arg, sizeof work);
    uint32_t bin = work > 0 ? (uint32_t)lrint(log((double)work) / log(1.1)) : 0u;
    return starpu_hash_crc32c_be(bin, 0);
}

static struct starpu_perfmodel berendsen_pre_model = {
    .type = STARPU_HISTORY_BASED, .symbol = "berendsen_pre", .footprint = berendsen_footprint};
static struct starpu_perfmodel berendsen_post_model = {
    .type = STARPU_HISTORY_BASED, .symbol = "berendsen_post", .footprint = berendsen_footprint};

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
    return (berendsen_args){.work = mdf_method_natoms(c),
                            .dt = mdf_method_dt(c),
                            .kT0 = MDF_KB * mdf_method_temperature(c),
                            .dt_over_tau = mdf_method_dt_fs(c) / p->tau_fs,
                            .status = mdf_method_status(c),
                            .nsys = mdf_method_nsys(c),
                            .natoms = mdf_method_natoms(c)};
}

/* One task of codelet cl on the handles, with a copy of the arguments
 * (StarPU frees it with the task). Returns 0 or StarPU's error code. */
static int submit(struct starpu_codelet *cl, const berendsen_args *a, const starpu_data_handle_t *h, int n)
{
    struct starpu_task *task = starpu_task_create();
    berendsen_args *copy = malloc(sizeof *copy);
    if (!task || !copy) {
        free(copy);
        if (task) {
            task->destroy = 0; /* never submitted: StarPU refuses to destroy a task marked destroy and detach */
            starpu_task_destroy(task);
        }
        return -ENOMEM;
    }
    *copy = *a;
    task->cl = cl;
    task->cl_arg = copy;
    task->cl_arg_size = sizeof *copy;
    task->cl_arg_free = 1;
    task->name = cl->name;
    for (int k = 0; k < n; k++) STARPU_TASK_SET_HANDLE(task, h[k], k);
    int ret = starpu_task_submit(task);
    if (ret != 0) { /* not submitted: destroy it here (it frees the copy) */
        task->destroy = 0;
        starpu_task_destroy(task);
    }
    return ret;
}

static int berendsen_pre(const mdf_method_ctx *c)
{
    berendsen_args a = args_of(c);
    starpu_data_handle_t h[] = {mdf_method_pos(c), mdf_method_vel(c), mdf_method_force(c), mdf_method_atoms(c),
                                mdf_method_sys(c)};
    return submit(&berendsen_pre_cl, &a, h, 5);
}

static int berendsen_post(const mdf_method_ctx *c)
{
    berendsen_args a = args_of(c);
    starpu_data_handle_t h[] = {mdf_method_vel(c), mdf_method_force(c), mdf_method_atoms(c),
                                mdf_method_sys(c), mdf_method_res(c),   mdf_method_state(c)};
    return submit(&berendsen_post_cl, &a, h, 6);
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
