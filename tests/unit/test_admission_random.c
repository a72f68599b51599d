/*
 * test_admission_random.c - invariants of the admission decision
 * (sched/admission.h) over many random snapshots, generated from a fixed seed
 * so a failure reproduces: the snapshot is printed with the first broken
 * invariant.
 *
 * For every snapshot: each queued job gets exactly one ADMIT or WAIT (with a
 * reason); admissions fit each cluster's free GPUs per type (and cores and
 * memory), respect the cluster asked for, its health, time and node limits;
 * a tenant's non-preemptible GPUs stay within `guaranteed` and all its GPUs
 * within `limit`; cpu, memory, jobs and project limits hold; no admission for
 * a suspended tenant, no GPU admission past a budget; PREEMPT targets only
 * preemptible jobs not already stopping, once, of the waiting job's type, on
 * a cluster it may use; equal snapshots give equal decisions.
 */
#include "sched/admission.h"
#include "tests/support/suite.h"

#include <check.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#define NOW   1000000.0
#define RUNS  200
#define MAXT  3
#define MAXC  3
#define MAXTN 4
#define MAXP  (2 * MAXTN)
#define MAXA  12
#define MAXQ  12

static const char *const type_names[MAXT] = {"a100", "h100", "t4"};

struct gen {
    uint64_t seed;
    int cgpus[MAXC][MAXT];
    struct adm_gpu_quota tq[MAXTN][MAXT];
    double plim[MAXP][MAXT];
    struct adm_cluster clusters[MAXC];
    struct adm_tenant tenants[MAXTN];
    struct adm_project projects[MAXP];
    struct adm_job active[MAXA], queued[MAXQ];
    struct adm_snapshot s;
};

/* xorshift64*: the same sequence on every platform. */
static unsigned rnd(struct gen *g, unsigned n)
{
    g->seed ^= g->seed >> 12;
    g->seed ^= g->seed << 25;
    g->seed ^= g->seed >> 27;
    return (unsigned)((g->seed * 2685821657736338717ULL) >> 33) % n;
}

static double maybe(struct gen *g, unsigned one_in, double value)
{
    return rnd(g, one_in) == 0 ? value : ADM_UNLIMITED;
}

static struct adm_job random_job(struct gen *g, bool active)
{
    struct adm_snapshot *s = &g->s;
    struct adm_job j = {0};
    j.tenant = (int)rnd(g, (unsigned)s->ntenants);
    j.project = rnd(g, 2) && (size_t)j.tenant + s->ntenants < s->nprojects
                    ? j.tenant + (int)s->ntenants
                    : j.tenant;
    j.gpu_type = rnd(g, 10) == 0 ? -1 : (int)rnd(g, (unsigned)s->ngpu_types);
    j.gpus = j.gpu_type < 0 ? 0 : 1 + (int)rnd(g, active ? 4 : 6);
    j.cpus = (int)rnd(g, 16);
    j.memory_gib = (int)rnd(g, 64);
    j.nodes = rnd(g, 5) == 0 ? 2 : 1;
    j.priority = (int)rnd(g, 3);
    j.submitted = NOW - rnd(g, 14400);
    j.time_limit_s = rnd(g, 3) == 0 ? 7200 : 600;
    j.cluster = active || rnd(g, 4) == 0 ? (int)rnd(g, (unsigned)s->nclusters) : -1;
    if (active) {
        j.preemptible = rnd(g, 3) != 0;
        j.stopping = rnd(g, 6) == 0;
        j.admitted = j.submitted + rnd(g, 600);
        j.expected_end = NOW + 1 + rnd(g, 20000);
    }
    return j;
}

