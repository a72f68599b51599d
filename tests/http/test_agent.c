/*
 * test_agent.c - the node agent (deploy/agent, docs/agent.md) against the
 * real aidcd: an interactive bash (and zsh, where installed) with the hook
 * records its commands,
 * `aidc-agent ship --once` sends them, and GET /api/v1/audit/commands shows
 * each exactly once, with its exit status and directory - also when aidcd
 * was down (the spool keeps them and ship says "try again"), when a file is
 * sent again (duplicates, not copies), when aidcd refuses a batch (it goes to
 * rejected/ with the answer, and is not sent again), when a spool file holds
 * lines that are not records, and when the token file is readable by others
 * (refused; the token never appears in the agent's output). The watchers
 * (auditd EXECVE, /proc/modules, docker image pulls) are driven from files
 * and a stand-in `docker`.
 *
 * The test stops and starts aidcd itself, so it runs without Check's fork;
 * every wait has a deadline of its own. One aidcd serves all the tests: each
 * has a host (the records it looks at) and a spool of its own. The shell hook runs the agent in the
 * background: the test waits for the spool to hold the lines it expects.
 */
#include "tests/support/client.h"
#include "tests/support/harness.h"
#include "tests/support/jobs.h"
#include "tests/support/suite.h"

#include <check.h>
#include <dirent.h>
#include <fcntl.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifndef AIDC_AGENT_BIN
#error "AIDC_AGENT_BIN: the path of aidc-agent (tests/CMakeLists.txt)"
#endif

static char *token; /* the secret of an audit:ingest token */
static char token_file[300], conf_file[300], hook[300];

/* ---- fixture ---------------------------------------------------------------------- */

static void setup(void)
{
    harness_setup("agent", NULL);
    token = make_token(harness_srv.admin_token, "[\"audit:ingest\"]", NULL);
    ck_assert_ptr_nonnull(token);
    ck_assert_int_eq(strncmp(token, "aidc_", 5), 0);
    snprintf(token_file, sizeof token_file, "%s/agent-token", harness_srv.data_dir);
    snprintf(conf_file, sizeof conf_file, "%s/aidc-agent.conf", harness_srv.data_dir);
    snprintf(hook, sizeof hook, "%s/deploy/agent/aidc-hook.sh", AIDC_SOURCE_DIR);
    FILE *f = fopen(token_file, "w");
    ck_assert_ptr_nonnull(f);
    fprintf(f, "%s\n", token);
    ck_assert_int_eq(fclose(f), 0);
    ck_assert_int_eq(chmod(token_file, 0600), 0);
}

/* aidcd running (a test that failed half way may have left it stopped) */
static void server_up(void)
{
    if (harness_srv.pid <= 0)
        ck_assert_msg(jobs_restart_server(NULL) == 0, "aidcd did not start again, see %s",
                      harness_srv.log_path);
}

static void teardown(void)
{
    if (harness_srv.pid <= 0 && jobs_restart_server(NULL) != 0)
        fprintf(stderr, "teardown: aidcd did not start again\n");
    free(token);
    harness_teardown();
}

/* ---- helpers ---------------------------------------------------------------------- */

static void write_text(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    ck_assert_msg(f != NULL, "cannot write %s", path);
    fputs(text, f);
    ck_assert_int_eq(fclose(f), 0);
}

/* A fresh spool directory under the data dir. */
static const char *new_spool(const char *name)
{
    static char path[8][300];
    static int next;
    char *p = path[next++ % 8];
    snprintf(p, 300, "%s/%s", harness_srv.data_dir, name);
    ck_assert_int_eq(mkdir(p, 0700), 0);
    return p;
}

/*
 * Run aidc-agent args with the spool and host, the URL and token file from
 * a configuration file (written now: aidcd's port changes when it restarts)
 * and extra environment; returns its exit status, its output in *out (may be
 * NULL). Its output must never hold the token.
 */
