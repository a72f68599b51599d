/*
 * test_jail.c - backends/jail.h: bubblewrap's command line for a local job.
 * The job's environment travels only in the arguments' memory file, never on
 * bwrap's command line ("bwrap --args 3 -- <command>"); every namespace is
 * new, capabilities dropped and the root read-only; a hidden path beneath a
 * writable one is masked after that path is bound; an image's root replaces
 * the host's /usr; descriptors are handed over from 4 upward. GPU device
 * nodes are found by index (character devices only), and where bwrap and
 * root are there, a real sandbox starts (jail_probe, jail_exec).
 */
#include "backends/jail.h"
#include "lib/rmtree.h"
#include "lib/sbuf.h"
#include "tests/support/suite.h"

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#define JOB_UID 3000001

/* base: one per run, removed at its end (a failed test skips its teardown); root: the test's */
static char base[64], root[96];
static int work_fd = -1, tmp_fd = -1, status_pipe[2] = {-1, -1};

static const char *at(const char *rel)
{
    static char buf[8][512];
    static int k;
    k = (k + 1) % 8;
    snprintf(buf[k], sizeof buf[k], "%s/%s", root, rel);
    return buf[k];
}

static int open_dir(const char *rel)
{
    int fd = open(at(rel), O_PATH | O_DIRECTORY | O_CLOEXEC);
    ck_assert_int_ge(fd, 0);
    return fd;
}

static void make_base(void)
{
    snprintf(base, sizeof base, "/tmp/aidc-jail-XXXXXX");
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
    ck_assert_msg(base[0] != '\0', "no directory under /tmp");
    snprintf(root, sizeof root, "%s/t-XXXXXX", base);
    ck_assert_ptr_nonnull(mkdtemp(root));
    ck_assert_int_eq(mkdir(at("work"), 0700), 0);
    ck_assert_int_eq(mkdir(at("tmp"), 0700), 0);
    ck_assert_int_eq(mkdir(at("w"), 0755), 0);
    ck_assert_int_eq(mkdir(at("w/secret"), 0755), 0);
    ck_assert_int_eq(mkdir(at("dev"), 0755), 0);
    work_fd = open_dir("work");
    tmp_fd = open_dir("tmp");
    ck_assert_int_eq(pipe2(status_pipe, O_CLOEXEC), 0);
}

static void teardown(void)
{
    close(work_fd);
    close(tmp_fd);
    close(status_pipe[0]);
    close(status_pipe[1]);
    ck_assert_int_eq(rmtree_at(AT_FDCWD, root), 0);
}

static char *const job_env[] = {"PATH=/usr/bin:/bin", "SECRET=s3cr3t", NULL};
static char *const job_argv[] = {"/bin/echo", "hello", NULL};

/* A spec of the host view: no image, no generated files. */
static struct jail_spec spec_of(void)
{
    struct jail_spec s = {
        .rootfs_fd = -1,
        .work_fd = work_fd,
        .tmp_fd = tmp_fd,
        .script_fd = -1,
        .passwd_fd = -1,
        .group_fd = -1,
        .hosts_fd = -1,
        .resolv_fd = -1,
        .status_fd = status_pipe[1],
        .block_fd = -1,
        .hostname = "node-1",
        .env = job_env,
        .argv = job_argv,
    };
    return s;
}

/* jail_args_text of j (malloc'd) */
static char *args_text(const struct jail *j)
{
    struct sbuf b = SBUF_INIT;
    jail_args_text(j, &b);
    ck_assert_uint_gt(b.len, 0);
    return sbuf_steal(&b);
}

/*
 * Where the whole lines seq ("--op\narg") start in text, one argument a line;
 * -1 when they are not there.
 */
static long find(const char *text, const char *seq)
{
    size_t n = strlen(seq);
    for (const char *p = text; (p = strstr(p, seq)) != NULL; p++)
        if ((p == text || p[-1] == '\n') && (p[n] == '\n' || p[n] == '\0'))
            return (long)(p - text);
    return -1;
}

static void build_ok(const struct jail_spec *s, struct jail *j)
{
    char err[256] = "";
    ck_assert_msg(jail_build(s, j, err, sizeof err) == 0, "jail_build: %s", err);
    ck_assert_int_ge(j->args_fd, 0);
}

