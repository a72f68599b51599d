/*
 * sandbox_cases.h - the attacks of sandbox_fixture.h, one test each, and the
 * suite of them. Included once by test_jobs_sandbox.c (aidcd as root) and
 * test_jobs_sandbox_user.c (aidcd as an unprivileged user).
 */
#ifndef AIDC_TEST_SANDBOX_CASES_H
#define AIDC_TEST_SANDBOX_CASES_H

#include "tests/http/sandbox_fixture.h"

#include <dirent.h>

/* Each probe prints "<name> yes" when its command succeeded, else "<name> no". */
#define PROBE "probe() { if sh -c \"$2\" >/dev/null 2>&1; then echo \"$1 yes\"; " \
              "else echo \"$1 no\"; fi; }\n"

#include "tests/http/sandbox_mounts.h" /* uses PROBE */

/* ---- 1. logs: links and FIFOs ---------------------------------------------------- */

struct sb_get {
    const char *path;
    long status;
    double seconds;
};

static void *sb_get_thread(void *arg)
{
    struct sb_get *g = arg;
    double t0 = jobs_now();
    g->status = req("GET", g->path, harness_srv.admin_token, NULL);
    g->seconds = jobs_now() - t0;
    return NULL;
}

START_TEST(logs_follow_no_link_and_wait_on_no_fifo)
{
    struct sb_key key;
    sb_key_read(&key);
    /* the job plants links to aidcd's key where its logs were, and a FIFO */
    char *id = sb_submit(ann, "chem", "mol",
                         "echo before\n"
                         "for f in stdout stderr ../stdout ../stderr; do ln -sf \"$KEY\" $f; done\n"
                         "mkfifo fifo; ln -sf fifo ../stdout 2>/dev/null\n"
                         "ln -sf \"$KEY\" /proc/self/fd/1 2>/dev/null\n"
                         "echo after\nsleep 300\n",
                         json_pack("{s:{s:s}}", "env", "KEY",
                                   fmt("%s/jwt.key", harness_srv.data_dir)));
    char *out = sb_wait_log(ann, "chem", id, "after\n");
    ck_assert_str_eq(out, "before\nafter\n");
    free(out);
    out = jobs_logs(ann, "chem", id, "stream=stderr");
    ck_assert_msg(!sb_key_in(out, &key), "stderr: %s", out);
    free(out);
    /* Were a job to reach the files aidcd reads (it cannot: their directory is
     * not in its view), a FIFO and a link there read as no log, at once, and
     * the server keeps answering. */
    char ctl[400];
    snprintf(ctl, sizeof ctl, "%s", sb_ctl(id));
    ck_assert_int_eq(rename(fmt("%s/stdout", ctl), fmt("%s/stdout.real", ctl)), 0);
    ck_assert_int_eq(mkfifo(fmt("%s/stdout", ctl), 0666), 0);
    ck_assert_int_eq(unlink(fmt("%s/stderr", ctl)), 0);
    ck_assert_int_eq(symlink(fmt("%s/jwt.key", harness_srv.data_dir), fmt("%s/stderr", ctl)), 0);
    struct sb_get gets[3] = {{fmt("/api/v1/tenants/chem/jobs/%s/logs", id), 0, 0},
                             {fmt("/api/v1/tenants/chem/jobs/%s/logs?stream=stdout", id), 0, 0},
                             {fmt("/api/v1/tenants/chem/jobs/%s/logs?stream=stderr", id), 0, 0}};
    pthread_t th[3];
    for (int i = 0; i < 3; i++)
        ck_assert_int_eq(pthread_create(&th[i], NULL, sb_get_thread, &gets[i]), 0);
    double t0 = jobs_now();
    ck_assert_int_eq(req("GET", "/healthz", NULL, NULL), 200);
    double health = jobs_now() - t0;
    for (int i = 0; i < 3; i++) {
        pthread_join(th[i], NULL);
        ck_assert_msg(gets[i].status == 200 && gets[i].seconds < 2, "%s: %ld after %.1f s",
                      gets[i].path, gets[i].status, gets[i].seconds);
    }
    ck_assert_msg(health < 1, "/healthz took %.2f s", health);
    struct http_res r;
    ck_assert_int_eq(reqj("GET", fmt("/api/v1/tenants/chem/jobs/%s/logs?stream=stderr", id), ann,
                          NULL, &r),
                     200);
    ck_assert_msg(!sb_key_in(r.body, &key), "the key was served");
    http_res_free(&r);
    sb_cancel(ann, "chem", id);
    free(id);
}
END_TEST

/* ---- 2. control files ------------------------------------------------------------ */

