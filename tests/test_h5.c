/* The HDF5 layer behind the hdf5 and h5md sinks (io/h5_structures.c,
 * io/h5md.c):
 *  - CSR structure files: round trip through mdf_h5s_read_frame and
 *    mdf_read_hdf5_structures, append/reopen/truncate, and h5py reading
 *    every value (tests/h5_check.py, against a JSON dump of what was
 *    written);
 *  - kill -9 at random moments of a writer (a forked child appending in a
 *    loop and reporting "flushed N"): the file opens (h5py with swmr=True,
 *    and mdflow reopening it to append) and holds every flushed system;
 *  - errors: disk full (RLIMIT_FSIZE in a child), missing folder, a file
 *    that is not HDF5, a file that is not a structure file, no permission
 *    (skipped as root), a full sink;
 *  - H5MD: round trip, truncate, reopen, and MDAnalysis reading positions,
 *    box and times (tests/h5md_check.py), one file per system ("{id}").
 * Every system's values follow a formula of its global index g, so any
 * process can regenerate what was written.
 * Environment: MDF_TEST_SRCDIR (for the scripts), MDF_PYTHON (default
 * /usr/bin/python3); the Python checks are skipped when h5py or MDAnalysis
 * is missing. */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <hdf5.h>

#include "mdflow/frame.h"
#include "mdflow/sink.h"
#include "mdflow/units.h"
#include "../io/h5io.h"
#include "testutil.h"

static char *tmpdir;

static const char *path_of(const char *name)
{
    static char buf[8][512];
    static int slot;
    slot = (slot + 1) % 8;
    snprintf(buf[slot], sizeof buf[slot], "%s/%s", tmpdir, name);
    return buf[slot];
}

/* ---- systems as a formula of their global index g --------------------------------- */

static int64_t natoms_of(int64_t g) { return 2 + g % 4; }

static double val(int64_t g, int64_t i, int what)
{
    /* deterministic, distinct, not round numbers */
    uint64_t s = (uint64_t)g * 1000003u + (uint64_t)i * 7919u + (uint64_t)what * 104729u + 17u;
    return tu_rand(&s) * 2.0 - 1.0;
}

typedef struct snapbuf {
    mdf_snapshot s;
    int64_t *atom_ptr, *id, *step;
    int32_t *status, *flags, *pbc, *numbers;
    double *cell, *energy, *kinetic, *fmax, *virial, *time_fs, *pos, *vel, *frc, *mass;
} snapbuf;

/* System g: id 1000 + g; a cell for g % 3 != 0 (pbc all for g % 3 == 1,
 * x only for g % 3 == 2), none (pbc false) for g % 3 == 0. */
static void fill_system(int64_t g, snapbuf *b, int64_t s, int64_t a0)
{
    int64_t n = natoms_of(g);
    b->id[s] = 1000 + g;
    b->step[s] = 10 * g + 3;
    b->status[s] = (int32_t)(g % 5) - 1;
    b->flags[s] = (int32_t)(g % 7);
    for (int k = 0; k < 3; k++) b->pbc[3 * s + k] = g % 3 == 1 ? 1 : (g % 3 == 2 && k == 0);
    for (int k = 0; k < 9; k++) b->cell[9 * s + k] = g % 3 == 0 ? 0.0 : (k % 4 == 0 ? 8.0 + g : 0.3 * val(g, 0, 20 + k));
    b->energy[s] = -3.0 * n + val(g, 0, 1);
    b->kinetic[s] = 0.5 + fabs(val(g, 0, 2));
    b->fmax[s] = fabs(val(g, 0, 3));
    for (int k = 0; k < 9; k++) b->virial[9 * s + k] = val(g, 0, 40 + k);
    b->time_fs[s] = 0.5 * (double)b->step[s];
    static const int zs[4] = {18, 1, 8, 29};
    for (int64_t i = 0; i < n; i++) {
        int64_t a = a0 + i;
        for (int k = 0; k < 3; k++) {
            b->pos[3 * a + k] = 5.0 * val(g, i, 4 + k) + 2.0 * i;
            b->vel[3 * a + k] = 0.01 * val(g, i, 8 + k);
            b->frc[3 * a + k] = val(g, i, 12 + k);
        }
        b->numbers[a] = zs[(g + i) % 4];
        b->mass[a] = mdf_element_mass(b->numbers[a]) + 0.001 * g;
    }
}

/* Systems g0 .. g0 + n - 1 packed. */
static void build_snap(snapbuf *b, int64_t g0, int64_t n)
{
    memset(b, 0, sizeof *b);
    int64_t na = 0;
    for (int64_t g = g0; g < g0 + n; g++) na += natoms_of(g);
    size_t S = (size_t)(n ? n : 1), A = (size_t)(na ? na : 1);
    b->atom_ptr = calloc(S + 1, sizeof(int64_t));
    b->id = calloc(S, 8);
    b->step = calloc(S, 8);
    b->status = calloc(S, 4);
    b->flags = calloc(S, 4);
    b->pbc = calloc(3 * S, 4);
    b->cell = calloc(9 * S, 8);
    b->energy = calloc(S, 8);
    b->kinetic = calloc(S, 8);
    b->fmax = calloc(S, 8);
    b->virial = calloc(9 * S, 8);
    b->time_fs = calloc(S, 8);
    b->pos = calloc(3 * A, 8);
    b->vel = calloc(3 * A, 8);
    b->frc = calloc(3 * A, 8);
    b->mass = calloc(A, 8);
    b->numbers = calloc(A, 4);
    int64_t a = 0;
    for (int64_t s = 0; s < n; s++) {
        b->atom_ptr[s] = a;
        fill_system(g0 + s, b, s, a);
        a += natoms_of(g0 + s);
    }
    b->atom_ptr[n] = a;
    b->s = (mdf_snapshot){.nsys = n, .natoms = na, .atom_ptr = b->atom_ptr, .id = b->id, .step = b->step,
                          .status = b->status, .flags = b->flags, .pbc = b->pbc, .cell = b->cell,
                          .energy = b->energy, .kinetic = b->kinetic, .fmax = b->fmax, .virial = b->virial,
                          .time_fs = b->time_fs, .positions = b->pos, .velocities = b->vel, .forces = b->frc,
                          .masses = b->mass, .numbers = b->numbers};
}

