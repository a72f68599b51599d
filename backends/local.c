/* local.c - the local executor (see local.h). */
#include "local.h"

#include "../api/jobspec.h"
#include "credref.h"
#include "../server/err.h"
#include "../server/log.h"
#include "../server/sbuf.h"
#include "../server/xalloc.h"
#include "shim.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define MAX_GPU_TYPES 16
#define MAX_GPUS_PER_TYPE 64
#define MAX_SANDBOX_PATHS 16

static bool int_option(json_t *o, const char *name, long long min, long long max, char *err,
                       size_t errsz)
{
    json_t *v = json_object_get(o, name);
    if (!v)
        return true;
    if (!json_is_integer(v) || json_integer_value(v) < min || json_integer_value(v) > max) {
        snprintf(err, errsz, "options.%s must be an integer from %lld to %lld", name, min, max);
        return false;
    }
    return true;
}

/* options.name, if there: an array of at most MAX_SANDBOX_PATHS absolute paths. */
static bool paths_option(json_t *o, const char *name, char *err, size_t errsz)
{
    json_t *a = json_object_get(o, name), *v;
    size_t i;
    if (!a)
        return true;
    bool ok = json_is_array(a) && json_array_size(a) <= MAX_SANDBOX_PATHS;
    json_array_foreach(a, i, v) {
        ok = ok && json_is_string(v) && json_string_value(v)[0] == '/' &&
             strlen(json_string_value(v)) <= 512;
    }
    if (!ok)
        snprintf(err, errsz, "options.%s must be an array of at most %d absolute paths", name,
                 MAX_SANDBOX_PATHS);
    return ok;
}

static bool check_options(json_t *o, char *err, size_t errsz)
{
    static const char *const known[] = {"gpus",    "cpus",           "memory_gib",
                                        "max_time_limit_minutes",   "workdir",
                                        "node",    "sandbox",        "writable_paths",
                                        "hidden_paths"};
    const char *key;
    json_t *v;
    json_object_foreach(o, key, v) {
        bool ok = false;
        for (size_t i = 0; i < sizeof known / sizeof known[0]; i++)
            ok |= strcmp(key, known[i]) == 0;
        if (!ok) {
            snprintf(err, errsz, "options.%.64s is not an option of the local backend", key);
            return false;
        }
    }
    json_t *gpus = json_object_get(o, "gpus");
    if (gpus && !json_is_object(gpus)) {
        snprintf(err, errsz, "options.gpus must be an object of GPU type to count");
        return false;
    }
    if (json_object_size(gpus) > MAX_GPU_TYPES) {
        snprintf(err, errsz, "options.gpus may name at most %d GPU types", MAX_GPU_TYPES);
        return false;
    }
    json_object_foreach(gpus, key, v) {
        if (!jobspec_gpu_type_valid(key)) {
            snprintf(err, errsz, "options.gpus: \"%.40s\" is not a GPU type (^[a-z0-9][a-z0-9._-]{0,31}$)",
                     key);
            return false;
        }
        if (!json_is_integer(v) || json_integer_value(v) < 0 ||
            json_integer_value(v) > MAX_GPUS_PER_TYPE) {
            snprintf(err, errsz, "options.gpus.%s must be an integer from 0 to %d", key,
                     MAX_GPUS_PER_TYPE);
            return false;
        }
    }
    json_t *wd = json_object_get(o, "workdir");
    if (wd && (!json_is_string(wd) || json_string_value(wd)[0] != '/' ||
               strlen(json_string_value(wd)) > 512)) {
        snprintf(err, errsz, "options.workdir must be an absolute path of at most 512 bytes");
        return false;
    }
    json_t *node = json_object_get(o, "node");
    if (node && (!json_is_string(node) || !backend_node_name_valid(json_string_value(node)))) {
        snprintf(err, errsz, "options.node must be a host name (letters, digits, '.', '_', '-'; "
                             "at most 253)");
        return false;
    }
    const char *sb = json_string_value(json_object_get(o, "sandbox"));
    if (json_object_get(o, "sandbox") &&
        (!sb || (strcmp(sb, "auto") != 0 && strcmp(sb, "required") != 0 &&
                 strcmp(sb, "none") != 0))) {
        snprintf(err, errsz, "options.sandbox must be \"auto\", \"required\" or \"none\"");
        return false;
    }
    return paths_option(o, "writable_paths", err, errsz) &&
           paths_option(o, "hidden_paths", err, errsz) &&
           int_option(o, "cpus", 1, 100000, err, errsz) &&
           int_option(o, "memory_gib", 1, 1000000, err, errsz) &&
           int_option(o, "max_time_limit_minutes", 1, 525600, err, errsz);
}

