/*
 * request.h - what a handler sees of a request, and what it answers.
 *
 * A struct req is built by server/http.c from the libmicrohttpd connection
 * (headers, query arguments and body copied in), so handlers never touch
 * libmicrohttpd and can be driven without a socket. It owns everything it
 * points to; req_free releases it when the response has been sent.
 *
 * Handlers have one signature, `int h(struct req *, struct resp *)`: they
 * return 0 with resp filled, or a negative aidc_err with resp->err filled
 * (or not: the dispatcher maps bare codes such as AIDC_EUNAVAIL to 503).
 * Only the dispatcher renders errors (RFC 9457 problem+json).
 */
#ifndef AIDC_REQUEST_H
#define AIDC_REQUEST_H

#include "../lib/actor.h"
#include "problem.h"

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

struct route;
struct db;
struct config;

/* The tenant named by the route's {tenant}, once resolved and permitted. */
struct tenant_ref {
    char id[UUID_LEN + 1];
    char *slug;
    int role; /* the actor's tenant role there (TR_NONE for global roles) */
    bool suspended;
    bool own_jobs_only; /* the actor reads only its own jobs there (a member, by default) */
    /* resolved from memory (server/tenantcache.h): good while the auth epoch is this */
    bool remembered;
    long long epoch;
};

/* A validation problem with one field of the request. */
struct field_error {
    char *field;
    enum problem problem; /* its code */
    char *message;        /* its text filled from params */
    json_t *params;       /* new reference, or NULL */
};

struct api_error {
    int status; /* 0 = none set */
    enum problem problem;
    char *detail;   /* the problem's text filled from params */
    json_t *params; /* new reference, or NULL */
    struct field_error *fields;
    size_t nfields;
    int retry_after; /* seconds, for 429/503; 0 = no header */
    char *allow;     /* Allow header for 405 */
};

struct header {
    char *name;
    char *value;
};

/* What the dispatcher records in the audit log for a state change. */
struct resp_audit {
    const char *resource_type;
    char *resource_id; /* malloc'd */
    json_t *details;   /* new reference, or NULL */
    bool skip;         /* the handler recorded its own events */
};

/*
 * A body produced while it is sent (exports of any size): next() fills buf
 * with at most max bytes and returns how many, 0 at the end, or -1 on an
 * error (the connection is cut, so a client never mistakes a broken export
 * for a whole one). Runs on the connection's HTTP thread after dispatch();
 * free() releases state once the response is done.
 */
struct resp_stream {
    long (*next)(void *state, char *buf, size_t max);
    void (*free)(void *state);
    void *state;
};

/*
 * A file answered from its descriptor (sent with sendfile): length bytes from
 * offset. The response owns fd once set (closed by resp_free if never sent).
 */
struct resp_file {
    bool set;
    int fd;
    uint64_t offset, length;
};

struct resp {
    int status;
    json_t *body;             /* new reference, or NULL */
    char *raw;                /* alternatively a ready body (malloc'd) ... */
    size_t raw_len;
    const char *content_type; /* ... with this type */
    struct resp_stream stream; /* or a streamed body (next != NULL), with content_type */
    struct resp_file file;     /* or a file's bytes, with content_type */
    struct header *headers;
    size_t nheaders;
    struct api_error err;
    struct resp_audit audit;
    bool denied; /* a refusal of the dispatcher (audited as "denied") */
    bool replayed; /* answered from the idempotency store */
    bool quiet;    /* a refusal not worth an audit record (a repeat of one just recorded) */
};

/* Describe the change for the audit event (id copied, details stolen). */
void resp_audit(struct resp *rs, const char *resource_type, const char *resource_id,
                json_t *details);

struct kvpair {
    char *key;
    char *value;
};

/*
 * Where the body of an RF_UPLOAD route goes as it arrives (never whole in
 * memory): set by the route's begin handler once the headers are in.
 * write() returns 0, or -1 when the upload cannot go on (the state keeps
 * why, for the handler that answers once the body is read); free() runs
 * when the request ends, whatever became of it.
 */
struct req_sink {
    int (*write)(void *state, const char *data, size_t len);
    void (*free)(void *state);
    void *state;
};

