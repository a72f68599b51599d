/*
 * agent_ship.c - the shipper: closed spool files into outbox batches, and
 * batches to aidcd's POST /api/v1/audit/commands (see agent.h, docs/agent.md).
 *
 * The spool (AIDC_AGENT_SPOOL), the only hand-over between the writers
 * (agent.c) and the shipper:
 *
 *   u<uid>.ndjson      the current file of one user: one NDJSON line per
 *                      record, each appended by one write() while holding the
 *                      file's flock
 *   c<ms>-u<uid>-<x>.ndjson  a closed file: renamed from a current one, by
 *                      its writer when it grows large or by the shipper when
 *                      it collects
 *   outbox/b<ms>-<n>-<x>.ndjson  batches made from closed files: each fits
 *                      one request (BATCH_RECORDS, BATCH_BYTES) and is deleted
 *                      only after a 2xx answer
 *   rejected/          batches the server refused (with .problem.json) and
 *                      lines that were not records (.invalid): kept, never resent
 *   state/             the watchers' positions
 *
 * Invariants: a line is never changed once written, so a resend is
 * byte-identical and the server counts it as a duplicate (record_id and ts);
 * a closed file is removed only after its lines are fsync'd into the outbox;
 * a writer that finds its file renamed under it (the shipper took it between
 * its open and its lock) writes to a fresh one instead, so no line lands in a
 * file the shipper has already read. A pass holds outbox/.lock, so a manual
 * `ship --once` and the service do not send the same batch twice.
 */
#include "agent.h"

#include "agent_parse.h"
#include "lib/secfile.h"
#include "lib/xalloc.h"

#include <curl/curl.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define BATCH_RECORDS   10000u      /* the server's limit per request */
#define BATCH_BYTES     (4u << 20)  /* below the server's 5 MiB, with room to spare */
#define MAX_LINE        (1u << 20)  /* no honest record is longer */
#define MAX_FILE        (64u << 20) /* a closed file larger than this is not read */
#define MAX_ANSWER      (64u << 10) /* bytes of an answer kept (problem details) */
#define BACKOFF_MAX     300.0       /* seconds between attempts at most */
#define RETRY_AFTER_MAX 3600L

/* ---- collect: closed spool files into outbox batches --------------------------------- */

struct outbox {
    char dir[PATH_MAX];
    char path[PATH_MAX];
    int fd;
    size_t records, bytes;
    unsigned seq;
};

static int outbox_close(struct outbox *ob)
{
    if (ob->fd < 0)
        return 0;
    int rc = fsync(ob->fd) == 0 ? 0 : -1;
    if (close(ob->fd) != 0)
        rc = -1;
    ob->fd = -1;
    return rc;
}

