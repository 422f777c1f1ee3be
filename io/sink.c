/* mdflow — sinks: host memory, device buffer, HDF5 structure files, H5MD
 * trajectories, and chains of them (include/mdflow/sink.h).
 *
 * Host and device sinks keep systems in the packed layout of the staging
 * buffers (codelets/sink/sink_kernel.h), so a write is one copy. Every sink
 * is a chain of one or more members; a write offers its systems to the
 * members in order, each taking as many (in order) as fit. */
#define _POSIX_C_SOURCE 200809L
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "sink_internal.h"
#include "h5io.h"
#include "../dataflow/batch_internal.h"
#include "../codelets/sink/sink_codelet.h"
#include "mdflow/extension.h"
#include "mdflow/runtime.h"

#define MDF_SINK_MAX_MEMBERS 8

typedef enum sink_kind { SINK_HOST, SINK_DEVICE, SINK_HDF5, SINK_H5MD, SINK_CHAIN } sink_kind;
static const char *const kind_names[] = {"host", "device", "hdf5", "h5md", "chain"};

struct mdf_sink {
    sink_kind kind;
    char label[160];                 /* "hdf5 sink 'out.h5'", for messages */
    int64_t max_sys, max_atoms;      /* host and device: capacity */
    void *mem;                       /* host: packed storage */
    starpu_data_handle_t store, len; /* device: packed storage, its length mirror */
    int64_t len_mem[2];
    int store_ready;                 /* device: emptied by an init task */
    mdf_h5s_writer *h5s;
    mdf_h5md_writer *h5md;
    int64_t file_cap;                /* hdf5/h5md: -1 unlimited */
    starpu_data_handle_t token;      /* host-side members: orders their write tasks */
    int32_t token_mem;
    int failed;                      /* a write failed: later ones are skipped */
    int nmembers;
    mdf_sink *members[MDF_SINK_MAX_MEMBERS];
    mdf_sink_fail_fn fail;
    void *fail_user;
};

/* ---- packed buffers on the host ------------------------------------------------ */

static mdf_snapshot pack_view(const void *buf)
{
    const mdf_pack_header *h = (const mdf_pack_header *)buf;
    mdf_pack_layout L = mdf_pack_layout_of(h->sys_cap, h->atom_cap);
    mdf_snapshot s = {
        .nsys = h->nsys,
        .natoms = h->natoms,
        .atom_ptr = MDF_PACK_PTR(buf, L, atom_ptr, const int64_t),
        .id = MDF_PACK_PTR(buf, L, id, const int64_t),
        .step = MDF_PACK_PTR(buf, L, step, const int64_t),
        .status = MDF_PACK_PTR(buf, L, status, const int32_t),
        .flags = MDF_PACK_PTR(buf, L, flags, const int32_t),
        .pbc = MDF_PACK_PTR(buf, L, pbc, const int32_t),
        .cell = MDF_PACK_PTR(buf, L, cell, const double),
        .energy = MDF_PACK_PTR(buf, L, energy, const double),
        .kinetic = MDF_PACK_PTR(buf, L, kinetic, const double),
        .fmax = MDF_PACK_PTR(buf, L, fmax, const double),
        .virial = MDF_PACK_PTR(buf, L, virial, const double),
        .time_fs = MDF_PACK_PTR(buf, L, time, const double),
        .positions = MDF_PACK_PTR(buf, L, pos, const double),
        .velocities = MDF_PACK_PTR(buf, L, vel, const double),
        .forces = MDF_PACK_PTR(buf, L, force, const double),
        .masses = MDF_PACK_PTR(buf, L, mass, const double),
        .numbers = MDF_PACK_PTR(buf, L, numbers, const int32_t),
    };
    return s;
}

static void *pack_alloc(int64_t sys_cap, int64_t atom_cap)
{
    mdf_pack_layout L = mdf_pack_layout_of(sys_cap, atom_cap);
    mdf_pack_header *h = calloc(1, mdf_blob_padded((size_t)L.total));
    if (!h) return NULL;
    h->sys_cap = sys_cap;
    h->atom_cap = atom_cap;
    return h;
}

/* Appends systems [from, ...) of snap that fit, in order; returns how many. */
static int64_t pack_append(void *buf, const mdf_snapshot *s, int64_t from)
{
    mdf_pack_header *h = (mdf_pack_header *)buf;
    mdf_pack_layout L = mdf_pack_layout_of(h->sys_cap, h->atom_cap);
    char *b = (char *)buf;
    int64_t k = 0;
    for (; from + k < s->nsys && h->nsys < h->sys_cap; k++) {
        int64_t j = from + k, a0 = s->atom_ptr[j], n = s->atom_ptr[j + 1] - a0, d = h->nsys;
        if (h->natoms + n > h->atom_cap) break;
        MDF_PACK_PTR(b, L, atom_ptr, int64_t)[d] = h->natoms;
        MDF_PACK_PTR(b, L, atom_ptr, int64_t)[d + 1] = h->natoms + n;
        MDF_PACK_PTR(b, L, id, int64_t)[d] = s->id[j];
        MDF_PACK_PTR(b, L, step, int64_t)[d] = s->step[j];
        MDF_PACK_PTR(b, L, status, int32_t)[d] = s->status[j];
        MDF_PACK_PTR(b, L, flags, int32_t)[d] = s->flags[j];
        MDF_PACK_PTR(b, L, src, int32_t)[d] = 0;
        memcpy(MDF_PACK_PTR(b, L, pbc, int32_t) + 3 * d, s->pbc + 3 * j, 3 * sizeof(int32_t));
        memcpy(MDF_PACK_PTR(b, L, cell, double) + 9 * d, s->cell + 9 * j, 9 * sizeof(double));
        memcpy(MDF_PACK_PTR(b, L, virial, double) + 9 * d, s->virial + 9 * j, 9 * sizeof(double));
        MDF_PACK_PTR(b, L, energy, double)[d] = s->energy[j];
        MDF_PACK_PTR(b, L, kinetic, double)[d] = s->kinetic[j];
        MDF_PACK_PTR(b, L, fmax, double)[d] = s->fmax[j];
        MDF_PACK_PTR(b, L, time, double)[d] = s->time_fs[j];
        int64_t t = h->natoms;
        memcpy(MDF_PACK_PTR(b, L, pos, double) + 3 * t, s->positions + 3 * a0, (size_t)(24 * n));
        memcpy(MDF_PACK_PTR(b, L, vel, double) + 3 * t, s->velocities + 3 * a0, (size_t)(24 * n));
        memcpy(MDF_PACK_PTR(b, L, force, double) + 3 * t, s->forces + 3 * a0, (size_t)(24 * n));
        memcpy(MDF_PACK_PTR(b, L, mass, double) + t, s->masses + a0, (size_t)(8 * n));
        memcpy(MDF_PACK_PTR(b, L, numbers, int32_t) + t, s->numbers + a0, (size_t)(4 * n));
        h->nsys++;
        h->natoms += n;
    }
    return k;
}

