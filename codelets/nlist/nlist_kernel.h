/* mdflow — the neighbour-list kernel now lives in the installed header
 * mdflow/kernel/nlist.h (plugins' model codelets read the lists too). */
#ifndef MDF_NLIST_KERNEL_FWD_H
#define MDF_NLIST_KERNEL_FWD_H
#include "mdflow/kernel/nlist.h"
#endif
