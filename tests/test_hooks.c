/* mdflow tests — the built-in hooks: CSV log, NaN/Inf detector, force clamp,
 * freeze, wrap, energy-drift monitor and timing, each in a velocity Verlet
 * stage over small argon crystals (LJ, ε 0.0104 eV, σ 3.40 Å, cutoff 6 Å).
 *
 * Expected values come from the definitions, not from earlier output: the
 * log's last rows must equal the batch's final values (energy and fmax
 * exactly: the log prints doubles that read back to themselves), a clamped
 * force is F·max/|F| of the unclamped one, a frozen atom never moves
 * (x += dt·0 is exact), wrapped and unwrapped trajectories differ by
 * lattice vectors only, and a drift threshold below round-off trips on
 * every system while one of 1 eV/atom never does. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <starpu.h>
#include "testutil.h"
#include "../codelets/common/mdf_kernel_common.h" /* buffer layouts of codelet hooks */

#define RC 6.0      /* Å: with the default 1 Å skin, 3 fcc cells of 5.3 Å are wide enough */
#define LATTICE 5.3 /* Å, about argon's at low temperature */

static mdf_model *argon_model(void)
{
    mdf_lj_config lj = tu_argon(RC, 1);
    mdf_model *m = NULL;
    TU_CALL(mdf_model_create_lj, &lj, &m);
    return m;
}

/* n jittered fcc argon crystals of 108 atoms (odd ones triclinic), at
 * temperature T (0: at rest). */
static mdf_batch *crystals(int n, int nshards, double T)
{
    mdf_frame *f = calloc((size_t)n, sizeof *f);
    for (int i = 0; i < n; i++) f[i] = tu_fcc(3, 3, 3, LATTICE, 18, 0.05 * (i % 2), 0.05, 300 + (uint64_t)i);
    mdf_batch_config bc;
    mdf_batch_config_init(&bc);
    bc.nshards = nshards;
    mdf_batch *b = NULL;
    TU_CALL(mdf_batch_create, f, (size_t)n, &bc, &b);
    if (T > 0.0) TU_CALL(mdf_batch_thermalize, b, T, 11, 0);
    for (int i = 0; i < n; i++) mdf_frame_free(&f[i]);
    free(f);
    return b;
}

static mdf_stage *nve_stage(int64_t steps, double dt_fs)
{
    mdf_stage_config cfg;
    mdf_stage_config_init(&cfg);
    cfg.integrator = "velocity_verlet";
    cfg.max_steps = steps;
    cfg.params.dt_fs = dt_fs;
    mdf_stage *s = NULL;
    TU_CALL(mdf_stage_create, &cfg, &s);
    return s;
}

static void add_hook(mdf_stage *s, mdf_hook *h) { TU_CALL(mdf_stage_add_hook, s, h); }

/* Runs a stage and destroys it; returns the run's status (err filled). */
static mdf_status run_stage(mdf_stage *s, mdf_batch *b, mdf_model *m, mdf_stage_report *rep, mdf_error *err)
{
    mdf_error_clear(err);
    mdf_status st = mdf_stage_run(s, b, m, rep, err);
    mdf_stage_destroy(s);
    return st;
}

static int count_lines(FILE *fp, const char *needle)
{
    rewind(fp);
    char line[2048];
    int n = 0;
    while (fgets(line, sizeof line, fp))
        if (!needle || strstr(line, needle)) n++;
    return n;
}

static int file_exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

static double temperature_of(const mdf_system_view *v)
{
    double dof = v->natoms > 1 ? 3.0 * (double)v->natoms - 3.0 : 3.0 * (double)v->natoms;
    return 2.0 * v->kinetic_energy / (dof * MDF_KB);
}

/* ---- log ---------------------------------------------------------------------- */

typedef struct log_row {
    long long step, id;
    int status;
    double energy, fmax, temperature;
} log_row;

