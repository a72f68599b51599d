/*
 * test_fsat.c - lib/fsat.h: files beneath a directory descriptor that a
 * job may be changing. A symbolic link (last or in the middle), "..", an
 * absolute path or a path that leaves the directory is refused; a FIFO is
 * refused without blocking, as are a directory and a hard-linked file;
 * fsat_read honours its maximum; fsat_write_atomic never writes through a
 * link planted at "<name>.tmp"; fsat_exists sees a dangling link. The
 * refusals are run twice: with openat2, and with openat2 answering ENOSYS
 * (a seccomp filter) so that the component-by-component walk is what runs.
 */
#include "lib/fsat.h"
#include "lib/rmtree.h"
#include "tests/support/suite.h"

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/filter.h>
#include <linux/openat2.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

/* base: one per run, removed at its end (a failed test skips its teardown); root: the test's */
static char base[64], root[96];
static int rootfd = -1;

static const char *at(const char *rel)
{
    static char buf[4][512];
    static int k;
    k = (k + 1) % 4;
    snprintf(buf[k], sizeof buf[k], "%s/%s", root, rel);
    return buf[k];
}

static void put(const char *rel, const char *text)
{
    int fd = open(at(rel), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    ck_assert_int_ge(fd, 0);
    size_t len = strlen(text);
    ck_assert_int_eq(write(fd, text, len), (ssize_t)len);
    ck_assert_int_eq(close(fd), 0);
}

/* rel filled with n bytes of 'x' */
static void put_bytes(const char *rel, size_t n)
{
    char *text = malloc(n + 1);
    ck_assert_ptr_nonnull(text);
    memset(text, 'x', n);
    text[n] = '\0';
    put(rel, text);
    free(text);
}

/* The whole file at the host path rel (through the ordinary, link-following open). */
static char *slurp(const char *rel)
{
    static char buf[4096];
    int fd = open(at(rel), O_RDONLY | O_CLOEXEC);
    ck_assert_int_ge(fd, 0);
    ssize_t n = read(fd, buf, sizeof buf - 1);
    ck_assert_int_ge(n, 0);
    buf[n] = '\0';
    close(fd);
    return buf;
}

static void make_base(void)
{
    snprintf(base, sizeof base, "/tmp/aidc-fsat-XXXXXX");
    if (!mkdtemp(base))
        base[0] = '\0';
}

static void remove_base(void)
{
    if (base[0])
        rmtree_at(AT_FDCWD, base);
}

static void setup(void)
{
    umask(022); /* the modes asserted below are not cut by the runner's umask */
    ck_assert_msg(base[0] != '\0', "no directory under /tmp");
    snprintf(root, sizeof root, "%s/t-XXXXXX", base);
    ck_assert_ptr_nonnull(mkdtemp(root));
    rootfd = fsat_opendir(root);
    ck_assert_int_ge(rootfd, 0);
    ck_assert_int_eq(mkdir(at("dir"), 0700), 0);
    ck_assert_int_eq(mkdir(at("outside"), 0700), 0);
    put("dir/file", "hello\n");
    put("outside/secret", "do not read\n");
}

static void teardown(void)
{
    close(rootfd);
    ck_assert_int_eq(rmtree_at(AT_FDCWD, root), 0);
}

/*
 * As on a kernel older than 5.6: openat2 answers ENOSYS (a seccomp filter on
 * this test's process alone), so fsat takes its walk one component at a time.
 */
static void without_openat2(void)
{
    struct sock_filter code[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_openat2, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (ENOSYS & SECCOMP_RET_DATA)),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    };
    struct sock_fprog prog = {.len = (unsigned short)(sizeof code / sizeof *code), .filter = code};
    ck_assert_int_eq(prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), 0);
    ck_assert_int_eq(prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog, 0, 0), 0);
    struct open_how how = {.flags = O_RDONLY | O_CLOEXEC};
    errno = 0;
    ck_assert_int_eq(syscall(SYS_openat2, rootfd, "dir/file", &how, sizeof how), -1);
    ck_assert_int_eq(errno, ENOSYS);
}

