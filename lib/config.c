/*
 * config.c - the typed settings table. Each row names its environment
 * variable, type, default and bounds; config_load walks the table once.
 */
#include "config.h"

#include "log.h"
#include "netaddr.h"
#include "xalloc.h"

#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

enum ctype { T_STRING, T_INT, T_LONG, T_BOOL, T_LOGLEVEL, T_COOKIE, T_POOLMODE, T_PWLOGIN };

struct setting {
    const char *env;
    enum ctype type;
    size_t offset;
    const char *def;
    long min, max;
    const char *help;
};

#define OFF(f) offsetof(struct config, f)

static const struct setting settings[] = {
    {"AIDC_DATABASE_URL", T_STRING, OFF(database_url), "", 0, 0,
     "PostgreSQL URL of the application role (no BYPASSRLS, owns no table)"},
    {"AIDC_MIGRATE_DATABASE_URL", T_STRING, OFF(migrate_database_url), "", 0, 0,
     "PostgreSQL URL of the owner role that runs migrations (default: AIDC_DATABASE_URL, or "
     "AIDC_WORKER_DATABASE_URL behind a transaction pooler)"},
    {"AIDC_WORKER_DATABASE_URL", T_STRING, OFF(worker_database_url), "", 0, 0,
     "direct (session) URL for the background workers, which LISTEN and hold advisory locks "
     "(default: AIDC_DATABASE_URL; required when that is a transaction pooler)"},
    {"AIDC_READ_DATABASE_URL", T_STRING, OFF(read_database_url), "", 0, 0,
     "URL of a streaming replica for reports and audit searches (default: none, the primary)"},
    {"AIDC_DB_POOL_MODE", T_POOLMODE, OFF(db_txpool), "session", 0, 0,
     "session, or transaction when AIDC_DATABASE_URL is a transaction pooler (PgBouncer "
     "pool_mode=transaction): no named prepared statements, no session settings"},
    {"AIDC_LISTEN", T_STRING, OFF(listen), "127.0.0.1:8080", 0, 0,
     "address:port to serve HTTP on ([v6addr]:port for IPv6; port 0 picks a free one)"},
    {"AIDC_THREADS", T_INT, OFF(threads), "0", 0, CONFIG_MAX_THREADS,
     "HTTP worker threads, each with its own database connection (0 = number of CPUs)"},
    {"AIDC_WRITE_THREADS", T_INT, OFF(write_threads), "-1", -1, 1024,
     "threads that serve writes (POST, PUT, PATCH, DELETE) while they wait for their commit,"
     " so that the HTTP threads go on with other requests; each with its own database"
     " connection, opened at its first write (-1 = 4 per HTTP thread, at most 64; 0 = writes"
     " run on the HTTP threads)"},
    {"AIDC_DATA_DIR", T_STRING, OFF(data_dir), "aidc-data", 0, 0,
     "directory for aidcd's own files (JWT key, job files); created if missing"},
    {"AIDC_STORAGE_ROOT", T_STRING, OFF(storage_root), "", 0, 0,
     "directory of the tenants' storage spaces (projects, homes, datasets) on this host; a "
     "Slurm cluster's shared file system mounted here too (default <data dir>/storage)"},
    {"AIDC_STORAGE_UID_FIRST", T_LONG, OFF(storage_uid_first), "3000000", 1000, 4000000000L,
     "a tenant's files belong to this uid + the tenant's number (aidcd as root; keep it "
     "equal to the local clusters' options.uid_range.first)"},
    {"AIDC_FILES_MAX_UPLOAD_BYTES", T_LONG, OFF(files_max_upload_bytes), "107374182400", 1024,
     4611686018427387904L, "largest file one upload may write (larger: 413)"},
    {"AIDC_FILES_LIST_MAX", T_INT, OFF(files_list_max), "1000", 10, 100000,
     "most entries of a directory listing page (?limit)"},
    {"AIDC_STORAGE_SCAN_SECONDS", T_INT, OFF(storage_scan_seconds), "600", 1, 86400,
     "how often the storage spaces' usage is measured (metering and quota reports)"},
    {"AIDC_STORAGE_SCAN_MAX_ENTRIES", T_LONG, OFF(storage_scan_max_entries), "10000000", 1000,
     1000000000000L, "most files and directories one measurement of a space walks"},
    {"AIDC_SESSIONS_LISTEN", T_STRING, OFF(sessions_listen), "", 0, 0,
     "address:port of the sessions relay, the origin interactive sessions are served from "
     "(default: AIDC_LISTEN's address, its port + 1; \"off\": no sessions)"},
    {"AIDC_SESSIONS_URL", T_STRING, OFF(sessions_url), "", 0, 0,
     "the sessions relay's public origin (http://127.0.0.1:8081; behind a proxy with a host "
     "name per session, https://{id}.apps.example.org); default: http:// its address"},
    {"AIDC_SESSIONS_MAX_MINUTES", T_INT, OFF(sessions_max_minutes), "1440", 1, 525600,
     "longest an interactive session may run, extensions included"},
    {"AIDC_SESSIONS_READY_SECONDS", T_INT, OFF(sessions_ready_seconds), "300", 5, 86400,
     "how long a running session's app has to answer on its port before the session fails"},
    {"AIDC_SESSIONS_MAX_CONNECTIONS", T_INT, OFF(sessions_max_connections), "256", 4, 65536,
     "most connections the sessions relay serves at once (each is a thread)"},
    {"AIDC_SESSIONS_MAX_BODY_BYTES", T_LONG, OFF(sessions_max_body_bytes), "67108864", 1024,
     4294967296L, "largest request body the relay passes to an app (larger: 413)"},
    {"AIDC_PORTAL_DIR", T_STRING, OFF(portal_dir), "portal", 0, 0,
     "directory of the static web portal served at /"},
    {"AIDC_JWT_KEY_FILE", T_STRING, OFF(jwt_key_file), "", 0, 0,
     "HS256 key for session tokens (default <data dir>/jwt.key, generated 0600 if missing; "
     "share it between replicas)"},
    {"AIDC_JWT_TTL_SECONDS", T_INT, OFF(jwt_ttl_seconds), "28800", 300, 604800,
     "lifetime of a login session token"},
    {"AIDC_MAX_BODY_BYTES", T_LONG, OFF(max_body_bytes), "1048576", 1024, 1073741824,
     "largest request body accepted (larger: 413)"},
    {"AIDC_LOG_LEVEL", T_LOGLEVEL, OFF(log_level), "info", 0, 0, "debug, info, warn or error"},
    {"AIDC_AUTO_MIGRATE", T_BOOL, OFF(auto_migrate), "0", 0, 0,
     "apply pending migrations when `serve` starts (1/0)"},
    {"AIDC_LOGIN_MAX_FAILURES", T_INT, OFF(login_max_failures), "5", 1, 1000,
     "failed logins of one username from one client address (IPv6: its /64) within the"
     " window before that pair gets 429"},
    {"AIDC_LOGIN_MAX_FAILURES_PER_IP", T_INT, OFF(login_max_failures_per_ip), "20", 1, 100000,
     "failed logins from one client address, any usernames, within the window before 429"},
    {"AIDC_LOGIN_MAX_FAILURES_PER_USER", T_INT, OFF(login_max_failures_per_user), "100", 1, 100000,
     "failed logins of one username from all addresses within the window before it gets 429"
     " everywhere (guessing from many addresses)"},
    {"AIDC_PASSWORD_HASH_CONCURRENCY", T_INT, OFF(password_hash_concurrency), "2", 1, 256,
     "password threads: logins, password changes and users created with a password run there"
     " (scrypt, 32 MiB each at AIDC_PASSWORD_HASH_COST 15), off the HTTP threads"},
    {"AIDC_PASSWORD_HASH_COST", T_INT, OFF(password_hash_cost), "15", 10, 18,
     "log2 of scrypt's N for new password hashes: 15 is 32 MiB and tens of milliseconds;"
     " each step doubles both (18: 256 MiB per password thread). Below 15 only for tests"
     " (a warning at start); a stored hash of a lower cost is rehashed at its next login,"
     " never one of a higher"},
    {"AIDC_PASSWORD_QUEUE_LENGTH", T_INT, OFF(password_queue_length), "64", 1, 100000,
     "requests with password work waiting for a password thread; when full they get 503 with"
     " Retry-After"},
    {"AIDC_LOGIN_WINDOW_SECONDS", T_INT, OFF(login_window_seconds), "900", 10, 86400,
     "window of the failed-login throttle"},
    {"AIDC_IDEMPOTENCY_TTL_SECONDS", T_INT, OFF(idempotency_ttl_seconds), "86400", 60, 2592000,
     "how long an Idempotency-Key is remembered"},
    {"AIDC_SHUTDOWN_TIMEOUT_SECONDS", T_INT, OFF(shutdown_timeout_seconds), "30", 0, 3600,
     "on SIGTERM, how long in-flight requests may take to finish"},
    {"AIDC_COOKIE_SECURE", T_COOKIE, OFF(cookie_secure), "auto", 0, 0,
     "Secure flag on the session cookie: on, off, or auto (on unless listening on loopback)"},
    {"AIDC_DB_START_WAIT_SECONDS", T_INT, OFF(db_start_wait_seconds), "60", 0, 86400,
     "at start, how long `serve` waits for PostgreSQL to answer before it exits 1"},
    {"AIDC_DB_STATEMENT_TIMEOUT_MS", T_INT, OFF(db_statement_timeout_ms), "30000", 100, 3600000,
     "statement_timeout of request transactions"},
    {"AIDC_HTTP_IDLE_TIMEOUT_SECONDS", T_INT, OFF(http_idle_timeout_seconds), "60", 1, 3600,
     "close a client connection idle this long"},
    {"AIDC_MAX_CONNECTIONS", T_INT, OFF(max_connections), "1000", 4, 60000,
     "most simultaneous client connections"},
    {"AIDC_MAX_CONNECTIONS_PER_ADDRESS", T_INT, OFF(max_connections_per_address), "128", 0, 60000,
     "most simultaneous connections from one client address (IPv6: one /64; trusted proxies "
     "exempt; 0: no limit)"},
    {"AIDC_MAX_HEADER_BYTES", T_INT, OFF(max_header_bytes), "32768", 4096, 1048576,
     "memory of one connection for the request line and headers (larger: 431)"},
    {"AIDC_RATE_LIMIT_PER_ADDRESS", T_INT, OFF(rate_limit_per_address), "100", 0, 1000000,
     "API requests per second from one client address, on average (over: 429 with "
     "Retry-After; 0: no limit)"},
    {"AIDC_RATE_LIMIT_ADDRESS_BURST", T_INT, OFF(rate_limit_address_burst), "1000", 1, 10000000,
     "API requests one client address may send at once above its rate"},
    {"AIDC_RATE_LIMIT_PER_TOKEN", T_INT, OFF(rate_limit_per_token), "50", 0, 1000000,
     "API requests per second with one credential (API token or login session), on average "
     "(over: 429 with Retry-After; 0: no limit)"},
    {"AIDC_RATE_LIMIT_TOKEN_BURST", T_INT, OFF(rate_limit_token_burst), "500", 1, 10000000,
     "API requests one credential may send at once above its rate"},
    {"AIDC_JSON_MAX_DEPTH", T_INT, OFF(json_max_depth), "32", 2, 1000,
     "deepest nesting of arrays and objects in a request body"},
    {"AIDC_JSON_MAX_VALUES", T_INT, OFF(json_max_values), "20000", 16, 10000000,
     "most values (elements and members) in one JSON request body or ingested record"},
    {"AIDC_TRUSTED_PROXIES", T_STRING, OFF(trusted_proxies), "", 0, 0,
     "comma-separated proxy addresses or networks (10.244.0.0/16) whose X-Forwarded-For "
     "names the client"},
    {"AIDC_WORKERS", T_BOOL, OFF(workers), "1", 0, 0,
     "run the background workers (admission, dispatcher, syncer) in this process (1/0); "
     "with several replicas each worker leads on one at a time"},
    {"AIDC_OUTBOX_LEASE_SECONDS", T_INT, OFF(outbox_lease_seconds), "120", 5, 3600,
     "a delivery to a cluster claimed by a dispatcher that died is tried again after this; "
     "longer than any backend call"},
    {"AIDC_DISPATCH_CONCURRENCY", T_INT, OFF(dispatch_concurrency), "8", 1, 64,
     "deliveries to clusters (submit, cancel, preempt) the leading dispatcher makes at once, "
     "each thread with its own database connection (1: one after the other)"},
    {"AIDC_DISPATCH_PER_CLUSTER", T_INT, OFF(dispatch_per_cluster), "8", 1, 64,
     "of those, at most this many to one cluster, so a slow cluster holds no more threads"},
    {"AIDC_PREEMPT_GRACE_SECONDS", T_INT, OFF(preempt_grace_seconds), "30", 0, 86400,
     "SIGTERM-to-SIGKILL time of a job stopped by preemption, cancel or its time limit, "
     "so it can checkpoint"},
    {"AIDC_STARVATION_SECONDS", T_INT, OFF(starvation_seconds), "3600", 0, 31536000,
     "a job blocked this long stops smaller jobs of its GPU type from passing it "
     "(0 = never)"},
    {"AIDC_ADMISSION_INTERVAL_MS", T_INT, OFF(admission_interval_ms), "10000", 20, 3600000,
     "admission runs on every submit and job end, and at least this often"},
    {"AIDC_ADMISSION_COALESCE_MS", T_INT, OFF(admission_coalesce_ms), "20", 0, 1000,
     "a pass woken this soon after the last one started waits out the rest: one pass per "
     "burst of submits (0 = a pass per wake-up)"},
    {"AIDC_SYNC_INTERVAL_MS", T_INT, OFF(sync_interval_ms), "2000", 20, 3600000,
     "how often the syncer asks the clusters what became of their jobs"},
    {"AIDC_INVENTORY_INTERVAL_SECONDS", T_INT, OFF(inventory_interval_seconds), "60", 1, 86400,
     "how often the syncer refreshes the clusters' inventory (and on POST .../sync)"},
    {"AIDC_AUDIT_KEY_FILE", T_STRING, OFF(audit_key_file), "", 0, 0,
     "key that signs audit checkpoints, kept outside the database: an Ed25519 private key "
     "(PEM; `aidcd audit keygen FILE` makes one) or a file of at least 32 random bytes "
     "(HMAC-SHA256). Empty: checkpoints are not signed (a warning at start)"},
    {"AIDC_AUDIT_CHECKPOINT_SECONDS", T_INT, OFF(audit_checkpoint_seconds), "300", 1, 86400,
     "how often the sealer signs the head of the audit chain"},
    {"AIDC_AUDIT_SEAL_GRACE_MS", T_INT, OFF(audit_seal_grace_ms), "2000", 0, 600000,
     "the sealer chains events this old, so transactions still in flight keep id order"},
    {"AIDC_AUDIT_RETENTION_DAYS", T_INT, OFF(audit_retention_days), "400", 180, 36500,
     "audit events are kept this long (whole months are dropped after it; at least 180)"},
    {"AIDC_AUDIT_INGEST_MAX_BYTES", T_LONG, OFF(audit_ingest_max_bytes), "5242880", 1024, 67108864,
     "largest body of POST /api/v1/audit/commands"},
    {"AIDC_AUDIT_INGEST_MAX_RECORDS", T_INT, OFF(audit_ingest_max_records), "10000", 1, 100000,
     "most records in one POST /api/v1/audit/commands"},
    {"AIDC_PUBLIC_URL", T_STRING, OFF(public_url), "", 0, 0,
     "the URL browsers reach aidc at (https://aidc.example.edu): single sign-on's redirect URI "
     "is <this>/api/v1/auth/oidc/<provider>/callback (default: http://<AIDC_LISTEN>)"},
    {"AIDC_PASSWORD_LOGIN", T_PWLOGIN, OFF(password_login), "all", 0, 0,
     "who may sign in with a password aidc keeps: all, or admins (platform admins only, the "
     "break-glass accounts; everyone else signs in through an identity provider)"},
    {"AIDC_APPROVAL_TTL_HOURS", T_INT, OFF(approval_ttl_hours), "72", 1, 8760,
     "a pending dual-approval request expires after this"},
    {"AIDC_APPROVAL_QUOTA_THRESHOLD", T_INT, OFF(approval_quota_threshold), "0", 0, 1000000,
     "raising a quota's guaranteed amount of a resource by more than this needs dual approval"},
    {"AIDC_ALLOCATION_DUAL_APPROVAL_GPU_HOURS", T_INT, OFF(allocation_dual_approval_gpu_hours),
     "10000", 0, 1000000000,
     "approving an allocation of more GPU-hours than this needs dual approval"},
    {"AIDC_ALLOCATION_NOTICE_DAYS", T_INT, OFF(allocation_notice_days), "14", 0, 365,
     "an approved allocation this many days or fewer before its end carries expires_in_days"},
    {"AIDC_SMTP_URL", T_STRING, OFF(smtp_url), "", 0, 0,
     "SMTP server for e-mail notifications, smtp://host:port (STARTTLS required unless on "
     "the loopback) or smtps://host:port (default: none, no e-mail)"},
    {"AIDC_SMTP_FROM", T_STRING, OFF(smtp_from), "", 0, 0,
     "sender address of notification e-mails (required with AIDC_SMTP_URL)"},
    {"AIDC_SMTP_USER", T_STRING, OFF(smtp_user), "", 0, 0,
     "user name for SMTP AUTH (default: none, no AUTH)"},
    {"AIDC_SMTP_PASSWORD_REF", T_STRING, OFF(smtp_password_ref), "", 0, 0,
     "where the SMTP password lives: file:/path (mode 600) or env:NAME"},
    {"AIDC_SMTP_CA_FILE", T_STRING, OFF(smtp_ca_file), "", 0, 0,
     "CA bundle that verifies the SMTP server's certificate (default: the system's)"},
    {"AIDC_NOTIFY_MAX_ATTEMPTS", T_INT, OFF(notify_max_attempts), "8", 1, 50,
     "attempts of one notification delivery before it is failed"},
    {"AIDC_NOTIFY_BACKOFF_SECONDS", T_INT, OFF(notify_backoff_seconds), "30", 1, 3600,
     "wait after a delivery's first failed attempt; doubled after each further one"},
    {"AIDC_NOTIFY_BACKOFF_MAX_SECONDS", T_INT, OFF(notify_backoff_max_seconds), "3600", 1, 86400,
     "longest wait between two attempts of one delivery"},
    {"AIDC_NOTIFY_TIMEOUT_SECONDS", T_INT, OFF(notify_timeout_seconds), "10", 1, 60,
     "longest one delivery attempt (webhook or e-mail) may take"},
    {"AIDC_WEBHOOK_ALLOW_LOOPBACK", T_BOOL, OFF(webhook_allow_loopback), "0", 0, 0,
     "let webhooks reach 127.0.0.1 and ::1, also over plain http (tests only; other "
     "private addresses stay refused)"},
    {"AIDC_USAGE_MAX_ROWS", T_INT, OFF(usage_max_rows), "100000", 1, 10000000,
     "most rows of one usage report (a larger one is refused: narrow it)"},
    {"AIDC_REGISTRY_SYNC_SECONDS", T_INT, OFF(registry_sync_seconds), "3600", 0, 604800,
     "each registry is synced this often (0: only when asked, POST .../sync)"},
    {"AIDC_EFFICIENCY_INTERVAL_SECONDS", T_INT, OFF(efficiency_interval_seconds), "60", 1, 86400,
     "how often a running job's GPU metrics are read from its cluster's Prometheus (and the "
     "idle-GPU pass runs)"},
    {"AIDC_IDLE_GPU_UTIL_PERCENT", T_INT, OFF(idle_gpu_util_percent), "10", 0, 100,
     "a job's GPUs under this utilization (percent) for AIDC_IDLE_GPU_SECONDS count as idle"},
    {"AIDC_IDLE_GPU_SECONDS", T_INT, OFF(idle_gpu_seconds), "1800", 2, 604800,
     "how long a job's GPUs must stay under AIDC_IDLE_GPU_UTIL_PERCENT to be reported idle"},
};

