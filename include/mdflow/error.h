/* mdflow — error reporting.
 *
 * The library never exits and never prints on its own behalf: every function
 * that can fail returns an mdf_status and, when the caller passes an
 * mdf_error, fills it with a message that names the file, line or system at
 * fault and what to change. */
#ifndef MDFLOW_ERROR_H
#define MDFLOW_ERROR_H

#ifdef __cplusplus
extern "C" {
#endif

typedef enum mdf_status {
    MDF_OK = 0,
    MDF_ERR_INVALID = 1,   /* a parameter or input value is out of range */
    MDF_ERR_IO = 2,        /* a file could not be opened, read or written */
    MDF_ERR_PARSE = 3,     /* a file is malformed (message names the line) */
    MDF_ERR_NOMEM = 4,     /* an allocation failed */
    MDF_ERR_STARPU = 5,    /* StarPU refused to start, register or submit */
    MDF_ERR_PHYSICS = 6,   /* the input is physically impossible (overlap, zero volume) */
    MDF_ERR_UNSUPPORTED = 7
} mdf_status;

#define MDF_ERROR_MESSAGE_MAX 1024

typedef struct mdf_error {
    mdf_status code;
    char message[MDF_ERROR_MESSAGE_MAX];
} mdf_error;

/* Records code and a printf-style message in err (which may be NULL) and
 * returns code, so callers can write `return mdf_error_set(err, ...)`.
 * Whatever err held is replaced, and never read: err may be uninitialised. */
mdf_status mdf_error_set(mdf_error *err, mdf_status code, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

/* Adds context to the cause a call that just failed left in err: the
 * message becomes "text: cause", the code becomes code. Only for an err
 * that call set (mdf_error_set reads nothing, this reads the cause). */
mdf_status mdf_error_prefix(mdf_error *err, mdf_status code, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

/* Empties err (code MDF_OK, empty message). */
void mdf_error_clear(mdf_error *err);

/* A short name for a status code, e.g. "parse error". */
const char *mdf_status_name(mdf_status code);

#ifdef __cplusplus
}
#endif
#endif
