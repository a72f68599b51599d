/*
 * agent_watch.c - the agent's watchers (see agent.h): kernel modules from
 * /proc/modules, program executions from auditd's audit.log, image pulls from
 * docker or containerd. Each turns what it sees into records in the spool and
 * nothing else; the shipper sends them.
 *
 * Restarts: a watcher remembers where it was in <spool>/state/, and records
 * it can see twice (auditd lines read again, image events replayed with
 * --since) get ids made from what they are (host, audit serial, image), so
 * the server drops the second copy as a duplicate. Module records get random
 * ids: the saved module list keeps them from being made twice.
 */
#include "agent.h"

#include "agent_parse.h"
#include "lib/xalloc.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define MODULES_POLL   5.0 /* seconds between looks at /proc/modules */
#define AUDIT_CHUNK    (64u << 10)
#define AUDIT_MAX_LINE (1u << 20)
#define UNSET_ID       4294967295LL /* auid and ses of a process outside any login */

/* --once among args[1..]; the first other argument in *arg (may be NULL); -1 on extra ones. */
static int watch_args(int argc, char **argv, bool *once, const char **arg)
{
    *once = false;
    *arg = NULL;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--once") == 0)
            *once = true;
        else if (!*arg && argv[i][0] != '-')
            *arg = argv[i];
        else {
            fprintf(stderr, "aidc-agent %s: unexpected argument %s\n", argv[0], argv[i]);
            return -1;
        }
    }
    return 0;
}

static const char *user_name(long long uid)
{
    struct passwd *pw = uid >= 0 && uid < UNSET_ID ? getpwuid((uid_t)uid) : NULL;
    return pw ? pw->pw_name : NULL;
}

/* ---- kernel modules -------------------------------------------------------------- */

struct agent_modwatch {
    struct agent_module *mods; /* what was seen last, sorted */
    size_t n;
    bool primed;
    bool failing; /* the file could not be read at the last look (logged once) */
};

struct agent_modwatch *agent_modwatch_new(void)
{
    return xcalloc(1, sizeof(struct agent_modwatch));
}

void agent_modwatch_free(struct agent_modwatch *w)
{
    if (!w)
        return;
    free(w->mods);
    free(w);
}

struct modctx {
    const struct agent_cfg *c;
    const char *verb_loaded; /* "load", or "loaded" for what was there before the agent */
    int failures;
};

