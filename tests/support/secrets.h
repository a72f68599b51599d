/*
 * secrets.h - the run-wide record of every secret the tests use, and the
 * tree that keeps every log of the run (docs/secrets.md).
 *
 * Each test program appends the secrets it uses (passwords, session JWTs,
 * API and agent tokens, key file contents, database passwords, cluster and
 * registry credentials) to one file, and copies the logs it wrote (aidcd's,
 * the agent's, the CLI's) into one tree before removing its data directory.
 * The last test of the run, secrets/logs_clean (tests/secrets/logs_clean.c),
 * looks for every recorded secret, in its usual encodings, in every log.
 *
 * Where: AIDC_TEST_SECRETS_FILE and AIDC_TEST_LOG_ROOT when set, else
 * BUILD/test-secrets/secrets.txt and BUILD/test-logs (AIDC_TEST_RUN_SECRETS
 * and AIDC_TEST_RUN_LOGS, compile definitions of tests/CMakeLists.txt).
 *
 * Every function is safe in any process of a test (forked children, several
 * threads) and never fails a test: recording is best effort, one O_APPEND
 * write() per secret, so parallel test programs never interleave lines.
 */
#ifndef AIDC_TEST_SECRETS_H
#define AIDC_TEST_SECRETS_H

#include <jansson.h>
#include <stddef.h>

/* Shorter secrets are not recorded: too likely to occur in a log by chance. */
#define SECRETS_MIN_LEN 8

/* Record a text secret (no-op when shorter than SECRETS_MIN_LEN or NULL). */
void secrets_note(const char *s);
/* Record n bytes of a binary secret (looked for as hex and base64). */
void secrets_note_bytes(const void *p, size_t n);
/* Record what a key or token file holds (each line of a PEM body; else its text or bytes). */
void secrets_note_file(const char *path);
/* Record the password of a URL ("scheme://user:password@host...") or conninfo "password=". */
void secrets_note_url(const char *url);
/*
 * Record the secret an environment entry carries, judged by its name:
 * *PASSWORD*, *SECRET*, *TOKEN*, *JWT*, *CRED*, *KEY* (a value that names a
 * file: the file's contents) and *_URL (its password).
 */
void secrets_note_env(const char *name, const char *value);
/* Record "NAME=value" entries (NULL-terminated list, may be NULL). */
void secrets_note_env_list(const char *const *env);
/* Record this process's AIDC_* environment (run.sh's database URLs, Slurm JWT, ...), once. */
void secrets_note_environ(void);
/*
 * Record the values of secret-named members anywhere in j: password,
 * token, access_token, secret, ... and what a credentials_ref names.
 */
void secrets_note_json(const json_t *j);
/* Record the credential of an "Authorization: ..." or "Cookie: ..." header line. */
void secrets_note_header(const char *line);

/*
 * Copy every log file below dir (*.log, *.log.*, *.out, *.err, stdout,
 * stderr) into the log tree, under a directory named after dir's path.
 * Called before a test removes a data directory, and when it keeps one.
 */
void secrets_archive_logs(const char *dir);
/* The log tree (created when missing). */
const char *secrets_log_root(void);

#endif
