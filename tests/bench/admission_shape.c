/* admission_shape.c - the workload of bench_admission (see admission_bench.h). */
#include "admission_bench.h"

#include "sched/admission.h"

#include <math.h>
#include <stdlib.h>
#include <time.h>

const char *const shape_type_names[SHAPE_TYPES] = {"a100", "h100", "l40"};
const int shape_type_totals[SHAPE_TYPES] = {400, 300, 300};

static uint64_t next64(struct shape_rng *r)
{
    uint64_t z = (r->s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

/* Uniform in [0, n). */
static int below(struct shape_rng *r, int n)
{
    return (int)(next64(r) % (uint64_t)n);
}

void shape_job_next(struct shape_rng *r, struct shape_job *out)
{
    static const int sizes[] = {1, 1, 1, 1, 2, 2, 2, 4, 4, 8};
    int t = below(r, 3) == 0 ? below(r, 10) : below(r, SHAPE_TENANTS);
    int x = below(r, 10);
    out->tenant = t;
    out->project = t * SHAPE_PROJECTS_PER_TENANT + below(r, SHAPE_PROJECTS_PER_TENANT);
    out->gpu_type = x < 4 ? 0 : x < 7 ? 1 : 2;
    out->gpus = sizes[below(r, (int)(sizeof sizes / sizeof sizes[0]))];
    out->cpus = 4 * out->gpus;
    out->memory_gib = 16 * out->gpus;
    int p = below(r, 100);
    out->priority = p < 10 ? ADM_HIGH : p < 85 ? ADM_NORMAL : ADM_LOW;
    out->age_s = below(r, 1800 * 1000) / 1000.0;
    out->run_s = 60 + below(r, 14 * 60 + 1);
    out->time_limit_minutes = (2 * out->run_s + 59) / 60;
}

double shape_guaranteed(int t, int g)
{
    if (t % 10 == 9)
        return 0; /* a tenant that only borrows */
    return floor(0.8 * shape_type_totals[g] / SHAPE_TENANTS);
}

double shape_limit(int t, int g)
{
    double gu = shape_guaranteed(t, g);
    return gu > 0 ? 4 * gu : 24;
}

double bench_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

double bench_quantile(double *v, size_t n, double q)
{
    if (n == 0)
        return 0;
    qsort(v, n, sizeof *v, cmp_double);
    size_t k = (size_t)ceil(q * (double)n);
    return v[k ? k - 1 : 0];
}
