/*
 * admission_world.h - the table-driven tests of the admission decision
 * (sched/admission.h, a pure function), shared by test_admission.c (quotas,
 * borrowing, reclaim) and test_admission_rules.c (order, starvation,
 * budgets, placement, estimates): each row of `scenarios` describes a snapshot in a
 * compact form (GPU types, clusters, tenants, projects, active and queued
 * jobs) and the decisions expected for some of its jobs.
 *
 * Conventions of the rows:
 *  - quotas are "type=guaranteed/limit" ("a100=4/8"; "a100=4" is 4/4), project
 *    and cluster GPU counts "type=n"; cpu, mem, jobs and budget of 0 mean
 *    absent (unlimited);
 *  - jobs name their tenant, project, type, priority and cluster; NULL means
 *    the first tenant, the tenant's default project (named like the tenant),
 *    the first GPU type (or CPU-only when gpus is 0), normal priority, and any
 *    cluster for queued jobs (the first one for active jobs); a job list ends
 *    at the first row with neither gpus nor cpus;
 *  - sub/adm/end are seconds relative to NOW (end 0: a day from now); tl is
 *    the time limit (0: an hour);
 *  - expectations name a job ("q1": queued[1], "a0": active[0]) and what it
 *    gets: "admit c0" (guaranteed; "admit" alone: any cluster), "borrow c0"
 *    (admitted preemptible), "wait" (any reason), "wait REASON" (REASON
 *    exactly or followed by ":..."), an optional "@+100"/"@0"/"@month_end"
 *    for the estimated start, "preempt q0", "keep" (not preempted).
 * Every run also checks that each queued job gets exactly one ADMIT or WAIT
 * and that no active job is preempted unless a row expects it.
 *
 * The definitions are static: each of the two programs includes this once.
 */
#ifndef AIDC_TEST_ADMISSION_WORLD_H
#define AIDC_TEST_ADMISSION_WORLD_H

#include "sched/admission.h"
#include "tests/support/suite.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NOW       1000000.0
#define MONTH_END (NOW + 500000.0)
#define GRACE     30.0
#define MAXN      8

struct cspec {
    const char *name, *gpus;
    int cpus, mem, max_time, max_nodes;
    bool down;
};
struct tspec {
    const char *name, *gpus;
    double cpu, mem, jobs, budget, used;
    bool suspended;
};
struct pspec {
    const char *name, *tenant, *gpus;
    double cpu, mem, jobs, budget, used;
    int alloc;                      /* enum adm_alloc */
    double alloc_hours, alloc_used; /* alloc_hours 0: no GPU-hours granted (unlimited) */
};
struct jspec {
    const char *tenant, *project, *type, *prio, *cluster;
    int gpus, cpus, mem, nodes, tl;
    double sub, adm, end;
    bool pre, stop;
};
struct expect {
    const char *job, *want;
};
struct scenario {
    const char *name, *types;
    double starvation; /* 0: a day */
    struct cspec clusters[MAXN];
    struct tspec tenants[MAXN];
    struct pspec projects[MAXN];
    struct jspec active[MAXN], queued[MAXN];
    struct expect expect[MAXN];
};

/* The snapshot built from a scenario, with the storage it points into. */
struct world {
    const struct scenario *sc;
    char typebuf[128];
    const char *types[MAXN];
    int cgpus[MAXN][MAXN];
    struct adm_gpu_quota tq[MAXN][MAXN];
    double plim[2 * MAXN][MAXN];
    struct adm_cluster clusters[MAXN];
    struct adm_tenant tenants[MAXN];
    struct adm_project projects[2 * MAXN];
    struct adm_job queued[MAXN], active[MAXN];
    struct adm_snapshot s;
    struct adm_result r;
};

static double or_unlimited(double v)
{
    return v > 0 ? v : ADM_UNLIMITED;
}

static int type_index(const struct world *w, const char *name)
{
    for (size_t t = 0; t < w->s.ngpu_types; t++)
        if (strcmp(w->types[t], name) == 0)
            return (int)t;
    ck_abort_msg("%s: unknown GPU type %s", w->sc->name, name);
    return -1;
}

/* "a100=4/8 t4=2" into g[type] (and l[type]: the second number, or the first). */
static void parse_amounts(const struct world *w, const char *spec, double *g, double *l)
{
    const char *p = spec ? spec : "";
    while (*p) {
        char name[32];
        double a, b;
        int n = 0;
        if (*p == ' ') {
            p++;
            continue;
        }
        ck_assert_msg(sscanf(p, "%31[^=]=%lf%n", name, &a, &n) == 2, "bad amounts %s", spec);
        p += n;
        b = a;
        if (*p == '/') {
            ck_assert_msg(sscanf(p + 1, "%lf%n", &b, &n) == 1, "bad amounts %s", spec);
            p += 1 + n;
        }
        int t = type_index(w, name);
        g[t] = a;
        if (l)
            l[t] = b;
    }
}

