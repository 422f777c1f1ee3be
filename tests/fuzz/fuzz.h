/* mdflow fuzz targets — what they share.
 *
 * Each target defines LLVMFuzzerTestOneInput. scripts/fuzz.sh links it with
 * libFuzzer (clang -fsanitize=fuzzer,address,undefined); the test suite links
 * it with replay.c, which feeds it the seed corpus and every input a fuzzer
 * ever crashed on (tests/fuzz/corpus/, tests/fuzz/regressions/), so a known
 * crash fails `make check` on every build. */
#ifndef MDF_FUZZ_H
#define MDF_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "mdflow/mdflow.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A failed read must say why: an error without a message is a finding. */
static inline void fuzz_check_error(mdf_status st, const mdf_error *err)
{
    if (getenv("MDF_FUZZ_VERBOSE")) fprintf(stderr, "fuzz: %s: %s\n", mdf_status_name(st), err->message);
    if (st != MDF_OK && err->message[0] == '\0') {
        fprintf(stderr, "fuzz: error %d (%s) without a message\n", (int)st, mdf_status_name(st));
        abort();
    }
}

/* The scratch file of this process for readers that take a path: one path
 * per process and suffix, rewritten for every input. */
static inline const char *fuzz_path(const char *suffix)
{
    static char path[256];
    const char *dir = getenv("TMPDIR");
    snprintf(path, sizeof path, "%s/mdflow-fuzz-%ld%s", dir && *dir ? dir : "/tmp", (long)getpid(), suffix);
    return path;
}

/* The input written to fuzz_path(suffix); NULL when it cannot be. */
static inline const char *fuzz_file(const uint8_t *data, size_t size, const char *suffix)
{
    const char *path = fuzz_path(suffix);
    FILE *fp = fopen(path, "wb");
    if (!fp) return NULL;
    int ok = fwrite(data, 1, size, fp) == size;
    ok &= fclose(fp) == 0;
    return ok ? path : NULL;
}

#endif
