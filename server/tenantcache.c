/* tenantcache.c - tenants resolved by slug, per thread (see tenantcache.h). */
#include "tenantcache.h"

#include "../lib/threadlocal.h"

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define SLOTS 256 /* direct-mapped: a collision just replaces the older entry */
#define SLUG_MAX 64

struct entry {
    char slug[SLUG_MAX];
    struct tenantcache_hit t;
    time_t until;
};

struct table {
    struct entry slots[SLOTS];
};

static pthread_key_t tkey;
static pthread_once_t tonce = PTHREAD_ONCE_INIT;

static void tkey_init(void)
{
    if (pthread_key_create(&tkey, free) != 0)
        abort();
}

static struct entry *slot(const char *slug)
{
    pthread_once(&tonce, tkey_init);
    struct table *t = threadlocal_block(tkey, sizeof *t);
    uint32_t h = 2166136261u; /* FNV-1a */
    for (const unsigned char *p = (const unsigned char *)slug; *p; p++)
        h = (h ^ *p) * 16777619u;
    return &t->slots[h % SLOTS];
}

bool tenantcache_get(const char *slug, long long min_epoch, time_t now,
                     struct tenantcache_hit *out)
{
    const struct entry *e = slot(slug);
    if (strcmp(e->slug, slug) != 0 || now >= e->until || e->t.epoch < min_epoch)
        return false;
    *out = e->t;
    return true;
}

void tenantcache_put(const char *slug, const char *id, bool suspended, long long epoch,
                     time_t now)
{
    struct entry *e = slot(slug);
    if (strlen(slug) >= sizeof e->slug || strlen(id) >= sizeof e->t.id)
        return;
    strcpy(e->slug, slug);
    strcpy(e->t.id, id);
    e->t.suspended = suspended;
    e->t.epoch = epoch;
    e->until = now + TENANTCACHE_TTL;
}
