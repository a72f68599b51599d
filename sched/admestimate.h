/*
 * admestimate.h - when a waiting job should start (admission.h's
 * estimated_start), from what the admission passes left: the ends of the
 * running jobs (their time limits) replayed in time order.
 *
 * - A job waiting for capacity of its GPU type starts when enough GPUs of the
 *   type have been freed for it and for every job of the type waiting ahead
 *   of it (the ones just admitted end too).
 * - A job waiting on its tenant's or project's quota (quota:..., project-
 *   quota:...) starts when that owner's own running jobs have given back
 *   enough of the resource for it and for the owner's jobs waiting ahead of
 *   it on the same limit. The cluster being full then can push it later.
 * - Where nothing that runs will ever free enough, the estimate is unknown
 *   (0), for that job and those behind it.
 * Budget waits (the month's end) and reclaims (the grace period) are set by
 * the passes themselves.
 */
#ifndef AIDC_ADMESTIMATE_H
#define AIDC_ADMESTIMATE_H

#include "admission.h"

#include <stdbool.h>
#include <stddef.h>

/* What the passes counted, borrowed from admission.c's state. */
struct adm_usage {
    const int *free, *releasing; /* [cluster * ntypes + type] after the passes */
    const bool *victim;          /* [active]: chosen for preemption */
    const double *t_used, *p_used; /* [owner * ntypes + type] GPUs in use, with this pass's */
    const double *t_cpu, *t_mem, *t_jobs, *p_cpu, *p_mem, *p_jobs; /* [owner] */
};

/*
 * Fill the estimated starts of r's WAIT decisions for capacity and quota
 * waits; order is the queue in admission order (indexes into s->queued).
 */
void admestimate_run(const struct adm_snapshot *s, const struct adm_usage *u, const size_t *order,
                     struct adm_result *r);

/*
 * The capacity wait of a job of need GPUs of one type queued behind ahead
 * GPUs of demand (the cluster view's earliest start): free_now now, and
 * the ends of running jobs (at[i] when amount[i] GPUs come back, in time
 * order) replayed as for a waiting job. now when it fits at once; 0 when
 * nothing that runs will ever free enough.
 */
double admestimate_first_start(double free_now, const double *at, const double *amount, size_t n,
                               double ahead, double need, double now);

#endif
