/*
 * slurmtest.h - helpers of the tests on the real Slurm (tests/http/
 * test_slurm*.c): its coordinates from tests/run.sh, slurmrestd called
 * directly (to check what aidc did there), and the cluster "hpc" registered
 * in aidc.
 */
#ifndef AIDC_TEST_SLURMTEST_H
#define AIDC_TEST_SLURMTEST_H

#include <jansson.h>

/* From AIDC_TEST_SLURM_URL, _USER, _JWT_KEY, _JWT, _DIR (slurmtest_env). */
extern const char *slurm_url, *slurm_user, *slurm_key, *slurm_jwt, *slurm_dir;

/* Read the variables; exit 77 (skipped) when there is no test Slurm. */
void slurmtest_env(void);
/* method /slurm/v0.0.38/<path> (body JSON or NULL) as the test's Slurm user; new reference. */
json_t *slurm_call(const char *method, const char *path, const char *body);
json_t *slurm_get(const char *path);
/* The Slurm job aidc made for a job (its backend_job_id); new reference. */
json_t *slurm_job_of(const json_t *job);
/* Slurm jobs named name (aidc names them by run key). */
int slurm_jobs_named(const char *name);
/*
 * As the admin: register the Slurm as cluster "hpc" (partitions gpu and
 * preempt, workdir <slurm dir>/jobs) and wait until its inventory shows.
 */
void slurmtest_register_cluster(void);
/* The total of resource ("gpu:h100") in cluster hpc's inventory, as aidc shows it (0: none). */
long long slurmtest_total(const char *res);
/* Run `scontrol args` as root on the test Slurm; its exit status. */
int slurmtest_scontrol(const char *args);
/* A job body for project "lab" (malloc'd is not needed: an fmt() buffer). */
const char *slurmtest_job(const char *name, int gpus, const char *type, const char *script);

#endif
