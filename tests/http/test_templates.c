/*
 * test_templates.c - job templates (docs/templates.md) through the real
 * aidcd: the seeded ones, who writes and reads which (platform and tenant),
 * another tenant's invisible, a tenant template shadowing the platform's,
 * a submit whose parameters render into a job that runs on the local
 * executor (a hostile value stays one shell word), every 422 of the
 * parameters, the checks of a template as it is written, and the limits.
 */
#include "tests/support/client.h"
#include "tests/support/harness.h"
#include "tests/support/jobs.h"
#include "tests/support/suite.h"

#include <check.h>
#include <stdlib.h>
#include <string.h>

#define PLAT "/api/v1/templates"
#define CHEM "/api/v1/tenants/chem/templates"
#define PHYS "/api/v1/tenants/phys/templates"
#define JOBS "/api/v1/tenants/chem/jobs"

static char *ann, *cat, *tad, *oz; /* chem member, chem viewer, chem admin, phys admin */

static void setup(void)
{
    harness_setup("templates", jobs_fast_env);
    jobs_local_cluster("{\"a100\":2}");
    make_tenant("chem");
    make_project("chem", "mol");
    jobs_tenant_quota("chem", "{\"gpu:a100\":{\"guaranteed\":2,\"limit\":2}}");
    make_tenant("phys");
    make_project("phys", "lab");
    jobs_tenant_quota("phys", "{\"gpu:a100\":{\"guaranteed\":0,\"limit\":2}}");
    ann = make_member_login("chem", "ann", "member");
    cat = make_member_login("chem", "cat", "viewer");
    tad = make_member_login("chem", "tad", "tenant_admin");
    oz = make_member_login("phys", "oz", "tenant_admin");
    ck_assert(ann && cat && tad && oz);
}

static void teardown(void)
{
    free(ann);
    free(cat);
    free(tad);
    free(oz);
    harness_teardown();
}

/* A submit of template with one string parameter name=value (malloc'd: values pass fmt's buffer).
 */
static char *submit_one(const char *template, const char *name, const char *value)
{
    size_t n = strlen(value) + 200;
    char *b = malloc(n);
    snprintf(b, n, "{\"project\":\"mol\",\"template\":\"%s\",\"parameters\":{\"%s\":\"%s\"}}",
             template, name, value);
    return b;
}

/* A small batch template named name whose script echoes what it is given. */
static const char *echo_tpl(const char *name, const char *word)
{
    return fmt("{\"name\":\"%s\",\"description\":\"says %s\",\"script\":\"echo %s={{v}}\","
               "\"parameters\":[{\"name\":\"v\",\"type\":\"string\",\"default\":\"d\"}]}",
               name, word, word);
}

START_TEST(seeded_templates_are_there_for_every_user)
{
    json_t *items = get_items(PLAT, ann);
    ck_assert_int_eq(json_array_size(items), 3);
    const char *want[] = {"batch-inference", "jupyter", "pytorch-ddp"}; /* by name */
    for (size_t i = 0; i < 3; i++) {
        json_t *t = json_array_get(items, i);
        ck_assert_str_eq(jstr(t, "name"), want[i]);
        ck_assert_str_eq(jstr(t, "scope"), "platform");
        ck_assert(json_array_size(json_object_get(t, "parameters")) > 0);
    }
    ck_assert_str_eq(jstr(json_array_get(items, 1), "kind"), "interactive");
    json_decref(items);
    struct http_res r;
    ck_assert_int_eq(reqj("GET", PLAT "/pytorch-ddp", oz, NULL, &r), 200);
    ck_assert_ptr_nonnull(strstr(jstr(r.json, "script"), "torchrun"));
    ck_assert_str_eq(jstr(json_object_get(r.json, "resources"), "nodes"), "{{nodes}}");
    http_res_free(&r);
    ck_assert_int_eq(req("GET", PLAT, NULL, NULL), 401);
}
END_TEST

