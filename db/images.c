/* images.c - registries and image metadata (see images.h). */
#include "images.h"

#include "../lib/imgref.h"

#include "../lib/err.h"
#include "../lib/xalloc.h"
#include "pgcol.h"
#include "rowjson.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define REGISTRY_COLS                                                                             \
    "r.id, r.name, r.url, r.credentials_ref, r.options, r.created_at,"                            \
    " CASE WHEN r.sync_started_at IS NOT NULL THEN 'running'"                                     \
    "      WHEN r.sync_requested_at IS NOT NULL THEN 'requested' ELSE 'idle' END AS sync_state,"  \
    " r.sync_requested_at, r.sync_started_at, r.sync_progress, r.last_sync_at, r.last_sync_ok,"   \
    " r.last_sync"

static const struct db_stmt st_reg_create = {
    "registry_create",
    "INSERT INTO registries AS r (name, url, host, credentials_ref, options)"
    " VALUES ($1, $2, $3, coalesce($4, ''), $5::jsonb) RETURNING " REGISTRY_COLS,
    5};
static const struct db_stmt st_reg_list = {
    "registry_list",
    "SELECT " REGISTRY_COLS ", r.name AS _cursor FROM registries r"
    " WHERE $1::text IS NULL OR r.name > $1 ORDER BY r.name LIMIT $2::int + 1",
    2};
static const struct db_stmt st_reg_get = {
    "registry_get", "SELECT " REGISTRY_COLS " FROM registries r WHERE r.name = $1", 1};
static const struct db_stmt st_reg_request = {
    "registry_request_sync",
    "UPDATE registries r SET sync_requested_at = coalesce(r.sync_requested_at, now())"
    " WHERE r.name = $1 RETURNING " REGISTRY_COLS,
    1};
enum claim_col { CL_ID, CL_NAME, CL_URL, CL_CREDREF, CL_OPTIONS, CL_OWNER };
static const struct db_stmt st_reg_claim = {
    "registry_claim",
    "UPDATE registries r SET sync_owner = gen_random_uuid(), sync_started_at = now(),"
    "       sync_heartbeat = now(), sync_requested_at = NULL, sync_progress = NULL"
    " WHERE r.id = (SELECT x.id FROM registries x"
    "  WHERE (x.sync_started_at IS NULL OR x.sync_heartbeat < now() - make_interval(secs => $2))"
    "    AND (x.sync_requested_at IS NOT NULL OR ($1::int > 0 AND (x.last_sync_at IS NULL"
    "         OR x.last_sync_at < now() - make_interval(secs => $1))))"
    "  ORDER BY x.sync_requested_at NULLS LAST, x.last_sync_at NULLS FIRST"
    "  LIMIT 1 FOR UPDATE SKIP LOCKED)"
    " RETURNING r.id, r.name, r.url, r.credentials_ref, r.options::text, r.sync_owner",
    2};
/* A new registry-sync leader: syncs its predecessor left running start over now. */
static const struct db_stmt st_reg_release = {
    "registry_release",
    "UPDATE registries SET sync_owner = NULL, sync_started_at = NULL, sync_heartbeat = NULL,"
    " sync_progress = NULL, sync_requested_at = coalesce(sync_requested_at, now())"
    " WHERE sync_owner IS NOT NULL",
    0};
static const struct db_stmt st_reg_progress = {
    "registry_progress",
    "UPDATE registries SET sync_heartbeat = now(), sync_progress = $2::jsonb"
    " WHERE id = $1::uuid AND sync_owner = $3::uuid",
    3};
static const struct db_stmt st_reg_finish = {
    "registry_finish",
    "UPDATE registries SET sync_owner = NULL, sync_started_at = NULL, sync_heartbeat = NULL,"
    " sync_progress = NULL, last_sync_at = now(), last_sync_ok = $2::boolean,"
    " last_sync = $3::jsonb WHERE id = $1::uuid AND sync_owner = $4::uuid",
    4};

#define IMAGE_COLS                                                                                \
    "i.id, i.repository, i.tag, i.digest, i.size_bytes, i.labels, i.visibility,"                  \
    " t.slug AS tenant, r.name AS registry, i.immutable, i.source, i.media_type, i.created_at,"   \
    " i.updated_at, i.upstream_deleted_at"
