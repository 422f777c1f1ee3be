/* Fuzz target: the extended XYZ reader (io/xyz.c), from a memory stream. */
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    FILE *fp = fmemopen((void *)data, size, "r");
    if (!fp) return 0;
    mdf_frame_list frames;
    mdf_frame_list_init(&frames);
    mdf_error err;
    mdf_error_clear(&err);
    fuzz_check_error(mdf_xyz_read_stream(fp, "fuzz.xyz", &frames, &err), &err);
    mdf_frame_list_free(&frames);
    fclose(fp);
    return 0;
}