/* Keeps the first n systems. */
static void pack_truncate(void *buf, int64_t n)
{
    mdf_pack_header *h = (mdf_pack_header *)buf;
    if (n >= h->nsys) return;
    mdf_pack_layout L = mdf_pack_layout_of(h->sys_cap, h->atom_cap);
    h->nsys = n < 0 ? 0 : n;
    h->natoms = MDF_PACK_PTR(buf, L, atom_ptr, int64_t)[h->nsys];
}

/* Removes the first k systems, moving the others to the front. */
static void pack_remove_front(void *buf, int64_t k)
{
    mdf_pack_header *h = (mdf_pack_header *)buf;
    if (k <= 0) return;
    if (k >= h->nsys) {
        h->nsys = h->natoms = 0;
        return;
    }
    mdf_pack_layout L = mdf_pack_layout_of(h->sys_cap, h->atom_cap);
    char *b = (char *)buf;
    const int64_t *p = MDF_PACK_PTR(b, L, atom_ptr, int64_t);
    int64_t shift = p[k];
    /* Destinations precede sources: copying in ascending order is safe. */
    for (int64_t j = k; j < h->nsys; j++) {
        int64_t a0 = p[j] - shift, n = p[j + 1] - p[j];
        mdf_pack_copy_system(b, &L, j - k, a0, b, &L, j);
        for (int64_t i = 0; i < n; i++) mdf_pack_copy_atom(b, &L, a0 + i, b, &L, p[j] + i);
    }
    h->nsys -= k;
    h->natoms -= shift;
}

/* System i of a packed buffer as a frame. */
static mdf_status snapshot_frame(const mdf_snapshot *s, int64_t i, mdf_frame *out, mdf_error *err)
{
    memset(out, 0, sizeof *out);
    int64_t a0 = s->atom_ptr[i], n = s->atom_ptr[i + 1] - a0;
    mdf_status st = mdf_frame_alloc(out, n, 1, 1, 1, err);
    if (st != MDF_OK) return st;
    memcpy(out->positions, s->positions + 3 * a0, (size_t)(24 * n));
    memcpy(out->velocities, s->velocities + 3 * a0, (size_t)(24 * n));
    memcpy(out->forces, s->forces + 3 * a0, (size_t)(24 * n));
    memcpy(out->masses, s->masses + a0, (size_t)(8 * n));
    memcpy(out->numbers, s->numbers + a0, (size_t)(4 * n));
    memcpy(out->cell, s->cell + 9 * i, sizeof out->cell);
    for (int d = 0; d < 3; d++) out->pbc[d] = s->pbc[3 * i + d];
    for (int d = 0; d < 9 && !out->has_cell; d++) out->has_cell = out->cell[d] != 0.0;
    out->energy = s->energy[i];
    out->has_energy = 1;
    char v[32];
    snprintf(v, sizeof v, "%" PRId64, s->id[i]);
    st = mdf_frame_set_info(out, "mdf_system_id", v, err);
    snprintf(v, sizeof v, "%" PRId64, s->step[i]);
    if (st == MDF_OK) st = mdf_frame_set_info(out, "mdf_step", v, err);
    snprintf(v, sizeof v, "%" PRId32, s->status[i]);
    if (st == MDF_OK) st = mdf_frame_set_info(out, "mdf_status", v, err);
    if (st != MDF_OK) mdf_frame_free(out);
    return st;
}

/* ---- creation -------------------------------------------------------------------- */

static mdf_status new_sink(sink_kind kind, mdf_sink **out, mdf_error *err)
{
    mdf_sink *s = calloc(1, sizeof *s);
    if (!s) return mdf_error_set(err, MDF_ERR_NOMEM, "no memory for a sink");
    s->kind = kind;
    s->nmembers = 1;
    s->members[0] = s;
    s->file_cap = -1;
    *out = s;
    return MDF_OK;
}

static mdf_status check_caps(const char *kind, int64_t max_systems, int64_t max_atoms, mdf_error *err)
{
    if (max_systems < 1 || max_atoms < 1)
        return mdf_error_set(err, MDF_ERR_INVALID,
                             "a %s sink needs room for at least one system and one atom (got %lld systems, %lld "
                             "atoms)", kind, (long long)max_systems, (long long)max_atoms);
    if (max_atoms > ((int64_t)1 << 31) || max_systems > ((int64_t)1 << 28))
        return mdf_error_set(err, MDF_ERR_INVALID, "a %s sink holds at most 2^31 atoms and 2^28 systems", kind);
    return MDF_OK;
}

