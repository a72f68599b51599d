/* slurm.c - the Slurm backend (see slurm.h). */
#include "slurm.h"

#include "../lib/fsat.h"

#include "../lib/gputype.h"

#include "../lib/err.h"
#include "../lib/xalloc.h"
#include "slurmapp.h"
#include "slurmnode.h"
#include "slurmrest.h"
#include "slurmscript.h"
#include "../storage/jobmount.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>
#include <sys/wait.h>

#define DEFAULT_API "v0.0.38"
#define DEFAULT_WORKDIR "/tmp"
#define MAX_NAME 64
#define ADOPT_WINDOW_S 300 /* a lost submit is looked for among jobs changed this long before */
#define SLURM_INVALID_JOB_ID 2017

/* ---- options ------------------------------------------------------------------------ */

static bool name_ok(const char *s, size_t max)
{
    size_t n = strlen(s);
    if (n < 1 || n > max)
        return false;
    for (size_t i = 0; i < n; i++)
        if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') ||
              (s[i] >= '0' && s[i] <= '9') || s[i] == '_' || s[i] == '-' || s[i] == '.'))
            return false;
    return true;
}

static bool string_option(json_t *o, const char *key, const char *def, char *err, size_t errsz)
{
    json_t *v = json_object_get(o, key);
    if (!v) {
        if (def && json_object_set_new(o, key, json_string(def)) != 0) {
            snprintf(err, errsz, "out of memory");
            return false;
        }
        return true;
    }
    if (!json_is_string(v) || !name_ok(json_string_value(v), MAX_NAME)) {
        snprintf(err, errsz, "options.%s must be a name of 1 to %d letters, digits, '_', '-', '.'",
                 key, MAX_NAME);
        return false;
    }
    return true;
}

/* {"high": "p1", ...} or {"<tenant>": "account"}: an object of names */
static bool map_option(json_t *o, const char *key, const char *const *keys, char *err,
                       size_t errsz)
{
    json_t *m = json_object_get(o, key);
    if (!m)
        return true;
    if (!json_is_object(m) || json_object_size(m) > 1000) {
        snprintf(err, errsz, "options.%s must be an object (at most 1000 entries)", key);
        return false;
    }
    const char *k;
    json_t *v;
    json_object_foreach(m, k, v) {
        bool known = !keys;
        for (size_t i = 0; keys && keys[i]; i++)
            known |= strcmp(keys[i], k) == 0;
        if (!known || !name_ok(k, MAX_NAME) || !json_is_string(v) ||
            !name_ok(json_string_value(v), MAX_NAME)) {
            snprintf(err, errsz, "options.%s.%.64s: %s", key, k,
                     known ? "must be a name of letters, digits, '_', '-', '.'"
                           : "is not a priority (high, normal, low)");
            return false;
        }
    }
    return true;
}

/* options.storage: {"root": "/path"}, where the storage spaces are on the nodes */
static bool storage_option(const json_t *o, char *err, size_t errsz)
{
    const json_t *st = json_object_get(o, "storage");
    const char *root = json_string_value(json_object_get(st, "root"));
    if (st && (!json_is_object(st) || json_object_size(st) != 1 || !root || root[0] != '/' ||
               strlen(root) > 512 || strchr(root, '%'))) {
        snprintf(err, errsz, "options.storage must be {\"root\": \"/path\"}: the absolute path "
                             "(at most 512 bytes, without %%) of the storage spaces on the nodes");
        return false;
    }
    return true;
}

