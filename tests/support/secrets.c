/*
 * secrets.c - the run-wide record of the tests' secrets and the tree of
 * their logs (see secrets.h). The record's line format, read by
 * tests/secrets/logs_clean.c: "t TEXT" for a printable secret, "x HEX" for
 * bytes. Lines may repeat (programs record independently); the reader
 * removes duplicates.
 */
#include "secrets.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#ifndef AIDC_TEST_RUN_SECRETS
#define AIDC_TEST_RUN_SECRETS "/tmp/aidc-test-secrets/secrets.txt"
#endif
#ifndef AIDC_TEST_RUN_LOGS
#define AIDC_TEST_RUN_LOGS "/tmp/aidc-test-logs"
#endif

#define FILE_MAX (64 * 1024) /* a key or token file; larger files are not keys */

/* What this process recorded already (64-bit FNV-1a of the line): saves writes. */
static struct {
    pthread_mutex_t lock;
    uint64_t *seen;
    size_t n, cap;
} memo = {.lock = PTHREAD_MUTEX_INITIALIZER};

static uint64_t fnv(const char *s)
{
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h | 1; /* 0 marks a free slot */
}

/* True the first time this process sees line. */
static bool first_time(const char *line)
{
    uint64_t h = fnv(line);
    bool fresh = true;
    pthread_mutex_lock(&memo.lock);
    if (memo.n * 2 >= memo.cap) {
        size_t cap = memo.cap ? memo.cap * 2 : 256;
        uint64_t *t = calloc(cap, sizeof *t);
        if (t) {
            for (size_t i = 0; i < memo.cap; i++)
                for (size_t j = memo.seen[i] % cap; memo.seen[i]; j = (j + 1) % cap)
                    if (!t[j]) {
                        t[j] = memo.seen[i];
                        break;
                    }
            free(memo.seen);
            memo.seen = t;
            memo.cap = cap;
        }
    }
    if (memo.cap > memo.n * 2) {
        size_t j = h % memo.cap;
        while (memo.seen[j] && memo.seen[j] != h)
            j = (j + 1) % memo.cap;
        fresh = memo.seen[j] != h;
        if (fresh) {
            memo.seen[j] = h;
            memo.n++;
        }
    }
    pthread_mutex_unlock(&memo.lock);
    return fresh;
}

static int mkdirs(const char *path, mode_t mode)
{
    char p[PATH_MAX];
    int n = snprintf(p, sizeof p, "%s", path);
    if (n < 0 || (size_t)n >= sizeof p)
        return -1;
    for (char *s = p + 1; *s; s++) {
        if (*s == '/') {
            *s = '\0';
            if (mkdir(p, mode) != 0 && errno != EEXIST)
                return -1;
            *s = '/';
        }
    }
    return mkdir(p, mode) == 0 || errno == EEXIST ? 0 : -1;
}

static const char *secrets_file(void)
{
    const char *f = getenv("AIDC_TEST_SECRETS_FILE");
    return f && *f ? f : AIDC_TEST_RUN_SECRETS;
}

const char *secrets_log_root(void)
{
    const char *d = getenv("AIDC_TEST_LOG_ROOT");
    d = d && *d ? d : AIDC_TEST_RUN_LOGS;
    (void)mkdirs(d, 0700);
    return d;
}

static void append(const char *line)
{
    if (!first_time(line))
        return;
    const char *path = secrets_file();
    char dir[PATH_MAX];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (slash && slash != dir) {
        *slash = '\0';
        (void)mkdirs(dir, 0700);
    }
    int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
    if (fd < 0)
        return;
    size_t len = strlen(line);
    char *buf = malloc(len + 1);
    if (buf) {
        memcpy(buf, line, len);
        buf[len] = '\n';
        /* one write: O_APPEND keeps it whole next to other programs' lines */
        ssize_t w = write(fd, buf, len + 1);
        (void)w;
        free(buf);
    }
    close(fd);
}

static bool printable(const unsigned char *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (p[i] < 0x20 || p[i] > 0x7e)
            return false;
    return true;
}

void secrets_note_bytes(const void *p, size_t n)
{
    static const char hex[] = "0123456789abcdef";
    const unsigned char *b = p;
    if (!p || n < SECRETS_MIN_LEN / 2)
        return;
    if (printable(b, n)) {
        if (n < SECRETS_MIN_LEN)
            return;
        char *line = malloc(n + 3);
        if (!line)
            return;
        memcpy(line, "t ", 2);
        memcpy(line + 2, b, n);
        line[n + 2] = '\0';
        append(line);
        free(line);
        return;
    }
    char *line = malloc(2 * n + 3);
    if (!line)
        return;
    memcpy(line, "x ", 2);
    for (size_t i = 0; i < n; i++) {
        line[2 + 2 * i] = hex[b[i] >> 4];
        line[3 + 2 * i] = hex[b[i] & 15];
    }
    line[2 * n + 2] = '\0';
    append(line);
    free(line);
}