START_TEST(who_writes_and_reads_which)
{
    /* tenant templates: the tenant's admins write, its readers read */
    ck_assert_int_eq(req("POST", CHEM, ann, echo_tpl("mine", "a")), 403);
    ck_assert_int_eq(req("POST", CHEM, cat, echo_tpl("mine", "a")), 403);
    ck_assert_int_eq(req("POST", CHEM, tad, echo_tpl("mine", "a")), 201);
    ck_assert_int_eq(req("POST", CHEM, tad, echo_tpl("mine", "a")), 409);
    ck_assert_int_eq(req("GET", CHEM "/mine", ann, NULL), 200);
    ck_assert_int_eq(count_items(CHEM, cat), 1);
    ck_assert_int_eq(req("PUT", CHEM "/mine", ann, echo_tpl("mine", "b")), 403);
    ck_assert_int_eq(req("DELETE", CHEM "/mine", ann, NULL), 403);
    struct http_res r;
    ck_assert_int_eq(reqj("PUT", CHEM "/mine", tad, echo_tpl("mine", "b"), &r), 200);
    ck_assert_str_eq(jstr(r.json, "description"), "says b");
    ck_assert_str_eq(jstr(r.json, "scope"), "tenant");
    ck_assert_str_eq(jstr(r.json, "created_by"), "tad");
    http_res_free(&r);
    ck_assert_int_eq(reqj("PUT", CHEM "/mine", tad, echo_tpl("other", "b"), &r), 400);
    expect_problem(&r, "template.name_fixed", "field", "name");
    http_res_free(&r);
    ck_assert_int_eq(reqj("PUT", CHEM "/nope", tad, echo_tpl("nope", "b"), &r), 404);
    expect_problem(&r, "template.not_found", "template", "nope");
    http_res_free(&r);

    /* platform templates: platform admins write; a tenant admin does not */
    ck_assert_int_eq(req("POST", PLAT, tad, echo_tpl("plat", "p")), 403);
    ck_assert_int_eq(req("POST", PLAT, harness_srv.admin_token, echo_tpl("plat", "p")), 201);
    ck_assert_int_eq(req("PUT", PLAT "/plat", tad, echo_tpl("plat", "q")), 403);
    ck_assert_int_eq(req("DELETE", PLAT "/plat", tad, NULL), 403);
    ck_assert_int_eq(req("DELETE", PLAT "/plat", harness_srv.admin_token, NULL), 204);
    ck_assert_int_eq(req("GET", PLAT "/plat", ann, NULL), 404);

    /* another tenant's templates: as if they did not exist */
    long theirs = req("GET", CHEM "/mine", oz, NULL);
    ck_assert_int_eq(theirs, req("GET", "/api/v1/tenants/nosuch/templates/mine", oz, NULL));
    ck_assert_int_eq(req("GET", CHEM, oz, NULL),
                     req("GET", "/api/v1/tenants/nosuch/templates", oz, NULL));
    ck_assert_int_eq(req("PUT", CHEM "/mine", oz, echo_tpl("mine", "x")), theirs);
    ck_assert_int_eq(req("DELETE", CHEM "/mine", oz, NULL), theirs);
    ck_assert_int_eq(count_items(PHYS, oz), 0);
    ck_assert_int_eq(reqj("POST", "/api/v1/tenants/phys/jobs", oz,
                          "{\"project\":\"lab\",\"template\":\"mine\"}", &r),
                     422);
    expect_problem(&r, "template.unknown", "template", "mine");
    http_res_free(&r);
    ck_assert_int_eq(req("DELETE", CHEM "/mine", tad, NULL), 204);
    ck_assert_int_eq(req("GET", CHEM "/mine", tad, NULL), 404);
}
END_TEST

/* Submit body as token to tenant and wait for the job's end; its stdout (malloc'd). */
static char *run_for_output(const char *token, const char *tenant, const char *body, json_t **job)
{
    char *id = jobs_submit(token, tenant, body);
    json_t *j = jobs_wait(token, tenant, id, "succeeded,failed", 30);
    ck_assert_msg(strcmp(jstr(j, "state"), "succeeded") == 0, "job %s: %s", id, jstr(j, "state"));
    char *out = jobs_logs(token, tenant, id, NULL);
    free(id);
    if (job)
        *job = j;
    else
        json_decref(j);
    return out;
}

