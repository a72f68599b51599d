/*
 * redact.h - which names are secrets, and their values replaced by
 * "[redacted]" before anything is recorded: audit details (audit/audit.c)
 * and what a backend sent (backends/backend.c). Pure, apart from the
 * database, so the backends' shared code links without it.
 */
#ifndef AIDC_AUDIT_REDACT_H
#define AIDC_AUDIT_REDACT_H

#include <jansson.h>

/*
 * Replace, in place and recursively, the value of every key that names a
 * secret (password, token, secret, authorization, cookie, credentials,
 * private key...) with "[redacted]".
 */
void redact_details(json_t *details);

/* True if an object key names a secret. */
int redact_key_is_secret(const char *key);

#endif