static void free_snap(snapbuf *b)
{
    free(b->atom_ptr); free(b->id); free(b->step); free(b->status); free(b->flags); free(b->pbc);
    free(b->cell); free(b->energy); free(b->kinetic); free(b->fmax); free(b->virial); free(b->time_fs);
    free(b->pos); free(b->vel); free(b->frc); free(b->mass); free(b->numbers);
}

/* Checks that frame f is system g (velocities to 1e-15 relative: they are
 * stored in Å/fs and converted back). */
static void check_frame(const mdf_frame *f, int64_t g, int with_status)
{
    snapbuf b;
    build_snap(&b, g, 1);
    int64_t n = natoms_of(g);
    assert_int_equal(f->natoms, n);
    for (int64_t i = 0; i < 3 * n; i++) {
        if (f->positions[i] != b.pos[i]) fail_msg("system %lld: position %lld differs", (long long)g, (long long)i);
        if (tu_reldiff(f->velocities[i], b.vel[i], 1e-300) > 1e-14)
            fail_msg("system %lld: velocity %lld: %.17g vs %.17g", (long long)g, (long long)i, f->velocities[i], b.vel[i]);
        if (tu_reldiff(f->forces[i], b.frc[i], 1e-300) > 1e-14)
            fail_msg("system %lld: force %lld differs", (long long)g, (long long)i);
    }
    for (int64_t i = 0; i < n; i++) {
        assert_int_equal(f->numbers[i], b.numbers[i]);
        assert_true(f->masses[i] == b.mass[i]);
    }
    assert_int_equal(f->has_cell, g % 3 != 0);
    if (f->has_cell)
        for (int k = 0; k < 9; k++) assert_true(f->cell[k] == b.cell[k]);
    for (int k = 0; k < 3; k++) assert_int_equal(f->pbc[k], b.pbc[k]);
    assert_true(f->has_energy);
    assert_true(f->energy == b.energy[0]);
    char v[32];
    snprintf(v, sizeof v, "%lld", (long long)b.id[0]);
    assert_non_null(mdf_frame_get_info(f, "mdf_system_id"));
    assert_string_equal(mdf_frame_get_info(f, "mdf_system_id"), v);
    snprintf(v, sizeof v, "%lld", (long long)b.step[0]);
    assert_string_equal(mdf_frame_get_info(f, "mdf_step"), v);
    if (with_status) {
        snprintf(v, sizeof v, "%d", b.status[0]);
        assert_string_equal(mdf_frame_get_info(f, "mdf_status"), v);
    }
    free_snap(&b);
}

/* ---- JSON dumps for the Python checks ------------------------------------------------ */

static void jarr(FILE *fp, const char *key, const double *v, int64_t n, double scale)
{
    fprintf(fp, "\"%s\": [", key);
    for (int64_t i = 0; i < n; i++) fprintf(fp, "%s%.17g", i ? ", " : "", v[i] * scale);
    fprintf(fp, "]");
}

static void jarri(FILE *fp, const char *key, const int32_t *v, int64_t n)
{
    fprintf(fp, "\"%s\": [", key);
    for (int64_t i = 0; i < n; i++) fprintf(fp, "%s%d", i ? ", " : "", v[i]);
    fprintf(fp, "]");
}

/* One JSON object for system g (internal velocities: the script converts). */
static void dump_system(FILE *fp, int64_t g)
{
    snapbuf b;
    build_snap(&b, g, 1);
    int64_t n = natoms_of(g);
    fprintf(fp, "{\"id\": %lld, \"step\": %lld, \"status\": %d, \"flags\": %d, \"time\": %.17g, \"energy\": %.17g, "
                "\"kinetic\": %.17g, \"fmax\": %.17g, \"has_cell\": %d, ",
            (long long)b.id[0], (long long)b.step[0], b.status[0], b.flags[0], b.time_fs[0], b.energy[0], b.kinetic[0],
            b.fmax[0], g % 3 != 0);
    jarr(fp, "cell", b.cell, 9, 1);
    fprintf(fp, ", ");
    jarri(fp, "pbc", b.pbc, 3);
    fprintf(fp, ", ");
    jarr(fp, "virial", b.virial, 9, 1);
    fprintf(fp, ", ");
    jarr(fp, "positions", b.pos, 3 * n, 1);
    fprintf(fp, ", ");
    jarr(fp, "velocities_internal", b.vel, 3 * n, 1);
    fprintf(fp, ", ");
    jarr(fp, "forces", b.frc, 3 * n, 1);
    fprintf(fp, ", ");
    jarr(fp, "masses", b.mass, n, 1);
    fprintf(fp, ", ");
    jarri(fp, "numbers", b.numbers, n);
    fprintf(fp, "}");
    free_snap(&b);
}

