/* mdflow — the codelets' performance models, fitted by mdflow.
 *
 * Why not StarPU's own model types: a history model (a mean per size class)
 * makes StarPU force calibration for a whole run whenever a task falls in a
 * class with fewer than 10 measurements, and inflight batching keeps making
 * new classes; it also drops any sample more than 50% off a class's mean,
 * so a task whose cost varies learns only its common case. StarPU's
 * regression (a * size^b, fitted in log space) fits these tasks badly and is
 * valid only once sizes span 10%, which a fixed-size run never does.
 *
 * So each codelet's model is a STARPU_PER_ARCH model whose cost function
 * predicts from measurements mdflow keeps per (codelet, CPU or CUDA):
 * - the mean length per size class of the task's work (~25% wide classes
 *   of the args' `work`, the work the task will really do), once the class
 *   holds MDF_FIT_CLASS_MIN measurements;
 * - else a least-squares line length = a + b * work over every measurement
 *   (the mean when the works do not differ), once MDF_FIT_MIN are in;
 * - else NaN: not calibrated (the dmda family then places the task on the
 *   worker with the fewest tasks; mdf_perfmodels_uncalibrated counts them).
 * Every task is measured (StarPU's task profiling, in the task's callback)
 * in every run, whatever the policy, and the fits are saved at shutdown in
 * STARPU_HOME (mdf_perfmodels_dir) and read back at the first prediction. */
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "mdf_codelet.h"

#define MDF_FIT_CLASSES 96      /* classes of 1.25x: works up to 1.25^95 ~ 2e9 */
#define MDF_FIT_CLASS_MIN 3
#define MDF_FIT_MIN 10
#define MDF_FIT_KEEP 100000.0   /* past this many, old measurements weigh half */
#define MDF_FIT_MODELS 128
#define MDF_FIT_MAGIC "mdflow-perfmodel 1"

typedef struct fit {
    double n, sw, sww, st, swt;           /* sums for the line */
    double class_n[MDF_FIT_CLASSES], class_t[MDF_FIT_CLASSES];
} fit;

typedef struct model_state {
    char symbol[96];
    pthread_mutex_t lock;                 /* the fits, changed */
    int changed;
    fit arch[2];                          /* CPU, CUDA */
} model_state;

/* The registry only grows: a model found is never moved or freed, so a
 * lookup reads the published count and the symbols without the lock, and
 * each model's fits have a lock of their own (a model-based policy asks
 * for a prediction once per worker and task). */
static struct {
    pthread_mutex_t lock;                 /* adding a model */
    model_state *m[MDF_FIT_MODELS];
    atomic_int n;
} models = {.lock = PTHREAD_MUTEX_INITIALIZER};

static atomic_long uncalibrated;

static int work_class(double w)
{
    int c = w > 1.0 ? (int)floor(log(w) / log(1.25)) : 0;
    return c < MDF_FIT_CLASSES ? c : MDF_FIT_CLASSES - 1;
}

static int arch_index(const struct starpu_perfmodel_arch *arch)
{
    return arch && arch->ndevices > 0 && arch->devices[0].type == STARPU_CUDA_WORKER;
}

static double task_work(const struct starpu_task *task)
{
    return (double)mdf_size_by_work((struct starpu_task *)task, 0);
}

int mdf_perfmodels_dir(char *out, size_t n)
{
    /* mdflow-simulate reads the models of the machine that recorded the run
     * (its STARPU_HOME and host name are the simulated machine's). */
    const char *forced = getenv("MDF_PERFMODELS_DIR");
    if (forced && *forced) {
        int len = snprintf(out, n, "%s", forced);
        return len > 0 && (size_t)len < n ? 0 : -1;
    }
    const char *home = getenv("STARPU_HOME");
    if (!home || !*home) home = getenv("HOME");
    if (!home || !*home) return -1;
    char host[128] = "localhost";
    if (gethostname(host, sizeof host) != 0) snprintf(host, sizeof host, "localhost");
    host[sizeof host - 1] = '\0';
    int len = snprintf(out, n, "%s/.starpu/sampling/mdflow/%s", home, host);
    return len > 0 && (size_t)len < n ? 0 : -1;
}

