/* mdflow — doubles as short decimal text that reads back exactly, and
 * back (real_text.c). */
#ifndef MDF_REAL_TEXT_H
#define MDF_REAL_TEXT_H

#include <stddef.h>

/* x as C's "%.16g" when that reads back as x, else "%.17g"; the length
 * (as snprintf returns it). buf holds at least 32 bytes for the fast path. */
int mdf_real_text(char *buf, size_t size, double x);

/* Whether the whole of s is a number as strtod reads it (1, its value in
 * *out) or not (0, *out untouched): strtod's value and acceptance, with
 * plain decimals of up to 15 significant digits read without it. */
int mdf_real_parse(const char *s, double *out);

#endif
