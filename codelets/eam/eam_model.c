/* mdflow — embedded-atom method: LAMMPS potential files (setfl for
 * eam/alloy, eam/fs, funcfl for eam) read into spline tables exactly as
 * LAMMPS's pair_eam.cpp builds them, and the registered model "eam". */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "eam_codelet.h"
#include "../common/mdf_codelet.h"
#include "mdflow/frame.h"

/* ---- reading: lines and tokens, with line numbers ------------------------------ */

typedef struct eam_reader {
    const char *path;
    FILE *fp;
    char *line;    /* current line */
    size_t cap;
    int lineno;
    char *cur;     /* next token of the current line (NULL: take a new line) */
    mdf_error *err;
} eam_reader;

/* The next line (NULL at the end of the file). */
static char *rd_line(eam_reader *r)
{
    ssize_t n = getline(&r->line, &r->cap, r->fp);
    r->cur = NULL;
    if (n < 0) return NULL;
    r->lineno++;
    return r->line;
}

/* A whole line as whitespace-separated tokens (at most max). */
static int rd_tokens(eam_reader *r, char **tok, int max, const char *what, mdf_status *st)
{
    if (!rd_line(r)) {
        *st = mdf_error_set(r->err, MDF_ERR_PARSE, "%s:%d: the file ends before %s", r->path, r->lineno + 1, what);
        return -1;
    }
    int n = 0;
    for (char *s = strtok(r->line, " \t\r\n"); s && n < max; s = strtok(NULL, " \t\r\n")) tok[n++] = s;
    return n;
}

static int parse_double(const char *s, double *v)
{
    char *end;
    errno = 0;
    *v = strtod(s, &end);
    return end != s && *end == '\0' && errno != ERANGE && isfinite(*v);
}

static int parse_int(const char *s, int *v)
{
    char *end;
    errno = 0;
    long x = strtol(s, &end, 10);
    if (end == s || *end != '\0' || errno == ERANGE || x < -2147483647L || x > 2147483647L) return 0;
    *v = (int)x;
    return 1;
}

/* n numbers across lines into f[1..n], starting on a new line. */
static mdf_status rd_table(eam_reader *r, double *f, int n, const char *what)
{
    r->cur = NULL;
    int k = 0;
    while (k < n) {
        if (!r->cur) {
            if (!rd_line(r))
                return mdf_error_set(r->err, MDF_ERR_PARSE, "%s:%d: the file ends in %s after %d of its %d values",
                                     r->path, r->lineno, what, k, n);
            r->cur = r->line;
        }
        char *s = r->cur + strspn(r->cur, " \t\r\n");
        if (!*s) {
            r->cur = NULL;
            continue;
        }
        size_t len = strcspn(s, " \t\r\n");
        char save = s[len];
        s[len] = '\0';
        double v;
        int ok = parse_double(s, &v);
        s[len] = save;
        if (!ok) {
            s[len] = '\0';
            return mdf_error_set(r->err, MDF_ERR_PARSE, "%s:%d: '%s' in %s is not a number", r->path, r->lineno, s,
                                 what);
        }
        f[++k] = v;
        r->cur = s + len;
    }
    r->cur = NULL;
    return MDF_OK;
}

/* ---- LAMMPS's tables --------------------------------------------------------------- */

/* pair_eam.cpp interpolate(): f[1..n] to spline rows 1..n (7 each). */
static void eam_interpolate(int n, double delta, const double *f, double *sp)
{
#define S(m, c) sp[(size_t)(m) * 7 + (c)]
    for (int m = 1; m <= n; m++) S(m, 6) = f[m];
    S(1, 5) = S(2, 6) - S(1, 6);
    S(2, 5) = 0.5 * (S(3, 6) - S(1, 6));
    S(n - 1, 5) = 0.5 * (S(n, 6) - S(n - 2, 6));
    S(n, 5) = S(n, 6) - S(n - 1, 6);
    for (int m = 3; m <= n - 2; m++) S(m, 5) = ((S(m - 2, 6) - S(m + 2, 6)) + 8.0 * (S(m + 1, 6) - S(m - 1, 6))) / 12.0;
    for (int m = 1; m <= n - 1; m++) {
        S(m, 4) = 3.0 * (S(m + 1, 6) - S(m, 6)) - 2.0 * S(m, 5) - S(m + 1, 5);
        S(m, 3) = S(m, 5) + S(m + 1, 5) - 2.0 * (S(m + 1, 6) - S(m, 6));
    }
    S(n, 4) = 0.0;
    S(n, 3) = 0.0;
    for (int m = 1; m <= n; m++) {
        S(m, 2) = S(m, 5) / delta;
        S(m, 1) = 2.0 * S(m, 4) / delta;
        S(m, 0) = 3.0 * S(m, 3) / delta;
    }
#undef S
}

