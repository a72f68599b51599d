/*
 * janitor.h - a background thread that deletes what has expired (session
 * revocations past their token's expiry, old login-failure counters,
 * idempotency keys past their TTL, interactive sessions' links and cookies past
 * their expiry), and records once that an allocation nears its end
 * (allocation.expiring, AIDC_ALLOCATION_NOTICE_DAYS before). Idempotent, so
 * every replica may run it.
 */
#ifndef AIDC_JANITOR_H
#define AIDC_JANITOR_H

struct janitor;

/* Start cleaning every interval_s seconds over its own connection to url;
 * notice_days: an allocation's notice window (days before its end). */
struct janitor *janitor_start(const char *url, int interval_s, int notice_days);
/* Stop the thread and wait for it. */
void janitor_stop(struct janitor *j);

#endif