static int outbox_add(struct outbox *ob, const char *line, size_t len)
{
    if (ob->fd >= 0 && (ob->records + 1 > BATCH_RECORDS || ob->bytes + len > BATCH_BYTES))
        if (outbox_close(ob) != 0)
            return -1;
    if (ob->fd < 0) {
        unsigned char raw[4];
        if (agent_random(raw, sizeof raw) != 0 ||
            agent_pathf(ob->path, sizeof ob->path, "%s/b%013lld-%04u-%02x%02x%02x%02x.ndjson",
                        ob->dir, (long long)agent_now_ms(), ob->seq++ % 10000, raw[0], raw[1],
                        raw[2], raw[3]) != 0)
            return -1;
        ob->fd = open(ob->path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
        if (ob->fd < 0)
            return -1;
        ob->records = ob->bytes = 0;
    }
    if (agent_write_all(ob->fd, line, len) != 0)
        return -1;
    ob->records++;
    ob->bytes += len;
    return 0;
}

/* What is wrong with a line of a closed file, or NULL when it is a record. */
static const char *line_problem(const char *line, size_t len, bool check_uid, uid_t owner)
{
    if (len > MAX_LINE)
        return "longer than a record can be";
    if (len == 0 || line[len - 1] != '\n')
        return "cut short (no end of line)";
    json_t *j = json_loadb(line, len, JSON_REJECT_DUPLICATES, NULL);
    const char *why = NULL;
    if (!json_is_object(j))
        why = "not a JSON object";
    else if (check_uid && (!json_is_integer(json_object_get(j, "uid")) ||
                           json_integer_value(json_object_get(j, "uid")) != (json_int_t)owner))
        why = "its uid is not the owner of the file";
    json_decref(j);
    return why;
}

/* Move the file at path into rejected/ as name; logs. */
static void reject_file(const struct agent_cfg *c, const char *path, const char *name,
                        const char *why)
{
    char dir[PATH_MAX], to[PATH_MAX];
    if (agent_subdir(c, "rejected", dir, sizeof dir) != 0 ||
        agent_pathf(to, sizeof to, "%s/%s", dir, name) != 0 || rename(path, to) != 0) {
        agent_log("error", NULL, "cannot move %s to rejected/: %s", path, strerror(errno));
        return;
    }
    agent_log("warn", json_pack("{s:s}", "file", to), "%s: moved to rejected/", why);
}

/*
 * One closed file into the outbox: lock it once (every writer that opened it
 * before it was renamed has finished), read it, copy its records, keep its
 * other lines in rejected/<name>.invalid, fsync, remove it. 0 or -1.
 */
static int collect_file(const struct agent_cfg *c, struct outbox *ob, const char *name)
{
    char path[PATH_MAX];
    if (agent_pathf(path, sizeof path, "%s/%s", c->spool, name) != 0)
        return -1;
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        if (fd >= 0 || errno == ELOOP) { /* a link or a fifo someone planted */
            agent_log("warn", json_pack("{s:s}", "file", path), "not a regular file: removed");
            unlink(path);
        }
        if (fd >= 0)
            close(fd);
        return 0;
    }
    while (flock(fd, LOCK_EX) != 0 && errno == EINTR)
        ;
    close(fd);
    size_t len = 0;
    char *text = agent_read_file(path, MAX_FILE, &len);
    if (!text) {
        reject_file(c, path, name, "a spool file that cannot be read or is too large");
        return 0;
    }
    bool check_uid = st.st_uid != 0 && st.st_uid != geteuid();
    struct {
        char *p;
        size_t len;
    } bad = {NULL, 0};
    int nbad = 0, rc = 0;
    for (size_t off = 0; off < len && rc == 0;) {
        const char *nl = memchr(text + off, '\n', len - off);
        size_t n = nl ? (size_t)(nl - (text + off)) + 1 : len - off;
        const char *why = line_problem(text + off, n, check_uid, st.st_uid);
        if (!why) {
            rc = outbox_add(ob, text + off, n);
        } else {
            if (nbad++ == 0)
                agent_log("warn", json_pack("{s:s}", "file", name), "dropping a line: %s", why);
            bad.p = xrealloc(bad.p, bad.len + n + 1);
            memcpy(bad.p + bad.len, text + off, n);
            bad.len += n;
        }
        off += n;
    }
    free(text);
    char rej[PATH_MAX], dir[PATH_MAX];
    if (rc == 0 && nbad > 0 &&
        (agent_subdir(c, "rejected", dir, sizeof dir) != 0 ||
         agent_pathf(rej, sizeof rej, "%s/%s.invalid", dir, name) != 0 ||
         agent_write_file(rej, bad.p, bad.len) != 0))
        rc = -1;
    free(bad.p);
    /* the records must be on disk in the outbox before their source goes */
    if (rc == 0 && ob->fd >= 0 && fsync(ob->fd) != 0)
        rc = -1;
    int dfd = rc == 0 ? open(ob->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC) : -1;
    if (dfd >= 0) {
        if (fsync(dfd) != 0)
            rc = -1;
        close(dfd);
    }
    if (rc == 0 && unlink(path) != 0 && errno != ENOENT)
        rc = -1;
    if (rc != 0)
        agent_log("error", json_pack("{s:s}", "file", path),
                  "cannot move the file to the outbox: %s", strerror(errno));
    else if (nbad > 0)
        agent_log("warn", json_pack("{s:s,s:i}", "file", rej, "lines", nbad),
                  "lines that are not records kept in rejected/");
    return rc;
}

