/*
 * test_permissions_sessions.c - the permission matrix of interactive sessions
 * (docs/sessions.md): every actor of tests/support/permfixture.h against the
 * routes that split_routes (permissions_fixture.h) gives to this program, on
 * its own tenant and on another one. These rows belong to the matrix of
 * test_permissions_matrix.c and follow its conventions (expectations written
 * by hand from the route table and the handlers' rules, not from what the
 * server answers; objects of another tenant answer 404; refusals are
 * problem+json without the tenant's name or id).
 *
 * A session is its job (api/appsessions.c): the route table lets members and
 * platform admins start, stop, extend and open sessions (jobs:write) and
 * viewers, finance and auditors read them too (jobs:read). The fixture's
 * tokens hold only jobs:read (and admin): they read and are refused every
 * change. Beyond the table, the handlers' own rules:
 *   - a member sees only its own sessions, as its own jobs (RLS of migration
 *     0019; members_see_all_jobs is off here);
 *   - stop and extend: the owner, the tenant's admins and platform admins;
 *   - open: only the owner or a platform admin (app_session.not_owner).
 * And the contract's: a route a role may not use answers 403 when the
 * session is visible to the caller, 404 when it is not. (The handlers' 403
 * job.cancel_not_owner of stop and extend needs a member that sees another's
 * session, a tenant with members_see_all_jobs on: not this fixture's.)
 *
 * Every cell that needs a session gets a new one, started for it in the
 * tenant's project "held" (its quota admits no job, so the session stays
 * queued: stop, extend and open work on a queued session all the same). The
 * reads use a session of the column's tenant admin (a member must not see
 * it); stop, extend and open a session of a member in tenant "own" (so the
 * owner, the tenant admin and the platform admins each take their own way
 * through the handler) and of the tenant admin in "other" (its only user).
 * What a 2xx did is checked: the session started, listed, stopped, its job's
 * limit extended, and its link spent at the relay (a 302 and its cookie).
 */
#include "server/router.h"

#include "tests/http/permissions_fixture.h"
#include "tests/support/client.h"
#include "tests/support/harness.h"
#include "tests/support/mismatch.h"
#include "tests/support/permfixture.h"
#include "tests/support/permrun.h"
#include "tests/support/secrets.h"

#include <check.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* What a cell's session is given, and what extending it adds. */
#define LIMIT_MINUTES    "60"
#define EXTEND_MINUTES   5
#define EXTENDED_MINUTES "65"

enum kind { K_CREATE, K_LIST, K_GET, K_STOP, K_EXTEND, K_OPEN };

