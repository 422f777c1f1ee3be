/* mdflow-simulate — replays a task graph recorded by an mdflow run on a
 * machine StarPU simulates with SimGrid (mdflow sched --simulate runs it).
 *
 *   mdflow-simulate RECORD REPORT
 *
 * Built only against a StarPU configured with --enable-simgrid
 * (scripts/build-starpu-simgrid.sh). StarPU reads the simulated machine from
 * $STARPU_HOME/.starpu/sampling/bus/$STARPU_HOSTNAME.* (mdflow sched writes
 * them from the platform given to --simulate) and the policy from
 * STARPU_SCHED. Each task's length on the simulated worker comes from
 * mdflow's performance models (mdf_perfmodel.c) for its codelet, work and
 * arch, read from $MDF_PERFMODELS_DIR; where a CPU model cannot predict
 * yet, the length the recording run measured for that task. A codelet runs
 * on the simulated GPUs only when its CUDA model is calibrated (measured on
 * a GPU node): without one the simulation would have to guess.
 *
 * The replay submits the recorded tasks in the recorded order with the
 * recorded data and access modes, so StarPU derives the same dependencies,
 * waits where the host waited (data acquired, every task awaited), and
 * spends the host's own recorded time between those events on the simulated
 * host (its submissions cost what they cost on the recording machine). What
 * it does not model: work of a task that depends on where it ran (the graph
 * is the recorded run's), and a host thread per pipeline stage.
 *
 * REPORT is written in mdflow sched's report format (the simulated time as
 * wall_s, the workers' shares, a trace of every task), so mdflow sched
 * tabulates and draws simulated runs like real ones. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <starpu.h>
#include "mdf_codelet.h"

#define SIM_SYMBOLS_MAX 256
#define SIM_LINE_MAX 65536

typedef struct sim_symbol {
    char name[96];
    int cuda;                      /* its CUDA model is calibrated */
    struct starpu_perfmodel model;
    struct starpu_codelet cl;
} sim_symbol;

typedef struct sim_task {
    int symbol, priority, nbuf;
    long long first;               /* into the flat handle and mode arrays */
    int64_t work;
    double measured_us;            /* -1: not measured */
} sim_task;

enum { EV_TASK, EV_ACQUIRE, EV_WAIT, EV_WAIT_N, EV_REGISTER, EV_UNREGISTER };
typedef struct sim_event {
    int kind;
    long long index, mode;         /* task index; or handle and mode; or the count */
    double host_us;                /* the host's time before it */
} sim_event;

/* The argument every replayed task carries: the work first, as every mdflow
 * task's (mdf_size_by_work reads it), then the recorded length. */
typedef struct sim_args {
    int64_t work;
    double measured_us;
    int fell_back;                 /* its length came from the record */
} sim_args;

static struct {
    sim_symbol sym[SIM_SYMBOLS_MAX];
    int nsym;
    sim_task *tasks;
    long long ntasks, task_cap;
    long long *hid, *hmode;
    long long nref, ref_cap;
    sim_event *ev;
    long long nev, ev_cap;
    size_t *hbytes;
    char *hlive;                   /* while parsing: registered and not yet unregistered */
    long long nhandles, handle_cap;
    starpu_data_handle_t *handles;
    void **buffers;
} rec;

static long fallbacks;             /* tasks whose CPU length came from the record */
static FILE *trace_fp;
static starpu_pthread_mutex_t trace_lock;

static int fail(const char *what, const char *path, long long line)
{
    if (line > 0) fprintf(stderr, "mdflow-simulate: %s:%lld: %s\n", path, line, what);
    else fprintf(stderr, "mdflow-simulate: %s: %s\n", path, what);
    return 1;
}

static int grow(void **p, long long *cap, long long need, size_t size)
{
    if (need <= *cap) return 0;
    long long c = *cap ? *cap : 1024;
    while (c < need) c *= 2;
    void *q = realloc(*p, (size_t)c * size);
    if (!q) return -1;
    *p = q;
    *cap = c;
    return 0;
}

