/*
 * test_sandbox.c - backends/sandbox.c on a tree of its own: after
 * sandbox_confine, a process reads nothing beneath a hidden path (nor through
 * a symbolic link into one) but its own directory there, reads beside it,
 * writes only in writable paths, its own directory and allowed devices, makes
 * no device node, and (Landlock ABI 6+) signals no process outside. Each
 * probe runs in a child that confines itself and reports by exit status; the
 * same probes unconfined show they can tell "allowed" from "denied".
 * Skipped (with a note) on a kernel without Landlock.
 */
#include "backends/sandbox.h"
#include "tests/support/suite.h"

#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

static char root[64];

static const char *at(const char *rel)
{
    static char buf[4][256];
    static int k;
    k = (k + 1) % 4;
    snprintf(buf[k], sizeof buf[k], "%s/%s", root, rel);
    return buf[k];
}

static void put(const char *rel, const char *text)
{
    FILE *f = fopen(at(rel), "w");
    ck_assert_ptr_nonnull(f);
    fputs(text, f);
    fclose(f);
}

static void setup(void)
{
    snprintf(root, sizeof root, "/tmp/aidc-sandbox-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(root));
    const char *dirs[] = {"hidden", "hidden/own", "hidden/other", "open", "rw"};
    for (size_t i = 0; i < sizeof dirs / sizeof *dirs; i++)
        ck_assert_int_eq(mkdir(at(dirs[i]), 0700), 0);
    put("hidden/secret", "key");
    put("hidden/other/theirs", "theirs");
    put("hidden/own/mine", "mine");
    put("open/readme", "hello");
    ck_assert_int_eq(symlink(at("hidden/secret"), at("open/link")), 0);
}

static void teardown(void)
{
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
    ck_assert_int_eq(system(cmd), 0);
}

static bool can_open(const char *path, int flags)
{
    int fd = open(path, flags | O_CLOEXEC, 0600);
    if (fd < 0)
        return false;
    close(fd);
    return true;
}

enum probe {
    P_SECRET,     /* read hidden/secret */
    P_OTHER,      /* read hidden/other/theirs */
    P_LINK,       /* read hidden/secret through open/link */
    P_LIST,       /* list hidden/ */
    P_OPEN,       /* read open/readme */
    P_OPEN_MAKE,  /* make open/new */
    P_RW_MAKE,    /* make rw/new */
    P_OWN_READ,   /* read hidden/own/mine */
    P_OWN_MAKE,   /* make hidden/own/new */
    P_DEVNULL,    /* write /dev/null */
    P_SYSTEM,     /* read /bin/sh */
    P_MKNOD,      /* make a character device in rw/ */
    P_SIGNAL,     /* signal the parent (outside the sandbox) */
    P_COUNT
};

static bool probe(enum probe p)
{
    switch (p) {
    case P_SECRET: return can_open(at("hidden/secret"), O_RDONLY);
    case P_OTHER: return can_open(at("hidden/other/theirs"), O_RDONLY);
    case P_LINK: return can_open(at("open/link"), O_RDONLY);
    case P_LIST: {
        DIR *d = opendir(at("hidden"));
        if (d)
            closedir(d);
        return d != NULL;
    }
    case P_OPEN: return can_open(at("open/readme"), O_RDONLY);
    case P_OPEN_MAKE: return can_open(at("open/new"), O_WRONLY | O_CREAT);
    case P_RW_MAKE: return can_open(at("rw/new"), O_WRONLY | O_CREAT);
    case P_OWN_READ: return can_open(at("hidden/own/mine"), O_RDONLY);
    case P_OWN_MAKE: return can_open(at("hidden/own/new"), O_WRONLY | O_CREAT);
    case P_DEVNULL: return can_open("/dev/null", O_WRONLY);
    case P_SYSTEM: return can_open("/bin/sh", O_RDONLY);
    case P_MKNOD: return mknod(at("rw/dev"), S_IFCHR | 0600, makedev(1, 3)) == 0;
    case P_SIGNAL: return kill(getppid(), 0) == 0;
    case P_COUNT: break;
    }
    return false;
}

/* Run every probe in a child, confined or not; bit p of the result: allowed. */
static unsigned probes(bool confined)
{
    int fds[2];
    ck_assert_int_eq(pipe(fds), 0);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        close(fds[0]);
        const char *hidden[] = {at("hidden")}, *writable[] = {at("rw")};
        struct sandbox_policy pol = {.hidden = hidden, .nhidden = 1, .writable = writable,
                                     .nwritable = 1, .own = at("hidden/own")};
        char err[256];
        if (confined && sandbox_confine(&pol, err, sizeof err) != 0) {
            dprintf(2, "sandbox_confine: %s\n", err);
            _exit(1);
        }
        unsigned bits = 0;
        for (int p = 0; p < P_COUNT; p++)
            bits |= probe((enum probe)p) ? 1u << p : 0;
        _exit(write(fds[1], &bits, sizeof bits) == (ssize_t)sizeof bits ? 0 : 1);
    }
    close(fds[1]);
    unsigned bits = 0;
    ssize_t n = read(fds[0], &bits, sizeof bits);
    close(fds[0]);
    int st;
    ck_assert_int_eq(waitpid(pid, &st, 0), pid);
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0 && n == (ssize_t)sizeof bits,
                  "the probe child failed");
    return bits;
}