static int name_cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Names in dir starting with prefix and ending ".ndjson", sorted; count in *n. */
static char **list_dir(const char *dir, char prefix, size_t *n)
{
    *n = 0;
    DIR *d = opendir(dir);
    if (!d) {
        agent_log("error", NULL, "cannot read %s: %s", dir, strerror(errno));
        return NULL;
    }
    char **names = NULL;
    size_t cap = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        size_t len = strlen(e->d_name);
        if (e->d_name[0] != prefix || len < 8 || strcmp(e->d_name + len - 7, ".ndjson") != 0)
            continue;
        if (*n == cap) {
            cap = cap ? cap * 2 : 16;
            names = xreallocarray(names, cap, sizeof *names);
        }
        names[(*n)++] = xstrdup(e->d_name);
    }
    closedir(d);
    if (*n > 1)
        qsort(names, *n, sizeof *names, name_cmp);
    return names;
}

static void free_names(char **names, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(names[i]);
    free(names);
}

/* Close every non-empty current file, then move every closed file into the outbox. */
static int spool_collect(const struct agent_cfg *c)
{
    struct outbox ob = {.fd = -1};
    if (agent_subdir(c, "outbox", ob.dir, sizeof ob.dir) != 0)
        return -1;
    size_t n;
    char **cur = list_dir(c->spool, 'u', &n);
    for (size_t i = 0; i < n; i++) {
        char from[PATH_MAX], name[128], to[PATH_MAX];
        struct stat st;
        if (agent_pathf(from, sizeof from, "%s/%s", c->spool, cur[i]) != 0 ||
            lstat(from, &st) != 0 || st.st_size == 0)
            continue;
        if (agent_closed_name(name, sizeof name, (unsigned)st.st_uid) != 0 ||
            agent_pathf(to, sizeof to, "%s/%s", c->spool, name) != 0 || rename(from, to) != 0)
            agent_log("error", NULL, "cannot close %s: %s", from, strerror(errno));
    }
    free_names(cur, n);
    char **closed = list_dir(c->spool, 'c', &n);
    int rc = closed || n == 0 ? 0 : -1;
    for (size_t i = 0; i < n && rc == 0; i++)
        rc = collect_file(c, &ob, closed[i]);
    free_names(closed, n);
    if (outbox_close(&ob) != 0)
        rc = -1;
    return rc;
}

/* ---- send: outbox batches to aidcd ----------------------------------------------------- */

struct http {
    CURL *curl;
    struct curl_slist *headers;
    char url[1200];
    char answer[MAX_ANSWER + 1];
    size_t answer_len;
    char retry_after[64];
};

static size_t on_body(char *p, size_t size, size_t n, void *arg)
{
    struct http *h = arg;
    size_t len = size * n, room = MAX_ANSWER - h->answer_len;
    memcpy(h->answer + h->answer_len, p, len < room ? len : room);
    h->answer_len += len < room ? len : room;
    h->answer[h->answer_len] = '\0';
    return len;
}

static size_t on_header(char *p, size_t size, size_t n, void *arg)
{
    struct http *h = arg;
    size_t len = size * n;
    if (len > 12 && strncasecmp(p, "Retry-After:", 12) == 0) {
        size_t v = len - 12 < sizeof h->retry_after - 1 ? len - 12 : sizeof h->retry_after - 1;
        memcpy(h->retry_after, p + 12, v);
        h->retry_after[v] = '\0';
        h->retry_after[strcspn(h->retry_after, "\r\n")] = '\0';
    }
    return len;
}

/*
 * The token from c->token_file (malloc'd, to be wiped), or NULL (logged).
 * Refused when group or others may read or write the file, or another user
 * owns it (lib/secfile.h): a token others can read is a token others have.
 */
static char *token_read(const struct agent_cfg *c)
{
    char *tok = NULL, buf[4096];
    ssize_t got = -1;
    char why[1400];
    int fd = secfile_open(c->token_file, why, sizeof why);
    if (fd < 0) {
        agent_log("error", NULL, "the token file: %s%s", why,
                  errno == EPERM ? ": refusing to use it" : "");
        goto out;
    }
    while ((got = read(fd, buf, sizeof buf - 1)) < 0 && errno == EINTR)
        ;
    if (got < 0)
        goto out;
    size_t len = (size_t)got;
    while (len > 0 && (buf[len - 1] == '\n' || buf[len - 1] == '\r' || buf[len - 1] == ' '))
        len--;
    bool ok = len > 0;
    for (size_t i = 0; i < len; i++)
        ok = ok && buf[i] > ' ' && buf[i] < 0x7f; /* nothing that could end a header */
    if (!ok)
        agent_log("error", NULL, "the token file %s does not hold a token", c->token_file);
    else
        tok = xstrndup(buf, len);
out:
    explicit_bzero(buf, sizeof buf);
    if (fd >= 0)
        close(fd);
    return tok;
}

