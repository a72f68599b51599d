/*
 * test_cgroup.c - backends/cgroup.h on the real cgroup file system (root
 * only; skipped with a message otherwise): a probe makes and removes a
 * group; a job's groups get its memory, CPU and process limits; a child
 * that joins between fork and exec is counted among the job's processes;
 * one that touches more memory than its limit is OOM-killed and the kernel's
 * counter says so; destroying the groups kills what is left and removes
 * them; a name or parent that is no group path is refused. Everything lives
 * under "/aidc-unit-<pid>", removed at the end.
 */
#include "backends/cgroup.h"
#include "tests/support/suite.h"

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/wait.h>
#include <unistd.h>

#define ROOT "/sys/fs/cgroup"
#define CGROUP2_MAGIC 0x63677270L
#define MIB (1024LL * 1024)

static char parent[64];
static const char *const job_names[] = {"job-limits", "job-join", "job-oom", "job-find",
                                        "job-refused"};
static const char *const controllers[] = {"memory", "pids", "cpu", "devices"};

/* Whether the tests can touch cgroups here; says why not when they cannot. */
static bool cgroups_here(const char *test)
{
    if (geteuid() == 0 && access(ROOT, F_OK) == 0)
        return true;
    fprintf(stderr, "%s: skipped (needs root and " ROOT ")\n", test);
    return false;
}

static bool is_v2(void)
{
    struct statfs fs;
    return statfs(ROOT, &fs) == 0 && (long)fs.f_type == CGROUP2_MAGIC;
}

/* Runs once, in the runner: the parent group's name for every test. */
static void name_parent(void)
{
    snprintf(parent, sizeof parent, "/aidc-unit-%ld", (long)getpid());
}

/* Runs once, in the runner, after every test: what a failed test left, then the parents. */
static void remove_parents(void)
{
    for (size_t i = 0; i < sizeof job_names / sizeof *job_names; i++) {
        struct cgroup_job cg;
        if (cgroup_job_find(&cg, parent, job_names[i]))
            cgroup_job_destroy(&cg);
    }
    char dir[256];
    snprintf(dir, sizeof dir, ROOT "%s", parent);
    rmdir(dir);
    for (size_t i = 0; i < sizeof controllers / sizeof *controllers; i++) {
        snprintf(dir, sizeof dir, ROOT "/%s%s", controllers[i], parent);
        rmdir(dir);
    }
}

static const struct cgroup_limits limits = {
    .memory_bytes = 64 * MIB, .cpu_millis = 500, .pids = 32, .devices = {{195, 0}}, .ndevices = 1};

static void create(struct cgroup_job *cg, const char *name)
{
    char err[512] = "";
    ck_assert_msg(cgroup_job_create(cg, parent, name, &limits, err, sizeof err) == 0,
                  "cgroup_job_create %s/%s: %s", parent, name, err);
    ck_assert_uint_ge(cg->ndirs, 1);
    ck_assert_int_ge(cg->memory, 0);
    ck_assert_int_eq(cg->version, is_v2() ? 2 : 1);
}

/* The job's group of controller (v1; v2's only group otherwise). */
static const char *dir_of(const struct cgroup_job *cg, const char *controller)
{
    if (cg->version == 2)
        return cg->dirs[0];
    char prefix[64];
    snprintf(prefix, sizeof prefix, ROOT "/%s/", controller);
    for (size_t i = 0; i < cg->ndirs; i++)
        if (strncmp(cg->dirs[i], prefix, strlen(prefix)) == 0)
            return cg->dirs[i];
    ck_abort_msg("no %s group among the job's", controller);
    return NULL;
}

/* The control file dir/file, its first line */
static char *control(const char *dir, const char *file)
{
    static char buf[4096];
    char path[700];
    snprintf(path, sizeof path, "%s/%s", dir, file);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    ck_assert_msg(fd >= 0, "%s: %s", path, strerror(errno));
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    ck_assert_int_ge(n, 0);
    buf[n] = '\0';
    return buf;
}

