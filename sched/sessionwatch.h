/*
 * sessionwatch.h - the session watcher (docs/sessions.md): every few seconds,
 * for each live interactive session, asks its backend where the app answers
 * and probes it (an HTTP answer of any status makes the session ready), and
 * ends a session whose app did not answer within AIDC_SESSIONS_READY_SECONDS,
 * one idle for its idle_minutes (no traffic through the relay), one past its
 * own time limit (extensions included), and records why a session ended when
 * its job did. Ending is cancelling the job, audited as session.stop.
 */
#ifndef AIDC_SESSIONWATCH_H
#define AIDC_SESSIONWATCH_H

struct config;
struct worker;

struct worker *sessionwatch_start(const struct config *cfg);

#endif
