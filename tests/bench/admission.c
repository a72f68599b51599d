/*
 * admission.c - bench_admission: how fast aidc decides admissions (figures,
 * not pass/fail; not run by ctest).
 *
 * Pure function (always): sched/admission.c's admission_run over the queue of
 * admission_bench.h on four clusters totalling 1,000 GPUs -
 *   1. one pass over N queued jobs (default 10,000) with capacity free and
 *      with capacity full (the steady state: most of the queue waits);
 *   2. a simulated drain of those N jobs: jobs run for their simulated run
 *      time, admission passes at least every --tick simulated seconds (and
 *      at the next job end when that is later), preempted jobs are requeued
 *      after the grace period; prints the passes, the wall time spent
 *      deciding and the GPU utilisation the decisions reached;
 *   3. one pass over --big queued jobs (default 100,000), free and full.
 * Database (with --db): admission_db.c runs sched/admitter.c's admitter_pass
 * against PostgreSQL (load, decide, write in one transaction).
 *
 * Usage: bench_admission [--jobs N] [--big N] [--tick S] [--reps N]
 *                        [--db OWNER_URL APP_URL] [--complete-frac F] [--max-passes N]
 * Lines "figure KEY VALUE UNIT" on stdout carry the figures for scripts
 * (tests/bench/jobs.sh); the rest is for people.
 */
#include "admission_bench.h"

#include "sched/admission.h"
#include "lib/xalloc.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NCLUSTERS 4
#define BASE_TIME 1.7e9 /* "now" of the first pass, seconds since the epoch */

/* GPUs of each type per cluster: a100 400, h100 300, l40 300 in all. */
static const int cluster_gpus[NCLUSTERS][SHAPE_TYPES] = {
    {160, 120, 0}, {160, 0, 120}, {80, 120, 60}, {0, 60, 120}};

enum { SJ_QUEUED, SJ_ACTIVE, SJ_DONE };

struct sim_job {
    struct shape_job spec;
    double submitted;
    int state, cluster;
    bool preemptible, stopping, requeue;
    double admitted, end;
};

/* Tenants, projects and clusters, and the arrays a snapshot points into. */
struct world {
    struct adm_gpu_quota quota[SHAPE_TENANTS][SHAPE_TYPES];
    struct adm_tenant tenants[SHAPE_TENANTS];
    double plimit[SHAPE_PROJECTS][SHAPE_TYPES];
    struct adm_project projects[SHAPE_PROJECTS];
    int cgpus[NCLUSTERS][SHAPE_TYPES];
    struct adm_cluster clusters[NCLUSTERS];
    struct sim_job *jobs;
    size_t njobs;
    struct adm_job *queued, *active;
    size_t *qmap, *amap; /* snapshot index -> jobs index */
    struct adm_snapshot s;
};

static void world_platform(struct world *w)
{
    for (int t = 0; t < SHAPE_TENANTS; t++) {
        for (int g = 0; g < SHAPE_TYPES; g++)
            w->quota[t][g] = (struct adm_gpu_quota){shape_guaranteed(t, g), shape_limit(t, g)};
        w->tenants[t] = (struct adm_tenant){.gpu = w->quota[t], .cpu_limit = ADM_UNLIMITED,
                                            .memory_limit = ADM_UNLIMITED,
                                            .jobs_limit = ADM_UNLIMITED,
                                            .gpu_hours_budget = ADM_UNLIMITED};
    }
    for (int p = 0; p < SHAPE_PROJECTS; p++) {
        for (int g = 0; g < SHAPE_TYPES; g++)
            w->plimit[p][g] = ADM_UNLIMITED;
        w->projects[p] = (struct adm_project){.tenant = p / SHAPE_PROJECTS_PER_TENANT,
                                              .gpu_limit = w->plimit[p],
                                              .cpu_limit = ADM_UNLIMITED,
                                              .memory_limit = ADM_UNLIMITED,
                                              .jobs_limit = ADM_UNLIMITED,
                                              .gpu_hours_budget = ADM_UNLIMITED};
    }
    for (int c = 0; c < NCLUSTERS; c++) {
        memcpy(w->cgpus[c], cluster_gpus[c], sizeof w->cgpus[c]);
        w->clusters[c] = (struct adm_cluster){.gpus = w->cgpus[c]}; /* cores, memory: unlimited */
    }
    w->s = (struct adm_snapshot){.gpu_types = shape_type_names, .ngpu_types = SHAPE_TYPES,
                                 .tenants = w->tenants, .ntenants = SHAPE_TENANTS,
                                 .projects = w->projects, .nprojects = SHAPE_PROJECTS,
                                 .clusters = w->clusters, .nclusters = NCLUSTERS,
                                 .starvation_seconds = SHAPE_STARVATION_S,
                                 .preempt_grace_seconds = SHAPE_GRACE_S, .month_end = 4e9};
}

