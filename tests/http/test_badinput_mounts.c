/*
 * test_badinput_mounts.c - bad "mounts" in job submissions (docs/storage.md,
 * "Mounts in jobs"): every mistake is a 400 naming the item and member
 * ("mounts[1].name") with its code from the problem catalog, all of a body's
 * mistakes at once, and no job; a dataset that is not there is 422
 * (job.mount_dataset_unknown); the limits are inclusive (8 mounts are taken,
 * 9 are not). A member cannot name another project's space or another
 * user's home: the kinds take no such name. The rest of a submission:
 * test_badinput_jobs.c.
 */
#include "tests/support/client.h"
#include "tests/support/harness.h"
#include "tests/support/jobs.h"
#include "tests/support/soft.h"
#include "tests/support/suite.h"

#include <check.h>
#include <curl/curl.h>
#include <errno.h>
#include <libpq-fe.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define JOBS "/api/v1/tenants/acme/jobs"

static char *alice;

/* The datasets d0..d7 of acme, made on disk as the files API would (here: plain folders). */
static void make_datasets(void)
{
    const char *dirs[] = {"storage", "storage/acme", "storage/acme/datasets"};
    for (size_t i = 0; i < 3; i++) {
        const char *p = fmt("%s/%s", harness_srv.data_dir, dirs[i]);
        ck_assert_msg(mkdir(p, 0755) == 0 || errno == EEXIST, "%s: %s", p, strerror(errno));
    }
    for (int i = 0; i < 8; i++)
        ck_assert_int_eq(mkdir(fmt("%s/storage/acme/datasets/d%d", harness_srv.data_dir, i), 0755),
                         0);
}

static void setup(void)
{
    static const char *const env[] = {"AIDC_SYNC_INTERVAL_MS=100", NULL};
    harness_setup("badinput_mounts", env);
    jobs_admin_ok("POST", "/api/v1/clusters",
                  "{\"name\":\"local\",\"kind\":\"local\",\"options\":{\"gpus\":{\"a100\":4},"
                  "\"cpus\":64,\"memory_gib\":512}}",
                  201);
    alice = jobs_tenant_member("acme", "base", "{\"gpu:a100\":{\"guaranteed\":1,\"limit\":4}}",
                               "alice");
    make_project("acme", "other");
    make_tenant("rival");
    make_project("rival", "secret-proj");
    make_datasets();
}

static void teardown(void)
{
    free(alice);
    harness_teardown();
}

static long jobs_count(void)
{
    PGresult *r = harness_sql(harness_srv.owner_url, "SELECT count(*) FROM jobs", 0, NULL);
    ck_assert_ptr_nonnull(r);
    long n = strtol(PQgetvalue(r, 0, 0), NULL, 10);
    PQclear(r);
    return n;
}

/* A submission of acme's project base with mounts (JSON text, NULL: none) (malloc'd). */
static char *body_with(const char *mounts)
{
    return strdup(fmt("{\"project\":\"base\",\"name\":\"m\",\"command\":[\"true\"]%s%s}",
                      mounts ? ",\"mounts\":" : "", mounts ? mounts : ""));
}

/* The error of r naming field (borrowed), or NULL. */
static json_t *error_of(const struct http_res *r, const char *field)
{
    size_t i;
    json_t *e;
    json_array_foreach(json_object_get(r->json, "errors"), i, e) {
        const char *f = json_string_value(json_object_get(e, "field"));
        if (f && strcmp(f, field) == 0)
            return e;
    }
    return NULL;
}

/*
 * POST mounts as alice: the answer must be status with an error naming field
 * with code (and, when params is not NULL, those params).
 */
static void bad(const char *mounts, long status, const char *field, const char *code,
                const char *params)
{
    char *body = body_with(mounts);
    struct http_res r;
    soft_send_json("POST", JOBS, alice, body, strlen(body), &r);
    json_t *e = r.status == status ? error_of(&r, field) : NULL;
    const char *got = e ? json_string_value(json_object_get(e, "code")) : NULL;
    soft(e && got && strcmp(got, code) == 0,
         "mounts %s: want %ld with %s at %s, got %ld: %s", soft_shows(mounts), status, code, field,
         r.status, soft_show(r.body, r.body_len));
    if (e && params) {
        json_t *want = json_loads(params, 0, NULL);
        soft(json_equal(json_object_get(e, "params"), want), "mounts %s: params %s, want %s",
             soft_shows(mounts), soft_show(r.body, r.body_len), params);
        json_decref(want);
    }
    soft(!e || json_is_string(json_object_get(e, "message")), "no message: %s", r.body);
    http_res_free(&r);
    free(body);
}

