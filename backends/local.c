/* local.c - the local executor (see local.h). */
#include "local.h"

#include "../lib/err.h"
#include "../lib/fsat.h"
#include "../lib/log.h"
#include "../lib/xalloc.h"
#include "cgroup.h"
#include "../lib/credref.h"
#include "imagecache.h"
#include "jail.h"
#include "localopts.h"
#include "shim.h"
#include "slirp.h"
#include "../storage/jobmount.h"

#include <errno.h>
#include <fcntl.h>
#include <openssl/evp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define MAX_GPU_TYPES 16
/* A shim that has not written its pid this long after job.json never will. */
#define SHIM_START_SECONDS 60

static bool check_options(json_t *options, char *err, size_t errsz)
{
    return localopts_check(options, err, errsz);
}

bool local_gpu_range(const json_t *options, const char *gpu_type, int *first, int *count)
{
    const char *types[MAX_GPU_TYPES];
    size_t n = localopts_gpu_types(options, types, MAX_GPU_TYPES);
    const json_t *gpus = json_object_get(options, "gpus");
    int at = 0;
    for (size_t i = 0; i < n; i++) {
        int c = (int)json_integer_value(json_object_get(gpus, types[i]));
        if (strcmp(types[i], gpu_type) == 0) {
            *first = at;
            *count = c;
            return true;
        }
        at += c;
    }
    return false;
}

static bool run_key_ok(const char *id)
{
    return id && id[0] && id[0] != '.' && strlen(id) < 128 && !strchr(id, '/');
}

/*
 * Every directory from path up to / must be aidcd's or root's, and none
 * writable by others without the sticky bit: whoever could replace one could
 * hand the root shim a job.json or the cache an image of their own. And as
 * root, jobs run as other uids and reach their own directory (and image)
 * through them: each must let others pass (x, never r). path itself and
 * aidcd's data directory are made so; another that is not is an error to fix.
 */
static int passable(const char *path_in, const char *data_dir, char *err, size_t errsz)
{
    char path[1024];
    snprintf(path, sizeof path, "%s", path_in);
    for (;;) {
        struct stat st;
        if (lstat(path, &st) != 0) {
            snprintf(err, errsz, "cannot look at %s: %s", path, strerror(errno));
            return -1;
        }
        mode_t mode = st.st_mode & 07777;
        if (S_ISLNK(st.st_mode) && stat(path, &st) == 0)
            mode = st.st_mode & 07777; /* an operator's link: where it leads is checked */
        if ((st.st_uid != 0 && st.st_uid != geteuid()) ||
            ((mode & (S_IWGRP | S_IWOTH)) && !(mode & S_ISVTX))) {
            snprintf(err, errsz, "%s (owner %u, mode %o) may be changed by other users: jobs' "
                                 "directories and images must not be below it",
                     path, (unsigned)st.st_uid, mode);
            return -1;
        }
        if (geteuid() == 0 && !(mode & S_IXOTH)) {
            bool ours = st.st_uid == geteuid() &&
                        (strcmp(path, path_in) == 0 || strcmp(path, data_dir) == 0);
            if (!ours || chmod(path, mode | S_IXOTH | S_IXGRP) != 0) {
                snprintf(err, errsz, "jobs cannot pass %s (mode %o) to reach %s: chmod o+x it, "
                                     "or set options.workdir and options.image_cache elsewhere",
                         path, mode, path_in);
                return -1;
            }
            log_info("%s may now be passed (not read) by jobs' users: chmod o+x", path);
        }
        char *slash = strrchr(path, '/');
        if (!slash)
            return 0;
        if (slash == path) {
            if (path[1] == '\0')
                return 0;
            path[1] = '\0'; /* and / itself */
            continue;
        }
        *slash = '\0';
    }
}

/* The directory of the jobs' directories (made if missing) as a descriptor; -1 with err. */
static int open_workdir(const struct backend_cluster *c, char *err, size_t errsz)
{
    char *wd = localopts_workdir(c);
    int fd = -1;
    if (mkdir(wd, 0711) != 0 && errno != EEXIST)
        snprintf(err, errsz, "cannot create the work directory %s: %s", wd, strerror(errno));
    else if (passable(wd, c->data_dir, err, errsz) == 0 && (fd = fsat_opendir(wd)) < 0)
        snprintf(err, errsz, "cannot open the work directory %s: %s", wd, strerror(errno));
    free(wd);
    return fd;
}