static void assert_gone(size_t ndirs, char dirs[][512])
{
    struct stat st;
    for (size_t i = 0; i < ndirs; i++)
        ck_assert_msg(stat(dirs[i], &st) != 0 && errno == ENOENT, "%s is still there", dirs[i]);
}

START_TEST(the_probe_makes_and_removes_a_group)
{
    if (!cgroups_here("the_probe_makes_and_removes_a_group"))
        return;
    char err[512] = "";
    ck_assert_msg(cgroup_probe(parent, err, sizeof err) == 0, "cgroup_probe %s: %s", parent, err);
    char name[64];
    snprintf(name, sizeof name, "probe-%ld", (long)getpid());
    struct cgroup_job cg;
    ck_assert_msg(!cgroup_job_find(&cg, parent, name), "the probe's group %s is left", name);
}
END_TEST

START_TEST(a_job_group_has_its_limits)
{
    if (!cgroups_here("a_job_group_has_its_limits"))
        return;
    struct cgroup_job cg;
    create(&cg, "job-limits");
    if (cg.version == 1) {
        ck_assert_str_eq(control(dir_of(&cg, "memory"), "memory.limit_in_bytes"), "67108864\n");
        ck_assert_str_eq(control(dir_of(&cg, "cpu"), "cpu.cfs_quota_us"), "50000\n");
        ck_assert_str_eq(control(dir_of(&cg, "cpu"), "cpu.cfs_period_us"), "100000\n");
        ck_assert_str_eq(control(dir_of(&cg, "pids"), "pids.max"), "32\n");
        struct statfs fs;
        if (statfs(ROOT "/devices", &fs) == 0) {
            const char *list = control(dir_of(&cg, "devices"), "devices.list");
            ck_assert_msg(strstr(list, "c 195:0 rwm") != NULL, "%s", list);
            ck_assert_msg(strstr(list, "c 1:3 rwm") != NULL, "%s", list); /* /dev/null */
            ck_assert_msg(strstr(list, "a *:* rwm") == NULL, "%s", list);
        }
    } else {
        ck_assert_str_eq(control(cg.dirs[0], "memory.max"), "67108864\n");
        ck_assert_str_eq(control(cg.dirs[0], "cpu.max"), "50000 100000\n");
        ck_assert_str_eq(control(cg.dirs[0], "pids.max"), "32\n");
    }
    ck_assert_int_eq(cgroup_job_oom_kills(&cg), 0);
    pid_t pids[4];
    ck_assert_uint_eq(cgroup_job_pids(&cg, pids, 4), 0);
    char dirs[CGROUP_MAX_DIRS][512];
    size_t ndirs = cg.ndirs;
    memcpy(dirs, cg.dirs, sizeof dirs);
    ck_assert_int_eq(cgroup_job_destroy(&cg), 0);
    assert_gone(ndirs, dirs);
}
END_TEST

START_TEST(a_job_group_is_found_again)
{
    if (!cgroups_here("a_job_group_is_found_again"))
        return;
    struct cgroup_job cg, again;
    create(&cg, "job-find");
    ck_assert(cgroup_job_find(&again, parent, "job-find"));
    ck_assert_int_eq(again.version, cg.version);
    ck_assert_uint_eq(again.ndirs, cg.ndirs);
    ck_assert_str_eq(again.dirs[again.memory], cg.dirs[cg.memory]);
    ck_assert(!cgroup_job_find(&again, parent, "job-none"));
    ck_assert_int_eq(cgroup_job_destroy(&cg), 0);
    ck_assert(!cgroup_job_find(&again, parent, "job-find"));
}
END_TEST

/*
 * Fork a child that joins cg through its cgroup.procs descriptors, tells
 * ready[1] 'j' (joined) or 'e', then runs then(). The child's pid.
 */
