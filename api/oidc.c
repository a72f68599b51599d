/* oidc.c - single sign-on with OpenID Connect (see oidc.h). */
#include "oidc.h"

#include "../lib/config.h"
#include "../lib/credref.h"
#include "../lib/crypto.h"
#include "../lib/err.h"
#include "../lib/log.h"
#include "../lib/sbuf.h"
#include "../lib/xalloc.h"
#include "../server/auditreq.h"
#include "../server/credential.h"
#include "../server/router.h"
#include "extlogin.h"
#include "identity.h"
#include "oidcmeta.h"

#include <microhttpd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define SSO_COOKIE "aidc_sso"
#define SSO_TTL_S  600
/* sign-ins on their way from one address (a campus NAT has many people behind it) */
#define SSO_MAX_PER_ADDRESS 300
#define IDTOKEN_LEEWAY_S    60
#define SECRET_MAX          4096

static const char *setting(const struct db_idp *p, const char *k)
{
    return json_string_value(json_object_get(p->settings, k));
}

/* n random bytes as base64url: states, nonces, verifiers */
static void random_text(size_t n, char *out, size_t outsz)
{
    unsigned char b[64];
    if (n > sizeof b || crypto_random(b, n) != 0)
        abort(); /* no randomness: nothing here can be made safe */
    crypto_b64url_encode(b, n, out, outsz);
}

static void sha256_hex(const char *s, char out[65])
{
    crypto_sha256_hex(s, strlen(s), out);
}

/* A path of this site: one leading '/', no scheme or host, nothing that is not printable. */
static bool return_to_ok(const char *s)
{
    if (s[0] != '/' || s[1] == '/' || s[1] == '\\' || strlen(s) > 2048)
        return false;
    for (const unsigned char *c = (const unsigned char *)s; *c; c++)
        if (*c <= 0x20 || *c >= 0x7f || *c == '\\')
            return false;
    return true;
}

static char *redirect_uri(const struct req *rq, const char *name)
{
    return xasprintf("%s/api/v1/auth/oidc/%s/callback", rq->cfg->public_url, name);
}

static void sso_cookie(struct req *rq, struct resp *rs, const char *name, const char *value,
                       int max_age)
{
    /* Lax: the provider's redirect back is a top-level navigation from its site */
    char *c = xasprintf("%s=%s; Path=/api/v1/auth/oidc/%s/callback; HttpOnly; SameSite=Lax; "
                        "Max-Age=%d%s",
                        SSO_COOKIE, value, name, max_age,
                        api_identity_cookie_secure(rq) ? "; Secure" : "");
    resp_header(rs, MHD_HTTP_HEADER_SET_COOKIE, c);
    free(c);
}

