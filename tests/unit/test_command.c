/*
 * test_command.c - command_run_in, what the local executor's image pull
 * runs through: the environment it is given and nothing else, ended at once
 * by its cancel descriptor (a stop request) or its watch (a size bound).
 * command_run itself (no shell, no inherited environment, time limit) is
 * tested in test_gpunodes.c.
 */
#include "backends/command.h"
#include "tests/support/suite.h"

#include <check.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

START_TEST(the_environment_is_the_one_given)
{
    struct command_result res;
    char err[256] = "";
    char *argv[] = {"/usr/bin/env", NULL};
    char *envp[] = {"PATH=/bin", "ONLY=this", NULL};
    ck_assert_int_eq(command_run_in(argv, envp, 10, -1, NULL, &res, err, sizeof err), 0);
    ck_assert_str_eq(res.output, "PATH=/bin\nONLY=this\n");
    ck_assert(!res.cancelled && !res.watched && !res.timed_out);
}
END_TEST

START_TEST(a_readable_cancel_descriptor_ends_it_at_once)
{
    int p[2];
    ck_assert_int_eq(pipe(p), 0);
    ck_assert_int_eq(write(p[1], "x", 1), 1); /* a stop request is waiting */
    struct command_result res;
    char err[256] = "";
    char *argv[] = {"/bin/sleep", "30", NULL};
    char *envp[] = {"PATH=/bin", NULL};
    double t0 = now();
    ck_assert_int_eq(command_run_in(argv, envp, 60, p[0], NULL, &res, err, sizeof err), 0);
    ck_assert(res.cancelled);
    ck_assert(!res.timed_out && !res.watched);
    ck_assert_int_eq(res.signal, 9);
    ck_assert_msg(now() - t0 < 5, "took %.1f s", now() - t0);
    close(p[0]);
    close(p[1]);
}
END_TEST

struct grows {
    const char *path;
    long long max;
    int looks;
};

static bool small_enough(void *arg)
{
    struct grows *g = arg;
    struct stat st;
    g->looks++;
    return stat(g->path, &st) != 0 || st.st_size <= g->max;
}

START_TEST(the_watch_ends_what_outgrows_its_bound)
{
    char dir[] = "/tmp/aidc-unit-command-XXXXXX";
    ck_assert_ptr_nonnull(mkdtemp(dir));
    char path[128], script[256];
    snprintf(path, sizeof path, "%s/f", dir);
    snprintf(script, sizeof script, "while :; do head -c 65536 /dev/zero >> %s; done", path);
    struct grows g = {.path = path, .max = 1 << 20};
    struct command_watch w = {.ok = small_enough, .arg = &g, .every_ms = 50};
    struct command_result res;
    char err[256] = "";
    char *argv[] = {"/bin/sh", "-c", script, NULL};
    char *envp[] = {"PATH=/usr/bin:/bin", NULL};
    double t0 = now();
    ck_assert_int_eq(command_run_in(argv, envp, 60, -1, &w, &res, err, sizeof err), 0);
    ck_assert(res.watched);
    ck_assert(!res.cancelled && !res.timed_out);
    ck_assert_int_ge(g.looks, 1);
    ck_assert_msg(now() - t0 < 10, "took %.1f s", now() - t0);
    struct stat st;
    ck_assert_int_eq(stat(path, &st), 0);
    off_t at_kill = st.st_size;
    usleep(200 * 1000); /* killed: it grows no more */
    ck_assert_int_eq(stat(path, &st), 0);
    ck_assert_int_eq(st.st_size, at_kill);
    unlink(path);
    rmdir(dir);
    /* a watch that never objects changes nothing */
    char *quick[] = {"/bin/echo", "done", NULL};
    g.path = "/nonexistent";
    ck_assert_int_eq(command_run_in(quick, envp, 10, -1, &w, &res, err, sizeof err), 0);
    ck_assert_str_eq(res.output, "done\n");
    ck_assert(!res.watched);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("command");
    TCase *tc = tcase_create("command");
    tcase_set_timeout(tc, 30);
    tcase_add_test(tc, the_environment_is_the_one_given);
    tcase_add_test(tc, a_readable_cancel_descriptor_ends_it_at_once);
    tcase_add_test(tc, the_watch_ends_what_outgrows_its_bound);
    suite_add_tcase(s, tc);
    return suite_run(s);
}
