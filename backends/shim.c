/* shim.c - runs one local job (see shim.h). A process of its own: it may use
 * plain blocking calls and exit on failure. */
#include "shim.h"

#include "../server/sbuf.h"
#include "../server/xalloc.h"
#include "rmtree.h"
#include "sandbox.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define MAX_ARGS 4096

void shim_status_parse(const json_t *doc, struct shim_status *out)
{
    memset(out, 0, sizeof *out);
    out->started_at = (time_t)json_integer_value(json_object_get(doc, "started_at"));
    out->finished_at = (time_t)json_integer_value(json_object_get(doc, "finished_at"));
    json_t *code = json_object_get(doc, "exit_code");
    out->exit_code = json_is_integer(code) ? (int)json_integer_value(code) : -1;
    out->stopped = json_is_true(json_object_get(doc, "stopped"));
    out->timed_out = json_is_true(json_object_get(doc, "timed_out"));
    const char *r = json_string_value(json_object_get(doc, "reason"));
    snprintf(out->reason, sizeof out->reason, "%s", r ? r : "");
}

static int write_atomic(const char *path, const char *text)
{
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0)
        return -1;
    size_t n = strlen(text);
    int ok = write(fd, text, n) == (ssize_t)n && fsync(fd) == 0;
    close(fd);
    return ok && rename(tmp, path) == 0 ? 0 : -1;
}

static void write_status(time_t started, int exit_code, int sig, bool stopped, bool timed_out,
                         const char *reason)
{
    json_t *s = json_pack("{s:I, s:I, s:o, s:o, s:b, s:b, s:s}", "started_at", (json_int_t)started,
                          "finished_at", (json_int_t)time(NULL), "exit_code",
                          exit_code >= 0 ? json_integer(exit_code) : json_null(), "signal",
                          sig ? json_integer(sig) : json_null(), "stopped", stopped, "timed_out",
                          timed_out, "reason", reason);
    char *text = s ? json_dumps(s, JSON_COMPACT) : NULL;
    json_decref(s);
    if (!text || write_atomic("status.json", text) != 0)
        exit(3); /* aidcd will see a shim gone without a status: "lost" */
    free(text);
}

/* The job's environment: a clean base, the job's variables, then the platform's. */
static char **build_env(const json_t *spec)
{
    struct sbuf gpus = SBUF_INIT;
    size_t i;
    json_t *v;
    json_array_foreach(json_object_get(spec, "gpu_indexes"), i, v) {
        if (gpus.len)
            sbuf_putc(&gpus, ',');
        sbuf_printf(&gpus, "%lld", (long long)json_integer_value(v));
    }
    const json_t *env = json_object_get(spec, "env");
    size_t n = 16 + json_object_size(env), k = 0;
    char **out = xcalloc(n + 1, sizeof *out);
    char cwd[4096];
    if (!getcwd(cwd, sizeof cwd))
        snprintf(cwd, sizeof cwd, "/");
    out[k++] = xstrdup("PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin");
    out[k++] = xasprintf("HOME=%s", cwd);
    out[k++] = xstrdup("LANG=C.UTF-8");
    /* the sandbox lets a job make files in its own directory, not always in /tmp */
    out[k++] = xasprintf("TMPDIR=%s/tmp", cwd);
    const char *key;
    json_object_foreach((json_t *)env, key, v) {
        for (size_t j = 0; j < k; j++) { /* the job may replace PATH, HOME, LANG, TMPDIR */
            size_t kl = strlen(key);
            if (strncmp(out[j], key, kl) == 0 && out[j][kl] == '=') {
                free(out[j]);
                out[j] = out[--k];
                break;
            }
        }
        out[k++] = xasprintf("%s=%s", key, json_string_value(v));
    }
    out[k++] = xasprintf("AIDC_JOB_ID=%s", json_string_value(json_object_get(spec, "job_id")));
    out[k++] = xasprintf("AIDC_TENANT=%s", json_string_value(json_object_get(spec, "tenant")));
    out[k++] = xasprintf("AIDC_PROJECT=%s", json_string_value(json_object_get(spec, "project")));
    out[k++] = xasprintf("AIDC_USER=%s", json_string_value(json_object_get(spec, "user")));
    out[k++] = xasprintf("CUDA_VISIBLE_DEVICES=%s", sbuf_str(&gpus));
    out[k++] = xasprintf("NVIDIA_VISIBLE_DEVICES=%s", gpus.len ? sbuf_str(&gpus) : "none");
    out[k] = NULL;
    sbuf_free(&gpus);
    return out;
}