START_TEST(a_tenant_template_shadows_the_platforms)
{
    ck_assert_int_eq(req("POST", PLAT, harness_srv.admin_token, echo_tpl("hello", "platform")),
                     201);
    ck_assert_int_eq(req("POST", CHEM, tad, echo_tpl("hello", "tenant")), 201);
    char *out = run_for_output(ann, "chem", "{\"project\":\"mol\",\"template\":\"hello\"}", NULL);
    ck_assert_str_eq(out, "tenant=d\n");
    free(out);
    out = run_for_output(oz, "phys",
                         "{\"project\":\"lab\",\"template\":\"hello\","
                         "\"parameters\":{\"v\":\"w\"}}",
                         NULL);
    ck_assert_str_eq(out, "platform=w\n");
    free(out);
    ck_assert_int_eq(req("DELETE", CHEM "/hello", tad, NULL), 204);
    ck_assert_int_eq(req("DELETE", PLAT "/hello", harness_srv.admin_token, NULL), 204);
}
END_TEST

/* printf '[%s]\n' prints each word it is given on a line of its own, in brackets */
static const char run_tpl[] =
    "{\"name\":\"run\",\"script\":\"printf '[%s]\\\\n' {{text}} {{n}} {{x}} {{flag}} {{mode}}\","
    "\"env\":{\"MODE\":\"m-{{mode}}\"},\"resources\":{\"cpus\":\"{{n}}\",\"memory_gib\":1},"
    "\"parameters\":["
    "{\"name\":\"text\",\"type\":\"string\",\"required\":true,\"pattern\":\"[^#]*\"},"
    "{\"name\":\"n\",\"type\":\"integer\",\"default\":1,\"min\":1,\"max\":4},"
    "{\"name\":\"x\",\"type\":\"number\",\"default\":0.5,\"min\":0,\"max\":1},"
    "{\"name\":\"flag\",\"type\":\"boolean\",\"default\":false},"
    "{\"name\":\"mode\",\"type\":\"choice\",\"choices\":[\"fast\",\"slow\"],\"default\":\"fast\"}]"
    "}";

START_TEST(parameters_render_into_a_job_that_runs)
{
    ck_assert_int_eq(req("POST", CHEM, tad, run_tpl), 201);
    /* a hostile value stays one word: nothing of it runs */
    json_t *j = NULL;
    char *out =
        run_for_output(ann, "chem",
                       "{\"project\":\"mol\",\"template\":\"run\",\"parameters\":{\"text\":\"x; "
                       "echo pwned $(id -u) "
                       "`id` it's {{n}}\",\"n\":2,\"x\":0.25,\"flag\":true,\"mode\":\"slow\"}}",
                       &j);
    ck_assert_str_eq(out,
                     "[x; echo pwned $(id -u) `id` it's {{n}}]\n[2]\n[0.25]\n[true]\n[slow]\n");
    free(out);
    ck_assert_str_eq(jstr(j, "name"), "run");
    ck_assert_int_eq(jint(json_object_get(j, "resources"), "cpus"),
                     2); /* a resource from a parameter */
    ck_assert_int_eq(jint(json_object_get(j, "resources"), "memory_gib"), 1);
    ck_assert_str_eq(jstr(json_object_get(j, "env"), "MODE"), "m-slow");
    json_decref(j);
    /* overrides win: name, cpus; env is merged; defaults fill the rest */
    out = run_for_output(ann, "chem",
                         "{\"project\":\"mol\",\"template\":\"run\",\"name\":\"mine\",\"cpus\":3,"
                         "\"env\":{\"EXTRA\":\"1\"},\"parameters\":{\"text\":\"a b\"}}",
                         &j);
    ck_assert_str_eq(out, "[a b]\n[1]\n[0.5]\n[false]\n[fast]\n");
    free(out);
    ck_assert_str_eq(jstr(j, "name"), "mine");
    ck_assert_int_eq(jint(json_object_get(j, "resources"), "cpus"), 3);
    ck_assert_str_eq(jstr(json_object_get(j, "env"), "MODE"), "m-fast");
    ck_assert_str_eq(jstr(json_object_get(j, "env"), "EXTRA"), "1");
    json_decref(j);
    /* a command given replaces the template's script (a job has one of them) */
    out = run_for_output(ann, "chem",
                         "{\"project\":\"mol\",\"template\":\"run\",\"command\":[\"echo\","
                         "\"by-command\"],\"parameters\":{\"text\":\"a\"}}",
                         NULL);
    ck_assert_str_eq(out, "by-command\n");
    free(out);
    /* every limit of a normal submit still holds for what a template renders */
    struct http_res r;
    ck_assert_int_eq(
        reqj("POST", JOBS, ann,
             "{\"project\":\"nope\",\"template\":\"run\",\"parameters\":{\"text\":\"a\"}}", &r),
        422);
    expect_problem(&r, "job.project_unknown", NULL, NULL);
    http_res_free(&r);
    ck_assert_int_eq(reqj("POST", JOBS, ann,
                          "{\"project\":\"mol\",\"template\":\"run\",\"gpus\":1,"
                          "\"parameters\":{\"text\":\"a\"}}",
                          &r),
                     400);
    expect_problem(&r, "job.gpu_type_required", "field", "gpu_type");
    http_res_free(&r);
    ck_assert_int_eq(req("DELETE", CHEM "/run", tad, NULL), 204);
}
END_TEST

