/* jail.c - bubblewrap's arguments for a local job (see jail.h). */
#include "jail.h"

#include "../lib/xalloc.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define ARGS_FD 3 /* bwrap --args 3 */
#define RUN_BYTES (1 << 20)

/* the control nodes a CUDA program opens besides its GPUs' */
static const char *const control_nodes[] = {"nvidiactl", "nvidia-uvm", "nvidia-uvm-tools",
                                            "nvidia-modeset"};

static int add_node(struct jail_devices *out, const char *dir, const char *name, bool must,
                    char *err, size_t errsz)
{
    char path[128];
    struct stat st;
    int n = snprintf(path, sizeof path, "%s/%s", dir, name);
    if (n < 0 || (size_t)n >= sizeof path) {
        snprintf(err, errsz, "device directory %.60s is too long", dir);
        return -1;
    }
    if (stat(path, &st) != 0)
        return 0; /* no node: GPU slots on a machine without GPUs, or no such driver part */
    if (!S_ISCHR(st.st_mode)) {
        if (!must)
            return 0;
        snprintf(err, errsz, "%s is not a character device", path);
        return -1;
    }
    if (out->n == JAIL_MAX_GPU_NODES) {
        snprintf(err, errsz, "too many GPU device nodes");
        return -1;
    }
    memcpy(out->paths[out->n], path, (size_t)n + 1);
    out->major[out->n] = major(st.st_rdev);
    out->minor[out->n] = minor(st.st_rdev);
    out->n++;
    return 0;
}

int jail_devices_find(const char *dir, const int *indexes, size_t n, struct jail_devices *out,
                      char *err, size_t errsz)
{
    memset(out, 0, sizeof *out);
    if (n == 0)
        return 0; /* no GPU, no driver node either */
    for (size_t i = 0; i < n; i++) {
        char name[32];
        snprintf(name, sizeof name, "nvidia%d", indexes[i]);
        if (indexes[i] < 0 || add_node(out, dir, name, true, err, errsz) != 0)
            return -1;
    }
    for (size_t i = 0; i < sizeof control_nodes / sizeof *control_nodes; i++)
        if (add_node(out, dir, control_nodes[i], false, err, errsz) != 0)
            return -1;
    return 0;
}

static void arg(struct sbuf *b, const char *s)
{
    sbuf_append(b, s, strlen(s) + 1); /* with its NUL */
}

static void args2(struct sbuf *b, const char *a, const char *c)
{
    arg(b, a);
    arg(b, c);
}

static void args3(struct sbuf *b, const char *a, const char *c, const char *d)
{
    arg(b, a);
    arg(b, c);
    arg(b, d);
}

/* Hand fd to bwrap: the number it will have there, or -1 when the table is full. */
static int place(struct jail *j, int fd)
{
    if (j->nfds == JAIL_MAX_FDS || fd < 0)
        return -1;
    j->src[j->nfds] = fd;
    j->dst[j->nfds] = ARGS_FD + 1 + (int)j->nfds;
    return j->dst[j->nfds++];
}

/* "--op FD dest" for a descriptor handed over; false when the table is full */
static bool fd_arg(struct sbuf *b, struct jail *j, const char *op, int fd, const char *dest)
{
    int at = place(j, fd);
    if (at < 0)
        return false;
    char num[16];
    snprintf(num, sizeof num, "%d", at);
    if (dest)
        args3(b, op, num, dest);
    else
        args2(b, op, num);
    return true;
}

/* path is p or beneath it */
static bool beneath(const char *path, const char *p)
{
    size_t n = strlen(p);
    return strncmp(path, p, n) == 0 && (path[n] == '\0' || path[n] == '/');
}

/* The host's system directories, read-only, with Debian's merged-/usr links. */
static void host_view(struct sbuf *b)
{
    args3(b, "--ro-bind", "/usr", "/usr");
    args3(b, "--ro-bind", "/etc", "/etc");
    args3(b, "--ro-bind-try", "/opt", "/opt");
    static const char *const tops[] = {"/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"};
    for (size_t i = 0; i < sizeof tops / sizeof *tops; i++) {
        struct stat st;
        char target[256];
        if (lstat(tops[i], &st) != 0)
            continue;
        ssize_t n = S_ISLNK(st.st_mode) ? readlink(tops[i], target, sizeof target - 1) : -1;
        if (n > 0) {
            target[n] = '\0';
            args3(b, "--symlink", target, tops[i]);
        } else if (S_ISDIR(st.st_mode)) {
            args3(b, "--ro-bind", tops[i], tops[i]);
        }
    }
}