/* Distances are turned into table rows by an int conversion of r / dr + 1
 * (eam_cpu.c): a cutoff of more r steps than this would overflow it. */
#define EAM_MAX_STEPS 1073741824.0

/* The blob for ne elements and grids (nrho, drho), (nr, dr). */
static mdf_eam_params *eam_alloc(int ne, int nrho, double drho, int nr, double dr, double cut, size_t *bytes)
{
    int64_t head = (int64_t)((sizeof(mdf_eam_params) + 7) / 8);
    int64_t frho = (int64_t)ne * (nrho + 1) * 7, rhor = (int64_t)ne * ne * (nr + 1) * 7,
            z2r = (int64_t)ne * (ne + 1) / 2 * (nr + 1) * 7;
    int64_t total = head + frho + rhor + z2r;
    mdf_eam_params *p = calloc((size_t)total, sizeof(double));
    if (!p) return NULL;
    p->nelem = ne;
    p->nrho = nrho;
    p->nr = nr;
    p->drho = drho;
    p->dr = dr;
    p->rdrho = 1.0 / drho;
    p->rdr = 1.0 / dr;
    p->rhomax = (nrho - 1) * drho;
    p->cut = cut;
    p->cutsq = cut * cut;
    p->off_frho = head;
    p->off_rhor = head + frho;
    p->off_z2r = head + frho + rhor;
    p->total = total;
    for (int z = 0; z <= MDF_EAM_MAX_Z; z++) p->elem_of_z[z] = -1;
    *bytes = (size_t)total * sizeof(double);
    return p;
}

static double *eam_mut(mdf_eam_params *p, const double *tab) { return (double *)p + (tab - (const double *)p); }

/* Lagrange interpolation of funcfl tables onto LAMMPS's grid (file2array). */
static double eam_lagrange(const double *f, int n, double delta, double r)
{
    const double sixth = 1.0 / 6.0;
    double p = r / delta + 1.0;
    int k = (int)p;
    k = k < n - 2 ? k : n - 2;
    k = k > 2 ? k : 2;
    p -= k;
    p = p < 2.0 ? p : 2.0;
    double cof1 = -sixth * p * (p - 1.0) * (p - 2.0), cof2 = 0.5 * (p * p - 1.0) * (p - 2.0),
           cof3 = -0.5 * p * (p + 1.0) * (p - 2.0), cof4 = sixth * p * (p * p - 1.0);
    return cof1 * f[k - 1] + cof2 * f[k] + cof3 * f[k + 1] + cof4 * f[k + 2];
}

static int style_of_name(const char *path)
{
    size_t n = strlen(path);
#define ENDS(s) (n >= strlen(s) && strcmp(path + n - strlen(s), s) == 0)
    if (ENDS(".fs")) return MDF_EAM_FS;
    if (ENDS(".alloy") || ENDS(".setfl")) return MDF_EAM_SETFL;
    if (ENDS(".eam")) return MDF_EAM_FUNCFL;
#undef ENDS
    return MDF_EAM_SETFL;
}

