/*
 * test_agent_parse.c - the node agent's pure parsing (deploy/agent/agent_parse.c):
 * text cleanup and limits, timestamps, what the shipper does with each HTTP
 * answer, Retry-After, batching of NDJSON lines, auditd EXECVE events (hex
 * arguments, long arguments in pieces, interleaved events), the /proc/modules
 * diff, and the image-pull lines of docker and containerd.
 */
#include "deploy/agent/agent_parse.h"
#include "tests/support/suite.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- text ------------------------------------------------------------------------ */

static void expect_clean(const char *in, size_t n, size_t max, const char *want, bool want_cut)
{
    bool cut = !want_cut;
    char *got = agent_parse_utf8_clean(in, n, max, &cut);
    ck_assert_msg(strcmp(got, want) == 0, "clean → \"%s\", want \"%s\"", got, want);
    ck_assert_int_eq(cut, want_cut);
    free(got);
}

START_TEST(test_utf8_clean)
{
    expect_clean("ls -l", 5, 100, "ls -l", false);
    expect_clean("化学 ü", 9, 100, "化学 ü", false);
    expect_clean("a\xff"
                 "b",
                 3, 100, "a\\xffb", false);
    expect_clean("a\0b", 3, 100, "a\\x00b", false);        /* NUL: PostgreSQL text has none */
    expect_clean("\xc0\x80", 2, 100, "\\xc0\\x80", false); /* overlong */
    expect_clean("\xed\xa0\x80", 3, 100, "\\xed\\xa0\\x80", false); /* a UTF-16 surrogate */
    expect_clean("\xe5\x8c", 2, 100, "\\xe5\\x8c", false);          /* cut short */
    expect_clean("\xf4\x90\x80\x80", 4, 100, "\\xf4\\x90\\x80\\x80", false); /* > U+10FFFF */
    expect_clean("\xf0\x9f\x98\x80!", 5, 100, "\xf0\x9f\x98\x80!", false);
    /* cut on a character boundary, never inside one nor inside an escape */
    expect_clean("ab化学", 8, 4, "ab", true);
    expect_clean("ab化学", 8, 5, "ab化", true);
    expect_clean("a\xff", 2, 4, "a", true);
    expect_clean("abcd", 4, 4, "abcd", false);
    expect_clean("", 0, 4, "", false);
}
END_TEST

START_TEST(test_timestamps_ids)
{
    char buf[40];
    ck_assert_int_eq(agent_parse_ts_format(0, buf, sizeof buf), 0);
    ck_assert_str_eq(buf, "1970-01-01T00:00:00.000Z");
    ck_assert_int_eq(agent_parse_ts_format(1796198400123LL, buf, sizeof buf), 0);
    ck_assert_str_eq(buf, "2026-12-02T08:00:00.123Z");
    ck_assert_int_eq(agent_parse_ts_format(1796198400123LL, buf, 24), -1);
    ck_assert_int_eq(agent_parse_ts_format(1796198400123LL, buf, 25), 0);

    ck_assert(agent_parse_is_uuid("0b5ebf7a-1234-4cde-8f00-0123456789ab"));
    ck_assert(agent_parse_is_uuid("0B5EBF7A-1234-4CDE-8F00-0123456789AB"));
    ck_assert(!agent_parse_is_uuid("0b5ebf7a-1234-4cde-8f00-0123456789a"));
    ck_assert(!agent_parse_is_uuid("0b5ebf7a-1234-4cde-8f00-0123456789abc"));
    ck_assert(!agent_parse_is_uuid("0b5ebf7a11234-4cde-8f00-0123456789ab"));
    ck_assert(!agent_parse_is_uuid("zb5ebf7a-1234-4cde-8f00-0123456789ab"));
    ck_assert(!agent_parse_is_uuid(""));

    ck_assert_uint_eq(agent_parse_fnv64(""), 14695981039346656037ULL);
    ck_assert_uint_eq(agent_parse_fnv64("a"), 0xaf63dc4c8601ec8cULL);
    ck_assert_uint_ne(agent_parse_fnv64("node1"), agent_parse_fnv64("node2"));
}
END_TEST

