/* slurmtest.c - helpers of the tests on the real Slurm (see slurmtest.h). */
#include "slurmtest.h"

#include "client.h"
#include "harness.h"
#include "jobs.h"

#include <check.h>
#include <curl/curl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

const char *slurm_url, *slurm_user, *slurm_key, *slurm_jwt, *slurm_dir;
/* a shared test Slurm keeps every job for MinJobAge: ask only about this run's */
static time_t slurm_since;

void slurmtest_env(void)
{
    slurm_url = getenv("AIDC_TEST_SLURM_URL");
    slurm_user = getenv("AIDC_TEST_SLURM_USER");
    slurm_key = getenv("AIDC_TEST_SLURM_JWT_KEY");
    slurm_jwt = getenv("AIDC_TEST_SLURM_JWT");
    slurm_dir = getenv("AIDC_TEST_SLURM_DIR");
    slurm_since = time(NULL) - 60;
    if (!slurm_url || !slurm_user || !slurm_key || !slurm_jwt || !slurm_dir) {
        fprintf(stderr, "no test Slurm (AIDC_TEST_SLURM_* from tests/run.sh): skipped\n");
        exit(77);
    }
}

/* ---- slurmrestd directly, to check what aidc did there ------------------------------ */

static size_t sink(char *data, size_t size, size_t nmemb, void *arg)
{
    struct sbuf_t {
        char *p;
        size_t n;
    } *b = arg;
    size_t n = size * nmemb;
    char *p = realloc(b->p, b->n + n + 1);
    if (!p)
        return 0;
    memcpy(p + b->n, data, n);
    b->n += n;
    p[b->n] = '\0';
    b->p = p;
    return n;
}

/* GET /slurm/v0.0.38/<path>; the JSON answer (new reference). */
json_t *slurm_get(const char *path)
{
    return slurm_call("GET", path, NULL);
}

json_t *slurm_call(const char *method, const char *path, const char *body)
{
    struct {
        char *p;
        size_t n;
    } b = {NULL, 0};
    CURL *h = curl_easy_init();
    ck_assert_ptr_nonnull(h);
    struct curl_slist *hdr = NULL;
    hdr = curl_slist_append(hdr, fmt("X-SLURM-USER-NAME: %s", slurm_user));
    hdr = curl_slist_append(hdr, fmt("X-SLURM-USER-TOKEN: %s", slurm_jwt));
    hdr = curl_slist_append(hdr, "Content-Type: application/json");
    curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, method);
    if (body)
        curl_easy_setopt(h, CURLOPT_POSTFIELDS, body);
    curl_easy_setopt(h, CURLOPT_URL, fmt("%s/slurm/v0.0.38/%s", slurm_url, path));
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdr);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, sink);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, &b);
    curl_easy_setopt(h, CURLOPT_TIMEOUT, 60L);
    CURLcode rc = curl_easy_perform(h);
    long status = 0;
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
    curl_slist_free_all(hdr);
    curl_easy_cleanup(h);
    /* 304: nothing changed since update_time (no body) */
    json_t *j = rc != CURLE_OK ? NULL : status == 304 ? json_object()
                                                      : json_loads(b.p ? b.p : "", 0, NULL);
    char shown[300];
    snprintf(shown, sizeof shown, "%s", b.p ? b.p : "");
    free(b.p); /* before asserting: a failed check must not leak it */
    ck_assert_msg(rc == CURLE_OK, "slurmrestd: %s", curl_easy_strerror(rc));
    ck_assert_msg(j != NULL, "slurmrestd answered no JSON: %s", shown);
    return j;
}

/* The Slurm job aidc made for a job (its backend_job_id). */
json_t *slurm_job_of(const json_t *job)
{
    const char *bid = json_string_value(json_object_get(job, "backend_job_id"));
    ck_assert_msg(bid != NULL, "the job has no backend_job_id");
    json_t *all = slurm_get(fmt("job/%s", bid));
    json_t *j = json_incref(json_array_get(json_object_get(all, "jobs"), 0));
    json_decref(all);
    ck_assert_ptr_nonnull(j);
    return j;
}

/* Slurm jobs named name (aidc names them by run key). */
int slurm_jobs_named(const char *name)
{
    json_t *all = slurm_get(fmt("jobs?update_time=%lld", (long long)slurm_since));
    int n = 0;
    size_t i;
    json_t *j;
    json_array_foreach(json_object_get(all, "jobs"), i, j) {
        const char *nm = json_string_value(json_object_get(j, "name"));
        n += nm && strcmp(nm, name) == 0;
    }
    json_decref(all);
    return n;
}

/* ---- the cluster in aidc ------------------------------------------------------------ */

static long long resource_total(const json_t *cluster, const char *res)
{
    return json_integer_value(
        json_object_get(json_object_get(json_object_get(cluster, "inventory"), res), "total"));
}

void slurmtest_register_cluster(void)
{
    json_t *body = json_pack("{s:s, s:s, s:s, s:s, s:{s:s, s:s, s:s, s:s}}", "name", "hpc",
                             "kind", "slurm", "endpoint", slurm_url, "credentials_ref",
                             fmt("file:%s", slurm_key), "options", "user_name", slurm_user,
                             "partition", "gpu", "preemptible_partition", "preempt", "workdir",
                             fmt("%s/jobs", slurm_dir));
    char *text = json_dumps(body, JSON_COMPACT);
    json_decref(body);
    jobs_admin_ok("POST", "/api/v1/clusters", text, 201);
    free(text);
    /* the syncer reads the nodes' GRES */
    double deadline = jobs_now() + 30;
    for (;;) {
        struct http_res r;
        ck_assert_int_eq(reqj("GET", "/api/v1/clusters/hpc", harness_srv.admin_token, NULL, &r),
                         200);
        long long a100 = resource_total(r.json, "gpu:a100");
        bool healthy = json_is_true(json_object_get(r.json, "healthy"));
        char *shown = strdup(r.body ? r.body : "");
        http_res_free(&r);
        if (a100 == 8 && healthy) {
            free(shown);
            break;
        }
        ck_assert_msg(jobs_now() < deadline, "no inventory from Slurm after 30 s: %s", shown);
        free(shown);
        jobs_nap_ms(100);
    }
}

long long slurmtest_total(const char *res)
{
    struct http_res r;
    ck_assert_int_eq(reqj("GET", "/api/v1/clusters/hpc", harness_srv.admin_token, NULL, &r), 200);
    long long total = resource_total(r.json, res);
    http_res_free(&r);
    return total;
}

int slurmtest_scontrol(const char *args)
{
    /* root's munge credentials, not the JWT of the job user */
    return system(fmt("env -u SLURM_JWT SLURM_CONF=%s/etc/slurm.conf scontrol %s", slurm_dir, args));
}

const char *slurmtest_job(const char *name, int gpus, const char *type, const char *script)
{
    json_t *b = json_pack("{s:s, s:s, s:i, s:s?, s:i, s:i, s:i, s:s}", "project", "lab", "name",
                          name, "gpus", gpus, "gpu_type", gpus ? type : NULL, "cpus", 1,
                          "memory_gib", 1, "time_limit_minutes", 5, "script", script);
    if (!gpus)
        json_object_del(b, "gpu_type");
    char *text = json_dumps(b, JSON_COMPACT);
    json_decref(b);
    const char *out = fmt("%s", text);
    free(text);
    return out;
}