/* A host or device sink of the given capacities, its label set; no storage yet. */
static mdf_status new_capped_sink(sink_kind kind, const char *name, int64_t max_systems, int64_t max_atoms,
                                  mdf_sink **out, mdf_error *err)
{
    mdf_status st = check_caps(name, max_systems, max_atoms, err);
    if (st == MDF_OK) st = new_sink(kind, out, err);
    if (st != MDF_OK) return st;
    (*out)->max_sys = max_systems;
    (*out)->max_atoms = max_atoms;
    snprintf((*out)->label, sizeof (*out)->label, "%s sink (%lld systems, %lld atoms)", name,
             (long long)max_systems, (long long)max_atoms);
    return MDF_OK;
}

mdf_status mdf_sink_create_host(int64_t max_systems, int64_t max_atoms, mdf_sink **out, mdf_error *err)
{
    *out = NULL;
    mdf_status st = new_capped_sink(SINK_HOST, "host", max_systems, max_atoms, out, err);
    if (st != MDF_OK) return st;
    mdf_sink *s = *out;
    s->mem = pack_alloc(max_systems, max_atoms);
    if (!s->mem) {
        free(s);
        *out = NULL;
        return mdf_error_set(err, MDF_ERR_NOMEM, "no memory for a host sink of %lld systems and %lld atoms",
                             (long long)max_systems, (long long)max_atoms);
    }
    return MDF_OK;
}

/* The first CUDA worker, or -1. */
static int first_cuda_worker(void)
{
#ifdef STARPU_USE_CUDA
    int ids[1];
    if (starpu_worker_get_ids_by_type(STARPU_CUDA_WORKER, ids, 1) > 0) return ids[0];
#endif
    return -1;
}

mdf_status mdf_sink_create_device(int64_t max_systems, int64_t max_atoms, mdf_sink **out, mdf_error *err)
{
    *out = NULL;
    if (!starpu_is_initialized())
        return mdf_error_set(err, MDF_ERR_STARPU, "a device sink needs StarPU running (mdf_runtime_init first)");
    mdf_status st = new_capped_sink(SINK_DEVICE, "device", max_systems, max_atoms, out, err);
    if (st != MDF_OK) return st;
    mdf_sink *s = *out;
    mdf_pack_layout L = mdf_pack_layout_of(max_systems, max_atoms);
    /* No home copy: StarPU allocates the storage where the init task runs
     * (the first GPU when there is one) and keeps it there. */
    mdf_blob_register(&s->store, -1, 0, (size_t)L.total);
    starpu_vector_data_register(&s->len, STARPU_MAIN_RAM, (uintptr_t)s->len_mem, 2, sizeof(int64_t));
    mdf_device_append_args a = {.work = max_atoms, .dst_sys_cap = max_systems, .dst_atom_cap = max_atoms};
    int ret = mdf_insert_device_init(s->store, s->len, &a, first_cuda_worker());
    if (ret != 0) {
        mdf_sink_destroy(s);
        *out = NULL;
        return mdf_error_set(err, MDF_ERR_STARPU, "could not allocate a device sink (StarPU error %d)", ret);
    }
    s->store_ready = 1;
    return MDF_OK;
}

/* An hdf5 or h5md sink over a file opened by its writer. */
static mdf_status create_file_sink(sink_kind kind, const char *path, const mdf_h5_options *opt, mdf_sink **out,
                                   mdf_error *err)
{
    *out = NULL;
    mdf_h5_options o;
    if (opt) o = *opt;
    else mdf_h5_options_init(&o);
    mdf_sink *s = NULL;
    mdf_status st = new_sink(kind, &s, err);
    if (st != MDF_OK) return st;
    snprintf(s->label, sizeof s->label, "%s sink '%s'", kind_names[kind], path);
    s->file_cap = o.max_systems > 0 ? o.max_systems : -1;
    st = kind == SINK_HDF5 ? mdf_h5s_open(path, &o, &s->h5s, err) : mdf_h5md_open(path, &o, &s->h5md, err);
    if (st != MDF_OK) {
        free(s);
        return st;
    }
    *out = s;
    return MDF_OK;
}

mdf_status mdf_sink_create_hdf5(const char *path, const mdf_h5_options *opt, mdf_sink **out, mdf_error *err)
{
    return create_file_sink(SINK_HDF5, path, opt, out, err);
}

mdf_status mdf_sink_create_h5md(const char *path, const mdf_h5_options *opt, mdf_sink **out, mdf_error *err)
{
    return create_file_sink(SINK_H5MD, path, opt, out, err);
}

mdf_status mdf_sink_chain(mdf_sink **sinks, int n, mdf_sink **out, mdf_error *err)
{
    *out = NULL;
    mdf_status st = MDF_OK;
    if (!sinks || n < 1 || n > MDF_SINK_MAX_MEMBERS)
        st = mdf_error_set(err, MDF_ERR_INVALID, "a sink chain takes 1 to %d sinks (got %d)", MDF_SINK_MAX_MEMBERS, n);
    for (int j = 0; st == MDF_OK && j < n; j++)
        if (!sinks[j] || sinks[j]->kind == SINK_CHAIN)
            st = mdf_error_set(err, MDF_ERR_INVALID, "sink %d of a chain is %s: chain plain sinks", j,
                               sinks[j] ? "a chain" : "missing");
    mdf_sink *c = NULL;
    if (st == MDF_OK) st = new_sink(SINK_CHAIN, &c, err);
    if (st != MDF_OK) {
        for (int j = 0; sinks && j < n; j++) mdf_sink_destroy(sinks[j]);
        return st;
    }
    c->nmembers = n;
    int used = snprintf(c->label, sizeof c->label, "sink chain [");
    for (int j = 0; j < n; j++) {
        c->members[j] = sinks[j];
        if (used < (int)sizeof c->label)
            used += snprintf(c->label + used, sizeof c->label - (size_t)used, "%s%s", j ? ", " : "",
                             sinks[j]->label);
    }
    if (used < (int)sizeof c->label) snprintf(c->label + used, sizeof c->label - (size_t)used, "]");
    *out = c;
    return MDF_OK;
}

