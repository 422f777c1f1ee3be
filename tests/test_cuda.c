/* mdflow tests — the CUDA codelets against the CPU ones.
 *
 * Each case runs twice on the same batch: once with CPU workers only (the
 * reference), once with CUDA workers only, and compares energies, forces,
 * virials, velocities and positions.
 *
 * How CUDA execution is forced: StarPU is started with ncpus = 0 (and
 * ncuda = all), which StarPU documents as the way to run every codelet on
 * the GPU ("STARPU_NCPU=0 ./vector_scal" in its basic examples; with
 * conf.ncpus == 0 _starpu_init_cpu_config creates no CPU worker). With no
 * CPU worker the scheduler has nowhere else to put a task, so every task
 * of the run executes its CUDA implementation; the test asserts that the
 * run had 0 CPU workers and that the CUDA workers executed tasks. Only
 * codelets with a CUDA implementation may be submitted then, so these runs
 * keep the thermo log (mdf_sample, CPU-only) off. STARPU_NCPU(S) and
 * STARPU_NCUDA are removed from this process's environment first, because
 * mdf_runtime_start lets them override the configuration.
 *
 * Without a CUDA worker (no GPU, or a StarPU without CUDA) the program exits
 * 77 before cmocka starts: skipped.
 *
 * Tolerances: single point, energies and virials 1e-10 relative, forces
 * 1e-9 eV/Å absolute (the GPU uses full lists without Newton's third law
 * and its own fixed order for the per-system sums: the same numbers in
 * another order);
 * after 50 NVE steps, positions within 1e-8 Å. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "testutil.h"

enum { RUN_CPU = 0, RUN_CUDA = 1 };

#define MAX_SYS 8
#define LJ_RC 8.5

/* ---- the systems -------------------------------------------------------- */

/* Ar and Kr with Lorentz–Berthelot mixing between them. */
static mdf_model *lj_model(int shift)
{
    mdf_lj_config lj = tu_argon(LJ_RC, shift);
    TU_CALL(mdf_lj_config_add_species, &lj, 36, 0.0141, 3.65, LJ_RC);
    mdf_model *m = NULL;
    TU_CALL(mdf_model_create_lj, &lj, &m);
    return m;
}

static void cube(double l, double cell[9])
{
    memset(cell, 0, 9 * sizeof(double));
    cell[0] = cell[4] = cell[8] = l;
}

/* Fills frames[] and returns their count. with_dense adds a cluster denser
 * than the model's density hint, so that some atoms overflow their list
 * slots and take their forces from the cells. */
static size_t make_frames(mdf_frame *frames, int with_dense)
{
    static const int pbc0[3] = {0, 0, 0}, slab[3] = {1, 1, 0};
    static const int arkr[2] = {18, 36}, ar[1] = {18};
    double cell[9];
    size_t n = 0;
    /* periodic triclinic fcc, 500 atoms */
    frames[n++] = tu_fcc(5, 5, 5, 5.3, 18, 0.15, 0.1, 11);
    /* open cluster of two species */
    cube(26.0, cell);
    frames[n++] = tu_random(200, cell, pbc0, 2.9, arkr, 2, 12);
    if (with_dense) {
        /* 0.073 Å⁻³: about 30 central atoms have more than the 126 list
         * slots the model's density hint gives at 8.5 Å (up to ~160) */
        cube(16.0, cell);
        frames[n++] = tu_random(300, cell, pbc0, 2.0, ar, 1, 13);
    }
    /* one system larger than a chunk (8192 atoms): split, then summed */
    frames[n++] = tu_fcc(13, 13, 13, 5.3, 18, 0.05, 0.1, 14);
    /* a lone atom */
    cube(10.0, cell);
    frames[n++] = tu_random(1, cell, pbc0, 1.0, ar, 1, 15);
    /* a slab: periodic along a and b only, slightly skewed */
    cube(20.0, cell);
    cell[3] = 2.0;
    cell[6] = -1.0;
    frames[n++] = tu_random(60, cell, slab, 3.0, arkr, 2, 16);
    /* small periodic cells, narrower than the 8.5 Å cut-off: a 4-atom
     * triclinic fcc cell (5-bit entries, several images of each neighbour)
     * and a 2-atom cell of 3.9 Å (wide entries: 3 images per direction) */
    frames[n++] = tu_fcc(1, 1, 1, 5.3, 18, 0.2, 0.1, 17);
    double two[9] = {3.9, 0, 0, 0.8, 3.8, 0, -0.6, 0.5, 4.0};
    frames[n++] = tu_random(2, two, (const int[3]){1, 1, 1}, 2.7, arkr, 2, 18); /* images at most 2.98 Å apart */
    return n;
}