static bool check_options(json_t *o, char *err, size_t errsz)
{
    static const char *const known[] = {"user_name", "api_version", "partition",
                                        "preemptible_partition", "partitions", "accounts",
                                        "workdir", "container", "max_time_limit_minutes",
                                        "timeout_seconds", "drain_command", "resume_command",
                                        "storage", NULL};
    static const char *const prios[] = {"high", "normal", "low", NULL};
    const char *key;
    json_t *v;
    json_object_foreach(o, key, v) {
        bool ok = false;
        for (size_t i = 0; known[i]; i++)
            ok |= strcmp(key, known[i]) == 0;
        if (!ok) {
            snprintf(err, errsz, "options.%.64s is not an option of the slurm backend", key);
            return false;
        }
    }
    if (!json_is_string(json_object_get(o, "user_name"))) {
        snprintf(err, errsz, "options.user_name is required: the Unix user Slurm runs jobs as");
        return false;
    }
    const char *api = json_string_value(json_object_get(o, "api_version"));
    if (json_object_get(o, "api_version") &&
        (!api || (strcmp(api, "v0.0.38") != 0 && strcmp(api, "v0.0.37") != 0))) {
        snprintf(err, errsz, "options.api_version must be v0.0.38 or v0.0.37");
        return false;
    }
    const char *container = json_string_value(json_object_get(o, "container"));
    if (json_object_get(o, "container") &&
        (!container || (strcmp(container, "none") != 0 && strcmp(container, "apptainer") != 0 &&
                        strcmp(container, "pyxis") != 0))) {
        snprintf(err, errsz, "options.container must be none, apptainer or pyxis");
        return false;
    }
    json_t *wd = json_object_get(o, "workdir");
    if (wd && (!json_is_string(wd) || json_string_value(wd)[0] != '/' ||
               strlen(json_string_value(wd)) > 512 || strchr(json_string_value(wd), '%'))) {
        snprintf(err, errsz, "options.workdir must be an absolute path of at most 512 bytes"
                             " (without %%)");
        return false;
    }
    json_t *to = json_object_get(o, "timeout_seconds");
    if (to && (!json_is_integer(to) || json_integer_value(to) < 1 ||
               json_integer_value(to) > 300)) {
        snprintf(err, errsz, "options.timeout_seconds must be an integer from 1 to 300");
        return false;
    }
    json_t *tl = json_object_get(o, "max_time_limit_minutes");
    if (tl && (!json_is_integer(tl) || json_integer_value(tl) < 1 ||
               json_integer_value(tl) > 525600)) {
        snprintf(err, errsz, "options.max_time_limit_minutes must be an integer from 1 to 525600");
        return false;
    }
    return slurmnode_check_options(o, err, errsz) && storage_option(o, err, errsz) &&
           string_option(o, "user_name", NULL, err, errsz) &&
           string_option(o, "api_version", DEFAULT_API, err, errsz) &&
           string_option(o, "partition", NULL, err, errsz) &&
           string_option(o, "preemptible_partition", NULL, err, errsz) &&
           string_option(o, "container", "none", err, errsz) &&
           map_option(o, "partitions", prios, err, errsz) &&
           map_option(o, "accounts", NULL, err, errsz) &&
           (wd || json_object_set_new(o, "workdir", json_string(DEFAULT_WORKDIR)) == 0);
}

static const char *opt(const json_t *o, const char *key, const char *def)
{
    const char *v = json_string_value(json_object_get(o, key));
    return v ? v : def;
}

static struct slurmrest_target target(const struct backend_cluster *c)
{
    return (struct slurmrest_target){
        .endpoint = c->endpoint, .credref = c->credentials_ref,
        .user = opt(c->options, "user_name", "aidc"),
        .api_version = opt(c->options, "api_version", DEFAULT_API),
        .timeout_seconds = (int)json_integer_value(json_object_get(c->options, "timeout_seconds"))};
}

/* ---- answers ------------------------------------------------------------------------ */

static long long ival(const json_t *o, const char *key)
{
    return json_integer_value(json_object_get(o, key));
}

