/* mdflow tests — whole runs on the GPU against the same runs on the CPU:
 * what a first GPU run must show beyond the single codelets (test_cuda.c,
 * test_cuda_stage.c).
 *
 *  - inflight: a fused stage (FIRE for 25 steps, then Langevin at 25 K for
 *    30 steps from entry velocities) over 40 argon clusters of 13-55 atoms
 *    under a 400-atom budget, so finished systems are handed out and new
 *    ones refilled in place many times. Every system's final frame (status,
 *    steps, energy, positions, velocities) against the CPU run's.
 *  - device sink: snapshots every 5 steps of a 20-step Nosé–Hoover run of
 *    three systems into a device sink (GPU run) and into a host sink (CPU
 *    run): the same frames in the same order, equal within tolerance.
 *  - large: one system of 1,000,188 atoms (fcc 63x63x63), energy, forces
 *    and virial at step 0, then 10 NVE steps: on the GPU it spans thousands
 *    of blocks in every per-system kernel.
 *  - big optimisers: L-BFGS (memory 10) and FIRE2, 10 steps each on one
 *    system of 19,652 atoms: their many-block paths (L-BFGS keeps one block
 *    per system up to 4,096 atoms, which test_cuda_stage covers).
 *  - mixed: CPU and CUDA workers together under dmdas on one batch of 48
 *    clusters and a 4,000-atom crystal cut into 8 model slices (slices of
 *    one system may run on both kinds of worker in one evaluation), 12
 *    shards, 40 Langevin steps: both kinds of worker execute tasks, and the
 *    results equal the CPU-only run's.
 *  - bytes: the inflight run twice on the GPU: every final frame identical
 *    byte for byte (the GPU's sums have a fixed order; no atomics).
 *  - rebuild rule: 30 NVE steps of a hot 500-atom and a hot 20,000-atom
 *    crystal (the binning's one-block and multi-block paths) with LAMMPS's
 *    "every 5 check no" and "every 3 check yes" with a wider skin (some
 *    checks find an atom past skin/2, some none) (rebuild_every,
 *    rebuild_nocheck): the same number of list builds as on the CPU, and
 *    the same final frames.
 *
 * The GPU runs use the gpu-first policy (tests/gpu_first.c): every task with
 * a CUDA implementation runs on a GPU, the census and other host-view tasks
 * on one CPU worker; each GPU run asserts that no CUDA-capable task reached
 * the CPU. Without a CUDA worker the program exits 77 (skipped).
 *
 * MDF_TEST_CUDA_EMULATE=1 runs the comparisons with the "GPU" side on CPU
 * workers, its starting positions moved by up to 1e-11 Å in the dynamics
 * cases: a check of the test and of its tolerances against an initial error
 * far larger than the GPU's round-off (it tests no CUDA code). The 1 M-atom
 * case then runs only with MDF_TEST_CUDA_LARGE=1 (minutes on 2 cores).
 *
 * Tolerances, as test_cuda_stage.c argues for up to 50 steps (round-off of
 * ~1e-15 per step carried forward): positions and velocities 1e-7 (55
 * steps), energies 1e-8 relative with a floor of 1 meV per atom; statuses
 * and step counters exactly (no decision here hangs on a threshold: stages
 * end on step counts). Single points: energies and virials 1e-10 relative,
 * forces 1e-9 eV/Å (test_cuda.c's). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <starpu.h>
#include "testutil.h"
#include "gpu_first.h"

enum { RUN_CPU = 0, RUN_GPU = 1 };

#define NDATA 40
#define BUDGET_ATOMS 400
#define RELAX_STEPS 25
#define MD_STEPS 30
#define CHUNK_ATOMS 512   /* fixed: the automatic size depends on the worker count */
#define EMU_JITTER 1e-11

static int emulate;

/* ---- runs ------------------------------------------------------------------ */

typedef struct worker_counts {
    long cpu_tasks, cuda_tasks;
    int cuda_only; /* mdf_runtime_cuda_only() during the run */
    int nshards, nchunks; /* the batch's shards, the model's chunks */
    int ncuda_workers;
    tu_gpu_first_counts policy;
} worker_counts;

static void start(int kind, const char *sched)
{
    if (kind == RUN_CPU) tu_start(sched, -1, 0);
    else if (sched) tu_start(sched, -1, !emulate); /* every worker of both kinds */
    else tu_start_gpu_first(emulate ? 0 : -1);
    mdf_runtime_reset_stats();
}

static void stop(int kind, const char *sched, worker_counts *wc)
{
    memset(wc, 0, sizeof *wc);
    mdf_worker_stats st[64];
    int n = mdf_runtime_worker_stats(st, 64);
    for (int w = 0; w < n && w < 64; w++) {
        if (starpu_worker_get_type(w) == STARPU_CUDA_WORKER) wc->cuda_tasks += st[w].tasks;
        else wc->cpu_tasks += st[w].tasks;
    }
    if (kind == RUN_GPU && !sched) {
        wc->policy = tu_gpu_first_counts_get();
        tu_stop_gpu_first();
    } else {
        tu_stop();
    }
}

