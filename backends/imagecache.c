/* imagecache.c - images pulled by skopeo, unpacked by umoci, cached (see imagecache.h). */
#include "imagecache.h"

#include "../server/fsat.h"
#include "../server/xalloc.h"
#include "command.h"
#include "rmtree.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define HEX_LEN 64
/* an image used this recently is never evicted (a lock changes hands in between) */
#define RECENT_SECONDS 120
#define MAX_ENTRIES 4096
#define MAX_DEPTH 256

bool imagecache_digest_valid(const char *d)
{
    if (!d || strncmp(d, "sha256:", 7) != 0 || strlen(d) != 7 + HEX_LEN)
        return false;
    for (const char *p = d + 7; *p; p++)
        if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f')))
            return false;
    return true;
}

/* Bytes the tree at dirfd/name takes on disk (links not followed). */
static long long tree_bytes(int at, const char *name, int depth)
{
    struct stat st;
    if (fstatat(at, name, &st, AT_SYMLINK_NOFOLLOW) != 0)
        return 0;
    long long n = (long long)st.st_blocks * 512;
    if (!S_ISDIR(st.st_mode) || depth > MAX_DEPTH)
        return n;
    int fd = openat(at, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    if (!d) {
        if (fd >= 0)
            close(fd);
        return n;
    }
    struct dirent *e;
    while ((e = readdir(d)) != NULL)
        if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0)
            n += tree_bytes(dirfd(d), e->d_name, depth + 1);
    closedir(d);
    return n;
}

