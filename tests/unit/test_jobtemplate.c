/*
 * test_jobtemplate.c - the renderer of job templates (lib/jobtemplate.c):
 * shell quoting that keeps any value one word (checked by a real /bin/sh),
 * placeholders only of declared names and only of the exact form, values
 * never scanned again, typed values and bounds, defaults, and the rendered
 * size limit.
 */
#include "lib/jobtemplate.h"

#include "tests/support/suite.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static json_t *obj(const char *text)
{
    json_error_t err;
    json_t *j = json_loads(text, 0, &err);
    ck_assert_msg(j != NULL, "%s: %s", text, err.text);
    return j;
}

static char *sub(const char *s, const char *values, bool shell)
{
    json_t *v = obj(values);
    size_t budget = JOBTEMPLATE_MAX_RENDERED;
    char *r = jobtemplate_substitute(s, v, shell, &budget);
    json_decref(v);
    ck_assert_ptr_nonnull(r);
    return r;
}

/* What /bin/sh prints for `printf '[%s]\n' <word>`: proof the word stayed one. */
static char *sh_words(const char *quoted)
{
    char cmd[8192];
    snprintf(cmd, sizeof cmd, "printf '[%%s]\\n' %s", quoted);
    int fd[2];
    ck_assert_int_eq(pipe(fd), 0);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        dup2(fd[1], 1);
        close(fd[0]);
        execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
        _exit(127);
    }
    close(fd[1]);
    static char out[8192];
    size_t n = 0;
    ssize_t k;
    while (n + 1 < sizeof out && (k = read(fd[0], out + n, sizeof out - 1 - n)) > 0)
        n += (size_t)k;
    out[n] = '\0';
    close(fd[0]);
    int st;
    waitpid(pid, &st, 0);
    return out;
}

START_TEST(shell_quoting_keeps_every_value_one_word)
{
    static const char *const values[] = {
        "x; rm -rf /", "it's", "$(id)", "`id`", "a b\tc\nd", "'",
        "''",          "",     "\\",    "*",    "$HOME",     "--flag=1 --other",
        "{{v}}",
    };
    for (size_t i = 0; i < sizeof values / sizeof values[0]; i++) {
        char *q = jobtemplate_shell_quote(values[i]);
        char want[256];
        snprintf(want, sizeof want, "[%s]\n", values[i]);
        ck_assert_msg(strcmp(sh_words(q), want) == 0, "%s -> %s -> %s", values[i], q, sh_words(q));
        free(q);
    }
    char *q = jobtemplate_shell_quote("x; rm -rf /");
    ck_assert_str_eq(q, "'x; rm -rf /'");
    free(q);
    q = jobtemplate_shell_quote("it's");
    ck_assert_str_eq(q, "'it'\\''s'");
    free(q);
}
END_TEST

START_TEST(placeholders_are_exact_and_values_are_not_scanned_again)
{
    char *r = sub("a {{x}} b {{ x }} {{.Names}} {x} {{X}} {{x}", "{\"x\":\"1\"}", false);
    ck_assert_str_eq(r, "a 1 b {{ x }} {{.Names}} {x} {{X}} {{x}");
    free(r);
    /* a value holding a placeholder stays that text */
    r = sub("{{a}}/{{b}}", "{\"a\":\"{{b}}\",\"b\":\"B\"}", false);
    ck_assert_str_eq(r, "{{b}}/B");
    free(r);
    /* typed values as text; shell-quoted in a script */
    r = sub("{{i}} {{n}} {{t}} {{f}}", "{\"i\":42,\"n\":0.25,\"t\":true,\"f\":false}", false);
    ck_assert_str_eq(r, "42 0.25 true false");
    free(r);
    r = sub("run {{s}} {{i}}", "{\"s\":\"x; rm -rf /\",\"i\":3}", true);
    ck_assert_str_eq(r, "run 'x; rm -rf /' '3'");
    free(r);
    /* a name without a value (an optional parameter left out) renders empty */
    r = sub("[{{gone}}]", "{}", true);
    ck_assert_str_eq(r, "['']");
    free(r);
}
END_TEST

