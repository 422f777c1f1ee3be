/* mdflow — LAMMPS dump files, custom style (mdflow/lammps.h). */
#include "mdflow/lammps.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "lammps_internal.h"

typedef struct dump_writer {
    const char *path;
    const mdf_frame *frames;
    size_t n;
    const mdf_lmp_box *boxes;
    int triclinic; /* any box is: all blocks then give tilts, as LAMMPS's dumps do */
    mdf_lmp_types types;
} dump_writer;

/* The bounds LAMMPS writes for a triclinic box: those of its bounding box. */
static void write_bounds(FILE *fp, const mdf_frame *f, const mdf_lmp_box *b, int triclinic)
{
    char bc[3][3];
    for (int d = 0; d < 3; d++) snprintf(bc[d], sizeof bc[d], "%s", f->pbc[d] ? "pp" : "ff");
    if (!triclinic) {
        fprintf(fp, "ITEM: BOX BOUNDS %s %s %s\n", bc[0], bc[1], bc[2]);
        for (int d = 0; d < 3; d++) fprintf(fp, "%.17g %.17g\n", b->lo[d], b->hi[d]);
        return;
    }
    double xlo = b->lo[0] + fmin(fmin(0.0, b->xy), fmin(b->xz, b->xy + b->xz));
    double xhi = b->hi[0] + fmax(fmax(0.0, b->xy), fmax(b->xz, b->xy + b->xz));
    fprintf(fp, "ITEM: BOX BOUNDS xy xz yz %s %s %s\n", bc[0], bc[1], bc[2]);
    fprintf(fp, "%.17g %.17g %.17g\n", xlo, xhi, b->xy);
    fprintf(fp, "%.17g %.17g %.17g\n", b->lo[1] + fmin(0.0, b->yz), b->hi[1] + fmax(0.0, b->yz), b->xz);
    fprintf(fp, "%.17g %.17g %.17g\n", b->lo[2], b->hi[2], b->yz);
}

/* v (natoms*3 or NULL) of atom a in the box's orientation, times scale. */
static void atom_vector(const mdf_lmp_box *b, const double *v, int64_t a, double scale, double out[3])
{
    if (!v) {
        out[0] = out[1] = out[2] = 0.0;
        return;
    }
    mdf_lmp_box_vec(b, v + 3 * a, out);
    for (int d = 0; d < 3; d++) out[d] *= scale;
}

static void write_block(FILE *fp, const dump_writer *w, size_t i)
{
    const mdf_frame *f = &w->frames[i];
    const char *step = mdf_frame_get_info(f, "mdf_step");
    fprintf(fp, "ITEM: TIMESTEP\n%s\nITEM: NUMBER OF ATOMS\n%lld\n", step ? step : "0", (long long)f->natoms);
    write_bounds(fp, f, &w->boxes[i], w->triclinic);
    fprintf(fp, "ITEM: ATOMS id type x y z vx vy vz fx fy fz\n");
    for (int64_t a = 0; a < f->natoms; a++) {
        double r[3], v[3], force[3];
        atom_vector(&w->boxes[i], f->positions, a, 1.0, r);
        atom_vector(&w->boxes[i], f->velocities, a, MDF_METAL_VELOCITY_PER_INTERNAL, v);
        atom_vector(&w->boxes[i], f->forces, a, 1.0, force);
        fprintf(fp, "%lld %d %.17g %.17g %.17g %.17g %.17g %.17g %.17g %.17g %.17g\n", (long long)a + 1,
                mdf_lmp_type_of(&w->types, f, a), r[0], r[1], r[2], v[0], v[1], v[2], force[0], force[1], force[2]);
    }
}

static mdf_status write_dump_body(FILE *fp, const void *ctx, mdf_error *err)
{
    (void)err;
    const dump_writer *w = ctx;
    for (size_t i = 0; i < w->n; i++) write_block(fp, w, i);
    return MDF_OK;
}

mdf_status mdf_lammps_dump_write(const char *path, const mdf_frame *frames, size_t n, mdf_error *err)
{
    if (!path || (!frames && n)) return mdf_error_set(err, MDF_ERR_INVALID, "mdf_lammps_dump_write needs a path and frames");
    mdf_lmp_box *boxes = calloc(n ? n : 1, sizeof *boxes);
    if (!boxes) return mdf_error_set(err, MDF_ERR_NOMEM, "no memory to write %zu systems to '%s'", n, path);
    dump_writer w = {path, frames, n, boxes, 0, {0}};
    mdf_status st = MDF_OK;
    for (size_t i = 0; st == MDF_OK && i < n; i++) {
        st = mdf_lmp_box_of(&frames[i], path, i, &boxes[i], err);
        w.triclinic |= boxes[i].triclinic;
    }
    if (st == MDF_OK) st = mdf_lmp_types_of(frames, n, &w.types, err);
    if (st == MDF_OK) st = mdf_lmp_write_file(path, write_dump_body, &w, err);
    mdf_lmp_types_free(&w.types);
    free(boxes);
    return st;
}
