/*
 * admission.c - the admission decision (see admission.h for the rules).
 *
 * Two passes over the queue in priority order. Pass 1 serves work that fits
 * its tenant's guarantee (and CPU-only work): place it, or reclaim borrowed
 * GPUs for it, or record why it waits. Pass 2 lends what pass 1 left idle to
 * work beyond the guarantee, as preemptible. Counters of use per tenant,
 * project and cluster are kept in flat arrays indexed [owner * ntypes + type].
 */
#include "admission.h"

#include "admestimate.h"

#include "../lib/xalloc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct state {
    const struct adm_snapshot *s;
    size_t nt;
    int *free;          /* [cluster][type] GPUs free now */
    int *releasing;     /* [cluster][type] GPUs of stopping jobs, not yet promised */
    int *cpu_free, *mem_free; /* [cluster], INT_MAX-like when not limited */
    double *t_used, *t_nonpre; /* [tenant][type] */
    double *t_cpu, *t_mem, *t_jobs;
    double *p_used;     /* [project][type] */
    double *p_cpu, *p_mem, *p_jobs;
    double *needed_g;   /* [type] GPUs that waiting guaranteed work needs */
    bool *hold;         /* [type + 1]: starvation hold (index nt: CPU-only jobs) */
    bool *victim;       /* [nactive] chosen for preemption in this pass */
    char *done;         /* [nqueued] decided in pass 1 */
    char *cleared;      /* [nqueued] passed the quota checks */
    struct adm_result *out;
    size_t cap;
};

#define UNLIMITED_CAP 0x3fffffff

static int prio_order(const void *a, const void *b, const struct adm_job *q)
{
    const struct adm_job *x = &q[*(const size_t *)a], *y = &q[*(const size_t *)b];
    if (x->priority != y->priority)
        return y->priority - x->priority;
    if (x->submitted != y->submitted)
        return x->submitted < y->submitted ? -1 : 1;
    return *(const size_t *)a < *(const size_t *)b ? -1 : 1;
}

/* qsort has no context argument in C11: sort indices with a small merge sort. */
static void sort_queue(size_t *idx, size_t n, const struct adm_job *q)
{
    if (n < 2)
        return;
    size_t *tmp = xmalloc(n * sizeof *tmp);
    for (size_t width = 1; width < n; width *= 2) {
        for (size_t lo = 0; lo < n; lo += 2 * width) {
            size_t mid = lo + width < n ? lo + width : n;
            size_t hi = lo + 2 * width < n ? lo + 2 * width : n;
            size_t i = lo, j = mid, k = lo;
            while (i < mid && j < hi)
                tmp[k++] = prio_order(&idx[i], &idx[j], q) <= 0 ? idx[i++] : idx[j++];
            while (i < mid)
                tmp[k++] = idx[i++];
            while (j < hi)
                tmp[k++] = idx[j++];
        }
        memcpy(idx, tmp, n * sizeof *idx);
    }
    free(tmp);
}

static struct adm_decision *emit(struct state *st, int kind, size_t job)
{
    struct adm_result *r = st->out;
    if (r->ndecisions == st->cap) {
        st->cap = st->cap ? st->cap * 2 : 64;
        r->decisions = xreallocarray(r->decisions, st->cap, sizeof *r->decisions);
    }
    struct adm_decision *d = &r->decisions[r->ndecisions++];
    memset(d, 0, sizeof *d);
    d->kind = kind;
    d->job = job;
    d->cluster = -1;
    return d;
}

/* Record that job j waits, for reason prefix+what ("quota:gpu:" "a100"). */
static void wait_for(struct state *st, size_t j, const char *prefix, const char *what, double est)
{
    struct adm_decision *d = emit(st, ADM_WAIT, j);
    snprintf(d->reason, sizeof d->reason, "%s%s", prefix, what ? what : "");
    d->estimated_start = est;
}

static bool over(double used, double add, double limit)
{
    return limit >= 0 && used + add > limit + 1e-9;
}