static int tenant_index(const struct world *w, const char *name)
{
    for (size_t i = 0; name && i < w->s.ntenants; i++)
        if (strcmp(w->sc->tenants[i].name, name) == 0)
            return (int)i;
    ck_assert_msg(!name, "%s: unknown tenant %s", w->sc->name, name);
    return 0;
}

static int cluster_index(const struct world *w, const char *name, int dflt)
{
    for (size_t c = 0; name && c < w->s.nclusters; c++)
        if (strcmp(w->sc->clusters[c].name, name) == 0)
            return (int)c;
    ck_assert_msg(!name, "%s: unknown cluster %s", w->sc->name, name);
    return dflt;
}

static int project_index(const struct world *w, const char *name, int tenant)
{
    if (!name)
        return tenant; /* the tenant's default project */
    for (size_t i = w->s.ntenants; i < w->s.nprojects; i++)
        if (strcmp(w->sc->projects[i - w->s.ntenants].name, name) == 0)
            return (int)i;
    return tenant_index(w, name);
}

static struct adm_job make_job(const struct world *w, const struct jspec *js, bool active)
{
    struct adm_job j = {0};
    j.tenant = tenant_index(w, js->tenant);
    j.project = project_index(w, js->project, j.tenant);
    j.gpu_type = js->type ? type_index(w, js->type) : js->gpus > 0 ? 0 : -1;
    j.gpus = js->gpus;
    j.cpus = js->cpus;
    j.memory_gib = js->mem;
    j.nodes = js->nodes ? js->nodes : 1;
    j.priority = !js->prio                       ? ADM_NORMAL
                 : strcmp(js->prio, "high") == 0 ? ADM_HIGH
                 : strcmp(js->prio, "low") == 0  ? ADM_LOW
                                                 : ADM_NORMAL;
    j.submitted = NOW + js->sub;
    j.time_limit_s = js->tl ? js->tl : 3600;
    j.cluster = cluster_index(w, js->cluster, active ? 0 : -1);
    if (active) {
        j.preemptible = js->pre;
        j.stopping = js->stop;
        j.admitted = NOW + js->adm;
        j.expected_end = NOW + (js->end != 0 ? js->end : 86400);
    }
    return j;
}