/* Reads a log written by the hook; returns the rows (count in *n). */
static log_row *read_log(const char *path, int *n)
{
    FILE *fp = fopen(path, "r");
    assert_non_null(fp);
    char line[512];
    assert_non_null(fgets(line, sizeof line, fp));
    assert_string_equal(line, "step,system_id,status,energy_eV,fmax_eV_per_A,temperature_K,pressure_bar,volume_A3\n");
    int cap = 64;
    log_row *rows = malloc(sizeof *rows * (size_t)cap);
    *n = 0;
    while (fgets(line, sizeof line, fp)) {
        if (*n == cap) rows = realloc(rows, sizeof *rows * (size_t)(cap *= 2));
        log_row *r = &rows[(*n)++];
        char *p = line, *end;
        r->step = strtoll(p, &end, 10);
        assert_true(*end == ',');
        r->id = strtoll(end + 1, &end, 10);
        assert_true(*end == ',');
        r->status = (int)strtol(end + 1, &end, 10);
        assert_true(*end == ',');
        r->energy = strtod(end + 1, &end);
        assert_true(*end == ',');
        r->fmax = strtod(end + 1, &end);
        assert_true(*end == ',');
        r->temperature = strtod(end + 1, &end);
        assert_true(*end == ','); /* pressure_bar,volume_A3 follow (test_cli_ux.sh checks them) */
        assert_non_null(strchr(end + 1, ','));
    }
    fclose(fp);
    return rows;
}

static void test_log(void **state)
{
    (void)state;
    char *dir = tu_tmpdir();
    char path[512], tmp[520];
    snprintf(path, sizeof path, "%s/run.csv", dir);
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    mdf_model *m = argon_model();
    mdf_batch *b = crystals(5, 2, 80.0);
    const int nsys = 5, every = 3, steps = 21;
    mdf_stage *s = nve_stage(steps, 5.0);
    mdf_hook *h = NULL;
    TU_CALL(mdf_hook_create_log, path, every, &h);
    add_hook(s, h);
    mdf_error err;
    assert_int_equal(run_stage(s, b, m, NULL, &err), MDF_OK);
    assert_true(file_exists(path));
    assert_false(file_exists(tmp)); /* renamed, not copied */

    int n = 0;
    log_row *rows = read_log(path, &n);
    int due = steps / every + 1; /* steps 0, 3, ..., 21 */
    printf("# log: %d rows = %d due steps x %d systems\n", n, due, nsys);
    assert_int_equal(n, due * nsys);
    for (int k = 0; k < n; k++) {
        /* One step's rows together, steps in order, systems in batch order. */
        assert_int_equal(rows[k].step, (long long)(k / nsys) * every);
        assert_int_equal(rows[k].id, k % nsys);
        assert_int_equal(rows[k].status, 0);
        assert_true(isfinite(rows[k].energy) && rows[k].fmax > 0.0 && rows[k].temperature > 0.0);
    }
    /* The last due step is the last step: its rows are the batch's values. */
    for (int i = 0; i < nsys; i++) {
        mdf_system_view v;
        TU_CALL(mdf_batch_get_system, b, (size_t)i, &v);
        const log_row *r = &rows[(due - 1) * nsys + i];
        assert_int_equal(v.step, steps);
        assert_true(r->energy == v.potential_energy); /* exact round trip */
        assert_true(r->fmax == v.fmax);
        assert_true(tu_reldiff(r->temperature, temperature_of(&v), 1e-300) < 1e-14);
    }
    free(rows);

    /* Systems leave the stage at step 10 (step budget of a fresh batch):
     * their rows at step 10 carry the converged status, and no row follows. */
    mdf_batch_destroy(b);
    b = crystals(nsys, 2, 80.0);
    s = nve_stage(100, 5.0);
    TU_CALL(mdf_stage_add_criterion, s, MDF_CRITERION_STEPS, 10.0);
    TU_CALL(mdf_hook_create_log, path, 5, &h);
    add_hook(s, h);
    assert_int_equal(run_stage(s, b, m, NULL, &err), MDF_OK);
    rows = read_log(path, &n);
    assert_int_equal(n, 3 * nsys); /* steps 0, 5, 10 */
    for (int k = 0; k < n; k++) {
        assert_int_equal(rows[k].step, (long long)(k / nsys) * 5);
        assert_int_equal(rows[k].status, rows[k].step == 10 ? 1 : 0);
    }
    free(rows);
    mdf_batch_destroy(b);
    mdf_model_destroy(m);
    tu_remove_tree(dir);
    free(dir);
}

/* A codelet hook that holds back the shard holding system id 0 (every
 * buffer R: the task sits in that shard's chain of steps, and the other
 * shards run ahead, as far as the submission window lets them). */
static void slow_cpu(void *buffers[], void *cl_arg)
{
    const mdf_hook_task_args *head = (const mdf_hook_task_args *)cl_arg;
    const mdf_sys_info *sys = (const mdf_sys_info *)STARPU_VECTOR_GET_PTR(buffers[4]);
    if (head->nsys > 0 && sys[0].id == 0) {
        struct timespec ts = {0, 2000000};
        nanosleep(&ts, NULL);
    }
}

