/*
 * ldapauth.h - log a user in against an LDAP directory (OpenLDAP, Active Directory)
 * with OpenLDAP's libldap: search-then-bind.
 *
 * The service account searches user_base for the one entry whose attribute matches
 * the username (escaped into user_filter, RFC 4515), then the user's own password is
 * checked by a bind as that entry's DN on a second connection, and the service
 * connection reads the user's groups. Nothing is cached and nothing global is set:
 * each call opens its own connections with its own TLS context, so calls may run on
 * any number of threads at once. No password is ever logged or put into why.
 */
#ifndef AIDC_LDAPAUTH_H
#define AIDC_LDAPAUTH_H

#include <stdbool.h>
#include <stddef.h>

#define LDAPAUTH_USERNAME_MAX 256  /* bytes of a username */
#define LDAPAUTH_GROUPS_MAX   256  /* groups of one user; more is a configuration fault */
#define LDAPAUTH_VALUE_MAX    1024 /* bytes kept of an attribute value (longer: cut) */
#define LDAPAUTH_WHY_MAX      256  /* a why buffer this big holds every message */

struct ldapauth_config {
    const char *url;           /* ldap://host:port or ldaps://host:port (several, space-separated:
                                  tried in turn) */
    bool start_tls;            /* required StartTLS on ldap:// (refused: error, never plaintext
                                  fallback); ignored for ldaps:// */
    const char *ca_file;       /* CA bundle for TLS (NULL: the system default) */
    const char *bind_dn;       /* the service account (NULL or "": anonymous search) */
    const char *bind_password; /* its password (already read from its secret reference) */
    const char *user_base;     /* e.g. ou=people,dc=example,dc=org */
    const char
        *user_filter; /* with {username} e.g. (&(objectClass=inetOrgPerson)(uid={username})) */
    const char *group_base;   /* NULL or "": no groups */
    const char *group_filter; /* with {dn} e.g. (&(objectClass=groupOfNames)(member={dn})) ;
                                 group name = cn */
    int timeout_s;            /* network and operation timeout (default 5 when 0) */
    /* Added after the first interface: */
    const char *username_attr; /* the attribute read back as the username (NULL or "": uid;
                                  Active Directory: sAMAccountName) */
};

struct ldapauth_user {
    char *dn;
    char *username;     /* the uid attribute as stored (may differ in case) */
    char *display_name; /* displayName or cn, may be NULL */
    char *email;        /* mail, may be NULL */
    char **groups;      /* group cns */
    size_t ngroups;
};

enum ldapauth_result { LDAPAUTH_OK = 0, LDAPAUTH_REJECTED, LDAPAUTH_UNAVAILABLE };

/*
 * Search-then-bind: refuse an empty password before any connection (a DN with an
 * empty password is an unauthenticated bind, which some servers answer with
 * success), escape the username (RFC 4515) into user_filter, require exactly one
 * entry (sizelimit 2), bind as the user's DN on a SECOND connection, then read
 * groups with the service connection (the DN escaped into group_filter).
 *
 * REJECTED: the user's fault, why says which, for the audit log: "empty password",
 * "invalid username" (empty or longer than LDAPAUTH_USERNAME_MAX), "no such user",
 * "several entries match", "wrong password or account locked" (the directory
 * answers both alike; "account locked" when its password policy control says so),
 * or another refusal of the user's bind by the server.
 * UNAVAILABLE: the server, the network, TLS or the configuration (a wrong service
 * password, a user_base that does not exist, too many groups): why says what.
 * *out is filled on OK only (free it with ldapauth_user_free). Neither password
 * appears in why.
 */
enum ldapauth_result ldapauth_login(const struct ldapauth_config *cfg, const char *username,
                                    const char *password, struct ldapauth_user *out, char *why,
                                    size_t whysz);
/* Free what ldapauth_login filled and zero *u (NULL or an already freed one: no-op). */
void ldapauth_user_free(struct ldapauth_user *u);

/*
 * Check a config can reach the server (with its TLS), bind as the service account,
 * read user_base (and group_base when set) and search it with user_filter: for an
 * administrator's "test connection". OK, or UNAVAILABLE with why.
 */
enum ldapauth_result ldapauth_probe(const struct ldapauth_config *cfg, char *why, size_t whysz);

/* A short lowercase name of a result, for logs: "ok", "rejected", "unavailable". */
const char *ldapauth_result_name(enum ldapauth_result r);

#endif
