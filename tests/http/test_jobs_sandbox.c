/*
 * test_jobs_sandbox.c - a job of the real local executor, started by aidcd,
 * inside its Landlock sandbox (backends/sandbox.h, options.sandbox
 * "required"): it cannot read aidcd's session key, list its data directory,
 * read another job's directory or an operator's hidden_paths, nor signal
 * aidcd (Landlock ABI 6+); it can write its own directory, its TMPDIR and the
 * writable_paths, and read beside the hidden paths; its TMPDIR is removed
 * when it ends, without following links. On a kernel without
 * Landlock the job must fail instead, naming why.
 */
#include "backends/sandbox.h"
#include "tests/support/client.h"
#include "tests/support/harness.h"
#include "tests/support/jobs.h"
#include "tests/support/suite.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static char *ann;
static char out_dir[340], private_dir[340];

static void write_text(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fputs(text, f);
    ck_assert_int_eq(fclose(f), 0);
}

static void setup(void)
{
    harness_setup("jobssandbox", jobs_fast_env);
    const char *shared = jobs_shared_dir();
    snprintf(out_dir, sizeof out_dir, "%s/out", shared);
    snprintf(private_dir, sizeof private_dir, "%s/private", shared);
    ck_assert_int_eq(mkdir(out_dir, 0700), 0);
    ck_assert_int_eq(mkdir(private_dir, 0700), 0);
    write_text(fmt("%s/readme", shared), "beside\n");
    write_text(fmt("%s/p", private_dir), "operator's\n");
    jobs_admin_ok("POST", "/api/v1/clusters",
                  fmt("{\"name\":\"local\",\"kind\":\"local\",\"options\":{\"gpus\":{\"a100\":2},"
                      "\"sandbox\":\"required\",\"writable_paths\":[\"%s\"],"
                      "\"hidden_paths\":[\"%s\"]}}",
                      out_dir, private_dir),
                  201);
    ann = jobs_tenant_member("chem", "mol", "{\"gpu:a100\":{\"guaranteed\":2,\"limit\":2}}",
                             "ann");
}

static void teardown(void)
{
    free(ann);
    jobs_shared_dir_remove();
    harness_teardown();
}

/* Each probe prints "<name> yes" when its command succeeded, else "<name> no". */
static const char script[] =
    "probe() { if sh -c \"$2\" >/dev/null 2>&1; then echo \"$1 yes\"; else echo \"$1 no\"; fi; }\n"
    "probe key 'cat \"$KEY\"'\n"
    "probe datadir 'ls \"$DATA\"'\n"
    "probe other 'cat \"$OTHER/mine\"'\n"
    "probe hidden_path 'cat \"$PRIVATE/p\"'\n"
    "probe own 'echo x > own && grep -q x own'\n"
    "probe tmpdir 'echo y > \"$TMPDIR/t\" && grep -q y \"$TMPDIR/t\"'\n"
    "probe beside 'grep -q beside \"$SHARED/readme\"'\n"
    "probe writable_path 'echo z > \"$OUT/z\"'\n"
    "probe system 'test -r /bin/sh && cat /bin/sh > /dev/null'\n"
    "probe signal 'kill -0 \"$AIDCD\"'\n"
    /* left in TMPDIR for the clean-up, which must not follow the link */
    "mkdir -p \"$TMPDIR/d/e\" && echo f > \"$TMPDIR/d/e/f\" && ln -s \"$OUT\" \"$TMPDIR/d/out\"\n";

START_TEST(a_job_sees_neither_aidcds_secrets_nor_other_jobs)
{
    int abi = sandbox_abi();
    /* another job's directory, with something in it */
    char *first = jobs_submit(ann, "chem",
                              "{\"project\":\"mol\",\"name\":\"first\",\"script\":"
                              "\"echo mine > mine\"}");
    json_t *j = jobs_wait(ann, "chem", first, "succeeded,failed", 30);
    if (abi < 1) { /* "required" and no Landlock: no job runs unconfined */
        ck_assert_str_eq(json_string_value(json_object_get(j, "state")), "failed");
        fprintf(stderr, "test_jobs_sandbox: no Landlock here; the job failed as it must\n");
        json_decref(j);
        free(first);
        return;
    }
    ck_assert_str_eq(json_string_value(json_object_get(j, "state")), "succeeded");
    json_decref(j);

    json_t *body = json_pack(
        "{s:s, s:s, s:s, s:{s:s, s:s, s:s, s:s, s:s, s:s, s:s}}", "project", "mol", "name",
        "probes", "script", script, "env", "KEY", fmt("%s/jwt.key", harness_srv.data_dir), "DATA",
        harness_srv.data_dir, "OTHER", fmt("%s/jobs/%s", harness_srv.data_dir, first), "PRIVATE",
        private_dir, "SHARED", jobs_shared_dir(), "OUT", out_dir, "AIDCD",
        fmt("%d", (int)harness_srv.pid));
    char *text = json_dumps(body, JSON_COMPACT);
    json_decref(body);
    char *id = jobs_submit(ann, "chem", text);
    free(text);
    j = jobs_wait(ann, "chem", id, "succeeded,failed", 30);
    ck_assert_str_eq(json_string_value(json_object_get(j, "state")), "succeeded");
    json_decref(j);
    char *out = jobs_logs(ann, "chem", id, NULL);
    char want[400];
    snprintf(want, sizeof want,
             "key no\ndatadir no\nother no\nhidden_path no\nown yes\ntmpdir yes\nbeside yes\n"
             "writable_path yes\nsystem yes\nsignal %s\n",
             abi >= 6 ? "no" : "yes");
    ck_assert_msg(strcmp(out, want) == 0, "the job saw:\n%s\nexpected:\n%s", out, want);
    free(out);
    /* its TMPDIR goes after it ended; what the link there pointed to stays */
    struct stat st;
    const char *tmp = fmt("%s/jobs/%s/tmp", harness_srv.data_dir, id);
    double until = jobs_now() + 30;
    while (lstat(tmp, &st) == 0 && jobs_now() < until)
        jobs_nap_ms(50);
    ck_assert_msg(lstat(tmp, &st) != 0, "%s is still there 30 s after the job ended", tmp);
    /* what it wrote where it may */
    ck_assert_int_eq(stat(fmt("%s/z", out_dir), &st), 0);
    ck_assert_int_eq(stat(fmt("%s/jobs/%s/own", harness_srv.data_dir, id), &st), 0);
    free(id);
    free(first);
}
END_TEST

int main(void)
{
    harness_require_pg();
    Suite *s = suite_create("jobs_sandbox");
    TCase *tc = tcase_create("jobs_sandbox");
    tcase_add_unchecked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, a_job_sees_neither_aidcds_secrets_nor_other_jobs);
    suite_add_tcase(s, tc);
    return suite_run(s);
}
