/*
 * agent_parse.c - the node agent's pure parsing (see agent_parse.h).
 *
 * Nothing here touches a file, the network or the clock. Inputs come from
 * untrusted places (a user's shell, audit.log, docker's output): every scan
 * is bounded by the input's length, and sizes kept per auditd event are
 * capped so one huge command line cannot take the agent's memory.
 */
#include "agent_parse.h"

#include "lib/hex.h"
#include "lib/xalloc.h"

#include <ctype.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_PENDING   16           /* auditd events waiting for their last record */
#define MAX_ARGS      4096         /* arguments kept per execve */
#define MAX_ARG_BYTES (128u << 10) /* argument bytes kept per execve (commands: 64 KiB) */

/* ---- a growable buffer ------------------------------------------------------------ */

struct buf {
    char *p;
    size_t len, cap;
};

static void buf_add(struct buf *b, const char *s, size_t n)
{
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 64;
        while (cap < b->len + n + 1)
            cap *= 2;
        b->p = xrealloc(b->p, cap);
        b->cap = cap;
    }
    memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = '\0';
}

/* ---- text ------------------------------------------------------------------------ */

/* Length of the valid UTF-8 sequence at s[0..n), 0 when it is not one (or is NUL). */
static size_t utf8_seq(const unsigned char *s, size_t n)
{
    unsigned char c = s[0];
    if (c >= 0x01 && c <= 0x7f)
        return 1;
    size_t need;
    unsigned char lo = 0x80, hi = 0xbf;
    if (c >= 0xc2 && c <= 0xdf)
        need = 1;
    else if (c >= 0xe0 && c <= 0xef) {
        need = 2;
        if (c == 0xe0)
            lo = 0xa0;
        else if (c == 0xed)
            hi = 0x9f; /* no UTF-16 surrogates */
    } else if (c >= 0xf0 && c <= 0xf4) {
        need = 3;
        if (c == 0xf0)
            lo = 0x90;
        else if (c == 0xf4)
            hi = 0x8f;
    } else
        return 0;
    if (need >= n)
        return 0;
    if (s[1] < lo || s[1] > hi)
        return 0;
    for (size_t i = 2; i <= need; i++)
        if (s[i] < 0x80 || s[i] > 0xbf)
            return 0;
    return need + 1;
}

char *agent_parse_utf8_clean(const char *s, size_t n, size_t max, bool *cut)
{
    struct buf b = {0};
    buf_add(&b, "", 0);
    const unsigned char *u = (const unsigned char *)s;
    bool was_cut = false;
    for (size_t i = 0; i < n;) {
        size_t k = utf8_seq(u + i, n - i);
        char esc[8];
        const char *piece = s + i;
        size_t plen = k;
        if (k == 0) {
            snprintf(esc, sizeof esc, "\\x%02x", u[i]);
            piece = esc;
            plen = 4;
            k = 1;
        }
        if (b.len + plen > max) {
            was_cut = true;
            break;
        }
        buf_add(&b, piece, plen);
        i += k;
    }
    if (cut)
        *cut = was_cut;
    return b.p;
}

int agent_parse_ts_format(int64_t ms, char *buf, size_t n)
{
    int64_t secs = ms / 1000, rem = ms % 1000;
    if (rem < 0) {
        rem += 1000;
        secs--;
    }
    time_t t = (time_t)secs;
    struct tm tm;
    if (!gmtime_r(&t, &tm))
        return -1;
    char day[32];
    if (strftime(day, sizeof day, "%Y-%m-%dT%H:%M:%S", &tm) == 0)
        return -1;
    int w = snprintf(buf, n, "%s.%03dZ", day, (int)rem);
    return w < 0 || (size_t)w >= n ? -1 : 0;
}

