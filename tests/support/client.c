/* client.c - libcurl client for the integration tests. */
#include "client.h"

#include "harness.h"
#include "secrets.h"

#include <arpa/inet.h>
#include <check.h>
#include <curl/curl.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/time.h>

struct buf {
    char *p;
    size_t n;
};

static size_t on_data(char *ptr, size_t size, size_t nmemb, void *ud)
{
    struct buf *b = ud;
    size_t add = size * nmemb;
    char *q = realloc(b->p, b->n + add + 1);
    if (!q)
        return 0;
    memcpy(q + b->n, ptr, add);
    b->p = q;
    b->n += add;
    b->p[b->n] = '\0';
    return add;
}

long http_raw(const struct aidc_server *s, const char *method, const char *path, const char *token,
              const char *content_type, const char *body, size_t len, const char *const *extra,
              struct http_res *out)
{
    CURL *c = curl_easy_init();
    struct curl_slist *h = NULL;
    struct buf b = {0}, hb = {0};
    char url[2048], line[2048];
    long status = 0;
    memset(out, 0, sizeof *out);
    if (!c)
        return 0;
    snprintf(url, sizeof url, "%s%s", s->base, path);
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
    if (strcmp(method, "HEAD") == 0)
        curl_easy_setopt(c, CURLOPT_NOBODY, 1L);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_data);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &b);
    curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_data);
    curl_easy_setopt(c, CURLOPT_HEADERDATA, &hb);
    curl_easy_setopt(c, CURLOPT_TIMEOUT, 60L);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    /* every credential a test sends or receives goes on the run's record (secrets.h) */
    secrets_note(token);
    for (size_t i = 0; extra && extra[i]; i++)
        secrets_note_header(extra[i]);
    if (body && len) {
        json_t *sent = json_loadb(body, len, 0, NULL);
        secrets_note_json(sent);
        json_decref(sent);
    }
    if (token) {
        snprintf(line, sizeof line, "Authorization: Bearer %s", token);
        h = curl_slist_append(h, line);
    }
    if (body) {
        curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
        curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE, (long)len);
        if (content_type) {
            snprintf(line, sizeof line, "Content-Type: %s", content_type);
            h = curl_slist_append(h, line);
        } else {
            h = curl_slist_append(h, "Content-Type:");
        }
    }
    h = curl_slist_append(h, "Expect:");
    for (size_t i = 0; extra && extra[i]; i++) {
        h = curl_slist_append(h, extra[i]);
        /* A caller's "Expect: 100-continue" asks for the server's word before the body:
         * curl sends it anyway after one second, and a refusal (413) then closes a
         * connection with the body arriving - a reset in place of the answer on a
         * busy machine. Wait for the word as long as for any answer. */
        if (strncasecmp(extra[i], "Expect: 100", 11) == 0)
            curl_easy_setopt(c, CURLOPT_EXPECT_100_TIMEOUT_MS, 60000L);
    }
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
    if (curl_easy_perform(c) == CURLE_OK)
        curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
    curl_slist_free_all(h);
    curl_easy_cleanup(c);
    out->status = status;
    out->body = b.p ? b.p : strdup("");
    out->body_len = b.n;
    out->headers = hb.p ? hb.p : strdup("");
    out->json = b.n ? json_loadb(b.p, b.n, 0, NULL) : NULL;
    secrets_note_json(out->json);
    return status;
}

long http_do(const struct aidc_server *s, const char *method, const char *path, const char *token,
             const char *body, const char *const *extra, struct http_res *out)
{
    return http_raw(s, method, path, token, "application/json", body, body ? strlen(body) : 0,
                    extra, out);
}

void http_res_free(struct http_res *r)
{
    free(r->body);
    free(r->headers);
    json_decref(r->json);
    memset(r, 0, sizeof *r);
}

