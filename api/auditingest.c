/*
 * auditingest.c - POST /api/v1/audit/commands: node records from agents
 * (deploy/agent/), as NDJSON or {"commands": [...]}. A batch is stored all
 * or nothing; a bad record refuses it with the record named, so an agent
 * never half-delivers a spool file. Records resent with the same record_id
 * and ts are dropped by the database (counted as duplicates).
 */
#include "audit.h"

#include "../db/audit.h"
#include "../server/auth.h"
#include "../server/config.h"
#include "../server/crypto.h"
#include "../server/err.h"
#include "../server/jsonlimit.h"
#include "../server/validate.h"
#include "auditfilter.h"

#include <microhttpd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define FUTURE_S 3600 /* a node clock this far ahead is wrong, not early */
#define MAX_ERRORS 10

struct limits {
    const char *name;
    size_t max; /* characters */
    bool required;
};

static const struct limits texts[] = {
    {"host", 255, true}, {"user", 255, false}, {"session", 255, false},
    {"cwd", 4096, false}, {"command", 65536, true}, {"record_id", 200, false},
};

struct batch {
    struct resp *rs;
    bool lines; /* NDJSON: records are named by line, else commands[i] */
    time_t now, oldest;
    json_t *out;      /* the records for the database */
    size_t nerrors;
    int max_depth;    /* AIDC_JSON_MAX_DEPTH, AIDC_JSON_MAX_VALUES: of one record */
    long max_values;
};

static void fail(struct batch *b, size_t i, const char *field, const char *msg)
{
    if (b->nerrors++ >= MAX_ERRORS)
        return;
    char name[64];
    if (b->lines)
        snprintf(name, sizeof name, "line %zu", i);
    else
        snprintf(name, sizeof name, "commands[%zu]", i);
    if (field)
        api_field_error(b->rs, name, "%s: %s", field, msg);
    else
        api_field_error(b->rs, name, "%s", msg);
}

static bool text_field(struct batch *b, size_t i, const json_t *rec, const struct limits *l,
                       json_t *details)
{
    json_t *v = json_object_get(rec, l->name);
    if (!v || json_is_null(v)) {
        if (l->required) {
            fail(b, i, l->name, "is required");
            return false;
        }
        return true;
    }
    const char *s = json_string_value(v);
    size_t n = s ? validate_utf8_len(s) : 0;
    if (!s || strlen(s) != json_string_length(v) || n > l->max || (l->required && n == 0)) {
        char msg[96];
        snprintf(msg, sizeof msg, "must be text of %s%zu characters (no NUL)",
                 l->required ? "1 to " : "at most ", l->max);
        fail(b, i, l->name, msg);
        return false;
    }
    if (details && strcmp(l->name, "host") != 0 && strcmp(l->name, "record_id") != 0)
        json_object_set(details, l->name, v);
    return true;
}

