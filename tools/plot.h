/* mdflow plot — a PNG of a --log CSV (tools/plot.c). */
#ifndef MDF_PLOT_H
#define MDF_PLOT_H

/* mdflow plot LOG.csv [-o OUT.png] [--per-system | --aggregate] [--systems ID,...]
 * [--size WxH]; argv[0] is "plot". Returns the exit status: 0, 2 for bad
 * usage or a log without the columns (the message names the file and line),
 * 1 when gnuplot is missing or fails. */
int plot_command(int argc, char **argv);

#endif
