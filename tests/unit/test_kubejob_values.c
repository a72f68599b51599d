/*
 * test_kubejob_values.c - the values of the Kubernetes API aidc reads
 * (backends/kubejob.h): RFC 3339 times and resource quantities ("7500m",
 * "33554432Ki", "1e3"), as the API server writes them and as garbage, and
 * the inventory's sums over absurd nodes (they stop at the largest value).
 */
#include "tests/support/suite.h"

#include "backends/kubejob.h"

#include <check.h>
#include <limits.h>
#include <stdbool.h>
#include <string.h>

#define T0 1796198400LL /* 2026-12-02T08:00:00Z */

/* ---- kubejob_time, kubejob_quantity --------------------------------------------------- */

START_TEST(times)
{
    ck_assert_int_eq(kubejob_time("2026-12-02T08:00:00Z"), T0);
    ck_assert_int_eq(kubejob_time("2026-12-02T09:30:01Z"), T0 + 5401);
    ck_assert_int_eq(kubejob_time("2026-12-03T03:26:16Z"), T0 + 19 * 3600 + 26 * 60 + 16);
    ck_assert_int_eq(kubejob_time("2026-12-02T08:00:00.123456Z"), T0); /* MicroTime */
    ck_assert_int_eq(kubejob_time("2000-02-29T00:00:00Z"), 951782400);
    static const char *const bad[] = {"", "garbage", "2026-12-02T08:00:00", "2026-12-02",
                                      "2026-12-02T08:00:00+01:00", "2026-13-02T08:00:00Z",
                                      "2026-12-02 08:00:00Z", "08:00:00Z", "1796198400"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        ck_assert_msg(kubejob_time(bad[i]) == 0, "\"%s\" read as a time", bad[i]);
    ck_assert_int_eq(kubejob_time(NULL), 0);
}
END_TEST

START_TEST(quantities)
{
    static const struct {
        const char *q;
        bool gib;
        long long want;
    } q[] = {{"8", false, 8}, {"7500m", false, 7}, {"250m", false, 0}, {"1e3", false, 1000},
             {"2k", false, 2000}, {"0", false, 0}, {"32Gi", true, 32}, {"33554432Ki", true, 32},
             {"128M", true, 0}, {"16000M", true, 14}, {"1056451700Ki", true, 1007},
             {"263846412Ki", true, 251}, {"1.5Gi", true, 1}, {"1Ti", true, 1024},
             {"34359738368", true, 32}, {"8", true, 0}, {"1Pi", true, 1048576},
             /* garbage, negatives */
             {NULL, false, -1}, {"", false, -1}, {"abc", false, -1}, {"Gi", true, -1},
             {"8x", false, -1}, {"8 Gi", true, -1}, {"8Gi ", true, -1}, {"8gi", true, -1},
             {"nan", false, -1}, {"inf", false, -1}, {"1e400", false, -1}, {"--1", false, -1},
             {"1e19", false, -1}, {"-1", false, -1}, {"-7500m", false, -1}, {"-32Gi", true, -1},
             {"-1e3", false, -1}};
    for (size_t i = 0; i < sizeof q / sizeof q[0]; i++)
        ck_assert_msg(kubejob_quantity(q[i].q, q[i].gib) == q[i].want, "%s (%s): %lld, not %lld",
                      q[i].q ? q[i].q : "NULL", q[i].gib ? "GiB" : "units",
                      kubejob_quantity(q[i].q, q[i].gib), q[i].want);
}
END_TEST

/* A thousand nodes of 9e15 cores each: the cluster's total saturates, it does not wrap. */
START_TEST(inventory_sums_saturate)
{
    json_t *items = json_array(), *opts = json_object();
    for (int i = 0; i < 1100; i++)
        json_array_append_new(
            items, json_loads("{\"metadata\":{\"name\":\"n\",\"labels\":{}},\"spec\":{},"
                              "\"status\":{\"allocatable\":{\"cpu\":\"9e15\",\"memory\":\"1Gi\"},"
                              "\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\"}]}}",
                              0, NULL));
    struct backend_resource out[8];
    int count = kubejob_inventory_add(opts, items, out, 8, 0);
    bool seen = false;
    for (int k = 0; k < count; k++)
        if (strcmp(out[k].name, "cpu") == 0) {
            seen = true;
            ck_assert_msg(out[k].total == LLONG_MAX, "cpu total %lld", out[k].total);
        }
    ck_assert(seen);
    json_decref(items);
    json_decref(opts);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("kubejob_values");
    TCase *tc = tcase_create("values");
    tcase_add_test(tc, times);
    tcase_add_test(tc, quantities);
    tcase_add_test(tc, inventory_sums_saturate);
    suite_add_tcase(s, tc);
    return suite_run(s);
}
