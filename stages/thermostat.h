/* mdflow — what the thermostat and barostat methods share: a shard's
 * handles, through the public accessors, in the order the thermostat
 * codelets take them. */
#ifndef MDF_STAGES_THERMOSTAT_H
#define MDF_STAGES_THERMOSTAT_H

#include "mdflow/extension.h"
#include "mdflow/units.h"
#include "../codelets/thermostat/thermostat_codelet.h"

static inline mdf_thermo_handles mdf_thermo_handles_of(const mdf_method_ctx *c)
{
    return (mdf_thermo_handles){.pos = mdf_method_pos(c), .vel = mdf_method_vel(c), .force = mdf_method_force(c),
                                .atoms = mdf_method_atoms(c), .sys = mdf_method_sys(c), .res = mdf_method_res(c),
                                .state = mdf_method_state(c)};
}

/* The fields every thermostat task takes, for shard c of a method m (its
 * MDF_METHOD_MOMENTUM flag sets momentum); each method adds its own
 * (kind, c1, tau, chain, the barostat's). */
static inline mdf_thermo_args mdf_thermo_args_of(const mdf_method_ctx *c, const mdf_method *m)
{
    return (mdf_thermo_args){.work = mdf_method_task_work(c), .natoms = mdf_method_natoms(c), .dt = mdf_method_dt(c),
                             .kT = MDF_KB * mdf_method_temperature(c), .seed = mdf_method_seed(c),
                             .status = mdf_method_status(c), .nsys = mdf_method_nsys(c),
                             .momentum = (m->flags & MDF_METHOD_MOMENTUM) != 0};
}

#endif
