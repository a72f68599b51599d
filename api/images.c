/*
 * images.c - image metadata: the images a caller may use (public ones and
 * its tenants'), registering a tenant's own, labels, immutability. Images
 * found in registries come from the sync worker (images/sync.c).
 */
#include "images.h"

#include "../db/images.h"
#include "../db/tenants.h"
#include "../images/manifest.h"
#include "../images/sync.h"
#include "../lib/crypto.h"
#include "../lib/err.h"
#include "../lib/xalloc.h"
#include "../server/validate.h"
#include "paging.h"

#include <math.h>
#include <microhttpd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SIZE_MAX_BYTES (1L << 50)
#define GIB            1073741824.0

static bool repo_ok(const char *s)
{
    return imgref_repository_valid(s);
}
static bool tag_ok(const char *s)
{
    return imgref_tag_valid(s);
}
static bool digest_ok(const char *s)
{
    return imgref_digest_valid(s);
}

static const struct vfield create_fields[] = {
    {"repository", V_STRING, V_REQUIRED, 1, IMAGE_REPO_MAX, repo_ok,
     PROBLEM_IMAGE_REPOSITORY_PATTERN},
    {"tag", V_STRING, V_REQUIRED, 1, IMAGE_TAG_MAX, tag_ok, PROBLEM_IMAGE_TAG_PATTERN},
    {"digest", V_STRING, V_REQUIRED, 0, 0, digest_ok, PROBLEM_IMAGE_DIGEST_PATTERN},
    {"size_bytes", V_INT, V_REQUIRED, 0, SIZE_MAX_BYTES, NULL, 0},
    {"labels", V_OBJECT, 0, 0, 0, NULL, 0},
    {"registry", V_STRING, V_NULLABLE, 0, 0, validate_slug, PROBLEM_V_REGISTRY},
    {"immutable", V_BOOL, 0, 0, 0, NULL, 0},
};

static const struct vfield update_fields[] = {
    {"labels", V_OBJECT, 0, 0, 0, NULL, 0},
    {"immutable", V_BOOL, 0, 0, 0, NULL, 0},
    {"tag", V_STRING, 0, 1, IMAGE_TAG_MAX, tag_ok, PROBLEM_IMAGE_TAG_PATTERN},
    {"digest", V_STRING, 0, 0, 0, digest_ok, PROBLEM_IMAGE_DIGEST_PATTERN},
};

/* labels: at most IMAGE_LABELS_MAX string values, keys 1-128 and values up to 256 characters */
static bool labels_valid(struct resp *rs, const json_t *labels)
{
    if (!labels)
        return true;
    if (json_object_size(labels) > IMAGE_LABELS_MAX) {
        api_field_problem(rs, "labels", PROBLEM_IMAGE_LABELS_TOO_MANY,
                          json_pack("{s:I}", "max", (json_int_t)IMAGE_LABELS_MAX));
        return false;
    }
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)labels, k, v)
    {
        size_t kl = validate_utf8_len(k);
        if (kl == 0 || kl > 128 || !json_is_string(v) ||
            validate_utf8_len(json_string_value(v)) > IMAGE_LABEL_VALUE_MAX) {
            api_field_problem(rs, "labels", PROBLEM_IMAGE_LABEL_SIZE,
                              json_pack("{s:I}", "max", (json_int_t)IMAGE_LABEL_VALUE_MAX));
            return false;
        }
        for (const char *p = k; *p; p++)
            if ((unsigned char)*p < ' ' || *p == '=' || *p == ',') {
                api_field_problem(rs, "labels", PROBLEM_IMAGE_LABEL_KEY_CHARS, NULL);
                return false;
            }
    }
    return true;
}

/* "k=v,k2=v2" of ?label= into a JSON object text (malloc'd), or NULL with a 400 filled. */
static char *label_filter(struct resp *rs, const char *arg)
{
    json_t *o = json_object();
    char *copy = xstrdup(arg), *save = NULL;
    bool ok = strlen(arg) <= 2048;
    for (char *pair = strtok_r(copy, ",", &save); pair && ok; pair = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(pair, '=');
        ok = eq && eq != pair && json_object_size(o) < 16;
        if (ok) {
            *eq = '\0';
            ok = json_object_set_new(o, pair, json_string(eq + 1)) == 0;
        }
    }
    char *text = ok && json_object_size(o) ? json_dumps(o, JSON_COMPACT) : NULL;
    json_decref(o);
    free(copy);
    if (!text)
        api_field_problem(rs, "label", PROBLEM_IMAGE_LABEL_FILTER, NULL);
    return text;
}

