/* readctx.c - a read in one statement (see readctx.h). */
#include "readctx.h"

#include "context.h"

#include "../lib/crypto.h"
#include "../lib/err.h"
#include "../lib/log.h"
#include "../lib/ptrset.h"
#include "../lib/xalloc.h"

#include <ctype.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define NKEEP   5  /* the settings a read needs: db_ctx_keep_stmt's first parameters */
#define NAMEMAX 63 /* PostgreSQL compares prepared statements' names up to this */

/* A statement and its wrapped form on this connection (NULL: it cannot be wrapped). */
struct wrap {
    const struct db_stmt *orig;
    struct db_stmt *w;
};

struct readctx {
    char *kept[NKEEP]; /* what the session holds ("" for nothing), while known */
    bool known;
    /* set with the settings, read back with every row: rows that were read under
     * settings of another session (a pooler the configuration did not name) are
     * refused; random per connection, counted per setting */
    unsigned long long tag_base;
    unsigned tag_count;
    char tag[40];
    struct wrap *wraps; /* open addressing by orig, linear probing */
    size_t cap, n;
};

static struct readctx *state(struct db *db)
{
    if (!db->readctx) {
        struct readctx *rc = xcalloc(1, sizeof *rc);
        for (int i = 0; i < NKEEP; i++)
            rc->kept[i] = xstrdup("");
        /* a session may start with settings (a role's defaults, a pooler's): set ours */
        rc->known = false;
        if (crypto_random(&rc->tag_base, sizeof rc->tag_base) != 0)
            abort(); /* no randomness: nothing safe can be done */
        db->readctx = rc;
    }
    return db->readctx;
}

static size_t slot_of(const struct readctx *rc, const struct db_stmt *s)
{
    size_t h = (size_t)(uintptr_t)s;
    h ^= h >> 17;
    h *= (size_t)0x9E3779B97F4A7C15ull;
    return h & (rc->cap - 1);
}

static struct wrap *find(struct readctx *rc, const struct db_stmt *s)
{
    if (!rc->cap)
        return NULL;
    for (size_t i = slot_of(rc, s);; i = (i + 1) & (rc->cap - 1)) {
        if (rc->wraps[i].orig == s)
            return &rc->wraps[i];
        if (!rc->wraps[i].orig)
            return NULL;
    }
}

static void insert(struct readctx *rc, const struct db_stmt *s, struct db_stmt *w)
{
    if (2 * (rc->n + 1) > rc->cap) {
        struct wrap *old = rc->wraps;
        size_t oldcap = rc->cap;
        rc->cap = oldcap ? 2 * oldcap : 64;
        rc->wraps = xcalloc(rc->cap, sizeof *rc->wraps);
        rc->n = 0;
        for (size_t i = 0; i < oldcap; i++)
            if (old[i].orig)
                insert(rc, old[i].orig, old[i].w);
        free(old);
    }
    size_t i = slot_of(rc, s);
    while (rc->wraps[i].orig)
        i = (i + 1) & (rc->cap - 1);
    rc->wraps[i] = (struct wrap){s, w};
    rc->n++;
}

/* Whether sql contains word as a whole word (ASCII letters, any case). */
static bool has_word(const char *sql, const char *word)
{
    size_t n = strlen(word);
    for (const char *p = sql; (p = strcasestr(p, word)) != NULL; p += n) {
        bool start = p == sql || !(isalnum((unsigned char)p[-1]) || p[-1] == '_');
        bool end = !(isalnum((unsigned char)p[n]) || p[n] == '_');
        if (start && end)
            return true;
    }
    return false;
}

/*
 * A plain query can be the subquery of the wrapper; a statement that writes
 * (a data-modifying WITH must stay at the top) or is no query keeps the two-
 * statement form. A statement that fails to prepare wrapped anyway is found
 * out at its first use (readctx_query).
 */