/* ---- shipping ---------------------------------------------------------------------- */

START_TEST(test_verdicts)
{
    ck_assert_int_eq(agent_parse_verdict(202), AGENT_SENT);
    ck_assert_int_eq(agent_parse_verdict(200), AGENT_SENT);
    /* not the batch's fault: keep it and try again */
    static const long retry[] = {0,   100, 301, 302, 401, 403, 404, 405,
                                 408, 425, 429, 500, 501, 502, 503, 504};
    for (size_t i = 0; i < sizeof retry / sizeof retry[0]; i++)
        ck_assert_msg(agent_parse_verdict(retry[i]) == AGENT_RETRY, "%ld", retry[i]);
    /* the batch itself is refused: set it aside, never loop on it */
    static const long reject[] = {400, 409, 413, 415, 422, 451};
    for (size_t i = 0; i < sizeof reject / sizeof reject[0]; i++)
        ck_assert_msg(agent_parse_verdict(reject[i]) == AGENT_REJECT, "%ld", reject[i]);
}
END_TEST

START_TEST(test_retry_after)
{
    time_t now = 1796198400; /* Wed, 02 Dec 2026 08:00:00 GMT */
    ck_assert_int_eq(agent_parse_retry_after(NULL, now), -1);
    ck_assert_int_eq(agent_parse_retry_after("120", now), 120);
    ck_assert_int_eq(agent_parse_retry_after(" 5 \r\n", now), 5);
    ck_assert_int_eq(agent_parse_retry_after("0", now), 0);
    ck_assert_int_eq(agent_parse_retry_after("-1", now), -1);
    ck_assert_int_eq(agent_parse_retry_after("12s", now), -1);
    ck_assert_int_eq(agent_parse_retry_after("soon", now), -1);
    ck_assert_int_eq(agent_parse_retry_after("", now), -1);
    ck_assert_int_eq(agent_parse_retry_after("Wed, 02 Dec 2026 08:01:30 GMT", now), 90);
    ck_assert_int_eq(agent_parse_retry_after("Wed, 02 Dec 2026 07:00:00 GMT", now), 0);
    ck_assert_int_eq(agent_parse_retry_after("Wed, 02 Dec 2026", now), -1);
}
END_TEST

START_TEST(test_batches)
{
    const char *b = "aa\nbbb\ncccc\nd";
    size_t len = strlen(b), n, end;
    end = agent_parse_batch_end(b, len, 0, 100, 100, &n);
    ck_assert_uint_eq(end, 12); /* the unfinished "d" is left */
    ck_assert_uint_eq(n, 3);
    end = agent_parse_batch_end(b, len, 0, 2, 100, &n);
    ck_assert_uint_eq(end, 7);
    ck_assert_uint_eq(n, 2);
    end = agent_parse_batch_end(b, len, 0, 100, 7, &n); /* "aa\nbbb\n" is 7 bytes */
    ck_assert_uint_eq(end, 7);
    ck_assert_uint_eq(n, 2);
    end = agent_parse_batch_end(b, len, 7, 100, 6, &n);
    ck_assert_uint_eq(end, 12);
    ck_assert_uint_eq(n, 1);
    end = agent_parse_batch_end(b, len, 0, 100, 1, &n); /* too long alone: a batch of its own */
    ck_assert_uint_eq(end, 3);
    ck_assert_uint_eq(n, 1);
    end = agent_parse_batch_end(b, len, 12, 100, 100, &n);
    ck_assert_uint_eq(end, 12);
    ck_assert_uint_eq(n, 0);
    end = agent_parse_batch_end(b, len, len, 100, 100, &n);
    ck_assert_uint_eq(n, 0);
}
END_TEST

/* ---- auditd ------------------------------------------------------------------------ */