static int model_path(const char *dir, const model_state *s, char *out, size_t n)
{
    int len = snprintf(out, n, "%s/%s", dir, s->symbol);
    return len > 0 && (size_t)len < n ? 0 : -1;
}

/* Reads a saved fit from dir; a missing or foreign file leaves it empty. */
static void load(model_state *s, const char *dir)
{
    char path[1024];
    if (model_path(dir, s, path, sizeof path) != 0) return;
    FILE *fp = fopen(path, "r");
    if (!fp) return;
    char line[256];
    fit tmp[2];
    memset(tmp, 0, sizeof tmp);
    int ok = fgets(line, sizeof line, fp) && !strncmp(line, MDF_FIT_MAGIC, strlen(MDF_FIT_MAGIC));
    while (ok && fgets(line, sizeof line, fp)) {
        int a, c;
        double v[5];
        if (sscanf(line, "line %d %lf %lf %lf %lf %lf", &a, &v[0], &v[1], &v[2], &v[3], &v[4]) == 6 && a >= 0 &&
            a < 2) {
            tmp[a].n = v[0], tmp[a].sw = v[1], tmp[a].sww = v[2], tmp[a].st = v[3], tmp[a].swt = v[4];
        } else if (sscanf(line, "class %d %d %lf %lf", &a, &c, &v[0], &v[1]) == 4 && a >= 0 && a < 2 && c >= 0 &&
                   c < MDF_FIT_CLASSES) {
            tmp[a].class_n[c] = v[0];
            tmp[a].class_t[c] = v[1];
        } else {
            ok = 0;
        }
    }
    fclose(fp);
    if (ok) memcpy(s->arch, tmp, sizeof tmp);
}

static model_state *find(const char *symbol, int n)
{
    for (int k = 0; k < n; k++)
        if (!strcmp(models.m[k]->symbol, symbol)) return models.m[k];
    return NULL;
}

/* By symbol: a plugin's model structs come and go with its registration.
 * A new model reads its saved fits before it is published. */
static model_state *state_of(const struct starpu_perfmodel *pm)
{
    const char *symbol = pm->symbol ? pm->symbol : "unnamed";
    model_state *s = find(symbol, atomic_load_explicit(&models.n, memory_order_acquire));
    if (s) return s;
    pthread_mutex_lock(&models.lock);
    int n = atomic_load_explicit(&models.n, memory_order_relaxed);
    if (!(s = find(symbol, n)) && n < MDF_FIT_MODELS && (s = calloc(1, sizeof *s))) {
        snprintf(s->symbol, sizeof s->symbol, "%s", symbol);
        pthread_mutex_init(&s->lock, NULL);
        char dir[900];
        if (mdf_perfmodels_dir(dir, sizeof dir) == 0) load(s, dir);
        models.m[n] = s;
        atomic_store_explicit(&models.n, n + 1, memory_order_release);
    }
    pthread_mutex_unlock(&models.lock);
    return s;
}

static double predict(const fit *f, double w)
{
    int c = work_class(w);
    if (f->class_n[c] >= MDF_FIT_CLASS_MIN) return f->class_t[c] / f->class_n[c];
    if (f->n < MDF_FIT_MIN) return NAN;
    double var = f->n * f->sww - f->sw * f->sw;
    double mean = f->st / f->n;
    if (!(var > 1e-12 * f->n * f->sww)) return mean;
    double b = (f->n * f->swt - f->sw * f->st) / var;
    double a = (f->st - b * f->sw) / f->n;
    double t = a + b * w;
    /* A line through small and large works can go below zero at the small
     * end: never predict less than a hundredth of the mean. */
    return t > 0.01 * mean ? t : 0.01 * mean;
}

double mdf_perfmodel_cost(struct starpu_task *task, struct starpu_perfmodel_arch *arch, unsigned nimpl)
{
    (void)nimpl;
    if (!task->cl || !task->cl->model) return NAN;
    double w = task_work(task), t = NAN;
    model_state *s = state_of(task->cl->model);
    if (s) {
        pthread_mutex_lock(&s->lock);
        t = predict(&s->arch[arch_index(arch)], w);
        pthread_mutex_unlock(&s->lock);
    }
    if (isnan(t)) atomic_fetch_add(&uncalibrated, 1);
    return t;
}

