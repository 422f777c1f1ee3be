/* Berendsen thermostat — what the plugin's files share: the definition and
 * the codelet functions. */
#ifndef BERENDSEN_H
#define BERENDSEN_H

#include "mdflow/extension.h"

#ifdef __cplusplus
extern "C" {
#endif

extern const mdf_method berendsen_method;

/* pre: pos RW, vel RW, force R, atoms R, sys R */
void berendsen_pre_cpu(void *buffers[], void *cl_arg);
void berendsen_pre_cuda(void *buffers[], void *cl_arg);
/* post: vel RW, force R, atoms R, sys RW, res RW, state RW */
void berendsen_post_cpu(void *buffers[], void *cl_arg);
void berendsen_post_cuda(void *buffers[], void *cl_arg);

#ifdef __cplusplus
}
#endif
#endif
