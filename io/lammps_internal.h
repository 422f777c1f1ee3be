/* mdflow — what the LAMMPS data and dump writers share (io/lammps_data.c,
 * io/lammps_dump.c): atom types, LAMMPS's box form of a cell, and writing a
 * file through path.tmp. */
#ifndef MDFLOW_IO_LAMMPS_INTERNAL_H
#define MDFLOW_IO_LAMMPS_INTERNAL_H

#include <stdio.h>
#include "mdflow/lammps.h"

/* Atom types: the distinct (atomic number, mass) pairs, by number then mass. */
typedef struct mdf_lmp_types {
    int n;
    int32_t *z;
    double *mass;
} mdf_lmp_types;

mdf_status mdf_lmp_types_of(const mdf_frame *frames, size_t n, mdf_lmp_types *t, mdf_error *err);
/* The 1-based type of atom a of f. */
int mdf_lmp_type_of(const mdf_lmp_types *t, const mdf_frame *f, int64_t a);
void mdf_lmp_types_free(mdf_lmp_types *t);

/* A frame's cell as LAMMPS's box. Vectors map as v·m (m = C⁻¹ L, a rotation)
 * when rotated is set, else unchanged. */
typedef struct mdf_lmp_box {
    double lo[3], hi[3];
    double xy, xz, yz;
    int triclinic;   /* a tilt is non-zero */
    int rotated;
    double m[9];
} mdf_lmp_box;

/* name and fi name the file and frame in errors (a left-handed or flat cell). */
mdf_status mdf_lmp_box_of(const mdf_frame *f, const char *name, size_t fi, mdf_lmp_box *b, mdf_error *err);
/* in (3 doubles) in the box's orientation. */
void mdf_lmp_box_vec(const mdf_lmp_box *b, const double *in, double out[3]);

/* Writes path through path.tmp with write(fp, ctx, err), renamed on success;
 * a failure leaves an existing path unchanged. */
typedef mdf_status (*mdf_lmp_writer)(FILE *fp, const void *ctx, mdf_error *err);
mdf_status mdf_lmp_write_file(const char *path, mdf_lmp_writer write, const void *ctx, mdf_error *err);

/* The initial_charges column of f (R:1), or NULL. */
const mdf_extra_column *mdf_lmp_charges(const mdf_frame *f);

#endif
