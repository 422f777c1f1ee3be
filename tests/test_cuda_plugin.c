/* mdflow tests — the example plugin's CUDA codelets against its CPU ones:
 *
 *  - morse: energies, forces and virials of Morse clusters, crystals and a
 *    4,000-atom crystal cut into slices (mdflow/pair_cuda.cuh's driver,
 *    slices summed by the chunk sum), GPU run against CPU run;
 *  - berendsen: 40 steps of the Berendsen method (its own CUDA codelets)
 *    on argon crystals started at 120 K with a 60 K target, and 40
 *    velocity Verlet steps under the Morse model: final positions,
 *    velocities and energies, GPU run against CPU run.
 *
 * GPU runs use the gpu-first policy (tests/gpu_first.c): every task with a
 * CUDA implementation runs on the GPU, and the test asserts that none
 * reached the CPU. Without a CUDA worker the program exits 77 (skipped).
 * MDF_TEST_CUDA_EMULATE=1 runs the "GPU" side on CPU workers from
 * positions moved by up to 1e-11 Å: a check of the test and its
 * tolerances (no CUDA code runs).
 *
 * Tolerances as test_cuda_runs.c argues: single points, energies and
 * virials 1e-10 relative, forces 1e-9 eV/Å; 40 steps, positions and
 * velocities 1e-7 relative to their scale, energies 1e-8 relative with a
 * floor of 1 meV per atom. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <starpu.h>
#include "testutil.h"
#include "gpu_first.h"
#include "plugin_util.h"

#define EMU_JITTER 1e-11
#define MORSE_D 0.3429
#define MORSE_A 1.3588
#define MORSE_R0 2.866
#define MORSE_CUT 6.0

static int emulate;

static void start_run(int gpu)
{
    if (gpu) tu_start_gpu_first(emulate ? 0 : -1);
    else tu_start(NULL, -1, 0);
    TU_CALL(mdf_plugin_load, tu_example_plugin());
}

static void stop_run(int gpu)
{
    if (!gpu) {
        tu_stop();
        return;
    }
    tu_gpu_first_counts c = tu_gpu_first_counts_get();
    printf("# gpu-first: %ld tasks to the CUDA queue, %ld to the CPU queue\n", c.pushed[1], c.pushed[0]);
    tu_stop_gpu_first();
    if (emulate) return;
    assert_int_equal(c.cuda_capable_on_cpu, 0);
    assert_true(c.pushed[1] > 0);
}

static void jitter(mdf_frame *f, size_t n, uint64_t seed)
{
    for (size_t i = 0; i < n; i++)
        for (int64_t k = 0; k < 3 * f[i].natoms; k++) f[i].positions[k] += EMU_JITTER * (2.0 * tu_rand(&seed) - 1.0);
}

static mdf_frame *copy_frames(const mdf_frame *in, size_t n)
{
    mdf_frame *out = calloc(n, sizeof *out);
    assert_non_null(out);
    for (size_t i = 0; i < n; i++) TU_CALL(mdf_frame_copy, &out[i], &in[i]);
    return out;
}

static double scale_of(const double *x, int64_t n)
{
    double s = 0.0;
    for (int64_t k = 0; k < n; k++) s = fmax(s, fabs(x[k]));
    return s;
}

/* The "virial" info key (batch.c writes nine numbers when it is fresh). */
static void virial_of(const mdf_frame *f, size_t i, double w[9])
{
    const char *t = mdf_frame_get_info(f, "virial");
    if (!t) fail_msg("system %zu: no virial", i);
    if (sscanf(t, "%lf %lf %lf %lf %lf %lf %lf %lf %lf", w, w + 1, w + 2, w + 3, w + 4, w + 5, w + 6, w + 7, w + 8) != 9)
        fail_msg("system %zu: virial '%s' is not nine numbers", i, t);
}

static void compare_point(const mdf_frame *c, const mdf_frame *g, size_t i)
{
    if (tu_reldiff(c->energy, g->energy, 1e-12) > 1e-10)
        fail_msg("system %zu: energy CPU %.17g GPU %.17g", i, c->energy, g->energy);
    double wc[9], wg[9], scale = 0.0;
    virial_of(c, i, wc);
    virial_of(g, i, wg);
    for (int k = 0; k < 9; k++) scale = fmax(scale, fabs(wc[k]));
    for (int k = 0; k < 9; k++)
        if (fabs(wc[k] - wg[k]) > 1e-10 * scale)
            fail_msg("system %zu: virial[%d] CPU %.17g GPU %.17g", i, k, wc[k], wg[k]);
    for (int64_t k = 0; k < 3 * c->natoms; k++)
        if (fabs(c->forces[k] - g->forces[k]) > 1e-9)
            fail_msg("system %zu: force component %lld CPU %.17g GPU %.17g", i, (long long)k, c->forces[k],
                     g->forces[k]);
}

