/*
 * secfile.h - the one rule for files that hold a secret (the session key,
 * the audit signing key, a cluster's or registry's credentials_ref file, the
 * node agent's token): a regular file, owned by the user the program runs
 * as (or root), with no permission bit for group or others (mode & 077 == 0,
 * OpenSSH's rule for private keys). A file that breaks the rule is refused
 * before a byte of it is read: a key others can read is a key others have.
 * See docs/secrets.md. Depends on nothing but libc (the agent links it too).
 */
#ifndef AIDC_SECFILE_H
#define AIDC_SECFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/stat.h>

/* Permission bits a secret file must not have: group's and others'. */
#define SECFILE_FORBIDDEN_MODE 077

/*
 * Whether st (of the file at path, for messages) may hold a secret. When not,
 * err gets one line naming path and what is wrong - its mode in octal, or its
 * owner - and the fix ("chmod 600 PATH").
 */
bool secfile_ok(const struct stat *st, const char *path, char *err, size_t errsz);
/*
 * Open path read-only and check it with secfile_ok on the open descriptor
 * (no window between the check and the read). The descriptor, or -1 with
 * err set: errno EPERM when the rule refused the file, EISDIR or EINVAL when
 * it is no regular file, open's errno when it cannot be opened.
 */
int secfile_open(const char *path, char *err, size_t errsz);

#endif
