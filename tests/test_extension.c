/* mdflow tests — the extension API's library side: parameter tables,
 * settings lists, the registries (built-ins present, duplicates and other
 * API versions refused), models, hooks and sinks created by name, and the
 * plugin loader's errors on files that are not plugins. Real plugins are
 * built and loaded by tests/test_plugin*. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "testutil.h"
#include "mdflow/extension.h"

typedef struct toy_params {
    double tau;
    int32_t n;
    int32_t on;
    char path[MDF_PARAM_STRING_MAX];
} toy_params;

static const mdf_param_def toy_defs[] = {
    MDF_PARAM_DOUBLE(toy_params, tau, 100.0, 0.0, INFINITY, MDF_PARAM_MIN_OPEN, "fs", "relaxation time"),
    MDF_PARAM_INT(toy_params, n, 3, 1, 5, "", "chain length"),
    MDF_PARAM_BOOL(toy_params, on, 0, "switch"),
    MDF_PARAM_STRING(toy_params, path, "a file"),
    MDF_PARAM_END};

static void expect_error(mdf_status st, const mdf_error *err, const char *const *words)
{
    assert_int_not_equal(st, MDF_OK);
    for (const char *const *w = words; *w; w++)
        if (!strstr(err->message, *w)) fail_msg("message lacks '%s': %s", *w, err->message);
}

static void test_params_set_and_check(void **state)
{
    (void)state;
    toy_params p;
    memset(&p, 0x5a, sizeof p);
    mdf_params_defaults(toy_defs, &p);
    assert_true(p.tau == 100.0 && p.n == 3 && p.on == 0 && p.path[0] == '\0');
    assert_int_equal(mdf_params_count(toy_defs), 4);
    mdf_error err;
    TU_CALL(mdf_params_set, toy_defs, &p, "method toy", "tau", "25.5");
    TU_CALL(mdf_params_set, toy_defs, &p, "method toy", "n", "5");
    TU_CALL(mdf_params_set, toy_defs, &p, "method toy", "on", "yes");
    TU_CALL(mdf_params_set, toy_defs, &p, "method toy", "path", "/tmp/x.csv");
    assert_true(p.tau == 25.5 && p.n == 5 && p.on == 1 && strcmp(p.path, "/tmp/x.csv") == 0);
    /* Out of range: the message names the parameter, its owner and range. */
    const char *const range_words[] = {"tau", "method toy", "(0, inf)", "fs", NULL};
    expect_error(mdf_params_set(toy_defs, &p, "method toy", "tau", "0", &err), &err, range_words);
    const char *const int_words[] = {"n", "[1, 5]", NULL};
    expect_error(mdf_params_set(toy_defs, &p, "method toy", "n", "6", &err), &err, int_words);
    const char *const whole_words[] = {"whole number", NULL};
    expect_error(mdf_params_set(toy_defs, &p, "method toy", "n", "2.5", &err), &err, whole_words);
    const char *const nan_words[] = {"not a number", NULL};
    expect_error(mdf_params_set(toy_defs, &p, "method toy", "tau", "12fs", &err), &err, nan_words);
    const char *const bool_words[] = {"true or false", NULL};
    expect_error(mdf_params_set(toy_defs, &p, "method toy", "on", "maybe", &err), &err, bool_words);
    /* Unknown name: the valid ones are listed. */
    const char *const unknown_words[] = {"'taus'", "tau, n, on, path", NULL};
    expect_error(mdf_params_set(toy_defs, &p, "method toy", "taus", "1", &err), &err, unknown_words);
    const char *const none_words[] = {"takes no parameters", NULL};
    expect_error(mdf_params_set(NULL, &p, "hook freeze", "x", "1", &err), &err, none_words);
    /* A failed set leaves the block as it was. */
    assert_true(p.tau == 25.5 && p.n == 5);
    p.tau = -1.0;
    expect_error(mdf_params_check(toy_defs, &p, "method toy", &err), &err, range_words);
    char text[400];
    p.tau = 2.0;
    mdf_params_format(toy_defs, &p, text, sizeof text);
    assert_string_equal(text, "tau=2 n=5 on=true path=/tmp/x.csv");
}