#define NSETTINGS (sizeof settings / sizeof settings[0])

/* ---- optional KEY=VALUE file ---------------------------------------------- */

struct kv {
    char *key;
    char *val;
};

struct filecfg {
    struct kv *items;
    size_t n;
};

static void filecfg_free(struct filecfg *fc)
{
    for (size_t i = 0; i < fc->n; i++) {
        free(fc->items[i].key);
        free(fc->items[i].val);
    }
    free(fc->items);
    fc->items = NULL;
    fc->n = 0;
}

static char *trim(char *s)
{
    while (*s == ' ' || *s == '\t')
        s++;
    size_t n = strlen(s);
    while (n > 0 && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\n' || s[n - 1] == '\r'))
        s[--n] = '\0';
    return s;
}

static bool filecfg_read(struct filecfg *fc, const char *path, char *err, size_t errsz)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        snprintf(err, errsz, "AIDC_CONFIG_FILE: cannot open \"%s\": %s", path, strerror(errno));
        return false;
    }
    char line[4096];
    int lineno = 0;
    bool ok = true;
    while (fgets(line, sizeof line, f)) {
        lineno++;
        char *s = trim(line);
        if (*s == '\0' || *s == '#')
            continue;
        char *eq = strchr(s, '=');
        if (!eq || strncmp(s, "AIDC_", 5) != 0) {
            snprintf(err, errsz, "AIDC_CONFIG_FILE: %s:%d: expected AIDC_NAME=value", path, lineno);
            ok = false;
            break;
        }
        *eq = '\0';
        char *val = trim(eq + 1);
        size_t vl = strlen(val);
        if (vl >= 2 &&
            ((val[0] == '"' && val[vl - 1] == '"') || (val[0] == '\'' && val[vl - 1] == '\''))) {
            val[vl - 1] = '\0';
            val++;
        }
        fc->items = xreallocarray(fc->items, fc->n + 1, sizeof *fc->items);
        fc->items[fc->n].key = xstrdup(trim(s));
        fc->items[fc->n].val = xstrdup(val);
        fc->n++;
    }
    fclose(f);
    return ok;
}