void slurm_job_status(const json_t *job, struct backend_status *out)
{
    memset(out, 0, sizeof *out);
    out->exit_code = -1;
    const char *state = json_string_value(json_object_get(job, "job_state"));
    const char *why = json_string_value(json_object_get(job, "state_reason"));
    if (!state)
        state = "";
    if (!why || strcmp(why, "None") == 0)
        why = "";
    time_t start = (time_t)ival(job, "start_time"), end = (time_t)ival(job, "end_time");
    static const char *const waiting[] = {"PENDING", "CONFIGURING", "REQUEUED", "REQUEUE_HOLD",
                                          "REQUEUE_FED", "RESV_DEL_HOLD", "SPECIAL_EXIT", NULL};
    static const char *const running[] = {"RUNNING", "COMPLETING", "SUSPENDED", "STOPPED",
                                          "RESIZING", "SIGNALING", "STAGE_OUT", NULL};
    for (size_t i = 0; waiting[i]; i++)
        if (strcmp(state, waiting[i]) == 0) {
            out->state = BS_PENDING;
            out->restarts = (int)ival(job, "restart_cnt");
            snprintf(out->reason, sizeof out->reason, "%s%s%s", state, *why ? ": " : "", why);
            return;
        }
    for (size_t i = 0; running[i]; i++)
        if (strcmp(state, running[i]) == 0) {
            out->state = BS_RUNNING;
            out->started_at = start;
            return;
        }
    out->started_at = start;
    out->finished_at = end;
    /* exit_code is the raw wait status (exit 3 is 768, signal 9 is 9); values
     * that are neither (a launch failure's 4021) are Slurm error numbers */
    long long raw = ival(job, "exit_code");
    int status = raw >= 0 && raw < 65536 ? (int)raw : -1;
    bool exited = status >= 0 && (status & 0xff) == 0;
    /* a signal: its number in the low 7 bits, 0x80 when it dumped core */
    bool signaled = status > 0 && status < 256 && (status & 0x7f) != 0 && (status & 0x7f) != 0x7f;
    if (exited)
        out->exit_code = WEXITSTATUS(status);
    if (strcmp(state, "COMPLETED") == 0 && out->exit_code == 0) {
        out->state = BS_SUCCEEDED;
        return;
    }
    if (strcmp(state, "CANCELLED") == 0 || strcmp(state, "PREEMPTED") == 0) {
        out->state = BS_STOPPED;
        snprintf(out->reason, sizeof out->reason, "Slurm: %s%s%s", state, *why ? ", " : "", why);
        return;
    }
    out->state = BS_FAILED;
    if (strcmp(state, "TIMEOUT") == 0)
        snprintf(out->reason, sizeof out->reason, "time limit (Slurm: TIMEOUT)");
    else if (signaled)
        snprintf(out->reason, sizeof out->reason, "killed by signal %d (Slurm: %s%s%s)",
                 status & 0x7f, state, *why ? ", " : "", why);
    else if (raw && !exited)
        snprintf(out->reason, sizeof out->reason, "Slurm: %s, status %lld%s%s", state, raw,
                 *why ? ", " : "", why);
    else
        snprintf(out->reason, sizeof out->reason, "Slurm: %s%s%s", state, *why ? ", " : "", why);
    if (!state[0])
        out->state = BS_UNKNOWN;
}

static bool has_flag(const json_t *flags, const char *prefix)
{
    size_t i;
    json_t *f;
    json_array_foreach(flags, i, f) {
        const char *s = json_string_value(f);
        if (s && strncasecmp(s, prefix, strlen(prefix)) == 0)
            return true;
    }
    return false;
}

bool slurm_node_usable(const json_t *node)
{
    const char *state = json_string_value(json_object_get(node, "state"));
    if (!state)
        return false;
    static const char *const bad[] = {"down", "drain", "fail", "future", "unknown", NULL};
    for (size_t i = 0; bad[i]; i++)
        if (strncasecmp(state, bad[i], strlen(bad[i])) == 0)
            return false;
    const json_t *flags = json_object_get(node, "state_flags");
    return !has_flag(flags, "DRAIN") && !has_flag(flags, "FAIL") &&
           !has_flag(flags, "NOT_RESPONDING") && !has_flag(flags, "MAINTENANCE");
}

int slurm_inventory_parse(const json_t *nodes, struct backend_resource *out, size_t max)
{
    int n = 0;
    backend_resource_add(out, max, &n, "cpu", 0);
    backend_resource_add(out, max, &n, "memory_gib", 0);
    size_t i;
    json_t *node;
    json_array_foreach(nodes, i, node) {
        if (!slurm_node_usable(node))
            continue;
        backend_resource_add(out, max, &n, "cpu", ival(node, "cpus"));
        backend_resource_add(out, max, &n, "memory_gib", ival(node, "real_memory") / 1024);
        /* "gpu:a100:8" or "gpu:a100:4(S:0),gpu:h100:2(S:1)"; an untyped "gpu:8" has no type */
        const char *gres = json_string_value(json_object_get(node, "gres"));
        char *copy = xstrdup(gres ? gres : ""), *save = NULL;
        for (char *g = strtok_r(copy, ",", &save); g; g = strtok_r(NULL, ",", &save)) {
            char *paren = strchr(g, '(');
            if (paren)
                *paren = '\0';
            /* gpu:<type>:<count>, the type as aidc writes GPU types */
            char *colon = strncmp(g, "gpu:", 4) == 0 ? strchr(g + 4, ':') : NULL;
            size_t tl = colon ? (size_t)(colon - g - 4) : 0;
            char *end = NULL;
            long long count = colon ? strtoll(colon + 1, &end, 10) : 0;
            if (!colon || tl < 1 || tl > 32 || !end || *end || end == colon + 1 || count <= 0)
                continue;
            *colon = '\0';
            if (!gputype_valid(g + 4))
                continue;
            char name[48];
            snprintf(name, sizeof name, "gpu:%s", g + 4);
            backend_resource_add(out, max, &n, name, count);
        }
        free(copy);
    }
    return n;
}

