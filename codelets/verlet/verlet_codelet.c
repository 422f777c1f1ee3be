/* mdflow — velocity Verlet codelets and their performance models. */
#include "verlet_codelet.h"
#include "../common/mdf_codelet.h"

MDF_PERFMODEL(vv_pre_model, "mdf_vv_pre");
MDF_PERFMODEL(vv_post_model, "mdf_vv_post");
MDF_PERFMODEL(vv_post_pre_model, "mdf_vv_post_pre");

static struct starpu_codelet vv_pre_cl = {
    .cpu_funcs = {mdf_vv_pre_cpu},
    .cpu_funcs_name = {"mdf_vv_pre_cpu"},
#if MDF_CUDA_ENABLED
    .cuda_funcs = {mdf_vv_pre_cuda},
    .cuda_flags = {STARPU_CUDA_ASYNC},
#endif
    .nbuffers = 5,
    .modes = {STARPU_RW, STARPU_RW, STARPU_R, STARPU_R, STARPU_R},
    .model = &vv_pre_model,
    .name = "mdf_vv_pre",
};

static struct starpu_codelet vv_post_cl = {
    .cpu_funcs = {mdf_vv_post_cpu},
    .cpu_funcs_name = {"mdf_vv_post_cpu"},
#if MDF_CUDA_ENABLED
    .cuda_funcs = {mdf_vv_post_cuda},
    .cuda_flags = {STARPU_CUDA_ASYNC},
#endif
    .nbuffers = 5,
    .modes = {STARPU_RW, STARPU_R, STARPU_R, STARPU_RW, STARPU_RW},
    .model = &vv_post_model,
    .name = "mdf_vv_post",
};

int mdf_insert_vv_pre(starpu_data_handle_t pos, starpu_data_handle_t vel, starpu_data_handle_t force,
                      starpu_data_handle_t atoms, starpu_data_handle_t sys, int64_t work,
                      const mdf_vv_args *args)
{
    mdf_vv_args t = *args;
    t.work = work; /* atoms of the systems it moves */
    starpu_data_handle_t h[] = {pos, vel, force, atoms, sys};
    return mdf_submit(&vv_pre_cl, &t, sizeof t, 5, h, NULL, "mdf_vv_pre");
}

int mdf_insert_vv_post(starpu_data_handle_t vel, starpu_data_handle_t force, starpu_data_handle_t atoms,
                       starpu_data_handle_t sys, starpu_data_handle_t res, int64_t work,
                       const mdf_vv_args *args)
{
    mdf_vv_args t = *args;
    t.work = work; /* atoms of the systems it moves */
    starpu_data_handle_t h[] = {vel, force, atoms, sys, res};
    return mdf_submit(&vv_post_cl, &t, sizeof t, 5, h, NULL, "mdf_vv_post");
}

/* CPU only: the stage fuses the two halves only when no CUDA worker is
 * planned or present. */
static struct starpu_codelet vv_post_pre_cl = {
    .cpu_funcs = {mdf_vv_post_pre_cpu},
    .cpu_funcs_name = {"mdf_vv_post_pre_cpu"},
    .nbuffers = 6,
    .modes = {STARPU_RW, STARPU_RW, STARPU_R, STARPU_R, STARPU_RW, STARPU_RW},
    .model = &vv_post_pre_model,
    .name = "mdf_vv_post_pre",
};

int mdf_insert_vv_post_pre(starpu_data_handle_t pos, starpu_data_handle_t vel, starpu_data_handle_t force,
                           starpu_data_handle_t atoms, starpu_data_handle_t sys, starpu_data_handle_t res,
                           int64_t work, const mdf_vv_args *args)
{
    mdf_vv_args t = *args;
    t.work = work; /* atoms of the systems it moves */
    starpu_data_handle_t h[] = {pos, vel, force, atoms, sys, res};
    return mdf_submit(&vv_post_pre_cl, &t, sizeof t, 6, h, NULL, "mdf_vv_post_pre");
}