/* ---- host-side operations ---------------------------------------------------------- */

/* A device sink's length handle mirrors its storage header (so that
 * lengths are learnt without moving the storage). */
static void set_length_mirror(mdf_sink *m, int64_t nsys, int64_t natoms)
{
    if (mdf_data_acquire(m->len, STARPU_W) != 0) return;
    m->len_mem[0] = nsys;
    m->len_mem[1] = natoms;
    starpu_data_release(m->len);
}

const char *mdf_sink_kind(const mdf_sink *s) { return kind_names[s->kind]; }

int mdf_sink_nmembers(const mdf_sink *s) { return s->nmembers; }

void mdf_sink_wait(mdf_sink *s)
{
    for (int j = 0; j < s->nmembers; j++) {
        mdf_sink *m = s->members[j];
        starpu_data_handle_t h = m->kind == SINK_DEVICE ? m->len : m->token;
        if (h && mdf_data_acquire(h, STARPU_R) == 0) starpu_data_release(h);
    }
}

int64_t mdf_sink_member_length(mdf_sink *s, int j)
{
    mdf_sink *m = s->members[j];
    switch (m->kind) {
    case SINK_HOST:
        mdf_sink_wait(m);
        return ((const mdf_pack_header *)m->mem)->nsys;
    case SINK_DEVICE: {
        int64_t n = 0;
        if (mdf_data_acquire(m->len, STARPU_R) == 0) {
            n = m->len_mem[0];
            starpu_data_release(m->len);
        }
        return n;
    }
    case SINK_HDF5: mdf_sink_wait(m); return mdf_h5s_length(m->h5s);
    case SINK_H5MD: mdf_sink_wait(m); return mdf_h5md_length(m->h5md);
    default: return 0;
    }
}

int64_t mdf_sink_length(mdf_sink *s)
{
    int64_t n = 0;
    for (int j = 0; j < s->nmembers; j++) n += mdf_sink_member_length(s, j);
    return n;
}

static int64_t member_capacity(const mdf_sink *m)
{
    return m->kind == SINK_HOST || m->kind == SINK_DEVICE ? m->max_sys : m->file_cap;
}

int64_t mdf_sink_capacity(const mdf_sink *s)
{
    int64_t n = 0;
    for (int j = 0; j < s->nmembers; j++) {
        int64_t c = member_capacity(s->members[j]);
        if (c < 0) return -1;
        n += c;
    }
    return n;
}

/* Host-side append to one member: systems [from, ...) of snap that fit;
 * returns how many, or -1 with err set. The caller holds no StarPU data. */
static int64_t member_append(mdf_sink *m, const mdf_snapshot *snap, int64_t from, mdf_error *err)
{
    int64_t room, k;
    switch (m->kind) {
    case SINK_HOST: return pack_append(m->mem, snap, from);
    case SINK_DEVICE:
        if (mdf_data_acquire(m->store, STARPU_RW) != 0) {
            mdf_error_set(err, MDF_ERR_STARPU, "could not reach the %s", m->label);
            return -1;
        }
        {
            mdf_pack_header *h = (mdf_pack_header *)starpu_data_get_local_ptr(m->store);
            k = pack_append(h, snap, from);
            int64_t n = h->nsys, na = h->natoms;
            starpu_data_release(m->store);
            set_length_mirror(m, n, na);
        }
        return k;
    case SINK_HDF5:
    case SINK_H5MD: {
        int64_t len = m->kind == SINK_HDF5 ? mdf_h5s_length(m->h5s) : mdf_h5md_length(m->h5md);
        room = m->file_cap < 0 ? snap->nsys - from : m->file_cap - len;
        k = snap->nsys - from < room ? snap->nsys - from : room;
        if (k <= 0) return 0;
        mdf_status st = m->kind == SINK_HDF5 ? mdf_h5s_append(m->h5s, snap, from, k, err)
                                             : mdf_h5md_append(m->h5md, snap, from, k, err);
        return st == MDF_OK ? k : -1;
    }
    default: return 0;
    }
}

mdf_status mdf_sink_write_snapshot(mdf_sink *s, const mdf_snapshot *snap, mdf_error *err)
{
    if (!s || !snap) return mdf_error_set(err, MDF_ERR_INVALID, "mdf_sink_write_snapshot needs a sink and a snapshot");
    mdf_sink_wait(s);
    int64_t from = 0;
    for (int j = 0; j < s->nmembers && from < snap->nsys; j++) {
        int64_t k = member_append(s->members[j], snap, from, err);
        if (k < 0) return err ? err->code : MDF_ERR_IO;
        from += k;
    }
    if (from < snap->nsys)
        return mdf_error_set(err, MDF_ERR_IO,
                             "the %s is full: %lld of %lld systems (from system id %lld) could not be stored; give "
                             "it more room or chain an HDF5 sink after it", s->label,
                             (long long)(snap->nsys - from), (long long)snap->nsys, (long long)snap->id[from]);
    return MDF_OK;
}

