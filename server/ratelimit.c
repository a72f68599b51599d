/*
 * ratelimit.c - connection counts and token buckets by address and credential.
 *
 * Each table is a fixed array of entries with chained hash buckets and a free
 * list, behind one mutex; the rate tables are split into shards so that HTTP
 * threads rarely meet on a lock. Nothing is allocated after ratelimit_init().
 */
#include "ratelimit.h"

#include "../lib/netaddr.h"
#include "../lib/xalloc.h"

#include <arpa/inet.h>
#include <math.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define SHARDS 16
#define NIL UINT32_MAX

struct entry {
    char key[RATELIMIT_KEY_LEN];
    double tokens;  /* rate tables: what the bucket holds */
    double last;    /* rate tables: when it was last filled up to now */
    long conns;     /* connection table: open connections */
    bool limited;   /* the last take was refused */
    uint32_t next;  /* next in the hash chain, or in the free list */
};

struct table {
    pthread_mutex_t mu;
    struct entry *e;
    uint32_t *heads;
    uint32_t cap, nheads, used, free_head;
    uint32_t hand; /* next victim when a flood leaves nothing refilled */
};

struct limiter {
    double rate, burst; /* rate 0: off */
    struct table shards[SHARDS];
};

static struct limiter g_rate[2];     /* [RATELIMIT_ADDRESS], [RATELIMIT_TOKEN] */
static struct table g_conns;         /* open connections per address */
static long g_conns_max;             /* 0: no per-address limit */

static uint32_t hash_key(const char *s)
{
    uint32_t h = 2166136261u; /* FNV-1a: keys are short; an attacker choosing
                               * colliding addresses only lengthens one chain */
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 16777619u;
    return h;
}

static void table_init(struct table *t, uint32_t cap)
{
    pthread_mutex_init(&t->mu, NULL);
    t->cap = cap;
    t->nheads = 1;
    while (t->nheads < cap * 2)
        t->nheads <<= 1;
    t->e = xcalloc(cap, sizeof *t->e);
    t->heads = xmalloc(t->nheads * sizeof *t->heads);
    for (uint32_t i = 0; i < t->nheads; i++)
        t->heads[i] = NIL;
    for (uint32_t i = 0; i < cap; i++)
        t->e[i].next = i + 1 < cap ? i + 1 : NIL;
    t->free_head = cap ? 0 : NIL;
    t->used = 0;
}

static void table_free(struct table *t)
{
    if (!t->e)
        return;
    pthread_mutex_destroy(&t->mu);
    free(t->e);
    free(t->heads);
    memset(t, 0, sizeof *t);
}

static struct entry *table_find(struct table *t, const char *key, uint32_t h)
{
    for (uint32_t i = t->heads[h & (t->nheads - 1)]; i != NIL; i = t->e[i].next)
        if (strcmp(t->e[i].key, key) == 0)
            return &t->e[i];
    return NULL;
}

static void table_remove(struct table *t, uint32_t idx)
{
    uint32_t *link = &t->heads[hash_key(t->e[idx].key) & (t->nheads - 1)];
    while (*link != idx)
        link = &t->e[*link].next;
    *link = t->e[idx].next;
    t->e[idx].next = t->free_head;
    t->free_head = idx;
    t->used--;
}

/* A new zeroed entry for key, or NULL when the table is full. */
static struct entry *table_add(struct table *t, const char *key, uint32_t h)
{
    if (t->free_head == NIL)
        return NULL;
    uint32_t idx = t->free_head;
    struct entry *en = &t->e[idx];
    t->free_head = en->next;
    memset(en, 0, sizeof *en);
    snprintf(en->key, sizeof en->key, "%s", key);
    uint32_t *head = &t->heads[h & (t->nheads - 1)];
    en->next = *head;
    *head = idx;
    t->used++;
    return en;
}

/*
 * Make room in a full rate shard: forget every bucket that has refilled (it
 * would be created full again). When none has (a flood of new keys, all
 * mid-burst), forget a sixteenth of the shard round-robin, so the scan is paid
 * once per many inserts, not once per insert.
 */