/* {"systems": [g for g in gs]} */
static void dump_systems(const char *path, const int64_t *gs, int64_t n)
{
    FILE *fp = fopen(path, "w");
    assert_non_null(fp);
    fprintf(fp, "{\"systems\": [\n");
    for (int64_t i = 0; i < n; i++) {
        if (i) fprintf(fp, ",\n");
        dump_system(fp, gs[i]);
    }
    fprintf(fp, "\n]}\n");
    fclose(fp);
}

static void dump_range(const char *path, int64_t n)
{
    int64_t *gs = malloc(sizeof(int64_t) * (size_t)(n ? n : 1));
    for (int64_t i = 0; i < n; i++) gs[i] = i;
    dump_systems(path, gs, n);
    free(gs);
}

/* Runs argv without a shell; exit status, or -1. */
static int run(char *const argv[])
{
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid < 0) return -1;
    if (pid == 0) {
        execvp(argv[0], argv);
        _exit(127);
    }
    int status;
    if (waitpid(pid, &status, 0) < 0) return -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static const char *python_h5py, *python_mda;

/* Runs tests/<script> with the arguments; 77 means skipped. */
static void run_script(const char *py, const char *script, const char *a, const char *b, const char *c)
{
    if (!py) {
        fprintf(stderr, "  (skipped %s: no Python with %s; set MDF_PYTHON)\n", script,
                strstr(script, "h5md") ? "MDAnalysis" : "h5py");
        return;
    }
    char path[1024];
    snprintf(path, sizeof path, "%s/tests/%s", tu_srcdir(), script);
    char *argv[] = {(char *)py, path, (char *)a, (char *)b, (char *)c, NULL};
    int rc = run(argv);
    if (rc == 77) return;
    if (rc != 0) fail_msg("%s %s %s %s failed (%d)", script, a, b, c ? c : "", rc);
}

/* ---- CSR structures: round trip ------------------------------------------------------ */

static void append_range(mdf_h5s_writer *w, int64_t g0, int64_t n)
{
    /* build a bigger snapshot and append a slice of it, to exercise first */
    snapbuf b;
    build_snap(&b, g0 - 1 >= 0 ? g0 - 1 : g0, n + 2);
    int64_t first = g0 - 1 >= 0 ? 1 : 0;
    TU_CALL(mdf_h5s_append, w, &b.s, first, n);
    free_snap(&b);
}

static void check_file(const char *path, int64_t n)
{
    mdf_frame_list l;
    mdf_frame_list_init(&l);
    TU_CALL(mdf_read_hdf5_structures, path, &l);
    assert_int_equal(l.count, n);
    for (size_t i = 0; i < l.count; i++) check_frame(&l.frames[i], (int64_t)i, 1);
    mdf_frame_list_free(&l);
}

static void test_roundtrip(void **state)
{
    (void)state;
    mdf_h5_options o;
    mdf_h5_options_init(&o);
    assert_int_equal(o.chunk_systems, 256);
    assert_int_equal(o.chunk_atoms, 16384);
    assert_int_equal(o.compression, 0);
    assert_int_equal(o.append, 0);
    assert_int_equal(o.max_systems, 0);
    o.chunk_systems = 3;
    o.chunk_atoms = 5;
    const char *p = path_of("rt.h5");
    mdf_h5s_writer *w;
    TU_CALL(mdf_h5s_open, p, &o, &w);
    assert_int_equal(mdf_h5s_length(w), 0);
    append_range(w, 0, 1);
    append_range(w, 1, 4);
    append_range(w, 5, 2);
    assert_int_equal(mdf_h5s_length(w), 7);
    for (int64_t i = 0; i < 7; i++) {
        mdf_frame f;
        TU_CALL(mdf_h5s_read_frame, w, i, &f);
        check_frame(&f, i, 1);
        mdf_frame_free(&f);
    }
    /* readable by another reader while the writer is open (SWMR) */
    check_file(p, 7);
    TU_CALL(mdf_h5s_close, w);
    check_file(p, 7);
    dump_range(path_of("rt.json"), 7);
    run_script(python_h5py, "h5_check.py", p, path_of("rt.json"), NULL);

    /* compressed */
    o.compression = 4;
    const char *pc = path_of("rtz.h5");
    TU_CALL(mdf_h5s_open, pc, &o, &w);
    append_range(w, 0, 7);
    TU_CALL(mdf_h5s_close, w);
    check_file(pc, 7);
    run_script(python_h5py, "h5_check.py", pc, path_of("rt.json"), NULL);
}

static void test_append_truncate(void **state)
{
    (void)state;
    mdf_h5_options o;
    mdf_h5_options_init(&o);
    const char *p = path_of("app.h5");
    mdf_h5s_writer *w;
    TU_CALL(mdf_h5s_open, p, &o, &w);
    append_range(w, 0, 5);
    TU_CALL(mdf_h5s_close, w);
    o.append = 1;
    TU_CALL(mdf_h5s_open, p, &o, &w);
    assert_int_equal(mdf_h5s_length(w), 5);
    append_range(w, 5, 3);
    assert_int_equal(mdf_h5s_length(w), 8);
    TU_CALL(mdf_h5s_truncate, w, 4);
    assert_int_equal(mdf_h5s_length(w), 4);
    mdf_error err;
    mdf_error_clear(&err);
    assert_int_equal(mdf_h5s_truncate(w, 9, &err), MDF_ERR_INVALID);
    append_range(w, 4, 6);
    TU_CALL(mdf_h5s_close, w);
    check_file(p, 10);
    /* append to a file that does not exist yet: created */
    const char *q = path_of("app_new.h5");
    TU_CALL(mdf_h5s_open, q, &o, &w);
    append_range(w, 0, 2);
    TU_CALL(mdf_h5s_close, w);
    check_file(q, 2);
    /* create (append 0) replaces the file */
    o.append = 0;
    TU_CALL(mdf_h5s_open, p, &o, &w);
    assert_int_equal(mdf_h5s_length(w), 0);
    TU_CALL(mdf_h5s_close, w);
    check_file(p, 0);
    dump_range(path_of("app.json"), 0);
    run_script(python_h5py, "h5_check.py", p, path_of("app.json"), NULL);
}