/* The run's control directory (made when create), as a descriptor; -1 with err. */
static int open_ctl(const struct backend_cluster *c, const char *id, bool create, char *err,
                    size_t errsz)
{
    if (!run_key_ok(id)) {
        snprintf(err, errsz, "not a run key: %.64s", id ? id : "");
        return -1;
    }
    int wfd = open_workdir(c, err, errsz);
    if (wfd < 0)
        return -1;
    if (create && mkdirat(wfd, id, 0711) != 0 && errno != EEXIST) {
        snprintf(err, errsz, "cannot create the job's directory: %s", strerror(errno));
        close(wfd);
        return -1;
    }
    int fd = fsat_open(wfd, id, O_RDONLY | O_DIRECTORY, 0);
    if (fd < 0)
        snprintf(err, errsz, "cannot open the job's directory: %s", strerror(errno));
    close(wfd);
    return fd;
}

static char *ctl_path(const struct backend_cluster *c, const char *id)
{
    char *wd = localopts_workdir(c), *p = xasprintf("%s/%s", wd, id);
    free(wd);
    return p;
}

static int spawn_shim(const struct backend_cluster *c, const char *dir, char *err, size_t errsz)
{
    /* Fork twice so the shim belongs to nobody here: it must outlive aidcd,
     * and aidcd must not have to reap it. Between fork and exec only
     * async-signal-safe calls (this process has other threads). */
    pid_t mid = fork();
    if (mid < 0) {
        snprintf(err, errsz, "fork: %s", strerror(errno));
        return AIDC_EIO;
    }
    if (mid == 0) {
        if (setsid() < 0)
            _exit(1);
        pid_t shim = fork();
        if (shim < 0)
            _exit(1);
        if (shim > 0)
            _exit(0);
        int devnull = open("/dev/null", O_RDWR);
        if (devnull >= 0) {
            dup2(devnull, 0);
            dup2(devnull, 1);
            dup2(devnull, 2);
        }
        /* nothing of aidcd's (listening socket, database connections) may
         * outlive it in a job: a restarted aidcd must be able to bind again */
        close_range(3, ~0U, 0);
        char *const argv[] = {(char *)"aidcd", (char *)"local-shim", (char *)dir, NULL};
        /* none of aidcd's environment (database URLs with passwords) */
        char *const envp[] = {(char *)"PATH=/usr/local/bin:/usr/bin:/bin", NULL};
        execve(c->self_exe, argv, envp);
        _exit(127);
    }
    int st;
    while (waitpid(mid, &st, 0) < 0 && errno == EINTR)
        ;
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
        snprintf(err, errsz, "cannot start the job's shim");
        return AIDC_EIO;
    }
    return 0;
}

/* host[:port] of a registry URL into out */
static void url_host(const char *url, char *out, size_t outsz)
{
    const char *h = strstr(url, "://");
    h = h ? h + 3 : url;
    snprintf(out, outsz, "%.*s", (int)strcspn(h, "/?#"), h);
}

/*
 * The registry's credentials for the shim's pull, as skopeo's auth file
 * (pull-auth.json, 0600, removed by the shim once used); nothing for an
 * anonymous registry. 0, or an error with err.
 */
static int write_auth(int ctl, const struct backend_job *job, char *err, size_t errsz)
{
    const char *ref = job->image_credentials_ref;
    if (!job->image || !job->image_registry || !ref || !ref[0])
        return 0;
    int e = 0;
    char *userpwd = credref_userpwd(ref, &e, err, errsz);
    if (!userpwd)
        return e ? e : AIDC_EIO;
    size_t n = strlen(userpwd);
    unsigned char *b64 = xmalloc(4 * ((n + 2) / 3) + 1);
    EVP_EncodeBlock(b64, (const unsigned char *)userpwd, (int)n);
    char host[256];
    url_host(job->image_registry, host, sizeof host);
    json_t *doc = json_pack("{s:{s:{s:s}}}", "auths", host, "auth", (const char *)b64);
    char *text = doc ? json_dumps(doc, JSON_COMPACT) : NULL;
    e = text && fsat_write_atomic(ctl, "pull-auth.json", text, strlen(text), 0600) == 0 ? 0
                                                                                       : AIDC_EIO;
    if (e)
        snprintf(err, errsz, "cannot write the registry's credentials for the pull");
    if (text)
        memset(text, 0, strlen(text));
    free(text);
    json_decref(doc);
    memset(b64, 0, strlen((char *)b64));
    free(b64);
    memset(userpwd, 0, n);
    free(userpwd);
    return e;
}

