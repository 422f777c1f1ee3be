/* A plugin whose model takes a name the example plugin already registered
 * ("morse"; test_plugin loads this one second): the load must fail, naming
 * this file, the name, and who has it. */
#include <stdlib.h>
#include "mdflow/extension.h"

static void dup_cpu(void *buffers[], void *cl_arg)
{
    (void)buffers;
    (void)cl_arg;
}

static mdf_status dup_setup(const void *params, const mdf_model_species *species, mdf_model_setup *out,
                            mdf_error *err)
{
    (void)params;
    (void)species;
    (void)out;
    return mdf_error_set(err, MDF_ERR_INVALID, "never built");
}

static const mdf_model_def dup_def = {
    .api_version = MDFLOW_API_VERSION,
    .name = "morse",
    .summary = "a second model named morse",
    .setup = dup_setup,
    .cpu_func = dup_cpu,
};

static mdf_status register_dup(mdf_error *err) { return mdf_register_model(&dup_def, err); }

MDFLOW_PLUGIN(register_dup)
