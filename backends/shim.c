/* shim.c - runs one local job (see shim.h). A process of its own: it may use
 * plain blocking calls and exit on failure. */
#include "shim.h"

#include "../lib/fsat.h"
#include "../lib/xalloc.h"
#include "jobenv.h"
#include "../lib/rmtree.h"
#include "shimmount.h"
#include "shimrun.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

void shim_status_parse(const json_t *doc, struct shim_status *out)
{
    memset(out, 0, sizeof *out);
    out->started_at = (time_t)json_integer_value(json_object_get(doc, "started_at"));
    out->finished_at = (time_t)json_integer_value(json_object_get(doc, "finished_at"));
    json_t *code = json_object_get(doc, "exit_code");
    out->exit_code = json_is_integer(code) ? (int)json_integer_value(code) : -1;
    out->stopped = json_is_true(json_object_get(doc, "stopped"));
    out->timed_out = json_is_true(json_object_get(doc, "timed_out"));
    out->oom = json_is_true(json_object_get(doc, "oom"));
    json_t *cpu = json_object_get(doc, "cpu_seconds");
    json_t *mem = json_object_get(doc, "mem_peak_bytes");
    out->cpu_seconds = json_is_number(cpu) ? json_number_value(cpu) : -1;
    out->mem_peak_bytes = json_is_number(mem) ? json_number_value(mem) : -1;
    const char *r = json_string_value(json_object_get(doc, "reason"));
    snprintf(out->reason, sizeof out->reason, "%s", r ? r : "");
}

void shim_note(struct shim_run *r, const char *name, const char *text)
{
    if (fsat_write_atomic(r->dfd, name, text, strlen(text), 0600) != 0)
        exit(3); /* aidcd will see a shim gone without a status: "lost" */
}

void shim_end(struct shim_run *r, const struct shim_end *e)
{
    json_t *s = json_pack("{s:I, s:I, s:o, s:o, s:b, s:b, s:b, s:s}", "started_at",
                          (json_int_t)(r->started ? r->started : time(NULL)), "finished_at",
                          (json_int_t)time(NULL), "exit_code",
                          e->exit_code >= 0 ? json_integer(e->exit_code) : json_null(), "signal",
                          e->signal ? json_integer(e->signal) : json_null(), "stopped",
                          e->stopped, "timed_out", e->timed_out, "oom", e->oom, "reason",
                          e->reason);
    /* what it used (docs/efficiency.md), where it was measured */
    if (s && e->cpu_seconds >= 0)
        json_object_set_new(s, "cpu_seconds", json_real(e->cpu_seconds));
    if (s && e->mem_peak_bytes >= 0)
        json_object_set_new(s, "mem_peak_bytes", json_real(e->mem_peak_bytes));
    char *text = s ? json_dumps(s, JSON_COMPACT) : NULL;
    json_decref(s);
    if (!text)
        exit(3);
    shim_note(r, "status.json", text);
    free(text);
}

void shim_fail(struct shim_run *r, const char *reason)
{
    struct shim_end e = {.exit_code = -1, .cpu_seconds = -1, .mem_peak_bytes = -1};
    snprintf(e.reason, sizeof e.reason, "%.*s", (int)sizeof e.reason - 1, reason); /* cut */
    dprintf(2, "aidc: %s\n", reason); /* the job's stderr says why too */
    shim_end(r, &e);
}

/* The job's TMPDIR goes when it ends, as Slurm's per-job tmp does; rmtree follows no link. */
static void remove_tmp(struct shim_run *r)
{
    if (rmtree_at(r->dfd, "tmp") != 0)
        dprintf(2, "aidc: could not remove all of the job's tmp directory\n");
}

