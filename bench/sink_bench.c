/* mdflow benchmark — what writing snapshots costs a run.
 *
 * Requirement: writing a snapshot of 1,000 systems every 100 steps slows the
 * run by less than 10%, and the writer does not stall the workers (the HDF5
 * write is a CPU task fed by StarPU's transfers, overlapping compute).
 *
 * 1,000 argon LJ clusters of 13 to 147 atoms (the fcc lattice points nearest
 * to a jittered centre, i.e. within a radius, plus 0.05 Å noise), LJ ε 0.0104
 * eV, σ 3.40 Å, rc 8.5 Å, shifted; Maxwell-Boltzmann velocities at 40 K
 * (mdf_batch_thermalize); a Langevin stage at 40 K, dt 5 fs, for STEPS steps.
 * Five cases, run in interleaved rounds in one process (best of REPEAT):
 *
 *   a  no snapshots
 *   b  HDF5 CSR file (mdf_sink_create_hdf5), snapshot every EVERY steps
 *   c  the same with deflate level 4
 *   d  host-memory sink, every EVERY steps
 *   e  device sink, every EVERY steps
 *
 * Every case starts from the same batch (same seed), so each does the same
 * work. Files go to a temporary folder (--dir, else $TMPDIR or /tmp). The
 * sinks' lengths must be systems × (steps / every + 1) (step 0 is written),
 * and the HDF5 files are read back (mdf_read_hdf5_structures): counts per
 * system and step, and the last snapshot's positions against the batch's;
 * any mismatch exits with status 1 and a message on stderr.
 *
 * Prints one JSON object on stdout; progress on stderr. Public API only.
 *
 *   sink_bench [--systems N] [--steps N] [--every N] [--repeat N]
 *              [--cases abcde] [--window W] [--shards N] [--dir DIR]
 *              [--chunk-atoms N] [--chunk-systems N]
 *              [--timing] [--worker-stats] [--keep]
 *
 * STARPU_NCPU and STARPU_SCHED are read by StarPU as usual. */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "mdflow/mdflow.h"

#define AR_A 5.26      /* Å, fcc argon near 40 K */
#define AR_EPS 0.0104  /* eV */
#define AR_SIGMA 3.40  /* Å */
#define AR_RC 8.5      /* Å */
#define CLUSTER_MIN 13
#define CLUSTER_MAX 147
#define NCASES 5

static const char *CASE_NAME[NCASES] = {"none", "hdf5", "hdf5_gzip4", "host", "device"};
static const char *CASE_LABEL[NCASES] = {
    "(a) no snapshots", "(b) HDF5 CSR file", "(c) HDF5 CSR file, deflate 4", "(d) host-memory sink",
    "(e) device sink"};

static void die(const char *what, const mdf_error *err)
{
    fprintf(stderr, "sink_bench: FAILED: %s%s%s\n", what, err ? ": " : "", err ? err->message : "");
    exit(1);
}

#define CALL(what, fn, ...)                                   \
    do {                                                       \
        mdf_error e_;                                          \
        mdf_error_clear(&e_);                                  \
        if (fn(__VA_ARGS__, &e_) != MDF_OK) die(what, &e_);    \
    } while (0)

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* splitmix64 */
static double urand(uint64_t *s)
{
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    return (double)(z >> 11) * (1.0 / 9007199254740992.0);
}

static double gauss(uint64_t *s)
{
    double u1 = urand(s), u2 = urand(s);
    return sqrt(-2.0 * log(1.0 - u1)) * cos(2.0 * M_PI * u2);
}

typedef struct { double d2, x[3]; } lattice_pt;

static int by_d2(const void *a, const void *b)
{
    double x = ((const lattice_pt *)a)->d2, y = ((const lattice_pt *)b)->d2;
    return (x > y) - (x < y);
}

/* nsys clusters of CLUSTER_MIN..CLUSTER_MAX atoms: the n fcc lattice points nearest
 * to a centre jittered within half a cell (the points within a radius, so
 * shapes differ), centred, with 0.05 Å Gaussian noise. */
