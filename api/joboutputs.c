/*
 * joboutputs.c - a job's outputs through the files API, while its record
 * lives: its stdout and stderr whole (not a tail) and, where the backend
 * keeps one, its work directory. The root lists "stdout", "stderr" and
 * "work"; nothing else of the run's directory (its spec, its credentials)
 * is reachable. The work directory is read as the job's uid (lib/fsid.h):
 * whatever a job planted there, aidcd sees it no better than the job did.
 */
#include "files.h"

#include "../backends/backend.h"
#include "../db/jobs.h"
#include "../lib/config.h"
#include "../lib/err.h"
#include "../lib/fsid.h"
#include "../lib/xalloc.h"
#include "../server/validate.h"
#include "jobs.h"

#include <errno.h>
#include <fcntl.h>
#include <microhttpd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static void close_outputs(struct backend_outputs *o)
{
    if (o->work_fd >= 0)
        close(o->work_fd);
    if (o->logs_fd >= 0)
        close(o->logs_fd);
    o->work_fd = o->logs_fd = -1;
}

static void add_entry(json_t *items, const char *name, const struct stat *st)
{
    struct tm tm;
    char when[40];
    gmtime_r(&st->st_mtim.tv_sec, &tm);
    strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", &tm);
    bool dir = S_ISDIR(st->st_mode);
    json_array_append_new(items, json_pack("{s:s, s:s, s:I, s:s}", "name", name, "type",
                                           dir ? "dir" : "file", "size",
                                           (json_int_t)(dir ? 0 : st->st_size), "mtime", when));
}

/* The root: the logs and the work directory, those that exist. */
static int list_root(struct resp *rs, const struct backend_outputs *o)
{
    json_t *items = json_array();
    struct stat st;
    if (o->logs_fd >= 0 && fstatat(o->logs_fd, o->stderr_name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
        S_ISREG(st.st_mode))
        add_entry(items, "stderr", &st);
    if (o->logs_fd >= 0 && fstatat(o->logs_fd, o->stdout_name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
        S_ISREG(st.st_mode))
        add_entry(items, "stdout", &st);
    if (o->work_fd >= 0 && fstat(o->work_fd, &st) == 0)
        add_entry(items, "work", &st);
    return resp_json(rs, MHD_HTTP_OK,
                     json_pack("{s:o, s:n}", "items", items, "next_cursor"));
}

static int serve(struct req *rq, struct resp *rs, struct backend_outputs *o, const char *rel,
                 const char *label)
{
    if (!rel[0])
        return list_root(rs, o);
    if (strcmp(rel, "stdout") == 0 || strcmp(rel, "stderr") == 0) {
        if (o->logs_fd < 0)
            return files_errno_problem(rs, ENOENT, label, rel);
        return files_serve(rq, rs, o->logs_fd, rel[3] == 'o' ? o->stdout_name : o->stderr_name,
                           label, true);
    }
    if (strncmp(rel, "work", 4) != 0 || (rel[4] && rel[4] != '/') || o->work_fd < 0)
        return files_errno_problem(rs, ENOENT, label, rel);
    struct fsid_saved saved;
    if (fsid_enter(o->uid, o->gid, &saved) != 0)
        return files_errno_problem(rs, errno, label, rel);
    int e = files_serve(rq, rs, o->work_fd, rel[4] ? rel + 5 : "", label, false);
    fsid_leave(&saved);
    return e;
}

int api_job_files(struct req *rq, struct resp *rs)
{
    const char *id, *rel = req_param(rq, "path");
    int e = validate_id_param(rq, rs, &id);
    if (e)
        return e;
    if (!rel)
        rel = "";
    if (!space_path_valid(rel)) {
        api_field_problem(rs, "path", PROBLEM_FILES_PATH, NULL);
        return api_fail_fields(rs);
    }
    struct db_job_placement pl;
    const struct backend_ops *ops;
    json_t *options;
    e = api_job_placed(rq, rs, id, &pl, &options, &ops);
    if (e)
        return e;
    struct backend_outputs o = {.work_fd = -1, .logs_fd = -1, .uid = -1, .gid = -1};
    char label[64];
    snprintf(label, sizeof label, "job %s", id);
    if (!api_job_sees_all(rq, pl.user))
        e = api_problem(rs, PROBLEM_JOB_FILES_NOT_OWNER, NULL);
    else if (pl.cluster_id[0] && (!ops || !ops->outputs))
        e = api_problem(rs, PROBLEM_JOB_FILES_UNAVAILABLE, json_pack("{s:s}", "kind", pl.kind));
    if (!e && ops) {
        struct backend_cluster cl = {.id = pl.cluster_id, .kind = pl.kind, .options = options,
                                     .data_dir = rq->cfg->data_dir,
                                     .self_exe = rq->cfg->self_exe};
        if (ops->outputs(&cl, pl.run_key, &o) != 0)
            close_outputs(&o); /* nothing yet: an empty root, like a job still queued */
    }
    json_decref(options);
    if (!e)
        e = serve(rq, rs, &o, rel, label);
    close_outputs(&o);
    return e;
}