/* ---- errors --------------------------------------------------------------------------- */

static void expect_open_error(const char *p, int append, mdf_status code, const char *needle)
{
    mdf_h5_options o;
    mdf_h5_options_init(&o);
    o.append = append;
    mdf_h5s_writer *w = NULL;
    mdf_error err;
    mdf_error_clear(&err);
    mdf_status st = mdf_h5s_open(p, &o, &w, &err);
    if (st != code) fail_msg("open '%s': expected %s, got %s: %s", p, mdf_status_name(code), mdf_status_name(st), err.message);
    assert_null(w);
    if (!strstr(err.message, p)) fail_msg("the message does not name the file: %s", err.message);
    if (!strstr(err.message, needle)) fail_msg("the message does not say '%s': %s", needle, err.message);
}

static void test_errors(void **state)
{
    (void)state;
    expect_open_error(path_of("no/such/folder/x.h5"), 0, MDF_ERR_IO, "does not exist");
    expect_open_error(path_of("no/such/folder/x.h5"), 1, MDF_ERR_IO, "does not exist");
    FILE *fp = fopen(path_of("text.h5"), "w");
    fputs("not hdf5\n", fp);
    fclose(fp);
    expect_open_error(path_of("text.h5"), 1, MDF_ERR_PARSE, "not an HDF5 file");
    /* an H5MD file is HDF5 but not a structure file */
    mdf_h5_options o;
    mdf_h5_options_init(&o);
    mdf_h5md_writer *hw;
    TU_CALL(mdf_h5md_open, path_of("traj.h5"), &o, &hw);
    TU_CALL(mdf_h5md_close, hw);
    expect_open_error(path_of("traj.h5"), 1, MDF_ERR_PARSE, "not an mdflow structure file");
    /* reading */
    mdf_frame_list l;
    mdf_frame_list_init(&l);
    mdf_error err;
    mdf_error_clear(&err);
    assert_int_equal(mdf_read_hdf5_structures(path_of("missing.h5"), &l, &err), MDF_ERR_IO);
    assert_non_null(strstr(err.message, "missing.h5"));
    mdf_error_clear(&err);
    assert_int_equal(mdf_read_hdf5_structures(path_of("text.h5"), &l, &err), MDF_ERR_PARSE);
    mdf_error_clear(&err);
    assert_int_equal(mdf_read_hdf5_structures(path_of("traj.h5"), &l, &err), MDF_ERR_PARSE);
    assert_non_null(strstr(err.message, "structures"));
    /* capacity */
    o.max_systems = 3;
    mdf_h5s_writer *w;
    TU_CALL(mdf_h5s_open, path_of("cap.h5"), &o, &w);
    append_range(w, 0, 2);
    snapbuf b;
    build_snap(&b, 2, 2);
    mdf_error_clear(&err);
    assert_int_equal(mdf_h5s_append(w, &b.s, 0, 2, &err), MDF_ERR_IO);
    assert_non_null(strstr(err.message, "full"));
    free_snap(&b);
    TU_CALL(mdf_h5s_close, w);
    check_file(path_of("cap.h5"), 2);
    /* no permission */
    if (geteuid() == 0) {
        fprintf(stderr, "  (no-permission check skipped: running as root, which may write anywhere)\n");
    } else {
        char *ro = strdup(path_of("ro"));
        assert_int_equal(mkdir(ro, 0555), 0);
        char p[600];
        snprintf(p, sizeof p, "%s/x.h5", ro);
        expect_open_error(p, 0, MDF_ERR_IO, "permission");
        chmod(ro, 0755);
        free(ro);
    }
}