static int list(struct req *rq, struct resp *rs, const char *tenant_id, bool tenant_only)
{
    struct db_image_filter f = {.tenant_id = tenant_id, .tenant_only = tenant_only};
    struct page pg;
    int e = paging_parse_keyed(rq, rs, &pg);
    if (e)
        return e;
    f.after = pg.after;
    f.after_id = pg.after_id;
    f.limit = pg.limit;
    f.visibility = req_query(rq, "visibility");
    if (f.visibility && strcmp(f.visibility, "public") != 0 && strcmp(f.visibility, "tenant") != 0)
        api_field_problem(rs, "visibility", PROBLEM_V_ONE_OF,
                          json_pack("{s:s}", "allowed", "public, tenant"));
    f.q = req_query(rq, "q");
    if (f.q && (!f.q[0] || strlen(f.q) > 200))
        api_field_problem(rs, "q", PROBLEM_V_LENGTH,
                          json_pack("{s:I, s:I}", "min", (json_int_t)1, "max", (json_int_t)200));
    f.registry = req_query(rq, "registry");
    if (f.registry && !validate_slug(f.registry))
        api_field_problem(rs, "registry", PROBLEM_V_REGISTRY, NULL);
    char *labels = NULL;
    if (req_query(rq, "label"))
        labels = label_filter(rs, req_query(rq, "label"));
    f.labels = labels;
    if (rs->err.nfields)
        e = api_fail_fields(rs);
    else
        e = db_image_list(rq->db, &f, &pg.rows);
    if (!e)
        e = paging_page(rs, &pg);
    free(labels);
    paging_free(&pg);
    return e;
}

int api_image_list(struct req *rq, struct resp *rs)
{
    const char *slug = req_query(rq, "tenant");
    char tenant_id[37] = "";
    if (slug) {
        bool suspended;
        if (!validate_slug(slug)) {
            api_field_problem(rs, "tenant", PROBLEM_V_TENANT, NULL);
            return api_fail_fields(rs);
        }
        int e = db_tenant_resolve(rq->db, slug, tenant_id, &suspended);
        if (e == AIDC_ENOTFOUND)
            return api_problem(rs, PROBLEM_TENANT_NOT_FOUND, json_pack("{s:s}", "tenant", slug));
        if (e)
            return e;
    }
    return list(rq, rs, tenant_id[0] ? tenant_id : NULL, false);
}

int api_image_tenant_list(struct req *rq, struct resp *rs)
{
    return list(rq, rs, rq->tenant.id, true);
}

static int not_found(struct req *rq, struct resp *rs, const char *id)
{
    return api_problem(rs, PROBLEM_IMAGE_NOT_FOUND,
                       json_pack("{s:s, s:s}", "id", id, "tenant", rq->tenant.slug));
}

/*
 * A repository registered in a registry must be one the registry's mapping
 * gives this tenant: otherwise a tenant could claim another's private
 * repository (or a platform one) and run it with aidc's pull credentials.
 */
static int check_registry(struct req *rq, struct resp *rs, const char *name, const char *repo,
                          char registry_id[37])
{
    char host[256];
    char *options_text = NULL;
    int e = db_image_registry(rq->db, name, registry_id, host, sizeof host, &options_text);
    if (e == AIDC_ENOTFOUND) {
        api_field_problem(rs, "registry", PROBLEM_IMAGE_REGISTRY_UNKNOWN,
                          json_pack("{s:s}", "registry", name));
        return api_fail_fields(rs);
    }
    if (e)
        return e;
    json_t *options = json_loads(options_text, 0, NULL);
    free(options_text);
    bool pub = false;
    char slug[64];
    bool mapped = regsync_owner(options, repo, &pub, slug, sizeof slug);
    const char *prefix = json_string_value(json_object_get(options, "tenant_prefix"));
    if (pub) {
        api_field_problem(rs, "repository", PROBLEM_IMAGE_REPOSITORY_PLATFORM,
                          json_pack("{s:s, s:s}", "repository", repo, "registry", name));
    } else if (!mapped || strcmp(slug, rq->tenant.slug) != 0) {
        char *start = xasprintf("%s%s/", prefix ? prefix : "", rq->tenant.slug);
        api_field_problem(rs, "repository", PROBLEM_IMAGE_REPOSITORY_NOT_TENANTS,
                          json_pack("{s:s, s:s, s:s}", "tenant", rq->tenant.slug, "registry", name,
                                    "prefix", start));
        free(start);
    }
    json_decref(options);
    return rs->err.nfields ? api_fail_fields(rs) : 0;
}