mdf_status mdf_sink_write(mdf_sink *s, const mdf_batch *b, const uint8_t *mask, double dt_fs, mdf_error *err)
{
    if (!s || !b) return mdf_error_set(err, MDF_ERR_INVALID, "mdf_sink_write needs a sink and a batch");
    int64_t nsys = 0, natoms = 0;
    for (size_t i = 0; i < b->nsys; i++)
        if (!mask || mask[i]) {
            nsys++;
            natoms += b->sys[b->sys_slot[i]].natoms;
        }
    if (nsys == 0) return MDF_OK;
    char *buf = pack_alloc(nsys, natoms);
    if (!buf) return mdf_error_set(err, MDF_ERR_NOMEM, "no memory to pack %lld systems", (long long)nsys);
    mdf_pack_layout L = mdf_pack_layout_of(nsys, natoms);
    mdf_pack_header *h = (mdf_pack_header *)buf;
    for (size_t i = 0; i < b->nsys; i++) {
        if (mask && !mask[i]) continue;
        int64_t slot = b->sys_slot[i], a0 = mdf_batch_slot_atom(b, slot);
        const mdf_sys_info *si = &b->sys[slot];
        mdf_pack_system(buf, &L, h->nsys, h->natoms, si, &b->res[slot], 0, dt_fs);
        for (int32_t a = 0; a < si->natoms; a++)
            mdf_pack_atom(buf, &L, h->natoms, (int32_t)(a0 + a), b->pos, b->vel, b->force, b->atoms);
        h->natoms += si->natoms;
        h->nsys++;
    }
    mdf_snapshot view = pack_view(buf);
    mdf_status st = mdf_sink_write_snapshot(s, &view, err);
    free(buf);
    return st;
}

static int64_t info_int(const mdf_frame *f, const char *key, int64_t fallback)
{
    const char *v = mdf_frame_get_info(f, key);
    char *end = NULL;
    long long x = v ? strtoll(v, &end, 10) : 0;
    return v && end != v ? (int64_t)x : fallback;
}

/* Fills out[0..n) from the numbers of info key `key`; 0 if it has fewer. */
static int info_doubles(const mdf_frame *f, const char *key, double *out, int n)
{
    const char *v = mdf_frame_get_info(f, key);
    for (int k = 0; v && k < n; k++) {
        char *end = NULL;
        out[k] = strtod(v, &end);
        if (end == v) return 0;
        v = end;
    }
    return v != NULL;
}

/* Packed system d of buf from a frame (the inverse of snapshot_frame). */
static void pack_frame(char *buf, const mdf_pack_layout *L, const mdf_frame *f, int64_t index)
{
    mdf_pack_header *h = (mdf_pack_header *)buf;
    int64_t d = h->nsys, a0 = h->natoms, n = f->natoms;
    MDF_PACK_PTR(buf, *L, atom_ptr, int64_t)[d] = a0;
    MDF_PACK_PTR(buf, *L, atom_ptr, int64_t)[d + 1] = a0 + n;
    MDF_PACK_PTR(buf, *L, id, int64_t)[d] = info_int(f, "mdf_system_id", index);
    MDF_PACK_PTR(buf, *L, step, int64_t)[d] = info_int(f, "mdf_step", 0);
    MDF_PACK_PTR(buf, *L, status, int32_t)[d] = (int32_t)info_int(f, "mdf_status", 0);
    for (int k = 0; k < 3; k++) MDF_PACK_PTR(buf, *L, pbc, int32_t)[3 * d + k] = f->pbc[k];
    memcpy(MDF_PACK_PTR(buf, *L, cell, double) + 9 * d, f->cell, sizeof f->cell);
    MDF_PACK_PTR(buf, *L, energy, double)[d] = f->has_energy ? f->energy : NAN;
    MDF_PACK_PTR(buf, *L, fmax, double)[d] = NAN;
    /* A frame from mdf_batch_get_frame carries "virial" only when it is
     * that of its positions: without one, NaN (not computed), not 0. */
    double *w = MDF_PACK_PTR(buf, *L, virial, double) + 9 * d;
    if (!info_doubles(f, "virial", w, 9))
        for (int k = 0; k < 9; k++) w[k] = NAN;
    double ke = 0.0;
    if (info_doubles(f, "kinetic_energy", &ke, 1)) MDF_PACK_PTR(buf, *L, kinetic, double)[d] = ke;
    memcpy(MDF_PACK_PTR(buf, *L, pos, double) + 3 * a0, f->positions, (size_t)(24 * n));
    if (f->velocities) memcpy(MDF_PACK_PTR(buf, *L, vel, double) + 3 * a0, f->velocities, (size_t)(24 * n));
    if (f->forces) memcpy(MDF_PACK_PTR(buf, *L, force, double) + 3 * a0, f->forces, (size_t)(24 * n));
    memcpy(MDF_PACK_PTR(buf, *L, numbers, int32_t) + a0, f->numbers, (size_t)(4 * n));
    for (int64_t a = 0; a < n; a++)
        MDF_PACK_PTR(buf, *L, mass, double)[a0 + a] = f->masses ? f->masses[a] : mdf_element_mass(f->numbers[a]);
    h->nsys++;
    h->natoms += n;
}

mdf_status mdf_sink_write_frames(mdf_sink *s, const mdf_frame *frames, size_t n, mdf_error *err)
{
    if (!s || (!frames && n)) return mdf_error_set(err, MDF_ERR_INVALID, "mdf_sink_write_frames needs a sink and frames");
    if (n == 0) return MDF_OK;
    int64_t natoms = 0;
    for (size_t i = 0; i < n; i++) natoms += frames[i].natoms;
    char *buf = pack_alloc((int64_t)n, natoms > 0 ? natoms : 1);
    if (!buf) return mdf_error_set(err, MDF_ERR_NOMEM, "no memory to pack %zu frames", n);
    mdf_pack_layout L = mdf_pack_layout_of((int64_t)n, natoms > 0 ? natoms : 1);
    for (size_t i = 0; i < n; i++) pack_frame(buf, &L, &frames[i], (int64_t)i);
    mdf_snapshot view = pack_view(buf);
    mdf_status st = mdf_sink_write_snapshot(s, &view, err);
    free(buf);
    return st;
}

