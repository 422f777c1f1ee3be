/* mdflow tests — the CUDA codelets of the stage engine against the CPU ones:
 * the convergence check, the optimisers (FIRE, FIRE2, GD, L-BFGS), the
 * thermostats (Langevin, Nosé–Hoover chain, Bussi, NPT) and the hooks that
 * touch per-atom data (force clamp, freeze, wrap, NaN check).
 *
 * Each case runs the same stage on the same batch twice: once with CPU
 * workers only (the reference), once with every codelet that has a CUDA
 * implementation executed by the CUDA worker. It compares, per system,
 * status, flags, step counters, potential, kinetic and extra energies, fmax,
 * cell, positions, velocities and forces.
 *
 * How CUDA execution is forced. Where a stage submits only codelets with a
 * CUDA implementation (no convergence criterion, no NaN check), StarPU is
 * started with no CPU worker at all, exactly as test_cuda.c does (ncpus = 0,
 * all CUDA workers; with no CPU worker every task runs its CUDA
 * implementation; the run asserts 0 CPU workers). That is impossible for
 * stages with a convergence criterion or a NaN check: they also submit
 * host-view tasks (the census that tells the host how many systems are
 * left, the NaN report), which are CPU-only by design, and StarPU refuses a
 * task that no worker can run (starpu_task_submit returns -ENODEV; see
 * _starpu_worker_exists in StarPU 1.4's src/core/workers.c), so the stage
 * would fail. Those runs use one CPU worker plus the CUDA workers under
 * the "gpu-first" scheduling policy of tests/gpu_first.c (after StarPU's
 * examples/scheduler/dummy_sched.c): a task that a CUDA worker can execute
 * goes to the CUDA workers' queue, any other task to the CPU worker's queue,
 * and each worker pops only its own queue. So every codelet with a CUDA
 * implementation runs on the GPU, and only the host-view tasks (and this
 * test's CPU-only NaN-injection codelet) run on the CPU; the run asserts
 * that no task with a CUDA implementation reached the CPU queue and prints
 * the names of those that did. STARPU_NCPU(S), STARPU_NCUDA and STARPU_SCHED
 * are removed from this process's environment first: they would override
 * the workers and the policy chosen here.
 *
 * Without a CUDA worker (no GPU, or a StarPU without CUDA) the program exits
 * 77 before cmocka starts: skipped. MDF_TEST_CUDA_STAGE_EMULATE=1 runs the
 * comparison anyway with CPU workers on both sides (the "GPU" side under
 * the gpu-first policy with 1 CPU worker, or the default one with 1 CPU
 * worker), its positions moved by up to 1e-11 Å for the dynamics cases: a
 * check of the test itself, and of its tolerances against an initial error
 * thousands of times larger than the GPU's round-off, ~1e-15 Å in a
 * coordinate (it tests no CUDA code; there, the largest differences at the
 * end are 3e-11 Å, 3e-11 relative in energy, 1e-11 eV/Å in forces).
 *
 * Tolerances. The GPU kernels sum per system in a fixed order of their own
 * (blocks of atoms, then the blocks' pieces) and nvcc contracts a*b+c into
 * FMAs; the model sums forces over
 * full lists instead of half lists. The same numbers, rounded differently:
 * at one evaluation, forces differ by ~1e-14 eV/Å and energies by ~1e-15
 * relative.
 *  - Single point (convergence codelet, step 0): fmax 1e-12 relative (floor
 *    0.01 eV/Å: the lone atom has fmax 0), energies 1e-10 relative, forces
 *    1e-9 eV/Å (test_cuda.c's), positions exact; and each run's fmax equals
 *    the largest force norm of its own forces to 1e-13 relative (the block
 *    maximum against a host loop: an FMA in |F|² at most).
 *  - Dynamics (≤ 50 steps of 2 fs at 300 K, or ≤ 30 optimiser steps): the
 *    round-off of each step is carried forward and grows with the
 *    trajectories' divergence, which over 100 fs of argon is a factor of a
 *    few (test_cuda.c allows 1e-8 Å after 50 NVE steps). Random numbers are
 *    the same Philox draws on both sides; Box–Muller's log/sin/cos may
 *    differ in the last bit between libm and CUDA. Positions 1e-8 Å,
 *    velocities 1e-8 Å/(10.18 fs), forces and fmax 1e-7 eV/Å (forces move
 *    by at most ~10 eV/Å² times the position error), energies (potential,
 *    kinetic, extra) 1e-9 relative with a floor of 1 meV per atom, cells
 *    1e-10 relative. These are ~10^4 above the expected differences and far
 *    below what any real kernel bug gives (1e-4 and more after one step;
 *    even single precision would give ~1e-7 relative at once).
 *  - Discrete decisions: statuses, flags and step counters must agree
 *    exactly. The only decision that can flip on round-off is fmax <= T at
 *    the step a system converges; with the threshold used (T = 0.05 eV/Å)
 *    that needs an fmax within ~1e-12 relative of T; no system comes within
 *    2e-3 relative (fmax is recorded after every check by a callback hook,
 *    compared step by step, and each system's closest approach to T is
 *    printed). Should it happen, a convergence step differing by one is
 *    accepted only when the earlier side's fmax lies within 1e-6 relative
 *    below T (reported loudly), and that system is then not compared
 *    further. FIRE's and FIRE2's
 *    branch on the sign of F·v would need |F·v| at round-off level: not
 *    special-cased. The cap on the step length (maxstep) is continuous,
 *    and so is the force clamp; wrapping can move an atom by a lattice
 *    vector on one side only, so periodic positions are compared modulo
 *    lattice vectors. */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <starpu.h>
