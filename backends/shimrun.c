/* shimrun.c - a local job in its sandbox (see shimrun.h and jail.h). */
#include "shimrun.h"

#include "../lib/fsat.h"
#include "../lib/xalloc.h"
#include "imagecache.h"
#include "imagetree.h"
#include "jail.h"
#include "jobenv.h"
#include "shimmount.h"
#include "slirp.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define START_MS 30000 /* bwrap reports its sandbox's pid within this */
#define MAX_PATHS 64

/* Everything the launch holds, released in one place. */
struct launch {
    struct imagecache_use image;
    bool has_image;
    int work, tmp, script, passwd, group, hosts, resolv;
    int status[2], block[2];
    int procs[CGROUP_MAX_DIRS];      /* the job's cgroups */
    int nprocs;
    int net_procs[CGROUP_MAX_DIRS];  /* slirp4netns's: the job's but devices */
    int nnet_procs;
    struct cgroup_job cg;
    bool has_cg;
    struct jail jail;
    struct slirp net;
    char **env, **argv;
    const char *hidden[MAX_PATHS], *writable[MAX_PATHS];
    struct shimmount spaces;               /* its storage spaces */
    struct jail_mount mounts[JOBMOUNT_MAX]; /* ... as the sandbox binds them */
    json_t *spaces_env;
};

static const json_t *sandbox(const struct shim_run *r)
{
    return json_object_get(r->spec, "sandbox");
}

static const char *sopt(const struct shim_run *r, const char *name, const char *dflt)
{
    const char *v = json_string_value(json_object_get(sandbox(r), name));
    return v ? v : dflt;
}

static long long iopt(const json_t *o, const char *name, long long dflt)
{
    json_t *v = json_object_get(o, name);
    return json_is_integer(v) ? json_integer_value(v) : dflt;
}

static void closefd(int *fd)
{
    if (*fd >= 0)
        close(*fd);
    *fd = -1;
}

static size_t paths(const struct shim_run *r, const char *name, const char **out)
{
    size_t n = 0, i;
    json_t *v;
    json_array_foreach(json_object_get(sandbox(r), name), i, v)
        if (n < MAX_PATHS && json_is_string(v))
            out[n++] = json_string_value(v);
    return n;
}

/* The job's image, pulled or from the cache. 0, or -1 with the job failed. */
static int image(struct shim_run *r, struct launch *l)
{
    const json_t *img = json_object_get(r->spec, "image");
    if (!json_is_object(img))
        return 0;
    const char *ref = json_string_value(json_object_get(img, "ref"));
    char phase[600], err[600];
    snprintf(phase, sizeof phase, "pulling image %.500s\n", ref ? ref : "");
    shim_note(r, "phase", phase);
    bool auth = fsat_exists(r->dfd, "pull-auth.json");
    struct imagecache_ref ir = {
        .dir = sopt(r, "image_cache", "/var/lib/aidc/images"),
        .max_bytes = iopt(sandbox(r), "image_cache_bytes", 20LL << 30),
        .image = ref,
        .digest = json_string_value(json_object_get(img, "digest")),
        .tls_verify = !json_is_false(json_object_get(img, "tls_verify")),
        .authfile = auth ? "pull-auth.json" : NULL, /* the shim's working directory */
        .timeout_s = (int)iopt(sandbox(r), "pull_timeout_seconds", 1800),
        .cancel_fd = r->cancel_fd,
        .share_gid = r->share_gid,
    };
    int e = ref ? imagecache_acquire(&ir, &l->image, err, sizeof err) : -1;
    if (auth)
        unlinkat(r->dfd, "pull-auth.json", 0); /* the registry's secret, used once */
    if (e != 0) {
        char reason[128];
        if (!ref)
            snprintf(err, sizeof err, "no image reference");
        struct shim_end end = {.exit_code = -1, .cpu_seconds = -1, .mem_peak_bytes = -1};
        bool stop = strstr(err, "stopped while") != NULL;
        end.stopped = stop;
        snprintf(reason, sizeof reason, "%s%.100s", stop ? "" : "image pull failed: ", err);
        snprintf(end.reason, sizeof end.reason, "%s", stop ? "stopped" : reason);
        dprintf(2, "aidc: image %s: %s\n", ref ? ref : "", err);
        shim_end(r, &end);
        return -1;
    }
    l->has_image = true;
    return 0;
}

