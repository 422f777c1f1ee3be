/* mdflow tests — shared helpers of the example plugin's tests. */
#include <stdio.h>
#include <stdlib.h>
#include "plugin_util.h"

const char *tu_plugin_path(const char *name)
{
    static char buf[4][1200];
    static int slot;
    slot = (slot + 1) % 4;
    const char *b = getenv("MDF_TEST_BUILDDIR");
    snprintf(buf[slot], sizeof buf[slot], "%s/tests/plugins/.libs/%s.so", b ? b : ".", name);
    return buf[slot];
}

const char *tu_example_plugin(void)
{
    const char *p = getenv("MDF_TEST_PLUGIN");
    return p && *p ? p : tu_plugin_path("mdflow-example-plugin");
}

mdf_model *tu_morse_model(double D, double a, double r0, double cutoff, int shift)
{
    mdf_model_config *c = NULL;
    TU_CALL(mdf_model_config_create, "morse", &c);
    const char *names[4] = {"D", "a", "r0", "cutoff"};
    double values[4] = {D, a, r0, cutoff};
    for (int k = 0; k < 4; k++) {
        char text[40];
        snprintf(text, sizeof text, "%.17g", values[k]);
        TU_CALL(mdf_model_config_set, c, names[k], text);
    }
    TU_CALL(mdf_model_config_set, c, "shift", shift ? "yes" : "no");
    mdf_model *m = NULL;
    TU_CALL(mdf_model_create, c, &m);
    mdf_model_config_destroy(c);
    return m;
}

void tu_evaluate(const mdf_frame *frames, size_t n, mdf_model *m, int32_t chunk_atoms, mdf_frame *out)
{
    mdf_md_report rep;
    mdf_batch *b = tu_single_point(frames, n, m, chunk_atoms, 0.4, &rep);
    if (chunk_atoms) assert_true(rep.nchunks > (int)n); /* some system was sliced */
    for (size_t i = 0; i < n; i++) TU_CALL(mdf_batch_get_frame, b, i, &out[i]);
    mdf_batch_destroy(b);
}
