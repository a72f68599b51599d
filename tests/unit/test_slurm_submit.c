/*
 * test_slurm_submit.c - what the Slurm backend sends: the options of a slurm
 * cluster (check_options, defaults) and the body of POST job/submit (script,
 * quoting, environment, gres, partitions, accounts, images).
 */
#include "slurm_fixtures.h"

/* ---- options ------------------------------------------------------------------------ */

static bool check_options(json_t *o, char *err, size_t errsz)
{
    const struct backend_ops *ops = backend_find("slurm");
    ck_assert_ptr_nonnull(ops);
    ck_assert_str_eq(ops->kind, "slurm");
    err[0] = '\0';
    return ops->check_options(o, err, errsz);
}

/* Options as POST /clusters leaves them: checked, defaults filled. New reference. */
static json_t *checked_options(const char *text)
{
    json_t *o = parse(text);
    char err[256];
    ck_assert_msg(check_options(o, err, sizeof err), "%s refused: %s", text, err);
    return o;
}

struct opt_case {
    const char *options;
    bool ok;
    const char *err_has;
};

static const struct opt_case opt_cases[] = {
    {"{}", false, "user_name"},
    {"{\"user_name\":5}", false, "user_name"},
    {"{\"user_name\":\"\"}", false, "user_name"},
    {"{\"user_name\":\"a b\"}", false, "user_name"},
    {"{\"user_name\":\"aidc\",\"bogus\":1}", false, "options.bogus"},
    {"{\"user_name\":\"aidc\",\"gpus\":8}", false, "options.gpus"},
    {"{\"user_name\":\"aidc\",\"api_version\":\"v0.0.36\"}", false, "api_version"},
    {"{\"user_name\":\"aidc\",\"api_version\":\"v0.0.39\"}", false, "api_version"},
    {"{\"user_name\":\"aidc\",\"api_version\":38}", false, "api_version"},
    {"{\"user_name\":\"aidc\",\"container\":\"docker\"}", false, "container"},
    {"{\"user_name\":\"aidc\",\"container\":true}", false, "container"},
    {"{\"user_name\":\"aidc\",\"workdir\":\"relative/dir\"}", false, "workdir"},
    {"{\"user_name\":\"aidc\",\"workdir\":\"/jobs/%j\"}", false, "workdir"},
    {"{\"user_name\":\"aidc\",\"workdir\":7}", false, "workdir"},
    {"{\"user_name\":\"aidc\",\"workdir\":\"\"}", false, "workdir"},
    {"{\"user_name\":\"aidc\",\"partition\":\"gpu;rm\"}", false, "partition"},
    {"{\"user_name\":\"aidc\",\"partitions\":{\"urgent\":\"p\"}}", false, "partitions.urgent"},
    {"{\"user_name\":\"aidc\",\"partitions\":[\"p\"]}", false, "partitions"},
    {"{\"user_name\":\"aidc\",\"accounts\":{\"acme\":3}}", false, "accounts.acme"},
    {"{\"user_name\":\"aidc\",\"max_time_limit_minutes\":0}", false, "max_time_limit_minutes"},
    {"{\"user_name\":\"aidc\",\"max_time_limit_minutes\":525601}", false, "max_time_limit_minutes"},
    {"{\"user_name\":\"aidc\",\"storage\":\"/srv\"}", false, "options.storage"},
    {"{\"user_name\":\"aidc\",\"storage\":{}}", false, "options.storage"},
    {"{\"user_name\":\"aidc\",\"storage\":{\"root\":\"srv\"}}", false, "options.storage"},
    {"{\"user_name\":\"aidc\",\"storage\":{\"root\":\"/srv/%u\"}}", false, "options.storage"},
    {"{\"user_name\":\"aidc\",\"storage\":{\"root\":\"/srv\",\"claim\":\"x\"}}", false,
     "options.storage"},
    {"{\"user_name\":\"aidc\",\"storage\":{\"root\":\"/shared/aidc\"}}", true, NULL},
    {"{\"user_name\":\"aidc\"}", true, NULL},
    {"{\"user_name\":\"aidc\",\"api_version\":\"v0.0.37\",\"container\":\"pyxis\","
     "\"workdir\":\"/scratch/aidc\",\"partition\":\"gpu\",\"preemptible_partition\":\"preempt\","
     "\"partitions\":{\"high\":\"urgent\",\"low\":\"slow\"},\"accounts\":{\"acme\":\"acct-1\"},"
     "\"max_time_limit_minutes\":600}",
     true, NULL},
};