static char **build_argv(const json_t *spec)
{
    const json_t *cmd = json_object_get(spec, "command");
    char **argv = xcalloc(MAX_ARGS + 2, sizeof *argv);
    if (json_is_array(cmd)) {
        size_t i;
        json_t *v;
        json_array_foreach(cmd, i, v) {
            if (i >= MAX_ARGS)
                break;
            argv[i] = xstrdup(json_string_value(v));
        }
    } else {
        const char *script = json_string_value(json_object_get(spec, "script"));
        if (write_atomic("script.sh", script ? script : "") != 0 || chmod("script.sh", 0700) != 0)
            exit(3);
        argv[0] = xstrdup("/bin/sh");
        argv[1] = xstrdup("script.sh");
    }
    return argv;
}

/* A sandbox's paths: each resolved if it exists (the sandbox compares real paths). */
static const char **real_paths(const json_t *a, size_t *n)
{
    const char **out = xcalloc(json_array_size(a) + 1, sizeof *out);
    size_t i;
    json_t *v;
    *n = 0;
    json_array_foreach(a, i, v) {
        const char *p = json_string_value(v);
        char real[PATH_MAX];
        if (p)
            out[(*n)++] = realpath(p, real) ? xstrdup(real) : xstrdup(p);
    }
    return out;
}

/*
 * In the job's process, before exec: confine it as job.json's sandbox says
 * (backends/sandbox.h). false: the job must not run; the reason is on its stderr.
 */
static bool confine(const json_t *sandbox)
{
    const char *mode = json_string_value(json_object_get(sandbox, "mode"));
    if (!sandbox || (mode && strcmp(mode, "none") == 0))
        return true; /* none, or written by an aidcd before sandboxes */
    if (sandbox_abi() < 1 && (!mode || strcmp(mode, "required") != 0)) {
        dprintf(2, "aidc: this kernel has no Landlock: the job runs unconfined\n");
        return true;
    }
    char own[PATH_MAX], err[512];
    struct sandbox_policy p = {.own = getcwd(own, sizeof own)};
    p.hidden = real_paths(json_object_get(sandbox, "hidden"), &p.nhidden);
    p.writable = real_paths(json_object_get(sandbox, "writable"), &p.nwritable);
    if (!p.own || sandbox_confine(&p, err, sizeof err) != 0) {
        dprintf(2, "aidc: cannot confine the job: %s\n", p.own ? err : "no working directory");
        return false;
    }
    return true; /* the paths go with the process image at exec */
}

/*
 * The job's TMPDIR goes when it ends, as Slurm's per-job tmp does. A process
 * the job left behind may still change the tree: rmtree follows no link.
 */
static void remove_tmp(void)
{
    if (rmtree_at(AT_FDCWD, "tmp") == 0)
        return;
    int err = open("stderr", O_WRONLY | O_APPEND | O_CLOEXEC); /* the job's log says so */
    if (err >= 0) {
        dprintf(err, "aidc: could not remove all of the job's tmp directory\n");
        close(err);
    }
}