const json_t *slurm_find_run(const json_t *jobs, const char *run_key, const char *user)
{
    size_t i;
    json_t *j;
    json_array_foreach(jobs, i, j) {
        const char *name = json_string_value(json_object_get(j, "name"));
        const char *owner = json_string_value(json_object_get(j, "user_name"));
        if (name && strcmp(name, run_key) == 0 && (!owner || strcmp(owner, user) == 0))
            return j;
    }
    return NULL;
}

/* ---- submit ------------------------------------------------------------------------- */

static const char *partition_for(const struct backend_job *job, const json_t *o,
                                 const char *priority)
{
    if (job->preemptible && json_string_value(json_object_get(o, "preemptible_partition")))
        return json_string_value(json_object_get(o, "preemptible_partition"));
    const char *p = json_string_value(json_object_get(json_object_get(o, "partitions"), priority));
    return p ? p : json_string_value(json_object_get(o, "partition"));
}

/*
 * The job's storage spaces (storage/jobmount.h) on the nodes: nothing is
 * mounted, the job is told where they are on the shared file system, beneath
 * options.storage.root (else root: aidcd's own, the same file system mounted
 * at the same path), into env; cwd receives the project's space when it is
 * mounted. false with err when the job cannot have them here.
 */
static bool storage_env(const struct backend_job *job, const json_t *options, const char *root,
                        json_t *env, char *cwd, size_t cwdsz, char *err, size_t errsz)
{
    struct jobmount m[JOBMOUNT_MAX];
    int n = jobmount_parse(job->mounts, job->tenant, job->project, job->user, m, err, errsz);
    const char *own = json_string_value(json_object_get(json_object_get(options, "storage"), "root"));
    root = own ? own : root;
    if (n > 0 && !root)
        snprintf(err, errsz, "the job mounts storage spaces, but this Slurm cluster has no "
                             "options.storage.root");
    return n == 0 || (n > 0 && root && jobmount_host(m, (size_t)n, root, env, cwd, cwdsz, err, errsz));
}