START_TEST(test_check_options)
{
    const struct opt_case *c = &opt_cases[_i];
    json_t *o = parse(c->options);
    char err[256];
    bool ok = check_options(o, err, sizeof err);
    ck_assert_msg(ok == c->ok, "%s: ok %d (%s)", c->options, ok, err);
    if (!ok)
        ck_assert_msg(contains(err, c->err_has), "%s: err \"%s\" lacks \"%s\"", c->options, err,
                      c->err_has);
    json_decref(o);
}
END_TEST

START_TEST(test_check_options_defaults)
{
    json_t *o = checked_options("{\"user_name\":\"aidc\"}");
    ck_assert_str_eq(json_string_value(json_object_get(o, "api_version")), "v0.0.38");
    ck_assert_str_eq(json_string_value(json_object_get(o, "container")), "none");
    ck_assert_str_eq(json_string_value(json_object_get(o, "workdir")), "/tmp");
    ck_assert_ptr_null(json_object_get(o, "partition"));
    ck_assert_uint_eq(json_object_size(o), 4);
    /* checking again changes nothing */
    json_t *copy = json_deep_copy(o);
    char err[256];
    ck_assert(check_options(o, err, sizeof err));
    ck_assert(json_equal(o, copy));
    json_decref(copy);
    json_decref(o);

    /* given values stay */
    o = checked_options("{\"user_name\":\"svc\",\"api_version\":\"v0.0.37\","
                        "\"container\":\"apptainer\",\"workdir\":\"/scratch\"}");
    ck_assert_str_eq(json_string_value(json_object_get(o, "api_version")), "v0.0.37");
    ck_assert_str_eq(json_string_value(json_object_get(o, "container")), "apptainer");
    ck_assert_str_eq(json_string_value(json_object_get(o, "workdir")), "/scratch");
    json_decref(o);
}
END_TEST

/* ---- slurm_submit_body -------------------------------------------------------------- */

static struct backend_job base_job(void)
{
    return (struct backend_job){.id = "0f3c-job-42-r1",
                                .tenant = "acme",
                                .project = "vision",
                                .user = "alice",
                                .name = "train",
                                .cpus = 4,
                                .memory_gib = 16,
                                .nodes = 1,
                                .time_limit_minutes = 60,
                                .grace_seconds = 30,
                                .priority = "normal"};
}

/* The body for job on options (checked first); the test fails when there is none. */
static json_t *body_for(const struct backend_job *job, const char *options)
{
    json_t *o = checked_options(options);
    char err[512] = "";
    /* the dispatcher always passes an object (test_submit_env_null has NULL) */
    struct backend_job copy = *job;
    json_t *empty = json_object();
    if (!copy.env)
        copy.env = empty;
    json_t *b = slurm_submit_body(&copy, o, NULL, err, sizeof err);
    ck_assert_msg(b != NULL, "no body: %s", err);
    json_decref(empty);
    json_decref(o);
    return b;
}

static const char *job_str(const json_t *body, const char *key)
{
    return json_string_value(json_object_get(json_object_get(body, "job"), key));
}

START_TEST(test_submit_command_quoting)
{
    struct backend_job job = base_job();
    json_t *cmd = parse("[\"python3\", \"train.py\", \"it's a test\", \"$HOME; rm -rf /\","
                        " \"\", \"a\\\"b\\\\c\"]");
    job.command = cmd;
    json_t *b = body_for(&job, "{\"user_name\":\"aidc\"}");
    ck_assert_str_eq(json_string_value(json_object_get(b, "script")),
                     "#!/bin/bash\n"
                     "exec 'python3' 'train.py' 'it'\\''s a test' '$HOME; rm -rf /' '' "
                     "'a\"b\\c'\n");
    ck_assert_uint_eq(json_object_size(b), 2); /* {"job", "script"} */
    json_decref(b);
    json_decref(cmd);
}
END_TEST

