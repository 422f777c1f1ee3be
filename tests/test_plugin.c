/* mdflow tests — the example plugin (examples/plugin/) through the library's
 * C API: loaded with mdf_plugin_load, its Morse model built by name with
 * parameters by name, and checked against ASE's MorsePotential (energies,
 * forces, virial; tests/morse_ase_check.py) and against the closed form
 * (the shift); refusals of broken plugins (another API version, no entry
 * point, a name taken) and of unknown parameters.
 *
 * The plugins are built by `make check` from their sources with libtool
 * (tests/Makefile.inc: tests/plugins/); MDF_TEST_PLUGIN names another build
 * of the example plugin to test instead (e.g. one that examples/plugin/Makefile
 * built). The Berendsen method: the mean temperature of crystals started
 * hot, the conserved quantity, and NVE when τ is enormous. */
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include "testutil.h"
#include "plugin_util.h"
#include "mdflow/extension.h"

/* Non-default parameters, so that a default would show. */
#define M_D 0.41
#define M_A 1.47
#define M_R0 2.71
#define M_CUT 6.05

static char tmpdir[256];

static const char *plugin_path(const char *name) { return tu_plugin_path(name); }

/* The example plugin under test (loaded once, by the first test). */
static const char *example_plugin(void) { return tu_example_plugin(); }

static void load_plugin(void) { TU_CALL(mdf_plugin_load, example_plugin()); }

/* Runs argv (no shell) and returns its exit status, -1 if it did not run. */
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

static mdf_model *morse_model(double D, double a, double r0, double cutoff, int shift)
{
    return tu_morse_model(D, a, r0, cutoff, shift);
}

static void evaluate(const mdf_frame *frames, size_t n, mdf_model *m, int32_t chunk_atoms, mdf_frame *out)
{
    tu_evaluate(frames, n, m, chunk_atoms, out);
}

/* ---- loading ------------------------------------------------------------------- */

static void test_load(void **state)
{
    (void)state;
    size_t before = mdf_plugin_count();
    load_plugin();
    assert_int_equal(mdf_plugin_count(), before + 1);
    load_plugin(); /* a second load of the same file does nothing */
    assert_int_equal(mdf_plugin_count(), before + 1);
    const mdf_model_def *d = mdf_model_def_find("morse");
    assert_non_null(d);
    assert_int_equal(mdf_params_count(d->params), 5);
    const mdf_method *m = mdf_method_find("berendsen");
    assert_non_null(m);
    assert_non_null(mdf_params_find(m->params, "tau_fs"));
    mdf_model_config *c = NULL;
    TU_CALL(mdf_model_config_create, "morse", &c);
    assert_int_equal(mdf_model_config_has_param(c, "cutoff"), 1);
    assert_int_equal(mdf_model_config_has_param(c, "epsilon"), 0);
    mdf_model_config_destroy(c);
}

/* ---- Morse against ASE ---------------------------------------------------------- */

static void check_against_ase(const char *python, const char *script, const mdf_frame_list *in, int shift,
                              int32_t chunk_atoms)
{
    mdf_model *m = morse_model(M_D, M_A, M_R0, M_CUT, shift);
    mdf_frame *out = calloc(in->count, sizeof *out);
    evaluate(in->frames, in->count, m, chunk_atoms, out);
    char path[512], args[5][40];
    snprintf(path, sizeof path, "%s/result_%d_%d.xyz", tmpdir, shift, (int)chunk_atoms);
    TU_CALL(mdf_xyz_write, path, out, in->count, 0);
    snprintf(args[0], sizeof args[0], "%.17g", M_D);
    snprintf(args[1], sizeof args[1], "%.17g", M_A);
    snprintf(args[2], sizeof args[2], "%.17g", M_R0);
    snprintf(args[3], sizeof args[3], "%.17g", M_CUT);
    snprintf(args[4], sizeof args[4], "%d", shift);
    printf("chunks of %s atoms: ", chunk_atoms ? "64" : "all");
    char *argv[] = {(char *)python, (char *)script, "check", path, args[0], args[1], args[2], args[3], args[4], NULL};
    int rc = run(argv);
    if (rc != 0) fail_msg("%s check %s: exit %d (deviations from ASE above)", script, path, rc);
    for (size_t i = 0; i < in->count; i++) mdf_frame_free(&out[i]);
    free(out);
    mdf_model_destroy(m);
}

