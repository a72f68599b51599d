/*
 * test_jobenv.c - backends/jobenv.h: a local job's environment, argument
 * vector and generated files. The image's variables come first, the job's
 * own replace them (and the base: HOME, PATH), the platform's come last;
 * GPUs are numbered from 0 in a sandbox and by the machine's indexes
 * unconfined; each name appears once. A user name that is no safe name
 * becomes "job"; memory files hold base + line and are sealed.
 */
#include "backends/jobenv.h"
#include "tests/support/suite.h"

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static json_t *parse(const char *text)
{
    json_error_t e;
    json_t *o = json_loads(text, 0, &e);
    ck_assert_msg(o != NULL, "bad test JSON %s: %s", text, e.text);
    return o;
}

/* The value of name in env (NULL when not there); fails when name is there twice. */
static const char *get(char **env, const char *name)
{
    size_t n = strlen(name);
    const char *found = NULL;
    for (size_t i = 0; env[i]; i++) {
        if (strncmp(env[i], name, n) != 0 || env[i][n] != '=')
            continue;
        ck_assert_msg(found == NULL, "%s set twice", name);
        found = env[i] + n + 1;
    }
    return found;
}

static void assert_var(char **env, const char *name, const char *want)
{
    const char *v = get(env, name);
    ck_assert_msg(v != NULL, "%s is not set", name);
    ck_assert_msg(strcmp(v, want) == 0, "%s=\"%s\", want \"%s\"", name, v, want);
}

/* every entry NAME=value, every NAME once */
static void assert_unique(char **env)
{
    for (size_t i = 0; env[i]; i++) {
        const char *eq = strchr(env[i], '=');
        ck_assert_msg(eq && eq > env[i], "\"%s\" is no NAME=value", env[i]);
        size_t n = (size_t)(eq - env[i]);
        for (size_t k = i + 1; env[k]; k++)
            ck_assert_msg(strncmp(env[i], env[k], n + 1) != 0, "%.*s twice", (int)n, env[i]);
    }
}

static const char spec_text[] =
    "{\"job_id\": \"job-123\", \"tenant\": \"acme\", \"project\": \"vision\","
    " \"user\": \"ann\", \"gpu_indexes\": [4, 5],"
    " \"env\": {\"FOO\": \"user\", \"HOME\": \"/elsewhere\"}}";
static const char image_text[] = "[\"PATH=/opt/x/bin\", \"LANG=fr_FR.UTF-8\", \"FOO=img\"]";

static const struct jobenv_paths sandboxed = {.home = "/job", .tmp = "/tmp", .sandboxed = true};

START_TEST(the_environment_layers_image_job_platform)
{
    json_t *spec = parse(spec_text), *image = parse(image_text);
    char **env = jobenv_build(spec, image, &sandboxed);
    ck_assert_ptr_nonnull(env);
    assert_unique(env);
    assert_var(env, "PATH", "/opt/x/bin");
    assert_var(env, "LANG", "fr_FR.UTF-8");
    assert_var(env, "FOO", "user");
    assert_var(env, "HOME", "/elsewhere");
    assert_var(env, "TMPDIR", "/tmp");
    assert_var(env, "USER", "ann");
    assert_var(env, "LOGNAME", "ann");
    assert_var(env, "AIDC_JOB_ID", "job-123");
    assert_var(env, "AIDC_TENANT", "acme");
    assert_var(env, "AIDC_PROJECT", "vision");
    assert_var(env, "AIDC_USER", "ann");
    assert_var(env, "AIDC_GPU_INDEXES", "4,5");
    assert_var(env, "CUDA_VISIBLE_DEVICES", "0,1");
    assert_var(env, "NVIDIA_VISIBLE_DEVICES", "0,1");
    jobenv_free(env);
    json_decref(spec);
    json_decref(image);
}
END_TEST

START_TEST(without_an_image_the_base_is_there)
{
    json_t *spec = parse("{\"job_id\": \"j\", \"tenant\": \"t\", \"project\": \"p\","
                         " \"user\": \"bob\", \"gpu_indexes\": [0]}");
    char **env = jobenv_build(spec, NULL, &sandboxed);
    ck_assert_ptr_nonnull(env);
    assert_unique(env);
    const char *path = get(env, "PATH");
    ck_assert_ptr_nonnull(path);
    ck_assert_ptr_nonnull(strstr(path, "/usr/bin"));
    assert_var(env, "HOME", "/job");
    assert_var(env, "TMPDIR", "/tmp");
    assert_var(env, "LANG", "C.UTF-8");
    assert_var(env, "USER", "bob");
    assert_var(env, "CUDA_VISIBLE_DEVICES", "0");
    jobenv_free(env);
    json_decref(spec);
}
END_TEST

