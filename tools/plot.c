/* mdflow plot — a PNG of a --log CSV: potential energy, temperature and
 * (where the log has it) pressure against the step, one panel each, a line
 * per system up to PLOT_LINES_MAX systems, else the mean with the min-max
 * band at each step. gnuplot draws it (the pngcairo terminal, else png)
 * from a script and data files written to a temporary folder. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include "plot.h"
#include "mdflow/mdflow.h"

#define PLOT_LINES_MAX 10
#define PLOT_LINE_MAX 4096
#define PLOT_DIR_MAX 1024   /* the temporary folder's path; its files' paths fit in PATH_MAX */

typedef struct plot_row {
    int64_t step, id;
    double energy, temperature, pressure; /* pressure NaN: none */
} plot_row;

typedef struct plot_log {
    plot_row *rows;
    size_t n, cap;
    int has_pressure;        /* the column, with at least one value */
} plot_log;

typedef struct plot_options {
    const char *input, *output;
    int per_system, aggregate;
    const char *systems;     /* "ID,ID,...", or NULL: all */
    int width, height;
} plot_options;

static void usage_plot(FILE *fp)
{
    fprintf(fp,
            "usage: mdflow plot LOG.csv [-o OUT.png] [--per-system | --aggregate] [--systems ID,...]\n"
            "                   [--size WxH]\n"
            "A PNG of a --log CSV (step,system_id,status,energy_eV,...,temperature_K[,pressure_bar,...]):\n"
            "potential energy, temperature and, where the log has it, pressure against the step, one\n"
            "panel each. Drawn by gnuplot (Debian: gnuplot-nox), its pngcairo terminal, else png.\n\n"
            "  -o, --output FILE  the PNG (default: LOG with .png for .csv)\n"
            "  --per-system       a line per system (the default up to %d systems; more are drawn\n"
            "                     aggregated, with a note)\n"
            "  --aggregate        the mean over the systems at each step, with the min-max band\n"
            "  --systems ID,...   only these system ids\n"
            "  --size WxH         pixels (default 1000x800)\n"
            "Exit status: 0; 2 for bad usage or a log without the columns (the file and line named);\n"
            "1 when gnuplot is missing or fails.\n",
            PLOT_LINES_MAX);
}

/* ---- the log -------------------------------------------------------------------------- */

/* The index of column `name` in the header's fields, -1 when absent. */
static int column(char **fields, int n, const char *name)
{
    for (int k = 0; k < n; k++)
        if (strcmp(fields[k], name) == 0) return k;
    return -1;
}

/* Splits line (modified) at commas; returns the field count. */
static int split(char *line, char **fields, int max)
{
    int n = 0;
    line[strcspn(line, "\r\n")] = '\0';
    for (char *p = line; n < max;) {
        fields[n++] = p;
        char *c = strchr(p, ',');
        if (!c) break;
        *c = '\0';
        p = c + 1;
    }
    return n;
}

static int parse_number(const char *text, double *out)
{
    char *end;
    errno = 0;
    *out = strtod(text, &end);
    return end != text && *end == '\0';
}

static mdf_status add_row(plot_log *log, const plot_row *r, mdf_error *err)
{
    if (log->n == log->cap) {
        size_t cap = log->cap ? 2 * log->cap : 1024;
        plot_row *rows = realloc(log->rows, cap * sizeof *rows);
        if (!rows) return mdf_error_set(err, MDF_ERR_NOMEM, "no memory for %zu log rows", cap);
        log->rows = rows;
        log->cap = cap;
    }
    log->rows[log->n++] = *r;
    return MDF_OK;
}

