/* request.c - accessors and cleanup of struct req and struct resp. */
#include "request.h"

#include "../db/db.h"
#include "../lib/err.h"
#include "../lib/jsonlimit.h"
#include "../lib/sbuf.h"
#include "../lib/xalloc.h"

#include <microhttpd.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

const char *req_param(const struct req *rq, const char *name)
{
    for (size_t i = 0; i < rq->nparams; i++)
        if (strcmp(rq->params[i].key, name) == 0)
            return rq->params[i].value;
    return NULL;
}

const char *req_query(const struct req *rq, const char *name)
{
    for (size_t i = 0; i < rq->nquery; i++)
        if (strcmp(rq->query[i].key, name) == 0)
            return rq->query[i].value;
    return NULL;
}

void req_add_query(struct req *rq, const char *key, const char *value)
{
    if (req_query(rq, key))
        rq->query_dup = true;
    rq->query = xreallocarray(rq->query, rq->nquery + 1, sizeof *rq->query);
    rq->query[rq->nquery].key = xstrdup(key);
    rq->query[rq->nquery].value = xstrdup(value ? value : "");
    rq->nquery++;
}

void req_add_round_trips(struct req *rq, const struct db *db, unsigned long since)
{
    rq->db_round_trips += db_round_trips(db) - since;
}

void req_free(struct req *rq)
{
    if (!rq)
        return;
    free(rq->path);
    for (size_t i = 0; i < rq->nparams; i++) {
        free(rq->params[i].key);
        free(rq->params[i].value);
    }
    for (size_t i = 0; i < rq->nquery; i++) {
        free(rq->query[i].key);
        free(rq->query[i].value);
    }
    free(rq->query);
    free(rq->body);
    json_decref(rq->json);
    if (rq->sink.free && rq->sink.state)
        rq->sink.free(rq->sink.state);
    free(rq->range);
    free(rq->content_range);
    free(rq->content_length);
    free(rq->authorization);
    free(rq->cookie);
    free(rq->requested_with);
    free(rq->idempotency_key);
    free(rq->content_type);
    free(rq->user_agent);
    free(rq->accept);
    free(rq->forwarded_for);
    actor_free(&rq->actor);
    free(rq->tenant.slug);
    free(rq);
}

int resp_json(struct resp *rs, int status, json_t *body)
{
    json_decref(rs->body);
    rs->status = status;
    rs->body = body;
    return 0;
}

int resp_json_text(struct resp *rs, int status, struct sbuf *sb)
{
    json_decref(rs->body);
    rs->body = NULL;
    free(rs->raw);
    rs->status = status;
    rs->raw_len = sb->len;
    rs->raw = sbuf_steal(sb);
    rs->content_type = "application/json";
    return 0;
}

void resp_header(struct resp *rs, const char *name, const char *value)
{
    rs->headers = xreallocarray(rs->headers, rs->nheaders + 1, sizeof *rs->headers);
    rs->headers[rs->nheaders].name = xstrdup(name);
    rs->headers[rs->nheaders].value = xstrdup(value);
    rs->nheaders++;
}

void api_error_clear(struct api_error *e)
{
    free(e->detail);
    json_decref(e->params);
    for (size_t i = 0; i < e->nfields; i++) {
        free(e->fields[i].field);
        free(e->fields[i].message);
        json_decref(e->fields[i].params);
    }
    free(e->fields);
    free(e->allow);
    memset(e, 0, sizeof *e);
}

void resp_free(struct resp *rs)
{
    json_decref(rs->body);
    free(rs->raw);
    for (size_t i = 0; i < rs->nheaders; i++) {
        free(rs->headers[i].name);
        free(rs->headers[i].value);
    }
    free(rs->headers);
    api_error_clear(&rs->err);
    free(rs->audit.resource_id);
    json_decref(rs->audit.details);
    if (rs->stream.free && rs->stream.state)
        rs->stream.free(rs->stream.state);
    if (rs->file.set && rs->file.fd >= 0)
        close(rs->file.fd);
    memset(rs, 0, sizeof *rs);
}

void resp_audit(struct resp *rs, const char *resource_type, const char *resource_id,
                json_t *details)
{
    rs->audit.resource_type = resource_type;
    free(rs->audit.resource_id);
    rs->audit.resource_id = resource_id ? xstrdup(resource_id) : NULL;
    json_decref(rs->audit.details);
    rs->audit.details = details;
}