static pid_t fork_joined(const struct cgroup_job *cg, int ready[2], void (*then)(void))
{
    int fds[CGROUP_MAX_DIRS];
    int n = cgroup_job_procs_fds(cg, true, fds, CGROUP_MAX_DIRS);
    ck_assert_int_eq(n, (int)cg->ndirs);
    for (int i = 0; i < n; i++)
        ck_assert_int_ne(fcntl(fds[i], F_GETFD) & FD_CLOEXEC, 0);
    ck_assert_int_eq(pipe2(ready, O_CLOEXEC), 0);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        char c = cgroup_job_join(fds, (size_t)n) == 0 ? 'j' : 'e';
        if (write(ready[1], &c, 1) != 1 || c != 'j')
            _exit(2);
        then();
        _exit(0);
    }
    for (int i = 0; i < n; i++)
        close(fds[i]);
    close(ready[1]);
    ready[1] = -1;
    return pid;
}

static int hold_fd = -1;

/* the child waits for the end of hold_fd's pipe (never, but for its death) */
static void hold(void)
{
    char c;
    while (read(hold_fd, &c, 1) < 0 && errno == EINTR)
        ;
}

/* the child touches 256 MiB, four times its limit */
static void touch_256_mib(void)
{
    size_t size = (size_t)(256 * MIB);
    volatile char *p = malloc(size);
    if (!p)
        _exit(3);
    for (size_t i = 0; i < size; i += 4096)
        p[i] = (char)i;
    free((void *)p);
}

static bool in_pids(const struct cgroup_job *cg, pid_t pid)
{
    pid_t pids[64];
    size_t n = cgroup_job_pids(cg, pids, 64);
    for (size_t i = 0; i < n; i++)
        if (pids[i] == pid)
            return true;
    return false;
}

START_TEST(a_child_that_joins_is_the_jobs_and_destroy_kills_it)
{
    if (!cgroups_here("a_child_that_joins_is_the_jobs_and_destroy_kills_it"))
        return;
    struct cgroup_job cg;
    create(&cg, "job-join");
    int hold_pipe[2], ready[2];
    ck_assert_int_eq(pipe2(hold_pipe, O_CLOEXEC), 0);
    hold_fd = hold_pipe[0];
    pid_t pid = fork_joined(&cg, ready, hold);
    char c = 0;
    ck_assert_int_eq(read(ready[0], &c, 1), 1);
    ck_assert_int_eq(c, 'j');
    ck_assert_msg(in_pids(&cg, pid), "child %ld is not among the job's", (long)pid);
    ck_assert(!in_pids(&cg, getpid()));
    char dirs[CGROUP_MAX_DIRS][512];
    size_t ndirs = cg.ndirs;
    memcpy(dirs, cg.dirs, sizeof dirs);
    /* the child still runs (its hold pipe is open here): destroy must kill it */
    ck_assert_int_eq(cgroup_job_destroy(&cg), 0);
    int st = 0;
    ck_assert_int_eq(waitpid(pid, &st, 0), pid);
    ck_assert_msg(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL, "child status %#x", st);
    assert_gone(ndirs, dirs);
    close(hold_pipe[0]);
    close(hold_pipe[1]);
    close(ready[0]);
}
END_TEST

START_TEST(a_child_beyond_its_memory_is_oom_killed)
{
    if (!cgroups_here("a_child_beyond_its_memory_is_oom_killed"))
        return;
    struct cgroup_job cg;
    create(&cg, "job-oom");
    ck_assert_int_eq(cgroup_job_oom_kills(&cg), 0);
    int ready[2];
    pid_t pid = fork_joined(&cg, ready, touch_256_mib);
    char c = 0;
    ck_assert_int_eq(read(ready[0], &c, 1), 1);
    ck_assert_int_eq(c, 'j');
    int st = 0;
    ck_assert_int_eq(waitpid(pid, &st, 0), pid);
    ck_assert_msg(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL,
                  "a child touching 256 MiB under a 64 MiB limit: status %#x", st);
    ck_assert_int_gt(cgroup_job_oom_kills(&cg), 0);
    ck_assert_int_eq(cgroup_job_destroy(&cg), 0);
    close(ready[0]);
}
END_TEST