START_TEST(bad_parameters_are_422_naming_the_parameter)
{
    static const struct {
        const char *params, *code, *field;
    } cases[] = {
        {"{\"text\":\"a\",\"zz\":1}", "template.parameter_unknown", "parameters.zz"},
        {"{}", "template.parameter_required", "parameters.text"},
        {"{\"text\":\"a\",\"n\":\"2\"}", "template.parameter_type", "parameters.n"},
        {"{\"text\":\"a\",\"n\":2.5}", "template.parameter_type", "parameters.n"},
        {"{\"text\":7}", "template.parameter_type", "parameters.text"},
        {"{\"text\":\"a\",\"flag\":\"yes\"}", "template.parameter_type", "parameters.flag"},
        {"{\"text\":\"a\",\"n\":0}", "template.parameter_min", "parameters.n"},
        {"{\"text\":\"a\",\"n\":5}", "template.parameter_max", "parameters.n"},
        {"{\"text\":\"a\",\"x\":1.5}", "template.parameter_max", "parameters.x"},
        {"{\"text\":\"a#b\"}", "template.parameter_pattern", "parameters.text"},
        {"{\"text\":\"a\",\"mode\":\"turbo\"}", "template.parameter_choice", "parameters.mode"},
    };
    ck_assert_int_eq(req("POST", CHEM, tad, run_tpl), 201);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct http_res r;
        long st = reqj(
            "POST", JOBS, ann,
            fmt("{\"project\":\"mol\",\"template\":\"run\",\"parameters\":%s}", cases[i].params),
            &r);
        ck_assert_msg(st == 422, "%s: %ld", cases[i].params, st);
        expect_problem(&r, cases[i].code, "field", cases[i].field);
        http_res_free(&r);
    }
    /* a value over 4096 bytes */
    char *big = malloc(5000);
    memset(big, 'a', 4999);
    big[4999] = '\0';
    struct http_res r;
    char *b = submit_one("run", "text", big);
    ck_assert_int_eq(reqj("POST", JOBS, ann, b, &r), 422);
    free(b);
    expect_problem(&r, "template.parameter_too_long", "max", "4096");
    http_res_free(&r);
    free(big);
    /* the template itself: unknown, of the other kind, given badly */
    ck_assert_int_eq(reqj("POST", JOBS, ann, "{\"project\":\"mol\",\"template\":\"nope\"}", &r),
                     422);
    expect_problem(&r, "template.unknown", "tenant", "chem");
    http_res_free(&r);
    ck_assert_int_eq(reqj("POST", JOBS, ann, "{\"project\":\"mol\",\"template\":\"jupyter\"}", &r),
                     422);
    expect_problem(&r, "template.is_interactive", "template", "jupyter");
    http_res_free(&r);
    ck_assert_int_eq(reqj("POST", JOBS, ann,
                          "{\"project\":\"mol\",\"template\":\"run\",\"parameters\":[1]}", &r),
                     400);
    expect_problem(&r, "validation.type_object", "field", "parameters");
    http_res_free(&r);
    ck_assert_int_eq(reqj("POST", JOBS, ann, "{\"project\":\"mol\",\"template\":\"../x\"}", &r),
                     400);
    http_res_free(&r);
    /* a flood of parameters is one answer, not one per key */
    char *flood = malloc(200000);
    size_t o = (size_t)snprintf(flood, 200000,
                                "{\"project\":\"mol\",\"template\":\"run\","
                                "\"parameters\":{");
    for (int i = 0; i < 5000; i++)
        o += (size_t)snprintf(flood + o, 200000 - o, "%s\"p%d\":1", i ? "," : "", i);
    snprintf(flood + o, 200000 - o, "}}");
    ck_assert_int_eq(reqj("POST", JOBS, ann, flood, &r), 400);
    expect_problem(&r, "template.parameters_too_many", "max", "32");
    ck_assert_int_eq(json_array_size(json_object_get(r.json, "errors")), 1);
    http_res_free(&r);
    free(flood);
    /* parameters without a template are no job field */
    ck_assert_int_eq(reqj("POST", JOBS, ann,
                          "{\"project\":\"mol\",\"name\":\"n\",\"script\":\"true\","
                          "\"parameters\":{}}",
                          &r),
                     400);
    http_res_free(&r);
    ck_assert_int_eq(req("DELETE", CHEM "/run", tad, NULL), 204);
}
END_TEST

