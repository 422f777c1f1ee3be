/* The example plugin's Morse model alone (examples/plugin/morse*.c), for
 * test_plugin while the method half of the extension API is not in the
 * library yet. */
#include "mdflow/extension.h"
#include "../../examples/plugin/morse.h"

static mdf_status register_morse(mdf_error *err) { return mdf_register_model(&morse_model_def, err); }

MDFLOW_PLUGIN(register_morse)
