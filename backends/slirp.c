/* slirp.c - slirp4netns for a job's network namespace (see slirp.h). */
#include "slirp.h"

#include "cgroup.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/nsfs.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define READY_MS 5000
#define FD_READY 3
#define FD_EXIT 4
#define FD_USERNS 5

int slirp_start(pid_t sandbox_pid, const int *procs, size_t nprocs, struct slirp *s, char *err,
                size_t errsz)
{
    return slirp_start_api(sandbox_pid, procs, nprocs, NULL, s, err, errsz);
}

int slirp_start_api(pid_t sandbox_pid, const int *procs, size_t nprocs, const char *api_socket,
                    struct slirp *s, char *err, size_t errsz)
{
    s->pid = 0;
    s->exit_fd = -1;
    char netns[64];
    snprintf(netns, sizeof netns, "/proc/%ld/ns/net", (long)sandbox_pid);
    /* Not root: the job's network namespace belongs to bwrap's outer user
     * namespace (its process is in an inner one), which slirp4netns must
     * join to configure it. Root joins any. */
    int userns = -1;
    if (geteuid() != 0) {
        int nfd = open(netns, O_RDONLY | O_CLOEXEC);
        userns = nfd >= 0 ? ioctl(nfd, NS_GET_USERNS) : -1;
        if (nfd >= 0)
            close(nfd);
        if (userns < 0) {
            snprintf(err, errsz, "cannot find the job's user namespace: %s", strerror(errno));
            return -1;
        }
    }
    int ready[2], ex[2];
    if (pipe2(ready, O_CLOEXEC) != 0) {
        snprintf(err, errsz, "pipe: %s", strerror(errno));
        if (userns >= 0)
            close(userns);
        return -1;
    }
    if (pipe2(ex, O_CLOEXEC) != 0) {
        snprintf(err, errsz, "pipe: %s", strerror(errno));
        close(ready[0]);
        close(ready[1]);
        if (userns >= 0)
            close(userns);
        return -1;
    }
    pid_t pid = fork();
    if (pid == 0) {
        sigset_t none;
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL);
        signal(SIGPIPE, SIG_DFL);
        if (cgroup_job_join(procs, nprocs) != 0) /* its work is the job's: counted so */
            _exit(126);
        int devnull = open("/dev/null", O_RDWR);
        int r = fcntl(ready[1], F_DUPFD, 10), e = fcntl(ex[0], F_DUPFD, 10);
        int u = userns >= 0 ? fcntl(userns, F_DUPFD, 10) : -1;
        if (devnull < 0 || r < 0 || e < 0 || dup2(devnull, 0) < 0 || dup2(devnull, 1) < 0 ||
            dup2(r, FD_READY) < 0 || dup2(e, FD_EXIT) < 0 || (u >= 0 && dup2(u, FD_USERNS) < 0))
            _exit(126);
        close_range(u >= 0 ? FD_USERNS + 1 : FD_EXIT + 1, ~0U, 0);
        char api[160];
        snprintf(api, sizeof api, "--api-socket=%s", api_socket ? api_socket : "");
        char *argv[16] = {(char *)"slirp4netns", (char *)"--configure", (char *)"--mtu=65520",
                          (char *)"--disable-host-loopback", (char *)"--enable-seccomp",
                          (char *)"--ready-fd=3", (char *)"--exit-fd=4",
                          (char *)"--netns-type=path"};
        int n = 8;
        /* its own sandbox (pivot_root, capabilities dropped) needs root; another
         * user's slirp4netns has no privilege to drop, and keeps its seccomp filter */
        if (api_socket)
            argv[n++] = api;
        if (u >= 0)
            argv[n++] = (char *)"--userns-path=/proc/self/fd/5";
        else
            argv[n++] = (char *)"--enable-sandbox";
        argv[n++] = netns;
        argv[n++] = (char *)"tap0";
        argv[n] = NULL;
        static char *const envp[] = {(char *)"PATH=/usr/sbin:/usr/bin:/sbin:/bin", NULL};
        execve(SLIRP_BIN, argv, envp); /* its stderr is the job's: its own words go there */
        _exit(127);
    }
    close(ready[1]);
    close(ex[0]);
    if (userns >= 0)
        close(userns);
    if (pid < 0) {
        snprintf(err, errsz, "fork: %s", strerror(errno));
        close(ready[0]);
        close(ex[1]);
        return -1;
    }
    s->pid = pid;
    s->exit_fd = ex[1];
    struct pollfd p = {.fd = ready[0], .events = POLLIN};
    char c = 0;
    int got;
    while ((got = poll(&p, 1, READY_MS)) < 0 && errno == EINTR)
        ;
    bool up = got == 1 && read(ready[0], &c, 1) == 1 && c == '1';
    close(ready[0]);
    if (!up) {
        snprintf(err, errsz, "slirp4netns did not connect the job's network (see its stderr)");
        slirp_stop(s);
        return -1;
    }
    return 0;
}

