/*
 * test_localopts.c - backends/localopts.h: the options of a `local` cluster.
 * {} and a full valid set pass; an unknown key or a bad value of any option
 * is refused with a message naming the option; a tenant's uid is
 * first + number within the range (root only); GPU types come in name
 * order; the sandbox part of job.json has its defaults (bwrap, no network,
 * the data directory and /etc/aidc hidden, <data dir>/images) and follows
 * the options given.
 */
#include "backends/localopts.h"
#include "tests/support/suite.h"

#include <check.h>
#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define DATA_DIR "/var/lib/aidc-unit"

static json_t *parse(const char *text)
{
    json_error_t e;
    json_t *o = json_loads(text, 0, &e);
    ck_assert_msg(o != NULL, "bad test JSON %s: %s", text, e.text);
    return o;
}

static const char full[] =
    "{\"gpus\": {\"a100\": 4, \"h100\": 2}, \"cpus\": 64, \"memory_gib\": 512,"
    " \"max_time_limit_minutes\": 1440, \"workdir\": \"/srv/aidc/jobs\", \"node\": \"gpu-01\","
    " \"sandbox\": \"bwrap\", \"writable_paths\": [\"/scratch\", \"/data/shared\"],"
    " \"hidden_paths\": [\"/srv/secrets\"], \"network\": \"outbound\","
    " \"uid_range\": {\"first\": 3000000, \"count\": 100000}, \"device_dir\": \"/dev\","
    " \"cgroup_parent\": \"/aidc\", \"pids_max\": 8192, \"image_cache\": \"/var/cache/aidc\","
    " \"image_cache_gib\": 100, \"pull_timeout_seconds\": 600}";

static const char sixteen_paths[] =
    "{\"writable_paths\": [\"/a\", \"/b\", \"/c\", \"/d\", \"/e\", \"/f\", \"/g\", \"/h\","
    " \"/i\", \"/j\", \"/k\", \"/l\", \"/m\", \"/n\", \"/o\", \"/p\"]}";

START_TEST(empty_and_full_options_pass)
{
    static const char *const ok[] = {
        "{}",
        full,
        "{\"sandbox\": \"unconfined\"}",
        "{\"sandbox\": \"auto\"}",
        "{\"sandbox\": \"required\"}",
        "{\"network\": \"none\"}",
        "{\"gpus\": {}}",
        "{\"gpus\": {\"a100\": 0, \"l40s\": 64}}",
        "{\"uid_range\": {\"first\": 1000, \"count\": 1}}",
        "{\"uid_range\": {\"first\": 2147483547, \"count\": 100}}", /* ends at 2^31 - 1 */
        "{\"pids_max\": 64}",
        "{\"writable_paths\": []}",
        sixteen_paths,
        "{\"workdir\": \"/srv/..x/jobs\"}", /* "..x" is a name, not ".." */
    };
    for (size_t i = 0; i < sizeof ok / sizeof *ok; i++) {
        json_t *o = parse(ok[i]);
        char err[512] = "";
        ck_assert_msg(localopts_check(o, err, sizeof err), "%s refused: %s", ok[i], err);
        json_decref(o);
    }
}
END_TEST