/* ---- runs ---------------------------------------------------------------- */

typedef struct snapshot {
    size_t nsys;
    int64_t natoms[MAX_SYS];
    double *pos[MAX_SYS], *vel[MAX_SYS], *force[MAX_SYS];
    double epot[MAX_SYS], ekin[MAX_SYS], vir[MAX_SYS][9];
} snapshot;

typedef struct run_result {
    snapshot thermalized; /* after the velocity draw (NVE only) */
    snapshot final;
    mdf_md_report report;
    int cpu_workers, cuda_workers;
    long tasks;
} run_result;

static double *dup_array(const double *src, int64_t n)
{
    double *d = calloc((size_t)(n > 0 ? n : 1), sizeof(double));
    assert_non_null(d);
    if (src) memcpy(d, src, sizeof(double) * (size_t)n);
    return d;
}

static void take_snapshot(mdf_batch *b, snapshot *s)
{
    memset(s, 0, sizeof *s);
    s->nsys = mdf_batch_nsystems(b);
    assert_true(s->nsys <= MAX_SYS);
    for (size_t i = 0; i < s->nsys; i++) {
        mdf_frame f;
        memset(&f, 0, sizeof f);
        TU_CALL(mdf_batch_get_frame, b, i, &f);
        mdf_system_view v;
        TU_CALL(mdf_batch_get_system, b, i, &v);
        s->natoms[i] = f.natoms;
        s->pos[i] = dup_array(f.positions, 3 * f.natoms);
        s->vel[i] = dup_array(f.velocities, 3 * f.natoms);
        s->force[i] = dup_array(f.forces, 3 * f.natoms);
        s->epot[i] = v.potential_energy;
        s->ekin[i] = v.kinetic_energy;
        memcpy(s->vir[i], v.virial, sizeof v.virial);
        mdf_frame_free(&f);
    }
}

static void free_snapshot(snapshot *s)
{
    for (size_t i = 0; i < s->nsys; i++) {
        free(s->pos[i]);
        free(s->vel[i]);
        free(s->force[i]);
    }
    memset(s, 0, sizeof *s);
}

static void start_workers(int kind, run_result *r)
{
    /* CPU reference: all CPU workers, no CUDA. CUDA: no CPU worker at all. */
    if (kind == RUN_CPU) tu_start(NULL, -1, 0);
    else tu_start(NULL, 0, 1);
    r->cpu_workers = mdf_runtime_cpu_workers();
    r->cuda_workers = mdf_runtime_cuda_workers();
    mdf_runtime_reset_stats();
}

static void stop_workers(run_result *r)
{
    mdf_worker_stats st[64];
    int n = mdf_runtime_worker_stats(st, 64);
    r->tasks = 0;
    for (int w = 0; w < n && w < 64; w++) r->tasks += st[w].tasks;
    tu_stop();
}

static mdf_batch *make_batch(const mdf_frame *frames, size_t n)
{
    mdf_batch_config bc;
    mdf_batch_config_init(&bc);
    bc.nshards = 2;        /* the same chunks on both runs */
    bc.extra_atoms = 64;   /* capacities above the contents */
    bc.extra_systems = 2;
    mdf_batch *b = NULL;
    TU_CALL(mdf_batch_create, frames, n, &bc, &b);
    return b;
}

/* Energy, forces and virial at the starting positions. */
static void run_single_point(int kind, run_result *r)
{
    memset(r, 0, sizeof *r);
    start_workers(kind, r);
    mdf_frame frames[MAX_SYS];
    size_t n = make_frames(frames, 1);
    mdf_model *m = lj_model(0);
    mdf_batch *b = make_batch(frames, n);
    TU_CALL(mdf_compute_forces, b, m);
    take_snapshot(b, &r->final);
    mdf_batch_destroy(b);
    mdf_model_destroy(m);
    for (size_t i = 0; i < n; i++) mdf_frame_free(&frames[i]);
    stop_workers(r);
}

/* Maxwell–Boltzmann velocities, then 50 NVE steps with a small skin, so the
 * lists are rebuilt along the way. */