static void collect(void *arg, const char *name)
{
    json_array_append_new(arg, json_string(name));
}

START_TEST(placeholders_are_listed_for_the_check_of_a_template)
{
    json_t *names = json_array();
    jobtemplate_placeholders("{{a}} {{b_2}} {{ c }} {{a}} {{9x}} {{", collect, names);
    ck_assert_int_eq(json_array_size(names), 3);
    ck_assert_str_eq(json_string_value(json_array_get(names, 0)), "a");
    ck_assert_str_eq(json_string_value(json_array_get(names, 1)), "b_2");
    json_decref(names);
    ck_assert(jobtemplate_param_name_valid("gpus_per_node"));
    ck_assert(!jobtemplate_param_name_valid("9x"));
    ck_assert(!jobtemplate_param_name_valid("A"));
    ck_assert(!jobtemplate_param_name_valid(""));
}
END_TEST

struct reports {
    char text[512];
};

static void report(void *arg, const char *name, enum jobtemplate_bad bad, const json_t *decl)
{
    struct reports *r = arg;
    (void)decl;
    snprintf(r->text + strlen(r->text), sizeof r->text - strlen(r->text), "%s:%d ", name, (int)bad);
}

static const char decls[] =
    "[{\"name\":\"s\",\"type\":\"string\",\"pattern\":\"[a-z]+\"},"
    "{\"name\":\"i\",\"type\":\"integer\",\"min\":1,\"max\":8,\"default\":2},"
    "{\"name\":\"n\",\"type\":\"number\",\"max\":1.5},"
    "{\"name\":\"b\",\"type\":\"boolean\",\"default\":true},"
    "{\"name\":\"c\",\"type\":\"choice\",\"choices\":[\"x\",\"y\"],\"required\":true}]";

static const char *check(const char *given)
{
    static struct reports r;
    memset(&r, 0, sizeof r);
    json_t *d = obj(decls), *g = obj(given);
    json_t *v = jobtemplate_values(d, g, report, &r);
    if (v) {
        char *dump = json_dumps(v, JSON_COMPACT | JSON_SORT_KEYS);
        snprintf(r.text, sizeof r.text, "ok %s", dump);
        free(dump);
        json_decref(v);
    }
    json_decref(d);
    json_decref(g);
    return r.text;
}

START_TEST(values_are_checked_against_their_declarations)
{
    ck_assert_str_eq(check("{\"c\":\"x\"}"), "ok {\"b\":true,\"c\":\"x\",\"i\":2}");
    ck_assert_str_eq(check("{\"c\":\"y\",\"s\":\"abc\",\"n\":1,\"i\":8}"),
                     "ok {\"b\":true,\"c\":\"y\",\"i\":8,\"n\":1,\"s\":\"abc\"}");
    ck_assert_str_eq(check("{}"), "c:2 ");                          /* required */
    ck_assert_str_eq(check("{\"c\":\"x\",\"zz\":1}"), "zz:1 ");     /* unknown */
    ck_assert_str_eq(check("{\"c\":\"z\"}"), "c:8 ");               /* not a choice */
    ck_assert_str_eq(check("{\"c\":\"x\",\"s\":\"ab1\"}"), "s:7 "); /* the whole value matches */
    ck_assert_str_eq(check("{\"c\":\"x\",\"i\":0}"), "i:4 ");
    ck_assert_str_eq(check("{\"c\":\"x\",\"i\":9}"), "i:5 ");
    ck_assert_str_eq(check("{\"c\":\"x\",\"i\":1.0}"), "i:3 "); /* a real is no integer */
    ck_assert_str_eq(check("{\"c\":\"x\",\"n\":2}"), "n:5 ");
    ck_assert_str_eq(check("{\"c\":\"x\",\"b\":\"true\"}"), "b:3 ");
    ck_assert_str_eq(check("{\"c\":1,\"s\":2}"), "s:3 c:3 "); /* all reported at once */
    ck_assert(jobtemplate_pattern_valid("[a-z]+"));
    ck_assert(!jobtemplate_pattern_valid("("));
    /* back-references could take exponential time on a 4 KiB value: refused */
    ck_assert(!jobtemplate_pattern_valid("(a*)*\\1"));
    ck_assert(jobtemplate_pattern_valid("a\\.b"));  /* an escaped character is fine */
    ck_assert(jobtemplate_pattern_valid("a\\\\1")); /* a backslash, then 1 */
}
END_TEST