START_TEST(limits_the_kernel_refuses_leave_nothing)
{
    if (!cgroups_here("limits_the_kernel_refuses_leave_nothing"))
        return;
    /* 1 millicore is a quota of 100 us: below the kernel's 1 ms minimum */
    struct cgroup_limits l = limits;
    l.cpu_millis = 1;
    struct cgroup_job cg;
    char err[512] = "";
    ck_assert_int_eq(cgroup_job_create(&cg, parent, "job-refused", &l, err, sizeof err), -1);
    ck_assert_msg(strstr(err, "job-refused") != NULL, "\"%s\"", err);
    struct cgroup_job again;
    ck_assert_msg(!cgroup_job_find(&again, parent, "job-refused"), "%s is left",
                  again.dirs[0]);
}
END_TEST

START_TEST(a_bad_name_or_parent_is_refused)
{
    static const struct {
        const char *parent, *name;
    } bad[] = {
        {"/aidc-unit", "../x"}, {"/aidc-unit", ".."}, {"/aidc-unit", "."},
        {"/aidc-unit", ""},     {"/aidc-unit", "a/b"}, {"rel", "job"},
        {"", "job"},            {"/a/../b", "job"},   {"/a//b", "job"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        struct cgroup_job cg;
        char err[512] = "";
        ck_assert_msg(cgroup_job_create(&cg, bad[i].parent, bad[i].name, &limits, err,
                                        sizeof err) == -1,
                      "parent \"%s\" name \"%s\" accepted", bad[i].parent, bad[i].name);
        ck_assert_msg(err[0] != '\0', "parent \"%s\" name \"%s\": no message", bad[i].parent,
                      bad[i].name);
        ck_assert_uint_eq(cg.ndirs, 0);
        ck_assert(!cgroup_job_find(&cg, bad[i].parent, bad[i].name));
    }
    struct stat st;
    if (geteuid() == 0) /* nothing made where "../x" would have led */
        for (size_t i = 0; i < sizeof controllers / sizeof *controllers; i++) {
            char dir[128];
            snprintf(dir, sizeof dir, ROOT "/%s/x", controllers[i]);
            ck_assert_msg(stat(dir, &st) != 0, "%s exists", dir);
        }
}
END_TEST

START_TEST(the_default_parent)
{
    char out[512] = "";
    cgroup_default_parent(out, sizeof out);
    if (geteuid() == 0) {
        ck_assert_str_eq(out, "/aidc");
    } else {
        size_t n = strlen(out);
        ck_assert_msg(strcmp(out, "/aidc") == 0 ||
                          (n > 10 && strcmp(out + n - 10, "/aidc-jobs") == 0),
                      "\"%s\"", out);
    }
}
END_TEST

int main(void)
{
    Suite *s = suite_create("cgroup");
    TCase *tc = tcase_create("cgroup");
    tcase_add_unchecked_fixture(tc, name_parent, remove_parents);
    tcase_set_timeout(tc, 30); /* destroy waits up to 5 s for a group to empty */
    tcase_add_test(tc, the_probe_makes_and_removes_a_group);
    tcase_add_test(tc, a_job_group_has_its_limits);
    tcase_add_test(tc, a_job_group_is_found_again);
    tcase_add_test(tc, a_child_that_joins_is_the_jobs_and_destroy_kills_it);
    tcase_add_test(tc, a_child_beyond_its_memory_is_oom_killed);
    tcase_add_test(tc, limits_the_kernel_refuses_leave_nothing);
    tcase_add_test(tc, a_bad_name_or_parent_is_refused);
    tcase_add_test(tc, the_default_parent);
    suite_add_tcase(s, tc);
    return suite_run(s);
}
