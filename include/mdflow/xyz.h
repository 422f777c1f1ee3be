/* mdflow — extended XYZ (extxyz) files, compatible with ASE's ase.io.extxyz.
 *
 * A file holds one or more frames, each:
 *   line 1: the number of atoms
 *   line 2: key=value pairs, e.g.
 *     Lattice="ax ay az bx by bz cx cy cz" Properties=species:S:1:pos:R:3
 *     energy=-12.5 pbc="T T F" note="any text"
 *   then one line per atom with the columns Properties announces.
 *
 * Reading: Lattice gives the cell rows (has_cell = 1, and pbc defaults to
 * T T T as in ASE); pbc, energy and Properties are interpreted; every other
 * key lands in the frame's info (value without its quotes; a bare key reads
 * as "T", as in ASE). A comment line without any key=value pair is plain XYZ
 * and is ignored. Recognised columns: species (S:1) or Z (I:1), pos (R:3),
 * velocities or vel (R:3), momenta (R:3, converted to velocities with the
 * masses column or the standard masses), forces (R:3), masses (R:1); any
 * other column is kept verbatim as an mdf_extra_column (batches read
 * frozen atoms from "fixed" and ASE's "move_mask", L:1 or L:3: see
 * mdf_batch_set_frozen). velocities_unit, which the writer
 * writes, must be "sqrt(eV/amu)" (ASE's unit, that of the velocities
 * column): another value is an error. Without Properties,
 * the columns are species:S:1:pos:R:3. Symbols are capitalised as ASE does
 * ("si" reads as Si).
 *
 * Writing: the same layout as ASE (velocities_unit=sqrt(eV/amu) after
 * energy when the frame has velocities), with numbers in 16 significant digits
 * (trailing zeros dropped: 0.1 is "0.1"), or 17 where 16 would not read back
 * to the identical double, so a write/read round trip is exact.
 *
 * Errors name the file and the 1-based line, say what is wrong and what to
 * change. */
#ifndef MDFLOW_XYZ_H
#define MDFLOW_XYZ_H

#include <stddef.h>
#include <stdio.h>
#include "mdflow/error.h"
#include "mdflow/frame.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Reads every frame of the file at path and appends them to out (which the
 * caller initialised with mdf_frame_list_init). On error the frames appended
 * before the faulty one stay in out; the caller decides whether to keep them. */
mdf_status mdf_xyz_read(const char *path, mdf_frame_list *out, mdf_error *err);

/* As mdf_xyz_read, from an open stream; name_for_errors is how messages
 * refer to it (e.g. "<stdin>"; NULL reads as "<stream>"). */
mdf_status mdf_xyz_read_stream(FILE *fp, const char *name_for_errors,
                               mdf_frame_list *out, mdf_error *err);

/* Writes n frames to path. With append = 0 the file is replaced atomically
 * (written to "<path>.tmp", then renamed), so an existing file is never left
 * half-overwritten; with append = 1 the frames are appended in place. All
 * frames are validated before anything is written. */
mdf_status mdf_xyz_write(const char *path, const mdf_frame *frames, size_t n,
                         int append, mdf_error *err);

/* Writes n frames to an open stream (not closed; flushed and checked for
 * write errors). */
mdf_status mdf_xyz_write_stream(FILE *fp, const mdf_frame *frames, size_t n,
                                mdf_error *err);

#ifdef __cplusplus
}
#endif
#endif