/* each refused, with a message naming the option */
static const struct {
    const char *json;
    const char *option;
} bad[] = {
    {"{\"bogus\": 1}", "options.bogus"},
    {"{\"gpus\": {\"a100\": 1}, \"Sandbox\": \"bwrap\"}", "options.Sandbox"},
    {"{\"sandbox\": \"none\"}", "options.sandbox"},
    {"{\"sandbox\": \"maybe\"}", "options.sandbox"},
    {"{\"sandbox\": true}", "options.sandbox"},
    {"{\"sandbox\": \"\"}", "options.sandbox"},
    {"{\"network\": \"all\"}", "options.network"},
    {"{\"network\": \"host\"}", "options.network"},
    {"{\"network\": 1}", "options.network"},
    {"{\"uid_range\": {\"first\": 999, \"count\": 10}}", "options.uid_range"},
    {"{\"uid_range\": {\"first\": 0, \"count\": 10}}", "options.uid_range"},
    {"{\"uid_range\": {\"first\": 3000000}}", "options.uid_range"},
    {"{\"uid_range\": {\"count\": 10}}", "options.uid_range"},
    {"{\"uid_range\": {\"first\": 3000000, \"count\": 0}}", "options.uid_range"},
    {"{\"uid_range\": {\"first\": 3000000, \"count\": 10, \"x\": 1}}", "options.uid_range"},
    {"{\"uid_range\": {\"first\": 2147483547, \"count\": 101}}", "options.uid_range"},
    {"{\"uid_range\": {\"first\": 2147483000, \"count\": 1000}}", "options.uid_range"},
    {"{\"uid_range\": {\"first\": \"3000000\", \"count\": 10}}", "options.uid_range"},
    {"{\"uid_range\": [3000000, 10]}", "options.uid_range"},
    {"{\"workdir\": \"jobs\"}", "options.workdir"},
    {"{\"workdir\": \"/srv/../etc\"}", "options.workdir"},
    {"{\"workdir\": \"/srv/..\"}", "options.workdir"},
    {"{\"workdir\": 5}", "options.workdir"},
    {"{\"device_dir\": \"dev\"}", "options.device_dir"},
    {"{\"device_dir\": \"/dev/../tmp\"}", "options.device_dir"},
    {"{\"cgroup_parent\": \"aidc\"}", "options.cgroup_parent"},
    {"{\"cgroup_parent\": \"/aidc/../system.slice\"}", "options.cgroup_parent"},
    {"{\"image_cache\": \"cache\"}", "options.image_cache"},
    {"{\"image_cache\": \"/var/cache/../../etc\"}", "options.image_cache"},
    {"{\"writable_paths\": [\"/\"]}", "options.writable_paths"},
    {"{\"writable_paths\": [\"/scratch\", \"/scratch/../etc\"]}", "options.writable_paths"},
    {"{\"writable_paths\": [\"scratch\"]}", "options.writable_paths"},
    {"{\"writable_paths\": [1]}", "options.writable_paths"},
    {"{\"writable_paths\": \"/scratch\"}", "options.writable_paths"},
    {"{\"writable_paths\": [\"/a\", \"/b\", \"/c\", \"/d\", \"/e\", \"/f\", \"/g\", \"/h\","
     " \"/i\", \"/j\", \"/k\", \"/l\", \"/m\", \"/n\", \"/o\", \"/p\", \"/q\"]}",
     "options.writable_paths"},
    {"{\"hidden_paths\": [\"/\"]}", "options.hidden_paths"},
    {"{\"hidden_paths\": [\"/srv/../etc\"]}", "options.hidden_paths"},
    {"{\"pids_max\": 10}", "options.pids_max"},
    {"{\"pids_max\": \"4096\"}", "options.pids_max"},
    {"{\"cpus\": 0}", "options.cpus"},
    {"{\"memory_gib\": -1}", "options.memory_gib"},
    {"{\"pull_timeout_seconds\": 1}", "options.pull_timeout_seconds"},
    {"{\"gpus\": {\"A100\": 1}}", "options.gpus"},
    {"{\"gpus\": {\"a 100\": 1}}", "options.gpus"},
    {"{\"gpus\": {\"a100\": 65}}", "options.gpus"},
    {"{\"gpus\": {\"a100\": -1}}", "options.gpus"},
    {"{\"gpus\": {\"a100\": \"4\"}}", "options.gpus"},
    {"{\"gpus\": [\"a100\"]}", "options.gpus"},
    {"{\"node\": \"bad host\"}", "options.node"},
};

START_TEST(a_bad_option_is_refused_by_name)
{
    const char *json = bad[_i].json;
    json_t *o = parse(json);
    char err[512] = "";
    ck_assert_msg(!localopts_check(o, err, sizeof err), "%s accepted", json);
    ck_assert_msg(strstr(err, bad[_i].option) != NULL, "%s: \"%s\" does not name %s", json, err,
                  bad[_i].option);
    json_decref(o);
}
END_TEST