static mdf_frame *make_clusters(int nsys, uint64_t seed, int64_t *natoms_out)
{
    static const double basis[4][3] = {{0, 0, 0}, {0.5, 0.5, 0}, {0.5, 0, 0.5}, {0, 0.5, 0.5}};
    const int nc = 8, npts = 4 * nc * nc * nc;
    lattice_pt *pts = malloc(sizeof *pts * (size_t)npts);
    mdf_frame *frames = calloc((size_t)nsys, sizeof *frames);
    if (!pts || !frames) die("no memory for the clusters", NULL);
    uint64_t s = seed;
    int64_t total = 0;
    for (int c = 0; c < nsys; c++) {
        int n = CLUSTER_MIN + (int)(urand(&s) * (CLUSTER_MAX - CLUSTER_MIN + 1));
        if (n > CLUSTER_MAX) n = CLUSTER_MAX;
        double ctr[3];
        for (int d = 0; d < 3; d++) ctr[d] = (nc / 2 + urand(&s) - 0.5) * AR_A;
        int k = 0;
        for (int i = 0; i < nc; i++)
            for (int j = 0; j < nc; j++)
                for (int l = 0; l < nc; l++)
                    for (int b = 0; b < 4; b++, k++) {
                        double x[3] = {(i + basis[b][0]) * AR_A, (j + basis[b][1]) * AR_A, (l + basis[b][2]) * AR_A};
                        pts[k].d2 = 0;
                        for (int d = 0; d < 3; d++) {
                            pts[k].x[d] = x[d];
                            pts[k].d2 += (x[d] - ctr[d]) * (x[d] - ctr[d]);
                        }
                    }
        qsort(pts, (size_t)npts, sizeof *pts, by_d2);
        double mean[3] = {0, 0, 0};
        for (int i = 0; i < n; i++)
            for (int d = 0; d < 3; d++) mean[d] += pts[i].x[d] / n;
        mdf_error err;
        mdf_error_clear(&err);
        if (mdf_frame_alloc(&frames[c], n, 0, 0, 0, &err) != MDF_OK) die("frame", &err);
        for (int i = 0; i < n; i++) {
            for (int d = 0; d < 3; d++) frames[c].positions[3 * i + d] = pts[i].x[d] - mean[d] + 0.05 * gauss(&s);
            frames[c].numbers[i] = 18;
        }
        total += n;
    }
    free(pts);
    *natoms_out = total;
    return frames;
}

typedef struct options {
    int nsys, steps, every, repeat, window, shards, timing, worker_stats, keep;
    int64_t chunk_atoms, chunk_systems; /* HDF5 chunking (0: the sink's defaults) */
    char cases[NCASES + 1];
    const char *dir;
} options;

typedef struct run_result {
    double stage_s;        /* report.wall_seconds */
    double run_s;          /* around mdf_stage_run (host clock) */
    double close_s;        /* mdf_sink_length + mdf_sink_close after the run */
    double atom_steps_per_s;
    int64_t stored;        /* systems in the sink */
    long long file_bytes;  /* -1: no file */
    double max_step_s;     /* timing hook: longest gap between step ends (-1: off) */
    double mean_step_s;
} run_result;

typedef struct ctx {
    options o;
    mdf_frame *frames;
    int64_t natoms;
    mdf_model *model;
    char dir[4096];
    char path[NCASES][4200];
    int64_t expect_systems, expect_atoms;
} ctx;

static mdf_batch *new_batch(ctx *c)
{
    mdf_batch_config bc;
    mdf_batch_config_init(&bc);
    bc.nshards = c->o.shards;
    mdf_batch *b = NULL;
    mdf_error err;
    mdf_error_clear(&err);
    if (mdf_batch_create(c->frames, (size_t)c->o.nsys, &bc, &b, &err) != MDF_OK) die("mdf_batch_create", &err);
    if (mdf_batch_thermalize(b, 40.0, 12345, 0, &err) != MDF_OK) die("mdf_batch_thermalize", &err);
    return b;
}

static mdf_stage *new_stage(ctx *c, int steps)
{
    mdf_stage_config sc;
    mdf_stage_config_init(&sc);
    sc.integrator = "langevin";
    sc.max_steps = steps;
    sc.skin = 1.0;
    if (c->o.window > 0) sc.window = c->o.window;
    sc.params.dt_fs = 5.0;
    sc.params.temperature_K = 40.0;
    sc.params.seed = 7;
    mdf_stage *s = NULL;
    mdf_error err;
    mdf_error_clear(&err);
    if (mdf_param_list_set_double(&sc.method_params, "friction_per_fs", 0.01, &err) != MDF_OK)
        die("mdf_param_list_set_double", &err);
    if (mdf_stage_create(&sc, &s, &err) != MDF_OK) die("mdf_stage_create", &err);
    return s;
}

static long long file_size(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0 ? (long long)st.st_size : -1;
}