static struct starpu_codelet slow_cl = {
    .cpu_funcs = {slow_cpu},
    .nbuffers = 7,
    .modes = {STARPU_R, STARPU_R, STARPU_R, STARPU_R, STARPU_R, STARPU_R, STARPU_R},
    .name = "test_slow_shard",
};

/* Shards drift apart (one is held back 2 ms a step): the log still has
 * every row of every step, in order. */
static void test_log_lagging_shard(void **state)
{
    (void)state;
    char *dir = tu_tmpdir();
    char path[512];
    snprintf(path, sizeof path, "%s/lag.csv", dir);
    mdf_model *m = argon_model();
    const int nsys = 4, nshards = 4, steps = 60;
    mdf_batch *b = crystals(nsys, nshards, 80.0);
    mdf_stage *s = nve_stage(steps, 5.0);
    mdf_hook *h = NULL;
    TU_CALL(mdf_hook_create_codelet, "slow", MDF_AFTER_STEP, 1, &slow_cl, NULL, 0, &h);
    add_hook(s, h);
    TU_CALL(mdf_hook_create_log, path, 1, &h);
    add_hook(s, h);
    mdf_error err;
    assert_int_equal(run_stage(s, b, m, NULL, &err), MDF_OK);
    int n = 0;
    log_row *rows = read_log(path, &n);
    printf("# lagging shard: %d rows (expected %d)\n", n, (steps + 1) * nsys);
    assert_int_equal(n, (steps + 1) * nsys);
    for (int k = 0; k < n; k++) {
        assert_int_equal(rows[k].step, (long long)(k / nsys));
        assert_int_equal(rows[k].id, k % nsys);
    }
    free(rows);
    mdf_batch_destroy(b);
    mdf_model_destroy(m);
    tu_remove_tree(dir);
    free(dir);
}

static void test_log_errors(void **state)
{
    (void)state;
    mdf_model *m = argon_model();
    mdf_batch *b = crystals(4, 2, 80.0);
    mdf_error err;

    /* A directory that does not exist: the run refuses to start. */
    const char *bad = "/nonexistent-mdflow-dir/sub/log.csv";
    mdf_stage *s = nve_stage(10, 5.0);
    mdf_hook *h = NULL;
    TU_CALL(mdf_hook_create_log, bad, 1, &h);
    add_hook(s, h);
    assert_int_equal(run_stage(s, b, m, NULL, &err), MDF_ERR_IO);
    printf("# missing dir: %s\n", err.message);
    assert_non_null(strstr(err.message, bad));

    /* A write that fails mid-run (file size limit: write() gives EFBIG once
     * SIGXFSZ is ignored): the run stops early, naming the file. */
    char *dir = tu_tmpdir();
    char path[512];
    snprintf(path, sizeof path, "%s/full.csv", dir);
    s = nve_stage(400, 5.0);
    TU_CALL(mdf_hook_create_log, path, 1, &h);
    add_hook(s, h);
    struct rlimit old, lim;
    assert_int_equal(getrlimit(RLIMIT_FSIZE, &old), 0);
    void (*old_sig)(int) = signal(SIGXFSZ, SIG_IGN);
    fflush(stdout);
    fflush(stderr);
    lim = old;
    lim.rlim_cur = 8192; /* about 25 steps of 4 rows */
    assert_int_equal(setrlimit(RLIMIT_FSIZE, &lim), 0);
    mdf_stage_report rep;
    mdf_status st = run_stage(s, b, m, &rep, &err);
    assert_int_equal(setrlimit(RLIMIT_FSIZE, &old), 0);
    signal(SIGXFSZ, old_sig);
    printf("# write error after %lld of 400 steps: %s\n", (long long)rep.steps, err.message);
    assert_int_equal(st, MDF_ERR_IO);
    assert_non_null(strstr(err.message, path));
    assert_true(rep.steps < 400);
    assert_false(file_exists(path)); /* a failed log replaces nothing */
    tu_remove_tree(dir);
    free(dir);
    mdf_batch_destroy(b);
    mdf_model_destroy(m);
}

/* ---- NaN detector --------------------------------------------------------------- */

#define NAN_SYS 4
#define NAN_ID 2
#define NAN_STEP 7

