/* mdflow tests — checkpoints and resume of inflight runs.
 *
 * The reference is the definition of resuming: a run interrupted after a
 * checkpoint and resumed ends in exactly the state of the same run left
 * alone (same checkpoint cadence), bit for bit: every system's final frame,
 * the whole batch of the checkpoint at exit (positions, velocities, forces,
 * per-system info, results, integrator state, L-BFGS workspaces), and the
 * CSV logs byte for byte. The stage is a fused L-BFGS relaxation (history in
 * the workspace) + Langevin MD (random numbers), over 12 clusters with a
 * budget that forces refills. Interruptions: max_steps on a checkpoint step
 * (exit checkpoint), and a failure right after a periodic checkpoint (the
 * in-process stand-in for a kill; tests/test_resume.sh kills mdflow). Also:
 * resuming with another dataset, stage or a damaged file is refused with an
 * error naming the file and what differs, and a failed write keeps the
 * previous checkpoint. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "testutil.h"
#include <unistd.h>
#include <hdf5.h>
#include "../stages/checkpoint.h"
#include "../codelets/common/mdf_kernel_common.h"

#define NDATA 12
#define MD_STEPS 30
#define MAX_ATOMS 130
#define REFILL 5
#define EVERY 10

static mdf_frame dataset_frame(int i) { return tu_mixed_cluster(i, 0.08, 300 + (uint64_t)i); }

static mdf_model *argon(void)
{
    mdf_lj_config lj = tu_argon(6.5, 1);
    mdf_model *m = NULL;
    TU_CALL(mdf_model_create_lj, &lj, &m);
    return m;
}

/* L-BFGS to fmax 0.01 (0 -> 1), then Langevin at temperature T for
 * MD_STEPS steps (1 -> 2), each part with a CSV log under dir. */
/* friction > 0: the Langevin stage's own (else its default). */
static mdf_stage *relax_then_md(const char *dir, double temperature, double friction)
{
    mdf_stage_config sc;
    mdf_stage_config_init(&sc);
    sc.integrator = "lbfgs";
    sc.max_steps = 2000;
    mdf_stage *relax = NULL, *md = NULL, *fused = NULL;
    TU_CALL(mdf_stage_create, &sc, &relax);
    TU_CALL(mdf_stage_add_criterion, relax, MDF_CRITERION_FMAX, 0.01);
    mdf_stage_config_init(&sc);
    sc.integrator = "langevin";
    sc.status = 1;
    sc.converged_status = 2;
    sc.params.dt_fs = 5.0;
    sc.params.temperature_K = temperature;
    sc.params.seed = 4;
    sc.entry_temperature_K = 25.0;
    if (friction > 0.0) tu_param(&sc.method_params, "friction_per_fs", friction);
    TU_CALL(mdf_stage_create, &sc, &md);
    TU_CALL(mdf_stage_add_criterion, md, MDF_CRITERION_STEPS, MD_STEPS);
    TU_CALL(mdf_fuse, relax, md, &fused);
    for (int p = 0; dir && p < 2; p++) {
        char path[512];
        snprintf(path, sizeof path, "%s/log.%d.csv", dir, p);
        mdf_hook *h = NULL;
        TU_CALL(mdf_hook_create_log, path, 3, &h);
        TU_CALL(mdf_stage_add_part_hook, fused, p, h);
    }
    return fused;
}

/* What on_exit received, by id. */
typedef struct received {
    pthread_mutex_t lock;
    int seen[NDATA];
    int stop_after;            /* > 0: stop the run at that hand-out */
    int count;
    mdf_frame frame[NDATA];
    mdf_system_view view[NDATA];
} received;

static int on_exit_cb(void *user, const mdf_frame *f, const mdf_system_view *v)
{
    received *r = (received *)user;
    assert_true(v->id >= 0 && v->id < NDATA);
    pthread_mutex_lock(&r->lock);
    r->count++;
    int stop = r->stop_after > 0 && r->count >= r->stop_after;
    if (r->seen[v->id]++) mdf_frame_free(&r->frame[v->id]);
    mdf_error err;
    assert_int_equal(mdf_frame_copy(&r->frame[v->id], f, &err), MDF_OK);
    r->view[v->id] = *v;
    pthread_mutex_unlock(&r->lock);
    return stop;
}

static void received_init(received *r)
{
    memset(r, 0, sizeof *r);
    pthread_mutex_init(&r->lock, NULL);
}

