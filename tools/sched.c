/* mdflow sched — one workflow under several StarPU scheduling policies: a
 * table, a JSON file and a Gantt chart per policy.
 *
 * Each run is a child process (`mdflow run --quiet --sched-report FILE
 * WORKFLOW` with STARPU_SCHED set), not a starpu_shutdown/starpu_init cycle
 * in this process: StarPU reads its policy, STARPU_CALIBRATE and its
 * performance models at starpu_init, and a child starts each run from the
 * same clean state (workers, models loaded from STARPU_HOME, memory) that a
 * user's `mdflow run` has, so the times compare with theirs. Children run in
 * a temporary folder, so the workflow's relative outputs are written there
 * and removed. */
#define _POSIX_C_SOURCE 200809L
#define _XOPEN_SOURCE 700
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <starpu.h>
#include "cli.h"
#include "gantt.h"
#include "paths.h"
#include "plot.h"
#include "runner.h"
#include "sched.h"
#include "simulate_platform.h"
#include "workflow.h"

#define SCHED_POLICIES_MAX 32
#define SCHED_REPEATS_MAX 99
#define SCHED_WORKERS_MAX 64
#define SCHED_NAME_MAX 64
#define SCHED_LINE_MAX 512
#define SCHED_REPORT_MAGIC "mdflow-sched-report 1"

/* ---- the child's report ----------------------------------------------------------------- */

static void write_workers(FILE *fp)
{
    mdf_worker_stats w[SCHED_WORKERS_MAX];
    int n = mdf_runtime_worker_stats(w, SCHED_WORKERS_MAX);
    for (int k = 0; k < n && k < SCHED_WORKERS_MAX; k++)
        fprintf(fp, "worker %d %ld %.9g %.9g %.9g %s\n", k, w[k].tasks, w[k].executing_s, w[k].sleeping_s,
                w[k].total_s, w[k].name);
}

static void write_trace(FILE *fp)
{
    size_t nc = 0, nt = 0;
    const char *const *names = mdf_runtime_trace_codelets(&nc);
    const mdf_task_record *t = mdf_runtime_trace_tasks(&nt);
    for (size_t c = 0; c < nc; c++) fprintf(fp, "codelet %zu %s\n", c, names[c]);
    for (size_t i = 0; i < nt; i++)
        fprintf(fp, "task %d %d %.3f %.3f %.3f\n", t[i].worker, t[i].codelet, t[i].start_us, t[i].end_us,
                t[i].predicted_us);
}

mdf_status sched_report_write(const char *path, const mdf_stage_report *r, mdf_error *err)
{
    mdf_runtime_trace_stop();
    FILE *fp = fopen(path, "w");
    if (!fp) return mdf_error_set(err, MDF_ERR_IO, "cannot write the scheduling report %s: %s", path, strerror(errno));
    long long transfers = 0, bytes = mdf_runtime_bus_bytes(&transfers);
    fprintf(fp, "%s\nwall_s %.9g\nsteps %lld\nsystems %lld\natom_steps_per_s %.9g\nbus %lld %lld\n",
            SCHED_REPORT_MAGIC, r->wall_seconds, (long long)r->steps, (long long)r->converged,
            r->atom_steps_per_second, bytes, transfers);
    fprintf(fp, "uncalibrated %ld\n", mdf_runtime_uncalibrated_predictions());
    write_workers(fp);
    write_trace(fp);
    if (fclose(fp) != 0) return mdf_error_set(err, MDF_ERR_IO, "cannot write the scheduling report %s", path);
    return MDF_OK;
}

/* ---- what the parent reads back ----------------------------------------------------------- */

typedef struct sched_worker {
    char name[SCHED_NAME_MAX];
    long tasks;
    double busy, idle, sleeping;   /* shares of the profiled time */
} sched_worker;

/* A codelet's tasks against its model's predictions (those the policy made). */
typedef struct model_fit {
    long tasks, predicted;         /* tasks; those with a prediction */
    double measured_us;            /* their summed lengths (predicted ones) */
    double abs_error_us;           /* summed |predicted - measured| */
    double all_us;                 /* summed lengths of every task */
} model_fit;

typedef struct sched_run {
    double wall_s, atom_steps_per_s;
    long long steps, systems, bus_bytes, bus_transfers, tasks;
    int nworkers;
    sched_worker workers[SCHED_WORKERS_MAX];
    size_t ncodelets, ntasks, cap;
    char **codelets;
    gantt_task *trace;             /* seconds from the first task's start */
    model_fit *fit;                /* per codelet: how its model predicted */
    int calibrating;               /* a model was not calibrated in the run */
    long uncalibrated;             /* predictions mdflow's models could not make */
} sched_run;

static void run_free(sched_run *r)
{
    for (size_t c = 0; c < r->ncodelets; c++) free(r->codelets[c]);
    free(r->codelets);
    free(r->trace);
    free(r->fit);
    memset(r, 0, sizeof *r);
}

static mdf_status add_codelet(sched_run *r, const char *name, mdf_error *err)
{
    char **grown = realloc(r->codelets, (r->ncodelets + 1) * sizeof *grown);
    if (!grown) return mdf_error_set(err, MDF_ERR_NOMEM, "no memory for the codelet names");
    r->codelets = grown;
    model_fit *fit = realloc(r->fit, (r->ncodelets + 1) * sizeof *fit);
    if (!fit) return mdf_error_set(err, MDF_ERR_NOMEM, "no memory for the codelet names");
    r->fit = fit;
    memset(&r->fit[r->ncodelets], 0, sizeof *fit);
    if (!(r->codelets[r->ncodelets] = strdup(name)))
        return mdf_error_set(err, MDF_ERR_NOMEM, "no memory for the codelet names");
    r->ncodelets++;
    return MDF_OK;
}

static mdf_status add_task(sched_run *r, const gantt_task *t, mdf_error *err)
{
    if (r->ntasks == r->cap) {
        size_t cap = r->cap ? 2 * r->cap : 4096;
        gantt_task *grown = realloc(r->trace, cap * sizeof *grown);
        if (!grown) return mdf_error_set(err, MDF_ERR_NOMEM, "no memory for %zu traced tasks", cap);
        r->trace = grown;
        r->cap = cap;
    }
    r->trace[r->ntasks++] = *t;
    return MDF_OK;
}