#define IMAGE_JOINS                                                                               \
    " LEFT JOIN tenants t ON t.id = i.tenant_id LEFT JOIN registries r ON r.id = i.registry_id"
#define IMAGE_FROM " FROM images i" IMAGE_JOINS
/* the row a statement wrote: its CTE i (the table does not show it to the same statement) */
#define IMAGE_FROM_NEW " FROM i" IMAGE_JOINS

/* keyset over (repository:tag, id): browsing reads like a registry listing */
static const struct db_stmt st_img_list = {
    "image_list",
    "SELECT " IMAGE_COLS ", i.repository || ':' || i.tag || '|' || i.id AS _cursor" IMAGE_FROM
    " WHERE i.deleted_at IS NULL"
    "   AND ($1::uuid IS NULL OR i.tenant_id = $1::uuid OR (i.tenant_id IS NULL AND NOT $2::boolean))"
    "   AND ($3::text IS NULL OR i.visibility = $3)"
    "   AND ($4::text IS NULL OR strpos(lower(i.repository || ':' || i.tag), lower($4)) > 0"
    "        OR EXISTS (SELECT 1 FROM jsonb_each_text(i.labels) l"
    "                   WHERE strpos(lower(l.value), lower($4)) > 0))"
    "   AND ($5::jsonb IS NULL OR i.labels @> $5::jsonb)"
    "   AND ($6::text IS NULL OR r.name = $6)"
    "   AND ($7::text IS NULL OR (i.repository || ':' || i.tag, i.id) > ($7, $8::uuid))"
    " ORDER BY i.repository || ':' || i.tag, i.id LIMIT $9::int + 1",
    9};
static const struct db_stmt st_img_get = {
    "image_get",
    "SELECT " IMAGE_COLS IMAGE_FROM
    " WHERE i.id = $2::uuid AND i.tenant_id = $1::uuid AND i.deleted_at IS NULL",
    2};
/* registrations of a tenant are serialised, so two cannot both fit the last GiB */
static const struct db_stmt st_img_storage = {
    "image_storage",
    "SELECT pg_advisory_xact_lock(hashtextextended('aidc.images.' || $1, 0)),"
    " (SELECT coalesce(sum(size_bytes), 0) FROM images WHERE tenant_id = $1::uuid"
    "    AND deleted_at IS NULL AND upstream_deleted_at IS NULL),"
    " (SELECT \"limit\" FROM tenant_quotas WHERE tenant_id = $1::uuid AND resource = 'storage_gib')",
    1};
static const struct db_stmt st_img_create = {
    "image_create",
    "WITH i AS (INSERT INTO images (tenant_id, visibility, registry_id, repository, tag, digest,"
    "             size_bytes, labels, immutable, source, media_type, created_by)"
    "           VALUES ($1::uuid, 'tenant', $2::uuid, $3, $4, $5, $6::bigint, $7::jsonb,"
    "                   $8::boolean, 'api', $9, $10::uuid) RETURNING *)"
    " SELECT " IMAGE_COLS IMAGE_FROM_NEW,
    10};
/* read first (a member's view of another's image is not lockable: its update policy) */
static const struct db_stmt st_img_peek = {
    "image_peek",
    "SELECT immutable, created_by, source FROM images"
    " WHERE id = $2::uuid AND tenant_id = $1::uuid AND deleted_at IS NULL",
    2};
static const struct db_stmt st_img_lock = {
    "image_lock",
    "SELECT immutable, created_by, source FROM images"
    " WHERE id = $2::uuid AND tenant_id = $1::uuid AND deleted_at IS NULL FOR UPDATE",
    2};
static const struct db_stmt st_img_update = {
    "image_update",
    "WITH i AS (UPDATE images SET labels = coalesce($2::jsonb, labels),"
    "             immutable = immutable OR $3::boolean, tag = coalesce($4, tag),"
    "             digest = coalesce($5, digest)"
    "           WHERE id = $1::uuid RETURNING *)"
    " SELECT " IMAGE_COLS IMAGE_FROM_NEW,
    5};
