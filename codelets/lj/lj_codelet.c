/* mdflow — Lennard-Jones codelet and its performance model. */
#include "lj_codelet.h"
#include "../common/mdf_codelet.h"

MDF_PERFMODEL(lj_model, "mdf_lj");

static struct starpu_codelet lj_cl = {
    .cpu_funcs = {mdf_lj_cpu},
    .cpu_funcs_name = {"mdf_lj_cpu"},
#if MDF_CUDA_ENABLED
    .cuda_funcs = {mdf_lj_cuda},
    .cuda_flags = {STARPU_CUDA_ASYNC},
#endif
    .nbuffers = 8,
    .modes = {STARPU_R, STARPU_R, STARPU_R, STARPU_R, STARPU_R, STARPU_RW, STARPU_RW, STARPU_R},
    .model = &lj_model,
    .name = "mdf_lj",
};

int mdf_insert_lj(starpu_data_handle_t pos, starpu_data_handle_t atoms, starpu_data_handle_t sys,
                  starpu_data_handle_t list, starpu_data_handle_t bins, starpu_data_handle_t forces,
                  starpu_data_handle_t results, starpu_data_handle_t params, const mdf_lj_args *args)
{
    starpu_data_handle_t h[] = {pos, atoms, sys, list, bins, forces, results, params};
    return mdf_submit(&lj_cl, args, sizeof *args, 8, h, NULL, "mdf_lj");
}