/*
 * job.json's "storage" (new reference; NULL when the job mounts nothing): the
 * storage root of this host, the owner new spaces get (the tenant's,
 * storage/space.h) and the mounts, checked here first. NULL with *rc and err
 * when the job cannot mount them.
 */
static json_t *storage_spec(const struct backend_cluster *c, const struct backend_job *job,
                            int *rc, char *err, size_t errsz)
{
    struct jobmount m[JOBMOUNT_MAX];
    int n = jobmount_parse(job->mounts, job->tenant, job->project, job->user, m, err, errsz);
    *rc = 0;
    if (n == 0)
        return NULL;
    if (n < 0 || !c->storage_root) {
        if (n > 0)
            snprintf(err, errsz, "this aidcd has no storage root for the job's mounts");
        *rc = AIDC_EINVAL;
        return NULL;
    }
    /* the sandbox binds the spaces by path: the job's uid must pass down to them
     * (aidcd's data directory, their default parent, is made passable, never readable) */
    if (geteuid() == 0 && passable(c->storage_root, c->data_dir, err, errsz) != 0) {
        *rc = AIDC_EINVAL;
        return NULL;
    }
    struct space_owner own = space_owner_of(c->storage_uid_first, job->tenant_number);
    return json_pack("{s:s, s:I, s:I, s:O}", "root", c->storage_root, "uid", (json_int_t)own.uid,
                     "gid", (json_int_t)own.gid, "mounts", job->mounts);
}

/* What the shim runs: job.json (new reference). */
static json_t *job_spec(const struct backend_cluster *c, const struct backend_job *job,
                        long long uid, json_t *storage)
{
    json_t *idx = json_array(), *image = json_null();
    for (size_t i = 0; i < job->ngpu_indexes; i++)
        json_array_append_new(idx, json_integer(job->gpu_indexes[i]));
    if (job->image) {
        const char *reg = job->image_registry;
        image = json_pack("{s:s, s:s?, s:b}", "ref", job->image, "digest", job->image_digest,
                          "tls_verify", !(reg && strncmp(reg, "http://", 7) == 0));
    }
    return json_pack("{s:s, s:s, s:s, s:s, s:O?, s:s?, s:O, s:o, s:i, s:i, s:i, s:i, s:I, s:o, "
                     "s:o, s:o*, s:b}",
                     "job_id", job->id, "tenant", job->tenant, "project", job->project, "user",
                     job->user, "command", job->command, "script", job->script, "env", job->env,
                     "gpu_indexes", idx, "time_limit_seconds", job->time_limit_minutes * 60,
                     "grace_seconds", job->grace_seconds, "cpus", job->cpus, "memory_gib",
                     job->memory_gib, "uid", (json_int_t)uid, "image", image, "sandbox",
                     localopts_sandbox(c), "storage", storage, "app", job->app);
}

/*
 * The spec the job's shim runs (new reference): job.json as a delivery tried
 * before wrote it, or else as written now. NULL with *rc and err.
 */
static json_t *spec_in(const struct backend_cluster *c, int ctl, const struct backend_job *job,
                       int *rc, char *err, size_t errsz)
{
    char *text = fsat_read(ctl, "job.json", 4 << 20, NULL);
    json_t *spec = text ? json_loads(text, 0, NULL) : NULL;
    free(text);
    text = NULL;
    *rc = 0;
    if (spec)
        return spec;
    long long uid = localopts_uid(c->options, job->tenant_number, err, errsz);
    if (uid == -2) {
        *rc = AIDC_EINVAL; /* the cluster cannot run this tenant's jobs as they are */
        return NULL;
    }
    if (job->image && !localopts_unconfined(c->options) && !imagecache_digest_valid(job->image_digest)) {
        snprintf(err, errsz, "image %.200s is not in aidc's catalog: the local executor pulls "
                             "images by the digest checked at submission",
                 job->image);
        *rc = AIDC_EINVAL;
        return NULL;
    }
    json_t *storage = storage_spec(c, job, rc, err, errsz);
    if (*rc)
        return NULL;
    /* an unconfined job pulls nothing (and its uid could read the file) */
    *rc = localopts_unconfined(c->options) ? 0 : write_auth(ctl, job, err, errsz);
    spec = *rc ? NULL : job_spec(c, job, uid, storage);
    if (*rc)
        json_decref(storage);
    text = spec ? json_dumps(spec, JSON_COMPACT) : NULL;
    if (!*rc && (!text || fsat_write_atomic(ctl, "job.json", text, strlen(text), 0600) != 0)) {
        snprintf(err, errsz, "cannot write the job's job.json");
        *rc = AIDC_EIO;
        json_decref(spec);
        spec = NULL;
    }
    free(text);
    return spec;
}