static void test_param_lists(void **state)
{
    (void)state;
    mdf_param_list l;
    mdf_param_list_init(&l);
    mdf_error err;
    TU_CALL(mdf_param_list_parse, &l, "tau=50");
    TU_CALL(mdf_param_list_set_double, &l, "n", 4.0);
    TU_CALL(mdf_param_list_parse, &l, "tau=75"); /* replaces */
    assert_int_equal(l.n, 2);
    assert_string_equal(mdf_param_list_get(&l, "tau"), "75");
    const char *const bad_words[] = {"NAME=VALUE", NULL};
    expect_error(mdf_param_list_parse(&l, "tau", &err), &err, bad_words);
    expect_error(mdf_param_list_parse(&l, "=3", &err), &err, bad_words);
    const char *const name_words[] = {"not valid", NULL};
    expect_error(mdf_param_list_set(&l, "ta u", "1", &err), &err, name_words);
    toy_params p;
    mdf_params_defaults(toy_defs, &p);
    TU_CALL(mdf_param_list_apply, &l, toy_defs, &p, "method toy");
    assert_true(p.tau == 75.0 && p.n == 4);
    TU_CALL(mdf_param_list_parse, &l, "bogus=1");
    const char *const unknown_words[] = {"bogus", "tau, n, on, path", NULL};
    expect_error(mdf_param_list_apply(&l, toy_defs, &p, "method toy", &err), &err, unknown_words);
}

static void test_builtins_registered(void **state)
{
    (void)state;
    assert_non_null(mdf_model_def_find("lj"));
    const char *const hooks[] = {"log", "nan_check", "force_clamp", "drift_monitor", "freeze", "wrap", "timing",
                                 "thermo"};
    for (size_t k = 0; k < sizeof hooks / sizeof hooks[0]; k++)
        if (!mdf_hook_def_find(hooks[k])) fail_msg("hook %s is not registered", hooks[k]);
    const char *const sinks[] = {"host", "device", "hdf5", "h5md"};
    for (size_t k = 0; k < sizeof sinks / sizeof sinks[0]; k++)
        if (!mdf_sink_def_find(sinks[k])) fail_msg("sink %s is not registered", sinks[k]);
    assert_null(mdf_model_def_find("no_such_model"));
    assert_int_equal(mdf_model_def_at(0), mdf_model_def_find("lj"));
}

static void fake_cpu(void *buffers[], void *cl_arg)
{
    (void)buffers;
    (void)cl_arg;
}

static mdf_status fake_setup(const void *params, const mdf_model_species *sp, mdf_model_setup *out, mdf_error *err)
{
    (void)params;
    (void)sp;
    (void)out;
    return mdf_error_set(err, MDF_ERR_UNSUPPORTED, "not a real model");
}

