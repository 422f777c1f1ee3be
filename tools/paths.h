/* mdflow — the files a command reads and writes, checked before it runs:
 * no output may be an input or another output (a checkpoint written over
 * the input .xyz turned it into HDF5, a log over --input destroyed it, both
 * with exit status 0), and every output must be writable (an unwritable
 * --output was found only after the run, its steps lost). */
#ifndef MDF_PATHS_H
#define MDF_PATHS_H

#include <stddef.h>
#include "mdflow/error.h"

typedef struct path_role {
    const char *what;  /* the option or key, for messages: "--output", "output.snapshots" */
    const char *path;  /* NULL or "": not given */
    int output;        /* 1: written (or continued), 0: only read */
    int line;          /* the workflow line it is on (0: none) */
} path_role;

/* 1 when a and b name the same file: by device and inode when both exist,
 * by their normalised paths (folders resolved, "." and ".." folded) when
 * neither does. */
int paths_same(const char *a, const char *b);

/* Every pair of roles where one is an output names two different files
 * (MDF_ERR_INVALID otherwise, naming both). where: the workflow file, which
 * prefixes messages as "FILE:LINE: " (NULL: none). */
mdf_status paths_check_distinct(const char *where, const path_role *roles, size_t n, mdf_error *err);

/* Every output is writable: its folder exists and is writable (the writers
 * write a temporary file next to it and rename it), and an existing file is
 * writable and not a folder (MDF_ERR_IO otherwise). A path holding "{id}"
 * (one file per system) is checked for its folder only. */
mdf_status paths_check_writable(const char *where, const path_role *roles, size_t n, mdf_error *err);

#endif
