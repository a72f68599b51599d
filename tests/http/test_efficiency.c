/*
 * test_efficiency.c - a job's efficiency (docs/efficiency.md) end to end:
 * CPU and memory efficiency of local jobs from their cgroups; GPU
 * utilization and memory from a real Prometheus (tests/prometheus: Debian's
 * prometheus scraping a DCGM-format exporter whose values the test writes)
 * in the job's "efficiency"; null where unknown; the idle-GPU report lists a
 * job at 3 % for the (shortened) idle window and not one at 80 %, for its
 * tenant's admins and platform admins only; the cluster's metrics setting is
 * checked.
 */
#include "tests/support/client.h"
#include "tests/support/harness.h"
#include "tests/support/jobs.h"
#include "tests/support/suite.h"

#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *prom_url, *dcgm_dir;
static char *ann, *tad, *pia, *oli; /* chem member, chem admin, phys member, phys admin */
static char prom_file[512];

static const char *const env[] = {"AIDC_SYNC_INTERVAL_MS=100",
                                  "AIDC_ADMISSION_INTERVAL_MS=200",
                                  "AIDC_PREEMPT_GRACE_SECONDS=1",
                                  "AIDC_EFFICIENCY_INTERVAL_SECONDS=1",
                                  "AIDC_IDLE_GPU_SECONDS=4",
                                  "AIDC_IDLE_GPU_UTIL_PERCENT=10",
                                  NULL};

static void setup(void)
{
    harness_setup("efficiency", env);
    /* a Prometheus nobody listens at when the run has none: GPU fields stay null */
    jobs_admin_ok("POST", "/api/v1/clusters",
                  fmt("{\"name\":\"local\",\"kind\":\"local\",\"options\":{\"gpus\":{\"a100\":4},"
                      "\"cpus\":64,\"memory_gib\":512,\"writable_paths\":[\"%s\"],"
                      "\"metrics\":{\"prometheus_url\":\"%s\"}}}",
                      jobs_shared_dir(), prom_url ? prom_url : "http://127.0.0.1:9"),
                  201);
    const char *quota = "{\"gpu:a100\":{\"guaranteed\":2,\"limit\":4}}";
    ann = jobs_tenant_member("chem", "mol", quota, "ann");
    tad = make_member_login("chem", "tad", "tenant_admin");
    pia = jobs_tenant_member("phys", "lab", quota, "pia");
    oli = make_member_login("phys", "oli", "tenant_admin");
    ck_assert(ann && tad && pia && oli);
    snprintf(prom_file, sizeof prom_file, "%s/efficiency-%d.prom", dcgm_dir ? dcgm_dir : "/tmp",
             (int)getpid());
}

static void teardown(void)
{
    if (dcgm_dir)
        unlink(prom_file);
    free(ann);
    free(tad);
    free(pia);
    free(oli);
    jobs_stop_shims(10);
    harness_teardown();
}

/* Poll the job until its efficiency's field is a number (deadline timeout_s); the job. */
static json_t *wait_field(const char *token, const char *tenant, const char *id, const char *field,
                          int timeout_s)
{
    double end = jobs_now() + timeout_s;
    for (;;) {
        json_t *j = jobs_get(token, tenant, id);
        if (json_is_number(json_object_get(json_object_get(j, "efficiency"), field)))
            return j;
        if (jobs_now() > end) {
            char *text = json_dumps(j, 0);
            ck_abort_msg("efficiency.%s never came: %s", field, text);
        }
        json_decref(j);
        jobs_nap_ms(200);
    }
}

static double eff(const json_t *j, const char *field)
{
    const json_t *v = json_object_get(json_object_get(j, "efficiency"), field);
    ck_assert_msg(json_is_number(v), "efficiency.%s is not a number", field);
    return json_number_value(v);
}

static bool eff_null(const json_t *j, const char *field)
{
    const json_t *e = json_object_get(j, "efficiency");
    return json_is_object(e) && json_is_null(json_object_get(e, field));
}

