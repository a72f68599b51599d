/*
 * ldapauth.c - LDAP login by search-then-bind (see ldapauth.h).
 *
 * Every call opens its own handles (one for the service account, one for the
 * user's bind) and gives each its own TLS context (LDAP_OPT_X_TLS_NEWCTX), so no
 * option set here leaks into another call or thread. TLS is all or nothing: a
 * StartTLS the server refuses, or a certificate that does not verify against
 * ca_file, ends the call; nothing is ever retried in the clear. Referrals are not
 * chased (libldap would follow them with an anonymous bind to another server).
 */
#include "ldapauth.h"

#include "sbuf.h"
#include "xalloc.h"

#include <ldap.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define DEFAULT_TIMEOUT_S 5
/* bytes of a value read before it is mended and cut (a character is 4 bytes at most) */
#define RAW_VALUE_MAX ((size_t)4 * LDAPAUTH_VALUE_MAX)

static void say(char *why, size_t whysz, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void say(char *why, size_t whysz, const char *fmt, ...)
{
    if (!why || whysz == 0)
        return;
    va_list ap;
    va_start(ap, fmt);
    /* a message cut short is still a message: truncation is fine here */
    (void)vsnprintf(why, whysz, fmt, ap);
    va_end(ap);
}

/*
 * libldap writes to its sockets with write(): a connection the server has already
 * refused or closed (seen with the asynchronous connect below) raises SIGPIPE, which
 * kills a process that has not ignored it. The signal is the writing thread's, so
 * the call blocks it in its own thread only and takes back one it caused: nothing
 * process-wide changes.
 */
struct sigpipe_guard {
    sigset_t old;
    bool was_pending;
};

static void sigpipe_block(struct sigpipe_guard *g)
{
    sigset_t set, pending;
    sigemptyset(&set);
    sigaddset(&set, SIGPIPE);
    g->was_pending = sigpending(&pending) == 0 && sigismember(&pending, SIGPIPE) == 1;
    if (pthread_sigmask(SIG_BLOCK, &set, &g->old) != 0)
        sigemptyset(&g->old);
}

static void sigpipe_restore(const struct sigpipe_guard *g)
{
    sigset_t set, pending;
    sigemptyset(&set);
    sigaddset(&set, SIGPIPE);
    if (!g->was_pending && sigpending(&pending) == 0 && sigismember(&pending, SIGPIPE) == 1) {
        struct timespec zero = {0, 0};
        (void)sigtimedwait(&set, NULL, &zero);
    }
    (void)pthread_sigmask(SIG_SETMASK, &g->old, NULL);
}

const char *ldapauth_result_name(enum ldapauth_result r)
{
    switch (r) {
    case LDAPAUTH_OK:
        return "ok";
    case LDAPAUTH_REJECTED:
        return "rejected";
    case LDAPAUTH_UNAVAILABLE:
        return "unavailable";
    }
    return "unknown";
}

static bool empty(const char *s)
{
    return !s || !*s;
}

static struct timeval timeout_of(const struct ldapauth_config *cfg)
{
    struct timeval tv = {cfg->timeout_s > 0 ? cfg->timeout_s : DEFAULT_TIMEOUT_S, 0};
    return tv;
}

/* Whether every URL of the (space-separated) list has the scheme; none is an error. */
static bool urls_all(const char *urls, const char *scheme)
{
    size_t n = strlen(scheme), seen = 0;
    for (const char *p = urls; *p;) {
        p += strspn(p, " \t");
        if (!*p)
            break;
        if (strncasecmp(p, scheme, n) != 0)
            return false;
        seen++;
        p += strcspn(p, " \t");
    }
    return seen > 0;
}

/* The configuration's faults that no server is needed to see. */
static bool config_ok(const struct ldapauth_config *cfg, char *why, size_t whysz)
{
    if (empty(cfg->url) || !(urls_all(cfg->url, "ldap://") || urls_all(cfg->url, "ldaps://"))) {
        say(why, whysz, "url must be ldap://host:port or ldaps://host:port (one scheme for all)");
        return false;
    }
    if (!empty(cfg->bind_dn) && empty(cfg->bind_password)) {
        /* a DN with an empty password is an unauthenticated bind: some servers say yes */
        say(why, whysz, "the service account's password is empty");
        return false;
    }
    if (empty(cfg->user_base)) {
        say(why, whysz, "user_base is empty");
        return false;
    }
    if ((empty(cfg->user_filter) || !strstr(cfg->user_filter, "{username}"))) {
        say(why, whysz, "user_filter must contain {username}");
        return false;
    }
    if (!empty(cfg->group_base) &&
        (empty(cfg->group_filter) || !strstr(cfg->group_filter, "{dn}"))) {
        say(why, whysz, "group_filter must contain {dn}");
        return false;
    }
    return true;
}

/* "text (diagnostic)" of the last error on ld, into why. */
static void say_ld(LDAP *ld, int rc, const char *what, char *why, size_t whysz)
{
    char *diag = NULL;
    if (ld && ldap_get_option(ld, LDAP_OPT_DIAGNOSTIC_MESSAGE, &diag) != LDAP_OPT_SUCCESS)
        diag = NULL;
    if (!empty(diag))
        say(why, whysz, "%s: %s (%d): %s", what, ldap_err2string(rc), rc, diag);
    else
        say(why, whysz, "%s: %s (%d)", what, ldap_err2string(rc), rc);
    ldap_memfree(diag);
}

static bool set_int(LDAP *ld, int opt, int v)
{
    return ldap_set_option(ld, opt, &v) == LDAP_OPT_SUCCESS;
}

/*
 * A new handle on url (one of cfg->url's), LDAPv3, timeouts, no referrals, and TLS
 * when asked: StartTLS on ldap:// (done here: refused = unavailable), the certificate
 * checked against ca_file. NULL with why, and *rc libldap's code (negative: the
 * server could not be reached or TLS failed; another URL may do better).
 */
static LDAP *open_conn(const struct ldapauth_config *cfg, const char *url, int *rcp, char *why,
                       size_t whysz)
{
    LDAP *ld = NULL;
    struct timeval tv = timeout_of(cfg);
    int rc = ldap_initialize(&ld, url);
    *rcp = LDAP_OTHER; /* not the network's: no other URL will do better */
    if (rc != LDAP_SUCCESS || !ld) {
        say(why, whysz, "bad url: %s", ldap_err2string(rc));
        return NULL;
    }
    if (!set_int(ld, LDAP_OPT_PROTOCOL_VERSION, LDAP_VERSION3) ||
        ldap_set_option(ld, LDAP_OPT_REFERRALS, LDAP_OPT_OFF) != LDAP_OPT_SUCCESS ||
        /* libldap bounds the TLS handshake by the network timeout only when the
         * connect is asynchronous: without it, an ldaps:// server that accepts and
         * stays silent holds the call for ever. (An asynchronous connect also ends
         * libldap's own walk down a list of URLs: service_conn walks it instead.) */
        ldap_set_option(ld, LDAP_OPT_CONNECT_ASYNC, LDAP_OPT_ON) != LDAP_OPT_SUCCESS ||
        ldap_set_option(ld, LDAP_OPT_NETWORK_TIMEOUT, &tv) != LDAP_OPT_SUCCESS ||
        ldap_set_option(ld, LDAP_OPT_TIMEOUT, &tv) != LDAP_OPT_SUCCESS) {
        say(why, whysz, "cannot set the connection's options");
        goto fail;
    }
    bool ldaps = urls_all(url, "ldaps://");
    *rcp = LDAP_SUCCESS;
    if (!ldaps && !cfg->start_tls)
        return ld;
    if (!empty(cfg->ca_file) &&
        ldap_set_option(ld, LDAP_OPT_X_TLS_CACERTFILE, cfg->ca_file) != LDAP_OPT_SUCCESS) {
        say(why, whysz, "cannot set the TLS CA file");
        goto fail;
    }
    if (!set_int(ld, LDAP_OPT_X_TLS_REQUIRE_CERT, LDAP_OPT_X_TLS_HARD) ||
        !set_int(ld, LDAP_OPT_X_TLS_PROTOCOL_MIN, LDAP_OPT_X_TLS_PROTOCOL_TLS1_2)) {
        say(why, whysz, "cannot set the TLS options");
        goto fail;
    }
    /* last: builds this handle's own TLS context from the options above */
    if (!set_int(ld, LDAP_OPT_X_TLS_NEWCTX, 0)) {
        say(why, whysz, "TLS setup failed (is ca_file %s a readable PEM bundle?)",
            empty(cfg->ca_file) ? "(system default)" : cfg->ca_file);
        goto fail;
    }
    if (!ldaps) {
        rc = ldap_start_tls_s(ld, NULL, NULL);
        if (rc != LDAP_SUCCESS) {
            *rcp = rc;
            say_ld(ld, rc, "StartTLS failed", why, whysz);
            goto fail;
        }
    }
    return ld;
fail:
    if (*rcp == LDAP_SUCCESS)
        *rcp = LDAP_OTHER;
    ldap_unbind_ext_s(ld, NULL, NULL);
    return NULL;
}

/*
 * A simple bind of dn with pw on ld, waiting at most the timeout, with the password
 * policy request control: the server's result code (or libldap's negative one), its
 * password policy error in *pperr (PP_noError when none) and its diagnostic in diag.
 */
static int bind_simple(LDAP *ld, const char *dn, const char *pw, struct timeval tv,
                       LDAPPasswordPolicyError *pperr, char *diag, size_t diagsz)
{
    LDAPControl *req = NULL, **resctrls = NULL;
    LDAPMessage *res = NULL;
    char *msg = NULL;
    int msgid = -1, err = LDAP_OTHER;
    *pperr = PP_noError;
    if (diagsz)
        diag[0] = '\0';
    struct berval cred = {strlen(pw), (char *)pw};
    int rc = ldap_create_passwordpolicy_control(ld, &req);
    if (rc != LDAP_SUCCESS)
        return rc;
    LDAPControl *sctrls[] = {req, NULL};
    rc = ldap_sasl_bind(ld, dn, LDAP_SASL_SIMPLE, &cred, sctrls, NULL, &msgid);
    if (rc != LDAP_SUCCESS)
        goto out;
    int got = ldap_result(ld, msgid, LDAP_MSG_ALL, &tv, &res);
    if (got == 0) {
        (void)ldap_abandon_ext(ld, msgid, NULL, NULL);
        rc = LDAP_TIMEOUT;
        goto out;
    }
    if (got < 0) {
        if (ldap_get_option(ld, LDAP_OPT_RESULT_CODE, &rc) != LDAP_OPT_SUCCESS || rc == 0)
            rc = LDAP_SERVER_DOWN;
        goto out;
    }
    rc = ldap_parse_result(ld, res, &err, NULL, &msg, NULL, &resctrls, 1);
    res = NULL; /* freed by ldap_parse_result */
    if (rc != LDAP_SUCCESS)
        goto out;
    rc = err;
    if (msg && diagsz)
        say(diag, diagsz, "%s", msg);
    LDAPControl *pp = ldap_control_find(LDAP_CONTROL_PASSWORDPOLICYRESPONSE, resctrls, NULL);
    ber_int_t expire = -1, grace = -1;
    if (pp && ldap_parse_passwordpolicy_control(ld, pp, &expire, &grace, pperr) != LDAP_SUCCESS)
        *pperr = PP_noError;
out:
    ldap_msgfree(res);
    ldap_memfree(msg);
    ldap_controls_free(resctrls);
    ldap_control_free(req);
    return rc;
}

/*
 * The service account's bind (an anonymous one without bind_dn: it is also what
 * opens the connection); LDAP_SUCCESS, or the code with why.
 */
static int bind_service(LDAP *ld, const struct ldapauth_config *cfg, char *why, size_t whysz)
{
    LDAPPasswordPolicyError pperr;
    char diag[LDAPAUTH_WHY_MAX];
    bool anon = empty(cfg->bind_dn);
    int rc = bind_simple(ld, anon ? "" : cfg->bind_dn, anon ? "" : cfg->bind_password,
                         timeout_of(cfg), &pperr, diag, sizeof diag);
    if (rc == LDAP_SUCCESS)
        return rc;
    if (rc == LDAP_INVALID_CREDENTIALS)
        say(why, whysz, "the service account's bind was refused (check bind_dn and its password)");
    else if (diag[0])
        say(why, whysz, "service account bind: %s (%d): %s", ldap_err2string(rc), rc, diag);
    else
        say(why, whysz, "service account bind: %s (%d)", ldap_err2string(rc), rc);
    return rc;
}

/*
 * The service connection, bound: on the first URL of cfg->url that can be reached
 * (TLS included), which *url gets (malloc'd) for the user's connection. NULL with why.
 */
static LDAP *service_conn(const struct ldapauth_config *cfg, char **url, char *why, size_t whysz)
{
    char *list = xstrdup(cfg->url), *save = NULL;
    LDAP *ld = NULL;
    for (char *u = strtok_r(list, " \t", &save); u; u = strtok_r(NULL, " \t", &save)) {
        int rc;
        ld = open_conn(cfg, u, &rc, why, whysz);
        if (ld) {
            rc = bind_service(ld, cfg, why, whysz);
            if (rc == LDAP_SUCCESS) {
                say(why, whysz, "%s", ""); /* an earlier URL's failure is no news */
                *url = xstrdup(u);
                break;
            }
            ldap_unbind_ext_s(ld, NULL, NULL);
            ld = NULL;
        }
        if (rc >= 0) /* the server answered, or the configuration is wrong: stop */
            break;
    }
    free(list);
    return ld;
}

/* Server answers that say "not now" rather than "not you". */
static bool transient(int rc)
{
    return rc < 0 || rc == LDAP_BUSY || rc == LDAP_UNAVAILABLE || rc == LDAP_TIMELIMIT_EXCEEDED ||
           rc == LDAP_ADMINLIMIT_EXCEEDED || rc == LDAP_OTHER || rc == LDAP_OPERATIONS_ERROR ||
           rc == LDAP_PROTOCOL_ERROR || rc == LDAP_STRONG_AUTH_REQUIRED ||
           rc == LDAP_CONFIDENTIALITY_REQUIRED;
}

/* Active Directory's reason for a 49, the "data 775" of its diagnostic; NULL if none. */
static const char *ad_reason(const char *diag)
{
    static const struct {
        const char *code, *why;
    } codes[] = {
        {"data 525", "no such user"},      {"data 52e", "wrong password or account locked"},
        {"data 530", "not permitted now"}, {"data 531", "not permitted at this workstation"},
        {"data 532", "password expired"},  {"data 533", "account disabled"},
        {"data 701", "account expired"},   {"data 773", "password must be changed"},
        {"data 775", "account locked"},
    };
    for (size_t i = 0; i < sizeof codes / sizeof codes[0]; i++)
        if (strstr(diag, codes[i].code))
            return codes[i].why;
    return NULL;
}

/* The user's own bind on a connection of its own; OK, REJECTED or UNAVAILABLE with why. */
static enum ldapauth_result bind_user(const struct ldapauth_config *cfg, const char *url,
                                      const char *dn, const char *password, char *why, size_t whysz)
{
    int rc;
    LDAP *ld = open_conn(cfg, url, &rc, why, whysz);
    if (!ld)
        return LDAPAUTH_UNAVAILABLE;
    LDAPPasswordPolicyError pperr;
    char diag[LDAPAUTH_WHY_MAX];
    rc = bind_simple(ld, dn, password, timeout_of(cfg), &pperr, diag, sizeof diag);
    enum ldapauth_result r = LDAPAUTH_REJECTED;
    const char *ad = ad_reason(diag);
    if (rc == LDAP_SUCCESS) {
        r = LDAPAUTH_OK;
    } else if (transient(rc)) {
        r = LDAPAUTH_UNAVAILABLE;
        say(why, whysz, "user bind: %s (%d)%s%s", ldap_err2string(rc), rc, diag[0] ? ": " : "",
            diag);
    } else if (pperr == PP_accountLocked) {
        say(why, whysz, "account locked");
    } else if (rc == LDAP_INVALID_CREDENTIALS) {
        say(why, whysz, "%s", ad ? ad : "wrong password or account locked");
    } else {
        say(why, whysz, "bind refused: %s (%d)", ldap_err2string(rc), rc);
    }
    ldap_unbind_ext_s(ld, NULL, NULL);
    return r;
}

/* tmpl with every key replaced by value escaped for a filter (RFC 4515); NULL if it fails. */
static char *filter_fill(const char *tmpl, const char *key, const char *value)
{
    struct berval in = {strlen(value), (char *)value}, esc = {0, NULL};
    if (ldap_bv2escaped_filter_value(&in, &esc) != 0 || !esc.bv_val)
        return NULL;
    struct sbuf sb = SBUF_INIT;
    size_t klen = strlen(key);
    for (const char *p = tmpl, *hit; *p; p = hit + klen) {
        hit = strstr(p, key);
        if (!hit) {
            sbuf_puts(&sb, p);
            break;
        }
        sbuf_append(&sb, p, (size_t)(hit - p));
        sbuf_append(&sb, esc.bv_val, esc.bv_len);
    }
    ber_memfree(esc.bv_val);
    return sbuf_steal(&sb);
}

/* The first value of attr on e as valid UTF-8, cut to LDAPAUTH_VALUE_MAX; NULL if none. */
static char *first_value(LDAP *ld, LDAPMessage *e, const char *attr)
{
    struct berval **v = ldap_get_values_len(ld, e, attr);
    char *s = NULL;
    if (v && v[0] && v[0]->bv_len > 0) {
        /* a value may hold any byte: stop at a NUL, mend what is not UTF-8, then cut */
        size_t n = v[0]->bv_len < RAW_VALUE_MAX ? v[0]->bv_len : RAW_VALUE_MAX;
        char *raw = xstrndup(v[0]->bv_val, n);
        struct sbuf sb = SBUF_INIT;
        sbuf_utf8(&sb, raw);
        free(raw);
        s = sbuf_steal(&sb);
        s[sbuf_utf8_prefix(s, LDAPAUTH_VALUE_MAX)] = '\0';
    }
    ldap_value_free_len(v);
    return s;
}

/* Why a search failed: a missing base is the configuration's fault, not the user's. */
static void say_search(LDAP *ld, int rc, const char *base, char *why, size_t whysz)
{
    if (rc == LDAP_NO_SUCH_OBJECT)
        say(why, whysz, "%s does not exist or the service account cannot read it", base);
    else
        say_ld(ld, rc, "search failed", why, whysz);
}

/*
 * The one entry of user_base that matches username; fills out's dn, username,
 * display_name and email. OK, REJECTED ("no such user", "several entries match")
 * or UNAVAILABLE.
 */
static enum ldapauth_result find_user(LDAP *ld, const struct ldapauth_config *cfg,
                                      const char *username, struct ldapauth_user *out, char *why,
                                      size_t whysz)
{
    const char *uattr = empty(cfg->username_attr) ? "uid" : cfg->username_attr;
    char *attrs[] = {(char *)uattr, "displayName", "cn", "mail", NULL};
    LDAPMessage *res = NULL;
    struct timeval tv = timeout_of(cfg);
    enum ldapauth_result r = LDAPAUTH_UNAVAILABLE;
    char *filter = filter_fill(cfg->user_filter, "{username}", username);
    if (!filter) {
        say(why, whysz, "cannot escape the username");
        return LDAPAUTH_UNAVAILABLE;
    }
    /* sizelimit 2: one entry is the user, a second says the filter is ambiguous */
    int rc = ldap_search_ext_s(ld, cfg->user_base, LDAP_SCOPE_SUBTREE, filter, attrs, 0, NULL, NULL,
                               &tv, 2, &res);
    if (rc == LDAP_SIZELIMIT_EXCEEDED || (rc == LDAP_SUCCESS && ldap_count_entries(ld, res) > 1)) {
        r = LDAPAUTH_REJECTED;
        say(why, whysz, "several entries match");
        goto out;
    }
    if (rc != LDAP_SUCCESS) {
        say_search(ld, rc, cfg->user_base, why, whysz);
        goto out;
    }
    LDAPMessage *e = ldap_first_entry(ld, res);
    if (!e) {
        r = LDAPAUTH_REJECTED;
        say(why, whysz, "no such user");
        goto out;
    }
    char *dn = ldap_get_dn(ld, e);
    if (!dn) {
        say(why, whysz, "the user's entry has no DN");
        goto out;
    }
    out->dn = xstrdup(dn);
    ldap_memfree(dn);
    out->username = first_value(ld, e, uattr);
    if (!out->username)
        out->username = xstrdup(username);
    out->display_name = first_value(ld, e, "displayName");
    if (!out->display_name)
        out->display_name = first_value(ld, e, "cn");
    out->email = first_value(ld, e, "mail");
    r = LDAPAUTH_OK;
out:
    ldap_msgfree(res);
    free(filter);
    return r;
}

/* The cns of the groups of group_base whose group_filter matches dn, into out. */
static enum ldapauth_result find_groups(LDAP *ld, const struct ldapauth_config *cfg,
                                        struct ldapauth_user *out, char *why, size_t whysz)
{
    if (empty(cfg->group_base))
        return LDAPAUTH_OK;
    char *attrs[] = {"cn", NULL};
    LDAPMessage *res = NULL;
    struct timeval tv = timeout_of(cfg);
    enum ldapauth_result r = LDAPAUTH_UNAVAILABLE;
    char *filter = filter_fill(cfg->group_filter, "{dn}", out->dn);
    if (!filter) {
        say(why, whysz, "cannot escape the user's DN");
        return LDAPAUTH_UNAVAILABLE;
    }
    int rc = ldap_search_ext_s(ld, cfg->group_base, LDAP_SCOPE_SUBTREE, filter, attrs, 0, NULL,
                               NULL, &tv, LDAPAUTH_GROUPS_MAX + 1, &res);
    int n = rc == LDAP_SUCCESS ? ldap_count_entries(ld, res) : -1;
    if (rc == LDAP_SIZELIMIT_EXCEEDED || n > LDAPAUTH_GROUPS_MAX) {
        /* keeping some would grant by chance: the filter must name fewer */
        say(why, whysz, "more than %d groups match group_filter: narrow it or group_base",
            LDAPAUTH_GROUPS_MAX);
        goto out;
    }
    if (rc != LDAP_SUCCESS || n < 0) {
        say_search(ld, rc, cfg->group_base, why, whysz);
        goto out;
    }
    out->groups = xcalloc((size_t)n + 1, sizeof *out->groups);
    for (LDAPMessage *e = ldap_first_entry(ld, res); e; e = ldap_next_entry(ld, e)) {
        char *cn = first_value(ld, e, "cn");
        if (cn && out->ngroups < (size_t)n)
            out->groups[out->ngroups++] = cn;
        else
            free(cn);
    }
    r = LDAPAUTH_OK;
out:
    ldap_msgfree(res);
    free(filter);
    return r;
}

static enum ldapauth_result login(const struct ldapauth_config *cfg, const char *username,
                                  const char *password, struct ldapauth_user *out, char *why,
                                  size_t whysz)
{
    struct ldapauth_user u = {0};
    LDAP *ld = NULL;
    char *url = NULL;
    enum ldapauth_result r = LDAPAUTH_UNAVAILABLE;
    say(why, whysz, "%s", "");
    /* before anything reaches the network: an empty password would be an
     * unauthenticated bind, which some servers answer with success */
    if (empty(password)) {
        say(why, whysz, "empty password");
        return LDAPAUTH_REJECTED;
    }
    if (empty(username) || strlen(username) > LDAPAUTH_USERNAME_MAX) {
        say(why, whysz, "invalid username");
        return LDAPAUTH_REJECTED;
    }
    if (!config_ok(cfg, why, whysz))
        return LDAPAUTH_UNAVAILABLE;
    ld = service_conn(cfg, &url, why, whysz);
    if (!ld)
        goto out;
    r = find_user(ld, cfg, username, &u, why, whysz);
    if (r != LDAPAUTH_OK)
        goto out;
    r = bind_user(cfg, url, u.dn, password, why, whysz);
    if (r != LDAPAUTH_OK)
        goto out;
    r = find_groups(ld, cfg, &u, why, whysz);
out:
    if (ld)
        ldap_unbind_ext_s(ld, NULL, NULL);
    free(url);
    if (r == LDAPAUTH_OK) {
        *out = u;
    } else {
        ldapauth_user_free(&u);
    }
    return r;
}

enum ldapauth_result ldapauth_login(const struct ldapauth_config *cfg, const char *username,
                                    const char *password, struct ldapauth_user *out, char *why,
                                    size_t whysz)
{
    struct sigpipe_guard g;
    sigpipe_block(&g);
    enum ldapauth_result r = login(cfg, username, password, out, why, whysz);
    sigpipe_restore(&g);
    return r;
}

void ldapauth_user_free(struct ldapauth_user *u)
{
    if (!u)
        return;
    free(u->dn);
    free(u->username);
    free(u->display_name);
    free(u->email);
    for (size_t i = 0; i < u->ngroups; i++)
        free(u->groups[i]);
    free(u->groups);
    memset(u, 0, sizeof *u);
}

/* Whether base exists and the bound identity may read it. */
static bool base_readable(LDAP *ld, const struct ldapauth_config *cfg, const char *base, char *why,
                          size_t whysz)
{
    char *attrs[] = {LDAP_NO_ATTRS, NULL};
    LDAPMessage *res = NULL;
    struct timeval tv = timeout_of(cfg);
    int rc = ldap_search_ext_s(ld, base, LDAP_SCOPE_BASE, "(objectClass=*)", attrs, 0, NULL, NULL,
                               &tv, 1, &res);
    bool ok = rc == LDAP_SUCCESS && ldap_count_entries(ld, res) == 1;
    if (!ok && rc == LDAP_SUCCESS)
        rc = LDAP_NO_SUCH_OBJECT;
    if (!ok)
        say_search(ld, rc, base, why, whysz);
    ldap_msgfree(res);
    return ok;
}

/* Whether user_filter, filled with a name nobody has, is a filter the server takes. */
static bool filter_works(LDAP *ld, const struct ldapauth_config *cfg, char *why, size_t whysz)
{
    char *attrs[] = {LDAP_NO_ATTRS, NULL};
    LDAPMessage *res = NULL;
    struct timeval tv = timeout_of(cfg);
    char *filter = filter_fill(cfg->user_filter, "{username}", "aidc-probe-no-such-user");
    if (!filter) {
        say(why, whysz, "cannot escape the username");
        return false;
    }
    int rc = ldap_search_ext_s(ld, cfg->user_base, LDAP_SCOPE_SUBTREE, filter, attrs, 0, NULL, NULL,
                               &tv, 1, &res);
    bool ok = rc == LDAP_SUCCESS || rc == LDAP_SIZELIMIT_EXCEEDED;
    if (!ok)
        say_ld(ld, rc, "user_filter", why, whysz);
    ldap_msgfree(res);
    free(filter);
    return ok;
}

static enum ldapauth_result probe(const struct ldapauth_config *cfg, char *why, size_t whysz)
{
    say(why, whysz, "%s", "");
    if (!config_ok(cfg, why, whysz))
        return LDAPAUTH_UNAVAILABLE;
    char *url = NULL;
    LDAP *ld = service_conn(cfg, &url, why, whysz);
    free(url);
    if (!ld)
        return LDAPAUTH_UNAVAILABLE;
    bool ok = base_readable(ld, cfg, cfg->user_base, why, whysz) &&
              filter_works(ld, cfg, why, whysz) &&
              (empty(cfg->group_base) || base_readable(ld, cfg, cfg->group_base, why, whysz));
    ldap_unbind_ext_s(ld, NULL, NULL);
    return ok ? LDAPAUTH_OK : LDAPAUTH_UNAVAILABLE;
}

enum ldapauth_result ldapauth_probe(const struct ldapauth_config *cfg, char *why, size_t whysz)
{
    struct sigpipe_guard g;
    sigpipe_block(&g);
    enum ldapauth_result r = probe(cfg, why, whysz);
    sigpipe_restore(&g);
    return r;
}
