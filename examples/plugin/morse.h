/* Morse pair model — what the plugin's files share: the definition and
 * the two codelet functions. */
#ifndef MORSE_H
#define MORSE_H

#include "mdflow/extension.h"

#ifdef __cplusplus
extern "C" {
#endif

extern const mdf_model_def morse_model_def;

void morse_cpu(void *buffers[], void *cl_arg);  /* morse_cpu.c */
void morse_cuda(void *buffers[], void *cl_arg); /* morse_cuda.cu (built with CUDA=1) */

#ifdef __cplusplus
}
#endif
#endif