json_t *slurm_submit_body(const struct backend_job *job, const json_t *options,
                          const char *storage_root, char *err, size_t errsz)
{
    const char *wd = opt(options, "workdir", DEFAULT_WORKDIR);
    char cwd[4096 + JOBMOUNT_REL_MAX];
    snprintf(cwd, sizeof cwd, "%s", wd);
    json_t *env = job->env ? json_deep_copy(job->env) : NULL;
    if (!json_is_object(env)) {
        json_decref(env);
        env = json_object();
    }
    char *comment = xasprintf("aidc %s %s/%s %s", job->id, job->tenant, job->project, job->user);
    char *script = storage_env(job, options, storage_root, env, cwd, sizeof cwd, err, errsz)
                       ? slurmscript_build(job, opt(options, "container", "none"), comment, err,
                                           errsz)
                       : NULL;
    if (!script) {
        json_decref(env);
        free(comment);
        return NULL;
    }
    /* slurmrestd wants a non-empty environment, and the job gets nothing else */
    if (!json_object_get(env, "PATH"))
        json_object_set_new(env, "PATH", json_string("/usr/local/bin:/usr/bin:/bin"));
    json_object_set_new(env, "AIDC_JOB_ID", json_string(job->id));
    json_object_set_new(env, "AIDC_TENANT", json_string(job->tenant));
    json_object_set_new(env, "AIDC_PROJECT", json_string(job->project));
    /* a job array's tasks write files of their own (%a: the task's index) */
    const char *each = job->array_count > 0 ? "_%a" : "";
    char *out = xasprintf("%s/%s%s.out", wd, job->id, each),
         *errf = xasprintf("%s/%s%s.err", wd, job->id, each);
    /* "nodes", not "minimum_nodes": slurmrestd 22.05 (v0.0.38) takes the latter and ignores
     * it, giving a job of N nodes one (tests/http/test_templates_slurm.c) */
    json_t *j = json_pack("{s:s, s:s, s:i, s:s, s:s, s:s, s:o, s:i, s:i, s:i, s:b}", "name",
                          job->id, "comment", comment, "time_limit", job->time_limit_minutes,
                          "current_working_directory", cwd, "standard_output", out,
                          "standard_error", errf, "environment", env, "cpus_per_task", job->cpus,
                          "memory_per_node", job->memory_gib * 1024, "nodes", job->nodes,
                          "requeue", job->preemptible);
    free(out);
    free(errf);
    free(comment);
    if (!j) {
        free(script);
        snprintf(err, errsz, "out of memory");
        return NULL;
    }
    if (job->gpus > 0 && job->gpu_type) {
        char *gres = xasprintf("gpu:%s:%d", job->gpu_type, job->gpus);
        json_object_set_new(j, "gres", json_string(gres));
        free(gres);
    }
    if (job->dependency && *job->dependency)
        json_object_set_new(j, "dependency", json_string(job->dependency));
    if (job->array_count > 0) { /* one job array: --array=0-(N-1)%M */
        char *spec =
            xasprintf("0-%d%%%d", job->array_count - 1,
                      job->array_max_parallel > 0 ? job->array_max_parallel : job->array_count);
        json_object_set_new(j, "array", json_string(spec));
        free(spec);
    }
    const char *part = partition_for(job, options, job->priority ? job->priority : "normal");
    if (part)
        json_object_set_new(j, "partition", json_string(part));
    const char *acct =
        json_string_value(json_object_get(json_object_get(options, "accounts"), job->tenant));
    if (acct)
        json_object_set_new(j, "account", json_string(acct));
    json_t *body = json_pack("{s:o, s:s}", "job", j, "script", script);
    free(script);
    if (!body)
        snprintf(err, errsz, "out of memory");
    return body;
}

/* ---- operations --------------------------------------------------------------------- */

/*
 * The job list of GET jobs?update_time=since (new reference), NULL with err.
 * A submit's look for an earlier delivery records it in call->lookup.
 */
static json_t *jobs_since(const struct backend_cluster *c, time_t since,
                          struct backend_call *call, char *err, size_t errsz)
{
    struct slurmrest_target t = target(c);
    struct slurmrest_answer a;
    char path[64];
    snprintf(path, sizeof path, "jobs?update_time=%lld", (long long)(since > 0 ? since : 0));
    if (slurmrest_call_record(&t, "GET", path, NULL, &a, call ? &call->lookup : NULL, err, errsz))
        return NULL;
    if (call)
        call->status = (int)a.status;
    json_t *jobs = NULL;
    /* nothing changed since then: slurmrestd says 304 Not Modified, with no body */
    if (a.status == 304)
        jobs = json_array();
    else if (slurmrest_ok(&a, err, errsz) && json_is_array(json_object_get(a.json, "jobs")))
        jobs = json_incref(json_object_get(a.json, "jobs"));
    else if (!err[0])
        snprintf(err, errsz, "GET jobs: no job list in the answer");
    slurmrest_answer_free(&a);
    return jobs;
}

/* The error number of an answer's first error (2017: no such job). */
static long long error_number(const struct slurmrest_answer *a)
{
    json_t *er = json_array_get(json_object_get(a->json, "errors"), 0);
    json_t *n = json_object_get(er, "error_number");
    return json_integer_value(n ? n : json_object_get(er, "error_code"));
}

/*
 * Whether Slurm refused the job itself (slurmrestd could not parse it: 400;
 * slurmctld rejects it: invalid partition 2000, a node configuration no node
 * has 2014, as recorded in tests/fixtures/slurmrestd/), rather than failing
 * to answer.
 */
static bool refused(const struct slurmrest_answer *a)
{
    static const long long permanent[] = {2000, 2014};
    if (a->status == 400)
        return true;
    long long n = error_number(a);
    for (size_t i = 0; i < sizeof permanent / sizeof permanent[0]; i++)
        if (n == permanent[i])
            return true;
    return false;
}