START_TEST(bad_mounts_are_400_with_codes)
{
    long before = jobs_count();
    bad("\"project\"", 400, "mounts", "job.mounts_type", NULL);
    bad("{\"space\":\"project\"}", 400, "mounts", "job.mounts_type", NULL);
    bad("7", 400, "mounts", "job.mounts_type", NULL);
    bad("[1]", 400, "mounts[0]", "validation.type_object", NULL);
    bad("[[\"project\"]]", 400, "mounts[0]", "validation.type_object", NULL);
    bad("[{}]", 400, "mounts[0].space", "validation.required", NULL);
    bad("[{\"space\":\"scratch\"}]", 400, "mounts[0].space", "job.mount_space", NULL);
    bad("[{\"space\":\"projects\"}]", 400, "mounts[0].space", "job.mount_space", NULL);
    bad("[{\"space\":null}]", 400, "mounts[0].space", "job.mount_space", NULL);
    bad("[{\"space\":\"project\",\"path\":\"/etc\"}]", 400, "mounts[0].path",
        "validation.unknown_field", NULL);
    bad("[{\"space\":\"project\",\"tenant\":\"rival\"}]", 400, "mounts[0].tenant",
        "validation.unknown_field", NULL);
    bad("[{\"space\":\"project\",\"target\":\"/\"}]", 400, "mounts[0].target",
        "validation.unknown_field", NULL);
    /* the job's own project and its submitter's home: nothing else can be named */
    bad("[{\"space\":\"project\",\"name\":\"other\"}]", 400, "mounts[0].name",
        "job.mount_name_not_allowed", NULL);
    bad("[{\"space\":\"project\",\"name\":\"secret-proj\"}]", 400, "mounts[0].name",
        "job.mount_name_not_allowed", NULL);
    bad("[{\"space\":\"home\",\"name\":\"admin\"}]", 400, "mounts[0].name",
        "job.mount_name_not_allowed", NULL);
    bad("[{\"space\":\"dataset\"}]", 400, "mounts[0].name", "validation.required", NULL);
    static const char *const names[] = {"\"\"",     "\"..\"",   "\".\"",     "\"../rival\"",
                                        "\"a/b\"",  "\"/etc\"", "\"D0\"",    "\"0d\"",
                                        "\"d 0\"",  "null", "5",
                                        "[\"d0\"]", "\"\\u00e9t\\u00e9\""};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++)
        bad(fmt("[{\"space\":\"dataset\",\"name\":%s}]", names[i]), 400, "mounts[0].name",
            "job.mount_dataset_name", NULL);
    char *long_name = soft_rep("d", 64);
    bad(fmt("[{\"space\":\"dataset\",\"name\":\"%s\"}]", long_name), 400, "mounts[0].name",
        "job.mount_dataset_name", NULL);
    free(long_name);
    bad("[{\"space\":\"dataset\",\"name\":\"d0\",\"read_only\":false}]", 400,
        "mounts[0].read_only", "job.mount_dataset_writable", NULL);
    static const char *const bools[] = {"\"true\"", "1", "0", "null", "[]"};
    for (size_t i = 0; i < sizeof bools / sizeof *bools; i++)
        bad(fmt("[{\"space\":\"project\",\"read_only\":%s}]", bools[i]), 400,
            "mounts[0].read_only", "validation.type_bool", NULL);
    /* once each */
    bad("[{\"space\":\"project\"},{\"space\":\"project\",\"read_only\":true}]", 400, "mounts[1]",
        "job.mount_duplicate", "{\"index\":0}");
    bad("[{\"space\":\"home\"},{\"space\":\"project\"},{\"space\":\"home\"}]", 400, "mounts[2]",
        "job.mount_duplicate", "{\"index\":0}");
    bad("[{\"space\":\"dataset\",\"name\":\"d1\"},{\"space\":\"dataset\",\"name\":\"d2\"},"
        "{\"space\":\"dataset\",\"name\":\"d1\",\"read_only\":true}]",
        400, "mounts[2]", "job.mount_duplicate", "{\"index\":0}");
    /* at most eight */
    char nine[1024] = "[";
    for (int i = 0; i < 9; i++)
        snprintf(nine + strlen(nine), sizeof nine - strlen(nine),
                 "%s{\"space\":\"dataset\",\"name\":\"x%d\"}", i ? "," : "", i);
    strcat(nine, "]");
    bad(nine, 400, "mounts", "job.mounts_too_many", "{\"max\":8,\"count\":9}");
    /* every mistake of a body at once */
    char *body = body_with("[{\"space\":\"x\"},{\"space\":\"dataset\",\"name\":\"..\"},"
                           "{\"space\":\"home\",\"read_only\":\"no\"}]");
    struct http_res r;
    soft_send_json("POST", JOBS, alice, body, strlen(body), &r);
    soft(r.status == 400 && error_of(&r, "mounts[0].space") && error_of(&r, "mounts[1].name") &&
             error_of(&r, "mounts[2].read_only"),
         "all three mistakes named: %ld %s", r.status, soft_show(r.body, r.body_len));
    http_res_free(&r);
    free(body);
    soft(jobs_count() == before, "refused submissions made %ld jobs", jobs_count() - before);
    soft_done();
}
END_TEST