/* What bash makes of the script: each argument arrives as it was. */
START_TEST(test_submit_command_runs)
{
    struct backend_job job = base_job();
    json_t *cmd = parse("[\"printf\", \"<%s>\\\\n\", \"it's a test\", \"$HOME; echo no\","
                        " \"*\", \"\", \"'\\\"'\"]");
    job.command = cmd;
    json_t *b = body_for(&job, "{\"user_name\":\"aidc\"}");
    const char *script = json_string_value(json_object_get(b, "script"));
    char path[] = "/tmp/aidc-test-slurm-XXXXXX";
    int fd = mkstemp(path);
    ck_assert(fd >= 0);
    ck_assert(write(fd, script, strlen(script)) == (ssize_t)strlen(script));
    close(fd);
    char cmdline[128];
    int w = snprintf(cmdline, sizeof cmdline, "cd / && /bin/bash %s", path);
    ck_assert(w > 0 && (size_t)w < sizeof cmdline);
    FILE *p = popen(cmdline, "r");
    ck_assert_ptr_nonnull(p);
    char out[512];
    size_t got = fread(out, 1, sizeof out - 1, p);
    out[got] = '\0';
    int rc = pclose(p);
    unlink(path);
    ck_assert_int_eq(rc, 0);
    ck_assert_str_eq(out, "<it's a test>\n<$HOME; echo no>\n<*>\n<>\n<'\"'>\n");
    json_decref(b);
    json_decref(cmd);
}
END_TEST

START_TEST(test_submit_script)
{
    struct backend_job job = base_job();
    /* no #!: bash is put first; a missing last newline is added */
    job.script = "echo hi\nexit 3";
    json_t *b = body_for(&job, "{\"user_name\":\"aidc\"}");
    ck_assert_str_eq(json_string_value(json_object_get(b, "script")),
                     "#!/bin/bash\necho hi\nexit 3\n");
    json_decref(b);
    /* with #!: kept as it is */
    job.script = "#!/usr/bin/env python3\nprint('hi')\n";
    b = body_for(&job, "{\"user_name\":\"aidc\"}");
    ck_assert_str_eq(json_string_value(json_object_get(b, "script")),
                     "#!/usr/bin/env python3\nprint('hi')\n");
    json_decref(b);
    job.script = "#!/bin/sh\ntrue";
    b = body_for(&job, "{\"user_name\":\"aidc\"}");
    ck_assert_str_eq(json_string_value(json_object_get(b, "script")), "#!/bin/sh\ntrue\n");
    json_decref(b);
}
END_TEST

START_TEST(test_submit_fields)
{
    struct backend_job job = base_job();
    json_t *cmd = parse("[\"true\"]");
    job.command = cmd;
    json_t *b = body_for(&job, "{\"user_name\":\"aidc\",\"workdir\":\"/scratch/aidc\"}");
    json_t *j = json_object_get(b, "job");
    ck_assert_str_eq(job_str(b, "name"), "0f3c-job-42-r1");
    ck_assert(contains(job_str(b, "comment"), "0f3c-job-42-r1"));
    ck_assert_str_eq(job_str(b, "comment"), "aidc 0f3c-job-42-r1 acme/vision alice");
    ck_assert_str_eq(job_str(b, "current_working_directory"), "/scratch/aidc");
    /* named by the run key, not by Slurm's %j (echoed unexpanded by slurmrestd) */
    ck_assert_str_eq(job_str(b, "standard_output"), "/scratch/aidc/0f3c-job-42-r1.out");
    ck_assert_str_eq(job_str(b, "standard_error"), "/scratch/aidc/0f3c-job-42-r1.err");
    ck_assert_int_eq(json_integer_value(json_object_get(j, "time_limit")), 60);
    ck_assert_int_eq(json_integer_value(json_object_get(j, "cpus_per_task")), 4);
    ck_assert_int_eq(json_integer_value(json_object_get(j, "memory_per_node")), 16 * 1024);
    ck_assert_int_eq(json_integer_value(json_object_get(j, "nodes")), 1);
    ck_assert(json_is_false(json_object_get(j, "requeue")));
    ck_assert_ptr_null(json_object_get(j, "gres"));      /* no GPUs */
    ck_assert_ptr_null(json_object_get(j, "partition")); /* the cluster's default */
    ck_assert_ptr_null(json_object_get(j, "account"));
    /* every key is a v0.0.38 job property (an unknown key is a 400, fixture 32) */
    static const char *const known[] = {"name",
                                        "comment",
                                        "time_limit",
                                        "current_working_directory",
                                        "standard_output",
                                        "standard_error",
                                        "environment",
                                        "cpus_per_task",
                                        "memory_per_node",
                                        "nodes",
                                        "requeue",
                                        "gres",
                                        "partition",
                                        "account",
                                        NULL};
    const char *key;
    json_t *v;
    json_object_foreach(j, key, v)
    {
        bool ok = false;
        for (size_t i = 0; known[i]; i++)
            ok |= strcmp(known[i], key) == 0;
        ck_assert_msg(ok, "unexpected job key %s", key);
        if (json_is_string(v))
            ck_assert_msg(!contains(json_string_value(v), "%j"), "%s has %%j", key);
    }
    json_decref(b);

    /* the default workdir */
    b = body_for(&job, "{\"user_name\":\"aidc\"}");
    ck_assert_str_eq(job_str(b, "current_working_directory"), "/tmp");
    ck_assert_str_eq(job_str(b, "standard_output"), "/tmp/0f3c-job-42-r1.out");
    ck_assert_str_eq(job_str(b, "standard_error"), "/tmp/0f3c-job-42-r1.err");
    json_decref(b);
    json_decref(cmd);
}
END_TEST

