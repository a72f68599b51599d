/*
 * arraycancel.h - the array-cancel worker: ends the tasks of a cancelled
 * array (or of a whole array asked to stop) in batches of ARRAYCANCEL_BATCH,
 * each its own transaction, after the parent's cancel has answered
 * (migrations/0030_array_cancel_batches.sql). Queued tasks are cancelled with
 * the parent's reason, delivered ones asked to stop. Woken by the parent's
 * cancel (NOTIFY aidc_arrays), and every second for what a notification or a
 * failed round left.
 */
#ifndef AIDC_ARRAYCANCEL_H
#define AIDC_ARRAYCANCEL_H

/* tasks per transaction: about 0.1 s of work on a busy 2-CPU machine */
#define ARRAYCANCEL_BATCH 500

struct config;
struct worker;

struct worker *arraycancel_start(const struct config *cfg);

#endif
