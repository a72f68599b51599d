/*
 * shimmount.h - the storage spaces of a local job (storage/jobmount.h), as
 * its shim opens them: the storage root by its operator's path, each space
 * beneath it without following a link (storage/space.h: a link, a FIFO or
 * anything but a directory where a space should be is no space), the
 * project's space and the home made when missing with the tenant's owner,
 * and each checked to be the job's own - its uid's (project, home) or its
 * group's (a dataset, which only root may change) - before the sandbox binds
 * the descriptor at the space's fixed path. Nothing else of the storage
 * root is handed over: no path, so no link the job planted is ever followed
 * by the shim. An unconfined job is told the spaces' host paths instead.
 *
 * job.json's "storage": {"root": "/srv/aidc", "uid": N, "gid": N, "mounts":
 * [...]}: the root, the owner new spaces get (-1: the shim's own user), the
 * mounts as submitted. Only the shim process uses these.
 */
#ifndef AIDC_SHIMMOUNT_H
#define AIDC_SHIMMOUNT_H

#include "../storage/jobmount.h"

#include <jansson.h>
#include <stdbool.h>
#include <sys/types.h>

struct shimmount {
    struct jobmount m[JOBMOUNT_MAX];
    int fd[JOBMOUNT_MAX]; /* each space's directory, O_RDONLY | O_DIRECTORY */
    size_t n;
    char root[4096];      /* the storage root's path on this host */
};

/*
 * The spaces spec (job.json) names, opened for a job running as uid/gid
 * (drop: the shim is root and the job runs as them; else as the shim's own
 * user). 0 (also when there is none), or -1 with err: the job must not run.
 */
int shimmount_open(const json_t *spec, bool drop, uid_t uid, gid_t gid, struct shimmount *out,
                   char *err, size_t errsz);
/* Close the descriptors (accepts a zeroed or already closed one). */
void shimmount_close(struct shimmount *s);
/*
 * The variables that say where the spaces are (new reference, an object):
 * their fixed paths in the sandbox, their host paths when not sandboxed
 * (NULL with err when a project or home asks to be read-only: nothing makes
 * it so on the host).
 */
json_t *shimmount_env(const struct shimmount *s, bool sandboxed, char *err, size_t errsz);

#endif