START_TEST(test_submit_environment)
{
    struct backend_job job = base_job();
    json_t *cmd = parse("[\"env\"]");
    job.command = cmd;
    /* {} given: still a non-empty object (slurmrestd refuses {}: fixture 31) */
    json_t *b = body_for(&job, "{\"user_name\":\"aidc\"}");
    json_t *env = json_object_get(json_object_get(b, "job"), "environment");
    ck_assert(json_is_object(env));
    ck_assert_str_eq(json_string_value(json_object_get(env, "PATH")),
                     "/usr/local/bin:/usr/bin:/bin");
    ck_assert_str_eq(json_string_value(json_object_get(env, "AIDC_JOB_ID")), "0f3c-job-42-r1");
    ck_assert_str_eq(json_string_value(json_object_get(env, "AIDC_TENANT")), "acme");
    ck_assert_str_eq(json_string_value(json_object_get(env, "AIDC_PROJECT")), "vision");
    ck_assert_uint_eq(json_object_size(env), 4);
    json_decref(b);

    /* the job's own: kept, PATH included; AIDC_JOB_ID cannot be faked; the caller's intact */
    json_t *mine = parse("{\"FOO\":\"bar baz\",\"PATH\":\"/opt/bin\",\"AIDC_JOB_ID\":\"spoof\"}");
    job.env = mine;
    b = body_for(&job, "{\"user_name\":\"aidc\"}");
    env = json_object_get(json_object_get(b, "job"), "environment");
    ck_assert_str_eq(json_string_value(json_object_get(env, "FOO")), "bar baz");
    ck_assert_str_eq(json_string_value(json_object_get(env, "PATH")), "/opt/bin");
    ck_assert_str_eq(json_string_value(json_object_get(env, "AIDC_JOB_ID")), "0f3c-job-42-r1");
    ck_assert_uint_eq(json_object_size(mine), 3);
    ck_assert_str_eq(json_string_value(json_object_get(mine, "AIDC_JOB_ID")), "spoof");
    ck_assert_ptr_null(json_object_get(mine, "AIDC_TENANT"));
    json_decref(b);
    json_decref(mine);
    json_decref(cmd);
}
END_TEST

/* A job without env still gets a body (and, under ASan, nothing leaks). */
START_TEST(test_submit_env_null)
{
    struct backend_job job = base_job();
    json_t *cmd = parse("[\"env\"]");
    job.command = cmd;
    job.env = NULL;
    json_t *o = checked_options("{\"user_name\":\"aidc\"}");
    char err[256] = "";
    json_t *b = slurm_submit_body(&job, o, NULL, err, sizeof err);
    ck_assert_ptr_nonnull(b);
    json_t *env = json_object_get(json_object_get(b, "job"), "environment");
    ck_assert_str_eq(json_string_value(json_object_get(env, "PATH")),
                     "/usr/local/bin:/usr/bin:/bin");
    ck_assert_str_eq(json_string_value(json_object_get(env, "AIDC_JOB_ID")), "0f3c-job-42-r1");
    ck_assert_uint_eq(json_object_size(env), 4);
    json_decref(b);
    json_decref(o);
    json_decref(cmd);
}
END_TEST

