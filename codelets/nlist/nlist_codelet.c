/* mdflow — neighbour-list codelets and their performance models. */
#include <errno.h>
#include "nlist_codelet.h"
#include "../common/mdf_codelet.h"

MDF_PERFMODEL(nl_bin_model, "mdf_nl_bin");
MDF_PERFMODEL(nl_build_model, "mdf_nl_build");
MDF_PERFMODEL(nl_update_model, "mdf_nl_update");

static struct starpu_codelet nl_bin_cl = {
    .cpu_funcs = {mdf_nl_bin_cpu},
    .cpu_funcs_name = {"mdf_nl_bin_cpu"},
#if MDF_CUDA_ENABLED
    .cuda_funcs = {mdf_nl_bin_cuda},
    .cuda_flags = {STARPU_CUDA_ASYNC},
#endif
    .nbuffers = 3,
    .modes = {STARPU_R, STARPU_R, STARPU_RW},
    .model = &nl_bin_model,
    .name = "mdf_nl_bin",
};

static struct starpu_codelet nl_build_cl = {
    .cpu_funcs = {mdf_nl_build_cpu},
    .cpu_funcs_name = {"mdf_nl_build_cpu"},
#if MDF_CUDA_ENABLED
    .cuda_funcs = {mdf_nl_build_cuda},
    .cuda_flags = {STARPU_CUDA_ASYNC},
#endif
    .nbuffers = 5,
    .modes = {STARPU_R, STARPU_R, STARPU_R, STARPU_R, STARPU_RW},
    .model = &nl_build_model,
    .name = "mdf_nl_build",
};

static struct starpu_codelet nl_update_cl = {
    .cpu_funcs = {mdf_nl_update_cpu},
    .cpu_funcs_name = {"mdf_nl_update_cpu"},
#if MDF_CUDA_ENABLED
    .cuda_funcs = {mdf_nl_update_cuda},
    .cuda_flags = {STARPU_CUDA_ASYNC},
#endif
    .nbuffers = 5,
    .modes = {STARPU_R, STARPU_R, STARPU_R, STARPU_RW, STARPU_RW},
    .model = &nl_update_model,
    .name = "mdf_nl_update",
};

int mdf_insert_nl_update(starpu_data_handle_t pos, starpu_data_handle_t atoms, starpu_data_handle_t sys,
                         starpu_data_handle_t bins, starpu_data_handle_t list, const mdf_nl_update_args *args)
{
    starpu_data_handle_t h[] = {pos, atoms, sys, bins, list};
    return mdf_submit(&nl_update_cl, args, sizeof *args, 5, h, NULL, "mdf_nl_update");
}

int mdf_insert_nl_bin(starpu_data_handle_t pos, starpu_data_handle_t sys, starpu_data_handle_t bins,
                      const mdf_nl_bin_args *args)
{
    starpu_data_handle_t h[] = {pos, sys, bins};
    return mdf_submit(&nl_bin_cl, args, sizeof *args, 3, h, NULL, "mdf_nl_bin");
}

int mdf_insert_nl_bin_builds(starpu_data_handle_t pos, starpu_data_handle_t atoms, starpu_data_handle_t sys,
                             starpu_data_handle_t bins, const starpu_data_handle_t *lists,
                             const mdf_nl_bin_args *bin, const mdf_nl_build_args *builds, int nchunks)
{
    /* The builds are made first so that the binning can be told where
     * their work goes; they are submitted after it (data order). */
    if (nchunks > MDF_REDUCE_MAX_CHUNKS) return -EINVAL;
    struct starpu_task *tasks[MDF_REDUCE_MAX_CHUNKS];
    mdf_nl_bin_args b = *bin;
    b.nbuilds = nchunks;
    int ret = 0, made = 0;
    for (; made < nchunks; made++) {
        starpu_data_handle_t h[] = {pos, atoms, sys, bins, lists[made]};
        tasks[made] = mdf_task_new(&nl_build_cl, &builds[made], sizeof builds[made], 5, h, NULL, "mdf_nl_build");
        if (!tasks[made]) {
            ret = -ENOMEM;
            break;
        }
        b.build_work[made] = &((mdf_nl_build_args *)tasks[made]->cl_arg)->work;
        b.chunks[made] = builds[made].chunk;
    }
    if (ret == 0) ret = mdf_insert_nl_bin(pos, sys, bins, &b);
    for (int q = 0; q < made; q++) {
        if (ret == 0) ret = mdf_task_submit(tasks[q]);
        else mdf_task_drop(tasks[q]);
    }
    return ret;
}

int mdf_insert_nl_build(starpu_data_handle_t pos, starpu_data_handle_t atoms, starpu_data_handle_t sys,
                        starpu_data_handle_t bins, starpu_data_handle_t list,
                        const mdf_nl_build_args *args)
{
    starpu_data_handle_t h[] = {pos, atoms, sys, bins, list};
    return mdf_submit(&nl_build_cl, args, sizeof *args, 5, h, NULL, "mdf_nl_build");
}
