/* idproviders.c - identity providers and external sign-ins (see idproviders.h). */
#include "idproviders.h"

#include "../lib/err.h"
#include "../lib/xalloc.h"
#include "pgcol.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define IDP_COLS                                                                                   \
    "p.name, p.kind, p.display_name, p.enabled, p.settings AS _settings, p.role_rules,"            \
    " p.created_at, p.updated_at"

static const struct db_stmt st_create = {
    "idp_create",
    "INSERT INTO identity_providers AS p (name, kind, display_name, enabled, settings, role_rules)"
    " VALUES ($1, $2, $3, $4::boolean, $5::jsonb, $6::jsonb) RETURNING " IDP_COLS,
    6};
static const struct db_stmt st_list = {
    "idp_list",
    "SELECT " IDP_COLS ", p.name AS _cursor FROM identity_providers p"
    " WHERE $1::text IS NULL OR p.name > $1 ORDER BY p.name LIMIT $2::int + 1",
    2};
static const struct db_stmt st_get = {
    "idp_get", "SELECT " IDP_COLS " FROM identity_providers p WHERE p.name = $1", 1};
/* new settings forget what was fetched from the old issuer */
static const struct db_stmt st_update = {
    "idp_update",
    "UPDATE identity_providers p SET display_name = $2, enabled = $3::boolean,"
    " settings = $4::jsonb, role_rules = $5::jsonb, updated_at = now(),"
    " discovery = CASE WHEN p.settings = $4::jsonb THEN p.discovery END,"
    " jwks = CASE WHEN p.settings = $4::jsonb THEN p.jwks END,"
    " discovered_at = CASE WHEN p.settings = $4::jsonb THEN p.discovered_at END,"
    " jwks_fetched_at = CASE WHEN p.settings = $4::jsonb THEN p.jwks_fetched_at END"
    " WHERE p.name = $1 RETURNING " IDP_COLS,
    5};
static const struct db_stmt st_delete = {"idp_delete",
                                         "DELETE FROM identity_providers WHERE name = $1", 1};
static const struct db_stmt st_public = {
    "idp_public",
    "SELECT coalesce(json_agg(json_build_object('name', name, 'kind', kind,"
    " 'display_name', display_name, 'end_session_endpoint',"
    " discovery->>'end_session_endpoint', 'client_id', settings->>'client_id')"
    " ORDER BY display_name, name), '[]'::json)"
    " FROM identity_providers WHERE enabled",
    0};
enum find_col {
    FC_NAME,
    FC_KIND,
    FC_ENABLED,
    FC_SETTINGS,
    FC_RULES,
    FC_DISCOVERY,
    FC_JWKS,
    FC_DISCOVERY_AGE,
    FC_JWKS_AGE
};
static const struct db_stmt st_find = {
    "idp_find",
    "SELECT name, kind, enabled, settings::text, role_rules::text, discovery::text, jwks::text,"
    " coalesce(floor(extract(epoch FROM now() - discovered_at))::bigint, -1),"
    " coalesce(floor(extract(epoch FROM now() - jwks_fetched_at))::bigint, -1)"
    " FROM identity_providers WHERE name = $1",
    1};
static const struct db_stmt st_discovery = {
    "idp_store_discovery",
    "UPDATE identity_providers SET discovery = $2::jsonb, discovered_at = now() WHERE name = $1",
    2};
static const struct db_stmt st_jwks = {
    "idp_store_jwks",
    "UPDATE identity_providers SET jwks = $2::jsonb, jwks_fetched_at = now() WHERE name = $1", 2};
enum ext_col { EC_ID, EC_USERNAME, EC_EPOCH, EC_DISABLED, EC_CREATED };
static const struct db_stmt st_external = {
    "idp_external_login",
    "SELECT user_id, username, session_epoch, disabled, created"
    " FROM aidc_external_login($1, $2, $3, $4, $5, $6::jsonb)",
    6};
static const struct db_stmt st_login_put = {
    "oidc_login_put",
    "INSERT INTO oidc_logins (state_hash, provider, nonce, verifier, return_to, source_ip,"
    " expires_at)"
    " SELECT decode($1, 'hex'), $2, $3, $4, $5, $7, now() + $6::int * interval '1 second'"
    " WHERE (SELECT count(*) FROM oidc_logins WHERE source_ip = $7 AND expires_at > now())"
    "       < $8::int",
    8};
