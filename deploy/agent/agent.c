/*
 * agent.c - aidc-agent, the node agent: records what runs on a node and
 * ships it to aidcd's POST /api/v1/audit/commands (docs/agent.md). This file
 * owns main, the configuration, the log and the writing side of the spool;
 * agent_ship.c the shipper, agent_watch.c the watchers.
 *
 * Writers never wait for the network: `record` (run from every user's shell
 * after every command) and the watchers append one line each to the spool
 * (layout and invariants: agent_ship.c) and return.
 */
#include "agent.h"

#include "agent_parse.h"
#include "lib/xalloc.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define ROTATE_BYTES (4u << 20)            /* a writer closes its file past this size */
#define MAX_AGE_MS   (90LL * 86400 * 1000) /* record --time: a start this long ago at most */

volatile sig_atomic_t agent_stop;

/* ---- small things ------------------------------------------------------------------ */

static void on_signal(int sig)
{
    (void)sig;
    agent_stop = 1;
}

void agent_signals(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal; /* no SA_RESTART: a nap ends at once */
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
}

int64_t agent_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void agent_nap(double secs)
{
    if (secs <= 0 || agent_stop)
        return;
    struct timespec ts = {(time_t)secs, (long)((secs - (double)(time_t)secs) * 1e9)};
    nanosleep(&ts, NULL); /* a signal ends it early: agent_stop is then set */
}

int agent_random(void *out, size_t n)
{
    size_t got = 0;
    while (got < n) {
        ssize_t r = getrandom((char *)out + got, n - got, 0);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return -1;
        got += (size_t)r;
    }
    return 0;
}

void agent_log(const char *level, json_t *fields, const char *fmt, ...)
{
    char msg[2048], ts[40] = "";
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(msg, sizeof msg, fmt, ap); /* a cut message is still a message */
    va_end(ap);
    if (n < 0)
        snprintf(msg, sizeof msg, "(message could not be formatted)");
    (void)agent_parse_ts_format(agent_now_ms(), ts, sizeof ts);
    char *clean = agent_parse_utf8_clean(msg, strlen(msg), sizeof msg * 4, NULL);
    json_t *o = json_object();
    bool ok = o && json_object_set_new(o, "ts", json_string(ts)) == 0 &&
              json_object_set_new(o, "level", json_string(level)) == 0 &&
              json_object_set_new(o, "msg", json_string(clean)) == 0 &&
              (!fields || json_object_update(o, fields) == 0);
    char *line = ok ? json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
    if (line)
        fprintf(stderr, "%s\n", line);
    else
        fprintf(stderr, "{\"level\":\"error\",\"msg\":\"a log line could not be built\"}\n");
    free(line);
    free(clean);
    json_decref(o);
    json_decref(fields);
}

char *agent_read_file(const char *path, size_t max, size_t *len)
{
    /* no trust in st_size: /proc files say 0 */
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
    struct stat st;
    if (fd < 0)
        return NULL;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || (size_t)st.st_size > max) {
        close(fd);
        return NULL;
    }
    size_t cap = (size_t)st.st_size + 4096, got = 0;
    char *buf = xmalloc(cap);
    for (;;) {
        if (got + 1 == cap) {
            cap *= 2;
            buf = xrealloc(buf, cap);
        }
        ssize_t r = read(fd, buf + got, cap - 1 - got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            free(buf);
            buf = NULL;
            break;
        }
        if (r == 0)
            break;
        got += (size_t)r;
        if (got > max) { /* it grew while we read */
            free(buf);
            buf = NULL;
            break;
        }
    }
    close(fd);
    if (buf) {
        buf[got] = '\0';
        if (len)
            *len = got;
    }
    return buf;
}

int agent_write_all(int fd, const char *buf, size_t len)
{
    while (len > 0) {
        ssize_t w = write(fd, buf, len);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        buf += w;
        len -= (size_t)w;
    }
    return 0;
}

