/* mdflow tests — methods through the public extension API
 * (mdflow/extension.h): every built-in is found in the registry with the
 * documented defaults, a stage refuses unknown and out-of-range method
 * parameters with messages that name the method, the valid names and the
 * range, a method registered at run time by this test (its own codelets)
 * runs in a stage, and a name is registered once only.
 *
 * The documented defaults below are those of the methods' papers and of
 * ASE, as docs/architecture.md and `mdflow methods` list them; they are
 * written out here, not read back from the tables under test. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <starpu.h>
#include "mdflow/extension.h"
#include "testutil.h"

/* ---- the built-ins -------------------------------------------------------------- */

typedef struct documented {
    const char *method, *name;
    double def;
} documented;

static const documented g_documented[] = {
    {"langevin", "friction_per_fs", 0.01},
    {"nose_hoover", "tau_fs", 100.0},
    {"nose_hoover", "chain", 3},
    {"bussi", "tau_fs", 100.0},
    {"npt", "pressure_bar", 1.0},
    {"npt", "tau_p_fs", 1000.0},
    {"npt", "compressibility_per_bar", 4.5e-5},
    {"npt", "tau_t_fs", 100.0},
    {"fire", "dt", 0.1},
    {"fire", "dtmax", 1.0},
    {"fire", "maxstep", 0.2},
    {"fire", "nmin", 5},
    {"fire", "finc", 1.1},
    {"fire", "fdec", 0.5},
    {"fire", "astart", 0.1},
    {"fire", "fa", 0.99},
    {"fire2", "dt", 0.1},
    {"fire2", "dtmax", 1.0},
    {"fire2", "dtmin", 2e-3},
    {"fire2", "maxstep", 0.2},
    {"fire2", "nmin", 20},
    {"fire2", "finc", 1.1},
    {"fire2", "fdec", 0.5},
    {"fire2", "astart", 0.25},
    {"fire2", "fa", 0.99},
    {"gd", "step", 0.01},
    {"gd", "maxstep", 0.2},
    {"lbfgs", "memory", 100},
    {"lbfgs", "alpha", 70.0},
    {"lbfgs", "damping", 1.0},
    {"lbfgs", "maxstep", 0.2},
};

/* Registry order: the methods' numbers (state ownership, checkpoints). */
static const char *const g_builtins[] = {"velocity_verlet", "langevin", "nose_hoover", "bussi", "npt",
                                         "fire",            "fire2",    "gd",          "lbfgs"};
enum { NBUILTIN = 9 };

static size_t documented_count(const char *method)
{
    size_t n = 0;
    for (size_t k = 0; k < sizeof g_documented / sizeof g_documented[0]; k++) n += !strcmp(g_documented[k].method, method);
    return n;
}

