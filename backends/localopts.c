/* localopts.c - a local cluster's options (see localopts.h). */
#include "localopts.h"

#include "../lib/gputype.h"

#include "../lib/xalloc.h"
#include "cgroup.h"
#include "../lib/credref.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_GPU_TYPES 16
#define MAX_GPUS_PER_TYPE 64
#define MAX_PATHS 16
#define MAX_PATH_LEN 512

static bool int_option(json_t *o, const char *name, long long min, long long max, char *err,
                       size_t errsz)
{
    json_t *v = json_object_get(o, name);
    if (!v)
        return true;
    if (!json_is_integer(v) || json_integer_value(v) < min || json_integer_value(v) > max) {
        snprintf(err, errsz, "options.%s must be an integer from %lld to %lld", name, min, max);
        return false;
    }
    return true;
}

/* An absolute path without "..", "//" or control characters. */
static bool path_ok(const char *p)
{
    if (!p || p[0] != '/' || strlen(p) > MAX_PATH_LEN || strstr(p, "//"))
        return false;
    for (const char *s = p; *s; s++)
        if ((unsigned char)*s < 0x20 || *s == 0x7f)
            return false;
    for (const char *s = p; (s = strstr(s, "/..")) != NULL; s += 3)
        if (s[3] == '/' || s[3] == '\0')
            return false;
    return true;
}

static bool path_option(json_t *o, const char *name, char *err, size_t errsz)
{
    json_t *v = json_object_get(o, name);
    if (!v || (json_is_string(v) && path_ok(json_string_value(v))))
        return true;
    snprintf(err, errsz, "options.%s must be an absolute path of at most %d bytes without \"..\"",
             name, MAX_PATH_LEN);
    return false;
}

/* options.name, if there: an array of at most MAX_PATHS absolute paths. */
static bool paths_option(json_t *o, const char *name, char *err, size_t errsz)
{
    json_t *a = json_object_get(o, name), *v;
    size_t i;
    if (!a)
        return true;
    bool ok = json_is_array(a) && json_array_size(a) <= MAX_PATHS;
    json_array_foreach(a, i, v)
        ok = ok && json_is_string(v) && path_ok(json_string_value(v)) &&
             strcmp(json_string_value(v), "/") != 0;
    if (!ok)
        snprintf(err, errsz, "options.%s must be an array of at most %d absolute paths "
                             "(not \"/\", no \"..\")",
                 name, MAX_PATHS);
    return ok;
}

static bool enum_option(json_t *o, const char *name, const char *const *values, size_t n,
                        const char *message, char *err, size_t errsz)
{
    json_t *v = json_object_get(o, name);
    if (!v)
        return true;
    for (size_t i = 0; json_is_string(v) && i < n; i++)
        if (strcmp(json_string_value(v), values[i]) == 0)
            return true;
    snprintf(err, errsz, "options.%s must be %s", name, message);
    return false;
}

static bool gpus_option(json_t *o, char *err, size_t errsz)
{
    json_t *gpus = json_object_get(o, "gpus"), *v;
    const char *key;
    if (gpus && !json_is_object(gpus)) {
        snprintf(err, errsz, "options.gpus must be an object of GPU type to count");
        return false;
    }
    if (json_object_size(gpus) > MAX_GPU_TYPES) {
        snprintf(err, errsz, "options.gpus may name at most %d GPU types", MAX_GPU_TYPES);
        return false;
    }
    json_object_foreach(gpus, key, v) {
        if (!gputype_valid(key)) {
            snprintf(err, errsz, "options.gpus: \"%.40s\" is not a GPU type (^[a-z0-9][a-z0-9._-]{0,31}$)",
                     key);
            return false;
        }
        if (!json_is_integer(v) || json_integer_value(v) < 0 ||
            json_integer_value(v) > MAX_GPUS_PER_TYPE) {
            snprintf(err, errsz, "options.gpus.%s must be an integer from 0 to %d", key,
                     MAX_GPUS_PER_TYPE);
            return false;
        }
    }
    return true;
}