/* first + count past 2^63 must not wrap round into the accepted range */
START_TEST(a_uid_range_that_overflows_is_refused)
{
    static const char *const huge[] = {
        "{\"uid_range\": {\"first\": 9223372036854775807, \"count\": 1}}",
        "{\"uid_range\": {\"first\": 1000, \"count\": 9223372036854775807}}",
        "{\"uid_range\": {\"first\": 4611686018427387904, \"count\": 4611686018427387904}}",
    };
    char accepted[1024] = "";
    for (size_t i = 0; i < sizeof huge / sizeof *huge; i++) {
        json_t *o = parse(huge[i]);
        char err[512] = "";
        if (localopts_check(o, err, sizeof err))
            snprintf(accepted + strlen(accepted), sizeof accepted - strlen(accepted), " %s",
                     huge[i]);
        else
            ck_assert_msg(strstr(err, "options.uid_range") != NULL, "\"%s\"", err);
        json_decref(o);
    }
    ck_assert_msg(accepted[0] == '\0', "accepted:%s", accepted);
}
END_TEST

START_TEST(a_tenant_uid_is_within_the_range)
{
    json_t *o = parse("{\"uid_range\": {\"first\": 5000000, \"count\": 100}}");
    json_t *none = parse("{}");
    char err[256] = "";
    if (geteuid() != 0) {
        ck_assert_int_eq(localopts_uid(o, 1, err, sizeof err), -1);
        ck_assert_int_eq(localopts_uid(o, 1000, err, sizeof err), -1);
        ck_assert_int_eq(localopts_uid(none, 1, err, sizeof err), -1);
        json_decref(o);
        json_decref(none);
        return;
    }
    ck_assert_int_eq(localopts_uid(o, 1, err, sizeof err), 5000001);
    ck_assert_int_eq(localopts_uid(o, 42, err, sizeof err), 5000042);
    ck_assert_int_eq(localopts_uid(o, 99, err, sizeof err), 5000099);
    err[0] = '\0';
    ck_assert_int_eq(localopts_uid(o, 100, err, sizeof err), -2);
    ck_assert_msg(strstr(err, "100") && strstr(err, "uid_range"), "\"%s\"", err);
    err[0] = '\0';
    ck_assert_int_eq(localopts_uid(o, 0, err, sizeof err), -2);
    ck_assert_msg(err[0] != '\0', "no message");
    ck_assert_int_eq(localopts_uid(o, -5, err, sizeof err), -2);
    /* the default range */
    ck_assert_int_eq(localopts_uid(none, 7, err, sizeof err), LOCALOPTS_UID_FIRST + 7);
    ck_assert_int_eq(localopts_uid(none, LOCALOPTS_UID_COUNT, err, sizeof err), -2);
    json_decref(o);
    json_decref(none);
}
END_TEST

START_TEST(gpu_types_come_in_name_order)
{
    json_t *o = parse("{\"gpus\": {\"h100\": 1, \"l4\": 2, \"a100\": 8, \"b200\": 1}}");
    const char *types[8];
    ck_assert_uint_eq(localopts_gpu_types(o, types, 8), 4);
    ck_assert_str_eq(types[0], "a100");
    ck_assert_str_eq(types[1], "b200");
    ck_assert_str_eq(types[2], "h100");
    ck_assert_str_eq(types[3], "l4");
    json_decref(o);
    json_t *none = parse("{}");
    ck_assert_uint_eq(localopts_gpu_types(none, types, 8), 0);
    json_decref(none);
}
END_TEST

static bool has_string(const json_t *a, const char *s)
{
    size_t i;
    json_t *v;
    json_array_foreach(a, i, v)
        if (json_is_string(v) && strcmp(json_string_value(v), s) == 0)
            return true;
    return false;
}

static const char *str(const json_t *o, const char *key)
{
    const char *s = json_string_value(json_object_get(o, key));
    ck_assert_msg(s != NULL, "no string %s", key);
    return s;
}