START_TEST(the_environment_is_only_in_the_args_file)
{
    struct jail_spec s = spec_of();
    struct jail j;
    build_ok(&s, &j);
    static const char *const want[] = {"bwrap", "--args", "3", "--", "/bin/echo", "hello"};
    size_t n = 0;
    while (j.argv[n])
        n++;
    ck_assert_uint_eq(n, sizeof want / sizeof *want);
    for (size_t i = 0; i < n; i++) {
        ck_assert_str_eq(j.argv[i], want[i]);
        ck_assert_ptr_null(strstr(j.argv[i], "s3cr3t"));
        ck_assert_ptr_null(strstr(j.argv[i], "SECRET"));
    }
    char *t = args_text(&j);
    ck_assert_msg(find(t, "--setenv\nSECRET\ns3cr3t") >= 0, "%s", t);
    ck_assert_msg(find(t, "--setenv\nPATH\n/usr/bin:/bin") >= 0, "%s", t);
    /* bwrap's own environment goes before the job's is set */
    ck_assert_int_ge(find(t, "--clearenv"), 0);
    ck_assert_int_lt(find(t, "--clearenv"), find(t, "--setenv\nSECRET\ns3cr3t"));
    /* the text ends with the command after "--" */
    ck_assert_int_ge(find(t, "--\n/bin/echo\nhello"), 0);
    free(t);
    jail_free(&j);
    ck_assert_ptr_null(j.argv);
    ck_assert_int_eq(j.args_fd, -1);
}
END_TEST

START_TEST(every_namespace_is_new_and_the_root_read_only)
{
    struct jail_spec s = spec_of();
    struct jail j;
    build_ok(&s, &j);
    char *t = args_text(&j);
    static const char *const want[] = {
        "--unshare-user", "--unshare-pid",  "--unshare-net", "--unshare-ipc",
        "--unshare-uts",  "--die-with-parent", "--cap-drop\nALL", "--disable-userns",
        "--remount-ro\n/", "--new-session", "--proc\n/proc", "--dev\n/dev",
        "--chdir\n/job", "--hostname\nnode-1", "--ro-bind\n/usr\n/usr", "--ro-bind\n/etc\n/etc",
        "--symlink\n../tmp\n/var/tmp"};
    for (size_t i = 0; i < sizeof want / sizeof *want; i++)
        ck_assert_msg(find(t, want[i]) >= 0, "no \"%s\" in:\n%s", want[i], t);
    /* nothing shares the host's network */
    ck_assert_int_lt(find(t, "--share-net"), 0);
    /* the job's directory and /tmp are the descriptors given */
    char line[64];
    for (size_t i = 0; i < j.nfds; i++) {
        const char *dest = j.src[i] == work_fd ? "/job" : j.src[i] == tmp_fd ? "/tmp" : NULL;
        if (!dest)
            continue;
        snprintf(line, sizeof line, "--bind-fd\n%d\n%s", j.dst[i], dest);
        ck_assert_msg(find(t, line) >= 0, "no \"%s\" in:\n%s", line, t);
    }
    for (size_t i = 0; i < j.nfds; i++) {
        if (j.src[i] != status_pipe[1])
            continue;
        snprintf(line, sizeof line, "--json-status-fd\n%d", j.dst[i]);
        ck_assert_msg(find(t, line) >= 0, "no \"%s\" in:\n%s", line, t);
    }
    free(t);
    jail_free(&j);
}
END_TEST

START_TEST(a_hidden_path_under_a_writable_one_is_masked_after_it)
{
    FILE *f = fopen(at("w/key"), "w");
    ck_assert_ptr_nonnull(f);
    fputs("key\n", f);
    ck_assert_int_eq(fclose(f), 0);
    char w[128], secret[128], key[128], away[128];
    snprintf(w, sizeof w, "%s", at("w"));
    snprintf(secret, sizeof secret, "%s", at("w/secret"));
    snprintf(key, sizeof key, "%s", at("w/key"));
    snprintf(away, sizeof away, "%s", at("tmp")); /* not in the job's view */
    const char *writable[] = {w};
    const char *hidden[] = {secret, key, away};
    struct jail_spec s = spec_of();
    s.writable = writable;
    s.nwritable = 1;
    s.hidden = hidden;
    s.nhidden = 3;
    struct jail j;
    build_ok(&s, &j);
    char *t = args_text(&j);
    char bind[300], mask[300], ro[300], file[300];
    snprintf(bind, sizeof bind, "--bind-try\n%s\n%s", w, w);
    snprintf(mask, sizeof mask, "--tmpfs\n%s", secret);
    snprintf(ro, sizeof ro, "--remount-ro\n%s", secret);
    snprintf(file, sizeof file, "--ro-bind\n/dev/null\n%s", key);
    long b = find(t, bind), m = find(t, mask), r = find(t, ro), k = find(t, file);
    ck_assert_msg(b >= 0 && m >= 0 && r >= 0 && k >= 0, "%s", t);
    ck_assert_msg(m > b, "the mask of %s comes before the bind of %s:\n%s", secret, w, t);
    ck_assert_msg(r > m, "%s", t);
    ck_assert_msg(k > b, "%s", t);
    ck_assert_ptr_null(strstr(t, away));
    free(t);
    jail_free(&j);
}
END_TEST