/* A GPU run under gpu-first ran its CUDA-capable tasks on the GPU. */
static void check_gpu_first(const worker_counts *wc)
{
    printf("# gpu-first: %ld tasks to the CUDA queue, %ld to the CPU queue:", wc->policy.pushed[1],
           wc->policy.pushed[0]);
    for (int k = 0; k < wc->policy.nnames; k++) printf(" %s", wc->policy.names[k]);
    printf("\n");
    assert_true(wc->policy.pushed[0] + wc->policy.pushed[1] > 0);
    if (emulate) return;
    assert_int_equal(wc->policy.cuda_capable_on_cpu, 0);
    assert_true(wc->policy.pushed[1] > 0);
    assert_true(wc->cuda_tasks > 0);
}

static void jitter(mdf_frame *f, size_t n, uint64_t seed)
{
    for (size_t i = 0; i < n; i++)
        for (int64_t k = 0; k < 3 * f[i].natoms; k++) f[i].positions[k] += EMU_JITTER * (2.0 * tu_rand(&seed) - 1.0);
}

/* ---- final states ------------------------------------------------------------ */

typedef struct sys_final {
    int seen;
    int32_t status;
    int64_t natoms, step, stage_step;
    double epot, ekin, vir[9];
    double *pos, *vel, *force;
} sys_final;

static double *dup_array(const double *src, int64_t n)
{
    double *d = calloc((size_t)(n > 0 ? n : 1), sizeof(double));
    assert_non_null(d);
    if (src) memcpy(d, src, sizeof(double) * (size_t)n);
    return d;
}

static void keep_final(sys_final *y, const mdf_frame *f, const mdf_system_view *v)
{
    y->seen++;
    y->status = v->status;
    y->natoms = f->natoms;
    y->step = v->step;
    y->stage_step = v->stage_step;
    y->epot = v->potential_energy;
    y->ekin = v->kinetic_energy;
    memcpy(y->vir, v->virial, sizeof y->vir);
    y->pos = dup_array(f->positions, 3 * f->natoms);
    y->vel = dup_array(f->velocities, 3 * f->natoms);
    y->force = dup_array(f->forces, 3 * f->natoms);
}

/* The final frames of systems [0, n) of batch b, into out[0..n). */
static void keep_batch_finals(mdf_batch *b, sys_final *out, size_t n)
{
    memset(out, 0, n * sizeof *out);
    for (size_t i = 0; i < n; i++) {
        mdf_frame g;
        memset(&g, 0, sizeof g);
        mdf_system_view v;
        TU_CALL(mdf_batch_get_frame, b, i, &g);
        TU_CALL(mdf_batch_get_system, b, i, &v);
        keep_final(&out[i], &g, &v);
        mdf_frame_free(&g);
    }
}

static void free_finals(sys_final *y, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free(y[i].pos);
        free(y[i].vel);
        free(y[i].force);
    }
    memset(y, 0, sizeof *y * n);
}

typedef struct tolerances {
    double energy_rel, virial_rel, force_abs, pos_abs, vel_abs;
} tolerances;

static const tolerances dynamics_tol = {.energy_rel = 1e-8, .virial_rel = 1e-7, .force_abs = 1e-6, .pos_abs = 1e-7,
                                        .vel_abs = 1e-7};

static double reldiff_scaled(double a, double b, double floor) { return fabs(a - b) / fmax(floor, fmax(fabs(a), fabs(b))); }

static void compare_final(const sys_final *a, const sys_final *b, const tolerances *tol, const char *what, size_t i)
{
    assert_int_equal(a->seen, 1);
    assert_int_equal(b->seen, 1);
    assert_int_equal(a->natoms, b->natoms);
    assert_int_equal(a->status, b->status);
    assert_int_equal(a->step, b->step);
    assert_int_equal(a->stage_step, b->stage_step);
    double floor_e = 1e-3 * (double)a->natoms;
    double de = reldiff_scaled(a->epot, b->epot, floor_e), dk = reldiff_scaled(a->ekin, b->ekin, floor_e);
    double wmax = floor_e, dw = 0.0, df = 0.0, dx = 0.0, dv = 0.0;
    for (int k = 0; k < 9; k++) wmax = fmax(wmax, fmax(fabs(a->vir[k]), fabs(b->vir[k])));
    for (int k = 0; k < 9; k++) {
        if (isfinite(a->vir[k]) != isfinite(b->vir[k])) dw = INFINITY; /* a virial on one side only */
        else if (isfinite(a->vir[k])) dw = fmax(dw, fabs(a->vir[k] - b->vir[k]) / wmax);
    }
    for (int64_t k = 0; k < 3 * a->natoms; k++) {
        df = fmax(df, fabs(a->force[k] - b->force[k]));
        dx = fmax(dx, fabs(a->pos[k] - b->pos[k]));
        dv = fmax(dv, fabs(a->vel[k] - b->vel[k]));
    }
    if (i < 3 || de > tol->energy_rel || dx > tol->pos_abs || getenv("MDF_TEST_VERBOSE"))
        printf("# %s system %zu (%lld atoms, step %lld): rel dE %.2e, rel dKE %.2e, rel dW %.2e, |dF| %.2e, "
               "|dx| %.2e, |dv| %.2e\n",
               what, i, (long long)a->natoms, (long long)a->step, de, dk, dw, df, dx, dv);
    assert_true(de <= tol->energy_rel);
    assert_true(dk <= tol->energy_rel);
    assert_true(dw <= tol->virial_rel);
    assert_true(df <= tol->force_abs);
    assert_true(dx <= tol->pos_abs);
    assert_true(dv <= tol->vel_abs);
}