char *http_header(const struct http_res *r, const char *name)
{
    size_t nl = strlen(name);
    for (const char *p = r->headers; p && *p;) {
        const char *eol = strstr(p, "\r\n");
        size_t len = eol ? (size_t)(eol - p) : strlen(p);
        if (len > nl && strncasecmp(p, name, nl) == 0 && p[nl] == ':') {
            const char *v = p + nl + 1;
            while (*v == ' ')
                v++;
            return strndup(v, len - (size_t)(v - p));
        }
        p = eol ? eol + 2 : NULL;
    }
    return NULL;
}

char *http_set_cookie(const struct http_res *r, const char *name)
{
    const char *want = fmt("%s=", name);
    for (const char *p = r->headers; p && *p;) {
        const char *eol = strstr(p, "\r\n");
        size_t len = eol ? (size_t)(eol - p) : strlen(p);
        if (len > 11 && strncasecmp(p, "Set-Cookie:", 11) == 0) {
            const char *v = p + 11;
            while (*v == ' ')
                v++;
            if (strncmp(v, want, strlen(want)) == 0)
                return strndup(v, len - (size_t)(v - p));
        }
        p = eol ? eol + 2 : NULL;
    }
    return NULL;
}

const char *jstr(const json_t *o, const char *key)
{
    return json_string_value(json_object_get(o, key));
}

long long jint(const json_t *o, const char *key)
{
    return json_integer_value(json_object_get(o, key));
}

json_t *get_items(const char *path, const char *token)
{
    struct http_res r;
    long st = reqj("GET", path, token, NULL, &r);
    ck_assert_msg(st == 200, "GET %.200s answered %ld: %.300s", path, st, r.body ? r.body : "");
    json_t *items = json_incref(json_object_get(r.json, "items"));
    ck_assert_msg(json_is_array(items), "GET %.200s: no items: %.300s", path, r.body);
    http_res_free(&r);
    return items;
}

const char *member_role(const json_t *me, const char *tenant)
{
    size_t i;
    json_t *m;
    json_array_foreach(json_object_get(me, "memberships"), i, m)
    {
        if (strcmp(jstr(m, "tenant"), tenant) == 0)
            return jstr(m, "role");
    }
    return NULL;
}

size_t count_items(const char *path, const char *token)
{
    json_t *items = get_items(path, token);
    size_t n = json_array_size(items);
    json_decref(items);
    return n;
}

long reqj(const char *method, const char *path, const char *token, const char *body,
          struct http_res *out)
{
    return http_do(&harness_srv, method, path, token, body, NULL, out);
}

long req(const char *method, const char *path, const char *token, const char *body)
{
    struct http_res r;
    long st = reqj(method, path, token, body, &r);
    http_res_free(&r);
    return st;
}

char *login(const char *username, const char *password)
{
    json_t *b = json_pack("{s:s, s:s}", "username", username, "password", password);
    char *body = json_dumps(b, JSON_COMPACT);
    json_decref(b);
    struct http_res r;
    char *tok = NULL;
    if (reqj("POST", "/api/v1/auth/login", NULL, body, &r) == 200)
        tok = strdup(json_string_value(json_object_get(r.json, "access_token")));
    http_res_free(&r);
    free(body);
    return tok;
}

static void must(long got, long want, const char *what)
{
    if (got != want) {
        fprintf(stderr, "test setup: %s answered %ld, expected %ld\n", what, got, want);
        exit(1);
    }
}

void make_user(const char *username, const char *password, const char *roles_json)
{
    const char *b = fmt("{\"username\":\"%s\",\"password\":\"%s\"}", username, password);
    must(req("POST", "/api/v1/users", harness_srv.admin_token, b), 201, "create user");
    if (!roles_json || strcmp(roles_json, "[]") == 0)
        return;
    /* Through the API a global role waits for a second admin's approval
     * (test_approvals.c tests that); set-ups grant it as the database owner,
     * outside the API, as an operator's `aidcd bootstrap` does. */
    const char *p[2] = {username, roles_json};
    PGresult *r = harness_sql(harness_srv.owner_url,
                              "INSERT INTO user_roles (user_id, role)"
                              " SELECT u.id, x FROM users u, json_array_elements_text($2::json) x"
                              " WHERE u.username = $1",
                              2, p);
    must(r && strcmp(PQcmdTuples(r), "0") != 0, 1, "grant roles");
    PQclear(r);
}