START_TEST(links_at_control_files_change_nothing)
{
    static const char script[] =
        "for f in stop stop.tmp status.json status.json.tmp shim.pid shim.pid.tmp job.json "
        "started started.tmp phase phase.tmp; do\n"
        "  ln -sf \"$P\" $f; ln -sf \"$P\" ../$f 2>/dev/null; ln -sf \"$P\" /tmp/$f\n"
        "done\n"
        "ls -a .. > parent.txt 2>&1\necho planted\nsleep 300\n";
    char *id = sb_submit(ann, "chem", "mol", script,
                         json_pack("{s:{s:s}}", "env", "P", sb_protected));
    free(sb_wait_log(ann, "chem", id, "planted\n"));
    /* and, as if a job could reach them, links planted where aidcd writes */
    char ctl[400];
    snprintf(ctl, sizeof ctl, "%s", sb_ctl(id));
    ck_assert_int_eq(symlink(sb_protected, fmt("%s/stop.tmp", ctl)), 0);
    ck_assert_int_eq(symlink(sb_protected, fmt("%s/status.json.tmp", ctl)), 0);
    sb_cancel(ann, "chem", id);
    json_t *j = jobs_get(ann, "chem", id);
    ck_assert_str_eq(sb_sv(j, "state"), "cancelled");
    json_decref(j);
    char *p = harness_read_file(sb_protected);
    ck_assert_str_eq(p, "precious\n");
    free(p);
    struct stat st;
    ck_assert_int_eq(lstat(fmt("%s/stop", ctl), &st), 0);
    ck_assert(S_ISREG(st.st_mode));
    ck_assert_int_eq(lstat(fmt("%s/status.json", ctl), &st), 0);
    ck_assert(S_ISREG(st.st_mode));
    /* what the job saw above its directory: the sandbox's root, none of the control files */
    char *parent = harness_read_file(fmt("%s/work/parent.txt", ctl));
    ck_assert_ptr_nonnull(parent);
    ck_assert_msg(!strstr(parent, "job.json") && !strstr(parent, "status.json") &&
                      strstr(parent, "job\n") && strstr(parent, "usr\n"),
                  "the job saw: %s", parent);
    free(parent);
    free(id);
}
END_TEST

/* ---- 3. a forged status ---------------------------------------------------------- */

START_TEST(a_forged_status_changes_nothing)
{
    char *id = sb_submit(ann, "chem", "mol",
                         "s='{\"started_at\":1,\"finished_at\":1,\"exit_code\":0,\"stopped\":false}'\n"
                         "for d in . .. /tmp /job; do echo \"$s\" > $d/status.json 2>/dev/null; done\n"
                         "echo forged\nsleep 300\n",
                         json_pack("{s:i, s:s}", "gpus", 1, "gpu_type", "a100"));
    free(sb_wait_log(ann, "chem", id, "forged\n"));
    json_decref(jobs_wait(ann, "chem", id, "running", 30));
    /* twenty rounds of the syncer later it still runs, and still holds its GPU */
    double until = jobs_now() + 2;
    while (jobs_now() < until) {
        json_t *j = jobs_get(ann, "chem", id);
        ck_assert_str_eq(sb_sv(j, "state"), "running");
        json_decref(j);
        jobs_nap_ms(100);
    }
    struct http_res r;
    ck_assert_int_eq(reqj("GET", "/api/v1/tenants/chem/quota", ann, NULL, &r), 200);
    json_t *q = json_object_get(json_object_get(r.json, "resources"), "gpu:a100");
    ck_assert_int_eq(json_integer_value(json_object_get(q, "used")), 1);
    http_res_free(&r);
    sb_cancel(ann, "chem", id);
    json_t *j = jobs_get(ann, "chem", id);
    ck_assert_str_eq(sb_sv(j, "state"), "cancelled");
    json_decref(j);
    free(id);
}
END_TEST

/* ---- 4. no survivor ------------------------------------------------------------- */

/* Processes of this machine whose environment holds entry. */
static int sb_with_env(const char *entry)
{
    int n = 0;
    DIR *d = opendir("/proc");
    struct dirent *e;
    while (d && (e = readdir(d)) != NULL) {
        if (e->d_name[0] < '1' || e->d_name[0] > '9' || !jobs_proc_has(e->d_name, "environ", entry, false))
            continue;
        char *st = harness_read_file(fmt("/proc/%s/stat", e->d_name));
        const char *close = st ? strrchr(st, ')') : NULL;
        n += close && close[1] && close[2] != 'Z'; /* a zombie is dead */
        free(st);
    }
    if (d)
        closedir(d);
    return n;
}