static void add_worker(sched_run *r, long tasks, double exec, double asleep, double total, const char *name)
{
    if (r->nworkers == SCHED_WORKERS_MAX) return;
    sched_worker *w = &r->workers[r->nworkers++];
    snprintf(w->name, sizeof w->name, "%.*s", SCHED_NAME_MAX - 1, name);
    w->tasks = tasks;
    w->busy = total > 0 ? exec / total : 0.0;
    w->sleeping = total > 0 ? asleep / total : 0.0;
    w->idle = fmax(0.0, 1.0 - w->busy - w->sleeping);
    r->tasks += tasks;
}

/* One line of the report; 0 when it is not one the report holds. */
static int parse_line(sched_run *r, char *line, mdf_error *err, mdf_status *st)
{
    long tasks;
    int id, worker, codelet, used = 0;
    double a, b, c;
    line[strcspn(line, "\n")] = '\0';
    int nf = sscanf(line, "task %d %d %lf %lf %lf", &worker, &codelet, &a, &b, &c);
    if (nf >= 4) {
        if (codelet < 0 || (size_t)codelet >= r->ncodelets) return 0;
        *st = add_task(r, &(gantt_task){worker, codelet, a * 1e-6, b * 1e-6}, err);
        model_fit *f = &r->fit[codelet];
        f->tasks++;
        f->all_us += b - a;
        if (nf == 5 && isfinite(c)) {
            f->predicted++;
            f->measured_us += b - a;
            f->abs_error_us += fabs(c - (b - a));
        }
        return 1;
    }
    if (sscanf(line, "codelet %d %n", &id, &used) == 1 && used > 0) {
        *st = add_codelet(r, line + used, err);
        return (size_t)id + 1 == r->ncodelets;
    }
    if (sscanf(line, "worker %d %ld %lf %lf %lf %n", &id, &tasks, &a, &b, &c, &used) == 5 && used > 0) {
        add_worker(r, tasks, a, b, c, line + used);
        return 1;
    }
    return sscanf(line, "wall_s %lf", &r->wall_s) == 1 || sscanf(line, "steps %lld", &r->steps) == 1 ||
           sscanf(line, "systems %lld", &r->systems) == 1 ||
           sscanf(line, "atom_steps_per_s %lf", &r->atom_steps_per_s) == 1 ||
           sscanf(line, "uncalibrated %ld", &r->uncalibrated) == 1 ||
           sscanf(line, "bus %lld %lld", &r->bus_bytes, &r->bus_transfers) == 2;
}

/* Shifts the trace's times to start at its first task. */
static void trace_from_zero(sched_run *r)
{
    double t0 = INFINITY;
    for (size_t i = 0; i < r->ntasks; i++) t0 = fmin(t0, r->trace[i].start_s);
    for (size_t i = 0; i < r->ntasks; i++) {
        r->trace[i].start_s -= t0;
        r->trace[i].end_s -= t0;
    }
}

static mdf_status read_report(const char *path, sched_run *r, mdf_error *err)
{
    memset(r, 0, sizeof *r);
    FILE *fp = fopen(path, "r");
    if (!fp) return mdf_error_set(err, MDF_ERR_IO, "the run wrote no report %s: %s", path, strerror(errno));
    char line[SCHED_LINE_MAX];
    mdf_status st = MDF_OK;
    if (!fgets(line, sizeof line, fp) || strncmp(line, SCHED_REPORT_MAGIC, strlen(SCHED_REPORT_MAGIC)) != 0)
        st = mdf_error_set(err, MDF_ERR_IO, "%s:1: not a scheduling report", path);
    for (long ln = 2; st == MDF_OK && fgets(line, sizeof line, fp); ln++)
        if (!parse_line(r, line, err, &st) && st == MDF_OK)
            st = mdf_error_set(err, MDF_ERR_IO, "%s:%ld: unexpected line in the scheduling report", path, ln);
    fclose(fp);
    if (st == MDF_OK) trace_from_zero(r);
    return st;
}

/* ---- options ---------------------------------------------------------------------------- */

typedef struct sched_options {
    const char *workflow;
    char policies[SCHED_POLICIES_MAX][SCHED_NAME_MAX];
    int npolicies;
    int repeats;
    const char *json;
    const char *gantt;             /* file prefix; NULL: no pictures */
    double t0, t1;                 /* --window; t1 <= t0: the whole run */
    int calibrate;                 /* 0: keep every run; 1: rerun runs that calibrated;
                                    * 2: and a calibration run first */
    const char *simulate;          /* --simulate SPEC; NULL: real runs */
    sim_platform platform;
    const char *gpu_models;        /* --gpu-models DIR: the CUDA fits */
} sched_options;

/* Runs of a model-based policy thrown away because a model was not
 * calibrated in them. */
#define SCHED_CALIBRATION_RUNS 3