START_TEST(a_hidden_link_is_masked_where_it_leads)
{
    /* hidden: a link to a directory the writable path shows under another name */
    ck_assert_int_eq(mkdir(at("w/real-admin"), 0755), 0);
    char w[128], link[128], target[128];
    snprintf(w, sizeof w, "%s", at("w"));
    snprintf(target, sizeof target, "%s", at("w/real-admin"));
    snprintf(link, sizeof link, "%s", at("admin"));
    ck_assert_int_eq(symlink(target, link), 0);
    const char *writable[] = {w};
    const char *hidden[] = {link};
    struct jail_spec s = spec_of();
    s.writable = writable;
    s.nwritable = 1;
    s.hidden = hidden;
    s.nhidden = 1;
    struct jail j;
    build_ok(&s, &j);
    char *t = args_text(&j);
    char mask[300];
    snprintf(mask, sizeof mask, "--tmpfs\n%s", target);
    ck_assert_msg(find(t, mask) >= 0, "%s", t);
    free(t);
    jail_free(&j);
}
END_TEST

START_TEST(an_image_root_replaces_the_host_view)
{
    ck_assert_int_eq(mkdir(at("rootfs"), 0755), 0);
    ck_assert_int_eq(mkdir(at("rootfs/var"), 0755), 0);
    ck_assert_int_eq(mkdir(at("rootfs/var/tmp"), 01777), 0);
    int rootfs = open_dir("rootfs");
    char secret[128], w[128];
    snprintf(secret, sizeof secret, "%s", at("w/secret"));
    snprintf(w, sizeof w, "%s", at("w"));
    const char *hidden[] = {secret};
    const char *writable[] = {w};
    struct jail_spec s = spec_of();
    s.rootfs_fd = rootfs;
    s.hidden = hidden;
    s.nhidden = 1;
    s.writable = writable;
    s.nwritable = 1;
    struct jail j;
    build_ok(&s, &j);
    char *t = args_text(&j);
    ck_assert_msg(find(t, "--ro-bind-fd\n4\n/") >= 0, "%s", t);
    ck_assert_int_eq(j.src[0], rootfs);
    ck_assert_int_lt(find(t, "--ro-bind\n/usr\n/usr"), 0);
    ck_assert_int_lt(find(t, "--ro-bind\n/etc\n/etc"), 0);
    ck_assert_int_lt(find(t, "--symlink\n../tmp\n/var/tmp"), 0);
    ck_assert_int_ge(find(t, "--remount-ro\n/"), 0);
    /* the image's /var/tmp is the job's /tmp, through a descriptor of the jail's own */
    ck_assert_int_ge(j.own_fd, 0);
    bool bound = false;
    char line[64];
    for (size_t i = 0; i < j.nfds; i++) {
        snprintf(line, sizeof line, "--bind-fd\n%d\n/var/tmp", j.dst[i]);
        bound |= j.src[i] == j.own_fd && find(t, line) >= 0;
    }
    ck_assert_msg(bound, "%s", t);
    /* a hidden path under a writable one is masked in an image's view too (the writable
     * paths are the host's there as well) */
    char mask[160];
    snprintf(mask, sizeof mask, "--tmpfs\n%s", secret);
    ck_assert_msg(find(t, mask) >= 0, "%s", t);
    free(t);
    jail_free(&j);
    ck_assert_int_eq(j.own_fd, -1);
    close(rootfs);
}
END_TEST

