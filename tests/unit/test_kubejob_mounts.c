/*
 * test_kubejob_mounts.c - storage spaces in the Job aidc sends to Kubernetes
 * (backends/kubejob.h, docs/storage.md "Mounts in jobs"): options.storage
 * names the PersistentVolumeClaim; a job's mounts become one volume of it
 * and a volumeMount per space at its fixed path with the space's subPath
 * (<tenant>/<kind dir>/<name>: the job's own tenant, project and user),
 * datasets read-only, and the variables that say where. A job with mounts
 * on a cluster without a claim is refused, saying why.
 */
#include "tests/support/suite.h"

#include "backends/kubejob.h"

#include <check.h>
#include <string.h>

static json_t *parse(const char *text)
{
    json_error_t e;
    json_t *j = json_loads(text, JSON_DECODE_ANY, &e);
    ck_assert_msg(j != NULL, "%s: %s", text, e.text);
    return j;
}

static json_t *options(const char *text)
{
    json_t *o = parse(text);
    char err[256] = "";
    ck_assert_msg(kubejob_check_options(o, err, sizeof err), "%s refused: %s", text, err);
    return o;
}

static struct backend_job job_of(const json_t *mounts, const json_t *env)
{
    return (struct backend_job){.id = "0f3c0000-0000-4000-8000-000000000042", .tenant = "acme",
                                .project = "vision", .user = "alice", .image = "busybox:1",
                                .script = "ls /data", .env = env, .mounts = mounts, .cpus = 1,
                                .memory_gib = 1, .nodes = 1, .time_limit_minutes = 5,
                                .grace_seconds = 30, .priority = "normal"};
}

START_TEST(the_claim_is_an_option)
{
    static const char *const bad[] = {"{'storage':'data'}", "{'storage':{}}",
                                      "{'storage':{'claim':''}}", "{'storage':{'claim':'Data'}}",
                                      "{'storage':{'claim':'a/b'}}", "{'storage':{'claim':5}}",
                                      "{'storage':{'claim':'d','root':'/x'}}"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        char text[128];
        snprintf(text, sizeof text, "%s", bad[i]);
        for (char *p = text; *p; p++)
            *p = *p == '\'' ? '"' : *p;
        json_t *o = parse(text);
        char err[256] = "";
        ck_assert_msg(!kubejob_check_options(o, err, sizeof err), "%s taken", text);
        ck_assert_msg(strstr(err, "options.storage"), "%s: %s", text, err);
        json_decref(o);
    }
    json_decref(options("{\"storage\":{\"claim\":\"aidc-storage.v1\"}}"));
}
END_TEST

START_TEST(mounts_are_volume_mounts_of_the_claim)
{
    json_t *o = options("{\"storage\":{\"claim\":\"aidc-spaces\"}}");
    json_t *mounts = parse("[{\"space\":\"project\"},{\"space\":\"home\",\"read_only\":true},"
                           "{\"space\":\"dataset\",\"name\":\"imagenet\"}]");
    json_t *env = parse("{\"FOO\":\"bar\"}");
    struct backend_job j = job_of(mounts, env);
    char err[256] = "";
    json_t *b = kubejob_build(o, &j, "aidc-acme", err, sizeof err);
    ck_assert_msg(b != NULL, "%s", err);
    const json_t *pod = json_object_get(json_object_get(json_object_get(b, "spec"), "template"),
                                        "spec");
    const json_t *c = json_array_get(json_object_get(pod, "containers"), 0);
    json_t *want = parse("[{\"name\":\"aidc-storage\",\"persistentVolumeClaim\":"
                         "{\"claimName\":\"aidc-spaces\"}}]");
    ck_assert_msg(json_equal(json_object_get(pod, "volumes"), want), "volumes: %s",
                  json_dumps(json_object_get(pod, "volumes"), 0));
    json_decref(want);
    want = parse("[{\"name\":\"aidc-storage\",\"mountPath\":\"/data/project\","
                 "\"subPath\":\"acme/projects/vision\",\"readOnly\":false},"
                 "{\"name\":\"aidc-storage\",\"mountPath\":\"/home/alice\","
                 "\"subPath\":\"acme/home/alice\",\"readOnly\":true},"
                 "{\"name\":\"aidc-storage\",\"mountPath\":\"/data/datasets/imagenet\","
                 "\"subPath\":\"acme/datasets/imagenet\",\"readOnly\":true}]");
    ck_assert_msg(json_equal(json_object_get(c, "volumeMounts"), want), "volumeMounts: %s",
                  json_dumps(json_object_get(c, "volumeMounts"), 0));
    json_decref(want);
    /* the variables follow the job's own and aidc's */
    size_t i;
    json_t *v;
    int found = 0;
    json_array_foreach(json_object_get(c, "env"), i, v) {
        const char *n = json_string_value(json_object_get(v, "name"));
        const char *val = json_string_value(json_object_get(v, "value"));
        if (strcmp(n, "AIDC_PROJECT_DIR") == 0)
            found += strcmp(val, "/data/project") == 0;
        else if (strcmp(n, "AIDC_HOME_DIR") == 0)
            found += strcmp(val, "/home/alice") == 0;
        else if (strcmp(n, "AIDC_DATASETS_DIR") == 0)
            found += strcmp(val, "/data/datasets") == 0;
        else if (strcmp(n, "FOO") == 0)
            found += strcmp(val, "bar") == 0;
    }
    ck_assert_int_eq(found, 4);
    json_decref(b);
    json_decref(mounts);
    json_decref(env);
    json_decref(o);
}
END_TEST

