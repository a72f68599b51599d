/* sandbox.c - Landlock confinement of local jobs (see sandbox.h). */
#include "sandbox.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/landlock.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

/* Rights of later ABIs than the headers of Debian 12 (Linux 6.1) know. */
#define FS_TRUNCATE         (1ULL << 14) /* ABI 3 */
#define SCOPE_ABSTRACT_UNIX (1ULL << 0)  /* ABI 6 */
#define SCOPE_SIGNAL        (1ULL << 1)  /* ABI 6 */

/* struct landlock_ruleset_attr as of ABI 6; older kernels accept it while the
 * fields they do not know are zero */
struct ruleset_attr {
    uint64_t handled_access_fs;
    uint64_t handled_access_net;
    uint64_t scoped;
};

#define FS_READ (LANDLOCK_ACCESS_FS_EXECUTE | LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_READ_DIR)
/* what a non-directory's rule may hold */
#define FS_FILE                                                                                   \
    (LANDLOCK_ACCESS_FS_EXECUTE | LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_WRITE_FILE |  \
     FS_TRUNCATE)
/* handled but granted nowhere: a device node made in /tmp would reach the raw disk */
#define FS_MAKE_DEVICE (LANDLOCK_ACCESS_FS_MAKE_CHAR | LANDLOCK_ACCESS_FS_MAKE_BLOCK)
#define FS_WRITE                                                                                  \
    (LANDLOCK_ACCESS_FS_WRITE_FILE | LANDLOCK_ACCESS_FS_REMOVE_DIR | LANDLOCK_ACCESS_FS_REMOVE_FILE | \
     LANDLOCK_ACCESS_FS_MAKE_DIR | LANDLOCK_ACCESS_FS_MAKE_REG | LANDLOCK_ACCESS_FS_MAKE_SOCK |    \
     LANDLOCK_ACCESS_FS_MAKE_FIFO | LANDLOCK_ACCESS_FS_MAKE_SYM | LANDLOCK_ACCESS_FS_REFER |      \
     FS_TRUNCATE)

/*
 * Device files a job opens (GPUs, /dev/null): only these of /dev, which also
 * holds the raw disks. Entries of /dev/ starting with "nvidia" are added.
 */
static const char *const devices[] = {"/dev/null", "/dev/zero",  "/dev/full", "/dev/random",
                                      "/dev/urandom", "/dev/tty", "/dev/pts",  "/dev/ptmx",
                                      "/dev/shm"};

struct ctx {
    int fd;          /* the ruleset */
    uint64_t usable; /* the rights this kernel knows */
    const struct sandbox_policy *p;
    char *err;
    size_t errsz;
};

int sandbox_abi(void)
{
    long v = syscall(SYS_landlock_create_ruleset, NULL, 0, LANDLOCK_CREATE_RULESET_VERSION);
    return v > 0 && v < INT_MAX ? (int)v : 0;
}

/* path is h or beneath it */
static bool beneath(const char *path, const char *h)
{
    size_t n = strlen(h);
    if (n == 1 && h[0] == '/')
        return true;
    return strncmp(path, h, n) == 0 && (path[n] == '\0' || path[n] == '/');
}

/* path is a proper ancestor of h */
static bool above(const char *path, const char *h)
{
    size_t n = strlen(path);
    if (n == 1 && path[0] == '/')
        return h[0] == '/' && h[1] != '\0';
    return strncmp(h, path, n) == 0 && h[n] == '/';
}

static bool hidden_at(const struct ctx *c, const char *path)
{
    for (size_t i = 0; i < c->p->nhidden; i++)
        if (c->p->hidden[i][0] == '/' && beneath(path, c->p->hidden[i]))
            return true;
    return beneath(path, "/dev"); /* its devices are granted one by one */
}

static bool above_hidden(const struct ctx *c, const char *path)
{
    for (size_t i = 0; i < c->p->nhidden; i++)
        if (c->p->hidden[i][0] == '/' && above(path, c->p->hidden[i]))
            return true;
    return above(path, "/dev");
}

