/* deliverpool.c - standing delivery threads (see deliverpool.h). */
#include "deliverpool.h"

#include "../db/db.h"
#include "../lib/log.h"
#include "../lib/xalloc.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* The items of one deliverpool_add: released when the last is done. */
struct owner {
    void *owner;
    deliverpool_release *release;
    size_t left;
};

struct entry {
    const void *item;
    const char *key;
    struct owner *own;
};

struct slot {
    struct deliverpool *p;
    struct db *db;
    pthread_t tid;
    const char *key;  /* of the item it delivers; NULL: idle */
    const void *item; /* ... and the item */
    bool connected;  /* tried to connect while idle, once */
};

struct deliverpool {
    int threads, per_key;
    deliverpool_key *key;
    deliverpool_fn *fn;
    void *arg;
    char *url, *name;
    pthread_mutex_t mu;
    pthread_cond_t work;   /* an item came, a key's slot came free, or stop */
    pthread_cond_t done;   /* an item is done */
    struct entry *waiting; /* in the order handed over; at most threads */
    size_t nwaiting;
    size_t held; /* waiting + being delivered */
    struct slot *slots;
    int started; /* threads running (0: none yet, or none could start) */
    bool tried;  /* threads were started once (lazily, at the first item) */
    bool stop;
};

struct deliverpool *deliverpool_new(const char *url, const char *name, int threads, int per_key,
                                    deliverpool_key *key, deliverpool_fn *fn, void *arg)
{
    struct deliverpool *p = xcalloc(1, sizeof *p);
    p->threads = threads < 1 ? 1 : threads;
    p->per_key = per_key < 1 ? 1 : per_key;
    p->key = key;
    p->fn = fn;
    p->arg = arg;
    p->url = xstrdup(url);
    p->name = xstrdup(name);
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->work, NULL);
    pthread_cond_init(&p->done, NULL);
    p->waiting = xcalloc((size_t)p->threads, sizeof *p->waiting);
    p->slots = xcalloc((size_t)p->threads, sizeof *p->slots);
    return p;
}

/* Items of key being delivered. Under p->mu. */
static int key_running(const struct deliverpool *p, const char *key)
{
    int n = 0;
    for (int i = 0; i < p->started; i++)
        n += p->slots[i].key && strcmp(p->slots[i].key, key) == 0;
    return n;
}

/* Items of key held: being delivered or waiting. Under p->mu. */
static int key_load(const struct deliverpool *p, const char *key)
{
    int n = key_running(p, key);
    for (size_t i = 0; i < p->nwaiting; i++)
        n += strcmp(p->waiting[i].key, key) == 0;
    return n;
}

/* Take the first waiting item whose key has a free slot. Under p->mu. */
static bool take(struct deliverpool *p, struct entry *out)
{
    for (size_t i = 0; i < p->nwaiting; i++) {
        if (key_running(p, p->waiting[i].key) >= p->per_key)
            continue;
        *out = p->waiting[i];
        memmove(&p->waiting[i], &p->waiting[i + 1], (p->nwaiting - i - 1) * sizeof *p->waiting);
        p->nwaiting--;
        return true;
    }
    return false;
}

static void release(struct owner *own)
{
    if (own->release)
        own->release(own->owner);
    free(own);
}

/*
 * One item delivered: its key's slot is free again, and it no longer counts as
 * held - but the last item of an owner only once the owner is released
 * (outside the lock), so that a drain means freed too. Under p->mu.
 */
static void finish(struct deliverpool *p, struct owner *own)
{
    pthread_cond_broadcast(&p->work); /* its key may have an item waiting */
    if (--own->left == 0) {
        pthread_mutex_unlock(&p->mu);
        release(own);
        pthread_mutex_lock(&p->mu);
    }
    p->held--;
    pthread_cond_broadcast(&p->done);
}

