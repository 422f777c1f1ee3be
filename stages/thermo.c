/* mdflow — thermo log rows. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include "thermo.h"
#include "mdflow/units.h"

typedef struct thermo_slot {
    int remaining;              /* shards yet to report */
    mdf_sample_row *rows;       /* one per system, batch order */
} thermo_slot;

struct mdf_thermo {
    pthread_mutex_t lock;
    FILE *out;
    int per_system;
    double dt_fs;
    size_t nsys;
    int nshards;
    int ring;
    int64_t next_sample;
    thermo_slot *slots;
};

/* Degrees of freedom: 3N, less the 3 of a removed total momentum (N > 1). */
static double dof(int64_t natoms) { return natoms > 1 ? 3.0 * (double)natoms - 3.0 : 3.0 * (double)natoms; }

static void print_header(mdf_thermo *t)
{
    if (t->per_system)
        fprintf(t->out, "%10s %10s %14s %20s %20s %20s %14s\n", "Step", "System", "Time(fs)", "PotEng(eV)",
                "KinEng(eV)", "TotEng(eV)", "Temp(K)");
    else
        fprintf(t->out, "%10s %14s %20s %20s %20s %14s\n", "Step", "Time(fs)", "PotEng(eV)", "KinEng(eV)",
                "TotEng(eV)", "Temp(K)");
}

static void print_rows(mdf_thermo *t, const mdf_sample_row *rows)
{
    if (t->per_system) {
        for (size_t i = 0; i < t->nsys; i++) {
            const mdf_sample_row *r = &rows[i];
            fprintf(t->out, "%10lld %10lld %14.4f %20.10f %20.10f %20.10f %14.4f\n", (long long)r->step,
                    (long long)r->id, (double)r->step * t->dt_fs, r->potential, r->kinetic,
                    r->potential + r->kinetic, 2.0 * r->kinetic / (dof(r->natoms) * MDF_KB));
        }
    } else {
        double pe = 0.0, ke = 0.0, n = 0.0;
        int64_t step = rows[0].step;
        for (size_t i = 0; i < t->nsys; i++) {
            pe += rows[i].potential;
            ke += rows[i].kinetic;
            n += dof(rows[i].natoms);
        }
        fprintf(t->out, "%10lld %14.4f %20.10f %20.10f %20.10f %14.4f\n", (long long)step,
                (double)step * t->dt_fs, pe, ke, pe + ke, 2.0 * ke / (n * MDF_KB));
    }
    fflush(t->out);
}

/* Runs on a worker, inside a sample task. */
static void on_sample(void *user, int64_t sample, int64_t first_row, const mdf_sample_row *rows, int32_t n)
{
    mdf_thermo *t = (mdf_thermo *)user;
    pthread_mutex_lock(&t->lock);
    thermo_slot *slot = &t->slots[sample % t->ring];
    memcpy(slot->rows + first_row, rows, sizeof *rows * (size_t)n);
    /* Rows of one sample complete in sample order: each shard reports its
     * samples in order, and a slot completes only with its last shard. */
    if (--slot->remaining == 0) print_rows(t, slot->rows);
    pthread_mutex_unlock(&t->lock);
}

mdf_status mdf_thermo_create(FILE *out, int per_system, double dt_fs, const mdf_batch *b, int ring,
                             mdf_thermo **res, mdf_error *err)
{
    mdf_thermo *t = calloc(1, sizeof *t);
    if (!t) return mdf_error_set(err, MDF_ERR_NOMEM, "no memory for the thermo log");
    t->out = out;
    t->per_system = per_system;
    t->dt_fs = dt_fs;
    t->nsys = b->nsys;
    t->nshards = b->nshards;
    t->ring = ring < 1 ? 1 : ring;
    t->slots = calloc((size_t)t->ring, sizeof *t->slots);
    int ok = t->slots != NULL;
    for (int k = 0; ok && k < t->ring; k++) {
        t->slots[k].rows = calloc(b->nsys, sizeof(mdf_sample_row));
        ok = t->slots[k].rows != NULL;
    }
    pthread_mutex_init(&t->lock, NULL);
    if (!ok) {
        mdf_thermo_destroy(t);
        return mdf_error_set(err, MDF_ERR_NOMEM, "no memory for the thermo log of %zu systems", b->nsys);
    }
    print_header(t);
    *res = t;
    return MDF_OK;
}

mdf_status mdf_thermo_submit(mdf_thermo *t, mdf_batch *b, mdf_error *err)
{
    int64_t sample = t->next_sample++;
    pthread_mutex_lock(&t->lock);
    t->slots[sample % t->ring].remaining = b->nshards;
    pthread_mutex_unlock(&t->lock);
    int64_t first = 0;
    for (int k = 0; k < b->nshards; k++) {
        const mdf_shard *sh = &b->shards[k];
        mdf_sample_args a = {.work = sh->nsys, .sample = sample, .first_row = first, .nsys = sh->nsys,
                             .fn = on_sample, .user = t};
        int ret = mdf_insert_sample(sh->sys, sh->res, &a);
        if (ret != 0)
            return mdf_error_set(err, MDF_ERR_STARPU, "could not submit the thermo sample of shard %d (%d)", k, ret);
        first += sh->nsys;
    }
    return MDF_OK;
}

void mdf_thermo_destroy(mdf_thermo *t)
{
    if (!t) return;
    for (int k = 0; t->slots && k < t->ring; k++) free(t->slots[k].rows);
    free(t->slots);
    pthread_mutex_destroy(&t->lock);
    free(t);
}
