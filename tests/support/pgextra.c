/* pgextra.c - PgBouncer, and a private primary with a streaming standby (see pgextra.h). */
#include "pgextra.h"
#include "harness.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <netinet/in.h>
#include <openssl/crypto.h>
#include <pwd.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define START_WAIT_S 30.0

static const char *base_dir(void)
{
    const char *b = getenv("AIDC_TEST_PGDATA_BASE");
    return b && b[0] ? b : "/tmp";
}

double pgextra_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

void pgextra_nap(void)
{
    struct timespec t = {0, 20 * 1000 * 1000};
    while (nanosleep(&t, &t) != 0 && errno == EINTR)
        ;
}

/* The cleanup of pgextra_at_exit and the process that registered it. */
static struct {
    void (*fn)(void);
    pid_t owner;
} at_exit;

static void run_at_exit(void)
{
    if (at_exit.fn && getpid() == at_exit.owner) /* a forked test: its parent cleans up */
        at_exit.fn();
}

void pgextra_at_exit(void (*fn)(void))
{
    bool registered = at_exit.fn != NULL;
    at_exit.fn = fn;
    at_exit.owner = getpid();
    if (registered)
        return;
    /* OpenSSL registers its cleanup when it first initializes more than its base
     * (no options would return early): have it do so now, so that fn, registered
     * after it, runs before it */
    if (OPENSSL_init_crypto(OPENSSL_INIT_LOAD_CONFIG, NULL) != 1 || atexit(run_at_exit) != 0) {
        fprintf(stderr, "pgextra: cannot register a cleanup at exit\n");
        exit(1);
    }
}

int pgextra_free_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0)
        return -1;
    struct sockaddr_in sa = {.sin_family = AF_INET};
    inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
    socklen_t len = sizeof sa;
    int port = -1;
    if (bind(fd, (struct sockaddr *)&sa, sizeof sa) == 0 &&
        getsockname(fd, (struct sockaddr *)&sa, &len) == 0)
        port = ntohs(sa.sin_port);
    close(fd);
    return port;
}

static void quiet(void *arg, const char *msg)
{
    (void)arg;
    (void)msg;
}

char *pgextra_value(const char *conninfo, const char *sql, int n, const char *const *params)
{
    PGconn *c = PQconnectdb(conninfo);
    char *out = NULL;
    if (PQstatus(c) != CONNECTION_OK) {
        fprintf(stderr, "pgextra: connect: %s", PQerrorMessage(c));
        PQfinish(c);
        return NULL;
    }
    PQsetNoticeProcessor(c, quiet, NULL);
    PGresult *r = PQexecParams(c, sql, n, NULL, params, NULL, NULL, 0);
    if (PQresultStatus(r) != PGRES_TUPLES_OK)
        fprintf(stderr, "pgextra: %s: %s", sql, PQresultErrorMessage(r));
    else if (PQntuples(r) > 0 && PQnfields(r) > 0 && !PQgetisnull(r, 0, 0))
        out = strdup(PQgetvalue(r, 0, 0));
    PQclear(r);
    PQfinish(c);
    return out;
}

/* Run a shell command (printf-style); its output is shown only when it fails. 0 or -1. */
__attribute__((format(printf, 1, 2))) static int sh(const char *f, ...)
{
    char out[] = "/tmp/aidc-pgextra-XXXXXX";
    int fd = mkstemp(out);
    if (fd < 0)
        return -1;
    close(fd);
    char cmd[2048];
    va_list ap;
    va_start(ap, f);
    int len = vsnprintf(cmd, sizeof cmd, f, ap);
    va_end(ap);
    char full[2400];
    int flen = snprintf(full, sizeof full, "cd / && { %s; } >%s 2>&1", cmd, out);
    int rc = -1;
    if (len > 0 && (size_t)len < sizeof cmd && flen > 0 && (size_t)flen < sizeof full) {
        int st = system(full);
        rc = st != -1 && WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : -1;
    }
    if (rc != 0) {
        FILE *fp = fopen(out, "r");
        fprintf(stderr, "pgextra: failed: %s\n", cmd);
        char line[512];
        while (fp && fgets(line, sizeof line, fp))
            fprintf(stderr, "  %s", line);
        if (fp)
            fclose(fp);
    }
    unlink(out);
    return rc;
}

/* "runuser -u postgres -- " when we are root (PostgreSQL refuses root), else "". */
static const char *as_pg(void)
{
    return geteuid() == 0 ? "runuser -u postgres -- " : "";
}