int agent_write_file(const char *path, const char *text, size_t len)
{
    char tmp[PATH_MAX];
    int n = snprintf(tmp, sizeof tmp, "%s.tmp", path);
    if (n < 0 || (size_t)n >= sizeof tmp)
        return -1;
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0)
        return -1;
    int rc = agent_write_all(fd, text, len) == 0 && fsync(fd) == 0 ? 0 : -1;
    if (close(fd) != 0)
        rc = -1;
    if (rc == 0 && rename(tmp, path) != 0)
        rc = -1;
    if (rc != 0)
        unlink(tmp);
    return rc;
}

int agent_pathf(char *out, size_t n, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int w = vsnprintf(out, n, fmt, ap);
    va_end(ap);
    return w < 0 || (size_t)w >= n ? -1 : 0;
}

int agent_subdir(const struct agent_cfg *c, const char *sub, char *out, size_t n)
{
    if (agent_pathf(out, n, "%s/%s", c->spool, sub) != 0)
        return -1;
    if (mkdir(out, 0700) != 0 && errno != EEXIST) {
        agent_log("error", NULL, "cannot create %s: %s", out, strerror(errno));
        return -1;
    }
    return 0;
}

int agent_state_path(const struct agent_cfg *c, const char *name, char *out, size_t n)
{
    char dir[PATH_MAX];
    if (agent_subdir(c, "state", dir, sizeof dir) != 0)
        return -1;
    return agent_pathf(out, n, "%s/%s", dir, name);
}

/* ---- configuration ------------------------------------------------------------------ */

#define CFG(name, field, def)                                                                      \
    {                                                                                              \
        name, offsetof(struct agent_cfg, field), sizeof(((struct agent_cfg *)0)->field), def       \
    }
static const struct cfgkey {
    const char *name;
    size_t off, size;
    const char *def;
} cfgkeys[] = {
    CFG("AIDC_AGENT_URL", url, ""),
    CFG("AIDC_AGENT_TOKEN_FILE", token_file, "/etc/aidc-agent/token"),
    CFG("AIDC_AGENT_SPOOL", spool, "/var/spool/aidc-agent"),
    CFG("AIDC_AGENT_CA_FILE", ca_file, ""),
    CFG("AIDC_AGENT_HOST", host, ""),
    CFG("AIDC_AGENT_MODULES_FILE", modules_file, "/proc/modules"),
    CFG("AIDC_AGENT_INTERVAL", interval, "10"),
};

static int cfg_set(struct agent_cfg *c, const char *name, const char *value, const char *from)
{
    for (size_t i = 0; i < sizeof cfgkeys / sizeof cfgkeys[0]; i++) {
        if (strcmp(cfgkeys[i].name, name) != 0)
            continue;
        if (strlen(value) >= cfgkeys[i].size) {
            agent_log("error", NULL, "%s from %s is too long", name, from);
            return -1;
        }
        memcpy((char *)c + cfgkeys[i].off, value, strlen(value) + 1);
        return 0;
    }
    agent_log("warn", NULL, "unknown setting %s in %s", name, from);
    return 0;
}

/* NAME=value lines; # comments; the value may be quoted. */
static int cfg_file(struct agent_cfg *c, const char *path)
{
    FILE *f = fopen(path, "re");
    if (!f) {
        if (errno == ENOENT)
            return 0;
        agent_log("error", NULL, "cannot read %s: %s", path, strerror(errno));
        return -1;
    }
    char line[2048];
    int rc = 0;
    while (rc == 0 && fgets(line, sizeof line, f)) {
        char *p = line + strspn(line, " \t");
        size_t len = strcspn(p, "\r\n");
        p[len] = '\0';
        while (len > 0 && (p[len - 1] == ' ' || p[len - 1] == '\t'))
            p[--len] = '\0';
        if (*p == '\0' || *p == '#')
            continue;
        char *eq = strchr(p, '=');
        if (!eq) {
            agent_log("error", NULL, "%s: not NAME=value: %s", path, p);
            rc = -1;
            break;
        }
        *eq = '\0';
        char *v = eq + 1;
        size_t vl = strlen(v);
        if (vl >= 2 && (v[0] == '"' || v[0] == '\'') && v[vl - 1] == v[0]) {
            v[vl - 1] = '\0';
            v++;
        }
        rc = cfg_set(c, p, v, path);
    }
    fclose(f);
    return rc;
}

