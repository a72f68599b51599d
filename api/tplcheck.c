/* tplcheck.c - checking a job template as it is written (see tplcheck.h). */
#include "tplcheck.h"

#include "../lib/gputype.h"
#include "../lib/jobtemplate.h"
#include "../lib/sbuf.h"
#include "../lib/xalloc.h"
#include "../server/validate.h"
#include "jobspec.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

bool tplcheck_name_valid(const char *s)
{
    return validate_slug(s);
}

static bool is_kind(const char *s)
{
    return strcmp(s, "batch") == 0 || strcmp(s, "interactive") == 0;
}

static const struct vfield fields[] = {
    {"name", V_STRING, 0, 0, 0, tplcheck_name_valid, PROBLEM_V_SLUG},
    {"description", V_STRING, 0, 0, TEMPLATE_MAX_DESCRIPTION, NULL, 0},
    {"kind", V_STRING, 0, 0, 0, is_kind, PROBLEM_TEMPLATE_KIND},
    {"image", V_STRING, V_NULLABLE, 1, 512, NULL, 0},
    {"command", V_STRING_ARRAY, V_NULLABLE, 1, JOB_MAX_ARGS, NULL, 0},
    {"script", V_STRING, V_NULLABLE, 0, 0, NULL, 0},
    {"resources", V_OBJECT, V_NULLABLE, 0, 0, NULL, 0},
    {"mounts", V_ANY, V_NULLABLE, 0, 0, NULL, 0}, /* jobspec_check_mounts */
    {"env", V_OBJECT, V_NULLABLE, 0, 0, NULL, 0},
    {"parameters", V_ANY, V_NULLABLE, 0, 0, NULL, 0}, /* check_params */
};

static const struct vfield param_fields[] = {
    {"name", V_STRING, V_REQUIRED, 0, 0, jobtemplate_param_name_valid, PROBLEM_TEMPLATE_PARAM_NAME},
    {"type", V_STRING, V_REQUIRED, 0, 0, NULL, 0},
    {"description", V_STRING, 0, 0, TEMPLATE_MAX_PARAM_DESCRIPTION, NULL, 0},
    {"required", V_BOOL, 0, 0, 0, NULL, 0},
    {"default", V_ANY, V_NULLABLE, 0, 0, NULL, 0},
    {"min", V_ANY, V_NULLABLE, 0, 0, NULL, 0},
    {"max", V_ANY, V_NULLABLE, 0, 0, NULL, 0},
    {"pattern", V_STRING, V_NULLABLE, 0, 0, NULL, 0},
    {"choices", V_ANY, V_NULLABLE, 0, 0, NULL, 0},
};

/* field errors about one declaration carry its place: "parameters[2].min" */
static void pfield(struct resp *rs, size_t i, const char *key, enum problem p, json_t *params)
{
    char f[64];
    snprintf(f, sizeof f, "parameters[%zu]%s%s", i, key ? "." : "", key ? key : "");
    api_field_problem(rs, f, p, params);
}

static bool set(const json_t *d, const char *key)
{
    const json_t *v = json_object_get(d, key);
    return v && !json_is_null(v);
}

static void check_bounds(const json_t *d, size_t i, enum jobtemplate_type t, struct resp *rs)
{
    const char *tn = json_string_value(json_object_get(d, "type"));
    static const char *const numeric[] = {"min", "max"};
    for (size_t k = 0; k < 2; k++) {
        const json_t *v = json_object_get(d, numeric[k]);
        if (!set(d, numeric[k]))
            continue;
        if (t != JT_INTEGER && t != JT_NUMBER)
            pfield(rs, i, numeric[k], PROBLEM_TEMPLATE_PARAM_NOT_FOR_TYPE,
                   json_pack("{s:s}", "type", tn));
        else if (t == JT_INTEGER ? !json_is_integer(v) : !json_is_number(v))
            pfield(rs, i, numeric[k],
                   t == JT_INTEGER ? PROBLEM_V_TYPE_INTEGER : PROBLEM_V_TYPE_NUMBER, NULL);
    }
    if (json_is_number(json_object_get(d, "min")) && json_is_number(json_object_get(d, "max")) &&
        json_number_value(json_object_get(d, "min")) > json_number_value(json_object_get(d, "max")))
        pfield(rs, i, "max", PROBLEM_V_INVALID, NULL);
    const char *pattern = json_string_value(json_object_get(d, "pattern"));
    if (pattern && t != JT_STRING)
        pfield(rs, i, "pattern", PROBLEM_TEMPLATE_PARAM_NOT_FOR_TYPE,
               json_pack("{s:s}", "type", tn));
    else if (pattern && !jobtemplate_pattern_valid(pattern))
        pfield(rs, i, "pattern", PROBLEM_TEMPLATE_PATTERN,
               json_pack("{s:i}", "max", JOBTEMPLATE_MAX_PATTERN));
}

