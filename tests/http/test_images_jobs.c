/*
 * test_images_jobs.c - jobs that name images, through a real aidcd running
 * them on the local executor: the image is resolved to a digest among the
 * tenant's and the public ones (other tenants', unknown, malformed and gone
 * ones refused), the job and its submit audit keep that digest, and the
 * dispatcher audits the cluster's pull of the reference pinned to it.
 *
 * The images themselves (registration, visibility, filters, changes) are
 * tested in test_images.c; what both share is in tests/support/imagestest.c.
 */
#include "tests/support/audittest.h"
#include "tests/support/client.h"
#include "tests/support/harness.h"
#include "tests/support/imagestest.h"
#include "tests/support/jobs.h"
#include "tests/support/suite.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* am: member of alpha (which has project p1), the submitter; bm: member of beta */
static char *am, *bm;

static void setup(void)
{
    harness_setup("images_jobs", jobs_fast_env);
    jobs_local_cluster("{\"a100\":1}");
    /* alpha, beta, the registry "reg" and the public image library/pub:1 */
    imagestest_world(NULL);
    make_project("alpha", "p1");
    am = imagestest_user("am", NULL, "alpha", "member");
    bm = imagestest_user("bm", NULL, "beta", "member");
}

static void teardown(void)
{
    free(am);
    free(bm);
    harness_teardown();
}

/* Submit a CPU job naming image (NULL: none) as am; the answer in *r. */
static long submit(const char *image, struct http_res *r)
{
    const char *body =
        image ? fmt("{\"project\":\"p1\",\"name\":\"img\",\"image\":\"%s\",\"command\":[\"true\"]}",
                    image)
              : "{\"project\":\"p1\",\"name\":\"plain\",\"command\":[\"true\"]}";
    return reqj("POST", "/api/v1/tenants/alpha/jobs", am, body, r);
}

/* The job's image.pull events with digest (NULL: any), waited for up to wait_s while 0. */
static long long pulls(const char *job, const char *digest, double wait_s)
{
    const char *p[2] = {job, digest};
    const char *sql = "SELECT count(*) FROM audit_log WHERE action = 'image.pull'"
                      " AND resource_type = 'job' AND resource_id = $1"
                      " AND ($2::text IS NULL OR details->>'digest' = $2)";
    double until = audittest_now() + wait_s;
    long long n;
    while ((n = imagestest_sql_num(sql, 2, p)) == 0 && audittest_now() < until)
        audittest_nap();
    return n;
}

/* Submit as am, and it must be 201: the job's id into id, its image_digest must be want. */
static void submit_ok(const char *image, const char *want, char id[37])
{
    struct http_res r;
    long st = submit(image, &r);
    ck_assert_msg(st == 201, "%s: %ld %.400s", image ? image : "no image", st, r.body);
    ck_assert_str_eq(jstr(r.json, "image") ? jstr(r.json, "image") : "-", image ? image : "-");
    ck_assert_msg(want ? imagestest_is(r.json, "image_digest", want)
                       : json_is_null(json_object_get(r.json, "image_digest")),
                  "%s: %.400s", image ? image : "no image", r.body);
    snprintf(id, 37, "%s", jstr(r.json, "id"));
    http_res_free(&r);
}

