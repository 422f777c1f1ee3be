/* mdflow — the KIM API bridge's codelet: one chunk of whole systems, each
 * with its own padding particles and neighbour lists (kim_internal.h). */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "KIM_SimulatorHeaders.h"
#include "kim_internal.h"
#include "mdflow/kernel/reduce.h"


/* Growing arrays of a system's particles and lists, kept across systems and
 * tasks (one per worker). */
typedef struct mdf_kim_work kim_work;
struct mdf_kim_work {
    int n, cap;                 /* particles (contributing first, then ghosts) */
    double *x;                  /* 3 * cap */
    double *f;                  /* 3 * cap */
    int *code, *contrib, *owner;/* owner: the contributing particle a ghost images */
    int *bin_start;             /* cell bins: particles order[bin_start[b] .. bin_start[b + 1]) */
    int *order, *binof;         /* particles sorted by bin; each particle's bin */
    double *xs;                 /* coordinates in bin order */
    int nbins_cap;
    int nlists;
    int *off[MDF_KIM_MAX_LISTS];/* n + 1 offsets per list */
    int *nbr[MDF_KIM_MAX_LISTS];
    size_t nbr_cap[MDF_KIM_MAX_LISTS];
    int off_cap;
};

void mdf_kim_work_free(kim_work *w)
{
    if (!w) return;
    free(w->x);
    free(w->f);
    free(w->code);
    free(w->contrib);
    free(w->owner);
    free(w->bin_start);
    free(w->order);
    free(w->binof);
    free(w->xs);
    for (int l = 0; l < MDF_KIM_MAX_LISTS; l++) {
        free(w->off[l]);
        free(w->nbr[l]);
    }
    free(w);
}

static int grow(void **p, size_t bytes)
{
    void *q = realloc(*p, bytes ? bytes : 1);
    if (!q) return -1;
    *p = q;
    return 0;
}

/* Room for one more particle. */
static int add_particle(kim_work *w, const double r[3], int code, int contrib, int owner)
{
    if (w->n == w->cap) {
        int cap = w->cap ? 2 * w->cap : 256;
        if (grow((void **)&w->x, sizeof(double) * 3 * (size_t)cap) || grow((void **)&w->code, sizeof(int) * (size_t)cap) ||
            grow((void **)&w->contrib, sizeof(int) * (size_t)cap) || grow((void **)&w->owner, sizeof(int) * (size_t)cap))
            return -1;
        w->cap = cap;
    }
    int i = w->n++;
    memcpy(w->x + 3 * i, r, sizeof(double) * 3);
    w->code[i] = code;
    w->contrib[i] = contrib;
    w->owner[i] = owner;
    return 0;
}

/* The system's atoms, wrapped into the cell along its periodic directions,
 * then every periodic image within `pad` of the cell (as many cells over as
 * the padding needs: cells narrower than the cutoff are fine). */
static int build_particles(kim_work *w, const double *x, const mdf_atom_info *atoms, const mdf_sys_info *s,
                           const mdf_kim_params *p)
{
    w->n = 0;
    int periodic = s->pbc[0] || s->pbc[1] || s->pbc[2];
    int nimg[3] = {0, 0, 0};
    double padf[3] = {0.0, 0.0, 0.0};
    for (int k = 0; k < 3 && periodic; k++) {
        if (!s->pbc[k]) continue;
        double c2 = 0.0;
        for (int a = 0; a < 3; a++) c2 += s->inv_cell[3 * a + k] * s->inv_cell[3 * a + k];
        double width = 1.0 / sqrt(c2);
        padf[k] = p->padding / width;
        nimg[k] = (int)ceil(padf[k]);
    }
    for (int32_t i = 0; i < s->natoms; i++) {
        const double *xi = x + 3 * (size_t)(s->atom_start + i);
        double r[3] = {xi[0], xi[1], xi[2]};
        if (periodic) {
            double fr[3];
            for (int k = 0; k < 3; k++) {
                fr[k] = xi[0] * s->inv_cell[k] + xi[1] * s->inv_cell[3 + k] + xi[2] * s->inv_cell[6 + k];
                if (s->pbc[k]) {
                    fr[k] -= floor(fr[k]);
                    if (fr[k] >= 1.0) fr[k] = 0.0;
                }
            }
            for (int a = 0; a < 3; a++) r[a] = fr[0] * s->cell[a] + fr[1] * s->cell[3 + a] + fr[2] * s->cell[6 + a];
        }
        if (add_particle(w, r, p->code_of_z[atoms[s->atom_start + i].z], 1, i)) return -1;
    }
    int n = s->natoms;
    for (int ia = -nimg[0]; ia <= nimg[0]; ia++)
        for (int ib = -nimg[1]; ib <= nimg[1]; ib++)
            for (int ic = -nimg[2]; ic <= nimg[2]; ic++) {
                if (!ia && !ib && !ic) continue;
                int img[3] = {ia, ib, ic};
                double shift[3];
                for (int a = 0; a < 3; a++) shift[a] = ia * s->cell[a] + ib * s->cell[3 + a] + ic * s->cell[6 + a];
                for (int i = 0; i < n; i++) {
                    const double *r = w->x + 3 * i;
                    int inside = 1;
                    for (int k = 0; k < 3 && inside; k++) {
                        if (!img[k]) continue;
                        double fk = r[0] * s->inv_cell[k] + r[1] * s->inv_cell[3 + k] + r[2] * s->inv_cell[6 + k] + img[k];
                        inside = fk >= -padf[k] && fk <= 1.0 + padf[k];
                    }
                    if (!inside) continue;
                    double g[3] = {r[0] + shift[0], r[1] + shift[1], r[2] + shift[2]};
                    if (add_particle(w, g, w->code[i], 0, i)) return -1;
                }
            }
    return 0;
}