static void world_init(struct world *w, size_t njobs, uint64_t seed)
{
    memset(w, 0, sizeof *w);
    world_platform(w);
    struct shape_rng rng = {seed};
    w->njobs = njobs;
    w->jobs = xcalloc(njobs + 1, sizeof *w->jobs);
    w->queued = xcalloc(njobs + 1, sizeof *w->queued);
    w->active = xcalloc(njobs + 1, sizeof *w->active);
    w->qmap = xcalloc(njobs + 1, sizeof *w->qmap);
    w->amap = xcalloc(njobs + 1, sizeof *w->amap);
    for (size_t i = 0; i < njobs; i++) {
        struct sim_job *j = &w->jobs[i];
        shape_job_next(&rng, &j->spec);
        j->submitted = BASE_TIME - j->spec.age_s;
        j->state = SJ_QUEUED;
        j->cluster = -1;
    }
}

static void world_free(struct world *w)
{
    free(w->jobs);
    free(w->queued);
    free(w->active);
    free(w->qmap);
    free(w->amap);
}

static void fill_job(struct adm_job *a, const struct sim_job *j)
{
    *a = (struct adm_job){.tenant = j->spec.tenant, .project = j->spec.project,
                          .gpu_type = j->spec.gpu_type, .gpus = j->spec.gpus,
                          .cpus = j->spec.cpus, .memory_gib = j->spec.memory_gib, .nodes = 1,
                          .priority = j->spec.priority, .submitted = j->submitted,
                          .time_limit_s = j->spec.time_limit_minutes * 60,
                          .cluster = j->cluster, .preemptible = j->preemptible,
                          .stopping = j->stopping, .admitted = j->admitted,
                          .expected_end = j->admitted + j->spec.time_limit_minutes * 60};
}

/* Point the snapshot at the queued and active jobs as of now. */
static void world_snapshot(struct world *w, double now)
{
    size_t nq = 0, na = 0;
    for (size_t i = 0; i < w->njobs; i++) {
        const struct sim_job *j = &w->jobs[i];
        if (j->state == SJ_QUEUED) {
            fill_job(&w->queued[nq], j);
            w->qmap[nq++] = i;
        } else if (j->state == SJ_ACTIVE) {
            fill_job(&w->active[na], j);
            w->amap[na++] = i;
        }
    }
    w->s.queued = w->queued;
    w->s.nqueued = nq;
    w->s.active = w->active;
    w->s.nactive = na;
    w->s.now = now;
}

struct tally {
    size_t admitted, preempted, waits;
};

/* Carry out the decisions: admitted jobs run, preempted ones stop after the grace period. */
static void world_apply(struct world *w, const struct adm_result *r, double now, struct tally *t)
{
    for (size_t k = 0; k < r->ndecisions; k++) {
        const struct adm_decision *d = &r->decisions[k];
        if (d->kind == ADM_ADMIT) {
            struct sim_job *j = &w->jobs[w->qmap[d->job]];
            j->state = SJ_ACTIVE;
            j->cluster = d->cluster;
            j->preemptible = d->preemptible;
            j->admitted = now;
            j->end = now + j->spec.run_s;
            t->admitted++;
        } else if (d->kind == ADM_PREEMPT) {
            struct sim_job *j = &w->jobs[w->amap[d->job]];
            j->stopping = j->requeue = true;
            if (j->end > now + SHAPE_GRACE_S)
                j->end = now + SHAPE_GRACE_S;
            t->preempted++;
        } else {
            t->waits++;
        }
    }
}

/* Jobs that ended by now leave (or, preempted, go back to the queue). */
static void world_advance(struct world *w, double now)
{
    for (size_t i = 0; i < w->njobs; i++) {
        struct sim_job *j = &w->jobs[i];
        if (j->state != SJ_ACTIVE || j->end > now)
            continue;
        if (j->requeue) {
            j->state = SJ_QUEUED;
            j->cluster = -1;
            j->preemptible = j->stopping = j->requeue = false;
        } else {
            j->state = SJ_DONE;
        }
    }
}