/* fsat_open of rel beneath dir: -1 with one of the errnos e1, e2 */
static void refused(int dirfd, const char *rel, int e1, int e2)
{
    errno = 0;
    int fd = fsat_open(dirfd, rel, O_RDONLY, 0);
    if (fd >= 0)
        close(fd);
    ck_assert_msg(fd == -1, "\"%s\" was opened", rel);
    ck_assert_msg(errno == e1 || errno == e2, "\"%s\": errno %d (%s)", rel, errno, strerror(errno));
}

START_TEST(a_plain_path_opens)
{
    int fd = fsat_open(rootfd, "dir/file", O_RDONLY, 0);
    ck_assert_int_ge(fd, 0);
    char buf[16] = "";
    ck_assert_int_eq(read(fd, buf, sizeof buf - 1), 6);
    ck_assert_str_eq(buf, "hello\n");
    ck_assert_int_ne(fcntl(fd, F_GETFD) & FD_CLOEXEC, 0);
    close(fd);
    /* and a new file, with O_CREAT and its mode */
    fd = fsat_open(rootfd, "dir/new", O_WRONLY | O_CREAT | O_EXCL, 0640);
    ck_assert_int_ge(fd, 0);
    close(fd);
    struct stat st;
    ck_assert_int_eq(lstat(at("dir/new"), &st), 0);
    ck_assert(S_ISREG(st.st_mode));
    ck_assert_int_eq(st.st_mode & 07777, 0640);
}
END_TEST

START_TEST(a_link_as_last_component_is_refused)
{
    ck_assert_int_eq(symlink(at("outside/secret"), at("dir/abs")), 0);
    ck_assert_int_eq(symlink("../outside/secret", at("dir/rel")), 0);
    ck_assert_int_eq(symlink("file", at("dir/same")), 0); /* even one that stays inside */
    refused(rootfd, "dir/abs", ELOOP, EXDEV);
    refused(rootfd, "dir/rel", ELOOP, EXDEV);
    refused(rootfd, "dir/same", ELOOP, EXDEV);
    /* O_CREAT does not create the link's target either */
    ck_assert_int_eq(symlink(at("outside/made"), at("dir/creat")), 0);
    errno = 0;
    ck_assert_int_eq(fsat_open(rootfd, "dir/creat", O_WRONLY | O_CREAT, 0600), -1);
    ck_assert(errno == ELOOP || errno == EXDEV || errno == EEXIST);
    ck_assert_int_ne(access(at("outside/made"), F_OK), 0);
}
END_TEST

START_TEST(a_link_in_the_middle_is_refused)
{
    ck_assert_int_eq(symlink(at("outside"), at("dir/out")), 0);
    ck_assert_int_eq(symlink("../dir", at("outside/back")), 0);
    ck_assert_int_eq(symlink(".", at("dir/self")), 0);
    refused(rootfd, "dir/out/secret", ELOOP, EXDEV);
    refused(rootfd, "dir/self/file", ELOOP, EXDEV);
    refused(rootfd, "outside/back/file", ELOOP, EXDEV);
}
END_TEST

START_TEST(absolute_and_dotdot_paths_are_refused)
{
    int dirfd = fsat_open(rootfd, "dir", O_RDONLY | O_DIRECTORY, 0);
    ck_assert_int_ge(dirfd, 0);
    refused(dirfd, at("outside/secret"), EXDEV, ELOOP);
    refused(dirfd, "/etc/passwd", EXDEV, ELOOP);
    refused(dirfd, "..", EXDEV, ELOOP);
    refused(dirfd, "../outside/secret", EXDEV, ELOOP);
    refused(dirfd, "file/../../outside/secret", EXDEV, ENOTDIR);
    ck_assert_int_eq(mkdir(at("dir/sub"), 0700), 0);
    refused(dirfd, "sub/../../outside/secret", EXDEV, ELOOP);
    refused(dirfd, "", EXDEV, ENOENT);
    close(dirfd);
}
END_TEST

