/* cgroup.c - a control group per local job, v1 or v2 (see cgroup.h). */
#include "cgroup.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <time.h>
#include <unistd.h>

#define ROOT "/sys/fs/cgroup"
#define V2_MAGIC 0x63677270L /* CGROUP2_SUPER_MAGIC */
#define V1_MAGIC 0x27e0ebL   /* CGROUP_SUPER_MAGIC */
#define CPU_PERIOD_US 100000LL
#define DESTROY_SECONDS 5

/* The devices every job opens (v1's devices controller starts from none). */
static const char *const usual_devices[] = {
    "c 1:3 rwm",  /* null */   "c 1:5 rwm", /* zero */    "c 1:7 rwm", /* full */
    "c 1:8 rwm",  /* random */ "c 1:9 rwm", /* urandom */ "c 5:0 rwm", /* tty */
    "c 5:2 rwm",  /* ptmx */   "c 136:* rwm", /* pts */
};

static int version(void)
{
    struct statfs fs;
    if (statfs(ROOT, &fs) != 0)
        return 0;
    if ((long)fs.f_type == V2_MAGIC)
        return 2;
    return statfs(ROOT "/memory", &fs) == 0 && (long)fs.f_type == V1_MAGIC ? 1 : 0;
}

/* Write text to the control file dir/file. 0 or -1 with errno. */
static int put(const char *dir, const char *file, const char *text)
{
    char path[640];
    int n = snprintf(path, sizeof path, "%s/%s", dir, file);
    if (n < 0 || (size_t)n >= sizeof path) {
        errno = ENAMETOOLONG;
        return -1;
    }
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    size_t len = strlen(text);
    ssize_t w = write(fd, text, len);
    int saved = errno;
    close(fd);
    errno = saved;
    return w == (ssize_t)len ? 0 : -1;
}

/* Read the control file dir/file into buf (NUL-terminated); bytes read or -1. */
static ssize_t get(const char *dir, const char *file, char *buf, size_t bufsz)
{
    char path[640];
    int n = snprintf(path, sizeof path, "%s/%s", dir, file);
    if (n < 0 || (size_t)n >= sizeof path)
        return -1;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    ssize_t r = read(fd, buf, bufsz - 1);
    close(fd);
    buf[r > 0 ? r : 0] = '\0';
    return r;
}

static bool has_file(const char *dir, const char *file)
{
    char path[640];
    struct stat st;
    int n = snprintf(path, sizeof path, "%s/%s", dir, file);
    return n > 0 && (size_t)n < sizeof path && stat(path, &st) == 0;
}

/* mkdir -p of path (0755), for the parent groups. */
static int make_dirs(const char *path)
{
    char buf[512];
    int n = snprintf(buf, sizeof buf, "%s", path);
    if (n < 0 || (size_t)n >= sizeof buf) {
        errno = ENAMETOOLONG;
        return -1;
    }
    for (char *p = buf + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        if (mkdir(buf, 0755) != 0 && errno != EEXIST)
            return -1;
        *p = '/';
    }
    return mkdir(buf, 0755) != 0 && errno != EEXIST ? -1 : 0;
}

/* The group this process is in, in the v1 hierarchy of controller (or v2's: NULL). */
static bool own_group(const char *controller, char *out, size_t outsz)
{
    FILE *f = fopen("/proc/self/cgroup", "re");
    char line[1024];
    bool found = false;
    while (f && !found && fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = '\0';
        char *ctrls = strchr(line, ':'), *path = ctrls ? strchr(ctrls + 1, ':') : NULL;
        if (!path)
            continue;
        *path++ = '\0';
        ctrls++;
        if (controller) {
            char *save = NULL;
            for (char *c = strtok_r(ctrls, ",", &save); c && !found; c = strtok_r(NULL, ",", &save))
                found = strcmp(c, controller) == 0;
        } else {
            found = ctrls[0] == '\0' && line[0] == '0';
        }
        if (found)
            snprintf(out, outsz, "%s", strcmp(path, "/") == 0 ? "" : path);
    }
    if (f)
        fclose(f);
    return found;
}