static int submit(const struct backend_cluster *c, const struct backend_job *job, char *backend_id,
                  size_t idsz, struct backend_call *call, char *err, size_t errsz)
{
    snprintf(backend_id, idsz, "%s", job->id);
    if (job->app && localopts_unconfined(c->options)) { /* its app would face the host */
        snprintf(err, errsz, "an interactive session needs the sandbox: this cluster's "
                             "options.sandbox is \"unconfined\"");
        return AIDC_EINVAL;
    }
    int ctl = open_ctl(c, job->id, true, err, errsz);
    if (ctl < 0)
        return AIDC_EIO;
    int rc = 0;
    char *dir = ctl_path(c, job->id);
    json_t *spec = spec_in(c, ctl, job, &rc, err, errsz);
    if (!spec)
        goto out;
    /* delivered before: started already unless the shim never wrote its pid */
    bool started = fsat_exists(ctl, "shim.pid") || fsat_exists(ctl, "status.json");
    if (!started && localopts_unconfined(c->options))
        log_warn("job %s of cluster %s runs UNCONFINED (options.sandbox \"unconfined\")",
                 job->id, c->name);
    if (!started)
        rc = spawn_shim(c, dir, err, errsz);
    if (call && started)
        call->adopted = true;
    else if (call) /* what the executor was handed, the user's environment values hidden */
        call->request = json_pack("{s:s, s:s, s:o}", "action", "start", "dir", dir, "spec",
                                  json_deep_copy(spec));
    if (call && call->request)
        backend_call_hide_env(json_object_get(json_object_get(call->request, "spec"), "env"),
                              job->env);
out:
    json_decref(spec);
    close(ctl);
    free(dir);
    return rc;
}

/* The shim's pid from shim.pid, if that process is alive and is this job's shim. */
static pid_t live_shim(int ctl, const char *dir)
{
    char *text = fsat_read(ctl, "shim.pid", 64, NULL);
    long pid = text ? strtol(text, NULL, 10) : 0;
    free(text);
    if (pid <= 1 || kill((pid_t)pid, 0) != 0)
        return 0;
    char cmd[1024], proc[64];
    snprintf(proc, sizeof proc, "/proc/%ld/cmdline", pid);
    int fd = open(proc, O_RDONLY | O_CLOEXEC);
    ssize_t n = fd >= 0 ? read(fd, cmd, sizeof cmd - 1) : -1;
    if (fd >= 0)
        close(fd);
    if (n <= 0)
        return 0;
    cmd[n] = '\0';
    /* exactly "aidcd local-shim DIR": a recycled pid is some other program, or the
     * shim of a later run, whose directory DIR-r1 starts with DIR */
    const char *arg1 = cmd + strlen(cmd) + 1, *arg2 = arg1 < cmd + n ? arg1 + strlen(arg1) + 1 : NULL;
    return arg2 && arg2 < cmd + n && strcmp(arg1, "local-shim") == 0 && strcmp(arg2, dir) == 0
               ? (pid_t)pid
               : 0;
}

static int stop(const struct backend_cluster *c, const char *job_id, struct backend_call *call,
                char *err, size_t errsz)
{
    char *dir = ctl_path(c, job_id);
    int rc = 0;
    pid_t shim = 0;
    int ctl = open_ctl(c, job_id, false, err, errsz);
    err[0] = '\0'; /* never delivered: nothing to stop */
    if (ctl >= 0) {
        /* the flag first: a shim starting right now sees it (shim.c) */
        if (fsat_write_atomic(ctl, "stop", "stop\n", 5, 0600) != 0) {
            snprintf(err, errsz, "cannot write the stop flag of %s", job_id);
            rc = AIDC_EIO;
        }
        shim = live_shim(ctl, dir);
        close(ctl);
    }
    if (shim > 0 && kill(shim, SIGTERM) != 0 && errno != ESRCH) {
        snprintf(err, errsz, "cannot signal the job's shim: %s", strerror(errno));
        rc = AIDC_EIO;
    }
    /* the stop flag, and SIGTERM to a live shim (which passes it on with the grace period) */
    if (call)
        call->request =
            json_pack("{s:s, s:s, s:s, s:o}", "action", "stop", "dir", dir, "signal", "SIGTERM",
                      "shim_pid", shim > 0 ? json_integer(shim) : json_null());
    free(dir);
    return rc;
}

