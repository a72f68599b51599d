/* authcache.c - per-thread actor cache (see authcache.h). */
#include "authcache.h"

#include "../lib/crypto.h"
#include "../lib/threadlocal.h"
#include "../lib/xalloc.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define AUTHCACHE_KEY_LEN 64 /* SHA-256 in hex, without the NUL */
#define SLOTS 512 /* direct-mapped: a collision just replaces the older entry */

struct entry {
    char key[65];
    time_t until;
    struct actor actor;
};

struct table {
    struct entry slots[SLOTS];
};

static pthread_key_t tkey;
static pthread_once_t tonce = PTHREAD_ONCE_INIT;

static void table_free(void *p)
{
    struct table *t = p;
    for (size_t i = 0; i < SLOTS; i++)
        actor_free(&t->slots[i].actor);
    free(t);
}

static void tkey_init(void)
{
    if (pthread_key_create(&tkey, table_free) != 0)
        abort();
}

static struct table *table_get(void)
{
    pthread_once(&tonce, tkey_init);
    return threadlocal_block(tkey, sizeof(struct table));
}

static struct entry *slot(const char key[65])
{
    /* the key is a SHA-256 in hex: its first digits are already uniform */
    unsigned long h = strtoul((char[9]){key[0], key[1], key[2], key[3], key[4], key[5], key[6],
                                        key[7], 0},
                              NULL, 16);
    return &table_get()->slots[h % SLOTS];
}

void authcache_actor_copy(struct actor *dst, const struct actor *src)
{
    *dst = *src;
    dst->username = src->username ? xstrdup(src->username) : NULL;
    dst->memberships = NULL;
    if (src->nmemberships) {
        dst->memberships = xcalloc(src->nmemberships, sizeof *dst->memberships);
        for (size_t i = 0; i < src->nmemberships; i++) {
            dst->memberships[i] = src->memberships[i];
            dst->memberships[i].slug = xstrdup(src->memberships[i].slug);
        }
    }
}

bool authcache_get(const char key[65], time_t now, struct actor *out)
{
    struct entry *e = slot(key);
    /* the key is derived from a credential: compared in constant time (docs/secrets.md) */
    if (!e->key[0] || !crypto_equal(e->key, key, AUTHCACHE_KEY_LEN) || now >= e->until)
        return false;
    authcache_actor_copy(out, &e->actor);
    return true;
}

void authcache_put(const char key[65], const struct actor *a, time_t now, time_t not_after)
{
    struct entry *e = slot(key);
    actor_free(&e->actor);
    memcpy(e->key, key, 65);
    e->until = now + AUTHCACHE_TTL;
    if (not_after && not_after < e->until)
        e->until = not_after;
    authcache_actor_copy(&e->actor, a);
}

void authcache_set_epoch(const char key[65], long long epoch)
{
    struct entry *e = slot(key);
    if (crypto_equal(e->key, key, AUTHCACHE_KEY_LEN))
        e->actor.auth_epoch = epoch;
}

void authcache_drop(const char key[65])
{
    struct entry *e = slot(key);
    if (crypto_equal(e->key, key, AUTHCACHE_KEY_LEN)) {
        actor_free(&e->actor);
        e->key[0] = '\0';
    }
}
