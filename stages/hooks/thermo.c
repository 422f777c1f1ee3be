/* mdflow — the thermo hook: LAMMPS-style rows (Step, Time, PotEng, KinEng,
 * TotEng, Temp, and Press, Volume for periodic systems), summed over the
 * batch or one per system, every N steps. Press and Volume are columns when
 * a system of the first row's step is periodic in x, y and z (the header
 * waits for that step); a system without a volume then shows "-" in them.
 * Batch totals give the mean pressure and the summed volume of the periodic
 * systems.
 * A failed write (a full disk) stops the run at once: steps whose rows can
 * no longer be written are not worth running. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "../hook_internal.h"
#include "../rows.h"
#include "mdflow/units.h"
#include "mdflow/extension.h"

typedef struct thermo_impl {
    FILE *out;
    int per_system;
    double dt_fs;
    mdf_rows *rows;
    mdf_run_control *ctl;
    int failed;        /* errno of the first failed write (0: none) */
    int header;        /* the header was printed */
    int cell_columns;  /* Press and Volume columns */
} thermo_impl;

/* Stops the run on the first failed write (the stream's owner names the file). */
static void check_written(thermo_impl *t, int64_t step)
{
    errno = 0;
    if (t->failed || (fflush(t->out) == 0 && !ferror(t->out))) return;
    t->failed = errno ? errno : EIO;
    if (t->ctl)
        mdf_run_fail(t->ctl, MDF_ERR_IO, "writing the thermo rows failed at step %lld: %s", (long long)step,
                     strerror(t->failed));
}

static void print_header(thermo_impl *t, const mdf_hook_row *rows, size_t n)
{
    for (size_t i = 0; i < n; i++) t->cell_columns |= rows[i].volume > 0.0;
    t->header = 1;
    if (t->per_system)
        fprintf(t->out, "%10s %10s %14s %20s %20s %20s %14s", "Step", "System", "Time(fs)", "PotEng(eV)",
                "KinEng(eV)", "TotEng(eV)", "Temp(K)");
    else
        fprintf(t->out, "%10s %14s %20s %20s %20s %14s", "Step", "Time(fs)", "PotEng(eV)", "KinEng(eV)",
                "TotEng(eV)", "Temp(K)");
    if (t->cell_columns) fprintf(t->out, " %16s %16s", "Press(bar)", "Volume(A^3)");
    fputc('\n', t->out);
}

/* The Press and Volume columns of a row (volume 0: none, "-"), then the
 * end of the line. */
static void print_cell_columns(const thermo_impl *t, double pressure, double volume)
{
    if (t->cell_columns && volume > 0.0) fprintf(t->out, " %16.4f %16.4f", pressure, volume);
    else if (t->cell_columns) fprintf(t->out, " %16s %16s", "-", "-");
    fputc('\n', t->out);
}

/* Rows of one step, batch order (every system of the batch). */
static void print_rows(void *user, int64_t step, const mdf_hook_row *rows, size_t n)
{
    thermo_impl *t = (thermo_impl *)user;
    if (n == 0 || t->failed) return;
    if (!t->header) print_header(t, rows, n);
    if (t->per_system) {
        for (size_t i = 0; i < n; i++) {
            const mdf_hook_row *r = &rows[i];
            fprintf(t->out, "%10lld %10lld %14.4f %20.10f %20.10f %20.10f %14.4f", (long long)r->step,
                    (long long)r->id, (double)r->step * t->dt_fs, r->energy, r->kinetic, r->energy + r->kinetic,
                    r->temperature);
            print_cell_columns(t, mdf_hook_row_pressure_bar(r), r->volume);
        }
    } else {
        double pe = 0.0, ke = 0.0, dof = 0.0, press = 0.0, volume = 0.0;
        size_t periodic = 0;
        for (size_t i = 0; i < n; i++) {
            pe += rows[i].energy;
            ke += rows[i].kinetic;
            dof += rows[i].dof;
            if (!(rows[i].volume > 0.0)) continue;
            press += mdf_hook_row_pressure_bar(&rows[i]);
            volume += rows[i].volume;
            periodic++;
        }
        fprintf(t->out, "%10lld %14.4f %20.10f %20.10f %20.10f %14.4f", (long long)rows[0].step,
                (double)rows[0].step * t->dt_fs, pe, ke, pe + ke, dof > 0.0 ? 2.0 * ke / (dof * MDF_KB) : 0.0);
        print_cell_columns(t, periodic ? press / (double)periodic : 0.0, volume);
    }
    check_written(t, step);
}

