/*
 * xalloc.h - allocation that cannot return NULL.
 *
 * Out of memory is not a condition aidcd can serve through: like Redis, Kore and
 * PostgreSQL these wrappers log and abort instead of threading ENOMEM through
 * every caller. Sizes are overflow-checked.
 */
#ifndef AIDC_XALLOC_H
#define AIDC_XALLOC_H

#include <stddef.h>

void *xmalloc(size_t n);
void *xcalloc(size_t count, size_t size);
void *xrealloc(void *p, size_t n);
/* Growable array helper: realloc to count*size bytes, checking the product. */
void *xreallocarray(void *p, size_t count, size_t size);
char *xstrdup(const char *s);
char *xstrndup(const char *s, size_t n);
/* printf into a fresh string; the caller frees it. */
char *xasprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