/* Member j and the index within it of stored system i of a chain. */
static mdf_sink *locate(mdf_sink *s, int64_t *i)
{
    for (int j = 0; j < s->nmembers; j++) {
        int64_t n = mdf_sink_member_length(s, j);
        if (*i < n) return s->members[j];
        *i -= n;
    }
    return NULL;
}

mdf_status mdf_sink_read(mdf_sink *s, int64_t i, mdf_frame *out, mdf_error *err)
{
    if (!s || !out) return mdf_error_set(err, MDF_ERR_INVALID, "mdf_sink_read needs a sink and a frame");
    int64_t total = mdf_sink_length(s), local = i;
    mdf_sink *m = i >= 0 ? locate(s, &local) : NULL;
    if (!m)
        return mdf_error_set(err, MDF_ERR_INVALID, "the %s holds %lld systems: there is no system %lld", s->label,
                             (long long)total, (long long)i);
    mdf_status st;
    switch (m->kind) {
    case SINK_HOST: {
        mdf_snapshot v = pack_view(m->mem);
        return snapshot_frame(&v, local, out, err);
    }
    case SINK_DEVICE:
        if (mdf_data_acquire(m->store, STARPU_R) != 0)
            return mdf_error_set(err, MDF_ERR_STARPU, "could not bring the %s to the host", m->label);
        {
            mdf_snapshot v = pack_view((const void *)starpu_data_get_local_ptr(m->store));
            st = snapshot_frame(&v, local, out, err);
        }
        starpu_data_release(m->store);
        return st;
    case SINK_HDF5: return mdf_h5s_read_frame(m->h5s, local, out, err);
    case SINK_H5MD: return mdf_h5md_read_frame(m->h5md, local, out, err);
    default: return mdf_error_set(err, MDF_ERR_INVALID, "the %s cannot be read", m->label);
    }
}

mdf_status mdf_sink_member_truncate(mdf_sink *s, int j, int64_t length, mdf_error *err)
{
    mdf_sink *m = s->members[j];
    if (length < 0) return mdf_error_set(err, MDF_ERR_INVALID, "a sink length is >= 0 (got %lld)", (long long)length);
    mdf_sink_wait(m);
    switch (m->kind) {
    case SINK_HOST: pack_truncate(m->mem, length); return MDF_OK;
    case SINK_DEVICE:
        if (mdf_data_acquire(m->store, STARPU_RW) != 0)
            return mdf_error_set(err, MDF_ERR_STARPU, "could not reach the %s", m->label);
        {
            mdf_pack_header *h = (mdf_pack_header *)starpu_data_get_local_ptr(m->store);
            pack_truncate(h, length);
            int64_t n = h->nsys, na = h->natoms;
            starpu_data_release(m->store);
            set_length_mirror(m, n, na);
        }
        return MDF_OK;
    case SINK_HDF5: return mdf_h5s_truncate(m->h5s, length, err);
    case SINK_H5MD: return mdf_h5md_truncate(m->h5md, length, err);
    default: return MDF_OK;
    }
}

mdf_status mdf_sink_truncate(mdf_sink *s, int64_t length, mdf_error *err)
{
    if (!s) return mdf_error_set(err, MDF_ERR_INVALID, "mdf_sink_truncate needs a sink");
    mdf_status st = MDF_OK;
    for (int j = 0; st == MDF_OK && j < s->nmembers; j++) {
        int64_t n = mdf_sink_member_length(s, j);
        int64_t keep = length < n ? length : n;
        st = mdf_sink_member_truncate(s, j, keep, err);
        length -= keep;
    }
    return st;
}

/* Moves the systems of one packed member of src into dst. */
static mdf_status drain_packed(mdf_sink *m, void *buf, mdf_sink *dst, mdf_error *err)
{
    mdf_snapshot v = pack_view(buf);
    int64_t from = 0;
    mdf_status st = MDF_OK;
    for (int j = 0; st == MDF_OK && j < dst->nmembers && from < v.nsys; j++) {
        int64_t k = member_append(dst->members[j], &v, from, err);
        if (k < 0) st = err ? err->code : MDF_ERR_IO;
        else from += k;
    }
    int64_t left = v.nsys - from;
    pack_remove_front(buf, from);
    if (st == MDF_OK && left > 0)
        st = mdf_error_set(err, MDF_ERR_IO, "the %s is full: %lld systems stay in the %s", dst->label,
                           (long long)left, m->label);
    return st;
}

mdf_status mdf_sink_drain(mdf_sink *src, mdf_sink *dst, mdf_error *err)
{
    if (!src || !dst || src == dst) return mdf_error_set(err, MDF_ERR_INVALID, "mdf_sink_drain needs two different sinks");
    mdf_sink_wait(src);
    mdf_sink_wait(dst);
    mdf_status st = MDF_OK;
    for (int j = 0; st == MDF_OK && j < src->nmembers; j++) {
        mdf_sink *m = src->members[j];
        if (m->kind == SINK_HOST) {
            st = drain_packed(m, m->mem, dst, err);
        } else if (m->kind == SINK_DEVICE) {
            if (mdf_data_acquire(m->store, STARPU_RW) != 0)
                return mdf_error_set(err, MDF_ERR_STARPU, "could not bring the %s to the host", m->label);
            mdf_pack_header *h = (mdf_pack_header *)starpu_data_get_local_ptr(m->store);
            st = drain_packed(m, h, dst, err);
            int64_t n = h->nsys, na = h->natoms;
            starpu_data_release(m->store);
            set_length_mirror(m, n, na);
        } else if (mdf_sink_member_length(src, j) > 0) {
            st = mdf_error_set(err, MDF_ERR_UNSUPPORTED,
                               "the %s is a file: read it (mdf_sink_read, mdf_read_hdf5_structures) instead of "
                               "draining it", m->label);
        }
    }
    return st;
}

