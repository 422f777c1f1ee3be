/* mdflow — the accessors a method reaches its shard through
 * (mdflow/extension.h). The context is the stage's (method_internal.h);
 * built-ins and plugins alike see only these calls, so the shard's layout
 * can change without touching a method. */
#include "method_internal.h"
#include "mdflow/units.h"

starpu_data_handle_t mdf_method_pos(const mdf_method_ctx *c) { return c->sh->pos; }
starpu_data_handle_t mdf_method_vel(const mdf_method_ctx *c) { return c->sh->vel; }
starpu_data_handle_t mdf_method_force(const mdf_method_ctx *c) { return c->sh->force; }
starpu_data_handle_t mdf_method_atoms(const mdf_method_ctx *c) { return c->sh->atoms; }
starpu_data_handle_t mdf_method_sys(const mdf_method_ctx *c) { return c->sh->sys; }
starpu_data_handle_t mdf_method_res(const mdf_method_ctx *c) { return c->sh->res; }
starpu_data_handle_t mdf_method_state(const mdf_method_ctx *c) { return c->sh->state; }
starpu_data_handle_t mdf_method_work(const mdf_method_ctx *c) { return c->work; }

int32_t mdf_method_natoms(const mdf_method_ctx *c) { return c->sh->natoms; }
int32_t mdf_method_nsys(const mdf_method_ctx *c) { return c->sh->nsys; }
int64_t mdf_method_task_work(const mdf_method_ctx *c) { return c->task_work > 0 ? c->task_work : 0; }
int32_t mdf_method_atom_cap(const mdf_method_ctx *c) { return c->sh->atom_cap; }
int32_t mdf_method_sys_cap(const mdf_method_ctx *c) { return c->sh->sys_cap; }
int32_t mdf_method_max_natoms(const mdf_method_ctx *c) { return c->sh->max_natoms; }

const void *mdf_method_params(const mdf_method_ctx *c) { return c->params; }

double mdf_method_dt(const mdf_method_ctx *c) { return c->dt; }
double mdf_method_dt_fs(const mdf_method_ctx *c) { return c->p->dt_fs; }
double mdf_method_temperature(const mdf_method_ctx *c) { return c->p->temperature_K; }
uint64_t mdf_method_seed(const mdf_method_ctx *c) { return c->p->seed; }
int32_t mdf_method_status(const mdf_method_ctx *c) { return c->status; }
int64_t mdf_method_step(const mdf_method_ctx *c) { return c->step; }
double mdf_method_list_radius(const mdf_method_ctx *c) { return c->r_list; }
