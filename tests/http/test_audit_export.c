/*
 * test_audit_export.c - an export of 300,000 audit events: aidcd's memory
 * stays flat while it streams, every line parses, the lines are the events
 * in chain order with the checkpoints among them and the trailer last, and
 * `aidcd audit verify-export` accepts the file with the public key - while a
 * copy with one line dropped is refused.
 *
 * The events are written by the owner role in one INSERT (the API would take
 * minutes to make that many) and chained by the server's own sealer. 300,000
 * rows held at once would take well over the bound below (a row is ~300 bytes
 * in the table alone), and making them takes under a third of the time of
 * the million this test used to write (tests/bench/audit.sh exports 5
 * million). The sanitizer build exports
 * 100,000 (it runs several times slower); AIDC_TEST_EXPORT_EVENTS overrides
 * the count.
 *
 * RSS is read from /proc while the client receives: the growth over the
 * whole export must stay under a bound that a server holding the rows
 * (hundreds of MiB) could not meet. The client itself streams to a file.
 * Under ASan every freed block waits in a quarantine (256 MiB by default)
 * before it is reused, which grows RSS with the bytes streamed rather than
 * the bytes held; the server there gets a small quarantine so the bound
 * still measures what it holds.
 */
#include "tests/support/audittest.h"
#include "tests/support/client.h"
#include "tests/support/harness.h"
#include "tests/support/suite.h"

#include <check.h>
#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#if defined(__SANITIZE_ADDRESS__)
#define DEFAULT_EVENTS 100000L
#else
#define DEFAULT_EVENTS 300000L
#endif
#define RSS_GROWTH_MAX_KIB (48L * 1024)

static char key_dir[64], key_path[300], pub_path[300];
static long events;

static void setup(void)
{
    const char *n = getenv("AIDC_TEST_EXPORT_EVENTS");
    events = n ? strtol(n, NULL, 10) : DEFAULT_EVENTS;
    static char env_key[700];
    audittest_key("auditexport", key_dir, sizeof key_dir, key_path, sizeof key_path, pub_path,
                  sizeof pub_path, env_key, sizeof env_key);
    static char env_asan[600];
    const char *asan = getenv("ASAN_OPTIONS");
    snprintf(env_asan, sizeof env_asan, "ASAN_OPTIONS=%s%squarantine_size_mb=4",
             asan ? asan : "", asan && *asan ? ":" : "");
    const char *env[] = {env_key, "AIDC_AUDIT_SEAL_GRACE_MS=0", "AIDC_AUDIT_CHECKPOINT_SECONDS=1",
#if defined(__SANITIZE_ADDRESS__)
                         env_asan,
#endif
                         NULL};
    harness_setup("auditexport", env);
}

static void teardown(void)
{
    harness_teardown();
    audittest_key_remove(key_dir);
}

static long scalar(const char *url, const char *sql)
{
    PGresult *r = harness_sql(url, sql, 0, NULL);
    long v = r && PQntuples(r) == 1 ? strtol(PQgetvalue(r, 0, 0), NULL, 10) : -1;
    PQclear(r);
    return v;
}

static long rss_kib(pid_t pid)
{
    char path[64], line[256];
    snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
    FILE *f = fopen(path, "r");
    long kib = -1;
    while (f && fgets(line, sizeof line, f))
        if (strncmp(line, "VmRSS:", 6) == 0)
            kib = strtol(line + 6, NULL, 10);
    if (f)
        fclose(f);
    return kib;
}

struct sink {
    FILE *out;
    size_t bytes, next_sample;
    long rss_first, rss_max, samples;
    long lines, bad_lines;
    char *partial; /* the line in progress */
    size_t plen, pcap;
};

static void line_done(struct sink *s)
{
    json_error_t jerr;
    json_t *o = json_loadb(s->partial, s->plen, 0, &jerr);
    if (!o)
        s->bad_lines++;
    json_decref(o);
    s->lines++;
    s->plen = 0;
}

static size_t on_data(char *p, size_t size, size_t n, void *arg)
{
    struct sink *s = arg;
    size_t len = size * n;
    if (fwrite(p, 1, len, s->out) != len)
        return 0;
    const char *q = p, *end = p + len;
    while (q < end) {
        const char *nl = memchr(q, '\n', (size_t)(end - q));
        size_t take = (size_t)((nl ? nl : end) - q);
        if (s->plen + take + 1 > s->pcap) {
            s->pcap = (s->plen + take + 1) * 2;
            char *grown = realloc(s->partial, s->pcap);
            if (!grown)
                return 0;
            s->partial = grown;
        }
        memcpy(s->partial + s->plen, q, take);
        s->plen += take;
        if (!nl)
            break;
        line_done(s);
        q = nl + 1;
    }
    s->bytes += len;
    if (s->bytes >= s->next_sample) { /* every 4 MiB received */
        long kib = rss_kib(harness_srv.pid);
        if (s->rss_first < 0)
            s->rss_first = kib;
        if (kib > s->rss_max)
            s->rss_max = kib;
        s->samples++;
        s->next_sample = s->bytes + 4u * 1024 * 1024;
    }
    return len;
}