bool agent_parse_is_uuid(const char *s)
{
    for (int i = 0; i < 36; i++) {
        bool dash = i == 8 || i == 13 || i == 18 || i == 23;
        if (dash ? s[i] != '-' : !isxdigit((unsigned char)s[i]))
            return false;
    }
    return s[36] == '\0';
}

uint64_t agent_parse_fnv64(const char *s)
{
    uint64_t h = 14695981039346656037ULL;
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        h ^= *p;
        h *= 1099511628211ULL;
    }
    return h;
}

/* ---- shipping ---------------------------------------------------------------------- */

enum agent_verdict agent_parse_verdict(long status)
{
    if (status >= 200 && status < 300)
        return AGENT_SENT;
    if (status >= 400 && status < 500) {
        switch (status) {
        case 401:
        case 403:
        case 404:
        case 405:
        case 408:
        case 425:
        case 429:
            return AGENT_RETRY;
        default:
            return AGENT_REJECT;
        }
    }
    return AGENT_RETRY; /* 0 (no answer), 1xx, 3xx (we follow no redirects), 5xx */
}

long agent_parse_retry_after(const char *v, time_t now)
{
    if (!v)
        return -1;
    while (*v == ' ' || *v == '\t')
        v++;
    if (isdigit((unsigned char)*v)) {
        char *end;
        long secs = strtol(v, &end, 10);
        while (*end == ' ' || *end == '\t' || *end == '\r' || *end == '\n')
            end++;
        return *end == '\0' && secs >= 0 ? secs : -1;
    }
    struct tm tm;
    memset(&tm, 0, sizeof tm);
    const char *end = strptime(v, "%a, %d %b %Y %H:%M:%S GMT", &tm);
    if (!end)
        return -1;
    time_t at = timegm(&tm);
    if (at == (time_t)-1)
        return -1;
    return at > now ? (long)(at - now) : 0;
}

size_t agent_parse_batch_end(const char *buf, size_t len, size_t off, size_t max_records,
                             size_t max_bytes, size_t *nrec)
{
    size_t end = off, n = 0;
    while (end < len && n < max_records) {
        const char *nl = memchr(buf + end, '\n', len - end);
        if (!nl)
            break;
        size_t next = (size_t)(nl - buf) + 1;
        if (n > 0 && next - off > max_bytes)
            break;
        end = next;
        n++;
    }
    *nrec = n;
    return end;
}

/* ---- auditd: fields ---------------------------------------------------------------- */

/*
 * The next "key=value" of an audit record body from p: key and value spans
 * (a quoted value without its quotes, *quoted set). NULL at the end or at
 * the enriched-format separator.
 */
static const char *next_field(const char *p, const char **key, size_t *klen, const char **val,
                              size_t *vlen, bool *quoted)
{
    for (;;) {
        while (*p == ' ')
            p++;
        if (*p == '\0' || *p == '\x1d')
            return NULL;
        const char *k = p;
        while (*p && *p != '=' && *p != ' ' && *p != '\x1d')
            p++;
        if (*p != '=')
            continue; /* a bare word (e.g. a message text): skip it */
        *key = k;
        *klen = (size_t)(p - k);
        p++;
        if (*p == '"') {
            const char *q = strchr(p + 1, '"');
            if (!q)
                return NULL;
            *val = p + 1;
            *vlen = (size_t)(q - p - 1);
            *quoted = true;
            return q + 1;
        }
        if (*p == '\'') { /* msg='...' of user-space records */
            const char *q = strchr(p + 1, '\'');
            if (!q)
                return NULL;
            *val = p + 1;
            *vlen = (size_t)(q - p - 1);
            *quoted = true;
            return q + 1;
        }
        *val = p;
        while (*p && *p != ' ' && *p != '\x1d')
            p++;
        *vlen = (size_t)(p - *val);
        *quoted = false;
        return p;
    }
}