static void one_record(struct batch *b, size_t i, const json_t *rec)
{
    static const char *const known[] = {"ts", "host", "user", "uid", "session", "cwd",
                                        "command", "exit_code", "job_id", "kind", "record_id"};
    if (!json_is_object(rec)) {
        fail(b, i, NULL, "must be a JSON object");
        return;
    }
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)rec, k, v) {
        bool ok = false;
        for (size_t j = 0; j < sizeof known / sizeof known[0] && !ok; j++)
            ok = strcmp(k, known[j]) == 0;
        if (!ok)
            fail(b, i, k, "is not a field of a command record");
    }
    json_t *details = json_object();
    if (!details) {
        b->nerrors++;
        return;
    }
    bool ok = true;
    for (size_t j = 0; j < sizeof texts / sizeof texts[0]; j++)
        ok &= text_field(b, i, rec, &texts[j], details);
    const char *ts = json_string_value(json_object_get(rec, "ts"));
    time_t t = 0;
    if (!ts || !auditfilter_time(ts, &t, NULL)) {
        fail(b, i, "ts", "must be an RFC 3339 time");
        ok = false;
    } else if (t > b->now + FUTURE_S || t < b->oldest) {
        fail(b, i, "ts", t > b->now ? "is more than an hour ahead of the server's clock"
                                    : "is older than the audit retention period");
        ok = false;
    }
    json_t *uid = json_object_get(rec, "uid"), *exit_code = json_object_get(rec, "exit_code");
    if (uid && !json_is_null(uid) &&
        (!json_is_integer(uid) || json_integer_value(uid) < 0 ||
         json_integer_value(uid) > 4294967295LL)) {
        fail(b, i, "uid", "must be an integer from 0 to 4294967295");
        ok = false;
    }
    if (exit_code && !json_is_null(exit_code) &&
        (!json_is_integer(exit_code) || json_integer_value(exit_code) < -255 ||
         json_integer_value(exit_code) > 511)) {
        fail(b, i, "exit_code", "must be an integer from -255 to 511, or null");
        ok = false;
    }
    const char *job = json_string_value(json_object_get(rec, "job_id"));
    json_t *jobv = json_object_get(rec, "job_id");
    if (jobv && !json_is_null(jobv) && (!job || !crypto_uuid_valid(job))) {
        fail(b, i, "job_id", "must be a job id (UUID) or null");
        ok = false;
    }
    const char *kind = json_string_value(json_object_get(rec, "kind"));
    json_t *kindv = json_object_get(rec, "kind");
    if (kindv && (!kind || (strcmp(kind, "command") != 0 && strcmp(kind, "module") != 0 &&
                            strcmp(kind, "image_pull") != 0))) {
        fail(b, i, "kind", "must be command, module or image_pull");
        ok = false;
    }
    if (!ok) {
        json_decref(details);
        return;
    }
    if (uid)
        json_object_set(details, "uid", uid);
    if (exit_code)
        json_object_set(details, "exit_code", exit_code);
    if (job)
        json_object_set_new(details, "job_id", json_string(job));
    json_object_set_new(details, "ran_at", json_string(ts));
    json_t *row = json_pack("{s:s, s:O, s:s, s:O?, s:s?, s:o}", "ts", ts, "host",
                            json_object_get(rec, "host"), "kind", kind ? kind : "command",
                            "record_id", json_object_get(rec, "record_id"), "job_id", job,
                            "details", details);
    if (!row || json_array_append_new(b->out, row) != 0)
        b->nerrors++;
}

/* Records of an NDJSON body, one per non-empty line. */
static void parse_ndjson(struct batch *b, const char *body, size_t len, size_t max)
{
    size_t line = 0, count = 0;
    const char *p = body, *end = body + len;
    b->lines = true;
    while (p < end && b->nerrors < MAX_ERRORS) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *stop = nl ? nl : end;
        line++;
        if (stop > p && !(stop - p == 1 && *p == '\r')) {
            if (++count > max) {
                fail(b, line, NULL, "too many records in one request");
                return;
            }
            json_error_t jerr;
            char why[96];
            json_t *rec = NULL;
            if (!jsonlimit_ok(p, (size_t)(stop - p), b->max_depth, b->max_values, why, sizeof why))
                fail(b, line, NULL, why);
            else if (!(rec = json_loadb(p, (size_t)(stop - p), JSON_REJECT_DUPLICATES, &jerr)))
                fail(b, line, NULL, "is not valid JSON");
            else
                one_record(b, line, rec);
            json_decref(rec);
        }
        p = stop + 1;
    }
}

static bool is_ndjson(const char *ct)
{
    return ct && strncasecmp(ct, "application/x-ndjson", 20) == 0;
}