static void shard_evict(struct table *t, const struct limiter *l, double now)
{
    bool freed = false;
    for (uint32_t i = 0; i < t->cap; i++) {
        struct entry *en = &t->e[i];
        if (en->key[0] && en->tokens + (now - en->last) * l->rate >= l->burst) {
            table_remove(t, i);
            en->key[0] = '\0';
            freed = true;
        }
    }
    for (uint32_t n = 0; !freed && n < t->cap / 16 + 1; n++) {
        struct entry *en = &t->e[t->hand];
        if (en->key[0]) {
            table_remove(t, t->hand);
            en->key[0] = '\0';
        }
        t->hand = (t->hand + 1) % t->cap;
    }
}

void ratelimit_init(const struct config *cfg)
{
    ratelimit_free();
    g_rate[RATELIMIT_ADDRESS].rate = cfg->rate_limit_per_address;
    g_rate[RATELIMIT_ADDRESS].burst = cfg->rate_limit_address_burst;
    g_rate[RATELIMIT_TOKEN].rate = cfg->rate_limit_per_token;
    g_rate[RATELIMIT_TOKEN].burst = cfg->rate_limit_token_burst;
    for (int k = 0; k < 2; k++)
        for (int s = 0; s < SHARDS; s++)
            if (g_rate[k].rate > 0)
                table_init(&g_rate[k].shards[s], RATELIMIT_MAX_KEYS / SHARDS);
    g_conns_max = cfg->max_connections_per_address;
    if (g_conns_max > 0) /* one entry per open connection at most */
        table_init(&g_conns, (uint32_t)cfg->max_connections + 16);
}

void ratelimit_free(void)
{
    for (int k = 0; k < 2; k++)
        for (int s = 0; s < SHARDS; s++)
            table_free(&g_rate[k].shards[s]);
    table_free(&g_conns);
}

static double monotonic_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

struct ratelimit_decision ratelimit_take_at(enum ratelimit_kind kind, const char *key, double now)
{
    struct ratelimit_decision d = {0};
    struct limiter *l = &g_rate[kind];
    if (l->rate <= 0 || !key || !key[0])
        return d;
    uint32_t h = hash_key(key);
    struct table *t = &l->shards[(h >> 24) % SHARDS];
    pthread_mutex_lock(&t->mu);
    struct entry *en = table_find(t, key, h);
    if (!en) {
        if (t->free_head == NIL)
            shard_evict(t, l, now);
        en = table_add(t, key, h);
        if (en) {
            en->tokens = l->burst;
            en->last = now;
        }
    }
    if (en) {
        if (now > en->last) {
            en->tokens = fmin(l->burst, en->tokens + (now - en->last) * l->rate);
            en->last = now;
        }
        if (en->tokens >= 1.0) {
            en->tokens -= 1.0;
            en->limited = false;
        } else {
            d.limited = true;
            d.first = !en->limited;
            en->limited = true;
            double wait = ceil((1.0 - en->tokens) / l->rate);
            d.retry_after = wait < 1 ? 1 : wait > 86400 ? 86400 : (int)wait;
        }
    }
    pthread_mutex_unlock(&t->mu);
    return d;
}

struct ratelimit_decision ratelimit_take(enum ratelimit_kind kind, const char *key)
{
    return ratelimit_take_at(kind, key, monotonic_now());
}

size_t ratelimit_rate_keys(void)
{
    size_t n = 0;
    for (int k = 0; k < 2; k++)
        for (int s = 0; s < SHARDS; s++) {
            struct table *t = &g_rate[k].shards[s];
            if (!t->e)
                continue;
            pthread_mutex_lock(&t->mu);
            n += t->used;
            pthread_mutex_unlock(&t->mu);
        }
    return n;
}