#define SETOPT(h, opt, val) (curl_easy_setopt((h), (opt), (val)) == CURLE_OK)

static void http_close(struct http *h)
{
    if (h->curl)
        curl_easy_cleanup(h->curl);
    curl_slist_free_all(h->headers);
    h->curl = NULL;
    h->headers = NULL;
}

/* Ready a handle for POSTs of NDJSON to the ingest endpoint; 0 or -1 (logged). */
static int http_open(const struct agent_cfg *c, struct http *h)
{
    memset(h, 0, sizeof *h);
    size_t ul = strlen(c->url);
    while (ul > 0 && c->url[ul - 1] == '/')
        ul--;
    if (ul == 0 || (strncmp(c->url, "https://", 8) != 0 && strncmp(c->url, "http://", 7) != 0)) {
        agent_log("error", NULL, "AIDC_AGENT_URL must be an http(s) URL of aidcd");
        return -1;
    }
    if (agent_pathf(h->url, sizeof h->url, "%.*s/api/v1/audit/commands", (int)ul, c->url) != 0)
        return -1;
    char *tok = token_read(c);
    if (!tok)
        return -1;
    size_t alen = strlen(tok) + 32;
    char *auth = xmalloc(alen);
    int w = snprintf(auth, alen, "Authorization: Bearer %s", tok);
    explicit_bzero(tok, strlen(tok));
    free(tok);
    struct curl_slist *l;
    /* libcurl keeps its own copy of the header; ours is wiped at once */
    bool ok = w > 0 && (size_t)w < alen && (l = curl_slist_append(NULL, auth)) &&
              (h->headers = l,
               (l = curl_slist_append(h->headers, "Content-Type: application/x-ndjson"))) &&
              (l = curl_slist_append(l, "Accept: application/json, application/problem+json")) &&
              (l = curl_slist_append(l, "Expect:"));
    explicit_bzero(auth, alen);
    free(auth);
    h->curl = ok ? curl_easy_init() : NULL;
    ok = h->curl && SETOPT(h->curl, CURLOPT_URL, h->url) &&
         SETOPT(h->curl, CURLOPT_HTTPHEADER, h->headers) && SETOPT(h->curl, CURLOPT_NOSIGNAL, 1L) &&
         SETOPT(h->curl, CURLOPT_POST, 1L) && SETOPT(h->curl, CURLOPT_CONNECTTIMEOUT, 10L) &&
         SETOPT(h->curl, CURLOPT_TIMEOUT, 120L) &&
         SETOPT(h->curl, CURLOPT_USERAGENT,
                "aidc-agent/"
                "0.1") &&
         SETOPT(h->curl, CURLOPT_PROTOCOLS_STR, "http,https") &&
         SETOPT(h->curl, CURLOPT_WRITEFUNCTION, on_body) && SETOPT(h->curl, CURLOPT_WRITEDATA, h) &&
         SETOPT(h->curl, CURLOPT_HEADERFUNCTION, on_header) &&
         SETOPT(h->curl, CURLOPT_HEADERDATA, h) &&
         (c->ca_file[0] == '\0' || SETOPT(h->curl, CURLOPT_CAINFO, c->ca_file));
    if (!ok) {
        agent_log("error", NULL, "cannot set up libcurl");
        http_close(h);
        return -1;
    }
    if (strncmp(c->url, "http://", 7) == 0 && strncmp(c->url, "http://127.", 11) != 0 &&
        strncmp(c->url, "http://localhost", 16) != 0 && strncmp(c->url, "http://[::1]", 12) != 0)
        agent_log("warn", NULL,
                  "AIDC_AGENT_URL is plain http: the token crosses the network unencrypted");
    return 0;
}