/* Storage spaces: bound by descriptor at their paths, over read-only tmpfs at /data and /home. */
START_TEST(storage_spaces_are_bound_by_descriptor)
{
    int proj = open_dir("work"), ds = open_dir("tmp"), home = open_dir("w");
    const struct jail_mount mounts[] = {{proj, "/data/project", false},
                                        {ds, "/data/datasets/imagenet", true},
                                        {home, "/home/ann", false}};
    struct jail_spec s = spec_of();
    s.mounts = mounts;
    s.nmounts = 3;
    struct jail j;
    build_ok(&s, &j);
    char *t = args_text(&j);
    const char *ops[] = {"--bind-fd", "--ro-bind-fd", "--bind-fd"};
    const char *dests[] = {"/data/project", "/data/datasets/imagenet", "/home/ann"};
    const int fds[] = {proj, ds, home};
    for (size_t m = 0; m < 3; m++) {
        bool seen = false;
        char line[96];
        for (size_t i = 0; i < j.nfds; i++) {
            snprintf(line, sizeof line, "%s\n%d\n%s", ops[m], j.dst[i], dests[m]);
            seen |= j.src[i] == fds[m] && find(t, line) >= 0;
        }
        ck_assert_msg(seen, "mount %zu is not bound from its descriptor:\n%s", m, t);
    }
    /* the host view: /data and /home are folders of bwrap's root, read-only with it */
    ck_assert_msg(find(t, "--tmpfs\n/data") < 0 && find(t, "--tmpfs\n/home") < 0, "%s", t);
    ck_assert_msg(find(t, "--remount-ro\n/") > find(t, "--ro-bind-fd"), "%s", t);
    /* no host path of a space is on the command line */
    ck_assert_ptr_null(strstr(t, root));
    free(t);
    jail_free(&j);
    close(proj);
    close(ds);
    close(home);
}
END_TEST

/* An image's root is read-only: a tmpfs over its /data and /home, read-only once all is bound. */
START_TEST(in_an_image_spaces_go_over_a_tmpfs)
{
    ck_assert_int_eq(mkdir(at("rootfs"), 0755), 0);
    int rootfs = open_dir("rootfs"), proj = open_dir("work"), home = open_dir("w");
    const struct jail_mount mounts[] = {{proj, "/data/project", false}, {home, "/home/ann", true}};
    const char *writable[] = {"/data/shared"};
    struct jail_spec s = spec_of();
    s.rootfs_fd = rootfs;
    s.mounts = mounts;
    s.nmounts = 2;
    s.writable = writable;
    s.nwritable = 1;
    struct jail j;
    build_ok(&s, &j);
    char *t = args_text(&j);
    long data = find(t, "--tmpfs\n/data"), home_tmpfs = find(t, "--tmpfs\n/home");
    long shared = find(t, "--bind-try\n/data/shared\n/data/shared");
    long bind = find(t, "/data/project"), ro_bind = find(t, "/home/ann"); /* their bind lines */
    long data_ro = find(t, "--remount-ro\n/data"), home_ro = find(t, "--remount-ro\n/home");
    /* the tmpfs first, the operator's writable path on it, then the spaces, then read-only */
    ck_assert_msg(data >= 0 && home_tmpfs >= 0 && shared > data && bind > shared &&
                      data_ro > bind && home_ro > ro_bind,
                  "%s", t);
    free(t);
    jail_free(&j);
    /* an operator's writable /home itself: the spaces would be made in the host's /home */
    const char *home_writable[] = {"/home"};
    s.writable = home_writable;
    char err[256] = "";
    ck_assert_int_eq(jail_build(&s, &j, err, sizeof err), -1);
    ck_assert_msg(strstr(err, "writable_paths holds /home"), "%s", err);
    close(rootfs);
    close(proj);
    close(home);
}
END_TEST

START_TEST(a_space_goes_only_beneath_data_or_home)
{
    int fd = open_dir("work");
    static const char *const bad[] = {"/", "/etc", "/job", "/data", "/data/", "/home/",
                                      "/data/../etc", "/home/./x", "/home//x", "/datasets/x",
                                      "/data/x/..", "/homex/y", "data/project"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        const struct jail_mount m = {fd, bad[i], false};
        struct jail_spec s = spec_of();
        s.mounts = &m;
        s.nmounts = 1;
        struct jail j;
        char err[256] = "";
        ck_assert_msg(jail_build(&s, &j, err, sizeof err) == -1, "%s was taken", bad[i]);
        ck_assert_msg(strstr(err, "not where a storage space"), "%s: %s", bad[i], err);
    }
    close(fd);
}
END_TEST