static bool wrappable(const char *name, const char *sql)
{
    if (strlen(name) + 2 > NAMEMAX) /* "r_" + name must stay a name of its own */
        return false;
    while (isspace((unsigned char)*sql))
        sql++;
    if (strncasecmp(sql, "SELECT", 6) != 0 && strncasecmp(sql, "WITH", 4) != 0)
        return false;
    static const char *const writes[] = {"INSERT", "UPDATE", "DELETE", "MERGE", NULL};
    for (int i = 0; writes[i]; i++)
        if (has_word(sql, writes[i]))
            return false;
    return true;
}

static const struct db_stmt *wrapped(struct readctx *rc, const struct db_stmt *s)
{
    struct wrap *f = find(rc, s);
    if (f)
        return f->w;
    struct db_stmt *w = NULL;
    if (wrappable(s->name, s->sql)) {
        w = xcalloc(1, sizeof *w);
        size_t nn = strlen(s->name) + 3, sn = strlen(s->sql) + 160;
        char *name = xmalloc(nn), *sql = xmalloc(sn);
        snprintf(name, nn, "r_%s", s->name);
        /* the epoch in the query's own snapshot (a scalar subquery runs once), and
         * the session's tag */
        snprintf(sql, sn,
                 "SELECT _q.*, (SELECT v FROM aidc_auth_epoch) AS _aidc_epoch,"
                 " current_setting('aidc.read_tag', true) AS _aidc_tag FROM (%s) _q",
                 s->sql);
        *w = (struct db_stmt){name, sql, s->nparams};
    }
    insert(rc, s, w);
    return w;
}

static void free_wrap(struct wrap *f)
{
    if (f && f->w) {
        free((char *)f->w->name);
        free((char *)f->w->sql);
        free(f->w);
        f->w = NULL;
    }
}

static void forget_wrap(struct readctx *rc, const struct db_stmt *s)
{
    free_wrap(find(rc, s));
}

static bool holds(const struct readctx *rc, const char *const *want)
{
    if (!rc->known)
        return false;
    for (int i = 0; i < NKEEP; i++)
        if (strcmp(rc->kept[i], want[i] ? want[i] : "") != 0)
            return false;
    return true;
}

static void keep(struct readctx *rc, const char *const *v)
{
    for (int i = 0; i < NKEEP; i++) {
        free(rc->kept[i]);
        rc->kept[i] = xstrdup(v[i] ? v[i] : "");
    }
    rc->known = true;
}

/* Send the settings v and a new tag (PEND_CHECK); keep() them once answered. */
static int send_keep(struct db *db, struct readctx *rc, const char *const *v)
{
    rc->known = false; /* until the answer says the settings took */
    snprintf(rc->tag, sizeof rc->tag, "%016llx-%u", rc->tag_base, ++rc->tag_count);
    const char *p[NKEEP + 1] = {v[0], v[1], v[2], v[3], v[4], rc->tag};
    return dbint_send_stmt(db, &db_ctx_keep_stmt, p, PEND_CHECK);
}

static void set_current(struct db *db)
{
    if (db->ctx_state == DB_CTX_UNKNOWN)
        db->ctx_state = DB_CTX_CURRENT;
}

/*
 * The context statement's cheap test on the rows' epoch: unchanged since the
 * actor was found current (and, where the request pinned one, since what it
 * remembered). Otherwise - or with no row to tell - the context statement
 * itself, after the read.
 */
static int check(struct db *db, PGresult **r)
{
    bool user = db->ctxp[6] != NULL;
    int nf = PQnfields(*r);
    bool rows = PQntuples(*r) > 0 && !PQgetisnull(*r, 0, nf - 2);
    long long ep = rows ? strtoll(PQgetvalue(*r, 0, nf - 2), NULL, 10) : -1;
    if (rows) {
        db->ctx_epoch = ep;
        if ((!user || ep == strtoll(db->ctxp[10], NULL, 10)) &&
            (db->ctx_need_epoch < 0 || ep == db->ctx_need_epoch)) {
            set_current(db);
            return 0;
        }
    } else if (PQntuples(*r) == 0 && !user && db->ctx_need_epoch < 0) {
        set_current(db); /* nothing to check: the context statement would say current */
        return 0;
    }
    int e = dbint_send_ctx(db);
    if (!e)
        e = dbint_sync_and_drain(db, NULL);
    if (e) {
        PQclear(*r);
        *r = NULL;
    } else if (rows && db->ctx_epoch > ep) {
        /* what was read was read at ep: what the request remembers of it (a tenant
         * looked up, dispatch.c) must not hold at the check's later epoch */
        db->ctx_epoch = ep;
    }
    return e;
}

