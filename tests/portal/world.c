/*
 * world.c - the world the portal's browser tests (tests/portal/specs) run in:
 * a fresh database and a real aidcd (tests/support/harness.c), seeded through
 * the REST API the way an operator would (second-admin approvals included),
 * and through SQL only where the API cannot: one finished run of last month,
 * metered before the world is announced.
 *
 * Interactive sessions run for real: the local cluster runs jobs in its bwrap
 * sandbox, where a session's app gets its own network (slirp4netns) and a port
 * forwarded for aidcd's sessions relay, which serves on an origin of its own
 * ("sessions_origin" below); a notebook is the host's Jupyter (Debian's
 * jupyter-notebook).
 *
 * Protocol with tests/portal/global-setup.js: once seeded, one line
 *   AIDC_WORLD {"base":..., "sessions_origin":..., "password":..., "users":{...}, ...}
 * on stdout; then it blocks until stdin reaches EOF (or SIGTERM/SIGINT),
 * stops aidcd and drops the database. The exit status is the harness's
 * verdict on aidcd (non-zero when it exited badly or left a sanitizer report),
 * so a server that crashed under the browser fails the e2e test.
 *
 * Exits 77 (skipped) without a test PostgreSQL (AIDC_TEST_APP_URL).
 */
#include "tests/support/audittest.h"
#include "tests/support/client.h"
#include "tests/support/harness.h"
#include "tests/support/jobs.h"
#include "tests/support/pgextra.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* every seeded user's password (the policy: at least 10 characters) */
#define PW "Portal-pass-2026"
/* AIDC_LOGIN_MAX_FAILURES below: the smoke spec's throttling test counts on it */
#define MAX_FAILURES 5

static char *tok2; /* admin2's JWT: the second admin who approves */

/* method path as token must answer want: its JSON (new reference, may be NULL) */
static json_t *api(const char *token, const char *method, const char *path, const char *body,
                   long want)
{
    struct http_res r;
    long st = reqj(method, path, token, body, &r);
    if (st != want) {
        fprintf(stderr, "world: %s %s answered %ld (want %ld): %.500s\n", method, path, st, want,
                r.body ? r.body : "");
        http_res_free(&r);
        audittest_setup_fail("seeding the world");
    }
    json_t *out = json_incref(r.json);
    http_res_free(&r);
    return out;
}

/*
 * As the admin: method path body; when it waits for a second admin's approval
 * (202), admin2 approves it. Either way the operation's own status must be want.
 */
static void approved(const char *method, const char *path, const char *body, long want)
{
    struct http_res r;
    long st = reqj(method, path, harness_srv.admin_token, body, &r);
    const char *id = jstr(json_object_get(r.json, "approval"), "id");
    if (st == 202 && id) {
        json_t *a = api(tok2, "POST", fmt("/api/v1/approvals/%s/approve", id), NULL, 200);
        st = (long)json_integer_value(json_object_get(json_object_get(a, "result"), "status"));
        json_decref(a);
    }
    if (st != want) {
        fprintf(stderr, "world: %s %s (approved) ended %ld (want %ld): %.500s\n", method, path, st,
                want, r.body ? r.body : "");
        http_res_free(&r);
        audittest_setup_fail("seeding the world");
    }
    http_res_free(&r);
}

static void user(const char *name, const char *display, const char *roles)
{
    approved("POST", "/api/v1/users",
             fmt("{\"username\":\"%s\",\"password\":\"" PW "\",\"display_name\":\"%s\","
                 "\"email\":\"%s@example.edu\"%s%s}",
                 name, display, name, roles ? ",\"roles\":" : "", roles ? roles : ""),
             roles ? 200 : 201); /* with roles: the approved grant is a PATCH */
}

/*
 * A finished job of alice in physics/qcd with one closed run (1 x a100, 4
 * cores, 16 GiB, start to end), as the syncer would have recorded it: the API
 * cannot make the past. Its job id into id.
 */
static void past_run(const char *start, const char *end, char id[40])
{
    const char *p[2] = {start, end};
    PGresult *r = harness_sql(
        harness_srv.owner_url,
        "WITH j AS (INSERT INTO jobs (tenant_id, project_id, user_id, username, name, state, gpus,"
        "   gpu_type, cpus, memory_gib, command, submitted_at, started_at, finished_at)"
        "  SELECT t.id, p.id, u.id, u.username, 'qcd-baseline', 'succeeded', 1, 'a100', 4, 16,"
        "         '[\"python\",\"qcd.py\"]', $1::timestamptz - interval '2 minutes',"
        "         $1::timestamptz, $2::timestamptz"
        "    FROM tenants t JOIN projects p ON p.tenant_id = t.id, users u"
        "   WHERE t.slug = 'physics' AND p.slug = 'qcd' AND u.username = 'alice' RETURNING *),"
        " r AS (INSERT INTO job_runs (job_id, tenant_id, project_id, gpus, gpu_type, cpus,"
        "   memory_gib, started_at, ended_at, cluster_id)"
        "  SELECT id, tenant_id, project_id, gpus, gpu_type, cpus, memory_gib, started_at,"
        "         finished_at, (SELECT id FROM clusters WHERE name = 'local') FROM j RETURNING job_id)"
        " SELECT job_id FROM r",
        2, p);
    if (!r || PQntuples(r) != 1)
        audittest_setup_fail("inserting last month's run");
    snprintf(id, 40, "%s", PQgetvalue(r, 0, 0));
    PQclear(r);
}

