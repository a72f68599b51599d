/*
 * test_imagetree.c - an unpacked image made safe to share: device nodes go,
 * setuid and setgid bits and write bits for group and others are cleared,
 * file capabilities removed, links left as links (never followed), and the
 * sandbox's mount points made real in place of links. Needs root for the
 * device nodes, owners and capabilities (skipped otherwise).
 */
#include "backends/imagetree.h"
#include "lib/rmtree.h"
#include "tests/support/suite.h"

#include <check.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>

static char dir[64];
static int root = -1;

static const char *at(const char *rel)
{
    static char buf[4][192];
    static int k;
    k = (k + 1) % 4;
    snprintf(buf[k], sizeof buf[k], "%s/%s", dir, rel);
    return buf[k];
}

static void touch(const char *rel, mode_t mode)
{
    int fd = open(at(rel), O_WRONLY | O_CREAT | O_EXCL, 0600);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(write(fd, "x", 1), 1);
    ck_assert_int_eq(fchmod(fd, mode), 0);
    close(fd);
}

static mode_t mode_of(const char *rel)
{
    struct stat st;
    ck_assert_int_eq(lstat(at(rel), &st), 0);
    return st.st_mode;
}

static void setup(void)
{
    snprintf(dir, sizeof dir, "/tmp/aidc-unit-imagetree-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(dir));
    root = open(dir, O_RDONLY | O_DIRECTORY);
    ck_assert_int_ge(root, 0);
}

static void teardown(void)
{
    close(root);
    rmtree_at(AT_FDCWD, dir);
}

START_TEST(what_would_matter_on_the_host_is_defused)
{
    if (geteuid() != 0) {
        fprintf(stderr, "not root: device nodes and capabilities cannot be made, skipped\n");
        return;
    }
    ck_assert_int_eq(mkdir(at("bin"), 0755), 0);
    touch("bin/rootsh", 04755);
    touch("bin/grp", 02755);
    touch("bin/cap", 0755);
    touch("bin/plain", 0644);
    ck_assert_int_eq(mkdir(at("tmp"), 01777), 0);
    ck_assert_int_eq(chmod(at("tmp"), 01777), 0);
    ck_assert_int_eq(mknod(at("disk"), S_IFBLK | 0666, makedev(254, 0)), 0);
    ck_assert_int_eq(mknod(at("mem"), S_IFCHR | 0666, makedev(1, 1)), 0);
    ck_assert_int_eq(mkfifo(at("fifo"), 0666), 0);
    /* a link out of the tree: never followed, its target untouched */
    touch("outside", 04755);
    ck_assert_int_eq(mkdir(at("img"), 0755), 0);
    ck_assert_int_eq(rename(at("bin"), at("img/bin")), 0);
    ck_assert_int_eq(rename(at("tmp"), at("img/tmp")), 0);
    ck_assert_int_eq(rename(at("disk"), at("img/disk")), 0);
    ck_assert_int_eq(rename(at("mem"), at("img/mem")), 0);
    ck_assert_int_eq(rename(at("fifo"), at("img/fifo")), 0);
    ck_assert_int_eq(symlink(at("outside"), at("img/out")), 0);
    /* security.capability of cap_net_raw+ep (version 2 of the format) */
    static const unsigned char cap[20] = {0, 0, 0, 2, 0, 0x20, 0, 0, 0, 0x20, 0, 0};
    ck_assert_int_eq(setxattr(at("img/bin/cap"), "security.capability", cap, sizeof cap, 0), 0);
    int img = openat(root, "img", O_RDONLY | O_DIRECTORY);
    ck_assert_int_ge(img, 0);
    ck_assert_int_eq(imagetree_prepare(img), 0);
    close(img);
    ck_assert_int_eq(mode_of("img/bin/rootsh") & 07777, 0755);
    ck_assert_int_eq(mode_of("img/bin/grp") & 07777, 0755);
    ck_assert_int_eq(mode_of("img/bin/plain") & 07777, 0644);
    ck_assert_int_eq(mode_of("img/tmp") & 07777, 01755); /* no longer writable by all */
    ck_assert_int_lt(getxattr(at("img/bin/cap"), "security.capability", NULL, 0), 0);
    struct stat st;
    ck_assert_int_ne(lstat(at("img/disk"), &st), 0);
    ck_assert_int_ne(lstat(at("img/mem"), &st), 0);
    ck_assert(S_ISFIFO(mode_of("img/fifo")));
    ck_assert(S_ISLNK(mode_of("img/out")));
    ck_assert_int_eq(mode_of("outside") & 07777, 04755);
}
END_TEST

START_TEST(mount_points_are_made_real)
{
    ck_assert_int_eq(mkdir(at("img"), 0755), 0);
    /* an image whose /etc and /tmp are links would steer the sandbox's mounts */
    ck_assert_int_eq(symlink("/", at("img/etc")), 0);
    ck_assert_int_eq(symlink("../../outside", at("img/tmp")), 0);
    ck_assert_int_eq(mkdir(at("img/run"), 0755), 0);
    ck_assert_int_eq(symlink("/etc/shadow", at("img/run/x")), 0);
    int img = openat(root, "img", O_RDONLY | O_DIRECTORY);
    ck_assert_int_ge(img, 0);
    ck_assert_int_eq(imagetree_prepare(img), 0);
    close(img);
    static const char *const dirs[] = {"img/proc", "img/dev", "img/tmp", "img/run", "img/job",
                                       "img/etc"};
    for (size_t i = 0; i < sizeof dirs / sizeof *dirs; i++)
        ck_assert_msg(S_ISDIR(mode_of(dirs[i])), "%s", dirs[i]);
    static const char *const files[] = {"img/etc/passwd", "img/etc/group", "img/etc/hosts",
                                        "img/etc/resolv.conf"};
    for (size_t i = 0; i < sizeof files / sizeof *files; i++)
        ck_assert_msg(S_ISREG(mode_of(files[i])), "%s", files[i]);
    ck_assert(imagetree_bytes(root, "img") > 0);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("imagetree");
    TCase *tc = tcase_create("imagetree");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, what_would_matter_on_the_host_is_defused);
    tcase_add_test(tc, mount_points_are_made_real);
    suite_add_tcase(s, tc);
    return suite_run(s);
}
