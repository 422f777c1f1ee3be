/* mdflow — the live progress line (see progress.h). */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <string.h>
#include <unistd.h>
#include "progress.h"

#define PROGRESS_TTY_INTERVAL 0.25 /* s: at most 4 updates a second */
#define PROGRESS_TTY_WIDTH 100     /* characters: no wider than a thermo row */

/* "1:02:03", "2:03" or "-" for a duration in seconds. */
static void duration(double s, char *buf, size_t size)
{
    if (!(s >= 0.0) || !isfinite(s) || s > 1e8) {
        snprintf(buf, size, "-");
        return;
    }
    long t = (long)(s + 0.5);
    if (t >= 3600) snprintf(buf, size, "%ld:%02ld:%02ld", t / 3600, t / 60 % 60, t % 60);
    else snprintf(buf, size, "%ld:%02ld", t / 60, t % 60);
}

/* Steps this process ran (a resumed run's earlier steps took no time here). */
static double steps_run(const mdf_progress *p) { return (double)(p->steps - p->steps0); }

/* Seconds left: by steps towards the step limit, or, when systems leave as
 * they converge, by the share of systems that have left, whichever ends first. */
static double eta_seconds(const progress_line *pl, const mdf_progress *p)
{
    double by_steps = steps_run(p) > 0 ? p->elapsed_s * (double)(p->max_steps - p->steps) / steps_run(p) : NAN;
    if (!pl->optimiser && p->waiting == 0) return by_steps;
    double by_systems = p->done > 0 ? p->elapsed_s * (double)(p->systems - p->done) / (double)p->done : NAN;
    if (isnan(by_steps)) return by_systems;
    return isnan(by_systems) || by_steps < by_systems ? by_steps : by_systems;
}

void progress_format(const progress_line *pl, const mdf_progress *p, char *buf, size_t size)
{
    char elapsed[32], eta[32];
    duration(p->elapsed_s, elapsed, sizeof elapsed);
    duration(eta_seconds(pl, p), eta, sizeof eta);
    double rate = p->elapsed_s > 0.0 ? steps_run(p) / p->elapsed_s : 0.0;
    snprintf(buf, size, "step %lld/%lld | %lld done, %lld in flight, %lld waiting | %.3g steps/s, %.2g atom-steps/s | "
             "%s, ETA %s",
             (long long)p->steps, (long long)p->max_steps, (long long)p->done, (long long)p->in_flight,
             (long long)p->waiting, rate, rate * (double)p->atoms, elapsed, eta);
}

static void progress_show(void *user, const mdf_progress *p)
{
    progress_line *pl = (progress_line *)user;
    char line[512];
    if (p->finished) {
        if (pl->tty && pl->shown) fputs("\r\033[K", pl->out); /* clear the line for the summary */
        pl->shown = 0;
        fflush(pl->out);
        return;
    }
    progress_format(pl, p, line, sizeof line);
    /* On a terminal the cursor goes back to the start of the line: thermo
     * rows on the same terminal (at least 100 characters) then overwrite
     * the whole progress line, which is cut to fit. */
    if (pl->tty) fprintf(pl->out, "\r%.*s\033[K\r", PROGRESS_TTY_WIDTH, line);
    else fprintf(pl->out, "mdflow: %s\n", line);
    pl->shown = 1;
    fflush(pl->out);
}

void progress_attach(progress_line *pl, mdf_stage *s, int quiet, double every_s, int optimiser)
{
    memset(pl, 0, sizeof *pl);
    pl->out = stderr;
    pl->tty = isatty(fileno(stderr));
    pl->optimiser = optimiser;
    if (quiet || !(every_s > 0.0)) return;
    double tty_every = every_s < PROGRESS_TTY_INTERVAL ? every_s : PROGRESS_TTY_INTERVAL;
    mdf_stage_set_progress(s, progress_show, pl, pl->tty ? tty_every : every_s);
}