/* clang-format off */
static const struct permrun_row rows[] = {
    /*                                            ADM  PA   FIN  AUD  TA   MEM  VIEW FOR  NOM  ANON TKNA TKAD TKTN CKNH CKH */
    /* as a job's submit: no token has jobs:write (admin does not imply it), and the scope
     * check comes before the tenant's */
    {"POST", "/api/v1/tenants/{tenant}/sessions", K_CREATE,
        {201, 201, 403, 403, 201, 201, 403, 404, 404, 401, 403, 403, 403, 403, 201},
        {201, 201, 403, 403, 404, 404, 404, 201, 404, 401, 403, 403, 403, 403, 404}},
    /* the tenant admin's session is in every list that answers 200 but the member's */
    {"GET", "/api/v1/tenants/{tenant}/sessions", K_LIST,
        {200, 200, 200, 200, 200, 200, 200, 404, 404, 401, 200, 200, 200, 200, 200},
        {200, 200, 200, 200, 404, 404, 404, 200, 404, 401, 404, 404, 404, 404, 404}},
    /* the tenant admin's session: a member reads only its own (404: not there for it) */
    {"GET", "/api/v1/tenants/{tenant}/sessions/{id}", K_GET,
        {200, 200, 200, 200, 200, 404, 200, 404, 404, 401, 200, 200, 200, 200, 200},
        {200, 200, 200, 200, 404, 404, 404, 200, 404, 401, 404, 404, 404, 404, 404}},
    /* own: the member's session, stopped by its owner, the tenant admin and platform
     * admins; the viewer sees it and may not (403). other: its tenant admin's */
    {"POST", "/api/v1/tenants/{tenant}/sessions/{id}/stop", K_STOP,
        {202, 202, 403, 403, 202, 202, 403, 404, 404, 401, 403, 403, 403, 403, 202},
        {202, 202, 403, 403, 404, 404, 404, 202, 404, 401, 403, 403, 403, 403, 404}},
    /* the same sessions and the same rule as stop */
    {"POST", "/api/v1/tenants/{tenant}/sessions/{id}/extend", K_EXTEND,
        {200, 200, 403, 403, 200, 200, 403, 404, 404, 401, 403, 403, 403, 403, 200},
        {200, 200, 403, 403, 404, 404, 404, 200, 404, 401, 403, 403, 403, 403, 404}},
    /* the same sessions: only the owner and platform admins enter; the tenant admin sees
     * the member's session and may not (403 app_session.not_owner, its cookie too) */
    {"POST", "/api/v1/tenants/{tenant}/sessions/{id}/open", K_OPEN,
        {200, 200, 403, 403, 403, 200, 403, 404, 404, 401, 403, 403, 403, 403, 403},
        {200, 200, 403, 403, 404, 404, 404, 200, 404, 401, 403, 403, 403, 403, 404}},
};
/* clang-format on */
#define NROWS (sizeof rows / sizeof rows[0])

/* The member's own session in "own" (setup): the member's list must show it. */
static char member_session[64];

static const char *sessions_path(int t)
{
    return fmt("/api/v1/tenants/%s/sessions", tenants[t].slug);
}

/* The owner of the cell's session: the reads use the tenant admin's, the changes a
 * member's (in "own"; "other" has no member). */
static int owner_of(const struct permrun_cell *c)
{
    if (c->t == 1)
        return A_FOREIGN;
    return c->r->kind == K_LIST || c->r->kind == K_GET ? A_TA : A_MEM;
}

/*
 * As actor owner, start a queued session named name in tenant t: true with its
 * id in id and its job's id in job; false with why in why.
 */
static bool new_session(int owner, int t, const char *name, char *id, size_t idn, char *job,
                        size_t jobn, char *why, size_t whyn)
{
    char body[256];
    snprintf(body, sizeof body,
             "{\"project\":\"%s\",\"name\":\"%s\",\"app\":\"web\",\"command\":[\"true\"],"
             "\"time_limit_minutes\":" LIMIT_MINUTES "}",
             HELD_PROJECT, name);
    struct http_res r;
    long st = reqj("POST", sessions_path(t), actors[owner].user_jwt, body, &r);
    const char *sid = jstr(r.json, "id");
    const char *jid = jstr(json_object_get(r.json, "job"), "id");
    const char *state = jstr(r.json, "state");
    bool ok = st == 201 && sid && jid && state && strcmp(state, "queued") == 0;
    if (ok) {
        snprintf(id, idn, "%s", sid);
        snprintf(job, jobn, "%s", jid);
    } else {
        snprintf(why, whyn, "starting a session as %s in %s answered %ld: %.300s",
                 actors[owner].label, tenants[t].slug, st, r.body ? r.body : "");
    }
    http_res_free(&r);
    return ok;
}

