/* Cross-checks io/xyz.c against ASE itself (tests/xyz_ase_check.py):
 *  - ASE writes extxyz; mdflow reads it and must hold exactly the values ASE
 *    reads back (reference in a line-based text file the script writes);
 *  - mdflow writes extxyz and a JSON reference; ASE reads the file and must
 *    hold exactly the reference values.
 * Environment: MDF_TEST_SRCDIR (source tree, for tests/xyz_ase_check.py;
 * default "."), MDF_PYTHON (default /usr/bin/python3). Exits 77 (skipped)
 * when that Python cannot import ase. */
#define _XOPEN_SOURCE 700
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "mdflow/frame.h"
#include "mdflow/xyz.h"
#include "testutil.h"

static const char *python;
static char script[4096];
static char tmpdir[256];

/* ------------------------------------------------------------------------ */
/* Helpers                                                                   */

/* Runs argv without a shell (paths may hold any character) and returns its
 * exit status, or -1 when it could not run or was killed. */
static int run(char *const argv[], int quiet)
{
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid < 0) return -1;
    if (pid == 0) {
        if (quiet) {
            int fd = open("/dev/null", O_WRONLY);
            if (fd >= 0) {
                dup2(fd, STDOUT_FILENO);
                dup2(fd, STDERR_FILENO);
            }
        }
        execvp(argv[0], argv);
        _exit(127);
    }
    int status;
    if (waitpid(pid, &status, 0) < 0) return -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static int run_check_quietly(const char *mode, const char *a, const char *b, int quiet)
{
    char *argv[] = {(char *)python, script, (char *)mode, (char *)a, (char *)b, NULL};
    return run(argv, quiet);
}

static int run_check(const char *mode, const char *a, const char *b)
{
    return run_check_quietly(mode, a, b, 0);
}

static const char *path_of(const char *name)
{
    static char buf[4][512];
    static int slot;
    slot = (slot + 1) % 4;
    snprintf(buf[slot], sizeof buf[slot], "%s/%s", tmpdir, name);
    return buf[slot];
}

/* Creates the temporary directory and lets ASE write its file there. */
static int setup(void **state)
{
    (void)state;
    snprintf(tmpdir, sizeof tmpdir, "/tmp/mdf_test_xyz_ase_XXXXXX");
    if (!mkdtemp(tmpdir)) return -1;
    int rc = run_check("write", tmpdir, NULL);
    if (rc != 0) fprintf(stderr, "%s %s write %s failed (%d)\n", python, script, tmpdir, rc);
    return rc == 0 ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    return tu_remove_tree(tmpdir);
}

/* ------------------------------------------------------------------------ */
/* The text reference written by xyz_ase_check.py                            */

typedef struct reference {
    double masses[119];        /* index z; masses[0] unused */
    char symbols[119][4];
    mdf_frame_list frames;
} reference;

/* Parses the numbers after the keyword into a new array of want doubles,
 * or leaves *out NULL for "none". */
static void parse_numbers(char *text, double **out, size_t want)
{
    *out = NULL;
    if (strncmp(text, "none", 4) == 0) return;
    *out = calloc(want ? want : 1, sizeof(double));
    assert_non_null(*out);
    char *save = NULL;
    size_t n = 0;
    for (char *t = strtok_r(text, " \n", &save); t; t = strtok_r(NULL, " \n", &save)) {
        assert_true(n < want);
        char *end;
        (*out)[n++] = strtod(t, &end);
        assert_true(*end == '\0');
    }
    assert_int_equal(n, want);
}