void pgextra_url_with_port(const char *url, const char *host, int port, char *out, size_t n)
{
    const char *auth = strstr(url, "://");
    auth = auth ? auth + 3 : url;
    const char *end = auth + strcspn(auth, "/?");
    const char *at = NULL;
    for (const char *p = auth; p < end; p++)
        if (*p == '@')
            at = p;
    const char *hostpart = at ? at + 1 : auth;
    snprintf(out, n, "%.*s%s:%d%s", (int)(hostpart - url), url, host, port, end);
}

/* ---- PgBouncer ---------------------------------------------------------------------- */

/* Percent-encode s into out (RFC 3986 unreserved characters stay). */
static void pct(const char *s, char *out, size_t n)
{
    size_t o = 0;
    for (const unsigned char *p = (const unsigned char *)s; *p && o + 4 < n; p++) {
        if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
            strchr("-._~", *p))
            out[o++] = (char)*p;
        else
            o += (size_t)snprintf(out + o, n - o, "%%%02X", *p);
    }
    out[o] = '\0';
}

/* s as a quoted word of PgBouncer's user list (a quote doubled). */
static void quoted(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"')
            fputc('"', f);
        fputc(*s, f);
    }
    fputc('"', f);
}

struct conn_parts {
    char user[256], password[256], host[256], port[256], dbname[256];
};

static int parse_url(const char *url, struct conn_parts *cp)
{
    char *err = NULL;
    PQconninfoOption *opts = PQconninfoParse(url, &err);
    if (!opts) {
        fprintf(stderr, "pgextra: cannot parse the database URL: %s\n", err ? err : "?");
        PQfreemem(err);
        return -1;
    }
    memset(cp, 0, sizeof *cp);
    snprintf(cp->host, sizeof cp->host, "127.0.0.1");
    snprintf(cp->port, sizeof cp->port, "5432");
    for (PQconninfoOption *o = opts; o->keyword; o++) {
        if (!o->val || !o->val[0])
            continue;
        char *dst = strcmp(o->keyword, "user") == 0       ? cp->user
                    : strcmp(o->keyword, "password") == 0 ? cp->password
                    : strcmp(o->keyword, "host") == 0     ? cp->host
                    : strcmp(o->keyword, "port") == 0     ? cp->port
                    : strcmp(o->keyword, "dbname") == 0   ? cp->dbname
                                                          : NULL;
        if (dst) /* all fields have the same size */
            snprintf(dst, sizeof cp->user, "%s", o->val);
    }
    PQconninfoFree(opts);
    if (!cp->user[0] || !cp->password[0] || !cp->dbname[0]) {
        fprintf(stderr, "pgextra: the database URL needs a user, a password and a database\n");
        return -1;
    }
    return 0;
}

static int write_bouncer_files(struct pgextra_bouncer *b, const struct conn_parts *cp,
                               int pool_size)
{
    char path[256];
    snprintf(path, sizeof path, "%s/userlist.txt", b->dir);
    FILE *f = fopen(path, "w");
    if (!f)
        return -1;
    quoted(f, cp->user);
    fputc(' ', f);
    quoted(f, cp->password);
    fputc('\n', f);
    if (fclose(f) != 0)
        return -1;
    snprintf(path, sizeof path, "%s/pgbouncer.ini", b->dir);
    f = fopen(path, "w");
    if (!f)
        return -1;
    fprintf(f,
            "[databases]\n"
            "%s = host=%s port=%s dbname=%s\n"
            "[pgbouncer]\n"
            "listen_addr = 127.0.0.1\n"
            "listen_port = %d\n"
            "unix_socket_dir =\n"
            "auth_type = scram-sha-256\n"
            "auth_file = %s/userlist.txt\n"
            "admin_users = %s\n"
            "pool_mode = transaction\n"
            "default_pool_size = %d\n"
            "min_pool_size = 0\n"
            "reserve_pool_size = 0\n"
            "max_client_conn = 200\n"
            /* in transaction mode no reset runs between clients anyway; say so */
            "server_reset_query =\n"
            "server_reset_query_always = 0\n"
            "logfile = %s\n"
            "pidfile =\n",
            cp->dbname, cp->host, cp->port, cp->dbname, b->port, b->dir, cp->user, pool_size,
            b->log_path);
    return fclose(f) == 0 ? 0 : -1;
}