static int symbol_index(const char *name)
{
    for (int k = 0; k < rec.nsym; k++)
        if (!strcmp(rec.sym[k].name, name)) return k;
    if (rec.nsym == SIM_SYMBOLS_MAX) return -1;
    snprintf(rec.sym[rec.nsym].name, sizeof rec.sym[rec.nsym].name, "%s", name);
    return rec.nsym++;
}

/* "T host_us id priority symbol n h:m ..." */
static int parse_task(char *line)
{
    long long id;
    int prio, n, used = 0;
    double host_us;
    char symbol[96];
    if (sscanf(line, "T %lf %lld %d %95s %d%n", &host_us, &id, &prio, symbol, &n, &used) != 5 ||
        id != rec.ntasks || n < 0 || !(host_us >= 0.0))
        return -1;
    if (grow((void **)&rec.tasks, &rec.task_cap, rec.ntasks + 1, sizeof *rec.tasks) ||
        grow((void **)&rec.hid, &rec.ref_cap, rec.nref + n, sizeof *rec.hid) ||
        grow((void **)&rec.ev, &rec.ev_cap, rec.nev + 1, sizeof *rec.ev))
        return -1;
    rec.hmode = realloc(rec.hmode, (size_t)rec.ref_cap * sizeof *rec.hmode);
    if (!rec.hmode) return -1;
    sim_task *t = &rec.tasks[rec.ntasks];
    t->symbol = symbol_index(symbol);
    t->priority = prio;
    t->nbuf = n;
    t->first = rec.nref;
    t->work = 0;
    t->measured_us = -1.0;
    if (t->symbol < 0) return -1;
    char *p = line + used;
    for (int i = 0; i < n; i++) {
        long long h, m;
        int u = 0;
        if (sscanf(p, " %lld:%lld%n", &h, &m, &u) != 2 || h < 0 || h >= rec.nhandles || !rec.hlive[h]) return -1;
        rec.hid[rec.nref] = h;
        rec.hmode[rec.nref++] = m;
        p += u;
    }
    rec.ev[rec.nev++] = (sim_event){EV_TASK, rec.ntasks++, 0, host_us};
    return 0;
}

static int parse_line(char *line)
{
    long long a, b;
    double us;
    size_t bytes;
    switch (line[0]) {
    case 'T':
        return parse_task(line);
    case 'H':
        if (sscanf(line, "H %lld %zu", &a, &bytes) != 2 || a != rec.nhandles) return -1;
        if (grow((void **)&rec.hbytes, &rec.handle_cap, rec.nhandles + 1, sizeof *rec.hbytes) ||
            grow((void **)&rec.ev, &rec.ev_cap, rec.nev + 1, sizeof *rec.ev) ||
            !(rec.hlive = realloc(rec.hlive, (size_t)rec.handle_cap)))
            return -1;
        rec.hbytes[rec.nhandles] = bytes;
        rec.hlive[rec.nhandles] = 1;
        rec.ev[rec.nev++] = (sim_event){EV_REGISTER, rec.nhandles++, 0, 0.0};
        return 0;
    case 'U':
        if (sscanf(line, "U %lf %lld", &us, &a) != 2 || a < 0 || a >= rec.nhandles || !rec.hlive[a] || !(us >= 0.0))
            return -1;
        rec.hlive[a] = 0;
        if (grow((void **)&rec.ev, &rec.ev_cap, rec.nev + 1, sizeof *rec.ev)) return -1;
        rec.ev[rec.nev++] = (sim_event){EV_UNREGISTER, a, 0, us};
        return 0;
    case 'A':
        if (sscanf(line, "A %lf %lld %lld", &us, &a, &b) != 3 || a < 0 || a >= rec.nhandles || !rec.hlive[a] ||
            !(us >= 0.0))
            return -1;
        if (grow((void **)&rec.ev, &rec.ev_cap, rec.nev + 1, sizeof *rec.ev)) return -1;
        rec.ev[rec.nev++] = (sim_event){EV_ACQUIRE, a, b, us};
        return 0;
    case 'N':
        if (sscanf(line, "N %lf %lld", &us, &a) != 2 || a < 0 || a > UINT32_MAX || !(us >= 0.0)) return -1;
        if (grow((void **)&rec.ev, &rec.ev_cap, rec.nev + 1, sizeof *rec.ev)) return -1;
        rec.ev[rec.nev++] = (sim_event){EV_WAIT_N, a, 0, us};
        return 0;
    case 'S':
        if (sscanf(line, "S %lf", &us) != 1 || !(us >= 0.0)) return -1;
        if (grow((void **)&rec.ev, &rec.ev_cap, rec.nev + 1, sizeof *rec.ev)) return -1;
        rec.ev[rec.nev++] = (sim_event){EV_WAIT, 0, 0, us};
        return 0;
    case 'E':
        if (sscanf(line, "E %lld %lld %lf", &a, &b, &us) != 3 || a < 0 || a >= rec.ntasks) return -1;
        rec.tasks[a].work = b;
        rec.tasks[a].measured_us = us;
        return 0;
    default:
        return -1;
    }
}

