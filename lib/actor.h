/*
 * actor.h - who is asking, and what the role and scope model lets it do: the
 * global roles, tenant roles and token scopes, and the actor as loaded from
 * its credential. Its own header (no HTTP in it) so that db/ and audit/ can
 * take an actor without knowing how a request arrived.
 */
#ifndef AIDC_ACTOR_H
#define AIDC_ACTOR_H

#include <stdbool.h>
#include <stddef.h>
#include <time.h>

/* Global roles (bit mask). */
enum global_role {
    GR_PLATFORM_ADMIN = 1u << 0,
    GR_FINANCE = 1u << 1,
    GR_AUDITOR = 1u << 2,
};
#define GR_ANY_GLOBAL (GR_PLATFORM_ADMIN | GR_FINANCE | GR_AUDITOR)

/* Tenant roles, ordered: a higher role includes the lower ones. */
enum tenant_role { TR_NONE = 0, TR_VIEWER = 1, TR_MEMBER = 2, TR_ADMIN = 3 };

/* API token scopes (bit mask). */
enum scope {
    SC_JOBS_READ = 1u << 0,
    SC_JOBS_WRITE = 1u << 1,
    SC_IMAGES_READ = 1u << 2,
    SC_IMAGES_WRITE = 1u << 3,
    SC_USAGE_READ = 1u << 4,
    SC_BILLING_WRITE = 1u << 5,
    SC_AUDIT_READ = 1u << 6,
    SC_AUDIT_INGEST = 1u << 7,
    SC_ADMIN = 1u << 8,
    SC_GPU_FAULTS = 1u << 9, /* report and resolve GPU faults (Alertmanager's webhook) */
};
#define SC_ALL 0x3ffu
/* Scopes of machines with one task (a node agent, Alertmanager): a token with
 * only these reaches only its routes, not the routes open to any token (the
 * tenant directory, clusters, /me) */
#define SC_MACHINE (SC_AUDIT_INGEST | SC_GPU_FAULTS)

#define UUID_LEN 36

struct membership {
    char tenant_id[UUID_LEN + 1];
    char *slug;
    int role; /* enum tenant_role */
    bool suspended;
    bool members_see_all_jobs; /* the tenant lets its members read each other's jobs */
};

/* Who is asking. Filled by server/auth.c; zeroed for anonymous requests. */
struct actor {
    bool authenticated;
    char user_id[UUID_LEN + 1];
    char *username;
    unsigned roles; /* enum global_role bits */
    bool via_token;
    bool via_cookie;
    char token_id[UUID_LEN + 1];
    unsigned scopes;                 /* SC_ALL for sessions */
    char token_tenant[UUID_LEN + 1]; /* a token bound to one tenant, else "" */
    char token_node[254];            /* a token bound to one node (host), else "" */
    char jti[UUID_LEN + 1];          /* session id of a JWT, else "" */
    time_t session_expires;
    long long auth_version; /* users.auth_version when loaded */
    long long auth_epoch;   /* aidc_auth_epoch when loaded (or last found current) */
    time_t token_expires;   /* API token's expiry, else 0 */
    bool from_cache;        /* loaded from server/authcache, not the database */
    char cache_key[65];     /* SHA-256 of the credential */
    struct membership *memberships;
    size_t nmemberships;
};

/* Free what a points to and zero it. */
void actor_free(struct actor *a);
/* The global roles as "platform_admin,finance,auditor" (those set), into buf. */
void actor_roles_csv(unsigned roles, char *buf, size_t n);

#endif
