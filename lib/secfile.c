/* secfile.c - files that hold a secret (see secfile.h). */
#include "secfile.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

bool secfile_ok(const struct stat *st, const char *path, char *err, size_t errsz)
{
    if (!S_ISREG(st->st_mode)) {
        snprintf(err, errsz, "%s is not a regular file", path);
        return false;
    }
    /* root may own it (an operator's install -o root); anybody else could rewrite it */
    uid_t me = geteuid();
    if (st->st_uid != me && st->st_uid != 0) {
        snprintf(err, errsz,
                 "%s is owned by uid %lu, not by the user this program runs as (uid %lu) or "
                 "root: chown it",
                 path, (unsigned long)st->st_uid, (unsigned long)me);
        return false;
    }
    if (st->st_mode & SECFILE_FORBIDDEN_MODE) {
        snprintf(err, errsz,
                 "%s is %s by group or others (mode %04o): a secret file must be mode 600 or "
                 "400 (chmod 600 %s)",
                 path, st->st_mode & 044 ? "readable" : "writable or executable",
                 (unsigned)(st->st_mode & 07777), path);
        return false;
    }
    return true;
}

int secfile_open(const char *path, char *err, size_t errsz)
{
    /* O_NONBLOCK: a FIFO planted in its place must not hang the start */
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
    if (fd < 0) {
        int e = errno;
        snprintf(err, errsz, "cannot read %s: %s", path, strerror(e));
        errno = e;
        return -1;
    }
    struct stat st;
    if (fstat(fd, &st) != 0) {
        int e = errno;
        snprintf(err, errsz, "cannot read %s: %s", path, strerror(e));
        close(fd);
        errno = e;
        return -1;
    }
    if (!secfile_ok(&st, path, err, errsz)) {
        close(fd);
        errno = !S_ISREG(st.st_mode) ? (S_ISDIR(st.st_mode) ? EISDIR : EINVAL) : EPERM;
        return -1;
    }
    /* reads block again (a regular file never blocks, but keep the usual semantics) */
    int fl = fcntl(fd, F_GETFL);
    if (fl >= 0)
        (void)fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
    return fd;
}