/* ---- inflight: relax + md, fused, with refills ---------------------------------- */

static mdf_model *argon(double rc)
{
    mdf_lj_config lj = tu_argon(rc, 1);
    mdf_model *m = NULL;
    TU_CALL(mdf_model_create_lj, &lj, &m);
    return m;
}

/* Diagnostics on a GPU node (defaults: the test's case):
 * MDF_TEST_INFLIGHT_RELAX / _MD, the two stages' methods (fire, langevin);
 * MDF_TEST_INFLIGHT_BUDGET, the sampler's atoms (400: refills; 100000: none);
 * MDF_TEST_VERBOSE=1 prints every system's differences. */
static const char *env_or(const char *name, const char *dflt)
{
    const char *v = getenv(name);
    return v && *v ? v : dflt;
}

static mdf_stage *relax_then_md(void)
{
    mdf_stage_config rc, mc;
    mdf_stage_config_init(&rc);
    rc.integrator = env_or("MDF_TEST_INFLIGHT_RELAX", "fire");
    rc.chunk_atoms = CHUNK_ATOMS;
    rc.check_interval = 5;
    mdf_stage *relax = NULL, *md = NULL, *fused = NULL;
    TU_CALL(mdf_stage_create, &rc, &relax);
    TU_CALL(mdf_stage_add_criterion, relax, MDF_CRITERION_STEPS, RELAX_STEPS);
    mdf_stage_config_init(&mc);
    mc.integrator = env_or("MDF_TEST_INFLIGHT_MD", "langevin");
    mc.status = 1;
    mc.converged_status = 2;
    mc.chunk_atoms = CHUNK_ATOMS;
    mc.check_interval = 5;
    mc.params.dt_fs = 5.0;
    mc.params.temperature_K = 25.0;
    mc.params.seed = 4;
    mc.entry_temperature_K = 25.0;
    TU_CALL(mdf_stage_create, &mc, &md);
    TU_CALL(mdf_stage_add_criterion, md, MDF_CRITERION_STEPS, MD_STEPS);
    TU_CALL(mdf_fuse, relax, md, &fused);
    TU_CALL(mdf_stage_set_max_steps, fused, 5000);
    return fused;
}

static int keep_exit(void *user, const mdf_frame *f, const mdf_system_view *v)
{
    sys_final *fin = (sys_final *)user;
    assert_true(v->id >= 0 && v->id < NDATA);
    keep_final(&fin[v->id], f, v);
    return 0;
}

static void run_inflight(int kind, int jittered, sys_final fin[NDATA], mdf_stage_report *rep, worker_counts *wc)
{
    start(kind, NULL);
    mdf_frame frames[NDATA];
    for (int i = 0; i < NDATA; i++) frames[i] = tu_mixed_cluster(i, 0.05, 3);
    if (jittered) jitter(frames, NDATA, 17);
    mdf_sampler_config sc;
    mdf_sampler_config_init(&sc);
    sc.max_atoms = atoll(env_or("MDF_TEST_INFLIGHT_BUDGET", "400"));
    mdf_sampler *sampler = NULL;
    TU_CALL(mdf_sampler_create, frames, NDATA, &sc, &sampler);
    mdf_model *m = argon(6.5);
    mdf_stage *s = relax_then_md();
    memset(fin, 0, sizeof(sys_final) * NDATA);
    mdf_inflight_config ic;
    mdf_inflight_config_init(&ic);
    ic.sampler = sampler;
    ic.refill_interval = 5;
    ic.refill_fraction = 0.0;
    ic.nshards = 2;
    ic.on_exit = keep_exit;
    ic.user = fin;
    TU_CALL(mdf_stage_run_inflight, s, m, &ic, rep);
    mdf_stage_destroy(s);
    mdf_model_destroy(m);
    mdf_sampler_destroy(sampler);
    for (int i = 0; i < NDATA; i++) mdf_frame_free(&frames[i]);
    stop(kind, NULL, wc);
}