enum take_col { TC_NONCE, TC_VERIFIER, TC_RETURN_TO };
static const struct db_stmt st_login_take = {
    "oidc_login_take",
    "DELETE FROM oidc_logins WHERE state_hash = decode($1, 'hex') AND provider = $2"
    " RETURNING nonce, verifier, return_to, expires_at > now()",
    2};

const struct db_stmt *const db_idproviders_stmts[] = {
    &st_create,    &st_list, &st_get,      &st_update,    &st_delete,     &st_public, &st_find,
    &st_discovery, &st_jwks, &st_external, &st_login_put, &st_login_take, NULL};

/* The settings flattened into the provider, as the API shows it. */
static void flatten(json_t *item, const json_t *settings)
{
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)settings, k, v)
    {
        if (!json_object_get(item, k))
            json_object_set(item, k, v);
    }
}

/* rowjson leaves '_' columns out: the settings are read beside it */
static int shaped_one(struct db *db, const struct db_stmt *st, const char *const *p, json_t **out)
{
    int e;
    PGresult *r = db_query(db, st, p, &e);
    if (!r)
        return e;
    if (PQntuples(r) != 1) {
        PQclear(r);
        return AIDC_ENOTFOUND;
    }
    json_t *item = rowjson_object(r, 0);
    json_t *settings = json_loads(PQgetvalue(r, 0, 4), 0, NULL);
    PQclear(r);
    if (!item || !json_is_object(settings)) {
        json_decref(item);
        json_decref(settings);
        return AIDC_EINTERNAL;
    }
    flatten(item, settings);
    json_decref(settings);
    *out = item;
    return 0;
}

static const char *yes_no(bool b)
{
    return b ? "true" : "false";
}

int db_idp_create(struct db *db, const struct db_idp_write *w, json_t **out)
{
    const char *p[6] = {w->name,     w->kind,      w->display_name, yes_no(w->enabled),
                        w->settings, w->role_rules};
    return shaped_one(db, &st_create, p, out);
}

int db_idp_list(struct db *db, const char *after, int limit, struct db_rows *out)
{
    char lim[16];
    snprintf(lim, sizeof lim, "%d", limit);
    const char *p[2] = {after, lim};
    int e;
    PGresult *r = db_query(db, &st_list, p, &e);
    if (!r)
        return e;
    e = rowjson_rows(r, false, out);
    for (int i = 0; !e && i < PQntuples(r); i++) {
        json_t *settings = json_loads(PQgetvalue(r, i, 4), 0, NULL);
        if (!json_is_object(settings))
            e = AIDC_EINTERNAL;
        else
            flatten(json_array_get(out->items, (size_t)i), settings);
        json_decref(settings);
    }
    PQclear(r);
    if (e)
        db_rows_free(out);
    return e;
}

int db_idp_get(struct db *db, const char *name, json_t **out)
{
    const char *p[1] = {name};
    return shaped_one(db, &st_get, p, out);
}

int db_idp_update(struct db *db, const struct db_idp_write *w, json_t **out)
{
    const char *p[5] = {w->name, w->display_name, yes_no(w->enabled), w->settings, w->role_rules};
    return shaped_one(db, &st_update, p, out);
}

int db_idp_delete(struct db *db, const char *name)
{
    const char *p[1] = {name};
    int e;
    PGresult *r = db_query(db, &st_delete, p, &e);
    if (!r)
        return e;
    e = strcmp(PQcmdTuples(r), "1") == 0 ? 0 : AIDC_ENOTFOUND;
    PQclear(r);
    return e;
}

int db_idp_public(struct db *db, json_t **items)
{
    int e;
    PGresult *r = db_query(db, &st_public, NULL, &e);
    if (!r)
        return e;
    *items = json_loads(PQgetvalue(r, 0, 0), 0, NULL);
    PQclear(r);
    return json_is_array(*items) ? 0 : AIDC_EINTERNAL;
}

static json_t *json_col(const PGresult *r, int col, bool *bad)
{
    if (PQgetisnull(r, 0, col))
        return NULL;
    json_t *v = json_loads(PQgetvalue(r, 0, col), 0, NULL);
    if (!v)
        *bad = true;
    return v;
}