static void test_builtins_registered(void **state)
{
    (void)state;
    assert_true(mdf_method_count() >= NBUILTIN);
    for (int k = 0; k < NBUILTIN; k++) {
        const mdf_method *m = mdf_method_find(g_builtins[k]);
        assert_non_null(m);
        assert_ptr_equal(mdf_method_at((size_t)k), m);
        assert_string_equal(m->name, g_builtins[k]);
        assert_string_equal(mdf_integrator_name((size_t)k), g_builtins[k]);
        assert_int_equal(m->api_version, MDFLOW_API_VERSION);
        assert_non_null(m->summary);
        assert_non_null(m->pre_update);
        /* Exactly the documented parameters, each with its default. */
        assert_int_equal(mdf_params_count(m->params), documented_count(m->name));
        size_t need = mdf_params_count(m->params) ? m->params_size : 0;
        assert_true(m->params_size >= need);
        void *block = calloc(1, m->params_size ? m->params_size : 1);
        mdf_params_defaults(m->params, block);
        for (size_t d = 0; d < sizeof g_documented / sizeof g_documented[0]; d++) {
            if (strcmp(g_documented[d].method, m->name) != 0) continue;
            const mdf_param_def *p = mdf_params_find(m->params, g_documented[d].name);
            if (!p) fail_msg("%s has no parameter %s", m->name, g_documented[d].name);
            if (p->def != g_documented[d].def || mdf_params_get(p, block) != g_documented[d].def)
                fail_msg("%s.%s: default %.17g, documented %.17g", m->name, p->name, p->def, g_documented[d].def);
            assert_non_null(p->help);
        }
        free(block);
        /* Optimisers carry the flag; MD methods do not, and post_update
         * does their step's bookkeeping. */
        int optimiser = k >= 5;
        assert_int_equal((m->flags & MDF_METHOD_OPTIMISER) != 0, optimiser);
        assert_int_equal(mdf_integrator_is_optimiser(m->name), optimiser);
        assert_int_equal(m->post_update == NULL, optimiser);
    }
    assert_int_equal(mdf_integrator_changes_cell("npt"), 1);
    assert_int_equal(mdf_integrator_changes_cell("bussi"), 0);
    assert_int_equal(mdf_integrator_changes_cell("nonesuch"), -1);
    /* The names users type for ensembles resolve to their methods. */
    const char *const aliases[][2] = {{"nve", "velocity_verlet"}, {"verlet", "velocity_verlet"},
                                      {"nvt-langevin", "langevin"}, {"nose-hoover", "nose_hoover"},
                                      {"nhc", "nose_hoover"},         {"csvr", "bussi"},
                                      {"l-bfgs", "lbfgs"}};
    for (size_t k = 0; k < sizeof aliases / sizeof aliases[0]; k++) {
        const mdf_method *m = mdf_method_find(aliases[k][0]);
        assert_non_null(m);
        assert_string_equal(m->name, aliases[k][1]);
    }
    assert_null(mdf_method_find("nonesuch"));
}

/* ---- parameters by name ----------------------------------------------------------- */

/* mdf_stage_create of `method` with name=value fails: the message holds each
 * fragment. */
static void expect_refused(const char *method, const char *name, const char *value, const char *const *fragments)
{
    mdf_stage_config sc;
    mdf_stage_config_init(&sc);
    sc.integrator = method;
    TU_CALL(mdf_param_list_set, &sc.method_params, name, value);
    mdf_stage *s = NULL;
    mdf_error err;
    mdf_error_clear(&err);
    assert_int_equal(mdf_stage_create(&sc, &s, &err), MDF_ERR_INVALID);
    assert_null(s);
    printf("  %s %s=%s: %s\n", method, name, value, err.message);
    for (; *fragments; fragments++)
        if (!strstr(err.message, *fragments)) fail_msg("'%s' not in: %s", *fragments, err.message);
}

static void test_unknown_parameter(void **state)
{
    (void)state;
    expect_refused("langevin", "frictoin", "0.02",
                   (const char *const[]){"'frictoin'", "method langevin", "friction_per_fs", NULL});
    /* An alias names the method itself, and every valid name is listed. */
    expect_refused("nhc", "tau", "50", (const char *const[]){"'tau'", "method nose_hoover", "tau_fs, chain", NULL});
    expect_refused("npt", "tau_fs", "50",
                   (const char *const[]){"method npt", "pressure_bar, tau_p_fs, compressibility_per_bar, tau_t_fs",
                                         NULL});
    expect_refused("fire", "memory", "10",
                   (const char *const[]){"method fire", "dt, dtmax, maxstep, nmin, finc, fdec, astart, fa", NULL});
    expect_refused("velocity_verlet", "friction_per_fs", "0.01",
                   (const char *const[]){"method velocity_verlet", "takes no parameters", NULL});
    /* Not a number, not a whole number. */
    expect_refused("bussi", "tau_fs", "fast", (const char *const[]){"tau_fs", "method bussi", "not a number", NULL});
    expect_refused("lbfgs", "memory", "10.5", (const char *const[]){"memory", "method lbfgs", "whole number", NULL});
}

