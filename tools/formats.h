/* mdflow — structure file formats by name: the extension of a path, or an
 * explicit --format, picks the reader or writer (never a guess from the
 * contents). Used by md and relax (--input, --output) and by workflows
 * (input, output.structures). */
#ifndef MDFLOW_TOOLS_FORMATS_H
#define MDFLOW_TOOLS_FORMATS_H

#include <stddef.h>
#include <stdint.h>
#include "mdflow/error.h"
#include "mdflow/frame.h"

typedef enum fmt_kind {
    FMT_XYZ = 1,      /* .xyz .extxyz: extended XYZ */
    FMT_H5,           /* .h5 .hdf5: CSR structure datasets (docs/hdf5.md) */
    FMT_H5MD,         /* .h5md: an H5MD trajectory */
    FMT_LAMMPS_DATA,  /* .data .lmp: LAMMPS data file */
    FMT_LAMMPS_DUMP   /* .dump .lammpstrj: LAMMPS dump, custom style */
} fmt_kind;

/* The names --format takes, as listed in messages. */
/* At most this many elements in --lammps-types. */
#define FMT_TYPES_MAX 64

#define FMT_NAMES "xyz, h5, h5md, lammps-data, lammps-dump"

/* The format of path: forced (what forced_option, e.g. "--format", gave) if
 * not NULL, else its extension. option names the path in errors
 * ("--output"); an unknown extension or name is MDF_ERR_INVALID listing the
 * formats (and forced_option, when there is one). */
mdf_status fmt_choose(const char *option, const char *path, const char *forced, const char *forced_option,
                      fmt_kind *out, mdf_error *err);
/* MDF_ERR_INVALID, naming the readable formats, unless mdflow reads k. */
mdf_status fmt_check_input(const char *option, const char *path, fmt_kind k, mdf_error *err);
const char *fmt_name(fmt_kind k);

/* Parses "Cu,Ni" (--lammps-types) into atomic numbers. */
mdf_status fmt_parse_types(const char *text, int32_t *z, int max, int *n, mdf_error *err);

/* Reads path in format k (xyz, h5, lammps-data; the others are refused,
 * naming the readable ones). type_z: the elements of LAMMPS types 1.. . */
mdf_status fmt_read(const char *option, const char *path, fmt_kind k, const int32_t *type_z, int ntype_z,
                    mdf_frame_list *out, mdf_error *err);

/* Before a run: can format k hold nframes systems at path? (A LAMMPS data
 * file holds one; several need "{id}" in the name: one file per system.) */
mdf_status fmt_check_count(const char *option, const char *path, fmt_kind k, size_t nframes, mdf_error *err);

/* Writes the frames (replacing path). compression: deflate level of HDF5. */
mdf_status fmt_write(const char *path, fmt_kind k, const mdf_frame *frames, size_t n, int compression,
                     mdf_error *err);

#endif
