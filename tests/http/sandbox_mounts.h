/*
 * sandbox_mounts.h - storage spaces in local jobs (docs/storage.md, "Mounts
 * in jobs"), tried as a malicious member would, through the public API, with
 * the fixture of sandbox_fixture.h (aidcd as root, or as SANDBOX_RUN_AS):
 *
 * - a job writes its project's space at /data/project and its home at
 *   /home/<user>; the files are there on disk, its tenant's (root) or
 *   aidcd's user's; AIDC_PROJECT_DIR and AIDC_HOME_DIR say where; the job
 *   shows its mounts as given;
 * - a dataset is read-only, even a file anyone may write; a missing one is
 *   422 and no job;
 * - nothing else of the storage root is in view: not the root, not the
 *   tenant's folder, not another tenant's space (nor its host path);
 * - links and FIFOs one job plants in its space lead nowhere in the next
 *   (they resolve inside the sandbox), and a link where a space should be
 *   fails the job at its start instead of mounting what it points at;
 * - unconfined (root only): host paths, and the tenant's uid keeps it out of
 *   other tenants' spaces.
 *
 * Included by sandbox_cases.h (the definitions are static).
 */
#ifndef AIDC_TEST_SANDBOX_MOUNTS_H
#define AIDC_TEST_SANDBOX_MOUNTS_H

#include "tests/http/sandbox_fixture.h"

#include <dirent.h>

/* aidcd's storage root (AIDC_STORAGE_ROOT's default: <data dir>/storage). */
static const char *sbm_root(void)
{
    return fmt("%s/storage", harness_srv.data_dir);
}

/* Who owns a tenant's project and home spaces: its uid (root), else aidcd's user. */
static long sbm_owner(const char *tenant)
{
    return SANDBOX_RUN_AS ? SANDBOX_RUN_AS : sb_uid_of(tenant);
}

static void sbm_mkdir(const char *path, long uid, long gid, mode_t mode)
{
    ck_assert_msg(mkdir(path, mode) == 0 || errno == EEXIST, "%s: %s", path, strerror(errno));
    ck_assert_int_eq(chown(path, (uid_t)uid, (gid_t)gid), 0);
    ck_assert_int_eq(chmod(path, mode), 0);
}

/*
 * A dataset of tenant holding labels.txt ("cat\ndog\n", mode 0666: only the
 * mount keeps a job from writing it), made as the files API makes one: root's
 * with the tenant's group (0750), or aidcd's user's.
 */
static void sbm_dataset(const char *tenant, const char *name)
{
    long uid = SANDBOX_RUN_AS ? SANDBOX_RUN_AS : 0, gid = sbm_owner(tenant);
    mode_t mode = SANDBOX_RUN_AS ? 0700 : 0750;
    char path[512];
    sbm_mkdir(sbm_root(), uid, uid, 0711);
    snprintf(path, sizeof path, "%s/%s", sbm_root(), tenant);
    sbm_mkdir(path, uid, gid, mode);
    snprintf(path, sizeof path, "%s/%s/datasets", sbm_root(), tenant);
    sbm_mkdir(path, uid, gid, mode);
    snprintf(path, sizeof path, "%s/%s/datasets/%s", sbm_root(), tenant, name);
    sbm_mkdir(path, uid, gid, mode);
    snprintf(path, sizeof path, "%s/%s/datasets/%s/labels.txt", sbm_root(), tenant, name);
    sb_write(path, "cat\ndog\n", 0666);
    ck_assert_int_eq(chown(path, (uid_t)uid, (gid_t)uid), 0);
}

/* extra for sb_submit: mounts (JSON text) and env members (may be NULL). */
static json_t *sbm_extra(const char *mounts, json_t *env)
{
    json_t *m = json_loads(mounts, 0, NULL);
    ck_assert_ptr_nonnull(m);
    json_t *x = json_pack("{s:o}", "mounts", m);
    if (env)
        json_object_set_new(x, "env", env);
    return x;
}

static char *sbm_file(const char *rel)
{
    return harness_read_file(fmt("%s/%s", sbm_root(), rel));
}

