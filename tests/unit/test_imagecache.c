/*
 * test_imagecache.c - the image cache's bookkeeping without a registry:
 * digests it accepts, and trimming to its bound (least recently used first,
 * never an image a job holds, nor one used in the last two minutes, nor the
 * one just pulled; what crashed pulls and evictions left goes too).
 */
#include "backends/imagecache.h"
#include "lib/rmtree.h"
#include "tests/support/suite.h"

#include <check.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static char dir[64];
static int dfd = -1;

static void setup(void)
{
    snprintf(dir, sizeof dir, "/tmp/aidc-unit-imagecache-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(dir));
    dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    ck_assert_int_ge(dfd, 0);
}

static void teardown(void)
{
    close(dfd);
    ck_assert_int_eq(rmtree_at(AT_FDCWD, dir), 0);
}

/* The hex digest of entry c (64 times the character c). */
static const char *hex_of(char c)
{
    static char h[8][65];
    static int next;
    char *out = h[next++ % 8];
    memset(out, c, 64);
    out[64] = '\0';
    return out;
}

/* A cached image of `bytes`, last used `age` seconds ago. */
static void entry(char c, long long bytes, long age)
{
    char path[256];
    snprintf(path, sizeof path, "%s/%s", dir, hex_of(c));
    ck_assert_int_eq(mkdir(path, 0711), 0);
    snprintf(path, sizeof path, "%s/%s/rootfs", dir, hex_of(c));
    ck_assert_int_eq(mkdir(path, 0755), 0);
    snprintf(path, sizeof path, "%s/%s/size", dir, hex_of(c));
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fprintf(f, "%lld\n", bytes);
    ck_assert_int_eq(fclose(f), 0);
    snprintf(path, sizeof path, "%s/%s.lock", dir, hex_of(c));
    int fd = open(path, O_WRONLY | O_CREAT, 0600);
    ck_assert_int_ge(fd, 0);
    close(fd);
    struct timespec t[2] = {{time(NULL) - age, 0}, {time(NULL) - age, 0}};
    ck_assert_int_eq(utimensat(AT_FDCWD, path, t, 0), 0);
}

static bool present(char c)
{
    struct stat st;
    return fstatat(dfd, hex_of(c), &st, 0) == 0;
}

START_TEST(digests_are_sha256_and_64_lowercase_hex)
{
    ck_assert(imagecache_digest_valid(
        "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"));
    ck_assert(!imagecache_digest_valid(NULL));
    ck_assert(!imagecache_digest_valid("sha256:"));
    ck_assert(!imagecache_digest_valid(
        "sha256:0123456789ABCDEF0123456789abcdef0123456789abcdef0123456789abcdef"));
    ck_assert(!imagecache_digest_valid(
        "sha512:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"));
    ck_assert(!imagecache_digest_valid(
        "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcde/"));
    ck_assert(!imagecache_digest_valid(
        "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef0"));
}
END_TEST

START_TEST(trim_takes_the_least_recently_used_first)
{
    entry('a', 100, 3000); /* oldest */
    entry('b', 100, 2000);
    entry('c', 100, 1000);
    imagecache_trim(dfd, 250, NULL);
    ck_assert(!present('a'));
    ck_assert(present('b') && present('c'));
    imagecache_trim(dfd, 250, NULL); /* within its bound now: nothing more goes */
    ck_assert(present('b') && present('c'));
    imagecache_trim(dfd, 0, NULL);
    ck_assert(!present('b') && !present('c'));
}
END_TEST

START_TEST(trim_spares_what_is_held_recent_or_kept)
{
    entry('a', 100, 3000); /* held by a running job */
    entry('b', 100, 2000); /* just pulled */
    entry('c', 100, 10);   /* used a moment ago */
    entry('d', 100, 1000);
    char path[256];
    snprintf(path, sizeof path, "%s/%s.lock", dir, hex_of('a'));
    int held = open(path, O_RDONLY);
    ck_assert_int_ge(held, 0);
    ck_assert_int_eq(flock(held, LOCK_SH), 0);
    imagecache_trim(dfd, 0, hex_of('b'));
    ck_assert(present('a') && present('b') && present('c'));
    ck_assert(!present('d'));
    /* once the job let go, it may go */
    close(held);
    imagecache_trim(dfd, 0, hex_of('b'));
    ck_assert(!present('a'));
    /* lock files stay: one another process opened keeps meaning */
    ck_assert_int_eq(access(path, F_OK), 0);
}
END_TEST

START_TEST(trim_removes_what_crashed_evictions_left)
{
    char path[256];
    snprintf(path, sizeof path, "%s/evict-%s-123", dir, hex_of('e'));
    ck_assert_int_eq(mkdir(path, 0700), 0);
    snprintf(path, sizeof path, "%s/evict-%s-123/rootfs", dir, hex_of('e'));
    ck_assert_int_eq(mkdir(path, 0700), 0);
    imagecache_trim(dfd, 1LL << 40, NULL);
    snprintf(path, sizeof path, "%s/evict-%s-123", dir, hex_of('e'));
    ck_assert_int_ne(access(path, F_OK), 0);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("imagecache");
    TCase *tc = tcase_create("imagecache");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, digests_are_sha256_and_64_lowercase_hex);
    tcase_add_test(tc, trim_takes_the_least_recently_used_first);
    tcase_add_test(tc, trim_spares_what_is_held_recent_or_kept);
    tcase_add_test(tc, trim_removes_what_crashed_evictions_left);
    suite_add_tcase(s, tc);
    return suite_run(s);
}