void secrets_note(const char *s)
{
    if (s && strlen(s) >= SECRETS_MIN_LEN)
        secrets_note_bytes(s, strlen(s));
}

/* Each line of text (trimmed) that is long enough; PEM armour and headers left out. */
static void note_lines(char *text)
{
    for (char *line = strtok(text, "\r\n"); line; line = strtok(NULL, "\r\n")) {
        while (*line == ' ' || *line == '\t')
            line++;
        size_t n = strlen(line);
        while (n && (line[n - 1] == ' ' || line[n - 1] == '\t'))
            line[--n] = '\0';
        if (strncmp(line, "-----", 5) == 0 || strstr(line, ": "))
            continue;
        secrets_note(line);
    }
}

void secrets_note_file(const char *path)
{
    if (!path || !*path)
        return;
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    struct stat st;
    if (fd < 0)
        return;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size > FILE_MAX) {
        close(fd);
        return;
    }
    unsigned char *buf = malloc(FILE_MAX + 1);
    size_t n = 0;
    ssize_t r;
    while (buf && n < FILE_MAX && (r = read(fd, buf + n, FILE_MAX - n)) > 0)
        n += (size_t)r;
    close(fd);
    if (!buf)
        return;
    buf[n] = '\0';
    size_t t = n;
    while (t && (buf[t - 1] == '\n' || buf[t - 1] == '\r' || buf[t - 1] == ' '))
        t--;
    bool text = true;
    for (size_t i = 0; i < t; i++)
        if ((buf[i] < 0x20 && buf[i] != '\n' && buf[i] != '\r' && buf[i] != '\t') || buf[i] > 0x7e)
            text = false;
    if (text) {
        buf[t] = '\0';
        note_lines((char *)buf);
    } else {
        secrets_note_bytes(buf, n); /* a raw key: every byte counts */
    }
    free(buf);
}

static int unhex(int c)
{
    return isdigit(c) ? c - '0' : isxdigit(c) ? (tolower(c) - 'a' + 10) : -1;
}

void secrets_note_url(const char *url)
{
    if (!url)
        return;
    const char *kw = strstr(url, "password=");
    if (kw) {
        char v[512];
        size_t n = strcspn(kw + 9, " &'");
        if (n < sizeof v) {
            memcpy(v, kw + 9, n);
            v[n] = '\0';
            secrets_note(v);
        }
    }
    const char *s = strstr(url, "://");
    if (!s)
        return;
    s += 3;
    size_t auth = strcspn(s, "/?#");
    const char *at = NULL;
    for (const char *p = s; p < s + auth; p++)
        if (*p == '@')
            at = p;
    const char *colon = at ? memchr(s, ':', (size_t)(at - s)) : NULL;
    if (!colon)
        return;
    char raw[512], dec[512];
    size_t n = (size_t)(at - colon - 1), o = 0;
    if (n >= sizeof raw)
        return;
    memcpy(raw, colon + 1, n);
    raw[n] = '\0';
    for (size_t i = 0; i < n; i++) {
        if (raw[i] == '%' && i + 2 < n + 1 && unhex(raw[i + 1]) >= 0 && unhex(raw[i + 2]) >= 0) {
            dec[o++] = (char)(unhex(raw[i + 1]) * 16 + unhex(raw[i + 2]));
            i += 2;
        } else {
            dec[o++] = raw[i];
        }
    }
    dec[o] = '\0';
    secrets_note(raw);
    secrets_note(dec);
}

static bool name_has(const char *name, const char *part)
{
    return strcasestr(name, part) != NULL;
}

void secrets_note_env(const char *name, const char *value)
{
    if (!name || !value || !*value)
        return;
    size_t nl = strlen(name);
    if (nl > 4 && strcasecmp(name + nl - 4, "_URL") == 0) {
        secrets_note_url(value);
        return;
    }
    if (!(name_has(name, "PASSWORD") || name_has(name, "PASSWD") || name_has(name, "SECRET") ||
          name_has(name, "TOKEN") || name_has(name, "JWT") || name_has(name, "CRED") ||
          name_has(name, "KEY")))
        return;
    struct stat st;
    if (value[0] == '/' && stat(value, &st) == 0) {
        if (S_ISREG(st.st_mode))
            secrets_note_file(value);
        return; /* a path: the secret is what the file holds */
    }
    if (nl > 5 && strcasecmp(name + nl - 5, "_FILE") == 0)
        return; /* a key file aidcd creates later: recorded once it exists */
    secrets_note(value);
}

void secrets_note_env_list(const char *const *env)
{
    for (size_t i = 0; env && env[i]; i++) {
        const char *eq = strchr(env[i], '=');
        if (!eq || (size_t)(eq - env[i]) >= 256)
            continue;
        char name[256];
        memcpy(name, env[i], (size_t)(eq - env[i]));
        name[eq - env[i]] = '\0';
        secrets_note_env(name, eq + 1);
    }
}