/* A stage with the poison hook then the detector, both after post_update. */
static mdf_stage *nan_stage(mdf_nan_action action, FILE *warn, int64_t steps)
{
    mdf_stage *s = nve_stage(steps, 5.0);
    mdf_hook *h = tu_poison_hook(NAN_ID, NAN_STEP);
    add_hook(s, h);
    TU_CALL(mdf_hook_create_nan_check, 1, action, warn, &h);
    add_hook(s, h);
    return s;
}

static void test_nan_stop(void **state)
{
    (void)state;
    mdf_model *m = argon_model();
    mdf_batch *b = crystals(NAN_SYS, 2, 80.0);
    mdf_error err;
    mdf_stage_report rep;
    mdf_status st = run_stage(nan_stage(MDF_NAN_STOP, NULL, 60), b, m, &rep, &err);
    printf("# NaN stop after %lld steps: %s\n", (long long)rep.steps, err.message);
    assert_int_equal(st, MDF_ERR_PHYSICS);
    char want[128];
    snprintf(want, sizeof want, "system id %d (batch index %d): positions at step %d", NAN_ID, NAN_ID, NAN_STEP);
    assert_non_null(strstr(err.message, want));
    assert_null(strstr(err.message, "velocities")); /* only the positions were hit */
    for (int i = 0; i < NAN_SYS; i++) {
        snprintf(want, sizeof want, "system id %d ", i);
        if (i != NAN_ID) assert_null(strstr(err.message, want));
    }
    assert_true(rep.steps < 60);
    mdf_batch_destroy(b);
    mdf_model_destroy(m);
}

/* A NaN position is binned before the detector sees it: the poison hits at
 * step 7, the check runs every 10 steps, and a skin of 0 rebuilds the lists
 * every step (the other atoms move), so steps 8 to 10 bin the NaN atom. The
 * binning puts it in some cell without converting NaN to int (UBSan's
 * float-cast-overflow, on in the sanitizer build, stopped here before), and
 * the check at step 10 names the system. */
static void test_nan_binned_before_check(void **state)
{
    (void)state;
    mdf_model *m = argon_model();
    mdf_batch *b = crystals(NAN_SYS, 1, 80.0);
    mdf_stage_config cfg;
    mdf_stage_config_init(&cfg);
    cfg.integrator = "velocity_verlet";
    cfg.max_steps = 40;
    cfg.params.dt_fs = 5.0;
    cfg.skin = 0.0;
    mdf_stage *s = NULL;
    TU_CALL(mdf_stage_create, &cfg, &s);
    add_hook(s, tu_poison_hook(NAN_ID, NAN_STEP));
    mdf_hook *h = NULL;
    TU_CALL(mdf_hook_create_nan_check, 10, MDF_NAN_STOP, NULL, &h);
    add_hook(s, h);
    mdf_error err;
    mdf_stage_report rep;
    mdf_status st = run_stage(s, b, m, &rep, &err);
    printf("# NaN binned, then reported: %s\n", err.message);
    assert_int_equal(st, MDF_ERR_PHYSICS);
    char want[128];
    snprintf(want, sizeof want, "system id %d (batch index %d): positions at step 10", NAN_ID, NAN_ID);
    assert_non_null(strstr(err.message, want));
    assert_true(rep.list_rebuilds >= 3);
    mdf_batch_destroy(b);
    mdf_model_destroy(m);
}

static void test_nan_quarantine(void **state)
{
    (void)state;
    mdf_model *m = argon_model();
    mdf_batch *b = crystals(NAN_SYS, 2, 80.0);
    FILE *warn = tmpfile();
    mdf_error err;
    const int steps = 30;
    assert_int_equal(run_stage(nan_stage(MDF_NAN_QUARANTINE, warn, steps), b, m, NULL, &err), MDF_OK);
    assert_int_equal(count_lines(warn, NULL), 1);
    char want[128];
    snprintf(want, sizeof want, "system id %d (batch index %d): positions at step %d", NAN_ID, NAN_ID, NAN_STEP);
    assert_int_equal(count_lines(warn, want), 1);
    for (int i = 0; i < NAN_SYS; i++) {
        mdf_system_view v;
        TU_CALL(mdf_batch_get_system, b, (size_t)i, &v);
        if (i == NAN_ID) {
            assert_int_equal(v.status, MDF_STATUS_FAILED);
            assert_int_equal(v.flags & (MDF_SYSTEM_NONFINITE_POS | MDF_SYSTEM_NONFINITE_VEL |
                                        MDF_SYSTEM_NONFINITE_FORCE | MDF_SYSTEM_NONFINITE_ENERGY),
                             MDF_SYSTEM_NONFINITE_POS);
            assert_int_equal(v.step, NAN_STEP); /* not integrated after quarantine */
        } else {
            assert_int_equal(v.status, 0);
            assert_int_equal(v.step, steps);
            assert_int_equal(v.flags & MDF_SYSTEM_NONFINITE_POS, 0);
            assert_true(isfinite(v.potential_energy) && isfinite(v.kinetic_energy));
        }
    }
    fclose(warn);
    mdf_batch_destroy(b);
    mdf_model_destroy(m);
}