static void test_out_of_range(void **state)
{
    (void)state;
    expect_refused("langevin", "friction_per_fs", "-0.01",
                   (const char *const[]){"friction_per_fs of method langevin", "-0.01", "(0, inf) 1/fs", NULL});
    expect_refused("nose_hoover", "chain", "9",
                   (const char *const[]){"chain of method nose_hoover", "[1, 5] (whole number)", NULL});
    expect_refused("lbfgs", "maxstep", "1.5",
                   (const char *const[]){"maxstep of method lbfgs", "(0, 1] Å", NULL});
    expect_refused("fire", "fa", "0", (const char *const[]){"fa of method fire", "(0, 1]", NULL});
    expect_refused("npt", "pressure_bar", "inf", (const char *const[]){"pressure_bar of method npt", "inf", NULL});
    /* A check across parameters: FIRE2's dt stays within [dtmin, dtmax]. */
    expect_refused("fire2", "dtmin", "2", (const char *const[]){"dtmin of method fire2", "dtmax", NULL});
    /* Values given by name reach the method: a valid one is taken. */
    mdf_stage_config sc;
    mdf_stage_config_init(&sc);
    sc.integrator = "nose_hoover";
    TU_CALL(mdf_param_list_set, &sc.method_params, "chain", "5");
    TU_CALL(mdf_param_list_set_double, &sc.method_params, "tau_fs", 1e-300);
    mdf_stage *s = NULL;
    TU_CALL(mdf_stage_create, &sc, &s);
    mdf_stage_destroy(s);
}

/* ---- a method registered by the test ---------------------------------------------------- */

/* "test_shift": every step moves each atom of the stage's systems by
 * `shift` Å along axis `axis` (pre_update), then counts the step
 * (post_update), with a state block that counts its own steps. */
typedef struct shift_params {
    double shift;
    int32_t axis;
} shift_params;

static const mdf_param_def shift_defs[] = {
    MDF_PARAM_DOUBLE(shift_params, shift, 0.01, -1.0, 1.0, 0u, "Å", "move per step"),
    MDF_PARAM_INT(shift_params, axis, 0, 0, 2, "", "Cartesian direction"),
    MDF_PARAM_END};

typedef struct shift_args {
    double shift;
    int32_t axis, status, natoms, nsys;
} shift_args;

static void shift_move_cpu(void *buffers[], void *cl_arg)
{
    double *pos = (double *)STARPU_VECTOR_GET_PTR(buffers[0]);
    const mdf_atom_info *atoms = (const mdf_atom_info *)STARPU_VECTOR_GET_PTR(buffers[1]);
    const mdf_sys_info *sys = (const mdf_sys_info *)STARPU_VECTOR_GET_PTR(buffers[2]);
    shift_args a;
    starpu_codelet_unpack_args(cl_arg, &a);
    for (int32_t i = 0; i < a.natoms; i++)
        if (sys[atoms[i].sys].status == a.status) pos[3 * i + a.axis] += a.shift;
}

static void shift_count_cpu(void *buffers[], void *cl_arg)
{
    mdf_sys_info *sys = (mdf_sys_info *)STARPU_VECTOR_GET_PTR(buffers[0]);
    mdf_sys_result *res = (mdf_sys_result *)STARPU_VECTOR_GET_PTR(buffers[1]);
    mdf_sys_state *st = (mdf_sys_state *)STARPU_VECTOR_GET_PTR(buffers[2]);
    shift_args a;
    starpu_codelet_unpack_args(cl_arg, &a);
    for (int32_t s = 0; s < a.nsys; s++) {
        if (sys[s].status != a.status) continue;
        if (!st[s].owner) { /* a system that just entered: the block is ours now */
            memset(st[s].d, 0, sizeof st[s].d);
            memset(st[s].n, 0, sizeof st[s].n);
            st[s].owner = 1;
        }
        st[s].n[0]++;
        sys[s].step++;
        sys[s].stage_step++;
        res[s].kinetic = 0.0;
    }
}

static struct starpu_codelet shift_move_cl = {
    .cpu_funcs = {shift_move_cpu},
    .nbuffers = 3,
    .modes = {STARPU_RW, STARPU_R, STARPU_R},
    .name = "test_shift_move",
};

static struct starpu_codelet shift_count_cl = {
    .cpu_funcs = {shift_count_cpu},
    .nbuffers = 3,
    .modes = {STARPU_RW, STARPU_RW, STARPU_RW},
    .name = "test_shift_count",
};

