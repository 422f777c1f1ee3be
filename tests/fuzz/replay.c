/* Replays inputs through a fuzz target without libFuzzer: every file named
 * on the command line, and every file in every folder named (one level).
 * Exits 0 when none crashed (a crash aborts the process, as under the
 * fuzzer). Built by the test suite for each target (tests/test_fuzz_replay.sh). */
#include <dirent.h>
#include <sys/stat.h>
#include "fuzz.h"

static int replay_file(const char *path)
{
    FILE *fp = fopen(path, "rb");
    if (!fp) return 0;
    uint8_t *buf = NULL;
    size_t n = 0, cap = 0;
    for (;;) {
        if (n == cap) {
            cap = cap ? 2 * cap : 4096;
            uint8_t *b = realloc(buf, cap);
            if (!b) break;
            buf = b;
        }
        size_t got = fread(buf + n, 1, cap - n, fp);
        if (got == 0) break;
        n += got;
    }
    fclose(fp);
    LLVMFuzzerTestOneInput(buf ? buf : (const uint8_t *)"", n);
    free(buf);
    return 1;
}

int main(int argc, char **argv)
{
    int count = 0;
    for (int i = 1; i < argc; i++) {
        struct stat st;
        if (stat(argv[i], &st) != 0) continue;
        if (!S_ISDIR(st.st_mode)) {
            count += replay_file(argv[i]);
            continue;
        }
        DIR *d = opendir(argv[i]);
        if (!d) continue;
        struct dirent *e;
        while ((e = readdir(d))) {
            if (e->d_name[0] == '.') continue;
            char path[4096];
            snprintf(path, sizeof path, "%s/%s", argv[i], e->d_name);
            if (stat(path, &st) == 0 && S_ISREG(st.st_mode)) count += replay_file(path);
        }
        closedir(d);
    }
    printf("replayed %d inputs\n", count);
    return 0;
}