START_TEST(a_job_writes_its_project_and_home)
{
    static const char mounts[] = "[{\"space\":\"project\"},{\"space\":\"home\"}]";
    char *id = sb_submit(ann, "chem", "mol",
                         "echo hello > /data/project/out.txt && echo wrote project\n"
                         "echo mine > \"$AIDC_HOME_DIR/h.txt\" && echo wrote home\n"
                         "echo \"p=$AIDC_PROJECT_DIR h=$AIDC_HOME_DIR d=${AIDC_DATASETS_DIR:-}\"\n"
                         "echo data $(ls /data) home $(ls /home)\n"
                         "touch /data/x /home/x 2>/dev/null || echo tops read-only\n",
                         sbm_extra(mounts, NULL));
    json_t *j = jobs_wait(ann, "chem", id, "succeeded,failed,cancelled", 60);
    char *err = jobs_logs(ann, "chem", id, "stream=stderr");
    ck_assert_msg(strcmp(sb_sv(j, "state"), "succeeded") == 0, "%s: %s / %s", sb_sv(j, "state"),
                  sb_sv(j, "reason"), err);
    free(err);
    /* shown as given */
    json_t *given = json_loads(mounts, 0, NULL);
    ck_assert_msg(json_equal(json_object_get(j, "mounts"), given), "mounts: %s",
                  json_dumps(json_object_get(j, "mounts"), 0));
    json_decref(given);
    json_decref(j);
    char *out = jobs_logs(ann, "chem", id, "stream=stdout");
    ck_assert_str_eq(out, "wrote project\nwrote home\np=/data/project h=/home/ann d=\n"
                          "data project home ann\ntops read-only\n");
    free(out);
    /* on disk, the tenant's */
    char *text = sbm_file("chem/projects/mol/out.txt");
    ck_assert_msg(text && strcmp(text, "hello\n") == 0, "out.txt: %s", text ? text : "missing");
    free(text);
    text = sbm_file("chem/home/ann/h.txt");
    ck_assert_msg(text && strcmp(text, "mine\n") == 0, "h.txt: %s", text ? text : "missing");
    free(text);
    struct stat st;
    ck_assert_int_eq(stat(fmt("%s/chem/projects/mol/out.txt", sbm_root()), &st), 0);
    ck_assert_int_eq((long)st.st_uid, sbm_owner("chem"));
    ck_assert_int_eq(stat(fmt("%s/chem/projects/mol", sbm_root()), &st), 0);
    ck_assert_int_eq((long)st.st_uid, sbm_owner("chem"));
    ck_assert_int_eq(st.st_mode & 07777, SANDBOX_RUN_AS ? 0700 : 0770);
    /* the tenant's folder: root's with its group, closed to everyone else */
    ck_assert_int_eq(stat(fmt("%s/chem", sbm_root()), &st), 0);
    ck_assert_int_eq((long)st.st_uid, SANDBOX_RUN_AS ? SANDBOX_RUN_AS : 0);
    ck_assert_int_eq(st.st_mode & 07777, SANDBOX_RUN_AS ? 0700 : 0750);
    if (!SANDBOX_RUN_AS)
        ck_assert_int_eq((long)st.st_gid, sb_uid_of("chem"));
    free(id);
    /* no mounts, no /data */
    out = sb_run(ann, "chem", "mol", "ls /data 2>/dev/null || echo no data\n"
                                     "echo p=${AIDC_PROJECT_DIR:-none}\n",
                 NULL, "succeeded");
    ck_assert_str_eq(out, "no data\np=none\n");
    free(out);
}
END_TEST

