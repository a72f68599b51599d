/*
 * main.c - the aidcd command line: serve (default), migrate, bootstrap.
 *
 * Settings come from the environment (lib/config.c); a bad one stops the
 * start with one line naming it. `serve` blocks SIGTERM/SIGINT in every
 * thread and waits for them in main, then drains: stop accepting, let
 * in-flight requests finish (AIDC_SHUTDOWN_TIMEOUT_SECONDS), stop workers,
 * exit 0.
 */
#include "../audit/audit.h"
#include "auditreq.h"
#include "../audit/cli.h"
#include "../audit/sealer.h"
#include "../billing/meter.h"
#include "../billing/storagemeter.h"
#include "../images/sync.h"
#include "../audit/sign.h"
#include "../lib/credref.h"
#include "../backends/shim.h"
#include "../db/db.h"
#include "../db/migrate.h"
#include "../db/users.h"
#include "../sched/admitter.h"
#include "../sched/dispatcher.h"
#include "../sched/notifier.h"
#include "../sched/sessionwatch.h"
#include "../sched/arraycancel.h"
#include "../sched/effwatch.h"
#include "../sched/syncer.h"
#include "../db/worker.h"
#include "../lib/config.h"
#include "../lib/crypto.h"
#include "../lib/err.h"
#include "http.h"
#include "janitor.h"
#include "../lib/log.h"
#include "metrics.h"
#include "relay.h"
#include "password.h"
#include "router.h"
#include "../lib/sbuf.h"
#include "session.h"
#include "validate.h"
#include "waker.h"
#include "../lib/xalloc.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <sys/prctl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define AIDC_VERSION "0.1.0"
#define JANITOR_INTERVAL_S 600

static void usage(FILE *out)
{
    fprintf(out,
            "aidcd %s - the management plane of an AI data center\n\n"
            "Usage:\n"
            "  aidcd [serve]                      serve the API and the portal\n"
            "  aidcd migrate                      apply pending database migrations\n"
            "  aidcd bootstrap --admin NAME [--password-stdin]\n"
            "                                     create a platform admin, or reset its password\n"
            "                                     (password from AIDC_ADMIN_PASSWORD or stdin)\n"
            "%s"
            "  aidcd --help | --version\n"
            "  aidcd local-shim DIR               (internal) run one job of the local executor\n\n",
            AIDC_VERSION, audit_cli_usage);
    config_print_help(out);
}

static int load_config(struct config *cfg)
{
    char err[512];
    if (!config_load(cfg, NULL, err, sizeof err)) {
        fprintf(stderr, "aidcd: %s\n", err);
        return 2;
    }
    log_set_level((enum log_level)cfg->log_level);
    password_set_cost(cfg->password_hash_cost);
    return 0;
}

static int cmd_migrate(const struct config *cfg)
{
    char err[512];
    if (migrate_run(cfg->migrate_database_url, cfg->database_url, cfg->audit_retention_days, err,
                    sizeof err) != 0) {
        fprintf(stderr, "aidcd: %s\n", err);
        return 1;
    }
    return 0;
}

static int check_schema(const struct config *cfg)
{
    char err[512];
    bool pending = false;
    if (migrate_check(cfg->database_url, &pending, err, sizeof err) != 0) {
        fprintf(stderr, "aidcd: %s\n", err);
        return 1;
    }
    return 0;
}

/* ---- bootstrap ------------------------------------------------------------------ */

static char *read_password_stdin(void)
{
    char buf[PASSWORD_MAX_LEN + 2];
    if (!fgets(buf, sizeof buf, stdin))
        return NULL;
    buf[strcspn(buf, "\r\n")] = '\0';
    return xstrdup(buf);
}

