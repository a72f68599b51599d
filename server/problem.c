/* problem.c - the catalog of problems and their problem+json rendering. */
#include "problem.h"

#include "request.h"
#include "../lib/sbuf.h"
#include "../lib/xalloc.h"

#include <microhttpd.h>
#include <stdbool.h>
#include <string.h>

static const struct problem_def catalog[PROBLEM_COUNT] = {
#define PROBLEM(id, status, code, text) [id] = {#id, status, code, text},
#include "problems/core.def"
#include "problems/jobs.def"
#include "problems/images.def"
#include "problems/billing.def"
#include "problems/identity.def"
#include "problems/files.def"
#include "problems/sessions.def"
#include "problems/sso.def"
#include "problems/allocations.def"
#include "problems/templates.def"
#include "problems/jobarrays.def"
#include "problems/notify.def"
#undef PROBLEM
};

const struct problem_def *problem_def(enum problem p)
{
    return &catalog[(unsigned)p < PROBLEM_COUNT ? p : PROBLEM_INTERNAL];
}

static bool name_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
}

static void put_value(struct sbuf *sb, const json_t *v)
{
    switch (json_typeof(v)) {
    case JSON_STRING: sbuf_utf8(sb, json_string_value(v)); break;
    case JSON_INTEGER: sbuf_printf(sb, "%" JSON_INTEGER_FORMAT, json_integer_value(v)); break;
    case JSON_REAL: sbuf_printf(sb, "%g", json_real_value(v)); break;
    case JSON_TRUE: sbuf_puts(sb, "true"); break;
    case JSON_FALSE: sbuf_puts(sb, "false"); break;
    case JSON_NULL: sbuf_puts(sb, "null"); break;
    default: sbuf_puts(sb, "…"); break; /* objects and arrays are not message values */
    }
}

char *problem_format(const char *text, const json_t *params)
{
    struct sbuf sb = SBUF_INIT;
    const char *p = text;
    while (*p) {
        const char *open = strchr(p, '{');
        if (!open) {
            sbuf_puts(&sb, p);
            break;
        }
        sbuf_append(&sb, p, (size_t)(open - p));
        const char *q = open + 1;
        while (name_char(*q))
            q++;
        char name[64];
        size_t n = (size_t)(q - open - 1);
        const json_t *v = NULL;
        if (*q == '}' && n > 0 && n < sizeof name) {
            memcpy(name, open + 1, n);
            name[n] = '\0';
            v = json_object_get(params, name);
        }
        if (v) {
            put_value(&sb, v);
            p = q + 1;
        } else { /* not a placeholder (a regex, a JSON example), or one not given */
            sbuf_putc(&sb, '{');
            p = open + 1;
        }
    }
    return sbuf_steal(&sb);
}

json_t *problem_number(double v)
{
    if (v > -1e15 && v < 1e15 && v == (double)(json_int_t)v)
        return json_integer((json_int_t)v);
    return json_real(v);
}

json_t *problem_text(const char *s)
{
    struct sbuf b = SBUF_INIT;
    sbuf_utf8(&b, s ? s : "");
    json_t *v = json_string(sbuf_str(&b));
    sbuf_free(&b);
    return v;
}

const char *problem_title(int status)
{
    switch (status) {
    case MHD_HTTP_BAD_REQUEST: return "Bad Request";
    case MHD_HTTP_UNAUTHORIZED: return "Unauthorized";
    case MHD_HTTP_FORBIDDEN: return "Forbidden";
    case MHD_HTTP_NOT_FOUND: return "Not Found";
    case MHD_HTTP_METHOD_NOT_ALLOWED: return "Method Not Allowed";
    case MHD_HTTP_NOT_ACCEPTABLE: return "Not Acceptable";
    case MHD_HTTP_CONFLICT: return "Conflict";
    case MHD_HTTP_CONTENT_TOO_LARGE: return "Content Too Large";
    case MHD_HTTP_UNSUPPORTED_MEDIA_TYPE: return "Unsupported Media Type";
    case MHD_HTTP_UNPROCESSABLE_CONTENT: return "Unprocessable Content";
    case MHD_HTTP_TOO_MANY_REQUESTS: return "Too Many Requests";
    case MHD_HTTP_INTERNAL_SERVER_ERROR: return "Internal Server Error";
    case MHD_HTTP_BAD_GATEWAY: return "Bad Gateway";
    case MHD_HTTP_SERVICE_UNAVAILABLE: return "Service Unavailable";
    default: return status >= 500 ? "Server Error" : "Client Error";
    }
}

/* params as sent: always an object, so clients need not test for absence */
static json_t *params_copy(const json_t *params)
{
    return json_is_object(params) ? json_deep_copy(params) : json_object();
}

static json_t *field_errors(const struct api_error *e)
{
    json_t *errors = json_array();
    for (size_t i = 0; errors && i < e->nfields; i++) {
        const struct field_error *f = &e->fields[i];
        json_t *item = json_pack("{s:s, s:s, s:s, s:o}", "field", f->field, "code",
                                 problem_def(f->problem)->code, "message", f->message,
                                 "params", params_copy(f->params));
        if (!item || json_array_append_new(errors, item) != 0) {
            json_decref(errors);
            return NULL;
        }
    }
    return errors;
}

char *problem_render(const struct api_error *e, const char *request_id)
{
    int status = e->status ? e->status : MHD_HTTP_INTERNAL_SERVER_ERROR;
    const struct problem_def *d = problem_def(e->problem);
    json_t *doc = json_pack("{s:s, s:s, s:i, s:s, s:s, s:o, s:s}", "type", "about:blank", "title",
                            problem_title(status), "status", status, "code", d->code, "detail",
                            e->detail ? e->detail : problem_title(status), "params",
                            params_copy(e->params), "request_id", request_id ? request_id : "");
    bool ok = doc != NULL;
    if (ok && e->nfields) {
        json_t *errors = field_errors(e);
        ok = errors && json_object_set_new(doc, "errors", errors) == 0; /* takes errors */
    }
    char *s = ok ? json_dumps(doc, JSON_COMPACT) : NULL;
    json_decref(doc);
    if (s)
        return s;
    /* texts are valid UTF-8 (problem_format and the field names are cleaned), so
     * this is out of memory: answer something valid anyway */
    return xasprintf("{\"type\":\"about:blank\",\"title\":\"%s\",\"status\":%d,\"code\":\"%s\"}",
                     problem_title(status), status, d->code);
}