/* The quota and budget checks every job passes before capacity matters. */
static bool within_limits(struct state *st, size_t ji)
{
    const struct adm_snapshot *s = st->s;
    const struct adm_job *j = &s->queued[ji];
    const struct adm_tenant *t = &s->tenants[j->tenant];
    const struct adm_project *p = &s->projects[j->project];
    const char *type = j->gpu_type >= 0 ? s->gpu_types[j->gpu_type] : NULL;
    size_t tt = (size_t)j->tenant * st->nt, pp = (size_t)j->project * st->nt;
    if (t->suspended) {
        wait_for(st, ji, "tenant-suspended", NULL, 0);
        return false;
    }
    if (p->alloc == ADM_ALLOC_EXPIRED) {
        wait_for(st, ji, "allocation:expired", NULL, 0);
        return false;
    }
    if (j->gpu_type >= 0) {
        double lim = t->gpu[j->gpu_type].limit;
        if (over(st->t_used[tt + (size_t)j->gpu_type], j->gpus, lim)) {
            wait_for(st, ji, "quota:gpu:", type, 0);
            return false;
        }
        if (over(st->p_used[pp + (size_t)j->gpu_type], j->gpus, p->gpu_limit[j->gpu_type])) {
            wait_for(st, ji, "project-quota:gpu:", type, 0);
            return false;
        }
    }
    static const char *const names[] = {"cpu", "memory_gib", "jobs"};
    double need[3] = {j->cpus, j->memory_gib, 1};
    double tused[3] = {st->t_cpu[j->tenant], st->t_mem[j->tenant], st->t_jobs[j->tenant]};
    double tlim[3] = {t->cpu_limit, t->memory_limit, t->jobs_limit};
    double pused[3] = {st->p_cpu[j->project], st->p_mem[j->project], st->p_jobs[j->project]};
    double plim[3] = {p->cpu_limit, p->memory_limit, p->jobs_limit};
    for (int k = 0; k < 3; k++) {
        if (over(tused[k], need[k], tlim[k])) {
            wait_for(st, ji, "quota:", names[k], 0);
            return false;
        }
        if (over(pused[k], need[k], plim[k])) {
            wait_for(st, ji, "project-quota:", names[k], 0);
            return false;
        }
    }
    if (j->gpus > 0 && t->gpu_hours_budget >= 0 &&
        t->gpu_hours_used >= t->gpu_hours_budget - 1e-9) {
        wait_for(st, ji, "budget:tenant", NULL, s->month_end);
        return false;
    }
    if (j->gpus > 0 && p->gpu_hours_budget >= 0 &&
        p->gpu_hours_used >= p->gpu_hours_budget - 1e-9) {
        wait_for(st, ji, p->slug ? "budget:project:" : "budget:project", p->slug, s->month_end);
        return false;
    }
    if (j->gpus > 0 && p->alloc == ADM_ALLOC_ACTIVE && p->alloc_gpu_hours >= 0 &&
        p->alloc_gpu_hours_used >= p->alloc_gpu_hours - 1e-9) {
        wait_for(st, ji, "allocation:gpu_hours", NULL, 0);
        return false;
    }
    return true;
}

/* Whether cluster c could ever run j (up or not). */
static bool cluster_fits(const struct state *st, const struct adm_job *j, size_t c)
{
    const struct adm_cluster *cl = &st->s->clusters[c];
    if (j->cluster >= 0 && (size_t)j->cluster != c)
        return false;
    if (cl->max_time_limit_s && j->time_limit_s > cl->max_time_limit_s)
        return false;
    if (cl->max_nodes && j->nodes > cl->max_nodes)
        return false;
    if (j->gpu_type >= 0 && cl->gpus[j->gpu_type] < j->gpus)
        return false; /* could never fit there */
    return true;
}

static bool cluster_allows(const struct state *st, const struct adm_job *j, size_t c)
{
    return !st->s->clusters[c].down && cluster_fits(st, j, c);
}

/* The fitting cluster with the least room left after placing j (best fit
 * keeps large holes for large jobs), or -1. */
static int place(const struct state *st, const struct adm_job *j)
{
    int best = -1, best_left = 0;
    for (size_t c = 0; c < st->s->nclusters; c++) {
        if (!cluster_allows(st, j, c) || st->cpu_free[c] < j->cpus ||
            st->mem_free[c] < j->memory_gib)
            continue;
        int left = j->gpu_type >= 0 ? st->free[c * st->nt + (size_t)j->gpu_type] - j->gpus
                                    : st->cpu_free[c] - j->cpus;
        if (left < 0)
            continue;
        if (best < 0 || left < best_left) {
            best = (int)c;
            best_left = left;
        }
    }
    return best;
}

