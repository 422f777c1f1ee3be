/* mdflow — embedded-atom method: codelets, the file reader and the
 * registered model "eam" (LAMMPS's eam/alloy, eam/fs and eam files). */
#ifndef MDF_EAM_CODELET_H
#define MDF_EAM_CODELET_H

#include <stddef.h>
#include <starpu.h>
#include "eam_kernel.h"
#include "mdflow/extension.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Main pass: buffers pos, atoms, sys, list, bins, forces RW, results RW,
 * params R, rho R (the gathered densities). Rows only. */
void mdf_eam_cpu(void *buffers[], void *cl_arg);
/* Density pass: pos, atoms, sys, list, bins, rho W (chunk rows), params R. */
void mdf_eam_aux_cpu(void *buffers[], void *cl_arg);
/* The same two on the GPU (eam_cuda.cu; built with CUDA only). */
void mdf_eam_cuda(void *buffers[], void *cl_arg);
void mdf_eam_aux_cuda(void *buffers[], void *cl_arg);

/* File styles. */
#define MDF_EAM_SETFL 0  /* eam/alloy */
#define MDF_EAM_FUNCFL 1 /* eam (one file) */
#define MDF_EAM_FS 2     /* eam/fs */

/* Reads a potential file into a parameter blob (malloc'd, *bytes long).
 * style: MDF_EAM_*, or -1 to choose by the name (.eam.fs, .eam.alloy or
 * .setfl, .eam). Errors name the file and line. */
mdf_status mdf_eam_read(const char *path, int style, mdf_eam_params **out, size_t *bytes, mdf_error *err);

extern const mdf_model_def mdf_eam_model_def;

#ifdef __cplusplus
}
#endif
#endif