static const char *filecfg_get(const struct filecfg *fc, const char *key)
{
    const char *v = NULL;
    for (size_t i = 0; i < fc->n; i++) /* the last assignment wins, as in a shell */
        if (strcmp(fc->items[i].key, key) == 0)
            v = fc->items[i].val;
    return v;
}

static const struct setting *find_setting(const char *env)
{
    for (size_t i = 0; i < NSETTINGS; i++)
        if (strcmp(settings[i].env, env) == 0)
            return &settings[i];
    return NULL;
}

bool config_is_setting(const char *name)
{
    return find_setting(name) || strcmp(name, "AIDC_ADMIN_PASSWORD") == 0 ||
           strcmp(name, "AIDC_CONFIG_FILE") == 0;
}

/* ---- value parsing ---------------------------------------------------------- */

static bool parse_long(const char *s, long *out)
{
    if (!((*s >= '0' && *s <= '9') || (*s == '-' && s[1] >= '0' && s[1] <= '9')))
        return false; /* strtol would also take " 5" and "+5" */
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || *end != '\0')
        return false;
    *out = v;
    return true;
}

static bool parse_bool(const char *s, bool *out)
{
    static const char *const yes[] = {"1", "true", "yes", "on"};
    static const char *const no[] = {"0", "false", "no", "off"};
    for (size_t i = 0; i < 4; i++) {
        if (strcasecmp(s, yes[i]) == 0) {
            *out = true;
            return true;
        }
        if (strcasecmp(s, no[i]) == 0) {
            *out = false;
            return true;
        }
    }
    return false;
}

