/*
 * files.c - the files API: spaces resolved and permitted, directories
 * listed, files downloaded, directories made, entries moved and removed.
 * Uploads are api/fileupload.c's, a job's outputs api/joboutputs.c's.
 */
#include "files.h"

#include "../db/files.h"
#include "../lib/config.h"
#include "../lib/err.h"
#include "../lib/crypto.h"
#include "../lib/fsat.h"
#include "../lib/fsid.h"
#include "../lib/rmtree.h"
#include "../lib/sbuf.h"
#include "../lib/xalloc.h"
#include "../storage/tree.h"
#include "paging.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <microhttpd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* The storage root, made (root's, 0711: passed, never listed) when missing. */
static int open_root(const char *root)
{
    int fd = fsat_opendir(root);
    if (fd >= 0 || errno != ENOENT)
        return fd;
    char *path = xstrdup(root);
    for (char *p = path + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        (void)mkdir(path, 0755);
        *p = '/';
    }
    if (mkdir(path, 0711) != 0 && errno != EEXIST) {
        free(path);
        return -1;
    }
    free(path);
    return fsat_opendir(root);
}

static int unavailable(struct resp *rs, int err)
{
    return api_problem(rs, PROBLEM_FILES_STORAGE_UNAVAILABLE,
                       json_pack("{s:s}", "reason", strerror(err)));
}

int files_errno_problem(struct resp *rs, int err, const char *space, const char *path)
{
    json_t *p = json_pack("{s:s, s:s}", "space", space, "path", path);
    switch (err) {
    case ENOENT: return api_problem(rs, PROBLEM_FILES_NOT_FOUND, p);
    case ENOTDIR: return api_problem(rs, PROBLEM_FILES_NOT_DIRECTORY, p);
    case ELOOP:
    case EXDEV:
    case EINVAL:
    case EMLINK:
    case ENXIO:
    case EACCES:
    case EPERM: return api_problem(rs, PROBLEM_FILES_SPECIAL, p);
    case EISDIR: return api_problem(rs, PROBLEM_FILES_IS_DIRECTORY, p);
    case EEXIST: return api_problem(rs, PROBLEM_FILES_EXISTS, p);
    case ENOTEMPTY: return api_problem(rs, PROBLEM_FILES_NOT_EMPTY, p);
    case ENOSPC:
    case EDQUOT: json_decref(p); return api_problem(rs, PROBLEM_FILES_DISK_FULL, NULL);
    case ENAMETOOLONG:
        json_decref(p);
        api_field_problem(rs, "path", PROBLEM_FILES_PATH, NULL);
        return api_fail_fields(rs);
    default: json_decref(p); return unavailable(rs, err);
    }
}

static bool kind_of(const char *s, enum space_kind *k)
{
    for (int i = SPACE_PROJECT; i <= SPACE_DATASET; i++) {
        if (strcmp(s, space_kind_dir((enum space_kind)i)) == 0) {
            *k = (enum space_kind)i;
            return true;
        }
    }
    return false;
}