static void on_module(const struct agent_module *m, bool loaded, void *arg)
{
    struct modctx *x = arg;
    char version[64] = "", path[PATH_MAX], text[256];
    bool plain =
        strspn(m->name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-") ==
        strlen(m->name);
    /* versions are the running kernel's: only for the real /proc/modules */
    bool live = strcmp(x->c->modules_file, "/proc/modules") == 0;
    char *v = live && plain && loaded &&
                      agent_pathf(path, sizeof path, "/sys/module/%s/version", m->name) == 0
                  ? agent_read_file(path, 63, NULL)
                  : NULL;
    if (v) { /* the driver's version: what "nvidia" alone does not say */
        snprintf(version, sizeof version, ", version %s", v);
        version[strcspn(version, "\n")] = '\0';
        free(v);
    }
    int w = loaded ? snprintf(text, sizeof text, "%s %s (size %lu%s%s%s)", x->verb_loaded, m->name,
                              m->size, m->taint[0] ? ", taint " : "", m->taint, version)
                   : snprintf(text, sizeof text, "unload %s", m->name);
    if (w < 0)
        return;
    struct agent_rec r = {.kind = "module",
                          .ms = agent_now_ms(),
                          .uid = -1,
                          .command = text,
                          .command_len = strlen(text)};
    if (agent_spool_append(x->c, &r) != 0)
        x->failures++;
}

int agent_modwatch_poll(const struct agent_cfg *c, struct agent_modwatch *w)
{
    char state[PATH_MAX];
    size_t len;
    if (agent_state_path(c, "modules", state, sizeof state) != 0)
        return -1;
    char *text = agent_read_file(c->modules_file, 4u << 20, &len);
    if (!text) {
        if (!w->failing)
            agent_log("error", NULL, "cannot read %s: %s", c->modules_file, strerror(errno));
        w->failing = true;
        return -1;
    }
    w->failing = false;
    char *boot = agent_read_file("/proc/sys/kernel/random/boot_id", 64, NULL);
    if (boot)
        boot[strcspn(boot, "\n")] = '\0';
    struct agent_module *cur = NULL;
    size_t ncur = agent_parse_modules(text, &cur);
    struct modctx x = {.c = c, .verb_loaded = "load"};
    if (!w->primed) {
        /* the state file: "boot <id>" and the module list seen last */
        char *saved = agent_read_file(state, 8u << 20, NULL);
        size_t bl = boot ? strlen(boot) : 0;
        free(w->mods);
        w->mods = NULL;
        w->n = 0;
        if (!saved)
            x.verb_loaded = "loaded"; /* the first run: what is there already */
        else if (bl && strncmp(saved, "boot ", 5) == 0 && strncmp(saved + 5, boot, bl) == 0 &&
                 saved[5 + bl] == '\n')
            w->n = agent_parse_modules(saved + 5 + bl + 1, &w->mods);
        /* else: a reboot since; all that is there now was loaded in this boot */
        free(saved);
        w->primed = true;
    }
    bool changed = false;
    size_t i = 0, j = 0; /* changed when the name lists differ */
    for (; i < w->n && j < ncur && !changed; i++, j++)
        changed = strcmp(w->mods[i].name, cur[j].name) != 0;
    changed = changed || w->n != ncur || strcmp(x.verb_loaded, "loaded") == 0;
    int rc = 0;
    if (changed) {
        agent_parse_modules_diff(w->mods, w->n, cur, ncur, on_module, &x);
        char *saved = xasprintf("boot %s\n%s", boot ? boot : "", text);
        if (x.failures > 0 || agent_write_file(state, saved, strlen(saved)) != 0) {
            agent_log("error", NULL, "modules: %d records not written, or %s not saved", x.failures,
                      state);
            rc = -1;
        }
        free(saved);
    }
    if (rc == 0) {
        free(w->mods);
        w->mods = cur;
        w->n = ncur;
        cur = NULL;
    }
    free(cur);
    free(text);
    free(boot);
    return rc;
}

int agent_modules_main(const struct agent_cfg *c, int argc, char **argv)
{
    bool once;
    const char *extra;
    if (watch_args(argc, argv, &once, &extra) != 0 || extra)
        return AGENT_EXIT_USAGE;
    struct agent_modwatch *w = agent_modwatch_new();
    int rc = agent_modwatch_poll(c, w);
    while (!once && !agent_stop) {
        agent_nap(MODULES_POLL);
        if (!agent_stop)
            rc = agent_modwatch_poll(c, w);
    }
    agent_modwatch_free(w);
    return rc == 0 ? 0 : 1;
}

/* ---- auditd ------------------------------------------------------------------------- */

struct auditctx {
    const struct agent_cfg *c;
    unsigned long long hosth;
    long records;
    int failures;
};

static void on_exec(const struct agent_exec *e, void *arg)
{
    struct auditctx *x = arg;
    /* the shell hook's own `aidc-agent record`: the command it records is there already */
    if (e->argc >= 2 && e->argv[0] && e->argv[1] && strcmp(e->argv[1], "record") == 0) {
        const char *base = strrchr(e->argv[0], '/');
        if (strcmp(base ? base + 1 : e->argv[0], "aidc-agent") == 0)
            return;
    }
    size_t len;
    char *cmd = agent_parse_exec_command(e, &len);
    long long uid = e->auid >= 0 && e->auid < UNSET_ID ? e->auid : e->uid;
    char session[32], id[64];
    snprintf(session, sizeof session, "ses:%lld", e->ses);
    /* the kernel's serial starts again at each boot: with the event's time,
     * the id is the same only for the same event read twice */
    snprintf(id, sizeof id, "auditd-%016llx-%lld-%lu", x->hosth, (long long)e->ms, e->serial);
    struct agent_rec r = {.kind = "command",
                          .ms = e->ms,
                          .uid = uid,
                          .user = user_name(uid),
                          .session = e->ses >= 0 && e->ses < UNSET_ID ? session : NULL,
                          .cwd = e->cwd,
                          .command = cmd,
                          .command_len = len,
                          .record_id = id};
    if (len > 0 && agent_spool_append(x->c, &r) == 0)
        x->records++;
    else
        x->failures++;
    free(cmd);
}

struct follow {
    int fd;
    dev_t dev;
    ino_t ino;
    off_t offset; /* of the first byte not yet fed (the start of a partial line) */
    char *buf;    /* a partial line (what is kept of it) */
    size_t len;
    size_t linebytes; /* bytes of the partial line, kept or not */
    bool skipping;    /* inside a line too long to keep */
};

/* The state file "<dev> <inode> <offset>\n" into pos; false when absent or not that. */
static bool read_pos(const char *state, unsigned long long pos[3])
{
    char *text = agent_read_file(state, 256, NULL), *p = text, *end;
    bool ok = text != NULL;
    for (int i = 0; ok && i < 3; i++) {
        errno = 0;
        pos[i] = strtoull(p, &end, 10);
        ok = end != p && errno == 0 && *p != '-' && *end == (i < 2 ? ' ' : '\n');
        p = end + 1;
    }
    free(text);
    return ok;
}

static int follow_open(struct follow *f, const char *path, const char *state)
{
    f->fd = open(path, O_RDONLY | O_CLOEXEC);
    struct stat st;
    if (f->fd < 0 || fstat(f->fd, &st) != 0) {
        agent_log("error", NULL, "cannot read %s: %s", path, strerror(errno));
        return -1;
    }
    f->dev = st.st_dev;
    f->ino = st.st_ino;
    f->offset = 0;
    f->len = f->linebytes = 0;
    f->skipping = false;
    unsigned long long pos[3]; /* where the last run stopped */
    if (state && read_pos(state, pos) && pos[0] == st.st_dev && pos[1] == st.st_ino &&
        pos[2] <= (unsigned long long)st.st_size && lseek(f->fd, (off_t)pos[2], SEEK_SET) >= 0)
        f->offset = (off_t)pos[2];
    return 0;
}

static void follow_save(const struct follow *f, const char *state)
{
    char text[96];
    int n = snprintf(text, sizeof text, "%llu %llu %lld\n", (unsigned long long)f->dev,
                     (unsigned long long)f->ino, (long long)f->offset);
    if (n > 0 && (size_t)n < sizeof text && agent_write_file(state, text, (size_t)n) != 0)
        agent_log("warn", NULL, "cannot save the position in %s", state);
}

/* Feed the whole lines of chunk (plus the partial one kept from before). */
static void follow_feed(struct follow *f, struct agent_audit *a, const char *chunk, size_t n,
                        struct auditctx *x)
{
    for (size_t i = 0; i < n;) {
        const char *nl = memchr(chunk + i, '\n', n - i);
        size_t take = nl ? (size_t)(nl - (chunk + i)) : n - i;
        if (!f->skipping && f->len + take <= AUDIT_MAX_LINE) {
            f->buf = xrealloc(f->buf, f->len + take + 1);
            memcpy(f->buf + f->len, chunk + i, take);
            f->len += take;
            f->buf[f->len] = '\0';
        } else {
            f->skipping = true;
        }
        i += take;
        f->linebytes += take;
        if (!nl)
            break;
        i++;
        if (!f->skipping)
            agent_parse_audit_feed(a, f->buf, on_exec, x);
        f->offset += (off_t)(f->linebytes + 1);
        f->len = f->linebytes = 0;
        f->skipping = false;
    }
}

int agent_auditd_main(const struct agent_cfg *c, int argc, char **argv)
{
    bool once;
    const char *path;
    char state[PATH_MAX];
    if (watch_args(argc, argv, &once, &path) != 0)
        return AGENT_EXIT_USAGE;
    path = path ? path : "/var/log/audit/audit.log";
    if (agent_state_path(c, "auditd.pos", state, sizeof state) != 0)
        return 1;
    struct auditctx x = {.c = c, .hosth = agent_parse_fnv64(c->host)};
    struct follow f = {.fd = -1};
    struct agent_audit *a = agent_parse_audit_new();
    char *chunk = xmalloc(AUDIT_CHUNK);
    int rc = follow_open(&f, path, state) == 0 ? 0 : 1;
    int idle = 0;
    while (rc == 0 && !agent_stop) {
        ssize_t r = read(f.fd, chunk, AUDIT_CHUNK);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            agent_log("error", NULL, "reading %s: %s", path, strerror(errno));
            rc = 1;
            break;
        }
        if (r > 0) {
            follow_feed(&f, a, chunk, (size_t)r, &x);
            idle = 0;
            continue;
        }
        /* the end, for now: an event still pending after a second look is complete */
        if (once || ++idle >= 2)
            agent_parse_audit_flush(a, on_exec, &x);
        if (agent_parse_audit_pending(a) == 0)
            follow_save(&f, state);
        if (once)
            break;
        struct stat st;
        if (stat(path, &st) == 0 && (st.st_ino != f.ino || st.st_dev != f.dev)) {
            agent_parse_audit_flush(a, on_exec, &x); /* rotated: on to the new file */
            close(f.fd);
            if (follow_open(&f, path, NULL) != 0)
                rc = 1;
            continue;
        }
        if (stat(path, &st) == 0 && st.st_size < f.offset + (off_t)f.linebytes) {
            lseek(f.fd, 0, SEEK_SET); /* truncated in place */
            f.offset = 0;
            f.len = f.linebytes = 0;
        }
        agent_nap(1.0);
    }
    agent_log(x.failures ? "error" : "info",
              json_pack("{s:s,s:I,s:i}", "file", path, "records", (json_int_t)x.records, "failures",
                        x.failures),
              "auditd: %s", once ? "read to the end" : "stopped");
    free(chunk);
    free(f.buf);
    if (f.fd >= 0)
        close(f.fd);
    agent_parse_audit_free(a);
    return rc == 0 && x.failures == 0 ? 0 : 1;
}