static void build(struct world *w, const struct scenario *sc)
{
    memset(w, 0, sizeof *w);
    w->sc = sc;
    struct adm_snapshot *s = &w->s;
    snprintf(w->typebuf, sizeof w->typebuf, "%s", sc->types ? sc->types : "a100");
    for (char *p = w->typebuf; *p;) {
        w->types[s->ngpu_types++] = p;
        p += strcspn(p, " ");
        if (*p)
            *p++ = '\0';
    }
    s->gpu_types = w->types;
    for (size_t c = 0; c < MAXN && sc->clusters[c].name; c++, s->nclusters++) {
        double g[MAXN] = {0};
        parse_amounts(w, sc->clusters[c].gpus, g, NULL);
        for (size_t t = 0; t < s->ngpu_types; t++)
            w->cgpus[c][t] = (int)g[t];
        w->clusters[c] = (struct adm_cluster){.gpus = w->cgpus[c],
                                              .cpus = sc->clusters[c].cpus,
                                              .memory_gib = sc->clusters[c].mem,
                                              .max_time_limit_s = sc->clusters[c].max_time,
                                              .max_nodes = sc->clusters[c].max_nodes,
                                              .down = sc->clusters[c].down};
    }
    for (size_t i = 0; i < MAXN && sc->tenants[i].name; i++, s->ntenants++) {
        const struct tspec *ts = &sc->tenants[i];
        double g[MAXN] = {0}, l[MAXN] = {0};
        parse_amounts(w, ts->gpus, g, l);
        for (size_t t = 0; t < s->ngpu_types; t++)
            w->tq[i][t] = (struct adm_gpu_quota){g[t], l[t]};
        w->tenants[i] = (struct adm_tenant){.gpu = w->tq[i],
                                            .cpu_limit = or_unlimited(ts->cpu),
                                            .memory_limit = or_unlimited(ts->mem),
                                            .jobs_limit = or_unlimited(ts->jobs),
                                            .gpu_hours_budget = or_unlimited(ts->budget),
                                            .gpu_hours_used = ts->used,
                                            .suspended = ts->suspended};
    }
    s->nprojects = s->ntenants;
    for (size_t i = 0; i < s->ntenants; i++) { /* default projects, unlimited */
        for (size_t t = 0; t < MAXN; t++)
            w->plim[i][t] = ADM_UNLIMITED;
        w->projects[i] = (struct adm_project){.tenant = (int)i,
                                              .gpu_limit = w->plim[i],
                                              .cpu_limit = ADM_UNLIMITED,
                                              .memory_limit = ADM_UNLIMITED,
                                              .jobs_limit = ADM_UNLIMITED,
                                              .gpu_hours_budget = ADM_UNLIMITED};
    }
    for (size_t k = 0; k < MAXN && sc->projects[k].name; k++, s->nprojects++) {
        const struct pspec *ps = &sc->projects[k];
        size_t i = s->nprojects;
        for (size_t t = 0; t < MAXN; t++)
            w->plim[i][t] = ADM_UNLIMITED;
        parse_amounts(w, ps->gpus, w->plim[i], NULL);
        w->projects[i] = (struct adm_project){.tenant = tenant_index(w, ps->tenant),
                                              .slug = ps->name,
                                              .gpu_limit = w->plim[i],
                                              .cpu_limit = or_unlimited(ps->cpu),
                                              .memory_limit = or_unlimited(ps->mem),
                                              .jobs_limit = or_unlimited(ps->jobs),
                                              .gpu_hours_budget = or_unlimited(ps->budget),
                                              .gpu_hours_used = ps->used,
                                              .alloc = ps->alloc,
                                              .alloc_gpu_hours = or_unlimited(ps->alloc_hours),
                                              .alloc_gpu_hours_used = ps->alloc_used};
    }
    for (size_t a = 0; a < MAXN && (sc->active[a].gpus || sc->active[a].cpus); a++)
        w->active[s->nactive++] = make_job(w, &sc->active[a], true);
    for (size_t q = 0; q < MAXN && (sc->queued[q].gpus || sc->queued[q].cpus); q++)
        w->queued[s->nqueued++] = make_job(w, &sc->queued[q], false);
    s->tenants = w->tenants;
    s->projects = w->projects;
    s->clusters = w->clusters;
    s->queued = w->queued;
    s->active = w->active;
    s->now = NOW;
    s->starvation_seconds = sc->starvation > 0 ? sc->starvation : 86400;
    s->preempt_grace_seconds = GRACE;
    s->month_end = MONTH_END;
}

/* The ADMIT or WAIT decision of queued job q (exactly one must exist). */
static const struct adm_decision *queued_decision(const struct world *w, size_t q)
{
    const struct adm_decision *found = NULL;
    for (size_t i = 0; i < w->r.ndecisions; i++) {
        const struct adm_decision *d = &w->r.decisions[i];
        if (d->kind != ADM_PREEMPT && d->job == q) {
            ck_assert_msg(!found, "%s: q%zu decided twice", w->sc->name, q);
            found = d;
        }
    }
    ck_assert_msg(found != NULL, "%s: q%zu not decided", w->sc->name, q);
    return found;
}

/* The PREEMPT decision of active job a, or NULL. */
static const struct adm_decision *preemption(const struct world *w, size_t a)
{
    for (size_t i = 0; i < w->r.ndecisions; i++)
        if (w->r.decisions[i].kind == ADM_PREEMPT && w->r.decisions[i].job == a)
            return &w->r.decisions[i];
    return NULL;
}

static const char *describe(const struct world *w, const struct adm_decision *d)
{
    static char buf[160];
    if (!d)
        snprintf(buf, sizeof buf, "nothing");
    else if (d->kind == ADM_ADMIT)
        snprintf(buf, sizeof buf, "%s c%d", d->preemptible ? "borrow" : "admit", d->cluster);
    else if (d->kind == ADM_PREEMPT)
        snprintf(buf, sizeof buf, "preempt q%zu on c%d", d->for_job, d->cluster);
    else if (d->estimated_start == 0)
        snprintf(buf, sizeof buf, "wait %s @0", d->reason);
    else
        snprintf(buf, sizeof buf, "wait %s @%+.0f", d->reason, d->estimated_start - w->s.now);
    return buf;
}

static bool reason_matches(const char *got, const char *want)
{
    size_t n = strlen(want);
    return strncmp(got, want, n) == 0 && (got[n] == '\0' || got[n] == ':');
}

