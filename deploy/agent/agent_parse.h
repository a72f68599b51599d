/*
 * agent_parse.h - the node agent's pure parsing: no files, no network, no
 * clock (the caller passes "now"), so each piece is unit-tested on its own
 * (tests/unit/test_agent_parse.c).
 *
 * It owns: text cleanup for records (valid UTF-8, length limits), timestamps,
 * the HTTP answer rules of the shipper (what is sent, retried, rejected;
 * Retry-After), batching of NDJSON lines, auditd EXECVE events, the
 * /proc/modules diff, and the image-pull lines of docker and containerd.
 * Everything returned as char * is malloc'd (xmalloc) and the caller frees it.
 */
#ifndef AIDC_AGENT_PARSE_H
#define AIDC_AGENT_PARSE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

/* ---- text ---------------------------------------------------------------------- */

/*
 * s[0..n) as valid UTF-8 of at most max bytes: each byte that is not part of
 * a valid sequence becomes the four characters "\xNN" (so nothing is lost
 * silently, as auditd's own encoding), and the text is cut on a character
 * boundary; *cut (may be NULL) tells whether it was. Never NULL.
 */
char *agent_parse_utf8_clean(const char *s, size_t n, size_t max, bool *cut);

/* "2026-12-02T08:00:00.123Z" for ms since the epoch; 0, or -1 when buf is too small. */
int agent_parse_ts_format(int64_t ms, char *buf, size_t n);

/* Whether s is a UUID in its canonical text form (8-4-4-4-12 hex digits). */
bool agent_parse_is_uuid(const char *s);

/* 64-bit FNV-1a of s: a stable, short stand-in for a long name in record ids. */
uint64_t agent_parse_fnv64(const char *s);

/* ---- shipping ------------------------------------------------------------------ */

enum agent_verdict {
    AGENT_SENT,   /* 2xx: the batch is stored, the file may go */
    AGENT_RETRY,  /* no answer, 5xx, 429, or a 4xx that is not the batch's fault */
    AGENT_REJECT, /* the server refuses the batch itself: quarantine it */
};

/*
 * What an answer means for a batch. status 0 = no answer. 401, 403 (token
 * revoked or lacking audit:ingest), 404, 405 (an aidcd without the
 * endpoint), 408, 425 and 429 are retried: they are not the data's fault, and
 * quarantining every batch of a misconfigured node would lose its records.
 */
enum agent_verdict agent_parse_verdict(long status);

/*
 * Seconds to wait from a Retry-After value: delta-seconds or an HTTP-date
 * (IMF-fixdate, compared with now). -1 when v is NULL or not understood; a
 * date in the past gives 0.
 */
long agent_parse_retry_after(const char *v, time_t now);

/*
 * The end of the next batch in buf[0..len) starting at off: whole lines
 * ("...\n") only, at most max_records of them and max_bytes in all, but
 * always at least one line (a single line longer than max_bytes makes a
 * batch of its own, which the server then refuses). *nrec gets the number of
 * lines. A last line without its "\n" is not taken (returns off when only
 * such a line is left).
 */
size_t agent_parse_batch_end(const char *buf, size_t len, size_t off, size_t max_records,
                             size_t max_bytes, size_t *nrec);

/* ---- auditd -------------------------------------------------------------------- */

/*
 * The header of an audit.log line: `type=EXECVE msg=audit(1700000000.123:456): ...`.
 * type is copied (cut to fit), *ms and *serial are the event's time and
 * serial, *body points just after "): ". 0, or -1 when the line is not one.
 */
int agent_parse_audit_header(const char *line, char *type, size_t type_size, int64_t *ms,
                             unsigned long *serial, const char **body);

/*
 * The string field key of a record body (a0, cwd, exe, ...): a quoted value
 * as it is, an unquoted one decoded from hex (the kernel hex-encodes strings
 * holding spaces, quotes or control characters). *len gets its length (the
 * value may hold NUL bytes). NULL when absent, "(null)" or malformed. Fields
 * after the enriched-format separator (0x1d) are not looked at.
 */
char *agent_parse_audit_str(const char *body, const char *key, size_t *len);

/* The numeric field key (uid=0, ses=3): 0 and *out, or -1 when absent or not a number. */
int agent_parse_audit_num(const char *body, const char *key, long long *out);

/* One program execution, put together from an event's records. */
struct agent_exec {
    int64_t ms;               /* the event's time */
    unsigned long serial;     /* the event's serial (unique per boot with ms) */
    long long uid, auid, ses; /* -1 when the SYSCALL record was not seen */
    char *cwd;                /* from the CWD record, or NULL */
    char **argv;              /* argc entries, NULL for an argument never seen */
    size_t *arglen;           /* length of each argv entry */
    size_t argc;
    size_t bytes; /* argument bytes kept (capped, see agent_parse.c) */
    bool have_execve;
};

struct agent_audit;
typedef void (*agent_exec_fn)(const struct agent_exec *e, void *arg);

struct agent_audit *agent_parse_audit_new(void);
void agent_parse_audit_free(struct agent_audit *a);
/*
 * Feed one line of audit.log (without its "\n"). Records of one event share
 * its serial and may interleave with other events: an event is complete at
 * its PROCTITLE or EOE record; events that never see one are emitted when 16
 * newer events are pending, or at agent_parse_audit_flush. Only events with
 * an EXECVE record reach emit; others are dropped. Lines that are not audit
 * records are ignored.
 */
void agent_parse_audit_feed(struct agent_audit *a, const char *line, agent_exec_fn emit, void *arg);
/* How many events are waiting for their last record. */
size_t agent_parse_audit_pending(const struct agent_audit *a);
/* Emit every pending event (at the end of a file). */
void agent_parse_audit_flush(struct agent_audit *a, agent_exec_fn emit, void *arg);
/*
 * The command line of e: the arguments joined by spaces, each one quoted
 * for a POSIX shell when it needs it ('it'\''s'); arguments never seen are
 * "?". Not cleaned: pass the result through agent_parse_utf8_clean.
 */
char *agent_parse_exec_command(const struct agent_exec *e, size_t *len);

/* ---- /proc/modules ------------------------------------------------------------- */

struct agent_module {
    char name[64];
    unsigned long size;
    char taint[16]; /* "(POE)" without the parentheses, or "" */
};

/*
 * Parse the text of /proc/modules into a name-sorted array (*out, caller
 * frees). Returns the count; malformed lines are skipped.
 */
size_t agent_parse_modules(const char *text, struct agent_module **out);

typedef void (*agent_module_fn)(const struct agent_module *m, bool loaded, void *arg);
/* Call fn for each module in cur but not old (loaded) and in old but not cur (unloaded). */
void agent_parse_modules_diff(const struct agent_module *old, size_t nold,
                              const struct agent_module *cur, size_t ncur, agent_module_fn fn,
                              void *arg);

/* ---- image pulls --------------------------------------------------------------- */

/*
 * A line of `docker events --format '{{json .}}'`: 0 with *image (the
 * reference pulled) and *ms for an image pull, -1 for anything else.
 */
int agent_parse_docker_event(const char *line, char **image, int64_t *ms);

/*
 * A line of `journalctl -o json -u containerd`: 0 with *image and *ms when its
 * MESSAGE is the CRI plugin's `PullImage "REF" returns image reference ...`
 * (a finished pull, as kubelet asks for it), -1 for anything else.
 */
int agent_parse_journal_pull(const char *line, char **image, int64_t *ms);

#endif