static void test_registration_refusals(void **state)
{
    (void)state;
    mdf_error err;
    mdf_model_def dup = {.api_version = MDFLOW_API_VERSION, .name = "lj", .setup = fake_setup, .cpu_func = fake_cpu};
    const char *const dup_words[] = {"'lj'", "already registered", "built-ins", "rename", NULL};
    expect_error(mdf_register_model(&dup, &err), &err, dup_words);
    /* Names are one namespace: a model may not take a hook's name. */
    mdf_model_def dup_hook = {.api_version = MDFLOW_API_VERSION, .name = "thermo", .setup = fake_setup,
                              .cpu_func = fake_cpu};
    expect_error(mdf_register_model(&dup_hook, &err), &err, (const char *const[]){"'thermo'", "hook", NULL});
    mdf_model_def old = {.api_version = MDFLOW_API_VERSION + 1, .name = "old_model", .setup = fake_setup,
                         .cpu_func = fake_cpu};
    const char *const version_words[] = {"API version", "rebuild", NULL};
    expect_error(mdf_register_model(&old, &err), &err, version_words);
    assert_null(mdf_model_def_find("old_model"));
    mdf_model_def bad_name = {.api_version = MDFLOW_API_VERSION, .name = "two words", .setup = fake_setup,
                              .cpu_func = fake_cpu};
    expect_error(mdf_register_model(&bad_name, &err), &err, (const char *const[]){"letters, digits", NULL});
    /* A table whose field lies outside the block is a bug caught at once. */
    static const mdf_param_def wide[] = {MDF_PARAM_DOUBLE(toy_params, tau, 1.0, 0.0, 2.0, 0u, "", ""), MDF_PARAM_END};
    mdf_model_def small = {.api_version = MDFLOW_API_VERSION, .name = "small_block", .params = wide,
                           .params_size = 4, .setup = fake_setup, .cpu_func = fake_cpu};
    expect_error(mdf_register_model(&small, &err), &err, (const char *const[]){"outside its block", NULL});
    /* A model registered at run time is found and named in lists. */
    mdf_model_def fresh = {.api_version = MDFLOW_API_VERSION, .name = "fake_model", .setup = fake_setup,
                           .cpu_func = fake_cpu};
    TU_CALL(mdf_register_model, &fresh);
    assert_ptr_equal(mdf_model_def_find("fake_model"), &fresh);
    mdf_model_config *c;
    TU_CALL(mdf_model_config_create, "fake_model", &c);
    mdf_model *m = NULL;
    expect_error(mdf_model_create(c, &m, &err), &err, (const char *const[]){"not a real model", NULL});
    assert_null(m);
    mdf_model_config_destroy(c);
    expect_error(mdf_model_config_create("nope", &c, &err), &err,
                 (const char *const[]){"unknown model 'nope'", "lj", "fake_model", NULL});
}

/* Energies, forces and virial of a model built by name equal those of the
 * typed constructor, bit for bit (same parameters, same codelet). */
static void test_named_lj_equals_typed(void **state)
{
    (void)state;
    tu_start(NULL, 2, 0);
    double cell[9] = {14, 0, 0, 0, 14, 0, 0, 0, 14};
    int pbc[3] = {1, 1, 1}, zs[] = {18};
    mdf_frame f = tu_random(60, cell, pbc, 3.0, zs, 1, 11);
    mdf_model_config *c;
    TU_CALL(mdf_model_config_create, "lj", &c);
    TU_CALL(mdf_model_config_set, c, "epsilon", "0.0104");
    TU_CALL(mdf_model_config_set, c, "sigma", "3.4");
    TU_CALL(mdf_model_config_set, c, "cutoff", "6.5");
    mdf_error err;
    expect_error(mdf_model_config_set(c, "epsilom", "1", &err), &err,
                 (const char *const[]){"epsilom", "epsilon, sigma, cutoff, shift", NULL});
    expect_error(mdf_model_config_set(c, "sigma", "-1", &err), &err, (const char *const[]){"sigma", "(0, inf)", NULL});
    mdf_model *named = NULL, *typed = NULL;
    TU_CALL(mdf_model_create, c, &named);
    mdf_model_config_destroy(c);
    mdf_lj_config lj = tu_argon(6.5, 0);
    TU_CALL(mdf_model_create_lj, &lj, &typed);
    assert_string_equal(mdf_model_name(named), "lj");
    assert_true(mdf_model_cutoff(named) == mdf_model_cutoff(typed));
    mdf_frame out[2];
    mdf_model *models[2] = {named, typed};
    for (int k = 0; k < 2; k++) {
        mdf_batch *b;
        TU_CALL(mdf_batch_create, &f, 1, NULL, &b);
        TU_CALL(mdf_compute_forces, b, models[k]);
        TU_CALL(mdf_batch_sync, b);
        TU_CALL(mdf_batch_get_frame, b, 0, &out[k]);
        mdf_batch_destroy(b);
    }
    assert_true(out[0].energy == out[1].energy);
    assert_memory_equal(out[0].forces, out[1].forces, sizeof(double) * 3 * (size_t)f.natoms);
    assert_true(out[0].energy < 0.0);
    mdf_frame_free(&out[0]);
    mdf_frame_free(&out[1]);
    mdf_frame_free(&f);
    mdf_model_destroy(named);
    mdf_model_destroy(typed);
    tu_stop();
}