static void key_from_bytes(int family, const void *addr, char *out, size_t n)
{
    char text[INET6_ADDRSTRLEN];
    if (family == AF_INET6) {
        const unsigned char *b = addr;
        static const unsigned char v4mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
        if (memcmp(b, v4mapped, 12) == 0) {
            key_from_bytes(AF_INET, b + 12, out, n);
            return;
        }
        unsigned char prefix[16] = {0};
        memcpy(prefix, b, 8);
        if (!inet_ntop(AF_INET6, prefix, text, sizeof text))
            text[0] = '\0';
        snprintf(out, n, "%s/64", text);
        return;
    }
    if (!inet_ntop(AF_INET, addr, text, sizeof text))
        text[0] = '\0';
    snprintf(out, n, "%s", text);
}

void ratelimit_address_key(const char *ip, char *out, size_t n)
{
    unsigned char buf[16];
    if (inet_pton(AF_INET, ip, buf) == 1)
        key_from_bytes(AF_INET, buf, out, n);
    else if (inet_pton(AF_INET6, ip, buf) == 1)
        key_from_bytes(AF_INET6, buf, out, n);
    else
        snprintf(out, n, "%s", ip); /* not an address: used as it is */
}

bool ratelimit_sockaddr_key(const struct sockaddr *sa, char *out, size_t n)
{
    if (sa && sa->sa_family == AF_INET) {
        key_from_bytes(AF_INET, &((const struct sockaddr_in *)(const void *)sa)->sin_addr, out, n);
        return true;
    }
    if (sa && sa->sa_family == AF_INET6) {
        key_from_bytes(AF_INET6, &((const struct sockaddr_in6 *)(const void *)sa)->sin6_addr,
                       out, n);
        return true;
    }
    return false;
}

bool ratelimit_conn_allowed(const char *key)
{
    if (g_conns_max <= 0)
        return true;
    pthread_mutex_lock(&g_conns.mu);
    const struct entry *en = table_find(&g_conns, key, hash_key(key));
    bool ok = !en || en->conns < g_conns_max;
    pthread_mutex_unlock(&g_conns.mu);
    return ok;
}

void ratelimit_conn_opened(const char *key)
{
    if (g_conns_max <= 0)
        return;
    uint32_t h = hash_key(key);
    pthread_mutex_lock(&g_conns.mu);
    struct entry *en = table_find(&g_conns, key, h);
    if (!en)
        en = table_add(&g_conns, key, h); /* full: uncounted, the global limit holds */
    if (en)
        en->conns++;
    pthread_mutex_unlock(&g_conns.mu);
}

void ratelimit_conn_closed(const char *key)
{
    if (g_conns_max <= 0)
        return;
    uint32_t h = hash_key(key);
    pthread_mutex_lock(&g_conns.mu);
    struct entry *en = table_find(&g_conns, key, h);
    if (en && --en->conns <= 0) {
        table_remove(&g_conns, (uint32_t)(en - g_conns.e));
        en->key[0] = '\0';
    }
    pthread_mutex_unlock(&g_conns.mu);
}

void ratelimit_forwarded_client(const char *trusted, const char *xff, char *ip, size_t n)
{
    if (!netaddr_in_list(trusted, ip))
        return;
    for (size_t end = strlen(xff); end > 0;) {
        size_t start = end;
        while (start > 0 && xff[start - 1] != ',')
            start--;
        const char *p = xff + start;
        size_t len = end - start;
        while (len && *p == ' ') {
            p++;
            len--;
        }
        while (len && p[len - 1] == ' ')
            len--;
        char cand[INET6_ADDRSTRLEN + 1];
        unsigned char buf[16];
        if (len == 0 || len >= sizeof cand || len >= n)
            return; /* garbage: keep the proxy's own address */
        memcpy(cand, p, len);
        cand[len] = '\0';
        if (inet_pton(AF_INET, cand, buf) != 1 && inet_pton(AF_INET6, cand, buf) != 1)
            return;
        memcpy(ip, cand, len + 1);
        if (!netaddr_in_list(trusted, cand))
            return;
        end = start > 0 ? start - 1 : 0;
    }
}
