/* mdflow — the live progress line of md, relax and run (stderr).
 *
 * On a terminal: one line rewritten in place ("\r"), at most 4 times a
 * second (or every `every_s` seconds when that is shorter), cleared when
 * the run ends. Otherwise (a pipe, a file): a plain line every `every_s`
 * seconds (--progress-every), none at the end (the summary follows).
 * Nothing with --quiet or every_s 0. The figures come from the stage's
 * host bookkeeping (mdf_stage_set_progress): no task, no wait. */
#ifndef MDF_PROGRESS_H
#define MDF_PROGRESS_H

#include <stdio.h>
#include "mdflow/mdflow.h"

#define PROGRESS_EVERY_DEFAULT 10.0 /* s between lines when stderr is not a terminal */

typedef struct progress_line {
    FILE *out;
    int tty;          /* rewrite one line in place */
    int shown;        /* a line is on the terminal */
    int optimiser;    /* systems leave on convergence: ETA from the systems that left */
} progress_line;

/* Attaches a progress line to stage s unless quiet or every_s <= 0; optimiser: the stage's systems leave when converged. */
void progress_attach(progress_line *pl, mdf_stage *s, int quiet, double every_s, int optimiser);

/* The line's text for p (no "\r", no newline). */
void progress_format(const progress_line *pl, const mdf_progress *p, char *buf, size_t size);

#endif
