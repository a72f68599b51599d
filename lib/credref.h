/*
 * credref.h - where a cluster's or registry's secret lives: a
 * credentials_ref is "file:/path" (read at each use, so a rotated file
 * takes effect without a restart) or "env:NAME" (aidcd's environment). The
 * secret itself is never stored in the database. A file follows
 * lib/secfile.h's rule (mode 600 or 400, owned by aidcd's user or root):
 * one others may read is refused at each use (AIDC_EFORBIDDEN).
 */
#ifndef AIDC_CREDREF_H
#define AIDC_CREDREF_H

#include <stdbool.h>
#include <stddef.h>

#define CREDREF_MAX 8192 /* bytes of a secret */

struct config;

/*
 * Remember aidcd's own secrets (its settings, key files, data directory), so
 * that no credentials_ref can name them: a platform admin registering a
 * cluster or registry at an endpoint of their own with "env:AIDC_DATABASE_URL"
 * would otherwise be sent the database password. Before that (unit tests),
 * only the form is checked.
 */
void credref_init(const struct config *cfg);
/*
 * aidcd's own secret files outside its data directory (key files, config
 * file, PGPASSFILE) into out, at most n; their number. Empty before
 * credref_init. The strings are the configuration's and the environment's.
 */
size_t credref_own_paths(const char **out, size_t n);
/* Whether ref has one of the two forms and names none of aidcd's own secrets. */
bool credref_valid(const char *ref);
/*
 * The secret ref names, byte for byte, into out (*len bytes, then a NUL; a
 * key file may hold any byte). 0, or an aidc_err with a message in err
 * that names the file or variable but never shows the secret.
 */
int credref_read(const char *ref, unsigned char *out, size_t n, size_t *len, char *err,
                 size_t errsz);

/*
 * The secret of ref as one line "user:password" (malloc'd; the caller wipes
 * and frees it), the form registries' credentials take; NULL with *e and err
 * when it cannot be read or has another form.
 */
char *credref_userpwd(const char *ref, int *e, char *err, size_t errsz);
/*
 * The secret of ref as one line of text, its line end removed (malloc'd; the
 * caller wipes and frees it): a client secret, a service account's password.
 * NULL with *e and err when it cannot be read, is empty or is several lines.
 */
char *credref_line(const char *ref, int *e, char *err, size_t errsz);

#endif