static void usage_sched(FILE *fp, const char *default_workflow)
{
    fprintf(fp,
            "usage: mdflow sched [FILE.yaml] [--policies A,B,...] [--repeats N] [--json FILE]\n"
            "                    [--gantt PREFIX | --no-gantt] [--window T0:T1]\n"
            "                    [--calibrate | --no-calibration]\n"
            "                    [--simulate cpus=N[,gpus=M,...] [--gpu-models DIR]]\n"
            "Runs a workflow (default: the built-in %s) under each StarPU\n"
            "scheduling policy and prints one table: wall time of the run (as mdflow run's summary\n"
            "measures it), systems/s, atom-steps/s, tasks, bytes StarPU moved between memory nodes,\n"
            "the speed-up against the baseline (lws when it is in the list, else the first policy),\n"
            "and each worker's busy / idle / sleeping share of the run. Each run is a child process\n"
            "(mdflow run with STARPU_SCHED set) in a temporary folder: the workflow's relative outputs\n"
            "are written there and removed.\n\n"
            "  --policies A,B,...  the policies, in this order (default: every one the linked StarPU\n"
            "                   offers); an unknown name is an error listing the valid ones\n"
            "  --repeats N      runs per policy (default 1, at most %d), in rounds: each policy once\n"
            "                   per round, so a machine whose speed drifts favours none; the table\n"
            "                   shows the median run (the lower middle one for an even N)\n"
            "  --json FILE      the table as JSON (default sched.json)\n"
            "  --gantt PREFIX   Gantt charts PREFIX-POLICY.svg and PREFIX-POLICY.png (default gantt):\n"
            "                   a row per worker, a box per task coloured by codelet, from StarPU's task\n"
            "                   profiling; the PNG is drawn by gnuplot (Debian: gnuplot-nox)\n"
            "  --no-gantt       no charts\n"
            "  --window T0:T1   draw only seconds T0 to T1 of each run (0 is its first task's start)\n"
            "  --calibrate      first one untimed run with STARPU_CALIBRATE=1 under the first model-based\n"
            "                   policy, even if the models are calibrated\n"
            "  --no-calibration keep every run as it is, even one that met a model not calibrated\n"
            "  --simulate SPEC  compare the policies on a machine StarPU simulates with SimGrid instead of\n"
            "                   this one: SPEC is cpus=N[,gpus=M][,gpu_gbps=25][,gpu_latency_us=10]\n"
            "                   [,gpu_mem_gib=80] (CPUs 1-64, GPUs 0-4). One real run on this machine\n"
            "                   records the task graph that N CPUs and M GPUs would run (shards, chunks\n"
            "                   and list tasks planned for them) and calibrates the CPU models; then\n"
            "                   mdflow-simulate replays it under each policy, each task as long as its\n"
            "                   codelet's model predicts on the simulated worker. Simulated CPUs run at\n"
            "                   this machine's per-core speed. A GPU runs the codelets whose CUDA model\n"
            "                   is calibrated: measured on a GPU node (mdflow sched --calibrate or any\n"
            "                   mdflow run there saves them; mdflow perfmodels prints the folder); with\n"
            "                   gpus=M and no CUDA model the command stops and says so. Needs mdflow\n"
            "                   built with a SimGrid StarPU (scripts/build-starpu-simgrid.sh, then\n"
            "                   configure --with-starpu-simgrid). The wall column is simulated time.\n"
            "  --gpu-models DIR the folder of models measured on a GPU node, for the simulated GPUs\n"
            "                   (default: this machine's models folder)\n"
            "  --help           this text\n\n"
            "Calibration: the policies named dm* or *heft* place tasks by performance models. Every\n"
            "mdflow codelet's model is fitted by mdflow on the work each task really does (atoms of the\n"
            "systems it moves), from every task of every run, and kept in STARPU_HOME (mdflow\n"
            "perfmodels prints them); a model with fewer than 10 measurements is not calibrated, and a\n"
            "plugin's StarPU history model is not calibrated while StarPU prints 'not calibrated\n"
            "enough'. A run of a model-based policy that met a model not calibrated is dropped and run\n"
            "again (at most %d times), so the table times calibrated models, and a second mdflow sched\n"
            "with the same STARPU_HOME calibrates nothing. The 'model err' column: the summed\n"
            "|predicted - measured| task lengths over the summed measured ones, for the tasks the\n"
            "policy predicted.\n"
            "STARPU_NCPU and StarPU's other variables apply to every run.\n"
            "Exit status: 0; 2 for bad usage or a bad workflow; 1 when a run or a chart fails.\n",
            default_workflow, SCHED_REPEATS_MAX, SCHED_CALIBRATION_RUNS);
}

static mdf_status parse_policies(const char *list, sched_options *o, mdf_error *err)
{
    o->npolicies = 0;
    for (const char *p = list; *p;) {
        size_t len = strcspn(p, ",");
        char name[SCHED_NAME_MAX];
        if (len == 0 || len >= sizeof name)
            return mdf_error_set(err, MDF_ERR_INVALID, "--policies '%s': write policy names separated by commas, "
                                 "e.g. --policies lws,dmda", list);
        snprintf(name, sizeof name, "%.*s", (int)len, p);
        mdf_status st = mdf_runtime_check_sched(name, "--policies", err);
        if (st != MDF_OK) return st;
        if (o->npolicies == SCHED_POLICIES_MAX)
            return mdf_error_set(err, MDF_ERR_INVALID, "--policies: at most %d policies", SCHED_POLICIES_MAX);
        snprintf(o->policies[o->npolicies++], SCHED_NAME_MAX, "%s", name);
        p += len + (p[len] == ',');
    }
    if (o->npolicies == 0) return mdf_error_set(err, MDF_ERR_INVALID, "--policies needs at least one name");
    return MDF_OK;
}

static void all_policies(sched_options *o)
{
    struct starpu_sched_policy **p = starpu_sched_get_predefined_policies();
    for (int k = 0; p && p[k] && o->npolicies < SCHED_POLICIES_MAX; k++)
        snprintf(o->policies[o->npolicies++], SCHED_NAME_MAX, "%s", p[k]->policy_name);
}

static mdf_status parse_window(const char *text, sched_options *o, mdf_error *err)
{
    char tail;
    if (sscanf(text, "%lf:%lf%c", &o->t0, &o->t1, &tail) != 2 || !(o->t0 >= 0.0) || !(o->t1 > o->t0))
        return mdf_error_set(err, MDF_ERR_INVALID, "--window '%s': write T0:T1 in seconds with 0 <= T0 < T1, "
                             "e.g. --window 0.5:0.7", text);
    return MDF_OK;
}

