/* mdflow — the chunk-sum records now live in the installed header
 * mdflow/kernel/reduce.h (plugins' model codelets mark their parts too). */
#ifndef MDF_REDUCE_KERNEL_FWD_H
#define MDF_REDUCE_KERNEL_FWD_H
#include "mdflow/kernel/reduce.h"
#endif