static int read_record(const char *path)
{
    FILE *fp = fopen(path, "r");
    if (!fp) return fail(strerror(errno), path, 0);
    static char line[SIM_LINE_MAX];
    long long ln = 1;
    int bad = !fgets(line, sizeof line, fp) || strncmp(line, "mdflow-taskrec 1", 16) != 0;
    if (bad) {
        fclose(fp);
        return fail("not an mdflow task record (mdflow sched --simulate writes them)", path, 1);
    }
    while (fgets(line, sizeof line, fp)) {
        ln++;
        if (parse_line(line) != 0) {
            fclose(fp);
            return fail("unreadable record line, or one using a handle not registered at that point (truncated "
                        "or foreign record?)", path, ln);
        }
    }
    fclose(fp);
    return 0;
}

/* The models' prediction; a CPU model that cannot predict yet gives the
 * recorded length, so no task is simulated as free. */
static double replay_cost(struct starpu_task *task, struct starpu_perfmodel_arch *arch, unsigned nimpl)
{
    double t = mdf_perfmodel_cost(task, arch, nimpl);
    sim_args *a = task->cl_arg;
    int cpu = arch->ndevices > 0 && arch->devices[0].type == STARPU_CPU_WORKER;
    if (isnan(t) && cpu && a->measured_us >= 0.0) {
        t = a->measured_us;
        /* A policy asks once per worker: the task is counted once. */
        if (!__atomic_exchange_n(&a->fell_back, 1, __ATOMIC_RELAXED))
            __atomic_fetch_add(&fallbacks, 1, __ATOMIC_RELAXED);
    }
    /* StarPU's simulation stops at a length of 0. */
    return isnan(t) ? t : t > 0.05 ? t : 0.05;
}

static void noop(void *buffers[], void *arg) { (void)buffers, (void)arg; }

static void make_codelets(int gpus)
{
    for (int k = 0; k < rec.nsym; k++) {
        sim_symbol *s = &rec.sym[k];
        s->cuda = gpus > 0 && mdf_perfmodel_calibrated(s->name, 1);
        s->model.type = STARPU_PER_ARCH;
        s->model.symbol = s->name;
        s->model.arch_cost_function = replay_cost;
        s->cl.name = s->name;
        s->cl.where = STARPU_CPU | (s->cuda ? STARPU_CUDA : 0);
        s->cl.cpu_funcs[0] = noop;
        if (s->cuda) s->cl.cuda_funcs[0] = noop;
        s->cl.nbuffers = STARPU_VARIABLE_NBUFFERS;
        s->cl.model = &s->model;
    }
}

