/*
 * test_jobmount.c - storage/jobmount.h: a submission's "mounts" checked item
 * by item (every problem reported, with the item and member it concerns),
 * turned into the job's own spaces (its tenant, its project, its submitter:
 * nothing in the array can name anyone else's), their fixed paths in a
 * container and the environment that says where they are.
 */
#include "storage/jobmount.h"
#include "tests/support/suite.h"

#include <check.h>
#include <jansson.h>
#include <stdio.h>
#include <string.h>

/* The problems one check reported, as "index.key:problem" lines. */
static char seen[2048];

static void note(void *arg, enum jobmount_problem p, long index, const char *key, long other)
{
    (void)arg;
    size_t n = strlen(seen);
    if (other >= 0)
        snprintf(seen + n, sizeof seen - n, "%ld.%s:%d@%ld\n", index, key ? key : "-", (int)p,
                 other);
    else
        snprintf(seen + n, sizeof seen - n, "%ld.%s:%d\n", index, key ? key : "-", (int)p);
}

/* The problems of text (JSON) as lines; "" when it is accepted. */
static const char *check(const char *text)
{
    seen[0] = '\0';
    json_error_t jerr;
    json_t *m = json_loads(text, JSON_DECODE_ANY, &jerr);
    ck_assert_msg(m != NULL, "%s: %s", text, jerr.text);
    bool ok = jobmount_check(m, note, NULL);
    json_decref(m);
    ck_assert_msg(ok == (seen[0] == '\0'), "%s: %s but reported \"%s\"", text,
                  ok ? "accepted" : "refused", seen);
    return seen;
}

static char expect[256];
static const char *line(long index, const char *key, enum jobmount_problem p)
{
    snprintf(expect, sizeof expect, "%ld.%s:%d\n", index, key, (int)p);
    return expect;
}

START_TEST(valid_mounts_are_accepted)
{
    ck_assert_str_eq(check("null"), "");
    ck_assert_str_eq(check("[]"), "");
    ck_assert_str_eq(check("[{\"space\":\"project\"},{\"space\":\"home\"},"
                           "{\"space\":\"dataset\",\"name\":\"imagenet\",\"read_only\":true},"
                           "{\"space\":\"dataset\",\"name\":\"coco-2017.v1_a\"}]"),
                     "");
    ck_assert_str_eq(check("[{\"space\":\"project\",\"read_only\":true},"
                           "{\"space\":\"home\",\"read_only\":false}]"),
                     "");
    jobmount_check(NULL, note, NULL); /* absent: none */
}
END_TEST

START_TEST(each_problem_is_named)
{
    ck_assert_str_eq(check("{}"), line(-1, "-", JOBMOUNT_NOT_ARRAY));
    ck_assert_str_eq(check("\"project\""), line(-1, "-", JOBMOUNT_NOT_ARRAY));
    ck_assert_str_eq(check("[\"project\"]"), line(0, "-", JOBMOUNT_NOT_OBJECT));
    ck_assert_str_eq(check("[{}]"), line(0, "space", JOBMOUNT_SPACE_MISSING));
    ck_assert_str_eq(check("[{\"space\":\"scratch\"}]"), line(0, "space", JOBMOUNT_SPACE_INVALID));
    ck_assert_str_eq(check("[{\"space\":\"Project\"}]"), line(0, "space", JOBMOUNT_SPACE_INVALID));
    ck_assert_str_eq(check("[{\"space\":1}]"), line(0, "space", JOBMOUNT_SPACE_INVALID));
    ck_assert_str_eq(check("[{\"space\":\"project\",\"path\":\"/etc\"}]"),
                     line(0, "path", JOBMOUNT_UNKNOWN_KEY));
    ck_assert_str_eq(check("[{\"space\":\"project\",\"name\":\"other\"}]"),
                     line(0, "name", JOBMOUNT_NAME_NOT_ALLOWED));
    ck_assert_str_eq(check("[{\"space\":\"home\",\"name\":\"bob\"}]"),
                     line(0, "name", JOBMOUNT_NAME_NOT_ALLOWED));
    ck_assert_str_eq(check("[{\"space\":\"dataset\"}]"), line(0, "name", JOBMOUNT_NAME_MISSING));
    static const char *const names[] = {"\"\"", "\"..\"", "\".\"", "\"a/b\"", "\"../x\"",
                                        "\"Imagenet\"", "\"1x\"", "\"x y\"", "null", "3",
                                        "\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\""};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
        char text[200];
        snprintf(text, sizeof text, "[{\"space\":\"dataset\",\"name\":%s}]", names[i]);
        ck_assert_str_eq(check(text), line(0, "name", JOBMOUNT_NAME_INVALID));
    }
    ck_assert_str_eq(check("[{\"space\":\"dataset\",\"name\":\"d\",\"read_only\":false}]"),
                     line(0, "read_only", JOBMOUNT_DATASET_WRITABLE));
    ck_assert_str_eq(check("[{\"space\":\"project\",\"read_only\":\"yes\"}]"),
                     line(0, "read_only", JOBMOUNT_READ_ONLY_TYPE));
    ck_assert_str_eq(check("[{\"space\":\"project\",\"read_only\":null}]"),
                     line(0, "read_only", JOBMOUNT_READ_ONLY_TYPE));
    /* every problem of every item, in order */
    ck_assert_str_eq(check("[{\"space\":\"home\"},7,{\"space\":\"x\",\"y\":1}]"),
                     "1.-:2\n2.y:3\n2.space:5\n");
}
END_TEST

