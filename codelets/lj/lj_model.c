/* mdflow — the Lennard-Jones model object: parameters, validation, and the
 * hook into the compute pipeline. */
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include "lj_codelet.h"
#include "lj_dense.h"
#include "../../dataflow/model_internal.h"
#include "../common/mdf_codelet.h"

void mdf_lj_config_init(mdf_lj_config *cfg) { memset(cfg, 0, sizeof *cfg); }

static int species_index(const mdf_lj_config *cfg, int z)
{
    for (int k = 0; k < cfg->nspecies; k++)
        if (cfg->z[k] == z) return k;
    return -1;
}

static mdf_status check_pair_values(double epsilon, double sigma, double cutoff, mdf_error *err)
{
    if (!(epsilon >= 0.0) || !isfinite(epsilon))
        return mdf_error_set(err, MDF_ERR_INVALID, "Lennard-Jones epsilon %g must be >= 0 eV", epsilon);
    if (!(sigma > 0.0) || !isfinite(sigma))
        return mdf_error_set(err, MDF_ERR_INVALID, "Lennard-Jones sigma %g must be > 0 Å", sigma);
    if (!(cutoff > 0.0) || !isfinite(cutoff))
        return mdf_error_set(err, MDF_ERR_INVALID, "Lennard-Jones cutoff %g must be > 0 Å", cutoff);
    return MDF_OK;
}

mdf_status mdf_lj_config_add_species(mdf_lj_config *cfg, int z, double epsilon, double sigma,
                                     double cutoff, mdf_error *err)
{
    if (z < 1 || z > MDF_LJ_MAX_Z - 1)
        return mdf_error_set(err, MDF_ERR_INVALID, "atomic number %d is not an element (1-118)", z);
    if (species_index(cfg, z) >= 0)
        return mdf_error_set(err, MDF_ERR_INVALID, "species %d was given twice", z);
    if (cfg->nspecies == MDF_LJ_SPECIES_MAX)
        return mdf_error_set(err, MDF_ERR_INVALID, "at most %d Lennard-Jones species", MDF_LJ_SPECIES_MAX);
    mdf_status st = check_pair_values(epsilon, sigma, cutoff, err);
    if (st != MDF_OK) return st;
    int k = cfg->nspecies++;
    cfg->z[k] = z;
    cfg->epsilon[k][k] = epsilon;
    cfg->sigma[k][k] = sigma;
    cfg->cutoff[k][k] = cutoff;
    cfg->pair_set[k][k] = 1;
    return MDF_OK;
}

mdf_status mdf_lj_config_set_pair(mdf_lj_config *cfg, int za, int zb, double epsilon, double sigma,
                                  double cutoff, mdf_error *err)
{
    int a = species_index(cfg, za), b = species_index(cfg, zb);
    if (a < 0 || b < 0)
        return mdf_error_set(err, MDF_ERR_INVALID,
                             "pair (%d, %d): add both species before setting their pair", za, zb);
    mdf_status st = check_pair_values(epsilon, sigma, cutoff, err);
    if (st != MDF_OK) return st;
    for (int t = 0; t < 2; t++) {
        int x = t ? b : a, y = t ? a : b;
        cfg->epsilon[x][y] = epsilon;
        cfg->sigma[x][y] = sigma;
        cfg->cutoff[x][y] = cutoff;
        cfg->pair_set[x][y] = 1;
    }
    return MDF_OK;
}

int mdf_lj_config_mixed_cutoffs(const mdf_lj_config *cfg, int *za, int *zb)
{
    int n = 0;
    for (int a = 0; a < cfg->nspecies; a++)
        for (int b = a + 1; b < cfg->nspecies; b++) {
            if (cfg->pair_set[a][b] || cfg->cutoff[a][a] == cfg->cutoff[b][b]) continue;
            if (n++ == 0) {
                if (za) *za = cfg->z[a];
                if (zb) *zb = cfg->z[b];
            }
        }
    return n;
}

/* The device parameters of a configuration; every element of the periodic
 * table when all_elements (one species, as cfg's first). */
static mdf_status lj_setup_config(const mdf_lj_config *cfg, int all_elements, mdf_model_setup *out, mdf_error *err)
{
    if (cfg->nspecies < 1)
        return mdf_error_set(err, MDF_ERR_INVALID, "the Lennard-Jones model has no species: give at least one");
    int32_t simd;
    mdf_status st = mdf_lj_dense_simd_choose(&simd, err);
    if (st != MDF_OK) return st;
    mdf_lj_params *p = NULL;
    if (posix_memalign((void **)&p, 64, sizeof *p))
        return mdf_error_set(err, MDF_ERR_NOMEM, "no memory for the Lennard-Jones model");
    memset(p, 0, sizeof *p);
    p->ntypes = cfg->nspecies;
    p->dense_simd = simd;
    for (int z = 0; z <= MDF_LJ_MAX_Z; z++) p->type_of_z[z] = all_elements && z >= 1 && z <= 118 ? 0 : -1;
    out->all_elements = all_elements;
    double smin = INFINITY;
    for (int a = 0; a < cfg->nspecies; a++) {
        if (!all_elements) {
            p->type_of_z[cfg->z[a]] = a;
            out->known_z[cfg->z[a]] = 1;
        }
        for (int b = 0; b < cfg->nspecies; b++) {
            double eps = cfg->epsilon[a][b], sig = cfg->sigma[a][b], rc = cfg->cutoff[a][b];
            if (!cfg->pair_set[a][b]) { /* Lorentz–Berthelot */
                eps = sqrt(cfg->epsilon[a][a] * cfg->epsilon[b][b]);
                sig = 0.5 * (cfg->sigma[a][a] + cfg->sigma[b][b]);
                rc = fmax(cfg->cutoff[a][a], cfg->cutoff[b][b]);
            }
            mdf_lj_set_pair(p, a, b, eps, sig, rc, cfg->shift);
            out->cutoff = fmax(out->cutoff, rc);
            smin = fmin(smin, sig);
        }
    }
    /* Denser than close packing (√2/σ³) only under strong compression. */
    out->density_hint = 1.5 / (smin * smin * smin);
    out->all_pairs_atoms = MDF_LJ_DENSE_MAX_ATOMS;
    out->all_pairs_small = MDF_LJ_DENSE_ALWAYS_ATOMS;
    out->all_pairs_ratio = MDF_LJ_DENSE_PAIR_RATIO;
    out->blob = p;
    out->blob_size = sizeof *p;
    /* Resuming on another CPU (or with another MDF_LJ_DENSE_SIMD) is the
     * same model: results differ by round-off only. */
    out->fingerprint_skip_off = offsetof(mdf_lj_params, dense_simd);
    out->fingerprint_skip_len = sizeof p->dense_simd;
    return MDF_OK;
}