void cgroup_default_parent(char *out, size_t outsz)
{
    char own[512] = "";
    if (geteuid() == 0 || !own_group(version() == 2 ? NULL : "memory", own, sizeof own))
        snprintf(out, outsz, "/aidc");
    else
        snprintf(out, outsz, "%s/aidc-jobs", own);
}

static bool v1_controllers(size_t *n, const char **names)
{
    static const char *const all[] = {"memory", "pids", "cpu", "devices", "cpuacct"};
    /* only root may write a devices group's rules; cpuacct (the job's CPU time, where it
     * is not mounted with cpu) is counted for root only, as a delegated user may lack it */
    size_t want = geteuid() == 0 ? 5 : 3, k = 0;
    for (size_t i = 0; i < want; i++) {
        char dir[64];
        struct statfs fs;
        snprintf(dir, sizeof dir, ROOT "/%s", all[i]);
        if (statfs(dir, &fs) == 0 && (long)fs.f_type == V1_MAGIC)
            names[k++] = all[i];
        else if (i < 3)
            return false; /* memory, pids and cpu are needed */
    }
    *n = k;
    return true;
}

/*
 * v2: controllers for the job groups must be enabled in every group above
 * them; a group that holds processes cannot enable them (the kernel's "no
 * internal processes"), so the processes of a delegated group aidcd runs in
 * move into a leaf "aidcd" beside the jobs' parent first.
 */
static int v2_enable(const char *dir, char *err, size_t errsz)
{
    char have[256];
    if (get(dir, "cgroup.subtree_control", have, sizeof have) < 0) {
        snprintf(err, errsz, "cannot read %s/cgroup.subtree_control: %s", dir, strerror(errno));
        return -1;
    }
    static const char *const need[] = {"memory", "pids", "cpu"};
    for (size_t i = 0; i < 3; i++) {
        char word[16], copy[256], *save = NULL;
        snprintf(word, sizeof word, "+%s", need[i]);
        snprintf(copy, sizeof copy, "%s", have);
        bool on = false;
        for (char *w = strtok_r(copy, " \n", &save); w && !on; w = strtok_r(NULL, " \n", &save))
            on = strcmp(w, need[i]) == 0;
        if (on)
            continue;
        if (put(dir, "cgroup.subtree_control", word) == 0)
            continue;
        if (errno != EBUSY) {
            snprintf(err, errsz, "cannot enable the %s controller in %s: %s", need[i], dir,
                     strerror(errno));
            return -1;
        }
        /* processes in dir: move them into dir/aidcd, then enable */
        char leaf[600], procs[4096];
        snprintf(leaf, sizeof leaf, "%s/aidcd", dir);
        if ((mkdir(leaf, 0755) != 0 && errno != EEXIST) ||
            get(dir, "cgroup.procs", procs, sizeof procs) < 0) {
            snprintf(err, errsz, "cannot make %s: %s", leaf, strerror(errno));
            return -1;
        }
        char *at = NULL;
        for (char *p = strtok_r(procs, "\n", &at); p; p = strtok_r(NULL, "\n", &at))
            put(leaf, "cgroup.procs", p); /* one that exited meanwhile: ESRCH */
        if (put(dir, "cgroup.subtree_control", word) != 0) {
            snprintf(err, errsz, "cannot enable the %s controller in %s: %s", need[i], dir,
                     strerror(errno));
            return -1;
        }
    }
    return 0;
}

static int v2_parent(const char *parent, char *err, size_t errsz)
{
    char dir[512];
    if (v2_enable(ROOT, err, errsz) != 0 && geteuid() == 0)
        return -1;
    /* every level from the first one this user may write */
    size_t len = strlen(parent);
    for (size_t i = 1; i <= len; i++) {
        if (parent[i] != '/' && parent[i] != '\0')
            continue;
        snprintf(dir, sizeof dir, ROOT "%.*s", (int)i, parent);
        if (mkdir(dir, 0755) != 0 && errno != EEXIST) {
            snprintf(err, errsz, "cannot create %s: %s", dir, strerror(errno));
            return -1;
        }
        if (access(dir, W_OK) == 0 && v2_enable(dir, err, errsz) != 0)
            return -1;
    }
    return 0;
}

static void remove_dirs(struct cgroup_job *cg)
{
    for (size_t i = 0; i < cg->ndirs; i++)
        rmdir(cg->dirs[i]);
}

