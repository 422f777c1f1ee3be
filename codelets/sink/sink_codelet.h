/* mdflow — codelets of the sinks and snapshot hooks: packing a shard's
 * selected systems into a staging buffer (CPU and CUDA), appending a staging
 * buffer to a device sink (CPU and CUDA, on the sink's memory node), and the
 * CPU tasks that hand a staging buffer to a host-side sink (host memory, an
 * HDF5 file) or check that the chain stored every system. */
#ifndef MDF_SINK_CODELET_H
#define MDF_SINK_CODELET_H

#include <starpu.h>
#include "sink_kernel.h"
#ifndef __CUDACC__
#include "../common/mdf_codelet.h" /* MDF_USE_CUDA */
#endif

typedef struct mdf_device_append_args {
    int64_t work;                 /* atoms of the staging buffer (model key) */
    int64_t src_sys_cap, src_atom_cap;
    int64_t dst_sys_cap, dst_atom_cap;
} mdf_device_append_args;

/* A host-side step of a sink write: fn runs on a CPU worker with the staging
 * buffer (NULL for a check) and its counters. */
typedef void (*mdf_sink_host_fn)(void *user, const void *buf, int64_t *cnt, int64_t sys_cap, int64_t atom_cap);
typedef struct mdf_sink_host_args {
    int64_t work;
    int64_t sys_cap, atom_cap;    /* of the staging buffer */
    mdf_sink_host_fn fn;
    void *user;
} mdf_sink_host_args;

void mdf_pack_cpu(void *buffers[], void *cl_arg);
void mdf_device_append_cpu(void *buffers[], void *cl_arg);
void mdf_device_init_cpu(void *buffers[], void *cl_arg);
#if defined(STARPU_USE_CUDA) && defined(MDF_USE_CUDA)
#ifdef __cplusplus
extern "C" {
#endif
void mdf_pack_cuda(void *buffers[], void *cl_arg);
void mdf_device_append_cuda(void *buffers[], void *cl_arg);
void mdf_device_init_cuda(void *buffers[], void *cl_arg);
#ifdef __cplusplus
}
#endif
#endif

/* buffers: pos, vel, force, atoms, sys, res R; staging buffer W, counters W */
int mdf_insert_pack(starpu_data_handle_t pos, starpu_data_handle_t vel, starpu_data_handle_t force,
                    starpu_data_handle_t atoms, starpu_data_handle_t sys, starpu_data_handle_t res,
                    starpu_data_handle_t buf, starpu_data_handle_t cnt, const mdf_pack_args *a);
/* buffers: sink storage RW, sink length mirror RW, staging buffer R, counters RW */
int mdf_insert_device_append(starpu_data_handle_t store, starpu_data_handle_t len, starpu_data_handle_t buf,
                             starpu_data_handle_t cnt, const mdf_device_append_args *a);
/* Empties a device sink (storage W, length W); on `worker` when >= 0, so that
 * the storage is allocated on that worker's memory node. */
int mdf_insert_device_init(starpu_data_handle_t store, starpu_data_handle_t len, const mdf_device_append_args *a,
                           int worker);
/* buffers: staging buffer R, counters RW, sink token RW */
int mdf_insert_sink_host(starpu_data_handle_t buf, starpu_data_handle_t cnt, starpu_data_handle_t token,
                         const mdf_sink_host_args *a);
/* buffers: counters R */
int mdf_insert_sink_check(starpu_data_handle_t cnt, const mdf_sink_host_args *a);

#endif