int api_status_err(int status)
{
    switch (status) {
    case MHD_HTTP_NOT_FOUND: return AIDC_ENOTFOUND;
    case MHD_HTTP_CONFLICT: return AIDC_ECONFLICT;
    case MHD_HTTP_UNAUTHORIZED:
    case MHD_HTTP_FORBIDDEN: return AIDC_EFORBIDDEN;
    case MHD_HTTP_SERVICE_UNAVAILABLE: return AIDC_EUNAVAIL;
    case MHD_HTTP_CONTENT_TOO_LARGE: return AIDC_ETOOBIG;
    default: return status >= 500 ? AIDC_EINTERNAL : AIDC_EINVAL;
    }
}

/* Field names echo client input: keep them valid UTF-8 for the JSON answer. */
/* A field's name can come from the client (an unknown key): echoed as valid
 * UTF-8 and no longer than FIELD_ECHO_MAX bytes, so a refusal never grows with
 * what was sent. */
#define FIELD_ECHO_MAX 128

static char *clean_text(const char *s)
{
    struct sbuf out = SBUF_INIT;
    sbuf_utf8(&out, s);
    const char *c = sbuf_str(&out);
    size_t keep = sbuf_utf8_prefix(c, FIELD_ECHO_MAX);
    if (keep < out.len) {
        char *cut = xasprintf("%.*s…", (int)keep, c);
        sbuf_free(&out);
        return cut;
    }
    return sbuf_steal(&out);
}

/* params as given, or an empty object where building them failed (a NULL from
 * json_pack: out of memory, or a string that was not UTF-8) */
static json_t *params_or_empty(json_t *params)
{
    return params ? params : json_object();
}

int api_problem_status(struct resp *rs, int status, enum problem p, json_t *params)
{
    struct api_error *e = &rs->err;
    params = params_or_empty(params);
    free(e->detail);
    e->detail = problem_format(problem_def(p)->text, params);
    json_decref(e->params);
    e->params = params;
    e->problem = p;
    e->status = status;
    return api_status_err(status);
}

int api_problem(struct resp *rs, enum problem p, json_t *params)
{
    return api_problem_status(rs, problem_def(p)->status, p, params);
}

void api_field_problem(struct resp *rs, const char *field, enum problem p, json_t *params)
{
    struct api_error *e = &rs->err;
    params = params_or_empty(params);
    e->fields = xreallocarray(e->fields, e->nfields + 1, sizeof *e->fields);
    struct field_error *f = &e->fields[e->nfields++];
    f->field = clean_text(field);
    f->problem = p;
    f->message = problem_format(problem_def(p)->text, params);
    f->params = params;
    if (!e->status)
        e->status = problem_def(p)->status;
}

int api_fail_fields(struct resp *rs)
{
    struct api_error *e = &rs->err;
    if (!e->status)
        e->status = MHD_HTTP_BAD_REQUEST;
    if (e->detail)
        return api_status_err(e->status);
    if (e->nfields == 1) {
        const struct field_error *f = &e->fields[0];
        e->problem = f->problem;
        e->params = f->params ? json_deep_copy(f->params) : json_object();
        if (e->params)
            json_object_set_new(e->params, "field", json_string(f->field));
        e->detail = xasprintf("%s: %s", f->field, f->message);
    } else {
        e->problem = PROBLEM_FIELDS_INVALID;
        e->params = json_pack("{s:I}", "count", (json_int_t)e->nfields);
        e->detail = problem_format(problem_def(PROBLEM_FIELDS_INVALID)->text, e->params);
    }
    return api_status_err(e->status);
}

int api_json_shape(struct resp *rs, const char *s, size_t n, int max_depth, long max_values)
{
    switch (jsonlimit_check(s, n, max_depth, max_values)) {
    case JSONLIMIT_TOO_DEEP:
        return api_problem(rs, PROBLEM_JSON_TOO_DEEP, json_pack("{s:i}", "max", max_depth));
    case JSONLIMIT_TOO_MANY_VALUES:
        return api_problem(rs, PROBLEM_JSON_TOO_MANY_VALUES,
                           json_pack("{s:I}", "max", (json_int_t)max_values));
    case JSONLIMIT_OK: break;
    }
    return 0;
}

#define REQ_ID_MAX 64
_Static_assert(sizeof(((struct req){0}).request_id) == REQ_ID_MAX + 1, "request_id holds one");

bool req_id_acceptable(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > REQ_ID_MAX)
        return false;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '-' || c == '_' || c == '.' || c == ':'))
            return false;
    }
    return true;
}

void resp_csv(struct resp *rs, struct sbuf *sb, const char *filename)
{
    rs->status = MHD_HTTP_OK;
    rs->raw_len = sb->len;
    rs->raw = sbuf_steal(sb);
    rs->content_type = "text/csv; charset=utf-8";
    char *disp = xasprintf("attachment; filename=\"%s\"", filename);
    resp_header(rs, "Content-Disposition", disp);
    free(disp);
}