static int limit_v1(struct cgroup_job *cg, const char *ctrl, const char *dir,
                    const struct cgroup_limits *l)
{
    char v[64];
    if (strcmp(ctrl, "memory") == 0 && l->memory_bytes > 0) {
        snprintf(v, sizeof v, "%lld", l->memory_bytes);
        /* memsw (memory + swap) only where swap accounting is on */
        if (put(dir, "memory.limit_in_bytes", v) != 0 ||
            (has_file(dir, "memory.memsw.limit_in_bytes") &&
             put(dir, "memory.memsw.limit_in_bytes", v) != 0))
            return -1;
    }
    if (strcmp(ctrl, "memory") == 0)
        cg->memory = (int)cg->ndirs;
    if (strcmp(ctrl, "pids") == 0 && l->pids > 0) {
        snprintf(v, sizeof v, "%lld", l->pids);
        if (put(dir, "pids.max", v) != 0)
            return -1;
    }
    if (strcmp(ctrl, "cpu") == 0 && l->cpu_millis > 0) {
        snprintf(v, sizeof v, "%lld", l->cpu_millis * CPU_PERIOD_US / 1000);
        if (put(dir, "cpu.cfs_period_us", "100000") != 0 || put(dir, "cpu.cfs_quota_us", v) != 0)
            return -1;
    }
    if (strcmp(ctrl, "devices") == 0) {
        if (put(dir, "devices.deny", "a") != 0)
            return -1;
        for (size_t i = 0; i < sizeof usual_devices / sizeof *usual_devices; i++)
            if (put(dir, "devices.allow", usual_devices[i]) != 0)
                return -1;
        for (size_t i = 0; i < l->ndevices; i++) {
            snprintf(v, sizeof v, "c %u:%u rwm", l->devices[i][0], l->devices[i][1]);
            if (put(dir, "devices.allow", v) != 0)
                return -1;
        }
    }
    return 0;
}

static int limit_v2(const char *dir, const struct cgroup_limits *l)
{
    char v[64];
    if (l->memory_bytes > 0) {
        snprintf(v, sizeof v, "%lld", l->memory_bytes);
        if (put(dir, "memory.max", v) != 0 ||
            (has_file(dir, "memory.swap.max") && put(dir, "memory.swap.max", "0") != 0))
            return -1;
    }
    /* an OOM kill ends the whole job, as the job's end would */
    if (has_file(dir, "memory.oom.group") && put(dir, "memory.oom.group", "1") != 0)
        return -1;
    if (l->pids > 0) {
        snprintf(v, sizeof v, "%lld", l->pids);
        if (put(dir, "pids.max", v) != 0)
            return -1;
    }
    if (l->cpu_millis > 0) {
        snprintf(v, sizeof v, "%lld %lld", l->cpu_millis * CPU_PERIOD_US / 1000, CPU_PERIOD_US);
        if (put(dir, "cpu.max", v) != 0)
            return -1;
    }
    return 0;
}

static bool name_ok(const char *parent, const char *name)
{
    return parent && parent[0] == '/' && !strstr(parent, "/..") && !strstr(parent, "//") &&
           name && name[0] && !strchr(name, '/') && strcmp(name, "..") != 0 &&
           strcmp(name, ".") != 0;
}

