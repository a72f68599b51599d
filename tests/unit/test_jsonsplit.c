/*
 * test_jsonsplit.c - slurmrestd's list of every job taken apart as it
 * arrives: a generated answer of 40,000 jobs (~120 MB, what slurmctld holds
 * at that size) fed in curl-sized pieces gives every job once, in order,
 * while the splitter's buffer stays the size of one job (the bound on
 * aidcd's memory in a full poll); members other than the array come whole;
 * answers cut short or malformed fail, so a poll never takes them as whole.
 */
#include "backends/jsonsplit.h"
#include "tests/support/suite.h"

#include <check.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct seen {
    size_t jobs;
    long long last_id;
    bool in_order;
    bool errors_empty;
    size_t members;
};

static bool on_job(void *arg, const char *text, size_t len)
{
    struct seen *s = arg;
    json_t *j = json_loadb(text, len, 0, NULL);
    if (!j)
        return false;
    long long id = json_integer_value(json_object_get(j, "job_id"));
    s->in_order &= id == s->last_id + 1;
    s->last_id = id;
    s->jobs++;
    json_decref(j);
    return true;
}

static bool on_member(void *arg, const char *key, const char *text, size_t len)
{
    struct seen *s = arg;
    s->members++;
    if (strcmp(key, "errors") == 0)
        s->errors_empty = len == 2 && memcmp(text, "[]", 2) == 0;
    return true;
}

static void init(struct jsonsplit *sp, struct seen *s)
{
    memset(s, 0, sizeof *s);
    s->in_order = true;
    *sp = (struct jsonsplit){.array_key = "jobs",
                             .max_value = 1 << 20,
                             .on_element = on_job,
                             .on_member = on_member,
                             .arg = s};
    jsonsplit_init(sp);
}

/* One job as slurmrestd writes it, ~3 KB (strings with escapes, nested objects, arrays). */
static int job_text(char *out, size_t n, long long id)
{
    char pad[2600];
    memset(pad, 'x', sizeof pad - 1);
    pad[sizeof pad - 1] = '\0';
    return snprintf(out, n,
                    "{\n \"account\": \"a\",\n \"job_id\": %lld,\n \"name\": \"run-%lld \\\"q\\\" "
                    "}]\\\\\",\n \"user_name\": \"aidc\",\n \"job_state\": \"PENDING\",\n "
                    "\"flags\": [\"A\", \"B]\"],\n \"job_resources\": {\"nodes\": {}},\n "
                    "\"comment\": \"%s\"\n}",
                    id, id, pad);
}

START_TEST(forty_thousand_jobs_in_one_job_of_memory)
{
    const long long njobs = 40000;
    struct jsonsplit sp;
    struct seen s;
    init(&sp, &s);
    const char *head = "{\n\"meta\": {\"plugin\": {\"type\": \"openapi/v0.0.38\"}},\n"
                       "\"errors\": [],\n\"jobs\": [\n";
    /* pieces of 16 KB, cut anywhere (in strings, between escapes), as curl hands them over */
    char piece[16384 + 4096];
    size_t plen = 0, total = 0;
    ck_assert(jsonsplit_feed(&sp, head, strlen(head)));
    for (long long id = 1; id <= njobs; id++) {
        if (id > 1)
            piece[plen++] = ',';
        plen += (size_t)job_text(piece + plen, sizeof piece - plen, id);
        if (plen >= 16384 || id == njobs) {
            /* fed in two odd-sized parts */
            size_t half = plen / 3;
            ck_assert(jsonsplit_feed(&sp, piece, half));
            ck_assert(jsonsplit_feed(&sp, piece + half, plen - half));
            total += plen;
            plen = 0;
        }
        ck_assert_uint_le(sp.cap, 4096);
    }
    const char *tail = "\n],\n\"warnings\": []\n}\n";
    ck_assert(jsonsplit_feed(&sp, tail, strlen(tail)));
    ck_assert_msg(jsonsplit_finish(&sp), "%s", sp.why);
    ck_assert_uint_gt(total, 100u * 1000 * 1000);
    ck_assert_uint_eq(s.jobs, (size_t)njobs);
    ck_assert(s.in_order);
    ck_assert(s.errors_empty);
    ck_assert_uint_eq(s.members, 3); /* meta, errors, warnings */
    /* the peak: one job's buffer, whatever the answer's size */
    ck_assert_uint_le(sp.cap, 4096);
    jsonsplit_free(&sp);
}
END_TEST

static const struct {
    const char *text;
    size_t jobs; /* handed over before it failed, or in all */
    bool whole;
} cases[] = {
    {"{\"errors\":[],\"jobs\":[]}", 0, true},
    {" { \"jobs\" : [ {\"job_id\":1} , {\"job_id\":2} ] , \"errors\" : [ ] } ", 2, true},
    {"{\"jobs\":[{\"job_id\":1},{\"job_id\":2}", 1, false},  /* cut short: job 2 unfinished */
    {"{\"jobs\":[{\"job_id\":1},{\"job_id\":2}]", 2, false}, /* no closing brace */
    {"{\"errors\":[]}", 0, false},                           /* no jobs at all */
    {"[{\"job_id\":1}]", 0, false},                          /* not an object */
    {"{\"jobs\":[{\"job_id\":1},,{\"job_id\":2}]}", 1, false},
    {"{\"jobs\":[{\"job_id\":1},]}", 1, false},
    {"{\"jobs\":[{\"job_id\":1}}]}", 0, false},
    {"{\"jobs\":[{\"job_id\":1}]} x", 1, false},
    {"{\"jobs\":[{\"job_id\":1}],\"jobs\":[{\"job_id\":2}]}", 1, false},
    {"", 0, false},
};

START_TEST(malformed_answers_fail)
{
    struct jsonsplit sp;
    struct seen s;
    init(&sp, &s);
    const char *t = cases[_i].text;
    bool ok = jsonsplit_feed(&sp, t, strlen(t)) && jsonsplit_finish(&sp);
    ck_assert_msg(ok == cases[_i].whole, "case %d: %s", _i, sp.why);
    ck_assert_uint_eq(s.jobs, cases[_i].jobs);
    jsonsplit_free(&sp);
}
END_TEST

START_TEST(a_job_over_the_cap_fails)
{
    struct jsonsplit sp;
    struct seen s;
    init(&sp, &s);
    sp.max_value = 64;
    char big[256];
    snprintf(big, sizeof big, "{\"jobs\":[{\"job_id\":1,\"comment\":\"%080d\"}]}", 0);
    ck_assert(!jsonsplit_feed(&sp, big, strlen(big)));
    ck_assert(!jsonsplit_finish(&sp));
    ck_assert_uint_eq(s.jobs, 0);
    jsonsplit_free(&sp);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("jsonsplit");
    TCase *tc = tcase_create("jsonsplit");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, forty_thousand_jobs_in_one_job_of_memory);
    tcase_add_loop_test(tc, malformed_answers_fail, 0, (int)(sizeof cases / sizeof cases[0]));
    tcase_add_test(tc, a_job_over_the_cap_fails);
    suite_add_tcase(s, tc);
    return suite_run(s);
}