static bool set_value(struct config *cfg, const struct setting *st, const char *val, char *err,
                      size_t errsz)
{
    char *base = (char *)cfg + st->offset;
    long l;
    bool b;
    enum log_level lv;
    switch (st->type) {
    case T_STRING:
        if (strlen(val) > 4096 || strchr(val, '\n')) {
            snprintf(err, errsz, "%s: value is too long or has a line break", st->env);
            return false;
        }
        free(*(char **)base);
        *(char **)base = xstrdup(val);
        return true;
    case T_INT:
    case T_LONG:
        if (!parse_long(val, &l) || l < st->min || l > st->max) {
            snprintf(err, errsz, "%s: must be an integer from %ld to %ld, got \"%.64s\"", st->env,
                     st->min, st->max, val);
            return false;
        }
        if (st->type == T_INT)
            *(int *)base = (int)l;
        else
            *(long *)base = l;
        return true;
    case T_BOOL:
        if (!parse_bool(val, &b)) {
            snprintf(err, errsz, "%s: must be 1 or 0 (true/false, yes/no, on/off), got \"%.64s\"",
                     st->env, val);
            return false;
        }
        *(bool *)base = b;
        return true;
    case T_LOGLEVEL:
        if (!log_level_parse(val, &lv)) {
            snprintf(err, errsz, "%s: must be debug, info, warn or error, got \"%.64s\"", st->env,
                     val);
            return false;
        }
        *(int *)base = (int)lv;
        return true;
    case T_POOLMODE:
        if (strcmp(val, "session") != 0 && strcmp(val, "transaction") != 0) {
            snprintf(err, errsz, "%s: must be session or transaction, got \"%.64s\"", st->env, val);
            return false;
        }
        *(bool *)base = strcmp(val, "transaction") == 0;
        return true;
    case T_PWLOGIN:
        if (strcmp(val, "all") != 0 && strcmp(val, "admins") != 0) {
            snprintf(err, errsz, "%s: must be all or admins, got \"%.64s\"", st->env, val);
            return false;
        }
        *(int *)base = strcmp(val, "admins") == 0 ? PASSWORD_LOGIN_ADMINS : PASSWORD_LOGIN_ALL;
        return true;
    case T_COOKIE:
        if (strcmp(val, "auto") == 0)
            *(int *)base = COOKIE_SECURE_AUTO;
        else if (parse_bool(val, &b))
            *(int *)base = b ? COOKIE_SECURE_ON : COOKIE_SECURE_OFF;
        else {
            snprintf(err, errsz, "%s: must be auto, on or off, got \"%.64s\"", st->env, val);
            return false;
        }
        return true;
    }
    return false;
}

