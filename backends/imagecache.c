/* imagecache.c - images pulled by skopeo, unpacked by umoci, cached (see imagecache.h). */
#include "imagecache.h"

#include "../lib/fsat.h"
#include "../lib/xalloc.h"
#include "command.h"
#include "imagetree.h"
#include "../lib/rmtree.h"

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

bool imagecache_digest_valid(const char *d)
{
    if (!d || strncmp(d, "sha256:", 7) != 0 || strlen(d) != 7 + HEX_LEN)
        return false;
    for (const char *p = d + 7; *p; p++)
        if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f')))
            return false;
    return true;
}

/* The pull's work directory stays within the cache's bound while a tool writes it. */
struct bound {
    const char *work;
    long long max;
};

static bool within(void *arg)
{
    const struct bound *b = arg;
    return imagetree_bytes(AT_FDCWD, b->work) <= b->max;
}

/*
 * Run a tool with work as its home; 0, or -1 with its own words (or why it
 * did not run) in err. bounded: what it writes in work must stay within the
 * cache's bound.
 */
static int tool(char *const *argv, const char *work, bool bounded, const struct imagecache_ref *r,
                char *err, size_t errsz)
{
    char *home = xasprintf("HOME=%s", work), *tmp = xasprintf("TMPDIR=%s", work);
    char *xdg = xasprintf("XDG_RUNTIME_DIR=%s", work);
    char *const envp[] = {(char *)"PATH=/usr/sbin:/usr/bin:/sbin:/bin", (char *)"LC_ALL=C", home,
                          tmp, xdg, NULL};
    struct command_result res;
    char why[256] = "";
    /* a layer that unpacks to a terabyte must not fill the disk first */
    struct bound b = {.work = work, .max = r->max_bytes};
    struct command_watch watch = {.ok = within, .arg = &b, .every_ms = 1000};
    int e = command_run_in(argv, envp, r->timeout_s, r->cancel_fd, bounded ? &watch : NULL, &res,
                           why, sizeof why);
    free(home);
    free(tmp);
    free(xdg);
    if (e)
        snprintf(err, errsz, "%s: %s", argv[0], why);
    else if (res.cancelled)
        snprintf(err, errsz, "stopped while the image was pulled");
    else if (res.watched)
        snprintf(err, errsz, "the image is larger than the image cache may hold (%lld GiB: "
                             "options.image_cache_gib)",
                 r->max_bytes >> 30);
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
    int rc = tool(copy, wpath, true, r, err, errsz) == 0 &&
                     tool(unpack, wpath, true, r, err, errsz) == 0
                 ? 0
                 : -1;
    int bfd = -1, rootfs = -1;
    if (rc == 0) {
        char rel[160];
        snprintf(rel, sizeof rel, "%s/bundle", work);
        bfd = fsat_open(dirfd, rel, O_RDONLY | O_DIRECTORY, 0);
        rootfs = bfd >= 0 ? fsat_open(bfd, "rootfs", O_RDONLY | O_DIRECTORY, 0) : -1;
        if (rootfs < 0 || imagetree_prepare(rootfs) != 0 || fchmod(bfd, 0711) != 0) {
            snprintf(err, errsz, "cannot prepare the unpacked image: %s", strerror(errno));
            rc = -1;
        }
    }
    if (rc == 0) {
        char size[32];
        int k = snprintf(size, sizeof size, "%lld\n", imagetree_bytes(bfd, "rootfs"));
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
        struct stat st;
        /* nobody runs it, and nobody took it since the look above (a lock changing
         * from exclusive to shared is free for a moment: its time says it is used) */
        if (flock(lfd, LOCK_EX | LOCK_NB) == 0 && fstat(lfd, &st) == 0 &&
            now - st.st_mtime >= RECENT_SECONDS) {
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

/* host/repository of a pinned reference (host/repository@sha256:...) into out. */
static void source_of(const char *image, char *out, size_t outsz)
{
    snprintf(out, outsz, "%.*s", (int)strcspn(image, "@"), image);
}

/*
 * Whether the image's source (its host/repository) is one this digest was
 * fetched from: a tenant that merely knows a digest, having registered it
 * under a name of its own, must not run another tenant's cached image.
 */
static bool known_source(int dirfd, const char *hex, const char *source)
{
    char rel[HEX_LEN + 16];
    snprintf(rel, sizeof rel, "%s/sources", hex);
    char *text = fsat_read(dirfd, rel, 1 << 20, NULL);
    bool found = false;
    size_t n = strlen(source);
    for (const char *p = text; p && *p && !found; p += strcspn(p, "\n") + (p[strcspn(p, "\n")] != 0))
        found = strncmp(p, source, n) == 0 && (p[n] == '\n' || p[n] == '\0');
    free(text);
    return found;
}

static int add_source(int dirfd, const char *hex, const char *source)
{
    char rel[HEX_LEN + 16];
    snprintf(rel, sizeof rel, "%s/sources", hex);
    size_t len = 0;
    char *text = fsat_read(dirfd, rel, 1 << 20, &len);
    char *more = xasprintf("%s%s\n", text ? text : "", source);
    free(text);
    int bfd = fsat_open(dirfd, hex, O_RDONLY | O_DIRECTORY, 0);
    int rc = bfd >= 0 ? fsat_write_atomic(bfd, "sources", more, strlen(more), 0640) : -1;
    if (bfd >= 0)
        close(bfd);
    free(more);
    return rc;
}

/*
 * The registry still serves this digest under this source, to this job's
 * credentials (skopeo inspect: the manifest only, checked against the digest).
 */
static int verify_source(const char *dir, const struct imagecache_ref *r, char *err, size_t errsz)
{
    char *src = xasprintf("docker://%s", r->image), *auth = NULL;
    char *argv[10] = {(char *)IMAGECACHE_SKOPEO, (char *)"--insecure-policy", (char *)"inspect",
                      (char *)"--raw"};
    size_t n = 4;
    if (!r->tls_verify)
        argv[n++] = (char *)"--tls-verify=false";
    if (r->authfile) {
        auth = xasprintf("--authfile=%s", r->authfile);
        argv[n++] = auth;
    }
    argv[n++] = src;
    argv[n] = NULL;
    int rc = tool(argv, dir, false, r, err, errsz);
    free(src);
    free(auth);
    return rc;
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
    if (mkdir(r->dir, 0700) != 0 && errno != EEXIST) {
        snprintf(err, errsz, "cannot make the image cache %s: %s", r->dir, strerror(errno));
        return -1;
    }
    int dirfd = fsat_opendir(r->dir);
    /* the jobs' group passes (their bwrap binds from here), nobody else: every
     * tenant's images are in it */
    if (dirfd >= 0 && (r->share_gid >= 0 ? fchown(dirfd, (uid_t)-1, (gid_t)r->share_gid) != 0 ||
                                               fchmod(dirfd, 0710) != 0
                                         : fchmod(dirfd, 0700) != 0)) {
        snprintf(err, errsz, "cannot restrict the image cache %s: %s", r->dir, strerror(errno));
        close(dirfd);
        return -1;
    }
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
    char source[1024];
    source_of(r->image, source, sizeof source);
    if (fstatat(dirfd, hex, &st, AT_SYMLINK_NOFOLLOW) != 0) {
        if (pull(dirfd, r->dir, hex, r, err, errsz) != 0 || add_source(dirfd, hex, source) != 0)
            goto out;
        u->pulled = true;
        imagecache_trim(dirfd, r->max_bytes, hex);
    } else if (!known_source(dirfd, hex, source)) {
        if (verify_source(r->dir, r, err, errsz) != 0 || add_source(dirfd, hex, source) != 0)
            goto out;
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
