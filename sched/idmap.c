/* idmap.c - open addressing with linear probing (see idmap.h). */
#include "idmap.h"

#include "../lib/xalloc.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static uint64_t hash(const char *s)
{
    uint64_t h = 1469598103934665603ULL; /* FNV-1a */
    for (; *s; s++) {
        h ^= (unsigned char)*s;
        h *= 1099511628211ULL;
    }
    return h;
}

static size_t slot(const struct idmap *m, const char *key)
{
    size_t i = (size_t)(hash(key) & (m->cap - 1));
    while (m->keys[i] && strcmp(m->keys[i], key) != 0)
        i = (i + 1) & (m->cap - 1);
    return i;
}

int idmap_get(const struct idmap *m, const char *key)
{
    if (!m->cap || !key)
        return -1;
    size_t i = slot(m, key);
    return m->keys[i] ? m->vals[i] : -1;
}

static void grow(struct idmap *m)
{
    struct idmap bigger = {.cap = m->cap ? m->cap * 2 : 64, .n = m->n};
    bigger.keys = xcalloc(bigger.cap, sizeof *bigger.keys);
    bigger.vals = xcalloc(bigger.cap, sizeof *bigger.vals);
    for (size_t i = 0; i < m->cap; i++) {
        if (!m->keys[i])
            continue;
        size_t j = slot(&bigger, m->keys[i]);
        bigger.keys[j] = m->keys[i];
        bigger.vals[j] = m->vals[i];
    }
    free(m->keys);
    free(m->vals);
    *m = bigger;
}

int idmap_add(struct idmap *m, const char *key)
{
    if ((m->n + 1) * 2 > m->cap)
        grow(m); /* at most half full: probes stay short */
    size_t i = slot(m, key);
    if (!m->keys[i]) {
        m->keys[i] = xstrdup(key);
        m->vals[i] = (int)m->n++;
    }
    return m->vals[i];
}

void idmap_free(struct idmap *m)
{
    for (size_t i = 0; i < m->cap; i++)
        free(m->keys[i]);
    free(m->keys);
    free(m->vals);
    memset(m, 0, sizeof *m);
}
