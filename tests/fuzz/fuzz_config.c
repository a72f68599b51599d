/*
 * fuzz_config.c - aidcd's settings (lib/config.c): the file named by
 * AIDC_CONFIG_FILE (KEY=VALUE lines, comments, quotes) and the environment's
 * values, each parsed by its type (integers with bounds, booleans, sizes,
 * log levels, the listen address, URLs).
 *
 * Input: the file's text, then (after a NUL byte, if any) environment
 * variables as NAME=value lines, which win over the file as they do in
 * aidcd. The file is written to a private temporary file for each input.
 */
#include "fuzz.h"

#include "lib/config.h"

#include <stdio.h>
#include <unistd.h>

static char path[64];
static char *env_names[64], *env_values[64];
static size_t nenv;

static void remove_file(void)
{
    unlink(path);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    snprintf(path, sizeof path, "/tmp/aidc-fuzz-config-%ld", (long)getpid());
    atexit(remove_file);
    return 0;
}

static const char *fake_getenv(const char *name)
{
    for (size_t i = 0; i < nenv; i++)
        if (strcmp(env_names[i], name) == 0)
            return env_values[i];
    if (strcmp(name, "AIDC_CONFIG_FILE") == 0)
        return path;
    return NULL;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const uint8_t *nul = memchr(data, 0, size);
    size_t flen = nul ? (size_t)(nul - data) : size;
    FILE *f = fopen(path, "w");
    if (!f || fwrite(data, 1, flen, f) != flen || fclose(f) != 0)
        abort();
    char *env = nul ? fuzz_str(nul + 1, size - flen - 1) : NULL;
    nenv = 0;
    for (char *line = env; line && *line && nenv < 64;) {
        char *nl = strchr(line, '\n');
        if (nl)
            *nl = '\0';
        char *eq = strchr(line, '=');
        if (eq) {
            *eq = '\0';
            env_names[nenv] = line;
            env_values[nenv++] = eq + 1;
        }
        line = nl ? nl + 1 : NULL;
    }
    struct config cfg;
    char err[512];
    if (config_load(&cfg, fake_getenv, err, sizeof err)) {
        if (cfg.listen_port < 0 || cfg.listen_port > 65535 || !cfg.listen_host)
            abort();
        (void)config_listen_is_loopback(&cfg);
    } else if (strnlen(err, sizeof err) == sizeof err) {
        abort();
    }
    config_free(&cfg);
    free(env);
    return 0;
}