#include <starpu_scheduler.h>
#include <starpu_profiling.h>
#include "testutil.h"
#include "gpu_first.h"
#include "../codelets/common/mdf_kernel_common.h" /* buffer layouts of codelet hooks */

enum { RUN_CPU = 0, RUN_CUDA_ONLY = 1, RUN_CUDA_HOST = 2 };

#define MAX_SYS 8
#define RC 6.0          /* Å: cutoff + 1 Å skin fits in half of 3 fcc cells of 5.3 Å */
#define FMAX_T 0.05     /* eV/Å, the optimisers' convergence threshold */
#define CONVERGED 1     /* the stages' converged_status */
#define EMU_JITTER 1e-11 /* Å, emulation only */
#define MAX_STEPS 50

static int emulate; /* MDF_TEST_CUDA_STAGE_EMULATE */

/* ---- the systems ------------------------------------------------------------- */

static mdf_model *make_model(void)
{
    mdf_lj_config lj = tu_argon(RC, 1);
    TU_CALL(mdf_lj_config_add_species, &lj, 36, 0.0141, 3.65, RC);
    mdf_model *m = NULL;
    TU_CALL(mdf_model_create_lj, &lj, &m);
    return m;
}

static void cube(double l, double cell[9])
{
    memset(cell, 0, 9 * sizeof(double));
    cell[0] = cell[4] = cell[8] = l;
}

static const int pbc0[3] = {0, 0, 0};
static const int arkr[2] = {18, 36}, ar[1] = {18};

/* Optimisers: open clusters far from a minimum, a crystal fragment near
 * one, two jittered periodic crystals, a lone atom (fmax 0: converged at
 * step 0). 339 atoms. */
static size_t opt_frames(mdf_frame *f)
{
    double cell[9];
    size_t n = 0;
    cube(12.0, cell);
    f[n++] = tu_random(30, cell, pbc0, 3.0, ar, 1, 101);
    cube(15.0, cell);
    f[n++] = tu_random(60, cell, pbc0, 3.1, arkr, 2, 102);
    f[n] = tu_fcc(2, 2, 2, 5.3, 18, 0.0, 0.03, 103);
    f[n].pbc[0] = f[n].pbc[1] = f[n].pbc[2] = 0;
    n++;
    f[n++] = tu_fcc(3, 3, 3, 5.3, 18, 0.0, 0.08, 104);
    f[n++] = tu_fcc(3, 3, 3, 5.3, 18, 0.1, 0.05, 105);
    cube(10.0, cell);
    f[n++] = tu_random(1, cell, pbc0, 1.0, ar, 1, 106);
    return n;
}

/* Dynamics: two periodic crystals (one triclinic) for NPT, an open cluster
 * and a slab (both run NVT under NPT). 622 atoms. */
static size_t md_frames(mdf_frame *f)
{
    static const int slab[3] = {1, 1, 0};
    double cell[9];
    size_t n = 0;
    f[n++] = tu_fcc(4, 4, 4, 5.3, 18, 0.0, 0.05, 201);
    f[n++] = tu_fcc(4, 4, 4, 5.3, 18, 0.1, 0.05, 202);
    cube(15.0, cell);
    f[n++] = tu_random(60, cell, pbc0, 3.1, arkr, 2, 203);
    cube(16.0, cell);
    cell[3] = 1.5;
    cell[6] = -1.0;
    f[n++] = tu_random(50, cell, slab, 3.2, arkr, 2, 204);
    return n;
}

/* Variable-cell relaxation: the two periodic crystals of md_frames, one
 * compressed and one expanded (every system must be periodic). 512 atoms. */
static size_t cell_frames(mdf_frame *f)
{
    f[0] = tu_fcc(4, 4, 4, 5.35, 18, 0.0, 0.05, 211);
    f[1] = tu_fcc(4, 4, 4, 5.20, 18, 0.05, 0.05, 212);
    return 2;
}

/* Emulation: moves every coordinate by up to EMU_JITTER. */
static void perturb(mdf_frame *f, size_t n)
{
    uint64_t s = 99;
    for (size_t i = 0; i < n; i++)
        for (int64_t k = 0; k < 3 * f[i].natoms; k++) f[i].positions[k] += EMU_JITTER * (2.0 * tu_rand(&s) - 1.0);
}

/* ---- a NaN for the detector (tu_poison_hook: a CPU-only codelet hook) --------- */

#define POISON_ID 1
#define POISON_STEP 7

/* ---- cases and runs ----------------------------------------------------------- */

#define HOOK_CLAMP 1
#define HOOK_FREEZE 2
#define HOOK_WRAP 4
#define HOOK_NAN_STOP 8   /* NaN check (stop mode) on a clean run */
#define HOOK_POISON 16    /* a NaN injected, NaN check in quarantine mode */

#define FRAMES_OPT 0
#define FRAMES_MD 1
#define FRAMES_CELL 2

#define CLAMP_FORCE 0.2   /* eV/Å */
#define FREEZE_EVERY 5    /* atoms 1, 6, 11, ... of every system are frozen */

