/*
 * test_replicas.c - three aidcd replicas on one database behind a real nginx
 * (Debian's, on loopback): clients talk to nginx only, the workers lead on
 * one replica at a time. Borrowed jobs run, a tenant within its guarantee
 * reclaims them, CPU jobs are submitted through the proxy all along (with
 * an Idempotency-Key, retried on 502/503 as a CI pipeline would), and the
 * replica leading the workers is killed with SIGKILL in the middle. Then,
 * job by job: every submit made exactly one job, every job ran the runs it
 * should (no admission or delivery twice, no GPU handed out twice), the
 * reclaim completed, the leads moved to the survivors within seconds, and
 * the audit chain still verifies. Login throttling and token revocation
 * hold across replicas. The killed replica comes back as a standby. A newer
 * schema (a rolling upgrade migrated the database) makes them all stand by.
 */
#include "tests/support/client.h"
#include "tests/support/harness.h"
#include "tests/support/jobs.h"
#include "tests/support/suite.h"

#include <arpa/inet.h>
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define NGINX "/usr/sbin/nginx"
#define NREP 3
#define NCPU 12 /* CPU jobs submitted across the kill */

static struct aidc_server rep[NREP];
static bool alive[NREP];
static pid_t nginx_pid;
static char ngdir[300];

static const char *const rep_env[] = {
    "AIDC_SYNC_INTERVAL_MS=100",  "AIDC_ADMISSION_INTERVAL_MS=200", "AIDC_PREEMPT_GRACE_SECONDS=1",
    "AIDC_TRUSTED_PROXIES=127.0.0.1", "AIDC_LOGIN_MAX_FAILURES=3",  "AIDC_AUDIT_SEAL_GRACE_MS=200",
    NULL};

static int free_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t n = sizeof a;
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(bind(fd, (struct sockaddr *)&a, sizeof a), 0);
    ck_assert_int_eq(getsockname(fd, (struct sockaddr *)&a, &n), 0);
    close(fd);
    return ntohs(a.sin_port);
}

static void start_replica(int i)
{
    rep[i] = harness_srv;
    snprintf(rep[i].log_path, sizeof rep[i].log_path, "%s/aidcd-%d.log", harness_srv.data_dir, i);
    /* a restarted replica keeps the log of its first life aside */
    char old[320];
    snprintf(old, sizeof old, "%s.killed", rep[i].log_path);
    (void)rename(rep[i].log_path, old);
    ck_assert_msg(harness_server_start(&rep[i], rep_env) == 0, "replica %d did not start", i);
    alive[i] = true;
}

/* nginx in front of the replicas: round robin, a dead one skipped for idempotent retries */
static void start_nginx(void)
{
    snprintf(ngdir, sizeof ngdir, "%s/nginx", harness_srv.data_dir);
    ck_assert_int_eq(mkdir(ngdir, 0755), 0);
    int port = free_port();
    char conf[400];
    snprintf(conf, sizeof conf, "%s/nginx.conf", ngdir);
    FILE *f = fopen(conf, "w");
    ck_assert_ptr_nonnull(f);
    fprintf(f,
            "daemon off;\nworker_processes 1;\npid %s/nginx.pid;\nerror_log %s/error.log warn;\n"
            "%s"
            "events { worker_connections 512; }\n"
            "http {\n  access_log off;\n"
            "  client_body_temp_path %s/body; proxy_temp_path %s/proxy;\n"
            "  fastcgi_temp_path %s/fcgi; uwsgi_temp_path %s/uwsgi; scgi_temp_path %s/scgi;\n"
            "  upstream aidc {\n",
            ngdir, ngdir, geteuid() == 0 ? "user root;\n" : "", ngdir, ngdir, ngdir, ngdir,
            ngdir);
    for (int i = 0; i < NREP; i++)
        fprintf(f, "    server 127.0.0.1:%d max_fails=1 fail_timeout=2s;\n", rep[i].port);
    fprintf(f,
            "    keepalive 16;\n  }\n"
            "  server {\n    listen 127.0.0.1:%d;\n    client_max_body_size 2m;\n"
            "    location / {\n      proxy_pass http://aidc;\n      proxy_http_version 1.1;\n"
            "      proxy_set_header Connection \"\";\n      proxy_set_header Host $host;\n"
            "      proxy_set_header X-Forwarded-For $remote_addr;\n"
            /* never sends a POST twice: a client retries with its Idempotency-Key */
            "      proxy_next_upstream error timeout http_502;\n"
            "      proxy_connect_timeout 2s;\n      proxy_read_timeout 60s;\n    }\n  }\n}\n",
            port);
    ck_assert_int_eq(fclose(f), 0);
    nginx_pid = fork();
    ck_assert_int_ge(nginx_pid, 0);
    if (nginx_pid == 0) {
        execl(NGINX, NGINX, "-p", ngdir, "-e", "stderr", "-c", conf, (char *)NULL);
        _exit(127);
    }
    snprintf(harness_srv.base, sizeof harness_srv.base, "http://127.0.0.1:%d", port);
    harness_srv.port = port;
    double until = jobs_now() + 20;
    long st = 0;
    while (jobs_now() < until && (st = req("GET", "/healthz", NULL, NULL)) != 200)
        jobs_nap_ms(50);
    ck_assert_msg(st == 200, "nginx did not answer (see %s/error.log)", ngdir);
}

