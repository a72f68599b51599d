/*
 * openapi_checks.h - the checks that api/openapi.json, as compiled into the
 * binary, and the route table of api/routes.c describe the same API; shared
 * by test_openapi.c (the real document and table) and test_openapi_selftest.c
 * (broken copies of them, which the checks must catch).
 *
 * Every route must be an operation with the same method and path, the same
 * path and query parameters, an Idempotency-Key exactly where the route
 * honours one, a request body exactly where the route takes one, the error
 * statuses the dispatcher produces for its flags, and authorization metadata
 * (x-aidc-roles, x-aidc-scope) equal to the row; and the document may hold no
 * operation the table lacks. Each check collects its findings instead of
 * asserting, so the self-test can run the same checks against broken copies
 * and prove that they do fail.
 *
 * A unit test links only aidc_core and Check, so the checks are static
 * functions here and each of the two programs includes this header once.
 */
#ifndef AIDC_TEST_OPENAPI_CHECKS_H
#define AIDC_TEST_OPENAPI_CHECKS_H

#include "api/paging.h"
#include "server/auth.h"
#include "lib/embed.h"
#include "server/router.h"

#include <check.h>
#include <ctype.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define MAX_NAMES 16
#define NAME_LEN  64

/* Problems found by a check, gathered into one message for ck_assert_msg. */
struct findings {
    int n;
    size_t len;
    char text[8192];
};