static int bootstrap_write(struct db *db, const char *name, const char *hash)
{
    struct req rq = {0};
    rq.db = db;
    rq.actor.username = xstrdup("aidcd bootstrap");
    snprintf(rq.request_id, sizeof rq.request_id, "bootstrap");
    struct db_ctx ctx = {.roles = "system"};
    char id[37] = "";
    bool created = false;
    int e = db_begin(db, &ctx, false);
    if (!e)
        e = db_user_bootstrap(db, name, hash, &created, id);
    if (!e) {
        json_t *d = json_pack("{s:s, s:b, s:s}", "username", name, "created", created, "via",
                              "command line");
        struct audit_event ev = {.action = "user.bootstrap", .resource_type = "user",
                                 .resource_id = name, .details = d};
        e = auditreq_record(&rq, &ev);
        json_decref(d);
    }
    if (!e)
        e = db_commit(db);
    else
        db_rollback(db);
    free(rq.actor.username);
    if (e) {
        const struct db_error *de = db_last_error(db);
        fprintf(stderr, "aidcd: bootstrap failed: %s\n", de->message[0] ? de->message : aidc_err_name(e));
        return 1;
    }
    printf("%s platform admin \"%s\"\n", created ? "created" : "reset the password of", name);
    return 0;
}

static int cmd_bootstrap(const struct config *cfg, int argc, char **argv)
{
    const char *name = NULL;
    bool from_stdin = false;
    for (int i = 2; i < argc; i++) {
        if (strcmp(argv[i], "--admin") == 0 && i + 1 < argc)
            name = argv[++i];
        else if (strcmp(argv[i], "--password-stdin") == 0)
            from_stdin = true;
        else {
            fprintf(stderr, "aidcd bootstrap: unexpected argument \"%s\"\n", argv[i]);
            return 2;
        }
    }
    if (!name) {
        fprintf(stderr, "aidcd bootstrap: --admin NAME is required\n");
        return 2;
    }
    if (!validate_username(name)) {
        fprintf(stderr, "aidcd bootstrap: \"%s\" is not a valid user name "
                        "(^[a-z][a-z0-9._-]{0,62}$)\n", name);
        return 2;
    }
    char *pw = from_stdin ? read_password_stdin()
                          : (getenv("AIDC_ADMIN_PASSWORD") ? xstrdup(getenv("AIDC_ADMIN_PASSWORD")) : NULL);
    if (!pw) {
        fprintf(stderr, "aidcd bootstrap: set AIDC_ADMIN_PASSWORD or pass --password-stdin\n");
        return 2;
    }
    const char *why = password_policy_check(pw);
    if (why) {
        fprintf(stderr, "aidcd bootstrap: the password %s\n", why);
        free(pw);
        return 2;
    }
    char *hash = password_hash(pw);
    free(pw);
    if (!hash)
        return 1;
    int rc = check_schema(cfg);
    if (rc == 0) {
        struct db *db = db_open(cfg->worker_database_url, "aidcd-bootstrap");
        rc = db_ensure(db) ? (fprintf(stderr, "aidcd: %s\n", db_last_error(db)->message), 1)
                           : bootstrap_write(db, name, hash);
        db_close(db);
    }
    free(hash);
    return rc;
}

/* ---- serve ----------------------------------------------------------------------- */

static int prepare_data_dir(const struct config *cfg)
{
    if (mkdir(cfg->data_dir, 0700) != 0 && errno != EEXIST) {
        fprintf(stderr, "aidcd: AIDC_DATA_DIR: cannot create %s: %s\n", cfg->data_dir,
                strerror(errno));
        return 1;
    }
    char err[1024];
    credref_init(cfg);
    if (session_key_load(cfg->jwt_key_file, err, sizeof err) != 0) {
        fprintf(stderr, "aidcd: %s\n", err);
        return 2; /* a configuration error, as a bad setting is */
    }
    return 0;
}