/* The child: become postgres if we are root, die with the parent, run PgBouncer. */
static _Noreturn void exec_bouncer(const struct pgextra_bouncer *b, pid_t parent)
{
    int null = open("/dev/null", O_RDWR);
    if (null >= 0) {
        dup2(null, 0);
        dup2(null, 1);
        dup2(null, 2);
        close(null);
    }
    if (geteuid() == 0) {
        const struct passwd *pw = getpwnam("postgres");
        if (!pw || initgroups(pw->pw_name, pw->pw_gid) != 0 || setgid(pw->pw_gid) != 0 ||
            setuid(pw->pw_uid) != 0)
            _exit(126);
    }
    /* after setuid, which clears it; a test killed by a timeout leaves no PgBouncer */
    if (prctl(PR_SET_PDEATHSIG, SIGTERM) != 0 || getppid() != parent)
        _exit(1);
    char ini[256];
    snprintf(ini, sizeof ini, "%s/pgbouncer.ini", b->dir);
    execl(PGEXTRA_BOUNCER_BIN, "pgbouncer", "-q", ini, (char *)NULL);
    _exit(127);
}

static int own_dir_for_postgres(const char *dir)
{
    if (geteuid() != 0)
        return 0;
    const struct passwd *pw = getpwnam("postgres");
    if (!pw) {
        fprintf(stderr, "pgextra: no OS user postgres to run as\n");
        return -1;
    }
    const char *files[] = {"", "/userlist.txt", "/pgbouncer.ini"};
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        char p[256];
        snprintf(p, sizeof p, "%s%s", dir, files[i]);
        if (chown(p, pw->pw_uid, pw->pw_gid) != 0)
            return -1;
    }
    return 0;
}

static int wait_bouncer(struct pgextra_bouncer *b, const char *user)
{
    char ping[512];
    snprintf(ping, sizeof ping,
             "host=127.0.0.1 port=%d dbname=pgbouncer user='%s' connect_timeout=2", b->port, user);
    for (double until = pgextra_now() + START_WAIT_S; pgextra_now() < until; pgextra_nap()) {
        if (PQping(ping) == PQPING_OK)
            return 0;
        int st;
        if (waitpid(b->pid, &st, WNOHANG) == b->pid) {
            fprintf(stderr, "pgextra: PgBouncer exited at start\n");
            b->pid = 0;
            return -1;
        }
    }
    fprintf(stderr, "pgextra: PgBouncer did not answer on port %d\n", b->port);
    return -1;
}

int pgextra_bouncer_start(struct pgextra_bouncer *b, const char *server_url, int pool_size)
{
    memset(b, 0, sizeof *b);
    struct conn_parts cp;
    if (parse_url(server_url, &cp) != 0)
        return -1;
    b->port = pgextra_free_port();
    snprintf(b->dir, sizeof b->dir, "%s/aidc-pgbouncer-%d", base_dir(), (int)getpid());
    snprintf(b->log_path, sizeof b->log_path, "%s/pgbouncer.log", b->dir);
    harness_remove_tree(b->dir);
    if (b->port < 0 || mkdir(b->dir, 0700) != 0 || write_bouncer_files(b, &cp, pool_size) != 0 ||
        own_dir_for_postgres(b->dir) != 0) {
        fprintf(stderr, "pgextra: cannot set PgBouncer up in %s: %s\n", b->dir, strerror(errno));
        harness_remove_tree(b->dir);
        b->dir[0] = '\0';
        return -1;
    }
    pid_t parent = getpid();
    b->pid = fork();
    if (b->pid < 0) {
        b->pid = 0;
        pgextra_bouncer_stop(b, false);
        return -1;
    }
    if (b->pid == 0)
        exec_bouncer(b, parent);
    if (wait_bouncer(b, cp.user) != 0) {
        pgextra_bouncer_stop(b, true);
        return -1;
    }
    char user[400], pw[800], db[400];
    pct(cp.user, user, sizeof user);
    pct(cp.password, pw, sizeof pw);
    pct(cp.dbname, db, sizeof db);
    int n = snprintf(b->url, sizeof b->url, "postgresql://%s:%s@127.0.0.1:%d/%s", user, pw, b->port,
                     db);
    int m = snprintf(b->admin_url, sizeof b->admin_url, "postgresql://%s:%s@127.0.0.1:%d/pgbouncer",
                     user, pw, b->port);
    if (n < 0 || (size_t)n >= sizeof b->url || m < 0 || (size_t)m >= sizeof b->admin_url) {
        fprintf(stderr, "pgextra: the URL through PgBouncer is too long\n");
        pgextra_bouncer_stop(b, false);
        return -1;
    }
    return 0;
}