/* Full neighbour lists of every cutoff (contributing particles, and ghosts
 * for the lists whose model may ask for theirs), from cell bins about half
 * the largest cutoff wide, the particles sorted by bin (a counting sort:
 * each bin's coordinates lie together). */
static int build_lists(kim_work *w, const mdf_kim_params *p)
{
    int n = w->n;
    double maxcut = 0.0;
    for (int l = 0; l < p->nlists; l++) maxcut = fmax(maxcut, p->cutoffs[l]);
    double lo[3] = {INFINITY, INFINITY, INFINITY}, hi[3] = {-INFINITY, -INFINITY, -INFINITY};
    for (int i = 0; i < n; i++)
        for (int a = 0; a < 3; a++) {
            lo[a] = fmin(lo[a], w->x[3 * i + a]);
            hi[a] = fmax(hi[a], w->x[3 * i + a]);
        }
    double bin = maxcut > 0.0 ? 0.5 * maxcut : 1.0;
    int nb[3], reach[3];
    double ext[3];
    for (;;) { /* at most about 2 bins per particle */
        double total = 1.0;
        for (int a = 0; a < 3; a++) {
            ext[a] = hi[a] - lo[a];
            nb[a] = (int)fmin(floor(ext[a] / bin), 1e6);
            if (nb[a] < 1) nb[a] = 1;
            total *= nb[a];
        }
        if (total <= 2.0 * n + 8.0) break;
        bin *= 1.26;
    }
    /* Bins along a are ext / nb >= bin wide: neighbours lie within reach bins. */
    for (int a = 0; a < 3; a++) {
        double width = ext[a] / nb[a];
        reach[a] = width > 0.0 ? (int)ceil(maxcut / width) : 0;
        if (reach[a] > nb[a] - 1) reach[a] = nb[a] - 1;
    }
    int nbins = nb[0] * nb[1] * nb[2];
    if (nbins + 1 > w->nbins_cap) {
        if (grow((void **)&w->bin_start, sizeof(int) * (size_t)(nbins + 1))) return -1;
        w->nbins_cap = nbins + 1;
    }
    if (grow((void **)&w->order, sizeof(int) * (size_t)n) || grow((void **)&w->binof, sizeof(int) * 3 * (size_t)n) ||
        grow((void **)&w->xs, sizeof(double) * 3 * (size_t)n))
        return -1;
    memset(w->bin_start, 0, sizeof(int) * (size_t)(nbins + 1));
    for (int i = 0; i < n; i++) {
        int *c = w->binof + 3 * i;
        for (int a = 0; a < 3; a++) {
            c[a] = ext[a] > 0.0 ? (int)((w->x[3 * i + a] - lo[a]) / ext[a] * nb[a]) : 0;
            if (c[a] >= nb[a]) c[a] = nb[a] - 1;
            if (c[a] < 0) c[a] = 0;
        }
        w->bin_start[(c[2] * nb[1] + c[1]) * nb[0] + c[0] + 1]++;
    }
    for (int b = 0; b < nbins; b++) w->bin_start[b + 1] += w->bin_start[b];
    for (int i = 0; i < n; i++) { /* stable: each bin in particle order */
        const int *c = w->binof + 3 * i;
        int b = (c[2] * nb[1] + c[1]) * nb[0] + c[0];
        int k = w->bin_start[b]++;
        w->order[k] = i;
        memcpy(w->xs + 3 * k, w->x + 3 * i, sizeof(double) * 3);
    }
    for (int b = nbins; b > 0; b--) w->bin_start[b] = w->bin_start[b - 1];
    w->bin_start[0] = 0;
    if (n + 1 > w->off_cap) {
        for (int l = 0; l < MDF_KIM_MAX_LISTS; l++)
            if (grow((void **)&w->off[l], sizeof(int) * (size_t)(n + 1))) return -1;
        w->off_cap = n + 1;
    }
    w->nlists = p->nlists;
    for (int l = 0; l < p->nlists; l++) {
        double rc2 = p->cutoffs[l] * p->cutoffs[l];
        size_t used = 0;
        int *off = w->off[l];
        for (int i = 0; i < n; i++) {
            off[i] = (int)used;
            if (!w->contrib[i] && !p->ghost_lists[l]) continue;
            const double xi0 = w->x[3 * i], xi1 = w->x[3 * i + 1], xi2 = w->x[3 * i + 2];
            const int *ci = w->binof + 3 * i;
            for (int cz = ci[2] - reach[2]; cz <= ci[2] + reach[2]; cz++) {
                if (cz < 0 || cz >= nb[2]) continue;
                for (int cy = ci[1] - reach[1]; cy <= ci[1] + reach[1]; cy++) {
                    if (cy < 0 || cy >= nb[1]) continue;
                    int x0 = ci[0] - reach[0] < 0 ? 0 : ci[0] - reach[0];
                    int x1 = ci[0] + reach[0] >= nb[0] ? nb[0] - 1 : ci[0] + reach[0];
                    int row = (cz * nb[1] + cy) * nb[0];
                    /* Bins x0..x1 of a row are one range of the sorted particles. */
                    int k0 = w->bin_start[row + x0], k1 = w->bin_start[row + x1 + 1];
                    if (used + (size_t)(k1 - k0) > w->nbr_cap[l]) {
                        size_t cap = w->nbr_cap[l] ? w->nbr_cap[l] : 4096;
                        while (cap < used + (size_t)(k1 - k0)) cap *= 2;
                        if (grow((void **)&w->nbr[l], sizeof(int) * cap)) return -1;
                        w->nbr_cap[l] = cap;
                    }
                    int *out = w->nbr[l];
                    for (int k = k0; k < k1; k++) {
                        double d0 = w->xs[3 * k] - xi0, d1 = w->xs[3 * k + 1] - xi1, d2 = w->xs[3 * k + 2] - xi2;
                        int j = w->order[k];
                        /* Branch-free append; j == i is at distance 0 and dropped. */
                        out[used] = j;
                        used += (d0 * d0 + d1 * d1 + d2 * d2 <= rc2) & (j != i);
                    }
                }
            }
        }
        off[n] = (int)used;
    }
    return 0;
}