/* One run of case k (0..4) over `steps` steps. */
static run_result run_case(ctx *c, int k, int steps, int every, mdf_batch **keep_batch)
{
    run_result r = {.file_bytes = -1, .max_step_s = -1, .mean_step_s = -1};
    mdf_error err;
    mdf_error_clear(&err);
    mdf_batch *b = new_batch(c);
    mdf_stage *s = new_stage(c, steps);
    int64_t nsnap = steps / every + 1;
    int64_t cap_sys = (int64_t)c->o.nsys * nsnap, cap_atoms = c->natoms * nsnap;
    mdf_sink *sink = NULL;
    if (k == 1 || k == 2) {
        mdf_h5_options ho;
        mdf_h5_options_init(&ho);
        ho.compression = k == 2 ? 4 : 0;
        if (c->o.chunk_atoms > 0) ho.chunk_atoms = c->o.chunk_atoms;
        if (c->o.chunk_systems > 0) ho.chunk_systems = c->o.chunk_systems;
        if (mdf_sink_create_hdf5(c->path[k], &ho, &sink, &err) != MDF_OK) die("mdf_sink_create_hdf5", &err);
    } else if (k == 3) {
        if (mdf_sink_create_host(cap_sys, cap_atoms, &sink, &err) != MDF_OK) die("mdf_sink_create_host", &err);
    } else if (k == 4) {
        if (mdf_sink_create_device(cap_sys, cap_atoms, &sink, &err) != MDF_OK) die("mdf_sink_create_device", &err);
    }
    if (sink) {
        mdf_hook *h = NULL;
        if (mdf_hook_create_snapshot(sink, every, &h, &err) != MDF_OK) die("mdf_hook_create_snapshot", &err);
        if (mdf_stage_add_hook(s, h, &err) != MDF_OK) die("mdf_stage_add_hook", &err);
    }
    mdf_hook *timing = NULL;
    if (c->o.timing) {
        if (mdf_hook_create_timing(NULL, &timing, &err) != MDF_OK) die("mdf_hook_create_timing", &err);
        if (mdf_stage_add_hook(s, timing, &err) != MDF_OK) die("mdf_stage_add_hook", &err);
    }
    if (c->o.worker_stats) mdf_runtime_reset_stats();
    mdf_stage_report rep;
    memset(&rep, 0, sizeof rep);
    double t0 = now();
    if (mdf_stage_run(s, b, c->model, &rep, &err) != MDF_OK) {
        char what[128];
        snprintf(what, sizeof what, "mdf_stage_run, case %s", CASE_NAME[k]);
        die(what, &err);
    }
    r.run_s = now() - t0;
    r.stage_s = rep.wall_seconds;
    r.atom_steps_per_s = rep.atom_steps_per_second;
    if (rep.steps != steps) {
        fprintf(stderr, "sink_bench: FAILED: case %s ran %lld steps, not %d\n", CASE_NAME[k], (long long)rep.steps,
                steps);
        exit(1);
    }
    if (c->o.worker_stats) {
        fprintf(stderr, "-- workers, case %s:\n", CASE_NAME[k]);
        mdf_runtime_print_worker_stats(stderr);
    }
    if (timing) {
        mdf_timing_report tr;
        if (mdf_hook_timing_get(timing, &tr, &err) == MDF_OK) {
            r.max_step_s = tr.max_step_seconds;
            r.mean_step_s = tr.mean_step_seconds;
        }
    }
    if (sink) {
        t0 = now();
        r.stored = mdf_sink_length(sink);
        if (mdf_sink_close(sink, &err) != MDF_OK) die("mdf_sink_close", &err);
        r.close_s = now() - t0;
        if (r.stored != cap_sys) {
            fprintf(stderr, "sink_bench: FAILED: case %s: the sink holds %lld systems, expected %lld (%d x %lld)\n",
                    CASE_NAME[k], (long long)r.stored, (long long)cap_sys, c->o.nsys, (long long)nsnap);
            exit(1);
        }
        if (k == 1 || k == 2) r.file_bytes = file_size(c->path[k]);
        if (k == 3 || k == 4) {
            /* Spot check: the last stored system reads back. */
            mdf_frame f;
            memset(&f, 0, sizeof f);
            if (mdf_sink_read(sink, r.stored - 1, &f, &err) != MDF_OK) die("mdf_sink_read", &err);
            const char *st = mdf_frame_get_info(&f, "mdf_step");
            if (!st || atoll(st) != steps) {
                fprintf(stderr, "sink_bench: FAILED: case %s: the last stored system has mdf_step %s, not %d\n",
                        CASE_NAME[k], st ? st : "(none)", steps);
                exit(1);
            }
            mdf_frame_free(&f);
        }
    }
    mdf_stage_destroy(s);
    mdf_sink_destroy(sink);
    if (keep_batch) *keep_batch = b;
    else mdf_batch_destroy(b);
    return r;
}