int mdf_perfmodel_calibrated(const char *symbol, int cuda)
{
    struct starpu_perfmodel pm = {.symbol = (char *)symbol};
    model_state *s = state_of(&pm);
    if (!s) return 0;
    pthread_mutex_lock(&s->lock);
    int ok = s->arch[cuda != 0].n >= MDF_FIT_MIN;
    pthread_mutex_unlock(&s->lock);
    return ok;
}

static void halve(fit *f)
{
    f->n *= 0.5, f->sw *= 0.5, f->sww *= 0.5, f->st *= 0.5, f->swt *= 0.5;
    for (int c = 0; c < MDF_FIT_CLASSES; c++) f->class_n[c] *= 0.5, f->class_t[c] *= 0.5;
}

void mdf_perfmodel_observe(struct starpu_task *task)
{
    const struct starpu_profiling_task_info *info = task->profiling_info;
    if (!info || !task->cl || !task->cl->model || task->cl->model->type != STARPU_PER_ARCH ||
        task->cl->model->arch_cost_function != mdf_perfmodel_cost)
        return;
    double t = starpu_timing_timespec_delay_us((struct timespec *)&info->start_time,
                                               (struct timespec *)&info->end_time);
    if (!(t >= 0.0)) return;
    double w = task_work(task);
    int a = starpu_worker_get_type(info->workerid) == STARPU_CUDA_WORKER;
    model_state *s = state_of(task->cl->model);
    if (s) {
        pthread_mutex_lock(&s->lock);
        fit *f = &s->arch[a];
        if (f->n >= MDF_FIT_KEEP) halve(f);
        f->n += 1, f->sw += w, f->sww += w * w, f->st += t, f->swt += w * t;
        int c = work_class(w);
        f->class_n[c] += 1;
        f->class_t[c] += t;
        s->changed = 1;
        pthread_mutex_unlock(&s->lock);
    }
}

long mdf_perfmodels_uncalibrated(void) { return atomic_load(&uncalibrated); }

static int make_dirs(const char *path)
{
    char tmp[1024];
    snprintf(tmp, sizeof tmp, "%s", path);
    for (char *p = tmp + 1; *p; p++) {
        if (*p != '/') continue;
        *p = '\0';
        if (mkdir(tmp, 0777) != 0 && errno != EEXIST) return -1;
        *p = '/';
    }
    return mkdir(tmp, 0777) != 0 && errno != EEXIST ? -1 : 0;
}

static void save(const model_state *s, const char *dir)
{
    char path[1024], tmp[1100];
    if (model_path(dir, s, path, sizeof path) != 0) return;
    snprintf(tmp, sizeof tmp, "%s.%ld.tmp", path, (long)getpid());
    FILE *fp = fopen(tmp, "w");
    if (!fp) return;
    fprintf(fp, "%s %s\n", MDF_FIT_MAGIC, s->symbol);
    for (int a = 0; a < 2; a++) {
        const fit *f = &s->arch[a];
        if (f->n <= 0) continue;
        fprintf(fp, "line %d %.17g %.17g %.17g %.17g %.17g\n", a, f->n, f->sw, f->sww, f->st, f->swt);
        for (int c = 0; c < MDF_FIT_CLASSES; c++)
            if (f->class_n[c] > 0) fprintf(fp, "class %d %d %.17g %.17g\n", a, c, f->class_n[c], f->class_t[c]);
    }
    int ok = fclose(fp) == 0;
    if (ok && rename(tmp, path) == 0) return;
    remove(tmp);
}

void mdf_perfmodels_save(void)
{
    char dir[900];
    int n = atomic_load_explicit(&models.n, memory_order_acquire);
    if (n == 0 || mdf_perfmodels_dir(dir, sizeof dir) != 0 || make_dirs(dir) != 0) return;
    for (int k = 0; k < n; k++) {
        model_state *s = models.m[k];
        pthread_mutex_lock(&s->lock);
        if (s->changed) save(s, dir);
        s->changed = 0;
        pthread_mutex_unlock(&s->lock);
    }
}