/* KIM's neighbour-list callback (the data object is the kim_work). */
static int get_neighbors(void *data, int nlists, const double *cutoffs, int list, int particle, int *count,
                         const int **neighbors)
{
    (void)cutoffs;
    const kim_work *w = (const kim_work *)data;
    if (list < 0 || list >= nlists || list >= w->nlists || particle < 0 || particle >= w->n) return 1;
    *count = w->off[list][particle + 1] - w->off[list][particle];
    *neighbors = w->nbr[list] + w->off[list][particle];
    return 0;
}

/* Energy, forces (rows of the system's atoms) and virial of one system;
 * -1 when it could not be evaluated. */
static int kim_system(kim_work *w, KIM_ComputeArguments *ka, const KIM_Model *km, const double *x,
                      const mdf_atom_info *atoms, const mdf_sys_info *s, const mdf_kim_params *p, double *f,
                      mdf_sys_result *r, int virial)
{
    if (build_particles(w, x, atoms, s, p) || build_lists(w, p)) return -1;
    if (grow((void **)&w->f, sizeof(double) * 3 * (size_t)w->n)) return -1;
    int n = w->n;
    double energy = 0.0;
    int bad = KIM_ComputeArguments_SetArgumentPointerInteger(ka, KIM_COMPUTE_ARGUMENT_NAME_numberOfParticles, &n) ||
              KIM_ComputeArguments_SetArgumentPointerInteger(ka, KIM_COMPUTE_ARGUMENT_NAME_particleSpeciesCodes, w->code) ||
              KIM_ComputeArguments_SetArgumentPointerInteger(ka, KIM_COMPUTE_ARGUMENT_NAME_particleContributing, w->contrib) ||
              KIM_ComputeArguments_SetArgumentPointerDouble(ka, KIM_COMPUTE_ARGUMENT_NAME_coordinates, w->x) ||
              KIM_ComputeArguments_SetArgumentPointerDouble(ka, KIM_COMPUTE_ARGUMENT_NAME_partialEnergy, &energy) ||
              KIM_ComputeArguments_SetArgumentPointerDouble(ka, KIM_COMPUTE_ARGUMENT_NAME_partialForces, w->f) ||
              KIM_ComputeArguments_SetCallbackPointer(ka, KIM_COMPUTE_CALLBACK_NAME_GetNeighborList, KIM_LANGUAGE_NAME_c,
                                                      (KIM_Function *)get_neighbors, w);
    if (bad || KIM_Model_Compute(km, ka)) return -1;
    r->energy = energy;
    double *fs = f + 3 * (size_t)s->atom_start;
    for (int i = 0; i < s->natoms; i++)
        for (int a = 0; a < 3; a++) fs[3 * i + a] = w->f[3 * i + a];
    for (int g = s->natoms; g < n; g++)
        for (int a = 0; a < 3; a++) fs[3 * w->owner[g] + a] += w->f[3 * g + a];
    if (virial) {
        /* -dE/dstrain: the sum of r (x) f over every particle, ghosts
         * included (exact for the padded system, whatever the model). */
        double v[9] = {0};
        for (int i = 0; i < n; i++)
            for (int a = 0; a < 3; a++)
                for (int b = 0; b < 3; b++) v[3 * a + b] += w->x[3 * i + a] * w->f[3 * i + b];
        memcpy(r->virial, v, sizeof v);
    }
    return 0;
}