/* /etc/passwd and /etc/group of the view with the job's user added; /etc/hosts. */
static int files(struct shim_run *r, struct launch *l, bool outbound)
{
    char user[40], line[200];
    jobenv_user(r->spec, user, sizeof user);
    unsigned uid = r->drop ? r->uid : (unsigned)geteuid(), gid = r->drop ? r->gid : getegid();
    const char *names[] = {"etc/passwd", "etc/group"};
    int *fds[] = {&l->passwd, &l->group};
    int root = l->has_image ? l->image.rootfs_fd : -1;
    for (size_t i = 0; i < 2; i++) {
        size_t len = 0;
        int at = root >= 0 ? root : open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
        char *base = at >= 0 ? fsat_read(at, names[i], 1 << 20, &len) : NULL;
        if (root < 0 && at >= 0)
            close(at);
        if (i == 0)
            snprintf(line, sizeof line, "%s:x:%u:%u:aidc job:%s:/bin/sh\n", user, uid, gid,
                     JAIL_JOB_DIR);
        else
            snprintf(line, sizeof line, "%s:x:%u:\n", user, gid);
        *fds[i] = jobenv_memfd(names[i] + 4, base, len, line);
        free(base);
        if (*fds[i] < 0)
            return -1;
    }
    const char *host = sopt(r, "hostname", "job");
    snprintf(line, sizeof line, "127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost\n"
                                "127.0.1.1\t%s\n", host);
    l->hosts = jobenv_memfd("hosts", NULL, 0, line);
    if (outbound)
        l->resolv = jobenv_memfd("resolv.conf", NULL, 0, "nameserver " SLIRP_DNS "\n");
    const char *script = json_string_value(json_object_get(r->spec, "script"));
    if (script)
        l->script = jobenv_memfd("job.sh", script, strlen(script), NULL);
    return l->hosts < 0 || (outbound && l->resolv < 0) || (script && l->script < 0) ? -1 : 0;
}

/* The job's cgroups with its limits; its GPUs' device nodes. */
static int limits(struct shim_run *r, struct launch *l, const struct jail_devices *dev, char *err,
                  size_t errsz)
{
    struct cgroup_limits lim = {
        .memory_bytes = iopt(r->spec, "memory_gib", 4) << 30,
        .cpu_millis = iopt(r->spec, "cpus", 1) * 1000,
        .pids = iopt(sandbox(r), "pids_max", 4096),
    };
    for (size_t i = 0; i < dev->n && i < CGROUP_MAX_DEVICES; i++) {
        lim.devices[i][0] = dev->major[i];
        lim.devices[i][1] = dev->minor[i];
        lim.ndevices++;
    }
    const char *id = json_string_value(json_object_get(r->spec, "job_id"));
    if (cgroup_job_create(&l->cg, sopt(r, "cgroup_parent", "/aidc"), id ? id : "job", &lim, err,
                          errsz) != 0)
        return -1;
    l->has_cg = true;
    l->nprocs = cgroup_job_procs_fds(&l->cg, true, l->procs, CGROUP_MAX_DIRS);
    l->nnet_procs = cgroup_job_procs_fds(&l->cg, false, l->net_procs, CGROUP_MAX_DIRS);
    if (l->nprocs < 0 || l->nnet_procs < 0) {
        snprintf(err, errsz, "cannot open the job's cgroups: %s", strerror(errno));
        return -1;
    }
    return 0;
}

static pid_t spawn(struct shim_run *r, struct launch *l)
{
    pid_t pid = fork();
    if (pid != 0)
        return pid;
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    signal(SIGPIPE, SIG_DFL); /* the shim ignores it; exec would pass that on to the job */
    int in = open("/dev/null", O_RDONLY);
    if (cgroup_job_join(l->procs, (size_t)l->nprocs) != 0 || in < 0 || dup2(in, 0) < 0 ||
        dup2(r->out, 1) < 0 || dup2(r->err, 2) < 0 || shim_drop(r) != 0) {
        dprintf(2, "aidc: cannot enter the job's cgroups or drop to its user: %s\n",
                strerror(errno));
        _exit(126);
    }
    jail_exec(&l->jail);
    dprintf(2, "aidc: cannot run " JAIL_BWRAP ": %s\n", strerror(errno));
    _exit(127);
}

/* bwrap's status documents: the sandbox's pid first, its exit code last. */
static long status_field(const char *text, const char *key)
{
    const char *p = strstr(text, key);
    return p ? strtol(p + strlen(key) + strspn(p + strlen(key), "\": \t"), NULL, 10) : -1;
}