int files_resolve(struct req *rq, struct resp *rs, bool write, bool create, struct files_ctx *fc)
{
    memset(fc, 0, sizeof *fc);
    fc->fd = -1;
    const char *kind = req_param(rq, "kind"), *name = req_param(rq, "name");
    fc->rel = req_param(rq, "path");
    if (!fc->rel)
        fc->rel = "";
    char path[SPACE_NAME_MAX * 3];
    snprintf(path, sizeof path, "%s/%s", kind ? kind : "", name ? name : "");
    const char *rest = NULL;
    enum space_kind k;
    if (!kind || !kind_of(kind, &k))
        return api_problem(rs, PROBLEM_FILES_SPACE_KIND, NULL);
    if (space_parse(rq->tenant.slug, path, &fc->sp, &rest) != 0 || rest[0])
        return api_problem(rs, PROBLEM_FILES_SPACE_NOT_FOUND,
                           json_pack("{s:s, s:s}", "space", kind, "tenant", rq->tenant.slug));
    snprintf(fc->label, sizeof fc->label, "%s/%s", kind, fc->sp.name);
    if (!space_path_valid(fc->rel)) {
        api_field_problem(rs, "path", PROBLEM_FILES_PATH, NULL);
        return api_fail_fields(rs);
    }
    fc->admin = (rq->actor.roles & GR_PLATFORM_ADMIN) || rq->tenant.role >= TR_ADMIN;
    if (k == SPACE_HOME && !fc->admin &&
        (!rq->actor.username || strcmp(rq->actor.username, fc->sp.name) != 0))
        return api_problem(rs, PROBLEM_FILES_HOME_NOT_OWN, json_pack("{s:s}", "user", fc->sp.name));
    if (k == SPACE_DATASET && write && !fc->admin)
        return api_problem(rs, PROBLEM_FILES_DATASET_READ_ONLY, NULL);
    struct db_files_space row;
    int e = db_files_space(rq->db, rq->tenant.id, kind, fc->sp.name, &row);
    if (e && e != AIDC_ENOTFOUND)
        return e;
    if (e || !row.exists)
        return api_problem(rs, PROBLEM_FILES_SPACE_NOT_FOUND,
                           json_pack("{s:s, s:s}", "space", fc->label, "tenant", rq->tenant.slug));
    fc->limit_gib = row.limit_gib;
    fc->measured_bytes = row.measured_bytes;
    fc->own = space_owner_of(rq->cfg->storage_uid_first, row.tenant_number);
    int root = open_root(rq->cfg->storage_root);
    if (root < 0)
        return unavailable(rs, errno);
    /* the layout is made as root (the tenant's folders are root's); what is
     * beneath a space, as the tenant */
    /* a dataset is made by its admins' first change to it, never by a read */
    fc->fd = space_open(root, &fc->sp, &fc->own, create && (k != SPACE_DATASET || write));
    int err = errno;
    close(root);
    if (fc->fd < 0 && err == ENOENT)
        return api_problem(rs, PROBLEM_FILES_SPACE_NOT_FOUND,
                           json_pack("{s:s, s:s}", "space", fc->label, "tenant", rq->tenant.slug));
    if (fc->fd < 0)
        return files_errno_problem(rs, err, fc->label, "");
    /* a space the operator gave to another user (the one a Slurm cluster runs its
     * jobs as, on a shared file system) is used as that user; never as root */
    struct stat st;
    if (fc->own.uid >= 0 && fstat(fc->fd, &st) == 0 && st.st_uid != 0 &&
        (long long)st.st_uid != fc->own.uid) {
        fc->own.uid = st.st_uid;
        fc->own.gid = st.st_gid;
    }
    return 0;
}

void files_ctx_close(struct files_ctx *fc)
{
    if (fc->fd >= 0)
        close(fc->fd);
    fc->fd = -1;
}

static json_t *rfc3339(struct timespec t)
{
    struct tm tm;
    char buf[40];
    time_t s = t.tv_sec;
    gmtime_r(&s, &tm);
    strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
    return json_string(buf);
}

static int list_dir(struct req *rq, struct resp *rs, int dirfd, const char *rel, const char *label)
{
    struct page pg;
    int e = paging_parse(rq, rs, &pg);
    if (e)
        return e;
    if (pg.after && !space_path_valid(pg.after)) {
        paging_free(&pg);
        api_field_problem(rs, "cursor", PROBLEM_V_CURSOR, NULL);
        return api_fail_fields(rs);
    }
    int limit = pg.limit > rq->cfg->files_list_max ? rq->cfg->files_list_max : pg.limit;
    struct tree_list l;
    if (tree_list(dirfd, rel, pg.after, (size_t)limit, &l) != 0) {
        int err = errno;
        paging_free(&pg);
        return files_errno_problem(rs, err, label, rel);
    }
    paging_free(&pg);
    json_t *items = json_array();
    for (size_t i = 0; i < l.n; i++) {
        const struct tree_entry *t = &l.items[i];
        json_array_append_new(items, json_pack("{s:s, s:s, s:I, s:o}", "name", t->name, "type",
                                               t->dir ? "dir" : "file", "size",
                                               (json_int_t)t->size, "mtime", rfc3339(t->mtime)));
    }
    json_t *next = json_null();
    if (l.more && l.n) {
        const char *last = l.items[l.n - 1].name;
        size_t cap = 4 * (strlen(last) / 3 + 1) + 1;
        char *enc = xmalloc(cap);
        crypto_b64url_encode((const unsigned char *)last, strlen(last), enc, cap);
        next = json_string(enc);
        free(enc);
    }
    tree_list_free(&l);
    return resp_json(rs, MHD_HTTP_OK, json_pack("{s:o, s:o}", "items", items, "next_cursor", next));
}

/*
 * A single range of Range (RFC 9110 14.1.2): "bytes=a-b", "bytes=a-",
 * "bytes=-n". 1 with [*from, *to] inside size, 0 to send the whole file
 * (no header, several ranges, another unit), -1 when unsatisfiable.
 */
