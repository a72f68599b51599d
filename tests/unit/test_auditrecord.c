/*
 * test_auditrecord.c - agents' command records checked without a database
 * (api/auditrecord.c): both body forms, each refusal naming its record, the
 * time window, and the rows handed to db_audit_ingest. The HTTP path
 * (stored, duplicates) is tests/http/test_audit_ingest.c's; fuzzed by
 * tests/fuzz/fuzz_ingest.c.
 */
#include "tests/support/suite.h"
#include "api/auditrecord.h"
#include "lib/err.h"

#include <check.h>
#include <microhttpd.h>
#include <stdlib.h>
#include <string.h>

#define NOW 1764662400L /* 2025-12-02T08:00:00Z */
#define REC(ts, extra) "{\"ts\":\"" ts "\",\"host\":\"gpu-01\",\"command\":\"ls -l\"" extra "}"

static int parse(const char *body, bool ndjson, size_t max, struct resp *rs, json_t **out)
{
    memset(rs, 0, sizeof *rs);
    return auditrecord_parse(body, strlen(body), ndjson, max, NOW, NOW - 86400 * 30, rs, out);
}

/* A refusal whose first field error is field, mentioning has. */
static void refused(const char *body, bool ndjson, const char *field, const char *has)
{
    struct resp rs;
    json_t *out = (json_t *)1;
    ck_assert_int_eq(parse(body, ndjson, 10, &rs, &out), AIDC_EINVAL);
    ck_assert_ptr_null(out);
    ck_assert_int_eq(rs.err.status, MHD_HTTP_BAD_REQUEST);
    if (field) {
        ck_assert_uint_ge(rs.err.nfields, 1);
        ck_assert_str_eq(rs.err.fields[0].field, field);
        ck_assert_msg(strstr(rs.err.fields[0].message, has), "%s", rs.err.fields[0].message);
    } else {
        ck_assert_msg(strstr(rs.err.detail, has), "%s", rs.err.detail);
    }
    resp_free(&rs);
}

START_TEST(both_forms_give_the_rows_to_store)
{
    struct resp rs;
    json_t *out;
    const char *nd = REC("2025-12-02T07:59:00Z", ",\"uid\":1000,\"exit_code\":0") "\r\n\n"
                     REC("2025-12-02T07:59:01.5+01:00", ",\"kind\":\"module\"") "\n";
    ck_assert_int_eq(parse(nd, true, 10, &rs, &out), 0);
    ck_assert_uint_eq(json_array_size(out), 2);
    json_t *r = json_array_get(out, 0);
    ck_assert_str_eq(json_string_value(json_object_get(r, "host")), "gpu-01");
    ck_assert_str_eq(json_string_value(json_object_get(r, "kind")), "command");
    json_t *d = json_object_get(r, "details");
    ck_assert_str_eq(json_string_value(json_object_get(d, "command")), "ls -l");
    ck_assert_int_eq(json_integer_value(json_object_get(d, "uid")), 1000);
    ck_assert_str_eq(json_string_value(json_object_get(json_array_get(out, 1), "kind")), "module");
    json_decref(out);
    resp_free(&rs);

    ck_assert_int_eq(parse("{\"commands\":[" REC("2025-12-02T07:00:00Z", "") "]}", false, 10, &rs,
                           &out),
                     0);
    ck_assert_uint_eq(json_array_size(out), 1);
    json_decref(out);
    resp_free(&rs);
}
END_TEST

START_TEST(refusals_name_the_record)
{
    refused("", true, NULL, "body is required");
    refused("\n\n", true, NULL, "no records");
    refused(REC("2025-12-02T07:00:00Z", "") "\nnot json\n", true, "line 2", "not valid JSON");
    refused(REC("2025-12-02T09:00:01Z", "") "\n", true, "line 1", "ahead");
    refused(REC("2025-10-01T00:00:00Z", "") "\n", true, "line 1", "older");
    refused(REC("2025-12-02T07:00:00Z", ",\"uid\":-1") "\n", true, "line 1", "uid");
    refused(REC("2025-12-02T07:00:00Z", ",\"job_id\":\"x\"") "\n", true, "line 1", "job_id");
    refused(REC("2025-12-02T07:00:00Z", ",\"extra\":1") "\n", true, "line 1", "not a field");
    refused("{\"commands\":[1]}", false, "commands[0]", "must be an object");
    refused("{\"commands\":[],\"x\":1}", false, NULL, "no other fields");
    refused("{\"commands\":[{},{},{},{},{},{},{},{},{},{},{}]}", false, NULL, "at most 10");
}
END_TEST