static void note(struct findings *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void note(struct findings *f, const char *fmt, ...)
{
    f->n++;
    size_t avail = sizeof f->text - f->len - 1; /* keep one byte for the newline */
    if (avail < 2)
        return; /* the count still says how many there were */
    va_list ap;
    va_start(ap, fmt);
    int w = vsnprintf(f->text + f->len, avail, fmt, ap);
    va_end(ap);
    if (w < 0)
        return;
    f->len += (size_t)w < avail - 1 ? (size_t)w : avail - 1;
    f->text[f->len++] = '\n';
    f->text[f->len] = '\0';
}

#define ck_assert_clean(f) ck_assert_msg((f).n == 0, "%d problem(s):\n%s", (f).n, (f).text)

/* ---- reading the document ------------------------------------------------------- */

static json_t *spec_load(void)
{
    json_error_t err;
    json_t *doc = json_loadb((const char *)embed_openapi[0].data, embed_openapi[0].len,
                             JSON_REJECT_DUPLICATES, &err);
    ck_assert_msg(doc != NULL, "api/openapi.json is not valid JSON: line %d column %d: %s",
                  err.line, err.column, err.text);
    return doc;
}

/* The node a local JSON pointer reference ("#/a/b~1c") names, or NULL. */
static json_t *pointer(json_t *doc, const char *ref)
{
    if (strncmp(ref, "#/", 2) != 0)
        return NULL;
    json_t *node = doc;
    const char *p = ref + 1;
    char tok[256];
    while (node && *p == '/') {
        p++;
        size_t n = 0;
        while (*p && *p != '/' && n < sizeof tok - 1) {
            if (p[0] == '~' && (p[1] == '0' || p[1] == '1')) {
                tok[n++] = p[1] == '1' ? '/' : '~';
                p += 2;
            } else {
                tok[n++] = *p++;
            }
        }
        tok[n] = '\0';
        if (json_is_object(node)) {
            node = json_object_get(node, tok);
        } else if (json_is_array(node)) {
            char *end;
            unsigned long i = strtoul(tok, &end, 10);
            node = *end || end == tok ? NULL : json_array_get(node, i);
        } else {
            node = NULL;
        }
    }
    return *p ? NULL : node;
}

/* node itself, or what its "$ref" chain ends at (NULL when dangling). */
static json_t *resolve(json_t *doc, json_t *node)
{
    for (int depth = 0; depth < 8 && node; depth++) {
        const char *ref = json_string_value(json_object_get(node, "$ref"));
        if (!ref)
            return node;
        node = pointer(doc, ref);
    }
    return NULL; /* a cycle or an absurd chain */
}

static const char *const http_methods[] = {"get",   "put",  "post",    "delete",
                                           "patch", "head", "options", "trace"};

static bool is_http_method(const char *key)
{
    for (size_t i = 0; i < sizeof http_methods / sizeof http_methods[0]; i++)
        if (strcmp(key, http_methods[i]) == 0)
            return true;
    return false;
}

static void lowercase(const char *in, char *out, size_t n)
{
    size_t i = 0;
    for (; in[i] && i + 1 < n; i++)
        out[i] = (char)tolower((unsigned char)in[i]);
    out[i] = '\0';
}

/* The spec's key of a route: a rest-of-path "{name*}" is "{name}" there (OpenAPI 3). */
static json_t *path_item(json_t *doc, const struct route *r)
{
    char key[256];
    size_t o = 0;
    for (const char *p = r->pattern; *p && o + 1 < sizeof key; p++)
        if (!(p[0] == '*' && p[1] == '}'))
            key[o++] = *p;
    key[o] = '\0';
    return json_object_get(json_object_get(doc, "paths"), key);
}

static json_t *operation(json_t *doc, const struct route *r)
{
    char m[16];
    lowercase(r->method, m, sizeof m);
    return json_object_get(path_item(doc, r), m);
}

/* "project.create" -> "projectCreate": the operationId convention. */
static void camel(const char *action, char *out, size_t n)
{
    size_t o = 0;
    bool up = false;
    for (const char *p = action; *p && o + 1 < n; p++) {
        if (*p == '.' || *p == '_') { /* project_quota.read -> projectQuotaRead */
            up = true;
            continue;
        }
        out[o++] = (char)(up ? toupper((unsigned char)*p) : *p);
        up = false;
    }
    out[o] = '\0';
}

/* ---- names of parameters ------------------------------------------------------------- */

struct names {
    size_t n;
    char v[MAX_NAMES][NAME_LEN];
};

static bool names_has(const struct names *s, const char *name)
{
    for (size_t i = 0; i < s->n; i++)
        if (strcmp(s->v[i], name) == 0)
            return true;
    return false;
}

static void names_add(struct names *s, const char *name, size_t len)
{
    if (s->n < MAX_NAMES)
        snprintf(s->v[s->n++], NAME_LEN, "%.*s", (int)len, name);
}

/* The {params} of a pattern, in order. */
static void pattern_params(const char *pattern, struct names *out)
{
    out->n = 0;
    for (const char *p = strchr(pattern, '{'); p; p = strchr(p, '{')) {
        const char *end = strchr(p, '}');
        if (!end)
            break;
        size_t len = (size_t)(end - p - 1);
        names_add(out, p + 1, len && p[len] == '*' ? len - 1 : len); /* {path*}: "path" */
        p = end;
    }
}

/* The comma-separated query column of a route. */
static void route_query(const struct route *r, struct names *out)
{
    out->n = 0;
    for (const char *p = r->query; p && *p;) {
        size_t len = strcspn(p, ",");
        if (len)
            names_add(out, p, len);
        p += len;
        if (*p == ',')
            p++;
    }
}

/*
 * The parameters an operation has where `in` says (path, query, header),
 * operation-level first, then path-item-level ones the operation does not
 * override. A name given twice at the same level is a finding.
 */
static void spec_params(json_t *doc, json_t *item, json_t *op, const char *in, const char *what,
                        struct findings *f, struct names *out)
{
    out->n = 0;
    json_t *levels[2] = {json_object_get(op, "parameters"), json_object_get(item, "parameters")};
    for (int l = 0; l < 2; l++) {
        struct names seen = {0};
        size_t i;
        json_t *pref;
        json_array_foreach(levels[l], i, pref)
        {
            json_t *p = resolve(doc, pref);
            const char *name = json_string_value(json_object_get(p, "name"));
            const char *pin = json_string_value(json_object_get(p, "in"));
            if (!name || !pin) {
                note(f, "%s: parameter %zu has no name or no \"in\"", what, i);
                continue;
            }
            if (strcmp(pin, in) != 0)
                continue;
            if (names_has(&seen, name))
                note(f, "%s: %s parameter \"%s\" is listed twice", what, in, name);
            names_add(&seen, name, strlen(name));
            if (l == 1 && names_has(out, name))
                continue; /* overridden by the operation */
            if (strcmp(in, "path") == 0 && !json_is_true(json_object_get(p, "required")))
                note(f, "%s: path parameter \"%s\" must be required: true", what, name);
            if (!names_has(out, name))
                names_add(out, name, strlen(name));
        }
    }
}

static void compare_names(struct findings *f, const char *what, const char *kind,
                          const struct names *route, const struct names *spec)
{
    for (size_t i = 0; i < route->n; i++)
        if (!names_has(spec, route->v[i]))
            note(f, "%s: %s parameter \"%s\" of the route is not in the spec", what, kind,
                 route->v[i]);
    for (size_t i = 0; i < spec->n; i++)
        if (!names_has(route, spec->v[i]))
            note(f, "%s: %s parameter \"%s\" of the spec is not in the route", what, kind,
                 spec->v[i]);
}

/* ---- the checks ------------------------------------------------------------------ */

static bool str_is(json_t *v, const char *want)
{
    const char *s = json_string_value(v);
    return s && strcmp(s, want) == 0;
}

/* The document as a whole: version, info, servers, security schemes. */
static void check_document(json_t *doc, struct findings *f)
{
    if (!json_is_object(doc)) {
        note(f, "the document is not a JSON object");
        return;
    }
    if (!str_is(json_object_get(doc, "openapi"), "3.1.0"))
        note(f, "\"openapi\" must be \"3.1.0\"");
    json_t *info = json_object_get(doc, "info");
    if (!str_is(json_object_get(info, "title"), "aidc"))
        note(f, "info.title must be \"aidc\"");
    if (!str_is(json_object_get(info, "version"), "0.1.0"))
        note(f, "info.version must be \"0.1.0\"");
    if (!json_is_string(json_object_get(info, "description")))
        note(f, "info.description is missing");
    if (!str_is(json_object_get(json_array_get(json_object_get(doc, "servers"), 0), "url"), "/"))
        note(f, "servers must be [{\"url\": \"/\"}]");
    if (!json_is_object(json_object_get(doc, "paths")))
        note(f, "\"paths\" must be an object");
    json_t *sec = json_object_get(json_object_get(doc, "components"), "securitySchemes");
    json_t *bearer = json_object_get(sec, "bearerAuth");
    json_t *cookie = json_object_get(sec, "cookieAuth");
    if (!str_is(json_object_get(bearer, "type"), "http") ||
        !str_is(json_object_get(bearer, "scheme"), "bearer"))
        note(f, "securitySchemes.bearerAuth must be http bearer");
    if (!str_is(json_object_get(cookie, "type"), "apiKey") ||
        !str_is(json_object_get(cookie, "in"), "cookie") ||
        !str_is(json_object_get(cookie, "name"), AUTH_COOKIE))
        note(f, "securitySchemes.cookieAuth must be an apiKey in cookie \"%s\"", AUTH_COOKIE);
}

/* Same operations on both sides: method + path. */
static void check_coverage(json_t *doc, const struct route *table, size_t n, struct findings *f)
{
    for (size_t i = 0; i < n; i++) {
        if (!json_is_object(operation(doc, &table[i])))
            note(f, "%s %s: in the route table, missing from the spec", table[i].method,
                 table[i].pattern);
        for (size_t j = 0; j < i; j++)
            if (strcmp(table[i].method, table[j].method) == 0 &&
                strcmp(table[i].pattern, table[j].pattern) == 0)
                note(f, "%s %s: twice in the route table", table[i].method, table[i].pattern);
    }
    const char *path;
    json_t *item;
    json_object_foreach(json_object_get(doc, "paths"), path, item)
    {
        const char *key;
        json_t *op;
        json_object_foreach(item, key, op)
        {
            if (!is_http_method(key)) {
                bool allowed = strcmp(key, "parameters") == 0 || strcmp(key, "summary") == 0 ||
                               strcmp(key, "description") == 0 || strncmp(key, "x-", 2) == 0;
                if (!allowed)
                    note(f, "%s: unexpected key \"%s\" in the path item", path, key);
                continue;
            }
            bool found = false;
            for (size_t i = 0; i < n && !found; i++)
                found = path_item(doc, &table[i]) == item &&
                        strcasecmp(table[i].method, key) == 0;
            if (!found)
                note(f, "%s %s: in the spec, missing from the route table", key, path);
        }
    }
}

/* Path parameters equal the pattern's {params}; query parameters the query column. */
static void check_params(json_t *doc, const struct route *table, size_t n, struct findings *f)
{
    for (size_t i = 0; i < n; i++) {
        const struct route *r = &table[i];
        json_t *op = operation(doc, r);
        if (!op)
            continue; /* check_coverage reports it */
        char what[160];
        snprintf(what, sizeof what, "%s %s", r->method, r->pattern);
        struct names want, have;
        pattern_params(r->pattern, &want);
        spec_params(doc, path_item(doc, r), op, "path", what, f, &have);
        compare_names(f, what, "path", &want, &have);
        route_query(r, &want);
        spec_params(doc, path_item(doc, r), op, "query", what, f, &have);
        compare_names(f, what, "query", &want, &have);
    }
}

/* limit and cursor are the same everywhere: api/paging.h's rules. */
static void check_paging_params(json_t *doc, const struct route *table, size_t n,
                                struct findings *f)
{
    for (size_t i = 0; i < n; i++) {
        json_t *op = operation(doc, &table[i]);
        size_t k;
        json_t *pref;
        json_array_foreach(json_object_get(op, "parameters"), k, pref)
        {
            json_t *p = resolve(doc, pref);
            json_t *schema = resolve(doc, json_object_get(p, "schema"));
            const char *name = json_string_value(json_object_get(p, "name"));
            if (!str_is(json_object_get(p, "in"), "query") || !name)
                continue;
            if (strcmp(name, "limit") == 0 &&
                (!str_is(json_object_get(schema, "type"), "integer") ||
                 json_integer_value(json_object_get(schema, "minimum")) != 1 ||
                 json_integer_value(json_object_get(schema, "maximum")) != PAGING_MAX ||
                 json_integer_value(json_object_get(schema, "default")) != PAGING_DEFAULT))
                note(f, "%s %s: limit must be an integer 1..%d, default %d", table[i].method,
                     table[i].pattern, PAGING_MAX, PAGING_DEFAULT);
            if (strcmp(name, "cursor") == 0 && !str_is(json_object_get(schema, "type"), "string"))
                note(f, "%s %s: cursor must be a string", table[i].method, table[i].pattern);
        }
    }
}

static bool has_header_param(json_t *doc, json_t *op, const char *name)
{
    size_t k;
    json_t *pref;
    json_array_foreach(json_object_get(op, "parameters"), k, pref)
    {
        json_t *p = resolve(doc, pref);
        const char *pn = json_string_value(json_object_get(p, "name"));
        if (str_is(json_object_get(p, "in"), "header") && pn && strcasecmp(pn, name) == 0)
            return true;
    }
    return false;
}

/* Idempotency-Key exactly on RF_CREATES routes, with its replay header and 409. */
static void check_idempotency(json_t *doc, const struct route *table, size_t n, struct findings *f)
{
    for (size_t i = 0; i < n; i++) {
        const struct route *r = &table[i];
        json_t *op = operation(doc, r);
        if (!op)
            continue;
        bool creates = (r->flags & RF_CREATES) != 0;
        bool has = has_header_param(doc, op, "Idempotency-Key");
        if (creates && !has)
            note(f, "%s %s: creates, but lacks the Idempotency-Key header parameter", r->method,
                 r->pattern);
        if (!creates && has)
            note(f, "%s %s: documents Idempotency-Key, which the route ignores", r->method,
                 r->pattern);
        if (!creates)
            continue;
        json_t *responses = json_object_get(op, "responses");
        if (!json_object_get(responses, "409"))
            note(f, "%s %s: creates, but lacks the 409 of a reused Idempotency-Key", r->method,
                 r->pattern);
        bool replay = false;
        const char *code;
        json_t *resp;
        json_object_foreach(responses, code, resp)
        {
            if (code[0] == '2')
                replay |= json_object_get(json_object_get(resolve(doc, resp), "headers"),
                                          "Idempotent-Replayed") != NULL;
        }
        if (!replay)
            note(f, "%s %s: no 2xx response documents the Idempotent-Replayed header", r->method,
                 r->pattern);
    }
}

/* operationId present and unique across every operation of the document. */
static void check_operation_ids(json_t *doc, struct findings *f)
{
    json_t *seen = json_object();
    const char *path;
    json_t *item;
    json_object_foreach(json_object_get(doc, "paths"), path, item)
    {
        const char *key;
        json_t *op;
        json_object_foreach(item, key, op)
        {
            if (!is_http_method(key))
                continue;
            const char *id = json_string_value(json_object_get(op, "operationId"));
            if (!id || !*id) {
                note(f, "%s %s: no operationId", key, path);
                continue;
            }
            if (json_object_get(seen, id))
                note(f, "%s %s: operationId \"%s\" is not unique", key, path, id);
            json_object_set_new(seen, id, json_true());
        }
    }
    json_decref(seen);
}

/* Responses: a 2xx, X-Request-Id everywhere, problem+json for errors, and the
 * statuses the dispatcher produces for the route's flags. */
static void check_responses(json_t *doc, const struct route *r, json_t *op, struct findings *f)
{
    json_t *responses = json_object_get(op, "responses");
    bool ok2xx = false;
    const char *code;
    json_t *rref;
    json_object_foreach(responses, code, rref)
    {
        json_t *resp = resolve(doc, rref);
        if (!resp) {
            note(f, "%s %s: response %s does not resolve", r->method, r->pattern, code);
            continue;
        }
        /* a redirect is a route's success too (single sign-on sends the browser on) */
        ok2xx |= (code[0] == '2' || code[0] == '3') && strlen(code) == 3;
        if (!json_object_get(json_object_get(resp, "headers"), "X-Request-Id"))
            note(f, "%s %s: response %s lacks the X-Request-Id header", r->method, r->pattern,
                 code);
        if ((code[0] == '4' || code[0] == '5') &&
            !json_object_get(json_object_get(resp, "content"), "application/problem+json"))
            note(f, "%s %s: response %s is not application/problem+json", r->method, r->pattern,
                 code);
    }
    if (!ok2xx)
        note(f, "%s %s: no 2xx response (nor a 3xx)", r->method, r->pattern);

    struct {
        const char *code;
        bool needed;
    } must[] = {
        {"400", true},
        {"401", !(r->flags & (RF_PUBLIC | RF_OPTIONAL_AUTH))},
        {"403", !(r->flags & RF_PUBLIC)},
        {"404", strstr(r->pattern, "{tenant}") != NULL},
        {"413", (r->flags & RF_BODY) != 0},
        {"415", (r->flags & RF_BODY) != 0},
        {"503", (r->flags & (RF_PUBLIC | RF_NO_DB)) != (RF_PUBLIC | RF_NO_DB)},
    };
    for (size_t i = 0; i < sizeof must / sizeof must[0]; i++)
        if (must[i].needed && !json_object_get(responses, must[i].code))
            note(f, "%s %s: the dispatcher can answer %s, which is not documented", r->method,
                 r->pattern, must[i].code);
}

/* security as the flags say: none, optional or required. */
static void check_security(json_t *doc, const struct route *r, json_t *op, struct findings *f)
{
    json_t *sec = json_object_get(op, "security");
    if (!sec)
        sec = json_object_get(doc, "security");
    bool anonymous = false, bearer = false, cookie = false;
    size_t i;
    json_t *req;
    json_array_foreach(sec, i, req)
    {
        anonymous |= json_object_size(req) == 0;
        bearer |= json_object_get(req, "bearerAuth") != NULL;
        cookie |= json_object_get(req, "cookieAuth") != NULL;
    }
    if (!json_is_array(sec))
        note(f, "%s %s: no security requirement", r->method, r->pattern);
    else if (r->flags & RF_PUBLIC) {
        if (json_array_size(sec) != 0)
            note(f, "%s %s: public, so security must be []", r->method, r->pattern);
    } else if (r->flags & RF_OPTIONAL_AUTH) {
        if (!anonymous || !bearer || !cookie)
            note(f, "%s %s: optional authentication must list {}, bearerAuth and cookieAuth",
                 r->method, r->pattern);
    } else if (anonymous || !bearer || !cookie) {
        note(f, "%s %s: needs authentication: bearerAuth and cookieAuth, without {}", r->method,
             r->pattern);
    }
}

/* A JSON object body exactly on RF_BODY routes, closed to unknown fields. */
static void check_body(json_t *doc, const struct route *r, json_t *op, struct findings *f)
{
    json_t *body = resolve(doc, json_object_get(op, "requestBody"));
    if (r->flags & RF_INGEST) { /* JSON or NDJSON: both documented */
        json_t *content = json_object_get(body, "content");
        if (!json_object_get(content, "application/json") ||
            !json_object_get(content, "application/x-ndjson"))
            note(f, "%s %s: an ingest route documents application/json and application/x-ndjson",
                 r->method, r->pattern);
        return;
    }
    if (r->flags & RF_UPLOAD) { /* any bytes, streamed */
        if (!json_object_get(json_object_get(body, "content"), "application/octet-stream"))
            note(f, "%s %s: an upload route documents an application/octet-stream body",
                 r->method, r->pattern);
        return;
    }
    if (!(r->flags & RF_BODY)) {
        /* an optional body the handler reads itself (a files move) is allowed */
        if (body && !json_is_false(json_object_get(body, "required")))
            note(f, "%s %s: documents a request body the route does not take", r->method,
                 r->pattern);
        return;
    }
    json_t *schema = resolve(
        doc, json_object_get(json_object_get(json_object_get(body, "content"), "application/json"),
                             "schema"));
    if (!body || !json_is_true(json_object_get(body, "required")) || !schema)
        note(f, "%s %s: needs a required application/json request body with a schema", r->method,
             r->pattern);
    else if (!str_is(json_object_get(schema, "type"), "object") ||
             !json_is_false(json_object_get(schema, "additionalProperties")))
        note(f, "%s %s: the body schema must be an object with additionalProperties: false",
             r->method, r->pattern);
}

/* x-aidc-action, x-aidc-scope and x-aidc-roles equal the route row. */
static void check_authz(const struct route *r, json_t *op, struct findings *f)
{
    if (!str_is(json_object_get(op, "x-aidc-action"), r->action))
        note(f, "%s %s: x-aidc-action must be \"%s\"", r->method, r->pattern, r->action);

    json_t *scope = json_object_get(op, "x-aidc-scope");
    json_t *names = auth_scopes_json(r->scope);
    if (r->scope == 0 ? !json_is_null(scope)
                      : json_array_size(names) != 1 || !json_equal(scope, json_array_get(names, 0)))
        note(f, "%s %s: x-aidc-scope must be %s", r->method, r->pattern,
             r->scope ? json_string_value(json_array_get(names, 0)) : "null");
    json_decref(names);

    json_t *roles = json_object_get(op, "x-aidc-roles");
    struct {
        const char *key;
        unsigned flag;
    } flags[] = {
        {"public", RF_PUBLIC}, {"any_user", RF_ANY_USER}, {"optional_auth", RF_OPTIONAL_AUTH}};
    for (size_t i = 0; i < sizeof flags / sizeof flags[0]; i++) {
        json_t *v = json_object_get(roles, flags[i].key);
        if (!json_is_boolean(v) || json_is_true(v) != ((r->flags & flags[i].flag) != 0))
            note(f, "%s %s: x-aidc-roles.%s must be %s", r->method, r->pattern, flags[i].key,
                 (r->flags & flags[i].flag) ? "true" : "false");
    }
    json_t *global = json_object_get(roles, "global");
    unsigned bits = 0;
    size_t i;
    json_t *g;
    json_array_foreach(global, i, g)
    {
        unsigned b = json_is_string(g) ? auth_global_role_parse(json_string_value(g)) : 0;
        if (!b)
            note(f, "%s %s: x-aidc-roles.global holds something that is not a global role",
                 r->method, r->pattern);
        bits |= b;
    }
    if (!json_is_array(global) || bits != r->global_roles) {
        char want[64];
        actor_roles_csv(r->global_roles, want, sizeof want);
        note(f, "%s %s: x-aidc-roles.global must be [%s]", r->method, r->pattern, want);
    }
    json_t *tenant = json_object_get(roles, "tenant");
    const char *want_tenant =
        r->tenant_role == TR_NONE ? NULL : auth_tenant_role_name(r->tenant_role);
    if (want_tenant ? !str_is(tenant, want_tenant) : !json_is_null(tenant))
        note(f, "%s %s: x-aidc-roles.tenant must be %s", r->method, r->pattern,
             want_tenant ? want_tenant : "null");
}

/* Everything per operation that the route row determines. */
static void check_operations(json_t *doc, const struct route *table, size_t n, struct findings *f)
{
    for (size_t i = 0; i < n; i++) {
        const struct route *r = &table[i];
        json_t *op = operation(doc, r);
        if (!op)
            continue;
        char want[64];
        camel(r->action, want, sizeof want);
        if (!str_is(json_object_get(op, "operationId"), want))
            note(f, "%s %s: operationId must be \"%s\" (from the action %s)", r->method, r->pattern,
                 want, r->action);
        const char *summary = json_string_value(json_object_get(op, "summary"));
        if (!summary || !*summary)
            note(f, "%s %s: no summary", r->method, r->pattern);
        if (json_array_size(json_object_get(op, "tags")) == 0)
            note(f, "%s %s: no tags", r->method, r->pattern);
        check_responses(doc, r, op, f);
        check_security(doc, r, op, f);
        check_body(doc, r, op, f);
        check_authz(r, op, f);
    }
}

/* Every "$ref" is local and names something that exists. */
static void check_refs(json_t *doc, json_t *node, struct findings *f)
{
    if (json_is_object(node)) {
        json_t *ref = json_object_get(node, "$ref");
        if (json_is_string(ref) && !pointer(doc, json_string_value(ref)))
            note(f, "dangling $ref \"%s\"", json_string_value(ref));
        const char *key;
        json_t *v;
        json_object_foreach(node, key, v) check_refs(doc, v, f);
    } else if (json_is_array(node)) {
        size_t i;
        json_t *v;
        json_array_foreach(node, i, v) check_refs(doc, v, f);
    }
}

#endif