START_TEST(local_jobs_cpu_and_memory_efficiency_from_their_cgroups)
{
    /* about 200 MB held at once (tail keeps a line without a newline whole), then two
     * seconds of one busy core; and a job that only sleeps */
    char *busy = jobs_submit(ann, "chem",
                             "{\"project\":\"mol\",\"name\":\"busy\",\"cpus\":1,\"memory_gib\":1,"
                             "\"script\":\"head -c 200000000 /dev/zero | tail -n 1 | wc -c\\n"
                             "end=$(( $(date +%s) + 3 ))\\n"
                             "while [ $(date +%s) -lt $end ]; do :; done\"}");
    char *idle = jobs_submit(ann, "chem",
                             "{\"project\":\"mol\",\"name\":\"nap\",\"cpus\":2,\"memory_gib\":2,"
                             "\"command\":[\"sleep\",\"3\"]}");
    json_t *b = jobs_wait(ann, "chem", busy, "succeeded,failed", 60);
    ck_assert_str_eq(jstr(b, "state"), "succeeded");
    json_decref(b);
    b = wait_field(ann, "chem", busy, "cpu_efficiency", 10);
    double cpu = eff(b, "cpu_efficiency");
    /* a loaded machine gives the loop less than a core (0.19 with three test programs on
     * 2 CPUs): compared with the sleeper's below */
    ck_assert_msg(cpu > 0.05 && cpu < 1.6, "busy cpu_efficiency %f", cpu);
    double peak = eff(b, "mem_peak_gib"), memeff = eff(b, "mem_efficiency");
    ck_assert_msg(peak > 0.15 && peak < 1.0, "busy mem_peak_gib %f", peak);
    ck_assert_msg(fabs(memeff - peak / 1.0) < 0.01, "mem_efficiency %f of peak %f", memeff, peak);
    /* no GPUs: their fields are null, not zero */
    ck_assert(eff_null(b, "gpu_util_avg") && eff_null(b, "gpu_util_peak") &&
              eff_null(b, "gpu_mem_peak_gib"));
    json_decref(b);

    json_t *n = jobs_wait(ann, "chem", idle, "succeeded,failed", 60);
    ck_assert_str_eq(jstr(n, "state"), "succeeded");
    json_decref(n);
    n = wait_field(ann, "chem", idle, "cpu_efficiency", 10);
    ck_assert_msg(eff(n, "cpu_efficiency") < 0.1, "sleeping cpu_efficiency %f",
                  eff(n, "cpu_efficiency"));
    ck_assert_msg(cpu > 5 * eff(n, "cpu_efficiency"), "busy %f, sleeping %f", cpu,
                  eff(n, "cpu_efficiency"));
    ck_assert(eff(n, "mem_efficiency") < 0.1);
    json_decref(n);

    /* a job still queued has every field null */
    jobs_project_quota("chem", "mol", "{\"jobs\":{\"limit\":0}}");
    char *held =
        jobs_submit(ann, "chem", "{\"project\":\"mol\",\"name\":\"held\",\"command\":[\"true\"]}");
    json_t *h = jobs_get(ann, "chem", held);
    static const char *const fields[] = {"gpu_util_avg",   "gpu_util_peak", "gpu_mem_peak_gib",
                                         "cpu_efficiency", "mem_peak_gib",  "mem_efficiency"};
    for (size_t i = 0; i < sizeof fields / sizeof *fields; i++)
        ck_assert_msg(eff_null(h, fields[i]), "queued job's %s is not null", fields[i]);
    json_decref(h);
    free(held);
    free(busy);
    free(idle);
}
END_TEST

/* The exporter's series for the running jobs: utilization and framebuffer (MiB) per job. */
static void write_metrics(const char *const *ids, const int *util, const int *fb_mib, size_t n)
{
    char tmp[600];
    snprintf(tmp, sizeof tmp, "%s.tmp", prom_file);
    FILE *f = fopen(tmp, "w");
    ck_assert_ptr_nonnull(f);
    for (size_t i = 0; i < n; i++) {
        fprintf(f, "DCGM_FI_DEV_GPU_UTIL{gpu=\"%zu\",Hostname=\"node1\",hpc_job=\"%s\"} %d\n", i,
                ids[i], util[i]);
        fprintf(f, "DCGM_FI_DEV_FB_USED{gpu=\"%zu\",Hostname=\"node1\",hpc_job=\"%s\"} %d\n", i,
                ids[i], fb_mib[i]);
    }
    ck_assert_int_eq(fclose(f), 0);
    ck_assert_int_eq(rename(tmp, prom_file), 0);
}

static bool lists(const char *path, const char *token, const char *id)
{
    json_t *items = get_items(path, token);
    bool found = false;
    size_t i;
    json_t *it;
    json_array_foreach(items, i, it) found = found || strcmp(jstr(it, "id"), id) == 0;
    json_decref(items);
    return found;
}

