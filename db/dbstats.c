/* dbstats.c - connection counters (see dbstats.h). */
#include "dbstats.h"

#include <stdatomic.h>

static atomic_ulong reconnects, connects[DB_POOL_COUNT];
static atomic_long connections[DB_POOL_COUNT], busy_count[DB_POOL_COUNT];

void dbstats_connection(enum db_pool pool, int delta)
{
    atomic_fetch_add(&connections[pool], delta);
}

void dbstats_busy(enum db_pool pool, int delta)
{
    atomic_fetch_add(&busy_count[pool], delta);
}

void dbstats_reconnected(void)
{
    atomic_fetch_add(&reconnects, 1);
}

void dbstats_connected(enum db_pool pool)
{
    atomic_fetch_add(&connects[pool], 1);
}

unsigned long dbstats_connects(enum db_pool pool)
{
    return atomic_load(&connects[pool]);
}

unsigned long db_reconnect_count(void)
{
    return atomic_load(&reconnects);
}

long db_connection_count(enum db_pool pool)
{
    return atomic_load(&connections[pool]);
}

long db_busy_count(enum db_pool pool)
{
    return atomic_load(&busy_count[pool]);
}
