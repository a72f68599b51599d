/*
 * pgextra.h - PostgreSQL set-ups beyond the shared test server, for the
 * tests of aidcd's database modes: a real PgBouncer (pool_mode=transaction)
 * in front of a database, and a private primary with a streaming standby
 * (deploy/pg-up.sh, pg_basebackup -R, pg_ctl).
 *
 * Everything runs as the `postgres` OS user when the test runs as root
 * (PgBouncer and PostgreSQL refuse root), with its files in directories of
 * its own under AIDC_TEST_PGDATA_BASE (default /tmp). Functions print why
 * they failed to stderr.
 */
#ifndef AIDC_TEST_PGEXTRA_H
#define AIDC_TEST_PGEXTRA_H

#include <libpq-fe.h>
#include <stdbool.h>
#include <sys/types.h>

#define PGEXTRA_BOUNCER_BIN "/usr/sbin/pgbouncer"
#define PGEXTRA_PGBIN       "/usr/lib/postgresql/15/bin"

/* A free TCP port on 127.0.0.1 (-1 if none): free now, not reserved. */
int pgextra_free_port(void);

/* url with its host and port replaced (userinfo, database and query kept). */
void pgextra_url_with_port(const char *url, const char *host, int port, char *out, size_t n);

/* ---- PgBouncer ------------------------------------------------------------------ */

struct pgextra_bouncer {
    pid_t pid; /* 0 when not running */
    int port;
    char dir[128]; /* its configuration, user list and log */
    char log_path[192];
    char url[512];       /* the server_url's role and database, through PgBouncer */
    char admin_url[512]; /* its admin console (SHOW SERVERS ...) as that role */
};

/*
 * Start PgBouncer on a free loopback port in front of server_url (a role's
 * direct URL with password and database): pool_mode=transaction,
 * default_pool_size pool_size, SCRAM authentication of clients from a user
 * list holding that role, the role also an admin of the console, no server
 * reset query (what aidcd leaves on a server connection stays there, for the
 * test to see). Waits until it answers. 0, or -1 (nothing left running).
 * It gets SIGTERM if the process that started it dies.
 */
int pgextra_bouncer_start(struct pgextra_bouncer *b, const char *server_url, int pool_size);
/* Stop it (SIGTERM, wait) and remove its directory; the log goes to stderr first
 * when show_log. Safe on a stopped or never started one. */
void pgextra_bouncer_stop(struct pgextra_bouncer *b, bool show_log);

/* ---- private clusters ------------------------------------------------------------- */

struct pgextra_pg {
    char dir[128]; /* data directory ("" when none) */
    int port;
    char app_url[512];   /* aidc_app over TCP, database aidc */
    char owner_url[512]; /* aidc_owner over TCP, database aidc */
    char super[320];     /* the superuser over the unix socket, database aidc (conninfo) */
    char super_pw[64];   /* its password (pg-up.sh's superuser-password) */
};

/*
 * A primary of its own: deploy/pg-up.sh on a free port in
 * $AIDC_TEST_PGDATA_BASE/aidc-<name>-<pid>, with `local replication postgres
 * trust` in pg_hba.conf (in force when this returns). 0 or -1.
 */
int pgextra_primary_up(struct pgextra_pg *p, const char *name);
/*
 * A hot standby of primary streaming from it: pg_basebackup -R into
 * $AIDC_TEST_PGDATA_BASE/aidc-<name>-<pid>, started on a free port with a
 * socket directory of its own; returns once it answers queries. Its URLs are
 * the primary's with its port. 0 or -1.
 */
int pgextra_standby_up(const struct pgextra_pg *primary, struct pgextra_pg *s, const char *name);
/* pg_ctl stop -m fast; 0 or -1. */
int pgextra_pg_stop(const struct pgextra_pg *p);
/* Stop it if it runs and delete its data directory (deploy/pg-down.sh --purge). */
void pgextra_pg_remove(struct pgextra_pg *p);
/*
 * Wait (up to wait_s) until standby has replayed the primary's WAL up to the
 * primary's current write position as read now. False at the deadline.
 */
bool pgextra_wait_replayed(const struct pgextra_pg *primary, const struct pgextra_pg *standby,
                           double wait_s);

/* ---- small things ----------------------------------------------------------------- */

/*
 * Wait (up to wait_s) until no session is connected to database dbname, as
 * seen over conninfo: DROP DATABASE ... WITH (FORCE) by a role that may not
 * end other roles' sessions fails while a closed client's backend lingers.
 */
bool pgextra_wait_db_idle(const char *conninfo, const char *dbname, double wait_s);

/*
 * atexit(fn), run before OpenSSL's own exit handler: libpq needs OpenSSL for
 * SCRAM, and a connection made after OpenSSL cleaned up crashes. fn runs only
 * in the process that registered it (not in forked Check tests), after the
 * harness has stopped the aidcd it left running; one fn per program.
 */
void pgextra_at_exit(void (*fn)(void));

/* The first value of the first row of sql over conninfo (malloc'd), or NULL (printed). */
char *pgextra_value(const char *conninfo, const char *sql, int n, const char *const *params);
/* Seconds of the monotonic clock. */
double pgextra_now(void);
/* A short pause between two looks at a polled condition. */
void pgextra_nap(void);

#endif