/* Reads an HDF5 file back: systems × (steps/every + 1) frames, each (id,
 * step) once, atom counts as the input, and the snapshots at the last step
 * equal to the batch's final positions. Returns the frames read. */
static int64_t verify_hdf5(ctx *c, const char *path, mdf_batch *b, int steps, int every)
{
    mdf_frame_list fl;
    mdf_frame_list_init(&fl);
    mdf_error err;
    mdf_error_clear(&err);
    double t0 = now();
    if (mdf_read_hdf5_structures(path, &fl, &err) != MDF_OK) die("mdf_read_hdf5_structures", &err);
    int64_t nsnap = steps / every + 1;
    int64_t expect = (int64_t)c->o.nsys * nsnap;
    if ((int64_t)fl.count != expect) {
        fprintf(stderr, "sink_bench: FAILED: %s holds %zu systems, expected %lld (%d x %lld)\n", path, fl.count,
                (long long)expect, c->o.nsys, (long long)nsnap);
        exit(1);
    }
    /* seen[sys * nsnap + snap]; system ids are batch indices (no ids given). */
    unsigned char *seen = calloc((size_t)expect, 1);
    int64_t nlast = 0;
    double maxdev = 0.0;
    for (size_t i = 0; i < fl.count; i++) {
        const mdf_frame *f = &fl.frames[i];
        const char *sid = mdf_frame_get_info(f, "mdf_system_id"), *sst = mdf_frame_get_info(f, "mdf_step");
        long long id = sid ? atoll(sid) : -1, step = sst ? atoll(sst) : -1;
        if (id < 0 || id >= c->o.nsys || step < 0 || step % every || step > steps) {
            fprintf(stderr, "sink_bench: FAILED: %s: system %zu has id %s step %s\n", path, i, sid ? sid : "?",
                    sst ? sst : "?");
            exit(1);
        }
        int64_t slot = id * nsnap + step / every;
        if (seen[slot]++) {
            fprintf(stderr, "sink_bench: FAILED: %s: system %lld at step %lld stored twice\n", path, id, step);
            exit(1);
        }
        if (f->natoms != c->frames[id].natoms) {
            fprintf(stderr, "sink_bench: FAILED: %s: system %lld at step %lld has %lld atoms, not %lld\n", path, id,
                    step, (long long)f->natoms, (long long)c->frames[id].natoms);
            exit(1);
        }
        if (step == steps && b) {
            mdf_frame g;
            memset(&g, 0, sizeof g);
            if (mdf_batch_get_frame(b, (size_t)id, &g, &err) != MDF_OK) die("mdf_batch_get_frame", &err);
            for (int64_t a = 0; a < 3 * f->natoms; a++) {
                double d = fabs(g.positions[a] - f->positions[a]);
                if (!(d <= maxdev)) maxdev = d;
            }
            mdf_frame_free(&g);
            nlast++;
        }
    }
    free(seen);
    if (b && (nlast != c->o.nsys || !(maxdev == 0.0))) {
        fprintf(stderr, "sink_bench: FAILED: %s: last-step snapshots %lld (expected %d), largest position "
                "difference from the batch %g Å\n", path, (long long)nlast, c->o.nsys, maxdev);
        exit(1);
    }
    mdf_frame_list_free(&fl);
    fprintf(stderr, "   verified %s: %lld systems (%lld per system), last step equal to the batch (%.2f s)\n", path,
            (long long)expect, (long long)nsnap, now() - t0);
    return expect;
}

static void usage(void)
{
    fprintf(stderr, "usage: sink_bench [--systems N] [--steps N] [--every N] [--repeat N] [--cases abcde]\n"
                    "                  [--window W] [--shards N] [--chunk-atoms N] [--chunk-systems N]\n"
                    "                  [--dir DIR] [--timing] [--worker-stats] [--keep]\n");
    exit(2);
}

static double best(const run_result *v, int n, double (*get)(const run_result *))
{
    double m = INFINITY;
    for (int i = 0; i < n; i++)
        if (get(&v[i]) < m) m = get(&v[i]);
    return m;
}
static double get_stage(const run_result *r) { return r->stage_s; }