typedef struct case_spec {
    const char *name;
    const char *integrator;
    int frames;
    int64_t steps;
    double temperature;   /* K: velocities drawn first (0: at rest) */
    double fmax_thr;      /* < 0: no criterion */
    unsigned hooks;
} case_spec;

typedef struct sys_snap {
    int64_t natoms, id, step, stage_step;
    int32_t status, flags;
    double epot, ekin, extra, fmax, cell[9];
    int pbc[3];
    double *pos0, *pos, *vel, *force; /* pos0: before the run */
    unsigned char *frozen;
} sys_snap;

typedef struct run_result {
    int kind;
    size_t nsys;
    sys_snap s[MAX_SYS];
    mdf_status st;
    char message[MDF_ERROR_MESSAGE_MAX];
    mdf_stage_report rep;
    char warnings[4096];
    int nwarnings;
    double fpath[MAX_SYS][MAX_STEPS + 1]; /* fmax after each step's check, while in the stage (NaN: none) */
    int cpu_workers, cuda_workers;
    long cpu_tasks, cuda_tasks;
    tu_gpu_first_counts policy; /* counters of the gpu-first run */
} run_result;

/* Host-side tasks: convergence paths, NaN reports, and the cell check a
 * stage submits each step for a method that changes cells (the barostat,
 * the cell optimisers): the GPU run then needs its one CPU worker. */
static int needs_host_tasks(const case_spec *c)
{
    static const char *const cell_methods[] = {"npt", "fire_cell", "lbfgs_cell"};
    for (size_t k = 0; k < sizeof cell_methods / sizeof cell_methods[0]; k++)
        if (strcmp(c->integrator, cell_methods[k]) == 0) return 1;
    return c->fmax_thr >= 0.0 || (c->hooks & (HOOK_NAN_STOP | HOOK_POISON));
}

static double *dup_array(const double *src, int64_t n)
{
    double *d = calloc((size_t)(n > 0 ? n : 1), sizeof(double));
    assert_non_null(d);
    if (src) memcpy(d, src, sizeof(double) * (size_t)n);
    return d;
}

static void start_workers(int kind)
{
    if (kind == RUN_CPU) tu_start(NULL, -1, 0);
    else if (kind == RUN_CUDA_ONLY) tu_start(NULL, emulate ? 1 : 0, !emulate);
    else tu_start_gpu_first(emulate ? 0 : -1);
    mdf_runtime_reset_stats();
}

static void count_tasks(run_result *r)
{
    mdf_worker_stats st[64];
    int n = mdf_runtime_worker_stats(st, 64);
    for (int w = 0; w < n && w < 64; w++) {
        if (starpu_worker_get_type(w) == STARPU_CUDA_WORKER) r->cuda_tasks += st[w].tasks;
        else r->cpu_tasks += st[w].tasks;
    }
    r->cpu_workers = mdf_runtime_cpu_workers();
    r->cuda_workers = mdf_runtime_cuda_workers();
}

/* AFTER_STEP callback (a host-view task): each system's fmax path. Shards
 * hold different systems, so concurrent calls write different cells. */
static void record_fmax(void *user, const mdf_hook_event *ev)
{
    run_result *r = (run_result *)user;
    if (ev->step < 0 || ev->step > MAX_STEPS) return;
    for (size_t k = 0; k < ev->nrows; k++)
        if (ev->rows[k].id >= 0 && ev->rows[k].id < MAX_SYS) r->fpath[ev->rows[k].id][ev->step] = ev->rows[k].fmax;
}

static mdf_stage *make_stage(const case_spec *c, FILE *warn, run_result *r)
{
    mdf_stage_config cfg;
    mdf_stage_config_init(&cfg);
    cfg.integrator = c->integrator;
    cfg.status = 0;
    cfg.converged_status = CONVERGED;
    cfg.max_steps = c->steps;
    cfg.check_interval = 5;
    mdf_dynamics_params *p = &cfg.params;
    p->dt_fs = 2.0;
    p->temperature_K = 300.0;
    p->seed = 77;
    mdf_param_list mp; /* each method takes its own */
    mdf_param_list_init(&mp);
    tu_param(&mp, "nose_hoover.tau_fs", 50.0);
    tu_param(&mp, "bussi.tau_fs", 50.0);
    tu_param(&mp, "npt.tau_p_fs", 500.0);
    tu_param(&mp, "npt.tau_t_fs", 50.0);
    tu_param(&mp, "lbfgs.memory", 10);
    tu_param(&mp, "lbfgs_cell.memory", 10);
    tu_param(&mp, "fire_cell.pressure_GPa", 0.2);
    tu_param(&mp, "lbfgs_cell.pressure_GPa", 0.2);
    tu_method_params(&cfg, &mp);
    mdf_stage *s = NULL;
    TU_CALL(mdf_stage_create, &cfg, &s);
    mdf_hook *h = NULL;
    if (c->fmax_thr >= 0.0) {
        TU_CALL(mdf_stage_add_criterion, s, MDF_CRITERION_FMAX, c->fmax_thr);
        TU_CALL(mdf_hook_create_callback, "fmax path", MDF_AFTER_STEP, 1, record_fmax, r, &h);
        TU_CALL(mdf_stage_add_hook, s, h);
    }
    if (c->hooks & HOOK_CLAMP) {
        TU_CALL(mdf_hook_create_force_clamp, CLAMP_FORCE, &h);
        TU_CALL(mdf_stage_add_hook, s, h);
    }
    if (c->hooks & HOOK_FREEZE) {
        TU_CALL(mdf_hook_create_freeze, &h);
        TU_CALL(mdf_stage_add_hook, s, h);
    }
    if (c->hooks & HOOK_WRAP) {
        TU_CALL(mdf_hook_create_wrap, 5, &h);
        TU_CALL(mdf_stage_add_hook, s, h);
    }
    if (c->hooks & HOOK_POISON) {
        TU_CALL(mdf_stage_add_hook, s, tu_poison_hook(POISON_ID, POISON_STEP));
        TU_CALL(mdf_hook_create_nan_check, 1, MDF_NAN_QUARANTINE, warn, &h);
        TU_CALL(mdf_stage_add_hook, s, h);
    }
    if (c->hooks & HOOK_NAN_STOP) {
        TU_CALL(mdf_hook_create_nan_check, 5, MDF_NAN_STOP, warn, &h);
        TU_CALL(mdf_stage_add_hook, s, h);
    }
    return s;
}