static int agent(const char *spool, const char *host, const char *const *args,
                 const char *const *env, char **out)
{
    char conf[1024], log[320];
    snprintf(conf, sizeof conf,
             "# written by test_agent\nAIDC_AGENT_URL=%s\nAIDC_AGENT_TOKEN_FILE=\"%s\"\n",
             harness_srv.base, token_file);
    write_text(conf_file, conf);
    snprintf(log, sizeof log, "%s/agent.out", harness_srv.data_dir);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        if (fd < 0 || dup2(fd, 1) < 0 || dup2(fd, 2) < 0)
            _exit(126);
        setenv("AIDC_AGENT_CONFIG", conf_file, 1);
        setenv("AIDC_AGENT_SPOOL", spool, 1);
        setenv("AIDC_AGENT_HOST", host, 1);
        for (const char *const *e = env; e && *e; e++)
            putenv((char *)*e);
        const char *argv[16] = {AIDC_AGENT_BIN};
        for (int i = 0; args[i] && i < 14; i++)
            argv[i + 1] = args[i];
        execv(AIDC_AGENT_BIN, (char *const *)argv);
        _exit(127);
    }
    int st = 0;
    ck_assert_int_eq(waitpid(pid, &st, 0), pid);
    char *text = harness_read_file(log);
    ck_assert_ptr_nonnull(text);
    ck_assert_msg(strstr(text, token) == NULL, "the agent's output holds the token:\n%s", text);
    ck_assert_msg(strstr(text, "ERROR: ") == NULL, "a sanitizer report:\n%s", text);
    if (out)
        *out = text;
    else
        free(text);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* ship --once must exit with want; its output in *out (may be NULL). */
static void ship(const char *spool, const char *host, int want, char **out)
{
    const char *args[] = {"ship", "--once", NULL};
    char *text;
    int st = agent(spool, host, args, NULL, &text);
    ck_assert_msg(st == want, "ship --once exited with %d, want %d:\n%s", st, want, text);
    if (out)
        *out = text;
    else
        free(text);
}

/* Lines in the spool's current and closed files (not in outbox/ or rejected/). */
static int spool_lines(const char *spool)
{
    DIR *d = opendir(spool);
    ck_assert_ptr_nonnull(d);
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] != 'u' && e->d_name[0] != 'c')
            continue;
        char *text = harness_read_file(fmt("%s/%s", spool, e->d_name));
        for (const char *p = text; p && (p = strchr(p, '\n')); p++)
            n++;
        free(text);
    }
    closedir(d);
    return n;
}

/* Files in spool/sub whose names end with suffix. */
static int files_in(const char *spool, const char *sub, const char *suffix)
{
    DIR *d = opendir(fmt("%s/%s", spool, sub));
    if (!d)
        return 0;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        size_t len = strlen(e->d_name), sl = strlen(suffix);
        n += e->d_name[0] != '.' && len >= sl && strcmp(e->d_name + len - sl, suffix) == 0;
    }
    closedir(d);
    return n;
}

/*
 * Run an interactive shell, "bash" or "zsh" (stdin: the script; no rc files,
 * no history file) with the hook sourced by the script; wait for it, then
 * for the spool to hold want lines (the hook records in the background).
 * Returns what the shell wrote (stdout and stderr).
 */
