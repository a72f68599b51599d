/*
 * idproviders.h - identity providers (OpenID Connect, LDAP), the users they
 * sign in, and OIDC sign-ins on their way through a provider.
 *
 * Providers are platform-wide (no row-level security): only platform admins
 * reach them through the API, and the sign-in paths read them before any
 * user is known. Rows reach callers as the API shows them: kind-specific
 * settings flattened into the provider object.
 */
#ifndef AIDC_DB_IDPROVIDERS_H
#define AIDC_DB_IDPROVIDERS_H

#include "db.h"
#include "rowjson.h"

#include <jansson.h>
#include <stdbool.h>
#include <time.h>

/* What a provider is made of (settings and role_rules: JSON text). */
struct db_idp_write {
    const char *name;
    const char *kind;
    const char *display_name;
    bool enabled;
    const char *settings;
    const char *role_rules;
};

/* AIDC_ECONFLICT: the name is taken. *out: the provider as the API shows it. */
int db_idp_create(struct db *db, const struct db_idp_write *w, json_t **out);
/* Up to limit+1 providers with name > after, by name. */
int db_idp_list(struct db *db, const char *after, int limit, struct db_rows *out);
/* AIDC_ENOTFOUND when there is none. */
int db_idp_get(struct db *db, const char *name, json_t **out);
/* Replace what w says (w->kind is ignored: a provider keeps its kind). */
int db_idp_update(struct db *db, const struct db_idp_write *w, json_t **out);
int db_idp_delete(struct db *db, const char *name);
/* The enabled providers, for the sign-in page: [{name, kind, display_name,
 * end_session_endpoint (OIDC, when known), client_id}]. */
int db_idp_public(struct db *db, json_t **items);

/* A provider as the sign-in paths use it. */
struct db_idp {
    char name[33];
    char kind[8];
    bool enabled;
    json_t *settings;   /* object */
    json_t *role_rules; /* array */
    json_t *discovery;  /* object or NULL: not fetched yet */
    json_t *jwks;       /* object or NULL */
    long discovery_age; /* seconds since fetched (-1: never) */
    long jwks_age;
};
int db_idp_find(struct db *db, const char *name, struct db_idp *out);
void db_idp_free(struct db_idp *p);
/* Keep what the provider published (JSON text), for every replica of aidcd. */
int db_idp_store_discovery(struct db *db, const char *name, const char *json);
int db_idp_store_jwks(struct db *db, const char *name, const char *json);

/* A sign-in by subject through provider: see aidc_external_login (0020). */
struct db_external_login {
    const char *provider;
    const char *subject;
    const char *name_hint; /* a valid user name */
    const char *email;     /* NULL: unknown */
    const char *display_name;
    const char *grants; /* JSON array of {"tenant","role"} */
};
struct db_external_user {
    char id[37];
    char username[64];
    long epoch;
    bool disabled;
    bool created;
};
int db_idp_external_login(struct db *db, const struct db_external_login *in,
                          struct db_external_user *out);

/* An OIDC sign-in started: its state (SHA-256, hex) and what the callback needs. */
struct db_oidc_login {
    char provider[33];
    char nonce[129];
    char verifier[129];
    char return_to[2049];
};
/* AIDC_ECONFLICT when source_ip has max_per_address sign-ins on their way already. */
int db_oidc_login_put(struct db *db, const char *state_hash_hex, const char *provider,
                      const struct db_oidc_login *l, int ttl_seconds, const char *source_ip,
                      int max_per_address);
/*
 * Take (and delete) the sign-in of state_hash_hex started through provider:
 * AIDC_ENOTFOUND when there is none - never started, used, or expired.
 */
int db_oidc_login_take(struct db *db, const char *state_hash_hex, const char *provider,
                       struct db_oidc_login *out);

extern const struct db_stmt *const db_idproviders_stmts[];

#endif