static void test_inflight(void **state)
{
    (void)state;
    static sys_final cpu[NDATA], gpu[NDATA];
    mdf_stage_report rc, rg;
    worker_counts wc, wg;
    run_inflight(RUN_CPU, 0, cpu, &rc, &wc);
    run_inflight(RUN_GPU, emulate, gpu, &rg, &wg);
    check_gpu_first(&wg);
    printf("# inflight: CPU %lld steps, %lld refills; GPU %lld steps, %lld refills\n", (long long)rc.steps,
           (long long)rc.refills, (long long)rg.steps, (long long)rg.refills);
    /* Refill points wait for the census, which arrives when the tasks run:
     * the refill count and the run's length depend on timing, a system's
     * trajectory does not (each follows the one it would follow alone). */
    if (!getenv("MDF_TEST_INFLIGHT_BUDGET"))
        assert_true(rc.refills >= 2 && rg.refills >= 2); /* the budget holds about a quarter of the dataset */
    if (getenv("MDF_TEST_VERBOSE")) {
        int bad = 0;
        for (size_t i = 0; i < NDATA; i++) {
            double de = fabs(cpu[i].epot - gpu[i].epot) / fmax(1e-3 * (double)cpu[i].natoms, fabs(cpu[i].epot));
            if (de > dynamics_tol.energy_rel) bad++;
            printf("# inflight system %zu: %lld atoms, status %d/%d, step %lld/%lld, rel dE %.2e\n", i,
                   (long long)cpu[i].natoms, (int)cpu[i].status, (int)gpu[i].status, (long long)cpu[i].step,
                   (long long)gpu[i].step, de);
        }
        printf("# inflight: %d of %d systems differ\n", bad, NDATA);
    }
    assert_int_equal(rc.converged, NDATA);
    assert_int_equal(rg.converged, NDATA);
    for (size_t i = 0; i < NDATA; i++) {
        assert_int_equal(cpu[i].status, 2);
        assert_int_equal(cpu[i].step, RELAX_STEPS + MD_STEPS); /* every system ran both parts */
        compare_final(&cpu[i], &gpu[i], &dynamics_tol, "inflight", i);
    }
    free_finals(cpu, NDATA);
    free_finals(gpu, NDATA);
}

/* Two GPU runs, every byte of every final frame equal. */
static void test_bytes(void **state)
{
    (void)state;
    static sys_final a[NDATA], b[NDATA];
    mdf_stage_report ra, rb;
    worker_counts wa, wb;
    run_inflight(RUN_GPU, 0, a, &ra, &wa);
    run_inflight(RUN_GPU, 0, b, &rb, &wb);
    check_gpu_first(&wb);
    size_t differing = 0;
    for (size_t i = 0; i < NDATA; i++) {
        assert_int_equal(a[i].natoms, b[i].natoms);
        size_t bytes = sizeof(double) * 3 * (size_t)a[i].natoms;
        int same = a[i].status == b[i].status && a[i].step == b[i].step &&
                   memcmp(&a[i].epot, &b[i].epot, sizeof a[i].epot) == 0 &&
                   memcmp(&a[i].ekin, &b[i].ekin, sizeof a[i].ekin) == 0 &&
                   memcmp(a[i].vir, b[i].vir, sizeof a[i].vir) == 0 && memcmp(a[i].pos, b[i].pos, bytes) == 0 &&
                   memcmp(a[i].vel, b[i].vel, bytes) == 0 && memcmp(a[i].force, b[i].force, bytes) == 0;
        if (!same) {
            differing++;
            printf("# system %zu differs between the two GPU runs: E %.17g vs %.17g\n", i, a[i].epot, b[i].epot);
        }
    }
    printf("# %zu of %d final frames differ between two GPU runs\n", differing, NDATA);
    assert_int_equal(differing, 0);
    free_finals(a, NDATA);
    free_finals(b, NDATA);
}

/* ---- snapshots into a device sink ----------------------------------------------- */

#define SNAP_STEPS 20
#define SNAP_EVERY 5
#define SNAP_SYS 3

static size_t snap_frames(mdf_frame *f)
{
    static const int pbc0[3] = {0, 0, 0};
    static const int ar[1] = {18};
    double cell[9] = {15.0, 0, 0, 0, 15.0, 0, 0, 0, 15.0};
    size_t n = 0;
    f[n++] = tu_fcc(4, 4, 4, 5.3, 18, 0.0, 0.05, 301);
    f[n++] = tu_random(60, cell, pbc0, 3.1, ar, 1, 302);
    f[n++] = tu_fcc(3, 3, 3, 5.3, 18, 0.1, 0.05, 303);
    return n;
}

typedef struct snap_set {
    int64_t n;
    mdf_frame f[SNAP_SYS * (SNAP_STEPS / SNAP_EVERY + 1)];
} snap_set;

static int64_t info_int(const mdf_frame *f, const char *key)
{
    const char *v = mdf_frame_get_info(f, key);
    assert_non_null(v);
    return strtoll(v, NULL, 10);
}

