/*
 * test_rmtree.c - backends/rmtree.c: a tree goes whole (files, directories,
 * hidden entries, FIFOs), symbolic links in it are removed and never
 * followed (to a directory, to a file, relative, the top itself a link), a
 * missing name is no error, and a tree deeper than RMTREE_MAX_DEPTH is left
 * (partly) with -1 instead of exhausting descriptors.
 */
#include "lib/rmtree.h"
#include "tests/support/suite.h"

#include <check.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char root[64];
static int rootfd = -1;

static const char *at(const char *rel)
{
    static char buf[4][512];
    static int k;
    k = (k + 1) % 4;
    snprintf(buf[k], sizeof buf[k], "%s/%s", root, rel);
    return buf[k];
}

static void dir(const char *rel)
{
    ck_assert_int_eq(mkdir(at(rel), 0700), 0);
}

static void put(const char *rel)
{
    FILE *f = fopen(at(rel), "w");
    ck_assert_ptr_nonnull(f);
    fputs("data\n", f);
    ck_assert_int_eq(fclose(f), 0);
}

static void link_to(const char *target, const char *rel)
{
    ck_assert_int_eq(symlink(target, at(rel)), 0);
}

static bool exists(const char *rel)
{
    struct stat st;
    return lstat(at(rel), &st) == 0;
}

static void setup(void)
{
    snprintf(root, sizeof root, "/tmp/aidc-rmtree-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(root));
    rootfd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    ck_assert_int_ge(rootfd, 0);
    /* what must survive: beside the tree, reached only through links */
    dir("outside");
    dir("outside/keep");
    put("outside/keep/file");
    put("outside/alone");
}

static void teardown(void)
{
    ck_assert_int_eq(rmtree_at(AT_FDCWD, root), 0);
    close(rootfd);
}

static void outside_intact(void)
{
    ck_assert(exists("outside/keep/file"));
    ck_assert(exists("outside/alone"));
}

START_TEST(a_tree_goes_whole)
{
    dir("tmp");
    dir("tmp/a");
    dir("tmp/a/b");
    dir("tmp/a/b/c");
    put("tmp/a/b/c/file");
    put("tmp/x");
    put("tmp/.hidden");
    dir("tmp/empty");
    ck_assert_int_eq(mkfifo(at("tmp/a/fifo"), 0600), 0);
    ck_assert_int_eq(rmtree_at(rootfd, "tmp"), 0);
    ck_assert(!exists("tmp"));
    outside_intact();
}
END_TEST

START_TEST(links_are_removed_never_followed)
{
    dir("tmp");
    dir("tmp/a");
    link_to(at("outside/keep"), "tmp/to_dir");
    link_to(at("outside/alone"), "tmp/a/to_file");
    link_to("../../outside", "tmp/a/relative");
    link_to("/nonexistent/dangling", "tmp/dangling");
    ck_assert_int_eq(rmtree_at(rootfd, "tmp"), 0);
    ck_assert(!exists("tmp"));
    outside_intact();
    ck_assert(exists("outside/keep"));
}
END_TEST

START_TEST(a_top_that_is_a_link_goes_alone)
{
    link_to(at("outside"), "tmp");
    ck_assert_int_eq(rmtree_at(rootfd, "tmp"), 0);
    ck_assert(!exists("tmp"));
    outside_intact();
}
END_TEST

START_TEST(missing_is_no_error_and_a_file_is_removed)
{
    ck_assert_int_eq(rmtree_at(rootfd, "nothing-here"), 0);
    put("plain");
    ck_assert_int_eq(rmtree_at(rootfd, "plain"), 0);
    ck_assert(!exists("plain"));
}
END_TEST

START_TEST(too_deep_is_left_with_an_error)
{
    char rel[RMTREE_MAX_DEPTH * 3 + 16] = "deep";
    dir(rel);
    for (int i = 0; i < RMTREE_MAX_DEPTH + 2; i++) {
        strcat(rel, "/d");
        dir(rel);
    }
    ck_assert_int_eq(rmtree_at(rootfd, "deep"), -1);
    ck_assert(exists("deep"));
    ck_assert(exists(rel)); /* the bottom was out of reach */
    /* within the limit from ten levels down, then from the top */
    char lower[64] = "deep";
    for (int i = 0; i < 10; i++)
        strcat(lower, "/d");
    ck_assert_int_eq(rmtree_at(AT_FDCWD, at(lower)), 0);
    ck_assert_int_eq(rmtree_at(rootfd, "deep"), 0);
    ck_assert(!exists("deep"));
}
END_TEST

int main(void)
{
    Suite *s = suite_create("rmtree");
    TCase *tc = tcase_create("rmtree");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, a_tree_goes_whole);
    tcase_add_test(tc, links_are_removed_never_followed);
    tcase_add_test(tc, a_top_that_is_a_link_goes_alone);
    tcase_add_test(tc, missing_is_no_error_and_a_file_is_removed);
    tcase_add_test(tc, too_deep_is_left_with_an_error);
    suite_add_tcase(s, tc);
    return suite_run(s);
}
