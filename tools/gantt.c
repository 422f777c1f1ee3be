/* mdflow sched — Gantt charts of a run's tasks: SVG written here, PNG drawn
 * by gnuplot (through plot.c's helpers). Both draw the same boxes. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "gantt.h"
#include "plot.h"

#define GANTT_WIDTH 1200       /* pixels, SVG and PNG */
#define GANTT_LEFT 110         /* the row labels */
#define GANTT_RIGHT 20
#define GANTT_TOP 40           /* the title */
#define GANTT_ROW 28
#define GANTT_AXIS 40          /* tick labels and the axis title */
#define GANTT_LEGEND_ITEM 220  /* width of a legend entry */
#define GANTT_LEGEND_LINE 20

/* Distinct colours (Tableau 20's strong half, then its light half). */
static const char *const palette[] = {"#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948",
                                      "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac", "#1f77b4", "#17becf",
                                      "#aec7e8", "#ffbb78", "#98df8a", "#c5b0d5", "#c49c94", "#dbdb8d"};
#define PALETTE_N (sizeof palette / sizeof palette[0])

static const char *colour(int codelet) { return palette[(size_t)codelet % PALETTE_N]; }

/* ---- the boxes ---------------------------------------------------------------------------- */

typedef struct gantt_box {
    int row, codelet;
    double x0, x1;   /* seconds, clipped to the window */
} gantt_box;

static void window(const gantt_chart *g, double *t0, double *t1)
{
    *t0 = g->t0;
    *t1 = g->t1;
    if (*t1 > *t0) return;
    *t0 = 0.0;
    *t1 = 0.0;
    for (size_t i = 0; i < g->ntasks; i++) *t1 = fmax(*t1, g->tasks[i].end_s);
    if (*t1 <= *t0) *t1 = *t0 + 1e-6; /* no task: an empty axis */
}

static int by_row_then_start(const void *a, const void *b)
{
    const gantt_box *x = a, *y = b;
    if (x->row != y->row) return x->row - y->row;
    return (x->x0 > y->x0) - (x->x0 < y->x0);
}

/* The tasks within the window, clipped, sorted by row and start, with a
 * task of the same codelet that starts less than `pixel` seconds after its
 * row's previous box ends joined to it, each at least a pixel wide
 * (caller frees). */
static gantt_box *make_boxes(const gantt_chart *g, double t0, double t1, double pixel, size_t *n, mdf_error *err)
{
    gantt_box *b = malloc((g->ntasks + 1) * sizeof *b);
    if (!b) {
        mdf_error_set(err, MDF_ERR_NOMEM, "no memory for %zu Gantt boxes", g->ntasks);
        return NULL;
    }
    size_t m = 0;
    for (size_t i = 0; i < g->ntasks; i++) {
        const gantt_task *t = &g->tasks[i];
        if (t->end_s < t0 || t->start_s > t1 || t->worker < 0 || t->worker >= g->nworkers) continue;
        b[m++] = (gantt_box){t->worker, t->codelet, fmax(t->start_s, t0), fmin(t->end_s, t1)};
    }
    qsort(b, m, sizeof *b, by_row_then_start);
    size_t k = 0;
    for (size_t i = 0; i < m; i++) {
        gantt_box *last = k ? &b[k - 1] : NULL;
        if (last && last->row == b[i].row && last->codelet == b[i].codelet && b[i].x0 - last->x1 < pixel)
            last->x1 = fmax(last->x1, b[i].x1);
        else b[k++] = b[i];
    }
    for (size_t i = 0; i < k; i++) b[i].x1 = fmax(b[i].x1, b[i].x0 + pixel); /* at least a pixel: visible */
    *n = k;
    return b;
}

/* A round tick step giving about 8 ticks over span. */
static double tick_step(double span)
{
    double raw = span / 8.0, p = pow(10.0, floor(log10(raw))), f = raw / p;
    return (f < 1.5 ? 1.0 : f < 3.5 ? 2.0 : f < 7.5 ? 5.0 : 10.0) * p;
}

static int legend_lines(const gantt_chart *g)
{
    int per_line = (GANTT_WIDTH - GANTT_LEFT) / GANTT_LEGEND_ITEM;
    return (int)((g->ncodelets + (size_t)per_line - 1) / (size_t)per_line);
}

static int chart_height(const gantt_chart *g)
{
    return GANTT_TOP + g->nworkers * GANTT_ROW + GANTT_AXIS + legend_lines(g) * GANTT_LEGEND_LINE + 10;
}

/* ---- SVG ---------------------------------------------------------------------------------- */