/* Whether rows r were read under this connection's own settings (any row carries the tag). */
static bool own_rows(const struct readctx *rc, const PGresult *r)
{
    if (PQntuples(r) == 0)
        return true;
    int nf = PQnfields(r);
    return !PQgetisnull(r, 0, nf - 1) && strcmp(PQgetvalue(r, 0, nf - 1), rc->tag) == 0;
}

/* A SQLSTATE of a statement that cannot be what it is asked to be: syntax, names,
 * an unsupported feature (where the wrapper may be the cause). */
static bool unpreparable(const struct db *db)
{
    return strncmp(db->last.sqlstate, "42", 2) == 0 || strncmp(db->last.sqlstate, "0A", 2) == 0;
}

static int query(struct db *db, const struct db_stmt *stmt, const char *const *params, PGresult **r,
                 int tries)
{
    struct readctx *rc = state(db);
    const struct db_stmt *w = wrapped(rc, stmt);
    if (!w)
        return READCTX_IN_TWO;
    const char *want[NKEEP] = {db->ctxp[0], db->ctxp[1], db->ctxp[2], db->ctxp[3], db->ctxp[11]};
    bool set = !holds(rc, want);
    bool fresh = !ptrset_has(&db->prepared, w);
    int e = set ? send_keep(db, rc, want) : 0;
    if (!e)
        e = dbint_send_stmt(db, w, params, PEND_WANT);
    if (!e)
        e = dbint_sync_and_drain(db, r);
    if (e && fresh && db->up && !ptrset_has(&db->prepared, w) && unpreparable(db)) {
        /* the wrapped form did not prepare: this statement reads in two from now on */
        log_warn("statement %s cannot be read in one statement; it is read in two", stmt->name);
        forget_wrap(rc, stmt);
        db->tx_failed = false; /* the failure was the wrapper's, not the read's */
        db->tx_err = 0;
        return query(db, stmt, params, r, tries);
    }
    if (e)
        return e;
    if (set)
        keep(rc, want);
    if (!own_rows(rc, *r)) {
        /* read under another session's settings: never answered; ours are sent again */
        PQclear(*r);
        *r = NULL;
        rc->known = false;
        if (tries > 0) {
            log_error("statement %s: the session's settings are not this connection's (a "
                      "transaction pooler behind AIDC_DB_POOL_MODE=session?)",
                      stmt->name);
            return AIDC_EINTERNAL;
        }
        return query(db, stmt, params, r, tries + 1);
    }
    return check(db, r);
}

int readctx_query(struct db *db, const struct db_stmt *stmt, const char *const *params,
                  PGresult **r)
{
    return query(db, stmt, params, r, 0);
}

static const char *const none[NKEEP] = {"", "", "", "", ""};

int readctx_clear(struct db *db, bool *sent)
{
    *sent = false;
    if (db->txpool)
        return 0;
    struct readctx *rc = state(db); /* a new session may hold defaults: cleared too */
    if (holds(rc, none))
        return 0;
    int e = send_keep(db, rc, none);
    *sent = !e;
    return e;
}

void readctx_cleared(struct db *db, bool ok)
{
    if (ok)
        keep(state(db), none);
}

void readctx_conn_lost(struct db *db)
{
    if (db->readctx)
        db->readctx->known = false; /* a new session: what it holds is set before use */
}

void readctx_free(struct db *db)
{
    struct readctx *rc = db->readctx;
    if (!rc)
        return;
    for (size_t i = 0; i < rc->cap; i++)
        free_wrap(&rc->wraps[i]);
    free(rc->wraps);
    for (int i = 0; i < NKEEP; i++)
        free(rc->kept[i]);
    free(rc);
    db->readctx = NULL;
}
