/* mdflow — batched molecular dynamics and geometry optimisation of many
 * atomic systems at once, as StarPU task graphs. Umbrella header. */
#ifndef MDFLOW_H
#define MDFLOW_H

#include "mdflow/error.h"
#include "mdflow/units.h"
#include "mdflow/frame.h"
#include "mdflow/xyz.h"
#include "mdflow/lammps.h"
#include "mdflow/batch.h"
#include "mdflow/model.h"
#include "mdflow/hook.h"
#include "mdflow/sampler.h"
#include "mdflow/sink.h"
#include "mdflow/stage.h"
#include "mdflow/md.h"
#include "mdflow/pipe.h"
#include "mdflow/runtime.h"

#endif