static bool choices_ok(const json_t *c)
{
    size_t n = json_array_size(c);
    if (!json_is_array(c) || n < 1 || n > JOBTEMPLATE_MAX_CHOICES)
        return false;
    for (size_t a = 0; a < n; a++) {
        const char *s = json_string_value(json_array_get(c, a));
        if (!s || strlen(s) > 200)
            return false;
        for (size_t b = 0; b < a; b++)
            if (strcmp(s, json_string_value(json_array_get(c, b))) == 0)
                return false;
    }
    return true;
}

static void check_param(const json_t *d, size_t i, struct resp *rs)
{
    size_t before = rs->err.nfields;
    char prefix[32];
    snprintf(prefix, sizeof prefix, "parameters[%zu]", i);
    if (!json_is_object(d)) {
        api_field_problem(rs, prefix, PROBLEM_V_TYPE_OBJECT, NULL);
        return;
    }
    /* validate_object names fields without the prefix: check into a scratch answer */
    struct resp scratch;
    memset(&scratch, 0, sizeof scratch);
    validate_object(d, param_fields, sizeof param_fields / sizeof param_fields[0], &scratch);
    for (size_t k = 0; k < scratch.err.nfields; k++)
        pfield(rs, i, scratch.err.fields[k].field, scratch.err.fields[k].problem,
               scratch.err.fields[k].params ? json_deep_copy(scratch.err.fields[k].params) : NULL);
    resp_free(&scratch);
    const char *tn = json_string_value(json_object_get(d, "type"));
    enum jobtemplate_type t = jobtemplate_type_of(tn);
    if (tn && t == JT_BAD_TYPE)
        pfield(rs, i, "type", PROBLEM_TEMPLATE_PARAM_TYPE_NAME, NULL);
    if (t == JT_BAD_TYPE)
        return;
    check_bounds(d, i, t, rs);
    if (t == JT_CHOICE && !choices_ok(json_object_get(d, "choices")))
        pfield(rs, i, "choices", PROBLEM_TEMPLATE_CHOICES,
               json_pack("{s:i}", "max", JOBTEMPLATE_MAX_CHOICES));
    else if (t != JT_CHOICE && set(d, "choices"))
        pfield(rs, i, "choices", PROBLEM_TEMPLATE_PARAM_NOT_FOR_TYPE,
               json_pack("{s:s}", "type", tn));
    enum jobtemplate_bad bad;
    if (rs->err.nfields == before && set(d, "default") &&
        !jobtemplate_value_ok(d, json_object_get(d, "default"), &bad))
        pfield(rs, i, "default", PROBLEM_TEMPLATE_DEFAULT, NULL);
}

static void check_params(const json_t *ps, struct resp *rs)
{
    if (!ps || json_is_null(ps))
        return;
    if (!json_is_array(ps)) {
        api_field_problem(rs, "parameters", PROBLEM_V_INVALID, NULL);
        return;
    }
    if (json_array_size(ps) > JOBTEMPLATE_MAX_PARAMS) {
        api_field_problem(rs, "parameters", PROBLEM_TEMPLATE_PARAMS_TOO_MANY,
                          json_pack("{s:i, s:I}", "max", JOBTEMPLATE_MAX_PARAMS, "count",
                                    (json_int_t)json_array_size(ps)));
        return;
    }
    size_t i;
    json_t *d;
    json_array_foreach(ps, i, d)
    {
        check_param(d, i, rs);
        const char *n = json_string_value(json_object_get(d, "name"));
        for (size_t j = 0; n && j < i; j++) {
            const char *m = json_string_value(json_object_get(json_array_get(ps, j), "name"));
            if (m && strcmp(m, n) == 0) {
                pfield(rs, i, "name", PROBLEM_TEMPLATE_PARAM_DUPLICATE,
                       json_pack("{s:s}", "name", n));
                break;
            }
        }
    }
}