static const struct db_stmt st_img_delete = {
    "image_delete", "UPDATE images SET deleted_at = now() WHERE id = $1::uuid", 1};
enum mapping_col { MC_NAME, MC_OPTIONS };
static const struct db_stmt st_reg_mappings = {
    "registry_mappings", "SELECT name, options::text FROM registries ORDER BY name", 0};
static const struct db_stmt st_img_registry = {
    "image_registry", "SELECT id, host, options::text FROM registries WHERE name = $1", 1};

enum known_col { KC_ID, KC_REPOSITORY, KC_TAG, KC_DIGEST, KC_IMMUTABLE, KC_GONE };
static const struct db_stmt st_sync_known = {
    "sync_known",
    "SELECT id, repository, tag, digest, immutable, upstream_deleted_at IS NOT NULL"
    " FROM images WHERE registry_id = $1::uuid AND deleted_at IS NULL",
    1};
enum tenant_col { TC_ID, TC_SLUG };
static const struct db_stmt st_sync_tenants = {
    "sync_tenants", "SELECT id, slug FROM tenants WHERE deleted_at IS NULL", 0};
static const struct db_stmt st_sync_insert = {
    "sync_insert",
    "INSERT INTO images (tenant_id, visibility, registry_id, repository, tag, digest, size_bytes,"
    "                    labels, source, media_type)"
    " VALUES ($1::uuid, CASE WHEN $1 IS NULL THEN 'public' ELSE 'tenant' END, $2::uuid, $3, $4,"
    "         $5, $6::bigint, $7::jsonb, 'sync', $8)",
    8};
static const struct db_stmt st_sync_update = {
    "sync_update",
    "UPDATE images SET digest = $2, size_bytes = $3::bigint, labels = $4::jsonb,"
    " media_type = $5, upstream_deleted_at = NULL WHERE id = $1::uuid AND NOT immutable",
    5};
static const struct db_stmt st_sync_restore = {
    "sync_restore", "UPDATE images SET upstream_deleted_at = NULL WHERE id = $1::uuid", 1};
static const struct db_stmt st_sync_gone = {
    "sync_gone",
    "UPDATE images SET upstream_deleted_at = now()"
    " WHERE id = ANY($1::uuid[]) AND upstream_deleted_at IS NULL",
    1};
enum storage_col { SO_SLUG, SO_USED, SO_LIMIT, SO_NEWLY };
static const struct db_stmt st_sync_storage = {
    "sync_storage",
    "WITH u AS (SELECT tenant_id, sum(size_bytes) AS used FROM images"
    "           WHERE tenant_id IS NOT NULL AND deleted_at IS NULL AND upstream_deleted_at IS NULL"
    "           GROUP BY tenant_id),"
    " q AS (SELECT t.id, t.slug, coalesce(u.used, 0) AS used, tq.\"limit\" AS lim,"
    "              tq.\"limit\" IS NOT NULL AND coalesce(u.used, 0) > tq.\"limit\" * 1073741824 AS over,"
    "              t.storage_over_quota_at IS NOT NULL AS was"
    "         FROM tenants t LEFT JOIN u ON u.tenant_id = t.id"
    "         LEFT JOIN tenant_quotas tq ON tq.tenant_id = t.id AND tq.resource = 'storage_gib'"
    "        WHERE t.deleted_at IS NULL),"
    " up AS (UPDATE tenants t SET storage_over_quota_at = CASE WHEN q.over THEN now() END"
    "          FROM q WHERE q.id = t.id AND q.over <> q.was RETURNING t.id)"
    " SELECT slug, used, lim, NOT was FROM q WHERE over ORDER BY slug",
    0};
