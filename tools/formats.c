/* mdflow — structure file formats by name (tools/formats.h). */
#include "formats.h"

#include <stdio.h>
#include <string.h>

#include "mdflow/lammps.h"
#include "mdflow/sink.h"
#include "mdflow/xyz.h"

static const struct {
    const char *ext;
    fmt_kind kind;
} extensions[] = {{".xyz", FMT_XYZ},          {".extxyz", FMT_XYZ},      {".h5", FMT_H5},
                  {".hdf5", FMT_H5},          {".h5md", FMT_H5MD},       {".data", FMT_LAMMPS_DATA},
                  {".lmp", FMT_LAMMPS_DATA},  {".dump", FMT_LAMMPS_DUMP}, {".lammpstrj", FMT_LAMMPS_DUMP}};

static const char *const names[] = {NULL, "xyz", "h5", "h5md", "lammps-data", "lammps-dump"};

const char *fmt_name(fmt_kind k) { return k >= FMT_XYZ && k <= FMT_LAMMPS_DUMP ? names[k] : "?"; }

static int ends_with(const char *s, const char *tail)
{
    size_t n = strlen(s), m = strlen(tail);
    return n > m && strcmp(s + n - m, tail) == 0;
}

mdf_status fmt_choose(const char *option, const char *path, const char *forced, const char *forced_option,
                      fmt_kind *out, mdf_error *err)
{
    if (forced) {
        for (int k = FMT_XYZ; k <= FMT_LAMMPS_DUMP; k++)
            if (!strcmp(forced, names[k])) {
                *out = (fmt_kind)k;
                return MDF_OK;
            }
        return mdf_error_set(err, MDF_ERR_INVALID, "%s %s: unknown format for %s '%s': the formats are " FMT_NAMES,
                             forced_option, forced, option, path);
    }
    for (size_t k = 0; k < sizeof extensions / sizeof extensions[0]; k++)
        if (ends_with(path, extensions[k].ext)) {
            *out = extensions[k].kind;
            return MDF_OK;
        }
    char hint[160] = "";
    if (forced_option) snprintf(hint, sizeof hint, ", or name the format with %s NAME (" FMT_NAMES ")", forced_option);
    return mdf_error_set(err, MDF_ERR_INVALID,
                         "%s '%s': the format cannot be told from the name: end it in .xyz or .extxyz (extended "
                         "XYZ), .h5 (HDF5 structures), .h5md (H5MD), .data or .lmp (LAMMPS data), .dump or "
                         ".lammpstrj (LAMMPS dump)%s", option, path, hint);
}

mdf_status fmt_parse_types(const char *text, int32_t *z, int max, int *n, mdf_error *err)
{
    *n = 0;
    const char *p = text;
    while (*p) {
        char sym[8];
        size_t len = strcspn(p, ",");
        int e = -1;
        if (len > 0 && len < sizeof sym) {
            memcpy(sym, p, len);
            sym[len] = '\0';
            e = mdf_element_number(sym);
        }
        if (e < 1)
            return mdf_error_set(err, MDF_ERR_INVALID, "--lammps-types '%s': '%.*s' is not an element symbol: give "
                                 "the elements of types 1, 2, … separated by commas, e.g. Cu,Ni", text, (int)len, p);
        if (*n == max) return mdf_error_set(err, MDF_ERR_INVALID, "--lammps-types: more than %d types", max);
        z[(*n)++] = e;
        p += len + (p[len] == ',');
    }
    if (*n == 0) return mdf_error_set(err, MDF_ERR_INVALID, "--lammps-types is empty: give elements, e.g. Cu,Ni");
    return MDF_OK;
}

mdf_status fmt_check_input(const char *option, const char *path, fmt_kind k, mdf_error *err)
{
    if (k == FMT_XYZ || k == FMT_H5 || k == FMT_LAMMPS_DATA) return MDF_OK;
    return mdf_error_set(err, MDF_ERR_INVALID, "%s '%s': mdflow cannot read %s files; inputs are xyz (.xyz, .extxyz), "
                         "h5 (.h5, .hdf5) and lammps-data (.data, .lmp)", option, path, fmt_name(k));
}