static void received_free(received *r)
{
    for (int i = 0; i < NDATA; i++)
        if (r->seen[i]) mdf_frame_free(&r->frame[i]);
    pthread_mutex_destroy(&r->lock);
}

typedef struct run_opts {
    const char *ckpt;
    int64_t every;
    int resume;
    int64_t max_steps;
    int ndata;              /* systems of the dataset (NDATA unless a test changes it) */
    double temperature;
    double friction;        /* the Langevin stage's (0: its default) */
    const char *logdir;
} run_opts;

static mdf_status run(const run_opts *o, received *rec, mdf_stage_report *rep, mdf_error *err)
{
    mdf_frame frames[NDATA];
    int n = o->ndata ? o->ndata : NDATA;
    for (int i = 0; i < n; i++) frames[i] = dataset_frame(i);
    mdf_sampler_config sc;
    mdf_sampler_config_init(&sc);
    sc.max_atoms = MAX_ATOMS;
    mdf_sampler *sampler = NULL;
    TU_CALL(mdf_sampler_create, frames, (size_t)n, &sc, &sampler);
    mdf_model *m = argon();
    mdf_stage *s = relax_then_md(o->logdir, o->temperature > 0 ? o->temperature : 25.0, o->friction);
    TU_CALL(mdf_stage_set_max_steps, s, o->max_steps);
    mdf_inflight_config ic;
    mdf_inflight_config_init(&ic);
    ic.sampler = sampler;
    ic.refill_interval = REFILL;
    ic.on_exit = on_exit_cb;
    ic.user = rec;
    ic.checkpoint_path = o->ckpt;
    ic.checkpoint_every = o->every;
    ic.resume = o->resume;
    mdf_status st = mdf_stage_run_inflight(s, m, &ic, rep, err);
    mdf_stage_destroy(s);
    mdf_model_destroy(m);
    mdf_sampler_destroy(sampler);
    for (int i = 0; i < n; i++) mdf_frame_free(&frames[i]);
    return st;
}

static char *path_in(const char *dir, const char *name)
{
    size_t n = strlen(dir) + strlen(name) + 2;
    char *p = malloc(n);
    snprintf(p, n, "%s/%s", dir, name);
    return p;
}

static unsigned char *slurp(const char *path, size_t *n)
{
    FILE *fp = fopen(path, "rb");
    if (!fp) return NULL;
    fseek(fp, 0, SEEK_END);
    long len = ftell(fp);
    fseek(fp, 0, SEEK_SET);
    unsigned char *p = malloc((size_t)len + 1);
    *n = fread(p, 1, (size_t)len, fp);
    fclose(fp);
    return p;
}

static void assert_same_file(const char *a, const char *b)
{
    size_t na = 0, nb = 0;
    unsigned char *pa = slurp(a, &na), *pb = slurp(b, &nb);
    if (!pa || !pb) fail_msg("missing file %s or %s", a, b);
    if (na != nb || memcmp(pa, pb, na) != 0) fail_msg("%s and %s differ (%zu and %zu bytes)", a, b, na, nb);
    free(pa);
    free(pb);
}

/* Every system once, finished, with identical frames (bit for bit). */
static void assert_same_systems(const received *a, const received *b)
{
    for (int i = 0; i < NDATA; i++) {
        assert_int_equal(a->seen[i], 1);
        assert_int_equal(b->seen[i], 1);
        const mdf_frame *x = &a->frame[i], *y = &b->frame[i];
        assert_int_equal(a->view[i].status, 2);
        assert_int_equal(b->view[i].status, 2);
        assert_int_equal(a->view[i].step, b->view[i].step);
        assert_int_equal(x->natoms, y->natoms);
        size_t n3 = 3 * (size_t)x->natoms;
        if (memcmp(x->positions, y->positions, sizeof(double) * n3) || memcmp(x->velocities, y->velocities, sizeof(double) * n3) ||
            memcmp(x->forces, y->forces, sizeof(double) * n3))
            fail_msg("system %d: positions, velocities or forces differ from the uninterrupted run", i);
        assert_memory_equal(&x->energy, &y->energy, sizeof x->energy);
        const char *keys[] = {"virial", "kinetic_energy", "mdf_step", "mdf_status"};
        for (int k = 0; k < 4; k++) {
            /* "virial" is there only when computed at the final positions: in both or in neither */
            const char *vx = mdf_frame_get_info(x, keys[k]), *vy = mdf_frame_get_info(y, keys[k]);
            if (!vx != !vy) fail_msg("system %d: key %s in one run only", i, keys[k]);
            if (vx) assert_string_equal(vx, vy);
            else assert_string_equal(keys[k], "virial");
        }
    }
}

