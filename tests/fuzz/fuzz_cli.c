/* Fuzz target: the option parser of `mdflow md` and `mdflow relax`
 * (tools/mdflow.c, compiled in with its main renamed). The input is split
 * into arguments at NUL and newline bytes; its first byte picks the command. */
#define main mdflow_main
#include "../../tools/mdflow.c"
#undef main
#include "fuzz.h"

#define FUZZ_MAX_ARGS 64

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0) return 0;
    char *buf = malloc(size);
    if (!buf) return 0;
    memcpy(buf, data + 1, size - 1);
    buf[size - 1] = '\0';
    char *argv[FUZZ_MAX_ARGS + 2];
    int argc = 0;
    argv[argc++] = (data[0] & 1) ? "relax" : "md";
    char *p = buf, *end = buf + size - 1;
    while (p < end && argc < FUZZ_MAX_ARGS) {
        argv[argc++] = p;
        while (p < end && *p != '\0' && *p != '\n') p++;
        *p++ = '\0';
    }
    argv[argc] = NULL;
    md_options o;
    md_options_init(&o, (data[0] & 1) ? CMD_RELAX : CMD_MD);
    mdf_error err;
    mdf_error_clear(&err);
    int r = parse_options(argc, argv, &o, &err);
    if (r != -1) fuzz_check_error((mdf_status)r, &err);
    free(buf);
    return 0;
}
