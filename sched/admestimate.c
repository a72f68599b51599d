/* admestimate.c - estimated starts of waiting jobs (see admestimate.h). */
#include "admestimate.h"

#include "../lib/xalloc.h"

#include <stdlib.h>
#include <string.h>

/* A running job's end: when, and how much of a resource it gives back. */
struct event {
    double at, amount;
};

static int by_time(const void *a, const void *b)
{
    const struct event *x = a, *y = b;
    return x->at < y->at ? -1 : x->at > y->at;
}

/* What j holds of dimension dim: GPUs of type dim (>= 0), cores, GiB or one job. */
enum { DIM_CPU = -1, DIM_MEM = -2, DIM_JOBS = -3 };

static double amount(const struct adm_job *j, int dim)
{
    switch (dim) {
    case DIM_CPU:
        return j->cpus;
    case DIM_MEM:
        return j->memory_gib;
    case DIM_JOBS:
        return 1;
    default:
        return j->gpu_type == dim ? j->gpus : 0;
    }
}

/* Which jobs an event list is about: all (owner -1), a tenant's or a project's. */
struct whose {
    int owner, project; /* project: owner is a project index, else a tenant index */
};

static bool theirs(const struct adm_job *j, const struct whose *w)
{
    return w->owner < 0 || (w->project ? j->project : j->tenant) == w->owner;
}

/*
 * The ends, in time order, of the jobs holding dim for w: those running (a
 * stopping one or a victim ends within the grace period), and those admitted
 * or reclaiming in this pass (they start now, or after the grace period).
 * skip_releasing: leave out what is being released (capacity counts it free).
 */
static struct event *ends(const struct adm_snapshot *s, const struct adm_usage *u,
                          const struct adm_result *r, const struct whose *w, int dim,
                          bool skip_releasing, size_t *n)
{
    struct event *ev = xmalloc((s->nactive + r->ndecisions + 1) * sizeof *ev);
    *n = 0;
    for (size_t a = 0; a < s->nactive; a++) {
        const struct adm_job *j = &s->active[a];
        bool releasing = u->victim[a] || j->stopping;
        double x = amount(j, dim);
        if (x <= 0 || !theirs(j, w) || (releasing && skip_releasing))
            continue;
        ev[*n].at = releasing ? s->now + s->preempt_grace_seconds : j->expected_end;
        ev[(*n)++].amount = x;
    }
    for (size_t d = 0; d < r->ndecisions; d++) {
        const struct adm_decision *dc = &r->decisions[d];
        bool reclaiming = dc->kind == ADM_WAIT && strncmp(dc->reason, "reclaim:", 8) == 0;
        if (dc->kind != ADM_ADMIT && !reclaiming)
            continue;
        const struct adm_job *j = &s->queued[dc->job];
        double x = amount(j, dim);
        if (x <= 0 || !theirs(j, w))
            continue;
        ev[*n].at = s->now + (reclaiming ? s->preempt_grace_seconds : 0) + j->time_limit_s;
        ev[(*n)++].amount = x;
    }
    qsort(ev, *n, sizeof *ev, by_time);
    return ev;
}

/* A replay: what is free now, and the ends that free more, taken in order. */
struct replay {
    struct event *ev;
    size_t n, e;
    double freed, when, need;
    bool lost; /* needed more than will ever be freed: unknown from here on */
};

/* The moment `need` more is free (0: never); need accumulates over the queue. */
static double replay_until(struct replay *rp, double need, double now)
{
    if (rp->lost)
        return 0;
    rp->need += need;
    while (rp->freed < rp->need - 1e-9 && rp->e < rp->n) {
        rp->freed += rp->ev[rp->e].amount;
        rp->when = rp->ev[rp->e++].at;
    }
    if (rp->freed < rp->need - 1e-9) {
        rp->lost = true;
        return 0;
    }
    return rp->when > now ? rp->when : now;
}

static size_t *wait_index(const struct adm_snapshot *s, const struct adm_result *r)
{
    size_t *at = xmalloc((s->nqueued + 1) * sizeof *at);
    for (size_t q = 0; q < s->nqueued; q++)
        at[q] = (size_t)-1;
    for (size_t d = 0; d < r->ndecisions; d++)
        if (r->decisions[d].kind == ADM_WAIT)
            at[r->decisions[d].job] = d;
    return at;
}

/* Capacity waits (and starvation holds) of each GPU type. */
static void capacity(const struct adm_snapshot *s, const struct adm_usage *u, const size_t *order,
                     const size_t *wait_at, struct adm_result *r)
{
    size_t nt = s->ngpu_types;
    for (size_t g = 0; g < nt; g++) {
        struct whose all = {.owner = -1};
        struct replay rp = {0};
        rp.ev = ends(s, u, r, &all, (int)g, true, &rp.n);
        for (size_t c = 0; c < s->nclusters; c++)
            if (!s->clusters[c].down)
                rp.freed += u->free[c * nt + g] + u->releasing[c * nt + g];
        rp.when = s->now;
        for (size_t k = 0; k < s->nqueued; k++) {
            size_t ji = order[k];
            if (s->queued[ji].gpu_type != (int)g || wait_at[ji] == (size_t)-1)
                continue;
            struct adm_decision *d = &r->decisions[wait_at[ji]];
            if (strncmp(d->reason, "capacity:gpu:", 13) == 0 ||
                strncmp(d->reason, "starvation", 10) == 0)
                d->estimated_start = replay_until(&rp, s->queued[ji].gpus, s->now);
        }
        free(rp.ev);
    }
}