int cgroup_job_create(struct cgroup_job *cg, const char *parent, const char *name,
                      const struct cgroup_limits *l, char *err, size_t errsz)
{
    memset(cg, 0, sizeof *cg);
    cg->memory = -1;
    if (!name_ok(parent, name)) {
        snprintf(err, errsz, "cgroup parent \"%.100s\" or name is not a group path", parent);
        return -1;
    }
    cg->version = version();
    if (cg->version == 2) {
        if (v2_parent(strcmp(parent, "/") == 0 ? "" : parent, err, errsz) != 0)
            return -1;
        snprintf(cg->dirs[0], sizeof cg->dirs[0], ROOT "%s/%s", strcmp(parent, "/") == 0 ? "" : parent,
                 name);
        if (mkdir(cg->dirs[0], 0755) != 0 && errno != EEXIST) {
            snprintf(err, errsz, "cannot create %s: %s", cg->dirs[0], strerror(errno));
            return -1;
        }
        cg->ndirs = 1;
        cg->memory = 0;
        if (limit_v2(cg->dirs[0], l) != 0) {
            snprintf(err, errsz, "cannot set the limits of %s: %s", cg->dirs[0], strerror(errno));
            remove_dirs(cg);
            return -1;
        }
        return 0;
    }
    const char *ctrls[CGROUP_MAX_DIRS];
    size_t n = 0;
    if (cg->version != 1 || !v1_controllers(&n, ctrls)) {
        snprintf(err, errsz, "no cgroup hierarchy with the memory, pids and cpu controllers at "
                             ROOT);
        return -1;
    }
    for (size_t i = 0; i < n; i++) {
        char p[512], *dir = cg->dirs[cg->ndirs];
        snprintf(p, sizeof p, ROOT "/%s%s", ctrls[i], strcmp(parent, "/") == 0 ? "" : parent);
        int k = snprintf(dir, sizeof cg->dirs[0], "%s/%s", p, name);
        bool made = k > 0 && (size_t)k < sizeof cg->dirs[0] && make_dirs(p) == 0 &&
                    (mkdir(dir, 0755) == 0 || errno == EEXIST);
        if (!made) {
            snprintf(err, errsz, "cannot create %s: %s%s", dir, strerror(errno),
                     errno == EACCES || errno == EPERM
                         ? " (delegate a cgroup to aidcd's user, or set options.cgroup_parent)"
                         : "");
            remove_dirs(cg);
            return -1;
        }
        int e = limit_v1(cg, ctrls[i], dir, l);
        cg->ndirs++;
        if (e != 0) {
            snprintf(err, errsz, "cannot set the %s limits of %s: %s", ctrls[i], dir,
                     strerror(errno));
            remove_dirs(cg);
            return -1;
        }
    }
    return 0;
}

bool cgroup_job_find(struct cgroup_job *cg, const char *parent, const char *name)
{
    memset(cg, 0, sizeof *cg);
    cg->memory = -1;
    if (!name_ok(parent, name))
        return false;
    const char *p = strcmp(parent, "/") == 0 ? "" : parent;
    struct stat st;
    cg->version = version();
    if (cg->version == 2) {
        snprintf(cg->dirs[0], sizeof cg->dirs[0], ROOT "%s/%s", p, name);
        cg->ndirs = stat(cg->dirs[0], &st) == 0;
        cg->memory = cg->ndirs ? 0 : -1;
        return cg->ndirs > 0;
    }
    static const char *const all[] = {"memory", "pids", "cpu", "devices", "cpuacct"};
    for (size_t i = 0; i < 5; i++) {
        char *dir = cg->dirs[cg->ndirs];
        snprintf(dir, sizeof cg->dirs[0], ROOT "/%s%s/%s", all[i], p, name);
        if (stat(dir, &st) != 0)
            continue;
        if (i == 0)
            cg->memory = (int)cg->ndirs;
        cg->ndirs++;
    }
    return cg->ndirs > 0;
}

int cgroup_job_procs_fds(const struct cgroup_job *cg, bool devices, int *fds, size_t max)
{
    size_t n = 0;
    for (size_t i = 0; i < cg->ndirs && n < max; i++) {
        if (!devices && strstr(cg->dirs[i], "/sys/fs/cgroup/devices/") == cg->dirs[i])
            continue;
        char path[640];
        snprintf(path, sizeof path, "%s/cgroup.procs", cg->dirs[i]);
        int fd = open(path, O_WRONLY | O_CLOEXEC);
        if (fd < 0) {
            int saved = errno;
            while (n > 0)
                close(fds[--n]);
            errno = saved;
            return -1;
        }
        fds[n++] = fd;
    }
    return (int)n;
}

int cgroup_job_join(const int *fds, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (write(fds[i], "0", 1) != 1)
            return -1;
    return 0;
}

long cgroup_job_oom_kills(const struct cgroup_job *cg)
{
    if (cg->memory < 0)
        return 0;
    char buf[2048];
    if (get(cg->dirs[cg->memory], cg->version == 2 ? "memory.events" : "memory.oom_control", buf,
            sizeof buf) < 0)
        return 0;
    for (char *p = buf; (p = strstr(p, "oom_kill ")) != NULL; p++)
        if (p == buf || p[-1] == '\n')
            return strtol(p + 9, NULL, 10);
    return 0;
}

