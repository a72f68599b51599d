/* jobenv.c - a local job's environment, arguments and generated files (see jobenv.h). */
#include "jobenv.h"

#include "../lib/sbuf.h"
#include "../lib/xalloc.h"

#include <ctype.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define DEFAULT_PATH "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

struct env {
    char **v;
    size_t n, cap;
};

/* Set name=value, replacing an earlier value of name. */
static void put(struct env *e, const char *name, size_t nlen, const char *value)
{
    for (size_t i = 0; i < e->n; i++) {
        if (strncmp(e->v[i], name, nlen) == 0 && e->v[i][nlen] == '=') {
            free(e->v[i]);
            e->v[i] = xasprintf("%.*s=%s", (int)nlen, name, value);
            return;
        }
    }
    if (e->n + 2 > e->cap) {
        e->cap = e->cap ? e->cap * 2 : 32;
        e->v = xreallocarray(e->v, e->cap, sizeof *e->v);
    }
    e->v[e->n++] = xasprintf("%.*s=%s", (int)nlen, name, value);
    e->v[e->n] = NULL;
}

static void set(struct env *e, const char *name, const char *value)
{
    put(e, name, strlen(name), value);
}

static bool has(const struct env *e, const char *name)
{
    size_t n = strlen(name);
    for (size_t i = 0; i < e->n; i++)
        if (strncmp(e->v[i], name, n) == 0 && e->v[i][n] == '=')
            return true;
    return false;
}

void jobenv_user(const json_t *spec, char *out, size_t outsz)
{
    const char *u = json_string_value(json_object_get(spec, "user"));
    bool ok = u && u[0] && strlen(u) <= 32 && (isalpha((unsigned char)u[0]) || u[0] == '_');
    for (const char *p = u; ok && *p; p++)
        ok = isalnum((unsigned char)*p) || *p == '.' || *p == '_' || *p == '-';
    snprintf(out, outsz, "%s", ok ? u : "job");
}

char **jobenv_build(const json_t *spec, const json_t *image_env, const struct jobenv_paths *p)
{
    struct env e = {0};
    size_t i;
    json_t *v;
    json_array_foreach(image_env, i, v) {
        const char *kv = json_string_value(v), *eq = kv ? strchr(kv, '=') : NULL;
        if (eq && eq > kv)
            put(&e, kv, (size_t)(eq - kv), eq + 1);
    }
    char user[40];
    jobenv_user(spec, user, sizeof user);
    if (!has(&e, "PATH"))
        set(&e, "PATH", DEFAULT_PATH);
    set(&e, "HOME", p->home);
    set(&e, "TMPDIR", p->tmp);
    if (!has(&e, "LANG"))
        set(&e, "LANG", "C.UTF-8");
    set(&e, "USER", user);
    set(&e, "LOGNAME", user);
    const char *k;
    json_object_foreach((json_t *)json_object_get(spec, "env"), k, v)
        if (json_is_string(v))
            set(&e, k, json_string_value(v));
    set(&e, "AIDC_JOB_ID", json_string_value(json_object_get(spec, "job_id")));
    set(&e, "AIDC_TENANT", json_string_value(json_object_get(spec, "tenant")));
    set(&e, "AIDC_PROJECT", json_string_value(json_object_get(spec, "project")));
    set(&e, "AIDC_USER", json_string_value(json_object_get(spec, "user")));
    struct sbuf host = SBUF_INIT, seen = SBUF_INIT;
    json_array_foreach(json_object_get(spec, "gpu_indexes"), i, v) {
        sbuf_printf(&host, "%s%lld", i ? "," : "", (long long)json_integer_value(v));
        sbuf_printf(&seen, "%s%zu", i ? "," : "", i);
    }
    const char *cuda = p->sandboxed ? sbuf_str(&seen) : sbuf_str(&host);
    set(&e, "AIDC_GPU_INDEXES", sbuf_str(&host));
    set(&e, "CUDA_VISIBLE_DEVICES", cuda);
    set(&e, "NVIDIA_VISIBLE_DEVICES", host.len ? cuda : "none");
    sbuf_free(&host);
    sbuf_free(&seen);
    json_object_foreach((json_t *)p->platform, k, v)
        if (json_is_string(v))
            set(&e, k, json_string_value(v));
    return e.v;
}

char **jobenv_argv(const json_t *spec, const char *script_path)
{
    const json_t *cmd = json_object_get(spec, "command");
    char **argv = xcalloc(JOBENV_MAX_ARGS + 2, sizeof *argv);
    if (json_is_array(cmd)) {
        size_t i;
        json_t *v;
        json_array_foreach(cmd, i, v) {
            if (i >= JOBENV_MAX_ARGS)
                break;
            argv[i] = xstrdup(json_string_value(v) ? json_string_value(v) : "");
        }
    } else {
        argv[0] = xstrdup("/bin/sh");
        argv[1] = xstrdup(script_path);
    }
    return argv;
}

void jobenv_free(char **v)
{
    for (size_t i = 0; v && v[i]; i++)
        free(v[i]);
    free(v);
}

int jobenv_memfd(const char *name, const char *base, size_t baselen, const char *line)
{
    int fd = memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING);
    if (fd < 0)
        return -1;
    struct sbuf b = SBUF_INIT;
    if (base && baselen) {
        sbuf_append(&b, base, baselen);
        if (base[baselen - 1] != '\n')
            sbuf_putc(&b, '\n');
    }
    if (line)
        sbuf_puts(&b, line);
    size_t done = 0;
    while (done < b.len) {
        ssize_t w = write(fd, b.buf + done, b.len - done);
        if (w <= 0)
            break;
        done += (size_t)w;
    }
    bool ok = done == b.len && lseek(fd, 0, SEEK_SET) == 0 &&
              fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL) == 0;
    sbuf_free(&b);
    if (!ok) {
        close(fd);
        return -1;
    }
    return fd;
}