/*
 * An image of no registry is pulled by its bare name, which a node may
 * resolve through a mirror of any registry: a name that some registry gives
 * the platform or another tenant is not the tenant's to register.
 */
static int check_unclaimed(struct req *rq, struct resp *rs, const char *repo)
{
    struct db_registry_mappings m = {0};
    int e = db_registry_mappings(rq->db, &m);
    for (size_t i = 0; !e && i < m.n && !rs->err.nfields; i++) {
        json_t *options = json_loads(m.v[i].options_json, 0, NULL);
        bool pub = false;
        char slug[64];
        bool mapped = regsync_owner(options, repo, &pub, slug, sizeof slug);
        json_decref(options);
        if (pub || (mapped && strcmp(slug, rq->tenant.slug) != 0))
            api_field_problem(rs, "repository",
                              pub ? PROBLEM_IMAGE_REPOSITORY_CLAIMED_PLATFORM
                                  : PROBLEM_IMAGE_REPOSITORY_CLAIMED_TENANT,
                              json_pack("{s:s, s:s}", "repository", repo, "registry", m.v[i].name));
    }
    db_registry_mappings_free(&m);
    if (e)
        return e;
    return rs->err.nfields ? api_fail_fields(rs) : 0;
}

/* The storage_gib quota: the tenant's images plus size must fit. */
static int check_storage(struct req *rq, struct resp *rs, long long size)
{
    long long used = 0;
    double limit = 0;
    bool has_limit = false;
    int e = db_image_storage(rq->db, rq->tenant.id, &used, &limit, &has_limit);
    if (e)
        return e;
    if (has_limit && (double)(used + size) > limit * GIB) {
        /* GiB to three decimals, as integers when whole ("1", not "1.0") */
        api_field_problem(rs, "size_bytes", PROBLEM_IMAGE_STORAGE_QUOTA,
                          json_pack("{s:s, s:o, s:o, s:o}", "tenant", rq->tenant.slug, "used_gib",
                                    problem_number(round((double)used / GIB * 1000) / 1000),
                                    "size_gib",
                                    problem_number(round((double)size / GIB * 1000) / 1000),
                                    "limit_gib", problem_number(limit)));
        return api_fail_fields(rs);
    }
    return 0;
}

int api_image_create(struct req *rq, struct resp *rs)
{
    const json_t *body = rq->json;
    if (!validate_object(body, create_fields, sizeof create_fields / sizeof create_fields[0], rs) ||
        !labels_valid(rs, json_object_get(body, "labels")))
        return api_fail_fields(rs);
    const char *repo = vstr(body, "repository"), *tag = vstr(body, "tag");
    const char *registry = vstr(body, "registry");
    long long size = (long long)json_integer_value(json_object_get(body, "size_bytes"));
    char registry_id[37] = "";
    int e = registry ? check_registry(rq, rs, registry, repo, registry_id)
                     : check_unclaimed(rq, rs, repo);
    if (!e)
        e = check_storage(rq, rs, size);
    if (e)
        return e;
    json_t *labels = json_object_get(body, "labels");
    char *lj = labels ? json_dumps(labels, JSON_COMPACT) : strdup("{}");
    char sz[24];
    snprintf(sz, sizeof sz, "%lld", size);
    struct db_image_new im = {.tenant_id = rq->tenant.id,
                              .registry_id = registry_id[0] ? registry_id : NULL,
                              .repository = repo,
                              .tag = tag,
                              .digest = vstr(body, "digest"),
                              .size_bytes = sz,
                              .labels_json = lj,
                              .created_by = rq->actor.user_id[0] ? rq->actor.user_id : NULL,
                              .immutable = json_is_true(json_object_get(body, "immutable"))};
    json_t *out = NULL;
    e = lj ? db_image_create(rq->db, &im, &out) : AIDC_EINTERNAL;
    free(lj);
    if (e == AIDC_ECONFLICT && registry)
        return api_problem(
            rs, PROBLEM_IMAGE_EXISTS_IN_REGISTRY,
            json_pack("{s:s, s:s, s:s}", "repository", repo, "tag", tag, "registry", registry));
    if (e == AIDC_ECONFLICT)
        return api_problem(rs, PROBLEM_IMAGE_EXISTS,
                           json_pack("{s:s, s:s}", "repository", repo, "tag", tag));
    if (e)
        return e;
    const char *id = json_string_value(json_object_get(out, "id"));
    char *loc = xasprintf("/api/v1/tenants/%s/images/%s", rq->tenant.slug, id);
    resp_header(rs, MHD_HTTP_HEADER_LOCATION, loc);
    free(loc);
    resp_audit(rs, "image", id,
               json_pack("{s:s, s:s, s:s, s:I, s:s?, s:b}", "repository", repo, "tag", tag,
                         "digest", im.digest, "size_bytes", (json_int_t)size, "registry", registry,
                         "immutable", im.immutable));
    return resp_json(rs, MHD_HTTP_CREATED, out);
}