static void generate(struct gen *g, uint64_t seed)
{
    memset(g, 0, sizeof *g);
    g->seed = seed * 0x9E3779B97F4A7C15ULL + 1;
    struct adm_snapshot *s = &g->s;
    s->gpu_types = type_names;
    s->ngpu_types = 1 + rnd(g, MAXT);
    s->nclusters = 1 + rnd(g, MAXC);
    for (size_t c = 0; c < s->nclusters; c++) {
        for (size_t t = 0; t < s->ngpu_types; t++)
            g->cgpus[c][t] = rnd(g, 4) == 0 ? 0 : 4 * (1 + (int)rnd(g, 3));
        /* one call per statement: initializers are evaluated in no fixed order */
        struct adm_cluster *cl = &g->clusters[c];
        cl->gpus = g->cgpus[c];
        cl->cpus = rnd(g, 2) ? 0 : 32 + (int)rnd(g, 64);
        cl->memory_gib = rnd(g, 2) ? 0 : 128 + (int)rnd(g, 256);
        cl->max_time_limit_s = rnd(g, 4) == 0 ? 3600 : 0;
        cl->max_nodes = rnd(g, 4) == 0 ? 1 : 0;
        cl->down = rnd(g, 8) == 0;
    }
    s->ntenants = 1 + rnd(g, MAXTN);
    s->nprojects = s->ntenants;
    for (size_t i = 0; i < s->ntenants; i++) {
        for (size_t t = 0; t < s->ngpu_types; t++) {
            g->tq[i][t].guaranteed = rnd(g, 8);
            g->tq[i][t].limit = g->tq[i][t].guaranteed + rnd(g, 9);
        }
        struct adm_tenant *tn = &g->tenants[i];
        tn->gpu = g->tq[i];
        tn->cpu_limit = maybe(g, 4, 16 + rnd(g, 48));
        tn->memory_limit = maybe(g, 4, 64 + rnd(g, 128));
        tn->jobs_limit = maybe(g, 4, 1 + rnd(g, 5));
        tn->gpu_hours_budget = maybe(g, 6, 100);
        tn->gpu_hours_used = rnd(g, 150);
        tn->suspended = rnd(g, 20) == 0;
        for (size_t t = 0; t < MAXT; t++)
            g->plim[i][t] = ADM_UNLIMITED;
        g->projects[i] = (struct adm_project){
            .tenant = (int)i,
            .gpu_limit = g->plim[i],
            .cpu_limit = ADM_UNLIMITED,
            .memory_limit = ADM_UNLIMITED,
            .jobs_limit = ADM_UNLIMITED,
            .gpu_hours_budget = ADM_UNLIMITED,
        };
    }
    for (size_t i = 0; i < s->ntenants && rnd(g, 2); i++) { /* a second, limited project */
        size_t p = s->nprojects++;
        for (size_t t = 0; t < MAXT; t++)
            g->plim[p][t] = maybe(g, 2, rnd(g, 6));
        struct adm_project *pr = &g->projects[p];
        pr->tenant = (int)i;
        pr->gpu_limit = g->plim[p];
        pr->cpu_limit = maybe(g, 3, 8 + rnd(g, 32));
        pr->memory_limit = ADM_UNLIMITED;
        pr->jobs_limit = maybe(g, 3, 1 + rnd(g, 3));
        pr->gpu_hours_budget = maybe(g, 6, 20);
        pr->gpu_hours_used = rnd(g, 30);
    }
    int cpu_used[MAXC] = {0}, mem_used[MAXC] = {0}, gpu_used[MAXC][MAXT] = {{0}};
    for (size_t k = 0, n = rnd(g, MAXA + 1); k < n; k++) { /* running jobs that fit */
        struct adm_job j = random_job(g, true);
        const struct adm_cluster *cl = &g->clusters[j.cluster];
        int *gu = j.gpu_type >= 0 ? &gpu_used[j.cluster][j.gpu_type] : NULL;
        if ((gu && *gu + j.gpus > cl->gpus[j.gpu_type]) ||
            (cl->cpus && cpu_used[j.cluster] + j.cpus > cl->cpus) ||
            (cl->memory_gib && mem_used[j.cluster] + j.memory_gib > cl->memory_gib))
            continue;
        if (gu)
            *gu += j.gpus;
        cpu_used[j.cluster] += j.cpus;
        mem_used[j.cluster] += j.memory_gib;
        g->active[s->nactive++] = j;
    }
    for (size_t k = 0, n = rnd(g, MAXQ + 1); k < n; k++)
        g->queued[s->nqueued++] = random_job(g, false);
    s->tenants = g->tenants;
    s->projects = g->projects;
    s->clusters = g->clusters;
    s->active = g->active;
    s->queued = g->queued;
    s->now = NOW;
    s->starvation_seconds = 3600;
    s->preempt_grace_seconds = 30;
    s->month_end = NOW + 100000;
}