/* The batch of two checkpoints: every array equal, byte for byte. */
static void assert_same_batch(const char *a, const char *b)
{
    mdf_ckpt *ca = NULL, *cb = NULL;
    TU_CALL(mdf_ckpt_read, a, &ca);
    TU_CALL(mdf_ckpt_read, b, &cb);
    const char *names[] = {"batch.layout", "batch.pos", "batch.vel", "batch.force", "batch.atoms", "batch.sys",
                           "batch.res", "batch.state", "batch.meta", "sampler.taken", "inflight.counters",
                           "work.0.0", "inflight.exits"};
    size_t elem[] = {8, 8, 8, 8, sizeof(mdf_atom_info), sizeof(mdf_sys_info), sizeof(mdf_sys_result),
                     sizeof(mdf_sys_state), 1, 1, 8, 1, 1};
    for (size_t k = 0; k < sizeof names / sizeof names[0]; k++) {
        size_t na = 0, nb = 0;
        const void *pa = mdf_ckpt_get(ca, names[k], elem[k], (size_t)-1, &na, NULL);
        const void *pb = mdf_ckpt_get(cb, names[k], elem[k], (size_t)-1, &nb, NULL);
        if (!pa || !pb) fail_msg("checkpoint array %s missing", names[k]);
        if (na != nb || memcmp(pa, pb, na * elem[k]) != 0)
            fail_msg("checkpoint array %s differs between the uninterrupted and the resumed run", names[k]);
    }
    mdf_ckpt_free(ca);
    mdf_ckpt_free(cb);
}

static int file_exists(const char *p)
{
    struct stat sb;
    return stat(p, &sb) == 0;
}

static void resume_matches(const char *sched, int ncpus)
{
    tu_start(sched, ncpus, 0);
    char *dir = tu_tmpdir();
    char *da = path_in(dir, "a"), *db = path_in(dir, "b"), *dc = path_in(dir, "c");
    mkdir(da, 0700);
    mkdir(db, 0700);
    mkdir(dc, 0700);
    char *ca = path_in(da, "run.h5"), *cb = path_in(db, "run.h5"), *cc = path_in(dc, "run.h5");
    mdf_error err;
    mdf_error_clear(&err);
    static received a, b, c;
    mdf_stage_report ra, rb, rc;

    /* A: left alone. */
    received_init(&a);
    run_opts oa = {.ckpt = ca, .every = EVERY, .max_steps = 5000, .logdir = da};
    if (run(&oa, &a, &ra, &err) != MDF_OK) fail_msg("%s", err.message);
    assert_int_equal(ra.converged, NDATA);
    assert_true(ra.steps > 4 * EVERY);
    assert_false(file_exists(path_in(da, "run.h5.tmp")));

    /* B: stopped by max_steps on a checkpoint step, then resumed (twice: a
     * resume of a resume). */
    received_init(&b);
    run_opts ob = {.ckpt = cb, .every = EVERY, .max_steps = 2 * EVERY, .logdir = db};
    if (run(&ob, &b, &rb, &err) != MDF_OK) fail_msg("%s", err.message);
    assert_true(rb.converged < NDATA);
    received_free(&b);
    received_init(&b);
    ob.max_steps = 7 * EVERY;
    ob.resume = 1;
    if (run(&ob, &b, &rb, &err) != MDF_OK) fail_msg("%s", err.message);
    printf("  stopped at step %lld with %lld of %d systems finished\n", (long long)rb.steps, (long long)rb.converged, NDATA);
    assert_true(rb.converged > 0 && rb.converged < NDATA); /* some were handed out before: replayed next */
    received_free(&b);
    received_init(&b);
    ob.max_steps = 5000;
    if (run(&ob, &b, &rb, &err) != MDF_OK) fail_msg("%s", err.message);
    assert_int_equal(rb.converged, NDATA);
    assert_int_equal(rb.steps, ra.steps);
    assert_same_systems(&a, &b);
    assert_same_batch(ca, cb);

    /* C: the run fails right after the checkpoint of step 3*EVERY + 1 (the
     * receiver stops it at the refill that follows: a kill's stand-in, which
     * writes no checkpoint at exit), then resumes. */
    received_init(&c);
    c.stop_after = (int)(a.count > 0 ? 3 : 1);
    run_opts oc = {.ckpt = cc, .every = EVERY, .max_steps = 5000, .logdir = dc};
    assert_int_equal(run(&oc, &c, &rc, &err), MDF_ERR_IO);
    received_free(&c);
    received_init(&c);
    oc.resume = 1;
    if (run(&oc, &c, &rc, &err) != MDF_OK) fail_msg("%s", err.message);
    assert_same_systems(&a, &c);
    assert_same_batch(ca, cc);

    /* The logs of both parts, byte for byte. */
    for (int p = 0; p < 2; p++) {
        char name[32];
        snprintf(name, sizeof name, "log.%d.csv", p);
        char *la = path_in(da, name), *lb = path_in(db, name), *lc = path_in(dc, name);
        assert_same_file(la, lb);
        assert_same_file(la, lc);
        free(la);
        free(lb);
        free(lc);
    }
    printf("  %s, %d CPU workers: %lld steps; resumed runs (max_steps stop, failure after a checkpoint) equal the "
           "uninterrupted one bit for bit\n", sched, ncpus, (long long)ra.steps);
    received_free(&a);
    received_free(&b);
    received_free(&c);
    free(ca);
    free(cb);
    free(cc);
    free(da);
    free(db);
    free(dc);
    tu_remove_tree(dir);
    free(dir);
    tu_stop();
}