static void put_xml(FILE *fp, const char *text)
{
    for (const char *p = text; *p; p++) {
        switch (*p) {
        case '&': fputs("&amp;", fp); break;
        case '<': fputs("&lt;", fp); break;
        case '>': fputs("&gt;", fp); break;
        case '"': fputs("&quot;", fp); break;
        default: fputc(*p, fp);
        }
    }
}

static void svg_rows(FILE *fp, const gantt_chart *g)
{
    for (int r = 0; r < g->nworkers; r++) {
        int y = GANTT_TOP + r * GANTT_ROW;
        fprintf(fp, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"%s\"/>\n", GANTT_LEFT, y,
                GANTT_WIDTH - GANTT_LEFT - GANTT_RIGHT, GANTT_ROW, r % 2 ? "#f4f4f4" : "#ffffff");
        fprintf(fp, "<text class=\"worker\" x=\"%d\" y=\"%d\" text-anchor=\"end\">", GANTT_LEFT - 8,
                y + GANTT_ROW / 2 + 5);
        put_xml(fp, g->workers[r]);
        fputs("</text>\n", fp);
    }
}

static void svg_axis(FILE *fp, const gantt_chart *g, double t0, double t1)
{
    double plot_w = GANTT_WIDTH - GANTT_LEFT - GANTT_RIGHT, step = tick_step(t1 - t0);
    int y = GANTT_TOP + g->nworkers * GANTT_ROW;
    fprintf(fp, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#000\"/>\n", GANTT_LEFT, y,
            GANTT_WIDTH - GANTT_RIGHT, y);
    for (double t = ceil(t0 / step) * step; t <= t1 + 1e-9 * step; t += step) {
        double x = GANTT_LEFT + (t - t0) / (t1 - t0) * plot_w;
        fprintf(fp, "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" stroke=\"#000\"/>"
                    "<text class=\"tick\" x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">%g</text>\n",
                x, y, x, y + 5, x, y + 18, fabs(t) < 1e-12 * step ? 0.0 : t);
    }
    fprintf(fp, "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">time (s)</text>\n",
            GANTT_LEFT + (int)plot_w / 2, y + 34);
}

static void svg_legend(FILE *fp, const gantt_chart *g)
{
    int per_line = (GANTT_WIDTH - GANTT_LEFT) / GANTT_LEGEND_ITEM;
    int y0 = GANTT_TOP + g->nworkers * GANTT_ROW + GANTT_AXIS + 6;
    for (size_t c = 0; c < g->ncodelets; c++) {
        int x = GANTT_LEFT + (int)(c % (size_t)per_line) * GANTT_LEGEND_ITEM;
        int y = y0 + (int)(c / (size_t)per_line) * GANTT_LEGEND_LINE;
        fprintf(fp, "<rect class=\"legend\" x=\"%d\" y=\"%d\" width=\"12\" height=\"12\" fill=\"%s\"/>"
                    "<text x=\"%d\" y=\"%d\">", x, y, colour((int)c), x + 16, y + 11);
        put_xml(fp, g->codelets[c]);
        fputs("</text>\n", fp);
    }
}

mdf_status gantt_write_svg(const char *path, const gantt_chart *g, mdf_error *err)
{
    double t0, t1;
    window(g, &t0, &t1);
    double plot_w = GANTT_WIDTH - GANTT_LEFT - GANTT_RIGHT, scale = plot_w / (t1 - t0);
    size_t n = 0;
    gantt_box *b = make_boxes(g, t0, t1, 1.0 / scale, &n, err);
    if (!b) return err->code;
    FILE *fp = fopen(path, "w");
    if (!fp) {
        free(b);
        return mdf_error_set(err, MDF_ERR_IO, "cannot write %s: %s", path, strerror(errno));
    }
    fprintf(fp, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
                "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
                "font-family=\"sans-serif\" font-size=\"12\">\n"
                "<rect width=\"100%%\" height=\"100%%\" fill=\"#ffffff\"/>\n"
                "<text x=\"%d\" y=\"24\" font-size=\"15\">", GANTT_WIDTH, chart_height(g), GANTT_LEFT);
    put_xml(fp, g->title);
    fputs("</text>\n", fp);
    svg_rows(fp, g);
    for (size_t i = 0; i < n; i++) {
        double x = GANTT_LEFT + (b[i].x0 - t0) * scale, w = (b[i].x1 - b[i].x0) * scale;
        fprintf(fp, "<rect class=\"task\" x=\"%.2f\" y=\"%d\" width=\"%.2f\" height=\"%d\" fill=\"%s\"/>\n", x,
                GANTT_TOP + b[i].row * GANTT_ROW + 3, w, GANTT_ROW - 6, colour(b[i].codelet));
    }
    svg_axis(fp, g, t0, t1);
    svg_legend(fp, g);
    fputs("</svg>\n", fp);
    free(b);
    if (fclose(fp) != 0) return mdf_error_set(err, MDF_ERR_IO, "cannot write %s: %s", path, strerror(errno));
    return MDF_OK;
}