static void dump_job(char tag, size_t i, const struct adm_job *j)
{
    fprintf(stderr,
            "  %c%zu tenant %d project %d type %d gpus %d cpus %d mem %d nodes %d prio %d "
            "sub %+.0f tl %d cluster %d%s%s\n",
            tag, i, j->tenant, j->project, j->gpu_type, j->gpus, j->cpus, j->memory_gib, j->nodes,
            j->priority, j->submitted - NOW, j->time_limit_s, j->cluster,
            j->preemptible ? " preemptible" : "", j->stopping ? " stopping" : "");
}

static void dump(const struct gen *g, const struct adm_result *r)
{
    const struct adm_snapshot *s = &g->s;
    for (size_t c = 0; c < s->nclusters; c++) {
        const struct adm_cluster *cl = &s->clusters[c];
        fprintf(stderr, "  c%zu cpus %d mem %d max_time %d max_nodes %d%s:", c, cl->cpus,
                cl->memory_gib, cl->max_time_limit_s, cl->max_nodes, cl->down ? " down" : "");
        for (size_t t = 0; t < s->ngpu_types; t++)
            fprintf(stderr, " %s=%d", s->gpu_types[t], cl->gpus[t]);
        fprintf(stderr, "\n");
    }
    for (size_t i = 0; i < s->ntenants; i++) {
        const struct adm_tenant *t = &s->tenants[i];
        fprintf(stderr, "  tenant %zu cpu %g mem %g jobs %g budget %g/%g%s:", i, t->cpu_limit,
                t->memory_limit, t->jobs_limit, t->gpu_hours_used, t->gpu_hours_budget,
                t->suspended ? " suspended" : "");
        for (size_t k = 0; k < s->ngpu_types; k++)
            fprintf(stderr, " %s=%g/%g", s->gpu_types[k], t->gpu[k].guaranteed, t->gpu[k].limit);
        fprintf(stderr, "\n");
    }
    for (size_t i = 0; i < s->nprojects; i++) {
        const struct adm_project *p = &s->projects[i];
        fprintf(stderr, "  project %zu tenant %d cpu %g jobs %g budget %g/%g:", i, p->tenant,
                p->cpu_limit, p->jobs_limit, p->gpu_hours_used, p->gpu_hours_budget);
        for (size_t k = 0; k < s->ngpu_types; k++)
            fprintf(stderr, " %s=%g", s->gpu_types[k], p->gpu_limit[k]);
        fprintf(stderr, "\n");
    }
    for (size_t a = 0; a < s->nactive; a++)
        dump_job('a', a, &s->active[a]);
    for (size_t q = 0; q < s->nqueued; q++)
        dump_job('q', q, &s->queued[q]);
    for (size_t d = 0; d < r->ndecisions; d++) {
        const struct adm_decision *x = &r->decisions[d];
        fprintf(stderr, "  -> %s %zu cluster %d%s for q%zu reason \"%s\" est %+.0f\n",
                x->kind == ADM_ADMIT  ? "ADMIT"
                : x->kind == ADM_WAIT ? "WAIT"
                                      : "PREEMPT",
                x->job, x->cluster, x->preemptible ? " preemptible" : "", x->for_job, x->reason,
                x->estimated_start != 0 ? x->estimated_start - NOW : 0);
    }
}

/* The first broken invariant of the current snapshot. */
static char broken[256];

