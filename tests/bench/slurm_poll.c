/*
 * slurm_poll.c - one full Slurm poll (backend_slurm.poll_changed, since 0:
 * GET jobs, every job slurmctld holds) as the syncer makes it, alone in a
 * process: how many jobs it reported, how long it took, and the process's
 * peak memory (VmHWM) before and after. Built against the aidc_core of any
 * commit (tests/bench/slurm_poll.sh builds it for the base and the head).
 *
 *   slurm_poll <slurmrestd URL> <jwt_hs256.key path> [user_name]
 *
 * Prints one line: jobs=<n> aidc_jobs=<n> seconds=<s> hwm_before_kib=<k> hwm_kib=<k> rc=<rc>.
 */
#include "backends/backend.h"
#include "backends/slurm.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static long hwm_kib(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long k = -1;
    while (f && fgets(line, sizeof line, f))
        if (strncmp(line, "VmHWM:", 6) == 0)
            k = strtol(line + 6, NULL, 10);
    if (f)
        fclose(f);
    return k;
}

static void count(void *arg, const char *backend_id, const char *run_key,
                  const struct backend_status *status)
{
    (void)backend_id;
    (void)run_key;
    (void)status;
    (*(long *)arg)++;
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: %s <slurmrestd URL> <jwt key file> [user_name]\n", argv[0]);
        return 2;
    }
    char ref[1024];
    snprintf(ref, sizeof ref, "file:%s", argv[2]);
    json_t *o =
        json_pack("{s:s, s:i}", "user_name", argc > 3 ? argv[3] : "aidc", "timeout_seconds", 120);
    if (!o)
        return 1;
    struct backend_cluster c = {.id = "bench",
                                .name = "bench",
                                .kind = "slurm",
                                .endpoint = argv[1],
                                .credentials_ref = ref,
                                .options = o};
    long before = hwm_kib(), reported = 0;
    char err[512] = "";
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    int rc = backend_slurm.poll_changed(&c, 0, count, &reported, err, sizeof err);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double s = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    printf("aidc_jobs=%ld seconds=%.2f hwm_before_kib=%ld hwm_kib=%ld rc=%d %s\n", reported, s,
           before, hwm_kib(), rc, err);
    json_decref(o);
    return rc ? 1 : 0;
}
