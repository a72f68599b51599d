/*
 * fuzz_router.c - a request line, as aidcd receives it: "METHOD /path?query".
 *
 * The route table is api/openapi.json's (methods, path patterns, query
 * arguments; tests/unit/test_openapi.c keeps api/routes.c equal to it), so
 * the fuzzer walks the real patterns without linking every handler. The path
 * goes through router_match; the query, decoded as server/http.c decodes it
 * (libmicrohttpd splits at & and =, %HH is decoded except %00), goes through
 * router_accepts_query and every query parser of a handler: paging (limit,
 * cursor, keyed cursors), the audit filters, the usage reports' arguments
 * (from/to, group_by, format, filters), a route's {id}; the answer's
 * error is rendered as the dispatcher renders it (problem+json).
 */
#include "fuzz.h"

#include "api/auditfilter.h"
#include "api/paging.h"
#include "api/jobhistory.h"
#include "api/usagequery.h"
#include "lib/hex.h"
#include "server/problem.h"
#include "server/router.h"
#include "server/validate.h"
#include "lib/xalloc.h"

#include <jansson.h>
#include <stdio.h>

/* api/routes.c's table is not linked: these stand in for it (router_index). */
const struct route routes[1];
const size_t routes_count = 0;

static struct route *table;
static size_t ntable;

static const json_t *deref(const json_t *doc, const json_t *p)
{
    const char *ref = json_string_value(json_object_get(p, "$ref"));
    const char *prefix = "#/components/parameters/";
    if (ref && strncmp(ref, prefix, strlen(prefix)) == 0)
        return json_object_get(json_object_get(json_object_get(doc, "components"), "parameters"),
                               ref + strlen(prefix));
    return p;
}

/* The query arguments of params (comma-separated) appended to q. */
static void add_query(const json_t *doc, const json_t *params, char *q, size_t qsz)
{
    size_t i;
    const json_t *p;
    json_array_foreach(params, i, p) {
        p = deref(doc, p);
        const char *in = json_string_value(json_object_get(p, "in"));
        const char *name = json_string_value(json_object_get(p, "name"));
        if (in && name && strcmp(in, "query") == 0) {
            size_t l = strlen(q);
            snprintf(q + l, qsz - l, "%s%s", l ? "," : "", name);
        }
    }
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    json_error_t jerr;
    json_t *doc = json_load_file(AIDC_SOURCE_DIR "/api/openapi.json", 0, &jerr);
    if (!doc) {
        fprintf(stderr, "fuzz_router: api/openapi.json: %s\n", jerr.text);
        abort();
    }
    static const char *const methods[] = {"get", "post", "put", "patch", "delete"};
    const char *path;
    json_t *item;
    json_object_foreach(json_object_get(doc, "paths"), path, item) {
        for (size_t m = 0; m < sizeof methods / sizeof methods[0]; m++) {
            json_t *op = json_object_get(item, methods[m]);
            if (!op)
                continue;
            char q[1024] = "";
            add_query(doc, json_object_get(item, "parameters"), q, sizeof q);
            add_query(doc, json_object_get(op, "parameters"), q, sizeof q);
            table = xreallocarray(table, ntable + 1, sizeof *table);
            char *meth = xstrdup(methods[m]);
            for (char *c = meth; *c; c++)
                *c = (char)(*c - 'a' + 'A');
            table[ntable++] = (struct route){.method = meth, .pattern = xstrdup(path),
                                             .query = q[0] ? xstrdup(q) : NULL};
        }
    }
    json_decref(doc);
    if (ntable < 50)
        abort(); /* not the document we think it is */
    return 0;
}

/* The query string's arguments into rq, as server/intake.c's collect_query adds them. */
static void parse_query(struct req *rq, char *q)
{
    for (char *arg = q; arg && *arg;) {
        char *amp = strchr(arg, '&');
        if (amp)
            *amp = '\0';
        char *eq = strchr(arg, '=');
        if (eq)
            *eq = '\0';
        hex_url_unescape(arg);
        if (eq)
            hex_url_unescape(eq + 1);
        if (rq->nquery >= 64) {
            rq->query_dup = true;
            break;
        }
        req_add_query(rq, arg, eq ? eq + 1 : NULL);
        arg = amp ? amp + 1 : NULL;
    }
}

/* What the dispatcher does with a failed check: render the problem document. */
static void render(struct resp *rs)
{
    if (rs->err.status || rs->err.nfields) {
        char *doc = problem_render(&rs->err, "fuzz");
        json_t *j = doc ? json_loads(doc, 0, NULL) : NULL;
        if (!j)
            abort(); /* clients must always get valid JSON */
        json_decref(j);
        free(doc);
    }
    resp_free(rs);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *line = fuzz_str(data, size);
    struct req *rq = xcalloc(1, sizeof *rq);
    char *sp = strchr(line, ' ');
    const char *method = sp ? line : "GET";
    char *target = sp ? sp + 1 : line;
    if (sp)
        *sp = '\0';
    char *qm = strchr(target, '?');
    if (qm)
        *qm++ = '\0';
    hex_url_unescape(target);
    rq->method = method;
    rq->path = xstrdup(target);
    if (qm)
        parse_query(rq, qm);

    const struct route *rt = NULL;
    char allow[128];
    struct resp rs = {0};
    if (router_match(table, ntable, method, rq->path, rq, &rt, allow, sizeof allow) ==
        ROUTE_FOUND) {
        rq->route = rt;
        for (size_t i = 0; i < rq->nquery; i++)
            if (!router_accepts_query(rt, rq->query[i].key))
                api_field_problem(&rs, rq->query[i].key, PROBLEM_V_UNKNOWN_PARAMETER, NULL);
        render(&rs);
        const char *id;
        if (req_param(rq, "id"))
            validate_id_param(rq, &rs, &id);
        render(&rs);
        for (size_t i = 0; i < rq->nparams; i++) {
            validate_slug(rq->params[i].value);
            validate_username(rq->params[i].value);
        }
    }

    struct page pg;
    if (paging_parse(rq, &rs, &pg) == 0)
        paging_free(&pg);
    render(&rs);
    if (paging_parse_keyed(rq, &rs, &pg) == 0)
        paging_free(&pg);
    render(&rs);

    struct db_audit_filter f;
    char prefix[256];
    memset(&f, 0, sizeof f);
    auditfilter_events(rq, &rs, &f, prefix, sizeof prefix);
    render(&rs);
    struct db_audit_cmd_filter cf;
    memset(&cf, 0, sizeof cf);
    auditfilter_commands(rq, &rs, &cf);
    render(&rs);
    json_decref(auditfilter_echo(rq));
    for (int platform = 0; platform < 2; platform++) {
        struct usage_args ua;
        if (usagequery_parse(rq, &rs, platform, 366, 1000, &ua) == 0 &&
            (ua.group_pg[0] != '{' || ua.norder > USAGEQUERY_NGROUPS ||
             strnlen(ua.from, sizeof ua.from) == sizeof ua.from))
            abort();
        render(&rs);
    }
    struct jobhistory jh;
    if (jobhistory_parse(rq, &rs, &jh) == 0 &&
        ((jh.f.states && jh.states[0] != '{') || (unsigned)jh.f.sort > DB_JOB_SORT_RUNTIME ||
         (jh.f.name_like && strnlen(jh.name_like, sizeof jh.name_like) == sizeof jh.name_like)))
        abort();
    render(&rs);
    req_free(rq);
    free(line);
    return 0;
}