START_TEST(test_submit_gres)
{
    struct backend_job job = base_job();
    json_t *cmd = parse("[\"nvidia-smi\"]");
    job.command = cmd;
    job.gpus = 2;
    job.gpu_type = "a100";
    json_t *b = body_for(&job, "{\"user_name\":\"aidc\"}");
    ck_assert_str_eq(job_str(b, "gres"), "gpu:a100:2");
    json_decref(b);
    job.gpus = 0;
    job.gpu_type = NULL;
    b = body_for(&job, "{\"user_name\":\"aidc\"}");
    ck_assert_ptr_null(json_object_get(json_object_get(b, "job"), "gres"));
    json_decref(b);
    json_decref(cmd);
}
END_TEST

struct part_case {
    const char *options;
    const char *priority;
    bool preemptible;
    const char *partition; /* NULL: none sent */
};

#define PARTS                                                                                      \
    "{\"user_name\":\"aidc\",\"partition\":\"gpu\",\"preemptible_partition\":\"preempt\","         \
    "\"partitions\":{\"high\":\"urgent\",\"low\":\"slow\"}}"

static const struct part_case part_cases[] = {
    {"{\"user_name\":\"aidc\"}", "normal", false, NULL},
    {"{\"user_name\":\"aidc\"}", "high", true, NULL},
    {"{\"user_name\":\"aidc\",\"partition\":\"gpu\"}", "normal", false, "gpu"},
    {"{\"user_name\":\"aidc\",\"partition\":\"gpu\"}", "high", false, "gpu"},
    {"{\"user_name\":\"aidc\",\"partition\":\"gpu\"}", NULL, false, "gpu"},
    {PARTS, "high", false, "urgent"},
    {PARTS, "low", false, "slow"},
    {PARTS, "normal", false, "gpu"},
    {PARTS, NULL, false, "gpu"},
    {PARTS, "high", true, "preempt"},
    {PARTS, "normal", true, "preempt"},
    /* preemptible without a partition of its own: by priority */
    {"{\"user_name\":\"aidc\",\"partition\":\"gpu\",\"partitions\":{\"low\":\"slow\"}}", "low",
     true, "slow"},
    {"{\"user_name\":\"aidc\",\"partitions\":{\"normal\":\"std\"}}", NULL, false, "std"},
};

START_TEST(test_submit_partition)
{
    const struct part_case *c = &part_cases[_i];
    struct backend_job job = base_job();
    json_t *cmd = parse("[\"true\"]");
    job.command = cmd;
    job.priority = c->priority;
    job.preemptible = c->preemptible;
    json_t *b = body_for(&job, c->options);
    const char *p = job_str(b, "partition");
    if (c->partition)
        ck_assert_msg(p && strcmp(p, c->partition) == 0, "%s %s%s: partition %s, want %s",
                      c->options, c->priority ? c->priority : "(null)",
                      c->preemptible ? " preemptible" : "", p ? p : "(none)", c->partition);
    else
        ck_assert_msg(p == NULL, "%s: partition %s, want none", c->options, p);
    ck_assert(json_equal(json_object_get(json_object_get(b, "job"), "requeue"),
                         c->preemptible ? json_true() : json_false()));
    json_decref(b);
    json_decref(cmd);
}
END_TEST

START_TEST(test_submit_account)
{
    struct backend_job job = base_job();
    json_t *cmd = parse("[\"true\"]");
    job.command = cmd;
    const char *opts = "{\"user_name\":\"aidc\",\"accounts\":{\"acme\":\"acct-acme\","
                       "\"globex\":\"acct-g\"}}";
    json_t *b = body_for(&job, opts);
    ck_assert_str_eq(job_str(b, "account"), "acct-acme");
    json_decref(b);
    job.tenant = "initech";
    b = body_for(&job, opts);
    ck_assert_ptr_null(json_object_get(json_object_get(b, "job"), "account"));
    json_decref(b);
    json_decref(cmd);
}
END_TEST