static char *run_shell(const char *shell, const char *spool, const char *host, const char *script,
                       int want, const char *agent_bin)
{
    char path[320], log[320];
    snprintf(path, sizeof path, "%s/script.sh", harness_srv.data_dir);
    snprintf(log, sizeof log, "%s/bash.out", harness_srv.data_dir);
    write_text(path, script);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        int in = open(path, O_RDONLY), out = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        if (in < 0 || out < 0 || dup2(in, 0) < 0 || dup2(out, 1) < 0 || dup2(out, 2) < 0)
            _exit(126);
        char *env[] = {
            (char *)fmt("AIDC_AGENT_BIN=%s", agent_bin),
            (char *)fmt("AIDC_AGENT_CONFIG=%s", conf_file),
            (char *)fmt("AIDC_AGENT_SPOOL=%s", spool),
            (char *)fmt("AIDC_AGENT_HOST=%s", host),
            (char *)fmt("HOME=%s", harness_srv.data_dir),
            "PATH=/usr/local/bin:/usr/bin:/bin",
            "HISTFILE=/dev/null",
            "HISTCONTROL=ignoreboth", /* Debian's default: " cmd" stays out of the history */
            "TERM=dumb",
            NULL};
        if (strcmp(shell, "zsh") == 0)
            execle("/usr/bin/zsh", "zsh", "-f", "-i", (char *)NULL, env); /* -f: no rc files */
        else
            execle("/bin/bash", "bash", "--norc", "--noprofile", "-i", (char *)NULL, env);
        _exit(127);
    }
    int st = 0;
    ck_assert_int_eq(waitpid(pid, &st, 0), pid);
    char *text = harness_read_file(log);
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "%s ended with %d:\n%s", shell, st, text);
    double deadline = jobs_now() + 20;
    int have;
    while ((have = spool_lines(spool)) < want && jobs_now() < deadline)
        jobs_nap_ms(20);
    ck_assert_msg(have == want, "the spool has %d lines, want %d; %s said:\n%s", have, want, shell,
                  text);
    return text;
}

/* Whether a shell's output has nothing from the hook (bash echoes the script's lines). */
static bool hook_was_quiet(const char *said)
{
    return !strstr(said, "aidc-hook.sh:") && !strstr(said, "unbound variable") &&
           !strstr(said, "parameter not set") && !strstr(said, "No such file") &&
           !strstr(said, "command not found") && !strstr(said, "usage: aidc-agent");
}

/* GET the records of host (newest first; new reference). */
static json_t *records_of(const char *host)
{
    struct http_res r;
    long st = reqj("GET", fmt("/api/v1/audit/commands?host=%s&limit=200", host),
                   harness_srv.admin_token, NULL, &r);
    ck_assert_msg(st == 200, "GET audit/commands answered %ld: %s", st, r.body);
    json_t *items = json_incref(json_object_get(r.json, "items"));
    ck_assert(json_is_array(items));
    http_res_free(&r);
    return items;
}

/* The one record whose command is text; fails unless there is exactly one. */
static json_t *the_record(json_t *items, const char *text)
{
    json_t *found = NULL, *it;
    size_t i, n = 0;
    json_array_foreach(items, i, it)
    {
        const char *cmd = json_string_value(json_object_get(it, "command"));
        if (cmd && strcmp(cmd, text) == 0) {
            found = it;
            n++;
        }
    }
    ck_assert_msg(n == 1, "%zu records of \"%s\" in %s", n, text,
                  json_dumps(items, JSON_COMPACT)); /* leaks only when failing */
    return found;
}

static void check_record(json_t *items, const char *text, const char *kind, int exit_code,
                         const char *cwd)
{
    json_t *rec = the_record(items, text);
    ck_assert_str_eq(json_string_value(json_object_get(rec, "kind")), kind);
    json_t *ec = json_object_get(rec, "exit_code");
    if (exit_code == -1000)
        ck_assert(!ec || json_is_null(ec));
    else
        ck_assert_msg(json_integer_value(ec) == exit_code, "%s: exit_code %lld, want %d", text,
                      (long long)json_integer_value(ec), exit_code);
    if (cwd)
        ck_assert_str_eq(json_string_value(json_object_get(rec, "cwd")), cwd);
}

static const char *my_name(void)
{
    struct passwd *pw = getpwuid(getuid());
    ck_assert_ptr_nonnull(pw);
    return pw->pw_name;
}

/* ---- the tests -------------------------------------------------------------------- */