START_TEST(a_space_is_mounted_once)
{
    char want[64];
    snprintf(want, sizeof want, "1.-:%d@0\n", (int)JOBMOUNT_DUPLICATE);
    ck_assert_str_eq(check("[{\"space\":\"project\"},{\"space\":\"project\",\"read_only\":true}]"),
                     want);
    ck_assert_str_eq(check("[{\"space\":\"home\"},{\"space\":\"home\"}]"), want);
    snprintf(want, sizeof want, "2.-:%d@0\n", (int)JOBMOUNT_DUPLICATE);
    ck_assert_str_eq(check("[{\"space\":\"dataset\",\"name\":\"a\"},{\"space\":\"dataset\","
                           "\"name\":\"b\"},{\"space\":\"dataset\",\"name\":\"a\"}]"),
                     want);
    /* a dataset may share a name with the project: different spaces */
    ck_assert_str_eq(check("[{\"space\":\"project\"},{\"space\":\"dataset\",\"name\":\"project\"}]"),
                     "");
}
END_TEST

START_TEST(at_most_eight)
{
    char text[1024] = "[";
    for (int i = 0; i < JOBMOUNT_MAX; i++)
        snprintf(text + strlen(text), sizeof text - strlen(text), "%s{\"space\":\"dataset\","
                 "\"name\":\"d%d\"}", i ? "," : "", i);
    strcat(text, "]");
    ck_assert_str_eq(check(text), "");
    text[strlen(text) - 1] = '\0';
    strcat(text, ",{\"space\":\"project\"}]");
    ck_assert_str_eq(check(text), line(-1, "-", JOBMOUNT_TOO_MANY));
}
END_TEST

static int parse(const char *text, const char *tenant, const char *project, const char *user,
                 struct jobmount *out, char *err)
{
    json_t *m = json_loads(text, 0, NULL);
    ck_assert_ptr_nonnull(m);
    int n = jobmount_parse(m, tenant, project, user, out, err, 256);
    json_decref(m);
    return n;
}

START_TEST(the_spaces_are_the_jobs_own)
{
    struct jobmount m[JOBMOUNT_MAX];
    char err[256] = "";
    int n = parse("[{\"space\":\"dataset\",\"name\":\"imagenet\",\"read_only\":true},"
                  "{\"space\":\"project\"},{\"space\":\"home\",\"read_only\":true},"
                  "{\"space\":\"dataset\",\"name\":\"coco\"}]",
                  "chem", "mol", "ann", m, err);
    ck_assert_msg(n == 4, "%d: %s", n, err);
    ck_assert_int_eq(m[0].space.kind, SPACE_DATASET);
    ck_assert_str_eq(m[0].rel, "chem/datasets/imagenet");
    ck_assert_str_eq(m[0].target, "/data/datasets/imagenet");
    ck_assert(m[0].read_only);
    ck_assert_str_eq(m[1].rel, "chem/projects/mol");
    ck_assert_str_eq(m[1].target, "/data/project");
    ck_assert(!m[1].read_only);
    ck_assert_str_eq(m[2].rel, "chem/home/ann");
    ck_assert_str_eq(m[2].target, "/home/ann");
    ck_assert(m[2].read_only);
    ck_assert(m[3].read_only); /* a dataset is read-only without saying so */
    for (int i = 0; i < n; i++)
        ck_assert_str_eq(m[i].space.tenant, "chem");
    ck_assert_int_eq(parse("[]", "chem", "mol", "ann", m, err), 0);
    ck_assert_int_eq(jobmount_parse(NULL, "chem", "mol", "ann", m, err, sizeof err), 0);
}
END_TEST

