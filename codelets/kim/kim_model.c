/* mdflow — the KIM API bridge: the model "kim" (parameter `name`), its setup
 * (the KIM model's species, influence distance and neighbour lists), the
 * per-worker KIM objects, and the list of installed models. */
#include <math.h>
#include <ctype.h>
#include <pthread.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include "KIM_SimulatorHeaders.h"
#include "KIM_Log.h"
#include "kim_internal.h"
#include "mdflow/frame.h"
#include "../common/mdf_codelet.h"

/* ---- installed models ------------------------------------------------------ */

/* KIM logs to ./kim.log; mdflow keeps only its errors there (nothing on a
 * run that goes well). */
static pthread_once_t log_once = PTHREAD_ONCE_INIT;
static void quiet_log(void) { KIM_Log_PushDefaultVerbosity(KIM_LOG_VERBOSITY_error); }
static void kim_init(void) { pthread_once(&log_once, quiet_log); }

static int cmp_names(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

int mdf_kim_model_names(char ***names)
{
    *names = NULL;
    kim_init();
    KIM_Collections *col = NULL;
    if (KIM_Collections_Create(&col)) return -1;
    KIM_Collections_PushLogVerbosity(col, KIM_LOG_VERBOSITY_silent);
    int n = 0;
    if (KIM_Collections_CacheListOfItemNamesByType(col, KIM_COLLECTION_ITEM_TYPE_portableModel, &n)) n = -1;
    char **out = n > 0 ? calloc((size_t)n, sizeof *out) : NULL;
    if (n > 0 && !out) n = -1;
    for (int k = 0; k < n; k++) {
        const char *s = NULL;
        if (KIM_Collections_GetItemNameByType(col, k, &s) || !(out[k] = strdup(s))) {
            mdf_kim_names_free(out, k);
            out = NULL;
            n = -1;
            break;
        }
    }
    KIM_Collections_Destroy(&col);
    if (n > 0) qsort(out, (size_t)n, sizeof *out, cmp_names);
    *names = out;
    return n;
}

void mdf_kim_names_free(char **names, int n)
{
    for (int k = 0; k < n; k++) free(names[k]);
    free(names);
}

void mdf_kim_print_models(FILE *fp, const char *indent)
{
    char **names;
    int n = mdf_kim_model_names(&names);
    for (int k = 0; k < n; k++) fprintf(fp, "%s%s\n", indent, names[k]);
    mdf_kim_names_free(names, n > 0 ? n : 0);
}

/* Edit distance, case-insensitive (names are long: two rows). */
static size_t edit_distance(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    size_t *prev = malloc((lb + 1) * sizeof *prev), *cur = malloc((lb + 1) * sizeof *cur);
    if (!prev || !cur) {
        free(prev);
        free(cur);
        return la > lb ? la : lb;
    }
    for (size_t j = 0; j <= lb; j++) prev[j] = j;
    for (size_t i = 1; i <= la; i++) {
        cur[0] = i;
        for (size_t j = 1; j <= lb; j++) {
            size_t sub = prev[j - 1] + (tolower((unsigned char)a[i - 1]) != tolower((unsigned char)b[j - 1]));
            size_t del = prev[j] + 1, ins = cur[j - 1] + 1;
            cur[j] = sub < del ? (sub < ins ? sub : ins) : (del < ins ? del : ins);
        }
        size_t *t = prev;
        prev = cur;
        cur = t;
    }
    size_t d = prev[lb];
    free(prev);
    free(cur);
    return d;
}

/* Whether `part` occurs in `s`, case-insensitive. */
static int contains_nocase(const char *s, const char *part)
{
    size_t n = strlen(part);
    if (n == 0) return 0;
    for (; *s; s++)
        if (strncasecmp(s, part, n) == 0) return 1;
    return 0;
}

/* The error for a name that is no installed portable model: up to five
 * installed names that contain it, or else the closest by edit distance
 * (names without their "__MO_..." suffix compared as well). */
static mdf_status unknown_model(const char *name, mdf_error *err)
{
    char **names;
    int n = mdf_kim_model_names(&names);
    if (n <= 0)
        return mdf_error_set(err, MDF_ERR_INVALID, "kim model %s: no KIM portable model is installed (install "
                             "openkim-models, or kim-api-collections-management install user MODEL)", name);
    enum { BEST = 5 };
    int best[BEST];
    size_t bestd[BEST];
    int nb = 0;
    for (int k = 0; k < n && nb < BEST; k++)
        if (contains_nocase(names[k], name)) best[nb++] = k, bestd[nb - 1] = 0;
    if (nb == 0) {
        for (int k = 0; k < n; k++) {
            size_t d = edit_distance(name, names[k]);
            const char *mo = strstr(names[k], "__");
            if (mo) { /* also without the "__MO_..." suffix */
                char shortname[MDF_KIM_NAME_MAX];
                size_t len = (size_t)(mo - names[k]) < sizeof shortname - 1 ? (size_t)(mo - names[k]) : sizeof shortname - 1;
                memcpy(shortname, names[k], len);
                shortname[len] = '\0';
                size_t d2 = edit_distance(name, shortname);
                if (d2 < d) d = d2;
            }
            int pos = nb < BEST ? nb++ : BEST;
            if (pos == BEST) {
                if (d >= bestd[BEST - 1]) continue;
                pos = BEST - 1;
            }
            while (pos > 0 && bestd[pos - 1] > d) {
                best[pos] = best[pos - 1];
                bestd[pos] = bestd[pos - 1];
                pos--;
            }
            best[pos] = k;
            bestd[pos] = d;
        }
    }
    char list[5 * (MDF_KIM_NAME_MAX + 2)] = "";
    for (int k = 0; k < nb; k++) {
        if (k) strcat(list, ", ");
        strncat(list, names[best[k]], MDF_KIM_NAME_MAX);
    }
    mdf_error_set(err, MDF_ERR_INVALID,
                  "kim model %s is not an installed KIM portable model (%d are installed: mdflow models --kim lists "
                  "them); closest: %s",
                  name, n, list);
    mdf_kim_names_free(names, n);
    return MDF_ERR_INVALID;
}

/* ---- per-worker KIM objects ------------------------------------------------ */

/* The compute arguments mdflow gives (everything else must be optional). */
static int provided_argument(KIM_ComputeArgumentName a)
{
    return KIM_ComputeArgumentName_Equal(a, KIM_COMPUTE_ARGUMENT_NAME_numberOfParticles) ||
           KIM_ComputeArgumentName_Equal(a, KIM_COMPUTE_ARGUMENT_NAME_particleSpeciesCodes) ||
           KIM_ComputeArgumentName_Equal(a, KIM_COMPUTE_ARGUMENT_NAME_particleContributing) ||
           KIM_ComputeArgumentName_Equal(a, KIM_COMPUTE_ARGUMENT_NAME_coordinates) ||
           KIM_ComputeArgumentName_Equal(a, KIM_COMPUTE_ARGUMENT_NAME_partialEnergy) ||
           KIM_ComputeArgumentName_Equal(a, KIM_COMPUTE_ARGUMENT_NAME_partialForces);
}

/* Creating and destroying KIM models loads and unloads their libraries:
 * one at a time, whatever the model. */
static pthread_mutex_t create_lock = PTHREAD_MUTEX_INITIALIZER;

static mdf_status kim_open_locked(const char *name, KIM_Model **km, KIM_ComputeArguments **ka, mdf_error *err);

/* Creates the KIM model in metal units (Å, eV) and its compute arguments.
 * On failure, *km and *ka are NULL and err says why. */
static mdf_status kim_open(const char *name, KIM_Model **km, KIM_ComputeArguments **ka, mdf_error *err)
{
    pthread_mutex_lock(&create_lock);
    mdf_status st = kim_open_locked(name, km, ka, err);
    pthread_mutex_unlock(&create_lock);
    return st;
}

static mdf_status kim_open_locked(const char *name, KIM_Model **km, KIM_ComputeArguments **ka, mdf_error *err)
{
    *km = NULL;
    *ka = NULL;
    kim_init();
    int accepted = 0;
    if (KIM_Model_Create(KIM_NUMBERING_zeroBased, KIM_LENGTH_UNIT_A, KIM_ENERGY_UNIT_eV, KIM_CHARGE_UNIT_e,
                         KIM_TEMPERATURE_UNIT_K, KIM_TIME_UNIT_ps, name, &accepted, km)) {
        *km = NULL;
        return mdf_error_set(err, MDF_ERR_INVALID, "kim model %s: the KIM API could not create it (see kim.log)", name);
    }
    if (!accepted) {
        KIM_LengthUnit lu;
        KIM_EnergyUnit eu;
        KIM_ChargeUnit cu;
        KIM_TemperatureUnit tu;
        KIM_TimeUnit ti;
        KIM_Model_GetUnits(*km, &lu, &eu, &cu, &tu, &ti);
        KIM_Model_Destroy(km);
        *km = NULL;
        return mdf_error_set(err, MDF_ERR_INVALID,
                             "kim model %s works in %s and %s only, not mdflow's Å and eV (unit conversion is not "
                             "supported): choose another model",
                             name, KIM_LengthUnit_ToString(lu), KIM_EnergyUnit_ToString(eu));
    }
    if (KIM_Model_ComputeArgumentsCreate(*km, ka)) {
        KIM_Model_Destroy(km);
        *km = NULL;
        *ka = NULL;
        return mdf_error_set(err, MDF_ERR_INVALID, "kim model %s: could not create its compute arguments", name);
    }
    return MDF_OK;
}

static void kim_close(KIM_Model **km, KIM_ComputeArguments **ka)
{
    pthread_mutex_lock(&create_lock);
    if (*ka) KIM_Model_ComputeArgumentsDestroy(*km, ka);
    if (*km) KIM_Model_Destroy(km);
    pthread_mutex_unlock(&create_lock);
    *km = NULL;
    *ka = NULL;
}

struct mdf_kim_state {
    pthread_mutex_t lock;
    char name[MDF_KIM_NAME_MAX];
    int nslots;                    /* StarPU's workers, and one for callers outside them */
    KIM_Model **models;
    KIM_ComputeArguments **args;
    mdf_kim_work **work;
};

mdf_kim_state *mdf_kim_state_new(const char *name)
{
    mdf_kim_state *s = calloc(1, sizeof *s);
    if (!s) return NULL;
    pthread_mutex_init(&s->lock, NULL);
    snprintf(s->name, sizeof s->name, "%s", name);
    s->nslots = STARPU_NMAXWORKERS + 1;
    s->models = calloc((size_t)s->nslots, sizeof *s->models);
    s->args = calloc((size_t)s->nslots, sizeof *s->args);
    s->work = calloc((size_t)s->nslots, sizeof *s->work);
    if (!s->models || !s->args || !s->work) {
        mdf_kim_state_free(s);
        return NULL;
    }
    return s;
}

void mdf_kim_state_free(mdf_kim_state *s)
{
    if (!s) return;
    for (int k = 0; s->models && s->args && k < s->nslots; k++) kim_close(&s->models[k], &s->args[k]);
    for (int k = 0; s->work && k < s->nslots; k++) mdf_kim_work_free(s->work[k]);
    free(s->work);
    free(s->models);
    free(s->args);
    pthread_mutex_destroy(&s->lock);
    free(s);
}

int mdf_kim_state_get(mdf_kim_state *s, KIM_Model **km, KIM_ComputeArguments **ka, mdf_kim_work ***work,
                      int *locked)
{
    int w = starpu_worker_get_id();
    int slot = w >= 0 && w < s->nslots - 1 ? w : s->nslots - 1;
    *locked = slot == s->nslots - 1;
    pthread_mutex_lock(&s->lock);
    if (!s->models[slot]) {
        mdf_error err;
        memset(&err, 0, sizeof err);
        if (kim_open(s->name, &s->models[slot], &s->args[slot], &err) != MDF_OK) {
            pthread_mutex_unlock(&s->lock);
            *locked = 0;
            return -1;
        }
    }
    *km = s->models[slot];
    *ka = s->args[slot];
    *work = &s->work[slot];
    if (!*locked) pthread_mutex_unlock(&s->lock);
    return 0;
}

void mdf_kim_state_release(mdf_kim_state *s, int locked)
{
    if (locked) pthread_mutex_unlock(&s->lock);
}

/* ---- the registered model ---------------------------------------------------- */

typedef struct kim_scalar {
    char name[MDF_PARAM_STRING_MAX];
} kim_scalar;

static const mdf_param_def kim_defs[] = {
    MDF_PARAM_STRING(kim_scalar, name, "KIM portable model (mdflow models --kim lists those installed)"),
    MDF_PARAM_END};

/* The elements the model covers, as "Cu, Ni" (at most n bytes). */
static void covered_list(const mdf_kim_params *p, char *out, size_t n)
{
    out[0] = '\0';
    size_t used = 0;
    for (int z = 1; z < 128 && used + 8 < n; z++)
        if (p->code_of_z[z] >= 0) used += (size_t)snprintf(out + used, n - used, "%s%s", used ? ", " : "", mdf_element_symbol(z));
}

static mdf_status kim_setup(const void *params, const mdf_model_species *sp, mdf_model_setup *out, mdf_error *err)
{
    const kim_scalar *g = (const kim_scalar *)params;
    if (sp->nspecies || sp->npairs)
        return mdf_error_set(err, MDF_ERR_INVALID, "the kim model takes no per-element or per-pair rows: the KIM "
                             "model sets every parameter");
    if (!g->name[0])
        return mdf_error_set(err, MDF_ERR_INVALID, "the kim model needs a KIM model name: --model kim:NAME, or "
                             "name=NAME (mdflow models --kim lists those installed)");
    kim_init();
    KIM_Collections *col = NULL;
    int known = 0;
    if (!KIM_Collections_Create(&col)) {
        KIM_Collections_PushLogVerbosity(col, KIM_LOG_VERBOSITY_silent);
        KIM_CollectionItemType t;
        known = !KIM_Collections_GetItemType(col, g->name, &t) &&
                KIM_CollectionItemType_Equal(t, KIM_COLLECTION_ITEM_TYPE_portableModel);
        KIM_Collections_Destroy(&col);
    }
    if (!known) return unknown_model(g->name, err);
    KIM_Model *km;
    KIM_ComputeArguments *ka;
    mdf_status st = kim_open(g->name, &km, &ka, err);
    if (st != MDF_OK) return st;
    mdf_kim_params *p = calloc(1, sizeof *p);
    if (!p) {
        kim_close(&km, &ka);
        return mdf_error_set(err, MDF_ERR_NOMEM, "no memory for the kim model");
    }
    snprintf(p->name, sizeof p->name, "%s", g->name);
    int ncov = 0;
    for (int z = 0; z < 128; z++) {
        p->code_of_z[z] = -1;
        if (z < 1 || z > 118) continue;
        KIM_SpeciesName sn = KIM_SpeciesName_FromString(mdf_element_symbol(z));
        int supported = 0, code = -1;
        if (KIM_SpeciesName_Known(sn) && !KIM_Model_GetSpeciesSupportAndCode(km, sn, &supported, &code) && supported) {
            p->code_of_z[z] = code;
            out->known_z[z] = 1;
            ncov++;
        }
    }
    KIM_Model_GetInfluenceDistance(km, &p->influence);
    int nl = 0;
    const double *cut = NULL;
    const int *noghost = NULL;
    KIM_Model_GetNeighborListPointers(km, &nl, &cut, &noghost);
    /* Every argument the model requires must be one mdflow gives; energy and
     * forces it must support. */
    int nargs = 0;
    KIM_COMPUTE_ARGUMENT_NAME_GetNumberOfComputeArgumentNames(&nargs);
    for (int k = 0; st == MDF_OK && k < nargs; k++) {
        KIM_ComputeArgumentName a;
        KIM_SupportStatus s;
        if (KIM_COMPUTE_ARGUMENT_NAME_GetComputeArgumentName(k, &a) || KIM_ComputeArguments_GetArgumentSupportStatus(ka, a, &s))
            continue;
        int energy_or_forces = KIM_ComputeArgumentName_Equal(a, KIM_COMPUTE_ARGUMENT_NAME_partialEnergy) ||
                               KIM_ComputeArgumentName_Equal(a, KIM_COMPUTE_ARGUMENT_NAME_partialForces);
        if (KIM_SupportStatus_Equal(s, KIM_SUPPORT_STATUS_required) && !provided_argument(a))
            st = mdf_error_set(err, MDF_ERR_INVALID, "kim model %s requires the compute argument %s, which mdflow "
                               "does not give", g->name, KIM_ComputeArgumentName_ToString(a));
        else if (energy_or_forces && KIM_SupportStatus_Equal(s, KIM_SUPPORT_STATUS_notSupported))
            st = mdf_error_set(err, MDF_ERR_INVALID, "kim model %s does not compute %s, which mdflow needs", g->name,
                               KIM_ComputeArgumentName_ToString(a));
    }
    int ncb = 0;
    KIM_COMPUTE_CALLBACK_NAME_GetNumberOfComputeCallbackNames(&ncb);
    for (int k = 0; st == MDF_OK && k < ncb; k++) {
        KIM_ComputeCallbackName c;
        KIM_SupportStatus s;
        if (KIM_COMPUTE_CALLBACK_NAME_GetComputeCallbackName(k, &c) || KIM_ComputeArguments_GetCallbackSupportStatus(ka, c, &s))
            continue;
        if (KIM_SupportStatus_Equal(s, KIM_SUPPORT_STATUS_required) &&
            !KIM_ComputeCallbackName_Equal(c, KIM_COMPUTE_CALLBACK_NAME_GetNeighborList))
            st = mdf_error_set(err, MDF_ERR_INVALID, "kim model %s requires the callback %s, which mdflow does not give",
                               g->name, KIM_ComputeCallbackName_ToString(c));
    }
    if (st == MDF_OK && (nl < 1 || nl > MDF_KIM_MAX_LISTS))
        st = mdf_error_set(err, MDF_ERR_INVALID, "kim model %s asks for %d neighbour lists (mdflow gives 1 to %d)",
                           g->name, nl, MDF_KIM_MAX_LISTS);
    if (st == MDF_OK && ncov == 0)
        st = mdf_error_set(err, MDF_ERR_INVALID, "kim model %s covers no chemical element", g->name);
    if (st == MDF_OK && !(p->influence > 0.0 && isfinite(p->influence)))
        st = mdf_error_set(err, MDF_ERR_INVALID, "kim model %s has influence distance %g Å", g->name, p->influence);
    if (st == MDF_OK) {
        p->nlists = nl;
        double maxcut = 0.0;
        int ghosts = 0;
        for (int k = 0; k < nl; k++) {
            p->cutoffs[k] = cut[k];
            p->ghost_lists[k] = !noghost[k];
            ghosts |= p->ghost_lists[k];
            if (cut[k] > maxcut) maxcut = cut[k];
        }
        /* Ghosts whose own neighbours the model may read get complete lists
         * out to the influence distance: pad by one more cutoff. */
        p->padding = p->influence + (ghosts ? maxcut : 0.0);
    }
    kim_close(&km, &ka);
    if (st == MDF_OK && !(p->state = mdf_kim_state_new(p->name)))
        st = mdf_error_set(err, MDF_ERR_NOMEM, "no memory for the kim model");
    if (st != MDF_OK) {
        free(p);
        return st;
    }
    out->blob = p;
    out->blob_size = sizeof *p;
    out->cutoff = p->influence;
    out->density_hint = 0.2;
    out->fingerprint_skip_off = offsetof(mdf_kim_params, state);
    out->fingerprint_skip_len = sizeof p->state;
    snprintf(out->label, sizeof out->label, "kim model %s", p->name);
    char cov[200];
    covered_list(p, cov, sizeof cov);
    snprintf(out->missing_element_hint, sizeof out->missing_element_hint,
             "the KIM model covers %s only: choose a KIM model for this element (mdflow models --kim)", cov);
    return MDF_OK;
}

static void kim_destroy(void *blob)
{
    mdf_kim_params *p = (mdf_kim_params *)blob;
    mdf_kim_state_free(p->state);
    p->state = NULL;
}

const mdf_model_def mdf_kim_model_def = {
    .api_version = MDFLOW_API_VERSION,
    .name = "kim",
    .summary = "any installed OpenKIM portable model through the KIM API (--model kim:NAME; CPU only)",
    .params = kim_defs,
    .params_size = sizeof(kim_scalar),
    .setup = kim_setup,
    .cpu_func = mdf_kim_cpu,
    .cpu_func_name = "mdf_kim_cpu",
    .flags = MDF_MODEL_WHOLE_SYSTEMS | MDF_MODEL_OWN_NEIGHBOURS,
    .destroy = kim_destroy,
};