static int cancel(const struct backend_cluster *c, const char *job_id, const char *backend_id,
                  struct backend_call *call, char *err, size_t errsz)
{
    (void)backend_id;
    return stop(c, job_id, call, err, errsz);
}

static int preempt(const struct backend_cluster *c, const char *job_id, const char *backend_id,
                   int grace_seconds, struct backend_call *call, char *err, size_t errsz)
{
    (void)backend_id;
    (void)grace_seconds; /* the shim applies the job's grace period to every stop */
    return stop(c, job_id, call, err, errsz);
}

static time_t file_time(int ctl, const char *name)
{
    struct stat st;
    return fstatat(ctl, name, &st, AT_SYMLINK_NOFOLLOW) == 0 ? st.st_mtime : 0;
}

static void ended(int ctl, struct backend_status *out)
{
    char *text = fsat_read(ctl, "status.json", 65536, NULL);
    json_t *s = text ? json_loads(text, 0, NULL) : NULL;
    free(text);
    struct shim_status ss;
    shim_status_parse(s, &ss);
    json_decref(s);
    out->started_at = ss.started_at;
    out->finished_at = ss.finished_at;
    out->exit_code = ss.exit_code;
    snprintf(out->reason, sizeof out->reason, "%s", ss.reason);
    out->has_usage = ss.cpu_seconds >= 0 || ss.mem_peak_bytes >= 0;
    out->cpu_seconds = ss.cpu_seconds;
    out->mem_peak_bytes = ss.mem_peak_bytes;
    out->state = ss.stopped                            ? BS_STOPPED
                 : ss.exit_code == 0 && !ss.timed_out && !ss.oom ? BS_SUCCEEDED
                                                                 : BS_FAILED;
}

static int poll_job(const struct backend_cluster *c, const char *job_id, const char *backend_id,
                    struct backend_status *out, char *err, size_t errsz)
{
    (void)backend_id;
    memset(out, 0, sizeof *out);
    out->exit_code = -1;
    int ctl = open_ctl(c, job_id, false, err, errsz);
    if (ctl < 0) {
        out->state = BS_UNKNOWN;
        return 0;
    }
    char *dir = ctl_path(c, job_id);
    /* In the order the shim writes them: its pid file, then (alive) its
     * status, then it exits. So "pid file, then dead, then no status" means
     * it died without one; looking at liveness before the pid file would
     * take a shim that wrote its pid between the two looks for a lost one. */
    bool had_pid = fsat_exists(ctl, "shim.pid");
    bool alive = had_pid && live_shim(ctl, dir) > 0;
    time_t started = file_time(ctl, "started");
    if (fsat_exists(ctl, "status.json")) {
        ended(ctl, out);
    } else if (alive && started) {
        out->state = BS_RUNNING;
        out->started_at = started;
    } else if (alive) {
        out->state = BS_PENDING; /* pulling its image, or starting */
        char *phase = fsat_read(ctl, "phase", 1024, NULL);
        if (phase)
            snprintf(out->reason, sizeof out->reason, "%.*s", (int)strcspn(phase, "\n"), phase);
        free(phase);
    } else if (had_pid) {
        /* the shim died without a status: the machine rebooted, or someone killed it */
        out->state = BS_FAILED;
        out->finished_at = time(NULL);
        snprintf(out->reason, sizeof out->reason, "the local executor lost the job");
    } else if (fsat_exists(ctl, "job.json")) {
        out->state = BS_PENDING; /* the shim is starting */
        if (time(NULL) - file_time(ctl, "job.json") > SHIM_START_SECONDS) {
            out->state = BS_FAILED;
            out->finished_at = time(NULL);
            snprintf(out->reason, sizeof out->reason, "the local executor could not start it");
        }
    } else {
        out->state = BS_UNKNOWN;
    }
    close(ctl);
    free(dir);
    return 0;
}