/* columns of st_img_resolve */
enum resolve_col { RC_ID, RC_DIGEST, RC_HOST, RC_REPO, RC_TAG, RC_GONE, RC_REGISTRY, RC_PUBLIC };
static const struct db_stmt st_img_resolve = {
    "image_resolve",
    "SELECT i.id, i.digest, r.host, i.repository, i.tag, i.upstream_deleted_at IS NOT NULL,"
    " r.name, i.tenant_id IS NULL FROM images i LEFT JOIN registries r ON r.id = i.registry_id"
    " WHERE i.deleted_at IS NULL AND (i.tenant_id IS NULL OR i.tenant_id = $1::uuid)"
    "   AND i.repository = $2 AND ($3::text IS NULL OR i.tag = $3)"
    "   AND ($4::text IS NULL OR i.digest = $4) AND ($5::text IS NULL OR r.host = $5)"
    " ORDER BY i.tenant_id IS NULL, i.upstream_deleted_at IS NOT NULL, r.name, i.tag LIMIT 10",
    5};

const struct db_stmt *const db_images_stmts[] = {
    &st_reg_create,   &st_reg_list,     &st_reg_get,      &st_reg_request,  &st_reg_claim,
    &st_reg_progress, &st_reg_finish,   &st_img_list,     &st_img_get,      &st_img_storage,
    &st_img_create,   &st_img_peek,     &st_img_lock,     &st_img_update,   &st_img_delete,   &st_img_registry,
    &st_sync_known,   &st_sync_tenants, &st_sync_insert,  &st_sync_update,  &st_sync_restore,
    &st_sync_gone,    &st_sync_storage, &st_img_resolve,  &st_reg_mappings, &st_reg_release,
    NULL};

static int query(struct db *db, const struct db_stmt *st, const char *const *p, PGresult **out)
{
    int e = 0;
    *out = db_query(db, st, p, &e);
    return e;
}

int db_registry_create(struct db *db, const char *name, const char *url, const char *host,
                       const char *credref, const char *options_json, json_t **out)
{
    const char *p[5] = {name, url, host, credref, options_json};
    return rowjson_query_one(db, &st_reg_create, p, out);
}

int db_registry_list(struct db *db, const char *after, int limit, struct db_rows *out)
{
    char lim[16];
    snprintf(lim, sizeof lim, "%d", limit);
    const char *p[2] = {after, lim};
    return rowjson_query_rows(db, &st_reg_list, p, false, out);
}

int db_registry_get(struct db *db, const char *name, json_t **out)
{
    const char *p[1] = {name};
    return rowjson_query_one(db, &st_reg_get, p, out);
}

int db_registry_request_sync(struct db *db, const char *name, json_t **out)
{
    const char *p[1] = {name};
    return rowjson_query_one(db, &st_reg_request, p, out);
}

int db_registry_release(struct db *db)
{
    return db_exec(db, &st_reg_release, NULL);
}

void db_registry_claim_free(struct db_registry_claim *c)
{
    free(c->name);
    free(c->url);
    free(c->credentials_ref);
    free(c->options_json);
    memset(c, 0, sizeof *c);
}

int db_registry_claim(struct db *db, int every_s, int stale_s, struct db_registry_claim *out,
                      bool *claimed)
{
    *out = (struct db_registry_claim){0};
    *claimed = false;
    char a[16], b[16];
    snprintf(a, sizeof a, "%d", every_s);
    snprintf(b, sizeof b, "%d", stale_s);
    const char *p[2] = {a, b};
    PGresult *r;
    int e = query(db, &st_reg_claim, p, &r);
    if (e || PQntuples(r) == 0) {
        PQclear(r);
        return e;
    }
    out->name = pgcol_text(r, 0, CL_NAME);
    out->url = pgcol_text(r, 0, CL_URL);
    out->credentials_ref = pgcol_text(r, 0, CL_CREDREF);
    out->options_json = pgcol_text(r, 0, CL_OPTIONS);
    e = out->name && out->url && out->credentials_ref && out->options_json
            ? pgcol_copy(r, 0, CL_ID, out->id, sizeof out->id)
            : AIDC_EINTERNAL;
    if (!e)
        e = pgcol_copy(r, 0, CL_OWNER, out->owner, sizeof out->owner);
    PQclear(r);
    if (e)
        db_registry_claim_free(out);
    *claimed = !e;
    return e;
}

