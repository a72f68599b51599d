/* deliverpool.c - concurrent delivery of a batch (see deliverpool.h). */
#include "deliverpool.h"

#include "../db/db.h"
#include "../lib/log.h"
#include "../lib/xalloc.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

struct deliverpool {
    int threads, per_key;
    struct db **dbs; /* threads - 1 connections of the helpers, opened lazily */
};

/* One run: the items, which are taken, and how many run per key. */
struct batch {
    pthread_mutex_t mu;
    pthread_cond_t freed; /* a key's slot came free */
    const char *items;
    size_t n, sz, untaken;
    bool *taken;
    int *inflight;  /* per item: how many of its key run (the first item of the key counts) */
    size_t *key_of; /* item -> index of the first item with the same key */
    int per_key;
    deliverpool_fn *fn;
    void *arg;
};

struct helper {
    struct batch *b;
    struct db *db;
};

struct deliverpool *deliverpool_new(const char *url, const char *name, int threads, int per_key)
{
    struct deliverpool *p = xcalloc(1, sizeof *p);
    p->threads = threads < 1 ? 1 : threads;
    p->per_key = per_key < 1 ? 1 : per_key;
    p->dbs = xcalloc((size_t)p->threads, sizeof(struct db *));
    for (int i = 1; i < p->threads; i++) {
        char *app = xasprintf("aidcd-%s-%d", name, i);
        p->dbs[i - 1] = db_open(url, app);
        free(app);
        db_set_pool(p->dbs[i - 1], DB_POOL_WORKER);
    }
    return p;
}

void deliverpool_free(struct deliverpool *p)
{
    if (!p)
        return;
    for (int i = 1; i < p->threads; i++)
        db_close(p->dbs[i - 1]);
    free(p->dbs);
    free(p);
}

/* The first untaken item whose key has a free slot, or n. Under b->mu. */
static size_t pick(const struct batch *b)
{
    for (size_t i = 0; i < b->n; i++)
        if (!b->taken[i] && b->inflight[b->key_of[i]] < b->per_key)
            return i;
    return b->n;
}

/* Take items until none is left untaken; wait while all left are on busy keys. */
static void work(struct batch *b, struct db *db)
{
    pthread_mutex_lock(&b->mu);
    while (b->untaken > 0) {
        size_t i = pick(b);
        if (i == b->n) {
            pthread_cond_wait(&b->freed, &b->mu);
            continue;
        }
        b->taken[i] = true;
        b->untaken--;
        b->inflight[b->key_of[i]]++;
        pthread_mutex_unlock(&b->mu);
        b->fn(db, b->items + i * b->sz, b->arg);
        pthread_mutex_lock(&b->mu);
        b->inflight[b->key_of[i]]--;
        pthread_cond_broadcast(&b->freed);
    }
    pthread_mutex_unlock(&b->mu);
}

static void *helper_main(void *arg)
{
    struct helper *h = arg;
    work(h->b, h->db);
    return NULL;
}

void deliverpool_run(struct deliverpool *p, struct db *db, const void *items, size_t n, size_t sz,
                     deliverpool_key *key, deliverpool_fn *fn, void *arg)
{
    if (n == 0)
        return;
    size_t helpers = (size_t)p->threads - 1;
    if (helpers > n - 1)
        helpers = n - 1;
    if (helpers == 0) { /* nothing to share: no thread, no lock */
        for (size_t i = 0; i < n; i++)
            fn(db, (const char *)items + i * sz, arg);
        return;
    }
    struct batch b = {.items = items,
                      .n = n,
                      .sz = sz,
                      .untaken = n,
                      .per_key = p->per_key,
                      .fn = fn,
                      .arg = arg};
    pthread_mutex_init(&b.mu, NULL);
    pthread_cond_init(&b.freed, NULL);
    b.taken = xcalloc(n, sizeof *b.taken);
    b.inflight = xcalloc(n, sizeof *b.inflight);
    b.key_of = xcalloc(n, sizeof *b.key_of);
    for (size_t i = 0; i < n; i++) { /* a batch is small (tens): quadratic is fine */
        const char *k = key((const char *)items + i * sz);
        b.key_of[i] = i;
        for (size_t j = 0; j < i; j++)
            if (strcmp(key((const char *)items + j * sz), k) == 0) {
                b.key_of[i] = j;
                break;
            }
    }
    struct helper *hs = xcalloc(helpers, sizeof *hs);
    pthread_t *tids = xcalloc(helpers, sizeof *tids);
    size_t started = 0;
    for (size_t i = 0; i < helpers; i++) {
        hs[i] = (struct helper){.b = &b, .db = p->dbs[i]};
        if (pthread_create(&tids[i], NULL, helper_main, &hs[i]) != 0) {
            log_warn("dispatcher: cannot start a delivery thread: %zu of %zu run", started + 1,
                     helpers + 1);
            break; /* the caller and those started deliver everything */
        }
        started++;
    }
    work(&b, db);
    for (size_t i = 0; i < started; i++)
        pthread_join(tids[i], NULL);
    free(tids);
    free(hs);
    free(b.taken);
    free(b.inflight);
    free(b.key_of);
    pthread_cond_destroy(&b.freed);
    pthread_mutex_destroy(&b.mu);
}
