/* mdflow — what the thermostat and barostat methods share (internal): a
 * shard's handles in the order the thermostat codelets take them. */
#ifndef MDF_STAGES_THERMOSTAT_H
#define MDF_STAGES_THERMOSTAT_H

#include "integrator.h"
#include "../codelets/thermostat/thermostat_codelet.h"

static inline mdf_thermo_handles mdf_thermo_handles_of(const mdf_shard *sh)
{
    return (mdf_thermo_handles){.pos = sh->pos, .vel = sh->vel, .force = sh->force, .atoms = sh->atoms,
                                .sys = sh->sys, .res = sh->res, .state = sh->state};
}

#endif