/* Mask the real path hr where the sandbox shows it, through the bind of real src at dest. */
static void mask(struct sbuf *b, const char *hr, const char *src, const char *dest)
{
    if (!beneath(hr, src))
        return;
    struct stat st;
    if (lstat(hr, &st) != 0)
        return;
    char at[PATH_MAX];
    int n = snprintf(at, sizeof at, "%s%s", dest, hr + strlen(src));
    if (n < 0 || (size_t)n >= sizeof at)
        return;
    if (S_ISDIR(st.st_mode)) {
        args2(b, "--tmpfs", at);
        args2(b, "--remount-ro", at);
    } else {
        args3(b, "--ro-bind", "/dev/null", at);
    }
}

/*
 * Hidden paths inside what the job sees become empty: under the host's
 * /usr, /etc and /opt (host view) and under the writable paths (either
 * view). Paths are compared as they really are (realpath): a hidden path
 * reached through a link, or shown through a writable path that is one, is
 * masked where the job would find it.
 */
static void hide(struct sbuf *b, const struct jail_spec *s, bool host)
{
    static const char *const shown[] = {"/usr", "/etc", "/opt"};
    for (size_t i = 0; i < s->nhidden; i++) {
        char hr[PATH_MAX], wr[PATH_MAX];
        if (!realpath(s->hidden[i], hr))
            continue; /* not there: nothing to hide */
        for (size_t k = 0; host && k < sizeof shown / sizeof *shown; k++)
            if (realpath(shown[k], wr))
                mask(b, hr, wr, shown[k]);
        for (size_t k = 0; k < s->nwritable; k++)
            if (realpath(s->writable[k], wr))
                mask(b, hr, wr, s->writable[k]);
    }
}

/* Whether path is beneath top: "/top/name[/name]" without "", "." or ".." components. */
static bool mount_path_ok(const char *path, const char *top)
{
    size_t n = strlen(top);
    if (strncmp(path, top, n) != 0 || path[n] != '/')
        return false;
    for (const char *p = path + n; *p == '/';) {
        size_t c = strcspn(p + 1, "/");
        if (c == 0 || (c == 1 && p[1] == '.') || (c == 2 && p[1] == '.' && p[2] == '.'))
            return false;
        p += c + 1;
    }
    return true;
}

static const char *const space_tops[] = {"/data", "/home"};

/*
 * Which of /data and /home the storage spaces go beneath (used[]); false with
 * err when one goes elsewhere, or where an operator's writable path is that
 * folder itself (the spaces would be made in the host's folder).
 */
static bool space_tops_used(const struct jail_spec *s, bool used[2], char *err, size_t errsz)
{
    used[0] = used[1] = false;
    for (size_t i = 0; i < s->nmounts; i++) {
        bool in = false;
        for (size_t t = 0; t < 2; t++)
            if (mount_path_ok(s->mounts[i].path, space_tops[t]))
                in = used[t] = true;
        if (!in) {
            snprintf(err, errsz, "%.100s is not where a storage space is mounted",
                     s->mounts[i].path);
            return false;
        }
    }
    for (size_t i = 0; i < s->nwritable; i++) {
        for (size_t t = 0; t < 2; t++) {
            if (used[t] && strcmp(s->writable[i], space_tops[t]) == 0) {
                snprintf(err, errsz, "options.writable_paths holds %s, where the job's storage "
                                     "spaces are mounted", space_tops[t]);
                return false;
            }
        }
    }
    return true;
}

/*
 * The storage spaces at their paths: a descriptor, not a path, is bound, so
 * nothing is looked up on the host. In the host view /data and /home are
 * folders of bwrap's root tmpfs, read-only with it at the end; an image's
 * root is read-only already, so a tmpfs goes over its /data and /home first
 * (tmpfs true) and is made read-only once everything beneath it is bound
 * (tmpfs false). Writable paths beneath them stay where the operator put them.
 */