/* An UPDATE that must change one row: AIDC_ENOTFOUND when it changed none. */
static int update_one(struct db *db, const struct db_stmt *st, const char *const *p)
{
    PGresult *r;
    int e = query(db, st, p, &r);
    if (e)
        return e;
    e = strcmp(PQcmdTuples(r), "1") == 0 ? 0 : AIDC_ENOTFOUND;
    PQclear(r);
    return e;
}

int db_registry_progress(struct db *db, const char *id, const char *owner,
                         const char *progress_json)
{
    const char *p[3] = {id, progress_json, owner};
    return update_one(db, &st_reg_progress, p);
}

int db_registry_finish(struct db *db, const char *id, const char *owner, bool ok,
                       const char *report_json)
{
    const char *p[4] = {id, ok ? "true" : "false", report_json, owner};
    return update_one(db, &st_reg_finish, p);
}

int db_image_list(struct db *db, const struct db_image_filter *f, struct db_rows *out)
{
    char lim[16];
    snprintf(lim, sizeof lim, "%d", f->limit);
    const char *p[9] = {f->tenant_id, f->tenant_only ? "true" : "false", f->visibility, f->q,
                        f->labels,    f->registry,                        f->after,      f->after_id,
                        lim};
    return rowjson_query_rows(db, &st_img_list, p, false, out);
}

int db_image_get(struct db *db, const char *tenant_id, const char *id, json_t **out)
{
    const char *p[2] = {tenant_id, id};
    return rowjson_query_one(db, &st_img_get, p, out);
}

int db_image_storage(struct db *db, const char *tenant_id, long long *used_bytes, double *limit_gib,
                     bool *has_limit)
{
    const char *p[1] = {tenant_id};
    PGresult *r;
    int e = query(db, &st_img_storage, p, &r);
    if (e)
        return e;
    *used_bytes = strtoll(PQgetvalue(r, 0, 1), NULL, 10);
    *has_limit = !PQgetisnull(r, 0, 2);
    *limit_gib = *has_limit ? strtod(PQgetvalue(r, 0, 2), NULL) : 0;
    PQclear(r);
    return 0;
}

int db_image_create(struct db *db, const struct db_image_new *im, json_t **out)
{
    const char *p[10] = {im->tenant_id,   im->registry_id, im->repository,
                         im->tag,         im->digest,      im->size_bytes,
                         im->labels_json, im->immutable ? "true" : "false",
                         im->media_type,  im->created_by};
    return rowjson_query_one(db, &st_img_create, p, out);
}

int db_image_lock(struct db *db, const char *tenant_id, const char *id, bool lock,
                  struct db_image_lock *l)
{
    const char *p[2] = {tenant_id, id};
    PGresult *r;
    int e = query(db, lock ? &st_img_lock : &st_img_peek, p, &r);
    if (e)
        return e;
    if (PQntuples(r) == 0) {
        PQclear(r);
        return AIDC_ENOTFOUND;
    }
    l->immutable = PQgetvalue(r, 0, 0)[0] == 't';
    snprintf(l->created_by, sizeof l->created_by, "%s", PQgetvalue(r, 0, 1));
    l->synced = strcmp(PQgetvalue(r, 0, 2), "sync") == 0;
    PQclear(r);
    return 0;
}

int db_image_update(struct db *db, const char *id, const char *labels_json, bool immutable,
                    const char *tag, const char *digest, json_t **out)
{
    const char *p[5] = {id, labels_json, immutable ? "true" : "false", tag, digest};
    return rowjson_query_one(db, &st_img_update, p, out);
}

int db_image_delete(struct db *db, const char *id)
{
    const char *p[1] = {id};
    return db_exec(db, &st_img_delete, p);
}

int db_image_registry(struct db *db, const char *name, char id[37], char *host, size_t hostsz,
                      char **options_json)
{
    const char *p[1] = {name};
    PGresult *r;
    int e = query(db, &st_img_registry, p, &r);
    if (e)
        return e;
    if (PQntuples(r) == 0) {
        PQclear(r);
        return AIDC_ENOTFOUND;
    }
    snprintf(id, 37, "%s", PQgetvalue(r, 0, 0));
    snprintf(host, hostsz, "%s", PQgetvalue(r, 0, 1));
    if (options_json)
        *options_json = strdup(PQgetvalue(r, 0, 2));
    PQclear(r);
    return options_json && !*options_json ? AIDC_EINTERNAL : 0;
}