static int submit(const struct backend_cluster *c, const struct backend_job *job, char *backend_id,
                  size_t idsz, struct backend_call *call, char *err, size_t errsz)
{
    struct slurmrest_target t = target(c);
    /* a delivery tried before may have reached Slurm: adopt its job */
    if (job->retry) {
        json_t *jobs = jobs_since(c, job->since - ADOPT_WINDOW_S, call, err, errsz);
        if (!jobs)
            return AIDC_EUNAVAIL;
        const json_t *found = slurm_find_run(jobs, job->id, t.user);
        /* any task of a job array names the array by its array_job_id */
        if (found)
            snprintf(backend_id, idsz, "%lld",
                     ival(found, "array_job_id") > 0 ? ival(found, "array_job_id")
                                                     : ival(found, "job_id"));
        json_decref(jobs);
        if (found && call)
            call->adopted = true;
        if (found)
            return 0;
        if (call)
            call->status = 0; /* the status recorded is the submit's own */
    }
    json_t *body = slurm_submit_body(job, c->options, c->storage_root, err, errsz);
    if (!body)
        return AIDC_EINVAL;
    struct slurmrest_answer a;
    int e = slurmrest_call_record(&t, "POST", "job/submit", body, &a,
                                  call ? &call->request : NULL, err, errsz);
    json_decref(body);
    if (call) { /* the user's environment values stay out of the audit trail */
        json_t *sent = json_object_get(json_object_get(call->request, "body"), "job");
        backend_call_hide_env(json_object_get(sent, "environment"), job->env);
    }
    if (e)
        return e;
    if (call)
        call->status = (int)a.status;
    if (slurmrest_ok(&a, err, errsz) && json_integer_value(json_object_get(a.json, "job_id")) > 0)
        snprintf(backend_id, idsz, "%lld", ival(a.json, "job_id"));
    else if (refused(&a))
        e = AIDC_EINVAL;
    else
        e = AIDC_EUNAVAIL; /* a bad token, slurmctld away: tried again */
    if (e && !err[0])
        snprintf(err, errsz, "POST job/submit: no job_id in the answer");
    slurmrest_answer_free(&a);
    if (!e && backend_fault("after_backend_submit"))
        _exit(99); /* tests: die between Slurm's accept and aidc's commit */
    /* tests: Slurm took the job but its answer was lost: the retry must adopt it */
    if (!e && !job->retry && backend_fault("lose_submit_answer")) {
        snprintf(err, errsz, "test fault: the answer of POST job/submit was lost");
        e = AIDC_EUNAVAIL;
    }
    return e;
}

/* A Slurm job id, or a job array's task ("<array_job_id>_<index>"). */
static bool valid_id(const char *backend_id)
{
    if (!backend_id || !*backend_id || strlen(backend_id) > 20)
        return false;
    const char *p = backend_id, *us = strchr(backend_id, '_');
    if (us && (us == backend_id || !us[1]))
        return false;
    for (; *p; p++)
        if ((*p < '0' || *p > '9') && p != us)
            return false;
    return true;
}

void slurm_backend_id(const json_t *job, char *out, size_t n)
{
    const json_t *task = json_object_get(job, "array_task_id");
    if (ival(job, "array_job_id") > 0 && json_is_integer(task) && json_integer_value(task) >= 0)
        snprintf(out, n, "%lld_%lld", ival(job, "array_job_id"), json_integer_value(task));
    else
        snprintf(out, n, "%lld", ival(job, "job_id"));
}

/* method on job/<backend_id>; recorded in call (when not NULL) */
static int job_call(const struct backend_cluster *c, const char *method, const char *backend_id,
                    struct slurmrest_answer *a, struct backend_call *call, char *err,
                    size_t errsz)
{
    struct slurmrest_target t = target(c);
    char path[64];
    snprintf(path, sizeof path, "job/%s", backend_id);
    int e = slurmrest_call_record(&t, method, path, NULL, a, call ? &call->request : NULL, err,
                                  errsz);
    if (!e && call)
        call->status = (int)a->status;
    return e;
}

