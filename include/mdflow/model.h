/* mdflow — interatomic models. A model computes per-system energy, per-atom
 * forces and per-system virial from neighbour lists, as codelets. Models
 * are found by name in a registry (stages/registry.c). */
#ifndef MDFLOW_MODEL_H
#define MDFLOW_MODEL_H

#include "mdflow/error.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct mdf_model mdf_model;

#define MDF_LJ_SPECIES_MAX 8

/* Lennard-Jones parameters per species pair (eV, Å). Pairs not given use
 * Lorentz–Berthelot mixing of the diagonal ones, ε = sqrt(ε_i ε_j),
 * σ = (σ_i + σ_j)/2, and the larger cutoff, max(rc_i, rc_j) (LAMMPS's
 * pair_modify mix arithmetic would take (rc_i + rc_j)/2): set a pair
 * explicitly to choose. */
typedef struct mdf_lj_config {
    int nspecies;
    int z[MDF_LJ_SPECIES_MAX];                        /* atomic numbers */
    double epsilon[MDF_LJ_SPECIES_MAX][MDF_LJ_SPECIES_MAX];
    double sigma[MDF_LJ_SPECIES_MAX][MDF_LJ_SPECIES_MAX];
    double cutoff[MDF_LJ_SPECIES_MAX][MDF_LJ_SPECIES_MAX];
    int pair_set[MDF_LJ_SPECIES_MAX][MDF_LJ_SPECIES_MAX]; /* 1: given, 0: mix */
    int shift;                                        /* shift energies to 0 at the cutoff */
} mdf_lj_config;

/* An empty configuration (no species, no shift). */
void mdf_lj_config_init(mdf_lj_config *cfg);
/* Adds species z with its own epsilon, sigma and cutoff (the diagonal). */
mdf_status mdf_lj_config_add_species(mdf_lj_config *cfg, int z, double epsilon, double sigma,
                                     double cutoff, mdf_error *err);
/* Sets the pair (za, zb) explicitly; both species must have been added. */
mdf_status mdf_lj_config_set_pair(mdf_lj_config *cfg, int za, int zb, double epsilon, double sigma,
                                  double cutoff, mdf_error *err);

/* Pairs without parameters of their own whose species have different
 * cutoffs (they take max(rc_i, rc_j), not LAMMPS's mean): the count, and
 * the first such pair's atomic numbers in *za, *zb (either may be NULL). */
int mdf_lj_config_mixed_cutoffs(const mdf_lj_config *cfg, int *za, int *zb);

/* StarPU must be initialised (the parameters become a StarPU handle). */
mdf_status mdf_model_create_lj(const mdf_lj_config *cfg, mdf_model **out, mdf_error *err);
void mdf_model_destroy(mdf_model *m);

const char *mdf_model_name(const mdf_model *m);
/* Largest interaction cutoff, Å. */
double mdf_model_cutoff(const mdf_model *m);
/* Whether the model knows element z. */
int mdf_model_has_element(const mdf_model *m, int z);

/* The registry of models by name, and models built from named parameters
 * (any registered model, plugins' too): see mdflow/extension.h. */

#ifdef __cplusplus
}
#endif
#endif
