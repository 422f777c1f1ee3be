/* mdflow — codelets of the built-in hooks and their performance models. */
#include "hooks_codelet.h"
#include "../common/mdf_codelet.h"

MDF_PERFMODEL(nan_check_model, "mdf_hook_nan_check");
MDF_PERFMODEL(force_clamp_model, "mdf_hook_force_clamp");
MDF_PERFMODEL(freeze_model, "mdf_hook_freeze");
MDF_PERFMODEL(wrap_model, "mdf_hook_wrap");

static struct starpu_codelet nan_check_cl = {
    .cpu_funcs = {mdf_hook_nan_check_cpu},
    .cpu_funcs_name = {"mdf_hook_nan_check_cpu"},
#if MDF_CUDA_ENABLED
    .cuda_funcs = {mdf_hook_nan_check_cuda},
    .cuda_flags = {STARPU_CUDA_ASYNC},
#endif
    .nbuffers = 5,
    .modes = {STARPU_R, STARPU_R, STARPU_R, STARPU_RW, STARPU_R},
    .model = &nan_check_model,
    .name = "mdf_hook_nan_check",
};

static struct starpu_codelet force_clamp_cl = {
    .cpu_funcs = {mdf_hook_force_clamp_cpu},
    .cpu_funcs_name = {"mdf_hook_force_clamp_cpu"},
#if MDF_CUDA_ENABLED
    .cuda_funcs = {mdf_hook_force_clamp_cuda},
    .cuda_flags = {STARPU_CUDA_ASYNC},
#endif
    .nbuffers = 2,
    .modes = {STARPU_RW, STARPU_R},
    .model = &force_clamp_model,
    .name = "mdf_hook_force_clamp",
};

static struct starpu_codelet freeze_cl = {
    .cpu_funcs = {mdf_hook_freeze_cpu},
    .cpu_funcs_name = {"mdf_hook_freeze_cpu"},
#if MDF_CUDA_ENABLED
    .cuda_funcs = {mdf_hook_freeze_cuda},
    .cuda_flags = {STARPU_CUDA_ASYNC},
#endif
    .nbuffers = 4,
    .modes = {STARPU_RW, STARPU_RW, STARPU_R, STARPU_R},
    .model = &freeze_model,
    .name = "mdf_hook_freeze",
};

static struct starpu_codelet wrap_cl = {
    .cpu_funcs = {mdf_hook_wrap_cpu},
    .cpu_funcs_name = {"mdf_hook_wrap_cpu"},
#if MDF_CUDA_ENABLED
    .cuda_funcs = {mdf_hook_wrap_cuda},
    .cuda_flags = {STARPU_CUDA_ASYNC},
#endif
    .nbuffers = 2,
    .modes = {STARPU_RW, STARPU_R},
    .model = &wrap_model,
    .name = "mdf_hook_wrap",
};

int mdf_insert_hook_nan_check(starpu_data_handle_t pos, starpu_data_handle_t vel, starpu_data_handle_t force,
                              starpu_data_handle_t sys, starpu_data_handle_t res, const mdf_hooks_args *args)
{
    starpu_data_handle_t h[] = {pos, vel, force, sys, res};
    return mdf_submit(&nan_check_cl, args, sizeof *args, 5, h, NULL, "mdf_hook_nan_check");
}

int mdf_insert_hook_force_clamp(starpu_data_handle_t force, starpu_data_handle_t sys, const mdf_hooks_args *args)
{
    starpu_data_handle_t h[] = {force, sys};
    return mdf_submit(&force_clamp_cl, args, sizeof *args, 2, h, NULL, "mdf_hook_force_clamp");
}

int mdf_insert_hook_freeze(starpu_data_handle_t force, starpu_data_handle_t vel, starpu_data_handle_t atoms,
                           starpu_data_handle_t sys, const mdf_hooks_args *args)
{
    starpu_data_handle_t h[] = {force, vel, atoms, sys};
    return mdf_submit(&freeze_cl, args, sizeof *args, 4, h, NULL, "mdf_hook_freeze");
}

int mdf_insert_hook_wrap(starpu_data_handle_t pos, starpu_data_handle_t sys, const mdf_hooks_args *args)
{
    starpu_data_handle_t h[] = {pos, sys};
    return mdf_submit(&wrap_cl, args, sizeof *args, 2, h, NULL, "mdf_hook_wrap");
}
