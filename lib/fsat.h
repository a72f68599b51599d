/*
 * fsat.h - files opened beneath a directory descriptor that someone else may
 * be changing: a job's directory (the job can plant links, FIFOs and hard
 * links there), a shared file system's output directory. Nothing here
 * follows a symbolic link (nor /proc's magic links), leaves the directory
 * through ".." or an absolute path, or blocks on a FIFO.
 *
 * Paths are resolved with openat2(2) RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS |
 * RESOLVE_NO_MAGICLINKS (Linux 5.6+); where the kernel lacks it, one
 * component at a time with O_NOFOLLOW and ".." refused. Depends on libc only.
 */
#ifndef AIDC_FSAT_H
#define AIDC_FSAT_H

#include <dirent.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* The most bytes fsat_read returns. */
#define FSAT_READ_MAX ((size_t)16 << 20)

/*
 * Open rel (relative, "a/b" allowed, no ".." component) beneath dirfd with
 * flags (O_CLOEXEC and O_NOFOLLOW are added) and mode. The descriptor, or -1
 * with errno: ELOOP or EXDEV when a link, "..", or an absolute path would be
 * followed.
 */
int fsat_open(int dirfd, const char *rel, int flags, mode_t mode);

/*
 * Open rel beneath dirfd for reading, only if it is a regular file with one
 * link: opened O_NONBLOCK (a FIFO put in its place cannot hold the caller),
 * then checked on the descriptor. The descriptor, or -1 with errno (EINVAL:
 * not a regular file, EMLINK: hard-linked elsewhere too).
 */
int fsat_open_regular(int dirfd, const char *rel);

/*
 * The whole regular file rel beneath dirfd (malloc'd, NUL-terminated, *len
 * its length when len is not NULL), at most max bytes (E2BIG beyond). NULL
 * with errno.
 */
char *fsat_read(int dirfd, const char *rel, size_t max, size_t *len);

/*
 * Replace name (one component) in dirfd by len bytes of data, atomically: a
 * temporary "<name>.tmp" made afresh (whatever stood there, a link too, is
 * removed, never followed), written, fsync'd and renamed over name. 0, or -1
 * with errno.
 */
int fsat_write_atomic(int dirfd, const char *name, const void *data, size_t len, mode_t mode);

/* Whether name exists in dirfd (as anything, a dangling link too). */
bool fsat_exists(int dirfd, const char *name);

/*
 * A directory stream over dirfd of its own (closedir it), from its first
 * entry: a stream over a dup of dirfd would share, and leave at the end, the
 * read position of dirfd and of every other dup. NULL with errno.
 */
DIR *fsat_listdir(int dirfd);

/*
 * Open the directory path (an operator's or aidcd's own: links followed)
 * for use as a dirfd; -1 with errno.
 */
int fsat_opendir(const char *path);

#endif