/* GPU types of options in name order (the index numbering). */
static size_t sorted_types(const json_t *options, const char **types)
{
    size_t n = 0;
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)json_object_get(options, "gpus"), key, v) {
        if (n == MAX_GPU_TYPES)
            break;
        size_t k = n++;
        while (k > 0 && strcmp(types[k - 1], key) > 0) {
            types[k] = types[k - 1];
            k--;
        }
        types[k] = key;
    }
    return n;
}

bool local_gpu_range(const json_t *options, const char *gpu_type, int *first, int *count)
{
    const char *types[MAX_GPU_TYPES];
    size_t n = sorted_types(options, types);
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

static char *workdir(const struct backend_cluster *c)
{
    const char *wd = json_string_value(json_object_get(c->options, "workdir"));
    return wd ? xstrdup(wd) : xasprintf("%s/jobs", c->data_dir);
}

static char *job_dir(const struct backend_cluster *c, const char *job_id)
{
    char *wd = workdir(c);
    char *d = xasprintf("%s/%s", wd, job_id);
    free(wd);
    return d;
}

/* Write text to path atomically (temporary file, fsync, rename). */
static int write_file(const char *path, const char *text)
{
    char *tmp = xasprintf("%s.tmp", path);
    int rc = AIDC_EIO;
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd >= 0) {
        size_t n = strlen(text);
        if (write(fd, text, n) == (ssize_t)n && fsync(fd) == 0 && close(fd) == 0) {
            fd = -1;
            if (rename(tmp, path) == 0)
                rc = 0;
        }
        if (fd >= 0)
            close(fd);
    }
    if (rc)
        unlink(tmp);
    free(tmp);
    return rc;
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
        /* none of aidcd's environment (database URLs with passwords): the job
         * could read its shim's through /proc, and needs none of it */
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

/* add every string of options.name to a */
static void add_paths(json_t *a, const struct backend_cluster *c, const char *name)
{
    size_t i;
    json_t *v;
    json_array_foreach(json_object_get(c->options, name), i, v)
        json_array_append_new(a, json_string(json_string_value(v)));
}

/*
 * The job's sandbox (backends/sandbox.h): hidden are aidcd's data directory
 * and the job directories (each job sees its own only), its secret files,
 * libpq's and ssh's files in its home, /etc/aidc (where docs put keys and
 * credentials_ref files), Debian's PostgreSQL data and what the operator adds.
 */
static json_t *sandbox_spec(const struct backend_cluster *c)
{
    const char *mode = json_string_value(json_object_get(c->options, "sandbox"));
    json_t *hidden = json_array(), *writable = json_array();
    char *wd = workdir(c);
    json_array_append_new(hidden, json_string(c->data_dir));
    json_array_append_new(hidden, json_string(wd));
    free(wd);
    const char *own[8];
    size_t n = credref_own_paths(own, sizeof own / sizeof own[0]);
    for (size_t i = 0; i < n; i++)
        json_array_append_new(hidden, json_string(own[i]));
    static const char *const in_home[] = {".pgpass", ".postgresql", ".ssh"};
    const char *home = getenv("HOME");
    bool has_home = home && home[0] == '/' && home[1]; /* a service user's may be "/" */
    for (size_t i = 0; has_home && i < sizeof in_home / sizeof *in_home; i++) {
        char *p = xasprintf("%s/%s", home, in_home[i]);
        json_array_append_new(hidden, json_string(p));
        free(p);
    }
    json_array_append_new(hidden, json_string("/etc/aidc"));
    json_array_append_new(hidden, json_string("/var/lib/postgresql")); /* a database on this host */
    add_paths(hidden, c, "hidden_paths");
    json_array_append_new(writable, json_string("/tmp"));
    json_array_append_new(writable, json_string("/var/tmp"));
    add_paths(writable, c, "writable_paths");
    return json_pack("{s:s, s:o, s:o}", "mode", mode ? mode : "auto", "hidden", hidden,
                     "writable", writable);
}

/* What the shim runs: job.json (new reference). */
static json_t *job_spec(const struct backend_cluster *c, const struct backend_job *job)
{
    json_t *idx = json_array();
    for (size_t i = 0; i < job->ngpu_indexes; i++)
        json_array_append_new(idx, json_integer(job->gpu_indexes[i]));
    return json_pack("{s:s, s:s, s:s, s:s, s:O?, s:s?, s:O, s:o, s:i, s:i, s:o}", "job_id",
                     job->id, "tenant", job->tenant, "project", job->project, "user", job->user,
                     "command", job->command, "script", job->script, "env", job->env,
                     "gpu_indexes", idx, "time_limit_seconds", job->time_limit_minutes * 60,
                     "grace_seconds", job->grace_seconds, "sandbox", sandbox_spec(c));
}

/*
 * The spec the job's shim runs (new reference): job.json as a delivery tried
 * before wrote it, or else as written now. NULL with *rc and err.
 */
static json_t *spec_in(const struct backend_cluster *c, const char *dir,
                       const struct backend_job *job, int *rc, char *err, size_t errsz)
{
    char *path = xasprintf("%s/job.json", dir), *text = NULL;
    json_t *spec = json_load_file(path, 0, NULL);
    *rc = 0;
    if (spec)
        goto out;
    if (mkdir(dir, 0700) != 0 && errno != EEXIST) {
        snprintf(err, errsz, "cannot create %s: %s", dir, strerror(errno));
        *rc = AIDC_EIO;
        goto out;
    }
    spec = job_spec(c, job);
    text = spec ? json_dumps(spec, JSON_COMPACT) : NULL;
    *rc = text ? write_file(path, text) : AIDC_EINTERNAL;
    if (*rc) {
        snprintf(err, errsz, "cannot write %s", path);
        json_decref(spec);
        spec = NULL;
    }
out:
    free(text);
    free(path);
    return spec;
}

static int submit(const struct backend_cluster *c, const struct backend_job *job, char *backend_id,
                  size_t idsz, struct backend_call *call, char *err, size_t errsz)
{
    char *wd = workdir(c), *dir = job_dir(c, job->id);
    int rc = 0;
    json_t *spec = NULL;
    snprintf(backend_id, idsz, "%s", job->id);
    if (mkdir(wd, 0700) != 0 && errno != EEXIST) {
        snprintf(err, errsz, "cannot create %s: %s", wd, strerror(errno));
        rc = AIDC_EIO;
        goto out;
    }
    spec = spec_in(c, dir, job, &rc, err, errsz);
    if (!spec)
        goto out;
    /* delivered before: started already unless the shim never wrote its pid */
    char *pid_path = xasprintf("%s/shim.pid", dir), *status_path = xasprintf("%s/status.json", dir);
    struct stat st;
    bool started = stat(pid_path, &st) == 0 || stat(status_path, &st) == 0;
    free(pid_path);
    free(status_path);
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
    free(wd);
    free(dir);
    return rc;
}

/* The shim's pid from shim.pid, if that process is alive and is this job's shim. */
static pid_t live_shim(const char *dir)
{
    char *path = xasprintf("%s/shim.pid", dir);
    FILE *f = fopen(path, "r");
    free(path);
    if (!f)
        return 0;
    long pid = 0;
    if (fscanf(f, "%ld", &pid) != 1) /* NOLINT(cert-err34-c): checked by the value test below */
        pid = 0;
    fclose(f);
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
    for (ssize_t i = 0; i < n; i++) /* arguments are NUL-separated */
        if (cmd[i] == '\0')
            cmd[i] = ' ';
    /* a recycled pid belongs to some other program */
    return strstr(cmd, "local-shim") && strstr(cmd, dir) ? (pid_t)pid : 0;
}

static int stop(const struct backend_cluster *c, const char *job_id, struct backend_call *call,
                char *err, size_t errsz)
{
    char *dir = job_dir(c, job_id);
    int rc = 0;
    /* the flag first: a shim starting right now sees it (shim.c) */
    struct stat st;
    if (stat(dir, &st) == 0) {
        char *flag = xasprintf("%s/stop", dir);
        rc = write_file(flag, "stop\n");
        if (rc)
            snprintf(err, errsz, "cannot write %s", flag);
        free(flag);
    }
    pid_t shim = live_shim(dir);
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

/* A shim that has not written its pid this long after job.json never will. */
#define SHIM_START_SECONDS 60

static int poll_job(const struct backend_cluster *c, const char *job_id, const char *backend_id,
                    struct backend_status *out, char *err, size_t errsz)
{
    (void)backend_id;
    (void)err;
    (void)errsz;
    char *dir = job_dir(c, job_id);
    char *status = xasprintf("%s/status.json", dir), *pid_path = xasprintf("%s/shim.pid", dir);
    char *spec_path = xasprintf("%s/job.json", dir);
    memset(out, 0, sizeof *out);
    out->exit_code = -1;
    /* In the order the shim writes them: its pid file, then (alive) its
     * status, then it exits. So "pid file, then dead, then no status" means
     * it died without one; looking at liveness before the pid file would
     * take a shim that wrote its pid between the two looks for a lost one. */
    struct stat st;
    bool had_pid = stat(pid_path, &st) == 0;
    time_t pid_mtime = had_pid ? st.st_mtime : 0;
    bool alive = had_pid && live_shim(dir) > 0;
    json_t *s = json_load_file(status, 0, NULL);
    if (s) {
        struct shim_status ss;
        shim_status_parse(s, &ss);
        out->started_at = ss.started_at;
        out->finished_at = ss.finished_at;
        out->exit_code = ss.exit_code;
        snprintf(out->reason, sizeof out->reason, "%s", ss.reason);
        out->state = ss.stopped ? BS_STOPPED
                     : ss.exit_code == 0 && !ss.timed_out ? BS_SUCCEEDED
                                                          : BS_FAILED;
        json_decref(s);
    } else if (alive) {
        out->state = BS_RUNNING;
        out->started_at = pid_mtime;
    } else if (had_pid) {
        /* the shim died without a status: the machine rebooted, or someone killed it */
        out->state = BS_FAILED;
        out->finished_at = time(NULL);
        snprintf(out->reason, sizeof out->reason, "the local executor lost the job");
    } else if (stat(spec_path, &st) == 0) {
        out->state = BS_PENDING; /* the shim is starting */
        if (time(NULL) - st.st_mtime > SHIM_START_SECONDS) {
            out->state = BS_FAILED;
            out->finished_at = time(NULL);
            snprintf(out->reason, sizeof out->reason, "the local executor could not start it");
        }
    } else {
        out->state = BS_UNKNOWN;
    }
    free(status);
    free(pid_path);
    free(spec_path);
    free(dir);
    return 0;
}

static long long meminfo_gib(void)
{
    FILE *f = fopen("/proc/meminfo", "r");
    long long kib = 0;
    char line[256];
    while (f && fgets(line, sizeof line, f))
        if (strncmp(line, "MemTotal:", 9) == 0)
            kib = strtoll(line + 9, NULL, 10);
    if (f)
        fclose(f);
    return kib / (1024LL * 1024);
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
    /* the work directory must be usable, or nothing can run */
    char *wd = workdir(c);
    if (mkdir(wd, 0700) != 0 && errno != EEXIST) {
        snprintf(err, errsz, "cannot create the work directory %s: %s", wd, strerror(errno));
        free(wd);
        return -1;
    }
    free(wd);
    return (int)n;
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
    size_t n = sorted_types(c->options, types);
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
    char *dir = job_dir(c, job_id);
    char *path = xasprintf("%s/%s", dir, stderr_stream ? "stderr" : "stdout");
    free(dir);
    int e = backend_tail_file(path, tail, text, textlen);
    free(path);
    return e;
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
    .gpu_range = local_gpu_range,
    .nodes = nodes,
    .max_nodes = 1,
};
