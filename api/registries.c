/*
 * registries.c - registering container registries and asking for their
 * sync. The sync itself runs in the registry sync worker (images/sync.c),
 * woken through NOTIFY aidc_registries; its progress and report are part
 * of the registry (GET /registries/{name}).
 */
#include "images.h"

#include "../db/images.h"
#include "../db/sched.h"
#include "../images/manifest.h"
#include "../images/sync.h"
#include "../lib/credref.h"
#include "../lib/err.h"
#include "../lib/xalloc.h"
#include "../server/validate.h"
#include "paging.h"

#include <ctype.h>
#include <microhttpd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool is_credentials_ref(const char *s)
{
    return s[0] == '\0' || credref_valid(s);
}

/*
 * http(s)://host[:port] and nothing more: host[:port] into host. Paths,
 * user info, queries are refused (a registry's API lives at /v2/ of its root).
 */
static bool url_host(const char *url, char *host, size_t hostsz)
{
    const char *p = strncmp(url, "https://", 8) == 0  ? url + 8
                    : strncmp(url, "http://", 7) == 0 ? url + 7
                                                      : NULL;
    if (!p || !*p)
        return false;
    size_t n = strlen(p);
    if (n && p[n - 1] == '/')
        n--;
    if (n == 0 || n >= hostsz)
        return false;
    for (size_t i = 0; i < n; i++)
        if (!isalnum((unsigned char)p[i]) && !strchr(".-:[]", p[i]))
            return false;
    memcpy(host, p, n);
    host[n] = '\0';
    return true;
}

static bool is_url(const char *s)
{
    char host[IMAGE_HOST_MAX + 1];
    return url_host(s, host, sizeof host);
}

static const struct vfield create_fields[] = {
    {"name", V_STRING, V_REQUIRED, 0, 0, validate_slug, PROBLEM_V_SLUG},
    {"url", V_STRING, V_REQUIRED, 1, 300, is_url, PROBLEM_REGISTRY_URL},
    {"credentials_ref", V_STRING, V_NULLABLE, 0, 0, is_credentials_ref,
     PROBLEM_REGISTRY_CREDENTIALS_REF},
    {"options", V_OBJECT, 0, 0, 0, NULL, 0},
};

int api_registry_create(struct req *rq, struct resp *rs)
{
    if (!validate_object(rq->json, create_fields, sizeof create_fields / sizeof create_fields[0],
                         rs))
        return api_fail_fields(rs);
    const char *name = vstr(rq->json, "name"), *url = vstr(rq->json, "url");
    json_t *options = json_object_get(rq->json, "options");
    char msg[256];
    if (options && !regsync_options_valid(options, msg, sizeof msg)) {
        api_field_problem(rs, "options", PROBLEM_REGISTRY_OPTIONS,
                          json_pack("{s:o}", "reason", problem_text(msg)));
        return api_fail_fields(rs);
    }
    char host[IMAGE_HOST_MAX + 1];
    url_host(url, host, sizeof host);
    size_t ul = strlen(url);
    char *clean = xstrndup(url, ul && url[ul - 1] == '/' ? ul - 1 : ul);
    char *opts = options ? json_dumps(options, JSON_COMPACT) : strdup("{}");
    json_t *out = NULL;
    int e = opts ? db_registry_create(rq->db, name, clean, host, vstr(rq->json, "credentials_ref"),
                                      opts, &out)
                 : AIDC_EINTERNAL;
    free(opts);
    free(clean);
    if (e == AIDC_ECONFLICT)
        return api_problem(rs, PROBLEM_REGISTRY_EXISTS, json_pack("{s:s}", "registry", name));
    /* a new registry is synced at once */
    json_t *requested = NULL;
    if (!e)
        e = db_registry_request_sync(rq->db, name, &requested);
    if (!e) {
        json_decref(out);
        out = requested;
    }
    if (!e)
        e = db_sched_wake(rq->db, "aidc_registries");
    if (e) {
        json_decref(out);
        return e;
    }
    char *loc = xasprintf("/api/v1/registries/%s", name);
    resp_header(rs, MHD_HTTP_HEADER_LOCATION, loc);
    free(loc);
    resp_audit(rs, "registry", name,
               json_pack("{s:s, s:s, s:O}", "name", name, "url", url, "options",
                         json_object_get(out, "options")));
    return resp_json(rs, MHD_HTTP_CREATED, out);
}

int api_registry_list(struct req *rq, struct resp *rs)
{
    struct page pg;
    int e = paging_parse(rq, rs, &pg);
    if (e)
        return e;
    e = db_registry_list(rq->db, pg.after, pg.limit, &pg.rows);
    return paging_finish(rs, &pg, e, NULL);
}

static int name_param(struct req *rq, struct resp *rs, const char **out)
{
    *out = req_param(rq, "name");
    if (!validate_slug(*out)) {
        api_field_problem(rs, "name", PROBLEM_V_SLUG, NULL);
        return api_fail_fields(rs);
    }
    return 0;
}

int api_registry_get(struct req *rq, struct resp *rs)
{
    const char *name;
    int e = name_param(rq, rs, &name);
    if (e)
        return e;
    json_t *out = NULL;
    e = db_registry_get(rq->db, name, &out);
    if (e == AIDC_ENOTFOUND)
        return api_problem(rs, PROBLEM_REGISTRY_NOT_FOUND, json_pack("{s:s}", "registry", name));
    return e ? e : resp_json(rs, MHD_HTTP_OK, out);
}

int api_registry_sync(struct req *rq, struct resp *rs)
{
    const char *name;
    int e = name_param(rq, rs, &name);
    if (e)
        return e;
    json_t *out = NULL;
    e = db_registry_request_sync(rq->db, name, &out);
    if (e == AIDC_ENOTFOUND)
        return api_problem(rs, PROBLEM_REGISTRY_NOT_FOUND, json_pack("{s:s}", "registry", name));
    if (!e)
        e = db_sched_wake(rq->db, "aidc_registries");
    if (e) {
        json_decref(out);
        return e;
    }
    char *loc = xasprintf("/api/v1/registries/%s", name);
    resp_header(rs, MHD_HTTP_HEADER_LOCATION, loc);
    free(loc);
    resp_audit(rs, "registry", name, NULL);
    return resp_json(rs, MHD_HTTP_ACCEPTED, out);
}