/* Split "host:port" / "[v6]:port" (the setting name) into *host and *port. */
static bool parse_hostport(const char *name, const char *s, char **hostp, int *portp, char *err,
                           size_t errsz)
{
    const char *colon;
    char *host;
    if (s[0] == '[') {
        const char *close = strchr(s, ']');
        if (!close || close[1] != ':') {
            snprintf(err, errsz, "%s: expected [address]:port, got \"%.64s\"", name, s);
            return false;
        }
        host = xstrndup(s + 1, (size_t)(close - s - 1));
        colon = close + 1;
    } else {
        colon = strrchr(s, ':');
        if (!colon || colon == s) {
            snprintf(err, errsz, "%s: expected address:port, got \"%.64s\"", name, s);
            return false;
        }
        host = xstrndup(s, (size_t)(colon - s));
    }
    long port;
    if (!parse_long(colon + 1, &port) || port < 0 || port > 65535) {
        snprintf(err, errsz, "%s: port must be 0..65535, got \"%.64s\"", name, colon + 1);
        free(host);
        return false;
    }
    free(*hostp);
    *hostp = host;
    *portp = (int)port;
    return true;
}

/* An origin and perhaps a path, never a query: the callback path is appended to it. */
static bool check_public_url(struct config *cfg, char *err, size_t errsz)
{
    char *u = cfg->public_url;
    if (!u[0]) {
        if (cfg->listen_port != 0) /* else: completed once the port is known */
            config_complete_public_url(cfg, cfg->listen_port);
        return true;
    }
    if ((strncmp(u, "https://", 8) != 0 && strncmp(u, "http://", 7) != 0) || strpbrk(u, "?# ")) {
        snprintf(err, errsz,
                 "AIDC_PUBLIC_URL: must be an http:// or https:// URL without query, got \"%.64s\"",
                 u);
        return false;
    }
    size_t n = strlen(u);
    while (n > 8 && u[n - 1] == '/')
        u[--n] = '\0';
    return true;
}