static void stop_nginx(void)
{
    if (nginx_pid <= 0)
        return;
    kill(nginx_pid, SIGTERM);
    int st;
    while (waitpid(nginx_pid, &st, 0) < 0 && errno == EINTR)
        ;
    nginx_pid = 0;
}

/* Which replica reports leading worker (-1: none); *count: how many do. */
static int leader_of(const char *worker, int *count)
{
    char want[96];
    snprintf(want, sizeof want, "\naidc_worker_leader{worker=\"%s\"} 1\n", worker);
    int who = -1, n = 0;
    for (int i = 0; i < NREP; i++) {
        if (!alive[i])
            continue;
        struct http_res r;
        if (http_do(&rep[i], "GET", "/metrics", NULL, NULL, NULL, &r) == 200 && r.body &&
            strstr(r.body, want)) {
            who = i;
            n++;
        }
        http_res_free(&r);
    }
    *count = n;
    return who;
}

static const char *const workers[] = {"admitter", "dispatcher", "syncer",
                                      "meter",    "sealer",     "registry_sync"};
#define NWORKERS (sizeof workers / sizeof workers[0])

/* Wait until every worker has exactly one leader among the live replicas. */
static double wait_one_leader_each(double deadline_s)
{
    double t0 = jobs_now();
    for (;;) {
        size_t ok = 0;
        for (size_t w = 0; w < NWORKERS; w++) {
            int n;
            (void)leader_of(workers[w], &n);
            ck_assert_msg(n <= 1, "%d replicas lead the %s", n, workers[w]);
            ok += n == 1;
        }
        if (ok == NWORKERS)
            return jobs_now() - t0;
        ck_assert_msg(jobs_now() - t0 < deadline_s, "not every worker found a leader in %.0f s",
                      deadline_s);
        jobs_nap_ms(50);
    }
}

/* A CI pipeline's submit: the same Idempotency-Key again after a 502/503 or a cut connection. */
static char *submit_retrying(const char *token, const char *tenant, const char *body,
                             const char *key, int *tries)
{
    char hdr[128];
    snprintf(hdr, sizeof hdr, "Idempotency-Key: %s", key);
    const char *extra[] = {hdr, NULL};
    for (*tries = 1; *tries <= 100; (*tries)++) {
        struct http_res r;
        long st = http_do(&harness_srv, "POST", fmt("/api/v1/tenants/%s/jobs", tenant), token,
                          body, extra, &r);
        if (st == 201 || st == 200) {
            const char *id = json_string_value(json_object_get(r.json, "id"));
            ck_assert_ptr_nonnull(id);
            char *out = strdup(id);
            http_res_free(&r);
            return out;
        }
        ck_assert_msg(st == 0 || st == 502 || st == 503 || st == 504, "submit %s answered %ld: %s",
                      key, st, r.body ? r.body : "");
        http_res_free(&r);
        jobs_nap_ms(100);
    }
    ck_abort_msg("submit %s never went through", key);
    return NULL;
}

static long long db_count(const char *sql, const char *arg)
{
    const char *p[1] = {arg};
    PGresult *r = harness_sql(harness_srv.owner_url, sql, arg ? 1 : 0, arg ? p : NULL);
    ck_assert_ptr_nonnull(r);
    long long n = atoll(PQgetvalue(r, 0, 0));
    PQclear(r);
    return n;
}