/* One timed admission_run over the current snapshot. */
static double timed_pass(struct world *w, struct adm_result *res)
{
    double t0 = bench_now();
    admission_run(&w->s, res);
    return (bench_now() - t0) * 1000.0;
}

static void figure(const char *key, double value, const char *unit)
{
    printf("figure %s %.3f %s\n", key, value, unit);
}

/*
 * One pass with capacity free, then reps passes with the capacity full (the
 * first pass's admissions running). key: "pure10k" etc.
 */
static void bench_pass(size_t njobs, int reps, const char *key)
{
    struct world w;
    world_init(&w, njobs, 42);
    struct adm_result res;
    struct tally t = {0};
    world_snapshot(&w, BASE_TIME);
    double free_ms = timed_pass(&w, &res);
    size_t nd = res.ndecisions;
    world_apply(&w, &res, BASE_TIME, &t);
    admission_result_free(&res);
    printf("  capacity free: %8.2f ms  %zu decisions (%zu admitted, %zu preemptions, %zu waits)"
           "  %.2f M decisions/s\n",
           free_ms, nd, t.admitted, t.preempted, t.waits, (double)nd / free_ms / 1000.0);
    double *ms = xcalloc((size_t)reps + 1, sizeof *ms);
    world_snapshot(&w, BASE_TIME + 1);
    for (int i = 0; i < reps; i++) {
        ms[i] = timed_pass(&w, &res);
        nd = res.ndecisions;
        admission_result_free(&res);
    }
    double lo = bench_quantile(ms, (size_t)reps, 0), med = bench_quantile(ms, (size_t)reps, 0.5);
    double hi = bench_quantile(ms, (size_t)reps, 1);
    printf("  capacity full: %8.2f ms median (min %.2f, max %.2f, %d passes over %zu queued,"
           " %zu active)  %.2f M decisions/s\n",
           med, lo, hi, reps, w.s.nqueued, w.s.nactive, (double)nd / med / 1000.0);
    char k[64];
    snprintf(k, sizeof k, "%s_free_ms", key);
    figure(k, free_ms, "ms");
    snprintf(k, sizeof k, "%s_full_ms", key);
    figure(k, med, "ms");
    snprintf(k, sizeof k, "%s_full_decisions_per_s", key);
    figure(k, (double)nd / med * 1000.0, "1/s");
    free(ms);
    world_free(&w);
}

struct drain_out {
    size_t passes;
    double decide_ms, max_ms, sim_s, busy_gpu_s;
    double *pass_ms;
    struct tally t;
};

static size_t active_gpus(const struct world *w)
{
    size_t g = 0;
    for (size_t i = 0; i < w->njobs; i++)
        if (w->jobs[i].state == SJ_ACTIVE)
            g += (size_t)w->jobs[i].spec.gpus;
    return g;
}

/* The next simulated pass: tick after now, or the next job end if later. */
static double next_pass(const struct world *w, double now, double tick)
{
    double next = -1;
    for (size_t i = 0; i < w->njobs; i++)
        if (w->jobs[i].state == SJ_ACTIVE && (next < 0 || w->jobs[i].end < next))
            next = w->jobs[i].end;
    return next > now + tick ? next : now + tick;
}

static void drain_loop(struct world *w, double tick, size_t max_passes, struct drain_out *o)
{
    double now = BASE_TIME;
    for (;;) {
        world_advance(w, now);
        world_snapshot(w, now);
        if (w->s.nqueued == 0 || o->passes == max_passes)
            break;
        struct adm_result res;
        double ms = timed_pass(w, &res);
        o->pass_ms[o->passes++] = ms;
        o->decide_ms += ms;
        if (ms > o->max_ms)
            o->max_ms = ms;
        world_apply(w, &res, now, &o->t);
        admission_result_free(&res);
        double next = next_pass(w, now, tick);
        o->busy_gpu_s += (double)active_gpus(w) * (next - now);
        now = next;
    }
    o->sim_s = now - BASE_TIME;
}

