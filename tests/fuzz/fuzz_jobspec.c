/*
 * fuzz_jobspec.c - a JSON request body: the job submission (api/jobspec.c,
 * the largest body aidc reads) and validate_object (server/validate.c), the
 * checker every other resource's body goes through, with a field table that
 * has each type, flag and check function the resources use (users, tenants,
 * projects, images, clusters, tokens, billing: their tables are static in
 * api/ and built from these same pieces). Errors are rendered as
 * problem+json, as the dispatcher answers them.
 */
#include "fuzz.h"
#include "body.h"

#include "api/jobspec.h"
#include "lib/gputype.h"
#include "server/validate.h"

static bool is_role(const char *s)
{
    return strcmp(s, "platform_admin") == 0 || strcmp(s, "finance") == 0 ||
           strcmp(s, "auditor") == 0;
}

static const struct vfield fields[] = {
    {"name", V_STRING, V_REQUIRED, 0, 0, validate_slug, PROBLEM_V_SLUG},
    {"username", V_STRING, 0, 0, 0, validate_username, PROBLEM_V_USERNAME},
    {"email", V_STRING, V_NULLABLE, 0, 0, validate_email, PROBLEM_V_EMAIL},
    {"display_name", V_STRING, V_NULLABLE, 1, 200, NULL, 0},
    {"roles", V_STRING_ARRAY, 0, 0, 3, is_role, PROBLEM_USER_ROLE_UNKNOWN},
    {"scopes", V_STRING_ARRAY, V_REQUIRED, 1, 16, NULL, 0},
    {"gpu_type", V_STRING, V_NULLABLE, 0, 0, gputype_valid, PROBLEM_V_GPU_TYPE},
    {"state", V_STRING, 0, 0, 0, jobspec_state_valid, PROBLEM_V_INVALID},
    {"size_bytes", V_INT, 0, 0, 1099511627776L, NULL, 0},
    {"expires_in_days", V_INT, V_NULLABLE, 1, 365, NULL, 0},
    {"disabled", V_BOOL, 0, 0, 0, NULL, 0},
    {"options", V_OBJECT, 0, 0, 0, NULL, 0},
    {"labels", V_OBJECT, V_NULLABLE, 0, 0, NULL, 0},
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    json_t *body = fuzz_body(data, size);
    if (!body)
        return 0;
    struct resp rs = {0};
    struct jobspec spec;
    memset(&spec, 0, sizeof spec);
    if (jobspec_parse(body, &spec, &rs)) {
        /* what api/jobs.c stores must be JSON again */
        json_t *cmd = spec.command_json ? json_loads(spec.command_json, 0, NULL) : NULL;
        json_t *env = spec.env_json ? json_loads(spec.env_json, 0, NULL) : NULL;
        if ((spec.command_json && !json_is_array(cmd)) || (spec.env_json && !json_is_object(env)))
            abort();
        json_decref(cmd);
        json_decref(env);
    } else {
        api_fail_fields(&rs);
    }
    jobspec_free(&spec);
    fuzz_render(&rs);

    if (!validate_object(body, fields, sizeof fields / sizeof fields[0], &rs))
        api_fail_fields(&rs);
    fuzz_render(&rs);
    json_decref(body);
    return 0;
}
