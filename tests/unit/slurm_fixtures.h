/*
 * slurm_fixtures.h - helpers of the Slurm unit tests (test_slurm*.c): the
 * answers a real slurmrestd 22.05 gave, captured in tests/fixtures/slurmrestd/
 * (its README says what each one shows).
 */
#ifndef AIDC_TEST_SLURM_FIXTURES_H
#define AIDC_TEST_SLURM_FIXTURES_H

#include "backends/backend.h"
#include "lib/credref.h"
#include "backends/slurm.h"
#include "backends/slurmrest.h"
#include "lib/crypto.h"
#include "lib/err.h"
#include "tests/support/suite.h"

#include <check.h>
#include <jansson.h>
#include <jwt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define FIXTURES AIDC_SOURCE_DIR "/tests/fixtures/slurmrestd/"

/* ---- helpers ------------------------------------------------------------------ */

/* A whole fixture file, new reference; the test fails when it does not load. */
static inline json_t *fixture(const char *name)
{
    char path[1024];
    int w = snprintf(path, sizeof path, "%s%s", FIXTURES, name);
    ck_assert(w > 0 && (size_t)w < sizeof path);
    json_error_t jerr;
    json_t *f = json_load_file(path, 0, &jerr);
    ck_assert_msg(f != NULL, "%s: %s (line %d)", path, jerr.text, jerr.line);
    return f;
}

/* response.body of a fixture (object or text), new reference. */
static inline json_t *fixture_body(const char *name)
{
    json_t *f = fixture(name);
    json_t *body = json_object_get(json_object_get(f, "response"), "body");
    ck_assert_msg(body != NULL, "%s: no response.body", name);
    json_incref(body);
    json_decref(f);
    return body;
}

/* The first element of response.body.jobs, new reference. */
static inline json_t *fixture_job(const char *name)
{
    json_t *body = fixture_body(name);
    json_t *job = json_array_get(json_object_get(body, "jobs"), 0);
    ck_assert_msg(json_is_object(job), "%s: no response.body.jobs[0]", name);
    json_incref(job);
    json_decref(body);
    return job;
}

static inline json_t *parse(const char *text)
{
    json_error_t jerr;
    json_t *j = json_loads(text, 0, &jerr);
    ck_assert_msg(j != NULL, "bad test JSON %s: %s", text, jerr.text);
    return j;
}

/* An answer as slurmrest_call builds it: the body text, and json when it parses. */
static inline void answer_text(struct slurmrest_answer *a, long status, const char *body)
{
    a->status = status;
    a->body = strdup(body);
    ck_assert(a->body != NULL);
    a->len = strlen(body);
    a->json = json_loadb(a->body, a->len, 0, NULL);
}

/* The answer of a fixture: its status and its body as slurmrestd sent it. */
static inline void answer_fixture(struct slurmrest_answer *a, const char *name)
{
    json_t *f = fixture(name);
    json_t *resp = json_object_get(f, "response");
    json_t *body = json_object_get(resp, "body");
    ck_assert_msg(json_is_integer(json_object_get(resp, "status")), "%s: no status", name);
    if (json_is_string(body)) {
        answer_text(a, (long)json_integer_value(json_object_get(resp, "status")),
                    json_string_value(body));
    } else {
        char *text = json_dumps(body, JSON_COMPACT);
        ck_assert(text != NULL);
        answer_text(a, (long)json_integer_value(json_object_get(resp, "status")), text);
        free(text);
    }
    json_decref(f);
}

static inline bool contains(const char *s, const char *part)
{
    return s && part && strstr(s, part) != NULL;
}


#define COUNT(a) ((int)(sizeof(a) / sizeof((a)[0])))

static inline TCase *slurm_tcase(Suite *s, const char *name)
{
    TCase *tc = tcase_create(name);
    tcase_set_timeout(tc, 10);
    suite_add_tcase(s, tc);
    return tc;
}

#endif