/* The model files of a folder (symbol names), at most max, sorted. */
static int list_models(const char *dir, char **names, int max)
{
    DIR *d = dir ? opendir(dir) : NULL;
    if (!d) return 0;
    struct dirent *e;
    int n = 0;
    while ((e = readdir(d)) && n < max)
        if (e->d_name[0] != '.' && !strstr(e->d_name, ".tmp")) names[n++] = strdup(e->d_name);
    closedir(d);
    for (int i = 0; i < n; i++) /* by name: the same order every time */
        for (int j = i + 1; j < n; j++)
            if (names[i] && names[j] && strcmp(names[j], names[i]) < 0) {
                char *t = names[i];
                names[i] = names[j];
                names[j] = t;
            }
    return n;
}

int mdf_perfmodels_merge(const char *cpu_dir, const char *cuda_dir, const char *out_dir, int *cuda_models)
{
    char *names[2 * MDF_FIT_MODELS];
    int n = list_models(cpu_dir, names, MDF_FIT_MODELS);
    n += list_models(cuda_dir, names + n, MDF_FIT_MODELS);
    *cuda_models = 0;
    int ret = make_dirs(out_dir);
    for (int i = 0; i < n; i++) {
        int seen = 0;
        for (int j = 0; names[i] && j < i; j++) seen |= names[j] && !strcmp(names[j], names[i]);
        if (names[i] && !seen && ret == 0) {
            model_state cpu = {0}, cuda = {0};
            snprintf(cpu.symbol, sizeof cpu.symbol, "%s", names[i]);
            snprintf(cuda.symbol, sizeof cuda.symbol, "%s", names[i]);
            if (cpu_dir) load(&cpu, cpu_dir);
            if (cuda_dir) load(&cuda, cuda_dir);
            cpu.arch[1] = cuda.arch[1];
            *cuda_models += cpu.arch[1].n >= MDF_FIT_MIN;
            save(&cpu, out_dir);
        }
    }
    for (int i = 0; i < n; i++) free(names[i]);
    return ret;
}

/* One saved model, as mdflow perfmodels prints it. */
static void print_fit(FILE *out, const char *symbol, int a, const fit *f)
{
    int classes = 0;
    for (int c = 0; c < MDF_FIT_CLASSES; c++) classes += f->class_n[c] >= MDF_FIT_CLASS_MIN;
    double var = f->n * f->sww - f->sw * f->sw;
    double b = var > 1e-12 * f->n * f->sww ? (f->n * f->swt - f->sw * f->st) / var : 0.0;
    double a0 = f->n > 0 ? (f->st - b * f->sw) / f->n : 0.0;
    fprintf(out, "%-24s %-5s %10.0f %8d %12.4g %12.4g %12.4g %s\n", symbol, a ? "cuda" : "cpu", f->n, classes,
            f->n > 0 ? f->st / f->n : 0.0, a0, b, f->n >= MDF_FIT_MIN ? "yes" : "no");
}

int mdf_perfmodels_print(FILE *out)
{
    char dir[900];
    if (mdf_perfmodels_dir(dir, sizeof dir) != 0) return -1;
    fprintf(out, "performance models in %s\n", dir);
    fprintf(out, "%-24s %-5s %10s %8s %12s %12s %12s %s\n", "codelet", "arch", "measured", "classes", "mean (us)",
            "a (us)", "b (us/work)", "calibrated");
    DIR *d = opendir(dir);
    if (!d) {
        fprintf(out, "(none yet: every mdflow run measures its tasks and saves the models here)\n");
        return 0;
    }
    closedir(d);
    char *names[MDF_FIT_MODELS];
    int n = list_models(dir, names, MDF_FIT_MODELS);
    for (int i = 0; i < n; i++) {
        if (!names[i]) continue;
        model_state s = {0};
        snprintf(s.symbol, sizeof s.symbol, "%s", names[i]);
        load(&s, dir);
        for (int a = 0; a < 2; a++)
            if (s.arch[a].n > 0) print_fit(out, s.symbol, a, &s.arch[a]);
        free(names[i]);
    }
    fprintf(out, "a prediction: the mean of the task's size class (~25%% wide classes of its work) once it holds "
                 "%d measurements, else a + b * work; calibrated: %d measurements or more\n",
            MDF_FIT_CLASS_MIN, MDF_FIT_MIN);
    return 0;
}