START_TEST(jobs_resolve_their_image_to_a_digest)
{
    char own[37], theirs[37], gone[37], job[37], da[72], dpub[72], dt[72], ref[2][160];
    imagestest_reg(am, "alpha", "alpha/app", "v1", 60, 1, "", own);
    imagestest_reg(bm, "beta", "beta/secret", "v1", 61, 1, "", theirs);
    imagestest_reg(am, "alpha", "teams/alpha/gone", "v1", 62, 1, "\"registry\":\"reg\"", gone);
    imagestest_digest_of(60, da);
    imagestest_digest_of(0xb0b, dpub);
    imagestest_digest_of(61, dt);
    /* its own image by tag (the digest is what the job and its audit keep), a public one,
     * its own by digest */
    submit_ok("alpha/app:v1", da, job);
    json_t *j = jobs_get(am, "alpha", job);
    ck_assert_str_eq(jstr(j, "image_digest"), da);
    json_decref(j);
    const char *p1[2] = {job, da};
    imagestest_count_is(1,
                        "SELECT count(*) FROM audit_log WHERE action = 'job.submit'"
                        " AND resource_id = $1 AND details->>'image_digest' = $2",
                        2, p1);
    submit_ok("library/pub:1", dpub, job);
    snprintf(ref[0], sizeof ref[0], "alpha/app@%s", da);
    submit_ok(ref[0], da, job);
    /* another tenant's, unknown, a digest not of that repository: 422 naming image */
    long long before = imagestest_sql_num("SELECT count(*) FROM jobs", 0, NULL);
    snprintf(ref[0], sizeof ref[0], "alpha/app@%s", dt);
    snprintf(ref[1], sizeof ref[1], "beta/secret@%s", dt);
    const char *unusable[] = {"beta/secret:v1", "nope/none:v1", "alpha/app:v2", ref[0], ref[1]};
    struct http_res r;
    for (size_t i = 0; i < 5; i++) {
        ck_assert_int_eq(submit(unusable[i], &r), 422);
        ck_assert_msg(imagestest_names_field(r.json, "image", "not available"), "%s: %.400s",
                      unusable[i], r.body);
        http_res_free(&r);
    }
    /* malformed references: 400 */
    const char *malformed[] = {"UPPER/case", "alpha/app:.v1", "alpha/app@sha256:abc", "a//b:1"};
    for (size_t i = 0; i < 4; i++)
        imagestest_refused(
            "POST", "/api/v1/tenants/alpha/jobs", am,
            fmt("{\"project\":\"p1\",\"name\":\"x\",\"image\":\"%s\",\"command\":[\"true\"]}",
                malformed[i]),
            400, "image", malformed[i]);
    imagestest_count_is(before, "SELECT count(*) FROM jobs", 0, NULL);
    /* an image its registry's last sync found missing: usable before, not after */
    imagestest_digest_of(62, dt);
    submit_ok("teams/alpha/gone:v1", dt, job);
    const char *pg[1] = {gone};
    PQclear(harness_sql(harness_srv.owner_url,
                        "UPDATE images SET upstream_deleted_at = now() WHERE id = $1::uuid", 1,
                        pg));
    ck_assert_int_eq(submit("teams/alpha/gone:v1", &r), 422);
    ck_assert_msg(imagestest_names_field(r.json, "image", "gone"), "%.400s", r.body);
    http_res_free(&r);
    imagestest_count_is(before + 1, "SELECT count(*) FROM jobs", 0, NULL);
    /* without an image, as before */
    submit_ok(NULL, NULL, job);
}
END_TEST

START_TEST(the_dispatcher_audits_each_pull_with_its_digest)
{
    char img[37], jobs[3][37], d[2][72], pinned[160];
    imagestest_reg(am, "alpha", "alpha/pulled", "v1", 63, 1, "", img);
    imagestest_digest_of(63, d[0]);
    imagestest_digest_of(0xb0b, d[1]);
    submit_ok("alpha/pulled:v1", d[0], jobs[0]);
    submit_ok("library/pub:1", d[1], jobs[1]);
    submit_ok(NULL, NULL, jobs[2]);
    /* the local executor really pulls the image by its pinned digest: from a registry
     * that is not there (these images exist only in aidc's catalog), so those jobs fail
     * saying so; the job without an image runs */
    for (int i = 0; i < 3; i++) {
        json_t *j = jobs_wait(am, "alpha", jobs[i], "succeeded,failed,cancelled", 30);
        const char *state = jstr(j, "state"), *reason = jstr(j, "reason");
        if (i < 2)
            ck_assert_msg(strcmp(state, "failed") == 0 && reason &&
                              strncmp(reason, "image pull failed: ", 19) == 0,
                          "job %d: %s (%s)", i, state, reason);
        else
            ck_assert_msg(strcmp(state, "succeeded") == 0, "job %d: %s (%s)", i, state, reason);
        json_decref(j);
    }
    /* the pull is recorded with the delivery, before the job runs: there by now, or soon */
    ck_assert_int_eq(pulls(jobs[0], d[0], 20), 1);
    ck_assert_int_eq(pulls(jobs[1], d[1], 20), 1);
    /* the cluster was given the reference pinned to the digest */
    snprintf(pinned, sizeof pinned, "alpha/pulled@%s", d[0]);
    const char *p[2] = {jobs[0], pinned};
    imagestest_count_is(1,
                        "SELECT count(*) FROM audit_log WHERE action = 'image.pull'"
                        " AND resource_id = $1 AND details->>'image' = $2"
                        " AND details->>'cluster' = 'local' AND tenant_slug = 'alpha'"
                        " AND outcome = 'success'",
                        2, p);
    /* a job without an image pulls nothing */
    ck_assert_int_eq(pulls(jobs[2], NULL, 0), 0);
}
END_TEST

int main(void)
{
    /* one server for both: each test works on images (and jobs) of its own */
    const TTest *tests[] = {jobs_resolve_their_image_to_a_digest,
                            the_dispatcher_audits_each_pull_with_its_digest, NULL};
    harness_require_pg();
    jobs_reap_at_exit();
    return suite_run(imagestest_suite("images_jobs", setup, teardown, tests));
}