/* Wait (60 s) for the first sync of registry name; whether it went well. */
static bool synced(const char *name, const char *url)
{
    for (double until = audittest_now() + 60; audittest_now() < until; audittest_nap()) {
        json_t *g = api(harness_srv.admin_token, "GET", fmt("/api/v1/registries/%s", name), NULL,
                        200);
        bool idle = audittest_str_is(jstr(g, "sync_state"), "idle") &&
                    json_is_string(json_object_get(g, "last_sync_at"));
        bool ok = json_is_true(json_object_get(g, "last_sync_ok"));
        json_decref(g);
        if (idle) {
            if (!ok)
                fprintf(stderr, "world: the sync of registry %s (%s) failed\n", name, url);
            return ok;
        }
    }
    fprintf(stderr, "world: registry %s (%s) did not sync within 60 s\n", name, url);
    return false;
}

static char lab_dir[128];

/*
 * A registry of the world's own, "lab", with one image the local executor
 * really runs: physics/pytorch:2.4 (Debian's static busybox under PyTorch's
 * labels), physics's by the registry's tenant prefix. Its reference (host
 * included) into ref, or false when no registry could start here.
 */
static bool lab(char *ref, size_t refsz)
{
    if (access("/usr/bin/docker-registry", X_OK) != 0)
        return false;
    int port = pgextra_free_port();
    snprintf(lab_dir, sizeof lab_dir, "/tmp/aidc-portal-registry-%d", (int)getpid());
    char cmd[1024];
    snprintf(cmd, sizeof cmd,
             "REGISTRY_DIR=%s REGISTRY_ADDR=127.0.0.1:%d '%s/deploy/registry-up.sh' >/dev/null && "
             "REGISTRY_URL=http://127.0.0.1:%d '%s/tests/support/registry-push.sh' push "
             "physics/pytorch 2.4 --busybox --label framework=pytorch "
             "--label org.opencontainers.image.title='PyTorch 2.4' >/dev/null",
             lab_dir, port, AIDC_SOURCE_DIR, port, AIDC_SOURCE_DIR);
    if (system(cmd) != 0) { /* NOLINT(cert-env33-c): the test's own scripts */
        fprintf(stderr, "world: the registry lab did not start (%s)\n", lab_dir);
        return false;
    }
    const char *url = fmt("http://127.0.0.1:%d", port);
    json_decref(api(harness_srv.admin_token, "POST", "/api/v1/registries",
                    fmt("{\"name\":\"lab\",\"url\":\"%s\"}", url), 201));
    snprintf(ref, refsz, "127.0.0.1:%d/physics/pytorch:2.4", port);
    return synced("lab", url);
}

static void lab_down(void)
{
    char cmd[512];
    snprintf(cmd, sizeof cmd, "REGISTRY_DIR=%s '%s/deploy/registry-down.sh' --purge >/dev/null 2>&1",
             lab_dir, AIDC_SOURCE_DIR);
    if (lab_dir[0] && system(cmd) != 0) /* NOLINT(cert-env33-c) */
        fprintf(stderr, "world: could not stop the registry in %s\n", lab_dir);
}

/* With the test registry of tests/run.sh: register it as "hub" and wait for its first sync. */
static bool hub(void)
{
    const char *url = getenv("AIDC_TEST_REGISTRY_URL");
    if (!url || !url[0])
        return false;
    json_decref(api(harness_srv.admin_token, "POST", "/api/v1/registries",
                    fmt("{\"name\":\"hub\",\"url\":\"%s\",\"options\":{\"public_prefixes\":"
                        "[\"pytorch/\",\"tensorflow/\"]}}",
                        url),
                    201));
    return synced("hub", url); /* optional: the world goes on without public images */
}

static volatile sig_atomic_t stop;
static void on_signal(int sig)
{
    (void)sig;
    stop = 1;
}