mdf_status fmt_read(const char *option, const char *path, fmt_kind k, const int32_t *type_z, int ntype_z,
                    mdf_frame_list *out, mdf_error *err)
{
    switch (k) {
    case FMT_XYZ: return mdf_xyz_read(path, out, err);
    case FMT_H5: return mdf_read_hdf5_structures(path, out, err);
    case FMT_LAMMPS_DATA: return mdf_lammps_data_read(path, type_z, ntype_z, out, err);
    default: return fmt_check_input(option, path, k, err);
    }
}

mdf_status fmt_check_count(const char *option, const char *path, fmt_kind k, size_t nframes, mdf_error *err)
{
    if (k != FMT_LAMMPS_DATA || nframes <= 1 || strstr(path, "{id}")) return MDF_OK;
    return mdf_error_set(err, MDF_ERR_INVALID, "%s '%s': a LAMMPS data file holds one system and there are %zu: put "
                         "{id} in the name for one file per system (out_{id}.data), or choose another format",
                         option, path, nframes);
}

static mdf_status write_sink(mdf_sink *sink, const mdf_frame *frames, size_t n, mdf_error *err)
{
    mdf_status st = mdf_sink_write_frames(sink, frames, n, err);
    mdf_status cs = mdf_sink_close(sink, st == MDF_OK ? err : NULL);
    mdf_sink_destroy(sink);
    return st == MDF_OK ? cs : st;
}

static mdf_status write_hdf5(const char *path, fmt_kind k, const mdf_frame *frames, size_t n, int compression,
                             mdf_error *err)
{
    mdf_h5_options o;
    mdf_h5_options_init(&o);
    o.compression = compression;
    mdf_sink *sink = NULL;
    mdf_status st = k == FMT_H5MD ? mdf_sink_create_h5md(path, &o, &sink, err)
                                  : mdf_sink_create_hdf5(path, &o, &sink, err);
    return st == MDF_OK ? write_sink(sink, frames, n, err) : st;
}

/* One data file per system: "{id}" replaced by its id (else its index). */
static mdf_status write_data_files(const char *path, const mdf_frame *frames, size_t n, mdf_error *err)
{
    const char *hole = strstr(path, "{id}");
    if (!hole) return n == 1 ? mdf_lammps_data_write(path, frames, err) : fmt_check_count("output", path, FMT_LAMMPS_DATA, n, err);
    mdf_status st = MDF_OK;
    for (size_t i = 0; st == MDF_OK && i < n; i++) {
        const char *id = mdf_frame_get_info(&frames[i], "mdf_system_id");
        char idx[32], one[4096];
        snprintf(idx, sizeof idx, "%zu", i);
        if (snprintf(one, sizeof one, "%.*s%s%s", (int)(hole - path), path, id ? id : idx, hole + 4) >= (int)sizeof one)
            return mdf_error_set(err, MDF_ERR_INVALID, "output '%s': the name of system %s's file is longer than %zu "
                                 "characters: give a shorter path", path, id ? id : idx, sizeof one - 1);
        st = mdf_lammps_data_write(one, &frames[i], err);
    }
    return st;
}

mdf_status fmt_write(const char *path, fmt_kind k, const mdf_frame *frames, size_t n, int compression,
                     mdf_error *err)
{
    switch (k) {
    case FMT_H5:
    case FMT_H5MD: return write_hdf5(path, k, frames, n, compression, err);
    case FMT_LAMMPS_DATA: return write_data_files(path, frames, n, err);
    case FMT_LAMMPS_DUMP: return mdf_lammps_dump_write(path, frames, n, err);
    default: return mdf_xyz_write(path, frames, n, 0, err);
    }
}