START_TEST(shell_commands_reach_aidcd_once_across_an_outage)
{
    int me = (int)getpid();
    const char *spool = new_spool("spool-shell");
    char host[64];
    snprintf(host, sizeof host, "node-shell-%d", me);
    char a[300], b[300];
    snprintf(a, sizeof a, "%s/dir-a", harness_srv.data_dir);
    snprintf(b, sizeof b, "%s/dir b", harness_srv.data_dir);
    ck_assert_int_eq(mkdir(a, 0700), 0);
    ck_assert_int_eq(mkdir(b, 0700), 0);

    /* nounset, a space-prefixed line (kept out of the history), $? intact */
    char *script = strdup(fmt("set -u\nsource %s\ncd %s\necho agent-one-%d\ncd '%s'\n"
                              "false agent-two-%d\necho \"status=$?\"\n"
                              " sh -c 'exit 7' agent-three-%d\nexit 0\n",
                              hook, a, me, b, me, me));
    char *said = run_shell("bash", spool, host, script, 6, AIDC_AGENT_BIN);
    free(script);
    ck_assert_msg(strstr(said, "status=1") != NULL, "the hook changed $?:\n%s", said);
    ck_assert_msg(hook_was_quiet(said), "the hook spoke:\n%s", said);
    free(said);
    /* kept for the resend below: the lines exactly as recorded */
    char *first = harness_read_file(fmt("%s/u%u.ndjson", spool, (unsigned)geteuid()));
    ck_assert_ptr_nonnull(first);

    char *out;
    ship(spool, host, 0, &out);
    ck_assert_msg(strstr(out, "\"accepted\":6") != NULL, "ship said:\n%s", out);
    free(out);
    json_t *items = records_of(host);
    ck_assert_int_eq(json_array_size(items), 6);
    check_record(items, fmt("echo agent-one-%d", me), "command", 0, a);
    check_record(items, fmt("false agent-two-%d", me), "command", 1, b);
    check_record(items, fmt("sh -c 'exit 7' agent-three-%d", me), "command", 7, b);
    check_record(items, fmt("cd '%s'", b), "command", 0, a);
    json_t *rec = the_record(items, fmt("echo agent-one-%d", me));
    ck_assert_str_eq(json_string_value(json_object_get(rec, "host")), host);
    ck_assert_str_eq(json_string_value(json_object_get(rec, "user")), my_name());
    ck_assert_int_eq(json_integer_value(json_object_get(rec, "uid")), (long long)getuid());
    const char *session = json_string_value(json_object_get(rec, "session"));
    ck_assert_msg(session && (strncmp(session, "pid:", 4) == 0 || strncmp(session, "ses:", 4) == 0),
                  "session %s", session);
    ck_assert_int_eq(json_string_length(json_object_get(rec, "record_id")), 32);
    json_decref(items);
    ck_assert_int_eq(spool_lines(spool), 0);
    ck_assert_int_eq(files_in(spool, "outbox", ".ndjson"), 0);

    /* aidcd down: the spool keeps what is recorded meanwhile */
    ck_assert_int_eq(harness_server_stop(&harness_srv), 0);
    said = run_shell("bash", spool, host,
                     fmt("source %s\necho agent-four-%d\n(exit 4)\nexit 0\n", hook, me), 2,
                     AIDC_AGENT_BIN);
    free(said);
    ship(spool, host, 75, &out);
    ck_assert_msg(strstr(out, "cannot reach aidcd") != NULL, "ship said:\n%s", out);
    free(out);
    ck_assert_int_eq(files_in(spool, "outbox", ".ndjson"), 1);
    ship(spool, host, 75, NULL); /* again: still kept, still one batch */
    ck_assert_int_eq(files_in(spool, "outbox", ".ndjson"), 1);

    ck_assert_msg(jobs_restart_server(NULL) == 0, "aidcd did not start again, see %s",
                  harness_srv.log_path);
    ship(spool, host, 0, &out);
    ck_assert_msg(strstr(out, "\"accepted\":2") != NULL, "ship said:\n%s", out);
    free(out);
    ck_assert_int_eq(files_in(spool, "outbox", ".ndjson"), 0);
    items = records_of(host);
    ck_assert_int_eq(json_array_size(items), 8);
    check_record(items, fmt("echo agent-four-%d", me), "command", 0, NULL);
    check_record(items, "(exit 4)", "command", 4, NULL);
    check_record(items, fmt("false agent-two-%d", me), "command", 1, b);
    json_decref(items);

    /* the first file again, byte for byte: duplicates, not copies */
    write_text(fmt("%s/c0000000000000-u%u-resent.ndjson", spool, (unsigned)geteuid()), first);
    free(first);
    ship(spool, host, 0, &out);
    ck_assert_msg(strstr(out, "\"accepted\":0,\"duplicates\":6") != NULL, "ship said:\n%s", out);
    free(out);
    items = records_of(host);
    ck_assert_int_eq(json_array_size(items), 8);
    check_record(items, fmt("echo agent-one-%d", me), "command", 0, a);
    json_decref(items);
}
END_TEST

