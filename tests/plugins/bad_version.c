/* A plugin built against another API version (test_plugin): its entry
 * point declares version 999, as a plugin compiled against a future
 * mdflow's headers would; mdf_plugin_load must refuse it, naming the file
 * and the fix (rebuild against this mdflow). */
#include "mdflow/extension.h"

mdf_status mdflow_plugin_init(mdf_plugin *p, mdf_error *err);
mdf_status mdflow_plugin_init(mdf_plugin *p, mdf_error *err) { return mdf_plugin_declare(p, 999, err); }