/* Disk full: a child writes under a file size limit with SIGXFSZ ignored. */
static void test_disk_full(void **state)
{
    (void)state;
    const char *p = path_of("full.h5");
    int fds[2];
    assert_int_equal(pipe(fds), 0);
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        close(fds[0]);
        signal(SIGXFSZ, SIG_IGN);
        struct rlimit rl = {1024 * 1024, 1024 * 1024};
        setrlimit(RLIMIT_FSIZE, &rl);
        mdf_h5_options o;
        mdf_h5_options_init(&o);
        o.chunk_atoms = 64;
        o.chunk_systems = 8;
        mdf_h5s_writer *w;
        mdf_error err;
        mdf_error_clear(&err);
        FILE *out = fdopen(fds[1], "w");
        if (mdf_h5s_open(p, &o, &w, &err) != MDF_OK) {
            fprintf(out, "open failed: %s\n", err.message);
            fclose(out);
            _exit(2);
        }
        int64_t g = 0;
        for (;;) {
            snapbuf b;
            build_snap(&b, g, 3);
            mdf_status st = mdf_h5s_append(w, &b.s, 0, 3, &err);
            free_snap(&b);
            if (st != MDF_OK) {
                fprintf(out, "error %d %lld %s\n", (int)st, (long long)g, err.message);
                break;
            }
            g += 3;
            if (g > 100000) {
                fprintf(out, "no error\n");
                break;
            }
        }
        mdf_error_clear(&err);
        mdf_status cs = mdf_h5s_close(w, &err);
        fprintf(out, "close %d %s\n", (int)cs, err.message);
        fclose(out);
        _exit(0);
    }
    close(fds[1]);
    FILE *in = fdopen(fds[0], "r");
    char line[2048] = "", line2[2048] = "";
    assert_non_null(fgets(line, sizeof line, in));
    if (!fgets(line2, sizeof line2, in)) line2[0] = '\0';
    fclose(in);
    int status;
    waitpid(pid, &status, 0);
    assert_true(WIFEXITED(status));
    int code;
    long long written;
    if (sscanf(line, "error %d %lld", &code, &written) != 2) fail_msg("writer: %s", line);
    fprintf(stderr, "  disk full after %lld systems: %s  %s", written, strchr(strchr(line + 6, ' ') + 1, ' ') + 1, line2);
    assert_int_equal(code, MDF_ERR_IO);
    assert_non_null(strstr(line, p));
    assert_non_null(strstr(line, "keeps the"));
    assert_true(written > 0);
    /* the earlier systems are intact (the close may have failed) */
    mdf_frame_list l;
    mdf_frame_list_init(&l);
    TU_CALL(mdf_read_hdf5_structures, p, &l);
    assert_true((long long)l.count >= written);
    for (size_t i = 0; i < l.count; i++) check_frame(&l.frames[i], (int64_t)i, 1);
    int64_t n = (int64_t)l.count;
    mdf_frame_list_free(&l);
    dump_range(path_of("full.json"), n);
    run_script(python_h5py, "h5_check.py", p, path_of("full.json"), NULL);
    /* and it can be reopened to append once there is room again */
    mdf_h5_options o;
    mdf_h5_options_init(&o);
    o.append = 1;
    mdf_h5s_writer *w;
    TU_CALL(mdf_h5s_open, p, &o, &w);
    assert_int_equal(mdf_h5s_length(w), n);
    append_range(w, n, 2);
    TU_CALL(mdf_h5s_close, w);
    check_file(p, n + 2);
}

/* ---- kill -9 -------------------------------------------------------------------------- */

/* The child: opens p to append and appends 1-3 systems at a time (following
 * the formula from the file's length), printing "flushed N" after each. */
static void killer_child(const char *p, int fd)
{
    mdf_h5_options o;
    mdf_h5_options_init(&o);
    o.append = 1;
    o.chunk_atoms = 16;
    o.chunk_systems = 4;
    mdf_h5s_writer *w;
    mdf_error err;
    mdf_error_clear(&err);
    if (mdf_h5s_open(p, &o, &w, &err) != MDF_OK) {
        dprintf(fd, "open failed: %s\n", err.message);
        _exit(2);
    }
    int64_t g = mdf_h5s_length(w);
    dprintf(fd, "opened %lld\n", (long long)g);
    for (;;) {
        int64_t c = 1 + g % 3;
        snapbuf b;
        build_snap(&b, g, c);
        if (mdf_h5s_append(w, &b.s, 0, c, &err) != MDF_OK) {
            dprintf(fd, "append failed: %s\n", err.message);
            _exit(3);
        }
        free_snap(&b);
        g += c;
        dprintf(fd, "flushed %lld\n", (long long)g);
    }
}

static void test_kill9(void **state)
{
    (void)state;
    const char *p = path_of("killed.h5");
    uint64_t rng = (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 20);
    fprintf(stderr, "  kill -9 seed %llu\n", (unsigned long long)rng);
    int64_t flushed = 0;
    for (int round = 0; round < 8; round++) {
        int fds[2];
        assert_int_equal(pipe(fds), 0);
        fflush(stdout);
        fflush(stderr);
        pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
            close(fds[0]);
            killer_child(p, fds[1]);
            _exit(0);
        }
        close(fds[1]);
        FILE *in = fdopen(fds[0], "r");
        char line[1024];
        assert_non_null(fgets(line, sizeof line, in));
        long long opened;
        if (sscanf(line, "opened %lld", &opened) != 1) fail_msg("round %d: %s", round, line);
        /* after a kill the file holds at least what was flushed */
        assert_true(opened >= flushed);
        int wait_flushes = 1 + (int)(tu_rand(&rng) * 6);
        long long last = opened;
        for (int k = 0; k < wait_flushes; k++) {
            assert_non_null(fgets(line, sizeof line, in));
            if (sscanf(line, "flushed %lld", &last) != 1) fail_msg("round %d: %s", round, line);
        }
        /* kill at a random moment: right away, or mid-way through later appends */
        useconds_t delay = round % 3 == 0 ? 0 : (useconds_t)(tu_rand(&rng) * 3000);
        if (delay) usleep(delay);
        kill(pid, SIGKILL);
        /* the child may have flushed more before dying */
        while (fgets(line, sizeof line, in)) sscanf(line, "flushed %lld", &last);
        fclose(in);
        int status;
        waitpid(pid, &status, 0);
        assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
        flushed = last;
        /* h5py, SWMR read, on the killed file */
        mdf_frame_list l;
        mdf_frame_list_init(&l);
        TU_CALL(mdf_read_hdf5_structures, p, &l);
        if ((int64_t)l.count < flushed)
            fail_msg("round %d: %zu systems in the file, %lld flushed", round, l.count, (long long)flushed);
        for (size_t i = 0; i < l.count; i++) check_frame(&l.frames[i], (int64_t)i, 1);
        fprintf(stderr, "  round %d: killed after %lld flushed systems (delay %u us), file holds %zu\n", round,
                (long long)flushed, (unsigned)delay, l.count);
        int64_t n = (int64_t)l.count;
        mdf_frame_list_free(&l);
        if (round % 4 == 3) {
            char minn[32];
            snprintf(minn, sizeof minn, "%lld", (long long)flushed);
            dump_range(path_of("killed.json"), n + 3);
            run_script(python_h5py, "h5_check.py", p, path_of("killed.json"), minn);
        }
    }
}

