/* mdflow — LAMMPS files: data files (read_data / write_data) and dump files.
 *
 * Units are LAMMPS's `metal`: Å, amu, and velocities in Å/ps. Frames keep
 * velocities in ASE's internal unit (mdflow/frame.h), so the files convert:
 * v_metal = v_internal · 1000 · MDF_FS_INTERNAL (1 ps = 1000 fs), exactly the
 * factor of ASE's convert(v, "velocity", "ASE", "metal").
 *
 * Data files (one system each), atom_style atomic or charge:
 *   - Box: xlo xhi, ylo yhi, zlo zhi and, for triclinic boxes, xy xz yz. The
 *     frame's cell rows are a = (xhi-xlo, 0, 0), b = (xy, yhi-ylo, 0),
 *     c = (xz, yz, zhi-zlo). Positions are kept as written (the box origin is
 *     not subtracted, as ASE's reader does); image flags, when present, are
 *     applied: r + ix a + iy b + iz c.
 *   - pbc: a data file does not say which directions are periodic; the
 *     reader takes T T T, unless the title line holds pbc="T T F" (what
 *     mdflow's writer puts there).
 *   - Types to elements, first that applies: the caller's list (type_z),
 *     the element symbol in a comment after the mass ("1 63.546 # Cu", as
 *     mdflow writes), the standard element mass nearest the Masses entry
 *     when within 0.01 amu. Otherwise an error names the file, the type and
 *     the fixes. The Masses entries become the atoms' masses.
 *   - Atoms: "id type x y z [ix iy iz]" (atomic) or "id type q x y z [ix iy
 *     iz]" (charge), the style from the "Atoms # style" comment or else the
 *     number of columns. Atoms are ordered by id. Charges go into the extra
 *     per-atom column initial_charges (R:1), ASE's name for them.
 *   - Velocities: "id vx vy vz", Å/ps. Other sections (Pair Coeffs, …) are
 *     skipped.
 *   Writing: types are the distinct (element, mass) pairs of the frame by
 *   atomic number, each mass with its element in a comment; atom_style
 *   charge when the frame has an initial_charges column, else atomic;
 *   numbers in %.17g. LAMMPS needs a's along x and b in the xy plane: a cell
 *   not in that form is rotated into it (positions, velocities and forces
 *   with it; the title line says so), which keeps every distance and angle.
 *   Tilts larger than half the box length are reduced (the same lattice,
 *   positions untouched) as LAMMPS refuses them. A system without a cell
 *   gets the atoms' extent plus 10 Å on each side as its box.
 *
 * Dump files (write only): LAMMPS's custom style, one block per frame:
 *   ITEM: TIMESTEP (the info key mdf_step, else 0), ITEM: NUMBER OF ATOMS,
 *   ITEM: BOX BOUNDS [xy xz yz] pp|ff ×3 (bounds as LAMMPS writes them;
 *   the tilted form in every block when any box is triclinic, as in LAMMPS's
 *   own dumps, which read_dump … box yes needs to reset the tilts),
 *   ITEM: ATOMS id type x y z vx vy vz fx fy fz (velocities in Å/ps, zero
 *   when the frame has none; forces eV/Å, zero when absent). Types as in
 *   data files, over all frames. Cells are put in LAMMPS's orientation as
 *   for data files. */
#ifndef MDFLOW_LAMMPS_H
#define MDFLOW_LAMMPS_H

#include <stddef.h>
#include <stdint.h>
#include "mdflow/error.h"
#include "mdflow/frame.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Å/ps per internal velocity unit (Å per sqrt(amu Å²/eV)). */
#define MDF_METAL_VELOCITY_PER_INTERNAL (1000.0 * 0.09822694788464063)

/* Reads the data file at path as one frame appended to out. type_z (may be
 * NULL) gives the atomic number of types 1..ntype_z. */
mdf_status mdf_lammps_data_read(const char *path, const int32_t *type_z, int ntype_z, mdf_frame_list *out,
                                mdf_error *err);

/* Writes one frame as a data file (replaced atomically: path.tmp, renamed). */
mdf_status mdf_lammps_data_write(const char *path, const mdf_frame *f, mdf_error *err);

/* Writes n frames as one custom-style dump file (replaced atomically). */
mdf_status mdf_lammps_dump_write(const char *path, const mdf_frame *frames, size_t n, mdf_error *err);

#ifdef __cplusplus
}
#endif
#endif