/* ---- force clamp ------------------------------------------------------------------ */

static void test_force_clamp(void **state)
{
    (void)state;
    mdf_model *m = argon_model();
    /* Atoms as close as 3.0 Å (σ = 3.4 Å): steep repulsion, a wide spread
     * of force norms. */
    double box[9] = {16, 0, 0, 0, 16, 0, 0, 0, 16};
    int pbc[3] = {1, 1, 1}, zs[] = {18};
    mdf_frame f = tu_random(90, box, pbc, 3.0, zs, 1, 77);
    mdf_batch *b = NULL;
    TU_CALL(mdf_batch_create, &f, 1, NULL, &b);
    TU_CALL(mdf_compute_forces, b, m);
    mdf_frame f0;
    TU_CALL(mdf_batch_get_frame, b, 0, &f0);
    /* The median norm: about half the atoms are clamped. */
    int64_t n = f0.natoms;
    double *norms = malloc(sizeof(double) * (size_t)n);
    for (int64_t i = 0; i < n; i++) norms[i] = sqrt(pow(f0.forces[3 * i], 2) + pow(f0.forces[3 * i + 1], 2) +
                                                    pow(f0.forces[3 * i + 2], 2));
    double sorted_mid = 0.0;
    {
        double *c = malloc(sizeof(double) * (size_t)n);
        memcpy(c, norms, sizeof(double) * (size_t)n);
        for (int64_t i = 1; i < n; i++)
            for (int64_t j = i; j > 0 && c[j - 1] > c[j]; j--) {
                double t = c[j];
                c[j] = c[j - 1];
                c[j - 1] = t;
            }
        sorted_mid = c[n / 2];
        free(c);
    }
    const double max_force = sorted_mid;
    /* Step 0 only: the evaluation, then the clamp (AFTER_COMPUTE). */
    mdf_stage *s = nve_stage(0, 5.0);
    mdf_hook *h = NULL;
    TU_CALL(mdf_hook_create_force_clamp, max_force, &h);
    add_hook(s, h);
    mdf_error err;
    assert_int_equal(run_stage(s, b, m, NULL, &err), MDF_OK);
    mdf_frame f1;
    TU_CALL(mdf_batch_get_frame, b, 0, &f1);
    int clamped = 0;
    double worst_dir = 0.0, worst_norm = 0.0;
    for (int64_t i = 0; i < n; i++) {
        const double *a = f0.forces + 3 * i, *c = f1.forces + 3 * i;
        double nc = sqrt(c[0] * c[0] + c[1] * c[1] + c[2] * c[2]);
        assert_true(nc <= max_force * (1.0 + 1e-15));
        if (norms[i] <= max_force) { /* untouched, bit for bit */
            assert_memory_equal(a, c, 3 * sizeof(double));
            continue;
        }
        clamped++;
        worst_norm = fmax(worst_norm, fabs(nc - max_force) / max_force);
        /* Same direction: c = a·max/|a|, so c × a = 0 and c·a > 0. */
        double cr[3] = {c[1] * a[2] - c[2] * a[1], c[2] * a[0] - c[0] * a[2], c[0] * a[1] - c[1] * a[0]};
        double sinang = sqrt(cr[0] * cr[0] + cr[1] * cr[1] + cr[2] * cr[2]) / (nc * norms[i]);
        assert_true(c[0] * a[0] + c[1] * a[1] + c[2] * a[2] > 0.0);
        worst_dir = fmax(worst_dir, sinang);
    }
    printf("# clamp at %.4g eV/A: %d of %lld forces clamped, max |norm-max|/max %.2e, max sin(angle) %.2e\n",
           max_force, clamped, (long long)n, worst_norm, worst_dir);
    assert_true(clamped >= n / 3);
    assert_true(worst_norm < 1e-14);
    assert_true(worst_dir < 1e-14);
    free(norms);
    mdf_frame_free(&f);
    mdf_frame_free(&f0);
    mdf_frame_free(&f1);
    mdf_batch_destroy(b);
    mdf_model_destroy(m);
}