void config_complete_public_url(struct config *cfg, int port)
{
    if (cfg->public_url && cfg->public_url[0])
        return;
    const char *h = cfg->listen_host;
    bool v6 = strchr(h, ':') != NULL;
    bool any = strcmp(h, "0.0.0.0") == 0 || strcmp(h, "::") == 0;
    free(cfg->public_url);
    cfg->public_url = xasprintf("http://%s%s%s:%d", v6 && !any ? "[" : "", any ? "127.0.0.1" : h,
                                v6 && !any ? "]" : "", port);
}

static bool parse_listen(struct config *cfg, char *err, size_t errsz)
{
    if (!parse_hostport("AIDC_LISTEN", cfg->listen, &cfg->listen_host, &cfg->listen_port, err,
                        errsz))
        return false;
    if (strcmp(cfg->sessions_listen, "off") == 0) {
        cfg->sessions_port = -1;
        return true;
    }
    if (cfg->sessions_listen[0] == '\0') { /* the API's address, the next port */
        cfg->sessions_host = xstrdup(cfg->listen_host);
        /* past the last port: a free one (said in the "listening" line) */
        cfg->sessions_port =
            cfg->listen_port && cfg->listen_port < 65535 ? cfg->listen_port + 1 : 0;
        return true;
    }
    return parse_hostport("AIDC_SESSIONS_LISTEN", cfg->sessions_listen, &cfg->sessions_host,
                          &cfg->sessions_port, err, errsz);
}