static void run_case(const case_spec *c, int kind, run_result *r)
{
    memset(r, 0, sizeof *r);
    r->kind = kind;
    for (int i = 0; i < MAX_SYS; i++)
        for (int k = 0; k <= MAX_STEPS; k++) r->fpath[i][k] = NAN;
    assert_true(c->steps <= MAX_STEPS);
    start_workers(kind);
    mdf_frame frames[MAX_SYS];
    size_t n = c->frames == FRAMES_OPT ? opt_frames(frames)
               : c->frames == FRAMES_CELL ? cell_frames(frames) : md_frames(frames);
    if (emulate && kind != RUN_CPU && c->steps > 0) perturb(frames, n);
    mdf_model *m = make_model();
    mdf_batch_config bc;
    mdf_batch_config_init(&bc);
    bc.nshards = 2; /* the same shards on both runs */
    bc.extra_atoms = 64;
    bc.extra_systems = 2;
    mdf_batch *b = NULL;
    TU_CALL(mdf_batch_create, frames, n, &bc, &b);
    if (c->temperature > 0.0) TU_CALL(mdf_batch_thermalize, b, c->temperature, 2024, 0);
    if (c->hooks & HOOK_FREEZE)
        for (size_t i = 0; i < n; i++)
            for (int64_t a = 1; a < frames[i].natoms; a += FREEZE_EVERY) TU_CALL(mdf_batch_set_frozen, b, i, a, 1);
    FILE *warn = tmpfile();
    assert_non_null(warn);
    mdf_stage *s = make_stage(c, warn, r);
    mdf_error err;
    mdf_error_clear(&err);
    r->st = mdf_stage_run(s, b, m, &r->rep, &err);
    snprintf(r->message, sizeof r->message, "%s", r->st == MDF_OK ? "" : err.message);
    mdf_stage_destroy(s);
    TU_CALL(mdf_batch_sync, b);
    count_tasks(r);
    r->nsys = mdf_batch_nsystems(b);
    assert_true(r->nsys == n && n <= MAX_SYS);
    for (size_t i = 0; i < n; i++) {
        sys_snap *y = &r->s[i];
        mdf_frame f;
        memset(&f, 0, sizeof f);
        TU_CALL(mdf_batch_get_frame, b, i, &f);
        mdf_system_view v;
        TU_CALL(mdf_batch_get_system, b, i, &v);
        y->natoms = f.natoms;
        y->id = v.id;
        y->step = v.step;
        y->stage_step = v.stage_step;
        y->status = v.status;
        y->flags = v.flags;
        y->epot = v.potential_energy;
        y->ekin = v.kinetic_energy;
        y->extra = v.extra_energy;
        y->fmax = v.fmax;
        memcpy(y->cell, v.cell, sizeof y->cell);
        memcpy(y->pbc, v.pbc, sizeof y->pbc);
        y->pos0 = dup_array(frames[i].positions, 3 * f.natoms);
        y->pos = dup_array(f.positions, 3 * f.natoms);
        y->vel = dup_array(f.velocities, 3 * f.natoms);
        y->force = dup_array(f.forces, 3 * f.natoms);
        y->frozen = calloc((size_t)(f.natoms > 0 ? f.natoms : 1), 1);
        assert_non_null(y->frozen);
        for (int64_t a = 0; a < f.natoms; a++) y->frozen[a] = (unsigned char)mdf_batch_is_frozen(b, i, a);
        mdf_frame_free(&f);
    }
    rewind(warn);
    char line[1024];
    size_t used = 0;
    while (fgets(line, sizeof line, warn)) {
        r->nwarnings++;
        size_t len = strlen(line);
        if (used + len < sizeof r->warnings) {
            memcpy(r->warnings + used, line, len + 1);
            used += len;
        }
    }
    fclose(warn);
    mdf_batch_destroy(b);
    mdf_model_destroy(m);
    for (size_t i = 0; i < n; i++) mdf_frame_free(&frames[i]);
    if (kind == RUN_CUDA_HOST) {
        r->policy = tu_gpu_first_counts_get();
        tu_stop_gpu_first();
    } else {
        tu_stop();
    }
}