static bool uid_range_option(json_t *o, char *err, size_t errsz)
{
    json_t *r = json_object_get(o, "uid_range");
    if (!r)
        return true;
    json_t *first = json_object_get(r, "first"), *count = json_object_get(r, "count");
    json_int_t f = json_integer_value(first), n = json_integer_value(count);
    /* compared without adding: first + count could overflow */
    if (!json_is_object(r) || json_object_size(r) != 2 || !json_is_integer(first) ||
        !json_is_integer(count) || f < 1000 || f > 0x7fffffffLL || n < 1 ||
        n > 0x7fffffffLL - f) {
        snprintf(err, errsz, "options.uid_range must be {\"first\": N, \"count\": M} with N >= "
                             "1000 and N + M below 2^31");
        return false;
    }
    return true;
}

bool localopts_check(json_t *o, char *err, size_t errsz)
{
    static const char *const known[] = {
        "gpus",           "cpus",          "memory_gib",     "max_time_limit_minutes",
        "workdir",        "node",          "sandbox",        "writable_paths",
        "hidden_paths",   "network",       "uid_range",      "device_dir",
        "cgroup_parent",  "pids_max",      "image_cache",    "image_cache_gib",
        "pull_timeout_seconds"};
    const char *key;
    json_t *v;
    json_object_foreach(o, key, v) {
        bool ok = false;
        for (size_t i = 0; i < sizeof known / sizeof known[0]; i++)
            ok |= strcmp(key, known[i]) == 0;
        if (!ok) {
            snprintf(err, errsz, "options.%.64s is not an option of the local backend", key);
            return false;
        }
    }
    json_t *node = json_object_get(o, "node");
    if (node && (!json_is_string(node) || !backend_node_name_valid(json_string_value(node)))) {
        snprintf(err, errsz, "options.node must be a host name (letters, digits, '.', '_', '-'; "
                             "at most 253)");
        return false;
    }
    /* "auto" and "required" name the sandbox of earlier versions: both mean it now */
    static const char *const modes[] = {"bwrap", "unconfined", "auto", "required"};
    static const char *const networks[] = {"none", "outbound"};
    return gpus_option(o, err, errsz) && path_option(o, "workdir", err, errsz) &&
           enum_option(o, "sandbox", modes, 4,
                       "\"bwrap\" (the default) or \"unconfined\" (no sandbox at all)", err,
                       errsz) &&
           enum_option(o, "network", networks, 2, "\"none\" (the default) or \"outbound\"", err,
                       errsz) &&
           paths_option(o, "writable_paths", err, errsz) &&
           paths_option(o, "hidden_paths", err, errsz) && uid_range_option(o, err, errsz) &&
           path_option(o, "device_dir", err, errsz) && path_option(o, "cgroup_parent", err, errsz) &&
           path_option(o, "image_cache", err, errsz) &&
           int_option(o, "cpus", 1, 100000, err, errsz) &&
           int_option(o, "memory_gib", 1, 1000000, err, errsz) &&
           int_option(o, "max_time_limit_minutes", 1, 525600, err, errsz) &&
           int_option(o, "pids_max", 64, 4194304, err, errsz) &&
           int_option(o, "image_cache_gib", 1, 1000000, err, errsz) &&
           int_option(o, "pull_timeout_seconds", 10, 86400, err, errsz);
}

bool localopts_unconfined(const json_t *o)
{
    const char *m = json_string_value(json_object_get(o, "sandbox"));
    return m && strcmp(m, "unconfined") == 0;
}

char *localopts_workdir(const struct backend_cluster *c)
{
    const char *wd = json_string_value(json_object_get(c->options, "workdir"));
    return wd ? xstrdup(wd) : xasprintf("%s/jobs", c->data_dir);
}

static long long uid_first(const json_t *o)
{
    const json_t *r = json_object_get(o, "uid_range");
    return r ? json_integer_value(json_object_get(r, "first")) : LOCALOPTS_UID_FIRST;
}

long long localopts_share_gid(const json_t *o)
{
    return geteuid() == 0 ? uid_first(o) : -1; /* no tenant has number 0 */
}