static int parse_range(const char *h, uint64_t size, uint64_t *from, uint64_t *to)
{
    if (!h || strncmp(h, "bytes=", 6) != 0 || strchr(h, ','))
        return 0;
    const char *p = h + 6;
    char *end;
    if (*p == '-') {
        if (p[1] < '0' || p[1] > '9')
            return 0;
        uint64_t n = strtoull(p + 1, &end, 10);
        if (*end || n == 0)
            return n == 0 && !*end ? -1 : 0;
        if (size == 0)
            return -1;
        *from = n >= size ? 0 : size - n;
        *to = size - 1;
        return 1;
    }
    if (*p < '0' || *p > '9')
        return 0;
    uint64_t a = strtoull(p, &end, 10);
    if (*end != '-')
        return 0;
    p = end + 1;
    uint64_t b = size ? size - 1 : 0;
    if (*p) {
        if (*p < '0' || *p > '9')
            return 0;
        b = strtoull(p, &end, 10);
        if (*end || b < a)
            return 0;
    }
    if (a >= size)
        return -1;
    *from = a;
    *to = b >= size ? size - 1 : b;
    return 1;
}

/* Content-Disposition naming the file, for browsers (RFC 6266, RFC 8187). */
static void disposition(struct resp *rs, const char *rel)
{
    const char *base = strrchr(rel, '/');
    base = base ? base + 1 : rel;
    struct sbuf sb = SBUF_INIT;
    sbuf_puts(&sb, "attachment; filename=\"");
    for (const char *p = base; *p; p++) {
        char c = '_'; /* the ASCII name for browsers that read no filename* */
        if (*p >= 0x20 && *p < 0x7f && *p != '"' && *p != '\\')
            c = *p;
        sbuf_putc(&sb, c);
    }
    sbuf_puts(&sb, "\"; filename*=UTF-8''");
    for (const unsigned char *p = (const unsigned char *)base; *p; p++) {
        if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
            strchr("!#$&+-.^_`|~", *p))
            sbuf_putc(&sb, (char)*p);
        else
            sbuf_printf(&sb, "%%%02X", *p);
    }
    resp_header(rs, "Content-Disposition", sbuf_str(&sb));
    sbuf_free(&sb);
}

static int send_file(struct req *rq, struct resp *rs, int dirfd, const char *rel, const char *label,
                     bool single_link)
{
    struct stat st;
    int fd = tree_open_file(dirfd, rel, &st);
    if (fd < 0)
        return files_errno_problem(rs, errno, label, rel);
    if (single_link && st.st_nlink != 1) {
        close(fd);
        return files_errno_problem(rs, EMLINK, label, rel);
    }
    uint64_t size = (uint64_t)st.st_size, from = 0, to = size ? size - 1 : 0;
    int r = parse_range(rq->range, size, &from, &to);
    char cr[96];
    if (r < 0) {
        close(fd);
        snprintf(cr, sizeof cr, "bytes */%" PRIu64, size);
        resp_header(rs, "Content-Range", cr);
        return api_problem(rs, PROBLEM_FILES_RANGE,
                           json_pack("{s:s, s:I}", "range", rq->range, "size", (json_int_t)size));
    }
    rs->status = r ? MHD_HTTP_PARTIAL_CONTENT : MHD_HTTP_OK;
    rs->file = (struct resp_file){.set = true, .fd = fd, .offset = from,
                                  .length = size ? to - from + 1 : 0};
    rs->content_type = "application/octet-stream";
    if (r) {
        snprintf(cr, sizeof cr, "bytes %" PRIu64 "-%" PRIu64 "/%" PRIu64, from, to, size);
        resp_header(rs, "Content-Range", cr);
    }
    resp_header(rs, "Accept-Ranges", "bytes");
    char lm[64];
    struct tm tm;
    gmtime_r(&st.st_mtim.tv_sec, &tm);
    strftime(lm, sizeof lm, "%a, %d %b %Y %H:%M:%S GMT", &tm);
    resp_header(rs, "Last-Modified", lm);
    disposition(rs, rel);
    return 0;
}

int files_serve(struct req *rq, struct resp *rs, int dirfd, const char *rel, const char *label,
                bool single_link)
{
    struct stat st;
    if (tree_stat(dirfd, rel, &st) != 0)
        return files_errno_problem(rs, errno, label, rel);
    if (S_ISDIR(st.st_mode))
        return list_dir(rq, rs, dirfd, rel, label);
    if (!S_ISREG(st.st_mode))
        return files_errno_problem(rs, EINVAL, label, rel);
    return send_file(rq, rs, dirfd, rel, label, single_link);
}

