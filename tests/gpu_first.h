/* mdflow tests — the "gpu-first" scheduling policy (gpu_first.c). */
#ifndef MDF_TEST_GPU_FIRST_H
#define MDF_TEST_GPU_FIRST_H

#include "testutil.h"

#define TU_GF_NAMES 16
typedef struct tu_gpu_first_counts {
    long pushed[2];            /* tasks sent to the CPU (0) and CUDA (1) queues */
    long cuda_capable_on_cpu;  /* tasks a CUDA worker could run that reached the CPU
                                * queue: must stay 0 when a CUDA worker exists */
    int nnames;
    char names[TU_GF_NAMES][48]; /* codelets sent to the CPU queue */
} tu_gpu_first_counts;

/* Starts StarPU under the policy with one CPU worker and ncuda CUDA workers
 * (-1: all; 0: none, to emulate the run on the CPU), profiling on. */
void tu_start_gpu_first(int ncuda);
/* The policy's counters so far (before tu_stop_gpu_first). */
tu_gpu_first_counts tu_gpu_first_counts_get(void);
void tu_stop_gpu_first(void);

#endif