void db_registry_mappings_free(struct db_registry_mappings *m)
{
    for (size_t i = 0; m->v && i < m->n; i++) {
        free(m->v[i].name);
        free(m->v[i].options_json);
    }
    free(m->v);
    m->v = NULL;
    m->n = 0;
}

int db_registry_mappings(struct db *db, struct db_registry_mappings *out)
{
    *out = (struct db_registry_mappings){0};
    PGresult *r;
    int e = query(db, &st_reg_mappings, NULL, &r);
    if (e)
        return e;
    int n = PQntuples(r);
    out->v = xcalloc((size_t)n + 1, sizeof *out->v);
    for (int i = 0; !e && i < n; i++, out->n++) {
        out->v[i].name = pgcol_text(r, i, MC_NAME);
        out->v[i].options_json = pgcol_text(r, i, MC_OPTIONS);
        e = out->v[i].name && out->v[i].options_json ? 0 : AIDC_EINTERNAL;
    }
    PQclear(r);
    if (e)
        db_registry_mappings_free(out);
    return e;
}

void db_sync_images_free(struct db_sync_images *im)
{
    for (size_t i = 0; im->v && i < im->n; i++) {
        free(im->v[i].repository);
        free(im->v[i].tag);
        free(im->v[i].digest);
    }
    free(im->v);
    im->v = NULL;
    im->n = 0;
}

int db_sync_known(struct db *db, const char *registry_id, struct db_sync_images *out)
{
    *out = (struct db_sync_images){0};
    const char *p[1] = {registry_id};
    PGresult *r;
    int e = query(db, &st_sync_known, p, &r);
    if (e)
        return e;
    int n = PQntuples(r);
    out->v = xcalloc((size_t)n + 1, sizeof *out->v);
    for (int i = 0; !e && i < n; i++, out->n++) {
        struct db_sync_image *im = &out->v[i];
        im->repository = pgcol_text(r, i, KC_REPOSITORY);
        im->tag = pgcol_text(r, i, KC_TAG);
        im->digest = pgcol_text(r, i, KC_DIGEST);
        im->immutable = pgcol_bool(r, i, KC_IMMUTABLE);
        im->gone = pgcol_bool(r, i, KC_GONE);
        e = im->repository && im->tag && im->digest ? pgcol_copy(r, i, KC_ID, im->id, sizeof im->id)
                                                    : AIDC_EINTERNAL;
    }
    PQclear(r);
    if (e)
        db_sync_images_free(out);
    return e;
}

void db_sync_tenants_free(struct db_sync_tenants *t)
{
    for (size_t i = 0; t->v && i < t->n; i++)
        free(t->v[i].slug);
    free(t->v);
    t->v = NULL;
    t->n = 0;
}

int db_sync_tenants(struct db *db, struct db_sync_tenants *out)
{
    *out = (struct db_sync_tenants){0};
    PGresult *r;
    int e = query(db, &st_sync_tenants, NULL, &r);
    if (e)
        return e;
    int n = PQntuples(r);
    out->v = xcalloc((size_t)n + 1, sizeof *out->v);
    for (int i = 0; !e && i < n; i++, out->n++) {
        out->v[i].slug = pgcol_text(r, i, TC_SLUG);
        e = out->v[i].slug ? pgcol_copy(r, i, TC_ID, out->v[i].id, sizeof out->v[i].id)
                           : AIDC_EINTERNAL;
    }
    PQclear(r);
    if (e)
        db_sync_tenants_free(out);
    return e;
}

int db_sync_insert(struct db *db, const struct db_image_new *im, bool public_image)
{
    const char *p[8] = {public_image ? NULL : im->tenant_id,
                        im->registry_id,
                        im->repository,
                        im->tag,
                        im->digest,
                        im->size_bytes,
                        im->labels_json,
                        im->media_type};
    return db_exec(db, &st_sync_insert, p);
}