/* ---- image pulls -------------------------------------------------------------------- */

/* Start argv with its stdout on a pipe; the read end in *out, the pid returned (-1). */
static pid_t spawn(char *const *argv, int *out)
{
    int p[2];
    if (pipe2(p, O_CLOEXEC) != 0)
        return -1;
    pid_t pid = fork();
    if (pid == 0) {
        int null = open("/dev/null", O_RDONLY);
        if (null < 0 || dup2(null, 0) < 0 || dup2(p[1], 1) < 0)
            _exit(127);
        execvp(argv[0], argv);
        _exit(127);
    }
    close(p[1]);
    if (pid < 0) {
        close(p[0]);
        return -1;
    }
    *out = p[0];
    return pid;
}

struct imgctx {
    const struct agent_cfg *c;
    bool docker;
    char state[PATH_MAX];
    long long since; /* seconds: the last event seen (0: none yet) */
    long records;
    int failures;
};

static void image_line(struct imgctx *x, const char *line)
{
    char *image = NULL;
    int64_t ms;
    int rc = x->docker ? agent_parse_docker_event(line, &image, &ms)
                       : agent_parse_journal_pull(line, &image, &ms);
    if (rc != 0)
        return;
    char id[80];
    /* each pull is its own record: the same image pulled again is another one */
    snprintf(id, sizeof id, "pull-%016llx-%016llx-%lld",
             (unsigned long long)agent_parse_fnv64(x->c->host),
             (unsigned long long)agent_parse_fnv64(image), (long long)ms);
    char *text = xasprintf("%s pull %s", x->docker ? "docker" : "containerd", image);
    struct agent_rec r = {.kind = "image_pull",
                          .ms = ms,
                          .uid = -1,
                          .command = text,
                          .command_len = strlen(text),
                          .record_id = id};
    if (agent_spool_append(x->c, &r) == 0) {
        x->records++;
        x->since = ms / 1000;
        char pos[32];
        int n = snprintf(pos, sizeof pos, "%lld\n", x->since);
        if (n > 0 && (size_t)n < sizeof pos && agent_write_file(x->state, pos, (size_t)n) != 0)
            agent_log("warn", NULL, "cannot save %s", x->state);
    } else {
        x->failures++;
    }
    free(text);
    free(image);
}