/* ---- freeze ---------------------------------------------------------------------- */

static void test_freeze(void **state)
{
    (void)state;
    mdf_model *m = argon_model();
    mdf_batch *b = crystals(2, 2, 0.0);
    for (int64_t a = 0; a < 108; a++) {
        if (a % 4 == 0) TU_CALL(mdf_batch_set_frozen, b, 0, a, 1);
        if (a % 5 == 0) TU_CALL(mdf_batch_set_frozen, b, 1, a, 1);
    }
    TU_CALL(mdf_batch_thermalize, b, 120.0, 5, 0); /* frozen atoms get velocities too */
    TU_CALL(mdf_batch_sync, b);
    mdf_frame start[2];
    for (int i = 0; i < 2; i++) TU_CALL(mdf_batch_get_frame, b, (size_t)i, &start[i]);
    mdf_stage *s = nve_stage(100, 5.0);
    mdf_hook *h = NULL;
    TU_CALL(mdf_hook_create_freeze, &h);
    add_hook(s, h);
    mdf_error err;
    assert_int_equal(run_stage(s, b, m, NULL, &err), MDF_OK);
    int frozen = 0, moved = 0, free_atoms = 0;
    double min_free_move = INFINITY;
    for (int i = 0; i < 2; i++) {
        mdf_frame end;
        TU_CALL(mdf_batch_get_frame, b, (size_t)i, &end);
        for (int64_t a = 0; a < end.natoms; a++) {
            const double *x0 = start[i].positions + 3 * a, *x1 = end.positions + 3 * a;
            double d = sqrt(pow(x1[0] - x0[0], 2) + pow(x1[1] - x0[1], 2) + pow(x1[2] - x0[2], 2));
            if (mdf_batch_is_frozen(b, (size_t)i, a)) {
                frozen++;
                assert_memory_equal(x0, x1, 3 * sizeof(double)); /* exactly in place */
                for (int k = 0; k < 3; k++) {
                    assert_true(end.velocities[3 * a + k] == 0.0);
                    assert_true(end.forces[3 * a + k] == 0.0);
                }
            } else {
                free_atoms++;
                moved += d > 1e-3;
                min_free_move = fmin(min_free_move, d);
            }
        }
        mdf_frame_free(&end);
        mdf_frame_free(&start[i]);
    }
    printf("# freeze: %d frozen atoms fixed over 100 steps; %d of %d free atoms moved > 1e-3 A (min %.3g A)\n",
           frozen, moved, free_atoms, min_free_move);
    assert_int_equal(frozen, 27 + 22);
    assert_true(moved >= 0.95 * free_atoms);
    mdf_batch_destroy(b);
    mdf_model_destroy(m);
}

/* ---- wrap ------------------------------------------------------------------------- */

/* Two crystals whose atoms start up to two lattice vectors outside their
 * cell: a triclinic, fully periodic one, and a cubic slab open along z. */
static mdf_batch *shifted_crystals(void)
{
    mdf_frame f[2];
    for (int i = 0; i < 2; i++) {
        f[i] = tu_fcc(3, 3, 3, LATTICE, 18, i == 0 ? 0.08 : 0.0, 0.05, 500 + (uint64_t)i);
        if (i == 1) f[i].pbc[2] = 0;
        for (int64_t a = 0; a < f[i].natoms; a++) {
            int n[3] = {(int)(a % 3) - 1, (int)(a % 5) - 2, i == 0 ? (int)(a % 2) : 0};
            for (int k = 0; k < 3; k++)
                for (int q = 0; q < 3; q++) f[i].positions[3 * a + q] += n[k] * f[i].cell[3 * k + q];
        }
    }
    mdf_batch *b = NULL;
    TU_CALL(mdf_batch_create, f, 2, NULL, &b);
    TU_CALL(mdf_batch_thermalize, b, 100.0, 3, 0);
    for (int i = 0; i < 2; i++) mdf_frame_free(&f[i]);
    return b;
}

