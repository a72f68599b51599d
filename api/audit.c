/* audit.c (api) - the audit endpoints (see audit.h). */
#include "audit.h"

#include "../audit/audit.h"
#include "../audit/sign.h"
#include "../audit/verify.h"
#include "../db/audit.h"
#include "../db/auditchain.h"
#include "../db/plans.h"
#include "../lib/err.h"
#include "../server/dispatch.h"
#include "auditexport.h"
#include "auditfilter.h"
#include "paging.h"

#include <ctype.h>
#include <microhttpd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* 1 to 18 digits: a bigint PostgreSQL takes. */
static bool small_number(const char *s)
{
    size_t n = strlen(s);
    return n >= 1 && n <= 18 && strspn(s, "0123456789") == n;
}

/*
 * Split a "ts|id" cursor; false when it is not one we issued. The time is as
 * PostgreSQL prints it in UTC: "2026-12-02 16:38:34.875053+00".
 */
static bool cursor_split(char *after, char **ts, char **id)
{
    static const char shape[] = "dddd-dd-dd dd:dd:dd";
    char *second = NULL;
    paging_split(after, &second);
    if (!after || !second || !small_number(second) || strlen(after) < sizeof shape - 1)
        return false;
    for (size_t i = 0; i < sizeof shape - 1; i++)
        if (shape[i] == 'd' ? !isdigit((unsigned char)after[i]) : after[i] != shape[i])
            return false;
    const char *p = after + sizeof shape - 1;
    if (*p == '.') {
        size_t nd = strspn(p + 1, "0123456789");
        if (nd < 1 || nd > 6)
            return false;
        p += 1 + nd;
    }
    if (strcmp(p, "+00") != 0)
        return false;
    *ts = after;
    *id = second;
    return true;
}

static int bad_cursor(struct resp *rs, struct page *pg)
{
    paging_free(pg);
    api_field_problem(rs, "cursor", PROBLEM_V_CURSOR, NULL);
    return api_fail_fields(rs);
}

/* The read itself is audited: what was asked, and how much came back. */
static void audit_read(struct resp *rs, const struct req *rq, const char *what, json_t *extra)
{
    json_t *d = auditfilter_echo(rq);
    if (d && extra)
        json_object_update(d, extra);
    json_decref(extra);
    resp_audit(rs, "audit_log", what, d);
}

/*
 * A search given neither from nor to covers the last AUDIT_WINDOW_DAYS days,
 * counted from the start of the current hour: over millions of events an
 * unbounded search of a common word or a network read every match. The hour
 * keeps the window of one search's pages the same; the answer names it, and
 * an explicit from (any time before) widens it.
 */
#define AUDIT_WINDOW_DAYS 30

struct window {
    char from[32];
    bool is_default;
};

/* Fill in the default window when from and to are both absent. */
static void window_default(const char **from, const char *to, struct window *w)
{
    w->is_default = !*from && !to;
    w->from[0] = '\0';
    if (!w->is_default)
        return;
    time_t start = time(NULL) / 3600 * 3600 - (time_t)AUDIT_WINDOW_DAYS * 86400;
    struct tm tm;
    if (!gmtime_r(&start, &tm) || !strftime(w->from, sizeof w->from, "%Y-%m-%dT%H:%M:%SZ", &tm)) {
        w->is_default = false; /* not reached: then no window, as before */
        return;
    }
    *from = w->from;
}

/* "window": the time range searched, and whether it was the default one. */
static json_t *window_json(const char *from, const char *to, const struct window *w)
{
    return json_pack("{s:{s:s?, s:s?, s:b}}", "window", "from", from, "to", to, "default",
                     w->is_default);
}

/* A search of either kind: the filter is parsed already, query runs one page. */
typedef int (*search_fn)(struct db *db, const void *filter, const char *after_ts,
                         const char *after_id, int limit, struct db_rows *out);

static int search_events(struct db *db, const void *f, const char *ts, const char *id, int limit,
                         struct db_rows *out)
{
    return db_audit_search(db, f, ts, id, limit, out);
}

static int search_commands(struct db *db, const void *f, const char *ts, const char *id, int limit,
                           struct db_rows *out)
{
    return db_audit_commands(db, f, ts, id, limit, out);
}