static void check_expect(const struct world *w, const struct expect *e)
{
    char verb[16] = "", arg[64] = "", at[32] = "";
    size_t idx = (size_t)atoi(e->job + 1);
    int n = sscanf(e->want, "%15s %63s %31s", verb, arg, at);
    if (n >= 2 && arg[0] == '@') { /* "wait @+100" */
        memcpy(at, arg, sizeof at);
        arg[0] = '\0';
    }
    if (e->job[0] == 'a') {
        ck_assert_msg(idx < w->s.nactive, "%s: no job %s", w->sc->name, e->job);
        const struct adm_decision *d = preemption(w, idx);
        bool want_preempt = strcmp(verb, "preempt") == 0;
        bool ok = want_preempt ? d && d->for_job == (size_t)atoi(arg + 1) : !d;
        ck_assert_msg(ok, "%s: %s: want %s, got %s", w->sc->name, e->job, e->want, describe(w, d));
        return;
    }
    ck_assert_msg(idx < w->s.nqueued, "%s: no job %s", w->sc->name, e->job);
    const struct adm_decision *d = queued_decision(w, idx);
    bool ok;
    if (strcmp(verb, "admit") == 0 || strcmp(verb, "borrow") == 0)
        ok = d->kind == ADM_ADMIT && d->preemptible == (verb[0] == 'b') &&
             (!arg[0] || d->cluster == cluster_index(w, arg, -1));
    else
        ok = d->kind == ADM_WAIT && (!arg[0] || reason_matches(d->reason, arg));
    if (ok && at[0]) {
        double want_at = strcmp(at, "@0") == 0           ? 0
                         : strcmp(at, "@month_end") == 0 ? MONTH_END
                                                         : NOW + atof(at + 1);
        ok = d->estimated_start - want_at < 1e-6 && want_at - d->estimated_start < 1e-6;
    }
    ck_assert_msg(ok, "%s: %s: want %s, got %s", w->sc->name, e->job, e->want, describe(w, d));
}

static void run_scenario(struct world *w, const struct scenario *sc)
{
    build(w, sc);
    admission_run(&w->s, &w->r);
    for (size_t q = 0; q < w->s.nqueued; q++) {
        const struct adm_decision *d = queued_decision(w, q);
        ck_assert_msg(d->kind != ADM_WAIT || d->reason[0], "%s: q%zu waits for no reason", sc->name,
                      q);
    }
    for (size_t i = 0; i < w->r.ndecisions; i++) { /* no preemption unless expected */
        const struct adm_decision *d = &w->r.decisions[i];
        if (d->kind != ADM_PREEMPT)
            continue;
        char name[16];
        snprintf(name, sizeof name, "a%zu", d->job);
        bool expected = false;
        for (size_t k = 0; k < MAXN && sc->expect[k].job; k++)
            expected |= strcmp(sc->expect[k].job, name) == 0 &&
                        strncmp(sc->expect[k].want, "preempt", 7) == 0;
        ck_assert_msg(expected, "%s: %s: unexpected %s", sc->name, name, describe(w, d));
    }
    for (size_t k = 0; k < MAXN && sc->expect[k].job; k++)
        check_expect(w, &sc->expect[k]);
}

/* Rows of the tables: positional name and amounts, then any designated extras. */
// clang-format off
#define CL(n, g, ...)    {.name = (n), .gpus = (g), __VA_ARGS__}
#define TN(n, g, ...)    {.name = (n), .gpus = (g), __VA_ARGS__}
#define PJ(n, t, g, ...) {.name = (n), .tenant = (t), .gpus = (g), __VA_ARGS__}
// clang-format on

/* The usual cast: a tenant with a guarantee, a borrower, and one whose jobs fill clusters. */
#define GOLD_ACME TN("gold", "a100=8/8"), TN("acme", "a100=0/16"), TN("busy", "a100=16/16")

/* Equal inputs, equal decisions: every scenario twice. */
static void check_deterministic(const struct scenario *scenarios, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        struct world a, b;
        build(&a, &scenarios[i]);
        build(&b, &scenarios[i]);
        admission_run(&a.s, &a.r);
        admission_run(&b.s, &b.r);
        ck_assert_uint_eq(a.r.ndecisions, b.r.ndecisions);
        for (size_t k = 0; k < a.r.ndecisions; k++) {
            const struct adm_decision *x = &a.r.decisions[k], *y = &b.r.decisions[k];
            ck_assert_msg(x->kind == y->kind && x->job == y->job && x->cluster == y->cluster &&
                              x->preemptible == y->preemptible && x->for_job == y->for_job &&
                              strcmp(x->reason, y->reason) == 0 &&
                              x->estimated_start == y->estimated_start,
                          "%s: decision %zu differs", scenarios[i].name, k);
        }
        admission_result_free(&a.r);
        admission_result_free(&b.r);
    }
}

#endif