static bool check_smtp(const struct config *cfg, char *err, size_t errsz)
{
    const char *u = cfg->smtp_url;
    if (!u[0])
        return true;
    if (strncmp(u, "smtp://", 7) != 0 && strncmp(u, "smtps://", 8) != 0) {
        snprintf(err, errsz, "AIDC_SMTP_URL: must start with smtp:// or smtps://");
        return false;
    }
    if (!cfg->smtp_from[0] || strchr(cfg->smtp_from, '@') == NULL ||
        strpbrk(cfg->smtp_from, "\r\n<> ") != NULL) {
        snprintf(err, errsz, "AIDC_SMTP_FROM: an e-mail address is required with AIDC_SMTP_URL");
        return false;
    }
    if (cfg->smtp_user[0] && !cfg->smtp_password_ref[0]) {
        snprintf(err, errsz, "AIDC_SMTP_PASSWORD_REF: required with AIDC_SMTP_USER");
        return false;
    }
    return true;
}

bool config_load(struct config *cfg, const char *(*getenv_fn)(const char *), char *err,
                 size_t errsz)
{
    struct filecfg fc = {0};
    bool ok = false;
    memset(cfg, 0, sizeof *cfg);
    if (!getenv_fn)
        getenv_fn = (const char *(*)(const char *))getenv;

    const char *file = getenv_fn("AIDC_CONFIG_FILE");
    if (file && *file && !filecfg_read(&fc, file, err, errsz))
        goto out;
    for (size_t i = 0; i < fc.n; i++) {
        if (!find_setting(fc.items[i].key)) {
            snprintf(err, errsz, "AIDC_CONFIG_FILE: unknown setting %s", fc.items[i].key);
            goto out;
        }
    }
    for (size_t i = 0; i < NSETTINGS; i++) {
        const struct setting *st = &settings[i];
        const char *val = getenv_fn(st->env);
        if (!val)
            val = filecfg_get(&fc, st->env);
        if (!val)
            val = st->def;
        if (!set_value(cfg, st, val, err, errsz))
            goto out;
    }
    if (!parse_listen(cfg, err, errsz) || !check_public_url(cfg, err, errsz) ||
        !check_smtp(cfg, err, errsz))
        goto out;
    if (cfg->migrate_database_url[0] == '\0') {
        /* migrations hold a session lock: never through a transaction pooler */
        free(cfg->migrate_database_url);
        cfg->migrate_database_url =
            xstrdup(cfg->db_txpool ? cfg->worker_database_url : cfg->database_url);
    }
    if (cfg->worker_database_url[0] == '\0') {
        if (cfg->db_txpool && cfg->database_url[0]) {
            snprintf(err, errsz,
                     "AIDC_WORKER_DATABASE_URL: required with "
                     "AIDC_DB_POOL_MODE=transaction (the workers LISTEN and hold "
                     "advisory locks, which a transaction pooler cannot keep)");
            goto out;
        }
        free(cfg->worker_database_url);
        cfg->worker_database_url = xstrdup(cfg->database_url);
    }
    if (cfg->threads == 0) {
        long n = sysconf(_SC_NPROCESSORS_ONLN);
        cfg->threads = n < 1 ? 1 : (n > 64 ? 64 : (int)n);
    }
    if (cfg->write_threads < 0)
        cfg->write_threads = cfg->threads > 16 ? 64 : 4 * cfg->threads;
    char bad[80];
    if (!netaddr_list_valid(cfg->trusted_proxies, bad, sizeof bad)) {
        snprintf(err, errsz,
                 "AIDC_TRUSTED_PROXIES: \"%s\" is not an address or network "
                 "(address/prefix)",
                 bad);
        goto out;
    }
    if (cfg->data_dir[0] == '\0') {
        snprintf(err, errsz, "AIDC_DATA_DIR: must not be empty");
        goto out;
    }
    if (cfg->data_dir[0] != '/') {
        /* job directories are handed to processes that may run elsewhere */
        char cwd[4096];
        if (!getcwd(cwd, sizeof cwd)) {
            snprintf(err, errsz, "AIDC_DATA_DIR: cannot resolve \"%s\": %s", cfg->data_dir,
                     strerror(errno));
            goto out;
        }
        char *abs = xasprintf("%s/%s", cwd, cfg->data_dir);
        free(cfg->data_dir);
        cfg->data_dir = abs;
    }
    if (cfg->storage_root[0] == '\0') {
        free(cfg->storage_root);
        cfg->storage_root = xasprintf("%s/storage", cfg->data_dir);
    }
    if (cfg->storage_root[0] != '/') {
        snprintf(err, errsz, "AIDC_STORAGE_ROOT: must be an absolute path");
        goto out;
    }
    if (cfg->jwt_key_file[0] == '\0') {
        free(cfg->jwt_key_file);
        cfg->jwt_key_file = xasprintf("%s/jwt.key", cfg->data_dir);
    }
    char exe[4096];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    exe[n > 0 ? n : 0] = '\0';
    cfg->self_exe = xstrdup(n > 0 ? exe : "aidcd");
    ok = true;
out:
    filecfg_free(&fc);
    if (!ok)
        config_free(cfg);
    return ok;
}