/* ---- the registered model "lj": parameters by name ----------------------------- */

typedef struct lj_scalar {
    double epsilon, sigma, cutoff;
    int32_t shift;
} lj_scalar;

typedef struct lj_row {
    double epsilon, sigma, cutoff;
} lj_row;

#define LJ_ROW_PARAMS(T)                                                                                         \
    MDF_PARAM_DOUBLE(T, epsilon, 0.0104, 0.0, INFINITY, 0u, "eV", "well depth (default: argon)"),               \
        MDF_PARAM_DOUBLE(T, sigma, 3.40, 0.0, INFINITY, MDF_PARAM_MIN_OPEN, "Å", "zero of the pair energy"),      \
        MDF_PARAM_DOUBLE(T, cutoff, 0.0, 0.0, INFINITY, 0u, "Å", "interaction cutoff (0: 2.5 sigma)")

static const mdf_param_def lj_scalar_defs[] = {
    LJ_ROW_PARAMS(lj_scalar), MDF_PARAM_BOOL(lj_scalar, shift, 0, "shift pair energies to zero at the cutoff"),
    MDF_PARAM_END};
static const mdf_param_def lj_row_defs[] = {LJ_ROW_PARAMS(lj_row), MDF_PARAM_END};

static double lj_cutoff_or_default(double cutoff, double sigma) { return cutoff > 0.0 ? cutoff : 2.5 * sigma; }

/* Without per-element rows every element takes the scalar parameters;
 * with rows, each row's element (its unset values from the scalars), and
 * pairs not given mix (Lorentz–Berthelot). */
static mdf_status lj_setup(const void *params, const mdf_model_species *sp, mdf_model_setup *out, mdf_error *err)
{
    const lj_scalar *g = (const lj_scalar *)params;
    mdf_lj_config cfg;
    mdf_lj_config_init(&cfg);
    cfg.shift = g->shift;
    mdf_status st = MDF_OK;
    if (sp->nspecies == 0)
        st = mdf_lj_config_add_species(&cfg, 18, g->epsilon, g->sigma, lj_cutoff_or_default(g->cutoff, g->sigma), err);
    for (int k = 0; st == MDF_OK && k < sp->nspecies; k++) {
        const lj_row *r = (const lj_row *)sp->species[k];
        st = mdf_lj_config_add_species(&cfg, sp->z[k], r->epsilon, r->sigma, lj_cutoff_or_default(r->cutoff, r->sigma),
                                       err);
    }
    for (int k = 0; st == MDF_OK && k < sp->npairs; k++) {
        const lj_row *r = (const lj_row *)sp->pairs[k];
        st = mdf_lj_config_set_pair(&cfg, sp->pair_z[k][0], sp->pair_z[k][1], r->epsilon, r->sigma,
                                    lj_cutoff_or_default(r->cutoff, r->sigma), err);
    }
    return st != MDF_OK ? st : lj_setup_config(&cfg, sp->nspecies == 0, out, err);
}

const mdf_model_def mdf_lj_model_def = {
    .api_version = MDFLOW_API_VERSION,
    .name = "lj",
    .summary = "Lennard-Jones 12-6, as LAMMPS's lj/cut (per-element rows mix by Lorentz-Berthelot)",
    .params = lj_scalar_defs,
    .params_size = sizeof(lj_scalar),
    .species_params = lj_row_defs,
    .species_size = sizeof(lj_row),
    .pair_params = lj_row_defs,
    .pair_size = sizeof(lj_row),
    .setup = lj_setup,
    .cpu_func = mdf_lj_cpu,
    .cpu_func_name = "mdf_lj_cpu",
#if MDF_CUDA_ENABLED
    .cuda_func = mdf_lj_cuda,
#endif
    /* Whole systems and halo-contract slices read n_up alone, the slices'
     * rows owning their pairs evenly (mdf_nl_pair_owned); the rows
     * contract (down entries) is taken only where a CUDA worker may be. */
    .flags = MDF_MODEL_HALF_ROWS | MDF_MODEL_HALO_OWNED,
};

mdf_status mdf_model_create_lj(const mdf_lj_config *cfg, mdf_model **out, mdf_error *err)
{
    *out = NULL;
    mdf_model_setup s;
    memset(&s, 0, sizeof s);
    mdf_status st = lj_setup_config(cfg, 0, &s, err);
    return st != MDF_OK ? st : mdf_model_from_setup(&mdf_lj_model_def, &s, out, err);
}