START_TEST(zsh_commands_are_recorded)
{
    if (access("/usr/bin/zsh", X_OK) != 0) {
        fprintf(stderr, "zsh_commands_are_recorded: no /usr/bin/zsh here, not tested\n");
        return;
    }
    int me = (int)getpid();
    const char *spool = new_spool("spool-zsh");
    char host[64], dir[300];
    snprintf(host, sizeof host, "node-zsh-%d", me);
    snprintf(dir, sizeof dir, "%s/dir-z", harness_srv.data_dir);
    ck_assert_int_eq(mkdir(dir, 0700), 0);
    char *said = run_shell("zsh", spool, host,
                           fmt("setopt nounset\nsource %s\ncd %s\n  echo zsh-one-%d\n"
                               "false zsh-two-%d\necho \"st=$?\"\nexit 0\n",
                               hook, dir, me, me),
                           4, AIDC_AGENT_BIN);
    ck_assert_msg(strstr(said, "st=1") != NULL, "the hook changed $?:\n%s", said);
    ck_assert_msg(hook_was_quiet(said), "the hook spoke:\n%s", said);
    free(said);
    ship(spool, host, 0, NULL);
    json_t *items = records_of(host);
    ck_assert_int_eq(json_array_size(items), 4);
    check_record(items, fmt("echo zsh-one-%d", me), "command", 0, dir);
    check_record(items, fmt("false zsh-two-%d", me), "command", 1, dir);
    json_decref(items);
}
END_TEST

START_TEST(the_hook_is_silent_without_the_agent)
{
    const char *spool = new_spool("spool-missing");
    char *said =
        run_shell("bash", spool, "node-missing",
                  fmt("set -u\nsource %s\necho still-here\nfalse\necho \"st=$?\"\nexit 0\n", hook),
                  0, "/nonexistent/aidc-agent");
    ck_assert_msg(strstr(said, "still-here") && strstr(said, "st=1"), "bash said:\n%s", said);
    ck_assert_msg(hook_was_quiet(said), "the hook spoke:\n%s", said);
    free(said);
}
END_TEST

/* A record line as the agent writes it, for files the test makes itself. */
static char *line_for(const char *host, const char *command, const char *extra)
{
    char ts[40];
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(ts, sizeof ts, "%Y-%m-%dT%H:%M:%S.000Z", &tm);
    return strdup(fmt("{\"ts\":\"%s\",\"host\":\"%s\",\"uid\":%u,\"command\":\"%s\","
                      "\"kind\":\"command\",\"record_id\":\"test-%s-%d\"%s}\n",
                      ts, host, (unsigned)geteuid(), command, command, (int)getpid(), extra));
}