static pid_t start_job(char **argv, char **envp, const json_t *sandbox)
{
    int out = open("stdout", O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
    int err = open("stderr", O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
    int in = open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (out < 0 || err < 0 || in < 0)
        return -1;
    pid_t pid = fork();
    if (pid == 0) {
        sigset_t none;
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL);
        signal(SIGPIPE, SIG_DFL); /* aidcd ignores it; exec would pass that on */
        setpgid(0, 0);
        dup2(in, 0);
        dup2(out, 1);
        dup2(err, 2);
        if (!confine(sandbox))
            _exit(126);
        execvpe(argv[0], argv, envp);
        dprintf(2, "aidc: cannot run %s: %s\n", argv[0], strerror(errno));
        _exit(127);
    }
    if (pid > 0)
        setpgid(pid, pid); /* also here: no race with the signals below */
    close(out);
    close(err);
    close(in);
    return pid;
}

int shim_main(const char *dir)
{
    if (chdir(dir) != 0)
        return 2;
    json_t *spec = json_load_file("job.json", 0, NULL);
    if (!spec)
        return 2;
    time_t started = time(NULL);
    /* Signals first, then the pid, then the stop flag: a stop request that
     * comes before the pid is visible leaves the flag, one that comes after
     * finds the pid and its SIGTERM waits, blocked, until the loop below. */
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGALRM);
    sigaddset(&set, SIGCHLD);
    sigprocmask(SIG_BLOCK, &set, NULL);
    char pidtext[32];
    snprintf(pidtext, sizeof pidtext, "%ld\n", (long)getpid());
    if (write_atomic("shim.pid", pidtext) != 0)
        return 2;
    struct stat st;
    if (stat("stop", &st) == 0) { /* stopped before it could start */
        write_status(started, -1, 0, true, false, "stopped before it started");
        return 0;
    }

    const json_t *sandbox = json_object_get(spec, "sandbox");
    const char *mode = json_string_value(json_object_get(sandbox, "mode"));
    if (mode && strcmp(mode, "required") == 0 && sandbox_abi() < 1) {
        write_status(started, -1, 0, false, false,
                     "this kernel has no Landlock and options.sandbox is \"required\"");
        return 0;
    }
    if (mkdir("tmp", 0700) != 0 && errno != EEXIST) {
        write_status(started, -1, 0, false, false, "cannot create the job's tmp directory");
        return 0;
    }
    pid_t job = start_job(build_argv(spec), build_env(spec), sandbox);
    if (job < 0) {
        write_status(started, -1, 0, false, false, "cannot start the job");
        return 0;
    }
    long limit = (long)json_integer_value(json_object_get(spec, "time_limit_seconds"));
    long grace = (long)json_integer_value(json_object_get(spec, "grace_seconds"));
    alarm(limit > 0 ? (unsigned)limit : 0);
    bool stopping = false, stopped = false, timed_out = false;
    int status = 0;
    for (;;) {
        int sig = sigwaitinfo(&set, NULL);
        if (sig == SIGCHLD) {
            pid_t w = waitpid(job, &status, WNOHANG);
            if (w == job)
                break;
            continue;
        }
        if ((sig == SIGTERM || sig == SIGINT) && !stopping) {
            stopped = stopping = true;
            kill(-job, SIGTERM);
            alarm(grace > 0 ? (unsigned)grace : 1);
        } else if (sig == SIGALRM && !stopping) {
            timed_out = stopping = true;
            kill(-job, SIGTERM);
            alarm(grace > 0 ? (unsigned)grace : 1);
        } else if (sig == SIGALRM) {
            kill(-job, SIGKILL); /* the grace period is over */
        }
    }
    kill(-job, SIGKILL); /* whatever the job left behind in its group */
    int code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    int sig = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
    char reason[128];
    if (timed_out)
        snprintf(reason, sizeof reason, "time limit");
    else if (stopped)
        snprintf(reason, sizeof reason, "stopped");
    else if (sig)
        snprintf(reason, sizeof reason, "killed by signal %d", sig);
    else
        snprintf(reason, sizeof reason, "exit code %d", code);
    write_status(started, code, sig, stopped && !timed_out, timed_out, reason);
    remove_tmp(); /* after the status: its GPUs are free while a big tree goes */
    json_decref(spec);
    return 0;
}
