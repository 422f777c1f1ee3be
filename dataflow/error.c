/* mdflow — error recording. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include "mdflow/error.h"

/* Never reads *err: callers may pass an mdf_error they never initialised
 * (a stack variable), and a struct reused from an earlier failure must not
 * drag that old message into the new one. Context goes on a cause through
 * mdf_error_prefix, where the cause was just set. */
static void set_text(mdf_error *err, mdf_status code, const char *text)
{
    snprintf(err->message, sizeof err->message, "%s", text);
    err->code = code;
}

mdf_status mdf_error_set(mdf_error *err, mdf_status code, const char *fmt, ...)
{
    if (!err) return code;
    char text[MDF_ERROR_MESSAGE_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    set_text(err, code, text);
    return code;
}

mdf_status mdf_error_prefix(mdf_error *err, mdf_status code, const char *fmt, ...)
{
    if (!err) return code;
    char text[MDF_ERROR_MESSAGE_MAX], joined[2 * MDF_ERROR_MESSAGE_MAX + 2];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    if (err->message[0]) snprintf(joined, sizeof joined, "%s: %s", text, err->message);
    else snprintf(joined, sizeof joined, "%s", text);
    snprintf(err->message, sizeof err->message, "%.*s", MDF_ERROR_MESSAGE_MAX - 1, joined);
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