static void free_result(run_result *r)
{
    for (size_t i = 0; i < r->nsys; i++) {
        free(r->s[i].pos0);
        free(r->s[i].pos);
        free(r->s[i].vel);
        free(r->s[i].force);
        free(r->s[i].frozen);
    }
    memset(r, 0, sizeof *r);
}

/* The GPU run really ran on the GPU. */
static void check_gpu_run(const run_result *g)
{
    printf("# %s run: %d CPU workers (%ld tasks), %d CUDA workers (%ld tasks)\n",
           g->kind == RUN_CUDA_ONLY ? "CUDA-only" : "gpu-first", g->cpu_workers, g->cpu_tasks, g->cuda_workers,
           g->cuda_tasks);
    if (g->kind == RUN_CUDA_HOST) {
        printf("# gpu-first: %ld tasks to the CUDA queue, %ld to the CPU queue:", g->policy.pushed[1],
               g->policy.pushed[0]);
        for (int k = 0; k < g->policy.nnames; k++) printf(" %s", g->policy.names[k]);
        printf("\n");
        assert_true(g->policy.pushed[0] + g->policy.pushed[1] > 0); /* the policy was in force */
        assert_int_equal(g->policy.cuda_capable_on_cpu, 0);
        assert_true(g->cpu_tasks <= g->policy.pushed[0]);
    }
    if (emulate) return;
    assert_true(g->cuda_workers >= 1);
    assert_true(g->cuda_tasks > 0);
    if (g->kind == RUN_CUDA_ONLY) {
        assert_int_equal(g->cpu_workers, 0);
        assert_int_equal(g->cpu_tasks, 0);
    } else {
        assert_int_equal(g->cpu_workers, 1);
        assert_true(g->policy.pushed[1] > 0);
    }
}

/* ---- comparisons ---------------------------------------------------------------- */

typedef struct tolerances {
    double energy_rel, force_abs, pos_abs, vel_abs;
    double fmax_rel, fmax_floor; /* |dfmax| / max(fmax, floor) */
    double cell_rel;
} tolerances;

static const tolerances tol_dynamics = {.energy_rel = 1e-9, .force_abs = 1e-7, .pos_abs = 1e-8, .vel_abs = 1e-8,
                                        .fmax_rel = 1e-7, .fmax_floor = 1.0, .cell_rel = 1e-10};

static void invert3(const double m[9], double inv[9])
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

/* |x - y| up to lattice vectors along the periodic directions. */
static double image_distance(const double *x, const double *y, const sys_snap *s, const double inv[9])
{
    double d[3] = {x[0] - y[0], x[1] - y[1], x[2] - y[2]};
    if (s->pbc[0] || s->pbc[1] || s->pbc[2]) {
        double u[3];
        for (int k = 0; k < 3; k++) u[k] = d[0] * inv[k] + d[1] * inv[3 + k] + d[2] * inv[6 + k];
        for (int k = 0; k < 3; k++)
            if (s->pbc[k]) u[k] -= nearbyint(u[k]);
        for (int k = 0; k < 3; k++) d[k] = u[0] * s->cell[k] + u[1] * s->cell[3 + k] + u[2] * s->cell[6 + k];
    }
    return sqrt(d[0] * d[0] + d[1] * d[1] + d[2] * d[2]);
}

static int nan3(const double *v) { return isnan(v[0]) || isnan(v[1]) || isnan(v[2]); }

/* A convergence decided differently by round-off: one side converged at step
 * k with fmax within 1e-6 relative below the threshold, the other one step
 * later or not at all by step k + 1. */
static int near_threshold(const sys_snap *a, const sys_snap *b, double thr)
{
    const sys_snap *first = NULL;
    if (a->status == CONVERGED && (b->status != CONVERGED || a->step < b->step)) first = a;
    else if (b->status == CONVERGED) first = b;
    if (!first || thr < 0.0) return 0;
    long long ds = llabs((long long)(a->step - b->step));
    return ds <= 1 && first->fmax <= thr && first->fmax >= thr * (1.0 - 1e-6);
}