/* The type of the parameter named name ("": none). */
static const char *param_type(const json_t *ps, const char *name)
{
    size_t i;
    json_t *d;
    json_array_foreach(ps, i, d)
    {
        const char *n = json_string_value(json_object_get(d, "name"));
        if (n && strcmp(n, name) == 0) {
            const char *t = json_string_value(json_object_get(d, "type"));
            return t ? t : "";
        }
    }
    return "";
}

/* The parameter's name when s is exactly one placeholder, into name. */
static bool lone_placeholder(const char *s, char *name, size_t size)
{
    size_t n = strlen(s);
    if (n < 5 || n - 4 >= size || strncmp(s, "{{", 2) != 0 || strcmp(s + n - 2, "}}") != 0)
        return false;
    memcpy(name, s + 2, n - 4);
    name[n - 4] = '\0';
    return jobtemplate_param_name_valid(name);
}

static const struct {
    const char *name;
    int min, max;
} int_resources[] = {
    {"gpus", 0, JOB_MAX_GPUS},
    {"cpus", 1, JOB_MAX_CPUS},
    {"memory_gib", 1, JOB_MAX_MEMORY_GIB},
    {"nodes", 1, JOB_MAX_NODES},
    {"time_limit_minutes", 1, JOB_MAX_MINUTES},
};

static void check_resource(const char *k, const json_t *v, const json_t *ps, struct resp *rs)
{
    char field[96], name[JOBTEMPLATE_MAX_NAME + 1];
    snprintf(field, sizeof field, "resources.%.64s", k);
    const char *s = json_string_value(v);
    bool lone = s && lone_placeholder(s, name, sizeof name);
    if (strcmp(k, "gpu_type") == 0) {
        const char *t = lone ? param_type(ps, name) : "";
        bool ok = lone ? strcmp(t, "string") == 0 || strcmp(t, "choice") == 0
                       : json_is_null(v) || (s && gputype_valid(s));
        if (!ok)
            api_field_problem(rs, field, PROBLEM_TEMPLATE_RESOURCE_GPU_TYPE, NULL);
        return;
    }
    for (size_t i = 0; i < sizeof int_resources / sizeof int_resources[0]; i++) {
        if (strcmp(k, int_resources[i].name) != 0)
            continue;
        json_int_t n = json_is_integer(v) ? json_integer_value(v) : -1;
        bool ok =
            lone ? strcmp(param_type(ps, name), "integer") == 0
                 : json_is_integer(v) && n >= int_resources[i].min && n <= int_resources[i].max;
        if (!ok)
            api_field_problem(
                rs, field, PROBLEM_TEMPLATE_RESOURCE,
                json_pack("{s:i, s:i}", "min", int_resources[i].min, "max", int_resources[i].max));
        return;
    }
    api_field_problem(rs, field, PROBLEM_V_UNKNOWN_FIELD, NULL);
}

struct undeclared {
    const json_t *ps;
    struct resp *rs;
    json_t *seen; /* names reported, once each */
};

static void placeholder_found(void *arg, const char *name)
{
    struct undeclared *u = arg;
    if (*param_type(u->ps, name) || json_object_get(u->seen, name))
        return;
    json_object_set_new(u->seen, name, json_true());
    api_field_problem(u->rs, "parameters", PROBLEM_TEMPLATE_PLACEHOLDER,
                      json_pack("{s:s}", "name", name));
}