static int cancel(const struct backend_cluster *c, const char *job_id, const char *backend_id,
                  struct backend_call *call, char *err, size_t errsz)
{
    (void)job_id;
    if (!valid_id(backend_id))
        return 0; /* never reached Slurm */
    struct slurmrest_answer a;
    /* Slurm sends SIGTERM, waits KillWait, then SIGKILL: the grace period */
    int e = job_call(c, "DELETE", backend_id, &a, call, err, errsz);
    if (e)
        return e;
    if (!slurmrest_ok(&a, err, errsz) && error_number(&a) != SLURM_INVALID_JOB_ID)
        e = AIDC_EUNAVAIL; /* retried by the outbox */
    else
        err[0] = '\0'; /* gone already (aged out of slurmctld): nothing to stop */
    slurmrest_answer_free(&a);
    return e;
}

static int preempt(const struct backend_cluster *c, const char *job_id, const char *backend_id,
                   int grace_seconds, struct backend_call *call, char *err, size_t errsz)
{
    (void)grace_seconds; /* Slurm's KillWait is the grace between SIGTERM and SIGKILL */
    return cancel(c, job_id, backend_id, call, err, errsz);
}

static int poll_job(const struct backend_cluster *c, const char *job_id, const char *backend_id,
                    struct backend_status *out, char *err, size_t errsz)
{
    (void)job_id;
    memset(out, 0, sizeof *out);
    out->exit_code = -1;
    if (!valid_id(backend_id))
        return 0; /* BS_UNKNOWN */
    struct slurmrest_answer a;
    int e = job_call(c, "GET", backend_id, &a, NULL, err, errsz);
    if (e)
        return e;
    const json_t *job = json_array_get(json_object_get(a.json, "jobs"), 0);
    if (slurmrest_ok(&a, err, errsz) && job)
        slurm_job_status(job, out);
    else if (error_number(&a) == SLURM_INVALID_JOB_ID)
        err[0] = '\0'; /* aged out of slurmctld (MinJobAge) or never there: BS_UNKNOWN */
    else
        e = AIDC_EUNAVAIL;
    slurmrest_answer_free(&a);
    return e;
}

/* A poll's job at a time (slurmrest_list): what aidc submitted, to report. */
struct polling {
    const char *user;
    void (*report)(void *arg, const char *backend_id, const char *run_key,
                   const struct backend_status *status);
    void *arg;
};

static bool poll_one(void *arg, json_t *j)
{
    struct polling *p = arg;
    const char *owner = json_string_value(json_object_get(j, "user_name"));
    if (owner && strcmp(owner, p->user) != 0)
        return true; /* not submitted through aidc */
    char id[48];
    slurm_backend_id(j, id, sizeof id);
    struct backend_status st;
    slurm_job_status(j, &st);
    const char *name = json_string_value(json_object_get(j, "name"));
    p->report(p->arg, id, name ? name : "", &st);
    return true;
}

/*
 * GET jobs?update_time=since, job by job as the answer arrives: a list of
 * every job slurmctld holds (130 MB at 40,000 jobs) is never held whole.
 * A 304 (nothing changed since then) reports nothing, and is a success.
 */
static int poll_changed(const struct backend_cluster *c, time_t since,
                        void (*report)(void *arg, const char *backend_id, const char *run_key,
                                       const struct backend_status *status),
                        void *arg, char *err, size_t errsz)
{
    struct slurmrest_target t = target(c);
    struct polling p = {.user = opt(c->options, "user_name", "aidc"), .report = report,
                        .arg = arg};
    char path[64];
    snprintf(path, sizeof path, "jobs?update_time=%lld", (long long)(since > 0 ? since : 0));
    long status = 0;
    return slurmrest_list(&t, path, "jobs", poll_one, &p, &status, err, errsz) ? AIDC_EUNAVAIL : 0;
}

static int inventory(const struct backend_cluster *c, struct backend_resource *out, size_t max,
                     char *err, size_t errsz)
{
    struct slurmrest_target t = target(c);
    struct slurmrest_answer a;
    if (slurmrest_call(&t, "GET", "nodes", NULL, &a, err, errsz))
        return -1;
    int n = -1;
    if (slurmrest_ok(&a, err, errsz) && json_is_array(json_object_get(a.json, "nodes")))
        n = slurm_inventory_parse(json_object_get(a.json, "nodes"), out, max);
    else if (!err[0])
        snprintf(err, errsz, "GET nodes: no node list in the answer");
    slurmrest_answer_free(&a);
    return n;
}

