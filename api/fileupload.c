/*
 * fileupload.c - PUT of a file: streamed to a partial file next to its
 * target as the body arrives (never whole in memory), renamed over the
 * target once complete, so the file appears whole or not at all.
 * "Content-Range: bytes a-b/total" sends a file in parts; a part that
 * breaks off keeps what arrived, and the next one continues from there.
 * The space's storage limit is checked before the first byte and on each.
 */
#include "files.h"

#include "../db/db.h"
#include "../lib/config.h"
#include "../lib/err.h"
#include "../lib/fsid.h"
#include "../lib/xalloc.h"
#include "../storage/tree.h"

#include <errno.h>
#include <inttypes.h>
#include <microhttpd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define GIB 1073741824.0
#define UPLOAD_WALK_MAX 200000LL /* entries an upload's measurement of its space walks */

struct upload {
    struct files_ctx fc;
    struct tree_upload *u;
    bool ranged;
    uint64_t first, last, total; /* of Content-Range */
    uint64_t want;               /* bytes this body should have; UINT64_MAX: not said */
    uint64_t got;
    uint64_t max;                /* AIDC_FILES_MAX_UPLOAD_BYTES */
    double limit;                /* bytes the space may hold, < 0: no limit */
    double used;                 /* ... and held when the upload began */
    bool failed;
    bool committed;              /* renamed into place (a retried transaction answers again) */
    struct stat st;              /* ... as it was then */
    enum problem problem;        /* why, when failed */
    int err;                     /* ... or the errno, when problem is 0 */
};

/* "bytes a-b/total": 0, or -1 when it is not one (or not a satisfiable one). */
static int parse_content_range(const char *h, struct upload *up)
{
    char *end;
    if (strncmp(h, "bytes ", 6) != 0 || h[6] < '0' || h[6] > '9')
        return -1;
    up->first = strtoull(h + 6, &end, 10);
    if (*end != '-' || end[1] < '0' || end[1] > '9')
        return -1;
    up->last = strtoull(end + 1, &end, 10);
    if (*end != '/' || end[1] < '0' || end[1] > '9')
        return -1;
    up->total = strtoull(end + 1, &end, 10);
    if (*end || up->first > up->last || up->last >= up->total)
        return -1;
    up->ranged = true;
    return 0;
}

/* The upload cannot end well: what it wrote goes now, before any answer says so. */
static void fail(struct upload *up, enum problem p, int err)
{
    up->failed = true;
    up->problem = p;
    up->err = err;
    if (up->u)
        tree_upload_abort(up->u);
    up->u = NULL;
}

static int sink_write(void *state, const char *data, size_t len)
{
    struct upload *up = state;
    uint64_t size = tree_upload_size(up->u) + len;
    if (up->want != UINT64_MAX && up->got + len > up->want)
        fail(up, PROBLEM_FILES_UPLOAD_INCOMPLETE, 0);
    else if (size > up->max)
        fail(up, PROBLEM_FILES_UPLOAD_TOO_LARGE, 0);
    else if (up->limit >= 0 && up->used + (double)up->got + (double)len > up->limit)
        fail(up, PROBLEM_FILES_QUOTA, 0);
    else if (tree_upload_write(up->u, data, len) != 0)
        fail(up, 0, errno);
    if (up->failed)
        return -1;
    up->got += len;
    return 0;
}

/* The request is over: a part that broke off keeps what arrived; anything else goes. */
static void sink_free(void *state)
{
    struct upload *up = state;
    if (up->u && up->ranged && !up->failed)
        tree_upload_keep(up->u);
    else if (up->u)
        tree_upload_abort(up->u);
    files_ctx_close(&up->fc);
    free(up);
}

static char *gib_text(double bytes)
{
    return xasprintf("%.3f", bytes / GIB);
}

static int quota_problem(struct resp *rs, const struct upload *up)
{
    char *l = gib_text(up->limit), *u = gib_text(up->used);
    int e = api_problem(rs, PROBLEM_FILES_QUOTA,
                        json_pack("{s:s, s:s, s:s}", "space", up->fc.label, "limit_gib", l,
                                  "used_gib", u));
    free(l);
    free(u);
    return e;
}

