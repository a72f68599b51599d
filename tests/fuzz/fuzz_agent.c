/*
 * fuzz_agent.c - what the node agent (deploy/agent/agent_parse.c) reads on
 * a node and from aidcd: audit.log lines (EXECVE, SYSCALL, CWD, PROCTITLE
 * records, hex-encoded fields, interleaved events), /proc/modules, docker
 * events and containerd journal lines, Retry-After values, and the NDJSON
 * spool it batches. Each input is read as all of them, line by line.
 */
#include "fuzz.h"

#include "deploy/agent/agent_parse.h"

#include <time.h>

static void on_exec(const struct agent_exec *e, void *arg)
{
    (void)arg;
    size_t len = 0;
    char *cmd = agent_parse_exec_command(e, &len);
    bool cut;
    char *clean = agent_parse_utf8_clean(cmd, len, 65536, &cut);
    if (strlen(clean) > 65536)
        abort();
    char ts[40];
    (void)agent_parse_ts_format(e->ms, ts, sizeof ts);
    free(clean);
    free(cmd);
}

static void on_module(const struct agent_module *m, bool loaded, void *arg)
{
    (void)loaded;
    (void)arg;
    if (strnlen(m->name, sizeof m->name) == sizeof m->name)
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = fuzz_str(data, size);
    size_t tl = strlen(text);
    time_t now = 1764662400;

    struct agent_audit *a = agent_parse_audit_new();
    char *copy = strdup(text);
    if (!copy)
        abort();
    for (char *line = copy; line;) {
        char *nl = strchr(line, '\n');
        if (nl)
            *nl = '\0';
        agent_parse_audit_feed(a, line, on_exec, NULL);
        char *image = NULL;
        int64_t ms;
        if (agent_parse_docker_event(line, &image, &ms) == 0 && !image)
            abort();
        free(image);
        image = NULL;
        if (agent_parse_journal_pull(line, &image, &ms) == 0 && !image)
            abort();
        free(image);
        (void)agent_parse_retry_after(line, now);
        (void)agent_parse_is_uuid(line);
        line = nl ? nl + 1 : NULL;
    }
    agent_parse_audit_flush(a, on_exec, NULL);
    agent_parse_audit_free(a);
    free(copy);

    struct agent_module *mods = NULL, *none = NULL;
    size_t n = agent_parse_modules(text, &mods);
    agent_parse_modules_diff(none, 0, mods, n, on_module, NULL);
    agent_parse_modules_diff(mods, n, none, 0, on_module, NULL);
    free(mods);

    size_t nrec, off = 0;
    while (off < tl) {
        size_t end = agent_parse_batch_end(text, tl, off, 3, 64, &nrec);
        if (end == off)
            break;
        if (end > tl || end < off || text[end - 1] != '\n' || nrec == 0 || nrec > 3)
            abort();
        off = end;
    }
    bool cut;
    free(agent_parse_utf8_clean((const char *)data, size, 100, &cut));
    free(text);
    return 0;
}
