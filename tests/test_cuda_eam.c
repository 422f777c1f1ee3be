/* mdflow tests — the EAM model's CUDA codelets (codelets/eam/eam_cuda.cu:
 * the density pass and the embedding + force pass) against its CPU ones
 * (test_eam checks those against LAMMPS). Energies, forces and virials of:
 *
 *  - AlCu.eam.alloy (eam/alloy, two elements): jittered fcc crystals with
 *    random occupation, orthorhombic and triclinic, in one batch;
 *  - Cu_u3.eam (eam, funcfl): jittered crystals;
 *  - NiAlH_jea.eam.fs (eam/fs, three elements, asymmetric cross densities);
 *  - open clusters: AlCu, and a squeezed Cu cluster whose densities pass
 *    the end of the F(rho) table (F continued linearly);
 *  - a 2,916-atom crystal with a small one, in chunks of 512 atoms on the
 *    GPU (densities gathered from several chunks, forces and energies
 *    summed as parts) against whole systems on the CPU;
 *  - lists too short for the neighbours (density_hint tiny): atoms walk
 *    their cells;
 * and 20 velocity Verlet steps on AlCu crystals (the force pass without
 * the virial), final positions and velocities.
 *
 * GPU runs use the gpu-first policy (tests/gpu_first.c): every task with a
 * CUDA implementation runs on the GPU, and the test asserts that none
 * reached the CPU. Without a CUDA worker the program exits 77 (skipped), as
 * it does without the LAMMPS potential files (MDF_LAMMPS_POTENTIALS, default
 * /usr/share/lammps/potentials). MDF_TEST_CUDA_EMULATE=1 runs the "GPU"
 * side on CPU workers from positions moved by up to 1e-14 Å (a few units in
 * the last place): a check of the test and its tolerances (no CUDA code
 * runs).
 *
 * Tolerances, single points: 1e-12 relative (energy |ΔE|/|E|, forces
 * max |ΔF| / max |F|, virial max |ΔW| / max |W| per system). Both sides
 * evaluate the same functions (eam_kernel.h) on the same neighbours with
 * the same spline rows; they differ by the GPU's fused multiply-adds and
 * the order of the per-system sums: round-off, ~1e-15. Dynamics: 1e-9
 * relative to the positions' and velocities' scale after 20 steps, where
 * round-off has grown by the trajectories' divergence. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <starpu.h>
#include "testutil.h"
#include "gpu_first.h"
#include "mdflow/extension.h"

#define EMU_JITTER 1e-14
#define TOL 1e-12

static int emulate;
static const char *g_pot;
static double g_worst[3]; /* energy, forces, virial */

static void start_run(int gpu)
{
    if (gpu) tu_start_gpu_first(emulate ? 0 : -1);
    else tu_start(NULL, -1, 0);
}

static void stop_run(int gpu)
{
    if (!gpu) {
        tu_stop();
        return;
    }
    tu_gpu_first_counts c = tu_gpu_first_counts_get();
    printf("# gpu-first: %ld tasks to the CUDA queue, %ld to the CPU queue\n", c.pushed[1], c.pushed[0]);
    for (int k = 0; k < c.nnames; k++) printf("#   on the CPU: %s\n", c.names[k]);
    tu_stop_gpu_first();
    if (emulate) return;
    assert_int_equal(c.cuda_capable_on_cpu, 0);
    assert_true(c.pushed[1] > 0);
}

static mdf_model *eam_model(const char *file, const char *density_hint)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", g_pot, file);
    return tu_eam_model(path, density_hint);
}

typedef struct point {
    double energy, virial[9], *forces;
    int64_t natoms;
} point;

static void jitter(mdf_frame *f, size_t n, uint64_t seed)
{
    for (size_t i = 0; i < n; i++)
        for (int64_t k = 0; k < 3 * f[i].natoms; k++) f[i].positions[k] += EMU_JITTER * (2.0 * tu_rand(&seed) - 1.0);
}

/* Energies, forces and virials of the frames (one shard, model chunks of
 * chunk_atoms; 0: automatic) on the CPU or (gpu) the GPU. */