START_TEST(names_that_are_no_spaces_are_refused)
{
    struct jobmount m[JOBMOUNT_MAX];
    char err[256] = "";
    /* what the backends are handed is checked again: a name no space has fails the job */
    ck_assert_int_eq(parse("[{\"space\":\"project\"}]", "chem", "../x", "ann", m, err), -1);
    ck_assert_msg(strstr(err, "mounts[0]") != NULL, "%s", err);
    ck_assert_int_eq(parse("[{\"space\":\"home\"}]", "chem", "mol", "a/b", m, err), -1);
    ck_assert_int_eq(parse("[{\"space\":\"home\"}]", "chem", "mol", NULL, m, err), -1);
    ck_assert_int_eq(parse("[{\"space\":\"project\"}]", "Chem", "mol", "ann", m, err), -1);
    ck_assert_int_eq(parse("[{\"space\":\"project\"}]", NULL, "mol", "ann", m, err), -1);
    ck_assert_int_eq(parse("[{\"space\":\"dataset\",\"name\":\"../../etc\"}]", "chem", "mol",
                           "ann", m, err),
                     -1);
    ck_assert_msg(strstr(err, "mounts[0].name") != NULL, "%s", err);
    ck_assert_int_eq(parse("[{\"space\":\"project\",\"name\":\"lab\"}]", "chem", "mol", "ann", m,
                           err),
                     -1);
}
END_TEST

START_TEST(the_environment_says_where)
{
    struct jobmount m[JOBMOUNT_MAX];
    char err[256] = "";
    int n = parse("[{\"space\":\"project\"},{\"space\":\"home\"},{\"space\":\"dataset\","
                  "\"name\":\"d\"}]",
                  "chem", "mol", "ann", m, err);
    ck_assert_int_eq(n, 3);
    json_t *env = json_object();
    jobmount_env(m, (size_t)n, NULL, env);
    char *text = json_dumps(env, JSON_COMPACT | JSON_SORT_KEYS);
    ck_assert_str_eq(text, "{\"AIDC_DATASETS_DIR\":\"/data/datasets\",\"AIDC_HOME_DIR\":"
                           "\"/home/ann\",\"AIDC_PROJECT_DIR\":\"/data/project\"}");
    free(text);
    json_object_clear(env);
    jobmount_env(m, (size_t)n, "/srv/aidc", env);
    text = json_dumps(env, JSON_COMPACT | JSON_SORT_KEYS);
    ck_assert_str_eq(text, "{\"AIDC_DATASETS_DIR\":\"/srv/aidc/chem/datasets\",\"AIDC_HOME_DIR\":"
                           "\"/srv/aidc/chem/home/ann\",\"AIDC_PROJECT_DIR\":"
                           "\"/srv/aidc/chem/projects/mol\"}");
    free(text);
    json_object_clear(env);
    jobmount_env(m, 0, "/srv/aidc", env); /* nothing mounted, nothing said */
    ck_assert_int_eq(json_object_size(env), 0);
    json_decref(env);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("jobmount");
    TCase *tc = tcase_create("jobmount");
    tcase_add_test(tc, valid_mounts_are_accepted);
    tcase_add_test(tc, each_problem_is_named);
    tcase_add_test(tc, a_space_is_mounted_once);
    tcase_add_test(tc, at_most_eight);
    tcase_add_test(tc, the_spaces_are_the_jobs_own);
    tcase_add_test(tc, names_that_are_no_spaces_are_refused);
    tcase_add_test(tc, the_environment_says_where);
    suite_add_tcase(s, tc);
    return suite_run(s);
}
