/* mdflow — model-independent parts of mdf_model. */
#include <stdlib.h>
#include "model_internal.h"

void mdf_model_destroy(mdf_model *m)
{
    if (!m) return;
    m->ops->destroy(m);
    free(m);
}

const char *mdf_model_name(const mdf_model *m) { return m->ops->name; }
double mdf_model_cutoff(const mdf_model *m) { return m->cutoff; }
int mdf_model_has_element(const mdf_model *m, int z) { return z >= 0 && z < 128 && m->known_z[z]; }