static void run_snapshots(int kind, int jittered, snap_set *out, worker_counts *wc)
{
    start(kind, NULL);
    mdf_frame frames[SNAP_SYS];
    size_t n = snap_frames(frames);
    if (jittered) jitter(frames, n, 29);
    mdf_model *m = argon(6.0);
    mdf_batch_config bc;
    mdf_batch_config_init(&bc);
    bc.nshards = 2;
    mdf_batch *b = NULL;
    TU_CALL(mdf_batch_create, frames, n, &bc, &b);
    TU_CALL(mdf_batch_thermalize, b, 60.0, 5, 0);
    mdf_sink *sink = NULL;
    int64_t cap = (int64_t)(sizeof out->f / sizeof out->f[0]);
    if (kind == RUN_GPU) TU_CALL(mdf_sink_create_device, cap, cap * 256, &sink);
    else TU_CALL(mdf_sink_create_host, cap, cap * 256, &sink);
    mdf_stage_config sc;
    mdf_stage_config_init(&sc);
    sc.integrator = "nose_hoover";
    sc.max_steps = SNAP_STEPS;
    sc.chunk_atoms = CHUNK_ATOMS;
    sc.params.dt_fs = 2.0;
    sc.params.temperature_K = 60.0;
    tu_param(&sc.method_params, "tau_fs", 50.0);
    mdf_stage *s = NULL;
    TU_CALL(mdf_stage_create, &sc, &s);
    mdf_hook *h = NULL;
    TU_CALL(mdf_hook_create_snapshot, sink, SNAP_EVERY, &h);
    TU_CALL(mdf_stage_add_hook, s, h);
    mdf_stage_report rep;
    TU_CALL(mdf_stage_run, s, b, m, &rep);
    mdf_stage_destroy(s);
    out->n = mdf_sink_length(sink);
    assert_true(out->n <= cap);
    for (int64_t i = 0; i < out->n; i++) TU_CALL(mdf_sink_read, sink, i, &out->f[i]);
    mdf_sink_destroy(sink);
    mdf_batch_destroy(b);
    mdf_model_destroy(m);
    for (size_t i = 0; i < n; i++) mdf_frame_free(&frames[i]);
    stop(kind, NULL, wc);
}

static void test_device_sink(void **state)
{
    (void)state;
    static snap_set cpu, gpu;
    worker_counts wc, wg;
    run_snapshots(RUN_CPU, 0, &cpu, &wc);
    run_snapshots(RUN_GPU, emulate, &gpu, &wg);
    check_gpu_first(&wg);
    printf("# snapshots: %lld on the CPU (host sink), %lld on the GPU (device sink)\n", (long long)cpu.n,
           (long long)gpu.n);
    /* Steps 0, 5, ..., 20 of every system. */
    assert_int_equal(cpu.n, SNAP_SYS * (SNAP_STEPS / SNAP_EVERY + 1));
    assert_int_equal(gpu.n, cpu.n);
    double dx = 0.0, dv = 0.0;
    for (int64_t i = 0; i < cpu.n; i++) {
        const mdf_frame *a = &cpu.f[i], *b = &gpu.f[i];
        assert_int_equal(info_int(a, "mdf_step"), info_int(b, "mdf_step"));
        assert_int_equal(info_int(a, "mdf_system_id"), info_int(b, "mdf_system_id"));
        assert_int_equal(a->natoms, b->natoms);
        for (int64_t k = 0; k < 3 * a->natoms; k++) {
            dx = fmax(dx, fabs(a->positions[k] - b->positions[k]));
            dv = fmax(dv, fabs(a->velocities[k] - b->velocities[k]));
        }
    }
    printf("# snapshots: max |dx| %.2e Å, max |dv| %.2e\n", dx, dv);
    assert_true(dx <= dynamics_tol.pos_abs);
    assert_true(dv <= dynamics_tol.vel_abs);
    for (int64_t i = 0; i < cpu.n; i++) {
        mdf_frame_free(&cpu.f[i]);
        mdf_frame_free(&gpu.f[i]);
    }
}

/* ---- one system of a million atoms ----------------------------------------------- */

#define LARGE_CELLS 63 /* 4 * 63^3 = 1,000,188 atoms */
#define LARGE_STEPS 10

static void run_large(int kind, sys_final *single, sys_final *after, worker_counts *wc)
{
    start(kind, NULL);
    mdf_frame f = tu_fcc(LARGE_CELLS, LARGE_CELLS, LARGE_CELLS, 5.3, 18, 0.0, 0.05, 401);
    mdf_model *m = argon(6.0);
    mdf_batch *b = NULL;
    TU_CALL(mdf_batch_create, &f, 1, NULL, &b);
    TU_CALL(mdf_compute_forces, b, m);
    mdf_system_view v;
    mdf_frame g;
    memset(&g, 0, sizeof g);
    TU_CALL(mdf_batch_get_frame, b, 0, &g);
    TU_CALL(mdf_batch_get_system, b, 0, &v);
    keep_final(single, &g, &v);
    mdf_frame_free(&g);
    TU_CALL(mdf_batch_thermalize, b, 40.0, 6, 0);
    mdf_md_config md;
    mdf_md_config_init(&md);
    md.dt_fs = 2.0;
    md.steps = LARGE_STEPS;
    md.chunk_atoms = 1 << 20; /* one chunk: the single large task a GPU wants */
    md.thermo = NULL;
    mdf_md_report rep;
    TU_CALL(mdf_md_run, b, m, &md, &rep);
    TU_CALL(mdf_batch_get_frame, b, 0, &g);
    TU_CALL(mdf_batch_get_system, b, 0, &v);
    keep_final(after, &g, &v);
    mdf_frame_free(&g);
    mdf_batch_destroy(b);
    mdf_model_destroy(m);
    mdf_frame_free(&f);
    stop(kind, NULL, wc);
}