static int cfg_load(struct agent_cfg *c)
{
    memset(c, 0, sizeof *c);
    for (size_t i = 0; i < sizeof cfgkeys / sizeof cfgkeys[0]; i++)
        memcpy((char *)c + cfgkeys[i].off, cfgkeys[i].def, strlen(cfgkeys[i].def) + 1);
    const char *file = getenv("AIDC_AGENT_CONFIG");
    if (cfg_file(c, file ? file : "/etc/aidc-agent.conf") != 0)
        return -1;
    for (size_t i = 0; i < sizeof cfgkeys / sizeof cfgkeys[0]; i++) {
        const char *v = getenv(cfgkeys[i].name);
        if (v && cfg_set(c, cfgkeys[i].name, v, "the environment") != 0)
            return -1;
    }
    if (c->host[0] == '\0' && gethostname(c->host, sizeof c->host - 1) != 0) {
        agent_log("error", NULL, "gethostname: %s", strerror(errno));
        return -1;
    }
    c->host[sizeof c->host - 1] = '\0';
    return 0;
}

/* ---- records into the spool ---------------------------------------------------------- */

/* o[k] = v (new); v NULL or a failed set counts as a failure. */
static int put(json_t *o, const char *k, json_t *v)
{
    return json_object_set_new(o, k, v) == 0 ? 0 : -1;
}

static int put_text(json_t *o, const char *k, const char *s, size_t len, size_t max)
{
    char *clean = agent_parse_utf8_clean(s, len, max, NULL);
    int rc = put(o, k, json_string(clean));
    free(clean);
    return rc;
}

/* The NDJSON line of r ("...\n", malloc'd), or NULL. */
static char *record_line(const struct agent_cfg *c, const struct agent_rec *r, size_t *len)
{
    char ts[40], id[33];
    if (agent_parse_ts_format(r->ms, ts, sizeof ts) != 0)
        return NULL;
    if (!r->record_id) {
        unsigned char raw[16];
        if (agent_random(raw, sizeof raw) != 0)
            return NULL;
        for (size_t i = 0; i < sizeof raw; i++)
            snprintf(id + 2 * i, 3, "%02x", raw[i]);
    }
    json_t *o = json_object();
    if (!o)
        return NULL;
    int bad = put(o, "ts", json_string(ts));
    bad |= put_text(o, "host", c->host, strlen(c->host), AGENT_MAX_NAME);
    if (r->user)
        bad |= put_text(o, "user", r->user, strlen(r->user), AGENT_MAX_NAME);
    if (r->uid >= 0)
        bad |= put(o, "uid", json_integer(r->uid));
    if (r->session)
        bad |= put_text(o, "session", r->session, strlen(r->session), AGENT_MAX_NAME);
    if (r->cwd)
        bad |= put_text(o, "cwd", r->cwd, strlen(r->cwd), AGENT_MAX_CWD);
    bad |= put_text(o, "command", r->command, r->command_len, AGENT_MAX_COMMAND);
    if (r->has_exit)
        bad |= put(o, "exit_code", json_integer(r->exit_code));
    if (r->job_id)
        bad |= put(o, "job_id", json_string(r->job_id));
    bad |= put(o, "kind", json_string(r->kind));
    bad |= put_text(o, "record_id", r->record_id ? r->record_id : id,
                    strlen(r->record_id ? r->record_id : id), 200);
    char *text = bad ? NULL : json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER);
    json_decref(o);
    if (!text)
        return NULL;
    size_t n = strlen(text);
    char *line = xmalloc(n + 2);
    memcpy(line, text, n);
    line[n] = '\n';
    line[n + 1] = '\0';
    free(text);
    *len = n + 1;
    return line;
}

int agent_closed_name(char *out, size_t n, unsigned uid)
{
    unsigned char raw[4];
    if (agent_random(raw, sizeof raw) != 0)
        return -1;
    return agent_pathf(out, n, "c%013lld-u%u-%02x%02x%02x%02x.ndjson", (long long)agent_now_ms(),
                       uid, raw[0], raw[1], raw[2], raw[3]);
}

/*
 * Append line to path under the file's lock. The file must be ours and
 * regular (the spool is writable by all: never follow a link someone
 * planted). Returns 0, 1 when the file was renamed before we held its lock
 * (try again), or -1.
 */