static mdf_status parse_sched_options(int argc, char **argv, sched_options *o, mdf_error *err)
{
    memset(o, 0, sizeof *o);
    o->repeats = 1;
    o->json = "sched.json";
    o->gantt = "gantt";
    o->calibrate = 1;
    mdf_status st = MDF_OK;
    for (int k = 1; k < argc && st == MDF_OK; k++) {
        const char *a = argv[k], *v = k + 1 < argc ? argv[k + 1] : NULL;
        int takes = !strcmp(a, "--policies") || !strcmp(a, "--repeats") || !strcmp(a, "--json") ||
                    !strcmp(a, "--gantt") || !strcmp(a, "--window") || !strcmp(a, "--simulate") ||
                    !strcmp(a, "--gpu-models");
        if (takes && !v) return mdf_error_set(err, MDF_ERR_INVALID, "%s needs a value (see mdflow sched --help)", a);
        int64_t n = 0;
        if (!strcmp(a, "--policies")) st = parse_policies(argv[++k], o, err);
        else if (!strcmp(a, "--repeats")) {
            st = cli_int64_range("--repeats", argv[++k], 1, SCHED_REPEATS_MAX, "a count from 1 to 99", &n, err);
            o->repeats = (int)n;
        } else if (!strcmp(a, "--json")) o->json = argv[++k];
        else if (!strcmp(a, "--gantt")) o->gantt = argv[++k];
        else if (!strcmp(a, "--no-gantt")) o->gantt = NULL;
        else if (!strcmp(a, "--window")) st = parse_window(argv[++k], o, err);
        else if (!strcmp(a, "--no-calibration")) o->calibrate = 0;
        else if (!strcmp(a, "--calibrate")) o->calibrate = 2;
        else if (!strcmp(a, "--simulate")) st = sim_platform_parse(o->simulate = argv[++k], &o->platform, err);
        else if (!strcmp(a, "--gpu-models")) o->gpu_models = argv[++k];
        else if (a[0] == '-' || o->workflow)
            return mdf_error_set(err, MDF_ERR_INVALID, "unexpected argument '%s' (see mdflow sched --help)", a);
        else o->workflow = a;
    }
    if (st == MDF_OK && o->npolicies == 0) all_policies(o);
    if (st == MDF_OK && o->gpu_models && !o->simulate)
        st = mdf_error_set(err, MDF_ERR_INVALID, "--gpu-models gives the simulated GPUs' models: use it with --simulate");
    return st;
}

/* ---- the runs ------------------------------------------------------------------------------- */

/* dm, dmda, dmdar, dmdas, dmdasd and the HEFT family place tasks by their
 * performance models; the others do not read them. */
static int policy_uses_models(const char *name) { return !strncmp(name, "dm", 2) || strstr(name, "heft") != NULL; }

typedef struct sched_env {
    char self[PATH_MAX];       /* this program */
    char workflow[PATH_MAX];   /* absolute: the children run elsewhere */
    char dir[1024];            /* the children's working folder */
    /* --simulate: */
    const sim_platform *platform;
    char simulator[PATH_MAX];  /* mdflow-simulate */
    char record[1100];         /* the recorded task graph */
    char sim_home[1100];       /* STARPU_HOME of the simulated machine */
    char models[1100];         /* the models the simulation reads */
    double recorded_wall_s;    /* the recording run, on this machine */
    long long recorded_steps, recorded_systems;
    double recorded_atom_steps;
    int cuda_models;           /* codelets the simulated GPUs can run */
} sched_env;

/* What a child does: run the workflow, run it recording its task graph
 * for the simulated machine, or replay that graph on it. */
enum child_kind { CHILD_RUN, CHILD_RECORD, CHILD_SIMULATE };

static mdf_status locate(const char *workflow, sched_env *e, mdf_error *err)
{
    ssize_t len = readlink("/proc/self/exe", e->self, sizeof e->self - 1);
    if (len <= 0) return mdf_error_set(err, MDF_ERR_IO, "cannot find this program (/proc/self/exe): %s", strerror(errno));
    e->self[len] = '\0';
    if (!realpath(workflow, e->workflow))
        return mdf_error_set(err, MDF_ERR_INVALID, "cannot read the workflow %s: %s", workflow, strerror(errno));
    return plot_make_tempdir(e->dir, sizeof e->dir, "mdflow-sched", err);
}

/* mkdir -p of the folders of the workflow's relative outputs in the
 * children's folder (paths_check_writable wants them to exist). */
static void make_output_folders(const sched_env *e, const mdf_workflow *wf)
{
    const char *outputs[] = {wf->structures, wf->log, wf->snapshots, wf->converged, wf->checkpoint};
    for (size_t k = 0; k < sizeof outputs / sizeof outputs[0]; k++) {
        if (!*outputs[k] || outputs[k][0] == '/') continue;
        char path[PATH_MAX + 1100];
        snprintf(path, sizeof path, "%s/%s", e->dir, outputs[k]);
        for (char *p = path + strlen(e->dir) + 1; (p = strchr(p, '/')); p++) {
            *p = '\0';
            mkdir(path, 0777);
            *p = '/';
        }
    }
}

static int remove_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb, (void)flag, (void)ftw;
    return remove(path);
}

/* The last non-empty line of a child's log, for the error message. */
static void last_line(const char *path, char *out, size_t size)
{
    FILE *fp = fopen(path, "r");
    char line[SCHED_LINE_MAX];
    snprintf(out, size, "no message");
    while (fp && fgets(line, sizeof line, fp)) {
        line[strcspn(line, "\n")] = '\0';
        if (*line) snprintf(out, size, "%s", line);
    }
    if (fp) fclose(fp);
}

/* 1 when the log holds `text` (StarPU's warnings go there). */
static int log_mentions(const char *path, const char *text)
{
    FILE *fp = fopen(path, "r");
    if (!fp) return 0;
    char line[SCHED_LINE_MAX];
    int found = 0;
    while (!found && fgets(line, sizeof line, fp)) found = strstr(line, text) != NULL;
    fclose(fp);
    return found;
}

static void set_count(const char *name, int n)
{
    char text[16];
    snprintf(text, sizeof text, "%d", n);
    setenv(name, text, 1);
}

/* In the child: its folder, environment and output, then `mdflow run`
 * (or mdflow-simulate). */
static void exec_child(const sched_env *e, enum child_kind kind, const char *policy, int calibrate, const char *report,
                       const char *log)
{
    int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0666);
    if (fd < 0 || chdir(e->dir) != 0) _exit(126);
    dup2(fd, 1);
    dup2(fd, 2);
    setenv("STARPU_SCHED", policy, 1);
    setenv("STARPU_CALIBRATE", calibrate ? "1" : "0", 1);
    /* StarPU's "not calibrated enough" warnings tell the parent that the
     * run calibrated; the log is the parent's alone. */
    unsetenv("STARPU_SILENT");
    if (kind == CHILD_RECORD) {
        setenv("MDF_TASK_RECORD", e->record, 1);
        set_count("MDF_PLAN_CPUS", e->platform->cpus);
        set_count("MDF_PLAN_CUDA", e->platform->gpus);
    }
    if (kind == CHILD_SIMULATE) {
        setenv("STARPU_HOME", e->sim_home, 1);
        setenv("STARPU_HOSTNAME", SIM_HOST, 1);
        setenv("MDF_PERFMODELS_DIR", e->models, 1);
        /* The record's host times include the submissions' real cost. */
        setenv("STARPU_SIMGRID_TASK_SUBMIT_COST", "0", 1);
        /* Not the policies' own time: StarPU can charge their push and pop as
         * measured here (STARPU_SIMGRID_SCHED_COST=1), but 16 simulated
         * workers polling on 2 real cores stretched lws from 1.1 s to 25.8 s. */
        setenv("STARPU_SIMGRID_SCHED_COST", "0", 1);
        set_count("STARPU_NCPU", e->platform->cpus);
        set_count("STARPU_NCUDA", e->platform->gpus);
        unsetenv("STARPU_NCPUS");
        unsetenv("STARPU_WORKERS_CPUID");
        unsetenv("STARPU_LIMIT_CUDA_MEM"); /* gpu_mem_gib sizes the simulated GPUs */
        execl(e->simulator, "mdflow-simulate", e->record, report, (char *)NULL);
    } else {
        execl(e->self, "mdflow", "run", "--quiet", "--sched-report", report, e->workflow, (char *)NULL);
    }
    _exit(127);
}