static mdf_status read_log(const char *path, plot_log *log, mdf_error *err)
{
    static const char *const needed[] = {"step", "system_id", "energy_eV", "temperature_K"};
    FILE *fp = fopen(path, "r");
    if (!fp) return mdf_error_set(err, MDF_ERR_INVALID, "cannot read the log '%s': %s", path, strerror(errno));
    char line[PLOT_LINE_MAX], *f[64];
    int col[5], nf = fgets(line, sizeof line, fp) ? split(line, f, 64) : 0;
    mdf_status st = MDF_OK;
    for (int k = 0; k < 4 && st == MDF_OK; k++)
        if ((col[k] = column(f, nf, needed[k])) < 0)
            st = mdf_error_set(err, MDF_ERR_PARSE, "%s:1: the header has no column '%s': plot reads the CSV of "
                               "mdflow md/relax --log (step,system_id,status,energy_eV,fmax_eV_per_A,"
                               "temperature_K[,pressure_bar,volume_A3])", path, needed[k]);
    col[4] = nf ? column(f, nf, "pressure_bar") : -1;
    int need = col[4] > col[3] ? col[4] : col[3];
    for (int k = 0; k < 3; k++) need = col[k] > need ? col[k] : need;
    for (long ln = 2; st == MDF_OK && fgets(line, sizeof line, fp); ln++) {
        if (line[0] == '\n' || line[0] == '\0') continue;
        double v[5] = {0, 0, 0, 0, NAN};
        int n = split(line, f, 64), ok = n > need;
        for (int k = 0; ok && k < 5; k++) {
            if (k == 4 && (col[4] < 0 || f[col[4]][0] == '\0')) continue; /* no pressure: not periodic */
            ok = parse_number(f[col[k]], &v[k]);
        }
        if (!ok) {
            st = mdf_error_set(err, MDF_ERR_PARSE, "%s:%ld: expected %d comma-separated fields with numbers in "
                               "step, system_id, energy_eV, temperature_K%s", path, ln, need + 1,
                               col[4] >= 0 ? " and pressure_bar (or empty)" : "");
            break;
        }
        if (!isnan(v[4])) log->has_pressure = 1;
        plot_row r = {(int64_t)v[0], (int64_t)v[1], v[2], v[3], v[4]};
        st = add_row(log, &r, err);
    }
    fclose(fp);
    if (st == MDF_OK && log->n == 0)
        st = mdf_error_set(err, MDF_ERR_PARSE, "%s:2: the log has a header and no rows: nothing to plot", path);
    return st;
}

/* ---- the systems to draw ----------------------------------------------------------------- */

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* The log's distinct system ids, sorted (caller frees). */
static int64_t *log_ids(const plot_log *log, size_t *n)
{
    int64_t *ids = malloc((log->n + 1) * sizeof *ids);
    if (!ids) return NULL;
    for (size_t i = 0; i < log->n; i++) ids[i] = log->rows[i].id;
    qsort(ids, log->n, sizeof *ids, cmp_i64);
    size_t m = 0;
    for (size_t i = 0; i < log->n; i++)
        if (m == 0 || ids[m - 1] != ids[i]) ids[m++] = ids[i];
    *n = m;
    return ids;
}

/* --systems ID,...: each one in the log; replaces ids. */
static mdf_status pick_systems(const char *list, const char *path, int64_t **ids, size_t *n, mdf_error *err)
{
    size_t cap = 1, m = 0;
    for (const char *p = list; *p; p++) cap += *p == ',';
    int64_t *picked = malloc(cap * sizeof *picked);
    if (!picked) return mdf_error_set(err, MDF_ERR_NOMEM, "no memory for --systems");
    for (const char *p = list;;) {
        char *end;
        errno = 0;
        long long v = strtoll(p, &end, 10);
        if (end == p || (*end != ',' && *end != '\0') || errno) {
            free(picked);
            return mdf_error_set(err, MDF_ERR_INVALID, "--systems '%s': write system ids separated by commas, "
                                 "e.g. --systems 0,3,7", list);
        }
        if (!bsearch(&(int64_t){v}, *ids, *n, sizeof **ids, cmp_i64)) {
            free(picked);
            return mdf_error_set(err, MDF_ERR_INVALID, "--systems: system id %lld has no row in %s (its ids run "
                                 "from %lld to %lld)", v, path, (long long)(*ids)[0], (long long)(*ids)[*n - 1]);
        }
        picked[m++] = v;
        if (*end == '\0') break;
        p = end + 1;
    }
    qsort(picked, m, sizeof *picked, cmp_i64);
    free(*ids);
    *ids = picked;
    *n = m;
    return MDF_OK;
}

/* ---- gnuplot ------------------------------------------------------------------------------ */

void plot_put_quoted(FILE *fp, const char *path)
{
    fputc('\'', fp);
    for (const char *p = path; *p; p++) {
        if (*p == '\'') fputc('\'', fp);
        fputc(*p, fp);
    }
    fputc('\'', fp);
}

static void put_value(FILE *fp, double v)
{
    if (isnan(v)) fputs(" NaN", fp);
    else fprintf(fp, " %.17g", v);
}