/* POST body; the status (0 when no answer came, logged). */
static long http_post(struct http *h, const char *body, size_t len)
{
    h->answer_len = 0;
    h->answer[0] = h->retry_after[0] = '\0';
    long status = 0;
    if (!SETOPT(h->curl, CURLOPT_POSTFIELDS, body) ||
        !SETOPT(h->curl, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len))
        return 0;
    CURLcode rc = curl_easy_perform(h->curl);
    if (rc != CURLE_OK) {
        agent_log("warn", json_pack("{s:s}", "url", h->url), "cannot reach aidcd: %s",
                  curl_easy_strerror(rc));
        return 0;
    }
    if (curl_easy_getinfo(h->curl, CURLINFO_RESPONSE_CODE, &status) != CURLE_OK)
        return 0;
    return status;
}

/* The answer as JSON (new): parsed, or as text when it is not JSON; NULL when empty. */
static json_t *answer_json(const struct http *h)
{
    if (h->answer_len == 0)
        return NULL;
    json_t *ans = json_loads(h->answer, 0, NULL);
    if (!ans) {
        char *clean = agent_parse_utf8_clean(h->answer, h->answer_len, MAX_ANSWER, NULL);
        ans = json_string(clean);
        free(clean);
    }
    return ans;
}

/* Fields for a log line about an answer: the batch, the status, the problem details. */
static json_t *answer_fields(const struct http *h, long status, const char *file, size_t records)
{
    return json_pack("{s:s,s:I,s:i,s:o?}", "file", file, "records", (json_int_t)records, "status",
                     (int)status, "answer", answer_json(h));
}

/* Move a refused batch to rejected/ with the server's answer beside it. */
static void reject_batch(const struct agent_cfg *c, const struct http *h, long status,
                         const char *path, const char *name)
{
    char dir[PATH_MAX], problem[PATH_MAX];
    if (agent_subdir(c, "rejected", dir, sizeof dir) == 0 &&
        agent_pathf(problem, sizeof problem, "%s/%s.problem.json", dir, name) == 0) {
        json_t *ans = answer_json(h);
        json_t *doc = json_pack("{s:i,s:o?}", "status", (int)status, "answer", ans);
        char *text = doc ? json_dumps(doc, JSON_INDENT(2)) : NULL;
        json_decref(doc);
        if (!text || agent_write_file(problem, text, strlen(text)) != 0)
            agent_log("error", NULL, "cannot write %s", problem);
        free(text);
    }
    reject_file(c, path, name, "aidcd refused the batch");
}

/*
 * Send every outbox batch, oldest first. 0 when the outbox is empty after
 * (sent or rejected), 1 when a batch must be tried again (*retry_after set
 * from the answer, -1 when none), -1 on a local error.
 */
static int outbox_send(const struct agent_cfg *c, long *retry_after)
{
    char dir[PATH_MAX];
    *retry_after = -1;
    if (agent_subdir(c, "outbox", dir, sizeof dir) != 0)
        return -1;
    size_t n;
    char **names = list_dir(dir, 'b', &n);
    struct http *h = NULL;
    int rc = names || n == 0 ? 0 : -1;
    for (size_t i = 0; i < n && rc == 0 && !agent_stop; i++) {
        char path[PATH_MAX];
        size_t len = 0, nrec = 0;
        char *text = agent_pathf(path, sizeof path, "%s/%s", dir, names[i]) == 0
                         ? agent_read_file(path, BATCH_BYTES + MAX_LINE, &len)
                         : NULL;
        size_t end = text ? agent_parse_batch_end(text, len, 0, SIZE_MAX, SIZE_MAX, &nrec) : 0;
        if (!text || nrec == 0) {
            if (text) /* nothing whole in it (a collector died before its first line) */
                unlink(path);
            else
                reject_file(c, path, names[i], "an outbox file that cannot be read");
            free(text);
            continue;
        }
        if (!h) {
            h = xcalloc(1, sizeof *h);
            if (http_open(c, h) != 0) {
                free(text);
                free(h);
                h = NULL;
                rc = -1;
                break;
            }
        }
        long status = http_post(h, text, end);
        free(text);
        switch (agent_parse_verdict(status)) {
        case AGENT_SENT: {
            json_t *ans = json_loads(h->answer, 0, NULL);
            agent_log("info",
                      json_pack("{s:s,s:I,s:I,s:I}", "file", names[i], "records", (json_int_t)nrec,
                                "accepted", json_integer_value(json_object_get(ans, "accepted")),
                                "duplicates",
                                json_integer_value(json_object_get(ans, "duplicates"))),
                      "batch sent");
            json_decref(ans);
            if (unlink(path) != 0)
                agent_log("error", NULL, "cannot remove %s: %s", path, strerror(errno));
            break;
        }
        case AGENT_REJECT:
            agent_log("warn", answer_fields(h, status, names[i], nrec), "aidcd refused a batch");
            reject_batch(c, h, status, path, names[i]);
            break;
        case AGENT_RETRY:
            if (status != 0)
                agent_log("warn", answer_fields(h, status, names[i], nrec),
                          "aidcd did not take the batch: will try again");
            *retry_after =
                agent_parse_retry_after(h->retry_after[0] ? h->retry_after : NULL, time(NULL));
            rc = 1;
            break;
        }
    }
    if (h) {
        http_close(h);
        free(h);
    }
    free_names(names, n);
    return rc;
}

