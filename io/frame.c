/* mdflow — frames (one atomic system on the host) and lists of them. */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "mdflow/frame.h"

/* calloc for count elements of size bytes that never returns NULL for a
 * zero count: a NULL velocities/forces/masses pointer means "absent", so an
 * empty frame that has velocities must still hold a non-NULL pointer. */
static void *alloc_array(size_t count, size_t size)
{
    return calloc(count ? count : 1, size);
}

/* natoms * per_atom elements of size bytes fit in size_t? */
static int array_fits(int64_t natoms, size_t per_atom, size_t size)
{
    if (natoms < 0) return 0;
    if ((uint64_t)natoms > SIZE_MAX / per_atom) return 0;
    return (size_t)natoms * per_atom <= SIZE_MAX / size;
}

static void free_extra_column(mdf_extra_column *c, int64_t natoms)
{
    if (c->tokens) {
        size_t n = (size_t)natoms * (size_t)(c->ncols > 0 ? c->ncols : 0);
        for (size_t i = 0; i < n; i++) free(c->tokens[i]);
        free(c->tokens);
    }
    free(c->name);
    memset(c, 0, sizeof *c);
}

void mdf_frame_free(mdf_frame *f)
{
    if (!f) return;
    free(f->positions);
    free(f->velocities);
    free(f->forces);
    free(f->masses);
    free(f->numbers);
    for (size_t i = 0; i < f->ninfo; i++) {
        free(f->info[i].key);
        free(f->info[i].value);
    }
    free(f->info);
    for (size_t i = 0; i < f->nextra; i++) free_extra_column(&f->extra[i], f->natoms);
    free(f->extra);
    memset(f, 0, sizeof *f);
}

mdf_status mdf_frame_alloc(mdf_frame *f, int64_t natoms, int with_velocities,
                           int with_forces, int with_masses, mdf_error *err)
{
    if (!f) return mdf_error_set(err, MDF_ERR_INVALID, "mdf_frame_alloc: frame is NULL");
    memset(f, 0, sizeof *f);
    if (natoms < 0)
        return mdf_error_set(err, MDF_ERR_INVALID,
                             "cannot allocate a frame of %lld atoms: the atom count must be >= 0",
                             (long long)natoms);
    if (!array_fits(natoms, 3, sizeof(double)))
        return mdf_error_set(err, MDF_ERR_NOMEM,
                             "a frame of %lld atoms does not fit in memory", (long long)natoms);
    size_t n = (size_t)natoms;
    f->natoms = natoms;
    f->positions = alloc_array(3 * n, sizeof(double));
    f->numbers = alloc_array(n, sizeof(int32_t));
    int ok = f->positions && f->numbers;
    if (with_velocities) ok = ok && (f->velocities = alloc_array(3 * n, sizeof(double)));
    if (with_forces) ok = ok && (f->forces = alloc_array(3 * n, sizeof(double)));
    if (with_masses) ok = ok && (f->masses = alloc_array(n, sizeof(double)));
    if (!ok) {
        mdf_frame_free(f);
        return mdf_error_set(err, MDF_ERR_NOMEM, "no memory for a frame of %lld atoms",
                             (long long)natoms);
    }
    return MDF_OK;
}

/* Copies count elements of size bytes, or leaves *dst NULL when src is NULL.
 * Returns 0 when an allocation failed. */
static int copy_array(void **dst, const void *src, size_t count, size_t size)
{
    *dst = NULL;
    if (!src) return 1;
    *dst = alloc_array(count, size);
    if (!*dst) return 0;
    if (count) memcpy(*dst, src, count * size);
    return 1;
}

/* strdup that maps NULL to NULL (and reports success) so optional strings
 * copy like the others. */
static int copy_string(char **dst, const char *src)
{
    *dst = NULL;
    if (!src) return 1;
    *dst = strdup(src);
    return *dst != NULL;
}

