/*
 * config.h - aidcd settings: one typed table, read from the environment (and an
 * optional KEY=VALUE file named by AIDC_CONFIG_FILE; the environment wins),
 * validated once at start, read-only afterwards.
 */
#ifndef AIDC_CONFIG_H
#define AIDC_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

/* the most HTTP threads (AIDC_THREADS): each is a libmicrohttpd daemon (server/http.c) */
#define CONFIG_MAX_THREADS 256

enum cookie_secure { COOKIE_SECURE_AUTO = 0, COOKIE_SECURE_ON = 1, COOKIE_SECURE_OFF = 2 };

struct config {
    char *database_url;
    char *migrate_database_url;
    char *worker_database_url; /* "" in the table = database_url */
    char *read_database_url;   /* "" = reads stay on the primary */
    bool db_txpool;            /* database_url is a transaction pooler */
    char *listen;
    char *listen_host; /* derived from listen */
    int listen_port;   /* derived from listen; 0 = pick a free port */
    int threads;       /* 0 in the table = number of CPUs */
    int write_threads; /* -1 in the table = 4 per HTTP thread */
    char *data_dir;
    char *portal_dir;
    char *jwt_key_file; /* "" in the table = <data_dir>/jwt.key */
    int jwt_ttl_seconds;
    long max_body_bytes;
    int log_level; /* enum log_level */
    bool auto_migrate;
    int login_max_failures;
    int login_max_failures_per_ip;
    int login_max_failures_per_user;
    int db_start_wait_seconds;
    int password_hash_concurrency;
    int password_hash_cost; /* log2 of scrypt's N for new hashes */
    int password_queue_length;
    int login_window_seconds;
    int idempotency_ttl_seconds;
    int shutdown_timeout_seconds;
    int cookie_secure; /* enum cookie_secure */
    int db_statement_timeout_ms;
    int http_idle_timeout_seconds;
    int max_connections;
    int max_connections_per_address; /* 0: no limit */
    int max_header_bytes;
    int rate_limit_per_address; /* requests/s; 0: off */
    int rate_limit_address_burst;
    int rate_limit_per_token; /* requests/s; 0: off */
    int rate_limit_token_burst;
    int json_max_depth;
    int json_max_values;
    char *trusted_proxies;
    bool workers; /* run the background workers in this process */
    int preempt_grace_seconds;
    int outbox_lease_seconds;
    int dispatch_concurrency; /* deliveries at once (sched/deliverpool.h) */
    int dispatch_per_cluster; /* ... of which to one cluster */
    int starvation_seconds;
    int admission_interval_ms;
    int admission_coalesce_ms;
    int sync_interval_ms;
    int inventory_interval_seconds;
    char *audit_key_file; /* "" = checkpoints unsigned */
    int audit_checkpoint_seconds;
    int audit_seal_grace_ms;
    int audit_retention_days;
    long audit_ingest_max_bytes;
    int audit_ingest_max_records;
    int approval_ttl_hours;
    int approval_quota_threshold;
    int allocation_dual_approval_gpu_hours;
    int allocation_notice_days;
    int usage_max_rows;
    int registry_sync_seconds;
    int efficiency_interval_seconds;
    int idle_gpu_util_percent;
    int idle_gpu_seconds;
    char *storage_root; /* "" in the table = <data_dir>/storage */
    long storage_uid_first;
    long files_max_upload_bytes;
    int files_list_max;
    int storage_scan_seconds;
    long storage_scan_max_entries;
    char *sessions_listen; /* "" = listen's address, its port + 1; "off" = none */
    char *sessions_host;   /* derived from sessions_listen */
    int sessions_port;     /* derived; 0 = pick a free port, -1 = no relay */
    /* the relay's public origin, "{id}" standing for a session's id; "" in the table =
     * http://<sessions address> (completed by the relay once it listens) */
    char *sessions_url;
    int sessions_max_minutes;
    int sessions_ready_seconds;
    int sessions_max_connections;
    long sessions_max_body_bytes;
    char *self_exe; /* derived: this binary (the local executor runs its shim) */
    /* where browsers reach the API and portal (single sign-on's redirect URI is built
     * on it); "" in the table = http://<listen address> (completed once it listens) */
    char *public_url;
    int password_login; /* enum password_login */
    /* notifications (docs/notifications.md) */
    char *smtp_url; /* "" = no e-mail */
    char *smtp_from;
    char *smtp_user;
    char *smtp_password_ref; /* a credentials_ref (lib/credref.h) */
    char *smtp_ca_file;      /* "" = the system's CAs */
    int notify_max_attempts;
    int notify_backoff_seconds;
    int notify_backoff_max_seconds;
    int notify_timeout_seconds;
    bool webhook_allow_loopback; /* tests: http:// and https:// to 127.0.0.1/::1 */
};

/* Who may sign in with a password aidc keeps (AIDC_PASSWORD_LOGIN). */
enum password_login { PASSWORD_LOGIN_ALL = 0, PASSWORD_LOGIN_ADMINS = 1 };

/* Where an interactive session is served on the relay's origin (its app's base path),
 * and where a single-use link enters one (docs/sessions.md). */
#define CONFIG_SESSION_PATH      "/sessions/"
#define CONFIG_SESSION_OPEN_PATH "/_aidc/open"
/* The relay's public origin for session id ("{id}" of AIDC_SESSIONS_URL filled; malloc'd). */
char *config_session_origin(const struct config *cfg, const char *id);
/* Its app's absolute URL: origin, CONFIG_SESSION_PATH, id, "/" (malloc'd). */
char *config_session_url(const struct config *cfg, const char *id);

/*
 * Fill cfg from the environment (and AIDC_CONFIG_FILE). On a bad value returns
 * false and writes a one-line message naming the setting into err.
 * getenv_fn lets tests supply their own environment (NULL = getenv).
 */
bool config_load(struct config *cfg, const char *(*getenv_fn)(const char *), char *err,
                 size_t errsz);
void config_free(struct config *cfg);
/* Whether name is one of aidcd's settings (an AIDC_* variable it reads). */
bool config_is_setting(const char *name);
/* Print every setting with its default and meaning (aidcd --help). */
void config_print_help(FILE *out);
/* Fill an empty public_url from the address the API listens on, port (once known). */
void config_complete_public_url(struct config *cfg, int port);
/* True when the listen address is loopback (used for cookie_secure=auto). */
bool config_listen_is_loopback(const struct config *cfg);

#endif