static mdf_status read_funcfl(eam_reader *r, mdf_eam_params **out, size_t *bytes)
{
    mdf_status st = MDF_OK;
    char *tok[8];
    if (!rd_line(r))
        return mdf_error_set(r->err, MDF_ERR_PARSE, "%s: empty file (expected a funcfl EAM file)", r->path);
    int n = rd_tokens(r, tok, 8, "the element line (Z mass a lattice)", &st);
    if (n < 0) return st;
    int z;
    double mass;
    if (n < 2 || !parse_int(tok[0], &z) || !parse_double(tok[1], &mass) || z < 1 || z > 118)
        return mdf_error_set(r->err, MDF_ERR_PARSE, "%s:%d: expected 'Z mass a lattice' (Z an atomic number)", r->path,
                             r->lineno);
    n = rd_tokens(r, tok, 8, "the grid line (Nrho drho Nr dr cutoff)", &st);
    if (n < 0) return st;
    int nrho, nr;
    double drho, dr, cut;
    if (n < 5 || !parse_int(tok[0], &nrho) || !parse_double(tok[1], &drho) || !parse_int(tok[2], &nr) ||
        !parse_double(tok[3], &dr) || !parse_double(tok[4], &cut) || nrho < 5 || nr < 5 || !(drho > 0.0) ||
        !(dr > 0.0) || !(cut > 0.0) || !(cut / dr < EAM_MAX_STEPS))
        return mdf_error_set(r->err, MDF_ERR_PARSE,
                             "%s:%d: expected 'Nrho drho Nr dr cutoff' (Nrho, Nr >= 5; drho, dr, cutoff > 0; cutoff "
                             "at most 2^30 steps dr)", r->path,
                             r->lineno);
    double *fr = malloc(sizeof(double) * (size_t)(nrho + 1)), *zr = malloc(sizeof(double) * (size_t)(nr + 1)),
           *rh = malloc(sizeof(double) * (size_t)(nr + 1)), *tmp = malloc(sizeof(double) * (size_t)(nr + nrho + 2));
    mdf_eam_params *p = NULL;
    if (!fr || !zr || !rh || !tmp) st = mdf_error_set(r->err, MDF_ERR_NOMEM, "no memory for %s", r->path);
    if (st == MDF_OK) st = rd_table(r, fr, nrho, "F(rho)");
    if (st == MDF_OK) st = rd_table(r, zr, nr, "Z(r)");
    if (st == MDF_OK) st = rd_table(r, rh, nr, "rho(r)");
    /* LAMMPS's file2array for funcfl files: rhomax = (Nrho - 1) drho and
     * rmax = (Nr - 1) dr, but its grids have int(rhomax / drho + 0.5) and
     * int(rmax / dr + 0.5) points, one fewer than the file's: F is flat
     * between the last point and rhomax, then continues linearly. */
    double rhomax = (nrho - 1) * drho, rmax = (nr - 1) * dr;
    int gnrho = (int)(rhomax / drho + 0.5), gnr = (int)(rmax / dr + 0.5);
    if (st == MDF_OK && !(p = eam_alloc(1, gnrho, drho, gnr, dr, cut, bytes)))
        st = mdf_error_set(r->err, MDF_ERR_NOMEM, "no memory for %s", r->path);
    if (st == MDF_OK) {
        p->kind = MDF_EAM_FUNCFL;
        p->rhomax = rhomax;
        p->elem_of_z[z] = 0;
        p->z_of_elem[0] = z;
        /* Then array2spline. */
        for (int m = 1; m <= gnrho; m++) tmp[m] = eam_lagrange(fr, nrho, drho, (m - 1) * drho);
        eam_interpolate(gnrho, drho, tmp, eam_mut(p, mdf_eam_frho(p, 0)));
        for (int m = 1; m <= gnr; m++) tmp[m] = eam_lagrange(rh, nr, dr, (m - 1) * dr);
        eam_interpolate(gnr, dr, tmp, eam_mut(p, mdf_eam_rhor(p, 0, 0)));
        for (int m = 1; m <= gnr; m++) {
            double zri = eam_lagrange(zr, nr, dr, (m - 1) * dr);
            tmp[m] = 27.2 * 0.529 * zri * zri;
        }
        eam_interpolate(gnr, dr, tmp, eam_mut(p, mdf_eam_z2r(p, 0, 0)));
        *out = p;
    }
    free(fr);
    free(zr);
    free(rh);
    free(tmp);
    return st;
}