static void test_morse_vs_ase(void **state)
{
    (void)state;
    const char *python = tu_python_with("ase.calculators.morse");
    if (!python) skip();
    load_plugin();
    char script[1024], gen[512], r0[40], cut[40];
    snprintf(script, sizeof script, "%s/tests/morse_ase_check.py", tu_srcdir());
    snprintf(gen, sizeof gen, "%s/frames.xyz", tmpdir);
    snprintf(r0, sizeof r0, "%.17g", M_R0);
    snprintf(cut, sizeof cut, "%.17g", M_CUT);
    char *argv[] = {(char *)python, script, "gen", gen, r0, cut, NULL};
    assert_int_equal(run(argv), 0);
    mdf_frame_list in;
    mdf_frame_list_init(&in);
    TU_CALL(mdf_xyz_read, gen, &in);
    assert_true(in.count >= 9);
    for (int shift = 0; shift <= 1; shift++) {
        check_against_ase(python, script, &in, shift, 0);
        check_against_ase(python, script, &in, shift, 64);
    }
    mdf_frame_list_free(&in);
}

/* ---- the shift, against the closed form ----------------------------------------- */

static double morse_e(double r) { return M_D * (pow(1.0 - exp(-M_A * (r - M_R0)), 2) - 1.0); }

static void test_morse_shift(void **state)
{
    (void)state;
    load_plugin();
    const double rs[] = {2.0, M_R0, 3.3, 5.0, M_CUT - 1e-6, M_CUT + 1e-6, 7.0};
    const size_t n = sizeof rs / sizeof rs[0];
    mdf_frame f[sizeof rs / sizeof rs[0]], out[sizeof rs / sizeof rs[0]];
    const double dir[3] = {0.36, -0.48, 0.8}; /* unit vector */
    for (size_t k = 0; k < n; k++) {
        memset(&f[k], 0, sizeof f[k]);
        TU_CALL(mdf_frame_alloc, &f[k], 2, 0, 0, 0);
        f[k].numbers[0] = f[k].numbers[1] = 29;
        for (int q = 0; q < 3; q++) f[k].positions[3 + q] = rs[k] * dir[q];
    }
    for (int shift = 0; shift <= 1; shift++) {
        mdf_model *m = morse_model(M_D, M_A, M_R0, M_CUT, shift);
        evaluate(f, n, m, 0, out);
        for (size_t k = 0; k < n; k++) {
            double r = rs[k], inside = r < M_CUT;
            double e = inside ? morse_e(r) - (shift ? morse_e(M_CUT) : 0.0) : 0.0;
            double x = exp(-M_A * (r - M_R0));
            double fmag = inside ? 2.0 * M_A * M_D * x * (x - 1.0) : 0.0; /* -dE/dr: > 0 repels */
            if (tu_reldiff(out[k].energy, e, M_D) > 1e-13)
                fail_msg("dimer r=%g shift=%d: energy %.17g, closed form %.17g", r, shift, out[k].energy, e);
            for (int q = 0; q < 3; q++)
                if (fabs(out[k].forces[3 + q] - fmag * dir[q]) > 1e-13 * fmax(fabs(fmag), M_D * M_A))
                    fail_msg("dimer r=%g: force %.17g, closed form %.17g", r, out[k].forces[3 + q], fmag * dir[q]);
            mdf_frame_free(&out[k]);
        }
        mdf_model_destroy(m);
    }
    for (size_t k = 0; k < n; k++) mdf_frame_free(&f[k]);
}