static long long meminfo_gib(void)
{
    FILE *f = fopen("/proc/meminfo", "re");
    long long kib = 0;
    char line[256];
    while (f && fgets(line, sizeof line, f))
        if (strncmp(line, "MemTotal:", 9) == 0)
            kib = strtoll(line + 9, NULL, 10);
    if (f)
        fclose(f);
    return kib / (1024LL * 1024);
}

/*
 * Whether this machine can run sandboxed jobs as the cluster says: bubblewrap
 * starts a sandbox as a job's uid, and job cgroups can be made. When it
 * cannot, jobs must not run: the cluster is unhealthy with the reason.
 */
static int sandbox_ready(const struct backend_cluster *c, char *err, size_t errsz)
{
    if (localopts_unconfined(c->options) && geteuid() != 0) {
        snprintf(err, errsz, "options.sandbox \"unconfined\" needs aidcd to run as root, or its "
                             "jobs would run as aidcd's own user, with its keys: no local job runs");
        return -1;
    }
    if (localopts_unconfined(c->options)) {
        log_warn("cluster %s runs its jobs UNCONFINED (options.sandbox \"unconfined\"): every job "
                 "sees this machine as its user does",
                 c->name);
        return 0;
    }
    char why[400];
    long long uid = localopts_uid(c->options, 1, why, sizeof why);
    json_t *sb = localopts_sandbox(c);
    const char *parent = json_string_value(json_object_get(sb, "cgroup_parent"));
    int rc = jail_probe(uid, why, sizeof why) == 0 ? 0 : -1;
    if (rc)
        snprintf(err, errsz, "the job sandbox cannot start here, so no local job runs: %s", why);
    else if (cgroup_probe(parent, why, sizeof why) != 0) {
        snprintf(err, errsz, "job limits cannot be set here, so no local job runs: %s", why);
        rc = -1;
    }
    /* the cache itself is the jobs' group's only (imagecache.c): its parents are checked */
    char *cache = xstrdup(json_string_value(json_object_get(sb, "image_cache")));
    char *slash = strrchr(cache, '/');
    if (slash && slash != cache)
        *slash = '\0';
    why[0] = '\0';
    if (!rc && passable(cache, c->data_dir, why, sizeof why) != 0) {
        snprintf(err, errsz, "the image cache cannot be used: %s", why);
        rc = -1;
    }
    free(cache);
    const char *net = json_string_value(json_object_get(sb, "network"));
    if (!rc && strcmp(net, "outbound") == 0 && access(SLIRP_BIN, X_OK) != 0) {
        snprintf(err, errsz, "options.network is \"outbound\" but " SLIRP_BIN
                             " is missing (apt-get install slirp4netns)");
        rc = -1;
    } else if (!rc && strcmp(net, "outbound") == 0 && access("/dev/net/tun", R_OK | W_OK) != 0) {
        snprintf(err, errsz, "options.network is \"outbound\" but aidcd's user cannot open "
                             "/dev/net/tun (mode 0666 is the kernel's and udev's default)");
        rc = -1;
    }
    json_decref(sb);
    return rc;
}

static int inventory(const struct backend_cluster *c, struct backend_resource *out, size_t max,
                     char *err, size_t errsz)
{
    size_t n = 0;
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)json_object_get(c->options, "gpus"), key, v) {
        if (n + 2 >= max)
            break;
        snprintf(out[n].name, sizeof out[n].name, "gpu:%s", key);
        out[n++].total = json_integer_value(v);
    }
    json_t *cpus = json_object_get(c->options, "cpus"), *mem = json_object_get(c->options, "memory_gib");
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    snprintf(out[n].name, sizeof out[n].name, "cpu");
    out[n++].total = cpus ? json_integer_value(cpus) : (ncpu > 0 ? ncpu : 1);
    snprintf(out[n].name, sizeof out[n].name, "memory_gib");
    out[n++].total = mem ? json_integer_value(mem) : meminfo_gib();
    /* the work directory must be usable, and the sandbox start, or nothing can run */
    int wfd = open_workdir(c, err, errsz);
    if (wfd < 0)
        return -1;
    close(wfd);
    return sandbox_ready(c, err, errsz) == 0 ? (int)n : -1;
}

/*
 * This machine as the one node of the cluster: options.node, else the host
 * name (what DCGM's alerts call it). GPU indexes as jobs get them: types in
 * name order.
 */