int api_files_get(struct req *rq, struct resp *rs)
{
    struct files_ctx fc;
    int e = files_resolve(rq, rs, false, true, &fc);
    if (e)
        return e;
    struct fsid_saved saved;
    if (fsid_enter(fc.own.uid, fc.own.gid, &saved) != 0) {
        e = unavailable(rs, errno);
    } else {
        e = files_serve(rq, rs, fc.fd, fc.rel, fc.label, false);
        fsid_leave(&saved);
    }
    files_ctx_close(&fc);
    return e;
}

/* The audit record of a change: which space, which path, and what else. */
static void audit_change(struct resp *rs, const struct files_ctx *fc, json_t *details)
{
    char *id = xasprintf("%s/%s%s%s", fc->sp.tenant, fc->label, fc->rel[0] ? "/" : "", fc->rel);
    json_object_set_new(details, "space", json_string(fc->label));
    json_object_set_new(details, "path", json_string(fc->rel));
    resp_audit(rs, "file", id, details);
    free(id);
}

static int make_dir(struct resp *rs, struct files_ctx *fc)
{
    if (!fc->rel[0]) /* a dataset is made by making its root; every other space exists */
        return files_errno_problem(rs, EEXIST, fc->label, "");
    if (tree_mkdir(fc->fd, fc->rel) != 0)
        return files_errno_problem(rs, errno, fc->label, fc->rel);
    struct stat st;
    if (tree_stat(fc->fd, fc->rel, &st) != 0)
        return files_errno_problem(rs, errno, fc->label, fc->rel);
    const char *base = strrchr(fc->rel, '/');
    audit_change(rs, fc, json_object());
    return resp_json(rs, MHD_HTTP_CREATED,
                     json_pack("{s:s, s:s, s:i, s:o}", "name", base ? base + 1 : fc->rel, "type",
                               "dir", "size", 0, "mtime", rfc3339(st.st_mtim)));
}

/* The "to" of a move: a path in the same space. */
static int move_target(struct req *rq, struct resp *rs, const char **to)
{
    json_error_t jerr;
    if (!rq->body || !rq->body_len)
        return api_problem(rs, PROBLEM_BODY_REQUIRED, NULL);
    json_decref(rq->json);
    rq->json = json_loadb(rq->body, rq->body_len, JSON_REJECT_DUPLICATES, &jerr);
    if (!json_is_object(rq->json))
        return api_problem(rs, rq->json ? PROBLEM_BODY_NOT_OBJECT : PROBLEM_JSON_MALFORMED,
                           rq->json ? NULL
                                    : json_pack("{s:i, s:i, s:s}", "line", jerr.line, "column",
                                                jerr.column, "error", jerr.text));
    const char *k;
    json_t *v;
    json_object_foreach(rq->json, k, v) {
        if (strcmp(k, "to") != 0)
            api_field_problem(rs, k, PROBLEM_V_UNKNOWN_FIELD, NULL);
    }
    *to = json_string_value(json_object_get(rq->json, "to"));
    if (!json_object_get(rq->json, "to"))
        api_field_problem(rs, "to", PROBLEM_V_REQUIRED, NULL);
    else if (!*to || !(*to)[0] || !space_path_valid(*to))
        api_field_problem(rs, "to", PROBLEM_FILES_PATH, NULL);
    return rs->err.nfields ? api_fail_fields(rs) : 0;
}

static int move(struct req *rq, struct resp *rs, struct files_ctx *fc)
{
    const char *to = NULL;
    int e = move_target(rq, rs, &to);
    if (e)
        return e;
    if (!fc->rel[0])
        return api_problem(rs, PROBLEM_FILES_SPACE_ROOT, json_pack("{s:s}", "space", fc->label));
    size_t n = strlen(fc->rel);
    if (strncmp(to, fc->rel, n) == 0 && to[n] == '/')
        return api_problem(rs, PROBLEM_FILES_MOVE_INTO_ITSELF, NULL);
    if (tree_move(fc->fd, fc->rel, to) != 0) {
        int err = errno;
        /* the destination's problems name the destination */
        return files_errno_problem(rs, err == ENOTEMPTY ? EEXIST : err, fc->label,
                                   err == EEXIST || err == ENOTEMPTY ? to : fc->rel);
    }
    const char *base = strrchr(to, '/');
    audit_change(rs, fc, json_pack("{s:s}", "to", to));
    return resp_json(rs, MHD_HTTP_OK,
                     json_pack("{s:s, s:s}", "name", base ? base + 1 : to, "path", to));
}