void mdf_kim_cpu(void *buffers[], void *cl_arg)
{
    const mdf_model_args *args = (const mdf_model_args *)cl_arg;
    const double *x = (const double *)STARPU_VECTOR_GET_PTR(buffers[0]);
    const mdf_atom_info *atoms = (const mdf_atom_info *)STARPU_VECTOR_GET_PTR(buffers[1]);
    const mdf_sys_info *sys = (const mdf_sys_info *)STARPU_VECTOR_GET_PTR(buffers[2]);
    double *f = (double *)STARPU_VECTOR_GET_PTR(buffers[5]);
    mdf_sys_result *res = (mdf_sys_result *)STARPU_VECTOR_GET_PTR(buffers[6]);
    const mdf_kim_params *p = (const mdf_kim_params *)STARPU_VECTOR_GET_PTR(buffers[7]);
    const mdf_chunk *c = &args->chunk;
    KIM_Model *km = NULL;
    KIM_ComputeArguments *ka = NULL;
    int locked = 0;
    kim_work **slot = NULL;
    int ok = mdf_kim_state_get(p->state, &km, &ka, &slot, &locked) == 0;
    if (ok && !*slot && !(*slot = calloc(1, sizeof **slot))) {
        mdf_kim_state_release(p->state, locked);
        ok = 0;
    }
    kim_work *w = ok ? *slot : NULL;
    for (int32_t s = c->sys_begin; s < c->sys_end; s++) {
        if (!mdf_status_in(sys[s].status, args->status_lo, args->status_hi)) continue;
        memset(f + 3 * (size_t)sys[s].atom_start, 0, sizeof(double) * 3 * (size_t)sys[s].natoms);
        res[s].energy = 0.0;
        if (args->want_virial) memset(res[s].virial, 0, sizeof res[s].virial);
        res[s].virial_fresh = args->want_virial != 0;
        if (args->partial) mdf_part_mark(&res[s], MDF_PART_TOUCH);
        /* No way to return an error from a task: NaN energies stop a run's checks. */
        if (!ok || (sys[s].natoms > 0 && kim_system(w, ka, km, x, atoms, &sys[s], p, f, &res[s], args->want_virial)))
            res[s].energy = NAN;
    }
    if (ok) mdf_kim_state_release(p->state, locked);
}