static int search_page(struct req *rq, struct resp *rs, search_fn query, const void *filter,
                       const char *what, json_t *window)
{
    struct page pg;
    char *ts = NULL, *id = NULL;
    int e = paging_parse(rq, rs, &pg);
    if (e) {
        json_decref(window);
        return e;
    }
    if (pg.after && !cursor_split(pg.after, &ts, &id)) {
        json_decref(window);
        return bad_cursor(rs, &pg);
    }
    e = db_custom_plans(rq->rdb);
    if (!e)
        e = query(rq->rdb, filter, ts, id, pg.limit + 1, &pg.rows);
    if (!e) {
        int n = (int)json_array_size(pg.rows.items);
        e = paging_page_with(rs, &pg, json_incref(window));
        audit_read(rs, rq, what, json_pack("{s:i}", "returned", n > pg.limit ? pg.limit : n));
    }
    json_decref(window);
    paging_free(&pg);
    return e;
}

int api_audit_events(struct req *rq, struct resp *rs)
{
    struct db_audit_filter f;
    char prefix[512];
    int e = auditfilter_events(rq, rs, &f, prefix, sizeof prefix);
    if (e)
        return e;
    struct window w;
    window_default(&f.from, f.to, &w);
    return search_page(rq, rs, search_events, &f, "events", window_json(f.from, f.to, &w));
}

int api_audit_commands(struct req *rq, struct resp *rs)
{
    struct db_audit_cmd_filter f;
    int e = auditfilter_commands(rq, rs, &f);
    if (e)
        return e;
    struct window w;
    window_default(&f.from, f.to, &w);
    return search_page(rq, rs, search_commands, &f, "commands", window_json(f.from, f.to, &w));
}

int api_audit_export(struct req *rq, struct resp *rs)
{
    struct db_audit_filter f;
    char prefix[512];
    int e = auditfilter_events(rq, rs, &f, prefix, sizeof prefix);
    if (e)
        return e;
    const char *format = req_query(rq, "format");
    if (format && strcmp(format, "ndjson") != 0 && strcmp(format, "csv") != 0) {
        api_field_problem(rs, "format", PROBLEM_V_ONE_OF,
                          json_pack("{s:s}", "allowed", "ndjson, csv"));
        return api_fail_fields(rs);
    }
    bool csv = format && strcmp(format, "csv") == 0;
    e = auditexport_start(rq, rs, &f, csv, audit_key());
    if (!e)
        audit_read(rs, rq, "export", json_pack("{s:s}", "format", csv ? "csv" : "ndjson"));
    return e;
}

static int begin_as_caller(struct db *db, void *arg)
{
    (void)db;
    return dispatch_begin_read(arg);
}

/* RF_NO_TX: every batch in a transaction of its own (see audit/verify.h). */
int api_audit_verify(struct req *rq, struct resp *rs)
{
    struct db_audit_filter f;
    char prefix[8];
    int e = auditfilter_events(rq, rs, &f, prefix, sizeof prefix);
    if (e)
        return e;
    struct audit_verdict v;
    const struct audit_verify_io io = {.db = rq->db, .begin = begin_as_caller, .arg = rq};
    e = audit_verify(&io, audit_key(), f.from, f.to, &v);
    if (e)
        return e;
    audit_read(rs, rq, "verify",
               json_pack("{s:b, s:I}", "ok", v.ok, "verified", (json_int_t)v.verified));
    return resp_json(rs, MHD_HTTP_OK, audit_verdict_json(&v));
}

int api_audit_checkpoints(struct req *rq, struct resp *rs)
{
    struct page pg;
    int e = paging_parse(rq, rs, &pg);
    if (e)
        return e;
    if (pg.after && !small_number(pg.after))
        return bad_cursor(rs, &pg);
    e = db_audit_checkpoints_page(rq->db, pg.after, pg.limit + 1, &pg.rows);
    if (!e) {
        e = paging_page(rs, &pg);
        audit_read(rs, rq, "checkpoints", NULL);
    }
    paging_free(&pg);
    return e;
}

int api_audit_public_key(struct req *rq, struct resp *rs)
{
    (void)rq;
    const struct sign_key *k = audit_key();
    if (!k)
        return resp_json(rs, MHD_HTTP_OK,
                         json_pack("{s:s, s:n, s:n}", "alg", "none", "key_id", "public_key_pem"));
    const char *pem = sign_key_public_pem(k);
    return resp_json(rs, MHD_HTTP_OK,
                     json_pack("{s:s, s:s, s:s?}", "alg", sign_key_alg(k), "key_id", sign_key_id(k),
                               "public_key_pem", pem));
}