START_TEST(descriptors_are_numbered_from_4)
{
    int p[2], files[5];
    ck_assert_int_eq(pipe2(p, O_CLOEXEC), 0);
    for (size_t i = 0; i < 5; i++) {
        files[i] = open("/dev/null", O_RDONLY | O_CLOEXEC);
        ck_assert_int_ge(files[i], 0);
    }
    struct jail_spec s = spec_of();
    s.passwd_fd = files[0];
    s.group_fd = files[1];
    s.hosts_fd = files[2];
    s.resolv_fd = files[3];
    s.script_fd = files[4];
    s.block_fd = p[0];
    struct jail j;
    build_ok(&s, &j);
    /* work, tmp, five files, status, block */
    ck_assert_uint_eq(j.nfds, 9);
    char *t = args_text(&j);
    for (size_t i = 0; i < j.nfds; i++) {
        ck_assert_int_eq(j.dst[i], 4 + (int)i);
        ck_assert_int_ge(j.src[i], 0);
        for (size_t k = 0; k < i; k++)
            ck_assert_int_ne(j.src[k], j.src[i]);
    }
    static const char *const dest[] = {"/etc/passwd", "/etc/group", "/etc/hosts",
                                       "/etc/resolv.conf", JAIL_SCRIPT};
    char line[96];
    for (size_t f = 0; f < 5; f++) {
        bool seen = false;
        for (size_t i = 0; i < j.nfds; i++) {
            snprintf(line, sizeof line, "--ro-bind-data\n%d\n%s", j.dst[i], dest[f]);
            seen |= j.src[i] == files[f] && find(t, line) >= 0;
        }
        ck_assert_msg(seen, "%s is not bound from its descriptor:\n%s", dest[f], t);
    }
    ck_assert_int_ge(find(t, "--perms\n0555\n--ro-bind-data"), 0); /* the script runs */
    bool block = false;
    for (size_t i = 0; i < j.nfds; i++) {
        snprintf(line, sizeof line, "--block-fd\n%d", j.dst[i]);
        block |= j.src[i] == p[0] && find(t, line) >= 0;
    }
    ck_assert_msg(block, "%s", t);
    free(t);
    jail_free(&j);
    for (size_t i = 0; i < 5; i++)
        close(files[i]);
    close(p[0]);
    close(p[1]);
}
END_TEST

START_TEST(nothing_to_run_is_an_error)
{
    struct jail_spec s = spec_of();
    s.argv = NULL;
    struct jail j;
    char err[256] = "";
    ck_assert_int_eq(jail_build(&s, &j, err, sizeof err), -1);
    ck_assert_msg(err[0] != '\0', "no message");
    ck_assert_ptr_null(j.argv);
    ck_assert_int_eq(j.args_fd, -1);
    char *const empty[] = {NULL};
    s.argv = empty;
    err[0] = '\0';
    ck_assert_int_eq(jail_build(&s, &j, err, sizeof err), -1);
    ck_assert_msg(err[0] != '\0', "no message");
    jail_free(&j); /* twice is harmless */
}
END_TEST

START_TEST(a_bad_descriptor_is_an_error)
{
    struct jail_spec s = spec_of();
    s.work_fd = -1;
    struct jail j;
    char err[256] = "";
    ck_assert_int_eq(jail_build(&s, &j, err, sizeof err), -1);
    ck_assert_msg(err[0] != '\0', "no message");
}
END_TEST

static bool make_node(const char *rel, unsigned ma, unsigned mi)
{
    return mknod(at(rel), S_IFCHR | 0666, makedev(ma, mi)) == 0;
}