/* One run of the workflow under policy; fills r from its report. */
static mdf_status run_once(const sched_env *e, enum child_kind kind, const char *policy, int calibrate, sched_run *r,
                           mdf_error *err)
{
    char report[1100], log[1100], why[SCHED_LINE_MAX];
    snprintf(report, sizeof report, "%s/report.txt", e->dir);
    snprintf(log, sizeof log, "%s/run.log", e->dir);
    memset(r, 0, sizeof *r);
    remove(report);
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) return mdf_error_set(err, MDF_ERR_IO, "cannot start a run: %s", strerror(errno));
    if (pid == 0) exec_child(e, kind, policy, calibrate, report, log);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        last_line(log, why, sizeof why);
        return mdf_error_set(err, MDF_ERR_STARPU, "the %s under policy %s failed (%s %d): %s",
                             kind == CHILD_SIMULATE ? "simulation" : kind == CHILD_RECORD ? "recording run" : "run",
                             policy,
                             WIFEXITED(status) ? "exit status" : "signal",
                             WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status), why);
    }
    mdf_status st = read_report(report, r, err);
    /* mdflow's models say so in the report; a plugin's StarPU model in the log. */
    if (st == MDF_OK && kind != CHILD_SIMULATE)
        r->calibrating = r->uncalibrated > 0 || log_mentions(log, "not calibrated enough");
    return st;
}

typedef struct sched_result {
    const char *policy;
    int uses_models;
    int calibration_runs;          /* runs dropped because a model was not calibrated */
    int calibrating;               /* a kept run still calibrated */
    double walls[SCHED_REPEATS_MAX];
    sched_run median;              /* the median run's report */
    double speedup;                /* baseline wall / this wall */
    char svg[PATH_MAX], png[PATH_MAX];
} sched_result;

/* The index of the median of n values: the (n - 1) / 2-th smallest (the
 * lower middle one for an even n), the first of equal values. */
static int median_index(const double *v, int n)
{
    for (int k = 0; k < n; k++) {
        int rank = 0;
        for (int j = 0; j < n; j++) rank += v[j] < v[k] || (v[j] == v[k] && j < k);
        if (rank == (n - 1) / 2) return k;
    }
    return 0;
}

static double rate(double count, double wall) { return wall > 0.0 ? count / wall : 0.0; }

/* Run k of policy res->policy (of o->repeats), into *run. */
static mdf_status run_policy_once(const sched_env *e, const sched_options *o, sched_result *res, int k,
                                  sched_run *run, mdf_error *err)
{
    enum child_kind kind = e->platform ? CHILD_SIMULATE : CHILD_RUN;
    fprintf(stderr, "mdflow sched: %s, run %d of %d\n", res->policy, k + 1, o->repeats);
    mdf_status st = run_once(e, kind, res->policy, 0, run, err);
    /* The simulation's counts are the recorded run's (same graph). */
    if (st == MDF_OK && e->platform) {
        run->steps = e->recorded_steps;
        run->systems = e->recorded_systems;
        run->atom_steps_per_s = rate(e->recorded_atom_steps, run->wall_s);
    }
    /* A run in which a model was not calibrated placed those tasks by
     * queue lengths (and StarPU, for its own models, measured every
     * task): not a timing of the policy. The models are saved at its
     * end, so the next run has them. */
    while (st == MDF_OK && o->calibrate && res->uses_models && run->calibrating &&
           res->calibration_runs < SCHED_CALIBRATION_RUNS) {
        res->calibration_runs++;
        fprintf(stderr, "mdflow sched: %s: performance models were calibrated during this run (STARPU_HOME "
                "%s); its timing is dropped and it runs again\n", res->policy,
                getenv("STARPU_HOME") ? getenv("STARPU_HOME") : "~/.starpu");
        run_free(run);
        st = run_once(e, kind, res->policy, 0, run, err);
    }
    if (st == MDF_OK && run->calibrating) res->calibrating = 1;
    if (st == MDF_OK) res->walls[k] = run->wall_s;
    return st;
}

/* Runs every policy o->repeats times, in rounds (each policy once per
 * round, in the order given), and keeps each one's median run (by wall
 * time). Rounds rather than one policy's runs after another's: on a
 * machine whose speed drifts over minutes (a shared virtual machine), a
 * block of runs would hand its slow or fast minutes to one policy alone. */
static mdf_status run_policies(const sched_env *e, const sched_options *o, sched_result *res, mdf_error *err)
{
    const size_t n = (size_t)o->npolicies * (size_t)o->repeats;
    sched_run *runs = calloc(n, sizeof *runs);
    if (!runs) return mdf_error_set(err, MDF_ERR_NOMEM, "no memory for %zu runs", n);
    mdf_status st = MDF_OK;
    for (int k = 0; k < o->repeats && st == MDF_OK; k++)
        for (int p = 0; p < o->npolicies && st == MDF_OK; p++)
            st = run_policy_once(e, o, &res[p], k, &runs[(size_t)p * (size_t)o->repeats + (size_t)k], err);
    for (int p = 0; p < o->npolicies; p++) {
        sched_run *mine = runs + (size_t)p * (size_t)o->repeats;
        int median = st == MDF_OK ? median_index(res[p].walls, o->repeats) : -1;
        for (int k = 0; k < o->repeats; k++) {
            if (k == median) res[p].median = mine[k];
            else run_free(&mine[k]);
        }
    }
    free(runs);
    return st;
}