START_TEST(refused_batches_and_bad_lines_are_kept_aside_not_resent)
{
    const char *spool = new_spool("spool-refused");
    char host[64];
    snprintf(host, sizeof host, "node-refused-%d", (int)getpid());
    char *out;

    /* a line that is not a record: kept in rejected/, the good line is sent */
    char *good = line_for(host, "good-after-garbage", "");
    write_text(fmt("%s/c0000000000001-u%u-mixed.ndjson", spool, (unsigned)geteuid()),
               fmt("this is not json\n%s{\"cut\": \"short", good));
    free(good);
    ship(spool, host, 0, &out);
    ck_assert_msg(strstr(out, "not a JSON object") && strstr(out, "\"accepted\":1"),
                  "ship said:\n%s", out);
    free(out);
    ck_assert_int_eq(files_in(spool, "rejected", ".invalid"), 1);
    json_t *items = records_of(host);
    ck_assert_int_eq(json_array_size(items), 1);
    check_record(items, "good-after-garbage", "command", -1000, NULL);
    json_decref(items);

    /* a batch aidcd refuses (a field it does not know): all of it aside, with the answer */
    char *ok = line_for(host, "fine-but-in-a-bad-batch", "");
    char *bad = line_for(host, "has-an-unknown-field", ",\"colour\":\"blue\"");
    write_text(fmt("%s/c0000000000002-u%u-bad.ndjson", spool, (unsigned)geteuid()),
               fmt("%s%s", ok, bad));
    free(ok);
    free(bad);
    ship(spool, host, 0, &out);
    ck_assert_msg(strstr(out, "aidcd refused a batch") && strstr(out, "colour"), "ship said:\n%s",
                  out);
    free(out);
    ck_assert_int_eq(files_in(spool, "rejected", ".ndjson"), 1);
    ck_assert_int_eq(files_in(spool, "rejected", ".problem.json"), 1);
    ck_assert_int_eq(files_in(spool, "outbox", ".ndjson"), 0);
    /* never sent again */
    ship(spool, host, 0, &out);
    ck_assert_msg(!strstr(out, "refused") && !strstr(out, "batch sent"), "ship said:\n%s", out);
    free(out);
    items = records_of(host);
    ck_assert_int_eq(json_array_size(items), 1);
    json_decref(items);
}
END_TEST

START_TEST(a_token_file_others_can_read_is_refused)
{
    const char *spool = new_spool("spool-token");
    char host[64];
    snprintf(host, sizeof host, "node-token-%d", (int)getpid());
    const char *rec[] = {"record", "--exit", "0", "--", "token-test", NULL};
    ck_assert_int_eq(agent(spool, host, rec, NULL, NULL), 0);
    ck_assert_int_eq(chmod(token_file, 0644), 0);
    char *out;
    ship(spool, host, 1, &out);
    ck_assert_msg(strstr(out, "readable by group or others (mode 0644)") && strstr(out, token_file),
                  "ship said:\n%s", out);
    free(out);
    /* the group is other users too (OpenSSH's rule for private keys: docs/secrets.md) */
    ck_assert_int_eq(chmod(token_file, 0640), 0);
    ship(spool, host, 1, &out);
    ck_assert_int_eq(chmod(token_file, 0600), 0);
    ck_assert_msg(strstr(out, "(mode 0640)"), "ship said:\n%s", out);
    free(out);
    ck_assert_int_eq(files_in(spool, "outbox", ".ndjson"), 1); /* kept */
    ship(spool, host, 0, NULL);
    json_t *items = records_of(host);
    check_record(items, "token-test", "command", 0, NULL);
    json_decref(items);

    /* a bad record never enters the spool: its batch would be refused whole */
    const char *bad_kind[] = {"record", "--kind", "nonsense", "--", "x", NULL};
    const char *bad_exit[] = {"record", "--exit", "4096", "--", "x", NULL};
    const char *no_text[] = {"record", "--exit", "0", NULL};
    ck_assert_int_eq(agent(spool, host, bad_kind, NULL, NULL), 2);
    ck_assert_int_eq(agent(spool, host, bad_exit, NULL, NULL), 2);
    ck_assert_int_eq(agent(spool, host, no_text, NULL, NULL), 2);
    ck_assert_int_eq(spool_lines(spool), 0);
}
END_TEST