/* Make name in the control directory the job's own directory (0700, its uid). */
int shim_job_dir(struct shim_run *r, const char *name)
{
    if (mkdirat(r->dfd, name, 0700) != 0 && errno != EEXIST)
        return -1;
    int fd = fsat_open(r->dfd, name, O_RDONLY | O_DIRECTORY, 0);
    if (fd < 0)
        return -1;
    struct stat st;
    if (fstat(fd, &st) != 0 || (r->drop && fchown(fd, r->uid, r->gid) != 0) ||
        fchmod(fd, 0700) != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

/* In a child: become the job's user (root only; a job never runs as root). 0 or -1. */
int shim_drop(const struct shim_run *r)
{
    if (!r->drop)
        return 0;
    gid_t share = (gid_t)r->share_gid;
    if (setgroups(r->share_gid >= 0 ? 1 : 0, &share) != 0 ||
        setresgid(r->gid, r->gid, r->gid) != 0 || setresuid(r->uid, r->uid, r->uid) != 0)
        return -1;
    return geteuid() == r->uid && getegid() == r->gid ? 0 : -1;
}

/*
 * The job without a sandbox (options.sandbox "unconfined", an operator's
 * explicit choice): a process group of its own, as the job's uid when aidcd
 * is root, in its directory on the host.
 */
static void run_unconfined(struct shim_run *r)
{
    r->share_gid = -1; /* not even the image cache: nothing but what its uid may see */
    if (!r->drop) { /* it would be aidcd's own user, with aidcd's keys */
        shim_fail(r, "options.sandbox \"unconfined\" needs aidcd to run as root: a job must not "
                     "run as aidcd's own user");
        return;
    }
    dprintf(2, "aidc: WARNING: this job runs UNCONFINED (options.sandbox \"unconfined\"): it sees "
               "this machine as its user does\n");
    int work = shim_job_dir(r, "work"), tmp = shim_job_dir(r, "tmp");
    char cwd[4096];
    if (work < 0 || tmp < 0 || !getcwd(cwd, sizeof cwd)) {
        shim_fail(r, "cannot create the job's directory");
        return;
    }
    close(tmp);
    /* its storage spaces, checked as a sandboxed job's are, then named by their host paths
     * (its uid reaches its tenant's folders and nobody else's) */
    struct shimmount spaces;
    char why[512];
    if (shimmount_open(r->spec, r->drop, r->uid, r->gid, &spaces, why, sizeof why) != 0) {
        close(work);
        shim_fail(r, why);
        return;
    }
    json_t *spaces_env = shimmount_env(&spaces, false, why, sizeof why);
    shimmount_close(&spaces);
    if (!spaces_env) {
        close(work);
        shim_fail(r, why);
        return;
    }
    char *home = xasprintf("%s/work", cwd), *tmpdir = xasprintf("%s/tmp", cwd);
    struct jobenv_paths p = {.home = home, .tmp = tmpdir, .sandboxed = false,
                             .platform = spaces_env};
    char **env = jobenv_build(r->spec, NULL, &p), **argv = NULL;
    const char *script = json_string_value(json_object_get(r->spec, "script"));
    if (script && fsat_write_atomic(r->dfd, "script.sh", script, strlen(script), 0644) != 0) {
        shim_fail(r, "cannot write the job's script");
        goto out;
    }
    char *script_path = xasprintf("%s/script.sh", cwd);
    argv = jobenv_argv(r->spec, script_path);
    free(script_path);
    int in = open("/dev/null", O_RDONLY | O_CLOEXEC);
    pid_t pid = in >= 0 ? fork() : -1;
    if (pid == 0) {
        sigset_t none;
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL);
        signal(SIGPIPE, SIG_DFL);
        setpgid(0, 0);
        if (dup2(in, 0) < 0 || dup2(r->out, 1) < 0 || dup2(r->err, 2) < 0 || fchdir(work) != 0 ||
            shim_drop(r) != 0)
            _exit(126);
        execvpe(argv[0], argv, env);
        dprintf(2, "aidc: cannot run %s: %s\n", argv[0], strerror(errno));
        _exit(127);
    }
    if (in >= 0)
        close(in);
    if (pid < 0) {
        shim_fail(r, "cannot start the job");
        goto out;
    }
    setpgid(pid, pid);
    r->started = time(NULL);
    shim_mark_started(r);
    struct shim_end e;
    shim_supervise(r, pid, -1, NULL, &e);
    kill(-pid, SIGKILL); /* whatever the job left behind in its group */
    shim_end(r, &e);
out:
    close(work);
    jobenv_free(env);
    jobenv_free(argv);
    json_decref(spaces_env);
    free(home);
    free(tmpdir);
}

void shim_mark_started(struct shim_run *r)
{
    char text[32];
    snprintf(text, sizeof text, "%lld\n", (long long)r->started);
    shim_note(r, "started", text);
    shim_note(r, "phase", "running\n");
}

void shim_signal_job(pid_t pid, pid_t sandbox_pid, const struct cgroup_job *cg, int sig)
{
    if (sandbox_pid < 0) {
        kill(-pid, sig);
        return;
    }
    if (sig == SIGKILL) {
        kill(sandbox_pid, SIGKILL); /* pid 1 of its namespace: every process goes with it */
        return;
    }
    pid_t pids[4096];
    size_t n = cg ? cgroup_job_pids(cg, pids, sizeof pids / sizeof *pids) : 0;
    for (size_t i = 0; i < n; i++)
        if (pids[i] != pid && pids[i] != sandbox_pid)
            kill(pids[i], sig);
}

/* Wait for the job's end: its own, a stop request's or its time limit's. */
void shim_supervise(struct shim_run *r, pid_t pid, pid_t sandbox_pid,
                    const struct cgroup_job *cg, struct shim_end *e)
{
    memset(e, 0, sizeof *e);
    e->exit_code = -1;
    long limit = (long)json_integer_value(json_object_get(r->spec, "time_limit_seconds"));
    long grace = (long)json_integer_value(json_object_get(r->spec, "grace_seconds"));
    alarm(limit > 0 ? (unsigned)limit : 0);
    bool stopping = false;
    int status = 0;
    struct rusage ru;
    for (;;) {
        int sig = sigwaitinfo(&r->signals, NULL);
        if (sig == SIGCHLD) {
            pid_t w = wait4(pid, &status, WNOHANG, &ru);
            if (w == pid)
                break;
            while (waitpid(-1, NULL, WNOHANG) > 0) /* slirp4netns, if it died */
                ;
            continue;
        }
        if ((sig == SIGTERM || sig == SIGINT || sig == SIGALRM) && !stopping) {
            e->stopped = sig != SIGALRM;
            e->timed_out = sig == SIGALRM;
            stopping = true;
            shim_signal_job(pid, sandbox_pid, cg, SIGTERM);
            alarm(grace > 0 ? (unsigned)grace : 1);
        } else if (sig == SIGALRM) { /* the grace period is over */
            shim_signal_job(pid, sandbox_pid, cg, SIGKILL);
            e->killed = true;
        }
    }
    alarm(0);
    /* the job and every descendant reaped below it; its cgroup, where there is one, tells better */
    e->cpu_seconds = (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
                     (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
    e->mem_peak_bytes = (double)ru.ru_maxrss * 1024; /* the largest process's, in KiB */
    e->exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    e->signal = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
    if (e->timed_out)
        snprintf(e->reason, sizeof e->reason, "time limit");
    else if (e->stopped)
        snprintf(e->reason, sizeof e->reason, "stopped");
    else if (e->signal)
        snprintf(e->reason, sizeof e->reason, "killed by signal %d", e->signal);
    else
        snprintf(e->reason, sizeof e->reason, "exit code %d", e->exit_code);
}

int shim_main(const char *dir)
{
    struct shim_run r = {.dfd = -1, .out = -1, .err = -1};
    signal(SIGPIPE, SIG_IGN); /* a sandbox that dies early must not take the shim with it */
    r.dfd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (r.dfd < 0 || fchdir(r.dfd) != 0)
        return 2;
    char *text = fsat_read(r.dfd, "job.json", 4 << 20, NULL);
    r.spec = text ? json_loads(text, 0, NULL) : NULL;
    free(text);
    if (!r.spec)
        return 2;
    /* Signals first, then the pid, then the stop flag: a stop request that
     * comes before the pid is visible leaves the flag, one that comes after
     * finds the pid and its SIGTERM waits, blocked, until it is taken. */
    sigemptyset(&r.signals);
    sigaddset(&r.signals, SIGTERM);
    sigaddset(&r.signals, SIGINT);
    sigaddset(&r.signals, SIGALRM);
    sigaddset(&r.signals, SIGCHLD);
    sigprocmask(SIG_BLOCK, &r.signals, NULL);
    sigset_t stop;
    sigemptyset(&stop);
    sigaddset(&stop, SIGTERM);
    sigaddset(&stop, SIGINT);
    r.cancel_fd = signalfd(-1, &stop, SFD_CLOEXEC | SFD_NONBLOCK);
    char pidtext[32];
    snprintf(pidtext, sizeof pidtext, "%ld\n", (long)getpid());
    shim_note(&r, "shim.pid", pidtext);
    r.out = fsat_open(r.dfd, "stdout", O_WRONLY | O_CREAT | O_APPEND, 0600);
    r.err = fsat_open(r.dfd, "stderr", O_WRONLY | O_CREAT | O_APPEND, 0600);
    if (r.out < 0 || r.err < 0 || dup2(r.err, 2) < 0)
        return 2;
    if (fsat_exists(r.dfd, "stop")) { /* stopped before it could start */
        struct shim_end e = {
            .exit_code = -1, .stopped = true, .cpu_seconds = -1, .mem_peak_bytes = -1};
        snprintf(e.reason, sizeof e.reason, "stopped before it started");
        shim_end(&r, &e);
        return 0;
    }
    json_int_t uid = json_integer_value(json_object_get(r.spec, "uid"));
    r.drop = geteuid() == 0;
    if (r.drop && (uid <= 0 || uid > 0x7fffffff)) {
        shim_fail(&r, "no job runs as root: its uid is missing");
        return 0;
    }
    r.uid = (uid_t)uid;
    r.gid = (gid_t)uid;
    json_t *share = json_object_get(json_object_get(r.spec, "sandbox"), "share_gid");
    r.share_gid = json_is_integer(share) && r.drop ? json_integer_value(share) : -1;
    const char *mode = json_string_value(json_object_get(json_object_get(r.spec, "sandbox"), "mode"));
    if (mode && strcmp(mode, "unconfined") == 0)
        run_unconfined(&r);
    else
        shimrun_sandboxed(&r);
    remove_tmp(&r); /* after the status: its GPUs are free while a big tree goes */
    json_decref(r.spec);
    return 0;
}