START_TEST(nothing_outlives_its_job)
{
    char marker[64];
    snprintf(marker, sizeof marker, "SURVIVOR=%d", (int)getpid());
    char *id = sb_submit(ann, "chem", "mol",
                         "setsid sh -c 'sleep 300; :' </dev/null >/dev/null 2>&1 &\n"
                         "(setsid nohup sleep 301 </dev/null >/dev/null 2>&1 &)\n"
                         "sleep 0.2\necho left them\n",
                         json_pack("{s:{s:s}}", "env", "SURVIVOR", marker + 9));
    free(sb_wait_log(ann, "chem", id, "left them\n"));
    json_t *j = jobs_wait(ann, "chem", id, "succeeded,failed,cancelled", 30);
    ck_assert_str_eq(sb_sv(j, "state"), "succeeded");
    json_decref(j);
    /* gone with the job's PID namespace, before its end was written */
    int left = sb_with_env(marker);
    ck_assert_msg(left == 0, "%d processes of the job outlived it", left);
    free(id);
}
END_TEST

/* ---- 5. other tenants, aidcd, the database -------------------------------------- */

START_TEST(tenants_and_aidcd_are_out_of_reach)
{
    /* chem's job leaves secrets where a neighbour might look, and stays */
    char *a = sb_submit(ann, "chem", "mol",
                        "echo sA > /dev/shm/secret; echo sA > /tmp/secret; echo sA > secret\n"
                        "echo ready\nsleep 300\n",
                        json_pack("{s:{s:s}}", "env", "SECRET", "topsecret-of-chem"));
    free(sb_wait_log(ann, "chem", a, "ready\n"));
    char aidcd[16], apid[16];
    snprintf(aidcd, sizeof aidcd, "%d", (int)harness_srv.pid);
    snprintf(apid, sizeof apid, "%d", harness_srv.port);
    static const char script[] =
        PROBE
        "probe shm 'cat /dev/shm/secret'\n"
        "probe tmp 'cat /tmp/secret'\n"
        "probe jobdir 'cat \"$OTHER/work/secret\"'\n"
        "probe jobs 'ls \"$DATA/jobs\"'\n"
        "probe environ 'grep -l topsecret /proc/[0-9]*/environ'\n"
        "probe aidcd_environ 'cat /proc/$AIDCD/environ'\n"
        "probe aidcd_signal 'kill -0 $AIDCD'\n"
        "probe key 'cat \"$DATA/jwt.key\"'\n"
        "probe data 'ls \"$DATA\"'\n"
        "probe hidden 'cat \"$PRIVATE/p\"'\n"
        "probe pg_tcp 'bash -c \"echo > /dev/tcp/127.0.0.1/$PGPORT\"'\n"
        "probe aidcd_tcp 'bash -c \"echo > /dev/tcp/127.0.0.1/$APORT\"'\n"
        "probe pg_socket 'ls /var/run/postgresql /run/postgresql /tmp/aidc-test-pg'\n"
        "probe root_home 'ls /root'\n"
        "probe usr 'touch /usr/x'\n"
        "probe etc 'touch /etc/x'\n"
        "probe own 'echo x > own && grep -q x own'\n"
        "probe shared 'echo y > \"$SHARED/by-phys\"'\n"
        "probe cap 'grep -q \"^CapEff:.0000000000000000\" /proc/self/status'\n"
        "probe nnp 'grep -q \"^NoNewPrivs:.1\" /proc/self/status'\n"
        "echo procs $(ls -d /proc/[0-9]* | wc -l)\n"
        "echo uid $(id -u) gid $(id -g)\n";
    json_t *env = json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:s}", "OTHER", sb_ctl(a), "DATA",
                            harness_srv.data_dir, "AIDCD", aidcd, "PRIVATE", sb_private, "PGPORT",
                            sb_pgport, "APORT", apid, "SHARED", jobs_shared_dir());
    char *out = sb_run(pia, "phys", "lab", script, json_pack("{s:o}", "env", env), "succeeded");
    char want[1024];
    snprintf(want, sizeof want,
             "shm no\ntmp no\njobdir no\njobs no\nenviron no\naidcd_environ no\n"
             "aidcd_signal no\nkey no\ndata no\nhidden no\npg_tcp no\naidcd_tcp no\n"
             "pg_socket no\nroot_home no\nusr no\netc no\nown yes\nshared yes\ncap yes\n"
             "nnp yes\n");
    ck_assert_msg(strncmp(out, want, strlen(want)) == 0, "the job saw:\n%s\nexpected:\n%s", out,
                  want);
    /* its own processes only: bwrap's init, the shell, ls and wc */
    const char *procs = strstr(out, "procs ");
    ck_assert_ptr_nonnull(procs);
    ck_assert_msg(atoi(procs + 6) <= 6, "the job saw %d processes", atoi(procs + 6));
    long phys = sb_uid_of("phys"), chem = sb_uid_of("chem");
    ck_assert_msg(strstr(out, fmt("uid %ld gid %ld\n", phys, phys)), "%s", out);
    if (!SANDBOX_RUN_AS) /* root: each tenant a uid of its own, never root */
        ck_assert(phys != chem && phys > 0 && chem > 0);
    struct stat st;
    ck_assert_int_eq(stat(fmt("%s/work/secret", sb_ctl(a)), &st), 0);
    ck_assert_int_eq((long)st.st_uid, chem);
    ck_assert_int_eq(stat(fmt("%s/by-phys", jobs_shared_dir()), &st), 0);
    ck_assert_int_eq((long)st.st_uid, phys);
    free(out);
    sb_cancel(ann, "chem", a);
    free(a);
}
END_TEST