/* ---- PNG (gnuplot) -------------------------------------------------------------------------- */

/* One line per box: x0 x1 row colour (24-bit integer, for lc rgb variable). */
static mdf_status write_boxes(const char *path, const gantt_box *b, size_t n, mdf_error *err)
{
    FILE *fp = fopen(path, "w");
    if (!fp) return mdf_error_set(err, MDF_ERR_IO, "cannot write %s: %s", path, strerror(errno));
    for (size_t i = 0; i < n; i++)
        fprintf(fp, "%.9g %.9g %d %ld\n", b[i].x0, b[i].x1, b[i].row, strtol(colour(b[i].codelet) + 1, NULL, 16));
    if (fclose(fp) != 0) return mdf_error_set(err, MDF_ERR_IO, "cannot write %s", path);
    return MDF_OK;
}

static void write_script(FILE *fp, const gantt_chart *g, const char *png, const char *data, double t0, double t1)
{
    fprintf(fp, "if (strstrt(GPVAL_TERMINALS, 'pngcairo') > 0) { set terminal pngcairo size %d,%d font ',10' } "
                "else { set terminal png size %d,%d }\n", GANTT_WIDTH, chart_height(g) + 40, GANTT_WIDTH,
            chart_height(g) + 40);
    fputs("set termoption noenhanced\nset output ", fp); /* codelet names hold '_' */
    plot_put_quoted(fp, png);
    fputs("\nset title ", fp);
    plot_put_quoted(fp, g->title);
    fprintf(fp, "\nset xlabel 'time (s)'\nset xrange [%.9g:%.9g]\nset yrange [%g:-0.5]\nset ytics (", t0, t1,
            g->nworkers - 0.5);
    for (int r = 0; r < g->nworkers; r++) {
        plot_put_quoted(fp, g->workers[r]);
        fprintf(fp, " %d%s", r, r + 1 < g->nworkers ? ", " : "");
    }
    fputs(")\nset ytics scale 0\nset style fill solid 1.0 noborder\nset key outside below horizontal\n", fp);
    fputs("plot ", fp);
    plot_put_quoted(fp, data);
    /* x:y:xlow:xhigh:ylow:yhigh and the colour */
    fputs(" using (($1+$2)/2):3:1:2:($3-0.4):($3+0.4):4 with boxxyerror lc rgb variable notitle", fp);
    for (size_t c = 0; c < g->ncodelets; c++) {
        fprintf(fp, ", keyentry with boxes lc rgb '%s' title ", colour((int)c));
        plot_put_quoted(fp, g->codelets[c]);
    }
    fputc('\n', fp);
}

mdf_status gantt_write_png(const char *path, const gantt_chart *g, mdf_error *err)
{
    if (!plot_have_gnuplot())
        return mdf_error_set(err, MDF_ERR_IO, "gnuplot is not installed (not on PATH), so %s cannot be drawn: "
                             "install it (Debian: apt-get install gnuplot-nox; scripts/install-deps.sh does) "
                             "or use the SVG", path);
    double t0, t1;
    window(g, &t0, &t1);
    size_t n = 0;
    gantt_box *b = make_boxes(g, t0, t1, (t1 - t0) / (GANTT_WIDTH - GANTT_LEFT - GANTT_RIGHT), &n, err);
    if (!b) return err->code;
    char dir[1024], data[PATH_MAX], script[PATH_MAX];
    mdf_status st = plot_make_tempdir(dir, sizeof dir, "mdflow-gantt", err);
    if (st != MDF_OK) {
        free(b);
        return st;
    }
    snprintf(data, sizeof data, "%s/boxes.dat", dir);
    snprintf(script, sizeof script, "%s/plot.gp", dir);
    st = write_boxes(data, b, n, err);
    free(b);
    FILE *fp = st == MDF_OK ? fopen(script, "w") : NULL;
    if (st == MDF_OK && !fp) st = mdf_error_set(err, MDF_ERR_IO, "cannot write %s: %s", script, strerror(errno));
    if (fp) {
        write_script(fp, g, path, data, t0, t1);
        if (fclose(fp) != 0) st = mdf_error_set(err, MDF_ERR_IO, "cannot write %s", script);
    }
    if (st == MDF_OK) {
        remove(path); /* plot_run_gnuplot checks that gnuplot wrote it */
        st = plot_run_gnuplot(dir, path, err);
    }
    char errfile[PATH_MAX];
    snprintf(errfile, sizeof errfile, "%s/gnuplot.err", dir);
    remove(data);
    remove(script);
    remove(errfile);
    rmdir(dir);
    return st;
}
