/*
 * client.h - a small HTTP client over libcurl for the integration tests,
 * with JSON bodies and the aidc conventions (Bearer tokens, problem+json).
 */
#ifndef AIDC_TEST_CLIENT_H
#define AIDC_TEST_CLIENT_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

struct http_res {
    long status;
    char *body;
    size_t body_len;
    json_t *json;  /* parsed body when it is JSON, else NULL */
    char *headers; /* raw response headers */
};

struct aidc_server;

/*
 * Send a request. token: Bearer credential or NULL. body: sent as
 * application/json when not NULL. extra: NULL-terminated "Name: value"
 * headers (may be NULL). Returns the status (0 when no answer came).
 */
long http_do(const struct aidc_server *s, const char *method, const char *path,
             const char *token, const char *body, const char *const *extra,
             struct http_res *out);
/* Send raw bytes with an explicit content type (NULL: none). */
long http_raw(const struct aidc_server *s, const char *method, const char *path,
              const char *token, const char *content_type, const char *body, size_t len,
              const char *const *extra, struct http_res *out);
void http_res_free(struct http_res *r);
/*
 * A TCP connection to s (the test fails when it cannot be made) whose reads
 * give up after timeout_s seconds (0: never): for requests curl would change
 * (dot segments) or cut short on purpose. Close it when done.
 */
int http_dial(const struct aidc_server *s, int timeout_s);
/* Value of a response header (malloc'd) or NULL. */
char *http_header(const struct http_res *r, const char *name);
/* The Set-Cookie line (attributes and all) that sets cookie name (malloc'd), or NULL. */
char *http_set_cookie(const struct http_res *r, const char *name);

/* o[key] as a string (borrowed), or NULL. */
const char *jstr(const json_t *o, const char *key);
/* o[key] as an integer, or 0. */
long long jint(const json_t *o, const char *key);

/* Shorthands on harness_srv that free the answer and return the status. */
long req(const char *method, const char *path, const char *token, const char *body);
/* As req, keeping the answer in *out (caller frees). */
long reqj(const char *method, const char *path, const char *token, const char *body,
          struct http_res *out);

/* GET path as token (200 or the test fails): its "items" array (a new reference). */
json_t *get_items(const char *path, const char *token);
/* The role in tenant of a GET /me answer's memberships (borrowed), or NULL. */
const char *member_role(const json_t *me, const char *tenant);
/* As get_items, counting the items. */
size_t count_items(const char *path, const char *token);

/* Log in; returns the JWT (malloc'd) or NULL. */
char *login(const char *username, const char *password);
/*
 * As the admin: create a user; global roles (JSON array text, or NULL) are
 * granted as the database owner, since through the API they need approval.
 */
void make_user(const char *username, const char *password, const char *roles_json);
/* As the admin: create a tenant. */
void make_tenant(const char *slug);
/* As the admin: give username role in tenant. */
void make_member(const char *tenant, const char *username, const char *role);
/*
 * As the admin: a user username (password "<username>-password-1") with role
 * in tenant; its JWT (malloc'd).
 */
char *make_member_login(const char *tenant, const char *username, const char *role);
/* As the admin: create a project. */
void make_project(const char *tenant, const char *slug);
/* Create an API token with token (JWT) for its user; returns the secret. */
char *make_token(const char *token, const char *scopes_json, const char *tenant);

/*
 * The answer r is the problem code (docs/errors.md), with params[name] == value
 * (a string, or an integer's decimal text) when name is given; a Check failure
 * otherwise.
 */
void expect_problem(const struct http_res *r, const char *code, const char *name,
                    const char *value);

/* printf into a static rotating buffer (for paths in tests). */
const char *fmt(const char *f, ...) __attribute__((format(printf, 1, 2)));
/* Percent-encode a query value (rotating static buffers, like fmt). */
const char *qesc(const char *s);

#endif