static void inverse3(const double m[9], double inv[9])
{
    double det = m[0] * (m[4] * m[8] - m[5] * m[7]) - m[1] * (m[3] * m[8] - m[5] * m[6]) +
                 m[2] * (m[3] * m[7] - m[4] * m[6]);
    inv[0] = (m[4] * m[8] - m[5] * m[7]) / det;
    inv[1] = (m[2] * m[7] - m[1] * m[8]) / det;
    inv[2] = (m[1] * m[5] - m[2] * m[4]) / det;
    inv[3] = (m[5] * m[6] - m[3] * m[8]) / det;
    inv[4] = (m[0] * m[8] - m[2] * m[6]) / det;
    inv[5] = (m[2] * m[3] - m[0] * m[5]) / det;
    inv[6] = (m[3] * m[7] - m[4] * m[6]) / det;
    inv[7] = (m[1] * m[6] - m[0] * m[7]) / det;
    inv[8] = (m[0] * m[4] - m[1] * m[3]) / det;
}

static void test_wrap(void **state)
{
    (void)state;
    mdf_model *m = argon_model();
    const int steps = 100, every = 5;
    mdf_batch *plain = shifted_crystals(), *wrapped = shifted_crystals();
    mdf_error err;
    mdf_stage_report rep_plain, rep_wrap;
    assert_int_equal(run_stage(nve_stage(steps, 5.0), plain, m, &rep_plain, &err), MDF_OK);
    mdf_stage *s = nve_stage(steps, 5.0);
    mdf_hook *h = NULL;
    TU_CALL(mdf_hook_create_wrap, every, &h);
    add_hook(s, h);
    assert_int_equal(run_stage(s, wrapped, m, &rep_wrap, &err), MDF_OK);
    double worst_inside = 0.0, worst_diff = 0.0;
    int translated = 0;
    for (int i = 0; i < 2; i++) {
        mdf_frame a, w;
        TU_CALL(mdf_batch_get_frame, plain, (size_t)i, &a);
        TU_CALL(mdf_batch_get_frame, wrapped, (size_t)i, &w);
        double inv[9];
        inverse3(w.cell, inv);
        for (int64_t k = 0; k < w.natoms; k++) {
            const double *xa = a.positions + 3 * k, *xw = w.positions + 3 * k;
            double sw[3], d[3] = {xw[0] - xa[0], xw[1] - xa[1], xw[2] - xa[2]}, sd[3];
            for (int q = 0; q < 3; q++) {
                sw[q] = xw[0] * inv[q] + xw[1] * inv[3 + q] + xw[2] * inv[6 + q];
                sd[q] = d[0] * inv[q] + d[1] * inv[3 + q] + d[2] * inv[6 + q];
            }
            double n[3];
            for (int q = 0; q < 3; q++) {
                n[q] = round(sd[q]);
                if (w.pbc[q]) { /* inside the cell along periodic directions */
                    worst_inside = fmax(worst_inside, fmax(-sw[q], sw[q] - 1.0));
                } else {
                    assert_true(n[q] == 0.0); /* never wrapped along an open direction */
                }
            }
            translated += n[0] != 0.0 || n[1] != 0.0 || n[2] != 0.0;
            /* Unwrapping (adding the lattice vectors back) recovers the plain run. */
            for (int q = 0; q < 3; q++) {
                double back = xw[q] - (n[0] * w.cell[q] + n[1] * w.cell[3 + q] + n[2] * w.cell[6 + q]);
                worst_diff = fmax(worst_diff, fabs(back - xa[q]));
            }
        }
        mdf_frame_free(&a);
        mdf_frame_free(&w);
    }
    printf("# wrap: %d of 216 atoms translated; outside the cell by at most %.2e (fractional); unwrapped vs plain "
           "max |dx| %.2e A; list rebuilds %lld (plain %lld)\n",
           translated, worst_inside, worst_diff, (long long)rep_wrap.list_rebuilds, (long long)rep_plain.list_rebuilds);
    assert_true(translated > 100);
    assert_true(worst_inside <= 1e-12);
    assert_true(worst_diff < 1e-9);
    mdf_batch_destroy(plain);
    mdf_batch_destroy(wrapped);
    mdf_model_destroy(m);
}

/* ---- drift monitor ------------------------------------------------------------------ */

