/*
 * idmap.h - a small hash map from id strings (UUIDs) to dense indexes, for
 * turning the rows of a snapshot into the arrays the admission function
 * works on. Keys are copied; indexes are given out 0, 1, 2, ... in order.
 */
#ifndef AIDC_IDMAP_H
#define AIDC_IDMAP_H

#include <stdbool.h>
#include <stddef.h>

struct idmap {
    char **keys;   /* [cap] slots, NULL when empty */
    int *vals;     /* [cap] */
    size_t cap, n;
};

/* The index of key, or -1. */
int idmap_get(const struct idmap *m, const char *key);
/* The index of key, adding it (as the next index) if new. */
int idmap_add(struct idmap *m, const char *key);
void idmap_free(struct idmap *m);

#endif