/* Make rel (beneath root) a real directory (dir) or regular file: a link or other kind goes. */
static int make_real(int root, const char *rel, bool dir)
{
    char path[64];
    snprintf(path, sizeof path, "%s", rel);
    int at = dup(root);
    for (char *p = path; at >= 0;) {
        char *slash = strchr(p, '/');
        bool last = !slash;
        if (slash)
            *slash = '\0';
        bool want_dir = !last || dir;
        struct stat st;
        bool ok = fstatat(at, p, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
                  (want_dir ? S_ISDIR(st.st_mode) : S_ISREG(st.st_mode));
        if (!ok) {
            if (rmtree_at(at, p) != 0)
                break;
            int made = want_dir ? mkdirat(at, p, 0755)
                                : openat(at, p, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
                                         0644);
            if (made < 0)
                break;
            if (!want_dir)
                close(made);
        }
        if (last) {
            close(at);
            return 0;
        }
        int next = openat(at, p, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        close(at);
        at = next;
        p = slash + 1;
    }
    if (at >= 0)
        close(at);
    return -1;
}

static int normalize(int rootfs)
{
    static const char *const dirs[] = {"proc", "dev", "tmp", "run", "job", "etc"};
    static const char *const files[] = {"etc/passwd", "etc/group", "etc/hosts",
                                        "etc/resolv.conf"};
    for (size_t i = 0; i < sizeof dirs / sizeof *dirs; i++)
        if (make_real(rootfs, dirs[i], true) != 0)
            return -1;
    for (size_t i = 0; i < sizeof files / sizeof *files; i++)
        if (make_real(rootfs, files[i], false) != 0)
            return -1;
    return 0;
}

/* Run a tool; 0, or -1 with its own words (or why it did not run) in err. */
static int tool(char *const *argv, const char *work, const struct imagecache_ref *r, char *err,
                size_t errsz)
{
    char *home = xasprintf("HOME=%s", work), *tmp = xasprintf("TMPDIR=%s", work);
    char *xdg = xasprintf("XDG_RUNTIME_DIR=%s", work);
    char *const envp[] = {(char *)"PATH=/usr/sbin:/usr/bin:/sbin:/bin", (char *)"LC_ALL=C", home,
                          tmp, xdg, NULL};
    struct command_result res;
    char why[256] = "";
    int e = command_run_in(argv, envp, r->timeout_s, r->cancel_fd, &res, why, sizeof why);
    free(home);
    free(tmp);
    free(xdg);
    if (e)
        snprintf(err, errsz, "%s: %s", argv[0], why);
    else if (res.cancelled)
        snprintf(err, errsz, "stopped while the image was pulled");
    else if (res.timed_out)
        snprintf(err, errsz, "%s took longer than %d s", argv[0], r->timeout_s);
    else if (res.exit_status != 0) {
        /* one line of the tool's own words: the last ones say what went wrong */
        size_t len = strlen(res.output);
        while (len && (res.output[len - 1] == '\n' || res.output[len - 1] == ' '))
            res.output[--len] = '\0';
        for (char *p = res.output; *p; p++)
            if (*p == '\n' || *p == '\t')
                *p = ' ';
        snprintf(err, errsz, "%s failed: %s", strrchr(argv[0], '/') + 1,
                 len > 400 ? res.output + len - 400 : res.output);
    } else
        return 0;
    return -1;
}

/* Remove every entry of dirfd whose name starts with prefix (what crashed pulls left). */
static void remove_prefixed(int dirfd, const char *prefix)
{
    DIR *d = fsat_listdir(dirfd);
    if (!d)
        return;
    char names[64][HEX_LEN + 32];
    size_t n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL && n < 64) {
        size_t len = strlen(e->d_name);
        if (strncmp(e->d_name, prefix, strlen(prefix)) == 0 && len < sizeof names[0])
            memcpy(names[n++], e->d_name, len + 1);
    }
    closedir(d);
    for (size_t i = 0; i < n; i++)
        rmtree_at(dirfd, names[i]);
}

static int pull(int dirfd, const char *dir, const char *hex, const struct imagecache_ref *r,
                char *err, size_t errsz)
{
    char work[96], target[80];
    /* the exclusive lock is ours: any pull of this image that left its work behind died */
    snprintf(work, sizeof work, "work-%s-", hex);
    remove_prefixed(dirfd, work);
    snprintf(work, sizeof work, "work-%s-%ld", hex, (long)getpid());
    if (mkdirat(dirfd, work, 0700) != 0) {
        snprintf(err, errsz, "cannot make %s/%s: %s", dir, work, strerror(errno));
        return -1;
    }
    char *wpath = xasprintf("%s/%s", dir, work), *src = xasprintf("docker://%s", r->image);
    char *layout = xasprintf("oci:%s/layout:img", wpath), *image = xasprintf("%s/layout:img", wpath);
    char *bundle = xasprintf("%s/bundle", wpath), *auth = NULL;
    char *copy[10] = {(char *)IMAGECACHE_SKOPEO, (char *)"--insecure-policy", (char *)"copy",
                      (char *)"--quiet"};
    size_t n = 4;
    if (!r->tls_verify)
        copy[n++] = (char *)"--src-tls-verify=false";
    if (r->authfile) {
        auth = xasprintf("--src-authfile=%s", r->authfile);
        copy[n++] = auth;
    }
    copy[n++] = src;
    copy[n++] = layout;
    copy[n] = NULL;
    bool root = geteuid() == 0;
    char *unpack[] = {(char *)IMAGECACHE_UMOCI, (char *)"unpack", root ? (char *)"--image"
                                                                       : (char *)"--rootless",
                      root ? image : (char *)"--image", root ? bundle : image, root ? NULL : bundle,
                      NULL};
    int rc = tool(copy, wpath, r, err, errsz) == 0 && tool(unpack, wpath, r, err, errsz) == 0
                 ? 0
                 : -1;
    int bfd = -1, rootfs = -1;
    if (rc == 0) {
        char rel[160];
        snprintf(rel, sizeof rel, "%s/bundle", work);
        bfd = fsat_open(dirfd, rel, O_RDONLY | O_DIRECTORY, 0);
        rootfs = bfd >= 0 ? fsat_open(bfd, "rootfs", O_RDONLY | O_DIRECTORY, 0) : -1;
        if (rootfs < 0 || normalize(rootfs) != 0 || fchmod(bfd, 0711) != 0) {
            snprintf(err, errsz, "cannot prepare the unpacked image: %s", strerror(errno));
            rc = -1;
        }
    }
    if (rc == 0) {
        char size[32];
        int k = snprintf(size, sizeof size, "%lld\n", tree_bytes(bfd, "rootfs", 0));
        snprintf(target, sizeof target, "%s", hex);
        char rel[160];
        snprintf(rel, sizeof rel, "%s/bundle", work);
        if (fsat_write_atomic(bfd, "size", size, (size_t)k, 0644) != 0 ||
            renameat(dirfd, rel, dirfd, target) != 0) {
            snprintf(err, errsz, "cannot store the unpacked image in %s: %s", dir, strerror(errno));
            rc = -1;
        }
    }
    if (rootfs >= 0)
        close(rootfs);
    if (bfd >= 0)
        close(bfd);
    rmtree_at(dirfd, work);
    free(wpath);
    free(src);
    free(layout);
    free(image);
    free(bundle);
    free(auth);
    return rc;
}

struct entry {
    char hex[HEX_LEN + 1];
    long long bytes;
    time_t used;
};

static int by_use(const void *a, const void *b)
{
    const struct entry *x = a, *y = b;
    return x->used < y->used ? -1 : x->used > y->used;
}

void imagecache_trim(int dirfd, long long max, const char *keep)
{
    DIR *d = fsat_listdir(dirfd);
    if (!d)
        return;
    struct entry *all = xcalloc(MAX_ENTRIES, sizeof *all);
    size_t n = 0;
    long long total = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL && n < MAX_ENTRIES) {
        if (strlen(e->d_name) != HEX_LEN || strspn(e->d_name, "0123456789abcdef") != HEX_LEN)
            continue;
        char rel[HEX_LEN + 8], lock[HEX_LEN + 8];
        memcpy(all[n].hex, e->d_name, HEX_LEN + 1);
        snprintf(rel, sizeof rel, "%s/size", all[n].hex);
        snprintf(lock, sizeof lock, "%s.lock", all[n].hex);
        char *text = fsat_read(dirfd, rel, 64, NULL);
        struct stat st;
        all[n].bytes = text ? strtoll(text, NULL, 10) : 0;
        all[n].used = fstatat(dirfd, lock, &st, AT_SYMLINK_NOFOLLOW) == 0 ? st.st_mtime : 0;
        free(text);
        total += all[n++].bytes;
    }
    closedir(d);
    remove_prefixed(dirfd, "evict-"); /* evictions a crash cut short */
    qsort(all, n, sizeof *all, by_use);
    time_t now = time(NULL);
    for (size_t i = 0; i < n && total > max; i++) {
        if ((keep && strcmp(all[i].hex, keep) == 0) || now - all[i].used < RECENT_SECONDS)
            continue;
        char lock[HEX_LEN + 8], gone[HEX_LEN + 32];
        snprintf(lock, sizeof lock, "%s.lock", all[i].hex);
        int lfd = fsat_open(dirfd, lock, O_RDWR | O_CREAT, 0600);
        if (lfd < 0)
            continue;
        if (flock(lfd, LOCK_EX | LOCK_NB) == 0) { /* nobody runs it */
            snprintf(gone, sizeof gone, "evict-%s-%ld", all[i].hex, (long)getpid());
            if (renameat(dirfd, all[i].hex, dirfd, gone) == 0) {
                rmtree_at(dirfd, gone);
                total -= all[i].bytes;
            }
        }
        close(lfd); /* the lock file stays: one opened by another process keeps meaning */
    }
    free(all);
}