static int make_handle_tables(void)
{
    rec.handles = calloc((size_t)rec.nhandles + 1, sizeof *rec.handles);
    rec.buffers = calloc((size_t)rec.nhandles + 1, sizeof *rec.buffers);
    return rec.handles && rec.buffers ? 0 : -ENOMEM;
}

/* A handle as the recorded run had it, from its first use to its
 * unregistration (pages never touched cost nothing: no task runs). */
static int register_handle(long long h)
{
    size_t bytes = rec.hbytes[h] ? rec.hbytes[h] : 1;
    if (!(rec.buffers[h] = calloc(1, mdf_blob_padded(bytes)))) return -ENOMEM;
    mdf_blob_register(&rec.handles[h], STARPU_MAIN_RAM, (uintptr_t)rec.buffers[h], bytes);
    return 0;
}

static void unregister_handle(long long h)
{
    if (!rec.handles[h]) return;
    starpu_data_unregister(rec.handles[h]);
    rec.handles[h] = NULL;
    free(rec.buffers[h]);
    rec.buffers[h] = NULL;
}

static void task_done(void *arg)
{
    struct starpu_task *task = arg;
    const struct starpu_profiling_task_info *info = task->profiling_info;
    if (!info || !trace_fp) return;
    int symbol = 0;
    for (int k = 0; k < rec.nsym; k++)
        if (task->cl == &rec.sym[k].cl) symbol = k;
    /* No prediction in the trace: a simulated length is the model's
     * prediction, so a model error would always read 0. */
    double predicted = NAN;
    starpu_pthread_mutex_lock(&trace_lock);
    fprintf(trace_fp, "task %d %d %.3f %.3f %.3f\n", info->workerid, symbol,
            starpu_timing_timespec_to_us((struct timespec *)&info->start_time),
            starpu_timing_timespec_to_us((struct timespec *)&info->end_time), predicted);
    starpu_pthread_mutex_unlock(&trace_lock);
}

static int submit_task(long long i)
{
    const sim_task *t = &rec.tasks[i];
    struct starpu_task *task = starpu_task_create();
    sim_args *a = malloc(sizeof *a);
    if (!task || !a) {
        free(a);
        if (task) starpu_task_destroy(task);
        return -ENOMEM;
    }
    a->work = t->work;
    a->measured_us = t->measured_us;
    a->fell_back = 0;
    task->cl = &rec.sym[t->symbol].cl;
    task->cl_arg = a;
    task->cl_arg_size = sizeof *a;
    task->cl_arg_free = 1;
    task->priority = t->priority;
    task->nbuffers = t->nbuf;
    task->callback_func = task_done;
    task->callback_arg = task;
    if (t->nbuf > STARPU_NMAXBUFS) {
        task->dyn_handles = malloc(sizeof *task->dyn_handles * (size_t)t->nbuf);
        task->dyn_modes = malloc(sizeof *task->dyn_modes * (size_t)t->nbuf);
        if (!task->dyn_handles || !task->dyn_modes) {
            task->destroy = 0;
            starpu_task_destroy(task); /* frees the args, dyn_handles and dyn_modes */
            return -ENOMEM;
        }
    }
    for (int b = 0; b < t->nbuf; b++) {
        STARPU_TASK_SET_HANDLE(task, rec.handles[rec.hid[t->first + b]], b);
        STARPU_TASK_SET_MODE(task, (enum starpu_data_access_mode)rec.hmode[t->first + b], b);
    }
    return starpu_task_submit(task);
}