/* ---- 6. limits ------------------------------------------------------------------ */

static long long sb_cgroup_num(const char *dir, const char *file)
{
    char *text = harness_read_file(fmt("%s/%s", dir, file));
    ck_assert_msg(text != NULL, "%s/%s: %s", dir, file, strerror(errno));
    long long v = strtoll(text, NULL, 10);
    free(text);
    return v;
}

START_TEST(limits_hold_and_memory_beyond_them_ends_it)
{
    char *id = sb_submit(ann, "chem", "mol", "echo up\nsleep 300\n",
                         json_pack("{s:i, s:i}", "cpus", 2, "memory_gib", 1));
    free(sb_wait_log(ann, "chem", id, "up\n"));
    if (sb_cgroup_v2()) {
        const char *dir = sb_cgroup_dir(NULL, id);
        ck_assert_int_eq(sb_cgroup_num(dir, "memory.max"), 1LL << 30);
        ck_assert_int_eq(sb_cgroup_num(dir, "cpu.max"), 200000);
        ck_assert_int_eq(sb_cgroup_num(dir, "pids.max"), 4096);
    } else {
        ck_assert_int_eq(sb_cgroup_num(sb_cgroup_dir("memory", id), "memory.limit_in_bytes"),
                         1LL << 30);
        ck_assert_int_eq(sb_cgroup_num(sb_cgroup_dir("cpu", id), "cpu.cfs_quota_us"), 200000);
        ck_assert_int_eq(sb_cgroup_num(sb_cgroup_dir("pids", id), "pids.max"), 4096);
    }
    sb_cancel(ann, "chem", id);
    /* its groups go with it */
    struct stat st;
    ck_assert_int_ne(stat(sb_cgroup_dir("memory", id), &st), 0);
    free(id);
    /* one buffer of 1.5 GiB under a 1 GiB limit */
    id = sb_submit(ann, "chem", "mol",
                   "dd if=/dev/zero of=/dev/null bs=1536M count=1 iflag=fullblock\necho after\n",
                   json_pack("{s:i}", "memory_gib", 1));
    json_t *j = jobs_wait(ann, "chem", id, "succeeded,failed,cancelled", 60);
    ck_assert_str_eq(sb_sv(j, "state"), "failed");
    ck_assert_str_eq(sb_sv(j, "reason"), "out of memory");
    json_decref(j);
    free(id);
}
END_TEST

/* ---- 7. GPUs -------------------------------------------------------------------- */

