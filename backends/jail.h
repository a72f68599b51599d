/*
 * jail.h - the sandbox a local job runs in: bubblewrap's command line.
 *
 * bubblewrap (bwrap, Debian's package; what Flatpak uses) builds the job's
 * namespaces from nothing: its own user, PID, mount, IPC, UTS, cgroup and
 * network namespaces, no capabilities, no_new_privs, no nested user
 * namespaces; a root file system of either the host's /usr, /etc and /opt
 * read-only or an image's root file system read-only; its own /proc and a
 * minimal /dev with only its GPUs' device nodes; its directory at /job and a
 * /tmp of its own writable; nothing of aidcd's (data directory, keys, the
 * database's socket) in view. The caller runs bwrap as the job's uid (never
 * root: bwrap started as root keeps root), inside the job's cgroups.
 *
 * The options travel in a memory file (`bwrap --args FD`), not on bwrap's
 * command line: the job's environment (which may hold its secrets) is never
 * in /proc/<pid>/cmdline, and bwrap itself runs with a fixed environment (a
 * job's LD_PRELOAD must not run in bwrap before the sandbox exists). The
 * command follows "--" on the command line (--args takes options only), as
 * it will in the job's own /proc/<pid>/cmdline.
 */
#ifndef AIDC_JAIL_H
#define AIDC_JAIL_H

#include "../lib/sbuf.h"

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#define JAIL_BWRAP "/usr/bin/bwrap"
#define JAIL_MAX_FDS 24 /* 11 of its own, 8 storage spaces (JOBMOUNT_MAX), room */
#define JAIL_MAX_GPU_NODES 72
/* where the job sees its directory, its script and its home */
#define JAIL_JOB_DIR "/job"
#define JAIL_SCRIPT "/run/aidc/job.sh"

/*
 * A storage space bound into the sandbox (storage/jobmount.h): its directory,
 * open, at path, which must be beneath /data or /home. Those hold nothing but
 * the spaces (and writable paths beneath them) and are read-only: folders of
 * bwrap's root in the host view, a tmpfs over an image's.
 */
struct jail_mount {
    int fd;
    const char *path;
    bool read_only;
};

/* Device nodes of a job's GPUs: their paths on the host and numbers. */
struct jail_devices {
    char paths[JAIL_MAX_GPU_NODES][128];
    unsigned major[JAIL_MAX_GPU_NODES], minor[JAIL_MAX_GPU_NODES];
    size_t n;
};

struct jail_spec {
    int rootfs_fd;  /* an image's root file system (a directory), or -1: the host's */
    int work_fd;    /* the job's directory, bound at /job */
    int tmp_fd;     /* its /tmp (and the host view's /var/tmp) */
    int script_fd;  /* the job's script at JAIL_SCRIPT, or -1 */
    /* generated files bound read-only over the root's (each -1: none) */
    int passwd_fd, group_fd, hosts_fd, resolv_fd;
    int status_fd;  /* write end of the pipe for bwrap's --json-status-fd */
    int block_fd;   /* read end bwrap waits on before the job runs, or -1 */
    const char *hostname;
    const struct jail_devices *gpus; /* bound at the same paths under /dev */
    const char *const *hidden;   /* masked (host view only): empty in the sandbox */
    size_t nhidden;
    const char *const *writable; /* bound read-write at the same paths */
    size_t nwritable;
    long long shm_bytes;         /* size of its /dev/shm */
    const struct jail_mount *mounts; /* its storage spaces */
    size_t nmounts;
    char *const *env;            /* "NAME=value", NULL-terminated: the job's whole environment */
    char *const *argv;           /* what runs, NULL-terminated */
};

/* The launch: arguments in a memory file, descriptors to hand over at fixed numbers. */
struct jail {
    int args_fd;                  /* memfd holding the NUL-separated arguments */
    int src[JAIL_MAX_FDS];        /* the caller's descriptors ... */
    int dst[JAIL_MAX_FDS];        /* ... and the numbers bwrap knows them by */
    size_t nfds;
    int own_fd;                   /* a descriptor of its own among them (-1: none) */
    char **argv;                  /* bwrap's: "--args 3 -- <the job's command>" */
};

/*
 * The GPU device nodes of indexes (nvidia<N> in dir) with the control nodes
 * that exist there (nvidiactl, nvidia-uvm, nvidia-uvm-tools,
 * nvidia-modeset): only character devices are taken. 0, or -1 with err when
 * a node of the job's GPUs is there but no character device.
 */
int jail_devices_find(const char *dir, const int *indexes, size_t n, struct jail_devices *out,
                      char *err, size_t errsz);

/*
 * The arguments of spec (into j: args_fd and the descriptor table). 0, or
 * -1 with err. Release with jail_free.
 */
int jail_build(const struct jail_spec *spec, struct jail *j, char *err, size_t errsz);
/* The arguments as text (for tests and the audit of a launch): one per line. */
void jail_args_text(const struct jail *j, struct sbuf *out);
void jail_free(struct jail *j);

/*
 * Whether a sandbox starts here as uid (-1: this process's own): bubblewrap
 * is installed, user namespaces are allowed, the uid can be taken. 0, or -1
 * with bwrap's own words in err.
 */
int jail_probe(long long uid, char *err, size_t errsz);

/*
 * In the child, after it joined the job's cgroups, set up stdin/stdout/stderr
 * and dropped to the job's uid: move the descriptors to their numbers, close
 * every other one and execute bwrap. Returns only on failure (async-signal-safe).
 */
void jail_exec(const struct jail *j);

#endif
