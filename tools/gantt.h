/* mdflow sched — Gantt charts of a run's tasks (tools/gantt.c): a row per
 * StarPU worker, a box per task coloured by codelet, a time axis and a
 * legend; SVG written directly, PNG drawn by gnuplot. */
#ifndef MDF_GANTT_H
#define MDF_GANTT_H

#include <stddef.h>
#include "mdflow/error.h"

typedef struct gantt_task {
    int worker;             /* row, 0 .. nworkers - 1 */
    int codelet;            /* colour, 0 .. ncodelets - 1 */
    double start_s, end_s;  /* seconds from the trace's origin */
} gantt_task;

typedef struct gantt_chart {
    const char *title;
    int nworkers;
    const char *const *workers;    /* row labels ("CPU 0") */
    size_t ncodelets;
    const char *const *codelets;   /* legend labels */
    size_t ntasks;
    const gantt_task *tasks;
    double t0, t1;                 /* the window drawn (s); t1 <= t0: the whole trace */
} gantt_chart;

/* Each writes path (replacing it). A run of thousands of tasks stays
 * readable and small: tasks of the same codelet on a row closer than a pixel
 * are drawn as one box. PNG: MDF_ERR_IO when gnuplot is missing or fails. */
mdf_status gantt_write_svg(const char *path, const gantt_chart *g, mdf_error *err);
mdf_status gantt_write_png(const char *path, const gantt_chart *g, mdf_error *err);

#endif
