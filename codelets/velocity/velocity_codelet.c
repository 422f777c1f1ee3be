/* mdflow — velocity codelets and their performance models. */
#include "velocity_codelet.h"
#include "../common/mdf_codelet.h"

MDF_PERFMODEL(velocity_model, "mdf_velocity");
MDF_PERFMODEL(kinetic_model, "mdf_kinetic");

static struct starpu_codelet velocity_cl = {
    .cpu_funcs = {mdf_velocity_cpu},
    .cpu_funcs_name = {"mdf_velocity_cpu"},
#if MDF_CUDA_ENABLED
    .cuda_funcs = {mdf_velocity_cuda},
    .cuda_flags = {STARPU_CUDA_ASYNC},
#endif
    .nbuffers = 4,
    .modes = {STARPU_RW, STARPU_R, STARPU_R, STARPU_RW},
    .model = &velocity_model,
    .name = "mdf_velocity",
};

static struct starpu_codelet kinetic_cl = {
    .cpu_funcs = {mdf_kinetic_cpu},
    .cpu_funcs_name = {"mdf_kinetic_cpu"},
#if MDF_CUDA_ENABLED
    .cuda_funcs = {mdf_kinetic_cuda},
    .cuda_flags = {STARPU_CUDA_ASYNC},
#endif
    .nbuffers = 4,
    .modes = {STARPU_R, STARPU_R, STARPU_R, STARPU_RW},
    .model = &kinetic_model,
    .name = "mdf_kinetic",
};

int mdf_insert_velocity(starpu_data_handle_t vel, starpu_data_handle_t atoms, starpu_data_handle_t sys,
                        starpu_data_handle_t res, const mdf_velocity_args *args)
{
    starpu_data_handle_t h[] = {vel, atoms, sys, res};
    return mdf_submit(&velocity_cl, args, sizeof *args, 4, h, NULL, "mdf_velocity");
}

int mdf_insert_kinetic(starpu_data_handle_t vel, starpu_data_handle_t atoms, starpu_data_handle_t sys,
                       starpu_data_handle_t res, const mdf_kinetic_args *args)
{
    starpu_data_handle_t h[] = {vel, atoms, sys, res};
    return mdf_submit(&kinetic_cl, args, sizeof *args, 4, h, NULL, "mdf_kinetic");
}