/* The checkpoint signing key, or NULL (unset: a warning; unusable: *fail). */
static struct sign_key *audit_key_load(const struct config *cfg, bool *fail)
{
    *fail = false;
    if (!cfg->audit_key_file[0]) {
        log_warn("AIDC_AUDIT_KEY_FILE is not set: audit checkpoints are written unsigned, so "
                 "a rewrite of the whole chain by a database superuser would go unnoticed");
        return NULL;
    }
    char err[1024];
    struct sign_key *k = sign_key_load(cfg->audit_key_file, err, sizeof err);
    if (k && !sign_key_can_sign(k)) {
        snprintf(err, sizeof err, "\"%s\" is a public key: the server needs the private one",
                 cfg->audit_key_file);
        sign_key_free(k);
        k = NULL;
    }
    if (!k) {
        fprintf(stderr, "aidcd: AIDC_AUDIT_KEY_FILE: %s\n", err);
        *fail = true;
    }
    return k;
}

static int cmd_serve(struct config *cfg)
{
    int rc = prepare_data_dir(cfg);
    if (rc)
        return rc;
    /* a host whose PostgreSQL starts a moment later (reboot, one compose file) */
    if (migrate_wait_reachable(cfg->database_url, "AIDC_DATABASE_URL",
                               cfg->db_start_wait_seconds) != 0) {
        fprintf(stderr,
                "aidcd: the PostgreSQL server of AIDC_DATABASE_URL did not answer within %d s "
                "(AIDC_DB_START_WAIT_SECONDS)\n",
                cfg->db_start_wait_seconds);
        return 1;
    }
    if (cfg->auto_migrate && cmd_migrate(cfg))
        return 1;
    if (check_schema(cfg))
        return 1;

    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    pthread_sigmask(SIG_BLOCK, &set, NULL); /* every thread started below inherits this */
    signal(SIGPIPE, SIG_IGN);

    bool key_failed;
    struct sign_key *audit_signing = audit_key_load(cfg, &key_failed);
    if (key_failed)
        return 2;
    audit_key_set(audit_signing);
    metrics_init(routes_count, cfg->threads);
    password_init(cfg->password_hash_concurrency);
    if (cfg->password_hash_cost < PASSWORD_COST_DEFAULT)
        log_warn("AIDC_PASSWORD_HASH_COST=%d is below %d: new password hashes are cheaper to"
                 " guess; only for tests", cfg->password_hash_cost, PASSWORD_COST_DEFAULT);
    /* first: it completes cfg->sessions_url, which the API's threads read */
    int relay_off = 0;
    struct relay *relay = relay_start(cfg, &relay_off);
    if (!relay && !relay_off) {
        sign_key_free(audit_signing);
        return 1;
    }
    struct http_server *srv = waker_start(cfg) ? http_start(cfg) : NULL;
    if (!srv) {
        waker_stop();
        relay_stop(relay);
        sign_key_free(audit_signing);
        return 1;
    }
    /* with AIDC_LISTEN's port 0 nobody can have reached the API before this: its
     * public URL is whole before any request could read it */
    config_complete_public_url(cfg, http_port(srv));
    struct janitor *jan = janitor_start(cfg->worker_database_url, JANITOR_INTERVAL_S,
                                         cfg->allocation_notice_days);
    struct worker *admitter = NULL, *dispatcher = NULL;
    struct worker *syncer = NULL;
    struct worker *sealer = NULL;
    struct worker *meter = NULL;
    struct worker *regsync = NULL;
    struct worker *storage = NULL;
    struct worker *sessions = NULL;
    struct worker *effic = NULL, *notifier = NULL, *arrays = NULL;
    if (cfg->workers) {
        admitter = admitter_start(cfg);
        dispatcher = dispatcher_start(cfg);
        syncer = syncer_start(cfg);
        sealer = sealer_start(cfg, audit_signing);
        meter = meter_start(cfg);
        regsync = regsync_start(cfg);
        storage = storagemeter_start(cfg);
        sessions = sessionwatch_start(cfg);
        effic = effwatch_start(cfg);
        notifier = notifier_start(cfg);
        arrays = arraycancel_start(cfg);
        if (!admitter || !dispatcher || !syncer || !sealer || !meter || !regsync || !storage ||
            !sessions || !effic || !notifier || !arrays)
            log_error("a background worker did not start: jobs will not move");
    }
    struct sbuf line = SBUF_INIT;
    sbuf_printf(&line, "\"msg\":\"listening\",\"address\":\"%s\",\"port\":%d,\"threads\":%d,"
                       "\"sessions_port\":%d,\"version\":\"%s\"",
                cfg->listen_host, http_port(srv), cfg->threads, relay_port(relay), AIDC_VERSION);
    log_write_fields(LOG_INFO, sbuf_str(&line));
    sbuf_free(&line);

    int sig = 0;
    sigwait(&set, &sig);
    log_info("received %s: draining requests (up to %d s)", sig == SIGTERM ? "SIGTERM" : "SIGINT",
             cfg->shutdown_timeout_seconds);
    http_quiesce(srv);
    if (!http_wait_idle(srv, cfg->shutdown_timeout_seconds))
        log_warn("requests still running after %d s; closing them", cfg->shutdown_timeout_seconds);
    /* jobs keep running without aidcd (local jobs have their own shims): stopping
     * the workers only pauses following them */
    worker_stop(admitter);
    worker_stop(dispatcher);
    worker_stop(syncer);
    worker_stop(sealer);
    worker_stop(meter);
    worker_stop(regsync);
    worker_stop(storage);
    worker_stop(sessions);
    worker_stop(effic);
    worker_stop(notifier);
    worker_stop(arrays);
    janitor_stop(jan);
    relay_stop(relay);
    http_stop(srv);
    waker_stop(); /* after the last request that could poke it */
    audit_key_set(NULL);
    sign_key_free(audit_signing);
    log_info("stopped");
    return 0;
}

