/* Fuzz target: the checkpoint reader (stages/checkpoint.c), on files the
 * input describes (fuzz_h5gen.h): the root attributes (layout version,
 * structure sizes, the checksum: the right one for a zero byte), and arrays named as a run names them, of bytes or
 * another type, with a valid or odd elem_size attribute (absent, 0,
 * negative, not dividing the length), small stored extents or huge declared
 * ones with nothing stored. Then every array is looked up as a resume does. */
#include "fuzz_h5gen.h"
#include "../../stages/checkpoint.h"
#include "../../dataflow/batch_internal.h"

/* In name order: the checksum runs over the arrays in that order. */
static const char *const names[] = {"batch.layout", "batch.meta", "batch.pos", "batch.sys", "batch.sys_slot",
                                    "batch.vel", "inflight.config", "stage.steps"};

/* The checksum mdflow stores (stages/checkpoint.c, arrays_checksum) of what
 * this target wrote: each present array's name, element size, count and
 * bytes, in name order. */
typedef struct written {
    int present;
    int64_t elem;
    hsize_t rows;
    unsigned char bytes[64];
    size_t nbytes;
} written;

static uint32_t checksum_of(const written *w)
{
    uint32_t crc = 0;
    for (size_t k = 0; k < sizeof names / sizeof names[0]; k++) {
        if (!w[k].present || w[k].elem <= 0 || w[k].rows % (hsize_t)w[k].elem) continue;
        int64_t sizes[2] = {w[k].elem, (int64_t)(w[k].rows / (hsize_t)w[k].elem)};
        crc = mdf_crc32c(crc, names[k], strlen(names[k]) + 1);
        crc = mdf_crc32c(crc, sizes, sizeof sizes);
        for (hsize_t i = 0; i < w[k].rows; i++) /* the values repeat past the first 64 */
            crc = mdf_crc32c(crc, &w[k].bytes[w[k].nbytes ? i % w[k].nbytes : 0], w[k].nbytes ? 1 : 0);
        if (!w[k].nbytes && w[k].rows) {
            unsigned char zero = 0;
            for (hsize_t i = 0; i < w[k].rows; i++) crc = mdf_crc32c(crc, &zero, 1);
        }
    }
    return crc;
}

static void write_file(fz_bytes *b, const char *path)
{
    hid_t file = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    if (file < 0) return;
    int64_t version = fz_int(b, MDF_CKPT_LAYOUT);
    if (fz_u8(b) == 0) fz_attr_int(file, "mdflow_checkpoint", &version, 1);
    int64_t sizes[8] = {(int64_t)sizeof(mdf_atom_info), (int64_t)sizeof(mdf_sys_info), (int64_t)sizeof(mdf_sys_result),
                        (int64_t)sizeof(mdf_sys_state), (int64_t)sizeof(mdf_system_view), (int64_t)sizeof(double),
                        (int64_t)sizeof(void *), 0x01020304};
    unsigned sc = fz_u8(b);
    if (sc > 0 && sc <= 8) sizes[sc - 1] = fz_int(b, sizes[sc - 1]);
    if (fz_u8(b) == 0) fz_attr_int(file, "sizes", sizes, 8);
    written w[sizeof names / sizeof names[0]];
    memset(w, 0, sizeof w);
    for (size_t k = 0; k < sizeof names / sizeof names[0]; k++) {
        if (fz_u8(b) != 0) continue;
        int64_t elem = fz_int(b, !strcmp(names[k], "batch.sys") ? (int64_t)sizeof(mdf_sys_info) : 8);
        int huge = 0;
        hsize_t rows = fz_rows(b, elem > 0 && elem < 4096 ? 4 * (hsize_t)elem : 32, &huge);
        hid_t type = fz_type(fz_u8(b), H5T_NATIVE_UCHAR);
        double vals[64];
        size_t nv = 0;
        for (; nv < 64 && b->at < b->n; nv++) vals[nv] = (double)(w[k].bytes[nv] = (unsigned char)fz_u8(b));
        fz_write_dataset(file, names[k], type, rows, 0, 0, huge, vals, nv);
        w[k].present = !huge;
        w[k].elem = elem;
        w[k].rows = rows;
        w[k].nbytes = nv;
        unsigned ec = fz_u8(b);
        if (ec != 1) {
            hid_t ds = H5Dopen2(file, names[k], H5P_DEFAULT);
            if (ds >= 0) {
                fz_attr_int(ds, "elem_size", &elem, 1);
                H5Dclose(ds);
            }
        }
    }
    int64_t sum = (int64_t)checksum_of(w);
    unsigned cc = fz_u8(b);
    if (cc != 1) {
        if (cc > 1) sum ^= (int64_t)cc;
        fz_attr_int(file, "checksum", &sum, 1);
    }
    H5Fclose(file);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    H5open();
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
    fz_bytes b = {data, size, 0};
    const char *path = fuzz_path(".ckpt.h5");
    write_file(&b, path);
    mdf_ckpt *c = NULL;
    mdf_error err;
    mdf_error_clear(&err);
    mdf_status st = mdf_ckpt_read(path, &c, &err);
    fuzz_check_error(st, &err);
    if (st == MDF_OK) {
        for (size_t k = 0; k < sizeof names / sizeof names[0]; k++) {
            size_t n = 0;
            int64_t v = 0;
            (void)mdf_ckpt_has(c, names[k]);
            mdf_error_clear(&err);
            if (!mdf_ckpt_get(c, names[k], 8, (size_t)-1, &n, &err)) fuzz_check_error(MDF_ERR_INVALID, &err);
            mdf_error_clear(&err);
            fuzz_check_error(mdf_ckpt_get_i64(c, names[k], &v, &err), &err);
        }
        mdf_ckpt_free(c);
    }
    unlink(path);
    return 0;
}