int api_audit_ingest(struct req *rq, struct resp *rs)
{
    size_t max = (size_t)rq->cfg->audit_ingest_max_records;
    struct batch b = {.rs = rs, .now = time(NULL), .out = json_array(),
                      .max_depth = rq->cfg->json_max_depth, .max_values = rq->cfg->json_max_values};
    b.oldest = b.now - (time_t)rq->cfg->audit_retention_days * 86400;
    if (!b.out)
        return AIDC_EINTERNAL;
    if (!rq->body || rq->body_len == 0) {
        json_decref(b.out);
        return api_fail(rs, MHD_HTTP_BAD_REQUEST, "request body is required: NDJSON records "
                                                  "or {\"commands\": [...]}");
    }
    if (is_ndjson(rq->content_type)) {
        parse_ndjson(&b, rq->body, rq->body_len, max);
    } else {
        /* a whole batch in one document: 64 values a record on top of the limit */
        char why[96];
        if (!jsonlimit_ok(rq->body, rq->body_len, b.max_depth + 2,
                          b.max_values + 64 * (long)max, why, sizeof why)) {
            json_decref(b.out);
            return api_fail(rs, MHD_HTTP_BAD_REQUEST, "%s", why);
        }
        json_error_t jerr;
        json_t *doc = json_loadb(rq->body, rq->body_len, JSON_REJECT_DUPLICATES, &jerr);
        json_t *cmds = json_object_get(doc, "commands");
        if (!doc || !json_is_object(doc) || !json_is_array(cmds) || json_object_size(doc) != 1) {
            json_decref(doc);
            json_decref(b.out);
            return api_fail(rs, MHD_HTTP_BAD_REQUEST,
                            "body must be {\"commands\": [...]} (no other fields)%s%s",
                            doc ? "" : ": ", doc ? "" : jerr.text);
        }
        if (json_array_size(cmds) > max) {
            json_decref(doc);
            json_decref(b.out);
            return api_fail(rs, MHD_HTTP_BAD_REQUEST, "at most %zu records per request", max);
        }
        size_t i;
        json_t *rec;
        json_array_foreach(cmds, i, rec) {
            if (b.nerrors >= MAX_ERRORS)
                break;
            one_record(&b, i, rec);
        }
        json_decref(doc);
    }
    if (b.nerrors || rs->err.nfields) {
        json_decref(b.out);
        return rs->err.nfields ? api_fail_fields(rs)
                               : api_fail(rs, MHD_HTTP_BAD_REQUEST, "records are invalid");
    }
    size_t total = json_array_size(b.out);
    if (total == 0) {
        json_decref(b.out);
        return api_fail(rs, MHD_HTTP_BAD_REQUEST, "no records in the body");
    }
    char *text = json_dumps(b.out, JSON_COMPACT);
    json_decref(b.out);
    if (!text)
        return AIDC_EINTERNAL;
    char roles[64];
    auth_roles_csv(rq->actor.roles, roles, sizeof roles);
    struct db_audit_who who = {
        .user_id = rq->actor.user_id[0] ? rq->actor.user_id : NULL,
        .username = rq->actor.username,
        .token_id = rq->actor.token_id[0] ? rq->actor.token_id : NULL,
        .roles = roles,
        .source_ip = rq->source_ip[0] ? rq->source_ip : NULL,
        .user_agent = rq->user_agent,
        .request_id = rq->request_id,
    };
    long long accepted = 0;
    int e = db_audit_ingest(rq->db, text, &who, &accepted);
    free(text);
    if (e == AIDC_EINVAL)
        return api_fail(rs, MHD_HTTP_BAD_REQUEST, "the database refused a record: %s",
                        db_last_error(rq->db)->message);
    if (e)
        return e;
    resp_audit(rs, "audit_log", "commands",
               json_pack("{s:I, s:I}", "records", (json_int_t)total, "accepted",
                         (json_int_t)accepted));
    return resp_json(rs, MHD_HTTP_ACCEPTED,
                     json_pack("{s:I, s:I}", "accepted", (json_int_t)accepted, "duplicates",
                               (json_int_t)((long long)total - accepted)));
}