static int upload_problem(struct resp *rs, const struct upload *up)
{
    switch (up->problem) {
    case PROBLEM_FILES_QUOTA: return quota_problem(rs, up);
    case PROBLEM_FILES_UPLOAD_TOO_LARGE:
        return api_problem(rs, up->problem, json_pack("{s:I}", "max", (json_int_t)up->max));
    case PROBLEM_FILES_UPLOAD_INCOMPLETE:
        return api_problem(rs, up->problem, json_pack("{s:I, s:I}", "got", (json_int_t)up->got,
                                                      "want", (json_int_t)up->want));
    default: return files_errno_problem(rs, up->err, up->fc.label, up->fc.rel);
    }
}

/* What the headers say of the body: its length and, for a part, where it goes. */
static int body_shape(struct req *rq, struct resp *rs, struct upload *up)
{
    up->want = UINT64_MAX;
    if (rq->content_length) {
        char *end;
        up->want = strtoull(rq->content_length, &end, 10);
        if (*end)
            up->want = UINT64_MAX;
    }
    if (rq->content_range) {
        if (parse_content_range(rq->content_range, up) != 0 ||
            (up->want != UINT64_MAX && up->want != up->last - up->first + 1))
            return api_problem(rs, PROBLEM_FILES_CONTENT_RANGE, NULL);
        up->want = up->last - up->first + 1;
    }
    /* a part is measured by the whole file's size: its own length may be
     * 2^64-1 (bytes 0-(2^64-2)/(2^64-1)), which as want would read "not said" */
    if (up->ranged ? up->total > up->max : up->want != UINT64_MAX && up->want > up->max)
        return api_problem(rs, PROBLEM_FILES_UPLOAD_TOO_LARGE,
                           json_pack("{s:I}", "max", (json_int_t)up->max));
    return 0;
}

/* Who uploads what: a resumable upload's partial file is named from it. */
static char *upload_key(const struct req *rq, const struct upload *up)
{
    return xasprintf("%s\n%s/%s", rq->actor.username ? rq->actor.username : "", up->fc.label,
                     up->fc.rel);
}

/* As the tenant: the limit checked against what the space holds, the partial file opened. */
static int start(struct req *rq, struct resp *rs, struct upload *up)
{
    struct files_ctx *fc = &up->fc;
    if (up->limit >= 0) {
        /* measured now, but within a bound: a space of millions of entries must not
         * hold an HTTP thread per upload; past it, the storage worker's last figure */
        long long bytes = 0, entries = 0;
        int cut = space_measure(fc->fd, UPLOAD_WALK_MAX, &bytes, &entries);
        if (cut < 0)
            return files_errno_problem(rs, errno, fc->label, "");
        if (cut && fc->measured_bytes > bytes)
            bytes = fc->measured_bytes;
        up->used = (double)bytes;
        /* what is still to come: the rest of a file sent in parts, else this body */
        uint64_t coming = up->ranged ? up->total - up->first : up->want == UINT64_MAX ? 0 : up->want;
        if (up->used + (double)coming > up->limit) {
            if (up->ranged) { /* the file will not fit: what it sent so far goes too */
                uint64_t have;
                char *key = upload_key(rq, up);
                struct tree_upload *u = tree_upload_open(fc->fd, fc->rel, key, 0, &have);
                free(key);
                if (u)
                    tree_upload_abort(u);
            }
            return quota_problem(rs, up);
        }
    }
    char *key = up->ranged ? upload_key(rq, up) : NULL;
    uint64_t have = 0;
    up->u = tree_upload_open(fc->fd, fc->rel, key, up->ranged ? up->first : 0, &have);
    int err = errno;
    free(key);
    if (up->u)
        return 0;
    if (err == EBUSY) {
        int e = api_problem(rs, PROBLEM_FILES_UPLOAD_BUSY, json_pack("{s:s}", "path", fc->rel));
        rs->err.retry_after = 1;
        return e;
    }
    if (err == EAGAIN)
        return api_problem(rs, PROBLEM_FILES_UPLOAD_OFFSET,
                           json_pack("{s:s, s:I}", "path", fc->rel, "have", (json_int_t)have));
    return files_errno_problem(rs, err, fc->label, fc->rel);
}

