/* mdflow — one atomic system on the host (a "frame"), as read from or
 * written to a structure file, and a growable list of them.
 *
 * Frames are the currency between files and batches: io/ fills them,
 * mdf_batch_create() packs them into StarPU-registered shards, and
 * mdf_batch_get_frame() unpacks one system back. */
#ifndef MDFLOW_FRAME_H
#define MDFLOW_FRAME_H

#include <stddef.h>
#include <stdint.h>
#include "mdflow/error.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A key=value pair of a frame's comment line that mdflow does not interpret;
 * kept verbatim (value as written, quotes removed) so files round-trip. */
typedef struct mdf_info_entry {
    char *key;
    char *value;
} mdf_info_entry;

/* A per-atom column mdflow does not interpret (extxyz Properties entry),
 * kept as text tokens so files round-trip: batches keep each system's and
 * mdf_batch_get_frame() gives them back ("fixed" and "move_mask" updated to
 * the atoms frozen now). */
typedef struct mdf_extra_column {
    char *name;
    char type;        /* 'R', 'I', 'S' or 'L', as in extxyz */
    int ncols;
    char **tokens;    /* natoms * ncols tokens, row-major */
} mdf_extra_column;

typedef struct mdf_frame {
    int64_t natoms;
    double *positions;   /* natoms*3, Å */
    double *velocities;  /* natoms*3, Å per internal time unit (as ASE); NULL if absent */
    double *forces;      /* natoms*3, eV/Å; NULL if absent */
    double *masses;      /* natoms, amu; NULL means standard atomic masses */
    int32_t *numbers;    /* natoms atomic numbers */
    double cell[9];      /* lattice vectors as rows, Å */
    int pbc[3];
    int has_cell;
    double energy;       /* eV */
    int has_energy;
    size_t ninfo;
    mdf_info_entry *info;
    size_t nextra;
    mdf_extra_column *extra;
} mdf_frame;

/* Velocities are stored in frames and batches in internal units
 * (Å per sqrt(amu Å²/eV)), the unit of ASE's atoms.get_velocities(). The
 * extxyz reader accepts a "velocities" column (exact) or ASE's "momenta"
 * column (divided by the masses); the writer writes "velocities", which
 * round-trips exactly but which ASE keeps as a plain array
 * (atoms.arrays["velocities"]) rather than as momenta, with the info key
 * velocities_unit=sqrt(eV/amu) naming that unit (the reader refuses
 * another). */

typedef struct mdf_frame_list {
    size_t count;
    size_t capacity;
    mdf_frame *frames;
} mdf_frame_list;

/* Allocates the per-atom arrays of a frame for natoms atoms (positions and
 * numbers; velocities/forces/masses when the flags ask). The frame is
 * zeroed first: whatever it held is not freed. */
mdf_status mdf_frame_alloc(mdf_frame *f, int64_t natoms, int with_velocities,
                           int with_forces, int with_masses, mdf_error *err);
/* Deep copy into dst, which is overwritten without being freed; dst is
 * untouched when the copy fails. */
mdf_status mdf_frame_copy(mdf_frame *dst, const mdf_frame *src, mdf_error *err);
/* Frees everything the frame owns and zeroes it. */
void mdf_frame_free(mdf_frame *f);
/* Sets (or replaces) an info key; copies both strings. */
mdf_status mdf_frame_set_info(mdf_frame *f, const char *key, const char *value,
                              mdf_error *err);
/* Appends deep copies of src's extra columns to dst's; both frames have the
 * same atom count. On failure dst may hold some of the copies (freed with
 * it). */
mdf_status mdf_frame_append_extras(mdf_frame *dst, const mdf_frame *src, mdf_error *err);
/* Returns the value of an info key, or NULL. */
const char *mdf_frame_get_info(const mdf_frame *f, const char *key);

void mdf_frame_list_init(mdf_frame_list *l);
/* Appends a frame, taking ownership of its arrays (src is zeroed). */
mdf_status mdf_frame_list_push(mdf_frame_list *l, mdf_frame *src, mdf_error *err);
void mdf_frame_list_free(mdf_frame_list *l);

/* Standard atomic mass (amu, as in ASE) of element z, or 0 for unknown z
 * and for z = 0 ("X", which ASE gives mass 1): batches refuse such atoms. */
double mdf_element_mass(int z);
/* Chemical symbol of z ("X" for 0), or NULL outside 0..118. */
const char *mdf_element_symbol(int z);
/* Atomic number of a symbol (case-sensitive, as ASE), or -1 if unknown. */
int mdf_element_number(const char *symbol);

#ifdef __cplusplus
}
#endif
#endif
