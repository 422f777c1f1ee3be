/* The plugin's entry point: mdflow calls mdflow_plugin_init (written by
 * MDFLOW_PLUGIN) when it loads the shared object; it declares the API
 * version the plugin was built against, then registers what the plugin
 * defines. A name already taken (by a built-in or another plugin) fails
 * the load, naming this file. */
#include "mdflow/extension.h"
#include "morse.h"
#include "berendsen.h"

static mdf_status register_all(mdf_error *err)
{
    mdf_status st = mdf_register_model(&morse_model_def, err);
    return st != MDF_OK ? st : mdf_register_method(&berendsen_method, err);
}

MDFLOW_PLUGIN(register_all)