/* ---- refusals ------------------------------------------------------------------ */

/* Fails unless status is an error whose message holds every string of want. */
static void expect_error(mdf_status st, const mdf_error *err, const char *const *want)
{
    if (st == MDF_OK) fail_msg("expected an error containing '%s'", want[0]);
    printf("refused: %s\n", err->message);
    for (; *want; want++)
        if (!strstr(err->message, *want)) fail_msg("message lacks '%s': %s", *want, err->message);
}

static void test_unknown_parameter(void **state)
{
    (void)state;
    load_plugin();
    mdf_model_config *c = NULL;
    TU_CALL(mdf_model_config_create, "morse", &c);
    mdf_error err;
    mdf_error_clear(&err);
    expect_error(mdf_model_config_set(c, "depth", "0.5", &err), &err,
                 (const char *const[]){"depth", "morse", "D", "r0", "cutoff", "shift", NULL});
    expect_error(mdf_model_config_set(c, "a", "-1", &err), &err, (const char *const[]){"a", "1/Å", NULL});
    /* Each value is in range; together they are not (setup's own check). */
    TU_CALL(mdf_model_config_set, c, "r0", "7");
    mdf_model *m = NULL;
    expect_error(mdf_model_create(c, &m, &err), &err, (const char *const[]){"morse", "cutoff", "r0", NULL});
    assert_null(m);
    mdf_model_config_destroy(c);
}

static void test_broken_plugins(void **state)
{
    (void)state;
    load_plugin();
    size_t before = mdf_plugin_count();
    mdf_error err;
    mdf_error_clear(&err);
    expect_error(mdf_plugin_load(plugin_path("bad_version"), &err), &err,
                 (const char *const[]){"bad_version.so", "API version 999", "rebuild", NULL});
    expect_error(mdf_plugin_load(plugin_path("no_init"), &err), &err,
                 (const char *const[]){"no_init.so", "mdflow_plugin_init", "MDFLOW_PLUGIN", NULL});
    expect_error(mdf_plugin_load(plugin_path("dup_morse"), &err), &err,
                 (const char *const[]){"dup_morse.so", "'morse'", "rename", NULL});
    assert_int_equal(mdf_plugin_count(), before);
    /* The first plugin's morse is still the one registered. */
    const mdf_model_def *d = mdf_model_def_find("morse");
    assert_non_null(d);
    assert_int_equal(mdf_params_count(d->params), 5);
}

/* ---- the Berendsen method -------------------------------------------------------- */

/* Per system, every `every` steps from step `from`: the temperature, and
 * the drift of potential + kinetic + extra energy from its first sample. */
typedef struct ber_sampler {
    int nsys, cap, from;
    int *n;
    double *t, *h, *h0, *dh_max, *extra_max;
    int bad;
} ber_sampler;

static void ber_sample(void *user, const mdf_hook_event *ev)
{
    ber_sampler *s = (ber_sampler *)user;
    for (size_t r = 0; r < ev->nrows; r++) {
        const mdf_hook_row *w = &ev->rows[r];
        if (w->id < 0 || w->id >= s->nsys) {
            s->bad = 1;
            continue;
        }
        double h = w->energy + w->kinetic + w->extra_energy;
        if (ev->step == 0) s->h0[w->id] = h;
        s->dh_max[w->id] = fmax(s->dh_max[w->id], fabs(h - s->h0[w->id]));
        s->extra_max[w->id] = fmax(s->extra_max[w->id], fabs(w->extra_energy));
        if (ev->step < s->from || s->n[w->id] >= s->cap) continue;
        s->t[(size_t)w->id * (size_t)s->cap + (size_t)s->n[w->id]++] = w->temperature;
    }
}

/* Runs `steps` steps of method (tau_fs for berendsen) at T0 on argon
 * crystals, sampling every `every` steps from `from`. */
