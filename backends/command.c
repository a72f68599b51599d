/* command.c - running an operator's program (see command.h). */
#include "command.h"

#include "../lib/err.h"
#include "../lib/sbuf.h"
#include "../lib/xalloc.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

bool command_template_valid(const json_t *tpl, char *err, size_t errsz)
{
    if (!json_is_array(tpl) || json_array_size(tpl) < 1 ||
        json_array_size(tpl) > COMMAND_MAX_ARGS) {
        snprintf(err, errsz, "must be an array of 1 to %d strings (the program and its arguments)",
                 COMMAND_MAX_ARGS);
        return false;
    }
    size_t i;
    json_t *a;
    json_array_foreach(tpl, i, a)
    {
        const char *s = json_string_value(a);
        if (!s || strlen(s) > COMMAND_MAX_ARG || json_string_length(a) != strlen(s)) {
            snprintf(err, errsz, "item %zu must be a string of at most %d bytes without NUL", i,
                     COMMAND_MAX_ARG);
            return false;
        }
    }
    if (json_string_value(json_array_get(tpl, 0))[0] != '/') {
        snprintf(err, errsz,
                 "must start with the program's absolute path (no shell, no PATH "
                 "search)");
        return false;
    }
    return true;
}

char **command_expand(const json_t *tpl, const char *const *keys, const char *const *values,
                      size_t n)
{
    char e[8];
    if (!command_template_valid(tpl, e, sizeof e))
        return NULL;
    size_t na = json_array_size(tpl);
    char **argv = xcalloc(na + 1, sizeof *argv);
    for (size_t i = 0; i < na; i++) {
        const char *s = json_string_value(json_array_get(tpl, i));
        struct sbuf b = SBUF_INIT;
        while (*s) {
            bool hit = false;
            for (size_t k = 0; k < n && !hit; k++) {
                size_t kl = strlen(keys[k]);
                if (s[0] == '{' && strncmp(s + 1, keys[k], kl) == 0 && s[kl + 1] == '}') {
                    sbuf_puts(&b, values[k] ? values[k] : "");
                    s += kl + 2;
                    hit = true;
                }
            }
            if (!hit)
                sbuf_putc(&b, *s++);
        }
        argv[i] = xstrdup(sbuf_str(&b));
        sbuf_free(&b);
    }
    return argv;
}

void command_argv_free(char **argv)
{
    for (size_t i = 0; argv && argv[i]; i++)
        free(argv[i]);
    free(argv);
}

json_t *command_argv_json(char *const *argv)
{
    json_t *a = json_array();
    for (size_t i = 0; argv && argv[i]; i++)
        json_array_append_new(a, json_string(argv[i]));
    return a;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/*
 * Read the child's output until it closes it or the deadline; false at the
 * deadline, or when cancel_fd (>= 0) became readable (out->cancelled).
 */
static bool drain_output(int fd, int cancel_fd, const struct command_watch *watch, double deadline,
                         struct command_result *out)
{
    size_t len = 0;
    char scratch[4096];
    for (;;) {
        double left = deadline - now_s();
        if (left <= 0)
            return false;
        struct pollfd p[2] = {{.fd = fd, .events = POLLIN}, {.fd = cancel_fd, .events = POLLIN}};
        int wait_ms = (int)(left * 1000) + 1;
        if (watch && watch->every_ms < wait_ms)
            wait_ms = watch->every_ms;
        int r = poll(p, cancel_fd >= 0 ? 2 : 1, wait_ms);
        if (watch && !watch->ok(watch->arg)) {
            out->watched = true;
            return false;
        }
        if (r < 0 && errno == EINTR)
            continue;
        if (r == 0 && now_s() < deadline)
            continue; /* only the watch's turn */
        if (r <= 0)
            return r == 0 ? false : true;
        if (cancel_fd >= 0 && (p[1].revents & POLLIN)) {
            out->cancelled = true;
            return false;
        }
        ssize_t got = read(fd, scratch, sizeof scratch);
        if (got < 0 && errno == EINTR)
            continue;
        if (got <= 0)
            return true; /* closed: the program (and what it started) is done with it */
        size_t keep = (size_t)got;
        if (keep > sizeof out->output - 1 - len)
            keep = sizeof out->output - 1 - len; /* the rest is read and dropped */
        memcpy(out->output + len, scratch, keep);
        len += keep;
        out->output[len] = '\0';
    }
}

int command_run(char *const *argv, int timeout_s, struct command_result *out, char *err,
                size_t errsz)
{
    static char *const envp[] = {
        (char *)"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
        (char *)"LC_ALL=C", NULL};
    return command_run_in(argv, envp, timeout_s, -1, NULL, out, err, errsz);
}

int command_run_in(char *const *argv, char *const *envp, int timeout_s, int cancel_fd,
                   const struct command_watch *watch, struct command_result *out, char *err,
                   size_t errsz)
{
    memset(out, 0, sizeof *out);
    out->exit_status = -1;
    int fds[2];
    if (!argv || !argv[0] || argv[0][0] != '/') {
        snprintf(err, errsz, "no program to run (an absolute path is needed)");
        return AIDC_EIO;
    }
    if (pipe2(fds, O_CLOEXEC) != 0) {
        snprintf(err, errsz, "pipe: %s", strerror(errno));
        return AIDC_EIO;
    }
    pid_t pid = fork();
    if (pid < 0) {
        snprintf(err, errsz, "fork: %s", strerror(errno));
        close(fds[0]);
        close(fds[1]);
        return AIDC_EIO;
    }
    if (pid == 0) {
        /* only async-signal-safe calls here: this process has other threads */
        setpgid(0, 0); /* its own group, so a time-out kills what it started too */
        int devnull = open("/dev/null", O_RDONLY);
        if (devnull < 0 || dup2(devnull, 0) < 0 || dup2(fds[1], 1) < 0 || dup2(fds[1], 2) < 0)
            _exit(126);
        close_range(3, ~0U, 0); /* nothing of aidcd's: sockets, database connections */
        execve(argv[0], argv, envp);
        _exit(127);
    }
    close(fds[1]);
    double deadline = now_s() + (timeout_s > 0 ? timeout_s : 30);
    bool done = drain_output(fds[0], cancel_fd, watch, deadline, out);
    close(fds[0]);
    int st = 0;
    pid_t w = 0;
    /* the output closed: the program ends now, or is killed at the deadline as a
     * silent one is (one that closed its output and went on must not hold us) */
    while (done && now_s() < deadline) {
        w = waitpid(pid, &st, WNOHANG);
        if (w == pid || (w < 0 && errno != EINTR))
            break;
        struct timespec nap = {0, 10L * 1000 * 1000};
        nanosleep(&nap, NULL);
    }
    if (w != pid) {
        out->timed_out = !out->cancelled && !out->watched && (w == 0 || !done);
        kill(-pid, SIGKILL);
        kill(pid, SIGKILL);
        while ((w = waitpid(pid, &st, 0)) < 0 && errno == EINTR)
            ;
    }
    if (w != pid) {
        snprintf(err, errsz, "waitpid: %s", strerror(errno));
        return AIDC_EIO;
    }
    if (WIFEXITED(st)) {
        out->exit_status = WEXITSTATUS(st);
    } else if (WIFSIGNALED(st)) {
        out->signal = WTERMSIG(st);
    }
    return 0;
}
