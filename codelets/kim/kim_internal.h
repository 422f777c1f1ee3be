/* mdflow — the KIM API bridge: any OpenKIM portable model installed for the
 * KIM API (Debian: libkim-api-dev, openkim-models) as the model "kim"
 * (--model kim:NAME, a workflow's model: {type: kim, params: {name: NAME}}).
 *
 * The codelet is CPU only. A chunk holds whole systems
 * (MDF_MODEL_WHOLE_SYSTEMS); for each one it wraps the atoms into the cell,
 * adds padding (ghost) particles for every periodic image within the
 * model's influence distance (any cell size: images are replicated as
 * needed), builds full neighbour lists for each of the model's cutoffs from
 * cell bins (MDF_MODEL_OWN_NEIGHBOURS: mdflow's lists are not used), calls
 * KIM_Model_Compute, and folds the padding particles' forces back onto their
 * owners. KIM model objects are not thread-safe in general: each StarPU
 * worker creates its own on first use (host state the blob points to),
 * destroyed with the mdflow model. */
#ifndef MDF_KIM_INTERNAL_H
#define MDF_KIM_INTERNAL_H

#include <stdio.h>
#include <starpu.h>
#include "mdflow/extension.h"

#define MDF_KIM_MAX_LISTS 16
#define MDF_KIM_NAME_MAX 256

typedef struct mdf_kim_state mdf_kim_state;

/* The model's blob (host memory only: the codelet runs on CPUs). */
typedef struct mdf_kim_params {
    char name[MDF_KIM_NAME_MAX];
    int32_t code_of_z[128];      /* KIM species code of each element, -1: not covered */
    double influence;            /* influence distance, Å */
    double padding;              /* periodic images within this of the cell are ghosts, Å */
    double cutoffs[MDF_KIM_MAX_LISTS];
    int32_t ghost_lists[MDF_KIM_MAX_LISTS]; /* 1: the model may ask for the neighbours of ghosts */
    int32_t nlists;
    int32_t pad_;
    /* Host state (one KIM model per worker); left out of fingerprints. */
    mdf_kim_state *state;
} mdf_kim_params;

extern const mdf_model_def mdf_kim_model_def;

void mdf_kim_cpu(void *buffers[], void *cl_arg);

/* The per-worker KIM objects of model `name`, created on first use. */
mdf_kim_state *mdf_kim_state_new(const char *name);
void mdf_kim_state_free(mdf_kim_state *s);

/* A worker's scratch arrays (particles, bins, lists), kept between tasks. */
typedef struct mdf_kim_work mdf_kim_work;
void mdf_kim_work_free(mdf_kim_work *w);

/* The calling worker's KIM objects and scratch slot (created on first use;
 * -1 if that fails). Callers outside StarPU's workers share one more slot
 * and hold the lock until mdf_kim_state_release (*locked says so). */
struct KIM_Model;
struct KIM_ComputeArguments;
int mdf_kim_state_get(mdf_kim_state *s, struct KIM_Model **km, struct KIM_ComputeArguments **ka,
                      mdf_kim_work ***work, int *locked);
void mdf_kim_state_release(mdf_kim_state *s, int locked);

/* The portable models installed for the KIM API, sorted (a malloc'd array of
 * malloc'd names; mdf_kim_names_free). Returns the count, or -1. */
int mdf_kim_model_names(char ***names);
void mdf_kim_names_free(char **names, int n);
/* Prints the installed portable models, one a line, with `indent`. */
void mdf_kim_print_models(FILE *fp, const char *indent);

#endif
