/* prefetch.c - statements sent ahead of the round trip that answers them (prefetch.h). */
#include "prefetch.h"

#include "../lib/err.h"
#include "../lib/log.h"
#include "../lib/xalloc.h"

#include <stdlib.h>
#include <string.h>

static void forget(struct db_kept *k)
{
    if (k->params)
        for (int i = 0; i < k->stmt->nparams; i++)
            free(k->params[i]);
    free(k->params);
    PQclear(k->r);
    *k = (struct db_kept){0};
}

void prefetch_clear(struct db *db)
{
    for (int i = 0; i < db->npending; i++) /* answers still in flight: only their errors count */
        if (db->pending[i] == PEND_KEEP)
            db->pending[i] = PEND_CHECK;
    for (int i = 0; i < db->nkept; i++)
        forget(&db->kept[i]);
    db->nkept = 0;
}

void db_prefetch(struct db *db, const struct db_stmt *stmt, const char *const *params)
{
    /* only where a later query of the same transaction will look for it */
    if (!db->up || !db->in_tx || db->autoctx || db->tx_failed || db->scope_lost ||
        db->nkept >= MAX_KEPT || db->npending >= MAX_PENDING - 8)
        return;
    struct db_kept *k = &db->kept[db->nkept];
    k->stmt = stmt;
    k->params = xcalloc((size_t)stmt->nparams + 1, sizeof *k->params);
    for (int i = 0; i < stmt->nparams; i++)
        k->params[i] = params[i] ? xstrdup(params[i]) : NULL;
    /* a send that fails is the next query's to find: a lost connection is then
     * replaced as before any statement */
    if (dbint_send_stmt(db, stmt, params, PEND_KEEP)) {
        forget(k);
        return;
    }
    db->pend_kept[db->npending - 1] = (unsigned char)db->nkept; /* the entry just pushed */
    k->sent = true;
    db->nkept++;
}

void prefetch_answered(struct db *db, int i, PGresult *r)
{
    int slot = db->pend_kept[i];
    if (slot >= db->nkept || db->kept[slot].r) { /* never: the list is ours */
        log_error("a prefetched answer without its statement");
        PQclear(r);
        return;
    }
    db->kept[slot].r = r;
    db->kept[slot].sent = false;
}

void prefetch_done(struct db *db, int i)
{
    int slot = db->pend_kept[i];
    if (slot >= db->nkept || !db->kept[slot].sent)
        return;
    db->kept[slot].sent = false;
    log_warn("prefetched statement %s got no answer: %s", db->kept[slot].stmt->name,
             db->last.message);
}

static bool same(const struct db_kept *k, const struct db_stmt *stmt, const char *const *params)
{
    if (k->stmt != stmt)
        return false;
    for (int i = 0; i < stmt->nparams; i++) {
        const char *a = k->params[i], *b = params ? params[i] : NULL;
        if ((a == NULL) != (b == NULL) || (a && strcmp(a, b) != 0))
            return false;
    }
    return true;
}

int prefetch_take(struct db *db, const struct db_stmt *stmt, const char *const *params,
                  PGresult **r)
{
    *r = NULL;
    int i = 0;
    while (i < db->nkept && !same(&db->kept[i], stmt, params))
        i++;
    if (i == db->nkept)
        return 0;
    if (db->kept[i].sent) { /* still in flight: this round trip answers it */
        int e = dbint_sync_and_drain(db, NULL);
        if (e || i >= db->nkept) /* a lost connection forgot it */
            return e ? e : AIDC_EUNAVAIL;
    }
    struct db_kept *k = &db->kept[i];
    *r = k->r; /* taken once: a second query of it runs as any other (as does one that
                  failed: its query says why) */
    k->r = NULL;
    forget(k);
    return 0;
}