static char *chem, *phys;

static void setup(void)
{
    harness_require_pg();
    signal(SIGPIPE, SIG_IGN);
    harness_db_create(&harness_srv, "replicas");
    jobs_reap_at_exit();
    for (int i = 0; i < NREP; i++)
        start_replica(i); /* one after the other: the first makes the shared session key */
    start_nginx();
    ck_assert(harness_login_admin());
    jobs_local_cluster("{\"a100\":4}");
    chem = jobs_tenant_member("chem", "mol", "{\"gpu:a100\":{\"guaranteed\":2,\"limit\":4}}", "ann");
    phys = jobs_tenant_member("phys", "lab", "{\"gpu:a100\":{\"guaranteed\":2,\"limit\":4}}", "pia");
}

static void teardown(void)
{
    free(chem);
    free(phys);
    stop_nginx();
    bool clean = true;
    for (int i = 0; i < NREP; i++) {
        if (!alive[i])
            continue;
        int st = harness_server_stop(&rep[i]);
        alive[i] = false;
        if (st != 0 || !harness_log_clean(rep[i].log_path)) {
            fprintf(stderr, "replica %d exited with %d, see %s\n", i, st, rep[i].log_path);
            clean = false;
        }
    }
    jobs_kill_leftovers();
    harness_db_drop(&harness_srv);
    ck_assert_msg(clean, "a replica did not stop cleanly");
    harness_remove_tree(harness_srv.data_dir);
}