static void load_reference(reference *ref)
{
    memset(ref, 0, sizeof *ref);
    mdf_frame_list_init(&ref->frames);
    FILE *fp = fopen(path_of("ase_reference.txt"), "r");
    assert_non_null(fp);
    char *line = NULL;
    size_t cap = 0;
    mdf_frame f;
    memset(&f, 0, sizeof f);
    while (getline(&line, &cap, fp) > 0) {
        line[strcspn(line, "\n")] = '\0';
        char *rest = strchr(line, ' ');   /* NULL only for "end" */
        if (rest) *rest++ = '\0';
        else rest = line + strlen(line);
        size_t n = (size_t)f.natoms;
        double *v;
        if (strcmp(line, "element_masses") == 0) {
            parse_numbers(rest, &v, 118);
            memcpy(&ref->masses[1], v, 118 * sizeof(double));
            free(v);
        } else if (strcmp(line, "element_symbols") == 0) {
            char *save = NULL;
            int z = 0;
            for (char *t = strtok_r(rest, " ", &save); t && z < 119; t = strtok_r(NULL, " ", &save))
                snprintf(ref->symbols[z++], sizeof ref->symbols[0], "%s", t);
            assert_int_equal(z, 119);
        } else if (strcmp(line, "frames") == 0) {
            /* count only; checked through the frames that follow */
        } else if (strcmp(line, "natoms") == 0) {
            assert_int_equal(mdf_frame_alloc(&f, atoll(rest), 0, 0, 0, NULL), MDF_OK);
        } else if (strcmp(line, "numbers") == 0) {
            char *save = NULL;
            size_t i = 0;
            for (char *t = strtok_r(rest, " ", &save); t; t = strtok_r(NULL, " ", &save))
                f.numbers[i++] = atoi(t);
            assert_int_equal(i, n);
        } else if (strcmp(line, "positions") == 0) {
            free(f.positions);
            parse_numbers(rest, &f.positions, 3 * n);
        } else if (strcmp(line, "cell") == 0) {
            parse_numbers(rest, &v, 9);
            f.has_cell = v != NULL;
            if (v) memcpy(f.cell, v, sizeof f.cell);
            free(v);
        } else if (strcmp(line, "pbc") == 0) {
            assert_int_equal(sscanf(rest, "%d %d %d", &f.pbc[0], &f.pbc[1], &f.pbc[2]), 3);
        } else if (strcmp(line, "velocities") == 0) {
            parse_numbers(rest, &f.velocities, 3 * n);
        } else if (strcmp(line, "forces") == 0) {
            parse_numbers(rest, &f.forces, 3 * n);
        } else if (strcmp(line, "masses") == 0) {
            parse_numbers(rest, &f.masses, n);
        } else if (strcmp(line, "energy") == 0) {
            parse_numbers(rest, &v, 1);
            f.has_energy = v != NULL;
            if (v) f.energy = v[0];
            free(v);
        } else if (strcmp(line, "info") == 0) {
            char *value = strchr(rest, ' ');
            assert_non_null(value);
            *value++ = '\0';
            assert_int_equal(mdf_frame_set_info(&f, rest, value, NULL), MDF_OK);
        } else if (strcmp(line, "end") == 0) {
            assert_int_equal(mdf_frame_list_push(&ref->frames, &f, NULL), MDF_OK);
        } else {
            fail_msg("unknown reference line '%s'", line);
        }
    }
    free(line);
    fclose(fp);
}

static void assert_doubles_equal(const char *what, const double *a, const double *b, size_t n)
{
    if ((a == NULL) != (b == NULL)) fail_msg("%s: present on one side only", what);
    if (!a) return;
    for (size_t i = 0; i < n; i++)
        if (memcmp(&a[i], &b[i], sizeof a[i]) != 0)
            fail_msg("%s[%zu]: %.17g, expected %.17g", what, i, a[i], b[i]);
}

/* Every value bit for bit; info compared by key. */
static void assert_frame_matches(const mdf_frame *got, const mdf_frame *want)
{
    size_t n = (size_t)want->natoms;
    assert_int_equal(got->natoms, want->natoms);
    for (size_t i = 0; i < n; i++) assert_int_equal(got->numbers[i], want->numbers[i]);
    assert_doubles_equal("positions", got->positions, want->positions, 3 * n);
    assert_doubles_equal("velocities", got->velocities, want->velocities, 3 * n);
    assert_doubles_equal("forces", got->forces, want->forces, 3 * n);
    assert_doubles_equal("masses", got->masses, want->masses, n);
    assert_int_equal(got->has_cell, want->has_cell);
    if (want->has_cell) assert_doubles_equal("cell", got->cell, want->cell, 9);
    for (int k = 0; k < 3; k++) assert_int_equal(got->pbc[k], want->pbc[k]);
    assert_int_equal(got->has_energy, want->has_energy);
    if (want->has_energy) assert_doubles_equal("energy", &got->energy, &want->energy, 1);
    assert_int_equal(got->ninfo, want->ninfo);
    for (size_t k = 0; k < want->ninfo; k++) {
        const char *v = mdf_frame_get_info(got, want->info[k].key);
        if (!v) fail_msg("info key '%s' missing", want->info[k].key);
        assert_string_equal(v, want->info[k].value);
    }
}