START_TEST(render_flattens_resources_and_bounds_the_size)
{
    json_t *tpl = obj("{\"name\":\"t\",\"image\":\"img:{{tag}}\",\"script\":\"echo {{tag}}\","
                      "\"env\":{\"A\":\"{{tag}}\"},\"mounts\":[{\"space\":\"project\"}],"
                      "\"resources\":{\"gpus\":\"{{g}}\",\"gpu_type\":\"{{gt}}\",\"cpus\":4}}");
    json_t *values = obj("{\"tag\":\"v1 x\",\"g\":2}");
    bool too_large;
    json_t *job = jobtemplate_render(tpl, values, &too_large);
    ck_assert_ptr_nonnull(job);
    char *dump = json_dumps(job, JSON_COMPACT | JSON_SORT_KEYS);
    ck_assert_str_eq(dump, "{\"cpus\":4,\"env\":{\"A\":\"v1 x\"},\"gpus\":2,\"image\":\"img:v1 x\","
                           "\"mounts\":[{\"space\":\"project\"}],\"name\":\"t\","
                           "\"script\":\"echo 'v1 x'\"}");
    free(dump);
    json_decref(job);
    json_decref(values);
    /* a long value many times over passes the rendered limit */
    char *big = malloc(JOBTEMPLATE_MAX_VALUE + 1);
    memset(big, 'a', JOBTEMPLATE_MAX_VALUE);
    big[JOBTEMPLATE_MAX_VALUE] = '\0';
    values = json_pack("{s:s}", "tag", big);
    json_object_set_new(tpl, "script",
                        json_string("{{tag}}{{tag}}{{tag}}{{tag}}{{tag}}{{tag}}{{tag}}{{tag}}"));
    json_object_set_new(
        tpl, "command",
        json_pack("[s,s,s,s,s,s,s,s,s,s,s,s,s,s,s,s,s,s,s,s]", "{{tag}}{{tag}}{{tag}}",
                  "{{tag}}{{tag}}{{tag}}", "{{tag}}{{tag}}{{tag}}", "{{tag}}{{tag}}{{tag}}",
                  "{{tag}}{{tag}}{{tag}}", "{{tag}}{{tag}}{{tag}}", "{{tag}}{{tag}}{{tag}}",
                  "{{tag}}{{tag}}{{tag}}", "{{tag}}{{tag}}{{tag}}", "{{tag}}{{tag}}{{tag}}",
                  "{{tag}}{{tag}}{{tag}}", "{{tag}}{{tag}}{{tag}}", "{{tag}}{{tag}}{{tag}}",
                  "{{tag}}{{tag}}{{tag}}", "{{tag}}{{tag}}{{tag}}", "{{tag}}{{tag}}{{tag}}",
                  "{{tag}}{{tag}}{{tag}}", "{{tag}}{{tag}}{{tag}}", "{{tag}}{{tag}}{{tag}}",
                  "{{tag}}{{tag}}{{tag}}"));
    job = jobtemplate_render(tpl, values, &too_large);
    ck_assert_ptr_null(job);
    ck_assert(too_large);
    free(big);
    json_decref(values);
    json_decref(tpl);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("jobtemplate");
    TCase *tc = tcase_create("render");
    tcase_add_test(tc, shell_quoting_keeps_every_value_one_word);
    tcase_add_test(tc, placeholders_are_exact_and_values_are_not_scanned_again);
    tcase_add_test(tc, placeholders_are_listed_for_the_check_of_a_template);
    tcase_add_test(tc, values_are_checked_against_their_declarations);
    tcase_add_test(tc, render_flattens_resources_and_bounds_the_size);
    suite_add_tcase(s, tc);
    return suite_run(s);
}