static void space_tmpfs(struct sbuf *b, const struct jail_spec *s, const bool used[2], bool tmpfs)
{
    for (size_t t = 0; s->rootfs_fd >= 0 && t < 2; t++)
        if (used[t])
            args2(b, tmpfs ? "--tmpfs" : "--remount-ro", space_tops[t]);
}

static bool space_binds(struct sbuf *b, struct jail *j, const struct jail_spec *s)
{
    bool ok = true;
    for (size_t i = 0; i < s->nmounts; i++)
        ok &= fd_arg(b, j, s->mounts[i].read_only ? "--ro-bind-fd" : "--bind-fd",
                     s->mounts[i].fd, s->mounts[i].path);
    return ok;
}

int jail_build(const struct jail_spec *s, struct jail *j, char *err, size_t errsz)
{
    memset(j, 0, sizeof *j);
    j->args_fd = j->own_fd = -1;
    struct sbuf b = SBUF_INIT;
    char num[32];
    bool ok = true;
    /* namespaces: all of them; the job's uid stays what the caller made it */
    static const char *const ns[] = {"--unshare-user", "--disable-userns", "--unshare-pid",
                                     "--unshare-ipc",  "--unshare-uts",    "--unshare-net",
                                     "--unshare-cgroup-try", "--die-with-parent",
                                     "--new-session"};
    for (size_t i = 0; i < sizeof ns / sizeof *ns; i++)
        arg(&b, ns[i]);
    args2(&b, "--cap-drop", "ALL");
    if (s->rootfs_fd >= 0)
        ok &= fd_arg(&b, j, "--ro-bind-fd", s->rootfs_fd, "/");
    else
        host_view(&b);
    args2(&b, "--proc", "/proc");
    args2(&b, "--dev", "/dev");
    for (size_t i = 0; s->gpus && i < s->gpus->n; i++) {
        const char *name = strrchr(s->gpus->paths[i], '/');
        char dest[160];
        snprintf(dest, sizeof dest, "/dev%s", name ? name : "/nvidia");
        args3(&b, "--dev-bind", s->gpus->paths[i], dest);
    }
    /* its own shared memory, counted against its memory like the rest */
    snprintf(num, sizeof num, "%lld", s->shm_bytes > 0 ? s->shm_bytes : 64LL << 20);
    args2(&b, "--perms", "1777");
    args2(&b, "--size", num);
    args2(&b, "--tmpfs", "/dev/shm");
    snprintf(num, sizeof num, "%d", RUN_BYTES);
    args2(&b, "--size", num);
    args2(&b, "--tmpfs", "/run");
    ok &= fd_arg(&b, j, "--bind-fd", s->work_fd, JAIL_JOB_DIR);
    ok &= fd_arg(&b, j, "--bind-fd", s->tmp_fd, "/tmp");
    if (s->rootfs_fd < 0) {
        args3(&b, "--symlink", "../tmp", "/var/tmp");
    } else {
        struct stat st;
        if (fstatat(s->rootfs_fd, "var/tmp", &st, AT_SYMLINK_NOFOLLOW) == 0 &&
            S_ISDIR(st.st_mode)) {
            j->own_fd = fcntl(s->tmp_fd, F_DUPFD_CLOEXEC, 0);
            ok &= fd_arg(&b, j, "--bind-fd", j->own_fd, "/var/tmp");
        }
    }
    bool tops[2];
    if (!space_tops_used(s, tops, err, errsz)) {
        sbuf_free(&b);
        jail_free(j);
        return -1;
    }
    space_tmpfs(&b, s, tops, true);
    for (size_t i = 0; i < s->nwritable; i++)
        args3(&b, "--bind-try", s->writable[i], s->writable[i]);
    ok &= space_binds(&b, j, s); /* after the writable paths: a space wins at its path */
    hide(&b, s, s->rootfs_fd < 0); /* after the binds it masks parts of */
    space_tmpfs(&b, s, tops, false);
    const struct {
        int fd;
        const char *dest;
        const char *perms;
    } data[] = {{s->passwd_fd, "/etc/passwd", "0444"},  {s->group_fd, "/etc/group", "0444"},
                {s->hosts_fd, "/etc/hosts", "0444"},    {s->resolv_fd, "/etc/resolv.conf", "0444"},
                {s->script_fd, JAIL_SCRIPT, "0555"}};
    for (size_t i = 0; i < sizeof data / sizeof *data; i++) {
        if (data[i].fd < 0)
            continue;
        args2(&b, "--perms", data[i].perms);
        ok &= fd_arg(&b, j, "--ro-bind-data", data[i].fd, data[i].dest);
    }
    args2(&b, "--remount-ro", "/");
    args2(&b, "--hostname", s->hostname && s->hostname[0] ? s->hostname : "job");
    arg(&b, "--clearenv");
    for (size_t i = 0; s->env && s->env[i]; i++) {
        const char *eq = strchr(s->env[i], '=');
        if (!eq)
            continue;
        char *name = xstrndup(s->env[i], (size_t)(eq - s->env[i]));
        args3(&b, "--setenv", name, eq + 1);
        free(name);
    }
    args2(&b, "--chdir", JAIL_JOB_DIR);
    ok &= fd_arg(&b, j, "--json-status-fd", s->status_fd, NULL);
    if (s->block_fd >= 0)
        ok &= fd_arg(&b, j, "--block-fd", s->block_fd, NULL);
    /* the command goes on bwrap's own command line: --args takes options only */
    size_t n = 0;
    while (s->argv && s->argv[n])
        n++;
    j->argv = xcalloc(n + 5, sizeof *j->argv);
    j->argv[0] = xstrdup("bwrap");
    j->argv[1] = xstrdup("--args");
    j->argv[2] = xstrdup("3");
    j->argv[3] = xstrdup("--");
    for (size_t i = 0; i < n; i++)
        j->argv[4 + i] = xstrdup(s->argv[i]);
    if (!ok || n == 0) {
        snprintf(err, errsz, !ok ? "too many descriptors for the sandbox" : "nothing to run");
        sbuf_free(&b);
        jail_free(j);
        return -1;
    }
    j->args_fd = memfd_create("aidc-jail-args", MFD_CLOEXEC);
    size_t done = 0;
    while (j->args_fd >= 0 && done < b.len) {
        ssize_t w = write(j->args_fd, b.buf + done, b.len - done);
        if (w <= 0)
            break;
        done += (size_t)w;
    }
    if (j->args_fd < 0 || done != b.len || lseek(j->args_fd, 0, SEEK_SET) != 0) {
        snprintf(err, errsz, "cannot write the sandbox's arguments: %s", strerror(errno));
        sbuf_free(&b);
        jail_free(j);
        return -1;
    }
    sbuf_free(&b);
    return 0;
}