static void test_large(void **state)
{
    (void)state;
    if (emulate && !getenv("MDF_TEST_CUDA_LARGE")) {
        printf("# emulation: the 1 M-atom case needs MDF_TEST_CUDA_LARGE=1\n");
        skip();
    }
    sys_final c0, c1, g0, g1;
    memset(&c0, 0, sizeof c0);
    memset(&c1, 0, sizeof c1);
    memset(&g0, 0, sizeof g0);
    memset(&g1, 0, sizeof g1);
    worker_counts wc, wg;
    run_large(RUN_CPU, &c0, &c1, &wc);
    run_large(RUN_GPU, &g0, &g1, &wg);
    check_gpu_first(&wg);
    assert_int_equal(c0.natoms, 4 * LARGE_CELLS * LARGE_CELLS * LARGE_CELLS);
    tolerances single = {.energy_rel = 1e-10, .virial_rel = 1e-10, .force_abs = 1e-9, .pos_abs = 0.0, .vel_abs = INFINITY};
    compare_final(&c0, &g0, &single, "1 M atoms, step 0", 0);
    compare_final(&c1, &g1, &dynamics_tol, "1 M atoms, 10 NVE steps", 0);
    free_finals(&c0, 1);
    free_finals(&c1, 1);
    free_finals(&g0, 1);
    free_finals(&g1, 1);
}

/* ---- optimisers on one system of 19,652 atoms ------------------------------------ */

/* L-BFGS takes its many-block path above 4,096 atoms per system (smaller
 * shards keep one block per system, which test_cuda_stage covers); FIRE2 is
 * many-block at every size. 10 steps each from a jittered fcc crystal. */
#define BIGOPT_CELLS 17
#define BIGOPT_STEPS 10

static void run_big_optimiser(int kind, const char *method, sys_final *out, worker_counts *wc)
{
    start(kind, NULL);
    mdf_frame f = tu_fcc(BIGOPT_CELLS, BIGOPT_CELLS, BIGOPT_CELLS, 5.3, 18, 0.0, 0.08, 501);
    if (emulate && kind == RUN_GPU) jitter(&f, 1, 61);
    mdf_model *m = argon(6.0);
    mdf_batch *b = NULL;
    TU_CALL(mdf_batch_create, &f, 1, NULL, &b);
    mdf_stage_config sc;
    mdf_stage_config_init(&sc);
    sc.integrator = method;
    sc.max_steps = BIGOPT_STEPS;
    sc.chunk_atoms = 1 << 20;
    mdf_param_list mp; /* lbfgs's history; the other optimisers take their defaults */
    mdf_param_list_init(&mp);
    tu_param(&mp, "lbfgs.memory", 10);
    tu_method_params(&sc, &mp);
    mdf_stage *s = NULL;
    TU_CALL(mdf_stage_create, &sc, &s);
    mdf_stage_report rep;
    TU_CALL(mdf_stage_run, s, b, m, &rep);
    mdf_stage_destroy(s);
    TU_CALL(mdf_batch_sync, b);
    keep_batch_finals(b, out, 1);
    mdf_batch_destroy(b);
    mdf_model_destroy(m);
    mdf_frame_free(&f);
    stop(kind, NULL, wc);
}

static void big_optimiser(const char *method)
{
    sys_final cpu, gpu;
    worker_counts wc, wg;
    run_big_optimiser(RUN_CPU, method, &cpu, &wc);
    run_big_optimiser(RUN_GPU, method, &gpu, &wg);
    check_gpu_first(&wg);
    assert_int_equal(cpu.step, BIGOPT_STEPS);
    compare_final(&cpu, &gpu, &dynamics_tol, method, 0);
    free_finals(&cpu, 1);
    free_finals(&gpu, 1);
}

/* ---- the rebuild rule (mdf_nl_rebuild_due) on both binning paths --------------- */

#define RULE_STEPS 30

static void run_rule(int kind, int every, int nocheck, double skin, sys_final *out, int64_t *builds,
                     worker_counts *wc)
{
    start(kind, NULL);
    mdf_frame f[2] = {tu_fcc(5, 5, 5, 5.3, 18, 0.0, 0.05, 71), tu_fcc(17, 17, 17, 5.3, 18, 0.0, 0.05, 72)};
    if (emulate && kind == RUN_GPU) jitter(f, 2, 73);
    mdf_model *m = argon(6.0);
    mdf_batch *b = NULL;
    TU_CALL(mdf_batch_create, f, 2, NULL, &b);
    TU_CALL(mdf_batch_thermalize, b, 600.0, 2026, 0);
    mdf_stage_config sc;
    mdf_stage_config_init(&sc);
    sc.integrator = "velocity_verlet";
    sc.params.dt_fs = 5.0;
    sc.max_steps = RULE_STEPS;
    sc.skin = skin;
    sc.rebuild_every = every;
    sc.rebuild_nocheck = nocheck;
    sc.chunk_atoms = 1 << 20;
    mdf_stage *s = NULL;
    TU_CALL(mdf_stage_create, &sc, &s);
    mdf_stage_report rep;
    TU_CALL(mdf_stage_run, s, b, m, &rep);
    mdf_stage_destroy(s);
    TU_CALL(mdf_batch_sync, b);
    *builds = rep.list_rebuilds;
    keep_batch_finals(b, out, 2);
    mdf_batch_destroy(b);
    mdf_model_destroy(m);
    for (int k = 0; k < 2; k++) mdf_frame_free(&f[k]);
    stop(kind, NULL, wc);
}