static void test_morse_single_points(void **state)
{
    (void)state;
    double box[9] = {20, 0, 0, 0, 20, 0, 0, 0, 20};
    int open[3] = {0, 0, 0}, zs[] = {29};
    enum { N = 5 };
    mdf_frame in[N] = {tu_random(13, box, open, 2.3, zs, 1, 1), tu_random(55, box, open, 2.3, zs, 1, 2),
                       tu_fcc(4, 4, 4, 3.61, 29, 0.0, 0.05, 3), tu_fcc(4, 4, 4, 3.61, 29, 0.1, 0.08, 4),
                       tu_fcc(10, 10, 10, 3.61, 29, 0.0, 0.05, 5)};
    mdf_frame cpu[N], gpu[N];
    start_run(0);
    mdf_model *m = tu_morse_model(MORSE_D, MORSE_A, MORSE_R0, MORSE_CUT, 1);
    tu_evaluate(in, N, m, 512, cpu);
    mdf_model_destroy(m);
    stop_run(0);
    mdf_frame *moved = copy_frames(in, N);
    if (emulate) jitter(moved, N, 9);
    start_run(1);
    m = tu_morse_model(MORSE_D, MORSE_A, MORSE_R0, MORSE_CUT, 1);
    tu_evaluate(moved, N, m, 512, gpu);
    mdf_model_destroy(m);
    stop_run(1);
    for (size_t i = 0; i < N; i++) {
        compare_point(&cpu[i], &gpu[i], i);
        mdf_frame_free(&cpu[i]);
        mdf_frame_free(&gpu[i]);
        mdf_frame_free(&moved[i]);
        mdf_frame_free(&in[i]);
    }
    free(moved);
}

/* steps of `method` from frames `in` (velocities drawn at 120 K), final frames in out. */
static void dynamics(int gpu, const mdf_frame *in, size_t n, const char *model, const char *method, mdf_frame *out)
{
    start_run(gpu);
    mdf_model *m;
    if (strcmp(model, "morse") == 0) {
        m = tu_morse_model(MORSE_D, MORSE_A, MORSE_R0, MORSE_CUT, 0);
    } else {
        mdf_lj_config lj = tu_argon(6.5, 1);
        TU_CALL(mdf_model_create_lj, &lj, &m);
    }
    mdf_batch *b;
    TU_CALL(mdf_batch_create, in, n, NULL, &b);
    TU_CALL(mdf_batch_thermalize, b, 120.0, 7, 0);
    mdf_md_config md;
    mdf_md_config_init(&md);
    md.integrator = method;
    md.steps = 40;
    md.dt_fs = 4.0;
    md.chunk_atoms = 512;
    md.params.temperature_K = 60.0;
    if (strcmp(method, "berendsen") == 0) TU_CALL(mdf_param_list_set, &md.method_params, "tau_fs", "50");
    mdf_md_report rep;
    TU_CALL(mdf_md_run, b, m, &md, &rep);
    assert_int_equal(rep.steps, 40);
    assert_true(rep.model_evaluations >= 41);
    TU_CALL(mdf_batch_sync, b);
    for (size_t i = 0; i < n; i++) TU_CALL(mdf_batch_get_frame, b, i, &out[i]);
    mdf_batch_destroy(b);
    mdf_model_destroy(m);
    stop_run(gpu);
}

static void compare_dynamics(const mdf_frame *c, const mdf_frame *g, size_t n, const char *what)
{
    for (size_t i = 0; i < n; i++) {
        int64_t k3 = 3 * c[i].natoms;
        double ps = scale_of(c[i].positions, k3), vs = scale_of(c[i].velocities, k3);
        for (int64_t k = 0; k < k3; k++) {
            if (fabs(c[i].positions[k] - g[i].positions[k]) > 1e-7 * ps)
                fail_msg("%s, system %zu: position %lld CPU %.17g GPU %.17g", what, i, (long long)k, c[i].positions[k],
                         g[i].positions[k]);
            if (fabs(c[i].velocities[k] - g[i].velocities[k]) > 1e-7 * vs)
                fail_msg("%s, system %zu: velocity %lld CPU %.17g GPU %.17g", what, i, (long long)k,
                         c[i].velocities[k], g[i].velocities[k]);
        }
        double floor = 1e-3 * (double)c[i].natoms;
        if (fabs(c[i].energy - g[i].energy) > fmax(1e-8 * fabs(c[i].energy), floor))
            fail_msg("%s, system %zu: energy CPU %.17g GPU %.17g", what, i, c[i].energy, g[i].energy);
    }
    printf("# %s: %zu systems agree\n", what, n);
}

static void run_and_compare(const char *model, const char *method, int z, double a, int reps)
{
    enum { N = 4 };
    mdf_frame in[N];
    for (int i = 0; i < N; i++) in[i] = tu_fcc(reps, reps, reps, a, z, 0.0, 0.02, 20 + (uint64_t)i);
    mdf_frame cpu[N], gpu[N];
    dynamics(0, in, N, model, method, cpu);
    if (emulate) jitter(in, N, 11);
    dynamics(1, in, N, model, method, gpu);
    char what[64];
    snprintf(what, sizeof what, "%s under %s", method, model);
    compare_dynamics(cpu, gpu, N, what);
    for (int i = 0; i < N; i++) {
        mdf_frame_free(&cpu[i]);
        mdf_frame_free(&gpu[i]);
        mdf_frame_free(&in[i]);
    }
}

static void test_berendsen(void **state)
{
    (void)state;
    run_and_compare("lj", "berendsen", 18, 5.26, 3);
}

static void test_morse_dynamics(void **state)
{
    (void)state;
    run_and_compare("morse", "velocity_verlet", 29, 3.61, 4);
}

int main(void)
{
    unsetenv("STARPU_NCPU");
    unsetenv("STARPU_NCPUS");
    unsetenv("STARPU_NCUDA");
    unsetenv("STARPU_SCHED");
    emulate = getenv("MDF_TEST_CUDA_EMULATE") && atoi(getenv("MDF_TEST_CUDA_EMULATE")) != 0;
    if (!emulate && !tu_have_cuda_worker()) {
        printf("# no CUDA worker (no GPU, or a StarPU without CUDA): skipped\n");
        return TU_SKIP;
    }
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_morse_single_points), cmocka_unit_test(test_berendsen),
                                       cmocka_unit_test(test_morse_dynamics)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
