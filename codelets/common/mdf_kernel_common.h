/* mdflow — the kernel records now live in the installed header
 * mdflow/kernel.h (plugins' kernels read them too). */
#ifndef MDF_KERNEL_COMMON_FWD_H
#define MDF_KERNEL_COMMON_FWD_H
#include "mdflow/kernel.h"
#endif