/* A rule for path and what is beneath it; a missing path or a symbolic link: none. */
static int add_rule(struct ctx *c, const char *path, uint64_t rights)
{
    int fd = open(path, O_PATH | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0)
        return errno == ENOENT || errno == EACCES || errno == ELOOP ? 0 : -1;
    struct stat st;
    struct landlock_path_beneath_attr rule = {.parent_fd = fd};
    int rc = 0;
    if (fstat(fd, &st) == 0 && !S_ISLNK(st.st_mode)) {
        rule.allowed_access = rights & c->usable & (S_ISDIR(st.st_mode) ? ~0ULL : FS_FILE);
        if (rule.allowed_access &&
            syscall(SYS_landlock_add_rule, c->fd, LANDLOCK_RULE_PATH_BENEATH, &rule, 0) != 0) {
            snprintf(c->err, c->errsz, "landlock_add_rule %s: %s", path, strerror(errno));
            rc = -1;
        }
    }
    close(fd);
    return rc;
}

/* rights beneath root, except beneath the hidden paths */
static int grant(struct ctx *c, const char *root, uint64_t rights)
{
    if (hidden_at(c, root))
        return 0;
    if (!above_hidden(c, root))
        return add_rule(c, root, rights);
    DIR *d = opendir(root);
    if (!d)
        return 0; /* unlistable: nothing beneath it is granted */
    int rc = 0;
    struct dirent *e;
    while (rc == 0 && (e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0 || e->d_type == DT_LNK)
            continue;
        char child[PATH_MAX];
        int n = snprintf(child, sizeof child, "%s/%s", strcmp(root, "/") == 0 ? "" : root,
                         e->d_name);
        if (n > 0 && (size_t)n < sizeof child)
            rc = grant(c, child, rights);
    }
    closedir(d);
    return rc;
}

static int grant_devices(struct ctx *c)
{
    uint64_t rw = FS_READ | LANDLOCK_ACCESS_FS_WRITE_FILE | FS_TRUNCATE;
    for (size_t i = 0; i < sizeof devices / sizeof devices[0]; i++)
        if (add_rule(c, devices[i], strcmp(devices[i], "/dev/shm") == 0 ? FS_READ | FS_WRITE : rw))
            return -1;
    DIR *d = opendir("/dev");
    if (!d)
        return 0;
    int rc = 0;
    struct dirent *e;
    while (rc == 0 && (e = readdir(d)) != NULL) {
        char path[PATH_MAX];
        if (strncmp(e->d_name, "nvidia", 6) == 0 &&
            snprintf(path, sizeof path, "/dev/%s", e->d_name) < (int)sizeof path)
            rc = add_rule(c, path, rw);
    }
    closedir(d);
    return rc;
}

int sandbox_confine(const struct sandbox_policy *p, char *err, size_t errsz)
{
    int abi = sandbox_abi();
    if (abi < 1) {
        snprintf(err, errsz, "this kernel has no Landlock (Linux 5.13+, lsm=landlock)");
        return -1;
    }
    struct ctx c = {.fd = -1, .p = p, .err = err, .errsz = errsz};
    c.usable = FS_READ | FS_WRITE | FS_MAKE_DEVICE;
    if (abi < 2)
        c.usable &= ~(uint64_t)LANDLOCK_ACCESS_FS_REFER;
    if (abi < 3)
        c.usable &= ~(uint64_t)FS_TRUNCATE;
    struct ruleset_attr attr = {.handled_access_fs = c.usable,
                                .scoped = abi >= 6 ? SCOPE_SIGNAL | SCOPE_ABSTRACT_UNIX : 0};
    long fd = syscall(SYS_landlock_create_ruleset, &attr, sizeof attr, 0);
    if (fd < 0) {
        snprintf(err, errsz, "landlock_create_ruleset: %s", strerror(errno));
        return -1;
    }
    c.fd = (int)fd;
    int rc = grant(&c, "/", FS_READ);
    for (size_t i = 0; rc == 0 && i < p->nwritable; i++)
        rc = grant(&c, p->writable[i], FS_READ | FS_WRITE);
    if (rc == 0)
        rc = grant_devices(&c);
    if (rc == 0 && p->own)
        rc = add_rule(&c, p->own, FS_READ | FS_WRITE);
    if (rc == 0 && prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) {
        snprintf(err, errsz, "prctl(PR_SET_NO_NEW_PRIVS): %s", strerror(errno));
        rc = -1;
    }
    if (rc == 0 && syscall(SYS_landlock_restrict_self, c.fd, 0) != 0) {
        snprintf(err, errsz, "landlock_restrict_self: %s", strerror(errno));
        rc = -1;
    }
    close(c.fd);
    return rc;
}