START_TEST(test_audit_header)
{
    char type[32];
    int64_t ms;
    unsigned long serial;
    const char *body;
    ck_assert_int_eq(agent_parse_audit_header("type=EXECVE msg=audit(1796198400.123:456): argc=1 "
                                              "a0=\"ls\"",
                                              type, sizeof type, &ms, &serial, &body),
                     0);
    ck_assert_str_eq(type, "EXECVE");
    ck_assert_int_eq(ms, 1796198400123LL);
    ck_assert_uint_eq(serial, 456);
    ck_assert_str_eq(body, "argc=1 a0=\"ls\"");
    ck_assert_int_eq(agent_parse_audit_header("node=gpu7 type=CWD msg=audit(1.005:9): cwd=\"/\"",
                                              type, sizeof type, &ms, &serial, &body),
                     0);
    ck_assert_str_eq(type, "CWD");
    ck_assert_int_eq(ms, 1005);
    static const char *const bad[] = {
        "",
        "type=EXECVE",
        "type=EXECVE msg=audit(1796198400:456): x",
        "type=EXECVE msg=audit(1796198400.12:456): x",
        "type=EXECVE msg=audit(1796198400.123:): x",
        "type=EXECVE msg=audit(1796198400.123:45", /* cut */
        "node=gpu7",
        "type=AVERYVERYVERYVERYVERYLONGTYPENAME msg=audit(1.000:1): x",
        "Dec  2 08:00:00 gpu7 kernel: audit: type=1400",
        /* seconds whose milliseconds overflow (fuzz_agent found it) */
        "type=EXECVE msg=audit(179619841796198400.000:1): x",
        "type=EXECVE msg=audit(253402300800.000:1): x",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        ck_assert_msg(agent_parse_audit_header(bad[i], type, sizeof type, &ms, &serial, &body) ==
                          -1,
                      "accepted: %s", bad[i]);
}
END_TEST

START_TEST(test_audit_fields)
{
    const char *body = "argc=4 a0=\"ls\" a1=2D6C61 a2=\"(null)\" a3=(null) a1_len=6 "
                       "cwd=2F746D702F6D7920646972 bad=ABC odd=XY uid=0 auid=4294967295 "
                       "neg=-2 q=\"12\"\x1d"
                       "UID=\"root\" late=\"x\"";
    size_t len;
    char *v = agent_parse_audit_str(body, "a0", &len);
    ck_assert_str_eq(v, "ls");
    free(v);
    v = agent_parse_audit_str(body, "a1", &len); /* not a1_len */
    ck_assert_str_eq(v, "-la");
    ck_assert_uint_eq(len, 3);
    free(v);
    v = agent_parse_audit_str(body, "a2", &len); /* quoted: the text "(null)" itself */
    ck_assert_str_eq(v, "(null)");
    free(v);
    ck_assert_ptr_null(agent_parse_audit_str(body, "a3", &len));
    v = agent_parse_audit_str(body, "cwd", &len);
    ck_assert_str_eq(v, "/tmp/my dir");
    free(v);
    ck_assert_ptr_null(agent_parse_audit_str(body, "bad", &len));  /* odd length */
    ck_assert_ptr_null(agent_parse_audit_str(body, "odd", &len));  /* not hex */
    ck_assert_ptr_null(agent_parse_audit_str(body, "late", &len)); /* after the separator */
    ck_assert_ptr_null(agent_parse_audit_str(body, "a", &len));
    v = agent_parse_audit_str("a0=6C7300", "a0", &len); /* NUL inside: the length says so */
    ck_assert_uint_eq(len, 3);
    free(v);

    long long n = 7;
    ck_assert_int_eq(agent_parse_audit_num(body, "uid", &n), 0);
    ck_assert_int_eq(n, 0);
    ck_assert_int_eq(agent_parse_audit_num(body, "auid", &n), 0);
    ck_assert_int_eq(n, 4294967295LL);
    ck_assert_int_eq(agent_parse_audit_num(body, "neg", &n), 0);
    ck_assert_int_eq(n, -2);
    ck_assert_int_eq(agent_parse_audit_num(body, "q", &n), -1); /* quoted: not a number */
    ck_assert_int_eq(agent_parse_audit_num(body, "a1", &n), -1);
    ck_assert_int_eq(agent_parse_audit_num(body, "ses", &n), -1);
    /* quotes are not escaped in audit records: here a1 is inside a0's value */
    ck_assert_ptr_null(agent_parse_audit_str("a0=\"ls a1=\"x\"", "a1", &len));
}
END_TEST

struct seen {
    int n;
    char cmd[8][256];
    char cwd[8][64];
    long long uid[8], auid[8], ses[8];
    unsigned long serial[8];
    int64_t ms[8];
};

static void on_exec(const struct agent_exec *e, void *arg)
{
    struct seen *s = arg;
    ck_assert_int_lt(s->n, 8);
    size_t len;
    char *cmd = agent_parse_exec_command(e, &len);
    ck_assert_uint_eq(strlen(cmd), len);
    snprintf(s->cmd[s->n], sizeof s->cmd[0], "%s", cmd);
    snprintf(s->cwd[s->n], sizeof s->cwd[0], "%s", e->cwd ? e->cwd : "-");
    s->uid[s->n] = e->uid;
    s->auid[s->n] = e->auid;
    s->ses[s->n] = e->ses;
    s->serial[s->n] = e->serial;
    s->ms[s->n] = e->ms;
    s->n++;
    free(cmd);
}

static void feed(struct agent_audit *a, struct seen *s, const char *lines)
{
    char *copy = strdup(lines);
    for (char *save = NULL, *l = strtok_r(copy, "\n", &save); l; l = strtok_r(NULL, "\n", &save))
        agent_parse_audit_feed(a, l, on_exec, s);
    free(copy);
}

START_TEST(test_audit_events)
{
    struct agent_audit *a = agent_parse_audit_new();
    struct seen s = {0};
    /* two events interleaved; the second's long argument in pieces over two
     * EXECVE records; an event with no EXECVE (a plain open) is dropped */
    feed(a, &s,
         "type=SYSCALL msg=audit(1796198400.100:10): arch=c000003e syscall=59 success=yes exit=0 "
         "ppid=1 pid=2 auid=1000 uid=0 gid=0 euid=0 ses=3 comm=\"sudo\" exe=\"/usr/bin/sudo\"\n"
         "type=SYSCALL msg=audit(1796198400.200:11): syscall=59 auid=1001 uid=1001 ses=4\n"
         "type=EXECVE msg=audit(1796198400.100:10): argc=3 a0=\"sudo\" a1=\"nvidia-smi\" "
         "a2=\"-L\"\n"
         "type=SYSCALL msg=audit(1796198400.250:12): syscall=2 auid=1001 uid=1001 ses=4\n"
         "type=EXECVE msg=audit(1796198400.200:11): argc=3 a0=\"python\" a1_len=10 "
         "a1[0]=2D6320277072696E\n"
         "type=CWD msg=audit(1796198400.100:10): cwd=\"/home/ann\"\n"
         "type=PROCTITLE msg=audit(1796198400.250:12): proctitle=6C73\n"
         "type=EXECVE msg=audit(1796198400.200:11): a1[1]=7427 a2=\"it's\"\n"
         "type=PATH msg=audit(1796198400.100:10): item=0 name=\"/usr/bin/sudo\"\n"
         "type=PROCTITLE msg=audit(1796198400.100:10): proctitle=7375646F\n"
         "type=CWD msg=audit(1796198400.200:11): cwd=2F746D702F6120622063\n"
         "type=EOE msg=audit(1796198400.200:11): \n");
    ck_assert_int_eq(s.n, 2);
    ck_assert_str_eq(s.cmd[0], "sudo nvidia-smi -L");
    ck_assert_str_eq(s.cwd[0], "/home/ann");
    ck_assert_int_eq(s.uid[0], 0);
    ck_assert_int_eq(s.auid[0], 1000);
    ck_assert_int_eq(s.ses[0], 3);
    ck_assert_uint_eq(s.serial[0], 10);
    ck_assert_int_eq(s.ms[0], 1796198400100LL);
    ck_assert_str_eq(s.cmd[1], "python '-c '\\''print'\\''' 'it'\\''s'");
    ck_assert_str_eq(s.cwd[1], "/tmp/a b c");
    ck_assert_int_eq(s.auid[1], 1001);
    ck_assert_uint_eq(agent_parse_audit_pending(a), 0);

    /* no PROCTITLE or EOE: emitted at the flush, with what was seen */
    feed(a, &s,
         "type=EXECVE msg=audit(1796198401.000:20): argc=3 a0=\"cat\" a2=\"x\"\n"
         "type=DAEMON_START msg=audit(1796198401.000:21): op=start\n"
         "not an audit line at all\n");
    ck_assert_int_eq(s.n, 2);
    ck_assert_uint_eq(agent_parse_audit_pending(a), 1);
    agent_parse_audit_flush(a, on_exec, &s);
    ck_assert_int_eq(s.n, 3);
    ck_assert_str_eq(s.cmd[2], "cat ? x"); /* an argument never seen */
    ck_assert_int_eq(s.uid[2], -1);        /* no SYSCALL record */
    ck_assert_str_eq(s.cwd[2], "-");
    ck_assert_uint_eq(agent_parse_audit_pending(a), 0);
    agent_parse_audit_free(a);
}
END_TEST

START_TEST(test_audit_pending_is_bounded)
{
    struct agent_audit *a = agent_parse_audit_new();
    struct seen s = {0};
    /* events that never complete: the oldest goes out when 16 wait */
    for (int i = 0; i < 18; i++) {
        char line[128];
        snprintf(line, sizeof line, "type=EXECVE msg=audit(1796198402.000:%d): argc=1 a0=\"c%d\"",
                 100 + i, i);
        agent_parse_audit_feed(a, line, on_exec, &s);
    }
    ck_assert_int_eq(s.n, 2);
    ck_assert_str_eq(s.cmd[0], "c0");
    ck_assert_str_eq(s.cmd[1], "c1");
    ck_assert_uint_eq(agent_parse_audit_pending(a), 16);
    agent_parse_audit_free(a); /* frees what is pending */

    /* a huge argc is capped, not allocated */
    a = agent_parse_audit_new();
    s.n = 0;
    agent_parse_audit_feed(a, "type=EXECVE msg=audit(1.000:1): argc=99999999 a0=\"x\"", on_exec,
                           &s);
    agent_parse_audit_flush(a, on_exec, &s);
    ck_assert_int_eq(s.n, 1);
    ck_assert_uint_eq(strncmp(s.cmd[0], "x ? ? ?", 7), 0);
    agent_parse_audit_free(a);
}
END_TEST

START_TEST(test_exec_command_quoting)
{
    char *args[] = {"echo", "", "a b", "$HOME", "plain-1.2/x:y=z@w%+,", "it's", NULL};
    size_t lens[] = {4, 0, 3, 5, 20, 4};
    struct agent_exec e = {.argv = args, .arglen = lens, .argc = 6};
    size_t len;
    char *cmd = agent_parse_exec_command(&e, &len);
    ck_assert_str_eq(cmd, "echo '' 'a b' '$HOME' plain-1.2/x:y=z@w%+, 'it'\\''s'");
    free(cmd);
    e.argc = 0;
    cmd = agent_parse_exec_command(&e, &len);
    ck_assert_str_eq(cmd, "");
    ck_assert_uint_eq(len, 0);
    free(cmd);
}
END_TEST

/* ---- /proc/modules ---------------------------------------------------------------- */

struct changes {
    char text[512];
};

static void on_module(const struct agent_module *m, bool loaded, void *arg)
{
    struct changes *c = arg;
    size_t used = strlen(c->text);
    snprintf(c->text + used, sizeof c->text - used, "%s%s:%lu:%s ", loaded ? "+" : "-", m->name,
             m->size, m->taint);
}

START_TEST(test_modules)
{
    struct agent_module *old = NULL, *cur = NULL;
    size_t nold = agent_parse_modules("nvme 49152 2 - Live 0xffffffffc0a00000\n"
                                      "nvidia 56823808 1 nvidia_modeset, Live 0x0 (POE)\n"
                                      "garbage\n"
                                      "\n"
                                      "bad notasize 0 - Live 0x0\n"
                                      "ext4 1003520 1 - Live 0x0",
                                      &old);
    ck_assert_uint_eq(nold, 3);
    ck_assert_str_eq(old[0].name, "ext4"); /* sorted by name */
    ck_assert_str_eq(old[1].name, "nvidia");
    ck_assert_str_eq(old[1].taint, "POE");
    ck_assert_uint_eq(old[1].size, 56823808);
    ck_assert_str_eq(old[2].name, "nvme");
    ck_assert_str_eq(old[2].taint, "");

    size_t ncur =
        agent_parse_modules("nvidia_uvm 1437696 0 - Loading 0x0 (POE)\n"
                            "nvidia 56823808 2 nvidia_uvm,nvidia_modeset, Live 0x0 (POE)\n"
                            "ext4 1003520 1 - Live 0x0\n",
                            &cur);
    ck_assert_uint_eq(ncur, 3);
    struct changes c = {""};
    agent_parse_modules_diff(old, nold, cur, ncur, on_module, &c);
    ck_assert_str_eq(c.text, "+nvidia_uvm:1437696:POE -nvme:49152: ");
    c.text[0] = '\0';
    agent_parse_modules_diff(NULL, 0, cur, ncur, on_module, &c);
    ck_assert_str_eq(c.text, "+ext4:1003520: +nvidia:56823808:POE +nvidia_uvm:1437696:POE ");
    c.text[0] = '\0';
    agent_parse_modules_diff(cur, ncur, cur, ncur, on_module, &c);
    ck_assert_str_eq(c.text, "");
    free(old);
    free(cur);
    ck_assert_uint_eq(agent_parse_modules("", &old), 0);
    free(old);
}
END_TEST

/* ---- image pulls ------------------------------------------------------------------- */

START_TEST(test_docker_events)
{
    char *image = NULL;
    int64_t ms = 0;
    ck_assert_int_eq(
        agent_parse_docker_event(
            "{\"status\":\"pull\",\"id\":\"nvcr.io/nvidia/pytorch:24.01-py3\",\"Type\":\"image\","
            "\"Action\":\"pull\",\"Actor\":{\"ID\":\"nvcr.io/nvidia/pytorch:24.01-py3\","
            "\"Attributes\":{\"name\":\"nvcr.io/nvidia/pytorch\"}},\"scope\":\"local\","
            "\"time\":1796198400,\"timeNano\":1796198400123456789}",
            &image, &ms),
        0);
    ck_assert_str_eq(image, "nvcr.io/nvidia/pytorch:24.01-py3");
    ck_assert_int_eq(ms, 1796198400123LL);
    free(image);
    /* older docker: status and id only, seconds */
    ck_assert_int_eq(agent_parse_docker_event("{\"status\":\"pull\",\"id\":\"ubuntu:22.04\","
                                              "\"Type\":\"image\",\"time\":1796198400}",
                                              &image, &ms),
                     0);
    ck_assert_str_eq(image, "ubuntu:22.04");
    ck_assert_int_eq(ms, 1796198400000LL);
    free(image);
    static const char *const not_pulls[] = {
        "{\"Type\":\"container\",\"Action\":\"start\",\"Actor\":{\"ID\":\"c1\"},\"time\":1}",
        "{\"Type\":\"image\",\"Action\":\"delete\",\"Actor\":{\"ID\":\"sha256:1\"},\"time\":1}",
        "{\"Type\":\"image\",\"Action\":\"pull\",\"Actor\":{\"ID\":\"x\"}}", /* no time */
        "{\"Type\":\"image\",\"Action\":\"pull\",\"Actor\":{\"ID\":\"\"},\"time\":1}",
        /* seconds out of range (fuzz/agent: * 1000 overflowed) */
        "{\"Type\":\"image\",\"Action\":\"pull\",\"Actor\":{\"ID\":\"x\"},"
        "\"time\":1796198400123456789}",
        "{\"Type\":\"image\",\"Action\":\"pull\",\"Actor\":{\"ID\":\"x\"},\"time\":-1}",
        "[1,2]",
        "not json",
        "",
    };
    for (size_t i = 0; i < sizeof not_pulls / sizeof not_pulls[0]; i++) {
        image = NULL;
        ck_assert_msg(agent_parse_docker_event(not_pulls[i], &image, &ms) == -1, "took %s",
                      not_pulls[i]);
        ck_assert_ptr_null(image);
    }
}
END_TEST

START_TEST(test_journal_pulls)
{
    char *image = NULL;
    int64_t ms = 0;
    ck_assert_int_eq(
        agent_parse_journal_pull(
            "{\"__REALTIME_TIMESTAMP\":\"1796198400123456\",\"_SYSTEMD_UNIT\":\"containerd."
            "service\","
            "\"MESSAGE\":\"time=\\\"2026-12-02T08:00:00.123456789Z\\\" level=info "
            "msg=\\\"PullImage \\\\\\\"docker.io/library/nginx:latest\\\\\\\" returns image "
            "reference \\\\\\\"sha256:abc\\\\\\\"\\\"\"}",
            &image, &ms),
        0);
    ck_assert_str_eq(image, "docker.io/library/nginx:latest");
    ck_assert_int_eq(ms, 1796198400123LL);
    free(image);
    /* containerd's plain text form, without logfmt escaping */
    ck_assert_int_eq(agent_parse_journal_pull(
                         "{\"__REALTIME_TIMESTAMP\":\"1796198400000000\",\"MESSAGE\":\"PullImage "
                         "\\\"busybox:1\\\" returns image reference \\\"sha256:1\\\"\"}",
                         &image, &ms),
                     0);
    ck_assert_str_eq(image, "busybox:1");
    free(image);
    static const char *const not_pulls[] = {
        /* the start of a pull, not its end */
        "{\"__REALTIME_TIMESTAMP\":\"1\",\"MESSAGE\":\"PullImage \\\"x:1\\\"\"}",
        "{\"__REALTIME_TIMESTAMP\":\"1\",\"MESSAGE\":\"starting containerd\"}",
        /* a MESSAGE that is not UTF-8 comes as an array of bytes */
        "{\"__REALTIME_TIMESTAMP\":\"1\",\"MESSAGE\":[80,117]}",
        "{\"MESSAGE\":\"PullImage \\\"x:1\\\" returns image reference \\\"sha256:1\\\"\"}",
        "{\"__REALTIME_TIMESTAMP\":\"x\",\"MESSAGE\":\"PullImage \\\"x:1\\\" returns image "
        "reference \\\"sha256:1\\\"\"}",
        "{\"__REALTIME_TIMESTAMP\":\"1\",\"MESSAGE\":\"PullImage \\\"\\\" returns image "
        "reference\"}",
        "garbage",
    };
    for (size_t i = 0; i < sizeof not_pulls / sizeof not_pulls[0]; i++) {
        image = NULL;
        ck_assert_msg(agent_parse_journal_pull(not_pulls[i], &image, &ms) == -1, "took %s",
                      not_pulls[i]);
        ck_assert_ptr_null(image);
    }
}
END_TEST

static Suite *agent_parse_suite(void)
{
    Suite *s = suite_create("agent_parse");
    TCase *tc = tcase_create("text");
    tcase_add_test(tc, test_utf8_clean);
    tcase_add_test(tc, test_timestamps_ids);
    suite_add_tcase(s, tc);
    tc = tcase_create("shipping");
    tcase_add_test(tc, test_verdicts);
    tcase_add_test(tc, test_retry_after);
    tcase_add_test(tc, test_batches);
    suite_add_tcase(s, tc);
    tc = tcase_create("auditd");
    tcase_add_test(tc, test_audit_header);
    tcase_add_test(tc, test_audit_fields);
    tcase_add_test(tc, test_audit_events);
    tcase_add_test(tc, test_audit_pending_is_bounded);
    tcase_add_test(tc, test_exec_command_quoting);
    suite_add_tcase(s, tc);
    tc = tcase_create("modules_images");
    tcase_add_test(tc, test_modules);
    tcase_add_test(tc, test_docker_events);
    tcase_add_test(tc, test_journal_pulls);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return suite_run(agent_parse_suite());
}