START_TEST(a_job_sees_only_its_own_gpus)
{
    char *id = sb_submit(pia, "phys", "lab",
                         "echo nodes $(ls /dev | grep nvidia | tr '\\n' ' ')\n"
                         "for n in /dev/nvidia*; do echo \"$n: $(cat $n 2>&1 | sed 's/.*: //')\"; done\n"
                         "mknod /tmp/nv c 195 0 2>/dev/null || echo no mknod\n"
                         "echo cvd=$CUDA_VISIBLE_DEVICES host=$AIDC_GPU_INDEXES\necho done\nsleep 300\n",
                         json_pack("{s:i, s:s}", "gpus", 1, "gpu_type", "a100"));
    char *out = sb_wait_log(pia, "phys", id, "done\n");
    json_t *j = jobs_get(pia, "phys", id);
    long idx = (long)json_integer_value(json_array_get(json_object_get(j, "gpu_indexes"), 0));
    json_decref(j);
    ck_assert_msg(strstr(out, fmt("nodes nvidia%ld nvidiactl\n", idx)), "%s", out);
    struct statvfs vfs;
    ck_assert_int_eq(statvfs(sb_dev, &vfs), 0);
    /* a node without a driver behind it: ENXIO, not EACCES (nodev) nor EPERM (cgroup) */
    if (!(vfs.f_flag & ST_NODEV))
        ck_assert_msg(strstr(out, fmt("/dev/nvidia%ld: No such device or address\n", idx)), "%s",
                      out);
    ck_assert_msg(strstr(out, "no mknod\n"), "%s", out);
    ck_assert_msg(strstr(out, fmt("cvd=0 host=%ld\n", idx)), "%s", out);
    if (!SANDBOX_RUN_AS && !sb_cgroup_v2()) { /* root: the devices controller agrees */
        char *list = harness_read_file(fmt("%s/devices.list", sb_cgroup_dir("devices", id)));
        ck_assert_ptr_nonnull(list);
        ck_assert_msg(strstr(list, fmt("c 195:%ld rwm", idx)) && strstr(list, "c 195:255 rwm") &&
                          !strstr(list, fmt("c 195:%ld rwm", 1 - idx)) && !strstr(list, "a *:*"),
                      "devices.list: %s", list);
        free(list);
    }
    free(out);
    sb_cancel(pia, "phys", id);
    free(id);
}
END_TEST

/* ---- 8. outbound network -------------------------------------------------------- */

START_TEST(outbound_network_never_reaches_the_host_loopback)
{
    static const char script[] =
        PROBE
        "probe lo_pg 'timeout 3 bash -c \"echo > /dev/tcp/127.0.0.1/$PGPORT\"'\n"
        "probe host_pg 'timeout 3 bash -c \"echo > /dev/tcp/10.0.2.2/$PGPORT\"'\n"
        "probe host_aidcd 'timeout 3 bash -c \"echo > /dev/tcp/10.0.2.2/$APORT\"'\n"
        "probe tap0 'grep -q tap0: /proc/net/dev'\n"
        "probe resolver 'grep -q \"^nameserver 10.0.2.3\" /etc/resolv.conf'\n";
    char port[16];
    snprintf(port, sizeof port, "%d", harness_srv.port);
    sb_options("{\"network\":\"outbound\"}");
    /* slirp4netns opens /dev/net/tun as aidcd's user; where only root may, the cluster
     * says so (udev's default is 0666; this machine kind has 0600). The teardown puts
     * its mode back should this test fail half way. */
    struct stat tun;
    ck_assert_int_eq(stat("/dev/net/tun", &tun), 0);
    bool closed = SANDBOX_RUN_AS && (tun.st_mode & 0666) != 0666;
    if (closed) {
        json_t *c = sb_cluster_health(false);
        ck_assert_msg(strstr(sb_sv(c, "last_error"), "/dev/net/tun"), "%s", sb_sv(c, "last_error"));
        json_decref(c);
        ck_assert_int_eq(chmod("/dev/net/tun", 0666), 0);
        json_decref(sb_cluster_health(true));
    }
    char *out = sb_run(ann, "chem", "mol", script,
                       json_pack("{s:{s:s, s:s}}", "env", "PGPORT", sb_pgport, "APORT", port),
                       "succeeded");
    if (closed)
        ck_assert_int_eq(chmod("/dev/net/tun", tun.st_mode & 07777), 0);
    ck_assert_str_eq(out, "lo_pg no\nhost_pg no\nhost_aidcd no\ntap0 yes\nresolver yes\n");
    free(out);
    sb_options("{\"network\":\"none\"}");
    out = sb_run(ann, "chem", "mol", script,
                 json_pack("{s:{s:s, s:s}}", "env", "PGPORT", sb_pgport, "APORT", port),
                 "succeeded");
    ck_assert_str_eq(out, "lo_pg no\nhost_pg no\nhost_aidcd no\ntap0 no\nresolver no\n");
    free(out);
}
END_TEST

/* ---- 9. images ------------------------------------------------------------------ */

/* Push a runnable image repo:v1 to the registry at url (user may be NULL); its digest. */
static void sb_push(const char *url, const char *user, const char *password, const char *repo,
                    char digest[80])
{
    char cmd[1024];
    snprintf(cmd, sizeof cmd,
             "REGISTRY_URL='%s' REGISTRY_USER='%s' REGISTRY_PASSWORD='%s' "
             "'%s/tests/support/registry-push.sh' push '%s' v1 --busybox",
             url, user ? user : "", password ? password : "", AIDC_SOURCE_DIR, repo);
    FILE *p = popen(cmd, "r");
    ck_assert_ptr_nonnull(p);
    char line[256] = "";
    char *got = fgets(line, sizeof line, p);
    ck_assert_int_eq(pclose(p), 0);
    ck_assert_ptr_nonnull(got);
    snprintf(digest, 80, "%.*s", (int)strcspn(line, " \n"), line);
}