START_TEST(leader_killed_mid_reclaim)
{
    ck_assert_double_lt(wait_one_leader_each(20), 20);
    int n;
    int leader = leader_of("admitter", &n);
    ck_assert_int_ge(leader, 0);

    /* chem fills its guarantee and borrows the other two GPUs */
    char *c[4];
    for (int i = 0; i < 4; i++)
        c[i] = jobs_submit(chem, "chem",
                           fmt("{\"project\":\"mol\",\"name\":\"c%d\",\"gpus\":1,\"gpu_type\":"
                               "\"a100\",\"command\":[\"sleep\",\"600\"]}",
                               i));
    int borrowed = 0;
    for (int i = 0; i < 4; i++) {
        json_t *j = jobs_wait(chem, "chem", c[i], "running", 60);
        borrowed += json_is_true(json_object_get(j, "preemptible"));
        json_decref(j);
    }
    ck_assert_int_eq(borrowed, 2);

    /* phys, within its guarantee, needs the borrowed GPUs back; CPU jobs keep coming */
    char *p[2], *cpu[NCPU];
    int tries = 0, retried = 0;
    for (int i = 0; i < 2; i++)
        p[i] = jobs_submit(phys, "phys",
                           fmt("{\"project\":\"lab\",\"name\":\"p%d\",\"gpus\":1,\"gpu_type\":"
                               "\"a100\",\"command\":[\"sleep\",\"600\"]}",
                               i));
    for (int i = 0; i < NCPU; i++) {
        if (i == 2) {
            /* the leader dies in the middle of the reclaim: no goodbye, no drain */
            ck_assert_int_eq(kill(rep[leader].pid, SIGKILL), 0);
            int st;
            ck_assert_int_eq(waitpid(rep[leader].pid, &st, 0), rep[leader].pid);
            rep[leader].pid = 0;
            alive[leader] = false;
        }
        char key[64];
        snprintf(key, sizeof key, "ci-%d-%d", (int)getpid(), i);
        cpu[i] = submit_retrying(chem, "chem",
                                 fmt("{\"project\":\"mol\",\"name\":\"cpu%d\",\"cpus\":1,"
                                     "\"command\":[\"true\"]}",
                                     i),
                                 key, &tries);
        retried += tries > 1;
    }
    double moved = wait_one_leader_each(15);
    printf("leads moved to the survivors in %.2f s; %d submit(s) were retried\n", moved,
           retried);
    ck_assert_int_ne(leader_of("admitter", &n), leader);

    /* job by job */
    for (int i = 0; i < 2; i++) {
        json_t *j = jobs_wait(phys, "phys", p[i], "running", 60);
        ck_assert_int_eq(json_integer_value(json_object_get(j, "preemption_count")), 0);
        json_decref(j);
    }
    int requeued = 0;
    for (int i = 0; i < 4; i++) {
        json_t *j = jobs_get(chem, "chem", c[i]);
        bool pre = json_is_true(json_object_get(j, "preemptible"));
        long long count = json_integer_value(json_object_get(j, "preemption_count"));
        if (count > 0) {
            json_decref(j);
            /* a reclaimed borrower is back in the queue (the GPUs are all taken) */
            j = jobs_wait(chem, "chem", c[i], "queued", 60);
            ck_assert_int_eq(json_integer_value(json_object_get(j, "preemption_count")), 1);
            requeued++;
        } else {
            ck_assert_str_eq(jstr(j, "state"), "running");
            ck_assert(!pre);
        }
        json_decref(j);
    }
    ck_assert_int_eq(requeued, 2);
    for (int i = 0; i < NCPU; i++) {
        json_t *j = jobs_wait(chem, "chem", cpu[i], "succeeded,failed,cancelled", 60);
        ck_assert_str_eq(jstr(j, "state"), "succeeded");
        json_decref(j);
    }
    /* each submit made one job; each job was admitted once per run and ran each run once */
    ck_assert_int_eq(db_count("SELECT count(*) FROM jobs WHERE name LIKE 'cpu%'", NULL), NCPU);
    for (int i = 0; i < NCPU; i++) {
        ck_assert_int_eq(db_count("SELECT count(*) FROM job_events WHERE job_id = $1::uuid"
                                  " AND to_state = 'admitted'", cpu[i]), 1);
        ck_assert_int_eq(db_count("SELECT count(*) FROM job_runs WHERE job_id = $1::uuid",
                                  cpu[i]), 1);
        ck_assert_int_eq(db_count("SELECT count(*) FROM outbox WHERE job_id = $1::uuid"
                                  " AND action = 'submit'", cpu[i]), 1);
    }
    for (int i = 0; i < 4; i++) {
        long long runs = db_count("SELECT count(*) FROM job_runs WHERE job_id = $1::uuid", c[i]);
        long long admits = db_count("SELECT count(*) FROM job_events WHERE job_id = $1::uuid"
                                    " AND to_state = 'admitted'", c[i]);
        ck_assert_int_eq(runs, 1);
        ck_assert_int_eq(admits, 1);
    }
    /* no GPU is held twice: the running jobs' GPU indexes are distinct, four at most */
    ck_assert_int_eq(db_count("SELECT count(*) FROM (SELECT unnest(gpu_indexes) FROM jobs"
                              " WHERE state IN ('admitted', 'pending', 'running')) g", NULL), 4);
    ck_assert_int_eq(db_count("SELECT count(DISTINCT i) FROM (SELECT unnest(gpu_indexes) i FROM"
                              " jobs WHERE state IN ('admitted', 'pending', 'running')) g", NULL),
                     4);
    /* the sealer moved too: the chain still verifies end to end */
    struct http_res r;
    ck_assert_int_eq(reqj("GET", "/api/v1/audit/verify", harness_srv.admin_token, NULL, &r), 200);
    ck_assert_msg(json_is_true(json_object_get(r.json, "ok")), "verify: %s", r.body);
    http_res_free(&r);

    /* the killed replica comes back as a standby */
    start_replica(leader);
    ck_assert_double_lt(wait_one_leader_each(15), 15);
    ck_assert_int_ne(leader_of("admitter", &n), leader);

    for (int i = 0; i < 4; i++) {
        ck_assert_int_eq(req("POST", fmt("/api/v1/tenants/chem/jobs/%s/cancel", c[i]), chem, NULL),
                         202);
        free(c[i]);
    }
    for (int i = 0; i < 2; i++) {
        ck_assert_int_eq(req("POST", fmt("/api/v1/tenants/phys/jobs/%s/cancel", p[i]), phys, NULL),
                         202);
        json_decref(jobs_wait(phys, "phys", p[i], "cancelled", 30));
        free(p[i]);
    }
    for (int i = 0; i < NCPU; i++)
        free(cpu[i]);
}
END_TEST

/* The index of a live replica other than not. */
static int other_than(int not)
{
    for (int i = 0; i < NREP; i++)
        if (alive[i] && i != not)
            return i;
    ck_abort_msg("no second replica");
    return -1;
}