/* A field's value decoded (quoted as it is, else hex) into a new string; NULL when bad. */
static char *field_value(const char *v, size_t n, bool quoted, size_t *len)
{
    if (quoted) {
        *len = n;
        return xstrndup(v, n);
    }
    if (n == 0 || n % 2 != 0)
        return NULL;
    char *out = xmalloc(n / 2 + 1);
    for (size_t i = 0; i < n; i += 2) {
        int hi = hex_digit(v[i]), lo = hex_digit(v[i + 1]);
        if (hi < 0 || lo < 0) {
            free(out);
            return NULL;
        }
        out[i / 2] = (char)(hi * 16 + lo);
    }
    out[n / 2] = '\0';
    *len = n / 2;
    return out;
}

static bool key_is(const char *k, size_t klen, const char *want)
{
    return strlen(want) == klen && memcmp(k, want, klen) == 0;
}

char *agent_parse_audit_str(const char *body, const char *key, size_t *len)
{
    const char *k, *v;
    size_t kl, vl;
    bool quoted;
    for (const char *p = body; (p = next_field(p, &k, &kl, &v, &vl, &quoted));) {
        if (!key_is(k, kl, key))
            continue;
        if (!quoted && vl == 6 && memcmp(v, "(null)", 6) == 0)
            return NULL;
        return field_value(v, vl, quoted, len);
    }
    return NULL;
}

int agent_parse_audit_num(const char *body, const char *key, long long *out)
{
    const char *k, *v;
    size_t kl, vl;
    bool quoted;
    for (const char *p = body; (p = next_field(p, &k, &kl, &v, &vl, &quoted));) {
        if (!key_is(k, kl, key))
            continue;
        char tmp[32];
        if (quoted || vl == 0 || vl >= sizeof tmp)
            return -1;
        memcpy(tmp, v, vl);
        tmp[vl] = '\0';
        char *end;
        long long n = strtoll(tmp, &end, 10);
        if (*end != '\0')
            return -1;
        *out = n;
        return 0;
    }
    return -1;
}

int agent_parse_audit_header(const char *line, char *type, size_t type_size, int64_t *ms,
                             unsigned long *serial, const char **body)
{
    const char *p = line;
    if (strncmp(p, "node=", 5) == 0) { /* name_format: the node first */
        p = strchr(p, ' ');
        if (!p)
            return -1;
        p++;
    }
    if (strncmp(p, "type=", 5) != 0)
        return -1;
    p += 5;
    size_t tl = strcspn(p, " ");
    if (tl == 0 || tl >= type_size || strncmp(p + tl, " msg=audit(", 11) != 0)
        return -1;
    memcpy(type, p, tl);
    type[tl] = '\0';
    p += tl + 11;
    char *end;
    long long secs = strtoll(p, &end, 10);
    /* up to the year 9999: larger would overflow the milliseconds (found by fuzzing) */
    if (end == p || *end != '.' || secs < 0 || secs > 253402300799LL)
        return -1;
    p = end + 1;
    long frac = strtol(p, &end, 10);
    if (end - p != 3 || *end != ':' || frac < 0)
        return -1;
    p = end + 1;
    unsigned long long sn = strtoull(p, &end, 10);
    if (end == p || end[0] != ')' || end[1] != ':')
        return -1;
    *ms = (int64_t)secs * 1000 + frac;
    *serial = (unsigned long)sn;
    *body = end[2] == ' ' ? end + 3 : end + 2;
    return 0;
}

/* ---- auditd: events ---------------------------------------------------------------- */

struct pending {
    struct agent_exec e;
    unsigned long age; /* creation order, to emit the oldest first */
    bool used;
};

struct agent_audit {
    struct pending ev[MAX_PENDING];
    unsigned long clock;
};

struct agent_audit *agent_parse_audit_new(void)
{
    return xcalloc(1, sizeof(struct agent_audit));
}

static void exec_clear(struct agent_exec *e)
{
    for (size_t i = 0; i < e->argc; i++)
        free(e->argv[i]);
    free(e->argv);
    free(e->arglen);
    free(e->cwd);
    memset(e, 0, sizeof *e);
}