static void test_rebuild_rule(void **state)
{
    (void)state;
    /* every 5 check no (skin 0.3 Å), every 3 check yes with a skin of 1 Å:
     * some checks find an atom past skin/2, some none */
    const int rules[2][2] = {{5, 1}, {3, 0}};
    const double skins[2] = {0.3, 1.0};
    for (int r = 0; r < 2; r++) {
        sys_final cpu[2], gpu[2];
        int64_t bc = 0, bg = 0;
        worker_counts wc, wg;
        run_rule(RUN_CPU, rules[r][0], rules[r][1], skins[r], cpu, &bc, &wc);
        run_rule(RUN_GPU, rules[r][0], rules[r][1], skins[r], gpu, &bg, &wg);
        check_gpu_first(&wg);
        printf("# every %d check %s: %lld list builds on the CPU, %lld on the GPU\n", rules[r][0],
               rules[r][1] ? "no" : "yes", (long long)bc, (long long)bg);
        assert_int_equal(bc, bg);
        if (rules[r][1]) assert_int_equal(bc, 2 * (1 + RULE_STEPS / rules[r][0]));
        else assert_true(bc > 2 && bc < 2 * (1 + RULE_STEPS / rules[r][0]));
        compare_final(cpu, gpu, &dynamics_tol, rules[r][1] ? "every 5 check no" : "every 3 check yes", 0);
        compare_final(&cpu[1], &gpu[1], &dynamics_tol, rules[r][1] ? "every 5 check no, big" : "every 3, big", 0);
        free_finals(cpu, 2);
        free_finals(gpu, 2);
    }
}

static void test_big_lbfgs(void **state)
{
    (void)state;
    big_optimiser("lbfgs");
}

static void test_big_fire2(void **state)
{
    (void)state;
    big_optimiser("fire2");
}

/* ---- CPU and GPU workers on one batch under dmdas --------------------------------- */

#define MIXED_SYS 49 /* 48 clusters and a crystal of 4,000 atoms cut into 8 model slices */
#define MIXED_SHARDS 12

/* sched: a StarPU policy over every worker, or NULL: gpu-first.
 * auto_plan: shards and chunks chosen by mdflow (else fixed). */
static void run_mixed_sched(int kind, const char *sched, int jittered, int auto_plan, sys_final fin[MIXED_SYS],
                            worker_counts *wc)
{
    start(kind, sched);
    wc->cuda_only = mdf_runtime_cuda_only();
    wc->ncuda_workers = mdf_runtime_cuda_workers();
    mdf_frame frames[MIXED_SYS];
    for (int i = 0; i < MIXED_SYS - 1; i++) frames[i] = tu_mixed_cluster(i, 0.05, 9);
    /* Its slices may run on CPU and GPU workers in one evaluation: each
     * counts pairs across its edges half, on its own atoms only. */
    frames[MIXED_SYS - 1] = tu_fcc(10, 10, 10, 5.3, 18, 0.0, 0.05, 10);
    if (jittered) jitter(frames, MIXED_SYS, 41);
    mdf_model *m = argon(6.5);
    mdf_batch_config bc;
    mdf_batch_config_init(&bc);
    bc.nshards = auto_plan ? 0 : MIXED_SHARDS;
    mdf_batch *b = NULL;
    TU_CALL(mdf_batch_create, frames, MIXED_SYS, &bc, &b);
    wc->nshards = mdf_batch_nshards(b);
    TU_CALL(mdf_batch_thermalize, b, 25.0, 8, 0);
    mdf_md_config md;
    mdf_md_config_init(&md);
    md.integrator = "langevin";
    md.params.temperature_K = 25.0;
    md.params.seed = 8;
    md.dt_fs = 5.0;
    md.steps = 40;
    md.chunk_atoms = auto_plan ? 0 : CHUNK_ATOMS;
    md.thermo = NULL;
    mdf_md_report rep;
    TU_CALL(mdf_md_run, b, m, &md, &rep);
    wc->nchunks = rep.nchunks;
    TU_CALL(mdf_batch_sync, b);
    keep_batch_finals(b, fin, MIXED_SYS);
    mdf_batch_destroy(b);
    mdf_model_destroy(m);
    for (int i = 0; i < MIXED_SYS; i++) mdf_frame_free(&frames[i]);
    worker_counts plan = *wc;
    stop(kind, sched, wc);
    wc->cuda_only = plan.cuda_only;
    wc->nshards = plan.nshards;
    wc->nchunks = plan.nchunks;
    wc->ncuda_workers = plan.ncuda_workers;
}

static void run_mixed(int kind, int jittered, sys_final fin[MIXED_SYS], worker_counts *wc)
{
    run_mixed_sched(kind, "dmdas", jittered, 0, fin, wc);
}