START_TEST(a_missing_dataset_is_422)
{
    long before = jobs_count();
    bad("[{\"space\":\"dataset\",\"name\":\"nope\"}]", 422, "mounts[0].name",
        "job.mount_dataset_unknown", "{\"name\":\"nope\",\"tenant\":\"acme\"}");
    bad("[{\"space\":\"project\"},{\"space\":\"dataset\",\"name\":\"d0\"},"
        "{\"space\":\"dataset\",\"name\":\"gone\"}]",
        422, "mounts[2].name", "job.mount_dataset_unknown", NULL);
    /* a file where a dataset should be is no dataset */
    FILE *f = fopen(fmt("%s/storage/acme/datasets/afile", harness_srv.data_dir), "w");
    ck_assert_ptr_nonnull(f);
    fclose(f);
    bad("[{\"space\":\"dataset\",\"name\":\"afile\"}]", 422, "mounts[0].name",
        "job.mount_dataset_unknown", NULL);
    /* rival's dataset of the same name is not acme's */
    ck_assert_int_eq(mkdir(fmt("%s/storage/rival", harness_srv.data_dir), 0755), 0);
    ck_assert_int_eq(mkdir(fmt("%s/storage/rival/datasets", harness_srv.data_dir), 0755), 0);
    ck_assert_int_eq(mkdir(fmt("%s/storage/rival/datasets/rivals", harness_srv.data_dir), 0755), 0);
    bad("[{\"space\":\"dataset\",\"name\":\"rivals\"}]", 422, "mounts[0].name",
        "job.mount_dataset_unknown", NULL);
    soft(jobs_count() == before, "refused submissions made %ld jobs", jobs_count() - before);
    soft_done();
}
END_TEST

START_TEST(valid_mounts_at_the_limit)
{
    long before = jobs_count();
    const char *eight = "[{\"space\":\"project\"},{\"space\":\"home\",\"read_only\":true},"
                        "{\"space\":\"dataset\",\"name\":\"d0\",\"read_only\":true},"
                        "{\"space\":\"dataset\",\"name\":\"d1\"},{\"space\":\"dataset\",\"name\":\"d2\"},"
                        "{\"space\":\"dataset\",\"name\":\"d3\"},{\"space\":\"dataset\",\"name\":\"d4\"},"
                        "{\"space\":\"dataset\",\"name\":\"d5\"}]";
    const char *ok[] = {NULL, "null", "[]", eight};
    for (size_t i = 0; i < sizeof ok / sizeof *ok; i++) {
        char *body = body_with(ok[i]);
        struct http_res r;
        soft_send_json("POST", JOBS, alice, body, strlen(body), &r);
        json_t *want = json_loads(ok[i] && strcmp(ok[i], "null") ? ok[i] : "[]", 0, NULL);
        soft(r.status == 201 && json_equal(json_object_get(r.json, "mounts"), want),
             "mounts %s: %ld %s", soft_shows(ok[i]), r.status, soft_show(r.body, r.body_len));
        json_decref(want);
        http_res_free(&r);
        free(body);
    }
    soft(jobs_count() == before + 4, "4 accepted submissions made %ld jobs", jobs_count() - before);
    /* the spaces were made at the submission: the project's and alice's home */
    struct stat st;
    soft(stat(fmt("%s/storage/acme/projects/base", harness_srv.data_dir), &st) == 0 &&
             S_ISDIR(st.st_mode),
         "no project space for acme/base");
    soft(stat(fmt("%s/storage/acme/home/alice", harness_srv.data_dir), &st) == 0 &&
             S_ISDIR(st.st_mode),
         "no home for alice in acme");
    soft(stat(fmt("%s/storage/acme/projects/other", harness_srv.data_dir), &st) != 0,
         "a project's space made that no job mounts");
    soft_done();
}
END_TEST

int main(void)
{
    harness_require_pg();
    curl_global_init(CURL_GLOBAL_DEFAULT);
    Suite *s = suite_create("badinput_mounts");
    TCase *tc = tcase_create("badinput_mounts");
    tcase_add_unchecked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, bad_mounts_are_400_with_codes);
    tcase_add_test(tc, a_missing_dataset_is_422);
    tcase_add_test(tc, valid_mounts_at_the_limit);
    soft_add_server_check(tc);
    suite_add_tcase(s, tc);
    int rc = suite_run(s);
    curl_global_cleanup();
    return rc;
}