void agent_parse_audit_free(struct agent_audit *a)
{
    if (!a)
        return;
    for (int i = 0; i < MAX_PENDING; i++)
        if (a->ev[i].used)
            exec_clear(&a->ev[i].e);
    free(a);
}

static void emit_slot(struct pending *p, agent_exec_fn emit, void *arg)
{
    if (p->e.have_execve)
        emit(&p->e, arg);
    exec_clear(&p->e);
    p->used = false;
}

static struct pending *slot_for(struct agent_audit *a, int64_t ms, unsigned long serial,
                                agent_exec_fn emit, void *arg)
{
    struct pending *free_slot = NULL, *oldest = NULL;
    for (int i = 0; i < MAX_PENDING; i++) {
        struct pending *p = &a->ev[i];
        if (!p->used) {
            free_slot = free_slot ? free_slot : p;
            continue;
        }
        if (p->e.serial == serial && p->e.ms == ms)
            return p;
        if (!oldest || p->age < oldest->age)
            oldest = p;
    }
    if (!free_slot) {
        emit_slot(oldest, emit, arg);
        free_slot = oldest;
    }
    memset(free_slot, 0, sizeof *free_slot);
    free_slot->used = true;
    free_slot->age = a->clock++;
    free_slot->e.ms = ms;
    free_slot->e.serial = serial;
    free_slot->e.uid = free_slot->e.auid = free_slot->e.ses = -1;
    return free_slot;
}

/* "a12" → 12, "a12[3]" → 12 with *chunk; -1 when k is not an argument key. */
static long arg_index(const char *k, size_t kl, bool *chunk)
{
    if (kl < 2 || k[0] != 'a' || !isdigit((unsigned char)k[1]))
        return -1;
    size_t i = 1;
    long n = 0;
    while (i < kl && isdigit((unsigned char)k[i]) && n < 1000000)
        n = n * 10 + (k[i++] - '0');
    *chunk = i < kl && k[i] == '[';
    if (i < kl && !*chunk)
        return -1; /* a1_len and the like */
    return n;
}

static void execve_add(struct agent_exec *e, const char *body)
{
    const char *k, *v;
    size_t kl, vl;
    bool quoted, chunk;
    e->have_execve = true;
    for (const char *p = body; (p = next_field(p, &k, &kl, &v, &vl, &quoted));) {
        if (key_is(k, kl, "argc")) {
            long long n = strtoll(v, NULL, 10);
            if (e->argv == NULL && n > 0) {
                e->argc = n > MAX_ARGS ? MAX_ARGS : (size_t)n;
                e->argv = xcalloc(e->argc, sizeof *e->argv);
                e->arglen = xcalloc(e->argc, sizeof *e->arglen);
            }
            continue;
        }
        long idx = arg_index(k, kl, &chunk);
        if (idx < 0 || (size_t)idx >= e->argc || e->bytes >= MAX_ARG_BYTES)
            continue;
        size_t len;
        char *val = field_value(v, vl, quoted, &len);
        if (!val) { /* not hex after all: keep the text */
            val = xstrndup(v, vl);
            len = vl;
        }
        if (e->argv[idx] && chunk) { /* the next piece of a long argument */
            char *joined = xmalloc(e->arglen[idx] + len + 1);
            memcpy(joined, e->argv[idx], e->arglen[idx]);
            memcpy(joined + e->arglen[idx], val, len);
            joined[e->arglen[idx] + len] = '\0';
            free(e->argv[idx]);
            free(val);
            e->argv[idx] = joined;
            e->arglen[idx] += len;
        } else {
            free(e->argv[idx]);
            e->argv[idx] = val;
            e->arglen[idx] = len;
        }
        e->bytes += len;
    }
}