START_TEST(a_dataset_is_read_only_and_a_missing_one_refused)
{
    sbm_dataset("chem", "imagenet");
    char *out = sb_run(ann, "chem", "mol",
                       "cat /data/datasets/imagenet/labels.txt\n"
                       "{ echo bird >> /data/datasets/imagenet/labels.txt; } 2>/dev/null && "
                       "echo changed\n"
                       "touch /data/datasets/imagenet/new 2>/dev/null && echo created\n"
                       "echo d=$AIDC_DATASETS_DIR\n",
                       sbm_extra("[{\"space\":\"dataset\",\"name\":\"imagenet\",\"read_only\":true}]",
                                 NULL),
                       "succeeded");
    ck_assert_str_eq(out, "cat\ndog\nd=/data/datasets\n");
    free(out);
    char *text = sbm_file("chem/datasets/imagenet/labels.txt");
    ck_assert_str_eq(text, "cat\ndog\n");
    free(text);
    /* read_only left out: read-only all the same */
    out = sb_run(ann, "chem", "mol",
                 "{ echo x > /data/datasets/imagenet/labels.txt; } 2>/dev/null || echo refused\n",
                 sbm_extra("[{\"space\":\"dataset\",\"name\":\"imagenet\"}]", NULL), "succeeded");
    ck_assert_str_eq(out, "refused\n");
    free(out);
    /* another tenant's dataset of that name is no dataset of phys: 422, no job */
    struct http_res r;
    char *body = sb_body("lab", "echo x\n",
                         sbm_extra("[{\"space\":\"home\"},{\"space\":\"dataset\","
                                   "\"name\":\"imagenet\"}]",
                                   NULL));
    struct stat st;
    bool had_home = stat(fmt("%s/phys/home/pia", sbm_root()), &st) == 0;
    long before = 0;
    PGresult *c = harness_sql(harness_srv.owner_url, "SELECT count(*) FROM jobs", 0, NULL);
    before = strtol(PQgetvalue(c, 0, 0), NULL, 10);
    PQclear(c);
    ck_assert_int_eq(reqj("POST", "/api/v1/tenants/phys/jobs", pia, body, &r), 422);
    json_t *e = json_array_get(json_object_get(r.json, "errors"), 0);
    ck_assert_str_eq(sb_sv(e, "field"), "mounts[1].name");
    ck_assert_str_eq(sb_sv(e, "code"), "job.mount_dataset_unknown");
    ck_assert_msg(strstr(sb_sv(e, "message"), "\"imagenet\"") != NULL, "%s", r.body);
    http_res_free(&r);
    free(body);
    c = harness_sql(harness_srv.owner_url, "SELECT count(*) FROM jobs", 0, NULL);
    ck_assert_int_eq(strtol(PQgetvalue(c, 0, 0), NULL, 10), before);
    PQclear(c);
    /* ... and made nothing of phys's either: the 422 came before any space */
    ck_assert(had_home || stat(fmt("%s/phys/home/pia", sbm_root()), &st) != 0);
}
END_TEST

START_TEST(nothing_else_of_the_storage_root_is_in_view)
{
    /* phys keeps a secret in its project's space */
    free(sb_run(pia, "phys", "lab", "echo phys-secret > /data/project/secret.txt\n",
                sbm_extra("[{\"space\":\"project\"}]", NULL), "succeeded"));
    char *text = sbm_file("phys/projects/lab/secret.txt");
    ck_assert_str_eq(text, "phys-secret\n");
    free(text);
    static const char script[] =
        PROBE
        "probe root 'ls \"$ROOT\"'\n"
        "probe tenant 'ls \"$ROOT/chem\"'\n"
        "probe other 'cat \"$ROOT/phys/projects/lab/secret.txt\"'\n"
        "probe other_home 'ls \"$ROOT/phys/home\"'\n"
        "probe data_dir 'ls \"$DATA\"'\n"
        "probe up 'cat /data/project/../../phys/projects/lab/secret.txt'\n"
        "probe own 'test -f /data/project/out.txt'\n"
        "echo beside $(ls /data/project/..)\n";
    char *out = sb_run(ann, "chem", "mol", script,
                       sbm_extra("[{\"space\":\"project\"},{\"space\":\"home\"}]",
                                 json_pack("{s:s, s:s}", "ROOT", sbm_root(), "DATA",
                                           harness_srv.data_dir)),
                       "succeeded");
    ck_assert_str_eq(out, "root no\ntenant no\nother no\nother_home no\ndata_dir no\nup no\n"
                          "own yes\nbeside project\n");
    free(out);
}
END_TEST