static shift_args shift_args_of(const mdf_method_ctx *c)
{
    const shift_params *p = mdf_method_params(c);
    return (shift_args){.shift = p->shift, .axis = p->axis, .status = mdf_method_status(c),
                        .natoms = mdf_method_natoms(c), .nsys = mdf_method_nsys(c)};
}

static int shift_pre(const mdf_method_ctx *c)
{
    shift_args a = shift_args_of(c);
    return starpu_task_insert(&shift_move_cl, STARPU_RW, mdf_method_pos(c), STARPU_R, mdf_method_atoms(c), STARPU_R,
                              mdf_method_sys(c), STARPU_VALUE, &a, sizeof a, 0);
}

static int shift_post(const mdf_method_ctx *c)
{
    shift_args a = shift_args_of(c);
    return starpu_task_insert(&shift_count_cl, STARPU_RW, mdf_method_sys(c), STARPU_RW, mdf_method_res(c), STARPU_RW,
                              mdf_method_state(c), STARPU_VALUE, &a, sizeof a, 0);
}

/* Moves along x or y only: a cross-parameter check. */
static mdf_status shift_check(const void *params, mdf_error *err)
{
    const shift_params *p = params;
    if (p->axis == 2 && p->shift != 0.0)
        return mdf_error_set(err, MDF_ERR_INVALID, "test_shift: axis 2 takes no shift (got %g)", p->shift);
    return MDF_OK;
}

static const char *const shift_aliases[] = {"test-shift", NULL};

static const mdf_method shift_method = {
    .api_version = MDFLOW_API_VERSION,
    .name = "test_shift",
    .summary = "moves every atom by a constant step (test)",
    .aliases = shift_aliases,
    .params = shift_defs,
    .params_size = sizeof(shift_params),
    .check = shift_check,
    .pre_update = shift_pre,
    .post_update = shift_post,
};

static int g_registered;

static void register_shift(void)
{
    if (g_registered) return;
    TU_CALL(mdf_register_method, &shift_method);
    g_registered = 1;
}

static void test_runtime_method(void **state)
{
    (void)state;
    size_t before = mdf_method_count();
    register_shift();
    assert_int_equal(mdf_method_count(), before + 1);
    assert_ptr_equal(mdf_method_find("test_shift"), &shift_method);
    assert_ptr_equal(mdf_method_find("test-shift"), &shift_method);
    assert_string_equal(mdf_integrator_name(before), "test_shift");
    assert_int_equal(mdf_integrator_is_optimiser("test_shift"), 0);
    assert_int_equal(mdf_integrator_changes_cell("test_shift"), 0);

    tu_start("eager", 2, 0);
    mdf_frame f[3];
    for (int i = 0; i < 3; i++) f[i] = tu_fcc_cluster(5.3, 1.0, 0.1, 70 + (uint64_t)i);
    mdf_lj_config lj = tu_argon(8.0, 1);
    mdf_model *m = NULL;
    TU_CALL(mdf_model_create_lj, &lj, &m);
    mdf_batch_config bc;
    mdf_batch_config_init(&bc);
    bc.nshards = 2;
    mdf_batch *b = NULL;
    TU_CALL(mdf_batch_create, f, 3, &bc, &b);
    enum { STEPS = 7 };
    mdf_stage_config sc;
    mdf_stage_config_init(&sc);
    sc.integrator = "test-shift";
    sc.max_steps = STEPS;
    TU_CALL(mdf_param_list_set, &sc.method_params, "shift", "0.125");
    TU_CALL(mdf_param_list_set, &sc.method_params, "axis", "1");
    mdf_stage *s = NULL;
    TU_CALL(mdf_stage_create, &sc, &s);
    mdf_stage_report rep;
    TU_CALL(mdf_stage_run, s, b, m, &rep);
    assert_int_equal(rep.steps, STEPS);
    mdf_stage_destroy(s);
    TU_CALL(mdf_batch_sync, b);
    for (size_t i = 0; i < 3; i++) {
        mdf_frame o;
        TU_CALL(mdf_batch_get_frame, b, i, &o);
        for (int64_t a = 0; a < o.natoms; a++)
            for (int d = 0; d < 3; d++) {
                double want = f[i].positions[3 * a + d];
                for (int k = 0; d == 1 && k < STEPS; k++) want += 0.125;
                if (o.positions[3 * a + d] != want)
                    fail_msg("system %zu atom %lld axis %d: %.17g, want %.17g", i, (long long)a, d,
                             o.positions[3 * a + d], want);
            }
        mdf_frame_free(&o);
        mdf_system_view v;
        TU_CALL(mdf_batch_get_system, b, i, &v);
        assert_int_equal(v.step, STEPS);
        assert_int_equal(v.stage_step, STEPS);
        assert_true(v.kinetic_energy == 0.0);
    }
    /* Its own table and check refuse what they should. */
    expect_refused("test_shift", "axis", "3", (const char *const[]){"axis of method test_shift", "[0, 2]", NULL});
    expect_refused("test_shift", "speed", "1", (const char *const[]){"method test_shift", "shift, axis", NULL});
    mdf_stage_config_init(&sc);
    sc.integrator = "test_shift";
    TU_CALL(mdf_param_list_set, &sc.method_params, "axis", "2");
    mdf_error err;
    mdf_error_clear(&err);
    assert_int_equal(mdf_stage_create(&sc, &s, &err), MDF_ERR_INVALID);
    assert_non_null(strstr(err.message, "axis 2 takes no shift"));
    mdf_batch_destroy(b);
    mdf_model_destroy(m);
    for (int i = 0; i < 3; i++) mdf_frame_free(&f[i]);
    tu_stop();
}