static int nodes(const struct backend_cluster *c,
                 void (*report)(void *arg, const struct backend_node *node), void *arg, char *err,
                 size_t errsz)
{
    char host[256] = "";
    const char *name = json_string_value(json_object_get(c->options, "node"));
    if (!name) {
        if (gethostname(host, sizeof host) != 0 || !backend_node_name_valid(host)) {
            snprintf(err, errsz, "this machine's host name is not a node name: set options.node");
            return AIDC_EINVAL;
        }
        name = host;
    }
    const char *types[MAX_GPU_TYPES];
    size_t n = localopts_gpu_types(c->options, types, MAX_GPU_TYPES);
    const json_t *gpus = json_object_get(c->options, "gpus");
    struct backend_node bn = {.name = name, .gpu_type = "", .usable = true};
    int at = 0, reported = 0;
    for (size_t i = 0; i < n; i++) {
        int count = (int)json_integer_value(json_object_get(gpus, types[i]));
        if (count <= 0)
            continue;
        bn.gpu_type = types[i];
        bn.first = at;
        bn.gpus = count;
        report(arg, &bn);
        reported++;
        at += count;
    }
    if (!reported) {
        bn.gpu_type = "";
        bn.first = bn.gpus = 0;
        report(arg, &bn);
    }
    return 0;
}

static int logs(const struct backend_cluster *c, const char *job_id, bool stderr_stream, int tail,
                char **text, size_t *textlen)
{
    if (!run_key_ok(job_id))
        return AIDC_ENOTFOUND;
    char *dir = ctl_path(c, job_id);
    int e = backend_tail_file(dir, stderr_stream ? "stderr" : "stdout", tail, text, textlen);
    free(dir);
    return e;
}

/* The run's directory holds its logs (aidcd's, the job never sees them) and
 * work/, the job's /job, written as the job's uid. */
static int outputs(const struct backend_cluster *c, const char *job_id, struct backend_outputs *out)
{
    char err[256];
    out->work_fd = out->logs_fd = -1;
    out->uid = out->gid = -1;
    if (!run_key_ok(job_id))
        return AIDC_ENOTFOUND;
    int ctl = open_ctl(c, job_id, false, err, sizeof err);
    if (ctl < 0)
        return AIDC_ENOTFOUND;
    out->logs_fd = ctl;
    snprintf(out->stdout_name, sizeof out->stdout_name, "stdout");
    snprintf(out->stderr_name, sizeof out->stderr_name, "stderr");
    out->work_fd = fsat_open(ctl, "work", O_RDONLY | O_DIRECTORY, 0);
    char *text = fsat_read(ctl, "job.json", 4 << 20, NULL);
    json_t *job = text ? json_loads(text, 0, NULL) : NULL;
    free(text);
    json_t *uid = json_object_get(job, "uid"); /* -1: the job ran as aidcd's own user */
    if (json_is_integer(uid) && json_integer_value(uid) >= 0)
        out->uid = out->gid = json_integer_value(uid);
    json_decref(job);
    return 0;
}

/* Where the shim forwarded the app's port (app.json: the shim's, never the job's). */
static int app_endpoint(const struct backend_cluster *c, const char *job_id,
                        const char *backend_id, struct backend_endpoint *out, char *err,
                        size_t errsz)
{
    (void)backend_id;
    memset(out, 0, sizeof *out);
    int ctl = open_ctl(c, job_id, false, err, errsz);
    if (ctl < 0)
        return AIDC_ENOTFOUND;
    char *text = fsat_read(ctl, "app.json", 4096, NULL);
    close(ctl);
    json_t *doc = text ? json_loads(text, 0, NULL) : NULL;
    free(text);
    json_int_t port = json_integer_value(json_object_get(doc, "port"));
    json_decref(doc);
    if (port < 1 || port > 65535)
        return AIDC_ENOTFOUND;
    snprintf(out->host, sizeof out->host, "127.0.0.1");
    out->port = (int)port;
    return 0;
}

const struct backend_ops backend_local = {
    .kind = "local",
    .check_options = check_options,
    .submit = submit,
    .cancel = cancel,
    .preempt = preempt,
    .poll = poll_job,
    .inventory = inventory,
    .logs = logs,
    .outputs = outputs,
    .gpu_range = local_gpu_range,
    .nodes = nodes,
    .app_endpoint = app_endpoint,
    .max_nodes = 1,
};
