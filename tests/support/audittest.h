/*
 * audittest.h - what the audit tests share: aidcd's command line with a
 * deadline, the signing key of a test, one SQL value, and a set-up failure
 * that leaves no server or database behind.
 */
#ifndef AIDC_TEST_AUDITTEST_H
#define AIDC_TEST_AUDITTEST_H

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
void audittest_key(const char *name, char *dir, size_t dirsz, char *key, size_t keysz,
                   char *pub, size_t pubsz, char *env_key, size_t envsz);
/* Remove a directory made by audittest_key. */
void audittest_key_remove(const char *dir);

/* The first value of the first row of sql over url (malloc'd), or NULL. */
char *audittest_sql_value(const char *url, const char *sql, int n, const char *const *params);

/* Print what failed in set-up, stop the harness's aidcd, drop its database, exit 1. */
_Noreturn void audittest_setup_fail(const char *what);

#endif