/* Take the lock exclusively, waiting at most timeout_s, giving up when cancel_fd is readable. */
static int lock_exclusive(int fd, const struct imagecache_ref *r)
{
    time_t until = time(NULL) + (r->timeout_s > 0 ? r->timeout_s : 600);
    while (flock(fd, LOCK_EX | LOCK_NB) != 0) {
        if (errno != EWOULDBLOCK || time(NULL) > until)
            return -1;
        struct pollfd p = {.fd = r->cancel_fd, .events = POLLIN};
        if (r->cancel_fd >= 0 ? poll(&p, 1, 200) > 0 : (poll(NULL, 0, 200), false))
            return -1;
    }
    return 0;
}

/* The image's environment from umoci's config.json (process.env). */
static json_t *image_env(int dirfd, const char *hex)
{
    char rel[HEX_LEN + 16];
    snprintf(rel, sizeof rel, "%s/config.json", hex);
    char *text = fsat_read(dirfd, rel, 4 << 20, NULL);
    json_t *cfg = text ? json_loads(text, 0, NULL) : NULL;
    free(text);
    json_t *env = json_array(), *v;
    size_t i;
    json_array_foreach(json_object_get(json_object_get(cfg, "process"), "env"), i, v)
        if (json_is_string(v) && strchr(json_string_value(v), '='))
            json_array_append(env, v);
    json_decref(cfg);
    return env;
}