static void test_drift(void **state)
{
    (void)state;
    mdf_model *m = argon_model();
    const int nsys = 3;
    mdf_error err;

    /* A threshold below round-off: every system warns, once. */
    mdf_batch *b = crystals(nsys, 2, 80.0);
    FILE *warn = tmpfile();
    mdf_stage *s = nve_stage(30, 5.0);
    mdf_hook *h = NULL;
    TU_CALL(mdf_hook_create_drift_monitor, 1e-15, MDF_DRIFT_WARN, 1, warn, &h);
    add_hook(s, h);
    assert_int_equal(run_stage(s, b, m, NULL, &err), MDF_OK);
    printf("# drift warn: %d lines for %d systems\n", count_lines(warn, NULL), nsys);
    assert_int_equal(count_lines(warn, NULL), nsys);
    for (int i = 0; i < nsys; i++) {
        char want[64];
        snprintf(want, sizeof want, "system id %d ", i);
        assert_int_equal(count_lines(warn, want), 1);
    }
    fclose(warn);
    mdf_batch_destroy(b);

    /* A generous one (1 eV/atom, ~10^5 times the fluctuation): silent. */
    b = crystals(nsys, 2, 80.0);
    warn = tmpfile();
    s = nve_stage(30, 5.0);
    TU_CALL(mdf_hook_create_drift_monitor, 1.0, MDF_DRIFT_STOP, 1, warn, &h);
    add_hook(s, h);
    assert_int_equal(run_stage(s, b, m, NULL, &err), MDF_OK);
    assert_int_equal(count_lines(warn, NULL), 0);
    fclose(warn);
    mdf_batch_destroy(b);

    /* STOP: the run ends with an error naming the systems (one shard, so one
     * task sees them all). */
    b = crystals(nsys, 1, 80.0);
    s = nve_stage(200, 5.0);
    TU_CALL(mdf_hook_create_drift_monitor, 1e-15, MDF_DRIFT_STOP, 1, NULL, &h);
    add_hook(s, h);
    mdf_stage_report rep;
    assert_int_equal(run_stage(s, b, m, &rep, &err), MDF_ERR_PHYSICS);
    printf("# drift stop after %lld steps: %s\n", (long long)rep.steps, err.message);
    for (int i = 0; i < nsys; i++) {
        char want[64];
        snprintf(want, sizeof want, "system id %d ", i);
        assert_non_null(strstr(err.message, want));
    }
    assert_true(rep.steps < 200);
    mdf_batch_destroy(b);
    mdf_model_destroy(m);
}

/* ---- timing ---------------------------------------------------------------------------- */

static void test_timing(void **state)
{
    (void)state;
    mdf_model *m = argon_model();
    mdf_batch *b = crystals(3, 3, 80.0);
    FILE *out = tmpfile();
    const int steps = 40;
    mdf_stage *s = nve_stage(steps, 5.0);
    mdf_hook *h = NULL, *other = NULL;
    TU_CALL(mdf_hook_create_timing, out, &h);
    add_hook(s, h);
    TU_CALL(mdf_hook_create_wrap, 1, &other);
    add_hook(s, other);
    mdf_error err;
    mdf_error_clear(&err);
    mdf_stage_report rep;
    TU_CALL(mdf_stage_run, s, b, m, &rep);
    mdf_timing_report t;
    TU_CALL(mdf_hook_timing_get, h, &t);
    assert_int_equal(mdf_hook_timing_get(other, &t, &err), MDF_ERR_INVALID);
    TU_CALL(mdf_hook_timing_get, h, &t);
    printf("# timing: %lld steps, %.4f s, mean %.3e s, max %.3e s (stage wall %.4f s)\n", (long long)t.steps,
           t.wall_seconds, t.mean_step_seconds, t.max_step_seconds, rep.wall_seconds);
    assert_int_equal(t.steps, steps);
    assert_true(t.wall_seconds > 0.0 && t.wall_seconds <= rep.wall_seconds);
    assert_true(t.mean_step_seconds > 0.0);
    assert_true(fabs(t.mean_step_seconds * (double)steps - t.wall_seconds) <= 1e-12 * t.wall_seconds);
    assert_true(t.max_step_seconds >= t.mean_step_seconds * (1.0 - 1e-12));
    char want[32];
    snprintf(want, sizeof want, "timing: %d steps", steps);
    assert_int_equal(count_lines(out, want), 1);
    mdf_stage_destroy(s);
    fclose(out);
    mdf_batch_destroy(b);
    mdf_model_destroy(m);
}

static int setup(void **state)
{
    (void)state;
    tu_start(NULL, 2, 0);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    tu_stop();
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_log_errors), cmocka_unit_test(test_log), cmocka_unit_test(test_log_lagging_shard),
        cmocka_unit_test(test_nan_stop),   cmocka_unit_test(test_nan_quarantine),
        cmocka_unit_test(test_nan_binned_before_check),
        cmocka_unit_test(test_force_clamp), cmocka_unit_test(test_freeze),
        cmocka_unit_test(test_wrap),       cmocka_unit_test(test_drift),
        cmocka_unit_test(test_timing),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
