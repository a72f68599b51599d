/* jobspec.c - checking a job submission (see jobspec.h). */
#include "jobspec.h"

#include "../lib/gputype.h"

#include "../lib/sbuf.h"
#include "../lib/xalloc.h"
#include "../server/validate.h"
#include "../storage/jobmount.h"

#include <stdlib.h>
#include <string.h>

bool jobspec_state_valid(const char *s)
{
    static const char *const states[] = {"queued",    "admitted", "pending",   "running",
                                         "succeeded", "failed",   "cancelled", "preempted"};
    for (size_t i = 0; i < sizeof states / sizeof states[0]; i++)
        if (strcmp(s, states[i]) == 0)
            return true;
    return false;
}

static bool is_priority(const char *s)
{
    return strcmp(s, "high") == 0 || strcmp(s, "normal") == 0 || strcmp(s, "low") == 0;
}

/* Printable text: no C0 or C1 control characters (names show in lists,
 * logs and terminals, where U+009B starts an escape sequence). */
static bool is_printable(const char *s)
{
    for (const unsigned char *p = (const unsigned char *)s; *p; p++)
        if (*p < 0x20 || *p == 0x7f || (p[0] == 0xc2 && p[1] >= 0x80 && p[1] <= 0x9f))
            return false;
    return true;
}

static bool has_text(const char *s)
{
    for (; *s; s++)
        if (*s != ' ' && *s != '\t' && *s != '\n' && *s != '\r')
            return true;
    return false;
}

static const struct vfield fields[] = {
    {"project", V_STRING, V_REQUIRED, 0, 0, validate_slug, PROBLEM_V_SLUG},
    {"name", V_STRING, V_REQUIRED, 1, 200, is_printable, PROBLEM_V_PRINTABLE},
    {"image", V_STRING, V_NULLABLE, 1, 512, is_printable, PROBLEM_V_PRINTABLE},
    {"command", V_STRING_ARRAY, V_NULLABLE, 1, JOB_MAX_ARGS, NULL, 0},
    {"script", V_STRING, V_NULLABLE, 0, 0, NULL, 0},
    {"gpus", V_INT, 0, 0, JOB_MAX_GPUS, NULL, 0},
    {"gpu_type", V_STRING, V_NULLABLE, 0, 0, gputype_valid, PROBLEM_JOB_GPU_TYPE_PATTERN},
    {"cpus", V_INT, 0, 1, JOB_MAX_CPUS, NULL, 0},
    {"memory_gib", V_INT, 0, 1, JOB_MAX_MEMORY_GIB, NULL, 0},
    {"nodes", V_INT, 0, 1, JOB_MAX_NODES, NULL, 0},
    {"time_limit_minutes", V_INT, 0, 1, JOB_MAX_MINUTES, NULL, 0},
    {"priority", V_STRING, 0, 0, 0, is_priority, PROBLEM_JOB_PRIORITY},
    {"env", V_OBJECT, V_NULLABLE, 0, 0, NULL, 0},
    {"cluster", V_STRING, V_NULLABLE, 0, 0, validate_slug, PROBLEM_V_SLUG},
    {"mounts", V_ANY, V_NULLABLE, 0, 0, NULL, 0},     /* jobspec_check_mounts */
    {"array", V_ANY, V_NULLABLE, 0, 0, NULL, 0},      /* api/jobarray.c */
    {"depends_on", V_ANY, V_NULLABLE, 0, 0, NULL, 0}, /* api/jobarray.c */
};

static int int_or(const json_t *body, const char *name, int def)
{
    json_t *v = json_object_get(body, name);
    return json_is_integer(v) ? (int)json_integer_value(v) : def;
}

static bool env_name_valid(const char *k)
{
    size_t n = strlen(k);
    if (n < 1 || n > JOB_MAX_ENV_NAME ||
        !((k[0] >= 'A' && k[0] <= 'Z') || (k[0] >= 'a' && k[0] <= 'z') || k[0] == '_'))
        return false;
    for (size_t i = 1; i < n; i++)
        if (!((k[i] >= 'A' && k[i] <= 'Z') || (k[i] >= 'a' && k[i] <= 'z') ||
              (k[i] >= '0' && k[i] <= '9') || k[i] == '_'))
            return false;
    return true;
}

