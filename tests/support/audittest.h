/*
 * audittest.h - what the audit tests share: aidcd's command line with a
 * deadline, the signing key of a test, one SQL value, and a set-up failure
 * that leaves no server or database behind.
 */
#ifndef AIDC_TEST_AUDITTEST_H
#define AIDC_TEST_AUDITTEST_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

/*
 * Run `aidcd args...` with env ("NAME=value", NULL-ended) added to ours,
 * stdout and stderr to files of their own. After deadline_s seconds
 * (SIGALRM, which survives exec) a hanging aidcd is ended, not left behind.
 * Returns the exit status (128 + signal when killed), or -1.
 */
int audittest_run_aidcd(const char *const *args, const char *const *env, const char *out,
                        const char *err, unsigned deadline_s);

/*
 * Make a fresh directory /tmp/aidc-<name>-key-XXXXXX with a new Ed25519
 * signing key (dir/audit.pem) and its public half (dir/audit.pub), and the
 * AIDC_AUDIT_KEY_FILE=... setting for aidcd into env_key. Exits the program
 * on failure (nothing can be tested without it).
 */
void audittest_key(const char *name, char *dir, size_t dirsz, char *key, size_t keysz, char *pub,
                   size_t pubsz, char *env_key, size_t envsz);
/* Remove a directory made by audittest_key. */
void audittest_key_remove(const char *dir);

/* The first value of the first row of sql over url (malloc'd), or NULL. */
char *audittest_sql_value(const char *url, const char *sql, int n, const char *const *params);

/* As audittest_sql_value, as a number; the test fails when there is none. */
long long audittest_num(const char *url, const char *sql, int n, const char *const *params);

/*
 * Wait (up to deadline_s) until no event lies after the sealer's frontier and
 * a checkpoint names the head: the chain of the harness's server is at rest.
 * Returns the head's position, or -1 at the deadline.
 */
long long audittest_wait_quiet(int deadline_s);

/* GET /api/v1/audit/verify as the harness's admin: its verdict (NULL, reported, if not 200). */
json_t *audittest_api_verify(void);

/*
 * `aidcd audit verify` on s's database with keyfile: its verdict (NULL,
 * reported, if stdout is not JSON), exit status in *rc.
 */
struct aidc_server;
json_t *audittest_cli_verify(const struct aidc_server *s, const char *keyfile, int *rc);

/* Whether a and b are equal strings (false when either is NULL). */
bool audittest_str_is(const char *a, const char *b);

/* Wait (up to wait_s, as jwt) until a signed checkpoint lies at or after chain position seq. */
void audittest_wait_checkpoint(const char *jwt, long long seq, double wait_s);

/*
 * Wake the metering worker of the harness's server and wait (up to wait_s) until
 * every closed run is metered to its end; false at the deadline.
 */
bool audittest_wait_metered(double wait_s);

/* Seconds of the monotonic clock; and a pause between two polls of a condition. */
double audittest_now(void);
/* The newest of the last 50 audit events of action whose JSON holds needle (new
 * reference), asked for again until wait_s passes (then the test fails). */
json_t *audittest_event_with(const char *action, const char *needle, double wait_s);
void audittest_nap(void);

/* Make user (password pw) an auditor and log it in: its JWT into jwt (exits on failure). */
void audittest_auditor(const char *user, const char *pw, char *jwt, size_t n);

/* GET /api/v1/audit/events/export<query> (query may be "") as jwt: 200, or the test
 * fails; the answer in *out. */
struct http_res;
void audittest_export(const char *jwt, const char *query, struct http_res *out);

/* Write len bytes of data to the file at path (made or emptied); the test fails if it cannot. */
void audittest_write_file(const char *path, const char *data, size_t len);

/* RFC 4180: the records of text (CRLF ends, "" inside quoted cells) as arrays of strings. */
json_t *audittest_csv_parse(const char *text);

/* Print what failed in set-up, stop the harness's aidcd, drop its database, exit 1. */
_Noreturn void audittest_setup_fail(const char *what);

#endif
