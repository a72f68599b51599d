/* jobmount.c - the storage spaces a job mounts (see jobmount.h). */
#include "jobmount.h"

#include "../lib/fsat.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

static const char *const kind_names[] = {"project", "home", "dataset"};

const char *jobmount_kind_name(enum space_kind k)
{
    return kind_names[k];
}

static bool kind_of(const char *s, enum space_kind *k)
{
    for (size_t i = 0; s && i < sizeof kind_names / sizeof *kind_names; i++) {
        if (strcmp(s, kind_names[i]) == 0) {
            *k = (enum space_kind)i;
            return true;
        }
    }
    return false;
}

const char *jobmount_problem_text(enum jobmount_problem p)
{
    switch (p) {
    case JOBMOUNT_NOT_ARRAY:
        return "must be an array of mounts";
    case JOBMOUNT_TOO_MANY:
        return "has more mounts than a job may have";
    case JOBMOUNT_NOT_OBJECT:
        return "must be an object";
    case JOBMOUNT_UNKNOWN_KEY:
        return "is not a member of a mount (space, name, read_only)";
    case JOBMOUNT_SPACE_MISSING:
        return "is required";
    case JOBMOUNT_SPACE_INVALID:
        return "must be project, home or dataset";
    case JOBMOUNT_NAME_MISSING:
        return "is required for a dataset";
    case JOBMOUNT_NAME_INVALID:
        return "is not a dataset name";
    case JOBMOUNT_NAME_NOT_ALLOWED:
        return "names the job's own project or home: no name is taken";
    case JOBMOUNT_READ_ONLY_TYPE:
        return "must be true or false";
    case JOBMOUNT_DATASET_WRITABLE:
        return "a dataset is mounted read-only";
    case JOBMOUNT_DUPLICATE:
        return "mounts a space mounted already";
    }
    return "is not valid";
}

/* Check one item; its kind and dataset name (NULL) when it names a space. */
static bool check_item(const json_t *item, long i, jobmount_report_fn report, void *arg,
                       enum space_kind *kind, const char **name)
{
    *name = NULL;
    if (!json_is_object(item)) {
        report(arg, JOBMOUNT_NOT_OBJECT, i, NULL, -1);
        return false;
    }
    bool ok = true;
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)item, key, v) {
        if (strcmp(key, "space") != 0 && strcmp(key, "name") != 0 &&
            strcmp(key, "read_only") != 0) {
            report(arg, JOBMOUNT_UNKNOWN_KEY, i, key, -1);
            ok = false;
        }
    }
    const json_t *space = json_object_get(item, "space"), *nm = json_object_get(item, "name");
    const json_t *ro = json_object_get(item, "read_only");
    bool known = kind_of(json_string_value(space), kind);
    if (!space)
        report(arg, JOBMOUNT_SPACE_MISSING, i, "space", -1);
    else if (!known)
        report(arg, JOBMOUNT_SPACE_INVALID, i, "space", -1);
    if (ro && !json_is_boolean(ro)) {
        report(arg, JOBMOUNT_READ_ONLY_TYPE, i, "read_only", -1);
        ok = false;
    }
    if (!known)
        return false;
    if (*kind != SPACE_DATASET) {
        if (nm) {
            report(arg, JOBMOUNT_NAME_NOT_ALLOWED, i, "name", -1);
            ok = false;
        }
        return ok;
    }
    if (json_is_false(ro)) {
        report(arg, JOBMOUNT_DATASET_WRITABLE, i, "read_only", -1);
        ok = false;
    }
    if (!nm) {
        report(arg, JOBMOUNT_NAME_MISSING, i, "name", -1);
        return false;
    }
    if (!space_dataset_name_valid(json_string_value(nm))) {
        report(arg, JOBMOUNT_NAME_INVALID, i, "name", -1);
        return false;
    }
    *name = json_string_value(nm);
    return ok;
}

bool jobmount_check(const json_t *mounts, jobmount_report_fn report, void *arg)
{
    if (!mounts || json_is_null(mounts))
        return true;
    if (!json_is_array(mounts)) {
        report(arg, JOBMOUNT_NOT_ARRAY, -1, NULL, -1);
        return false;
    }
    bool ok = true;
    if (json_array_size(mounts) > JOBMOUNT_MAX) {
        report(arg, JOBMOUNT_TOO_MANY, -1, NULL, -1);
        return false; /* the items of an array that long are not looked at */
    }
    enum space_kind kinds[JOBMOUNT_MAX];
    const char *names[JOBMOUNT_MAX];
    bool named[JOBMOUNT_MAX];
    size_t i;
    json_t *item;
    json_array_foreach(mounts, i, item) {
        bool good = check_item(item, (long)i, report, arg, &kinds[i], &names[i]);
        /* a space is what its kind and name say, whatever else the item holds */
        named[i] = json_is_object(item) && kind_of(json_string_value(json_object_get(item, "space")),
                                                   &kinds[i]) &&
                   (kinds[i] != SPACE_DATASET || names[i]);
        ok &= good;
        for (size_t k = 0; named[i] && k < i; k++) {
            if (named[k] && kinds[k] == kinds[i] &&
                (kinds[i] != SPACE_DATASET || strcmp(names[k], names[i]) == 0)) {
                report(arg, JOBMOUNT_DUPLICATE, (long)i, NULL, (long)k);
                ok = false;
                break;
            }
        }
    }
    return ok;
}

