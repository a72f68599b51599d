/*
 * rmtree.h - remove a directory tree that another process may be changing
 * (a local job's TMPDIR, while a process the job left behind still runs).
 * Every step goes through a directory descriptor opened without following
 * symbolic links, so a directory swapped for a link mid-walk makes the walk
 * remove the link, never anything where it leads.
 */
#ifndef AIDC_RMTREE_H
#define AIDC_RMTREE_H

/*
 * Remove `name` inside the directory dirfd (AT_FDCWD: the working directory)
 * and everything beneath it, at most RMTREE_MAX_DEPTH levels deep. 0 when it
 * is gone (or was not there), -1 when something stayed.
 */
#define RMTREE_MAX_DEPTH 128
int rmtree_at(int dirfd, const char *name);

#endif