static void test_resume_bitwise_eager_1cpu(void **state)
{
    (void)state;
    resume_matches("eager", 1);
}

static void test_resume_bitwise_eager_2cpu(void **state)
{
    (void)state;
    resume_matches("eager", 2);
}

static void test_resume_bitwise_dmda_2cpu(void **state)
{
    (void)state;
    resume_matches("dmda", 2);
}

static void expect_error(const run_opts *o, mdf_status code, const char *f1, const char *f2)
{
    received r;
    received_init(&r);
    mdf_error err;
    mdf_error_clear(&err);
    mdf_stage_report rep;
    mdf_status st = run(o, &r, &rep, &err);
    if (st != code) fail_msg("expected error %d, got %d: %s", (int)code, (int)st, err.message);
    if (f1 && !strstr(err.message, f1)) fail_msg("'%s' not in: %s", f1, err.message);
    if (f2 && !strstr(err.message, f2)) fail_msg("'%s' not in: %s", f2, err.message);
    printf("  refused: %s\n", err.message);
    received_free(&r);
}

static void test_refusals_and_atomic_writes(void **state)
{
    (void)state;
    tu_start("eager", 2, 0);
    char *dir = tu_tmpdir();
    char *ck = path_in(dir, "run.h5"), *tmp = path_in(dir, "run.h5.tmp");
    received r;
    received_init(&r);
    mdf_error err;
    mdf_error_clear(&err);
    mdf_stage_report rep;

    /* No checkpoint yet. */
    run_opts o = {.ckpt = ck, .every = EVERY, .max_steps = 2 * EVERY, .resume = 1};
    expect_error(&o, MDF_ERR_INVALID, ck, "no checkpoint");
    o.resume = 0;
    if (run(&o, &r, &rep, &err) != MDF_OK) fail_msg("%s", err.message);
    received_free(&r);

    /* Another dataset (one system fewer), another stage, another cadence. */
    o.resume = 1;
    o.ndata = NDATA - 1;
    expect_error(&o, MDF_ERR_INVALID, "another dataset", "12 systems");
    o.ndata = 0;
    o.temperature = 30.0;
    expect_error(&o, MDF_ERR_INVALID, "another workflow", "lbfgs + langevin");
    o.temperature = 0.0;
    /* A method's own parameter is part of the stage too (its block is in
     * the fingerprint). */
    o.friction = 0.02;
    expect_error(&o, MDF_ERR_INVALID, "another workflow", "with other parameters");
    o.friction = 0.0;
    o.every = 2 * EVERY;
    expect_error(&o, MDF_ERR_INVALID, "checkpoint interval", ck);
    o.every = EVERY;

    /* A failed write (the temporary file cannot be created) keeps the
     * previous checkpoint, byte for byte, and the error names the file. */
    size_t n0 = 0, n1 = 0;
    unsigned char *before = slurp(ck, &n0);
    assert_int_equal(mkdir(tmp, 0700), 0);
    o.resume = 0;
    expect_error(&o, MDF_ERR_IO, "cannot write checkpoint", ck);
    unsigned char *after = slurp(ck, &n1);
    assert_int_equal(n0, n1);
    assert_memory_equal(before, after, n0);
    rmdir(tmp);
    free(after);

    /* A damaged shard layout asking for terabytes of batch: refused as
     * inconsistent with the arrays stored beside it, before allocating
     * (it said "no memory for a batch"). */
    {
        mdf_ckpt *c = NULL;
        TU_CALL(mdf_ckpt_read, ck, &c);
        int64_t layout[8] = {1 << 25, 1 << 20, 0, 0, (1 << 25) - 1, 1 << 20, 0, 0}; /* 64 M atoms, within the batch limit */
        TU_CALL(mdf_ckpt_put_i64, c, "batch.layout", layout, 8);
        TU_CALL(mdf_ckpt_write, c);
        mdf_ckpt_free(c);
        o.resume = 1;
        expect_error(&o, MDF_ERR_PARSE, ck, "shard layout");
    }

    /* Damaged files: garbage, a truncated checkpoint, an HDF5 file that is not one. */
    FILE *fp = fopen(ck, "wb");
    fputs("not a checkpoint\n", fp);
    fclose(fp);
    o.resume = 1;
    expect_error(&o, MDF_ERR_PARSE, ck, "not an HDF5 file");
    fp = fopen(ck, "wb");
    fwrite(before, 1, n0 / 2, fp);
    fclose(fp);
    expect_error(&o, MDF_ERR_PARSE, ck, NULL);
    mdf_ckpt *other = mdf_ckpt_new(ck);
    int64_t v = 1;
    TU_CALL(mdf_ckpt_put_i64, other, "x", &v, 1);
    TU_CALL(mdf_ckpt_write, other);
    mdf_ckpt_free(other);
    expect_error(&o, MDF_ERR_PARSE, ck, "no array");
    free(before);
    free(ck);
    free(tmp);
    tu_remove_tree(dir);
    free(dir);
    tu_stop();
}