/* One data file per system: step energy temperature pressure. */
static mdf_status write_per_system(const char *dir, const plot_log *log, const int64_t *ids, size_t n,
                                   mdf_error *err)
{
    for (size_t k = 0; k < n; k++) {
        char path[PATH_MAX];
        snprintf(path, sizeof path, "%s/system%zu.dat", dir, k);
        FILE *fp = fopen(path, "w");
        if (!fp) return mdf_error_set(err, MDF_ERR_IO, "cannot write %s: %s", path, strerror(errno));
        for (size_t i = 0; i < log->n; i++) {
            const plot_row *r = &log->rows[i];
            if (r->id != ids[k]) continue;
            fprintf(fp, "%lld", (long long)r->step);
            put_value(fp, r->energy);
            put_value(fp, r->temperature);
            put_value(fp, r->pressure);
            fputc('\n', fp);
        }
        if (fclose(fp) != 0) return mdf_error_set(err, MDF_ERR_IO, "cannot write %s", path);
    }
    return MDF_OK;
}

/* The mean, min and max of each quantity over the chosen systems, a line
 * per step (the log's rows come in step order). */
static mdf_status write_aggregate(const char *dir, const plot_log *log, const int64_t *ids, size_t n,
                                  mdf_error *err)
{
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/aggregate.dat", dir);
    FILE *fp = fopen(path, "w");
    if (!fp) return mdf_error_set(err, MDF_ERR_IO, "cannot write %s: %s", path, strerror(errno));
    for (size_t i = 0; i < log->n;) {
        int64_t step = log->rows[i].step;
        double sum[3] = {0, 0, 0}, lo[3] = {INFINITY, INFINITY, INFINITY}, hi[3] = {-INFINITY, -INFINITY, -INFINITY};
        size_t count[3] = {0, 0, 0};
        for (; i < log->n && log->rows[i].step == step; i++) {
            const plot_row *r = &log->rows[i];
            if (!bsearch(&r->id, ids, n, sizeof *ids, cmp_i64)) continue;
            double v[3] = {r->energy, r->temperature, r->pressure};
            for (int q = 0; q < 3; q++) {
                if (isnan(v[q])) continue;
                sum[q] += v[q];
                lo[q] = fmin(lo[q], v[q]);
                hi[q] = fmax(hi[q], v[q]);
                count[q]++;
            }
        }
        if (count[0] == 0) continue;
        fprintf(fp, "%lld", (long long)step);
        for (int q = 0; q < 3; q++) {
            put_value(fp, count[q] ? sum[q] / (double)count[q] : NAN);
            put_value(fp, count[q] ? lo[q] : NAN);
            put_value(fp, count[q] ? hi[q] : NAN);
        }
        fputc('\n', fp);
    }
    if (fclose(fp) != 0) return mdf_error_set(err, MDF_ERR_IO, "cannot write %s", path);
    return MDF_OK;
}

/* One panel: quantity q (column 2 + q per system, 2 + 3q.. aggregated). */
static void plot_panel(FILE *fp, const char *dir, const int64_t *ids, size_t n, int aggregate, int q,
                       const char *label, int last)
{
    fprintf(fp, "set ylabel '%s'\n%s", label, last ? "set xlabel 'step'\n" : "unset xlabel\n");
    char path[PATH_MAX];
    if (aggregate) {
        snprintf(path, sizeof path, "%s/aggregate.dat", dir);
        int c = 2 + 3 * q;
        fputs("plot ", fp);
        plot_put_quoted(fp, path);
        fprintf(fp, " using 1:%d:%d with filledcurves lc rgb '#c6dbef' title 'min-max', ", c + 1, c + 2);
        plot_put_quoted(fp, path);
        fprintf(fp, " using 1:%d with lines lw 2 lc rgb '#08519c' title 'mean of %zu'\n", c, n);
        return;
    }
    fputs("plot ", fp);
    for (size_t k = 0; k < n; k++) {
        snprintf(path, sizeof path, "%s/system%zu.dat", dir, k);
        plot_put_quoted(fp, path);
        fprintf(fp, " using 1:%d with lines lw 1.5 title 'system %lld'%s", 2 + q, (long long)ids[k],
                k + 1 < n ? ", " : "\n");
    }
}