START_TEST(a_fifo_is_refused_without_blocking)
{
    ck_assert_int_eq(mkfifo(at("dir/fifo"), 0600), 0);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    errno = 0;
    int fd = fsat_open_regular(rootfd, "dir/fifo");
    int saved = errno;
    clock_gettime(CLOCK_MONOTONIC, &t1);
    ck_assert_int_eq(fd, -1);
    ck_assert_int_eq(saved, EINVAL);
    /* no writer ever comes: a blocking open would have hit the test's timeout */
    ck_assert_int_lt(t1.tv_sec - t0.tv_sec, 2);
    errno = 0;
    ck_assert_ptr_null(fsat_read(rootfd, "dir/fifo", 100, NULL));
    ck_assert_int_eq(errno, EINVAL);
}
END_TEST

START_TEST(a_directory_and_a_hard_link_are_refused)
{
    errno = 0;
    ck_assert_int_eq(fsat_open_regular(rootfd, "dir"), -1);
    ck_assert_int_eq(errno, EINVAL);
    ck_assert_int_eq(link(at("outside/secret"), at("dir/hard")), 0);
    errno = 0;
    ck_assert_int_eq(fsat_open_regular(rootfd, "dir/hard"), -1);
    ck_assert_int_eq(errno, EMLINK);
    /* the other name is just as hard-linked */
    errno = 0;
    ck_assert_int_eq(fsat_open_regular(rootfd, "outside/secret"), -1);
    ck_assert_int_eq(errno, EMLINK);
    errno = 0;
    ck_assert_ptr_null(fsat_read(rootfd, "dir/hard", 100, NULL));
    ck_assert_int_eq(errno, EMLINK);
}
END_TEST

START_TEST(a_plain_file_opens_regular)
{
    int fd = fsat_open_regular(rootfd, "dir/file");
    ck_assert_int_ge(fd, 0);
    char buf[16] = "";
    ck_assert_int_eq(read(fd, buf, sizeof buf - 1), 6);
    ck_assert_str_eq(buf, "hello\n");
    close(fd);
    /* a link to that plain file is not */
    ck_assert_int_eq(symlink("file", at("dir/link")), 0);
    errno = 0;
    ck_assert_int_eq(fsat_open_regular(rootfd, "dir/link"), -1);
    ck_assert(errno == ELOOP || errno == EXDEV);
}
END_TEST

START_TEST(read_returns_the_bytes)
{
    size_t len = 99;
    char *s = fsat_read(rootfd, "dir/file", 1024, &len);
    ck_assert_ptr_nonnull(s);
    ck_assert_uint_eq(len, 6);
    ck_assert_str_eq(s, "hello\n");
    free(s);
    /* larger than the first buffer, with len NULL */
    put_bytes("dir/big", 10000);
    s = fsat_read(rootfd, "dir/big", 20000, NULL);
    ck_assert_ptr_nonnull(s);
    ck_assert_uint_eq(strlen(s), 10000);
    free(s);
    /* empty */
    put("dir/empty", "");
    s = fsat_read(rootfd, "dir/empty", 10, &len);
    ck_assert_ptr_nonnull(s);
    ck_assert_uint_eq(len, 0);
    ck_assert_str_eq(s, "");
    free(s);
}
END_TEST

START_TEST(read_beyond_max_is_e2big)
{
    put_bytes("dir/big", 10000);
    errno = 0;
    ck_assert_ptr_null(fsat_read(rootfd, "dir/big", 9999, NULL));
    ck_assert_int_eq(errno, E2BIG);
    errno = 0;
    ck_assert_ptr_null(fsat_read(rootfd, "dir/big", 5000, NULL));
    ck_assert_int_eq(errno, E2BIG);
}
END_TEST