/* A checkpoint whose array claims far more bytes than the file holds (an
 * HDF5 dataset's extent is only a header: a terabyte that was never written
 * costs a few bytes): the reader refuses it as damaged, naming the file and
 * the array, instead of asking malloc for the terabyte ("no memory", or an
 * out-of-memory stop under AddressSanitizer). */
static void test_array_larger_than_file_refused(void **state)
{
    (void)state;
    char *dir = tu_tmpdir();
    char *ck = path_in(dir, "huge.h5");
    mdf_ckpt *c = mdf_ckpt_new(ck);
    int64_t v = 1;
    TU_CALL(mdf_ckpt_put_i64, c, "x", &v, 1);
    TU_CALL(mdf_ckpt_write, c);
    mdf_ckpt_free(c);
    hid_t file = H5Fopen(ck, H5F_ACC_RDWR, H5P_DEFAULT);
    assert_true(file >= 0);
    hsize_t dims[1] = {(hsize_t)1 << 40};
    hid_t space = H5Screate_simple(1, dims, NULL);
    hid_t ds = H5Dcreate2(file, "huge", H5T_NATIVE_UCHAR, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    assert_true(ds >= 0);
    hid_t as = H5Screate(H5S_SCALAR);
    hid_t at = H5Acreate2(ds, "elem_size", H5T_NATIVE_INT64, as, H5P_DEFAULT, H5P_DEFAULT);
    int64_t elem = 8;
    assert_true(at >= 0 && H5Awrite(at, H5T_NATIVE_INT64, &elem) >= 0);
    H5Aclose(at);
    H5Sclose(as);
    H5Dclose(ds);
    H5Sclose(space);
    H5Fclose(file);
    mdf_error err;
    mdf_error_clear(&err);
    mdf_ckpt *back = NULL;
    mdf_status st = mdf_ckpt_read(ck, &back, &err);
    print_message("status %d: %s\n", st, err.message);
    assert_int_equal(st, MDF_ERR_PARSE);
    assert_null(back);
    assert_non_null(strstr(err.message, ck));
    assert_non_null(strstr(err.message, "'huge'"));
    assert_non_null(strstr(err.message, "1099511627776 bytes"));
    tu_remove_tree(dir);
    free(ck);
    free(dir);
}

/* ---- checksums ------------------------------------------------------------------------ */

static void put_file(const char *path, const unsigned char *p, size_t n)
{
    FILE *fp = fopen(path, "wb");
    assert_non_null(fp);
    assert_int_equal(fwrite(p, 1, n, fp), n);
    assert_int_equal(fclose(fp), 0);
}

/* Where the bytes of `pat` (n bytes) start in a buffer; -1 if absent. */
static long find_bytes(const unsigned char *hay, size_t nh, const unsigned char *pat, size_t n)
{
    for (size_t i = 0; i + n <= nh; i++)
        if (!memcmp(hay + i, pat, n)) return (long)i;
    return -1;
}

/* CRC32C's standard check value, then a checkpoint file whose bytes are
 * changed one at a time: every change inside the stored arrays is refused
 * with an error naming the file (before, 4 of 20 single-byte changes
 * resumed silently into another trajectory), and a change anywhere in the
 * file is either refused or left the arrays as written (a byte HDF5 does
 * not read). */
static void test_checksum_refuses_damage(void **state)
{
    (void)state;
    assert_int_equal(mdf_crc32c(0, "123456789", 9), 0xE3069283u);
    assert_int_equal(mdf_crc32c(mdf_crc32c(0, "1234", 4), "56789", 5), 0xE3069283u);
    char *dir = tu_tmpdir();
    char *ck = path_in(dir, "sum.h5");
    enum { N = 4096 };
    double *pos = malloc(N * sizeof *pos);
    int64_t meta[5] = {1, 2, 3, 4, 5};
    for (int i = 0; i < N; i++) pos[i] = 1.0 + 1e-3 * i;
    mdf_ckpt *c = mdf_ckpt_new(ck);
    TU_CALL(mdf_ckpt_put, c, "batch.pos", pos, sizeof(double), N);
    TU_CALL(mdf_ckpt_put_i64, c, "run.meta", meta, 5);
    TU_CALL(mdf_ckpt_write, c);
    mdf_ckpt_free(c);
    size_t n = 0;
    unsigned char *good = slurp(ck, &n);
    mdf_ckpt *back = NULL;
    TU_CALL(mdf_ckpt_read, ck, &back);
    mdf_ckpt_free(back);
    long at = find_bytes(good, n, (const unsigned char *)pos, N * sizeof *pos);
    assert_true(at > 0);
    unsigned char *bad = malloc(n);
    int refused = 0, same = 0;
    uint64_t rng = 12345;
    for (int k = 0; k < 200; k++) {
        rng = rng * 6364136223846793005ull + 1442695040888963407ull;
        /* the first 40 changes inside the positions, the rest anywhere */
        size_t off = k < 40 ? (size_t)at + (size_t)(rng >> 33) % (N * sizeof *pos) : (size_t)(rng >> 33) % n;
        memcpy(bad, good, n);
        bad[off] ^= (unsigned char)(1u << (k % 8));
        put_file(ck, bad, n);
        mdf_error err;
        mdf_error_clear(&err);
        mdf_ckpt *r = NULL;
        mdf_status st = mdf_ckpt_read(ck, &r, &err);
        if (st != MDF_OK) {
            if (!strstr(err.message, ck)) fail_msg("byte %zu: the error does not name the file: %s", off, err.message);
            if (k < 40 && !strstr(err.message, "damaged")) fail_msg("byte %zu: %s", off, err.message);
            refused++;
            continue;
        }
        if (k < 40) fail_msg("byte %zu of the positions changed and the checkpoint was read", off);
        size_t m = 0;
        const double *p = mdf_ckpt_get(r, "batch.pos", sizeof(double), N, &m, NULL);
        const int64_t *q = mdf_ckpt_get(r, "run.meta", sizeof(int64_t), 5, &m, NULL);
        if (!p || !q || memcmp(p, pos, N * sizeof *pos) || memcmp(q, meta, sizeof meta))
            fail_msg("byte %zu changed the arrays read without an error", off);
        same++;
        mdf_ckpt_free(r);
    }
    printf("  200 single-bit changes: %d refused, %d left the arrays as written\n", refused, same);
    free(bad);
    free(good);
    free(pos);
    free(ck);
    tu_remove_tree(dir);
    free(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_checksum_refuses_damage),
        cmocka_unit_test(test_refusals_and_atomic_writes),
        cmocka_unit_test(test_array_larger_than_file_refused),
        cmocka_unit_test(test_resume_bitwise_eager_1cpu),
        cmocka_unit_test(test_resume_bitwise_eager_2cpu),
        cmocka_unit_test(test_resume_bitwise_dmda_2cpu),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
