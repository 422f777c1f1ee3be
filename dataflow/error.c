/* mdflow — error recording. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include "mdflow/error.h"

mdf_status mdf_error_set(mdf_error *err, mdf_status code, const char *fmt, ...)
{
    if (!err) return code;
    char text[MDF_ERROR_MESSAGE_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    if (err->code != MDF_OK && err->message[0]) {
        /* Keep the deeper cause after the new context. */
        char joined[2 * MDF_ERROR_MESSAGE_MAX + 2];
        snprintf(joined, sizeof joined, "%s: %s", text, err->message);
        snprintf(err->message, sizeof err->message, "%.*s", MDF_ERROR_MESSAGE_MAX - 1, joined);
    } else {
        snprintf(err->message, sizeof err->message, "%s", text);
    }
    err->code = code;
    return code;
}

void mdf_error_clear(mdf_error *err)
{
    if (!err) return;
    err->code = MDF_OK;
    err->message[0] = '\0';
}

const char *mdf_status_name(mdf_status code)
{
    switch (code) {
    case MDF_OK: return "ok";
    case MDF_ERR_INVALID: return "invalid input";
    case MDF_ERR_IO: return "I/O error";
    case MDF_ERR_PARSE: return "parse error";
    case MDF_ERR_NOMEM: return "out of memory";
    case MDF_ERR_STARPU: return "StarPU error";
    case MDF_ERR_PHYSICS: return "unphysical input";
    case MDF_ERR_UNSUPPORTED: return "unsupported";
    }
    return "unknown error";
}