/* ---- inside a run -------------------------------------------------------------------- */

mdf_status mdf_sink_staging_create(mdf_sink_staging *st, int64_t sys_cap, int64_t atom_cap, mdf_error *err)
{
    memset(st, 0, sizeof *st);
    st->sys_cap = sys_cap > 0 ? sys_cap : 1;
    st->atom_cap = atom_cap > 0 ? atom_cap : 1;
    st->buf_mem = pack_alloc(st->sys_cap, st->atom_cap);
    st->cnt_mem = calloc(MDF_PACK_CNT_N, sizeof(int64_t));
    if (!st->buf_mem || !st->cnt_mem) {
        free(st->buf_mem);
        free(st->cnt_mem);
        memset(st, 0, sizeof *st);
        return mdf_error_set(err, MDF_ERR_NOMEM, "no memory for a snapshot staging buffer");
    }
    mdf_pack_layout L = mdf_pack_layout_of(st->sys_cap, st->atom_cap);
    mdf_blob_register(&st->buf, STARPU_MAIN_RAM, (uintptr_t)st->buf_mem, (size_t)L.total);
    starpu_vector_data_register(&st->cnt, STARPU_MAIN_RAM, (uintptr_t)st->cnt_mem, MDF_PACK_CNT_N, sizeof(int64_t));
    return MDF_OK;
}

void mdf_sink_staging_destroy(mdf_sink_staging *st)
{
    if (st->buf) mdf_data_unregister(st->buf);
    if (st->cnt) mdf_data_unregister(st->cnt);
    free(st->buf_mem);
    free(st->cnt_mem);
    memset(st, 0, sizeof *st);
}

mdf_status mdf_sink_prepare(mdf_sink *s, mdf_sink_fail_fn fail, void *user, mdf_error *err)
{
    if (!starpu_is_initialized()) return mdf_error_set(err, MDF_ERR_STARPU, "sinks in a run need StarPU running");
    s->fail = fail;
    s->fail_user = user;
    for (int j = 0; j < s->nmembers; j++) {
        mdf_sink *m = s->members[j];
        m->fail = fail;
        m->fail_user = user;
        if (m->kind != SINK_DEVICE && !m->token)
            starpu_vector_data_register(&m->token, STARPU_MAIN_RAM, (uintptr_t)&m->token_mem, 1, sizeof(int32_t));
    }
    return MDF_OK;
}

static void report(mdf_sink *s, mdf_status code, const char *msg)
{
    if (s->fail) s->fail(s->fail_user, code, msg);
}

/* CPU task: a host-side member takes what it can of a staging buffer. */
static void host_write_task(void *user, const void *buf, int64_t *cnt, int64_t sys_cap, int64_t atom_cap)
{
    (void)sys_cap;
    (void)atom_cap;
    mdf_sink *m = (mdf_sink *)user;
    if (m->failed || cnt[MDF_PACK_CNT_TAKEN] >= cnt[MDF_PACK_CNT_NSYS]) return;
    mdf_snapshot v = pack_view(buf);
    mdf_error e;
    mdf_error_clear(&e);
    int64_t k = member_append(m, &v, cnt[MDF_PACK_CNT_TAKEN], &e);
    if (k < 0) {
        m->failed = 1;
        report(m, e.code, e.message);
        return;
    }
    cnt[MDF_PACK_CNT_TAKEN] += k;
}

/* CPU task: every system of the staging buffer found a place. */
static void check_task(void *user, const void *buf, int64_t *cnt, int64_t sys_cap, int64_t atom_cap)
{
    (void)buf;
    (void)sys_cap;
    (void)atom_cap;
    mdf_sink *s = (mdf_sink *)user;
    int64_t left = cnt[MDF_PACK_CNT_NSYS] - cnt[MDF_PACK_CNT_TAKEN];
    if (left <= 0) return;
    for (int j = 0; j < s->nmembers; j++)
        if (s->members[j]->failed) return; /* that failure was reported */
    char msg[512];
    snprintf(msg, sizeof msg,
             "the %s is full: %lld of %lld systems of the snapshot at step %lld could not be stored (nothing is "
             "dropped silently: the run stops); give it more room or chain an HDF5 sink after it",
             s->label, (long long)left, (long long)cnt[MDF_PACK_CNT_NSYS], (long long)cnt[MDF_PACK_CNT_STEP]);
    s->failed = 1;
    report(s, MDF_ERR_IO, msg);
}

int mdf_sink_submit(mdf_sink *s, const mdf_sink_staging *st)
{
    int ret = 0;
    for (int j = 0; ret == 0 && j < s->nmembers; j++) {
        mdf_sink *m = s->members[j];
        if (m->kind == SINK_DEVICE) {
            mdf_device_append_args a = {.work = st->atom_cap, .src_sys_cap = st->sys_cap, .src_atom_cap = st->atom_cap,
                                        .dst_sys_cap = m->max_sys, .dst_atom_cap = m->max_atoms};
            ret = mdf_insert_device_append(m->store, m->len, st->buf, st->cnt, &a);
        } else {
            mdf_sink_host_args a = {.work = st->atom_cap, .sys_cap = st->sys_cap, .atom_cap = st->atom_cap,
                                    .fn = host_write_task, .user = m};
            ret = mdf_insert_sink_host(st->buf, st->cnt, m->token, &a);
        }
    }
    if (ret == 0) {
        mdf_sink_host_args a = {.work = 1, .sys_cap = st->sys_cap, .atom_cap = st->atom_cap, .fn = check_task,
                                .user = s};
        ret = mdf_insert_sink_check(st->cnt, &a);
    }
    return ret;
}

