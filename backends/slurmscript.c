/* slurmscript.c - the batch script of a Slurm run (see slurmscript.h). */
#include "slurmscript.h"

#include "../lib/imgref.h"
#include "../lib/sbuf.h"
#include "../lib/xalloc.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* 'it'\''s': one word for the shell, whatever it holds */
static void sh_quote(struct sbuf *b, const char *s)
{
    sbuf_putc(b, '\'');
    for (const char *p = s; *p; p++) {
        if (*p == '\'')
            sbuf_puts(b, "'\\''");
        else
            sbuf_putc(b, *p);
    }
    sbuf_putc(b, '\'');
}

/* host/repository:tag as enroot wants it: host#repository:tag (malloc'd). */
static char *enroot_ref(const char *tagged)
{
    struct imgref r;
    char err[128];
    if (!imgref_parse(tagged, &r, err, sizeof err) || !r.host[0])
        return xstrdup(tagged);
    return xasprintf("%s#%s:%s", r.host, r.repository, r.tag);
}

static void end_line(struct sbuf *b)
{
    const char *s = sbuf_str(b);
    if (s[0] && s[strlen(s) - 1] != '\n')
        sbuf_putc(b, '\n');
}

/*
 * A session's first lines (bash): a port, exported and reported. python3
 * binds port 0 (the kernel's choice, free now); where there is none, bash
 * tries random ports nobody answers on loopback. Another process may take
 * the port before the app binds it: the app then fails to start, visibly.
 * Without the report the session could never be reached: the job fails.
 * The restart count tells aidcd a report of this start from one a
 * requeued job left in its comment.
 */
static void session_prelude(struct sbuf *b, const char *comment)
{
    sbuf_puts(b, "# aidc: an interactive session: a free port on this node, exported as PORT\n"
                 "# and told to aidc through the job's comment (backends/slurmscript.h)\n"
                 "aidc_port=$(/usr/bin/python3 -c 'import socket; s = socket.socket(); "
                 "s.bind((\"\", 0)); print(s.getsockname()[1])' 2>/dev/null)\n"
                 "for aidc_try in 1 2 3 4 5 6 7 8 9 10; do\n"
                 "    [ -n \"$aidc_port\" ] && break\n"
                 "    aidc_p=$((20000 + RANDOM % 40000))\n"
                 "    (exec 3<>\"/dev/tcp/127.0.0.1/$aidc_p\") 2>/dev/null || aidc_port=$aidc_p\n"
                 "done\n"
                 "if [ -z \"$aidc_port\" ]; then\n"
                 "    echo 'aidc: found no free port for the session' >&2\n"
                 "    exit 1\n"
                 "fi\n"
                 "export PORT=$aidc_port\n"
                 "if ! scontrol update JobId=\"$SLURM_JOB_ID\" Comment=");
    sh_quote(b, comment);
    sbuf_puts(b, "\" " SLURMSCRIPT_PORT_TAG "$PORT:${SLURM_RESTART_COUNT:-0}\"; then\n"
                 "    echo 'aidc: could not report the session port (scontrol update)' >&2\n"
                 "    exit 1\n"
                 "fi\n");
}

static bool has_line(const char *text, const char *line)
{
    size_t n = strlen(line);
    for (const char *p = text; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
        if (strncmp(p, line, n) == 0 && (p[n] == '\n' || p[n] == '\0'))
            return true;
    return false;
}

/*
 * A session's script with a #! line of its own, after the prelude: its
 * interpreter may be any, so it goes into a file of its own (a heredoc whose
 * end word no line of it is: written as it is, nothing expanded), run as a
 * child and removed after.
 */
static void script_file(struct sbuf *b, const char *script)
{
    char end[40];
    for (unsigned n = 0;; n++) {
        snprintf(end, sizeof end, "AIDC_SCRIPT_END_%u", n);
        if (!has_line(script, end))
            break;
    }
    sbuf_printf(b,
                "aidc_script=$(mktemp) || exit 1\n" /* in $TMPDIR, else /tmp */
                "cat > \"$aidc_script\" <<'%s'\n",
                end);
    sbuf_puts(b, script);
    end_line(b);
    /* removed however the job ends: a stop's SIGTERM reaches the script and its child
     * alike, and bash runs the trap once the child is gone */
    sbuf_printf(b,
                "%s\nchmod 700 \"$aidc_script\"\ntrap 'rm -f \"$aidc_script\"' EXIT\n"
                "trap 'exit 143' TERM\n\"$aidc_script\"\nexit $?\n",
                end);
}

/* A task of a job array sees its index as AIDC_ARRAY_INDEX too (Slurm sets
 * SLURM_ARRAY_TASK_ID; an interpreter of the job's own #! line runs as a child). */
static void array_prelude(struct sbuf *b, const struct backend_job *job)
{
    if (job->array_count > 0)
        sbuf_puts(b, "export AIDC_ARRAY_INDEX=\"$SLURM_ARRAY_TASK_ID\"\n");
}

char *slurmscript_build(const struct backend_job *job, const char *container, const char *comment,
                        char *err, size_t errsz)
{
    struct sbuf b = SBUF_INIT;
    bool wrap = job->image && strcmp(container, "none") != 0;
    if (job->image && !wrap) {
        snprintf(err, errsz,
                 "this Slurm cluster runs no containers (options.container is none),"
                 " but the job names image %s",
                 job->image);
        return NULL;
    }
    bool own_shebang = job->script && strncmp(job->script, "#!", 2) == 0;
    bool child = own_shebang && (job->app || job->array_count > 0);
    if (!wrap && job->script && !child) {
        if (!own_shebang)
            sbuf_puts(&b, "#!/bin/bash\n");
        if (!own_shebang)
            array_prelude(&b, job);
        if (job->app)
            session_prelude(&b, comment);
        sbuf_puts(&b, job->script);
        end_line(&b);
        return sbuf_steal(&b);
    }
    sbuf_puts(&b, "#!/bin/bash\n");
    array_prelude(&b, job);
    if (job->app)
        session_prelude(&b, comment);
    if (!wrap && job->script) {
        script_file(&b, job->script);
        return sbuf_steal(&b);
    }
    if (wrap && strcmp(container, "apptainer") == 0) {
        sbuf_puts(&b, "exec apptainer exec --nv ");
        char *ref = xasprintf("docker://%s", job->image);
        sh_quote(&b, ref);
        free(ref);
    } else if (wrap) { /* pyxis: the container is a property of the job step */
        sbuf_puts(&b, "exec srun --container-image=");
        /* enroot names images [REGISTRY#]IMAGE[:TAG] and cannot pull by digest */
        char *ref = job->image_tagged ? enroot_ref(job->image_tagged) : xstrdup(job->image);
        sh_quote(&b, ref);
        free(ref);
    } else {
        sbuf_puts(&b, "exec");
    }
    if (job->script) { /* a script inside a container: hand it to bash */
        sbuf_puts(&b, " /bin/bash -c ");
        sh_quote(&b, job->script);
    }
    size_t i;
    json_t *arg;
    json_array_foreach((json_t *)job->command, i, arg)
    {
        sbuf_puts(&b, " ");
        sh_quote(&b, json_string_value(arg) ? json_string_value(arg) : "");
    }
    sbuf_puts(&b, "\n");
    return sbuf_steal(&b);
}
