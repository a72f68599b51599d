/*
 * jobenv.h - what a local job is given besides its files: its environment,
 * its argument vector, and the small files the sandbox puts in its view
 * (/etc/passwd and /etc/group naming its user, /etc/hosts, /etc/resolv.conf,
 * its script), each in a memory file the sandbox copies from.
 */
#ifndef AIDC_JOBENV_H
#define AIDC_JOBENV_H

#include <jansson.h>
#include <stdbool.h>
#include <sys/types.h>

#define JOBENV_MAX_ARGS 4096

/* Where the job's paths are: in the sandbox (/job, /tmp) or on the host (unconfined). */
struct jobenv_paths {
    const char *home;   /* its directory */
    const char *tmp;    /* TMPDIR */
    bool sandboxed;     /* GPUs numbered from 0 (only its own are there) */
    const json_t *platform; /* more the platform sets (an object of strings; NULL: none):
                             * where its storage spaces are */
};

/*
 * The job's environment (NULL-terminated "NAME=value", malloc'd; free with
 * jobenv_free): the image's own (image_env: array of "NAME=value", may be
 * NULL), a base (PATH unless the image sets it, HOME, TMPDIR, LANG, USER,
 * LOGNAME), the job's env (which may replace any of those), then what the
 * platform sets: AIDC_JOB_ID, AIDC_TENANT, AIDC_PROJECT, AIDC_USER,
 * AIDC_GPU_INDEXES (the machine's GPU indexes it holds), and
 * CUDA_VISIBLE_DEVICES / NVIDIA_VISIBLE_DEVICES (0..n-1 in a sandbox, where
 * only its GPUs exist; the machine's indexes unconfined), and p->platform's.
 */
char **jobenv_build(const json_t *spec, const json_t *image_env, const struct jobenv_paths *p);
/* The argument vector: spec's command, or the shell running script_path (malloc'd). */
char **jobenv_argv(const json_t *spec, const char *script_path);
void jobenv_free(char **v);

/* The user name the job runs as (spec's user, else "job"), into out. */
void jobenv_user(const json_t *spec, char *out, size_t outsz);

/*
 * A sealed memory file holding base (may be NULL) and then line: the
 * sandbox's /etc/passwd and /etc/group. -1 on failure.
 */
int jobenv_memfd(const char *name, const char *base, size_t baselen, const char *line);

#endif