START_TEST(test_submit_image)
{
    struct backend_job job = base_job();
    json_t *cmd = parse("[\"python3\", \"train.py\"]");
    job.command = cmd;
    job.image = "nvcr.io/nvidia/pytorch:24.01-py3";

    /* no container mode: refused, the image named */
    json_t *o = checked_options("{\"user_name\":\"aidc\"}");
    char err[512] = "";
    ck_assert_ptr_null(slurm_submit_body(&job, o, NULL, err, sizeof err));
    ck_assert_msg(contains(err, "nvcr.io/nvidia/pytorch:24.01-py3"), "err: %s", err);
    ck_assert_msg(contains(err, "container"), "err: %s", err);
    json_decref(o);

    json_t *b = body_for(&job, "{\"user_name\":\"aidc\",\"container\":\"apptainer\"}");
    ck_assert_str_eq(json_string_value(json_object_get(b, "script")),
                     "#!/bin/bash\nexec apptainer exec --nv "
                     "'docker://nvcr.io/nvidia/pytorch:24.01-py3' 'python3' 'train.py'\n");
    json_decref(b);

    b = body_for(&job, "{\"user_name\":\"aidc\",\"container\":\"pyxis\"}");
    ck_assert_str_eq(json_string_value(json_object_get(b, "script")),
                     "#!/bin/bash\nexec srun --container-image="
                     "'nvcr.io/nvidia/pytorch:24.01-py3' 'python3' 'train.py'\n");
    json_decref(b);

    /* a script inside a container goes to bash -c, quoted */
    job.command = NULL;
    job.script = "echo 'hi'";
    b = body_for(&job, "{\"user_name\":\"aidc\",\"container\":\"apptainer\"}");
    ck_assert_str_eq(json_string_value(json_object_get(b, "script")),
                     "#!/bin/bash\nexec apptainer exec --nv "
                     "'docker://nvcr.io/nvidia/pytorch:24.01-py3' /bin/bash -c "
                     "'echo '\\''hi'\\'''\n");
    json_decref(b);
    json_decref(cmd);
}
END_TEST

/* The body looks like the one slurmrestd accepted in fixture 10. */
START_TEST(test_submit_like_fixture)
{
    json_t *f = fixture("10-submit-job.json");
    json_t *sent = json_object_get(json_object_get(f, "request"), "body");
    ck_assert(json_is_object(json_object_get(sent, "job")));
    ck_assert(json_is_string(json_object_get(sent, "script")));
    struct backend_job job = base_job();
    job.script = "echo hi\n";
    job.gpus = 2;
    job.gpu_type = "a100";
    json_t *b = body_for(&job, "{\"user_name\":\"aidc\",\"partition\":\"gpu\"}");
    /* same top level, and every key the accepted job had has the same JSON type here */
    const char *key;
    json_t *v;
    json_object_foreach(sent, key, v)
    {
        ck_assert_msg(json_object_get(b, key) != NULL, "no %s", key);
    }
    json_t *j = json_object_get(b, "job");
    json_object_foreach(json_object_get(sent, "job"), key, v)
    {
        json_t *mine = json_object_get(j, key);
        ck_assert_msg(mine != NULL, "job.%s missing", key);
        ck_assert_msg(json_typeof(mine) == json_typeof(v), "job.%s of another type", key);
    }
    ck_assert_str_eq(job_str(b, "gres"),
                     json_string_value(json_object_get(json_object_get(sent, "job"), "gres")));
    json_decref(b);
    json_decref(f);
}
END_TEST