/* Register the registry at url as name (credentials_ref may be "") and wait for its sync. */
static void sb_registry(const char *name, const char *url, const char *cred)
{
    jobs_admin_ok("POST", "/api/v1/registries",
                  fmt("{\"name\":\"%s\",\"url\":\"%s\",\"credentials_ref\":\"%s\","
                      "\"options\":{\"public_prefixes\":[\"library/\"]}}",
                      name, url, cred),
                  201);
    double until = jobs_now() + 60;
    for (;;) {
        struct http_res r;
        ck_assert_int_eq(reqj("GET", fmt("/api/v1/registries/%s", name), harness_srv.admin_token,
                              NULL, &r),
                         200);
        bool done = json_is_string(json_object_get(r.json, "last_sync_at")) &&
                    strcmp(sb_sv(r.json, "sync_state"), "idle") == 0;
        bool ok = json_is_true(json_object_get(r.json, "last_sync_ok"));
        ck_assert_msg(!done || ok, "the sync of %s failed: %s", name, r.body);
        ck_assert_msg(done || jobs_now() < until, "no sync of %s: %s", name, r.body);
        http_res_free(&r);
        if (done)
            return;
        jobs_nap_ms(100);
    }
}

static int sb_cache_entries(void)
{
    char *cmd = strdup(fmt("ls '%s/images' | grep -cE '^[0-9a-f]{64}$'", harness_srv.data_dir));
    FILE *p = popen(cmd, "r");
    free(cmd);
    int n = -1;
    if (p && fscanf(p, "%d", &n) != 1)
        n = -1;
    if (p)
        pclose(p);
    return n;
}

static const char image_script[] =
    "cat /etc/os-release /etc/aidc-test/image\necho uid $(id -u) env $AIDC_TEST_IMAGE\n"
    "touch /x 2>/dev/null || echo root read-only\necho ok > /job/f && cat /job/f\n"
    "test -e /usr/bin/bash || echo not the host\n"
    "cat \"$PRIVATE/p\" 2>/dev/null || echo hidden there too\n";