void make_tenant(const char *slug)
{
    must(req("POST", "/api/v1/tenants", harness_srv.admin_token,
             fmt("{\"slug\":\"%s\",\"name\":\"Tenant %s\"}", slug, slug)),
         201, "create tenant");
}

void make_member(const char *tenant, const char *username, const char *role)
{
    must(req("PUT", fmt("/api/v1/tenants/%s/members/%s", tenant, username), harness_srv.admin_token,
             fmt("{\"role\":\"%s\"}", role)),
         200, "put member");
}

char *make_member_login(const char *tenant, const char *username, const char *role)
{
    char pw[128];
    snprintf(pw, sizeof pw, "%s-password-1", username);
    make_user(username, pw, NULL);
    make_member(tenant, username, role);
    return login(username, pw);
}

void make_project(const char *tenant, const char *slug)
{
    must(req("POST", fmt("/api/v1/tenants/%s/projects", tenant), harness_srv.admin_token,
             fmt("{\"slug\":\"%s\",\"name\":\"Project %s\"}", slug, slug)),
         201, "create project");
}

char *make_token(const char *token, const char *scopes_json, const char *tenant)
{
    const char *b =
        tenant ? fmt("{\"name\":\"t\",\"scopes\":%s,\"tenant\":\"%s\"}", scopes_json, tenant)
               : fmt("{\"name\":\"t\",\"scopes\":%s}", scopes_json);
    struct http_res r;
    must(reqj("POST", "/api/v1/tokens", token, b, &r), 201, "create token");
    char *secret = strdup(json_string_value(json_object_get(r.json, "token")));
    http_res_free(&r);
    return secret;
}

const char *fmt(const char *f, ...)
{
    static _Thread_local char bufs[8][4096];
    static _Thread_local int next;
    char *b = bufs[next++ % 8];
    va_list ap;
    va_start(ap, f);
    vsnprintf(b, sizeof bufs[0], f, ap);
    va_end(ap);
    return b;
}

const char *qesc(const char *s)
{
    static char bufs[4][1024];
    static int next;
    char *b = bufs[next++ % 4];
    size_t o = 0;
    for (const unsigned char *p = (const unsigned char *)s; *p && o + 4 < sizeof bufs[0]; p++) {
        if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
            strchr("-._~", *p))
            b[o++] = (char)*p;
        else
            o += (size_t)snprintf(b + o, sizeof bufs[0] - o, "%%%02X", *p);
    }
    b[o] = '\0';
    return b;
}

void expect_problem(const struct http_res *r, const char *code, const char *name, const char *value)
{
    const char *got_code = json_string_value(json_object_get(r->json, "code"));
    ck_assert_msg(got_code && strcmp(got_code, code) == 0, "not %s: %s", code,
                  r->body ? r->body : "(no body)");
    if (!name)
        return;
    const json_t *v = json_object_get(json_object_get(r->json, "params"), name);
    char num[32];
    const char *got = json_string_value(v);
    if (json_is_integer(v)) {
        snprintf(num, sizeof num, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
        got = num;
    }
    ck_assert_msg(got && strcmp(got, value) == 0, "%s: params.%s is not %s: %s", code, name, value,
                  r->body ? r->body : "(no body)");
}

int http_dial(const struct aidc_server *s, int timeout_s)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    ck_assert_int_ge(fd, 0);
    struct timeval tv = {.tv_sec = timeout_s};
    if (timeout_s > 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)s->port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ck_assert_int_eq(connect(fd, (struct sockaddr *)&a, sizeof a), 0);
    return fd;
}
