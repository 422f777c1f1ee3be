/* mdflow — the files a command reads and writes, checked before it runs
 * (tools/paths.h). */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "paths.h"

#define P_MAX 8192

/* The folder part of path ("." when it has none). */
static void folder_of(const char *path, char *out, size_t n)
{
    const char *slash = strrchr(path, '/');
    if (!slash) snprintf(out, n, ".");
    else if (slash == path) snprintf(out, n, "/");
    else snprintf(out, n, "%.*s", (int)(slash - path), path);
}

/* An absolute path with "//", "." and ".." folded by text alone (for
 * folders that do not exist, which realpath cannot resolve). */
static void fold(const char *path, char *out, size_t n)
{
    char full[2 * P_MAX + 2], cwd[P_MAX], *save = NULL;
    if (path[0] == '/' || !getcwd(cwd, sizeof cwd)) snprintf(full, sizeof full, "%s", path);
    else snprintf(full, sizeof full, "%s/%s", cwd, path);
    size_t len = 0;
    out[0] = '\0';
    for (char *part = strtok_r(full, "/", &save); part; part = strtok_r(NULL, "/", &save)) {
        if (!strcmp(part, ".")) continue;
        if (!strcmp(part, "..")) {
            char *up = strrchr(out, '/');
            len = up ? (size_t)(up - out) : 0;
            out[len] = '\0';
            continue;
        }
        int w = snprintf(out + len, n - len, "/%s", part);
        if (w < 0 || (size_t)w >= n - len) break;
        len += (size_t)w;
    }
    if (!len) snprintf(out, n, "/");
}

/* The path with its folder resolved (links included) when the folder
 * exists, else folded by text. */
static void normalise(const char *path, char *out, size_t n)
{
    char dir[P_MAX], real[PATH_MAX];
    folder_of(path, dir, sizeof dir);
    const char *slash = strrchr(path, '/');
    const char *base = slash ? slash + 1 : path;
    if (*base && strcmp(base, ".") && strcmp(base, "..") && realpath(dir, real))
        snprintf(out, n, "%s/%s", strcmp(real, "/") ? real : "", base);
    else fold(path, out, n);
}

int paths_same(const char *a, const char *b)
{
    struct stat sa, sb;
    int ea = stat(a, &sa) == 0, eb = stat(b, &sb) == 0;
    if (ea && eb) return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
    if (ea || eb) return 0; /* one exists, the other does not */
    char na[P_MAX], nb[P_MAX];
    normalise(a, na, sizeof na);
    normalise(b, nb, sizeof nb);
    return strcmp(na, nb) == 0;
}

static int given(const path_role *r) { return r->path && *r->path; }

/* "FILE:LINE: " for a workflow's messages, "" for the command line's. */
static void prefix(const char *where, int line, char *out, size_t n)
{
    if (!where) *out = '\0';
    else if (line > 0) snprintf(out, n, "%s:%d: ", where, line);
    else snprintf(out, n, "%s: ", where);
}

static mdf_status check_pair(const char *where, const path_role *a, const path_role *b, mdf_error *err)
{
    if (!(a->output || b->output) || !paths_same(a->path, b->path)) return MDF_OK;
    const path_role *out = b->output ? b : a, *other = out == b ? a : b;
    char at[P_MAX];
    prefix(where, out->line, at, sizeof at);
    return mdf_error_set(err, MDF_ERR_INVALID,
                         "%s%s '%s' and %s '%s' are the same file: %s; give %s another path", at, out->what,
                         out->path, other->what, other->path,
                         other->output ? "each output would overwrite the other" : "the run would overwrite its input",
                         out->what);
}

static mdf_status unwritable(const char *where, const path_role *r, const char *why, mdf_error *err)
{
    char at[P_MAX];
    prefix(where, r->line, at, sizeof at);
    return mdf_error_set(err, MDF_ERR_IO, "%s%s '%s' cannot be written: %s (checked before the run, so no step is "
                         "lost)", at, r->what, r->path, why);
}

static mdf_status check_writable(const char *where, const path_role *r, mdf_error *err)
{
    char dir[P_MAX], why[P_MAX + 128];
    struct stat sb;
    int pattern = strstr(r->path, "{id}") != NULL;
    if (!pattern && stat(r->path, &sb) == 0) {
        if (S_ISDIR(sb.st_mode)) return unwritable(where, r, "it is a folder: give a file name", err);
        if (access(r->path, W_OK) != 0) {
            snprintf(why, sizeof why, "%s: make it writable or give another path", strerror(errno));
            return unwritable(where, r, why, err);
        }
    } else if (!pattern && errno != ENOENT) {
        snprintf(why, sizeof why, "%s: give another path", strerror(errno));
        return unwritable(where, r, why, err);
    }
    folder_of(r->path, dir, sizeof dir);
    if (strstr(dir, "{id}")) return MDF_OK; /* folders per system: made by the user, checked when written */
    if (stat(dir, &sb) != 0) {
        snprintf(why, sizeof why, "its folder '%s' does not exist (%s): create it or give another path", dir,
                 strerror(errno));
        return unwritable(where, r, why, err);
    }
    if (!S_ISDIR(sb.st_mode)) {
        snprintf(why, sizeof why, "'%s' is not a folder: give another path", dir);
        return unwritable(where, r, why, err);
    }
    /* the writers create a temporary file next to it and rename it */
    if (access(dir, W_OK | X_OK) != 0) {
        snprintf(why, sizeof why, "its folder '%s' is not writable (%s): make it writable or give another path",
                 dir, strerror(errno));
        return unwritable(where, r, why, err);
    }
    return MDF_OK;
}

mdf_status paths_check_distinct(const char *where, const path_role *roles, size_t n, mdf_error *err)
{
    mdf_status st = MDF_OK;
    for (size_t i = 0; st == MDF_OK && i < n; i++)
        for (size_t j = i + 1; st == MDF_OK && j < n; j++)
            if (given(&roles[i]) && given(&roles[j])) st = check_pair(where, &roles[i], &roles[j], err);
    return st;
}

mdf_status paths_check_writable(const char *where, const path_role *roles, size_t n, mdf_error *err)
{
    mdf_status st = MDF_OK;
    for (size_t i = 0; st == MDF_OK && i < n; i++)
        if (given(&roles[i]) && roles[i].output) st = check_writable(where, &roles[i], err);
    return st;
}
