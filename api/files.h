/*
 * files.h - the files API (docs/storage.md): a tenant's storage spaces
 * (projects/<p>, home/<user>, datasets/<name>) listed, downloaded, uploaded,
 * changed; and a job's outputs, read the same way (api/joboutputs.c).
 *
 * Who may: members use the tenant's project spaces and their own home, and
 * read datasets; tenant admins (and platform admins) use every space of the
 * tenant. Every file operation runs as the tenant (lib/fsid.h) beneath the
 * space's directory descriptor (storage/tree.h): a link or FIFO a job
 * planted is never followed or opened.
 */
#ifndef AIDC_API_FILES_H
#define AIDC_API_FILES_H

#include "../server/request.h"
#include "../storage/space.h"

#include <stdbool.h>

/* A request's space: resolved, permitted and opened. */
struct files_ctx {
    struct space sp;
    char label[SPACE_NAME_MAX * 2 + 16]; /* "projects/<p>": how problems name the space */
    const char *rel;                     /* the path inside it ("" = its root) */
    struct space_owner own;
    double limit_gib;         /* the space's storage limit, < 0: none */
    long long measured_bytes; /* the storage worker's last figure, -1: none */
    int fd;                   /* its directory */
    bool admin;
};

/*
 * Resolve the route's {kind}/{name}/{path*} for rq into fc: the caller's
 * right to it (write: to change it), the space in the database, and its
 * directory (made when create). 0, or a problem in rs. Release with
 * files_ctx_close.
 */
int files_resolve(struct req *rq, struct resp *rs, bool write, bool create, struct files_ctx *fc);
void files_ctx_close(struct files_ctx *fc);

/* The problem an errno of storage/tree.h means for path in space (a label). */
int files_errno_problem(struct resp *rs, int err, const char *space, const char *path);

/*
 * Answer GET of rel beneath dirfd: a directory's page of entries, or a
 * regular file's bytes (Range honoured). label names the space in problems.
 * single_link: a file with another name elsewhere is not served (where
 * aidcd reads as itself, not as the tenant).
 */
int files_serve(struct req *rq, struct resp *rs, int dirfd, const char *rel, const char *label,
                bool single_link);

/* The routes. */
int api_files_get(struct req *rq, struct resp *rs);
int api_files_post(struct req *rq, struct resp *rs);
int api_files_delete(struct req *rq, struct resp *rs);
int api_files_put_begin(struct req *rq, struct resp *rs);
int api_files_put(struct req *rq, struct resp *rs);
int api_job_files(struct req *rq, struct resp *rs);

#endif
