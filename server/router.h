/*
 * router.h - the static route table and its matcher.
 *
 * Every endpoint is one row of api/routes.c: method, path pattern with
 * {params}, handler, who may call it (global roles, minimum tenant role,
 * token scope), flags and the query arguments it accepts. The dispatcher
 * checks all of that in one place; handlers only do their resource's work.
 */
#ifndef AIDC_ROUTER_H
#define AIDC_ROUTER_H

#include "request.h"

#include <stdbool.h>
#include <stddef.h>

typedef int (*route_handler)(struct req *rq, struct resp *rs);

enum route_flags {
    RF_PUBLIC = 1u << 0,        /* no authentication */
    RF_ANY_USER = 1u << 1,      /* any authenticated user (the handler narrows) */
    RF_OPTIONAL_AUTH = 1u << 2, /* use credentials when valid, never 401 */
    RF_BODY = 1u << 3,          /* takes a JSON object body */
    RF_CREATES = 1u << 4,       /* creates something: honours Idempotency-Key */
    RF_NO_DB = 1u << 5,         /* needs no database transaction */
    RF_NO_TX = 1u << 6,         /* the handler runs its statements alone (no request transaction) */
    RF_INGEST = 1u << 7,        /* body is JSON or NDJSON, up to AIDC_AUDIT_INGEST_MAX_BYTES */
    RF_AUDIT_READ = 1u << 8,    /* reads audit data: the read itself is an audit event */
    RF_REPLICA = 1u << 9,       /* its heavy reads may go to AIDC_READ_DATABASE_URL (rq->rdb) */
    /* takes a body of any type and size (up to AIDC_FILES_MAX_UPLOAD_BYTES), streamed:
     * `begin` runs once the headers are in (admitted like the handler) and sets
     * rq->sink; the handler runs once the body is written */
    RF_UPLOAD = 1u << 10,
    /* runs the password KDF (scrypt): served on the password threads
     * (server/workpool.h), its connection suspended meanwhile */
    RF_PASSWORD = 1u << 11,
    /* with RF_PASSWORD: only when the body has a "password" member */
    RF_PASSWORD_IF_SET = 1u << 12,
};

struct route {
    const char *method;
    const char *pattern;
    route_handler handler;
    const char *action;    /* audit/metrics name, e.g. "project.create" */
    unsigned global_roles; /* enum global_role bits that may call it */
    int tenant_role;       /* minimum enum tenant_role in {tenant}; TR_NONE = none */
    unsigned scope;        /* token scope needed (0 = any token) */
    unsigned flags;
    const char *query;   /* accepted query arguments, comma-separated */
    route_handler begin; /* RF_UPLOAD: prepares the body's way (rq->sink) */
};

extern const struct route routes[];
extern const size_t routes_count;

enum route_match_result { ROUTE_FOUND, ROUTE_NO_PATH, ROUTE_NO_METHOD };

/*
 * Find the route for method and path in table (n rows). On ROUTE_FOUND,
 * *out is the row and the {param} values are stored in rq->params. On
 * ROUTE_NO_METHOD, allow (if not NULL) receives the methods the path accepts,
 * comma-separated ("GET, PATCH"). A single trailing slash is ignored. A last
 * segment "{name*}" takes the rest of the path, slashes included (maybe empty).
 */
enum route_match_result router_match(const struct route *table, size_t n, const char *method,
                                     const char *path, struct req *rq, const struct route **out,
                                     char *allow, size_t allowsz);

/* True if the route accepts query argument `name`. */
bool router_accepts_query(const struct route *r, const char *name);
/* Index of r in the table (for metrics). */
size_t router_index(const struct route *r);

#endif