int main(int argc, char **argv)
{
    ctx c;
    memset(&c, 0, sizeof c);
    options *o = &c.o;
    o->nsys = 1000;
    o->steps = 1000;
    o->every = 100;
    o->repeat = 3;
    strcpy(o->cases, "abcde");
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--timing")) o->timing = 1;
        else if (!strcmp(a, "--worker-stats")) o->worker_stats = 1;
        else if (!strcmp(a, "--keep")) o->keep = 1;
        else if (!v) usage();
        else if (!strcmp(a, "--systems")) o->nsys = atoi(v), i++;
        else if (!strcmp(a, "--steps")) o->steps = atoi(v), i++;
        else if (!strcmp(a, "--every")) o->every = atoi(v), i++;
        else if (!strcmp(a, "--repeat")) o->repeat = atoi(v), i++;
        else if (!strcmp(a, "--window")) o->window = atoi(v), i++;
        else if (!strcmp(a, "--shards")) o->shards = atoi(v), i++;
        else if (!strcmp(a, "--dir")) o->dir = v, i++;
        else if (!strcmp(a, "--chunk-atoms")) o->chunk_atoms = atoll(v), i++;
        else if (!strcmp(a, "--chunk-systems")) o->chunk_systems = atoll(v), i++;
        else if (!strcmp(a, "--cases")) {
            if (strlen(v) > NCASES || strspn(v, "abcde") != strlen(v)) usage();
            strcpy(o->cases, v);
            i++;
        } else usage();
    }
    if (o->nsys < 1 || o->steps < 1 || o->every < 1 || o->repeat < 1) usage();
    int want[NCASES] = {0};
    for (const char *p = o->cases; *p; p++) want[*p - 'a'] = 1;

    const char *tmp = o->dir ? o->dir : (getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    if (o->dir) {
        snprintf(c.dir, sizeof c.dir, "%s", o->dir);
        mkdir(c.dir, 0755);
    } else {
        snprintf(c.dir, sizeof c.dir, "%s/mdflow-sink-bench-XXXXXX", tmp);
        if (!mkdtemp(c.dir)) {
            fprintf(stderr, "sink_bench: FAILED: mkdtemp %s: %s\n", c.dir, strerror(errno));
            return 1;
        }
    }
    snprintf(c.path[1], sizeof c.path[1], "%s/snapshots.h5", c.dir);
    snprintf(c.path[2], sizeof c.path[2], "%s/snapshots_gzip4.h5", c.dir);

    mdf_runtime_config rc;
    mdf_runtime_config_init(&rc);
    rc.profiling = o->worker_stats;
    CALL("mdf_runtime_start", mdf_runtime_start, &rc);
    c.frames = make_clusters(o->nsys, 20261122, &c.natoms);
    mdf_lj_config lj;
    mdf_lj_config_init(&lj);
    CALL("LJ species", mdf_lj_config_add_species, &lj, 18, AR_EPS, AR_SIGMA, AR_RC);
    lj.shift = 1;
    CALL("mdf_model_create_lj", mdf_model_create_lj, &lj, &c.model);

    int64_t nsnap = o->steps / o->every + 1;
    fprintf(stderr, "sink_bench: %d systems (%lld atoms), %d steps, snapshots every %d steps (%lld each), "
                    "%d CPU workers, %d CUDA workers, scheduler %s, files in %s\n",
            o->nsys, (long long)c.natoms, o->steps, o->every, (long long)nsnap, mdf_runtime_cpu_workers(),
            mdf_runtime_cuda_workers(), mdf_runtime_sched_name(), c.dir);

    /* Warm-up: first touches, StarPU's start-up, page cache. */
    {
        int ws = o->steps < 50 ? o->steps : 50;
        double t0 = now();
        run_case(&c, 0, ws, ws, NULL);
        fprintf(stderr, "   warm-up: %d steps in %.2f s\n", ws, now() - t0);
    }

    run_result *runs[NCASES];
    for (int k = 0; k < NCASES; k++) runs[k] = calloc((size_t)o->repeat, sizeof(run_result));
    int64_t verified[NCASES] = {0};
    for (int r = 0; r < o->repeat; r++) {
        for (int k = 0; k < NCASES; k++) {
            if (!want[k]) continue;
            mdf_batch *b = NULL;
            int check = (k == 1 || k == 2) && r == 0;
            runs[k][r] = run_case(&c, k, o->steps, o->every, check ? &b : NULL);
            const run_result *x = &runs[k][r];
            fprintf(stderr, "   round %d %-30s stage %7.3f s  (run %.3f s, close %.3f s)", r + 1, CASE_LABEL[k],
                    x->stage_s, x->run_s, x->close_s);
            if (x->file_bytes >= 0) fprintf(stderr, "  %.1f MB", x->file_bytes / 1e6);
            if (x->max_step_s >= 0) fprintf(stderr, "  max step gap %.3f s", x->max_step_s);
            fputc('\n', stderr);
            if (check) {
                verified[k] = verify_hdf5(&c, c.path[k], b, o->steps, o->every);
                mdf_batch_destroy(b);
            }
        }
    }

    /* JSON */
    double base = want[0] ? best(runs[0], o->repeat, get_stage) : NAN;
    printf("{\n  \"systems\": %d, \"atoms\": %lld, \"steps\": %d, \"every\": %d, \"snapshots_per_system\": %lld,\n",
           o->nsys, (long long)c.natoms, o->steps, o->every, (long long)nsnap);
    printf("  \"size_min\": %d, \"size_max\": %d, \"repeat\": %d, \"window\": %d, \"shards\": %d, \"chunk_atoms\": %lld, "
           "\"chunk_systems\": %lld,\n", CLUSTER_MIN, CLUSTER_MAX, o->repeat, o->window, o->shards,
           (long long)o->chunk_atoms, (long long)o->chunk_systems);
    printf("  \"cpu_workers\": %d, \"cuda_workers\": %d, \"scheduler\": \"%s\",\n", mdf_runtime_cpu_workers(),
           mdf_runtime_cuda_workers(), mdf_runtime_sched_name());
    printf("  \"model\": \"lj argon eps %g eV sigma %g A rc %g A shifted\", \"stage\": \"langevin 40 K dt 5 fs "
           "friction 0.01/fs\",\n", AR_EPS, AR_SIGMA, AR_RC);
    printf("  \"cases\": {");
    int first = 1;
    for (int k = 0; k < NCASES; k++) {
        if (!want[k]) continue;
        const run_result *v = runs[k];
        int bi = 0;
        for (int i = 1; i < o->repeat; i++)
            if (v[i].stage_s < v[bi].stage_s) bi = i;
        const run_result *bx = &v[bi];
        printf("%s\n    \"%s\": {\"label\": \"%s\", \"wall_s\": %.6f, \"run_s\": %.6f, \"close_s\": %.6f, "
               "\"atom_steps_per_s\": %.6g,\n", first ? "" : ",", CASE_NAME[k], CASE_LABEL[k], bx->stage_s,
               bx->run_s, bx->close_s, bx->atom_steps_per_s);
        first = 0;
        printf("      \"wall_s_all\": [");
        for (int i = 0; i < o->repeat; i++) printf("%s%.6f", i ? ", " : "", v[i].stage_s);
        printf("], \"run_s_all\": [");
        for (int i = 0; i < o->repeat; i++) printf("%s%.6f", i ? ", " : "", v[i].run_s);
        printf("],\n");
        if (k > 0 && want[0])
            printf("      \"slowdown_pct\": %.4f, ", 100.0 * (bx->stage_s / base - 1.0));
        else
            printf("      ");
        printf("\"systems_stored\": %lld, \"file_bytes\": %lld", (long long)bx->stored, bx->file_bytes);
        if (k == 1 || k == 2) printf(", \"verified_systems\": %lld", (long long)verified[k]);
        if (bx->max_step_s >= 0)
            printf(", \"max_step_gap_s\": %.6f, \"mean_step_s\": %.6f", bx->max_step_s, bx->mean_step_s);
        printf("}");
    }
    printf("\n  }");
    if (want[0] && want[1]) {
        double sb = 100.0 * (best(runs[1], o->repeat, get_stage) / base - 1.0);
        printf(",\n  \"target_slowdown_pct\": 10, \"hdf5_slowdown_pct\": %.4f, \"meets_target\": %s", sb,
               sb < 10.0 ? "true" : "false");
    }
    printf("\n}\n");
    fflush(stdout);

    for (int k = 0; k < NCASES; k++) free(runs[k]);
    for (int i = 0; i < o->nsys; i++) mdf_frame_free(&c.frames[i]);
    free(c.frames);
    mdf_model_destroy(c.model);
    mdf_runtime_stop();
    if (!o->keep) {
        unlink(c.path[1]);
        unlink(c.path[2]);
        if (!o->dir) rmdir(c.dir);
    }
    return 0;
}