static void compare(const case_spec *c, const run_result *a, const run_result *b, const tolerances *tol)
{
    printf("# %s: CPU run %s, GPU run %s\n", c->name, a->st == MDF_OK ? "ok" : a->message,
           b->st == MDF_OK ? "ok" : b->message);
    assert_int_equal(a->st, b->st);
    assert_string_equal(a->message, b->message);
    assert_int_equal(a->nwarnings, b->nwarnings);
    assert_string_equal(a->warnings, b->warnings);
    assert_int_equal(a->rep.converged, b->rep.converged);
    assert_int_equal(a->rep.remaining, b->rep.remaining);
    assert_int_equal(a->nsys, b->nsys);
    for (size_t i = 0; i < a->nsys; i++) {
        const sys_snap *x = &a->s[i], *y = &b->s[i];
        assert_int_equal(x->natoms, y->natoms);
        assert_int_equal(x->id, y->id);
        int64_t n = x->natoms;
        double floor_e = 1e-3 * (double)n; /* 1 meV per atom */
        double de = tu_reldiff(x->epot, y->epot, floor_e);
        double dk = tu_reldiff(x->ekin, y->ekin, floor_e);
        double dxe = tu_reldiff(x->extra, y->extra, floor_e);
        double dfm = (isnan(x->fmax) && isnan(y->fmax)) ? 0.0 : tu_reldiff(x->fmax, y->fmax, tol->fmax_floor);
        double dc = 0.0, cmax = 0.0;
        for (int k = 0; k < 9; k++) cmax = fmax(cmax, fabs(x->cell[k]));
        for (int k = 0; k < 9; k++) dc = fmax(dc, fabs(x->cell[k] - y->cell[k]) / cmax);
        double inv[9];
        invert3(x->cell, inv);
        double dx = 0.0, dv = 0.0, df = 0.0;
        int nan_mismatch = 0;
        for (int64_t k = 0; k < n; k++) {
            const double *p = x->pos + 3 * k, *q = y->pos + 3 * k;
            if (nan3(p) || nan3(q)) {
                for (int d = 0; d < 3; d++) nan_mismatch += isnan(p[d]) != isnan(q[d]);
                continue;
            }
            dx = fmax(dx, image_distance(p, q, x, inv));
            for (int d = 0; d < 3; d++) {
                dv = fmax(dv, fabs(x->vel[3 * k + d] - y->vel[3 * k + d]));
                df = fmax(df, fabs(x->force[3 * k + d] - y->force[3 * k + d]));
            }
        }
        printf("# %s system %zu (%lld atoms): status %d/%d step %lld/%lld flags %d/%d fmax %.6g/%.6g | E %.10g eV "
               "rel dE %.1e dKE %.1e dExtra %.1e dfmax %.1e dcell %.1e | max |dx| %.1e A |dv| %.1e |dF| %.1e eV/A\n",
               c->name, i, (long long)n, x->status, y->status, (long long)x->step, (long long)y->step, x->flags,
               y->flags, x->fmax, y->fmax, x->epot, de, dk, dxe, dfm, dc, dx, dv, df);
        if (x->status != y->status || x->step != y->step) {
            if (near_threshold(x, y, c->fmax_thr)) {
                printf("# %s system %zu: WARNING: converged at step %lld on one side and %lld on the other with fmax "
                       "within 1e-6 of the threshold %g (round-off decides): not compared further\n",
                       c->name, i, (long long)x->step, (long long)y->step, c->fmax_thr);
                continue;
            }
            fail_msg("%s system %zu: status %d/%d at step %lld/%lld", c->name, i, x->status, y->status,
                     (long long)x->step, (long long)y->step);
        }
        /* The fmax paths (optimisers): every step's check, and how close the
         * CPU path came to the threshold before the system converged. */
        double dpath = 0.0, margin = INFINITY;
        int path_mismatch = 0, checks = 0;
        for (int k = 0; k <= MAX_STEPS; k++) {
            double p = a->fpath[i][k], q = b->fpath[i][k];
            if (isnan(p) != isnan(q)) path_mismatch++;
            if (isnan(p) || isnan(q)) continue;
            checks++;
            dpath = fmax(dpath, tu_reldiff(p, q, tol->fmax_floor));
            if (c->fmax_thr > 0.0) margin = fmin(margin, fabs(p - c->fmax_thr) / c->fmax_thr);
        }
        if (checks)
            printf("# %s system %zu: fmax at %d checks, max rel difference %.1e, closest to the threshold %.1e "
                   "relative\n", c->name, i, checks, dpath, margin);
        assert_int_equal(path_mismatch, 0);
        assert_true(dpath <= tol->fmax_rel);
        assert_int_equal(x->stage_step, y->stage_step);
        assert_int_equal(x->flags, y->flags);
        assert_int_equal(nan_mismatch, 0);
        assert_true(de <= tol->energy_rel);
        assert_true(dk <= tol->energy_rel);
        assert_true(dxe <= tol->energy_rel);
        assert_true(dfm <= tol->fmax_rel);
        assert_true(dc <= tol->cell_rel);
        assert_true(dx <= tol->pos_abs);
        assert_true(dv <= tol->vel_abs);
        assert_true(df <= tol->force_abs);
    }
}

/* Runs a case on the CPU and on the GPU and compares them. */
static void cpu_vs_gpu(const case_spec *c, const tolerances *tol, run_result *cpu, run_result *gpu)
{
    run_case(c, RUN_CPU, cpu);
    run_case(c, needs_host_tasks(c) ? RUN_CUDA_HOST : RUN_CUDA_ONLY, gpu);
    check_gpu_run(gpu);
    assert_int_equal(cpu->cuda_workers, 0);
    compare(c, cpu, gpu, tol);
}

/* ---- 1. the convergence codelet at one evaluation ---------------------------------- */

/* Largest per-atom force norm, from the run's own forces. */
static double host_fmax(const sys_snap *s)
{
    double m2 = 0.0;
    for (int64_t k = 0; k < s->natoms; k++) {
        const double *f = s->force + 3 * k;
        m2 = fmax(m2, f[0] * f[0] + f[1] * f[1] + f[2] * f[2]);
    }
    return sqrt(m2);
}