int main(void)
{
    harness_require_pg();
    char keydir[128], key[256], pub[256], env_key[600], portal[600] = "";
    audittest_key("portal", keydir, sizeof keydir, key, sizeof key, pub, sizeof pub, env_key,
                  sizeof env_key);
    /* the harness serves the checkout's portal/ unless run-e2e.sh names another */
    if (getenv("AIDC_PORTAL_DIR"))
        snprintf(portal, sizeof portal, "AIDC_PORTAL_DIR=%s", getenv("AIDC_PORTAL_DIR"));
    const char *env[] = {
        env_key,
        "AIDC_SYNC_INTERVAL_MS=200", /* jobs the specs submit move in well under a second */
        "AIDC_ADMISSION_INTERVAL_MS=500",
        "AIDC_INVENTORY_INTERVAL_SECONDS=5",
        "AIDC_PREEMPT_GRACE_SECONDS=2",
        "AIDC_AUDIT_SEAL_GRACE_MS=100", /* audit events are chained and signed quickly */
        "AIDC_AUDIT_CHECKPOINT_SECONDS=2",
        "AIDC_REGISTRY_SYNC_SECONDS=0", /* syncs only when asked */
        /* as in production: raising a guaranteed quota waits for a second admin */
        "AIDC_APPROVAL_QUOTA_THRESHOLD=0",
        "AIDC_LOGIN_MAX_FAILURES=5",
        /* the client secret of the single sign-on spec's provider (sso.spec.js) */
        "AIDC_TEST_SSO_SECRET=aidc-test-secret",
        /* every browser comes from 127.0.0.1: only the per-user throttle may bite */
        "AIDC_LOGIN_MAX_FAILURES_PER_IP=100000",
        /* a session whose app never answers ends with the reason within the spec's wait */
        "AIDC_SESSIONS_READY_SECONDS=90",
        portal[0] ? portal : NULL,
        NULL};
    harness_setup("portal", env);
    if (harness_srv.sessions_port <= 0) /* the harness gives the relay a free port */
        audittest_setup_fail("aidcd's sessions relay did not listen");
    jobs_reap_at_exit(); /* job processes the specs leave running die with the world */

    /* admin2: a platform admin only an operator can make (granting one needs another) */
    const char *bargs[] = {"bootstrap", "--admin", "admin2", NULL};
    const char *benv[] = {"AIDC_ADMIN_PASSWORD=" PW, NULL};
    char out[400];
    snprintf(out, sizeof out, "%s/bootstrap-admin2.log", harness_srv.data_dir);
    if (harness_run_aidcd(&harness_srv, bargs, benv, out) != 0)
        audittest_setup_fail("aidcd bootstrap --admin admin2");
    if (!(tok2 = login("admin2", PW)))
        audittest_setup_fail("logging in as admin2");

    user("alice", "Alice Wang", NULL);
    user("tom", "Tom Li", NULL);
    user("bob", "Bob Chen", NULL);
    user("carol", "Carol Zhao", NULL);
    user("fiona", "Fiona Sun", "[\"finance\"]");
    user("audrey", "Audrey Xu", "[\"auditor\"]");

    const char *adm = harness_srv.admin_token;
    /* sessions need the sandbox (an unconfined cluster refuses them): said, not defaulted */
    json_decref(api(adm, "POST", "/api/v1/clusters",
                    "{\"name\":\"local\",\"kind\":\"local\",\"options\":{\"gpus\":{\"a100\":2,"
                    "\"t4\":2},\"cpus\":16,\"memory_gib\":64,\"sandbox\":\"bwrap\"}}",
                    201));
    json_decref(api(adm, "POST", "/api/v1/tenants",
                    "{\"slug\":\"physics\",\"name\":\"Physics\"}", 201));
    json_decref(api(adm, "POST", "/api/v1/tenants",
                    "{\"slug\":\"chem\",\"name\":\"Chemistry\"}", 201));
    json_decref(api(adm, "POST", "/api/v1/tenants/physics/projects",
                    "{\"slug\":\"qcd\",\"name\":\"QCD simulations\"}", 201));
    json_decref(api(adm, "POST", "/api/v1/tenants/physics/projects",
                    "{\"slug\":\"lattice\",\"name\":\"Lattice\"}", 201));
    json_decref(api(adm, "POST", "/api/v1/tenants/chem/projects",
                    "{\"slug\":\"md\",\"name\":\"Molecular dynamics\"}", 201));
    json_decref(api(adm, "PUT", "/api/v1/tenants/physics/members/alice",
                    "{\"role\":\"member\"}", 200));
    json_decref(api(adm, "PUT", "/api/v1/tenants/physics/members/tom",
                    "{\"role\":\"tenant_admin\"}", 200));
    json_decref(api(adm, "PUT", "/api/v1/tenants/chem/members/carol",
                    "{\"role\":\"member\"}", 200));
    /* physics owns the GPUs; chem has no guarantee and may only borrow */
    approved("PUT", "/api/v1/tenants/physics/quota",
             "{\"resources\":{\"gpu:a100\":{\"guaranteed\":2,\"limit\":2},"
             "\"gpu:t4\":{\"guaranteed\":2,\"limit\":2},\"gpu_hours_month\":{\"limit\":1000}}}",
             200);
    approved("PUT", "/api/v1/tenants/chem/quota",
             "{\"resources\":{\"gpu:a100\":{\"guaranteed\":0,\"limit\":2},"
             "\"gpu:t4\":{\"guaranteed\":0,\"limit\":2}}}",
             200);

    /* last month: prices from its first day, and 10 GPU-hours of alice in it */
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    int year = tm.tm_year + 1900, month = tm.tm_mon; /* last month, 1-based */
    if (month == 0) {
        month = 12;
        year--;
    }
    char last_month[16], from[32], start[32], end[32], job[40];
    snprintf(last_month, sizeof last_month, "%04d-%02d", year, month);
    snprintf(from, sizeof from, "%s-01T00:00:00Z", last_month);
    snprintf(start, sizeof start, "%s-10T08:00:00Z", last_month);
    snprintf(end, sizeof end, "%s-10T18:00:00Z", last_month);
    static const char *const prices[][2] = {
        {"gpu:a100", "8.00"}, {"cpu", "0.05"}, {"memory_gib", "0.01"}};
    for (size_t i = 0; i < sizeof prices / sizeof prices[0]; i++)
        approved("POST", "/api/v1/prices",
                 fmt("{\"resource\":\"%s\",\"unit_price\":\"%s\",\"currency\":\"CNY\","
                     "\"effective_from\":\"%s\"}",
                     prices[i][0], prices[i][1], from),
                 201);
    past_run(start, end, job);

    /* tom registers the tenant's own image (no registry: metadata only) */
    char *tom = login("tom", PW);
    if (!tom)
        audittest_setup_fail("logging in as tom");
    json_t *img = api(tom, "POST", "/api/v1/tenants/physics/images",
                      "{\"repository\":\"physics/pytorch\",\"tag\":\"2.3\",\"digest\":\"sha256:"
                      "5e1f0c6b9d2a47e88f3c1a0b7d6e5f4a3b2c1d0e9f8a7b6c5d4e3f2a1b0c9d8e\","
                      "\"size_bytes\":4831838208,\"labels\":{\"framework\":\"pytorch\","
                      "\"org.opencontainers.image.title\":\"PyTorch 2.3\"}}",
                      201);
    free(tom);
    bool have_hub = hub();
    char runnable[160];
    bool have_lab = lab(runnable, sizeof runnable);
    if (!audittest_wait_metered(60))
        audittest_setup_fail("the metering worker did not meter last month's run");

    json_t *w = json_pack(
        "{s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:i,"
        " s:{s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:s},"
        " s:{s:O, s:O, s:O}, s:s?, s:s?,"
        " s:{s:s, s:s, s:s, s:s, s:s, s:s, s:i, s:i, s:i, s:s}}",
        "base", harness_srv.base, "sessions_origin", harness_srv.sessions_base, "password", PW, "admin_password", ADMIN_PASSWORD, "owner_url",
        harness_srv.owner_url, "log", harness_srv.log_path, "last_month", last_month,
        "login_max_failures", MAX_FAILURES,
        "users", "admin", "platform_admin", "admin2", "platform_admin", "alice", "member@physics",
        "tom", "tenant_admin@physics", "bob", "none", "carol", "member@chem", "fiona", "finance",
        "audrey", "auditor",
        "image", "id", json_object_get(img, "id"), "repository", json_object_get(img, "repository"),
        "digest", json_object_get(img, "digest"),
        "registry", have_hub ? "hub" : NULL, "runnable_image", have_lab ? runnable : NULL,
        "past_run", "job_id", job, "tenant", "physics", "project", "qcd", "user", "alice", "start",
        start, "end", end, "gpu_hours", 10, "core_hours", 40, "gib_hours", 160, "cost_cny", "83.60");
    json_decref(img);
    char *text = w ? json_dumps(w, JSON_COMPACT) : NULL;
    json_decref(w);
    if (!text)
        audittest_setup_fail("writing the world's JSON");
    printf("AIDC_WORLD %s\n", text);
    fflush(stdout);
    free(text);

    /* serve until the test runner closes our stdin (or stops us) */
    struct sigaction sa = {0};
    sa.sa_handler = on_signal; /* no SA_RESTART: read() returns EINTR */
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    char buf[256];
    while (!stop) {
        ssize_t n = read(0, buf, sizeof buf);
        if (n == 0 || (n < 0 && errno != EINTR))
            break;
    }
    free(tok2);
    audittest_key_remove(keydir);
    lab_down();
    harness_teardown(); /* exits 1 when aidcd exited badly or left a sanitizer report */
    return 0;
}
