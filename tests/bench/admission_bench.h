/*
 * admission_bench.h - the workload of bench_admission (tests/bench/admission.c
 * for the pure function, tests/bench/admission_db.c for the database-level
 * pass): one deterministic shape shared by both, so their figures describe
 * the same queue.
 *
 * Shape: SHAPE_TENANTS tenants with SHAPE_PROJECTS_PER_TENANT projects each;
 * three GPU types (a100 400, h100 300, l40 300 GPUs = 1,000); every tenant
 * guaranteed about 0.8 of its fair share of each type (every tenth tenant
 * none: it only borrows) and allowed four times that (borrowing). Jobs: 1-8
 * GPUs on one node (mean 2.7), 10 % high, 75 % normal, 15 % low priority,
 * submitted within the last 30 minutes, a simulated run of 1-15 minutes and a
 * time limit of twice that; a third of the submissions come from the first
 * ten tenants (some tenants want far more than their share).
 */
#ifndef AIDC_BENCH_ADMISSION_H
#define AIDC_BENCH_ADMISSION_H

#include <stddef.h>
#include <stdint.h>

#define SHAPE_TYPES 3
#define SHAPE_TENANTS 50
#define SHAPE_PROJECTS_PER_TENANT 2
#define SHAPE_PROJECTS (SHAPE_TENANTS * SHAPE_PROJECTS_PER_TENANT)
#define SHAPE_STARVATION_S 3600
#define SHAPE_GRACE_S 30

extern const char *const shape_type_names[SHAPE_TYPES];
extern const int shape_type_totals[SHAPE_TYPES]; /* GPUs of each type over all clusters */

/* One generated job. */
struct shape_job {
    int tenant, project, gpu_type, gpus, cpus, memory_gib, priority; /* enum adm_priority */
    double age_s;  /* how long before "now" it was submitted */
    int run_s;     /* simulated run time */
    int time_limit_minutes;
};

/* A splitmix64 generator: the same seed gives the same queue on every machine. */
struct shape_rng {
    uint64_t s;
};

void shape_job_next(struct shape_rng *r, struct shape_job *out);
/* The quota of tenant t for type g (GPUs). */
double shape_guaranteed(int t, int g);
double shape_limit(int t, int g);

/* Seconds of a monotonic clock. */
double bench_now(void);
/* The q-quantile (0..1) of n values (sorted in place). 0 when n is 0. */
double bench_quantile(double *v, size_t n, double q);

/* Database mode (admission_db.c): 0 when the measurements ran. */
int bench_db_run(const char *owner_url, const char *app_url, size_t njobs, size_t nbig,
                 double complete_frac, int max_passes);

#endif
