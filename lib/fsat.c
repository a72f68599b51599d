/* fsat.c - files beneath a directory descriptor, no link followed (see fsat.h). */
#include "fsat.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#define MAX_COMPONENT 255

/* Without openat2: each component opened O_NOFOLLOW from the one before. */
static int open_walk(int dirfd, const char *rel, int flags, mode_t mode)
{
    int at = dirfd, fd = -1;
    const char *p = rel;
    for (;;) {
        size_t n = strcspn(p, "/");
        char part[MAX_COMPONENT + 1];
        if (n == 0 || n > MAX_COMPONENT || (n == 2 && p[0] == '.' && p[1] == '.')) {
            errno = n > MAX_COMPONENT ? ENAMETOOLONG : EXDEV;
            fd = -1;
            break;
        }
        memcpy(part, p, n);
        part[n] = '\0';
        bool last = p[n] == '\0';
        fd = last ? openat(at, part, flags, mode)
                  : openat(at, part, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        struct stat st;
        if (fd < 0 && errno == ENOTDIR && !last &&
            fstatat(at, part, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode))
            errno = ELOOP; /* a link on the way, as openat2 says it */
        if (at != dirfd) {
            int saved = errno;
            close(at);
            errno = saved;
        }
        if (fd < 0 || last)
            break;
        at = fd;
        p += n + 1;
    }
    return fd;
}

int fsat_open(int dirfd, const char *rel, int flags, mode_t mode)
{
    if (!rel || !rel[0] || rel[0] == '/') {
        errno = EXDEV;
        return -1;
    }
    flags |= O_CLOEXEC | O_NOFOLLOW;
    struct open_how how = {
        .flags = (unsigned long long)flags,
        .mode = (flags & (O_CREAT | O_TMPFILE)) ? mode : 0,
        .resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS,
    };
    long fd = syscall(SYS_openat2, dirfd, rel, &how, sizeof how);
    if (fd >= 0 || errno != ENOSYS)
        return (int)fd;
    return open_walk(dirfd, rel, flags, mode);
}

int fsat_open_regular(int dirfd, const char *rel)
{
    int fd = fsat_open(dirfd, rel, O_RDONLY | O_NONBLOCK | O_NOCTTY, 0);
    if (fd < 0)
        return -1;
    struct stat st;
    int why = 0;
    if (fstat(fd, &st) != 0)
        why = errno;
    else if (!S_ISREG(st.st_mode))
        why = EINVAL;
    else if (st.st_nlink != 1)
        why = EMLINK; /* the same file under another name: maybe one of ours */
    if (why) {
        close(fd);
        errno = why;
        return -1;
    }
    return fd;
}

char *fsat_read(int dirfd, const char *rel, size_t max, size_t *len)
{
    int fd = fsat_open_regular(dirfd, rel);
    if (fd < 0)
        return NULL;
    if (max > FSAT_READ_MAX)
        max = FSAT_READ_MAX;
    size_t cap = max < 4096 ? max : 4096, n = 0;
    char *buf = malloc(cap + 1);
    int why = buf ? 0 : ENOMEM;
    while (!why) {
        if (n == cap && cap == max) {
            /* full: only the end of the file may come now */
            char more;
            ssize_t r = read(fd, &more, 1);
            if (r < 0 && errno == EINTR)
                continue;
            why = r < 0 ? errno : r > 0 ? E2BIG : 0;
            break;
        }
        if (n == cap) {
            cap = cap * 2 > max ? max : cap * 2;
            char *grown = realloc(buf, cap + 1);
            if (!grown) {
                why = ENOMEM;
                break;
            }
            buf = grown;
        }
        ssize_t r = read(fd, buf + n, cap - n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            why = errno;
        else if (r == 0)
            break;
        else
            n += (size_t)r;
    }
    close(fd);
    if (why) {
        free(buf);
        errno = why;
        return NULL;
    }
    buf[n] = '\0';
    if (len)
        *len = n;
    return buf;
}

int fsat_write_atomic(int dirfd, const char *name, const void *data, size_t len, mode_t mode)
{
    char tmp[MAX_COMPONENT + 8];
    int n = snprintf(tmp, sizeof tmp, "%s.tmp", name);
    if (n < 0 || (size_t)n >= sizeof tmp || strchr(name, '/')) {
        errno = EINVAL;
        return -1;
    }
    if (unlinkat(dirfd, tmp, 0) != 0 && errno != ENOENT)
        return -1;
    int fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
    if (fd < 0)
        return -1;
    const char *p = data;
    size_t done = 0;
    int why = 0;
    while (done < len) {
        ssize_t w = write(fd, p + done, len - done);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            why = w < 0 ? errno : EIO;
            break;
        }
        done += (size_t)w;
    }
    if (!why && fsync(fd) != 0)
        why = errno;
    if (close(fd) != 0 && !why)
        why = errno;
    if (!why && renameat(dirfd, tmp, dirfd, name) != 0)
        why = errno;
    if (why) {
        unlinkat(dirfd, tmp, 0);
        errno = why;
        return -1;
    }
    return 0;
}

bool fsat_exists(int dirfd, const char *name)
{
    struct stat st;
    return fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0;
}

int fsat_opendir(const char *path)
{
    return open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
}

DIR *fsat_listdir(int dirfd)
{
    int fd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    if (!d && fd >= 0) {
        int saved = errno;
        close(fd);
        errno = saved;
    }
    return d;
}
