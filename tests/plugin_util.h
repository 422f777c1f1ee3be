/* mdflow tests — what the tests of the example plugin share: where the
 * suite built the plugins, the Morse model by name, and single points. */
#ifndef MDF_TEST_PLUGIN_UTIL_H
#define MDF_TEST_PLUGIN_UTIL_H

#include "testutil.h"
#include "mdflow/extension.h"

/* $MDF_TEST_BUILDDIR/tests/plugins/.libs/NAME.so (a rotating static buffer). */
const char *tu_plugin_path(const char *name);
/* $MDF_TEST_PLUGIN, else the suite's build of examples/plugin. */
const char *tu_example_plugin(void);
/* The example plugin's "morse" with these parameters (the plugin loaded). */
mdf_model *tu_morse_model(double D, double a, double r0, double cutoff, int shift);
/* Energies, forces and virials of the frames at their positions (mdf_md_run
 * of 0 steps, one shard, skin 0.4 Å), as frames in the frames' order. With
 * chunk_atoms > 0 the model work is cut there and some system must be sliced. */
void tu_evaluate(const mdf_frame *frames, size_t n, mdf_model *m, int32_t chunk_atoms, mdf_frame *out);

#endif