static void *slot_main(void *arg)
{
    struct slot *s = arg;
    struct deliverpool *p = s->p;
    pthread_mutex_lock(&p->mu);
    for (;;) {
        struct entry e;
        if (take(p, &e)) {
            s->key = e.key;
            s->item = e.item;
            pthread_mutex_unlock(&p->mu);
            p->fn(s->db, e.item, p->arg);
            pthread_mutex_lock(&p->mu);
            s->key = NULL;
            s->item = NULL;
            finish(p, e.own);
            continue;
        }
        if (p->stop && p->nwaiting == 0)
            break;
        if (!s->connected) { /* idle: connect now rather than when an item comes */
            s->connected = true;
            pthread_mutex_unlock(&p->mu);
            if (db_ensure(s->db) != 0)
                log_debug("%s: a delivery thread could not connect yet (it tries again)", p->name);
            pthread_mutex_lock(&p->mu);
            continue;
        }
        pthread_cond_wait(&p->work, &p->mu);
    }
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

/* Start the threads, once. Under p->mu. */
static void start(struct deliverpool *p)
{
    p->tried = true;
    for (int i = 0; i < p->threads; i++) {
        struct slot *s = &p->slots[p->started];
        char *app = xasprintf("aidcd-%s-%d", p->name, i + 1);
        *s = (struct slot){.p = p, .db = db_open(p->url, app)};
        free(app);
        db_set_pool(s->db, DB_POOL_WORKER);
        if (pthread_create(&s->tid, NULL, slot_main, s) != 0) {
            db_close(s->db);
            log_warn("%s: cannot start a delivery thread: %d of %d run", p->name, p->started,
                     p->threads);
            break;
        }
        p->started++;
    }
}

/* Items it may hold: its threads (all of them before they start; where none could,
 * deliverpool_add delivers in the caller and holds nothing). Under p->mu. */
static int cap(const struct deliverpool *p)
{
    return p->started > 0 ? p->started : p->threads;
}

int deliverpool_room(struct deliverpool *p)
{
    pthread_mutex_lock(&p->mu);
    if (!p->tried)
        start(p);
    int room = cap(p) - (int)p->held;
    pthread_mutex_unlock(&p->mu);
    return room > 0 ? room : 0;
}

bool deliverpool_wait_room(struct deliverpool *p, int timeout_ms)
{
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += timeout_ms / 1000;
    until.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
    if (until.tv_nsec >= 1000000000L) {
        until.tv_sec++;
        until.tv_nsec -= 1000000000L;
    }
    pthread_mutex_lock(&p->mu);
    while ((int)p->held >= cap(p))
        if (pthread_cond_timedwait(&p->done, &p->mu, &until) == ETIMEDOUT)
            break;
    bool room = (int)p->held < cap(p);
    pthread_mutex_unlock(&p->mu);
    return room;
}

void deliverpool_busy_keys(struct deliverpool *p, void (*fn)(const char *key, void *arg), void *arg)
{
    pthread_mutex_lock(&p->mu);
    for (int i = 0; i < p->started; i++) {
        const char *k = p->slots[i].key;
        bool seen = false;
        for (int j = 0; j < i && !seen; j++)
            seen = p->slots[j].key && k && strcmp(p->slots[j].key, k) == 0;
        if (k && !seen && key_load(p, k) >= p->per_key)
            fn(k, arg);
    }
    pthread_mutex_unlock(&p->mu);
}

void deliverpool_add(struct deliverpool *p, struct db *db, const void *items, size_t n, size_t sz,
                     void *owner, deliverpool_release *rel)
{
    if (n == 0) {
        if (rel)
            rel(owner);
        return;
    }
    struct owner *own = xcalloc(1, sizeof *own);
    *own = (struct owner){.owner = owner, .release = rel, .left = n};
    pthread_mutex_lock(&p->mu);
    if (!p->tried)
        start(p);
    size_t room = p->started > 0 && (size_t)p->started > p->held ? (size_t)p->started - p->held : 0;
    size_t queued = n < room ? n : room;
    for (size_t i = 0; i < queued; i++) {
        const void *item = (const char *)items + i * sz;
        p->waiting[p->nwaiting++] = (struct entry){.item = item, .key = p->key(item), .own = own};
    }
    p->held += queued;
    pthread_cond_broadcast(&p->work);
    pthread_mutex_unlock(&p->mu);
    /* no thread (or more than room, which a caller should not hand over): deliver here */
    for (size_t i = queued; i < n; i++) {
        p->fn(db, (const char *)items + i * sz, p->arg);
        pthread_mutex_lock(&p->mu);
        p->held++;
        finish(p, own);
        pthread_mutex_unlock(&p->mu);
    }
}

void deliverpool_each(struct deliverpool *p, void (*fn)(const void *item, void *arg), void *arg)
{
    pthread_mutex_lock(&p->mu);
    for (int i = 0; i < p->started; i++)
        if (p->slots[i].item)
            fn(p->slots[i].item, arg);
    for (size_t i = 0; i < p->nwaiting; i++)
        fn(p->waiting[i].item, arg);
    pthread_mutex_unlock(&p->mu);
}

void deliverpool_drain(struct deliverpool *p)
{
    pthread_mutex_lock(&p->mu);
    while (p->held > 0)
        pthread_cond_wait(&p->done, &p->mu);
    pthread_mutex_unlock(&p->mu);
}

void deliverpool_free(struct deliverpool *p)
{
    if (!p)
        return;
    pthread_mutex_lock(&p->mu);
    p->stop = true;
    pthread_cond_broadcast(&p->work);
    pthread_mutex_unlock(&p->mu);
    for (int i = 0; i < p->started; i++) {
        pthread_join(p->slots[i].tid, NULL);
        db_close(p->slots[i].db);
    }
    pthread_cond_destroy(&p->work);
    pthread_cond_destroy(&p->done);
    pthread_mutex_destroy(&p->mu);
    free(p->waiting);
    free(p->slots);
    free(p->url);
    free(p->name);
    free(p);
}