int imagecache_acquire(const struct imagecache_ref *r, struct imagecache_use *u, char *err,
                       size_t errsz)
{
    memset(u, 0, sizeof *u);
    u->lock_fd = u->rootfs_fd = -1;
    if (!imagecache_digest_valid(r->digest)) {
        snprintf(err, errsz, "the image has no digest to pull it by");
        return -1;
    }
    const char *hex = r->digest + 7;
    if (mkdir(r->dir, 0711) != 0 && errno != EEXIST) {
        snprintf(err, errsz, "cannot make the image cache %s: %s", r->dir, strerror(errno));
        return -1;
    }
    int dirfd = fsat_opendir(r->dir);
    char lock[HEX_LEN + 8];
    snprintf(lock, sizeof lock, "%s.lock", hex);
    u->lock_fd = dirfd >= 0 ? fsat_open(dirfd, lock, O_RDWR | O_CREAT, 0600) : -1;
    int rc = -1;
    if (u->lock_fd < 0) {
        snprintf(err, errsz, "cannot open the image cache %s: %s", r->dir, strerror(errno));
        goto out;
    }
    if (lock_exclusive(u->lock_fd, r) != 0) {
        snprintf(err, errsz, "gave up waiting for another pull of the same image");
        goto out;
    }
    futimens(u->lock_fd, NULL); /* used now: no eviction takes it while the lock changes hands */
    struct stat st;
    if (fstatat(dirfd, hex, &st, AT_SYMLINK_NOFOLLOW) != 0) {
        if (pull(dirfd, r->dir, hex, r, err, errsz) != 0)
            goto out;
        u->pulled = true;
        imagecache_trim(dirfd, r->max_bytes, hex);
    }
    char rel[HEX_LEN + 16];
    snprintf(rel, sizeof rel, "%s/rootfs", hex);
    u->rootfs_fd = fsat_open(dirfd, rel, O_PATH | O_DIRECTORY, 0);
    if (u->rootfs_fd < 0 || flock(u->lock_fd, LOCK_SH) != 0) {
        snprintf(err, errsz, "cannot use the cached image %s: %s", hex, strerror(errno));
        goto out;
    }
    u->env = image_env(dirfd, hex);
    rc = 0;
out:
    if (dirfd >= 0)
        close(dirfd);
    if (rc)
        imagecache_release(u);
    return rc;
}

void imagecache_release(struct imagecache_use *u)
{
    if (u->rootfs_fd >= 0)
        close(u->rootfs_fd);
    if (u->lock_fd >= 0)
        close(u->lock_fd); /* and the lock with it */
    json_decref(u->env);
    u->rootfs_fd = u->lock_fd = -1;
    u->env = NULL;
}
