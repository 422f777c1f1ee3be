/* mdflow — trajectories of mdflow md and relax (tools/trajectory.h). */
#include <stdlib.h>
#include "formats.h"
#include "trajectory.h"
#include "workflow.h"

/* What the xyz buffer may take before it asks for an HDF5 file instead:
 * a host sink keeps about 100 bytes per atom and frame. */
#define TRAJ_XYZ_MAX_BYTES ((int64_t)4 << 30)
#define TRAJ_XYZ_BYTES_PER_ATOM 100

traj_format trajectory_format_of(const char *path)
{
    int h5 = wf_hdf5_kind(path); /* the names output.snapshots takes */
    if (h5) return h5 == 2 ? TRAJ_H5MD : TRAJ_H5;
    fmt_kind k;
    mdf_error unused; /* not extended XYZ by its name: TRAJ_NONE, which trajectory_check reports */
    if (fmt_choose("--trajectory", path, NULL, NULL, &k, &unused) == MDF_OK && k == FMT_XYZ) return TRAJ_XYZ;
    return TRAJ_NONE;
}

mdf_status trajectory_check(const char *path, int64_t every, mdf_error *err)
{
    if (!path) return MDF_OK;
    if (every < 1) return mdf_error_set(err, MDF_ERR_INVALID, "--trajectory-every must be >= 1 (got %lld)", (long long)every);
    if (trajectory_format_of(path) == TRAJ_NONE)
        return mdf_error_set(err, MDF_ERR_INVALID, "--trajectory '%s': the name gives no format: use FILE.h5md (H5MD; "
                             "a name with {id}: one H5MD file per system), FILE.h5 (HDF5 structure datasets) or "
                             "FILE.xyz (extended XYZ)", path);
    return MDF_OK;
}

static mdf_status open_xyz_buffer(runner_trajectory *t, const mdf_batch *b, int64_t max_steps, mdf_error *err)
{
    /* every `every` steps from 0, a converged state, a final one */
    t->frames_max = max_steps / t->every + 3;
    int64_t nsys = (int64_t)mdf_batch_nsystems(b), natoms = mdf_batch_natoms(b);
    if (natoms > TRAJ_XYZ_MAX_BYTES / TRAJ_XYZ_BYTES_PER_ATOM / t->frames_max)
        return mdf_error_set(err, MDF_ERR_INVALID, "--trajectory '%s': %lld frames of %lld atoms would take over %lld "
                             "GiB of memory until the run ends (extended XYZ is written then): write FILE.h5md, "
                             "which is written as the run goes, or raise --trajectory-every", t->path,
                             (long long)t->frames_max, (long long)natoms, (long long)(TRAJ_XYZ_MAX_BYTES >> 30));
    return mdf_sink_create_host(nsys * t->frames_max, natoms * t->frames_max, &t->sink, err);
}

mdf_status trajectory_open(runner_trajectory *t, const mdf_batch *b, int64_t max_steps, mdf_error *err)
{
    t->sink = NULL;
    if (!t->path) return MDF_OK;
    t->format = trajectory_format_of(t->path);
    mdf_h5_options o;
    mdf_h5_options_init(&o);
    switch (t->format) {
    case TRAJ_H5MD: return mdf_sink_create_h5md(t->path, &o, &t->sink, err);
    case TRAJ_H5: return mdf_sink_create_hdf5(t->path, &o, &t->sink, err);
    case TRAJ_XYZ: return open_xyz_buffer(t, b, max_steps, err);
    default: return trajectory_check(t->path, t->every, err);
    }
}

mdf_status trajectory_add_hooks(mdf_stage *s, mdf_sink *sink, int64_t every, int exit_hook, mdf_error *err)
{
    mdf_hook *h = NULL;
    mdf_status st = mdf_hook_create_snapshot(sink, every, &h, err);
    if (st == MDF_OK) st = mdf_stage_add_hook(s, h, err);
    if (st == MDF_OK && exit_hook) {
        st = mdf_hook_create_converged_snapshot(sink, &h, err);
        if (st == MDF_OK) st = mdf_stage_add_hook(s, h, err);
    }
    return st;
}

mdf_status trajectory_finish(runner_trajectory *t, const mdf_batch *b, double dt_fs, mdf_error *err)
{
    if (!t->sink) return MDF_OK;
    size_t n = mdf_batch_nsystems(b), missing = 0;
    uint8_t *mask = calloc(n ? n : 1, 1);
    if (!mask) return mdf_error_set(err, MDF_ERR_NOMEM, "no memory for the trajectory's last frames");
    mdf_status st = MDF_OK;
    for (size_t i = 0; st == MDF_OK && i < n; i++) {
        mdf_system_view v;
        st = mdf_batch_get_system(b, i, &v, err);
        mask[i] = st == MDF_OK && v.status == 0 && v.step % t->every != 0;
        missing += mask[i];
    }
    if (st == MDF_OK && missing) st = mdf_sink_write(t->sink, b, mask, dt_fs, err);
    free(mask);
    return st;
}

static int64_t info_int(const mdf_frame *f, const char *key)
{
    const char *v = mdf_frame_get_info(f, key);
    return v ? strtoll(v, NULL, 10) : 0;
}

static int by_step_then_id(const void *pa, const void *pb)
{
    const mdf_frame *a = pa, *b = pb;
    int64_t sa = info_int(a, "mdf_step"), sb = info_int(b, "mdf_step");
    if (sa != sb) return sa < sb ? -1 : 1;
    int64_t ia = info_int(a, "mdf_system_id"), ib = info_int(b, "mdf_system_id");
    return ia < ib ? -1 : ia > ib;
}

/* The buffered frames, ordered by step, then system id (the hooks store
 * them in the order the shards' tasks ran). */
static mdf_status write_xyz(runner_trajectory *t, mdf_error *err)
{
    int64_t n = mdf_sink_length(t->sink);
    mdf_frame *frames = calloc((size_t)(n > 0 ? n : 1), sizeof *frames);
    if (!frames) return mdf_error_set(err, MDF_ERR_NOMEM, "no memory to write the trajectory '%s'", t->path);
    mdf_status st = MDF_OK;
    int64_t got = 0;
    for (; st == MDF_OK && got < n; got++) st = mdf_sink_read(t->sink, got, &frames[got], err);
    if (st != MDF_OK) got--; /* the failed read left nothing to free */
    if (st == MDF_OK) {
        qsort(frames, (size_t)n, sizeof *frames, by_step_then_id);
        mdf_runtime_pause(); /* host work only: the idle workers sleep meanwhile */
        st = mdf_xyz_write(t->path, frames, (size_t)n, 0, err);
        mdf_runtime_resume();
    }
    for (int64_t i = 0; i < got; i++) mdf_frame_free(&frames[i]);
    free(frames);
    return st;
}

mdf_status trajectory_close(runner_trajectory *t, mdf_status st, mdf_error *err)
{
    if (!t->sink) return st;
    mdf_error local;
    mdf_error_clear(&local);
    mdf_error *e = st == MDF_OK ? err : &local; /* keep the run's own error */
    mdf_status ws = t->format == TRAJ_XYZ ? write_xyz(t, e) : MDF_OK;
    mdf_status cs = mdf_sink_close(t->sink, ws == MDF_OK ? e : NULL);
    mdf_sink_destroy(t->sink);
    t->sink = NULL;
    if (st != MDF_OK) return st;
    return ws != MDF_OK ? ws : cs;
}