static void bench_drain(size_t njobs, double tick, size_t max_passes)
{
    struct world w;
    world_init(&w, njobs, 42);
    struct drain_out o = {0};
    o.pass_ms = xcalloc(max_passes + 1, sizeof *o.pass_ms);
    double t0 = bench_now();
    drain_loop(&w, tick, max_passes, &o);
    double wall = bench_now() - t0;
    double util = o.sim_s > 0 ? o.busy_gpu_s / (1000.0 * o.sim_s) : 0;
    double mean = o.passes ? o.decide_ms / (double)o.passes : 0;
    double p99 = bench_quantile(o.pass_ms, o.passes, 0.99);
    printf("  drained %zu jobs in %zu passes (%s), %.2f simulated hours; %zu admissions,"
           " %zu preemptions\n",
           njobs, o.passes, w.s.nqueued ? "STOPPED at --max-passes" : "queue empty",
           o.sim_s / 3600, o.t.admitted, o.t.preempted);
    printf("  wall time deciding %.1f ms (mean %.2f, p99 %.2f, max %.2f ms per pass; %.1f s with"
           " the simulation)\n",
           o.decide_ms, mean, p99, o.max_ms, wall);
    printf("  %.0f admissions/s of deciding time; GPU utilisation over the drain %.1f %%\n",
           (double)o.t.admitted / o.decide_ms * 1000.0, 100 * util);
    figure("drain_passes", (double)o.passes, "passes");
    figure("drain_decide_ms", o.decide_ms, "ms");
    figure("drain_pass_p99_ms", p99, "ms");
    figure("drain_admissions_per_s", (double)o.t.admitted / o.decide_ms * 1000.0, "1/s");
    figure("drain_utilisation_pct", 100 * util, "%");
    free(o.pass_ms);
    world_free(&w);
}

struct opts {
    size_t jobs, big, max_passes;
    int reps;
    double tick, complete_frac;
    const char *owner_url, *app_url;
};

static bool parse_args(int argc, char **argv, struct opts *o)
{
    *o = (struct opts){.jobs = 10000, .big = 100000, .max_passes = 100000, .reps = 20,
                       .tick = 10, .complete_frac = 0.5};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--db") == 0) {
            if (i + 2 >= argc)
                return false;
            o->owner_url = argv[++i];
            o->app_url = argv[++i];
            continue;
        }
        if (i + 1 >= argc)
            return false;
        const char *v = argv[++i];
        if (strcmp(a, "--jobs") == 0)
            o->jobs = strtoul(v, NULL, 10);
        else if (strcmp(a, "--big") == 0)
            o->big = strtoul(v, NULL, 10);
        else if (strcmp(a, "--tick") == 0)
            o->tick = strtod(v, NULL);
        else if (strcmp(a, "--reps") == 0)
            o->reps = atoi(v);
        else if (strcmp(a, "--complete-frac") == 0)
            o->complete_frac = strtod(v, NULL);
        else if (strcmp(a, "--max-passes") == 0)
            o->max_passes = strtoul(v, NULL, 10);
        else
            return false;
    }
    return o->jobs > 0 && o->reps > 0 && o->tick > 0 && o->complete_frac > 0 &&
           o->complete_frac <= 1 && o->max_passes > 0;
}

int main(int argc, char **argv)
{
    struct opts o;
    if (!parse_args(argc, argv, &o)) {
        fprintf(stderr, "usage: bench_admission [--jobs N] [--big N] [--tick S] [--reps N]"
                        " [--db OWNER_URL APP_URL] [--complete-frac F] [--max-passes N]\n");
        return 2;
    }
    setvbuf(stdout, NULL, _IOLBF, 0);
    printf("== admission_run (pure function, no I/O): %d tenants, %d projects, %d GPU types,"
           " %d clusters, 1000 GPUs\n",
           SHAPE_TENANTS, SHAPE_PROJECTS, SHAPE_TYPES, NCLUSTERS);
    printf("-- one pass over %zu queued jobs\n", o.jobs);
    bench_pass(o.jobs, o.reps, "pure_jobs");
    printf("-- simulated drain of %zu jobs (a pass every %.0f simulated s, or at the next job"
           " end)\n",
           o.jobs, o.tick);
    bench_drain(o.jobs, o.tick, o.max_passes);
    if (o.big > 0) {
        printf("-- one pass over %zu queued jobs (target: under 1 s)\n", o.big);
        bench_pass(o.big, o.reps < 5 ? o.reps : 5, "pure_big");
    }
    if (!o.owner_url)
        return 0;
    return bench_db_run(o.owner_url, o.app_url, o.jobs, o.big, o.complete_frac,
                        (int)(o.max_passes < 100000 ? o.max_passes : 100000));
}
