/* fsid.c - per-thread file system identity (see fsid.h). */
#include "fsid.h"

#include <errno.h>
#include <stdlib.h>
#include <sys/fsuid.h>
#include <sys/syscall.h>
#include <unistd.h>

/* The thread's own supplementary groups: glibc's setgroups would change every thread's. */
static int thread_setgroups(size_t n, const gid_t *list)
{
    return (int)syscall(SYS_setgroups, n, list);
}

int fsid_enter(long long uid, long long gid, struct fsid_saved *saved)
{
    saved->changed = false;
    if (uid < 0 || geteuid() != 0)
        return 0;
    int n = getgroups(FSID_MAX_GROUPS, saved->groups);
    if (n < 0)
        return -1;
    saved->ngroups = n;
    if (thread_setgroups(0, NULL) != 0)
        return -1;
    saved->gid = setfsgid((gid_t)gid);
    saved->uid = setfsuid((uid_t)uid);
    saved->changed = true;
    /* setfsuid tells no error: ask again what it is now */
    if (setfsuid((uid_t)-1) != (int)uid || setfsgid((gid_t)-1) != (int)gid) {
        fsid_leave(saved);
        errno = EPERM;
        return -1;
    }
    return 0;
}

void fsid_leave(struct fsid_saved *saved)
{
    if (!saved->changed)
        return;
    setfsuid((uid_t)saved->uid);
    setfsgid((gid_t)saved->gid);
    if (setfsuid((uid_t)-1) != saved->uid || setfsgid((gid_t)-1) != saved->gid ||
        thread_setgroups((size_t)saved->ngroups, saved->groups) != 0)
        abort();
    saved->changed = false;
}