START_TEST(the_platform_variables_cannot_be_replaced)
{
    json_t *spec = parse("{\"job_id\": \"job-9\", \"tenant\": \"acme\", \"project\": \"p\","
                         " \"user\": \"ann\", \"gpu_indexes\": [2],"
                         " \"env\": {\"AIDC_JOB_ID\": \"forged\", \"AIDC_TENANT\": \"other\","
                         " \"CUDA_VISIBLE_DEVICES\": \"0,1,2,3\", \"AIDC_GPU_INDEXES\": \"0\"}}");
    json_t *image = parse("[\"AIDC_TENANT=img\", \"NVIDIA_VISIBLE_DEVICES=all\"]");
    char **env = jobenv_build(spec, image, &sandboxed);
    assert_unique(env);
    assert_var(env, "AIDC_JOB_ID", "job-9");
    assert_var(env, "AIDC_TENANT", "acme");
    assert_var(env, "AIDC_GPU_INDEXES", "2");
    assert_var(env, "CUDA_VISIBLE_DEVICES", "0");
    assert_var(env, "NVIDIA_VISIBLE_DEVICES", "0");
    jobenv_free(env);
    json_decref(spec);
    json_decref(image);
}
END_TEST

START_TEST(unconfined_gpus_keep_the_machines_indexes)
{
    json_t *spec = parse(spec_text), *image = parse(image_text);
    const struct jobenv_paths host = {.home = "/srv/jobs/job-123", .tmp = "/srv/jobs/job-123/tmp",
                                      .sandboxed = false};
    char **env = jobenv_build(spec, image, &host);
    assert_unique(env);
    assert_var(env, "CUDA_VISIBLE_DEVICES", "4,5");
    assert_var(env, "NVIDIA_VISIBLE_DEVICES", "4,5");
    assert_var(env, "AIDC_GPU_INDEXES", "4,5");
    assert_var(env, "TMPDIR", "/srv/jobs/job-123/tmp");
    assert_var(env, "HOME", "/elsewhere"); /* the job's own still wins */
    jobenv_free(env);
    json_decref(spec);
    json_decref(image);
}
END_TEST

START_TEST(no_gpus_means_none_visible)
{
    static const char *const specs[] = {
        "{\"job_id\": \"j\", \"tenant\": \"t\", \"project\": \"p\", \"user\": \"u\"}",
        "{\"job_id\": \"j\", \"tenant\": \"t\", \"project\": \"p\", \"user\": \"u\","
        " \"gpu_indexes\": []}",
    };
    for (size_t k = 0; k < 2; k++) {
        json_t *spec = parse(specs[k]);
        for (int boxed = 0; boxed < 2; boxed++) {
            const struct jobenv_paths p = {.home = "/job", .tmp = "/tmp", .sandboxed = boxed};
            char **env = jobenv_build(spec, NULL, &p);
            assert_unique(env);
            assert_var(env, "CUDA_VISIBLE_DEVICES", "");
            assert_var(env, "NVIDIA_VISIBLE_DEVICES", "none");
            assert_var(env, "AIDC_GPU_INDEXES", "");
            jobenv_free(env);
        }
        json_decref(spec);
    }
}
END_TEST