static int replay(void)
{
    for (long long e = 0; e < rec.nev; e++) {
        const sim_event *ev = &rec.ev[e];
        /* The recorded host time includes the real submissions' cost
         * (mdflow sched sets STARPU_SIMGRID_TASK_SUBMIT_COST=0). */
        if (ev->host_us > 0.0) starpu_sleep((float)(ev->host_us * 1e-6));
        if (ev->kind == EV_TASK) {
            int ret = submit_task(ev->index);
            if (ret != 0) return ret;
        } else if (ev->kind == EV_ACQUIRE) {
            starpu_data_handle_t h = rec.handles[ev->index];
            if (starpu_data_acquire(h, (enum starpu_data_access_mode)(ev->mode & (STARPU_R | STARPU_W))) == 0)
                starpu_data_release(h);
        } else if (ev->kind == EV_WAIT_N) {
            starpu_task_wait_for_n_submitted((unsigned)ev->index);
        } else if (ev->kind == EV_REGISTER) {
            int ret = register_handle(ev->index);
            if (ret != 0) return ret;
        } else if (ev->kind == EV_UNREGISTER) {
            unregister_handle(ev->index);
        } else {
            starpu_task_wait_for_all();
        }
    }
    starpu_task_wait_for_all();
    return 0;
}

static void write_report_head(FILE *fp, double seconds)
{
    long long count = 0, bytes = mdf_bus_bytes(&count);
    fprintf(fp, "mdflow-sched-report 1\nwall_s %.9g\nbus %lld %lld\nuncalibrated %ld\n", seconds, bytes, count,
            __atomic_load_n(&fallbacks, __ATOMIC_RELAXED));
    for (unsigned w = 0; w < starpu_worker_get_count(); w++) {
        struct starpu_profiling_worker_info info;
        char name[64];
        starpu_worker_get_name((int)w, name, sizeof name);
        if (starpu_profiling_worker_get_info((int)w, &info) != 0) continue;
        fprintf(fp, "worker %u %d %.9g %.9g %.9g %s\n", w, info.executed_tasks,
                starpu_timing_timespec_to_us(&info.executing_time) * 1e-6,
                starpu_timing_timespec_to_us(&info.sleeping_time) * 1e-6,
                starpu_timing_timespec_to_us(&info.total_time) * 1e-6, name);
    }
    for (int k = 0; k < rec.nsym; k++) fprintf(fp, "codelet %d %s\n", k, rec.sym[k].name);
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: mdflow-simulate RECORD REPORT (mdflow sched --simulate runs it)\n");
        return 2;
    }
    if (read_record(argv[1]) != 0) return 1;
    const char *gpus_env = getenv("STARPU_NCUDA");
    int gpus = gpus_env ? atoi(gpus_env) : 0;
    make_codelets(gpus);
    if (starpu_init(NULL) != 0) return fail("StarPU did not start (see its message above)", argv[1], 0);
    starpu_profiling_status_set(STARPU_PROFILING_ENABLE);
    starpu_pthread_mutex_init(&trace_lock, NULL);
    /* The trace goes to a side file first: the report's head (times,
     * workers) is known only at the end. */
    char trace_path[4200];
    snprintf(trace_path, sizeof trace_path, "%s.trace", argv[2]);
    trace_fp = fopen(trace_path, "w");
    int st = !trace_fp ? -errno : make_handle_tables();
    double t0 = starpu_timing_now();
    if (st == 0) st = replay();
    double seconds = (starpu_timing_now() - t0) * 1e-6;
    if (trace_fp) fclose(trace_fp);
    trace_fp = NULL;
    FILE *out = st == 0 ? fopen(argv[2], "w") : NULL;
    if (out) {
        write_report_head(out, seconds);
        FILE *in = fopen(trace_path, "r");
        char line[256];
        while (in && fgets(line, sizeof line, in)) fputs(line, out);
        if (in) fclose(in);
        st = fclose(out) == 0 ? 0 : -EIO;
    } else if (st == 0) {
        st = -errno;
    }
    remove(trace_path);
    for (long long h = 0; h < rec.nhandles && rec.handles; h++) unregister_handle(h);
    starpu_shutdown();
    if (st != 0) return fail(strerror(-st), argv[2], 0);
    return 0;
}