START_TEST(the_sandbox_has_its_defaults)
{
    json_t *o = parse("{}");
    struct backend_cluster c = {.id = "c1", .name = "local", .kind = "local", .options = o,
                                .data_dir = DATA_DIR};
    ck_assert(!localopts_unconfined(o));
    char *wd = localopts_workdir(&c);
    ck_assert_str_eq(wd, DATA_DIR "/jobs");
    free(wd);
    json_t *s = localopts_sandbox(&c);
    ck_assert_ptr_nonnull(s);
    ck_assert_str_eq(str(s, "mode"), "bwrap");
    ck_assert_str_eq(str(s, "network"), "none");
    ck_assert_str_eq(str(s, "device_dir"), "/dev");
    ck_assert_str_eq(str(s, "image_cache"), DATA_DIR "/images");
    const json_t *hidden = json_object_get(s, "hidden");
    ck_assert(has_string(hidden, DATA_DIR));
    ck_assert(has_string(hidden, DATA_DIR "/jobs"));
    ck_assert(has_string(hidden, "/etc/aidc"));
    ck_assert_uint_eq(json_array_size(json_object_get(s, "writable")), 0);
    ck_assert_int_eq(json_integer_value(json_object_get(s, "pids_max")), LOCALOPTS_PIDS_MAX);
    ck_assert_int_eq(json_integer_value(json_object_get(s, "image_cache_bytes")),
                     (json_int_t)LOCALOPTS_CACHE_GIB << 30);
    ck_assert_int_eq(json_integer_value(json_object_get(s, "pull_timeout_seconds")),
                     LOCALOPTS_PULL_SECONDS);
    ck_assert_str_ne(str(s, "hostname"), "");
    const char *parent = str(s, "cgroup_parent");
    ck_assert_msg(parent[0] == '/', "cgroup_parent \"%s\"", parent);
    if (geteuid() == 0)
        ck_assert_str_eq(parent, "/aidc");
    json_decref(s);
    json_decref(o);
}
END_TEST

START_TEST(the_sandbox_follows_the_options)
{
    json_t *o = parse(full);
    json_object_set_new(o, "sandbox", json_string("unconfined"));
    char err[512] = "";
    ck_assert_msg(localopts_check(o, err, sizeof err), "%s", err);
    struct backend_cluster c = {.options = o, .data_dir = DATA_DIR, .storage_root = "/scratch/aidc"};
    ck_assert(localopts_unconfined(o));
    char *wd = localopts_workdir(&c);
    ck_assert_str_eq(wd, "/srv/aidc/jobs");
    free(wd);
    json_t *s = localopts_sandbox(&c);
    ck_assert_ptr_nonnull(s);
    ck_assert_str_eq(str(s, "mode"), "unconfined");
    ck_assert_str_eq(str(s, "network"), "outbound");
    ck_assert_str_eq(str(s, "device_dir"), "/dev");
    ck_assert_str_eq(str(s, "image_cache"), "/var/cache/aidc");
    ck_assert_str_eq(str(s, "cgroup_parent"), "/aidc");
    ck_assert_str_eq(str(s, "hostname"), "gpu-01");
    const json_t *hidden = json_object_get(s, "hidden"), *writable = json_object_get(s, "writable");
    ck_assert(has_string(hidden, DATA_DIR));
    ck_assert(has_string(hidden, "/srv/aidc/jobs"));
    ck_assert(has_string(hidden, "/etc/aidc"));
    ck_assert(has_string(hidden, "/srv/secrets"));
    ck_assert(has_string(hidden, "/scratch/aidc")); /* the storage root, under a writable path */
    ck_assert_uint_eq(json_array_size(writable), 2);
    ck_assert(has_string(writable, "/scratch"));
    ck_assert(has_string(writable, "/data/shared"));
    ck_assert_int_eq(json_integer_value(json_object_get(s, "pids_max")), 8192);
    ck_assert_int_eq(json_integer_value(json_object_get(s, "image_cache_bytes")),
                     (json_int_t)100 << 30);
    ck_assert_int_eq(json_integer_value(json_object_get(s, "pull_timeout_seconds")), 600);
    json_decref(s);
    /* the names of earlier versions mean the sandbox */
    json_object_set_new(o, "sandbox", json_string("required"));
    ck_assert(!localopts_unconfined(o));
    s = localopts_sandbox(&c);
    ck_assert_str_eq(str(s, "mode"), "bwrap");
    json_decref(s);
    json_decref(o);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("localopts");
    TCase *tc = tcase_create("localopts");
    tcase_add_test(tc, empty_and_full_options_pass);
    tcase_add_loop_test(tc, a_bad_option_is_refused_by_name, 0, (int)(sizeof bad / sizeof *bad));
    tcase_add_test(tc, a_uid_range_that_overflows_is_refused);
    tcase_add_test(tc, a_tenant_uid_is_within_the_range);
    tcase_add_test(tc, gpu_types_come_in_name_order);
    tcase_add_test(tc, the_sandbox_has_its_defaults);
    tcase_add_test(tc, the_sandbox_follows_the_options);
    suite_add_tcase(s, tc);
    return suite_run(s);
}