/* One owner's limit on one dimension, replayed for the jobs waiting on it. */
struct quota {
    struct whose w;
    int dim;
    struct replay rp;
};

/* The owner and dimension a quota wait names; false when it names none. */
static bool parse(const struct adm_snapshot *s, const struct adm_decision *d,
                  const struct adm_job *j, struct whose *w, int *dim)
{
    const char *what;
    if (strncmp(d->reason, "quota:", 6) == 0) {
        *w = (struct whose){.owner = j->tenant, .project = 0};
        what = d->reason + 6;
    } else if (strncmp(d->reason, "project-quota:", 14) == 0) {
        *w = (struct whose){.owner = j->project, .project = 1};
        what = d->reason + 14;
    } else {
        return false;
    }
    if (strcmp(what, "cpu") == 0)
        *dim = DIM_CPU;
    else if (strcmp(what, "memory_gib") == 0)
        *dim = DIM_MEM;
    else if (strcmp(what, "jobs") == 0)
        *dim = DIM_JOBS;
    else if (strncmp(what, "gpu:", 4) == 0 && j->gpu_type >= 0 &&
             strcmp(what + 4, s->gpu_types[j->gpu_type]) == 0)
        *dim = j->gpu_type;
    else
        return false;
    return true;
}

/* What the owner may hold of dim, and holds now (with this pass's admissions). */
static void limit_of(const struct adm_snapshot *s, const struct adm_usage *u,
                     const struct quota *q, double *limit, double *used)
{
    size_t o = (size_t)q->w.owner, nt = s->ngpu_types;
    if (q->w.project) {
        const struct adm_project *p = &s->projects[o];
        const double lim[] = {p->cpu_limit, p->memory_limit, p->jobs_limit};
        const double use[] = {u->p_cpu[o], u->p_mem[o], u->p_jobs[o]};
        *limit = q->dim >= 0 ? p->gpu_limit[q->dim] : lim[-q->dim - 1];
        *used = q->dim >= 0 ? u->p_used[o * nt + (size_t)q->dim] : use[-q->dim - 1];
    } else {
        const struct adm_tenant *t = &s->tenants[o];
        const double lim[] = {t->cpu_limit, t->memory_limit, t->jobs_limit};
        const double use[] = {u->t_cpu[o], u->t_mem[o], u->t_jobs[o]};
        *limit = q->dim >= 0 ? t->gpu[q->dim].limit : lim[-q->dim - 1];
        *used = q->dim >= 0 ? u->t_used[o * nt + (size_t)q->dim] : use[-q->dim - 1];
    }
}

/* Quota waits: each owner's limit replayed over its own jobs' ends. */
static void quotas(const struct adm_snapshot *s, const struct adm_usage *u, const size_t *order,
                   const size_t *wait_at, struct adm_result *r)
{
    struct quota *qs = NULL;
    size_t nq = 0, cap = 0;
    for (size_t k = 0; k < s->nqueued; k++) {
        size_t ji = order[k];
        if (wait_at[ji] == (size_t)-1)
            continue;
        struct adm_decision *d = &r->decisions[wait_at[ji]];
        const struct adm_job *j = &s->queued[ji];
        struct whose w;
        int dim;
        if (!parse(s, d, j, &w, &dim))
            continue;
        size_t i = 0;
        while (i < nq && !(qs[i].w.owner == w.owner && qs[i].w.project == w.project &&
                           qs[i].dim == dim))
            i++;
        if (i == nq) { /* first job waiting on this limit: what is free of it now */
            if (nq == cap) {
                cap = cap ? cap * 2 : 16;
                qs = xreallocarray(qs, cap, sizeof *qs);
            }
            memset(&qs[nq], 0, sizeof qs[nq]);
            qs[nq].w = w;
            qs[nq].dim = dim;
            double limit, used;
            limit_of(s, u, &qs[nq], &limit, &used);
            qs[nq].rp.ev = ends(s, u, r, &w, dim, false, &qs[nq].rp.n);
            qs[nq].rp.freed = limit < 0 ? 1e18 : limit - used;
            qs[nq].rp.when = s->now;
            nq++;
        }
        d->estimated_start = replay_until(&qs[i].rp, amount(j, dim), s->now);
    }
    for (size_t i = 0; i < nq; i++)
        free(qs[i].rp.ev);
    free(qs);
}

void admestimate_run(const struct adm_snapshot *s, const struct adm_usage *u, const size_t *order,
                     struct adm_result *r)
{
    size_t *wait_at = wait_index(s, r);
    capacity(s, u, order, wait_at, r);
    quotas(s, u, order, wait_at, r);
    free(wait_at);
}

double admestimate_first_start(double free_now, const double *at, const double *amount, size_t n,
                               double ahead, double need, double now)
{
    struct replay rp = {.n = n, .freed = free_now, .when = now};
    rp.ev = xmalloc((n + 1) * sizeof *rp.ev);
    for (size_t i = 0; i < n; i++)
        rp.ev[i] = (struct event){.at = at[i], .amount = amount[i]};
    qsort(rp.ev, n, sizeof *rp.ev, by_time);
    double t = ahead > 0 ? replay_until(&rp, ahead, now) : now;
    if (t > 0)
        t = replay_until(&rp, need, now);
    free(rp.ev);
    return t;
}