#define ALLOWED(bits, p) (((bits) >> (p)) & 1u)

START_TEST(unconfined_probes_reach_everything)
{
    unsigned b = probes(false);
    for (int p = 0; p < P_COUNT; p++) {
        if (p == P_MKNOD && geteuid() != 0)
            continue; /* mknod needs root anyway */
        ck_assert_msg(ALLOWED(b, p), "probe %d denied without a sandbox", p);
    }
}
END_TEST

START_TEST(confined_reads_all_but_the_hidden_and_writes_only_where_allowed)
{
    int abi = sandbox_abi();
    if (abi < 1) {
        fprintf(stderr, "test_sandbox: this kernel has no Landlock; nothing to test\n");
        return;
    }
    unsigned b = probes(true);
    const enum probe denied[] = {P_SECRET, P_OTHER, P_LINK, P_LIST, P_OPEN_MAKE, P_MKNOD};
    const enum probe allowed[] = {P_OPEN, P_RW_MAKE, P_OWN_READ, P_OWN_MAKE, P_DEVNULL, P_SYSTEM};
    for (size_t i = 0; i < sizeof denied / sizeof *denied; i++)
        ck_assert_msg(!ALLOWED(b, denied[i]), "probe %d allowed in the sandbox", denied[i]);
    for (size_t i = 0; i < sizeof allowed / sizeof *allowed; i++)
        ck_assert_msg(ALLOWED(b, allowed[i]), "probe %d denied in the sandbox", allowed[i]);
    /* signals leave the sandbox only before Landlock ABI 6 */
    ck_assert_msg(ALLOWED(b, P_SIGNAL) == (abi < 6), "signal probe with ABI %d", abi);
}
END_TEST

/* Raw devices stay closed: /dev is granted entry by entry. */
START_TEST(confined_opens_no_raw_device)
{
    if (sandbox_abi() < 1)
        return;
    const char *raw = access("/dev/kmsg", F_OK) == 0 ? "/dev/kmsg" : NULL;
    if (!raw || !can_open(raw, O_RDONLY)) {
        fprintf(stderr, "test_sandbox: no readable /dev/kmsg to try\n");
        return;
    }
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        struct sandbox_policy pol = {.own = root};
        char err[256];
        if (sandbox_confine(&pol, err, sizeof err) != 0)
            _exit(2);
        _exit(can_open(raw, O_RDONLY) ? 1 : 0);
    }
    int st;
    ck_assert_int_eq(waitpid(pid, &st, 0), pid);
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "%s opened in the sandbox (%d)", raw,
                  WEXITSTATUS(st));
}
END_TEST

int main(void)
{
    Suite *s = suite_create("sandbox");
    TCase *tc = tcase_create("sandbox");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, unconfined_probes_reach_everything);
    tcase_add_test(tc, confined_reads_all_but_the_hidden_and_writes_only_where_allowed);
    tcase_add_test(tc, confined_opens_no_raw_device);
    suite_add_tcase(s, tc);
    return suite_run(s);
}