int db_idp_find(struct db *db, const char *name, struct db_idp *out)
{
    memset(out, 0, sizeof *out);
    const char *p[1] = {name};
    int e;
    PGresult *r = db_query(db, &st_find, p, &e);
    if (!r)
        return e;
    if (PQntuples(r) != 1) {
        PQclear(r);
        return AIDC_ENOTFOUND;
    }
    bool bad = false;
    long long dage = -1, jage = -1;
    e = pgcol_copy(r, 0, FC_NAME, out->name, sizeof out->name);
    if (!e)
        e = pgcol_copy(r, 0, FC_KIND, out->kind, sizeof out->kind);
    if (!e)
        e = pgcol_ll(r, 0, FC_DISCOVERY_AGE, -1, &dage);
    if (!e)
        e = pgcol_ll(r, 0, FC_JWKS_AGE, -1, &jage);
    out->enabled = pgcol_bool(r, 0, FC_ENABLED);
    out->settings = json_col(r, FC_SETTINGS, &bad);
    out->role_rules = json_col(r, FC_RULES, &bad);
    out->discovery = json_col(r, FC_DISCOVERY, &bad);
    out->jwks = json_col(r, FC_JWKS, &bad);
    out->discovery_age = (long)dage;
    out->jwks_age = (long)jage;
    PQclear(r);
    if (!e && (bad || !json_is_object(out->settings) || !json_is_array(out->role_rules)))
        e = AIDC_EINTERNAL;
    if (e)
        db_idp_free(out);
    return e;
}

void db_idp_free(struct db_idp *p)
{
    json_decref(p->settings);
    json_decref(p->role_rules);
    json_decref(p->discovery);
    json_decref(p->jwks);
    memset(p, 0, sizeof *p);
}

static int exec2(struct db *db, const struct db_stmt *st, const char *a, const char *b)
{
    const char *p[2] = {a, b};
    return db_exec(db, st, p);
}

int db_idp_store_discovery(struct db *db, const char *name, const char *json)
{
    return exec2(db, &st_discovery, name, json);
}

int db_idp_store_jwks(struct db *db, const char *name, const char *json)
{
    return exec2(db, &st_jwks, name, json);
}

int db_idp_external_login(struct db *db, const struct db_external_login *in,
                          struct db_external_user *out)
{
    memset(out, 0, sizeof *out);
    const char *p[6] = {in->provider, in->subject,      in->name_hint,
                        in->email,    in->display_name, in->grants};
    int e;
    PGresult *r = db_query(db, &st_external, p, &e);
    if (!r)
        return e;
    long long epoch = 0;
    e = PQntuples(r) == 1 ? 0 : AIDC_EINTERNAL;
    if (!e)
        e = pgcol_copy(r, 0, EC_ID, out->id, sizeof out->id);
    if (!e)
        e = pgcol_copy(r, 0, EC_USERNAME, out->username, sizeof out->username);
    if (!e)
        e = pgcol_ll(r, 0, EC_EPOCH, 0, &epoch);
    if (!e) {
        out->epoch = (long)epoch;
        out->disabled = pgcol_bool(r, 0, EC_DISABLED);
        out->created = pgcol_bool(r, 0, EC_CREATED);
    }
    PQclear(r);
    return e;
}

int db_oidc_login_put(struct db *db, const char *state_hash_hex, const char *provider,
                      const struct db_oidc_login *l, int ttl_seconds, const char *source_ip,
                      int max_per_address)
{
    char ttl[16], max[16];
    snprintf(ttl, sizeof ttl, "%d", ttl_seconds);
    snprintf(max, sizeof max, "%d", max_per_address);
    const char *p[8] = {state_hash_hex, provider, l->nonce,  l->verifier,
                        l->return_to,   ttl,      source_ip, max};
    int e;
    PGresult *r = db_query(db, &st_login_put, p, &e);
    if (!r)
        return e;
    e = strcmp(PQcmdTuples(r), "1") == 0 ? 0 : AIDC_ECONFLICT;
    PQclear(r);
    return e;
}

int db_oidc_login_take(struct db *db, const char *state_hash_hex, const char *provider,
                       struct db_oidc_login *out)
{
    memset(out, 0, sizeof *out);
    const char *p[2] = {state_hash_hex, provider};
    int e;
    PGresult *r = db_query(db, &st_login_take, p, &e);
    if (!r)
        return e;
    /* an expired one is taken all the same: it is of no use any more */
    if (PQntuples(r) != 1 || PQgetvalue(r, 0, 3)[0] != 't') {
        PQclear(r);
        return AIDC_ENOTFOUND;
    }
    snprintf(out->provider, sizeof out->provider, "%s", provider);
    e = pgcol_copy(r, 0, TC_NONCE, out->nonce, sizeof out->nonce);
    if (!e)
        e = pgcol_copy(r, 0, TC_VERIFIER, out->verifier, sizeof out->verifier);
    if (!e)
        e = pgcol_copy(r, 0, TC_RETURN_TO, out->return_to, sizeof out->return_to);
    PQclear(r);
    return e;
}
