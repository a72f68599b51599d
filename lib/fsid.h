/*
 * fsid.h - touch files as another user, in this thread only.
 *
 * aidcd serves a tenant's files as root, but must not see them as root: a
 * job can plant a hard link to a file the tenant may not read (a host's
 * key, another tenant's file) where the files API will look. Linux keeps
 * the file system uid and gid per thread (setfsuid(2), setfsgid(2); glibc
 * calls them directly, unlike setuid), and the kernel drops CAP_DAC_OVERRIDE
 * and the other file capabilities while the fsuid is not 0. So between
 * fsid_enter and fsid_leave this thread opens, creates and renames exactly
 * as the tenant's own jobs would, and what it creates is the tenant's. The
 * supplementary groups are dropped the same way (the raw system call, per
 * thread) and restored on leave.
 */
#ifndef AIDC_FSID_H
#define AIDC_FSID_H

#include <stdbool.h>
#include <sys/types.h>

#define FSID_MAX_GROUPS 64

struct fsid_saved {
    bool changed;
    int uid, gid;
    int ngroups;
    gid_t groups[FSID_MAX_GROUPS];
};

/*
 * Act as uid:gid (no change when uid < 0, or when this process is not
 * root). 0, or -1 with errno when the thread could not take them (nothing
 * changed then).
 */
int fsid_enter(long long uid, long long gid, struct fsid_saved *saved);
/* Back to what the thread was before fsid_enter (aborts if it cannot: a
 * thread left as a tenant would serve the next request as that tenant). */
void fsid_leave(struct fsid_saved *saved);

#endif
