/*
 * imagetree.h - an unpacked image's root file system, made safe to share:
 * every tenant's job mounts it (read-only, nosuid, nodev), and the host's
 * users can reach the cache it lives in (as root, only the jobs' group).
 *
 * An image is anybody's upload: its layers may hold setuid-root programs,
 * file capabilities, device nodes, world-writable directories and links
 * where the sandbox mounts. Inside the sandbox the mount options defuse the
 * first three; outside, on the host, they would not. So the tree loses them
 * once, when it is unpacked: device nodes are removed, setuid and setgid
 * bits and write bits for group and others cleared, security.capability
 * removed; and the mount points the sandbox needs are made real. Every step
 * goes through descriptors opened without following links.
 */
#ifndef AIDC_IMAGETREE_H
#define AIDC_IMAGETREE_H

/* Bytes the tree at dirfd/name takes on disk (no link followed). */
long long imagetree_bytes(int dirfd, const char *name);

/*
 * Make the root file system open as rootfs safe to share (above) and give it
 * real mount points: directories proc, dev, tmp, run, job, etc, data, home and files
 * etc/passwd, etc/group, etc/hosts, etc/resolv.conf (a link or another kind
 * of file there is replaced). 0, or -1 with errno.
 */
int imagetree_prepare(int rootfs);

/*
 * Make sure the directory name (one component) is there in rootfs, as a
 * mount point: made (0755) when missing - an image unpacked before aidc
 * mounted storage spaces lacks /data - never replaced when it is something
 * else (other jobs may run the image: -1, ENOTDIR). 0, or -1 with errno.
 */
int imagetree_mount_dir(int rootfs, const char *name);

#endif