START_TEST(a_job_runs_in_its_image)
{
    const char *url = sb_reg_url[0];
    if (!url[0]) {
        fprintf(stderr, "a_job_runs_in_its_image: no docker-registry here: skipped\n");
        return;
    }
    char repo[64], digest[80];
    snprintf(repo, sizeof repo, "library/sandbox-%d", (int)getpid());
    sb_push(url, NULL, NULL, repo, digest);
    sb_registry("reg", url, "");
    const char *host = strstr(url, "://") ? strstr(url, "://") + 3 : url;
    json_t *img = json_pack("{s:s, s:{s:s}}", "image", fmt("%s/%s:v1", host, repo), "env",
                            "PRIVATE", sb_private);
    char *out = sb_run(ann, "chem", "mol", image_script, json_deep_copy(img), "succeeded");
    ck_assert_msg(strstr(out, "NAME=\"aidc-test-busybox\"") &&
                      strstr(out, fmt("repository=%s\ntag=v1\n", repo)) &&
                      strstr(out, fmt("uid %ld env busybox\n", sb_uid_of("chem"))) &&
                      strstr(out, "root read-only\nok\nnot the host\nhidden there too\n"),
                  "%s", out);
    free(out);
    /* unpacked once: the second run finds it in the cache */
    ck_assert_int_eq(sb_cache_entries(), 1);
    struct stat st;
    ck_assert_int_eq(stat(fmt("%s/images/%s/rootfs/bin/busybox", harness_srv.data_dir,
                              digest + 7),
                          &st),
                     0);
    out = sb_run(pia, "phys", "lab", image_script, img, "succeeded");
    ck_assert_msg(strstr(out, fmt("uid %ld env busybox\n", sb_uid_of("phys"))), "%s", out);
    free(out);
    ck_assert_int_eq(sb_cache_entries(), 1);
    /* storage spaces in an image: a root unpacked before aidc mounted them gets its /data */
    ck_assert_int_eq(rmdir(fmt("%s/images/%s/rootfs/data", harness_srv.data_dir, digest + 7)), 0);
    out = sb_run(pia, "phys", "lab", "echo img > /data/project/img.txt && cat /data/project/img.txt\n"
                                     "echo $(ls /home)\n",
                 json_pack("{s:s, s:[{s:s}, {s:s}]}", "image", fmt("%s/%s:v1", host, repo), "mounts",
                           "space", "project", "space", "home"),
                 "succeeded");
    ck_assert_str_eq(out, "img\npia\n");
    free(out);
    /* the cache is closed to this machine's other users: the jobs' group passes (root),
     * or aidcd's user alone; nothing in it is setuid */
    ck_assert_int_eq(stat(fmt("%s/images", harness_srv.data_dir), &st), 0);
    ck_assert_int_eq(st.st_mode & 07777, SANDBOX_RUN_AS ? 0700 : 0710);
    if (!SANDBOX_RUN_AS)
        ck_assert_int_eq(st.st_gid, SB_UID_FIRST);
    /* knowing the digest is not enough: another tenant's name for it (a catalog entry
     * of its own, no registry behind it) does not run the cached image */
    jobs_admin_ok("POST", "/api/v1/tenants/phys/images",
                  fmt("{\"repository\":\"phys/borrowed\",\"tag\":\"v1\",\"digest\":\"%s\","
                      "\"size_bytes\":1}",
                      digest),
                  201);
    out = sb_run(pia, "phys", "lab", "echo ran the cached image\n",
                 json_pack("{s:s}", "image", "phys/borrowed:v1"), "failed");
    ck_assert_str_eq(out, "");
    free(out);

    /* a registry with credentials: aidc hands them to the pull, and they go after it */
    const char *aurl = sb_reg_url[1], *user = SB_REG_USER, *pw = SB_REG_PASSWORD;
    if (!aurl[0]) {
        fprintf(stderr, "a_job_runs_in_its_image: no basic-auth registry: that part skipped\n");
        return;
    }
    snprintf(repo, sizeof repo, "library/sandbox-auth-%d", (int)getpid());
    sb_push(aurl, user, pw, repo, digest);
    char cred[340];
    snprintf(cred, sizeof cred, "%s/registry.cred", harness_srv.data_dir);
    sb_write(cred, fmt("%s:%s\n", user, pw), 0600);
    ck_assert_int_eq(chown(cred, SANDBOX_RUN_AS, SANDBOX_RUN_AS), 0);
    /* outside aidcd's data directory: a credentials_ref may not name aidcd's own files */
    char cred2[340];
    snprintf(cred2, sizeof cred2, "%s/registry.cred", jobs_shared_dir());
    ck_assert_int_eq(rename(cred, cred2), 0);
    sb_registry("regauth", aurl, fmt("file:%s", cred2));
    host = strstr(aurl, "://") ? strstr(aurl, "://") + 3 : aurl;
    char *id = sb_submit(ann, "chem", "mol", image_script,
                         json_pack("{s:s}", "image", fmt("%s/%s:v1", host, repo)));
    json_t *j = jobs_wait(ann, "chem", id, "succeeded,failed,cancelled", 60);
    ck_assert_msg(strcmp(sb_sv(j, "state"), "succeeded") == 0, "%s", sb_sv(j, "reason"));
    json_decref(j);
    ck_assert_int_ne(lstat(fmt("%s/pull-auth.json", sb_ctl(id)), &st), 0);
    free(id);
}
END_TEST

/* ---- 10. no sandbox, no job; unconfined said loudly ------------------------------ */