/* One auditd event of an execve (SYSCALL, EXECVE, CWD, PATH, PROCTITLE) at t. */
static void audit_event(FILE *f, time_t t, int serial, const char *execve, const char *cwd)
{
    fprintf(f,
            "type=SYSCALL msg=audit(%lld.250:%d): arch=c000003e syscall=59 success=yes exit=0 "
            "a0=55d0 a1=55d1 a2=55d2 a3=0 items=2 ppid=10 pid=11 auid=%u uid=%u gid=0 euid=0 "
            "suid=0 fsuid=0 egid=0 sgid=0 fsgid=0 tty=pts0 ses=5 comm=\"x\" exe=\"/usr/bin/x\" "
            "key=\"aidc\"\x1d"
            "ARCH=x86_64 SYSCALL=execve AUID=\"someone\"\n"
            "type=EXECVE msg=audit(%lld.250:%d): %s\n"
            "type=CWD msg=audit(%lld.250:%d): cwd=%s\n"
            "type=PATH msg=audit(%lld.250:%d): item=0 name=\"/usr/bin/x\" inode=1 dev=08:01\n"
            "type=PROCTITLE msg=audit(%lld.250:%d): proctitle=6C73\n",
            (long long)t, serial, (unsigned)getuid(), (unsigned)getuid(), (long long)t, serial,
            execve, (long long)t, serial, cwd, (long long)t, serial, (long long)t, serial);
}