struct req {
    const char *method;
    char *path;
    const struct route *route;
    struct kvpair params[6]; /* {name} values of the matched route */
    size_t nparams;
    struct kvpair *query;    /* decoded query arguments */
    size_t nquery;
    bool query_dup;          /* a query argument was given twice */
    char *body;
    size_t body_len;
    json_t *json; /* parsed body for routes that take one */
    struct req_sink sink; /* RF_UPLOAD routes: the body's way to disk */
    char *range, *content_range, *content_length; /* as the client sent them */

    /* headers of interest */
    char *authorization, *cookie, *requested_with, *idempotency_key, *content_type;
    char *user_agent, *accept, *forwarded_for;
    char request_id[65];
    char source_ip[64];

    struct actor actor;
    struct tenant_ref tenant; /* id[0] == '\0' when the route has no {tenant} */
    bool no_auth_cache;       /* load the actor from the database (it was found stale) */
    struct db *db;
    /* where the heavy reads of an RF_REPLICA route go: a streaming replica when
     * one is configured and answers, else db. Actor checks, writes and audit
     * records always go to db. */
    struct db *rdb;
    bool replica_failed; /* the replica broke during this request: stay on the primary */
    /* the round trips its statements waited for (db_round_trips), on db and on the
     * replica, counted by dispatch; trips_counted: false for requests without one */
    unsigned long db_round_trips, replica_trips0;
    bool trips_counted;
    const struct config *cfg;
    struct timespec started;
    /* set while an approved operation runs (api/approvals.c): the approval's
     * id and the second person, so the handler acts instead of asking again */
    const char *approval_id;
    const char *approved_by;
    /* workers to wake once the request's transaction committed (waker.h) */
    unsigned wake;
};

/* Release what an actor holds and zero it. */

/* Value of the route parameter `name` ({tenant}, {id}, ...), or NULL. */
const char *req_param(const struct req *rq, const char *name);
/* Value of query argument `name`, or NULL when absent. */
const char *req_query(const struct req *rq, const char *name);
void req_add_query(struct req *rq, const char *key, const char *value);
void req_free(struct req *rq);
/* Add the round trips db waited for since db_round_trips() was `since` to rq's. */
void req_add_round_trips(struct req *rq, const struct db *db, unsigned long since);

/* Set the answer's status and body (steals body). Always returns 0. */
int resp_json(struct resp *rs, int status, json_t *body);
/* The same with a body already written as JSON text (taken from sb): for
 * reads whose rows db/rowjson writes straight as text. Always returns 0. */
struct sbuf;
int resp_json_text(struct resp *rs, int status, struct sbuf *sb);
/* Add a response header (copied). */
void resp_header(struct resp *rs, const char *name, const char *value);
void resp_free(struct resp *rs);

/*
 * Fill rs->err with problem p, its text filled from params (stolen; NULL when
 * it has none), and return the aidc_err matching its status, so handlers write
 * `return api_problem(rs, PROBLEM_PROJECT_NOT_FOUND, json_pack("{s:s}", "project", slug));`.
 */
int api_problem(struct resp *rs, enum problem p, json_t *params);
/* The same with another status than the catalog's (a name the path gave is a
 * 404, the same name in a body a 422). */
int api_problem_status(struct resp *rs, int status, enum problem p, json_t *params);
/* Record a field error (params stolen); the status becomes p's unless already set. */
void api_field_problem(struct resp *rs, const char *field, enum problem p, json_t *params);
/* The answer for the collected field errors (their status, else 400): with one,
 * its code and params (plus "field"); with more, validation.failed. Returns
 * the matching aidc_err. */
int api_fail_fields(struct resp *rs);
/* 0 when the JSON text s[0..n) is within max_depth and max_values (see
 * jsonlimit.h), else the 400 saying which bound it passes. */
int api_json_shape(struct resp *rs, const char *s, size_t n, int max_depth, long max_values);
void api_error_clear(struct api_error *e);

/* The aidc_err that best matches an HTTP status (for handler returns). */
int api_status_err(int status);

/*
 * Whether a client's X-Request-Id may be taken as the request's id (logged,
 * audited, echoed): 1 to 64 of [A-Za-z0-9-_.:], nothing a log or shell reads
 * otherwise. Else aidcd makes one.
 */
bool req_id_acceptable(const char *s);

/* Answer 200 with the CSV in sb (taken) as an attachment named filename. */
void resp_csv(struct resp *rs, struct sbuf *sb, const char *filename);

#endif
