/*
 * test_templates_slurm.c - the seeded template "pytorch-ddp" (migration 0023,
 * docs/templates.md) on a real Slurm of two nodes (tests/run.sh): a job of
 * two nodes runs torchrun once per node, each with the rendezvous torchrun
 * needs (NNODES, NODE_RANK, MASTER_ADDR, MASTER_PORT) and the rendered
 * arguments. torchrun is a stand-in on the job's PATH that writes what it
 * was given into a file per node rank; the job is CPU-only (the two nodes'
 * GPUs are of two types), which the submit's overrides say.
 *
 * Needs AIDC_TEST_SLURM_URL, _USER, _JWT_KEY, _JWT and _DIR (tests/run.sh);
 * skipped (77) without them.
 */
#include "lib/rmtree.h"
#include "tests/support/client.h"
#include "tests/support/harness.h"
#include "tests/support/jobs.h"
#include "tests/support/slurmtest.h"
#include "tests/support/suite.h"

#include <check.h>
#include <curl/curl.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char *ann;
static char bin[256]; /* the stand-in torchrun's folder, which it writes into too */
static const char *fast[] = {"AIDC_SYNC_INTERVAL_MS=200", "AIDC_ADMISSION_INTERVAL_MS=200", NULL};

static void setup(void)
{
    harness_setup("templates_slurm", fast);
    curl_global_init(CURL_GLOBAL_ALL);
    slurmtest_register_cluster();
    ann = jobs_tenant_member("phys", "lab", "{\"gpu:a100\":{\"guaranteed\":1,\"limit\":8}}", "ann");
    /* jobs run as the Slurm user: a folder of the shared jobs directory it may write */
    snprintf(bin, sizeof bin, "%s/jobs/aidc-tpl-%d", slurm_dir, (int)getpid());
    ck_assert_int_eq(mkdir(bin, 0777), 0);
    ck_assert_int_eq(chmod(bin, 0777), 0);
    char path[300];
    snprintf(path, sizeof path, "%s/torchrun", bin);
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    /* its environment on a line, then each argument in brackets */
    fprintf(f,
            "#!/bin/sh\n{ echo \"$NODE_RANK $NNODES $MASTER_ADDR $MASTER_PORT\";"
            " printf '[%%s]' \"$@\"; echo; } > %s/rank-$NODE_RANK\n",
            bin);
    ck_assert_int_eq(fclose(f), 0);
    ck_assert_int_eq(chmod(path, 0755), 0);
}

static void teardown(void)
{
    free(ann);
    harness_teardown();
    if (rmtree_at(AT_FDCWD, bin) != 0)
        fprintf(stderr, "teardown: could not remove %s\n", bin);
}

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return NULL;
    char *buf = calloc(1, 1024);
    size_t n = fread(buf, 1, 1023, f);
    buf[n] = '\0';
    fclose(f);
    return buf;
}

START_TEST(ddp_runs_torchrun_once_per_node_with_its_rendezvous)
{
    const char *body =
        fmt("{\"template\":\"pytorch-ddp\",\"project\":\"lab\",\"parameters\":{"
            "\"entrypoint\":\"train.py --lr 0.1\",\"nodes\":2,\"gpus_per_node\":1,"
            "\"gpu_type\":\"a100\",\"cpus_per_node\":1,\"memory_gib\":1,\"time_limit_minutes\":5},"
            "\"gpus\":0,\"gpu_type\":null,\"image\":null,\"mounts\":[],"
            "\"env\":{\"PATH\":\"%s:/usr/local/bin:/usr/bin:/bin\"}}",
            bin);
    char *id = jobs_submit(ann, "phys", body);
    json_t *j = jobs_wait(ann, "phys", id, "succeeded,failed", 90);
    ck_assert_msg(strcmp(jstr(j, "state"), "succeeded") == 0, "state %s, reason %s",
                  jstr(j, "state"), jstr(j, "reason"));
    ck_assert_int_eq(jint(json_object_get(j, "resources"), "nodes"), 2);
    ck_assert_str_eq(jstr(json_object_get(j, "env"), "OMP_NUM_THREADS"), "1");
    for (int rank = 0; rank < 2; rank++) {
        char path[300], want[300];
        snprintf(path, sizeof path, "%s/rank-%d", bin, rank);
        char *got = slurp(path);
        ck_assert_msg(got != NULL, "no torchrun on node rank %d", rank);
        /* the entrypoint is one argument, spaces and all */
        snprintf(want, sizeof want,
                 "%d 2 127.0.0.1 29500\n[--nnodes=2][--node_rank=%d][--nproc_per_node=1]"
                 "[--master_addr=127.0.0.1][--master_port=29500][train.py --lr 0.1]\n",
                 rank, rank);
        ck_assert_str_eq(got, want);
        free(got);
    }
    json_decref(j);
    free(id);
}
END_TEST

int main(void)
{
    slurmtest_env();
    harness_require_pg();
    Suite *s = suite_create("templates_slurm");
    TCase *tc = tcase_create("ddp");
    tcase_add_unchecked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, ddp_runs_torchrun_once_per_node_with_its_rendezvous);
    suite_add_tcase(s, tc);
    return suite_run(s);
}