__attribute__((format(printf, 2, 3))) static void expect(bool ok, const char *fmt, ...)
{
    if (ok || broken[0])
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(broken, sizeof broken, fmt, ap);
    va_end(ap);
}

/* Usage of one owner (tenant or project): GPUs per type, cores, memory, jobs. */
struct use {
    double gpus[MAXT], nonpre[MAXT], cpus, mem, jobs;
    bool admitted_any, admitted_gpu[MAXT], admitted_nonpre[MAXT];
};

static void add_use(struct use *u, const struct adm_job *j, bool preemptible)
{
    if (j->gpu_type >= 0) {
        u->gpus[j->gpu_type] += j->gpus;
        if (!preemptible)
            u->nonpre[j->gpu_type] += j->gpus;
    }
    u->cpus += j->cpus;
    u->mem += j->memory_gib;
    u->jobs += 1;
}

static bool within(double used, double limit)
{
    return limit < 0 || used <= limit + 1e-9;
}

static void check_limits(const struct adm_snapshot *s, const struct use *tu, const struct use *pu)
{
    for (size_t i = 0; i < s->ntenants; i++) {
        const struct adm_tenant *t = &s->tenants[i];
        const struct use *u = &tu[i];
        expect(!u->admitted_any || !t->suspended, "suspended tenant %zu admitted", i);
        for (size_t k = 0; k < s->ngpu_types; k++) {
            expect(!u->admitted_nonpre[k] || u->nonpre[k] <= t->gpu[k].guaranteed + 1e-9,
                   "tenant %zu type %zu: %g non-preemptible > guaranteed %g", i, k, u->nonpre[k],
                   t->gpu[k].guaranteed);
            expect(!u->admitted_gpu[k] || within(u->gpus[k], t->gpu[k].limit),
                   "tenant %zu type %zu: %g GPUs > limit %g", i, k, u->gpus[k], t->gpu[k].limit);
            expect(!u->admitted_gpu[k] || t->gpu_hours_budget < 0 ||
                       t->gpu_hours_used < t->gpu_hours_budget,
                   "tenant %zu past its budget admitted", i);
        }
        expect(!u->admitted_any ||
                   (within(u->cpus, t->cpu_limit) && within(u->mem, t->memory_limit) &&
                    within(u->jobs, t->jobs_limit)),
               "tenant %zu: cpu %g/%g mem %g/%g jobs %g/%g", i, u->cpus, t->cpu_limit, u->mem,
               t->memory_limit, u->jobs, t->jobs_limit);
    }
    for (size_t i = 0; i < s->nprojects; i++) {
        const struct adm_project *p = &s->projects[i];
        const struct use *u = &pu[i];
        for (size_t k = 0; k < s->ngpu_types; k++) {
            expect(!u->admitted_gpu[k] || within(u->gpus[k], p->gpu_limit[k]),
                   "project %zu type %zu: %g GPUs > limit %g", i, k, u->gpus[k], p->gpu_limit[k]);
            expect(!u->admitted_gpu[k] || p->gpu_hours_budget < 0 ||
                       p->gpu_hours_used < p->gpu_hours_budget,
                   "project %zu past its budget admitted", i);
        }
        expect(
            !u->admitted_any || (within(u->cpus, p->cpu_limit) && within(u->mem, p->memory_limit) &&
                                 within(u->jobs, p->jobs_limit)),
            "project %zu: cpu %g/%g jobs %g/%g", i, u->cpus, p->cpu_limit, u->jobs, p->jobs_limit);
    }
}

static bool cluster_may_run(const struct adm_snapshot *s, const struct adm_job *j, int c)
{
    const struct adm_cluster *cl = &s->clusters[c];
    return !cl->down && (j->cluster < 0 || j->cluster == c) &&
           (!cl->max_time_limit_s || j->time_limit_s <= cl->max_time_limit_s) &&
           (!cl->max_nodes || j->nodes <= cl->max_nodes);
}