/* ------------------------------------------------------------------------ */
/* JSON reference written by mdflow for the script's "read" mode             */

static void json_string(FILE *fp, const char *s)
{
    fputc('"', fp);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\') fprintf(fp, "\\%c", c);
        else if (c < 0x20) fprintf(fp, "\\u%04x", c);
        else fputc(c, fp);
    }
    fputc('"', fp);
}

static void json_doubles(FILE *fp, const double *v, size_t n)
{
    if (!v) {
        fputs("null", fp);
        return;
    }
    fputc('[', fp);
    for (size_t i = 0; i < n; i++) fprintf(fp, "%s%.17g", i ? ", " : "", v[i]);
    fputc(']', fp);
}

static void write_json_reference(const char *path, const mdf_frame *frames, size_t nframes)
{
    FILE *fp = fopen(path, "w");
    assert_non_null(fp);
    fputs("{\"frames\": [", fp);
    for (size_t i = 0; i < nframes; i++) {
        const mdf_frame *f = &frames[i];
        size_t n = (size_t)f->natoms;
        fprintf(fp, "%s\n {\"natoms\": %zu, \"numbers\": [", i ? "," : "", n);
        for (size_t a = 0; a < n; a++) fprintf(fp, "%s%d", a ? ", " : "", (int)f->numbers[a]);
        fputs("],\n  \"positions\": ", fp);
        json_doubles(fp, f->positions, 3 * n);
        fputs(",\n  \"cell\": ", fp);
        json_doubles(fp, f->has_cell ? f->cell : NULL, 9);
        fprintf(fp, ",\n  \"pbc\": [%s, %s, %s]", f->pbc[0] ? "true" : "false",
                f->pbc[1] ? "true" : "false", f->pbc[2] ? "true" : "false");
        fputs(",\n  \"velocities\": ", fp);
        json_doubles(fp, f->velocities, 3 * n);
        fputs(",\n  \"forces\": ", fp);
        json_doubles(fp, f->forces, 3 * n);
        fputs(",\n  \"masses\": ", fp);
        json_doubles(fp, f->masses, n);
        fputs(",\n  \"energy\": ", fp);
        if (f->has_energy) fprintf(fp, "%.17g", f->energy);
        else fputs("null", fp);
        fputs(",\n  \"info\": {", fp);
        for (size_t k = 0; k < f->ninfo; k++) {
            fputs(k ? ", " : "", fp);
            json_string(fp, f->info[k].key);
            fputs(": ", fp);
            json_string(fp, f->info[k].value);
        }
        fputs("},\n  \"extra\": {", fp);
        for (size_t c = 0; c < f->nextra; c++) {
            const mdf_extra_column *col = &f->extra[c];
            fprintf(fp, "%s\"%s\": {\"type\": \"%c\", \"values\": [", c ? ", " : "", col->name,
                    col->type);
            for (size_t t = 0; t < n * (size_t)col->ncols; t++) {
                fputs(t ? ", " : "", fp);
                json_string(fp, col->tokens[t]);
            }
            fputs("]}", fp);
        }
        fputs("}}", fp);
    }
    fputs("\n]}\n", fp);
    assert_int_equal(fclose(fp), 0);
}

static void add_extra(mdf_frame *f, const char *name, char type, const char *const *tokens)
{
    mdf_extra_column *grown = realloc(f->extra, (f->nextra + 1) * sizeof *grown);
    assert_non_null(grown);
    f->extra = grown;
    mdf_extra_column *c = &f->extra[f->nextra++];
    c->name = strdup(name);
    c->type = type;
    c->ncols = 1;
    c->tokens = calloc((size_t)f->natoms, sizeof(char *));
    assert_non_null(c->tokens);
    for (int64_t i = 0; i < f->natoms; i++) c->tokens[i] = strdup(tokens[i]);
}