START_TEST(gpu_nodes_are_found_by_index)
{
    if (geteuid() != 0) {
        fprintf(stderr, "gpu_nodes_are_found_by_index: skipped (mknod needs root)\n");
        return;
    }
    ck_assert(make_node("dev/nvidia0", 195, 0));
    ck_assert(make_node("dev/nvidia1", 195, 1));
    ck_assert(make_node("dev/nvidia2", 195, 2));
    ck_assert(make_node("dev/nvidiactl", 195, 255));
    FILE *f = fopen(at("dev/nvidia-uvm"), "w"); /* no character device: not taken */
    ck_assert_ptr_nonnull(f);
    ck_assert_int_eq(fclose(f), 0);
    struct jail_devices d;
    char err[256] = "";
    const int one[] = {1};
    ck_assert_msg(jail_devices_find(at("dev"), one, 1, &d, err, sizeof err) == 0, "%s", err);
    ck_assert_uint_eq(d.n, 2);
    ck_assert_str_eq(d.paths[0], at("dev/nvidia1"));
    ck_assert_uint_eq(d.major[0], 195);
    ck_assert_uint_eq(d.minor[0], 1);
    ck_assert_str_eq(d.paths[1], at("dev/nvidiactl"));
    ck_assert_uint_eq(d.minor[1], 255);
    for (size_t i = 0; i < d.n; i++) {
        ck_assert_str_ne(d.paths[i], at("dev/nvidia0"));
        ck_assert_str_ne(d.paths[i], at("dev/nvidia2"));
        ck_assert_str_ne(d.paths[i], at("dev/nvidia-uvm"));
    }
    const int two[] = {2, 0};
    ck_assert_msg(jail_devices_find(at("dev"), two, 2, &d, err, sizeof err) == 0, "%s", err);
    ck_assert_uint_eq(d.n, 3);
    ck_assert_str_eq(d.paths[0], at("dev/nvidia2"));
    ck_assert_str_eq(d.paths[1], at("dev/nvidia0"));
    ck_assert_str_eq(d.paths[2], at("dev/nvidiactl"));
    /* the nodes go to the same paths under the sandbox's /dev */
    struct jail_spec s = spec_of();
    s.gpus = &d;
    struct jail j;
    build_ok(&s, &j);
    char *t = args_text(&j), line[300];
    snprintf(line, sizeof line, "--dev-bind\n%s\n/dev/nvidia2", at("dev/nvidia2"));
    ck_assert_msg(find(t, line) >= 0, "%s", t);
    snprintf(line, sizeof line, "--dev-bind\n%s\n/dev/nvidiactl", at("dev/nvidiactl"));
    ck_assert_msg(find(t, line) >= 0, "%s", t);
    ck_assert_ptr_null(strstr(t, "/dev/nvidia1"));
    free(t);
    jail_free(&j);
}
END_TEST

START_TEST(a_gpu_node_that_is_no_device_is_refused)
{
    FILE *f = fopen(at("dev/nvidia0"), "w");
    ck_assert_ptr_nonnull(f);
    ck_assert_int_eq(fclose(f), 0);
    struct jail_devices d;
    char err[256] = "";
    const int zero[] = {0};
    ck_assert_int_eq(jail_devices_find(at("dev"), zero, 1, &d, err, sizeof err), -1);
    ck_assert_msg(strstr(err, "nvidia0") != NULL, "\"%s\"", err);
    /* another index does not look at it */
    const int one[] = {1};
    err[0] = '\0';
    ck_assert_msg(jail_devices_find(at("dev"), one, 1, &d, err, sizeof err) == 0, "%s", err);
    ck_assert_uint_eq(d.n, 0);
}
END_TEST

START_TEST(no_nodes_is_no_gpu)
{
    struct jail_devices d;
    char err[256] = "";
    const int idx[] = {0, 1};
    ck_assert_msg(jail_devices_find(at("dev"), idx, 2, &d, err, sizeof err) == 0, "%s", err);
    ck_assert_uint_eq(d.n, 0);
    ck_assert_int_eq(jail_devices_find(at("dev"), NULL, 0, &d, err, sizeof err), 0);
    ck_assert_uint_eq(d.n, 0);
}
END_TEST

static bool sandbox_here(const char *test)
{
    if (geteuid() == 0 && access(JAIL_BWRAP, X_OK) == 0)
        return true;
    fprintf(stderr, "%s: skipped (needs root and " JAIL_BWRAP ")\n", test);
    return false;
}

START_TEST(probe_starts_a_sandbox)
{
    if (!sandbox_here("probe_starts_a_sandbox"))
        return;
    char err[512] = "";
    ck_assert_msg(jail_probe(-1, err, sizeof err) == 0, "as root: %s", err);
    err[0] = '\0';
    ck_assert_msg(jail_probe(JOB_UID, err, sizeof err) == 0, "as uid %d: %s", JOB_UID, err);
}
END_TEST