int api_files_put_begin(struct req *rq, struct resp *rs)
{
    struct upload *up = xcalloc(1, sizeof *up);
    up->fc.fd = -1;
    up->max = (uint64_t)rq->cfg->files_max_upload_bytes;
    int e = body_shape(rq, rs, up);
    if (!e)
        e = files_resolve(rq, rs, true, true, &up->fc);
    if (!e && !up->fc.rel[0])
        e = files_errno_problem(rs, EISDIR, up->fc.label, "");
    up->limit = up->fc.limit_gib >= 0 ? up->fc.limit_gib * GIB : -1;
    struct fsid_saved saved;
    if (!e && fsid_enter(up->fc.own.uid, up->fc.own.gid, &saved) != 0)
        e = files_errno_problem(rs, errno, up->fc.label, up->fc.rel);
    else if (!e) {
        e = start(rq, rs, up);
        fsid_leave(&saved);
    }
    if (e) {
        sink_free(up);
        return e;
    }
    rq->sink = (struct req_sink){.write = sink_write, .free = sink_free, .state = up};
    return 0;
}

static json_t *stat_json(const char *rel, const struct stat *st)
{
    const char *base = strrchr(rel, '/');
    struct tm tm;
    char when[40];
    gmtime_r(&st->st_mtim.tv_sec, &tm);
    strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", &tm);
    return json_pack("{s:s, s:I, s:s}", "name", base ? base + 1 : rel, "size",
                     (json_int_t)st->st_size, "mtime", when);
}

int api_files_put(struct req *rq, struct resp *rs)
{
    struct upload *up = rq->sink.state;
    if (up && up->committed)
        goto answer;
    if (!up)
        return api_problem(rs, PROBLEM_INTERNAL, NULL);
    if (!up->failed && up->want != UINT64_MAX && up->got != up->want)
        fail(up, PROBLEM_FILES_UPLOAD_INCOMPLETE, 0);
    if (up->failed)
        return upload_problem(rs, up);
    if (!up->u)
        return api_problem(rs, PROBLEM_INTERNAL, NULL);
    /* the request was admitted again once its body was in, as the caller is
     * now: so is the space (an admin made a member meanwhile may no longer
     * write a dataset or another's home, a deleted project takes nothing) */
    struct files_ctx now;
    int e = files_resolve(rq, rs, true, false, &now);
    files_ctx_close(&now);
    /* ... and for an actor known to be current: the commit cannot be undone
     * once the dispatch finds the actor stale afterwards (and answers again) */
    if (!e && db_ctx_verify(rq->db) == DB_CTX_STALE)
        return AIDC_ESTALE;
    if (e && rs->err.status) {
        tree_upload_abort(up->u);
        up->u = NULL;
    }
    if (e)
        return e;
    if (up->ranged && up->last + 1 < up->total) {
        /* a part: on disk before its answer says so, kept for the next one (sink_free);
         * audited once the file appears */
        if (tree_upload_flush(up->u) != 0) {
            fail(up, 0, errno);
            return upload_problem(rs, up);
        }
        rs->audit.skip = true;
        return resp_json(rs, MHD_HTTP_ACCEPTED,
                         json_pack("{s:s, s:I, s:I}", "path", up->fc.rel, "received",
                                   (json_int_t)up->last + 1, "total", (json_int_t)up->total));
    }
    struct fsid_saved saved;
    if (fsid_enter(up->fc.own.uid, up->fc.own.gid, &saved) != 0)
        return files_errno_problem(rs, errno, up->fc.label, up->fc.rel);
    int rc = tree_upload_commit(up->u, &up->st);
    int err = errno;
    fsid_leave(&saved);
    up->u = NULL;
    if (rc != 0)
        return files_errno_problem(rs, err, up->fc.label, up->fc.rel);
    up->committed = true;
answer:;
    const struct stat st = up->st;
    char *id = xasprintf("%s/%s/%s", up->fc.sp.tenant, up->fc.label, up->fc.rel);
    resp_audit(rs, "file", id,
               json_pack("{s:s, s:s, s:I, s:b}", "space", up->fc.label, "path", up->fc.rel,
                         "size", (json_int_t)st.st_size, "resumed", up->ranged && up->first > 0));
    free(id);
    return resp_json(rs, MHD_HTTP_CREATED, stat_json(up->fc.rel, &st));
}
