/*
 * ptrset.c - pointer set; deletion shifts the rest of a probe run back, so no
 * tombstones pile up on a set whose members come and go (docs: ptrset.h).
 */
#include "ptrset.h"

#include "xalloc.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static size_t home(const struct ptrset *s, const void *p)
{
    /* Fibonacci hashing of the address: static objects sit a few dozen bytes apart */
    uint64_t h = (uint64_t)(uintptr_t)p * 11400714819323198485ull;
    return (size_t)(h >> 32) & (s->cap - 1);
}

/* The slot of p, or of the empty slot where it would go. */
static size_t find(const struct ptrset *s, const void *p)
{
    size_t i = home(s, p);
    while (s->slot[i] && s->slot[i] != p)
        i = (i + 1) & (s->cap - 1);
    return i;
}

bool ptrset_has(const struct ptrset *s, const void *p)
{
    return s->cap && p && s->slot[find(s, p)] == p;
}

static void grow(struct ptrset *s)
{
    struct ptrset bigger = {xcalloc(s->cap ? s->cap * 2 : 64, sizeof *s->slot),
                            s->cap ? s->cap * 2 : 64, 0};
    for (size_t i = 0; i < s->cap; i++)
        if (s->slot[i])
            ptrset_add(&bigger, s->slot[i]);
    free((void *)s->slot);
    *s = bigger;
}

void ptrset_add(struct ptrset *s, const void *p)
{
    if (!p || ptrset_has(s, p))
        return;
    if ((s->n + 1) * 2 > s->cap) /* at most half full: probe runs stay short */
        grow(s);
    s->slot[find(s, p)] = p;
    s->n++;
}

void ptrset_del(struct ptrset *s, const void *p)
{
    if (!ptrset_has(s, p))
        return;
    size_t i = find(s, p), mask = s->cap - 1;
    s->slot[i] = NULL;
    s->n--;
    /* Move back every later member of the run that its home no longer reaches. */
    for (size_t j = (i + 1) & mask; s->slot[j]; j = (j + 1) & mask) {
        size_t h = home(s, s->slot[j]);
        /* j's member may stay when its home lies cyclically in (i, j] */
        bool stays = i <= j ? (i < h && h <= j) : (i < h || h <= j);
        if (!stays) {
            s->slot[i] = s->slot[j];
            s->slot[j] = NULL;
            i = j;
        }
    }
}

void ptrset_clear(struct ptrset *s)
{
    if (s->cap)
        memset((void *)s->slot, 0, s->cap * sizeof *s->slot);
    s->n = 0;
}

void ptrset_free(struct ptrset *s)
{
    free((void *)s->slot);
    *s = (struct ptrset){0};
}
