/* rmtree.c - remove a tree without following links (see rmtree.h). */
#include "rmtree.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <string.h>
#include <unistd.h>

static int remove_at(int dirfd, const char *name, int depth);

/* Empty the directory open as fd (which this closes). */
static int empty(int fd, int depth)
{
    DIR *d = fdopendir(fd);
    if (!d) {
        close(fd);
        return -1;
    }
    int rc = 0;
    struct dirent *e;
    while ((errno = 0, e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        if (remove_at(dirfd(d), e->d_name, depth + 1) != 0)
            rc = -1;
    }
    if (errno != 0)
        rc = -1;
    closedir(d);
    return rc;
}

static int remove_at(int dirfd, const char *name, int depth)
{
    if (unlinkat(dirfd, name, 0) == 0 || errno == ENOENT)
        return 0; /* a file, a link (never followed), a socket ... or gone */
    if (errno != EISDIR && errno != EPERM)
        return -1; /* Linux answers EISDIR for a directory; EPERM elsewhere */
    if (depth >= RMTREE_MAX_DEPTH)
        return -1;
    int fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        /* swapped for a link or a file since: unlink that instead */
        return unlinkat(dirfd, name, 0) == 0 || errno == ENOENT ? 0 : -1;
    int rc = empty(fd, depth);
    if (unlinkat(dirfd, name, AT_REMOVEDIR) != 0 && errno != ENOENT)
        rc = -1;
    return rc;
}

int rmtree_at(int dirfd, const char *name)
{
    return remove_at(dirfd, name, 0);
}
