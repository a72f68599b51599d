/* idempotency.c - idempotency_keys rows. */
#include "idempotency.h"

#include "../lib/xalloc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const struct db_stmt st_get = {
    "idem_get",
    "SELECT request_hash, status, response, location, expires_at <= now(), resource_type,"
    " resource_id"
    " FROM idempotency_keys WHERE user_id = $1::uuid AND key = $2",
    2};

/* Requests with the same key wait for each other here, so the second sees the
 * first's stored answer instead of racing it into the handler. */
static const struct db_stmt st_lock = {
    "idem_lock", "SELECT pg_advisory_xact_lock(hashtextextended($1 || ' ' || $2, 7))", 2};

static const struct db_stmt st_forget = {
    "idem_forget",
    "DELETE FROM idempotency_keys WHERE user_id = $1::uuid AND key = $2 AND expires_at <= now()",
    2};

/* A plain INSERT: a concurrent request with the same key makes it fail with a
 * unique violation at commit, so exactly one of them takes effect. */
static const struct db_stmt st_put = {
    "idem_put",
    "INSERT INTO idempotency_keys (user_id, key, request_hash, status, response, location,"
    " expires_at, resource_type, resource_id) VALUES ($1::uuid, $2, $3, $4::int, $5, $6,"
    " now() + make_interval(secs => $7::int), $8,"
    /* an id past the column's bound is not remembered: the answer is, whatever it changed */
    " CASE WHEN char_length($9) <= 1024 THEN $9 END)",
    9};

const struct db_stmt *const db_idempotency_stmts[] = {&st_lock, &st_get, &st_forget, &st_put,
                                                       NULL};

int db_idem_get(struct db *db, const char *user_id, const char *key, struct idem_hit *out)
{
    const char *p[2] = {user_id, key};
    int e;
    memset(out, 0, sizeof *out);
    e = db_queue(db, &st_lock, p);
    if (e)
        return e;
    PGresult *r = db_query(db, &st_get, p, &e);
    if (!r)
        return e;
    if (PQntuples(r) == 1 && PQgetvalue(r, 0, 4)[0] == 't') {
        PQclear(r);
        return db_queue(db, &st_forget, p); /* expired: the key may be used afresh */
    }
    if (PQntuples(r) == 1) {
        out->found = 1;
        snprintf(out->request_hash, sizeof out->request_hash, "%s", PQgetvalue(r, 0, 0));
        out->status = (int)strtol(PQgetvalue(r, 0, 1), NULL, 10);
        out->response = xstrdup(PQgetvalue(r, 0, 2));
        out->location = PQgetisnull(r, 0, 3) ? NULL : xstrdup(PQgetvalue(r, 0, 3));
        out->resource_type = PQgetisnull(r, 0, 5) ? NULL : xstrdup(PQgetvalue(r, 0, 5));
        out->resource_id = PQgetisnull(r, 0, 6) ? NULL : xstrdup(PQgetvalue(r, 0, 6));
    }
    PQclear(r);
    return 0;
}

void db_idem_hit_free(struct idem_hit *h)
{
    free(h->response);
    free(h->location);
    free(h->resource_type);
    free(h->resource_id);
    h->response = h->location = h->resource_type = h->resource_id = NULL;
}

int db_idem_put(struct db *db, const char *user_id, const char *key, const char *request_hash,
                const struct db_idem_answer *a, int ttl_seconds)
{
    char st[16], ttl[16];
    snprintf(st, sizeof st, "%d", a->status);
    snprintf(ttl, sizeof ttl, "%d", ttl_seconds);
    const char *p[9] = {user_id, key, request_hash, st, a->response, a->location, ttl,
                        a->resource_type, a->resource_id};
    return db_queue(db, &st_put, p);
}
