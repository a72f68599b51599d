/*
 * sealer.h - the audit sealer: a background worker that extends the hash
 * chain over committed events (in id order, once they are older than
 * AIDC_AUDIT_SEAL_GRACE_MS), signs the chain head every
 * AIDC_AUDIT_CHECKPOINT_SECONDS, keeps monthly partitions ahead of time and
 * applies AIDC_AUDIT_RETENTION_DAYS once a day.
 *
 * Several replicas may each run one: aidc_audit_seal() appends only if the
 * head is still where the sealer read it, so the chain never forks; the
 * loser's round is simply repeated.
 */
#ifndef AIDC_AUDIT_SEALER_H
#define AIDC_AUDIT_SEALER_H

#include "../lib/config.h"
#include "sign.h"

struct db;
struct sealer;

/* Start the worker; key may be NULL (checkpoints are then written unsigned). */
struct worker;
struct worker *sealer_start(const struct config *cfg, const struct sign_key *key);

/*
 * One sealing pass on db (outside a transaction): chain up to `max` events.
 * Returns how many were chained, or an aidc_err. For the worker, `aidcd
 * audit seal` and tests.
 */
int sealer_seal(struct db *db, int grace_ms, int max);
/* The sealer's figures for /metrics (Prometheus text appended to sb). */
struct sbuf;
void sealer_metrics(struct sbuf *sb);
/* Write a checkpoint if the head moved since the last one; 1 written, 0 not, or an aidc_err. */
int sealer_checkpoint(struct db *db, const struct sign_key *key, int every_s);

#endif