static void check_invariants(const struct adm_snapshot *s, const struct adm_result *r)
{
    int decided[MAXQ] = {0}, preempted[MAXA] = {0};
    bool waits[MAXQ] = {false};
    int gpus[MAXC][MAXT] = {{0}}, cpus[MAXC] = {0}, mem[MAXC] = {0};
    struct use tu[MAXTN], pu[MAXP];
    memset(tu, 0, sizeof tu);
    memset(pu, 0, sizeof pu);
    for (size_t a = 0; a < s->nactive; a++) {
        const struct adm_job *j = &s->active[a];
        if (j->gpu_type >= 0)
            gpus[j->cluster][j->gpu_type] += j->gpus;
        cpus[j->cluster] += j->cpus;
        mem[j->cluster] += j->memory_gib;
        add_use(&tu[j->tenant], j, j->preemptible);
        add_use(&pu[j->project], j, j->preemptible);
    }
    for (size_t d = 0; d < r->ndecisions; d++) {
        const struct adm_decision *x = &r->decisions[d];
        if (x->kind == ADM_PREEMPT)
            continue;
        expect(x->job < s->nqueued && (x->kind == ADM_ADMIT || x->kind == ADM_WAIT),
               "decision %zu: kind %d job %zu", d, x->kind, x->job);
        if (x->job >= s->nqueued)
            continue;
        decided[x->job]++;
        const struct adm_job *j = &s->queued[x->job];
        if (x->kind == ADM_WAIT) {
            waits[x->job] = true;
            expect(x->reason[0] != '\0', "q%zu waits for no reason", x->job);
            continue;
        }
        expect(x->cluster >= 0 && (size_t)x->cluster < s->nclusters, "q%zu admitted to c%d", x->job,
               x->cluster);
        if (x->cluster < 0 || (size_t)x->cluster >= s->nclusters)
            continue;
        expect(cluster_may_run(s, j, x->cluster), "q%zu admitted to c%d, which may not run it",
               x->job, x->cluster);
        if (j->gpu_type >= 0)
            gpus[x->cluster][j->gpu_type] += j->gpus;
        cpus[x->cluster] += j->cpus;
        mem[x->cluster] += j->memory_gib;
        struct use *us[2] = {&tu[j->tenant], &pu[j->project]};
        for (int k = 0; k < 2; k++) {
            add_use(us[k], j, x->preemptible);
            us[k]->admitted_any = true;
            if (j->gpu_type >= 0) {
                us[k]->admitted_gpu[j->gpu_type] = true;
                us[k]->admitted_nonpre[j->gpu_type] |= !x->preemptible;
            }
        }
    }
    for (size_t q = 0; q < s->nqueued; q++)
        expect(decided[q] == 1, "q%zu has %d decisions", q, decided[q]);
    for (size_t c = 0; c < s->nclusters; c++) {
        const struct adm_cluster *cl = &s->clusters[c];
        for (size_t t = 0; t < s->ngpu_types; t++)
            expect(gpus[c][t] <= cl->gpus[t], "c%zu: %d %s GPUs in use of %d", c, gpus[c][t],
                   s->gpu_types[t], cl->gpus[t]);
        expect(!cl->cpus || cpus[c] <= cl->cpus, "c%zu: %d cores of %d", c, cpus[c], cl->cpus);
        expect(!cl->memory_gib || mem[c] <= cl->memory_gib, "c%zu: %d GiB of %d", c, mem[c],
               cl->memory_gib);
    }
    check_limits(s, tu, pu);
    for (size_t d = 0; d < r->ndecisions; d++) {
        const struct adm_decision *x = &r->decisions[d];
        if (x->kind != ADM_PREEMPT)
            continue;
        expect(x->job < s->nactive && x->for_job < s->nqueued, "preempt a%zu for q%zu", x->job,
               x->for_job);
        if (x->job >= s->nactive || x->for_job >= s->nqueued)
            continue;
        const struct adm_job *v = &s->active[x->job], *j = &s->queued[x->for_job];
        expect(v->preemptible && !v->stopping, "a%zu preempted: preemptible %d stopping %d", x->job,
               v->preemptible, v->stopping);
        expect(++preempted[x->job] == 1, "a%zu preempted twice", x->job);
        expect(waits[x->for_job], "a%zu preempted for q%zu, which does not wait", x->job,
               x->for_job);
        expect(v->gpu_type == j->gpu_type && j->gpu_type >= 0,
               "a%zu of type %d preempted for q%zu of type %d", x->job, v->gpu_type, x->for_job,
               j->gpu_type);
        expect(v->cluster == x->cluster && cluster_may_run(s, j, v->cluster),
               "a%zu on c%d preempted for q%zu on c%d", x->job, v->cluster, x->for_job, x->cluster);
    }
}

