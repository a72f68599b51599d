/*
 * migrate.h - schema migrations and the start-up checks of the database.
 *
 * Migrations are the numbered SQL files of migrations/, compiled into the
 * binary. Each is applied once, in order, in its own transaction, with its
 * SHA-256 recorded in aidc_schema_migrations; an applied migration whose text
 * changed, or a database newer than the binary, is refused. Concurrent
 * migrators (several replicas with AIDC_AUTO_MIGRATE=1) serialise on an
 * advisory lock.
 */
#ifndef AIDC_MIGRATE_H
#define AIDC_MIGRATE_H

#include <stdbool.h>
#include <stddef.h>

/* Highest migration version compiled into this binary. */
int migrate_latest_version(void);

/*
 * Apply pending migrations over owner_url, record audit_retention_days as
 * the shortest retention the application role may ask for, then grant the
 * application role (the role app_url logs in as) its privileges. Progress is
 * logged; on failure returns an error with a one-line message in err.
 */
int migrate_run(const char *owner_url, const char *app_url, int audit_retention_days, char *err,
                size_t errsz);

/*
 * Check, as the application role, that the schema is exactly this binary's
 * (applied, unedited, not newer) and that the role cannot bypass row-level
 * security (not superuser, no BYPASSRLS, owns no aidc table). *pending is set
 * when the only problem is migrations not yet applied.
 */
int migrate_check(const char *app_url, bool *pending, char *err, size_t errsz);

/*
 * Wait until the PostgreSQL server of url answers at all (PQping: it may
 * still refuse this login; the checks after this one say so), at most
 * seconds, logging while it waits. 0 once it answers (or url cannot be
 * parsed: the connect after this names the mistake); AIDC_EUNAVAIL when the
 * time is up. what names the setting in the log.
 */
int migrate_wait_reachable(const char *url, const char *what, int seconds);

#endif
