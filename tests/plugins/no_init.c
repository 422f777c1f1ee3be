/* A shared object that is no plugin (test_plugin): it defines a model but
 * exports no mdflow_plugin_init; mdf_plugin_load must refuse it, naming the
 * file and the fix (MDFLOW_PLUGIN). */
#include "mdflow/extension.h"

mdf_status no_init_register(mdf_error *err);
mdf_status no_init_register(mdf_error *err)
{
    (void)err;
    return MDF_OK;
}