static void test_converge_single_point(void **state)
{
    (void)state;
    /* No step: the model at the starting positions and the convergence
     * codelet measuring fmax (no criterion: nothing moves). */
    const case_spec c = {.name = "step 0", .integrator = "gd", .frames = FRAMES_OPT, .steps = 0, .fmax_thr = -1.0};
    const tolerances tol = {.energy_rel = 1e-10, .force_abs = 1e-9, .pos_abs = 0.0, .vel_abs = 0.0,
                            .fmax_rel = 1e-12, .fmax_floor = 0.01, .cell_rel = 0.0};
    run_result cpu, gpu;
    cpu_vs_gpu(&c, &tol, &cpu, &gpu);
    for (size_t i = 0; i < cpu.nsys; i++) {
        double hc = host_fmax(&cpu.s[i]), hg = host_fmax(&gpu.s[i]);
        printf("# step 0 system %zu: fmax CPU %.17g (own forces %.17g), GPU %.17g (own forces %.17g)\n", i,
               cpu.s[i].fmax, hc, gpu.s[i].fmax, hg);
        assert_true(tu_reldiff(cpu.s[i].fmax, hc, 1e-300) <= 1e-13);
        assert_true(tu_reldiff(gpu.s[i].fmax, hg, 1e-300) <= 1e-13);
        assert_int_equal(gpu.s[i].step, 0);
        assert_int_equal(gpu.s[i].status, 0);
    }
    free_result(&cpu);
    free_result(&gpu);
}

/* ---- 2. optimisers with an fmax criterion -------------------------------------------- */

static void run_optimiser(const char *name)
{
    /* The NaN check (stop mode, every 5 steps) must find nothing. */
    const case_spec c = {.name = name, .integrator = name, .frames = FRAMES_OPT, .steps = 30, .fmax_thr = FMAX_T,
                         .hooks = HOOK_NAN_STOP};
    run_result cpu, gpu;
    cpu_vs_gpu(&c, &tol_dynamics, &cpu, &gpu);
    printf("# %s: %lld systems converged, %lld left\n", name, (long long)cpu.rep.converged,
           (long long)cpu.rep.remaining);
    assert_int_equal(cpu.st, MDF_OK);
    assert_true(cpu.rep.converged >= 1); /* at least the lone atom */
    /* No NaN finding, no budget exit: a converged system carries only the
     * routing flags set when it moved (CONVERGED_NOW, ENTERED). */
    const int32_t routing = MDF_SYSTEM_CONVERGED_NOW | MDF_SYSTEM_ENTERED;
    for (size_t i = 0; i < cpu.nsys; i++) {
        assert_int_equal(cpu.s[i].flags & ~routing, 0);
        assert_int_equal(gpu.s[i].flags & ~routing, 0);
    }
    free_result(&cpu);
    free_result(&gpu);
}

/* fire_cell and lbfgs_cell (one CUDA thread per system) against the CPU:
 * positions, forces, energies and cells over 30 steps at 0.2 GPa. */
static void run_cell_optimiser(const char *name)
{
    const case_spec c = {.name = name, .integrator = name, .frames = FRAMES_CELL, .steps = 30, .fmax_thr = FMAX_T,
                         .hooks = HOOK_NAN_STOP};
    run_result cpu, gpu;
    cpu_vs_gpu(&c, &tol_dynamics, &cpu, &gpu);
    assert_int_equal(cpu.st, MDF_OK);
    free_result(&cpu);
    free_result(&gpu);
}

static void test_fire_cell(void **state)
{
    (void)state;
    run_cell_optimiser("fire_cell");
}

static void test_lbfgs_cell(void **state)
{
    (void)state;
    run_cell_optimiser("lbfgs_cell");
}

static void test_fire(void **state)
{
    (void)state;
    run_optimiser("fire");
}

static void test_fire2(void **state)
{
    (void)state;
    run_optimiser("fire2");
}

static void test_gd(void **state)
{
    (void)state;
    run_optimiser("gd");
}

static void test_lbfgs(void **state)
{
    (void)state;
    run_optimiser("lbfgs");
}

/* ---- 3. thermostats ----------------------------------------------------------------- */

static void run_thermostat(const char *name)
{
    const case_spec c = {.name = name, .integrator = name, .frames = FRAMES_MD, .steps = 50, .temperature = 300.0,
                         .fmax_thr = -1.0};
    run_result cpu, gpu;
    cpu_vs_gpu(&c, &tol_dynamics, &cpu, &gpu);
    assert_int_equal(cpu.st, MDF_OK);
    for (size_t i = 0; i < cpu.nsys; i++) {
        assert_int_equal(cpu.s[i].step, 50);
        assert_true(isfinite(cpu.s[i].extra));
    }
    free_result(&cpu);
    free_result(&gpu);
}

static void test_langevin(void **state)
{
    (void)state;
    run_thermostat("langevin");
}

static void test_nose_hoover(void **state)
{
    (void)state;
    run_thermostat("nose_hoover");
}

static void test_bussi(void **state)
{
    (void)state;
    run_thermostat("bussi");
}

static void test_npt(void **state)
{
    (void)state;
    run_thermostat("npt");
}

/* ---- 4. hooks with codelets --------------------------------------------------------- */