static void status_read(int fd, char *buf, size_t bufsz, size_t *len, int timeout_ms,
                        const char *until)
{
    while (*len + 1 < bufsz && !strstr(buf, until)) {
        struct pollfd p = {.fd = fd, .events = POLLIN};
        int got = poll(&p, 1, timeout_ms);
        if (got < 0 && errno == EINTR)
            continue;
        ssize_t n = got > 0 ? read(fd, buf + *len, bufsz - 1 - *len) : 0;
        if (n <= 0)
            return;
        *len += (size_t)n;
        buf[*len] = '\0';
    }
}

/*
 * The job's storage spaces, open, and where the sandbox binds them (an
 * image's root gets its /data and /home mount points if it lacks them).
 * 0, or -1 with err.
 */
static int spaces(struct shim_run *r, struct launch *l, char *err, size_t errsz)
{
    if (shimmount_open(r->spec, r->drop, r->uid, r->gid, &l->spaces, err, errsz) != 0)
        return -1;
    for (size_t i = 0; i < l->spaces.n; i++) {
        const char *top = l->spaces.m[i].space.kind == SPACE_HOME ? "home" : "data";
        if (l->has_image && imagetree_mount_dir(l->image.rootfs_fd, top) != 0) {
            snprintf(err, errsz, "the image has no directory /%s to mount storage spaces in: %s",
                     top, strerror(errno));
            return -1;
        }
        l->mounts[i] = (struct jail_mount){.fd = l->spaces.fd[i],
                                           .path = l->spaces.m[i].target,
                                           .read_only = l->spaces.m[i].read_only};
    }
    l->spaces_env = shimmount_env(&l->spaces, true, err, errsz);
    return 0;
}

/*
 * Wait (SETUP_MS at most) until the sandbox's first process has set itself up
 * and waits on block (the pipe whose write end is block_w): bwrap configures
 * the sandbox's loopback over netlink meanwhile, and slirp4netns making its
 * tap device in the same namespace at that moment made bwrap's RTM_NEWADDR
 * fail ("loopback: Failed RTM_NEWADDR"), seen with sessions starting side by
 * side. Where /proc cannot tell, it goes on at once, as before.
 */
#define SETUP_MS 5000
static void wait_set_up(pid_t pid, int block_w)
{
    char self[64], want[64], path[64];
    snprintf(self, sizeof self, "/proc/self/fd/%d", block_w);
    ssize_t n = readlink(self, want, sizeof want - 1);
    if (n <= 0)
        return;
    want[n] = '\0'; /* "pipe:[inode]": both ends of the pipe say the same */
    snprintf(path, sizeof path, "/proc/%ld/syscall", (long)pid);
    for (int waited = 0; waited < SETUP_MS; waited += 5) {
        char line[256] = "";
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
            return;
        ssize_t got = read(fd, line, sizeof line - 1);
        close(fd);
        if (got <= 0)
            return;
        line[got] = '\0';
        unsigned long nr = 0, arg = 0;
        char *end = NULL;
        nr = strtoul(line, &end, 10);
        if (end && *end == ' ')
            arg = strtoul(end + 1, NULL, 16);
        if (end != line && nr == 0 /* read */) {
            char fdpath[64], have[64];
            snprintf(fdpath, sizeof fdpath, "/proc/%ld/fd/%lu", (long)pid, arg);
            ssize_t m = readlink(fdpath, have, sizeof have - 1);
            if (m > 0 && (have[m] = '\0', strcmp(have, want) == 0))
                return;
        }
        struct timespec nap = {0, 5L * 1000 * 1000};
        nanosleep(&nap, NULL);
    }
}

/* slirp4netns's control socket, in the control directory (the shim's working one) */
#define SLIRP_SOCKET "slirp.sock"

/* An interactive session's run: its app on $PORT is reached through a forwarded port. */
static bool is_app(const struct shim_run *r)
{
    return json_is_true(json_object_get(r->spec, "app"));
}

/* A session's app is reached over the job's network, so it has one (docs/sessions.md). */
static bool needs_network(const struct shim_run *r)
{
    return strcmp(sopt(r, "network", "none"), "outbound") == 0 || is_app(r);
}

/*
 * Forward a loopback port of the host to the app's $PORT and say which in
 * app.json, where aidcd reads it (backends/local.c app_endpoint). 0 or -1.
 */
static int forward_app(struct shim_run *r, char *err, size_t errsz)
{
    const char *p = json_string_value(json_object_get(json_object_get(r->spec, "env"), "PORT"));
    long guest = p ? strtol(p, NULL, 10) : 8888;
    if (guest < 1 || guest > 65535) {
        snprintf(err, errsz, "PORT is not a port: %.32s", p);
        return -1;
    }
    int port = slirp_forward(SLIRP_SOCKET, (int)guest, err, errsz);
    if (port < 0)
        return -1;
    char text[96];
    snprintf(text, sizeof text, "{\"host\": \"127.0.0.1\", \"port\": %d}\n", port);
    shim_note(r, "app.json", text);
    return 0;
}