/*
 * Why j does not fit now: GPUs of its type, or - when some cluster has the
 * GPUs free - cores or memory there.
 */
static void wait_capacity(struct state *st, size_t ji)
{
    const struct adm_job *j = &st->s->queued[ji];
    bool gpus_free = false, cpu_short = false;
    for (size_t c = 0; c < st->s->nclusters; c++) {
        if (!cluster_allows(st, j, c))
            continue;
        if (j->gpu_type >= 0 && st->free[c * st->nt + (size_t)j->gpu_type] < j->gpus)
            continue;
        gpus_free = true;
        cpu_short |= st->cpu_free[c] < j->cpus;
    }
    if (gpus_free)
        wait_for(st, ji, "capacity:", cpu_short ? "cpu" : "memory_gib", 0);
    else
        wait_for(st, ji, "capacity:gpu:", st->s->gpu_types[j->gpu_type], 0);
}

/* Count j against its tenant's and project's quotas. */
static void count_quota(struct state *st, const struct adm_job *j, bool preemptible)
{
    size_t tt = (size_t)j->tenant * st->nt, pp = (size_t)j->project * st->nt;
    if (j->gpu_type >= 0) {
        size_t g = (size_t)j->gpu_type;
        st->t_used[tt + g] += j->gpus;
        st->p_used[pp + g] += j->gpus;
        if (!preemptible)
            st->t_nonpre[tt + g] += j->gpus;
    }
    st->t_cpu[j->tenant] += j->cpus;
    st->t_mem[j->tenant] += j->memory_gib;
    st->t_jobs[j->tenant] += 1;
    st->p_cpu[j->project] += j->cpus;
    st->p_mem[j->project] += j->memory_gib;
    st->p_jobs[j->project] += 1;
}

/* Place j on cluster c: its capacity and its quotas. */
static void take(struct state *st, const struct adm_job *j, size_t c, bool preemptible)
{
    if (j->gpu_type >= 0)
        st->free[c * st->nt + (size_t)j->gpu_type] -= j->gpus;
    st->cpu_free[c] -= j->cpus;
    st->mem_free[c] -= j->memory_gib;
    count_quota(st, j, preemptible);
}

static void admit(struct state *st, size_t ji, int c, bool preemptible)
{
    take(st, &st->s->queued[ji], (size_t)c, preemptible);
    struct adm_decision *d = emit(st, ADM_ADMIT, ji);
    d->cluster = c;
    d->preemptible = preemptible;
}

/* Victim order: lowest priority first, then newest first. */
static int victim_order(const struct adm_job *a, const struct adm_job *b)
{
    if (a->priority != b->priority)
        return a->priority - b->priority;
    if (a->admitted != b->admitted)
        return a->admitted > b->admitted ? -1 : 1;
    return 0;
}

/* The sum of the m largest gpus of active jobs idx[from..n). */
static int largest_sum(const struct adm_snapshot *s, const size_t *idx, size_t from, size_t n,
                       size_t m, int *tmp)
{
    size_t k = 0;
    for (size_t i = from; i < n; i++)
        tmp[k++] = s->active[idx[i]].gpus;
    int sum = 0;
    for (size_t t = 0; t < m && t < k; t++) { /* partial selection: m is small */
        size_t best = t;
        for (size_t i = t + 1; i < k; i++)
            if (tmp[i] > tmp[best])
                best = i;
        int x = tmp[t];
        tmp[t] = tmp[best];
        tmp[best] = x;
        sum += tmp[t];
    }
    return sum;
}

/*
 * Choose on cluster c the borrowed jobs to preempt for `need` GPUs beyond
 * `have`: as few jobs as possible, and among sets of that size the one
 * taking the lowest-priority, newest jobs first. Returns how many were
 * chosen into vict (0 when impossible).
 */
