/* mdflow — the optimisers' codelets and their performance models. */
#include "optim_codelet.h"
#include "../common/mdf_codelet.h"

MDF_PERFMODEL(fire_model, "mdf_fire");
MDF_PERFMODEL(fire2_model, "mdf_fire2");
MDF_PERFMODEL(gd_model, "mdf_gd");
MDF_PERFMODEL(lbfgs_model, "mdf_lbfgs");
MDF_PERFMODEL(cell_fire_model, "mdf_cell_fire");
MDF_PERFMODEL(cell_lbfgs_model, "mdf_cell_lbfgs");

static struct starpu_codelet fire_cl = {
    .cpu_funcs = {mdf_fire_cpu},
    .cpu_funcs_name = {"mdf_fire_cpu"},
#if MDF_CUDA_ENABLED
    .cuda_funcs = {mdf_fire_cuda},
    .cuda_flags = {STARPU_CUDA_ASYNC},
#endif
    .nbuffers = 6,
    .modes = {STARPU_RW, STARPU_RW, STARPU_R, STARPU_RW, STARPU_RW, STARPU_RW},
    .model = &fire_model,
    .name = "mdf_fire",
};

static struct starpu_codelet fire2_cl = {
    .cpu_funcs = {mdf_fire2_cpu},
    .cpu_funcs_name = {"mdf_fire2_cpu"},
#if MDF_CUDA_ENABLED
    .cuda_funcs = {mdf_fire2_cuda},
    .cuda_flags = {STARPU_CUDA_ASYNC},
#endif
    .nbuffers = 6,
    .modes = {STARPU_RW, STARPU_RW, STARPU_R, STARPU_RW, STARPU_RW, STARPU_RW},
    .model = &fire2_model,
    .name = "mdf_fire2",
};

static struct starpu_codelet gd_cl = {
    .cpu_funcs = {mdf_gd_cpu},
    .cpu_funcs_name = {"mdf_gd_cpu"},
#if MDF_CUDA_ENABLED
    .cuda_funcs = {mdf_gd_cuda},
    .cuda_flags = {STARPU_CUDA_ASYNC},
#endif
    .nbuffers = 4,
    .modes = {STARPU_RW, STARPU_R, STARPU_RW, STARPU_RW},
    .model = &gd_model,
    .name = "mdf_gd",
};

static struct starpu_codelet lbfgs_cl = {
    .cpu_funcs = {mdf_lbfgs_cpu},
    .cpu_funcs_name = {"mdf_lbfgs_cpu"},
#if MDF_CUDA_ENABLED
    .cuda_funcs = {mdf_lbfgs_cuda},
    .cuda_flags = {STARPU_CUDA_ASYNC},
#endif
    .nbuffers = 6,
    .modes = {STARPU_RW, STARPU_R, STARPU_RW, STARPU_RW, STARPU_RW, STARPU_RW},
    .model = &lbfgs_model,
    .name = "mdf_lbfgs",
};

int mdf_insert_fire(starpu_data_handle_t pos, starpu_data_handle_t vel, starpu_data_handle_t force,
                    starpu_data_handle_t sys, starpu_data_handle_t res, starpu_data_handle_t state,
                    const mdf_fire_args *args)
{
    starpu_data_handle_t h[] = {pos, vel, force, sys, res, state};
    return mdf_submit(&fire_cl, args, sizeof *args, 6, h, NULL, "mdf_fire");
}

int mdf_insert_fire2(starpu_data_handle_t pos, starpu_data_handle_t vel, starpu_data_handle_t force,
                     starpu_data_handle_t sys, starpu_data_handle_t res, starpu_data_handle_t state,
                     const mdf_fire2_args *args)
{
    starpu_data_handle_t h[] = {pos, vel, force, sys, res, state};
    return mdf_submit(&fire2_cl, args, sizeof *args, 6, h, NULL, "mdf_fire2");
}

int mdf_insert_gd(starpu_data_handle_t pos, starpu_data_handle_t force, starpu_data_handle_t sys,
                  starpu_data_handle_t res, const mdf_gd_args *args)
{
    starpu_data_handle_t h[] = {pos, force, sys, res};
    return mdf_submit(&gd_cl, args, sizeof *args, 4, h, NULL, "mdf_gd");
}

int mdf_insert_lbfgs(starpu_data_handle_t pos, starpu_data_handle_t force, starpu_data_handle_t sys,
                     starpu_data_handle_t res, starpu_data_handle_t state, starpu_data_handle_t work,
                     const mdf_lbfgs_args *args)
{
    starpu_data_handle_t h[] = {pos, force, sys, res, state, work};
    return mdf_submit(&lbfgs_cl, args, sizeof *args, 6, h, NULL, "mdf_lbfgs");
}

static struct starpu_codelet cell_fire_cl = {
    .cpu_funcs = {mdf_cell_fire_cpu},
    .cpu_funcs_name = {"mdf_cell_fire_cpu"},
#if MDF_CUDA_ENABLED
    .cuda_funcs = {mdf_cell_fire_cuda},
    .cuda_flags = {STARPU_CUDA_ASYNC},
#endif
    .nbuffers = 6,
    .modes = {STARPU_RW, STARPU_RW, STARPU_R, STARPU_RW, STARPU_RW, STARPU_RW},
    .model = &cell_fire_model,
    .name = "mdf_cell_fire",
};

static struct starpu_codelet cell_lbfgs_cl = {
    .cpu_funcs = {mdf_cell_lbfgs_cpu},
    .cpu_funcs_name = {"mdf_cell_lbfgs_cpu"},
#if MDF_CUDA_ENABLED
    .cuda_funcs = {mdf_cell_lbfgs_cuda},
    .cuda_flags = {STARPU_CUDA_ASYNC},
#endif
    .nbuffers = 6,
    .modes = {STARPU_RW, STARPU_R, STARPU_RW, STARPU_RW, STARPU_RW, STARPU_RW},
    .model = &cell_lbfgs_model,
    .name = "mdf_cell_lbfgs",
};

int mdf_insert_cell_fire(starpu_data_handle_t pos, starpu_data_handle_t vel, starpu_data_handle_t force,
                         starpu_data_handle_t sys, starpu_data_handle_t res, starpu_data_handle_t state,
                         const mdf_cell_fire_args *args)
{
    starpu_data_handle_t h[] = {pos, vel, force, sys, res, state};
    return mdf_submit(&cell_fire_cl, args, sizeof *args, 6, h, NULL, "mdf_cell_fire");
}

int mdf_insert_cell_lbfgs(starpu_data_handle_t pos, starpu_data_handle_t force, starpu_data_handle_t sys,
                          starpu_data_handle_t res, starpu_data_handle_t state, starpu_data_handle_t work,
                          const mdf_cell_lbfgs_args *args)
{
    starpu_data_handle_t h[] = {pos, force, sys, res, state, work};
    return mdf_submit(&cell_lbfgs_cl, args, sizeof *args, 6, h, NULL, "mdf_cell_lbfgs");
}
