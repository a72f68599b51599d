/*
 * authcache.h - a per-thread cache of actors by credential.
 *
 * Loading an actor costs a database round trip; checking that a remembered
 * one is still current costs nothing extra, because the context statement of
 * every request transaction checks it anyway (users.auth_version, token
 * revocation and expiry, session logout: see db/db.h). So the cache needs no
 * invalidation messages: an entry that turns out stale is dropped and the
 * request runs again with a freshly loaded actor (server/dispatch.c).
 *
 * Keys are the SHA-256 of the credential string (API token or session JWT),
 * so the cache never holds a secret. Entries live AUTHCACHE_TTL seconds at most
 * (and never past a session's expiry). Each worker thread has its own table:
 * no locks.
 */
#ifndef AIDC_AUTHCACHE_H
#define AIDC_AUTHCACHE_H

#include "request.h"

#include <stdbool.h>
#include <time.h>

#define AUTHCACHE_TTL 60

/* Copy the actor remembered for key into *out (which must be empty). */
bool authcache_get(const char key[65], time_t now, struct actor *out);
/* Remember a copy of a for key until min(now + TTL, not_after). */
void authcache_put(const char key[65], const struct actor *a, time_t now, time_t not_after);
/* Record that key's actor was found current at auth epoch `epoch`. */
void authcache_set_epoch(const char key[65], long long epoch);
/* Forget key. */
void authcache_drop(const char key[65]);
/* Deep copy of an actor (dst must be empty; free with actor_free). */
void authcache_actor_copy(struct actor *dst, const struct actor *src);

#endif