static void prep(struct permrun_cell *c)
{
    char base[128], id[64], job[64];
    snprintf(base, sizeof base, "%s", sessions_path(c->t));
    if (c->r->kind == K_CREATE) {
        snprintf(c->path, sizeof c->path, "%s", base);
        snprintf(c->body, sizeof c->body,
                 "{\"project\":\"%s\",\"name\":\"%s\",\"app\":\"web\",\"command\":[\"true\"]}",
                 HELD_PROJECT, c->tag);
        snprintf(c->check, sizeof c->check, "/api/v1/tenants/%s/jobs?project=%s&limit=1000",
                 tenants[c->t].slug, HELD_PROJECT);
        return;
    }
    char why[500];
    bool made =
        new_session(owner_of(c), c->t, c->tag, id, sizeof id, job, sizeof job, why, sizeof why);
    ck_assert_msg(made, "%s", why);
    snprintf(c->check, sizeof c->check, "%s/%s", base, id);
    switch ((enum kind)c->r->kind) {
    case K_CREATE: /* prepared above */
        break;
    case K_LIST:
        snprintf(c->path, sizeof c->path, "%s?limit=1000", base);
        break;
    case K_GET:
        snprintf(c->path, sizeof c->path, "%s/%s", base, id);
        break;
    case K_STOP:
        snprintf(c->path, sizeof c->path, "%s/%s/stop", base, id);
        snprintf(c->before, sizeof c->before, "queued");
        break;
    case K_EXTEND:
        snprintf(c->path, sizeof c->path, "%s/%s/extend", base, id);
        snprintf(c->body, sizeof c->body, "{\"minutes\":%d}", EXTEND_MINUTES);
        /* what changes is the job's limit: check reads the job */
        snprintf(c->check, sizeof c->check, "/api/v1/tenants/%s/jobs/%s", tenants[c->t].slug, job);
        snprintf(c->before, sizeof c->before, LIMIT_MINUTES);
        break;
    case K_OPEN:
        snprintf(c->path, sizeof c->path, "%s/%s/open", base, id);
        break;
    }
}

/* The session id at the end of c->check ("…/sessions/<id>"). */
static const char *cell_session(const struct permrun_cell *c)
{
    const char *slash = strrchr(c->check, '/');
    return slash ? slash + 1 : "";
}

static void verify_create(const struct permrun_cell *c, long got, const struct http_res *res)
{
    bool there = list_has(harness_srv.admin_token, c->check, "name", c->tag);
    if (there != is_2xx(got))
        note("%s: answered %ld, and the session's job %s", c->what, got,
             there ? "exists" : "does not exist");
    if (got != 201)
        return;
    const char *id = jstr(res->json, "id"), *user = jstr(res->json, "user");
    if (!id || !user || strcmp(user, actors[c->a].user) != 0)
        note("%s: 201 is not a session of %s: %s", c->what, actors[c->a].user,
             res->body ? res->body : "");
    else if (adm_status(fmt("%s/%s", sessions_path(c->t), id)) != 200)
        note("%s: 201, but the admin does not find session %s", c->what, id);
}

/* 200: the tenant admin's session is listed, but to the member, which lists its own. */
static void verify_list(const struct permrun_cell *c, long got, const struct http_res *res)
{
    if (got != 200)
        return;
    if (!json_is_array(json_object_get(res->json, "items"))) {
        note("%s: 200 without items: %s", c->what, res->body ? res->body : "");
        return;
    }
    bool member = c->a == A_MEM;
    if (items_have(res, "id", cell_session(c)) == member)
        note("%s: the tenant admin's session %s is %s", c->what, cell_session(c),
             member ? "listed to a member" : "not listed");
    if (member && !items_have(res, "id", member_session))
        note("%s: the member's own session %s is not listed", c->what, member_session);
}