/* Variables the platform sets itself: a job may not pretend otherwise. */
static bool env_reserved(const char *k)
{
    return strncmp(k, "AIDC_", 5) == 0 || strcmp(k, "CUDA_VISIBLE_DEVICES") == 0 ||
           strcmp(k, "NVIDIA_VISIBLE_DEVICES") == 0;
}

static void check_env(const json_t *env, struct resp *rs)
{
    if (!json_is_object(env))
        return;
    if (json_object_size(env) > JOB_MAX_ENV) {
        api_field_problem(rs, "env", PROBLEM_JOB_ENV_TOO_MANY,
                          json_pack("{s:i, s:I}", "max", JOB_MAX_ENV, "count",
                                    (json_int_t)json_object_size(env)));
        return;
    }
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)env, k, v)
    {
        char field[JOB_MAX_ENV_NAME + 8];
        snprintf(field, sizeof field, "env.%.*s", JOB_MAX_ENV_NAME, k);
        if (!env_name_valid(k))
            api_field_problem(rs, "env", PROBLEM_JOB_ENV_NAME,
                              json_pack("{s:s%}", "name", k, sbuf_utf8_prefix(k, 64)));
        else if (env_reserved(k))
            api_field_problem(rs, field, PROBLEM_JOB_ENV_RESERVED, NULL);
        else if (!json_is_string(v))
            api_field_problem(rs, field, PROBLEM_V_TYPE_STRING, NULL);
        else if (strlen(json_string_value(v)) > JOB_MAX_ENV_VALUE)
            api_field_problem(rs, field, PROBLEM_V_BYTES_MAX,
                              json_pack("{s:i}", "max", JOB_MAX_ENV_VALUE));
    }
}

static void check_command(const json_t *cmd, struct resp *rs)
{
    if (!json_is_array(cmd))
        return;
    size_t i;
    json_t *v;
    json_array_foreach(cmd, i, v)
    {
        const char *s = json_string_value(v);
        if (s && strlen(s) > JOB_MAX_ARG) {
            api_field_problem(rs, "command", PROBLEM_JOB_COMMAND_ITEM_TOO_LONG,
                              json_pack("{s:I, s:i}", "index", (json_int_t)i, "max", JOB_MAX_ARG));
            return;
        }
    }
    const char *first = json_string_value(json_array_get(cmd, 0));
    if (first && !has_text(first))
        api_field_problem(rs, "command", PROBLEM_JOB_COMMAND_NO_PROGRAM, NULL);
}

struct mounts_report {
    struct resp *rs;
    size_t count;
};

/* One problem of the mounts as a field error: "mounts", "mounts[i]" or "mounts[i].key". */
static void mount_problem(void *arg, enum jobmount_problem p, long index, const char *key,
                          long other)
{
    struct mounts_report *m = arg;
    char field[96] = "mounts";
    if (index >= 0)
        snprintf(field, sizeof field, "mounts[%ld]%s%.64s", index, key ? "." : "", key ? key : "");
    enum problem pr = PROBLEM_V_INVALID;
    json_t *params = NULL;
    switch (p) {
    case JOBMOUNT_NOT_ARRAY: pr = PROBLEM_JOB_MOUNTS_TYPE; break;
    case JOBMOUNT_TOO_MANY:
        pr = PROBLEM_JOB_MOUNTS_TOO_MANY;
        params = json_pack("{s:i, s:I}", "max", JOBMOUNT_MAX, "count", (json_int_t)m->count);
        break;
    case JOBMOUNT_NOT_OBJECT: pr = PROBLEM_V_TYPE_OBJECT; break;
    case JOBMOUNT_UNKNOWN_KEY: pr = PROBLEM_V_UNKNOWN_FIELD; break;
    case JOBMOUNT_SPACE_MISSING:
    case JOBMOUNT_NAME_MISSING: pr = PROBLEM_V_REQUIRED; break;
    case JOBMOUNT_SPACE_INVALID: pr = PROBLEM_JOB_MOUNT_SPACE; break;
    case JOBMOUNT_NAME_INVALID: pr = PROBLEM_JOB_MOUNT_DATASET_NAME; break;
    case JOBMOUNT_NAME_NOT_ALLOWED: pr = PROBLEM_JOB_MOUNT_NAME_NOT_ALLOWED; break;
    case JOBMOUNT_READ_ONLY_TYPE: pr = PROBLEM_V_TYPE_BOOL; break;
    case JOBMOUNT_DATASET_WRITABLE: pr = PROBLEM_JOB_MOUNT_DATASET_WRITABLE; break;
    case JOBMOUNT_DUPLICATE:
        pr = PROBLEM_JOB_MOUNT_DUPLICATE;
        params = json_pack("{s:I}", "index", (json_int_t)other);
        break;
    }
    api_field_problem(m->rs, field, pr, params);
}