START_TEST(a_user_name_is_sanitised)
{
    static const struct {
        const char *user; /* NULL: none given */
        const char *want;
    } cases[] = {
        {"ann", "ann"},
        {"_svc.b-2", "_svc.b-2"},
        {"abcdefghijklmnopqrstuvwxyz012345", "abcdefghijklmnopqrstuvwxyz012345"}, /* 32 */
        {"../x", "job"},
        {"a b", "job"},
        {"a/b", "job"},
        {"root:x", "job"},
        {"ann\n", "job"},
        {"1ann", "job"},
        {"-ann", "job"},
        {"", "job"},
        {"abcdefghijklmnopqrstuvwxyz0123456789abcd", "job"}, /* 40 */
        {NULL, "job"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        json_t *spec = json_object();
        if (cases[i].user)
            json_object_set_new(spec, "user", json_string(cases[i].user));
        char out[64] = "unset";
        jobenv_user(spec, out, sizeof out);
        ck_assert_msg(strcmp(out, cases[i].want) == 0, "user \"%s\" became \"%s\"",
                      cases[i].user ? cases[i].user : "(none)", out);
        json_decref(spec);
    }
    /* USER in the environment is the sanitised name */
    json_t *spec = parse("{\"job_id\": \"j\", \"tenant\": \"t\", \"project\": \"p\","
                         " \"user\": \"../x\"}");
    char **env = jobenv_build(spec, NULL, &sandboxed);
    assert_var(env, "USER", "job");
    assert_var(env, "LOGNAME", "job");
    jobenv_free(env);
    json_decref(spec);
}
END_TEST

START_TEST(argv_is_the_command_or_the_script)
{
    json_t *spec = parse("{\"command\": [\"python3\", \"train.py\", \"--lr\", \"0.1\", \"\"]}");
    char **argv = jobenv_argv(spec, "/run/aidc/job.sh");
    static const char *const want[] = {"python3", "train.py", "--lr", "0.1", ""};
    for (size_t i = 0; i < sizeof want / sizeof *want; i++) {
        ck_assert_ptr_nonnull(argv[i]);
        ck_assert_str_eq(argv[i], want[i]);
    }
    ck_assert_ptr_null(argv[5]);
    /* copies, not the spec's strings */
    ck_assert_ptr_ne(argv[0], json_string_value(json_array_get(json_object_get(spec, "command"), 0)));
    jobenv_free(argv);
    json_decref(spec);
    spec = parse("{\"script\": \"echo hi\"}");
    argv = jobenv_argv(spec, "/run/aidc/job.sh");
    ck_assert_str_eq(argv[0], "/bin/sh");
    ck_assert_str_eq(argv[1], "/run/aidc/job.sh");
    ck_assert_ptr_null(argv[2]);
    jobenv_free(argv);
    json_decref(spec);
    jobenv_free(NULL);
}
END_TEST

/* the whole memory file fd, from its start */
static char *contents(int fd)
{
    static char buf[1024];
    ssize_t n = pread(fd, buf, sizeof buf - 1, 0);
    ck_assert_int_ge(n, 0);
    buf[n] = '\0';
    return buf;
}

START_TEST(a_memfd_holds_base_and_line_sealed)
{
    static const char base[] = "root:x:0:0:root:/root:/bin/sh";
    static const char line[] = "ann:x:3000001:3000001::/job:/bin/sh\n";
    int fd = jobenv_memfd("passwd", base, strlen(base), line);
    ck_assert_int_ge(fd, 0);
    ck_assert_str_eq(contents(fd), "root:x:0:0:root:/root:/bin/sh\n"
                                   "ann:x:3000001:3000001::/job:/bin/sh\n");
    /* read from the start by whoever gets it */
    ck_assert_int_eq(lseek(fd, 0, SEEK_CUR), 0);
    int seals = fcntl(fd, F_GET_SEALS);
    ck_assert_int_ge(seals, 0);
    ck_assert_int_ne(seals & F_SEAL_WRITE, 0);
    ck_assert_int_ne(seals & F_SEAL_SEAL, 0);
    errno = 0;
    ck_assert_int_eq(write(fd, "x", 1), -1);
    ck_assert_int_eq(errno, EPERM);
    ck_assert_int_eq(ftruncate(fd, 0), -1);
    ck_assert_int_ne(fcntl(fd, F_GETFD) & FD_CLOEXEC, 0);
    close(fd);
    /* a base ending in a newline gets none more; no base at all is only the line */
    static const char base_nl[] = "root:x:0:\n";
    fd = jobenv_memfd("group", base_nl, strlen(base_nl), "ann:x:3000001:\n");
    ck_assert_int_ge(fd, 0);
    ck_assert_str_eq(contents(fd), "root:x:0:\nann:x:3000001:\n");
    close(fd);
    fd = jobenv_memfd("hosts", NULL, 0, "127.0.0.1 localhost\n");
    ck_assert_int_ge(fd, 0);
    ck_assert_str_eq(contents(fd), "127.0.0.1 localhost\n");
    close(fd);
    /* only baselen bytes of base count */
    fd = jobenv_memfd("group", "abcdef", 3, "x");
    ck_assert_int_ge(fd, 0);
    ck_assert_str_eq(contents(fd), "abc\nx");
    close(fd);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("jobenv");
    TCase *tc = tcase_create("jobenv");
    tcase_add_test(tc, the_environment_layers_image_job_platform);
    tcase_add_test(tc, without_an_image_the_base_is_there);
    tcase_add_test(tc, the_platform_variables_cannot_be_replaced);
    tcase_add_test(tc, unconfined_gpus_keep_the_machines_indexes);
    tcase_add_test(tc, no_gpus_means_none_visible);
    tcase_add_test(tc, a_user_name_is_sanitised);
    tcase_add_test(tc, argv_is_the_command_or_the_script);
    tcase_add_test(tc, a_memfd_holds_base_and_line_sealed);
    suite_add_tcase(s, tc);
    return suite_run(s);
}
