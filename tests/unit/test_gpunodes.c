/*
 * test_gpunodes.c - what GPU faults need of the backends, without a cluster:
 * Slurm's hostlist expressions, the nodes and their GPU indexes from
 * slurmrestd's GET /nodes (a captured answer and crafted gres), the runs on
 * a node from GET /jobs, the drain command options; Kubernetes Nodes; the
 * local machine as one node; and the operator's command runner (no shell, a
 * clean environment, its output, exit status and time limit).
 */
#include "backends/backend.h"
#include "backends/command.h"
#include "backends/kubejob.h"
#include "backends/local.h"
#include "backends/slurmnode.h"
#include "tests/unit/slurm_fixtures.h"

#include <check.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

START_TEST(hostlists)
{
    static const struct {
        const char *list, *node;
        bool in;
    } cases[] = {
        {"node-a100", "node-a100", true},
        {"node-a100", "node-a10", false},
        {"node-a100,node-h100", "node-h100", true},
        {"gpu-[1-3]", "gpu-2", true},
        {"gpu-[1-3]", "gpu-4", false},
        {"gpu-[1-3,7]", "gpu-7", true},
        {"gpu-[01-12]", "gpu-07", true},
        {"gpu-[01-12]", "gpu-7", false}, /* zero-padded to the width written */
        {"gpu-[8-12]", "gpu-08", false},
        {"gpu-[1-3]-ib", "gpu-2-ib", true},
        {"gpu-[1-3]-ib", "gpu-2", false},
        {"rack[1-2]-n[01-04]", "rack2-n03", true},
        {"rack[1-2]-n[01-04]", "rack3-n03", false},
        {"n[1-20]0", "n150", true}, /* literal digits after the bracket */
        {"cpu-x,gpu-[1-3]", "cpu-x", true},
        {"gpu-[1-3", "gpu-1", false},
        {"gpu-[a-c]", "gpu-a", false},
        {"", "gpu-1", false},
        {NULL, "gpu-1", false},
        /* a number longer than any bound (fuzz_slurm: it overflowed) */
        {"gpu-[1-999999999]", "gpu-38777777777777777777", false},
        {"gpu-[1-999999999]0", "gpu-1234567890", true},
        {"gpu-[000000001-999999999]", "gpu-000000042", true},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        ck_assert_msg(slurmnode_hostlist_has(cases[i].list, cases[i].node) == cases[i].in,
                      "%s has %s: %d", cases[i].list, cases[i].node, !cases[i].in);
}
END_TEST

struct seen_nodes {
    char text[2048];
};

static void add_node(void *arg, const struct backend_node *n)
{
    struct seen_nodes *s = arg;
    size_t l = strlen(s->text);
    snprintf(s->text + l, sizeof s->text - l, "%s%s/%s/%d+%d/%s", l ? " " : "", n->name,
             n->gpu_type, n->first, n->gpus, n->usable ? "up" : "out");
}

START_TEST(slurm_nodes_and_their_gpu_indexes)
{
    json_t *body = fixture_body("03-nodes.json");
    struct seen_nodes s = {""};
    slurmnode_each(json_object_get(body, "nodes"), add_node, &s);
    ck_assert_str_eq(s.text, "node-a100/a100/0+8/up node-h100/h100/0+8/up");
    json_decref(body);
    /* two types on a node number on; drained, or without typed GPUs, still nodes */
    json_t *nodes =
        json_pack("[{s:s, s:s, s:s, s:[]}, {s:s, s:s, s:s, s:[s]}, {s:s, s:s, s:s, s:[]},"
                  " {s:s, s:s, s:s, s:[]}]",
                  "name", "mix", "gres", "gpu:a100:4(S:0),gpu:h100:2(S:1)", "state", "mixed",
                  "state_flags", "name", "drained", "gres", "gpu:a100:8", "state", "idle",
                  "state_flags", "DRAIN", "name", "plain", "gres", "gpu:2,shard:8", "state", "idle",
                  "state_flags", "name", "cpu", "gres", "", "state", "down", "state_flags");
    s.text[0] = '\0';
    slurmnode_each(nodes, add_node, &s);
    ck_assert_str_eq(s.text, "mix/a100/0+4/up mix/h100/4+2/up drained/a100/0+8/out "
                             "plain//0+0/up cpu//0+0/out");
    json_decref(nodes);
}
END_TEST

struct runs {
    char text[512];
};

static void add_run(void *arg, const char *backend_id, const char *run_key)
{
    struct runs *r = arg;
    size_t l = strlen(r->text);
    snprintf(r->text + l, sizeof r->text - l, "%s%s=%s", l ? " " : "", backend_id, run_key);
}

START_TEST(slurm_runs_on_a_node)
{
    json_t *body = fixture_body("12-list-jobs.json");
    struct runs r = {""};
    slurmnode_jobs_on(json_object_get(body, "jobs"), "node-a100", "aidc", add_run, &r);
    ck_assert_str_eq(r.text, "1=timeout 2=train-a100");
    r.text[0] = '\0';
    slurmnode_jobs_on(json_object_get(body, "jobs"), "node-h100", "aidc", add_run, &r);
    ck_assert_str_eq(r.text, "");
    slurmnode_jobs_on(json_object_get(body, "jobs"), "node-a100", "someone", add_run, &r);
    ck_assert_str_eq(r.text, ""); /* not submitted through aidc */
    json_decref(body);
    /* a job over several nodes, and jobs that no longer hold one */
    json_t *jobs = json_pack("[{s:I, s:s, s:s, s:s, s:s}, {s:I, s:s, s:s, s:s, s:s},"
                             " {s:I, s:s, s:s, s:s, s:s}]",
                             "job_id", (json_int_t)7, "name", "run-7", "job_state", "RUNNING",
                             "nodes", "gpu-[01-04]", "user_name", "aidc", "job_id", (json_int_t)8,
                             "name", "run-8", "job_state", "COMPLETED", "nodes", "gpu-02",
                             "user_name", "aidc", "job_id", (json_int_t)9, "name", "run-9",
                             "job_state", "PENDING", "nodes", "", "user_name", "aidc");
    r.text[0] = '\0';
    slurmnode_jobs_on(jobs, "gpu-02", "aidc", add_run, &r);
    ck_assert_str_eq(r.text, "7=run-7");
    json_decref(jobs);
}
END_TEST

START_TEST(slurm_drain_command_options)
{
    char err[256];
    json_t *o =
        json_pack("{s:[s, s, s, s, s], s:[s, s, s, s]}", "drain_command", "/usr/bin/scontrol",
                  "update", "nodename={node}", "state=drain", "reason={reason}", "resume_command",
                  "/usr/bin/scontrol", "update", "nodename={node}", "state=resume");
    ck_assert(slurmnode_check_options(o, err, sizeof err));
    json_object_set_new(o, "drain_command", json_pack("[s, s]", "scontrol", "update"));
    ck_assert(!slurmnode_check_options(o, err, sizeof err));
    ck_assert_msg(strstr(err, "options.drain_command") && strstr(err, "absolute path"), "%s", err);
    json_object_set_new(o, "drain_command", json_string("/usr/bin/scontrol update"));
    ck_assert(!slurmnode_check_options(o, err, sizeof err));
    json_object_set_new(o, "drain_command", json_pack("[s, i]", "/bin/true", 5));
    ck_assert(!slurmnode_check_options(o, err, sizeof err));
    json_object_set_new(o, "drain_command", json_array());
    ck_assert(!slurmnode_check_options(o, err, sizeof err));
    json_object_del(o, "drain_command");
    ck_assert(slurmnode_check_options(o, err, sizeof err)); /* both optional */
    json_decref(o);
}
END_TEST

START_TEST(kubernetes_nodes)
{
    json_t *o = json_pack("{s:{s:s}}", "gpu_types", "a100", "NVIDIA-A100-SXM4-80GB");
    ck_assert(kubejob_check_options(o, (char[256]){0}, 256));
    json_t *items = json_pack(
        "[{s:{s:s, s:{s:s}}, s:{s:{s:s}, s:[{s:s, s:s}]}},"
        " {s:{s:s, s:{s:s}}, s:{s:b}, s:{s:{s:s}, s:[{s:s, s:s}]}},"
        " {s:{s:s}, s:{s:{s:s}, s:[{s:s, s:s}]}}]",
        "metadata", "name", "k-1", "labels", KUBE_DEFAULT_GPU_LABEL, "NVIDIA-A100-SXM4-80GB",
        "status", "allocatable", KUBE_DEFAULT_GPU_RESOURCE, "8", "conditions", "type", "Ready",
        "status", "True", "metadata", "name", "k-2", "labels", KUBE_DEFAULT_GPU_LABEL,
        "NVIDIA-A100-SXM4-80GB", "spec", "unschedulable", 1, "status", "allocatable",
        KUBE_DEFAULT_GPU_RESOURCE, "4", "conditions", "type", "Ready", "status", "True", "metadata",
        "name", "k-cpu", "status", "allocatable", "cpu", "64", "conditions", "type", "Ready",
        "status", "False");
    ck_assert_ptr_nonnull(items);
    struct seen_nodes s = {""};
    kubejob_nodes_each(o, items, add_node, &s);
    ck_assert_str_eq(s.text, "k-1/a100/0+8/up k-2/a100/0+4/out k-cpu//0+0/out");
    json_decref(items);
    json_decref(o);
}
END_TEST

START_TEST(the_local_machine_is_one_node)
{
    json_t *o = json_pack("{s:{s:i, s:i, s:i}, s:s}", "gpus", "t4", 2, "a100", 4, "h100", 0, "node",
                          "gpu-box");
    struct backend_cluster c = {.name = "local", .kind = "local", .options = o};
    struct seen_nodes s = {""};
    char err[256] = "";
    ck_assert_int_eq(backend_local.nodes(&c, add_node, &s, err, sizeof err), 0);
    /* indexes as jobs get them: types in name order */
    ck_assert_str_eq(s.text, "gpu-box/a100/0+4/up gpu-box/t4/4+2/up");
    json_object_set_new(o, "node", json_string("bad name"));
    ck_assert(!backend_local.check_options(o, err, sizeof err));
    json_decref(o);
    ck_assert(backend_node_name_valid("node-a100.example.org"));
    ck_assert(!backend_node_name_valid("-node"));
    ck_assert(!backend_node_name_valid("node a"));
    ck_assert(!backend_node_name_valid(""));
}
END_TEST

START_TEST(command_templates)
{
    json_t *tpl = json_pack("[s, s, s, s]", "/usr/bin/scontrol", "nodename={node}",
                            "reason={reason}", "{nodes}{node}");
    const char *keys[] = {"node", "reason"};
    /* values are not searched again: a reason naming {node} stays as it is, one argument */
    const char *values[] = {"gpu-1", "aidc: XID 79; rm -rf / {node}"};
    char **argv = command_expand(tpl, keys, values, 2);
    ck_assert_ptr_nonnull(argv);
    ck_assert_str_eq(argv[0], "/usr/bin/scontrol");
    ck_assert_str_eq(argv[1], "nodename=gpu-1");
    ck_assert_str_eq(argv[2], "reason=aidc: XID 79; rm -rf / {node}");
    ck_assert_str_eq(argv[3], "{nodes}gpu-1");
    ck_assert_ptr_null(argv[4]);
    json_t *j = command_argv_json(argv);
    ck_assert_uint_eq(json_array_size(j), 4);
    json_decref(j);
    command_argv_free(argv);
    json_decref(tpl);
    tpl = json_pack("[s]", "relative");
    ck_assert_ptr_null(command_expand(tpl, keys, values, 2));
    json_decref(tpl);
}
END_TEST

START_TEST(commands_run_without_a_shell_or_our_environment)
{
    struct command_result res;
    char err[256] = "";
    setenv("AIDC_DATABASE_URL", "postgresql://secret@db/aidc", 1);
    char *env[] = {"/usr/bin/env", NULL};
    ck_assert_int_eq(command_run(env, 10, &res, err, sizeof err), 0);
    ck_assert_int_eq(res.exit_status, 0);
    ck_assert_msg(strstr(res.output, "PATH=") && !strstr(res.output, "AIDC_DATABASE_URL"),
                  "the command saw: %s", res.output);
    /* no shell: the metacharacters are an argument */
    char *echo[] = {"/bin/echo", "a;", "$(id)", NULL};
    ck_assert_int_eq(command_run(echo, 10, &res, err, sizeof err), 0);
    ck_assert_str_eq(res.output, "a; $(id)\n");
    char *fail[] = {"/bin/sh", "-c", "echo to stderr >&2; exit 3", NULL};
    ck_assert_int_eq(command_run(fail, 10, &res, err, sizeof err), 0);
    ck_assert_int_eq(res.exit_status, 3);
    ck_assert_str_eq(res.output, "to stderr\n");
    char *fds[] = {"/bin/sh", "-c", "ls /proc/$$/fd", NULL};
    ck_assert_int_eq(command_run(fds, 10, &res, err, sizeof err), 0);
    ck_assert_msg(strcmp(res.output, "0\n1\n2\n") == 0 || strcmp(res.output, "0\n1\n2\n3\n") == 0,
                  "open descriptors: %s", res.output); /* 3: ls's own directory */
    char *missing[] = {"/nonexistent/program", NULL};
    ck_assert_int_eq(command_run(missing, 10, &res, err, sizeof err), 0);
    ck_assert_int_eq(res.exit_status, 127);
    char *slow[] = {"/bin/sh", "-c", "sleep 30", NULL};
    ck_assert_int_eq(command_run(slow, 1, &res, err, sizeof err), 0);
    ck_assert(res.timed_out);
    ck_assert_int_eq(res.signal, 9);
    /* output beyond what is kept is read and dropped, not a hang */
    char *lots[] = {"/bin/sh", "-c", "head -c 1000000 /dev/zero | tr '\\0' x; exit 0", NULL};
    ck_assert_int_eq(command_run(lots, 10, &res, err, sizeof err), 0);
    ck_assert_int_eq(res.exit_status, 0);
    ck_assert_uint_eq(strlen(res.output), COMMAND_OUTPUT - 1);
    char *relative[] = {"sh", NULL};
    ck_assert_int_ne(command_run(relative, 10, &res, err, sizeof err), 0);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("gpunodes");
    TCase *tc = tcase_create("gpunodes");
    tcase_set_timeout(tc, 30);
    tcase_add_test(tc, hostlists);
    tcase_add_test(tc, slurm_nodes_and_their_gpu_indexes);
    tcase_add_test(tc, slurm_runs_on_a_node);
    tcase_add_test(tc, slurm_drain_command_options);
    tcase_add_test(tc, kubernetes_nodes);
    tcase_add_test(tc, the_local_machine_is_one_node);
    tcase_add_test(tc, command_templates);
    tcase_add_test(tc, commands_run_without_a_shell_or_our_environment);
    suite_add_tcase(s, tc);
    return suite_run(s);
}
