/* mdflow — the CUDA helpers now live in the installed header
 * mdflow/kernel/cuda_util.cuh (plugins' CUDA codelets use them too). */
#ifndef MDF_CUDA_UTIL_FWD_CUH
#define MDF_CUDA_UTIL_FWD_CUH
#include "mdflow/kernel/cuda_util.cuh"
#endif