int api_image_get(struct req *rq, struct resp *rs)
{
    const char *id;
    int e = validate_id_param(rq, rs, &id);
    if (e)
        return e;
    json_t *out = NULL;
    e = db_image_get(rq->db, rq->tenant.id, id, &out);
    if (e == AIDC_ENOTFOUND)
        return not_found(rq, rs, id);
    return e ? e : resp_json(rs, MHD_HTTP_OK, out);
}

/* Lock the image for a change: 0, or the answer (404, 403 for another member's image). */
static int lock_for_change(struct req *rq, struct resp *rs, const char *id, struct db_image_lock *l)
{
    int e = db_image_lock(rq->db, rq->tenant.id, id, false, l);
    if (e == AIDC_ENOTFOUND)
        return not_found(rq, rs, id);
    if (e)
        return e;
    bool admin = (rq->actor.roles & GR_PLATFORM_ADMIN) || rq->tenant.role >= TR_ADMIN;
    if (!admin && strcmp(l->created_by, rq->actor.user_id) != 0)
        return api_problem(rs, PROBLEM_IMAGE_NOT_OWNER, json_pack("{s:s}", "id", id));
    /* allowed: lock it and decide on what it is now */
    e = db_image_lock(rq->db, rq->tenant.id, id, true, l);
    return e == AIDC_ENOTFOUND ? not_found(rq, rs, id) : e;
}

int api_image_update(struct req *rq, struct resp *rs)
{
    const char *id;
    int e = validate_id_param(rq, rs, &id);
    if (e)
        return e;
    const json_t *body = rq->json;
    if (!validate_object(body, update_fields, sizeof update_fields / sizeof update_fields[0], rs) ||
        !labels_valid(rs, json_object_get(body, "labels")))
        return api_fail_fields(rs);
    struct db_image_lock l;
    if ((e = lock_for_change(rq, rs, id, &l)) || rs->err.status)
        return e;
    const char *tag = vstr(body, "tag"), *digest = vstr(body, "digest");
    json_t *imm = json_object_get(body, "immutable");
    if (l.immutable && json_is_false(imm))
        return api_problem(rs, PROBLEM_IMAGE_IMMUTABLE_FOREVER, json_pack("{s:s}", "id", id));
    if (l.immutable && (tag || digest))
        return api_problem(rs, PROBLEM_IMAGE_IMMUTABLE_RETAG, json_pack("{s:s}", "id", id));
    if (l.synced && (tag || digest))
        return api_problem(rs, PROBLEM_IMAGE_SYNCED_RETAG, json_pack("{s:s}", "id", id));
    json_t *labels = json_object_get(body, "labels");
    char *lj = labels ? json_dumps(labels, JSON_COMPACT) : NULL;
    json_t *out = NULL;
    e = labels && !lj ? AIDC_EINTERNAL
                      : db_image_update(rq->db, id, lj, json_is_true(imm), tag, digest, &out);
    free(lj);
    if (e == AIDC_ECONFLICT) /* only a new tag can collide */
        return tag ? api_problem(rs, PROBLEM_IMAGE_TAG_TAKEN, json_pack("{s:s}", "tag", tag))
                   : api_problem(rs, PROBLEM_CONFLICT, NULL);
    if (e)
        return e;
    resp_audit(rs, "image", id, json_deep_copy(body));
    return resp_json(rs, MHD_HTTP_OK, out);
}

int api_image_delete(struct req *rq, struct resp *rs)
{
    const char *id;
    int e = validate_id_param(rq, rs, &id);
    if (e)
        return e;
    struct db_image_lock l;
    if ((e = lock_for_change(rq, rs, id, &l)) || rs->err.status)
        return e;
    if (l.immutable)
        return api_problem(rs, PROBLEM_IMAGE_IMMUTABLE_DELETE, json_pack("{s:s}", "id", id));
    if (l.synced) /* the next sync would find it again */
        return api_problem(rs, PROBLEM_IMAGE_SYNCED_DELETE, json_pack("{s:s}", "id", id));
    e = db_image_delete(rq->db, id);
    if (e)
        return e;
    resp_audit(rs, "image", id, NULL);
    return resp_json(rs, MHD_HTTP_NO_CONTENT, NULL);
}