void pgextra_bouncer_stop(struct pgextra_bouncer *b, bool show_log)
{
    if (b->pid > 0) {
        kill(b->pid, SIGTERM);
        while (waitpid(b->pid, NULL, 0) < 0 && errno == EINTR)
            ;
        b->pid = 0;
    }
    if (show_log && b->log_path[0]) {
        FILE *f = fopen(b->log_path, "r");
        char line[1024];
        fprintf(stderr, "pgextra: PgBouncer's log (%s):\n", b->log_path);
        while (f && fgets(line, sizeof line, f))
            fprintf(stderr, "  %s", line);
        if (f)
            fclose(f);
    }
    harness_remove_tree(b->dir);
    b->dir[0] = '\0';
    b->log_path[0] = '\0';
}

/* ---- private clusters --------------------------------------------------------------- */

/* The value of KEY='value' in text (pg-up.sh's output) into out; 0 or -1. */
static int env_value(const char *text, const char *key, char *out, size_t n)
{
    char pat[64];
    snprintf(pat, sizeof pat, "%s='", key);
    for (const char *p = text; (p = strstr(p, pat)) != NULL; p++) {
        if (p != text && p[-1] != '\n')
            continue;
        p += strlen(pat);
        snprintf(out, n, "%.*s", (int)strcspn(p, "'"), p);
        return 0;
    }
    fprintf(stderr, "pgextra: no %s in pg-up.sh's output\n", key);
    return -1;
}

static char *read_all(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return NULL;
    char *buf = calloc(1, 8192);
    size_t len = buf ? fread(buf, 1, 8191, f) : 0;
    (void)len;
    fclose(f);
    return buf;
}

/* Reload the configuration and wait until new sessions run under it. */
static int reload(const struct pgextra_pg *p)
{
    char *t0 = pgextra_value(p->super, "SELECT pg_conf_load_time()::text", 0, NULL);
    char *ok = t0 ? pgextra_value(p->super, "SELECT pg_reload_conf()::text", 0, NULL) : NULL;
    int rc = -1;
    const char *params[1] = {t0};
    /* new backends are forked from the postmaster: they carry its last load time */
    for (double until = pgextra_now() + START_WAIT_S; ok && pgextra_now() < until; pgextra_nap()) {
        char *v =
            pgextra_value(p->super, "SELECT pg_conf_load_time() > $1::timestamptz", 1, params);
        bool done = v && strcmp(v, "t") == 0;
        free(v);
        if (done) {
            rc = 0;
            break;
        }
    }
    if (rc != 0)
        fprintf(stderr, "pgextra: %s did not reload its configuration\n", p->dir);
    free(t0);
    free(ok);
    return rc;
}

int pgextra_primary_up(struct pgextra_pg *p, const char *name)
{
    memset(p, 0, sizeof *p);
    p->port = pgextra_free_port();
    snprintf(p->dir, sizeof p->dir, "%s/aidc-%s-%d", base_dir(), name, (int)getpid());
    if (p->port < 0 ||
        sh("PGDATA_DIR='%s' PGPORT=%d '%s/deploy/pg-up.sh'", p->dir, p->port, AIDC_SOURCE_DIR))
        return -1;
    char path[192];
    snprintf(path, sizeof path, "%s/env", p->dir);
    char *env = read_all(path);
    int rc = env && env_value(env, "DATABASE_URL", p->app_url, sizeof p->app_url) == 0 &&
                     env_value(env, "DATABASE_URL_OWNER", p->owner_url, sizeof p->owner_url) == 0
                 ? 0
                 : -1;
    free(env);
    /* the superuser has a password (pg-up.sh trusts nobody), kept beside the cluster */
    snprintf(path, sizeof path, "%s/superuser-password", p->dir);
    char *pw = read_all(path);
    if (!pw)
        rc = -1;
    else
        pw[strcspn(pw, "\n")] = '\0';
    snprintf(p->super_pw, sizeof p->super_pw, "%s", pw ? pw : "");
    free(pw);
    snprintf(p->super, sizeof p->super, "host=%s port=%d user=postgres dbname=aidc password=%s",
             p->dir, p->port, p->super_pw);
    /* pg_basebackup streams over the unix socket as the superuser, with its password */
    snprintf(path, sizeof path, "%s/pg_hba.conf", p->dir);
    FILE *f = rc == 0 ? fopen(path, "a") : NULL;
    if (!f || fputs("local   replication postgres                 scram-sha-256\n", f) < 0)
        rc = -1;
    if (f && fclose(f) != 0)
        rc = -1;
    return rc == 0 ? reload(p) : -1;
}

