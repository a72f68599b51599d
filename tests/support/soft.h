/*
 * soft.h - "soft" checks for the integration tests: a check that fails
 * prints one line on stderr (prefixed DISCREPANCY) with the request and the
 * answer and lets the test go on; soft_done() fails the test at its end, so
 * one run lists everything that is wrong rather than the first thing.
 *
 * Built on them, the checks several test programs share: problem+json
 * answers to refused requests, a snapshot of stored data that a refused
 * request must leave as it was, and the server's log after a run.
 *
 * A test that uses soft() ends with soft_done(), which also starts the count
 * again for the next test.
 */
#ifndef AIDC_TEST_SOFT_H
#define AIDC_TEST_SOFT_H

#include <check.h>
#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

struct http_res;

/* ---- the checks ----------------------------------------------------------------- */

/* Unless ok, print "DISCREPANCY: " and the message on stderr and count it. */
void soft(bool ok, const char *f, ...) __attribute__((format(printf, 2, 3)));
/* Fail the running test when soft() counted discrepancies; the count starts again. */
void soft_done(void);

/*
 * Printable rendering of n bytes of s (NULL: "(null)"): whole UTF-8
 * characters as they are, control bytes, '\\' and broken UTF-8 as \xNN, long
 * text cut. Returns one of 8 rotating thread-local buffers.
 */
const char *soft_show(const char *s, size_t n);
/* soft_show of a NUL-terminated string. */
const char *soft_shows(const char *s);

/* ---- building requests ---------------------------------------------------------- */

/* unit repeated times times (malloc'd, caller frees). */
char *soft_rep(const char *unit, size_t times);
/* json_dumps(o, JSON_COMPACT | flags) and json_decref(o) (malloc'd, caller frees). */
char *soft_jdump(json_t *o, size_t flags);
/* Send len bytes of body as application/json to harness_srv; returns the status. */
long soft_send_json(const char *method, const char *path, const char *token, const char *body,
                    size_t len, struct http_res *r);
/* The item of doc's "items" whose string member key equals val (borrowed), or NULL. */
json_t *soft_find_item(const json_t *doc, const char *key, const char *val);

/* ---- refused requests ----------------------------------------------------------- */

/*
 * r must be a problem document with status (any 4xx when status is 0) whose
 * "errors" name every field in fields (NULL-terminated, may be NULL), and whose
 * request_id matches the X-Request-Id header. what names the request.
 */
void soft_problem_fields(const char *what, const struct http_res *r, long status,
                         const char *const *fields);
/* soft_problem_fields with one field (or none: NULL). */
void soft_problem(const char *what, const struct http_res *r, long status, const char *field);
/* Send len bytes of body as JSON and expect a problem with status naming field (or none). */
void soft_bad_n(const char *method, const char *path, const char *token, const char *body,
                size_t len, long status, const char *field);
/* soft_bad_n of a NUL-terminated body. */
void soft_bad(const char *method, const char *path, const char *token, const char *body,
              long status, const char *field);

/* ---- stored data: a refused request changes nothing ----------------------------- */

/*
 * harness_setup(name) and the objects a snapshot reads: tenant "acme" with
 * project "base", user "alice" a member of it. Teardown: harness_teardown.
 */
void soft_fixture(const char *name);
/* What the admin reads of tenants, projects, members, users and tokens (malloc'd). */
char *soft_snapshot(void);
/* A discrepancy, showing the first difference, when a new snapshot is not before. */
void soft_same_snapshot(const char *what, const char *before);

/* ---- the server after a run ----------------------------------------------------- */

/*
 * A discrepancy for every line of the server's log that is an error or a
 * 5xx answer and, when json_lines, for lines that are not valid JSON.
 */
void soft_log_check(bool json_lines);
/*
 * Add to tc (whose fixture is soft_fixture) its last test: after all the
 * tests before it, /healthz, /readyz and /api/v1/me answer 200 and
 * soft_log_check(true) finds nothing.
 */
void soft_add_server_check(TCase *tc);

#endif