static int run_verify(const char *file)
{
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "env -u AIDC_AUDIT_KEY_FILE '%s' audit verify-export '%s' --key '%s'",
             AIDC_BIN, file, pub_path);
    int st = system(cmd);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

START_TEST(many_events_stream_in_constant_memory_and_verify)
{
    const char *owner = harness_srv.owner_url;
    char sql[1200];
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    snprintf(
        sql, sizeof sql,
        "INSERT INTO audit_events (actor_username, actor_roles, tenant_slug, source_ip,"
        " user_agent, request_id, action, resource_type, resource_id, outcome, status, details)"
        " SELECT 'user' || (g %% 500), '{}', 'tenant' || (g %% 40), ('10.1.' || (g %% 200) || "
        "'.7')::inet,"
        " 'bench/1.0', md5(g::text), (ARRAY['job.submit','job.cancel','project.create',"
        "'auth.login'])[1 + g %% 4], 'job', md5((g * 7)::text), 'success', 201,"
        " jsonb_build_object('project', 'p' || (g %% 90), 'gpus', g %% 8, 'image',"
        " 'registry.local/pytorch:2.' || (g %% 5), 'note', 'bulk event ' || g)"
        " FROM generate_series(1, %ld) g",
        events);
    PGresult *r = harness_sql(owner, sql, 0, NULL);
    ck_assert_ptr_nonnull(r);
    PQclear(r);
    /* the server's sealer chains them; wait for the queue to empty */
    long left = -1;
    for (int i = 0; i < 6000 && left != 0; i++) {
        left = scalar(owner, "SELECT count(*) FROM audit_log e, audit_chain_head h"
                             " WHERE (e.ts, e.id) > (h.upto_ts, h.upto_id)");
        if (left)
            usleep(100 * 1000); /* polling the sealer's progress */
    }
    ck_assert_int_eq(left, 0);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    long total = scalar(owner, "SELECT count(*) FROM audit_log");
    /* the sealer's figures: everything it chained is counted */
    struct http_res m;
    ck_assert_int_eq(http_do(&harness_srv, "GET", "/metrics", NULL, NULL, NULL, &m), 200);
    const char *sealed = strstr(m.body, "\naidc_audit_sealed_total ");
    ck_assert_ptr_nonnull(sealed);
    ck_assert_int_ge(strtol(sealed + 25, NULL, 10), events);
    ck_assert_ptr_nonnull(strstr(m.body, "\naidc_audit_seal_lag_seconds "));
    http_res_free(&m);
    fprintf(stderr, "wrote and chained %ld events in %.1f s\n", events,
            (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9);

    char file[300], cut[300];
    snprintf(file, sizeof file, "%s/export.ndjson", harness_srv.data_dir);
    snprintf(cut, sizeof cut, "%s/export-cut.ndjson", harness_srv.data_dir);
    struct sink s = {.out = fopen(file, "w"), .rss_first = -1};
    ck_assert_ptr_nonnull(s.out);
    CURL *c = curl_easy_init();
    struct curl_slist *h =
        curl_slist_append(NULL, fmt("Authorization: Bearer %s", harness_srv.admin_token));
    curl_easy_setopt(c, CURLOPT_URL, fmt("%s/api/v1/audit/events/export", harness_srv.base));
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_data);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &s);
    clock_gettime(CLOCK_MONOTONIC, &t0);
    CURLcode rc = curl_easy_perform(c);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    long status = 0;
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
    curl_slist_free_all(h);
    curl_easy_cleanup(c);
    fclose(s.out);
    free(s.partial);
    double secs = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    fprintf(stderr,
            "exported %ld lines (%.0f MiB) in %.1f s: %.0f lines/s; aidcd RSS %ld KiB "
            "at the start, %ld KiB at most (%ld samples)\n",
            s.lines, (double)s.bytes / 1048576.0, secs, (double)s.lines / secs, s.rss_first,
            s.rss_max, s.samples);
    ck_assert_int_eq(rc, CURLE_OK);
    ck_assert_int_eq(status, 200);
    ck_assert_int_eq(s.bad_lines, 0);
    /* every event, the checkpoints among them, the trailer */
    ck_assert_int_ge(s.lines, total + 1);
    ck_assert_int_ge(s.samples, 3);
    ck_assert_msg(s.rss_max - s.rss_first < RSS_GROWTH_MAX_KIB,
                  "aidcd grew by %ld KiB while exporting", s.rss_max - s.rss_first);

    ck_assert_int_eq(run_verify(file), 0);
    /* one event line less: the trailer's count and digest no longer hold */
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "sed '1000d' '%s' > '%s'", file, cut);
    ck_assert_int_eq(system(cmd), 0);
    ck_assert_int_eq(run_verify(cut), 1);
    unlink(file);
    unlink(cut);
}
END_TEST

int main(void)
{
    harness_require_pg();
    Suite *s = suite_create("audit_export");
    TCase *tc = tcase_create("export");
    tcase_add_unchecked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 900);
    tcase_add_test(tc, many_events_stream_in_constant_memory_and_verify);
    suite_add_tcase(s, tc);
    return suite_run(s);
}