/* The job's environment, argument vector and sandbox; 0 or -1 with err. */
static int prepare(struct shim_run *r, struct launch *l, struct jail_devices *dev, char *err,
                   size_t errsz)
{
    bool outbound = needs_network(r);
    l->work = shim_job_dir(r, "work");
    l->tmp = shim_job_dir(r, "tmp");
    if (l->work < 0 || l->tmp < 0) {
        snprintf(err, errsz, "cannot create the job's directory: %s", strerror(errno));
        return -1;
    }
    if (files(r, l, outbound) != 0) {
        snprintf(err, errsz, "cannot write the job's files: %s", strerror(errno));
        return -1;
    }
    int idx[64];
    size_t n = 0, i;
    json_t *v;
    json_array_foreach(json_object_get(r->spec, "gpu_indexes"), i, v)
        if (n < 64)
            idx[n++] = (int)json_integer_value(v);
    if (jail_devices_find(sopt(r, "device_dir", "/dev"), idx, n, dev, err, errsz) != 0 ||
        spaces(r, l, err, errsz) != 0 || limits(r, l, dev, err, errsz) != 0)
        return -1;
    struct jobenv_paths p = {.home = JAIL_JOB_DIR, .tmp = "/tmp", .sandboxed = true,
                             .platform = l->spaces_env};
    l->env = jobenv_build(r->spec, l->has_image ? l->image.env : NULL, &p);
    l->argv = jobenv_argv(r->spec, JAIL_SCRIPT);
    /* the job waits on block until the shim marked it started (and, outbound, connected
     * its network): no instruction of it runs before its start is recorded */
    if (pipe2(l->status, O_CLOEXEC) != 0 || pipe2(l->block, O_CLOEXEC) != 0) {
        snprintf(err, errsz, "pipe: %s", strerror(errno));
        return -1;
    }
    struct jail_spec js = {
        .rootfs_fd = l->has_image ? l->image.rootfs_fd : -1,
        .work_fd = l->work, .tmp_fd = l->tmp, .script_fd = l->script,
        .passwd_fd = l->passwd, .group_fd = l->group, .hosts_fd = l->hosts,
        .resolv_fd = l->resolv, .status_fd = l->status[1], .block_fd = l->block[0],
        .hostname = sopt(r, "hostname", "job"), .gpus = dev,
        .hidden = l->hidden, .nhidden = paths(r, "hidden", l->hidden),
        .writable = l->writable, .nwritable = paths(r, "writable", l->writable),
        .shm_bytes = iopt(r->spec, "memory_gib", 4) << 30,
        .mounts = l->mounts, .nmounts = l->spaces.n,
        .env = l->env, .argv = l->argv,
    };
    return jail_build(&js, &l->jail, err, errsz);
}

static void release(struct launch *l)
{
    int *fds[] = {&l->work,      &l->tmp,      &l->script,   &l->passwd,  &l->group,
                  &l->hosts,     &l->resolv,   &l->status[0], &l->status[1], &l->block[0],
                  &l->block[1]};
    for (size_t i = 0; i < sizeof fds / sizeof *fds; i++)
        closefd(fds[i]);
    for (int i = 0; i < l->nprocs; i++)
        close(l->procs[i]);
    for (int i = 0; i < l->nnet_procs; i++)
        close(l->net_procs[i]);
    l->nprocs = l->nnet_procs = 0;
    slirp_stop(&l->net);
    jail_free(&l->jail);
    if (l->has_cg)
        cgroup_job_destroy(&l->cg);
    l->has_cg = false;
    if (l->has_image)
        imagecache_release(&l->image);
    l->has_image = false;
    jobenv_free(l->env);
    jobenv_free(l->argv);
    l->env = l->argv = NULL;
    shimmount_close(&l->spaces);
    json_decref(l->spaces_env);
    l->spaces_env = NULL;
}

