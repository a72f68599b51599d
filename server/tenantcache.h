/*
 * tenantcache.h - a per-thread memory of tenants resolved by slug for
 * platform-wide roles.
 *
 * A member's tenants come with its actor; a platform admin, finance or an
 * auditor names any tenant, and each such request looked its slug up in a
 * transaction of its own (a round trip, and PostgreSQL's context and lookup)
 * before its own. A resolution is remembered with the auth epoch it was made
 * at: suspending or deleting a tenant moves the epoch (0001_init.sql's
 * triggers; a deletion also suspends), and a request that used a remembered
 * one pins its transaction to that epoch (db_ctx.remembered_at), so it runs
 * again, resolving afresh, if anything moved the epoch since. Entries live
 * TENANTCACHE_TTL seconds at most. Each thread has its own table: no locks.
 */
#ifndef AIDC_TENANTCACHE_H
#define AIDC_TENANTCACHE_H

#include <stdbool.h>
#include <time.h>

#define TENANTCACHE_TTL 60

struct tenantcache_hit {
    char id[37];
    bool suspended;
    long long epoch; /* the auth epoch it was resolved at */
};

/* The tenant remembered for slug if resolved at min_epoch or later. */
bool tenantcache_get(const char *slug, long long min_epoch, time_t now,
                     struct tenantcache_hit *out);
/* Remember slug's tenant as resolved at epoch (slugs too long to keep are not kept). */
void tenantcache_put(const char *slug, const char *id, bool suspended, long long epoch,
                     time_t now);

#endif