/* The number after "key " at a line's start in buf, or -1. */
static double stat_field(const char *buf, const char *key)
{
    size_t k = strlen(key);
    for (const char *p = buf; (p = strstr(p, key)) != NULL; p++)
        if ((p == buf || p[-1] == '\n') && p[k] == ' ')
            return strtod(p + k + 1, NULL);
    return -1;
}

void cgroup_job_usage(const struct cgroup_job *cg, double *cpu_seconds, double *mem_peak_bytes)
{
    *cpu_seconds = *mem_peak_bytes = -1;
    char buf[2048];
    if (cg->ndirs == 0)
        return;
    if (cg->version == 2) {
        if (get(cg->dirs[0], "cpu.stat", buf, sizeof buf) > 0) {
            double us = stat_field(buf, "usage_usec");
            *cpu_seconds = us < 0 ? -1 : us / 1e6;
        }
        if (get(cg->dirs[0], "memory.peak", buf, sizeof buf) > 0) /* kernel 5.19 on */
            *mem_peak_bytes = strtod(buf, NULL);
        return;
    }
    /* v1: cpuacct, its own hierarchy or shared with cpu (cpu,cpuacct) */
    for (size_t i = 0; i < cg->ndirs && *cpu_seconds < 0; i++)
        if (get(cg->dirs[i], "cpuacct.usage", buf, sizeof buf) > 0)
            *cpu_seconds = strtod(buf, NULL) / 1e9;
    if (cg->memory >= 0 &&
        get(cg->dirs[cg->memory], "memory.max_usage_in_bytes", buf, sizeof buf) > 0)
        *mem_peak_bytes = strtod(buf, NULL);
}

size_t cgroup_job_pids(const struct cgroup_job *cg, pid_t *pids, size_t max)
{
    if (cg->ndirs == 0)
        return 0;
    char path[640];
    snprintf(path, sizeof path, "%s/cgroup.procs", cg->dirs[cg->memory >= 0 ? cg->memory : 0]);
    FILE *f = fopen(path, "re");
    size_t n = 0;
    long v;
    while (f && n < max && fscanf(f, "%ld", &v) == 1) /* NOLINT(cert-err34-c): kernel's numbers */
        if (v > 0)
            pids[n++] = (pid_t)v;
    if (f)
        fclose(f);
    return n;
}

int cgroup_job_destroy(struct cgroup_job *cg)
{
    if (cg->version == 2 && cg->ndirs && has_file(cg->dirs[0], "cgroup.kill"))
        put(cg->dirs[0], "cgroup.kill", "1");
    struct timespec t0, now, nap = {0, 20L * 1000 * 1000};
    clock_gettime(CLOCK_MONOTONIC, &t0);
    int rc = 0;
    for (size_t i = cg->ndirs; i-- > 0;) {
        for (;;) {
            if (rmdir(cg->dirs[i]) == 0 || errno == ENOENT)
                break;
            clock_gettime(CLOCK_MONOTONIC, &now);
            if (errno != EBUSY || now.tv_sec - t0.tv_sec > DESTROY_SECONDS) {
                rc = -1;
                break;
            }
            char path[640];
            snprintf(path, sizeof path, "%s/cgroup.procs", cg->dirs[i]);
            FILE *f = fopen(path, "re");
            long v;
            while (f && fscanf(f, "%ld", &v) == 1) /* NOLINT(cert-err34-c) */
                if (v > 1)
                    kill((pid_t)v, SIGKILL);
            if (f)
                fclose(f);
            nanosleep(&nap, NULL);
        }
    }
    cg->ndirs = 0;
    return rc;
}

int cgroup_probe(const char *parent, char *err, size_t errsz)
{
    struct cgroup_job cg;
    char name[64];
    snprintf(name, sizeof name, "probe-%ld", (long)getpid());
    struct cgroup_limits l = {.memory_bytes = 64LL << 20, .pids = 16, .cpu_millis = 100};
    if (cgroup_job_create(&cg, parent, name, &l, err, errsz) != 0)
        return -1;
    cgroup_job_destroy(&cg);
    return 0;
}