static mdf_status read_setfl(eam_reader *r, int fs, mdf_eam_params **out, size_t *bytes)
{
    mdf_status st = MDF_OK;
    for (int k = 0; k < 3; k++)
        if (!rd_line(r))
            return mdf_error_set(r->err, MDF_ERR_PARSE, "%s:%d: the file ends in its three comment lines", r->path,
                                 r->lineno + 1);
    char *tok[MDF_EAM_MAX_ELEMENTS + 2];
    int n = rd_tokens(r, tok, MDF_EAM_MAX_ELEMENTS + 2, "the element line (N El1 El2 ...)", &st);
    if (n < 0) return st;
    int ne, zs[MDF_EAM_MAX_ELEMENTS];
    if (n < 2 || !parse_int(tok[0], &ne) || ne < 1 || ne > MDF_EAM_MAX_ELEMENTS || n != ne + 1)
        return mdf_error_set(r->err, MDF_ERR_PARSE,
                             "%s:%d: expected 'N El1 ... ElN' with 1 <= N <= %d and N symbols", r->path, r->lineno,
                             MDF_EAM_MAX_ELEMENTS);
    for (int e = 0; e < ne; e++) {
        zs[e] = mdf_element_number(tok[e + 1]);
        if (zs[e] < 1)
            return mdf_error_set(r->err, MDF_ERR_PARSE, "%s:%d: '%s' is not an element symbol", r->path, r->lineno,
                                 tok[e + 1]);
        for (int k = 0; k < e; k++)
            if (zs[k] == zs[e])
                return mdf_error_set(r->err, MDF_ERR_PARSE, "%s:%d: element %s is listed twice", r->path, r->lineno,
                                     tok[e + 1]);
    }
    n = rd_tokens(r, tok, 8, "the grid line (Nrho drho Nr dr cutoff)", &st);
    if (n < 0) return st;
    int nrho, nr;
    double drho, dr, cut;
    if (n < 5 || !parse_int(tok[0], &nrho) || !parse_double(tok[1], &drho) || !parse_int(tok[2], &nr) ||
        !parse_double(tok[3], &dr) || !parse_double(tok[4], &cut) || nrho < 5 || nr < 5 || !(drho > 0.0) ||
        !(dr > 0.0) || !(cut > 0.0) || !(cut / dr < EAM_MAX_STEPS))
        return mdf_error_set(r->err, MDF_ERR_PARSE,
                             "%s:%d: expected 'Nrho drho Nr dr cutoff' (Nrho, Nr >= 5; drho, dr, cutoff > 0; cutoff "
                             "at most 2^30 steps dr)", r->path,
                             r->lineno);
    mdf_eam_params *p = eam_alloc(ne, nrho, drho, nr, dr, cut, bytes);
    double *tmp = malloc(sizeof(double) * (size_t)((nr > nrho ? nr : nrho) + 1));
    if (!p || !tmp) {
        free(p);
        free(tmp);
        return mdf_error_set(r->err, MDF_ERR_NOMEM, "no memory for %s", r->path);
    }
    p->kind = fs ? MDF_EAM_FS : MDF_EAM_SETFL;
    for (int e = 0; e < ne; e++) {
        p->elem_of_z[zs[e]] = e;
        p->z_of_elem[e] = zs[e];
    }
    char what[96];
    for (int e = 0; st == MDF_OK && e < ne; e++) {
        const char *sym = mdf_element_symbol(zs[e]);
        snprintf(what, sizeof what, "the line of element %s (Z mass a lattice)", sym);
        n = rd_tokens(r, tok, 8, what, &st);
        if (n < 0) break;
        int zfile;
        double mass;
        if (n < 2 || !parse_int(tok[0], &zfile) || !parse_double(tok[1], &mass)) {
            st = mdf_error_set(r->err, MDF_ERR_PARSE, "%s:%d: expected 'Z mass a lattice' for element %s", r->path,
                               r->lineno, sym);
            break;
        }
        snprintf(what, sizeof what, "F(rho) of %s", sym);
        st = rd_table(r, tmp, nrho, what);
        if (st != MDF_OK) break;
        eam_interpolate(nrho, drho, tmp, eam_mut(p, mdf_eam_frho(p, e)));
        for (int b = 0; st == MDF_OK && b < (fs ? ne : 1); b++) {
            if (fs)
                snprintf(what, sizeof what, "rho(r) of %s-%s", sym, mdf_element_symbol(zs[b]));
            else
                snprintf(what, sizeof what, "rho(r) of %s", sym);
            st = rd_table(r, tmp, nr, what);
            if (st != MDF_OK) break;
            /* LAMMPS: the density at an atom of element b due to element e
             * is the file's rho_{e,b} (eam/fs), rho_e (eam/alloy). */
            for (int bb = fs ? b : 0; bb < (fs ? b + 1 : ne); bb++)
                eam_interpolate(nr, dr, tmp, eam_mut(p, mdf_eam_rhor(p, e, bb)));
        }
    }
    for (int a = 0; st == MDF_OK && a < ne; a++)
        for (int b = 0; st == MDF_OK && b <= a; b++) {
            snprintf(what, sizeof what, "r*phi(r) of %s-%s", mdf_element_symbol(zs[a]), mdf_element_symbol(zs[b]));
            st = rd_table(r, tmp, nr, what);
            if (st == MDF_OK) eam_interpolate(nr, dr, tmp, eam_mut(p, mdf_eam_z2r(p, a, b)));
        }
    free(tmp);
    if (st != MDF_OK) {
        free(p);
        return st;
    }
    *out = p;
    return MDF_OK;
}