static int append_locked(const struct agent_cfg *c, const char *path, const char *line, size_t len)
{
    int rc = -1;
    int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0640);
    struct stat st, now;
    if (fd < 0) {
        agent_log("error", NULL, "cannot open %s: %s", path, strerror(errno));
        return -1;
    }
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != geteuid()) {
        agent_log("error", NULL, "%s is not a file of this user: not writing to it", path);
        goto out;
    }
    /* readable by the shipper's group (the spool is setgid), whatever the umask */
    if ((st.st_mode & 0777) != 0640 && fchmod(fd, 0640) != 0)
        agent_log("warn", NULL, "chmod %s: %s", path, strerror(errno));
    while (flock(fd, LOCK_EX) != 0)
        if (errno != EINTR)
            goto out;
    if (stat(path, &now) != 0 || now.st_ino != st.st_ino || now.st_dev != st.st_dev) {
        rc = 1; /* the shipper took this file between our open and our lock */
        goto out;
    }
    if (fstat(fd, &st) != 0 || agent_write_all(fd, line, len) != 0) {
        agent_log("error", NULL, "cannot write to %s: %s", path, strerror(errno));
        goto out;
    }
    rc = 0;
    if ((size_t)st.st_size + len >= ROTATE_BYTES) {
        char name[128], closed[PATH_MAX];
        if (agent_closed_name(name, sizeof name, (unsigned)geteuid()) == 0 &&
            agent_pathf(closed, sizeof closed, "%s/%s", c->spool, name) == 0 &&
            rename(path, closed) != 0)
            agent_log("warn", NULL, "cannot close %s: %s", path, strerror(errno));
    }
out:
    close(fd); /* releases the lock */
    return rc;
}

int agent_spool_append(const struct agent_cfg *c, const struct agent_rec *r)
{
    size_t len;
    char *line = record_line(c, r, &len);
    if (!line) {
        agent_log("error", NULL, "cannot build the record");
        return -1;
    }
    char path[PATH_MAX];
    int rc = agent_pathf(path, sizeof path, "%s/u%u.ndjson", c->spool, (unsigned)geteuid());
    /* 1: the shipper renamed the file under us; a fresh one is made at the next open */
    for (int tries = 0; rc == 0 && (rc = append_locked(c, path, line, len)) == 1; tries++)
        if (tries == 16) {
            agent_log("error", NULL, "%s keeps being renamed: record not written", path);
            rc = -1;
        } else {
            rc = 0;
        }
    free(line);
    return rc == 0 ? 0 : -1;
}

/* ---- record ------------------------------------------------------------------------------ */