static int copy_extra_column(mdf_extra_column *dst, const mdf_extra_column *src,
                             int64_t natoms)
{
    memset(dst, 0, sizeof *dst);
    dst->type = src->type;
    dst->ncols = src->ncols;
    if (!copy_string(&dst->name, src->name)) return 0;
    if (!src->tokens) return 1;
    size_t n = (size_t)natoms * (size_t)(src->ncols > 0 ? src->ncols : 0);
    dst->tokens = alloc_array(n, sizeof(char *));
    if (!dst->tokens) return 0;
    for (size_t i = 0; i < n; i++)
        if (!copy_string(&dst->tokens[i], src->tokens[i])) return 0;
    return 1;
}

/* Appends copies of s's extra columns to d's (same atom count). On failure
 * d->nextra counts what was appended, so mdf_frame_free() releases it. */
static int append_extra_columns(mdf_frame *d, const mdf_frame *s)
{
    if (!s->nextra) return 1;
    mdf_extra_column *grown = realloc(d->extra, (d->nextra + s->nextra) * sizeof *grown);
    if (!grown) return 0;
    d->extra = grown;
    for (size_t i = 0; i < s->nextra; i++) {
        /* Count as we go so that a partial copy is freed correctly. */
        d->nextra++;
        if (!copy_extra_column(&d->extra[d->nextra - 1], &s->extra[i], s->natoms)) return 0;
    }
    return 1;
}

/* Fills the zeroed frame d from s; on failure d holds whatever was copied so
 * far, which mdf_frame_free() releases. */
static int copy_frame_contents(mdf_frame *d, const mdf_frame *s)
{
    size_t n = (size_t)s->natoms;
    d->natoms = s->natoms;
    memcpy(d->cell, s->cell, sizeof d->cell);
    memcpy(d->pbc, s->pbc, sizeof d->pbc);
    d->has_cell = s->has_cell;
    d->energy = s->energy;
    d->has_energy = s->has_energy;
    if (!copy_array((void **)&d->positions, s->positions, 3 * n, sizeof(double)) ||
        !copy_array((void **)&d->velocities, s->velocities, 3 * n, sizeof(double)) ||
        !copy_array((void **)&d->forces, s->forces, 3 * n, sizeof(double)) ||
        !copy_array((void **)&d->masses, s->masses, n, sizeof(double)) ||
        !copy_array((void **)&d->numbers, s->numbers, n, sizeof(int32_t)))
        return 0;
    if (s->ninfo) {
        d->info = calloc(s->ninfo, sizeof *d->info);
        if (!d->info) return 0;
        /* Count as we go so that a partial copy is freed correctly. */
        for (size_t i = 0; i < s->ninfo; i++) {
            d->ninfo = i + 1;
            if (!copy_string(&d->info[i].key, s->info[i].key) ||
                !copy_string(&d->info[i].value, s->info[i].value))
                return 0;
        }
    }
    return append_extra_columns(d, s);
}

mdf_status mdf_frame_copy(mdf_frame *dst, const mdf_frame *src, mdf_error *err)
{
    if (!dst || !src)
        return mdf_error_set(err, MDF_ERR_INVALID, "mdf_frame_copy: frame is NULL");
    if (src->natoms < 0)
        return mdf_error_set(err, MDF_ERR_INVALID,
                             "cannot copy a frame with a negative atom count (%lld)",
                             (long long)src->natoms);
    if (!array_fits(src->natoms, 3, sizeof(double)))
        return mdf_error_set(err, MDF_ERR_NOMEM, "a frame of %lld atoms does not fit in memory",
                             (long long)src->natoms);
    /* dst's previous contents are overwritten, not freed (it is normally an
     * empty frame); copying a frame onto itself is a no-op, not a leak. */
    if (dst == src) return MDF_OK;
    /* Build into a temporary so that dst is only replaced by a complete copy
     * and stays untouched on failure. */
    mdf_frame tmp;
    memset(&tmp, 0, sizeof tmp);
    if (!copy_frame_contents(&tmp, src)) {
        mdf_frame_free(&tmp);
        return mdf_error_set(err, MDF_ERR_NOMEM, "no memory to copy a frame of %lld atoms",
                             (long long)src->natoms);
    }
    *dst = tmp;
    return MDF_OK;
}