/* Run the event source once to its end (or until stopped); its exit status. */
static int image_source(struct imgctx *x, bool once)
{
    char since[32] = "", until[32] = "";
    if (x->since > 0)
        snprintf(since, sizeof since, x->docker ? "%lld" : "@%lld", x->since);
    snprintf(until, sizeof until, "%lld", (long long)(agent_now_ms() / 1000));
    const char *docker[] = {"docker",     "events",   "--filter",   "type=image", "--filter",
                            "event=pull", "--format", "{{json .}}", NULL,         NULL,
                            NULL,         NULL,       NULL};
    const char *journal[] = {"journalctl", "-o", "json", "-u", "containerd",
                             NULL,         NULL, NULL,   NULL};
    const char **args = x->docker ? docker : journal;
    size_t n = x->docker ? 8 : 5;
    if (since[0]) {
        args[n++] = "--since";
        args[n++] = since;
    }
    if (!x->docker && !once)
        args[n++] = "--follow";
    if (x->docker && once) {
        args[n++] = "--until";
        args[n++] = until;
    }
    int fd;
    pid_t pid = spawn((char *const *)args, &fd);
    if (pid < 0) {
        agent_log("error", NULL, "cannot start %s: %s", args[0], strerror(errno));
        return -1;
    }
    FILE *in = fdopen(fd, "r");
    char *line = NULL;
    size_t cap = 0;
    while (in && !agent_stop) {
        errno = 0;
        ssize_t got = getline(&line, &cap, in);
        if (got < 0 && errno == EINTR) {
            clearerr(in);
            continue;
        }
        if (got < 0)
            break;
        line[strcspn(line, "\n")] = '\0';
        image_line(x, line);
    }
    free(line);
    if (in)
        fclose(in);
    else
        close(fd);
    if (agent_stop)
        kill(pid, SIGTERM); /* our own child, by its pid */
    int st = 0;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
        ;
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

int agent_images_main(const struct agent_cfg *c, int argc, char **argv)
{
    bool once;
    const char *source;
    if (watch_args(argc, argv, &once, &source) != 0)
        return AGENT_EXIT_USAGE;
    source = source ? source : "docker";
    struct imgctx x = {.c = c, .docker = strcmp(source, "docker") == 0};
    if (!x.docker && strcmp(source, "containerd") != 0) {
        fprintf(stderr, "aidc-agent images: the source is docker or containerd\n");
        return AGENT_EXIT_USAGE;
    }
    char name[64];
    snprintf(name, sizeof name, "images-%s.since", source);
    if (agent_state_path(c, name, x.state, sizeof x.state) != 0)
        return 1;
    char *saved = agent_read_file(x.state, 64, NULL);
    /* the first start begins now: older pulls are not replayed */
    x.since = saved ? strtoll(saved, NULL, 10) : agent_now_ms() / 1000;
    free(saved);
    double backoff = 5;
    int st = 0;
    for (;;) {
        st = image_source(&x, once);
        if (once || agent_stop)
            break;
        agent_log("warn", NULL, "%s events ended (status %d): again in %.0f s", source, st,
                  backoff);
        agent_nap(backoff);
        backoff = backoff < 60 ? backoff * 2 : 60;
    }
    agent_log(x.failures ? "error" : "info",
              json_pack("{s:s,s:I,s:i}", "source", source, "records", (json_int_t)x.records,
                        "failures", x.failures),
              "images: %s", once ? "read to the end" : "stopped");
    return st == 0 && x.failures == 0 ? 0 : 1;
}