/* ---- registration refusals --------------------------------------------------------------- */

static void expect_registration_refused(const mdf_method *m, const char *f1, const char *f2)
{
    size_t before = mdf_method_count();
    mdf_error err;
    mdf_error_clear(&err);
    assert_int_equal(mdf_register_method(m, &err), MDF_ERR_INVALID);
    assert_int_equal(mdf_method_count(), before);
    printf("  refused: %s\n", err.message);
    if (f1 && !strstr(err.message, f1)) fail_msg("'%s' not in: %s", f1, err.message);
    if (f2 && !strstr(err.message, f2)) fail_msg("'%s' not in: %s", f2, err.message);
}

static void test_duplicates_refused(void **state)
{
    (void)state;
    register_shift();
    /* The same definition again, a built-in's name, a built-in's alias as
     * a new name, and a new name whose alias is taken. */
    expect_registration_refused(&shift_method, "the program registers a method named 'test_shift'", "the program already registered");
    mdf_method copy = shift_method;
    copy.aliases = NULL;
    copy.name = "langevin";
    expect_registration_refused(&copy, "'langevin'", "already registered");
    copy.name = "csvr";
    expect_registration_refused(&copy, "'csvr'", "already registered");
    static const char *const taken_alias[] = {"nve", NULL};
    copy.name = "test_other";
    copy.aliases = taken_alias;
    expect_registration_refused(&copy, "'nve'", "already registered");
    assert_null(mdf_method_find("test_other"));
    /* Another API version, and a table whose default is out of its range. */
    copy.aliases = NULL;
    copy.api_version = MDFLOW_API_VERSION + 1;
    expect_registration_refused(&copy, "API version", "rebuild");
    static const mdf_param_def bad_defs[] = {
        MDF_PARAM_DOUBLE(shift_params, shift, 2.0, -1.0, 1.0, 0u, "Å", "move per step"), MDF_PARAM_END};
    copy.api_version = MDFLOW_API_VERSION;
    copy.params = bad_defs;
    expect_registration_refused(&copy, "test_other", "outside its own range");
    assert_null(mdf_method_find("test_other"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_builtins_registered),
        cmocka_unit_test(test_unknown_parameter),
        cmocka_unit_test(test_out_of_range),
        cmocka_unit_test(test_runtime_method),
        cmocka_unit_test(test_duplicates_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
