/* shimmount.c - a local job's storage spaces, opened by its shim (see shimmount.h). */
#include "shimmount.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static long long int_of(const json_t *o, const char *key)
{
    const json_t *v = json_object_get(o, key);
    return json_is_integer(v) ? json_integer_value(v) : -1;
}

/*
 * Whether the open space is the job's: a project or home its uid's, a
 * dataset root's with the job's group (read-only to it); aidcd not root,
 * everything the shim's own user's. Else err says whose it is.
 */
static bool owned(const struct jobmount *m, int fd, bool drop, uid_t uid, gid_t gid, char *err,
                  size_t errsz)
{
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISDIR(st.st_mode)) {
        snprintf(err, errsz, "the %s space %s is not a directory", jobmount_kind_name(m->space.kind),
                 m->rel);
        return false;
    }
    bool ok;
    if (!drop)
        ok = st.st_uid == geteuid();
    else if (m->space.kind == SPACE_DATASET) /* the files API makes it the tenant's; an
                                               * operator may give it to root and the group */
        ok = st.st_uid == uid || (st.st_uid == 0 && st.st_gid == gid);
    else
        ok = st.st_uid == uid;
    if (!ok)
        snprintf(err, errsz,
                 "the %s space %s belongs to %u:%u, not to the job's %u:%u (AIDC_STORAGE_UID_FIRST "
                 "must equal the cluster's options.uid_range.first)",
                 jobmount_kind_name(m->space.kind), m->rel, (unsigned)st.st_uid,
                 (unsigned)st.st_gid, drop ? (unsigned)uid : (unsigned)geteuid(),
                 drop ? (unsigned)gid : (unsigned)getegid());
    return ok;
}

int shimmount_open(const json_t *spec, bool drop, uid_t uid, gid_t gid, struct shimmount *out,
                   char *err, size_t errsz)
{
    memset(out, 0, sizeof *out);
    for (size_t i = 0; i < JOBMOUNT_MAX; i++)
        out->fd[i] = -1;
    const json_t *st = json_object_get(spec, "storage");
    const json_t *mounts = json_object_get(st, "mounts");
    if (!json_is_array(mounts) || json_array_size(mounts) == 0)
        return 0;
    int n = jobmount_parse(mounts, json_string_value(json_object_get(spec, "tenant")),
                           json_string_value(json_object_get(spec, "project")),
                           json_string_value(json_object_get(spec, "user")), out->m, err, errsz);
    const char *root = json_string_value(json_object_get(st, "root"));
    if (n < 0)
        return -1;
    if (!root || root[0] != '/' || strlen(root) >= sizeof out->root) {
        snprintf(err, errsz, "the job mounts storage spaces, but no storage root was given");
        return -1;
    }
    snprintf(out->root, sizeof out->root, "%s", root);
    struct space_owner own = {int_of(st, "uid"), int_of(st, "gid")};
    int rootfd = jobmount_root_open(root, false);
    if (rootfd < 0) {
        snprintf(err, errsz, "cannot open the storage root %.200s: %s", root, strerror(errno));
        return -1;
    }
    int rc = 0;
    for (int i = 0; i < n && rc == 0; i++) {
        const struct jobmount *m = &out->m[i];
        /* a project's space or a home missing (removed since the submission) is made
         * again; a dataset comes only from the files API */
        int fd = space_open(rootfd, &m->space, &own, m->space.kind != SPACE_DATASET);
        if (fd < 0) {
            snprintf(err, errsz, "cannot open the %s space %s: %s",
                     jobmount_kind_name(m->space.kind), m->rel,
                     errno == ELOOP || errno == EXDEV || errno == ENOTDIR
                         ? "a link or a file stands where it should be"
                         : strerror(errno));
            rc = -1;
            break;
        }
        out->fd[i] = fd;
        out->n = (size_t)i + 1;
        if (!owned(m, fd, drop, uid, gid, err, errsz))
            rc = -1;
    }
    close(rootfd);
    if (rc)
        shimmount_close(out);
    else
        out->n = (size_t)n;
    return rc;
}

void shimmount_close(struct shimmount *s)
{
    for (size_t i = 0; i < JOBMOUNT_MAX; i++) {
        if (s->fd[i] > 0) /* 0 is a zeroed one's: the shim's stdin is /dev/null */
            close(s->fd[i]);
        s->fd[i] = -1;
    }
    s->n = 0;
}

json_t *shimmount_env(const struct shimmount *s, bool sandboxed, char *err, size_t errsz)
{
    json_t *env = json_object();
    if (sandboxed)
        jobmount_env(s->m, s->n, NULL, env);
    else if (!jobmount_host(s->m, s->n, s->root, env, NULL, 0, err, errsz)) {
        json_decref(env);
        return NULL;
    }
    return env;
}
