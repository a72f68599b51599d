/* arraycancel.c - the array-cancel worker (see arraycancel.h). */
#include "arraycancel.h"

#include "../db/arraycancel.h"
#include "../db/worker.h"
#include "../lib/config.h"
#include "../lib/log.h"

#include "../lib/xalloc.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#define INTERVAL_MS 1000

/* One batch of one array, in a transaction of its own: > 0 while there is more. */
static int round_fn(struct db *db, bool notified, void *arg)
{
    (void)notified;
    char *last = arg; /* the array tried last: the next round takes the next one */
    const struct db_ctx ctx = {.roles = "system"};
    char parent[37];
    bool found = false, done = false;
    long n = 0;
    int e = db_begin(db, &ctx, false);
    if (!e)
        e = db_arraycancel_next(db, last[0] ? last : NULL, parent, &found);
    if (!e && found)
        snprintf(last, 37, "%s", parent);
    if (!e && found)
        e = db_arraycancel_batch(db, parent, ARRAYCANCEL_BATCH, &n);
    /* a short batch may have been the last: the array is done when nothing is left */
    if (!e && found && n < ARRAYCANCEL_BATCH)
        e = db_arraycancel_finish(db, parent, &done);
    if (!e)
        e = db_commit(db);
    else
        db_rollback(db);
    if (e)
        return e;
    if (done)
        log_info("array %s: its tasks are all cancelled or asked to stop", parent);
    /* nothing done (tasks held by others): the next tick tries again */
    return n > 0 || done ? 1 : 0;
}

struct worker *arraycancel_start(const struct config *cfg)
{
    struct worker_spec spec = {
        .name = "arraycancel",
        .lead = WORKER_LEAD_ARRAYCANCEL,
        .channels = {"aidc_arrays", NULL},
        .interval_ms = INTERVAL_MS,
        .round = round_fn,
        .arg = xcalloc(1, 37),
        .owns_arg = true,
    };
    return worker_start(cfg->worker_database_url, &spec);
}