static int nodes(const struct backend_cluster *c,
                 void (*report)(void *arg, const struct backend_node *node), void *arg, char *err,
                 size_t errsz)
{
    struct slurmrest_target t = target(c);
    struct slurmrest_answer a;
    if (slurmrest_call(&t, "GET", "nodes", NULL, &a, err, errsz))
        return AIDC_EUNAVAIL;
    int e = 0;
    if (slurmrest_ok(&a, err, errsz) && json_is_array(json_object_get(a.json, "nodes")))
        slurmnode_each(json_object_get(a.json, "nodes"), report, arg);
    else
        e = AIDC_EUNAVAIL;
    if (e && !err[0])
        snprintf(err, errsz, "GET nodes: no node list in the answer");
    slurmrest_answer_free(&a);
    return e;
}

static int drain(const struct backend_cluster *c, const char *node, bool on, const char *reason,
                 struct backend_call *call, char *err, size_t errsz)
{
    struct slurmrest_target t = target(c);
    return slurmnode_drain(&t, c->options, node, on, reason, call, err, errsz);
}

/* A node's jobs, one job of the list at a time. */
struct on_node {
    const char *node, *user;
    void (*report)(void *arg, const char *backend_id, const char *run_key);
    void *arg;
};

static bool node_one(void *arg, json_t *j)
{
    struct on_node *o = arg;
    json_t *one = json_pack("[O]", j);
    if (one)
        slurmnode_jobs_on(one, o->node, o->user, o->report, o->arg);
    json_decref(one);
    return one != NULL;
}

/* Slurm has no "jobs on node": the whole list, job by job, filtered by each one's nodes. */
static int node_jobs(const struct backend_cluster *c, const char *node,
                     void (*report)(void *arg, const char *backend_id, const char *run_key),
                     void *arg, char *err, size_t errsz)
{
    struct slurmrest_target t = target(c);
    struct on_node o = {.node = node, .user = opt(c->options, "user_name", "aidc"),
                        .report = report, .arg = arg};
    long st = 0;
    int e = slurmrest_list(&t, "jobs?update_time=0", "jobs", node_one, &o, &st, err, errsz);
    return e ? AIDC_EUNAVAIL : 0;
}

/* The job's files under options.workdir, where aidcd can read them (a shared file system). */
static int logs(const struct backend_cluster *c, const char *job_id, bool stderr_stream, int tail,
                char **text, size_t *len)
{
    char *name = xasprintf("%s.%s", job_id, stderr_stream ? "err" : "out");
    int e = backend_tail_file(opt(c->options, "workdir", DEFAULT_WORKDIR), name, tail, text, len);
    free(name);
    return e;
}

/* Its logs under options.workdir (a shared file system aidcd's host mounts). */
static int outputs(const struct backend_cluster *c, const char *job_id, struct backend_outputs *out)
{
    out->work_fd = out->logs_fd = -1;
    out->uid = out->gid = -1;
    out->logs_fd = fsat_opendir(opt(c->options, "workdir", DEFAULT_WORKDIR));
    if (out->logs_fd < 0)
        return AIDC_ENOTFOUND;
    snprintf(out->stdout_name, sizeof out->stdout_name, "%s.out", job_id);
    snprintf(out->stderr_name, sizeof out->stderr_name, "%s.err", job_id);
    return 0;
}

/* The node its batch script runs on, the port it reported (backends/slurmapp.h). */
static int app_endpoint(const struct backend_cluster *c, const char *job_id,
                        const char *backend_id, struct backend_endpoint *out, char *err,
                        size_t errsz)
{
    struct slurmrest_target t = target(c);
    return slurmapp_endpoint(&t, job_id, backend_id, out, err, errsz);
}

const struct backend_ops backend_slurm = {
    .kind = "slurm",
    .check_options = check_options,
    .submit = submit,
    .cancel = cancel,
    .preempt = preempt,
    .poll = poll_job,
    .poll_changed = poll_changed,
    .inventory = inventory,
    .logs = logs,
    .outputs = outputs,
    .gpu_range = NULL,
    .nodes = nodes,
    .drain = drain,
    .node_jobs = node_jobs,
    .app_endpoint = app_endpoint,
    .max_nodes = 0,
};