int db_sync_update(struct db *db, const char *id, const char *digest, const char *size_bytes,
                   const char *labels_json, const char *media_type)
{
    const char *p[5] = {id, digest, size_bytes, labels_json, media_type};
    return db_exec(db, &st_sync_update, p);
}

int db_sync_restore(struct db *db, const char *id)
{
    const char *p[1] = {id};
    return db_exec(db, &st_sync_restore, p);
}

int db_sync_gone(struct db *db, const char *ids_array, long *n)
{
    const char *p[1] = {ids_array};
    PGresult *r;
    int e = query(db, &st_sync_gone, p, &r);
    if (e)
        return e;
    *n = strtol(PQcmdTuples(r), NULL, 10);
    PQclear(r);
    return 0;
}

void db_storage_overs_free(struct db_storage_overs *o)
{
    for (size_t i = 0; o->v && i < o->n; i++)
        free(o->v[i].slug);
    free(o->v);
    o->v = NULL;
    o->n = 0;
}

int db_sync_storage(struct db *db, struct db_storage_overs *out)
{
    *out = (struct db_storage_overs){0};
    PGresult *r;
    int e = query(db, &st_sync_storage, NULL, &r);
    if (e)
        return e;
    int n = PQntuples(r);
    out->v = xcalloc((size_t)n + 1, sizeof *out->v);
    for (int i = 0; !e && i < n; i++, out->n++) {
        struct db_storage_over *o = &out->v[i];
        o->slug = pgcol_text(r, i, SO_SLUG);
        o->newly = pgcol_bool(r, i, SO_NEWLY);
        e = o->slug ? pgcol_ll(r, i, SO_USED, 0, &o->used_bytes) : AIDC_EINTERNAL;
        if (!e) /* a row is over a quota: it has a limit */
            e = pgcol_double(r, i, SO_LIMIT, 0, &o->limit_gib);
    }
    PQclear(r);
    if (e)
        db_storage_overs_free(out);
    return e;
}

int db_image_resolve(struct db *db, const char *tenant_id, const char *repository, const char *tag,
                     const char *digest, const char *host, PGresult **out)
{
    const char *p[5] = {tenant_id, repository, tag, digest, host};
    return query(db, &st_img_resolve, p, out);
}

void db_image_matches_prefetch(struct db *db, const char *tenant_id, const char *repository,
                               const char *tag, const char *digest, const char *host)
{
    const char *p[5] = {tenant_id, repository, tag, digest, host};
    db_prefetch(db, &st_img_resolve, p);
}

void db_image_matches_free(struct db_image_matches *m)
{
    for (size_t i = 0; m->v && i < m->n; i++) {
        free(m->v[i].digest);
        free(m->v[i].repository);
        free(m->v[i].tag);
        free(m->v[i].host);
        free(m->v[i].registry);
    }
    free(m->v);
    m->v = NULL;
    m->n = 0;
}

int db_image_matches(struct db *db, const char *tenant_id, const char *repository, const char *tag,
                     const char *digest, const char *host, struct db_image_matches *out)
{
    *out = (struct db_image_matches){0};
    PGresult *r;
    int e = db_image_resolve(db, tenant_id, repository, tag, digest, host, &r);
    if (e)
        return e;
    int n = PQntuples(r);
    out->v = xcalloc((size_t)n + 1, sizeof *out->v);
    for (int i = 0; !e && i < n; i++, out->n++) {
        struct db_image_match *m = &out->v[i];
        m->digest = pgcol_text(r, i, RC_DIGEST);
        m->repository = pgcol_text(r, i, RC_REPO);
        m->tag = pgcol_text(r, i, RC_TAG);
        m->host = pgcol_text(r, i, RC_HOST);
        m->registry = pgcol_text(r, i, RC_REGISTRY);
        m->gone = pgcol_bool(r, i, RC_GONE);
        m->public_image = pgcol_bool(r, i, RC_PUBLIC);
        e = m->digest && m->repository && m->tag ? pgcol_copy(r, i, RC_ID, m->id, sizeof m->id)
                                                 : AIDC_EINTERNAL;
    }
    PQclear(r);
    if (e)
        db_image_matches_free(out);
    return e;
}