void jail_args_text(const struct jail *j, struct sbuf *out)
{
    char buf[4096];
    ssize_t n;
    off_t at = 0;
    while (j->args_fd >= 0 && (n = pread(j->args_fd, buf, sizeof buf, at)) > 0) {
        for (ssize_t i = 0; i < n; i++) /* one argument a line */
            if (buf[i] == '\0')
                buf[i] = '\n';
        sbuf_append(out, buf, (size_t)n);
        at += n;
    }
    for (size_t i = 3; j->argv && j->argv[i]; i++)
        sbuf_printf(out, "%s\n", j->argv[i]);
}

void jail_free(struct jail *j)
{
    if (j->args_fd >= 0)
        close(j->args_fd);
    if (j->own_fd >= 0)
        close(j->own_fd);
    j->args_fd = j->own_fd = -1;
    for (size_t i = 0; j->argv && j->argv[i]; i++)
        free(j->argv[i]);
    free(j->argv);
    j->argv = NULL;
    j->nfds = 0;
}

void jail_exec(const struct jail *j)
{
    /* first above every number handed out, then down to it: a source may
     * hold a number that another one must take */
    int top = ARGS_FD + 1 + (int)j->nfds, high[JAIL_MAX_FDS + 1];
    high[0] = fcntl(j->args_fd, F_DUPFD, top);
    for (size_t i = 0; i < j->nfds; i++)
        high[i + 1] = fcntl(j->src[i], F_DUPFD, top);
    for (size_t i = 0; i <= j->nfds; i++) {
        if (high[i] < 0 || dup2(high[i], i == 0 ? ARGS_FD : j->dst[i - 1]) < 0)
            return;
    }
    close_range((unsigned)top, ~0U, 0);
    static char *const envp[] = {(char *)"PATH=/usr/sbin:/usr/bin:/sbin:/bin", NULL};
    execve(JAIL_BWRAP, j->argv, envp);
}

