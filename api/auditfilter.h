/*
 * auditfilter.h - the query arguments of the audit endpoints, checked:
 * RFC 3339 times, addresses and networks, actions with a trailing * for a
 * prefix, bounded free text. A bad one is a 400 naming it.
 */
#ifndef AIDC_API_AUDITFILTER_H
#define AIDC_API_AUDITFILTER_H

#include "../db/audit.h"
#include "../server/request.h"

#include <stdbool.h>
#include <time.h>

/*
 * Parse an RFC 3339 time ("2026-12-02T08:00:00Z", fractions, offsets up to
 * ±15:59 as PostgreSQL takes them) into *out (seconds) and, if nsec is not
 * NULL, its fraction in nanoseconds.
 */
bool auditfilter_time(const char *s, time_t *out, long *nsec);

/*
 * Fill f from rq's query (pointers into rq, except f->action_prefix, which
 * is written to prefix_buf). 0, or a 400 filled into rs.
 */
int auditfilter_events(const struct req *rq, struct resp *rs, struct db_audit_filter *f,
                       char *prefix_buf, size_t prefix_sz);
int auditfilter_commands(const struct req *rq, struct resp *rs, struct db_audit_cmd_filter *f);

/* The filters that were given, for the audit event of the read. */
json_t *auditfilter_echo(const struct req *rq);

#endif