START_TEST(no_mounts_no_volumes)
{
    json_t *o = options("{\"storage\":{\"claim\":\"aidc-spaces\"}}"), *none = parse("[]");
    json_t *env = json_object();
    for (int k = 0; k < 2; k++) {
        struct backend_job j = job_of(k ? none : NULL, env);
        char err[256] = "";
        json_t *b = kubejob_build(o, &j, "aidc-acme", err, sizeof err);
        ck_assert_msg(b != NULL, "%s", err);
        const json_t *pod =
            json_object_get(json_object_get(json_object_get(b, "spec"), "template"), "spec");
        ck_assert_ptr_null(json_object_get(pod, "volumes"));
        ck_assert_ptr_null(
            json_object_get(json_array_get(json_object_get(pod, "containers"), 0), "volumeMounts"));
        json_decref(b);
    }
    json_decref(env);
    json_decref(none);
    json_decref(o);
}
END_TEST

START_TEST(mounts_without_a_claim_are_refused)
{
    json_t *o = options("{}"), *mounts = parse("[{\"space\":\"project\"}]"), *env = json_object();
    struct backend_job j = job_of(mounts, env);
    char err[256] = "";
    ck_assert_ptr_null(kubejob_build(o, &j, "aidc-acme", err, sizeof err));
    ck_assert_msg(strstr(err, "options.storage.claim"), "%s", err);
    /* and what the backend is handed is checked again */
    json_decref(o);
    o = options("{\"storage\":{\"claim\":\"c\"}}");
    json_decref(mounts);
    mounts = parse("[{\"space\":\"dataset\",\"name\":\"../../etc\"}]");
    j = job_of(mounts, env);
    ck_assert_ptr_null(kubejob_build(o, &j, "aidc-acme", err, sizeof err));
    ck_assert_msg(strstr(err, "mounts[0].name"), "%s", err);
    json_decref(mounts);
    mounts = parse("[{\"space\":\"home\"}]");
    j = job_of(mounts, env);
    j.user = "../root";
    ck_assert_ptr_null(kubejob_build(o, &j, "aidc-acme", err, sizeof err));
    json_decref(mounts);
    json_decref(env);
    json_decref(o);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("kubejob_mounts");
    TCase *tc = tcase_create("mounts");
    tcase_add_test(tc, the_claim_is_an_option);
    tcase_add_test(tc, mounts_are_volume_mounts_of_the_claim);
    tcase_add_test(tc, no_mounts_no_volumes);
    tcase_add_test(tc, mounts_without_a_claim_are_refused);
    suite_add_tcase(s, tc);
    return suite_run(s);
}
