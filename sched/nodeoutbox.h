/*
 * nodeoutbox.h - the node rows of the outbox: drains and undrains of nodes
 * with faulty GPUs, delivered by the dispatcher's worker beside the job rows.
 *
 * A drain takes the node out of service in its cluster (backend drain: Slurm
 * DRAIN through the configured command, a Kubernetes cordon), then asks the
 * cluster which of aidc's runs are on the node and asks each of those jobs
 * to stop for the fault (the reclaim path: they come back queued, and their
 * lost GPU time is credited). An undrain gives the node back. Every call is
 * an audit event "backend.drain" / "backend.undrain" on the node, written
 * with the row's outcome; a row that failed is tried again with backoff, so
 * a cluster that is down gets its drain when it is back. A cluster that
 * cannot drain as configured (AIDC_EINVAL: a Slurm without drain_command)
 * is told once, audited as an error, and its runs on the node are still
 * stopped.
 */
#ifndef AIDC_NODEOUTBOX_H
#define AIDC_NODEOUTBOX_H

struct db;
struct config;

/*
 * Deliver the node rows due now (a batch). 1 when a full batch was claimed
 * (more may wait), 0 when fewer, or a negative aidc_err.
 */
int nodeoutbox_round(struct db *db, const struct config *cfg);

#endif