int api_files_post(struct req *rq, struct resp *rs)
{
    const char *op = req_query(rq, "op");
    if (!op || (strcmp(op, "mkdir") != 0 && strcmp(op, "move") != 0)) {
        api_field_problem(rs, "op", op ? PROBLEM_V_ONE_OF : PROBLEM_V_REQUIRED,
                          op ? json_pack("{s:s}", "allowed", "mkdir, move") : NULL);
        return api_fail_fields(rs);
    }
    bool mkdir_op = strcmp(op, "mkdir") == 0;
    struct files_ctx fc;
    const char *kind = req_param(rq, "kind"), *path = req_param(rq, "path");
    if (!kind || !path)
        return api_problem(rs, PROBLEM_FILES_SPACE_KIND, NULL);
    bool dataset_root = mkdir_op && !path[0] && strcmp(kind, "datasets") == 0;
    int e = files_resolve(rq, rs, true, !dataset_root, &fc);
    if (mkdir_op && !path[0]) {
        /* making a dataset's root makes the dataset; every other space exists */
        if (!e) {
            files_ctx_close(&fc);
            return files_errno_problem(rs, EEXIST, fc.label, "");
        }
        if (rs->err.problem != PROBLEM_FILES_SPACE_NOT_FOUND || fc.sp.kind != SPACE_DATASET)
            return e;
        resp_free(rs);
        e = files_resolve(rq, rs, true, true, &fc);
        if (!e) {
            audit_change(rs, &fc, json_object());
            e = resp_json(rs, MHD_HTTP_CREATED,
                          json_pack("{s:s, s:s, s:i}", "name", fc.sp.name, "type", "dir", "size",
                                    0));
        }
        files_ctx_close(&fc);
        return e;
    }
    if (e)
        return e;
    struct fsid_saved saved;
    if (fsid_enter(fc.own.uid, fc.own.gid, &saved) != 0) {
        e = unavailable(rs, errno);
    } else {
        e = mkdir_op ? make_dir(rs, &fc) : move(rq, rs, &fc);
        fsid_leave(&saved);
    }
    files_ctx_close(&fc);
    return e;
}

/* A whole dataset goes: removed as root from the tenant's datasets folder
 * (root's), without following a link anywhere in it. */
static int remove_dataset(struct req *rq, struct resp *rs, struct files_ctx *fc, bool recursive)
{
    char rel[SPACE_NAME_MAX * 2 + 16];
    snprintf(rel, sizeof rel, "%s/datasets", fc->sp.tenant);
    int root = open_root(rq->cfg->storage_root);
    int dfd = root >= 0 ? fsat_open(root, rel, O_RDONLY | O_DIRECTORY, 0) : -1;
    int err = errno;
    if (root >= 0)
        close(root);
    if (dfd < 0)
        return unavailable(rs, err);
    int rc = recursive ? rmtree_at(dfd, fc->sp.name) : unlinkat(dfd, fc->sp.name, AT_REMOVEDIR);
    err = errno;
    close(dfd);
    if (rc != 0)
        return files_errno_problem(rs, err, fc->label, "");
    audit_change(rs, fc, json_pack("{s:b}", "recursive", recursive));
    rs->status = MHD_HTTP_NO_CONTENT;
    return 0;
}

int api_files_delete(struct req *rq, struct resp *rs)
{
    const char *r = req_query(rq, "recursive");
    if (r && strcmp(r, "true") != 0 && strcmp(r, "false") != 0) {
        api_field_problem(rs, "recursive", PROBLEM_V_TYPE_BOOL, NULL);
        return api_fail_fields(rs);
    }
    bool recursive = r && strcmp(r, "true") == 0;
    struct files_ctx fc;
    int e = files_resolve(rq, rs, true, false, &fc);
    if (e)
        return e;
    if (!fc.rel[0]) {
        e = fc.sp.kind == SPACE_DATASET
                ? remove_dataset(rq, rs, &fc, recursive)
                : api_problem(rs, PROBLEM_FILES_SPACE_ROOT, json_pack("{s:s}", "space", fc.label));
        files_ctx_close(&fc);
        return e;
    }
    struct fsid_saved saved;
    if (fsid_enter(fc.own.uid, fc.own.gid, &saved) != 0) {
        e = unavailable(rs, errno);
    } else {
        if (tree_remove(fc.fd, fc.rel, recursive) != 0)
            e = files_errno_problem(rs, errno, fc.label, fc.rel);
        fsid_leave(&saved);
    }
    if (!e) {
        audit_change(rs, &fc, json_pack("{s:b}", "recursive", recursive));
        rs->status = MHD_HTTP_NO_CONTENT;
    }
    files_ctx_close(&fc);
    return e;
}
