/* mdflow — convergence codelet and its performance model. */
#include "converge_codelet.h"
#include "../common/mdf_codelet.h"

MDF_PERFMODEL(converge_model, "mdf_converge");

static struct starpu_codelet converge_cl = {
    .cpu_funcs = {mdf_converge_cpu},
    .cpu_funcs_name = {"mdf_converge_cpu"},
#if MDF_CUDA_ENABLED
    .cuda_funcs = {mdf_converge_cuda},
    .cuda_flags = {STARPU_CUDA_ASYNC},
#endif
    .nbuffers = 4,
    .modes = {STARPU_R, STARPU_RW, STARPU_RW, STARPU_RW},
    .model = &converge_model,
    .name = "mdf_converge",
};

int mdf_insert_converge(starpu_data_handle_t force, starpu_data_handle_t sys, starpu_data_handle_t res,
                        starpu_data_handle_t state, const mdf_converge_args *args)
{
    starpu_data_handle_t h[] = {force, sys, res, state};
    return mdf_submit(&converge_cl, args, sizeof *args, 4, h, NULL, "mdf_converge");
}