void agent_parse_audit_feed(struct agent_audit *a, const char *line, agent_exec_fn emit, void *arg)
{
    char type[32];
    int64_t ms;
    unsigned long serial;
    const char *body;
    if (agent_parse_audit_header(line, type, sizeof type, &ms, &serial, &body) != 0)
        return;
    bool last = strcmp(type, "PROCTITLE") == 0 || strcmp(type, "EOE") == 0;
    bool wanted = last || strcmp(type, "SYSCALL") == 0 || strcmp(type, "EXECVE") == 0 ||
                  strcmp(type, "CWD") == 0;
    if (!wanted)
        return;
    struct pending *p = slot_for(a, ms, serial, emit, arg);
    struct agent_exec *e = &p->e;
    if (strcmp(type, "SYSCALL") == 0) {
        agent_parse_audit_num(body, "uid", &e->uid);
        agent_parse_audit_num(body, "auid", &e->auid);
        agent_parse_audit_num(body, "ses", &e->ses);
    } else if (strcmp(type, "EXECVE") == 0) {
        execve_add(e, body);
    } else if (strcmp(type, "CWD") == 0) {
        size_t len;
        free(e->cwd);
        e->cwd = agent_parse_audit_str(body, "cwd", &len);
    }
    if (last)
        emit_slot(p, emit, arg);
}

size_t agent_parse_audit_pending(const struct agent_audit *a)
{
    size_t n = 0;
    for (int i = 0; i < MAX_PENDING; i++)
        n += a->ev[i].used;
    return n;
}

void agent_parse_audit_flush(struct agent_audit *a, agent_exec_fn emit, void *arg)
{
    for (;;) {
        struct pending *oldest = NULL;
        for (int i = 0; i < MAX_PENDING; i++)
            if (a->ev[i].used && (!oldest || a->ev[i].age < oldest->age))
                oldest = &a->ev[i];
        if (!oldest)
            return;
        emit_slot(oldest, emit, arg);
    }
}

static bool shell_safe(const char *s, size_t n)
{
    if (n == 0)
        return false;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (!isalnum(c) && !strchr("_./:=@%+,-", c))
            return false;
    }
    return true;
}

char *agent_parse_exec_command(const struct agent_exec *e, size_t *len)
{
    struct buf b = {0};
    buf_add(&b, "", 0);
    for (size_t i = 0; i < e->argc; i++) {
        if (i > 0)
            buf_add(&b, " ", 1);
        const char *s = e->argv[i];
        size_t n = e->arglen[i];
        if (!s) {
            buf_add(&b, "?", 1);
        } else if (shell_safe(s, n)) {
            buf_add(&b, s, n);
        } else {
            buf_add(&b, "'", 1);
            for (size_t j = 0; j < n; j++) {
                if (s[j] == '\'')
                    buf_add(&b, "'\\''", 4);
                else
                    buf_add(&b, s + j, 1);
            }
            buf_add(&b, "'", 1);
        }
    }
    *len = b.len;
    return b.p;
}

/* ---- /proc/modules ------------------------------------------------------------------ */

static int module_cmp(const void *x, const void *y)
{
    return strcmp(((const struct agent_module *)x)->name, ((const struct agent_module *)y)->name);
}