START_TEST(gpu_metrics_from_prometheus_and_the_idle_report)
{
    if (!prom_url) {
        printf(
            "skipped: AIDC_TEST_PROMETHEUS_URL not set (tests/run.sh starts tests/prometheus)\n");
        return;
    }
    const char *sleeper = "\"command\":[\"sleep\",\"120\"]";
    char *lazy = jobs_submit(ann, "chem",
                             fmt("{\"project\":\"mol\",\"name\":\"lazy\",\"gpus\":1,"
                                 "\"gpu_type\":\"a100\",%s}",
                                 sleeper));
    char *busy = jobs_submit(ann, "chem",
                             fmt("{\"project\":\"mol\",\"name\":\"busy\",\"gpus\":1,"
                                 "\"gpu_type\":\"a100\",%s}",
                                 sleeper));
    char *other = jobs_submit(pia, "phys",
                              fmt("{\"project\":\"lab\",\"name\":\"theirs\",\"gpus\":1,"
                                  "\"gpu_type\":\"a100\",%s}",
                                  sleeper));
    json_t *l = jobs_wait(ann, "chem", lazy, "running", 30);
    json_t *b = jobs_wait(ann, "chem", busy, "running", 30);
    json_t *o = jobs_wait(harness_srv.admin_token, "phys", other, "running", 30);
    const char *ids[3] = {jstr(l, "backend_job_id"), jstr(b, "backend_job_id"),
                          jstr(o, "backend_job_id")};
    ck_assert(ids[0] && ids[1] && ids[2]);
    const int util[3] = {3, 80, 2}, fb[3] = {4096, 30720, 1024};
    write_metrics(ids, util, fb, 3);

    /* a scrape and a worker round each second: seconds here, a minute on a loaded machine */
    json_t *lj = wait_field(ann, "chem", lazy, "gpu_util_avg", 60);
    ck_assert_msg(fabs(eff(lj, "gpu_util_avg") - 3) < 0.01, "lazy avg %f", eff(lj, "gpu_util_avg"));
    ck_assert(fabs(eff(lj, "gpu_util_peak") - 3) < 0.01);
    ck_assert(fabs(eff(lj, "gpu_mem_peak_gib") - 4) < 0.01);
    ck_assert(eff_null(lj, "cpu_efficiency")); /* measured at its end */
    json_decref(lj);
    json_t *bj = wait_field(ann, "chem", busy, "gpu_util_avg", 60);
    ck_assert(fabs(eff(bj, "gpu_util_peak") - 80) < 0.01);
    ck_assert(fabs(eff(bj, "gpu_mem_peak_gib") - 30) < 0.01);
    json_decref(bj);

    /* the idle window (4 s here) passes: the lazy job is reported, the busy one not */
    const char *chem_idle = "/api/v1/tenants/chem/efficiency/idle";
    double end = jobs_now() + 30;
    while (!lists(chem_idle, tad, lazy) && jobs_now() < end)
        jobs_nap_ms(300);
    ck_assert_msg(lists(chem_idle, tad, lazy), "the 3 %% job is not in the idle report");
    ck_assert(!lists(chem_idle, tad, busy));
    json_t *items = get_items(chem_idle, tad);
    json_t *row = json_array_get(items, 0);
    ck_assert_str_eq(jstr(row, "tenant"), "chem");
    ck_assert_str_eq(jstr(row, "user"), "ann");
    ck_assert(json_number_value(json_object_get(row, "gpu_util_max")) < 10);
    ck_assert(json_is_null(json_object_get(row, "idle_noticed_at"))); /* the notifier's hook */
    json_decref(items);
    /* platform admins see every tenant's; phys's admin sees phys's only */
    end = jobs_now() + 30;
    while (!lists("/api/v1/efficiency/idle", harness_srv.admin_token, other) && jobs_now() < end)
        jobs_nap_ms(300);
    ck_assert(lists("/api/v1/efficiency/idle", harness_srv.admin_token, lazy));
    ck_assert(lists("/api/v1/efficiency/idle", harness_srv.admin_token, other));
    ck_assert(lists("/api/v1/tenants/phys/efficiency/idle", oli, other));
    ck_assert(!lists("/api/v1/tenants/phys/efficiency/idle", oli, lazy));
    /* another tenant's report is as absent as a tenant that does not exist; members and
     * tenant admins have no platform-wide report */
    long st_other = req("GET", chem_idle, oli, NULL);
    long st_none = req("GET", "/api/v1/tenants/no-such-tenant/efficiency/idle", oli, NULL);
    ck_assert_int_eq(st_other, st_none);
    ck_assert_int_eq(req("GET", chem_idle, ann, NULL), 403);
    ck_assert_int_eq(req("GET", "/api/v1/efficiency/idle", tad, NULL), 403);
    ck_assert_int_eq(
        req("GET", "/api/v1/efficiency/idle?limit=100000", harness_srv.admin_token, NULL), 400);

    /* the lazy job picks up: out of the report after the next window */
    const int util2[3] = {90, 80, 2};
    write_metrics(ids, util2, fb, 3);
    end = jobs_now() + 30;
    while (lists(chem_idle, tad, lazy) && jobs_now() < end)
        jobs_nap_ms(300);
    ck_assert_msg(!lists(chem_idle, tad, lazy), "a busy job stays in the idle report");

    /* ended: its whole run is summarised once more (the peak saw the 90) */
    ck_assert_int_eq(req("POST", fmt("/api/v1/tenants/chem/jobs/%s/cancel", lazy), ann, NULL), 202);
    json_decref(jobs_wait(ann, "chem", lazy, "cancelled", 30));
    end = jobs_now() + 20;
    json_t *fin = NULL;
    for (;;) {
        fin = jobs_get(ann, "chem", lazy);
        if (eff(fin, "gpu_util_peak") > 89 || jobs_now() > end)
            break;
        json_decref(fin);
        jobs_nap_ms(300);
    }
    ck_assert(fabs(eff(fin, "gpu_util_peak") - 90) < 0.01);
    json_decref(fin);
    json_decref(l);
    json_decref(b);
    json_decref(o);
    free(lazy);
    free(busy);
    free(other);
}
END_TEST

