/*
 * permfixture.h - the world of the permission test programs
 * (tests/http/test_permissions*.c): the actors (global roles, tenant roles,
 * a foreign tenant admin, a user without membership, the anonymous caller,
 * API tokens with and without the admin scope, a tenant-bound token, cookie
 * sessions with and without X-Requested-With), tenants "own" and "other",
 * requests as an actor, the admin's checks afterwards, and the setup that
 * creates all of it: besides the actors, the local cluster, a project
 * "held" in each tenant whose quota admits no job (jobs submitted there stay
 * queued), and in each tenant one job of the admin that has run to
 * completion (its logs say "hello").
 *
 * Mismatches are noted (tests/support/mismatch.h); a setup that fails ends
 * the program. The actors and tenants are filled in by global_setup and read
 * only afterwards (tests/http/test_permissions_images.c swaps a token of an
 * actor for one test and puts it back).
 */
#ifndef AIDC_TEST_PERMFIXTURE_H
#define AIDC_TEST_PERMFIXTURE_H

#include "tests/support/client.h"

#include <jansson.h>
#include <stdbool.h>

#define PW "perm-password-1"

/* A project in each tenant whose quota admits no job: what is submitted there stays queued. */
#define HELD_PROJECT "held"

/* ---- actors ------------------------------------------------------------------------ */

enum {
    A_ADMIN,       /* bootstrap platform_admin */
    A_PA,          /* a second platform_admin */
    A_FIN,         /* finance */
    A_AUD,         /* auditor */
    A_TA,          /* tenant_admin of "own" */
    A_MEM,         /* member of "own" */
    A_VIEW,        /* viewer of "own" */
    A_FOREIGN,     /* tenant_admin of "other" */
    A_NOMEM,       /* no membership, no global role */
    A_ANON,        /* no credentials */
    A_TOK_NOADMIN, /* API token of own's tenant_admin, scopes [jobs:read] */
    A_TOK_ADMIN,   /* API token of own's tenant_admin, scopes [admin, jobs:read] */
    A_TOK_TENANT,  /* as A_TOK_ADMIN, bound to tenant "own" */
    A_COOKIE,      /* session cookie of own's tenant_admin, no X-Requested-With */
    A_COOKIE_XRW,  /* session cookie of own's tenant_admin with X-Requested-With */
    NACTORS
};

struct caller {
    const char *label;
    const char *user; /* the user it acts as (NULL: anonymous) */
    char *user_jwt;   /* a JWT of that user, for preparing and checking */
    char *bearer;     /* sent as Authorization: Bearer */
    char *cookie;     /* sent as Cookie: aidc_session= */
    bool xrw;         /* sends X-Requested-With: aidc-portal */
};

extern struct caller actors[NACTORS];

struct tenant {
    const char *slug;
    const char *name;    /* as make_tenant names it */
    const char *project; /* a project that exists in it */
    const char *project_name;
    char id[64];
    char done_job[64]; /* the admin's finished job in project, which wrote "hello" */
};

extern struct tenant tenants[2]; /* "own", "other" */

/* ---- requests ------------------------------------------------------------------- */

/* Send method path body (NULL: none) as actor a; the answer goes to out (caller frees). */
long as(int a, const char *method, const char *path, const char *body, struct http_res *out);
/* As adm, as the bootstrap admin. */
long adm(const char *method, const char *path, const char *body, struct http_res *out);
/* Whether r is an application/problem+json document of status with a title. */
bool is_problem(const struct http_res *r, long status);
/* A 404 must not reveal anything about a tenant: neither its name nor its id (noted; what
 * names the request). */
void check_no_leak(const char *what, const struct http_res *r);

/* ---- admin-side checks ---------------------------------------------------------- */

bool is_2xx(long st);
/* The status of GET path as the admin. */
long adm_status(const char *path);
/* The value of a string field of GET path as the admin (malloc'd) or NULL. */
char *adm_field(const char *path, const char *field);
/* Whether a list (GET path, as token) has an item whose key equals value; a list that
 * cannot be read is noted. */
bool list_has(const char *token, const char *path, const char *key, const char *value);
/* Whether the list in r (its "items") has an item whose key equals value. */
bool items_have(const struct http_res *r, const char *key, const char *value);
/* Whether username is a member of tenants[t], as the admin sees it. */
bool is_member(int t, const char *username);

/* ---- setup -------------------------------------------------------------------------- */

/* The JWT (malloc'd) of user; the program exits if it cannot log in. */
char *must_login(const char *user, const char *pw);
/* As the admin, outside any test: method path must answer want; the answer goes to out
 * (or is freed); otherwise the program exits. */
void setup_request(const char *method, const char *path, const char *body, long want,
                   struct http_res *out);
/*
 * harness_setup(name) with fast scheduling workers, then the tenants, the
 * cluster, the "held" projects and the finished jobs, the users, memberships,
 * tokens and sessions of the actors. The program exits if any of it fails.
 */
void global_setup(const char *name);

#endif
