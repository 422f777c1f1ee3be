/* mdflow — what the thermostat and barostat methods share: a shard's
 * handles, through the public accessors, in the order the thermostat
 * codelets take them. */
#ifndef MDF_STAGES_THERMOSTAT_H
#define MDF_STAGES_THERMOSTAT_H

#include "mdflow/extension.h"
#include "../codelets/thermostat/thermostat_codelet.h"

static inline mdf_thermo_handles mdf_thermo_handles_of(const mdf_method_ctx *c)
{
    return (mdf_thermo_handles){.pos = mdf_method_pos(c), .vel = mdf_method_vel(c), .force = mdf_method_force(c),
                                .atoms = mdf_method_atoms(c), .sys = mdf_method_sys(c), .res = mdf_method_res(c),
                                .state = mdf_method_state(c)};
}

#endif