START_TEST(a_clusters_prometheus_must_be_an_http_url)
{
    static const char *const bad[] = {
        "{\"prometheus_url\":\"file:///etc/passwd\"}",
        "{\"prometheus_url\":\"gopher://127.0.0.1:70/\"}",
        "{\"prometheus_url\":\"http://127.0.0.1:9090/x y\"}",
        "{\"prometheus_url\":\"http://127.0.0.1:9090/?query=up\"}",
        "{\"prometheus_url\":\"http://\"}",
        "{\"prometheus_url\":42}",
        "{}",
        "{\"prometheus_url\":\"http://p:9090\",\"job_label\":\"hpc job\\\"}\"}",
        "{\"prometheus_url\":\"http://p:9090\",\"extra\":1}",
        "\"http://p:9090\"",
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        struct http_res r;
        long st = reqj("POST", "/api/v1/clusters", harness_srv.admin_token,
                       fmt("{\"name\":\"slurm-%zu\",\"kind\":\"slurm\",\"endpoint\":"
                           "\"http://127.0.0.1:6820\",\"credentials_ref\":\"env:X\","
                           "\"options\":{\"metrics\":%s}}",
                           i, bad[i]),
                       &r);
        ck_assert_msg(st == 422, "metrics %s answered %ld", bad[i], st);
        expect_problem(&r, "cluster.options", NULL, NULL);
        http_res_free(&r);
    }
    /* only platform admins read a cluster's options (its Prometheus among them) */
    json_t *c = NULL;
    struct http_res r;
    ck_assert_int_eq(reqj("GET", "/api/v1/clusters/local", ann, NULL, &r), 200);
    ck_assert_ptr_null(json_object_get(r.json, "options"));
    http_res_free(&r);
    ck_assert_int_eq(reqj("GET", "/api/v1/clusters/local", harness_srv.admin_token, NULL, &r), 200);
    c = json_object_get(json_object_get(r.json, "options"), "metrics");
    ck_assert(json_is_string(json_object_get(c, "prometheus_url")));
    http_res_free(&r);
}
END_TEST

int main(void)
{
    harness_require_pg();
    jobs_reap_at_exit();
    prom_url = getenv("AIDC_TEST_PROMETHEUS_URL");
    dcgm_dir = getenv("AIDC_TEST_DCGM_DIR");
    if (prom_url && !dcgm_dir)
        prom_url = NULL;
    Suite *s = suite_create("efficiency");
    TCase *tc = tcase_create("efficiency");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 150);
    tcase_add_test(tc, local_jobs_cpu_and_memory_efficiency_from_their_cgroups);
    tcase_add_test(tc, gpu_metrics_from_prometheus_and_the_idle_report);
    tcase_add_test(tc, a_clusters_prometheus_must_be_an_http_url);
    suite_add_tcase(s, tc);
    return suite_run(s);
}