START_TEST(read_beyond_a_small_max_is_e2big)
{
    put_bytes("dir/twenty", 20);
    errno = 0;
    char *s = fsat_read(rootfd, "dir/twenty", 10, NULL);
    ck_assert_msg(s == NULL, "20 bytes read with max 10 (got %zu bytes)", s ? strlen(s) : 0);
    ck_assert_int_eq(errno, E2BIG);
}
END_TEST

START_TEST(read_of_exactly_max_bytes_succeeds)
{
    static const size_t sizes[] = {10, 4096, 8192};
    for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++) {
        put_bytes("dir/exact", sizes[i]);
        size_t len = 0;
        errno = 0;
        char *s = fsat_read(rootfd, "dir/exact", sizes[i], &len);
        ck_assert_msg(s != NULL, "a file of %zu bytes with max %zu: %s", sizes[i], sizes[i],
                      strerror(errno));
        ck_assert_uint_eq(len, sizes[i]);
        free(s);
    }
}
END_TEST

START_TEST(read_refuses_a_link_to_a_readable_file)
{
    ck_assert_int_eq(symlink(at("outside/secret"), at("dir/abs")), 0);
    ck_assert_int_eq(symlink("file", at("dir/rel")), 0);
    errno = 0;
    ck_assert_ptr_null(fsat_read(rootfd, "dir/abs", 1024, NULL));
    ck_assert(errno == ELOOP || errno == EXDEV);
    errno = 0;
    ck_assert_ptr_null(fsat_read(rootfd, "dir/rel", 1024, NULL));
    ck_assert(errno == ELOOP || errno == EXDEV);
    errno = 0;
    ck_assert_ptr_null(fsat_read(rootfd, "../etc/passwd", 1024, NULL));
    ck_assert(errno == EXDEV || errno == ELOOP);
}
END_TEST

START_TEST(write_atomic_replaces_a_file)
{
    int dirfd = fsat_open(rootfd, "dir", O_RDONLY | O_DIRECTORY, 0);
    ck_assert_int_ge(dirfd, 0);
    ck_assert_int_eq(fsat_write_atomic(dirfd, "file", "new content", 11, 0640), 0);
    ck_assert_str_eq(slurp("dir/file"), "new content");
    struct stat st;
    ck_assert_int_eq(lstat(at("dir/file"), &st), 0);
    ck_assert(S_ISREG(st.st_mode));
    ck_assert_int_eq(st.st_mode & 07777, 0640);
    ck_assert(!fsat_exists(dirfd, "file.tmp"));
    /* a new name too, and a name with a '/' is refused */
    ck_assert_int_eq(fsat_write_atomic(dirfd, "fresh", "x", 1, 0600), 0);
    ck_assert_str_eq(slurp("dir/fresh"), "x");
    errno = 0;
    ck_assert_int_eq(fsat_write_atomic(dirfd, "../outside/secret", "x", 1, 0600), -1);
    ck_assert_int_eq(errno, EINVAL);
    ck_assert_str_eq(slurp("outside/secret"), "do not read\n");
    close(dirfd);
}
END_TEST

START_TEST(write_atomic_never_follows_a_planted_tmp_link)
{
    int dirfd = fsat_open(rootfd, "dir", O_RDONLY | O_DIRECTORY, 0);
    ck_assert_int_ge(dirfd, 0);
    ck_assert_int_eq(symlink(at("outside/secret"), at("dir/out.tmp")), 0);
    ck_assert_int_eq(fsat_write_atomic(dirfd, "out", "replaced", 8, 0600), 0);
    ck_assert_str_eq(slurp("outside/secret"), "do not read\n");
    struct stat st;
    ck_assert_int_eq(lstat(at("dir/out"), &st), 0);
    ck_assert(S_ISREG(st.st_mode));
    ck_assert_int_eq(st.st_nlink, 1);
    ck_assert_str_eq(slurp("dir/out"), "replaced");
    ck_assert(!fsat_exists(dirfd, "out.tmp"));
    /* a dangling link at "<name>.tmp" creates nothing at its target */
    ck_assert_int_eq(symlink(at("outside/made"), at("dir/file.tmp")), 0);
    ck_assert_int_eq(fsat_write_atomic(dirfd, "file", "again", 5, 0600), 0);
    ck_assert_int_ne(access(at("outside/made"), F_OK), 0);
    ck_assert_str_eq(slurp("dir/file"), "again");
    close(dirfd);
}
END_TEST