static void write_script(FILE *fp, const plot_options *o, const char *dir, const int64_t *ids, size_t n,
                         int aggregate, int has_pressure)
{
    int panels = has_pressure ? 3 : 2;
    fprintf(fp, "if (strstrt(GPVAL_TERMINALS, 'pngcairo') > 0) { set terminal pngcairo size %d,%d } "
                "else { set terminal png size %d,%d }\n", o->width, o->height, o->width, o->height);
    fputs("set output ", fp);
    plot_put_quoted(fp, o->output);
    fprintf(fp, "\nset datafile missing 'NaN'\nset grid\nset key outside right top\n"
                "set multiplot layout %d,1 title ", panels);
    plot_put_quoted(fp, o->input);
    fputc('\n', fp);
    plot_panel(fp, dir, ids, n, aggregate, 0, "potential energy (eV)", 0);
    plot_panel(fp, dir, ids, n, aggregate, 1, "temperature (K)", !has_pressure);
    if (has_pressure) plot_panel(fp, dir, ids, n, aggregate, 2, "pressure (bar)", 1);
    fputs("unset multiplot\n", fp);
}

int plot_have_gnuplot(void)
{
    const char *path = getenv("PATH");
    char buf[PATH_MAX];
    for (const char *p = path ? path : ""; *p;) {
        size_t len = strcspn(p, ":");
        snprintf(buf, sizeof buf, "%.*s/gnuplot", (int)len, len ? p : ".");
        if (access(buf, X_OK) == 0) return 1;
        p += len + (p[len] == ':');
    }
    return 0;
}

mdf_status plot_run_gnuplot(const char *dir, const char *output, mdf_error *err)
{
    char cmd[2 * PLOT_DIR_MAX + 64], errpath[PLOT_DIR_MAX + 16];
    snprintf(errpath, sizeof errpath, "%s/gnuplot.err", dir);
    snprintf(cmd, sizeof cmd, "gnuplot '%s/plot.gp' 2>'%s'", dir, errpath);
    int rc = system(cmd);
    struct stat sb;
    if (rc == 0 && stat(output, &sb) == 0 && sb.st_size > 0) return MDF_OK;
    char msg[512] = "";
    FILE *fp = fopen(errpath, "r");
    if (fp) {
        size_t got = fread(msg, 1, sizeof msg - 1, fp);
        msg[got] = '\0';
        fclose(fp);
    }
    for (char *p = msg; *p; p++) if (*p == '\n') *p = ' ';
    return mdf_error_set(err, MDF_ERR_IO, "gnuplot could not draw %s (exit status %d): %s", output,
                         WIFEXITED(rc) ? WEXITSTATUS(rc) : rc, *msg ? msg : "no message");
}

mdf_status plot_make_tempdir(char *dir, size_t size, const char *prefix, mdf_error *err)
{
    const char *tmp = getenv("TMPDIR");
    if (tmp && (strlen(tmp) + strlen(prefix) + 32 > size || strchr(tmp, '\''))) tmp = NULL; /* quoted for the shell */
    snprintf(dir, size, "%s/%s.XXXXXX", tmp && *tmp ? tmp : "/tmp", prefix);
    if (!mkdtemp(dir)) return mdf_error_set(err, MDF_ERR_IO, "cannot make a temporary folder (%s): %s", dir, strerror(errno));
    return MDF_OK;
}

/* Draws the log into o->output through a temporary folder. */
static mdf_status draw(const plot_options *o, const plot_log *log, int64_t *ids, size_t n, int aggregate,
                       mdf_error *err)
{
    char dir[PLOT_DIR_MAX], path[PATH_MAX];
    if (plot_make_tempdir(dir, sizeof dir, "mdflow-plot", err) != MDF_OK) return err->code;
    mdf_status st = aggregate ? write_aggregate(dir, log, ids, n, err) : write_per_system(dir, log, ids, n, err);
    snprintf(path, sizeof path, "%s/plot.gp", dir);
    FILE *fp = st == MDF_OK ? fopen(path, "w") : NULL;
    if (st == MDF_OK && !fp) st = mdf_error_set(err, MDF_ERR_IO, "cannot write %s: %s", path, strerror(errno));
    if (fp) {
        write_script(fp, o, dir, ids, n, aggregate, log->has_pressure);
        if (fclose(fp) != 0) st = mdf_error_set(err, MDF_ERR_IO, "cannot write %s", path);
    }
    if (st == MDF_OK) st = plot_run_gnuplot(dir, o->output, err);
    const char *names[] = {"plot.gp", "gnuplot.err", "aggregate.dat"};
    for (size_t k = 0; k < 3; k++) {
        snprintf(path, sizeof path, "%s/%s", dir, names[k]);
        remove(path);
    }
    for (size_t k = 0; !aggregate && k < n; k++) {
        snprintf(path, sizeof path, "%s/system%zu.dat", dir, k);
        remove(path);
    }
    rmdir(dir);
    return st;
}

/* ---- the command ---------------------------------------------------------------------------- */