static size_t choose_victims(struct state *st, size_t c, int type, int need, int have,
                             size_t *vict)
{
    const struct adm_snapshot *s = st->s;
    size_t n = 0;
    for (size_t a = 0; a < s->nactive; a++) {
        const struct adm_job *v = &s->active[a];
        if (v->preemptible && !v->stopping && !st->victim[a] && v->gpu_type == type &&
            v->cluster >= 0 && (size_t)v->cluster == c)
            vict[n++] = a;
    }
    for (size_t i = 1; i < n; i++) { /* insertion sort: few candidates per cluster */
        size_t x = vict[i], k = i;
        while (k > 0 && victim_order(&s->active[x], &s->active[vict[k - 1]]) < 0) {
            vict[k] = vict[k - 1];
            k--;
        }
        vict[k] = x;
    }
    int *tmp = xmalloc((n + 1) * sizeof *tmp);
    size_t k = 0; /* the fewest jobs that can free enough: the largest ones */
    while (k < n && have + largest_sum(s, vict, 0, n, k, tmp) < need)
        k++;
    if (have + largest_sum(s, vict, 0, n, k, tmp) < need) {
        free(tmp);
        return 0;
    }
    /* k of them, in victim order, each taken if the rest can still make up the need */
    size_t used = 0;
    int got = have;
    for (size_t i = 0; i < n && used < k; i++) {
        int g = s->active[vict[i]].gpus;
        if (got + g + largest_sum(s, vict, i + 1, n, k - used - 1, tmp) >= need) {
            vict[used++] = vict[i];
            got += g;
        }
    }
    free(tmp);
    return used;
}

/*
 * Reclaim borrowed GPUs of type for queued job ji: first from GPUs already
 * being released, else by preempting. True when the job will get them.
 * *for_gpus is true when it failed for want of GPUs alone (not cores or
 * memory): then larger jobs of the type fail too.
 */
static bool reclaim(struct state *st, size_t ji, bool *for_gpus)
{
    const struct adm_snapshot *s = st->s;
    const struct adm_job *j = &s->queued[ji];
    size_t g = (size_t)j->gpu_type;
    size_t *vict = xmalloc((s->nactive + 1) * sizeof *vict);
    size_t *best = xmalloc((s->nactive + 1) * sizeof *best);
    size_t nbest = 0;
    int best_c = -1;
    bool ok = false;
    *for_gpus = true;
    for (size_t c = 0; c < s->nclusters && !ok; c++) {
        if (!cluster_allows(st, j, c))
            continue;
        int fr = st->free[c * st->nt + g], rel = st->releasing[c * st->nt + g];
        if (fr + rel >= j->gpus) { /* enough is on its way already */
            if (fr >= j->gpus) {
                *for_gpus = false; /* the GPUs are free: cores or memory are missing */
                continue;
            }
            st->releasing[c * st->nt + g] -= j->gpus - fr;
            st->free[c * st->nt + g] = 0;
            ok = true;
            break;
        }
        size_t n = choose_victims(st, c, j->gpu_type, j->gpus, fr + rel, vict);
        if (n && (best_c < 0 || n < nbest)) {
            best_c = (int)c;
            nbest = n;
            memcpy(best, vict, n * sizeof *best);
        }
    }
    if (!ok && best_c >= 0) {
        size_t c = (size_t)best_c;
        int got = st->free[c * st->nt + g] + st->releasing[c * st->nt + g];
        for (size_t i = 0; i < nbest; i++) {
            st->victim[best[i]] = true;
            got += s->active[best[i]].gpus;
            struct adm_decision *d = emit(st, ADM_PREEMPT, best[i]);
            d->for_job = ji;
            d->cluster = best_c;
        }
        /* what the victims free beyond this job's need stays promised to nobody */
        st->free[c * st->nt + g] = 0;
        st->releasing[c * st->nt + g] = got - j->gpus;
        ok = true;
    }
    free(vict);
    free(best);
    return ok;
}

static bool starving(const struct state *st, const struct adm_job *j)
{
    return st->s->starvation_seconds > 0 && st->s->now - j->submitted > st->s->starvation_seconds;
}

static size_t hold_slot(const struct state *st, const struct adm_job *j)
{
    return j->gpu_type >= 0 ? (size_t)j->gpu_type : st->nt;
}

static bool within_guarantee(const struct state *st, const struct adm_job *j)
{
    if (j->gpu_type < 0)
        return true; /* CPU-only work borrows nothing */
    size_t tt = (size_t)j->tenant * st->nt + (size_t)j->gpu_type;
    return st->t_nonpre[tt] + j->gpus <= st->s->tenants[j->tenant].gpu[j->gpu_type].guaranteed + 1e-9;
}

/*
 * Whether some cluster could ever run j: 2 when one that is up could, 1 when
 * only one that is down could, 0 when none (its time limit, nodes or size
 * fit no cluster). Such a job must not hold capacity others could use.
 */