/* ---- closing ------------------------------------------------------------------------- */

static mdf_status close_member(mdf_sink *m, mdf_error *err)
{
    mdf_status st = MDF_OK;
    if (m->token || m->store) mdf_sink_wait(m);
    if (m->h5s) {
        st = mdf_h5s_close(m->h5s, err);
        m->h5s = NULL;
    }
    if (m->h5md) {
        mdf_status s2 = mdf_h5md_close(m->h5md, st == MDF_OK ? err : NULL);
        if (st == MDF_OK) st = s2;
        m->h5md = NULL;
    }
    return st;
}

mdf_status mdf_sink_close(mdf_sink *s, mdf_error *err)
{
    if (!s) return MDF_OK;
    mdf_status st = MDF_OK;
    for (int j = 0; j < s->nmembers; j++) {
        mdf_status s2 = close_member(s->members[j], st == MDF_OK ? err : NULL);
        if (st == MDF_OK) st = s2;
    }
    return st;
}

static void destroy_member(mdf_sink *m)
{
    close_member(m, NULL);
    if (m->token) mdf_data_unregister(m->token);
    if (m->store) mdf_data_unregister(m->store);
    if (m->len) mdf_data_unregister(m->len);
    free(m->mem);
    free(m);
}

void mdf_sink_destroy(mdf_sink *s)
{
    if (!s) return;
    if (s->kind == SINK_CHAIN) {
        for (int j = 0; j < s->nmembers; j++) destroy_member(s->members[j]);
        free(s);
        return;
    }
    destroy_member(s);
}

/* ---- by name ---------------------------------------------------------------------- */

typedef struct memory_sink_params {
    int32_t max_systems, max_atoms;
} memory_sink_params;

static const mdf_param_def memory_sink_defs[] = {
    MDF_PARAM_INT(memory_sink_params, max_systems, 1024, 1, INT32_MAX, "", "capacity in systems"),
    MDF_PARAM_INT(memory_sink_params, max_atoms, 262144, 1, INT32_MAX, "", "capacity in atoms"),
    MDF_PARAM_END};

static mdf_status host_create_named(const void *params, mdf_sink **out, mdf_error *err)
{
    const memory_sink_params *p = (const memory_sink_params *)params;
    return mdf_sink_create_host(p->max_systems, p->max_atoms, out, err);
}

static mdf_status device_create_named(const void *params, mdf_sink **out, mdf_error *err)
{
    const memory_sink_params *p = (const memory_sink_params *)params;
    return mdf_sink_create_device(p->max_systems, p->max_atoms, out, err);
}

typedef struct file_sink_params {
    char path[MDF_PARAM_STRING_MAX];
    int32_t compression, append;
} file_sink_params;

static const mdf_param_def file_sink_defs[] = {
    MDF_PARAM_STRING(file_sink_params, path, "file to write (required)"),
    MDF_PARAM_INT(file_sink_params, compression, 0, 0, 9, "", "deflate level (0: none)"),
    MDF_PARAM_BOOL(file_sink_params, append, 0, "append to an existing file instead of replacing it"),
    MDF_PARAM_END};

static mdf_status file_sink_options(const file_sink_params *p, const char *kind, mdf_h5_options *o, mdf_error *err)
{
    if (!p->path[0]) return mdf_error_set(err, MDF_ERR_INVALID, "sink %s needs parameter path (the file to write)", kind);
    mdf_h5_options_init(o);
    o->compression = p->compression;
    o->append = p->append;
    return MDF_OK;
}

static mdf_status hdf5_create_named(const void *params, mdf_sink **out, mdf_error *err)
{
    mdf_h5_options o;
    mdf_status st = file_sink_options((const file_sink_params *)params, "hdf5", &o, err);
    return st != MDF_OK ? st : mdf_sink_create_hdf5(((const file_sink_params *)params)->path, &o, out, err);
}

static mdf_status h5md_create_named(const void *params, mdf_sink **out, mdf_error *err)
{
    mdf_h5_options o;
    mdf_status st = file_sink_options((const file_sink_params *)params, "h5md", &o, err);
    return st != MDF_OK ? st : mdf_sink_create_h5md(((const file_sink_params *)params)->path, &o, out, err);
}

const mdf_sink_def mdf_sink_def_host = {MDFLOW_API_VERSION, "host", "host memory", memory_sink_defs,
                                        sizeof(memory_sink_params), host_create_named};
const mdf_sink_def mdf_sink_def_device = {MDFLOW_API_VERSION, "device",
                                          "memory of the worker that first writes (a GPU's)", memory_sink_defs,
                                          sizeof(memory_sink_params), device_create_named};
const mdf_sink_def mdf_sink_def_hdf5 = {MDFLOW_API_VERSION, "hdf5", "CSR structure datasets (docs/hdf5.md)",
                                        file_sink_defs, sizeof(file_sink_params), hdf5_create_named};
const mdf_sink_def mdf_sink_def_h5md = {MDFLOW_API_VERSION, "h5md", "H5MD 1.0 trajectory", file_sink_defs,
                                        sizeof(file_sink_params), h5md_create_named};
