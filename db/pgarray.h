/*
 * pgarray.h - PostgreSQL array literals ("{a,NULL,\"b c\"}") built in C, so a
 * batch of rows travels as a few array parameters of one prepared statement
 * (unnest()ed on the server) instead of one statement per row.
 */
#ifndef AIDC_PGARRAY_H
#define AIDC_PGARRAY_H

#include "../lib/sbuf.h"

#include <stddef.h>

struct pgarray {
    struct sbuf sb;
    size_t n;
};

#define PGARRAY_INIT {SBUF_INIT, 0}

/* Append an element (NULL: an SQL NULL element); quoted and escaped. */
void pgarray_add(struct pgarray *a, const char *elem);
void pgarray_addf(struct pgarray *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The literal so far ("{}" when empty); valid until the next add or free. */
const char *pgarray_str(struct pgarray *a);
void pgarray_reset(struct pgarray *a);
void pgarray_free(struct pgarray *a);

#endif
