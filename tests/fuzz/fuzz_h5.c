/* Fuzz target: the HDF5 structure-dataset reader (io/h5_structures.c), on
 * files the input describes (fuzz_h5gen.h): every dataset of the layout in
 * docs/hdf5.md present or not, of its type or another, with its shape or
 * another (a declared extent of up to 2^41 rows with nothing stored: the
 * reader must not allocate by the extent), with valid or odd values
 * (atom_ptr out of order or past the end, NaN positions, bad atomic numbers),
 * and the group's format and version attributes. */
#include "fuzz_h5gen.h"

enum { PER_ATOM, PER_SYS, PTR };

typedef struct spec {
    const char *name;
    int kind;
    hsize_t width, width2; /* 0: one value per row; cell, virial, stress: 3 x 3 */
    int is_int;
} spec;

static const spec layout[] = {
    {"atom_ptr", PTR, 0, 0, 1},      {"positions", PER_ATOM, 3, 0, 0}, {"velocities", PER_ATOM, 3, 0, 0},
    {"forces", PER_ATOM, 3, 0, 0},   {"masses", PER_ATOM, 0, 0, 0},    {"numbers", PER_ATOM, 0, 0, 1},
    {"cell", PER_SYS, 3, 3, 0},      {"pbc", PER_SYS, 3, 0, 1},        {"energy", PER_SYS, 0, 0, 0},
    {"kinetic_energy", PER_SYS, 0, 0, 0}, {"fmax", PER_SYS, 0, 0, 0},  {"virial", PER_SYS, 3, 3, 0},
    {"stress", PER_SYS, 3, 3, 0},    {"system_id", PER_SYS, 0, 0, 1},  {"step", PER_SYS, 0, 0, 1},
    {"status", PER_SYS, 0, 0, 1},    {"flags", PER_SYS, 0, 0, 1},      {"time", PER_SYS, 0, 0, 0},
};

static hid_t valid_type(const char *name, int is_int)
{
    if (!is_int) return H5T_NATIVE_DOUBLE;
    if (!strcmp(name, "numbers") || !strcmp(name, "status") || !strcmp(name, "flags")) return H5T_NATIVE_INT32;
    if (!strcmp(name, "pbc")) return H5T_NATIVE_INT8;
    return H5T_NATIVE_INT64;
}

/* The valid value of element k (row r, column c) of a dataset. */
static double valid_value(const spec *d, hsize_t r, hsize_t c, const int64_t *ptr)
{
    if (d->kind == PTR) return (double)ptr[r];
    if (!strcmp(d->name, "positions")) return c == 0 ? 3.9 * (double)r : 0.1 * (double)c;
    if (!strcmp(d->name, "cell")) return (c % 4 == 0) ? 40.0 : 0.0;
    if (!strcmp(d->name, "masses")) return 39.948;
    if (!strcmp(d->name, "numbers")) return 18.0;
    if (!strcmp(d->name, "pbc")) return 1.0;
    if (!strcmp(d->name, "system_id")) return (double)r;
    if (!strcmp(d->name, "fmax")) return NAN;
    return 0.0;
}

static void write_file(fz_bytes *b, const char *path)
{
    hid_t file = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    if (file < 0) return;
    hid_t g = H5Gcreate2(file, fz_u8(b) == 0 ? "structures" : "other", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    if (g >= 0) {
        unsigned f = fz_u8(b);
        fz_attr_str(g, f == 1 ? "form" : "format", f == 0 ? "mdflow-structures" : "mdflow-structure");
        int64_t version = fz_int(b, 1);
        if (fz_u8(b) == 0) fz_attr_int(g, "version", &version, 1);
        int64_t nsys = 1 + fz_u8(b) % 4, natoms = 0, ptr[5] = {0};
        for (int64_t s = 0; s < nsys; s++) ptr[s + 1] = (natoms += 1 + fz_u8(b) % 5);
        for (size_t k = 0; k < sizeof layout / sizeof layout[0]; k++) {
            const spec *d = &layout[k];
            if (fz_u8(b) != 0) continue; /* absent */
            hsize_t valid_rows = d->kind == PER_ATOM ? (hsize_t)natoms : d->kind == PER_SYS ? (hsize_t)nsys : (hsize_t)nsys + 1;
            int huge = 0;
            hsize_t rows = fz_rows(b, valid_rows, &huge);
            unsigned wc = fz_u8(b);
            hsize_t width = wc == 0 ? d->width : (hsize_t)(wc % 10), width2 = wc == 0 ? d->width2 : (hsize_t)(wc / 10 % 4);
            hid_t type = fz_type(fz_u8(b), valid_type(d->name, d->is_int));
            double vals[64];
            size_t nv = 0;
            if (!huge)
                for (hsize_t r = 0; r < rows && nv < 64; r++)
                    for (hsize_t c = 0; c < (width ? width : 1) * (width2 ? width2 : 1) && nv < 64; c++)
                        vals[nv++] = d->is_int ? (double)fz_int(b, (int64_t)valid_value(d, r < valid_rows ? r : 0, c, ptr))
                                               : fz_double(b, valid_value(d, r, c, ptr));
            /* More than 64 elements repeat the first ones. */
            fz_write_dataset(g, d->name, type, rows, width, width2, huge, vals, nv);
        }
        H5Gclose(g);
    }
    H5Fclose(file);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    H5open();
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
    fz_bytes b = {data, size, 0};
    const char *path = fuzz_path(".h5");
    write_file(&b, path);
    mdf_frame_list frames;
    mdf_frame_list_init(&frames);
    mdf_error err;
    mdf_error_clear(&err);
    fuzz_check_error(mdf_read_hdf5_structures(path, &frames, &err), &err);
    mdf_frame_list_free(&frames);
    unlink(path);
    return 0;
}