START_TEST(watchers_record_execs_modules_and_image_pulls)
{
    const char *spool = new_spool("spool-watch");
    char host[64];
    snprintf(host, sizeof host, "node-watch-%d", (int)getpid());
    char *out;

    /* auditd: hex-encoded arguments, the agent's own `record` left out */
    char log[320];
    snprintf(log, sizeof log, "%s/audit.log", harness_srv.data_dir);
    FILE *f = fopen(log, "w");
    ck_assert_ptr_nonnull(f);
    time_t t = time(NULL) - 60;
    fprintf(f, "type=DAEMON_START msg=audit(%lld.000:1): op=start ver=3.0.9 res=success\n",
            (long long)t);
    /* "/tmp/my dir" is hex: it holds a space */
    audit_event(f, t, 101, "argc=3 a0=\"ls\" a1=\"-l\" a2=2F746D702F6D7920646972", "\"/root\"");
    audit_event(f, t, 102, "argc=3 a0=\"/usr/local/bin/aidc-agent\" a1=\"record\" a2=\"x\"",
                "\"/\"");
    ck_assert_int_eq(fclose(f), 0);
    const char *auditd[] = {"auditd", log, "--once", NULL};
    ck_assert_int_eq(agent(spool, host, auditd, NULL, NULL), 0);
    ck_assert_int_eq(spool_lines(spool), 1);
    ck_assert_int_eq(agent(spool, host, auditd, NULL, NULL), 0); /* resumes at its end */
    ck_assert_int_eq(spool_lines(spool), 1);

    /* kernel modules: what is there at the first look, then loads and unloads */
    char mods[320];
    snprintf(mods, sizeof mods, "%s/modules", harness_srv.data_dir);
    write_text(mods, "nvme 49152 2 - Live 0x0000000000000000\n"
                     "nvidia 56823808 1 nvidia_modeset, Live 0x0000000000000000 (POE)\n");
    const char *modules[] = {"modules", "--once", NULL};
    char menv_file[400];
    snprintf(menv_file, sizeof menv_file, "AIDC_AGENT_MODULES_FILE=%s", mods);
    const char *menv[] = {menv_file, NULL};
    ck_assert_int_eq(agent(spool, host, modules, menv, NULL), 0);
    ck_assert_int_eq(spool_lines(spool), 3);
    write_text(mods, "nvidia_uvm 1437696 0 - Live 0x0000000000000000 (POE)\n"
                     "nvidia 56823808 1 nvidia_modeset, Live 0x0000000000000000 (POE)\n");
    ck_assert_int_eq(agent(spool, host, modules, menv, NULL), 0);
    ck_assert_int_eq(spool_lines(spool), 5);
    ck_assert_int_eq(agent(spool, host, modules, menv, NULL), 0); /* nothing changed */
    ck_assert_int_eq(spool_lines(spool), 5);

    /* image pulls: a stand-in docker that prints two events and ends */
    char bin[320];
    snprintf(bin, sizeof bin, "%s/bin", harness_srv.data_dir);
    ck_assert_int_eq(mkdir(bin, 0700), 0);
    long long ns = (long long)t * 1000000000LL + 123456789LL;
    write_text(fmt("%s/docker", bin),
               fmt("#!/bin/sh\n"
                   "echo '{\"Type\":\"container\",\"Action\":\"start\",\"Actor\":{\"ID\":\"c1\"},"
                   "\"time\":%lld,\"timeNano\":%lld}'\n"
                   "echo '{\"status\":\"pull\",\"id\":\"ubuntu:22.04\",\"Type\":\"image\","
                   "\"Action\":\"pull\",\"Actor\":{\"ID\":\"ubuntu:22.04\",\"Attributes\":"
                   "{\"name\":\"ubuntu\"}},\"scope\":\"local\",\"time\":%lld,\"timeNano\":%lld}'\n",
                   (long long)t, ns, (long long)t, ns));
    ck_assert_int_eq(chmod(fmt("%s/docker", bin), 0700), 0);
    const char *images[] = {"images", "docker", "--once", NULL};
    char ienv_path[400];
    snprintf(ienv_path, sizeof ienv_path, "PATH=%s:/usr/bin:/bin", bin);
    const char *ienv[] = {ienv_path, NULL};
    ck_assert_int_eq(agent(spool, host, images, ienv, NULL), 0);
    ck_assert_int_eq(spool_lines(spool), 6);

    ship(spool, host, 0, &out);
    ck_assert_msg(strstr(out, "\"accepted\":6"), "ship said:\n%s", out);
    free(out);
    json_t *items = records_of(host);
    ck_assert_int_eq(json_array_size(items), 6);
    check_record(items, "ls -l '/tmp/my dir'", "command", -1000, "/root");
    json_t *rec = the_record(items, "ls -l '/tmp/my dir'");
    ck_assert_str_eq(json_string_value(json_object_get(rec, "session")), "ses:5");
    ck_assert_int_eq(json_integer_value(json_object_get(rec, "uid")), (long long)getuid());
    check_record(items, "loaded nvme (size 49152)", "module", -1000, NULL);
    check_record(items, "loaded nvidia (size 56823808, taint POE)", "module", -1000, NULL);
    check_record(items, "load nvidia_uvm (size 1437696, taint POE)", "module", -1000, NULL);
    check_record(items, "unload nvme", "module", -1000, NULL);
    check_record(items, "docker pull ubuntu:22.04", "image_pull", -1000, NULL);
    json_decref(items);

    /* read again from the start: the same ids and times, so duplicates */
    ck_assert_int_eq(unlink(fmt("%s/state/auditd.pos", spool)), 0);
    ck_assert_int_eq(agent(spool, host, auditd, NULL, NULL), 0);
    ck_assert_int_eq(unlink(fmt("%s/state/images-docker.since", spool)), 0);
    ck_assert_int_eq(agent(spool, host, images, ienv, NULL), 0);
    ship(spool, host, 0, &out);
    ck_assert_msg(strstr(out, "\"accepted\":0,\"duplicates\":2"), "ship said:\n%s", out);
    free(out);
    items = records_of(host);
    ck_assert_int_eq(json_array_size(items), 6);
    json_decref(items);
}
END_TEST

int main(void)
{
    harness_require_pg();
    Suite *s = suite_create("agent");
    TCase *tc = tcase_create("agent");
    /* one aidcd for all: each test has a host and a spool of its own */
    tcase_add_unchecked_fixture(tc, setup, teardown);
    tcase_add_checked_fixture(tc, server_up, NULL);
    tcase_add_test(tc, shell_commands_reach_aidcd_once_across_an_outage);
    tcase_add_test(tc, zsh_commands_are_recorded);
    tcase_add_test(tc, the_hook_is_silent_without_the_agent);
    tcase_add_test(tc, refused_batches_and_bad_lines_are_kept_aside_not_resent);
    tcase_add_test(tc, a_token_file_others_can_read_is_refused);
    tcase_add_test(tc, watchers_record_execs_modules_and_image_pulls);
    suite_add_tcase(s, tc);
    return suite_run_nofork(s);
}
