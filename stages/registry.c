/* mdflow — the registries: one line per integrator and per model. */
#include <string.h>
#include "integrator.h"
#include "mdflow/md.h"
#include "mdflow/model.h"

static const mdf_integrator_ops *const integrators[] = {
    &mdf_velocity_verlet,
};

static const char *const model_names[] = {"lj", NULL};

const mdf_integrator_ops *mdf_find_integrator(const char *name)
{
    for (size_t k = 0; k < sizeof integrators / sizeof integrators[0]; k++)
        if (strcmp(integrators[k]->name, name) == 0) return integrators[k];
    /* Common aliases. */
    if (strcmp(name, "nve") == 0 || strcmp(name, "verlet") == 0) return &mdf_velocity_verlet;
    return NULL;
}

size_t mdf_integrator_count(void) { return sizeof integrators / sizeof integrators[0]; }

const char *mdf_integrator_name(size_t k)
{
    return k < mdf_integrator_count() ? integrators[k]->name : NULL;
}
const char *const *mdf_model_names(void) { return model_names; }