/* ---- H5MD ------------------------------------------------------------------------------ */

/* The trajectory written: frame f (write order) is system 1000 + traj_sys[f]. */
static const int64_t traj_sys[] = {0, 1, 2, 0, 1, 2, 0, 2, 1, 0, 1, 2};
#define NTRAJ ((int64_t)(sizeof traj_sys / sizeof traj_sys[0]))

/* Frame f takes the values of system g = traj_sys[f] + 12 (f + 1): the same
 * residue mod 12 keeps the atom count (g mod 4) and the kind of cell (g mod
 * 3) of system traj_sys[f]. */
static int64_t traj_g(int64_t f)
{
    return traj_sys[f] + 12 * (f + 1);
}

static void traj_snap(snapbuf *b, int64_t f0, int64_t n)
{
    int64_t gs[16];
    int64_t na = 0;
    for (int64_t f = 0; f < n; f++) {
        gs[f] = traj_g(f0 + f);
        na += natoms_of(gs[f]);
    }
    /* build system by system, then pack them with the trajectory's ids */
    memset(b, 0, sizeof *b);
    snapbuf one[16];
    for (int64_t f = 0; f < n; f++) build_snap(&one[f], gs[f], 1);
    size_t S = (size_t)n, A = (size_t)na;
    b->atom_ptr = calloc(S + 1, 8); b->id = calloc(S, 8); b->step = calloc(S, 8); b->status = calloc(S, 4);
    b->flags = calloc(S, 4); b->pbc = calloc(3 * S, 4); b->cell = calloc(9 * S, 8); b->energy = calloc(S, 8);
    b->kinetic = calloc(S, 8); b->fmax = calloc(S, 8); b->virial = calloc(9 * S, 8); b->time_fs = calloc(S, 8);
    b->pos = calloc(3 * A, 8); b->vel = calloc(3 * A, 8); b->frc = calloc(3 * A, 8); b->mass = calloc(A, 8);
    b->numbers = calloc(A, 4);
    int64_t a = 0;
    for (int64_t f = 0; f < n; f++) {
        int64_t m = natoms_of(gs[f]);
        b->atom_ptr[f] = a;
        b->id[f] = 1000 + traj_sys[f0 + f];
        b->step[f] = one[f].step[0];
        b->status[f] = one[f].status[0];
        b->flags[f] = one[f].flags[0];
        memcpy(b->pbc + 3 * f, one[f].pbc, 12);
        memcpy(b->cell + 9 * f, one[f].cell, 72);
        b->energy[f] = one[f].energy[0];
        b->kinetic[f] = one[f].kinetic[0];
        b->fmax[f] = one[f].fmax[0];
        memcpy(b->virial + 9 * f, one[f].virial, 72);
        b->time_fs[f] = one[f].time_fs[0];
        memcpy(b->pos + 3 * a, one[f].pos, 24 * (size_t)m);
        memcpy(b->vel + 3 * a, one[f].vel, 24 * (size_t)m);
        memcpy(b->frc + 3 * a, one[f].frc, 24 * (size_t)m);
        /* species and masses are fixed per particle group: those of the first frame */
        snapbuf first;
        build_snap(&first, traj_g(traj_sys[f0 + f]), 1);
        memcpy(b->mass + a, first.mass, 8 * (size_t)m);
        memcpy(b->numbers + a, first.numbers, 4 * (size_t)m);
        free_snap(&first);
        a += m;
        free_snap(&one[f]);
    }
    b->atom_ptr[n] = a;
    b->s = (mdf_snapshot){.nsys = n, .natoms = na, .atom_ptr = b->atom_ptr, .id = b->id, .step = b->step,
                          .status = b->status, .flags = b->flags, .pbc = b->pbc, .cell = b->cell,
                          .energy = b->energy, .kinetic = b->kinetic, .fmax = b->fmax, .virial = b->virial,
                          .time_fs = b->time_fs, .positions = b->pos, .velocities = b->vel, .forces = b->frc,
                          .masses = b->mass, .numbers = b->numbers};
}

static void check_traj_frame(const mdf_frame *fr, int64_t f)
{
    snapbuf b;
    traj_snap(&b, f, 1);
    int64_t n = b.s.natoms;
    assert_int_equal(fr->natoms, n);
    for (int64_t i = 0; i < 3 * n; i++) {
        assert_true(fr->positions[i] == b.pos[i]);
        assert_true(tu_reldiff(fr->velocities[i], b.vel[i], 1e-300) < 1e-14);
        assert_true(tu_reldiff(fr->forces[i], b.frc[i], 1e-300) < 1e-14);
    }
    for (int64_t i = 0; i < n; i++) {
        assert_int_equal(fr->numbers[i], b.numbers[i]);
        assert_true(fr->masses[i] == b.mass[i]);
    }
    int has_cell = traj_sys[f] % 3 != 0;
    assert_int_equal(fr->has_cell, has_cell);
    if (has_cell)
        for (int k = 0; k < 9; k++) assert_true(fr->cell[k] == b.cell[k]);
    for (int k = 0; k < 3; k++) assert_int_equal(fr->pbc[k], b.pbc[k]);
    assert_true(fr->energy == b.energy[0]);
    char v[32];
    snprintf(v, sizeof v, "%lld", (long long)b.id[0]);
    assert_string_equal(mdf_frame_get_info(fr, "mdf_system_id"), v);
    snprintf(v, sizeof v, "%lld", (long long)b.step[0]);
    assert_string_equal(mdf_frame_get_info(fr, "mdf_step"), v);
    snprintf(v, sizeof v, "%d", b.status[0]);
    assert_string_equal(mdf_frame_get_info(fr, "mdf_status"), v);
    free_snap(&b);
}