static mdf_status thermo_begin(mdf_hook *h, const mdf_hook_begin *b, mdf_error *err)
{
    thermo_impl *t = (thermo_impl *)h->impl;
    mdf_rows_destroy(t->rows);
    t->rows = NULL;
    t->ctl = b->ctl;
    t->failed = 0;
    t->header = t->cell_columns = 0;
    return mdf_rows_create(b->b, 0, h->every, b->window, print_rows, t, &t->rows, err);
}

static int thermo_submit(mdf_hook *h, const mdf_hook_ctx *c)
{
    return mdf_rows_submit(((thermo_impl *)h->impl)->rows, c);
}

static mdf_status thermo_end(mdf_hook *h, mdf_error *err)
{
    thermo_impl *t = (thermo_impl *)h->impl;
    mdf_rows_destroy(t->rows);
    t->rows = NULL;
    if (t->failed || ferror(t->out))
        return mdf_error_set(err, MDF_ERR_IO, "writing the thermo rows failed: %s",
                             strerror(t->failed ? t->failed : EIO));
    return MDF_OK;
}

static void thermo_free(void *impl)
{
    thermo_impl *t = (thermo_impl *)impl;
    if (t) mdf_rows_destroy(t->rows);
    free(t);
}

static const mdf_hook_ops thermo_ops = {.kind = "thermo", .needs = MDF_HOOK_NEEDS_VIRIAL, .begin = thermo_begin,
                                        .submit = thermo_submit, .end = thermo_end, .destroy_impl = thermo_free};

mdf_status mdf_hook_create_thermo(FILE *out, int per_system, int64_t every, double dt_fs, mdf_hook **hout,
                                  mdf_error *err)
{
    *hout = NULL;
    if (!out) return mdf_error_set(err, MDF_ERR_INVALID, "the thermo hook needs an output stream");
    thermo_impl *t = calloc(1, sizeof *t);
    if (!t) return mdf_error_set(err, MDF_ERR_NOMEM, "no memory for the thermo hook");
    t->out = out;
    t->per_system = per_system;
    t->dt_fs = dt_fs;
    return mdf_hook_new(&thermo_ops, "thermo", MDF_AFTER_STEP, every, t, hout, err);
}

/* ---- by name: rows on standard output ------------------------------------------- */

typedef struct thermo_params {
    int32_t every, per_system;
    double dt_fs;
} thermo_params;

static const mdf_param_def thermo_defs[] = {
    MDF_PARAM_INT(thermo_params, every, 10, 1, INT32_MAX, "steps", "a row every N steps"),
    MDF_PARAM_BOOL(thermo_params, per_system, 0, "one row per system instead of batch totals"),
    MDF_PARAM_DOUBLE(thermo_params, dt_fs, 1.0, 0.0, INFINITY, MDF_PARAM_MIN_OPEN, "fs",
                     "time step, for the time column"),
    MDF_PARAM_END};

static mdf_status thermo_create_named(const void *params, mdf_hook **out, mdf_error *err)
{
    const thermo_params *p = (const thermo_params *)params;
    return mdf_hook_create_thermo(stdout, p->per_system, p->every, p->dt_fs, out, err);
}

const mdf_hook_def mdf_hook_def_thermo = {MDFLOW_API_VERSION, "thermo",
                                          "LAMMPS-style thermo rows on standard output", thermo_defs,
                                          sizeof(thermo_params), thermo_create_named};
