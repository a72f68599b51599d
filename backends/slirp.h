/*
 * slirp.h - outbound network for a local job (options.network "outbound"):
 * slirp4netns, a user-mode TCP/IP stack (Debian's package; what rootless
 * Podman uses), connects the job's own network namespace to the world
 * through ordinary sockets of the host, with --disable-host-loopback: the
 * job reaches nothing on the host's loopback (the database, aidcd, other
 * jobs' apps). It runs with a seccomp filter (--enable-seccomp) and, started
 * by root, in a sandbox of its own (--enable-sandbox: pivot_root, capabilities
 * dropped; another user's has none to drop), and exits when the descriptor
 * the caller holds closes.
 */
#ifndef AIDC_SLIRP_H
#define AIDC_SLIRP_H

#include <stddef.h>
#include <sys/types.h>

#define SLIRP_BIN "/usr/bin/slirp4netns"
/* the resolver slirp4netns offers inside the job */
#define SLIRP_DNS "10.0.2.3"

struct slirp {
    pid_t pid;   /* 0: not running */
    int exit_fd; /* closing it ends slirp4netns */
};

/*
 * Connect the network namespace of the sandbox's process sandbox_pid and
 * wait until its interface is up (at most a few seconds). slirp4netns joins
 * the job's cgroups first (procs: their cgroup.procs, cgroup.h): the CPU and
 * memory it spends on the job's traffic are the job's. 0, or -1 with err.
 */
int slirp_start(pid_t sandbox_pid, const int *procs, size_t nprocs, struct slirp *s, char *err,
                size_t errsz);
/*
 * As slirp_start, with slirp4netns's control socket at api_socket (a path in
 * the shim's control directory, which the job never sees) for slirp_forward.
 */
int slirp_start_api(pid_t sandbox_pid, const int *procs, size_t nprocs, const char *api_socket,
                    struct slirp *s, char *err, size_t errsz);
/*
 * Forward a free TCP port of the host's 127.0.0.1 to guest_port of the job
 * (an interactive session's app: docs/sessions.md): the port, or -1 with err.
 * Nothing but aidcd's relay is meant to connect there; the app's own token
 * stays the second lock.
 */
int slirp_forward(const char *api_socket, int guest_port, char *err, size_t errsz);
/* End it (closes the descriptor, waits for it); safe on one never started. */
void slirp_stop(struct slirp *s);

#endif