/* {"split": 0|1, "path": p, "frames": [{"sys": id, frame values...}]} for
 * frames [0, n) */
static void dump_traj(const char *json, const char *path, int split, int64_t n)
{
    FILE *fp = fopen(json, "w");
    assert_non_null(fp);
    fprintf(fp, "{\"split\": %d, \"path\": \"%s\", \"frames\": [\n", split, path);
    for (int64_t f = 0; f < n; f++) {
        snapbuf b;
        traj_snap(&b, f, 1);
        int64_t m = b.s.natoms;
        fprintf(fp, "%s{\"id\": %lld, \"step\": %lld, \"time\": %.17g, \"energy\": %.17g, \"kinetic\": %.17g, "
                    "\"has_cell\": %d, \"status\": %d, ",
                f ? ",\n" : "", (long long)b.id[0], (long long)b.step[0], b.time_fs[0], b.energy[0], b.kinetic[0],
                traj_sys[f] % 3 != 0, b.status[0]);
        jarr(fp, "cell", b.cell, 9, 1);
        fprintf(fp, ", ");
        jarri(fp, "pbc", b.pbc, 3);
        fprintf(fp, ", ");
        jarr(fp, "positions", b.pos, 3 * m, 1);
        fprintf(fp, ", ");
        jarr(fp, "velocities_internal", b.vel, 3 * m, 1);
        fprintf(fp, ", ");
        jarr(fp, "forces", b.frc, 3 * m, 1);
        fprintf(fp, ", ");
        jarr(fp, "masses", b.mass, m, 1);
        fprintf(fp, ", ");
        jarri(fp, "numbers", b.numbers, m);
        fprintf(fp, "}");
        free_snap(&b);
    }
    fprintf(fp, "\n]}\n");
    fclose(fp);
}

static void h5md_case(const char *path, int split, const char *json)
{
    mdf_h5_options o;
    mdf_h5_options_init(&o);
    o.chunk_atoms = 8;
    mdf_h5md_writer *w;
    TU_CALL(mdf_h5md_open, path, &o, &w);
    snapbuf b;
    traj_snap(&b, 0, 1);
    TU_CALL(mdf_h5md_append, w, &b.s, 0, 1);
    free_snap(&b);
    traj_snap(&b, 1, 5);
    TU_CALL(mdf_h5md_append, w, &b.s, 0, 5);
    free_snap(&b);
    assert_int_equal(mdf_h5md_length(w), 6);
    for (int64_t f = 0; f < 6; f++) {
        mdf_frame fr;
        TU_CALL(mdf_h5md_read_frame, w, f, &fr);
        check_traj_frame(&fr, f);
        mdf_frame_free(&fr);
    }
    TU_CALL(mdf_h5md_close, w);
    /* reopen, append, truncate, append again */
    o.append = 1;
    TU_CALL(mdf_h5md_open, path, &o, &w);
    assert_int_equal(mdf_h5md_length(w), 6);
    traj_snap(&b, 6, 3);
    TU_CALL(mdf_h5md_append, w, &b.s, 0, 3);
    free_snap(&b);
    assert_int_equal(mdf_h5md_length(w), 9);
    TU_CALL(mdf_h5md_truncate, w, 7);
    assert_int_equal(mdf_h5md_length(w), 7);
    traj_snap(&b, 7, NTRAJ - 7);
    TU_CALL(mdf_h5md_append, w, &b.s, 0, NTRAJ - 7);
    free_snap(&b);
    TU_CALL(mdf_h5md_close, w);
    TU_CALL(mdf_h5md_open, path, &o, &w);
    assert_int_equal(mdf_h5md_length(w), NTRAJ);
    for (int64_t f = 0; f < NTRAJ; f++) {
        mdf_frame fr;
        TU_CALL(mdf_h5md_read_frame, w, f, &fr);
        check_traj_frame(&fr, f);
        mdf_frame_free(&fr);
    }
    /* a system with another atom count is refused */
    traj_snap(&b, 0, 1);
    b.s.atom_ptr = (const int64_t[]){0, 1};
    mdf_error err;
    mdf_error_clear(&err);
    assert_int_equal(mdf_h5md_append(w, &b.s, 0, 1, &err), MDF_ERR_INVALID);
    free_snap(&b);
    TU_CALL(mdf_h5md_close, w);
    dump_traj(json, path, split, NTRAJ);
}

/* Writes one frame to pattern, then rewrites /mdflow's version of the file
 * written (path) as 1 (deleted and created again: HDF5 1.10 could not
 * write the attribute in place). */
static void write_layout1(const char *pattern, const char *path, const mdf_h5_options *o)
{
    mdf_h5md_writer *w;
    snapbuf b;
    TU_CALL(mdf_h5md_open, pattern, o, &w);
    traj_snap(&b, 0, 1);
    TU_CALL(mdf_h5md_append, w, &b.s, 0, 1);
    free_snap(&b);
    TU_CALL(mdf_h5md_close, w);
    hid_t f = H5Fopen(path, H5F_ACC_RDWR, H5P_DEFAULT);
    hid_t g = f >= 0 ? H5Gopen2(f, "mdflow", H5P_DEFAULT) : -1;
    hid_t sp = H5Screate(H5S_SCALAR);
    int one = 1;
    hid_t a = g >= 0 && H5Adelete(g, "version") >= 0 ? H5Acreate2(g, "version", H5T_STD_I32LE, sp, H5P_DEFAULT,
                                                                   H5P_DEFAULT)
                                                      : -1;
    if (a < 0 || H5Awrite(a, H5T_NATIVE_INT, &one) < 0) {
        H5Eprint2(H5E_DEFAULT, stderr);
        fail_msg("cannot set /mdflow's version of %s", path);
    }
    H5Aclose(a);
    H5Sclose(sp);
    H5Gclose(g);
    H5Fclose(f);
}

