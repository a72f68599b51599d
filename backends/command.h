/*
 * command.h - running a program an operator configured (the Slurm drain and
 * resume commands): the argument vector is executed as it is, never through
 * a shell, so no value in it (a node name, a reason an alert wrote) can
 * become a command; with a clean environment (a fixed PATH and C locale:
 * nothing of aidcd's own, which holds database URLs), none of aidcd's file
 * descriptors, stdin from /dev/null, a time limit, and the start of its
 * output kept for the audit trail and error messages.
 */
#ifndef AIDC_COMMAND_H
#define AIDC_COMMAND_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#define COMMAND_MAX_ARGS 32
#define COMMAND_MAX_ARG 1024
#define COMMAND_OUTPUT 2048

struct command_result {
    int exit_status;  /* the program's exit status; -1 when a signal ended it */
    int signal;       /* the signal that ended it, else 0 */
    bool timed_out;   /* killed at the time limit */
    bool cancelled;   /* killed because its cancel descriptor became readable */
    bool watched;     /* killed because its watch said so */
    char output[COMMAND_OUTPUT]; /* the start of stdout and stderr together, NUL-terminated */
};

/*
 * Whether tpl is a command template: a JSON array of 1..COMMAND_MAX_ARGS
 * strings of at most COMMAND_MAX_ARG bytes, the first an absolute path. On
 * a problem, a message naming what into err.
 */
bool command_template_valid(const json_t *tpl, char *err, size_t errsz);
/*
 * The argument vector of template tpl (command_template_valid) with every
 * "{key}" of keys[i] in its strings replaced by values[i] (values are not
 * searched again): NULL-terminated, malloc'd with its strings; free it with
 * command_argv_free. NULL when tpl is not a template.
 */
char **command_expand(const json_t *tpl, const char *const *keys, const char *const *values,
                      size_t n);
void command_argv_free(char **argv);
/* argv as a JSON array of strings (new reference), for the audit trail. */
json_t *command_argv_json(char *const *argv);
/*
 * Run argv[0] (an absolute path) with argv and wait, at most timeout_s
 * seconds (then its process group is killed). 0 when it ran (whatever its
 * exit status: see out), else AIDC_EIO with err (it could not be started).
 */
int command_run(char *const *argv, int timeout_s, struct command_result *out, char *err,
                size_t errsz);
/* A look at a running program every every_ms: ok(arg) false kills it. */
struct command_watch {
    bool (*ok)(void *arg);
    void *arg;
    int every_ms;
};

/*
 * command_run with the environment envp (NULL-terminated "NAME=value"),
 * killed early when cancel_fd (-1: none) becomes readable (out->cancelled)
 * or when watch (NULL: none) says so (out->watched): the local executor's
 * image pull, which a stop request ends and a size bound limits.
 */
int command_run_in(char *const *argv, char *const *envp, int timeout_s, int cancel_fd,
                   const struct command_watch *watch, struct command_result *out, char *err,
                   size_t errsz);

#endif