static void evaluate(int gpu, const mdf_frame *in, size_t n, const char *file, const char *density_hint,
                     int32_t chunk_atoms, point *out)
{
    mdf_frame *fr = calloc(n, sizeof *fr);
    assert_non_null(fr);
    for (size_t i = 0; i < n; i++) TU_CALL(mdf_frame_copy, &fr[i], &in[i]);
    if (gpu && emulate) jitter(fr, n, 9);
    start_run(gpu);
    mdf_model *m = eam_model(file, density_hint);
    mdf_md_report rep;
    mdf_batch *b = tu_single_point(fr, n, m, chunk_atoms, 0.4, &rep);
    if (chunk_atoms) assert_true(rep.nchunks > (int)n); /* some system was sliced */
    for (size_t i = 0; i < n; i++) {
        mdf_frame f;
        memset(&f, 0, sizeof f);
        TU_CALL(mdf_batch_get_frame, b, i, &f);
        mdf_system_view v;
        TU_CALL(mdf_batch_get_system, b, i, &v);
        if (!v.virial_fresh) fail_msg("system %zu: the virial was not computed", i);
        out[i].energy = v.potential_energy;
        memcpy(out[i].virial, v.virial, sizeof v.virial);
        out[i].natoms = f.natoms;
        out[i].forces = malloc(sizeof(double) * 3 * (size_t)f.natoms);
        assert_non_null(out[i].forces);
        memcpy(out[i].forces, f.forces, sizeof(double) * 3 * (size_t)f.natoms);
        mdf_frame_free(&f);
    }
    mdf_batch_destroy(b);
    mdf_model_destroy(m);
    stop_run(gpu);
    for (size_t i = 0; i < n; i++) mdf_frame_free(&fr[i]);
    free(fr);
}

/* CPU (whole systems) against GPU (chunks of gpu_chunk atoms; 0: automatic). */
static void compare(const char *what, const mdf_frame *in, size_t n, const char *file, const char *density_hint,
                    int32_t gpu_chunk)
{
    point *c = calloc(n, sizeof *c), *g = calloc(n, sizeof *g);
    assert_true(c && g);
    evaluate(0, in, n, file, density_hint, 0, c);
    evaluate(1, in, n, file, density_hint, gpu_chunk, g);
    for (size_t i = 0; i < n; i++) {
        assert_int_equal(c[i].natoms, g[i].natoms);
        double de = fabs(c[i].energy - g[i].energy) / fabs(c[i].energy);
        double fs = 0, df = 0, ws = 0, dw = 0;
        for (int64_t k = 0; k < 3 * c[i].natoms; k++) {
            fs = fmax(fs, fabs(c[i].forces[k]));
            df = fmax(df, fabs(c[i].forces[k] - g[i].forces[k]));
            if (!isfinite(g[i].forces[k])) fail_msg("%s, system %zu: GPU force %lld is %g", what, i, (long long)k,
                                                    g[i].forces[k]);
        }
        for (int k = 0; k < 9; k++) {
            ws = fmax(ws, fabs(c[i].virial[k]));
            dw = fmax(dw, fabs(c[i].virial[k] - g[i].virial[k]));
        }
        df /= fs;
        dw /= ws;
        printf("# %s, system %zu (%lld atoms): E %.15g eV (CPU %.15g), rel. dev. energy %.2e forces %.2e virial %.2e\n",
               what, i, (long long)c[i].natoms, g[i].energy, c[i].energy, de, df, dw);
        assert_true(fs > 1e-3 && ws > 1e-3); /* jittered: not zero by symmetry */
        g_worst[0] = fmax(g_worst[0], de);
        g_worst[1] = fmax(g_worst[1], df);
        g_worst[2] = fmax(g_worst[2], dw);
        if (!(de <= TOL)) fail_msg("%s, system %zu: energy CPU %.17g GPU %.17g", what, i, c[i].energy, g[i].energy);
        if (!(df <= TOL)) fail_msg("%s, system %zu: forces differ by %.3g of their largest", what, i, df);
        if (!(dw <= TOL)) fail_msg("%s, system %zu: virials differ by %.3g of their largest", what, i, dw);
        free(c[i].forces);
        free(g[i].forces);
    }
    free(c);
    free(g);
}

/* Random occupation: element za with probability 1 - frac, zb otherwise. */
static void occupy(mdf_frame *f, int za, int zb, double frac, uint64_t seed)
{
    uint64_t st = seed;
    for (int64_t i = 0; i < f->natoms; i++) f->numbers[i] = tu_rand(&st) < frac ? zb : za;
    free(f->masses);
    f->masses = NULL;
}