/* Mounts: nothing mounted, the job told where its spaces are on the nodes, working in its project's. */
START_TEST(test_submit_mounts)
{
    struct backend_job job = base_job();
    job.script = "echo hi\n";
    json_t *m = parse("[{\"space\":\"project\"},{\"space\":\"home\"},"
                      "{\"space\":\"dataset\",\"name\":\"imagenet\"}]");
    job.mounts = m;
    json_t *env = json_object();
    job.env = env;
    json_t *o = checked_options("{\"user_name\":\"aidc\",\"workdir\":\"/scratch/aidc\"}");
    char err[512] = "";
    json_t *b = slurm_submit_body(&job, o, "/srv/aidc", err, sizeof err);
    ck_assert_msg(b != NULL, "%s", err);
    const json_t *e = json_object_get(json_object_get(b, "job"), "environment");
    ck_assert_str_eq(job_str(b, "current_working_directory"), "/srv/aidc/acme/projects/vision");
    ck_assert_str_eq(json_string_value(json_object_get(e, "AIDC_PROJECT_DIR")),
                     "/srv/aidc/acme/projects/vision");
    ck_assert_str_eq(json_string_value(json_object_get(e, "AIDC_HOME_DIR")),
                     "/srv/aidc/acme/home/alice");
    ck_assert_str_eq(json_string_value(json_object_get(e, "AIDC_DATASETS_DIR")),
                     "/srv/aidc/acme/datasets");
    /* the output stays in the workdir */
    ck_assert_str_eq(job_str(b, "standard_output"), "/scratch/aidc/0f3c-job-42-r1.out");
    json_decref(b);
    json_decref(o);
    /* options.storage.root: where the nodes mount it */
    o = checked_options("{\"user_name\":\"aidc\",\"storage\":{\"root\":\"/shared\"}}");
    b = slurm_submit_body(&job, o, "/srv/aidc", err, sizeof err);
    ck_assert_msg(b != NULL, "%s", err);
    ck_assert_str_eq(job_str(b, "current_working_directory"), "/shared/acme/projects/vision");
    json_decref(b);
    /* no root at all: refused, saying so */
    json_decref(o);
    o = checked_options("{\"user_name\":\"aidc\"}");
    ck_assert_ptr_null(slurm_submit_body(&job, o, NULL, err, sizeof err));
    ck_assert_msg(contains(err, "options.storage.root"), "%s", err);
    /* a read-only project cannot be had on the shared file system itself */
    json_decref(m);
    m = parse("[{\"space\":\"project\",\"read_only\":true}]");
    job.mounts = m;
    ck_assert_ptr_null(slurm_submit_body(&job, o, "/srv/aidc", err, sizeof err));
    ck_assert_msg(contains(err, "read-only"), "%s", err);
    /* what the backend is handed is checked again */
    json_decref(m);
    m = parse("[{\"space\":\"dataset\",\"name\":\"../../etc\"}]");
    job.mounts = m;
    ck_assert_ptr_null(slurm_submit_body(&job, o, "/srv/aidc", err, sizeof err));
    ck_assert_msg(contains(err, "mounts[0].name"), "%s", err);
    /* no mounts: the workdir, no variables */
    job.mounts = NULL;
    b = slurm_submit_body(&job, o, "/srv/aidc", err, sizeof err);
    ck_assert_str_eq(job_str(b, "current_working_directory"), "/tmp");
    ck_assert_ptr_null(json_object_get(json_object_get(json_object_get(b, "job"), "environment"),
                                       "AIDC_PROJECT_DIR"));
    json_decref(b);
    json_decref(o);
    json_decref(m);
    json_decref(env);
}
END_TEST

/* ---- suite -------------------------------------------------------------------------- */

int main(void)
{
    Suite *s = suite_create("slurm_submit");
    TCase *tc = slurm_tcase(s, "options");
    tcase_add_loop_test(tc, test_check_options, 0, COUNT(opt_cases));
    tcase_add_test(tc, test_check_options_defaults);

    tc = slurm_tcase(s, "submit");
    tcase_add_test(tc, test_submit_command_quoting);
    tcase_add_test(tc, test_submit_command_runs);
    tcase_add_test(tc, test_submit_script);
    tcase_add_test(tc, test_submit_fields);
    tcase_add_test(tc, test_submit_environment);
    tcase_add_test(tc, test_submit_env_null);
    tcase_add_test(tc, test_submit_gres);
    tcase_add_loop_test(tc, test_submit_partition, 0, COUNT(part_cases));
    tcase_add_test(tc, test_submit_account);
    tcase_add_test(tc, test_submit_image);
    tcase_add_test(tc, test_submit_like_fixture);
    tcase_add_test(tc, test_submit_mounts);
    return suite_run(s);
}