static bool same_decisions(const struct adm_result *a, const struct adm_result *b)
{
    if (a->ndecisions != b->ndecisions)
        return false;
    for (size_t k = 0; k < a->ndecisions; k++) {
        const struct adm_decision *x = &a->decisions[k], *y = &b->decisions[k];
        if (x->kind != y->kind || x->job != y->job || x->cluster != y->cluster ||
            x->preemptible != y->preemptible || x->for_job != y->for_job ||
            strcmp(x->reason, y->reason) != 0 || x->estimated_start != y->estimated_start)
            return false;
    }
    return true;
}

START_TEST(test_random_invariants)
{
    static struct gen g;
    static char first[320];
    size_t admitted = 0, waited = 0, preempts = 0, failed = 0;
    for (uint64_t run = 0; run < RUNS; run++) {
        generate(&g, run);
        struct adm_result r, again;
        admission_run(&g.s, &r);
        admission_run(&g.s, &again);
        broken[0] = '\0';
        check_invariants(&g.s, &r);
        expect(same_decisions(&r, &again), "equal snapshots, different decisions");
        if (broken[0]) {
            fprintf(stderr, "admission run %llu: %s\n", (unsigned long long)run, broken);
            if (!failed++) {
                snprintf(first, sizeof first, "run %llu: %s", (unsigned long long)run, broken);
                dump(&g, &r);
            }
        }
        for (size_t d = 0; d < r.ndecisions; d++) {
            admitted += r.decisions[d].kind == ADM_ADMIT;
            waited += r.decisions[d].kind == ADM_WAIT;
            preempts += r.decisions[d].kind == ADM_PREEMPT;
        }
        admission_result_free(&r);
        admission_result_free(&again);
    }
    ck_assert_msg(!failed, "%zu of %d runs broke an invariant, the first %s", failed, RUNS, first);
    /* the generator must exercise every kind of decision */
    ck_assert_msg(admitted > RUNS && waited > RUNS && preempts > 10,
                  "admitted %zu, waited %zu, preempted %zu", admitted, waited, preempts);
}
END_TEST

/* The invariants themselves catch what they claim to. */
START_TEST(test_invariants_catch)
{
    static struct gen g;
    generate(&g, 7);
    g.s.nqueued = 1;
    g.s.nactive = 0;
    g.queued[0] = (struct adm_job){.gpu_type = 0, .gpus = 1, .nodes = 1, .cluster = -1};
    g.clusters[0].gpus[0] = 0;
    struct adm_decision d = {.kind = ADM_ADMIT, .job = 0, .cluster = 0};
    struct adm_result r = {&d, 1};
    broken[0] = '\0';
    check_invariants(&g.s, &r);
    ck_assert_msg(strstr(broken, "GPUs in use") || strstr(broken, "may not run"), "%s", broken);
    d = (struct adm_decision){.kind = ADM_WAIT, .job = 0};
    broken[0] = '\0';
    check_invariants(&g.s, &r);
    ck_assert_str_eq(broken, "q0 waits for no reason");
}
END_TEST

int main(void)
{
    Suite *s = suite_create("admission_random");
    TCase *tc = tcase_create("invariants");
    tcase_add_test(tc, test_invariants_catch);
    tcase_add_test(tc, test_random_invariants);
    suite_add_tcase(s, tc);
    return suite_run(s);
}