size_t agent_parse_modules(const char *text, struct agent_module **out)
{
    size_t n = 0, cap = 0;
    struct agent_module *mods = NULL;
    for (const char *p = text; p && *p;) {
        size_t len = strcspn(p, "\n");
        char line[512];
        if (len < sizeof line) {
            memcpy(line, p, len);
            line[len] = '\0';
            struct agent_module m;
            memset(&m, 0, sizeof m);
            size_t nl = strcspn(line, " ");
            char *sz = line + nl;
            char *end = NULL;
            unsigned long size =
                nl > 0 && nl < sizeof m.name && *sz == ' ' ? strtoul(sz + 1, &end, 10) : 0;
            if (end && end != sz + 1 && (*end == ' ' || *end == '\0')) {
                memcpy(m.name, line, nl);
                m.size = size;
                char *open = strrchr(line, '(');
                char *close = open ? strchr(open, ')') : NULL;
                if (close && close[1] == '\0' && (size_t)(close - open - 1) < sizeof m.taint)
                    memcpy(m.taint, open + 1, (size_t)(close - open - 1));
                if (n == cap) {
                    cap = cap ? cap * 2 : 64;
                    mods = xreallocarray(mods, cap, sizeof *mods);
                }
                mods[n++] = m;
            }
        }
        p += len + (p[len] == '\n');
    }
    if (n > 1)
        qsort(mods, n, sizeof *mods, module_cmp);
    *out = mods;
    return n;
}

void agent_parse_modules_diff(const struct agent_module *old, size_t nold,
                              const struct agent_module *cur, size_t ncur, agent_module_fn fn,
                              void *arg)
{
    size_t i = 0, j = 0;
    while (i < nold || j < ncur) {
        int c = i == nold ? 1 : j == ncur ? -1 : strcmp(old[i].name, cur[j].name);
        if (c < 0)
            fn(&old[i++], false, arg);
        else if (c > 0)
            fn(&cur[j++], true, arg);
        else
            i++, j++;
    }
}

/* ---- image pulls -------------------------------------------------------------------- */

int agent_parse_docker_event(const char *line, char **image, int64_t *ms)
{
    int rc = -1;
    json_t *ev = json_loads(line, JSON_REJECT_DUPLICATES, NULL);
    if (!json_is_object(ev))
        goto out;
    const char *type = json_string_value(json_object_get(ev, "Type"));
    const char *action = json_string_value(json_object_get(ev, "Action"));
    if (!action)
        action = json_string_value(json_object_get(ev, "status"));
    if (!type || strcmp(type, "image") != 0 || !action || strcmp(action, "pull") != 0)
        goto out;
    const char *ref = json_string_value(json_object_get(json_object_get(ev, "Actor"), "ID"));
    if (!ref)
        ref = json_string_value(json_object_get(ev, "id"));
    json_t *nano = json_object_get(ev, "timeNano"), *secs = json_object_get(ev, "time");
    if (!ref || !*ref || !(json_is_integer(nano) || json_is_integer(secs)))
        goto out;
    /* a time in seconds past year 9999 is no time (and * 1000 would overflow) */
    if (!json_is_integer(nano) &&
        (json_integer_value(secs) < 0 || json_integer_value(secs) > 253402300799LL))
        goto out;
    *ms = json_is_integer(nano) ? json_integer_value(nano) / 1000000
                                : json_integer_value(secs) * 1000;
    *image = xstrdup(ref);
    rc = 0;
out:
    json_decref(ev);
    return rc;
}

int agent_parse_journal_pull(const char *line, char **image, int64_t *ms)
{
    int rc = -1;
    json_t *ev = json_loads(line, 0, NULL);
    const char *msg = json_string_value(json_object_get(ev, "MESSAGE"));
    const char *usec = json_string_value(json_object_get(ev, "__REALTIME_TIMESTAMP"));
    if (!msg || !usec)
        goto out;
    const char *p = strstr(msg, "PullImage ");
    if (!p)
        goto out;
    p += 10;
    bool escaped = *p == '\\';
    p += escaped;
    if (*p != '"')
        goto out;
    p++;
    const char *end =
        strstr(p, escaped ? "\\\" returns image reference" : "\" returns image reference");
    if (!end || end == p || memchr(p, '"', (size_t)(end - p)))
        goto out;
    char *stop;
    long long us = strtoll(usec, &stop, 10);
    if (*stop != '\0' || us <= 0)
        goto out;
    *ms = us / 1000;
    *image = xstrndup(p, (size_t)(end - p));
    rc = 0;
out:
    json_decref(ev);
    return rc;
}