static int cmd_record(const struct agent_cfg *c, int argc, char **argv)
{
    static const struct option opts[] = {
        {"kind", required_argument, NULL, 'k'},
        {"exit", required_argument, NULL, 'e'},
        {"cwd", required_argument, NULL, 'c'},
        {"session", required_argument, NULL, 's'},
        {"job-id", required_argument, NULL, 'j'},
        {"time", required_argument, NULL, 't'},
        {NULL, 0, NULL, 0},
    };
    struct agent_rec r = {.kind = "command", .uid = (long long)getuid()};
    r.ms = agent_now_ms();
    const char *job = getenv("AIDC_JOB_ID");
    char cwd[PATH_MAX], *end;
    int o;
    optind = 1;
    while ((o = getopt_long(argc, argv, "+", opts, NULL)) != -1) {
        switch (o) {
        case 'k':
            r.kind = optarg;
            break;
        case 'e': {
            long v = strtol(optarg, &end, 10);
            if (*optarg == '\0' || *end != '\0' || v < -255 || v > 511)
                goto usage; /* the server's range: a shell's $? is 0..255 */
            r.has_exit = true;
            r.exit_code = (int)v;
            break;
        }
        case 'c':
            r.cwd = optarg;
            break;
        case 's':
            r.session = optarg;
            break;
        case 'j':
            job = optarg;
            break;
        case 't': { /* ms since the epoch, "" for now */
            long long v = strtoll(optarg, &end, 10);
            if (*end != '\0')
                goto usage;
            /* never ahead of the clock, nor older than any retention (a bad
             * time would make the server refuse the whole batch) */
            if (*optarg && v < r.ms && v > r.ms - MAX_AGE_MS)
                r.ms = v;
            break;
        }
        default:
            goto usage;
        }
    }
    if (strcmp(r.kind, "command") != 0 && strcmp(r.kind, "module") != 0 &&
        strcmp(r.kind, "image_pull") != 0)
        goto usage;
    /* a bad job id would make the server refuse the whole batch: leave it out */
    r.job_id = job && agent_parse_is_uuid(job) ? job : NULL;
    if (!r.cwd && getcwd(cwd, sizeof cwd))
        r.cwd = cwd;
    struct passwd *pw = getpwuid(getuid());
    r.user = pw ? pw->pw_name : NULL;
    size_t total = 0;
    for (int i = optind; i < argc; i++)
        total += strlen(argv[i]) + 1;
    if (total == 0)
        goto usage;
    char *text = xmalloc(total);
    text[0] = '\0';
    for (int i = optind; i < argc; i++) {
        if (i > optind)
            strcat(text, " ");
        strcat(text, argv[i]);
    }
    r.command = text;
    r.command_len = strlen(text);
    int rc = r.command_len > 0 && agent_spool_append(c, &r) == 0 ? 0 : 1;
    free(text);
    return rc;
usage:
    fprintf(stderr, "usage: aidc-agent record [--kind command|module|image_pull] [--exit N]"
                    " [--cwd DIR] [--session S] [--job-id UUID] [--time MS] -- COMMAND TEXT\n");
    return AGENT_EXIT_USAGE;
}

/* ---- main ---------------------------------------------------------------------------------- */

static const char usage[] =
    "usage: aidc-agent COMMAND [OPTIONS]\n"
    "  record [--kind K] [--exit N] [--cwd D] [--session S] [--job-id ID] [--time MS] -- TEXT\n"
    "                      append one record to the spool (from a shell hook)\n"
    "  ship [--once]       send closed spool files to aidcd (loop, or one pass)\n"
    "  run                 ship, and watch /proc/modules (the systemd service)\n"
    "  modules [--once]    record kernel module loads and unloads\n"
    "  auditd [FILE] [--once]  record EXECVE events of audit.log\n"
    "  images [docker|containerd] [--once]  record image pulls\n"
    "Settings (environment, or NAME=value lines in /etc/aidc-agent.conf or\n"
    "$AIDC_AGENT_CONFIG): AIDC_AGENT_URL, AIDC_AGENT_TOKEN_FILE, AIDC_AGENT_SPOOL,\n"
    "AIDC_AGENT_CA_FILE, AIDC_AGENT_HOST, AIDC_AGENT_INTERVAL, AIDC_AGENT_MODULES_FILE.\n"
    "See docs/agent.md.\n";

int main(int argc, char **argv)
{
    if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
        fputs(usage, argc < 2 ? stderr : stdout);
        return argc < 2 ? AGENT_EXIT_USAGE : 0;
    }
    struct agent_cfg cfg;
    if (cfg_load(&cfg) != 0)
        return 1;
    const char *cmd = argv[1];
    if (strcmp(cmd, "record") == 0) {
        signal(SIGHUP, SIG_IGN); /* run in the background of a shell that may be closing */
        return cmd_record(&cfg, argc - 1, argv + 1);
    }
    agent_signals();
    if (strcmp(cmd, "ship") == 0)
        return agent_ship_main(&cfg, argc - 1, argv + 1, false);
    if (strcmp(cmd, "run") == 0)
        return agent_ship_main(&cfg, argc - 1, argv + 1, true);
    if (strcmp(cmd, "modules") == 0)
        return agent_modules_main(&cfg, argc - 1, argv + 1);
    if (strcmp(cmd, "auditd") == 0)
        return agent_auditd_main(&cfg, argc - 1, argv + 1);
    if (strcmp(cmd, "images") == 0)
        return agent_images_main(&cfg, argc - 1, argv + 1);
    fprintf(stderr, "aidc-agent: unknown command %s\n%s", cmd, usage);
    return AGENT_EXIT_USAGE;
}