/* ---- output ------------------------------------------------------------------------------- */

static void put_json_string(FILE *fp, const char *s)
{
    fputc('"', fp);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\') fprintf(fp, "\\%c", *p);
        else if (*p < 0x20) fprintf(fp, "\\u%04x", *p);
        else fputc(*p, fp);
    }
    fputc('"', fp);
}

/* The models' error over a run's predicted tasks: summed |predicted -
 * measured| over summed measured lengths (NaN when none was predicted). */
static double model_error(const sched_run *r, long *predicted)
{
    double abs_err = 0.0, measured = 0.0;
    long n = 0;
    for (size_t c = 0; c < r->ncodelets; c++) {
        abs_err += r->fit[c].abs_error_us;
        measured += r->fit[c].measured_us;
        n += r->fit[c].predicted;
    }
    if (predicted) *predicted = n;
    return n > 0 && measured > 0.0 ? abs_err / measured : NAN;
}

static void print_table(const sched_result *res, int n, const char *baseline)
{
    printf("\n%-12s %9s %10s %13s %9s %12s %9s %10s  %s\n", "policy", "wall (s)", "systems/s", "atom-steps/s",
           "tasks", "bytes moved", "speed-up", "model err", "busy/idle/sleeping % per worker");
    for (int k = 0; k < n; k++) {
        const sched_run *r = &res[k].median;
        double merr = model_error(r, NULL);
        char errtext[32];
        if (isnan(merr)) snprintf(errtext, sizeof errtext, "-");
        else snprintf(errtext, sizeof errtext, "%.0f%%%s", 100 * merr, res[k].calibrating ? "*" : "");
        printf("%-12s %9.3f %10.4g %13.4g %9lld %12lld %8.2fx %10s ", res[k].policy, r->wall_s,
               rate((double)r->systems, r->wall_s), r->atom_steps_per_s, r->tasks, r->bus_bytes, res[k].speedup,
               errtext);
        for (int w = 0; w < r->nworkers; w++)
            printf(" %s %.0f/%.0f/%.0f%s", r->workers[w].name, 100 * r->workers[w].busy, 100 * r->workers[w].idle,
                   100 * r->workers[w].sleeping, w + 1 < r->nworkers ? "," : "");
        putchar('\n');
    }
    printf("speed-up: %s's wall time / the policy's (above 1: faster than %s)\n", baseline, baseline);
    printf("model err: summed |predicted - measured| task lengths / summed measured, over the tasks the policy\n"
           "predicted (-: a policy without models)");
    int any_calibrating = 0;
    for (int k = 0; k < n; k++) any_calibrating |= res[k].calibrating;
    printf("%s\n", any_calibrating ? "; *: models were still calibrating in that run (timing not of calibrated "
                                     "models)" : "");
}

static void json_models(FILE *fp, const sched_result *res)
{
    const sched_run *r = &res->median;
    long predicted = 0;
    double merr = model_error(r, &predicted);
    fprintf(fp, ",\n      \"calibrating\": %s, \"calibration_runs_dropped\": %d, \"predicted_tasks\": %ld, "
                "\"model_error\": ", res->calibrating ? "true" : "false", res->calibration_runs, predicted);
    if (isnan(merr)) fputs("null", fp);
    else fprintf(fp, "%.6g", merr);
    fputs(",\n      \"codelets\": [", fp);
    for (size_t c = 0; c < r->ncodelets; c++) {
        const model_fit *f = &r->fit[c];
        fputs(c ? ",\n        {\"name\": " : "\n        {\"name\": ", fp);
        put_json_string(fp, r->codelets[c]);
        fprintf(fp, ", \"tasks\": %ld, \"mean_us\": %.6g, \"predicted_tasks\": %ld, \"model_error\": ", f->tasks,
                f->tasks ? f->all_us / (double)f->tasks : 0.0, f->predicted);
        if (f->predicted && f->measured_us > 0.0) fprintf(fp, "%.6g}", f->abs_error_us / f->measured_us);
        else fputs("null}", fp);
    }
    fputs("]", fp);
}

static void json_workers(FILE *fp, const sched_run *r)
{
    fputs("      \"workers\": [", fp);
    for (int w = 0; w < r->nworkers; w++) {
        fputs(w ? ",\n        {\"name\": " : "\n        {\"name\": ", fp);
        put_json_string(fp, r->workers[w].name);
        fprintf(fp, ", \"tasks\": %ld, \"busy\": %.6g, \"idle\": %.6g, \"sleeping\": %.6g}", r->workers[w].tasks,
                r->workers[w].busy, r->workers[w].idle, r->workers[w].sleeping);
    }
    fputs("]", fp);
}

static void json_policy(FILE *fp, const sched_result *res, int repeats)
{
    const sched_run *r = &res->median;
    fputs("    {\"policy\": ", fp);
    put_json_string(fp, res->policy);
    fprintf(fp, ", \"uses_models\": %s, \"wall_s\": %.6g, \"wall_s_runs\": [", res->uses_models ? "true" : "false",
            r->wall_s);
    for (int k = 0; k < repeats; k++) fprintf(fp, "%s%.6g", k ? ", " : "", res->walls[k]);
    fprintf(fp, "],\n      \"systems\": %lld, \"systems_per_s\": %.6g, \"atom_steps_per_s\": %.6g, \"steps\": %lld,"
                " \"tasks\": %lld, \"traced_tasks\": %zu,\n      \"bytes_transferred\": %lld, \"transfers\": %lld, "
                "\"speedup\": %.6g,\n",
            r->systems, rate((double)r->systems, r->wall_s), r->atom_steps_per_s, r->steps, r->tasks, r->ntasks,
            r->bus_bytes, r->bus_transfers, res->speedup);
    json_workers(fp, r);
    json_models(fp, res);
    if (*res->svg) {
        fputs(",\n      \"gantt_svg\": ", fp);
        put_json_string(fp, res->svg);
        fputs(", \"gantt_png\": ", fp);
        put_json_string(fp, res->png);
    }
    fputs("}", fp);
}