static mdf_status parse_plot_options(int argc, char **argv, plot_options *o, char *output, size_t size,
                                     mdf_error *err)
{
    memset(o, 0, sizeof *o);
    o->width = 1000;
    o->height = 800;
    for (int k = 1; k < argc; k++) {
        const char *a = argv[k], *v = k + 1 < argc ? argv[k + 1] : NULL;
        int takes = !strcmp(a, "-o") || !strcmp(a, "--output") || !strcmp(a, "--systems") || !strcmp(a, "--size");
        if (takes && !v) return mdf_error_set(err, MDF_ERR_INVALID, "%s needs a value (see mdflow plot --help)", a);
        if (!strcmp(a, "-o") || !strcmp(a, "--output")) o->output = argv[++k];
        else if (!strcmp(a, "--systems")) o->systems = argv[++k];
        else if (!strcmp(a, "--size")) {
            char tail;
            if (sscanf(argv[++k], "%dx%d%c", &o->width, &o->height, &tail) != 2 || o->width < 100 ||
                o->height < 100 || o->width > 20000 || o->height > 20000)
                return mdf_error_set(err, MDF_ERR_INVALID, "--size '%s': write WIDTHxHEIGHT in pixels, each "
                                     "100-20000, e.g. --size 800x600", argv[k]);
        } else if (!strcmp(a, "--per-system")) o->per_system = 1;
        else if (!strcmp(a, "--aggregate")) o->aggregate = 1;
        else if (a[0] == '-' || o->input)
            return mdf_error_set(err, MDF_ERR_INVALID, "unexpected argument '%s' (see mdflow plot --help)", a);
        else o->input = a;
    }
    if (!o->input) return mdf_error_set(err, MDF_ERR_INVALID, "mdflow plot needs a log: mdflow plot LOG.csv");
    if (o->per_system && o->aggregate)
        return mdf_error_set(err, MDF_ERR_INVALID, "--per-system and --aggregate exclude each other: choose one");
    if (!o->output) {
        size_t len = strlen(o->input);
        int csv = len > 4 && !strcmp(o->input + len - 4, ".csv");
        snprintf(output, size, "%.*s.png", (int)(csv ? len - 4 : len), o->input);
        o->output = output;
    }
    return MDF_OK;
}

static int plot_fail(const mdf_error *err)
{
    fprintf(stderr, "mdflow: %s: %s\n", mdf_status_name(err->code), err->message);
    return err->code == MDF_ERR_INVALID || err->code == MDF_ERR_PARSE ? 2 : 1;
}

int plot_command(int argc, char **argv)
{
    for (int k = 1; k < argc; k++)
        if (!strcmp(argv[k], "--help") || !strcmp(argv[k], "-h")) {
            usage_plot(stdout);
            return 0;
        }
    mdf_error err;
    mdf_error_clear(&err);
    plot_options o;
    char output[PATH_MAX];
    plot_log log = {0};
    int64_t *ids = NULL;
    size_t n = 0;
    mdf_status st = parse_plot_options(argc, argv, &o, output, sizeof output, &err);
    if (st == MDF_OK) st = read_log(o.input, &log, &err);
    if (st == MDF_OK && !(ids = log_ids(&log, &n))) st = mdf_error_set(&err, MDF_ERR_NOMEM, "no memory for the ids");
    if (st == MDF_OK && o.systems) st = pick_systems(o.systems, o.input, &ids, &n, &err);
    if (st == MDF_OK && !plot_have_gnuplot())
        st = mdf_error_set(&err, MDF_ERR_IO, "gnuplot is not installed (not on PATH): install it (Debian: apt-get "
                           "install gnuplot-nox; scripts/install-deps.sh does) and plot again");
    int aggregate = o.aggregate || n > PLOT_LINES_MAX;
    if (st == MDF_OK && aggregate && !o.aggregate)
        fprintf(stderr, "mdflow: %zu systems are more than %d lines: plotting their mean with the min-max band "
                "(--systems ID,... picks up to %d)\n", n, PLOT_LINES_MAX, PLOT_LINES_MAX);
    if (st == MDF_OK) st = draw(&o, &log, ids, n, aggregate, &err);
    if (st == MDF_OK)
        printf("mdflow: %s: %s of %zu system%s%s\n", o.output, aggregate ? "mean, min and max" : "a line each", n,
               n == 1 ? "" : "s", log.has_pressure ? " (energy, temperature, pressure)" : " (energy, temperature)");
    free(ids);
    free(log.rows);
    return st == MDF_OK ? 0 : plot_fail(&err);
}