mdf_status mdf_frame_set_info(mdf_frame *f, const char *key, const char *value,
                              mdf_error *err)
{
    if (!f || !key || !value)
        return mdf_error_set(err, MDF_ERR_INVALID, "mdf_frame_set_info: NULL argument");
    if (!key[0])
        return mdf_error_set(err, MDF_ERR_INVALID, "an info key must not be empty");
    char *v = strdup(value);
    if (!v) return mdf_error_set(err, MDF_ERR_NOMEM, "no memory for info key '%s'", key);
    for (size_t i = 0; i < f->ninfo; i++) {
        if (strcmp(f->info[i].key, key) == 0) {
            free(f->info[i].value);
            f->info[i].value = v;
            return MDF_OK;
        }
    }
    char *k = strdup(key);
    mdf_info_entry *grown = k ? realloc(f->info, (f->ninfo + 1) * sizeof *grown) : NULL;
    if (!grown) {
        free(k);
        free(v);
        return mdf_error_set(err, MDF_ERR_NOMEM, "no memory for info key '%s'", key);
    }
    f->info = grown;
    f->info[f->ninfo].key = k;
    f->info[f->ninfo].value = v;
    f->ninfo++;
    return MDF_OK;
}

mdf_status mdf_frame_append_extras(mdf_frame *dst, const mdf_frame *src, mdf_error *err)
{
    if (!dst || !src) return mdf_error_set(err, MDF_ERR_INVALID, "mdf_frame_append_extras: frame is NULL");
    if (src->nextra && dst->natoms != src->natoms)
        return mdf_error_set(err, MDF_ERR_INVALID,
                             "cannot give a frame of %lld atoms the per-atom columns of one of %lld atoms",
                             (long long)dst->natoms, (long long)src->natoms);
    if (!append_extra_columns(dst, src))
        return mdf_error_set(err, MDF_ERR_NOMEM, "no memory to copy the per-atom columns of %lld atoms",
                             (long long)src->natoms);
    return MDF_OK;
}

const char *mdf_frame_get_info(const mdf_frame *f, const char *key)
{
    if (!f || !key) return NULL;
    for (size_t i = 0; i < f->ninfo; i++)
        if (f->info[i].key && strcmp(f->info[i].key, key) == 0) return f->info[i].value;
    return NULL;
}

void mdf_frame_list_init(mdf_frame_list *l)
{
    if (l) memset(l, 0, sizeof *l);
}

mdf_status mdf_frame_list_push(mdf_frame_list *l, mdf_frame *src, mdf_error *err)
{
    if (!l || !src) return mdf_error_set(err, MDF_ERR_INVALID, "mdf_frame_list_push: NULL argument");
    if (l->count == l->capacity) {
        size_t cap = l->capacity ? 2 * l->capacity : 8;
        if (cap > SIZE_MAX / sizeof(mdf_frame))
            return mdf_error_set(err, MDF_ERR_NOMEM, "too many frames (%zu)", l->count);
        mdf_frame *grown = realloc(l->frames, cap * sizeof *grown);
        /* On failure src is untouched and still owned by the caller. */
        if (!grown)
            return mdf_error_set(err, MDF_ERR_NOMEM, "no memory to hold %zu frames", l->count + 1);
        l->frames = grown;
        l->capacity = cap;
    }
    l->frames[l->count++] = *src;
    memset(src, 0, sizeof *src);
    return MDF_OK;
}

void mdf_frame_list_free(mdf_frame_list *l)
{
    if (!l) return;
    for (size_t i = 0; i < l->count; i++) mdf_frame_free(&l->frames[i]);
    free(l->frames);
    memset(l, 0, sizeof *l);
}