static mdf_status write_json(const sched_options *o, const sched_env *e, const sched_result *res, int n,
                             const char *baseline, const char *calibration, mdf_error *err)
{
    FILE *fp = fopen(o->json, "w");
    if (!fp) return mdf_error_set(err, MDF_ERR_IO, "cannot write %s: %s", o->json, strerror(errno));
    fputs("{\n  \"workflow\": ", fp);
    put_json_string(fp, e->workflow);
    fputs(",\n  \"baseline\": ", fp);
    put_json_string(fp, baseline);
    fputs(",\n  \"calibration_policy\": ", fp);
    if (calibration) put_json_string(fp, calibration);
    else fputs("null", fp);
    if (o->simulate)
        fprintf(fp, ",\n  \"simulated\": {\"cpus\": %d, \"gpus\": %d, \"gpu_gbps\": %g, \"gpu_latency_us\": %g, "
                    "\"gpu_mem_gib\": %g, \"recorded_wall_s\": %.6g, \"cuda_models\": %d}",
                o->platform.cpus, o->platform.gpus, o->platform.gpu_gbps, o->platform.gpu_latency_us,
                o->platform.gpu_mem_gib, e->recorded_wall_s, e->cuda_models);
    fprintf(fp, ",\n  \"repeats\": %d,\n  \"policies\": [\n", o->repeats);
    for (int k = 0; k < n; k++) {
        json_policy(fp, &res[k], o->repeats);
        fputs(k + 1 < n ? ",\n" : "\n", fp);
    }
    fputs("  ]\n}\n", fp);
    if (fclose(fp) != 0) return mdf_error_set(err, MDF_ERR_IO, "cannot write %s", o->json);
    return MDF_OK;
}

static mdf_status draw_gantt(const sched_options *o, sched_result *res, mdf_error *err)
{
    const sched_run *r = &res->median;
    const char *workers[SCHED_WORKERS_MAX];
    for (int w = 0; w < r->nworkers; w++) workers[w] = r->workers[w].name;
    char title[256], window[96] = "";
    if (o->t1 > o->t0) snprintf(window, sizeof window, "; drawn: %g s to %g s", o->t0, o->t1);
    snprintf(title, sizeof title, "%s: %zu tasks, run %.3f s%s", res->policy, r->ntasks, r->wall_s, window);
    gantt_chart g = {title, r->nworkers, workers, r->ncodelets, (const char *const *)r->codelets, r->ntasks,
                     r->trace, o->t0, o->t1};
    snprintf(res->svg, sizeof res->svg, "%s-%s.svg", o->gantt, res->policy);
    snprintf(res->png, sizeof res->png, "%s-%s.png", o->gantt, res->policy);
    mdf_status st = gantt_write_svg(res->svg, &g, err);
    return st == MDF_OK ? gantt_write_png(res->png, &g, err) : st;
}

/* ---- the command ---------------------------------------------------------------------------- */

static int sched_fail(const mdf_error *err)
{
    fprintf(stderr, "mdflow: %s: %s\n", mdf_status_name(err->code), err->message);
    return err->code == MDF_ERR_INVALID || err->code == MDF_ERR_PARSE ? 2 : 1;
}

static int baseline_index(const sched_options *o)
{
    for (int k = 0; k < o->npolicies; k++)
        if (!strcmp(o->policies[k], "lws")) return k;
    return 0;
}

static const char *calibration_policy(const sched_options *o)
{
    for (int k = 0; o->calibrate == 2 && k < o->npolicies; k++)
        if (policy_uses_models(o->policies[k])) return o->policies[k];
    return NULL;
}

static mdf_status check_outputs(const sched_options *o, mdf_error *err)
{
    char svg[PATH_MAX];
    snprintf(svg, sizeof svg, "%s-%s.svg", o->gantt ? o->gantt : "", o->policies[0]);
    path_role roles[] = {{"--json", o->json, 1, 0}, {"--gantt", o->gantt ? svg : NULL, 1, 0}};
    return paths_check_writable(NULL, roles, 2, err);
}

/* --simulate: the simulated machine's files, the recording run, and the
 * models the simulation reads (this machine's CPU fits, the GPU node's
 * CUDA fits). */
static mdf_status prepare_simulation(const sched_options *o, sched_env *e, mdf_error *err)
{
    if (sim_find_simulator(e->self, e->simulator, sizeof e->simulator) != 0)
        return mdf_error_set(err, MDF_ERR_INVALID, "--simulate needs mdflow-simulate, which is not beside %s: mdflow "
                             "was built without a StarPU with SimGrid. Build one with "
                             "scripts/build-starpu-simgrid.sh, then configure mdflow with --with-starpu-simgrid "
                             "(default /opt/starpu-1.4-simgrid) and make", e->self);
    e->platform = &o->platform;
    snprintf(e->record, sizeof e->record, "%s/tasks.rec", e->dir);
    snprintf(e->sim_home, sizeof e->sim_home, "%s/simulated-machine", e->dir);
    snprintf(e->models, sizeof e->models, "%s/models", e->dir);
    char local[900], what[200];
    if (mdf_runtime_perfmodels_dir(local, sizeof local) != 0)
        return mdf_error_set(err, MDF_ERR_INVALID, "--simulate reads the performance models from STARPU_HOME or HOME: "
                             "set one");
    if (o->gpu_models && access(o->gpu_models, R_OK | X_OK) != 0)
        return mdf_error_set(err, MDF_ERR_INVALID, "--gpu-models %s: cannot read the folder (%s): give the folder "
                             "that mdflow perfmodels prints on the GPU node, copied here", o->gpu_models,
                             strerror(errno));
    /* No CUDA model, no GPU simulation: said before the recording run. */
    const char *gpu = o->gpu_models ? o->gpu_models : local;
    mdf_status st = MDF_OK;
    if (mdf_runtime_merge_perfmodels(local, gpu, e->models, &e->cuda_models) != 0)
        st = mdf_error_set(err, MDF_ERR_IO, "cannot write the simulation's models in %s", e->models);
    if (st == MDF_OK && o->platform.gpus > 0 && e->cuda_models == 0)
        st = mdf_error_set(err, MDF_ERR_INVALID, "--simulate %s: no codelet has a calibrated CUDA performance model in "
                           "%s, so the simulated GPUs' task lengths would be guesses. Run mdflow sched --calibrate "
                           "(or any mdflow run) on a GPU node, copy the models folder that mdflow perfmodels prints "
                           "there to this machine and pass it with --gpu-models DIR; or simulate CPUs only (gpus=0)",
                           o->simulate, gpu);
    if (st == MDF_OK) st = sim_platform_write(&o->platform, e->sim_home, err);
    sim_platform_describe(&o->platform, what, sizeof what);
    if (st == MDF_OK)
        fprintf(stderr, "mdflow sched: recording the task graph for %s with one run on this machine (lws), "
                "untimed\n", what);
    sched_run r;
    if (st == MDF_OK && (st = run_once(e, CHILD_RECORD, "lws", 0, &r, err)) == MDF_OK) {
        e->recorded_wall_s = r.wall_s;
        e->recorded_steps = r.steps;
        e->recorded_systems = r.systems;
        e->recorded_atom_steps = r.atom_steps_per_s * r.wall_s;
        run_free(&r);
    }
    /* Again: the recording run measured this machine's CPUs. */
    if (st == MDF_OK && mdf_runtime_merge_perfmodels(local, gpu, e->models, &e->cuda_models) != 0)
        st = mdf_error_set(err, MDF_ERR_IO, "cannot write the simulation's models in %s", e->models);
    return st;
}

