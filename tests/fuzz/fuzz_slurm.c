/*
 * fuzz_slurm.c - an answer of slurmrestd (v0.0.37/38 JSON, or any text), as
 * the Slurm backend reads it (backends/slurm.c, slurmnode.c, slurmrest.c):
 * whether it reports success and its error message; every job of "jobs"
 * (state, times, exit code, reason; finding a run by name; the runs on a
 * node through hostlist expressions); every node of "nodes" (usable or not,
 * GPUs from gres, the inventory). The same JSON is also taken as a
 * cluster's options (checked, then a submit body built with them).
 */
#include "fuzz.h"
#include "job.h"

#include "backends/slurm.h"
#include "backends/slurmnode.h"
#include "backends/slurmrest.h"

static void on_node(void *arg, const struct backend_node *n)
{
    const json_t *jobs = arg;
    (void)slurmnode_hostlist_has(n->name, n->name);
    size_t i;
    const json_t *job;
    json_array_foreach(jobs, i, job) {
        const char *hl = json_string_value(json_object_get(job, "nodes"));
        if (hl)
            (void)slurmnode_hostlist_has(hl, n->name);
    }
}

static void on_run(void *arg, const char *backend_id, const char *run_key)
{
    (void)arg;
    if (!backend_id || !run_key)
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct slurmrest_answer a = {.status = size ? 200 + (data[0] & 1) * 300 : 200};
    a.body = fuzz_str(data, size);
    a.len = size;
    a.json = json_loadb(a.body, a.len, 0, NULL);
    char msg[512];
    (void)slurmrest_ok(&a, msg, sizeof msg);
    if (strlen(msg) >= sizeof msg)
        abort();

    const json_t *jobs = json_object_get(a.json, "jobs");
    size_t i;
    const json_t *job;
    json_array_foreach(jobs, i, job) {
        struct backend_status st;
        slurm_job_status(job, &st);
        if (strnlen(st.reason, sizeof st.reason) == sizeof st.reason)
            abort();
        const char *name = json_string_value(json_object_get(job, "name"));
        const char *user = json_string_value(json_object_get(job, "user_name"));
        if (name && user && !slurm_find_run(jobs, name, user))
            abort(); /* the job itself has that name */
    }
    const json_t *nodes = json_object_get(a.json, "nodes");
    struct backend_resource res[64];
    int n = slurm_inventory_parse(nodes, res, 64);
    if (n < 0 || n > 64)
        abort();
    json_array_foreach(nodes, i, job)
        (void)slurm_node_usable(job);
    slurmnode_each(nodes, on_node, (void *)jobs);
    json_array_foreach(nodes, i, job) {
        const char *node = json_string_value(json_object_get(job, "name"));
        if (node)
            slurmnode_jobs_on(jobs, node, "aidc", on_run, NULL);
    }

    if (json_is_object(a.json)) {
        json_t *o = json_deep_copy(a.json);
        char err[256];
        if (o && backend_slurm.check_options(o, err, sizeof err)) {
            json_t *cmd, *env;
            struct backend_job bj = fuzz_job(&cmd, &env);
            json_decref(slurm_submit_body(&bj, o, NULL, err, sizeof err));
            bj.command = NULL;
            bj.script = "#!/bin/sh\necho hi\n";
            json_decref(slurm_submit_body(&bj, o, NULL, err, sizeof err));
            json_t *mounts = fuzz_mounts(); /* options.storage.root's paths */
            bj.mounts = mounts;
            json_decref(slurm_submit_body(&bj, o, "/srv/aidc", err, sizeof err));
            json_decref(slurm_submit_body(&bj, o, NULL, err, sizeof err));
            json_decref(mounts);
            json_decref(cmd);
            json_decref(env);
        }
        json_decref(o);
    }
    slurmrest_answer_free(&a);
    return 0;
}
