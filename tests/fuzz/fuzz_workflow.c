/* Fuzz target: the YAML workflow loader of `mdflow run` (tools/workflow.c). */
#include "fuzz.h"
#include "../../tools/workflow.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *path = fuzz_file(data, size, ".yaml");
    if (!path) return 0;
    static mdf_workflow wf; /* large: not on the stack */
    memset(&wf, 0, sizeof wf);
    mdf_error err;
    mdf_error_clear(&err);
    fuzz_check_error(wf_load(path, &wf, &err), &err);
    unlink(path);
    return 0;
}