int jail_probe(long long uid, char *err, size_t errsz)
{
    if (access(JAIL_BWRAP, X_OK) != 0) {
        snprintf(err, errsz, JAIL_BWRAP " is missing (apt-get install bubblewrap)");
        return -1;
    }
    struct sbuf b = SBUF_INIT;
    static const char *const head[] = {"bwrap",           "--unshare-user", "--disable-userns",
                                       "--unshare-pid",   "--unshare-ipc",  "--unshare-uts",
                                       "--unshare-net",   "--unshare-cgroup-try",
                                       "--die-with-parent", "--new-session", "--cap-drop", "ALL"};
    for (size_t i = 0; i < sizeof head / sizeof *head; i++)
        arg(&b, head[i]);
    host_view(&b);
    static const char *const tail[] = {"--proc", "/proc", "--dev", "/dev", "--", "/bin/true"};
    for (size_t i = 0; i < sizeof tail / sizeof *tail; i++)
        arg(&b, tail[i]);
    size_t n = 0;
    for (size_t i = 0; i < b.len; i++)
        n += b.buf[i] == '\0';
    char **argv = xcalloc(n + 1, sizeof *argv);
    for (size_t i = 0, k = 0; i < b.len; i += strlen(b.buf + i) + 1)
        argv[k++] = b.buf + i;
    int out[2];
    int rc = -1;
    if (pipe2(out, O_CLOEXEC) != 0) {
        snprintf(err, errsz, "pipe: %s", strerror(errno));
        goto done;
    }
    pid_t pid = fork();
    if (pid == 0) { /* async-signal-safe only: aidcd has other threads */
        int devnull = open("/dev/null", O_RDONLY);
        if (devnull < 0 || dup2(devnull, 0) < 0 || dup2(out[1], 1) < 0 || dup2(out[1], 2) < 0)
            _exit(126);
        close_range(3, ~0U, 0);
        if (uid >= 0 && (setgroups(0, NULL) != 0 || setresgid((gid_t)uid, (gid_t)uid, (gid_t)uid) != 0 ||
                         setresuid((uid_t)uid, (uid_t)uid, (uid_t)uid) != 0))
            _exit(125);
        static char *const envp[] = {(char *)"PATH=/usr/sbin:/usr/bin:/sbin:/bin", NULL};
        execve(JAIL_BWRAP, argv, envp);
        _exit(127);
    }
    close(out[1]);
    char words[512] = "";
    size_t got = 0;
    struct pollfd p = {.fd = out[0], .events = POLLIN};
    while (pid > 0 && got + 1 < sizeof words && poll(&p, 1, 10000) > 0) {
        ssize_t r = read(out[0], words + got, sizeof words - 1 - got);
        if (r <= 0)
            break;
        got += (size_t)r;
    }
    words[got] = '\0';
    words[strcspn(words, "\n")] = '\0';
    close(out[0]);
    int st = 0;
    for (int i = 0; pid > 0 && i < 250; i++) { /* it is done, or it hangs: it ends here */
        pid_t w = waitpid(pid, &st, WNOHANG);
        if (w == pid || (w < 0 && errno != EINTR))
            break;
        if (i == 249) {
            kill(pid, SIGKILL);
            while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
                ;
        }
        struct timespec nap = {0, 20L * 1000 * 1000};
        nanosleep(&nap, NULL);
    }
    if (pid < 0)
        snprintf(err, errsz, "fork: %s", strerror(errno));
    else if (WIFEXITED(st) && WEXITSTATUS(st) == 0)
        rc = 0;
    else
        snprintf(err, errsz, "%s", WIFEXITED(st) && WEXITSTATUS(st) == 125
                                       ? "cannot drop to a job's uid"
                                   : words[0] ? words
                                              : "bwrap failed (are user namespaces enabled?)");
done:
    free(argv);
    sbuf_free(&b);
    return rc;
}