void slirp_stop(struct slirp *s)
{
    if (s->exit_fd >= 0)
        close(s->exit_fd);
    s->exit_fd = -1;
    if (s->pid <= 0)
        return;
    /* it exits when the descriptor closes; a stuck one is killed */
    for (int i = 0; i < 100; i++) {
        pid_t w = waitpid(s->pid, NULL, WNOHANG);
        if (w == s->pid || (w < 0 && errno != EINTR)) {
            s->pid = 0;
            return;
        }
        struct timespec nap = {0, 20L * 1000 * 1000};
        nanosleep(&nap, NULL);
    }
    kill(s->pid, SIGKILL);
    while (waitpid(s->pid, NULL, 0) < 0 && errno == EINTR)
        ;
    s->pid = 0;
}

/* A port of 127.0.0.1 free now (the kernel's choice), or -1. */
static int free_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -1;
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof a;
    int port = -1;
    if (bind(fd, (struct sockaddr *)&a, sizeof a) == 0 &&
        getsockname(fd, (struct sockaddr *)&a, &len) == 0)
        port = ntohs(a.sin_port);
    close(fd);
    return port;
}

/* One request to slirp4netns's control socket; its answer into out. 0 or -1. */
static int api_call(const char *path, const char *req, char *out, size_t outsz)
{
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    if (strlen(path) >= sizeof a.sun_path)
        return -1;
    memcpy(a.sun_path, path, strlen(path) + 1);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -1;
    struct timeval tv = {.tv_sec = 5};
    size_t got = 0, n = strlen(req);
    int rc = setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv) == 0 &&
                     connect(fd, (struct sockaddr *)&a, sizeof a) == 0 &&
                     write(fd, req, n) == (ssize_t)n && shutdown(fd, SHUT_WR) == 0
                 ? 0
                 : -1;
    while (rc == 0 && got + 1 < outsz) {
        ssize_t r = read(fd, out + got, outsz - 1 - got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        got += (size_t)r;
    }
    out[got] = '\0';
    close(fd);
    return rc == 0 && got > 0 ? 0 : -1;
}

int slirp_forward(const char *api_socket, int guest_port, char *err, size_t errsz)
{
    char answer[512] = "";
    for (int attempt = 0; attempt < 5; attempt++) { /* another may take the port meanwhile */
        int port = free_port();
        if (port <= 0)
            continue;
        char req[256];
        snprintf(req, sizeof req,
                 "{\"execute\": \"add_hostfwd\", \"arguments\": {\"proto\": \"tcp\", "
                 "\"host_addr\": \"127.0.0.1\", \"host_port\": %d, \"guest_port\": %d}}",
                 port, guest_port);
        if (api_call(api_socket, req, answer, sizeof answer) != 0) {
            snprintf(err, errsz, "slirp4netns's control socket does not answer: %s",
                     strerror(errno));
            return -1;
        }
        if (strstr(answer, "\"return\""))
            return port;
    }
    snprintf(err, errsz, "slirp4netns forwards no port: %.200s", answer);
    return -1;
}