static void make_open(mdf_frame *f)
{
    f->has_cell = 0;
    memset(f->cell, 0, sizeof f->cell);
    memset(f->pbc, 0, sizeof f->pbc);
}

static void free_frames(mdf_frame *f, size_t n)
{
    for (size_t i = 0; i < n; i++) mdf_frame_free(&f[i]);
}

static void test_alloy(void **state)
{
    (void)state;
    mdf_frame in[3] = {tu_fcc(5, 5, 5, 3.9, 13, 0.0, 0.12, 11), tu_fcc(5, 5, 5, 3.85, 13, 0.1, 0.1, 12),
                       tu_fcc(4, 5, 6, 4.0, 13, 0.0, 0.15, 13)};
    occupy(&in[0], 13, 29, 0.5, 21);
    occupy(&in[1], 13, 29, 0.3, 22);
    occupy(&in[2], 13, 29, 0.8, 23);
    compare("AlCu eam/alloy", in, 3, "AlCu.eam.alloy", NULL, 0);
    free_frames(in, 3);
}

static void test_funcfl(void **state)
{
    (void)state;
    mdf_frame in[2] = {tu_fcc(5, 5, 5, 3.615, 29, 0.0, 0.1, 51), tu_fcc(5, 5, 5, 3.5, 29, 0.05, 0.1, 52)};
    compare("Cu eam (funcfl)", in, 2, "Cu_u3.eam", NULL, 0);
    free_frames(in, 2);
}

/* Small periodic cells narrower than the cut-off (2 and 4 atoms): every
 * image of every neighbour, wide list entries. */
static void test_small_cells(void **state)
{
    (void)state;
    const int pbc[3] = {1, 1, 1}, zs[2] = {13, 29};
    const double two[9] = {3.4, 0, 0, 0.7, 3.3, 0, -0.5, 0.6, 3.5};
    mdf_frame in[3] = {tu_fcc(1, 1, 1, 3.9, 13, 0.1, 0.12, 111), tu_random(2, two, pbc, 2.3, zs, 2, 112),
                       tu_fcc(1, 1, 1, 4.0, 13, -0.2, 0.15, 113)};
    occupy(&in[0], 13, 29, 0.5, 114);
    occupy(&in[2], 13, 29, 0.25, 115);
    compare("AlCu eam/alloy, small cells", in, 3, "AlCu.eam.alloy", NULL, 0);
    free_frames(in, 3);
}

static void test_fs(void **state)
{
    (void)state;
    mdf_frame in = tu_fcc(5, 5, 5, 3.7, 28, 0.05, 0.12, 63);
    uint64_t st = 64;
    for (int64_t i = 0; i < in.natoms; i++) {
        double u = tu_rand(&st);
        in.numbers[i] = u < 0.5 ? 28 : u < 0.9 ? 13 : 1;
    }
    free(in.masses);
    in.masses = NULL;
    compare("NiAlH eam/fs", &in, 1, "NiAlH_jea.eam.fs", NULL, 0);
    mdf_frame_free(&in);
}

static void test_clusters(void **state)
{
    (void)state;
    mdf_frame al = tu_fcc(3, 3, 3, 3.9, 13, 0.0, 0.1, 31);
    occupy(&al, 13, 29, 0.5, 32);
    make_open(&al);
    compare("AlCu eam/alloy cluster", &al, 1, "AlCu.eam.alloy", NULL, 0);
    mdf_frame_free(&al);
    mdf_frame cu = tu_fcc(3, 3, 3, 2.2, 29, 0.0, 0.05, 71); /* rho > rhomax in the core */
    make_open(&cu);
    compare("Cu eam (funcfl) squeezed cluster", &cu, 1, "Cu_u3.eam", NULL, 0);
    mdf_frame_free(&cu);
}

static void test_sliced(void **state)
{
    (void)state;
    mdf_frame in[2] = {tu_fcc(9, 9, 9, 3.7, 13, 0.0, 0.1, 41), tu_fcc(4, 4, 4, 3.9, 13, 0.05, 0.1, 43)};
    occupy(&in[0], 13, 29, 0.6, 42);
    occupy(&in[1], 13, 29, 0.4, 44);
    compare("AlCu eam/alloy in chunks of 512", in, 2, "AlCu.eam.alloy", NULL, 512);
    free_frames(in, 2);
}