START_TEST(no_sandbox_means_no_job_and_unconfined_is_loud)
{
    const char *bad = "{\"cgroup_parent\":\"/cgroup.procs/no\"}";
    char good[200];
    snprintf(good, sizeof good, "{\"cgroup_parent\":\"%s\"}", sb_cgparent[0] ? sb_cgparent : "/aidc");
    /* delivered while its limits cannot be set: it fails, saying why */
    sb_options(bad);
    char *id = sb_submit(ann, "chem", "mol", "echo ran\n", NULL);
    json_t *j = jobs_wait(ann, "chem", id, "succeeded,failed,cancelled", 30);
    ck_assert_str_eq(sb_sv(j, "state"), "failed");
    ck_assert_msg(strstr(sb_sv(j, "reason"), "cgroup.procs/no"), "%s", sb_sv(j, "reason"));
    json_decref(j);
    char *out = jobs_logs(ann, "chem", id, "stream=stdout");
    ck_assert_str_eq(out, "");
    free(out);
    free(id);
    /* the next refresh finds it: the cluster is down, saying why, and jobs wait */
    json_t *c = sb_cluster_health(false);
    ck_assert_msg(strstr(sb_sv(c, "last_error"), "no local job runs"), "%s",
                  sb_sv(c, "last_error"));
    json_decref(c);
    id = sb_submit(ann, "chem", "mol", "echo ran\n", NULL);
    double until = jobs_now() + 1.5;
    while (jobs_now() < until) {
        j = jobs_get(ann, "chem", id);
        ck_assert_str_eq(sb_sv(j, "state"), "queued");
        json_decref(j);
        jobs_nap_ms(100);
    }
    sb_options(good);
    json_decref(sb_cluster_health(true));
    j = jobs_wait(ann, "chem", id, "succeeded,failed,cancelled", 30);
    ck_assert_str_eq(sb_sv(j, "state"), "succeeded");
    json_decref(j);
    free(id);
    /* a work directory below one anybody may change: someone could swap the jobs' control
     * files under the root shim, so no job runs there */
    char open_dir[128];
    snprintf(open_dir, sizeof open_dir, "/tmp/aidc-sb-open-%d", (int)getpid());
    ck_assert_int_eq(mkdir(open_dir, 0777), 0);
    ck_assert_int_eq(chmod(open_dir, 0777), 0);
    sb_options(fmt("{\"workdir\":\"%s/jobs\"}", open_dir));
    c = sb_cluster_health(false);
    ck_assert_msg(strstr(sb_sv(c, "last_error"), "may be changed by other users"), "%s",
                  sb_sv(c, "last_error"));
    json_decref(c);
    PQclear(harness_sql(harness_srv.owner_url,
                        "UPDATE clusters SET options = options - 'workdir' WHERE name = 'local'", 0,
                        NULL));
    json_decref(sb_cluster_health(true));
    rmdir(fmt("%s/jobs", open_dir));
    rmdir(open_dir);
    /* an operator's explicit choice: no sandbox, said in the job's stderr and aidcd's log;
     * never as aidcd's own user (who holds its keys): refused when aidcd is not root */
    sb_options("{\"sandbox\":\"unconfined\"}");
    if (SANDBOX_RUN_AS) {
        json_t *down = sb_cluster_health(false);
        ck_assert_msg(strstr(sb_sv(down, "last_error"), "needs aidcd to run as root"), "%s",
                      sb_sv(down, "last_error"));
        json_decref(down);
        sb_options("{\"sandbox\":\"bwrap\"}");
        json_decref(sb_cluster_health(true));
        return;
    }
    id = sb_submit(ann, "chem", "mol", "echo uid $(id -u)\n", NULL);
    j = jobs_wait(ann, "chem", id, "succeeded,failed,cancelled", 30);
    ck_assert_str_eq(sb_sv(j, "state"), "succeeded");
    json_decref(j);
    out = jobs_logs(ann, "chem", id, "stream=stdout");
    ck_assert_str_eq(out, fmt("uid %ld\n", sb_uid_of("chem"))); /* never root */
    free(out);
    out = jobs_logs(ann, "chem", id, "stream=stderr");
    ck_assert_msg(strstr(out, "runs UNCONFINED"), "stderr: %s", out);
    free(out);
    char *log = harness_read_file(harness_srv.log_path);
    ck_assert_msg(log && strstr(log, "UNCONFINED"), "aidcd's log says nothing of it");
    free(log);
    free(id);
    sb_options("{\"sandbox\":\"bwrap\"}");
}
END_TEST

static Suite *sb_suite(void)
{
    Suite *s = suite_create(SANDBOX_RUN_AS ? "jobs_sandbox_user" : "jobs_sandbox");
    TCase *tc = tcase_create("attacks");
    tcase_add_unchecked_fixture(tc, sb_setup, sb_teardown);
    tcase_set_timeout(tc, 180);
    tcase_add_test(tc, logs_follow_no_link_and_wait_on_no_fifo);
    tcase_add_test(tc, links_at_control_files_change_nothing);
    tcase_add_test(tc, a_forged_status_changes_nothing);
    tcase_add_test(tc, nothing_outlives_its_job);
    tcase_add_test(tc, tenants_and_aidcd_are_out_of_reach);
    tcase_add_test(tc, limits_hold_and_memory_beyond_them_ends_it);
    tcase_add_test(tc, a_job_sees_only_its_own_gpus);
    tcase_add_test(tc, outbound_network_never_reaches_the_host_loopback);
    tcase_add_test(tc, a_job_runs_in_its_image);
    tcase_add_test(tc, no_sandbox_means_no_job_and_unconfined_is_loud);
    sbm_add(tc); /* storage spaces (sandbox_mounts.h) */
    suite_add_tcase(s, tc);
    return s;
}

#endif
