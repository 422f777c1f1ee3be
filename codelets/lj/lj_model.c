/* mdflow — the Lennard-Jones model object: parameters, validation, and the
 * hook into the compute pipeline. */
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include "lj_codelet.h"
#include "lj_dense.h"
#include "../../dataflow/model_internal.h"

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

static int lj_insert(const mdf_model *m, const mdf_model_task *t)
{
    mdf_lj_args args = {.work = t->chunk.atom_end - t->chunk.atom_begin, .chunk = t->chunk,
                        .want_virial = (t->flags & MDF_COMPUTE_VIRIAL) != 0, .status_lo = t->status_lo,
                        .status_hi = t->status_hi, .partial = t->partial != 0};
    return mdf_insert_lj(t->pos, t->atoms, t->sys, t->list, t->bins, t->forces, t->results, m->params,
                         &args);
}

static void lj_destroy(mdf_model *m)
{
    starpu_data_unregister(m->params);
    free(m->impl);
}

static const mdf_model_ops lj_ops = {.name = "lj", .insert = lj_insert, .destroy = lj_destroy};

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

mdf_status mdf_model_create_lj(const mdf_lj_config *cfg, mdf_model **out, mdf_error *err)
{
    *out = NULL;
    if (cfg->nspecies < 1)
        return mdf_error_set(err, MDF_ERR_INVALID, "the Lennard-Jones model has no species: give at least one");
    int32_t simd;
    mdf_status st = mdf_lj_dense_simd_choose(&simd, err);
    if (st != MDF_OK) return st;
    mdf_model *m = calloc(1, sizeof *m);
    mdf_lj_params *p = NULL;
    if (!m || posix_memalign((void **)&p, 64, sizeof *p)) {
        free(m);
        return mdf_error_set(err, MDF_ERR_NOMEM, "no memory for the Lennard-Jones model");
    }
    memset(p, 0, sizeof *p);
    p->ntypes = cfg->nspecies;
    p->dense_simd = simd;
    for (int z = 0; z <= MDF_LJ_MAX_Z; z++) p->type_of_z[z] = -1;
    double smin = INFINITY;
    for (int a = 0; a < cfg->nspecies; a++) {
        p->type_of_z[cfg->z[a]] = a;
        m->known_z[cfg->z[a]] = 1;
        for (int b = 0; b < cfg->nspecies; b++) {
            double eps = cfg->epsilon[a][b], sig = cfg->sigma[a][b], rc = cfg->cutoff[a][b];
            if (!cfg->pair_set[a][b]) { /* Lorentz–Berthelot */
                eps = sqrt(cfg->epsilon[a][a] * cfg->epsilon[b][b]);
                sig = 0.5 * (cfg->sigma[a][a] + cfg->sigma[b][b]);
                rc = fmax(cfg->cutoff[a][a], cfg->cutoff[b][b]);
            }
            mdf_lj_set_pair(p, a, b, eps, sig, rc, cfg->shift);
            m->cutoff = fmax(m->cutoff, rc);
            smin = fmin(smin, sig);
        }
    }
    /* Denser than close packing (√2/σ³) only under strong compression. */
    m->density_hint = 1.5 / (smin * smin * smin);
    m->ops = &lj_ops;
    m->all_pairs_atoms = MDF_LJ_DENSE_MAX_ATOMS;
    m->all_pairs_small = MDF_LJ_DENSE_ALWAYS_ATOMS;
    m->all_pairs_ratio = MDF_LJ_DENSE_PAIR_RATIO;
    m->impl = p;
    /* Resuming on another CPU (or with another MDF_LJ_DENSE_SIMD) is the
     * same model: results differ by round-off only. */
    m->fingerprint_skip_off = offsetof(mdf_lj_params, dense_simd);
    m->fingerprint_skip_len = sizeof p->dense_simd;
    starpu_vector_data_register(&m->params, STARPU_MAIN_RAM, (uintptr_t)p, 1, sizeof *p);
    starpu_data_set_name(m->params, "lj_params");
    *out = m;
    return MDF_OK;
}