START_TEST(exists_sees_a_dangling_link)
{
    int dirfd = fsat_open(rootfd, "dir", O_RDONLY | O_DIRECTORY, 0);
    ck_assert_int_ge(dirfd, 0);
    ck_assert_int_eq(symlink("/nonexistent/aidc-dangling", at("dir/dangling")), 0);
    ck_assert(fsat_exists(dirfd, "dangling"));
    ck_assert(fsat_exists(dirfd, "file"));
    ck_assert(!fsat_exists(dirfd, "missing"));
    close(dirfd);
}
END_TEST

START_TEST(opendir_follows_the_operators_path)
{
    ck_assert_int_eq(symlink(at("dir"), at("alias")), 0);
    int fd = fsat_opendir(at("alias"));
    ck_assert_int_ge(fd, 0);
    ck_assert(fsat_exists(fd, "file"));
    close(fd);
    errno = 0;
    ck_assert_int_eq(fsat_opendir(at("dir/file")), -1);
    ck_assert_int_eq(errno, ENOTDIR);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("fsat");
    TCase *tc = tcase_create("fsat");
    tcase_add_unchecked_fixture(tc, make_base, remove_base);
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 10); /* a FIFO open that blocks ends here, as a failure */
    tcase_add_test(tc, a_plain_path_opens);
    tcase_add_test(tc, a_link_as_last_component_is_refused);
    tcase_add_test(tc, a_link_in_the_middle_is_refused);
    tcase_add_test(tc, absolute_and_dotdot_paths_are_refused);
    tcase_add_test(tc, a_fifo_is_refused_without_blocking);
    tcase_add_test(tc, a_directory_and_a_hard_link_are_refused);
    tcase_add_test(tc, a_plain_file_opens_regular);
    tcase_add_test(tc, read_returns_the_bytes);
    tcase_add_test(tc, read_beyond_max_is_e2big);
    tcase_add_test(tc, read_beyond_a_small_max_is_e2big);
    tcase_add_test(tc, read_of_exactly_max_bytes_succeeds);
    tcase_add_test(tc, read_refuses_a_link_to_a_readable_file);
    tcase_add_test(tc, write_atomic_replaces_a_file);
    tcase_add_test(tc, write_atomic_never_follows_a_planted_tmp_link);
    tcase_add_test(tc, exists_sees_a_dangling_link);
    tcase_add_test(tc, opendir_follows_the_operators_path);
    suite_add_tcase(s, tc);
    /* the same refusals without openat2 */
    TCase *walk = tcase_create("walk");
    tcase_add_unchecked_fixture(walk, make_base, remove_base);
    tcase_add_checked_fixture(walk, setup, teardown);
    tcase_add_checked_fixture(walk, without_openat2, NULL);
    tcase_set_timeout(walk, 10);
    tcase_add_test(walk, a_plain_path_opens);
    tcase_add_test(walk, a_link_as_last_component_is_refused);
    tcase_add_test(walk, a_link_in_the_middle_is_refused);
    tcase_add_test(walk, absolute_and_dotdot_paths_are_refused);
    tcase_add_test(walk, a_fifo_is_refused_without_blocking);
    tcase_add_test(walk, a_directory_and_a_hard_link_are_refused);
    tcase_add_test(walk, a_plain_file_opens_regular);
    tcase_add_test(walk, read_refuses_a_link_to_a_readable_file);
    suite_add_tcase(s, walk);
    return suite_run(s);
}