long long localopts_uid(const json_t *o, long long number, char *err, size_t errsz)
{
    if (geteuid() != 0)
        return -1;
    const json_t *r = json_object_get(o, "uid_range");
    long long first = uid_first(o);
    long long count = r ? json_integer_value(json_object_get(r, "count")) : LOCALOPTS_UID_COUNT;
    if (number < 1 || number > count - 1) {
        snprintf(err, errsz, "tenant number %lld is beyond options.uid_range (%lld uids from %lld)",
                 number, count, first);
        return -2;
    }
    return first + number;
}

static void add_paths(json_t *a, const json_t *options, const char *name)
{
    size_t i;
    json_t *v;
    json_array_foreach(json_object_get(options, name), i, v)
        json_array_append_new(a, json_string(json_string_value(v)));
}

json_t *localopts_sandbox(const struct backend_cluster *c)
{
    const json_t *o = c->options;
    json_t *hidden = json_array(), *writable = json_array();
    /* aidcd's own files, in case an operator's writable path or /opt holds them */
    char *wd = localopts_workdir(c);
    json_array_append_new(hidden, json_string(c->data_dir));
    json_array_append_new(hidden, json_string(wd));
    free(wd);
    const char *own[8];
    size_t n = credref_own_paths(own, sizeof own / sizeof own[0]);
    for (size_t i = 0; i < n; i++)
        json_array_append_new(hidden, json_string(own[i]));
    json_array_append_new(hidden, json_string("/etc/aidc"));
    /* the storage spaces: a job sees its own at their fixed paths, never the tree they are
     * in, though an operator's writable path, or /opt, hold it */
    if (c->storage_root)
        json_array_append_new(hidden, json_string(c->storage_root));
    add_paths(hidden, o, "hidden_paths");
    add_paths(writable, o, "writable_paths");
    char parent[512], host[256] = "job";
    const char *cp = json_string_value(json_object_get(o, "cgroup_parent"));
    if (cp)
        snprintf(parent, sizeof parent, "%s", cp);
    else
        cgroup_default_parent(parent, sizeof parent);
    const char *node = json_string_value(json_object_get(o, "node"));
    if (node)
        snprintf(host, sizeof host, "%s", node);
    else if (gethostname(host, sizeof host) != 0 || !backend_node_name_valid(host))
        snprintf(host, sizeof host, "job");
    const char *cache = json_string_value(json_object_get(o, "image_cache"));
    char *cache_dir = cache ? xstrdup(cache) : xasprintf("%s/images", c->data_dir);
    const json_t *gib = json_object_get(o, "image_cache_gib"), *pull =
                                                                  json_object_get(o, "pull_timeout_seconds");
    const json_t *pids = json_object_get(o, "pids_max");
    const char *network = json_string_value(json_object_get(o, "network"));
    const char *dev = json_string_value(json_object_get(o, "device_dir"));
    json_t *s = json_pack(
        "{s:s, s:s, s:s, s:o, s:o, s:s, s:I, s:s, s:I, s:I, s:s, s:I}", "mode",
        localopts_unconfined(o) ? "unconfined" : "bwrap", "network", network ? network : "none",
        "device_dir", dev ? dev : "/dev", "hidden", hidden, "writable", writable, "cgroup_parent",
        parent, "pids_max", (json_int_t)(pids ? json_integer_value(pids) : LOCALOPTS_PIDS_MAX),
        "image_cache", cache_dir, "image_cache_bytes",
        (json_int_t)((gib ? json_integer_value(gib) : LOCALOPTS_CACHE_GIB) << 30),
        "pull_timeout_seconds",
        (json_int_t)(pull ? json_integer_value(pull) : LOCALOPTS_PULL_SECONDS), "hostname", host,
        "share_gid", (json_int_t)localopts_share_gid(o));
    free(cache_dir);
    return s;
}

size_t localopts_gpu_types(const json_t *options, const char **types, size_t max)
{
    size_t n = 0;
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)json_object_get(options, "gpus"), key, v) {
        if (n == max)
            break;
        size_t k = n++;
        while (k > 0 && strcmp(types[k - 1], key) > 0) {
            types[k] = types[k - 1];
            k--;
        }
        types[k] = key;
    }
    return n;
}
