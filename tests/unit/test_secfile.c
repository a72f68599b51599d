/*
 * test_secfile.c - the rule for files that hold a secret (lib/secfile.h):
 * mode 600 or 400 and owned by the running user or root pass; any bit for
 * group or others, another owner, or no regular file is refused with a
 * message naming the file, its mode (or owner) and the fix.
 */
#include "tests/support/suite.h"
#include "lib/secfile.h"

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char dir[64], path[96];

static void setup(void)
{
    snprintf(dir, sizeof dir, "/tmp/aidc-test-secfile-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/key", dir);
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0600);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(write(fd, "0123456789abcdef", 16), 16);
    close(fd);
}

static void teardown(void)
{
    unlink(path);
    rmdir(dir);
}

START_TEST(owner_only_modes_pass)
{
    static const mode_t ok[] = {0600, 0400, 0700, 0200};
    char err[512];
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        ck_assert_int_eq(chmod(path, ok[i]), 0);
        err[0] = '\0';
        int fd = secfile_open(path, err, sizeof err);
        ck_assert_msg(fd >= 0, "mode %04o: %s", (unsigned)ok[i], err);
        char buf[16];
        ck_assert_int_eq(read(fd, buf, sizeof buf), 16);
        close(fd);
    }
}
END_TEST

START_TEST(group_or_other_bits_are_refused)
{
    static const mode_t bad[] = {0644, 0640, 0604, 0660, 0620, 0602, 0610, 0601, 0666, 0777};
    char err[512], want[32];
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        ck_assert_int_eq(chmod(path, bad[i]), 0);
        err[0] = '\0';
        errno = 0;
        ck_assert_int_eq(secfile_open(path, err, sizeof err), -1);
        ck_assert_int_eq(errno, EPERM);
        snprintf(want, sizeof want, "(mode %04o)", (unsigned)bad[i]);
        ck_assert_msg(strstr(err, path) && strstr(err, want) && strstr(err, "chmod 600"),
                      "mode %04o: \"%s\"", (unsigned)bad[i], err);
    }
}
END_TEST

START_TEST(another_owner_is_refused)
{
    if (geteuid() != 0)
        return; /* only root can give a file away; the check itself is the same */
    char err[512] = "";
    ck_assert_int_eq(chown(path, 54321, 54321), 0);
    ck_assert_int_eq(secfile_open(path, err, sizeof err), -1);
    ck_assert_int_eq(errno, EPERM);
    ck_assert_msg(strstr(err, path) && strstr(err, "uid 54321"), "\"%s\"", err);
    ck_assert_int_eq(chown(path, 0, 0), 0);
    ck_assert_int_ge(secfile_open(path, err, sizeof err), 0);
}
END_TEST

START_TEST(no_regular_file_is_refused)
{
    char err[512] = "";
    ck_assert_int_eq(secfile_open(dir, err, sizeof err), -1);
    ck_assert_int_eq(errno, EISDIR);
    ck_assert_msg(strstr(err, "not a regular file"), "\"%s\"", err);
    char missing[128];
    snprintf(missing, sizeof missing, "%s/missing", dir);
    ck_assert_int_eq(secfile_open(missing, err, sizeof err), -1);
    ck_assert_int_eq(errno, ENOENT);
    ck_assert_msg(strstr(err, missing), "\"%s\"", err);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("secfile");
    TCase *tc = tcase_create("secfile");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, owner_only_modes_pass);
    tcase_add_test(tc, group_or_other_bits_are_refused);
    tcase_add_test(tc, another_owner_is_refused);
    tcase_add_test(tc, no_regular_file_is_refused);
    suite_add_tcase(s, tc);
    return suite_run(s);
}