static ber_sampler *ber_run(const char *method, double tau_fs, double T0, double T_start, int nsys, int steps,
                            int from, int every, double dt_fs)
{
    load_plugin();
    mdf_frame f[64];
    assert_true(nsys <= 64);
    for (int i = 0; i < nsys; i++) f[i] = tu_fcc(3, 3, 3, 5.4, 18, 0.0, 0.02, 500 + (uint64_t)i); /* 108 atoms */
    mdf_lj_config lj = tu_argon(7.5, 1); /* cutoff + skin 8 Å <= half of 16.2 Å */
    mdf_model *m = NULL;
    TU_CALL(mdf_model_create_lj, &lj, &m);
    mdf_batch *b = NULL;
    TU_CALL(mdf_batch_create, f, (size_t)nsys, NULL, &b);
    TU_CALL(mdf_batch_thermalize, b, T_start, 11, 0);
    ber_sampler *s = calloc(1, sizeof *s);
    s->nsys = nsys;
    s->from = from;
    s->cap = (steps - from) / every + 1;
    s->n = calloc((size_t)nsys, sizeof *s->n);
    s->t = calloc((size_t)nsys * (size_t)s->cap, sizeof *s->t);
    s->h0 = calloc((size_t)nsys, sizeof(double));
    s->dh_max = calloc((size_t)nsys, sizeof(double));
    s->extra_max = calloc((size_t)nsys, sizeof(double));
    mdf_stage_config cfg;
    mdf_stage_config_init(&cfg);
    cfg.integrator = method;
    cfg.max_steps = steps;
    cfg.skin = 0.5;
    cfg.params.dt_fs = dt_fs;
    cfg.params.temperature_K = T0;
    if (tau_fs > 0.0) TU_CALL(mdf_param_list_set_double, &cfg.method_params, "tau_fs", tau_fs);
    mdf_stage *st = NULL;
    TU_CALL(mdf_stage_create, &cfg, &st);
    mdf_hook *h = NULL;
    TU_CALL(mdf_hook_create_callback, "berendsen-sampler", MDF_AFTER_STEP, every, ber_sample, s, &h);
    TU_CALL(mdf_stage_add_hook, st, h);
    mdf_stage_report rep;
    TU_CALL(mdf_stage_run, st, b, m, &rep);
    assert_int_equal(rep.steps, steps);
    mdf_stage_destroy(st);
    mdf_batch_destroy(b);
    mdf_model_destroy(m);
    for (int i = 0; i < nsys; i++) mdf_frame_free(&f[i]);
    assert_false(s->bad);
    return s;
}

static void ber_free(ber_sampler *s)
{
    free(s->n);
    free(s->t);
    free(s->h0);
    free(s->dh_max);
    free(s->extra_max);
    free(s);
}

/* Started hot (velocities at 3 T0 on the lattice: ~1.5 T0 once shared with
 * the potential energy), the crystals must settle at T0. In the steady state
 * the rescalings add no energy on average: <(λ² - 1) K> = (dt/τ) <K0 - K> =
 * 0, so the mean kinetic energy is that of T0 (up to the integration
 * error). The systems are independent: the standard error of the mean
 * comes from the spread of their means, and the tolerance is 4 of them plus
 * 0.5% for the integration. Also: potential + kinetic + extra_energy stays
 * constant, while extra_energy takes out the excess heat. */