static void test_hooks_and_sinks_by_name(void **state)
{
    (void)state;
    tu_start(NULL, 1, 0);
    mdf_error err;
    mdf_hook *h = NULL;
    expect_error(mdf_hook_create_named("log", NULL, &h, &err), &err, (const char *const[]){"needs parameter path", NULL});
    mdf_param_list l;
    mdf_param_list_init(&l);
    TU_CALL(mdf_param_list_set, &l, "every", "0");
    expect_error(mdf_hook_create_named("wrap", &l, &h, &err), &err, (const char *const[]){"every", "hook wrap", NULL});
    mdf_param_list_init(&l);
    TU_CALL(mdf_param_list_set, &l, "evry", "2");
    expect_error(mdf_hook_create_named("nan_check", &l, &h, &err), &err,
                 (const char *const[]){"evry", "every, quarantine", NULL});
    expect_error(mdf_hook_create_named("nan_chek", NULL, &h, &err), &err,
                 (const char *const[]){"unknown hook", "nan_check", NULL});
    mdf_param_list_init(&l);
    TU_CALL(mdf_param_list_set, &l, "every", "7");
    TU_CALL(mdf_hook_create_named, "wrap", &l, &h);
    assert_string_equal(mdf_hook_name(h), "wrap");
    assert_int_equal(mdf_hook_get_every(h), 7);
    mdf_hook_destroy(h);
    mdf_sink *s = NULL;
    mdf_param_list_init(&l);
    TU_CALL(mdf_param_list_set, &l, "max_systems", "3");
    TU_CALL(mdf_sink_create_named, "host", &l, &s);
    assert_string_equal(mdf_sink_kind(s), "host");
    assert_int_equal(mdf_sink_capacity(s), 3);
    mdf_sink_destroy(s);
    expect_error(mdf_sink_create_named("hdf5", NULL, &s, &err), &err,
                 (const char *const[]){"needs parameter path", NULL});
    tu_stop();
}

static void test_plugin_load_errors(void **state)
{
    (void)state;
    mdf_error err;
    expect_error(mdf_plugin_load("/nonexistent/dir/plugin.so", &err), &err,
                 (const char *const[]){"/nonexistent/dir/plugin.so", "no such file", NULL});
    char *dir = tu_tmpdir();
    char path[512];
    snprintf(path, sizeof path, "%s/not_a_plugin.so", dir);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs("this is text, not ELF\n", f);
    fclose(f);
    expect_error(mdf_plugin_load(path, &err), &err,
                 (const char *const[]){"not_a_plugin.so", "could not be loaded", "-shared -fPIC", NULL});
    assert_int_equal(mdf_plugin_count(), 0);
    /* MDFLOW_PLUGIN_PATH names the entry at fault. */
    setenv("MDFLOW_PLUGIN_PATH", path, 1);
    expect_error(mdf_plugin_load_env(&err), &err, (const char *const[]){"MDFLOW_PLUGIN_PATH", "not_a_plugin.so", NULL});
    unsetenv("MDFLOW_PLUGIN_PATH");
    mdf_error_clear(&err);
    assert_int_equal(mdf_plugin_load_env(&err), MDF_OK);
    assert_int_equal(tu_remove_tree(dir), 0);
    free(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_params_set_and_check),   cmocka_unit_test(test_param_lists),
        cmocka_unit_test(test_builtins_registered),    cmocka_unit_test(test_registration_refusals),
        cmocka_unit_test(test_named_lj_equals_typed),  cmocka_unit_test(test_hooks_and_sinks_by_name),
        cmocka_unit_test(test_plugin_load_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