static int found(struct resp *rs, const char *location)
{
    resp_header(rs, MHD_HTTP_HEADER_LOCATION, location);
    resp_header(rs, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
    return resp_json(rs, MHD_HTTP_FOUND, NULL);
}

static int load_provider(struct req *rq, struct resp *rs, struct db_idp *p)
{
    const char *name = req_param(rq, "name");
    int e = db_idp_find(rq->db, name, p);
    if (!e && (!p->enabled || strcmp(p->kind, "oidc") != 0)) {
        db_idp_free(p);
        e = AIDC_ENOTFOUND;
    }
    if (e == AIDC_ENOTFOUND)
        return api_problem(rs, PROBLEM_IDP_NOT_FOUND, json_pack("{s:s}", "provider", name));
    return e;
}

int api_oidc_login(struct req *rq, struct resp *rs)
{
    const char *back = req_query(rq, "return_to"), *hint = req_query(rq, "login_hint");
    if (back && !return_to_ok(back)) {
        api_field_problem(rs, "return_to", PROBLEM_AUTH_RETURN_TO, NULL);
        return api_fail_fields(rs);
    }
    if (hint && (strlen(hint) > 256 || !hint[0])) {
        api_field_problem(rs, "login_hint", PROBLEM_V_LENGTH,
                          json_pack("{s:i, s:i}", "min", 1, "max", 256));
        return api_fail_fields(rs);
    }
    struct db_idp p;
    int e = load_provider(rq, rs, &p);
    if (e)
        return e;
    const json_t *doc = NULL;
    char err[256] = "";
    e = oidcmeta_discovery(rq->db, &p, &doc, err, sizeof err);
    if (e == AIDC_EUNAVAIL) {
        log_warn("single sign-on through %s: %s", p.name, err);
        e = api_problem(rs, PROBLEM_AUTH_PROVIDER_UNAVAILABLE,
                        json_pack("{s:s}", "provider", p.name));
    }
    if (e) {
        db_idp_free(&p);
        return e;
    }
    struct db_oidc_login l = {0};
    char state[64], hash[65], challenge[64];
    random_text(32, state, sizeof state);
    random_text(32, l.nonce, sizeof l.nonce);
    random_text(48, l.verifier, sizeof l.verifier);
    snprintf(l.return_to, sizeof l.return_to, "%s", back ? back : "/");
    idtoken_pkce_challenge(l.verifier, challenge, sizeof challenge);
    sha256_hex(state, hash);
    e = db_oidc_login_put(rq->db, hash, p.name, &l, SSO_TTL_S, rq->source_ip, SSO_MAX_PER_ADDRESS);
    if (e == AIDC_ECONFLICT) {
        rs->err.retry_after = 60;
        e = api_problem(rs, PROBLEM_LOGIN_THROTTLED, json_pack("{s:i}", "seconds", 60));
    }
    if (e) {
        db_idp_free(&p);
        return e;
    }
    /* scope: the configured ones, space-separated */
    struct sbuf sc = SBUF_INIT;
    size_t i;
    json_t *s;
    json_array_foreach(json_object_get(p.settings, "scopes"), i, s)
        sbuf_printf(&sc, "%s%s", i ? " " : "", json_string_value(s));
    char *ru = redirect_uri(rq, p.name);
    char *e_client = oidcmeta_urlencode(setting(&p, "client_id")), *e_ru = oidcmeta_urlencode(ru),
         *e_scope = oidcmeta_urlencode(sc.len ? sc.buf : "openid"),
         *e_hint = hint ? oidcmeta_urlencode(hint) : NULL;
    const char *authz = json_string_value(json_object_get(doc, "authorization_endpoint"));
    char *loc = xasprintf("%s%cresponse_type=code&client_id=%s&redirect_uri=%s&scope=%s&state=%s"
                          "&nonce=%s&code_challenge=%s&code_challenge_method=S256%s%s",
                          authz, strchr(authz, '?') ? '&' : '?', e_client, e_ru, e_scope, state,
                          l.nonce, challenge, e_hint ? "&login_hint=" : "", e_hint ? e_hint : "");
    sso_cookie(rq, rs, p.name, state, SSO_TTL_S);
    rs->audit.skip = true; /* the sign-in is audited where it ends: the callback */
    e = found(rs, loc);
    free(loc);
    free(ru);
    free(e_client);
    free(e_ru);
    free(e_scope);
    free(e_hint);
    sbuf_free(&sc);
    explicit_bzero(&l, sizeof l);
    db_idp_free(&p);
    return e;
}

/* ---- the callback --------------------------------------------------------------------- */

struct callback {
    struct db_idp p;
    struct db_oidc_login l;
    struct oidcmeta_tokens tok;
    json_t *claims;
    enum problem failed; /* 0: none yet */
    char why[256];       /* for the audit record, never shown */
    /* the problem's one parameter, for the portal's text ({error}, {claim}) */
    const char *param;
    char value[65];
};

/* End on the portal's sign-in page with the problem's code; audited as a refused login. */
static int fail_to_portal(struct req *rq, struct resp *rs, struct callback *cb)
{
    const char *code = problem_def(cb->failed)->code;
    json_t *d = json_pack("{s:s, s:s, s:s}", "provider", req_param(rq, "name"), "reason",
                          cb->why[0] ? cb->why : code, "problem", code);
    const struct audit_event ev = {.action = rq->route->action,
                                   .resource_type = "identity_provider",
                                   .resource_id = req_param(rq, "name"),
                                   .outcome = "denied",
                                   .status = problem_def(cb->failed)->status,
                                   .details = d};
    int e = auditreq_record_now(rq, &ev);
    json_decref(d);
    if (e)
        return e;
    resp_free(rs);
    memset(rs, 0, sizeof *rs);
    rs->audit.skip = true;
    char *loc = xasprintf("%s/#/login?sso_error=%s%s%s%s%s", rq->cfg->public_url, code,
                          cb->param ? "&" : "", cb->param ? cb->param : "", cb->param ? "=" : "",
                          cb->param ? cb->value : "");
    e = found(rs, loc);
    free(loc);
    return e;
}

static void fail(struct callback *cb, enum problem p, const char *why)
{
    if (!cb->failed)
        cb->failed = p;
    if (!cb->why[0])
        snprintf(cb->why, sizeof cb->why, "%s", why);
}

/* The state the provider brought back: this browser's, never used, not expired. */
static void take_state(struct req *rq, struct callback *cb)
{
    const char *state = req_query(rq, "state");
    char *mine = credential_cookie(rq->cookie, SSO_COOKIE);
    bool same = state && mine && strlen(state) == strlen(mine) && strlen(state) <= 128 &&
                crypto_equal(state, mine, strlen(state));
    free(mine);
    if (!same) {
        fail(cb, PROBLEM_SSO_STATE, "state missing or not this browser's");
        return;
    }
    char hash[65];
    sha256_hex(state, hash);
    int e = db_oidc_login_take(rq->db, hash, cb->p.name, &cb->l);
    if (e)
        fail(cb, PROBLEM_SSO_STATE,
             e == AIDC_ENOTFOUND ? "state unknown, used or expired" : "state could not be read");
}

/* What the portal's URL may carry as it is (a provider's error code, a claim's name):
 * anything else becomes '_'. */
static char url_char(char c)
{
    if ((c >= 'a' && c <= 'z') || c == '_')
        return c;
    return '_';
}

static void provider_said_no(struct req *rq, struct callback *cb)
{
    const char *error = req_query(rq, "error");
    if (!error)
        return;
    char code[65];
    size_t n = 0;
    for (const char *c = error; *c && n < 64; c++)
        code[n++] = url_char(*c);
    code[n] = '\0';
    snprintf(cb->why, sizeof cb->why, "the provider answered error=%s", code);
    cb->failed = PROBLEM_SSO_DENIED;
    cb->param = "error";
    memcpy(cb->value, code, n + 1);
}

static void exchange(struct req *rq, struct callback *cb)
{
    const char *code = req_query(rq, "code");
    const char *iss = req_query(rq, "iss");
    if (!code || !code[0] || strlen(code) > 2048) {
        fail(cb, PROBLEM_SSO_TOKEN, "no code");
        return;
    }
    if (iss && strcmp(iss, setting(&cb->p, "issuer")) != 0) { /* RFC 9207: mix-up */
        fail(cb, PROBLEM_SSO_TOKEN, "iss of the answer is not the provider's");
        return;
    }
    const json_t *doc;
    char err[256] = "";
    if (oidcmeta_discovery(rq->db, &cb->p, &doc, err, sizeof err) != 0) {
        fail(cb, PROBLEM_AUTH_PROVIDER_UNAVAILABLE, err);
        return;
    }
    int se = 0;
    char *secret = credref_line(setting(&cb->p, "client_secret_ref"), &se, err, sizeof err);
    if (!secret) {
        log_error("single sign-on through %s: the client secret: %s", cb->p.name, err);
        fail(cb, PROBLEM_AUTH_PROVIDER_UNAVAILABLE, "client secret unreadable");
        return;
    }
    char *ru = redirect_uri(rq, cb->p.name);
    int e = oidcmeta_exchange(&cb->p, secret, code, ru, cb->l.verifier, &cb->tok, err, sizeof err);
    explicit_bzero(secret, strlen(secret));
    free(secret);
    free(ru);
    if (e)
        fail(cb, e == AIDC_EFORBIDDEN ? PROBLEM_SSO_TOKEN : PROBLEM_AUTH_PROVIDER_UNAVAILABLE, err);
}

static void verify(struct req *rq, struct callback *cb)
{
    const struct idtoken_expect ex = {.issuer = setting(&cb->p, "issuer"),
                                      .client_id = setting(&cb->p, "client_id"),
                                      .nonce = cb->l.nonce,
                                      .access_token = cb->tok.access_token,
                                      .now = time(NULL),
                                      .leeway_s = IDTOKEN_LEEWAY_S};
    char err[256] = "", why[256] = "";
    enum idtoken_result r = IDTOKEN_KID_UNKNOWN;
    for (int attempt = 0; attempt < 2 && r == IDTOKEN_KID_UNKNOWN; attempt++) {
        struct idtoken_keys *keys = NULL;
        /* a key id not among the kept keys: the provider may have rotated */
        if (oidcmeta_keys(rq->db, &cb->p, attempt > 0, &keys, err, sizeof err) != 0) {
            fail(cb, PROBLEM_AUTH_PROVIDER_UNAVAILABLE, err);
            return;
        }
        r = idtoken_verify(cb->tok.id_token, keys, &ex, &cb->claims, why, sizeof why);
        idtoken_jwks_free(keys);
    }
    if (r != IDTOKEN_OK)
        fail(cb, PROBLEM_SSO_TOKEN,
             r == IDTOKEN_KID_UNKNOWN ? "ID token signed by an unknown key" : why);
}

static int sign_in(struct req *rq, struct resp *rs, struct callback *cb)
{
    const char *uclaim = setting(&cb->p, "username_claim");
    const json_t *verified = json_object_get(cb->claims, "email_verified");
    const struct extlogin_person person = {
        .provider = cb->p.name,
        .subject = json_string_value(json_object_get(cb->claims, "sub")),
        .username = json_string_value(json_object_get(cb->claims, uclaim ? uclaim : "sub")),
        /* an address the provider did not verify could be anyone's */
        .email =
            json_is_true(verified) ? json_string_value(json_object_get(cb->claims, "email")) : NULL,
        .display_name = json_string_value(json_object_get(cb->claims, "name")),
        .claims = cb->claims,
        .username_claim = uclaim,
    };
    struct db_external_user u;
    int e = extlogin_complete(rq, rs, cb->p.role_rules, &person, &u, NULL);
    if (e && rs->err.status) {
        /* a problem for the person (no user name, disabled): shown on the portal */
        cb->failed = rs->err.status == MHD_HTTP_FORBIDDEN && u.disabled ? PROBLEM_SSO_DISABLED
                                                                        : PROBLEM_SSO_USERNAME;
        snprintf(cb->why, sizeof cb->why, "%s",
                 u.disabled ? "user is disabled" : "no usable user name");
        if (!u.disabled) {
            cb->param = "claim";
            size_t n = 0;
            for (const char *c = uclaim ? uclaim : "sub"; *c && n < 64; c++)
                cb->value[n++] = url_char(*c);
            cb->value[n] = '\0';
        }
        return fail_to_portal(rq, rs, cb);
    }
    if (e)
        return e;
    const struct audit_event ev = {.action = rq->route->action,
                                   .resource_type = "user",
                                   .resource_id = u.username,
                                   .status = MHD_HTTP_FOUND,
                                   .details = rs->audit.details};
    e = auditreq_record_now(rq, &ev);
    if (e)
        return e;
    rs->audit.skip = true;
    sso_cookie(rq, rs, cb->p.name, "", 0);
    char *loc = xasprintf("%s%s", rq->cfg->public_url, cb->l.return_to);
    e = found(rs, loc);
    free(loc);
    return e;
}

int api_oidc_callback(struct req *rq, struct resp *rs)
{
    struct callback cb = {0};
    int e = db_idp_find(rq->db, req_param(rq, "name"), &cb.p);
    if (e == AIDC_ENOTFOUND || (!e && (!cb.p.enabled || strcmp(cb.p.kind, "oidc") != 0)))
        fail(&cb, PROBLEM_SSO_STATE, "no such enabled OpenID provider");
    else if (e)
        return e;
    if (!cb.failed)
        take_state(rq, &cb); /* first: a state is spent whatever comes next */
    if (!cb.failed)
        provider_said_no(rq, &cb);
    if (!cb.failed)
        exchange(rq, &cb);
    if (!cb.failed)
        verify(rq, &cb);
    if (!cb.failed)
        e = sign_in(rq, rs, &cb);
    else
        e = fail_to_portal(rq, rs, &cb);
    if (cb.failed && cb.failed != PROBLEM_SSO_STATE && cb.p.name[0])
        sso_cookie(rq, rs, cb.p.name, "", 0);
    if (cb.failed)
        log_info("single sign-on through %s failed: %s", req_param(rq, "name"), cb.why);
    json_decref(cb.claims);
    oidcmeta_tokens_free(&cb.tok);
    explicit_bzero(&cb.l, sizeof cb.l);
    db_idp_free(&cb.p);
    return e;
}