/* Frames that exercise everything the writer emits. */
static void build_frames(mdf_frame frames[2])
{
    mdf_frame *f = &frames[0];
    assert_int_equal(mdf_frame_alloc(f, 6, 1, 1, 1, NULL), MDF_OK);
    const int32_t z[6] = {14, 14, 8, 8, 29, 1};
    double cell[9] = {5.1, 0.0, 0.0, 0.7, 5.3, 0.0, 0.4, -0.3, 5.7 + 1.0 / 3.0};
    memcpy(f->cell, cell, sizeof cell);
    f->has_cell = 1;
    f->pbc[0] = f->pbc[1] = 1;
    for (int i = 0; i < 6; i++) {
        f->numbers[i] = z[i];
        f->masses[i] = mdf_element_mass(z[i]) * (i == 5 ? 2.0 : 1.0) + (i == 1 ? 1e-9 : 0.0);
        for (int k = 0; k < 3; k++) {
            f->positions[3 * i + k] = sin(1.0 + i + 0.37 * k) * 3.0 + 2.5;
            f->velocities[3 * i + k] = cos(2.0 * i + k) * 1e-2 / 3.0;
            f->forces[3 * i + k] = exp(0.3 * i - k) * (k == 1 ? -1.0 : 1.0);
        }
    }
    f->energy = -123.45678901234567;
    f->has_energy = 1;
    assert_int_equal(mdf_frame_set_info(f, "note", "hello world", NULL), MDF_OK);
    assert_int_equal(mdf_frame_set_info(f, "temperature", "300.25", NULL), MDF_OK);
    assert_int_equal(mdf_frame_set_info(f, "step", "42", NULL), MDF_OK);
    assert_int_equal(mdf_frame_set_info(f, "quoted", "say \"hi\" a=b back\\slash {x} [y]", NULL),
                     MDF_OK);
    assert_int_equal(mdf_frame_set_info(f, "empty", "", NULL), MDF_OK);
    assert_int_equal(mdf_frame_set_info(f, "flag", "T", NULL), MDF_OK);
    const char *tags[6] = {"0", "1", "1", "2", "3", "5"};
    const char *labels[6] = {"a", "b", "c", "d", "e", "f"};
    add_extra(f, "tags", 'I', tags);
    add_extra(f, "label", 'S', labels);

    f = &frames[1];
    assert_int_equal(mdf_frame_alloc(f, 3, 0, 0, 0, NULL), MDF_OK);
    const double pos[9] = {0.1, -0.0, 1e-300, 1.0 / 3.0, 2.0 / 3.0, -7.25, 123456.789, 1e-7, 5.0};
    memcpy(f->positions, pos, sizeof pos);
    f->numbers[0] = 8;
    f->numbers[1] = 1;
    f->numbers[2] = 1;
}

/* ------------------------------------------------------------------------ */
/* Tests                                                                     */

static void test_element_table_matches_ase(void **state)
{
    (void)state;
    reference ref;
    load_reference(&ref);
    for (int z = 1; z <= 118; z++) {
        if (memcmp(&ref.masses[z], &(double){mdf_element_mass(z)}, sizeof(double)) != 0)
            fail_msg("mass of Z=%d: %.17g, ASE has %.17g", z, mdf_element_mass(z), ref.masses[z]);
    }
    for (int z = 0; z <= 118; z++) {
        assert_string_equal(mdf_element_symbol(z), ref.symbols[z]);
        assert_int_equal(mdf_element_number(ref.symbols[z]), z);
    }
    mdf_frame_list_free(&ref.frames);
}