START_TEST(templates_are_checked_as_they_are_written)
{
    static const struct {
        const char *body, *code, *field;
    } cases[] = {
        {"{\"name\":\"t1\",\"script\":\"echo {{who}}\"}", "template.placeholder", "parameters"},
        {"{\"name\":\"t1\",\"command\":[\"echo\",\"{{who}}\"],\"parameters\":[]}",
         "template.placeholder", "parameters"},
        {"{\"name\":\"t1\",\"script\":\"true\",\"env\":{\"A\":\"{{who}}\"}}",
         "template.placeholder", "parameters"},
        {"{\"name\":\"t1\",\"script\":\"true\",\"command\":[\"true\"]}", "job.command_or_script",
         "command"},
        {"{\"name\":\"t1\"}", "job.command_or_script", "command"},
        {"{\"name\":\"t1\",\"kind\":\"interactive\",\"script\":\"true\"}",
         "template.interactive_script", "script"},
        {"{\"name\":\"t1\",\"kind\":\"cron\",\"script\":\"true\"}", "template.kind", "kind"},
        {"{\"name\":\"T 1\",\"script\":\"true\"}", "validation.slug", "name"},
        {"{\"script\":\"true\"}", "validation.required", "name"},
        {"{\"name\":\"t1\",\"script\":\"true\",\"resources\":{\"gpus\":65}}", "template.resource",
         "resources.gpus"},
        {"{\"name\":\"t1\",\"script\":\"true\",\"resources\":{\"gpus\":\"{{s}}\"},"
         "\"parameters\":[{\"name\":\"s\",\"type\":\"string\"}]}",
         "template.resource", "resources.gpus"},
        {"{\"name\":\"t1\",\"script\":\"true\",\"resources\":{\"cpus\":\"2{{n}}\"},"
         "\"parameters\":[{\"name\":\"n\",\"type\":\"integer\"}]}",
         "template.resource", "resources.cpus"},
        {"{\"name\":\"t1\",\"script\":\"true\",\"resources\":{\"disk\":1}}",
         "validation.unknown_field", "resources.disk"},
        {"{\"name\":\"t1\",\"script\":\"true\",\"parameters\":[{\"name\":\"a\",\"type\":\"date\"}]"
         "}",
         "template.parameter_type_name", "parameters[0].type"},
        {"{\"name\":\"t1\",\"script\":\"true\",\"parameters\":[{\"name\":\"A-b\",\"type\":"
         "\"string\"}]}",
         "template.parameter_name", "parameters[0].name"},
        {"{\"name\":\"t1\",\"script\":\"true\",\"parameters\":[{\"name\":\"a\",\"type\":\"string\"}"
         ","
         "{\"name\":\"a\",\"type\":\"integer\"}]}",
         "template.parameter_duplicate", "parameters[1].name"},
        {"{\"name\":\"t1\",\"script\":\"true\",\"parameters\":[{\"name\":\"a\",\"type\":"
         "\"integer\","
         "\"min\":1,\"default\":0}]}",
         "template.default", "parameters[0].default"},
        {"{\"name\":\"t1\",\"script\":\"true\",\"parameters\":[{\"name\":\"a\",\"type\":\"string\","
         "\"min\":1}]}",
         "template.parameter_not_for_type", "parameters[0].min"},
        {"{\"name\":\"t1\",\"script\":\"true\",\"parameters\":[{\"name\":\"a\",\"type\":\"string\","
         "\"pattern\":\"(\"}]}",
         "template.pattern", "parameters[0].pattern"},
        {"{\"name\":\"t1\",\"script\":\"true\",\"parameters\":[{\"name\":\"a\",\"type\":\"choice\"}"
         "]}",
         "template.choices", "parameters[0].choices"},
        {"{\"name\":\"t1\",\"script\":\"true\",\"parameters\":[{\"name\":\"a\",\"type\":\"string\","
         "\"secret\":true}]}",
         "validation.unknown_field", "parameters[0].secret"},
        {"{\"name\":\"t1\",\"script\":\"true\",\"mounts\":[{\"space\":\"attic\"}]}",
         "job.mount_space", "mounts[0].space"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct http_res r;
        long st = reqj("POST", CHEM, tad, cases[i].body, &r);
        ck_assert_msg(st == 400, "%s: %ld", cases[i].body, st);
        expect_problem(&r, cases[i].code, "field", cases[i].field);
        http_res_free(&r);
    }
    ck_assert_int_eq(count_items(CHEM, tad), 0);
    /* "{{ x }}" and "{{.Names}}" are no placeholders: text, kept as it is */
    ck_assert_int_eq(
        req("POST", CHEM, tad, "{\"name\":\"literal\",\"script\":\"echo '{{ x }} {{.Names}}'\"}"),
        201);
    char *out = run_for_output(ann, "chem", "{\"project\":\"mol\",\"template\":\"literal\"}", NULL);
    ck_assert_str_eq(out, "{{ x }} {{.Names}}\n");
    free(out);
    ck_assert_int_eq(req("DELETE", CHEM "/literal", tad, NULL), 204);
}
END_TEST

START_TEST(limits_on_size_parameters_rendering_and_count)
{
    struct http_res r;
    /* 33 parameters */
    char params[4096] = "";
    for (int i = 0; i < 33; i++)
        snprintf(params + strlen(params), sizeof params - strlen(params),
                 "%s{\"name\":\"p%d\",\"type\":\"string\"}", i ? "," : "", i);
    ck_assert_int_eq(reqj("POST", CHEM, tad,
                          fmt("{\"name\":\"tt\",\"script\":\"true\",\"parameters\":[%s]}", params),
                          &r),
                     400);
    expect_problem(&r, "template.parameters_too_many", "max", "32");
    http_res_free(&r);
    /* a template over 64 KiB */
    size_t n = 70000;
    char *big = malloc(n + 1);
    memset(big, 'x', n);
    big[n] = '\0';
    char *body = malloc(n + 100);
    snprintf(body, n + 100, "{\"name\":\"tt\",\"script\":\"echo %s\"}", big);
    long st = reqj("POST", CHEM, tad, body, &r);
    ck_assert_msg(st == 400 || st == 413, "%ld", st);
    if (st == 400)
        expect_problem(&r, "template.too_large", "max", "65536");
    http_res_free(&r);
    free(body);
    /* what it renders: 70 copies of a 4096-byte value pass 256 KiB */
    char many[512] = "";
    for (size_t i = 0; i < 70; i++)
        memcpy(many + 5 * i, "{{v}}", 6);
    ck_assert_int_eq(req("POST", CHEM, tad,
                         fmt("{\"name\":\"wide\",\"script\":\"echo %s\",\"parameters\":"
                             "[{\"name\":\"v\",\"type\":\"string\"}]}",
                             many)),
                     201);
    big[4096] = '\0';
    body = submit_one("wide", "v", big);
    st = reqj("POST", JOBS, ann, body, &r);
    free(body);
    ck_assert_msg(st == 422, "%s", r.body);
    expect_problem(&r, "template.rendered_too_large", "max", "262144");
    http_res_free(&r);
    free(big);
    ck_assert_int_eq(req("DELETE", CHEM "/wide", tad, NULL), 204);
    /* 200 templates a tenant: the 201st is refused */
    const char *p[1] = {NULL};
    PGresult *q = harness_sql(harness_srv.owner_url,
                              "INSERT INTO job_templates (tenant_id, name, spec, created_by)"
                              " SELECT t.id, 'bulk-' || i, '{\"script\":\"true\"}', 'test'"
                              " FROM tenants t, generate_series(1, 200) i WHERE t.slug = 'chem'",
                              0, p);
    PQclear(q);
    ck_assert_int_eq(reqj("POST", CHEM, tad, echo_tpl("one-more", "x"), &r), 422);
    expect_problem(&r, "template.too_many", "max", "200");
    http_res_free(&r);
    q = harness_sql(harness_srv.owner_url, "DELETE FROM job_templates WHERE name LIKE 'bulk-%'", 0,
                    p);
    PQclear(q);
    /* pages of a list */
    ck_assert_int_eq(count_items(PLAT "?limit=2", ann), 2);
}
END_TEST

START_TEST(an_interactive_template_starts_a_session)
{
    struct http_res r;
    ck_assert_int_eq(reqj("POST", "/api/v1/tenants/chem/sessions", ann,
                          "{\"project\":\"mol\",\"template\":\"jupyter\",\"idle_minutes\":15,"
                          "\"parameters\":{\"cpus\":2,\"time_limit_minutes\":30}}",
                          &r),
                     201);
    ck_assert_str_eq(jstr(r.json, "app"), "jupyter");
    ck_assert_int_eq(jint(r.json, "idle_minutes"), 15);
    json_t *job = json_object_get(r.json, "job");
    ck_assert_int_eq(jint(json_object_get(job, "resources"), "cpus"), 2);
    ck_assert_int_eq(jint(json_object_get(job, "resources"), "time_limit_minutes"), 30);
    ck_assert_int_eq(
        req("POST", fmt("/api/v1/tenants/chem/sessions/%s/stop", jstr(r.json, "id")), ann, NULL),
        202);
    json_decref(jobs_wait(ann, "chem", jstr(job, "id"), "cancelled,failed,succeeded", 30));
    http_res_free(&r);
    ck_assert_int_eq(req("POST", CHEM, tad, echo_tpl("batchy", "b")), 201);
    ck_assert_int_eq(reqj("POST", "/api/v1/tenants/chem/sessions", ann,
                          "{\"project\":\"mol\",\"template\":\"batchy\"}", &r),
                     422);
    expect_problem(&r, "template.is_batch", "template", "batchy");
    http_res_free(&r);
    ck_assert_int_eq(req("DELETE", CHEM "/batchy", tad, NULL), 204);
}
END_TEST

static Suite *templates_suite(void)
{
    Suite *s = suite_create("templates");
    TCase *tc = tcase_create("templates");
    tcase_add_unchecked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, seeded_templates_are_there_for_every_user);
    tcase_add_test(tc, who_writes_and_reads_which);
    tcase_add_test(tc, a_tenant_template_shadows_the_platforms);
    tcase_add_test(tc, parameters_render_into_a_job_that_runs);
    tcase_add_test(tc, bad_parameters_are_422_naming_the_parameter);
    tcase_add_test(tc, templates_are_checked_as_they_are_written);
    tcase_add_test(tc, limits_on_size_parameters_rendering_and_count);
    tcase_add_test(tc, an_interactive_template_starts_a_session);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    harness_require_pg();
    jobs_reap_at_exit();
    return suite_run(templates_suite());
}