void config_free(struct config *cfg)
{
    for (size_t i = 0; i < NSETTINGS; i++) {
        if (settings[i].type == T_STRING) {
            char **p = (char **)((char *)cfg + settings[i].offset);
            free(*p);
            *p = NULL;
        }
    }
    free(cfg->listen_host);
    cfg->listen_host = NULL;
    free(cfg->sessions_host);
    cfg->sessions_host = NULL;
    free(cfg->self_exe);
    cfg->self_exe = NULL;
}

void config_print_help(FILE *out)
{
    fprintf(out, "Settings (environment variables; AIDC_CONFIG_FILE may name a file of\n"
                 "AIDC_NAME=value lines, which the environment overrides):\n\n");
    for (size_t i = 0; i < NSETTINGS; i++) {
        const struct setting *st = &settings[i];
        fprintf(out, "  %-32s %s\n", st->env, st->help);
        if (st->def[0])
            fprintf(out, "  %-32s   default: %s\n", "", st->def);
    }
    fprintf(out, "  %-32s %s\n", "AIDC_ADMIN_PASSWORD",
            "password for `aidcd bootstrap` (or pass --password-stdin)");
    fprintf(out, "  %-32s %s\n", "AIDC_CONFIG_FILE", "optional settings file (see above)");
}

bool config_listen_is_loopback(const struct config *cfg)
{
    const char *h = cfg->listen_host;
    return strncmp(h, "127.", 4) == 0 || strcmp(h, "::1") == 0 || strcmp(h, "localhost") == 0;
}

char *config_session_origin(const struct config *cfg, const char *id)
{
    const char *u = cfg->sessions_url ? cfg->sessions_url : "", *at = strstr(u, "{id}");
    if (!at)
        return xstrdup(u);
    return xasprintf("%.*s%s%s", (int)(at - u), u, id, at + 4);
}

char *config_session_url(const struct config *cfg, const char *id)
{
    char *origin = config_session_origin(cfg, id);
    char *url = xasprintf("%s" CONFIG_SESSION_PATH "%s/", origin, id);
    free(origin);
    return url;
}