static void test_mixed_dmdas(void **state)
{
    (void)state;
    static sys_final cpu[MIXED_SYS], mixed[MIXED_SYS];
    worker_counts wc, wm;
    run_mixed(RUN_CPU, 0, cpu, &wc);
    run_mixed(RUN_GPU, emulate, mixed, &wm);
    printf("# dmdas: %ld tasks on CPU workers, %ld on CUDA workers\n", wm.cpu_tasks, wm.cuda_tasks);
    if (!emulate) {
        assert_true(wm.cuda_tasks > 0);
        assert_true(wm.cpu_tasks > 0);
    }
    for (size_t i = 0; i < MIXED_SYS; i++) compare_final(&cpu[i], &mixed[i], &dynamics_tol, "dmdas", i);
    free_finals(cpu, MIXED_SYS);
    free_finals(mixed, MIXED_SYS);
}

/* MDF_CUDA_ONLY=1 under dmdas with every CPU and CUDA worker: the CUDA
 * workers run every task that has a CUDA implementation and the CPU
 * workers the others, task for task what gpu-first sends to each queue
 * (the same tasks: fixed shards and chunks); the results are the CPU's. */
static void test_cuda_only(void **state)
{
    (void)state;
    static sys_final cpu[MIXED_SYS], first[MIXED_SYS], only[MIXED_SYS];
    worker_counts wc, wf, wo;
    run_mixed(RUN_CPU, 0, cpu, &wc);
    run_mixed_sched(RUN_GPU, NULL, emulate, 0, first, &wf);
    setenv("MDF_CUDA_ONLY", "1", 1);
    run_mixed_sched(RUN_GPU, "dmdas", emulate, 0, only, &wo);
    unsetenv("MDF_CUDA_ONLY");
    printf("# MDF_CUDA_ONLY under dmdas: %ld tasks on CPU workers, %ld on CUDA workers; gpu-first queues: CPU %ld, "
           "CUDA %ld\n", wo.cpu_tasks, wo.cuda_tasks, wf.policy.pushed[0], wf.policy.pushed[1]);
    for (size_t i = 0; i < MIXED_SYS; i++) compare_final(&cpu[i], &only[i], &dynamics_tol, "cuda-only", i);
    if (emulate) {
        assert_int_equal(wo.cuda_only, 0); /* no CUDA worker: the variable changes nothing */
    } else {
        check_gpu_first(&wf);
        assert_int_equal(wo.cuda_only, 1);
        assert_int_equal(wo.cpu_tasks, wf.policy.pushed[0]);
        assert_int_equal(wo.cuda_tasks, wf.policy.pushed[1]);
    }
    free_finals(cpu, MIXED_SYS);
    free_finals(first, MIXED_SYS);
    free_finals(only, MIXED_SYS);
}

/* MDF_CUDA_ONLY with shards and chunks left to mdflow: planned for the
 * GPUs alone, a shard per GPU and whole systems in one chunk per shard
 * (the 4,000-atom crystal still in its two fixed slices); the results are
 * the CPU's (planned for every CPU worker). */
static void test_cuda_only_auto(void **state)
{
    (void)state;
    static sys_final cpu[MIXED_SYS], only[MIXED_SYS];
    worker_counts wc, wo;
    run_mixed_sched(RUN_CPU, "dmdas", 0, 1, cpu, &wc);
    setenv("MDF_CUDA_ONLY", "1", 1);
    run_mixed_sched(RUN_GPU, "dmdas", emulate, 1, only, &wo);
    unsetenv("MDF_CUDA_ONLY");
    printf("# automatic plan: CPU run %d shards, %d chunks; MDF_CUDA_ONLY run %d shards, %d chunks, %ld tasks on CPU "
           "workers, %ld on CUDA workers\n", wc.nshards, wc.nchunks, wo.nshards, wo.nchunks, wo.cpu_tasks,
           wo.cuda_tasks);
    for (size_t i = 0; i < MIXED_SYS; i++) compare_final(&cpu[i], &only[i], &dynamics_tol, "cuda-only auto", i);
    if (!emulate) {
        assert_int_equal(wo.cuda_only, 1);
        assert_int_equal(wo.nshards, wo.ncuda_workers); /* a shard per GPU (49 systems, 8,000+ atoms) */
    }
    free_finals(cpu, MIXED_SYS);
    free_finals(only, MIXED_SYS);
}

int main(void)
{
    /* The tests choose workers and policies themselves. */
    unsetenv("STARPU_NCPU");
    unsetenv("STARPU_NCPUS");
    unsetenv("STARPU_NCUDA");
    unsetenv("STARPU_SCHED");
    emulate = getenv("MDF_TEST_CUDA_EMULATE") && atoi(getenv("MDF_TEST_CUDA_EMULATE")) != 0;
    if (!emulate && !tu_have_cuda_worker()) {
        printf("# no CUDA worker (no GPU, or a StarPU without CUDA): skipped\n");
        return TU_SKIP;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_inflight),  cmocka_unit_test(test_bytes), cmocka_unit_test(test_device_sink),
        cmocka_unit_test(test_mixed_dmdas), cmocka_unit_test(test_cuda_only),
        cmocka_unit_test(test_cuda_only_auto), cmocka_unit_test(test_big_lbfgs), cmocka_unit_test(test_big_fire2),
        cmocka_unit_test(test_rebuild_rule),
        cmocka_unit_test(test_large),
    };
    tu_test_filter_from_env();
    return cmocka_run_group_tests(tests, NULL, NULL);
}