/* Every placeholder of the texts a submit renders names a declared parameter. */
static void check_placeholders(const json_t *body, struct resp *rs)
{
    struct undeclared u = {json_object_get(body, "parameters"), rs, json_object()};
    static const char *const texts[] = {"image", "script"};
    for (size_t i = 0; i < 2; i++) {
        const char *s = json_string_value(json_object_get(body, texts[i]));
        if (s)
            jobtemplate_placeholders(s, placeholder_found, &u);
    }
    size_t i;
    json_t *v;
    json_array_foreach(json_object_get(body, "command"), i, v)
    {
        if (json_is_string(v))
            jobtemplate_placeholders(json_string_value(v), placeholder_found, &u);
    }
    const char *k;
    json_object_foreach(json_object_get(body, "env"), k, v)
    {
        if (json_is_string(v))
            jobtemplate_placeholders(json_string_value(v), placeholder_found, &u);
        else
            api_field_problem(rs, "env", PROBLEM_V_TYPE_STRING, NULL);
    }
    json_decref(u.seen);
}

static void check_shape(const json_t *body, struct resp *rs)
{
    const char *kind = vstr(body, "kind") ? vstr(body, "kind") : "batch";
    bool has_cmd = set(body, "command"), has_script = set(body, "script");
    if (strcmp(kind, "interactive") == 0) {
        if (has_script)
            api_field_problem(rs, "script", PROBLEM_TEMPLATE_INTERACTIVE_SCRIPT, NULL);
        if (json_object_get(json_object_get(body, "resources"), "nodes"))
            api_field_problem(rs, "resources.nodes", PROBLEM_V_UNKNOWN_FIELD, NULL);
    } else if (has_cmd == has_script) {
        api_field_problem(rs, "command", PROBLEM_JOB_COMMAND_OR_SCRIPT, NULL);
    }
    const char *script = vstr(body, "script");
    if (script && !*script)
        api_field_problem(rs, "script", PROBLEM_V_NOT_EMPTY, NULL);
    const json_t *env = json_object_get(body, "env");
    if (json_is_object(env) && json_object_size(env) > JOB_MAX_ENV)
        api_field_problem(rs, "env", PROBLEM_JOB_ENV_TOO_MANY,
                          json_pack("{s:i, s:I}", "max", JOB_MAX_ENV, "count",
                                    (json_int_t)json_object_size(env)));
    const json_t *mounts = json_object_get(body, "mounts");
    if (mounts && !json_is_null(mounts))
        jobspec_check_mounts(mounts, rs);
}

json_t *tplcheck_template(const json_t *body, bool name_required, struct resp *rs)
{
    char *dump = json_dumps(body, JSON_COMPACT);
    size_t size = dump ? strlen(dump) : 0;
    free(dump);
    if (size > TEMPLATE_MAX_BYTES) {
        api_problem(rs, PROBLEM_TEMPLATE_TOO_LARGE, json_pack("{s:i}", "max", TEMPLATE_MAX_BYTES));
        return NULL;
    }
    validate_object(body, fields, sizeof fields / sizeof fields[0], rs);
    if (name_required && !vstr(body, "name") && !json_object_get(body, "name"))
        api_field_problem(rs, "name", PROBLEM_V_REQUIRED, NULL);
    check_params(json_object_get(body, "parameters"), rs);
    if (!rs->err.nfields) { /* the rest reads the parameters as checked */
        check_shape(body, rs);
        const char *k;
        json_t *v;
        json_object_foreach(json_object_get(body, "resources"), k, v)
            check_resource(k, v, json_object_get(body, "parameters"), rs);
        check_placeholders(body, rs);
    }
    if (rs->err.nfields)
        return NULL;
    json_t *spec = json_deep_copy(body);
    if (!spec)
        return NULL;
    json_object_del(spec, "name");
    if (!json_object_get(spec, "kind"))
        json_object_set_new(spec, "kind", json_string("batch"));
    if (!json_object_get(spec, "description"))
        json_object_set_new(spec, "description", json_string(""));
    if (!json_is_array(json_object_get(spec, "parameters")))
        json_object_set_new(spec, "parameters", json_array());
    return spec;
}