static void test_h5md(void **state)
{
    (void)state;
    h5md_case(path_of("traj_all.h5md"), 0, path_of("traj_all.json"));
    run_script(python_mda, "h5md_check.py", path_of("traj_all.json"), NULL, NULL);
    h5md_case(path_of("traj_{id}.h5md"), 1, path_of("traj_split.json"));
    run_script(python_mda, "h5md_check.py", path_of("traj_split.json"), NULL, NULL);
    /* errors */
    mdf_h5_options o;
    mdf_h5_options_init(&o);
    mdf_h5md_writer *w;
    mdf_error err;
    mdf_error_clear(&err);
    assert_int_equal(mdf_h5md_open(path_of("nodir/t.h5md"), &o, &w, &err), MDF_ERR_IO);
    assert_non_null(strstr(err.message, "does not exist"));
    mdf_error_clear(&err);
    assert_int_equal(mdf_h5md_open(path_of("nodir/t_{id}.h5md"), &o, &w, &err), MDF_ERR_IO);
    o.append = 1;
    /* Appending (--resume) to a {id} pattern none of whose files exist yet
     * is appending to nothing, as for a single file that does not exist (it
     * said "out of memory": glob() found no match). Names with glob
     * characters match only themselves. */
    mdf_error_clear(&err);
    mdf_status st = mdf_h5md_open(path_of("none_yet_{id}.h5md"), &o, &w, &err);
    if (st != MDF_OK) fail_msg("append to a {id} pattern without files: %s", err.message);
    assert_int_equal(mdf_h5md_length(w), 0);
    TU_CALL(mdf_h5md_close, w);
    o.append = 0;
    TU_CALL(mdf_h5md_open, path_of("b[1]_{id}.h5md"), &o, &w);
    snapbuf b;
    traj_snap(&b, 0, 3);
    TU_CALL(mdf_h5md_append, w, &b.s, 0, 3);
    free_snap(&b);
    TU_CALL(mdf_h5md_close, w);
    o.append = 1;
    mdf_error_clear(&err);
    st = mdf_h5md_open(path_of("b[1]_{id}.h5md"), &o, &w, &err);
    if (st != MDF_OK) fail_msg("append to a pattern with glob characters: %s", err.message);
    assert_int_equal(mdf_h5md_length(w), 3);
    TU_CALL(mdf_h5md_close, w);
    mdf_error_clear(&err);
    assert_int_equal(mdf_h5md_open(path_of("text.h5"), &o, &w, &err), MDF_ERR_PARSE);
    /* a structure file is HDF5 but not H5MD */
    mdf_h5s_writer *sw;
    mdf_h5_options so;
    mdf_h5_options_init(&so);
    TU_CALL(mdf_h5s_open, path_of("structures_not_h5md.h5"), &so, &sw);
    TU_CALL(mdf_h5s_close, sw);
    mdf_error_clear(&err);
    assert_int_equal(mdf_h5md_open(path_of("structures_not_h5md.h5"), &o, &w, &err), MDF_ERR_PARSE);
    assert_non_null(strstr(err.message, "not an H5MD file"));
    /* a shared file of mdflow's layout 1 (observables under
     * /observables/system_<id>) is refused on append, not continued in a mix
     * of both layouts; a per-system file of layout 1 (the same as layout 2)
     * is continued */
    o.append = 0;
    write_layout1(path_of("layout1.h5md"), path_of("layout1.h5md"), &o);
    o.append = 1;
    mdf_error_clear(&err);
    assert_int_equal(mdf_h5md_open(path_of("layout1.h5md"), &o, &w, &err), MDF_ERR_PARSE);
    if (!strstr(err.message, "layout version 1")) fail_msg("old layout: %s", err.message);
    o.append = 0;
    char first[64];
    snprintf(first, sizeof first, "layout1_%lld.h5md", (long long)(1000 + traj_sys[0])); /* traj_snap's id */
    write_layout1(path_of("layout1_{id}.h5md"), path_of(first), &o);
    o.append = 1;
    TU_CALL(mdf_h5md_open, path_of("layout1_{id}.h5md"), &o, &w);
    traj_snap(&b, 1, 1);
    TU_CALL(mdf_h5md_append, w, &b.s, 0, 1);
    free_snap(&b);
    TU_CALL(mdf_h5md_close, w);
}

static int setup(void **state)
{
    (void)state;
    tmpdir = tu_tmpdir();
    python_h5py = tu_python_with("h5py");
    python_mda = tu_python_with("MDAnalysis");
    FILE *fp = fopen(path_of("text.h5"), "w");
    fputs("not hdf5\n", fp);
    fclose(fp);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    if (getenv("MDF_KEEP_TMP")) fprintf(stderr, "kept %s\n", tmpdir);
    else tu_remove_tree(tmpdir);
    free(tmpdir);
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_roundtrip), cmocka_unit_test(test_append_truncate), cmocka_unit_test(test_errors),
        cmocka_unit_test(test_disk_full), cmocka_unit_test(test_kill9),       cmocka_unit_test(test_h5md),
    };
    if (getenv("MDF_TEST_FILTER")) cmocka_set_test_filter(getenv("MDF_TEST_FILTER"));
    return cmocka_run_group_tests(tests, setup, teardown);
}
