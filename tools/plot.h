/* mdflow plot — a PNG of a --log CSV (tools/plot.c). */
#ifndef MDF_PLOT_H
#define MDF_PLOT_H

/* mdflow plot LOG.csv [-o OUT.png] [--per-system | --aggregate] [--systems ID,...]
 * [--size WxH]; argv[0] is "plot". Returns the exit status: 0, 2 for bad
 * usage or a log without the columns (the message names the file and line),
 * 1 when gnuplot is missing or fails. */
int plot_command(int argc, char **argv);

/* What plot and mdflow sched's Gantt charts (tools/gantt.c) share of gnuplot. */
#include <stddef.h>
#include <stdio.h>
#include "mdflow/error.h"
/* gnuplot on PATH? */
int plot_have_gnuplot(void);
/* path as a gnuplot single-quoted string ('' is a quote inside). */
void plot_put_quoted(FILE *fp, const char *path);
/* A new folder $TMPDIR/PREFIX.XXXXXX (/tmp without TMPDIR) in dir, with no
 * quote in its path (gnuplot's command line quotes it). */
mdf_status plot_make_tempdir(char *dir, size_t size, const char *prefix, mdf_error *err);
/* Runs gnuplot on dir/plot.gp; its messages go to dir/gnuplot.err, and
 * become the error's message when output is not written. */
mdf_status plot_run_gnuplot(const char *dir, const char *output, mdf_error *err);

#endif