static int could_run(const struct state *st, const struct adm_job *j)
{
    int best = 0;
    for (size_t c = 0; c < st->s->nclusters && best < 2; c++)
        if (cluster_fits(st, j, c))
            best = st->s->clusters[c].down ? 1 : 2;
    return best;
}

/* A reclaim that failed: later jobs as large or larger fail as well. */
struct reclaim_miss {
    int gpus, time_limit_s, nodes;
};

static bool reclaim_hopeless(const struct reclaim_miss *m, const struct adm_job *j)
{
    return j->cluster < 0 && m->gpus > 0 && j->gpus >= m->gpus &&
           j->time_limit_s >= m->time_limit_s && j->nodes >= m->nodes;
}

static void pass_guaranteed(struct state *st, const size_t *order)
{
    const struct adm_snapshot *s = st->s;
    struct reclaim_miss *miss = xcalloc(st->nt + 1, sizeof *miss);
    for (size_t k = 0; k < s->nqueued; k++) {
        size_t ji = order[k];
        const struct adm_job *j = &s->queued[ji];
        if (!within_limits(st, ji)) {
            st->done[ji] = 1;
            continue;
        }
        int where = could_run(st, j);
        if (where < 2) {
            wait_for(st, ji, where == 1 ? "cluster-down" : "no-cluster-fits", NULL, 0);
            st->done[ji] = 1;
            continue;
        }
        st->cleared[ji] = 1;
        if (!within_guarantee(st, j))
            continue; /* pass 2 decides */
        st->done[ji] = 1;
        const char *type = j->gpu_type >= 0 ? s->gpu_types[j->gpu_type] : "cpu";
        if (st->hold[hold_slot(st, j)]) {
            wait_for(st, ji, j->gpu_type >= 0 ? "starvation-hold:gpu:" : "starvation-hold:", type,
                     0);
            continue;
        }
        int c = place(st, j);
        if (c >= 0) {
            admit(st, ji, c, false);
            continue;
        }
        struct reclaim_miss *m = j->gpu_type >= 0 ? &miss[j->gpu_type] : NULL;
        if (m && !reclaim_hopeless(m, j)) {
            bool for_gpus = false;
            if (reclaim(st, ji, &for_gpus)) {
                wait_for(st, ji, "reclaim:gpu:", type, s->now + s->preempt_grace_seconds);
                count_quota(st, j, false); /* the reclaimed GPUs are its guarantee */
                continue;
            }
            if (j->cluster < 0 && for_gpus)
                *m = (struct reclaim_miss){j->gpus, j->time_limit_s, j->nodes};
        }
        if (j->gpu_type >= 0)
            st->needed_g[j->gpu_type] += j->gpus;
        wait_capacity(st, ji);
        if (starving(st, j))
            st->hold[hold_slot(st, j)] = true;
    }
    free(miss);
}

static void pass_borrowing(struct state *st, const size_t *order)
{
    const struct adm_snapshot *s = st->s;
    double *lendable = xcalloc(st->nt ? st->nt : 1, sizeof *lendable);
    for (size_t g = 0; g < st->nt; g++) {
        double f = 0;
        for (size_t c = 0; c < s->nclusters; c++)
            if (!s->clusters[c].down)
                f += st->free[c * st->nt + g];
        lendable[g] = f - st->needed_g[g];
    }
    for (size_t k = 0; k < s->nqueued; k++) {
        size_t ji = order[k];
        if (st->done[ji] || !st->cleared[ji])
            continue;
        const struct adm_job *j = &s->queued[ji];
        const char *type = s->gpu_types[j->gpu_type];
        /* the limits again: admissions since pass 1 count against them now */
        if (!within_limits(st, ji))
            continue;
        if (st->hold[(size_t)j->gpu_type]) {
            wait_for(st, ji, "starvation-hold:gpu:", type, 0);
            continue;
        }
        int c = lendable[j->gpu_type] >= j->gpus ? place(st, j) : -1;
        if (c >= 0) {
            lendable[j->gpu_type] -= j->gpus;
            admit(st, ji, c, true);
            continue;
        }
        if (lendable[j->gpu_type] >= j->gpus)
            wait_capacity(st, ji); /* the GPUs are there: cores or memory may not be */
        else
            wait_for(st, ji, "capacity:gpu:", type, 0); /* what is free, waiting work needs */
        if (starving(st, j))
            st->hold[(size_t)j->gpu_type] = true;
    }
    free(lendable);
}