/* The last line the job's stderr got (bwrap's words when the sandbox failed). */
static void last_words(struct shim_run *r, char *out, size_t outsz)
{
    size_t len = 0;
    char *text = fsat_read(r->dfd, "stderr", 1 << 20, &len);
    out[0] = '\0';
    while (text && len && (text[len - 1] == '\n' || text[len - 1] == ' '))
        text[--len] = '\0';
    /* bwrap's own words when it said any: slirp4netns writes there too, later */
    const char *said = NULL;
    for (const char *p = text; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
        if (strncmp(p, "bwrap: ", 7) == 0)
            said = p;
    const char *last = text ? strrchr(text, '\n') : NULL;
    const char *line = said ? said : last ? last + 1 : text;
    if (line)
        snprintf(out, outsz, "%.*s", (int)strcspn(line, "\n"), line);
    free(text);
}

void shimrun_sandboxed(struct shim_run *r)
{
    struct launch l = {.work = -1, .tmp = -1, .script = -1, .passwd = -1, .group = -1,
                       .hosts = -1, .resolv = -1, .status = {-1, -1}, .block = {-1, -1},
                       .net = {.pid = 0, .exit_fd = -1}};
    struct jail_devices dev;
    char err[512] = "", buf[4096] = "";
    size_t len = 0;
    if (image(r, &l) != 0)
        goto out;
    shim_note(r, "phase", "starting\n");
    if (prepare(r, &l, &dev, err, sizeof err) != 0) {
        shim_fail(r, err);
        goto out;
    }
    pid_t pid = spawn(r, &l);
    closefd(&l.status[1]);
    closefd(&l.block[0]);
    if (pid < 0) {
        shim_fail(r, "cannot start the job's sandbox");
        goto out;
    }
    status_read(l.status[0], buf, sizeof buf, &len, START_MS, "child-pid");
    long sandbox_pid = status_field(buf, "\"child-pid\"");
    bool app = is_app(r);
    if (sandbox_pid > 1 && needs_network(r))
        wait_set_up((pid_t)sandbox_pid, l.block[1]);
    if (sandbox_pid > 1 && needs_network(r) &&
        (slirp_start_api((pid_t)sandbox_pid, l.net_procs, (size_t)l.nnet_procs,
                         app ? SLIRP_SOCKET : NULL, &l.net, err, sizeof err) != 0 ||
         (app && forward_app(r, err, sizeof err) != 0))) {
        kill((pid_t)sandbox_pid, SIGKILL);
        dprintf(2, "aidc: %s\n", err);
    }
    r->started = time(NULL);
    if (sandbox_pid > 1)
        shim_mark_started(r);
    if (write(l.block[1], "1", 1) != 1 && sandbox_pid > 1)
        kill((pid_t)sandbox_pid, SIGKILL);
    closefd(&l.block[1]);
    for (int i = 0; i < l.nprocs; i++) /* everything that joins them has */
        close(l.procs[i]);
    for (int i = 0; i < l.nnet_procs; i++)
        close(l.net_procs[i]);
    l.nprocs = l.nnet_procs = 0;
    struct shim_end e;
    shim_supervise(r, pid, sandbox_pid > 1 ? (pid_t)sandbox_pid : pid, &l.cg, &e);
    status_read(l.status[0], buf, sizeof buf, &len, 1000, "exit-code");
    long code = status_field(buf, "\"exit-code\"");
    e.oom = cgroup_job_oom_kills(&l.cg) > 0;
    double cpu, mem;
    cgroup_job_usage(&l.cg, &cpu, &mem);
    if (cpu >= 0)
        e.cpu_seconds = cpu;
    if (mem >= 0)
        e.mem_peak_bytes = mem;
    if (code == 128 + SIGKILL && e.killed) { /* our SIGKILL, not the job's exit 137 */
        e.exit_code = -1;
        e.signal = SIGKILL;
    } else if (code >= 0) {
        e.exit_code = (int)code;
        e.signal = 0;
        if (!e.stopped && !e.timed_out)
            snprintf(e.reason, sizeof e.reason, "exit code %ld", code);
    } else if (!e.stopped && !e.timed_out) {
        /* no exit code: the sandbox never ran the job (bwrap says why on stderr) */
        char words[120];
        last_words(r, words, sizeof words);
        if (strncmp(words, "bwrap: execvp ", 14) == 0) { /* as a shell says it: 127 */
            e.exit_code = 127;
            snprintf(e.reason, sizeof e.reason, "cannot run %.100s", words + 14);
        } else {
            snprintf(e.reason, sizeof e.reason, "the sandbox could not start: %.90s",
                     words[0] ? words : "bwrap failed"); /* the reason's room: the rest is on stderr */
        }
    }
    if (e.oom && !e.stopped && !e.timed_out)
        snprintf(e.reason, sizeof e.reason, "out of memory");
    release(&l); /* every process of the job is gone before its end is written */
    shim_end(r, &e);
out:
    release(&l);
}
