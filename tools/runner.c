/* mdflow — pieces the program's commands share. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "runner.h"

#ifndef MDF_PKGDATADIR
#define MDF_PKGDATADIR "/usr/local/share/mdflow"
#endif
#ifndef MDF_SRCDIR
#define MDF_SRCDIR "."
#endif

void runner_hooks_init(runner_hooks *h)
{
    memset(h, 0, sizeof *h);
    h->max_force = -1.0;
    h->drift = -1.0;
    h->log_every = 10;
}

/* Adds the hook just created (st: its creation's status); h is read only
 * after creation, never as an argument evaluated alongside it. */
static mdf_status add(mdf_stage *s, int part, mdf_status st, mdf_hook **h, mdf_error *err)
{
    if (st != MDF_OK) return st;
    return mdf_stage_add_part_hook(s, part, *h, err);
}

mdf_status runner_add_hooks(mdf_stage *s, int part, const runner_hooks *o, mdf_error *err)
{
    mdf_status st = MDF_OK;
    mdf_hook *h = NULL;
    if (o->freeze) st = add(s, part, mdf_hook_create_freeze(&h, err), &h, err);
    if (st == MDF_OK && o->max_force >= 0.0)
        st = add(s, part, mdf_hook_create_force_clamp(o->max_force, &h, err), &h, err);
    if (st == MDF_OK && o->nan_check)
        st = add(s, part, mdf_hook_create_nan_check(1, MDF_NAN_STOP, stderr, &h, err), &h, err);
    if (st == MDF_OK && o->wrap_every > 0) st = add(s, part, mdf_hook_create_wrap(o->wrap_every, &h, err), &h, err);
    if (st == MDF_OK && o->drift > 0.0)
        st = add(s, part, mdf_hook_create_drift_monitor(o->drift, MDF_DRIFT_WARN, o->log_every, stderr, &h, err), &h,
                 err);
    if (st == MDF_OK && o->thermo && o->thermo_every > 0)
        st = add(s, part,
                 mdf_hook_create_thermo(o->thermo, o->thermo_per_system, o->thermo_every, o->dt_fs, &h, err), &h,
                 err);
    if (st == MDF_OK && o->log_file)
        st = add(s, part, mdf_hook_create_log(o->log_file, o->log_every, &h, err), &h, err);
    return st;
}

mdf_status runner_lj_every_element(mdf_lj_config *lj, const mdf_frame_list *frames, double epsilon, double sigma,
                                   double cutoff, mdf_error *err)
{
    int seen[128] = {0};
    for (size_t i = 0; i < frames->count; i++)
        for (int64_t a = 0; a < frames->frames[i].natoms; a++) {
            int z = frames->frames[i].numbers[a];
            if (z < 1 || z > 118 || seen[z]) continue;
            seen[z] = 1;
            mdf_status st = mdf_lj_config_add_species(lj, z, epsilon, sigma, cutoff, err);
            if (st != MDF_OK) return st;
        }
    return MDF_OK;
}

void runner_warn_mixed_cutoffs(const mdf_lj_config *lj, const char *where)
{
    int za = 0, zb = 0, n = mdf_lj_config_mixed_cutoffs(lj, &za, &zb);
    if (n == 0) return;
    int a = 0, b = 0;
    for (int k = 0; k < lj->nspecies; k++) {
        if (lj->z[k] == za) a = k;
        if (lj->z[k] == zb) b = k;
    }
    double ra = lj->cutoff[a][a], rb = lj->cutoff[b][b];
    fprintf(stderr,
            "mdflow: warning: the Lennard-Jones pair %s-%s has no parameters of its own: its cutoff is max(rc_%s, "
            "rc_%s) = %g Å, where LAMMPS's arithmetic mixing would give (%g + %g)/2 = %g Å (%d such pair%s); give "
            "the pair its own parameters (%s) to choose\n",
            mdf_element_symbol(za), mdf_element_symbol(zb), mdf_element_symbol(za), mdf_element_symbol(zb),
            ra > rb ? ra : rb, ra, rb, 0.5 * (ra + rb), n, n == 1 ? "" : "s", where);
}

void runner_warn_npt_open(const char *method, const char *where, const mdf_frame_list *frames)
{
    if (!method || mdf_integrator_changes_cell(method) != 1) return;
    size_t open = 0, first = 0;
    for (size_t i = 0; i < frames->count; i++) {
        const int *pbc = frames->frames[i].pbc;
        if (pbc[0] && pbc[1] && pbc[2]) continue;
        if (open++ == 0) first = i;
    }
    if (open == 0) return;
    const int *pbc = frames->frames[first].pbc;
    fprintf(stderr,
            "mdflow: warning: %s changes the volume of systems periodic in all three directions only: %zu of %zu "
            "system%s (the first: system %zu, pbc %c %c %c) run at constant volume under its thermostat (NVT)\n",
            where, open, frames->count, frames->count == 1 ? "" : "s", first, pbc[0] ? 'T' : 'F',
            pbc[1] ? 'T' : 'F', pbc[2] ? 'T' : 'F');
}

int runner_frames_have_frozen(const mdf_frame_list *frames)
{
    for (size_t i = 0; i < frames->count; i++)
        for (size_t k = 0; k < frames->frames[i].nextra; k++) {
            const char *name = frames->frames[i].extra[k].name;
            if (!strcmp(name, "fixed") || !strcmp(name, "move_mask")) return 1;
        }
    return 0;
}

const char *runner_find_data(const char *relative)
{
    static char path[4096];
    const char *env = getenv("MDFLOW_DATA");
    const char *dirs[] = {env, MDF_PKGDATADIR, MDF_SRCDIR};
    for (size_t k = 0; k < sizeof dirs / sizeof dirs[0]; k++) {
        if (!dirs[k]) continue;
        snprintf(path, sizeof path, "%s/%s", dirs[k], relative);
        if (access(path, R_OK) == 0) return path;
    }
    return NULL;
}

static int all_finite(const double *v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!isfinite(v[i])) return 0;
    return 1;
}

int runner_frame_finite(const mdf_frame *f)
{
    size_t n = 3 * (size_t)f->natoms;
    return all_finite(f->positions, n) && (!f->velocities || all_finite(f->velocities, n)) &&
           all_finite(f->cell, 9) && (!f->has_energy || isfinite(f->energy));
}

void runner_nonfinite_check(runner_nonfinite *n, const mdf_frame *f, int64_t id, int32_t status)
{
    n->total++;
    if (status == MDF_STATUS_FAILED || runner_frame_finite(f)) return;
    size_t len = strlen(n->names);
    if (n->count < 5)
        snprintf(n->names + len, sizeof n->names - len, "%ssystem id %lld", n->count ? ", " : "", (long long)id);
    else if (n->count == 5)
        snprintf(n->names + len, sizeof n->names - len, ", ...");
    n->count++;
}

mdf_status runner_nonfinite_error(const runner_nonfinite *n, const char *hint, mdf_error *err)
{
    if (n->count == 0) return MDF_OK;
    return mdf_error_set(err, MDF_ERR_PHYSICS,
                         "the run ended with NaN/Inf positions, velocities or energies in %zu of %zu systems: %s; "
                         "they exploded (no NaN check stopped them): %s",
                         n->count, n->total, n->names, hint);
}