static void run_nve(int kind, run_result *r)
{
    memset(r, 0, sizeof *r);
    start_workers(kind, r);
    mdf_frame frames[MAX_SYS];
    size_t n = make_frames(frames, 0);
    mdf_model *m = lj_model(1);
    mdf_batch *b = make_batch(frames, n);
    TU_CALL(mdf_batch_thermalize, b, 400.0, 2024, 0);
    TU_CALL(mdf_batch_sync, b);
    take_snapshot(b, &r->thermalized);
    mdf_md_config md;
    mdf_md_config_init(&md);
    md.dt_fs = 2.0;
    md.steps = 50;
    md.skin = 0.4;
    /* The automatic chunk size follows the worker count (4 chunks with one
     * worker, 6 with two): fix it, so both runs cut the same chunks. */
    md.chunk_atoms = 2048;
    md.thermo = NULL; /* mdf_sample has no CUDA implementation */
    TU_CALL(mdf_md_run, b, m, &md, &r->report);
    take_snapshot(b, &r->final);
    mdf_batch_destroy(b);
    mdf_model_destroy(m);
    for (size_t i = 0; i < n; i++) mdf_frame_free(&frames[i]);
    stop_workers(r);
}

/* Uniform velocities (LAMMPS's velocity create default), drawn only. */
static void run_uniform_draw(int kind, run_result *r)
{
    memset(r, 0, sizeof *r);
    start_workers(kind, r);
    mdf_frame frames[MAX_SYS];
    size_t n = make_frames(frames, 0);
    mdf_batch *b = make_batch(frames, n);
    TU_CALL(mdf_batch_thermalize_dist, b, 400.0, 2024, 0, MDF_VELOCITY_UNIFORM);
    TU_CALL(mdf_batch_sync, b);
    take_snapshot(b, &r->thermalized);
    mdf_batch_destroy(b);
    for (size_t i = 0; i < n; i++) mdf_frame_free(&frames[i]);
    stop_workers(r);
}

static void check_cuda_run(const run_result *gpu)
{
    printf("# CUDA run: %d CPU workers, %d CUDA workers, %ld tasks\n", gpu->cpu_workers, gpu->cuda_workers,
           gpu->tasks);
    assert_int_equal(gpu->cpu_workers, 0);
    assert_true(gpu->cuda_workers >= 1);
    assert_true(gpu->tasks > 0);
}

/* ---- comparisons ----------------------------------------------------------- */

typedef struct tolerances {
    double energy_rel, virial_rel, force_abs, pos_abs, vel_abs;
} tolerances;

static void compare(const snapshot *a, const snapshot *b, const tolerances *tol, const char *what)
{
    assert_int_equal(a->nsys, b->nsys);
    for (size_t i = 0; i < a->nsys; i++) {
        assert_int_equal(a->natoms[i], b->natoms[i]);
        int64_t n = a->natoms[i];
        /* Relative to the system's scale: never below 1 meV per atom. */
        double floor_e = 1e-3 * (double)n;
        double de = tu_reldiff(a->epot[i], b->epot[i], floor_e);
        double dk = tu_reldiff(a->ekin[i], b->ekin[i], floor_e);
        double wmax = floor_e, dw = 0.0;
        for (int k = 0; k < 9; k++) wmax = fmax(wmax, fmax(fabs(a->vir[i][k]), fabs(b->vir[i][k])));
        for (int k = 0; k < 9; k++) dw = fmax(dw, fabs(a->vir[i][k] - b->vir[i][k]) / wmax);
        double df = 0.0, dx = 0.0, dv = 0.0;
        for (int64_t k = 0; k < 3 * n; k++) {
            df = fmax(df, fabs(a->force[i][k] - b->force[i][k]));
            dx = fmax(dx, fabs(a->pos[i][k] - b->pos[i][k]));
            dv = fmax(dv, fabs(a->vel[i][k] - b->vel[i][k]));
        }
        printf("# %s system %zu (%lld atoms): E %.10g eV, rel dE %.2e, rel dKE %.2e, rel dW %.2e, "
               "max |dF| %.2e eV/A, max |dx| %.2e A, max |dv| %.2e\n",
               what, i, (long long)n, a->epot[i], de, dk, dw, df, dx, dv);
        assert_true(de <= tol->energy_rel);
        assert_true(dk <= tol->energy_rel);
        assert_true(dw <= tol->virial_rel);
        assert_true(df <= tol->force_abs);
        assert_true(dx <= tol->pos_abs);
        assert_true(dv <= tol->vel_abs);
    }
}