int main(int argc, char **argv)
{
    const char *cmd = argc > 1 ? argv[1] : "serve";
    if (strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0 || strcmp(cmd, "help") == 0) {
        usage(stdout);
        return 0;
    }
    if (strcmp(cmd, "local-shim") == 0) {
        /* started by the local executor; needs no settings */
        if (argc != 3) {
            fprintf(stderr, "aidcd local-shim: needs the job directory\n");
            return 2;
        }
        return shim_main(argv[2]);
    }
    if (strcmp(cmd, "--version") == 0) {
        printf("aidcd %s (schema %d)\n", AIDC_VERSION, migrate_latest_version());
        return 0;
    }
    if (strcmp(cmd, "serve") != 0 && strcmp(cmd, "migrate") != 0 &&
        strcmp(cmd, "bootstrap") != 0 && strcmp(cmd, "audit") != 0) {
        fprintf(stderr, "aidcd: unknown command \"%s\" (see aidcd --help)\n", cmd);
        return 2;
    }
    if (strcmp(cmd, "bootstrap") != 0 && strcmp(cmd, "audit") != 0 && argc > 2) {
        fprintf(stderr, "aidcd %s: unexpected argument \"%s\"\n", cmd, argv[2]);
        return 2;
    }
    /* Nothing of this process (its environment with the database password,
     * its memory with the session key) is readable through /proc by other
     * processes of its user, such as a local executor's jobs; no core dumps. */
    if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0)
        fprintf(stderr, "aidcd: prctl(PR_SET_DUMPABLE): %s\n", strerror(errno));
    struct config cfg;
    int rc = load_config(&cfg);
    if (rc)
        return rc;
    if (strcmp(cmd, "migrate") == 0)
        rc = cmd_migrate(&cfg);
    else if (strcmp(cmd, "bootstrap") == 0)
        rc = cmd_bootstrap(&cfg, argc, argv);
    else if (strcmp(cmd, "audit") == 0)
        rc = audit_cli(&cfg, argc - 1, argv + 1);
    else
        rc = cmd_serve(&cfg);
    config_free(&cfg);
    return rc;
}