extern char **environ;

static void note_environ_once(void)
{
    for (char **e = environ; e && *e; e++)
        if (strncmp(*e, "AIDC_", 5) == 0) {
            const char *one[2] = {*e, NULL};
            secrets_note_env_list(one);
        }
}

void secrets_note_environ(void)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, note_environ_once);
}

static const char *const secret_members[] = {
    "password",     "new_password",  "current_password", "old_password", "secret",
    "token",        "access_token",  "refresh_token",    "client_secret", "api_key",
    "private_key",  "jwt",           "credentials",      "agent_token",  "node_token",
};

static bool secret_member(const char *key)
{
    for (size_t i = 0; i < sizeof secret_members / sizeof secret_members[0]; i++)
        if (strcasecmp(key, secret_members[i]) == 0)
            return true;
    return false;
}

void secrets_note_json(const json_t *j)
{
    if (json_is_array(j)) {
        size_t i;
        const json_t *v;
        json_array_foreach(j, i, v) secrets_note_json(v);
        return;
    }
    if (!json_is_object(j))
        return;
    const char *key;
    const json_t *v;
    json_object_foreach((json_t *)j, key, v) {
        const char *s = json_string_value(v);
        if (s && secret_member(key)) {
            secrets_note(s);
        } else if (s && strcasecmp(key, "credentials_ref") == 0) {
            if (strncmp(s, "file:", 5) == 0)
                secrets_note_file(s + 5);
            else if (strncmp(s, "env:", 4) == 0)
                secrets_note(getenv(s + 4));
        } else {
            secrets_note_json(v);
        }
    }
}

void secrets_note_header(const char *line)
{
    if (!line)
        return;
    if (strncasecmp(line, "Authorization:", 14) == 0) {
        const char *v = line + 14;
        while (*v == ' ')
            v++;
        const char *sp = strchr(v, ' ');
        secrets_note(sp ? sp + 1 : v); /* the credential after the scheme */
    } else if (strncasecmp(line, "Cookie:", 7) == 0) {
        char buf[4096];
        snprintf(buf, sizeof buf, "%s", line + 7);
        for (char *c = strtok(buf, ";"); c; c = strtok(NULL, ";")) {
            char *eq = strchr(c, '=');
            if (eq)
                secrets_note(eq + 1);
        }
    }
}

/* ---- the log tree ------------------------------------------------------------------ */

static _Thread_local struct {
    const char *top;
    char dest[PATH_MAX];
} arch;

static bool is_log(const char *base)
{
    size_t n = strlen(base);
    return (n > 4 && (strcmp(base + n - 4, ".log") == 0 || strcmp(base + n - 4, ".out") == 0 ||
                      strcmp(base + n - 4, ".err") == 0)) ||
           strstr(base, ".log.") || strcmp(base, "stdout") == 0 || strcmp(base, "stderr") == 0;
}

static void copy_file(const char *from, const char *to)
{
    char dir[PATH_MAX];
    snprintf(dir, sizeof dir, "%s", to);
    char *slash = strrchr(dir, '/');
    if (slash) {
        *slash = '\0';
        (void)mkdirs(dir, 0700);
    }
    int in = open(from, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    int out = in >= 0 ? open(to, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600) : -1;
    char buf[65536];
    ssize_t r;
    while (out >= 0 && (r = read(in, buf, sizeof buf)) > 0)
        if (write(out, buf, (size_t)r) != r)
            break;
    if (out >= 0)
        close(out);
    if (in >= 0)
        close(in);
}

static int archive_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    if (flag != FTW_F || !S_ISREG(sb->st_mode) || !is_log(path + ftw->base))
        return 0;
    char to[PATH_MAX];
    int n = snprintf(to, sizeof to, "%s%s", arch.dest, path + strlen(arch.top));
    if (n > 0 && (size_t)n < sizeof to)
        copy_file(path, to);
    return 0;
}

void secrets_archive_logs(const char *dir)
{
    struct stat st;
    if (!dir || !*dir || stat(dir, &st) != 0 || !S_ISDIR(st.st_mode))
        return;
    /* /tmp/aidc-test-jobs-123 -> ROOT/tmp_aidc-test-jobs-123: one directory per tree */
    char name[PATH_MAX];
    size_t o = 0;
    for (const char *p = dir; *p && o + 1 < sizeof name; p++)
        if (!(o == 0 && *p == '/'))
            name[o++] = *p == '/' ? '_' : *p;
    name[o] = '\0';
    int n = snprintf(arch.dest, sizeof arch.dest, "%s/%s", secrets_log_root(), name);
    if (n < 0 || (size_t)n >= sizeof arch.dest)
        return;
    arch.top = dir;
    nftw(dir, archive_entry, 16, FTW_PHYS);
    arch.top = NULL;
}