/* In the child: become the job's user, then bwrap. */
static void run_jail(const struct jail *j)
{
    if (setgroups(0, NULL) != 0 || setresgid(JOB_UID, JOB_UID, JOB_UID) != 0 ||
        setresuid(JOB_UID, JOB_UID, JOB_UID) != 0)
        _exit(125);
    jail_exec(j);
    _exit(127);
}

/* Run j as the job's user and wait for it: its wait status; what bwrap said on its
 * status pipe into status (statussz bytes, NUL-terminated) when status is not NULL. */
static int run_and_wait(const struct jail *j, char *status, size_t statussz)
{
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0)
        run_jail(j);
    close(status_pipe[1]);
    status_pipe[1] = -1;
    size_t got = 0;
    ssize_t r;
    while (status && (r = read(status_pipe[0], status + got, statussz - 1 - got)) > 0)
        got += (size_t)r;
    if (status)
        status[got] = '\0';
    int st = 0;
    ck_assert_int_eq(waitpid(pid, &st, 0), pid);
    return st;
}

START_TEST(a_job_runs_in_the_sandbox)
{
    if (!sandbox_here("a_job_runs_in_the_sandbox"))
        return;
    /* the job's user owns its directories; the root dir must be passable */
    ck_assert_int_eq(chmod(base, 0755), 0);
    ck_assert_int_eq(chmod(root, 0755), 0);
    ck_assert_int_eq(chown(at("work"), JOB_UID, JOB_UID), 0);
    ck_assert_int_eq(chown(at("tmp"), JOB_UID, JOB_UID), 0);
    ck_assert_int_eq(chown(at("w"), JOB_UID, JOB_UID), 0);
    FILE *f = fopen(at("w/secret/key"), "w");
    ck_assert_ptr_nonnull(f);
    fputs("hidden\n", f);
    ck_assert_int_eq(fclose(f), 0);
    char w[128], secret[128], script[600];
    snprintf(w, sizeof w, "%s", at("w"));
    snprintf(secret, sizeof secret, "%s", at("w/secret"));
    snprintf(script, sizeof script,
             "echo \"$SECRET\" > /job/out; cat %s/key >> /job/out 2>/dev/null; "
             "echo tmp > /tmp/t && cat /tmp/t >> /job/out; echo w > %s/by-job; "
             "touch /usr/aidc-written 2>/dev/null && echo usr >> /job/out; exit 3",
             secret, w);
    char *const argv[] = {"/bin/sh", "-c", script, NULL};
    const char *writable[] = {w};
    const char *hidden[] = {secret};
    struct jail_spec s = spec_of();
    s.argv = argv;
    s.writable = writable;
    s.nwritable = 1;
    s.hidden = hidden;
    s.nhidden = 1;
    struct jail j;
    build_ok(&s, &j);
    char status[4096];
    int st = run_and_wait(&j, status, sizeof status);
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 3, "status %#x, bwrap said: %s", st, status);
    ck_assert_msg(strstr(status, "child-pid") != NULL, "no status from bwrap: \"%s\"", status);
    jail_free(&j);
    f = fopen(at("work/out"), "r");
    ck_assert_ptr_nonnull(f);
    char out[256];
    size_t n = fread(out, 1, sizeof out - 1, f);
    fclose(f);
    out[n] = '\0';
    /* the secret arrived; the hidden file and /usr stayed out of reach */
    ck_assert_str_eq(out, "s3cr3t\ntmp\n");
    ck_assert_int_eq(access(at("w/by-job"), F_OK), 0);
    ck_assert_int_eq(access(at("tmp/t"), F_OK), 0);
    ck_assert_int_ne(access("/usr/aidc-written", F_OK), 0);
}
END_TEST

