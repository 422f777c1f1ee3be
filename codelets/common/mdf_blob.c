/* mdflow — byte blobs as StarPU vectors, a task's size from its work, and
 * the bytes StarPU moved: the pieces of the codelet glue that need StarPU
 * alone (mdflow-simulate links this file with mdf_perfmodel.c, without
 * libmdflow). */
#include <math.h>
#include <string.h>
#include "mdf_codelet.h"

static size_t blob_unit(size_t bytes)
{
    size_t unit = 1;
    while (bytes / unit > UINT32_MAX || (bytes / unit == UINT32_MAX && bytes % unit)) unit *= 2;
    return unit;
}

size_t mdf_blob_padded(size_t bytes)
{
    size_t unit = blob_unit(bytes);
    return (bytes + unit - 1) / unit * unit;
}

void mdf_blob_register(starpu_data_handle_t *handle, int home, uintptr_t ptr, size_t bytes)
{
    size_t unit = blob_unit(bytes);
    starpu_vector_data_register(handle, home, ptr, (uint32_t)((bytes + unit - 1) / unit), unit);
}

static int64_t task_work(const struct starpu_task *task)
{
    int64_t work = 0;
    if (task->cl_arg && task->cl_arg_size >= sizeof(int64_t)) memcpy(&work, task->cl_arg, sizeof work);
    return work;
}

size_t mdf_size_by_work(struct starpu_task *task, unsigned nimpl)
{
    (void)nimpl;
    /* At least 1: a task with nothing to do still costs its launch, and
     * StarPU's regression models fit log(size). */
    int64_t work = task_work(task);
    return work > 1 ? (size_t)work : 1u;
}

uint32_t mdf_footprint_by_work(struct starpu_task *task)
{
    int64_t work = task_work(task);
    /* ~10% wide bins: log(work)/log(1.1). */
    uint32_t bin = work > 0 ? (uint32_t)lrint(log((double)work) / log(1.1)) : 0u;
    return starpu_hash_crc32c_be(bin, 0);
}

long long mdf_bus_bytes(long long *transfers)
{
    long long bytes = 0, count = 0;
    int n = starpu_bus_get_count();
    for (int b = 0; b < n; b++) {
        struct starpu_profiling_bus_info info;
        if (starpu_bus_get_profiling_info(b, &info) != 0) continue;
        bytes += info.transferred_bytes;
        count += info.transfer_count;
    }
    if (transfers) *transfers = count;
    return bytes;
}
