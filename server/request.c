/* request.c - accessors and cleanup of struct req and struct resp. */
#include "request.h"

#include "err.h"
#include "sbuf.h"
#include "xalloc.h"

#include <microhttpd.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

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

void actor_free(struct actor *a)
{
    free(a->username);
    for (size_t i = 0; i < a->nmemberships; i++)
        free(a->memberships[i].slug);
    free(a->memberships);
    memset(a, 0, sizeof *a);
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
    for (size_t i = 0; i < e->nfields; i++) {
        free(e->fields[i].field);
        free(e->fields[i].message);
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

/* Error texts echo client input: keep them valid UTF-8 for the JSON answer. */
static char *clean_text(const char *s)
{
    struct sbuf out = SBUF_INIT;
    sbuf_utf8(&out, s);
    return sbuf_steal(&out);
}

int api_vfail(struct resp *rs, int status, const char *fmt, va_list ap)
{
    struct sbuf sb = SBUF_INIT;
    sbuf_vprintf(&sb, fmt, ap);
    free(rs->err.detail);
    rs->err.detail = clean_text(sbuf_str(&sb));
    sbuf_free(&sb);
    rs->err.status = status;
    return api_status_err(status);
}

int api_fail(struct resp *rs, int status, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int e = api_vfail(rs, status, fmt, ap);
    va_end(ap);
    return e;
}

void api_field_error(struct resp *rs, const char *field, const char *fmt, ...)
{
    struct sbuf sb = SBUF_INIT;
    va_list ap;
    va_start(ap, fmt);
    sbuf_vprintf(&sb, fmt, ap);
    va_end(ap);
    struct api_error *e = &rs->err;
    e->fields = xreallocarray(e->fields, e->nfields + 1, sizeof *e->fields);
    e->fields[e->nfields].field = clean_text(field);
    e->fields[e->nfields].message = clean_text(sbuf_str(&sb));
    sbuf_free(&sb);
    e->nfields++;
    if (!e->status)
        e->status = MHD_HTTP_BAD_REQUEST;
}

int api_fail_fields(struct resp *rs)
{
    struct api_error *e = &rs->err;
    if (!e->status)
        e->status = MHD_HTTP_BAD_REQUEST;
    if (!e->detail) {
        if (e->nfields == 1)
            e->detail = xasprintf("%s: %s", e->fields[0].field, e->fields[0].message);
        else
            e->detail = xasprintf("%zu fields are invalid", e->nfields);
    }
    return api_status_err(e->status);
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