static void test_read_ase_written(void **state)
{
    (void)state;
    reference ref;
    load_reference(&ref);
    assert_int_equal(ref.frames.count, 2);
    mdf_frame_list l;
    mdf_frame_list_init(&l);
    mdf_error err;
    mdf_error_clear(&err);
    mdf_status st = mdf_xyz_read(path_of("ase_written.xyz"), &l, &err);
    if (st) fail_msg("%s", err.message);
    assert_int_equal(l.count, ref.frames.count);
    for (size_t i = 0; i < l.count; i++) assert_frame_matches(&l.frames[i], &ref.frames.frames[i]);
    /* The periodic frame carried momenta: they arrive as velocities. */
    assert_non_null(l.frames[0].velocities);
    assert_null(l.frames[0].masses);
    mdf_frame_list_free(&l);
    mdf_frame_list_free(&ref.frames);
}

static void test_ase_reads_rewritten_ase_file(void **state)
{
    (void)state;
    mdf_frame_list l;
    mdf_frame_list_init(&l);
    mdf_error err;
    mdf_error_clear(&err);
    assert_int_equal(mdf_xyz_read(path_of("ase_written.xyz"), &l, &err), MDF_OK);
    const char *out = path_of("rewritten.xyz");
    assert_int_equal(mdf_xyz_write(out, l.frames, l.count, 0, &err), MDF_OK);
    assert_int_equal(run_check("read", out, path_of("ase_reference.json")), 0);
    mdf_frame_list_free(&l);
}

static void test_ase_reads_ours(void **state)
{
    (void)state;
    mdf_frame frames[2];
    build_frames(frames);
    mdf_error err;
    mdf_error_clear(&err);
    const char *xyz = path_of("ours.xyz");
    const char *json = path_of("ours.json");
    mdf_status st = mdf_xyz_write(xyz, frames, 2, 0, &err);
    if (st) fail_msg("%s", err.message);
    write_json_reference(json, frames, 2);
    assert_int_equal(run_check("read", xyz, json), 0);
    /* Appending a frame: ASE must see three. */
    assert_int_equal(mdf_xyz_write(xyz, &frames[1], 1, 1, &err), MDF_OK);
    mdf_frame three[3] = {frames[0], frames[1], frames[1]};
    write_json_reference(json, three, 3);
    assert_int_equal(run_check("read", xyz, json), 0);
    for (int i = 0; i < 2; i++) mdf_frame_free(&frames[i]);
}

/* The checker must notice a one-ulp difference, or the tests above prove
 * nothing. */
static void test_checker_detects_one_ulp(void **state)
{
    (void)state;
    mdf_frame frames[2];
    build_frames(frames);
    mdf_error err;
    mdf_error_clear(&err);
    const char *xyz = path_of("ulp.xyz");
    const char *json = path_of("ulp.json");
    assert_int_equal(mdf_xyz_write(xyz, frames, 2, 0, &err), MDF_OK);
    frames[0].positions[4] = nextafter(frames[0].positions[4], INFINITY);
    write_json_reference(json, frames, 2);
    /* Quiet: the mismatch report it prints is expected here. */
    assert_int_equal(run_check_quietly("read", xyz, json, 1), 1);
    for (int i = 0; i < 2; i++) mdf_frame_free(&frames[i]);
}

int main(void)
{
    python = getenv("MDF_PYTHON");
    if (!python || !python[0]) python = "/usr/bin/python3";
    const char *srcdir = getenv("MDF_TEST_SRCDIR");
    if (!srcdir || !srcdir[0]) srcdir = ".";
    snprintf(script, sizeof script, "%s/tests/xyz_ase_check.py", srcdir);

    char *probe[] = {(char *)python, "-c", "import ase.io", NULL};
    if (run(probe, 1) != 0) {
        fprintf(stderr, "SKIP: %s cannot import ase (install python3-ase or set MDF_PYTHON)\n",
                python);
        return 77;
    }
    if (access(script, R_OK) != 0) {
        fprintf(stderr, "ERROR: %s not found: set MDF_TEST_SRCDIR to the source tree\n", script);
        return 99;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_element_table_matches_ase),
        cmocka_unit_test(test_read_ase_written),
        cmocka_unit_test(test_ase_reads_rewritten_ase_file),
        cmocka_unit_test(test_ase_reads_ours),
        cmocka_unit_test(test_checker_detects_one_ulp),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
