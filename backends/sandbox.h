/*
 * sandbox.h - confines a job of the local executor with Landlock (Linux
 * 5.13+, unprivileged): it reads what its user could read except the hidden
 * paths (aidcd's data directory with every other job's, its key and config
 * files), writes only beneath its own directory, the writable paths and
 * device files, and (Linux 6.12+) signals no process outside its sandbox.
 *
 * Landlock only allows, so "everything but the hidden paths" is granted as
 * every entry beside each hidden path and beside each of its ancestors
 * (symbolic links aside: access is checked where they lead). Entries made
 * later directly in one of those ancestor directories are out of reach:
 * jobs get TMPDIR inside their own directory.
 */
#ifndef AIDC_SANDBOX_H
#define AIDC_SANDBOX_H

#include <stddef.h>

struct sandbox_policy {
    const char *const *hidden; /* absolute paths; need not exist */
    size_t nhidden;
    const char *const *writable; /* absolute paths written to beneath (minus the hidden) */
    size_t nwritable;
    const char *own; /* the job's directory: every right, though under a hidden path */
};

/* The Landlock ABI version of this kernel; 0 without Landlock. */
int sandbox_abi(void);

/*
 * Confine the calling process and everything it executes from now on (sets
 * no_new_privs too). The process must be single-threaded. 0, or -1 with a
 * message in err (nothing confined when Landlock is missing).
 */
int sandbox_confine(const struct sandbox_policy *p, char *err, size_t errsz);

#endif