static void test_berendsen_temperature(void **state)
{
    (void)state;
    enum { NSYS = 16, STEPS = 2000, FROM = 1000, EVERY = 5 };
    const double T0 = 60.0;
    ber_sampler *s = ber_run("berendsen", 100.0, T0, 3.0 * T0, NSYS, STEPS, FROM, EVERY, 5.0);
    double means[NSYS], sum = 0.0;
    for (int i = 0; i < NSYS; i++) {
        assert_int_equal(s->n[i], s->cap);
        double m = 0.0;
        for (int k = 0; k < s->cap; k++) m += s->t[(size_t)i * (size_t)s->cap + (size_t)k];
        means[i] = m / s->cap;
        sum += means[i];
    }
    double mean = sum / NSYS, var = 0.0;
    for (int i = 0; i < NSYS; i++) var += (means[i] - mean) * (means[i] - mean);
    double sem = sqrt(var / (NSYS - 1) / NSYS), tol = 4.0 * sem + 0.005 * T0;
    double dh = 0.0, extra = 0.0;
    for (int i = 0; i < NSYS; i++) {
        dh = fmax(dh, s->dh_max[i]);
        extra = fmax(extra, s->extra_max[i]);
    }
    printf("berendsen: %d systems x 108 atoms, T0 %.0f K, tau 100 fs, dt 5 fs: <T> over steps %d-%d = %.3f +- %.3f K "
           "(%+.2f%%, tolerance %.3f K); conserved quantity drifts %.2e eV while extra_energy reaches %.3f eV\n",
           NSYS, T0, FROM, STEPS, mean, sem, 100.0 * (mean / T0 - 1.0), tol, dh, extra);
    if (fabs(mean - T0) > tol) fail_msg("mean temperature %.3f K, target %.1f K (tolerance %.3f K)", mean, T0, tol);
    if (!(extra > 0.1)) fail_msg("extra_energy reached only %.3g eV: the thermostat took out no heat", extra);
    if (dh > 0.01 * extra) fail_msg("potential + kinetic + extra drifted %.3g eV (extra_energy %.3g eV)", dh, extra);
    ber_free(s);
}

/* With τ far beyond the run the rescaling vanishes (λ = 1 to the last bit
 * for τ = 1e300 fs): the method is velocity Verlet, NVE. The energy's
 * excursions match those of the built-in velocity_verlet from the same
 * start, and stay small. */
static void test_berendsen_nve(void **state)
{
    (void)state;
    enum { NSYS = 4, STEPS = 400 };
    const double T0 = 60.0;
    ber_sampler *b = ber_run("berendsen", 1e300, T0, 2.0 * T0, NSYS, STEPS, 0, 1, 5.0);
    ber_sampler *v = ber_run("velocity_verlet", 0.0, T0, 2.0 * T0, NSYS, STEPS, 0, 1, 5.0);
    for (int i = 0; i < NSYS; i++) {
        printf("system %d: largest |E - E0| %.3e eV (berendsen, tau 1e300 fs), %.3e eV (velocity_verlet)\n", i,
               b->dh_max[i], v->dh_max[i]);
        if (b->extra_max[i] != 0.0) fail_msg("system %d: extra_energy %.3g eV with no rescaling", i, b->extra_max[i]);
        if (!(b->dh_max[i] <= 1e-3 * fabs(b->h0[i]))) fail_msg("system %d: energy not conserved", i);
        if (fabs(b->dh_max[i] - v->dh_max[i]) > 1e-9 * fabs(v->h0[i]))
            fail_msg("system %d: berendsen %.6e eV vs velocity_verlet %.6e eV", i, b->dh_max[i], v->dh_max[i]);
    }
    ber_free(b);
    ber_free(v);
}

static int setup(void **state)
{
    (void)state;
    snprintf(tmpdir, sizeof tmpdir, "/tmp/mdf_test_plugin_XXXXXX");
    return mkdtemp(tmpdir) ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    return tu_remove_tree(tmpdir);
}

int main(void)
{
    tu_start(NULL, 2, 0);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_load),
        cmocka_unit_test(test_morse_vs_ase),
        cmocka_unit_test(test_morse_shift),
        cmocka_unit_test(test_unknown_parameter),
        cmocka_unit_test(test_broken_plugins),
        cmocka_unit_test(test_berendsen_temperature),
        cmocka_unit_test(test_berendsen_nve),
    };
    int failed = cmocka_run_group_tests(tests, setup, teardown);
    tu_stop();
    return failed ? 1 : 0;
}
