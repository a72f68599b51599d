/* imagetree.c - an unpacked image made safe to share (see imagetree.h). */
#include "imagetree.h"

#include "../lib/rmtree.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#define MAX_DEPTH 256
/* what no file of a shared image keeps */
#define UNSAFE_BITS (S_ISUID | S_ISGID | S_IWGRP | S_IWOTH)

static long long bytes_at(int at, const char *name, int depth)
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
            n += bytes_at(dirfd(d), e->d_name, depth + 1);
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

static int mount_points(int rootfs)
{
    static const char *const dirs[] = {"proc", "dev", "tmp", "run", "job", "etc", "data", "home"};
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

int imagetree_mount_dir(int rootfs, const char *name)
{
    struct stat st;
    if (fstatat(rootfs, name, &st, AT_SYMLINK_NOFOLLOW) == 0) {
        if (S_ISDIR(st.st_mode))
            return 0;
        errno = ENOTDIR;
        return -1;
    }
    if (errno != ENOENT || (mkdirat(rootfs, name, 0755) != 0 && errno != EEXIST))
        return -1;
    /* made meanwhile by another job's shim, or by us: a directory either way? */
    return fstatat(rootfs, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode) ? 0 : -1;
}

long long imagetree_bytes(int at, const char *name)
{
    return bytes_at(at, name, 0);
}

/*
 * The mode of the file open (O_PATH) as fd set to mode, through /proc's link
 * to the descriptor: fchmod cannot change an O_PATH descriptor, and the path
 * itself might be swapped for a link meanwhile.
 */
static int chmod_fd(int fd, mode_t mode)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    return chmod(path, mode);
}

/* Defuse at/name and, for a directory, everything beneath it. */
static int sanitize_at(int at, const char *name, int depth)
{
    int fd = openat(at, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0) {
        if (fd >= 0)
            close(fd);
        return -1;
    }
    int rc = 0;
    if (S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode)) {
        close(fd);
        return unlinkat(at, name, 0) == 0 || errno == ENOENT ? 0 : -1;
    }
    if (!S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode)) {
        close(fd); /* a link, socket or FIFO: nothing runs or opens as anyone through it */
        return 0;
    }
    mode_t mode = st.st_mode & 07777, safe = mode & (mode_t)~UNSAFE_BITS;
    if (S_ISDIR(st.st_mode))
        safe |= S_IRWXU; /* walked below, whatever the image said */
    if (safe != mode && chmod_fd(fd, safe) != 0)
        rc = -1;
    if (S_ISREG(st.st_mode)) {
        char path[64];
        snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
        /* only where there is one: removing needs CAP_SETFCAP even when there is none */
        if (getxattr(path, "security.capability", NULL, 0) >= 0 &&
            removexattr(path, "security.capability") != 0)
            rc = -1;
        close(fd);
        return rc;
    }
    close(fd);
    if (depth > MAX_DEPTH)
        return -1;
    int dfd = openat(at, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    DIR *d = dfd >= 0 ? fdopendir(dfd) : NULL;
    if (!d) {
        if (dfd >= 0)
            close(dfd);
        return -1;
    }
    struct dirent *e;
    while ((e = readdir(d)) != NULL)
        if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0 &&
            sanitize_at(dirfd(d), e->d_name, depth + 1) != 0)
            rc = -1;
    closedir(d);
    return rc;
}

int imagetree_prepare(int rootfs)
{
    return sanitize_at(rootfs, ".", 0) == 0 && mount_points(rootfs) == 0 ? 0 : -1;
}