START_TEST(throttling_and_revocation_across_replicas)
{
    int a = other_than(-1), b = other_than(a);
    const char *bad = "{\"username\":\"ann\",\"password\":\"not-her-password\"}";
    /* three failures on one replica lock the name out on the others */
    for (int i = 0; i < 3; i++) {
        struct http_res r;
        ck_assert_int_eq(http_do(&rep[a], "POST", "/api/v1/auth/login", NULL, bad, NULL, &r), 401);
        http_res_free(&r);
    }
    struct http_res r;
    ck_assert_int_eq(http_do(&rep[b], "POST", "/api/v1/auth/login", NULL,
                             "{\"username\":\"ann\",\"password\":\"ann-password-1\"}", NULL, &r),
                     429);
    http_res_free(&r);

    /* a token revoked through one replica stops at once on another that knew it */
    char *tok = make_token(chem, "[\"jobs:read\"]", "chem");
    ck_assert_int_eq(http_do(&rep[a], "GET", "/api/v1/tenants/chem/jobs", tok, NULL, NULL, &r), 200);
    http_res_free(&r);
    ck_assert_int_eq(http_do(&rep[b], "GET", "/api/v1/tokens", chem, NULL, NULL, &r), 200);
    ck_assert_int_eq(json_array_size(json_object_get(r.json, "items")), 1);
    const char *tid = jstr(json_array_get(json_object_get(r.json, "items"), 0), "id");
    ck_assert_ptr_nonnull(tid);
    struct http_res d;
    ck_assert_int_eq(http_do(&rep[b], "DELETE", fmt("/api/v1/tokens/%s", tid), chem, NULL, NULL,
                             &d),
                     204);
    http_res_free(&d);
    http_res_free(&r);
    ck_assert_int_eq(http_do(&rep[a], "GET", "/api/v1/tenants/chem/jobs", tok, NULL, NULL, &r), 401);
    http_res_free(&r);
    free(tok);
}
END_TEST

/* How many live replicas lead worker w now. */
static int leaders(const char *w)
{
    int n;
    (void)leader_of(w, &n);
    return n;
}

START_TEST(older_replicas_stand_by_after_a_migration)
{
    /* a newer binary migrated the database: these replicas' workers stand by
     * (their readiness says not ready too), none may run old code on it */
    PGresult *r = harness_sql(harness_srv.owner_url,
                              "INSERT INTO aidc_schema_migrations (version, name, checksum)"
                              " SELECT max(version) + 1, 'from-a-newer-binary', 'x'"
                              " FROM aidc_schema_migrations RETURNING version",
                              0, NULL);
    ck_assert_ptr_nonnull(r);
    char version[16];
    snprintf(version, sizeof version, "%s", PQgetvalue(r, 0, 0));
    PQclear(r);
    double until = jobs_now() + 40;
    const char *still = "";
    do {
        still = "";
        for (size_t w = 0; w < NWORKERS && !still[0]; w++)
            if (leaders(workers[w]) > 0)
                still = workers[w];
        if (still[0])
            jobs_nap_ms(200);
    } while (still[0] && jobs_now() < until);
    ck_assert_msg(!still[0], "the %s still leads on a newer schema", still);
    ck_assert_int_eq(req("GET", "/readyz", NULL, NULL), 503);
    /* the migration is rolled back (a restore): they take up their work again */
    const char *p[1] = {version};
    PQclear(harness_sql(harness_srv.owner_url,
                        "DELETE FROM aidc_schema_migrations WHERE version = $1::int", 1, p));
    ck_assert_double_lt(wait_one_leader_each(40), 40);
}
END_TEST

static Suite *replicas_suite(void)
{
    Suite *s = suite_create("replicas");
    TCase *tc = tcase_create("replicas");
    tcase_add_unchecked_fixture(tc, setup, teardown);
    tcase_add_test(tc, leader_killed_mid_reclaim);
    tcase_add_test(tc, throttling_and_revocation_across_replicas);
    tcase_add_test(tc, older_replicas_stand_by_after_a_migration);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    harness_require_pg();
    if (access(NGINX, X_OK) != 0) {
        fprintf(stderr, "nginx is not installed (deploy/install-deps.sh ops): skipped\n");
        return 77;
    }
    return suite_run_mode(replicas_suite(), CK_NOFORK);
}