int pgextra_standby_up(const struct pgextra_pg *primary, struct pgextra_pg *s, const char *name)
{
    memset(s, 0, sizeof *s);
    s->port = pgextra_free_port();
    snprintf(s->dir, sizeof s->dir, "%s/aidc-%s-%d", base_dir(), name, (int)getpid());
    harness_remove_tree(s->dir);
    /* -R: standby.signal and primary_conninfo; the port and socket directory of its own
     * come from the command line, over the copied aidc.conf */
    /* pg-up.sh wrote its env file into the data directory as us: the backup reads it */
    if (geteuid() == 0 && sh("chown -R postgres: '%s'", primary->dir))
        return -1;
    if (s->port < 0 ||
        sh("%senv PGPASSWORD='%s' %s/pg_basebackup -h '%s' -p %d -U postgres -D '%s' -R -X stream "
           "-c fast -N",
           as_pg(), primary->super_pw, PGEXTRA_PGBIN, primary->dir, primary->port, s->dir) ||
        sh("%s%s/pg_ctl start -D '%s' -l '%s/server.log' -w -t 60 -o '-p %d -k %s'", as_pg(),
           PGEXTRA_PGBIN, s->dir, s->dir, s->port, s->dir))
        return -1;
    pgextra_url_with_port(primary->app_url, "127.0.0.1", s->port, s->app_url, sizeof s->app_url);
    pgextra_url_with_port(primary->owner_url, "127.0.0.1", s->port, s->owner_url,
                          sizeof s->owner_url);
    snprintf(s->super_pw, sizeof s->super_pw, "%s", primary->super_pw);
    snprintf(s->super, sizeof s->super, "host=%s port=%d user=postgres dbname=aidc password=%s",
             s->dir, s->port, s->super_pw);
    for (double until = pgextra_now() + START_WAIT_S; pgextra_now() < until; pgextra_nap()) {
        char *v = pgextra_value(s->app_url, "SELECT pg_is_in_recovery()::text", 0, NULL);
        bool up = v && strcmp(v, "true") == 0;
        free(v);
        if (up)
            return 0;
    }
    fprintf(stderr, "pgextra: the standby in %s does not answer as a standby\n", s->dir);
    return -1;
}

int pgextra_pg_stop(const struct pgextra_pg *p)
{
    return sh("%s%s/pg_ctl stop -D '%s' -m fast -w -t 60", as_pg(), PGEXTRA_PGBIN, p->dir);
}

void pgextra_pg_remove(struct pgextra_pg *p)
{
    if (!p->dir[0])
        return;
    (void)sh("PGDATA_DIR='%s' '%s/deploy/pg-down.sh' --purge", p->dir, AIDC_SOURCE_DIR);
    p->dir[0] = '\0';
}

bool pgextra_wait_replayed(const struct pgextra_pg *primary, const struct pgextra_pg *standby,
                           double wait_s)
{
    char *lsn = pgextra_value(primary->super, "SELECT pg_current_wal_lsn()::text", 0, NULL);
    if (!lsn)
        return false;
    const char *params[1] = {lsn};
    bool done = false;
    for (double until = pgextra_now() + wait_s; !done; pgextra_nap()) {
        char *v = pgextra_value(standby->super,
                                "SELECT (pg_last_wal_replay_lsn() >= $1::pg_lsn)::text", 1, params);
        done = v && strcmp(v, "true") == 0;
        free(v);
        if (!done && pgextra_now() > until) {
            fprintf(stderr, "pgextra: the standby did not replay up to %s in %.0f s\n", lsn,
                    wait_s);
            break;
        }
    }
    free(lsn);
    return done;
}

bool pgextra_wait_db_idle(const char *conninfo, const char *dbname, double wait_s)
{
    const char *params[1] = {dbname};
    for (double until = pgextra_now() + wait_s;; pgextra_nap()) {
        char *n = pgextra_value(conninfo,
                                "SELECT count(*) FROM pg_stat_activity WHERE datname = $1"
                                " AND pid <> pg_backend_pid()",
                                1, params);
        bool idle = n && strcmp(n, "0") == 0;
        free(n);
        if (idle)
            return true;
        if (pgextra_now() > until)
            return false;
    }
}