bool jobspec_check_mounts(const json_t *mounts, struct resp *rs)
{
    struct mounts_report m = {rs, json_is_array(mounts) ? json_array_size(mounts) : 0};
    return jobmount_check(mounts, mount_problem, &m);
}

bool jobspec_parse(const json_t *body, struct jobspec *spec, struct resp *rs)
{
    memset(spec, 0, sizeof *spec);
    bool ok = validate_object(body, fields, sizeof fields / sizeof fields[0], rs);
    const json_t *cmd = json_object_get(body, "command");
    const char *script = vstr(body, "script");
    bool has_cmd = cmd && !json_is_null(cmd), has_script = script != NULL;
    if (has_cmd == has_script)
        api_field_problem(rs, "command", PROBLEM_JOB_COMMAND_OR_SCRIPT, NULL);
    check_command(cmd, rs);
    if (script && !has_text(script))
        api_field_problem(rs, "script", PROBLEM_V_NOT_EMPTY, NULL);
    else if (script && strlen(script) > JOB_MAX_SCRIPT)
        api_field_problem(rs, "script", PROBLEM_V_BYTES_MAX,
                          json_pack("{s:i}", "max", JOB_MAX_SCRIPT));
    check_env(json_object_get(body, "env"), rs);
    const json_t *mounts = json_object_get(body, "mounts");
    jobspec_check_mounts(mounts, rs);

    spec->project = vstr(body, "project");
    spec->name = vstr(body, "name");
    spec->image = vstr(body, "image");
    spec->script = script;
    spec->gpu_type = vstr(body, "gpu_type");
    spec->priority = vstr(body, "priority") ? vstr(body, "priority") : "normal";
    spec->cluster = vstr(body, "cluster");
    spec->gpus = int_or(body, "gpus", 0);
    spec->cpus = int_or(body, "cpus", 1);
    spec->memory_gib = int_or(body, "memory_gib", 4);
    spec->nodes = int_or(body, "nodes", 1);
    spec->time_limit_minutes = int_or(body, "time_limit_minutes", 60);
    spec->array = json_object_get(body, "array");
    spec->depends_on = json_object_get(body, "depends_on");
    const json_t *gt = json_object_get(body, "gpu_type");
    if (spec->gpus > 0 && (!gt || json_is_null(gt)))
        api_field_problem(rs, "gpu_type", PROBLEM_JOB_GPU_TYPE_REQUIRED, NULL);
    if (spec->gpus == 0 && spec->gpu_type)
        api_field_problem(rs, "gpu_type", PROBLEM_JOB_GPU_TYPE_WITHOUT_GPUS, NULL);
    if (rs->err.nfields || !ok)
        return false;
    if (has_cmd)
        spec->command_json = json_dumps(cmd, JSON_COMPACT);
    const json_t *env = json_object_get(body, "env");
    spec->env_json = json_is_object(env) ? json_dumps(env, JSON_COMPACT) : xstrdup("{}");
    /* stored as given (checked above), shown so in the job */
    spec->mounts = json_is_array(mounts) ? mounts : NULL;
    spec->mounts_json = spec->mounts ? json_dumps(mounts, JSON_COMPACT) : xstrdup("[]");
    return (!has_cmd || spec->command_json) && spec->env_json && spec->mounts_json;
}

void jobspec_free(struct jobspec *spec)
{
    free(spec->command_json);
    free(spec->env_json);
    free(spec->mounts_json);
    spec->command_json = spec->env_json = spec->mounts_json = NULL;
}