static void verify_open(const struct permrun_cell *c, long got, const struct http_res *res)
{
    /* the tenant admin passes the route and sees the session: the handler refuses it */
    if (got == 403 && c->t == 0 && (c->a == A_TA || c->a == A_COOKIE_XRW)) {
        const char *code = jstr(res->json, "code");
        if (!code || strcmp(code, "app_session.not_owner") != 0)
            note("%s: 403 is not app_session.not_owner: %s", c->what, res->body ? res->body : "");
    }
    if (got != 200)
        return;
    const char *url = jstr(res->json, "url");
    char prefix[128];
    snprintf(prefix, sizeof prefix, "%s/_aidc/open?key=", harness_srv.sessions_base);
    if (!url || strncmp(url, prefix, strlen(prefix)) != 0 || jint(res->json, "expires_in") != 60) {
        note("%s: 200 is not a link into the relay: %s", c->what, res->body ? res->body : "");
        return;
    }
    secrets_note(url + strlen(prefix));
    /* the link works: the relay spends it for this session (its cookie, then the app) */
    struct aidc_server relay = harness_srv;
    snprintf(relay.base, sizeof relay.base, "%s", harness_srv.sessions_base);
    struct http_res r;
    long st = http_do(&relay, "GET", url + strlen(harness_srv.sessions_base), NULL, NULL, NULL, &r);
    char *loc = http_header(&r, "Location");
    char *cookie = http_set_cookie(&r, "aidc_app");
    if (st != 302 || !loc || !strstr(loc, fmt("/sessions/%s/", cell_session(c))) || !cookie)
        note("%s: the link answered %ld (Location %s, %s cookie)", c->what, st, loc ? loc : "none",
             cookie ? "a" : "no");
    free(loc);
    free(cookie);
    http_res_free(&r);
}

static void verify(const struct permrun_cell *c, long got, const struct http_res *res)
{
    switch ((enum kind)c->r->kind) {
    case K_CREATE:
        verify_create(c, got, res);
        break;
    case K_LIST:
        verify_list(c, got, res);
        break;
    case K_GET: {
        const char *id = jstr(res->json, "id"), *user = jstr(res->json, "user");
        if (got == 200 && (!id || strcmp(id, cell_session(c)) != 0 || !user ||
                           strcmp(user, actors[owner_of(c)].user) != 0))
            note("%s: 200 is not the session: %s", c->what, res->body ? res->body : "");
        if (got == 200 && json_object_get(res->json, "secret"))
            note("%s: 200 shows the app's secret", c->what);
        break;
    }
    case K_STOP: {
        check_changed(c, got, c->check, "state", "ended");
        char *why = adm_field(c->check, "reason");
        const char *want = fmt("stopped by %s", actors[c->a].user);
        if (got == 202 && (!why || strcmp(why, want) != 0))
            note("%s: stopped, but the reason is \"%s\", not \"%s\"", c->what, why ? why : "",
                 want);
        free(why);
        break;
    }
    case K_EXTEND: {
        struct http_res r;
        char now[32] = "";
        if (adm("GET", c->check, NULL, &r) == 200)
            snprintf(now, sizeof now, "%lld",
                     jint(json_object_get(r.json, "resources"), "time_limit_minutes"));
        http_res_free(&r);
        check_value(c, got, "the job's resources.time_limit_minutes", now[0] ? now : NULL,
                    EXTENDED_MINUTES);
        break;
    }
    case K_OPEN:
        verify_open(c, got, res);
        break;
    }
}

/* The column of a cell, for messages: the tenant and whose session. */
static const char *column(const struct permrun_cell *c)
{
    if (c->r->kind == K_CREATE)
        return c->t ? "tenant other" : "tenant own";
    return fmt("tenant %s, %s's session", tenants[c->t].slug, actors[owner_of(c)].user);
}

static void setup(void)
{
    char job[64], why[500];
    if (!new_session(A_MEM, 0, "member-own", member_session, sizeof member_session, job, sizeof job,
                     why, sizeof why)) {
        fprintf(stderr, "test setup: %s\n", why);
        harness_teardown();
        exit(1);
    }
}

static const struct permrun_matrix this_matrix = {
    .file = SESSIONS_ROWS,
    .tag = "se",
    .rows = rows,
    .nrows = NROWS,
    .split = split_routes,
    .nsplit = NSPLIT_ROUTES,
    .prep = prep,
    .verify = verify,
    .column = column,
};

int main(void)
{
    return permrun_main("permissions_sessions", &this_matrix, setup, NULL);
}