/* Calibration, then every policy, the table, the JSON and the charts. */
static mdf_status sched_all(const sched_options *o, sched_env *e, sched_result *res, mdf_error *err)
{
    /* A simulation's recording run measures every task: it is the calibration. */
    const char *calibration = o->simulate ? NULL : calibration_policy(o);
    mdf_status st = o->simulate ? prepare_simulation(o, e, err) : MDF_OK;
    if (calibration) {
        sched_run r;
        fprintf(stderr, "mdflow sched: calibrating the performance models under %s (STARPU_CALIBRATE=1, "
                "STARPU_HOME %s), untimed\n", calibration, getenv("STARPU_HOME") ? getenv("STARPU_HOME") : "~/.starpu");
        st = run_once(e, CHILD_RUN, calibration, 1, &r, err);
        if (st == MDF_OK) run_free(&r);
    }
    for (int k = 0; k < o->npolicies; k++) {
        res[k].policy = o->policies[k];
        res[k].uses_models = policy_uses_models(o->policies[k]);
    }
    if (st == MDF_OK) st = run_policies(e, o, res, err);
    if (st != MDF_OK) return st;
    int b = baseline_index(o);
    for (int k = 0; k < o->npolicies; k++)
        res[k].speedup = res[k].median.wall_s > 0 ? res[b].median.wall_s / res[k].median.wall_s : 0.0;
    for (int k = 0; o->gantt && st == MDF_OK && k < o->npolicies; k++) st = draw_gantt(o, &res[k], err);
    if (st != MDF_OK) return st;
    if (o->simulate) {
        char what[200];
        sim_platform_describe(&o->platform, what, sizeof what);
        printf("\nsimulated machine: %s; the wall column is simulated time (StarPU with SimGrid). The task graph "
               "was recorded by one run on this machine (%.3f s under lws); simulated CPUs run at this machine's "
               "per-core speed; %d codelet%s can run on the simulated GPUs (calibrated CUDA models).\n", what,
               e->recorded_wall_s, e->cuda_models, e->cuda_models == 1 ? "" : "s");
    }
    print_table(res, o->npolicies, o->policies[b]);
    st = write_json(o, e, res, o->npolicies, o->policies[b], calibration, err);
    if (st == MDF_OK) printf("table: %s%s%s\n", o->json, o->gantt ? "; Gantt charts: " : "", o->gantt ? o->gantt : "");
    if (st == MDF_OK && o->gantt) printf("  %s-POLICY.svg and .png, one per policy\n", o->gantt);
    return st;
}

int sched_command(int argc, char **argv, const char *default_workflow)
{
    for (int k = 1; k < argc; k++)
        if (!strcmp(argv[k], "--help") || !strcmp(argv[k], "-h")) {
            usage_sched(stdout, default_workflow);
            return 0;
        }
    mdf_error err;
    mdf_error_clear(&err);
    sched_options o;
    mdf_status st = parse_sched_options(argc, argv, &o, &err);
    if (st == MDF_OK && !o.workflow && !(o.workflow = runner_find_data(default_workflow)))
        st = mdf_error_set(&err, MDF_ERR_IO, "the default workflow %s was not found: install mdflow (make install) "
                           "or pass a workflow file", default_workflow);
    static mdf_workflow wf; /* large (paths): not on the stack */
    if (st == MDF_OK) st = wf_load(o.workflow, &wf, &err);
    /* Its children trace one fused stage (mdflow run --sched-report): a pipeline's
     * stages each have their own policy (placement: {STAGE: {sched: NAME}}). */
    if (st == MDF_OK && wf.npipe > 1)
        st = mdf_error_set(&err, MDF_ERR_INVALID, "%s:%d: mdflow sched compares policies on fused compositions: write "
                           "the composition with '+', or give each pipeline stage its policy with placement: "
                           "{STAGE: {sched: NAME}} and compare the runs' --pipe-report", o.workflow, wf.comp_line);
    if (st == MDF_OK) st = check_outputs(&o, &err);
    if (st == MDF_OK && o.gantt && !plot_have_gnuplot())
        st = mdf_error_set(&err, MDF_ERR_IO, "gnuplot is not installed (not on PATH), so the PNG charts cannot be "
                           "drawn: install it (Debian: apt-get install gnuplot-nox; scripts/install-deps.sh does) "
                           "or pass --no-gantt");
    sched_env e;
    memset(&e, 0, sizeof e);
    if (st == MDF_OK) st = locate(o.workflow, &e, &err);
    if (st != MDF_OK) return sched_fail(&err);
    make_output_folders(&e, &wf);
    printf("mdflow sched: workflow %s, %d polic%s, %d run%s each\n", e.workflow, o.npolicies,
           o.npolicies == 1 ? "y" : "ies", o.repeats, o.repeats == 1 ? "" : "s");
    fflush(stdout);
    static sched_result res[SCHED_POLICIES_MAX];
    st = sched_all(&o, &e, res, &err);
    for (int k = 0; k < o.npolicies; k++) run_free(&res[k].median);
    nftw(e.dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
    return st == MDF_OK ? 0 : sched_fail(&err);
}