void admission_run(const struct adm_snapshot *s, struct adm_result *out)
{
    struct state st = {.s = s, .nt = s->ngpu_types, .out = out};
    size_t nt = st.nt ? st.nt : 1, nc = s->nclusters ? s->nclusters : 1;
    memset(out, 0, sizeof *out);
    st.free = xcalloc(nc * nt, sizeof *st.free);
    st.releasing = xcalloc(nc * nt, sizeof *st.releasing);
    st.cpu_free = xcalloc(nc, sizeof *st.cpu_free);
    st.mem_free = xcalloc(nc, sizeof *st.mem_free);
    st.t_used = xcalloc((s->ntenants + 1) * nt, sizeof *st.t_used);
    st.t_nonpre = xcalloc((s->ntenants + 1) * nt, sizeof *st.t_nonpre);
    st.t_cpu = xcalloc(s->ntenants + 1, sizeof *st.t_cpu);
    st.t_mem = xcalloc(s->ntenants + 1, sizeof *st.t_mem);
    st.t_jobs = xcalloc(s->ntenants + 1, sizeof *st.t_jobs);
    st.p_used = xcalloc((s->nprojects + 1) * nt, sizeof *st.p_used);
    st.p_cpu = xcalloc(s->nprojects + 1, sizeof *st.p_cpu);
    st.p_mem = xcalloc(s->nprojects + 1, sizeof *st.p_mem);
    st.p_jobs = xcalloc(s->nprojects + 1, sizeof *st.p_jobs);
    st.needed_g = xcalloc(nt, sizeof *st.needed_g);
    st.hold = xcalloc(nt + 1, sizeof *st.hold);
    st.victim = xcalloc(s->nactive + 1, sizeof *st.victim);
    st.done = xcalloc(s->nqueued + 1, 1);
    st.cleared = xcalloc(s->nqueued + 1, 1);

    for (size_t c = 0; c < s->nclusters; c++) {
        for (size_t g = 0; g < st.nt; g++)
            st.free[c * st.nt + g] = s->clusters[c].gpus[g];
        st.cpu_free[c] = s->clusters[c].cpus > 0 ? s->clusters[c].cpus : UNLIMITED_CAP;
        st.mem_free[c] = s->clusters[c].memory_gib > 0 ? s->clusters[c].memory_gib : UNLIMITED_CAP;
    }
    for (size_t a = 0; a < s->nactive; a++) {
        const struct adm_job *j = &s->active[a];
        if (j->cluster < 0 || (size_t)j->cluster >= s->nclusters) {
            count_quota(&st, j, j->preemptible); /* its cluster is gone: quota only */
            continue;
        }
        take(&st, j, (size_t)j->cluster, j->preemptible);
        if (j->stopping && j->gpu_type >= 0)
            st.releasing[(size_t)j->cluster * st.nt + (size_t)j->gpu_type] += j->gpus;
    }

    size_t *order = xmalloc((s->nqueued + 1) * sizeof *order);
    for (size_t q = 0; q < s->nqueued; q++)
        order[q] = q;
    sort_queue(order, s->nqueued, s->queued);
    pass_guaranteed(&st, order);
    pass_borrowing(&st, order);
    struct adm_usage u = {.free = st.free, .releasing = st.releasing, .victim = st.victim,
                          .t_used = st.t_used, .p_used = st.p_used, .t_cpu = st.t_cpu,
                          .t_mem = st.t_mem, .t_jobs = st.t_jobs, .p_cpu = st.p_cpu,
                          .p_mem = st.p_mem, .p_jobs = st.p_jobs};
    admestimate_run(s, &u, order, out);

    free(order);
    free(st.free);
    free(st.releasing);
    free(st.cpu_free);
    free(st.mem_free);
    free(st.t_used);
    free(st.t_nonpre);
    free(st.t_cpu);
    free(st.t_mem);
    free(st.t_jobs);
    free(st.p_used);
    free(st.p_cpu);
    free(st.p_mem);
    free(st.p_jobs);
    free(st.needed_g);
    free(st.hold);
    free(st.victim);
    free(st.done);
    free(st.cleared);
}

void admission_result_free(struct adm_result *r)
{
    free(r->decisions);
    r->decisions = NULL;
    r->ndecisions = 0;
}