/* One pass: collect, then send; under the outbox lock so two shippers do not race. */
static int ship_pass(const struct agent_cfg *c, long *retry_after)
{
    char dir[PATH_MAX], lock[PATH_MAX];
    *retry_after = -1;
    if (agent_subdir(c, "outbox", dir, sizeof dir) != 0 ||
        agent_pathf(lock, sizeof lock, "%s/.lock", dir) != 0)
        return -1;
    int fd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0)
        return -1;
    while (flock(fd, LOCK_EX) != 0)
        if (errno != EINTR) {
            close(fd);
            return -1;
        }
    int rc = spool_collect(c);
    int sent = outbox_send(c, retry_after);
    close(fd);
    return sent != 0 ? sent : rc;
}

/* ship [--once]; `run` is ship with the modules watcher in the same loop. */
int agent_ship_main(const struct agent_cfg *c, int argc, char **argv, bool modules)
{
    bool once = false;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--once") == 0)
            once = true;
        else {
            fprintf(stderr, "aidc-agent %s: unknown option %s\n", argv[0], argv[i]);
            return AGENT_EXIT_USAGE;
        }
    }
    char *end;
    long interval = strtol(c->interval, &end, 10);
    if (*end != '\0' || interval < 1 || interval > 3600) {
        agent_log("error", NULL, "AIDC_AGENT_INTERVAL must be 1..3600 seconds");
        return AGENT_EXIT_USAGE;
    }
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
        agent_log("error", NULL, "curl_global_init failed");
        return 1;
    }
    long ra;
    if (once) {
        int rc = ship_pass(c, &ra);
        curl_global_cleanup();
        return rc == 0 ? 0 : rc > 0 ? AGENT_EXIT_TEMPFAIL : 1;
    }
    struct agent_modwatch *mw = modules ? agent_modwatch_new() : NULL;
    double backoff = 0, next_ship = 0, next_mod = 0;
    agent_log("info", NULL, "shipping to %s every %ld s%s", c->url, interval,
              modules ? ", watching kernel modules" : "");
    while (!agent_stop) {
        double now = (double)agent_now_ms() / 1000.0;
        if (mw && now >= next_mod) {
            agent_modwatch_poll(c, mw);
            next_mod = now + 5;
        }
        if (now >= next_ship) {
            int rc = ship_pass(c, &ra);
            double wait = (double)interval;
            if (rc != 0) {
                unsigned char r;
                backoff = backoff > 0 ? backoff * 2 : 2;
                backoff = backoff > BACKOFF_MAX ? BACKOFF_MAX : backoff;
                wait = backoff * (0.8 + 0.4 * (agent_random(&r, 1) == 0 ? r / 255.0 : 0.5));
                double asked = (double)(ra > RETRY_AFTER_MAX ? RETRY_AFTER_MAX : ra);
                if (asked > wait)
                    wait = asked;
                agent_log("info", NULL, "next attempt in %.0f s", wait);
            } else {
                backoff = 0;
            }
            next_ship = (double)agent_now_ms() / 1000.0 + wait;
        }
        double until = mw && next_mod < next_ship ? next_mod : next_ship;
        agent_nap(until - (double)agent_now_ms() / 1000.0);
    }
    agent_modwatch_free(mw);
    curl_global_cleanup();
    agent_log("info", NULL, "stopped");
    return 0;
}