static void test_single_point(void **state)
{
    (void)state;
    run_result cpu, gpu;
    run_single_point(RUN_CPU, &cpu);
    run_single_point(RUN_CUDA, &gpu);
    check_cuda_run(&gpu);
    assert_int_equal(cpu.cuda_workers, 0);
    /* Positions and velocities are inputs here: they must match exactly. */
    tolerances tol = {.energy_rel = 1e-10, .virial_rel = 1e-10, .force_abs = 1e-9, .pos_abs = 0.0, .vel_abs = 0.0};
    compare(&cpu.final, &gpu.final, &tol, "single point");
    free_snapshot(&cpu.final);
    free_snapshot(&gpu.final);
}

/* The uniform draw is integer and plain floating-point arithmetic: the
 * same numbers; the momentum removal sums in another order on the GPU. */
static void test_uniform_draw(void **state)
{
    (void)state;
    run_result cpu, gpu;
    run_uniform_draw(RUN_CPU, &cpu);
    run_uniform_draw(RUN_CUDA, &gpu);
    check_cuda_run(&gpu);
    tolerances draw = {.energy_rel = 1e-12, .virial_rel = INFINITY, .force_abs = INFINITY, .pos_abs = 0.0,
                       .vel_abs = 1e-12};
    compare(&cpu.thermalized, &gpu.thermalized, &draw, "uniform draw");
    free_snapshot(&cpu.thermalized);
    free_snapshot(&gpu.thermalized);
}

static void test_nve(void **state)
{
    (void)state;
    run_result cpu, gpu;
    run_nve(RUN_CPU, &cpu);
    run_nve(RUN_CUDA, &gpu);
    check_cuda_run(&gpu);
    /* The draw: the same Philox numbers; Box–Muller's log/sin/cos may differ
     * in the last bits between the host's libm and CUDA's. */
    tolerances draw = {.energy_rel = 1e-12, .virial_rel = INFINITY, .force_abs = INFINITY, .pos_abs = 0.0,
                       .vel_abs = 1e-12};
    compare(&cpu.thermalized, &gpu.thermalized, &draw, "thermalized");
    tolerances nve = {.energy_rel = 1e-9, .virial_rel = 1e-9, .force_abs = 1e-8, .pos_abs = 1e-8,
                      .vel_abs = 1e-8};
    compare(&cpu.final, &gpu.final, &nve, "after 50 NVE steps");
    printf("# list rebuilds: CPU %lld, CUDA %lld; overflowed atoms CPU %lld, CUDA %lld; "
           "max neighbours CPU %d, CUDA %d (slots %d)\n",
           (long long)cpu.report.list_rebuilds, (long long)gpu.report.list_rebuilds,
           (long long)cpu.report.overflowed_atoms, (long long)gpu.report.overflowed_atoms,
           cpu.report.max_neighbours, gpu.report.max_neighbours, gpu.report.list_slots);
    /* The skin test takes the same decisions on the GPU (the CPU run keeps
     * lists for every system: MDF_NL_ALL_PAIRS=0, set in main). */
    assert_true(cpu.report.list_rebuilds > (int64_t)cpu.final.nsys); /* some beyond the first build */
    assert_int_equal(cpu.report.list_rebuilds, gpu.report.list_rebuilds);
    assert_int_equal(cpu.report.overflowed_atoms, gpu.report.overflowed_atoms);
    /* The CPU's half lists (Newton's third law) hold each pair once, the
     * GPU's full lists from both sides: the GPU's longest list is at least
     * the CPU's, and within the slots when no atom overflowed. */
    assert_true(gpu.report.max_neighbours >= cpu.report.max_neighbours);
    if (gpu.report.overflowed_atoms == 0) assert_true(gpu.report.max_neighbours <= gpu.report.list_slots);
    assert_int_equal(cpu.report.nchunks, gpu.report.nchunks);
    free_snapshot(&cpu.thermalized);
    free_snapshot(&gpu.thermalized);
    free_snapshot(&cpu.final);
    free_snapshot(&gpu.final);
}

int main(void)
{
    /* This test chooses the workers itself (see the top of the file). */
    unsetenv("STARPU_NCPU");
    unsetenv("STARPU_NCPUS");
    unsetenv("STARPU_NCUDA");
    /* Lists for every system on the CPU too (small open systems would take
     * all pairs there), so that the list figures compare with the GPU's. */
    setenv("MDF_NL_ALL_PAIRS", "0", 1);
    if (!tu_have_cuda_worker()) {
        printf("# no CUDA worker (no GPU, or a StarPU without CUDA): skipped\n");
        return TU_SKIP;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_single_point),
        cmocka_unit_test(test_nve),
        cmocka_unit_test(test_uniform_draw),
    };
    tu_test_filter_from_env();
    return cmocka_run_group_tests(tests, NULL, NULL);
}
