/* auditrecord.c - command records from agents, checked (see auditrecord.h). */
#include "auditrecord.h"

#include "../lib/crypto.h"
#include "../lib/err.h"
#include "../lib/sbuf.h"
#include "../server/validate.h"
#include "auditfilter.h"

#include <microhttpd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define FUTURE_S   3600 /* a node clock this far ahead is wrong, not early */
#define MAX_ERRORS 10

struct limits {
    const char *name;
    size_t max; /* characters */
    bool required;
};

static const struct limits texts[] = {
    {"host", 255, true},  {"user", 255, false},     {"session", 255, false},
    {"cwd", 4096, false}, {"command", 65536, true}, {"record_id", 200, false},
};

struct batch {
    struct resp *rs;
    bool lines; /* NDJSON: records are named by line, else commands[i] */
    time_t now, oldest;
    json_t *out; /* the records for the database */
    size_t nerrors;
};

/* Record i's problem p (params stolen); the record is the error's field. */
static void fail(struct batch *b, size_t i, enum problem p, json_t *params)
{
    if (b->nerrors++ >= MAX_ERRORS) {
        json_decref(params);
        return;
    }
    char name[64];
    if (b->lines)
        snprintf(name, sizeof name, "line %zu", i);
    else
        snprintf(name, sizeof name, "commands[%zu]", i);
    api_field_problem(b->rs, name, p, params);
}

/* The params of a problem with one of a record's fields: its name (a key the record
 * may have sent, so kept valid UTF-8). */
static json_t *named(const char *name)
{
    struct sbuf sb = SBUF_INIT;
    sbuf_utf8(&sb, name);
    json_t *params = json_pack("{s:s}", "name", sbuf_str(&sb));
    sbuf_free(&sb);
    return params;
}

static bool text_field(struct batch *b, size_t i, const json_t *rec, const struct limits *l,
                       json_t *details)
{
    json_t *v = json_object_get(rec, l->name);
    if (!v || json_is_null(v)) {
        if (l->required) {
            fail(b, i, PROBLEM_AUDIT_RECORD_REQUIRED, named(l->name));
            return false;
        }
        return true;
    }
    const char *s = json_string_value(v);
    size_t n = s ? validate_utf8_len(s) : 0;
    if (!s || strlen(s) != json_string_length(v) || n > l->max || (l->required && n == 0)) {
        json_t *params = named(l->name);
        json_object_set_new(params, "max", json_integer((json_int_t)l->max));
        fail(b, i, l->required ? PROBLEM_AUDIT_RECORD_TEXT : PROBLEM_AUDIT_RECORD_TEXT_OPTIONAL,
             params);
        return false;
    }
    if (details && strcmp(l->name, "host") != 0 && strcmp(l->name, "record_id") != 0)
        json_object_set(details, l->name, v);
    return true;
}