START_TEST(links_planted_in_a_space_lead_nowhere)
{
    char root[400];
    snprintf(root, sizeof root, "%s", sbm_root());
    /* one job plants links to the host's paths and a FIFO in its project's space ... */
    free(sb_run(ann, "chem", "mol",
                "cd /data/project && ln -s \"$ROOT/phys/projects/lab\" escape && "
                "ln -s / slash && ln -s ../../../.. up && mkfifo fifo && ln -s fifo out.txt.lnk\n",
                sbm_extra("[{\"space\":\"project\"}]", json_pack("{s:s}", "ROOT", root)),
                "succeeded"));
    struct stat st;
    ck_assert_int_eq(lstat(fmt("%s/chem/projects/mol/escape", root), &st), 0);
    ck_assert(S_ISLNK(st.st_mode));
    /* ... the next one finds them resolving inside its own sandbox: nothing of phys */
    static const char script[] =
        PROBE
        "probe escape 'cat /data/project/escape/secret.txt'\n"
        "probe slash 'cat \"/data/project/slash$ROOT/phys/projects/lab/secret.txt\"'\n"
        "probe up 'cat \"/data/project/up$ROOT/phys/projects/lab/secret.txt\"'\n"
        "echo ok\n";
    char *out = sb_run(ann, "chem", "mol", script,
                       sbm_extra("[{\"space\":\"project\"}]", json_pack("{s:s}", "ROOT", root)),
                       "succeeded");
    ck_assert_str_eq(out, "escape no\nslash no\nup no\nok\n");
    free(out);

    /* a link where a space should be: the job fails at its start, mounting nothing.
     * ann's first job holds chem's two GPUs, so the second waits while the link goes in */
    char *hold = sb_submit(ann, "chem", "mol", "echo up\nsleep 300\n",
                           json_pack("{s:i, s:s}", "gpus", 2, "gpu_type", "a100"));
    free(sb_wait_log(ann, "chem", hold, "up\n"));
    char *id = sb_submit(ann, "chem", "mol", "echo ran; ls /home/ann\n",
                         json_pack("{s:i, s:s, s:o}", "gpus", 1, "gpu_type", "a100", "mounts",
                                   json_pack("[{s:s}]", "space", "home")));
    char home[500], real[600];
    snprintf(home, sizeof home, "%s/chem/home/ann", root);
    snprintf(real, sizeof real, "%s.real", home);
    ck_assert_int_eq(rename(home, real), 0);
    ck_assert_int_eq(symlink(fmt("%s/phys/projects/lab", root), home), 0);
    ck_assert_int_eq(stat(fmt("%s/phys/projects/lab", root), &st), 0);
    long phys_owner = (long)st.st_uid;
    sb_cancel(ann, "chem", hold);
    json_t *j = jobs_wait(ann, "chem", id, "succeeded,failed,cancelled", 60);
    ck_assert_str_eq(sb_sv(j, "state"), "failed");
    ck_assert_msg(strstr(sb_sv(j, "reason"), "home space chem/home/ann") &&
                      strstr(sb_sv(j, "reason"), "link"),
                  "%s", sb_sv(j, "reason"));
    json_decref(j);
    char *log = jobs_logs(ann, "chem", id, "stream=stdout");
    ck_assert_str_eq(log, "");
    free(log);
    ck_assert_int_eq(stat(fmt("%s/phys/projects/lab", root), &st), 0);
    ck_assert_int_eq((long)st.st_uid, phys_owner); /* nothing made or chowned through it */
    /* the submission itself refuses to make a space through a link */
    struct http_res r;
    char *body = sb_body("mol", "echo x\n", sbm_extra("[{\"space\":\"home\"}]", NULL));
    ck_assert_int_eq(reqj("POST", "/api/v1/tenants/chem/jobs", ann, body, &r), 503);
    ck_assert_str_eq(sb_sv(r.json, "code"), "job.mount_storage_unavailable");
    http_res_free(&r);
    free(body);
    ck_assert_int_eq(unlink(home), 0);
    ck_assert_int_eq(rename(real, home), 0);
    free(id);
    free(hold);
}
END_TEST

START_TEST(unconfined_jobs_see_host_paths_and_only_their_tenants)
{
    if (SANDBOX_RUN_AS) /* refused without root (no_sandbox_means_no_job_and_unconfined_is_loud) */
        return;
    sb_options("{\"sandbox\":\"unconfined\"}");
    char *out = sb_run(ann, "chem", "mol",
                       "echo u > \"$AIDC_PROJECT_DIR/unconfined.txt\" && echo wrote\n"
                       "echo p=$AIDC_PROJECT_DIR\n"
                       "cat \"$ROOT/phys/projects/lab/secret.txt\" 2>/dev/null || echo denied\n"
                       "ls \"$ROOT/phys\" >/dev/null 2>&1 || echo closed\n",
                       sbm_extra("[{\"space\":\"project\"}]",
                                 json_pack("{s:s}", "ROOT", sbm_root())),
                       "succeeded");
    sb_options("{\"sandbox\":\"bwrap\"}");
    ck_assert_str_eq(out, fmt("wrote\np=%s/chem/projects/mol\ndenied\nclosed\n", sbm_root()));
    free(out);
    struct stat st;
    ck_assert_int_eq(stat(fmt("%s/chem/projects/mol/unconfined.txt", sbm_root()), &st), 0);
    ck_assert_int_eq((long)st.st_uid, sb_uid_of("chem"));
}
END_TEST

/* Add the tests above to tc. */
static void sbm_add(TCase *tc)
{
    tcase_add_test(tc, a_job_writes_its_project_and_home);
    tcase_add_test(tc, a_dataset_is_read_only_and_a_missing_one_refused);
    tcase_add_test(tc, nothing_else_of_the_storage_root_is_in_view);
    tcase_add_test(tc, links_planted_in_a_space_lead_nowhere);
    tcase_add_test(tc, unconfined_jobs_see_host_paths_and_only_their_tenants);
}

#endif
