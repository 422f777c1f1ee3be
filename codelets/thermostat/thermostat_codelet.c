/* mdflow — thermostat and barostat codelets and their performance models. */
#include "thermostat_codelet.h"
#include "../common/mdf_codelet.h"

MDF_PERFMODEL(langevin_pre_model, "mdf_langevin_pre");
MDF_PERFMODEL(nhc_pre_model, "mdf_nhc_pre");
MDF_PERFMODEL(npt_pre_model, "mdf_npt_pre");
MDF_PERFMODEL(langevin_post_model, "mdf_langevin_post");
MDF_PERFMODEL(bussi_post_model, "mdf_bussi_post");
MDF_PERFMODEL(nhc_post_model, "mdf_nhc_post");
MDF_PERFMODEL(npt_post_model, "mdf_npt_post");

#if MDF_CUDA_ENABLED
#define MDF_THERMO_CUDA(fn) .cuda_funcs = {fn}, .cuda_flags = {STARPU_CUDA_ASYNC},
#else
#define MDF_THERMO_CUDA(fn)
#endif

/* pos RW, vel RW, force R, atoms R, sys R, res RW, state RW */
static struct starpu_codelet langevin_pre_cl = {
    .cpu_funcs = {mdf_langevin_pre_cpu},
    .cpu_funcs_name = {"mdf_langevin_pre_cpu"},
    MDF_THERMO_CUDA(mdf_langevin_pre_cuda)
    .nbuffers = 7,
    .modes = {STARPU_RW, STARPU_RW, STARPU_R, STARPU_R, STARPU_R, STARPU_RW, STARPU_RW},
    .model = &langevin_pre_model,
    .name = "mdf_langevin_pre",
};

/* pos RW, vel RW, force R, atoms R, sys R, state RW */
static struct starpu_codelet nhc_pre_cl = {
    .cpu_funcs = {mdf_nhc_pre_cpu},
    .cpu_funcs_name = {"mdf_nhc_pre_cpu"},
    MDF_THERMO_CUDA(mdf_nhc_pre_cuda)
    .nbuffers = 6,
    .modes = {STARPU_RW, STARPU_RW, STARPU_R, STARPU_R, STARPU_R, STARPU_RW},
    .model = &nhc_pre_model,
    .name = "mdf_nhc_pre",
};

/* pos RW, vel RW, force R, atoms R, sys RW (cell), res RW, state RW */
static struct starpu_codelet npt_pre_cl = {
    .cpu_funcs = {mdf_npt_pre_cpu},
    .cpu_funcs_name = {"mdf_npt_pre_cpu"},
    MDF_THERMO_CUDA(mdf_npt_pre_cuda)
    .nbuffers = 7,
    .modes = {STARPU_RW, STARPU_RW, STARPU_R, STARPU_R, STARPU_RW, STARPU_RW, STARPU_RW},
    .model = &npt_pre_model,
    .name = "mdf_npt_pre",
};

/* vel RW, force R, atoms R, sys RW, res RW, state RW; one codelet per method
 * so that each has its own performance history. */
#define MDF_THERMO_POST_CL(var, pm, label)                                                      \
    static struct starpu_codelet var = {                                                          \
        .cpu_funcs = {mdf_thermo_post_cpu},                                                       \
        .cpu_funcs_name = {"mdf_thermo_post_cpu"},                                                \
        MDF_THERMO_CUDA(mdf_thermo_post_cuda)                                                     \
        .nbuffers = 6,                                                                            \
        .modes = {STARPU_RW, STARPU_R, STARPU_R, STARPU_RW, STARPU_RW, STARPU_RW},               \
        .model = &pm,                                                                             \
        .name = label,                                                                            \
    }
MDF_THERMO_POST_CL(langevin_post_cl, langevin_post_model, "mdf_langevin_post");
MDF_THERMO_POST_CL(bussi_post_cl, bussi_post_model, "mdf_bussi_post");
MDF_THERMO_POST_CL(nhc_post_cl, nhc_post_model, "mdf_nhc_post");
MDF_THERMO_POST_CL(npt_post_cl, npt_post_model, "mdf_npt_post");

int mdf_insert_langevin_pre(const mdf_thermo_handles *h, const mdf_thermo_args *args)
{
    starpu_data_handle_t b[] = {h->pos, h->vel, h->force, h->atoms, h->sys, h->res, h->state};
    return mdf_submit(&langevin_pre_cl, args, sizeof *args, 7, b, NULL, "mdf_langevin_pre");
}

int mdf_insert_nhc_pre(const mdf_thermo_handles *h, const mdf_thermo_args *args)
{
    starpu_data_handle_t b[] = {h->pos, h->vel, h->force, h->atoms, h->sys, h->state};
    return mdf_submit(&nhc_pre_cl, args, sizeof *args, 6, b, NULL, "mdf_nhc_pre");
}

int mdf_insert_npt_pre(const mdf_thermo_handles *h, const mdf_thermo_args *args)
{
    starpu_data_handle_t b[] = {h->pos, h->vel, h->force, h->atoms, h->sys, h->res, h->state};
    return mdf_submit(&npt_pre_cl, args, sizeof *args, 7, b, NULL, "mdf_npt_pre");
}

int mdf_insert_thermo_post(const mdf_thermo_handles *h, const mdf_thermo_args *args)
{
    struct starpu_codelet *cl = args->kind == MDF_THERMO_BUSSI ? &bussi_post_cl
                                : args->kind == MDF_THERMO_NHC ? &nhc_post_cl
                                : args->kind == MDF_THERMO_NPT ? &npt_post_cl
                                                               : &langevin_post_cl;
    starpu_data_handle_t b[] = {h->vel, h->force, h->atoms, h->sys, h->res, h->state};
    return mdf_submit(cl, args, sizeof *args, 6, b, NULL, cl->name);
}