static void one_record(struct batch *b, size_t i, const json_t *rec)
{
    static const char *const known[] = {"ts",      "host",      "user",   "uid",  "session",  "cwd",
                                        "command", "exit_code", "job_id", "kind", "record_id"};
    if (!json_is_object(rec)) {
        fail(b, i, PROBLEM_V_TYPE_OBJECT, NULL);
        return;
    }
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)rec, k, v)
    {
        bool ok = false;
        for (size_t j = 0; j < sizeof known / sizeof known[0] && !ok; j++)
            ok = strcmp(k, known[j]) == 0;
        if (!ok)
            fail(b, i, PROBLEM_AUDIT_RECORD_UNKNOWN_FIELD, named(k));
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
        fail(b, i, PROBLEM_AUDIT_RECORD_TIME, named("ts"));
        ok = false;
    } else if (t > b->now + FUTURE_S || t < b->oldest) {
        fail(b, i, t > b->now ? PROBLEM_AUDIT_RECORD_TIME_AHEAD : PROBLEM_AUDIT_RECORD_TIME_EXPIRED,
             named("ts"));
        ok = false;
    }
    json_t *uid = json_object_get(rec, "uid"), *exit_code = json_object_get(rec, "exit_code");
    if (uid && !json_is_null(uid) &&
        (!json_is_integer(uid) || json_integer_value(uid) < 0 ||
         json_integer_value(uid) > 4294967295LL)) {
        fail(b, i, PROBLEM_AUDIT_RECORD_INTEGER,
             json_pack("{s:s, s:I, s:I}", "name", "uid", "min", (json_int_t)0, "max",
                       (json_int_t)4294967295LL));
        ok = false;
    }
    if (exit_code && !json_is_null(exit_code) &&
        (!json_is_integer(exit_code) || json_integer_value(exit_code) < -255 ||
         json_integer_value(exit_code) > 511)) {
        fail(b, i, PROBLEM_AUDIT_RECORD_INTEGER,
             json_pack("{s:s, s:I, s:I}", "name", "exit_code", "min", (json_int_t)-255, "max",
                       (json_int_t)511));
        ok = false;
    }
    const char *job = json_string_value(json_object_get(rec, "job_id"));
    json_t *jobv = json_object_get(rec, "job_id");
    if (jobv && !json_is_null(jobv) && (!job || !crypto_uuid_valid(job))) {
        fail(b, i, PROBLEM_AUDIT_RECORD_JOB_ID, named("job_id"));
        ok = false;
    }
    const char *kind = json_string_value(json_object_get(rec, "kind"));
    json_t *kindv = json_object_get(rec, "kind");
    if (kindv && (!kind || (strcmp(kind, "command") != 0 && strcmp(kind, "module") != 0 &&
                            strcmp(kind, "image_pull") != 0))) {
        fail(b, i, PROBLEM_AUDIT_RECORD_ONE_OF,
             json_pack("{s:s, s:s}", "name", "kind", "allowed", "command, module, image_pull"));
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
    json_t *row =
        json_pack("{s:s, s:O, s:s, s:O?, s:s?, s:o}", "ts", ts, "host",
                  json_object_get(rec, "host"), "kind", kind ? kind : "command", "record_id",
                  json_object_get(rec, "record_id"), "job_id", job, "details", details);
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
                fail(b, line, PROBLEM_AUDIT_RECORDS_TOO_MANY,
                     json_pack("{s:I}", "max", (json_int_t)max));
                return;
            }
            json_error_t jerr;
            json_t *rec = json_loadb(p, (size_t)(stop - p), JSON_REJECT_DUPLICATES, &jerr);
            if (!rec)
                fail(b, line, PROBLEM_AUDIT_RECORD_NOT_JSON, NULL);
            else
                one_record(b, line, rec);
            json_decref(rec);
        }
        p = stop + 1;
    }
}

int auditrecord_parse(const char *body, size_t len, bool ndjson, size_t max, time_t now,
                      time_t oldest, struct resp *rs, json_t **records)
{
    struct batch b = {.rs = rs, .now = now, .oldest = oldest, .out = json_array()};
    *records = NULL;
    if (!b.out)
        return AIDC_EINTERNAL;
    if (!body || len == 0) {
        json_decref(b.out);
        return api_problem(rs, PROBLEM_AUDIT_RECORDS_REQUIRED, NULL);
    }
    if (ndjson) {
        parse_ndjson(&b, body, len, max);
    } else {
        json_error_t jerr;
        json_t *doc = json_loadb(body, len, JSON_REJECT_DUPLICATES, &jerr);
        json_t *cmds = json_object_get(doc, "commands");
        if (!doc) {
            json_decref(b.out);
            return api_problem(rs, PROBLEM_JSON_MALFORMED,
                               json_pack("{s:i, s:i, s:s}", "line", jerr.line, "column",
                                         jerr.column, "error", jerr.text));
        }
        if (!json_is_object(doc) || !json_is_array(cmds) || json_object_size(doc) != 1) {
            json_decref(doc);
            json_decref(b.out);
            return api_problem(rs, PROBLEM_AUDIT_RECORDS_SHAPE, NULL);
        }
        if (json_array_size(cmds) > max) {
            json_decref(doc);
            json_decref(b.out);
            return api_problem(rs, PROBLEM_AUDIT_RECORDS_TOO_MANY,
                               json_pack("{s:I}", "max", (json_int_t)max));
        }
        size_t i;
        json_t *rec;
        json_array_foreach(cmds, i, rec)
        {
            if (b.nerrors >= MAX_ERRORS)
                break;
            one_record(&b, i, rec);
        }
        json_decref(doc);
    }
    if (b.nerrors || rs->err.nfields) {
        json_decref(b.out);
        /* errors without a field error are the server's (out of memory) */
        return rs->err.nfields ? api_fail_fields(rs) : AIDC_EINTERNAL;
    }
    if (json_array_size(b.out) == 0) {
        json_decref(b.out);
        return api_problem(rs, PROBLEM_AUDIT_RECORDS_EMPTY, NULL);
    }
    *records = b.out;
    return 0;
}
