/*
 * fuzz_kube.c - answers of a Kubernetes API server as the Kubernetes backend
 * reads them (backends/kubejob.c): a Job (its status: conditions, times,
 * active/failed counts, deletion), a JobList's or NodeList's items (states;
 * GPUs, cores and memory from allocatable quantities and labels), every
 * string read as a quantity and a time. The same JSON is also taken as a
 * cluster's options (checked and completed, the namespace template
 * expanded, a Job built with them, the inventory read through them). And
 * the input as the body of an error answer (a Status object or anything)
 * under every status class.
 */
#include "fuzz.h"
#include "job.h"

#include "backends/kubejob.h"

/* Every string in v through the scalar parsers. */
static void walk(const json_t *v, int depth)
{
    if (depth > 64)
        return;
    if (json_is_string(v)) {
        const char *s = json_string_value(v);
        long long q = kubejob_quantity(s, false);
        long long g = kubejob_quantity(s, true);
        if (q < -1 || g < -1)
            abort();
        (void)kubejob_time(s);
        char name[64];
        kubejob_name(s, name, sizeof name);
        if (strnlen(name, sizeof name) == sizeof name)
            abort();
    } else if (json_is_object(v)) {
        const char *k;
        json_t *c;
        json_object_foreach((json_t *)v, k, c) walk(c, depth + 1);
    } else if (json_is_array(v)) {
        size_t i;
        json_t *c;
        json_array_foreach(v, i, c) walk(c, depth + 1);
    }
}

static void on_node(void *arg, const struct backend_node *n)
{
    (void)arg;
    if (!n->name || n->gpus < 0)
        abort();
}

static void nodes_with(const json_t *o, const json_t *items)
{
    struct backend_resource res[32];
    int n = kubejob_inventory_add(o, items, res, 32, 0);
    if (n < 0 || n > 32)
        abort();
    kubejob_nodes_each(o, items, on_node, NULL);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const long statuses[] = {200, 204, 400, 401, 403, 404, 409, 422, 429, 500, 503, 0};
    char *body = fuzz_str(data, size);
    json_t *parsed = json_loadb((const char *)data, size, 0, NULL);
    for (size_t k = 0; k < sizeof statuses / sizeof *statuses; k++) {
        struct httpcall_answer a = {.status = statuses[k], .body = body, .len = size,
                                    .json = parsed};
        char why[128] = "";
        int e = kubejob_answer_err(&a, "GET /api/v1/nodes", why, sizeof why);
        bool ok = statuses[k] >= 200 && statuses[k] < 300;
        if ((e == 0) != ok || (!ok && strncmp(why, "GET /api/v1/nodes: ", 19) != 0))
            abort();
    }
    json_decref(parsed);
    free(body);
    json_t *doc = json_loadb((const char *)data, size, 0, NULL);
    if (!doc)
        return 0;
    walk(doc, 0);
    struct backend_status st;
    kubejob_status(doc, &st);
    const json_t *items = json_object_get(doc, "items");
    size_t i;
    const json_t *it;
    json_array_foreach(items, i, it) kubejob_status(it, &st);

    char err[256];
    json_t *def = json_object();
    if (!def || !kubejob_check_options(def, err, sizeof err))
        abort(); /* {} is valid options */
    nodes_with(def, items);

    json_t *o = json_deep_copy(doc);
    if (o && json_is_object(o) && kubejob_check_options(o, err, sizeof err)) {
        char ns[64];
        if (kubejob_namespace(o, "acme", "vision", ns, sizeof ns, err, sizeof err)) {
            json_t *cmd, *env;
            struct backend_job job = fuzz_job(&cmd, &env);
            json_decref(kubejob_build(o, &job, ns, err, sizeof err));
            job.priority = "high";
            job.preemptible = true;
            json_decref(kubejob_build(o, &job, ns, err, sizeof err));
            json_t *mounts = fuzz_mounts(); /* options.storage's volumes */
            job.mounts = mounts;
            json_decref(kubejob_build(o, &job, ns, err, sizeof err));
            json_decref(mounts);
            json_decref(cmd);
            json_decref(env);
        }
        nodes_with(o, items);
    }
    json_decref(o);
    json_decref(def);
    json_decref(doc);
    return 0;
}