/* Force clamp, freeze and wrap (every 5 steps) in 50 velocity Verlet steps. */
static void test_clamp_freeze_wrap(void **state)
{
    (void)state;
    const case_spec c = {.name = "clamp+freeze+wrap", .integrator = "velocity_verlet", .frames = FRAMES_MD,
                         .steps = 50, .temperature = 300.0, .fmax_thr = -1.0,
                         .hooks = HOOK_CLAMP | HOOK_FREEZE | HOOK_WRAP};
    run_result cpu, gpu;
    cpu_vs_gpu(&c, &tol_dynamics, &cpu, &gpu);
    assert_int_equal(cpu.st, MDF_OK);
    const run_result *runs[2] = {&cpu, &gpu};
    for (int r = 0; r < 2; r++)
        for (size_t i = 0; i < runs[r]->nsys; i++) {
            const sys_snap *s = &runs[r]->s[i];
            double inv[9];
            invert3(s->cell, inv);
            int64_t frozen = 0;
            double fmax2 = 0.0, outside = 0.0, still = 0.0;
            for (int64_t k = 0; k < s->natoms; k++) {
                const double *x = s->pos + 3 * k, *v = s->vel + 3 * k, *f = s->force + 3 * k;
                fmax2 = fmax(fmax2, f[0] * f[0] + f[1] * f[1] + f[2] * f[2]);
                /* The last step (50) wrapped: fractional coordinates in [0, 1). */
                for (int d = 0; d < 3; d++) {
                    if (!s->pbc[d]) continue;
                    double u = x[0] * inv[d] + x[1] * inv[3 + d] + x[2] * inv[6 + d];
                    outside = fmax(outside, fmax(-u, u - 1.0));
                }
                if (!s->frozen[k]) continue;
                frozen++;
                /* x += dt·0 is exact; wrapping moves by lattice vectors only. */
                still = fmax(still, image_distance(x, s->pos0 + 3 * k, s, inv));
                for (int d = 0; d < 3; d++) {
                    assert_true(v[d] == 0.0);
                    assert_true(f[d] == 0.0);
                }
            }
            printf("# %s run, system %zu: %lld frozen atoms moved <= %.1e A, max |F| %.6g eV/A, "
                   "outside the cell by <= %.1e\n",
                   r ? "GPU" : "CPU", i, (long long)frozen, still, sqrt(fmax2), outside);
            assert_true(frozen == (s->natoms + FREEZE_EVERY - 2) / FREEZE_EVERY);
            assert_true(still <= 1e-12);
            assert_true(sqrt(fmax2) <= CLAMP_FORCE * (1.0 + 1e-12));
            assert_true(outside <= 1e-12);
        }
    free_result(&cpu);
    free_result(&gpu);
}

/* A NaN injected into one system's positions (CPU-only codelet at
 * AFTER_POST_UPDATE of step 7): the detector (GPU) quarantines that system
 * in both runs; the others run on, flagged clean. */
static void test_nan_quarantine(void **state)
{
    (void)state;
    const case_spec c = {.name = "NaN quarantine", .integrator = "velocity_verlet", .frames = FRAMES_MD,
                         .steps = 20, .temperature = 300.0, .fmax_thr = -1.0, .hooks = HOOK_POISON};
    run_result cpu, gpu;
    cpu_vs_gpu(&c, &tol_dynamics, &cpu, &gpu);
    assert_int_equal(cpu.st, MDF_OK);
    assert_int_equal(cpu.nwarnings, 1);
    printf("# warning: %s", cpu.warnings);
    for (size_t i = 0; i < cpu.nsys; i++) {
        const sys_snap *s = &cpu.s[i];
        if (s->id == POISON_ID) {
            assert_int_equal(s->status, MDF_STATUS_FAILED);
            assert_int_equal(s->flags, MDF_SYSTEM_NONFINITE_POS);
            assert_int_equal(s->step, POISON_STEP);
        } else {
            assert_int_equal(s->status, 0);
            assert_int_equal(s->flags, 0);
            assert_int_equal(s->step, 20);
        }
    }
    free_result(&cpu);
    free_result(&gpu);
}

int main(void)
{
    /* This test chooses the workers itself (see the top of the file). */
    unsetenv("STARPU_NCPU");
    unsetenv("STARPU_NCPUS");
    unsetenv("STARPU_NCUDA");
    unsetenv("STARPU_SCHED"); /* it would replace the gpu-first policy */
    const char *emu = getenv("MDF_TEST_CUDA_STAGE_EMULATE");
    emulate = emu && atoi(emu) != 0;
    if (emulate) {
        printf("# MDF_TEST_CUDA_STAGE_EMULATE: both sides on CPU workers, inputs of the second moved by up to "
               "%g A: checks the test, not the CUDA codelets\n", EMU_JITTER);
    } else {
        if (!tu_have_cuda_worker()) {
            printf("# no CUDA worker (no GPU, or a StarPU without CUDA): skipped\n");
            return TU_SKIP;
        }
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_converge_single_point),
        cmocka_unit_test(test_fire),
        cmocka_unit_test(test_fire2),
        cmocka_unit_test(test_gd),
        cmocka_unit_test(test_lbfgs),
        cmocka_unit_test(test_fire_cell),
        cmocka_unit_test(test_lbfgs_cell),
        cmocka_unit_test(test_langevin),
        cmocka_unit_test(test_nose_hoover),
        cmocka_unit_test(test_bussi),
        cmocka_unit_test(test_npt),
        cmocka_unit_test(test_clamp_freeze_wrap),
        cmocka_unit_test(test_nan_quarantine),
    };
    tu_test_filter_from_env();
    return cmocka_run_group_tests(tests, NULL, NULL);
}