struct first_problem {
    char *err;
    size_t errsz;
    bool seen;
};

static void note_first(void *arg, enum jobmount_problem p, long index, const char *key, long other)
{
    (void)other;
    struct first_problem *f = arg;
    if (f->seen)
        return;
    f->seen = true;
    char at[96] = "mounts";
    if (index >= 0)
        snprintf(at, sizeof at, "mounts[%ld]%s%.40s", index, key ? "." : "", key ? key : "");
    snprintf(f->err, f->errsz, "%s: %s", at, jobmount_problem_text(p));
}

/* sp of kind in tenant named name, its target and relpath; false when a name is no space's */
static bool fill(struct jobmount *m, enum space_kind kind, const char *tenant, const char *name)
{
    memset(m, 0, sizeof *m);
    char path[SPACE_NAME_MAX * 2 + 32];
    int n = snprintf(path, sizeof path, "%s/%s", space_kind_dir(kind), name ? name : "");
    const char *rest = NULL;
    if (n < 0 || (size_t)n >= sizeof path || space_parse(tenant, path, &m->space, &rest) != 0 ||
        rest[0] != '\0' || m->space.kind != kind || !space_relpath(&m->space, m->rel, sizeof m->rel))
        return false;
    if (kind == SPACE_PROJECT)
        n = snprintf(m->target, sizeof m->target, "%s", JOBMOUNT_PROJECT_PATH);
    else if (kind == SPACE_HOME)
        n = snprintf(m->target, sizeof m->target, "%s/%s", JOBMOUNT_HOMES_PATH, m->space.name);
    else
        n = snprintf(m->target, sizeof m->target, "%s/%s", JOBMOUNT_DATASETS_PATH, m->space.name);
    return n > 0 && (size_t)n < sizeof m->target;
}

int jobmount_parse(const json_t *mounts, const char *tenant, const char *project,
                   const char *user, struct jobmount *out, char *err, size_t errsz)
{
    struct first_problem f = {err, errsz, false};
    if (!jobmount_check(mounts, note_first, &f))
        return -1;
    size_t i, n = 0;
    json_t *item;
    json_array_foreach(mounts, i, item) {
        enum space_kind kind = SPACE_PROJECT;
        kind_of(json_string_value(json_object_get(item, "space")), &kind);
        const char *name = kind == SPACE_PROJECT ? project
                           : kind == SPACE_HOME  ? user
                                                 : json_string_value(json_object_get(item, "name"));
        if (!fill(&out[n], kind, tenant, name)) {
            snprintf(err, errsz, "mounts[%zu]: %s \"%.64s\" of tenant \"%.64s\" is no space's name",
                     i, jobmount_kind_name(kind), name ? name : "", tenant ? tenant : "");
            return -1;
        }
        out[n].read_only = kind == SPACE_DATASET || json_is_true(json_object_get(item, "read_only"));
        n++;
    }
    return (int)n;
}

void jobmount_env(const struct jobmount *m, size_t n, const char *root, json_t *env)
{
    char path[4096 + JOBMOUNT_REL_MAX];
    for (size_t i = 0; i < n; i++) {
        const char *var = m[i].space.kind == SPACE_PROJECT ? "AIDC_PROJECT_DIR"
                          : m[i].space.kind == SPACE_HOME  ? "AIDC_HOME_DIR"
                                                           : "AIDC_DATASETS_DIR";
        if (m[i].space.kind == SPACE_DATASET && root)
            snprintf(path, sizeof path, "%s/%s/%s", root, m[i].space.tenant,
                     space_kind_dir(SPACE_DATASET));
        else if (m[i].space.kind == SPACE_DATASET)
            snprintf(path, sizeof path, "%s", JOBMOUNT_DATASETS_PATH);
        else if (root)
            snprintf(path, sizeof path, "%s/%s", root, m[i].rel);
        else
            snprintf(path, sizeof path, "%s", m[i].target);
        json_object_set_new(env, var, json_string(path));
    }
}

bool jobmount_host(const struct jobmount *m, size_t n, const char *root, json_t *env, char *cwd,
                   size_t cwdsz, char *err, size_t errsz)
{
    for (size_t i = 0; i < n; i++) {
        if (m[i].read_only && m[i].space.kind != SPACE_DATASET) {
            snprintf(err, errsz, "the job works in the shared file system itself: its %s space "
                                 "cannot be mounted read-only there",
                     jobmount_kind_name(m[i].space.kind));
            return false;
        }
        if (m[i].space.kind == SPACE_PROJECT && cwd)
            snprintf(cwd, cwdsz, "%s/%s", root, m[i].rel);
    }
    jobmount_env(m, n, root, env);
    return true;
}

int jobmount_root_open(const char *root, bool create)
{
    if (!root || root[0] != '/') {
        errno = EINVAL;
        return -1;
    }
    int fd = fsat_opendir(root);
    if (fd >= 0 || errno != ENOENT || !create)
        return fd;
    if (mkdir(root, 0711) != 0 && errno != EEXIST)
        return -1;
    return fsat_opendir(root);
}