mdf_status mdf_eam_read(const char *path, int style, mdf_eam_params **out, size_t *bytes, mdf_error *err)
{
    *out = NULL;
    *bytes = 0;
    if (!path || !*path) return mdf_error_set(err, MDF_ERR_INVALID, "the EAM model needs a potential file (file=PATH)");
    eam_reader r = {.path = path, .err = err};
    r.fp = fopen(path, "r");
    if (!r.fp) return mdf_error_set(err, MDF_ERR_IO, "cannot open EAM potential file %s: %s", path, strerror(errno));
    if (style < 0) style = style_of_name(path);
    mdf_status st = style == MDF_EAM_FUNCFL ? read_funcfl(&r, out, bytes)
                                            : read_setfl(&r, style == MDF_EAM_FS, out, bytes);
    free(r.line);
    fclose(r.fp);
    return st;
}

/* ---- the registered model "eam" --------------------------------------------------- */

typedef struct eam_scalar {
    char file[MDF_PARAM_STRING_MAX];
    char style[MDF_PARAM_STRING_MAX];
    double density_hint;
} eam_scalar;

static const mdf_param_def eam_defs[] = {
    MDF_PARAM_STRING(eam_scalar, file, "LAMMPS EAM potential file (setfl, eam/fs or funcfl)"),
    MDF_PARAM_STRING(eam_scalar, style, "alloy, fs or funcfl (empty: by the file name: .eam.alloy, .eam.fs, .eam)"),
    MDF_PARAM_DOUBLE(eam_scalar, density_hint, 0.12, 0.0, INFINITY, MDF_PARAM_MIN_OPEN, "1/Å³",
                     "highest number density expected: sizes the list slots (fcc Cu is 0.085)"),
    MDF_PARAM_END};

static mdf_status eam_setup(const void *params, const mdf_model_species *sp, mdf_model_setup *out, mdf_error *err)
{
    const eam_scalar *g = (const eam_scalar *)params;
    if (sp->nspecies > 0 || sp->npairs > 0)
        return mdf_error_set(err, MDF_ERR_INVALID, "the EAM model takes no per-element rows: the file sets them");
    int style = -1;
    if (!strcmp(g->style, "alloy") || !strcmp(g->style, "setfl"))
        style = MDF_EAM_SETFL;
    else if (!strcmp(g->style, "fs"))
        style = MDF_EAM_FS;
    else if (!strcmp(g->style, "funcfl") || !strcmp(g->style, "eam"))
        style = MDF_EAM_FUNCFL;
    else if (g->style[0])
        return mdf_error_set(err, MDF_ERR_INVALID, "EAM style '%s': expected alloy, fs or funcfl", g->style);
    mdf_eam_params *p;
    size_t bytes;
    mdf_status st = mdf_eam_read(g->file, style, &p, &bytes, err);
    if (st != MDF_OK) return st;
    out->blob = p;
    out->blob_size = bytes;
    out->cutoff = p->cut;
    out->density_hint = g->density_hint;
    out->all_elements = 0;
    for (int e = 0; e < p->nelem; e++) out->known_z[p->z_of_elem[e]] = 1;
    /* A system with another element is told which file and which elements. */
    char elems[MDF_EAM_MAX_ELEMENTS * 4 + 8] = "";
    for (int e = 0; e < p->nelem; e++) {
        size_t n = strlen(elems);
        snprintf(elems + n, sizeof elems - n, "%s%s", e ? ", " : "", mdf_element_symbol(p->z_of_elem[e]));
    }
    snprintf(out->missing_element_hint, sizeof out->missing_element_hint,
             "the EAM potential file %.400s covers element%s %s only", g->file, p->nelem > 1 ? "s" : "", elems);
    return MDF_OK;
}

const mdf_model_def mdf_eam_model_def = {
    .api_version = MDFLOW_API_VERSION,
    .name = "eam",
    .summary = "embedded-atom method from LAMMPS files, as eam/alloy, eam/fs and eam (file=PATH)",
    .params = eam_defs,
    .params_size = sizeof(eam_scalar),
    .setup = eam_setup,
    .cpu_func = mdf_eam_cpu,
    .cpu_func_name = "mdf_eam_cpu",
    .aux_per_atom = 1,
    .aux_cpu_func = mdf_eam_aux_cpu,
    .aux_cpu_func_name = "mdf_eam_aux_cpu",
#if MDF_CUDA_ENABLED
    .cuda_func = mdf_eam_cuda,
    .aux_cuda_func = mdf_eam_aux_cuda,
#endif
    /* eam_rows: a chunk holding its system whole reads n_up alone */
    .flags = MDF_MODEL_HALF_ROWS_WHOLE | MDF_MODEL_AUX_FUSED_WHOLE,
};