/* A refusal's code and params: a record's own field is "name", the record the field. */
START_TEST(refusals_carry_their_code_and_params)
{
    struct resp rs;
    json_t *out;
    ck_assert_int_eq(parse(REC("2025-12-02T07:00:00Z", ",\"exit_code\":1000") "\n", true, 10, &rs,
                           &out),
                     AIDC_EINVAL);
    ck_assert_uint_eq(rs.err.nfields, 1);
    ck_assert_int_eq(rs.err.fields[0].problem, PROBLEM_AUDIT_RECORD_INTEGER);
    ck_assert_str_eq(rs.err.fields[0].message,
                     "exit_code: must be an integer from -255 to 511, or null");
    const json_t *p = rs.err.fields[0].params;
    ck_assert_str_eq(json_string_value(json_object_get(p, "name")), "exit_code");
    ck_assert_int_eq(json_integer_value(json_object_get(p, "min")), -255);
    ck_assert_int_eq(json_integer_value(json_object_get(p, "max")), 511);
    /* the answer is that field's problem, with the record as "field" */
    ck_assert_int_eq(rs.err.problem, PROBLEM_AUDIT_RECORD_INTEGER);
    ck_assert_str_eq(json_string_value(json_object_get(rs.err.params, "field")), "line 1");
    ck_assert_str_eq(json_string_value(json_object_get(rs.err.params, "name")), "exit_code");
    resp_free(&rs);

    ck_assert_int_eq(parse(REC("2025-12-02T09:00:01Z", "") "\n", true, 10, &rs, &out), AIDC_EINVAL);
    ck_assert_int_eq(rs.err.fields[0].problem, PROBLEM_AUDIT_RECORD_TIME_AHEAD);
    ck_assert_str_eq(json_string_value(json_object_get(rs.err.fields[0].params, "name")), "ts");
    resp_free(&rs);

    ck_assert_int_eq(parse("{\"commands\":[{},{},{}]}", false, 2, &rs, &out), AIDC_EINVAL);
    ck_assert_int_eq(rs.err.problem, PROBLEM_AUDIT_RECORDS_TOO_MANY);
    ck_assert_int_eq(json_integer_value(json_object_get(rs.err.params, "max")), 2);
    ck_assert_str_eq(rs.err.detail, "at most 2 records per request");
    resp_free(&rs);

    ck_assert_int_eq(parse("{\"commands\": [", false, 2, &rs, &out), AIDC_EINVAL);
    ck_assert_int_eq(rs.err.problem, PROBLEM_JSON_MALFORMED);
    ck_assert_int_eq(json_integer_value(json_object_get(rs.err.params, "line")), 1);
    resp_free(&rs);
}
END_TEST

START_TEST(at_most_max_records)
{
    struct resp rs;
    json_t *out;
    const char *three = REC("2025-12-02T07:00:00Z", "") "\n" REC("2025-12-02T07:00:01Z", "")
        "\n" REC("2025-12-02T07:00:02Z", "") "\n";
    ck_assert_int_eq(parse(three, true, 2, &rs, &out), AIDC_EINVAL);
    ck_assert_str_eq(rs.err.fields[0].field, "line 3");
    resp_free(&rs);
    ck_assert_int_eq(parse(three, true, 3, &rs, &out), 0);
    json_decref(out);
    resp_free(&rs);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("auditrecord");
    TCase *tc = tcase_create("auditrecord");
    tcase_add_test(tc, both_forms_give_the_rows_to_store);
    tcase_add_test(tc, refusals_name_the_record);
    tcase_add_test(tc, refusals_carry_their_code_and_params);
    tcase_add_test(tc, at_most_max_records);
    suite_add_tcase(s, tc);
    return suite_run(s);
}
