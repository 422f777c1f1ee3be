/* mdflow — the host-sampling codelet (CPU only: it talks to the host). */
#include <stdlib.h>
#include "sample_codelet.h"
#include "../common/mdf_codelet.h"

MDF_PERFMODEL(sample_model, "mdf_sample");

void mdf_sample_cpu(void *buffers[], void *cl_arg)
{
    const mdf_sample_args *args = (const mdf_sample_args *)cl_arg;
    const mdf_sys_info *sys = (const mdf_sys_info *)STARPU_VECTOR_GET_PTR(buffers[0]);
    const mdf_sys_result *res = (const mdf_sys_result *)STARPU_VECTOR_GET_PTR(buffers[1]);
    mdf_sample_row *rows = malloc(sizeof *rows * (size_t)(args->nsys > 0 ? args->nsys : 1));
    if (!rows) return; /* the callback never fires: the log shows the gap */
    for (int32_t s = 0; s < args->nsys; s++) {
        rows[s] = (mdf_sample_row){.id = sys[s].id, .step = sys[s].step, .status = sys[s].status,
                                   .natoms = sys[s].natoms, .potential = res[s].energy,
                                   .kinetic = res[s].kinetic,
                                   .virial_trace = res[s].virial[0] + res[s].virial[4] + res[s].virial[8]};
    }
    args->fn(args->user, args->sample, args->first_row, rows, args->nsys);
    free(rows);
}

static struct starpu_codelet sample_cl = {
    .cpu_funcs = {mdf_sample_cpu},
    .cpu_funcs_name = {"mdf_sample_cpu"},
    .nbuffers = 2,
    .modes = {STARPU_R, STARPU_R},
    .model = &sample_model,
    .name = "mdf_sample",
};

int mdf_insert_sample(starpu_data_handle_t sys, starpu_data_handle_t res, const mdf_sample_args *args)
{
    starpu_data_handle_t h[] = {sys, res};
    return mdf_submit(&sample_cl, args, sizeof *args, 2, h, NULL, "mdf_sample");
}
