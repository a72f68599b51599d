/*
 * ptrset.h - a set of pointers (open addressing, linear probing, grown as it
 * fills): which of a fixed family of static objects a resource has seen, such
 * as the statements prepared on one database connection. Not thread-safe: one
 * owner at a time. A zeroed struct ptrset is an empty set.
 */
#ifndef AIDC_PTRSET_H
#define AIDC_PTRSET_H

#include <stdbool.h>
#include <stddef.h>

struct ptrset {
    const void **slot;
    size_t cap; /* a power of two, or 0 before the first add */
    size_t n;
};

bool ptrset_has(const struct ptrset *s, const void *p);
/* Adds p (not NULL); aborts when out of memory, as xalloc does. */
void ptrset_add(struct ptrset *s, const void *p);
void ptrset_del(struct ptrset *s, const void *p);
/* Empty again, keeping the table for reuse. */
void ptrset_clear(struct ptrset *s);
void ptrset_free(struct ptrset *s);

#endif