/* A real sandbox: the job writes its project's space, reads a dataset it cannot change. */
START_TEST(a_job_writes_its_space_and_only_reads_a_dataset)
{
    if (!sandbox_here("a_job_writes_its_space_and_only_reads_a_dataset"))
        return;
    ck_assert_int_eq(chmod(base, 0755), 0);
    ck_assert_int_eq(chmod(root, 0755), 0);
    ck_assert_int_eq(chown(at("work"), JOB_UID, JOB_UID), 0);
    ck_assert_int_eq(chown(at("tmp"), JOB_UID, JOB_UID), 0);
    ck_assert_int_eq(mkdir(at("proj"), 0770), 0);
    ck_assert_int_eq(chown(at("proj"), JOB_UID, JOB_UID), 0);
    ck_assert_int_eq(mkdir(at("ds"), 0750), 0);
    ck_assert_int_eq(chown(at("ds"), 0, JOB_UID), 0);
    FILE *f = fopen(at("ds/f"), "w");
    ck_assert_ptr_nonnull(f);
    fputs("data\n", f);
    ck_assert_int_eq(fclose(f), 0);
    ck_assert_int_eq(chmod(at("ds/f"), 0666), 0); /* even a file anyone may write stays read-only */
    int proj = open_dir("proj"), ds = open_dir("ds");
    const struct jail_mount mounts[] = {{proj, "/data/project", false},
                                        {ds, "/data/datasets/d", true}};
    char *const argv[] = {"/bin/sh", "-c",
                          "echo out > /data/project/out; cat /data/datasets/d/f >> /data/project/out; "
                          "{ echo x >> /data/datasets/d/f; } 2>/dev/null && echo ds-writable >> /data/project/out; "
                          "touch /data/x 2>/dev/null && echo data-writable >> /data/project/out; "
                          "mount -o remount,rw /data/datasets/d 2>/dev/null && echo remounted >> /data/project/out; "
                          "{ ls /data; ls /data/datasets; } | tr '\\n' ' ' >> /data/project/out",
                          NULL};
    struct jail_spec s = spec_of();
    s.argv = argv;
    s.mounts = mounts;
    s.nmounts = 2;
    struct jail j;
    build_ok(&s, &j);
    int st = run_and_wait(&j, NULL, 0);
    jail_free(&j);
    close(proj);
    close(ds);
    char *out = NULL;
    size_t n = 0;
    f = fopen(at("proj/out"), "r");
    ck_assert_msg(f != NULL, "the job wrote nothing in its space (status %#x)", st);
    ck_assert_int_ge(getdelim(&out, &n, '\0', f), 0);
    fclose(f);
    ck_assert_str_eq(out, "out\ndata\ndatasets project d ");
    free(out);
    struct stat sb;
    ck_assert_int_eq(stat(at("proj/out"), &sb), 0);
    ck_assert_int_eq(sb.st_uid, JOB_UID);
    ck_assert_int_eq(stat(at("ds/f"), &sb), 0);
    ck_assert_int_eq(sb.st_size, 5);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("jail");
    TCase *tc = tcase_create("args");
    tcase_add_unchecked_fixture(tc, make_base, remove_base);
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, the_environment_is_only_in_the_args_file);
    tcase_add_test(tc, every_namespace_is_new_and_the_root_read_only);
    tcase_add_test(tc, a_hidden_path_under_a_writable_one_is_masked_after_it);
    tcase_add_test(tc, a_hidden_link_is_masked_where_it_leads);
    tcase_add_test(tc, an_image_root_replaces_the_host_view);
    tcase_add_test(tc, descriptors_are_numbered_from_4);
    tcase_add_test(tc, storage_spaces_are_bound_by_descriptor);
    tcase_add_test(tc, a_space_goes_only_beneath_data_or_home);
    tcase_add_test(tc, in_an_image_spaces_go_over_a_tmpfs);
    tcase_add_test(tc, nothing_to_run_is_an_error);
    tcase_add_test(tc, a_bad_descriptor_is_an_error);
    suite_add_tcase(s, tc);
    TCase *dev = tcase_create("devices");
    tcase_add_unchecked_fixture(dev, make_base, remove_base);
    tcase_add_checked_fixture(dev, setup, teardown);
    tcase_add_test(dev, gpu_nodes_are_found_by_index);
    tcase_add_test(dev, a_gpu_node_that_is_no_device_is_refused);
    tcase_add_test(dev, no_nodes_is_no_gpu);
    suite_add_tcase(s, dev);
    TCase *run = tcase_create("sandbox");
    tcase_add_unchecked_fixture(run, make_base, remove_base);
    tcase_add_checked_fixture(run, setup, teardown);
    tcase_set_timeout(run, 40); /* jail_probe waits for bwrap up to 15 s */
    tcase_add_test(run, probe_starts_a_sandbox);
    tcase_add_test(run, a_job_runs_in_the_sandbox);
    tcase_add_test(run, a_job_writes_its_space_and_only_reads_a_dataset);
    suite_add_tcase(s, run);
    return suite_run(s);
}