static void test_short_lists(void **state)
{
    (void)state;
    mdf_frame in[2] = {tu_fcc(5, 5, 5, 3.9, 13, 0.1, 0.12, 81), tu_fcc(3, 3, 3, 3.9, 13, 0.0, 0.1, 82)};
    occupy(&in[0], 13, 29, 0.5, 83);
    occupy(&in[1], 13, 29, 0.5, 84);
    make_open(&in[1]);
    compare("AlCu eam/alloy, lists too short", in, 2, "AlCu.eam.alloy", "0.0005", 0);
    free_frames(in, 2);
}

/* 20 velocity Verlet steps from velocities drawn at 300 K. */
static void dynamics(int gpu, const mdf_frame *in, size_t n, mdf_frame *out)
{
    start_run(gpu);
    mdf_model *m = eam_model("AlCu.eam.alloy", NULL);
    mdf_batch *b;
    TU_CALL(mdf_batch_create, in, n, NULL, &b);
    TU_CALL(mdf_batch_thermalize, b, 300.0, 7, 0);
    mdf_md_config md;
    mdf_md_config_init(&md);
    md.steps = 20;
    md.dt_fs = 2.0;
    mdf_md_report rep;
    TU_CALL(mdf_md_run, b, m, &md, &rep);
    assert_int_equal(rep.steps, 20);
    TU_CALL(mdf_batch_sync, b);
    for (size_t i = 0; i < n; i++) TU_CALL(mdf_batch_get_frame, b, i, &out[i]);
    mdf_batch_destroy(b);
    mdf_model_destroy(m);
    stop_run(gpu);
}

static double scale_of(const double *x, int64_t n)
{
    double s = 0.0;
    for (int64_t k = 0; k < n; k++) s = fmax(s, fabs(x[k]));
    return s;
}

static void test_dynamics(void **state)
{
    (void)state;
    enum { N = 3 };
    mdf_frame in[N], cpu[N], gpu[N];
    for (int i = 0; i < N; i++) {
        in[i] = tu_fcc(4, 4, 4, 4.0, 13, 0.0, 0.05, 90 + (uint64_t)i);
        occupy(&in[i], 13, 29, 0.5, 95 + (uint64_t)i);
    }
    dynamics(0, in, N, cpu);
    if (emulate) jitter(in, N, 11);
    dynamics(1, in, N, gpu);
    for (int i = 0; i < N; i++) {
        int64_t k3 = 3 * cpu[i].natoms;
        double ps = scale_of(cpu[i].positions, k3), vs = scale_of(cpu[i].velocities, k3), dp = 0, dv = 0;
        for (int64_t k = 0; k < k3; k++) {
            dp = fmax(dp, fabs(cpu[i].positions[k] - gpu[i].positions[k]));
            dv = fmax(dv, fabs(cpu[i].velocities[k] - gpu[i].velocities[k]));
        }
        printf("# dynamics, system %d: positions differ by %.2e, velocities by %.2e of their scale\n", i, dp / ps,
               dv / vs);
        if (!(dp <= 1e-9 * ps && dv <= 1e-9 * vs)) fail_msg("dynamics, system %d: CPU and GPU trajectories differ", i);
    }
    free_frames(in, N);
    free_frames(cpu, N);
    free_frames(gpu, N);
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
    g_pot = tu_lammps_potentials();
    static const char *const files[] = {"AlCu.eam.alloy", "Cu_u3.eam", "NiAlH_jea.eam.fs"};
    for (int k = 0; k < 3; k++) {
        char probe[1024];
        snprintf(probe, sizeof probe, "%s/%s", g_pot, files[k]);
        FILE *fp = fopen(probe, "r");
        if (!fp) {
            printf("# %s not found (set MDF_LAMMPS_POTENTIALS): skipped\n", probe);
            return TU_SKIP;
        }
        fclose(fp);
    }
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_alloy),    cmocka_unit_test(test_funcfl),
                                       cmocka_unit_test(test_fs),       cmocka_unit_test(test_small_cells),
                                       cmocka_unit_test(test_clusters), cmocka_unit_test(test_sliced),
                                       cmocka_unit_test(test_short_lists), cmocka_unit_test(test_dynamics)};
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    printf("# largest CPU/GPU deviations: energy %.2e, forces %.2e, virial %.2e (relative)\n", g_worst[0], g_worst[1],
           g_worst[2]);
    return rc;
}
