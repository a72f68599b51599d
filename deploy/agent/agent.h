/*
 * agent.h - what the parts of the node agent share: the configuration, the
 * log, and appending a record to the spool (agent.c owns those and main);
 * the shipper (agent_ship.c) and the watchers (agent_watch.c: kernel
 * modules, auditd, image pulls; they only ever append records).
 * See docs/agent.md.
 */
#ifndef AIDC_AGENT_H
#define AIDC_AGENT_H

#include <jansson.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define AGENT_EXIT_USAGE    2
#define AGENT_EXIT_TEMPFAIL 75 /* sysexits EX_TEMPFAIL: try again later */

/* Limits of one record (the server's, see POST /api/v1/audit/commands). */
#define AGENT_MAX_COMMAND 65536
#define AGENT_MAX_CWD     4096
#define AGENT_MAX_NAME    255 /* host, user, session */

/*
 * The configuration: /etc/aidc-agent.conf (or $AIDC_AGENT_CONFIG) holds
 * NAME=value lines; the environment overrides the file. The token itself is
 * never here, only the path of the file that holds it.
 */
struct agent_cfg {
    char url[1024];          /* AIDC_AGENT_URL: aidcd's base URL */
    char token_file[1024];   /* AIDC_AGENT_TOKEN_FILE */
    char spool[1024];        /* AIDC_AGENT_SPOOL */
    char ca_file[1024];      /* AIDC_AGENT_CA_FILE: CA bundle for https ("" = system's) */
    char host[256];          /* AIDC_AGENT_HOST: the node's name in records (hostname) */
    char modules_file[1024]; /* AIDC_AGENT_MODULES_FILE: /proc/modules */
    char interval[16];       /* AIDC_AGENT_INTERVAL: seconds between ship passes */
};

/* One record to append. NULL strings and a negative uid are left out. */
struct agent_rec {
    const char *kind; /* "command", "module" or "image_pull" */
    int64_t ms;       /* when it happened, ms since the epoch */
    const char *user;
    long long uid;
    const char *session;
    const char *cwd;
    const char *command; /* command_len bytes, any bytes (cleaned on the way in) */
    size_t command_len;
    bool has_exit;
    int exit_code;
    const char *job_id;    /* a UUID or NULL */
    const char *record_id; /* NULL: a fresh random 128-bit id */
};

/* Set by SIGTERM and SIGINT (agent_signals): loops end at their next look. */
extern volatile sig_atomic_t agent_stop;
void agent_signals(void);

/*
 * One JSON log line on stderr: ts, level, msg and the members of fields
 * (stolen; may be NULL). Never pass a token: nothing here redacts.
 */
void agent_log(const char *level, json_t *fields, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Wall-clock ms since the epoch. */
int64_t agent_now_ms(void);
/* Sleep secs, returning early when agent_stop is set. */
void agent_nap(double secs);
/* n random bytes (getrandom); 0 or -1. */
int agent_random(void *out, size_t n);

/*
 * Append r to this user's current spool file as one NDJSON line, in one
 * write() under the file's lock (see agent.c). 0, or -1 (logged).
 */
int agent_spool_append(const struct agent_cfg *c, const struct agent_rec *r);
/* "<spool>/state/<name>" (the directory made when missing); 0 or -1. */
int agent_state_path(const struct agent_cfg *c, const char *name, char *out, size_t n);
/* snprintf into out; -1 when it does not fit. */
int agent_pathf(char *out, size_t n, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* "<spool>/<sub>" into out, made (0700) when missing; 0 or -1 (logged). */
int agent_subdir(const struct agent_cfg *c, const char *sub, char *out, size_t n);
/* write() all of buf, again after EINTR; 0 or -1. */
int agent_write_all(int fd, const char *buf, size_t len);
/* A closed file's name "c<ms>-u<uid>-<random>.ndjson" (they sort by closing time); 0 or -1. */
int agent_closed_name(char *out, size_t n, unsigned uid);
/* Write text to path atomically (temporary file, rename); 0 or -1. */
int agent_write_file(const char *path, const char *text, size_t len);
/*
 * The whole of a regular file (NUL-terminated, *len its length; a symlink is
 * not followed) or NULL; NULL too when it holds more than max bytes.
 */
char *agent_read_file(const char *path, size_t max, size_t *len);

/*
 * ship [--once] (agent_ship.c): send the spool to aidcd; with modules, also
 * watch /proc/modules in the same loop (`run`). Returns the exit status: 0,
 * AGENT_EXIT_TEMPFAIL when --once left batches to try again, 1 on errors.
 */
int agent_ship_main(const struct agent_cfg *c, int argc, char **argv, bool modules);

/* The watchers (agent_watch.c): each returns the program's exit status. */
int agent_modules_main(const struct agent_cfg *c, int argc, char **argv);
int agent_auditd_main(const struct agent_cfg *c, int argc, char **argv);
int agent_images_main(const struct agent_cfg *c, int argc, char **argv);

/* The modules watcher's state, for the `run` loop (agent_watch.c). */
struct agent_modwatch;
struct agent_modwatch *agent_modwatch_new(void);
void agent_modwatch_free(struct agent_modwatch *w);
/* Compare /proc/modules with what was seen last and record loads and unloads; 0 or -1. */
int agent_modwatch_poll(const struct agent_cfg *c, struct agent_modwatch *w);

#endif
